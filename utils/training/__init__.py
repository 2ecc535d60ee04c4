"""Training compute, shared by every chain that starts from 6ND (six-nd, fleet-size, cost per training
token, the frontier run, the bill of materials).

Also the price side those chains share: which of the catalog's H100 rental rates a GPU-hour price is (cost per
training token, straggler tax).

Where the 6 comes from, derived rather than typed: a (p x q) @ (q x r) product is 2pqr FLOPs, and a
linear layer Y = XW meets each token three times in training (the forward product, the gradient for the
layer below, the gradient for the weight). Divided by parameters x tokens that is 2 + 4 = 6. Attention's
QK^T and AV are the products whose size no weight sets; per trained token and layer they cost
6 T d_attn FLOPs with a causal kernel, 12 T d_attn if the full square is computed.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

from utils import catalog
from utils.units import escape_dollars, q

if TYPE_CHECKING:
    import sympy as sp


def matmul_flops(p, q_, r):
    """FLOPs of a (p x q) @ (q x r) product: p*r outputs, each q multiply-adds of 2 FLOPs."""
    return 2 * p * q_ * r


def _linear_layer_products(b, m, n) -> dict:
    """The three products of a linear layer Y = XW (b tokens, m x n weight) in one training step."""
    return {
        r"forward $Y = XW$": matmul_flops(b, m, n),
        r"backward $\partial X = \partial Y\,W^\top$": matmul_flops(b, n, m),
        r"backward $\partial W = X^\top \partial Y$": matmul_flops(m, b, n),
    }


@lru_cache(maxsize=None)
def linear_layer_passes() -> dict[str, sp.Expr]:
    """The three products in sympy symbols b, m, n (for the page's derivation)."""
    import sympy as sp
    return _linear_layer_products(*sp.symbols("b m n", positive=True))


@lru_cache(maxsize=None)
def flops_per_parameter_token() -> dict[str, int]:
    """{'forward': 2, 'backward': 4, 'train': 6, 'recompute': 8}, from the products above. Each product is
    2 x (its three sizes), so its FLOPs per parameter (m n) per token (b) are its value at b = m = n = 1 (the
    symbolic quotient, which tests/training/test_training.py takes with sympy, is the same constant)."""
    per = list(_linear_layer_products(1, 1, 1).values())
    forward, backward = per[0], sum(per[1:])
    # Activation recomputation runs the forward pass again in the backward pass.
    return {"forward": forward, "backward": backward, "train": forward + backward,
            "recompute": 2 * forward + backward}


def _attention_products(T, d) -> int:
    """Training FLOPs of QK^T and AV for one sequence of T tokens and one layer of attention width d, the full
    square: forward QK^T (T x d by d x T) and AV (T x T by T x d), backward twice the forward."""
    return 3 * (matmul_flops(T, d, T) + matmul_flops(T, T, d))


@lru_cache(maxsize=None)
def attention_flops_per_token() -> dict[str, int]:
    """Training FLOPs per token, per layer, per context token, per unit of attention width:
    {'causal': 6, 'full': 12}: the products' FLOPs over T tokens, T context tokens and d, which is their value
    at T = d = 1 (each is a constant times T^2 d; tests/training/test_training.py takes the quotient with sympy)."""
    full = _attention_products(1, 1)
    return {"causal": full // 2, "full": full}


def six_nd(ch, n_params, n_tokens, *, kind: str = "assumption", source: str = "parameters cell",
           label_n: str = "parameters multiplied per token", source_d: str | None = None):
    """Add the 6ND rule to a chain: inputs N and D, the constant k = 6, C = k N D. Returns C.
    source_d: D's own source where it differs from N's (a chapter parameter's, say)."""
    ch.given("N", n_params if hasattr(n_params, "units") else q(n_params, "parameter"), label_n,
             kind=kind, source=source)
    ch.given("D", n_tokens if hasattr(n_tokens, "units") else q(n_tokens, "token"), "training tokens",
             kind=kind, source=source_d or source)
    ch.given("k", q(flops_per_parameter_token()["train"], "FLOP/parameter/token"),
             "FLOPs per parameter per token", kind="derived", source="2 forward + 4 backward (six-nd)")
    return ch.step("C", "k*N*D", "FLOP", "training compute, the 6ND rule")


# --- the fleet equation: compute needed = compute a fleet delivers, C = N_gpu R u T ----------------
def fleet_equation(ch, peak, mfu, run_days, *, peak_label: str = "peak of one GPU (dense bf16)",
                   peak_kind: str = "spec", peak_source: str = "catalog", kind: str = "assumption",
                   source: str = "parameters cell", mfu_source: str | None = None):
    """Add the fleet equation to a chain that already holds C: inputs R (per GPU), u and T, the exact
    count N_gpu solved from C = N_gpu R u T (sympy shows the closed form), and the GPU-hours G = C/(R u).
    `peak` is a rate (FLOP/s); it is taken per GPU. mfu=None: the chain already holds u (an MFU converted
    to the 6N basis by earlier steps). Returns N_gpu."""
    R = peak.to("FLOP/s") / q(1, "GPU") if "GPU" not in str(peak.units) else peak
    ch.given("R", R, peak_label, kind=peak_kind, source=peak_source)
    if mfu is not None:
        ch.given("u", q(mfu, ""), "model FLOPs utilisation", kind=kind, source=mfu_source or source)
    ch.given("T", q(run_days, "day"), "run length, wall clock", kind=kind, source=source)
    n = ch.solve("N_gpu", "C = N_gpu*R*u*T", "GPU", "GPUs, exact")
    ch.step("G", "C/(R*u)", "GPU*hour", "GPU-hours at that MFU")
    return n


def next_power_of_two(x) -> int:
    """The smallest power of two >= x (a plain number or a pint count of GPUs). A count a hair above a
    power of two from floating point (8192.0000000001) is that power, not the next."""
    v = float(x.to("GPU").magnitude) if hasattr(x, "units") else float(x)
    if not v > 0:
        raise ValueError(f"a GPU count must be > 0, got {v}")
    n = max(1, math.ceil(round(v, 9)))
    return 1 << (n - 1).bit_length()


def whole_nodes(x, gpus_per_node: int) -> int:
    """x GPUs rounded up to whole nodes of gpus_per_node, in GPUs."""
    v = float(x.to("GPU").magnitude) if hasattr(x, "units") else float(x)
    return int(gpus_per_node * math.ceil(round(v / gpus_per_node, 9)))


def with_headroom(x, headroom: float):
    """x GPUs with a headroom share added for what is not training (failures, stragglers, evaluation,
    checkpoints, data stalls): x (1 + h)."""
    return x * (1 + headroom)


def rounding_orders(n_exact, headroom: float, gpus_per_node: int = 8) -> dict[str, int]:
    """The plan under each order of operations: headroom then rounding (the plan), headroom then whole
    nodes, rounding then headroom then rounding again (which double-counts the margin), and no headroom."""
    h = with_headroom(n_exact, headroom)
    return {
        "headroom, then the next power of two (the plan)": next_power_of_two(h),
        "headroom, then whole nodes": whole_nodes(h, gpus_per_node),
        "the next power of two, then headroom, then round again":
            next_power_of_two(with_headroom(next_power_of_two(n_exact), headroom)),
        "the next power of two, no headroom": next_power_of_two(n_exact),
    }


def free_headroom(n_exact) -> float:
    """The headroom that rides free inside the rounding: next power of two over the exact count, minus 1."""
    v = float(n_exact.to("GPU").magnitude) if hasattr(n_exact, "units") else float(n_exact)
    return next_power_of_two(v) / v - 1


def fat_tree_sizes(radix: int) -> dict[int, int]:
    """GPUs a non-blocking fat tree of radix-k switches holds at one, two and three levels: k/2, k^2/2, k^3/4."""
    return {1: radix // 2, 2: radix ** 2 // 2, 3: radix ** 3 // 4}


# --- which FLOPs an MFU counts ---------------------------------------------------------------------
# An MFU is achieved FLOP/s over peak, and the FLOP/s are a count per token times tokens per second. The
# book counts 6N; papers count more: PaLM (Appendix B) adds the attention products, 12 L H Q T per token
# for the full square (non-causal), DeepSeek's "causal" MFU half of that, and Megatron-LM's TFLOP/s count
# the recomputed forward pass (hardware FLOPs: 8N with full activation recomputation). The same run at
# the same speed has a larger MFU on a larger count, so a typed MFU is converted to 6N before the fleet
# equation uses it: u_6N = u_basis x 6N / (FLOPs per token on that basis).
MFU_BASES = ("6N", "6N+attention", "6N+causal-attention", "hardware")


def flops_per_token(basis: str, n_params, n_layers=0, d_attn=0, seq_len=0) -> float:
    """Training FLOPs per token on an MFU basis (plain numbers): 6N; 6N + 12 L d_attn T (PaLM, the full
    square); 6N + 6 L d_attn T (causal, half the square); 8N (hardware: forward recomputed once)."""
    per = flops_per_parameter_token()
    full = attention_flops_per_token()["full"] * n_layers * d_attn * seq_len
    counts = {"6N": per["train"] * n_params, "6N+attention": per["train"] * n_params + full,
              "6N+causal-attention": per["train"] * n_params + full / 2, "hardware": per["recompute"] * n_params}
    if basis not in counts:
        raise ValueError(f"unknown MFU basis {basis!r}; one of {', '.join(MFU_BASES)}")
    return float(counts[basis])


def mfu_to_6n(mfu: float, basis: str, n_params, n_layers=0, d_attn=0, seq_len=0) -> float:
    """An MFU counted on `basis`, restated on the book's 6N basis (same run, same tokens per second)."""
    return mfu * flops_per_token("6N", n_params) / flops_per_token(basis, n_params, n_layers, d_attn, seq_len)


def megatron_flops_per_token(n_layers, hidden, seq_len, vocab) -> float:
    """Narayanan et al. 2021 (arXiv:2104.04473) eq. 3 per token: F/(B s) = 96 l h^2 (1 + s/6h + V/16lh),
    the GEMM FLOPs of a GPT layer stack with activation recomputation (one extra forward pass)."""
    l, h, s, V = n_layers, hidden, seq_len, vocab
    return 96 * l * h ** 2 * (1 + s / (6 * h) + V / (16 * l * h))


def gpt_params(n_layers, hidden, vocab) -> float:
    """Parameters of Megatron's GPT: 12 l h^2 in the layers (attention 4h^2, MLP 8h^2) plus the V h
    embedding its logit layer reuses (biases and norms, 13 l h, are left out as eq. 2 does)."""
    return 12 * n_layers * hidden ** 2 + vocab * hidden


# --- ZeRO: the model states per GPU at each stage (Rajbhandari et al., SC20, sec. 5 and Figure 1) ----
ZERO_STAGES = (0, 1, 2, 3)
ZERO_STAGE_NAMES = {0: "data parallel (baseline)", 1: "ZeRO-1: optimizer states partitioned (P_os)",
                    2: "ZeRO-2: + gradients (P_os+g)", 3: "ZeRO-3: + parameters (P_os+g+p)"}


def zero_bytes_per_param(stage: int, dp_degree: int, k: float = 12.0, weight_bytes: float = 2.0,
                         grad_bytes: float = 2.0) -> float:
    """Bytes of model state per parameter on one GPU: (2 + 2 + K) with nothing partitioned; stage 1
    divides the K bytes of optimizer state by N_d, stage 2 also the gradients, stage 3 also the weights."""
    if stage not in ZERO_STAGES:
        raise ValueError(f"ZeRO stage must be one of {ZERO_STAGES}, got {stage!r}")
    if dp_degree < 1:
        raise ValueError(f"the data-parallel degree must be >= 1, got {dp_degree}")
    nd = float(dp_degree)
    w = weight_bytes / nd if stage >= 3 else weight_bytes
    g = grad_bytes / nd if stage >= 2 else grad_bytes
    o = k / nd if stage >= 1 else k
    return w + g + o


def zero_comm_volume(stage: int) -> float:
    """Communication per step per GPU in units of the model's parameter count Psi (sec. 7): the baseline's
    all-reduce moves 2 Psi (reduce-scatter + all-gather); stages 1 and 2 move the same 2 Psi (a
    reduce-scatter of gradients, an all-gather of updated weights); stage 3 all-gathers the weights in the
    forward and again in the backward pass and reduce-scatters the gradients: 3 Psi, 1.5x the baseline."""
    if stage not in ZERO_STAGES:
        raise ValueError(f"ZeRO stage must be one of {ZERO_STAGES}, got {stage!r}")
    return 3.0 if stage == 3 else 2.0


MFU_BASIS_LABELS = {"6N": "6N per token (the book's model FLOPs)",
                    "6N+attention": "6N + 12 L H Q T per token (PaLM's Appendix B: attention's full square)",
                    "6N+causal-attention": "6N + 6 L H Q T per token (attention, causal half)",
                    "hardware": "8N per token (hardware FLOPs: the forward pass recomputed once)"}


def mfu_conversion(ch, mfu, basis, n_layers=0, d_attn=0, seq_len=0, *, source="parameters cell", kind="assumption"):
    """Add to a chain that holds k and N (six_nd) the typed MFU u_b on `basis`, the FLOPs per token on that
    basis F_b and on 6N F_6, and u = u_b F_6 / F_b, the same run's MFU on the book's basis. Returns u."""
    if basis not in MFU_BASES:
        raise ValueError(f"unknown MFU basis {basis!r}; one of {', '.join(MFU_BASES)}")
    ch.given("u_b", q(mfu, ""), f"MFU as typed, counting {MFU_BASIS_LABELS[basis]}", kind=kind,
             source=source)
    if basis == "hardware":
        ch.given("k_h", q(flops_per_parameter_token()["recompute"], "FLOP/parameter/token"),
                 "hardware FLOPs per parameter per token, full recomputation", kind="derived",
                 source="2 forward + 2 recomputed forward + 4 backward (six-nd, activation recomputation)")
        ch.step("F_b", "k_h*N", "FLOP/token", "FLOPs per token on the typed basis")
    elif basis != "6N":
        full = attention_flops_per_token()["full"]
        ch.given("c_a", q(full if basis == "6N+attention" else full / 2, "FLOP/token**2"),
                 "attention FLOPs per token, per context token, per layer, per unit width", kind="derived",
                 source="QK^T and AV, forward and backward (six-nd); PaLM (arXiv:2204.02311) Appendix B")
        ch.given("n_L", n_layers, "layers", kind="derived", source=source)
        ch.given("d_a", d_attn, "attention width H x Q (query heads x head width)", kind="derived", source=source)
        ch.given("T_s", q(seq_len, "token"), "training sequence length", kind="assumption", source=source)
        ch.step("F_b", "k*N + c_a*n_L*d_a*T_s", "FLOP/token", "FLOPs per token on the typed basis")
    else:
        ch.step("F_b", "k*N", "FLOP/token", "FLOPs per token on the typed basis")
    ch.step("F_6", "k*N", "FLOP/token", "FLOPs per token on the book's 6N basis")
    return ch.step("u", "u_b*F_6/F_b", "", "MFU on the 6N basis: the same run counted the book's way")


# --- GPU-hour prices: the catalog's H100 rental rates, and which one a price is ------------------------
H100_RENTAL = "h100-rental"
H100_RENTAL_RATES = ("contract_1y_low", "contract_1y", "runpod_community", "lambda_on_demand", "aws_p5_on_demand")


def h100_rental_rates() -> dict[str, float]:
    """The catalog's H100 rental rates, USD per GPU-hour, by field, cheapest first."""
    r = catalog.price(H100_RENTAL)
    return {f: float(r.q(f).to("USD/GPU/hour").m) for f in H100_RENTAL_RATES}


def rental_rate_source(usd_per_gpu_hour: float) -> tuple[str, str] | None:
    """(kind, source) of the catalog rate a price equals ('catalog h100-rental.<field>: <document>, read <date>'),
    or None for a price the catalog does not hold: the caller names the reader's value."""
    r = catalog.price(H100_RENTAL)
    for f, usd in h100_rental_rates().items():
        if math.isclose(usd_per_gpu_hour, usd, rel_tol=1e-9):
            return r[f].kind, escape_dollars(f"catalog {H100_RENTAL}.{f}: {r[f].source.title.split(',')[0]}, "
                                             f"read {r[f].source.read}")
    return None
