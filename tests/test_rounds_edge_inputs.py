"""Real inputs at the point of use on the incremental max-min round (edge38): weights far
from 1 give the normal round's answer, certified."""

from __future__ import annotations

import numpy as np
import pytest

from fairalloc import RoundPolicy, solve_round
from fairalloc.tolerances import GAP_TOL

T = np.array([[2.5, 1.2, 0.7], [3.9, 2.0, 1.1], [1.4, 1.4, 0.9], [3.0, 0.6, 0.6],
              [2.2, 2.1, 0.5], [3.3, 1.9, 1.2]])
TYPES = ["v100", "p100", "k80"]
WORKERS = [2, 2, 1]


@pytest.mark.parametrize("w", [1e12, 1e-12, 1e6])
def test_uniform_weight_scale_gives_the_normal_rounds_level(w):
    # weights 1e12 made the level row's coefficients ~1e-12: HiGHS stopped at theta 0 (a job
    # starved) and the certificate's absolute dual residual passed it
    r = solve_round("max_min_fairness", T, WORKERS, types=TYPES, weight=np.full(6, w))
    ref = solve_round("max_min_fairness", T, WORKERS, types=TYPES, weight=np.full(6, w),
                      method="fast")
    assert r.certificate.ok
    assert r.objective == pytest.approx(ref.objective, rel=2 * GAP_TOL)
    assert r.effective_throughput.min() > 0
    one = solve_round("max_min_fairness", T, WORKERS, types=TYPES)
    assert r.objective * w == pytest.approx(one.objective, rel=2 * GAP_TOL)


def test_round_policy_trace_with_heavy_weights_matches_normal_rounds():
    # the kept model's unit follows the weights' scale (rounds 2-3 warm at 1e12, then back)
    pol = RoundPolicy("max_min_fairness", warm_start=True)
    for ids, scale in (([0, 1, 2, 3], 1.0), ([1, 2, 3, 4], 1e12), ([2, 3, 4, 5], 1e12),
                       ([0, 2, 3, 4, 5], 1.0)):
        tp = {j: dict(zip(TYPES, T[j].tolist())) for j in ids}
        weight = {j: scale * (1 + (j % 2)) for j in ids}
        cluster = dict(zip(TYPES, WORKERS))
        r = pol.allocate(tp, cluster, weight=weight)
        ref = solve_round("max_min_fairness", tp, cluster, weight=weight, method="fast")
        assert r.certificate.ok
        assert r.objective == pytest.approx(ref.objective, rel=2 * GAP_TOL)
        assert r.effective_throughput.min() > 0
