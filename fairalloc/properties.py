"""Property checks for allocations of divisible goods (markets over one or several rounds).

Each check takes plain arrays, so it applies to *any* policy's allocation, not only to
fairalloc's equilibria, and returns a `PropertyResult` that says whether the property
holds, by how much it fails, and for which agent. Definitions (budgets ``B``, supply ``s``,
utility ``u_i``; with equal budgets they are the classic ones):

* ``market_clearing`` -- every good with a positive price is sold out;
* ``budget_clearing`` -- every buyer spends its whole budget at the given prices;
* ``optimal_spending`` -- (linear) buyers buy only goods of maximum bang-per-buck
  ``u_ij / p_j``;
* ``envy_free`` -- ``u_i(x_i) / B_i >= u_i(x_k) / B_k`` for all ``i, k``;
* ``sharing_incentive`` -- ``u_i(x_i) >= u_i((B_i / sum B) s)``: everyone is at least as well
  off as with its budget share of every good; ``proportionality`` is the same check (for
  additive utilities the two coincide);
* ``pareto_optimal`` -- no feasible allocation makes someone better off and nobody worse off,
  decided exactly by a linear program (HiGHS), not by sampling.

Every tolerance is relative (to the market's value, a buyer's spending, budget-weighted
utility or fair share), so a verdict does not depend on the units of budgets, supply or
utilities; the Pareto LP is solved at unit scale (power-of-two factors).

Utilities are linear (``u_i(x) = sum_r u_ir x_r``) or Leontief per round
(``u_i(x) = sum_t min_{j: a_ijt > 0} x_jt / a_ijt``); arrays of shape (n, m) are one round,
(n, m, T) are ``T`` rounds (volatile markets).

Examples
--------
>>> import numpy as np
>>> u = np.array([[2.0, 1.0], [1.0, 2.0]])
>>> envy_free(u, np.eye(2)).passed, envy_free(u, np.array([[0, 0], [1, 1.0]])).passed
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._validation import as_array, as_option, as_real_array, as_tolerance
from .errors import InfeasibleError, InputError, SolverError
from .results import readonly
from .solvelog import SolveStatus

__all__ = [
    "PROPERTIES",
    "PropertyResult",
    "budget_clearing",
    "bundle_values",
    "check_market",
    "envy_free",
    "market_clearing",
    "optimal_spending",
    "pareto_gain",
    "pareto_optimal",
    "proportionality",
    "sharing_incentive",
]

KINDS = ("linear", "leontief")


def _pow2(x: Any) -> np.ndarray:
    """Power of two at or below ``x`` (exact scaling factors); 1 where ``x <= 0``."""
    x = np.asarray(x, dtype=float)
    _, e = np.frexp(np.where(x > 0, x, 1.0))
    return np.ldexp(1.0, e - 1)


@dataclass(frozen=True)
class PropertyResult:
    """Outcome of one property check.

    Parameters
    ----------
    name : str
        The property.
    passed : bool
        Whether it holds within tolerance.
    violation : float
        Size of the worst violation (0 when it holds), in the property's own units (utility,
        money or goods), before the tolerance is applied.
    agent : int or None
        The buyer hurt most (or the good, for ``market_clearing``).
    other : int or None
        The second party where there is one (the envied buyer for ``envy_free``).
    message : str
        A readable explanation.

    Examples
    --------
    >>> r = PropertyResult("envy_free", passed=False, violation=0.25, agent=1, other=0,
    ...                    message="buyer 1 envies buyer 0 by 0.25")
    >>> r.passed, r.agent, r.other
    (False, 1, 0)
    """

    name: str
    passed: bool
    violation: float
    agent: int | None = None
    other: int | None = None
    message: str = ""

    def __bool__(self) -> bool:
        return self.passed


def _inputs(utility: Any, allocation: Any, budget: Any = None, supply: Any = None,
            kind: str = "linear") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    kind = as_option(kind, "kind", KINDS)
    U = as_array(utility, "utility", ndim=(2, 3))
    X = as_array(allocation, "allocation", ndim=U.ndim, shape=U.shape)
    n = U.shape[0]
    B = np.ones(n) if budget is None else as_array(budget, "budget", ndim=1, shape=(n,),
                                                     positive=True)
    if supply is None:
        s = np.ones(U.shape[1:])
    else:
        s = as_array(supply, "supply", ndim=U.ndim - 1, shape=U.shape[1:])
    if U.ndim == 2:  # one round: add the round axis
        U, X, s = U[:, :, None], X[:, :, None], s[:, None]
    return U, X, B, s


def _finite(arr: np.ndarray, argument: str) -> np.ndarray:
    """``arr`` if every entry is finite, else InputError: the data overflow a float."""
    if not np.all(np.isfinite(arr)):
        raise InputError(f"the values computed from {argument} overflow a float; express the "
                         "data in other units", argument=argument)
    return arr


def _value(U3: np.ndarray, bundles: np.ndarray, kind: str) -> np.ndarray:
    """``V[i, k] = u_i(bundles[k])`` for bundles of shape (K, m, T)."""
    with np.errstate(all="ignore"):
        if kind == "linear":
            return _finite(np.einsum("imt,kmt->ik", U3, bundles), "allocation")
        ratio = np.where(U3[:, None] > 0, bundles[None] / U3[:, None], np.inf)  # (n, K, m, T)
        level = ratio.min(axis=2)  # (n, K, T)
        # a round the buyer has no demand in (all a = 0) gives nothing
        demand: np.ndarray = np.asarray((U3 > 0).any(axis=1))  # (n, T)
        return _finite(np.where(demand[:, None, :], level, 0.0).sum(axis=2), "allocation")


def bundle_values(utility: Any, allocation: Any, *, kind: str = "linear") -> np.ndarray:
    """Matrix ``V[i, k] = u_i(x_k)``: what buyer ``i`` thinks of buyer ``k``'s bundle.

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Each buyer's utilities (linear) or demands (Leontief); ``T`` rounds when 3-d.
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    kind : {"linear", "leontief"}, default "linear"
        How ``utility`` values a bundle.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        ``V[i, k]``, read-only.

    Examples
    --------
    >>> bundle_values([[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]]).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    U, X, _, _ = _inputs(utility, allocation, kind=kind)
    return readonly(_value(U, X, kind))


