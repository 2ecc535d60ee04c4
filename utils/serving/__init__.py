"""The serving memory budget: weights, the KV cache one sequence needs, and how many sequences fit.

One GPU of a serving replica holds its share of the weights and of every sequence's KV cache. The
engine manages a share of the GPU's memory; what is left of it after the weights (and the activation
peak, where one is given) is the KV budget, and users are the whole caches that fit in it:

    managed  = total x utilization                    per GPU (vLLM: total is the driver's figure)
    weights  = N_total x bytes per weight / GPUs      per GPU (tensor parallel: one copy over the GPUs)
    KV budget = managed - weights - activation peak   per GPU; must be > 0 (check_weights_fit)
    KV per user = copies x KV bytes per token x context   across the replica
    users    = floor(GPUs x KV budget / KV per user)  per replica (a node, when the replica is a node)

Which total: vLLM's `gpu_memory_utilization` is a fraction of the memory the CUDA runtime reports to
the process (`torch.cuda.mem_get_info()`'s total, cudaMemGetInfo), not of the datasheet's label:
vLLM logs "total_gpu_memory (79.10GiB) x gpu_memory_utilization (0.90) = 71.19GiB" on an H100
"80GB". `gpu_memory(gpu, "driver")` reads that figure from the catalog (hbm_capacity_driver); a GPU
without one falls back to what nvidia-smi reports (hbm_capacity_usable, a slight over-statement), and
then to the datasheet, and says so in the returned source. The three readings:
- "driver": what cudaMemGetInfo reports (what vLLM multiplies);
- "nvidia-smi": what nvidia-smi shows (the NVML total, a little more);
- "datasheet": the vendor's decimal label (80 GB for an H100), the smallest of the three.

    from utils import serving
    b = serving.budget(catalog.model("llama-3-70b"), catalog.accelerator("h100-sxm"), gpus=8,
                       weight_bytes_per_param=2, kv_bytes_per_element=2, context_tokens=8192)
    b.users, b.users_per_gpu, b.kv_budget_per_gpu, b.kv_per_sequence
    serving.vllm_kv_budget(catalog.accelerator("h100-sxm"), weights_per_gpu=q(17.6, "GB"))
    serving.add_budget_steps(chain, ...)     # the same budget as rows of a utils.chain.Chain

Every function takes catalog Entries (utils.catalog.model / accelerator) and returns pint quantities.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from utils import catalog, models
from utils.params import ParameterError
from utils.units import Q_, fmt, pct

READINGS = ("driver", "nvidia-smi", "datasheet")
_FIELDS = {"driver": "hbm_capacity_driver", "nvidia-smi": "hbm_capacity_usable", "datasheet": "hbm_capacity"}
_LABELS = {"driver": "what the CUDA runtime reports (cudaMemGetInfo; what vLLM multiplies)",
           "nvidia-smi": "what nvidia-smi reports", "datasheet": "the datasheet's decimal label"}


@dataclass(frozen=True)
class Memory:
    """One GPU's memory under one reading: the total (bytes), which reading it is, and its source."""
    total: object          # pint Quantity, bytes per GPU
    reading: str           # the reading asked for
    used: str              # the reading the catalog had (a fallback says so)
    kind: str
    source: str

    @property
    def label(self) -> str:
        fallback = "" if self.used == self.reading else f" ({self.reading} figure not in the catalog: {self.used})"
        return f"HBM per GPU, {_LABELS[self.used]}{fallback}"


def gpu_memory(gpu, reading: str = "driver") -> Memory:
    """The memory of one GPU (a catalog accelerator Entry) under `reading` (see READINGS); a reading
    the catalog lacks falls back to the next one down the list, and the Memory says which it used."""
    if reading not in READINGS:
        raise ParameterError(f"memory reading must be one of {', '.join(READINGS)}, got {reading!r}")
    for used in READINGS[READINGS.index(reading):]:
        if _FIELDS[used] in gpu:
            v = gpu[_FIELDS[used]]
            return Memory(v.q.to("byte"), reading, used, v.kind, v.cite)
    raise ParameterError(f"accelerator {gpu.key!r} has no memory capacity in the catalog")


def vllm_utilization() -> float:
    """vLLM's default gpu_memory_utilization (catalog: software vllm), a plain float."""
    return float(vllm_utilization_value().q.to("").magnitude)


