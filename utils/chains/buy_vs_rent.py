"""buy-vs-rent: the utilisation above which owning an H100 costs less than renting it.

Owned cost over the period = capex - resale value + power at full draw for every hour (times the PUE and
the price of electricity) + operations; renting costs r u H. The break-even u_be = C_own / (r H) is the
owned cost per GPU-hour at full use over the rental rate (utils.fleet.money). Every default is a catalog price
(utils/catalog/prices.toml) with its source and the date it was read.
"""
from __future__ import annotations

import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.fleet import money
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import READING, Claim, rounds_to

# parameter -> (catalog price entry, field, unit): the catalog is where every default comes from
CATALOG = {
    "gpu_capex": ("h100-server", "capex_per_gpu", "USD/GPU"),
    "power_kw_per_gpu": ("h100-server", "power_per_gpu", "kW/GPU"),
    "pue": ("datacenter", "pue", ""),
    "usd_per_kwh": ("electricity", "virginia_commercial", "USD/kWh"),
    "ops_usd_per_gpu_year": ("datacenter", "ops_per_gpu_year", "USD/GPU/year"),
    "residual_fraction": ("h100-server", "residual_fraction_2y", ""),
    "rent_usd_per_gpu_hour": ("h100-rental", "lambda_on_demand", "USD/GPU/hour"),
}
_CAT = "catalog (utils/catalog/prices.toml): "

PARAMETERS = (
    Param("gpu_capex", 50000.0, "USD per GPU: its share of the server, network and install", unit="USD/GPU",
          source=_CAT + "h100-server.capex_per_gpu"),
    Param("years", 2.0, "years owned: the period compared", unit="year", source="the claim (two years)"),
    Param("power_kw_per_gpu", 1.275, "kW per GPU at full draw: the server's share, not just the GPU's 700 W",
          unit="kW/GPU", source=_CAT + "h100-server.power_per_gpu"),
    Param("pue", 1.58, "power usage effectiveness: facility power over IT power, at least 1",
          source=_CAT + "datacenter.pue"),
    Param("usd_per_kwh", 0.0895, "USD per kWh", unit="USD/kWh", check="non_negative",
          source=_CAT + "electricity.virginia_commercial"),
    Param("ops_usd_per_gpu_year", 3000.0, "USD per GPU per year: colocation, remote hands, spares, support",
          unit="USD/GPU/year", check="non_negative", source=_CAT + "datacenter.ops_per_gpu_year"),
    Param("residual_fraction", 0.3, "resale value at the end of the period, as a fraction of gpu_capex",
          check="non_negative", source=_CAT + "h100-server.residual_fraction_2y"),
    Param("rent_usd_per_gpu_hour", 3.99, "USD per GPU-hour: the rental rate compared against",
          unit="USD/GPU/hour", source=_CAT + "h100-rental.lambda_on_demand"),
)

RESULTS = (
    Result("breakeven_utilization", "", "Break-even utilisation (owned cost / renting every hour)", of="u_be",
           percent=True),
    Result("owned_cost_per_gpu", "USD/GPU", "Owned cost per GPU over the period", of="C_own"),
    Result("owned_cost_per_gpu_hour_at_full_use", "USD/GPU/hour",
           "Owned cost per GPU-hour at full use (the rate below which renting always wins)", of="c_full"),
    Result("power_cost_per_gpu", "USD/GPU", "Power cost per GPU over the period", of="C_pow"),
    Result("rent_cost_per_gpu_all_hours", "USD/GPU", "Renting one GPU for every hour of the period", of="C_rent"),
)

INPUTS = tuple(CATALOG)     # the seven priced inputs, in the parameters' order


def validate(p) -> None:
    if p.pue < 1:
        raise ParameterError(f"pue must be >= 1 (facility power over IT power), got {p.pue!r}")
    if p.residual_fraction > 1:
        raise ParameterError(f"residual_fraction must be in [0, 1], got {p.residual_fraction!r}")


def catalog_value(name: str, field: str | None = None):
    """A catalog price Value: catalog_value("pue") for a parameter's default, or (entry key, field)."""
    key, fld = (CATALOG[name][0], CATALOG[name][1]) if field is None else (name, field)
    return catalog.price(key)[fld]


def catalog_float(name: str, field: str | None = None, unit: str | None = None) -> float:
    return as_float(catalog_value(name, field).q, unit if unit is not None else CATALOG[name][2])


