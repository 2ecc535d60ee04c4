"""Exact token counts of the two prefix caches in utils/serving/prefix_cache.py on hand-built cases, their
agreement on block-aligned traces, the multi-turn closed form, and their input checks. Every count is an
integer and is asserted exactly (no tolerance: nothing here is measured)."""
import pytest

from utils.serving.prefix_cache import BlockHashCache, RadixCache, block_hashes, multi_turn_trace, simulate


def seq(start, n):
    return tuple(range(start, start + n))


# --- shared prefix, divergence, branching --------------------------------------------------------

def test_shared_prefix_is_served_once():
    a, b, c = seq(0, 8), seq(100, 5), seq(200, 7)
    for cache, want in ((RadixCache(), 8), (BlockHashCache(4), 8)):
        assert cache.serve(a + b) == (0, 13)
        assert cache.serve(a + c) == (want, 7)


def test_divergence_mid_block_radix_keeps_the_partial_block():
    shared = seq(0, 6)                          # one full block of 4 and half of the next
    x, y = shared + seq(100, 6), shared + seq(200, 6)
    radix, block = RadixCache(), BlockHashCache(4)
    radix.serve(x), block.serve(x)
    assert radix.match(y) == 6                  # to the token
    assert block.match(y) == 4                  # only the full block before the divergence


def test_partial_last_block_is_not_cached():
    block = BlockHashCache(4)
    block.insert(seq(0, 10))                    # two full blocks, two tokens left over
    assert len(block) == 2 and block.size_tokens == 8
    assert block.match(seq(0, 10)) == 8


def test_same_block_in_another_context_has_another_key():
    # Block [4..7] after [0..3] and after [9..12]: same tokens, different KV, different chained hash.
    h1 = block_hashes(seq(0, 8), 4)
    h2 = block_hashes(seq(9, 4) + seq(4, 4), 4)
    assert h1[1] != h2[1]
    block = BlockHashCache(4)
    block.insert(seq(0, 8))
    assert block.match(seq(9, 4) + seq(4, 4)) == 0


def test_branching_splits_an_edge_and_shares_the_stem():
    radix = RadixCache()
    radix.insert(seq(0, 10))
    assert radix.insert(seq(0, 5) + seq(50, 6)) == 5
    assert radix.size_tokens == 16              # the stem of 5 is stored once
    stem = radix.root.children[0]
    assert stem.key == seq(0, 5) and sorted(stem.children) == [5, 50]
    assert radix.match(seq(0, 5) + (50, 51)) == 7
    assert radix.match(seq(0, 10)) == 10


def test_regenerate_matches_the_whole_prompt():
    prompt = seq(0, 9)
    radix, block = RadixCache(), BlockHashCache(4)
    for cache in (radix, block):
        cache.serve(prompt, seq(100, 3))
    assert radix.serve(prompt, seq(200, 3)) == (9, 0)
    assert block.serve(prompt, seq(200, 3)) == (8, 1)


# --- eviction, reference counts, capacity --------------------------------------------------------

def test_radix_evicts_the_least_recently_used_leaf():
    radix = RadixCache(capacity_tokens=10)
    a, b, c = seq(0, 5), seq(10, 5), seq(20, 5)
    radix.insert(a), radix.insert(b)
    radix.match(a)                              # a is now more recent than b
    radix.insert(c)
    assert radix.match(b) == 0 and radix.match(a) == 5 and radix.match(c) == 5
    assert radix.size_tokens == 10 and radix.evicted_tokens == 5


def test_radix_evicts_leaves_before_their_parent():
    radix = RadixCache(capacity_tokens=12)
    radix.insert(seq(0, 4) + seq(10, 4))        # stem 0..3, leaf 10..13
    radix.insert(seq(0, 4) + seq(20, 4))        # leaf 20..23 shares the stem
    radix.insert(seq(40, 4))                    # 16 tokens wanted: evict the oldest leaf, not the stem
    assert radix.match(seq(0, 4) + seq(10, 4)) == 4
    assert radix.match(seq(0, 4) + seq(20, 4)) == 8
    assert radix.size_tokens == 12


def test_block_cache_evicts_lru_and_a_sequence_tail_first():
    block = BlockHashCache(2, capacity_tokens=6)      # three blocks
    block.insert(seq(0, 4))                           # blocks A0 A1
    block.insert(seq(10, 2))                          # block B0 (most recent)
    block.insert(seq(20, 2))                          # one must go: A1, the tail of the oldest sequence
    assert block.match(seq(0, 4)) == 2
    assert block.match(seq(10, 2)) == 2 and block.match(seq(20, 2)) == 2
    assert block.evicted_blocks == 1


