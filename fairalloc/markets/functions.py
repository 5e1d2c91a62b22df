"""The one-call market functions: `fairalloc.fisher_market` (static) and
`fairalloc.volatile_fisher_market` (over ``T`` rounds), each a
`fairalloc.FisherMarket` solved once."""

from __future__ import annotations

from typing import Any

from .._validation import as_array
from ..tolerances import FEAS_TOL, GAP_TOL
from .fisher import FisherMarket
from .result import MarketResult
from .tuning import Tuning

__all__ = ["fisher_market", "volatile_fisher_market"]


def fisher_market(
    utility: Any,
    budget: Any = None,
    supply: Any = None,
    *,
    kind: str = "linear",
    method: str = "auto",
    backend: Any = "clarabel",
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    time_limit: float | None = None,
    warm_start: Any = None,
    ids: Any = None,
    goods: Any = None,
    symmetry: bool = True,
    tuning: Tuning | None = None,
) -> MarketResult:
    """Equilibrium of a static Fisher market (Eisenberg-Gale program; Shockwave App. C-D).

    Parameters
    ----------
    utility : array_like, shape (n, m)
        ``kind="linear"``: ``u_i(x_i) = sum_j utility[i, j] x_ij``.
        ``kind="leontief"``: ``u_i(x_i) = min_{j: a_ij > 0} x_ij / utility[i, j]``.
    budget : array_like, shape (n,), optional
        Positive budgets; default ones.
    supply : array_like, shape (m,), optional
        Non-negative supply per good; default ones.
    kind : {"linear", "leontief"}
    method : {"auto", "fast", "conic", "cvxpy", "dual"}
        Solution method (see `fairalloc.markets`); all are exact and certified.
    backend : str or Backend
        Exponential-cone backend (``"clarabel"``); see
        `fairalloc.markets.FisherMarket.solve`.
    gap_tol, feas_tol : float
        Tolerances of the certificate: duality gap relative to the total budget, supply
        violation relative to each good's supply (both unit invariant).
    time_limit : float, optional
        Seconds per conic solve.
    warm_start : array_like, shape (m,), optional
        Prices to start the fast path from.
    ids : sequence of hashable, optional
        Buyer (job) ids, unique, one per row; default ``0..n-1``.
    goods : sequence of hashable, optional
        Names of the goods (e.g. GPU types), unique; default ``0..m-1``. The result carries
        ``ids`` and ``goods`` and labels ``to_frame()`` and its notebook view with them.
    symmetry : bool
        Exact symmetry reduction (default on): buyers with identical utility rows are merged
        (budgets added), solved once and split in proportion to budgets; the result is
        certified on the original market and ``stats.classes`` counts the classes (``None``
        when nothing merged). Buyers whose rows agree within a relative 1e-8 (round-off)
        are tried as one class first, accepted only if the expansion certifies on the
        original market. ``False`` solves buyer by buyer (see
        `fairalloc.markets.FisherMarket.solve`).
    tuning : fairalloc.markets.Tuning, optional
        The solve plans' performance knobs (none changes the certified answer).

    Returns
    -------
    MarketResult
        ``allocation (n, m)``, ``prices (m,)``, ``utility (n,)``, ``spending (n,)`` and a
        certificate (``r.gap`` is the certified duality gap).

    Raises
    ------
    InputError
        Bad shapes, NaN/inf, negative entries, a buyer who values nothing, all-zero supply.
    CertificateError
        If the certificate misses its tolerance.

    Examples
    --------
    Two buyers who each prefer a different good split the market; both prices are 1:

    >>> r = fisher_market([[2.0, 1.0], [1.0, 2.0]])
    >>> r.allocation.round(6).tolist(), r.prices.round(6).tolist()
    ([[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0])
    """
    U = as_array(utility, "utility", ndim=2)
    return FisherMarket(U, budget, supply, kind=kind, ids=ids, goods=goods).solve(
        method=method, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol,
        time_limit=time_limit, warm_start=warm_start, symmetry=symmetry,
        tuning=tuning)


def volatile_fisher_market(
    utility: Any,
    budget: Any = None,
    supply: Any = None,
    *,
    kind: str = "linear",
    method: str = "auto",
    backend: Any = "clarabel",
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    time_limit: float | None = None,
    warm_start: Any = None,
    ids: Any = None,
    goods: Any = None,
    symmetry: bool = True,
    tuning: Tuning | None = None,
) -> MarketResult:
    """Equilibrium of a volatile Fisher market over ``T`` rounds (Shockwave §4.1, App. C).

    Resources bought in round ``t`` are consumed in round ``t``; each buyer has one budget for
    the whole window and utility ``U_i = sum_t u_it(x_it)`` (linear or Leontief per round).
    Prices are per (resource, round).

    Parameters
    ----------
    utility : array_like, shape (n, m, T)
        Per-round utilities (linear) or demand vectors (Leontief).
    budget : array_like, shape (n,), optional
        Positive budgets for the whole window; default ones.
    supply : array_like, shape (m, T), optional
        Supply of each resource in each round; default ones.
    kind, method, backend, gap_tol, feas_tol, time_limit, warm_start
        As for `fairalloc.fisher_market` (``warm_start`` has shape (m, T)).
    ids, goods : sequence of hashable, optional
        Buyer ids and the names of the ``m`` resources, as for
        `fairalloc.fisher_market`.
    symmetry : bool
        Exact symmetry reduction over buyers whose utilities agree in every round, as for
        `fairalloc.fisher_market`.
    tuning : fairalloc.markets.Tuning, optional
        As for `fairalloc.fisher_market`.

    Returns
    -------
    MarketResult
        ``allocation (n, m, T)``, ``prices (m, T)``, ``utility (n,)`` summed over rounds.

    Examples
    --------
    Buyer 0 only values round 0, buyer 1 values both rounds: each round's good goes to the
    buyer who can use it, and buyer 1 gets round 1:

    >>> import numpy as np
    >>> u = np.array([[[1.0, 0.0]], [[1.0, 1.0]]])   # (2 buyers, 1 resource, 2 rounds)
    >>> r = volatile_fisher_market(u)
    >>> r.allocation[:, 0, :].round(4).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    U = as_array(utility, "utility", ndim=3)
    return FisherMarket(U, budget, supply, kind=kind, ids=ids, goods=goods).solve(
        method=method, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol,
        time_limit=time_limit, warm_start=warm_start, symmetry=symmetry,
        tuning=tuning)
