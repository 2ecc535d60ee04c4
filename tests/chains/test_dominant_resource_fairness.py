"""dominant-resource-fairness's chain: the claim on the paper's example, the cluster, bad input, properties."""
from fractions import Fraction

import pytest

from utils import chains
from utils.chains import dominant_resource_fairness as chapter
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE

SLUG = "dominant-resource-fairness"


def test_the_loop_reproduces_the_paper_and_the_bug_story_cannot_be_checked():
    """The bug is an incident the source names no code for: reproducing it needs a flaw of the book's own."""
    (c,) = chapter.claims()
    assert c.verdict == UNCHECKABLE and not c.reading
    ck = chapter.checks()
    assert ck["fair"].tasks == (3, 2) and set(ck["fair"].shares) == {Fraction(2, 3)}   # the paper, sec. 4
    assert ck["bug"].tasks == (4, 0) and set(ck["bug"].order) == {0} and ck["bug_skip"].tasks == (4, 1)
    assert ck["ties_harmless"] and ck["twins"] == 1 and ck["dominant"] == [1, 0]


def test_the_cluster_defaults():
    r = chains.derive(SLUG)
    assert (r["train_tasks"].m, r["prep_tasks"].m, r["eval_tasks"].m) == (11, 80, 40)
    assert r["gpu_utilisation"].m == 1 and r["core_utilisation"].m == 1
    assert r["floor_bug_first_user_gpus"].m == 1 and r["raw_bug_gpu_utilisation"].m == pytest.approx(1 / 16)
    assert r["max_dominant_share"].m - r["min_dominant_share"].m < 0.1


def test_every_user_gets_at_least_its_slice_on_the_cluster():
    ch = chapter.compute(chains.check(SLUG))
    assert all(k >= s for k, s in zip(ch.data["fair"].tasks, ch.data["partition"]))


@pytest.mark.parametrize("name, value", [("n_nodes", 0), ("gpus_per_node", 2.5), ("memory_per_node", -1.0),
                                         ("train_gpus", -1), ("eval_cores", 1.5), ("prep_memory", float("nan"))])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **{name: value})


def test_a_task_that_needs_nothing_is_refused():
    with pytest.raises(ParameterError, match="prep_gpus, prep_cores and prep_memory are all zero"):
        chains.derive(SLUG, prep_cores=0, prep_memory=0.0)


def test_more_nodes_never_fewer_tasks_and_a_bigger_task_fewer():
    base = chains.derive(SLUG)
    bigger = chains.derive(SLUG, n_nodes=32)
    for name in ("train_tasks", "prep_tasks", "eval_tasks"):
        assert bigger[name].m >= base[name].m
    heavier = chains.derive(SLUG, eval_memory=1024.0)
    assert heavier["eval_tasks"].m < base["eval_tasks"].m


def test_rows_cite_the_parameters_sources_at_their_defaults():
    from utils import chains
    from utils.chains import dominant_resource_fairness as chapter
    rows = {r.name: r for r in chapter.compute(chains.check("dominant-resource-fairness")).rows}
    assert rows["m"].source == chapter.NODE + ": 2 TB" and rows["N"].source.startswith("this book's assumption")
    changed = {r.name: r for r in chapter.compute(chains.check("dominant-resource-fairness", train_cores=24)).rows}
    assert changed["c_T"].source == "parameters cell" and changed["g_T"].source == rows["g_T"].source


PAPER_CAPACITY = [{"resource": "CPUs", "amount": 9}, {"resource": "memory GB", "amount": 18}]
PAPER_USERS = [{"user": "A", "CPUs": 1, "memory GB": 4}, {"user": "B", "CPUs": 3, "memory GB": 1}]


def test_the_papers_two_users_and_two_resources_as_tables_give_the_papers_allocation(tmp_path):
    """Ghodsi et al. sec. 4: A three tasks, B two, both at a dominant share of two thirds; the tables given as rows,
    as JSON text and as a .json file alike."""
    import json

    from utils import rederive
    file = tmp_path / "users.json"
    file.write_text(json.dumps(PAPER_USERS))
    for users in (PAPER_USERS, json.dumps(PAPER_USERS), str(file)):
        r = chains.derive(SLUG, users=users, capacity=json.dumps(PAPER_CAPACITY))
        assert (r["train_tasks"].m, r["prep_tasks"].m, r["eval_tasks"].m) == (3, 2, 0)
        assert r["min_dominant_share"].m == r["max_dominant_share"].m == pytest.approx(2 / 3)
        assert r["gpu_utilisation"].m == 1 and r["core_utilisation"].m == pytest.approx(14 / 18)
    out = rederive.payload(SLUG, {"users": str(file), "capacity": json.dumps(PAPER_CAPACITY)})
    assert out["results"]["train_tasks"]["value"] == 3


def test_any_number_of_users_and_resources():
    cap = [{"resource": r, "amount": 12} for r in "abcd"]
    users = [{"user": f"u{i}", **{r: (1 if r == "abc"[i % 3] else 0) for r in "abcd"}} for i in range(5)]
    ch = chapter.compute(chains.check(SLUG, users=users, capacity=cap))
    assert ch.data["fair"].tasks == (6, 6, 12, 6, 6) and len(ch.data["cap"]) == 4


@pytest.mark.parametrize("users, capacity, match", [
    (PAPER_USERS, [], "users and capacity go together"),
    ('[{"user": "A",', PAPER_CAPACITY, "users: not JSON"),
    ([{"user": "A", "CPUs": 1}], PAPER_CAPACITY, r"users\[0\] \(A\) names resources"),
    ([{"CPUs": 1, "memory GB": 1}], PAPER_CAPACITY, r"users\[0\] lacks column 'user'"),
    ([{"user": "A", "CPUs": -1, "memory GB": 4}], PAPER_CAPACITY, r"users\[0\].CPUs must be >= 0"),
    ([{"user": "A", "CPUs": "one", "memory GB": 4}], PAPER_CAPACITY, r"users\[0\].CPUs must be a number"),
    ([{"user": "A", "CPUs": 0, "memory GB": 0}], PAPER_CAPACITY, "needs nothing"),
    (PAPER_USERS + PAPER_USERS[:1], PAPER_CAPACITY, "names a user twice"),
    (PAPER_USERS, [{"resource": "CPUs", "amount": 0}, {"resource": "memory GB", "amount": 18}], "must be > 0"),
    (PAPER_USERS, [{"resource": "CPUs"}], "lacks column 'amount'"),
    (PAPER_USERS, 5, "must be a table"),
    (PAPER_USERS, "nowhere.json", "must be a table"),
    ([{"user": "A", "CPUs": 1e-9, "memory GB": 0}], PAPER_CAPACITY, "the loop answers up to"),
])
def test_bad_tables_are_refused_in_one_line(users, capacity, match):
    with pytest.raises(ParameterError, match=match) as e:
        chains.derive(SLUG, users=users, capacity=capacity)
    assert "\n" not in str(e.value)


def test_a_bad_table_on_the_command_line_is_one_line_and_exit_2(capsys):
    from utils import rederive
    assert rederive.main([SLUG, "--set", 'users=[{"user": "A", "CPUs": -1}]', "--set", "capacity=[]"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: users[0].CPUs must be >= 0") and err.count("\n") == 1
