"""agent-sessions: think a second, run a tool for a minute, a hundred times; where the KV cache waits during
the tool call, what the sandbox may spend starting, and what a crash costs.

Holding a session's KV in HBM through a tool call of t seconds costs g t K / M_kv GPU-seconds (the share
of the replica's KV budget it keeps from other sequences, for the whole call); dropping it costs a
re-prefill of the context, 2 N_a T + causal attention, at the prefill MFU. They cross at t_x, which does
not depend on the context while attention is small (both grow with T). Host memory, reached over each
GPU's PCIe link, or local NVMe, parks it for the price of a copy back. The pieces and the state machine
are in utils.serving.agent_session; the KV bytes and the budget come from utils.models and utils.serving.
"""
from __future__ import annotations

import math

from utils import catalog, roofline, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.serving.agent_session import Costs, choose_tier, crossover_s, park_cost
from utils.units import duration, fmt, pct, q
from utils.verdicts import HOLDS, READING, UNCHECKABLE, WRONG, Claim

BOOT = catalog.entry("software", "firecracker")["boot_to_init"]     # the parameter's default (a test holds it)
NVME_SOURCE = ("this book's assumption: a node's local NVMe array read at 25 GB/s, a few PCIe 4.0 x4 drives at "
               "'up to 7,000 MB/s' each (nuvorix.com glossary, NVMe, read 2026-12-01)")
# Each GPU's own PCIe 5 x16 link to host memory: its one-way peak, and the share of it a host-to-device copy
# reaches in published measurements (55.43 of 63.0 GB/s: the parameter's default, 88%, holds it to two figures).
_LINK = catalog.interconnect("pcie5-x16")
HOST_PEAK, HOST_MEASURED = _LINK["bandwidth_unidirectional"], _LINK["host_to_device_measured"]
HOST_FRACTION = float((HOST_MEASURED.q / HOST_PEAK.q).to("").m)
MFU_SOURCE = ("this book's assumption: a long re-prefill is compute-bound; half of the dense peak, below the 75% the "
              "best-tuned kernel is published to reach (catalog: software.achieved-fraction, bf16_dense)")

PARAMETERS = (
    Param("model", "qwen2.5-72b", "the model: a catalog key or a config.json path", check="model",
          source="catalog: Qwen2.5-72B, this page's reading of the claim (a 70B-class model whose context holds "
                 "a hundred steps)"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM, this page's reading"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel)", check="whole",
          source="this book's assumption: one HGX node per replica"),
    Param("think_s", 1.0, "time the model spends on one step (decode)", unit="s", source="the claim (a second)"),
    Param("tool_s", 60.0, "time one tool call runs", unit="s", source="the claim (a minute)"),
    Param("steps", 100, "think-and-tool steps in the session", check="whole", source="the claim (a hundred times)"),
    Param("start_context_tokens", 4000, "context before the first step (system prompt, tools, task)", unit="token",
          check="whole", source="this book's assumption"),
    Param("think_tokens", 200, "tokens the model writes per step (reasoning and the call)", unit="token",
          check="whole", source="this book's assumption"),
    Param("tool_result_tokens", 500, "tokens each tool result adds to the context", unit="token", check="whole",
          source="this book's assumption"),
    Param("prefill_mfu", 0.5, "model FLOPs utilisation of a re-prefill", check="fraction", source=MFU_SOURCE),
    Param("host_link_fraction", 0.88, "achieved share of the PCIe link's one-way peak in a host-to-GPU copy",
          check="fraction", source=(f"catalog: {_LINK.name}, host_to_device_measured over bandwidth_unidirectional "
                                    f"({HOST_MEASURED.kind}): {HOST_MEASURED.note}; {HOST_MEASURED.cite}")),
    Param("host_memory_gb", 2000.0, "host memory per replica free for parked KV", unit="GB",
          source="this book's assumption: an eight-GPU node with two terabytes of host memory"),
    Param("nvme_read_gbps", 25.0, "local NVMe read rate per replica", unit="GB/s", source=NVME_SOURCE),
    Param("resume_budget_s", 0.2, "longest a parked session may take to resume", unit="s",
          source="this book's assumption: a fifth of the think step"),
    Param("sandbox_boot_s", 0.125, "sandbox cold start (a microVM to its init process)", unit="s", source=BOOT.cite),
    Param("cold_start_share", 0.01, "share of a tool call the sandbox start may take (the budget)", check="fraction",
          source="this book's assumption"),
)