def market_clearing(allocation: Any, prices: Any, supply: Any = None, *,
                    tol: float = 1e-6) -> PropertyResult:
    """Every good with a positive price is sold out: ``p_j (s_j - sum_i x_ij) <= tol``.

    The violation is the value of the unsold supply of priced goods (``p_j`` times the
    unsold amount), so it is zero exactly when complementary slackness holds.

    Parameters
    ----------
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    prices : array_like, shape (m,) or (m, T)
        A price per good (and round).
    supply : array_like, shape (m,) or (m, T), optional
        Units of each good (default: 1 of each).
    tol : float, default 1e-6
        Relative tolerance (module docstring).

    Returns
    -------
    PropertyResult
        ``passed``, the ``violation``, the agent concerned and a message.

    Examples
    --------
    >>> market_clearing([[0.5, 1.0]], [2.0, 1.0]).passed   # good 0 priced but half unsold
    False
    """
    tol = as_tolerance(tol, "tol")
    X = as_array(allocation, "allocation", ndim=(2, 3))
    p = as_array(prices, "prices", ndim=X.ndim - 1, shape=X.shape[1:])
    s = np.ones(X.shape[1:]) if supply is None else as_array(
        supply, "supply", ndim=X.ndim - 1, shape=X.shape[1:])
    with np.errstate(all="ignore"):
        unsold = np.maximum(s - X.sum(axis=0), 0.0)
        waste = _finite((p * unsold).reshape(-1), "prices")
        # the market's total value: unit invariant
        scale = float(_finite(np.atleast_1d(np.sum(p * s)), "prices")[0])
    j = int(np.argmax(waste))
    viol = float(waste[j])
    ok = viol <= tol * scale
    return PropertyResult("market_clearing", ok, viol, j, None,
                          "every priced good is sold" if ok else
                          f"good {j} has price {p.reshape(-1)[j]:.4g} but "
                          f"{unsold.reshape(-1)[j]:.4g} of it is unsold")


