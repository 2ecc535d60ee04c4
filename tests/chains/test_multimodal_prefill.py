"""multimodal-prefill's chain: the claim holds at the images people send, the model and encoder as parameters, bad
inputs refused, and the properties (tokens grow with pixels, the encoder matters more for small LLMs)."""
import pytest

from utils import chains
from utils.chains import multimodal_prefill as mp
from utils.params import ParameterError
from utils.verdicts import HOLDS


def test_claim_holds_at_the_images_people_send():
    (c,) = mp.claims()
    assert c.verdict == HOLDS and not c.reading
    toks = mp.sample_tokens()
    assert toks["clip-vit-l-336"]["VGA photo"] == 576                  # LLaVA-1.5: the patch features alone
    # Qwen2-VL's processor: 1092 x 1932 after smart_resize, 78 x 138 patches of 14 px, 2 x 2 merged, and the
    # <|vision_start|> and <|vision_end|> tokens around the pad (vLLM's qwen2_vl placeholder)
    assert toks["qwen2.5-vl-vit"]["1080p screenshot"] == 78 * 138 // 4 + 2 == 2693
    assert 10_000 < toks["qwen2.5-vl-vit"]["12 MP phone photo"] < mp.WORDS[1]   # thousands, not more


def test_defaults_and_the_text_only_request():
    d = chains.derive("multimodal-prefill")
    assert d["prompt_tokens"].m == 4 * 2693 + 400
    t = chains.derive("multimodal-prefill", images=0)
    assert t["prompt_tokens"].m == 400 and t["encoder_flops"].m == 0
    assert d["prefill_flops"].m > 25 * t["prefill_flops"].m


def test_the_encoder_matters_more_for_a_small_llm():
    big = chains.derive("multimodal-prefill", images=2)["encoder_share"].m
    small = chains.derive("multimodal-prefill", model="llama-3-8b", gpus=1, images=2)["encoder_share"].m
    assert small > 5 * big


def test_memory_binds_when_outputs_are_long():
    assert chains.derive("multimodal-prefill")["memory_over_compute"].m > 1
    assert chains.derive("multimodal-prefill", output_tokens=4000)["memory_over_compute"].m < 1


def test_images_per_step_follow_the_step_budget():
    assert chains.derive("multimodal-prefill")["images_per_step"].m == 8192 // 2693
    assert chains.derive("multimodal-prefill", encoder="clip-vit-l-336", model="llama-2-7b",
                         gpus=1)["images_per_step"].m == 8192 // 576


@pytest.mark.parametrize("bad,name", [(dict(images=-1), "images"), (dict(image_height=0), "image_height"),
                                      (dict(encoder="siglip"), "encoder"), (dict(mfu=2.0), "mfu"),
                                      (dict(images=60), "images"), (dict(image_width=20000, image_height=10),
                                                                    "image_height")])
def test_bad_inputs_are_refused_naming_the_parameter(bad, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("multimodal-prefill", **bad)


def test_a_loose_architecture_override_is_refused():
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("multimodal-prefill", model="llama-3-8b", n_params=7e9)
