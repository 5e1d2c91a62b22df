"""The market solve plans (`fairalloc.plan`): the Eisenberg-Gale engine's strategies, run by
the one driver, `fairalloc.plan.run_plan`.

A market plan is a tuple of `fairalloc.plan.Strategy` values over a `MarketContext` (the
normalised market, tolerances, time limit, log). Each strategy solves the whole market (context
in, a `MarketPoint` out) and certifies the point on it with the engine's dual certificate
(`fairalloc.markets.engine.certify_linear` / ``certify_general``). The plans:

* the fast path of a linear market (`fast_plan`): after proportional-response prices ``p0``,
  the restricted markets of each buyer's cheapest edges (step ``restricted-ipm`` /
  ``restricted-conic``) when they are much smaller than the market, else the whole market by
  the interior point on its prices (``ipm``, few edges per buyer); then `CONIC`;
* a static Leontief market: its dual interior point (``dual``,
  `fairalloc.markets.leontief.DUAL`), then `CONIC`;
* any other market: `CONIC` alone.

The tail of every plan, `CONIC`, is the exact conic solve of the whole market. When no point
certifies, `run_market_plan` returns the tail's point as it is: the caller re-solves it in
better units (`fairalloc.markets.engine.resolve_price_scaled`) or reports it with its proven gap
after a time limit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import CertificateError, InfeasibleError, SolverError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate
from ..solvelog import SolveLog
from ..tolerances import FEAS_TOL, GAP_TOL
from .engine import (
    TINY_PRICE,
    EdgeForm,
    EngineLog,
    certify_general,
    certify_linear,
    proportional_response,
    solve_conic,
)
from .ipm import IPM_MAX_ITER, ipm_edge_form, ipm_fits
from .tuning import DEFAULT_TUNING, Tuning

__all__ = ["CONIC", "FastContext", "MarketContext", "MarketPoint", "SubMarket", "fast_context",
           "fast_plan", "point_certificate", "run_market_plan", "solve_fast", "solve_submarket"]

RESTRICTED_TOL = 1e-11  # ACCURACY: tolerance of the fast path's small restricted conic solves
PR_ITERS_COLD = 60  # PERFORMANCE: proportional-response rounds from uniform bids
PR_ITERS_WARM = 10  # PERFORMANCE: proportional-response rounds from warm-start prices
FAST_MARGIN = 1.05  # PERFORMANCE: fast path keeps edges within 5 % of the best bang-per-buck
FAST_MAX_ROUNDS = 8  # PERFORMANCE: restricted solves before the fast path solves everything
FAST_MAX_EDGE_SHARE = 0.5  # PERFORMANCE: a restricted market keeping more edges cannot win
READD_MARGIN = 1e-9  # an edge cheaper by this (relative) than the support re-joins it
#: the fast path's plan steps (`fast_plan`; ``stats.path``): the fast path (column generation),
#: the whole market by the interior point on its prices, the whole market by the conic backend
FAST_STEP, IPM_STEP, CONIC_STEP = "fast", "ipm", "conic"


@dataclass(frozen=True, eq=False)
class MarketPoint:
    """A market point with its certificate and the work it took (``step``: the strategy that
    produced it, ``"fast"`` for the restricted markets of `fast_plan`)."""

    z: np.ndarray
    cert: Certificate
    prices: np.ndarray
    iterations: int
    solves: int
    step: str


@dataclass(frozen=True, eq=False)
class MarketContext:
    """What a market plan's strategies read (`run_market_plan`): the normalised market, the
    tolerances, the time limit and the log. ``tried`` is the call's record of the points and
    work of the strategies that ran (like ``log``, written only to report: no strategy reads
    it); ``linear``: the certificate is `certify_linear`'s, else `certify_general`'s;
    ``tuning``: the plan's knobs (`fairalloc.markets.Tuning`)."""

    form: EdgeForm
    gap_tol: float
    feas_tol: float
    time_limit: float | None
    log: EngineLog
    tried: list[MarketPoint]
    linear: bool
    tuning: Tuning = field(default=DEFAULT_TUNING, kw_only=True)

    def point(self, z: np.ndarray, p: np.ndarray, iterations: int, solves: int, step: str
              ) -> MarketPoint:
        """The point ``(z, p)`` of the whole market, polished and certified, recorded."""
        certify = certify_linear if self.linear else certify_general
        cert, best_p, z = certify(self.form, self.form.repair(z), p, gap_tol=self.gap_tol,
                                  feas_tol=self.feas_tol, log=self.log)
        out = MarketPoint(z, cert, best_p, iterations, solves, step)
        self.tried.append(out)
        return out


