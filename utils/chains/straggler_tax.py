"""straggler-tax: every collective waits for the last rank, so one throttled GPU lengthens every step by
s/(1-s) while the other N-1 ranks wait; the jitter of healthy ranks costs j z_N on its own; per-rank
compute timing finds the throttled rank in k steps (solved from the flagging threshold and a detection
margin). The arithmetic of maxima, simulations and the detector live in utils.training.stragglers.
"""
from __future__ import annotations

import math

import numpy as np

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.params import Inputs, Param, ParameterError, Result, Spec
from utils.training import flops_per_parameter_token, h100_rental_rates, rental_rate_source
from utils.training import stragglers as sg
from utils.units import fmt, pct, q
from utils.verdicts import HOLDS, UNCHECKABLE, WRONG, Claim

LLAMA405_RUN = "llama-3-405b-pretraining"
# arXiv:2208.11035 abstract: 8% average variation, outliers up to 1.5x (catalog software gpu-variability-sinha-2022)
_SINHA = catalog.entry("software", "gpu-variability-sinha-2022")
SINHA = dict(spread=as_float(_SINHA.q("spread")), outlier=as_float(_SINHA.q("outlier_slowdown")))
JITTER_SOURCE = ("this book's assumption: no public source gives per-rank, per-step noise of an LLM step; "
                 "Llama-3 saw a fleet-wide diurnal 1-2% swing (arXiv:2407.21783 sec. 3.3.4)")
THROTTLE_SOURCE = ("this book's assumption: a hot or power-capped GPU stepping its clock down by a tenth; "
                   "Sinha et al. (arXiv:2208.11035) saw outliers up to 1.5x slower than the median GPU")
ALPHA_SOURCE = "this book's choice: about one false flag a week at one check per step"
STEP_SOURCE = "Llama-3-405B, Table 4 row 2, at 6N FLOP per token (derived on the page)"
PRICE_SOURCE = "catalog h100-rental.contract_1y (H100 one-year contract, March 2026)"
DETECT_P = 0.99
DETECT_SOURCE = "this book's choice: the window finds a real straggler 99 times in 100"
RESTART_MIN = 10.0
RESTART_SOURCE = ("this book's assumption, the frontier-run chapter's restart: detect, cordon, swap in a "
                  "spare, relaunch and reload from the last checkpoint")
NODE_GPUS = 8
NODE_SOURCE = "an 8-GPU H100 server (Llama-3's Grand Teton, arXiv:2407.21783 sec. 3.3.1)"
CONTRACT_USD = h100_rental_rates()["contract_1y"]   # the catalog's one-year contract rate, USD per GPU-hour

PARAMETERS = (
    Param("n_ranks", 16384, "GPUs in the synchronous job (ranks that meet at every collective)", unit="GPU",
          check="whole", source="the claim (16,384 GPUs: Llama 3 405B, Table 4 row 2)"),
    Param("step_seconds", 6.2, "seconds per training step with every rank healthy and no jitter", unit="s",
          source=STEP_SOURCE),
    Param("jitter_fraction", 0.01, "per-rank, per-step noise in compute time: its standard deviation over the mean",
          source=JITTER_SOURCE),
    Param("throttle_fraction", 0.10, "share of its speed the one throttled GPU has lost (0.10: it runs at 90%)",
          check="share", source=THROTTLE_SOURCE),
    Param("gpu_hour_usd", CONTRACT_USD, "USD per GPU-hour", unit="USD/GPU/hour", source=PRICE_SOURCE),
    Param("false_alarm_rate", 1e-5, "chance that one check over all ranks flags a healthy rank", check="share",
          source=ALPHA_SOURCE),
)

RESULTS = (
    Result("straggler_step_tax", "", "Step-time tax of one throttled rank", of="x", percent=True),
    Result("idle_gpu_hours_per_day", "GPU*hour", "GPU-hours the other ranks idle per day", of="H"),
    Result("idle_usd_per_day", "USD", "Cost of those idle GPU-hours per day", of="C"),
    Result("jitter_tax", "", "Jitter tax: E[max over ranks] over the mean, less one", of="x_j", percent=True),
    Result("straggler_tax_over_jitter", "", "The throttle's tax on top of jitter", of="x_m", percent=True),
    Result("steps_to_detect", "", "Steps of per-rank timing to find the throttled rank", of="k_1"),
)

