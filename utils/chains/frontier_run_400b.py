"""frontier-run-400b: a pre-training run from compute to schedule, in dependency order.

Compute (6ND), layout (the training state decides the pipeline depth), pure-compute time (the fleet
equation solved for T), data rate, interruptions (a rate per GPU-day), the checkpoint and its optimal
interval (Young, derived in utils.training.failures), goodput, and the wall-clock schedule.
"""
from __future__ import annotations

import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.training import six_nd, zero_bytes_per_param
from utils.training.failures import (
    GOODPUT_FORMULA,
    LLAMA3_INTERRUPTIONS_PER_GPU_DAY,
    LLAMA3_INTERRUPTIONS_SOURCE,
    LLAMA3_UNPLANNED_FRACTION,
    LLAMA3_UNPLANNED_SOURCE,
    RESTART_SOURCE,
    TAU_FORMULA,
    goodput,
    lost_shares,
    optimum_exact,
    young_derivation,
)
from utils.units import fmt, pct, q, short
from utils.verdicts import READING, UNCHECKABLE, WRONG, Claim, ratio, rounds_to

RUN = "llama-3-405b-pretraining"
STATE_BYTES = zero_bytes_per_param(0, 1)   # mixed-precision Adam: bf16 weights and grads, fp32 master, m, v
STATE_HBM_SHARE = 0.75      # share of HBM the training state may take; the rest is activations and buffers
TP_DEGREE = 8               # tensor parallelism spans one 8-GPU NVLink node


def llama3() -> dict:
    """The Llama 3 paper's (arXiv:2407.21783) run, from the run catalog: sec. 3.3.4's interruptions in a
    54-day snapshot on up to 16K H100s and its effective training time, sec. 3.3.1's storage, sec. 3.4.1's
    batch, Table 4's layouts and MFU."""
    r = catalog.run(RUN)
    f = lambda k, u="": as_float(r.q(k), u) if u else as_float(r.q(k))   # noqa: E731
    d = dict(interruptions=int(f("interruptions")), planned=int(f("interruptions_planned")),
             unplanned=int(f("interruptions_unexpected")), window_days=int(f("snapshot_days", "day")),
             gpus=int(f("gpus", "GPU")), ett=f("effective_training_time"),
             storage_sustained=r.q("storage_sustained"), storage_peak=r.q("storage_peak"),
             storage_gb_per_s=f("storage_sustained", "GB/s"), batch_tokens=f("batch_tokens", "token"),
             layout={k: int(f(f"table4_row2_{k}")) for k in ("tp", "cp", "pp", "dp")},
             layout_gpus=int(f("table4_row2_gpus", "GPU")),
             mfu=[f(f"table4_row{i}_mfu") for i in (1, 2, 3)])
    d["rate"] = d["interruptions"] / (d["window_days"] * d["gpus"])      # per GPU-day
    d["unplanned_share"] = d["unplanned"] / d["interruptions"]
    d["mfu_text"] = f"{pct(min(d['mfu'])).rstrip('%')}-{pct(max(d['mfu']))}"
    d["name"] = r.name.split(" (")[0]
    return d


PARAMETERS = (
    Param("n_params", 400e9, "parameters, N (a dense model)", unit="parameter", source="the claim (400B dense)"),
    Param("n_tokens", 10e12, "training tokens, D", unit="token", source="the claim (10T tokens)"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key (dense bf16 peak and HBM)", check="accelerator",
          source="catalog: the claim's H100"),
    Param("n_gpus", 16384, "GPUs in the job", unit="GPU", check="whole", source="the claim (16,384 H100s)"),
    Param("mfu", 0.40, "model FLOPs utilisation on the 6N basis: share of the dense bf16 peak spent on 6ND (attention "
          "and recomputation not counted; fleet-size converts other bases)", check="fraction",
          source="the same source's fleet paragraph (40% on H100); Llama-3-405B reported 38-43% (Table 4)"),
    Param("global_batch_tokens", 16e6, "tokens per optimizer step", unit="token",
          source="Llama 3 paper sec. 3.4.1: the final pre-training batch"),
    Param("bytes_per_token", 4.0, "bytes of stored text per token", unit="byte/token",
          source="this book's assumption: about 4 bytes of UTF-8 per token; int32 token ids are 4 too"),
    Param("interruptions_per_gpu_day", LLAMA3_INTERRUPTIONS_PER_GPU_DAY, "job interruptions per GPU per day",
          unit="1/GPU/day",
          source=LLAMA3_INTERRUPTIONS_SOURCE),
    Param("unplanned_fraction", LLAMA3_UNPLANNED_FRACTION, "share of interruptions that are failures",
          check="fraction",
          source=LLAMA3_UNPLANNED_SOURCE),
    Param("checkpoint_bytes_per_param", 12.0, "bytes written per parameter at each checkpoint",
          unit="byte/parameter", source="this book: fp32 master weights and Adam's two moments"),
    Param("checkpoint_write_gb_per_s", 2000.0, "aggregate write bandwidth to storage", unit="GB/s",
          source="Llama 3 paper sec. 3.3.1: Tectonic sustains 2 TB/s"),
    Param("restart_minutes", 10.0, "time from a failure to training again (detect, replace, relaunch, reload)",
          unit="minute", check="non_negative",
          source=RESTART_SOURCE),
)

