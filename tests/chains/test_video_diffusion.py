"""video-diffusion's chain: the claim cannot be checked (the wait hangs on inputs the source never gives), the
published timings as a second route, sources and kinds at the defaults, bad inputs refused, and the properties
(quadratic in resolution, linear in steps, batching buys nothing)."""
import pytest

from utils import catalog, chains
from utils.chains import video_diffusion as vd
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_the_wait_spans_half_a_minute_to_half_an_hour_so_the_claim_cannot_be_checked():
    (c,) = vd.claims()
    assert c.verdict == UNCHECKABLE and not c.reading
    t = vd.claim_chain(**vd.READING_480P)["t_vid"].to("s").m
    assert 30 <= t <= 120                                                # 480p on a node: about a minute
    assert vd.claim_chain(81, 720, 1280, 8)["t_vid"].to("s").m > 120      # 720p on the node: minutes
    assert vd.claim_chain(81, 720, 1280, 1)["t_vid"].to("s").m > 15 * 60  # one GPU: a quarter hour and more


def test_forty_steps_with_guidance_are_eighty_passes():
    assert chains.derive("video-diffusion")["passes"].m == 80
    assert chains.derive("video-diffusion", cfg=False)["passes"].m == 40


def test_chain_is_within_a_factor_of_two_of_published_wall_clock_times():
    ck = vd.checks()
    for k in ("ratio_one480", "ratio_eight480", "ratio_one720"):
        assert 0.5 < ck[k] < 1.0, k   # the chain omits text encoder, VAE and parallel overheads: it is a floor


def test_tokens_and_cost_at_the_defaults():
    d = chains.derive("video-diffusion")
    assert d["dit_tokens"].m == 75600
    assert d["intensity"].m > 100 * 295          # hundreds of times the H100 ridge at batch one
    assert d["usd_per_video"].m == pytest.approx(d["gpu_seconds_per_video"].m / 3600 * 3.99)


def test_batching_buys_nothing_when_batch_one_is_compute_bound():
    d = chains.derive("video-diffusion")
    assert vd.batching_gain(d["intensity"].m, 295.0, 8) == pytest.approx(1.0)
    assert vd.batching_gain(10.0, 295.0, 8) == pytest.approx(8.0)   # a decode-like pass: batching is everything


def test_attention_makes_time_superlinear_in_pixels_and_linear_in_steps():
    base = chains.derive("video-diffusion", height=480, width=832)
    big = chains.derive("video-diffusion", height=960, width=1664)
    assert big["flops_per_video"].m / base["flops_per_video"].m > 4
    s80 = chains.derive("video-diffusion", steps=80)
    assert s80["flops_per_video"].m == pytest.approx(2 * chains.derive("video-diffusion")["flops_per_video"].m)


@pytest.mark.parametrize("bad", [dict(frames=80), dict(height=725), dict(mfu=1.5), dict(gpus=0),
                                 dict(dit="sora"), dict(cfg="yes"), dict(steps=2.5)])
def test_bad_inputs_are_refused_naming_the_parameter(bad):
    name = next(iter(bad))
    with pytest.raises(ParameterError, match=name):
        chains.derive("video-diffusion", **bad)


def test_a_loose_architecture_override_is_refused():
    with pytest.raises(ParameterError, match="n_params cannot be set"):
        chains.derive("video-diffusion", n_params=14e9)


def test_the_rental_default_is_the_catalog_rate():
    rent = next(p for p in chains.parameters("video-diffusion") if p.name == "rent_usd_per_gpu_hour")
    assert rent.default == vd.rental_rate()


def test_rows_show_each_parameters_own_source_and_true_kind_at_the_defaults():
    spec = chains.spec("video-diffusion")
    rows = {r.name: r for r in spec.compute(spec.check()).rows}
    assert rows["u"].kind == "measured-by-others" and "2509.19222" in rows["u"].source
    assert rows["r"].kind == "market" and "lambda_on_demand" in rows["r"].source
    moved = {r.name: r for r in spec.compute(spec.check(mfu=0.3)).rows}
    assert moved["u"].kind == "assumption" and moved["u"].source == "parameters cell"
    assert catalog.price("h100-rental").q("lambda_on_demand").m == vd.rental_rate()


