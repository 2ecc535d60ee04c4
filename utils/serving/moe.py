"""Mixture-of-experts layout and traffic, shared by the MoE chapters.

- `experts(m)`: what a layout needs of a catalog MoE (routed experts E, experts per token k, MoE layers,
  the size of one routed expert, the hidden size);
- `slot_layout(E, n)`: E whole experts over n GPUs in s = ceil(E/n) slots each; `owners` maps each
  expert to its GPU;
- `nvlink_domain(acc)`: the GPUs one scale-up domain holds;
- `busiest_experts(f, E, n)`: the expected number of experts the busiest GPU touches in one MoE layer
  when each is touched with probability f (what a small-batch decode step reads);
- `busiest_load(T, k, E, n)` and `imbalance`: the expected load of the busiest GPU when T tokens each
  pick k distinct experts uniformly (the router skew a perfectly uniform router already leaves);
- `alltoall_bytes_per_token`: the bytes a token sends off its GPU per step (dispatch and combine in
  every MoE layer); `ALPHA_D`, `ALPHA_C`: all-to-all latencies fitted to TensorRT-LLM's GB200 times;
- `dropped_share`, `busiest_expert`: capacity factors and dropless routing, exact per expert;
- `simulate_busiest_experts`, `simulate_loads`: seeded simulations of uniform top-k routing, the
  second route for the formulas above;
- `redundant_layout`, `shared_copies`: a group wider than the experts (DeepSeek-V3's EP320 decode), one
  expert per GPU and the spares holding shared-expert copies and redundant routed copies;
  `busiest_redundant`, `redundant_imbalance`: what the copies buy, exact for independent binomial loads,
  placed before the step (from past loads) or on the step's own busiest experts; `simulate_redundant`, the
  seeded second route.

The standard library and pint for the layout, the expected counts and the all-to-all (so a closed-form chapter
computes without numpy, as in the reader's browser); numpy, imported inside, only for the arrays and the
seeded simulations. Every function is deterministic (simulations take a seed).

Chapters: moe-1t-on-72-gpus, moe-total-vs-active.
"""
from __future__ import annotations

import math

from utils import catalog
from utils.units import q

# Bytes per hidden element on the wire: DeepEP dispatches in fp8 and combines in bf16 (the fp8 scales,
# a few percent more, are left out).
DISPATCH_BYTES, COMBINE_BYTES = 1.0, 2.0
DEEPEP_SRC = ("DeepEP README: 'FP8 dispatching and BF16 combining', https://github.com/deepseek-ai/DeepEP, "
              "read 2026-11-29")
BOARD_GPUS = 8   # HGX/DGX boards and the MI300X platform (catalog notes on nvlink5, infinity-fabric)

# TensorRT-LLM's published NVLinkOneSided dispatch and combine kernel times (µs) on GB200 NVL72 at
# ep_size=64, hidden 7168, top_k 8, BF16 payload, by tokens per rank.
TRT_SRC = ("TensorRT-LLM tech blog 18, NVLinkOneSided AlltoAll on GB200 NVL72, ep_size=64, hidden 7168, "
           "top_k 8, BF16, https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/tech_blog/"
           "blog18_Optimizing_MoE_Communication_with_One_Sided_AlltoAll_Over_NVLink.md, read 2026-11-29")
TRT_EP64 = {1: (27.8, 32.6), 2: (24.8, 32.2), 4: (29.1, 33.0), 8: (20.4, 33.3), 16: (20.6, 35.0),
            32: (23.1, 36.1), 64: (28.8, 37.7), 128: (41.6, 44.5), 256: (65.3, 62.9),
            512: (115.7, 106.7), 1024: (209.4, 199.2), 2048: (399.2, 372.1)}
TRT_SETUP = dict(ep=64, k=8, hidden=7168, bytes=2.0, link="nvlink5")


def _vector(x):
    """x as it is when it is a plain number (the closed-form path), else as a float array."""
    if isinstance(x, (int, float)):
        return x
    import numpy as np
    return np.asarray(x, dtype=float)


# --- the layout ---------------------------------------------------------------------------------
def experts(m) -> dict:
    """What a layout needs of a catalog MoE entry: E routed experts per MoE layer, k per token, the MoE
    layers (all but the dense ones), one routed expert's parameters (SwiGLU: 3 x d_model x moe_d_ff)
    and the hidden size d."""
    n = lambda name: int(m.q(name).m)  # noqa: E731
    return dict(E=n("n_routed_experts"), k=n("n_experts_per_token"), L_moe=n("n_layers") - n("n_dense_layers"),
                P_e=3 * n("d_model") * n("moe_d_ff"), d=n("d_model"))


