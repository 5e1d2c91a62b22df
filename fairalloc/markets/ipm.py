"""The batched primal-dual interior-point method for many small Eisenberg-Gale markets, and the
exact polish of their support forests.

Markets are in edge form (`fairalloc.markets.engine`) with one good per edge (linear
utilities). `ipm_batch` solves ``T`` independent markets stacked block-diagonally in one
run (Mehrotra predictor-corrector on the dual, an ``m x m`` Schur complement per market), which
is how partial allocation solves its leave-one-out markets 32 at a time;
`ipm_solve` is the one-market call. Neither trusts its own output: every point is
certified by the caller's duality gap, and a market whose linear algebra breaks down is
reported unconverged so the caller takes the exact conic path (``stats.fallbacks`` says so).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["ipm_batch", "ipm_edge_form", "ipm_fits", "ipm_solve", "polish_forest_edges"]

IPM_MU_TOL = 1e-13  # ACCURACY: total complementarity (relative to s@p) of a converged market
IPM_RES_TOL = 1e-9  # ACCURACY: scaled primal/dual residual of a converged market
IPM_MAX_ITER = 60  # PERFORMANCE: interior-point iterations before giving up
IPM_KEEP_RES = 1e-6  # ACCURACY: residual at which a point is kept if nothing better comes
IPM_START_PRICE = 1e-12  # smallest starting price (the start must be interior)
IPM_START_BETA = 0.9  # the start's beta is this fraction of the cheapest price per utility
IPM_STEP_BACK = 0.99  # PERFORMANCE: fraction of the step to the boundary taken
IPM_MAX_PAIRS_PER_EDGE = 8.0  # PERFORMANCE: Schur entries per edge (sum_b deg_b^2 / E) above
# which a whole-market conic solve beats `ipm_solve` (measured at 4,096 x 100: 1-8 goods per
# buyer 22-88 ms against 120-200 ms, 12 goods 195 against 211 ms, 20 goods 557 against 187 ms)
FOREST_TIGHT = 1e-7  # relative bang-per-buck gap within which a support edge is tied
FOREST_SPEND = 1e-10  # spending (per unit budget) above which an edge is on the support
FOREST_NEG_FLOW = 1e-10  # ACCURACY: most negative flow (per unit budget) still a flow


def ipm_solve(owner: np.ndarray, good: np.ndarray, w: np.ndarray, B: np.ndarray, s: np.ndarray,
              p0: np.ndarray, *, max_iter: int = IPM_MAX_ITER
              ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """One edge-form EG program by `ipm_batch`: ``(x, p, iterations)``, or ``None`` if it did
    not converge within ``max_iter`` iterations (or its linear algebra broke down: the caller
    then takes the exact conic path)."""
    try:
        x, p, ok, iters = ipm_batch(owner, good, w, B, s, p0,
                                    np.zeros(owner.size, dtype=np.int64), 1, max_iter=max_iter)
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return None
    if not (ok[0] and np.all(np.isfinite(x)) and np.all(np.isfinite(p))):
        return None
    return x, p, iters


def ipm_fits(owner: np.ndarray, n: int) -> bool:
    """Whether `ipm_solve` is the faster exact solve of a market with these edge owners: its
    Schur complement gathers ``sum_b deg_b^2`` buyer-pair entries per iteration, which is cheap
    while buyers have few edges (sparse utilities, restricted markets)."""
    deg = np.bincount(owner, minlength=n).astype(float)
    return bool(owner.size) and float(deg @ deg) <= IPM_MAX_PAIRS_PER_EDGE * owner.size


def ipm_edge_form(owner: np.ndarray, resource: np.ndarray, use: np.ndarray, w: np.ndarray,
                  B: np.ndarray, s: np.ndarray, p0: np.ndarray, *, max_iter: int = IPM_MAX_ITER
                  ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """`ipm_solve` on a linear market's edge form: edge ``e`` of buyer ``owner[e]`` run at level
    ``z_e`` uses ``use[e] z_e`` of resource ``resource[e]`` and yields ``w[e] z_e`` utility.

    Resources no edge uses are priced 0 and left out of the interior point (its Schur
    complement would be singular). Returns ``(z, p, iterations)`` in those units, or ``None``
    (see `ipm_solve`); the caller certifies the point.

    Examples
    --------
    >>> import numpy as np
    >>> z, p, _ = ipm_edge_form(np.array([0, 1]), np.array([0, 0]), np.ones(2), np.ones(2),
    ...                         np.array([1.0, 3.0]), np.ones(2), np.ones(2))
    >>> np.round(z, 6).tolist(), np.round(p, 6).tolist()
    ([0.25, 0.75], [4.0, 0.0])
    """
    used = np.bincount(resource, minlength=s.size) > 0
    local = np.cumsum(used) - 1
    out = ipm_solve(owner, local[resource], w / use, B, s[used],
                    np.asarray(p0, dtype=float)[used], max_iter=max_iter)
    if out is None:
        return None
    x, q, iters = out
    p = np.zeros(s.size)
    p[used] = q
    return x / use, p, iters


def ipm_batch(owner: np.ndarray, good: np.ndarray, w: np.ndarray, B: np.ndarray,
              s: np.ndarray, p0: np.ndarray, eblock: np.ndarray, T: int, *,
              mu_tol: float = IPM_MU_TOL, res_tol: float = IPM_RES_TOL,
              max_iter: int = IPM_MAX_ITER
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Primal-dual interior point for ``T`` independent edge-form EG programs at once.

    Each program is ``min s@p - sum_b B_b log beta_b`` s.t. ``p_j - w_e beta_b >= 0`` for every
    edge ``e = (b, j)``: ``beta_b`` is buyer ``b``'s price of one unit of utility and the
    multiplier ``x_e`` of edge ``e`` is the amount of good ``j`` it buys (so ``sum_e x_e = s_j``
    is market clearing). Eliminating slacks, multipliers and ``beta`` (one diagonal entry per
    buyer) leaves an ``m x m`` Schur complement per program and Newton step (Mehrotra
    predictor-corrector). Programs are stacked: goods ``t*m .. t*m+m-1`` belong to program
    ``t``, ``eblock[e]`` is the program of edge ``e``, edges and buyers are sorted by program,
    and every good has an edge. Step lengths, centring and convergence are per program.
    Returns ``(x, p, converged, iterations)``; the caller certifies every point, so an
    inaccurate one is never trusted.
    """
    N, G = B.size, s.size
    m = G // T
    bblock = np.zeros(N, dtype=np.int64)
    bblock[owner] = eblock
    gblock = np.repeat(np.arange(T), m)
    e_cnt = np.bincount(eblock, minlength=T)
    estart = np.r_[0, np.cumsum(e_cnt)[:-1]]
    bstart = np.r_[0, np.cumsum(np.bincount(bblock, minlength=T))[:-1]]
    p = np.maximum(np.asarray(p0, dtype=float), IPM_START_PRICE)
    beta = np.full(N, np.inf)
    np.minimum.at(beta, owner, p[good] / w)
    beta *= IPM_START_BETA
    sig = p[good] - w * beta[owner]
    deg = np.bincount(owner, minlength=N)
    x = (B[owner] / deg[owner]) / p[good]
    scale = np.maximum(1.0, np.bincount(gblock, s * p, T))
    s_top = 1.0 + np.maximum.reduceat(s, np.arange(0, G, m))
    b_top = 1.0 + np.maximum.reduceat(B, bstart)
    out_x, out_p = x.copy(), p.copy()
    done = np.zeros(T, dtype=bool)
    good_enough = np.zeros(T, dtype=bool)  # residual <= IPM_KEEP_RES: kept if no better
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

    it = 0
    for _ in range(max_iter):
        it += 1
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
        keep = ~done & finite & (conv | (res <= IPM_KEEP_RES))
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
        a = np.where(done, 0.0, IPM_STEP_BACK * steps(ds, db, dx))
        p = p + a[gblock] * dp
        beta = beta + a[bblock] * db
        sig = sig + a[eblock] * ds
        x = x + a[eblock] * dx
    return out_x, out_p, good_enough, it


def polish_forest_edges(owner: np.ndarray, good: np.ndarray, w: np.ndarray, B: np.ndarray,
                        s: np.ndarray, x: np.ndarray, p: np.ndarray, tight: float = FOREST_TIGHT
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
    on = (x * p[good] > FOREST_SPEND * B[owner]) & (ratio >= best[owner] * (1 - tight))
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
    bad = ~np.isfinite(flows) | (flows < -FOREST_NEG_FLOW * B[eo])
    bad_comp = np.zeros(ncomp, dtype=bool)
    bad_comp[label[eo[bad]]] = True
    bad_comp |= ~np.isfinite(shift)
    sel = np.flatnonzero(on)[keep_e]
    with np.errstate(divide="ignore", invalid="ignore"):
        x_new[sel] = np.maximum(flows, 0.0) / p_new[eg]
    ok_good[gs] = ~bad_comp[label[N + gs]]
    return x_new, p_new, ok_good