CLAIM = dict(n_ranks=16384, others_taxed=16383, detect_steps=1)
CLAIM_INPUTS = dict(n_ranks=16384, step_seconds=6.2, jitter_fraction=0.01, throttle_fraction=0.10,
                    gpu_hour_usd=CONTRACT_USD, false_alarm_rate=1e-5)
QUOTES = dict(
    tax="Every collective ends when the last rank arrives, so a single throttled GPU taxes 16,383 others.",
    one_step="The arithmetic of that tax, the per-rank timing that finds the rank in one step, and the "
             "ranked list of causes from a hot GPU to a NIC with symbol errors, each with the command that "
             "confirms it.")


def validate(p):
    if p.n_ranks < 2:
        raise ParameterError(f"n_ranks must be at least 2 (one rank has no one to wait for), got {p.n_ranks!r}")
    if p.throttle_fraction <= 0:
        raise ParameterError(f"throttle_fraction must be above 0 (the page prices one throttled GPU), "
                             f"got {p.throttle_fraction!r}")
    if p.false_alarm_rate <= 0:
        raise ParameterError(f"false_alarm_rate must be above 0 (no threshold flags nothing), got {p.false_alarm_rate!r}")
    if p.jitter_fraction > 0.2:
        raise ParameterError(f"jitter_fraction must be <= 0.2 (beyond it the normal model gives the fastest of "
                             f"thousands of ranks a negative time), got {p.jitter_fraction!r}")


def _provenance(name, value, kind):
    """An input's kind and source: the parameter's own while it holds its default (SPEC.source), else the reader's."""
    source = SPEC.source(Inputs({name: value}), name)
    return dict(kind=kind if source != "parameters cell" else "assumption", source=source)


def _price_provenance(usd):
    kind, source = rental_rate_source(usd) or ("assumption", "the reader's value (gpu_hour_usd, parameters cell)")
    return dict(kind=kind, source=source)


def straggler_chain(n_ranks, step_seconds, jitter_fraction, throttle_fraction, gpu_hour_usd,
                    false_alarm_rate, *, source="parameters cell") -> Chain:
    ch = Chain("The straggler tax")
    ch.given("N", q(n_ranks, "GPU"), "ranks in the job", **_provenance("n_ranks", n_ranks, "assumption"))
    ch.given("n_1", q(1, "GPU"), "the throttled rank (it works; it does not wait)", kind="definition",
             source="one rank")
    ch.given("t", q(step_seconds, "s"), "healthy step time", **_provenance("step_seconds", step_seconds, "derived"))
    ch.given("s", throttle_fraction, "share of speed the throttled GPU lost",
             **_provenance("throttle_fraction", throttle_fraction, "assumption"))
    ch.step("T_s", "t/(1 - s)", "s", "step with one throttled rank: the last to arrive")
    ch.step("d", "T_s - t", "s", "delay per step")
    ch.step("x", "d/t", "", "straggler tax: the step's growth over a healthy step")
    ch.step("I", "(N - n_1)*d", "GPU*s", "GPU-time the others spend waiting, per step")
    ch.step("f", "d/T_s", "", "idle share of each healthy rank's wall clock, of the actual step (= s)")
    ch.given("D", q(24, "hour"), "a day of wall clock", kind="definition", source="")
    ch.step("H", "(N - n_1)*D*f", "GPU*hour", "idle GPU-hours per day")
    ch.given("p", q(gpu_hour_usd, "USD/GPU/hour"), "GPU-hour price", **_price_provenance(gpu_hour_usd))
    ch.step("C", "H*p", "USD", "cost of the idle hours, per day")
    # jitter: the expected maximum of N rank times
    ch.given("j", jitter_fraction, "per-rank jitter, sigma over the mean",
             **_provenance("jitter_fraction", jitter_fraction, "assumption"))
    ch.given("z_N", sg.normal_max_exact(n_ranks), "E[max of N standard normals]", kind="derived",
             source="utils.training.stragglers.normal_max_exact: integral of x N Phi^(N-1) phi")
    ch.step("x_j", "j*z_N", "", "jitter tax: the step over the mean step, less one")
    ch.given("m_s", sg.throttled_step(n_ranks, jitter_fraction, throttle_fraction), "E[step]/t with jitter "
             "and one throttled rank", kind="derived", source="utils.training.stragglers.throttled_step (integration)")
    ch.step("x_m", "m_s/(1 + x_j) - 1", "", "the throttle's tax on top of jitter")
    # finding it
    ch.given("alpha", false_alarm_rate, "false-alarm rate per check over all ranks",
             **_provenance("false_alarm_rate", false_alarm_rate, "assumption"))
    ch.given("z_a", sg.detection_threshold(n_ranks, false_alarm_rate), "flagging threshold, z-score",
             kind="derived", source="Sidak: Phi^-1 of 1 - (1 - alpha)^(1/N)")
    ch.given("z_b", sg._STD.inv_cdf(DETECT_P), "margin for a 0.99 chance of detection", kind="assumption",
             source=DETECT_SOURCE)
    ch.solve("k", "x*sqrt(k) = z_a*j + z_b*j/(1 - s)", "", "steps of per-rank timing needed (before rounding up)")
    ch.given("k_1", sg.steps_to_detect(throttle_fraction, jitter_fraction, n_ranks, false_alarm_rate, DETECT_P),
             "steps to detect: k rounded up, at least one", kind="derived", source="utils.training.stragglers.steps_to_detect")
    ch.step("t_det", "k_1*T_s", "s", "time to detect")
    ch.step("F", "alpha*D/(k_1*t)", "", "false flags per day, one check per window")
    # what to do: restart with a spare when the throttle would cost more than the restart
    ch.given("t_r", q(RESTART_MIN, "minute"), "restart to swap in a spare", kind="assumption", source=RESTART_SOURCE)
    ch.solve("T_b", "(N - n_1)*f*T_b = N*t_r", "minute", "throttle duration above which a restart pays")
    ch.given("g", q(NODE_GPUS, "GPU"), "GPUs in a spare node", kind="assumption", source=NODE_SOURCE)
    ch.step("C_sp", "g*D*p", "USD", "cost of holding one spare node idle, per day")
    return ch


