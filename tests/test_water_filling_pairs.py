"""Water-filling with job pairs sees saturation (issues #28/#29).

With pairs every job's largest level was taken as ``inf`` (a pair column "may do better"), so
rule (a') and the saturation jump never applied: Gavel's packed water-filling at 256 jobs
solved one level LP per saturating job (34 level LPs). A job's level is capped by its best
column, pairs included (`fairalloc.throughput.water_bounds.best_levels`); the leximin point is
unchanged (the robust water-filling, the textbook algorithm, agrees).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.instance import ColumnInstance
from fairalloc.throughput.max_min import BOTTLENECK_TOL
from fairalloc.throughput.water_bounds import best_levels, saturation_workers
from fairalloc.tolerances import GAP_TOL

ROBUST = Tuning(water_fast=False)  # the robust water-filling alone
FAST = Tuning(water_robust_max_jobs=0)  # the fast water-filling alone


def _thresholds(levels):
    """Each job's bottleneck threshold (``bottleneck_tol * max(1, level)``, at least the
    level LPs' certified gap), 1.5x for the bottleneck LP's decision gap (as in
    tests/test_water_filling_robust.py)."""
    return 1.5 * np.maximum(BOTTLENECK_TOL * np.maximum(1.0, levels),
                            2.0 * GAP_TOL * float(levels.max(initial=0.0)))


def _saturating(n):
    """``n`` jobs on two ample types (``n`` workers each): every job ends on its best column,
    each at its own level (``n`` saturation events, no capacity event); two pairs."""
    b = np.linspace(0.1, 0.9, n)
    jobs = fa.Jobs(np.c_[np.ones(n), b])
    cl = fa.Cluster({"a": n, "b": n})
    pairs = fa.JobPairs([[0, 1], [2, 3]], [[[0.3, 0.2], [0.1, 0.1]]] * 2)
    return jobs, cl, pairs


def test_pairs_saturation_is_jumped_not_one_level_per_job():
    jobs, cl, pairs = _saturating(16)
    r = fa.water_filling(jobs, cl, pairs=pairs)
    assert r.status == fa.SolveStatus.OPTIMAL
    # main: 16 level LPs (one per saturating job); the jump: the first level and one probe
    assert r.levels <= 4, r.levels
    # every job saturates: its level is its best column's (1 / X^equal throughput)
    fl = np.asarray(r.level_floors)
    best = 1.0 / ((1.0 + np.linspace(0.1, 0.9, 16)) / 2.0)
    assert np.all(np.abs(fl - best) <= _thresholds(best))
    robust = fa.water_filling(jobs, cl, pairs=pairs, tuning=ROBUST)
    assert np.all(np.abs(fl - np.asarray(robust.level_floors)) <= _thresholds(fl))


def test_best_levels_counts_pair_columns_and_matches_singles_without_pairs():
    jobs = fa.Jobs([[1.0, 2.0], [3.0, 0.5], [1.0, 1.0]])
    cl = fa.Cluster({"a": 2, "b": 2})
    alone = ColumnInstance(jobs, cl)
    np.testing.assert_array_equal(best_levels(alone, np.ones(3)), alone.T_allowed.max(axis=1))
    pairs = fa.JobPairs([[0, 2]], [[[2.5, 1.5], [0.0, 0.0]]])
    got = best_levels(ColumnInstance(jobs, cl, pairs=pairs), np.ones(3))
    assert got.tolist() == [2.5, 3.0, 1.5]


@st.composite
def packed(draw):
    """Small instances with pairs, a two-entity hierarchy and ample or scarce capacity."""
    n = draw(st.integers(3, 8))
    k = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.2, 5.0, (n, k))
    cap = rng.integers(1, n + 2, k)
    P = draw(st.integers(1, n))
    a = rng.integers(0, n, P)
    b = (a + 1 + rng.integers(0, n - 1, P)) % n
    rates = T[a][:, :, None] * rng.uniform(0.2, 0.9, (P, k, 2))
    rates[..., 1] = T[b] * rng.uniform(0.2, 0.9, (P, k))
    ents = rng.integers(0, 2, n)
    return (fa.Jobs(T), fa.Cluster({f"t{j}": int(c) for j, c in enumerate(cap)}),
            fa.JobPairs(np.c_[a, b], rates), ents)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(h=packed())
def test_packed_fast_equals_robust_and_stays_below_best_levels(h):
    jobs, cl, pairs, ents = h
    kw = dict(pairs=pairs, entities=ents, entity_weights={0: 1.0, 1: 2.0})
    a = fa.water_filling(jobs, cl, tuning=FAST, **kw)
    b = fa.water_filling(jobs, cl, tuning=ROBUST, **kw)
    fa_, fb = np.asarray(a.level_floors), np.asarray(b.level_floors)
    assert np.all(np.abs(fa_ - fb) <= np.maximum(_thresholds(fa_), _thresholds(fb)))
    wf = fa.WaterFilling(jobs, cl, pairs=pairs)
    cap = best_levels(wf.inst, wf.unorm)
    assert np.all(np.isfinite(cap))
    assert np.all(fa_ <= cap * (1.0 + BOTTLENECK_TOL))


def _crowded():
    """24 jobs on 2 types (18 + 14 workers): several jobs saturate, then a capacity event;
    the cluster cannot hold all 24 jobs at their maxima (seed 3 of a 2-type draw)."""
    rng = np.random.default_rng(3)
    T = rng.uniform(0.2, 3.0, (24, 2)) * (rng.random((24, 2)) < 0.7)
    T[T.sum(1) == 0, 0] = 1.0
    cl = fa.Cluster({"a": int(rng.integers(6, 20)), "b": int(rng.integers(6, 20))})
    return fa.Jobs(T), cl


def test_jump_skips_the_last_event_the_cluster_cannot_hold():
    jobs, cl = _crowded()
    wf = fa.WaterFilling(jobs, cl)
    need = saturation_workers(wf.inst)
    assert need.sum() > cl.capacity.sum()  # every job at its maximum is infeasible
    r = fa.water_filling(jobs, cl)
    # main probed that point first (14 level LPs, 141 simplex iterations)
    assert r.status == fa.SolveStatus.OPTIMAL and r.levels <= 13, r.levels
    robust = fa.water_filling(jobs, cl, tuning=ROBUST)
    fl = np.asarray(r.level_floors)
    assert np.all(np.abs(fl - np.asarray(robust.level_floors)) <= _thresholds(fl))


def test_saturation_workers_bound_the_workers_of_a_saturated_job():
    """A job alone on the cluster reaches its maximum; the workers it then holds are at least
    its `saturation_workers` (here: exactly its best column's scale factor)."""
    jobs = fa.Jobs([[1.0, 2.0]], scale_factor=[2])
    cl = fa.Cluster({"a": 2, "b": 2})
    r = fa.water_filling(jobs, cl)
    wf = fa.WaterFilling(jobs, cl)
    assert np.isclose(float(r.metric[0]), float(best_levels(wf.inst, wf.unorm)[0]))
    held = float(jobs.scale_factor @ r.x.sum(axis=1))
    assert saturation_workers(wf.inst)[0] == 2.0
    assert held >= 2.0 * (1.0 - BOTTLENECK_TOL)
