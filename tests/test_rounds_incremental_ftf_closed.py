"""The warm closed form of finish-time fairness (#28, `fairalloc.rounds.incremental_ftf`).

A warm round first re-solves the kept work-conserving model with every ``rho <= R_lb`` (the
closed-form lower bound, ``fairalloc.throughput.duration``'s ``ftf-closed-form``): a feasible,
certified point is the round. Where ``R_lb`` is not attained the round is the incremental
Newton path. Either way it must agree with a cold `fairalloc.solve_round` within the
certificates' bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.results import Status
from fairalloc.throughput.duration import CLOSED_FORM
from fairalloc.tolerances import FEAS_TOL, GAP_TOL
from tests.ftf_traces import ROUND_S, TYPES, allocate_args, job_trace, warm_and_cold

#: two certified optima of max rho, each within GAP_TOL of R* relative to R, differ by at
#: most twice that
AGREE = 2 * GAP_TOL


@st.composite
def rounds(draw, roomy: bool):
    """4 rounds of 2-25 jobs (1-3 leave and arrive per round, every job advances). ``roomy``:
    1-3 types with at least twice as many workers as jobs on each (every job can have its
    fastest type all the time: ``R_lb`` is attained); else one type with one worker (the job
    that sets ``R_lb`` needs it all the time and every other job some of it: not attained)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    n = draw(st.integers(2, 25))
    churn = draw(st.integers(1, 3))
    k = draw(st.integers(1, 3)) if roomy else 1
    cap = {t: 2 * (n + churn) if roomy else 1 for t in TYPES[:k]}

    return job_trace(rng, n, k, churn, 4, 0.2, gangs=roomy), cap



def _agree(warm, cold, jobs, cap):
    assert warm.status == Status.OPTIMAL and warm.certificate.ok
    assert all(c.ok for c in warm.reduced.stage_certificates)
    assert abs(warm.objective - cold.objective) <= AGREE * abs(cold.objective)
    # the certificate's gap (in rho, relative to R) bounds the excess over R* <= cold's
    assert warm.objective - cold.objective <= (
        warm.certificate.relative_gap + FEAS_TOL) * warm.objective
    assert warm.reduced.metric.max() == warm.objective
    x = warm.x
    sf = np.array([jobs[i]["sf"] for i in warm.job_ids], dtype=float)
    assert np.all(x >= 0) and np.all(x.sum(axis=1) <= 1 + FEAS_TOL)
    assert np.all(sf @ x <= np.array([cap[t] for t in warm.types]) * (1 + FEAS_TOL))


def _trace(trace):
    out, cap = trace
    paths = []
    for jobs, warm, cold in warm_and_cold(out, cap):
        _agree(warm, cold, jobs, cap)
        paths.append((warm.stats.method, warm.stats.path[0], cold.stats.path[0]))
    return paths


@settings(max_examples=8, deadline=None, derandomize=True)
@given(rounds(roomy=True))
def test_warm_rounds_at_the_lower_bound_are_the_closed_form(trace):
    paths = _trace(trace)
    # every cold round attains R_lb here; after the first (the normal round) every warm
    # round is the closed form on the kept model: one re-solve, no Newton step
    assert all(cold == CLOSED_FORM for _, _, cold in paths), paths
    assert [(m, w) for m, w, _ in paths[1:]] == [("incremental+warm", CLOSED_FORM)] * 3, paths


@settings(max_examples=8, deadline=None, derandomize=True)
@given(rounds(roomy=False))
def test_warm_rounds_above_the_lower_bound_take_the_newton_path(trace):
    paths = _trace(trace)
    assert all(cold != CLOSED_FORM for _, _, cold in paths), paths
    assert all(m == "incremental+warm" and w.startswith("newton:")
               for m, w, _ in paths[1:]), paths


def test_the_closed_form_comes_back_once_an_optimum_is_at_the_lower_bound():
    # one type with 6 workers: 3 jobs get their fastest type all the time (R_lb attained),
    # 12 do not; the round after a miss is the Newton path, whose optimum at R_lb brings
    # the closed form back the round after
    rng = np.random.default_rng(11)
    cap = {"v100": 6}

    def job(i):
        return {"tp": {"v100": float(rng.uniform(1, 10))}, "sf": 1,
                "steps": float(rng.uniform(1e3, 1e4)), "t": float(ROUND_S * (i % 4))}

    pool = {i: job(i) for i in range(12)}
    p = fa.RoundPolicy("finish_time_fairness")
    paths = []
    for n in (3, 3, 12, 3, 3, 3):
        jobs = {i: pool[i] for i in range(n)}
        for j in pool.values():
            j["t"] += ROUND_S
        tp, per = allocate_args(jobs)
        warm = p.allocate(tp, cap, **per)
        _agree(warm, fa.solve_round("finish_time_fairness", tp, cap, **per), jobs, cap)
        paths.append(warm.stats.path[0].split(":")[0])
    assert paths == [CLOSED_FORM, CLOSED_FORM, "newton", "newton", CLOSED_FORM, CLOSED_FORM], \
        paths


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_nearly_finished_job_keeps_its_tiny_share_in_the_warm_closed_form():
    # job 0 has one step left and a long wait behind it: at R_lb (set by job 1) it needs
    # about 2e-6 steps/s, a row bound far below HiGHS' absolute tolerance in the rows' unit.
    # The kept model met that row with x = 0 (rho = inf: numpy warnings, a failed
    # certificate, the normal round); the round must stay the warm closed form and agree
    # with the cold round
    rng = np.random.default_rng(0)
    rates = [[14.0, 26.0, 64.0], [44.0, 142.0, 340.0], [30.0, 60.0, 120.0], [20.0, 50.0, 90.0]]
    n = 20
    tp = {i: dict(zip("abc", rates[i % 4], strict=True)) for i in range(n)}
    steps = {i: float(rng.uniform(1e4, 1e6)) for i in range(n)}
    elapsed = {i: float(rng.integers(0, 50) * ROUND_S) for i in range(n)}
    iso = dict(elapsed)
    steps[0], elapsed[0], iso[0] = 1.0, 50760.0, 23646.0
    steps[1], elapsed[1], iso[1] = 1e4, 37080.0, 1749.0
    cap = {"a": 5, "b": 5, "c": 5}
    p = fa.RoundPolicy("finish_time_fairness")
    for r in range(3):
        per = {"steps_remaining": steps, "elapsed": elapsed, "isolated_elapsed": iso}
        warm = p.allocate(tp, cap, **per)
        if r:
            assert warm.stats.method == "incremental+warm", warm.stats
            assert warm.stats.path[0] == CLOSED_FORM and not warm.stats.fallbacks
            cold = fa.solve_round("finish_time_fairness", tp, cap, **per)
            assert cold.stats.path[0] == CLOSED_FORM
            assert warm.certificate.ok and all(c.ok for c in warm.reduced.stage_certificates)
            assert abs(warm.objective - cold.objective) <= AGREE * abs(cold.objective)
            # job 0 runs: its rho is finite and at most the round's objective
            assert warm.effective_throughput[0] > 0
            assert warm.reduced.metric.max() == warm.objective
        for i in range(2, n):
            steps[i] *= 0.99
