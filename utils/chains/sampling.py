"""sampling: temperature, then top-k, then top-p on a Zipf-like logits row, the exact distribution they
leave, and seeded draws from utils.components.sampling checked against it by total-variation distance.

The token of rank r has logit -s ln r, so after temperature T its probability is r^(-s/T) / H(V, s/T),
with H(n, a) the partial sums of r^-a. The sampler itself, its rules and its bound are utils.components.sampling.
"""
from __future__ import annotations

import itertools

import numpy as np

from utils.chain import Chain, as_float, memoised
from utils.components.sampling import STAGES, nucleus_size, probabilities, sample, softmax, total_variation, tv_bound
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import HOLDS, UNCHECKABLE, WRONG, Claim

SIMULATION = "seeded draws from the filtered distribution, checked against it by total-variation distance"

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: its vocabulary sets the width of the logits row", check="model",
          source="catalog: Llama-3-70B"),
    Param("vocab", 0, "tokens in the row; 0 takes the model's vocabulary size", unit="token", check="non_negative",
          source="the model's vocab_size"),
    Param("temperature", 0.7, "temperature, >= 0; 0 = greedy (argmax)", check="non_negative",
          source="this book's assumption: a common serving default"),
    Param("top_k", 50, "tokens kept by top-k; 0 = off", unit="token", check="non_negative",
          source="this book's assumption: a common serving default"),
    Param("top_p", 0.9, "nucleus mass in (0, 1]; 1.0 = off", check="fraction",
          source="this book's assumption: a common serving default"),
    Param("zipf_exponent", 1.1, "s: the logit of rank r is -s ln r", source="this book's model of a logits row"),
    Param("n_samples", 200000, "draws for the empirical check", check="whole", source="this book's choice"),
    Param("seed", 0, "numpy Generator seed", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("support_after_top_k", "token", "Tokens left after temperature and top-k", of="n_k"),
    Result("support_after_top_p", "token", "Tokens left after top-p", of="n_p"),
    Result("kept_mass", "", "Tempered mass kept by the filters", of="kept", percent=True),
    Result("tv_distance", "", "TV distance, empirical vs analytic", of="tv"),
    Result("tv_bound", "", "TV bound at delta = 1e-6", of="tv_bound"),
    Result("tv_distance_max", "", "TV distance, largest over 10 seeds (seed to seed + 9)", of="tv_max"),
)

DELTA = 1e-6
MAX_VOCAB = 262_144        # 2^18: above every model in the catalog (256,000 at most); the row is sorted ten times
MAX_SAMPLES = 1_000_000    # draws a seed, five times the default: ten seeds of them take about a second
SEEDS = 10          # one seed's draws are one sample: the TV is also reported as its largest over this many


def validate(p):
    for name in ("vocab", "top_k", "seed"):
        if float(p[name]) != int(p[name]):
            raise ParameterError(f"{name} must be a whole number, got {p[name]!r}")
    if not p.vocab and "vocab_size" not in p.model:
        raise ParameterError(f"model {p.model.key!r} has no vocab_size in the catalog; set vocab instead")
    if vocab_of(p) < 2:
        raise ParameterError(f"vocab must be at least 2 tokens, got {vocab_of(p)}")
    if vocab_of(p) > MAX_VOCAB:
        raise ParameterError(f"vocab must be at most {MAX_VOCAB:,} tokens (above every model in the catalog; each of "
                             f"the {SEEDS} seeded checks filters the whole row, which past it takes over a second), "
                             f"got {vocab_of(p):,}")
    if p.n_samples > MAX_SAMPLES:
        raise ParameterError(f"n_samples must be at most {MAX_SAMPLES:,}: the check draws it on {SEEDS} seeds, and "
                             f"past it that takes over a second (the TV bound shrinks only as its square root), got "
                             f"{p.n_samples:,}")


def vocab_of(p) -> int:
    return int(p.vocab) if p.vocab else int(p.model.q("vocab_size").m)


def harmonic(n, a) -> float:
    return float(np.sum(np.arange(1, n + 1, dtype=np.float64) ** -a))


def zipf_logits(vocab: int, s: float) -> np.ndarray:
    return -s * np.log(np.arange(1, vocab + 1, dtype=np.float64))


