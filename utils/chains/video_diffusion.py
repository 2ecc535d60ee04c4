"""video-diffusion: a video request is tens of DiT passes over a latent of tens of thousands of tokens.

frames x height x width pixels -> a VAE latent (time / 4, each side / 8, 16 channels) -> DiT tokens
(2 x 2 patches) -> FLOPs per pass (2 x params x tokens + 4 x tokens^2 x width per layer + cross-attention)
-> per request (x steps, x 2 for classifier-free guidance) -> seconds on a node at a measured MFU ->
GPU-seconds and dollars per video -> nodes for an hourly demand. The arithmetic intensity of one pass is
about the token count, hundreds of times the chip's ridge, so batching videos buys nothing: the queue,
not the batch, is the design (utils/serving/diffusion.py: JobQueue).

Any model's latent geometry: `dit` names one of the DiTs the book knows; `dit_geometry`, a one-row table, gives
another's (its VAE's temporal and spatial compression, latent channels, the DiT's patch in t, h and w, its
layers, width, FFN width and text tokens), and replaces `dit`. A table rather than a spec file: a DiT is not a
catalog kind (the known ones live in utils/serving/diffusion.py), so a spec file would need a new catalog schema and
loader for one chapter, while a table parameter is checked by the framework (each field a positive whole number,
one line naming the first fault, exit 2) and is read from a .json file as well as from JSON text. Its parameters
are counted as the known ones are, with Wan 2.1's block layout (self-attention, cross-attention on the text, a
two-matrix FFN): for a model built otherwise (CogVideoX joins the text to the video tokens instead) the token
count is exact and the FLOPs are the Wan-layout estimate.
"""
from __future__ import annotations

import json
import math

from utils import catalog
from utils.chain import Chain, memoised
from utils.params import Column, Param, ParameterError, Result, Spec
from utils.roofline import chip
from utils.serving import diffusion
from utils.units import duration, fmt, num, pct, q
from utils.verdicts import UNCHECKABLE, Claim

_MFU_SRC = ("Delavande, Pierrard and Luccioni, Video Killed the Energy Budget (arXiv 2509.19222v1, 23 Sep 2025): "
            "mu = 0.456 fitted for Wan 2.1 on one H100 SXM with this FLOP model (2 x params x tokens + "
            "4 x tokens^2 x width), read 2026-12-01")
# The fields of a reader's DiT (dit_geometry's columns): each a positive whole number.
GEOMETRY = (("vae_temporal", "frames per latent frame after the first (the VAE's temporal compression)"),
            ("vae_spatial", "pixels per latent cell on each side (the VAE's spatial compression)"),
            ("latent_channels", "channels of the latent"), ("patch_t", "latent frames per token"),
            ("patch_h", "latent rows per token"), ("patch_w", "latent columns per token"),
            ("layers", "DiT blocks"), ("width", "DiT hidden width"), ("ffn_width", "FFN hidden width"),
            ("text_tokens", "text tokens the blocks attend to"))