RESULTS = (
    Result("train_flops", "FLOP", "Training compute, 6ND", of="C"),
    Result("compute_days", "day", "Pure-compute time at the MFU", of="T"),
    Result("interruptions", "", "Interruptions during the compute days", of="n_int"),
    Result("checkpoint_interval", "minute", "Optimal checkpoint interval (Young)", of="tau"),
    Result("goodput", "", "Goodput at the optimal interval", of="G", percent=True),
    Result("wall_clock_days", "day", "Wall-clock days: compute days / goodput", of="W"),
    Result("interruptions_over_schedule", "", "Interruptions over the wall-clock schedule", of="n_W"),
    Result("pipeline_stages", "", "Pipeline-parallel degree", of="n_pp"),
    Result("data_parallel", "", "Data-parallel degree", of="n_dp"),
    Result("tokens_per_second", "token/s", "Tokens per second the fleet consumes", of="r_tok"),
    Result("data_rate", "MB/s", "Training-data rate", of="r_B"),
    Result("step_seconds", "s", "Step time at the global batch", of="t_step"),
    Result("job_mtbi_hours", "hour", "Job mean time between interruptions", of="M"),
    Result("checkpoint_size", "TB", "Checkpoint size", of="S"),
    Result("checkpoint_write_seconds", "s", "Checkpoint write time", of="delta"),
)

SRC_CKPT = ("this book's convention (as in the bill-of-materials chapter): fp32 master weights and Adam's two "
            "moments, 4 bytes each; the bf16 weights are cast from the master on restore and gradients are not "
            "saved. The whole 16-byte training state is the upper bound")


def validate(p):
    for field in ("bf16_dense", "hbm_capacity"):
        if field not in p.gpu:
            raise ParameterError(f"gpu: {p.gpu.name} has no {field} in the catalog")


