"""The solve plans of the partial allocation mechanism (`fairalloc.plan`), run by the one
driver, `fairalloc.plan.run_plan`.

`fairalloc.partial_allocation` solves two kinds of linear Eisenberg-Gale markets, each through a
plan that is a pure function of the method and a `fairalloc.auctions.Tuning`:

* the PF market (`pf_plan`): ``pf-market`` (`fairalloc.fisher_market`, polished to an exact
  equilibrium on its support) then ``pf-warm-search`` (exact: fairalloc's own warm search,
  from the point ``pf-market`` reached or from uniform prices; it solves the whole market when
  its reduced markets do not certify);
* each leave-one-out market (`loo_plan`): ``loo-batched-ipm`` (the market's row of its chunk's
  block-diagonal interior-point solve, `fairalloc.markets.warm.loo_batch`), ``loo-warm`` (a
  warm search from the PF prices) and ``loo-cold`` (exact: `fairalloc.fisher_market`);
  ``method="cold"`` runs ``loo-cold`` alone.

Every strategy's result is certified on its whole market by its own duality gap, judged per
unit budget (``gap <= gap_tol * max(1, buyers)``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CertificateError, FairallocError, SolverError
from ..markets.engine import EngineLog
from ..markets.warm import EGPoint, eg_dual, eg_primal, feas_residual, repair_dense, solve_warm
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate
from ..tolerances import FEAS_TOL, GAP_TOL
from ._pool import _record
from .tuning import Tuning

__all__ = ["LooContext", "PFContext", "loo_plan", "pf_plan", "solve_loo", "solve_pf"]

PF_EXACT_GAP = 1e-9  # ACCURACY: absolute gap the PF market's polish aims for
LOO_TARGET = 1e-8  # ACCURACY: absolute gap each leave-one-out solve aims for (c_i to ~1e-8)
AIM_REL = 1e-9  # ACCURACY: gap per unit budget a leave-one-out search aims for before accepting
TINY_SUPPLY = 1e-300  # floor of the total supply in the uniform starting price
MARGIN_MIN, MARGIN_MAX = 2e-3, 0.02  # PERFORMANCE: range of the candidate margin ``eta``
MARGIN_PER_GOOD = 0.1  # PERFORMANCE: candidate margin per good per agent (~ price move m / n)
#: the plans' steps (``stats.path``)
PF_MARKET, PF_WARM = "pf-market", "pf-warm-search"
LOO_BATCHED, LOO_WARM, LOO_COLD = "loo-batched-ipm", "loo-warm", "loo-cold"


def aim(gap_tol: float, budget: float) -> float:
    """Absolute gap a search aims for before it accepts a point: ``gap_tol`` per unit budget,
    but never looser than ``AIM_REL`` per unit (fractions stay accurate)."""
    return min(gap_tol, AIM_REL) * max(1.0, budget)


def margin(n: int, m: int) -> float:
    """Candidate margin ``eta``: removing one of ``n`` unit budgets moves prices by ~ m / n."""
    return float(min(MARGIN_MAX, max(MARGIN_MIN, MARGIN_PER_GOOD * m / max(n, 1))))


def solve_log(solvers: tuple[Any, Any, Any]) -> EngineLog:
    """The engine's log for one market, reporting every backend solve to ``_record``."""
    return EngineLog(solvers[0], solvers[1], on_solve=_record)


def fisher(U: np.ndarray, s: np.ndarray, *, gap_tol: float, backend: Any) -> Any:
    """`fairalloc.fisher_market` (equal budgets, ``backend`` passed on when one was chosen);
    records the backend that ran; a foreign exception (never expected) becomes SolverError."""
    from ..markets import fisher_market

    kwargs: dict[str, Any] = {"kind": "linear", "gap_tol": gap_tol}
    if backend is not None:
        kwargs["backend"] = backend
    try:
        r = fisher_market(U, supply=s, **kwargs)
    except FairallocError:
        raise
    except Exception as exc:
        raise SolverError(f"fisher_market raised {type(exc).__name__}: {exc}",
                          raw_status="exception") from exc
    if r.stats.backend not in ("", "none", "numpy"):
        _record(r.stats.backend, r.stats.raw_status)
    return r


# ============================================================================================
# the PF market
# ============================================================================================
@dataclass(frozen=True, eq=False)
class PFContext:
    """The PF market (normalised units, valued goods only), its tolerance, backends, log and
    tuning; ``shift`` maps its objective to the caller's units. ``reached`` records the points
    the strategies reached (the warm search starts from the last one)."""

    U: np.ndarray
    s: np.ndarray
    gap_tol: float
    solvers: tuple[Any, Any, Any]
    log: EngineLog
    tuning: Tuning
    shift: float
    reached: list[EGPoint] = dataclasses.field(default_factory=list)


