"""The occupancy calculator (utils.gpu.occupancy) on worked examples, the ptxas report parser on captured
ptxas output, and the occupancy chain: the claim with its verdict, bad inputs refused, properties."""
import shutil

import pytest

from utils import chains
from utils.chains import occupancy as oc
from utils.gpu.occupancy import (
    BOOK_KERNELS_PTXAS,
    CUDA_DIR,
    SMLimits,
    max_registers_for,
    occupancy,
    parse_ptxas,
    ptxas_report,
    sm_limits,
)
from utils.params import ParameterError

# Compute capability 7.0 (96 KB shared, no per-block reservation): the CUDA C++ Best Practices Guide's
# "Calculating Occupancy" example (section 11.1.1, its text read 2026-12-01 in a stored copy of
# docs.nvidia.com/cuda/cuda-c-best-practices-guide): "a kernel with 128-thread blocks using 37 registers per
# thread results in an occupancy of 75% with 12 active 128-thread blocks per multi-processor, whereas a kernel
# with 320-thread blocks using the same 37 registers per thread results in an occupancy of 63% because only
# four 320-thread blocks can reside on a multiprocessor". By hand: 37 x 32 = 1,184 -> 1,280 a warp; 65,536 / 1,280 = 51.2 -> 48
# warps at a granularity of 4; 48 / 4 = 12 blocks, 48 // 10 = 4 blocks = 40 warps.
CC70 = SMLimits(shared_memory=98304, max_shared_memory_per_block=98304, shared_memory_reserved_per_block=0)


def test_best_practices_example_cc70():
    a, b = occupancy(128, 37, 0, CC70), occupancy(320, 37, 0, CC70)
    assert (a.registers_per_warp, a.blocks, a.warps, a.occupancy, a.limiter) == (1280, 12, 48, 0.75, "registers")
    assert (b.blocks, b.warps, round(b.occupancy, 2)) == (4, 40, 0.62)


def test_register_unit_rounds_per_warp():
    h = sm_limits("h200")
    # 33 registers cost what 40 do: 33 x 32 = 1,056 -> 1,280.
    assert occupancy(256, 33, 0, h).warps == occupancy(256, 40, 0, h).warps == 48
    assert occupancy(256, 32, 0, h).warps == 64 and occupancy(256, 64, 0, h).warps == 32
    assert occupancy(256, 255, 0, h).warps == 8


def test_warp_granularity_rounds_down():
    # 72 registers: 2,304 a warp, 28.4 warps of registers -> 28 (a multiple of 4), not 28.4 or 29.
    assert occupancy(32, 72, 0, sm_limits("h200")).warps == 28
    assert occupancy(32, 72, 0, SMLimits(warp_granularity=1)).warps == 28
    # 44 registers: 1,408 -> 1,536 a warp, 42.7 warps of registers: 42 at a granularity of one, 40 at four.
    assert occupancy(64, 44, 0, SMLimits(warp_granularity=1)).warps == 42
    assert occupancy(64, 44, 0, sm_limits("h200")).warps == 40


def test_block_cap_and_warp_limit():
    h = sm_limits("h200")
    o = occupancy(32, 16, 0, h)                 # one-warp blocks: capped at 32 blocks = 32 warps
    assert (o.blocks, o.warps, o.limiter) == (32, 32, "blocks")
    o = occupancy(1024, 32, 0, h)
    assert (o.blocks, o.warps, o.limiter) == (2, 64, "warps")


def test_shared_memory_reservation_and_granularity():
    h, a = sm_limits("h200"), sm_limits("a100-sxm-80gb")
    o = occupancy(256, 32, 48 * 1024, h)        # 49,152 + 1,024 per block; 233,472 // 50,176 = 4
    assert (o.shared_per_block, o.blocks, o.limiter) == (50176, 4, "shared memory")
    assert occupancy(256, 32, 48 * 1024, a).blocks == 3     # 167,936 // 50,176
    assert occupancy(256, 32, 1, h).shared_per_block == 1152   # 1 + 1,024 -> 1,152 (128-byte units)