PARAMETERS = (
    Param("dit", "wan2.1-t2v-14b", "the video DiT (its layers, width, VAE and patch come with it)",
          check="choice", choices=tuple(diffusion.DITS), source=diffusion.DITS["wan2.1-t2v-14b"].source),
    Param("frames", 81, "frames of video (1 + a multiple of the VAE's temporal stride)", check="whole",
          source="Wan 2.1 generate.py default frame_num 81 (about five seconds at 16 fps), read 2026-12-01"),
    Param("height", 720, "frame height, pixels", check="whole", source="Wan 2.1 T2V 14B's 720p size (1280*720)"),
    Param("width", 1280, "frame width, pixels", check="whole", source="Wan 2.1 T2V 14B's 720p size (1280*720)"),
    Param("steps", 40, "denoising steps of the sampler", check="whole",
          source="the claim (40 denoising passes); Wan 2.1 image-to-video's default, text-to-video's is 50"),
    Param("cfg", True, "classifier-free guidance: two DiT passes a step (with and without the prompt)",
          check="bool", source="Wan 2.1 generate.py: sample_guide_scale 5.0"),
    Param("gpu", "h100-sxm", "the accelerator", check="accelerator", source="catalog: H100 SXM"),
    Param("gpus", 8, "GPUs that run one video together (sequence parallel over the tokens)", check="whole",
          source="Wan 2.1's multi-GPU inference (FSDP + Ulysses over one 8-GPU node)"),
    Param("mfu", 0.456, "model FLOPs utilisation of a DiT pass", check="fraction", source=_MFU_SRC),
    Param("rent_usd_per_gpu_hour", 3.99, "USD per GPU-hour", unit="USD/GPU/hour",
          source="catalog (utils/catalog/prices.toml): h100-rental.lambda_on_demand"),
    Param("videos_per_hour", 600.0, "videos requested per hour at the peak", unit="1/hour",
          source="this book's assumption"),
    Param("utilization", 0.7, "target busy share of each node (headroom for the queue to drain)", check="fraction",
          source="this book's assumption"),
    Param("dit_geometry", [], "your DiT's geometry, replacing dit: one row {\"name\", \"vae_temporal\", "
          "\"vae_spatial\", \"latent_channels\", \"patch_t\", \"patch_h\", \"patch_w\", \"layers\", \"width\", "
          "\"ffn_width\", \"text_tokens\"} (JSON, or a .json file)", check="table",
          columns=(Column("name", "text"), *(Column(c, "whole", why) for c, why in GEOMETRY)),
          source="this book's assumption: empty, the dit above"),
)
REFUSED = {name: "the DiT's layers, width and parameters follow from dit=; choose another dit, or give your "
                 "model's dit_geometry"
           for name in ("n_params", "layers", "d_model")}

RESULTS = (
    Result("latent_elements", "", "Latent elements (the 'small film' the DiT denoises)", of="E_lat"),
    Result("compression", "", "Pixels (x3 colours) per latent element", of="r_c"),
    Result("dit_tokens", "token", "DiT tokens per pass", of="N_tok"),
    Result("flops_per_pass", "FLOP", "FLOPs per DiT pass", of="C_pass"),
    Result("attention_share", "", "Self-attention's share of a pass", of="s_att", percent=True),
    Result("passes", "", "DiT passes per video (steps x guidance)", of="n_pass"),
    Result("flops_per_video", "FLOP", "FLOPs per video", of="C_vid"),
    Result("intensity", "FLOP/byte", "Arithmetic intensity of one pass (FLOPs per weight byte)", of="I"),
    Result("seconds_per_video", "s", "Time per video on the GPUs that run it", of="t_vid"),
    Result("gpu_seconds_per_video", "GPU*s", "GPU-seconds per video", of="G_vid"),
    Result("usd_per_video", "USD", "Cost per video at the rental rate", of="c_vid"),
    Result("weights_memory", "GB", "DiT weights in bf16", of="M_w"),
    Result("activation_memory", "GB", "Largest live activation (the FFN's hidden layer, guidance passes batched)",
           of="M_act"),
    Result("nodes", "", "Nodes (of the chosen GPUs) for the hourly demand at the target utilisation", of="n_nodes"),
)


def model(p) -> diffusion.DiT:
    """The DiT of the page: the reader's dit_geometry when given, else the known `dit`."""
    if not p.dit_geometry:
        return diffusion.dit(p.dit)
    g = p.dit_geometry[0]
    return diffusion.DiT("dit_geometry", g["name"], layers=g["layers"], width=g["width"], ffn_width=g["ffn_width"],
                         heads=0,    # the arithmetic never reads the head count (attention FLOPs go by the width)
                         stride=(g["vae_temporal"], g["vae_spatial"], g["vae_spatial"]),
                         patch=(g["patch_t"], g["patch_h"], g["patch_w"]), channels=g["latent_channels"],
                         text_tokens=g["text_tokens"], source="dit_geometry")


def validate(p) -> None:
    if len(p.dit_geometry) > 1:
        raise ParameterError(f"dit_geometry is one model: give one row, got {len(p.dit_geometry)}")
    m = model(p)
    try:
        diffusion.latent_shape(p.frames, p.height, p.width, m.stride, m.channels, m.patch)
    except diffusion.LatentShapeError as e:
        raise ParameterError(f"frames/height/width for {m.name}: {e}") from None


