"""cost-per-training-token: dollars per model FLOP from the GPU price and the MFU, times 6N; the run in one
multiplication; and the comparison with an inference token (a prompt token prefilled at the training MFU,
a generated token decoded at a share of the HBM bandwidth).

The model is one parameter: N (multiplied per token) for the FLOPs, the total parameters for the weights a
decode step reads, and the KV-cache bytes per token all follow from it, so no result mixes two models.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains import fleet_size
from utils.models import kv_bytes_per_token, param_count
from utils.params import Param, Result, Spec
from utils.roofline import ACHIEVED, FRACTIONS, fraction_source
from utils.serving import vllm_utilization, vllm_utilization_value
from utils.training import H100_RENTAL_RATES as RATES
from utils.training import flops_per_parameter_token, h100_rental_rates, rental_rate_source
from utils.units import escape_dollars, fmt, pct, q, short
from utils.verdicts import UNCHECKABLE, Claim, ratio, within

if TYPE_CHECKING:
    import numpy as np

RATE_NAMES = dict(zip(RATES, ("contract, low", "one-year contract", "RunPod community", "Lambda on demand",
                              "AWS on demand")))
# A decode step reads HBM at the shared achieved share others measured (catalog: software achieved-fraction),
# as every chapter that turns the HBM bandwidth into a rate does; 1 is the roofline floor.
BW_FRACTION = FRACTIONS[1]
ENGINE_RESERVE = 1 - vllm_utilization()   # what vLLM's default leaves unmanaged (catalog: software vllm)
RESERVE_SOURCE = (f"1 - vLLM's default gpu_memory_utilization of {vllm_utilization():g} "
                  f"({vllm_utilization_value().cite}), as in the other serving chapters")


def mfu_source() -> str:
    run = catalog.run("llama-3-405b-pretraining")
    m = [as_float(run.q(f"table4_row{i}_mfu")) for i in (1, 2, 3)]
    return (f"the claim's MFU (spec/001, fleet paragraph); Llama-3-405B reported {pct(min(m)).rstrip('%')}-"
            f"{pct(max(m))} on H100 (arXiv:2407.21783, Table 4)")


PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the claim's model"),
    Param("n_tokens", 15e12, "training tokens, D", unit="token", source="the claim (15T tokens)"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key", check="accelerator",
          source="catalog: H100 SXM, the same source's fleet paragraph"),
    Param("mfu", 0.40, "training model FLOPs utilisation on the 6N basis: share of the dense bf16 peak spent on 6N "
          "(attention and recomputation not counted; fleet-size converts other bases)",
          check="fraction", source=mfu_source()),
    Param("rent_usd_per_gpu_hour", h100_rental_rates()["contract_1y"], "rental rate", unit="USD/GPU/hour",
          source="catalog h100-rental.contract_1y: one-year H100 contract, March 2026 (SemiAnalysis)"),
    Param("decode_batch", 64, "sequences in one decode step", unit="sequence", check="whole",
          source="this book's assumption"),
    Param("decode_context", 8192, "tokens in each sequence's KV cache, all read at every decode step",
          unit="token", check="non_negative", source="this book's assumption (0 gives the weights only)"),
    Param("weight_bytes_per_param", 2.0, "bytes per served weight (2 = bf16, 1 = fp8)", unit="byte/parameter",
          source="bf16 serving"),
    Param("kv_bytes_per_element", 2.0, "bytes per KV-cache element (2 = bf16, 1 = fp8)", unit="byte",
          source="a bf16 cache"),
    Param("decode_bandwidth_efficiency", 0.866, "share of the datasheet HBM bandwidth a decode step reaches "
          "(1 = the roofline floor)", check="fraction", source=fraction_source("hbm_bandwidth")),
)

RESULTS = (
    Result("usd_per_flop", "USD/FLOP", "Dollars per model FLOP at the MFU", of="c_F"),
    Result("usd_per_training_token", "USD/token", "Dollars per training token (6N)", of="c_t"),
    Result("run_cost", "USD", "Cost of the training run", of="C_run"),
    Result("gpu_hours", "GPU*hour", "GPU-hours of the training run at the MFU", of="H_run"),
    Result("usd_per_inference_token", "USD/token", "Dollars per generated token at the decode batch and context",
           of="c_i"),
    Result("usd_per_prompt_token", "USD/token", "Dollars per prompt token at the training MFU", of="c_p"),
    Result("decode_utilization", "", "Decode FLOP utilisation", of="u_d", percent=True),
    Result("inference_over_training", "", "Generated-token cost over training-token cost", of="rho"),
    Result("breakeven_decode_batch", "sequence",
           "Decode batch at which a generated token costs a training token (weights only)", of="B_x"),
)


def rental() -> dict:
    """The catalog's H100 rental rates, USD per GPU-hour, by field (utils.training.h100_rental_rates)."""
    return h100_rental_rates()


