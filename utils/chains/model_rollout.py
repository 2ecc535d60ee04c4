"""model-rollout: a new version on a share of traffic while long sessions stay on the old; the capacity
both need; session-sticky routing by version tag; the canary sized to catch a regression; the rollback
rule from the error budget.

Each version holds its own warm replicas (its weights loaded, no cold start when traffic moves), sized
from its share of the requests at the replica rate of the continuous-batching chain; rounding each up,
and a floor of replicas per version, is the rollout's extra capacity, held until the old version's
sessions drain. The canary's sample size is the normal approximation for a one-sided two-proportion
test (utils/serving/canary.py), the stable arm (1 - s)/s times larger; a seeded simulation of the same test at
that size checks its power. The error budget converts the regression into minutes of budget per hour,
which is the rollback rule's argument: the test decides, and every hour spent arguing costs that much.
"""
from __future__ import annotations

import numpy as np

from utils.chain import Chain, as_float, memoised
from utils.chains.token_rate_limits import replica_rate
from utils.params import Param, ParameterError, Result, Spec
from utils.serving.canary import VersionRouter, budget_minutes, canary_sample_size, simulated_power, z
from utils.units import duration, fmt, num, pct, q
from utils.verdicts import UNCHECKABLE, Claim

SIMULATION = "the canary test's power: seeded binomial draws of both arms' failures at the closed-form sample size"

PARAMETERS = (
    Param("model", "llama-3-70b", "the model both versions are built on: a catalog key or a config.json path",
          check="model", source="catalog: Llama-3-70B, the continuous-batching chapter's model"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel)", unit="GPU",
          check="whole", source="this book's assumption: one 8-GPU node per replica"),
    Param("mean_prompt_tokens", 1024, "mean prompt per request", unit="token", check="whole",
          source="this book's assumption (the continuous-batching chapter's workload)"),
    Param("mean_output_tokens", 512, "o: mean reply per request", unit="token", check="whole",
          source="this book's assumption (the continuous-batching chapter's workload)"),
    Param("requests_per_s", 2000.0, "lambda: the model's requests per second", unit="request/s",
          source="this book's assumption (about the token-rate-limits fleet at its mean request)"),
    Param("utilization", 0.8, "u: share of a replica's rate each version is sized to", check="fraction",
          source="this book's assumption: headroom for bursts"),
    Param("canary_share", 0.05, "s: share of new sessions routed to the new version", check="fraction",
          source="spec/003: 'a new model version to 5% of traffic'"),
    Param("min_replicas", 2, "m: warm replicas each version keeps, however small its share", check="whole",
          source="this book's assumption: one replica may fail without the version going dark"),
    Param("session_minutes", 30.0, "tau: mean session length (exponentially distributed)", unit="min",
          source="this book's assumption: a long chat or agent session"),
    Param("slo", 0.999, "SLO: share of requests that must succeed", check="fraction",
          source="this book's assumption: three nines"),
    Param("baseline_failure", 0.0005, "p0: the stable version's failed-request rate", check="fraction",
          source="this book's assumption: half the budget spent in normal operation"),
    Param("regression", 0.01, "delta: the rise in the failed-request rate the canary must catch (absolute)",
          check="fraction", source="the claim's one percent, read as one percentage point"),
    Param("alpha", 0.05, "significance: the false rollbacks a good release may suffer", check="fraction",
          source="this book's assumption: the usual five percent"),
    Param("power", 0.8, "power: the share of such regressions the canary catches", check="fraction",
          source="this book's assumption: the usual eighty percent"),
    Param("period_days", 30.0, "the error budget's period", unit="day", source="this book's assumption: a month"),
    Param("seed", 0, "seed of the power simulation", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("replica_requests_per_s", "request/s", "Requests per second one replica serves", of="lambda_r"),
    Result("replicas_one_version", "", "Replicas for one version alone", of="R"),
    Result("replicas_new", "", "Replicas of the new version at its share", of="R_new"),
    Result("replicas_old", "", "Replicas of the old version", of="R_old"),
    Result("extra_replicas", "", "Extra replicas the rollout holds", of="E"),
    Result("replicas_at_cutover", "", "Replicas at the cutover, both versions warm", of="R_cut"),
    Result("drain_replica_hours", "hour", "Old replica-hours spent draining its sessions", of="H_d"),
    Result("drain_time", "min", "Time for 99% of the old version's sessions to end", of="t_99"),
    Result("canary_requests", "request", "Canary requests the test needs", of="n_c"),
    Result("time_to_detect", "min", "Time for the canary to collect them", of="t_d"),
    Result("simulated_power", "", "Power of the test at that size (simulated)", of="pi_sim", percent=True),
    Result("budget_minutes", "min", "Error budget over the period", of="B"),
    Result("burn_rate", "", "Burn rate at the regression", of="b"),
    Result("budget_burned_per_hour", "min", "Budget burned per hour at full rollout of the regression", of="m_h"),
    Result("budget_burned_by_canary", "min", "Budget the canary burns before the test decides", of="m_c"),
)