def test_launches_the_hardware_refuses():
    h = sm_limits("h200")
    for args in ((1025, 32, 0), (256, 256, 0), (256, 32, 232449), (0, 32, 0)):
        with pytest.raises(ValueError):
            occupancy(*args, h)
    with pytest.raises(ValueError):
        occupancy(1024, 255, 0, h)               # 1,024 threads x 255 registers > 65,536


def test_launch_bound_register_cap():
    # __launch_bounds__(256, 8) asks for 64 warps: the compiler must fit 32 registers; (256, 4): 64.
    assert max_registers_for(64, 256) == 32 and max_registers_for(32, 256) == 64
    assert max_registers_for(48, 256) == 40


def test_monotone_in_registers():
    h = sm_limits("h200")
    w = [occupancy(128, r, 0, h).warps for r in range(1, 256)]
    assert all(x >= y for x, y in zip(w, w[1:])) and w[0] == 64


def test_catalog_limits():
    for key in ("a100-sxm-80gb", "h100-sxm", "h200"):
        L = sm_limits(key)
        assert (L.registers, L.max_warps, L.max_blocks, L.max_registers_per_thread) == (65536, 64, 32, 255)
    assert sm_limits("h100-sxm").shared_memory == 228 * 1024 and sm_limits("a100-sxm-80gb").shared_memory == 164 * 1024


# Captured `nvcc --ptxas-options=-v` output: NVIDIA's async.cu sample for sm_52 (as printed in a public
# write-up), a kernel with a stack frame (sm_35), and the newer format with barriers and smem (sm_121).
PTXAS_SAMPLE = """\
ptxas info    : 24 bytes gmem
ptxas info    : Compiling entry function '_Z6kernelPfi' for 'sm_52'
ptxas info    : Function properties for _Z6kernelPfi
    32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 22 registers, 332 bytes cmem[0], 48 bytes cmem[2]
ptxas info    : 0 bytes gmem, 16948 bytes cmem[3]
ptxas info    : Compiling entry function '_Z9cudaEwaldPdS_S_S_S_S_S_S_' for 'sm_35'
ptxas info    : Function properties for _Z9cudaEwaldPdS_S_S_S_S_S_S_
    32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 79 registers, 384 bytes cmem[0], 668 bytes cmem[2]
ptxas info    : Compiling entry function 'm2rnn_tile_summary_kernel' for 'sm_121'
ptxas info    : Function properties for m2rnn_tile_summary_kernel
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 94 registers, used 1 barriers, 3456 bytes smem
"""
SPILL_SAMPLE = """\
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    48 bytes stack frame, 40 bytes spill stores, 48 bytes spill loads
ptxas info    : Used 88 registers, 0 bytes smem, 352 bytes cmem[0]
"""


def test_parse_ptxas_sample():
    ks = parse_ptxas(PTXAS_SAMPLE)
    assert [(k.name, k.arch, k.registers, k.shared_bytes, k.stack_bytes, k.barriers) for k in ks] == [
        ("_Z6kernelPfi", "sm_52", 22, 0, 32, 0), ("_Z9cudaEwaldPdS_S_S_S_S_S_S_", "sm_35", 79, 0, 32, 0),
        ("m2rnn_tile_summary_kernel", "sm_121", 94, 3456, 0, 1)]
    assert not any(k.spills for k in ks)
    (s,) = parse_ptxas(SPILL_SAMPLE)
    assert s.spills and (s.spill_stores, s.spill_loads, s.registers) == (40, 48, 88)


def test_parse_ptxas_truncated_is_an_error():
    with pytest.raises(ValueError, match="Used N registers"):
        parse_ptxas("ptxas info    : Compiling entry function 'k' for 'sm_90'\n")
    assert parse_ptxas("") == []


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc absent: the book's kernels' ptxas report needs it")
def test_ptxas_report_of_the_books_kernels():
    # One file, to keep the test short: the fresh report must match the captured one.
    fresh = {k.name: k for k in ptxas_report("sm_90", [CUDA_DIR / "vector_copy_add.cu"])}
    captured = {k.name: k for k in parse_ptxas(BOOK_KERNELS_PTXAS)}
    assert fresh and all(not k.spills and k.registers == captured[n].registers for n, k in fresh.items())


