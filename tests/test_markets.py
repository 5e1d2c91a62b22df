"""Eisenberg-Gale markets: hand-checked equilibria, method agreement, composition, errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import ClarabelBackend
from fairalloc.properties import check_market
from fairalloc.testing.strategies import budgets, supplies, utilities


# --- hand-checked equilibria ------------------------------------------------------------------
def test_symmetric_two_buyers_split_goods_at_price_one() -> None:
    r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]])
    np.testing.assert_allclose(r.allocation, np.eye(2), atol=1e-7)
    np.testing.assert_allclose(r.prices, [1.0, 1.0], rtol=1e-7)
    np.testing.assert_allclose(r.utility, [2.0, 2.0], rtol=1e-7)
    assert r.certificate.ok and r.gap >= 0


@pytest.mark.parametrize("method", ["fast", "conic", "cvxpy"])
def test_linear_market_with_budgets_matches_hand_solution(method: str) -> None:
    # prices p1 = p2 = 3 (= total budget / total supply); buyer 0 buys only good 0, buyer 1
    # only good 1, buyer 2 is indifferent and takes the rest: spending 1, 2 and 3.
    r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0], [1.0, 1.0]], budget=[1, 2, 3], method=method)
    np.testing.assert_allclose(r.prices, [3.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(r.allocation, [[1 / 3, 0], [0, 2 / 3], [2 / 3, 1 / 3]], atol=1e-6)
    np.testing.assert_allclose(r.spending, [1, 2, 3], rtol=1e-6)
    assert r.stats.method == method


@pytest.mark.parametrize("method", ["conic", "cvxpy"])
def test_leontief_market_matches_hand_solution(method: str) -> None:
    # 2u0 + u1 <= 1, u0 + 2u1 <= 1 -> u = 1/3 each; u_i = B_i / (a_i . p) gives p = (1, 1).
    r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]], kind="leontief", method=method)
    np.testing.assert_allclose(r.utility, [1 / 3, 1 / 3], rtol=1e-7)
    np.testing.assert_allclose(r.prices, [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(r.allocation, [[2 / 3, 1 / 3], [1 / 3, 2 / 3]], rtol=1e-6)


def test_leontief_ignores_goods_a_buyer_does_not_need() -> None:
    # buyer 0 needs only good 0; buyer 1 needs both. Good 1 is not scarce -> price 0.
    r = fa.fisher_market([[1.0, 0.0], [1.0, 0.5]], kind="leontief")
    np.testing.assert_allclose(r.utility, [0.5, 0.5], rtol=1e-6)
    np.testing.assert_allclose(r.prices, [2.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("method", ["fast", "conic", "cvxpy"])
def test_volatile_market_prices_per_round(method: str) -> None:
    u = np.array([[[1.0, 0.0]], [[1.0, 1.0]]])  # buyer 0 only values round 0
    r = fa.volatile_fisher_market(u, method=method)
    assert r.allocation.shape == (2, 1, 2) and r.prices.shape == (1, 2)
    np.testing.assert_allclose(r.allocation[:, 0, :], [[1, 0], [0, 1]], atol=1e-5)
    np.testing.assert_allclose(r.prices, [[1.0, 1.0]], rtol=1e-5)


def test_volatile_linear_market_is_static_market_over_resource_rounds() -> None:
    # Shockwave App. D.1: relabel (resource, round) as one good.
    rng = np.random.default_rng(3)
    u = rng.random((7, 2, 3))
    s = rng.random((2, 3)) + 0.5
    b = rng.random(7) + 0.5
    vol = fa.volatile_fisher_market(u, b, s)
    stat = fa.fisher_market(u.reshape(7, 6), b, s.reshape(6))
    np.testing.assert_allclose(vol.prices.reshape(6), stat.prices, rtol=1e-6)
    np.testing.assert_allclose(vol.objective, stat.objective, rtol=1e-9, atol=1e-9)


def test_volatile_leontief_sums_per_round_levels() -> None:
    # one buyer, 2 rounds, demand (1, 1) in round 0 and (2, 0) in round 1, supply 1:
    # levels 1 and 0.5 -> U = 1.5; bundles differ per round.
    a = np.array([[[1.0, 2.0], [1.0, 0.0]]])
    r = fa.volatile_fisher_market(a, kind="leontief")
    np.testing.assert_allclose(r.utility, [1.5], rtol=1e-6)
    np.testing.assert_allclose(r.allocation[0], [[1.0, 1.0], [1.0, 0.0]], atol=1e-6)


# --- methods agree and are certified ----------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_fast_conic_and_cvxpy_agree(seed: int) -> None:
    rng = np.random.default_rng(seed)
    u = rng.random((40, 6))
    u[u < 0.4] = 0
    u[:, 0] += 0.05
    b = rng.random(40) + 0.2
    s = rng.random(6) + 0.5
    res = {m: fa.fisher_market(u, b, s, method=m) for m in ("fast", "conic", "cvxpy")}
    ref = res["cvxpy"].objective
    for r in res.values():
        assert r.certificate.ok
        assert abs(r.objective - ref) <= 1e-6 * max(1.0, abs(ref))
        np.testing.assert_allclose(r.prices, res["fast"].prices, rtol=1e-4, atol=1e-6)


def test_fast_path_reaches_tight_absolute_gap_at_moderate_size() -> None:
    rng = np.random.default_rng(0)
    r = fa.fisher_market(rng.random((600, 30)))
    assert r.stats.method == "fast"
    assert r.gap <= 1e-6


def test_warm_start_gives_same_equilibrium() -> None:
    rng = np.random.default_rng(5)
    u = rng.random((300, 20))
    cold = fa.fisher_market(u, method="fast")
    warm = fa.fisher_market(u[1:], method="fast", warm_start=cold.prices)
    ref = fa.fisher_market(u[1:], method="conic")
    assert abs(warm.objective - ref.objective) <= 1e-6 * abs(ref.objective)


class _Sloppy(ClarabelBackend):
    """A conic backend whose answers are off: half the allocation, three times the prices
    (or, with ``garbage``, a uniform allocation and made-up prices)."""

    def __init__(self, garbage: bool = False) -> None:
        super().__init__()
        self.garbage = garbage

    def _solve_conic(self, prog, **kw):  # type: ignore[no-untyped-def]
        sol = super()._solve_conic(prog, **kw)
        x, z = 0.5 * sol.x, sol.z.copy()
        z[:prog.nonneg] *= 3.0
        if self.garbage:
            x = np.full_like(sol.x, 0.1)
            z[:prog.nonneg] = np.linspace(1.0, 50.0, prog.nonneg)
        return dataclasses.replace(sol, x=x, z=z)


def test_sloppy_solver_output_is_repaired_by_the_polish() -> None:
    u = [[1.0, 2.0], [2.0, 1.0], [1.0, 1.0]]
    ref = fa.fisher_market(u, method="cvxpy")
    for garbage in (False, True):
        r = fa.fisher_market(u, method="conic", backend=_Sloppy(garbage))
        # two certified optima agree to their certified gaps (not to one CPU's 1e-7)
        assert r.certificate.ok and abs(r.objective - ref.objective) <= \
            r.certificate.gap + ref.certificate.gap + 1e-12 * abs(ref.objective)
        # the support polish made the point exact; no slower path was needed
        assert r.stats.path == ("conic", "forest-polish") and r.stats.fallbacks == ()


@pytest.mark.parametrize("kind", ["linear", "leontief"])
def test_certificate_failure_is_an_error(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    # a solver that answers garbage, and linear algebra that cannot polish it: every path
    # (polishes, price-scaled re-solves) fails, and the failed certificate is an error
    import scipy.sparse.linalg as sla

    monkeypatch.setattr(sla, "spsolve", lambda A, b, *a, **k: np.full(np.shape(b), np.nan))
    monkeypatch.setattr(np.linalg, "lstsq",
                        lambda A, b, *a, **k: (np.full(np.shape(A)[1:], np.nan), None, 0, None))
    with pytest.raises(fa.CertificateError) as info:
        fa.fisher_market([[1.0, 2.0], [2.0, 1.0], [1.0, 1.0]], method="conic", kind=kind,
                         backend=_Sloppy(garbage=True))
    assert info.value.certificate.gap > 0.5
    assert isinstance(info.value, fa.SolverError)


def test_dual_value_bounds_the_optimum() -> None:
    m = fa.FisherMarket([[1.0, 2.0], [3.0, 1.0]], budget=[1.0, 2.0])
    r = m.solve()
    for p in ([1.0, 1.0], [0.5, 3.0], r.prices):
        assert m.dual_value(p) >= r.objective - 1e-9
    # D(p) - P(x) at the returned prices is the certified gap: within the certificate's bound
    assert m.dual_value(r.prices) - r.objective <= \
        r.certificate.gap_tol * r.certificate.scale


# --- composition ------------------------------------------------------------------------------
def test_added_constraint_is_respected_and_certified() -> None:
    m = fa.FisherMarket([[2.0, 1.0], [1.0, 2.0]])
    m.add_constraint(m.x[0, 1] >= 0.25)
    r = m.solve()
    assert r.stats.method == "cvxpy" and r.certificate.kind == "conic"
    assert r.allocation[0, 1] >= 0.25 - 1e-7
    assert r.objective < fa.fisher_market([[2.0, 1.0], [1.0, 2.0]]).objective
    with pytest.raises(fa.InputError, match="method"):
        m.solve(method="fast")


def test_added_objective_term_shifts_allocation() -> None:
    import cvxpy as cp

    m = fa.FisherMarket([[1.0, 1.0], [1.0, 1.0]])
    m.add_objective_term(0.5 * cp.sum(m.x[0, :]))  # favour buyer 0 (linear = concave)
    r = m.solve()
    assert r.allocation[0].sum() > r.allocation[1].sum() + 0.1
    with pytest.raises(fa.InputError, match="concave"):
        m.add_objective_term(cp.square(m.x[0, 0]))
    with pytest.raises(fa.InputError, match="DCP"):
        m.add_constraint(cp.square(m.x[0, 0]) == 0.5)


def test_volatile_leontief_builder_composes() -> None:
    a = np.ones((2, 1, 3))
    m = fa.FisherMarket(a, kind="leontief")
    m.add_constraint(m.x[:, m.column(0, 2)] == 0)  # nothing may run in round 2
    r = m.solve()
    np.testing.assert_allclose(r.allocation[:, 0, 2], 0.0, atol=1e-7)
    # composed models are certified by the conic KKT certificate, without a polish
    np.testing.assert_allclose(r.utility, [1.0, 1.0], rtol=1e-4)


# --- equilibrium properties (hypothesis) --------------------------------------------------------
@given(data=st.data())
def test_linear_equilibrium_satisfies_every_property(data: st.DataObject) -> None:
    u = data.draw(utilities())
    b = data.draw(budgets(u.shape[0]))
    s = data.draw(supplies(u.shape[1:]))
    r = fa.fisher_market(u, b, s)
    checks = check_market(r, u, supply=s)
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}


@given(data=st.data())
def test_volatile_linear_equilibrium_satisfies_every_property(data: st.DataObject) -> None:
    u = data.draw(utilities(n=(1, 4), m=(1, 2), rounds=3))
    b = data.draw(budgets(u.shape[0]))
    r = fa.volatile_fisher_market(u, b)
    checks = check_market(r, u)
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}


@given(data=st.data())
def test_leontief_equilibrium_satisfies_every_property(data: st.DataObject) -> None:
    a = data.draw(utilities(m=(1, 3)))
    b = data.draw(budgets(a.shape[0]))
    r = fa.fisher_market(a, b, kind="leontief")
    checks = check_market(r, a, kind="leontief")
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}


@given(data=st.data())
def test_volatile_leontief_equilibrium_satisfies_every_property(data: st.DataObject) -> None:
    # ties between rounds make this dual non-smooth; the support Newton polish makes the
    # equilibrium exact (formulations/volatile_fisher_market.md)
    a = data.draw(utilities(n=(1, 4), m=(1, 2), rounds=2))
    r = fa.volatile_fisher_market(a, kind="leontief")
    checks = check_market(r, a, kind="leontief", tol=1e-6)
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}


@given(u=utilities())
def test_equal_budgets_give_sharing_incentive(u: np.ndarray) -> None:
    # proofs/sharing_incentive.md: with equal budgets every buyer can afford supply / n
    r = fa.fisher_market(u)
    own = r.utility
    share = u @ np.ones(u.shape[1]) / u.shape[0]
    assert np.all(own >= share - 1e-6 * np.maximum(1, share))


# --- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"utility": [[1.0, np.nan]]}, r"utility\[0, 1\] is nan"),
        ({"utility": [[1.0, -1.0]]}, r"utility\[0, 1\] is -1"),
        ({"utility": [[1.0, 0.0], [0.0, 0.0]]}, r"utility\[1\] is all zero"),
        ({"utility": np.zeros((0, 2))}, "utility is empty"),
        ({"utility": [1.0, 2.0]}, "utility must have 2"),
        ({"utility": [[1.0]], "budget": [-1.0]}, r"budget\[0\] is -1"),
        ({"utility": [[1.0]], "budget": [0.0]}, r"budget\[0\] is 0"),
        ({"utility": [[1.0]], "budget": [1.0, 1.0]}, "budget has shape"),
        ({"utility": [[1.0, 1.0]], "supply": [0.0, 0.0]}, "supply is all zero"),
        ({"utility": [[1.0, 1.0]], "supply": [1.0, np.inf]}, r"supply\[1\] is inf"),
        ({"utility": [[1.0, 0.0], [0.0, 1.0]], "supply": [1.0, 0.0]}, "buyer 1 values only"),
        ({"utility": [[1.0]], "kind": "cobb"}, "kind must be one of"),
        ({"utility": [[1.0]], "method": "magic"}, "method must be one of"),
        ({"utility": [[1.0]], "kind": "leontief", "method": "fast"}, "linear markets"),
        ({"utility": [[1.0]], "gap_tol": -1}, "gap_tol"),
    ],
)
def test_bad_input_raises_input_error(kwargs: dict, match: str) -> None:
    with pytest.raises(fa.InputError, match=match) as info:
        fa.fisher_market(**kwargs)
    assert isinstance(info.value, ValueError)


def test_volatile_market_needs_three_dimensions() -> None:
    with pytest.raises(fa.InputError, match="utility must have 3"):
        fa.volatile_fisher_market([[1.0]])
    with pytest.raises(fa.InputError, match="supply has shape"):
        fa.volatile_fisher_market(np.ones((2, 1, 3)), supply=np.ones((1, 2)))


def test_inputs_are_not_mutated_and_results_are_read_only() -> None:
    u = np.array([[2.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, 2.0])
    before = (u.copy(), b.copy())
    r = fa.fisher_market(u, b)
    np.testing.assert_array_equal(u, before[0])
    np.testing.assert_array_equal(b, before[1])
    with pytest.raises(ValueError):
        r.allocation[0, 0] = 5.0
    with pytest.raises(AttributeError):
        r.objective = 1.0  # type: ignore[misc]


def test_result_table_and_repr() -> None:
    pytest.importorskip("pandas")
    r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]], budget=[1.0, 2.0])
    df = r.to_frame()
    assert list(df.columns[:3]) == ["budget", "utility", "spending"]
    assert df.shape == (2, 5)
    assert "MarketResult(" in repr(r) and "gap=" in repr(r)
    vol = fa.volatile_fisher_market(np.ones((2, 1, 2))).to_frame()
    assert "x[0,1]" in vol.columns


@pytest.mark.parametrize("u", [[[2.54747941, 2.55444442], [3.0, 4.0]], [[1.0]], [[2.0], [1.0]]])
def test_small_supports_polish_without_error(u: list) -> None:
    # regression: a one-edge support forest made the edge lookup return a sparse matrix
    fast = fa.fisher_market(u, method="fast")
    ref = fa.fisher_market(u, method="cvxpy")
    assert abs(fast.objective - ref.objective) <= \
        fast.certificate.gap + ref.certificate.gap + 1e-12 * abs(ref.objective)
    assert all(check_market(fast, u).values())


def test_degenerate_volatile_leontief_market_gets_exact_prices() -> None:
    # every good sold out, but good (0, round 0) has equilibrium price 0: the support Newton
    # polish must not keep the interior-point prices (buyer 2 overspent by 5e-5)
    a = np.array([[[0.5, 1.0], [1.0, 0.0]], [[1.0, 0.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]])
    r = fa.volatile_fisher_market(a, kind="leontief")
    assert r.stats.path == ("conic", "support-newton-polish")
    np.testing.assert_allclose(r.prices, [[0.0, 1.0], [1.0, 1.0]], atol=1e-12)
    np.testing.assert_allclose(r.spending, r.budget, rtol=1e-12)
    checks = check_market(r, a, kind="leontief", tol=1e-9)
    assert all(checks.values()), {k: v.message for k, v in checks.items() if not v}
