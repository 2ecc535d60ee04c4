"""observability-budget: seven spans with their durations, where a naive trace loses latency, the GPU
counters that read headroom, the metrics store's series budget, and cost attribution by token share.

The engine's spans come from the continuous-batching chain (utils.serving.batching on the roofline: the prefill
of a mean prompt, the mean decode step, the host's per-token streaming work); the spans outside the
engine are the book's assumptions, stated. Series per metric are the product of label cardinalities,
priced at Robust Perception's measured cost per series of a Prometheus head block. Attribution runs a
seeded two-tenant trace step by step (utils.fleet.tracing.attribute).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from utils import catalog
from utils.chain import Chain, as_float
from utils.chains import continuous_batching as cb
from utils.fleet import tracing
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import add_fraction_inputs, fraction_params
from utils.serving import batching
from utils.units import duration, fmt, pct, q
from utils.verdicts import READING, WRONG, Claim

SIMULATION = "a seeded two-tenant request trace served step by step, each step's GPU time split by token share"

EDGE_SOURCE = ("this book's assumption: an in-cluster proxy hop on a kept-alive connection, an API-key check "
               "against a local cache, a cache-aware router's lookup: milliseconds or less each")
QUEUE_SOURCE = ("this book's assumption: tens of milliseconds at the operating point of the latency-SLO "
                "chapter (its median TTFT, queue and prefill together, is of that order)")
FLUSH_SOURCE = ("this book's assumption: an intermediary that buffers a server-sent-event stream and flushes "
                "on a timer or a full buffer (nginx proxy_buffering is on by default)")
SERIES_SOURCE = ("Robust Perception, 'How much RAM does Prometheus 2.x need for cardinality and ingestion?' "
                 "(Brian Brazil, 2019): about 732 B per series plus per-label and per-value costs, doubled for "
                 "Go's garbage collection; 'a million series costs around 2GiB of RAM'; "
                 "https://www.robustperception.io/how-much-ram-does-prometheus-2-x-need-for-cardinality-and-ingestion/, "
                 "read 2026-12-01")
SPAN_PRICE_SOURCE = ("Datadog, APM billing: indexed spans $1.70 per million per month beyond the allotment; "
                     "https://docs.datadoghq.com/account_management/billing/apm_distributed_tracing/, read 2026-12-01")
DCGM_SOURCE = ("NVIDIA DCGM user guide, feature overview, profiling metrics (DCGM_FI_PROF_SM_ACTIVE, "
               "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE) and field identifiers "
               "(DCGM_FI_DEV_GPU_UTIL); https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html, "
               "read 2026-12-01")
HEAD_SOURCE = "Prometheus TSDB: the head block holds the most recent two hours in memory (its block range)"

PARAMETERS = (
    Param("model", "llama-3-70b", "the model served: a catalog key or a config.json", check="model",
          source="catalog: Llama-3-70B, as in the continuous-batching chapter"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model", unit="GPU", check="whole",
          source="this book's assumption: one node"),
    Param("gateway_ms", 2.0, "gateway span: TLS already up, one proxy hop", unit="ms", source=EDGE_SOURCE),
    Param("auth_ms", 1.0, "auth span: API key against a local cache", unit="ms", source=EDGE_SOURCE),
    Param("queue_ms", 25.0, "waiting for a batch slot (no code runs, so a naive trace has no span)", unit="ms",
          check="non_negative", source=QUEUE_SOURCE),
    Param("router_ms", 0.5, "router span: the cache-aware replica choice", unit="ms", source=EDGE_SOURCE),
    Param("client_flush_ms", 40.0, "between the server's last write and the client reading it", unit="ms",
          check="non_negative", source=FLUSH_SOURCE),
    *fraction_params(),
    Param("metrics", 20, "histogram metrics the serving fleet exports (latencies, sizes)", check="whole",
          source="this book's assumption"),
    Param("replicas", 256, "replicas (the instance label)", check="whole", source="this book's assumption"),
    Param("status_codes", 4, "values of the status label", check="whole", source="this book's assumption"),
    Param("buckets", 12, "buckets per histogram, +Inf included (each one a series)", check="whole",
          source="this book's assumption"),
    Param("tenants", 100, "tenants, if tenant becomes a label", check="whole", source="this book's assumption"),
    Param("requests_per_s", 100.0, "requests a second across the fleet", unit="request/s",
          source="this book's assumption"),
    Param("head_hours", 2.0, "hours of series the store holds in memory", unit="hour", source=HEAD_SOURCE),
    Param("bytes_per_series", 2147.0, "memory per active series (2 GiB per million)", unit="B", source=SERIES_SOURCE),
    Param("store_memory_gib", 64.0, "memory of the metrics store's node", unit="GiB", source="this book's assumption"),
    Param("usd_per_million_spans", 1.70, "price of keeping (indexing) a million spans", unit="USD",
          source=SPAN_PRICE_SOURCE),
    Param("attribution_requests", 96, "requests in the attribution trace (two tenants)", unit="request",
          check="whole", source="this book's choice"),
    Param("attribution_batch", 16, "slots in the attribution run", unit="sequence", check="whole",
          source="this book's choice: small, so the page runs fast"),
    Param("seed", 0, "seed of the attribution trace", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("prefill_ms", "ms", "Prefill span of a mean prompt", of="t_pf"),
    Result("decode_s", "s", "Decode span of a mean reply (one span, many steps)", of="t_dec"),
    Result("client_latency", "s", "Arrival to the client reading the last token", of="t_cl"),
    Result("naive_latency", "s", "What a naive trace shows", of="t_nv"),
    Result("hidden_share", "", "Share of the client's wait the naive trace misses", of="s_h", percent=True),
    Result("ttft_hidden_share", "", "Share of the TTFT the naive trace misses", of="s_ttft", percent=True),
    Result("tensor_active_batch1", "", "Tensor activity at batch one (roofline)", of="a_1", percent=True),
    Result("tensor_active_batch", "", "Tensor activity at the chain's batch (roofline)", of="a_B", percent=True),
    Result("throughput_ratio", "", "Tokens per second, chain's batch over batch one, both at GPU_UTIL 100%",
           of="r_X"),
    Result("series", "", "Series in the store, labels as planned", of="S_0"),
    Result("series_with_tenant", "", "Series with a tenant label", of="S_t"),
    Result("series_with_request_id", "", "Series with a request-id label, over the head window", of="S_r"),
    Result("store_memory_request_id", "GiB", "Memory the request-id label needs", of="M_r"),
    Result("series_budget", "", "Series the store's memory holds", of="S_max"),
    Result("usd_per_token", "USD/token", "GPU cost of one output token", of="c_tok"),
    Result("span_over_token", "", "An indexed span per token, over the token's GPU cost", of="r_span"),
    Result("rag_share_by_tokens", "", "RAG tenant's share of GPU time, by token share", of="s_rag", percent=True),
    Result("rag_share_by_requests", "", "RAG tenant's share of requests", of="s_rag_n", percent=True),
)


def validate(p):
    if p.attribution_requests * 1.0 > 400:
        raise ParameterError(f"attribution_requests must be at most 400, got {p.attribution_requests!r}")
    if p.attribution_requests < 2:
        raise ParameterError(f"attribution_requests must be at least 2 (two tenants), got {p.attribution_requests!r}")


def engine_chain(p):
    """The continuous-batching chain for this model and GPU: the prefill, the step, the batch."""

    pc = cb.SPEC.check(model=p.model.key, gpu=p.gpu.key, gpus_per_replica=p.gpus_per_replica)
    return cb.batching_chain(pc, source="the continuous-batching chain"), pc


TENANTS = {"chat": (256, 512), "rag": (3072, 128)}      # mean prompt, mean reply (tokens): this book's mix


def attribution(e, n: int, B: int, chunk: int, context: int, seed: int) -> dict:
    """Two tenants alternating: chat (short prompts, long replies) and RAG (long prompts, short replies)."""
    half = (n + 1) // 2
    cp, co = batching.trace(half, *TENANTS["chat"], context, seed)
    rp, ro = batching.trace(half, *TENANTS["rag"], context, seed + 1)
    prompts = np.empty(2 * half, int)
    outputs = np.empty(2 * half, int)
    prompts[0::2], prompts[1::2], outputs[0::2], outputs[1::2] = cp, rp, co, ro
    tenants = np.array(["chat", "rag"] * half)
    r = tracing.attribute(e, prompts[:n], outputs[:n], B, chunk, tenants=tenants[:n], gpus=1)
    r.update(prompts=prompts[:n], outputs=outputs[:n], tenants=tenants[:n])
    return r


HISTOGRAM_SOURCE = ("Prometheus documentation, Metric types, Histogram: a histogram exposes a cumulative counter per "
                    "bucket as <basename>_bucket{le=...} (le=\"+Inf\" among them), the sum as <basename>_sum and the "
                    "count as <basename>_count; https://prometheus.io/docs/concepts/metric_types/#histogram, "
                    "read 2026-12-06")


def achieved_engine(ec, p) -> dict:
    """The engine's steps at the achieved shares of the peaks (no rate at 100% of a datasheet peak), at the
    continuous-batching chain's batch: each step's memory side over eta_W x bandwidth, its compute side over
    eta_P x the dense rate."""
    f = lambda name, unit: as_float(ec[name], unit)          # noqa: E731
    B, gW, gP = f("B", "sequence"), f("g", "GPU") * f("W", "byte/s/GPU"), f("g", "GPU") * f("P", "FLOP/s/GPU")
    w_b, kv = f("N_r", "parameter") * f("b_w", "byte/parameter"), f("kv_u", "byte/sequence")
    flops = f("f", "FLOP/sequence")
    eW, eP = p.bandwidth_fraction, p.compute_fraction
    step = lambda n, m_x=0.0, f_x=0.0: max((w_b + n * kv + m_x) / (gW * eW), (n * flops + f_x) / (gP * eP))  # noqa: E731
    t_d, t_c = step(B), step(B, f("M_ch", "byte"), f("F_ch", "FLOP"))
    phi = f("phi", "")
    t_bar = (1 - phi) * t_d + phi * t_c
    return dict(t_d=t_d, t_bar=t_bar, t_1=step(1), X=B * f("tau", "token/sequence") / t_bar)


def compute(p) -> Chain:
    ec, pc = engine_chain(p)
    e = batching.Engine.of(ec)
    B = cb.batch_size(ec)
    e_eff = dataclasses.replace(e, W=e.W * p.bandwidth_fraction, P=e.P * p.compute_fraction)
    a = achieved_engine(ec, p)
    ch = Chain("Spans, counters, series and attribution")
    ch.given("t_gw", q(p.gateway_ms, "ms"), "gateway", kind="assumption", source=SPEC.source(p, "gateway_ms"))
    ch.given("t_au", q(p.auth_ms, "ms"), "auth", kind="assumption", source=SPEC.source(p, "auth_ms"))
    ch.given("t_q", q(p.queue_ms, "ms"), "queue (no span in a naive trace)", kind="assumption",
             source=SPEC.source(p, "queue_ms"))
    ch.given("t_rt", q(p.router_ms, "ms"), "router", kind="assumption", source=SPEC.source(p, "router_ms"))
    add_fraction_inputs(ch, p.compute_fraction, p.bandwidth_fraction)
    ch.given("t_pf", q(batching.prefill_time(e_eff, [pc.mean_prompt_tokens]), "s").to("ms"), "prefill of a mean prompt",
             kind="derived", source="utils.serving.batching.prefill_time at the achieved shares")
    ch.given("o", ec["o"] * q(1, "sequence"), "mean reply", kind="assumption", source="the continuous-batching chain")
    ch.given("t_bar", q(a["t_bar"], "s").to("ms"), "mean decode step at the chain's batch", kind="derived",
             source="the continuous-batching chain's steps at the achieved shares")
    ch.given("tau", q(1, "token"), "tokens a sequence gains per step", kind="derived", source="decode")
    ch.step("t_dec", "o*t_bar/tau", "s", "decode span: one span over every step")
    ch.given("t_1", q(a["t_1"], "s").to("ms"), "a decode step with the request alone",
             kind="derived", source="the decode step at batch one, at the achieved shares")
    ch.given("t_d", q(a["t_d"], "s").to("ms"), "the same step in the chain's full batch", kind="derived",
             source="the continuous-batching chain's step at the achieved shares")
    ch.step("r_ck", "t_d/t_1", "", "how much sharing the step slows this request's token")
    ch.given("h", ec["h"], "host time per streamed token", kind="assumption", source="the continuous-batching chain")
    ch.step("t_fl", "o*h", "ms", "stream flush span: the server's writes")
    ch.step("t_srv", "t_gw + t_au + t_q + t_rt + t_pf + t_dec + t_fl", "s", "arrival to the server's last write")
    ch.given("t_c", q(p.client_flush_ms, "ms"), "client-side flush", kind="assumption",
             source=SPEC.source(p, "client_flush_ms"))
    ch.step("t_cl", "t_srv + t_c", "s", "arrival to the client's last token")
    ch.step("t_nv", "t_srv - t_q", "s", "naive trace: first span to last server write")
    ch.step("s_h", "(t_cl - t_nv)/t_cl", "", "share the naive trace misses")
    ch.step("s_ttft", "t_q/(t_gw + t_au + t_q + t_rt + t_pf)", "", "share of the TTFT it misses")
    # --- the counters that read headroom, on the roofline
    c1, cB = tracing.counters(e, 1), tracing.counters(e, B)
    ch.given("a_1", q(c1["tensor"], ""), "tensor activity at batch one", kind="derived", source="roofline step")
    ch.given("a_B", q(cB["tensor"], ""), f"tensor activity at batch {B}", kind="derived", source="roofline step")
    ch.given("r_X", q(cB["tokens_per_s"] / c1["tokens_per_s"], ""), "tokens per second, batch over one",
             kind="derived", source="roofline step")
    # --- series
    ch.given("n_m", q(p.metrics, ""), "metrics", kind="assumption", source=SPEC.source(p, "metrics"))
    ch.given("n_i", q(p.replicas, ""), "replicas", kind="assumption", source=SPEC.source(p, "replicas"))
    ch.given("n_s", q(p.status_codes, ""), "status values", kind="assumption", source=SPEC.source(p, "status_codes"))
    ch.given("n_b", q(p.buckets + 2, ""), "series per histogram and label set: its buckets, _sum and _count",
             kind="derived", source=HISTOGRAM_SOURCE)
    ch.step("S_0", "n_m*n_i*n_s*n_b", "", "series: the product of the labels' cardinalities")
    ch.given("n_t", q(p.tenants, ""), "tenants", kind="assumption", source=SPEC.source(p, "tenants"))
    ch.step("S_t", "S_0*n_t", "", "series with a tenant label")
    ch.given("R", q(p.requests_per_s, "request/s"), "requests", kind="assumption",
             source=SPEC.source(p, "requests_per_s"))
    ch.given("H", q(p.head_hours, "hour"), "head window", kind="assumption", source=SPEC.source(p, "head_hours"))
    ch.given("u", q(1, "request"), "one request", kind="derived", source="a request id names one request")
    ch.step("S_r", "n_m*n_b*R*H/u", "", "with a request id: every request new (its other labels fixed)")
    ch.given("m_s", q(p.bytes_per_series, "B"), "memory per series", kind="measured-by-others",
             source=SPEC.source(p, "bytes_per_series"))
    ch.step("M_0", "S_0*m_s", "GiB", "memory, labels as planned")
    ch.step("M_r", "S_r*m_s", "GiB", "memory with a request id")
    ch.given("M_max", q(p.store_memory_gib, "GiB"), "store's memory", kind="assumption",
             source=SPEC.source(p, "store_memory_gib"))
    ch.step("S_max", "M_max/m_s", "", "series the store holds")
    # --- a trace per token against the token
    price = catalog.price("h100-rental")["contract_1y"]
    ch.given("g", q(p.gpus_per_replica, "GPU"), "GPUs per replica", kind="assumption",
             source=SPEC.source(p, "gpus_per_replica"))
    ch.given("c_g", price.q, "GPU-hour price", kind="market", source=price.cite)
    ch.given("X", q(a["X"], "token/s"), "tokens per second per replica", kind="derived",
             source="the continuous-batching chain at the achieved shares")
    ch.step("c_tok", "g*c_g/X", "USD/token", "GPU cost of one token")
    ch.given("c_sp", q(p.usd_per_million_spans / 1e6, "USD"), "an indexed span", kind="market",
             source=SPEC.source(p, "usd_per_million_spans"))
    ch.given("tok", q(1, "token"), "one token", kind="derived", source="one span per token")
    ch.step("r_span", "c_sp/(c_tok*tok)", "", "a span per token over the token's cost")
    # --- attribution
    a = attribution(e, p.attribution_requests, p.attribution_batch, pc.chunk_tokens, pc.context_tokens, p.seed)
    ch.given("s_rag", q(a["by_tenant"]["rag"] / a["total"], ""), "RAG tenant's GPU time by token share",
             kind="derived", source="utils.fleet.tracing.attribute, seeded trace")
    ch.given("s_rag_n", q(a["requests_by_tenant"]["rag"] / len(a["tenants"]), ""), "RAG tenant's share of requests",
             kind="derived", source="the trace")
    ch.data.update(engine=e, attribution=a, counters=(c1, cB), batch=B)
    return ch


# --- the claim ---------------------------------------------------------------------------------------------
QUOTE = ("GPU utilization at 100% tells you nothing, and a trace per token would cost more than the tokens.")


def claims() -> list[Claim]:

    ch = compute(SPEC.check())
    c1, cB = ch.data["counters"]
    util_ok = c1["gpu_util"] == cB["gpu_util"] == 1.0 and as_float(ch["r_X"]) > 10
    span_ok = as_float(ch["r_span"]) > 1
    ok = util_ok and span_ok
    return [Claim(
        "util-and-traces", quote=QUOTE, source="spec/001, the paragraph on the span layout and the cardinality budget",
        claimed="GPU utilization says nothing; a span per token costs more than the token",
        derived=f"GPU_UTIL 100% at batch one and at {ch.data['batch']}, {fmt(ch['r_X'])}x the tokens; a span "
                f"{fmt(ch['r_span'])}x a token",
        verdict=READING if ok else WRONG,
        reading=("'tells you nothing' read as nothing about headroom (DCGM's GPU_UTIL is the share of time any "
                 "kernel ran, not how much of the chip it used), and 'would cost more than the tokens' as the price "
                 "of keeping (indexing) a span per token against the token's GPU time at a contract rental price, "
                 "the engine at the achieved shares of its peaks"),
        nearest_true="" if ok else "one of the two halves fails at these inputs",
        reason=f"on the roofline GPU_UTIL reads full at batch one and at batch {ch.data['batch']} while the tokens per second "
               f"differ {fmt(ch['r_X'])} times and tensor activity goes from {pct(as_float(ch['a_1']))} to "
               f"{pct(as_float(ch['a_B']))}; an indexed span costs {fmt(ch['c_sp'], digits=3)} against "
               f"{fmt(ch['c_tok'], digits=3)} of GPU time, {fmt(ch['r_span'])} times as much.")]


# --- the page's tables, figure, what changes, exercises -------------------------------------------------------
def span_rows(ch) -> list[list[str]]:
    d = {"gateway": ch["t_gw"], "auth": ch["t_au"], "queue": ch["t_q"], "router": ch["t_rt"],
         "prefill": ch["t_pf"], "decode": ch["t_dec"], "stream flush": ch["t_fl"]}
    where = {"gateway": EDGE_SOURCE.split(":")[0], "auth": "assumption", "queue": "assumption (no span: hidden)",
             "router": "assumption", "prefill": "roofline (utils.serving.batching)",
             "decode": "roofline: reply x mean step (one span)", "stream flush": "reply x host time per token"}
    sp = tracing.spans({k: as_float(v, "s") for k, v in d.items()})
    return [[s.name, duration(s.start), duration(s.duration), where[s.name]] for s in sp]


def counter_rows(ch) -> list[list[str]]:
    c1, cB = ch.data["counters"]
    return [["DCGM_FI_DEV_GPU_UTIL", "share of time any kernel ran", pct(c1["gpu_util"]), pct(cB["gpu_util"])],
            ["DCGM_FI_PROF_SM_ACTIVE", "share of cycles an SM has a warp resident",
             "not on the roofline: near full for memory-bound kernels too", "near full"],
            ["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "share of cycles the tensor pipes are busy", pct(c1["tensor"]),
             pct(cB["tensor"])],
            ["DCGM_FI_PROF_DRAM_ACTIVE", "share of cycles HBM is moving data", pct(c1["dram"]), pct(cB["dram"])]]


def series_rows(ch) -> list[list[str]]:
    rows = [("as planned: metric x replica x status x bucket", ch["S_0"]),
            ("add a tenant label", ch["S_t"]), ("add a request-id label (over the head window)", ch["S_r"])]
    m = as_float(ch["m_s"], "B")
    return [[what, fmt(as_float(s), digits=3), fmt(q(as_float(s) * m, "B").to("GiB"))] for what, s in rows]


def tenant_rows(ch) -> list[list[str]]:
    a = ch.data["attribution"]
    tot = a["total"]
    rows = []
    for t in ("chat", "rag"):
        sel = a["tenants"] == t
        rows.append([t, str(int(sel.sum())), fmt(float(a["prompts"][sel].sum() + a["outputs"][sel].sum())),
                     pct(a["by_tenant"][t] / tot), pct(a["naive_by_tenant"][t] / sum(a["naive_by_tenant"].values()))])
    return rows


def conservation(ch) -> float:
    a = ch.data["attribution"]
    return abs(a["charge"].sum() - a["total"]) / a["total"]


SEEDS = 5   # the attribution trace redrawn on seeds seed .. seed + 4: its shares are shown as their range over these


def spread(p) -> dict:
    """The attribution over SEEDS traces from p's seed: (lowest, highest) of the RAG tenant's share of GPU time, of
    what a per-request price overcharges it, and of the token-share charges' residue (zero on every trace)."""
    runs = [compute(p.replace(seed=p.seed + i)) for i in range(SEEDS)]
    vals = {"rag": [r["s_rag"].m for r in runs], "over": [r["s_rag_n"].m / r["s_rag"].m for r in runs],
            "residue": [conservation(r) for r in runs]}
    return {k: (min(v), max(v)) for k, v in vals.items()}


