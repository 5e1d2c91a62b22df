"""The count MILP (`plan_schedule`'s fast-path core and the first solve of
``remaining_limit=``): one integer count per free job, binary steps only where a job's values
bend up, and its plans agree with the full MILP's within their certificates (issue #31)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


class _Recording(HighsBackend):
    """HiGHS, recording the integer columns of every MILP it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.integer_columns: list[int] = []

    def _solve_lp(self, lp, **kw):  # type: ignore[no-untyped-def]
        if lp.is_mip:
            self.integer_columns.append(int(np.count_nonzero(lp.integrality)))
        return super()._solve_lp(lp, **kw)


def test_the_count_milp_branches_on_one_count_per_job() -> None:
    # 12 single-regime jobs (log UTIL concave in the count), 20 rounds: up to 20 unary steps
    # each; the count MILP needs 12 integer counts, not one binary per step (240)
    rng = np.random.default_rng(7)
    done = rng.integers(0, 100, size=12)
    jobs = [fa.PlanJob(workers=int(rng.integers(1, 3)), total_epochs=400,
                       done_epochs=int(d), ftf=float(rng.uniform(0.5, 2.0)),
                       regimes=[(float(rng.uniform(30.0, 90.0)), 400 - int(d))]) for d in done]
    backend = _Recording()
    plan = fa.plan_schedule(jobs, 4, rounds=20, lam=4.0, makespan="longest",
                            remaining_limit=np.full(12, math.inf), backend=backend)
    assert plan.certificate.ok
    assert plan.stats.path[0] == "hard-ftf-count-milp"
    assert backend.integer_columns[0] <= len(jobs)


@st.composite
def _bent_plans(draw):  # type: ignore[no-untyped-def]
    """Small plans whose jobs may change speed mid-window (values that bend up)."""
    n = draw(st.integers(2, 6))
    M = draw(st.integers(1, 4))
    jobs = []
    for _ in range(n):
        first, second = draw(st.integers(1, 8)), draw(st.integers(1, 30))
        jobs.append(fa.PlanJob(workers=draw(st.integers(1, M)), total_epochs=first + second + 2,
                               done_epochs=2,
                               ftf=draw(st.floats(0.5, 2.0)),
                               regimes=[(draw(st.floats(30.0, 300.0)), first),
                                        (draw(st.floats(5.0, 300.0)), second)]))
    return jobs, M, draw(st.integers(1, 6)), draw(st.floats(0.01, 10.0))


@given(_bent_plans())
@SETTINGS
def test_the_count_milp_plan_agrees_with_the_full_milp(case) -> None:  # type: ignore[no-untyped-def]
    jobs, M, T, lam = case
    limits = np.full(len(jobs), math.inf)
    counted = fa.plan_schedule(jobs, M, rounds=T, lam=lam, makespan="longest",
                               remaining_limit=limits)
    full = fa.plan_schedule(jobs, M, rounds=T, lam=lam, makespan="longest", method="milp",
                            gap_tol=1e-6)
    assert counted.certificate.ok and full.certificate.ok
    # each plan's objective is within the other's certified bound (both are upper bounds
    # on the same optimum), up to the certificates' own scales
    tol = 1e-9 * max(counted.certificate.scale, full.certificate.scale)
    assert counted.objective <= full.bound + tol
    assert full.objective <= counted.bound + tol


@given(_bent_plans(), st.integers(1, 3))
@SETTINGS
def test_single_gpu_jobs_are_certified_by_the_count_milp_alone(case, M) -> None:  # type: ignore[no-untyped-def]
    # single-GPU jobs: every count vector within the capacity packs into rounds, so the exact
    # count MILP's counts are the plan and its bound certifies them (no full MILP runs); a
    # count MILP that over-valued a job whose values bend up would fail this
    jobs, _, T, lam = case
    jobs = [fa.PlanJob(workers=1, total_epochs=j.total_epochs, done_epochs=j.done_epochs,
                       ftf=j.ftf, regimes=j.regimes) for j in jobs]
    plan = fa.plan_schedule(jobs, M, rounds=T, lam=lam, makespan="longest",
                            remaining_limit=np.full(len(jobs), math.inf))
    assert plan.certificate.ok
    assert plan.stats.path == ("hard-ftf-count-milp",)


def test_a_job_whose_values_bend_up_keeps_binary_ordered_steps() -> None:
    # job 0 runs 2 slow epochs (60 s) then fast ones (5 s): its second round is worth more than
    # its first; with continuous steps its count would take the second round's value alone,
    # the count MILP's bound would be too high and the plan would need the full MILP
    slow_fast = [fa.PlanJob(workers=1, total_epochs=11, done_epochs=2, ftf=0.5,
                            regimes=[(60.0, 2), (5.0, 7)])]
    short = [fa.PlanJob(workers=1, total_epochs=4, done_epochs=2, ftf=f,
                        regimes=[(30.0, 1), (5.0, 1)]) for f in (1.0, 0.5, 1.0, 1.0)]
    jobs = slow_fast + short
    plan = fa.plan_schedule(jobs, 1, rounds=2, lam=1.0, makespan="longest",
                            remaining_limit=np.full(len(jobs), math.inf))
    full = fa.plan_schedule(jobs, 1, rounds=2, lam=1.0, makespan="longest", method="milp",
                            gap_tol=1e-6)
    assert plan.certificate.ok
    assert plan.stats.path == ("hard-ftf-count-milp",)
    assert plan.objective >= full.objective - plan.certificate.gap_tol * plan.certificate.scale


def test_the_profiling_script_replays_dumped_re_plans(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pickle

    from tests.scripts import load_script

    script = load_script("benchmarks/profile_shockwave_plans.py", "profile_shockwave_plans")
    jobs = [fa.PlanJob(workers=1, total_epochs=10, done_epochs=2, ftf=1.5,
                       regimes=[(60.0, 8)]),
            fa.PlanJob(workers=2, total_epochs=6, done_epochs=1, ftf=1.0, regimes=[(30.0, 5)])]
    dumped = tmp_path / "re-plans.pkl"
    dumped.write_bytes(pickle.dumps([(jobs, 2, {"rounds": 4, "remaining_limit": [math.inf] * 2,
                                                "makespan": "longest", "lam": 4.0})]))
    assert script.main(["--replay", str(dumped)]) == 0
    out = capsys.readouterr().out
    assert "    2 jobs" in out and "optimal" in out and "hard-ftf-count-milp" in out
    assert script.main(["--data", str(tmp_path / "none")]) == 0
    assert "nothing to profile" in capsys.readouterr().out
