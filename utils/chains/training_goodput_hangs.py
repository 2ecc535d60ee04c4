"""training-goodput-hangs: goodput as the run's one number, and what a hang costs while the watchdog waits.

Goodput is productive step time over wall time. With interruptions every M = 1/(r_f N), checkpoints every
tau of delta each, and a stall t_r per interruption, utils.training.failures gives G = 1 - delta/tau - tau/(2 M_u)
- t_r/M at Young's tau. A hang adds to t_r the time before anyone knows: the collective's timeout, during
which every GPU of the job is busy waiting (an NCCL kernel spinning reads as full utilisation, which NVML
defines as the share of time any kernel runs, though it occupies a few SMs). The rank to blame
is named by per-rank collective sequence numbers (utils.training.hang_detect, run for real in the chapter).
"""
from __future__ import annotations

from utils.chain import Chain, as_float
from utils.params import Param, Result, Spec
from utils.training.failures import (
    GOODPUT_FORMULA,
    LLAMA3_INTERRUPTIONS_PER_GPU_DAY,
    LLAMA3_INTERRUPTIONS_SOURCE,
    LLAMA3_UNPLANNED_FRACTION,
    LLAMA3_UNPLANNED_SOURCE,
    RESTART_SOURCE,
    TAU_FORMULA,
    goodput,
)
from utils.units import duration, fmt, pct, q
from utils.verdicts import HOLDS, READING, WRONG, Claim

PARAMETERS = (
    Param("n_gpus", 16384, "GPUs in the job", unit="GPU", check="whole",
          source="Llama 3 paper (arXiv:2407.21783) sec. 3.3.1 and Table 4: 16,384 H100s"),
    Param("interruptions_per_gpu_day", LLAMA3_INTERRUPTIONS_PER_GPU_DAY, "job interruptions per GPU per day",
          unit="1/GPU/day",
          source=LLAMA3_INTERRUPTIONS_SOURCE),
    Param("unplanned_fraction", LLAMA3_UNPLANNED_FRACTION, "share of interruptions that are failures (lose work)",
          check="fraction",
          source=LLAMA3_UNPLANNED_SOURCE),
    Param("hang_fraction", 0.10, "share of interruptions that are hangs (detected only by a timeout)",
          check="share", source="this book's assumption"),
    Param("checkpoint_minutes", 1.0, "pause to write one checkpoint, delta", unit="minute",
          source="this book's assumption (an asynchronous write to a fast store)"),
    Param("restart_minutes", 10.0, "time from detection to training again (replace, relaunch, reload)",
          unit="minute", check="non_negative",
          source=RESTART_SOURCE),
    Param("timeout_minutes", 10.0, "collective timeout that fires the watchdog", unit="minute",
          source="PyTorch PR #110947, 'Change ProcessGroupNCCL default timeout to 10 min' "
                 "(github.com/pytorch/pytorch/pull/110947, read 2026-12-01): the default of PyTorch's ProcessGroupNCCL "
                 "watchdog (NCCL itself has no timeout)"),
    Param("short_timeout_minutes", 1.0, "a smaller timeout, set explicitly with timeout=", unit="minute",
          source="this book's assumption: a step takes seconds, so a minute is ample headroom"),
    Param("price", "h100-rental", "GPU-hour prices: a catalog price key (its one-year contract rate)",
          check="price", source="catalog: H100 rental, SemiAnalysis one-year contract index, March 2026"),
)

RESULTS = (
    Result("goodput", "", "Goodput at the default timeout", of="G", percent=True),
    Result("goodput_short_timeout", "", "Goodput at the smaller timeout", of="G_s", percent=True),
    Result("job_mtbi_hours", "hour", "Job mean time between interruptions", of="M"),
    Result("checkpoint_interval_minutes", "minute", "Young's checkpoint interval", of="tau"),
    Result("gpu_minutes_per_stalled_minute", "GPU", "GPU-minutes lost per minute of stall", of="c_gm"),
    Result("usd_per_stalled_minute", "USD/minute", "Dollars lost per minute of stall", of="c_usd"),
    Result("usd_per_hang_default", "USD", "Dollars a hang burns before the default timeout fires", of="H"),
    Result("usd_per_hang_short", "USD", "Dollars a hang burns before the smaller timeout fires", of="H_s"),
)

RATE_KEY = "contract_1y"


