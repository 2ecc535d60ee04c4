"""utils/components/versioned_store.py against racing writers and hostile keys: a snapshot is read at one
version (MVCC), never some keys at one version and some at a later one; a key that could mean two things
is refused."""
import threading

import pytest

from utils.components.versioned_store import VersionedStore


def test_a_snapshot_under_racing_writers_is_one_version_of_the_store():
    s = VersionedStore()
    keys = [f"k{i}" for i in range(50)]
    for k in keys:
        s.put(k, 0)
    stop, torn = threading.Event(), []

    def writer():                       # each round writes every key with the round number
        r = 0
        while not stop.is_set():
            r += 1
            for k in keys:
                s.put(k, r)

    def reader():
        for _ in range(200):
            snap = s.snapshot()
            rounds = sorted(set(snap.values()))
            if len(rounds) > 2 or (len(rounds) == 2 and [snap[k] for k in keys] != sorted(snap[k] for k in keys)[::-1]):
                torn.append(rounds)     # one version shows a prefix at round r+1 and the rest at r
    w = threading.Thread(target=writer)
    w.start()
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    for t in readers:
        t.join(20)
    stop.set()
    w.join(5)
    assert torn == []


@pytest.mark.parametrize("key", [float("nan"), True, [1], {"a": 1}])
def test_a_key_that_could_mean_two_things_or_none_is_refused(key):
    s = VersionedStore()
    with pytest.raises(ValueError):
        s.put(key, 1)
    with pytest.raises(ValueError):
        s.get(key)
    assert s.version == 0 and s.entries() == 0


@pytest.mark.parametrize("version", [0, -1, 1.0, True, None.__class__, float("nan")])
def test_hostile_versions_are_refused_and_change_nothing(version):
    s = VersionedStore()
    s.put("a", 1)
    with pytest.raises(ValueError):
        s.put("a", 2, version=version)
    with pytest.raises(ValueError):
        s.get("a", version)
    assert s.history("a") == [(1, 1)]