def rates_table() -> str:
    r = catalog.price("h100-rental")
    return ("| rate | USD per GPU-hour | what it is | source | read |\n|---|---|---|---|---|\n"
            + "\n".join(f"| `{f}` | {fmt(r[f].q)} | {escape_dollars(r[f].note)} | "
                        f"[{escape_dollars(r[f].source.title.split(',')[0])}]({r[f].source.url}) | {r[f].source.read} |"
                        for f in RATES))


def _add_bandwidth_share(ch, eff):
    """e_W: the catalog's achieved share at the default, the roofline floor at 1, the reader's value otherwise."""
    label = "share of the HBM bandwidth a decode step reaches"
    if eff == BW_FRACTION:
        ch.given("e_W", ACHIEVED["hbm_bandwidth"], label)
    elif math.isclose(eff, 1.0):
        ch.given("e_W", q(eff, ""), label, kind="definition", source="the roofline floor: the datasheet bandwidth itself")
    else:
        ch.given("e_W", q(eff, ""), label, kind="assumption", source="parameters cell")


def _per_gpu(value, unit):
    return q(as_float(value.q, unit), f"{unit}/GPU"), value.kind, value.cite


def token_costs(n_params, n_weights, n_tokens, gpu, mfu, rent, decode_batch, decode_context, weight_bytes,
                kv_bytes, bw_eff, *, source="parameters cell", model_source=None, sources=None,
                title="Cost of a training token and of a generated token") -> Chain:
    """The chain. n_params: multiplied per token (6N, 2N); n_weights: the weights a decode step reads;
    kv_bytes: KV-cache bytes per token, all layers. sources: a source per input symbol (u, D, b_w, B, T)
    that overrides `source`, as compute() gives each parameter's own while it holds its default."""
    acc = catalog.accelerator(gpu)
    k = flops_per_parameter_token()
    msrc = model_source or source
    src_of = {**dict.fromkeys(("u", "D", "b_w", "B", "T"), source), **(sources or {})}
    ch = Chain(title)
    kind, src = rental_rate_source(rent) or ("assumption", "the reader's value (parameters cell)")
    ch.given("r", q(rent, "USD/GPU/hour"), "rental rate", kind=kind, source=src)
    peak, kind, src = _per_gpu(acc["bf16_dense"], "FLOP/s")
    ch.given("P", peak, f"{acc.name} dense bf16 peak", kind=kind, source=src, digits=4)
    ch.given("u", q(mfu, ""), "training MFU", kind="assumption", source=src_of["u"])
    ch.step("c_F", "r/(u*P)", "USD/FLOP", "dollars per model FLOP")
    ch.given("N", q(n_params, "parameter"), "parameters multiplied per token", kind="spec", source=msrc)
    ch.given("k", q(k["train"], "FLOP/parameter/token"), "training FLOPs per parameter per token",
             kind="derived", source="the 6ND chapter")
    ch.step("F_t", "k*N", "FLOP/token", "FLOPs per training token, 6N")
    ch.step("c_t", "c_F*F_t", "USD/token", "dollars per training token")
    ch.step("g_t", "F_t/(u*P)", "GPU*s/token", "GPU-seconds per training token")
    ch.given("D", q(n_tokens, "token"), "training tokens", kind="assumption", source=src_of["D"])
    ch.step("H_run", "g_t*D", "GPU*hour", "GPU-hours of the run")
    ch.step("C_run", "c_t*D", "USD", "cost of the run")
    # inference
    ch.given("k_i", q(k["forward"], "FLOP/parameter/token"), "inference FLOPs per parameter per token "
             "(forward only)", kind="derived", source="the forward product of the 6ND chapter")
    ch.step("c_p", "r*k_i*N/(u*P)", "USD/token", "dollars per prompt token, prefilled at the training MFU")
    bw, kind, src = _per_gpu(acc["hbm_bandwidth"], "byte/s")
    ch.given("W", bw, f"{acc.name} HBM bandwidth", kind=kind, source=src)
    ch.step("I_star", "P/W", "FLOP/byte", "ridge: where the compute and memory ceilings meet")
    _add_bandwidth_share(ch, bw_eff)
    ch.given("N_w", q(n_weights, "parameter"), "weights a decode step reads (all of them)", kind="spec",
             source=msrc)
    ch.given("b_w", q(weight_bytes, "byte/parameter"), "bytes per served weight", kind="assumption", source=src_of["b_w"])
    ch.given("B", q(decode_batch, "sequence"), "decode batch", kind="assumption", source=src_of["B"])
    ch.given("tau", q(1, "token/sequence"), "tokens each sequence adds per step", kind="derived",
             source="decode: one token per sequence per step")
    ch.given("T", q(decode_context, "token/sequence"), "context each sequence reads per step",
             kind="assumption", source=src_of["T"])
    ch.given("kappa", q(kv_bytes, "byte/token"), "KV-cache bytes per token, all layers", kind="derived",
             source=f"utils.models.kv_bytes_per_token; {msrc}")
    ch.step("F_s", "k_i*N*B*tau", "TFLOP", "FLOPs of one decode step")
    ch.step("M_s", "N_w*b_w + B*T*kappa", "GB", "bytes one step reads: the weights once, each sequence's cache")
    ch.step("t_s", "Max(F_s/P, M_s/(e_W*W))", "GPU*ms", "GPU-time of one step")
    ch.step("u_d", "F_s/(P*t_s)", "", "decode FLOP utilisation")
    ch.step("g_i", "t_s/(B*tau)", "GPU*s/token", "GPU-seconds per generated token")
    ch.step("c_i", "r*g_i", "USD/token", "dollars per generated token")
    ch.step("rho", "c_i/c_t", "", "generated token over training token")
    ch.step("c_kv", "r*T*kappa/(e_W*W*tau)", "USD/token", "the cache's share of a generated token")
    ch.solve("B_x", "N_w*b_w/(e_W*W*B_x*tau) = k*N/(u*P)", "sequence",
             "batch at which a generated token costs a training token, weights only")
    if ch["B"] > ch["B_x"] and kv_bytes > 0:
        ch.solve("T_x", "(N_w*b_w + B*T_x*kappa)/(e_W*W*B*tau) = k*N/(u*P)", "token/sequence",
                 "context at which, at this batch, it costs a training token")
    hbm, kind, src = _per_gpu(acc["hbm_capacity"], "GB")
    ch.given("C_hbm", hbm, f"{acc.name} HBM capacity", kind=kind, source=src)
    ch.given("f_r", q(ENGINE_RESERVE, ""), "share of HBM the serving engine keeps back", kind="assumption",
             source=RESERVE_SOURCE)
    ch.step("g_min", "ceiling(M_s/(C_hbm*(1 - f_r)))", "GPU", "GPUs a replica needs to hold weights and cache")
    return ch


