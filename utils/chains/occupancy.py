"""occupancy: registers per thread to resident warps, and why halving occupancy can double speed.

The occupancy calculation (utils.gpu.occupancy.occupancy, the CUDA Occupancy Calculator's rule) turns a
kernel's registers per thread and threads per block into the warps one SM holds. Speed does not follow
occupancy: a memory-bound kernel moves bytes at the rate Little's law allows, bytes in flight over
latency, and the bytes in flight per SM are warps x 32 lanes x independent loads per thread x bytes per
load. A register-blocked kernel with four independent loads per thread at half the warps has twice the
bytes in flight of a one-load kernel at full occupancy; while both are short of bandwidth x latency, it
runs twice as fast. The stores count too: a copy writes every byte it reads, so HBM saturates when the
reads reach bandwidth / (1 + written per read), and the loads in flight that saturate it halve. For the
copy the page measures the register-blocked kernel saturates and the lead is 4/3, not 2; the 2x is a
read-only kernel's (a sum, write_ratio = 0).
"""
from __future__ import annotations

import functools

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.gpu.occupancy import WARP, occupancy, sm_limits
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

CALC = "the CUDA Occupancy Calculator's rule, applied by utils.gpu.occupancy.occupancy to sm_limits.toml"
LATENCY_SOURCE = ("this book's assumption: a loaded HBM round trip of several hundred nanoseconds on "
                  "Hopper; set it for another GPU or load")

PARAMETERS = (
    Param("gpu", "h200", "the GPU: a catalog accelerator key with per-SM limits in sm_limits.toml",
          check="accelerator", source="catalog: NVIDIA H200, the book's reference GPU"),
    Param("threads_per_block", 256, "threads per block, both kernels", check="whole",
          source="this book's assumption: a common block size"),
    Param("regs_max_occ", 32, "registers per thread of the occupancy-maximised kernel", check="whole",
          source="this book's assumption: the most that still fills an SM with 2,048 threads"),
    Param("regs_blocked", 64, "registers per thread of the register-blocked kernel", check="whole",
          source="this book's assumption: four elements a thread, double the registers"),
    Param("loads_max_occ", 1, "independent loads in flight per thread, occupancy-maximised kernel",
          check="whole", source="one element a thread (a grid-stride copy)"),
    Param("loads_blocked", 4, "independent loads in flight per thread, register-blocked kernel",
          check="whole", source="four elements a thread, loaded before any is used"),
    Param("load_bytes", 4, "bytes per load (fp32)", unit="B", check="whole", source="fp32 elements"),
    Param("latency_ns", 600.0, "memory latency under load", unit="ns", source=LATENCY_SOURCE),
    Param("write_ratio", 1.0, "bytes the kernel writes to HBM per byte it reads (1 = a copy, 0 = a read-only sum)",
          check="non_negative", source="the kernels the page measures (occupancy-ilp) are copies"),
)

RESULTS = (
    Result("warps_max_occ", "", "Resident warps per SM, occupancy-maximised kernel", of="w_a"),
    Result("warps_blocked", "", "Resident warps per SM, register-blocked kernel", of="w_b"),
    Result("occupancy_max_occ", "", "Occupancy, occupancy-maximised kernel", of="o_a", percent=True),
    Result("occupancy_blocked", "", "Occupancy, register-blocked kernel", of="o_b", percent=True),
    Result("bytes_in_flight_needed", "KiB", "Bytes of loads in flight per SM that saturate HBM (stores counted)",
           of="Q"),
    Result("speedup", "", "Speed of the register-blocked kernel over the occupancy-maximised one", of="s"),
)


def validate(p):
    try:
        sm_limits(p.gpu)
    except KeyError:
        raise ParameterError(f"gpu: {p.gpu.key!r} has no per-SM limits in utils/catalog/sm_limits.toml "
                             f"(has: {', '.join(catalog.keys('sm_limit'))})") from None
    for name, regs in (("regs_max_occ", p.regs_max_occ), ("regs_blocked", p.regs_blocked)):
        try:
            occupancy(p.threads_per_block, regs, 0, sm_limits(p.gpu))
        except ValueError as e:
            raise ParameterError(f"{name}: {e}") from None
    for name in ("loads_max_occ", "loads_blocked", "load_bytes"):
        if getattr(p, name) < 1:
            raise ParameterError(f"{name} must be at least 1, got {getattr(p, name)!r}")