def frontier_run(n_params, n_tokens, gpu, n_gpus, mfu, global_batch_tokens, bytes_per_token,
                 interruptions_per_gpu_day, unplanned_fraction, checkpoint_bytes_per_param,
                 checkpoint_write_gb_per_s, restart_minutes, *, source="parameters cell") -> Chain:
    """A pre-training run from compute to schedule, in dependency order, as a Chain. `source`: one text for the
    claim's own numbers, or a function of a parameter's name (SPEC.source): a row then shows its parameter's
    source while it holds its default, "parameters cell" (an assumption) once a reader changed it."""
    accel = catalog.accelerator(gpu)
    L = llama3()

    def prov(name, typed, kind="assumption"):
        if isinstance(source, str):
            return dict(kind=kind, source=typed)
        given = source(name)
        return dict(kind=kind, source=typed) if given != "parameters cell" else dict(kind="assumption", source=given)
    claim_src = source if isinstance(source, str) else None
    ch = Chain(f"{short(n_params)} dense on {short(n_tokens)} tokens, {n_gpus:,} x {accel.name}")
    # 1. compute
    if claim_src is None:
        six_nd(ch, n_params, n_tokens, **prov("n_params", "the claim (400B dense)", "spec"),
               source_d=prov("n_tokens", "the claim (10T tokens)")["source"])
    else:
        six_nd(ch, n_params, n_tokens, kind="spec", source=claim_src)
    # 2. layout
    ch.given("b_s", q(STATE_BYTES, "B/parameter"), "training state per parameter", kind="definition",
             source="bf16 weights 2 + bf16 grads 2 + fp32 master 4 + Adam m, v 4 + 4")
    ch.given("H", accel.q("hbm_capacity") / q(1, "GPU"), "HBM per GPU", kind=accel["hbm_capacity"].kind,
             source=accel["hbm_capacity"].cite)
    ch.given("f_s", q(STATE_HBM_SHARE, ""), "share of HBM for the state", kind="assumption",
             source="this book: a quarter left for activations, buffers and fragmentation")
    ch.step("n_mp", "b_s*N/(f_s*H)", "GPU", "fewest GPUs that hold one replica's state")
    ch.given("n_tp", q(TP_DEGREE, "GPU"), "tensor-parallel GPUs (one NVLink node)", kind="spec",
             source=f"HGX baseboard; Llama 3 Table 4: TP {L['layout']['tp']}")
    ch.step("n_pp", "2**Max(0, ceiling(log(n_mp/n_tp)/log(2)))", "", "pipeline stages: next power of two")
    ch.given("N_gpu", q(n_gpus, "GPU"), "GPUs in the job",
             **(prov("n_gpus", "the claim (16,384 H100s)", "spec") if claim_src is None else
                dict(kind="spec", source=claim_src)))
    ch.step("n_dp", "floor(N_gpu/(n_tp*n_pp))", "", "data-parallel replicas")
    if as_float(ch["n_dp"]) < 1:
        need = int(TP_DEGREE * as_float(ch["n_pp"]))
        raise ParameterError(f"n_gpus must be at least {need:,} (one replica: TP {TP_DEGREE} x PP "
                             f"{need // TP_DEGREE}) for {short(n_params)} parameters on {accel.name}, got {n_gpus!r}")
    ch.step("N_run", "n_tp*n_pp*n_dp", "GPU", "GPUs the layout uses")
    ch.step("s_gpu", "b_s*N/(n_tp*n_pp)", "GB/GPU", "training state per GPU (before sharding over DP)")
    # 3. pure-compute time
    ch.given("R", accel["bf16_dense"].q.to("FLOP/s") / q(1, "GPU"), "peak of one GPU (dense bf16)",
             kind=accel["bf16_dense"].kind, source=accel["bf16_dense"].cite)
    ch.given("u", q(mfu, ""), "model FLOPs utilisation",
             **(prov("mfu", f"the same source's fleet paragraph (40% on H100); Llama-3-405B reported "
                            f"{L['mfu_text']} on H100 (Llama 3 paper, Table 4)") if claim_src is None else
                dict(kind="assumption", source=claim_src)))
    ch.solve("T", "C = N_run*R*u*T", "day", "pure-compute time")
    # 4. data rate
    ch.step("r_tok", "D/T", "token/s", "tokens the fleet consumes")
    ch.given("b_tok", q(bytes_per_token, "B/token"), "bytes per token",
             **prov("bytes_per_token", "this book's assumption: about 4 bytes of UTF-8 text per token"))
    ch.step("r_B", "b_tok*r_tok", "MB/s", "bytes the data pipeline delivers")
    ch.given("B", q(global_batch_tokens, "token"), "tokens per optimizer step",
             **prov("global_batch_tokens", f"Llama 3 paper sec. 3.4.1: batch raised to {short(L['batch_tokens'])} tokens"))
    ch.step("t_step", "B/r_tok", "s", "step time")
    # 5. interruptions
    # Llama 3's record at the same scale on the same GPUs: a rate others measured
    ch.given("r_f", q(interruptions_per_gpu_day, "1/GPU/day"), "interruptions per GPU-day",
             **prov("interruptions_per_gpu_day", f"Llama 3 paper sec. 3.3.4: {L['interruptions']} job interruptions "
                    f"in a {L['window_days']}-day snapshot on {L['gpus']:,} H100s", "measured-by-others"))
    ch.step("n_int", "r_f*N_run*T", "", "interruptions during the compute days")
    ch.solve("M", "r_f*N_run*M = 1", "hour", "job mean time between interruptions")
    ch.given("f_u", q(unplanned_fraction, ""), "share that are failures",
             **prov("unplanned_fraction",
                    f"Llama 3 paper sec. 3.3.4: {L['unplanned']} of the {L['interruptions']} were unexpected",
                    "measured-by-others"))
    ch.step("M_u", "M/f_u", "hour", "job mean time between failures")
    # 6. checkpoint
    ch.given("b_c", q(checkpoint_bytes_per_param, "B/parameter"), "checkpoint bytes per parameter",
             **prov("checkpoint_bytes_per_param", SRC_CKPT))
    ch.step("S", "b_c*N", "TB", "checkpoint size")
    ch.given("B_w", q(checkpoint_write_gb_per_s, "GB/s"), "write bandwidth to storage",
             **prov("checkpoint_write_gb_per_s", f"Llama 3 paper sec. 3.3.1: Tectonic sustains "
                    f"{fmt(L['storage_sustained'])} ({fmt(L['storage_peak'])} peak); all of it goes to the checkpoint"))
    ch.step("delta", "S/B_w", "s", "checkpoint write time (the job pauses)")
    ch.step("tau", TAU_FORMULA, "minute", "optimal checkpoint interval (Young)")
    ch.step("n_ck", "tau/t_step", "", "steps between checkpoints")
    # 7. goodput
    ch.given("t_r", q(restart_minutes, "minute"), "restart time per interruption",
             **prov("restart_minutes", "this book's assumption: detect, drain, swap a spare node, relaunch, "
                    "read the checkpoint"))
    ch.step("G", GOODPUT_FORMULA, "", "goodput at the optimal interval")
    if as_float(ch["G"]) <= 0:
        raise ParameterError("the run never finishes: at these inputs checkpoints, rework and restarts "
                             f"take all the time (goodput {pct(as_float(ch['G']))})")
    # 8. schedule
    ch.solve("W", "T = G*W", "day", "wall-clock days")
    ch.step("n_W", "r_f*N_run*W", "", "interruptions over the wall-clock schedule")
    ch.step("S_run", "S*T/tau", "PB", "checkpoint bytes written over the run")
    return ch


