"""utils.serving.router: the load bound, affinity, consistent hashing's small moves, tenant isolation, and the
ordering of the routers on a seeded multi-tenant trace."""
import pytest

from utils.serving.prefix_cache import RadixCache
from utils.serving.router import (
    BoundedHashRouter,
    CacheAwareRouter,
    RandomRouter,
    load_bound,
    multi_tenant_trace,
    prefix_key,
    simulate_fleet,
)

SMALL = dict(sessions=(12, 6, 4), system_tokens=(300, 200, 150), turns=4, user_tokens=(10, 40),
             reply_tokens=(20, 60), concurrency=3, seed=1)


def test_load_bound():
    assert load_bound(0, 4, 0.25) == 1
    assert load_bound(15, 4, 0.25) == 5            # ceil(1.25 * 16 / 4)
    assert load_bound(15, 4, 1.0) == 8


def test_bound_never_exceeded_and_affinity_until_full():
    r = BoundedHashRouter(8, key_tokens=4, epsilon=0.5)
    prompt = tuple(range(10))
    loads = [0] * 8
    first = r.route(prompt, loads)
    for _ in range(40):                            # the same key, ever more load: fills then spills
        cap = load_bound(sum(loads), 8, 0.5)
        dest = r.route(prompt, loads)
        assert loads[dest] < cap
        if loads[first] < cap:
            assert dest == first                   # affinity while under the bound
        loads[dest] += 1
    assert max(loads) <= load_bound(sum(loads) - 1, 8, 0.5)


def test_removing_a_replica_moves_only_its_keys():
    keys = [prefix_key((k, k + 1, k + 2), 3) for k in range(2000)]
    a, b = BoundedHashRouter(10, 3, 1.0), BoundedHashRouter(10, 3, 1.0)
    b._owners = [o for o in b._owners]             # same ring; drop replica 3's points from b
    keep = [i for i, o in enumerate(b._owners) if o != 3]
    b._points, b._owners = [b._points[i] for i in keep], [b._owners[i] for i in keep]
    moved = 0
    for k in keys:
        oa, ob = next(a.ring_order(k)), next(b.ring_order(k))
        if oa != 3:
            assert oa == ob                        # keys not on the removed replica stay put
        moved += oa != ob
    assert 0.05 < moved / len(keys) < 0.2          # about a tenth moved, not nearly all (modulo hashing)


def test_tenants_share_no_prefix():
    tr = multi_tenant_trace(**SMALL)
    firsts = {r.tenant: r.prompt[0] for r in tr}
    assert len(set(firsts.values())) == 3
    cache = RadixCache()
    seen = set()
    for r in tr:
        m, _ = cache.serve(r.prompt, r.completion)
        if r.tenant not in seen:                   # a tenant's first request finds nothing of another's
            assert m == 0
            seen.add(r.tenant)


def test_trace_is_seeded_and_keeps_each_tenants_order():
    a, b = multi_tenant_trace(**SMALL), multi_tenant_trace(**SMALL)
    assert [r.prompt for r in a] == [r.prompt for r in b]
    for t in range(3):
        turns = [(r.request.conversation, r.request.turn) for r in a if r.tenant == t]
        for c in {c for c, _ in turns}:
            got = [k for cc, k in turns if cc == c]
            assert got == sorted(got)


def test_one_replica_every_router_the_same():
    tr = multi_tenant_trace(**SMALL)
    rates = {simulate_fleet(tr, r, 1, None, 4)["hit_rate"] for r in
             (RandomRouter(1), BoundedHashRouter(1, 16), CacheAwareRouter(1))}
    assert len(rates) == 1


def test_routers_order_on_a_multi_tenant_trace():
    tr = multi_tenant_trace(**SMALL)
    n = 6
    h = {name: simulate_fleet(tr, r, n, None, 2 * n) for name, r in
         (("random", RandomRouter(n, 0)), ("hash", BoundedHashRouter(n, 64, 0.25)), ("index", CacheAwareRouter(n, 16, 0.25)))}
    assert h["random"]["hit_rate"] < h["hash"]["hit_rate"] < h["index"]["hit_rate"]
    for s in h.values():
        assert s["matched_tokens"] + s["prefilled_tokens"] == s["prompt_tokens"]
    assert h["hash"]["peak_load"] <= load_bound(2 * n - 1, n, 0.25)


def test_bad_inputs_refused():
    with pytest.raises(ValueError, match="epsilon"):
        BoundedHashRouter(4, 16, 0.0)
    with pytest.raises(ValueError, match="n_replicas"):
        RandomRouter(0)
    with pytest.raises(ValueError, match="key_tokens"):
        BoundedHashRouter(4, 0)