def validate(p):
    if p.baseline_failure + p.regression >= 1:
        raise ParameterError(f"baseline_failure + regression must stay below 1, got "
                             f"{p.baseline_failure + p.regression:g}")
    if p.canary_share >= 1:
        raise ParameterError("canary_share must be below 1: a canary needs a stable arm to compare with")
    if p.alpha >= 1:
        raise ParameterError("alpha must be below 1: a significance of 1 rolls every release back untested")
    if p.power >= 1:
        raise ParameterError("power must be below 1: catching every regression needs infinitely many canary requests")
    if p.power <= p.alpha:
        raise ParameterError(f"power must exceed alpha ({p.alpha:g}), got {p.power:g}: a test that catches a regression "
                             "no more often than it rolls back a good release tests nothing")
    if p.power <= (floor := zero_size_power(p)):
        raise ParameterError(f"power={p.power:g} is below the {pct(floor)} the normal approximation gives with no "
                             "canary requests at all, so it sizes no canary: ask for more power")


def zero_size_power(p) -> float:
    """The power the sample size's normal approximation reaches as the canary shrinks to nothing: below it the
    formula's root, z_a sigma_0 + z_b sigma_1, turns negative and its square sizes nothing."""
    from statistics import NormalDist
    p0, p1, k = p.baseline_failure, p.baseline_failure + p.regression, (1 - p.canary_share) / p.canary_share
    pb = (p1 + k * p0) / (1 + k)
    s0, s1 = (pb * (1 - pb) * (1 + 1 / k)) ** 0.5, (p1 * (1 - p1) + p0 * (1 - p0) / k) ** 0.5
    return NormalDist().cdf(-z(1 - p.alpha) * s0 / s1)