def sampling_chain(V, T, k, p, s, *, vocab_kind="assumption", vocab_source="parameters cell",
                   source="parameters cell") -> Chain:
    """`source`: where T, k and p come from (a string: all three; a dict: by parameter name)."""
    src = (lambda name: source.get(name, "parameters cell")) if isinstance(source, dict) else (lambda name: source)
    """The chain that derives the filtered Zipf row's sizes; k, p: None = off. The rows themselves and the
    integral route's nucleus size ride along in ch.data ("logits", "tempered", "after_k", "final", "approx")."""
    logits = zipf_logits(V, s)
    tempered, after_k, final = (probabilities(logits, T), probabilities(logits, T, k), probabilities(logits, T, k, p))
    ch = Chain("Temperature, then top-k, then top-p, on a Zipf row")
    ch.given("V", q(V, "token"), "vocabulary (logits row)", kind=vocab_kind, source=vocab_source)
    ch.given("s", s, "Zipf exponent of the row", kind="assumption", source=src("zipf_exponent")
             if isinstance(source, dict) else "this book's model of a logits row")
    ch.given("T", T, "temperature", kind="assumption", source=src("temperature"))
    ch.given("k", k or V, "top-k in tokens (the whole row when off)", kind="assumption", source=src("top_k"))
    ch.given("p", p or 1.0, "top-p (one when off)", kind="assumption", source=src("top_p"))
    n_k, n_p = int((after_k > 0).sum()), int((final > 0).sum())
    ch.data.update(logits=logits, tempered=tempered, after_k=after_k, final=final, approx=None)
    ch.value("n_k", q(n_k, "token"))
    if T == 0:
        ch.given("n_p", q(n_p, "token"), "tokens left: greedy keeps the argmax", kind="derived",
                 source="T = 0 convention")
        ch.value("kept", q(1.0, ""))
        return ch
    ch.step("a", "s/T", "", "exponent after temperature: p_r ~ r^-a")
    a = as_float(ch["a"])
    ch.given("H_V", harmonic(V, a), "H(V, a): normaliser of the tempered row", kind="derived",
             source="numpy sum over ranks", digits=4)
    ch.given("H_k", harmonic(min(k or V, V), a), "H(k, a): mass top-k keeps, unnormalised",
             kind="derived", source="numpy sum over ranks", digits=4)
    ch.step("p_1", "1/H_V", "", "probability of the top token after temperature")
    ch.step("m_k", "H_k/H_V", "", "mass top-k keeps")
    if p is not None and abs(a - 1) > 1e-6:
        try:
            ch.data["approx"] = as_float(ch.solve("n", "(1-p)*H_k = ((n+1/2)**(1-a) - (k+1/2)**(1-a))/(a-1)", "",
                                              "nucleus size, integral approximation"))
        except ValueError:
            pass
    ch.given("n_p", q(n_p, "token"), "nucleus size, exact count (utils.components.sampling)", kind="derived",
             source="utils.components.sampling.probabilities")
    ch.given("H_n", harmonic(n_p, a), "H(n_p, a)", kind="derived", source="numpy sum over ranks", digits=4)
    ch.step("m_p", "H_n/H_V", "", "tempered mass that survives both filters")
    ch.value("kept", ch["m_p"])
    return ch


def draws_check(ch: Chain, T, k, p, n_samples: int, seed: int) -> dict:
    """Seeded draws from utils.components.sampling.sample against the exact distribution: TV, its bound, and the
    Gaussian expectation of TV."""
    final = ch.data["final"]
    draws = sample(ch.data["logits"], T, k, p, rng=np.random.default_rng(int(seed)), size=int(n_samples))
    empirical = np.bincount(draws, minlength=len(final)) / n_samples
    support = int((final > 0).sum())
    return dict(draws=draws, empirical=empirical, support=support, tv=total_variation(empirical, final),
                bound=float(tv_bound(support, int(n_samples), DELTA)), all_allowed=bool((final[draws] > 0).all()),
                expected=float(np.sqrt(2 / np.pi) * 0.5 * np.sum(np.sqrt(final * (1 - final) / n_samples))))


def _filters(p):
    return (int(p.top_k) if p.top_k else None), (float(p.top_p) if p.top_p < 1 else None)


