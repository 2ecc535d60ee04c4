"""utils.serving.batching: the decode step on the roofline, the seeded trace, and the two engines."""
import dataclasses

import numpy as np
import pytest

from utils.serving import batching

E = batching.Engine(wbytes=140e9, kvs=1.3e9, W=8 * 3.35e12, P=8 * 989e12, f=2.9e11, kNa=1.4e11, att=2.6e5, akv=3.3e5)


def test_step_is_flat_then_linear_on_the_roofline():
    assert batching.step_time(E, 0) == pytest.approx(E.wbytes / E.W)
    t = batching.step_time(E, np.array([1, 2, 3]))
    assert np.diff(t) == pytest.approx([E.kvs / E.W] * 2)
    assert batching.memory_bound(E, 1)
    compute_heavy = batching.Engine(**{**E.__dict__, "f": 1e15})
    assert not batching.memory_bound(compute_heavy, 10)


def test_trace_is_seeded_and_fits_the_context():
    p1, o1 = batching.trace(500, 1024, 512, 4096, seed=3)
    p2, o2 = batching.trace(500, 1024, 512, 4096, seed=3)
    assert (p1 == p2).all() and (o1 == o2).all()
    assert (p1 + o1 <= 4096).all() and o1.min() >= 2 and len(p1) == 500


def test_equal_replies_waste_no_static_slot():
    p, o = np.full(64, 100), np.full(64, 50)
    assert batching.static(p, o, 16, E)["slot_use"] == pytest.approx(1)


def test_continuous_beats_static_on_exponential_replies_by_about_the_closed_form():
    B = 64
    sim = batching.serve(E, B, 4096, 1024, 512, 512, seed=0)
    assert sim["ratio"] > 1
    closed = batching.static_closed_form(E, B, 1024, 512, 4096)
    assert sim["static"]["slot_use"] == pytest.approx(closed["slot_use"], rel=0.15)


def test_expected_longest_of_exponentials_is_the_harmonic_number():
    assert batching.harmonic(1) == 1 and batching.harmonic(3) == pytest.approx(11 / 6)
    j = np.arange(1, 200_000)
    mean = 1000.0
    pmf = np.exp(-(j - 1) / mean) - np.exp(-j / mean)
    assert batching.expected_longest(j, pmf, 8) == pytest.approx(mean * batching.harmonic(8), rel=2e-3)


# The queue simulation: its quiet steps run as arrays give the loop's own results, to the last bit.
QE = batching.QueueEngine(wbytes=1.4e11, akv=3.3e5, W=2.9e13, P=5.9e15, kNa=1.4e11, att=4.1e5, cap=1_400_000, bmax=256,
                          budget=8192)
# Memory-bound alone up to about 500 cached tokens, compute-bound past them and at two sequences or more.
CROSSING = dataclasses.replace(QE, P=2.9e13, kNa=1.2e11, att=4.1e7)


@pytest.mark.parametrize("rate, engine, faults", [
    (2.0, QE, batching.Faults()),                                      # light load: requests decode alone
    (20.0, QE, batching.Faults()),                                     # busy: short runs between events
    (2.0, QE, batching.Faults(2.0, 0.05)),                             # host stalls cut the runs
    (5.0, dataclasses.replace(QE, bmax=2), batching.Faults()),         # a queue behind a small cap
    (0.2, dataclasses.replace(CROSSING, bmax=1), batching.Faults()),   # the bound changes sides within runs
    (20.0, dataclasses.replace(QE, cap=20_000), batching.Faults(optimistic=True)),   # preemptions end runs
    (1.0, dataclasses.replace(QE, bmax=1), batching.Faults(optimistic=True))])       # each request alone
def test_quiet_steps_as_arrays_are_the_loops_steps_exactly(monkeypatch, rate, engine, faults):
    wl = batching.workload(1500, 1024, 512, 8192, seed=3)
    fast = batching.simulate_faulty(rate, wl, engine, faults)
    monkeypatch.setattr(batching, "QUIET", 10 ** 12)                   # every step through the loop
    slow = batching.simulate_faulty(rate, wl, engine, faults)
    assert fast["work"] < slow["work"]
    for k, v in slow.items():
        if k == "work":
            continue
        pairs = zip(v, fast[k]) if k == "itl" else [(v, fast[k])]
        for a, b in pairs:
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b), k
            else:
                assert a == b, k


@pytest.mark.parametrize("engine, faults", [(dataclasses.replace(QE, bmax=1), batching.Faults()),
                                            (dataclasses.replace(CROSSING, bmax=1), batching.Faults()),
                                            (dataclasses.replace(QE, bmax=1, cap=9000), batching.Faults(optimistic=True))])
def test_one_sequence_at_a_time_is_the_loops_queue_to_rounding(engine, faults):
    """bmax=1 takes Lindley's recursion with closed-form step sums: the loop's times and gaps to rounding, its
    tokens at the window's ends exactly, from light load (requests alone) to twice saturation (a queue throughout);
    with one sequence nothing is preempted, so optimistic admission is the same queue."""
    wl = batching.workload(1500, 1024, 512, 8192, seed=3)
    alone = batching.simulate_queue(1e-3, wl, engine)                 # a request every thousand seconds: all alone
    service = float(np.mean(alone["finish"] - alone["arrival"]))       # so a load is a rate times this
    for load in (0.01, 0.5, 0.95, 2.0):                                # the loop's quiet runs are its own steps exactly
        fast = batching.simulate(load / service, wl, engine, faults)
        slow = batching.simulate_faulty(load / service, wl, engine, faults)
        for k in ("arrival", "output"):
            assert np.array_equal(fast[k], slow[k]) and fast[k].dtype == slow[k].dtype, k
        for k in ("window", "longest_pass", "preemptions", "stall_idle", "peak_kv"):
            assert fast[k] == slow[k], k
        for k in ("first", "finish"):
            np.testing.assert_allclose(fast[k], slow[k], rtol=1e-12, atol=0)
        assert [n for n, _ in fast["tokens"]] == [n for n, _ in slow["tokens"]]
        assert [t for _, t in fast["tokens"]] == pytest.approx([t for _, t in slow["tokens"]], rel=1e-12)
        assert fast["batch_time"] == pytest.approx(slow["batch_time"], rel=1e-12)
        (g, w), (g_, w_) = fast["itl"], slow["itl"]     # a gap is a difference of clocks: rounding of the clock's size
        assert np.array_equal(w, w_) and w.dtype == w_.dtype
        np.testing.assert_allclose(g, g_, rtol=0, atol=1e-13 * slow["finish"].max())
        assert fast["work"] < slow["work"]


def test_a_run_past_its_work_budget_raises_toolong():
    wl = batching.workload(1500, 1024, 512, 8192, seed=3)
    done = batching.simulate_faulty(20.0, wl, QE)
    with pytest.raises(batching.TooLong):
        batching.simulate_faulty(20.0, wl, QE, max_work=done["work"] / 2)