def slot_layout(E: int, n: int) -> tuple[int, int, int]:
    """E whole experts over n GPUs in s = ceil(E/n) slots each: n_hi GPUs hold s distinct experts, the
    other n_lo hold s - 1 and one spare slot (for a second copy of a busy expert). Returns (s, n_hi, n_lo)."""
    if E < 1 or n < 1:
        raise ValueError(f"a layout needs at least one expert and one GPU, got E={E}, n={n}")
    s = -(-E // n)
    n_hi = E - n * (s - 1)
    return s, n_hi, n - n_hi


def owners(E: int, n: int):
    """The GPU that holds each expert in `slot_layout`'s layout (the first n_hi GPUs hold s each)."""
    import numpy as np
    s, n_hi, _ = slot_layout(E, n)
    return np.concatenate([np.repeat(np.arange(n_hi), s), np.repeat(np.arange(n_hi, n), s - 1)])


def nvlink_domain(acc) -> int:
    """GPUs one scale-up (NVLink) domain holds: the rack for an NVL72 part, a board of eight otherwise."""
    link = catalog.interconnect(acc.q("scaleup_link"))
    if "NVL72" in acc.name and "nvl72_domain_gpus" in link:
        return int(link.q("nvl72_domain_gpus").m)
    return BOARD_GPUS


def tensor_rate_key(acc, bytes_per_element: float) -> str:
    """The dense tensor rate a matmul on operands this wide can use: fp8 for 1 byte or less, else bf16."""
    return "fp8_dense" if bytes_per_element <= 1 and "fp8_dense" in acc else "bf16_dense"


# --- which experts a step touches -----------------------------------------------------------------
def touched_share(k: int, E: int, tokens):
    """Expected share of a layer's experts that `tokens` tokens touch, each picking k of E uniformly."""
    return 1 - (1 - k / E) ** _vector(tokens)


def _binom_cdf(x: int, m: int, f):
    return sum(math.comb(m, j) * f**j * (1 - f)**(m - j) for j in range(0, min(x, m) + 1))


def busiest_experts(f, E: int, n: int, spare_read: bool = False):
    """Expected number of experts the busiest GPU touches in one MoE layer when each expert is touched
    with probability f independently: E[max_i X_i] = sum over x = 1..s of (1 - prod_i P(X_i <= x - 1)),
    X_i ~ Binomial(experts on GPU i, f). spare_read=False: a touched expert's tokens go to one copy, so a
    GPU with a spare slot reads at most its s - 1 own experts; True: the spare copy is read as well."""
    s, n_hi, n_lo = slot_layout(E, n)
    f = _vector(f)
    lo = s if spare_read else s - 1
    return sum(1 - _binom_cdf(x - 1, s, f)**n_hi * _binom_cdf(x - 1, lo, f)**n_lo for x in range(1, s + 1))


def busiest_load(T: int, k: int, E: int, n: int, grid: int = 4001) -> float:
    """Expected expert-token assignments on the busiest of n GPUs when T tokens each pick k distinct
    experts at random. One token's loads over the GPUs are multivariate hypergeometric, covariance
    k c (diag(p) - p p^T), c = (E - k)/(E - 1); in the Gaussian limit a GPU's load is T k p_i +
    sqrt(T k c p_i) Z_i less a term common to all GPUs, so E[max] = integral over x > 0 of
    1 - prod_i Phi((x - mu_i)/sigma_i), by the trapezoid rule on `grid` points (plain Python: a
    closed-form chapter calls it)."""
    s, n_hi, n_lo = slot_layout(E, n)
    c = (E - k) / (E - 1)
    groups = [(T * k * m / E, math.sqrt(T * k * c * m / E), cnt) for m, cnt in ((s, n_hi), (s - 1, n_lo)) if cnt and m]
    top = max(mu + 9 * sd for mu, sd, _ in groups)
    dx = top / (grid - 1)

    def tail(x):
        F = 1.0
        for mu, sd, cnt in groups:
            # sd = 0 when every token picks every expert (k = E): each GPU's load is then exactly mu.
            F *= (0.5 * (1 + math.erf((x - mu) / sd / math.sqrt(2))) if sd > 0 else float(x >= mu)) ** cnt
        return 1 - F
    y = [tail(i * dx if i < grid - 1 else top) for i in range(grid)]
    return dx * (sum(y) - (y[0] + y[-1]) / 2)


def imbalance(T: int, k: int, E: int, n: int) -> float:
    """Busiest GPU's load over the mean GPU's under uniform routing: what the step waits for."""
    return busiest_load(T, k, E, n) / (T * k / n)


# --- the all-to-all -----------------------------------------------------------------------------
def remote_share(n: int) -> float:
    """Share of a token's expert copies that sit on another GPU under uniform routing: (n - 1)/n."""
    return (n - 1) / n


def alltoall_bytes_per_token(L_moe: int, k: int, d: int, n: int, dispatch_bytes: float = DISPATCH_BYTES,
                             combine_bytes: float = COMBINE_BYTES):
    """Bytes one token sends off its GPU per forward step: k copies of its d hidden elements to the
    experts (dispatch) and back (combine), in each MoE layer, the share (n - 1)/n that is remote."""
    return q(L_moe * k * d * (dispatch_bytes + combine_bytes) * remote_share(n), "byte/token")


def alltoall_bandwidth_time(tokens, k: int, n: int, hidden: int, bytes_per_element: float, bandwidth):
    """One all-to-all's bandwidth term: the expert copies that leave the GPU over the one-way link."""
    return (q(_vector(tokens) * k * remote_share(n) * hidden * bytes_per_element, "byte")
            / bandwidth).to("µs")


def fit_latency() -> tuple:
    """The largest dispatch and combine latencies alpha for which alpha + bytes/bandwidth stays at or
    under every published TensorRT-LLM time (TRT_EP64)."""
    s = TRT_SETUP
    bw = catalog.interconnect(s["link"]).q("bandwidth_unidirectional")
    beta = {b: float(alltoall_bandwidth_time(b, s["k"], s["ep"], s["hidden"], s["bytes"], bw).m) for b in TRT_EP64}
    return (q(min(t[0] - beta[b] for b, t in TRT_EP64.items()), "µs"),
            q(min(t[1] - beta[b] for b, t in TRT_EP64.items()), "µs"))


ALPHA_D, ALPHA_C = fit_latency()


def latency_fit_check() -> dict:
    """The fitted model against every published time: rows of (tokens per rank, published dispatch,
    model dispatch, published combine, model combine) and the smallest and largest model/published."""
    s = TRT_SETUP
    bw = catalog.interconnect(s["link"]).q("bandwidth_unidirectional")
    rows, ratios = [], []
    for b, (t_d, t_c) in TRT_EP64.items():
        beta = alltoall_bandwidth_time(b, s["k"], s["ep"], s["hidden"], s["bytes"], bw)
        p_d, p_c = ALPHA_D + beta, ALPHA_C + beta
        ratios += [float(p_d.to("µs").m) / t_d, float(p_c.to("µs").m) / t_c]
        rows.append((b, q(t_d, "µs"), p_d, q(t_c, "µs"), p_c))
    return dict(rows=rows, low=min(ratios), high=max(ratios))


# --- capacity factors and dropless routing ------------------------------------------------------
def _binom_pmf(n_trials: int, p: float):
    import numpy as np
    x = np.arange(n_trials + 1)
    if p >= 1:
        return x, (x == n_trials).astype(float)
    lg = np.vectorize(math.lgamma)
    logpmf = lg(n_trials + 1) - lg(x + 1) - lg(n_trials - x + 1) + x * math.log(p) + (n_trials - x) * math.log1p(-p)
    return x, np.exp(logpmf)


def dropped_share(T: int, k: int, E: int, cf: float) -> float:
    """Expected share of expert-token assignments beyond a capacity of floor(cf x T k / E) per expert:
    each expert's load is exactly Binomial(T, k/E), and expectation is linear."""
    import numpy as np
    x, pmf = _binom_pmf(T, k / E)
    cap = math.floor(cf * T * k / E)
    return float(np.sum(np.maximum(x - cap, 0) * pmf) / (T * k / E))


def busiest_expert(T: int, k: int, E: int) -> float:
    """Expected load of the busiest single expert (independent binomials): what a dropless step waits for."""
    import numpy as np
    x, pmf = _binom_pmf(T, k / E)
    return float(np.sum(1 - np.clip(np.cumsum(pmf), 0, 1) ** E))


# --- simulations (the second route) -------------------------------------------------------------
def draw_experts(rng, tokens: int, k: int, E: int, chunk: int = 20000):
    """k distinct experts per token, uniformly: draw with replacement and redraw rows with a repeat; when
    a repeat is likely (large k), take the k smallest of E random keys per token instead."""
    import numpy as np
    if math.prod(1 - i / E for i in range(k)) < 0.5:
        return np.concatenate([np.argpartition(rng.random((min(chunk, tokens - i), E)), k - 1, axis=1)[:, :k]
                               for i in range(0, tokens, chunk)])
    picks = rng.integers(0, E, size=(tokens, k))
    while True:
        bad = (np.diff(np.sort(picks, axis=1), axis=1) == 0).any(axis=1)
        if not bad.any():
            return picks
        picks[bad] = rng.integers(0, E, size=(int(bad.sum()), k))


def simulate_loads(T: int, k: int, E: int, n: int, trials: int, seed: int = 0):
    """Per trial: expert loads (trials x E) and the busiest GPU's load, on `slot_layout`'s layout."""
    import numpy as np
    rng = np.random.default_rng(seed)
    owner = owners(E, n)
    picks = draw_experts(rng, T * trials, k, E).reshape(trials, T * k)
    loads = np.bincount((picks + E * np.arange(trials)[:, None]).ravel(), minlength=trials * E).reshape(trials, E)
    gpu_loads = np.stack([loads[:, owner == g].sum(axis=1) for g in range(n)], axis=1)
    return loads, gpu_loads.max(axis=1)


def simulation_trials(T: int, k: int, E: int, cap: int = 200) -> int:
    """Trials that keep one simulation quick: about 4e5 tokens when experts are drawn by rejection, 3e7
    random keys when they are drawn by sorting keys (large k); at least 10 trials."""
    draws = 4e5 if math.prod(1 - i / E for i in range(k)) >= 0.5 else 3e7 / E
    return int(max(10, min(cap, draws // T)))


def simulate_busiest_experts(E: int, k: int, n: int, B: int, trials: int = 1000, chunk: int = 200,
                             seed: int = 0) -> float:
    """Mean number of experts the busiest GPU touches in one layer, over seeded steps of B tokens that
    each pick k distinct experts at random (the layout of `slot_layout`, spare slots not read)."""
    import numpy as np
    onehot = np.zeros((E, n))
    onehot[np.arange(E), owners(E, n)] = 1.0
    rng = np.random.default_rng(seed)
    busiest = []
    for _ in range(trials // chunk):
        picks = np.argpartition(rng.random((chunk, B, E)), k, axis=-1)[..., :k].reshape(chunk, -1)
        touched = np.zeros((chunk, E))
        np.put_along_axis(touched, picks, 1.0, axis=1)
        busiest.append((touched @ onehot).max(axis=1))
    return float(np.mean(np.concatenate(busiest)))


# --- redundant experts on spare GPUs (a group wider than the experts) ---------------------------
DSV3_SRC = ("DeepSeek-AI, DeepSeek-V3 Technical Report, arXiv:2412.19437, sec. 3.4.2 Decoding, "
            "https://arxiv.org/abs/2412.19437, read 2026-12-01")
DSV3_DECODE = dict(nodes=40, gpus=320, spare=64, tokens_per_expert=256)  # "usually within 256 tokens"
DSV3_DAY6_SRC = ("DeepSeek, open-infra-index 202502OpenSourceWeek day 6, DeepSeek-V3/R1 inference system overview "
                 "('Each deployment unit spans 18 nodes with 32 redundant routed experts'), https://github.com/"
                 "deepseek-ai/open-infra-index/blob/main/202502OpenSourceWeek/day_6_one_more_thing_deepseekV3R1_"
                 "inference_system_overview.md, read 2026-12-01")


def shared_copies(E: int, k: int, n_shared: int) -> int:
    """Copies of the shared experts when they are served as routed ones on their own GPUs (DeepSeek-V3's
    decode: 'we treat the shared expert as a routed one ... always selected'): every token picks each
    shared expert, k/E of the tokens pick a routed one, so ceil(E/k) copies per shared expert bring each
    copy's load down to a routed expert's mean."""
    return n_shared * -(-E // k)


def redundant_layout(E: int, n: int, k: int, n_shared: int = 0) -> dict:
    """One expert per GPU for a group of n > E GPUs: E GPUs hold the routed experts, the n - E spares hold
    first the shared-expert copies (shared_copies, if they fit; otherwise the shared experts stay copied
    on every GPU, as for n <= E, and `shared_on_spares` is 0), then one redundant copy each of `redundant`
    routed experts (at most one extra copy per expert, so redundant <= E)."""
    if n <= E:
        raise ValueError(f"a redundant layout needs more GPUs than the {E} routed experts, got {n}")
    spare = n - E
    c = shared_copies(E, k, n_shared)
    c = c if n_shared and c <= spare else 0
    r = spare - c
    if r > E:
        raise ValueError(f"{n} GPUs leave {r} spares for {E} routed experts: more than one extra copy each")
    return dict(routed=E, shared_on_spares=c, redundant=r, spare=spare)


PLACEMENTS = ("none", "statistics", "step")


def _redundant_cdf(T: int, k: int, E: int, r: int, placement: str):
    """P(busiest routed-expert GPU's load <= x), x = 0..T, one expert per GPU, each expert's load an
    independent Binomial(T, k/E) (as `busiest_expert`); an expert with a second copy splits its tokens,
    ceil(X/2) on the busier copy, so that copy is <= x exactly when X <= 2x."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    import numpy as np
    x, pmf = _binom_pmf(T, k / E)
    F = np.clip(np.cumsum(pmf), 0, 1)
    F2 = F[np.minimum(2 * x, T)]
    if placement == "none" or r == 0:
        return F ** E                       # the spares idle: the busiest of E single experts
    if placement == "statistics":
        # copies chosen before the step from past loads; under a uniform router those say nothing about
        # this step's, so any r experts: E - r singles and r halves
        return F ** (E - r) * F2 ** r
    # copies of this step's r busiest experts (the most r copies can buy): at most r loads exceed x and
    # none exceeds 2x
    return sum(math.comb(E, i) * (F2 - F) ** i * F ** (E - i) for i in range(r + 1))


def busiest_redundant(T: int, k: int, E: int, r: int, placement: str = "statistics") -> float:
    """Expected load of the busiest routed-expert GPU (expert-token assignments in one MoE layer) when T
    tokens each pick k of E experts and r experts have a second copy on a spare GPU. placement: 'none'
    (spares idle), 'statistics' (copies placed from past loads, DeepSeek-V3's 'based on the statistical
    expert load': under a uniform router, any r experts), 'step' (copies of this step's r busiest)."""
    import numpy as np
    return float(np.sum(1 - _redundant_cdf(T, k, E, r, placement)))


def redundant_imbalance(T: int, k: int, E: int, n: int, n_shared: int = 0, placement: str = "statistics") -> float:
    """Busiest GPU's load over the mean GPU's on `redundant_layout`'s n GPUs: the mean spreads all the
    work, T(k + shared routed) assignments, over every GPU; the busiest is the larger of the busiest
    routed-expert GPU and a shared-expert copy's ceil(T/c) tokens (exact: E[max(M, a)] = sum over x of
    P(max > x))."""
    import numpy as np
    lay = redundant_layout(E, n, k, n_shared)
    c, r = lay["shared_on_spares"], lay["redundant"]
    s = n_shared if c else 0
    G = _redundant_cdf(T, k, E, r, placement)
    a = -(-T * s // c) if c else 0           # tokens on the busiest shared-expert copy
    x = np.arange(T + 1)
    busiest = float(np.sum(np.where(x < a, 1.0, 1 - G)))
    return busiest / (T * (k + s) / n)


def simulate_redundant(T: int, k: int, E: int, r: int, placement: str, trials: int, seed: int = 0):
    """Per trial, the busiest routed-expert GPU's load under seeded uniform top-k routing, the second
    route for `busiest_redundant` (loads drawn jointly, so without its independence approximation)."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    import numpy as np
    rng = np.random.default_rng(seed)
    picks = draw_experts(rng, T * trials, k, E).reshape(trials, T * k)
    loads = np.bincount((picks + E * np.arange(trials)[:, None]).ravel(), minlength=trials * E).reshape(trials, E)
    if placement == "none" or r == 0:
        return loads.max(axis=1)
    if placement == "statistics":
        doubled = np.zeros(E, dtype=bool)
        doubled[:r] = True                   # any fixed r: the router is uniform
        return np.maximum(loads[:, ~doubled].max(axis=1), -(-loads[:, doubled].max(axis=1) // 2))
    ranked = -np.sort(-loads, axis=1)
    return np.maximum(ranked[:, r] if r < E else 0, -(-ranked[:, 0] // 2))
