"""The interior point on the prices as the exact solve of linear markets whose buyers have few
edges (`fairalloc.markets.ipm.ipm_edge_form`, path steps ``ipm`` / ``restricted-ipm``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.markets import Tuning
from fairalloc.markets.engine import EdgeForm, EngineLog, edge_starts
from fairalloc.markets.ipm import IPM_MAX_PAIRS_PER_EDGE, ipm_edge_form, ipm_fits
from fairalloc.markets.strategies import (
    FastContext,
    MarketPoint,
    fast_context,
    fast_plan,
    point_certificate,
    run_market_plan,
)
from fairalloc.plan import Strategy
from fairalloc.tolerances import FEAS_TOL, GAP_TOL


def _sparse_market(seed: int, n: int = 3000, m: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Each buyer values 1 or 2 goods (the families benchmark's ``sparse`` market)."""
    rng = np.random.default_rng(seed)
    keep = np.zeros((n, m), dtype=bool)
    keep[np.arange(n), rng.integers(0, m, n)] = True
    two = rng.random(n) < 0.5
    keep[np.arange(n)[two], rng.integers(0, m, n)[two]] = True
    return np.where(keep, rng.lognormal(0.0, 1.0, (n, m)), 0.0), rng.uniform(0.5, 2.0, n)


def test_pair_count_decides_which_markets_fit() -> None:
    # buyer 0 owns 2 edges, buyer 1 one: 2^2 + 1^2 = 5 Schur entries for 3 edges
    assert ipm_fits(np.array([0, 0, 1]), 2)
    # one buyer owning k edges gathers k^2 entries: k = 8 is the largest that fits
    assert ipm_fits(np.zeros(int(IPM_MAX_PAIRS_PER_EDGE), dtype=np.int64), 1)
    assert not ipm_fits(np.zeros(int(IPM_MAX_PAIRS_PER_EDGE) + 1, dtype=np.int64), 1)
    assert not ipm_fits(np.zeros(0, dtype=np.int64), 1)


