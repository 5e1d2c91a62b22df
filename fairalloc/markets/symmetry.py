"""Exact symmetry reduction of an Eisenberg-Gale market: identical buyers merge into one.

Buyers whose utility data (the row of the utility matrix, or the Leontief demand row, over
every round of a volatile market) are identical bit for bit form a class
(`fairalloc._symmetry.exact_classes`; budgets are not compared). The market whose buyers are
the classes, each with the sum of its members' budgets, has the same equilibrium prices, and
splitting a class's bundle among its members in proportion to their budgets gives an
equilibrium of the original market (``proofs/market_symmetry.md``): for utilities that are
concave and homogeneous of degree 1 (linear, Leontief, and their sums over rounds) the
Eisenberg-Gale optimum of the original market is the reduced optimum plus the constant
``sum_i B_i log B_i - sum_c W_c log W_c``, and so is every certified bound -- the duality gap
of the expanded point on the original market equals the reduced one's.

The expanded point is certified again on the *original* market (the engine's
`EdgeForm.certificate`, on the original data). The two are the steps of one plan
(`symmetry_plan`, run by `fairalloc.plan.run_plan`): the reduced market, then -- if it was not
certified, or its expansion was not on the original market (it cannot be, up to rounding) --
the original market buyer by buyer (``items``).

Buyers whose rows agree only up to round-off (a utility matrix estimated by a profiler, rows
copied through a unit conversion) form no exact class; `near_buyer_classes` groups them within
``Tuning.near_tie_share * gap_tol`` (relative; `NEAR_TIE_REL` at the defaults) and the plan
tries that coarser reduction first
(``near-symmetry:<classes>``). Merging near-identical buyers is not exact: the reduced market's
point is an equilibrium of a market within that tolerance of the original, so its expansion is
accepted only if it certifies on the original market (its duality gap and supply residual
within the caller's tolerances); otherwise the plan moves on to the exact classes, then to the
buyers one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._symmetry import (
    NEAR_PASSES,
    NEAR_SCREEN,
    Classes,
    classes_of_labels,
    exact_classes,
    near_classes,
)
from ..errors import CertificateError, FairallocError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate
from ..solvelog import LIMITED
from ..tolerances import GAP_TOL
from .engine import EngineLog
from .tuning import DEFAULT_TUNING, Tuning

if TYPE_CHECKING:
    from .fisher import FisherMarket

__all__ = ["ITEMS_STEP", "NEAR_PASSES", "NEAR_SCREEN", "NEAR_STEP", "NEAR_TIE_REL",
           "REDUCE_MAX_SHARE", "SYMMETRY_STEP", "Solved", "SymmetryContext", "buyer_classes",
           "expand_allocation", "near_buyer_classes", "solve_reduced", "solve_symmetric",
           "symmetry_plan", "uses_classes", "worth_reducing"]

#: the plan's steps (``stats.path``): the market reduced over near-identical buyers
#: (``"near-symmetry:<classes>"``), over identical buyers (``"symmetry:<classes>"``), then the
#: original market buyer by buyer
NEAR_STEP, SYMMETRY_STEP, ITEMS_STEP = "near-symmetry", "symmetry", "items"

#: the near classes' relative tolerance at the default `Tuning` and ``gap_tol`` (a solve uses
#: ``tuning.near_tie_share * gap_tol``)
NEAR_TIE_REL = DEFAULT_TUNING.near_tie_share * GAP_TOL

#: PERFORMANCE: reduce only when the classes number at most this share of the buyers (a
#: reduction that removes few buyers costs a second market build and a second certificate
#: for little gain; the buyer-by-buyer solve is exact as well)
REDUCE_MAX_SHARE = 0.75


def buyer_classes(utility: np.ndarray) -> Classes:
    """Classes of buyers whose utility (or demand) rows are identical bit for bit.

    Parameters
    ----------
    utility : ndarray, shape (n, m) or (n, m, T)
        The market's utility (linear) or demand (Leontief) array; the budget is not compared.

    Returns
    -------
    Classes

    Examples
    --------
    >>> import numpy as np
    >>> buyer_classes(np.array([[1.0, 2.0], [3.0, 1.0], [1.0, 2.0]])).counts
    array([2, 1])
    """
    u = np.asarray(utility, dtype=float)
    return exact_classes(u.reshape(u.shape[0], -1))


def near_buyer_classes(utility: np.ndarray, rel: float = NEAR_TIE_REL,
                       exact: Classes | None = None) -> Classes:
    """Classes of buyers whose utility (or demand) rows agree within ``rel``, entry by entry.

    Two rows are near when they have the same zero entries and every positive entry of one is
    within a factor ``exp(rel)`` (about ``1 + rel``) of the other's; the grouping is
    `fairalloc._symmetry.near_classes` (shared with the throughput policies), so every member
    of a class is near its leader, and rows near each other usually, but not always, share a
    class (which costs a class, never correctness). Not exact: `symmetry_plan` certifies the
    expanded point on the original market before using it.

    Parameters
    ----------
    utility : ndarray, shape (n, m) or (n, m, T)
        The market's utility (linear) or demand (Leontief) array, non-negative.
    rel : float
        The relative tolerance per entry (on the logarithms).
    exact : Classes, optional
        The exact buyer classes (`buyer_classes`), when known: the near grouping then reads
        one row per exact class (identical rows are near anyway), which costs little when
        many buyers repeat.

    Returns
    -------
    Classes

    Examples
    --------
    >>> import numpy as np
    >>> u = np.array([[1.0, 2.0], [1.0 + 1e-12, 2.0], [1.0, 2.1], [0.0, 2.0]])
    >>> near_buyer_classes(u).counts
    array([2, 1, 1])
    >>> near_buyer_classes(u, exact=buyer_classes(u)).inverse.tolist()
    [0, 0, 1, 2]
    """
    u = np.asarray(utility, dtype=float)
    u = u.reshape(u.shape[0], -1)
    if exact is None:
        return near_classes(u, rel=rel)
    sub = near_classes(u[exact.representative], rel=rel)
    return classes_of_labels(sub.inverse[exact.inverse])


def worth_reducing(classes: Classes) -> bool:
    """Whether the market is solved over ``classes``: some class has two members and there
    are at most `REDUCE_MAX_SHARE` times as many classes as buyers.

    Examples
    --------
    >>> import numpy as np
    >>> worth_reducing(buyer_classes(np.array([[1.0], [1.0], [2.0], [3.0], [4.0]])))
    False
    >>> worth_reducing(buyer_classes(np.array([[1.0], [1.0], [1.0], [3.0]])))
    True
    """
    return classes.reduces and classes.num_classes <= REDUCE_MAX_SHARE * classes.n


def expand_allocation(classes: Classes, allocation: np.ndarray, budget: np.ndarray
                      ) -> np.ndarray:
    """Each buyer's share of its class's bundle, in proportion to its budget.

    Parameters
    ----------
    classes : Classes
        The buyer classes of the market.
    allocation : ndarray, shape (c, m) or (c, m, T)
        The bundles of the reduced market's buyers (one per class).
    budget : ndarray, shape (n,)
        The original buyers' budgets.

    Returns
    -------
    ndarray, shape (n, m) or (n, m, T)

    Examples
    --------
    >>> import numpy as np
    >>> cl = buyer_classes(np.array([[1.0], [1.0], [2.0]]))
    >>> expand_allocation(cl, np.array([[0.8], [0.2]]), np.array([1.0, 3.0, 1.0])).ravel()
    array([0.2, 0.6, 0.2])
    """
    budget = np.asarray(budget, dtype=float)
    share = budget / classes.total(budget)[classes.inverse]
    alloc = np.asarray(allocation, dtype=float)[classes.inverse]
    return alloc * share.reshape((-1,) + (1,) * (alloc.ndim - 1))


@dataclass(frozen=True)
class Solved:
    """A market solved (by a strategy of `symmetry_plan`): the allocation in the caller's
    units, normalised prices and certificate (of the ORIGINAL market), the work, the method
    and the buyer classes it was solved over (``None``: buyer by buyer)."""

    allocation: np.ndarray
    prices: np.ndarray
    cert: Certificate
    iterations: int
    solves: int
    method: str
    classes: Classes | None


@dataclass(frozen=True, eq=False)
class SymmetryContext:
    """What the symmetry plan's strategies read: the market, its buyer ``classes``, the
    requested ``method`` and solve arguments, the log, and ``items`` (the market solved buyer
    by buyer). ``tried`` and ``raised`` record each strategy's result and error (written only
    to report: no strategy reads another's)."""

    market: FisherMarket
    classes: Classes
    method: str
    gap_tol: float
    feas_tol: float
    time_limit: float | None
    warm_start: Any
    log: EngineLog
    tuning: Tuning
    items: Callable[[], Solved]
    near: Classes | None = None
    tried: list[Solved] = field(default_factory=list)
    raised: list[FairallocError] = field(default_factory=list)


