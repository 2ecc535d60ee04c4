"""utils/components/idempotent_api.py on a real SQLite file: racing retries make one resource, the state machine refuses
what it does not list, cancel answers 202 while a worker must still stop the job, and the cursor neither
skips nor repeats rows under concurrent writes (where offset pagination does both)."""
import sqlite3
import threading

import pytest

from utils.components.idempotent_api import (
    KEY_RETENTION_S,
    KINDS,
    TERMINAL,
    TRANSITIONS,
    ResourceAPI,
    TransitionError,
    decode_cursor,
    encode_cursor,
    pagination_trial,
    request_hash,
    scan,
)

JOB = {"name": "pretrain", "gpus": 64, "image": "trainer:1"}
BODIES = {"jobs": JOB, "reservations": {"gpus": 64, "hours": 48.0}, "endpoints": {"model": "llama", "replicas": 2}}


@pytest.fixture
def api(tmp_path):
    with ResourceAPI(tmp_path / "api.db") as a:
        yield a


class FakeClock:
    def __init__(self):
        self.t = 1_000.0

    def __call__(self):
        return self.t


def race(api, n, key_of, body=JOB):
    barrier, out = threading.Barrier(n), [None] * n

    def go(i):
        barrier.wait(timeout=5)
        k = key_of(i)
        out[i] = api.handle("POST", "/jobs", body, headers={"Idempotency-Key": k} if k else None)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    return out


# --- idempotent create ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 8, 16])
def test_concurrent_retries_with_one_key_make_exactly_one_resource(api, n):
    out = race(api, n, lambda i: "the-one-key")
    assert api.count("jobs") == 1
    assert {r.status for r in out} == {201} and len({r.body["id"] for r in out}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in out) == n - 1


def test_without_a_key_or_with_a_key_per_attempt_every_retry_is_a_duplicate(tmp_path):
    with ResourceAPI(tmp_path / "a.db") as a, ResourceAPI(tmp_path / "b.db") as b:
        race(a, 8, lambda i: None)
        race(b, 8, lambda i: f"attempt-{i}")
        assert a.count("jobs") == 8 and b.count("jobs") == 8


def test_same_key_other_body_is_refused_and_creates_nothing(api):
    first = api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"})
    other = api.handle("POST", "/jobs", {**JOB, "gpus": 128}, headers={"Idempotency-Key": "k"})
    assert first.status == 201 and other.status == 422 and api.count() == 1
    # the same key on another resource's path is another request too
    res = api.handle("POST", "/reservations", BODIES["reservations"], headers={"Idempotency-Key": "k"})
    assert res.status == 422 and api.count() == 1


def test_the_body_hash_ignores_key_order_and_the_replay_is_the_first_response(api):
    reordered = dict(reversed(list(JOB.items())))
    assert request_hash("POST", "/jobs", JOB) == request_hash("POST", "/jobs", reordered)
    assert request_hash("POST", "/jobs", JOB) != request_hash("POST", "/reservations", JOB)
    first = api.handle("POST", "/jobs", JOB, headers={"idempotency-key": "k"})     # header names: any case
    api.advance("jobs", first.body["id"], "running")
    again = api.handle("POST", "/jobs", reordered, headers={"Idempotency-Key": "k"})
    assert (again.status, again.body) == (first.status, first.body)               # the stored response, verbatim
    assert again.body["state"] == "pending" and api.get("jobs", first.body["id"]).body["state"] == "running"


def test_a_validation_error_stores_nothing_so_the_fixed_retry_can_reuse_the_key(api):
    bad = api.handle("POST", "/jobs", {**JOB, "gpus": 0}, headers={"Idempotency-Key": "k"})
    assert bad.status == 400 and api.count() == 0
    good = api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"})
    assert good.status == 201 and api.count() == 1


@pytest.mark.parametrize("body", [None, [], {"name": "x"}, {**JOB, "gpus": "64"}, {**JOB, "gpus": True},
                                  {**JOB, "gpus": -8}])