def compute(p) -> Chain:
    return frontier_run(**p, source=lambda name: SPEC.source(p, name))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("A 400B dense model on 10 trillion tokens is 2.4 × 10²⁵ FLOPs, 43 days of pure compute on 16,384 H100s, "
         "and about 380 interruptions along the way. The order in which to derive every number, the layout and "
         "the data rate, the checkpoint and failure budgets, and the schedule that survives its own arithmetic.")
DAYS_WORDS = "43 days of pure compute on 16,384 H100s"      # the words the days' reading reads
SOURCE = "spec/001, paragraph on a frontier training run (400B dense, 10T tokens, 16,384 H100s)"
# The source's numbers; its MFU is the same document's fleet figure (40% on H100), its failure rate none, so
# the check takes the only public measurement at this scale, Llama 3's, and its split and storage.
CLAIM = dict(n_params=400e9, n_tokens=10e12, gpu="h100-sxm", n_gpus=16384, mfu=0.40,
             train_flops=2.4e25, compute_days=43.0, interruptions=380)
READINGS = ("all interruptions, planned too, over the compute days", "failures only, over the compute days",
            "all interruptions, over the wall-clock schedule", "failures only, over the wall-clock schedule")


def claim_inputs() -> dict:
    L = llama3()
    return dict(n_params=CLAIM["n_params"], n_tokens=CLAIM["n_tokens"], gpu=CLAIM["gpu"], n_gpus=CLAIM["n_gpus"],
                mfu=CLAIM["mfu"], global_batch_tokens=L["batch_tokens"], bytes_per_token=4.0,
                interruptions_per_gpu_day=L["rate"], unplanned_fraction=L["unplanned_share"],
                checkpoint_bytes_per_param=12.0, checkpoint_write_gb_per_s=L["storage_gb_per_s"],
                restart_minutes=10.0)


def mfu_for_days(ch, days) -> Chain:
    """The fleet equation solved for the MFU that finishes the chain's compute in `days`."""
    m = Chain("The MFU the claim's days imply")
    m.given("C", ch["C"], "training compute", kind="derived", source="6ND on the claim's inputs")
    m.given("N_run", ch["N_run"], "GPUs", kind="spec", source="the claim")
    m.given("R", ch["R"], "peak of one GPU (dense bf16)", kind="spec", source="catalog")
    m.given("T", q(days, "day"), "pure-compute time", kind="spec", source="the claim")
    m.solve("u", "C = N_run*R*u*T", "", "MFU")
    return m


