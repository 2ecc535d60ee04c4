"""utils.training.hang_detect: the sequence-number comparison, and the real gloo reproducer naming the missing rank."""
import time

import pytest

from utils.training.hang_detect import missing_ranks


def test_one_rank_behind_is_named():
    assert missing_ranks({0: 3, 1: 3, 2: 2, 3: 3}) == {"expected": 3, "missing": [2], "behind": {2: 1}}


def test_two_ranks_behind_are_both_named():
    assert missing_ranks({0: 5, 1: 4, 2: 5, 3: 1})["missing"] == [1, 3]


def test_level_ranks_name_nobody():
    assert missing_ranks({r: 7 for r in range(8)})["missing"] == []


def test_a_rank_with_no_collective_yet_is_behind():
    assert missing_ranks({0: 0, 1: -1})["missing"] == [1]


def test_no_reports_is_an_error():
    with pytest.raises(ValueError):
        missing_ranks({})


def test_gloo_reproducer_names_the_withheld_rank_within_the_timeout():
    pytest.importorskip("torch.distributed")
    from utils.training.hang_detect import reproduce
    t0 = time.monotonic()
    run = reproduce(world=4, withhold_rank=1, hang_step=2, steps=4, timeout_s=0.4, join_s=10)
    elapsed = time.monotonic() - t0
    assert run["verdict"]["missing"] == [1]
    waiting = [r for r in run["results"].values() if r["timed_out"]]
    assert len(waiting) == 3 and all(r["report"]["missing"] == [1] for r in waiting)
    assert all(r["completed"] == 2 for r in run["results"].values())   # everyone got through the first two
    assert run["exitcodes"] == [0, 0, 0, 0]                            # every process exited
    assert elapsed < 3.0, elapsed                                      # CPU timing: detection is the timeout


def test_bad_rank_is_refused():
    from utils.training.hang_detect import reproduce
    with pytest.raises(ValueError):
        reproduce(world=4, withhold_rank=4)
