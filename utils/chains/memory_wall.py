"""memory-wall: HBM bytes per dense FLOP across three GPU generations, and what undoing the fall would take.

beta = W / F (HBM bandwidth over dense tensor rate; the reciprocal of the roofline's ridge) and
kappa = M / F (capacity per FLOP/s) for each chip; their ratios between generations; then the bandwidth the
last chip would need for the first chip's beta, in HBM stacks, die edge (shoreline) and watts; and the
software levers that give the bytes back (batching, quantised weights, compressed KV).
"""
from __future__ import annotations

import math

from utils import catalog, models, roofline
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import HOLDS, READING, UNCHECKABLE, WRONG, Claim

DTYPE_ORDER = ("fp4", "fp8", "bf16", "tf32")   # narrow to wide: a chip without `dtype` runs it at the next wider rate
DTYPES = tuple(sorted({f[:-len("_dense")] for k in catalog.keys("accelerator")
                       for f in catalog.accelerator(k).values if f.endswith("_dense")}))

PARAMETERS = (
    Param("gpu_a", "a100-sxm-80gb", "the first (oldest) chip: a catalog key or a spec file", check="accelerator",
          source="the claim's A100 (the 80GB part; see the check for the 40GB)"),
    Param("gpu_b", "h100-sxm", "the middle chip", check="accelerator", source="the claim's H100"),
    Param("gpu_c", "b200", "the last (newest) chip", check="accelerator", source="the claim's B200 (HGX column)"),
    Param("dtype", "bf16", "precision of the dense FLOP rate (the catalog's *_dense fields)", check="choice",
          choices=DTYPES, source="this book's reading: the training and serving precision"),
)

RESULTS = (
    Result("bytes_per_flop_first", "B/FLOP", "HBM bytes per dense FLOP, first chip", of="beta_a"),
    Result("bytes_per_flop_middle", "B/FLOP", "HBM bytes per dense FLOP, middle chip", of="beta_b"),
    Result("bytes_per_flop_last", "B/FLOP", "HBM bytes per dense FLOP, last chip", of="beta_c"),
    Result("ratio_middle_over_first", "", "Bytes per FLOP, middle chip / first chip", of="r_ba"),
    Result("ratio_last_over_middle", "", "Bytes per FLOP, last chip / middle chip", of="r_cb"),
    Result("ratio_last_over_first", "", "Bytes per FLOP, last chip / first chip", of="r_ca"),
    Result("capacity_per_flop_first", "GB/(TFLOP/s)", "HBM capacity per dense FLOP/s, first chip", of="kappa_a"),
    Result("capacity_per_flop_middle", "GB/(TFLOP/s)", "HBM capacity per dense FLOP/s, middle chip", of="kappa_b"),
    Result("capacity_per_flop_last", "GB/(TFLOP/s)", "HBM capacity per dense FLOP/s, last chip", of="kappa_c"),
    Result("bandwidth_to_match_first", "TB/s", "Bandwidth the last chip needs for the first chip's bytes per FLOP",
           of="W_x"),
    Result("stacks_to_match_first", "", "HBM stacks that bandwidth takes at the last chip's per-stack rate", of="n_x"),
    Result("hbm_power_to_match_first", "W", "HBM power at that bandwidth (HBM3E energy per bit)", of="P_x"),
    Result("ridge_batch_first", "sequence",
           "Batch at which bf16 weights reach the ridge (at the dense rate of dtype), first chip", of="B_a"),
    Result("ridge_batch_last", "sequence",
           "Batch at which bf16 weights reach the ridge (at the dense rate of dtype), last chip", of="B_c"),
    Result("mla_kv_compression", "", "DeepSeek-V3 MLA: KV bytes per token, full MHA / latent", of="f_mla"),
)

def document(source) -> str:
    """A catalog source as the page prints it: the document, its address and the date it was read."""
    return f"{source.title}, {source.url}, read {source.read}"


def cited(v) -> str:
    """A catalog value's provenance as the page prints it: its note, then its document."""
    return "; ".join(x for x in (v.note, document(v.source)) if x)