def test_captured_report_of_the_books_kernels():
    ks = {k.name: k for k in parse_ptxas(BOOK_KERNELS_PTXAS)}
    assert ks["_Z15transpose_tiledILi33EEvPKfPfii"].shared_bytes == 32 * 33 * 4
    assert ks["_Z15transpose_tiledILi32EEvPKfPfii"].shared_bytes == 32 * 32 * 4
    assert ks["_Z11copy_kernelPKfPfm"].registers == 12 and not any(k.spills for k in ks.values())
    h = sm_limits("h200")
    assert all(occupancy(256, k.registers, k.shared_bytes, h).occupancy == 1.0 for k in ks.values())


# --- the chain ------------------------------------------------------------------------------------
def test_claim_verdict():
    # the source names no kernel, GPU or latency: the book's model kernel is shown, not judged
    (c,) = oc.claims()
    assert c.verdict == "cannot be checked" and not c.problems()
    ck = oc.checks()
    assert ck["same_work"] == pytest.approx(0.5) and ck["eight"] > 2


def test_claim_chain_numbers():
    ch = oc.claim_chain()
    assert (ch["w_a"], ch["w_b"]) == (64, 32)
    assert float(ch["s"]) == pytest.approx(2.0)          # read-only: the full ratio of bytes in flight


def test_a_copys_stores_take_the_lead_from_two_to_four_thirds():
    # the audit's arithmetic: a copy writes what it reads, so the loads in flight that fill HBM halve
    # (4.8 TB/s x 600 ns / 132 / 2 = 10.65 KiB); 8 KiB -> 75 %, 16 KiB -> 100 %, 1.33x
    read, copy = oc.claim_chain(), oc.compute(chains.check("occupancy"))
    assert float(copy["Q"] / read["Q"]) == pytest.approx(0.5)
    assert float(copy["U_a"]) == pytest.approx(0.751, abs=1e-3) and float(copy["U_b"]) == 1
    assert float(copy["s"]) == pytest.approx(1.33, abs=5e-3)
    assert oc.checks()["lat_min"].to("ns").m == pytest.approx(16 * 1024 * 132 / 4.8e12 * 1e9)


@pytest.mark.parametrize("override, name", [({"regs_blocked": 256}, "regs_blocked"),
                                            ({"threads_per_block": 2048}, "regs_max_occ"),
                                            ({"gpu": "mi300x"}, "gpu"), ({"loads_blocked": 0}, "loads_blocked"),
                                            ({"latency_ns": -1.0}, "latency_ns"),
                                            ({"write_ratio": -1.0}, "write_ratio")])
def test_bad_inputs_refused(override, name):
    with pytest.raises(ParameterError, match=name):
        chains.check("occupancy", **override)


def test_more_latency_needs_more_in_flight():
    p = chains.check("occupancy")
    lo, hi = chains.check("occupancy", latency_ns=300.0), chains.check("occupancy", latency_ns=1200.0)
    assert oc.compute(lo)["Q"] < oc.compute(p)["Q"] < oc.compute(hi)["Q"]
    # Once the blocked kernel saturates HBM, its lead shrinks below the bytes-in-flight ratio.
    assert float(oc.compute(lo)["s"]) < 2 <= float(oc.compute(hi)["s"]) + 1e-9


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in oc.compute(oc.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in oc.PARAMETERS}
    assert [sources()[s] for s in ("b", "k_b", "w_r", "lat")] == [
        own["load_bytes"], own["loads_blocked"], own["write_ratio"], own["latency_ns"]]
    changed = sources(loads_blocked=8)
    assert changed["k_b"] == "parameters cell" and changed["b"] == own["load_bytes"]