def occupancy_chain(gpu, threads_per_block, regs_max_occ, regs_blocked, loads_max_occ, loads_blocked,
                    load_bytes, latency_ns, *, write_ratio, source="parameters cell", cite=None,
                    latency_source=LATENCY_SOURCE) -> Chain:
    """Two kernels' resident warps on `gpu` and the bytes in flight each keeps against what saturates HBM. Each
    input cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = catalog.accelerator(gpu)
    lim = sm_limits(acc.key)
    oa, ob = (occupancy(threads_per_block, r, 0, lim) for r in (regs_max_occ, regs_blocked))
    ch = Chain(f"Two {int(threads_per_block)}-thread kernels on the {acc.name}: {int(regs_max_occ)} registers "
               f"and {int(loads_max_occ)} load a thread against {int(regs_blocked)} and {int(loads_blocked)}")
    ch.given("W", acc["hbm_bandwidth"], "HBM bandwidth")
    ch.given("n_SM", acc["sm_count"], "SMs")
    ch.given("W_max", lim.max_warps, "most warps an SM holds", kind="spec", source="sm_limits.toml")
    ch.given("w_a", oa.warps, f"resident warps, {int(regs_max_occ)} registers a thread ({oa.limiter}-limited)",
             kind="derived", source=CALC)
    ch.given("w_b", ob.warps, f"resident warps, {int(regs_blocked)} registers a thread ({ob.limiter}-limited)",
             kind="derived", source=CALC)
    ch.step("o_a", "w_a/W_max", "", "occupancy, occupancy-maximised kernel")
    ch.step("o_b", "w_b/W_max", "", "occupancy, register-blocked kernel")
    ch.given("lat", q(latency_ns, "ns"), "memory latency under load", kind="assumption",
             source=latency_source)
    ch.given("b", q(load_bytes, "B"), "bytes per load", kind="assumption", source=cite("load_bytes"))
    ch.given("k_a", int(loads_max_occ), "independent loads a thread, occupancy-maximised", kind="assumption",
             source=cite("loads_max_occ"))
    ch.given("k_b", int(loads_blocked), "independent loads a thread, register-blocked", kind="assumption",
             source=cite("loads_blocked"))
    ch.given("L", WARP, "threads a warp", kind="spec", source="CUDA C++ Programming Guide: a warp is 32 threads")
    ch.given("w_r", float(write_ratio), "bytes written per byte read (1: a copy; 0: a read-only kernel)",
             kind="assumption", source=cite("write_ratio"))
    ch.step("Q", "W*lat/(n_SM*(1 + w_r))", "KiB",
            "loads in flight per SM that saturate HBM (Little's law; the stores take their share of W)")
    ch.step("F_a", "w_a*L*k_a*b", "KiB", "bytes in flight per SM, occupancy-maximised")
    ch.step("F_b", "w_b*L*k_b*b", "KiB", "bytes in flight per SM, register-blocked")
    ch.step("U_a", "Min(1, F_a/Q)", "", "share of HBM bandwidth reached, occupancy-maximised")
    ch.step("U_b", "Min(1, F_b/Q)", "", "share of HBM bandwidth reached, register-blocked")
    ch.step("s", "U_b/U_a", "", "speed of the register-blocked kernel over the occupancy-maximised one")
    ch.solve("k_sat", "w_b*L*k_sat*b = Q", "", "loads a thread at which the register-blocked kernel saturates HBM")
    return ch


def compute(p) -> Chain:
    return occupancy_chain(p.gpu, p.threads_per_block, p.regs_max_occ, p.regs_blocked, p.loads_max_occ,
                           p.loads_blocked, p.load_bytes, p.latency_ns, write_ratio=p.write_ratio,
                           latency_source=SPEC.source(p, "latency_ns"), cite=functools.partial(SPEC.source, p))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Occupancy is how many warps an SM holds against its maximum, and it is a means, not an end. The "
         "arithmetic from registers per thread to resident warps, the launch bound that caps registers and "
         "the spills that follow, the profiler's occupancy view, and the kernel where halving occupancy "
         "doubled speed.")
# The book's model kernel (the source names none): the two kernels of the page, at the book's latency.
CLAIM = dict(gpu="h200", threads_per_block=256, regs_max_occ=32, regs_blocked=64, loads_max_occ=1,
             loads_blocked=4, load_bytes=4, latency_ns=600.0)
CLAIMED_SPEEDUP = 2.0


def _claim_kernel(**change) -> Chain:
    return occupancy_chain(**{**CLAIM, "write_ratio": 0.0, **change}, source="the book's model kernel")


def claim_chain() -> Chain:
    """The book's model of the claim: a read-only kernel (a sum), where the 2x can come out."""
    return _claim_kernel()


