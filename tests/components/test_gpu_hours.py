"""utils/components/gpu_hours.py: integer usage priced once in Decimal, the rounding rules, every refusal, and the
float model that the chapter's drift numbers come from, checked against real float additions."""
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from utils.components import gpu_hours as gh
from utils.components.gpu_hours import Usage

T0 = 1_764_547_200
PRICES = {"h100": Decimal("3.99")}


def rec(i, start, end, device=None, gpus=8, sku="h100", tenant="acme"):
    return Usage(f"r{i}", tenant, device or f"d{i}", sku, gpus, T0 + start, T0 + end)


@pytest.mark.parametrize("seconds,rule,billed", [
    (1, "second", 1), (59, "minute", 60), (60, "minute", 60), (61, "minute", 120), (3599, "hour", 3600),
    (3600, "hour", 3600), (3601, "hour", 7200), (0, "hour", 0), (86400 * 365, "minute", 86400 * 365)])
def test_billed_seconds_bills_every_started_unit(seconds, rule, billed):
    assert gh.billed_seconds(seconds, rule) == billed


def test_integer_rounding_never_bills_the_extra_minute_the_float_route_does():
    over = [m for m in range(1, 10081) if gh.billed_seconds_float(60 * m, "minute") != 60 * m]
    assert over and 31 in over                                    # 31 min: 31.000000000000004 -> 32
    assert all(gh.billed_seconds(60 * m, "minute") == 60 * m for m in range(1, 10081))


def test_bill_prices_summed_gpu_seconds_once_half_up_to_the_cent():
    # 8 GPUs x 5,400 s at 3.99 = 47.88 exactly; 1 GPU-second = 0.0011083... is priced on the sum, not per record
    b = gh.bill([rec(1, 0, 5400)], PRICES)
    assert b.total == Decimal("47.88") and b.lines[("acme", "h100")] == Decimal("47.88")
    seconds = [rec(i, i, i + 1, gpus=1) for i in range(3600)]
    assert gh.bill(seconds, PRICES).total == Decimal("3.99")      # 3,600 one-second records: one hour
    assert gh.amount(1, Decimal("3.99")) == Decimal("0.00")       # rounding each record would bill nothing
    assert gh.amount(1, Decimal("0.018")) == Decimal("0.00") and gh.amount(1, Decimal("0.036")) == Decimal("0.00")
    assert gh.amount(450, Decimal("0.04")) == Decimal("0.01")     # 0.005 exactly: half up


def test_rounding_rule_is_a_parameter_and_never_bills_less():
    jobs = [rec(i, 0, s) for i, s in enumerate([1, 59, 61, 3599, 3601, 7200])]
    by = {r: gh.bill(jobs, PRICES, r) for r in gh.ROUNDINGS}
    assert by["second"].billed_seconds == by["second"].used_seconds == 8 * sum([1, 59, 61, 3599, 3601, 7200])
    assert by["second"].total <= by["minute"].total <= by["hour"].total
    assert by["hour"].billed_seconds == 8 * 3600 * (1 + 1 + 1 + 1 + 2 + 2)
    with pytest.raises(ValueError, match="rounding"):
        gh.bill(jobs, PRICES, "day")


def test_a_float_price_is_refused():
    with pytest.raises(TypeError, match="not a float"):
        gh.bill([rec(1, 0, 60)], {"h100": 3.99})
    assert gh.bill([rec(1, 0, 3600)], {"h100": "3.99"}).total == Decimal("31.92")


@pytest.mark.parametrize("record,reason", [
    (rec(1, 600, 0), "before it starts"), (rec(1, 0, 0), "zero length"), (rec(1, 0, 60, gpus=-8), "GPU count"),
    (rec(1, 0, 60, gpus=0), "GPU count"), (rec(1, 0, 60, gpus=1.5), "GPU count"),
    (Usage("r1", "a", "d", "h100", 1, T0 + 0.5, T0 + 60), "whole seconds"), (rec(1, 0, 60, sku="mi300x"), "no price")])
def test_each_record_that_makes_no_sense_is_refused_with_its_reason(record, reason):
    b = gh.bill([rec(0, 0, 3600), record], PRICES)
    assert [x.record for x in b.refused] == [record] and reason in b.refused[0].reason
    assert b.total == Decimal("31.92")                             # the good record is still billed


def test_overlapping_records_on_one_device_are_both_refused_touching_ones_are_not():
    a, b_, c = rec(1, 0, 3600, device="n"), rec(2, 1800, 5400, device="n"), rec(3, 5400, 9000, device="n")
    b = gh.bill([a, b_, c], PRICES)
    assert [x.record for x in b.refused] == [a, b_] and "for 1800 s" in b.refused[0].reason
    assert b.used_seconds == 8 * 3600                               # c touches b at 5,400: not an overlap
    other = gh.bill([a, rec(2, 1800, 5400, device="m")], PRICES)   # the same times on another device: fine
    assert not other.refused


def test_a_duplicated_id_is_refused():
    first, again = rec(1, 0, 60), Usage("r1", "acme", "elsewhere", "h100", 8, T0, T0 + 60)
    b = gh.bill([first, again], PRICES)
    assert [x.record for x in b.refused] == [again] and "duplicate" in b.refused[0].reason


def test_property_bill_is_additive_over_tenants_and_independent_of_record_order():
    rng = np.random.default_rng(3)
    recs = [Usage(f"r{i}", f"t{i % 3}", f"d{i}", "h100", int(rng.integers(1, 9)), T0, T0 + int(rng.integers(1, 10**5)))
            for i in range(200)]
    b = gh.bill(recs, PRICES, "minute")
    shuffled = gh.bill([recs[i] for i in rng.permutation(200)], PRICES, "minute")
    assert b.total == shuffled.total and b.invoices == shuffled.invoices
    assert b.total == sum(gh.bill([r for r in recs if r.tenant == t], PRICES, "minute").total for t in ("t0", "t1", "t2"))


@pytest.mark.parametrize("c,n", [(3.99 / 3600, 200_000), (0.399, 100_000), (0.1, 50_000), (1 / 3, 30_000),
                                 (2**-20 + 2**-60, 20_000), (2**-20 + 2**-50, 20_000)])   # the last two: ties
def test_float_running_sum_equals_real_float_additions(c, n):
    s, s32, c32 = 0.0, np.float32(0), np.float32(c)
    for _ in range(n):
        s += c
        s32 = np.float32(s32 + c32)
    assert gh.float_running_sum(c, n) == s
    assert gh.float_running_sum(c, n, "float32") == float(s32)


def test_first_off_by_equals_a_brute_force_search():
    c, exact, thr = 0.399, Fraction(399, 1000), Fraction(1, 10**9)
    s = 0.0
    for k in range(1, 100_000):
        s += c
        if abs(Fraction(s) - k * exact) >= thr:
            break
    assert gh.first_off_by(c, exact, thr, 100_000) == k
    assert gh.first_off_by(0.5, Fraction(1, 2), thr, 10**6) is None   # exact in binary: never off
