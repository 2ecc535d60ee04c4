"""Failures and checkpoints: interruptions from a failure rate, the optimal checkpoint interval, goodput.

A job on N GPUs that each interrupt at a rate r_f (per GPU-day) stops every M = 1/(r_f N). Checkpoint
every tau of training, each write pausing the job for delta; a failure (a share f_u of interruptions;
planned ones are taken just after a checkpoint) throws away on average tau/2 of work, and every
interruption costs a restart t_r. To first order in the small ratios the share of wall-clock time lost is

    delta/tau + tau/(2 M_u) + t_r/M,

and setting its derivative to zero gives Young's interval tau* = sqrt(2 delta M_u) (Young 1974), at which
the checkpoint cost and the expected rework are equal. Daly (2006) gives the higher-order optimum; the
exact expectation for exponentially distributed failures is here too, to check both against.

Chapters: frontier-run-400b, training-goodput-hangs.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sympy as sp

TAU_FORMULA = "sqrt(2*delta*M_u)"
# Where the failure inputs of the training chains come from (frontier-run-400b, training-goodput-hangs):
# one place for each, so the two chapters cite Llama 3's interruption record the same way.
LLAMA3_INTERRUPTIONS_SOURCE = "Llama 3 paper sec. 3.3.4: 466 in 54 days on 16,384 H100s"
LLAMA3_UNPLANNED_SOURCE = "Llama 3 paper sec. 3.3.4: 419 of 466 unexpected"
# The two as the chains' defaults take them: plain literals, three figures of 466 / (54 x 16,384) and 419 / 466
# (tests/training/test_failures.py holds them to the counts).
LLAMA3_INTERRUPTIONS_PER_GPU_DAY = 5.27e-4
LLAMA3_UNPLANNED_FRACTION = 0.90
RESTART_SOURCE = "this book's assumption; FlashRecovery (arXiv:2509.03047) reports 150 s on 4,800 devices"

GOODPUT_FORMULA = "1 - delta/tau - tau/(2*M_u) - t_r/M"
GOODPUT_OPT_FORMULA = "1 - sqrt(2*delta/M_u) - t_r/M"


@lru_cache(maxsize=None)
def symbols() -> dict:
    import sympy as sp
    return dict(zip(("tau", "delta", "M_u", "M", "t_r"), sp.symbols("tau delta M_u M t_r", positive=True)))


@lru_cache(maxsize=None)
def young_derivation() -> dict[str, sp.Expr]:
    """The optimum derived with sympy: {'lost', 'goodput', 'dG', 'tau_opt', 'goodput_opt', 't_r_for'}.
    t_r_for solves G(tau*) = G for the restart time (the largest restart a reported goodput allows)."""
    import sympy as sp
    s = symbols()
    tau, delta, M_u, M, t_r = (s[k] for k in ("tau", "delta", "M_u", "M", "t_r"))
    lost = delta / tau + tau / (2 * M_u) + t_r / M
    goodput = 1 - lost
    dG = sp.diff(goodput, tau)
    (tau_opt,) = sp.solve(sp.Eq(dG, 0), tau)
    if not sp.diff(goodput, tau, 2).subs(tau, tau_opt).is_negative:
        raise AssertionError("the stationary point is not a maximum of goodput")
    goodput_opt = sp.simplify(goodput.subs(tau, tau_opt))
    t_r_for = sp.solve(sp.Eq(sp.Symbol("G"), goodput_opt), t_r)[0]
    return dict(lost=lost, goodput=goodput, dG=dG, tau_opt=tau_opt, goodput_opt=goodput_opt, t_r_for=t_r_for)


def formulas_agree() -> bool:
    """The chain's closed forms (as a reader writes them) equal sympy's derivation."""
    import sympy as sp
    d, s = young_derivation(), symbols()
    return all(sp.simplify(sp.sympify(text, locals=s) - d[key]) == 0 for text, key in
               ((TAU_FORMULA, "tau_opt"), (GOODPUT_FORMULA, "goodput"), (GOODPUT_OPT_FORMULA, "goodput_opt")))


def latex(text: str) -> str:
    import sympy as sp
    return sp.latex(sp.sympify(text, locals=symbols(), evaluate=False), order="none")


def derivation_latex() -> str:
    """One display-math line: G(tau), its derivative set to zero, tau* and G(tau*)."""
    import sympy as sp
    d = young_derivation()
    return (f"G(\\tau) = {latex(GOODPUT_FORMULA)}, \\qquad \\frac{{dG}}{{d\\tau}} = {sp.latex(d['dG'])} = 0 "
            f"\\;\\Rightarrow\\; \\tau^* = {latex(TAU_FORMULA)}, \\qquad G(\\tau^*) = {latex(GOODPUT_OPT_FORMULA)}")


# --- numbers (plain floats in consistent units, or arrays) ---------------------------------------
def interruptions(rate_per_gpu_day, gpus, days):
    """Expected interruptions: a rate per GPU-day times GPU-days."""
    return rate_per_gpu_day * gpus * days


def job_mtbi(rate_per_gpu_day, gpus):
    """The job's mean time between interruptions, in days: 1/(r_f N)."""
    return 1 / (rate_per_gpu_day * gpus)


