"""Money: what owning a GPU costs over a period, and the utilisation at which that beats renting.

One GPU's owned cost over a period of T years (H = T x 8,766 hours) is

    C_own = C_cap (1 - f_res) + P PUE p_e H + c_ops T

(capex, less what it resells for at the end; power at the meter for every hour; operations), so the owned
cost per GPU-hour at full use is c_full = C_own / H, and against a rental rate r the break-even
utilisation is u_be = C_own / (r H) = c_full / r: own when the GPU is busy more than u_be of the hours,
rent when less. u_be above one means renting is cheaper at every utilisation.

Plain-float functions for second routes and sweeps; `ownership_steps` adds the same arithmetic to a
utils.chain.Chain (with units) for a chapter's table; `breakeven_closed_form` is the sympy expression
the elasticities are differentiated from. Used by buy-vs-rent and the fleet chapters that price GPUs.

Chapters: buy-vs-rent, playground-abuse.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sympy as sp

HOURS_PER_YEAR = 365.25 * 24   # 8,766 h: pint's year (a Julian year), the one the chains use


def _check(**values) -> None:
    for name, v in values.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v!r}")


def period_hours(years: float) -> float:
    """Hours in a period of `years` (Julian years of 8,766 hours)."""
    _check(years=years)
    return years * HOURS_PER_YEAR


def power_cost(kw: float, pue: float, usd_per_kwh: float, hours: float) -> float:
    """USD for drawing `kw` at the IT side for `hours`, with the facility's PUE on top."""
    _check(kw=kw, pue=pue, usd_per_kwh=usd_per_kwh, hours=hours)
    if pue < 1:
        raise ValueError(f"pue must be >= 1, got {pue!r}")
    return kw * pue * hours * usd_per_kwh


def residual_value(capex: float, fraction: float) -> float:
    """What the hardware resells for at the end of the period."""
    _check(capex=capex, fraction=fraction)
    if fraction > 1:
        raise ValueError(f"fraction must be <= 1, got {fraction!r}")
    return capex * fraction


def amortised_capex_per_hour(capex: float, residual_fraction: float, hours: float) -> float:
    """Straight-line amortisation: the capex net of its resale value, spread over the period's hours."""
    if hours <= 0:
        raise ValueError(f"hours must be > 0, got {hours!r}")
    return (capex - residual_value(capex, residual_fraction)) / hours


def owned_cost(capex: float, years: float, kw: float, pue: float, usd_per_kwh: float,
               ops_per_year: float, residual_fraction: float) -> dict:
    """The owned cost of one GPU over `years`, by line (USD), with the period's hours."""
    h = period_hours(years)
    _check(ops_per_year=ops_per_year)
    lines = dict(capex=float(capex), power=power_cost(kw, pue, usd_per_kwh, h), ops=ops_per_year * years,
                 residual=residual_value(capex, residual_fraction))
    return {**lines, "total": lines["capex"] + lines["power"] + lines["ops"] - lines["residual"], "hours": h}


def cost_per_gpu_hour(total: float, hours: float, utilization: float = 1.0) -> float:
    """Owned cost per GPU-hour actually used: a GPU busy a fraction u of the hours costs 1/u more per hour."""
    if hours <= 0 or not 0 < utilization <= 1:
        raise ValueError(f"hours must be > 0 and utilization in (0, 1], got {hours!r}, {utilization!r}")
    return total / (hours * utilization)


def breakeven_utilization(owned_total: float, rent_per_hour: float, hours: float) -> float:
    """The utilisation at which renting the busy hours costs what owning costs: C_own / (r H)."""
    if rent_per_hour <= 0 or hours <= 0:
        raise ValueError(f"rent_per_hour and hours must be > 0, got {rent_per_hour!r}, {hours!r}")
    return owned_total / (rent_per_hour * hours)


def breakeven_rent(owned_total: float, hours: float, utilization: float = 1.0) -> float:
    """The rental rate at which owning breaks even at `utilization`: C_own / (u H)."""
    return cost_per_gpu_hour(owned_total, hours, utilization)


# --- symbolic form, for elasticities and solving for any input -------------------------------------
@lru_cache(maxsize=1)
def symbols() -> dict:
    """{input name: sympy symbol} (sympy is imported only when the symbolic form is asked for)."""
    import sympy as sp
    return dict(zip(("gpu_capex", "residual_fraction", "power_kw_per_gpu", "pue", "usd_per_kwh",
                     "ops_usd_per_gpu_year", "rent_usd_per_gpu_hour", "hours"),
                    sp.symbols("C_cap f_res P PUE p_e c_ops r H", positive=True)))


def breakeven_closed_form() -> sp.Expr:
    """u_be = (C_cap (1 - f_res) + (P PUE p_e + c_ops / 8766 h) H) / (r H), in symbols()."""
    import sympy as sp
    s = symbols()
    return ((s["gpu_capex"] * (1 - s["residual_fraction"])
             + (s["power_kw_per_gpu"] * s["pue"] * s["usd_per_kwh"]
                + s["ops_usd_per_gpu_year"] / sp.Float(HOURS_PER_YEAR)) * s["hours"])
            / (s["rent_usd_per_gpu_hour"] * s["hours"]))


def elasticities(point: dict) -> dict:
    """d ln u_be / d ln x for each input (the hours excepted), at `point` {input name: value}."""
    import sympy as sp
    u = breakeven_closed_form()
    subs = {symbols()[k]: v for k, v in point.items()}
    return {k: float((sp.diff(u, s) * s / u).subs(subs)) for k, s in symbols().items() if k != "hours"}


def solve_breakeven_for(name: str, point: dict, u: float = 1.0) -> float:
    """The value of input `name` that puts the break-even at `u`, the others at `point`."""
    import sympy as sp
    target = symbols()[name]
    (root,) = sp.solve(sp.Eq(breakeven_closed_form(), u), target)
    return float(root.subs({symbols()[k]: v for k, v in point.items() if k != name}))


# --- the same arithmetic as chain steps (units checked by pint) ----------------------------------
def ownership_steps(ch):
    """Add the owned cost and the break-even to a Chain that holds the givens C_cap (USD/GPU), T (a
    period), P (kW/GPU), PUE, p_e (USD/kWh), c_ops (USD/GPU/year), f_res and r (USD/GPU/hour).
    Returns u_be."""
    ch.step("H", "T", "hour", "hours in the period")
    ch.step("E_w", "P*PUE*T", "kWh/GPU", "energy at the meter, full draw all period")
    ch.step("C_pow", "E_w*p_e", "USD/GPU", "power cost")
    ch.step("C_ops", "c_ops*T", "USD/GPU", "operations cost")
    ch.step("C_res", "f_res*C_cap", "USD/GPU", "resale value at the end")
    ch.step("C_own", "C_cap + C_pow + C_ops - C_res", "USD/GPU", "owned cost over the period")
    ch.step("c_full", "C_own/H", "USD/GPU/hour", "owned cost per GPU-hour at full use")
    ch.step("C_rent", "r*H", "USD/GPU", "renting every hour of the period")
    return ch.solve("u_be", "r*u_be*H = C_own", "", "break-even utilisation")
