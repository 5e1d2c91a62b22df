"""Exact symmetry reduction of Eisenberg-Gale markets (identical buyers merge, budgets add) and
the dual interior point of static Leontief markets: hand-checked equilibria, reduced vs
unreduced agreement (hypothesis), certificates on the original market, near-ties, fallbacks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fairalloc as fa
import fairalloc.markets.symmetry as symmetry_mod
from fairalloc.errors import InputError
from fairalloc.markets import Tuning
from fairalloc.markets.engine import EngineLog
from fairalloc.plan import Strategy, describe, run_plan
from fairalloc.properties import bundle_values, check_market
from fairalloc.results import Certificate
from fairalloc.testing.strategies import budgets, utilities
from fairalloc.tolerances import FEAS_TOL, GAP_TOL

U3 = [[2.0, 1.0], [2.0, 1.0], [1.0, 2.0]]  # buyers 0 and 1 identical
B3 = [1.0, 3.0, 1.0]


# --- hand-checked equilibria ------------------------------------------------------------------
def test_linear_identical_buyers_hand_solution() -> None:
    # merged: buyer A (budget 4, utility (2, 1)) and buyer C (budget 1, utility (1, 2)).
    # A buys all of good 0 and some of good 1, so 2/p0 = 1/p1; p0 + p1 = 5 (budgets) gives
    # p = (10/3, 5/3). A spends 4 = 10/3 + 0.4 * 5/3 (0.4 of good 1), C spends 1 on 0.6 of
    # good 1 (its bang-per-buck 2/p1 = 1.2 > 1/p0 = 0.3). Utilities: A 2.4 -> split 1:3 into
    # 0.6 and 1.8; C 1.2. Bundles split in proportion to budgets.
    r = fa.fisher_market(U3, B3)
    np.testing.assert_allclose(r.prices, [10 / 3, 5 / 3], rtol=1e-9)
    np.testing.assert_allclose(r.utility, [0.6, 1.8, 1.2], rtol=1e-9)
    np.testing.assert_allclose(r.allocation, [[0.25, 0.1], [0.75, 0.3], [0.0, 0.6]], atol=1e-9)
    np.testing.assert_allclose(r.spending, B3, rtol=1e-9)
    assert r.certificate.ok and r.stats.classes == 2
    assert r.stats.path[0] == "symmetry:2" and r.stats.fallbacks == ()
    plain = fa.fisher_market(U3, B3, symmetry=False)
    assert plain.stats.classes is None and not plain.stats.path[0].startswith("symmetry")
    np.testing.assert_allclose(plain.prices, r.prices, rtol=1e-9)
    np.testing.assert_allclose(plain.utility, r.utility, rtol=1e-9)


def test_leontief_identical_buyers_hand_solution() -> None:
    # merged: A (budget 4, demand (2, 1)), C (budget 1, demand (1, 2)). With p1 = 0:
    # u_A = 4 / (2 p0), u_C = 1 / p0 and good 0 clears: 2 u_A + u_C = 5 / p0 = 1, so p0 = 5,
    # u_A = 0.4 (split 0.1, 0.3), u_C = 0.2; good 1 is used 0.4 + 0.4 = 0.8 < 1 (price 0).
    r = fa.fisher_market(U3, B3, kind="leontief")
    np.testing.assert_allclose(r.prices, [5.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(r.utility, [0.1, 0.3, 0.2], rtol=1e-9)
    np.testing.assert_allclose(r.allocation, [[0.2, 0.1], [0.6, 0.3], [0.2, 0.4]], rtol=1e-9)
    assert r.certificate.ok and r.stats.classes == 2 and r.stats.path[0] == "symmetry:2"


def test_all_identical_buyers_get_budget_shares_at_one_price() -> None:
    # one class: the single merged buyer buys everything; p_j s_j sums to the budgets and
    # every buyer gets the fraction B_i / sum(B) of each good
    u = np.tile([3.0, 1.0, 2.0], (5, 1))
    b = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    r = fa.fisher_market(u, b)
    np.testing.assert_allclose(r.allocation, np.outer(b / b.sum(), np.ones(3)), rtol=1e-9)
    np.testing.assert_allclose(r.prices, [7.5, 2.5, 5.0], rtol=1e-9)  # proportional to u
    assert r.stats.classes == 1 and r.certificate.ok


# --- reduced vs unreduced (hypothesis) ----------------------------------------------------------
@st.composite
def repeated_rows(draw: st.DrawFn, kind_rounds: int | None = None) -> np.ndarray:
    """Utilities whose rows repeat: a few distinct rows, each used by one or more buyers."""
    base = draw(utilities(n=(1, 3), m=(1, 3), rounds=kind_rounds))
    idx = draw(st.lists(st.integers(0, base.shape[0] - 1), min_size=2, max_size=6))
    return base[np.array(idx)]


def _agree(kind: str, u: np.ndarray, b: np.ndarray, volatile: bool = False) -> None:
    call = fa.volatile_fisher_market if volatile else fa.fisher_market
    red = call(u, b, kind=kind)
    full = call(u, b, kind=kind, symmetry=False)
    assert red.certificate.ok and full.certificate.ok
    n_classes = np.unique(u.reshape(u.shape[0], -1), axis=0).shape[0]
    reduced = n_classes <= symmetry_mod.REDUCE_MAX_SHARE * u.shape[0]
    assert red.stats.classes == (n_classes if reduced else None)
    # utilities are unique (the EG objective is strictly concave in them); so are linear prices
    np.testing.assert_allclose(red.utility, full.utility, rtol=1e-6)
    if kind == "linear":
        np.testing.assert_allclose(red.prices, full.prices, rtol=1e-6, atol=1e-9)
    assert red.objective == pytest.approx(full.objective, abs=1e-6 * b.sum())
    # certified on the original market: D(p) - P(x) from the original data
    market = fa.FisherMarket(u, b, kind=kind)
    assert market.dual_value(red.prices) - red.objective <= 1e-6 * b.sum()
    checks = check_market(red, u, kind=kind)
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}


@given(u=repeated_rows(), data=st.data())
def test_linear_reduced_and_unreduced_agree(u: np.ndarray, data: st.DataObject) -> None:
    _agree("linear", u, data.draw(budgets(u.shape[0])))


@given(a=repeated_rows(), data=st.data())
def test_leontief_reduced_and_unreduced_agree(a: np.ndarray, data: st.DataObject) -> None:
    _agree("leontief", a, data.draw(budgets(a.shape[0])))


@given(u=repeated_rows(kind_rounds=2), data=st.data())
def test_volatile_linear_reduced_and_unreduced_agree(u: np.ndarray,
                                                     data: st.DataObject) -> None:
    _agree("linear", u, data.draw(budgets(u.shape[0])), volatile=True)


# --- what is (not) merged ----------------------------------------------------------------------
def test_near_ties_merge_only_through_the_original_markets_certificate() -> None:
    # row 1 differs from rows 0, 2, 3 in the last bit: no exact class holds it, the near
    # classes (relative 1e-8) do; the merged market is solved once and its expansion is
    # certified on the original market (before: 2 exact classes, path "symmetry:2")
    u = np.array([[1.0, 2.0], [np.nextafter(1.0, 2.0), 2.0], [1.0, 2.0], [1.0, 2.0]])
    r = fa.fisher_market(u)
    assert r.stats.path[0] == "near-symmetry:1" and r.stats.classes == 1
    assert r.certificate.ok and not r.stats.fallbacks
    full = fa.fisher_market(u, symmetry=False)
    np.testing.assert_allclose(r.utility, full.utility, rtol=1e-6)
    u[1, 0] = 1.001  # far beyond round-off: only the exact classes (rows 0, 2, 3) merge
    r = fa.fisher_market(u)
    assert r.stats.path[0] == "symmetry:2" and r.stats.classes == 2
    np.testing.assert_allclose(r.utility, fa.fisher_market(u, symmetry=False).utility,
                               rtol=1e-6)
    # the tie in one round only (volatile): different rows over the window, not merged
    v = np.array([[[1.0, 1.0]], [[1.0, 2.0]]])
    assert fa.volatile_fisher_market(v).stats.classes is None


@st.composite
def near_repeated_rows(draw: st.DrawFn) -> np.ndarray:
    """Repeated rows with a relative perturbation of at most 1e-10 per entry (round-off
    of a unit conversion or a profiler's copy): no exact class, near classes."""
    u = draw(repeated_rows())
    noise = draw(st.lists(st.integers(-10, 10), min_size=u.size, max_size=u.size))
    return u * (1.0 + 1e-11 * np.array(noise, dtype=float).reshape(u.shape))


@pytest.mark.parametrize("kind", ["linear", "leontief"])
@given(u=near_repeated_rows(), data=st.data())
def test_near_identical_buyers_agree_with_the_unreduced_market(
        kind: str, u: np.ndarray, data: st.DataObject) -> None:
    b = data.draw(budgets(u.shape[0]))
    red = fa.fisher_market(u, b, kind=kind)
    full = fa.fisher_market(u, b, kind=kind, symmetry=False)
    assert red.certificate.ok and full.certificate.ok
    near = symmetry_mod.near_buyer_classes(u)
    exact = symmetry_mod.buyer_classes(u)
    if near.num_classes < exact.num_classes and symmetry_mod.worth_reducing(near):
        assert red.stats.path[0] == f"near-symmetry:{near.num_classes}"
    np.testing.assert_allclose(red.utility, full.utility, rtol=1e-6)
    if kind == "linear":
        np.testing.assert_allclose(red.prices, full.prices, rtol=1e-6, atol=1e-9)
    market = fa.FisherMarket(u, b, kind=kind)
    assert market.dual_value(red.prices) - red.objective <= 1e-6 * b.sum()
    checks = check_market(red, u, kind=kind)
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}


