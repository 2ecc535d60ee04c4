"""utils.training.plateau: each injected fault is caught by its own check, in order, deterministically."""
import math

import pytest

torch = pytest.importorskip("torch")
from utils.training import plateau  # noqa: E402


def test_cosine_schedule_warms_up_then_decays_to_zero():
    assert plateau.cosine_lr(0, 1.0, 10, 100) == pytest.approx(0.1)
    assert plateau.cosine_lr(9, 1.0, 10, 100) == pytest.approx(1.0)
    assert plateau.cosine_lr(55, 1.0, 10, 100) == pytest.approx(0.5)
    assert plateau.cosine_lr(100, 1.0, 10, 100) == pytest.approx(0.0, abs=1e-12)


def test_scaler_halves_on_each_overflow():
    log = plateau.run("scaler_collapse", steps=16)
    assert [r["scale"] for r in log[:3]] == [2.0 ** 15, 2.0 ** 14, 2.0 ** 13]
    assert math.log2(2.0 ** 16 / log[-1]["scale"]) == 16 and all(r["skipped"] for r in log)


def test_zero_rank_removes_its_share_of_the_mean():
    healthy, broken = plateau.run("none", steps=1), plateau.run("zero_rank", steps=1)
    assert broken[0]["grad_norm"] < healthy[0]["grad_norm"]
    assert broken[0]["rank_norms"][-1] == 0.0


EXPECTED = {"none": None, "stalled_counter": "step counter", "lr_zero": "learning rate and grad norm",
            "tiny_clip": "learning rate and grad norm",
            "repeated_data": "data repeating", "scaler_collapse": "loss scaler", "zero_rank": "rank gradients"}


def test_adam_is_scale_free_where_sgd_is_not():
    """Adam's update is unchanged by a uniform gradient scale (up to eps), so the same gradient times 1 and
    times 0.01 moves the weights the same; SGD's moves them a hundredth as far."""
    assert plateau.OPTIMIZERS[0] == "adam"     # the default: the optimizer the book trains with
    adam = {f: plateau.run(f, steps=200)[-1] for f in ("none", "tiny_clip")}
    sgd = {f: plateau.run(f, steps=200, optimizer="sgd")[-1] for f in ("none", "tiny_clip")}
    assert adam["tiny_clip"]["loss"] < 2 * adam["none"]["loss"] < 0.05      # a tiny clip does not stall Adam
    assert sgd["tiny_clip"]["loss"] > 1 > 0.05 > sgd["none"]["loss"]         # and does stall SGD


def test_each_fault_is_caught_by_its_check():
    rows = {r["fault"]: r for r in plateau.fault_table(steps=200)}
    assert {f: r["caught_by"] for f, r in rows.items()} == EXPECTED
    assert rows["none"]["final_loss"] < 0.05 and rows["stalled_counter"]["final_loss"] > 1
    assert {f: r["steps_to_catch"] for f, r in rows.items()} == {
        "none": None, "stalled_counter": 6, "lr_zero": 21, "tiny_clip": 1, "repeated_data": 2,
        "scaler_collapse": 5, "zero_rank": 1}
    assert rows["repeated_data"]["final_heldout"] > 2 * rows["none"]["final_heldout"]  # flat on new data
    flat = {f for f, r in rows.items() if plateau.plateaued(r, rows["none"])}
    assert flat == {"stalled_counter", "lr_zero", "repeated_data", "scaler_collapse"}   # Adam: the clip is no cause
    sgd = {r["fault"]: r for r in plateau.fault_table(steps=200, optimizer="sgd")}
    assert {f for f, r in sgd.items() if plateau.plateaued(r, sgd["none"])} == flat | {"tiny_clip"}


def test_runs_are_deterministic():
    a, b = plateau.run("zero_rank", steps=20), plateau.run("zero_rank", steps=20)
    assert [r["loss"] for r in a] == [r["loss"] for r in b]


def test_unknown_fault_or_optimizer_is_refused():
    with pytest.raises(ValueError, match="fault"):
        plateau.run("gremlins")
    with pytest.raises(ValueError, match="optimizer"):
        plateau.run(optimizer="lamb")