def architecture(m, kv_bytes_per_element=2.0) -> dict:
    """What the chain needs of a model, from one entry: N, the weights read, the KV bytes per token."""
    pc = param_count(m)
    return dict(n_params=pc["active"].m, n_weights=pc["total"].m,
                kv_bytes=kv_bytes_per_token(m, kv_bytes_per_element).to("byte/token").m)


def compute(p) -> Chain:
    a = architecture(p.model, p.kv_bytes_per_element)
    return token_costs(a["n_params"], a["n_weights"], p.n_tokens, p.gpu, p.mfu, p.rent_usd_per_gpu_hour,
                       p.decode_batch, p.decode_context, p.weight_bytes_per_param, a["kv_bytes"],
                       p.decode_bandwidth_efficiency, model_source=f"{p.model.name}, counted from its configuration",
                       # each input shows its parameter's own source while it holds the default
                       sources={sym: SPEC.source(p, name) for sym, name in (
                           ("u", "mfu"), ("D", "n_tokens"), ("b_w", "weight_bytes_per_param"), ("B", "decode_batch"),
                           ("T", "decode_context"))})


# --- the claim ------------------------------------------------------------------------------------
# As the source states it: a 70B training token at about three quarters of a microdollar, on the 15T-token
# run; the 40% MFU on H100 is the same source's fleet figure. Three quarters is stated in quarters, so it
# holds within half a quarter. The decode side uses Llama-3-70B's own cache at the book's serving point.
CLAIM = dict(n_params=70e9, n_tokens=15e12, gpu="h100-sxm", mfu=0.40, usd_per_token=0.75e-6, quarter=0.25e-6)
QUOTES = dict(
    token="Dollars per FLOP from the GPU price and the MFU, times 6N: a 70B training token costs about "
          "three quarters of a microdollar, and the whole 15T-token run follows in one multiplication.",
    cheaper="The chain, the comparison to an inference token, and why the training token is cheaper.")
SOURCE = "spec/001, paragraph on the cost of a training token"
CLAIM_DECODE = dict(decode_batch=64, decode_context=8192, weight_bytes=2.0, bw_eff=BW_FRACTION)
# Published API prices for Llama models of the claim's size (catalog prices, read with their pages' URLs).
API_KEYS = ("wandb-llama-3-3-70b-api", "deepinfra-llama-3-1-70b-turbo-api")