@memoised
def checks() -> dict:
    L = llama3()
    ch = frontier_run(**claim_inputs(), source="the claim")
    n, n_w = as_float(ch["n_int"]), as_float(ch["n_W"])
    readings = dict(zip(READINGS, (n, n * L["unplanned_share"], n_w, n_w * L["unplanned_share"])))
    layout = (TP_DEGREE, int(as_float(ch["n_pp"])), int(as_float(ch["n_dp"])))
    # A second route to the goodput: the largest restart consistent with Llama 3's effective training time.
    d = young_derivation()
    s = {"G": L["ett"], "delta": as_float(ch["delta"], "s"), "M_u": as_float(ch["M_u"], "s"),
         "M": as_float(ch["M"], "s")}
    t_r_max = q(float(d["t_r_for"].subs({sym: s[sym.name] for sym in d["t_r_for"].free_symbols})),
                "s").to("minute")
    # A third route to the interval: the exact expectation for exponential failures (failures only).
    d_s, mu_s, tr_s = (as_float(ch[k], "s") for k in ("delta", "M_u", "t_r"))
    tau_exact, g_exact = optimum_exact(d_s, mu_s, tr_s, lo=1.0, hi=1e5)
    tau_young = as_float(ch["tau"], "s")
    return dict(chain=ch, mfu=mfu_for_days(ch, CLAIM["compute_days"]), readings=readings, layout=layout,
                llama=L, t_r_max=t_r_max, tau_exact=q(tau_exact, "s").to("minute"), g_exact=g_exact,
                tau_young=q(tau_young, "s").to("minute"), g_first=goodput(tau_young, d_s, mu_s, tr_s, mu_s),
                days_for_claim=q(CLAIM["interruptions"] / (L["rate"] * CLAIM["n_gpus"]), "day"))


def claims() -> list[Claim]:
    ck = checks()
    ch, L, r = ck["chain"], ck["llama"], ck["readings"]
    C_claim, T_claim = q(CLAIM["train_flops"], "FLOP"), q(CLAIM["compute_days"], "day")
    T_peak = (ch["C"] / (ch["N_run"] * ch["R"])).to("day")      # "pure compute" read as the datasheet peak
    # Each holds by its rounding: the book's value at the claim's two significant figures is the claimed number.
    # The paragraph names no MFU, so the days hold only under a reading: the source's own fleet MFU, or the peak.
    c_holds = rounds_to(ch["C"], C_claim, 2)
    at_mfu, at_peak = rounds_to(ch["T"], T_claim, 2), rounds_to(T_peak, T_claim, 2)
    verdict = READING if c_holds and (at_mfu or at_peak) else WRONG
    n_claim = CLAIM["interruptions"]
    return [
        Claim("frontier-run", quote=QUOTE, source=SOURCE,
              claimed=f"{fmt(C_claim, digits=2)}; {fmt(T_claim)} of pure compute on {fmt(q(CLAIM['n_gpus'], 'GPU'))}",
              derived=f"{fmt(ch['C'])}; {fmt(ch['T'])} at the source's {pct(CLAIM['mfu'])} MFU, {fmt(T_peak)} at "
                      f"the peak",
              verdict=verdict,
              reading="" if verdict != READING else (
                  f"\"{DAYS_WORDS}\" read at the {pct(CLAIM['mfu'])} MFU the same source's fleet paragraph sizes "
                  f"H100 fleets with, \"pure compute\" meaning the compute time without interruptions, restarts "
                  f"or checkpoints (this paragraph names no MFU)" if at_mfu else
                  f"\"{DAYS_WORDS}\" read as the datasheet's dense peak, \"pure compute\" meaning every FLOP the "
                  f"peak allows (this paragraph names no MFU)"),
              nearest_true="" if verdict != WRONG else
                  f"{fmt(ch['C'])}; {fmt(ch['T'])} at {pct(CLAIM['mfu'])} MFU, {fmt(T_peak)} at the dense peak",
              reason=f"{fmt(ch['k'].m)} x {short(CLAIM['n_params'])} x {short(CLAIM['n_tokens'])} is {fmt(ch['C'])}, "
                     f"which {'rounds' if c_holds else 'does not round'} to the claim's {fmt(C_claim, digits=2)}; "
                     f"the paragraph names no MFU. At the {pct(CLAIM['mfu'])} MFU the same source's fleet paragraph "
                     f"sizes H100 fleets with, {fmt(q(CLAIM['n_gpus'], 'GPU'))} take {fmt(ch['T'])}, which "
                     f"{'rounds' if at_mfu else 'does not round'} to the claim's {fmt(T_claim)} (the days need an "
                     f"MFU of {pct(ck['mfu']['u'])}; {L['name']} reported {L['mfu_text']}); read as the datasheet "
                     f"peak, \"pure compute\" would be {fmt(T_peak)}."),
        # The count rests on a failure rate the source never gives: it cannot be checked against the
        # source's own inputs. The page shows what the one rate measured at this scale gives.
        Claim("interruptions", quote="and about 380 interruptions along the way", source=SOURCE,
              claimed=f"about {n_claim:,}", derived=f"{r[READINGS[0]]:,.0f} over the compute days; "
                                                     f"{r[READINGS[2]]:,.0f} over the schedule",
              verdict=UNCHECKABLE,
              reason=f"The source gives no failure rate, so the count has no input to check; at the only rate "
                     f"measured at this scale, that of {L['name']} ({L['interruptions']} interruptions in "
                     f"{fmt(q(L['window_days'], 'day'))} on {fmt(q(L['gpus'], 'GPU'))}), the run would see "
                     f"{r[READINGS[0]]:,.0f} over its {fmt(ch['T'])} of compute and {r[READINGS[2]]:,.0f} over the "
                     f"{fmt(ch['W'])} it really takes" + (f", bracketing about {n_claim:,}" if
                     min(r[READINGS[0]], r[READINGS[2]]) <= n_claim <= max(r[READINGS[0]], r[READINGS[2]]) else "")
                     + f"; failures alone give {r[READINGS[1]]:,.0f}."),
    ]


