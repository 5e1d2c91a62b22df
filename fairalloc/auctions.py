"""Partial-allocation auctions and Themis's multi-round finish-time fair policy (Themis §3.3).

The partial allocation (PA) mechanism of Cole, Gkatzelis and Goel (themis.md ref. [5]; Themis
§3.3.1, Pseudocode 1 lines 5-12) allocates goods among agents who report valuations ``v_i``:

1. compute the proportionally fair (PF) allocation ``x* = argmax prod_i v_i(x_i)``;
2. for each agent ``i`` compute the PF allocation of the market *without* ``i``,
   ``x*_{-i} = argmax prod_{j != i} v_j(x_j)``, and the fraction
   ``c_i = prod_{j != i} v_j(x*) / prod_{j != i} v_j(x*_{-i})`` (in ``(0, 1]``);
3. give agent ``i`` the fraction ``c_i`` of its PF bundle, ``c_i * x*_i``; the rest of the
   goods, ``L = supply - sum_i c_i x*_i``, is the *leftover* (the hidden payments).

With valuations homogeneous of degree one (linear ones, or Themis's ``1/rho``, Appendix proof
of Theorem 3.2) PA is truthful and the PF allocation is Pareto efficient; with divisible goods
the PF allocation is also envy-free and every agent keeps at least ``1/e`` of its PF valuation
(``proofs/partial_allocation_truthfulness.md``, ``proofs/partial_allocation_one_over_e.md``).

Two forms:

* :func:`partial_allocation` -- divisible goods with linear valuations; the PF allocation is the
  Eisenberg-Gale equilibrium with equal budgets (:func:`fairalloc.fisher_market`). The ``n``
  leave-one-out markets are reduced markets warm-started from the PF prices, solved in batches
  by one block-diagonal interior-point run, polished to exact equilibria on their support and
  each certified by its own duality gap (``D(p)`` of DESIGN.md), over ``workers`` processes.
* :func:`gpu_auction` (GPUs bid for by placement class, :class:`BidTable`) and
  :func:`bundle_auction` (explicit GPU subsets, as in Themis Table 2) -- indivisible GPUs; PF
  and every leave-one-out are exact set-packing MILPs (HiGHS) maximising ``sum_i log v_i``.

:class:`MultiRoundAuction` is Themis's round-by-round policy (§3.3.2, Pseudocode 1 lines
13-23): leases, filtering of the apps farthest from finish-time fairness, a PA auction among
them, leftover GPUs to the apps that did not bid, valuations refreshed every round.

See ``formulations/partial_allocation.md`` for the exact programs.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._validation import (
    as_array,
    as_finite_float,
    as_option,
    as_positive_float,
    as_positive_int,
    as_time_limit,
    as_tolerance,
)
from .errors import CertificateError, FairallocError, InputError, SolverError
from .results import (
    Certificate,
    FrozenArrays,
    Result,
    SolveStats,
    Status,
    readonly,
    require_pandas,
)
from .tolerances import FEAS_TOL, GAP_TOL, MILP_GAP_TOL
from .valuations import LEVELS, Topology, _check_apps, _slowdown_levels

__all__ = [
    "AuctionRound",
    "BidTable",
    "BundleAuctionResult",
    "GPUAuctionResult",
    "MultiRoundAuction",
    "PartialAllocationResult",
    "bid_table",
    "bundle_auction",
    "gpu_auction",
    "partial_allocation",
]

_METHODS = ("warm", "cold")
_CONIC_TOL = 1e-10
_CONIC_KKT = "qdldl"
_EXACT = 1e-9  # absolute gap of the polished PF market
_BATCH = 32  # leave-one-out markets per batched interior-point solve
_LOO_TARGET = 1e-8  # absolute gap each leave-one-out solve aims for (c_i to ~1e-8 relative)
_AIM_REL = 1e-9  # gap per unit budget the leave-one-out search aims for before accepting
_MAX_GOODS = 1 << 24  # largest number of goods (GPUs) an indivisible auction accepts
_LOG2 = math.log(2.0)


# ============================================================================================
# parallel map (fork: the workers inherit the problem data without pickling it)
# ============================================================================================
_WORKER: tuple[Callable[..., Any], Any, bool] | None = None
_LOG = threading.local()  # (backend, raw status) of every backend solve, in order


def _used() -> list[tuple[str, str]]:
    """This thread's log of backend solves (see :func:`_record`)."""
    log = getattr(_LOG, "solves", None)
    if log is None:
        log = _LOG.solves = []
    return log


def _record(backend: str, raw_status: str) -> None:
    """Note that ``backend`` ran a solve that ended in ``raw_status`` (for ``SolveStats``)."""
    _used().append((str(backend), str(raw_status)))


def _solve_stats(mark: int, *, method: str, t0: float, solves: int) -> SolveStats:
    """SolveStats naming the backends that really ran since ``_used()[mark]`` (``"numpy"`` if
    only fairalloc's own numpy code did), with the last backend solve's raw status."""
    log = _used()
    ran = log[mark:]
    del log[mark:]
    names = list(dict.fromkeys(name for name, _ in ran))
    return SolveStats(backend="+".join(names) if names else "numpy", method=method,
                      seconds=time.perf_counter() - t0, solves=solves,
                      raw_status=ran[-1][1] if ran else "")


def _clean_log(func: Callable[..., Any]) -> Callable[..., Any]:
    """Drop the backend-solve entries a public entry point logged, even when it raises."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        mark = len(_used())
        try:
            return func(*args, **kwargs)
        finally:
            del _used()[mark:]

    return wrapper


def _init_worker(func: Callable[..., Any], ctx: Any, chunked: bool) -> None:
    global _WORKER
    _WORKER = (func, ctx, chunked)


def _run_chunk(indices: np.ndarray) -> tuple[list[Any], list[tuple[str, str]]]:
    if _WORKER is None:  # pragma: no cover - set by _init_worker in every process
        raise SolverError("worker process started without its problem")
    func, ctx, chunked = _WORKER
    log = _used()
    mark = len(log)
    out = list(func(ctx, indices)) if chunked else [func(ctx, int(i)) for i in indices]
    return out, log[mark:]


def _parallel_map(func: Callable[[Any, Any], Any], ctx: Any, indices: np.ndarray,
                  workers: int, *, chunk: int | None = None) -> list[Any]:
    """``[func(ctx, i) for i in indices]`` over ``workers`` processes when that is > 1.

    With ``chunk``, ``func(ctx, index_array)`` handles a chunk of up to ``chunk`` indices at
    once and returns one result per index. Never more processes than chunks or cores; the
    backend solves of the workers are added to this thread's log.
    """
    size = chunk if chunk is not None else max(1, -(-indices.size // (4 * max(workers, 1))))
    pieces = [c for c in np.array_split(indices, max(1, -(-indices.size // size))) if c.size]
    workers = min(workers, len(pieces), max(os.cpu_count() or 1, 1))
    if workers <= 1 or len(pieces) < 2:
        _init_worker(func, ctx, chunk is not None)
        out: list[Any] = []
        for piece in pieces:
            out.extend(_run_chunk(piece)[0])
        return out
    import multiprocessing as mp

    method = "fork" if "fork" in mp.get_all_start_methods() else None
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method),
                                 initializer=_init_worker,
                                 initargs=(func, ctx, chunk is not None)) as ex:
            out = []
            for part, log in ex.map(_run_chunk, pieces):
                out.extend(part)
                _used().extend(log)
    except FairallocError:
        raise
    except Exception as exc:  # a broken pool (a worker killed, fork refused): not the caller's
        raise SolverError(f"a worker process failed: {type(exc).__name__}: {exc}",
                          status="exception") from exc
    return out


def _workers(workers: Any) -> int:
    if workers is None:
        return max(1, min(2, os.cpu_count() or 1))
    return as_positive_int(workers, "workers")


# ============================================================================================
# Eisenberg-Gale pieces for linear markets (dense (n, m) form)
# ============================================================================================
def _eg_dual(U: np.ndarray, B: np.ndarray, s: np.ndarray, p: np.ndarray) -> float:
    """``D(p) = s@p + sum_k B_k (log B_k - 1 - log min_{j: U_kj > 0} p_j / U_kj)`` (>= OPT)."""
    p = np.maximum(p, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        beta = np.where(U > 0, p[None, :] / np.where(U > 0, U, 1.0), np.inf).min(axis=1)
    if np.any(beta <= 0) or not np.all(np.isfinite(beta)):
        return float("inf")
    return float(s @ p + B @ (np.log(B) - 1.0 - np.log(beta)))


def _eg_primal(U: np.ndarray, B: np.ndarray, x: np.ndarray) -> float:
    """``P(x) = sum_k B_k log sum_j U_kj x_kj`` (<= OPT for feasible ``x``)."""
    with np.errstate(divide="ignore"):
        return float(B @ np.log(np.einsum("kj,kj->k", U, x)))


def _repair(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Clip at 0 and scale down the buyers of every over-used good: exactly feasible."""
    x = np.maximum(x, 0.0)
    load = x.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(load > s, s / load, 1.0)
    return x * factor[None, :]