def _api_price(key: str) -> dict:
    e = catalog.price(key)
    return dict(name=e.name, input=as_float(e.q("input_per_mtoken"), "USD/Mtoken"),
                output=as_float(e.q("output_per_mtoken"), "USD/Mtoken"), served=e.q("served"),
                url=e["output_per_mtoken"].source.url, read=e["output_per_mtoken"].source.read)


API_PRICES = tuple(_api_price(k) for k in API_KEYS)


def claim_chain(rent=None, **changes) -> Chain:
    """The claim's inputs (70B nominal, Llama-3-70B's cache), at a catalog rate (the contract rate by default)."""
    kv = kv_bytes_per_token(catalog.model("llama-3-70b"), 2.0).to("byte/token").m
    d = {**CLAIM_DECODE, "kv_bytes": kv, **changes}
    return token_costs(CLAIM["n_params"], CLAIM["n_params"], CLAIM["n_tokens"], CLAIM["gpu"], CLAIM["mfu"],
                       rental()["contract_1y"] if rent is None else rent, d["decode_batch"], d["decode_context"],
                       d["weight_bytes"], d["kv_bytes"], d["bw_eff"], source="the claim",
                       title="The claim's inputs, at the catalog's one-year contract rate")


def tolerance() -> float:
    """Half a quarter of a microdollar, relative to three quarters."""
    return 0.5 * CLAIM["quarter"] / CLAIM["usd_per_token"]


def node_fit(ch: Chain, gpus: int) -> dict:
    """At the chain's context: the decode batch a node of `gpus` GPUs holds (the weights once, each sequence's
    cache, the serving engine's reserve kept back), and the batch at which a generated token costs a training
    token (None where no batch gets it that cheap: the cache alone costs more)."""
    weights = as_float(ch["N_w"] * ch["b_w"], "GB")
    seq = as_float(ch["T"] * ch["kappa"], "GB/sequence")
    free = gpus * as_float(ch["C_hbm"], "GB/GPU") * (1 - as_float(ch["f_r"]))
    # the bytes a decode step may read per generated token for the GPU-time of one training token (tau = 1)
    budget = as_float(ch["e_W"] * ch["W"] * ch["g_t"], "GB/token")
    fit = math.floor((free - weights) / seq) if seq > 0 else math.inf
    even = weights / (budget - seq) if budget > seq else None
    return dict(gpus=gpus, seq_gb=seq, fit=max(fit, 0), even=even, cheaper_everywhere=even is None or even > fit)


@memoised
def checks() -> dict:
    rate = rental()
    cc = claim_chain()
    claimed = q(CLAIM["usd_per_token"], "USD/token")
    cc.given("c_star", claimed, "the claimed cost per training token", kind="spec", source="spec/001")
    cc.solve("r_star", "c_star = r_star*k*N/(u*P)", "USD/GPU/hour", "rental rate that reproduces the claim")
    cc.solve("u_star", "c_star = r*k*N/(u_star*P)", "", "MFU that reproduces it at the contract rate")
    cc.step("C_star", "c_star*D", "USD", "the run at the claimed cost per token")
    per_rate = {f: ratio(claim_chain(rate[f])["c_t"], claimed) for f in RATES}
    run70 = catalog.run("llama-3-70b-pretraining")
    card_h, card_d = run70.q("gpu_hours").to("GPU*hour"), run70.q("tokens").to("token")
    card = claim_chain()
    card_mfu = ratio(card["F_t"] * card_d, card_h * card["P"])
    floor = claim_chain(bw_eff=1.0)
    wonly, wonly_floor = claim_chain(decode_context=0), claim_chain(decode_context=0, bw_eff=1.0)
    fp8_kv = cc["kappa"].m / 2
    fp8 = claim_chain(weight_bytes=1.0, kv_bytes=fp8_kv)
    fp8_256 = claim_chain(weight_bytes=1.0, kv_bytes=fp8_kv, decode_batch=256)
    node = fleet_size.SPEC.defaults()["gpus_per_node"]       # one HGX/DGX H100 baseboard, as fleet-size plans
    return dict(cc=cc, claimed=claimed, rate=rate, per_rate=per_rate, floor=floor, wonly=wonly,
                fit=node_fit(cc, node), fit_floor=node_fit(floor, node),
                wonly_floor=wonly_floor, fp8=fp8, fp8_256=fp8_256, card_gpu_hours=card_h, card_mfu=card_mfu,
                card_ratio=ratio(card_h, cc["H_run"] * card_d / cc["D"]),
                card_usd_token=(card_h * cc["r"] / card_d).to("USD/token"), tol=tolerance(),
                r_star=(cc["r_star"] * q(1, "GPU")).to("USD/hour"))


