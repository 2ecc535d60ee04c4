"""vector-add-and-copies: the launch of an n-element add, its floor on HBM, and the host copies around it.

The add moves 3ne bytes through HBM (a and b read, c written); the copies move the same 3ne over the host
link (a and b in, c back). So the copies cost W / (eta L) times the add, the HBM bandwidth over one
direction of the host link: the array's size and the element type cancel, and only the GPU and the link
set the ratio. The launch (blocks, idle lanes, waves) is CUDA's arithmetic on the SM count.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q, short
from utils.verdicts import WRONG, Claim, judge, sig_fig_tolerance

CUDA_GUIDE = ("CUDA C++ Programming Guide, Technical Specifications per Compute Capability (compute "
              "capabilities 8.0, 9.0 and 10.0), https://docs.nvidia.com/cuda/cuda-c-programming-guide/, "
              "read 2026-11-30")
# SM counts the catalog lacks (an assumption with its source; the catalog should hold them).
SM_ASSUMED = {
    "b200": (148, "Chips and Cheese, Nvidia's B200: Keeping the CUDA Juggernaut Rolling (2025): 74 SMs "
                  "enabled per die, 148 per GPU, https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut, "
                  "read 2026-11-30"),
    "gb200": (148, "the same Blackwell GPU as B200 (Chips and Cheese, Nvidia's B200, 2025: 148 SMs), "
                   "https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut, read 2026-11-30"),
}
LINK_EFF_SOURCE = ("this book's assumption: PCIe 5 packet overhead (a transaction-layer header and framing "
                   "of about 24 B on each 256 B payload) leaves about 91% of the one-way rate, and DMA "
                   "copies reach a few points less; the host-device-copy measurement replaces it")
DATASHEET = "datasheet rate (no loss assumed)"
# The Triton kernel's launch (utils/gpu/kernels/vector_add.py: DEFAULT_BLOCK, DEFAULT_WARPS; a test holds
# them equal, since this module may not import the kernel, which imports torch).
TRITON_BLOCK, TRITON_WARPS = 1024, 4
CUDA_SOURCE = Path(__file__).resolve().parents[1] / "gpu" / "cuda" / "vector_copy_add.cu"

PARAMETERS = (
    Param("n_elements", 100e6, "elements in each of a, b and c", check="whole",
          source="the claim (a 100M-element array)"),
    Param("block_size", 256, "threads per block (blockDim.x), one element per thread: a multiple of "
          "the warp, at most CUDA's limit per block", check="whole", source="a common CUDA choice; this book's assumption"),
    Param("gpu", "h200", "the GPU: a catalog accelerator key (an NVIDIA part: the launch arithmetic is CUDA's)",
          check="accelerator", source="catalog: NVIDIA H200, the book's reference GPU"),
    Param("link", "pcie5-x16", "the host link the copies cross: a catalog interconnect key, one direction of it",
          check="interconnect", source="catalog: PCIe 5.0 x16, the host link of HGX H100, H200 and B200"),
    Param("dtype_bytes", 4, "bytes per element", unit="B", check="whole", source="fp32, the claim's type"),
    Param("link_efficiency", 0.85, "fraction of the link's one-way datasheet rate a pinned copy reaches",
          check="fraction", source=LINK_EFF_SOURCE),
)

RESULTS = (
    Result("grid_blocks", "", "Blocks in the grid (one thread per element)", of="G"),
    Result("idle_lanes", "", "Threads past the end of the array, switched off by the bounds check", of="I"),
    Result("add_time", "ms", "The add's floor: bytes over HBM bandwidth", of="t_add"),
    Result("copy_time", "ms", "Host-to-device and device-to-host copies around the add", of="t_copy"),
    Result("copy_over_add", "", "Copies' time over the add's time", of="r"),
)


def sm_count(acc):
    """The SM count from the catalog, or an assumption with its source: (value, source or None)."""
    if "sm_count" in acc:
        return acc["sm_count"], None
    if acc.key in SM_ASSUMED:
        return SM_ASSUMED[acc.key]
    raise ParameterError(f"gpu: the catalog has no SM count for {acc.key!r} and this page has no assumption for it")


def validate(p):
    if p.block_size % 32 or p.block_size > 1024:
        raise ParameterError(f"block_size must be a whole number of warps (a multiple of the warp's lanes) "
                             f"up to CUDA's limit per block; got {p.block_size!r}")
    if not p.gpu.name.startswith("NVIDIA"):
        raise ParameterError(f"gpu: the launch arithmetic here is CUDA's (warps, threads per SM); "
                             f"{p.gpu.key!r} is {p.gpu.name}")
    if "bandwidth_unidirectional" not in p.link:
        raise ParameterError(f"link: {p.link.key!r} has no one-way bandwidth in the catalog")
    sm_count(p.gpu)


def vector_add_chain(n_elements, block_size, acc, ic, dtype_bytes, link_efficiency, *,
                     source="parameters cell", cite=None, eff_source=LINK_EFF_SOURCE) -> Chain:
    """The add's launch and its HBM floor on `acc`, against the copies over `ic`. Each input cites `source`, or
    cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = catalog.accelerator(acc)
    ic = catalog.interconnect(ic)
    ch = Chain(f"{short(n_elements)}-element add on {acc.name}, copies over {ic.name}")
    ch.given("n", float(n_elements), "elements per vector", kind="assumption", source=cite("n_elements"))
    ch.given("e", q(dtype_bytes, "B"), "bytes per element", kind="assumption", source=cite("dtype_bytes"))
    ch.given("B", int(block_size), "threads per block (blockDim.x)", kind="assumption", source=cite("block_size"))
    ch.given("w", 32, "threads per warp", kind="spec", source=CUDA_GUIDE)
    sms, sms_source = sm_count(acc)
    if sms_source:
        ch.given("S", sms, "SMs", kind="assumption", source=sms_source)
    else:
        ch.given("S", sms, "SMs")
    ch.given("T", 2048, "resident threads per SM, at most", kind="spec", source=CUDA_GUIDE)
    ch.given("b_max", 32, "resident blocks per SM, at most", kind="spec", source=CUDA_GUIDE)
    ch.step("G", "ceiling(n/B)", "", "blocks in the grid, one thread per element")
    ch.step("I", "G*B - n", "", "idle lanes: threads past the end, switched off by the bounds check")
    ch.step("N_w", "G*B/w", "", "warps launched")
    ch.step("b_SM", "Min(b_max, floor(T/B))", "", "blocks resident per SM (an add needs few registers, no shared memory)")
    ch.step("V", "G/(S*b_SM)", "", "waves: grids of resident blocks the launch takes to drain")
    ch.given("W", acc["hbm_bandwidth"], "HBM bandwidth")
    ch.step("D_add", "3*n*e", "GB", "bytes the add moves: read a and b, write c")
    ch.step("t_add", "D_add/W", "ms", "the add's floor: bytes over HBM bandwidth")
    ch.given("L", ic["bandwidth_unidirectional"], "host link, one direction")
    ch.given("eta", float(link_efficiency), "fraction of the link's rate a copy reaches", kind="assumption",
             source=eff_source)
    ch.step("D_copy", "2*n*e + n*e", "GB", "bytes over the link: a and b to the device, c back")
    ch.step("t_copy", "D_copy/(eta*L)", "ms", "the copies, one after another")
    ch.step("r", "t_copy/t_add", "", "copies over the add")
    ch.solve("k", "k*t_add = t_copy", "", "adds (passes over the data) that take as long as one transfer")
    ch.given("R", acc["fp32"], "fp32 rate (non-tensor)")
    ch.solve("I_x", "I_x*eta*L = R", "FLOP/B", "work per transferred byte at which compute takes as long as the link")
    return ch


