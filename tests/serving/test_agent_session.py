"""utils.serving.agent_session: the state machine's legal moves, the tier choice and its crossover, and the
journal's resume after a crash (a real file, a tool that counts its calls)."""
import json

import pytest

from utils.serving.agent_session import (
    DONE,
    STARTING,
    THINKING,
    TOOL,
    Costs,
    Crash,
    IllegalTransition,
    Journal,
    Session,
    choose_tier,
    crossover_s,
    park_cost,
    run_session,
)

C = Costs(kv_bytes=3e9, kv_budget=400e9, gpus=8, host_rate=400e9, nvme_rate=25e9, host_room=2e12,
          nvme_room=30e12, prefill_gpu_s=2.8, prefill_s=0.35)


def test_legal_moves_and_step_count():
    s = Session()
    for st in (THINKING, TOOL, THINKING, TOOL, THINKING, DONE):
        s.move(st)
    assert s.steps == 2 and s.history[0] == STARTING and s.state == DONE


@pytest.mark.parametrize("path", [(TOOL,), (THINKING, THINKING), (THINKING, TOOL, TOOL), (THINKING, TOOL, DONE),
                                  (THINKING, DONE, THINKING)])
def test_illegal_moves_raise(path):
    s = Session()
    with pytest.raises(IllegalTransition):
        for st in path:
            s.move(st)


def test_crossover_is_where_hbm_and_drop_cost_the_same():
    t = crossover_s(C)
    assert park_cost("hbm", t, C)["gpu_s"] == pytest.approx(park_cost("drop", t, C)["gpu_s"], rel=1e-12)
    gpu_only = Costs(**{**C.__dict__, "host_room": 0.0, "nvme_room": 0.0})    # no room off the GPU
    assert choose_tier(0.5 * t, gpu_only, resume_budget_s=1.0) == "hbm"
    assert choose_tier(2 * t, gpu_only, resume_budget_s=1.0) == "drop"


def test_host_wins_when_its_resume_fits_and_room_decides():
    assert choose_tier(60, C, resume_budget_s=0.1) == "host"
    full = Costs(**{**C.__dict__, "host_room": 1e9})
    assert choose_tier(60, full, resume_budget_s=0.2) == "nvme"       # 0.12 s from the drives, no GPU-seconds
    assert choose_tier(60, full, resume_budget_s=0.1) == "hbm"        # the budget rules out the cheaper re-prefill
    gpu_only = Costs(**{**C.__dict__, "host_room": 1e9, "nvme_room": 1e9})
    assert choose_tier(60, gpu_only, resume_budget_s=0.5) == "drop"   # hbm costs 3.6 GPU-s, a re-prefill 2.8
    with pytest.raises(ValueError, match="tier"):
        park_cost("tape", 1, C)


def test_resume_after_a_crash_loses_only_the_step_in_flight(tmp_path):
    j = Journal(tmp_path / "session.jsonl")
    calls, thinks = [], []

    def think(i, results):
        thinks.append(i)
        return f"call-{i}"

    def tool(call, crash_at=None):
        calls.append(call)
        if call == crash_at:
            raise Crash(call)
        return call.upper()

    with pytest.raises(Crash):
        run_session(j, 10, think, lambda c: tool(c, crash_at="call-6"))
    assert sorted(j.steps()) == list(range(6))          # steps 0-5 committed, step 6 in flight
    calls.clear(), thinks.clear()
    results, s = run_session(j, 10, think, tool)
    assert results == [f"CALL-{i}" for i in range(10)]
    assert calls == [f"call-{i}" for i in range(6, 10)] and thinks == list(range(6, 10))   # nothing re-run
    assert s.state == DONE and s.steps == 10


def test_a_torn_last_line_is_ignored(tmp_path):
    p = tmp_path / "j.jsonl"
    p.write_text(json.dumps({"step": 0, "result": {"call": "a", "result": "A"}}) + "\n" + '{"step": 1, "res')
    assert list(Journal(p).steps()) == [0]