def video_chain(m: diffusion.DiT, frames: int, height: int, width: int, steps: int, cfg: bool, gpu_key: str,
                gpus: int, mfu: float, rent: float, videos_per_hour: float, utilization: float, *,
                kind: str = "assumption", source: str = "parameters cell", src=None,
                model_kind: str = "spec", model_source: str = "") -> Chain:
    """`src(name)` gives each parameter's row its own source (SPEC.source in compute); without it, `source`.
    The model's rows are of `model_kind` from `model_source` (a known DiT's: spec, its name)."""
    S = src or (lambda name: source)
    mk, ms = model_kind, model_source or m.name
    lat = diffusion.latent_shape(frames, height, width, m.stride, m.channels, m.patch)
    c = chip(gpu_key)
    ch = Chain(f"One video from {m.name}")
    ch.given("F", q(frames, ""), "frames", kind=kind, source=S("frames"))
    ch.given("H", q(height, ""), "frame height (pixels)", kind=kind, source=S("height"))
    ch.given("W", q(width, ""), "frame width (pixels)", kind=kind, source=S("width"))
    ch.given("s_t", m.stride[0], "VAE temporal stride", kind=mk, source=ms)
    ch.given("s_s", m.stride[1], "VAE spatial stride", kind=mk, source=ms)
    ch.given("c_z", m.channels, "latent channels", kind=mk, source=ms)
    ch.step("T_lat", "1 + (F - 1)/s_t", "", "latent frames (the first alone, then one per s_t)")
    ch.step("E_lat", "T_lat*(H/s_s)*(W/s_s)*c_z", "", "latent elements")
    ch.step("r_c", "3*F*H*W/E_lat", "", "pixels (x3 colours) per latent element")
    ch.given("p_t", m.patch[0], "patch depth (latent frames per token)", kind=mk, source=ms)
    ch.given("p_h", m.patch[1], "patch height (latent rows per token)", kind=mk, source=ms)
    ch.given("p_w", m.patch[2], "patch width (latent columns per token)", kind=mk, source=ms)
    ch.given("u_tok", q(1, "token"), "one token", kind="derived", source="units")
    ch.step("N_tok", "u_tok*(T_lat/p_t)*(H/(s_s*p_h))*(W/(s_s*p_w))", "token", "DiT tokens")
    assert ch["N_tok"].m == lat["tokens"]
    ch.given("N", q(m.params_per_video_token(), "parameter"), "parameters each video token meets",
             kind=mk, source=f"{ms}, counted from its config")
    ch.given("k", q(2, "FLOP/parameter/token"), "FLOPs per parameter per token (forward)", kind="derived",
             source="one multiply-add")
    ch.given("L", m.layers, "DiT layers", kind=mk, source=ms)
    ch.given("d", m.width, "DiT width", kind=mk, source=ms)
    ch.given("a", q(4, "FLOP/token**2"), "attention FLOPs per token pair per width (QK^T and AV, no mask)",
             kind="derived", source="the attention products")
    ch.given("m_t", q(m.text_tokens, "token"), "text tokens the cross-attention reads", kind=mk, source=ms)
    ch.step("C_lin", "k*N*N_tok", "FLOP", "matrix products of one pass")
    ch.step("C_att", "a*N_tok**2*d*L", "FLOP", "self-attention of one pass")
    ch.step("C_x", "a*N_tok*m_t*d*L", "FLOP", "cross-attention of one pass")
    ch.step("C_pass", "C_lin + C_att + C_x", "FLOP", "FLOPs per DiT pass")
    ch.step("s_att", "C_att/C_pass", "", "self-attention's share")
    ch.given("S", steps, "denoising steps", kind=kind, source=S("steps"))
    ch.given("g", 2 if cfg else 1, "passes per step (classifier-free guidance: 2)", kind=kind, source=S("cfg"))
    ch.step("n_pass", "S*g", "", "DiT passes per video")
    ch.step("C_vid", "n_pass*C_pass", "FLOP", "FLOPs per video")
    ch.given("b_w", q(2, "byte/parameter"), "bytes per weight (bf16)", kind="assumption", source="bf16 weights")
    ch.given("N_all", q(m.params(), "parameter"), "DiT parameters", kind=mk, source=f"{ms}, counted")
    ch.step("M_w", "N_all*b_w", "GB", "weights")
    ch.step("I", "C_pass/M_w", "FLOP/byte", "FLOPs per weight byte read, one pass")
    ch.given("I_r", c.ridge, f"ridge of the {c.name} (dense bf16 / HBM)", kind="spec", source="catalog")
    ch.step("x_r", "I/I_r", "", "intensity over the ridge: how compute-bound batch one already is")
    ch.given("R", c.peak.to("TFLOP/s") / q(1, "GPU"), "dense bf16 peak per GPU", kind="spec", source="catalog")
    ch.given("n_g", q(gpus, "GPU"), "GPUs per video", kind=kind, source=S("gpus"))
    # the fitted MFU is a published measurement while it holds the paper's value, a reader's guess otherwise
    ch.given("u", mfu, "MFU", kind="measured-by-others" if S("mfu") != "parameters cell" else kind, source=S("mfu"))
    ch.step("t_vid", "C_vid/(n_g*R*u)", "s", "seconds per video")
    ch.step("G_vid", "n_g*t_vid", "GPU*s", "GPU-seconds per video")
    ch.given("r", q(rent, "USD/GPU/hour"), "rental rate", kind="market" if S("rent_usd_per_gpu_hour") != "parameters cell"
             else kind, source=S("rent_usd_per_gpu_hour"))
    ch.step("c_vid", "G_vid*r", "USD", "cost per video")
    ch.given("b_a", q(2, "byte"), "bytes per activation element (bf16)", kind="assumption", source="bf16")
    ch.given("f", m.ffn_width, "FFN width", kind=mk, source=ms)
    ch.step("M_act", "g*N_tok*f*b_a/u_tok", "GB", "largest live activation (guidance passes batched as one)")
    ch.given("lam", q(videos_per_hour, "1/hour"), "videos per hour", kind=kind, source=S("videos_per_hour"))
    ch.given("rho", utilization, "target node utilisation", kind=kind, source=S("utilization"))
    ch.step("n_nodes", "lam*t_vid/rho", "", "nodes: busy time per hour over the utilisation")
    return ch


