"""Warm-started Eisenberg-Gale solves of linear markets on the dense ``(n, m)`` form, and the
leave-one-out markets of one market solved in batches.

The partial allocation mechanism (`fairalloc.auctions.partial`) solves its PF market and
its ``n`` leave-one-out markets with these: `solve_warm` (candidate edges near each
buyer's best bang-per-buck at warm prices, a reduced market solved by the interior-point
method of `fairalloc.markets.ipm` -- or exactly by the conic engine,
`fairalloc.markets.engine.solve_conic`, when it does not converge -- polished on its
support and certified on the whole market) and `loo_batch` (32 leave-one-out markets as
one block-diagonal interior-point run). Every point is certified by the Eisenberg-Gale duality
gap ``D(p) - P(x)`` (`eg_dual`, `eg_primal`) on the whole market.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .engine import EdgeForm, EngineLog, edge_starts, solve_conic, support_prices
from .ipm import ipm_batch, ipm_solve, polish_forest_edges
from .strategies import SubMarket, solve_submarket

__all__ = ["EGPoint", "ReducedMarket", "bang_per_buck", "eg_dual", "eg_primal",
           "feas_residual", "loo_batch", "reduced_solve", "repair_dense", "solve_warm",
           "support_polish"]

REDUCED_CONIC_TOL = 1e-10  # ACCURACY: tolerance of the exact conic solve of a reduced market
REDUCED_CONIC_KKT = "qdldl"  # PERFORMANCE: Clarabel's KKT solver for the reduced markets
SUPPORT_TIGHT = 1e-7  # relative bang-per-buck gap within which a support edge is tied
WARM_ETA = 1e-2  # PERFORMANCE: default candidate margin of the warm search
WARM_ROUNDS = 6  # PERFORMANCE: candidate rounds before the whole market is solved
ETA_WIDEN, ETA_MAX = 4.0, 0.5  # PERFORMANCE: margin growth once candidates hold the support
MISSING_EDGE_MARGIN = 1e-12  # an edge better than the candidates by this is missing
SUPPORT_SPEND = 1e-10  # spending (per unit budget) above which an edge is on the support
SUPPORT_POTENTIAL_TOL = 1e-9  # ACCURACY: residual of the support's log-price system
SUPPORT_NEG_FLOW = 1e-10  # ACCURACY: most negative flow (per unit budget) still a flow


def eg_dual(U: np.ndarray, B: np.ndarray, s: np.ndarray, p: np.ndarray) -> float:
    """``D(p) = s@p + sum_k B_k (log B_k - 1 - log min_{j: U_kj > 0} p_j / U_kj)`` (>= OPT)."""
    p = np.maximum(p, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        beta = np.where(U > 0, p[None, :] / np.where(U > 0, U, 1.0), np.inf).min(axis=1)
    if np.any(beta <= 0) or not np.all(np.isfinite(beta)):
        return float("inf")
    return float(s @ p + B @ (np.log(B) - 1.0 - np.log(beta)))


def eg_primal(U: np.ndarray, B: np.ndarray, x: np.ndarray) -> float:
    """``P(x) = sum_k B_k log sum_j U_kj x_kj`` (<= OPT for feasible ``x``)."""
    with np.errstate(divide="ignore"):
        return float(B @ np.log(np.einsum("kj,kj->k", U, x)))


def repair_dense(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Clip at 0 and scale down the buyers of every over-used good: exactly feasible."""
    x = np.maximum(x, 0.0)
    load = x.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(load > s, s / load, 1.0)
    return x * factor[None, :]


