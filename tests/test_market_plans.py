"""The market solve plans (`fairalloc.markets.strategies`): chosen as data from the market's
shape, run by the one driver (`fairalloc.plan.run_plan`), the conic tail's point returned
uncertified for the caller to refine, and every strategy's work counted."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.markets import Tuning
from fairalloc.markets.engine import EdgeForm, EngineLog, edge_starts
from fairalloc.markets.leontief import DUAL
from fairalloc.markets.plain import INCUMBENT, PRICE_SCALED, PlainContext, plain_plan
from fairalloc.markets.strategies import (
    CONIC,
    MarketContext,
    MarketPoint,
    fast_context,
    fast_plan,
    point_certificate,
    run_market_plan,
)
from fairalloc.plan import Decline, Strategy, describe, run_plan
from fairalloc.results import Certificate
from fairalloc.solvelog import SolveLog
from fairalloc.tolerances import FEAS_TOL, GAP_TOL


def _linear_form(U: np.ndarray, B: np.ndarray) -> EdgeForm:
    """The edge form of a linear market with unit supplies (one edge per valued good)."""
    owner, good = np.nonzero(U)
    C = sp.csc_matrix((np.ones(owner.size), (good, np.arange(owner.size))),
                      shape=(U.shape[1], owner.size))
    return EdgeForm(owner, U[owner, good], C, B, np.ones(U.shape[1]),
                    edge_starts(owner, U.shape[0]))


def _live(ctx: MarketContext, plan: tuple[Strategy, ...]) -> list[str]:
    return [s.name for s in plan if s.applies(ctx)]


def _ctx(form: EdgeForm, log: EngineLog | None = None):  # type: ignore[no-untyped-def]
    return fast_context(form, gap_tol=GAP_TOL, feas_tol=FEAS_TOL, warm_prices=None,
                        time_limit=None, log=EngineLog() if log is None else log)


def test_the_fast_plan_is_chosen_by_the_market_shape() -> None:
    rng = np.random.default_rng(3)
    # dense: each buyer's cheapest edges are few, the restricted markets can win
    U, B = rng.lognormal(0.0, 1.0, (400, 30)), rng.uniform(0.5, 2.0, 400)
    ctx = _ctx(_linear_form(U, B))
    plan = fast_plan(ctx)
    assert describe(plan) == ("restricted-ipm", "ipm", "conic!")
    assert _live(ctx, plan) == ["restricted-ipm", "conic"]
    assert fa.fisher_market(U, B).stats.path[:3] == ("fast", "proportional-response",
                                                     "restricted-ipm")
    # sparse (1-2 goods per buyer): the restricted market keeps most edges, so the whole
    # market goes to the interior point on its prices; nothing is handed over
    keep = np.zeros((3000, 40), dtype=bool)
    keep[np.arange(3000), rng.integers(0, 40, 3000)] = True
    U2, B2 = np.where(keep, rng.lognormal(0.0, 1.0, keep.shape), 0.0), np.ones(3000)
    ctx2 = _ctx(_linear_form(U2, B2))
    assert _live(ctx2, fast_plan(ctx2)) == ["ipm", "conic"]
    r = fa.fisher_market(U2, B2)
    assert r.stats.path[:3] == ("fast", "proportional-response", "ipm")
    assert r.stats.fallbacks == () and r.certificate.ok


def test_the_restricted_step_is_logged_once_per_round() -> None:
    rng = np.random.default_rng(3)
    U, B = rng.lognormal(0.0, 1.0, (400, 30)), rng.uniform(0.5, 2.0, 400)
    log = EngineLog()
    ctx = _ctx(_linear_form(U, B), log)
    point, iterations, solves = run_market_plan(fast_plan(ctx), ctx)
    assert point.cert.ok and point.step == "fast"
    # the driver logs the plan step; the first round does not log it again
    rounds = sum(1 for s in log.steps if s.startswith("restricted-"))
    assert rounds == 1 and iterations > 0 and solves == 0  # the interior point: no backend


def _bad(ctx: MarketContext) -> MarketPoint:
    """A point that cannot certify: nobody gets anything (every utility 0, objective -inf);
    certified as it is (no polish), recorded like the engine's strategies record theirs."""
    z, p = np.zeros(ctx.form.num_edges), np.ones(ctx.form.supply.size)
    cert, prices = ctx.form.certificate(z, [p], gap_tol=ctx.gap_tol, feas_tol=ctx.feas_tol)
    point = MarketPoint(z, cert, prices, 3, 0, "bad")
    ctx.tried.append(point)
    return point