def stacks(entry) -> tuple | None:
    """(HBM stacks on the package, memory type, source text) from the catalog; None for a chip without them."""
    if "hbm_stacks" not in entry:
        return None
    return int(entry.q("hbm_stacks").m), entry.q("hbm_type"), cited(entry["hbm_stacks"])


HBM = {k: catalog.interconnect(k) for k in ("hbm2", "hbm2e", "hbm3", "hbm3e", "hbm4")}   # one stack's interface
HBM_TABLE = document(HBM["hbm3"]["pin_rate"].source)
HBM4_SOURCE = "HBM4 row: " + document(HBM["hbm4"]["pin_rate"].source)
HBM3E_PIN = HBM["hbm3e"].q("pin_rate")     # SK hynix's first announced rate (HBM_TABLE: 1 TB/s per stack)
STACK_EDGE = HBM["hbm3"].q("stack_edge")
STACK_EDGE_SOURCE = document(HBM["hbm3"]["stack_edge"].source)
RETICLE = (q(26, "mm"), q(33, "mm"))   # the scanner's exposure field: the largest die one exposure prints
RETICLE_SOURCE = ("this book's assumption: the standard 26 x 33 mm scanner field, whose area is the '~858 mm2' maximum "
                  "reticle size in 'Blackwell B200 Deep Dive', "
                  "https://fridayswithfaraday.com/posts/gpu-hw-blackwell-b200-deep-dive, "
                  "read 2026-11-29; HBM sits on the two long edges, the short edges carry NVLink and PCIe")
HBM2E_PJ = HBM["hbm2e"].q("energy_per_bit")
HBM3E_GAIN = float(HBM["hbm3e"].q("perf_per_watt_over_hbm2e").m)
HBM3E_PJ = HBM2E_PJ / HBM3E_GAIN
HBM3E_PJ_SOURCE = (f"HBM2E's {fmt(HBM2E_PJ)} (Micron table, kylolab.com) over Micron's '{HBM3E_GAIN}x improvement-per-watt "
                   "compared to ... HBM2E' for its HBM3E (Tom's Hardware, same article as the footprint); the DRAM "
                   "device only, not the GPU's PHY and controller")
# (name, pins, per-pin rate, per-stack figure the table states), oldest first
HBM_GENERATIONS = [(e.short_name, int(e.q("pins").m), e.q("pin_rate"), e.q("stack_bandwidth")) for e in HBM.values()]


def rate_field(entry, dtype) -> tuple[str, bool]:
    """The catalog field whose dense rate this chip delivers for `dtype`, and whether it fell back to a wider
    precision (A100 has no fp8: an fp8 model on it is dequantised and multiplied in bf16)."""
    if f"{dtype}_dense" in entry:
        return f"{dtype}_dense", False
    for d in (DTYPE_ORDER[DTYPE_ORDER.index(dtype) + 1:] if dtype in DTYPE_ORDER else ()):
        if f"{d}_dense" in entry:
            return f"{d}_dense", True
    raise ParameterError(f"{entry.key} has no dense rate for {dtype} or any wider precision")


def validate(p) -> None:
    for name in ("gpu_a", "gpu_b", "gpu_c"):
        entry = p[name]
        try:
            rate_field(entry, p.dtype)
        except ParameterError as e:
            raise ParameterError(f"{name}: {e}") from None
        for field in ("hbm_bandwidth", "hbm_capacity", "tdp"):
            if field not in entry:
                raise ParameterError(f"{name}: {entry.key} has no {field} in the catalog")