def vllm_utilization_value():
    """The catalog Value (with its source) of vLLM's default gpu_memory_utilization."""
    return catalog.entry("software", "vllm")["gpu_memory_utilization"]


def check_weights_fit(weights_per_gpu, managed_per_gpu, *, what: str = "the weights",
                      fix: str = "raise the GPU count or lower the bytes per weight") -> None:
    """Raise ParameterError (one line, naming both sizes) unless the weights leave room for a KV cache."""
    if weights_per_gpu >= managed_per_gpu:
        raise ParameterError(f"{what} need {fmt(weights_per_gpu, 'GB')} per GPU but the engine manages "
                             f"{fmt(managed_per_gpu, 'GB')} per GPU: {fix}")


def vllm_kv_budget(gpu, weights_per_gpu, utilization: float | None = None, activation_peak=None,
                   reading: str = "driver") -> dict:
    """vLLM's KV budget per GPU: total x gpu_memory_utilization - weights - activation peak, where the
    total is what the driver reports (vllm/v1/worker/gpu_worker.py, determine_available_memory). The
    default utilization is vLLM's (catalog); without an activation peak the budget is an upper bound.
    Returns total, managed, weights, activation, kv (bytes per GPU) and the Memory it read."""
    u = vllm_utilization() if utilization is None else float(utilization)
    if not 0 < u <= 1:
        raise ParameterError(f"gpu_memory_utilization must be a fraction in (0, 1], got {u!r}")
    mem = gpu_memory(gpu, reading)
    managed = (mem.total * u).to("byte")
    act = Q_(0, "byte") if activation_peak is None else activation_peak.to("byte")
    weights = weights_per_gpu.to("byte")
    check_weights_fit(weights + act, managed, fix="use more GPUs per replica or fewer bytes per weight")
    return dict(total=mem.total, utilization=u, managed=managed, weights=weights, activation=act,
                kv=managed - weights - act, memory=mem)


@dataclass(frozen=True)
class Budget:
    """A replica's memory budget and the users (sequences in flight) it holds. Per-GPU sizes in bytes."""
    model: str
    gpu: str
    gpus: int
    memory: Memory
    utilization: float
    managed_per_gpu: object
    weights: object               # one copy of the weights, whole replica
    weights_per_gpu: object
    activation_per_gpu: object
    kv_budget_per_gpu: object
    kv_budget: object             # whole replica
    kv_per_token: object          # one copy, all layers (byte/token)
    copies: float                 # copies of each token's KV the replica keeps (tensor parallel)
    context_tokens: int
    kv_per_sequence: object       # across the replica, bytes
    n_params: object              # total parameters stored (utils.models.param_count)
    weight_bytes_per_param: float

    @property
    def users(self) -> int:
        """Whole caches that fit in the replica's KV budget."""
        return math.floor(float((self.kv_budget / self.kv_per_sequence).to("").magnitude))

    @property
    def users_per_gpu(self) -> float:
        return self.users / self.gpus

    @property
    def tokens(self):
        """Tokens of context the KV budget holds across the replica (copies counted)."""
        return (self.kv_budget / (self.copies * self.kv_per_token)).to("token")


def weights_per_gpu(model, gpus: int, weight_bytes_per_param: float):
    """One copy of every weight (the total, not the active ones), split over `gpus`."""
    return (models.weight_bytes(model, weight_bytes_per_param) / gpus).to("byte")


def kv_per_sequence(model, kv_bytes_per_element: float, context_tokens: float, gpus: int = 1):
    """KV bytes one sequence of `context_tokens` holds across a tensor-parallel group of `gpus`."""
    return (models.kv_copies(model, gpus) * models.kv_bytes_per_token(model, kv_bytes_per_element)
            * Q_(context_tokens, "token")).to("byte")


