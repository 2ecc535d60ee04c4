"""utils/serving/vision.py: tokens per image from each encoder's resize rule, checked against the published
figures (LLaVA-1.5's 576; Qwen2-VL's smart_resize rules), and the encoder's FLOP count."""
import pytest

from utils.serving import vision as v

CLIP, QWEN = v.ENCODERS["clip-vit-l-336"], v.ENCODERS["qwen2.5-vl-vit"]


def test_llava_is_576_tokens_whatever_the_image():
    for hw in [(100, 100), (1080, 1920), (3024, 4032)]:
        assert v.image_tokens(CLIP, *hw)["tokens"] == 576 == (336 // 14) ** 2


def test_clip_vit_l_parameters_match_its_published_size():
    assert CLIP.layers * CLIP.layer_params() == pytest.approx(303e6, rel=0.01)   # ViT-L/14: about 0.3B


def test_smart_resize_rounds_each_side_to_the_factor():
    assert v.smart_resize(1080, 1920) == (1092, 1932)      # round, not floor: 38.6 -> 39 x 28
    assert v.smart_resize(480, 640) == (476, 644)
    h, w = v.smart_resize(1080, 1920)
    assert h % 28 == 0 and w % 28 == 0


def test_the_pixel_cap_and_floor_hold():
    h, w = v.smart_resize(10000, 10000)
    assert h * w <= 12845056 and h % 28 == 0
    h, w = v.smart_resize(20, 20)
    assert h * w >= 3136


@pytest.mark.parametrize("h,w", [(0, 10), (10, 2500), (-5, 5)])
def test_images_the_processor_refuses(h, w):
    with pytest.raises(v.ImageSizeError):
        v.smart_resize(h, w)


def test_the_merger_makes_one_token_of_four_patches():
    img = v.image_tokens(QWEN, 1080, 1920)
    assert img["patches"] == 78 * 138 and img["tokens"] == img["patches"] // 4 + 2 == 2693   # vision start, end


def test_tokens_never_fall_as_the_image_grows():
    sides = [56 * k for k in range(1, 120)]
    toks = [v.image_tokens(QWEN, s, s)["tokens"] for s in sides]
    assert all(b >= a for a, b in zip(toks, toks[1:]))
    assert toks[-1] <= 12845056 // (28 * 28) + QWEN.extra_tokens   # 16,384 at the cap, and the two markers


def test_encoder_flops_are_two_per_parameter_per_patch_plus_attention():
    f = v.encoder_flops(CLIP, 576)
    assert f["linear"] == 2 * CLIP.layers * CLIP.layer_params() * 576
    assert f["attention"] == 4 * 576 * 576 * CLIP.width * CLIP.layers
    # Qwen2.5-VL: 28 of its 32 layers attend to a window of 64 patches, so its attention is an eighth
    # of what full attention in every layer would cost (the four full layers keep the n^2 term)
    n = 40000
    f = v.encoder_flops(QWEN, n)
    all_full = 4 * n * n * QWEN.width * QWEN.layers
    assert all_full / 8 < f["attention"] < all_full / 7