def pf_certificate(ctx: PFContext, point: EGPoint) -> Certificate:
    """The PF point's certificate in the caller's units (gap per unit budget)."""
    n = ctx.U.shape[0]
    return Certificate(kind="eisenberg_gale", primal_value=point.primal + ctx.shift,
                       dual_bound=point.dual + ctx.shift, gap=point.gap,
                       primal_residual=feas_residual(point.allocation, ctx.s),
                       gap_tol=ctx.gap_tol, feas_tol=FEAS_TOL, scale=float(n))


def _pf_market(ctx: PFContext) -> EGPoint:
    """`fairalloc.fisher_market`, polished to an exact equilibrium on its support."""
    if ctx.tuning.pf_market_solves == 0:
        raise Decline("Tuning.pf_market_solves is 0")
    U, s = ctx.U, ctx.s
    B = np.ones(U.shape[0])
    try:
        pf = fisher(U, s, gap_tol=max(ctx.gap_tol, GAP_TOL), backend=ctx.solvers[2])
    except (CertificateError, SolverError) as exc:
        raise Decline(f"fisher_market failed ({type(exc).__name__}: {exc})") from exc
    x0, p0 = np.array(pf.allocation, dtype=float), np.array(pf.prices, dtype=float)
    if x0.shape != U.shape or not (np.all(np.isfinite(x0)) and np.all(np.isfinite(p0))):
        raise Decline("fisher_market returned a non-finite point")
    xr = repair_dense(x0, s)
    point = EGPoint(xr, p0, eg_primal(U, B, xr), eg_dual(U, B, s, p0))
    # polish to an exact equilibrium (the fractions' numerators use the PF utilities)
    better = solve_warm(U, B, s, p0, tol=PF_EXACT_GAP, accept=point.gap, start=(x0, p0),
                        max_rounds=ctx.tuning.pf_polish_rounds, log=ctx.log)
    if better.gap < point.gap:
        ctx.log.step("pf-support-polish")
        point = better
    ctx.reached.append(point)
    return point


def _pf_warm(ctx: PFContext) -> EGPoint:
    """fairalloc's own warm search (exact: the whole market last), from the point the
    previous strategy reached, else from uniform prices."""
    U, s, n = ctx.U, ctx.s, ctx.U.shape[0]
    B = np.ones(n)
    if not ctx.reached:
        p_start = np.full(U.shape[1], n / max(float(s.sum()), TINY_SUPPLY))
        return solve_warm(U, B, s, p_start, tol=PF_EXACT_GAP, accept=aim(ctx.gap_tol, n),
                          log=ctx.log)
    point = ctx.reached[-1]
    more = solve_warm(U, B, s, point.prices, tol=min(PF_EXACT_GAP, ctx.gap_tol * n),
                      accept=ctx.gap_tol * n, start=(point.allocation, point.prices),
                      log=ctx.log)
    return more if more.gap < point.gap else point


def pf_plan(tuning: Tuning) -> tuple[Strategy[PFContext, EGPoint], ...]:
    """The PF market's plan: ``pf-market`` then ``pf-warm-search`` (exact).

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(pf_plan(Tuning()))
    ('pf-market', 'pf-warm-search!')
    """
    return (Strategy(PF_MARKET, _pf_market, pf_certificate),
            Strategy(PF_WARM, _pf_warm, pf_certificate, exact=True))


def solve_pf(ctx: PFContext) -> tuple[EGPoint, Certificate]:
    """Run `pf_plan` on ``ctx``: the certified PF point and its certificate (a
    ``CertificateError`` with every strategy's verdict when none certified)."""
    found = run_plan(pf_plan(ctx.tuning), ctx, ctx.log, what="PF market",
                     backend=ctx.log.conic.name)
    return found.result, found.certificate


# ============================================================================================
# the leave-one-out markets
# ============================================================================================
@dataclass(frozen=True, eq=False)
class LooContext:
    """The market without agent ``i`` (``U``, ``s``: the whole normalised market), the PF
    prices, the tolerance, backends, tuning and log; ``batched``: this market's row of its
    chunk's batched solve (``(primal, gap)``, None when the batch did not certify it or did
    not run); ``spent`` counts the solves of the strategies that ran (reported only)."""

    U: np.ndarray
    s: np.ndarray
    p_pf: np.ndarray
    gap_tol: float
    solvers: tuple[Any, Any, Any]
    tuning: Tuning
    i: int
    batched: tuple[float, float] | None
    log: EngineLog
    spent: list[int] = dataclasses.field(default_factory=list)

    def market(self) -> tuple[np.ndarray, np.ndarray]:
        """The utilities and supply of the market without ``i`` (goods someone values)."""
        Ui = np.delete(self.U, self.i, axis=0)
        valued = (Ui > 0).any(axis=0) & (self.s > 0)
        return Ui[:, valued], self.s[valued]

    def budgets(self) -> float:
        """Its total budget (the certificate's scale)."""
        return float(max(1, self.U.shape[0] - 1))