def memory_wall(gpu_a, gpu_b, gpu_c, dtype, *, alt=None) -> Chain:
    """The chain. Chips are catalog keys or Entries; alt: {symbol: catalog Value} to use an alternative figure
    the catalog keeps instead of the primary."""
    alt = alt or {}
    entries = {t: (g if hasattr(g, "values") else catalog.accelerator(g)) for t, g in zip("abc", (gpu_a, gpu_b, gpu_c))}
    ch = Chain(f"Bytes per dense {dtype} FLOP: " + " → ".join(e.short_name for e in entries.values()))

    def given_catalog(symbol, entry, field, unit, label):
        v = alt.get(symbol, entry[field])
        cite = v.cite + (f" ({v.note})" if symbol in alt and v.note else "")
        return ch.given(symbol, v.q.to(unit), label, kind=v.kind, source=cite)

    for tag, e in entries.items():
        field, fell_back = rate_field(e, dtype)
        given_catalog(f"F_{tag}", e, field, "TFLOP/s", f"{e.short_name}: dense {field[:-6]} rate"
                      + (f" (no {dtype} tensor cores)" if fell_back else ""))
        given_catalog(f"W_{tag}", e, "hbm_bandwidth", "TB/s", f"{e.short_name}: HBM bandwidth")
        given_catalog(f"M_{tag}", e, "hbm_capacity", "GB", f"{e.short_name}: HBM capacity")
        ch.step(f"beta_{tag}", f"W_{tag}/F_{tag}", "B/FLOP", f"{e.short_name}: bytes per FLOP")
        ch.step(f"kappa_{tag}", f"M_{tag}/F_{tag}", "GB/(TFLOP/s)", f"{e.short_name}: capacity per FLOP")
    ch.step("r_ba", "beta_b/beta_a", "", "bytes per FLOP, middle chip over first")
    ch.step("r_cb", "beta_c/beta_b", "", "bytes per FLOP, last chip over middle")
    ch.step("r_ca", "beta_c/beta_a", "", "bytes per FLOP, last chip over first")
    ch.step("s_ba", "kappa_b/kappa_a", "", "capacity per FLOP, middle over first")
    ch.step("s_cb", "kappa_c/kappa_b", "", "capacity per FLOP, last over middle")
    # What undoing the wall would take on the last chip.
    ch.step("W_x", "beta_a*F_c", "TB/s", "bandwidth the last chip needs for the first chip's bytes per FLOP")
    e_c = entries["c"]
    if stacks(e_c):
        n, mem, src = stacks(e_c)
        ch.given("n_c", n, f"{e_c.short_name}: HBM stacks ({mem})", kind="spec", source=src)
        ch.step("w_s", "W_c/n_c", "TB/s", "bandwidth per stack on the last chip")
    else:
        pins = int(HBM["hbm3e"].q("pins").m)
        ch.given("w_s", (HBM3E_PIN * pins).to("TB/s"), "bandwidth per stack (HBM3E)", kind="spec",
                 source=f"{pins} pins x {fmt(HBM3E_PIN)}; {HBM_TABLE} (no stack count in the catalog for {e_c.key})")
    ch.solve("n_x", "W_x = n_x*w_s", "", "stacks the last chip would need at that per-stack bandwidth")
    ch.given("ell", STACK_EDGE, "die edge one HBM stack occupies", kind="spec", source=STACK_EDGE_SOURCE)
    ch.step("L_x", "n_x*ell", "mm", "shoreline those stacks need")
    ch.given("L_r", 2 * RETICLE[1], "shoreline of one reticle-limited die: its two long edges",
             kind="assumption", source=RETICLE_SOURCE)
    ch.step("d_x", "L_x/L_r", "", "reticle-limited dies' worth of shoreline")
    ch.given("epsilon", HBM3E_PJ, "HBM energy per bit moved (HBM3E)", kind="assumption", source=HBM3E_PJ_SOURCE)
    ch.step("P_c", "W_c*epsilon", "W", "HBM power of the last chip, streaming at full bandwidth")
    ch.step("P_x", "W_x*epsilon", "W", "HBM power at the bandwidth that matches the first chip")
    given_catalog("T_c", e_c, "tdp", "W", f"{e_c.short_name}: TDP")
    ch.step("p_x", "(P_x - P_c)/T_c", "", "the extra memory power as a share of the last chip's TDP")
    return ch


