"""Divisible partial allocation (Themis §3.3.1; Cole, Gkatzelis and Goel): the PF market, the
``n`` leave-one-out markets and the fractions ``c_i``, with the dense ``(n, m)``
Eisenberg-Gale pieces they are solved with (dual, primal recovery, repair, conic solve,
batched interior-point method, support and forest polish, feasibility residual).

One cohesive algorithm (the whole partial-allocation stack), kept in one file on purpose; see
``formulations/partial_allocation.md`` for the programs.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import as_array, as_option, as_tolerance
from ..errors import CertificateError, FairallocError, InputError, SolverError
from ..results import Certificate, Result, Status, require_pandas
from ..tolerances import FEAS_TOL, GAP_TOL
from ._pool import _clean_log, _parallel_map, _record, _solve_stats, _used, _workers

__all__ = ["PartialAllocationResult", "partial_allocation"]

_METHODS = ("warm", "cold")
_CONIC_TOL = 1e-10
_CONIC_KKT = "qdldl"
_EXACT = 1e-9  # absolute gap of the polished PF market
_BATCH = 32  # leave-one-out markets per batched interior-point solve
_LOO_TARGET = 1e-8  # absolute gap each leave-one-out solve aims for (c_i to ~1e-8 relative)
_AIM_REL = 1e-9  # gap per unit budget the leave-one-out search aims for before accepting
_LOG2 = math.log(2.0)


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
    from ..backends import ConicProgram, get_backend

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
        from ..backends import LinearProgram, get_backend

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

