"""A versioned key-value store: per key an ascending list of versions and a parallel list of values;
a read at version v binary-searches the key's versions for the last one at or before v.

    s = VersionedStore()
    v1 = s.put("a", 1); v2 = s.put("b", 2); v3 = s.delete("a")
    s.get("a", v1) == 1; s.get("a", v2) == 1 (b's version: a as of then); s.get("a", v3) is None

The rules, stated once (tests/components/test_versioned_store.py holds each of them against a brute-force model):
- Versions are integers >= 1, one global clock: `put`/`delete` without `version=` take the next one, so
  every write has its own version and a version names one state of the whole store.
- `get(key, v)` returns the value of the key's last write at or before v: `bisect_right(versions, v) - 1`.
  The three cases: v before the key's first write (it did not exist yet) -> missing; the last write at or
  before v a tombstone (it was deleted) -> missing; v at which only some other key was written -> this
  key's value as of then. An exact hit (v is this key's own write) returns that write.
- `read_index(versions, v, side=)` is that search on its own; side="left" is the off-by-one
  (`bisect_left(...) - 1`), which misses every exact hit: it returns the write before.
- A write with an explicit version below the key's newest (an out-of-order append, as replication
  delivers them) is inserted in order (`out_of_order="insort"`, which can change what a read at a later
  version already returned) or refused (`out_of_order="refuse"`: OutOfOrderWrite). A version a key
  already has is always refused: a version is written once.
- `missing` (default None) is what a read of a missing key returns.
- One lock guards the clock and the lists, so concurrent writers get distinct versions and a reader never
  sees a version list and its value list out of step.
Bad arguments raise ValueError (or its subclass OutOfOrderWrite) with one line naming the argument.

The contract, MVCC's (a read names one version and sees the whole store as of it), kept for every input
(tests/components/test_versioned_store_adversarial.py races writers against readers): `snapshot()` with no
version pins the newest version once, so every key in it is read at that one version, never some at one
and some at a later one; a key must be hashable and equal to itself (a NaN key could be written and never
read back) and may not be a bool (True and 1 would be one key): ValueError otherwise.

Chapters: versioned-kv-store.
"""
from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field

TOMBSTONE = object()       # a delete is a write of this value
POLICIES = ("insort", "refuse")


class OutOfOrderWrite(ValueError):
    pass


def read_index(versions, v: int, side: str = "right") -> int:
    """Index of the last entry <= v in ascending `versions` (-1 if none). side="left" is the off-by-one bug."""
    if side == "right":
        return bisect.bisect_right(versions, v) - 1
    if side == "left":
        return bisect.bisect_left(versions, v) - 1
    raise ValueError(f"side must be 'right' or 'left', got {side!r}")


def _version(v, name: str = "version") -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    return v


def _key(key) -> None:
    try:
        hash(key)
    except TypeError:
        raise ValueError(f"key must be hashable, got {type(key).__name__}") from None
    if isinstance(key, bool) or key != key:
        raise ValueError(f"key must equal itself and not be a bool, got {key!r}")


@dataclass
class _History:
    versions: list = field(default_factory=list)
    values: list = field(default_factory=list)


class VersionedStore:
    def __init__(self, *, out_of_order: str = "insort", missing=None, side: str = "right"):
        if out_of_order not in POLICIES:
            raise ValueError(f"out_of_order must be one of {POLICIES}, got {out_of_order!r}")
        read_index([], 1, side)                     # checks side
        self.out_of_order, self.missing, self.side = out_of_order, missing, side
        self._keys: dict = {}
        self._clock = 0                             # the newest version written to any key
        self._lock = threading.Lock()

    @property
    def version(self) -> int:
        """The newest version in the store (0 when empty)."""
        with self._lock:
            return self._clock

    def _write(self, key, value, version) -> int:
        _key(key)
        with self._lock:
            v = self._clock + 1 if version is None else _version(version)
            h = self._keys.setdefault(key, _History())
            if h.versions and v <= h.versions[-1]:
                i = bisect.bisect_left(h.versions, v)
                if i < len(h.versions) and h.versions[i] == v:
                    raise ValueError(f"version {v} of key {key!r} is already written")
                if self.out_of_order == "refuse":
                    raise OutOfOrderWrite(f"version {v} of key {key!r} is below its newest, {h.versions[-1]}")
                h.versions.insert(i, v)             # insort: O(n) memmove, but the lists stay parallel
                h.values.insert(i, value)
            else:
                h.versions.append(v)
                h.values.append(value)
            self._clock = max(self._clock, v)
            return v

    def put(self, key, value, *, version: int | None = None) -> int:
        """Write `value` at `version` (default: the next one); returns the version written."""
        if value is TOMBSTONE:
            raise ValueError("value must not be the tombstone; use delete()")
        return self._write(key, value, version)

    def delete(self, key, *, version: int | None = None) -> int:
        """Write a tombstone: reads at or after this version find the key missing."""
        return self._write(key, TOMBSTONE, version)

    def get(self, key, version: int | None = None):
        """The key's value as of `version` (default: the newest), or `missing`."""
        _key(key)
        with self._lock:
            v = self._clock if version is None else _version(version)
            h = self._keys.get(key)
            if h is None:
                return self.missing
            i = read_index(h.versions, v, self.side)
            if i < 0 or h.values[i] is TOMBSTONE:
                return self.missing
            return h.values[i]

    def snapshot(self, version: int | None = None) -> dict:
        """Every live key and its value as of `version`."""
        with self._lock:
            keys = list(self._keys)
            version = self._clock if version is None else _version(version)   # one version for every key
        out = {}
        for k in keys:
            value = self.get(k, version)
            if value is not self.missing:
                out[k] = value
        return out

    def history(self, key) -> list[tuple[int, object]]:
        """(version, value) pairs of one key, ascending; a delete shows as TOMBSTONE."""
        with self._lock:
            h = self._keys.get(key, _History())
            return list(zip(h.versions, h.values))

    def entries(self) -> int:
        """Versions stored, over all keys (each is one slot in each of two parallel lists)."""
        with self._lock:
            return sum(len(h.versions) for h in self._keys.values())


class ScanModel:
    """The brute-force model the store is tested against: an unordered log of writes, read by a full scan
    for the newest write of the key at or before v."""

    def __init__(self, missing=None):
        self.log: list[tuple[int, object, object]] = []
        self.missing = missing

    def write(self, key, value, version: int) -> None:
        self.log.append((version, key, value))

    def get(self, key, version: int):
        best = None
        for v, k, value in self.log:
            if k == key and v <= version and (best is None or v > best[0]):
                best = (v, value)
        return self.missing if best is None or best[1] is TOMBSTONE else best[1]


def read_case(versions, values, v: int) -> str:
    """Which case a read at v of a key with these (ascending) versions and parallel values is: the
    source's three ("did not exist yet", "deleted", "another key's version") or an exact hit of a live write."""
    i = bisect.bisect_right(versions, v) - 1
    if i < 0:
        return "did not exist yet"
    if values[i] is TOMBSTONE:
        return "deleted"
    return "exact hit" if versions[i] == v else "another key's version"


def comparisons(n_versions: int, v: int) -> int:
    """Comparisons one bisect_right makes on n ascending versions 1..n (counted, not estimated)."""
    count = 0

    def key(x):
        nonlocal count
        count += 1
        return x
    bisect.bisect_right(range(1, n_versions + 1), v, key=key)
    return count
