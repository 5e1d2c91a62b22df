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
`EdgeForm.certificate`, on the original data); if that certificate failed where the reduced
one passed (it cannot, up to rounding), the original market is solved item by item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._symmetry import Classes, exact_classes
from ..errors import CertificateError
from ..results import Certificate
from ..solvelog import LIMITED
from .engine import EngineLog
from .tuning import DEFAULT_TUNING, Tuning

if TYPE_CHECKING:
    from .fisher import FisherMarket

__all__ = ["REDUCE_MAX_SHARE", "buyer_classes", "expand_allocation", "solve_reduced",
           "worth_reducing"]

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


def solve_reduced(market: FisherMarket, classes: Classes, method: str, *, gap_tol: float,
                  feas_tol: float, time_limit: float | None, warm_start: Any, log: EngineLog,
                  tuning: Tuning = DEFAULT_TUNING
                  ) -> tuple[np.ndarray, np.ndarray, Certificate, int, int, str] | None:
    """Solve ``market`` over its buyer ``classes``, expand, and certify on the original market.

    The reduced market (one buyer per class, budget the class's total, same supply) is solved
    by ``method`` without further reduction; its steps and fallbacks are appended to ``log``
    after ``"symmetry:<classes>"``. Returns ``(allocation in the caller's units, normalised
    prices, normalised certificate of the original market, iterations, solves, method)``, or
    ``None`` (a fallback noted in ``log``) when the original market must be solved buyer by
    buyer: the reduced market was not certified, or the expanded point was not certified on
    the original market.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc import FisherMarket
    >>> m = FisherMarket([[2.0, 1.0], [2.0, 1.0], [1.0, 2.0]], budget=[1.0, 3.0, 1.0])
    >>> log = EngineLog()
    >>> alloc, p, cert, *_ = solve_reduced(m, buyer_classes(m.utility), "conic", gap_tol=1e-6,
    ...                                    feas_tol=1e-7, time_limit=None, warm_start=None,
    ...                                    log=log)
    >>> alloc.round(6).tolist(), bool(cert.ok), log.path[0]
    ([[0.25, 0.1], [0.75, 0.3], [0.0, 0.6]], True, 'symmetry:2')
    """
    log.step(f"symmetry:{classes.num_classes}")
    sub = type(market)(market.utility[classes.representative], classes.total(market.budget),
                       market.supply, kind=market.kind)
    try:
        r = sub.solve(method=method, backend=log.conic, gap_tol=gap_tol, feas_tol=feas_tol,
                      time_limit=time_limit, warm_start=warm_start, symmetry=False,
                      tuning=tuning)
    except CertificateError as exc:
        log.hand_over("symmetry", "items", f"the reduced market was not certified ({exc})")
        return None
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
    cert, prices = form.certificate(z, [p_n], gap_tol=gap_tol, feas_tol=feas_tol)
    if not cert.ok and not log.hit_limit:
        log.hand_over("symmetry", "items", "the expanded point was not certified on the "
                     f"original market (relative gap {cert.relative_gap:.3g})")
        return None
    return (market._allocation(z), prices, cert, r.stats.iterations, r.stats.solves,
            r.stats.method)
