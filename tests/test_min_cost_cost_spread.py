"""min_cost with type costs far apart (fuzz seed 2626): an answer or an InputError naming cost,
never SolverError or a numpy warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.tolerances import GAP_TOL

TP = np.array([[0.0, 1000.0, 4000.0, 4000.0], [3000.0, 1000.0, 1000.0, 3000.0],
               [3000.0, 1000.0, 3000.0, 3000.0]])
JOBS = fa.Jobs(TP, steps_remaining=np.array([1.8, 4.16, 2.18]))
CLUSTER = fa.Cluster({"t0": 3, "t1": 2, "t2": 5, "t3": 5})


def _cost(dear: float) -> np.ndarray:
    return np.array([4.86e-06, dear, 1.13e-06, 3.43e-06])


def _solve(jobs: fa.Jobs, cluster: fa.Cluster, cost: np.ndarray) -> fa.Allocation:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning on the way
        return fa.min_cost(jobs, cluster, cost)


@pytest.mark.parametrize("dear", [1e10, 1e20, 1e300])
def test_an_expensive_type_does_not_change_the_answer(dear: float) -> None:
    # main: SolverError "unbounded" (the cheap costs fell below HiGHS' small_matrix_value
    # after the cost row was scaled to the dear type's coefficient)
    ref = _solve(JOBS, CLUSTER, _cost(1e-3))  # already ~1e3 times the others' cost
    a = _solve(JOBS, CLUSTER, _cost(dear))
    assert a.certificate.ok
    assert abs(a.objective - ref.objective) <= GAP_TOL * ref.objective
    assert np.all(a.x[:, 1] == 0.0)
    np.testing.assert_allclose(a.x, ref.x, atol=1e-6)
    # the metric is normalised by the jobs' own equal-share throughput (type t1 included)
    np.testing.assert_allclose(a.metric, ref.metric, rtol=1e-6)


def test_a_cost_beyond_floats_is_an_input_error() -> None:
    # main: RuntimeWarning overflow (then SolverError: passModel rejected the model)
    with pytest.raises(fa.InputError) as err:
        _solve(JOBS, CLUSTER, _cost(1e308))
    assert err.value.argument == "cost"
    assert err.value.index == (1,)


@given(exps=st.lists(st.integers(0, 300), min_size=3, max_size=3),
       tp=st.lists(st.sampled_from([0.0, 1.0, 7.0, 1000.0, 4000.0]), min_size=6, max_size=6),
       workers=st.lists(st.integers(1, 4), min_size=3, max_size=3))
def test_cost_ratios_answer_or_input_error(exps: list[int], tp: list[float],
                                          workers: list[int]) -> None:
    t = np.array(tp).reshape(2, 3)
    t[:, 0] = np.maximum(t[:, 0], 1.0)  # every job runs somewhere
    cost = 1e-6 * 10.0 ** np.array(exps, dtype=float)
    jobs = fa.Jobs(t)
    cluster = fa.Cluster({"a": workers[0], "b": workers[1], "c": workers[2]})
    try:
        a = _solve(jobs, cluster, cost)
    except fa.InputError as exc:
        assert exc.argument == "cost"
        return
    assert a.certificate.ok
    # the optimum is the best single column's throughput per unit cost (no SLO)
    best = float(np.max(t / cost[None, :]))
    assert abs(a.objective - best) <= GAP_TOL * best


def test_a_job_that_runs_only_on_hopeless_types_gets_nothing() -> None:
    # job 0's best column (on t0) stays in the LP (a job needs one) and is held at 0 in the
    # work-conserving stage; without that, its -r * cost (1e156) in the kept ratio row put the
    # other entries below HiGHS' range (CertificateError, relative gap 0.5; a seeded sweep)
    tp = np.array([[10.0, 0.0, 1e3, 1e3], [10.0, 4e3, 4e3, 1.0], [1e3, 10.0, 4e3, 1.0],
                   [1.0, 10.0, 1e3, 1e3]])
    cluster = fa.Cluster({"t0": 1, "t1": 2, "t2": 1, "t3": 3})
    a = _solve(fa.Jobs(tp), cluster, np.array([1e108, 1e60, 1e249, 1e125]))
    assert a.certificate.ok
    best = 4e3 / 1e60  # job 1 on t1
    assert abs(a.objective - best) <= GAP_TOL * best
    assert np.all(a.x[0] == 0.0)