def min_latency(ch: Chain):
    """The latency above which the register-blocked kernel is still short of saturating HBM (its speedup is
    then the full ratio of bytes in flight): F_b = W lat / (n_SM (1 + w_r))."""
    return (ch["F_b"] * ch["n_SM"] * (1 + ch["w_r"]) / ch["W"]).to("ns")


@memoised
def checks() -> dict:
    ch = claim_chain()
    copy = _claim_kernel(write_ratio=1.0)
    same = _claim_kernel(loads_blocked=1)
    more = _claim_kernel(loads_blocked=8)
    short = _claim_kernel(latency_ns=300.0)
    return {"chain": ch, "copy": as_float(copy["s"]), "read": as_float(ch["s"]), "same_work": as_float(same["s"]),
            "eight": as_float(more["s"]), "lat_min": min_latency(ch),
            "glue": {"c-s": f"{as_float(ch['s']):.3g}", "c-same": f"{as_float(same['s']):.3g}",
                     "c-eight": f"{as_float(more['s']):.3g}", "c-eight-k": fmt(8),
                     "c-ksat": f"{as_float(ch['k_sat']):.3g}", "c-Ua": pct(as_float(ch["U_a"])),
                     "c-Ub": pct(as_float(ch["U_b"])), "c-copy": f"{as_float(copy['s']):.3g}",
                     "c-copy-Ua": pct(as_float(copy["U_a"])), "c-copy-Ub": pct(as_float(copy["U_b"])),
                     "c-copy-Q": fmt(copy["Q"]), "c-lat": fmt(ch["lat"]), "c-lat-min": fmt(min_latency(ch)),
                     "c-short-lat": fmt(short["lat"]), "c-short": f"{as_float(short['s']):.3g}"}}


def claims() -> list[Claim]:
    ck = checks()
    ch = ck["chain"]
    return [Claim(
        "halving", quote=QUOTE, source="spec/001, paragraph on occupancy; CHAINS.md, occupancy row",
        claimed="halving occupancy doubled speed (no kernel, GPU or latency named)",
        derived=f"the book's model kernel: occupancy x{as_float(ch['o_b'] / ch['o_a']):g}; speed x{ck['read']:.3g} "
                f"read-only, x{ck['copy']:.3g} as a copy",
        verdict=UNCHECKABLE,
        reason=f"The source names no kernel, GPU or latency, so a check could only judge a kernel the book built "
               f"itself. The book's model (its figure, not the source's): at {fmt(ch['w_b'])} warps against "
               f"{fmt(ch['w_a'])} with four times the loads a thread, a read-only kernel (a sum) runs "
               f"{ck['read']:.3g} times as fast, but only at a latency above {fmt(ck['lat_min'])} (the book "
               f"assumes {fmt(ch['lat'])}); the copy the page measures writes every byte it reads, saturates HBM "
               f"at half the loads in flight, and runs {ck['copy']:.3g} times as fast; halving occupancy with no "
               f"more work a thread gives {ck['same_work']:.3g} times.")]


# --- the page's tables and figures ------------------------------------------------------------------
def register_staircase(gpu, threads_per_block, regs=range(1, 256)) -> tuple:
    """Occupancy against registers per thread: the staircase the allocation granularity draws."""
    import numpy as np
    lim = sm_limits(gpu)
    r = np.array(list(regs))
    return r, np.array([occupancy(threads_per_block, int(x), 0, lim).occupancy for x in r])


def bandwidth_curves(p, loads=(1, 2, 4, 8)) -> dict:
    """Share of HBM bandwidth against resident warps per SM, for several independent loads per thread."""
    import numpy as np
    ch = compute(p)
    qb = as_float(ch["Q"], "B")
    warps = np.arange(4, 65, 4)
    return {"warps": warps, **{k: np.minimum(1.0, warps * WARP * k * p.load_bytes / qb) for k in loads}}