def test_another_models_geometry_from_the_command_line_gives_its_token_count(tmp_path):
    """CogVideoX-5B (arXiv 2408.06072; its transformer config, vd.COGVIDEOX_SRC): a 4 x 8 x 8 VAE and a 2 x 2 patch
    turn 49 frames of 720 x 480 into 13 latent frames of 60 x 90 and 13 x 30 x 45 = 17,550 tokens; given as
    JSON text and as a .json file alike."""
    import json

    from utils import rederive
    file = tmp_path / "cogvideox.json"
    file.write_text(json.dumps([vd.COGVIDEOX_5B]))
    size = {k: str(v) for k, v in vd.COGVIDEOX_SIZE.items()}
    for given in (json.dumps(vd.COGVIDEOX_5B), str(file)):
        out = rederive.payload("video-diffusion", {"dit_geometry": given, **size})["results"]
        assert out["dit_tokens"]["value"] == 13 * (480 // 16) * (720 // 16) == 17550
        assert out["latent_elements"]["value"] == 13 * 60 * 90 * 16
    rows = {r.name: r for r in vd.compute(chains.check("video-diffusion", dit_geometry=[vd.COGVIDEOX_5B],
                                                          **vd.COGVIDEOX_SIZE)).rows}
    assert rows["d"].kind == "assumption" and rows["d"].source == "parameters cell"


def test_a_temporal_patch_divides_the_latent_frames():
    two = {**vd.COGVIDEOX_5B, "patch_t": 2}
    one = chains.derive("video-diffusion", dit_geometry=[vd.COGVIDEOX_5B], frames=85, height=480, width=720)
    half = chains.derive("video-diffusion", dit_geometry=[two], frames=85, height=480, width=720)
    assert one["dit_tokens"].m == 22 * 30 * 45 and half["dit_tokens"].m == one["dit_tokens"].m / 2


@pytest.mark.parametrize("change, match", [
    (dict(vae_spatial=0), r"dit_geometry\[0\].vae_spatial must be a whole number >= 1"),
    (dict(patch_h=1.5), r"dit_geometry\[0\].patch_h must be a whole number >= 1"),
    (dict(layers=-2), r"dit_geometry\[0\].layers must be a whole number >= 1"),
    (dict(width="wide"), r"dit_geometry\[0\].width must be a number"),
    (dict(name=""), r"dit_geometry\[0\].name must be a non-empty string"),
    (dict(patch_t=2), "frames/height/width for CogVideoX-5B: 13 latent frames do not divide by the temporal patch 2"),
    (dict(vae_temporal=5), "frames must be 1 \\+ a multiple of 5"),
])
def test_bad_geometry_is_refused_in_one_line(change, match):
    with pytest.raises(ParameterError, match=match) as e:
        chains.check("video-diffusion", dit_geometry=[{**vd.COGVIDEOX_5B, **change}], **vd.COGVIDEOX_SIZE)
    assert "\n" not in str(e.value)


def test_a_missing_field_or_a_second_row_is_refused(capsys):
    from utils import rederive
    partial = {k: v for k, v in vd.COGVIDEOX_5B.items() if k != "ffn_width"}
    with pytest.raises(ParameterError, match=r"dit_geometry\[0\] lacks column 'ffn_width'"):
        chains.check("video-diffusion", dit_geometry=[partial])
    with pytest.raises(ParameterError, match="dit_geometry is one model: give one row, got 2"):
        chains.check("video-diffusion", dit_geometry=[vd.COGVIDEOX_5B] * 2)
    assert rederive.main(["video-diffusion", "--set", 'dit_geometry={"name": "x", "layers": 0}']) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: dit_geometry[0] lacks column") and err.count("\n") == 1