def input_kind(name: str) -> str:
    """The catalog default's kind: `market` for a price someone lists (a rental rate, a utility tariff)."""
    return catalog_value(name).kind


def provenance(name: str, value: float) -> tuple[str, str]:
    """(kind, source) of an input: the catalog's when the value is the catalog's, else the reader's."""
    v = catalog_value(name)
    if math.isclose(value, as_float(v.q, CATALOG[name][2]), rel_tol=1e-9):
        return input_kind(name), f"{v.source.title.split(',')[0]}, read {v.source.read}"
    return "assumption", "the reader's value (parameters cell)"


def own_or_rent(gpu_capex, years, power_kw_per_gpu, pue, usd_per_kwh, ops_usd_per_gpu_year, residual_fraction,
                rent_usd_per_gpu_hour, *, title="Buy or rent one H100") -> Chain:
    v = dict(gpu_capex=gpu_capex, power_kw_per_gpu=power_kw_per_gpu, pue=pue, usd_per_kwh=usd_per_kwh,
             ops_usd_per_gpu_year=ops_usd_per_gpu_year, residual_fraction=residual_fraction,
             rent_usd_per_gpu_hour=rent_usd_per_gpu_hour)
    ch = Chain(title)

    def given(symbol, name, label, digits=3):
        kind, source = provenance(name, v[name])
        ch.given(symbol, q(v[name], CATALOG[name][2]), label, kind=kind, source=source, digits=digits)

    given("C_cap", "gpu_capex", "capex per GPU: server, network, install")
    ch.given("T", q(years, "year"), "period owned", kind="assumption",
             source="the claim's two years" if years == CLAIM["years"] else "the reader's value")
    given("P", "power_kw_per_gpu", "power per GPU at full draw", digits=4)
    given("PUE", "pue", "facility power over IT power")
    given("p_e", "usd_per_kwh", "electricity price")
    given("c_ops", "ops_usd_per_gpu_year", "operations per GPU-year")
    given("f_res", "residual_fraction", "resale value at the end, fraction of capex")
    given("r", "rent_usd_per_gpu_hour", "rental rate")
    money.ownership_steps(ch)
    return ch


def values(p) -> dict:
    return {name: p[name] for name in ("gpu_capex", "years", *INPUTS[1:])}


def compute(p) -> Chain:
    return own_or_rent(**values(p))


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(years=2, breakeven=0.60, swing_to=1.00)
QUOTE = ("Capex plus two years of power and operations, minus what the cards are worth at the end, against a "
         "rental rate at a utilization. The chain that produces a break-even utilization, and the two inputs "
         "that swing it from 60% to over 100%.")


def typical() -> dict:
    """The claim's own inputs: the catalog's prices and the claim's two years (never the parameters cell)."""
    out = {name: catalog_float(name) for name in INPUTS}
    return {"gpu_capex": out.pop("gpu_capex"), "years": float(CLAIM["years"]), **out}


def breakeven(**changes) -> tuple[float, Chain]:
    ch = own_or_rent(**{**typical(), **changes}, title="variant")
    return as_float(ch["u_be"], ""), ch


def rate(field: str) -> float:
    return catalog_float("h100-rental", field, "USD/GPU/hour")


@memoised
def checks() -> dict:
    """The check's cases: the claim's inputs, each swing alone, and both together."""
    u_typ, typ = breakeven()
    r_contract, r_runpod = rate("contract_1y"), rate("runpod_community")
    u_nores, nores = breakeven(residual_fraction=0.0)
    out = dict(
        typ=typ, u_typ=u_typ, c_full_typ=as_float(typ["c_full"], "USD/GPU/hour"),
        r_contract=r_contract, u_contract=breakeven(rent_usd_per_gpu_hour=r_contract)[0],
        r_low=rate("contract_1y_low"), u_low=breakeven(rent_usd_per_gpu_hour=rate("contract_1y_low"))[0],
        r_runpod=r_runpod, u_runpod=breakeven(rent_usd_per_gpu_hour=r_runpod)[0],
        r_aws=rate("aws_p5_on_demand"), u_aws=breakeven(rent_usd_per_gpu_hour=rate("aws_p5_on_demand"))[0],
        u_nores=u_nores, c_full_nores=as_float(nores["c_full"], "USD/GPU/hour"),
        u_runpod_nores=breakeven(residual_fraction=0.0, rent_usd_per_gpu_hour=r_runpod)[0],
        u_both=breakeven(residual_fraction=0.0, rent_usd_per_gpu_hour=r_contract)[0],
        bom_pue=BOM_PUE, u_bom_pue=breakeven(pue=BOM_PUE)[0])
    # Second route, without pint or the chain: the same arithmetic in plain floats (utils.fleet.money).
    t = typical()
    own = money.owned_cost(t["gpu_capex"], t["years"], t["power_kw_per_gpu"], t["pue"], t["usd_per_kwh"],
                           t["ops_usd_per_gpu_year"], t["residual_fraction"])
    out["u_plain"] = money.breakeven_utilization(own["total"], t["rent_usd_per_gpu_hour"], own["hours"])
    return out