def budget(model, gpu, gpus: int, weight_bytes_per_param: float, kv_bytes_per_element: float,
           context_tokens: float, utilization: float | None = None, reading: str = "driver",
           activation_peak_per_gpu=None) -> Budget:
    """The memory budget of a replica of `gpus` GPUs holding one copy of `model` (tensor parallel).

    utilization: the engine's share (default vLLM's); reading: which total it multiplies (vLLM: the
    driver's). Raises ParameterError when the weights do not fit, or not one sequence fits."""
    if gpus < 1 or int(gpus) != gpus:
        raise ParameterError(f"gpus must be a whole number >= 1, got {gpus!r}")
    if context_tokens <= 0:
        raise ParameterError(f"context_tokens must be > 0, got {context_tokens!r}")
    u = vllm_utilization() if utilization is None else float(utilization)
    if not 0 < u <= 1:
        raise ParameterError(f"gpu_memory_utilization must be a fraction in (0, 1], got {u!r}")
    mem = gpu_memory(gpu, reading)
    managed = (mem.total * u).to("byte")
    w = models.weight_bytes(model, weight_bytes_per_param).to("byte")
    w_gpu = (w / gpus).to("byte")
    act = Q_(0, "byte") if activation_peak_per_gpu is None else activation_peak_per_gpu.to("byte")
    check_weights_fit(w_gpu + act, managed, what=f"{model.name}'s weights at {weight_bytes_per_param:g} bytes each",
                      fix=f"one copy is {fmt(w, 'GB')} over {gpus} GPU(s) of {gpu.name}, at {pct(u)} of "
                          f"{fmt(mem.total, 'GB')} each; raise the GPUs per replica or lower the bytes per weight")
    kv_gpu = managed - w_gpu - act
    kv_tok = models.kv_bytes_per_token(model, kv_bytes_per_element)
    copies = models.kv_copies(model, gpus)
    per_seq = (copies * kv_tok * Q_(context_tokens, "token")).to("byte")
    b = Budget(model.name, gpu.name, int(gpus), mem, u, managed, w, w_gpu, act, kv_gpu,
               (kv_gpu * gpus).to("byte"), kv_tok, copies, int(context_tokens), per_seq,
               models.param_count(model)["total"], float(weight_bytes_per_param))
    if b.users < 1:
        raise ParameterError(f"not one sequence of {fmt(Q_(context_tokens, 'token'))} fits: each needs "
                             f"{fmt(per_seq, 'GB')} of KV and {fmt(b.kv_budget, 'GB')} is left after the "
                             "weights; lower the context or raise the GPUs per replica")
    return b


def add_budget_steps(ch, b: Budget, *, source: str | dict = "parameters cell", utilization_value=None,
                     users: str = "U", per_gpu_users: bool = True, context_source: str | None = None):
    """Append the budget to a utils.chain.Chain as rows (symbols C, g, u, N_s, b_w, M_w, m_w, c_u,
    m_kv, M_kv, kappa, rho, T, kv_u, then the users under the symbol `users` and, if per_gpu_users,
    U_g; sizes per GPU in GB/GPU), so a page shows the same arithmetic that `budget` did.
    `utilization_value`: the catalog Value to cite for u (vLLM's default, with its source);
    `source`: where the inputs g, u, b_w, m_a and T come from: one source for all, or {symbol: source} (a chapter's
    parameters each citing their own; a symbol it omits: "parameters cell");
    `context_source`: where the context T comes from, when it has a source of its own (default: `source`)."""
    cite = (lambda sym: source.get(sym, "parameters cell")) if isinstance(source, dict) else (lambda sym: source)
    per_gpu = Q_(1, "GPU")
    ch.given("C", b.memory.total.to("GB") / per_gpu, b.memory.label, kind=b.memory.kind, source=b.memory.source)
    ch.given("g", Q_(b.gpus, "GPU"), "GPUs per replica (one copy of the model, tensor parallel)",
             kind="assumption", source=cite("g"))
    label = "share of memory the engine manages (weights, activation peak, KV)"
    if utilization_value is not None:
        ch.given("u", utilization_value, label)
    else:
        ch.given("u", b.utilization, label, kind="assumption", source=cite("u"))
    ch.given("N_s", b.n_params, "weights stored", kind="derived", source="counted from the model's "
             "configuration by utils.models")
    ch.given("b_w", Q_(b.weight_bytes_per_param, "byte/parameter"), "bytes per weight", kind="assumption",
             source=cite("b_w"))
    ch.step("M_w", "N_s*b_w", "GB", "weights, one copy")
    ch.step("m_w", "M_w/g", "GB/GPU", "weights per GPU")
    ch.step("c_u", "C*u", "GB/GPU", "memory per GPU the engine manages")
    if b.activation_per_gpu.m:
        ch.given("m_a", b.activation_per_gpu.to("GB") / per_gpu, "activation peak per GPU", kind="assumption",
                 source=cite("m_a"))
        ch.step("m_kv", "c_u - m_w - m_a", "GB/GPU", "KV budget per GPU")
    else:
        ch.step("m_kv", "c_u - m_w", "GB/GPU", "KV budget per GPU, at most (the activation peak also comes out of it)")
    ch.step("M_kv", "g*m_kv", "GB", "KV budget per replica")
    ch.given("kappa", b.kv_per_token, "KV per token, all layers", kind="derived",
             source="utils.models.kv_bytes_per_token")
    ch.given("rho", b.copies, "copies of each token's KV the replica keeps", kind="derived",
             source="utils.models.kv_copies (KV heads split over the GPUs, copied when GPUs outnumber them)")
    ch.given("T", Q_(b.context_tokens, "token/sequence"), "context each user holds", kind="assumption",
             source=context_source or cite("T"))
    ch.step("kv_u", "rho*kappa*T", "GB/sequence", "KV per user, across the replica")
    ch.step(users, "floor(M_kv/kv_u)", "sequence", "users per replica: whole caches that fit")
    if per_gpu_users:
        ch.step("U_g", f"{users}/g", "sequence/GPU", "users per GPU")
    return ch