def software_offsets(base: Chain, dtype, mla_model="deepseek-v3", gqa_model="llama-3-70b") -> Chain:
    """What software gives back: the batch at which bf16 weights reach the ridge, quantised weights, MLA's KV."""
    mla, gqa = catalog.model(mla_model), catalog.model(gqa_model)
    ch = Chain("What software gives back: batch to the ridge, quantised weights, compressed KV")
    for tag in "abc":
        ch.given(f"beta_{tag}", base[f"beta_{tag}"], next(r.label for r in base.rows if r.name == f"beta_{tag}"),
                 kind="derived", source="the chain above")
    ch.given("k", q(2, "FLOP/parameter/token"), "FLOPs per weight per token (one multiply-add)",
             kind="derived", source="decode-roofline chapter")
    ch.given("tau", q(1, "token/sequence"), "tokens each sequence adds per decode step", kind="derived",
             source="decode")
    ch.given("b_16", q(2, "B/parameter"), "bytes per bf16 weight", kind="spec", source="bf16 is two bytes")
    for tag in "abc":
        ch.step(f"B_{tag}", f"b_16/(k*beta_{tag}*tau)", "sequence",
                f"batch at which bf16 weights reach the ridge (dense {dtype} rate)")
    ch.given("b_8", q(1, "B/parameter"), "bytes per fp8 weight", kind="spec", source="fp8 is one byte")
    ch.given("b_4", q(0.5, "B/parameter"), "bytes per fp4 weight", kind="spec", source="fp4 is half a byte")
    ch.step("B_c8", "b_8/(k*beta_c*tau)", "sequence", "the same on the last chip with fp8 weights")
    ch.step("B_c4", "b_4/(k*beta_c*tau)", "sequence", "the same on the last chip with fp4 weights")
    ch.given("K_mla", models.kv_bytes_per_token(mla, 2), f"{mla.name}: KV cache per token, MLA latent (bf16)",
             kind="derived", source="utils.models.kv_bytes_per_token from the catalog config")
    ch.given("K_mha", models.kv_bytes_per_token_mha(mla, 2), f"{mla.name}: the same with full multi-head K and V",
             kind="derived", source="utils.models.kv_bytes_per_token_mha")
    ch.step("f_mla", "K_mha/K_mla", "", "MLA's compression of the KV bytes per token")
    ch.given("K_gqa", models.kv_bytes_per_token(gqa, 2), f"{gqa.name}: KV cache per token, GQA (bf16)",
             kind="derived", source="utils.models.kv_bytes_per_token")
    ch.given("K_gmha", models.kv_bytes_per_token_mha(gqa, 2), f"{gqa.name}: the same with one K and V per query head",
             kind="derived", source="utils.models.kv_bytes_per_token_mha")
    ch.step("f_gqa", "K_gmha/K_gqa", "", "GQA's compression, for comparison")
    return ch


def compute(p) -> Chain:
    """The wall's chain; the software offsets the results read are its values (no rows), their chain its data."""
    wall = memory_wall(p.gpu_a, p.gpu_b, p.gpu_c, p.dtype)
    soft = software_offsets(wall, p.dtype)
    for k in ("B_a", "B_b", "B_c", "B_c8", "B_c4", "f_mla", "f_gqa", "K_mla", "K_mha"):
        wall.value(k, soft[k])
    wall.data["software"] = soft
    return wall


# --- the claim ------------------------------------------------------------------------------------
# "Halved" is read as a ratio of 0.5 give or take 0.1 (between 0.4 and 0.6); "level" as 1 give or take 0.1.
CLAIM = dict(first="a100-sxm-80gb", middle="h100-sxm", last="b200", dtype="bf16",
             halved=0.5, halved_tol=0.1, level=1.0, level_tol=0.1)
FIRST_40GB = "a100-sxm4-40gb"
QUOTES = dict(
    halved="The workload asks for bytes and the chip delivers FLOPs: bytes per FLOP halved from A100 to H100",
    level="and held level on B200.",
    software="A defensible thesis is more bandwidth and capacity per FLOP, the shoreline and power arithmetic "
             "for why it has not happened, and the counterargument that software already routes around the wall.")
CLAIM_SOURCE = "spec/001, paragraph on the memory wall"


def halved(r) -> bool:
    return abs(r - CLAIM["halved"]) <= CLAIM["halved_tol"]


def level(r) -> bool:
    return abs(r - CLAIM["level"]) <= CLAIM["level_tol"]


def bus_bits(entry) -> int:
    """The memory bus width: stacks times one stack's pins."""
    n, mem, _ = stacks(entry)
    return n * int(HBM[mem.lower()].q("pins").m)