@pytest.mark.parametrize("kind", ["linear", "leontief"])
def test_many_goods_with_round_off_noise_solve_as_one_class(kind: str) -> None:
    # issue #28's cliff: identical rows times 1 + 1e-9 N(0, 1) over many goods (no two rows
    # equal bit for bit) used to be solved buyer by buyer; they are one near class
    rng = np.random.default_rng(7)
    row = rng.uniform(0.5, 2.0, 40)
    u = np.tile(row, (300, 1)) * (1.0 + 1e-9 * rng.standard_normal((300, 40)))
    b = rng.uniform(1.0, 2.0, 300)
    r = fa.fisher_market(u, b, kind=kind)
    assert r.stats.path[0] == "near-symmetry:1" and r.certificate.ok
    full = fa.fisher_market(u, b, kind=kind, symmetry=False)
    np.testing.assert_allclose(r.utility, full.utility, rtol=1e-6)


def test_near_tolerance_is_a_share_of_the_gap_tolerance() -> None:
    # rows 1e-9 apart: merged at the defaults (1e-8 = 0.01 x 1e-6), not when the share is
    # 0 or the gap tolerance leaves no room (0.01 x 1e-9 = 1e-11); every result certified
    u = np.array([[1.0, 2.0], [1.0 + 1e-9, 2.0], [2.0, 1.0], [2.0, 1.0 + 1e-9]])
    assert fa.fisher_market(u).stats.path[0] == "near-symmetry:2"
    off = fa.fisher_market(u, tuning=Tuning(near_tie_share=0.0))
    tight = fa.fisher_market(u, gap_tol=1e-9)
    for r in (off, tight):
        assert r.stats.classes is None and r.certificate.ok
        assert not any(step.startswith("near-symmetry") for step in r.stats.path)