# --- the decode step's inputs, for a chain that puts users on the roofline -------------------------------
MODELS_SOURCE = "counted from the catalog config by utils.models"


def add_decode_inputs(ch, m, acc, chip, kv_bytes_per_element: float) -> None:
    """The inputs of one decode step per GPU: the two ceilings, FLOPs per weight, the weights multiplied
    and read, one token per user, and attention's FLOPs per KV byte (P, W, k, N_a, N_r, tau, I_kv)."""
    n = models.param_count(m)
    per_gpu = Q_(1, "GPU")
    ch.given("P", chip.peak / per_gpu, "dense bf16 tensor rate per GPU", kind=acc["bf16_dense"].kind,
             source=acc["bf16_dense"].cite)
    ch.given("W", chip.bandwidth / per_gpu, "HBM bandwidth per GPU", kind=acc["hbm_bandwidth"].kind,
             source=acc["hbm_bandwidth"].cite)
    ch.given("k", Q_(2, "FLOP/parameter/token"), "FLOPs per weight per token (one multiply-add)",
             kind="derived", source="a matrix product")
    ch.given("N_a", n["active"], "weights multiplied per token", kind="derived", source=MODELS_SOURCE)
    ch.given("N_r", n["total"] - n["embedding"], "weights read per step (all but the embedding lookup)",
             kind="derived", source=MODELS_SOURCE)
    ch.given("tau", Q_(1, "token/sequence"), "tokens each user gets per decode step", kind="derived",
             source="decode: one token per sequence per step")
    ch.given("I_kv", models.kv_term_intensity(m, kv_bytes_per_element), "attention FLOPs per KV byte read",
             kind="derived", source="QK^T and AV per cached token (utils.models.kv_term_intensity)")


# --- prose the serving-memory chapters share ------------------------------------------------------
def users_text(x) -> str:
    """A count of users (sequences in flight) for prose: the number alone, the noun is in the sentence."""
    return fmt(float(x.to("sequence").magnitude) if hasattr(x, "units") else float(x))


def per_user_text(x, unit: str) -> str:
    """A per-user quantity (per sequence) for prose, in `unit` without the "/sequence"."""
    return fmt(Q_(float(x.to(unit + "/sequence").magnitude), unit))


def mlperf_limits_source() -> str:
    """Where the book's latency objectives come from: MLPerf Inference's limits for Llama-2-70B, formatted from the
    catalog entry software.mlperf-inference with its source (the chapters that take the objectives cite this)."""
    conf = catalog.entry("software", "mlperf-inference")
    ttft = conf["llama2_70b_interactive_ttft"]
    return (f"MLPerf Inference's limits for Llama-2-70B: interactive {fmt(ttft.q)} to first token and "
            f"{fmt(conf.q('llama2_70b_interactive_tpot'))} per output token, server "
            f"{fmt(conf.q('llama2_70b_server_ttft').to('s'))} and {fmt(conf.q('llama2_70b_server_tpot'))}, met by "
            f"{pct(float(conf.q('target_latency_percentile').m))} of queries ({ttft.cite}, {ttft.source.url})")