RESULTS = (
    Result("session_hours", "hour", "A hundred steps of think and tool take", of="t_S"),
    Result("steps_per_hour", "", "Steps that fit in an hour", of="n_h"),
    Result("session_kv", "GB", "KV of the session at mid-session", of="K"),
    Result("hbm_hold_gpu_s", "GPU*s", "GPU-seconds to hold it in HBM through one tool call", of="G_h"),
    Result("reprefill_gpu_s", "GPU*s", "GPU-seconds to re-prefill it instead", of="G_p"),
    Result("crossover_s", "s", "Tool-call length where holding and re-prefilling cost the same", of="t_x"),
    Result("host_resume_s", "ms", "Resume from host memory", of="t_hr"),
    Result("reprefill_s", "ms", "Resume by re-prefill", of="t_pr"),
    Result("idle_kv_share", "", "Share of HBM-parked sessions idle at any moment", of="z", percent=True),
    Result("loss_per_crash_journal", "s", "Work lost per crash, journal per step", of="W_j"),
    Result("loss_per_crash_none", "minute", "Work lost per crash, no checkpoint", of="W_0"),
)


def validate(p):
    ctx = int(p.model.q("max_context").m)
    end = p.start_context_tokens + p.steps * (p.think_tokens + p.tool_result_tokens)
    if end > ctx:
        raise ParameterError(f"the session ends at {end} tokens of context, beyond {p.model.name}'s {ctx}: "
                             "lower steps, think_tokens or tool_result_tokens, or pick a longer-context model")
    for field in ("bf16_dense", "hbm_bandwidth"):
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")


