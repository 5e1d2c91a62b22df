"""The batched lexicographic knapsack relaxation of `gpu_auction` (issue #31, item 4): the PF
market and every leave-one-out market decided by one forward and one backward dynamic
program, checked against the whole-MILP path (``method="milp"``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairalloc.auctions import BidTable, Topology, gpu_auction
from fairalloc.tolerances import MILP_GAP_TOL


def gang_bids(sizes, rhos, level, empties=None):
    """One bid per agent (its gang, as the simulator's Themis policy bids)."""
    empties = [math.inf] * len(sizes) if empties is None else empties
    return [BidTable([int(k)], [level], [float(r)], rho_empty=e)
            for k, r, e in zip(sizes, rhos, empties)]


def assert_same_optimum(fast, slow):
    """Both certified optimal with the same optimal values (allocations may tie)."""
    assert fast.status == "optimal" and slow.status == "optimal"
    assert fast.certificate.ok and slow.certificate.ok
    # the certificates' own tolerance: gap_tol per agent in the sum
    tol = MILP_GAP_TOL * len(fast.fraction)
    assert fast.objective == pytest.approx(slow.objective, abs=tol)
    assert fast.loo_objective.tolist() == pytest.approx(slow.loo_objective.tolist(), abs=tol)
    # c_i = exp(others' PF value - loo optimum) depends on which PF optimum was picked (ties
    # among equal valuations): compare when both picked the same winners and values, with
    # the certified relative error
    if np.array_equal(fast.choice >= 0, slow.choice >= 0) and np.allclose(
            fast.pf_value, slow.pf_value, rtol=tol, atol=0.0):
        bound = np.maximum(fast.fraction_error, slow.fraction_error) + np.expm1(2 * tol)
        assert np.all(np.abs(fast.fraction - slow.fraction) <= bound * np.maximum(
            fast.fraction, slow.fraction) + tol)


def test_oversubscribed_gang_auction_needs_no_backend():
    # 40 jobs bid for their gangs on 32 GPUs (more demand than supply: the lexicographic count
    # is not everyone): before #31 each of the 41 markets ran a count target, a count MILP and
    # a sum-log MILP through the LP relaxation; the batched relaxation decides them all
    rng = np.random.default_rng(3)
    sizes = rng.choice([1, 2, 4, 8], 40)
    bids = gang_bids(sizes, rng.uniform(0.5, 6.0, 40), level=1)
    topo = Topology.uniform(8, 4)
    fast = gpu_auction(bids, topo, np.arange(32))
    assert fast.stats.path == ("knapsack-relaxation",) and fast.stats.fallbacks == ()
    assert fast.stats.backend == "numpy" and fast.stats.solves == 41
    assert (fast.choice >= 0).sum() < 40  # the count target was infeasible
    slow = gpu_auction(bids, topo, np.arange(32), method="milp")
    assert_same_optimum(fast, slow)


def test_market_the_relaxation_cannot_place_falls_back():
    # three 2-GPU single-machine bids, two 3-GPU machines: the knapsack (6 GPUs) fits all
    # three but only two can be placed, so no market is decided by the batch
    bids = gang_bids([2, 2, 2], [1.0, 2.0, 3.0], level=0)
    topo = Topology.uniform(2, 3)
    fast = gpu_auction(bids, topo, np.arange(6))
    # (agents valuing nothing at 0: the market's plan goes on to its count target)
    assert "knapsack-relaxation->count-target: bound not met" in fast.stats.fallbacks
    assert (fast.choice >= 0).sum() == 2
    assert_same_optimum(fast, gpu_auction(bids, topo, np.arange(6), method="milp"))


@st.composite
def gang_auctions(draw):
    machines = draw(st.integers(1, 4))
    per = draw(st.integers(1, 4))
    racks = draw(st.sampled_from([r for r in (1, 2) if machines % r == 0]))
    topo = Topology.uniform(machines, per, machines_per_rack=machines // racks)
    g = machines * per
    offer = np.flatnonzero(draw(st.lists(st.booleans(), min_size=g, max_size=g)))
    if offer.size == 0:
        offer = np.array([draw(st.integers(0, g - 1))])
    n = draw(st.integers(1, 7))
    sizes = draw(st.lists(st.integers(1, int(offer.size)), min_size=n, max_size=n))
    rhos = draw(st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n))
    empties = draw(st.lists(st.one_of(st.just(math.inf), st.floats(5.0, 50.0)),
                            min_size=n, max_size=n))
    level = draw(st.integers(0, 2))
    return gang_bids(sizes, rhos, level, empties), topo, offer


@settings(max_examples=40)
@given(gang_auctions())
def test_batched_relaxation_agrees_with_the_milp(inst):
    bids, topo, offer = inst
    fast = gpu_auction(bids, topo, offer)
    slow = gpu_auction(bids, topo, offer, method="milp")
    assert "lp-relaxation" not in slow.stats.path
    assert_same_optimum(fast, slow)
    # the bundles are disjoint, offered, and each winner's whole gang
    assert np.all(fast.pf_bundles.sum(axis=0) <= 1)
    assert not fast.pf_bundles[:, np.setdiff1d(np.arange(topo.num_gpus), offer)].any()
    won = fast.choice >= 0
    assert fast.pf_bundles.sum(axis=1)[won].tolist() == [int(b.gpus[0]) for b, w in
                                                         zip(bids, won) if w]


def test_huge_offer_markets_one_by_one_need_no_backend():
    # (agents + 1) x (GPUs + 1) above MAX_BATCH_CELLS: no batch, each market on its own. The
    # count target (all three) is infeasible, which the exact relaxation proves; the sum-log
    # stage at the best count (two) is the relaxation's lexicographic optimum. Before #31 both
    # went through the LP relaxation and HiGHS
    from fairalloc.auctions.placement import MAX_BATCH_CELLS

    g = 1_000_000
    assert 4 * (g + 1) > MAX_BATCH_CELLS
    bids = gang_bids([600_000, 400_000, 500_000], [1.0, 2.0, 1.5], level=2)
    r = gpu_auction(bids, Topology.uniform(1, g), np.arange(g))
    assert r.stats.backend == "numpy" and r.status == "optimal"
    assert r.stats.path == ("count-target", "knapsack-relaxation", "count-milp")
    assert r.stats.fallbacks == ("count-target->count-milp: infeasible",)
    # two winners (600k + 500k does not fit); best product of 1/rho: agents 0 and 1 (1 * 1/2)
    # beat agents 1 and 2 (1/2 * 1/1.5)
    assert r.pf_bundles.sum(axis=1).tolist() == [600_000, 400_000, 0]


@st.composite
def count_rows(draw):
    n = draw(st.integers(1, 6))
    sizes = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    weights = draw(st.lists(st.floats(-3.0, 3.0, allow_subnormal=False), min_size=n, max_size=n))
    counted = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    gpus = draw(st.integers(1, 12))
    lower = draw(st.integers(0, n))
    return sizes, weights, counted, gpus, lower


@settings(max_examples=60)
@given(count_rows())
def test_relaxation_with_a_count_row_matches_enumeration(inst):
    # level-2 gang bids: the knapsack relaxation is the program itself, so its answer with a
    # count row must be the enumerated optimum of max w @ y, sizes @ y <= gpus,
    # counted @ y >= lower (or a valid upper bound when more than `lower` can be counted)
    from itertools import product

    from fairalloc.auctions.placement import PlacementProgram

    sizes, weights, counted, gpus, lower = inst
    n = len(sizes)
    prog = PlacementProgram(gang_bids(sizes, [1.0] * n, level=2), Topology.uniform(1, gpus),
                            np.ones(gpus, dtype=bool))
    cols = prog.col_agent  # one column per placeable bid
    w = np.array(weights)[cols]
    cnt = np.array(counted)[cols]
    res = prog.relaxation(w, np.ones(cols.size, dtype=bool), np.zeros(n, dtype=bool),
                          (cnt, float(lower)))
    best = max((float(np.dot(y, w)) for y in product((0, 1), repeat=cols.size)
                if np.dot(y, np.array(sizes)[cols]) <= gpus and np.dot(y, cnt) >= lower),
               default=None)
    if best is None:
        assert res is None
        return
    assert res is not None and res[0] >= best - 1e-12
    most = max(int(np.dot(y, cnt)) for y in product((0, 1), repeat=cols.size)
               if np.dot(y, np.array(sizes)[cols]) <= gpus)
    if most == lower:  # the lexicographic optimum: exact, and its point meets the row
        assert res[0] == pytest.approx(best, abs=1e-12)
        x = res[1]
        assert x is not None and float(x[:cols.size] @ cnt) >= lower
        assert float(x[:cols.size] @ w) == pytest.approx(best, abs=1e-12)
