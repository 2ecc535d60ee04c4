"""utils/gpu/kernel_profile.py: the SOL rule at its thresholds, the ncu CSV parser on strings built here, and
the sector model (a gather with no reuse is DRAM-bound, a reused column walk is L1-bound)."""
import pytest

from utils.gpu.coalescing import analyse, column_walk, strided
from utils.gpu.kernel_profile import (
    COMPUTE,
    LAUNCH,
    MEMORY,
    SOL,
    WARP_STATE,
    Load,
    Rates,
    bottleneck,
    memory_unit,
    parse_ncu_csv,
    predict,
    profile_metrics,
    reading_order,
    reuse_for_ratio,
)

H200 = dict(sms=132, clock_hz=1.98e9, l1_bytes_per_clock=128, dram_bytes_per_s=4.8e12)


# --- the rule ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("c, m, waves, name, section", [
    (10, 82, None, "High Throughput", MEMORY), (80, 20, None, "High Throughput", COMPUTE),
    (79.9, 20, None, "High Compute Throughput", COMPUTE), (14, 70, None, "High Memory Throughput", MEMORY),
    (65, 60, None, "Balanced Throughput", COMPUTE), (59.9, 59.9, None, "Latency Issue", WARP_STATE),
    (20, 25, 0.5, "Small Grid", LAUNCH), (20, 25, 1.0, "Latency Issue", WARP_STATE),
    (60, 50.1, None, "Balanced Throughput", COMPUTE), (60, 50, None, "High Compute Throughput", COMPUTE),
])
def test_the_sol_rule_at_its_thresholds(c, m, waves, name, section):
    b = bottleneck(c, m, waves)
    assert (b.name, b.section) == (name, section)


def test_the_breakdown_names_the_memory_unit():
    bd = {"l1tex__throughput.avg.pct_of_peak_sustained_active": 82.0,
          "dram__throughput.avg.pct_of_peak_sustained_elapsed": 12.0,
          "lts__throughput.avg.pct_of_peak_sustained_elapsed": 30.0}
    assert bottleneck(10, 82, breakdown=bd).unit == "L1"
    assert memory_unit({"dram__throughput.x": 90, "lts__t.x": 40}) == "DRAM"
    assert memory_unit({}) is None and bottleneck(90, 20, breakdown=bd).unit is None


@pytest.mark.parametrize("bad", [-1, 100.5, float("nan"), "82", True])
def test_a_percentage_outside_zero_to_hundred_is_refused(bad):
    with pytest.raises(ValueError, match="percentage"):
        bottleneck(bad, 50)


def test_reading_order_starts_at_the_sol_and_follows_its_verdict():
    assert reading_order(10, 82) == (SOL, MEMORY, WARP_STATE, LAUNCH)
    assert reading_order(85, 30) == (SOL, COMPUTE, WARP_STATE, LAUNCH)
    assert reading_order(20, 25, waves=0.5)[1] == MEMORY          # latency: still read the larger side
    assert [s.order for s in reading_order(10, 82)] == sorted(s.order for s in reading_order(10, 82))


