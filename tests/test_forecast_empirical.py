"""The empirical regime forecast (issue #17): ``forecast_regimes(method="empirical")`` with
priors from other jobs' observed regimes (`regime_length_prior`, `RegimePool`) and
``calibrate=True`` profiled epoch times. Numbers below are worked by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairalloc import InputError
from fairalloc.schedule import RegimeModel, forecast_regimes
from fairalloc.schedule.posteriors import RegimePool, regime_length_prior

NAN = np.nan
GNS4 = RegimeModel.gns(10, num_regimes=4)  # batch 10, 20, 40, 80


def _walk(model, n, bs=(), sec=(), prior=None, **kw):
    return forecast_regimes(model, n, bs, sec, profiled={10.0: 60.0}, method="empirical",
                            prior_epochs=prior, **kw)


def test_empirical_without_prior_is_the_restatement_forecast():
    model = RegimeModel.accordion(32, 64, num_regimes=4)
    bs, sec = [32] * 20 + [64] * 40, [50.0] * 20 + [30.0] * 40
    a = forecast_regimes(model, 100, bs, sec)
    b = forecast_regimes(model, 100, bs, sec, method="empirical")
    assert b.method == "empirical" and b.posterior is None
    np.testing.assert_array_equal(a.epochs, b.epochs)
    np.testing.assert_array_equal(a.remaining_epochs, b.remaining_epochs)
    np.testing.assert_array_equal(a.epoch_seconds, b.epoch_seconds)


@pytest.mark.parametrize(("n", "prior", "expected"), [
    # priors shorter than N: the last regime takes the shortfall (100 - 70 = 30)
    (100, [10, 20, 40, NAN], [10, 20, 40, 30]),
    (100, [10, 20, 40, 5], [10, 20, 40, 30]),
    # longer than N: cut in regime order (10 + 20 + 20 = 50)
    (50, [10, 20, 40, NAN], [10, 20, 20, 0]),
    # unknown regimes split evenly what the known ones leave: (100 - 10 - 50) / 2 = 20
    (100, [10, NAN, NAN, 50], [10, 20, 20, 50]),
])
def test_new_job_walks_the_prior(n, prior, expected):
    fc = _walk(GNS4, n, prior=prior)
    np.testing.assert_allclose(fc.epochs, expected)
    np.testing.assert_allclose(fc.remaining_epochs, expected)
    assert fc.remaining_epochs.sum() == pytest.approx(n)


def test_job_that_showed_two_regimes_gets_the_rule():
    # 10 epochs at batch 10 (60 s), 20 at 20 (40 s), 5 so far at 40 (30 s); N = 100.
    # Finished regimes keep 10 and 20; the ongoing one gets its prior 40 (> 5 run), batch 80
    # takes the rest 100 - 70 = 30; remaining 35 at batch 40 and 30 at batch 80.
    bs = [10] * 10 + [20] * 20 + [40] * 5
    sec = [60.0] * 10 + [40.0] * 20 + [30.0] * 5
    fc = forecast_regimes(GNS4, 100, bs, sec, method="empirical",
                          prior_epochs=[99, 99, 40, NAN], profiled={80: 25.0})
    np.testing.assert_allclose(fc.epochs, [10, 20, 40, 30])
    np.testing.assert_allclose(fc.remaining_epochs, [0, 0, 35, 30])
    # 35 * 30 s + 30 * 25 s
    assert fc.remaining_seconds == pytest.approx(35 * 30 + 30 * 25)


def test_ongoing_regime_that_outlived_its_prior_keeps_the_censored_rule():
    # the prior says 10 epochs, the job has run 30 in its first regime: the prior is ignored
    # for it and the restatement (censored) value stays; the rest is split evenly.
    bs, sec = [10] * 30, [60.0] * 30
    rule = forecast_regimes(GNS4, 100, bs, sec, profiled={10.0: 60.0})
    fc = forecast_regimes(GNS4, 100, bs, sec, profiled={10.0: 60.0}, method="empirical",
                          prior_epochs=[10, NAN, NAN, NAN])
    np.testing.assert_allclose(fc.epochs, rule.epochs)
    assert fc.epochs[0] > 30


def test_lower_bounds_raise_unknown_regimes():
    # K = 3, N = 90, nothing known: restatement 30 each; a bound of 60 on regime 0 lifts it,
    # the two later regimes share the other 30.
    model = RegimeModel.gns(10, num_regimes=3)
    fc = _walk(model, 90, prior=[[NAN, NAN, NAN], [60, 0, 0]])
    np.testing.assert_allclose(fc.epochs, [60, 15, 15])
    # a bound never lowers a regime and leaves known lengths alone
    fc = _walk(model, 90, prior=[[10, NAN, NAN], [5, 1, 1]])
    np.testing.assert_allclose(fc.epochs, [10, 40, 40])


def test_calibrate_scales_the_profile_by_the_measured_ratio():
    model = RegimeModel.gns(32, num_regimes=3)
    prof = {32: 40.0, 64: 20.0, 128: 12.0}
    raw = forecast_regimes(model, 12, [32, 32], [60.0, 60.0], profiled=prof)
    cal = forecast_regimes(model, 12, [32, 32], [60.0, 60.0], profiled=prof, calibrate=True)
    np.testing.assert_allclose(raw.epoch_seconds, [60, 20, 12])  # measured, then the table
    np.testing.assert_allclose(cal.epoch_seconds, [60, 30, 18])  # table x 60/40
    # nothing both measured and profiled: nothing to calibrate with
    none = forecast_regimes(model, 12, [32, 32], [60.0, 60.0], profiled={64: 20.0},
                            calibrate=True)
    np.testing.assert_allclose(none.epoch_seconds[1], 20.0)


def test_empirical_samples_are_its_point_forecast():
    fc = _walk(GNS4, 100, prior=[10, 20, 40, NAN])
    draws = fc.sample_epochs(5, rng=0)
    np.testing.assert_allclose(draws, np.tile(fc.remaining_epochs, (5, 1)))


@pytest.mark.parametrize(("prior", "argument"), [
    ([1, 2, 3], "prior_epochs"),
    ([[1, 2, 3, 4]] * 3, "prior_epochs"),
    ([1, 2, -3, 4], "prior_epochs"),
])
def test_bad_prior_names_the_argument(prior, argument):
    with pytest.raises(InputError) as err:
        _walk(GNS4, 100, prior=prior)
    assert err.value.argument == argument


def test_inputs_are_not_mutated():
    prior = np.array([[10.0, NAN, 40.0, NAN], [0.0, 5.0, 0.0, 0.0]])
    keep = prior.copy()
    _walk(GNS4, 100, prior=prior)
    np.testing.assert_array_equal(prior, keep)


# ---- regime_length_prior -------------------------------------------------------------------
def test_kaplan_meier_median_with_censoring():
    # regime 0 lengths 4 (ended), 6 (censored), 8 (ended), 10 (ended):
    # S(4) = 3/4; 6 censored; S(8) = 3/4 * (1 - 1/2) = 3/8 <= 1/2 -> median 8
    # (the plain median of the ended lengths would be 8 too, but of all four 7)
    n = [100, 100, 100, 100]
    out = regime_length_prior(n, [[4], [6], [8], [10]], [[True], [False], [True], [True]],
                              target_epochs=100)
    assert out[0, 0] == 8
    # only censored lengths: no median, a lower bound of min(10, 0.1 * 50) = 5
    out = regime_length_prior(n, [[4], [6], [8], [10]], [[False]] * 4, target_epochs=50)
    assert np.isnan(out[0, 0]) and out[1, 0] == 5


def test_fraction_scale_when_lengths_are_a_share_of_the_job():
    # Accordion-like: the first regime is 30 % of each job (15, 30, 60 epochs of 50, 100, 200)
    # -> fractions do not spread, absolute epochs do: 0.3 * 80 = 24 for an 80-epoch job.
    out = regime_length_prior([50, 100, 200], [[15], [30], [60]], [[True]] * 3, 80)
    assert out[0, 0] == pytest.approx(24.0)
    # GNS-like: 10 epochs whatever N -> absolute
    out = regime_length_prior([50, 100, 200], [[10], [10], [10]], [[True]] * 3, 80)
    assert out[0, 0] == pytest.approx(10.0)


def test_regime_length_prior_bad_inputs():
    with pytest.raises(InputError) as err:
        regime_length_prior([10, 20], [[1, 2]], [[True, False]], 5)
    assert err.value.argument == "regime_epochs"
    with pytest.raises(InputError) as err:
        regime_length_prior([10], [[1, 2]], [[True]], 5)
    assert err.value.argument == "ended"
    with pytest.raises(InputError) as err:
        regime_length_prior([10], [[1, 2]], [[True, False]], 0)
    assert err.value.argument == "target_epochs"


# ---- RegimePool: priors from other jobs move the forecast the right way ----------------------
def _pool_with(first_regime: float) -> RegimePool:
    pool = RegimePool()
    for j, n in enumerate((60.0, 100.0, 150.0)):
        # each example spent `first_regime` epochs at batch 10, then moved to 20 (ongoing)
        pool.observe(j, "gns", n, [first_regime, 5.0], configurations=[10, 20],
                     epoch_seconds=[60.0, 30.0])
    return pool


def test_finished_jobs_that_doubled_early_shorten_the_first_regime():
    rule = forecast_regimes(GNS4, 120, profiled={10: 60.0, 20: 30.0, 40: 15.0, 80: 8.0})
    pool = _pool_with(10.0)
    fc = forecast_regimes(GNS4, 120, profiled={10: 60.0, 20: 30.0, 40: 15.0, 80: 8.0},
                          method="empirical", prior_epochs=pool.prior("gns", 120, 4))
    assert rule.epochs[0] == 30  # restatement: 120 / 4
    assert fc.epochs[0] == 10    # the examples' median
    assert fc.remaining_seconds < rule.remaining_seconds  # fewer slow epochs


def test_finished_jobs_that_doubled_late_lengthen_the_first_regime():
    # examples stayed 50 epochs (fractions 0.83, 0.5, 0.33: absolute spreads less) -> 50
    pool = _pool_with(50.0)
    prof = {10: 60.0, 20: 30.0, 40: 15.0, 80: 8.0}
    rule = forecast_regimes(GNS4, 120, profiled=prof)
    fc = forecast_regimes(GNS4, 120, profiled=prof, method="empirical",
                          prior_epochs=pool.prior("gns", 120, 4))
    assert fc.epochs[0] == 50 > rule.epochs[0]
    assert fc.remaining_seconds > rule.remaining_seconds


def test_pool_observe_replaces_and_families_are_separate():
    pool = RegimePool()
    pool.observe("a", "x", 100, [10, 5])
    pool.observe("a", "x", 100, [10, 30, 5])  # the same job later: its second regime ended
    pool.observe("b", "y", 100, [70, 5])
    np.testing.assert_allclose(pool.prior("x", 100, 3), [[10, 30, NAN], [10, 30, 5]])
    np.testing.assert_allclose(pool.prior("y", 100, 3)[0, 0], 70)
    # an unknown family knows nothing
    np.testing.assert_allclose(pool.prior("z", 100, 2), [[NAN, NAN], [0, 0]])


def test_pool_profile_uses_the_median_ratio_of_its_speed_family():
    pool = RegimePool()
    for job, (s10, s20) in enumerate(((60.0, 30.0), (50.0, 40.0), (40.0, 20.0))):
        pool.observe(job, "f", 100, [10, 5], configurations=[10, 20],
                     epoch_seconds=[s10, s20], speed_family="speed")
    # ratios 0.5, 0.8, 0.5 -> median 0.5; batch 40 was never measured with 10
    assert pool.profile("speed", 10, 70.0, [10, 20, 40]) == {10.0: 70.0, 20.0: 35.0}
    assert pool.profile("f", 10, 70.0, [20]) == {10.0: 70.0}  # other speed family


def test_pool_bad_inputs():
    pool = RegimePool()
    with pytest.raises(InputError) as err:
        pool.observe("a", "x", 0, [1.0])
    assert err.value.argument == "total_epochs"
    with pytest.raises(InputError) as err:
        pool.observe("a", "x", 10, [1.0, 2.0], configurations=[1.0], epoch_seconds=[1.0, 1.0])
    assert err.value.argument == "configurations"
    with pytest.raises(InputError) as err:
        pool.prior("x", 10, 0)
    assert err.value.argument == "num_regimes"


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.floats(1.0, 400.0), st.data())
def test_empirical_bookkeeping(k, n, data):
    """Any prior: remaining epochs are N - F, non-negative, none before the ongoing regime."""
    model = RegimeModel.gns(8, num_regimes=k)
    f = data.draw(st.integers(0, int(n)))
    reg = np.sort(np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=f, max_size=f)),
                           dtype=np.int64))
    bs = model.configurations[reg]
    prior = np.array(data.draw(st.lists(st.one_of(st.just(NAN), st.floats(0.0, 500.0,
                                                                          allow_subnormal=False)),
                                        min_size=k, max_size=k)))
    floor = np.array(data.draw(st.lists(st.floats(0.0, 500.0,
                                                  allow_subnormal=False), min_size=k, max_size=k)))
    fc = forecast_regimes(model, n, bs, np.full(f, 3.0), profiled={8.0: 3.0},
                          method="empirical", prior_epochs=np.stack([prior, floor]))
    assert fc.remaining_epochs.sum() == pytest.approx(n - f, abs=1e-9 * n)
    assert (fc.remaining_epochs >= 0).all()
    assert (fc.remaining_epochs[:fc.current] == 0).all()
    assert fc.epochs[fc.current] >= fc.observed_epochs[fc.current] - 1e-12


def test_pool_forget_drops_a_job_everywhere():
    pool = RegimePool()
    pool.observe("a", "x", 100, [10, 5], configurations=[1, 2], epoch_seconds=[4.0, 2.0])
    pool.observe("b", "x", 100, [30, 5], configurations=[1, 2], epoch_seconds=[4.0, 3.0])
    assert pool.prior("x", 100, 2)[0, 0] == 10  # KM: 10 ends with 2 at risk -> S = 1/2
    assert pool.profile("x", 1, 8.0, [2]) == {1.0: 8.0, 2.0: 5.0}  # ratios 0.5, 0.75
    pool.forget("a")
    assert pool.prior("x", 100, 2)[0, 0] == 30
    assert pool.profile("x", 1, 8.0, [2]) == {1.0: 8.0, 2.0: 6.0}
    pool.forget("nobody")  # no record: nothing happens


# ---- partial_epoch: the epoch in progress ------------------------------------------------------
@pytest.mark.parametrize("method", ["restatement", "empirical", "bayesian", "greedy"])
def test_partial_epoch_is_done_work_of_the_ongoing_regime(method):
    # 3 epochs at batch 10 (60 s each) and half of the fourth: 6.5 epochs remain, the half
    # epoch counts as observed in regime 0 at 60 s, and comes off regime 0's remaining epochs
    model = RegimeModel.gns(10, num_regimes=2)
    kw = dict(profiled={20: 30.0}, method=method)
    whole = forecast_regimes(model, 10, [10] * 3, [60.0] * 3, **kw)
    half = forecast_regimes(model, 10, [10] * 3, [60.0] * 3, partial_epoch=0.5, **kw)
    assert half.done_epochs == 3.5 and half.observed_epochs[0] == 3.5
    assert half.remaining_epochs.sum() == pytest.approx(6.5)
    assert half.attained_seconds == pytest.approx(180 + 30)
    if whole.remaining_epochs[0] >= 0.5:
        np.testing.assert_allclose(half.remaining_epochs,
                                   whole.remaining_epochs - [0.5, 0.0])
        # the half epoch moved from remaining to attained time at the same duration
        assert half.total_seconds == pytest.approx(whole.total_seconds)


def test_partial_epoch_beyond_the_last_epoch_is_clipped():
    model = RegimeModel.static(10)
    fc = forecast_regimes(model, 3.25, [10] * 3, [60.0] * 3, partial_epoch=0.5)
    assert fc.remaining_epochs.sum() == 0 and fc.done_epochs == pytest.approx(3.25)


@pytest.mark.parametrize("bad", [1.0, -0.1, np.nan])
def test_partial_epoch_bad_values(bad):
    with pytest.raises(InputError) as err:
        forecast_regimes(RegimeModel.static(10), 5, [10], [60.0], partial_epoch=bad)
    assert err.value.argument == "partial_epoch"
