"""Shockwave's named options (issue #17): weight clipping, near-completion boost, welfare
normalisation, the scale-free makespan term, re-plan interval, post-solve reordering, idle
fill. ``formulations/shockwave_options.md`` says which are in the paper and which only in
upstream's code."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.sim import Workload, poisson_workload, simulate
from fairalloc.sim.policies import ShockwavePolicy
from fairalloc.sim.policies.shockwave import MAX_LOG_FTF, plan_ftf

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


# -- weights: clipping and the near-completion boost ------------------------------------------
def test_plan_ftf_hand_checked() -> None:
    rho = [0.5, 1.0, 1.5, 1.5, 0.5]
    rem = [1e4, 60.0, 1e4, 100.0, 100.0]
    # clipped: on-time jobs weigh 1; the late job near completion weighs 1.5**100
    # (returned as 1.5**(100/5) = 1.5**20); an on-time job near completion gets no boost
    out = plan_ftf(rho, rem, 120.0, k=5.0)
    assert out.tolist() == pytest.approx([1.0, 1.0, 1.5, 1.5 ** 20, 1.0], rel=1e-12)
    assert (out ** 5)[3] == pytest.approx(1.5 ** 100, rel=1e-10)
    # the paper's weights: rho itself, no boost
    assert plan_ftf(rho, rem, 120.0, k=5.0, weights="power", boost=0).tolist() == rho
    # power weights keep the boost for late jobs
    assert plan_ftf(rho, rem, 120.0, k=5.0, weights="power")[3] == pytest.approx(1.5 ** 20)
    # remaining == round_duration is not "within one round" (upstream's strict <)
    assert plan_ftf([2.0], [120.0], 120.0, k=5.0).tolist() == [2.0]
    # k = 0: the weights are all 1 whatever the values, and no boost can be expressed
    assert plan_ftf([2.0], [1.0], 120.0, k=0.0).tolist() == [2.0]
    # the boosted value is capped so that it stays a finite float
    big = plan_ftf([1e300], [1.0], 120.0, k=1e-3)
    assert math.isfinite(big[0]) and math.log(big[0]) == pytest.approx(MAX_LOG_FTF)


@given(rho=st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=8),
       rem=st.lists(st.floats(0.0, 1e5, allow_subnormal=False), min_size=8, max_size=8),
       k=st.floats(0.5, 20.0))
@SETTINGS
def test_clipped_weights_are_never_below_one_and_keep_the_late_order(rho, rem, k) -> None:
    r = np.array(rho)
    out = plan_ftf(r, rem[: r.size], 120.0, k=k, boost=0)
    assert (out >= 1.0).all()
    assert np.array_equal(out, np.maximum(r, 1.0))
    boosted = plan_ftf(r, rem[: r.size], 120.0, k=k)
    assert (boosted >= out).all()  # the boost only ever raises a weight


def test_clipped_weights_stop_an_on_time_job_from_collapsing() -> None:
    # two equal jobs, one GPU, two rounds; job 0 on time (rho 0.5), job 1 fair (rho 1).
    # paper weights at k = 12: 0.5**12 = 2.4e-4, so job 1 takes both rounds;
    # clipped: equal weights, one round each
    jobs = [fa.PlanJob(workers=1, total_epochs=10, done_epochs=5, ftf=float(f),
                       regimes=[(120.0, 5)])
            for f in plan_ftf([0.5, 1.0], [600.0, 600.0], 120.0, k=12.0, weights="power")]
    assert fa.plan_schedule(jobs, 1, rounds=2, k=12.0, lam=0.0).rounds_given.tolist() == [0, 2]
    jobs = [fa.PlanJob(workers=1, total_epochs=10, done_epochs=5, ftf=float(f),
                       regimes=[(120.0, 5)])
            for f in plan_ftf([0.5, 1.0], [600.0, 600.0], 120.0, k=12.0)]
    assert fa.plan_schedule(jobs, 1, rounds=2, k=12.0, lam=0.0).rounds_given.tolist() == [1, 1]


# -- welfare normalisation and the scale-free makespan term -----------------------------------
@st.composite
def plans(draw):
    n = draw(st.integers(2, 6))
    M = draw(st.integers(1, 4))
    jobs = []
    for _ in range(n):
        total = draw(st.integers(2, 30))
        done = draw(st.integers(0, total - 1))
        jobs.append(fa.PlanJob(workers=draw(st.integers(1, M)), total_epochs=total,
                               done_epochs=done, ftf=draw(st.floats(0.5, 2.0)),
                               regimes=[(draw(st.floats(30.0, 300.0)), total - done)]))
    return jobs, M, draw(st.integers(1, 6)), draw(st.floats(0.01, 10.0))


@given(plans())
@SETTINGS
def test_welfare_norm_rounds_is_the_paper_plan_with_lam_times_t_over_m(case) -> None:
    jobs, M, T, lam = case
    rounds = fa.plan_schedule(jobs, M, rounds=T, lam=lam, welfare_norm="rounds",
                              method="milp")
    gpus = fa.plan_schedule(jobs, M, rounds=T, lam=lam * T / M, method="milp")
    # the objectives are proportional (factor M / T), so the optima are too: each plan is
    # optimal within its own certificate's gap (the MILP's gap tolerance), so the two agree
    # within the sum of the gaps (in the plan with lam T / M's units)
    slack = rounds.certificate.gap * T / M + gpus.certificate.gap
    assert abs(rounds.objective * T / M - gpus.objective) <= slack * (1 + 1e-9) + 1e-12
    if rounds.rounds_given.tolist() == gpus.rounds_given.tolist():  # one plan: one welfare
        assert rounds.welfare * T / M == pytest.approx(gpus.welfare, rel=1e-9, abs=1e-15)


@given(plans())
@SETTINGS
def test_scale_free_makespan_is_the_paper_term_divided_by_m(case) -> None:
    jobs, M, T, lam = case
    free = fa.plan_schedule(jobs, M, rounds=T, lam=lam, makespan="scale_free", method="milp")
    paper = fa.plan_schedule(jobs, M, rounds=T, lam=lam / M, method="milp")
    # one program, two spellings: equal within the two certificates' gaps
    slack = free.certificate.gap + paper.certificate.gap
    assert abs(free.objective - paper.objective) <= slack * (1 + 1e-9) + 1e-12
    assert free.z0 == pytest.approx(paper.z0)
    assert free.certificate.ok


def test_scale_free_hand_checked() -> None:
    # one job, 2 GPUs, 1 round of 100 s: R = 300 - 100 = 200, H = max(200/2, 200) = 200,
    # Z0 = 300; the term is -(lam / (M Z0)) H = -(1 / 600) * 200
    job = fa.PlanJob(workers=1, total_epochs=3, done_epochs=0, ftf=1.0, regimes=[(100.0, 3)])
    plan = fa.plan_schedule([job], 2, rounds=1, round_duration=100.0, lam=1.0,
                            makespan="scale_free")
    welfare = math.log(1.0 / 3.0) / 2.0  # rho^k log UTIL / (N M)
    assert plan.objective == pytest.approx(welfare - 200.0 / 600.0, rel=1e-12)
    rounds = fa.plan_schedule([job], 2, rounds=1, round_duration=100.0, lam=0.0,
                              welfare_norm="rounds")
    assert rounds.welfare == pytest.approx(math.log(1.0 / 3.0), rel=1e-12)  # / (N T)


def test_makespan_regularizer_scale_free() -> None:
    import cvxpy as cp

    work = cp.Constant([50.0, 50.0])
    free = fa.makespan_regularizer(work, [100.0, 300.0], 2, lam=1.0, kind="scale_free")
    paper = fa.makespan_regularizer(work, [100.0, 300.0], 2, lam=0.5)
    # H = max((50 + 250)/2, 250) = 250; -(1/(2*400)) * 250
    assert float(free.value) == pytest.approx(-250.0 / 800.0, rel=1e-12)
    assert float(free.value) == pytest.approx(float(paper.value), rel=1e-12)


def test_bad_option_values() -> None:
    job = fa.PlanJob(workers=1, total_epochs=3, done_epochs=0, ftf=1.0, regimes=[(100.0, 3)])
    with pytest.raises(fa.InputError, match="welfare_norm"):
        fa.plan_schedule([job], 1, welfare_norm="jobs")
    with pytest.raises(fa.InputError, match="makespan"):
        fa.plan_schedule([job], 1, makespan="free")
    with pytest.raises(fa.InputError, match="weights"):
        ShockwavePolicy(weights="log")
    with pytest.raises(fa.InputError, match="boost"):
        ShockwavePolicy(boost=-1.0)
    with pytest.raises(fa.InputError, match="replan_interval"):
        ShockwavePolicy(replan_interval=0)
    with pytest.raises(fa.InputError, match="idle_fill"):
        ShockwavePolicy(idle_fill="random")
    with pytest.raises(fa.InputError, match="reorder"):
        ShockwavePolicy(reorder="yes")
    with pytest.raises(fa.InputError, match="welfare_norm"):
        ShockwavePolicy(welfare_norm="jobs")
    with pytest.raises(fa.InputError, match="near_completion"):
        ShockwavePolicy(near_completion="always")
    with pytest.raises(fa.InputError, match="near_rounds"):
        ShockwavePolicy(near_rounds=0)


# -- policy-level options -----------------------------------------------------------------------
def _workload() -> Workload:
    return poisson_workload(6, rate=30.0, seed=4, mode_probs=(0.0, 0.5, 0.5),
                            max_scale_factor=2)


def test_replan_interval_one_replans_every_round() -> None:
    w = _workload()
    every = ShockwavePolicy(window=6, replan_interval=1)
    r = simulate(w, fa.Cluster({"v100": 4}), every, round_duration=600.0)
    assert np.isfinite(r.finish).all()
    assert every.plans == r.round_time.size  # one plan before every round
    assert every.params["replan_interval"] == 1
    default = ShockwavePolicy(window=6)
    simulate(w, fa.Cluster({"v100": 4}), default, round_duration=600.0)
    assert default.params["replan_interval"] == 6 and default.plans <= every.plans


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 1000))
def test_idle_fill(seed: int) -> None:
    w = poisson_workload(6, rate=40.0, seed=seed, max_scale_factor=4)
    cl = fa.Cluster({"v100": 4})
    none = ShockwavePolicy(window=4, idle_fill="none")
    r = simulate(w, cl, none, round_duration=900.0)
    assert np.isfinite(r.finish).all()
    assert none.filled == 0  # only jobs with planned rounds left ran
    for fill in ("longest", "shortest"):  # the fills leave no fitting job waiting
        pol = ShockwavePolicy(window=4, idle_fill=fill)
        r = simulate(w, cl, pol, round_duration=900.0)
        assert pol.filled >= 0
        for rnd, t in enumerate(r.round_time):
            ran = r.sched_job[r.sched_round == rnd]
            free = 4 - r.sched_gpus[r.sched_round == rnd].sum()
            active = np.flatnonzero((w.arrival <= t) & (r.finish > t))
            waiting = np.setdiff1d(active, ran)
            assert not (w.scale_factor[waiting] <= free).any(), (fill, rnd)


class _NearLog(ShockwavePolicy):
    """Records, each round, the near-completion flags, the gangs and who ran."""

    def allocate(self, state):  # type: ignore[no-untyped-def]
        sched = super().allocate(state)
        v = state.jobs
        near = np.array([self._near.get(i, False) for i in v.ids], dtype=bool)
        ran = np.asarray(sched.gpus).sum(axis=1) > 0
        self.log.append((near, ran, v.scale_factor.copy(), state.cluster.num_gpus))
        return sched


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 1000), execution=st.sampled_from(["counts", "columns"]))
def test_near_completion_first_runs_late_jobs_about_to_finish(seed, execution) -> None:
    w = poisson_workload(8, rate=60.0, seed=seed, max_scale_factor=2)
    pol = _NearLog(window=4, execution=execution)
    pol.log = []
    simulate(w, fa.Cluster({"v100": 2}), pol, round_duration=900.0)
    flagged = 0
    for near, ran, gang, M in pol.log:
        flagged += int(near.sum())
        if gang[near].sum() <= M:  # they fit together: every one of them runs
            assert ran[near].all()
    off = _NearLog(window=4, execution=execution, near_completion="off")
    off.log = []
    simulate(w, fa.Cluster({"v100": 2}), off, round_duration=900.0)
    assert not any(near.any() for near, _, _, _ in off.log)


def test_near_completion_flags_jobs_on_a_busy_cluster() -> None:
    # 8 jobs on 2 GPUs: some fall behind (rho > 1) and get flagged near their end; a wider
    # horizon (near_rounds) flags at least as many job-rounds at the first re-plan
    w = poisson_workload(8, rate=60.0, seed=2, max_scale_factor=2)
    one = _NearLog(window=4, near_rounds=1)
    one.log = []
    simulate(w, fa.Cluster({"v100": 2}), one, round_duration=900.0)
    assert sum(int(near.sum()) for near, _, _, _ in one.log) > 0


def test_reorder_and_defaults_recorded() -> None:
    w = _workload()
    pol = ShockwavePolicy(window=6, reorder=True)
    r = simulate(w, fa.Cluster({"v100": 4}), pol, round_duration=600.0)
    assert np.isfinite(r.finish).all()
    p = ShockwavePolicy().params
    assert p["weights"] == "clipped" and p["boost"] == 100.0 and p["reorder"] is False
    assert p["near_completion"] == "first" and p["idle_fill"] == "longest"
    assert p["near_rounds"] == 3 and p["lam"] == 4.0 and p["k"] == 3.0
    assert p["makespan"] == "longest" and p["hard_ftf"] is True and p["rhomax"] == 1.6
    assert p["hard_ftf_drop"] == "unreachable"
    # the fairness side reads the empirical forecast, the plan the restatement rule
    assert p["forecast"] == "restatement" and p["ftf_forecast"] == "empirical"
    assert ShockwavePolicy(ftf_forecast=None).params["ftf_forecast"] == "restatement"


def test_a_failed_milp_check_falls_back_to_the_fast_path() -> None:
    calls: list[str] = []

    def flaky(*args, method="auto", **kw):  # type: ignore[no-untyped-def]
        calls.append(method)
        if method != "fast":
            raise fa.SolverError("the MILP's objective differs", backend="highs")
        return fa.plan_schedule(*args, method=method, **kw)

    pol = ShockwavePolicy(window=4, planner=flaky)
    r = simulate(_workload(), fa.Cluster({"v100": 4}), pol, round_duration=600.0)
    assert np.isfinite(r.finish).all()
    assert pol.solver_fallbacks == pol.plans > 0 and "fast" in calls
    assert calls.count("fast") == pol.plans  # each re-plan: the MILP refused, then fast
    with pytest.raises(fa.InputError, match="planner"):
        ShockwavePolicy(planner="plan_schedule")


def test_empirical_forecast_pools_what_jobs_have_shown() -> None:
    """forecast="empirical" records every active job's observed regimes in its pool and plans
    with them: every job finishes, the pool holds every job that ran, and a job's forecast uses
    the pool's ratios (a family observed twice gets a ratio for a configuration it has not run)."""
    w = _workload()
    pol = ShockwavePolicy(window=6, forecast="empirical")
    r = simulate(w, fa.Cluster({"v100": 4}), pol, round_duration=600.0)
    assert np.isfinite(r.finish).all()
    seen = {job for fam in pol._pool._jobs.values() for job in fam}
    assert len(seen) == w.n == 6
    with pytest.raises(fa.InputError, match="forecast"):
        ShockwavePolicy(forecast="crystal-ball")
