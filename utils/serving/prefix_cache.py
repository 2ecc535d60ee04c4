"""Prefix caches for serving, by token counts: which prompt tokens a cache serves and which must be prefilled.

Two designs, both reduced to what decides a hit (no tensors, no timings):

- `BlockHashCache`, as vLLM's automatic prefix caching does it: the KV cache lives in fixed blocks of
  `block_tokens` tokens; each *full* block is keyed by a hash chained over the previous block's hash and
  this block's token ids, so a key names the block's content *and everything before it* (the same tokens
  after a different prefix have different K and V, and a different key). A lookup walks the prompt's
  blocks from the first and stops at the first miss; a partial last block is never shared. Eviction takes
  the least recently used block that no running request holds; a request's blocks are touched last block
  first, so a sequence's tail is evicted before its head (vLLM frees blocks in reverse order).
- `RadixCache`, as SGLang's RadixAttention does it: a radix tree over token ids, one node per run of
  tokens, an edge split wherever two sequences diverge, so matching is token-granular. Eviction removes
  least-recently-used *leaves* whose reference count is zero, so a prefix that a running request holds is
  never evicted and a parent is never evicted before its children.

Both take a capacity in tokens (None: unbounded) and return counts: `serve(prompt, completion)` returns
(tokens matched from the cache, tokens that had to be prefilled), then caches prompt + completion, the
way an engine keeps a finished request's KV (the reply's KV was written during decode).

`multi_turn_trace` builds a seeded synthetic trace of multi-turn conversations sharing a system prompt,
with a stated fraction of branching turns (regenerate the last reply, or edit the last user message);
`simulate` runs a cache over it. Token ids of new content come from a counter, so two messages never
collide by chance and every count is exact.

Chapters: prefix-caching.
"""
from __future__ import annotations

import heapq
import random
from collections import OrderedDict
from dataclasses import dataclass
from itertools import chain
from typing import Iterable, Sequence

__all__ = ["BlockHashCache", "RadixCache", "Request", "multi_turn_trace", "simulate", "block_hashes"]

_ROOT_HASH = 0x9E3779B97F4A7C15  # the chain's seed: the "parent" of a sequence's first block


def _whole(name: str, v, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) and not (isinstance(v, float) and v.is_integer()):
        raise ValueError(f"{name} must be a whole number, got {v!r}")
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v!r}")
    return int(v)


def _capacity(v) -> int | None:
    return None if v is None else _whole("capacity_tokens", v)


def _tokens(tokens, *, allow_empty: bool = False) -> tuple:
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, (tuple, list, range)):
        raise ValueError(f"tokens must be a sequence of token ids, got {type(tokens).__name__}")
    t = tuple(tokens)
    if not t:
        if allow_empty:
            return t
        raise ValueError("tokens must not be empty")
    if not set(map(type, t)) <= {int} or min(t) < 0:
        raise ValueError("token ids must be non-negative ints")
    return t


def block_hashes(tokens: Sequence[int], block_tokens: int) -> list[int]:
    """The chained hash of every full block: h_i = hash(h_{i-1}, tokens of block i). A partial last
    block gets none. Python's tuple hash of ints is deterministic across runs (only str/bytes hashing is
    salted); vLLM offers the same builtin hash or sha256 (collision-resistant, slower)."""
    b = _whole("block_tokens", block_tokens)
    out, h = [], _ROOT_HASH
    for i in range(0, len(tokens) - b + 1, b):
        h = hash((h, tuple(tokens[i:i + b])))
        out.append(h)
    return out


# --------------------------------------------------------------------------------------------------
# vLLM-style: full blocks, chained content hash, LRU over unreferenced blocks


