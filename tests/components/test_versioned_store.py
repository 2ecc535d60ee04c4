"""utils/components/versioned_store.py: every read case named, the off-by-one bisect caught, the store against a
brute-force model on seeded random operation sequences, out-of-order appends, and concurrent writers."""
import random
import threading

import pytest

from utils.components.versioned_store import (
    TOMBSTONE,
    OutOfOrderWrite,
    ScanModel,
    VersionedStore,
    comparisons,
    read_case,
    read_index,
)


def three_cases(side="right"):
    """a written at 1, b at 2, a deleted at 3, b rewritten at 4, c written at 5."""
    s = VersionedStore(side=side)
    s.put("a", "a1"), s.put("b", "b2"), s.delete("a"), s.put("b", "b4"), s.put("c", "c5")
    return s


@pytest.mark.parametrize("key, v, expected, case", [
    ("c", 4, None, "did not exist yet"),          # before its first version
    ("c", 5, "c5", "exact hit"),                   # the version that created it
    ("a", 1, "a1", "exact hit"),
    ("a", 2, "a1", "another key's version"),       # b was written at 2: a as of then
    ("a", 3, None, "deleted"),                     # the delete's own version
    ("a", 5, None, "deleted"),                     # after the delete
    ("b", 3, "b2", "another key's version"),
    ("b", 4, "b4", "exact hit"),
    ("b", 9, "b4", "another key's version"),       # past the newest version: the newest value
    ("z", 3, None, "did not exist yet"),           # never written
])
def test_each_read_case(key, v, expected, case):
    s = three_cases()
    assert s.get(key, v) == expected
    h = s.history(key)
    assert read_case([x for x, _ in h], [y for _, y in h], v) == case


def test_the_off_by_one_bisect_misses_every_exact_hit_and_nothing_else():
    good, bad = three_cases(), three_cases(side="left")
    wrong = [(k, v) for k in "abcz" for v in range(1, 8) if good.get(k, v) != bad.get(k, v)]
    exact = [(k, v) for k in "abc" for v, _ in good.history(k)]
    assert wrong == exact
    assert bad.get("c", 5) is None and bad.get("a", 3) == "a1"    # a new key is missing; a deleted one lives
    assert read_index([1, 4, 9], 4) == 1 and read_index([1, 4, 9], 4, side="left") == 0
    assert read_index([1, 4, 9], 5) == read_index([1, 4, 9], 5, side="left") == 1


def random_ops(seed, n_ops=400, n_keys=6, out_of_order=0.15):
    """Seeded operations: puts and deletes (some with explicit, possibly out-of-order versions) and reads."""
    rng = random.Random(seed)
    for i in range(n_ops):
        key, r = f"k{rng.randrange(n_keys)}", rng.random()
        explicit = rng.random() < out_of_order
        if r < 0.55:
            yield "put", key, i, explicit, rng
        elif r < 0.7:
            yield "delete", key, None, explicit, rng
        else:
            yield "get", key, None, False, rng


def run_against_model(seed, side="right"):
    """Replay seeded operations on a store and on the scan model; return the reads where they differ."""
    s, model, wrong = VersionedStore(side=side), ScanModel(), []
    for op, key, value, explicit, rng in random_ops(seed):
        if op == "get":
            v = rng.randint(1, s.version + 2)
            if s.get(key, v) != model.get(key, v):
                wrong.append((key, v))
            continue
        version = None
        if explicit:                                    # an out-of-order append: any version not yet used
            version = rng.randint(1, s.version + 3)
            if version in {v for v, k, _ in model.log if k == key}:
                with pytest.raises(ValueError, match="already written"):
                    s.put(key, value, version=version) if op == "put" else s.delete(key, version=version)
                continue
        v = s.put(key, value, version=version) if op == "put" else s.delete(key, version=version)
        model.write(key, value if op == "put" else TOMBSTONE, v)
    for key in {k for _, k, _ in model.log} | {"never"}:
        h = s.history(key)
        assert [v for v, _ in h] == sorted(v for v, k, _ in model.log if k == key)   # ascending, parallel
        wrong += [(key, v) for v in range(1, s.version + 2) if s.get(key, v) != model.get(key, v)]
    assert s.entries() == len(model.log)
    return wrong