def _broken(ctx: MarketContext) -> MarketPoint:
    raise fa.SolverError("the backend failed", backend="none")


def test_an_uncertified_tail_point_is_returned_for_the_caller_to_refine() -> None:
    U = np.array([[2.0, 1.0], [1.0, 2.0]])
    ctx = MarketContext(_linear_form(U, np.ones(2)), GAP_TOL, FEAS_TOL, None, EngineLog(), [],
                        linear=True)
    point, iterations, solves = run_market_plan(
        (Strategy("bad", _bad, point_certificate, exact=True),), ctx)
    assert point.step == "bad" and not point.cert.ok and iterations == 3


def test_a_failed_tail_after_an_uncertified_point_raises_with_every_verdict() -> None:
    U = np.array([[2.0, 1.0], [1.0, 2.0]])
    log = EngineLog()
    ctx = MarketContext(_linear_form(U, np.ones(2)), GAP_TOL, FEAS_TOL, None, log, [],
                        linear=True)
    plan = (Strategy("bad", _bad, point_certificate),
            Strategy("broken", _broken, point_certificate, exact=True))
    with pytest.raises(fa.CertificateError) as info:
        run_market_plan(plan, ctx)
    assert [v.split(":")[0] for v in info.value.verdicts] == ["bad", "broken"]
    assert log.fallbacks[0].startswith("bad->broken: did not certify")


def test_the_leontief_dual_hands_over_to_the_conic_tail_with_the_work_counted() -> None:
    a = np.array([[2.0, 1.0], [1.0, 2.0]])
    # a Leontief buyer's edge consumes its bundle: C = a^T, one unit of utility per level
    form = EdgeForm(np.arange(2), np.ones(2), sp.csc_matrix(a.T), np.ones(2), np.ones(2),
                    np.arange(2))
    log = EngineLog()
    ctx = MarketContext(form, GAP_TOL, FEAS_TOL, None, log, [], linear=False)
    plan = (Strategy("bad", _bad, point_certificate), DUAL, CONIC)
    point, iterations, solves = run_market_plan(plan, ctx)
    assert point.step == "dual" and point.cert.ok and solves == 0
    assert iterations > 3  # the failed step's 3 iterations and the dual's own
    assert log.path[:2] == ("bad", "dual")
    assert log.fallbacks[0].startswith("bad->dual: did not certify")


@pytest.mark.parametrize("kind", ["linear", "leontief"])
def test_a_tail_stopped_before_any_point_is_a_limit_not_a_failure(kind: str) -> None:
    from fairalloc.backends import ConicSolution, SolveStatus
    from fairalloc.backends.clarabel import ClarabelBackend

    class Stopped(ClarabelBackend):
        """Clarabel stopped by its time limit before it had a point."""

        def solve_conic(self, prog, **kw):  # type: ignore[no-untyped-def]
            return ConicSolution(SolveStatus.TIME_LIMIT, None, None, None, float("nan"),
                                 raw_status="MaxTime", backend="clarabel")

    U = np.random.default_rng(0).random((300, 20))
    with pytest.raises(fa.SolverError) as err:
        fa.fisher_market(U, kind=kind, method="conic", backend=Stopped(), time_limit=1.0)
    # the status of the limit (as before the plan), not a solver failure
    assert err.value.status == "time_limit" and err.value.raw_status == "MaxTime"
    assert not isinstance(err.value, fa.CertificateError)
    assert err.value.verdicts == ("conic: failed (time_limit: MaxTime)",)