def test_edge_form_hand_checked_with_an_unused_resource() -> None:
    # two buyers (budgets 1 and 3) share one good of supply 1; good 1 is valued by nobody.
    # Equilibrium: price 4 = total budget, spending in proportion to budgets; good 1 price 0.
    # Edge units: buyer 1's edge uses 2 units of good 0 per level (so its level is half).
    out = ipm_edge_form(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 2.0]),
                        np.array([1.0, 1.0]), np.array([1.0, 3.0]), np.array([1.0, 5.0]),
                        np.ones(2))
    assert out is not None
    z, p, iters = out
    np.testing.assert_allclose(p, [4.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(z, [0.25, 0.375], rtol=1e-8)
    assert iters > 0


def test_sparse_market_takes_the_ipm_and_agrees_with_the_conic_path() -> None:
    U, B = _sparse_market(0)
    r = fa.fisher_market(U, B)
    assert r.stats.path[:3] == ("fast", "proportional-response", "ipm")
    assert r.stats.fallbacks == ()
    assert r.certificate.ok and r.stats.solves == 0  # no backend solve
    _assert_equilibrium(U, B, r)
    # the whole conic solve agrees to its own certified gap (it is the less exact of the two)
    ref = fa.fisher_market(U, B, method="conic")
    assert ref.certificate.ok
    assert abs(r.objective - ref.objective) <= ref.certificate.gap + 1e-9 * B.sum()


def _assert_equilibrium(U: np.ndarray, B: np.ndarray, r: fa.MarketResult) -> None:
    """Checked from the definition: every budget is spent, every good with a positive price
    clears, and buyers spend only on goods of their best bang-per-buck."""
    X, p = np.asarray(r.allocation), np.asarray(r.prices)
    spend = X * p
    np.testing.assert_allclose(spend.sum(axis=1), B, rtol=1e-9)
    np.testing.assert_allclose(X.sum(axis=0)[p > 0], 1.0, rtol=1e-9)
    bpb = np.where(U > 0, U / np.where(p > 0, p, np.inf), 0.0)
    off_best = bpb < bpb.max(axis=1, keepdims=True) * (1 - 1e-9)
    assert spend[off_best].sum() <= 1e-9 * B.sum()


def test_dense_restricted_market_takes_the_restricted_ipm() -> None:
    rng = np.random.default_rng(3)
    r = fa.fisher_market(rng.lognormal(0.0, 1.0, (400, 30)), rng.uniform(0.5, 2.0, 400))
    assert r.stats.path[:3] == ("fast", "proportional-response", "restricted-ipm")
    assert r.certificate.ok


def test_unconverged_ipm_hands_over_to_the_conic_backend(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    U, B = _sparse_market(1, n=1500, m=20)

    def not_positive_definite(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("Matrix is not positive definite")

    # every Schur system of the interior point breaks down (numpy's Cholesky test fails):
    # it stops without converging
    monkeypatch.setattr(np.linalg, "cholesky", not_positive_definite)
    r = fa.fisher_market(U, B)
    assert "ipm->conic: the interior-point method did not converge" in r.stats.fallbacks
    assert "conic" in r.stats.path and r.stats.solves == 1
    assert r.certificate.ok


def test_uncertified_ipm_point_hands_over_to_the_conic_backend(
        monkeypatch: pytest.MonkeyPatch) -> None:
    U, B = _sparse_market(2, n=1500, m=20)
    owner, good = np.nonzero(U)
    C = sp.csc_matrix((np.ones(owner.size), (good, np.arange(owner.size))),
                      shape=(U.shape[1], owner.size))
    form = EdgeForm(owner, U[owner, good], C, B, np.ones(U.shape[1]),
                    edge_starts(owner, U.shape[0]))
    ctx = fast_context(form, gap_tol=GAP_TOL, feas_tol=FEAS_TOL, warm_prices=None,
                       time_limit=None, log=EngineLog(), tuning=Tuning(restricted=False))

    def off(c: FastContext) -> MarketPoint:
        """The interior point's step, its point moved far from the optimum."""
        out = ipm_edge_form(form.owner, form.C.indices, form.C.data, form.weight,
                            form.budget, form.supply, c.p0)
        assert out is not None
        return c.point(0.5 * out[0], 3.0 * out[1], out[2], 0, "ipm")

    # the fast plan's ipm step with that point (its other steps as they are)
    plan = tuple(Strategy("ipm", off, point_certificate, FastContext.whole_ipm)
                 if s.name == "ipm" else s for s in fast_plan(ctx))
    assert [s.name for s in plan if s.applies(ctx)] == ["ipm", "conic"]
    # no rescue by a polish: the support systems it solves (scipy's sparse LU, numpy's least
    # squares) give no answer
    import scipy.sparse.linalg as sla

    monkeypatch.setattr(sla, "spsolve", lambda A, b, *a, **k: np.full(np.shape(b), np.nan))
    monkeypatch.setattr(np.linalg, "lstsq",
                        lambda A, b, *a, **k: (np.full(np.shape(A)[1:], np.nan), None, 0, None))
    point, _, solves = run_market_plan(plan, ctx)
    # the plan driver hands over with the certificate's verdict (`fairalloc.plan.run_plan`)
    assert ctx.log.fallbacks[0].startswith("ipm->conic: did not certify (relative gap"), \
        ctx.log.fallbacks
    assert not ctx.tried[0].cert.ok and ctx.tried[0].step == "ipm"
    assert point.cert.ok and point.step == "conic" and solves == 1
    monkeypatch.undo()
    ref = fa.fisher_market(U, B, method="conic", symmetry=False)
    # the same market in the same (unit) units: two certified optima agree to their gaps
    assert abs(point.cert.primal_value - ref.certificate.primal_value) <= \
        point.cert.gap + ref.certificate.gap + 1e-12 * B.sum()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), m=st.integers(1, 8),
       scale=st.sampled_from([1e-6, 1.0, 1e6]))
def test_fast_path_with_ipm_matches_conic_on_sparse_markets(seed: int, n: int, m: int,
                                                             scale: float) -> None:
    U, B = _sparse_market(seed, n, m)
    r = fa.fisher_market(U, scale * B, method="fast")
    ref = fa.fisher_market(U, scale * B, method="conic")
    assert r.certificate.ok and ref.certificate.ok
    # two certified optima agree to their certified gaps (the objective sum B log u carries
    # the budgets' scale in its rounding)
    assert abs(r.objective - ref.objective) <= r.certificate.gap + ref.certificate.gap + \
        1e-12 * scale * B.sum() * (1 + abs(np.log(scale)))
    np.testing.assert_allclose(r.spending, ref.spending, rtol=1e-6, atol=1e-9 * scale)