def young_interval(delta, mtbf):
    """Young's first-order optimal checkpoint interval, sqrt(2 delta M), in the units of its inputs."""
    import numpy as np  # arrays of intervals too; the chains' closed forms need no numpy
    return np.sqrt(2 * delta * mtbf)


def daly_interval(delta, mtbf):
    """Daly's higher-order optimum (2006): sqrt(2 delta M) [1 + sqrt(delta/(2M))/3 + delta/(18 M)] - delta
    for delta < 2M, else M."""
    if delta >= 2 * mtbf:
        return mtbf
    x = delta / (2 * mtbf)
    import numpy as np
    return np.sqrt(2 * delta * mtbf) * (1 + np.sqrt(x) / 3 + x / 9) - delta


def goodput(tau, delta, mtbf_failures, restart, mtbi):
    """First-order goodput at interval tau: 1 - delta/tau - tau/(2 M_u) - t_r/M (may be negative)."""
    return 1 - delta / tau - tau / (2 * mtbf_failures) - restart / mtbi


def goodput_at_optimum(delta, mtbf_failures, restart, mtbi):
    import numpy as np
    return 1 - np.sqrt(2 * delta / mtbf_failures) - restart / mtbi


def lost_shares(tau, delta, mtbf_failures, restart, mtbi) -> dict[str, float]:
    """Where the wall-clock time goes: checkpoint writes, rework after failures, restarts."""
    return {"checkpoint writes": delta / tau, "rework after failures": tau / (2 * mtbf_failures),
            "restarts": restart / mtbi}


def goodput_exact(tau, delta, mtbf, restart):
    """The exact expectation for exponentially distributed failures (failures only): each segment of tau of
    work plus delta of writing is retried until it survives, and every failure also costs the restart:
    G = tau / (M e^(t_r/M) (e^((tau+delta)/M) - 1))."""
    import numpy as np
    tau = np.asarray(tau, dtype=float)
    return tau / (mtbf * np.exp(restart / mtbf) * np.expm1((tau + delta) / mtbf))


def optimum_exact(delta, mtbf, restart, *, lo=None, hi=None, n=20001) -> tuple[float, float]:
    """(tau, goodput) maximising goodput_exact on a log grid (deterministic)."""
    lo = lo or delta / 100
    hi = hi or 10 * mtbf
    import numpy as np
    taus = np.logspace(np.log10(lo), np.log10(hi), n)
    g = goodput_exact(taus, delta, mtbf, restart)
    i = int(np.argmax(g))
    return float(taus[i]), float(g[i])