def route2() -> dict:
    """Second route to each bandwidth: bus width x per-pin rate (AnandTech's SC23 table); B200 as its stacks
    times the per-stack figure of its launch (TweakTown), which is the launch/DGX 8 TB/s, not the HGX 7.7."""
    a100, h100, b200 = (catalog.accelerator(k) for k in ("a100-sxm-80gb", "h100-sxm", "b200"))
    w = {"a100-sxm-80gb": bus_bits(a100) * a100.q("hbm_pin_rate"), "h100-sxm": bus_bits(h100) * h100.q("hbm_pin_rate"),
         "b200": stacks(b200)[0] * b200.q("hbm_stack_bandwidth")}
    beta = {k: (v / catalog.accelerator(k).q("bf16_dense")).to("B/FLOP") for k, v in w.items()}
    return dict(r_ba=as_float(beta["h100-sxm"] / beta["a100-sxm-80gb"], ""),
                r_cb=as_float(beta["b200"] / beta["h100-sxm"], ""), w_b200=w["b200"].to("TB/s"))


def readings() -> list[tuple]:
    """Every reading of "B200" the catalog keeps (one figure varied at a time) against H100, then H200 as
    the middle chip: (label, chain, ratio, level?)."""
    out = []
    for last in ("b200", "gb200"):
        e = catalog.accelerator(last)
        for bw in (e["hbm_bandwidth"], *e["hbm_bandwidth"].alternatives):
            for cap in (e["hbm_capacity"], *e["hbm_capacity"].alternatives):
                if cap is not e["hbm_capacity"] and bw is not e["hbm_bandwidth"]:
                    continue
                alt = {**({"W_c": bw} if bw is not e["hbm_bandwidth"] else {}),
                       **({"M_c": cap} if cap is not e["hbm_capacity"] else {})}
                what = (f"{fmt(bw.q)}" + ("" if bw is e["hbm_bandwidth"] else f" ({bw.source.title.split(',')[0]})")
                        + f", {fmt(cap.q)}" + ("" if cap is e["hbm_capacity"] else f" ({cap.source.title.split(',')[0]})"))
                ch = memory_wall(CLAIM["first"], CLAIM["middle"], last, CLAIM["dtype"], alt=alt)
                r = as_float(ch["r_cb"], "")
                out.append((f"{e.short_name} vs H100: {what}", ch, r, level(r)))
    ch = memory_wall(CLAIM["first"], "h200", "b200", CLAIM["dtype"])
    r = as_float(ch["r_cb"], "")
    out.append(("B200 (HGX) vs H200", ch, r, level(r)))
    return out


@memoised
def checks() -> dict:
    cc = memory_wall(CLAIM["first"], CLAIM["middle"], CLAIM["last"], CLAIM["dtype"])
    c40 = memory_wall(FIRST_40GB, CLAIM["middle"], CLAIM["last"], CLAIM["dtype"])
    return dict(cc=cc, c40=c40, route2=route2(), readings=readings(), soft=software_offsets(cc, CLAIM["dtype"]))