def budget_clearing(allocation: Any, prices: Any, budget: Any = None, *,
                    tol: float = 1e-6) -> PropertyResult:
    """Every buyer spends its budget: ``|sum_j p_j x_ij - B_i| <= tol * B_i``.

    Parameters
    ----------
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    prices : array_like, shape (m,) or (m, T)
        A price per good (and round).
    budget : array_like, shape (n,), optional
        The buyers' budgets (default: 1 each).
    tol : float, default 1e-6
        Relative tolerance (module docstring).

    Returns
    -------
    PropertyResult
        ``passed``, the ``violation``, the agent concerned and a message.

    Examples
    --------
    >>> budget_clearing([[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0]).passed
    True
"""
    tol = as_tolerance(tol, "tol")
    X = as_array(allocation, "allocation", ndim=(2, 3))
    n = X.shape[0]
    p = as_array(prices, "prices", ndim=X.ndim - 1, shape=X.shape[1:])
    B = np.ones(n) if budget is None else as_array(budget, "budget", ndim=1, shape=(n,),
                                                     positive=True)
    with np.errstate(all="ignore"):
        spend = _finite(X.reshape(n, -1) @ p.reshape(-1), "prices")
    with np.errstate(over="ignore"):  # (a spending beyond floats next to its budget: inf)
        err = np.abs(spend - B) / B
    i = int(np.argmax(err))
    ok = bool(err[i] <= tol)
    return PropertyResult("budget_clearing", ok, float(err[i] * B[i]), i, None,
                          "every buyer spends its budget" if ok else
                          f"buyer {i} spends {spend[i]:.6g} of its budget {B[i]:.6g}")


def optimal_spending(utility: Any, allocation: Any, prices: Any, *,
                     tol: float = 1e-6) -> PropertyResult:
    """(Linear) each buyer buys only goods of maximum bang-per-buck ``u_ij / p_j``.

    The violation is the money a buyer spends on goods whose bang-per-buck is below its best
    by more than a relative ``tol`` (a good with price 0 that it values has infinite
    bang-per-buck).

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Each buyer's utilities (linear) or demands (Leontief); ``T`` rounds when 3-d.
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    prices : array_like, shape (m,) or (m, T)
        A price per good (and round).
    tol : float, default 1e-6
        Relative tolerance (module docstring).

    Returns
    -------
    PropertyResult
        ``passed``, the ``violation``, the agent concerned and a message.

    Examples
    --------
    >>> optimal_spending([[2.0, 1.0]], [[0.5, 0.5]], [1.0, 1.0]).violation   # half on good 1
    0.5
    """
    tol = as_tolerance(tol, "tol")
    U, X, _, _ = _inputs(utility, allocation)
    n = U.shape[0]
    Uf, Xf = U.reshape(n, -1), X.reshape(n, -1)
    p = as_array(prices, "prices", ndim=(1, 2)).reshape(-1)
    if p.size != Uf.shape[1]:
        raise InputError(f"prices has {p.size} entries for {Uf.shape[1]} goods",
                         argument="prices")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (inf: unbounded)
        bpb = np.where(p > 0, Uf / p, np.where(Uf > 0, np.inf, 0.0))
    best = bpb.max(axis=1)
    with np.errstate(invalid="ignore"):
        poor = (bpb < best[:, None] * (1 - tol)) & ~np.isinf(best)[:, None]
    with np.errstate(all="ignore"):
        waste = _finite(np.sum(np.where(poor, Xf * p, 0.0), axis=1), "prices")
        _finite(Xf @ p, "prices")
    i = int(np.argmax(waste))
    ok = bool(waste[i] <= tol * float(np.sum(Xf[i] * p)))  # relative to its spending
    return PropertyResult("optimal_spending", ok, float(waste[i]), i, None,
                          "every buyer buys only best bang-per-buck goods" if ok else
                          f"buyer {i} spends {waste[i]:.4g} on goods below its best "
                          "bang-per-buck")


def envy_free(utility: Any, allocation: Any, budget: Any = None, *, kind: str = "linear",
              tol: float = 1e-6) -> PropertyResult:
    """Budget-weighted envy-freeness: ``u_i(x_i) / B_i >= u_i(x_k) / B_k`` for all ``i, k``.

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Each buyer's utilities (linear) or demands (Leontief); ``T`` rounds when 3-d.
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    budget : array_like, shape (n,), optional
        The buyers' budgets (default: 1 each).
    kind : {"linear", "leontief"}, default "linear"
        How ``utility`` values a bundle.
    tol : float, default 1e-6
        Relative tolerance (module docstring).

    Returns
    -------
    PropertyResult
        ``passed``, the ``violation``, the agent concerned and a message.

    Examples
    --------
    >>> envy_free([[1.0], [1.0]], [[1.0], [0.0]]).passed
    False
    """
    tol = as_tolerance(tol, "tol")
    U, X, B, _ = _inputs(utility, allocation, budget, kind=kind)
    V = _value(U, X, kind)
    with np.errstate(all="ignore"):
        own = np.diag(V) / B
        envy = _finite(V / B[None, :] - own[:, None], "budget")  # (i, k): per-budget envy
    np.fill_diagonal(envy, 0.0)
    i, k = np.unravel_index(int(np.argmax(envy)), envy.shape)
    viol = float(envy[i, k])
    ok = viol <= tol * max(float(np.abs(own[i])), float(np.abs(V[i, k] / B[k])))
    return PropertyResult("envy_free", ok, max(viol, 0.0), int(i), int(k),
                          "no buyer envies another" if ok else
                          f"buyer {i} values buyer {k}'s bundle at {V[i, k]:.6g} "
                          f"(budget {B[k]:.4g}) above its own {V[i, i]:.6g} "
                          f"(budget {B[i]:.4g})")