BOM_PUE = 1.2   # bill-of-materials-10k's PUE for a new AI hall (its parameters cell)


def claims() -> list[Claim]:
    c = checks()
    t = typical()
    start = rounds_to(c["u_typ"], CLAIM["breakeven"], 1)     # "60%": one figure
    rent_alone = c["u_contract"] > CLAIM["swing_to"]
    residual_alone = c["u_nores"] > CLAIM["swing_to"]
    together = c["u_both"] > CLAIM["swing_to"]
    assert start and rent_alone and together and not residual_alone   # the reading below rests on these
    return [Claim(
        "breakeven", quote=QUOTE, source="spec/001, paragraph on buying versus renting (two years, 60% to over 100%)",
        claimed=f"break-even near {pct(CLAIM['breakeven'])}; two inputs swing it over {pct(CLAIM['swing_to'])}",
        derived=(f"{pct(c['u_typ'])} at the catalog's inputs and {fmt(q(t['rent_usd_per_gpu_hour'], 'USD/GPU/hour'))} "
                 f"on-demand; {pct(c['u_contract'])} at the {fmt(q(c['r_contract'], 'USD/GPU/hour'))} one-year "
                 f"contract rate; {pct(c['u_nores'])} with no resale value"),
        verdict=READING,
        reason=(f"{pct(c['u_typ'])} needs an on-demand rental price and a resale value of "
                f"{pct(t['residual_fraction'])} of an all-in capex of {fmt(q(t['gpu_capex'], 'USD/GPU'))}; "
                f"the one-year contract rate alone pushes it to {pct(c['u_contract'])}, while no resale value "
                f"alone only lifts it to {pct(c['u_nores'])}, and the two together give {pct(c['u_both'])}."),
        reading=("'a rental rate' read as an on-demand list price, and 'the two inputs' as the rental rate and the "
                 "resale value moved together: the rate alone carries the break-even past full use, the resale "
                 "value only with a lower rate"))]


# --- figures, sensitivity and exercises -----------------------------------------------------------
RATES = ("contract_1y_low", "contract_1y", "runpod_community", "lambda_on_demand", "aws_p5_on_demand")
RATE_LABELS = {"contract_1y_low": "one-year contract, Oct 2025 low", "contract_1y": "one-year contract, Mar 2026",
               "runpod_community": "RunPod community", "lambda_on_demand": "Lambda on-demand",
               "aws_p5_on_demand": "AWS p5 on-demand"}


def residual_high() -> float:
    return as_float(catalog_value("h100-server", "residual_fraction_2y").alternatives[0].q, "")


def rate_curves(p, rates) -> dict:
    """Break-even against the rental rate, u = c_full / r, for no resale value, this run's and the high one."""
    import numpy as np
    out = {}
    for f in sorted({0.0, p.residual_fraction, residual_high()}):
        ch = own_or_rent(**{**values(p), "residual_fraction": f}, title="curve")
        out[f] = as_float(ch["c_full"], "USD/GPU/hour") / np.asarray(rates)
    return out


def named_rates() -> dict:
    return {RATE_LABELS[f]: rate(f) for f in RATES}