def test_bad_bodies_are_400(api, body):
    assert api.handle("POST", "/jobs", body).status == 400 and api.count() == 0


def test_the_key_expires_after_its_retention_and_a_late_retry_duplicates(tmp_path):
    clock = FakeClock()
    with ResourceAPI(tmp_path / "c.db", clock=clock) as api:
        first = api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"}).body["id"]
        clock.t += KEY_RETENTION_S - 1
        assert api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"}).body["id"] == first
        clock.t += 2
        late = api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"})
        assert late.status == 201 and late.body["id"] != first and api.count() == 2


def test_the_unique_constraint_is_the_backstop(api):
    api.handle("POST", "/jobs", JOB, headers={"Idempotency-Key": "k"})
    db = sqlite3.connect(api.path)
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        db.execute("INSERT INTO idempotency_keys VALUES ('k', 'h', 201, '{}', 0)")
    db.close()


def test_every_kind_creates_and_a_checkpoint_needs_its_job(api):
    ids = {k: api.handle("POST", f"/{k}", b).body["id"] for k, b in BODIES.items()}
    ck = api.handle("POST", "/checkpoints", {"job_id": ids["jobs"], "path": "s3://ck/1"})
    assert ck.status == 201 and ck.body["state"] == "pending"
    assert api.handle("POST", "/checkpoints", {"job_id": 999, "path": "s3://ck/2"}).status == 422
    assert set(KINDS) == set(BODIES) | {"checkpoints"} and api.count() == 4


# --- the state machine ------------------------------------------------------------------------------
ALL_PAIRS = [(a, b) for a in TRANSITIONS for b in TRANSITIONS]
PATH_TO = {"pending": [], "running": ["running"], "cancelling": ["running", "cancelling"],
           "succeeded": ["running", "succeeded"], "failed": ["running", "failed"], "cancelled": ["cancelled"]}


def test_exactly_the_listed_transitions_are_allowed(api):
    ids = api.seed("jobs", [JOB] * len(ALL_PAIRS))
    refused = 0
    for rid, (a, b) in zip(ids, ALL_PAIRS):
        for s in PATH_TO[a]:
            api.advance("jobs", rid, s)
        if b in TRANSITIONS[a]:
            assert api.advance("jobs", rid, b) == a and api.get("jobs", rid).body["state"] == b
        else:
            with pytest.raises(TransitionError, match="not a legal transition"):
                api.advance("jobs", rid, b)
            assert api.get("jobs", rid).body["state"] == a, (a, b)
            refused += 1
    assert refused == len(ALL_PAIRS) - sum(map(len, TRANSITIONS.values()))


def test_terminal_states_are_absorbing_and_every_state_is_reachable():
    assert TERMINAL == {"succeeded", "failed", "cancelled"}
    reach, frontier = {"pending"}, ["pending"]
    while frontier:
        for nxt in TRANSITIONS[frontier.pop()]:
            if nxt not in reach:
                reach.add(nxt)
                frontier.append(nxt)
    assert reach == set(TRANSITIONS)


def test_racing_writers_cannot_both_move_a_row(api):
    for _ in range(5):
        rid = api.create("jobs", JOB).body["id"]
        barrier, won = threading.Barrier(2), []

        def move(to, rid=rid, barrier=barrier, won=won):
            barrier.wait(timeout=5)
            try:
                api.advance("jobs", rid, to, expect="pending")
                won.append(to)
            except TransitionError:
                pass

        ts = [threading.Thread(target=move, args=(to,)) for to in ("running", "cancelled")]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=10)
        assert len(won) == 1 and api.get("jobs", rid).body["state"] == won[0]