def claim_texts() -> dict:
    ck = checks()
    ch, L, r = ck["chain"], ck["llama"], ck["readings"]
    return {"claim-n": short(CLAIM["n_params"]), "claim-d": short(CLAIM["n_tokens"]),
            "claim-gpus": fmt(q(CLAIM["n_gpus"], "GPU")), "claim-C": fmt(ch["C"]),
            "claim-days": fmt(q(CLAIM["compute_days"], "day")), "claim-mfu": pct(ck["mfu"]["u"]),
            "claim-T-40": fmt(ch["T"]), "claim-mfu-40": pct(CLAIM["mfu"]),
            "claim-T-peak": fmt((ch["C"] / (ch["N_run"] * ch["R"])).to("day")),
            "claim-layout": "TP {} x PP {} x DP {}".format(*ck["layout"]), "claim-count": f"{CLAIM['interruptions']:,}",
            "claim-reading-all": f"{r[READINGS[0]]:,.0f}", "claim-reading-fail": f"{r[READINGS[1]]:,.0f}",
            "claim-reading-wall": f"{r[READINGS[2]]:,.0f}",
            "claim-reading-gap": pct(abs(r[READINGS[0]] / CLAIM["interruptions"] - 1)),
            "claim-days-380": fmt(ck["days_for_claim"]), "claim-W": fmt(ch["W"]), "claim-G": pct(ch["G"]),
            "llama-int": str(L["interruptions"]), "llama-unplanned": str(L["unplanned"]),
            "llama-window": fmt(q(L["window_days"], "day")), "llama-gpus": fmt(q(L["gpus"], "GPU")),
            "llama-rate": f"{L['rate'] * 1000:.3g}", "llama-ett": pct(L["ett"]), "t-r-max": fmt(ck["t_r_max"]),
            "claim-restart": fmt(ch["t_r"]), "tau-young": fmt(ck["tau_young"]), "tau-exact": fmt(ck["tau_exact"]),
            "g-first": pct(ck["g_first"]), "g-exact": pct(ck["g_exact"])}


def readings_table() -> str:
    r = checks()["readings"]
    n = CLAIM["interruptions"]
    return ("| reading of the interruption count | interruptions | against the claim's figure |\n|---|---|---|\n"
            + "\n".join(f"| {k} | {v:,.0f} | {'+' if v >= n else ''}{pct(v / n - 1)} |" for k, v in r.items()))


# --- the page's numbers, figure data, sensitivities, exercises ---------------------------------------
def tsm_share(accel) -> float:
    """The state's share of HBM as the training-state-memory chapter derives it: 90% of HBM less the
    activations under full recomputation, (2L + 34) T d / g bytes per GPU for T tokens per micro-batch."""
    m = catalog.model("llama-3-405b")
    act = q((2 * as_float(m.q("n_layers")) + 34) * 8192 * as_float(m.q("d_model")) / TP_DEGREE, "B")
    return 0.90 - as_float(act / accel.q("hbm_capacity"), "")