def solve_reduced(ctx: SymmetryContext, classes: Classes | None = None) -> Solved:
    """The reduced market solved and expanded (the ``symmetry:<classes>`` strategy, or
    ``near-symmetry:<classes>`` with ``classes=ctx.near``).

    The reduced market (one buyer per class -- its first member's row --, budget the class's
    total, same supply; ``classes`` defaults to ``ctx.classes``) is solved
    by ``ctx.method`` without further reduction; its steps and fallbacks are appended to the
    log. The expanded point is certified on the original market (the strategy's certificate);
    a reduced market that is not certified declines.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc import FisherMarket
    >>> from fairalloc.markets import Tuning
    >>> m = FisherMarket([[2.0, 1.0], [2.0, 1.0], [1.0, 2.0]], budget=[1.0, 3.0, 1.0])
    >>> ctx = SymmetryContext(m, buyer_classes(m.utility), "conic", 1e-6, 1e-7, None, None,
    ...                       EngineLog(), Tuning(), items=lambda: None)
    >>> out = solve_reduced(ctx)
    >>> out.allocation.round(6).tolist(), bool(out.cert.ok), out.classes.num_classes
    ([[0.25, 0.1], [0.75, 0.3], [0.0, 0.6]], True, 2)
    """
    market, log = ctx.market, ctx.log
    classes = ctx.classes if classes is None else classes
    sub = type(market)(market.utility[classes.representative], classes.total(market.budget),
                       market.supply, kind=market.kind)
    try:
        r = sub.solve(method=ctx.method, backend=log.conic, gap_tol=ctx.gap_tol,
                      feas_tol=ctx.feas_tol, time_limit=ctx.time_limit,
                      warm_start=ctx.warm_start, symmetry=False, tuning=ctx.tuning)
    except CertificateError as exc:
        raise Decline(f"the reduced market was not certified ({exc})") from exc
    except FairallocError as exc:
        ctx.raised.append(exc)
        raise
    log.replay(r.stats.path, r.stats.fallbacks)
    for name in r.stats.backend.split("+"):
        if name != "none":
            log.solved(name, r.stats.raw_status, count=False)
    if r.status in LIMITED:
        log.stopped(r.status)
    # the expanded point, certified on the original market's own edge form and data
    form = market._form
    alloc = expand_allocation(classes, r.allocation, market.budget)
    z = form.repair(market._edge_levels(alloc))
    p_n = r.prices.reshape(-1) * market._units.fs / market._units.fb
    cert, prices = form.certificate(z, [p_n], gap_tol=ctx.gap_tol, feas_tol=ctx.feas_tol)
    out = Solved(market._allocation(z), prices, cert, r.stats.iterations, r.stats.solves,
                 r.stats.method, classes)
    ctx.tried.append(out)
    return out


