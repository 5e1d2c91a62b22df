"""Expressions evaluated at a boundary of their domain are values, not RuntimeWarnings.

The finish-time fairness cvxpy model reads ``rho = t / D + steps / (D tp)`` (an ``inv_pos``)
at the returned allocation; at a point where a job gets nothing, cvxpy's evaluation divided by
zero and numpy printed ``RuntimeWarning: divide by zero encountered in power`` (the long fuzz
profile, seed 7: ``ThroughputPolicy.solve (binding caps)`` and ``cvxpy: throughput``). The value
there is ``rho = inf`` (a point that is not certified); a valid input answers silently, with the
same answer as when the warning was merely printed.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fairalloc as fa
from fairalloc._cvxpy import certify_point, value_at
from fairalloc.results import Certificate


def _capped() -> fa.Allocation:
    """Long fuzz profile, seed 7, ``ThroughputPolicy.solve (binding caps)``."""
    jobs = fa.Jobs(np.array([[4629531.642275778], [8351269722.985146], [2289396101.8524237],
                             [4629531.642275778]]),
                   scale_factor=np.array([1, 2, 1, 2]),
                   weight=np.array([1.6917686664951073, 1.1703175634985106, 2.6805183456267545,
                                    1.5349429169537685]),
                   steps_remaining=np.array([0.03415057708383882, 0.0059351804535720445,
                                             0.00012588471141081003, 0.09065774063852193]),
                   elapsed=np.array([769.1904567223997, 200.6790236486644, 916.4984728338917,
                                     106.49841203102383]))
    b = fa.FinishTimeFairness(jobs, fa.Cluster({"t0": 2}))
    b.add_constraint(b.x[3, 0] <= 2.2332305940548546e-05)
    return b.solve(method="auto")


def _builder() -> fa.Allocation:
    """Long fuzz profile, seed 7, ``cvxpy: throughput`` (``via="builder"``)."""
    T = np.array([[197304.09500251745], [676895439.0498674], [4211704492.8469987],
                  [5491783.233821496], [585221301.3167182], [19007272.803263847],
                  [15796027.932739953], [59196.58693724707], [39850537.649390996],
                  [298224.62326480425], [180713.0974980497]])
    jobs = fa.Jobs(T, scale_factor=np.array([1, 1, 5, 2, 4, 1, 5, 5, 2, 4, 1]),
                   weight=np.array([2.3260978196185915, 2.458549414380177, 1.1537436210759908,
                                    0.5555085663585375, 2.3331619443135962, 2.1350619578582384,
                                    0.941282371150235, 2.181087496383048, 2.721185014191143,
                                    2.1006346222545975, 1.5579443211770037]),
                   steps_remaining=np.array([
                       0.0004845843660436572, 0.0001860211696446009, 0.00452679172994479,
                       0.0020340535457292934, 0.06635876331233924, 0.00010747307558373548,
                       0.0005885507716269511, 0.0004259019168361999, 0.012786172123048719,
                       0.016808759512134556, 0.00014839578110020403]),
                   elapsed=np.array([332.9043611954082, 265.50903693828786, 500.52098618550343,
                                     34.2714777939841, 95.55418792715709, 223.90439161547658,
                                     586.9198324328172, 304.2076234325125, 720.7864179080748,
                                     215.84823022601708, 719.6497812998415]))
    return fa.FinishTimeFairness(jobs, fa.Cluster({"t0": 5})).solve(method="cvxpy")


def _run(solve, runtime: str) -> tuple[fa.Allocation, list[type]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter(runtime, RuntimeWarning)
        r = solve()
    return r, [w.category for w in caught]


@pytest.mark.parametrize("solve", [_capped, _builder], ids=["binding-caps", "builder"])
def test_ftf_cvxpy_at_a_zero_throughput_is_silent_with_the_same_answer(solve) -> None:
    silent, cats = _run(solve, "error")  # on main: the RuntimeWarning raised from cvxpy
    assert RuntimeWarning not in cats
    printed, _ = _run(solve, "ignore")  # the answer when the warning was only printed
    assert silent.certificate.ok and printed.certificate.ok
    np.testing.assert_array_equal(np.asarray(silent.allocation), np.asarray(printed.allocation))
    assert silent.certificate.primal_value == printed.certificate.primal_value
    assert silent.certificate.dual_bound == printed.certificate.dual_bound


def test_value_at_reads_a_boundary_as_its_value_without_a_warning() -> None:
    x = cp.Variable(3)
    x.value = np.array([0.0, 2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        np.testing.assert_array_equal(value_at(cp.inv_pos(x)), [np.inf, 0.5, 0.25])
        assert value_at(cp.sum(cp.log(x))) == -np.inf
    x.value = None
    assert value_at(cp.inv_pos(x)) is None


def test_a_point_at_a_boundary_is_not_certified_and_not_printed() -> None:
    x = cp.Variable(nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.inv_pos(x)), [x <= 1.0])
    bound = Certificate("conic", primal_value=1.0, dual_bound=1.0, gap=0.0,
                        primal_residual=0.0)
    x.value = 0.0  # objective inf: not certified
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        cert = certify_point(prob, bound)
    assert cert.primal_value == np.inf and not cert.ok
    x.value = 1.0  # the verdict at an interior point is unchanged
    assert certify_point(prob, bound).ok