def case_rows(gpu) -> list[tuple]:
    """The calculator on a handful of launches, for the page's table (and the tests)."""
    lim = sm_limits(gpu)
    spec = [(256, 32, 0), (256, 64, 0), (256, 128, 0), (128, 37, 0), (256, 40, 0), (1024, 32, 0),
            (256, 32, 48 * 1024), (64, 16, 0)]
    rows = []
    for t, r, s in spec:
        o = occupancy(t, r, s, lim)
        rows.append((str(t), str(r), f"{s:,}", str(o.blocks_by["warps"]), str(o.blocks_by["registers"]),
                     str(o.blocks_by["shared memory"]), str(o.blocks), str(o.warps), pct(o.occupancy), o.limiter))
    return rows


def what_changes(p, ch: Chain) -> dict:
    base = {k: getattr(p, k) for k in ("threads_per_block", "regs_max_occ", "regs_blocked", "loads_max_occ",
                                       "loads_blocked", "load_bytes", "latency_ns", "write_ratio")}
    lo = occupancy_chain(p.gpu, **{**base, "latency_ns": 300.0}, latency_source="this section's sweep")
    hi = occupancy_chain(p.gpu, **{**base, "latency_ns": 1200.0}, latency_source="this section's sweep")
    lat = SPEC.source(p, "latency_ns")
    h100, a100 = (occupancy_chain(g, **base, latency_source=lat) for g in ("h100-sxm", "a100-sxm-80gb"))
    return {"w-lat-lo": fmt(q(300, "ns")), "w-s-lo": f"{as_float(lo['s']):.3g}",
            "w-lat-hi": fmt(q(1200, "ns")), "w-s-hi": f"{as_float(hi['s']):.3g}",
            "w-h100": f"{as_float(h100['s']):.3g}", "w-h100-Q": fmt(h100["Q"]),
            "w-a100": f"{as_float(a100['s']):.3g}", "w-a100-Q": fmt(a100["Q"])}


def exercises(p, ch: Chain) -> dict:
    lim = sm_limits("h200")
    e1 = occupancy(128, 72, 0, lim)
    e2 = occupancy(256, 32, 64 * 1024, lim)
    a100 = sm_limits("a100-sxm-80gb")
    e2a = occupancy(256, 32, 64 * 1024, a100)
    need = as_float(ch["Q"], "B") / (as_float(ch["w_a"]) * WARP * 4)
    return {"ex1-t": fmt(128), "ex1-r": fmt(72), "ex1-rw": fmt(e1.registers_per_warp), "ex1-w": fmt(e1.warps),
            "ex1-o": pct(e1.occupancy), "ex1-lim": e1.limiter,
            "ex2-s": fmt(q(64, "KiB")), "ex2-t": fmt(256), "ex2-b": fmt(e2.blocks), "ex2-o": pct(e2.occupancy),
            "ex2-ba": fmt(e2a.blocks), "ex2-oa": pct(e2a.occupancy),
            "ex3-k": f"{need:.3g}", "ex3-w": fmt(ch["w_a"])}


# --- the calculator against CUDA's occupancy query (the harness's occupancy-query) ------------------
QUERY_KERNELS = {"max_occupancy": "the one-element copy (occupancy-ilp, occupancy-maximised)",
                 "register_blocked": "the register-blocked copy (occupancy-ilp)",
                 "strided_s1": "the strided gather at stride 1 (coalescing)",
                 "strided_s32": "the strided gather at stride 32 (coalescing)"}


def calculator_on_record(record: dict | None, gpu: str) -> dict:
    """{kernel: blocks per SM by the calculator (utils.gpu.occupancy) on the registers, threads and shared
    memory an occupancy-query record reports for that kernel, on `gpu`'s sm_limits}; a kernel whose
    query the record skipped is absent (no record: empty). The prediction the query is compared with."""
    if record is None:
        return {}
    met, lim, out = record["metrics"], sm_limits(gpu), {}
    for k in QUERY_KERNELS:
        if all(f"{m}_{k}" in met for m in ("blocks_per_sm_query", "regs", "threads", "shared")):
            out[k] = occupancy(int(met[f"threads_{k}"]["value"]), int(met[f"regs_{k}"]["value"]),
                               int(met[f"shared_{k}"]["value"]), lim).blocks
    return out


SPEC = Spec("occupancy", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
