"""token-rate-limits: why a request limit protects nothing, two buckets per tenant per model,
reserve-then-settle, and a distributed counter fast enough for the gateway.

The fleet's capacity comes from the continuous-batching chain (tokens per second one replica earns at the
workload's mean prompt and reply); the limits are sold out of it. A request costs prompt + output tokens,
anywhere from 50 to 50,000, so a request limit sized at the mean request lets a tenant send
50,000 / (p + o) times its token share, and one sized for the largest holds a small-request tenant to
50 / 50,000 of it. The token bucket reserves prompt + max_tokens at admission and settles the unused
part at the end; without the settle a tenant gets (p + o) / (p + max_tokens) of its limit. Every
admission and every settle is one atomic Lua script on Redis (utils/serving/token_limits.py): the gateway needs
(requests per second) x (scripts per request) of them, against the measured rate of one Redis.
"""
from __future__ import annotations

import math

from utils.chain import Chain, as_float, memoised
from utils.chains import continuous_batching as cb
from utils.params import Param, Result, Spec
from utils.serving.token_limits import FakeClock, Limits, TwoBucketLimiter
from utils.serving.token_limits import contract_scenarios as tl_contract
from utils.units import fmt, num, pct, q, short
from utils.verdicts import READING, WRONG, Claim

MEASURED = ("measured by tests/serving/test_token_limits.py::test_redis_scripts_per_second (a CPU timing: the book's "
            "2-core build machine, Debian redis-server 7.0.15 on loopback, utils/serving/resp.py), 2026-12-01")

PARAMETERS = (
    Param("model", "llama-3-70b", "the model the limits are for: a catalog key or a config.json path",
          check="model", source="catalog: Llama-3-70B, the continuous-batching chapter's model"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel)", unit="GPU",
          check="whole", source="this book's assumption: one 8-GPU node per replica"),
    Param("mean_prompt_tokens", 1024, "p: mean prompt per request", unit="token", check="whole",
          source="this book's assumption (the continuous-batching chapter's workload)"),
    Param("mean_output_tokens", 512, "o: mean reply per request", unit="token", check="whole",
          source="this book's assumption (the continuous-batching chapter's workload)"),
    Param("max_tokens", 4096, "M: the max_tokens a typical request asks for (what admission reserves)",
          unit="token", check="whole", source="this book's assumption: a common client default"),
    Param("replicas", 100, "N: replicas of the model in the fleet", check="whole",
          source="this book's assumption"),
    Param("sellable_share", 0.8, "u: share of the fleet's tokens per second the limits may sell", check="fraction",
          source="this book's assumption: headroom for bursts and a lost replica"),
    Param("tenant_share", 0.05, "s: share of the sold tokens one tenant's limit allows", check="fraction",
          source="this book's assumption: a large tenant"),
    Param("small_request_tokens", 50, "n_S: the cheapest request", unit="token", check="whole",
          source="the claim"),
    Param("large_request_tokens", 50_000, "n_L: the dearest request", unit="token", check="whole",
          source="the claim"),
    Param("scripts_per_request", 2, "k: Redis scripts per request (admit, settle)", check="whole",
          source="utils/serving/token_limits.py: one EVALSHA to admit, one to settle"),
    Param("redis_scripts_per_s_connection", 6700.0, "R_c: scripts per second on one connection, "
          "each waiting for its reply", unit="1/s", source=MEASURED),
    Param("redis_scripts_per_s_server", 30000.0, "R_s: scripts per second one Redis runs, pipelined",
          unit="1/s", source=MEASURED),
)

RESULTS = (
    Result("replica_tokens_per_s", "token/s", "Output tokens per second one replica earns", of="X"),
    Result("fleet_tokens_per_s", "token/s", "Prompt and output tokens per second the limits may sell", of="T_f"),
    Result("fleet_requests_per_s", "request/s", "Requests per second at that rate", of="lambda_0"),
    Result("tenant_tokens_per_s", "token/s", "One tenant's token limit", of="r_tok"),
    Result("tenant_requests_per_s", "request/s", "A request limit at the mean request, same share", of="r_req"),
    Result("overshoot_of_share", "", "Tokens a tenant at that request limit sends, over its share (largest requests)",
           of="f_over"),
    Result("overshoot_of_fleet", "", "The same tenant's tokens over the whole fleet's sellable rate", of="f_fleet",
           percent=True),
    Result("undershoot_small", "", "Share of its tokens a small-request tenant gets under a worst-case request limit",
           of="f_under", percent=True),
    Result("usable_without_settle", "", "Share of a token limit a tenant can use if the reservation is never settled",
           of="phi", percent=True),
    Result("scripts_per_s_needed", "1/s", "Redis scripts per second the gateway needs", of="S"),
    Result("redis_headroom", "", "One Redis's scripts per second over what the gateway needs", of="H"),
    Result("connections_needed", "", "Gateway connections to Redis at one script in flight each", of="C"),
)


