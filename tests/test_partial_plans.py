"""The partial allocation mechanism on the one plan driver (issue #27): the PF market and each
leave-one-out market run as `fairalloc.plan` plans (`fairalloc.auctions.pa_plan`), every
hand-over is reachable through `fairalloc.auctions.Tuning` (no private patch), and every plan
answers as the default one does, within the certificates' own bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.auctions import Tuning
from fairalloc.auctions.pa_plan import loo_plan, pf_plan
from fairalloc.plan import describe

U3 = [[2.0, 1.0, 0.5], [1.0, 1.0, 1.0], [0.2, 3.0, 1.0]]
#: one tuning per hand-over edge of the plans (and both leave-one-out edges at once)
EDGES = {
    "pf-market->pf-warm-search": Tuning(pf_market_solves=0),
    "loo-batched-ipm->loo-warm": Tuning(loo_batch=0),
    "loo-warm->loo-cold": Tuning(loo_warm_rounds=0),
}


def test_plans_are_data_ending_in_an_exact_strategy():
    assert describe(pf_plan(Tuning())) == ("pf-market", "pf-warm-search!")
    assert describe(loo_plan("warm", Tuning())) == ("loo-batched-ipm", "loo-warm", "loo-cold!")
    assert describe(loo_plan("cold", Tuning())) == ("loo-cold!",)


@pytest.mark.parametrize("edge", sorted(EDGES))
def test_each_fallback_edge_is_reachable_through_tuning(edge):
    ref = fa.partial_allocation(U3)
    assert not any(f.startswith(edge + ": Tuning.") for f in ref.stats.fallbacks)
    r = fa.partial_allocation(U3, tuning=EDGES[edge])
    source, target = edge.split("->")
    assert any(f.startswith(edge + ": Tuning.") for f in r.stats.fallbacks), r.stats.fallbacks
    assert source in r.stats.path and target in r.stats.path
    assert r.certificate.ok and r.status == "optimal"
    _assert_same_answer(r, ref)


def test_both_leave_one_out_edges_end_in_the_exact_cold_solve():
    r = fa.partial_allocation(U3, tuning=Tuning(loo_batch=0, loo_warm_rounds=0))
    assert r.stats.path[-3:] == ("loo-batched-ipm", "loo-warm", "loo-cold")
    assert "fisher_market" not in r.stats.path  # steps are the plan's, not the sub-calls'
    _assert_same_answer(r, fa.partial_allocation(U3))


def test_path_stays_short_and_fallbacks_are_counted():
    U = np.random.default_rng(11).uniform(0.0, 1.0, (80, 5))
    r = fa.partial_allocation(U, tuning=Tuning(loo_batch=0))
    assert len(r.stats.path) <= 4
    assert r.stats.fallbacks[0] == "loo-batched-ipm->loo-warm: Tuning.loo_batch is 0 (×80)"


def test_tuning_is_validated():
    with pytest.raises(fa.InputError) as err:
        fa.partial_allocation(U3, tuning={"loo_batch": 0})
    assert err.value.argument == "tuning"
    with pytest.raises(fa.InputError) as err:
        Tuning(pf_market_solves=2)
    assert err.value.argument == "tuning.pf_market_solves"


def _assert_same_answer(a, b):
    """Two certified answers of one instance agree within their certificates: the PF
    utilities within ``sqrt(2 g)`` (relative; unit budgets) of each PF gap ``g``, each log
    fraction within the PF gaps, the leave-one-out gaps and the utilities' bounds."""
    ga, gb = a.certificate.gap, b.certificate.gap
    util = math.sqrt(2 * ga) + math.sqrt(2 * gb) + 1e-12
    np.testing.assert_array_less(np.abs(np.log(a.pf_utility / b.pf_utility)), util)
    bound = ga + gb + a.loo_gap + b.loo_gap + 2 * util
    np.testing.assert_array_less(np.abs(np.log(a.fraction / b.fraction)), bound)


@settings(deadline=None, max_examples=15)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), m=st.integers(1, 5),
       which=st.sampled_from([*EDGES.values(), Tuning(loo_batch=0, loo_warm_rounds=0),
                              Tuning(loo_batch=3, pf_polish_rounds=0)]),
       method=st.sampled_from(["warm", "cold"]))
def test_every_plan_answers_as_the_default_one(seed, n, m, which, method):
    rng = np.random.default_rng(seed)
    U = rng.uniform(0.0, 1.0, (n, m)) * (rng.random((n, m)) < 0.7)
    U[np.arange(n), rng.integers(0, m, n)] += 0.1  # every agent values some good
    ref = fa.partial_allocation(U, method=method)
    r = fa.partial_allocation(U, method=method, tuning=which)
    assert r.certificate.ok
    _assert_same_answer(r, ref)