def _solve_items(ctx: SymmetryContext) -> Solved:
    """The original market buyer by buyer (the plan's exact tail, ``items``)."""
    if ctx.log.hit_limit and ctx.tried:
        raise Decline("a limit stopped the reduced market's solve: its point is reported")
    try:
        out = ctx.items()
    except FairallocError as exc:
        ctx.raised.append(exc)
        raise
    ctx.tried.append(out)
    return out


def _certificate(ctx: SymmetryContext, out: Solved) -> Certificate:
    return out.cert


def uses_classes(classes: Classes, near: Classes | None = None) -> bool:
    """Whether a market with buyer ``classes`` (exact) and ``near`` (near-identical) buyer
    classes is solved by `symmetry_plan` rather than buyer by buyer: one of the two is worth
    reducing (`worth_reducing`)."""
    return worth_reducing(classes) or (near is not None and worth_reducing(near))


def symmetry_plan(classes: Classes, near: Classes | None = None
                  ) -> tuple[Strategy[SymmetryContext, Solved], ...]:
    """The plan of a market with buyer ``classes`` (and ``near``-identical buyer classes):
    the market reduced over the near classes when they are worth reducing and fewer than the
    exact ones (``near-symmetry:<classes>``), over the exact classes when they are worth
    reducing (``symmetry:<classes>``), each certified on the original market, then the market
    buyer by buyer (``items``, exact).

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.plan import describe
    >>> describe(symmetry_plan(buyer_classes(np.array([[1.0], [1.0], [2.0]]))))
    ('symmetry:2', 'items!')
    >>> u = np.array([[1.0], [1.0 + 1e-12], [1.0], [2.0]])
    >>> describe(symmetry_plan(buyer_classes(u), near_buyer_classes(u)))
    ('near-symmetry:2', 'symmetry:3', 'items!')
    """
    plan: list[Strategy[SymmetryContext, Solved]] = []
    if (near is not None and near.num_classes < classes.num_classes
            and worth_reducing(near)):
        plan.append(Strategy(f"{NEAR_STEP}:{near.num_classes}",
                             lambda ctx: solve_reduced(ctx, near), _certificate))
    if worth_reducing(classes):
        plan.append(Strategy(f"{SYMMETRY_STEP}:{classes.num_classes}", solve_reduced,
                             _certificate))
    plan.append(Strategy(ITEMS_STEP, _solve_items, _certificate, exact=True))
    return tuple(plan)


def solve_symmetric(ctx: SymmetryContext) -> Solved:
    """Run `symmetry_plan` (`fairalloc.plan.run_plan`): the first result certified on the
    original market. When none certifies, the last result is returned as it is (the caller
    reports it with its proven gap after a limit, or raises its certificate's error); when
    none came back, the last strategy's own error is raised."""
    try:
        return run_plan(symmetry_plan(ctx.classes, ctx.near), ctx, ctx.log, what="market",
                        backend=ctx.log.conic.name).result
    except FairallocError:
        if ctx.tried:
            return ctx.tried[-1]
        if ctx.raised:
            raise ctx.raised[-1]  # noqa: B904 - the strategy's own error, with its cause
        raise