def compute(p) -> Chain:
    """The chain, with the seeded draws' check in ch.data["draws"]."""
    V, (k, top_p) = vocab_of(p), _filters(p)
    from_model = not p.vocab
    ch = sampling_chain(V, p.temperature, k, top_p, p.zipf_exponent,
                        vocab_kind="spec" if from_model else "assumption",
                        vocab_source=p.model["vocab_size"].cite if from_model else SPEC.source(p, "vocab"),
                        source={n: SPEC.source(p, n) for n in ("temperature", "top_k", "top_p", "zipf_exponent")})
    runs = [draws_check(ch, p.temperature, k, top_p, p.n_samples, p.seed + i) for i in range(SEEDS)]
    d = runs[0]
    ch.data["draws"] = d
    ch.data["tv_runs"] = [r["tv"] for r in runs]          # every seed's TV: the page checks each under the bound
    ch.value("tv", q(d["tv"], ""))
    ch.value("tv_bound", q(d["bound"], ""))
    ch.value("tv_max", q(max(ch.data["tv_runs"]), ""))
    return ch


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(pitfalls=3, vocab=32000, temperature=0.7, top_k=50, top_p=0.9, zipf_exponent=1.1)
QUOTE = ("Four lines of arithmetic with three ways to get it wrong: dividing by a temperature of zero, "
         "exponentiating without subtracting the maximum, and applying the filters in an order that "
         "changes the result. The implementation, the verification against the analytic distribution, "
         "and the overflow that is one logit away.")
LINES_QUOTE = "Four lines of arithmetic"       # the size, judged on its own
FORMATS = {"fp16": float(np.finfo(np.float16).max), "bf16": (2 - 2 ** -7) * 2.0 ** 127,
           "fp32": float(np.finfo(np.float32).max), "fp64": float(np.finfo(np.float64).max)}


@memoised
def checks() -> dict:
    """The three pitfalls on the claim's own row (deterministic, so memoised: the page and claims() share one)."""
    C = CLAIM
    res = sampling_chain(C["vocab"], C["temperature"], C["top_k"], C["top_p"], C["zipf_exponent"],
                         source="the chain-list row")
    z = res.data["logits"]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        naive_t0 = np.exp(z / 0.0) / np.exp(z / 0.0).sum()
    greedy = probabilities(z, 0)
    threshold = {f: float(np.log(m)) for f, m in FORMATS.items()}
    row16 = np.zeros(8, dtype=np.float16)
    fine, broken = row16.copy(), row16.copy()
    fine[3], broken[3] = np.floor(threshold["fp16"]), np.floor(threshold["fp16"]) + 1
    with np.errstate(over="ignore", invalid="ignore"):
        fine_p = np.exp(fine) / np.exp(fine).sum(dtype=np.float16)
        broken_p = np.exp(broken) / np.exp(broken).sum(dtype=np.float16)
        big = np.full(4, 1e4)
        big[0] += 1
        naive_big = np.exp(big) / np.exp(big).sum()
    orders = []
    for order in itertools.permutations(STAGES):
        p_o = probabilities(z, C["temperature"], C["top_k"], C["top_p"], order=order)
        orders.append((order, int((p_o > 0).sum()), float(p_o.max())))
    supports = {o: n for o, n, _ in orders}
    t_late = int((probabilities(z, C["temperature"], None, C["top_p"]) > 0).sum())
    t_early = int((probabilities(z, C["temperature"], None, C["top_p"], order=("top_p", "temperature", "top_k")) > 0).sum())
    return dict(res=res, t0_nan=bool(np.isnan(naive_t0).all()), greedy_ok=greedy[0] == 1 and greedy.sum() == 1,
                threshold=threshold, fine=float(fine[3]), broken=float(broken[3]),
                one_logit_away=bool(np.isfinite(fine_p).all() and np.isnan(broken_p).any()),
                big_nan=bool(np.isnan(naive_big).all()), big_shifted=float(softmax(big)[0]),
                orders=orders, supports=supports, default_n=supports[STAGES], t_late=t_late, t_early=t_early)


def claims() -> list[Claim]:
    ck = checks()
    s = ck["supports"]
    real = ck["t0_nan"] and ck["one_logit_away"] and len(set(s.values())) > 1
    return [Claim(
        "three-pitfalls", quote=QUOTE, source="spec/001 (the sampling paragraph)",
        claimed="three pitfalls: a temperature of zero, no max subtraction, filter order",
        derived=f"all three reproduced: a temperature of zero gives NaN; fp16 overflows at a logit of "
                f"{fmt(ck['threshold']['fp16'], digits=4)}; the six filter orders keep {min(s.values()):,} to "
                f"{max(s.values()):,} tokens",
        verdict=HOLDS if real else WRONG,
        nearest_true="" if real else "not every one of the three changes the result",
        reason=f"dividing by a temperature of zero makes the whole row NaN; without the max subtraction an fp16 row "
               f"with a logit of {fmt(ck['fine'])} is fine and one of {fmt(ck['broken'])} is NaN; the six orders of "
               f"the filters keep {min(s.values()):,} to {max(s.values()):,} tokens of the same row."),
        Claim(
        "four-lines", quote=LINES_QUOTE, source="spec/001 (the sampling paragraph)",
        claimed="the arithmetic is four lines",
        derived="not derived: the source does not show its four lines",
        verdict=UNCHECKABLE,
        reason="the source shows no implementation to count, and counting this book's own "
               "(utils.components.sampling) would check the book against itself.")]