def rollout_chain(X, o, lambda_0, u, s, m, tau, slo, p0, delta, alpha, power, period, seed,
                  *, source="parameters cell") -> Chain:
    """`source`: one text for every parameter's row, or a function of the parameter's name (SPEC.source)."""
    def src(name: str) -> str:
        return source(name) if callable(source) else source

    ch = Chain("A model rollout: two sets of replicas, the canary's size, the budget it burns")
    ch.given("X", X, "output tokens per second one replica earns", kind="derived",
             source="utils.chains.continuous_batching")
    ch.given("o", q(o, "token/request"), "mean reply", kind="assumption", source=src("mean_output_tokens"))
    ch.step("lambda_r", "X/o", "request/s", "requests per second one replica serves")
    ch.given("lambda_0", q(lambda_0, "request/s"), "the model's requests per second", kind="assumption",
             source=src("requests_per_s"))
    ch.given("u", u, "utilization each version is sized to", kind="assumption", source=src("utilization"))
    ch.step("R", "ceiling(lambda_0/(u*lambda_r))", "", "replicas for one version alone")
    ch.given("s", s, "canary share of new sessions", kind="assumption", source=src("canary_share"))
    ch.given("m", m, "warm replicas per version, at least", kind="assumption", source=src("min_replicas"))
    ch.step("R_new", "Max(m, ceiling(s*lambda_0/(u*lambda_r)))", "", "new version's replicas")
    ch.step("R_old", "Max(m, ceiling((1 - s)*lambda_0/(u*lambda_r)))", "", "old version's replicas")
    ch.step("E", "R_new + R_old - R", "", "extra replicas the rollout holds, weights warm")
    ch.given("tau", q(tau, "min"), "mean session length", kind="assumption", source=src("session_minutes"))
    ch.step("t_99", "tau*log(100)", "min", "time for 99% of old sessions to end (exponential lengths)")
    ch.step("R_cut", "R + R_old", "", "replicas at the cutover: the new version takes all new sessions, "
            "the old still holds its own")
    ch.step("H_d", "R_old*tau", "hour", "old replica-hours while its sessions drain (released as they end)")
    ch.given("p0", p0, "stable failed-request rate", kind="assumption", source=src("baseline_failure"))
    ch.given("delta", delta, "regression to catch (absolute)", kind="assumption", source=src("regression"))
    ch.step("p1", "p0 + delta", "", "canary failed-request rate at the regression")
    ch.step("k", "(1 - s)/s", "", "stable arm over canary arm, same window")
    ch.step("pb", "(p1 + k*p0)/(1 + k)", "", "pooled rate under no regression")
    ch.given("z_a", z(1 - alpha), "z at one minus the significance (inverse normal CDF)", kind="derived",
             source=f"statistics.NormalDist().inv_cdf, alpha = {alpha:g}", digits=4)
    ch.given("z_b", z(power), "z at the power (inverse normal CDF)", kind="derived",
             source=f"statistics.NormalDist().inv_cdf, power = {power:g}", digits=4)
    ch.given("nu", q(1, "request"), "one request", kind="derived", source="counting")
    ch.step("n_c", "nu*ceiling(((z_a*sqrt(pb*(1 - pb)*(1 + 1/k)) + z_b*sqrt(p1*(1 - p1) + p0*(1 - p0)/k))"
                   "/delta)**2)", "request", "canary requests: one-sided two-proportion test, normal approximation")
    ch.step("t_d", "n_c/(s*lambda_0)", "min", "time for the canary to collect them")
    n_c = int(round(as_float(ch["n_c"], "request")))
    ch.given("pi_sim", simulated_power(p0, p0 + delta, n_c, (1 - s) / s, alpha=alpha, seed=seed),
             "power at that size, simulated", kind="derived",
             source=f"utils.serving.canary.simulated_power: seeded draws of both arms (seed {seed})")
    ch.given("SLO", slo, "share of requests that must succeed", kind="assumption", source=src("slo"))
    ch.given("P_d", q(period, "day"), "the budget's period", kind="assumption", source=src("period_days"))
    ch.step("B", "(1 - SLO)*P_d", "min", "error budget: minutes of total failure the period allows")
    ch.step("b", "p1/(1 - SLO)", "", "burn rate at the regression")
    ch.given("h", q(1, "hour"), "an hour spent reading logs", kind="assumption", source="the claim")
    ch.step("m_h", "p1*h", "min", "budget burned per hour at full rollout of the regression")
    ch.step("f_h", "m_h/B", "", "that hour's share of the period's budget")
    ch.step("m_c", "delta*n_c/lambda_0", "min", "budget the canary's extra failures burn before the test decides")
    return ch


def compute(p) -> Chain:
    X = replica_rate(p.model.key, p.gpu.key, p.gpus_per_replica, p.mean_prompt_tokens, p.mean_output_tokens)
    return rollout_chain(X, p.mean_output_tokens, p.requests_per_s, p.utilization, p.canary_share, p.min_replicas,
                         p.session_minutes, p.slo, p.baseline_failure, p.regression, p.alpha, p.power,
                         p.period_days, p.seed, source=lambda name: SPEC.source(p, name))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Roll back first and investigate afterward, because the error budget is being consumed while you read "
         "logs. The rollback decision rule that removes the argument, the four causes specific to model serving, "
         "and the canary design that would have caught it at one percent of the traffic.")
CLAIM = dict(share=0.01, hour=1.0)