def compute(p) -> Chain:
    return vector_add_chain(p.n_elements, p.block_size, p.gpu, p.link, p.dtype_bytes, p.link_efficiency,
                            eff_source=SPEC.source(p, "link_efficiency"), cite=functools.partial(SPEC.source, p))


def ratio_of(gpu, link, eff, n=100e6, e=4, *, source="the claim") -> float:
    """Copies over the add for one GPU and link (the bytes cancel, so n and e do not matter)."""
    return as_float(vector_add_chain(n, 256, gpu, link, e, eff, source=source,
                                     eff_source=DATASHEET if eff == 1.0 else LINK_EFF_SOURCE)["r"], "")


# --- the page's numbers ---------------------------------------------------------------------------
def cuda_kernel() -> dict:
    """The add as the book's CUDA program writes it, and its grid-stride launch (read from the .cu file)."""
    cu = CUDA_SOURCE.read_text()
    src = re.search(r"__global__ void add_kernel\(.*?\n\}\n", cu, re.S).group(0).strip()
    launch = re.search(r"static Launch launch_for\(.*?\n\}\n", cu, re.S).group(0)
    return dict(source=src, threads=int(re.search(r"const int threads = (\d+);", launch).group(1)),
                blocks_per_sm=int(re.search(r"static_cast<size_t>\(sms\) \* (\d+);", launch).group(1)))