def bang_per_buck(U: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``U_kj / p_j``; a valued good with zero price has infinite bang-per-buck."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(U > 0, U / p[None, :], 0.0)
    return np.where((U > 0) & (p[None, :] <= 0), np.inf, ratio)


@dataclass(frozen=True)
class EGPoint:
    """A certified point of a linear Eisenberg-Gale program: ``dual >= OPT >= primal``."""

    allocation: np.ndarray
    prices: np.ndarray
    primal: float
    dual: float
    solves: int = 0

    @property
    def gap(self) -> float:
        return max(self.dual - self.primal, 0.0)


def _reduced_form(owner: np.ndarray, good: np.ndarray, weight: np.ndarray, B: np.ndarray,
                  s: np.ndarray) -> EdgeForm:
    """The edge form of a reduced market (one good per edge)."""
    E, m = owner.size, s.size
    C = sp.csc_matrix((np.ones(E), (good, np.arange(E))), shape=(m, E))
    return EdgeForm(owner, weight, C, B, s, edge_starts(owner, B.size))


def _conic(form: EdgeForm, log: EngineLog) -> tuple[np.ndarray, np.ndarray, int]:
    """A reduced market solved exactly by the engine's conic solve."""
    settings = {"direct_solve_method": REDUCED_CONIC_KKT} if log.conic.name == "clarabel" else None
    return solve_conic(form, tol=REDUCED_CONIC_TOL, log=log, settings=settings)


def reduced_solve(U: np.ndarray, B: np.ndarray, s: np.ndarray, cand: np.ndarray,
                  p_hint: np.ndarray, log: EngineLog) -> tuple[np.ndarray, np.ndarray]:
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
    form = _reduced_form(owner, good, weight, budget, s)
    # its plan (`solve_submarket`): the interior point, then the conic solve; the steps stay
    # out of the path (the caller's search is one step), a hand-over is recorded
    sub = SubMarket(form, lambda: ipm_solve(owner, good, weight, budget, s, ph),
                    lambda: _conic(form, log), [])
    z, p, _, _ = solve_submarket(sub, log, ipm_step="ipm", conic_step="conic", steps=False)
    z, p = np.maximum(z, 0.0), np.maximum(p, 0.0)
    x = np.zeros((n, m))
    X = np.zeros(m)
    X[agg] = z[:agg.size]
    x[single, js] = B[single] / W[js] * X[js]
    x[multi[mk], mj] = z[agg.size:]
    return x, p


def support_polish(U: np.ndarray, B: np.ndarray, s: np.ndarray, x: np.ndarray, p: np.ndarray,
                   log: EngineLog, tight: float = SUPPORT_TIGHT
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact equilibrium on the support of ``(x, p)``, or ``None`` if it is not one.

    The support is the set of edges that carry spending and are within ``tight`` (relative) of
    their buyer's best bang-per-buck at ``p``. On it, ``log p_j - log beta_k = log U_kj``
    (a sparse linear system; one free constant per connected component, fixed by
    ``sum_j p_j s_j = sum_k B_k``), and spending is a flow with buyer sums ``B_k`` and good
    sums ``p_j s_j`` (unique on a forest; an LP otherwise).
    """
    from scipy.sparse.linalg import spsolve

    n, m = U.shape
    ratio = bang_per_buck(U, p)
    best = ratio.max(axis=1)
    spend = x * p[None, :]
    on = (U > 0) & (spend > SUPPORT_SPEND * B[:, None]) & (ratio >= best[:, None] * (1 - tight))
    k_idx, j_idx = np.nonzero(on)
    if k_idx.size == 0 or not np.all(np.bincount(k_idx, minlength=n) > 0):
        return None
    E, nodes = k_idx.size, n + m
    # the support as an edge form: the engine solves its log-price system
    C = sp.csc_matrix((np.ones(E), (j_idx, np.arange(E))), shape=(m, E))
    support = EdgeForm(k_idx, U[k_idx, j_idx], C, B, s, edge_starts(k_idx, n))
    try:
        out = support_prices(support, np.arange(E), forest=None)
    except (np.linalg.LinAlgError, ValueError, RuntimeError):  # singular: not a support
        return None
    if out is None or np.any(out[0][j_idx] <= 0):
        return None
    price, _, free = out
    forest = E == int(free.sum())
    if not forest:  # least squares: an equilibrium support only if the system is consistent
        rhs = np.log(U[k_idx, j_idx])
        gap = rhs - np.log(price[j_idx])  # log beta_k on every support edge of buyer k
        starts = edge_starts(k_idx, n)
        spread = np.maximum.reduceat(gap, starts) - np.minimum.reduceat(gap, starts)
        if spread.max() > 2.0 * SUPPORT_POTENTIAL_TOL * (1.0 + np.abs(rhs).max()):
            return None
    touched = np.zeros(nodes, dtype=bool)
    touched[:n] = True
    touched[n + j_idx] = True
    ar = np.arange(E)
    r = np.r_[B, s * price]
    N = sp.csr_matrix((np.ones(2 * E), (np.r_[k_idx, n + j_idx], np.r_[ar, ar])),
                      shape=(nodes, E))
    if forest:
        try:
            b = np.atleast_1d(spsolve(N[free].tocsc(), r[free]))
        except Exception:
            return None
    else:
        from ..backends import LinearProgram

        lp = LinearProgram.build(np.zeros(E), N[touched], r[touched], r[touched], 0.0, None)
        solver = log.lp_backend()
        sol = solver.solve_lp(lp)
        log.ran(solver.name, sol.raw_status)
        if not sol.usable or sol.x is None:  # the certificate below judges a usable point
            return None
        b = sol.x
    if not np.all(np.isfinite(b)) or np.any(b < -SUPPORT_NEG_FLOW * B[k_idx]):
        return None
    xn = np.zeros((n, m))
    xn[k_idx, j_idx] = np.maximum(b, 0.0) / price[j_idx]
    return xn, price


def solve_warm(U: np.ndarray, B: np.ndarray, s: np.ndarray, p_warm: np.ndarray, *,
               tol: float, accept: float, log: EngineLog, eta: float = WARM_ETA,
               max_rounds: int = WARM_ROUNDS,
               start: tuple[np.ndarray, np.ndarray] | None = None) -> EGPoint:
    """Certified solve of the linear market ``(U, B, s)`` warm-started from prices ``p_warm``.

    Candidate edges (within ``1 - eta`` of each buyer's best bang-per-buck at the current
    prices) define a reduced market that is solved exactly (`reduced_solve`), mapped
    back, polished on its support (`support_polish`) and certified on the *whole*
    market; edges that beat their buyer's candidates at the new prices join the candidates.
    ``U`` has no all-zero row and every valued good has positive supply. ``tol`` is the target
    absolute gap; once no edge is missing from the candidates, a gap up to ``accept`` ends the
    search too. Returns the best certified point found (the whole market is solved exactly
    when the reduced ones did not reach ``accept``).
    """
    best: EGPoint | None = None
    solves = 0

    def consider(x: np.ndarray, p: np.ndarray) -> EGPoint:
        """Certify ``(x, p)``; polish it on its support unless it already meets ``tol``."""
        nonlocal best
        xr = repair_dense(x, s)
        pt = EGPoint(xr, p, eg_primal(U, B, xr), eg_dual(U, B, s, p), solves)
        if best is None or pt.gap < best.gap:
            best = pt
        if pt.gap > tol:
            polished = support_polish(U, B, s, x, p, log)
            if polished is not None:
                xr = repair_dense(polished[0], s)
                pt = EGPoint(xr, polished[1], eg_primal(U, B, xr),
                              eg_dual(U, B, s, polished[1]), solves)
                if pt.gap < best.gap:
                    best = pt
        return best

    if start is not None and consider(*start).gap <= tol:
        assert best is not None
        return best
    p = np.maximum(np.asarray(p_warm, dtype=float), 0.0)
    cand = np.zeros(U.shape, dtype=bool)
    for _ in range(max_rounds):
        ratio = bang_per_buck(U, p)
        cand |= (U > 0) & (ratio >= ratio.max(axis=1)[:, None] * (1.0 - eta))
        x, p_red = reduced_solve(U, B, s, cand, p, log)
        solves += 1
        pt = consider(x, p_red)
        if pt.gap <= tol:
            return pt
        p = pt.prices
        ratio = bang_per_buck(U, p)
        cand_best = np.where(cand, ratio, 0.0).max(axis=1)
        if not (~cand & (ratio > cand_best[:, None] * (1.0 + MISSING_EDGE_MARGIN))).any():
            if pt.gap <= accept:
                return pt
            eta = min(ETA_WIDEN * eta, ETA_MAX)  # the candidates hold the support: widen the margin
    assert best is not None
    if best.gap <= accept:
        return best
    x, p_full = reduced_solve(U, B, s, U > 0, p, log)  # the whole market
    solves += 1
    return consider(x, p_full)


@dataclass(frozen=True)
class ReducedMarket:
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
    def build(cls, U: np.ndarray, s: np.ndarray, p: np.ndarray, eta: float) -> ReducedMarket:
        n, m = U.shape
        ratio = bang_per_buck(U, p)
        best = ratio.max(axis=1)
        cand = (U > 0) & (ratio >= best[:, None] * (1.0 - eta))
        deg = cand.sum(axis=1)
        single_good = np.where(deg == 1, np.argmax(cand, axis=1), -1)
        W = np.bincount(single_good[deg == 1], minlength=m).astype(float)
        multi = np.flatnonzero(deg > 1)
        mk, mj = np.nonzero(cand[multi])
        return cls(U, s, p, single_good, W, multi, mk, mj, U[multi[mk], mj] / best[multi[mk]],
                   eta)


def loo_batch(red: ReducedMarket, idx: np.ndarray, target: float
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
    x, p, ok, _ = ipm_batch(e_owner, g_idx, e_w, budget, np.tile(s, Tb), np.tile(p0, Tb),
                          e_block, Tb)
    # exact polish of every block's support forest (one sparse solve for all blocks)
    xq, pq, good_ok = polish_forest_edges(e_owner, g_idx, e_w, budget, np.tile(s, Tb), x, p)
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
            dual = eg_dual(U[others], np.ones(n - 1), s, P[r])
            if np.isfinite(prim) and dual - prim <= target:
                primal[t], gap[t], solved[t] = prim, max(dual - prim, 0.0), True
    return primal, gap, solved


def feas_residual(x: np.ndarray, s: np.ndarray) -> float:
    """Largest supply violation relative to the good's own scale (and largest negative entry)."""
    load = x.sum(axis=0)
    mag = np.maximum(np.maximum(s, np.abs(x).sum(axis=0)), np.finfo(float).tiny)
    over = (load - s) / mag
    neg = -x / mag[None, :]
    return float(max(np.max(over, initial=0.0), np.max(neg, initial=0.0)))