def session_chain(p) -> Chain:
    def src(name: str) -> str:      # the parameter's own source while it holds the default
        return SPEC.source(p, name)

    m, acc, g = p.model, p.gpu, p.gpus_per_replica
    mid = int(round(p.start_context_tokens + p.steps / 2 * (p.think_tokens + p.tool_result_tokens)))
    ch = Chain(f"An agent session on {m.name}, {g} x {acc.name}")
    ch.given("d", q(p.think_s, "s"), "think time per step", kind="assumption", source=src("think_s"))
    ch.given("t_t", q(p.tool_s, "s"), "tool time per step", kind="assumption", source=src("tool_s"))
    ch.given("S", q(p.steps, ""), "steps", kind="assumption", source=src("steps"))
    ch.given("Hr", q(1, "hour"), "an hour", kind="derived", source="the claim's window")
    ch.step("c", "d + t_t", "s", "one step: think, then the tool")
    ch.step("t_S", "S*c", "hour", "the whole session")
    ch.step("n_h", "Hr/c", "", "steps that fit in an hour")
    chip = roofline.Chip(acc.key, acc.name, acc.q("bf16_dense").to("FLOP/s"), acc.q("hbm_bandwidth").to("byte/s"))
    serving.add_decode_inputs(ch, m, acc, chip, 2.0)
    b = serving.budget(m, acc, g, 2.0, 2.0, mid)
    serving.add_budget_steps(ch, b, source="bf16 weights and cache; the context at mid-session",
                             utilization_value=serving.vllm_utilization_value(), per_gpu_users=False)
    ch.given("nu", q(1, "sequence"), "one session", kind="derived", source="one context")
    ch.step("K", "kv_u*nu", "GB", "KV of the session at mid-session")
    ch.step("G_h", "g*t_t*K/M_kv", "GPU*s", "held in HBM through one tool call: its share of the budget")
    ch.step("F", "nu*(k*N_a*T + I_kv*kappa*T**2/(2*tau))", "PFLOP", "re-prefilling the context")
    ch.given("u_p", q(p.prefill_mfu, ""), "prefill MFU", kind="assumption", source=src("prefill_mfu"))
    ch.step("G_p", "F/(u_p*P)", "GPU*s", "GPU-seconds of the re-prefill")
    ch.step("t_pr", "G_p/g", "ms", "resume by re-prefill (wall time)")
    ch.solve("t_x", "g*t_x*K/M_kv = G_p", "s", "tool call at which holding costs a re-prefill")
    ch.given("B_pk", HOST_PEAK.q / q(1, "GPU"), "PCIe 5 x16 one-way peak per GPU (each GPU its own link)",
             kind=HOST_PEAK.kind, source=HOST_PEAK.cite)
    own = src("host_link_fraction")
    ch.given("eta_h", q(p.host_link_fraction, ""), "achieved share of it in a host-to-GPU copy",
             kind=HOST_MEASURED.kind if own != "parameters cell" else "assumption", source=own)
    ch.step("B_h", "eta_h*B_pk", "GB/s/GPU", "host-to-GPU copy rate per GPU")
    ch.step("t_hr", "K/(g*B_h)", "ms", "resume from host memory: each GPU copies its share back")
    ch.given("R_n", q(p.nvme_read_gbps, "GB/s"), "local NVMe read rate", kind="assumption",
             source=src("nvme_read_gbps"))
    ch.step("t_nr", "K/R_n", "ms", "resume from local NVMe")
    ch.given("M_h", q(p.host_memory_gb, "GB"), "host memory for parked KV", kind="assumption",
             source=src("host_memory_gb"))
    ch.step("n_p", "floor(M_h/K)", "", "sessions host memory parks")
    ch.step("z", "t_t/c", "", "share of a session's time its KV is idle (the tool runs)")
    ch.step("U_d", "U*(1 - z)", "sequence", "of the sessions whose KV fits in HBM, those decoding at any moment")
    ch.given("b_s", q(p.sandbox_boot_s, "s"), "sandbox cold start", kind="spec", source=src("sandbox_boot_s"))
    ch.given("beta", q(p.cold_start_share, ""), "budget: share of a tool call", kind="assumption",
             source=src("cold_start_share"))
    ch.step("b_max", "beta*t_t", "s", "cold-start budget per tool call")
    ch.step("b_h", "S*b_s", "s", "cold starts per session if every call starts a sandbox")
    ch.step("W_j", "c/2", "s", "work lost per crash with a journal per step (half a step, on average)")
    ch.step("W_0", "t_S/2", "minute", "work lost per crash with no checkpoint (half the session, on average)")
    return ch


def costs(ch, p) -> Costs:
    """The chain's numbers as plain floats for utils.serving.agent_session."""
    return Costs(kv_bytes=as_float(ch["K"], "byte"), kv_budget=as_float(ch["M_kv"], "byte"), gpus=p.gpus_per_replica,
                 host_rate=as_float(ch["g"] * ch["B_h"], "byte/s"), nvme_rate=as_float(ch["R_n"], "byte/s"),
                 host_room=as_float(ch["M_h"], "byte"), nvme_room=float("inf"),
                 prefill_gpu_s=as_float(ch["G_p"], "GPU*s"), prefill_s=as_float(ch["t_pr"], "s"))


def compute(p) -> Chain:
    return session_chain(p)


def tier_of(ch, p) -> str:
    return choose_tier(p.tool_s, costs(ch, p), p.resume_budget_s)


