"""Makespan on wide-range data: the plan's exact tail answers where the first interior point
misses the certificate (issue #27, fuzz seed 808)."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.tolerances import GAP_TOL

# two jobs (rows 2 and 4) need a ~3e-8 share of the single t2 worker (steps ~1e-4 at ~1e8
# steps/s) while t2 is full: an interior point that meets their level rows only to its absolute
# tolerance left the makespan 2e-4 above its bound ("no strategy certified the makespan
# program" with backend="clarabel")
_SLOW_FAST = [0.0, 563.2551438970345, 75553520.85633712]
WIDE_T = np.array([
    _SLOW_FAST, [0.0, 2952523.8729108423, 19626.315081241144], _SLOW_FAST, _SLOW_FAST,
    _SLOW_FAST, [469301.56451153295, 0.0, 1384417.9651658423],
    [0.0, 25603363.413325075, 114.57673941262206],
    [24788.058013517522, 5896665506.049193, 469.43771913366453], _SLOW_FAST,
    [5519418.294039592, 0.0, 0.0], _SLOW_FAST, [0.0, 0.0, 7855.386760715094],
    [0.0, 14365.577088650423, 0.0]])
WIDE_SF = np.array([4, 4, 1, 1, 1, 2, 1, 4, 4, 2, 1, 1, 4])
WIDE_STEPS = np.array([
    0.009348500364757803, 0.021457991269221283, 0.00020087625359681502, 0.15484465573765022,
    0.00010911599806860167, 0.23478406288155046, 0.04661957636665867, 0.00014358413478420586,
    0.0007073951748070927, 0.07974743967310921, 0.7280139877636379, 0.6610286967528034,
    0.6856905851266335])
WIDE_CLUSTER = fa.Cluster({"t0": 2, "t1": 4, "t2": 1})


@pytest.mark.parametrize("method", ["highs", "auto"])
def test_min_makespan_with_clarabel_answers_on_wide_range_rows(method):
    jobs = fa.Jobs(WIDE_T, scale_factor=WIDE_SF, steps_remaining=WIDE_STEPS)
    a = fa.min_makespan(jobs, WIDE_CLUSTER, method=method, backend="clarabel")
    assert a.certificate.ok and a.status == "optimal"
    # the caller's backend, on the LP in its levels' units, answered the makespan stage
    assert "exact-lp+rescaled" in a.stats.path
    # the same optimum as HiGHS' vertex (both certified to GAP_TOL)
    ref = fa.min_makespan(jobs, WIDE_CLUSTER)
    assert a.objective == pytest.approx(ref.objective, rel=2 * GAP_TOL)
    assert a.certificate.dual_bound <= ref.certificate.primal_value * (1 + 2 * GAP_TOL)