def compute(p) -> Chain:
    return straggler_chain(p.n_ranks, p.step_seconds, p.jitter_fraction, p.throttle_fraction, p.gpu_hour_usd,
                           p.false_alarm_rate)


def steps_text(k) -> str:
    k = int(as_float(k))
    return "one step" if k == 1 else f"{k:,} steps"


def llama_step() -> dict:
    """The step_seconds default: Llama-3-405B's step at 6N FLOPs per token (Table 4, row 2)."""
    run = catalog.run(LLAMA405_RUN)
    m = catalog.model(run.q("model"))
    row = {k: as_float(run.q(f"table4_row2_{k}")) for k in ("gpus", "dp", "batch_per_dp", "seq_len")}
    batch = q(row["dp"] * row["batch_per_dp"] * row["seq_len"], "token")
    rate = run.q("table4_row2_tflops_per_gpu")
    step = (flops_per_parameter_token()["train"] * q(1, "FLOP/parameter/token") * m.q("params_total") * batch
            / (q(row["gpus"], "GPU") * rate / q(1, "GPU"))).to("s")
    return dict(gpus=q(row["gpus"], "GPU"), batch=batch, rate=rate, step=step)


def inputs_glue(p) -> dict:
    ls = llama_step()
    return {"p-llama-gpus": fmt(ls["gpus"]), "p-llama-batch": fmt(ls["batch"]), "p-llama-rate": fmt(ls["rate"]),
            "p-llama-step": fmt(ls["step"]), "p-jitter": pct(p.jitter_fraction), "p-sinha-spread": pct(SINHA["spread"]),
            "p-sinha-outlier": f"{SINHA['outlier']:g}x", "p-throttle": pct(p.throttle_fraction),
            "p-false-per-week": fmt(p.false_alarm_rate * 7 * 86400 / p.step_seconds, digits=2),
            "claim-others": fmt(q(CLAIM["others_taxed"], "GPU")), "claim-n": fmt(q(CLAIM["n_ranks"], "GPU")),
            "claim-steps": "one step"}