def check_text(ck: dict) -> dict:
    C, res, s = CLAIM, ck["res"], ck["supports"]
    out = {"check-vocab": q(C["vocab"], "token"), "check-T": fmt(C["temperature"]), "check-k": q(C["top_k"], "token"),
           "check-p": fmt(C["top_p"]), "check-s": fmt(C["zipf_exponent"]),
           "fp16-fine": fmt(ck["fine"]), "fp16-broken": fmt(ck["broken"]),
           "t01-fp32": fmt(0.1 * ck["threshold"]["fp32"], digits=3), "check-default-n": q(ck["default_n"], "token"),
           "check-t-late": q(ck["t_late"], "token"), "check-t-early": q(ck["t_early"], "token"),
           "check-min-n": q(min(s.values()), "token"), "check-max-n": q(max(s.values()), "token"),
           "check-approx": fmt(res.data["approx"], digits=3), "check-exact": res["n_p"]}
    out.update({f"thr-{f}": fmt(t, digits=4) for f, t in ck["threshold"].items()})
    return out


def order_rows(ck: dict) -> list[list[str]]:
    return [[" → ".join(o), f"{n:,}", pct(pm)] for o, n, pm in ck["orders"]]


# --- figure, what changes, exercises --------------------------------------------------------------
def nucleus_curves(ch: Chain, k, top_p, temps) -> dict:
    pp = 0.9 if top_p is None else top_p
    kk = 50 if k is None else k
    z = ch.data["logits"]
    return dict(top_p_only=[nucleus_size(probabilities(z, t), pp) for t in temps],
                top_k_then_p=[int((probabilities(z, t, kk, pp) > 0).sum()) for t in temps])


def what_changes(p, ch: Chain) -> dict:
    """On the claim's own row (checks()), as the page's prose describes it."""
    ck = checks()
    C, z, s = CLAIM, ck["res"].data["logits"], ck["supports"]
    t_cold, t_hot, s_flat = 0.7, 1.0, 0.9
    n_flat = int((probabilities(zipf_logits(C["vocab"], s_flat), C["temperature"], C["top_k"], C["top_p"]) > 0).sum())
    return {"wc-t-cold": fmt(t_cold), "wc-t-hot": fmt(t_hot),
            "wc-n-cold": q(nucleus_size(probabilities(z, t_cold), C["top_p"]), "token"),
            "wc-n-hot": q(nucleus_size(probabilities(z, t_hot), C["top_p"]), "token"),
            "wc-min": q(min(s.values()), "token"), "wc-max": q(max(s.values()), "token"),
            "wc-s-flat": fmt(s_flat), "wc-s": fmt(C["zipf_exponent"]), "wc-n-flat": q(n_flat, "token"),
            "wc-n-base": ck["res"]["n_p"]}


def draws_needed(target: float, support: int, delta: float = DELTA) -> float:
    """Draws at which the TV bound falls to `target`, solved in closed form by sympy."""
    import sympy as sp
    eps, k, n, d = sp.symbols("epsilon K N delta", positive=True)
    closed = sp.solve(sp.Eq(sp.sqrt(k / n) / 2 + sp.sqrt(sp.log(1 / d) / (2 * n)), eps), n)[0]
    return float(closed.subs({eps: target, k: support, d: delta}))


def exercises(p, ch: Chain) -> dict:
    """On the claim's own row (checks())."""
    ck = checks()
    C, z = CLAIM, ck["res"].data["logits"]
    lo, hi = 0.05, 3.0
    for _ in range(60):                      # the nucleus grows with temperature: bisect
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if nucleus_size(probabilities(z, mid), C["top_p"]) <= C["top_k"] else (lo, mid)
    t_ex2, target = 0.7, 0.005
    k_ex3 = int(ck["res"]["n_p"].m)
    return {"ex1-p": fmt(C["top_p"]), "ex1-k": q(C["top_k"], "token"), "ex1-t": fmt(lo, digits=3),
            "ex2-t": fmt(t_ex2), "ex2-logit": fmt(t_ex2 * ck["threshold"]["fp16"], digits=3),
            "ex3-target": fmt(target), "ex3-k": q(k_ex3, "token"),
            "ex3-n": fmt(np.ceil(draws_needed(target, k_ex3)), style="plain")}


SPEC = Spec("sampling", PARAMETERS, RESULTS, compute, validate=validate)
