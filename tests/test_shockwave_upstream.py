"""Upstream Shockwave as a preset (issue #31): the piecewise-linear log, the equal-share
lateness test, the reordering MILP, the configuration per cluster size, the preset itself and
flags spelled as on the command line (``formulations/shockwave_options.md``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.sim import poisson_workload, simulate
from fairalloc.sim.cli import _build_policies, _parse_params
from fairalloc.sim.policies import ShockwavePolicy
from fairalloc.sim.policies.shockwave_upstream import (
    EqualShareLateness,
    dirichlet_remaining,
    fill_window,
    reorder_window,
    upstream_config,
)
from fairalloc.sim.state import EPOCH_ROUNDOFF

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
LOG_FLOOR = math.log(1e-6)


def _one_job_plan(round_duration: float, breakpoints):
    # one job of 10 epochs of 60 s, nothing done, one round of the window, no makespan term
    job = fa.PlanJob(workers=1, total_epochs=10, done_epochs=0, ftf=1.0, regimes=[(60.0, 10)])
    return fa.plan_schedule([job], 1, rounds=1, round_duration=round_duration, lam=0.0,
                            log_breakpoints=breakpoints)


# -- (1) the 6-point piecewise-linear log -----------------------------------------------------
def test_piecewise_log_hand_checked() -> None:
    up = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    # 60 s: one epoch, progress 0.1, half-way between log(1e-6) at 0 and log(0.2) at 0.2
    half = 0.5 * (LOG_FLOOR + math.log(0.2))
    assert _one_job_plan(60.0, up).welfare == pytest.approx(half, rel=1e-12)
    assert _one_job_plan(60.0, None).welfare == pytest.approx(math.log(0.1), rel=1e-12)
    # 120 s: progress 0.2, a breakpoint: the same value as the exact log
    assert _one_job_plan(120.0, up).welfare == pytest.approx(math.log(0.2), rel=1e-12)
    # upstream's slope below 20 % progress is about 61 per unit of progress
    assert (math.log(0.2) - LOG_FLOOR) / 0.2 == pytest.approx(61.0, abs=0.1)


@pytest.mark.parametrize(("bad", "index"), [((0.1, 1.0), None), ((0.0, 0.5), None),
                                            ((0.0,), None), ((0.0, 0.4, 0.4, 1.0), (2,)),
                                            ((0.0, 0.6, 0.3, 1.0), (2,))])
def test_log_breakpoints_validated(bad, index) -> None:
    with pytest.raises(fa.InputError) as info:
        _one_job_plan(60.0, bad)
    assert info.value.argument == "log_breakpoints"
    if index is not None:
        assert info.value.index == index


# -- (2) the equal-share lateness test --------------------------------------------------------
def _upstream_target(series: list[tuple[int, float]], now: int) -> float:
    """Upstream's momentum-averaged finish time, restated from its definition: the values
    weighted by the rounds each stood, then 0.9 of that plus 0.1 of the last value."""
    rounds = [r for r, _ in series] + [now]
    spans = np.diff(rounds)
    if spans.max() == 0:
        avg = series[-1][1]
    else:
        avg = float(np.dot(spans / spans.sum(), [v for _, v in series]))
    return 0.9 * avg + 0.1 * series[-1][1]


def test_equal_share_lateness_hand_checked() -> None:
    late = EqualShareLateness(3)
    # round 0: jobs 0 and 1 on 1 GPU (share 1/2): arrival + (L + R) * 2
    late.record([0, 1], 0, [0.0, 10.0], [0.0, 0.0], [100.0, 50.0], num_gpus=1)
    # round 4: job 2 arrives (share 1/3); job 0 has run 60 s and has 50 s left
    late.record([0, 1, 2], 4, [0.0, 10.0, 400.0], [60.0, 0.0, 0.0], [50.0, 50.0, 30.0],
                num_gpus=1)
    series0 = [(0, 200.0), (4, 330.0)]
    series2 = [(4, 490.0)]
    assert late.target([0, 2], 10).tolist() == pytest.approx(
        [_upstream_target(series0, 10), _upstream_target(series2, 10)], rel=1e-12)
    # at the round of a job's first estimate its target is that estimate
    assert late.target([2], 4).tolist() == [490.0]
    # the arithmetic by hand: (200 * 4 + 330 * 6) / 10 = 278; 0.9 * 278 + 0.1 * 330 = 283.2
    assert late.target([0], 10)[0] == pytest.approx(283.2, rel=1e-12)


# -- (4) the reordering MILP ------------------------------------------------------------------
def test_reorder_window_hand_checked() -> None:
    # two 1-GPU jobs, one GPU: the one of priority e takes the first two rounds
    out = reorder_window([[1, 0, 0], [0, 1, 1]], [1, 1], [0.0, 1.0], 1)
    assert out.astype(int).tolist() == [[0, 0, 1], [1, 1, 0]]
    # equal priorities: an empty first round is filled (mean round index falls)
    out = reorder_window([[0, 1, 1], [0, 1, 0]], [1, 1], [0.0, 0.0], 2)
    assert out.sum(axis=1).tolist() == [2, 1] and out[:, 0].all()


@given(seed=st.integers(0, 10_000), n=st.integers(1, 6), T=st.integers(2, 6),
       M=st.integers(1, 4))
@SETTINGS
def test_reorder_window_keeps_counts_and_capacity(seed, n, T, M) -> None:
    rng = np.random.default_rng(seed)
    w = rng.integers(1, M + 1, size=n)
    x = np.zeros((n, T), dtype=bool)
    for t in range(T):  # a feasible schedule: random jobs while they fit
        free = M
        for j in rng.permutation(n):
            if w[j] <= free and rng.random() < 0.6:
                x[j, t], free = True, free - w[j]
    logp = rng.normal(0.0, 3.0, size=n)
    out = reorder_window(x, w, logp, M)
    assert out.shape == x.shape and out.dtype == bool
    assert np.array_equal(out.sum(axis=1), x.sum(axis=1))
    assert (w @ out <= M).all()
    # never worse than the plan's own order on the reordering objective
    p = np.exp(logp - logp.max())
    cnt = np.maximum(x.sum(axis=1), 1)
    t = np.arange(T)
    assert (p / cnt) @ (out @ t) <= (p / cnt) @ (x @ t) + 1e-9 * (1 + np.abs(p) @ (x @ t))


# -- (5) the configuration per cluster size ---------------------------------------------------
def test_upstream_config_by_cluster_size() -> None:
    assert upstream_config(32) == (1e-3, 12.0)
    assert upstream_config(64) == (10.0, 5.0)
    assert upstream_config(128) == (1e-3, 15.0)
    assert upstream_config(256) == (1e5, 5.0)
    assert upstream_config(16) == (1e-3, 12.0) and upstream_config(1024) == (1e5, 5.0)
    with pytest.raises(fa.InputError):
        upstream_config(0)


# -- the preset -------------------------------------------------------------------------------
def test_preset_sets_upstreams_options_and_explicit_ones_win() -> None:
    p = ShockwavePolicy(preset="upstream").params
    assert p["preset"] == "upstream" and p["makespan"] == "max_remaining"
    assert p["welfare_norm"] == "rounds" and p["log_breakpoints"] == (0.0, 0.2, 0.4, 0.6,
                                                                       0.8, 1.0)
    assert p["lateness"] == "upstream" and p["hard_ftf_weights"] == "none"
    assert p["rhomax"] == 1.0 and p["hard_ftf_drop"] == "all" and p["reorder"] == "milp"
    assert p["replan"] == "lazy" and p["replan_interval"] == 8
    assert p["near_completion"] == "weight" and p["execution"] == "columns"
    assert p["ftf_forecast"] == "restatement"  # one forecast everywhere
    # an option given explicitly wins, even when it equals the library's default
    q = ShockwavePolicy(preset="upstream", rhomax=1.6, log_breakpoints=None).params
    assert q["rhomax"] == 1.6 and "log_breakpoints" not in q
    with pytest.raises(fa.InputError) as info:
        ShockwavePolicy(preset="nope")
    assert info.value.argument == "preset"
    # without the preset nothing changes
    assert ShockwavePolicy().params["lateness"] == "ftf"


@pytest.mark.parametrize(("gpus", "lam", "k"), [(4, 1e-3, 12.0), (256, 1e5, 5.0)])
def test_preset_takes_the_cluster_sizes_configuration(gpus, lam, k) -> None:
    w = poisson_workload(5, rate=60.0, seed=1, max_scale_factor=2)
    pol = ShockwavePolicy(preset="upstream", window=4)
    r = simulate(w, fa.Cluster({"v100": gpus}), pol, round_duration=600.0)
    assert np.isfinite(r.finish).all()
    assert (pol.k, pol.lam) == (k, lam)
    assert pol.hard_ftf_plans + pol.hard_ftf_dropped == pol.plans
    # k or lam given: no per-cluster configuration
    fixed = ShockwavePolicy(preset="upstream", window=4, k=2.0)
    simulate(w, fa.Cluster({"v100": gpus}), fixed, round_duration=600.0)
    assert fixed.k == 2.0 and fixed.lam == 4.0


def test_preset_runs_deterministically_and_reorders_dropped_plans() -> None:
    w = poisson_workload(6, rate=120.0, seed=3, max_scale_factor=2,
                         mode_probs=(0.0, 0.5, 0.5))
    runs = []
    for _ in range(2):
        pol = ShockwavePolicy(preset="upstream", window=4)
        r = simulate(w, fa.Cluster({"v100": 2}), pol, round_duration=600.0)
        runs.append((r.finish.tolist(), pol.reordered, pol.hard_ftf_dropped,
                     pol.hard_ftf_plans))
    assert runs[0] == runs[1]
    assert np.isfinite(runs[0][0]).all()
    # both branches ran; upstream reorders exactly the plans made without the limits
    assert runs[0][2] > 0 and runs[0][3] > 0
    assert runs[0][1] == runs[0][2]


# -- flags spelled as on the command line -----------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [("true", True), ("True", True), ("false", False),
                                             ("1", True), ("0", False), ("milp", "milp")])
def test_cli_flags_true_false_1_0(text, value) -> None:
    params = _parse_params([f"shockwave.reorder={text}", f"shockwave.hard_ftf={text}"
                            if text != "milp" else "shockwave.hard_ftf=true"], grid=False)
    pol = _build_policies(["shockwave"], params, (None, None))["shockwave"]
    assert pol.reorder == value
    assert ShockwavePolicy(keep_running="false").keep_running is False
    assert ShockwavePolicy(hard_ftf=0).hard_ftf is False


def test_bad_flag_names_the_option() -> None:
    with pytest.raises(fa.InputError) as info:
        ShockwavePolicy(reorder="yes")
    assert info.value.argument == "reorder"
    with pytest.raises(fa.InputError) as info:
        ShockwavePolicy(hard_ftf=2)
    assert info.value.argument == "hard_ftf"


# -- baselines both ways: upstream's MST sums raw throughputs ---------------------------------
def test_mst_upstream_variant_sums_raw_throughputs() -> None:
    from fairalloc.sim import Workload
    from fairalloc.sim.policies import GavelPolicy

    # both jobs take 100 s alone; job 0 runs 10 steps/s, job 1 one: the raw sum runs job 0
    w = Workload.from_arrays([0.0, 0.0], [[10.0], [1.0]], [1000.0, 100.0])
    raw = GavelPolicy("max_total_throughput", normalized=False, work_conserving=False)
    r = simulate(w, fa.Cluster({"gpu": 1}), raw, round_duration=50.0)
    assert r.finish[0] == pytest.approx(100.0) and r.finish[1] == pytest.approx(200.0)
    assert raw.params["normalized"] is False
    with pytest.raises(fa.InputError) as info:
        GavelPolicy("max_min_fairness", normalized=False)
    assert info.value.argument == "normalized"


def test_themis_upstream_variant_counts_cumulative_isolated_time() -> None:
    from fairalloc.sim.policies import GavelPolicy

    w = poisson_workload(4, rate=30.0, seed=3, max_scale_factor=2)
    pol = GavelPolicy("finish_time_fairness", isolated_time="cumulative",
                      work_conserving=False)
    r = simulate(w, fa.Cluster({"v100": 2}), pol, round_duration=900.0)
    assert np.isfinite(r.finish).all()
    assert pol.params["isolated_time"] == "cumulative" and pol.solves > 0
    for bad in ({"isolated_time": "cumulative"}, {"normalized": True}):
        with pytest.raises(fa.InputError) as info:
            GavelPolicy("max_min_fairness", **bad)
        assert info.value.argument == next(iter(bad))


# -- continuous epoch progress at the mean epoch time seen so far (plan_progress) -------------
def test_progress_seconds_hand_checked() -> None:
    # job 0: 2 of 10 epochs done, 8 left at 100 s (800 s); job 1: 4 epochs of 300 s. One GPU,
    # 4 rounds of 120 s, no makespan term. At progress_seconds s, n rounds of job 0 count
    # min(2 + 120 n / s, 10) / 10 and leave max(0, 800 - min(120 n, 8 s)) seconds.
    jobs = [fa.PlanJob(workers=1, total_epochs=10, done_epochs=2, ftf=1.0,
                       regimes=[(100.0, 8)]),
            fa.PlanJob(workers=1, total_epochs=4, done_epochs=0, ftf=1.0, regimes=[(300.0, 4)])]
    plan = fa.plan_schedule(jobs, 1, rounds=4, round_duration=120.0, lam=0.0,
                            progress_seconds=[60.0, 300.0])
    n = np.asarray(plan.schedule).sum(axis=1)
    assert n.sum() == 4
    np.testing.assert_allclose(plan.utility, [min(2 + 120 * n[0] / 60, 10) / 10,
                                              min(120 * n[1] / 300, 4) / 4])
    np.testing.assert_allclose(plan.remaining, [max(0.0, 800 - min(120 * n[0], 480)),
                                                max(0.0, 1200 - min(120 * n[1], 1200))])
    # the same jobs along their regimes: job 0 advances at 100 s per epoch
    base = fa.plan_schedule(jobs, 1, rounds=4, round_duration=120.0, lam=0.0)
    nb = np.asarray(base.schedule).sum(axis=1)
    np.testing.assert_allclose(base.utility[0], (2 + 1.2 * nb[0]) / 10)
    # a faster seen epoch time makes job 0's rounds worth more: it gets at least as many
    assert n[0] >= nb[0]


@pytest.mark.parametrize(("bad", "index"), [([60.0, 0.0], (1,)), ([np.inf, 1.0], (0,)),
                                            ([-1.0, 1.0], (0,)), ([1.0], None)])
def test_progress_seconds_validated(bad, index) -> None:
    jobs = [fa.PlanJob(workers=1, total_epochs=2, done_epochs=0, ftf=1.0, regimes=[(1.0, 2)])] * 2
    with pytest.raises(fa.InputError) as info:
        fa.plan_schedule(jobs, 1, rounds=2, progress_seconds=bad)
    assert info.value.argument == "progress_seconds"
    assert info.value.index == index


def _record_planner(calls):
    def planner(jobs, num_gpus, **options):
        calls.append((jobs, options))
        return fa.plan_schedule(jobs, num_gpus, **options)
    return planner


def test_preset_plans_at_the_seen_mean_epoch_time() -> None:
    p = ShockwavePolicy(preset="upstream").params
    assert p["plan_progress"] == "seen_mean" and p["lateness_work"] == "epochs"
    q = ShockwavePolicy(preset="upstream", plan_progress="forecast").params
    assert q["plan_progress"] == "forecast"
    assert ShockwavePolicy().params["plan_progress"] == "forecast"
    for name in ("plan_progress", "lateness_work"):
        with pytest.raises(fa.InputError) as info:
            ShockwavePolicy(**{name: "nope"})
        assert info.value.argument == name
    # static jobs: every epoch takes the same time, so the seen mean is that epoch time
    w = poisson_workload(4, rate=60.0, seed=2, max_scale_factor=1, mode_probs=(1.0, 0.0, 0.0))
    calls: list = []
    pol = ShockwavePolicy(preset="upstream", window=4, planner=_record_planner(calls))
    simulate(w, fa.Cluster({"v100": 2}), pol, round_duration=600.0)
    assert calls and all("progress_seconds" in o for _, o in calls)
    for jobs, o in calls:
        per_epoch = np.array([j.regimes[0][0] for j in jobs])
        np.testing.assert_allclose(o["progress_seconds"], per_epoch, rtol=1e-9)
    calls.clear()
    simulate(w, fa.Cluster({"v100": 2}),
             ShockwavePolicy(preset="upstream", window=4, plan_progress="forecast",
                             planner=_record_planner(calls)), round_duration=600.0)
    assert calls and not any("progress_seconds" in o for _, o in calls)


def test_lateness_work_epochs_leaves_restarts_out_of_the_fair_finish_time() -> None:
    # the equal-share finish time counts the seconds of the epochs done (restart overhead
    # left out), so until the two runs part the epochs-based weights are never lower
    w = poisson_workload(6, rate=120.0, seed=3, max_scale_factor=1, mode_probs=(1.0, 0.0, 0.0))
    runs = []
    for work in ("attained", "epochs"):
        calls: list = []
        pol = ShockwavePolicy(preset="upstream", window=4, lateness_work=work,
                              planner=_record_planner(calls))
        simulate(w, fa.Cluster({"v100": 2}), pol, round_duration=600.0,
                 restart_overhead=120.0)
        runs.append([np.array([j.ftf for j in jobs]) for jobs, o in calls
                     if "remaining_limit" not in o])
    differ = [i for i, (a, b) in enumerate(zip(*runs, strict=False))
              if a.shape != b.shape or not np.array_equal(a, b)]
    assert differ, "the restart overhead never changed a weight"
    a, b = runs[0][differ[0]], runs[1][differ[0]]
    assert a.shape == b.shape and np.all(b >= a) and np.any(b > a)


# -- upstream's own forecast: a Dirichlet posterior over the schedule's batch sizes -----------
def test_dirichlet_remaining_hand_checked() -> None:
    # 4 epochs, sizes 32, 32, 64, 64 (60 s, 60 s, 30 s, 30 s), one done: prior 2 + 2 observed
    # (epochs 0 and 1) for 32, 2 for 64; rebased to 4 epochs: 8/3 and 4/3; the two observed
    # 32-epochs taken off: 2/3 and 4/3; seconds 2/3 * 60 + 4/3 * 30 = 80, times 3 / max(3, 3)
    assert dirichlet_remaining([32, 32, 64, 64], [60, 60, 30, 30], 1) == pytest.approx(80.0)
    # one batch size: one epoch less than the truth (the current epoch counts as observed)
    assert dirichlet_remaining([32] * 5, [10.0] * 5, 0) == pytest.approx(40.0)
    assert dirichlet_remaining([32] * 5, [10.0] * 5, 2) == pytest.approx(20.0)
    # sizes 8, 8, 16 (4 s, 4 s, 2 s), two done: prior 1.5 each, observed 2 and 1, rebased to
    # 3 epochs: 1.75 and 1.25; the 8-size loses one epoch only (upstream subtracts while >= 1):
    # 0.75 and 0.25; (0.75 * 4 + 0.25 * 2) * 1 / max(int(1 + 1), 1)
    assert dirichlet_remaining([8, 8, 16], [4.0, 4.0, 2.0], 2) == pytest.approx(1.75)
    assert dirichlet_remaining([32] * 3, [1.0] * 3, 3) == 1.0  # upstream's value when done
    with pytest.raises(fa.InputError):
        dirichlet_remaining([32, 64], [1.0], 0)


def test_policy_plans_with_upstreams_dirichlet_forecast() -> None:
    # static jobs: the forecast is one epoch short of the truth, (E - F - 1) epoch times
    w = poisson_workload(4, rate=60.0, seed=2, max_scale_factor=1, mode_probs=(1.0, 0.0, 0.0))
    per_epoch = w.regime_seconds[:, 0].min(axis=1)
    calls: list = []
    pol = ShockwavePolicy(preset="upstream", window=4, forecast="upstream_dirichlet",
                          planner=_record_planner(calls))
    r = simulate(w, fa.Cluster({"v100": 2}), pol, round_duration=120.0)
    assert np.isfinite(r.finish).all() and calls
    # a job in its last epoch is forecast 0 s (planned at the floor, not refused)
    assert any(j.total_epochs - j.done_epochs < 2 for jobs, _ in calls for j in jobs)
    for jobs, _ in calls:
        for j in jobs:
            left = j.total_epochs - j.done_epochs
            if left >= 2:
                ratio = j.remaining_seconds / (left - 1)
                assert np.isclose(per_epoch, ratio, rtol=1e-9).any()


# -- upstream's idle fill, chosen at the solve for the whole window ---------------------------
def test_fill_window_hand_checked() -> None:
    # 4 GPUs, jobs by remaining: 3 (3 GPUs, 99 s), 2 (2 GPUs, 90 s), 1 (2 GPUs, 50 s), 0.
    # Round 0 has job 0 (2 GPUs) planned: job 3 does not fit in the 2 idle GPUs, job 2 (longer
    # than job 1) takes them. Round 1 is empty: job 3 takes 3 GPUs, the last one fits nobody.
    out = fill_window([[1, 0], [0, 0], [0, 0], [0, 0]], [2, 2, 2, 3], [10.0, 50.0, 90.0, 99.0],
                      4)
    assert out.astype(int).tolist() == [[1, 0], [0, 0], [1, 0], [0, 1]]


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 6), st.integers(1, 5), st.integers(1, 6))
def test_fill_window_keeps_the_plan_and_leaves_no_gap_a_job_fits(seed, n, T, M) -> None:
    rng = np.random.default_rng(seed)
    w = rng.integers(1, M + 1, size=n)
    plan = np.zeros((n, T), dtype=bool)
    for t in range(T):  # a feasible plan
        for j in rng.permutation(n):
            if rng.random() < 0.4 and (plan[:, t] * w).sum() + w[j] <= M:
                plan[j, t] = True
    out = fill_window(plan, w, rng.random(n) * 100, M)
    assert np.all(out[plan])  # the plan's rounds stay
    used = (out * w[:, None]).sum(axis=0)
    assert np.all(used <= M)
    # greedy: a job left out of a round does not fit in what the round leaves idle
    for t in range(T):
        assert np.all(w[~out[:, t]] > M - used[t])


def test_policy_at_solve_runs_only_the_filled_window() -> None:
    w = poisson_workload(6, rate=120.0, seed=3, max_scale_factor=2, mode_probs=(0.0, 0.5, 0.5))
    pol = ShockwavePolicy(preset="upstream", window=4, idle_fill="at_solve")
    r = simulate(w, fa.Cluster({"v100": 4}), pol, round_duration=600.0)
    assert np.isfinite(r.finish).all() and pol.plans > 0
    assert pol.filled == 0  # nobody runs outside the window built at the solve
    with pytest.raises(fa.InputError) as info:
        ShockwavePolicy(idle_fill="later")
    assert info.value.argument == "idle_fill"


# -- (11) the re-plan interval counts rounds of the simulation --------------------------------
class _RoundsPlanned(ShockwavePolicy):
    """Records the round index of every re-plan (through the public planner seam)."""

    def __init__(self, **options) -> None:
        self.rounds_planned: list[int] = []
        self._now = -1

        def planner(jobs, num_gpus, **opts):
            self.rounds_planned.append(self._now)
            return fa.plan_schedule(jobs, num_gpus, **opts)
        super().__init__(planner=planner, **options)

    def allocate(self, state):
        self._now = state.cluster.round_index
        return super().allocate(state)


def _replan_rounds(clock: str | None) -> list[int]:
    from fairalloc.sim import Workload

    # two jobs of 12 rounds from t = 0 and one arriving in round 3 (t = 1,700 s), two GPUs:
    # no job finishes before round 12
    w = Workload.from_arrays([0.0, 0.0, 1700.0], [[1.0]] * 3, [7200.0] * 3)
    opts = {} if clock is None else {"replan_clock": clock}
    pol = _RoundsPlanned(preset="upstream", window=20, **opts)
    simulate(w, fa.Cluster({"gpu": 2}), pol, round_duration=600.0)
    return sorted({r for r in pol.rounds_planned if r < 12})


def test_replan_clock_simulation_replans_on_the_rounds_grid() -> None:
    # upstream (scheduler.py's _iround_reopt, reset only by its own re-solve): rounds 0, the
    # arrival's 3, then 8 -- not 3 + 8 = 11
    assert _replan_rounds(None) == [0, 3, 8]
    assert ShockwavePolicy(preset="upstream").params["replan_clock"] == "simulation"
    # counted from the last re-plan (the library's default): the arrival's re-plan restarts it
    assert _replan_rounds("plan") == [0, 3, 11]
    assert ShockwavePolicy().params["replan_clock"] == "plan"
    with pytest.raises(fa.InputError) as info:
        ShockwavePolicy(replan_clock="nope")
    assert info.value.argument == "replan_clock"


# -- (12) progress in whole epochs ------------------------------------------------------------
def test_whole_epochs_hand_checked() -> None:
    from types import SimpleNamespace

    from fairalloc.sim.policies.shockwave_upstream import whole_epochs

    # 3 epochs of 60 s, then 1.5 of 30 s: 4 whole epochs, 210 s; the half epoch counts for
    # neither; a job 1e-12 short of a whole epoch has done it (EPOCH_ROUNDOFF)
    v = SimpleNamespace(history_epochs=np.array([[3.0, 1.5], [2.0 - 1e-12, 0.0]]),
                        history_seconds=np.array([[60.0, 30.0], [50.0, 0.0]]))
    done, seconds = whole_epochs(v)
    assert done.tolist() == [4.0, 2.0] and seconds.tolist() == [210.0, 100.0]
    # upstream's planned epoch time for the first: mean(epoch_duration[:4 + 1]) with the
    # current epoch's 30 s: (210 + 30) / 5 = 48 s
    assert (seconds[0] + 30.0) / (done[0] + 1.0) == 48.0


class _Views(ShockwavePolicy):
    """Records the view of every round and the options of every plan (public seams)."""

    def __init__(self, **options) -> None:
        self.seen: list = []

        def planner(jobs, num_gpus, **opts):
            self.seen.append((self._view, opts))
            return fa.plan_schedule(jobs, num_gpus, **opts)
        super().__init__(planner=planner, **options)

    def allocate(self, state):
        self._view = state.jobs
        return super().allocate(state)


def test_seen_mean_counts_whole_epochs_only() -> None:
    # upstream's interpolate_epoch_duration: mean(epoch_duration[:epoch_progress + 1]) with
    # epoch_progress in whole epochs; a job part-way through an epoch plans at the mean of its
    # whole epochs and the current epoch's time
    w = poisson_workload(5, rate=120.0, seed=4, max_scale_factor=1, mode_probs=(0.0, 0.5, 0.5))
    pol = _Views(preset="upstream", window=4)
    simulate(w, fa.Cluster({"v100": 2}), pol, round_duration=300.0)
    partial = 0
    for v, opts in pol.seen:
        whole = np.floor(v.history_epochs + EPOCH_ROUNDOFF)
        done = whole.sum(axis=1)
        seconds = (whole * v.history_seconds).sum(axis=1)
        expect = (seconds + np.min(v.epoch_seconds, axis=1)) / (done + 1.0)
        np.testing.assert_allclose(opts["progress_seconds"], expect, rtol=1e-12)
        partial += int((v.history_epochs != whole).any())
    assert partial > 0, "no plan saw a job part-way through an epoch"


# -- (13) the equal-share finish time counts from the admitting round -------------------------
class _Plans(ShockwavePolicy):
    """Records the round index and the options of every plan (public planner seam)."""

    def __init__(self, **options) -> None:
        self.plans_seen: list = []
        self._now = -1

        def planner(jobs, num_gpus, **opts):
            self.plans_seen.append((self._now, jobs, opts))
            return fa.plan_schedule(jobs, num_gpus, **opts)
        super().__init__(planner=planner, **options)

    def allocate(self, state):
        self._now = state.cluster.round_index
        return super().allocate(state)


@pytest.mark.parametrize(("submit", "limit"), [("admitted", 3600.0), ("arrival", 3500.0)])
def test_lateness_submit_hand_checked(submit, limit) -> None:
    from fairalloc.sim import Workload

    # job 1 (6,000 s) arrives at 1,700 s and joins the round of 1,800 s on two GPUs (share 1):
    # its equal-share finish time is submit + 6,000 s; its hard limit with rhomax = 1 and a
    # window of 4 rounds of 600 s is target - now - 2,400 s: 7,800 - 1,800 - 2,400 = 3,600
    # from the admitting round (upstream's register_job_submit), 3,500 from the arrival
    w = Workload.from_arrays([0.0, 1700.0], [[1.0], [1.0]], [20000.0, 6000.0])
    pol = _Plans(preset="upstream", window=4, lateness_submit=submit)
    simulate(w, fa.Cluster({"gpu": 2}), pol, round_duration=600.0)
    first = [o["remaining_limit"] for r, jobs, o in pol.plans_seen
             if r == 3 and "remaining_limit" in o]
    assert first and first[0][1] == pytest.approx(limit, rel=1e-12)
    assert ShockwavePolicy(preset="upstream").params["lateness_submit"] == "admitted"
    assert ShockwavePolicy().params["lateness_submit"] == "arrival"


# -- (14) upstream's calibration of the profiled epoch times ----------------------------------
def test_calibration_factor_hand_checked() -> None:
    from fairalloc.sim.policies.shockwave_upstream import calibration_factor

    prof = [100.0, 50.0]
    # not run yet, or within 40 % of the profile: no factor
    assert math.isnan(calibration_factor([], [], prof, 120.0))
    assert math.isnan(calibration_factor([1], [100.0], prof, 120.0))  # 1.2 vs 1.4 epochs
    # run in round 9 only (round count 10), at 100 s an epoch: the measurement is taken to hold
    # for rounds 0-9 (arrival and waits included): 12 epochs over 1,200 s; the profile:
    # 2 + 1,050 / 50 = 23 epochs, 48 % more: factor 23 / 12
    assert calibration_factor([10], [100.0], prof, 120.0) == pytest.approx(23.0 / 12.0)
    # the rest past the whole epochs is read at the epoch time calibrated so far (25 s)
    assert calibration_factor([10], [100.0], prof, 120.0, previous=0.5) == pytest.approx(
        (2.0 + 1050.0 / 25.0) / 12.0)
    # 3 epochs of 100 s, measured at 40 s then 80 s an epoch in two rounds of 125 s:
    # 125/40 + 125/80 = 4.6875 epochs; the profile stops inside its third epoch after 250 s:
    # 2 + 50/100 = 2.5 epochs; factor 2.5 / 4.6875
    assert calibration_factor([1, 2], [40.0, 80.0], [100.0] * 3, 125.0) == pytest.approx(
        2.5 / 4.6875)


def test_epoch_calibration_acts_on_upstreams_forecast_only() -> None:
    w = poisson_workload(4, rate=60.0, seed=2, max_scale_factor=1, mode_probs=(0.0, 0.5, 0.5))

    def plans(**options):
        pol = _Plans(preset="upstream", window=4, **options)
        simulate(w, fa.Cluster({"v100": 1}), pol, round_duration=600.0)
        return [(r, [j.regimes for j in jobs]) for r, jobs, _ in pol.plans_seen]

    # the observed-only forecast reads no profile: the option changes nothing
    assert plans(epoch_calibration="upstream") == plans(epoch_calibration="none")
    # upstream's forecast: a job that waited is calibrated, and its plans change
    on = plans(forecast="upstream_dirichlet")
    assert on != plans(forecast="upstream_dirichlet", epoch_calibration="none")
    assert ShockwavePolicy(preset="upstream").params["epoch_calibration"] == "upstream"
    with pytest.raises(fa.InputError) as info:
        ShockwavePolicy(epoch_calibration="nope")
    assert info.value.argument == "epoch_calibration"