def compute(p) -> Chain:
    mine = dict(model_kind="assumption", model_source=SPEC.source(p, "dit_geometry")) if p.dit_geometry else {}
    return video_chain(model(p), p.frames, p.height, p.width, p.steps, p.cfg, p.gpu.key, p.gpus, p.mfu,
                       p.rent_usd_per_gpu_hour, p.videos_per_hour, p.utilization, src=lambda name: SPEC.source(p, name),
                       **mine)


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("A video request is not a stream of tokens: it is 40 denoising passes over a latent the size of a "
         "small film, and the user waits a minute for the whole thing.")
CLAIM = dict(steps=40, wait_s=60.0, band=2.0)   # "a minute": within a factor of two either way
READING_480P = dict(frames=81, height=480, width=832, gpus=8)
# ML.ENERGY Leaderboard v3.0 (text-to-video data, last updated 2026-02-16): Wan 2.1 14B, 832x480, 81 frames,
# 50 steps, batch 1: 467 s on one H100, 72 s on eight.
MEASURED = dict(one_h100_480p_50=467.0, eight_h100_480p_50=72.0, one_h100_720p_50=1875.0)
MEASURED_SRC = ("ML.ENERGY Leaderboard v3.0, text-to-video (ml.energy/leaderboard, data last updated "
                "2026-02-16) and Delavande et al., arXiv 2509.19222v1, Table 4 (1,875 s for 720p on one H100), "
                "as transcribed in a stored research note; read 2026-12-01")


def claim_chain(frames=81, height=480, width=832, gpus=8, steps=CLAIM["steps"]) -> Chain:
    return video_chain(diffusion.dit("wan2.1-t2v-14b"), frames, height, width, steps, True, "h100-sxm", gpus,
                       0.456, rental_rate(), 600.0, 0.7, kind="assumption", source="the claim's reading")


def rental_rate() -> float:
    """The catalog's H100 on-demand rate, USD per GPU-hour (the default of rent_usd_per_gpu_hour)."""
    return float(catalog.price("h100-rental").q("lambda_on_demand").to("USD/GPU/hour").m)