def prose(ch: Chain, p) -> dict:
    return {"detect-text": steps_text(ch["k_1"]), "intro-n": fmt(ch["N"]), "intro-others": fmt(ch["N"] - ch["n_1"]),
            "intro-usd-day": fmt(ch["C"]) + " a day at " + fmt(ch["p"]), "c-delay": fmt(ch["d"]),
            "c-idle-step": fmt(ch["I"]), "c-idle-share": pct(ch["f"]), "c-zn": f"{as_float(ch['z_N']):.2f}",
            "c-za": f"{as_float(ch['z_a']):.2f}", "c-k": f"{as_float(ch['k']):.2f}", "c-tdet": fmt(ch["t_det"]),
            "c-false-day": fmt(ch["F"], digits=2), "c-break": fmt(ch["T_b"]), "c-spare": fmt(ch["C_sp"]),
            "c-spare-ratio": fmt(as_float(ch["C"] / ch["C_sp"]), digits=3), "r-tax": pct(ch["x"]),
            "r-hours": fmt(ch["H"]), "r-jitter": pct(ch["x_j"]), "r-steps": steps_text(ch["k_1"]),
            "c-break2": fmt(ch["T_b"]), "c-spare2": fmt(ch["C_sp"]), "c-cost2": fmt(ch["C"])}


# --- the tail and the simulation ------------------------------------------------------------------
def tail_rows(ns) -> dict:
    """E[max] - mean in sigmas: the sqrt(2 ln N) bound, Gumbel, exact (normal), exponential tail."""
    return {n: dict(leading=sg.normal_max_leading(n), gumbel=sg.normal_max_gumbel(n), exact=sg.normal_max_exact(n),
                    expo=sg.exponential_max_excess(n)) for n in sorted(set(ns))}


def tail_glue() -> dict:
    t = tail_rows((1024, CLAIM["n_ranks"]))
    tc = t[CLAIM["n_ranks"]]
    return {"t-leading": f"{tc['leading']:.3f}", "t-exact": f"{tc['exact']:.3f}", "t-gumbel": f"{tc['gumbel']:.3f}",
            "t-expo": f"{tc['expo']:.2f}", "t-claim-n": fmt(q(CLAIM["n_ranks"], "GPU")),
            "t-small-n": fmt(q(1024, "GPU")), "t-small-exact": f"{t[1024]['exact']:.2f}"}


SIM_SEEDS = (20261130, 20261131, 20261132, 20261133)   # the check runs on each, and holds on each


