"""The throughput policies' fallbacks as plans run by the one driver (issue #27 build item 1):
the LP path's work-conserving stage through the same plan as composed models
(`composed_wc_plan`), the symmetry reduction and finish-time fairness's Dinkelbach stages."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend, SolveStatus
from fairalloc.plan import describe
from fairalloc.throughput import composed

JOBS = fa.Jobs(np.array([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]]))
CLUSTER = fa.Cluster({"v100": 1, "k80": 1})


class _FailAfterFirst(HighsBackend):
    """HiGHS whose solves after the first return no point (a fault injected at the public
    backend boundary: only the first stage is answered)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def _solve_lp(self, lp, **kw):
        sol = super()._solve_lp(lp, **kw)
        self.calls += 1
        if self.calls > 1:
            return dataclasses.replace(sol, status=SolveStatus.ERROR, x=None, row_duals=None,
                                       raw_status="injected failure")
        return sol


def test_one_work_conserving_plan_for_both_paths():
    from fairalloc.throughput import wc_stage

    assert composed.composed_wc_plan is wc_stage.composed_wc_plan
    assert describe(wc_stage.composed_wc_plan(print, print, stage_step=False)) == (
        "work-conserving", "first-stage allocation!")


def test_lp_work_conserving_degradation_is_a_step_of_the_plan():
    # the LP path's degradation is run by the driver: a step of the path (as on the cvxpy
    # path) and a hand-over, announced at the caller's line
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = fa.MaxMinFairness(JOBS, CLUSTER).solve(backend=_FailAfterFirst())
    assert a.certificate.ok and not a.stage_certificates[1].ok
    assert a.stats.path[0] == "exact-lp" and a.stats.path[-1] == "first-stage allocation"
    assert "work-conserving" not in a.stats.path  # its stage plan's steps are the path's
    assert a.stats.fallbacks[-1] == ("work-conserving->first-stage allocation: its "
                                     "certificate failed")
    ours = [w for w in caught if issubclass(w.category, fa.FairallocWarning)]
    assert len(ours) == 1 and ours[0].filename == __file__
    # the function form too (it named a line of fairalloc's max_min.py)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fa.max_min_fairness(JOBS, CLUSTER, backend=_FailAfterFirst())
    assert [w.filename for w in caught if issubclass(w.category, fa.FairallocWarning)] == [
        __file__]
    # the first stage's certified allocation, as without the work-conserving stage
    first = fa.MaxMinFairness(JOBS, CLUSTER).solve(work_conserving=False)
    assert a.objective <= first.certificate.dual_bound * (1 + fa.tolerances.GAP_TOL)
    assert first.objective <= a.certificate.dual_bound * (1 + fa.tolerances.GAP_TOL)


def test_a_certified_lp_work_conserving_stage_adds_no_step():
    a = fa.MaxMinFairness(JOBS, CLUSTER).solve(method="highs", symmetry=False)
    b = fa.MaxMinFairness(JOBS, CLUSTER).solve(method="highs", symmetry=False,
                                               work_conserving=False)
    # the work-conserving stage's own stage plan's steps follow the first stage's
    assert a.stats.path[: len(b.stats.path)] == b.stats.path == ("exact-lp",)
    assert "work-conserving" not in a.stats.path and a.stats.fallbacks == ()
    assert len(a.stage_certificates) == 2 and all(c.ok for c in a.stage_certificates)


def test_a_strategy_that_is_not_a_step_still_hands_over():
    from fairalloc.plan import Decline, Strategy, run_plan
    from fairalloc.results import Certificate
    from fairalloc.solvelog import SolveLog

    ok = Certificate("lp", 1.0, 1.0, 0.0, 0.0)

    def inner(ctx):
        raise Decline("no")

    log = SolveLog()
    plan = (Strategy("outer", inner, lambda c, r: ok, step=False),
            Strategy("exact", lambda c: 1, lambda c, r: ok, exact=True))
    assert run_plan(plan, None, log, what="demo").strategy == "exact"
    assert log.path == ("exact",) and log.fallbacks == ("outer->exact: no",)


