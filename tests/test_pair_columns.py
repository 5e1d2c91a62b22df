"""Water-filling's level LPs with pairs by column generation over pair columns (#28/#29).

`fairalloc.throughput.pair_columns`: a level LP of a warm sequence with many pair columns is
solved over the single columns and a few pair columns, adding those the duals price in; the
certificate is the whole LP's. The floors must be the whole-column solve's (within the
bottleneck thresholds every water-filling answer is judged by), the pricing must find a pair
column the first restricted LP lacks, and a loop that cannot certify hands over to the whole
LP through the stage plan.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.max_min import BOTTLENECK_TOL
from fairalloc.throughput.pair_columns import PAIR_COLUMNS, PAIR_ROUND
from fairalloc.tolerances import GAP_TOL

WHOLE = Tuning(pair_columns_min_columns=0)  # every level LP over every column
#: column generation whenever there is a pair (on instances this small the single columns
#: alone are most of the columns: no share cap)
PRICED = Tuning(pair_columns_min_columns=1, columns_max_share=1.0)


def _thresholds(levels):
    """Each job's bottleneck threshold (``bottleneck_tol * max(1, level)``, at least twice the
    level LPs' certified gap), 1.5x for the bottleneck LP's decision gap (as in
    tests/test_water_filling_pairs.py): two certified water-fillings agree to it."""
    return 1.5 * np.maximum(BOTTLENECK_TOL * np.maximum(1.0, levels),
                            2.0 * GAP_TOL * float(levels.max(initial=0.0)))


@st.composite
def hierarchies(draw):
    """Instances with many pairs (every job in several), gangs, and a hierarchy of up to
    three entities (weights, one of them FIFO), on scarce or ample capacity."""
    n = draw(st.integers(3, 9))
    k = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    T = rng.uniform(0.2, 5.0, (n, k)) * (rng.random((n, k)) < 0.8)
    T[T.sum(axis=1) == 0, 0] = 1.0
    scale = rng.choice([1, 1, 2], n)
    cap = rng.integers(2, n + 3, k)
    a, b = np.triu_indices(n, 1)
    keep = rng.random(a.size) < draw(st.sampled_from([0.5, 1.0]))
    keep[0] = True
    a, b = a[keep], b[keep]
    rates = np.stack([T[a] * rng.uniform(0.3, 0.95, (a.size, k)),
                      T[b] * rng.uniform(0.3, 0.95, (a.size, k))], axis=2)
    ents = rng.integers(0, draw(st.integers(1, 3)), n)
    fifo = draw(st.booleans())
    return (fa.Jobs(T, scale_factor=scale),
            fa.Cluster({f"t{j}": int(c) for j, c in enumerate(cap)}),
            fa.JobPairs(np.c_[a, b], rates),
            dict(entities=ents, entity_weights={0: 1.0, 1: 2.0, 2: 0.5},
                 entity_policies={2: "fifo"} if fifo else None))


@settings(max_examples=12, deadline=None, derandomize=True)
@given(h=hierarchies())
def test_priced_pair_columns_give_the_whole_columns_floors(h):
    jobs, cl, pairs, kw = h
    priced = fa.water_filling(jobs, cl, pairs=pairs, tuning=PRICED, **kw)
    whole = fa.water_filling(jobs, cl, pairs=pairs, tuning=WHOLE, **kw)
    assert priced.certificate.ok and whole.certificate.ok
    assert PAIR_COLUMNS in priced.stats.path and PAIR_COLUMNS not in whole.stats.path
    fp, fw = np.asarray(priced.level_floors), np.asarray(whole.level_floors)
    assert np.all(np.abs(fp - fw) <= np.maximum(_thresholds(fp), _thresholds(fw)))
    assert all(c.ok for c in priced.stage_certificates)
    assert not [f for f in priced.stats.fallbacks if f.startswith(PAIR_COLUMNS)]


def test_pricing_adds_the_pair_column_the_first_restricted_lp_lacks():
    """Two jobs keep 80% of their speed sharing the one GPU: without a first pair column the
    restricted LP's level is 0.5 (taking turns); the pair column prices in (reduced cost
    0.8 lambda_a + 0.8 lambda_b - mu_a - mu_b - p > 0) and the level is 0.8."""
    jobs = fa.Jobs([[10.0], [10.0]])
    pairs = fa.JobPairs([[0, 1]], [[[8.0, 8.0]]])
    tuning = Tuning(pair_columns_min_columns=1, columns_first_per_job=0, columns_max_share=1.0)
    r = fa.water_filling(jobs, fa.Cluster({"gpu": 1}), pairs=pairs, tuning=tuning)
    assert r.certificate.ok
    assert np.allclose(np.asarray(r.level_floors), 0.8, rtol=0.0, atol=GAP_TOL)
    assert r.stats.count(PAIR_ROUND) + r.stats.count(PAIR_ROUND + "+warm") >= 2
    assert not r.stats.fallbacks


def test_a_loop_that_cannot_certify_hands_over_to_the_whole_lp():
    jobs = fa.Jobs([[10.0, 4.0], [6.0, 5.0], [3.0, 3.0]])
    cl = fa.Cluster({"a": 1, "b": 1})
    pairs = fa.JobPairs([[0, 1], [1, 2], [0, 2]], [[[8.0, 5.0], [3.5, 4.5]]] * 3)
    capped = Tuning(pair_columns_min_columns=1, columns_first_per_job=0, columns_max_rounds=1,
                    columns_max_share=1.0)
    r = fa.water_filling(jobs, cl, pairs=pairs, tuning=capped)
    assert any(f.startswith(PAIR_COLUMNS + "->") for f in r.stats.fallbacks), r.stats.fallbacks
    whole = fa.water_filling(jobs, cl, pairs=pairs, tuning=WHOLE)
    fr, fw = np.asarray(r.level_floors), np.asarray(whole.level_floors)
    assert r.certificate.ok and np.all(np.abs(fr - fw) <= _thresholds(fw))


def test_small_pair_sets_keep_the_whole_lp_by_default():
    jobs = fa.Jobs([[10.0], [10.0]])
    pairs = fa.JobPairs([[0, 1]], [[[8.0, 8.0]]])
    r = fa.water_filling(jobs, fa.Cluster({"gpu": 1}), pairs=pairs)
    assert PAIR_COLUMNS not in r.stats.path


@settings(max_examples=6, deadline=None, derandomize=True)
@given(h=hierarchies())
def test_finish_time_fairness_with_priced_pair_columns_keeps_its_objective(h):
    """Finish-time fairness' Dinkelbach stages are a warm level sequence too: the same
    certified objective with the pair columns priced in as over every column."""
    jobs, cl, pairs, _ = h
    n = jobs.n
    jobs = fa.Jobs(jobs.throughput, scale_factor=jobs.scale_factor,
                   steps_remaining=np.linspace(100.0, 400.0, n),
                   elapsed=np.linspace(0.0, 50.0, n))
    priced = fa.finish_time_fairness(jobs, cl, pairs=pairs, tuning=PRICED)
    whole = fa.finish_time_fairness(jobs, cl, pairs=pairs, tuning=WHOLE)
    assert priced.certificate.ok and whole.certificate.ok
    assert PAIR_COLUMNS in priced.stats.path and PAIR_COLUMNS not in whole.stats.path
    tol = 2.0 * GAP_TOL * max(1.0, abs(whole.objective))  # both certified to gap_tol
    assert abs(priced.objective - whole.objective) <= tol