# --- cancel ----------------------------------------------------------------------------------------
def test_cancel_is_202_while_a_worker_must_stop_the_job_and_200_only_when_final(api):
    pending = api.create("jobs", JOB).body["id"]
    r = api.handle("POST", f"/jobs/{pending}/cancel")
    assert (r.status, r.body["state"]) == (200, "cancelled")
    running = api.create("jobs", JOB).body["id"]
    api.advance("jobs", running, "running")
    r = api.handle("POST", f"/jobs/{running}/cancel")
    assert (r.status, r.body["state"]) == (202, "cancelling")
    assert api.handle("POST", f"/jobs/{running}/cancel").status == 202        # a retried cancel is safe
    api.advance("jobs", running, "cancelled")                                  # the worker stopped it
    assert api.handle("POST", f"/jobs/{running}/cancel").status == 409
    assert api.handle("POST", "/jobs/999/cancel").status == 404


def test_a_job_may_finish_before_its_stop_lands(api):
    rid = api.create("jobs", JOB).body["id"]
    api.advance("jobs", rid, "running")
    api.handle("POST", f"/jobs/{rid}/cancel")
    api.advance("jobs", rid, "succeeded")
    r = api.handle("POST", f"/jobs/{rid}/cancel")
    assert r.status == 409 and r.body["state"] == "succeeded"


# --- pagination ------------------------------------------------------------------------------------
def test_cursor_pages_cover_every_row_once_newest_first(api):
    ids = api.seed("jobs", [JOB] * 23)
    seen = scan(api, "jobs", how="cursor", limit=5, between_pages=lambda page: None)
    assert seen == sorted(ids, reverse=True)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("cancel_seen", [False, True])
def test_the_cursor_neither_skips_nor_repeats_on_seeded_interleavings(tmp_path, seed, cancel_seen):
    r = pagination_trial(tmp_path / "p.db", how="cursor", rows=40, limit=7, max_inserts=6, cancel_seen=cancel_seen,
                         seed=seed)
    assert r["repeats"] == r["skips"] == 0


def test_offset_repeats_under_inserts_and_skips_when_rows_leave_the_filter(tmp_path):
    ins = [pagination_trial(tmp_path / f"i{s}.db", how="offset", rows=40, limit=7, max_inserts=6, seed=s)
           for s in range(4)]
    assert all(r["skips"] == 0 for r in ins) and all(r["repeats"] > 0 for r in ins)
    # cancel each page as it is read: the rows behind it move up past the offset and are never seen
    r = pagination_trial(tmp_path / "c.db", how="offset", rows=40, limit=10, max_inserts=0, cancel_seen=True)
    assert r["skips"] == 20
    still = pagination_trial(tmp_path / "n.db", how="offset", rows=40, limit=7, max_inserts=0)
    assert still["repeats"] == still["skips"] == 0       # without writers offset is fine: the bug is the race


def test_a_real_concurrent_writer_does_not_disturb_the_cursor(api):
    start = set(api.seed("jobs", [JOB] * 60))
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            api.create("jobs", JOB)

    t = threading.Thread(target=writer)
    t.start()
    try:
        seen = scan(api, "jobs", how="cursor", limit=4, between_pages=lambda page: None)
    finally:
        stop.set()
        t.join(timeout=10)
    assert len(seen) == len(set(seen)) and start <= set(seen)


def test_cursors_are_opaque_and_checked(api):
    assert decode_cursor(encode_cursor(12345)) == 12345
    for bad in ("nonsense", encode_cursor(1)[:-2] + "!!", "eyJ4IjogMX0"):
        assert api.handle("GET", "/jobs", query={"cursor": bad}).status == 400
    assert api.handle("GET", "/jobs", query={"limit": 0}).status == 400
    assert api.handle("GET", "/jobs", query={"limit": 101}).status == 400
    assert api.handle("GET", "/jobs", query={"state": "nope"}).status == 400


def test_routes(api):
    assert api.handle("GET", "/gpus").status == 404
    assert api.handle("DELETE", "/jobs/1").status == 405
    assert api.handle("GET", "/jobs/1").status == 404
    rid = api.handle("POST", "/jobs", JOB).body["id"]
    assert api.handle("GET", f"/jobs/{rid}").body == {"id": rid, "kind": "jobs", "state": "pending", **JOB}
    assert api.handle("GET", f"/reservations/{rid}").status == 404          # ids are per kind on reads