@memoised
def replica_rate(model_key: str, gpu_key: str, gpus: int, prompt: int, output: int):
    """Output tokens per second one replica earns: the continuous-batching chapter's chain (X)."""
    p = cb.SPEC.check(model=model_key, gpu=gpu_key, gpus_per_replica=gpus, mean_prompt_tokens=prompt,
                      mean_output_tokens=output)
    return cb.batching_chain(p, source="the continuous-batching chain")["X"]


def limits_chain(X, replicas, sellable_share, tenant_share, prompt, output, max_tokens, small, large,
                 scripts_per_request, r_conn, r_server, *, source="parameters cell") -> Chain:
    """`source`: one text for every parameter's row, or a function of the parameter's name (SPEC.source)."""
    def src(name: str) -> str:
        return source(name) if callable(source) else source

    ch = Chain("Token rate limits: the fleet's tokens, a tenant's share, and the counter")
    ch.given("X", X, "output tokens per second one replica earns", kind="derived",
             source="utils.chains.continuous_batching (batch, step time, prefill chunks)")
    ch.given("N", replicas, "replicas", kind="assumption", source=src("replicas"))
    ch.given("u", sellable_share, "share the limits may sell", kind="assumption", source=src("sellable_share"))
    ch.given("p", q(prompt, "token/request"), "mean prompt", kind="assumption", source=src("mean_prompt_tokens"))
    ch.given("o", q(output, "token/request"), "mean reply", kind="assumption", source=src("mean_output_tokens"))
    ch.step("T_f", "N*u*X*(p + o)/o", "token/s", "prompt and output tokens per second the limits may sell")
    ch.step("lambda_0", "T_f/(p + o)", "request/s", "requests per second at that rate")
    ch.given("s", tenant_share, "one tenant's share", kind="assumption", source=src("tenant_share"))
    ch.step("r_tok", "s*T_f", "token/s", "the tenant's token limit")
    ch.step("r_req", "r_tok/(p + o)", "request/s", "a request limit for the same share, at the mean request")
    ch.given("n_S", q(small, "token/request"), "the cheapest request", kind="assumption", source=src("small_request_tokens"))
    ch.given("n_L", q(large, "token/request"), "the dearest request", kind="assumption", source=src("large_request_tokens"))
    ch.step("f_over", "r_req*n_L/r_tok", "", "tokens sent at that request limit, over the share (dearest requests)")
    ch.step("f_fleet", "r_req*n_L/T_f", "", "the same, over the whole fleet's sellable rate")
    ch.step("r_req_w", "r_tok/n_L", "request/s", "a request limit safe at the dearest request")
    ch.step("f_under", "r_req_w*n_S/r_tok", "", "share of its tokens the cheapest requests then get")
    ch.given("M", q(max_tokens, "token/request"), "max_tokens reserved at admission", kind="assumption", source=src("max_tokens"))
    ch.step("phi", "(p + o)/(p + M)", "", "share of the token limit usable if reservations are never settled")
    ch.given("k", q(scripts_per_request, "1/request"), "Redis scripts per request (admit, settle)", kind="assumption",
             source=src("scripts_per_request"))
    ch.step("S", "k*lambda_0", "1/s", "scripts per second the gateway needs")
    ch.given("R_s", q(r_server, "1/s"), "scripts per second one Redis runs (pipelined)", kind="measured",
             source=src("redis_scripts_per_s_server"))
    ch.step("H", "R_s/S", "", "headroom of one Redis")
    ch.given("R_c", q(r_conn, "1/s"), "scripts per second on one connection, a reply awaited each time",
             kind="measured", source=src("redis_scripts_per_s_connection"))
    ch.step("C", "ceiling(S/R_c)", "", "connections the gateways need, one script in flight each")
    return ch


def compute(p) -> Chain:
    X = replica_rate(p.model.key, p.gpu.key, p.gpus_per_replica, p.mean_prompt_tokens, p.mean_output_tokens)
    return limits_chain(X, p.replicas, p.sellable_share, p.tenant_share, p.mean_prompt_tokens, p.mean_output_tokens,
                        p.max_tokens, p.small_request_tokens, p.large_request_tokens, p.scripts_per_request,
                        p.redis_scripts_per_s_connection, p.redis_scripts_per_s_server,
                        source=lambda name: SPEC.source(p, name))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = "A request can cost 50 tokens or 50,000, so a request limit protects nothing."
