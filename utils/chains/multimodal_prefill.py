"""multimodal-prefill: an image is hundreds to thousands of prompt tokens, made by a second model.

image pixels -> patches (the encoder's resize rule) -> tokens (after the 2 x 2 merger) -> the encoder's
FLOPs (2 x ViT params x patches + attention + merger) -> the LLM's prefill FLOPs over text and image
tokens (2 N T + causal attention) -> the TTFT floor on the replica -> the batch shape (images per engine
step under the step's token budget) -> KV per request and requests that fit -> the request rate each
resource allows, and which binds first. The encoder is one parameter (its figures, with their sources, are
in utils/serving/vision.py); the LLM is a catalog model.
"""
from __future__ import annotations

import dataclasses
import functools
import math

from utils import catalog, models, serving
from utils.chain import Chain
from utils.params import Param, ParameterError, Result, Spec
from utils.serving import vision
from utils.units import fmt, num, pct, q
from utils.verdicts import HOLDS, WRONG, Claim

PARAMETERS = (
    Param("model", "qwen2.5-72b", "the LLM: a catalog key or the path of a Hugging Face config.json", check="model",
          source="catalog: Qwen2.5-72B, the language model Qwen2.5-VL-72B is built on (8192 wide, 80 layers, 8 KV heads)"),
    Param("encoder", "qwen2.5-vl-vit", "the vision encoder (its patch, merge, resize rule and layers come with it)",
          check="choice", choices=tuple(vision.ENCODERS), source=vision.ENCODERS["qwen2.5-vl-vit"].source),
    Param("image_height", 1080, "image height, pixels", check="whole", source="this book's assumption: a 1080p screenshot"),
    Param("image_width", 1920, "image width, pixels", check="whole", source="this book's assumption: a 1080p screenshot"),
    Param("images", 4, "images per request", check="non_negative", source="this book's assumption"),
    Param("text_tokens", 400, "text tokens per request (system prompt and question)", check="whole",
          source="this book's assumption"),
    Param("output_tokens", 300, "tokens generated per request", check="whole", source="this book's assumption"),
    Param("gpu", "h100-sxm", "the accelerator", check="accelerator", source="catalog: H100 SXM"),
    Param("gpus", 8, "GPUs per replica (tensor parallel)", check="whole", source="one 8-GPU node"),
    Param("mfu", 0.4, "share of the dense peak that prefill and the encoder reach", check="fraction",
          source="this book's assumption (prefill is compute-bound; see prefill-vs-decode)"),
    Param("weight_bytes_per_param", 2.0, "bytes per weight (bf16)", unit="byte/parameter", source="bf16 weights"),
    Param("kv_bytes_per_element", 2.0, "bytes per KV element (bf16)", unit="byte", source="bf16 KV cache"),
    Param("step_budget", 8192, "tokens an engine step may prefill (vLLM's max_num_batched_tokens)", check="whole",
          source="this book's assumption: a chunked-prefill budget of the size vLLM deployments set"),
    Param("tpot", 0.05, "seconds per output token while decoding (the TPOT target)", unit="s",
          source="this book's assumption: 20 tokens per second per user"),
)
REFUSED = {name: "the LLM's parameters, layers, width and KV heads follow from model=, the encoder's from "
                 "encoder=; set those instead" for name in ("patch_size", "vit_layers")}

RESULTS = (
    Result("tokens_per_image", "token", "Tokens per image after the encoder", of="T_i"),
    Result("prompt_tokens", "token", "Prompt tokens per request (images and text)", of="T"),
    Result("encoder_flops", "FLOP", "Encoder FLOPs per request", of="C_enc"),
    Result("prefill_flops", "FLOP", "LLM prefill FLOPs per request", of="C_pre"),
    Result("encoder_share", "", "Encoder's share of the prefill compute", of="s_enc", percent=True),
    Result("ttft_floor", "s", "TTFT floor: encoder and prefill at the MFU, whole replica", of="t_pre"),
    Result("images_per_step", "", "Whole images one engine step can prefill", of="n_step"),
    Result("kv_per_request", "GB", "KV cache per request (prompt and output)", of="m_req"),
    Result("requests_in_memory", "", "Requests whose KV fits the replica", of="U"),
    Result("rate_compute", "request/s", "Requests per second the prefill compute allows", of="lam_c"),
    Result("rate_memory", "request/s", "Requests per second the KV memory allows (Little's law)", of="lam_kv"),
    Result("memory_over_compute", "", "KV-bound rate over compute-bound rate (above one: compute binds first)",
           of="x_b"),
)


def _encoder(p) -> vision.Encoder:
    """The encoder with its merger's output matched to the LLM's width (the projector is sized by the LLM)."""
    return dataclasses.replace(vision.encoder(p.encoder), llm_width=int(p.model.q("d_model").m))