# --- the claims -----------------------------------------------------------------------------------
QUOTE_STEPS = "An agent thinks for a second, runs a tool for a minute, and repeats a hundred times over an hour."
QUOTE_KV = "the KV cache that should survive the tool call"
QUOTE_CKPT = "checkpoints that resume a step rather than an hour"
RATHER_WORDS = QUOTE_CKPT.split(" a step ")[1]     # "rather than an hour": the session is about an hour long
SOURCE = "spec/000 and spec/001, paragraph on agent sessions"
CLAIM = {prm.name: prm.default for prm in PARAMETERS}


@memoised
def checks() -> dict:
    p = SPEC.check(**CLAIM)
    ch = session_chain(p)
    return dict(p=p, chain=ch, costs=costs(ch, p), tier=tier_of(ch, p))


def claims() -> list[Claim]:
    ck = checks()
    ch, p, c = ck["chain"], ck["p"], ck["costs"]
    t_S, n_h = as_float(ch["t_S"], "hour"), float(math.floor(as_float(ch["n_h"])))
    tool_for_s = as_float(ch["Hr"], "s") / p.steps - p.think_s
    within_hour = t_S <= 1                          # "over an hour" read as "within an hour"
    hbm, drop, host = (park_cost(t, p.tool_s, c) for t in ("hbm", "drop", "host"))
    survives_hbm = hbm["gpu_s"] <= drop["gpu_s"]
    survives_host = host["fits"] and host["resume_s"] <= p.resume_budget_s
    kv_verdict = HOLDS if survives_hbm else (READING if survives_host else WRONG)
    return [
        # "over an hour" reads as "within an hour" (which the next sentence's "rather than an hour" favours) or as
        # "taking more than an hour": a session that fits the hour holds as written, a longer one under the second.
        Claim("steps-per-hour", quote=QUOTE_STEPS, source=SOURCE,
              claimed="a hundred steps of a second and a minute, over an hour",
              derived=f"{fmt(ch['t_S'])} for a hundred steps; {fmt(ch['n_h'], digits=3)} steps fit an hour",
              verdict=HOLDS if within_hour else READING,
              reading=(f'"over an hour" read as "more than an hour": a hundred steps take {fmt(ch["t_S"])}, more '
                       f'than an hour; read as "within an hour" (as the next sentence\'s "{RATHER_WORDS}" suggests, '
                       f"a session of about an hour) it fails: an hour holds {fmt(n_h)} steps, and a hundred in an "
                       f"hour leave {duration(q(tool_for_s, 's'))} for each tool call") if not within_hour else "",
              reason=(f"A step of {fmt(ch['d'])} and {fmt(ch['t_t'])} is {fmt(ch['c'])}; a hundred of them take "
                      f"{fmt(ch['t_S'])}, and an hour holds {fmt(n_h)}.")),
        Claim("kv-survives", quote=QUOTE_KV, source=SOURCE, claimed="keep the KV cache across the tool call",
              derived=(f"HBM {fmt(q(hbm['gpu_s'], 'GPU*s'))}, re-prefill {fmt(q(drop['gpu_s'], 'GPU*s'))}, host memory "
                       f"no GPU-seconds and {fmt(q(host['resume_s'], 's').to('ms'))} to resume"),
              verdict=kv_verdict,
              reading=("'survive' as surviving off the GPU: copied to host memory during the call and back before the "
                       "next think step, not held in HBM") if kv_verdict == READING else "",
              nearest_true="" if kv_verdict != WRONG else "re-prefilling after the tool call is cheaper",
              reason=(f"Holding {fmt(ch['K'])} in HBM for {fmt(ch['t_t'])} costs {fmt(q(hbm['gpu_s'], 'GPU*s'))} against "
                      f"{fmt(q(drop['gpu_s'], 'GPU*s'))} to re-prefill (they cross at {fmt(ch['t_x'])}); parked in host "
                      f"memory it costs no GPU time and resumes in {fmt(q(host['resume_s'], 's').to('ms'))}.")),
        # A journal written every step loses at most a step by construction, and the page's crash-to-crash
        # arithmetic only restates it: nothing of the source's is checked.
        Claim("resume-a-step", quote=QUOTE_CKPT, source=SOURCE, claimed="a crash costs a step, not the session",
              derived=f"the book's figure: {fmt(ch['W_j'])} lost per crash with a journal per step, {fmt(ch['W_0'])} without",
              verdict=UNCHECKABLE,
              reason=(f"A checkpoint at every step loses at most a step by construction, so the claim is true by "
                      f"definition and nothing of the source's is checked; the book's own figure is half a step, "
                      f"{fmt(ch['W_j'])}, lost per crash on average, against half the session, {fmt(ch['W_0'])}, "
                      f"with no checkpoint.")),
    ]