CLAIM = dict(small=50, large=50_000)


def claim_chain() -> Chain:
    d = SPEC.defaults()
    X = replica_rate(d["model"], d["gpu"], d["gpus_per_replica"], d["mean_prompt_tokens"], d["mean_output_tokens"])
    return limits_chain(X, d["replicas"], d["sellable_share"], d["tenant_share"], d["mean_prompt_tokens"],
                        d["mean_output_tokens"], d["max_tokens"], CLAIM["small"], CLAIM["large"],
                        d["scripts_per_request"], d["redis_scripts_per_s_connection"],
                        d["redis_scripts_per_s_server"], source="the claim and this book's fleet")


def claims() -> list[Claim]:
    ch = claim_chain()
    over, fleet, under = (as_float(ch[k], "") for k in ("f_over", "f_fleet", "f_under"))
    spread = CLAIM["large"] / CLAIM["small"]
    ok = over > 1 and under < 1                       # every request limit errs one way or the other
    share = pct(as_float(ch["s"], ""))
    return [Claim(
        "request-limit", quote=QUOTE, source="spec/000 and spec/001 (the token-rate-limits paragraph)",
        claimed=f"requests from {num(CLAIM['small'])} to {short(CLAIM['large'])} tokens; a request limit protects nothing",
        derived=f"a request limit at the mean request: {fmt(over)} times the tenant's share; one safe at the dearest: "
                f"{pct(under)} of it for the cheapest",
        verdict=READING if ok else WRONG,
        reading=(f"'a request limit protects nothing', read as 'holds no tenant to its token share': a limit of r "
                 f"requests a second does bound tokens, at r times the dearest request ({short(CLAIM['large'])} "
                 f"tokens), but that bound is {fmt(spread)} times what the same requests cost at "
                 f"{num(CLAIM['small'])} tokens, so no one request limit fits the share: it is overrun or it starves"),
        nearest_true="" if ok else "a request limit bounds the tokens within the spread of request sizes",
        reason=(f"A limit of r requests a second bounds tokens only at r times the dearest request, "
                f"{short(CLAIM['large'])} tokens, {fmt(spread)} times the cheapest's {num(CLAIM['small'])}: set at the "
                f"mean request of {fmt(ch['p'] + ch['o'])} it lets a tenant with a {share} share send {fmt(over)} "
                f"times its tokens with {short(CLAIM['large'])}-token requests ({pct(fleet)} of the whole fleet), and "
                f"set safe for those it holds a tenant of {num(CLAIM['small'])}-token requests to {pct(under)} of its "
                f"share."))]


# --- the reference limiter on a fake clock: the settle, run -------------------------------------------
def settle_run(prompt: int = 1024, output: int = 512, max_tokens: int = 4096, tokens_per_s: float = 20_000.0,
               seconds: float = 120.0, decode_tps: float = 50.0) -> dict:
    """One tenant asking far above its limit (every 10 ms), each request the same prompt, max_tokens and reply:
    requests admitted per second with the settle and without it, against the rate each predicts."""
    out = {}
    for settle in (True, False):
        clock = FakeClock()
        lim = TwoBucketLimiter(Limits(1000.0, 1000, tokens_per_s, tokens_per_s * 10), clock=clock)
        pending, admitted = [], 0
        for i in range(int(seconds * 100)):
            t = i / 100
            while pending and pending[0][0] <= t:
                td, rid = pending.pop(0)
                clock.t = td
                lim.settle("t", "m", rid, output)
            clock.t = t
            if lim.admit("t", "m", f"r{i}", prompt, max_tokens).admitted:
                admitted += 1
                if settle:
                    pending.append((t + output / decode_tps, f"r{i}"))
        out[settle] = admitted
    burst, hold = tokens_per_s * 10, output / decode_tps
    # With the settle, a request costs p + o, but the requests in flight hold their unused reservation
    # (M - o each) until they end: at the end of the run, rate x hold x (M - o) tokens are still out.
    in_flight = tokens_per_s / (prompt + output) * hold * (max_tokens - output)
    return dict(with_settle=out[True], without=out[False], seconds=seconds, hold=hold,
                pred_with=(burst + tokens_per_s * seconds - in_flight) / (prompt + output),
                pred_without=(burst + tokens_per_s * seconds) / (prompt + max_tokens),
                prompt=prompt, output=output, max_tokens=max_tokens, tokens_per_s=tokens_per_s)


