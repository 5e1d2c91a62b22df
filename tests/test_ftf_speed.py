"""Finish-time fairness speed paths (#15, random family): the floor stage certified from its
restricted master's own duals (no elastic dual LP), and the Dinkelbach stages' Newton search
seeded with the previous stage's end point. Each fast path against its slow twin: same
certified objectives, and the slow work really skipped."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
import fairalloc.throughput.duration as duration
import fairalloc.throughput.structured.common as common
import fairalloc.throughput.structured.floor as floor
from fairalloc.throughput import Tuning


def _random_family(n: int, seed: int) -> tuple[fa.Jobs, fa.Cluster]:
    """The ``random`` family of benchmarks/families.py (log-normal speeds, every job
    different, Gavel's gang sizes, 128 / 192 / 256 workers)."""
    rng = np.random.default_rng(seed)
    sf = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05])
    steps = rng.uniform(1e3, 1e5, n)
    elapsed = rng.uniform(0.0, 3600.0, n)
    T = (10.0 * rng.lognormal(0.0, 0.8, n)[:, None] * np.array([1.0, 0.6, 0.3])
         * rng.lognormal(0.0, 0.3, (n, 3)))
    jobs = fa.Jobs(T, scale_factor=sf, steps_remaining=steps, elapsed=elapsed)
    return jobs, fa.Cluster({"v100": 128, "p100": 192, "k80": 256})


def _freed_instance() -> tuple[fa.Jobs, fa.Cluster]:
    """A random instance whose floor stage needs constants freed (first master's duals
    price some out), found among a few seeds."""
    for seed in range(1, 12):
        jobs, cl = _random_family(512, seed)
        a = fa.finish_time_fairness(jobs, cl)
        if any(p.startswith(floor.FLOOR_FREED + ":") for p in a.stats.path):
            return jobs, cl
    pytest.skip("no instance with freed floor jobs among the seeds")


def test_floor_stage_certified_by_master_duals_without_dual_lp():
    jobs, cl = _freed_instance()
    fast = fa.finish_time_fairness(jobs, cl)
    # the masters' own duals named the jobs and certified: no elastic dual LP
    assert fast.stats.count(floor.FLOOR_DUAL_LP) == 0
    assert "structured-floor" in fast.stats.path
    assert not any(step.startswith("exact-lp") for step in fast.stats.path)
    slow = fa.finish_time_fairness(jobs, cl, tuning=Tuning(floor_priced_rounds=0))
    assert slow.stats.count(floor.FLOOR_DUAL_LP) >= 1  # the elastic dual LP's route
    exact = fa.finish_time_fairness(jobs, cl, method="highs")
    for a in (fast, slow):
        assert all(c.ok for c in a.stage_certificates)
        assert a.objective == pytest.approx(exact.objective, rel=2 * a.certificate.gap_tol)
        assert a.stage_certificates[1].primal_value == pytest.approx(
            exact.stage_certificates[1].primal_value, rel=2 * a.certificate.gap_tol)
    # allocations feasible: capacity and time
    x = np.asarray(fast.allocation)
    assert (x.sum(axis=1) <= 1.0 + 1e-9).all()
    used = (x * np.asarray(jobs.scale_factor)[:, None]).sum(axis=0)
    assert (used <= np.array([128, 192, 256]) * (1.0 + 1e-9)).all()


def test_master_duals_name_a_constant_priced_out():
    """`_master_duals` on a hand-made two-job instance: job 0 sits at its floor on type 0
    at prices that make type 1 cheaper per unit of level, so its closed-form duals leave a
    positive reduced cost on type 1: it is named; job 1 (all its time on type 1, worth more
    than its price) is not."""
    class _Inst:  # the fields _master_duals reads, for two single-job columns per job
        mem_job = np.array([0, 0, 1, 1])
        col_type = np.array([0, 1, 0, 1])
        col_workers = np.ones(4)
        cap_weight = np.ones(2)
        E = 4
    A = np.array([[2.0, 2.0], [1.0, 4.0]])
    col = np.array([[0, 1], [2, 3]])
    a = A.ravel()
    f = np.array([1.0, 2.0])
    omega = np.array([0.1, 1.0])
    xcol = np.array([0.5, 0.0, 0.0, 1.0])  # job 0: floor on type 0; job 1: all on type 1
    p = np.array([1.0, 0.5])
    none = np.zeros(0, dtype=int)  # no job with its own variables, none aggregated
    mduals = (p, none, np.zeros(0), np.zeros(0), none, np.zeros(0))
    duals, viol = floor._master_duals(_Inst(), A, col, a, f, omega, xcol,  # type: ignore
                                      np.zeros(2, dtype=bool), mduals)
    assert duals is not None
    # job 0: lambda = p_0 / a_0 - omega = 0.5 - 0.1 = 0.4; type 1's reduced cost
    # (omega + lambda) a_1 - p_1 = 0.5 * 2 - 0.5 = 0.5 > 0: priced out
    assert duals["kept"][0] == pytest.approx(0.4)
    # job 1: mu = omega a_1 - p_1 = 4 - 0.5 = 3.5; type 0: 1 * 1 - 3.5 - 1 < 0
    assert duals["time"][1] == pytest.approx(-3.5)
    assert viol.tolist() == [True, False]


def test_dinkelbach_seed_skips_sampled_newton_and_keeps_the_answer():
    jobs, cl = _random_family(4096, 3)
    seeded = fa.finish_time_fairness(jobs, cl, work_conserving=False)
    cold = fa.finish_time_fairness(jobs, cl, work_conserving=False,
                                   tuning=Tuning(dinkelbach_seed=False))
    stages = seeded.stats.count(duration.DINKELBACH)
    # (two stages since the sequence starts next to the lower bound R_lb: three before)
    assert stages >= 2 and seeded.stats.fallbacks == () and cold.stats.fallbacks == ()
    # cold: a sampled phase in every stage; seeded: only in the first (nothing to seed it)
    assert cold.stats.count(common.NEWTON_SAMPLE_STEP) == cold.stats.count(duration.DINKELBACH)
    assert seeded.stats.count(common.NEWTON_SAMPLE_STEP) == 1
    assert seeded.certificate.ok and cold.certificate.ok
    assert seeded.objective == pytest.approx(cold.objective, rel=2 * seeded.certificate.gap_tol)


def test_newton_seed_forgets_an_unbalanced_end_point():
    seed = common.NewtonSeed()
    seed.remember((0.5, np.log(np.array([1.0, 2.0, 4.0])), None, 0.0), 1)
    assert seed.usable(3, 1) and seed.prices is not None
    assert seed.prices.tolist() == pytest.approx([0.5, 1.0, 2.0])  # ratios to the reference
    assert not seed.usable(4, 1)  # another number of types
    seed.remember((0.5, np.zeros(3), None, 10 * common.NEWTON_MAX_ERROR), 0)
    assert seed.prices is None and not seed.usable(3, 0)
    seed.remember(None, 0)
    assert seed.jacobian is None and not seed.usable(3, 0)