def test_near_classes_are_relative_per_entry() -> None:
    u = np.array([[1e-300, 5.0], [1e-300 * (1 + 1e-12), 5.0], [0.0, 5.0], [1.2e-300, 5.0]])
    cl = symmetry_mod.near_buyer_classes(u)
    assert cl.inverse.tolist() == [0, 0, 1, 2]  # relative per entry; zero only with zero
    assert symmetry_mod.near_buyer_classes(u, rel=0.5).inverse.tolist() == [0, 0, 1, 0]
    # every member is within rel of its class's leader, so within 2 rel of each other
    v = np.array([[1.0], [1.0 + 0.6e-8], [1.0 + 1.2e-8], [1.0 + 1.8e-8]])
    cl = symmetry_mod.near_buyer_classes(v)
    spread = [np.ptp(np.log(v[cl.inverse == c])) for c in range(cl.num_classes)]
    assert cl.num_classes == 2 and max(spread) <= 2 * symmetry_mod.NEAR_TIE_REL


def test_classes_removing_few_buyers_are_not_reduced() -> None:
    # 4 classes of 5 buyers (more than 3/4): solved buyer by buyer
    u = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0], [3.0, 1.0], [1.0, 3.0]])
    r = fa.fisher_market(u)
    assert r.stats.classes is None and r.certificate.ok