def validate(p) -> None:
    enc = _encoder(p)
    try:
        t = vision.image_tokens(enc, p.image_height, p.image_width)["tokens"]
    except vision.ImageSizeError as e:
        raise ParameterError(f"image_height/image_width: {e}") from None
    total = p.images * t + p.text_tokens + p.output_tokens
    cap = p.model.get("max_context")
    if cap is not None and total > cap.to("token").m:
        raise ParameterError(f"images: {p.images} images of {t:,} tokens plus text make {total:,} tokens, over "
                             f"{p.model.name}'s context of {fmt(cap)}; send fewer or smaller images")


def prefill_chain(m, enc: vision.Encoder, height: int, width: int, images: int, text_tokens: int,
                  output_tokens: int, gpu, gpus: int, mfu: float, wb: float, kvb: float, step_budget: int,
                  tpot: float, *, kind: str = "assumption", source: str = "parameters cell", cite=None) -> Chain:
    img = vision.image_tokens(enc, height, width)
    fl = vision.encoder_flops(enc, img["patches"])
    cite = cite or (lambda _name: source)     # the page passes SPEC.source: each row cites its own parameter
    ch = Chain(f"{enc.name} into {m.name}")
    ch.given("H", q(height, ""), "image height (pixels)", kind=kind, source=cite("image_height"))
    ch.given("W", q(width, ""), "image width (pixels)", kind=kind, source=cite("image_width"))
    ch.given("H_r", q(img["resized"][0], ""), f"height after the {enc.resize} resize", kind="derived",
             source="utils.serving.vision.patch_grid")
    ch.given("W_r", q(img["resized"][1], ""), f"width after the {enc.resize} resize", kind="derived",
             source="utils.serving.vision.patch_grid")
    ch.given("p", enc.patch, "patch side (pixels)", kind="spec", source=enc.name)
    ch.given("k", enc.merge, "patches per token side (merger)", kind="spec", source=enc.name)
    ch.step("P_i", "(H_r/p)*(W_r/p)", "", "patches per image")
    ch.given("u_tok", q(1, "token"), "one token", kind="derived", source="units")
    ch.given("n_s", q(enc.extra_tokens, "token"), "special tokens around each image (vision start and end)",
             kind="spec", source=f"{enc.name}: the prompt's image placeholder")
    ch.step("T_i", "u_tok*P_i/k**2 + n_s", "token", "tokens per image")
    ch.given("n_img", q(images, ""), "images per request", kind=kind, source=cite("images"))
    ch.given("T_txt", q(text_tokens, "token"), "text tokens", kind=kind, source=cite("text_tokens"))
    ch.step("T", "n_img*T_i + T_txt", "token", "prompt tokens")
    ch.given("N_v", q(enc.layers * enc.layer_params(), "parameter"), "ViT weight-matrix parameters",
             kind="spec", source=f"{enc.name}, counted from its config")
    ch.given("k_f", q(2, "FLOP/parameter"), "FLOPs per parameter per patch (forward)", kind="derived",
             source="one multiply-add")
    ch.step("C_vl", "k_f*N_v*P_i", "FLOP", "ViT matrix products, one image")
    ch.given("C_va", q(fl["attention"] + fl["merger"], "FLOP"),
             "ViT attention (4 n w d per layer) and merger, one image", kind="derived",
             source="utils.serving.vision.encoder_flops")
    ch.step("C_enc", "n_img*(C_vl + C_va)", "FLOP", "encoder FLOPs per request")
    ch.given("N", models.param_count(m)["active"], "LLM parameters multiplied per token", kind="spec",
             source=f"{m.name}, counted from its configuration")
    ch.given("k_l", q(2, "FLOP/parameter/token"), "FLOPs per parameter per token (forward)", kind="derived",
             source="one multiply-add")
    ch.given("L", models.n_layers(m), "LLM layers", kind="spec", source=m.name)
    ch.given("d_a", models.attention_width(m), "attention width (heads x head dim)", kind="spec", source=m.name)
    ch.given("a", q(2, "FLOP/token**2"), "causal attention FLOPs per token pair per width (QK^T and AV, half)",
             kind="derived", source="the attention products")
    ch.step("C_pre", "k_l*N*T + a*T**2*d_a*L", "FLOP", "LLM prefill FLOPs per request")
    ch.step("s_enc", "C_enc/(C_enc + C_pre)", "", "encoder's share")
    ch.given("R", gpu.q("bf16_dense").to("TFLOP/s") / q(1, "GPU"), "dense bf16 peak per GPU", kind="spec",
             source="catalog")
    ch.given("n_g", q(gpus, "GPU"), "GPUs per replica", kind=kind, source=cite("gpus"))
    ch.given("u", mfu, "MFU of prefill and encoder", kind=kind, source=cite("mfu"))
    ch.step("t_pre", "(C_enc + C_pre)/(n_g*R*u)", "s", "TTFT floor (compute, no queue)")
    ch.given("B", q(step_budget, "token"), "tokens per engine step", kind=kind, source=cite("step_budget"))
    ch.given("n_step", q(step_budget // max(1, int(ch["T_i"].m)), ""), "whole images per step, floor(B / T_i)",
             kind="derived", source="the step budget")
    ch.given("T_out", q(output_tokens, "token"), "output tokens", kind=kind, source=cite("output_tokens"))
    b = serving.budget(m, gpu, gpus, wb, kvb, ch["T"].m + output_tokens)
    ch.given("M_kv", b.kv_budget.to("GB"), "KV budget of the replica (vLLM's share, less the weights)",
             kind="derived", source="utils.serving.budget")
    ch.given("kv_t", (b.kv_per_token * b.copies).to("kB/token"), "KV bytes per token (all layers, copies)",
             kind="spec", source=m.name)
    ch.step("m_req", "kv_t*(T + T_out)", "GB", "KV per request")
    ch.given("U", q(b.users, ""), "requests that fit, floor(M_kv / m_req)", kind="derived",
             source="utils.serving.budget")
    ch.given("u_req", q(1, "request"), "one request", kind="derived", source="units")
    ch.step("lam_c", "u_req/t_pre", "request/s", "requests per second, prefill compute")
    ch.given("t_o", q(tpot, "s/token"), "seconds per output token", kind=kind, source=cite("tpot"))
    ch.step("lam_kv", "U*u_req/(T_out*t_o)", "request/s", "requests per second, KV memory (U over decode time)")
    ch.step("x_b", "lam_kv/lam_c", "", "memory-bound over compute-bound rate")
    return ch


def _args(p) -> dict:
    return dict(m=p.model, enc=_encoder(p), height=p.image_height, width=p.image_width, images=p.images,
                text_tokens=p.text_tokens, output_tokens=p.output_tokens, gpu=p.gpu, gpus=p.gpus, mfu=p.mfu,
                wb=p.weight_bytes_per_param, kvb=p.kv_bytes_per_element, step_budget=p.step_budget, tpot=p.tpot)


def compute(p) -> Chain:
    return prefill_chain(**_args(p), cite=functools.partial(SPEC.source, p))


def bottleneck(ch) -> str:
    return "prefill compute" if ch["x_b"].m > 1 else "KV memory"


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("An image is not one token; it is hundreds to thousands of them after a second model has run. That "
         "changes the prefill budget, the batch shape and where the first bottleneck appears.")
# Images as served: a VGA photo, a 1080p screenshot, a 12-megapixel phone photo at full resolution.
SAMPLES = {"VGA photo": (480, 640), "1080p screenshot": (1080, 1920), "12 MP phone photo": (3024, 4032)}
PHONE = "12 MP phone photo"
WORDS = (100, 100_000)     # "hundreds to thousands": from a hundred to below a hundred thousand


def sample_tokens() -> dict:
    """Tokens per sample image for every encoder, special tokens included: {encoder key: {image: tokens}}."""
    return {k: {name: vision.image_tokens(e, *hw)["tokens"] for name, hw in SAMPLES.items()}
            for k, e in vision.ENCODERS.items()}


def claims() -> list[Claim]:
    toks = sample_tokens()
    every = [t for by_image in toks.values() for t in by_image.values()]
    lo, hi = WORDS
    fits = all(lo <= t < hi for t in every)
    phone = toks["qwen2.5-vl-vit"][PHONE]
    clip, qwen = vision.ENCODERS["clip-vit-l-336"], vision.ENCODERS["qwen2.5-vl-vit"]
    enc_share = claim_chain()["s_enc"].m
    # The sentence names no image size; the images it speaks of are the ones people send, from a VGA photo
    # to a full phone photo, so the claim is judged at those (no reading needed). A thumbnail of a few
    # thousand pixels is fewer than a hundred tokens under Qwen's floor, but it is no image the words mean.
    return [Claim(
        "image-tokens",
        quote=QUOTE, source="spec/001, the paragraph on multimodal prefill",
        claimed="hundreds to thousands of tokens per image",
        derived=f"{fmt(min(every))} to {fmt(max(every))} tokens",
        verdict=HOLDS if fits else WRONG,
        reason=(f"{clip.name} makes {fmt(toks['clip-vit-l-336']['VGA photo'])} tokens of any image; {qwen.name} "
                f"makes {fmt(toks['qwen2.5-vl-vit']['VGA photo'])} of a VGA photo, "
                f"{fmt(toks['qwen2.5-vl-vit']['1080p screenshot'])} of a 1080p screenshot and {fmt(phone)} of "
                f"a full-resolution {PHONE} (its vision start and end tokens included), all hundreds to "
                f"thousands; the second model is {pct(enc_share)} of the prefill FLOPs for {num(4)} "
                f"screenshots into {catalog.model('qwen2.5-72b').name}."),
        nearest_true="" if fits else f"an image is {fmt(min(every))} to {fmt(max(every))} tokens")]


def claim_chain(model: str = "qwen2.5-72b", encoder: str = "qwen2.5-vl-vit", height: int = 1080,
                width: int = 1920, images: int = 4, gpus: int = 8) -> Chain:
    m = catalog.model(model)
    enc = dataclasses.replace(vision.encoder(encoder), llm_width=int(m.q("d_model").m))
    return prefill_chain(m, enc, height, width, images, 400, 300, catalog.accelerator("h100-sxm"), gpus, 0.4,
                         2.0, 2.0, 8192, 0.05, source="the check's inputs")


def text_only(p) -> Chain:
    """The same request without its images: what the images changed."""
    return prefill_chain(**{**_args(p), "images": 0})


def resolution_curves(sides=None) -> dict:
    """Tokens per image and the encoder's share of prefill against the image's long side (16:9), for each
    encoder and for a large and a small LLM (one image, no text)."""
    import numpy as np
    sides = np.asarray(sides if sides is not None else [224, 336, 448, 640, 960, 1280, 1920, 2560, 3840, 5120])
    out = {"side": sides, "tokens": {}, "share": {}}
    for e in vision.ENCODERS.values():
        out["tokens"][e.name] = np.array([vision.image_tokens(e, max(1, int(s * 9 / 16)), int(s))["tokens"]
                                          for s in sides])
    e = vision.ENCODERS["qwen2.5-vl-vit"]
    for mk in ("qwen2.5-72b", "llama-3-8b"):
        m = catalog.model(mk)
        n, d, layers = models.param_count(m)["active"].m, models.attention_width(m), models.n_layers(m)
        shares = []
        for s in sides:
            img = vision.image_tokens(e, max(1, int(s * 9 / 16)), int(s))
            enc = dataclasses.replace(e, llm_width=int(m.q("d_model").m))
            c_enc = vision.encoder_flops(enc, img["patches"])["total"]
            t = img["tokens"]
            shares.append(c_enc / (c_enc + 2 * n * t + 2 * t * t * d * layers))
        out["share"][m.name] = np.array(shares)
    return out


def what_changes(p, ch) -> dict:
    base = ch
    half = prefill_chain(**{**_args(p), "height": max(1, p.image_height // 2), "width": max(1, p.image_width // 2)})
    small = catalog.model("llama-3-8b")
    one = prefill_chain(**{**_args(p), "images": 1})
    smallm = prefill_chain(**{**_args(p), "m": small, "enc": dataclasses.replace(_encoder(p), llm_width=4096),
                              "gpus": 1, "images": 1})
    # the output length at which the KV-bound rate falls to the compute-bound one: U/(T_out t_o) = lam_c with
    # U ~ M_kv / (kv_t (T + T_out)), a quadratic in T_out
    m_kv, kv_t = base["M_kv"].to("byte").m, base["kv_t"].to("byte/token").m
    t_o, lam_c, t = base["t_o"].to("s/token").m, base["lam_c"].to("request/s").m, base["T"].m
    c = m_kv / (kv_t * t_o * lam_c)
    crossover = (-t + math.sqrt(t * t + 4 * c)) / 2
    return {"wc-half-tokens": fmt(half["T_i"]), "wc-half-ttft": fmt(half["t_pre"], digits=2),
            "wc-small-name": small.name, "wc-small-share": pct(smallm["s_enc"]),
            "wc-one-share": pct(one["s_enc"]), "crossover-output": fmt(q(crossover, "token"))}


def exercises(p, ch) -> dict:
    clip = claim_chain(model="llama-2-7b", encoder="clip-vit-l-336", images=1, gpus=1)
    one = claim_chain(images=1)
    many = claim_chain(images=10)
    return {
        "ex1-tokens": fmt(clip["T_i"]), "ex1-share": pct(clip["s_enc"]),
        "ex1-ttft": fmt(clip["t_pre"].to("ms"), digits=2),
        "ex2-tokens": fmt(one["T_i"]), "ex2-steps": num(math.ceil(one["T"].m / one["B"].m)),
        "ex2-per-step": num(one["n_step"].m),
        "ex3-ttft": fmt(many["t_pre"], digits=2), "ex3-kv": fmt(many["m_req"], digits=3),
        "ex3-users": num(many["U"].m),
    }


SPEC = Spec("multimodal-prefill", PARAMETERS, RESULTS, compute, validate=validate, refused=REFUSED,
            closed_form=True)