# --- figure, what changes, exercises ------------------------------------------------------------------
def crossover_curve(ch, p, tools=None) -> dict:
    """GPU-seconds per tool call against its length: held in HBM (a line) and re-prefilled (flat)."""
    import numpy as np  # arrays for the figure only: compute() needs none

    c = costs(ch, p)
    tools = np.linspace(0, 180, 61) if tools is None else np.asarray(tools)
    return dict(tools=tools, hbm=np.array([park_cost("hbm", float(t), c)["gpu_s"] for t in tools]),
                drop=np.full(len(tools), c.prefill_gpu_s), crossover=crossover_s(c))


def what_changes(p, ch) -> dict:
    moe = session_chain(SPEC.check(model="gpt-oss-120b"))
    long = session_chain(SPEC.check(tool_result_tokens=1000))
    base = ch
    return {"wc-moe-x": fmt(moe["t_x"]), "wc-moe-kv": fmt(moe["K"]), "wc-long-tokens": fmt(q(1000, "token")),
            "wc-long-x": fmt(long["t_x"]),
            "wc-long-kv": fmt(long["K"]), "wc-base-x": fmt(base["t_x"]),
            "wc-nvme": fmt(base["t_nr"]), "wc-budget": fmt(q(p.resume_budget_s, "s").to("ms"))}


def exercises(p, ch) -> dict:
    ck = checks()                  # the exercises are set on the claim's session, not the reader's
    ch, p = ck["chain"], ck["p"]
    short = session_chain(SPEC.check(tool_s=5.0))
    c5 = costs(short, p)
    return {"ex1-tier": choose_tier(5.0, c5, p.resume_budget_s), "ex1-hbm": fmt(q(park_cost("hbm", 5.0, c5)["gpu_s"], "GPU*s")),
            "ex1-drop": fmt(q(c5.prefill_gpu_s, "GPU*s")),
            "ex2-parked": fmt(ch["n_p"]), "ex2-active": fmt(ch["U_d"]), "ex2-u": fmt(ch["U"]),
            "ex3-per-call": fmt(ch["b_h"]), "ex3-budget": fmt(ch["b_max"]), "ex3-share": pct(as_float(ch["b_s"] / ch["t_t"]))}


def crossover_at(ch, p, tokens: float) -> float:
    """The crossover (s) for a context of `tokens` (the session's start or end), from the chain's inputs."""
    kN, ik = as_float(ch["k"] * ch["N_a"], "FLOP/token"), as_float(ch["I_kv"] * ch["kappa"], "FLOP/token")
    flops = kN * tokens + ik * tokens ** 2 / 2
    gpu_s = flops / (p.prefill_mfu * as_float(ch["P"], "FLOP/s/GPU"))
    kv = as_float(ch["rho"] * ch["kappa"], "byte/token") * tokens
    return gpu_s * as_float(ch["M_kv"], "byte") / (p.gpus_per_replica * kv)


def session_ends(p) -> dict:
    end = p.start_context_tokens + p.steps * (p.think_tokens + p.tool_result_tokens)
    return dict(start=float(p.start_context_tokens), end=float(end))


SPEC = Spec("agent-sessions", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
