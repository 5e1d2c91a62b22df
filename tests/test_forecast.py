"""Tests of regime forecasts and Shockwave's estimators (fairalloc.schedule).

Hand-worked numbers for the restatement rule (Shockwave §5, DESIGN.md), the censored mean,
the baselines of Figure 5 and the estimators of App. G.2; hypothesis properties for the
forecast's bookkeeping and its convergence to the true trajectory as epochs are observed.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc import InputError
from fairalloc.schedule import (
    RegimeForecast,
    RegimeModel,
    bayesian_posterior,
    contention_factor,
    forecast_regimes,
    ftf_estimate,
    makespan_lower_bound,
    makespan_normalizer,
    oracle_forecast,
    restatement_posterior,
)

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


# --------------------------------------------------------------------------------------------
# restatement rule (DESIGN.md "Dirichlet restatement rule")
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("total", "k", "observed", "expected"),
    [
        (100, 4, [], [25, 25, 25, 25]),  # prior Dir(N/K, ..., N/K)
        (100, 4, [10], [10, 30, 30, 30]),  # S_1 = 90/3
        (100, 4, [10, 30], [10, 30, 30, 30]),  # S_2 = 60/2
        (100, 4, [10, 30, 45], [10, 30, 45, 15]),  # S_3 = 15/1
        (100, 4, [40, 60], [40, 60, 0, 0]),  # nothing left for the rest
        (100, 3, [10, 30, 60], [10, 30, 60]),  # k = K: the observations themselves
        (100, 3, [10, 30, 40], [10, 30, 40]),  # k = K with fewer epochs than declared
        (50, 1, [], [50]),  # K = 1
        (50, 1, [20], [20]),
        (7, 2, [0], [0, 7]),  # a skipped regime
        (10, 4, [1.5], [1.5, 8.5 / 3, 8.5 / 3, 8.5 / 3]),  # fractional epochs
    ],
)
def test_restatement_hand_worked(total, k, observed, expected):
    alpha = restatement_posterior(total, k, observed)
    np.testing.assert_allclose(alpha, expected, rtol=0, atol=1e-12)
    assert not alpha.flags.writeable
    assert fa.restatement_posterior is restatement_posterior


@SETTINGS
@given(
    total=st.integers(1, 500),
    k=st.integers(1, 8),
    data=st.data(),
)
def test_restatement_properties(total, k, data):
    finished = data.draw(st.integers(0, k - 1))
    # finished regimes: a random split of at most `total` epochs
    cuts = sorted(data.draw(st.lists(st.integers(0, total), min_size=finished,
                                     max_size=finished)))
    m = np.diff(np.concatenate([[0], cuts])).astype(float)
    alpha = restatement_posterior(float(total), k, m)
    assert alpha.shape == (k,)
    np.testing.assert_array_equal(alpha[:finished], m)
    # the ongoing and future regimes split what is left evenly ...
    np.testing.assert_allclose(alpha[finished:], (total - m.sum()) / (k - finished))
    # ... so the parameters sum to N and the posterior mean (in epochs) is alpha itself
    assert alpha.sum() == pytest.approx(total)
    mean_epochs = total * alpha / alpha.sum()
    np.testing.assert_allclose(mean_epochs, alpha, atol=1e-9)


def test_restatement_does_not_mutate():
    obs = np.array([10.0, 30.0])
    restatement_posterior(100, 4, obs)
    np.testing.assert_array_equal(obs, [10.0, 30.0])


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ((0, 4, []), "total_epochs"),
        ((-5, 4, []), "total_epochs"),
        ((np.nan, 4, []), "total_epochs"),
        (("x", 4, []), "total_epochs"),
        ((100, 0, []), "num_regimes"),
        ((100, 2.0, []), "num_regimes"),
        ((100, True, []), "num_regimes"),
        ((100, 2, [10, 20, 30]), "observed_epochs"),  # more finished regimes than K
        ((100, 4, [60, 50]), "observed_epochs"),  # more epochs than N
        ((100, 4, [-1]), "observed_epochs"),
        ((100, 4, [np.inf]), "observed_epochs"),
        ((100, 4, [[1, 2]]), "observed_epochs"),
        ((100, 2, [0, 0]), "observed_epochs"),  # k = K with no epoch at all
    ],
)
def test_restatement_bad_inputs(args, argument):
    with pytest.raises(InputError) as info:
        restatement_posterior(*args)
    assert info.value.argument == argument
    assert argument in str(info.value)


def test_restatement_bad_input_names_index():
    with pytest.raises(InputError) as info:
        restatement_posterior(100, 4, [10, -2])
    assert info.value.index == (1,)
    assert "observed_epochs[1]" in str(info.value)


def test_bayesian_posterior_hand_worked():
    # prior 25 each; 20 epochs seen in regime 1 and 10 in regime 2
    np.testing.assert_allclose(bayesian_posterior(100, 4, [20, 10]), [45, 35, 25, 25])
    np.testing.assert_allclose(bayesian_posterior(100, 4, []), [25, 25, 25, 25])
    with pytest.raises(InputError, match="epochs_per_regime"):
        bayesian_posterior(100, 2, [60, 50])
    with pytest.raises(InputError, match="epochs_per_regime"):
        bayesian_posterior(100, 1, [1, 2])


# --------------------------------------------------------------------------------------------
# regime models
# --------------------------------------------------------------------------------------------
def test_regime_models():
    np.testing.assert_array_equal(RegimeModel.accordion(32, 64, num_regimes=5).configurations,
                                  [32, 64, 32, 64, 32])
    np.testing.assert_array_equal(RegimeModel.accordion(64, 32, num_regimes=2).configurations,
                                  [64, 32])
    np.testing.assert_array_equal(RegimeModel.gns(32, max_batch_size=256).configurations,
                                  [32, 64, 128, 256])
    np.testing.assert_array_equal(RegimeModel.gns(32, max_batch_size=300).configurations,
                                  [32, 64, 128, 256])
    np.testing.assert_array_equal(RegimeModel.gns(32, max_batch_size=32).configurations, [32])
    np.testing.assert_array_equal(RegimeModel.gns(10, num_regimes=3, factor=3).configurations,
                                  [10, 30, 90])
    static = RegimeModel.static(128)
    assert static.num_regimes == 1 and static.kind == "static"
    assert RegimeModel([8, 16, 8]).kind == "custom"
    assert "accordion" in repr(RegimeModel.accordion(32, 64, num_regimes=2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        static.kind = "gns"  # type: ignore[misc]
    assert not static.configurations.flags.writeable


@pytest.mark.parametrize(
    ("build", "argument"),
    [
        (lambda: RegimeModel([32, 32, 64]), "configurations"),
        (lambda: RegimeModel([32, -1]), "configurations"),
        (lambda: RegimeModel([]), "configurations"),
        (lambda: RegimeModel([32], kind="pollux"), "kind"),
        (lambda: RegimeModel.static(0), "batch_size"),
        (lambda: RegimeModel.accordion(32, 32, num_regimes=2), "large"),
        (lambda: RegimeModel.accordion(32, 64, num_regimes=0), "num_regimes"),
        (lambda: RegimeModel.gns(32), "max_batch_size"),
        (lambda: RegimeModel.gns(32, max_batch_size=64, num_regimes=2), "max_batch_size"),
        (lambda: RegimeModel.gns(32, max_batch_size=16), "max_batch_size"),
        (lambda: RegimeModel.gns(32, num_regimes=2, factor=1.0), "factor"),
        (lambda: RegimeModel.gns(-32, num_regimes=2), "initial"),
    ],
)
def test_regime_model_bad_inputs(build, argument):
    with pytest.raises(InputError) as info:
        build()
    assert info.value.argument == argument


def test_regime_model_repeat_names_index():
    with pytest.raises(InputError) as info:
        RegimeModel([8, 16, 16])
    assert info.value.index == (2,)


# --------------------------------------------------------------------------------------------
# forecasts: hand-worked cases
# --------------------------------------------------------------------------------------------
def test_forecast_gns_after_switch_with_extrapolation():
    # 2 epochs at batch 32 (60 s), just doubled to 64 (profiled 30 s): finished m = [2],
    # S_1 = (12 - 2)/2 = 5; batch 128 extrapolated through A + C/b: C = 1920, A = 0 -> 15 s
    model = RegimeModel.gns(32, num_regimes=3)
    fc = forecast_regimes(model, 12, [32, 32], [60.0, 60.0], current_batch_size=64,
                          profiled={64: 30.0})
    assert fc.current == 1
    np.testing.assert_allclose(fc.posterior, [2, 5, 5])
    np.testing.assert_allclose(fc.epochs, [2, 5, 5])
    np.testing.assert_allclose(fc.epoch_seconds, [60, 30, 15])
    assert fc.regimes == [(30.0, 5.0), (15.0, 5.0)]
    assert fc.remaining_seconds == pytest.approx(225.0)
    assert fc.attained_seconds == pytest.approx(120.0)
    assert fc.total_seconds == pytest.approx(345.0)
    assert fc.done_epochs == 2.0


def test_censored_mean_uniform_share():
    # K = 2, N = 2, no regime finished: S = 1, share g ~ Beta(1, 1) = U(0, 1). One epoch run
    # in regime 1 means g >= 1/2, so E[g | g >= 1/2] = 3/4: regime 1 lasts 1.5 epochs.
    model = RegimeModel.gns(32, num_regimes=2)
    fc = forecast_regimes(model, 2, [32], [10.0])
    np.testing.assert_allclose(fc.epochs, [1.5, 0.5], atol=1e-9)
    np.testing.assert_allclose(fc.remaining_epochs, [0.5, 0.5], atol=1e-9)
    # the plain rule keeps the mean S = 1 (already reached): nothing left in regime 1
    plain = forecast_regimes(model, 2, [32], [10.0], censor=False)
    np.testing.assert_allclose(plain.epochs, [1, 1])
    np.testing.assert_allclose(plain.remaining_epochs, [0, 1])


def test_censored_mean_beta_1_2():
    # K = 3, N = 3: S = 1, g ~ Beta(1, 2) with density 2(1-g). One epoch run: g >= 1/3 and
    # E[g | g >= t] = (1/3 - t^2 + 2t^3/3)/(1-t)^2 = 5/9 at t = 1/3 -> 5/3 epochs,
    # the two future regimes split the other 4/3.
    model = RegimeModel.accordion(16, 32, num_regimes=3)
    fc = forecast_regimes(model, 3, [16], [10.0], profiled={32: 5.0})
    np.testing.assert_allclose(fc.epochs, [5 / 3, 2 / 3, 2 / 3], atol=1e-9)
    np.testing.assert_allclose(fc.epoch_seconds, [10, 5, 10])
    assert fc.remaining_seconds == pytest.approx(2 / 3 * 10 + 2 / 3 * 5 + 2 / 3 * 10)
    plain = forecast_regimes(model, 3, [16], [10.0], profiled={32: 5.0}, censor=False)
    np.testing.assert_allclose(plain.epochs, [1, 1, 1])


def test_censored_equals_rule_without_epochs_in_current_regime():
    model = RegimeModel.accordion(32, 64, num_regimes=4)
    bs = [32] * 20 + [64] * 30
    sec = [50.0] * 20 + [30.0] * 30
    for censor in (True, False):
        fc = forecast_regimes(model, 100, bs, sec, current_batch_size=32, censor=censor)
        assert fc.current == 2
        np.testing.assert_allclose(fc.posterior, [20, 30, 25, 25])
        np.testing.assert_allclose(fc.epochs, fc.posterior)
        # the third regime is batch 32 again: its measured 50 s per epoch is reused
        assert fc.regimes == [(50.0, 25.0), (30.0, 25.0)]


def test_censoring_far_in_the_tail():
    # S is large and the ongoing regime has run far beyond it: the truncated Beta's tail
    # underflows; the forecast then ends the ongoing regime where it is (never shorter)
    model = RegimeModel.gns(1, num_regimes=2)
    fc = forecast_regimes(model, 4000, [1] * 3990, [1.0] * 3990)
    assert fc.epochs[0] >= 3990
    assert fc.remaining_epochs.sum() == pytest.approx(10)
    assert np.all(fc.remaining_epochs >= 0)
    draws = fc.sample_epochs(50, rng=0)
    np.testing.assert_allclose(draws.sum(axis=1), 10)


def test_bayesian_baseline_hand_worked():
    # alpha = [45, 35, 25, 25] / 130 * 100 predicted lengths; regime 2 keeps 3500/130 - 10
    # = 2200/130, the future ones 2500/130 each; rescaled to the 70 epochs left
    model = RegimeModel.accordion(32, 64, num_regimes=4)
    bs = [32] * 20 + [64] * 10
    sec = [50.0] * 20 + [30.0] * 10
    fc = forecast_regimes(model, 100, bs, sec, method="bayesian")
    np.testing.assert_allclose(fc.posterior, [45, 35, 25, 25])
    np.testing.assert_allclose(fc.epochs, np.array([45, 35, 25, 25]) * 100 / 130)
    expected = np.array([0, 2200, 2500, 2500]) * 70 / 7200
    np.testing.assert_allclose(fc.remaining_epochs, expected)
    assert fc.remaining_epochs.sum() == pytest.approx(70)


def test_greedy_baseline_uses_latest_duration():
    model = RegimeModel.accordion(32, 64, num_regimes=4)
    bs = [32] * 20 + [64] * 10
    sec = [50.0] * 20 + [30.0] * 9 + [31.0]
    fc = forecast_regimes(model, 100, bs, sec, method="greedy")
    assert fc.posterior is None
    assert fc.regimes == [(31.0, 70.0)]
    assert fc.remaining_seconds == pytest.approx(70 * 31.0)
    # even right after a switch, greedy keeps the latest measured duration
    fc2 = forecast_regimes(model, 100, bs, sec, method="greedy", current_batch_size=32)
    assert fc2.regimes == [(31.0, 70.0)]
    assert fc2.current == 2


def test_oracle_forecast_is_exact():
    bs = [32] * 3 + [64] * 4 + [32] * 3
    sec = [10.0, 11.0, 12.0, 5.0, 6.0, 7.0, 8.0, 10.0, 10.0, 13.0]
    fc = oracle_forecast(bs, sec, done_epochs=4)
    assert fc.method == "oracle"
    np.testing.assert_array_equal(fc.configurations, [32, 64, 32])
    np.testing.assert_array_equal(fc.epochs, [3, 4, 3])
    np.testing.assert_array_equal(fc.observed_epochs, [3, 1, 0])
    np.testing.assert_array_equal(fc.remaining_epochs, [0, 3, 3])
    assert fc.current == 1
    np.testing.assert_allclose(fc.epoch_seconds, [11.0, 7.0, 11.0])
    assert fc.attained_seconds == pytest.approx(38.0)
    assert fc.remaining_seconds == pytest.approx(sum(sec[4:]))
    assert fc.total_seconds == pytest.approx(sum(sec))
    done = oracle_forecast(bs, sec, done_epochs=10)
    assert done.regimes == [] and done.remaining_seconds == 0.0 and done.current == 2
    fresh = oracle_forecast(bs, sec, done_epochs=0)
    assert fresh.current == 0 and fresh.remaining_seconds == pytest.approx(sum(sec))
    with pytest.raises(InputError, match="done_epochs"):
        oracle_forecast(bs, sec, done_epochs=11)
    with pytest.raises(InputError, match="epoch_seconds"):
        oracle_forecast(bs, sec[:-1], done_epochs=1)


def test_skipped_regime_counts_zero_epochs():
    # GNS jumps 32 -> 128 at one boundary: regime 64 finished with 0 epochs
    model = RegimeModel.gns(32, num_regimes=4)
    fc = forecast_regimes(model, 20, [32, 32, 128], [8.0, 8.0, 4.0])
    np.testing.assert_array_equal(fc.observed_epochs, [2, 0, 1, 0])
    assert fc.current == 2
    np.testing.assert_allclose(fc.posterior, [2, 0, 9, 9])
    assert fc.remaining_epochs.sum() == pytest.approx(17)
    assert fc.remaining_epochs[1] == 0


def test_new_job_and_finished_job():
    model = RegimeModel.gns(32, num_regimes=2)
    new = forecast_regimes(model, 10, profiled={32: 6.0})
    assert new.current == 0
    np.testing.assert_allclose(new.epochs, [5, 5])
    np.testing.assert_allclose(new.epoch_seconds, [6, 6])  # one known duration: held
    assert new.remaining_seconds == pytest.approx(60.0) and new.attained_seconds == 0.0
    done = forecast_regimes(model, 4, [32, 32, 64, 64], [6.0, 6.0, 4.0, 4.0])
    assert done.regimes == [] and done.remaining_seconds == 0.0
    assert done.total_seconds == pytest.approx(20.0)


def test_extrapolation_faces_of_nonnegative_fit():
    # durations growing with batch size: the unconstrained A + C/b fit has C < 0; the
    # constrained fit holds the mean (C = 0)
    model = RegimeModel.gns(16, num_regimes=3)
    fc = forecast_regimes(model, 30, [16] * 5 + [32] * 5, [10.0] * 5 + [20.0] * 5)
    assert fc.epoch_seconds[2] == pytest.approx(15.0)
    # exactly proportional to 1/b: A = 0, C = 160 -> batch 64 takes 2.5 s
    fc = forecast_regimes(model, 30, [16] * 5 + [32] * 5, [10.0] * 5 + [5.0] * 5)
    assert fc.epoch_seconds[2] == pytest.approx(2.5)
    # A + C/b with A = 4, C = 96: 10 at 16, 7 at 32 -> 5.5 at 64
    fc = forecast_regimes(model, 30, [16] * 5 + [32] * 5, [10.0] * 5 + [7.0] * 5)
    assert fc.epoch_seconds[2] == pytest.approx(5.5)


def test_measured_overrides_profiled():
    model = RegimeModel.gns(32, num_regimes=2)
    fc = forecast_regimes(model, 10, [32, 32], [6.0, 8.0], profiled={32: 100.0, 64: 3.0})
    np.testing.assert_allclose(fc.epoch_seconds, [7.0, 3.0])


def test_epochs_advanced_through_regimes():
    fc = oracle_forecast([32, 32, 64, 64], [60.0, 60.0, 30.0, 30.0], done_epochs=1)
    np.testing.assert_allclose(fc.epochs_advanced([0, 30, 60, 75, 90, 120, 10**6]),
                               [0, 0.5, 1, 1.5, 2, 3, 3])
    assert fc.epochs_advanced(60.0) == pytest.approx(1.0)
    grid = fc.epochs_advanced(np.array([[0.0, 60.0], [90.0, 120.0]]))
    np.testing.assert_allclose(grid, [[0, 1], [2, 3]])
    with pytest.raises(InputError, match="seconds"):
        fc.epochs_advanced([-1.0])


def test_forecast_is_immutable_and_inputs_untouched():
    model = RegimeModel.accordion(32, 64, num_regimes=3)
    bs = np.array([32.0] * 5 + [64.0] * 2)
    sec = np.array([5.0] * 5 + [3.0] * 2)
    fc = forecast_regimes(model, 20, bs, sec)
    np.testing.assert_array_equal(bs, [32.0] * 5 + [64.0] * 2)
    np.testing.assert_array_equal(sec, [5.0] * 5 + [3.0] * 2)
    for name in ("epochs", "remaining_epochs", "epoch_seconds", "posterior", "observed_epochs"):
        with pytest.raises(ValueError):
            getattr(fc, name)[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        fc.current = 0  # type: ignore[misc]
    assert fc.replace(current=0).current == 0 and fc.current == 1
    frame = fc.to_frame()
    assert list(frame["state"]) == ["finished", "current", "future"]
    assert frame["remaining_epochs"].sum() == pytest.approx(13)
    assert "RegimeForecast(method='restatement'" in repr(fc)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        (dict(model="gns"), "model"),
        (dict(total_epochs=0), "total_epochs"),
        (dict(method="pollux"), "method"),
        (dict(batch_sizes=[32, 32], epoch_seconds=[1.0]), "epoch_seconds"),
        (dict(batch_sizes=[32, -32], epoch_seconds=[1.0, 1.0]), "batch_sizes"),
        (dict(batch_sizes=[32, 32], epoch_seconds=[1.0, 0.0]), "epoch_seconds"),
        (dict(batch_sizes=[32] * 11, epoch_seconds=[1.0] * 11), "batch_sizes"),  # F > N
        (dict(batch_sizes=[48], epoch_seconds=[1.0]), "batch_sizes"),  # not in the model
        (dict(batch_sizes=[64, 32], epoch_seconds=[1.0, 1.0]), "batch_sizes"),  # GNS shrinks
        (dict(batch_sizes=[], epoch_seconds=[]), "epoch_seconds"),  # no duration known
        (dict(current_batch_size=0), "current_batch_size"),
        (dict(current_batch_size=48), "current_batch_size"),
        (dict(profiled=[(32, 1.0)]), "profiled"),
        (dict(profiled={32: -1.0}), "profiled"),
        (dict(rng_test=True), "rng"),
    ],
)
def test_forecast_bad_inputs(kwargs, argument):
    base = dict(model=RegimeModel.gns(32, num_regimes=3), total_epochs=10,
                batch_sizes=[32, 32], epoch_seconds=[1.0, 1.0])
    if kwargs.pop("rng_test", False):
        fc = forecast_regimes(**base)
        with pytest.raises(InputError) as info:
            fc.sample_epochs(3, rng="seed")
        assert info.value.argument == argument
        return
    base.update(kwargs)
    with pytest.raises(InputError) as info:
        forecast_regimes(base.pop("model"), base.pop("total_epochs"), **base)
    assert info.value.argument == argument


def test_forecast_bad_run_names_index():
    model = RegimeModel.accordion(32, 64, num_regimes=2)
    with pytest.raises(InputError) as info:  # a third regime where K = 2
        forecast_regimes(model, 10, [32, 32, 64, 32], [1.0] * 4)
    assert info.value.argument == "batch_sizes" and info.value.index == (3,)
    assert "batch_sizes[3]" in str(info.value)


# --------------------------------------------------------------------------------------------
# convergence to the true trajectory (hypothesis)
# --------------------------------------------------------------------------------------------
@st.composite
def true_jobs(draw):
    """A model, a true trajectory that follows it, and true per-configuration durations."""
    kind = draw(st.sampled_from(["accordion", "gns"]))
    k = draw(st.integers(1, 5))
    model = (RegimeModel.accordion(32, 64, num_regimes=k) if kind == "accordion"
             else RegimeModel.gns(16, num_regimes=k))
    used = draw(st.integers(1, k))  # the job may stop before its K-th regime
    lengths = np.array(draw(st.lists(st.integers(1, 12), min_size=used, max_size=used)))
    cfgs = np.unique(model.configurations)
    secs = np.array(draw(st.lists(st.floats(0.5, 100.0), min_size=cfgs.size,
                                  max_size=cfgs.size)))
    per_cfg = dict(zip(cfgs.tolist(), secs.tolist(), strict=True))
    bs = np.repeat(model.configurations[:used], lengths)
    sec = np.array([per_cfg[b] for b in bs])
    true_epochs = np.zeros(k)
    true_epochs[:used] = lengths
    return model, bs, sec, true_epochs, per_cfg


@SETTINGS
@given(job=true_jobs(), censor=st.booleans())
def test_forecast_converges_to_truth(job, censor):
    model, bs, sec, true_epochs, per_cfg = job
    n = bs.size
    true_secs = np.array([per_cfg[c] for c in model.configurations])
    spread = true_secs.max() - true_secs.min()
    last_start = n - int(true_epochs[true_epochs > 0][-1])
    for f in range(n + 1):
        fc = forecast_regimes(model, n, bs[:f], sec[:f], profiled=per_cfg, censor=censor)
        left = n - f
        # bookkeeping: the trajectory has N epochs, N - F of them still to run
        assert fc.epochs.sum() == pytest.approx(n)
        assert fc.remaining_epochs.sum() == pytest.approx(left, abs=1e-9)
        assert np.all(fc.remaining_epochs >= -1e-12)
        np.testing.assert_allclose(fc.epochs[: fc.current], true_epochs[: fc.current])
        assert fc.epochs[fc.current] >= fc.observed_epochs[fc.current] - 1e-9
        # convergence: the L1 error of the trajectory is at most 2(N - F) ...
        assert np.abs(fc.epochs - true_epochs).sum() <= 2 * left + 1e-9
        # ... and the run-time error at most (N - F) times the spread of epoch durations
        true_remaining = float(sec[f:].sum())
        assert abs(fc.remaining_seconds - true_remaining) <= left * spread + 1e-6 * n
        assert fc.attained_seconds == pytest.approx(float(sec[:f].sum()))
        # once the job is inside the model's last regime, the forecast is the truth
        if true_epochs[-1] > 0 and f > last_start:
            np.testing.assert_allclose(fc.epochs, true_epochs, atol=1e-9)
            assert fc.remaining_seconds == pytest.approx(true_remaining)
    assert fc.remaining_seconds == 0.0
    assert fc.total_seconds == pytest.approx(float(sec.sum()))


@SETTINGS
@given(job=true_jobs(), data=st.data())
def test_baselines_bookkeeping(job, data):
    model, bs, sec, true_epochs, per_cfg = job
    n = bs.size
    f = data.draw(st.integers(0, n))
    prof = {min(per_cfg): per_cfg[min(per_cfg)]}
    for method in ("bayesian", "greedy"):
        fc = forecast_regimes(model, n, bs[:f], sec[:f], profiled=prof, method=method)
        assert fc.remaining_epochs.sum() == pytest.approx(n - f, abs=1e-9)
        assert np.all(fc.remaining_epochs[: fc.current] == 0)
    greedy = forecast_regimes(model, n, bs[:f], sec[:f], profiled=prof, method="greedy")
    latest = sec[f - 1] if f else prof[min(per_cfg)]
    assert greedy.remaining_seconds == pytest.approx((n - f) * latest)
    oracle = oracle_forecast(bs, sec, done_epochs=f)
    assert oracle.remaining_seconds == pytest.approx(float(sec[f:].sum()))
    assert oracle.remaining_epochs.sum() == n - f


@pytest.mark.parametrize("kind", ["accordion", "gns"])
def test_restatement_trajectory_beats_baselines(kind):
    # Figure 5's claim about regime interpolation error, on a fixed family of jobs that use
    # all K regimes with random lengths: over the second half of training the restatement
    # rule's mean error |epochs - truth| / N is below the standard Bayesian update's (which
    # keeps mispredicting finished regimes) and the greedy forecast's (which assumes the
    # current configuration lasts).
    rng = np.random.default_rng(5)
    errs: dict[str, list[float]] = {"restatement": [], "bayesian": [], "greedy": []}
    for _ in range(30):
        k = 4
        model = (RegimeModel.gns(32, num_regimes=k) if kind == "gns"
                 else RegimeModel.accordion(32, 64, num_regimes=k))
        lengths = rng.multinomial(60, rng.dirichlet(np.ones(k))) + 1
        bs = np.repeat(model.configurations, lengths)
        sec = 20.0 + 1000.0 / bs
        n = bs.size
        for f in range(n // 2, n, 3):
            for method in errs:
                fc = forecast_regimes(model, n, bs[:f], sec[:f], method=method)
                errs[method].append(float(np.abs(fc.epochs - lengths).mean() / n))
    mean = {m: float(np.mean(v)) for m, v in errs.items()}
    assert mean["restatement"] < mean["bayesian"]
    assert mean["restatement"] < mean["greedy"]


# --------------------------------------------------------------------------------------------
# sampling trajectories (App. F)
# --------------------------------------------------------------------------------------------
def test_samples_match_censored_mean():
    model = RegimeModel.gns(32, num_regimes=2)
    fc = forecast_regimes(model, 2, [32], [10.0])
    draws = fc.sample_epochs(20000, rng=np.random.default_rng(3))
    assert draws.shape == (20000, 2)
    np.testing.assert_allclose(draws.sum(axis=1), 1.0)
    # remaining of regime 1 = 2g - 1 with g ~ U(1/2, 1): uniform on [0, 1]
    assert draws[:, 0].min() >= 0 and draws[:, 0].max() <= 1
    assert draws[:, 0].mean() == pytest.approx(0.5, abs=0.01)
    assert np.quantile(draws[:, 0], 0.25) == pytest.approx(0.25, abs=0.02)


def test_samples_restatement_three_regimes():
    model = RegimeModel.accordion(16, 32, num_regimes=3)
    fc = forecast_regimes(model, 3, [16], [10.0], profiled={32: 5.0})
    draws = fc.sample_epochs(40000, rng=11)
    np.testing.assert_allclose(draws.mean(axis=0), fc.remaining_epochs, atol=0.02)
    assert np.all(draws >= 0)
    np.testing.assert_allclose(draws.sum(axis=1), 2.0)


@SETTINGS
@given(job=true_jobs(), data=st.data(), method=st.sampled_from(["restatement", "bayesian",
                                                                  "greedy"]))
def test_sample_rows_are_trajectories(job, data, method):
    model, bs, sec, _, per_cfg = job
    n = bs.size
    f = data.draw(st.integers(0, n))
    fc = forecast_regimes(model, n, bs[:f], sec[:f], profiled=per_cfg, method=method)
    draws = fc.sample_epochs(16, rng=data.draw(st.integers(0, 2**32 - 1)))
    assert draws.shape == (16, model.num_regimes)
    np.testing.assert_allclose(draws.sum(axis=1), n - f, atol=1e-9)
    assert np.all(draws >= 0)
    assert np.all(draws[:, : fc.current] == 0)
    if method == "greedy":
        np.testing.assert_array_equal(draws, np.broadcast_to(fc.remaining_epochs, draws.shape))
    regimes = fc.sample_regimes(16, rng=0)
    assert len(regimes) == 16
    for row in regimes:
        assert sum(e for _, e in row) == pytest.approx(n - f)
        assert all(s > 0 and e > 0 for s, e in row)


def test_sampling_reproducible():
    model = RegimeModel.gns(32, num_regimes=4)
    fc = forecast_regimes(model, 40, [32] * 5, [2.0] * 5)
    a = fc.sample_epochs(8, rng=42)
    b = fc.sample_epochs(8, rng=np.random.default_rng(42))
    c = fc.sample_epochs(8, rng=43)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    with pytest.raises(InputError, match="num_samples"):
        fc.sample_epochs(0)


# --------------------------------------------------------------------------------------------
# estimators (§6.2, App. G.2)
# --------------------------------------------------------------------------------------------
def test_ftf_hand_worked():
    # job 0: (100 + 300 + 100*2) / ((100 + 100)*2) = 600/400
    # job 1: (0 + 50 + 200*1) / (200*1) = 250/200
    # job 2: never waited, uncontended: exactly fair
    rho = ftf_estimate([100.0, 0.0, 40.0], [300.0, 50.0, 0.0], [100.0, 200.0, 60.0],
                       [2.0, 1.0, 1.0])
    np.testing.assert_allclose(rho, [1.5, 1.25, 1.0])
    # scalar contention broadcasts; a finished job (R = 0): (L + W)/(L N)
    np.testing.assert_allclose(ftf_estimate([10.0], [30.0], [0.0], 2.0), [2.0])


@SETTINGS
@given(
    L=st.floats(0.0, 1e5, allow_subnormal=False), R=st.floats(1.0, 1e5), W=st.floats(0.0, 1e5,
                                                                                     allow_subnormal=False),
    N=st.floats(1.0, 50.0), extra=st.floats(1.0, 1e4),
)
def test_ftf_properties(L, R, W, N, extra):
    rho = ftf_estimate([L, L], [W, W + extra], [R, R], N)
    # waiting more never makes a job look fairer; no waiting under N >= 1 is at most 1
    assert rho[1] > rho[0]
    assert ftf_estimate([L], [0.0], [R], N)[0] <= 1.0 + 1e-12
    # the closed form
    assert rho[0] == pytest.approx((L + W + R * N) / ((L + R) * N))


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (([0.0], [1.0], [0.0], [1.0]), "remaining"),  # no run time at all
        (([-1.0], [1.0], [1.0], [1.0]), "attained"),
        (([1.0], [-1.0], [1.0], [1.0]), "waiting"),
        (([1.0], [1.0], [np.nan], [1.0]), "remaining"),
        (([1.0], [1.0], [1.0], [0.0]), "contention"),
        (([1.0, 2.0], [1.0], [1.0, 1.0], 1.0), "waiting"),
        (([1.0, 2.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0, 1.0]), "contention"),
    ],
)
def test_ftf_bad_inputs(args, argument):
    with pytest.raises(InputError) as info:
        ftf_estimate(*args)
    assert info.value.argument == argument


def test_contention_hand_worked():
    # 4 GPUs; 2 jobs requesting GPUs on [0, 10), 8 on [10, 20]
    times, demand = [0.0, 10.0], [2.0, 8.0]
    arrival = [0.0, 5.0, 10.0, 20.0]
    got = contention_factor(arrival, 20.0, 4, times=times, demand=demand, floor=0.0)
    # (2*10 + 8*10)/20/4, (2*5 + 8*10)/15/4, 8/4, current demand 8/4
    np.testing.assert_allclose(got, [1.25, 1.5, 2.0, 2.0])
    # an uncontended history is floored at 1 by default
    light = contention_factor([0.0], 10.0, 4, times=[0.0], demand=[2.0])
    np.testing.assert_allclose(light, [1.0])
    np.testing.assert_allclose(
        contention_factor([0.0], 10.0, 4, times=[0.0], demand=[2.0], floor=0.0), [0.5])
    # zero-length segments are harmless
    np.testing.assert_allclose(
        contention_factor([0.0], 20.0, 4, times=[0.0, 10.0, 10.0], demand=[2.0, 100.0, 8.0],
                          floor=0.0), [1.25])


@SETTINGS
@given(data=st.data())
def test_contention_running_sums_match_history(data):
    e = data.draw(st.integers(1, 6))
    gaps = np.array(data.draw(st.lists(st.floats(0.0, 50.0,
                                                 allow_subnormal=False), min_size=e, max_size=e)))
    times = np.concatenate([[0.0], np.cumsum(gaps[:-1])])
    now = float(times[-1] + gaps[-1])
    demand = np.array(data.draw(st.lists(st.integers(0, 40), min_size=e, max_size=e)),
                      dtype=float)
    n = data.draw(st.integers(1, 5))
    frac = st.floats(0.0, 1.0, allow_subnormal=False)
    arrival = np.array(data.draw(st.lists(frac, min_size=n, max_size=n))) * now
    m = data.draw(st.integers(1, 16))
    hist = contention_factor(arrival, now, m, times=times, demand=demand, floor=0.0)
    # running sums, integrated independently by brute force on the segments
    seg_end = np.concatenate([times[1:], [now]])
    overlap = np.clip(seg_end[None, :] - np.maximum(times[None, :], arrival[:, None]), 0, None)
    sums = overlap @ demand
    current = float(demand[np.searchsorted(times, now, side="right") - 1])
    run = contention_factor(arrival, now, m, demand_seconds=sums, demand=current, floor=0.0)
    np.testing.assert_allclose(hist, run, rtol=1e-9, atol=1e-9)
    assert np.all(hist >= 0) and np.all(hist <= demand.max() / m + 1e-9)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        (dict(arrival=[30.0]), "arrival"),  # after now
        (dict(times=[0.0, 15.0, 10.0], demand=[1.0, 1.0, 1.0]), "times"),
        (dict(times=[0.0, 25.0], demand=[1.0, 1.0]), "times"),  # after now
        (dict(arrival=[-1.0]), "arrival"),  # before the history starts
        (dict(demand=[1.0, -1.0]), "demand"),
        (dict(demand=[1.0]), "demand"),
        (dict(num_gpus=0), "num_gpus"),
        (dict(floor=-1.0), "floor"),
        (dict(demand_seconds=[1.0]), "times"),  # both modes
        (dict(times=None), "times"),  # neither
        (dict(times=None, demand=None, demand_seconds=[1.0], arrival=[20.0]), "demand"),
        (dict(times=None, demand=2.0, demand_seconds=[1.0, 2.0]), "demand_seconds"),
    ],
)
def test_contention_bad_inputs(kwargs, argument):
    base = dict(arrival=[0.0], now=20.0, num_gpus=4, times=[0.0, 10.0], demand=[2.0, 8.0])
    base.update(kwargs)
    with pytest.raises(InputError) as info:
        contention_factor(base.pop("arrival"), base.pop("now"), base.pop("num_gpus"), **base)
    assert info.value.argument == argument


def test_makespan_lower_bound_hand_worked():
    # GPU-time 100 + 2*50 + 2*50 = 300 over 2 GPUs = 150 > longest job 100
    assert makespan_lower_bound([100.0, 50.0, 50.0], 2, workers=[1, 2, 2]) == 150.0
    # the longest job dominates
    assert makespan_lower_bound([100.0, 10.0], 4) == 100.0
    # gangs: two 2-GPU jobs of 10 s on 4 GPUs cannot finish before 10 s; without the gang
    # sizes the bound would say 5 s
    assert makespan_lower_bound([10.0, 10.0], 4, workers=[2, 2]) == 10.0
    assert makespan_lower_bound([10.0, 10.0, 10.0, 10.0], 2, workers=[2, 2, 1, 1]) == 30.0
    rows = makespan_lower_bound([[100.0, 50.0], [10.0, 10.0], [0.0, 0.0]], 1)
    np.testing.assert_allclose(rows, [150.0, 20.0, 0.0])
    assert makespan_normalizer([100.0, 50.0, 50.0]) == 200.0
    np.testing.assert_allclose(makespan_normalizer([[1.0, 2.0], [3.0, 0.0]]), [3.0, 3.0])


def _list_schedule_makespan(remaining, workers, m):
    """Makespan of greedy non-preemptive list scheduling of gangs (an achievable schedule)."""
    t, free = 0.0, m
    running: list[tuple[float, int]] = []
    queue = list(zip(remaining, workers, strict=True))
    while queue or running:
        while queue and queue[0][1] <= free:
            r, w = queue.pop(0)
            running.append((t + r, w))
            free -= w
        running.sort()
        end, w = running.pop(0)
        t, free = end, free + w
    return t


@SETTINGS
@given(data=st.data())
def test_makespan_lower_bound_is_a_lower_bound(data):
    m = data.draw(st.integers(1, 8))
    n = data.draw(st.integers(1, 8))
    remaining = data.draw(st.lists(st.floats(0.0, 100.0,
                                             allow_subnormal=False), min_size=n, max_size=n))
    workers = data.draw(st.lists(st.integers(1, m), min_size=n, max_size=n))
    h = makespan_lower_bound(remaining, m, workers=workers)
    assert h <= _list_schedule_makespan(remaining, workers, m) + 1e-9
    assert h >= max(remaining) and h >= np.dot(remaining, workers) / m - 1e-9


def test_makespan_bound_is_tight_for_equal_single_gpu_jobs():
    # 12 jobs of 10 s on 4 GPUs: list scheduling needs 30 s, exactly sum R / M
    assert makespan_lower_bound([10.0] * 12, 4) == _list_schedule_makespan([10.0] * 12,
                                                                           [1] * 12, 4) == 30.0


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: makespan_lower_bound([1.0, 2.0], 2, workers=[1, 3]), "workers"),
        (lambda: makespan_lower_bound([1.0, 2.0], 2, workers=[1, 1.5]), "workers"),
        (lambda: makespan_lower_bound([1.0, 2.0], 2, workers=[1]), "workers"),
        (lambda: makespan_lower_bound([], 2), "remaining"),
        (lambda: makespan_lower_bound([-1.0], 2), "remaining"),
        (lambda: makespan_lower_bound([1.0], 0), "num_gpus"),
        (lambda: makespan_normalizer([0.0, 0.0]), "remaining"),
        (lambda: makespan_normalizer([[1.0], [0.0]]), "remaining"),
        (lambda: makespan_normalizer([np.nan]), "remaining"),
    ],
)
def test_makespan_bad_inputs(call, argument):
    with pytest.raises(InputError) as info:
        call()
    assert info.value.argument == argument


# --------------------------------------------------------------------------------------------
# package surface
# --------------------------------------------------------------------------------------------
def test_public_names():
    for name in ("RegimeForecast", "RegimeModel", "bayesian_posterior", "contention_factor",
                 "forecast_regimes", "ftf_estimate", "makespan_lower_bound",
                 "makespan_normalizer", "oracle_forecast", "restatement_posterior"):
        assert getattr(fa, name) is getattr(sys.modules["fairalloc.schedule"], name)
    assert isinstance(forecast_regimes(RegimeModel.static(8), 2, [8], [1.0]), RegimeForecast)


def test_forecast_does_not_import_cvxpy():
    code = ("import sys, fairalloc as fa; fa.forecast_regimes; "
            "assert 'cvxpy' not in sys.modules, 'cvxpy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