def claims() -> list[Claim]:
    ck = checks()
    cc, floor, rate, pr = ck["cc"], ck["floor"], ck["rate"], ck["per_rate"]
    holds = within(cc["c_t"], ck["claimed"], ck["tol"])
    market = claim_chain(rate["runpod_community"])["c_t"]
    b_x, b_x_floor = cc["B_x"].m, floor["B_x"].m
    fit = ck["fit"]
    even, even_floor = (f"a batch of {x['even']:.0f}" if x["even"] is not None else "no batch"
                        for x in (fit, ck["fit_floor"]))
    name = catalog.model("llama-3-70b").name
    return [
        Claim("training-token", quote=QUOTES["token"], source=SOURCE,
              claimed=f"about {fmt(ck['claimed'])} for a {short(CLAIM['n_params'])} training token; "
                      f"the {short(CLAIM['n_tokens'])}-token run in one multiplication",
              derived=f"{fmt(cc['c_t'])} at the {fmt(q(rate['contract_1y'], 'USD/hour'))} one-year contract rate and "
                      f"{pct(CLAIM['mfu'])} MFU, a run of {fmt(cc['C_run'])}",
              # The cost is proportional to a price the source never gives: the book's figure, not a check.
              verdict=UNCHECKABLE,
              reason=f"The source prices the token \"from the GPU price and the MFU\" and names no price, and the "
                     f"cost is proportional to it: the claim implies {fmt(ck['r_star'])} per H100 at {pct(CLAIM['mfu'])} "
                     f"MFU, a rate solved from the claim, which is not a reading. The book's own figures: at "
                     f"{pct(CLAIM['mfu'])} MFU the one-year contract rate gives {fmt(cc['c_t'])} and the "
                     f"marketplace rate {fmt(market)}, both "
                     f"{'within' if holds else 'outside'} half a quarter of the claim; on-demand list "
                     f"prices give {pr['lambda_on_demand']:.1f} to {pr['aws_p5_on_demand']:.1f} times the claim, "
                     f"and the GPU-hours Meta published for {name} imply {pct(ck['card_mfu'])} MFU over the "
                     f"whole run."),
        Claim("cheaper", quote=QUOTES["cheaper"], source=SOURCE,
              claimed="a training token is cheaper than an inference token",
              derived=f"a generated token at batch {CLAIM_DECODE['decode_batch']} and "
                      f"{fmt(q(CLAIM_DECODE['decode_context'], 'token'))} of context costs {cc['rho'].m:.2f} "
                      f"training tokens ({floor['rho'].m:.2f} at the roofline floor); "
                      f"{ck['wonly']['rho'].m:.2f} with the weights alone; a prompt token "
                      f"{ratio(cc['c_p'], cc['c_t']):.2f}",
              # Which is cheaper turns on a serving batch and context the source never gives.
              verdict=UNCHECKABLE,
              reason=f"The source names no serving batch, context or price for \"an inference token\", and the "
                     f"answer turns on them. On the book's own figures, with the decode step at "
                     f"{pct(CLAIM_DECODE['bw_eff'])} of the HBM bandwidth: with the weights alone (no context) the "
                     f"training token is the cheaper below a decode batch of {b_x:.0f} ({b_x_floor:.0f} at the "
                     f"roofline floor); at the book's {fmt(q(CLAIM_DECODE['decode_context'], 'token'))} of context one "
                     f"{fit['gpus']}-GPU node holds {fit['fit']:,} sequences ({fmt(q(fit['seq_gb'], 'GB'))} of cache "
                     f"each, the weights once, {pct(ENGINE_RESERVE)} kept back), and "
                     + (f"the training token is the cheaper at every batch that fits (the two would cost the same "
                        f"only at {even})" if fit["cheaper_everywhere"] else
                        f"a generated token is the cheaper from {even}, which fits")
                     + (f"; at the roofline floor they would meet at {even_floor}, beyond what fits"
                        if ck["fit_floor"]["cheaper_everywhere"] else
                        f"; at the roofline floor they meet at {even_floor}, inside what fits")
                     + f"; at batch {CLAIM_DECODE['decode_batch']} the two cost the same at {fmt(cc['T_x'].m)} "
                     f"tokens of context ({fmt(floor['T_x'].m)} at the floor); a prompt token costs "
                     f"{fmt(ratio(cc['c_p'], cc['c_t']))} of a training token."),
    ]


def _musd(x) -> str:
    """A run's cost in words: one decimal of millions of dollars."""
    return f"{x.to('USD').m / 1e6:.1f} million USD"