@dataclass(frozen=True, eq=False)
class FastContext(MarketContext):
    """A linear market's context on the fast path: also the proportional-response prices
    ``p0`` and the first restricted edge set ``keep``."""

    p0: np.ndarray
    keep: np.ndarray

    def restricted(self) -> bool:
        """The restricted market is much smaller than the market (it can win), and the
        tuning tries restricted markets."""
        return self.tuning.restricted and bool(
            self.keep.sum() <= FAST_MAX_EDGE_SHARE * self.form.num_edges)

    def whole_ipm(self) -> bool:
        """No restricted market, and the interior point fits the whole market."""
        return not self.restricted() and _ipm_applies(self.form)


def point_certificate(ctx: MarketContext, point: MarketPoint) -> Certificate:
    """A strategy's ``certify``: its point was certified on the whole market when it was
    made (`MarketContext.point`)."""
    return point.cert


def _conic_strategy(ctx: MarketContext) -> MarketPoint:
    """The whole market by the conic backend (exact, robust: every plan's tail)."""
    z, p, it = solve_conic(ctx.form, time_limit=ctx.time_limit, log=ctx.log)
    return ctx.point(z, p, it, 1, CONIC_STEP)


#: the exact tail of every market plan: the whole market by the conic backend
CONIC: Strategy[MarketContext, MarketPoint] = Strategy(CONIC_STEP, _conic_strategy,
                                                       point_certificate, exact=True)


def run_market_plan(plan: Sequence[Strategy[Any, MarketPoint]], ctx: MarketContext
                    ) -> tuple[MarketPoint, int, int]:
    """Run a market plan (`fairalloc.plan.run_plan`): ``(point, iterations, solves)``, the
    work of every strategy that ran counted. When no strategy certifies, the last point, if an
    exact strategy made it, is returned as it is: the caller reports it with its proven gap
    after a limit, or raises its certificate's error; without such a point the plan's error is
    raised (with the status of the limit that stopped a backend, if one did)."""
    log = ctx.log
    exact = {s.name for s in plan if s.exact}
    try:
        point = run_plan(plan, ctx, log, what="Eisenberg-Gale", backend=log.conic.name).result
    except CertificateError:
        if not ctx.tried or ctx.tried[-1].step not in exact:
            raise
        point = ctx.tried[-1]  # the last exact strategy's point, uncertified
    except InfeasibleError:
        raise
    except SolverError as exc:
        if not log.hit_limit:
            raise
        # no point at all because a backend was stopped: the error says so (status
        # time_limit / iteration_limit, the backend's own status), not a failure
        raise SolverError(str(exc), backend=exc.backend, status=log.limit,
                          raw_status=log.raw_status, verdicts=exc.verdicts) from exc
    return (point, sum(t.iterations for t in ctx.tried), sum(t.solves for t in ctx.tried))


def _restricted_strategy(ctx: FastContext) -> MarketPoint:
    """Column generation: restricted markets of each buyer's cheapest edges at ``p0``, grown by
    the edges their prices price out, until one's point certifies on the whole market."""
    form, keep = ctx.form, ctx.keep
    iterations = solves = 0
    cert = None
    for rnd in range(FAST_MAX_ROUNDS):
        if keep.sum() > FAST_MAX_EDGE_SHARE * form.num_edges:
            break  # the restricted market is about as large as the market: it cannot win
        sub = form.subset(keep)
        # the restricted program is small: solve it tightly so the support polish succeeds
        # (the first round's step is the plan step's own, logged by the driver)
        z_sub, p, it, by_conic = _solve_linear(sub, ctx.p0, time_limit=ctx.time_limit,
                                               tol=RESTRICTED_TOL, log=ctx.log, step="restricted",
                                               noted=rnd == 0, max_iter=ctx.tuning.ipm_max_iter)
        iterations += it
        solves += by_conic
        z = np.zeros(form.num_edges)
        z[keep] = sub.repair(z_sub)
        cert, best_p, z = certify_linear(form, z, p, gap_tol=ctx.gap_tol,
                                          feas_tol=ctx.feas_tol, log=ctx.log)
        if cert.ok:
            out = MarketPoint(z, cert, best_p, iterations, solves, FAST_STEP)
            ctx.tried.append(out)
            return out
        # re-add every edge cheaper (per unit utility) than what its buyer pays on the support
        q = (form.C.T @ p) / form.weight
        beta_sub = sub.beta(p)
        violated = ~keep & (q < beta_sub[form.owner] * (1 - READD_MARGIN))
        if not violated.any():
            break
        keep = keep | violated
    # the support could not be certified (numerically hard instance)
    if cert is not None:
        ctx.tried.append(MarketPoint(z, cert, best_p, iterations, solves, FAST_STEP))
    raise Decline("the restricted market keeps most edges" if cert is None else
                  f"restricted markets not certified after {solves} solves (relative gap "
                  f"{cert.relative_gap:.3g})")


