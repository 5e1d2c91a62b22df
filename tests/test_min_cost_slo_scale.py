"""min_cost with SLOs whose rates are a tiny share of the jobs' throughput (fuzz seed 2525).

An SLO row ``T_j . x_j >= steps_j / slo_j`` whose right-hand side is 1e-13..1e-5 of the
row's scale lies below HiGHS' absolute feasibility tolerance: HiGHS meets it with ``x = 0`` (or
a point short by its tolerance), and the share the job lacks must be added to a type the
solver filled. The relative certificate judges the point on the original program; every
feasible SLO round must answer, certified, and meet every SLO within the certificate's own
bound: a row ``T x - r z >= 0`` is judged relative to ``T x z + r z``, so a certified point
has ``T x >= r (1 - 2 feas_tol)`` (to first order).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.plan import describe
from fairalloc.throughput.efficiency import charnes_cooper_plan

STEPS = np.array([2373.05, 2264.5, 6331.98, 9526.37, 7907.92, 9845.4, 210.65])


def _meets_slos(a: fa.Allocation, rate: np.ndarray) -> None:
    """The answer is certified and meets every SLO within the certificate's bound."""
    assert a.status == fa.SolveStatus.OPTIMAL
    assert a.certificate.ok
    bound = 2.0 * a.certificate.feas_tol
    need = rate > 0
    assert np.all(a.effective_throughput[need] >= rate[need] * (1.0 - bound))


@pytest.mark.parametrize(("tp", "slo"), [(1e9, 1e17), (1e9, 1e8), (1e7, 1e8), (1e5, 1e17)])
def test_sub_tolerance_slo_rows_are_met_on_a_full_type(tp, slo):
    jobs = fa.Jobs(np.full((7, 1), tp), steps_remaining=STEPS)
    a = fa.min_cost(jobs, fa.Cluster({"t0": 5}), np.array([1.0]), slo=np.full(7, slo))
    _meets_slos(a, STEPS / slo)
    # one type, one cost: every allocation of the 5 workers has ratio tp per unit cost
    assert a.objective == pytest.approx(tp, rel=a.certificate.gap_tol)
    # work conserving: all five workers busy
    assert a.x.sum() == pytest.approx(5.0, rel=a.certificate.feas_tol)


def test_an_ordinary_slo_on_a_full_worker_is_met():
    # the property's shrunk example on main: 1 step due in 100 s at 10 steps/s (a share 1e-3)
    jobs = fa.Jobs(np.full((5, 1), 10.0), steps_remaining=np.ones(5))
    slo = np.array([100.0] * 4 + [1e11])
    _meets_slos(fa.min_cost(jobs, fa.Cluster({"t0": 1}), [0.5], slo=slo), 1.0 / slo)


def test_a_wrong_signed_slo_dual_hands_over_to_an_exact_strategy():
    # hypothesis' shrunk example (thorough profile): jobs 3-5 meet their SLO rows with
    # equality on a degenerate optimum and HiGHS' simplex gives those rows a dual of -3.3e-6
    # (a >= row: the wrong sign), a dual residual the certificate rightly refuses
    T = np.full((7, 2), 1000.0)
    T[6] = 500.0
    jobs = fa.Jobs(T, steps_remaining=np.ones(7))
    slo = np.full(7, 100.0)
    a = fa.min_cost(jobs, fa.Cluster({"t0": 1, "t1": 3}), [0.5, 0.5], slo=slo)
    _meets_slos(a, 1.0 / slo)
    assert a.objective <= 1000.0 / 0.5 * (1.0 + a.certificate.gap_tol)  # the best ratio


def test_the_charnes_cooper_plan():
    assert describe(charnes_cooper_plan()) == (
        "charnes-cooper!", "charnes-cooper+simplex!", "charnes-cooper+clarabel!")


def test_an_slo_above_the_fastest_rate_still_names_the_job():
    jobs = fa.Jobs(np.full((7, 1), 1e9), steps_remaining=STEPS, ids=list("abcdefg"))
    slo = np.full(7, 1e17)
    slo[3] = STEPS[3] / 2e9  # needs twice the job's rate
    with pytest.raises(fa.InfeasibleError, match="'d'"):
        fa.min_cost(jobs, fa.Cluster({"t0": 5}), np.array([1.0]), slo=slo)


def test_slos_infeasible_together_still_raise():
    # each job alone fits (0.6 of a worker), together they need 4.2 of 4 workers
    jobs = fa.Jobs(np.full((7, 1), 1e9), steps_remaining=STEPS)
    with pytest.raises(fa.InfeasibleError):
        fa.min_cost(jobs, fa.Cluster({"t0": 4}), np.array([1.0]), slo=STEPS / 6e8)


@given(n=st.integers(2, 7), k=st.integers(1, 2), data=st.data())
def test_feasible_slo_rounds_answer_at_every_scale(n, k, data):
    # throughputs of one magnitude with few distinct factors: ties make the ratio optimum fill
    # a type (Gavel's job classes), which is where a job left at x = 0 needs a top-up
    log_tp = data.draw(st.floats(0.0, 12.0))
    factor = np.array(data.draw(st.lists(st.sampled_from([1.0, 0.5]), min_size=n * k,
                                         max_size=n * k))).reshape(n, k)
    steps = 10.0 ** np.array(data.draw(st.lists(st.floats(0.0, 6.0), min_size=n, max_size=n)))
    slo = 10.0 ** np.array(data.draw(st.lists(st.floats(2.0, 18.0), min_size=n, max_size=n)))
    workers = data.draw(st.lists(st.integers(1, n), min_size=k, max_size=k))
    cost = np.array(data.draw(st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=k,
                                       max_size=k)))
    T = 10.0**log_tp * factor
    rate = steps / slo
    # feasible for sure: every job's share on its slowest type fits, all of them on any type
    share = rate / T.min(axis=1)
    assume(share.max() <= 1.0 and share.sum() <= min(workers))
    jobs = fa.Jobs(T, steps_remaining=steps)
    cluster = fa.Cluster({f"t{i}": w for i, w in enumerate(workers)})
    _meets_slos(fa.min_cost(jobs, cluster, cost, slo=slo), rate)