@pytest.mark.parametrize("seed", range(12))
def test_the_store_matches_a_brute_force_model(seed):
    assert run_against_model(seed) == []


def test_the_model_check_catches_the_off_by_one():
    assert all(run_against_model(seed, side="left") for seed in range(12))


def test_refuse_policy_rejects_an_out_of_order_append_and_changes_nothing():
    s = VersionedStore(out_of_order="refuse")
    s.put("a", 1, version=5)
    with pytest.raises(OutOfOrderWrite, match="below its newest, 5"):
        s.put("a", 0, version=3)
    assert s.history("a") == [(5, 1)]
    s.put("b", 2, version=3)                    # another key's history is its own
    assert s.get("b", 4) == 2 and s.get("a", 4) is None


def test_insort_keeps_order_but_can_change_an_answer_already_given():
    s = VersionedStore()
    s.put("a", "new", version=10)
    assert s.get("a", 7) is None                # served: a did not exist at 7
    s.put("a", "late", version=6)               # replication delivers an older write
    assert s.history("a") == [(6, "late"), (10, "new")]
    assert s.get("a", 7) == "late"              # the same read now answers differently


def test_a_version_is_written_once():
    s = VersionedStore()
    v = s.put("a", 1)
    with pytest.raises(ValueError, match="already written"):
        s.put("a", 2, version=v)
    with pytest.raises(ValueError, match="already written"):
        s.delete("a", version=v)


def test_concurrent_writers_get_distinct_versions_and_the_lists_stay_parallel():
    s, results, n_threads, n_writes = VersionedStore(), [], 8, 200
    lock = threading.Lock()

    def writer(t):
        mine = []
        for i in range(n_writes):
            key = f"k{(t + i) % 5}"
            mine.append((s.put(key, (t, i)) if i % 7 else s.delete(key), key, (t, i) if i % 7 else TOMBSTONE))
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=10)
    assert not any(th.is_alive() for th in threads)
    versions = [v for v, _, _ in results]
    assert sorted(versions) == list(range(1, n_threads * n_writes + 1))     # one clock, no duplicates
    model = ScanModel()
    for v, k, value in results:
        model.write(k, value, v)
    for k in {k for _, k, _ in results}:
        assert [v for v, _ in s.history(k)] == sorted(v for v, kk, _ in results if kk == k)
        for v in range(1, len(versions) + 1, 37):
            assert s.get(k, v) == model.get(k, v)


def test_snapshot_is_the_whole_store_at_a_version():
    s = three_cases()
    assert s.snapshot(2) == {"a": "a1", "b": "b2"}
    assert s.snapshot(3) == {"b": "b2"}
    assert s.snapshot() == {"b": "b4", "c": "c5"}


def test_a_missing_sentinel_and_the_newest_version_by_default():
    s = VersionedStore(missing=KeyError)
    assert s.get("a") is KeyError and s.version == 0
    s.put("a", None)                             # None is a value like any other
    assert s.get("a") is None and s.get("a", 1) is None and s.version == 1


@pytest.mark.parametrize("n", [1, 2, 1000, 10**6])
def test_comparisons_are_logarithmic(n):
    worst = max(comparisons(n, v) for v in (0, 1, n // 2, n, n + 1))
    assert worst <= n.bit_length()


@pytest.mark.parametrize("call, msg", [
    (lambda s: s.get("a", 0), "version must be"), (lambda s: s.get("a", 1.5), "version must be"),
    (lambda s: s.put("a", 1, version=-1), "version must be"), (lambda s: s.put("a", 1, version=True), "version must be"),
    (lambda s: s.put("a", TOMBSTONE), "tombstone"),
    (lambda s: VersionedStore(out_of_order="drop"), "out_of_order"), (lambda s: VersionedStore(side="middle"), "side"),
])
def test_bad_arguments_raise_one_line(call, msg):
    with pytest.raises(ValueError, match=msg) as e:
        call(VersionedStore())
    assert "\n" not in str(e.value)