def _ipm_strategy(ctx: FastContext) -> MarketPoint:
    """The whole market by the interior point on its prices (few edges per buyer)."""
    form = ctx.form
    out = ipm_edge_form(form.owner, form.C.indices, form.C.data, form.weight, form.budget,
                        form.supply, ctx.p0, max_iter=ctx.tuning.ipm_max_iter)
    if out is None:
        raise Decline("the interior-point method did not converge")
    return ctx.point(out[0], out[1], out[2], 0, IPM_STEP)


def fast_plan(ctx: FastContext) -> tuple[Strategy[FastContext, MarketPoint], ...]:
    """The fast path's plan (`fairalloc.plan.Strategy` values, run by `fairalloc.plan.run_plan`):
    the restricted markets (step ``restricted-ipm`` / ``restricted-conic``: the solver of the
    first one) when they are much smaller than the market, else the whole market by the
    interior point (``ipm``) where it fits; then the conic backend (``conic``, exact)."""
    first = "restricted-ipm" if _ipm_applies(ctx.form, ctx.keep) else "restricted-conic"
    return (Strategy(first, _restricted_strategy, point_certificate, FastContext.restricted),
            Strategy(IPM_STEP, _ipm_strategy, point_certificate, FastContext.whole_ipm), CONIC)


def fast_context(form: EdgeForm, *, gap_tol: float, feas_tol: float,
                 warm_prices: np.ndarray | None, time_limit: float | None, log: EngineLog,
                 tuning: Tuning = DEFAULT_TUNING) -> FastContext:
    """The fast path's context: proportional-response prices (warm-started from
    ``warm_prices``) and each buyer's edges within `FAST_MARGIN` of its best bang-per-buck at
    them (step ``proportional-response``).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fairalloc.markets.engine import EdgeForm, EngineLog
    >>> C = sp.csc_matrix(np.eye(2))  # two buyers, each valuing one good
    >>> form = EdgeForm(np.arange(2), np.ones(2), C, np.ones(2), np.ones(2), np.arange(2))
    >>> ctx = fast_context(form, gap_tol=1e-6, feas_tol=1e-7, warm_prices=None,
    ...                    time_limit=None, log=EngineLog())
    >>> [s.name for s in fast_plan(ctx) if s.applies(ctx)]
    ['ipm', 'conic']
    """
    log.step("proportional-response")
    p0 = proportional_response(form, iters=PR_ITERS_COLD if warm_prices is None else PR_ITERS_WARM,
                                prices=warm_prices)
    with np.errstate(all="ignore"):
        q = np.maximum(p0[form.C.indices], TINY_PRICE) / form.weight
        beta = np.minimum.reduceat(q, form.starts)
        keep = q <= beta[form.owner] * FAST_MARGIN
    # every buyer keeps an edge (rough prices can be NaN/inf on extreme data)
    lost = np.bincount(form.owner, weights=keep.astype(float), minlength=form.n) == 0
    keep |= lost[form.owner]
    return FastContext(form, gap_tol, feas_tol, time_limit, log, [], True, p0, keep,
                       tuning=tuning)


def solve_fast(form: EdgeForm, *, gap_tol: float, feas_tol: float,
               warm_prices: np.ndarray | None, time_limit: float | None,
               log: EngineLog | None = None, tuning: Tuning = DEFAULT_TUNING
                ) -> tuple[np.ndarray, Certificate, np.ndarray, int, int]:
    """Column generation on the edge form, warm-started by proportional response: the plan
    `fast_plan` on `fast_context`, run by `run_market_plan`; returns ``(z, certificate,
    prices, iterations, solves)``."""
    ctx = fast_context(form, gap_tol=gap_tol, feas_tol=feas_tol, warm_prices=warm_prices,
                       time_limit=time_limit, log=EngineLog() if log is None else log,
                       tuning=tuning)
    point, iterations, solves = run_market_plan(fast_plan(ctx), ctx)
    return point.z, point.cert, point.prices, iterations, solves