@memoised
def checks() -> dict:
    d = SPEC.defaults()
    X = replica_rate(d["model"], d["gpu"], d["gpus_per_replica"], d["mean_prompt_tokens"], d["mean_output_tokens"])
    args = dict(X=X, o=d["mean_output_tokens"], lambda_0=d["requests_per_s"], u=d["utilization"], s=CLAIM["share"],
                m=d["min_replicas"], tau=d["session_minutes"], slo=d["slo"], p0=d["baseline_failure"],
                alpha=d["alpha"], power=d["power"], period=d["period_days"], seed=d["seed"])
    ch = rollout_chain(delta=d["regression"], source="the claim and this book's fleet", **args)
    rel = d["baseline_failure"] * d["regression"]              # "1%" read as a relative rise of the rate
    n_rel = canary_sample_size(d["baseline_failure"], d["baseline_failure"] + rel, alpha=d["alpha"],
                               power=d["power"], ratio=(1 - CLAIM["share"]) / CLAIM["share"])
    t_rel = n_rel / (CLAIM["share"] * d["requests_per_s"])
    false_alarm = simulated_power(d["baseline_failure"], d["baseline_failure"], int(ch["n_c"].m),
                                  (1 - CLAIM["share"]) / CLAIM["share"], alpha=d["alpha"], seed=d["seed"] + 1)
    # The simulated power on several seeds: the check holds on every one, and the page reports the range.
    n_c, k = int(ch["n_c"].m), (1 - CLAIM["share"]) / CLAIM["share"]
    p0, p1 = d["baseline_failure"], d["baseline_failure"] + d["regression"]
    powers = [simulated_power(p0, p1, n_c, k, alpha=d["alpha"], seed=sd) for sd in SEEDS]
    alarms = [simulated_power(p0, p0, n_c, k, alpha=d["alpha"], seed=sd + 1) for sd in SEEDS]
    return dict(chain=ch, rel=rel, n_rel=n_rel, t_rel=t_rel, false_alarm=false_alarm, d=d, powers=powers,
                alarms=alarms)


SEEDS = tuple(range(5))        # the power simulation's seeds for the check


def claims() -> list[Claim]:
    ck = checks()
    ch = ck["chain"]
    t_d = as_float(ch["t_d"], "s")
    # "it" has no size in the source, nor the traffic or the baseline: the time to catch a regression at one
    # percent of the traffic goes as one over its size squared, so any answer is the book's own figure.
    return [Claim(
        "roll-back-first", quote=QUOTE, source="spec/001 (the rollback paragraph)",
        claimed="a canary at one percent of the traffic would have caught it; the budget burns while logs are read",
        derived=f"the book's figure: {fmt(ch['n_c'])} on the canary in {duration(t_d)}; an hour at full rollout burns "
                f"{fmt(ch['m_h'])} of budget",
        verdict=UNCHECKABLE,
        reason=f"The source gives no size for the regression 'it', no traffic and no failure rate, and the canary's "
               f"time goes as one over the regression's size squared, so nothing of the source's can be checked; in "
               f"the book's own figure, at {pct(CLAIM['share'])} of {fmt(ch['lambda_0'])}, a canary collects the "
               f"{fmt(ch['n_c'])} it needs to catch a rise of {pct(ch['delta'].m)} (absolute) in {duration(t_d)} "
               f"(simulated power {pct(min(ck['powers']))} to {pct(max(ck['powers']))} over {fmt(len(SEEDS))} seeds), "
               f"while each hour of full rollout burns {fmt(ch['m_h'])}, {pct(ch['f_h'].m)} of the month's "
               f"{fmt(ch['B'])}; a rise of {pct(ck['rel'] / ck['d']['baseline_failure'])} of the rate itself needs "
               f"{fmt(q(ck['n_rel'], 'request'))}, {duration(ck['t_rel'])}.")]


# --- the router, run -----------------------------------------------------------------------------------
def router_run(n_sessions: int = 20_000, share: float = 0.05, ramp: float = 0.25) -> dict:
    """Sessions through the sticky router: the share that lands on the canary, what a ramp moves, what a
    rollback moves. Session ids are counted, not drawn: the hash does the sampling."""
    r = VersionRouter("v1", "v2", share)
    ids = [f"session-{i}" for i in range(n_sessions)]
    first = {s: r.route(s) for s in ids}
    on_canary = sum(v == "v2" for v in first.values())
    r.set_share(ramp)
    later = [f"session-{i}" for i in range(n_sessions, 2 * n_sessions)]
    for s in later:
        r.route(s)
    moved_back = sum(first[s] == "v2" and r.route(s) != "v2" for s in ids)     # stickiness: none
    switched = sum(r.route(s) != first[s] for s in ids)
    ramped = sum(r.route(s) == "v2" for s in later)
    moved = r.rollback()
    after = sum(r.route(s) == "v2" for s in ids + later + ["new-after-rollback"])
    return dict(n=n_sessions, share=share, ramp=ramp, on_canary=on_canary, measured=on_canary / n_sessions,
                moved_back=moved_back, switched=switched, ramped=ramped / n_sessions, rolled_back=moved,
                after=after)


