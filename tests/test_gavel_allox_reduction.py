"""AlloX's matching solved on the reduced (type, level) cost matrix: the same optimum as
Gavel's dense (job, worker, position) matrix, and a 2,000-job round that the dense one could
not allocate (issue: numpy MemoryError at Gavel's 2,048-job round)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

import fairalloc as fa
from fairalloc.integrations import gavel
from fairalloc.integrations.gavel_heuristics import ALLOX_ZERO_RATE, allox_match


def _dense(steps, rates, elapsed, workers):
    """Gavel's allox.py matching on the full m x (m x n) matrix: (total cost, running per type)."""
    m = steps.size
    col = np.repeat(np.arange(len(workers)), workers)
    n = col.size
    rate = np.where(rates[:, col] == 0.0, ALLOX_ZERO_RATE, rates[:, col])
    base = steps[:, None] / rate
    q = (base[:, None, :] * np.arange(1, m + 1)[None, :, None]).reshape(m, m * n)
    q = q + elapsed[:, None]
    rows, cols = linear_sum_assignment(q)
    used = np.unique(cols % n)                     # every used worker runs one job
    return float(q[rows, cols].sum()), np.bincount(col[used], minlength=len(workers))


@given(st.data(), st.sampled_from(["transport", "assignment"]))
def test_reduced_matching_has_the_dense_optimum(data, method):
    m = data.draw(st.integers(1, 16))
    k = data.draw(st.integers(1, 3))
    workers = np.array(data.draw(st.lists(st.integers(0, 12), min_size=k, max_size=k)))
    if workers.sum() == 0:
        workers[0] = 1
    pos = st.floats(0.5, 50.0, allow_nan=False)
    steps = np.array(data.draw(st.lists(pos, min_size=m, max_size=m)))
    rates = np.array(data.draw(st.lists(st.lists(pos, min_size=k, max_size=k),
                                        min_size=m, max_size=m)))
    # a generic perturbation (square roots of distinct non-squares) makes equal-cost optima,
    # which may split jobs across types differently, a measure-zero event
    rates = rates * (1.0 + np.sqrt(np.arange(2, 2 + m * k)).reshape(m, k) * 1e-4)
    zero = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k),
                                       min_size=m, max_size=m)))
    elapsed = np.array(data.draw(st.lists(st.floats(0.0, 100.0), min_size=m, max_size=m)))
    cost, per_type = _dense(steps, rates, elapsed, workers)
    got = allox_match(steps, rates, elapsed, workers, method)
    assert np.isclose(got.cost, cost, rtol=1e-9)   # both are optimal assignments
    assert got.columns <= m * k + workers.sum()
    # the jobs that run now: one per used worker, i.e. per type the jobs at level 1
    run_per_type = np.bincount(got.job_type[got.running], minlength=k)
    assert run_per_type.tolist() == np.bincount(got.job_type[got.level == 1],
                                                minlength=k).tolist()
    assert run_per_type.tolist() == per_type.tolist()
    # zero rates (Gavel's 1e-10) tie across types: the optimal cost still agrees
    rates0 = np.where(zero, 0.0, rates)
    assert np.isclose(allox_match(steps, rates0, elapsed, workers, method).cost,
                      _dense(steps, rates0, elapsed, workers)[0], rtol=1e-9)


def test_stacks_run_the_shortest_job_last_position_first():
    # one worker: jobs run shortest-processing-time first, so the short job (index 1) runs now
    got = allox_match([100.0, 10.0, 50.0], [[1.0], [1.0], [1.0]], [0.0] * 3, [1])
    assert got.level.tolist() == [1, 3, 2] and got.running.tolist() == [1]
    assert got.cost == 100.0 + 30.0 + 100.0


def test_a_two_thousand_job_round_is_allocated():
    # Gavel's 2,048-job round leaves ~1,450 jobs waiting for ~1,500 free workers; the dense
    # matrix was 2,000 x 3,000,000 (48 GB): numpy MemoryError
    rng = np.random.default_rng(0)
    m, spec = 2000, {"k80": 500, "p100": 500, "v100": 500}
    speed = {"k80": 1.0, "p100": 2.0, "v100": 3.0}
    tp = {j: {t: float(rng.uniform(0.5, 1.5)) * s for t, s in speed.items()} for j in range(m)}
    elapsed = {j: float(rng.uniform(0, 1e4)) for j in range(m)}
    steps = {j: float(rng.integers(100, 10**5)) for j in range(m)}
    out = gavel.policy("allox").get_allocation(tp, dict.fromkeys(tp, 1), elapsed, steps, spec)
    busy = {t: sum(row[t] for row in out.values()) for t in spec}
    assert all(0 < busy[t] <= c for t, c in spec.items())        # one job per used worker
    assert all(sum(row.values()) in (0.0, 1.0) for row in out.values())
    ids = list(tp)
    got = allox_match(np.array([steps[j] for j in ids]),
                      np.array([[tp[j][t] for t in sorted(spec)] for j in ids]),
                      np.array([elapsed[j] for j in ids]), np.array([500, 500, 500]))
    assert got.columns <= m * 3 + 1500                           # not m x m x n
    assert got.running.size == sum(busy.values())
    assert got.running.size == np.count_nonzero(got.level == 1)


def test_transportation_program_with_several_levels_has_the_dense_optimum():
    # 20 jobs on 8 + 8 + 8 workers: 3 levels per type, 9 slots of 8 workers
    rng = np.random.default_rng(3)
    steps, rates = rng.uniform(1, 100, 20), rng.uniform(0.5, 3.0, (20, 3))
    elapsed, workers = rng.uniform(0, 50, 20), np.array([8, 8, 8])
    got = allox_match(steps, rates, elapsed, workers, "transport")
    cost, per_type = _dense(steps, rates, elapsed, workers)
    assert got.columns == 72 and np.isclose(got.cost, cost, rtol=1e-9)
    assert np.bincount(got.job_type[got.running], minlength=3).tolist() == per_type.tolist()


def test_an_unknown_method_is_an_input_error():
    with pytest.raises(fa.InputError, match="method"):
        allox_match([1.0], [[1.0]], [0.0], [1], "simplex")