def span(lo_hi, f=fmt) -> str:
    lo, hi = (f(x) for x in lo_hi)
    return lo if lo == hi else f"{lo} to {hi}"


def series_curve(ch, n_labels: int = 8) -> dict:
    """Series as labels of growing cardinality are added (each ten values), against the store's budget."""
    extra = np.arange(1, n_labels + 1)
    base = as_float(ch["S_0"])
    return dict(labels=extra, series=base * 10.0 ** extra, budget=as_float(ch["S_max"]))


def what_changes(p, ch: Chain) -> dict:
    base = SPEC.extract(ch)
    busy = SPEC.extract(compute(p.replace(queue_ms=250.0)))
    return {"wc-queue": fmt(q(250.0, "ms")), "wc-queue-ttft": pct(busy["ttft_hidden_share"].m),
            "wc-base-ttft": pct(base["ttft_hidden_share"].m),
            "wc-budget": fmt(base["series_budget"].m), "wc-request-id": fmt(base["series_with_request_id"].m)}


def exercises(p, ch: Chain) -> dict:
    from utils.units import auto_bytes
    s = tracing.series([30, 64, 5, 10])
    rid = 30 * 10 * 50 * 3600 * 2
    return {"ex1-labels": "30 metrics, 64 replicas, 5 status values, 10 buckets", "ex1-series": fmt(s),
            "ex1-memory": auto_bytes(s * 2147.0),
            "ex2-rate": fmt(q(50, "request/s")), "ex2-series": fmt(rid), "ex2-memory": auto_bytes(rid * 2147.0),
            "ex3-step": fmt(q(20, "ms")), "ex3-a": fmt(3), "ex3-b": fmt(1),
            "ex3-a-share": pct(3 / 4), "ex3-b-share": pct(1 / 4), "ex3-a-gpu": fmt(q(20 * 8 * 3 / 4, "ms"))}


SPEC = Spec("observability-budget", PARAMETERS, RESULTS, compute, validate=validate)