def sweeps(p) -> list[dict]:
    """Each input over a stated range, the others at this run's values, sorted by the largest move (last)."""
    u_be = as_float(compute(p)["u_be"], "")
    kw_lo = as_float(catalog_value("power_kw_per_gpu").alternatives[0].q, "kW/GPU")
    ranges = [
        ("rental rate, USD/GPU-h", "rent_usd_per_gpu_hour", rate("contract_1y"), rate("aws_p5_on_demand"),
         "contract to AWS on-demand"),
        ("resale value, fraction of capex", "residual_fraction", 0.0, residual_high(), "none to a used card's price"),
        ("capex, USD/GPU", "gpu_capex", 0.8 * p.gpu_capex, 1.2 * p.gpu_capex, "this book's band: 20% either way"),
        ("electricity, USD/kWh", "usd_per_kwh", catalog_float("electricity", "north_dakota_commercial", "USD/kWh"),
         catalog_float("electricity", "california_commercial", "USD/kWh"), "North Dakota to California, commercial"),
        ("operations, USD/GPU-year", "ops_usd_per_gpu_year", 0.5 * p.ops_usd_per_gpu_year,
         2 * p.ops_usd_per_gpu_year, "this book's band: half to double"),
        ("PUE", "pue", 1.1, 1.8, "this book's band: new AI hall to old room"),
        ("power, kW/GPU", "power_kw_per_gpu", kw_lo, p.power_kw_per_gpu, "typical draw to maximum"),
    ]
    bars = []
    for label, name, lo, hi, why in ranges:
        u_lo, u_hi = (as_float(own_or_rent(**{**values(p), name: x}, title="sweep")["u_be"], "") for x in (lo, hi))
        bars.append(dict(label=label, name=name, lo=lo, hi=hi, u_lo=u_lo, u_hi=u_hi, why=why,
                         move=max(abs(u_lo - u_be), abs(u_hi - u_be)),
                         crosses=any((x > 1) != (u_be > 1) for x in (u_lo, u_hi))))
    return sorted(bars, key=lambda b: b["move"])


def point(p) -> dict:
    return {**{name: p[name] for name in INPUTS}, "hours": money.period_hours(p.years)}


def elasticities(p) -> dict:
    """Elasticity of the break-even to each input, at this run's inputs (sympy, utils.fleet.money)."""
    names = {"rent_usd_per_gpu_hour": "rental rate", "gpu_capex": "capex", "residual_fraction": "resale value",
             "ops_usd_per_gpu_year": "operations", "usd_per_kwh": "electricity price", "pue": "PUE",
             "power_kw_per_gpu": "power per GPU"}
    el = money.elasticities(point(p))
    return {names[k]: el[k] for k in names}


EX2_U = 0.80
EX3 = dict(years=3.0, residual_fraction=0.15)   # this book's guess for a three-year-old card


def exercises(p, ch: Chain) -> dict:
    c, t = checks(), typical()
    pt = {**{k: t[k] for k in INPUTS}, "hours": money.period_hours(t["years"])}
    ex2 = money.solve_breakeven_for("rent_usd_per_gpu_hour", pt, EX2_U)
    u3, ch3 = breakeven(**EX3)
    u3c, _ = breakeven(**EX3, rent_usd_per_gpu_hour=c["r_contract"])
    ex4 = money.solve_breakeven_for("residual_fraction", {**pt, "rent_usd_per_gpu_hour": c["r_contract"]}, 1.0)
    return {"ex2-u": pct(EX2_U), "ex2-rate": fmt(q(ex2, "USD/GPU/hour")), "ex3-years": f"{EX3['years']:g} years",
            "ex3-res": pct(EX3["residual_fraction"]), "ex3-u": pct(u3), "ex3-u-contract": pct(u3c),
            "ex3-cfull": fmt(ch3["c_full"]), "ex4-f": pct(ex4), "ex4-usd": fmt(q(ex4 * t["gpu_capex"], "USD/GPU")),
            "ex4-hi": pct(residual_high())}


# --- the prose's numbers (formatted here, glued by the page) ---------------------------------------
def per_gpu_year(x) -> str:
    """pint's symbol for a year is "a" (annum); prose says it in words."""
    return f"{fmt(as_float(x, 'USD/GPU/year'))} USD per GPU-year"


def meaning(ch) -> dict:
    """The intro's verdict line and the chain section's reading of the break-even, for this run."""
    u_be = as_float(ch["u_be"], "")
    if u_be <= 1:
        verdict = f"At these inputs owning is cheaper above {pct(u_be)} utilisation and renting is cheaper below it."
        text = (f"less than one: a GPU busy more than {pct(u_be)} of the {fmt(ch['H'])} costs less to own "
                f"({fmt(ch['C_own'])}) than to rent for the hours it is busy, and one busy less costs more.")
    else:
        verdict = (f"At these inputs the break-even is {pct(u_be)}, above 100%: owning costs {fmt(ch['c_full'])} "
                   f"even when the GPU is busy every hour, more than the {fmt(ch['r'])} rental rate, so renting "
                   f"is cheaper at every utilisation.")
        text = (f"above one: even a GPU busy every one of the {fmt(ch['H'])} would cost more to own "
                f"({fmt(ch['C_own'])}) than to rent for all of them ({fmt(ch['C_rent'])}); no utilisation makes "
                f"owning pay, and the number says by how much the rent would have to rise.")
    return {"verdict-line": verdict, "breakeven-meaning": text}