def test_budgets_do_not_split_classes() -> None:
    r = fa.fisher_market([[1.0, 2.0], [1.0, 2.0]], [1.0, 7.0])
    assert r.stats.classes == 1
    np.testing.assert_allclose(r.allocation[1], 7 * r.allocation[0], rtol=1e-12)


def test_composed_models_are_not_reduced() -> None:
    m = fa.FisherMarket(U3, B3)
    r = m.add_constraint(m.x[0, 1] >= 0.2).solve()
    assert r.stats.classes is None and r.allocation[0, 1] >= 0.2 - 1e-7


def test_warm_start_passes_to_the_reduced_market() -> None:
    cold = fa.fisher_market(U3, B3, method="fast")
    warm = fa.fisher_market(U3, B3, method="fast", warm_start=cold.prices)
    assert warm.stats.classes == 2 and warm.stats.method == "fast"
    np.testing.assert_allclose(warm.prices, cold.prices, rtol=1e-9)


def test_inputs_are_not_mutated() -> None:
    u, b, s = np.array(U3), np.array(B3), np.array([1.0, 2.0])
    before = (u.copy(), b.copy(), s.copy())
    fa.fisher_market(u, b, s)
    fa.fisher_market(u, b, s, kind="leontief")
    for x, y in zip((u, b, s), before, strict=True):
        np.testing.assert_array_equal(x, y)


def test_a_wrong_expansion_fails_the_original_markets_certificate() -> None:
    # the reduced market's expansion is certified on the original market: the Eisenberg-Gale
    # certificate (primal sum B log u against the dual bound D(p)) passes the right split and
    # rejects a wrong one, so a wrong expansion would hand over to the buyer-by-buyer solve
    market = fa.FisherMarket(U3, B3)
    r = market.solve()
    assert r.certificate.ok and r.stats.classes == 2
    b = np.asarray(B3)
    classes = symmetry_mod.buyer_classes(market.utility)
    bundles = np.zeros((classes.num_classes, 2))
    np.add.at(bundles, classes.inverse, r.allocation)  # each class's bundle
    bound = market.dual_value(r.prices)

    def relative_gap(alloc: np.ndarray) -> float:
        u = np.diag(bundle_values(U3, alloc))
        return (bound - float(b @ np.log(u))) / b.sum()

    right = symmetry_mod.expand_allocation(classes, bundles, b)
    np.testing.assert_allclose(right, r.allocation, rtol=1e-12)
    assert relative_gap(right) <= r.certificate.gap_tol
    even = classes.expand(bundles / classes.counts[:, None])  # split evenly, not by budget
    for wrong in (symmetry_mod.expand_allocation(classes, 0.5 * bundles, b), even):
        assert relative_gap(wrong) > 100 * r.certificate.gap_tol


# --- static Leontief: the dual interior point ---------------------------------------------------
def test_dual_method_matches_conic() -> None:
    rng = np.random.default_rng(3)
    a = rng.random((60, 5)) * (rng.random((60, 5)) < 0.7)
    a[np.arange(60), rng.integers(0, 5, 60)] += 0.5
    b = rng.uniform(0.5, 2.0, 60)
    dual = fa.fisher_market(a, b, kind="leontief", method="dual")
    conic = fa.fisher_market(a, b, kind="leontief", method="conic")
    assert dual.stats.path[0] == "dual" and dual.stats.fallbacks == () and dual.certificate.ok
    np.testing.assert_allclose(dual.utility, conic.utility, rtol=1e-7)
    # two certified optima agree to their certified gaps
    assert abs(dual.objective - conic.objective) <= \
        dual.certificate.gap + conic.certificate.gap + 1e-12 * abs(conic.objective)