def claims() -> list[Claim]:
    ck = checks()
    cc, c40, rd, soft = ck["cc"], ck["c40"], ck["readings"], ck["soft"]
    r80, r40 = as_float(cc["r_ba"], ""), as_float(c40["r_ba"], "")
    vs_h100 = [r for label, _, r, _ in rd if "vs H100" in label]
    lv = all(level(r) for r in vs_h100)
    h80, h40 = halved(r80), halved(r40)
    v_halved = HOLDS if h80 and h40 else READING if h80 or h40 else WRONG
    return [
        Claim("halved", quote=QUOTES["halved"], source=CLAIM_SOURCE, claimed="bytes per FLOP halved from A100 to H100",
              derived=f"{fmt(r80)} from the A100 80GB; {fmt(r40)} from the A100 40GB", verdict=v_halved,
              reading=("'A100' read as the A100 SXM4 80GB, the part that replaced the launch 40GB across the market; "
                       f"from the 40GB part the ratio is {fmt(r40)}") if v_halved == READING else "",
              nearest_true=(f"bytes per FLOP fell to {fmt(r80)} (A100 80GB) or {fmt(r40)} (A100 40GB) of A100's"
                            if v_halved == WRONG else ""),
              reason=(f"HBM bandwidth per dense bf16 FLOP: A100 80GB {fmt(cc['W_a'])} over {fmt(cc['F_a'])} and H100 "
                      f"{fmt(cc['W_b'])} over {fmt(cc['F_b'])} give {fmt(r80)}, a halving; the launch A100 40GB's "
                      f"{fmt(c40['W_a'], digits=4)} gives {fmt(r40)}, a third down, not a half")),
        Claim("level", quote=QUOTES["level"], source=CLAIM_SOURCE, claimed="bytes per FLOP held level from H100 to B200",
              derived=f"{fmt(cc['beta_c'], style='sci')} vs {fmt(cc['beta_b'], style='sci')}: ratio {fmt(cc['r_cb'])}",
              verdict=HOLDS if lv else WRONG,
              nearest_true="" if lv else f"B200 has {fmt(cc['r_cb'])} of H100's bytes per FLOP",
              reason=(f"against H100, the chip the sentence names, B200 has {fmt(cc['r_cb'])} of its bytes per FLOP, and "
                      f"every B200 and GB200 figure the catalog keeps gives {fmt(min(vs_h100))} to {fmt(max(vs_h100))}; "
                      f"against H200, the Hopper with HBM3E, it would be {fmt(rd[-1][2])}")),
        Claim("software", quote=QUOTES["software"], source=CLAIM_SOURCE,
              claimed="more bandwidth and capacity per FLOP has not happened for shoreline and power reasons; "
                      "software routes around the wall",
              derived=(f"matching A100's bytes per FLOP on B200 takes {fmt(cc['W_x'])}: {fmt(cc['n_x'])} stacks at "
                       f"{fmt(cc['w_s'])} each, {fmt(cc['d_x'])} reticle dies' worth of edge, "
                       f"{fmt(cc['P_x'] - cc['P_c'])} more HBM power; fp8 weights halve the ridge batch, "
                       f"MLA divides KV bytes by {fmt(soft['f_mla'])}"),
              verdict=UNCHECKABLE,
              reason=(f"The sentence proposes a thesis and its counterargument and gives no number to check: the "
                      f"arithmetic is this book's own, so a check would compare the book with itself. The book's "
                      f"figures: matching the first chip needs {fmt(cc['n_x'])} stacks, {fmt(cc['d_x'])} reticle-limited dies' "
                      f"worth of edge, and {pct(cc['p_x'])} more of the TDP in HBM power; each software lever exceeds "
                      f"the hardware's halving (MLA alone divides KV bytes by {fmt(soft['f_mla'])}), but only where it "
                      f"applies")),
    ]


# --- the page's numbers, tables, figure and exercises ------------------------------------------------
def chain_texts(p, ch) -> dict:
    r_end = as_float(ch["r_ca"], "")
    out = {"dtype": p.dtype, "intro-verdict": "No" if r_end < 0.9 else "More than kept pace" if r_end > 1.1 else "Roughly",
           "ch-beta-a": fmt(ch["beta_a"], style="sci"), "ch-ridge-a": fmt(1 / ch["beta_a"]),
           "ch-ridge-c": fmt(1 / ch["beta_c"]), "ch-s-ba": fmt(ch["s_ba"]), "ch-s-cb": fmt(ch["s_cb"]),
           "ch-kappa-a": fmt(ch["kappa_a"]), "ch-kappa-b": fmt(ch["kappa_b"]), "ch-kappa-c": fmt(ch["kappa_c"]),
           "ch-w-c": fmt(ch["W_c"]), "ch-f-c": fmt(ch["F_c"]), "ch-w-s": fmt(ch["w_s"]),
           "ch-n-c": str(stacks(p.gpu_c)[0]) if stacks(p.gpu_c) else "assumed HBM3E",
           "ch-n-x-ceil": str(math.ceil(as_float(ch["n_x"]))), "ch-l-x": fmt(ch["L_x"]), "ch-l-r": fmt(ch["L_r"]),
           "ch-d-x": fmt(ch["d_x"]), "ch-p-c": fmt(ch["P_c"]), "ch-tdp-c": fmt(ch["T_c"]), "ch-p-x-share": pct(ch["p_x"]),
           "ch-epsilon": fmt(ch["epsilon"])}
    for tag, name in zip("abc", ("gpu_a", "gpu_b", "gpu_c")):
        out[f"name-{tag}"] = p[name].short_name
    return out