def overheads() -> dict:
    colo = (catalog_value("datacenter", "colocation_per_kw_month").q * catalog_value("power_kw_per_gpu").q)
    return {"colo-per-gpu-year": per_gpu_year(colo.to("USD/GPU/year")),
            "dgx-list-per-gpu": fmt(catalog_value("h100-server", "capex_per_gpu").alternatives[0].q)}


def check_texts(c) -> dict:
    t = typical()
    rate_q = lambda x: fmt(q(x, "USD/GPU/hour"))
    return {**{k: pct(c[v]) for k, v in (("typ-u", "u_typ"), ("contract-u", "u_contract"), ("low-u", "u_low"),
                                          ("runpod-u", "u_runpod"), ("aws-u", "u_aws"), ("nores-u", "u_nores"),
                                          ("runpod-nores-u", "u_runpod_nores"), ("both-u", "u_both"),
                                          ("bom-pue-u", "u_bom_pue"), ("intro-nores-u", "u_nores"))},
            "typ-rent": rate_q(t["rent_usd_per_gpu_hour"]), "typ-capex": fmt(q(t["gpu_capex"], "USD/GPU")),
            "typ-res": pct(t["residual_fraction"]), "typ-pue": f"{t['pue']:.2f}", "bom-pue": f"{c['bom_pue']:.1f}",
            "intro-nores-cfull": rate_q(c["c_full_nores"]), "typ-kwh": fmt(q(t["usd_per_kwh"], "USD/kWh")),
            "typ-kw": fmt(q(t["power_kw_per_gpu"], "kW/GPU"), digits=4),
            "typ-ops": per_gpu_year(q(t["ops_usd_per_gpu_year"], "USD/GPU/year")),
            "typ-cfull": fmt(c["typ"]["c_full"]), "nores-cfull": rate_q(c["c_full_nores"]),
            "contract-rate": rate_q(c["r_contract"]), "low-rate": rate_q(c["r_low"]),
            "runpod-rate": rate_q(c["r_runpod"]), "aws-rate": rate_q(c["r_aws"])}


def case_rows(c) -> list[tuple[str, float]]:
    return [("catalog inputs, Lambda on-demand", c["u_typ"]), ("one-year contract rate (March 2026)", c["u_contract"]),
            ("one-year contract rate at its low (October 2025)", c["u_low"]), ("RunPod community rate", c["u_runpod"]),
            ("AWS p5 on-demand rate", c["u_aws"]), ("no resale value, Lambda on-demand", c["u_nores"]),
            ("no resale value, RunPod community rate", c["u_runpod_nores"]),
            ("no resale value, one-year contract", c["u_both"])]


def sweep_texts(p, bars) -> dict:
    u_be = as_float(compute(p)["u_be"], "")
    crossers = [b["label"].split(",")[0] for b in reversed(bars) if b["crosses"]]
    lead = ("the inputs whose range carries it past 100% on its own: " if u_be <= 1 else
            "this run is already past 100%; the inputs whose range brings it back below on its own: ")
    return {"tornado-widest": bars[-1]["label"].split(",")[0],
            "tornado-span": f"{100 * bars[-1]['move']:.0f} percentage points",
            "tornado-cross": lead + (" and ".join(crossers) if crossers else "none")}


def elasticity_texts(p, ch, elastic) -> dict:
    return {"power-share": pct(as_float(ch["C_pow"] / ch["C_own"], "")),
            "el-capex": f"{elastic['capex']:.2f}", "el-res": f"{elastic['resale value']:.2f}",
            "el-kwh": f"{elastic['electricity price']:.2f}", "el-ops": f"{elastic['operations']:.2f}",
            "per-tenth": f"{100 * as_float(0.1 * ch['C_cap'] / ch['C_rent'], ''):.1f}", "r-star": fmt(ch["c_full"])}


SPEC = Spec("buy-vs-rent", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