def sharing_incentive(utility: Any, allocation: Any, budget: Any = None, supply: Any = None,
                      *, kind: str = "linear", tol: float = 1e-6) -> PropertyResult:
    """``u_i(x_i) >= u_i((B_i / sum B) s)``: at least as good as the budget share of supply.

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Each buyer's utilities (linear) or demands (Leontief); ``T`` rounds when 3-d.
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    budget : array_like, shape (n,), optional
        The buyers' budgets (default: 1 each).
    supply : array_like, shape (m,) or (m, T), optional
        Units of each good (default: 1 of each).
    kind : {"linear", "leontief"}, default "linear"
        How ``utility`` values a bundle.
    tol : float, default 1e-6
        Relative tolerance (module docstring).

    Returns
    -------
    PropertyResult
        ``passed``, the ``violation``, the agent concerned and a message.

    Examples
    --------
    >>> sharing_incentive([[1.0], [1.0]], [[1.0], [0.0]]).message
    'buyer 1 gets utility 0 < 0.5 from its budget share of the supply'
"""
    tol = as_tolerance(tol, "tol")
    U, X, B, s = _inputs(utility, allocation, budget, supply, kind=kind)
    own = np.diag(_value(U, X, kind))
    share = (B / B.sum())[:, None, None] * s[None]
    fair = np.diag(_value(U, share, kind))
    short = fair - own
    i = int(np.argmax(short))
    ok = short[i] <= tol * float(fair[i])
    return PropertyResult("sharing_incentive", bool(ok), float(max(short[i], 0.0)), i, None,
                          "every buyer is at least as well off as with its share" if ok else
                          f"buyer {i} gets utility {own[i]:.6g} < {fair[i]:.6g} from its "
                          f"budget share of the supply")


def proportionality(utility: Any, allocation: Any, budget: Any = None, supply: Any = None,
                    *, kind: str = "linear", tol: float = 1e-6) -> PropertyResult:
    """Proportionality ``u_i(x_i) >= (B_i / sum B) u_i(s)``; equals sharing incentive for
    additive (linear) utilities, and is implied by it for Leontief ones.

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Each buyer's utilities (linear) or demands (Leontief); ``T`` rounds when 3-d.
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    budget : array_like, shape (n,), optional
        The buyers' budgets (default: 1 each).
    supply : array_like, shape (m,) or (m, T), optional
        Units of each good (default: 1 of each).
    kind : {"linear", "leontief"}, default "linear"
        How ``utility`` values a bundle.
    tol : float, default 1e-6
        Relative tolerance (module docstring).

    Returns
    -------
    PropertyResult
        ``passed``, the ``violation``, the agent concerned and a message.

    Examples
    --------
    >>> proportionality([[1.0, 3.0], [1.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]).passed
    True
    """
    tol = as_tolerance(tol, "tol")
    U, X, B, s = _inputs(utility, allocation, budget, supply, kind=kind)
    own = np.diag(_value(U, X, kind))
    whole = _value(U, s[None], kind)[:, 0]
    fair = B / B.sum() * whole
    short = fair - own
    i = int(np.argmax(short))
    ok = short[i] <= tol * float(fair[i])
    return PropertyResult("proportionality", bool(ok), float(max(short[i], 0.0)), i, None,
                          "every buyer gets its proportional share of value" if ok else
                          f"buyer {i} gets utility {own[i]:.6g} < its share {fair[i]:.6g}")


