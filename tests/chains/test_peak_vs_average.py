"""peak-vs-average's chain: the claim, bad inputs refused, properties."""
import pytest

from utils import chains
from utils.chains import peak_vs_average as pva
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_claim_cannot_be_checked_its_third_is_the_ratio_by_definition():
    """One over the peak-to-mean ratio is the ratio restated (a residual by construction), and "average sets the
    bill" is false of the static fleet the sentence sizes: cannot be checked, with the book's figures shown."""
    (c,) = pva.claims()
    assert c.verdict == UNCHECKABLE and not c.reading and not c.nearest_true
    assert '"average sets the bill"' in c.reason and "by the definition" in c.reason
    ck = pva.checks()
    assert ck["cc"]["u_0"].m == pytest.approx(1 / 3, abs=1e-12)
    assert ck["whole"]["u"].m == pytest.approx(1 / 3, abs=1e-12)
    assert ck["cc"]["u"].m <= 1 / (3 * 1.2)


def test_published_defaults():
    out = chains.derive("peak-vs-average")
    assert out["replicas_static"].m == 56 and out["gpus_static"].m == 448
    assert out["average_utilisation"].m == pytest.approx(1e5 / (56 * 6480))
    assert 0 < out["autoscaled_share_of_idle_recovered"].m < 1


@pytest.mark.parametrize("values, message", [
    ({"peak_to_mean": 1.0}, "peak_to_mean must be > 1"),
    ({"trough_to_peak": 0.5}, "the trough cannot reach the mean"),
    ({"load_minutes": 1000.0}, "load_minutes must be at most half a day"),
    ({"gpus_per_replica": 0}, "gpus_per_replica must be a whole number"),
    ({"headroom": -0.1}, "headroom must be >= 0"),
    ({"mean_tokens_per_second": 0.0}, "mean_tokens_per_second must be > 0"),
])
def test_bad_inputs_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        chains.derive("peak-vs-average", **values)


def test_properties():
    base = chains.derive("peak-vs-average")
    slow = chains.derive("peak-vs-average", load_minutes=60.0)
    assert slow["autoscaled_gpu_hours_saved_per_day"] < base["autoscaled_gpu_hours_saved_per_day"]
    peaky = chains.derive("peak-vs-average", peak_to_mean=5.0, trough_to_peak=0.1)
    assert peaky["average_utilisation"] < base["average_utilisation"]
    more = chains.derive("peak-vs-average", mean_tokens_per_second=2e5)
    assert more["replicas_static"].m == pytest.approx(2 * base["replicas_static"].m, abs=1)


def test_the_gpu_hour_default_is_the_catalog_contract_price():
    from utils import catalog
    from utils.chains import peak_vs_average as pva
    price = float(catalog.price("h100-rental").q("contract_1y").m)
    assert next(p for p in chains.parameters("peak-vs-average") if p.name == "gpu_hour_usd").default == price
    assert pva.CLAIM["gpu_hour_usd"] == price