def loo_certificate(ctx: LooContext, result: tuple[float, float]) -> Certificate:
    """A leave-one-out point's certificate (gap per unit budget)."""
    primal, gap = result
    dual = primal + gap if math.isfinite(primal) and math.isfinite(gap) else math.inf
    return Certificate(kind="eisenberg_gale", primal_value=primal, dual_bound=dual, gap=gap,
                       primal_residual=0.0, gap_tol=ctx.gap_tol, scale=ctx.budgets())


def _loo_batched(ctx: LooContext) -> tuple[float, float]:
    if ctx.tuning.loo_batch == 0:
        raise Decline("Tuning.loo_batch is 0")
    if ctx.batched is None:
        raise Decline("not certified in a batch")
    ctx.spent.append(1)
    return ctx.batched


def _loo_warm(ctx: LooContext) -> tuple[float, float]:
    """A warm search of the reduced market from the PF prices."""
    if ctx.tuning.loo_warm_rounds == 0:
        raise Decline("Tuning.loo_warm_rounds is 0")
    Ui = np.delete(ctx.U, ctx.i, axis=0)
    if Ui.shape[0] == 0:
        return 0.0, 0.0
    valued = (Ui > 0).any(axis=0) & (ctx.s > 0)
    Ui = Ui[:, valued]
    accept = aim(ctx.gap_tol, float(Ui.shape[0]))
    pt = solve_warm(Ui, np.ones(Ui.shape[0]), ctx.s[valued], ctx.p_pf[valued],
                    tol=min(LOO_TARGET, accept), accept=accept, eta=margin(*Ui.shape),
                    max_rounds=ctx.tuning.loo_warm_rounds, log=ctx.log)
    ctx.spent.append(pt.solves)
    if pt.gap > ctx.gap_tol * ctx.budgets():
        raise Decline("missed the tolerance")
    return pt.primal, pt.gap


def _loo_cold(ctx: LooContext) -> tuple[float, float]:
    """`fairalloc.fisher_market` from scratch (what it reached when it cannot certify)."""
    Ui, si = ctx.market()
    if Ui.shape[0] == 0:
        return 0.0, 0.0
    ctx.spent.append(1)
    try:
        r = fisher(Ui, si, gap_tol=ctx.gap_tol, backend=ctx.solvers[2])
    except (CertificateError, SolverError) as exc:  # report what it reached: certify judges
        cert = getattr(exc, "certificate", None)
        if isinstance(cert, Certificate) and math.isfinite(cert.primal_value):
            return float(cert.primal_value), float(cert.gap)
        raise
    ctx.spent[-1] = int(r.stats.solves)
    return float(r.objective), float(r.gap)


def loo_plan(method: str, tuning: Tuning) -> tuple[Strategy[LooContext, Any], ...]:
    """A leave-one-out market's plan: ``loo-batched-ipm`` (markets of two or more buyers),
    ``loo-warm``, ``loo-cold`` (exact); ``method="cold"``: ``loo-cold`` alone.

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(loo_plan("warm", Tuning())), describe(loo_plan("cold", Tuning()))
    (('loo-batched-ipm', 'loo-warm', 'loo-cold!'), ('loo-cold!',))
    """
    cold = Strategy(LOO_COLD, _loo_cold, loo_certificate, exact=True)
    if method == "cold":
        return (cold,)
    return (Strategy(LOO_BATCHED, _loo_batched, loo_certificate,
                     applies=lambda ctx: ctx.U.shape[0] > 1),
            Strategy(LOO_WARM, _loo_warm, loo_certificate), cold)


#: a leave-one-out outcome: (primal, gap, solves, steps, hand-overs)
LooOutcome = tuple[float, float, int, tuple[str, ...], tuple[str, ...]]


def solve_loo(ctx: LooContext, method: str) -> LooOutcome:
    """Run `loo_plan` on the market without ``ctx.i``: ``(primal, gap, solves, steps,
    hand-overs)``; when no strategy certified, the best point reached (``-inf``, ``inf`` when
    none was): the caller reports that market's failure."""
    try:
        found = run_plan(loo_plan(method, ctx.tuning), ctx, ctx.log,
                         what=f"leave-one-out (without agent {ctx.i})")
        primal, gap = found.result
    except CertificateError as exc:
        cert = exc.certificate
        primal, gap = ((float(cert.primal_value), float(cert.gap)) if cert is not None
                       else (-math.inf, math.inf))
    except SolverError:
        primal, gap = -math.inf, math.inf
    return primal, gap, sum(ctx.spent), ctx.log.steps, ctx.log.hand_overs