def grid(n: int, block: int) -> tuple[int, int]:
    """(blocks, idle lanes) of a one-element-per-lane launch."""
    g = -(-int(n) // int(block))
    return g, g * int(block) - int(n)


def launch_numbers(p, ch) -> dict:
    """The launch paragraph's numbers for the parameters: waves, the wave time, the grid-stride form."""
    S, b_sm = int(as_float(ch["S"], "")), as_float(ch["b_SM"], "")
    cu = cuda_kernel()
    cu_blocks = min(grid(p.n_elements, cu["threads"])[0], S * cu["blocks_per_sm"])
    cu_total = cu_blocks * cu["threads"]
    passes = -(-int(p.n_elements) // cu_total)
    return {
        "intro-n": short(p.n_elements), "int32-elements": f"{2**31:,}", "int32-bytes": fmt(q(2**31 * 4, "B").to("GB")),
        "cu-blocks-per-sm": fmt(cu["blocks_per_sm"]), "cu-threads": fmt(cu["threads"]),
        "p-n": short(p.n_elements), "p-B": fmt(p.block_size), "p-warps": short(ch["N_w"]), "p-S": fmt(S),
        "p-bsm": fmt(b_sm), "p-resident": fmt(S * b_sm), "p-waves": fmt(ch["V"]),
        "p-wave-time": fmt((ch["t_add"] / ch["V"]).to("µs")), "p-Dadd": fmt(ch["D_add"]), "p-W": fmt(ch["W"]),
        "p-L": fmt(ch["L"]), "p-eta": pct(p.link_efficiency), "p-k": fmt(ch["k"]), "p-Ix": fmt(ch["I_x"]),
        "p-Iadd": fmt(q(1 / (3 * p.dtype_bytes), "FLOP/B")), "p-R": fmt(ch["R"].to("TFLOP/s")),
        "p-Ix-bf16": fmt((p.gpu.q("bf16_dense") / (p.link_efficiency * ch["L"])).to("FLOP/B")),
        "p-Dadd-per": fmt(q(3 * p.dtype_bytes, "B")),
        "gs-blocks": fmt(cu_blocks), "gs-threads": f"{cu_total:,}", "gs-passes": fmt(passes),
        "gs-idle": fmt(passes * cu_total - int(p.n_elements)),
    }


def launch_table(n_elements) -> list[tuple]:
    """(label, blocks, warps, idle lanes, idle share of the last block) for CUDA blocks and Triton programs."""
    rows = []
    for b in (128, 256, 512, 1024):
        g, i = grid(n_elements, b)
        rows.append((f"{b}", f"{g:,}", f"{g * b // 32:,}", f"{i:,}", pct(i / b)))
    for b in (TRITON_BLOCK, 4096, 8192):
        g, i = grid(n_elements, b)
        rows.append((f"BLOCK = {b} elements, {TRITON_WARPS} warps", f"{g:,}", f"{g * TRITON_WARPS:,}", f"{i:,}",
                     pct(i / b)))
    return rows


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(n_elements=100e6, ratio=50.0, dtype_bytes=4)
QUOTE = ("The kernel is four lines; the interview is about the other forty. How a global index comes out "
         "of block and thread ids, why the bounds check exists, what the launch configuration means for a "
         "100M-element array, and the arithmetic that shows the host-to-device copies cost 50 times more "
         "than the add.")
CHIPS = ("h100-sxm", "h200", "b200")
EFF = 0.85          # the book's practical fraction of the link's rate (LINK_EFF_SOURCE)


def readings() -> dict:
    """For each current NVIDIA chip behind PCIe Gen5 x16: the ratio with both copies at the datasheet rate,
    the inputs' copy alone (the words' "host-to-device"), both at the practical rate, both overlapped, and
    the same bytes arriving from a peer GPU over the chip's own NVLink."""
    out = {}
    for g in CHIPS:
        acc = catalog.accelerator(g)
        sheet, eff = ratio_of(g, "pcie5-x16", 1.0), ratio_of(g, "pcie5-x16", EFF)
        peer = catalog.interconnect(acc.q("scaleup_link"))
        out[g] = dict(name=acc.short_name, hbm=acc.q("hbm_bandwidth"), sheet=sheet, h2d_only=sheet * 2 / 3,
                      practical=eff, overlapped=eff * 2 / 3, peer=ratio_of(g, peer.key, 1.0), peer_name=peer.name)
    return out


def claims() -> list[Claim]:
    rd = readings()
    claimed = CLAIM["ratio"]
    tol = sig_fig_tolerance(claimed, 1)
    landing = [g for g in CHIPS if judge(rd[g]["sheet"], claimed, tol) != WRONG]
    assert landing == ["h100-sxm"]          # only one chip lands, and only at the datasheet rate
    h1, h2, b2 = (rd[g] for g in CHIPS)
    link = catalog.interconnect("pcie5-x16").name
    return [Claim(
        "copies-over-add",
        quote=QUOTE, source="spec/001, paragraph on the vector add; CHAINS.md, vector-add-and-copies row",
        claimed=f"the copies around a {short(CLAIM['n_elements'])}-element add cost {claimed:g}x the add",
        derived=f"{h1['sheet']:.0f}x on {h1['name']}, {h2['sheet']:.0f}x on {h2['name']}, {b2['sheet']:.0f}x on "
                f"{b2['name']} over {link} at the datasheet rate; {h1['practical']:.0f}x, {h2['practical']:.0f}x "
                f"and {b2['practical']:.0f}x at {pct(EFF)} of it",
        verdict=WRONG,
        reason=f"The array's size cancels: the ratio is the HBM bandwidth over the host link's one-way rate, "
               f"which the source does not name; over {link} it is {h1['sheet']:.0f}x on {h1['name']}, "
               f"{h2['sheet']:.0f}x on {h2['name']} and {b2['sheet']:.0f}x on {b2['name']} at the datasheet rate "
               f"and more in practice, so {claimed:g}x comes out only for a chip and a loss-free link chosen "
               f"to make it.",
        nearest_true=f"The copies cost the HBM bandwidth over the host link's one-way rate times the add, for an "
                     f"array of any size: over {link} that is {h1['sheet']:.0f}x on {h1['name']} at the datasheet "
                     f"rate ({h1['practical']:.0f}x at {pct(EFF)} of it), {h2['sheet']:.0f}x on {h2['name']} "
                     f"and {b2['sheet']:.0f}x on {b2['name']}.")]


@memoised
def checks() -> dict:
    """The check section's numbers: the claim's size on an H100 SXM at the datasheet rate, the second
    route (W / L), and the readings table."""
    ch = vector_add_chain(CLAIM["n_elements"], 256, "h100-sxm", "pcie5-x16", CLAIM["dtype_bytes"], 1.0,
                          source="the claim", eff_source=DATASHEET)
    W = catalog.accelerator("h100-sxm").q("hbm_bandwidth")
    link = catalog.interconnect("pcie5-x16")
    L = link.q("bandwidth_unidirectional")
    rd = readings()
    r = as_float(ch["r"], "")
    assert abs(r / float((W / L).to("")) - 1) < 1e-12                       # second route: W / L
    assert abs(ratio_of("h100-sxm", "pcie5-x16", 1.0, n=1e6, e=2) / r - 1) < 1e-12   # any n, any type
    peers = [v["peer"] for v in rd.values()]
    return {
        "chain": ch, "readings": rd, "r": r,
        "glue": {
            "claim-n": short(CLAIM["n_elements"]), "claim-ratio": f"{CLAIM['ratio']:g}x",
            "claim-ratio2": f"{CLAIM['ratio']:g}x", "claim-tol": f"{CLAIM['ratio'] * (1 - sig_fig_tolerance(50.0, 1)):g}x "
            f"to {CLAIM['ratio'] * (1 + sig_fig_tolerance(50.0, 1)):g}x",
            "check-r": f"{r:.1f}x", "check-W": fmt(W), "check-L": fmt(L), "check-t-add": fmt(ch["t_add"]),
            "check-t-copy": fmt(ch["t_copy"]), "check-h200": f"{rd['h200']['sheet']:.0f}x",
            "check-b200": f"{rd['b200']['sheet']:.0f}x", "check-h2d-h100": f"{rd['h100-sxm']['h2d_only']:.0f}x",
            "check-h2d-h200": f"{rd['h200']['h2d_only']:.0f}x", "check-eff": pct(EFF),
            "check-h100-eff": f"{rd['h100-sxm']['practical']:.0f}x",
            "check-pcie64": f"{float((W / link['bandwidth_unidirectional'].alternatives[0].q).to('')):.1f}x",
            "check-G": fmt(ch["G"]), "check-nvl": f"{min(peers):.0f}x to {max(peers):.0f}x",
            "check-nvl-b200": f"{rd['b200']['peer']:.1f}x",
            "check-nvl-b200-link": rd["b200"]["peer_name"], "check-nvl-h-link": rd["h200"]["peer_name"],
        },
    }


def where_time(n_elements, block_size, link, link_efficiency) -> dict:
    """The figure's data: for each chip, the inputs' copy, the add and the output's copy, in ms."""
    out = {}
    for g in CHIPS:
        c = vector_add_chain(n_elements, block_size, g, link, 4, link_efficiency)
        t = as_float(c["t_copy"], "ms")
        out[catalog.accelerator(g).short_name] = dict(t_in=t * 2 / 3, t_add=as_float(c["t_add"], "ms"),
                                                      t_out=t / 3, r=as_float(c["r"], ""))
    return out


def what_changes(p, ch: Chain) -> dict:
    lo = 0.6
    return {"wc-eff-lo": pct(lo), "wc-r-lo": f"{ratio_of(p.gpu, p.link, lo, p.n_elements, p.dtype_bytes):.0f}x"}


def exercises(p, ch: Chain) -> dict:
    link_efficiency = SPEC.defaults()["link_efficiency"]      # the answers hold the page's default link
    c1 = vector_add_chain(1e9, 256, "b200", "pcie5-x16", 2, link_efficiency)
    r2 = ratio_of("h200", "pcie5-x16", link_efficiency)
    n3, B3 = 2**31 + 1000, 256
    g3, i3 = grid(n3, B3)
    return {
        "ex1-bytes": fmt(c1["D_add"]), "ex1-add": fmt(c1["t_add"]), "ex1-copy": fmt(c1["t_copy"].to("ms")),
        "ex1-r": f"{as_float(c1['r'], ''):.0f}x", "ex2-k": fmt(9 * r2), "ex2-r": f"{r2:.0f}x",
        "ex3-n": f"{n3:,}", "ex3-B": fmt(B3), "ex3-G": f"{g3:,}", "ex3-idle": fmt(i3), "ex3-max": f"{2**31:,}",
        "ex3-wrong": f"{n3 - 2**31:,}", "ex3-bytes": fmt(q(n3 * 4, "B").to("GB")),
    }


SPEC = Spec("vector-add-and-copies", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