def simulate_against_exact(ch: Chain, seeds=SIM_SEEDS) -> list[tuple]:
    """Seeded Monte-Carlo of the step (max over ranks), with and without the throttled rank, against the
    integrals, once per seed: (case, seed, exact, simulated mean, standard error, steps)."""
    n, j, s = int(as_float(ch["N"], "GPU")), as_float(ch["j"]), as_float(ch["s"])
    steps = int(min(300, max(30, 5_000_000 // n)))   # bounded work for a reader's large N
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        plain = sg.simulate_step_times(n, steps, 1.0, j, rng=rng)
        slow = sg.simulate_step_times(n, steps, 1.0, j, rng=rng, slow={0: s})
        for name, sim, exact in (("jitter only", plain, 1 + as_float(ch["x_j"])),
                                 ("jitter + one throttled rank", slow, as_float(ch["m_s"]))):
            rows.append((name, seed, exact, float(sim.mean()), float(sim.std(ddof=1) / math.sqrt(steps)), steps))
    return rows


# --- the claims -----------------------------------------------------------------------------------
def claim_chain() -> Chain:
    return straggler_chain(**CLAIM_INPUTS, source="the claim")


def one_step_threshold() -> dict:
    """Solve s/(1-s) = (z_a + z_b/(1-s)) j for s: the smallest throttle found in one step."""
    import sympy as sp
    s, z_a, z_b, j = sp.symbols("s z_a z_b j", positive=True)
    expr = sp.solve(sp.Eq(s / (1 - s), z_a * j + z_b * j / (1 - s)), s)[0]
    za = sg.detection_threshold(CLAIM["n_ranks"], CLAIM_INPUTS["false_alarm_rate"])
    zb = sg._STD.inv_cdf(DETECT_P)
    at = {jj: float(expr.subs({z_a: za, z_b: zb, j: jj})) for jj in (0.01, 0.03)}
    return dict(expr=sp.simplify(expr), s_one=at[CLAIM_INPUTS["jitter_fraction"]], at=at)


def claims() -> list[Claim]:
    cc = claim_chain()
    others = as_float(cc["N"] - cc["n_1"], "GPU")
    tax_ok = others == CLAIM["others_taxed"] and math.isclose(as_float(cc["I"], "GPU*s"), others * as_float(cc["d"], "s"),
                                                              rel_tol=1e-12)
    k1 = sg.steps_to_detect(0.10, 0.01, CLAIM["n_ranks"], 1e-5, DETECT_P)
    thr = one_step_threshold()
    small = sg.steps_to_detect(0.02, 0.01, CLAIM["n_ranks"], 1e-5, DETECT_P)
    return [
        Claim("tax", quote=QUOTES["tax"], source="spec/001, paragraph on stragglers",
              claimed=f"{CLAIM['others_taxed']:,} GPUs taxed",
              derived=f"{CLAIM['others_taxed']:,} GPUs wait {pct(cc['f'])} of each step (the step grows by "
                      f"{pct(cc['x'])} over a healthy one) for a rank {pct(cc['s'])} slow: {fmt(cc['H'])} a day",
              verdict=HOLDS if tax_ok else WRONG,
              nearest_true="" if tax_ok else f"{fmt(cc['N'] - cc['n_1'])} wait",
              reason=f"the step is the maximum over ranks, so the N - n healthy ranks ({fmt(cc['N'] - cc['n_1'])}) "
                     f"wait for the throttled one every step, {pct(cc['f'])} of the step it sets; with jitter the "
                     "throttle adds less on top of a step the tail already set"),
        Claim("one-step", quote=QUOTES["one_step"], source="spec/001, paragraph on stragglers",
              claimed="the rank found in one step",
              derived=f"the book's figure: one step for a throttle above {pct(thr['s_one'])} at its assumed "
                      f"{pct(CLAIM_INPUTS['jitter_fraction'])} jitter; {small} steps for a {pct(0.02)} throttle",
              verdict=UNCHECKABLE,
              reason=f"Whether one step of per-rank compute timings finds the rank depends on the throttle against "
                     f"the per-rank noise, and the source gives neither (nor does any public source give the "
                     f"noise), so it cannot be checked; at this book's assumed "
                     f"{pct(CLAIM_INPUTS['jitter_fraction'])} jitter one step finds a throttle above "
                     f"{pct(thr['s_one'])} ({steps_text(q(k1, ''))} for the book's {pct(CLAIM_INPUTS['throttle_fraction'])}), "
                     f"and a {pct(0.02)} throttle needs {small} steps.")]


PLANTED_SEEDS = (7, 8, 9)


def planted_rank_found(trials: int, seed: int = 7) -> int:
    """In how many of `trials` seeded one-step trials the detector finds a rank planted 10% slow at a random place."""
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(trials):
        r = int(rng.integers(CLAIM["n_ranks"]))
        one = sg.simulate_rank_times(CLAIM["n_ranks"], 1, 6.2, 0.01, rng=rng, slow={r: 0.10})
        found += r in sg.detect_slow_ranks(one, 1e-5)
    return found


@memoised
def checks() -> dict:
    """The check section: the no-jitter simulation of the tax, the planted-rank detector, the thresholds."""
    import sympy as sp
    cc = claim_chain()
    no_jitter = sg.simulate_rank_times(CLAIM["n_ranks"], 1, 6.2, 0.0, rng=np.random.default_rng(1), slow={123: 0.10})
    waits = sg.step_time(no_jitter)[0] - no_jitter[0]
    trials = 100
    found_by_seed = {sd: planted_rank_found(trials, sd) for sd in PLANTED_SEEDS}
    found = min(found_by_seed.values())
    p_one = sg.detection_probability(1, 0.10, 0.01, CLAIM["n_ranks"], 1e-5)
    thr = one_step_threshold()
    small = sg.steps_to_detect(0.02, 0.01, CLAIM["n_ranks"], 1e-5, DETECT_P)
    z = as_float(cc["z_N"])
    return dict(
        chain=cc, waiting=int((waits > 0).sum()), idle_over_delay=sg.idle_time(no_jitter)[0] / as_float(cc["d"], "s"),
        found=found, found_by_seed=found_by_seed, trials=trials, p_one=p_one, z=z, thr=thr, small=small,
        glue={"k-n": fmt(q(CLAIM["n_ranks"], "GPU")), "k-others": f"{CLAIM['others_taxed']:,}",
              "k-tax": pct(cc["x"]), "k-wait": pct(cc["f"]), "k-hours": fmt(cc["H"]), "k-usd": fmt(cc["C"]),
              "k-z": f"{z:.2f}", "k-found": f"at least {found} of {trials} trials on each of {len(PLANTED_SEEDS)} seeds",
              "k-p-one": pct(p_one),
              "k-s-one": pct(thr["s_one"]), "k-small": f"{small} steps",
              "k-small-time": fmt(q(small * 6.2 / 0.98, "s")), "k-s-one-expr": f"${sp.latex(thr['expr'])}$"})


# --- what changes the answer, and the exercises ---------------------------------------------------
COMM_SHARE = 0.2   # an illustration: a fifth of the step in communication that the throttle does not slow


def what_changes(p, ch: Chain) -> dict:
    return {"w-s5": pct(sg.throttle_tax(0.05)), "w-s33": pct(sg.throttle_tax(1 - 1 / SINHA["outlier"])),
            "w-j3": pct(0.03 * as_float(ch["z_N"])), "w-j3-val": pct(0.03),
            "w-expo": pct(p.jitter_fraction * sg.exponential_max_excess(p.n_ranks)), "w-comm": pct(COMM_SHARE),
            "w-comm-tax": pct((1 - COMM_SHARE) * as_float(ch["x"]))}


def figure_data(p) -> dict:
    ns = np.unique(np.logspace(0, np.log10(262144), 22).round().astype(int))
    ns = ns[ns >= 2]
    rng = np.random.default_rng(2)
    mc_ns = [4, 64, 1024, 16384]
    mc_plain = [sg.simulate_step_times(n, 100, 1.0, p.jitter_fraction, rng=rng).mean() for n in mc_ns]
    mc_slow = [sg.simulate_step_times(n, 100, 1.0, p.jitter_fraction, rng=rng, slow={0: p.throttle_fraction}).mean()
               for n in mc_ns]
    slow_grid = np.linspace(0.005, 0.2, 60)
    detect = {n: [sg.steps_to_detect(s, p.jitter_fraction, n, p.false_alarm_rate, DETECT_P) for s in slow_grid]
              for n in (1024, p.n_ranks, 262144)}
    return dict(ns=ns, bound=1 + p.jitter_fraction * np.sqrt(2 * np.log(ns)),
                exact=1 + p.jitter_fraction * np.array([sg.normal_max_exact(n, points=20001) for n in ns]),
                expo=1 + p.jitter_fraction * np.array([sg.exponential_max_excess(n) for n in ns]),
                throttled=np.array([sg.throttled_step(n, p.jitter_fraction, p.throttle_fraction, points=20001) for n in ns]),
                mc_ns=mc_ns, mc_plain=mc_plain, mc_slow=mc_slow, slow_grid=slow_grid, detect=detect)


def exercises(p, ch: Chain) -> dict:
    """Worked answers on the claim's inputs."""
    s_out = 1 - 1 / SINHA["outlier"]
    e1 = straggler_chain(**{**CLAIM_INPUTS, "throttle_fraction": s_out}, source="exercise 1")
    thr = one_step_threshold()
    big, little = CLAIM["n_ranks"], 1024
    return {"e1-outlier": f"{SINHA['outlier']:g}x", "e1-n": fmt(q(CLAIM["n_ranks"], "GPU")), "e1-price": fmt(e1["p"]),
            "e1-speed": pct(1 / SINHA["outlier"]), "e1-s": pct(s_out), "e1-tax": pct(e1["x"]), "e1-hours": fmt(e1["H"]),
            "e1-usd": fmt(e1["C"]), "e1-steps": steps_text(e1["k_1"]), "e2-n": fmt(q(CLAIM["n_ranks"], "GPU")),
            "e2-alpha": f"{1e-5:g}", "e2-p": pct(DETECT_P), "e2-j1": pct(0.01), "e2-j3": pct(0.03),
            "e2-s1": pct(thr["at"][0.01]), "e2-s3": pct(thr["at"][0.03]), "e3-big": fmt(q(big, "GPU")),
            "e3-small": fmt(q(little, "GPU")), "e3-j": pct(0.01), "e3-tax-big": pct(0.01 * sg.normal_max_exact(big)),
            "e3-tax-small": pct(0.01 * sg.normal_max_exact(little)),
            "e3-keep": pct(sg.normal_max_exact(little) / sg.normal_max_exact(big))}


SPEC = Spec("straggler-tax", PARAMETERS, RESULTS, compute, validate=validate)