def _bang_per_buck(U: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``U_kj / p_j``; a valued good with zero price has infinite bang-per-buck."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(U > 0, U / p[None, :], 0.0)
    return np.where((U > 0) & (p[None, :] <= 0), np.inf, ratio)


@dataclass(frozen=True)
class _EGPoint:
    """A certified point of a linear Eisenberg-Gale program: ``dual >= OPT >= primal``."""

    allocation: np.ndarray
    prices: np.ndarray
    primal: float
    dual: float
    solves: int = 0

    @property
    def gap(self) -> float:
        return max(self.dual - self.primal, 0.0)


def _conic(owner: np.ndarray, good: np.ndarray, weight: np.ndarray, B: np.ndarray,
           s: np.ndarray, backend: Any = "clarabel") -> tuple[np.ndarray, np.ndarray]:
    """Edge-form EG program, solved by Clarabel; returns (edge levels, good prices).

    Variables ``[z (E), t (n)]``: ``min -B@t`` s.t. ``sum_{e on j} z_e <= s_j``, ``z >= 0``,
    ``(t_k, 1, sum_{e of k} w_e z_e)`` in the exponential cone (``t_k <= log u_k``).
    """
    from .backends import ConicProgram, get_backend

    E, n, m = owner.size, B.size, s.size
    rows = np.arange(n)
    C = sp.csc_matrix((np.ones(E), (good, np.arange(E))), shape=(m, E))
    exp_t = sp.csc_matrix((-np.ones(n), (3 * rows, E + rows)), shape=(3 * n, E + n))
    exp_u = sp.csc_matrix((-weight, (3 * owner + 2, np.arange(E))), shape=(3 * n, E + n))
    A = sp.vstack([
        sp.hstack([C, sp.csc_matrix((m, n))]),
        sp.hstack([-sp.identity(E, format="csc"), sp.csc_matrix((E, n))]),
        exp_t + exp_u,
    ], format="csc")
    b = np.concatenate([s, np.zeros(E), np.tile([0.0, 1.0, 0.0], n)])
    c = np.concatenate([np.zeros(E), -B])
    solver = get_backend(backend, need="exp_cone")
    settings = {"direct_solve_method": _CONIC_KKT} if solver.name == "clarabel" else None
    sol = solver.solve_conic(ConicProgram(c=c, A=A, b=b, nonneg=m + E, exp=n), tol=_CONIC_TOL,
                             settings=settings)
    _record(solver.name, sol.raw_status)
    if not sol.usable or sol.x is None or sol.z is None:
        raise SolverError(f"{solver.name} failed on a reduced Eisenberg-Gale program: "
                          f"{sol.raw_status}", backend=solver.name, status=sol.raw_status)
    return sol.x[:E], np.maximum(sol.z[:m], 0.0)


def _ipm(owner: np.ndarray, good: np.ndarray, w: np.ndarray, B: np.ndarray, s: np.ndarray,
         p0: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """One edge-form EG program by :func:`_ipm_batch`; ``None`` if it did not converge (or its
    linear algebra broke down: the caller then takes the exact conic path)."""
    try:
        x, p, ok = _ipm_batch(owner, good, w, B, s, p0, np.zeros(owner.size, dtype=np.int64), 1)
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return None
    if not (ok[0] and np.all(np.isfinite(x)) and np.all(np.isfinite(p))):
        return None
    return x, p


def _ipm_batch(owner: np.ndarray, good: np.ndarray, w: np.ndarray, B: np.ndarray,
               s: np.ndarray, p0: np.ndarray, eblock: np.ndarray, T: int, *,
               mu_tol: float = 1e-13, res_tol: float = 1e-9, max_iter: int = 60
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Primal-dual interior point for ``T`` independent edge-form EG programs at once.

    Each program is ``min s@p - sum_b B_b log beta_b`` s.t. ``p_j - w_e beta_b >= 0`` for every
    edge ``e = (b, j)``: ``beta_b`` is buyer ``b``'s price of one unit of utility and the
    multiplier ``x_e`` of edge ``e`` is the amount of good ``j`` it buys (so ``sum_e x_e = s_j``
    is market clearing). Eliminating slacks, multipliers and ``beta`` (one diagonal entry per
    buyer) leaves an ``m x m`` Schur complement per program and Newton step (Mehrotra
    predictor-corrector). Programs are stacked: goods ``t*m .. t*m+m-1`` belong to program
    ``t``, ``eblock[e]`` is the program of edge ``e``, edges and buyers are sorted by program,
    and every good has an edge. Step lengths, centring and convergence are per program.
    Returns ``(x, p, converged)``; the caller certifies every point, so an inaccurate one is
    never trusted.
    """
    N, G = B.size, s.size
    m = G // T
    bblock = np.zeros(N, dtype=np.int64)
    bblock[owner] = eblock
    gblock = np.repeat(np.arange(T), m)
    e_cnt = np.bincount(eblock, minlength=T)
    estart = np.r_[0, np.cumsum(e_cnt)[:-1]]
    bstart = np.r_[0, np.cumsum(np.bincount(bblock, minlength=T))[:-1]]
    p = np.maximum(np.asarray(p0, dtype=float), 1e-12)
    beta = np.full(N, np.inf)
    np.minimum.at(beta, owner, p[good] / w)
    beta *= 0.9
    sig = p[good] - w * beta[owner]
    deg = np.bincount(owner, minlength=N)
    x = (B[owner] / deg[owner]) / p[good]
    scale = np.maximum(1.0, np.bincount(gblock, s * p, T))
    s_top = 1.0 + np.maximum.reduceat(s, np.arange(0, G, m))
    b_top = 1.0 + np.maximum.reduceat(B, bstart)
    out_x, out_p = x.copy(), p.copy()
    done = np.zeros(T, dtype=bool)
    good_enough = np.zeros(T, dtype=bool)  # residual <= 1e-6: kept if nothing better comes
    # pairs of edges of the same buyer (the buyer blocks of M H^-1 M^T), accumulated by
    # bincount: tiny matrix products go multithreaded in OpenBLAS and crawl on a busy machine
    order = np.argsort(owner, kind="stable")
    deg_o = deg[owner[order]]
    pe = np.repeat(order, deg_o)
    first = np.repeat(np.searchsorted(owner[order], owner[order]), deg_o)
    offset = np.arange(pe.size) - np.repeat(np.cumsum(deg_o) - deg_o, deg_o)
    pf = order[first + offset]
    jl = good % m
    pair_cell = eblock[pe] * (m * m) + jl[pe] * m + jl[pf]
    diag_cell = (gblock * (m * m) + (np.arange(G) % m) * (m + 1))
    eye = np.eye(m)

    def block_min(v: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return np.minimum.reduceat(v, starts) if v.size else np.ones(T)

    def steps(ds: np.ndarray, db: np.ndarray, dx: np.ndarray) -> np.ndarray:
        """Per program: largest step in (0, 1] keeping sigma, beta and x non-negative."""
        with np.errstate(divide="ignore", invalid="ignore"):
            re = np.minimum(np.where(ds < 0, -sig / ds, np.inf), np.where(dx < 0, -x / dx, np.inf))
            rb = np.where(db < 0, -beta / db, np.inf)
        return np.minimum(1.0, np.minimum(block_min(re, estart), block_min(rb, bstart)))

    for _ in range(max_iter):
        r_p = s - np.bincount(good, x, G)
        r_b = -B / beta + np.bincount(owner, w * x, N)
        r_s = p[good] - w * beta[owner] - sig
        mu = np.bincount(eblock, sig * x, T) / e_cnt
        p_top = 1.0 + np.maximum.reduceat(p, np.arange(0, G, m))
        res = np.maximum.reduce([
            np.maximum.reduceat(np.abs(r_p), np.arange(0, G, m)) / s_top,
            np.maximum.reduceat(np.abs(r_b * beta), bstart) / b_top,
            np.maximum.reduceat(np.abs(r_s), estart) / p_top[eblock[estart]]])
        finite = np.isfinite(res) & np.isfinite(mu)
        conv = ~done & finite & (mu * e_cnt <= mu_tol * scale) & (res <= res_tol)
        keep = ~done & finite & (conv | (res <= 1e-6))
        if keep.any():
            ke, kg = keep[eblock], keep[gblock]
            out_x[ke], out_p[kg] = x[ke], p[kg]
            good_enough |= keep
        done |= conv | ~finite
        if done.all():
            break
        d = x / sig
        h = B / beta ** 2 + np.bincount(owner, d * w * w, N)
        dw = d * w
        S = -np.bincount(pair_cell, dw[pe] * dw[pf] / h[owner[pe]], T * m * m)
        S[diag_cell] += np.bincount(good, d, G)
        S = S.reshape(T, m, m)
        S[done] = eye  # finished programs: keep the algebra well defined, steps are 0
        try:
            np.linalg.cholesky(S)  # positive definite? (numerically, near the optimum, not)
        except np.linalg.LinAlgError:
            for t in np.flatnonzero(~done):  # stop the programs whose system broke down
                try:
                    np.linalg.cholesky(S[t])
                except np.linalg.LinAlgError:
                    done[t] = True
                    S[t] = eye
            if done.all():
                break

        broken = np.zeros(T, dtype=bool)

        def solve_schur(S: np.ndarray, rhs: np.ndarray, broken: np.ndarray = broken
                        ) -> np.ndarray:
            """All Schur systems at once; on a breakdown, one by one, stopping the singular
            programs (their best point so far is kept)."""
            try:
                return np.linalg.solve(S, rhs)
            except np.linalg.LinAlgError:
                out = np.zeros_like(rhs)
                for t in range(T):  # only after a breakdown (numerically singular system)
                    try:
                        out[t] = np.linalg.solve(S[t], rhs[t])
                    except np.linalg.LinAlgError:
                        broken[t] = True
                return out

        def direction(r_c: np.ndarray, r_s: np.ndarray = r_s, r_p: np.ndarray = r_p,
                      r_b: np.ndarray = r_b, d: np.ndarray = d, h: np.ndarray = h,
                      dw: np.ndarray = dw, S: np.ndarray = S, x: np.ndarray = x,
                      sig: np.ndarray = sig) -> tuple[np.ndarray, ...]:
            with np.errstate(all="ignore"):  # a broken-down program goes non-finite: stopped
                g = -r_s - r_c / x
                rhs_b = -r_b - np.bincount(owner, w * d * g, N)
                rhs = (np.bincount(good, d * g, G) - r_p
                       + np.bincount(good, dw * (rhs_b / h)[owner], G))
                dp = solve_schur(S, rhs.reshape(T, m, 1)).ravel()
                db = (rhs_b + np.bincount(owner, dw * dp[good], N)) / h
                dx = d * (g - dp[good] + w * db[owner])
                return dp, db, dx, (-r_c - sig * dx) / x

        dp, db, dx, ds = direction(sig * x)  # predictor (affine scaling)
        if broken.any():
            done |= broken
            if done.all():
                break
        a = np.where(done, 0.0, steps(ds, db, dx))
        ae = a[eblock]
        mu_aff = np.bincount(eblock, (sig + ae * ds) * (x + ae * dx), T) / e_cnt
        with np.errstate(divide="ignore", invalid="ignore"):
            centre = np.where(mu > 0, (mu_aff / mu) ** 3 * mu, 0.0)
        dp, db, dx, ds = direction(sig * x + ds * dx - centre[eblock])  # corrector
        done |= broken
        a = np.where(done, 0.0, 0.99 * steps(ds, db, dx))
        p = p + a[gblock] * dp
        beta = beta + a[bblock] * db
        sig = sig + a[eblock] * ds
        x = x + a[eblock] * dx
    return out_x, out_p, good_enough


def _reduced_solve(U: np.ndarray, B: np.ndarray, s: np.ndarray, cand: np.ndarray,
                   p_hint: np.ndarray, solvers: tuple[Any, Any] = ("clarabel", "highs")
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Solve the market restricted to the ``cand`` edges, aggregating single-edge buyers.

    All buyers whose only candidate is good ``j`` spend their budgets on ``j``; together they
    are one buyer of budget ``W_j`` wanting only ``j`` (their equilibrium split of ``j`` is in
    proportion to budgets). Utilities are rescaled so that each reduced buyer's utility is
    about 1 at the hinted prices: the conic solver's relative tolerance then acts absolutely.
    """
    n, m = U.shape
    deg = cand.sum(axis=1)
    single = np.flatnonzero(deg == 1)
    multi = np.flatnonzero(deg > 1)
    js = np.argmax(cand[single], axis=1)
    W = np.bincount(js, weights=B[single], minlength=m)
    agg = np.flatnonzero(W > 0)
    mk, mj = np.nonzero(cand[multi])
    owner = np.concatenate([np.arange(agg.size), agg.size + mk])
    good = np.concatenate([agg, mj])
    budget = np.concatenate([W[agg], B[multi]])
    ph = np.where(p_hint > 0, p_hint, 1.0)
    best = np.where(cand[multi], U[multi] / ph[None, :], 0.0).max(axis=1)
    weight = np.concatenate([ph[agg] / W[agg], U[multi[mk], mj] / (B[multi] * best)[mk]])
    out = _ipm(owner, good, weight, budget, s, ph)
    z, p = out if out is not None else _conic(owner, good, weight, budget, s, solvers[0])
    z = np.maximum(z, 0.0)
    x = np.zeros((n, m))
    X = np.zeros(m)
    X[agg] = z[:agg.size]
    x[single, js] = B[single] / W[js] * X[js]
    x[multi[mk], mj] = z[agg.size:]
    return x, p


def _support_polish(U: np.ndarray, B: np.ndarray, s: np.ndarray, x: np.ndarray, p: np.ndarray,
                    tight: float = 1e-7, lp_backend: Any = "highs"
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact equilibrium on the support of ``(x, p)``, or ``None`` if it is not one.

    The support is the set of edges that carry spending and are within ``tight`` (relative) of
    their buyer's best bang-per-buck at ``p``. On it, ``log p_j - log beta_k = log U_kj``
    (a sparse linear system; one free constant per connected component, fixed by
    ``sum_j p_j s_j = sum_k B_k``), and spending is a flow with buyer sums ``B_k`` and good
    sums ``p_j s_j`` (unique on a forest; an LP otherwise).
    """
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import spsolve

    n, m = U.shape
    ratio = _bang_per_buck(U, p)
    best = ratio.max(axis=1)
    spend = x * p[None, :]
    on = (U > 0) & (spend > 1e-10 * B[:, None]) & (ratio >= best[:, None] * (1 - tight))
    k_idx, j_idx = np.nonzero(on)
    if k_idx.size == 0 or not np.all(np.bincount(k_idx, minlength=n) > 0):
        return None
    E, nodes = k_idx.size, n + m
    adj = sp.csr_matrix((np.ones(E), (k_idx, n + j_idx)), shape=(nodes, nodes))
    ncomp, label = connected_components(adj, directed=False)
    touched = np.zeros(nodes, dtype=bool)
    touched[:n] = True
    touched[n + j_idx] = True
    order = np.flatnonzero(touched)
    _, first = np.unique(label[order], return_index=True)
    free = touched.copy()
    free[order[first]] = False
    ar = np.arange(E)
    M = sp.csr_matrix((np.r_[np.ones(E), -np.ones(E)], (np.r_[ar, ar], np.r_[n + j_idx, k_idx])),
                      shape=(E, nodes))
    rhs = np.log(U[k_idx, j_idx])
    Mf = M[:, free].tocsc()
    forest = E == int(free.sum())
    try:
        if forest:
            v = np.atleast_1d(spsolve(Mf, rhs))
        else:
            v = np.atleast_1d(spsolve((Mf.T @ Mf).tocsc(), Mf.T @ rhs))
    except Exception:  # a singular system: not an equilibrium support
        return None
    pot = np.zeros(nodes)
    pot[free] = v
    if not np.all(np.isfinite(pot)) or np.abs(M @ pot - rhs).max() > 1e-9 * (
            1.0 + np.abs(rhs).max()):
        return None
    goods = np.flatnonzero(touched[n:])
    bud = np.bincount(label[:n], weights=B, minlength=ncomp)
    val = np.bincount(label[n + goods], weights=s[goods] * np.exp(pot[n + goods]),
                      minlength=ncomp)
    comps = np.unique(label[:n])
    if np.any(val[comps] <= 0):
        return None
    shift = np.zeros(ncomp)
    shift[comps] = np.log(bud[comps]) - np.log(val[comps])
    price = np.zeros(m)
    price[goods] = np.exp(pot[n + goods] + shift[label[n + goods]])
    if not np.all(np.isfinite(price)) or np.any(price[goods] <= 0):
        return None
    r = np.r_[B, s * price]
    N = sp.csr_matrix((np.ones(2 * E), (np.r_[k_idx, n + j_idx], np.r_[ar, ar])),
                      shape=(nodes, E))
    if forest:
        try:
            b = np.atleast_1d(spsolve(N[free].tocsc(), r[free]))
        except Exception:
            return None
    else:
        from .backends import LinearProgram, get_backend

        lp = LinearProgram.build(np.zeros(E), N[touched], r[touched], r[touched], 0.0, None)
        solver = get_backend(lp_backend, need="lp")
        sol = solver.solve_lp(lp)
        _record(solver.name, sol.raw_status)
        if not sol.usable or sol.x is None:  # the certificate below judges a usable point
            return None
        b = sol.x
    if not np.all(np.isfinite(b)) or np.any(b < -1e-10 * B[k_idx]):
        return None
    xn = np.zeros((n, m))
    xn[k_idx, j_idx] = np.maximum(b, 0.0) / price[j_idx]
    return xn, price


def _solve_warm(U: np.ndarray, B: np.ndarray, s: np.ndarray, p_warm: np.ndarray, *,
                tol: float, accept: float, eta: float = 1e-2, max_rounds: int = 6,
                start: tuple[np.ndarray, np.ndarray] | None = None,
                solvers: tuple[Any, Any] = ("clarabel", "highs")) -> _EGPoint:
    """Certified solve of the linear market ``(U, B, s)`` warm-started from prices ``p_warm``.

    Candidate edges (within ``1 - eta`` of each buyer's best bang-per-buck at the current
    prices) define a reduced market that is solved exactly (:func:`_reduced_solve`), mapped
    back, polished on its support (:func:`_support_polish`) and certified on the *whole*
    market; edges that beat their buyer's candidates at the new prices join the candidates.
    ``U`` has no all-zero row and every valued good has positive supply. ``tol`` is the target
    absolute gap; once no edge is missing from the candidates, a gap up to ``accept`` ends the
    search too. Returns the best certified point found (the whole market is solved exactly
    when the reduced ones did not reach ``accept``).
    """
    best: _EGPoint | None = None
    solves = 0

    def consider(x: np.ndarray, p: np.ndarray) -> _EGPoint:
        """Certify ``(x, p)``; polish it on its support unless it already meets ``tol``."""
        nonlocal best
        xr = _repair(x, s)
        pt = _EGPoint(xr, p, _eg_primal(U, B, xr), _eg_dual(U, B, s, p), solves)
        if best is None or pt.gap < best.gap:
            best = pt
        if pt.gap > tol:
            polished = _support_polish(U, B, s, x, p, lp_backend=solvers[1])
            if polished is not None:
                xr = _repair(polished[0], s)
                pt = _EGPoint(xr, polished[1], _eg_primal(U, B, xr),
                              _eg_dual(U, B, s, polished[1]), solves)
                if pt.gap < best.gap:
                    best = pt
        return best

    if start is not None and consider(*start).gap <= tol:
        assert best is not None
        return best
    p = np.maximum(np.asarray(p_warm, dtype=float), 0.0)
    cand = np.zeros(U.shape, dtype=bool)
    for _ in range(max_rounds):
        ratio = _bang_per_buck(U, p)
        cand |= (U > 0) & (ratio >= ratio.max(axis=1)[:, None] * (1.0 - eta))
        x, p_red = _reduced_solve(U, B, s, cand, p, solvers)
        solves += 1
        pt = consider(x, p_red)
        if pt.gap <= tol:
            return pt
        p = pt.prices
        ratio = _bang_per_buck(U, p)
        cand_best = np.where(cand, ratio, 0.0).max(axis=1)
        if not (~cand & (ratio > cand_best[:, None] * (1.0 + 1e-12))).any():
            if pt.gap <= accept:
                return pt
            eta = min(4.0 * eta, 0.5)  # the candidates hold the support: widen the margin
    assert best is not None
    if best.gap <= accept:
        return best
    x, p_full = _reduced_solve(U, B, s, U > 0, p, solvers)  # the whole market
    solves += 1
    return consider(x, p_full)


# ============================================================================================
# divisible partial allocation
# ============================================================================================
@dataclass(frozen=True, repr=False)
class PartialAllocationResult(Result):
    """Outcome of the partial allocation mechanism on divisible goods.

    Attributes
    ----------
    allocation : ndarray, shape (n, m)
        What each agent receives: ``fraction[:, None] * pf_allocation``.
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

    def to_frame(self) -> Any:
        """One row per agent: fraction, PF and realised utility, certified error, allocation."""
        pd = require_pandas()
        df = pd.DataFrame({"fraction": self.fraction, "pf_utility": self.pf_utility,
                           "utility": self.utility, "fraction_error": self.fraction_error})
        df.index.name = "agent"
        alloc = pd.DataFrame(self.allocation,
                             columns=[f"x[{j}]" for j in range(self.allocation.shape[1])])
        return pd.concat([df, alloc], axis=1)


def _aim(gap_tol: float, budget: float) -> float:
    """Absolute gap a leave-one-out search aims for before it accepts a point: ``gap_tol`` per
    unit budget, but never looser than ``_AIM_REL`` per unit (fractions stay accurate)."""
    return min(gap_tol, _AIM_REL) * max(1.0, budget)


def _loo_warm(ctx: tuple[Any, ...], i: int) -> tuple[float, float, int]:
    """Leave-one-out market without buyer ``i``, warm-started from the PF prices."""
    U, s, p_pf, gap_tol, solvers = ctx
    Ui = np.delete(U, i, axis=0)
    if Ui.shape[0] == 0:
        return 0.0, 0.0, 0
    valued = (Ui > 0).any(axis=0) & (s > 0)
    Ui = Ui[:, valued]
    B = np.ones(Ui.shape[0])
    accept = _aim(gap_tol, float(Ui.shape[0]))
    pt = _solve_warm(Ui, B, s[valued], p_pf[valued], tol=min(_LOO_TARGET, accept), accept=accept,
                     eta=_margin(*Ui.shape), solvers=solvers)
    if pt.gap > gap_tol * max(1.0, float(Ui.shape[0])):  # would fail its certificate
        cold = _loo_cold(ctx, i)
        if cold[1] < pt.gap:
            return cold[0], cold[1], pt.solves + 1
    return pt.primal, pt.gap, pt.solves


@dataclass(frozen=True)
class _Reduced:
    """The PF market's reduced form at the PF prices (shared by every leave-one-out market).

    Buyers with one candidate good (within ``1 - eta`` of their best bang-per-buck) are pooled
    per good (``W[j]`` budget); buyers with several candidates (``multi``) keep their edges.
    """

    U: np.ndarray  # (n, m) utilities of the valued goods
    s: np.ndarray  # (m,) supply
    p: np.ndarray  # (m,) PF prices
    single_good: np.ndarray  # (n,) the candidate good of a single-candidate buyer, else -1
    W: np.ndarray  # (m,) pooled budget per good
    multi: np.ndarray  # (M,) multi-candidate buyers
    mk: np.ndarray  # (Em,) edge -> position in multi
    mj: np.ndarray  # (Em,) edge -> good
    mw: np.ndarray  # (Em,) scaled edge weight u_kj / best_k
    eta: float

    @classmethod
    def build(cls, U: np.ndarray, s: np.ndarray, p: np.ndarray, eta: float) -> _Reduced:
        n, m = U.shape
        ratio = _bang_per_buck(U, p)
        best = ratio.max(axis=1)
        cand = (U > 0) & (ratio >= best[:, None] * (1.0 - eta))
        deg = cand.sum(axis=1)
        single_good = np.where(deg == 1, np.argmax(cand, axis=1), -1)
        W = np.bincount(single_good[deg == 1], minlength=m).astype(float)
        multi = np.flatnonzero(deg > 1)
        mk, mj = np.nonzero(cand[multi])
        return cls(U, s, p, single_good, W, multi, mk, mj, U[multi[mk], mj] / best[multi[mk]],
                   eta)


def _margin(n: int, m: int) -> float:
    """Candidate margin ``eta``: removing one of ``n`` unit budgets moves prices by ~ m / n."""
    return float(min(0.02, max(2e-3, 0.1 * m / max(n, 1))))


def _loo_batch(red: _Reduced, idx: np.ndarray, target: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-one-out markets of ``idx`` as one block-diagonal interior-point solve.

    Market ``t`` (without buyer ``i = idx[t]``) is the shared reduced market with ``i``'s
    budget taken out of its pool (the pool's buyer disappears if it was alone) or with ``i``'s
    explicit edges removed. Each solution is mapped back and certified on the *whole* market
    without ``i``: ``P`` from the utilities of all other buyers (a pooled buyer gets its budget
    share of the pool's amount), ``D(p)`` from all ``n x m`` bang-per-buck ratios. Returns
    ``(primal, gap, solved)``; markets not solved here to ``target`` (``solved`` false) go
    through the per-market path.
    """
    U, s, p0, W0 = red.U, red.s, red.p, red.W
    n, m = U.shape
    T = idx.size
    M = red.multi.size
    sg = red.single_good[idx]
    # budgets of the pools (buyers 0..m-1 of a block) and of the explicit buyers (m..m+M-1)
    Wb = np.tile(W0, (T, 1))
    rows = np.flatnonzero(sg >= 0)
    Wb[rows, sg[rows]] -= 1.0
    gone = np.full(T, -1)
    pos = np.searchsorted(red.multi, idx)
    is_multi = (pos < M) & (red.multi[np.minimum(pos, max(M - 1, 0))] == idx) if M else \
        np.zeros(T, dtype=bool)
    gone[is_multi] = pos[is_multi]
    # edges of every block: pools (one per good with budget), then explicit edges
    Em = red.mk.size
    pool_on = Wb > 0  # (T, m)
    multi_on = np.ones((T, Em), dtype=bool)
    if is_multi.any():
        multi_on[is_multi] = red.mk[None, :] != gone[is_multi][:, None]
    # every good needs an edge in its block, else the per-market path handles the market
    has_edge = pool_on.copy()
    tb, te = np.nonzero(multi_on)
    has_edge[tb, red.mj[te]] = True
    regular = has_edge.all(axis=1)
    primal = np.full(T, np.nan)
    gap = np.full(T, np.inf)
    solved = np.zeros(T, dtype=bool)
    blocks = np.flatnonzero(regular)
    if blocks.size == 0:
        return primal, gap, solved
    Tb = blocks.size
    pool_on, multi_on, Wb = pool_on[blocks], multi_on[blocks], Wb[blocks]
    # buyers per block: m pools (kept if on) + M explicit (kept unless removed)
    nb = m + M
    keep_b = np.concatenate([pool_on, np.ones((Tb, M), dtype=bool)], axis=1)
    if is_multi[blocks].any():
        rb = np.flatnonzero(is_multi[blocks])
        keep_b[rb, m + gone[blocks][rb]] = False
    new_id = np.cumsum(keep_b.ravel()) - 1  # renumber the kept buyers
    budget = np.concatenate([Wb, np.ones((Tb, M))], axis=1).ravel()[keep_b.ravel()]
    pt_, pj = np.nonzero(pool_on)
    et, ee = np.nonzero(multi_on)
    e_block = np.concatenate([pt_, et])
    e_owner = new_id[np.concatenate([pt_ * nb + pj, et * nb + m + red.mk[ee]])]
    e_good = np.concatenate([pj, red.mj[ee]])
    e_w = np.concatenate([p0[pj] / Wb[pt_, pj], red.mw[ee]])
    order = np.lexsort((e_owner, e_block))
    e_block, e_owner, e_good, e_w = e_block[order], e_owner[order], e_good[order], e_w[order]
    g_idx = e_block * m + e_good
    x, p, ok = _ipm_batch(e_owner, g_idx, e_w, budget, np.tile(s, Tb), np.tile(p0, Tb),
                          e_block, Tb)
    # exact polish of every block's support forest (one sparse solve for all blocks)
    xq, pq, good_ok = _polish_forest_edges(e_owner, g_idx, e_w, budget, np.tile(s, Tb), x, p)
    polished_ok = np.all(good_ok.reshape(Tb, m), axis=1)
    is_pool = np.r_[np.ones(pt_.size, dtype=bool), np.zeros(et.size, dtype=bool)][order]
    slot = np.where(is_pool, e_good, m + np.concatenate([pj, red.mk[ee]])[order])
    single = red.single_good >= 0
    s_t = np.tile(s, Tb)
    for xc, pc, valid in ((x, p, ok), (xq, pq, polished_ok)):
        # map back and certify each block on the whole market without its buyer
        load = np.bincount(g_idx, xc, Tb * m)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(load > s_t, s_t / load, 1.0)
        xr = xc * factor[g_idx]
        amount = np.zeros((Tb, nb * m))  # amount of good j bought by block buyer b
        np.add.at(amount, (e_block, slot * m + e_good), xr)
        amount = amount.reshape(Tb, nb, m)
        P = pc.reshape(Tb, m)
        for r, t in enumerate(blocks):
            if not valid[r] or solved[t]:
                continue
            i = int(idx[t])
            others = np.ones(n, dtype=bool)
            others[i] = False
            u = np.zeros(n)
            js = red.single_good[single & others]
            u[single & others] = U[single & others, js] * amount[r, js, js] / Wb[r, js]
            mm = np.flatnonzero(red.multi != i)
            u[red.multi[mm]] = np.einsum("kj,kj->k", U[red.multi[mm]], amount[r, m + mm])
            with np.errstate(divide="ignore"):
                prim = float(np.log(u[others]).sum())
            dual = _eg_dual(U[others], np.ones(n - 1), s, P[r])
            if np.isfinite(prim) and dual - prim <= target:
                primal[t], gap[t], solved[t] = prim, max(dual - prim, 0.0), True
    return primal, gap, solved


def _polish_forest_edges(owner: np.ndarray, good: np.ndarray, w: np.ndarray, B: np.ndarray,
                         s: np.ndarray, x: np.ndarray, p: np.ndarray, tight: float = 1e-7
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact equilibrium on the support forest of an edge-form point (many markets at once).

    The support is every edge that carries spending at its buyer's best bang-per-buck
    ``w_e / p_j`` (within ``tight``). On each connected component that is a tree,
    ``log p_j - log beta_b = log w_e`` fixes prices up to one constant, set by
    ``sum_j p_j s_j = sum_b B_b``, and spending is the unique flow with buyer sums ``B_b`` and
    good sums ``p_j s_j``. Returns ``(x_new, p_new, good_ok)``: ``good_ok[j]`` is false where
    the component of good ``j`` is not a tree, has a negative flow, or is not touched; the
    caller keeps its previous point there. Disjoint markets stacked in one edge list are
    polished together.
    """
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import splu

    N, G = B.size, s.size
    ok_good = np.zeros(G, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(p[good] > 0, w / p[good], np.inf)
    best = np.full(N, -np.inf)
    np.maximum.at(best, owner, ratio)
    on = (x * p[good] > 1e-10 * B[owner]) & (ratio >= best[owner] * (1 - tight))
    eo, eg, ew = owner[on], good[on], w[on]
    E, nodes = eo.size, N + G
    x_new, p_new = np.zeros_like(x), p.copy()
    if E == 0:
        return x_new, p_new, ok_good
    adj = sp.csr_matrix((np.ones(E), (eo, N + eg)), shape=(nodes, nodes))
    ncomp, label = connected_components(adj, directed=False)
    touched = np.zeros(nodes, dtype=bool)
    touched[eo] = True
    touched[N + eg] = True
    touched[:N] |= np.bincount(owner, minlength=N) > 0  # every buyer must be in the support
    n_nodes = np.bincount(label[touched], minlength=ncomp)
    n_edges = np.bincount(label[eo], minlength=ncomp)
    lonely = touched[:N] & (np.bincount(eo, minlength=N) == 0)  # buyer without support edge
    tree = (n_edges == n_nodes - 1) & (np.bincount(label[:N][lonely], minlength=ncomp) == 0)
    keep_e = tree[label[eo]]
    eo, eg, ew = eo[keep_e], eg[keep_e], ew[keep_e]
    use = touched & tree[label]
    if not use.any():
        return x_new, p_new, ok_good
    order = np.flatnonzero(use)
    _, first = np.unique(label[order], return_index=True)
    free = use.copy()
    free[order[first]] = False
    E = eo.size
    ar = np.arange(E)
    M = sp.csc_matrix((np.r_[np.ones(E), -np.ones(E)], (np.r_[ar, ar], np.r_[N + eg, eo])),
                      shape=(E, nodes))
    try:
        pot = np.zeros(nodes)
        pot[free] = splu(M[:, free].tocsc()).solve(np.log(ew))
        Ninc = sp.csc_matrix((np.ones(2 * E), (np.r_[eo, N + eg], np.r_[ar, ar])),
                             shape=(nodes, E))
        flow_lu = splu(Ninc[free].tocsc())
    except (RuntimeError, ValueError, np.linalg.LinAlgError):  # singular: left to the caller
        return x_new, p_new, ok_good
    gs = np.flatnonzero(use[N:])
    bud = np.bincount(label[:N][use[:N]], weights=B[use[:N]], minlength=ncomp)
    val = np.bincount(label[N + gs], weights=s[gs] * np.exp(pot[N + gs]), minlength=ncomp)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(bud) - np.log(val)
    p_new[gs] = np.exp(pot[N + gs] + shift[label[N + gs]])
    r = np.r_[B, s * p_new]
    flows = flow_lu.solve(r[free])
    bad = ~np.isfinite(flows) | (flows < -1e-10 * B[eo])
    bad_comp = np.zeros(ncomp, dtype=bool)
    bad_comp[label[eo[bad]]] = True
    bad_comp |= ~np.isfinite(shift)
    sel = np.flatnonzero(on)[keep_e]
    with np.errstate(divide="ignore", invalid="ignore"):
        x_new[sel] = np.maximum(flows, 0.0) / p_new[eg]
    ok_good[gs] = ~bad_comp[label[N + gs]]
    return x_new, p_new, ok_good


def _loo_chunk(ctx: tuple[Any, ...], idx: np.ndarray) -> list[tuple[float, float, int]]:
    """A chunk of leave-one-out markets: batched first, the rest one by one."""
    U, s, p_pf, gap_tol, solvers, red = ctx
    out: list[tuple[float, float, int]] = [(0.0, 0.0, 0)] * idx.size
    done = np.zeros(idx.size, dtype=bool)
    if red is not None and U.shape[0] > 1:
        accept = _aim(gap_tol, float(U.shape[0] - 1))
        try:
            primal, gap, solved = _loo_batch(red, idx, min(_LOO_TARGET, accept))
        except (np.linalg.LinAlgError, ValueError, FloatingPointError, RuntimeError):
            solved = np.zeros(idx.size, dtype=bool)  # every market goes the per-market way
        for r in np.flatnonzero(solved):  # one (batched) reduced solve each
            out[r] = (float(primal[r]), float(gap[r]), 1)
        done = solved
    for r in np.flatnonzero(~done):
        out[r] = _loo_warm(ctx[:5], int(idx[r]))
    return out


def _fisher(U: np.ndarray, s: np.ndarray, *, gap_tol: float, backend: Any) -> Any:
    """:func:`fairalloc.fisher_market` (equal budgets) through the library's solver layer.

    Passes ``backend`` on when one was chosen; records the backend that ran; a foreign
    exception (never expected) becomes SolverError.
    """
    from .markets import fisher_market

    kwargs: dict[str, Any] = {"kind": "linear", "gap_tol": gap_tol}
    if backend is not None:
        kwargs["backend"] = backend
    try:
        r = fisher_market(U, supply=s, **kwargs)
    except FairallocError:
        raise
    except Exception as exc:
        raise SolverError(f"fisher_market raised {type(exc).__name__}: {exc}",
                          status="exception") from exc
    if r.stats.backend not in ("", "none", "numpy"):
        _record(r.stats.backend, r.stats.raw_status)
    return r


def _loo_cold(ctx: tuple[Any, ...], i: int) -> tuple[float, float, int]:
    """Leave-one-out market without buyer ``i``, solved from scratch by ``fisher_market``."""
    U, s, _, gap_tol, solvers = ctx[:5]
    Ui = np.delete(U, i, axis=0)
    if Ui.shape[0] == 0:
        return 0.0, 0.0, 0
    valued = (Ui > 0).any(axis=0) & (s > 0)
    try:
        r = _fisher(Ui[:, valued], s[valued], gap_tol=gap_tol, backend=solvers[2])
    except (CertificateError, SolverError) as exc:  # report what it reached; the caller checks
        cert = getattr(exc, "certificate", None)
        if isinstance(cert, Certificate) and math.isfinite(cert.primal_value):
            return float(cert.primal_value), float(cert.gap), 1
        return -math.inf, math.inf, 1
    return float(r.objective), float(r.gap), int(r.stats.solves)


@_clean_log
def partial_allocation(
    utility: Any,
    supply: Any = None,
    *,
    method: str = "warm",
    workers: int | None = 1,
    gap_tol: float = GAP_TOL,
    backend: Any = None,
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
        ``"cold"``: ``n`` independent :func:`fairalloc.fisher_market` solves (the reference).
    workers : int or None
        Processes for the ``n`` leave-one-out solves (``None``: up to two, the machine's
        cores). Results do not depend on it.
    gap_tol : float
        Relative duality gap every certified market must prove (default
        :data:`fairalloc.tolerances.GAP_TOL`). An Eisenberg-Gale gap is judged against the
        market's total budget (``n`` for the PF market, ``n - 1`` without one agent): its
        objective ``sum log u`` shifts by a constant when utilities are rescaled, its gap does
        not. The leave-one-out searches aim for ``min(gap_tol, 1e-9)`` per unit budget, so the
        fractions' certified errors (``fraction_error``) are usually far smaller.
    backend : str or Backend, optional
        Solver for the exact conic path (exponential cones; ``"clarabel"``) and the support
        LPs. ``None`` (default): Clarabel for conic programs, HiGHS for LPs. A named backend
        is used for every solve and must handle exponential cones (else ``InputError``).
        Most markets need no backend at all (``stats.backend`` is then ``"numpy"``: the
        interior-point and polishing steps are fairalloc's own).

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
    mark = len(_used())
    U = as_array(utility, "utility", ndim=2)
    n, m = U.shape
    s = np.ones(m) if supply is None else as_array(supply, "supply", ndim=1, shape=(m,))
    if not (s > 0).any():
        raise InputError("supply is all zero: there is nothing to allocate", argument="supply")
    method = as_option(method, "method", _METHODS)
    nw = _workers(workers)
    gap_tol = as_tolerance(gap_tol, "gap_tol")
    solvers = _pa_solvers(backend)
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
    point = _pf_point(Uv, sv, gap_tol, solvers)
    shift = float(e_agent.sum()) * _LOG2  # sum_i log u_i(original) - sum_i log u_i(normalised)
    pf_cert = Certificate(kind="eisenberg_gale", primal_value=point.primal + shift,
                          dual_bound=point.dual + shift, gap=point.gap,
                          primal_residual=_feas_residual(point.allocation, sv),
                          gap_tol=gap_tol, feas_tol=FEAS_TOL, scale=float(n))
    if not pf_cert.ok:
        stats = _solve_stats(mark, method=method, t0=t0, solves=1)
        pf_cert.check(backend=stats.backend)
    xn = np.zeros((n, m))
    xn[:, valued] = point.allocation
    pn = np.zeros(m)
    pn[valued] = point.prices
    util_n = np.einsum("ij,ij->i", Un, xn)

    # ---- leave-one-out markets (normalised units) -------------------------------------------
    if method == "warm":
        red = _Reduced.build(Uv, sv, point.prices, _margin(*Uv.shape))
        loo = _parallel_map(_loo_chunk, (Un, sn, pn, gap_tol, solvers, red), np.arange(n), nw,
                            chunk=_BATCH)
    else:
        loo = _parallel_map(_loo_cold, (Un, sn, pn, gap_tol, solvers), np.arange(n), nw)
    loo_obj = np.array([r[0] for r in loo], dtype=float)
    loo_gap = np.array([r[1] for r in loo], dtype=float)
    solves = 1 + int(sum(r[2] for r in loo))
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
    stats = _solve_stats(mark, method=method, t0=t0, solves=solves)
    return PartialAllocationResult(
        objective=point.primal + shift, status=Status.OPTIMAL, stats=stats, certificate=pf_cert,
        allocation=allocation, fraction=fraction, pf_allocation=x_pf, leftover=leftover,
        prices=prices, pf_utility=pf_util, utility=utility_real, loo_objective=loo_obj,
        loo_gap=loo_gap, fraction_error=fraction_error)


def _pa_solvers(backend: Any) -> tuple[Any, Any, Any]:
    """(conic backend, LP backend, backend passed to ``fisher_market``) of ``backend=``."""
    from .backends import get_backend

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
    lost = (U > 0) & valued[None, :] & ~((Un > 0) & np.isfinite(Un))
    if lost.any() or not np.all(np.isfinite(top)):
        idx = tuple(int(k) for k in np.argwhere(lost | ~np.isfinite(Un))[0])
        raise InputError(
            f"utility{list(idx)} and supply span more than double precision can hold (after "
            "scaling each good to unit supply and each agent to unit utility, an entry "
            "over- or underflows)", argument="utility", index=idx)
    return Un, sn, e_good, e_agent


def _pf_point(Uv: np.ndarray, sv: np.ndarray, gap_tol: float, solvers: tuple[Any, Any, Any]
              ) -> _EGPoint:
    """The PF market's certified point: ``fisher_market``, polished to an exact equilibrium
    on its support; fairalloc's own warm search from uniform prices if that solve fails."""
    n = Uv.shape[0]
    B = np.ones(n)
    x0: np.ndarray | None = None
    p0: np.ndarray | None = None
    try:
        pf = _fisher(Uv, sv, gap_tol=max(gap_tol, GAP_TOL), backend=solvers[2])
        x0, p0 = np.array(pf.allocation, dtype=float), np.array(pf.prices, dtype=float)
    except (CertificateError, SolverError):
        pass
    if x0 is None or p0 is None or x0.shape != Uv.shape or not (
            np.all(np.isfinite(x0)) and np.all(np.isfinite(p0))):
        p_start = np.full(Uv.shape[1], n / max(float(sv.sum()), 1e-300))
        return _solve_warm(Uv, B, sv, p_start, tol=_EXACT, accept=_aim(gap_tol, n),
                           solvers=solvers[:2])
    xr = _repair(x0, sv)
    point = _EGPoint(xr, p0, _eg_primal(Uv, B, xr), _eg_dual(Uv, B, sv, p0))
    # polish to an exact equilibrium (the fractions' numerators use the PF utilities)
    better = _solve_warm(Uv, B, sv, p0, tol=_EXACT, accept=point.gap, start=(x0, p0),
                         max_rounds=2, solvers=solvers[:2])
    point = better if better.gap < point.gap else point
    if point.gap > gap_tol * n:  # a hard market: the full warm search (whole market last)
        more = _solve_warm(Uv, B, sv, point.prices, tol=min(_EXACT, gap_tol * n),
                           accept=gap_tol * n, start=(point.allocation, point.prices),
                           solvers=solvers[:2])
        point = more if more.gap < point.gap else point
    return point


def _feas_residual(x: np.ndarray, s: np.ndarray) -> float:
    """Largest supply violation relative to the good's own scale (and largest negative entry)."""
    load = x.sum(axis=0)
    mag = np.maximum(np.maximum(s, np.abs(x).sum(axis=0)), np.finfo(float).tiny)
    over = (load - s) / mag
    neg = -x / mag[None, :]
    return float(max(np.max(over, initial=0.0), np.max(neg, initial=0.0)))


# ============================================================================================
# indivisible goods: the lexicographic Nash-welfare MILP and its leave-one-out solves
# ============================================================================================
@dataclass(frozen=True)
class _Form:
    """A set-packing MILP skeleton: option columns ``[0, K)`` then auxiliary columns.

    Option ``o`` belongs to agent ``agent[o]`` and is worth ``logv[o]`` (``log`` of its
    valuation); ``log_empty[i]`` is the agent's log valuation of getting nothing (``-inf`` for
    zero). ``A``, row bounds, column bounds and integrality hold every constraint except the
    objective and the optional count row; each agent's options are in a ``<= 1`` row.
    """

    agent: np.ndarray
    logv: np.ndarray
    log_empty: np.ndarray
    A: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray
    num_agents: int
    option: np.ndarray  # (K,) the bid each choice column meets (several columns: placements)
    rounder: Callable[[np.ndarray, np.ndarray], np.ndarray | None] | None = None
    # exact relaxation: (column weights, active columns, agents that must win) ->
    # (upper bound, a point of the form meeting it or None)
    relaxation: Callable[[np.ndarray, np.ndarray, np.ndarray],
                         tuple[float, np.ndarray | None] | None] | None = None

    @property
    def num_options(self) -> int:
        return int(self.agent.size)


@dataclass(frozen=True)
class _NashSolve:
    choice: np.ndarray  # (n,) chosen option per agent, -1 for none
    x: np.ndarray  # all columns
    count: int  # zero-empty agents made positive
    sumlog: float  # sum over positive agents of log valuation (incumbent)
    bound: float  # upper bound on sumlog (given the count; inf when the count is not proven)
    optimal: bool
    solves: int
    scale: float = 1.0  # data scale of the sum-log objective: the number of agents in it


def _exact(gap: float, scale: float) -> bool:
    """Whether a gap is zero up to rounding (a relaxation's point reaches its bound)."""
    return gap <= 1e-9 * scale


def _milp(form: _Form, c: np.ndarray, active_opt: np.ndarray,
          count_row: tuple[np.ndarray, float] | None, time_limit: float | None,
          solver: Any, scale: float, incumbent: np.ndarray | None = None) -> tuple[Any, Any]:
    """Solve ``max c@x`` over the form (options of inactive agents fixed at 0), certified.

    Set packing over placement classes is nearly integral, so cheap exact routes come first:
    the form's own relaxation (a multiple-choice knapsack solved by dynamic programming), then
    the LP relaxation (its bound certified independently: the Lagrangian dual of
    :func:`fairalloc.certificates.lp_certificate` at its row duals) with an integral vertex,
    a rounding, or the agents it decides fixed and the rest solved exactly. A point that
    reaches a valid bound is optimal. Otherwise the whole MILP is solved. Every bound met on
    the way is kept: the certificate compares the best feasible point found with the best
    bound (``scale``: the objective's data scale, the number of agents in it), so a
    time-limited solve returns its incumbent with an honest, possibly not-ok, certificate.
    ``incumbent`` is a known feasible point (kept if nothing better is found).
    """
    from .backends import LinearProgram
    from .certificates import lp_certificate, milp_certificate
    from .errors import InfeasibleError

    K = form.num_options
    col_upper = form.col_upper.copy()
    col_upper[:K] = np.where(active_opt, col_upper[:K], 0.0)
    A, rl, ru = form.A, form.row_lower, form.row_upper
    if count_row is not None:
        coef, lower = count_row
        row = sp.csr_matrix(np.r_[coef, np.zeros(A.shape[1] - K)][None, :])
        A = sp.vstack([A, row], format="csr")
        rl = np.r_[rl, float(lower)]  # an integer count: exact, no slack in the bound
        ru = np.r_[ru, np.inf]
    lp = LinearProgram.build(-c, A, rl, ru, 0.0, col_upper, integrality=form.integrality)

    def certify(x: np.ndarray, lower_bound: float) -> Any:
        return milp_certificate(lp, x, lower_bound, maximize=True, gap_tol=MILP_GAP_TOL,
                                feas_tol=FEAS_TOL, scale=scale)

    if A.shape[1] == 0:  # nothing to choose (no useful bid): the empty assignment
        return np.zeros(0), certify(np.zeros(0), 0.0)
    lower_bound = -math.inf  # best proven lower bound of min(-c@x) (= -upper bound of max)
    incumbents: list[np.ndarray] = []
    if incumbent is not None and certify(incumbent, -math.inf).primal_residual <= FEAS_TOL:
        incumbents.append(np.asarray(incumbent, dtype=float))

    def feasible(x: np.ndarray | None) -> bool:
        return x is not None and certify(x, -math.inf).primal_residual <= FEAS_TOL

    if form.relaxation is not None:
        must = np.zeros(form.num_agents, dtype=bool)
        if count_row is not None:
            zero = count_row[0][:K] > 0
            if count_row[1] >= np.unique(form.agent[zero]).size - 1e-9:
                must[form.agent[zero]] = True  # every such agent must win a bid
        res = form.relaxation(c[:K], active_opt, must)
        if res is not None and math.isfinite(res[0]):
            lower_bound = max(lower_bound, -res[0])
            if feasible(res[1]):
                assert res[1] is not None
                cert = certify(res[1], lower_bound)
                if _exact(cert.gap, scale):
                    return res[1], cert
                incumbents.append(res[1])
    relax = LinearProgram.build(lp.c, lp.A, lp.row_lower, lp.row_upper, lp.col_lower,
                                lp.col_upper)
    rs = solver.solve_lp(relax, time_limit=time_limit)
    _record(solver.name, rs.raw_status)
    if rs.status == "infeasible":
        raise InfeasibleError("the set-packing program has no feasible point",
                              backend=solver.name, status=rs.raw_status)
    if rs.status == "optimal" and rs.x is not None and rs.row_duals is not None:
        lp_bound = lp_certificate(relax, rs.x, rs.row_duals).dual_bound  # minimisation form
        if math.isfinite(lp_bound):
            lower_bound = max(lower_bound, lp_bound)
        x = np.array(rs.x)
        tries: list[Callable[[], np.ndarray | None]] = []
        if np.abs(x - np.round(x)).max(initial=0.0) <= 1e-9:
            tries.append(lambda: np.round(x))
        if form.rounder is not None:
            tries.append(lambda: form.rounder(x, col_upper))  # type: ignore[misc]
        tries.append(lambda: _fix_and_solve(lp, x, form.agent, form.option, K, solver,
                                            time_limit))
        for attempt in tries:
            cand = attempt()
            if not feasible(cand):
                continue
            assert cand is not None
            cert = certify(cand, lower_bound)
            if _exact(cert.gap, scale):
                return cand, cert
            incumbents.append(cand)
    sol = solver.solve_lp(lp, time_limit=time_limit, mip_gap=1e-9)
    _record(solver.name, sol.raw_status)
    if sol.status == "infeasible":
        raise InfeasibleError("the set-packing program has no feasible point",
                              backend=solver.name, status=sol.raw_status)
    if sol.usable and sol.x is not None:
        if math.isfinite(sol.mip_dual_bound):
            lower_bound = max(lower_bound, float(sol.mip_dual_bound))
        xm = np.round(np.array(sol.x))  # every column is integral
        if feasible(xm):
            incumbents.append(xm)
    if sol.status == "optimal" and sol.x is not None and not math.isfinite(sol.mip_dual_bound):
        lower_bound = max(lower_bound, float(lp.c @ np.round(np.array(sol.x))))
    if not incumbents:
        zero = np.zeros(A.shape[1])
        if not feasible(zero):
            raise SolverError(f"{solver.name} found no feasible set packing "
                              f"({sol.raw_status}{', time limit' if time_limit else ''})",
                              backend=solver.name, status=sol.raw_status)
        incumbents.append(zero)
    best = min(incumbents, key=lambda v: float(lp.c @ v))
    return best, certify(best, lower_bound)


def _fix_and_solve(lp: Any, x: np.ndarray, agent: np.ndarray, option: np.ndarray, K: int,
                   solver: Any, time_limit: float | None) -> np.ndarray | None:
    """Fix the bid of every agent the LP relaxation decides; find placements for all exactly.

    An agent is decided when its LP mass sits on one bid (possibly split over placements of
    it) or on nothing. Its other bids are fixed at 0; where to place the decided bids, and
    what the undecided agents win, is left to an exact MILP.
    """
    from .backends import LinearProgram

    y = x[:K]
    n = int(agent.max()) + 1 if K else 0
    total = np.bincount(agent, weights=y, minlength=n)
    _, opt_id = np.unique(option, return_inverse=True)
    mass = np.bincount(opt_id, weights=y)
    top = np.zeros(n)
    np.maximum.at(top, agent, mass[opt_id])
    decided = (top >= 1 - 1e-9) | (total <= 1e-9)
    keep = mass[opt_id] >= 1 - 1e-9  # the decided bid's columns stay free
    lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
    shut = decided[agent] & ~keep
    upper[:K] = np.where(shut, 0.0, upper[:K])
    sub = LinearProgram.build(lp.c, lp.A, lp.row_lower, lp.row_upper, lower, upper,
                              integrality=lp.integrality)
    sol = solver.solve_lp(sub, time_limit=time_limit, mip_gap=1e-9)
    _record(solver.name, sol.raw_status)
    if not sol.usable or sol.x is None:
        return None
    return np.round(np.array(sol.x))


def _nash(form: _Form, active: np.ndarray, time_limit: float | None, solver: Any
          ) -> _NashSolve:
    """Lexicographic Nash welfare over the active agents: most agents with positive value
    first (agents valuing the empty bundle at 0 count), then ``max sum_i log v_i``.

    ``bound`` is a proven upper bound on ``sum log v`` at the proven-best count; when the
    count itself is not proven (a time-limited count MILP), no bound is: ``inf``.
    """
    from .errors import InfeasibleError

    K = form.num_options
    ncol = form.A.shape[1]
    act_opt = active[form.agent]
    finite_empty = np.isfinite(form.log_empty)
    zero_opt = act_opt & ~finite_empty[form.agent]
    base = np.where(finite_empty, form.log_empty, 0.0)
    weight = np.where(act_opt, form.logv - base[form.agent], 0.0)
    c = np.r_[weight, np.zeros(ncol - K)]
    scale = float(max(1, int(active.sum())))
    solves = 0
    count_proven = True
    if zero_opt.any():
        # first try to make every agent who values nothing at 0 positive (the usual case)
        target = np.unique(form.agent[zero_opt]).size
        try:
            solves += 1
            x, cert = _milp(form, c, act_opt, (zero_opt.astype(float), float(target)),
                            time_limit, solver, scale)
        except SolverError as exc:  # InfeasibleError included
            if not isinstance(exc, InfeasibleError) and time_limit is None:
                raise
            # the target is infeasible, or the time limit left no incumbent: maximise the
            # count first (nothing is always feasible there), then sum log v at that count
            x1, cert1 = _milp(form, np.r_[zero_opt.astype(float), np.zeros(ncol - K)],
                              act_opt, None, time_limit, solver, float(max(1, target)))
            count = int(round(float(x1[:K][zero_opt].sum())))  # the incumbent's count
            count_proven = bool(cert1.ok)
            solves += 2
            x, cert = _milp(form, c, act_opt, (zero_opt.astype(float), float(count)),
                            time_limit, solver, scale, incumbent=x1)
    else:
        solves += 1
        x, cert = _milp(form, c, act_opt, None, time_limit, solver, scale)
    y = x[:K] > 0.5
    choice = np.full(form.num_agents, -1)
    choice[form.agent[y]] = np.flatnonzero(y)
    const = float(base[active & finite_empty].sum())
    sumlog = float(weight[y].sum()) + const
    bound = (cert.dual_bound + const) if (count_proven and math.isfinite(cert.dual_bound)) \
        else math.inf
    got = int(np.count_nonzero(y & zero_opt))
    return _NashSolve(choice, x, got, sumlog, max(bound, sumlog),
                      bool(count_proven and cert.ok), solves, scale)


def _loo_nash(ctx: tuple[_Form, float | None, Any], i: int) -> tuple[int, float, float, bool,
                                                                       int, float]:
    form, time_limit, solver = ctx
    active = np.ones(form.num_agents, dtype=bool)
    active[i] = False
    if not active.any():
        return 0, 0.0, 0.0, True, 0, 1.0
    r = _nash(form, active, time_limit, solver)
    return r.count, r.sumlog, r.bound, r.optimal, r.solves, r.scale


@dataclass(frozen=True)
class _PAOutcome:
    pf: _NashSolve
    value: np.ndarray
    fraction: np.ndarray
    fraction_error: np.ndarray
    loo_sumlog: np.ndarray
    loo_bound: np.ndarray
    optimal: bool
    solves: int
    certificate: Certificate  # the PF certificate, or the weakest one that is not ok


def _nash_certificate(primal: float, bound: float, scale: float) -> Certificate:
    """Certificate of a lexicographic Nash-welfare MILP (``sum log v``; gap over ``scale``)."""
    gap = max(bound - primal, 0.0) if math.isfinite(bound) else math.inf
    return Certificate(kind="milp", primal_value=float(primal), dual_bound=float(bound),
                       gap=gap, primal_residual=0.0, gap_tol=MILP_GAP_TOL, feas_tol=FEAS_TOL,
                       scale=float(scale))


def _log_unit(values: np.ndarray) -> tuple[int, float]:
    """Power-of-two unit of a set of valuations: ``(e, e log 2)`` with ``max v / 2^e`` in
    [0.5, 1). Dividing every valuation by ``2^e`` is exact and shifts ``sum log v`` over the
    positive agents by a constant per agent: the lexicographic optimum does not move."""
    pos = values[values > 0]
    if pos.size == 0:
        return 0, 0.0
    e = int(np.frexp(pos.max())[1])
    return e, e * _LOG2


def _partial_allocation_milp(form: _Form, *, time_limit: float | None, solver: Any,
                             workers: int, log_unit: float = 0.0) -> _PAOutcome:
    """PF and ``n`` leave-one-out MILPs, and the fractions ``c_i`` (lexicographic form).

    ``form`` holds valuations divided by ``exp(log_unit)`` (see :func:`_log_unit`); fractions
    are computed in those units and objectives and bounds are reported in the caller's.
    """
    n = form.num_agents
    pf = _nash(form, np.ones(n, dtype=bool), time_limit, solver)
    logv = np.r_[form.logv, 0.0]  # (a sentinel for agents without a winning option)
    value_log = np.where(pf.choice >= 0, logv[np.maximum(pf.choice, 0)], form.log_empty)
    positive = np.isfinite(value_log)
    zero_empty = ~np.isfinite(form.log_empty)
    loo = _parallel_map(_loo_nash, (form, time_limit, solver), np.arange(n), workers)
    cnt = np.array([r[0] for r in loo])
    lo = np.array([r[1] for r in loo], dtype=float)
    hi = np.array([r[2] for r in loo], dtype=float)
    ok = np.array([r[3] for r in loo], dtype=bool)
    loo_scale = np.array([r[5] for r in loo], dtype=float)
    solves = pf.solves + int(sum(r[4] for r in loo))
    # numerator: the others' valuations at the PF allocation
    num_cnt = pf.count - (positive & zero_empty).astype(int)
    num_log = pf.sumlog - np.where(positive, value_log, 0.0)
    more = cnt > num_cnt  # removing i lets another agent get a positive value: c_i = 0
    with np.errstate(over="ignore", invalid="ignore"):
        frac = np.where(more, 0.0, np.exp(np.minimum(num_log - np.maximum(lo, num_log), 0.0)))
        err = np.where(more, 0.0, np.expm1(np.maximum(hi - np.maximum(lo, num_log), 0.0)))
    # back to the caller's units: each positive agent's log valuation shifts by log_unit
    finite_empty = np.isfinite(form.log_empty)
    pf_shift = float(np.count_nonzero(positive)) * log_unit
    loo_shift = ((np.count_nonzero(finite_empty) - finite_empty) + cnt) * log_unit
    pf = dataclasses.replace(pf, sumlog=pf.sumlog + pf_shift, bound=pf.bound + pf_shift)
    lo, hi = lo + loo_shift, hi + loo_shift
    cert = _nash_certificate(pf.sumlog, pf.bound, pf.scale)
    certs = [cert] + [_nash_certificate(lo[i], hi[i], loo_scale[i]) for i in range(n)]
    flags = [pf.optimal] + ok.tolist()
    optimal = all(f and c.ok for f, c in zip(flags, certs))
    if not optimal:  # report the first certificate that does not prove its solve
        cert = next(c for f, c in zip(flags, certs) if not (f and c.ok))
        if cert.ok:  # proven gap but an unproven count: no valid bound
            cert = _nash_certificate(cert.primal_value, math.inf, cert.scale or 1.0)
    return _PAOutcome(pf, np.exp(value_log), frac, err, lo, hi, optimal, solves, cert)


# ============================================================================================
# bid tables over placement classes
# ============================================================================================
@dataclass(frozen=True, init=False)
class BidTable:
    """An app's bids for GPUs of one offer, by placement class (Themis §3.2, Table 2).

    Bid ``b`` asks for ``gpus[b]`` of the offered GPUs placed so that, together with the GPUs
    the app already holds, they lie on one machine (``level 0``), one rack (``1``) or anywhere
    (``2``); the app's finish-time fairness would then be ``rho[b]`` (valuation ``1/rho``).
    ``rho_empty`` is ``rho_old``: its fairness if it wins nothing (``inf`` when it holds no
    GPU and has work left, i.e. valuation 0).

    Parameters
    ----------
    gpus : array_like of int, shape (b,)
        GPUs asked for (>= 1).
    level : array_like of int, shape (b,)
        Placement level of each bid (0, 1 or 2).
    rho : array_like, shape (b,)
        Finish-time fairness of each bid (positive, finite).
    rho_empty : float
        Finish-time fairness with no new GPUs (positive, or ``inf``).
    home_machine, home_rack : int
        Machine / rack the app's held GPUs are on (``-1``: none held, or spread over several).
        A level-0 bid must then be met on ``home_machine``, a level-1 bid in ``home_rack``.

    Examples
    --------
    Table 2 of the paper, as placement classes: one GPU for rho 1/2, two on one machine for
    rho 1/4.

    >>> t = BidTable([1, 2], [0, 0], [0.5, 0.25], rho_empty=1.0)
    >>> t.value.tolist(), t.value_empty
    ([2.0, 4.0], 1.0)
    """

    gpus: np.ndarray
    level: np.ndarray
    rho: np.ndarray
    rho_empty: float
    home_machine: int
    home_rack: int

    def __init__(self, gpus: Any, level: Any, rho: Any, *, rho_empty: float = math.inf,
                 home_machine: int = -1, home_rack: int = -1) -> None:
        g = as_array(gpus, "gpus", ndim=1, positive=True, integer=True, allow_empty=True)
        b = g.size
        lev = as_array(level, "level", ndim=1, shape=(b,), integer=True, allow_empty=True)
        if np.any(lev > 2):
            j = int(np.flatnonzero(lev > 2)[0])
            raise InputError(f"level[{j}] is {lev[j]:g}; levels are 0 (machine), 1 (rack), "
                             "2 (anywhere)", argument="level", index=(j,))
        r = as_array(rho, "rho", ndim=1, shape=(b,), positive=True, allow_empty=True)
        re = _rho_empty(rho_empty)
        for name, v in (("home_machine", home_machine), ("home_rack", home_rack)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < -1:
                raise InputError(f"{name} must be an integer >= -1, got {v!r}", argument=name)
        gi = g.astype(np.int64)
        li = lev.astype(np.int64)
        for arr in (gi, li):
            arr.flags.writeable = False
        object.__setattr__(self, "gpus", gi)
        object.__setattr__(self, "level", li)
        object.__setattr__(self, "rho", r)
        object.__setattr__(self, "rho_empty", re)
        object.__setattr__(self, "home_machine", int(home_machine))
        object.__setattr__(self, "home_rack", int(home_rack))

    @property
    def value(self) -> np.ndarray:
        """Valuation ``1 / rho`` of each bid (read-only)."""
        return readonly(1.0 / self.rho)

    @property
    def value_empty(self) -> float:
        """Valuation of winning nothing (0 when ``rho_empty`` is infinite)."""
        return 0.0 if math.isinf(self.rho_empty) else 1.0 / self.rho_empty

    def __len__(self) -> int:
        return int(self.gpus.size)

    def to_frame(self) -> Any:
        """The table as a DataFrame: gpus, placement, rho, value."""
        pd = require_pandas()
        return pd.DataFrame({"gpus": self.gpus, "placement": [LEVELS[k] for k in self.level],
                             "rho": self.rho, "value": self.value})

    def __repr__(self) -> str:
        return (f"BidTable({len(self)} bids, rho_empty={self.rho_empty:.4g}, "
                f"home_machine={self.home_machine}, home_rack={self.home_rack})")


def _rho_empty(value: Any) -> float:
    """``rho_empty``: a positive number or ``inf`` (no GPU and work left)."""
    if isinstance(value, bool | np.bool_ | str | bytes) or (
            isinstance(value, np.ndarray) and value.ndim != 0):
        raise InputError(f"rho_empty must be a number, got {value!r}", argument="rho_empty")
    try:
        re = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"rho_empty must be a number, got {value!r}",
                         argument="rho_empty") from None
    if not re > 0 or math.isnan(re):
        raise InputError(f"rho_empty must be positive (or inf), got {value!r}",
                         argument="rho_empty")
    return re


def _call_rho(rho: Callable[..., Any], k: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The caller's ``rho(k, s)`` as a float array of ``k``'s shape: positive (``inf``
    allowed), never NaN. Whatever goes wrong is an InputError naming ``rho``."""
    try:
        out = rho(k, s)
        r = np.array(out, dtype=float).reshape(k.shape) if np.size(out) == k.size else None
    except FairallocError:
        raise
    except Exception as exc:
        raise InputError(f"rho(num_gpus, slowdown) raised {type(exc).__name__}: {exc}",
                         argument="rho") from exc
    if r is None:
        raise InputError(f"rho(num_gpus, slowdown) must return one value per allocation "
                         f"({k.size}), got {np.size(out)}", argument="rho")
    bad = np.isnan(r) | (r <= 0)
    if bad.any():
        j = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(f"rho(num_gpus={int(k.ravel()[j])}, slowdown={s.ravel()[j]:g}) is "
                         f"{r.ravel()[j]!r}; finish-time fairness must be positive (or inf)",
                         argument="rho")
    return r


def bid_table(
    rho: Callable[[np.ndarray, np.ndarray], Any],
    topology: Topology,
    offer: Any,
    *,
    held: Any = None,
    max_gpus: int | None = None,
    slowdown: Any = None,
) -> BidTable:
    """Enumerate an app's bids for an offer by placement class (Themis §3.2, §4.3.3).

    Instead of all ``2^g`` subsets of the offered GPUs, the app bids once per *class*: ``k``
    GPUs that, with the GPUs it holds, lie on one machine, one rack or anywhere. Its
    valuation depends only on the class (``rho(held + k, S(level))``, with the placement
    slowdown ``S`` of the level), so the class table is exact. Classes that cannot be met by
    the offer, and classes dominated by another (fewer GPUs, looser placement, at least the
    same value) or not better than winning nothing, are left out.

    Parameters
    ----------
    rho : callable
        ``rho(num_gpus, slowdown)`` -> finish-time fairness, vectorised over arrays of total
        GPU counts and slowdowns (e.g. ``functools.partial`` of
        :func:`fairalloc.single_job_rho`, or an app model's ``rho``).
    topology : Topology
    offer : array_like
        The offered GPUs (boolean mask (g,) or list of GPU ids).
    held : array_like, optional
        GPUs the app already holds (disjoint from ``offer``).
    max_gpus : int, optional
        Most new GPUs worth bidding for (e.g. the app's remaining demand); default: the offer.
    slowdown : array_like, shape (3,), optional
        The app's slowdown on one machine / one rack / across racks; default ``(1, 1.1, 1.3)``.

    Returns
    -------
    BidTable

    Examples
    --------
    >>> from functools import partial
    >>> from fairalloc.valuations import Topology, single_job_rho
    >>> t = Topology.uniform(2, 4)                       # two 4-GPU machines, one rack
    >>> f = partial(single_job_rho, iter_total=100, iter_left=100, iter_time_serial=4.0,
    ...             job_demand_max=4, cluster_gpus=8, contention=2)
    >>> bids = bid_table(lambda g, s: f(g, slowdown=s), t, list(range(8)))
    >>> list(zip(bids.gpus.tolist(), bids.level.tolist(), bids.rho.round(3).tolist()))
    [(1, 0, 2.0), (2, 0, 1.0), (2, 1, 1.1), (3, 0, 0.667), (3, 1, 0.733), (4, 0, 0.5), (4, 1, 0.55)]
    """
    if not isinstance(topology, Topology):
        raise InputError(f"topology must be a Topology, got {type(topology).__name__}",
                         argument="topology")
    if not callable(rho):
        raise InputError("rho must be a callable rho(num_gpus, slowdown)", argument="rho")
    S = _slowdown_levels(slowdown)
    off = topology.mask(offer, "offer")
    if off.ndim != 1:
        raise InputError("offer must be one GPU set", argument="offer")
    hold = np.zeros_like(off) if held is None else topology.mask(held, "held")
    if hold.ndim != 1:
        raise InputError("held must be one GPU set", argument="held")
    if np.any(off & hold):
        j = int(np.flatnonzero(off & hold)[0])
        raise InputError(f"GPU {j} is both offered and held", argument="held", index=(j,))
    n_off = int(off.sum())
    kmax = n_off if max_gpus is None else min(n_off, as_positive_int(max_gpus, "max_gpus",
                                                                       allow_zero=True))
    H = topology.num_machines
    free_m = np.bincount(topology.machine[off], minlength=H)
    free_r = np.bincount(topology.rack, weights=free_m, minlength=topology.num_racks)
    n_held = int(hold.sum())
    held_machines = np.unique(topology.machine[hold])
    held_racks = np.unique(topology.gpu_rack[hold])
    home_m = int(held_machines[0]) if held_machines.size == 1 else -1
    home_r = int(held_racks[0]) if held_racks.size == 1 else -1
    held_level = topology.level(hold) if n_held else 0
    # largest k each level can take: level 0 on the home machine (any machine if none held)
    cap0 = (free_m[home_m] if home_m >= 0 else free_m.max(initial=0)) if held_machines.size <= 1 \
        else 0
    cap1 = (free_r[home_r] if home_r >= 0 else free_r.max(initial=0)) if held_racks.size <= 1 \
        else 0
    caps = np.array([cap0, cap1, n_off])
    rho_empty = float(_call_rho(rho, np.array([n_held]), np.array([S[held_level]]))[0])
    if kmax == 0:
        return BidTable([], [], [], rho_empty=rho_empty, home_machine=home_m, home_rack=home_r)
    k = np.arange(1, kmax + 1)
    K, L = np.meshgrid(k, np.arange(3), indexing="ij")  # (kmax, 3)
    feasible = (K <= caps[None, :]) & (L >= held_level)
    if n_held == 0:
        feasible[0, 1:] = False  # one GPU is always on one machine
    if topology.num_racks == 1:
        feasible[:, 2] = False  # "anywhere" is "one rack"
    if topology.num_machines == topology.num_racks:
        feasible[:, 1] &= ~feasible[:, 0]  # one machine per rack: rack-level = machine-level
    r = _call_rho(rho, n_held + K.ravel(), S[L.ravel()]).reshape(K.shape)
    with np.errstate(divide="ignore"):
        v = np.where(feasible, 1.0 / r, -np.inf)
    # dominance: (k', l') with k' <= k, l' >= l and value >= v(k, l) (strictly smaller k or l)
    looser = np.maximum.accumulate(v[:, ::-1], axis=1)[:, ::-1]  # max over l' >= l, same k
    prev = np.vstack([np.full((1, 3), -np.inf), np.maximum.accumulate(looser, axis=0)[:-1]])
    same_k = np.c_[looser[:, 1:], np.full(kmax, -np.inf)]  # l' > l, same k
    dominated = np.maximum(prev, same_k) >= v * (1 - 1e-12)
    empty_v = 0.0 if math.isinf(rho_empty) else 1.0 / rho_empty
    keep = feasible & ~dominated & (v > empty_v * (1 + 1e-12)) & np.isfinite(r)
    kk, ll = np.nonzero(keep)
    return BidTable(k[kk], ll, r[kk, ll], rho_empty=rho_empty, home_machine=home_m,
                    home_rack=home_r)


# ============================================================================================
# indivisible GPU auctions
# ============================================================================================
@dataclass(frozen=True, repr=False)
class GPUAuctionResult(Result):
    """Outcome of a partial-allocation auction of indivisible GPUs.

    Attributes
    ----------
    pf_bundles : ndarray of bool, shape (n, g)
        The PF assignment: ``pf_bundles[i, j]`` if GPU ``j`` goes to agent ``i``.
    choice : ndarray of int, shape (n,)
        Index of the winning bid of each agent (``-1``: none).
    pf_value : ndarray, shape (n,)
        Each agent's valuation ``1/rho`` of its PF bundle (of the empty bundle if none).
    fraction : ndarray, shape (n,)
        ``c_i`` in ``[0, 1]`` (``0`` only when removing ``i`` lets another agent win a positive
        valuation, see ``formulations/partial_allocation.md``).
    allocation : ndarray, shape (n, g)
        ``fraction[:, None] * pf_bundles``: the fractional PA allocation.
    leftover : ndarray, shape (g,)
        ``offer - allocation.sum(0)``: unallocated GPU fractions (hidden payments).
    loo_objective, loo_bound : ndarray, shape (n,)
        ``sum_{j != i} log v_j`` of the best leave-one-out incumbent and the solver's bound.
    fraction_error : ndarray, shape (n,)
        Certified relative uncertainty of each fraction (``exp(bound - incumbent) - 1``).
    objective : float
        ``sum_i log v_i`` over the agents with positive valuation (PF).
    certificate : Certificate
        Kind ``"milp"``, gap judged against the number of agents in the sum (its data
        scale) with :data:`fairalloc.tolerances.MILP_GAP_TOL`: the PF solve's when every solve
        is proven (``Status.OPTIMAL``), else the first unproven one (never ok; status
        ``TIME_LIMIT`` with a time limit, ``SUBOPTIMAL`` otherwise).
    """

    pf_bundles: np.ndarray
    choice: np.ndarray
    pf_value: np.ndarray
    fraction: np.ndarray
    allocation: np.ndarray
    leftover: np.ndarray
    loo_objective: np.ndarray
    loo_bound: np.ndarray
    fraction_error: np.ndarray

    def to_frame(self) -> Any:
        """One row per agent: GPUs won, PF valuation, fraction and its certified error."""
        pd = require_pandas()
        df = pd.DataFrame({"gpus": self.pf_bundles.sum(axis=1), "choice": self.choice,
                           "pf_value": self.pf_value, "fraction": self.fraction,
                           "fraction_error": self.fraction_error})
        df.index.name = "agent"
        return df


BundleAuctionResult = GPUAuctionResult


def _result(out: _PAOutcome, bundles: np.ndarray, offer: np.ndarray, value: np.ndarray,
            t0: float, mark: int, method: str, time_limit: float | None) -> GPUAuctionResult:
    alloc = out.fraction[:, None] * bundles
    leftover = np.maximum(offer.astype(float) - alloc.sum(axis=0), 0.0)
    stats = _solve_stats(mark, method=method, t0=t0, solves=out.solves)
    pf = out.pf
    if out.optimal:
        status = Status.OPTIMAL
    else:
        status = Status.TIME_LIMIT if time_limit is not None else Status.SUBOPTIMAL
    return GPUAuctionResult(
        objective=pf.sumlog, status=status, stats=stats, certificate=out.certificate,
        pf_bundles=bundles, choice=pf.choice, pf_value=value, fraction=out.fraction,
        allocation=alloc, leftover=leftover, loo_objective=out.loo_sumlog,
        loo_bound=out.loo_bound, fraction_error=out.fraction_error)


def _as_list(value: Any, name: str) -> list[Any]:
    """A sequence argument as a list (strings, scalars and non-iterables are refused)."""
    if isinstance(value, str | bytes | dict) or (isinstance(value, np.ndarray) and
                                                  value.ndim == 0):
        raise InputError(f"{name} must be a sequence, got {type(value).__name__}",
                         argument=name)
    try:
        return list(value)
    except TypeError:
        raise InputError(f"{name} must be a sequence, got {type(value).__name__}",
                         argument=name) from None


def _milp_solver(backend: Any) -> Any:
    from .backends import get_backend

    return get_backend(backend, need="milp")


@_clean_log
def bundle_auction(
    bundles: Sequence[Any],
    values: Sequence[Any],
    *,
    num_goods: int | None = None,
    empty_value: Any = None,
    time_limit: float | None = None,
    workers: int | None = 1,
    backend: Any = "highs",
) -> GPUAuctionResult:
    """Partial-allocation auction over explicit bundles (Themis §3.3.1 with Table 2 bids).

    Agent ``i`` bids ``values[i][b]`` (its valuation ``1/rho``) for the bundle
    ``bundles[i][b]``, a set of goods; it wins at most one bundle, and no good is sold twice.
    The PF allocation maximises ``sum_i log v_i`` (agents that would value a bundle-less
    outcome at 0 are first made positive for as many as possible); it and every
    leave-one-out market are exact set-packing MILPs.

    Parameters
    ----------
    bundles : sequence of sequences
        ``bundles[i]``: the bundles agent ``i`` bids for, each a list of good ids
        (or a boolean array of shape (num_goods,)).
    values : sequence of array_like
        ``values[i][b] > 0``: the valuation of ``bundles[i][b]``.
    num_goods : int, optional
        Number of goods (default: the largest id + 1).
    empty_value : array_like, shape (n,), optional
        Valuation of winning nothing (``1/rho_old``; default 0).
    time_limit : float, optional
        Seconds per MILP. If a MILP stops at the limit before its optimum is proven, the
        result has ``Status.TIME_LIMIT`` and a certificate that is not ok (its gap bounds how
        far the incumbent may be from optimal; ``fraction_error`` bounds the fractions).
    workers : int or None
        Processes for the leave-one-out MILPs.
    backend : str or Backend
        MILP backend (default ``"highs"``; ``InputError`` if it cannot solve MILPs). Many
        auctions need none: ``stats.backend`` is ``"numpy"`` when the exact relaxations
        certified every solve.

    Notes
    -----
    Certificates (kind ``"milp"``) judge the gap of ``sum log v`` against its data scale, the
    number of agents in the sum, with :data:`fairalloc.tolerances.MILP_GAP_TOL`. The result's
    certificate is the PF solve's when every solve is proven (``Status.OPTIMAL``); otherwise
    it is the first unproven one (PF, then leave-one-out markets in agent order). Valuations
    are divided by one power of two before solving (exact), so rescaling every valuation
    leaves bundles and fractions unchanged.

    Returns
    -------
    GPUAuctionResult

    Examples
    --------
    Two agents want the same two GPUs; agent 1 also accepts GPU 2:

    >>> r = bundle_auction([[[0, 1]], [[0, 1], [2]]], [[4.0], [4.0, 1.0]])
    >>> r.pf_bundles.astype(int).tolist(), r.fraction.round(4).tolist()
    ([[1, 1, 0], [0, 0, 1]], [0.25, 1.0])
    """
    t0 = time.perf_counter()
    mark = len(_used())
    bundles = _as_list(bundles, "bundles")
    values = _as_list(values, "values")
    n = len(bundles)
    if n == 0:
        raise InputError("bundles is empty: an auction needs at least one agent",
                         argument="bundles")
    if len(values) != n:
        raise InputError(f"values has {len(values)} rows but bundles has {n} agents",
                         argument="values")
    vals = [as_array(values[i], f"values[{i}]", ndim=1, positive=True, allow_empty=True)
            for i in range(n)]
    sets: list[np.ndarray] = []
    agent: list[int] = []
    g_cap = _MAX_GOODS if num_goods is None else as_positive_int(num_goods, "num_goods")
    if g_cap > _MAX_GOODS:
        raise InputError(f"num_goods must be at most {_MAX_GOODS}, got {num_goods!r}",
                         argument="num_goods")
    for i in range(n):
        own = _as_list(bundles[i], f"bundles[{i}]")
        if len(own) != vals[i].size:
            raise InputError(f"agent {i} has {len(own)} bundles but {vals[i].size} "
                             "values", argument="values", index=(i,))
        for b, bundle in enumerate(own):
            try:
                arr = np.asarray(bundle)
            except (TypeError, ValueError):
                arr = None  # as_array below names the problem
            if arr is not None and arr.dtype == bool:
                if arr.ndim != 1:
                    raise InputError(f"bundles[{i}][{b}] as a mask must be 1-d",
                                     argument="bundles", index=(i, b))
                ids = np.flatnonzero(arr).astype(float)
            else:
                ids = as_array(bundle, f"bundles[{i}][{b}]", ndim=1, integer=True,
                               allow_empty=True)
            if ids.size and ids.max() >= g_cap:
                raise InputError(
                    f"bundles[{i}][{b}] names good {ids.max():g}, but "
                    + (f"num_goods is {g_cap}" if num_goods is not None
                       else f"at most {_MAX_GOODS} goods are supported"),
                    argument="num_goods" if num_goods is not None else "bundles",
                    index=(i, b))
            ids = ids.astype(np.int64)
            if ids.size == 0:
                raise InputError(f"bundles[{i}][{b}] is empty (the empty bundle is "
                                 "empty_value)", argument="bundles", index=(i, b))
            if np.unique(ids).size != ids.size:
                raise InputError(f"bundles[{i}][{b}] lists a good twice", argument="bundles",
                                 index=(i, b))
            sets.append(ids)
            agent.append(i)
    g_max = max((int(s.max()) for s in sets), default=-1) + 1
    g = g_max if num_goods is None else g_cap
    if g < g_max:
        raise InputError(f"a bundle names good {g_max - 1} but num_goods is {g}",
                         argument="num_goods")
    empty = np.zeros(n) if empty_value is None else as_array(empty_value, "empty_value",
                                                             ndim=1, shape=(n,))
    workers_n = _workers(workers)
    tl = as_time_limit(time_limit)
    solver = _milp_solver(backend)
    ag = np.array(agent, dtype=np.int64)
    flat = np.concatenate(vals) if vals else np.zeros(0)
    e, log_unit = _log_unit(np.r_[flat, empty])
    logv = np.log(flat) - log_unit  # valuations in units of 2^e (no underflow)
    with np.errstate(divide="ignore"):
        log_empty = np.log(empty) - log_unit
    useful = flat > empty[ag]  # never worse than nothing
    keep = np.flatnonzero(useful)
    K = keep.size
    rows_g = np.concatenate([sets[o] for o in keep]) if K else np.zeros(0, dtype=np.int64)
    cols_g = np.repeat(np.arange(K), [sets[o].size for o in keep]) if K else rows_g
    A = sp.vstack([
        sp.csr_matrix((np.ones(K), (ag[keep], np.arange(K))), shape=(n, K)),
        sp.csr_matrix((np.ones(rows_g.size), (rows_g, cols_g)), shape=(g, K)),
    ], format="csr")
    form = _Form(agent=ag[keep], logv=logv[keep], log_empty=log_empty, A=A,
                 row_lower=np.full(n + g, -np.inf), row_upper=np.ones(n + g),
                 col_upper=np.ones(K), integrality=np.ones(K, dtype=bool), num_agents=n,
                 option=np.arange(K))
    out = _partial_allocation_milp(form, time_limit=tl, solver=solver, workers=workers_n,
                                   log_unit=log_unit)
    pf_bundles = np.zeros((n, g), dtype=bool)
    won = np.flatnonzero(out.pf.choice >= 0)
    for i in won.tolist():  # one row per winner: at most n small index sets
        pf_bundles[i, sets[keep[out.pf.choice[i]]]] = True
    flat_choice = np.where(out.pf.choice >= 0, np.r_[keep, -1][np.maximum(out.pf.choice, 0)],
                           -1)
    value = np.where(flat_choice >= 0, np.r_[flat, 0.0][flat_choice], empty)
    # report choice as the index within the agent's own bids
    first = np.searchsorted(ag, np.arange(n))
    choice = np.where(flat_choice >= 0, flat_choice - first, -1)
    out = dataclasses.replace(out, pf=dataclasses.replace(out.pf, choice=choice))
    return _result(out, pf_bundles, np.ones(g, dtype=bool), value, t0, mark, "set_packing", tl)


@_clean_log
def gpu_auction(
    bids: Sequence[BidTable],
    topology: Topology,
    offer: Any,
    *,
    time_limit: float | None = None,
    workers: int | None = 1,
    backend: Any = "highs",
) -> GPUAuctionResult:
    """Partial-allocation auction of offered GPUs bid for by placement class (Themis §3.3.1).

    Exact MILP over the classes of :func:`bid_table`: agent ``i`` picks at most one bid
    ``(k, level)``; ``z[i, h]`` of its GPUs come from machine ``h``; a level-0 bid takes all of
    them from one machine (its home machine if it holds GPUs), a level-1 bid from one rack.
    Machine capacities are the offered GPUs per machine. The objective is lexicographic Nash
    welfare over ``1/rho`` (``formulations/partial_allocation.md``); the same program without
    agent ``i`` gives ``c_i``.

    Parameters
    ----------
    bids : sequence of BidTable
        One table per agent.
    topology : Topology
    offer : array_like
        The GPUs being auctioned (mask or list of ids).
    time_limit : float, optional
        Seconds per MILP; an unproven solve makes the result ``Status.TIME_LIMIT`` with a
        certificate that is not ok (see :func:`bundle_auction`).
    workers : int or None
        Processes for the leave-one-out MILPs.
    backend : str or Backend
        MILP backend (default ``"highs"``; ``InputError`` if it cannot solve MILPs);
        ``stats.backend`` is ``"numpy"`` when the exact knapsack relaxation certified every
        solve and no backend ran.

    Returns
    -------
    GPUAuctionResult

    Examples
    --------
    Two 2-GPU machines. Agent 0 is placement sensitive (2 GPUs on one machine: rho 0.5,
    across machines: rho 1), agent 1 is not:

    >>> from fairalloc.valuations import Topology
    >>> t = Topology.uniform(2, 2, machines_per_rack=1)
    >>> a = BidTable([1, 2, 2], [0, 0, 2], [1.0, 0.5, 1.0])
    >>> b = BidTable([1, 2], [0, 2], [1.0, 0.5])
    >>> r = gpu_auction([a, b], t, [0, 1, 2, 3])
    >>> r.pf_bundles.sum(axis=1).tolist(), r.pf_value.tolist()
    ([2, 2], [2.0, 2.0])
    """
    t0 = time.perf_counter()
    mark = len(_used())
    if not isinstance(topology, Topology):
        raise InputError(f"topology must be a Topology, got {type(topology).__name__}",
                         argument="topology")
    tables = _as_list(bids, "bids")
    n = len(tables)
    if n == 0:
        raise InputError("bids is empty: an auction needs at least one agent", argument="bids")
    for i, tb in enumerate(tables):
        if not isinstance(tb, BidTable):
            raise InputError(f"bids[{i}] is a {type(tb).__name__}, not a BidTable",
                             argument="bids", index=(i,))
        for name, v, top in (("home_machine", tb.home_machine, topology.num_machines),
                             ("home_rack", tb.home_rack, topology.num_racks)):
            if v >= top:
                raise InputError(f"bids[{i}].{name} = {v} does not exist in the topology",
                                 argument="bids", index=(i,))
    off = topology.mask(offer, "offer")
    if off.ndim != 1:
        raise InputError("offer must be one GPU set", argument="offer")
    workers_n = _workers(workers)
    tl = as_time_limit(time_limit)
    solver = _milp_solver(backend)
    e, log_unit = _log_unit(np.concatenate([t.value for t in tables]
                                           + [np.array([t.value_empty for t in tables])]))
    form, decode, col_option = _placement_form(tables, topology, off, e)
    out = _partial_allocation_milp(form, time_limit=tl, solver=solver, workers=workers_n,
                                   log_unit=log_unit)
    bundles = decode(out.pf.x)
    option_of = np.r_[_option_index(tables), -1][np.r_[col_option, -1]]  # column -> bid
    choice = np.where(out.pf.choice >= 0, option_of[np.maximum(out.pf.choice, 0)], -1)
    value = np.array([tables[i].value[c] if c >= 0 else tables[i].value_empty
                      for i, c in enumerate(choice.tolist())], dtype=float)
    out = dataclasses.replace(out, pf=dataclasses.replace(out.pf, choice=choice))
    return _result(out, bundles, off, value, t0, mark, "placement_classes", tl)


def _useful_options(tables: Sequence[BidTable]) -> tuple[np.ndarray, np.ndarray]:
    """(agent, bid index) of every bid strictly better than winning nothing."""
    agent = np.concatenate([np.full(len(t), i) for i, t in enumerate(tables)]).astype(np.int64)
    bid = np.concatenate([np.arange(len(t)) for t in tables]).astype(np.int64)
    val = np.concatenate([t.value for t in tables]) if agent.size else np.zeros(0)
    empty = np.array([t.value_empty for t in tables])
    useful = val > empty[agent] * (1 + 1e-12)
    return agent[useful], bid[useful]


def _option_index(tables: Sequence[BidTable]) -> np.ndarray:
    return _useful_options(tables)[1]


def _patterns(sizes: np.ndarray, capacity: int, limit: int = 4000) -> np.ndarray | None:
    """Maximal multisets of ``sizes`` fitting in ``capacity``: rows = patterns, columns = counts.

    ``None`` when there would be more than ``limit`` of them.
    """
    sizes = np.sort(np.unique(sizes))[::-1].astype(int)
    smallest = int(sizes.min())
    out: list[list[int]] = []
    counts = [0] * sizes.size

    def rec(idx: int, left: int) -> bool:
        if len(out) > limit:
            return False
        if idx == sizes.size:
            if left < smallest:  # maximal: nothing else fits
                out.append(list(counts))
            return True
        for c in range(left // int(sizes[idx]), -1, -1):
            counts[idx] = c
            if not rec(idx + 1, left - c * int(sizes[idx])):
                return False
        counts[idx] = 0
        return True

    if not rec(0, int(capacity)):
        return None
    pats = np.array(out, dtype=float).reshape(-1, sizes.size)
    order = np.argsort(sizes)  # columns in increasing size order
    return pats[:, order]


def _placement_form(tables: Sequence[BidTable], topology: Topology, offer: np.ndarray,
                    e: int = 0) -> tuple[_Form, Callable[[np.ndarray], np.ndarray], np.ndarray]:
    """The placement-class MILP of :func:`gpu_auction`, a decoder, and column -> option.

    Machines with offered GPUs are grouped into *types* (same rack, same number of offered
    GPUs); a machine that is some bidder's home is a type of its own. Choice columns:

    * level 0 (one machine): ``a[o, tau]`` -- bid ``o`` is met on a machine of type ``tau``;
      a type of ``c`` machines packs its level-0 bids by bin-packing *patterns* (maximal
      multisets of bid sizes fitting one machine): ``x[tau, p]`` machines use pattern ``p``,
      ``sum_p x[tau, p] <= c`` and, for every size ``k``, the level-0 bids of size ``k`` on
      ``tau`` are at most the pattern slots of size ``k``. Patterns are used for single
      machines too: their LP relaxation is the convex hull of the machine's packings, far
      tighter than a knapsack row (used only if a machine's patterns would explode);
    * level 1 (one rack): ``a[o, r]`` -- bid ``o`` is met in rack ``r``; per rack, level-0
      and level-1 GPUs fit the rack's offered GPUs (level-1 GPUs are interchangeable within
      the rack);
    * level 2 (anywhere): ``y[o]``; all bids together fit the offer.

    Each bidder wins at most one column. Identical machines are never told apart, so the
    program has no symmetric copies of a solution.
    """
    n = len(tables)
    H, R = topology.num_machines, topology.num_racks
    free = np.bincount(topology.machine[offer], minlength=H)
    rack_free = np.bincount(topology.rack, weights=free, minlength=R)
    agent, bid = _useful_options(tables)
    K = agent.size
    k_opt = np.array([tables[a].gpus[b] for a, b in zip(agent, bid)], dtype=np.int64) if K \
        else np.zeros(0, dtype=np.int64)
    l_opt = np.array([tables[a].level[b] for a, b in zip(agent, bid)], dtype=np.int64) if K \
        else np.zeros(0, dtype=np.int64)
    v_opt = np.array([tables[a].value[b] for a, b in zip(agent, bid)]) if K else np.zeros(0)
    home_m = np.array([t.home_machine for t in tables], dtype=np.int64)
    home_r = np.array([t.home_rack for t in tables], dtype=np.int64)
    # ---- machine types ---------------------------------------------------------------------
    machines = np.flatnonzero(free > 0)
    homes = np.unique(home_m[(home_m >= 0) & (np.bincount(agent[l_opt == 0], minlength=n) > 0)])
    single = np.isin(machines, homes)
    roaming = k_opt[(l_opt == 0) & (home_m[agent] < 0)]  # level-0 sizes of bidders without home
    for _ in range(2):
        key = np.where(single, -1 - machines, topology.rack[machines] * (topology.num_gpus + 1)
                       + free[machines])
        _, type_of = np.unique(key, return_inverse=True)  # type of each machine with free GPUs
        # a type whose patterns would explode is split into single machines (knapsacks)
        explode = np.zeros(machines.size, dtype=bool)
        for t in np.unique(type_of[~single]):
            cap = int(free[machines[type_of == t][0]])
            sizes = roaming[roaming <= cap]
            if sizes.size and _patterns(sizes, cap) is None:
                explode |= type_of == t
        if not explode.any():
            break
        single |= explode
    T = int(type_of.max()) + 1 if machines.size else 0
    t_count = np.bincount(type_of, minlength=T)
    first_machine = machines[np.unique(type_of, return_index=True)[1]] if T else machines
    t_cap = free[first_machine]
    t_rack = topology.rack[first_machine]
    # ---- choice columns --------------------------------------------------------------------
    o0 = np.flatnonzero(l_opt == 0)
    ok0 = (k_opt[o0][:, None] <= t_cap[None, :]) & (
        (home_m[agent[o0]][:, None] < 0)
        | (first_machine[None, :] == home_m[agent[o0]][:, None]) & (t_count[None, :] == 1))
    c0_o, c0_t = np.nonzero(ok0)
    c0_o = o0[c0_o]
    o1 = np.flatnonzero(l_opt == 1)
    ok1 = (k_opt[o1][:, None] <= rack_free[None, :]) & (
        (home_r[agent[o1]][:, None] < 0) | (np.arange(R)[None, :] == home_r[agent[o1]][:, None]))
    c1_o, c1_r = np.nonzero(ok1)
    c1_o = o1[c1_o]
    c2_o = np.flatnonzero(l_opt == 2)
    col_option = np.concatenate([c0_o, c1_o, c2_o]).astype(np.int64)
    n0, n1, n2 = c0_o.size, c1_o.size, c2_o.size
    nc = n0 + n1 + n2
    col_k = k_opt[col_option].astype(float)
    col_agent = agent[col_option]
    # ---- patterns per machine type (their LP is the convex hull of one machine's packings;
    # a single machine whose patterns would explode gets a knapsack row instead) ------------
    pat_type: list[int] = []
    pat_rows: list[np.ndarray] = []  # counts per size of each pattern
    pat_sizes: list[np.ndarray] = []
    knap_types: list[int] = []
    for t in range(T):
        sizes = np.unique(k_opt[c0_o[c0_t == t]])
        if sizes.size == 0:
            continue
        pats = _patterns(sizes, int(t_cap[t]))
        if pats is None:  # only single machines (exploding multi-machine types were split)
            knap_types.append(t)
            continue
        pat_type.append(t)
        pat_rows.append(pats)
        pat_sizes.append(sizes)
    npat = int(sum(p.shape[0] for p in pat_rows))
    ncol = nc + npat
    rows_r: list[np.ndarray] = []
    rows_c: list[np.ndarray] = []
    rows_v: list[np.ndarray] = []
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    nrow = 0

    def add(r: np.ndarray, c: np.ndarray, v: Any) -> None:
        rows_r.append(np.asarray(r, dtype=np.int64))
        rows_c.append(np.asarray(c, dtype=np.int64))
        rows_v.append(np.broadcast_to(np.asarray(v, dtype=float), np.shape(r)).copy())

    def rows(count: int, lo: Any, hi: Any) -> int:
        nonlocal nrow
        start = nrow
        lower.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).copy())
        upper.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).copy())
        nrow += count
        return start

    # (1) one column per bidder
    r0 = rows(n, -np.inf, 1.0)
    add(r0 + col_agent, np.arange(nc), 1.0)
    # (2) everything fits the offer
    r0 = rows(1, -np.inf, float(free.sum()))
    add(np.full(nc, r0), np.arange(nc), col_k)
    # (3) per rack: level-0 and level-1 GPUs fit the rack
    r0 = rows(R, -np.inf, rack_free)
    add(r0 + t_rack[c0_t], np.arange(n0), col_k[:n0])
    add(r0 + c1_r, n0 + np.arange(n1), col_k[n0:n0 + n1])
    # (4) single machines without patterns: knapsack on the machine's offered GPUs
    knap = np.array(knap_types, dtype=np.int64)
    if knap.size:
        r0 = rows(knap.size, -np.inf, t_cap[knap])
        pos = np.full(T, -1)
        pos[knap] = np.arange(knap.size)
        sel = np.flatnonzero(pos[c0_t] >= 0)
        add(r0 + pos[c0_t[sel]], sel, col_k[sel])
    # (5) patterns: sum_p x <= count; bids of size k <= slots of size k
    col = nc
    for t, pats, sizes in zip(pat_type, pat_rows, pat_sizes):
        P = pats.shape[0]
        r0 = rows(1, -np.inf, float(t_count[t]))
        add(np.full(P, r0), col + np.arange(P), 1.0)
        r0 = rows(sizes.size, -np.inf, 0.0)
        sel = np.flatnonzero(c0_t == t)
        add(r0 + np.searchsorted(sizes, col_k[sel]), sel, 1.0)
        pi, si = np.nonzero(pats)
        add(r0 + si, col + pi, -pats[pi, si])
        col += P
    A = sp.csr_matrix((np.concatenate(rows_v), (np.concatenate(rows_r), np.concatenate(rows_c))),
                      shape=(nrow, ncol))
    pat_upper = np.concatenate([np.full(p.shape[0], float(t_count[t]))
                                for t, p in zip(pat_type, pat_rows)]) if npat else np.zeros(0)
    log_empty = np.array([math.log(t.value_empty) - e * _LOG2 if t.value_empty > 0
                          else -math.inf for t in tables])  # valuations in units of 2^e
    pat_index = {t: {tuple(row.astype(int)): q for q, row in enumerate(pats)}
                 for t, pats in zip(pat_type, pat_rows)}
    pat_offset = dict(zip(pat_type, nc + np.cumsum([0] + [p.shape[0] for p in pat_rows])[:-1]))
    sizes_of = dict(zip(pat_type, pat_sizes))
    col_of0 = {(int(o), int(t)): q for q, (o, t) in enumerate(zip(c0_o, c0_t))}
    col_of1 = {(int(o), int(r)): n0 + q for q, (o, r) in enumerate(zip(c1_o, c1_r))}
    col_of2 = {int(o): n0 + n1 + q for q, o in enumerate(c2_o)}
    m_free = free.astype(np.int64)

    def rounder(x: np.ndarray, col_upper: np.ndarray) -> np.ndarray | None:
        """Each agent's bid of largest LP mass, placed by :func:`place`."""
        mass = np.bincount(col_option, weights=x[:nc] * (col_upper[:nc] > 0), minlength=K)
        best = np.full(n, -1)
        order = np.lexsort((mass, agent))  # by agent, then mass: each agent's last is its top
        last = np.r_[agent[order][1:] != agent[order][:-1], True] if K else np.zeros(0, bool)
        best[agent[order][last]] = order[last]
        total = np.bincount(agent, weights=mass, minlength=n)
        chosen = np.flatnonzero((best >= 0) & (total >= 0.5 - 1e-9))
        return place(chosen, best[chosen])

    def relaxation(w_col: np.ndarray, act_col: np.ndarray, must: np.ndarray
                   ) -> tuple[float, np.ndarray | None] | None:
        """Exact optimum without machine and rack constraints, and its placement if any.

        Dropping them leaves a multiple-choice knapsack: each agent wins at most one bid
        (exactly one if ``must``), and all bids fit the offered GPUs. A dynamic program over
        the number of GPUs used solves it exactly; its value bounds the MILP from above.
        """
        w_opt = np.full(K, -np.inf)
        w_opt[col_option] = w_col
        act_o = np.zeros(K, dtype=bool)
        act_o[col_option[act_col]] = True
        C = int(free.sum())
        V = np.zeros(C + 1)
        steps: list[tuple[int, np.ndarray, np.ndarray]] = []
        for i in np.flatnonzero((np.bincount(agent[act_o], minlength=n) > 0) | must):
            opts = np.flatnonzero(act_o & (agent == i))
            if opts.size == 0:
                return None  # an agent that must win has nothing to win
            cand = np.full((opts.size + 1, C + 1), -np.inf)
            if not must[i]:
                cand[0] = V
            for r, o in enumerate(opts, start=1):  # each bid of this agent
                k = int(k_opt[o])
                if k <= C:
                    cand[r, k:] = V[:C + 1 - k] + w_opt[o]
            arg = cand.argmax(axis=0)
            V = cand[arg, np.arange(C + 1)]
            steps.append((int(i), opts, arg))
        if not np.isfinite(V[C]):
            return None
        c = C
        win_a: list[int] = []
        win_o: list[int] = []
        for i, opts, arg in reversed(steps):
            a = int(arg[c])
            if a > 0:
                win_a.append(i)
                win_o.append(int(opts[a - 1]))
                c -= int(k_opt[opts[a - 1]])
        return float(V[C]), place(np.array(win_a, dtype=np.int64), np.array(win_o,
                                                                            dtype=np.int64))

    def place(chosen: np.ndarray, opt: np.ndarray) -> np.ndarray | None:
        """Columns of the form for bids ``opt`` of agents ``chosen``; ``None`` if they do not fit.

        Two greedy orders are tried: rack-level bids first (to the home rack, else the rack
        with most room), then machine-level bids largest first into the fullest machine that
        fits them and whose rack still has room; or machine-level bids first. Level-2 bids
        need only total room. Pattern counts are read off the machines' contents.
        """
        if float(k_opt[opt].sum()) > float(free.sum()) + 1e-9:
            return None
        for racks_first in (True, False):
            xr = _place_greedy(chosen, opt, racks_first)
            if xr is not None:
                return xr
        return None

    def _place_greedy(chosen: np.ndarray, opt: np.ndarray, racks_first: bool
                      ) -> np.ndarray | None:
        cap = m_free.copy()
        rack_cap = rack_free.copy()
        xr = np.zeros(ncol)
        contents: dict[int, list[int]] = {}
        lv = l_opt[opt]
        lv0 = np.flatnonzero(lv == 0)[np.argsort(-k_opt[opt[lv == 0]], kind="stable")]
        lv1 = np.flatnonzero(lv == 1)[np.argsort(-k_opt[opt[lv == 1]], kind="stable")]

        def racks() -> bool:
            for idx in lv1:
                o, i = int(opt[idx]), int(chosen[idx])
                k = int(k_opt[o])
                cands = np.array([home_r[i]]) if home_r[i] >= 0 else np.arange(R)
                fits = cands[rack_cap[cands] >= k]
                if fits.size == 0:
                    return False
                r = int(fits[np.argmax(rack_cap[fits])])
                rack_cap[r] -= k
                q = col_of1.get((o, r))
                if q is None:
                    return False
                xr[q] = 1.0
            return True

        def machines_() -> bool:
            for idx in lv0:
                o, i = int(opt[idx]), int(chosen[idx])
                k = int(k_opt[o])
                cands = np.array([home_m[i]]) if home_m[i] >= 0 else machines
                fits = cands[(cap[cands] >= k) & (rack_cap[topology.rack[cands]] >= k)]
                if fits.size == 0:
                    return False
                h = int(fits[np.lexsort((rack_cap[topology.rack[fits]], cap[fits]))[0]])
                cap[h] -= k
                rack_cap[topology.rack[h]] -= k
                contents.setdefault(h, []).append(k)
                q = col_of0.get((o, int(type_of[np.searchsorted(machines, h)])))
                if q is None:
                    return False
                xr[q] = 1.0
            return True

        steps = (racks, machines_) if racks_first else (machines_, racks)
        if not all(step() for step in steps):
            return None
        for o in opt[lv == 2]:
            xr[col_of2[int(o)]] = 1.0
        for h, ks in contents.items():  # pattern of every machine of a multi-machine type
            t = int(type_of[np.searchsorted(machines, h)])
            if t not in pat_index:
                continue
            sizes = sizes_of[t]
            cnt = np.zeros(sizes.size, dtype=int)
            for k in ks:
                cnt[int(np.searchsorted(sizes, k))] += 1
            left = int(t_cap[t]) - int(np.dot(cnt, sizes))
            for si in range(sizes.size - 1, -1, -1):  # extend to a maximal pattern
                add_n = left // int(sizes[si])
                cnt[si] += add_n
                left -= add_n * int(sizes[si])
            q = pat_index[t].get(tuple(cnt))
            if q is None:
                return None
            xr[pat_offset[t] + q] += 1.0
        return xr

    form = _Form(agent=col_agent, logv=np.log(v_opt[col_option]) - e * _LOG2 if nc
                 else np.zeros(0),
                 log_empty=log_empty, A=A, row_lower=np.concatenate(lower),
                 row_upper=np.concatenate(upper), col_upper=np.r_[np.ones(nc), pat_upper],
                 integrality=np.ones(ncol, dtype=bool), num_agents=n, option=col_option,
                 rounder=rounder, relaxation=relaxation)

    def decode(x: np.ndarray) -> np.ndarray:
        """Concrete GPUs for a solution: level 0 by pattern slots, then level 1, then 2."""
        won = np.flatnonzero(x[:nc] > 0.5)
        bundles = np.zeros((n, topology.num_gpus), dtype=bool)
        avail = offer.copy()

        def take(i: int, k: int, among: np.ndarray) -> None:
            """Give agent i k available GPUs of ``among``, densest machines first."""
            cand = among[avail[among]]
            mach = topology.machine[cand]
            dens = np.bincount(mach, minlength=H)[mach]
            pick = cand[np.lexsort((cand, -dens))][:k]
            bundles[i, pick] = True
            avail[pick] = False

        gpus_of = [np.flatnonzero(offer & (topology.machine == h)) for h in range(H)]
        lv0 = won[won < n0]
        col = nc
        pat_x = {}
        for t, pats in zip(pat_type, pat_rows):
            pat_x[t] = (pats, np.rint(x[col:col + pats.shape[0]]).astype(int))
            col += pats.shape[0]
        for t in np.unique(c0_t[lv0]) if lv0.size else []:  # one pass per machine type
            items = lv0[c0_t[lv0] == t]
            members = machines[type_of == t]
            if t in pat_x:
                pats, cnt = pat_x[t]
                sizes = np.unique(k_opt[c0_o[c0_t == t]])
                bins = np.repeat(np.arange(pats.shape[0]), cnt)  # one pattern per machine
                slots = [(members[b], int(sizes[s])) for b, p in enumerate(bins)
                         for s in range(sizes.size) for _ in range(int(pats[p, s]))]
                for c in items[np.argsort(-col_k[items], kind="stable")]:
                    k = int(col_k[c])
                    j = next(idx for idx, (_, sz) in enumerate(slots) if sz == k)
                    h, _ = slots.pop(j)
                    take(int(col_agent[c]), k, gpus_of[h])
            else:
                for c in items:
                    take(int(col_agent[c]), int(col_k[c]), gpus_of[int(members[0])])
        for c in won[(won >= n0) & (won < n0 + n1)]:
            r = int(c1_r[c - n0])
            take(int(col_agent[c]), int(col_k[c]), np.flatnonzero(offer & (topology.gpu_rack
                                                                            == r)))
        for c in won[won >= n0 + n1]:
            take(int(col_agent[c]), int(col_k[c]), np.flatnonzero(offer))
        return bundles

    return form, decode, col_option


# ============================================================================================
# multi-round auctions (Themis §3.3.2, Pseudocode 1 lines 13-23)
# ============================================================================================
@dataclass(frozen=True)
class AuctionRound(FrozenArrays):
    """What one round of :class:`MultiRoundAuction` did (every array read-only).

    Attributes
    ----------
    time : float
        When the round ran.
    offered : ndarray of int
        The GPUs auctioned (freed by expired leases or finished apps).
    participants : ndarray of int
        Apps that bid: the ``ceil((1 - f) * active)`` apps farthest from fairness.
    rho_before : ndarray, shape (num_apps,)
        Every app's current ``rho`` when the round began (``nan`` for inactive apps).
    fraction : ndarray, shape (len(participants),)
        ``c_i`` of each participant.
    won : ndarray of int, shape (len(participants),)
        GPUs each participant kept from its PF bundle (``c_i * |bundle|``, rounded).
    leftover_to : ndarray of int
        App that received each leftover GPU (``-1``: left idle, nobody could use it).
    leftover_gpus : ndarray of int
        The leftover GPUs, in the order of ``leftover_to``.
    auction : GPUAuctionResult or None
        The partial-allocation auction of the round (``None`` if nothing was auctioned).
    seconds : float
        Wall-clock seconds of the round.
    """

    time: float
    offered: np.ndarray
    participants: np.ndarray
    rho_before: np.ndarray
    fraction: np.ndarray
    won: np.ndarray
    leftover_to: np.ndarray
    leftover_gpus: np.ndarray
    auction: GPUAuctionResult | None
    seconds: float


@dataclass(eq=False)
class MultiRoundAuction:
    """Themis's round-by-round finish-time fair policy (§3.3.2, Pseudocode 1).

    Each round (a *resource available event*: leases expiring, apps finishing or arriving):

    1. GPUs whose lease expired or whose app finished are offered;
    2. every active app reports its current ``rho`` (with the GPUs it ran on until now);
    3. the ``max(1, ceil((1 - f) * N_active))`` apps with the largest ``rho`` that can still
       use GPUs are filtered in (ties broken by a seeded random order). The paper's
       pseudocode says "top 1 - f fraction" and its text "filter the 1 - f fraction ... with
       the greatest rho"; both are read as *the apps that bid are that fraction*, which is
       what §6.4 describes (``f = 1``: a single app bids);
    4. the participants bid by placement class (:func:`bid_table`, valuations refreshed) and a
       partial-allocation auction (:func:`gpu_auction`) runs; participant ``i`` keeps
       ``c_i * |bundle_i|`` GPUs of its PF bundle, rounded to a whole number by a seeded
       random draw (``floor`` plus one with probability equal to the fractional part), taking
       the GPUs on the machines where the bundle is densest;
    5. the leftover GPUs (hidden payments and GPUs no participant won) go at random (seeded)
       to apps that did not bid and can use more GPUs, one GPU per unit of unmet demand; only
       if none can, to participants with unmet demand;
    6. every GPU given out in the round is leased until ``now + lease``.

    Parameters
    ----------
    topology : Topology
    apps : sequence of app models
        :class:`~fairalloc.valuations.SingleJobApp`, :class:`SuccessiveHalvingApp` or
        :class:`CurveStoppingApp`; the auction advances them as they run.
    fairness_knob : float
        ``f`` in ``[0, 1)``; default 0.8 (the paper's choice, §6.4).
    lease : float
        Lease duration in seconds; default 600 (10 minutes, §6.4).
    seed : int
        Seed of every random choice (ties, rounding, leftovers): runs are reproducible.
    time_limit : float, optional
        Seconds per MILP of the auction.
    workers : int or None
        Processes for the leave-one-out MILPs.
    backend : str or Backend
        MILP backend of the auctions (default ``"highs"``).

    Examples
    --------
    >>> from fairalloc.valuations import SingleJobApp, Topology
    >>> apps = [SingleJobApp(iter_total=1000, iter_time_serial=1.0, job_demand_max=2)
    ...         for _ in range(3)]
    >>> auction = MultiRoundAuction(Topology.uniform(2, 2), apps, fairness_knob=0.5)
    >>> r = auction.step()
    >>> r.participants.size, int((auction.owner >= 0).sum())
    (2, 4)
    """

    topology: Topology
    apps: Sequence[Any]
    fairness_knob: float = 0.8
    lease: float = 600.0
    seed: int = 0
    time_limit: float | None = None
    workers: int | None = 1
    now: float = 0.0
    backend: Any = "highs"
    owner: np.ndarray = field(init=False)
    lease_end: np.ndarray = field(init=False)
    history: list[AuctionRound] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.topology, Topology):
            raise InputError(f"topology must be a Topology, got {type(self.topology).__name__}",
                             argument="topology")
        self.apps = _check_apps(self.apps)
        if len({id(a) for a in self.apps}) != len(self.apps):
            raise InputError("apps lists the same app object twice (each app model holds "
                             "its own progress)", argument="apps")
        f = as_finite_float(self.fairness_knob, "fairness_knob", lo=0.0, hi=1.0)
        if f >= 1.0:
            raise InputError(f"fairness_knob must be in [0, 1), got {self.fairness_knob!r}",
                             argument="fairness_knob")
        self.fairness_knob = f
        self.lease = as_positive_float(self.lease, "lease")
        self.seed = as_positive_int(self.seed, "seed", allow_zero=True)
        self.time_limit = as_time_limit(self.time_limit)
        self.workers = _workers(self.workers)
        self.now = as_positive_float(self.now, "now", allow_zero=True)
        self._solver = _milp_solver(self.backend)
        g = self.topology.num_gpus
        self.owner = np.full(g, -1, dtype=np.int64)
        self.lease_end = np.zeros(g)
        self._rng = np.random.default_rng(self.seed)
        n = len(self.apps)
        self._active_time = np.zeros(n)  # integral of N_active over each app's lifetime
        self._lifetime = np.zeros(n)
        self.history = []

    # ---- state --------------------------------------------------------------------------
    def active(self) -> np.ndarray:
        """Apps that have arrived and not finished, shape (num_apps,) bool."""
        return readonly(np.array([a.arrival <= self.now and not a.finished for a in self.apps],
                                 dtype=bool))

    def held(self) -> np.ndarray:
        """GPUs each app holds now, shape (num_apps,)."""
        return readonly(np.bincount(self.owner[self.owner >= 0], minlength=len(self.apps)))

    def contention(self) -> np.ndarray:
        """``N_avg`` of each app: time-averaged number of active apps since it arrived."""
        act = self.active()
        cur = float(act.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            avg = np.where(self._lifetime > 0, self._active_time / self._lifetime, cur)
        return readonly(np.maximum(avg, 1.0))

    def _slowdowns(self) -> np.ndarray:
        """Current placement slowdown of every app's held GPUs."""
        n = len(self.apps)
        masks = np.zeros((n, self.topology.num_gpus), dtype=bool)
        has = self.owner >= 0
        masks[self.owner[has], np.flatnonzero(has)] = True
        levels = self.topology.level(masks)
        return np.array([a.slowdown_levels[lv] for a, lv in zip(self.apps, levels)])

    def current_rho(self) -> np.ndarray:
        """Every active app's ``rho`` with the GPUs it holds now (``nan`` if inactive)."""
        act = self.active()
        held = self.held()
        S = self._slowdowns()
        N = self.contention()
        g = self.topology.num_gpus
        out = np.full(len(self.apps), np.nan)
        for i in np.flatnonzero(act).tolist():  # one app-model call per app (its own state)
            out[i] = float(np.asarray(self.apps[i].rho(np.array([held[i]]), np.array([S[i]]),
                                                       now=self.now, cluster_gpus=g,
                                                       contention=N[i])).ravel()[0])
        return readonly(out)

    # ---- one round ----------------------------------------------------------------------
    def step(self) -> AuctionRound:
        """Run one auction round at :attr:`now` (Pseudocode 1, lines 15-21)."""
        t0 = time.perf_counter()
        topo = self.topology
        g = topo.num_gpus
        act = self.active()
        # rho_current: each app's fairness with the allocation it ran with until now
        rho_now = self.current_rho()
        # release expired leases and GPUs of finished apps
        done = np.array([a.finished for a in self.apps])
        release = (self.owner >= 0) & ((self.lease_end <= self.now + 1e-9) |
                                       done[np.maximum(self.owner, 0)])
        self.owner[release] = -1
        offer = self.owner < 0
        held = self.held()
        demand = np.array([a.demand_max for a in self.apps])
        spare = np.where(act, np.maximum(demand - held, 0), 0)
        n_active = int(act.sum())
        n_part = max(1, math.ceil((1.0 - self.fairness_knob) * n_active)) if n_active else 0
        eligible = np.flatnonzero(spare > 0)
        tie = self._rng.permutation(len(self.apps))
        order = eligible[np.lexsort((tie[eligible], -np.nan_to_num(rho_now[eligible],
                                                                    nan=-np.inf,
                                                                    posinf=np.inf)))]
        participants = np.sort(order[:n_part])
        offered = np.flatnonzero(offer)
        fractions = np.zeros(participants.size)
        won = np.zeros(participants.size, dtype=np.int64)
        result = None
        given = np.zeros(g, dtype=bool)
        if participants.size and offered.size:
            N = self.contention()
            tables = []
            for i in participants:  # one bid table per bidding app (its own valuation)
                app = self.apps[i]
                hold = self.owner == i

                def rho_i(k: np.ndarray, s: np.ndarray, app: Any = app, Ni: float = N[i]
                          ) -> np.ndarray:
                    return app.rho(k, s, now=self.now, cluster_gpus=g, contention=Ni)

                tables.append(bid_table(rho_i, topo, offer, held=hold, max_gpus=int(spare[i]),
                                        slowdown=app.slowdown_levels))
            result = gpu_auction(tables, topo, offer, time_limit=self.time_limit,
                                 workers=self.workers, backend=self._solver)
            fractions = np.array(result.fraction)
            sizes = result.pf_bundles.sum(axis=1)
            exact = fractions * sizes
            won = np.floor(exact + 1e-9).astype(np.int64)
            won += (self._rng.random(participants.size) < (exact - won)).astype(np.int64)
            won = np.minimum(won, sizes)
            for r_idx, app_idx in enumerate(participants):  # keep GPUs where bundle is densest
                if won[r_idx] == 0:
                    continue
                gpus = np.flatnonzero(result.pf_bundles[r_idx])
                mach = topo.machine[gpus]
                dens = np.bincount(mach, minlength=topo.num_machines)[mach]
                keep = gpus[np.lexsort((mach, -dens))][:won[r_idx]]
                self.owner[keep] = app_idx
                given[keep] = True
        # leftover GPUs: at random to the apps that did not bid (then to bidders) with demand
        left = np.flatnonzero((self.owner < 0) & offer)
        held = self.held()
        spare = np.where(act, np.maximum(demand - held, 0), 0)
        bidders = np.zeros(len(self.apps), dtype=bool)
        bidders[participants] = True
        to = np.full(left.size, -1, dtype=np.int64)
        perm_gpus = self._rng.permutation(left)
        filled = 0
        for group in (~bidders, bidders):
            slots = np.repeat(np.flatnonzero(group & (spare > 0)), spare[group & (spare > 0)])
            if filled >= perm_gpus.size or slots.size == 0:
                continue
            slots = self._rng.permutation(slots)[:perm_gpus.size - filled]
            to[filled:filled + slots.size] = slots
            filled += slots.size
        assigned = to >= 0
        self.owner[perm_gpus[assigned]] = to[assigned]
        given[perm_gpus[assigned]] = True
        self.lease_end[given] = self.now + self.lease
        rnd = AuctionRound(time=self.now, offered=offered, participants=participants,
                           rho_before=rho_now, fraction=fractions, won=won, leftover_to=to,
                           leftover_gpus=perm_gpus, auction=result,
                           seconds=time.perf_counter() - t0)
        self.history.append(rnd)
        return rnd

    # ---- time ---------------------------------------------------------------------------
    def advance(self, dt: float) -> None:
        """Let ``dt`` seconds pass: every app runs on the GPUs it holds."""
        dt = as_positive_float(dt, "dt", allow_zero=True)
        act = self.active()
        held = self.held()
        S = self._slowdowns()
        for i in np.flatnonzero(act).tolist():  # each app model advances its own state
            self.apps[i].advance(int(held[i]), float(S[i]), dt)
        self._active_time[act] += dt * act.sum()
        self._lifetime[act] += dt
        self.now += dt

    def next_event(self) -> float:
        """Time of the next resource-available event (lease expiry, app finish or arrival)."""
        held = self.held()
        S = self._slowdowns()
        times = [math.inf]
        busy = self.owner >= 0
        if busy.any():
            times.append(float(self.lease_end[busy].min()))
        act = self.active()
        for i in np.flatnonzero(act & (held > 0)).tolist():
            times.append(self.now + self.apps[i].time_to_finish(int(held[i]), float(S[i])))
        arrivals = [a.arrival for a in self.apps if a.arrival > self.now]
        times.extend(arrivals)
        return max(min(times), self.now)

    def run(self, until: float, *, max_rounds: int = 10_000) -> list[AuctionRound]:
        """Alternate rounds and progress until time ``until`` or every app finished."""
        try:
            ok = (isinstance(until, float | int | np.floating | np.integer)
                  and not isinstance(until, bool) and not math.isnan(float(until))
                  and float(until) >= 0)
        except OverflowError:  # an int beyond double precision: as good as inf
            ok, until = until > 0, math.inf
        if not ok:
            raise InputError(f"until must be a non-negative number (inf: until every app "
                             f"finished or max_rounds), got {until!r:.40}", argument="until")
        until = float(until)
        rounds: list[AuctionRound] = []
        for _ in range(as_positive_int(max_rounds, "max_rounds")):
            if self.now >= until or all(a.finished for a in self.apps):
                break
            rounds.append(self.step())
            nxt = min(self.next_event(), until)
            if nxt <= self.now:  # nothing will happen: jump to the next arrival or stop
                nxt = min([a.arrival for a in self.apps if a.arrival > self.now] + [until])
            if not math.isfinite(nxt):  # nothing will ever happen again
                break
            self.advance(nxt - self.now)
        return rounds