def hbm_rows() -> list[tuple]:
    rows = []
    for name, pins, rate, stated in HBM_GENERATIONS:
        per_stack = (pins * rate).to("GB/s")
        assert abs(as_float(per_stack / stated, "") - 1) < 0.03, (name, per_stack, stated)
        rows.append((name, f"{pins:,}", fmt(rate), fmt(per_stack), fmt(stated)))
    return rows


def chip_rows() -> list[tuple]:
    rows = []
    for key in sorted(catalog.keys("accelerator"), key=lambda k: (as_float(catalog.accelerator(k).q("bf16_dense"), "FLOP/s"),
                                                                  as_float(catalog.accelerator(k).q("hbm_bandwidth"), "B/s"))):
        e = catalog.accelerator(key)
        if stacks(e):
            n, mem, _ = stacks(e)
            per_stack = (e.q("hbm_bandwidth") / n).to("GB/s")
            rows.append((e.short_name, mem, str(n), fmt(e.q("hbm_bandwidth")), fmt(per_stack),
                         fmt((per_stack / int(HBM[mem.lower()].q("pins").m)).to("Gbit/s"))))
    return rows


def shoreline_texts() -> dict:
    sites = 2 * math.floor(as_float(RETICLE[1] / STACK_EDGE, ""))
    # GH100, a near-reticle die, has exactly six HBM sites (H100 fills five)
    assert sites == stacks(catalog.accelerator("h200"))[0]
    return {"hbm3-stack": fmt((HBM_GENERATIONS[2][1] * HBM_GENERATIONS[2][2]).to("GB/s")),
            "hbm3-pin": fmt(HBM_GENERATIONS[2][2]), "hbm4-stack": fmt((HBM_GENERATIONS[4][1] * HBM_GENERATIONS[4][2]).to("TB/s")),
            "sites-per-die": str(sites), "h100-stacks": str(stacks(catalog.accelerator("h100-sxm"))[0]),
            "reticle-long": fmt(RETICLE[1]),
            "stack-edge": fmt(STACK_EDGE), "hbm2e-pj": fmt(HBM2E_PJ), "hbm3e-gain": fmt(HBM3E_GAIN)}


def check_texts(ck) -> dict:
    cc, c40, r2, rd = ck["cc"], ck["c40"], ck["route2"], ck["readings"]
    r_level = [r for _, _, r, _ in rd[:-1]]
    return {"check-r-ba": fmt(cc["r_ba"]), "check-r-cb": fmt(cc["r_cb"]), "check-r-ba2": f"{r2['r_ba']:.3f}",
            "check-r-cb2": f"{r2['r_cb']:.3f}", "check-w-b200-2": fmt(r2["w_b200"]),
            "check-beta-a": fmt(cc["beta_a"], style="sci"), "check-beta-b": fmt(cc["beta_b"], style="sci"),
            "check-beta-c": fmt(cc["beta_c"], style="sci"), "check-w40": fmt(c40["W_a"], digits=4), "check-w80": fmt(cc["W_a"]),
            "check-beta-40": fmt(c40["beta_a"], style="sci"), "check-r-40": fmt(c40["r_ba"]),
            "check-halved-lo": fmt(CLAIM["halved"] - CLAIM["halved_tol"]),
            "check-halved-hi": fmt(CLAIM["halved"] + CLAIM["halved_tol"]),
            "check-level-lo": fmt(CLAIM["level"] - CLAIM["level_tol"]),
            "check-level-hi": fmt(CLAIM["level"] + CLAIM["level_tol"]),
            "check-level-min": fmt(min(r_level)), "check-level-max": fmt(max(r_level)), "check-h200-r": fmt(rd[-1][2]),
            "check-h200-beta": fmt(rd[-1][1]["beta_b"], style="sci"), "check-s-ba": fmt(cc["s_ba"]),
            "check-s-cb": fmt(cc["s_cb"]), "check-rate-x": fmt(cc["F_b"] / cc["F_a"])}