class BlockHashCache:
    """KV in blocks of `block_tokens`; a table from chained block hash to block (see the module doc).

    capacity_tokens: the cache's size in tokens (None: unbounded); it holds capacity // block_tokens
    blocks. Cached blocks whose parent was evicted stay in the table (and count against capacity) but
    cannot be reached, since a lookup stops at the first miss, as in vLLM.
    """

    def __init__(self, block_tokens: int = 16, capacity_tokens: int | None = None):
        self.block_tokens = _whole("block_tokens", block_tokens)
        cap = _capacity(capacity_tokens)
        if cap is not None and cap < self.block_tokens:
            raise ValueError(f"capacity_tokens={cap} holds no block of {self.block_tokens} tokens")
        self.capacity_blocks = None if cap is None else cap // self.block_tokens
        self._blocks: OrderedDict[int, int] = OrderedDict()   # hash -> reference count; front = LRU
        self.evicted_blocks = 0

    # sizes
    @property
    def size_tokens(self) -> int:
        return len(self._blocks) * self.block_tokens

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, block_hash: int) -> bool:
        return block_hash in self._blocks

    # operations
    def _hit_blocks(self, hashes: list[int]) -> int:
        n = 0
        for h in hashes:
            if h not in self._blocks:
                break
            n += 1
        return n

    def _touch(self, hashes: list[int]) -> None:
        for h in reversed(hashes):     # tail first, so the head ends most recent and is evicted last
            self._blocks.move_to_end(h)

    def match(self, tokens: Sequence[int]) -> int:
        """Tokens served from the cache: the full blocks from the first up to the first miss."""
        t = _tokens(tokens)
        hashes = block_hashes(t, self.block_tokens)
        n = self._hit_blocks(hashes)
        self._touch(hashes[:n])
        return n * self.block_tokens

    def acquire(self, tokens: Sequence[int]) -> tuple[int, list[int]]:
        """Match and hold the matched blocks (reference count + 1) until `release`; returns
        (tokens matched, handle)."""
        return self._acquire(block_hashes(_tokens(tokens), self.block_tokens))

    def _acquire(self, hashes: list[int]) -> tuple[int, list[int]]:
        held = hashes[:self._hit_blocks(hashes)]
        self._touch(held)
        for h in held:
            self._blocks[h] += 1
        return len(held) * self.block_tokens, held

    def release(self, handle: list[int]) -> None:
        for h in handle:
            if self._blocks.get(h, 0) < 1:
                raise ValueError("release of a block that is not held")
            self._blocks[h] -= 1

    def evict(self, n_blocks: int) -> int:
        """Evict up to n_blocks least-recently-used unreferenced blocks; returns how many went."""
        n_blocks = _whole("n_blocks", n_blocks, minimum=0)
        victims = []
        if n_blocks:
            for h, ref in self._blocks.items():   # front first: least recently used
                if ref == 0:
                    victims.append(h)
                    if len(victims) == n_blocks:
                        break
        for h in victims:
            del self._blocks[h]
        self.evicted_blocks += len(victims)
        return len(victims)

    def insert(self, tokens: Sequence[int]) -> int:
        """Cache every full block of `tokens` (as far as capacity allows, head first); returns how many
        of its tokens were already cached (the matched prefix)."""
        return self._insert(block_hashes(_tokens(tokens), self.block_tokens))

    def _insert(self, hashes: list[int]) -> int:
        present = self._hit_blocks(hashes)
        for h in hashes[:present]:        # protect the sequence's own blocks while making room
            self._blocks[h] += 1
        added = []
        for h in hashes[present:]:
            if h in self._blocks:         # reachable again now that its parent is back
                self._blocks[h] += 1
                added.append(h)
                continue
            if self.capacity_blocks is not None and len(self._blocks) >= self.capacity_blocks:
                if self.evict(1) == 0:
                    break                 # everything is held: cache the prefix that fits
            self._blocks[h] = 1
            added.append(h)
        for h in hashes[:present] + added:
            self._blocks[h] -= 1
        self._touch(hashes[:present] + added)
        return present * self.block_tokens

    def serve(self, prompt: Sequence[int], completion: Sequence[int] = ()) -> tuple[int, int]:
        """One request: (tokens matched, tokens prefilled); then prompt + completion are cached."""
        p, c = _tokens(prompt), _tokens(completion, allow_empty=True)
        hashes = block_hashes(p + c, self.block_tokens)   # the prompt's full blocks are a prefix of these
        matched, handle = self._acquire(hashes[:len(p) // self.block_tokens])
        self._insert(hashes)
        self.release(handle)
        return matched, len(p) - matched


# --------------------------------------------------------------------------------------------------
# SGLang-style: token-level radix tree, LRU over unreferenced leaves


class _Node:
    __slots__ = ("key", "children", "parent", "ref", "last_access", "id")

    def __init__(self, key: tuple, parent, stamp: int, node_id: int):
        self.key, self.parent, self.children = key, parent, {}
        self.ref, self.last_access, self.id = 0, stamp, node_id


@dataclass(frozen=True)
class RadixHandle:
    matched: int
    node: _Node


class RadixCache:
    """A radix tree over token ids with LRU eviction of unreferenced leaves under a token capacity."""

    def __init__(self, capacity_tokens: int | None = None):
        self.capacity_tokens = _capacity(capacity_tokens)
        self._clock = 0
        self._ids = 0
        self.root = _Node((), None, 0, 0)
        self.root.ref = 1                 # the root is never evicted
        self.size_tokens = 0
        self.evicted_tokens = 0

    def _new(self, key, parent) -> _Node:
        self._ids += 1
        node = _Node(key, parent, self._clock, self._ids)
        if key:
            parent.children[key[0]] = node
        return node

    def _split(self, child: _Node, j: int) -> _Node:
        """Split child's edge after j tokens; returns the new middle node (which ends at the split)."""
        parent = child.parent
        mid = self._new(child.key[:j], parent)          # replaces child under parent
        mid.ref, mid.last_access = child.ref, child.last_access
        child.key, child.parent = child.key[j:], mid
        mid.children[child.key[0]] = child
        return mid

    def _match(self, t: tuple) -> tuple[int, _Node]:
        self._clock += 1
        node, i, n = self.root, 0, len(t)
        while i < n:
            child = node.children.get(t[i])
            if child is None:
                break
            k = child.key
            L = len(k)
            if t[i:i + L] == k:
                i += L
                node = child
                node.last_access = self._clock
                continue
            j = 1                          # first token agrees (it is the child's key)
            m = min(L, n - i)
            while j < m and k[j] == t[i + j]:
                j += 1
            node = self._split(child, j)
            node.last_access = self._clock
            i += j
            break
        return i, node

    def match(self, tokens: Sequence[int]) -> int:
        """Tokens served from the cache: the longest cached prefix, to the token."""
        return self._match(_tokens(tokens))[0]

    def _lock(self, node: _Node, d: int) -> None:
        while node is not None:
            node.ref += d
            node = node.parent

    def acquire(self, tokens: Sequence[int]) -> tuple[int, RadixHandle]:
        """Match and hold the matched prefix (every node on its path: reference count + 1) until
        `release`; returns (tokens matched, handle), like BlockHashCache.acquire."""
        matched, node = self._match(_tokens(tokens))
        self._lock(node, +1)
        return matched, RadixHandle(matched, node)

    def release(self, handle: RadixHandle) -> None:
        n = handle.node
        while n is not None:
            if n.ref < 1:
                raise ValueError("release of a prefix that is not held")
            n = n.parent
        self._lock(handle.node, -1)

    @property
    def evictable_tokens(self) -> int:
        return sum(len(n.key) for n in self._nodes() if n.ref == 0)

    def _nodes(self):
        stack = [self.root]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(n.children.values())

    def evict(self, n_tokens: int) -> int:
        """Evict least-recently-used unreferenced leaves until n_tokens are freed (whole leaves, so it
        may free a little more) or nothing evictable is left; returns tokens freed."""
        n_tokens = _whole("n_tokens", n_tokens, minimum=0)
        heap = [(n.last_access, n.id, n) for n in self._nodes()
                if not n.children and n.ref == 0 and n is not self.root]
        heapq.heapify(heap)
        freed = 0
        while freed < n_tokens and heap:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            del parent.children[leaf.key[0]]
            freed += len(leaf.key)
            if parent is not self.root and not parent.children and parent.ref == 0:
                heapq.heappush(heap, (parent.last_access, parent.id, parent))
        self.size_tokens -= freed
        self.evicted_tokens += freed
        return freed

    def insert(self, tokens: Sequence[int]) -> int:
        """Cache `tokens` (its head, as far as capacity allows); returns how many were already cached."""
        return self._insert(_tokens(tokens))

    def _insert(self, t: tuple) -> int:
        matched, node = self._match(t)
        rest = t[matched:]
        if rest and self.capacity_tokens is not None:
            room = self.capacity_tokens - self.size_tokens
            if room < len(rest):
                self._lock(node, +1)      # never evict the prefix being extended
                self.evict(len(rest) - room)
                self._lock(node, -1)
                rest = rest[:max(0, self.capacity_tokens - self.size_tokens)]
        if rest:
            self._new(rest, node)
            self.size_tokens += len(rest)
        return matched

    def serve(self, prompt: Sequence[int], completion: Sequence[int] = ()) -> tuple[int, int]:
        """One request: (tokens matched, tokens prefilled); then prompt + completion are cached."""
        p, c = _tokens(prompt), _tokens(completion, allow_empty=True)
        matched, node = self._match(p)
        self._lock(node, +1)
        handle = RadixHandle(matched, node)
        self._insert(p + c)
        self.release(handle)
        return handle.matched, len(p) - handle.matched


# --------------------------------------------------------------------------------------------------
# A synthetic multi-turn trace


@dataclass(frozen=True)
class Request:
    conversation: int
    turn: int
    kind: str              # "first", "turn", "regenerate" or "edit"
    prompt: tuple
    completion: tuple


def multi_turn_trace(*, n_conversations: int, turns: int, system_tokens: int, user_tokens: tuple[int, int],
                     reply_tokens: tuple[int, int], regenerate_fraction: float = 0.0,
                     edit_fraction: float = 0.0, concurrency: int = 1, seed: int = 0,
                     length_multiple: int = 1) -> list[Request]:
    """Conversations that all start with one shared system prompt of `system_tokens`.

    Each conversation makes `turns` requests. Turn t resends the system prompt and every earlier
    (user, reply) pair, plus a new user message; its reply is the completion. After the first turn, a
    request is, with probability `regenerate_fraction`, a regeneration (the previous prompt again, a new
    reply replaces the old one) or, with probability `edit_fraction`, an edit (the last user message
    replaced by a new one: a branch just before it). User messages and replies have uniformly drawn
    lengths in the inclusive ranges given, rounded up to a multiple of `length_multiple` (set it to the
    block size for a block-aligned trace). `concurrency` conversations are open at once and each request
    comes from one of them at random, so other conversations' turns fall between two turns of one.
    """
    n_conversations = _whole("n_conversations", n_conversations)
    turns = _whole("turns", turns)
    system_tokens = _whole("system_tokens", system_tokens, minimum=0)
    concurrency = _whole("concurrency", concurrency)
    length_multiple = _whole("length_multiple", length_multiple)
    for name, (lo, hi) in (("user_tokens", user_tokens), ("reply_tokens", reply_tokens)):
        _whole(name, lo)
        if _whole(name, hi) < lo:
            raise ValueError(f"{name} range must be (low, high) with low <= high, got {(lo, hi)}")
    for name, f in (("regenerate_fraction", regenerate_fraction), ("edit_fraction", edit_fraction)):
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 <= f <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {f!r}")
    if regenerate_fraction + edit_fraction > 1:
        raise ValueError("regenerate_fraction + edit_fraction must be <= 1")

    rng = random.Random(seed)
    next_id = [0]

    def fresh(rng_range) -> tuple:
        n = rng.randint(*rng_range)
        n = -(-n // length_multiple) * length_multiple
        start = next_id[0]
        next_id[0] += n
        return tuple(range(start, start + n))

    system = fresh((system_tokens, system_tokens)) if system_tokens else ()
    out: list[Request] = []
    state = {}                     # conversation -> (turns done, history pairs [(user, reply)])
    waiting = list(range(n_conversations))[::-1]
    open_ = []
    while waiting or open_:
        while waiting and len(open_) < concurrency:
            c = waiting.pop()
            open_.append(c)
            state[c] = (0, [])
        c = open_[rng.randrange(len(open_))]
        done, history = state[c]
        r = rng.random()
        if done == 0:
            kind = "first"
        elif r < regenerate_fraction:
            kind = "regenerate"
        elif r < regenerate_fraction + edit_fraction:
            kind = "edit"
        else:
            kind = "turn"
        if kind == "regenerate":
            user, _ = history.pop()
        elif kind == "edit":
            history.pop()
            user = fresh(user_tokens)
        else:
            user = fresh(user_tokens)
        prompt = system + tuple(chain.from_iterable(chain.from_iterable(history))) + user    # every earlier pair
        reply = fresh(reply_tokens)
        history.append((user, reply))
        out.append(Request(c, done, kind, prompt, reply))
        done += 1
        state[c] = (done, history)
        if done == turns:
            open_.remove(c)
    return out


def simulate(cache, trace: Iterable[Request]) -> dict:
    """Run a cache over a trace: prompt tokens, tokens matched and prefilled, and the hit rate
    (matched / prompt tokens)."""
    prompt = matched = 0
    for req in trace:
        m, _ = cache.serve(req.prompt, req.completion)
        prompt += len(req.prompt)
        matched += m
    if prompt == 0:
        raise ValueError("empty trace")
    return dict(requests=len(trace) if hasattr(trace, "__len__") else None, prompt_tokens=prompt,
                matched_tokens=matched, prefilled_tokens=prompt - matched, hit_rate=matched / prompt)


class ExactPromptCache:
    """A flat table keyed by a whole prompt (or a whole finished sequence): hits only on an exact
    repeat, the best case of a cache that cannot match prefixes (unbounded)."""

    def __init__(self):
        self.keys: set = set()

    def serve(self, prompt, completion=()) -> tuple[int, int]:
        prompt = tuple(prompt)
        hit = len(prompt) if prompt in self.keys else 0
        self.keys.update((prompt, prompt + tuple(completion)))
        return hit, len(prompt) - hit