def goodput_chain(n_gpus, rate, unplanned, hang, delta_min, restart_min, timeout_min, short_min, price,
                  *, source="parameters cell") -> Chain:
    """source: one source for every input the caller set, or a function of the parameter's name (compute passes
    the spec's, so a default cites its own)."""
    src = source if callable(source) else (lambda name: source)
    ch = Chain("Goodput, and the price of a hang")
    ch.given("N", q(n_gpus, "GPU"), "GPUs in the job", source=src("n_gpus"))
    ch.given("r_f", q(rate, "1/GPU/day"), "interruptions per GPU-day", kind="assumption",
             source=src("interruptions_per_gpu_day"))
    ch.solve("M", "r_f*N*M = 1", "hour", "job mean time between interruptions")
    ch.given("f_u", q(unplanned, ""), "share that are failures", kind="assumption", source=src("unplanned_fraction"))
    ch.step("M_u", "M/f_u", "hour", "job mean time between failures")
    ch.given("delta", q(delta_min, "minute"), "checkpoint pause", kind="assumption", source=src("checkpoint_minutes"))
    ch.step("tau", TAU_FORMULA, "minute", "Young's checkpoint interval")
    ch.given("t_0", q(restart_min, "minute"), "restart once detected", kind="assumption", source=src("restart_minutes"))
    ch.given("h", q(hang, ""), "share of interruptions that are hangs", kind="assumption", source=src("hang_fraction"))
    ch.given("t_w", q(timeout_min, "minute"), "collective timeout (PyTorch ProcessGroupNCCL's default)", kind="spec",
             source=src("timeout_minutes"))
    ch.step("t_r", "t_0 + h*t_w", "minute", "mean stall per interruption")
    ch.step("G", GOODPUT_FORMULA, "", "goodput: productive time over wall time")
    ch.given("t_s", q(short_min, "minute"), "a smaller timeout", kind="assumption", source=src("short_timeout_minutes"))
    ch.step("t_rs", "t_0 + h*t_s", "minute", "mean stall with the smaller timeout")
    ch.step("G_s", GOODPUT_FORMULA.replace("t_r", "t_rs"), "", "goodput with the smaller timeout")
    ch.given("p_h", price[RATE_KEY], "price per GPU-hour")
    ch.step("c_gm", "N", "GPU", "GPU-minutes lost per minute the job stalls")
    ch.step("c_usd", "N*p_h", "USD/minute", "dollars per minute the job stalls")
    ch.step("H", "N*p_h*t_w", "USD", "one hang, until the default timeout fires")
    ch.step("H_s", "N*p_h*t_s", "USD", "one hang, until the smaller timeout fires")
    # Second route: the shared function gives the same goodput (utils.training.failures is the book's one formula).
    g2 = goodput(as_float(ch["tau"], "minute"), delta_min, as_float(ch["M_u"], "minute"),
                 as_float(ch["t_r"], "minute"), as_float(ch["M"], "minute"))
    assert abs(g2 - as_float(ch["G"])) < 1e-9
    return ch


def compute(p) -> Chain:
    return goodput_chain(p.n_gpus, p.interruptions_per_gpu_day, p.unplanned_fraction, p.hang_fraction,
                         p.checkpoint_minutes, p.restart_minutes, p.timeout_minutes, p.short_timeout_minutes,
                         p.price, source=lambda name: SPEC.source(p, name))


# --- the claims -----------------------------------------------------------------------------------
QUOTE_MINUTES = ("Full GPU utilization during a hang is the clue, because a spinning collective looks identical "
                 "to real work. The isolation order that finds the mismatched rank in minutes, a runnable "
                 "reproducer that hangs on demand, and the fix that gates the logging rather than the collective.")
QUOTE_SECONDS = ("A hang is a collective that one rank never entered, and finding it means asking which rank is "
                 "missing rather than what is broken. The flight recorder that answers that in seconds, what to "
                 "do when it is not enabled, and the four causes that a missing rank turns out to be.")


# The clue, checked from NVIDIA's own definitions of the two counters a reader would look at.
NVML_UTIL = ("NVML API reference, nvmlUtilization_t.gpu: 'Percent of time over the past sample period during which "
             "one or more kernels was executing on the GPU' (what nvidia-smi and torch.cuda.utilization report)")
DCGM_SM_ACTIVE = ("DCGM profiling metrics, DCGM_FI_PROF_SM_ACTIVE: the fraction of time at least one warp was active "
                  "on a multiprocessor, averaged over all multiprocessors")
HANG_KERNEL = dict(sms=132, nccl_blocks=16)     # an H100 SXM's SMs; one NCCL block per channel (this book's assumption)


def counters(kernels, period: float, sms: int) -> dict:
    """NVML's utilisation and DCGM's SM activity over one sample period, from a kernel timeline: a list of
    (start, end, SMs occupied). NVML counts the time any kernel runs; SM activity weights it by the SMs busy."""
    edges = sorted({0.0, period} | {min(max(t, 0.0), period) for k in kernels for t in k[:2]})
    busy = 0.0
    for a, b in zip(edges, edges[1:]):
        busy += (b - a) * any(s <= a and e >= b for s, e, _ in kernels)
    sm = sum((min(e, period) - max(s, 0.0)) * n for s, e, n in kernels) / (period * sms)
    return dict(nvml_util=busy / period, sm_active=sm)