def case_rows() -> list[list[str]]:
    """The cases tests/serving/test_canary.py holds, run live."""
    run = router_run()
    n = canary_sample_size(0.10, 0.15)
    return [["new sessions at a share", "that share on the canary, by hash", f"{pct(run['measured'])} of {pct(run['share'])}"],
            ["the share raised", "no existing session changes version", f"{run['switched']:,} switched"],
            ["a rollback", "every canary session moves to stable", f"{run['rolled_back']:,} moved, {run['after']} left"],
            ["sample size, equal arms, rates from a tenth to three twentieths", "the formula worked by hand", f"{n:,} per arm"],
            ["simulated power at the closed-form size", "the power asked for", "tests/serving/test_canary.py"],
            ["simulated false alarms with no regression", "about the significance", "tests/serving/test_canary.py"]]


def detect_curves(ch, regressions, shares=(0.01, 0.05)) -> dict:
    """Minutes for the canary to collect its sample, against the regression's size, at each share."""
    p0 = as_float(ch["p0"], "")
    lambda_0 = as_float(ch["lambda_0"], "request/s")
    za, zb = as_float(ch["z_a"], ""), as_float(ch["z_b"], "")
    out = {}
    for s in shares:
        alpha, power = 1 - _cdf(za), _cdf(zb)
        n = np.array([canary_sample_size(p0, p0 + dlt, alpha=alpha, power=power, ratio=(1 - s) / s)
                      for dlt in regressions])
        out[s] = n / (s * lambda_0) / 60
    return dict(regressions=np.asarray(regressions), minutes=out)


def _cdf(x: float) -> float:
    from statistics import NormalDist
    return NormalDist().cdf(x)


def what_changes(p, ch) -> dict:
    small = SPEC.derive(regression=0.001)
    one = SPEC.derive(canary_share=0.01)
    few = SPEC.derive(requests_per_s=50.0)
    d = SPEC.check()                                       # the page's own reading, whatever the parameters
    half, page_ = SPEC.derive(power=0.5), SPEC.derive()    # the normal approximation's small sizes, and the page's
    # What the prose says of them: a small canary misses the power asked, the page's agrees with its simulation.
    assert half["simulated_power"].m < 0.5 - 0.1 and abs(page_["simulated_power"].m - d.power) < 0.05
    return {"wc-floor": pct(zero_size_power(d)), "wc-half": pct(0.5),
            "wc-half-n": fmt(half["canary_requests"]), "wc-half-sim": pct(half["simulated_power"].m),
            "wc-page": pct(d.power), "wc-page-n": fmt(page_["canary_requests"]),
            "wc-page-sim": pct(page_["simulated_power"].m), "wc-small": pct(0.001), "wc-small-n": fmt(small["canary_requests"]),
            "wc-small-t": duration(small["time_to_detect"]),
            "wc-one": pct(0.01), "wc-one-t": duration(one["time_to_detect"]), "wc-one-extra": num(one["extra_replicas"].m),
            "wc-few": fmt(q(50.0, "request/s")), "wc-few-t": duration(few["time_to_detect"]),
            "wc-few-extra": num(few["extra_replicas"].m), "wc-few-r": num(few["replicas_one_version"].m)}


def exercises(p, ch) -> dict:
    p0, p1 = 0.02, 0.03
    n_eq = canary_sample_size(p0, p1)
    n_k = canary_sample_size(p0, p1, ratio=19)
    slo = 0.9995
    return {"ex1-p0": pct(p0), "ex1-p1": pct(p1), "ex1-n": f"{n_eq:,}", "ex1-nk": f"{n_k:,}",
            "ex1-za": fmt(z(0.95), digits=4), "ex1-zb": fmt(z(0.8), digits=4),
            "ex2-slo": pct(slo, digits=4), "ex2-budget": fmt(q(budget_minutes(slo), "min")),
            "ex2-rate": pct(0.0105), "ex2-burn": fmt(0.0105 / (1 - slo)),
            "ex2-hours": fmt(q(budget_minutes(slo) / 0.0105 / 60, "hour")),
            "ex3-tau": fmt(q(60.0, "min")), "ex3-t": fmt(q(60.0 * np.log(1000), "min")), "ex3-share": pct(0.999)}


SPEC = Spec("model-rollout", PARAMETERS, RESULTS, compute, validate=validate)
