"""The set-packing solves of the indivisible auctions on the one plan driver (issue #27): the
knapsack relaxation, the LP relaxation (with its roundings), the whole MILP and the best
incumbent are `fairalloc.plan` strategies (`fairalloc.auctions.nash.packing_plan`); each
hand-over is reached through a public seam (the input, ``method=``, a backend passed as
``backend=``), never a private patch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.auctions import Topology, bundle_auction, gpu_auction
from fairalloc.auctions.nash import packing_plan
from fairalloc.backends import HighsBackend
from fairalloc.plan import describe

from .test_auction_batched_relaxation import gang_bids

BUNDLES, VALUES = [[[0], [1]]] * 3, [[1.0, 2.0]] * 3


class _LPStops(HighsBackend):
    """HiGHS, but every LP relaxation (a program without integers) stops at its limit."""

    def solve_lp(self, lp, **kwargs):  # type: ignore[no-untyped-def]
        sol = super().solve_lp(lp, **kwargs)
        if lp.is_mip:
            return sol
        return dataclasses.replace(sol, status=fa.backends.SolveStatus.TIME_LIMIT, x=None,
                                   row_duals=None, raw_status="Time limit reached")


class _LPFails(HighsBackend):
    """HiGHS, but every LP relaxation fails (a backend error)."""

    def solve_lp(self, lp, **kwargs):  # type: ignore[no-untyped-def]
        if not lp.is_mip:
            raise fa.SolverError("the LP backend crashed", backend="highs")
        return super().solve_lp(lp, **kwargs)


def test_the_plans_are_data():
    assert describe(packing_plan("auto", True)) == (
        "knapsack-relaxation!", "lp-relaxation!", "milp!", "incumbent!")
    assert describe(packing_plan("auto", False)) == ("lp-relaxation!", "milp!", "incumbent!")
    assert describe(packing_plan("lp", True)) == ("lp-relaxation!", "milp!", "incumbent!")
    assert describe(packing_plan("milp", True)) == ("milp!", "incumbent!")


def test_knapsack_to_lp_relaxation_is_reached_by_an_input():
    # three 2-GPU single-machine bids, two 3-GPU machines: the knapsack fits all three, only
    # two can be placed
    bids = gang_bids([2, 2, 2], [1.0, 2.0, 3.0], level=0)
    r = gpu_auction(bids, Topology.uniform(2, 3), np.arange(6))
    assert "knapsack-relaxation->lp-relaxation: bound not met" in r.stats.fallbacks
    ref = gpu_auction(bids, Topology.uniform(2, 3), np.arange(6), method="milp")
    assert r.status == ref.status == "optimal"
    assert r.objective == pytest.approx(ref.objective, abs=1e-9)


def test_lp_relaxation_to_milp_when_the_lp_stops():
    r = bundle_auction(BUNDLES, VALUES, method="lp", backend=_LPStops())
    assert "lp-relaxation->milp: LP stopped (time_limit)" in r.stats.fallbacks
    ref = bundle_auction(BUNDLES, VALUES)
    assert r.status == "optimal" and r.objective == pytest.approx(ref.objective, abs=1e-9)
    np.testing.assert_allclose(r.fraction, ref.fraction, atol=1e-9)


def test_a_failing_lp_relaxation_hands_over_to_the_milp():
    """On main a backend error in the LP relaxation killed the auction (SolverError); the plan
    hands over to the whole MILP, which answers."""
    r = bundle_auction(BUNDLES, VALUES, method="lp", backend=_LPFails())
    assert any(f.startswith("lp-relaxation->milp: failed") for f in r.stats.fallbacks)
    ref = bundle_auction(BUNDLES, VALUES)
    assert r.status == "optimal" and r.objective == pytest.approx(ref.objective, abs=1e-9)


def test_the_nash_plan_is_data():
    from fairalloc.auctions.nash import nash_plan

    assert describe(nash_plan()) == (
        "knapsack-relaxation", "market!", "count-target", "count-milp!")