def clue() -> dict:
    """A hang: one NCCL kernel spins through the whole sample on a few SMs. A healthy step: kernels back to back
    on every SM. Both read 100% to NVML; only SM activity tells them apart."""
    k = HANG_KERNEL
    hang = counters([(0.0, 1.0, k["nccl_blocks"])], 1.0, k["sms"])
    work = counters([(i / 10, (i + 1) / 10, k["sms"]) for i in range(10)], 1.0, k["sms"])
    return dict(hang=hang, work=work, **k)


def claims() -> list[Claim]:
    t_w = q(SPEC.defaults()["timeout_minutes"], "minute")     # ProcessGroupNCCL's default (the parameter's source)
    c = clue()
    same = c["hang"]["nvml_util"] == c["work"]["nvml_util"] == 1.0
    return [
        Claim("clue", quote=QUOTE_MINUTES, source="spec/001, paragraph on hangs and full GPU utilisation",
              claimed="full utilisation during a hang, identical to real work",
              derived=f"NVML utilisation {pct(c['hang']['nvml_util'])} hung, {pct(c['work']['nvml_util'])} working; "
                      f"SM activity {pct(c['hang']['sm_active'])} against {pct(c['work']['sm_active'])}",
              verdict=HOLDS if same else WRONG,
              nearest_true="" if same else "the utilisation counter tells a hang from work",
              reason=f"NVIDIA defines the utilisation nvidia-smi shows as the share of time one or more kernels was "
                     f"executing, so an NCCL kernel spinning on {c['nccl_blocks']} of {c['sms']} SMs reads "
                     f"{pct(c['hang']['nvml_util'])}, as a step of back-to-back matmuls does; the kernel does not keep "
                     f"the SMs busy (DCGM's SM activity reads {pct(c['hang']['sm_active'])}), and that second counter "
                     "is the one that tells the two apart"),
        Claim("minutes", quote=QUOTE_MINUTES, source="spec/001, paragraph on hangs and full GPU utilisation",
              claimed="in minutes", derived=f"the watchdog fires after {duration(t_w)}",
              verdict=READING,
              reason=f"no rank is named until the timeout fires, {duration(t_w)} at PyTorch ProcessGroupNCCL's "
                     "default (NCCL itself has none); the "
                     "sequence-number comparison after it is one read per rank, so the whole finds the rank "
                     "in minutes",
              reading="'finds the mismatched rank in minutes', read as minutes counted from the hang, the watchdog's "
                      "default timeout included"),
        Claim("seconds", quote=QUOTE_SECONDS, source="spec/001, paragraph on hangs and the flight recorder",
              claimed="in seconds", derived=f"seconds after a dump that comes {duration(t_w)} after the hang",
              verdict=READING,
              reason=f"the recorder is dumped when the watchdog fires, {duration(t_w)} after the hang at the "
                     "default; comparing the ranks' sequence numbers in the dump then takes seconds",
              reading="'the flight recorder that answers that in seconds', read as seconds from the dump, not from the "
                      "hang: from the hang it is the timeout, minutes"),
    ]


def timeout_sweep(timeouts_min) -> dict:
    """Goodput and the dollars of one hang against the timeout, at the defaults."""
    p = SPEC.check()
    out = dict(timeout=list(timeouts_min), goodput=[], usd=[])
    for t in timeouts_min:
        ch = goodput_chain(p.n_gpus, p.interruptions_per_gpu_day, p.unplanned_fraction, p.hang_fraction,
                           p.checkpoint_minutes, p.restart_minutes, t, p.short_timeout_minutes, p.price)
        out["goodput"].append(as_float(ch["G"]))
        out["usd"].append(as_float(ch["H"], "USD"))
    return out


def what_changes(p, ch: Chain) -> dict:
    base = ch
    return {"wc-goodput-gain": fmt((as_float(base["G_s"]) - as_float(base["G"])) * 100, digits=2) + " points",
            "wc-hang-saving": fmt(base["H"] - base["H_s"])}


def exercises(p, ch: Chain) -> dict:
    """Worked answers on the defaults: a job of half the GPUs; a hang at an hour's timeout."""
    p = SPEC.check()
    half = goodput_chain(p.n_gpus // 2, p.interruptions_per_gpu_day, p.unplanned_fraction, p.hang_fraction,
                         p.checkpoint_minutes, p.restart_minutes, p.timeout_minutes, p.short_timeout_minutes,
                         p.price)
    hour = goodput_chain(p.n_gpus, p.interruptions_per_gpu_day, p.unplanned_fraction, p.hang_fraction,
                         p.checkpoint_minutes, p.restart_minutes, 60.0, p.short_timeout_minutes, p.price)
    return {"ex1-gpus": fmt(q(p.n_gpus // 2, "GPU")), "ex1-usd": fmt(half["c_usd"]),
            "ex1-goodput": f"{fmt(as_float(half['G']) * 100)}%",
            "ex2-usd": fmt(hour["H"]), "ex2-goodput": f"{fmt(as_float(hour['G']) * 100)}%"}


SPEC = Spec("training-goodput-hangs", PARAMETERS, RESULTS, compute, closed_form=True)