# --- strategies that are ready only after others ran (`Strategy.ready`) ------------------------
def test_a_strategy_not_ready_is_skipped_without_a_step_or_a_hand_over() -> None:
    good = Certificate("lp", 1.0, 1.0, 0.0, 0.0)
    seen: list[str] = []

    def fails(ctx: list[str]) -> int:
        ctx.append("fails")
        raise Decline("no luck")

    plan = (Strategy("first", fails, lambda c, r: good),
            Strategy("never", lambda c: 1, lambda c, r: good, ready=lambda c: not c),
            Strategy("exact", lambda c: 2, lambda c, r: good, exact=True,
                     ready=lambda c: c == ["fails"]))
    log = SolveLog()
    found = run_plan(plan, seen, log, what="demo")
    assert found.result == 2 and found.strategy == "exact"
    assert log.path == ("first", "exact") and log.fallbacks == ("first->exact: no luck",)
    # nothing ready after a failure: the failure is the plan's verdict
    with pytest.raises(fa.SolverError) as info:
        run_plan(plan[:2], [], SolveLog(), what="demo")
    assert info.value.verdicts == ("first: no luck",)


def test_an_uncertified_point_is_re_solved_in_price_scaled_units() -> None:
    U = np.array([[2.0, 1.0], [1.0, 2.0]])
    log = EngineLog()
    ctx = PlainContext(_linear_form(U, np.ones(2)), GAP_TOL, FEAS_TOL, None, log, [],
                       linear=True)
    plan = (Strategy("bad", _bad, point_certificate, exact=True), PRICE_SCALED, INCUMBENT)
    assert describe(plain_plan("fast")) == ("fast!", "price-scaled-conic!", "incumbent!")
    point, iterations, solves = run_market_plan(plan, ctx)
    # the incumbent is not ready: no limit stopped a solve
    assert point.step == "price-scaled-conic" and point.cert.ok and solves >= 1
    assert log.path[:2] == ("bad", "price-scaled-conic") and "incumbent" not in log.path
    assert log.fallbacks == (log.fallbacks[0],)
    assert log.fallbacks[0].startswith("bad->price-scaled-conic: did not certify")
    np.testing.assert_allclose(point.prices, [1.0, 1.0], rtol=1e-6)


def test_market_tuning_is_validated() -> None:
    for bad in ({"ipm_max_iter": -1}, {"dual_max_iter": 1.5}, {"restricted": 1},
                {"ipm_max_iter": True}):
        with pytest.raises(fa.InputError, match="tuning"):
            Tuning(**bad)  # type: ignore[arg-type]
    with pytest.raises(fa.InputError, match="tuning"):
        fa.fisher_market([[1.0]], tuning="fast")  # type: ignore[arg-type]


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), m=st.integers(1, 6),
       density=st.sampled_from([0.3, 1.0]), scale=st.sampled_from([1e-4, 1.0, 1e4]))
def test_every_plan_variant_gives_the_same_certified_market(seed: int, n: int, m: int,
                                                            density: float,
                                                            scale: float) -> None:
    """The plans that the method and the tuning choose (restricted markets, the interior
    point, the conic solve, the price-scaled tail) give the same certified equilibrium."""
    rng = np.random.default_rng(seed)
    U = rng.lognormal(0.0, 1.0, (n, m)) * (rng.random((n, m)) < density)
    U[np.arange(n), rng.integers(0, m, n)] += 0.5  # every buyer values a good
    B = scale * rng.uniform(0.5, 2.0, n)
    ref = fa.fisher_market(U, B, method="conic", symmetry=False)
    for method, tuning in (("fast", None), ("fast", Tuning(restricted=False)),
                           ("fast", Tuning(ipm_max_iter=0)), ("auto", None)):
        r = fa.fisher_market(U, B, method=method, tuning=tuning)
        assert r.certificate.ok and ref.certificate.ok
        # two certified optima agree to their certified gaps (plus the objective's rounding)
        assert abs(r.objective - ref.objective) <= r.certificate.gap + ref.certificate.gap \
            + 1e-12 * B.sum() * (1 + abs(np.log(scale)))
