"""utils/fleet/ledger.py on real SQLite files: double entry, the debit path, keys, the cap, the empty account,
and everyone spending at once (threads, each with its own connection)."""
import random
import threading

import pytest

from utils.fleet.ledger import MINT, USAGE, Ledger, allocate, gpu_hours, static_quota

DAY = 86400


@pytest.fixture
def path(tmp_path):
    return tmp_path / "ledger.db"


def funded(path, team="vision", hours=100, cap=None, clock=lambda: 0):
    led = Ledger(path, clock=clock)
    led.open_team(team, daily_cap_gpu_hours=cap)
    led.grant(team, gpu_hours(hours), key=f"grant-{team}")
    return led


def test_every_transaction_and_the_book_sum_to_zero(path):
    with funded(path) as led:
        led.debit("vision", 3600, key="d1")
        led.debit("vision", 1800, key="d2")
        a = led.audit()
        assert a["unbalanced_txns"] == 0 and a["total"] == 0 and a["negative"] == []
        assert led.balance(MINT) == -gpu_hours(100) and led.balance(USAGE) == 5400
        assert led.balance("vision") == gpu_hours(100) - 5400


def test_a_retried_debit_posts_once_and_answers_the_same(path):
    with funded(path) as led:
        first = led.debit("vision", 3600, key="job-1:tick-1")
        again = led.debit("vision", 3600, key="job-1:tick-1")
        assert first.status == "posted" and again.status == "replayed" and again.txn == first.txn
        assert led.balance(USAGE) == 3600


def test_a_refused_debit_stores_nothing_so_a_retry_after_a_top_up_posts(path):
    with funded(path, hours=1) as led:
        assert led.debit("vision", 7200, key="big").status == "insufficient"
        led.grant("vision", gpu_hours(1), key="top-up")
        assert led.debit("vision", 7200, key="big").status == "posted"
        assert led.balance("vision") == 0


def test_the_balance_never_goes_below_zero(path):
    with funded(path, hours=1) as led:
        assert led.debit("vision", 3600, key="a").status == "posted"
        assert led.debit("vision", 1, key="b").status == "insufficient"
        assert led.balance("vision") == 0


def test_the_daily_cap_resets_at_the_utc_day(path):
    now = [0.0]
    with funded(path, hours=100, cap=10, clock=lambda: now[0]) as led:
        assert led.debit("vision", gpu_hours(8), key="a").status == "posted"
        assert led.debit("vision", gpu_hours(3), key="b").status == "over_cap"
        assert led.debit("vision", gpu_hours(2), key="c").status == "posted"      # exactly at the cap
        now[0] = DAY - 1
        assert led.debit("vision", 1, key="d").status == "over_cap"
        now[0] = DAY
        assert led.debit("vision", gpu_hours(3), key="b").status == "posted"


def test_an_empty_account_cannot_start_a_job(path):
    with funded(path, hours=1) as led:
        r = led.start_job("j", "vision", gpus=8, grace_s=600, key="start-j")       # hold 8 x 600 > 3600
        assert r.status == "insufficient" and led.balance("vision") == 3600


def test_a_running_job_at_zero_drains_on_its_hold_then_stops(path):
    with funded(path, hours=2) as led:          # 7,200 GPU-s; 2 GPUs; hold 2 x 600 = 1,200
        assert led.start_job("j", "vision", gpus=2, grace_s=600, key="s").status == "posted"
        states = [led.meter("j", 300, key=f"t{i}") for i in range(12)]
        # 6,000 left after the hold: ten ticks of 600 run, then the hold pays two ticks, then stopped
        assert states[:10] == ["running"] * 10 and states[10:] == ["draining", "stopped"]
        assert led.balance("vision") == 0 and led.balance("hold:j") == 0
        assert led.meter("j", 300, key="t12") == "stopped"
        assert led.audit()["negative"] == [] and led.balance(USAGE) == 7200


def test_a_finished_job_gets_its_hold_back(path):
    with funded(path, hours=2) as led:
        led.start_job("j", "vision", gpus=2, grace_s=600, key="s")
        led.meter("j", 300, key="t0")
        led.finish_job("j", key="f")
        led.finish_job("j", key="f")
        assert led.balance("vision") == 7200 - 600 and led.job_state("j") == "finished"


def test_the_racy_check_then_write_double_spends(path):
    """Two writers both read the balance before either writes: the bug BEGIN IMMEDIATE prevents."""
    funded(path, hours=1).close()
    barrier = threading.Barrier(2, timeout=5)
    out = []

    def spend(i):
        with Ledger(path) as led:
            out.append(led.debit_racy("vision", 3600, key=f"k{i}", between=barrier.wait))

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    with Ledger(path) as led:
        assert [r.status for r in out] == ["posted", "posted"]
        assert led.balance("vision") == -3600 and led.audit()["negative"] == ["vision"]


