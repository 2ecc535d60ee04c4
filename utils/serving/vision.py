"""Images as tokens: how a vision encoder turns a picture into the LLM's prompt, and what it costs.

An encoder cuts the image into patches of p x p pixels, runs a ViT over the patches, and hands the
LLM one token per patch, or per k x k patches after a merger (Qwen2-VL and Qwen2.5-VL concatenate each
2 x 2 block of patch features and project them: four patches, one token). How many patches depends on
how the model resizes the image:

- fixed: resize every image to one square (LLaVA-1.5: CLIP ViT-L/14 at 336 px, (336/14)^2 = 576
  patch tokens, whatever the photo was);
- dynamic: keep the aspect ratio and round each side to a multiple of p x k (Qwen2-VL's smart_resize),
  clamped between a minimum and a maximum pixel count, so a 1080p screenshot becomes thousands of tokens
  and a thumbnail a handful.

The prompt also wraps each image in special tokens: Qwen2-VL and Qwen2.5-VL write
<|vision_start|><|image_pad|><|vision_end|>, the pad expanded to the merged patch tokens, so an image is
its patches / 4 plus 2; LLaVA-1.5's <image> becomes the 576 patch features alone.

The encoder's forward FLOPs are 2 x (its weight-matrix parameters) x patches, plus attention:
4 x n x w x d per layer, where w is the patches each patch attends to (all n for full attention; the
window for Qwen2.5-VL's windowed layers, 112 px = 8 x 8 patches). The merger runs once per output token.

Each encoder's figures are read from its published config with the source and the date read (ENCODERS);
utils/chains/multimodal_prefill.py is the chapter that uses them, tests/serving/test_vision.py checks them.

Chapters: multimodal-prefill.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


class ImageSizeError(ValueError):
    """An image the processor refuses (too thin, or not a positive size)."""


@dataclass(frozen=True)
class Encoder:
    """A vision encoder as the arithmetic needs it. `mlp_matrices` is 2 for a GELU MLP (fc1, fc2) and 3
    for a SwiGLU one (gate, up, down); `window` is the patches per attention window in windowed layers
    (0: every layer attends to all patches); `full_layers` the layers with full attention."""
    key: str
    name: str
    resize: str                 # "fixed" or "dynamic"
    patch: int                  # pixels per patch side
    merge: int                  # patches per token side after the merger (1: no merger)
    layers: int
    width: int                  # hidden size of the ViT
    mlp_width: int
    mlp_matrices: int
    image_size: int = 0         # fixed resize: the square side, pixels
    min_pixels: int = 0         # dynamic resize: the clamp
    max_pixels: int = 0
    window: int = 0
    full_layers: int = 0
    extra_tokens: int = 0       # special tokens the prompt wraps each image in (Qwen: vision start and end)
    llm_width: int = 0          # the merger's output width (the LLM's hidden size)
    source: str = ""

    def layer_params(self) -> int:
        """Weight-matrix parameters per ViT block: Q, K, V and the output projection (4 d^2), then the MLP."""
        return 4 * self.width ** 2 + self.mlp_matrices * self.width * self.mlp_width

    def merger_params(self) -> int:
        """The merger's two matrices: (k^2 d) -> (k^2 d) -> LLM width; for no merger, LLaVA's two-layer
        MLP projector d -> LLM width -> LLM width."""
        if self.merge > 1:
            d_in = self.merge ** 2 * self.width
            return d_in * d_in + d_in * self.llm_width
        return self.width * self.llm_width + self.llm_width ** 2

    def params(self) -> int:
        """Weight-matrix parameters of the ViT and its merger (the patch embedding is one more matrix)."""
        embed = 3 * self.patch ** 2 * self.width * (2 if self.resize == "dynamic" else 1)  # Qwen: 2 frames per patch
        return self.layers * self.layer_params() + self.merger_params() + embed


_READ = "read 2026-12-01"
ENCODERS = {
    "clip-vit-l-336": Encoder(
        "clip-vit-l-336", "CLIP ViT-L/14 at 336 px (LLaVA-1.5)", "fixed", patch=14, merge=1, layers=24,
        width=1024, mlp_width=4096, mlp_matrices=2, image_size=336, llm_width=4096,
        source="llava-hf/llava-1.5-7b-hf config.json, vision_config (image_size 336, patch_size 14, 24 layers "
               "of 1024, intermediate 4096; the <image> placeholder becomes the 576 patch features, no start or "
               "end token), https://huggingface.co/edbeeching/vsft-llava-1.5-7b-hf/blob/main/"
               f"config.json (a verbatim copy, _name_or_path llava-hf/llava-1.5-7b-hf), {_READ}"),
    "qwen2.5-vl-vit": Encoder(
        "qwen2.5-vl-vit", "Qwen2.5-VL ViT (Qwen2.5-VL-72B)", "dynamic", patch=14, merge=2, layers=32,
        width=1280, mlp_width=3456, mlp_matrices=3, min_pixels=3136, max_pixels=12845056, window=64,
        full_layers=4, extra_tokens=2, llm_width=8192,
        source="Qwen/Qwen2.5-VL-72B-Instruct config.json vision_config (hidden 1280, intermediate 3456, "
               "patch 14, out_hidden_size 8192), https://huggingface.co/Qwen/Qwen2.5-VL-72B-Instruct-AWQ/blob/"
               "666b8f5f61eebf73e8deff3e33a0f8934038d69f/config.json; transformers Qwen2_5_VLVisionConfig "
               "defaults (depth 32, 16 heads, spatial_merge_size 2, window_size 112 px, full attention in "
               "blocks 7, 15, 23, 31; SiLU-gated MLP); preprocessor_config.json (min_pixels 3136, max_pixels "
               "12845056, merge_size 2), https://huggingface.co/coder3101/Qwen2.5-VL-72B-Instruct-heretic/blob/"
               f"main/preprocessor_config.json; each image enters the prompt as <|vision_start|><|image_pad|><|vision_end|>, "
               "the pad expanded to grid_t x grid_h x grid_w / merge_size^2 tokens (vLLM "
               "vllm/model_executor/models/qwen2_vl.py, get_placeholder_str and _process_image_input; the Qwen2-VL "
               "model card: a 28 x 28 pixel patch is one token, 4 to 16,384 per image at the default pixel "
               f"limits), {_READ}"),
}


def encoder(key: str) -> Encoder:
    if key not in ENCODERS:
        raise KeyError(f"unknown encoder {key!r}; valid: {', '.join(ENCODERS)}")
    return ENCODERS[key]


def smart_resize(height: int, width: int, factor: int = 28, min_pixels: int = 3136,
                 max_pixels: int = 12845056) -> tuple[int, int]:
    """Qwen2-VL's resize: each side rounded to a multiple of `factor` (patch x merge = 28), the aspect
    ratio kept, and the area brought inside [min_pixels, max_pixels] by one common scale. Rounding (not
    flooring) is the processor's rule, so 1080 becomes 1092, and an aspect ratio above 200 is refused."""
    if height <= 0 or width <= 0:
        raise ImageSizeError(f"an image must have a positive size, got {height} x {width}")
    if max(height, width) / min(height, width) > 200:
        raise ImageSizeError(f"absolute aspect ratio must be at most 200, got {max(height, width) / min(height, width):.1f}")
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)   # floor: stay under the cap
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor                  # ceil: reach the floor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def patch_grid(enc: Encoder, height: int, width: int) -> tuple[int, int]:
    """Patches per side (rows, columns) the encoder sees for an image of height x width pixels."""
    if enc.resize == "fixed":
        if height <= 0 or width <= 0:
            raise ImageSizeError(f"an image must have a positive size, got {height} x {width}")
        side = enc.image_size // enc.patch
        return side, side
    h, w = smart_resize(height, width, enc.patch * enc.merge, enc.min_pixels, enc.max_pixels)
    return h // enc.patch, w // enc.patch


def image_tokens(enc: Encoder, height: int, width: int) -> dict:
    """Patches, tokens after the merger, and the resized size, for one image."""
    rows, cols = patch_grid(enc, height, width)
    patches = rows * cols
    return dict(patches=patches, tokens=patches // enc.merge ** 2 + enc.extra_tokens,
                resized=(rows * enc.patch, cols * enc.patch))


def encoder_flops(enc: Encoder, patches: int) -> dict:
    """Forward FLOPs of the encoder over `patches` patches of one image: the matrix products
    (2 x parameters x patches), attention (4 x n x w x d per layer: QK^T and AV, each 2 n w d), the merger."""
    tokens = patches // enc.merge ** 2
    linear = 2 * enc.layers * enc.layer_params() * patches
    full = enc.full_layers if enc.window else enc.layers
    windowed = enc.layers - full
    attention = 4 * patches * enc.width * (full * patches + windowed * min(enc.window, patches))
    merger = 2 * enc.merger_params() * (tokens if enc.merge > 1 else patches)
    return dict(linear=linear, attention=attention, merger=merger, total=linear + attention + merger)