def test_held_prefix_is_not_evicted():
    for cache in (RadixCache(capacity_tokens=10), BlockHashCache(5, capacity_tokens=10)):
        a, b, c = seq(0, 5), seq(10, 5), seq(20, 5)
        cache.insert(a)
        matched, handle = cache.acquire(a)
        assert matched == 5
        cache.insert(b)
        cache.insert(c)                         # a is the oldest, but held: b goes
        assert cache.match(a) == 5 and cache.match(b) == 0
        cache.release(handle)
        with pytest.raises(ValueError):
            cache.release(handle)               # a second release is a bug, not a no-op


def test_everything_held_caches_only_what_fits():
    radix = RadixCache(capacity_tokens=8)
    assert radix.insert(seq(0, 6)) == 0
    _, handle = radix.acquire(seq(0, 6))        # all of it held: nothing can be evicted
    assert radix.insert(seq(100, 5)) == 0       # room for 2 tokens only
    assert radix.size_tokens == 8 and radix.match(seq(100, 5)) == 2
    radix.release(handle)


@pytest.mark.parametrize("capacity", [64, 300, 1000])
def test_capacity_is_respected_on_a_trace(capacity):
    trace = multi_turn_trace(n_conversations=12, turns=5, system_tokens=40, user_tokens=(5, 30),
                             reply_tokens=(5, 60), regenerate_fraction=0.2, edit_fraction=0.2,
                             concurrency=4, seed=3)
    radix, block = RadixCache(capacity), BlockHashCache(8, capacity)
    for req in trace:
        for cache in (radix, block):
            m, p = cache.serve(req.prompt, req.completion)
            assert m + p == len(req.prompt) and m >= 0
        assert radix.size_tokens <= capacity
        assert block.size_tokens <= capacity
        assert radix.size_tokens == sum(len(n.key) for n in radix._nodes())
    assert radix.evicted_tokens > 0 or capacity == 1000


# --- the two designs agree where they should; the closed form ------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_and_radix_agree_on_block_aligned_traces(seed):
    B = 8
    trace = multi_turn_trace(n_conversations=10, turns=6, system_tokens=5 * B, user_tokens=(1, 40),
                             reply_tokens=(1, 60), regenerate_fraction=0.25, edit_fraction=0.0,
                             concurrency=3, seed=seed, length_multiple=B)
    assert all(len(r.prompt) % B == 0 and len(r.completion) % B == 0 for r in trace)
    a, b = simulate(RadixCache(), trace), simulate(BlockHashCache(B), trace)
    assert a == b


def test_multi_turn_closed_form():
    S, u, a, T, C = 30, 7, 11, 5, 4
    trace = multi_turn_trace(n_conversations=C, turns=T, system_tokens=S, user_tokens=(u, u),
                             reply_tokens=(a, a), concurrency=2, seed=0)
    no_cache = C * (T * (S + u) + (u + a) * T * (T - 1) // 2)
    result = simulate(RadixCache(), trace)
    assert result["prompt_tokens"] == no_cache
    assert result["prefilled_tokens"] == S + C * T * u     # the system prompt once, then each new message


def test_trace_is_seeded_and_branches():
    kw = dict(n_conversations=20, turns=6, system_tokens=10, user_tokens=(2, 9), reply_tokens=(3, 9),
              regenerate_fraction=0.3, edit_fraction=0.3, concurrency=5)
    t1, t2 = multi_turn_trace(seed=7, **kw), multi_turn_trace(seed=7, **kw)
    assert t1 == t2 and t1 != multi_turn_trace(seed=8, **kw)
    kinds = {r.kind for r in t1}
    assert kinds == {"first", "turn", "regenerate", "edit"}
    assert len(t1) == 20 * 6
    for r in t1:
        assert r.prompt[:10] == tuple(range(10))           # the shared system prompt


# --- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: BlockHashCache(0),
    lambda: BlockHashCache(2.5),
    lambda: BlockHashCache(16, capacity_tokens=8),
    lambda: BlockHashCache(16, capacity_tokens=-1),
    lambda: RadixCache(0),
    lambda: RadixCache(True),
    lambda: RadixCache().insert([]),
    lambda: RadixCache().insert([1, -2]),
    lambda: RadixCache().match("abc"),
    lambda: BlockHashCache(4).match([1.0, 2.0]),
    lambda: RadixCache().evict(-1),
    lambda: multi_turn_trace(n_conversations=1, turns=1, system_tokens=1, user_tokens=(5, 2),
                             reply_tokens=(1, 1)),
    lambda: multi_turn_trace(n_conversations=1, turns=1, system_tokens=1, user_tokens=(1, 2),
                             reply_tokens=(1, 1), regenerate_fraction=0.7, edit_fraction=0.5),
    lambda: multi_turn_trace(n_conversations=0, turns=1, system_tokens=1, user_tokens=(1, 2),
                             reply_tokens=(1, 1)),
    lambda: simulate(RadixCache(), []),
])
def test_bad_input_raises_value_error(make):
    with pytest.raises(ValueError):
        make()