def stages_at(ch, share) -> int:
    n_mp = as_float(ch["b_s"] * ch["N"] / (share * ch["H"]), "GPU")
    return 2 ** max(0, math.ceil(math.log2(n_mp / TP_DEGREE)))


def chain_texts(p, ch) -> dict:
    lost = lost_shares(*(as_float(ch[k], "s") for k in ("tau", "delta", "M_u", "t_r", "M")))
    n_pp = int(as_float(ch["n_pp"]))
    share_lo = as_float(ch["b_s"] * ch["N"] / (n_pp * ch["n_tp"] * ch["H"]), "")
    tsm = tsm_share(p.gpu)
    idle = p.n_gpus - as_float(ch["N_run"], "GPU")
    return {"p-gpu": p.gpu.name, "p-n": short(p.n_params), "p-d": short(p.n_tokens), "p-mfu": pct(p.mfu),
            "p-peak": fmt(ch["R"]), "p-gpus": fmt(ch["N_gpu"]), "p-run-gpus": fmt(ch["N_run"]),
            "p-idle": "none left over" if idle == 0 else f"{fmt(q(idle, 'GPU'))} left idle",
            "p-tp": fmt(ch["n_tp"].m), "p-mp": fmt(ch["n_mp"]), "p-hbm": fmt(p.gpu.q("hbm_capacity")),
            "p-state-share": pct(STATE_HBM_SHARE), "p-state-bytes": fmt(q(STATE_BYTES, "B/parameter")),
            "p-state-gpu": fmt(ch["s_gpu"]), "p-batch": short(p.global_batch_tokens),
            "p-token-bytes": fmt(q(p.bytes_per_token, "B/token")), "p-gpu-tokens": fmt(ch["r_tok"] / ch["N_run"]),
            "p-dataset": fmt((ch["D"] * ch["b_tok"]).to("TB")), "p-rate-1000": f"{p.interruptions_per_gpu_day * 1000:.3g}",
            "p-mtbf": fmt(ch["M_u"]), "p-unplanned": pct(p.unplanned_fraction),
            "p-ckpt-bytes": fmt(q(p.checkpoint_bytes_per_param, "B/parameter")),
            "p-ckpt-16": fmt((q(STATE_BYTES, "B/parameter") * ch["N"]).to("TB")),
            "p-tsm-share": pct(tsm), "p-share-lo": pct(share_lo),
            "p-share-hi": pct(min(1.0, 2 * share_lo) if n_pp > 1 else 1.0),
            "p-tsm-verdict": "the layout is the same either way" if stages_at(ch, tsm) == n_pp else
                             f"that reading would give {stages_at(ch, tsm)} stages instead",
            "p-bw": fmt(q(p.checkpoint_write_gb_per_s, "GB/s").to("TB/s")), "p-steps-ckpt": f"{as_float(ch['n_ck']):,.0f}",
            "p-restart": fmt(ch["t_r"]), "p-lost-ckpt": pct(lost["checkpoint writes"]),
            "p-lost-rework": pct(lost["rework after failures"]), "p-lost-restart": pct(lost["restarts"]),
            "p-extra-days": fmt(ch["W"] - ch["T"]), "p-ckpt-run": fmt(ch["S_run"]),
            "p-ckpt-vs-data": fmt(ratio(ch["S_run"], ch["D"] * ch["b_tok"]), digits=2),
            "p-ckpt-avg-rate": fmt((ch["S"] / ch["tau"]).to("GB/s"))}


def async_checkpoint(ch) -> dict:
    """An asynchronous checkpoint pauses only for each GPU's shard copied to host memory."""
    pcie = catalog.interconnect("pcie5-x16")["bandwidth_unidirectional"]
    shard = (ch["S"] / ch["N_run"] * q(1, "GPU")).to("MB")
    return dict(rate=pcie.q, shard=shard, pause=(shard / pcie.q).to("ms"))


VARIANTS = (("the parameters", {}),
            ("interruptions twice as frequent", "rate2"),
            ("restart of 30 minutes", dict(restart_minutes=30.0)),
            ("restart of 2.5 minutes", dict(restart_minutes=2.5)),
            ("storage ten times slower", "slow"),
            ("checkpoint of the whole 16-byte state", dict(checkpoint_bytes_per_param=16.0)),
            ("MFU of 35%", dict(mfu=0.35)))