# --- the CSV parser ----------------------------------------------------------------------------------
HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
        '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(i, kernel, metric, unit, value):
    return (f'"{i}","4242","python3","host","{kernel}","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def csv_text(rows, preamble=("==PROF== Connected to process 4242", "gather ok")):
    return "\n".join([*preamble, HEAD, *rows, "==PROF== Disconnected from process 4242"]) + "\n"


def test_parser_reads_metrics_units_and_thousands_separators():
    k = "_strided_kernel"
    text = csv_text([row(0, k, "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "91.23"),
                     row(0, k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "16,777,216"),
                     row(0, k, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "request", "524,288"),
                     row(0, k, "l1tex__throughput.avg.pct_of_peak_sustained_active", "%", "43.10")])
    (launch,) = parse_ncu_csv(text)
    assert (launch.id, launch.kernel) == ("0", k)
    assert launch.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] == (16777216.0, "sector")
    got = profile_metrics(launch)
    assert got["dram_pct"] == 91.23 and got["l1_pct"] == 43.1 and got["sectors_per_request"] == 32.0
    assert got["memory_pct"] is None                        # not collected: None, never a made-up number


def test_parser_separates_launches_and_keeps_quoted_commas_in_names():
    k2 = "void gather<float, 32>(float*, float*)"
    text = csv_text([row(0, "a", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "10"),
                     row(1, k2, "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "20"),
                     row(1, k2, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "n/a")],
                    preamble=())
    a, b = parse_ncu_csv(text)
    assert (a.kernel, b.kernel) == ("a", k2)
    assert b.value("sm__throughput.avg.pct_of_peak_sustained_elapsed") == 20.0
    assert b.value("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed") is None


def test_parser_zero_requests_and_missing_header():
    (launch,) = parse_ncu_csv(csv_text([row(0, "k", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "0"),
                                        row(0, "k", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "", "0")]))
    assert profile_metrics(launch)["sectors_per_request"] is None
    with pytest.raises(ValueError, match="no ncu CSV header"):
        parse_ncu_csv("==PROF== ERR_NVGPUCTRPERM - no permission to read the counters\n")
    with pytest.raises(ValueError, match="lacks"):
        parse_ncu_csv('"ID","Kernel Name"\n"0","k"\n')


# --- the model ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("wavefront", ["lines", "sectors"])
def test_a_gather_with_no_reuse_is_dram_bound_whatever_the_stride(wavefront):
    r = Rates(**H200, wavefront=wavefront)
    store = analyse(strided(0, 4, 4), 4)
    for s in (1, 2, 8, 32, 64):
        pr = predict([Load(analyse(strided(0, 4 * s, 4), 4)), Load(store, store=True)], r, busy=0.9)
        assert pr.limiter == "DRAM" and pr.dram == pytest.approx(0.9) and pr.l1 < pr.dram


def test_a_reused_column_walk_is_l1_bound_and_dram_follows_the_sector_arithmetic():
    r = Rates(**H200, wavefront="lines")
    walk = analyse(column_walk(4096, 4), 4)
    pr = predict([Load(walk, reuse=8)], r, busy=0.82)
    assert pr.limiter == "L1" and pr.l1 == pytest.approx(0.82) and pr.sectors_per_request == 32
    dram_cycles = 32 * 32 / 8 / (4.8e12 / (132 * 1.98e9))            # 128 useful bytes from DRAM
    assert pr.dram == pytest.approx(0.82 * dram_cycles / 32)          # one cycle per line, 32 lines
    assert pr.memory == pr.l1


def test_more_reuse_means_less_dram_and_the_inverse_round_trips():
    r = Rates(**H200, wavefront="sectors")
    walk = analyse(column_walk(4096, 4), 4)
    drams = [predict([Load(walk, reuse=x)], r).dram for x in (8, 16, 32, 64)]
    assert all(a > b for a, b in zip(drams, drams[1:]))
    x = reuse_for_ratio(0.12 / 0.82, walk, r)
    pr = predict([Load(walk, reuse=x)], r, busy=0.82)
    assert pr.dram / pr.l1 == pytest.approx(0.12 / 0.82) and pr.l1 == pytest.approx(0.82)
    with pytest.raises(ValueError, match="below one"):
        reuse_for_ratio(50.0, walk, r)


def test_bad_model_inputs_are_refused():
    with pytest.raises(ValueError, match="reuse"):
        Load(analyse(strided(0, 4, 4), 4), reuse=0.5)
    with pytest.raises(ValueError, match="wavefront"):
        Rates(**H200, wavefront="bytes")
    with pytest.raises(ValueError, match="sms"):
        Rates(**{**H200, "sms": 0})
    with pytest.raises(ValueError, match="busy"):
        predict([Load(analyse(strided(0, 4, 4), 4))], Rates(**H200), busy=1.5)