def claims() -> list[Claim]:
    k = checks()
    small = claim_chain(**READING_480P)
    big = claim_chain(81, 720, 1280, 8)
    one = claim_chain(81, 720, 1280, 1)
    name, r = diffusion.dit("wan2.1-t2v-14b").name, READING_480P
    size = f"{num(r['frames'])} frames of {num(r['width'])} x {num(r['height'])}"
    # The sentence names no model, resolution or GPU count, and the wait runs from about half a minute to
    # half an hour across the ones an open model is run at: choosing the one that makes "a minute" come out
    # is not a reading, so the claim cannot be checked. The page shows the book's figures for each.
    return [Claim(
        "minute",
        quote=QUOTE, source="spec/000 and spec/001, the paragraph on video requests",
        claimed="40 denoising passes; a minute", derived=duration(small["t_vid"]), verdict=UNCHECKABLE,
        reason=(f"The source names no model, resolution or GPUs, and the wait depends on all three: for {name}, "
                f"{num(CLAIM['steps'])} steps with guidance are {num(small['n_pass'].m)} DiT passes, "
                f"{duration(small['t_vid'])} by the chain for {size} on {num(r['gpus'])} H100s (a published "
                f"run scaled to {num(CLAIM['steps'])} steps: {duration(q(k['measured_40'], 's'))}), but "
                f"{duration(big['t_vid'])} at {num(big['H'].m)}p on the node and {duration(one['t_vid'])} on "
                f"one GPU; a minute is the book's figure for one of these, not the source's."))]


@memoised
def checks() -> dict:
    """Second routes: the chain against published wall-clock times (which include the text encoder and the
    VAE decode the chain leaves out)."""
    one480 = claim_chain(81, 480, 832, 1, steps=50)
    eight480 = claim_chain(81, 480, 832, 8, steps=50)
    one720 = claim_chain(81, 720, 1280, 1, steps=50)
    return dict(
        one480=one480, eight480=eight480, one720=one720,
        ratio_one480=(one480["t_vid"].to("s").m / MEASURED["one_h100_480p_50"]),
        ratio_eight480=(eight480["t_vid"].to("s").m / MEASURED["eight_h100_480p_50"]),
        ratio_one720=(one720["t_vid"].to("s").m / MEASURED["one_h100_720p_50"]),
        measured_40=MEASURED["eight_h100_480p_50"] * CLAIM["steps"] / 50)


def resolution_sweep(heights=(240, 352, 480, 576, 720, 864, 960, 1088), gpus=8, steps=40) -> dict:
    """Seconds per video and self-attention's share against frame height (16:9, 81 frames)."""
    out = {"height": [], "seconds": [], "attention_share": [], "tokens": []}
    for h in heights:
        w = int(round(h * 16 / 9 / 16) * 16)
        ch = claim_chain(81, h, w, gpus, steps)
        out["height"].append(h)
        out["seconds"].append(ch["t_vid"].to("s").m)
        out["attention_share"].append(ch["s_att"].m)
        out["tokens"].append(ch["N_tok"].m)
    import numpy as np
    return {k: np.asarray(v) for k, v in out.items()}


def batching_gain(intensity: float, ridge: float, batch: int) -> float:
    """Throughput gain from batching `batch` videos in one pass, on the roofline: a pass takes
    max(F/peak, bytes/bw); at batch b the FLOPs grow b-fold and the weight bytes do not. Relative to
    running them one by one: b x max(1, ridge/I) / max(b, ridge/I) (I: one video's FLOPs per weight byte)."""
    one = max(1.0, ridge / intensity)
    return batch * one / max(float(batch), ridge / intensity)


# A second published model's geometry, as a reader gives it: CogVideoX-5B (49 frames of 720 x 480 at 8 fps), whose
# 49 frames become 13 latent frames of 60 x 90 and 13 x 30 x 45 = 17,550 tokens.
COGVIDEOX_5B = {"name": "CogVideoX-5B", "vae_temporal": 4, "vae_spatial": 8, "latent_channels": 16, "patch_t": 1,
                "patch_h": 2, "patch_w": 2, "layers": 42, "width": 3072, "ffn_width": 12288, "text_tokens": 226}
COGVIDEOX_SIZE = dict(frames=49, height=480, width=720)
COGVIDEOX_SRC = ("Yang et al., CogVideoX: Text-to-Video Diffusion Models with An Expert Transformer, arXiv 2408.06072 "
                 "(3D causal VAE compressing 4 x 8 x 8, patch 2 x 2, 49 frames of 720 x 480); THUDM/CogVideoX-5b "
                 "transformer config as transcribed in diffusers' conversion code (num_layers 42, 48 heads of 64, "
                 "in_channels 16, max_text_seq_length 226, temporal_compression_ratio 4; FFN 4 x width, diffusers' "
                 "FeedForward default), read through stored public code 2026-12-06, not from the model card itself")


