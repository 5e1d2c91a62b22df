"""The plan of a plain market (no added constraints or terms), run by the one driver.

`plain_plan` chooses, from the solve method, the strategies that solve the whole market and
the two that follow when none of them certified (`fairalloc.plan.Strategy` ``ready``: they
run only then):

* ``fast``: the fast path's own plan (`fairalloc.markets.strategies.fast_plan`);
* ``dual``, ``conic``: a static Leontief market's dual interior point, then the conic solve;
* ``conic``: the conic solve;
* ``cvxpy``: the market through cvxpy (``FisherMarket``'s own cvxpy model), then the conic
  solve if cvxpy returned no point;
* then ``price-scaled-conic`` (`PRICE_SCALED`): re-solves in units in which every good is
  worth about 1 (`fairalloc.markets.engine.resolve_price_scaled`), from the last uncertified
  point's prices, unless a limit stopped a solve;
* and ``incumbent`` (`INCUMBENT`): when a limit stopped the solve before it had a point with a
  finite gap, each buyer's demand at rough prices (a feasible point with its proven gap).

`fairalloc.markets.strategies.run_market_plan` returns the last exact strategy's point when
none certifies (the caller reports it after a limit, or raises its certificate's error).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import SolverError
from ..plan import Decline, Strategy
from .engine import certify_general, certify_linear, demand_incumbent, resolve_price_scaled
from .leontief import DUAL
from .strategies import (
    CONIC,
    CONIC_STEP,
    FAST_STEP,
    MarketContext,
    MarketPoint,
    point_certificate,
    solve_fast,
)

__all__ = ["INCUMBENT", "PRICE_SCALED", "PlainContext", "plain_plan"]

PRICE_SCALED_RESOLVES = 3  # PERFORMANCE: at most this many price-scaled re-solves
#: the plan's steps (``stats.path``) besides those of `fairalloc.markets.strategies`
PRICE_SCALED_STEP, INCUMBENT_STEP, CVXPY_STEP = "price-scaled-conic", "incumbent", "cvxpy"


@dataclass(frozen=True, eq=False)
class PlainContext(MarketContext):
    """A plain market's context: also the warm-start prices (``warm``, the fast path's), the
    market's cvxpy solve (``cvxpy``: context in, point of the whole market out) and whether a
    demand incumbent may answer (``incumbent``; not for a composed model's plain equilibrium,
    which goes on to cvxpy)."""

    warm: np.ndarray | None = field(default=None, kw_only=True)
    incumbent: bool = field(default=True, kw_only=True)
    cvxpy: Callable[[PlainContext], MarketPoint] | None = field(default=None, kw_only=True)


def _fast(ctx: PlainContext) -> MarketPoint:
    """The fast path (its own plan: restricted markets or the interior point, then conic)."""
    z, cert, p, iterations, solves = solve_fast(
        ctx.form, gap_tol=ctx.gap_tol, feas_tol=ctx.feas_tol, warm_prices=ctx.warm,
        time_limit=ctx.time_limit, log=ctx.log, tuning=ctx.tuning)
    out = MarketPoint(z, cert, p, iterations, solves, FAST_STEP)
    ctx.tried.append(out)
    return out


def _cvxpy(ctx: PlainContext) -> MarketPoint:
    assert ctx.cvxpy is not None  # (the plan holds this strategy only then)
    return ctx.cvxpy(ctx)


def _no_point(ctx: MarketContext) -> bool:
    return not ctx.tried


def _uncertified(ctx: MarketContext) -> bool:
    return bool(ctx.tried) and not ctx.tried[-1].cert.ok


def _price_scaled_ready(ctx: MarketContext) -> bool:
    return _uncertified(ctx) and not ctx.log.hit_limit


def _price_scaled(ctx: MarketContext) -> MarketPoint:
    """Re-solve from the last point's prices in better units; the better certificate is kept
    (each re-solve's prices give the next one's units)."""
    start = ctx.tried[-1]
    form, log = ctx.form, ctx.log
    certify = certify_linear if ctx.linear else certify_general
    z, p, cert = start.z, start.prices, start.cert
    iterations = solves = 0
    for k in range(PRICE_SCALED_RESOLVES):
        if k:
            log.step(PRICE_SCALED_STEP)  # (the first is the plan step, logged by the driver)
        try:
            z2, p2, it = resolve_price_scaled(form, p, time_limit=ctx.time_limit, log=log)
        except SolverError:
            break
        iterations += it
        solves += 1
        cert2, p2, z2 = certify(form, form.repair(z2), p2, gap_tol=ctx.gap_tol,
                                feas_tol=ctx.feas_tol, log=log)
        if not (cert2.ok or cert2.relative_gap < cert.relative_gap):
            break
        z, p, cert = z2, p2, cert2
        if cert.ok:
            break
    out = MarketPoint(z, cert, p, iterations, solves, PRICE_SCALED_STEP)
    ctx.tried.append(out)
    return out


def _incumbent_ready(ctx: MarketContext) -> bool:
    return (isinstance(ctx, PlainContext) and ctx.incumbent and ctx.log.hit_limit
            and _uncertified(ctx)
            and not np.isfinite(ctx.tried[-1].cert.gap))


def _incumbent(ctx: MarketContext) -> MarketPoint:
    """Each buyer's demand at rough prices: a feasible point, certified with its gap."""
    out = demand_incumbent(ctx.form, linear=ctx.linear, gap_tol=ctx.gap_tol,
                           feas_tol=ctx.feas_tol)
    if out is None:
        raise Decline("no feasible demand incumbent")
    point = MarketPoint(out[0], out[2], out[1], 0, 0, INCUMBENT_STEP)
    ctx.tried.append(point)
    return point


#: re-solves in price-scaled units after an uncertified point (not after a limit)
PRICE_SCALED: Strategy[MarketContext, MarketPoint] = Strategy(
    PRICE_SCALED_STEP, _price_scaled, point_certificate, exact=True, ready=_price_scaled_ready)
#: a feasible incumbent when a limit stopped the solve before a point with a finite gap
INCUMBENT: Strategy[MarketContext, MarketPoint] = Strategy(
    INCUMBENT_STEP, _incumbent, point_certificate, exact=True, ready=_incumbent_ready)
FAST: Strategy[PlainContext, MarketPoint] = Strategy(FAST_STEP, _fast, point_certificate,
                                                     exact=True)
CVXPY: Strategy[PlainContext, MarketPoint] = Strategy(CVXPY_STEP, _cvxpy, point_certificate,
                                                      exact=True)
#: the conic solve after cvxpy, only when cvxpy returned no point
CONIC_IF_NO_POINT: Strategy[MarketContext, MarketPoint] = Strategy(
    CONIC_STEP, CONIC.solve, point_certificate, exact=True, ready=_no_point)


def plain_plan(method: str) -> tuple[Strategy[PlainContext, MarketPoint], ...]:
    """A plain market's plan for ``method`` (``"fast"``, ``"dual"``, ``"conic"`` or
    ``"cvxpy"``).

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(plain_plan("dual"))
    ('dual', 'conic!', 'price-scaled-conic!', 'incumbent!')
    """
    head: tuple[Strategy[PlainContext, MarketPoint], ...] = {
        "fast": (FAST,), "dual": (DUAL, CONIC), "conic": (CONIC,),
        "cvxpy": (CVXPY, CONIC_IF_NO_POINT)}[method]
    return (*head, PRICE_SCALED, INCUMBENT)