def check_texts() -> dict:
    """The numbers the check and API sections name."""
    ck = checks()
    cc, rate, pr = ck["cc"], ck["rate"], ck["per_rate"]
    lo = q(API_PRICES[1]["output"], "USD/Mtoken").to("USD/token")
    hi = q(API_PRICES[0]["output"], "USD/Mtoken").to("USD/token")
    b_x = cc["B_x"].m
    out = {"check-basis-token": f"the GPU price taken as the catalog's one-year H100 contract rate, "
                                f"{fmt(rate['contract_1y'])} USD per GPU-hour, at the same source's "
                                f"{pct(CLAIM['mfu'])} MFU, and three quarters to the nearest quarter "
                                f"(within {pct(ck['tol'])})",
           "check-basis-cheaper": f"an inference token taken as a generated token, decoded below a batch of "
                                  f"{b_x:.0f} (weights only), or at the book's batch of "
                                  f"{CLAIM_DECODE['decode_batch']} with contexts above {fmt(cc['T_x'].m)} tokens",
           "check-node": f"one {ck['fit']['gpus']}-GPU node", "check-fit": f"{ck['fit']['fit']:,} sequences",
           "check-seq-gb": fmt(q(ck["fit"]["seq_gb"], "GB")),
           **{f"check-even{sfx}": (f"{x['even']:.0f} sequences" if x["even"] is not None else "no batch")
              for sfx, x in (("", ck["fit"]), ("-floor", ck["fit_floor"]))},
           "claim-usd-value": fmt(ck["claimed"]), "claim-n": short(CLAIM["n_params"]), "claim-d": short(CLAIM["n_tokens"]),
           "claim-mfu": pct(CLAIM["mfu"]), "claim-tol": pct(ck["tol"]),
           "check-rent-star": fmt(ck["r_star"]), "check-u-star": pct(cc["u_star"]),
           "check-c-contract": fmt(cc["c_t"]), "check-g-t": fmt(cc["g_t"]),
           "check-run-star": _musd(cc["C_star"]), "check-run-contract": _musd(cc["C_run"]),
           "check-gpu-hours": fmt(cc["H_run"], "GPU*hour"), "card-gpu-hours": fmt(ck["card_gpu_hours"], digits=2),
           "card-mfu": pct(ck["card_mfu"]), "card-ratio": f"{ck['card_ratio']:.2f}",
           "card-usd-token": fmt(ck["card_usd_token"]), "check-eff": pct(CLAIM_DECODE["bw_eff"]),
           "check-b-x": f"{fmt(cc['B_x'].m)} sequences", "check-b-x-floor": fmt(ck["floor"]["B_x"].m),
           "check-t-x": f"{fmt(cc['T_x'].m)} tokens", "check-t-x-floor": fmt(ck["floor"]["T_x"].m),
           "check-rho": f"{cc['rho'].m:.2f}", "check-rho-floor": f"{ck['floor']['rho'].m:.2f}",
           "check-rho-wonly": f"{ck['wonly']['rho'].m:.2f}", "check-rho-wonly-floor": f"{ck['wonly_floor']['rho'].m:.2f}",
           "check-g-min": fmt(cc["g_min"]), "check-reserve": pct(ENGINE_RESERVE),
           "check-batch": str(CLAIM_DECODE["decode_batch"]),
           "check-context": f"{fmt(CLAIM_DECODE['decode_context'])} tokens", "check-c-i": fmt(cc["c_i"]),
           "check-c-i-wonly": fmt(ck["wonly"]["c_i"]),
           "api-hi": fmt(hi), "api-lo": fmt(lo), "api-hi-ratio": f"{ratio(hi, cc['c_t']):.2f}",
           "api-lo-ratio": f"{ratio(lo, cc['c_t']):.2f}", "api-kv-share": fmt(cc["c_kv"]),
           "api-fp8": fmt(ck["fp8"]["c_i"]), "api-fp8-256": fmt(ck["fp8_256"]["c_i"])}
    for f, key in (("contract_1y", "contract"), ("runpod_community", "runpod"), ("lambda_on_demand", "lambda"),
                   ("aws_p5_on_demand", "aws")):
        out[f"check-{key}"] = fmt(q(rate[f], "USD/hour"))
        if key != "contract":
            out[f"check-c-{key}"] = fmt(q(pr[f] * CLAIM["usd_per_token"], "USD/token"))
    return out


def api_table() -> str:
    cc = claim_chain()
    rows = []
    for p in API_PRICES:
        out = q(p["output"], "USD/Mtoken").to("USD/token")
        rows.append(f"| [{p['name']}]({p['url']}) | {fmt(p['input'])} | {fmt(p['output'])} | {fmt(out)} | "
                    f"{ratio(out, cc['c_t']):.2f} | {p['served']} | {p['read']} |")
    return ("| offer | input, USD per million tokens | output, USD per million tokens | output, USD per token | "
            "output / the claim's training token at the contract rate | served in | read |\n"
            "|---|---|---|---|---|---|---|\n" + "\n".join(rows))


