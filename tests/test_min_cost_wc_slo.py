"""min_cost's work-conserving stage with SLOs that need a share of a full type (minc39).

The work-conserving stage fills every type; an SLO row whose right-hand side is 1e-8..1e-7 of
its scale is met by HiGHS with ``x = 0`` (within its absolute tolerance at unit scale), and
the job's share must come from a full type. The top-up freed at most 1e-8 of a type, so a job
needing 3.9e-8 got nothing and no strategy certified the stage (``CertificateError``: relative
gap 2.9e-6). Every feasible case must answer, certified, meeting its SLOs within the
certificate's own bound (a row ``T x - r z >= 0`` judged relative to ``T x z + r z``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fairalloc as fa

HI, LO = 5.89257738e08, 2.94628869e08
T_CASE = np.array([[LO, LO], [LO, HI], [HI, LO], [HI, HI], [LO, LO], [HI, LO], [LO, HI]])
STEPS_CASE = np.array([1.40375941e00, 9.89263544e05, 1.00962444e01, 3.10123886e03,
                       2.34040959e00, 7.67000867e05, 1.25787897e00])
SLO_CASE = np.array([1.01485285e13, 3.15544966e15, 5.50129815e06, 1.33832235e02,
                     3.91563494e02, 9.44086553e02, 1.17757002e14])


def _answers(a: fa.Allocation, rate: np.ndarray) -> None:
    """Certified (every stage), work-conserving where it may be, every SLO met within the
    certificate's bound."""
    assert a.status == fa.SolveStatus.OPTIMAL
    assert a.certificate.ok and all(c.ok for c in a.stage_certificates)
    bound = 2.0 * a.certificate.feas_tol
    need = rate > 0
    assert np.all(a.effective_throughput[need] >= rate[need] * (1.0 - bound))


def test_the_work_conserving_stage_answers_when_an_slo_needs_a_full_type():
    jobs = fa.Jobs(T_CASE, steps_remaining=STEPS_CASE)
    cluster = fa.Cluster({"t0": 1, "t1": 2})
    rate = STEPS_CASE / SLO_CASE
    a = fa.min_cost(jobs, cluster, [1.0, 1.0], slo=SLO_CASE)
    _answers(a, rate)
    # job 3 needs 3.9e-8 of a type; the work-conserving stage keeps every worker busy
    assert a.x.sum() == pytest.approx(3.0, rel=a.certificate.feas_tol)
    # the same optimum as Clarabel's, within the certificates' gap tolerance; neither
    # exceeds the other's dual bound (the Charnes-Cooper LP's objective is the ratio)
    c = fa.min_cost(jobs, cluster, [1.0, 1.0], slo=SLO_CASE, backend="clarabel")
    _answers(c, rate)
    assert a.objective == pytest.approx(c.objective, rel=a.certificate.gap_tol)
    assert a.objective <= c.certificate.dual_bound * (1.0 + c.certificate.gap_tol)
    assert c.objective <= a.certificate.dual_bound * (1.0 + a.certificate.gap_tol)


def test_the_ratio_row_keeps_a_slack_at_the_anchors_scale():
    # hypothesis' shrunk example (thorough profile): the Charnes-Cooper point is 1e-9 of the
    # jobs' time (their SLOs), the kept ratio row's slack was relative to its throughput
    # (1e-18 at unit scale) while tp - r cost of a ratio-optimal column rounds to an ulp of
    # tp: every point, the anchor included, broke the row (CertificateError, gap 0.21)
    T = LO * np.array([[1.0, 2.0], [2.0, 2.0], [1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [2.0, 2.0]])
    rate = np.array([1e-9, 1e-9, 0.0, 0.0, 1e-9, 1e-9]) * T.min(axis=1)
    slo = np.where(rate > 0, 1.0 / np.where(rate > 0, rate, 1.0), np.inf)
    a = fa.min_cost(fa.Jobs(T, steps_remaining=np.ones(6)), fa.Cluster({"t0": 1, "t1": 1}),
                    [1.0, 1.0], slo=slo)
    _answers(a, rate)
    # every worker on a job at 2 LO per unit cost (jobs 0, 1, 4, 5 can), both types busy
    assert a.objective == pytest.approx(2.0 * LO, rel=a.certificate.gap_tol)
    assert a.x.sum() == pytest.approx(2.0, rel=a.certificate.feas_tol)


@given(n=st.integers(2, 7), k=st.integers(2, 3), data=st.data())
@example(n=7, k=2, data=None)
def test_feasible_slos_with_tied_rates_answer_work_conserving(n, k, data):
    # rates of one large magnitude with two factors (ties: the ratio optimum fills types),
    # SLOs needing shares around the solver's tolerance (1e-9..1e-6 of the fastest type) or
    # none, one ordinary share; each job's share fits on any type, all of them on one worker
    if data is None:  # the reported case (minc39)
        T, steps, slo, workers = T_CASE, STEPS_CASE, SLO_CASE, [1, 2]
        rate = steps / slo
    else:
        T = data.draw(st.sampled_from([LO, 1e9, 3e5])) * np.array(data.draw(
            st.lists(st.sampled_from([1.0, 2.0]), min_size=n * k, max_size=n * k))
        ).reshape(n, k)
        share = 10.0 ** np.array(data.draw(st.lists(
            st.sampled_from([-np.inf, -9.0, -8.0, -7.5, -7.0, -6.0, -1.5]),
            min_size=n, max_size=n)))
        rate = share * T.min(axis=1)
        steps = np.ones(n)
        with np.errstate(divide="ignore"):
            slo = np.where(rate > 0, steps / np.where(rate > 0, rate, 1.0), np.inf)
        rate = np.where(np.isinf(slo), 0.0, steps / slo)
        workers = data.draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))
    jobs = fa.Jobs(T, steps_remaining=steps)
    cluster = fa.Cluster({f"t{i}": w for i, w in enumerate(workers)})
    a = fa.min_cost(jobs, cluster, np.ones(len(workers)), slo=slo)
    _answers(a, rate)