@given(data=st.data())
def test_dual_method_agrees_with_conic(data: st.DataObject) -> None:
    a = data.draw(utilities(n=(1, 8), m=(1, 4)))
    b = data.draw(budgets(a.shape[0]))
    dual = fa.fisher_market(a, b, kind="leontief", method="dual", symmetry=False)
    conic = fa.fisher_market(a, b, kind="leontief", method="conic", symmetry=False)
    assert dual.stats.fallbacks == () and dual.certificate.ok  # the dual itself certified
    np.testing.assert_allclose(dual.utility, conic.utility, rtol=1e-6)
    checks = check_market(dual, a, kind="leontief")
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}


def test_auto_picks_the_dual_for_large_static_leontief_markets() -> None:
    rng = np.random.default_rng(4)
    a = rng.uniform(0.1, 1.0, (2500, 3))  # distinct rows: no reduction
    r = fa.fisher_market(a, kind="leontief")
    assert r.stats.method == "dual" and r.stats.path[0] == "dual" and r.certificate.ok
    assert r.stats.classes is None


def test_dual_that_does_not_converge_falls_back_to_conic() -> None:
    # no iteration allowed: the dual interior point stops unconverged and the plan hands over
    r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]], kind="leontief", method="dual",
                         tuning=Tuning(dual_max_iter=0))
    assert r.stats.path[:2] == ("dual", "conic") and r.certificate.ok
    assert r.stats.fallbacks[0].startswith("dual->conic")
    np.testing.assert_allclose(r.utility, [1 / 3, 1 / 3], rtol=1e-7)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"utility": [[1.0]], "method": "dual"}, "static Leontief"),
    ({"utility": np.ones((1, 1, 2)), "kind": "leontief", "method": "dual"}, "static Leontief"),
])
def test_dual_method_needs_a_static_leontief_market(kwargs: dict, match: str) -> None:
    u = np.asarray(kwargs.pop("utility"))
    call = fa.volatile_fisher_market if u.ndim == 3 else fa.fisher_market
    with pytest.raises(InputError, match=match):
        call(u, **kwargs)


def test_the_symmetry_plan_hands_an_uncertified_expansion_to_the_buyer_by_buyer_solve() -> None:
    # the plan's first step with an expansion that wastes half of every bundle, certified on
    # the original market (primal sum B log u against the dual bound at the equilibrium
    # prices): the driver hands over to the plan's exact tail, the market buyer by buyer
    market = fa.FisherMarket(U3, B3)
    classes = symmetry_mod.buyer_classes(market.utility)
    plan = symmetry_mod.symmetry_plan(classes)
    assert describe(plan) == ("symmetry:2", "items!")
    b = np.asarray(B3)
    ref = market.solve(symmetry=False)
    bound = market.dual_value(ref.prices)

    def wrong(ctx: symmetry_mod.SymmetryContext) -> symmetry_mod.Solved:
        out = symmetry_mod.solve_reduced(ctx)
        alloc = 0.5 * out.allocation
        primal = float(b @ np.log(np.diag(bundle_values(U3, alloc))))
        cert = Certificate("eisenberg_gale", primal, bound, bound - primal, 0.0,
                           gap_tol=GAP_TOL, feas_tol=FEAS_TOL, scale=float(b.sum()))
        return dataclasses.replace(out, allocation=alloc, cert=cert)

    def items() -> symmetry_mod.Solved:
        return symmetry_mod.Solved(ref.allocation, ref.prices, ref.certificate, 0, 0, "conic",
                                   None)

    log = EngineLog()
    ctx = symmetry_mod.SymmetryContext(market, classes, "auto", GAP_TOL, FEAS_TOL, None, None,
                                       log, Tuning(), items)
    found = run_plan((Strategy(plan[0].name, wrong, plan[0].certify), plan[1]), ctx, log,
                     what="market")
    assert found.strategy == "items" and found.certificate.ok and found.result.classes is None
    assert log.fallbacks[0].startswith("symmetry:2->items: did not certify (relative gap")
    assert [s.classes is not None for s in ctx.tried] == [True, False]
    np.testing.assert_allclose(found.result.allocation, ref.allocation)