def pareto_gain(util: sp.spmatrix, own: np.ndarray, feasible: sp.spmatrix,
                feasible_upper: np.ndarray, col_upper: np.ndarray) -> np.ndarray:
    """Largest Pareto improvement over utilities ``own``, by one LP (HiGHS).

    Over allocations ``y`` with ``0 <= y <= col_upper`` and ``feasible @ y <= feasible_upper``,
    solves ``max sum_k t_k`` s.t. ``util @ y >= own + t``, ``t >= 0`` and returns ``t``: all
    zeros iff no feasible allocation makes someone better off with nobody worse off. Shared by
    `pareto_optimal` and `fairalloc.testing`'s cluster domain.

    Parameters
    ----------
    util : scipy.sparse matrix, shape (K, N)
        Each agent's utility as a linear function of the allocation's ``N`` variables.
    own : numpy.ndarray, shape (K,)
        The utilities to improve on.
    feasible : scipy.sparse matrix, shape (R, N)
        Rows of the feasibility constraints ``feasible @ y <= feasible_upper``.
    feasible_upper : numpy.ndarray, shape (R,)
        Their right-hand sides.
    col_upper : numpy.ndarray, shape (N,)
        Upper bounds of the variables (``inf``: none).

    Returns
    -------
    numpy.ndarray, shape (K,)
        The gain ``t_k >= 0`` of each agent at the LP's optimum.

    Raises
    ------
    InputError
        For malformed or non-finite arguments (named).
    InfeasibleError
        When no feasible allocation reaches the utilities ``own``.
    SolverError
        When HiGHS ends without an optimum otherwise.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> pareto_gain(sp.csr_matrix([[1.0]]), np.array([0.5]), sp.csr_matrix([[1.0]]),
    ...             np.array([1.0]), np.array([np.inf])).tolist()
    [0.5]
    """
    from .backends import LinearProgram, get_backend

    util = _as_sparse(util, "util")
    feasible = _as_sparse(feasible, "feasible")
    n, nv = util.shape
    rows = feasible.shape[0]
    if feasible.shape[1] != nv:
        raise InputError(f"feasible has {feasible.shape[1]} columns for {nv} variables",
                         argument="feasible")
    own = as_array(own, "own", ndim=1, shape=(n,))
    feasible_upper = _as_upper(feasible_upper, "feasible_upper", rows, nonneg=False)
    col_upper = _as_upper(col_upper, "col_upper", nv, nonneg=True)
    # unit scale (HiGHS's tolerances are absolute): each variable in units of the most it can
    # take, each row in units of its largest term -- powers of two, so exact
    Fabs = abs(feasible).tocsc()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = sp.csc_matrix((np.abs(feasible_upper)[Fabs.indices] / Fabs.data, Fabs.indices,
                               Fabs.indptr), shape=Fabs.shape)
    cap = np.full(nv, np.inf)
    if ratio.nnz:
        has = np.diff(ratio.indptr) > 0
        cap[has] = np.minimum.reduceat(ratio.data, ratio.indptr[:-1][has])
    cap = np.minimum(cap, col_upper)
    cs = _pow2(np.where(np.isfinite(cap) & (cap > 0), cap, 1.0))
    util_s = (util @ sp.diags(cs)).tocsr()
    ru = _pow2(np.maximum(np.asarray(abs(util_s).max(axis=1).todense()).ravel(), own))
    feas_s = (feasible @ sp.diags(cs)).tocsr()
    rf = _pow2(np.asarray(abs(feas_s).max(axis=1).todense()).ravel())
    util_s = sp.diags(1.0 / ru) @ util_s
    feas_s = sp.diags(1.0 / rf) @ feas_s
    A = sp.vstack([sp.hstack([util_s, -sp.identity(n, format="csr")]),
                   sp.hstack([feas_s, sp.csr_matrix((rows, n))])])
    lp = LinearProgram.build(
        c=np.r_[np.zeros(nv), -ru / np.max(ru)],  # max sum_k t_k (t_k = ru_k t'_k)
        A=A,
        row_lower=np.r_[own / ru, np.full(rows, -np.inf)],
        row_upper=np.r_[np.full(n, np.inf), feasible_upper / rf],
        col_lower=0.0,
        col_upper=np.r_[col_upper / cs, np.full(n, np.inf)],
    )
    sol = get_backend("highs", need="lp").solve_lp(lp)
    if sol.status == "infeasible":  # (fuzz seed 10: own = [1e308, 0])
        raise InfeasibleError("no feasible allocation gives every agent its utility in own: "
                              "own is above what the feasible set reaches (is it the "
                              "utilities of a feasible allocation?)", backend="highs",
                              raw_status=sol.raw_status)
    if sol.status != "optimal" or sol.x is None:
        raise SolverError(f"Pareto LP failed: {sol.raw_status}", backend="highs",
                          status=sol.status, raw_status=sol.raw_status)
    return readonly(np.maximum(sol.x[nv:], 0.0) * ru)