def reading_rows(ck) -> list[tuple]:
    return [(label, fmt(ch["beta_c"], style="sci"), fmt(r), "level" if ok else "not level", fmt(ch["s_cb"]))
            for label, ch, r, ok in ck["readings"]]


def software_texts(out) -> dict:
    return {"sw-b-b": fmt(out["B_b"]), "sw-b-c8": fmt(out["B_c8"]), "sw-b-c4": fmt(out["B_c4"]),
            "sw-k-mla": fmt(out["K_mla"], "kB/token"), "sw-k-mha": fmt(out["K_mha"], "MB/token"),
            "sw-f-gqa": fmt(out["f_gqa"]), "sw-mla-name": catalog.model("deepseek-v3").short_name,
            "sw-gqa-name": catalog.model("llama-3-70b").name}


def figure_data(p) -> dict:
    """Every catalog chip's bytes and capacity per dense FLOP, in order of dense rate (then bandwidth)."""
    def rate_of(key):
        e = catalog.accelerator(key)
        return e.q(rate_field(e, p.dtype)[0]).to("TFLOP/s").m
    keys = sorted(catalog.keys("accelerator"), key=lambda k: (rate_of(k), catalog.accelerator(k).q("hbm_bandwidth").to("TB/s").m))
    bw = {k: catalog.accelerator(k).q("hbm_bandwidth").to("TB/s").m for k in keys}
    cap = {k: catalog.accelerator(k).q("hbm_capacity").to("GB").m for k in keys}
    label = {k: catalog.accelerator(k).short_name.replace("NVIDIA ", "").replace("AMD Instinct ", "").split(",")[0]
             for k in keys}
    return dict(keys=keys, rate={k: rate_of(k) for k in keys}, bw=bw, label=label,
                beta={k: bw[k] * 1e12 / (rate_of(k) * 1e12) for k in keys},
                kappa={k: cap[k] / rate_of(k) for k in keys},
                chosen={p.gpu_a.key, p.gpu_b.key, p.gpu_c.key})


def what_changes(p, ch: Chain) -> dict:
    fp8 = memory_wall(CLAIM["first"], CLAIM["middle"], CLAIM["last"], "fp8")
    return {"wc-fp8-r-ba": fmt(fp8["r_ba"]), "wc-fp8-r-cb": fmt(fp8["r_cb"])}


def exercises(p, ch: Chain) -> dict:
    ck = checks()
    mi = memory_wall("h100-sxm", "h100-sxm", "mi300x", "bf16")
    fp8 = memory_wall(CLAIM["first"], CLAIM["middle"], CLAIM["last"], "fp8")
    cc = ck["cc"]
    pins4, rate4 = HBM_GENERATIONS[4][1], HBM_GENERATIONS[4][2]
    n4 = as_float(cc["W_x"] / (pins4 * rate4).to("TB/s"), "")
    return {"ex1-name": catalog.accelerator("mi300x").short_name, "ex1-beta": fmt(mi["beta_c"], style="sci"),
            "ex1-kappa": fmt(mi["kappa_c"]), "ex1-r": fmt(mi["r_cb"]), "ex1-s": fmt(mi["s_cb"]),
            "ex1-stacks": str(stacks(catalog.accelerator("mi300x"))[0]), "ex2-pins": f"{pins4:,}", "ex2-rate": fmt(rate4),
            "ex2-need": fmt(cc["W_x"]), "ex2-stacks": fmt(n4), "ex2-whole": str(math.ceil(n4)),
            "ex2-has": str(stacks(catalog.accelerator("b200"))[0]), "ex3-a": fmt(fp8["beta_a"], style="sci"),
            "ex3-b": fmt(fp8["beta_b"], style="sci"), "ex3-c": fmt(fp8["beta_c"], style="sci"),
            "ex3-w": fmt(fp8["W_x"]), "ex3-n": fmt(fp8["n_x"])}


def ridge_check(ck) -> float:
    """Third route: utils.roofline's ridge is the reciprocal of bytes per FLOP; the largest residual."""
    return max(abs(as_float(roofline.chip(key).ridge * ck["cc"][f"beta_{tag}"], "") - 1)
               for tag, key in zip("abc", (CLAIM["first"], CLAIM["middle"], CLAIM["last"])))


SPEC = Spec("memory-wall", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