def case_rows() -> list[list[str]]:
    """The cases tests/serving/test_token_limits.py holds, each run live on the reference."""
    L = Limits(2.0, 5, 1000.0, 10_000)
    c = FakeClock()
    lim = TwoBucketLimiter(L, clock=c)
    lim.admit("a", "m", "1", 9000, 900)
    short_ = lim.admit("a", "m", "2", 500, 0)
    lim2 = TwoBucketLimiter(L, clock=FakeClock())
    lim2.admit("a", "m", "1", 1000, 4000)
    s1, s2 = lim2.settle("a", "m", "1", 300), lim2.settle("a", "m", "1", 300)
    lim2.admit("a", "m", "d", 10, 10)
    dup = lim2.admit("a", "m", "d", 10, 10)
    huge = lim2.admit("a", "m", "9", 20_000, 0)
    return [["the token bucket is short", "refused, no request taken",
             f"refused: {short_.requests_left:g} of {L.request_burst:g} requests left"],
            ["a reply of 300 of 4,000 reserved", "the unused 3,700 refunded", f"{s1.refunded:,.0f} refunded"],
            ["the same settle retried", "refunds nothing", f"settled again: {s2.settled}"],
            ["the same admission retried (one id)", "charged once", f"{dup.reserved:g} tokens charged"],
            ["prompt + max_tokens above the burst", "never admissible (413, not 429)",
             "retry-after: never" if math.isinf(huge.retry_after) else "admitted"],
            ["eight gateways racing on Redis", "exactly the burst admitted", "tests/serving/test_token_limits.py"],
            ["Redis scripts against this reference", "the same decisions and levels, seeded sequence",
             "tests/serving/test_token_limits.py"],
            ["Redis script cache flushed", "EVALSHA falls back to EVAL", "tests/serving/test_token_limits.py"]]


def tenant_curve(ch, sizes) -> dict:
    """Tokens per second a tenant at the mean-request limit sends, against its request size."""
    import numpy as np  # the figure's curve

    r_req = as_float(ch["r_req"], "request/s")
    return dict(sizes=np.asarray(sizes, float), sent=r_req * np.asarray(sizes, float),
                share=as_float(ch["r_tok"], "token/s"), fleet=as_float(ch["T_f"], "token/s"))


def what_changes(p, ch) -> dict:
    d = SPEC.defaults()
    big = SPEC.derive(replicas=d["replicas"] * 10)
    m8k = SPEC.derive(max_tokens=8192)
    one = SPEC.derive(tenant_share=0.01)
    return {"wc-replicas": fmt(d["replicas"] * 10), "wc-scripts": fmt(big["scripts_per_s_needed"].m) + " per second",
            "wc-headroom": fmt(big["redis_headroom"].m, digits=2), "wc-conns": num(big["connections_needed"].m),
            "wc-max": fmt(8192), "wc-phi": pct(m8k["usable_without_settle"].m),
            "wc-share": pct(0.01), "wc-fleet": pct(one["overshoot_of_fleet"].m)}


def exercises(p, ch) -> dict:
    per_min, size = 60, 32_000
    ex1 = per_min / 60 * size
    p2, o2, m2 = 500, 300, 8192
    d = SPEC.defaults()
    big = SPEC.derive(replicas=1000)
    return {"ex1-limit": fmt(per_min), "ex1-size": short(size), "ex1-rate": fmt(q(ex1, "token/s")),
            "ex1-minute": fmt(q(ex1 * 60, "token")),
            "ex2-prompt": fmt(p2), "ex2-output": fmt(o2), "ex2-max": fmt(m2), "ex2-phi": pct((p2 + o2) / (p2 + m2)),
            "ex2-over": fmt((p2 + m2) / (p2 + o2), digits=2),
            "ex3-replicas": fmt(1000), "ex3-scripts": fmt(big["scripts_per_s_needed"].m) + " per second",
            "ex3-server": fmt(d["redis_scripts_per_s_server"]) + " per second",
            "ex3-headroom": fmt(big["redis_headroom"].m, digits=2), "ex3-conns": num(big["connections_needed"].m)}


@memoised   # deterministic counts: the page and the tests share them
def contract_checks() -> dict:
    """The mechanism's contract, run small and in-process: {scenarios, held}. The scenarios:
    names holding the key's separator or braces, hostile names and counts.
    The full set, with processes killed mid-operation, is tests/serving/test_token_limits_adversarial.py."""
    return tl_contract()


def contract_text() -> dict:
    ck = contract_checks()
    return {"contract-scenarios": f"{ck['scenarios']:,}", "contract-held": f"{ck['held']:,}"}


SPEC = Spec("token-rate-limits", PARAMETERS, RESULTS, compute, closed_form=True)