def _as_sparse(value: Any, name: str) -> sp.csr_matrix:
    """A finite 2-d sparse matrix (or array converted to one)."""
    try:
        mat = sp.csr_matrix(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a 2-d numeric (sparse) matrix ({exc})",
                         argument=name) from None
    if not np.all(np.isfinite(mat.data)):
        raise InputError(f"{name} has a non-finite entry", argument=name)
    return mat


def _as_upper(value: Any, name: str, size: int, *, nonneg: bool) -> np.ndarray:
    """Upper bounds: a float vector of ``size`` entries, no NaN or -inf (+inf: no bound)."""
    arr = as_real_array(value, name).reshape(-1)
    if arr.size != size:
        raise InputError(f"{name} has {arr.size} entries, expected {size}", argument=name)
    bad = np.isnan(arr) | (arr == -np.inf) | ((arr < 0) if nonneg else False)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name}[{i}] is {arr[i]}; bounds must be numbers"
                         f"{' >= 0' if nonneg else ''} (inf: none)", argument=name, index=(i,))
    return arr


def pareto_optimal(utility: Any, allocation: Any, supply: Any = None, *,
                   kind: str = "linear", tol: float = 1e-6) -> PropertyResult:
    """Pareto optimality decided by an LP (HiGHS).

    Solves ``max sum_k t_k`` over feasible allocations ``y`` with ``u_k(y_k) >= u_k(x_k) + t_k``
    and ``t >= 0``. The allocation is Pareto optimal iff the optimum is (within ``tol``) zero;
    otherwise the LP's ``y`` is a Pareto improvement and ``agent`` the buyer who gains most.

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Each buyer's utilities (linear) or demands (Leontief); ``T`` rounds when 3-d.
    allocation : array_like, shape (n, m) or (n, m, T)
        The allocation checked (any policy's).
    supply : array_like, shape (m,) or (m, T), optional
        Units of each good (default: 1 of each).
    kind : {"linear", "leontief"}, default "linear"
        How ``utility`` values a bundle.
    tol : float, default 1e-6
        Relative tolerance (module docstring).

    Returns
    -------
    PropertyResult
        ``passed``, the ``violation``, the agent concerned and a message.

    Examples
    --------
    Leaving half of the only good unsold is not Pareto optimal:

    >>> pareto_optimal([[1.0]], [[0.5]]).violation
    0.5
    """
    tol = as_tolerance(tol, "tol")
    U, X, _, s = _inputs(utility, allocation, None, supply, kind=kind)
    n, m, T = U.shape
    own = np.diag(_value(U, X, kind))
    R = m * T
    # the LP is solved at unit scale (HiGHS's tolerances are absolute): supply per good and
    # each buyer's utility row scaled by powers of two, so the verdict is unit invariant
    fs = _pow2(s.reshape(m, T))
    if kind == "linear":
        per_unit = U * fs[None]
        ufac = _pow2(per_unit.reshape(n, R).max(axis=1))
        U = per_unit / ufac[:, None, None]
    else:
        demand = U / fs[None]
        g = _pow2(demand.reshape(n, R).max(axis=1))
        ufac = 1.0 / g
        U = demand / g[:, None, None]
    s = s / fs
    own = own / ufac
    if kind == "linear":
        # variables: y (n*R, row-major), t (n)
        Uf = U.reshape(n, R)
        rows_u = np.repeat(np.arange(n), R)
        util = sp.csr_matrix((Uf.ravel(), (rows_u, np.arange(n * R))), shape=(n, n * R))
        cap = sp.csr_matrix((np.ones(n * R), (np.tile(np.arange(R), n), np.arange(n * R))),
                            shape=(R, n * R))
        nv = n * R
        col_upper = np.full(nv, np.inf)
    else:
        # variables: levels v (n*T, row-major), t (n); v_kt = 0 where round t is unusable
        nv = n * T
        util = sp.csr_matrix((np.ones(nv), (np.repeat(np.arange(n), T), np.arange(nv))),
                             shape=(n, nv))
        k_idx, j_idx, t_idx = np.nonzero(U)
        cap = sp.csr_matrix((U[k_idx, j_idx, t_idx], (j_idx * T + t_idx, k_idx * T + t_idx)),
                            shape=(R, nv))
        usable = (U > 0).any(axis=1).reshape(-1)
        col_upper = np.where(usable, np.inf, 0.0)
    try:
        gain = pareto_gain(util, own, cap, s.reshape(R), col_upper)
    except SolverError as exc:
        if exc.status != SolveStatus.INFEASIBLE:
            raise
        # no feasible allocation gives everyone as much: the allocation over-uses the supply
        # (see market_clearing / feasibility), and nothing feasible Pareto-improves on it
        return PropertyResult("pareto_optimal", True, 0.0, None, None,
                              "no feasible allocation is as good for every buyer (the "
                              "allocation itself exceeds the supply)")
    i = int(np.argmax(gain))
    # at unit scale a buyer's utility of the whole supply is O(1): judge the gain against it
    ok = gain[i] <= tol * max(1.0, float(own[i]))
    gain = gain * ufac
    return PropertyResult("pareto_optimal", bool(ok), float(gain[i]), i, None,
                          "no Pareto improvement exists" if ok else
                          f"buyer {i} can gain {gain[i]:.4g} utility with nobody worse off")