def what_changes(p, ch) -> dict:
    cog = SPEC.check(dit_geometry=[COGVIDEOX_5B], **COGVIDEOX_SIZE, gpus=p.gpus, steps=p.steps, cfg=p.cfg,
                     gpu=p.gpu.key, mfu=p.mfu)
    cch = compute(cog)
    cmd = (f"python -m utils.rederive video-diffusion --set dit_geometry='{json.dumps(COGVIDEOX_5B)}' "
           + " ".join(f"--set {k}={v}" for k, v in COGVIDEOX_SIZE.items()))
    out = {}
    for name, c in (("480p", video_chain(model(p), p.frames, 480, 832, p.steps, p.cfg, p.gpu.key,
                                          p.gpus, p.mfu, p.rent_usd_per_gpu_hour, p.videos_per_hour,
                                          p.utilization)),
                     ("double-frames", video_chain(model(p), 2 * p.frames - 1, p.height, p.width,
                                                   p.steps, p.cfg, p.gpu.key, p.gpus, p.mfu,
                                                   p.rent_usd_per_gpu_hour, p.videos_per_hour, p.utilization)),
                     ("no-cfg", video_chain(model(p), p.frames, p.height, p.width, p.steps, False,
                                            p.gpu.key, p.gpus, p.mfu, p.rent_usd_per_gpu_hour,
                                            p.videos_per_hour, p.utilization))):
        out[name] = dict(seconds=c["t_vid"], usd=c["c_vid"], ratio=(c["C_vid"] / ch["C_vid"]).to("").m)
    return {"wc-480-seconds": duration(out["480p"]["seconds"]), "wc-480-ratio": pct(out["480p"]["ratio"]),
            "wc-long-ratio": f"{num(out['double-frames']['ratio'], 2)} times",
            "wc-long-seconds": duration(out["double-frames"]["seconds"]),
            "wc-nocfg-seconds": duration(out["no-cfg"]["seconds"]), "wc-nocfg-usd": fmt(out["no-cfg"]["usd"], digits=2),
            "wc-geo-cmd": cmd, "wc-geo-name": COGVIDEOX_5B["name"], "wc-geo-tokens": fmt(cch["N_tok"]),
            "wc-geo-size": f"{num(cog.frames)} frames of {num(cog.width)} x {num(cog.height)}",
            "wc-geo-seconds": duration(cch["t_vid"])}


def exercises(p, ch) -> dict:
    small = claim_chain(81, 480, 832, 8)
    m13 = diffusion.dit("wan2.1-t2v-1.3b")
    ch13 = video_chain(m13, 81, 480, 832, 50, True, "h100-sxm", 1, 0.456, 3.99, 600.0, 0.7)
    ten = claim_chain(161, 720, 1280, 8)
    five = claim_chain(81, 720, 1280, 8)
    return {
        "ex1-size": f"{num(81)} frames of {num(832)} by {num(480)}", "ex2-name": m13.name,
        "ex2-steps": num(50), "ex3-frames": f"{num(161)} frames",
        "ex3-seconds-of-video": duration(q((161 - 1) / 16, "s")),   # Wan 2.1 writes 16 frames a second
        "ex1-tokens": fmt(small["N_tok"]), "ex1-seconds": duration(small["t_vid"]),
        "ex1-usd": fmt(small["c_vid"], digits=2),
        "ex2-seconds": duration(ch13["t_vid"]), "ex2-usd": fmt(ch13["c_vid"], digits=2),
        "ex2-tokens": fmt(ch13["N_tok"]),
        "ex3-ratio": f"{num((ten['C_vid'] / five['C_vid']).to('').m, 2)}",
        "ex3-attention": f"{num(100 * ten['s_att'].m, 2)}%", "ex3-seconds": duration(ten["t_vid"]),
    }


def nodes_needed(ch) -> int:
    return math.ceil(ch["n_nodes"].m)


SPEC = Spec("video-diffusion", PARAMETERS, RESULTS, compute, validate=validate, refused=REFUSED, closed_form=True)