# --- figure, sensitivities, exercises ---------------------------------------------------------------
def training_curves(p, rents, mfus=(0.3, 0.4, 0.5)) -> dict[float, np.ndarray]:
    """USD per million training tokens against the rent, one line per MFU (the parameters' own included)."""
    import numpy as np
    ch = compute(p)
    f_t, peak = as_float(ch["F_t"], "FLOP/token"), as_float(ch["P"], "FLOP/s/GPU")
    return {u: np.asarray(rents) / 3600 * f_t / (u * peak) * 1e6 for u in sorted({*mfus, p.mfu})}


def decode_curves(p, batches, contexts=(0, 2048, 8192, 32768), bw_eff=None) -> dict[int, np.ndarray]:
    """USD per million generated tokens against the decode batch, one line per context."""
    import numpy as np
    ch = compute(p)
    peak = as_float(ch["P"], "FLOP/s/GPU")
    bw = as_float(ch["W"], "byte/s/GPU") * (p.decode_bandwidth_efficiency if bw_eff is None else bw_eff)
    n, w, kv = ch["N"].m, as_float(ch["N_w"] * ch["b_w"], "byte"), ch["kappa"].m
    b = np.asarray(batches, dtype=float)
    return {c: p.rent_usd_per_gpu_hour / 3600 * np.maximum(2 * n * b / peak, (w + b * c * kv) / bw) / b * 1e6
            for c in sorted({*contexts, int(p.decode_context)})}