PROPERTIES = ("market_clearing", "budget_clearing", "optimal_spending", "envy_free",
              "sharing_incentive", "proportionality", "pareto_optimal")


def check_market(result: Any, utility: Any, *, supply: Any = None, kind: str = "linear",
                 properties: tuple[str, ...] = PROPERTIES, tol: float = 1e-6
                 ) -> dict[str, PropertyResult]:
    """Run property checks on a `fairalloc.MarketResult`.

    ``optimal_spending`` applies to linear markets only and is skipped for Leontief ones.

    Parameters
    ----------
    result : MarketResult
        An equilibrium (`fairalloc.fisher_market`): its ``budget``, ``allocation`` and
        ``prices`` are checked.
    utility : array_like, shape (n, m) or (n, m, T)
        The buyers' true utilities (linear) or demands (Leontief).
    supply : array_like, optional
        Units of each good (default: one of each).
    kind : {"linear", "leontief"}, default "linear"
        How ``utility`` values a bundle.
    properties : tuple of str, default every property
        Names from ``fairalloc.properties.PROPERTIES``.
    tol : float, default 1e-6
        Relative tolerance of every check (module docstring).

    Returns
    -------
    dict of str to PropertyResult
        One verdict per property checked, in the order asked (true when it holds).

    Examples
    --------
    >>> import fairalloc as fa
    >>> u = [[2.0, 1.0], [1.0, 3.0]]
    >>> checks = check_market(fa.fisher_market(u), u)
    >>> all(checks.values())
    True
    """
    kind = as_option(kind, "kind", KINDS)
    tol = as_tolerance(tol, "tol")
    if isinstance(properties, str) or not isinstance(properties, tuple | list):
        raise InputError(f"properties must be a tuple of names from {PROPERTIES}, got "
                         f"{properties!r}", argument="properties")
    out: dict[str, PropertyResult] = {}
    try:
        B, X, p = result.budget, result.allocation, result.prices
    except AttributeError:
        raise InputError("result must be a MarketResult (budget, allocation, prices)",
                         argument="result") from None
    for name in properties:
        as_option(name, "properties", PROPERTIES)
        if name == "market_clearing":
            out[name] = market_clearing(X, p, supply, tol=tol)
        elif name == "budget_clearing":
            out[name] = budget_clearing(X, p, B, tol=tol)
        elif name == "optimal_spending":
            if kind == "linear":
                out[name] = optimal_spending(utility, X, p, tol=tol)
        elif name == "envy_free":
            out[name] = envy_free(utility, X, B, kind=kind, tol=tol)
        elif name == "sharing_incentive":
            out[name] = sharing_incentive(utility, X, B, supply, kind=kind, tol=tol)
        elif name == "proportionality":
            out[name] = proportionality(utility, X, B, supply, kind=kind, tol=tol)
        else:
            out[name] = pareto_optimal(utility, X, supply, kind=kind, tol=tol)
    return out
