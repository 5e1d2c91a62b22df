"""Divisible partial allocation (Themis §3.3.1; Cole, Gkatzelis and Goel): the PF market, the
``n`` leave-one-out markets and the fractions ``c_i``.

Every market is solved and certified by the Eisenberg-Gale engine of
`fairalloc.markets` (`fairalloc.fisher_market` for
the PF market; the warm-started searches, the batched interior-point method and the batched
leave-one-out markets of `fairalloc.markets.warm` / `fairalloc.markets.ipm`); this module is the
mechanism around them. See ``formulations/partial_allocation.md`` for the programs.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._display import Table, labelled, price_table
from .._validation import as_array, as_labels, as_option, as_tolerance
from ..errors import CertificateError, InputError
from ..markets.warm import ReducedMarket, loo_batch
from ..results import Certificate, Result, Status, fill_labels, require_pandas
from ..tolerances import GAP_TOL
from ._pool import _clean_log, _parallel_map, _solve_stats, _used, _workers
from .pa_plan import (
    LOO_TARGET,
    LooContext,
    LooOutcome,
    PFContext,
    aim,
    loo_plan,
    margin,
    solve_log,
    solve_loo,
    solve_pf,
)
from .tuning import Tuning, as_tuning

__all__ = ["PartialAllocationResult", "partial_allocation"]

PA_METHODS = ("warm", "cold")  # leave-one-out solution paths (``method=``)
_LOG2 = math.log(2.0)


# ============================================================================================
# Eisenberg-Gale pieces for linear markets (dense (n, m) form)
# ============================================================================================
# ============================================================================================
# divisible partial allocation
# ============================================================================================
@dataclass(frozen=True, repr=False)
class PartialAllocationResult(Result):
    """Outcome of the partial allocation mechanism on divisible goods.

    Parameters
    ----------
    allocation : ndarray, shape (n, m)
        What each agent receives: ``fraction[:, None] * pf_allocation``. ``x`` is the same
        array (the name every result shares).
    fraction : ndarray, shape (n,)
        ``c_i`` in ``(0, 1]``: the share of its PF bundle agent ``i`` keeps.
    pf_allocation : ndarray, shape (n, m)
        The proportionally fair allocation (Eisenberg-Gale with equal budgets).
    leftover : ndarray, shape (m,)
        ``supply - allocation.sum(0)``: the hidden payments (and any unsold supply).
    prices : ndarray, shape (m,)
        Equilibrium prices of the PF market (non-negative supply multipliers).
    pf_utility, utility : ndarray, shape (n,)
        ``u_i(x*_i)`` and the realised ``c_i u_i(x*_i)``.
    loo_objective : ndarray, shape (n,)
        ``sum_{j != i} log u_j`` at the certified optimum of the market without ``i``
        (the primal value of a feasible allocation; the optimum is at most ``loo_gap`` higher).
    loo_gap : ndarray, shape (n,)
        Certified absolute duality gap of each leave-one-out solve.
    fraction_error : ndarray, shape (n,)
        Certified relative uncertainty of each ``c_i``: the fraction computed from the exact
        leave-one-out optimum lies in ``[fraction / (1 + fraction_error), fraction]``.
    objective : float
        ``sum_i log u_i(x*)`` (the PF objective).
    ids, goods : tuple
        The agents' ids and the goods' names (``partial_allocation(ids=, goods=)``; default
        ``0..n-1`` and ``0..m-1``), used by ``to_frame()`` and the notebook view.
    status : Status
        ``OPTIMAL`` only when ``certificate`` passed (`fairalloc.Result`).
    stats : SolveStats
        How it was computed (``stats.path``: the steps that ran).
    certificate : Certificate
        The independent optimality certificate of ``objective``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> r = fa.partial_allocation([[2.0, 1.0], [1.0, 2.0]], [1.0, 1.0])
    >>> r.fraction.round(6).tolist(), r.allocation.round(6).tolist()
    ([0.666667, 0.666667], [[0.666667, 0.0], [0.0, 0.666667]])
    >>> r.leftover.round(6).tolist()
    [0.333333, 0.333333]
    """

    allocation: np.ndarray
    fraction: np.ndarray
    pf_allocation: np.ndarray
    leftover: np.ndarray
    prices: np.ndarray
    pf_utility: np.ndarray
    utility: np.ndarray
    loo_objective: np.ndarray
    loo_gap: np.ndarray
    fraction_error: np.ndarray
    ids: tuple[Hashable, ...] = ()
    goods: tuple[Hashable, ...] = ()

    LABEL_FIELDS: ClassVar[tuple[str, ...]] = ("ids", "goods")

    def __post_init__(self) -> None:
        n, m = self.allocation.shape
        fill_labels(self, ids=n, goods=m)
        super().__post_init__()

    @property
    def x(self) -> np.ndarray:
        """Alias of ``allocation`` (the name every result shares; the same object, not a
        copy)."""
        return self.allocation

    def _facts(self) -> list[tuple[str, str]]:
        n, m = self.allocation.shape
        return [("agents", str(n)), ("goods", str(m)), *super()._facts()]

    def _tables(self) -> list[Table]:
        return [labelled("allocation (amount of each good)", "agent", self.ids, self.goods,
                         self.allocation, extra=[("fraction", self.fraction),
                                                 ("utility", self.utility)]),
                price_table(self.prices, self.goods, "prices of the PF market")]

    def to_frame(self) -> Any:
        """One row per agent (index: ``ids``): fraction, PF and realised utility, certified
        error, then ``x[good]``."""
        pd = require_pandas()
        df = pd.DataFrame({"fraction": self.fraction, "pf_utility": self.pf_utility,
                           "utility": self.utility, "fraction_error": self.fraction_error},
                          index=pd.Index(list(self.ids), name="agent"))
        alloc = pd.DataFrame(self.allocation, columns=[f"x[{g}]" for g in self.goods],
                             index=df.index)
        return pd.concat([df, alloc], axis=1)


def _loo_chunk(ctx: tuple[Any, ...], idx: np.ndarray) -> list[LooOutcome]:
    """A chunk of leave-one-out markets: one block-diagonal interior-point solve of the chunk
    (`fairalloc.markets.warm.loo_batch`, the plans' ``loo-batched-ipm``), then each market's
    plan (`fairalloc.auctions.pa_plan.loo_plan`)."""
    U, s, p_pf, gap_tol, solvers, red, tuning = ctx
    batched: list[tuple[float, float] | None] = [None] * idx.size
    if tuning.loo_batch and red is not None and U.shape[0] > 1:
        accept = aim(gap_tol, float(U.shape[0] - 1))
        try:
            primal, gap, solved = loo_batch(red, idx, min(LOO_TARGET, accept))
        except (np.linalg.LinAlgError, ValueError, FloatingPointError, RuntimeError):
            solved = np.zeros(idx.size, dtype=bool)  # every market goes the per-market way
        for r in np.flatnonzero(solved):
            batched[r] = (float(primal[r]), float(gap[r]))
    return [solve_loo(LooContext(U, s, p_pf, gap_tol, solvers, tuning, int(i), batched[r],
                                 solve_log(solvers)), "warm") for r, i in enumerate(idx)]


def _loo_one_cold(ctx: tuple[Any, ...], i: int) -> LooOutcome:
    """The market without ``i`` by `fairalloc.fisher_market` alone (``method="cold"``)."""
    U, s, p_pf, gap_tol, solvers, _, tuning = ctx
    return solve_loo(LooContext(U, s, p_pf, gap_tol, solvers, tuning, i, None,
                                solve_log(solvers)), "cold")


@_clean_log
def partial_allocation(
    utility: Any,
    supply: Any = None,
    *,
    method: str = "warm",
    workers: int | None = 1,
    gap_tol: float = GAP_TOL,
    backend: Any = None,
    ids: Any = None,
    goods: Any = None,
    tuning: Tuning | None = None,
) -> PartialAllocationResult:
    """Partial allocation mechanism for divisible goods and linear valuations (Themis §3.3.1).

    Cole-Gkatzelis-Goel's mechanism (Pseudocode 1, ``AUCTION``): the proportionally fair
    allocation ``x*`` (Eisenberg-Gale with equal budgets), the fraction
    ``c_i = prod_{j != i} u_j(x*) / prod_{j != i} u_j(x*_{-i})`` with ``x*_{-i}`` the PF
    allocation of the market without ``i``, allocation ``c_i x*_i`` and leftover
    ``supply - sum_i c_i x*_i``.

    Parameters
    ----------
    utility : array_like, shape (n, m)
        ``utility[i, j] >= 0``: agent ``i``'s value per unit of good ``j``
        (``u_i(x_i) = sum_j utility[i, j] x_ij``). Every agent must value some good.
    supply : array_like, shape (m,), optional
        Non-negative supply of each good; default ones.
    method : {"warm", "cold"}
        ``"warm"`` (default): each leave-one-out market is solved on a reduced market
        warm-started from the PF prices and certified by its own duality gap.
        ``"cold"``: ``n`` independent `fairalloc.fisher_market` solves
        (the reference).
    workers : int or None
        Processes for the ``n`` leave-one-out solves (``None``: up to two, the machine's
        cores). Results do not depend on it.
    gap_tol : float
        Relative duality gap every certified market must prove (default
        `fairalloc.tolerances.GAP_TOL`). An Eisenberg-Gale gap is judged against the
        market's total budget (``n`` for the PF market, ``n - 1`` without one agent): its
        objective ``sum log u`` shifts by a constant when utilities are rescaled, its gap does
        not. The leave-one-out searches aim for ``min(gap_tol, 1e-9)`` per unit budget, so the
        fractions' certified errors (``fraction_error``) are usually far smaller.
    ids : sequence of hashable, optional
        The agents' ids (unique, one per row of ``utility``); default ``0..n-1``.
    goods : sequence of hashable, optional
        The goods' names (unique); default ``0..m-1``. The result carries ``ids`` and
        ``goods`` and labels ``to_frame()`` and its notebook view with them.
    backend : str or Backend, optional
        Solver for the exact conic path (exponential cones; ``"clarabel"``) and the support
        LPs. ``None`` (default): Clarabel for conic programs, HiGHS for LPs. A named backend
        is used for every solve and must handle exponential cones (else ``InputError``).
        Most markets need no backend at all (``stats.backend`` is then ``"numpy"``: the
        interior-point and polishing steps are fairalloc's own).
    tuning : fairalloc.auctions.Tuning, optional
        Performance knobs of the solve plans (`fairalloc.auctions.pa_plan`): which strategy
        answers each market and how fast, never the answer. Default: ``Tuning()``.

    Returns
    -------
    PartialAllocationResult

    Raises
    ------
    InputError
        Bad shapes, NaN/inf or negative entries, an agent who values nothing (or only goods
        with zero supply), all-zero supply, a bad option (naming the argument).
    CertificateError
        If the PF solve or a leave-one-out solve cannot be certified to ``gap_tol``.
    SolverError
        If a solver fails (the cause chained).

    Notes
    -----
    The problem is normalised before it is solved: every good's supply and every agent's
    utilities are scaled by powers of two (exact in floating point) to unit magnitude, and
    the results are mapped back. Rescaling utilities or supply therefore leaves fractions
    unchanged and scales allocations, prices and utilities as the mathematics says.

    Examples
    --------
    Two agents, two goods; agent 0 likes good 0 twice as much, agent 1 likes both equally:

    >>> r = partial_allocation([[2.0, 1.0], [1.0, 1.0]])
    >>> r.pf_allocation.round(4).tolist()
    [[1.0, 0.0], [0.0, 1.0]]

    Without agent 0, agent 1 would get both goods (utility 2 instead of 1): ``c_0 = 1/2``.
    Without agent 1, agent 0 would get utility 3 instead of 2: ``c_1 = 2/3``.

    >>> r.fraction.round(4).tolist(), r.leftover.round(4).tolist()
    ([0.5, 0.6667], [0.5, 0.3333])
    """
    t0 = time.perf_counter()
    mark = _used().mark()
    U = as_array(utility, "utility", ndim=2)
    n, m = U.shape
    ids = as_labels(ids, "ids", n, "agents")
    goods = as_labels(goods, "goods", m, "goods")
    s = np.ones(m) if supply is None else as_array(supply, "supply", ndim=1, shape=(m,))
    if not (s > 0).any():
        raise InputError("supply is all zero: there is nothing to allocate", argument="supply")
    method = as_option(method, "method", PA_METHODS)
    nw = _workers(workers)
    gap_tol = as_tolerance(gap_tol, "gap_tol")
    solvers = _pa_solvers(backend)
    tuning = as_tuning(tuning)
    zero_row = ~(U > 0).any(axis=1)
    if zero_row.any():
        i = int(np.flatnonzero(zero_row)[0])
        raise InputError(f"utility[{i}] is all zero: agent {i} values nothing",
                         argument="utility", index=(i,))
    blocked = ~((U > 0) & (s > 0)[None, :]).any(axis=1)
    if blocked.any():
        i = int(np.flatnonzero(blocked)[0])
        raise InputError(f"agent {i} values only goods with zero supply (utility[{i}] vs "
                         "supply); its PF utility would be 0", argument="supply", index=(i,))
    valued = (U > 0).any(axis=0) & (s > 0)
    Un, sn, e_good, e_agent = _normalise(U, s, valued)

    # ---- the proportionally fair allocation (Eisenberg-Gale, equal budgets) ---------------
    Uv, sv = np.array(Un[:, valued]), np.array(sn[valued])
    log = solve_log(solvers)
    shift = float(e_agent.sum()) * _LOG2  # sum_i log u_i(original) - sum_i log u_i(normalised)
    point, pf_cert = solve_pf(PFContext(Uv, sv, gap_tol, solvers, log, tuning, shift))
    xn = np.zeros((n, m))
    xn[:, valued] = point.allocation
    pn = np.zeros(m)
    pn[valued] = point.prices
    util_n = np.einsum("ij,ij->i", Un, xn)

    # ---- leave-one-out markets (normalised units) -------------------------------------------
    if method == "warm":
        red = ReducedMarket.build(Uv, sv, point.prices, margin(*Uv.shape))
        loo = _parallel_map(_loo_chunk, (Un, sn, pn, gap_tol, solvers, red, tuning),
                            np.arange(n), nw, chunk=max(tuning.loo_batch, 1))
    else:
        loo = _parallel_map(_loo_one_cold, (Un, sn, pn, gap_tol, solvers, None, tuning),
                            np.arange(n), nw)
    loo_obj = np.array([r[0] for r in loo], dtype=float)
    loo_gap = np.array([r[1] for r in loo], dtype=float)
    solves = 1 + int(sum(r[2] for r in loo))
    # each market's plan ran on its own log: its steps once each, in plan order, and every
    # hand-over (counted: ``stats.fallbacks`` says "(x k)")
    ran = {step for r in loo for step in r[3]}
    log.replay(tuple(s.name for s in loo_plan(method, tuning) if s.name in ran),
               tuple(h for r in loo for h in r[4]))
    loo_scale = float(max(1, n - 1))
    bad = ~(loo_gap <= gap_tol * loo_scale)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        stats = _solve_stats(mark, method=method, t0=t0, solves=solves)
        dual = float(loo_obj[i] + loo_gap[i]) if (np.isfinite(loo_obj[i])
                                                  and np.isfinite(loo_gap[i])) else math.inf
        cert = Certificate(kind="eisenberg_gale", primal_value=float(loo_obj[i]),
                           dual_bound=dual, gap=float(loo_gap[i]),
                           primal_residual=0.0, gap_tol=gap_tol, scale=loo_scale)
        raise CertificateError(f"the market without agent {i} could not be certified: gap "
                               f"{loo_gap[i]:.3g} (tolerance {gap_tol:g} x {loo_scale:g} unit "
                               "budgets)", certificate=cert, backend=stats.backend)
    # ---- fractions (scale-free), then back to the caller's units ---------------------------
    log_u = np.log(util_n)
    numer = log_u.sum() - log_u  # sum_{j != i} log u_j(x*)
    fraction = np.exp(numer - np.maximum(loo_obj, numer))
    fraction_error = np.expm1(loo_gap)
    x_pf = np.ldexp(xn, e_good[None, :])
    prices = np.ldexp(pn, -e_good)
    pf_util = np.ldexp(util_n, e_agent)
    allocation = fraction[:, None] * x_pf
    leftover = np.maximum(s - allocation.sum(axis=0), 0.0)
    utility_real = fraction * pf_util
    loo_obj = loo_obj + (float(e_agent.sum()) - e_agent) * _LOG2
    stats = dataclasses.replace(_solve_stats(mark, method=method, t0=t0, solves=solves),
                                path=log.path, fallbacks=log.fallbacks)
    return PartialAllocationResult(
        objective=point.primal + shift, status=Status.OPTIMAL, stats=stats, certificate=pf_cert,
        allocation=allocation, fraction=fraction, pf_allocation=x_pf, leftover=leftover,
        prices=prices, pf_utility=pf_util, utility=utility_real, loo_objective=loo_obj,
        loo_gap=loo_gap, fraction_error=fraction_error, ids=ids, goods=goods)


def _pa_solvers(backend: Any) -> tuple[Any, Any, Any]:
    """(conic backend, LP backend, backend passed to ``fisher_market``) of ``backend=``."""
    from ..backends import get_backend

    if backend is None:
        return "clarabel", "highs", None
    inst = get_backend(backend, need="exp_cone")
    get_backend(inst, need="lp")
    return inst, inst, inst


def _normalise(U: np.ndarray, s: np.ndarray, valued: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unit-scale copy of a linear market by powers of two (exact): ``(U', s', e_good, e_agent)``.

    ``s'_j = s_j 2^-e_good[j]`` lies in [0.5, 1); ``U'_ij = U_ij 2^(e_good[j] - e_agent[i])``
    has its row maximum over valued goods in [0.5, 1). An allocation maps back as
    ``x_ij = x'_ij 2^e_good[j]``, prices as ``p_j = p'_j 2^-e_good[j]``, utilities as
    ``u_i = u'_i 2^e_agent[i]``; equal budgets make the PF allocation, the prices and every
    fraction invariant under the per-agent factors.
    """
    e_good = np.where(s > 0, np.frexp(s)[1], 0).astype(np.int64)
    sn = np.ldexp(s, -e_good)
    with np.errstate(over="ignore", under="ignore"):
        Uc = np.ldexp(U, e_good[None, :])
        top = np.where(valued[None, :], Uc, 0.0).max(axis=1)
        e_agent = np.frexp(top)[1].astype(np.int64)
        Un = np.ldexp(Uc, -e_agent[:, None])
    # an entry below the smallest normal number after scaling has lost its precision (and
    # `fairalloc.fisher_market` refuses subnormal utilities): refused like one that underflowed
    lost = (U > 0) & valued[None, :] & ~((Un >= np.finfo(float).tiny) & np.isfinite(Un))
    if lost.any() or not np.all(np.isfinite(top)):
        idx = tuple(int(k) for k in np.argwhere(lost | ~np.isfinite(Un))[0])
        raise InputError(
            f"utility{list(idx)} and supply span more than double precision can hold (after "
            "scaling each good to unit supply and each agent to unit utility, an entry "
            "over- or underflows, or falls below the smallest normal number)",
            argument="utility", index=idx)
    return Un, sn, e_good, e_agent