def variants(p) -> dict[str, Chain]:
    out = {}
    for name, change in VARIANTS:
        if change == "rate2":
            change = dict(interruptions_per_gpu_day=2 * p.interruptions_per_gpu_day)
        elif change == "slow":
            change = dict(checkpoint_write_gb_per_s=p.checkpoint_write_gb_per_s / 10)
        out[name] = compute(p.replace(**change))
    return out


def variants_table(p) -> str:
    """The what-changes table: each variant's days, interval, goodput and schedule."""
    v = variants(p)
    base = v["the parameters"]
    rows = "\n".join(f"| {k} | {fmt(c['T'])} | {fmt(c['tau'])} | {pct(c['G'])} | **{fmt(c['W'])}** | "
                     f"{fmt(c['W'] - base['W'])} |" for k, c in v.items())
    return ("| change | compute days | $\\tau^*$ | goodput | wall-clock days | change in days |\n"
            "|---|---|---|---|---|---|\n" + rows)


def what_changes(p, ch: Chain) -> dict:
    """The what-changes prose: each variant's schedule against the parameters' own (ch)."""
    v, base = variants(p), ch
    return {"wc-rate2": fmt(v["interruptions twice as frequent"]["W"] - base["W"]),
            "wc-g-rate2": pct(v["interruptions twice as frequent"]["G"]),
            "wc-restart30": fmt(v["restart of 30 minutes"]["W"] - base["W"]),
            "wc-restart-fast": fmt(base["W"] - v["restart of 2.5 minutes"]["W"]),
            "wc-slow-store": fmt(v["storage ten times slower"]["W"] - base["W"]),
            "wc-slow-tau": fmt(v["storage ten times slower"]["tau"]),
            "wc-mfu": fmt(v["MFU of 35%"]["W"] - base["W"]), "wc-mfu-value": pct(0.35)}


def goodput_curves(ch, taus_minutes, scales=(1, 0.1, 0.01)) -> list[dict]:
    """Goodput against the checkpoint interval, for the store at its rate and 10x, 100x slower."""
    M, Mu, tr, d0 = (as_float(ch[k], "s") for k in ("M", "M_u", "t_r", "delta"))
    out = []
    for s in scales:
        d = d0 / s
        t_opt = math.sqrt(2 * d * Mu)
        out.append(dict(scale=s, delta=d, g=goodput(taus_minutes * 60, d, Mu, tr, M), tau_opt=t_opt / 60,
                        g_opt=goodput(t_opt, d, Mu, tr, M)))
    return out


def schedule_curves(ch, p, mtbi_hours, restarts=(2.5, None, 30.0)) -> dict[float, object]:
    """Wall-clock days against the job's time between interruptions, one line per restart time."""
    import numpy as np
    T, d = as_float(ch["T"], "day"), as_float(ch["delta"], "s")
    out = {}
    for r in restarts:
        r = p.restart_minutes if r is None else r
        M = mtbi_hours * 3600
        g = 1 - np.sqrt(2 * d / (M / p.unplanned_fraction)) - r * 60 / M
        out[r] = np.where(g > 0, T / np.where(g > 0, g, 1), np.nan)
    return out


def exercises(p, ch: Chain) -> dict:
    ex1 = frontier_run(**{**claim_inputs(), "n_gpus": 8192})
    tau_habit = q(60, "minute")
    g_habit = 1 - as_float(ch["delta"] / tau_habit + tau_habit / (2 * ch["M_u"]) + ch["t_r"] / ch["M"], "")
    ex3 = compute(p.replace(checkpoint_bytes_per_param=16.0, checkpoint_write_gb_per_s=200.0))
    return {"ex1-gpus": fmt(q(8192, "GPU")), "ex1-days": fmt(ex1["T"]), "ex1-int": fmt(ex1["n_int"]),
            "ex1-mtbi": fmt(ex1["M"]), "ex1-g": pct(ex1["G"]), "ex1-wall": fmt(ex1["W"]),
            "ex2-tau": fmt(tau_habit.to("hour")), "ex2-g": pct(g_habit), "ex2-days": fmt(ch["T"] / g_habit - ch["W"]),
            "ex3-bytes": fmt(q(16, "B/parameter")), "ex3-bw": fmt(q(200, "GB/s")), "ex3-size": fmt(ex3["S"]),
            "ex3-delta": fmt(ex3["delta"]), "ex3-tau": fmt(ex3["tau"]), "ex3-g": pct(ex3["G"]), "ex3-wall": fmt(ex3["W"])}


SPEC = Spec("frontier-run-400b", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