def what_changes(p, ch: Chain) -> dict:
    """What changes the answer, on the claim's inputs at the contract rate."""
    rate = rental()
    lo, hi = claim_chain(rate["contract_1y_low"]), claim_chain(rate["aws_p5_on_demand"])
    b0, c0 = CLAIM_DECODE["decode_batch"], CLAIM_DECODE["decode_context"]
    mfu_c = {m: token_costs(CLAIM["n_params"], CLAIM["n_params"], CLAIM["n_tokens"], CLAIM["gpu"], m,
                            rate["contract_1y"], b0, c0, 2.0, 0.0, BW_FRACTION)["c_t"] for m in (0.30, 0.50)}
    eff_lo, floor = claim_chain(bw_eff=0.5), claim_chain(bw_eff=1.0)
    return {"wc-rent-lo": fmt(lo["c_t"]), "wc-rent-hi": fmt(hi["c_t"]), "wc-run-lo": _musd(lo["C_run"]),
            "wc-run-hi": _musd(hi["C_run"]), "wc-mfu-lo": pct(0.30), "wc-mfu-hi": pct(0.50),
            "wc-c-mfu-lo": fmt(mfu_c[0.30]), "wc-c-mfu-hi": fmt(mfu_c[0.50]),
            "wc-b-half": str(b0 // 2), "wc-b-double": str(b0 * 2),
            "wc-c-b-half": fmt(claim_chain(decode_batch=b0 // 2)["c_i"]),
            "wc-c-b-double": fmt(claim_chain(decode_batch=b0 * 2)["c_i"]),
            "wc-ctx-short": f"{fmt(c0 // 4)} tokens", "wc-ctx-long": f"{fmt(c0 * 4)} tokens",
            "wc-c-ctx-short": fmt(claim_chain(decode_context=c0 // 4)["c_i"]),
            "wc-c-ctx-long": fmt(claim_chain(decode_context=c0 * 4)["c_i"]),
            "wc-eff-lo": pct(0.5), "wc-c-eff-lo": fmt(eff_lo["c_i"]), "wc-c-eff-1": fmt(floor["c_i"]),
            "wc-bx-lo": f"{fmt(eff_lo['B_x'].m)} sequences", "wc-bx-1": f"{fmt(floor['B_x'].m)} sequences"}


def batch_for_price(ch, price):
    """The decode batch at which a generated token costs `price`: r (N_w b_w/(e W B) + T kappa/(e W)) = price;
    None if the cache alone costs more."""
    head = price - ch["c_kv"]
    if head.m <= 0:
        return None
    return as_float(ch["r"] * ch["N_w"] * ch["b_w"] / (ch["e_W"] * ch["W"] * head * ch["tau"]), "sequence")


def exercises(p, ch: Chain) -> dict:
    rate = rental()
    cc, hi = claim_chain(), claim_chain(rate["aws_p5_on_demand"])
    b200 = token_costs(CLAIM["n_params"], CLAIM["n_params"], CLAIM["n_tokens"], "b200", CLAIM["mfu"],
                       rate["contract_1y"], 64, 8192, 2.0, cc["kappa"].m, BW_FRACTION)
    peak_ratio = ratio(b200["P"], cc["P"])
    m8 = catalog.model("llama-3-8b")
    a8 = architecture(m8)
    ex3 = token_costs(a8["n_params"], a8["n_weights"], 1e9, "h100-sxm", 0.35, rate["contract_1y"], 64, 8192, 2.0,
                      a8["kv_bytes"], BW_FRACTION)
    out = {"ex1-run": _musd(hi['C_run']),
           "ex1-ratio": f"{ratio(hi['C_run'], cc['C_run']):.2f}", "ex2-peak-ratio": f"{peak_ratio:.2f}",
           "ex2-rent": fmt(q(rate["contract_1y"] * peak_ratio, "USD/hour")), "ex3-tokens": short(1e9),
           "ex3-mfu": pct(0.35), "ex3-params": fmt(q(a8["n_params"], "parameter")), "ex3-token": fmt(ex3["c_t"]),
           "ex3-job": fmt(ex3["C_run"], "USD")}
    lo = q(API_PRICES[1]["output"], "USD/Mtoken").to("USD/token")
    fp8 = claim_chain(weight_bytes=1.0, kv_bytes=cc["kappa"].m / 2)
    for name, ch in (("bf16", cc), ("fp8", fp8)):
        b = batch_for_price(ch, lo)
        text = (f"with {name} weights and cache the KV share alone, {fmt(ch['c_kv'])}, is above the price, so no "
                "batch reaches it at this context" if b is None else
                f"with {name} weights and cache, a batch of {math.ceil(b)} (the KV share is {fmt(ch['c_kv'])})")
        out[f"ex4-{name}"] = text[0].upper() + text[1:]
    return out


def chain_texts(p) -> dict:
    """The numbers the chain section's prose names, for the reader's parameters."""
    ch, floor = compute(p), compute(p.replace(decode_bandwidth_efficiency=1.0))
    rho = ch["rho"].m
    if "T_x" in [r.name for r in ch.rows]:
        line = (f"At this batch the two cost the same at a context of {fmt(ch['T_x'].m)} tokens; longer contexts "
                "make the generated token the dearer.")
    elif ch["B"] <= ch["B_x"]:
        line = "This batch is below that, so the generated token is the dearer at any context."
    else:
        line = "With no KV cache counted, this batch makes the generated token the cheaper at any context."
    return {"p-b-x": f"{fmt(ch['B_x'].m)} sequences", "p-b-x-floor": fmt(floor["B_x"].m),
            "intro-eff": pct(p.decode_bandwidth_efficiency), "p-eff": pct(p.decode_bandwidth_efficiency),
            "p-reserve": pct(ENGINE_RESERVE), "p-c-i-floor": fmt(floor["c_i"]), "p-rho-floor": f"{floor['rho'].m:.2f}",
            "run-cost-words": _musd(ch['C_run']), "intro-tokens": short(p.n_tokens),
            "intro-batch": str(p.decode_batch), "intro-context": f"{fmt(p.decode_context)} tokens",
            "intro-ratio-text": f"{rho:.2f} times the training token, so here the "
                                + ("training token is the cheaper" if rho > 1 else "generated token is the cheaper"),
            "p-rent": fmt(ch["r"] * q(1, "GPU"), "USD/hour"), "p-mfu": pct(p.mfu), "p-gpu": p.gpu.name,
            "p-model": p.model.name, "p-peak": fmt(ch["P"] * q(1, "GPU"), "TFLOP/s", digits=4),
            "p-sustained": fmt(ch["u"] * ch["P"] * q(1, "GPU"), "TFLOP/s"), "p-flops-token": fmt(ch["F_t"]),
            "p-gpu-s-token": fmt(ch["g_t"]), "p-usd-mtoken": fmt(ch["c_t"], "USD/Mtoken"),
            "p-gpu-hours": fmt(ch["H_run"], "GPU*hour"), "p-ridge": fmt(ch["I_star"]), "p-step-bytes": fmt(ch["M_s"]),
            "p-step-time": fmt(ch["t_s"]), "p-gpu-s-gen": fmt(ch["g_i"]), "p-kv-share": fmt(ch["c_kv"]),
            "p-kv-share-frac": pct(ratio(ch["c_kv"], ch["c_i"])), "p-g-min": fmt(ch["g_min"]),
            "p-context-line": line}


SPEC = Spec("cost-per-training-token", PARAMETERS, RESULTS, compute, closed_form=True)