def test_the_symmetry_plan():
    from fairalloc.throughput.symmetry import symmetry_plan

    assert describe(symmetry_plan(print, print, reduces=True)) == ("symmetry", "exact!")
    assert [s.applies(None) for s in symmetry_plan(print, print, reduces=False)] == [
        False, True]


class _FailsAll(HighsBackend):
    def _solve_lp(self, lp, **kw):
        sol = super()._solve_lp(lp, **kw)
        return dataclasses.replace(sol, status=SolveStatus.ERROR, x=None, row_duals=None,
                                   raw_status="injected failure")


def test_a_failed_reduction_then_a_failed_job_by_job_solve_raise_its_own_error():
    # the symmetry plan hands over to the job-by-job solve, whose own typed error (with its
    # stage plan's verdicts) is the caller's, exactly as without the reduction
    jobs = fa.Jobs([[2.0, 1.0]] * 3 + [[1.0, 1.0]])
    errors = []
    for symmetry in (True, False):
        with pytest.raises(fa.SolverError) as info:
            fa.MaxMinFairness(jobs, CLUSTER).solve(symmetry=symmetry, backend=_FailsAll())
        errors.append(info.value)
    assert type(errors[0]) is type(errors[1]) and str(errors[0]) == str(errors[1])
    assert errors[0].verdicts == errors[1].verdicts and errors[0].verdicts


def test_the_dinkelbach_stage_plans():
    from fairalloc.throughput.duration import certified_stage_plan, provisional_stage_plan

    assert describe(certified_stage_plan(print, print)) == (
        "structured-level-provisional", "structured-level!")
    assert describe(provisional_stage_plan(print, print)) == (
        "structured-level-provisional", "exact-lp!")


def test_a_provisional_strategy_answers_without_a_certificate():
    from fairalloc.plan import Strategy, run_plan
    from fairalloc.results import Certificate
    from fairalloc.solvelog import SolveLog

    unproven = Certificate("lp", 1.0, float("nan"), float("inf"), 0.0)
    plan = (Strategy("guess", lambda c: 1, lambda c, r: unproven, provisional=True),
            Strategy("exact", lambda c: 2, lambda c, r: unproven, exact=True))
    log = SolveLog()
    found = run_plan(plan, None, log, what="demo")
    assert (found.result, found.strategy, found.certificate.ok) == (1, "guess", False)
    assert log.path == ("guess",)


@st.composite
def _ftf_instances(draw):
    n, k = draw(st.integers(2, 7)), draw(st.integers(1, 3))
    tp = draw(st.lists(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.0]), min_size=k,
                                max_size=k), min_size=n, max_size=n))
    steps = draw(st.lists(st.sampled_from([10.0, 40.0, 100.0, 350.0]), min_size=n, max_size=n))
    caps = draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))
    return (fa.Jobs(np.array(tp), steps_remaining=steps),
            fa.Cluster({f"t{j}": c for j, c in enumerate(caps)}))


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(inst=_ftf_instances(), provisional=st.booleans())
def test_dinkelbach_plans_agree_with_the_whole_lp(inst, provisional):
    # the structured Dinkelbach stages (provisional or certified each) and the whole LP give
    # the same certified max rho, each within gap_tol of the optimum
    jobs, cl = inst
    tuning = fa.throughput.Tuning(structured_min_jobs=1, dinkelbach_provisional=provisional,
                                  ftf_closed_form=False)  # (the sequence, not the closed form)
    fast = fa.finish_time_fairness(jobs, cl, method="fast", symmetry=False, tuning=tuning)
    exact = fa.finish_time_fairness(jobs, cl, method="highs", symmetry=False)
    assert fast.certificate.ok and exact.certificate.ok
    assert fast.stats.path[:2] == ("dinkelbach", "structured-level" + (
        "-provisional" if provisional else ""))  # (the structured stages ran)
    assert fast.objective == pytest.approx(exact.objective, rel=2 * fa.tolerances.GAP_TOL)