def _ipm_applies(form: EdgeForm, keep: np.ndarray | None = None) -> bool:
    """A linear edge form (one resource per edge) whose buyers have few edges: the interior
    point on its prices (`fairalloc.markets.ipm`) is the faster exact solve (``keep``: of
    the form restricted to those edges, ``form.subset(keep)``, without building it)."""
    per_edge = np.diff(form.C.indptr)
    if keep is None:
        return bool(np.all(per_edge == 1)) and ipm_fits(form.owner, form.n)
    return bool(np.all(per_edge[keep] == 1)) and ipm_fits(form.owner[keep], form.n)


def _solve_linear(form: EdgeForm, p0: np.ndarray, *, time_limit: float | None, tol: float,
                  log: EngineLog, step: str, noted: bool = False, max_iter: int = IPM_MAX_ITER
                  ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """A restricted linear edge form solved by its plan (`solve_submarket`): the interior point
    on its prices when it applies (`_ipm_applies`; path step ``"<step>-ipm"``), else (or if it
    does not converge) the conic backend (``"<step>-conic"``). Returns ``(z, p, iterations,
    conic solves)``; the caller certifies the point on the whole market; ``noted``: its first
    step is already in the log; ``max_iter``: the interior point's iterations
    (`fairalloc.markets.Tuning.ipm_max_iter`)."""
    def ipm() -> tuple[np.ndarray, np.ndarray, int] | None:
        return ipm_edge_form(form.owner, form.C.indices, form.C.data, form.weight, form.budget,
                             form.supply, p0, max_iter=max_iter)

    sub = SubMarket(form, ipm if _ipm_applies(form) else None,
                    lambda: solve_conic(form, time_limit=time_limit, tol=tol, log=log), [])
    return solve_submarket(sub, log, ipm_step=f"{step}-ipm", conic_step=f"{step}-conic",
                           noted=noted)


@dataclass(frozen=True, eq=False)
class SubMarket:
    """A market solved inside a strategy (a restricted round, a warm search's reduced market):
    its edge form (for its own certificate), the interior point on its prices (``ipm``;
    ``None`` where it does not apply; returns ``None`` when it did not converge) and the conic
    solve (``conic``); ``tail`` records the conic point."""

    form: EdgeForm
    ipm: Callable[[], tuple[np.ndarray, np.ndarray, int] | None] | None
    conic: Callable[[], tuple[np.ndarray, np.ndarray, int]]
    tail: list[tuple[np.ndarray, np.ndarray, int, int]]

    def has_ipm(self) -> bool:
        """The interior point applies."""
        return self.ipm is not None


def _sub_ipm(sub: SubMarket) -> tuple[np.ndarray, np.ndarray, int, int]:
    assert sub.ipm is not None  # (the strategy applies only then)
    out = sub.ipm()
    if out is None:
        raise Decline("the interior-point method did not converge")
    return out[0], out[1], out[2], 0


def _sub_conic(sub: SubMarket) -> tuple[np.ndarray, np.ndarray, int, int]:
    z, p, it = sub.conic()
    out = (z, p, it, 1)
    sub.tail.append(out)
    return out


def _sub_certificate(sub: SubMarket, out: tuple[np.ndarray, np.ndarray, int, int]
                     ) -> Certificate:
    """The point's Eisenberg-Gale certificate on the sub-market itself."""
    form = sub.form
    return form.certificate(form.repair(out[0]), [out[1]], gap_tol=GAP_TOL,
                            feas_tol=FEAS_TOL)[0]


def solve_submarket(sub: SubMarket, log: EngineLog, *, ipm_step: str, conic_step: str,
                    steps: bool = True, noted: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Solve a sub-market by its plan, run by `fairalloc.plan.run_plan`: the interior point
    (step ``ipm_step``, where it applies), then the conic backend (``conic_step``, exact); each
    certified on the sub-market. The conic point is returned even when it does not certify
    there: the caller certifies (and polishes) the point on the whole market. Returns ``(z, p,
    iterations, conic solves)``; ``steps=False``: the steps stay out of ``log``'s path (its
    hand-overs are recorded); ``noted``: the first step is already in the path."""
    plan = (Strategy(ipm_step, _sub_ipm, _sub_certificate, SubMarket.has_ipm),
            Strategy(conic_step, _sub_conic, _sub_certificate, exact=True))
    own = SolveLog()
    try:
        return run_plan(plan, sub, own, what="sub-market", backend=log.conic.name).result
    except CertificateError:
        if not sub.tail:
            raise
        return sub.tail[-1]  # the conic point, certified by the caller on the whole market
    finally:
        log.replay(own.path[1 if noted else 0:] if steps else (), own.fallbacks)