def test_the_one_transaction_debit_does_not_double_spend_in_the_same_race(path):
    funded(path, hours=1).close()
    barrier = threading.Barrier(4, timeout=5)
    out = []

    def spend(i):
        with Ledger(path) as led:
            barrier.wait()
            out.append(led.debit("vision", 3600, key=f"k{i}").status)

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(out) == ["insufficient"] * 3 + ["posted"]
    with Ledger(path) as led:
        assert led.balance("vision") == 0


def everyone_spends(path, writers=8, ops=40, seed=0):
    """`writers` threads, each its own connection, debit random amounts from three teams, with keys that
    collide across threads (a client and its retries on different workers)."""
    teams = ("vision", "speech", "text")
    setup = Ledger(path)
    for t in teams:
        setup.open_team(t, daily_cap_gpu_hours=60)
        setup.grant(t, gpu_hours(20), key=f"grant-{t}")
    setup.close()
    plans = []
    for w in range(writers):
        rng = random.Random(seed * 1000 + w)
        plans.append([(rng.choice(teams), rng.randint(1, 4) * 900, f"op-{rng.randrange(writers * ops // 2)}")
                      for _ in range(ops)])
    results = [[] for _ in range(writers)]
    barrier = threading.Barrier(writers, timeout=10)

    def work(w):
        with Ledger(path) as led:
            barrier.wait()
            for team, amount, key in plans[w]:
                results[w].append((key, team, amount, led.debit(team, amount, key=key)))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    return teams, [r for rs in results for r in rs]


def test_everyone_spending_at_once_loses_nothing_and_counts_nothing_twice(path):
    teams, results = everyone_spends(path)
    posted = {k: (team, amount) for k, team, amount, r in results if r.status == "posted"}
    posted_count = sum(1 for *_, r in results if r.status == "posted")
    assert posted_count == len(posted)                        # no key posted twice
    with Ledger(path) as led:
        a = led.audit()
        assert a["unbalanced_txns"] == 0 and a["total"] == 0 and a["negative"] == []
        assert a["used"] == sum(amount for _, amount in posted.values())       # no lost debit
        for t in teams:
            spent = sum(amount for team, amount in posted.values() if team == t)
            assert led.balance(t) == gpu_hours(20) - spent >= 0
        assert a["txns"] == len(teams) + len(posted)
    # a replay names the transaction the first attempt posted
    first = {k: r.txn for k, _, _, r in results if r.status == "posted"}
    assert all(r.txn == first[k] for k, _, _, r in results if r.status == "replayed")
    assert len({r.status for *_, r in results}) >= 3        # the run really raced: posts, replays, refusals


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_bad_amounts_are_refused(path, bad):
    with funded(path) as led, pytest.raises(ValueError, match="amount"):
        led.debit("vision", bad, key="x")


def test_an_unknown_team_is_refused(path):
    with funded(path) as led, pytest.raises(KeyError, match="nobody"):
        led.debit("nobody", 3600, key="x")


# --- allocation by share with borrowing ----------------------------------------------------------------
SHARES = {"a": 1, "b": 2, "c": 1}


def test_allocation_fills_the_fleet_and_meets_every_guarantee():
    got = allocate(4096, SHARES, {"a": 100, "b": 5000, "c": 3000})
    assert sum(got.values()) == 4096 and got["a"] == 100
    assert got["b"] >= 2048 and got["c"] >= 1024 and got["b"] == 2 * got["c"]


def test_allocation_never_exceeds_demand_and_idles_only_without_demand():
    got = allocate(4096, SHARES, {"a": 10, "b": 20, "c": 30})
    assert got == {"a": 10, "b": 20, "c": 30}


def test_static_quota_idles_what_a_quiet_team_does_not_use():
    demands = {"a": 100, "b": 5000, "c": 3000}
    assert sum(static_quota(4096, SHARES, demands).values()) == 100 + 2048 + 1024


@pytest.mark.parametrize("seed", range(20))
def test_allocation_properties_on_random_demands(seed):
    rng = random.Random(seed)
    shares = {t: rng.randint(1, 5) for t in "abcde"}
    demands = {t: rng.randint(0, 3000) for t in shares}
    got = allocate(4096, shares, demands)
    w = sum(shares.values())
    assert sum(got.values()) == min(4096, sum(demands.values()))
    for t in shares:
        assert got[t] <= demands[t]
        assert got[t] >= min(demands[t], int(4096 * shares[t] / w))        # nobody starves
