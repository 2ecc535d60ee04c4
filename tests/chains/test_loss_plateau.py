"""loss-plateau's chain: the scaler's halvings, the schedule, the epochs, the zero rank, refusals."""
import math

import pytest

from utils import chains
from utils.chains import loss_plateau
from utils.params import ParameterError
from utils.training.plateau import cosine_lr
from utils.verdicts import UNCHECKABLE


def test_claim_is_a_taxonomy_that_cannot_be_checked():
    (c,) = loss_plateau.claims()
    assert c.verdict == UNCHECKABLE and not c.reading


def test_scaler_reaches_one_after_sixteen_halvings_and_needs_32000_clean_steps_back():
    r = chains.derive("loss-plateau")
    assert r["skipped_to_unit_scale"].m == pytest.approx(16)
    assert r["clean_steps_to_recover"].m == pytest.approx(16 * 2000)
    assert chains.derive("loss-plateau", init_scale=2.0 ** 24)["skipped_to_unit_scale"].m == pytest.approx(24)


def test_schedule_decayed_to_zero_and_its_share():
    r = chains.derive("loss-plateau")
    assert r["lr_at_read_step"].m == 0 and r["zero_lr_share"].m == pytest.approx(0.9)
    mid = chains.derive("loss-plateau", read_step=6000)["lr_at_read_step"].m
    assert mid == pytest.approx(3e-4 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert cosine_lr(999, 1.0, 1000, 2000) == pytest.approx(1.0)


def test_epochs_and_zero_rank_and_clipping_under_adam_and_sgd():
    r = chains.derive("loss-plateau")
    assert r["epochs"].m == pytest.approx(100000 * 4e6 / 2e9)
    assert r["rank_missing_share"].m == pytest.approx(1 / 8) and r["effective_batch_scale"].m == pytest.approx(7 / 8)
    # Adam (the default): m/sqrt(v) is scale-free, so neither a zero rank nor a tiny clip shrinks the update
    assert r["effective_lr_scale"].m == 1.0 and r["clip_update_scale"].m == 1.0
    sgd = chains.derive("loss-plateau", optimizer="sgd")
    assert sgd["effective_lr_scale"].m == pytest.approx(7 / 8) and sgd["clip_update_scale"].m == pytest.approx(0.01)
    assert chains.derive("loss-plateau", clip_norm=5.0, optimizer="sgd")["clip_update_scale"].m == 1.0


def test_more_ranks_a_smaller_share_missing():
    assert (chains.derive("loss-plateau", n_ranks=64)["rank_missing_share"]
            < chains.derive("loss-plateau")["rank_missing_share"])


@pytest.mark.parametrize("name,value", [("backoff_factor", 1.5), ("n_ranks", 1), ("warmup_steps", 20000),
                                        ("read_step", 200000), ("shard_tokens", -1.0),
                                        ("optimizer", "lamb")])
def test_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("loss-plateau", **{name: value})
