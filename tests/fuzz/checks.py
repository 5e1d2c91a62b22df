"""Independent checks: numpy / scipy recomputations that do not trust fairalloc's certificate.

Each check raises :class:`~tests.fuzz.core.Wrong` when a result that claims success is not
what the maths says, and :class:`~tests.fuzz.core.Skip` when the result makes no claim (not
certified, time-limited) or the reference computation itself cannot decide.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from .core import Skip, Wrong

# Tolerances of the independent checks. Certificates promise a relative gap <= 1e-6 (GAP_TOL)
# and relative residuals <= 1e-7 (FEAS_TOL); the checks allow 100x slack on objectives and
# 1e-3 on per-agent properties (which a 1e-6 objective gap only bounds to about its square root).
FEAS = 1e-6
GAP = 1e-4
LP_REL = 1e-5
PROP = 1e-3
#: fifo_face_reference: reduced costs / duals above this hold a column at its bound / a row
#: tight (each stage's optimal face); HiGHS tolerances well below it
_FACE = 1e-9
_FACE_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _arr(v: Any) -> np.ndarray:
    return np.asarray(v, dtype=float)


def _finite(name: str, a: Any) -> np.ndarray:
    a = _arr(a)
    if not np.all(np.isfinite(a)):
        raise Wrong(f"{name} has non-finite entries")
    return a


# --------------------------------------------------------------------------------------------
# certificate sanity (every Result)
# --------------------------------------------------------------------------------------------
def claims_success(result: Any) -> bool:
    """Whether ``result`` claims a certified optimum; checks the claim is internally honest."""
    from fairalloc.results import Status

    cert = getattr(result, "certificate", None)
    status = getattr(result, "status", None)
    optimal = status is not None and status == Status.OPTIMAL
    if cert is None:
        return optimal
    ok = bool(cert.ok)
    if optimal and not ok:
        raise Wrong(f"status OPTIMAL with certificate.ok False ({cert!r})")
    if ok:
        for name in ("gap_tol", "feas_tol"):
            t = float(getattr(cert, name))
            if not (math.isfinite(t) and 0 < t <= 0.1):
                raise Wrong(f"certificate ok with {name}={t!r}")
        rg = float(cert.relative_gap)
        if not (math.isfinite(rg) and rg <= cert.gap_tol):
            raise Wrong(f"certificate ok with relative_gap={rg!r} > gap_tol={cert.gap_tol!r}")
        if not float(cert.primal_residual) <= cert.feas_tol:
            raise Wrong(f"certificate ok with primal_residual={cert.primal_residual!r}")
    return ok or optimal


def check_replay_status(result: Any) -> None:
    """A simulation replay is not an optimisation: it must not say OPTIMAL."""
    from fairalloc.results import Status

    if getattr(result, "status", None) == Status.OPTIMAL:
        raise Wrong("a simulation replay reports Status.OPTIMAL (issue #12: REPLAYED)")


# --------------------------------------------------------------------------------------------
# markets
# --------------------------------------------------------------------------------------------
def _bundle_values(U: np.ndarray, X: np.ndarray, kind: str) -> np.ndarray:
    """V[i, k] = buyer i's value of bundle k. U, X: (n, m, T)."""
    if kind == "linear":
        return np.einsum("imt,kmt->ik", U, X)
    n = U.shape[0]
    V = np.zeros((n, X.shape[0]))
    for i in range(n):
        need = U[i] > 0  # (m, T)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(need[None], X / np.where(need, U[i], 1.0)[None], np.inf)
        per_round = ratio.min(axis=1)  # (k, T)
        per_round = np.where(need.any(axis=0)[None], per_round, 0.0)
        V[i] = per_round.sum(axis=1)
    return V


def check_market(utility: Any, budget: Any, supply: Any, kind: str, result: Any,
                 extra_ok: bool = True) -> None:
    """Feasibility, then (if certified) optimality of an Eisenberg–Gale market by
    recomputation: duality gap at the returned prices and at prices implied by the
    allocation alone, sharing incentive and envy-freeness (budget-weighted)."""
    U = _arr(utility)
    if U.ndim == 2:
        U = U[:, :, None]
    n, m, T = U.shape
    B = np.ones(n) if budget is None else _arr(budget).reshape(n)
    S = np.ones((m, T)) if supply is None else _arr(supply).reshape(m, T)
    for name, arr in (("utility", U), ("budget", B), ("supply", S)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise Wrong(f"a result was returned for a {name} with NaN/inf/negative entries")
    if np.any(B <= 0):
        raise Wrong("a result was returned for a non-positive budget")
    X = _finite("allocation", result.allocation).reshape(n, m, T)
    if np.any(X < -FEAS * np.maximum(S, 0)[None] - 1e-300):
        raise Wrong(f"negative allocation {X.min():.3g}")
    used = X.sum(axis=0)
    if np.any(used > S * (1 + FEAS) + 1e-300):
        j = np.unravel_index(np.argmax(used / np.maximum(S, 1e-300)), used.shape)
        raise Wrong(f"supply exceeded on good {j}: {used[j]!r} > {S[j]!r}")
    if not claims_success(result):
        raise Skip()
    if not extra_ok:  # a composed model whose added constraints may bind: feasibility only
        return
    # a certificate at gap_tol t allows a relative EG gap t, and per-agent errors ~ sqrt(t)
    t = float(result.certificate.gap_tol)
    gap_lim, prop_lim = max(GAP, 2 * t), max(PROP, 2 * math.sqrt(t))
    X = np.maximum(X, 0.0)
    V = _bundle_values(U, X, kind)
    u = np.diag(V)
    whole = _bundle_values(U, S[None], kind)[:, 0]  # value of the whole supply
    live = whole > 0
    if not np.any(live):
        raise Skip()
    sumB = B[live].sum()
    share = B / B[live].sum()
    if np.any(live & (u <= 0)):
        i = int(np.flatnonzero(live & (u <= 0))[0])
        raise Wrong(f"buyer {i} gets nothing although the supply is worth {whole[i]:.3g} to it")
    # duality gaps (relative to the budgets, Eisenberg–Gale scale)
    gaps = []
    P = getattr(result, "prices", None)
    if P is not None:
        p = _arr(P).reshape(m, T)
        if np.all(np.isfinite(p)) and np.all(p >= 0):
            with np.errstate(divide="ignore", invalid="ignore"):
                if kind == "linear":
                    ratio = np.where(U > 0, p[None] / np.where(U > 0, U, 1.0), np.inf)
                    beta = ratio.reshape(n, -1).min(axis=1)
                else:
                    per_round = np.einsum("imt,mt->it", U, p)
                    beta = np.where(U.sum(axis=1) > 0, per_round, np.inf).min(axis=1)
                term = B[live] * np.log(B[live] / (u[live] * beta[live]))
            g = (float((p * S).sum()) - sumB + float(term.sum())) / sumB
            if np.isfinite(g):
                gaps.append(g)
    if kind == "linear":  # prices implied by the allocation alone
        with np.errstate(divide="ignore", invalid="ignore"):
            phat = np.max(np.where(live[:, None, None], B[:, None, None] * U
                                   / np.where(u > 0, u, 1.0)[:, None, None], 0.0), axis=0)
        gaps.append((float((phat * S).sum()) - sumB) / sumB)
    if gaps and min(gaps) > gap_lim:
        raise Wrong(f"Eisenberg-Gale gap {min(gaps):.3g} (relative to the budgets) at the "
                    f"returned allocation; certificate says ok")
    if kind == "leontief" and T == 1 and np.all(live) and np.all(S > 0):
        better = leontief_better_value(U[:, :, 0], B, S[:, 0], u)
        if better > gap_lim:
            raise Wrong(f"Leontief market: a feasible allocation found by an independent dual "
                        f"solve beats the returned one by {better:.3g} (relative EG value)")
    # sharing incentive: u_i >= value of (B_i / sum B) * supply
    si = share * whole
    viol = np.where(live, share * np.maximum(0.0, 1 - u / np.where(si > 0, si, 1.0)), 0.0)
    if viol.max() > prop_lim:
        i = int(np.argmax(viol))
        raise Wrong(f"sharing incentive: buyer {i} gets {u[i]:.6g} < {si[i]:.6g} "
                    f"(budget share {share[i]:.3g})")
    # envy-freeness: u_i / B_i >= V[i, k] / B_k
    with np.errstate(divide="ignore", invalid="ignore"):
        envy = (V / B[None, :]) / (u / B)[:, None] - 1.0
    envy = np.where(live[:, None] & live[None, :] & np.isfinite(envy), envy, 0.0)
    np.fill_diagonal(envy, 0.0)
    weighted = share[:, None] * envy
    if weighted.max() > prop_lim:
        i, k = (int(v) for v in np.unravel_index(int(np.argmax(weighted)), weighted.shape))
        raise Wrong(f"envy: buyer {i} prefers buyer {k}'s bundle by {envy[i, k]:.3g} "
                    f"(relative, budget share {share[i]:.3g})")


def leontief_better_value(A: np.ndarray, B: np.ndarray, S: np.ndarray, u: np.ndarray) -> float:
    """By how much (Eisenberg-Gale value relative to sum B) a feasible allocation beats the
    utilities ``u`` of a Leontief market ``max sum B_i log u_i s.t. sum_i A_ij u_i <= S_j``.
    The candidate comes from minimising the dual ``D(p) = sum p - 1 + sum b_i log(b_i / a_i.p)``
    (scipy L-BFGS over log prices, data normalised to unit supply and budgets), primal
    ``u_i = b_i / a_i.p`` scaled down to feasibility. Independent of fairalloc."""
    from scipy.optimize import minimize

    b = B / B.sum()
    At = A / S[None, :]                      # demand per unit of supply
    M = At.max(axis=1)
    At = At / M[:, None]                     # utility of buyer i in units of 1/M_i
    with np.errstate(divide="ignore"):
        mine = float((b * np.log(u * M)).sum())

    def dual(z: np.ndarray) -> tuple[float, np.ndarray]:
        p = np.exp(z)
        ap = At @ p
        val = p.sum() - 1.0 + float((b * np.log(b / ap)).sum())
        grad = p * (1.0 - (b / ap) @ At)
        return val, grad

    z0 = np.log(np.full(A.shape[1], 1.0 / A.shape[1]))
    res = minimize(dual, z0, jac=True, method="L-BFGS-B", bounds=[(-60.0, 60.0)] * len(z0),
                   options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-12})
    p = np.exp(res.x)
    cand = b / (At @ p)
    load = (cand[:, None] * At).sum(axis=0).max()
    cand = cand / load
    best = float((b * np.log(cand)).sum())
    return best - mine if np.isfinite(mine) else np.inf


def check_capped_market(U: np.ndarray, B: np.ndarray, S: np.ndarray, kind: str,
                        caps: Any, result: Any) -> None:
    """A static market composed with binding caps ``x[i, j] <= cap``: feasibility (supply,
    caps), then, if certified, its Eisenberg-Gale value against a feasible allocation of the
    same capped program found independently (cvxpy + Clarabel on normalised data: goods in
    shares of their supply, each buyer's utility in units of its best share, budgets summing
    to 1; the reference's point is clipped to the caps and scaled into the supply, so its value
    is a lower bound on the optimum whatever the reference solver's accuracy)."""
    import cvxpy as cp

    U, B, S = _arr(U), _arr(B), _arr(S)
    n, m = U.shape
    X = _finite("allocation", result.allocation).reshape(n, m)
    if np.any(X < -FEAS * S[None, :]) or np.any(X.sum(axis=0) > S * (1 + FEAS)):
        raise Wrong("capped market: negative allocation or supply exceeded")
    check_caps(X, caps)
    if not claims_success(result):
        raise Skip()
    t = float(result.certificate.gap_tol)
    gap_lim = max(GAP, 2 * t)
    cap = np.full((n, m), np.inf)
    for i, j, c in caps:
        cap[i, j] = min(cap[i, j], c / S[j])             # in shares of the supply
    b = B / B.sum()
    if kind == "linear":
        Us = U * S[None, :]                              # utility of a whole supply
        M = Us.max(axis=1)
        A = Us / M[:, None]                              # buyer i's best share is worth 1

        def value(share: np.ndarray) -> float:
            with np.errstate(divide="ignore"):
                return float((b * np.log((A * share).sum(axis=1))).sum())
        y = cp.Variable((n, m), nonneg=True)
        cons = [cp.sum(y, axis=0) <= 1]
        fin = np.isfinite(cap)
        if fin.any():
            cons.append(y[fin] <= cap[fin])
        prob = cp.Problem(cp.Maximize(b @ cp.log(cp.sum(cp.multiply(A, y), axis=1))), cons)
    else:  # Leontief: u_i = min_j x_ij / a_ij; the minimal bundle x_ij = a_ij u_i
        need = U > 0
        As = np.where(need, U / S[None, :], 0.0)        # shares per unit of utility
        M = 1.0 / As.max(axis=1)                          # best u_i with the whole supply
        A = As * M[:, None]

        def value(share: np.ndarray) -> float:
            with np.errstate(divide="ignore", invalid="ignore"):
                u = np.where(need, share / np.where(need, A, 1.0), np.inf).min(axis=1)
                return float((b * np.log(u)).sum())
        uv = cp.Variable(n, nonneg=True)
        ub = np.where(need & np.isfinite(cap), cap / np.where(need, A, 1.0), np.inf).min(axis=1)
        cons = [A.T @ uv <= 1]
        fin = np.isfinite(ub)
        if fin.any():
            cons.append(uv[fin] <= ub[fin])
        prob = cp.Problem(cp.Maximize(b @ cp.log(uv)), cons)
    try:
        prob.solve(solver="CLARABEL")
    except Exception:
        raise Skip() from None
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise Skip()
    if kind == "linear":
        ref = np.clip(np.asarray(y.value, float), 0.0, np.where(np.isfinite(cap), cap, 1.0))
    else:
        uref = np.clip(np.asarray(uv.value, float), 0.0, None)
        ref = np.minimum(A * uref[:, None], np.where(np.isfinite(cap), cap, np.inf))
    ref = ref / np.maximum(ref.sum(axis=0), 1.0)[None, :]  # into the supply
    mine, best = value(np.maximum(X, 0.0) / S[None, :]), value(ref)
    if np.isfinite(best) and mine < best - gap_lim:
        raise Wrong(f"capped market: Eisenberg-Gale value {mine!r} (normalised) below "
                    f"{best!r}, reached by a feasible allocation of the same capped program "
                    f"(cvxpy + Clarabel); certificate says ok")


def proportional_response(U: np.ndarray, B: np.ndarray, S: np.ndarray, *, iters: int = 3000,
                          tol: float = 1e-9) -> tuple[float, float]:
    """Bounds on the optimal Eisenberg-Gale value ``sum_i B_i log u_i`` of a linear market,
    by proportional response dynamics (Zhang 2011) in numpy, independent of fairalloc:
    (lower, upper) = (value of the feasible iterate, dual value at its prices)."""
    n, m = U.shape
    live = S > 0
    U, S = U[:, live], S[live]
    bids = B[:, None] * (U > 0) / np.maximum((U > 0).sum(axis=1, keepdims=True), 1)
    lower, upper = -np.inf, np.inf
    for it in range(iters):
        p = bids.sum(axis=0)
        x = np.where(p > 0, bids / np.where(p > 0, p, 1.0) * S, 0.0)
        u = (U * x).sum(axis=1)
        if it % 50 == 0 or it == iters - 1:
            q = p / S  # p_j is the spending on all of good j; q_j its unit price
            with np.errstate(divide="ignore"):
                lower = max(lower, float((B * np.log(u)).sum()))
                beta = np.where(U > 0, np.where(q > 0, q, np.inf)[None, :]
                                / np.where(U > 0, U, 1.0), np.inf).min(axis=1)
                upper = min(upper, float((q * S).sum() - B.sum() + (B * np.log(B / beta)).sum()))
            if upper - lower <= tol * B.sum():
                break
        bids = B[:, None] * U * x / u[:, None]
    return lower, upper


# --------------------------------------------------------------------------------------------
# throughput policies (Gavel)
# --------------------------------------------------------------------------------------------
class Gavel:
    """The allocation polytope of Gavel §3.1 built from the raw arrays, for linprog."""

    def __init__(self, T: Any, s: Any, w: Any, c: Any, steps: Any = None, elapsed: Any = None,
                 iso_elapsed: Any = None) -> None:
        self.T = _arr(T)
        n, k = self.T.shape
        self.n, self.k = n, k
        self.s = np.ones(n) if s is None else _arr(s).reshape(n)
        self.w = np.ones(n) if w is None else _arr(w).reshape(n)
        self.c = _arr(c).reshape(k)
        self.steps = None if steps is None else _arr(steps).reshape(n)
        self.elapsed = np.zeros(n) if elapsed is None else _arr(elapsed).reshape(n)
        self.iso = self.elapsed if iso_elapsed is None else _arr(iso_elapsed).reshape(n)
        for name, arr in (("throughput", self.T), ("scale_factor", self.s),
                          ("weight", self.w), ("workers", self.c)):
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise Wrong(f"a result was returned for a {name} with NaN/inf/negative "
                            f"entries")
        self.allowed = (self.T > 0) & (self.s[:, None] <= self.c[None, :])
        self.Ta = np.where(self.allowed, self.T, 0.0)
        self.e = self.Ta @ (self.c / self.c.sum())
        self.cols = np.argwhere(self.allowed)  # (E, 2): job, type

    def check_x(self, x: Any) -> np.ndarray:
        x = _finite("x", x)
        if x.shape != (self.n, self.k):
            raise Wrong(f"x has shape {x.shape}, expected {(self.n, self.k)}")
        if x.min(initial=0) < -1e-7 or x.max(initial=0) > 1 + 1e-7:
            raise Wrong(f"time fraction outside [0, 1]: {x.min():.3g}..{x.max():.3g}")
        if np.any(x.sum(axis=1) > 1 + FEAS):
            raise Wrong(f"a job gets more than all its time: {x.sum(axis=1).max()!r}")
        load = self.s @ x
        if np.any(load > self.c * (1 + FEAS) + 1e-9):
            j = int(np.argmax(load - self.c))
            raise Wrong(f"capacity of type {j} exceeded: {load[j]!r} > {self.c[j]!r}")
        bad = (~self.allowed) & (self.s[:, None] > self.c[None, :]) & (x > 1e-7)
        if np.any(bad):
            raise Wrong(f"a job runs on a type with fewer workers than its gang: "
                        f"{np.argwhere(bad)[0].tolist()}")
        return np.clip(x, 0.0, 1.0)

    def tp(self, x: np.ndarray) -> np.ndarray:
        return (self.Ta * x).sum(axis=1)

    # --- the LP: max c0 * theta + sum_e g_e x_e s.t. level rows, time rows, capacity rows ---
    def solve(self, level: np.ndarray | None, gain: np.ndarray | None,
              extra_rows: tuple[np.ndarray, np.ndarray] | None = None,
              level_rows: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """``level`` (n, k): maximise theta with ``level_m . x_m >= theta``; or ``gain`` (n, k):
        maximise ``sum gain * x``. Returns (value, x) where value is *recomputed* from the
        solver's x (min level or total gain): the value of an allocation that is feasible to
        the solver's tolerance, so a lower bound on the optimum even if HiGHS mis-solves a badly
        scaled LP (it drops coefficients below 1e-9). ``level_rows`` (n,) bool: the jobs that
        have a level row (default all). ``extra_rows`` (A (R, n, k) or (R, E), b): more rows
        ``A x <= b``, each in O(1) units (the caller scales them)."""
        from scipy.optimize import linprog
        from scipy.sparse import coo_matrix, vstack

        E = len(self.cols)
        if E == 0:
            raise Skip()
        jm, jt = self.cols[:, 0], self.cols[:, 1]
        nv = E + (1 if level is not None else 0)
        rows = []
        ub = []
        ar = np.arange(E)
        rows.append(coo_matrix((np.ones(E), (jm, ar)), shape=(self.n, nv)))
        ub.append(np.ones(self.n))
        rows.append(coo_matrix((self.s[jm], (jt, ar)), shape=(self.k, nv)))
        ub.append(self.c)
        obj = np.zeros(nv)
        lrows = np.ones(self.n, bool) if level_rows is None else np.asarray(level_rows, bool)
        if level is not None:
            if not lrows.any():
                raise Skip()
            a = level[jm, jt]
            scale = np.zeros(self.n)
            np.maximum.at(scale, jm, a)
            scale = np.where(scale > 0, scale, 1.0)
            theta0 = float(scale[lrows].min())  # theta = theta0 * theta'; coefficients in (0, 1]
            on = lrows[jm]
            jl = np.flatnonzero(lrows)
            data = np.concatenate([-a[on] / scale[jm[on]], theta0 / scale[jl]])
            r = np.concatenate([jm[on], jl])
            cidx = np.concatenate([ar[on], np.full(jl.size, E)])
            rows.append(coo_matrix((data, (r, cidx)), shape=(self.n, nv)))
            ub.append(np.zeros(self.n))
            obj[E] = -1.0
        else:
            assert gain is not None
            g = gain[jm, jt]
            obj[:E] = -g / max(np.abs(g).max(), 1e-300)
        if extra_rows is not None:
            A2, b2 = extra_rows
            M2 = A2[:, jm, jt] if A2.ndim == 3 else A2
            rows.append(coo_matrix(np.hstack([M2, np.zeros((M2.shape[0], nv - E))])))
            ub.append(b2)
        A = vstack(rows).tocsr()
        b = np.concatenate(ub)
        cap_scale = np.concatenate([np.ones(self.n), np.maximum(self.c, 1e-300)] +
                                   [np.ones(len(x)) for x in ub[2:]])
        A = (A.T.multiply(1.0 / cap_scale)).T.tocsr()
        b = b / cap_scale
        bounds = [(0.0, 1.0)] * E + ([(None, None)] if level is not None else [])
        res = linprog(obj, A_ub=A, b_ub=b, bounds=bounds, method="highs")
        if res.status != 0:
            raise Skip()
        # what the point's row violations (HiGHS' tolerance) could buy: with rows that keep
        # other jobs' values, one job gains from their tolerated drops at the rate of their
        # throughput ratios (up to 1e8 on data spanning 1e-4..1e4). By weak duality the
        # optimum of the exact program is at least the point's value less sum_r y_r viol_r.
        z = res.x.copy()
        z[:E] = np.clip(z[:E], 0.0, 1.0)
        viol = np.maximum(A @ z - b, 0.0)
        y = getattr(getattr(res, "ineqlin", None), "marginals", None)
        amplified = float(np.abs(y) @ viol) if y is not None else 0.0
        x = np.zeros((self.n, self.k))
        x[jm, jt] = z[:E]
        if level is not None:
            return float((level * x).sum(axis=1)[lrows].min()) - amplified * theta0, x
        assert gain is not None
        return float((gain * x).sum()) - amplified * max(float(np.abs(g).max()), 1e-300), x


def min_cost_ratio(g: Gavel, cost: np.ndarray, x: np.ndarray,
                   need: np.ndarray | None) -> tuple[float, float]:
    """(throughput per cost of x, the optimum by the Charnes-Cooper LP), both on data
    normalised by the largest throughput and cost. Gavel §4.2: max sum_m tp_m(X) / sum_mj
    cost_j s_m X_mj s.t. the allocation constraints (and tp_m >= need_m)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    tmax = float(g.Ta.max())
    cmax = float(cost.max())
    if not (tmax > 0 and cmax > 0):
        raise Skip()
    T = g.Ta / tmax
    cs = (cost / cmax)[None, :] * g.s[:, None]  # cost of one unit of x_mj
    denom = float((cs * x).sum())
    ratio_x = float((T * x).sum()) / denom if denom > 0 else 0.0
    jm, jt = g.cols[:, 0], g.cols[:, 1]
    E = len(jm)
    ar = np.arange(E)
    zc = np.full(g.n, E)
    rows = [coo_matrix((np.concatenate([np.ones(E), -np.ones(g.n)]),
                        (np.concatenate([jm, np.arange(g.n)]), np.concatenate([ar, zc]))),
                       shape=(g.n, E + 1)),
            coo_matrix((np.concatenate([g.s[jm], -g.c]),
                        (np.concatenate([jt, np.arange(g.k)]),
                         np.concatenate([ar, np.full(g.k, E)]))), shape=(g.k, E + 1))]
    ub = [np.zeros(g.n), np.zeros(g.k)]
    if need is not None:
        # each SLO row -T y + nd z <= 0 divided by nd (where nd > 0): linprog's absolute
        # feasibility tolerance would otherwise 'meet' a need of 1e-11 with y = 0
        nd = need / tmax
        unit = np.where(nd > 0, 1.0 / np.where(nd > 0, nd, 1.0), 1.0)
        rows.append(coo_matrix((np.concatenate([-T[jm, jt] * unit[jm], nd * unit]),
                                (np.concatenate([jm, np.arange(g.n)]),
                                 np.concatenate([ar, zc]))), shape=(g.n, E + 1)))
        ub.append(np.zeros(g.n))
    A_eq = np.zeros((1, E + 1))
    A_eq[0, :E] = cs[jm, jt]
    obj = np.zeros(E + 1)
    obj[:E] = -T[jm, jt]
    res = linprog(obj, A_ub=vstack(rows).tocsr(), b_ub=np.concatenate(ub), A_eq=A_eq,
                  b_eq=[1.0], bounds=[(0, None)] * (E + 1), method="highs")
    if res.status != 0:
        raise Skip()
    y, z = res.x[:E], res.x[E]
    if z <= 0:
        raise Skip()
    xr = np.zeros((g.n, g.k))
    xr[jm, jt] = np.clip(y / z, 0.0, 1.0)  # recompute the ratio of the LP's allocation
    if need is not None and np.any((T * xr).sum(axis=1) < need / tmax * (1 - 1e-6)):
        raise Skip()  # the reference itself misses an SLO: no evidence either way
    d = float((cs * xr).sum())
    return ratio_x, (float((T * xr).sum()) / d if d > 0 else 0.0)


def elapsed_distinct(g: Gavel) -> bool:
    e = np.sort(g.elapsed)
    return bool(np.all(np.diff(e) > 1e-9 * max(1.0, float(np.abs(e).max(initial=0.0)))))


def _close(a: float, b: float, rtol: float = LP_REL) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + 1e-300


def cap_rows(g: Gavel, caps: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows ``x[m, j] <= cap`` (a composed model's added constraints) for :meth:`Gavel.solve`,
    each divided by its cap (O(1) units; a cap of 0 is the row ``x[m, j] <= 0``)."""
    if not caps:
        return None
    A = np.zeros((len(caps), g.n, g.k))
    b = np.zeros(len(caps))
    for r, (m, j, cap) in enumerate(caps):
        A[r, m, j] = 1.0 / cap if cap > 0 else 1.0
        b[r] = 1.0 if cap > 0 else 0.0
    return A, b


def check_caps(x: np.ndarray, caps: Any) -> None:
    """A composed model's added constraints ``x[m, j] <= cap`` hold (relative to the cap, to
    FEAS; to 1e-9 absolute for a cap of 0)."""
    for m, j, cap in caps or ():
        if x[m, j] > cap * (1 + FEAS) + 1e-9 * (cap == 0):
            raise Wrong(f"added constraint x[{m}, {j}] <= {cap!r} violated: {x[m, j]!r}")


def arrival_order(g: Gavel, order: Any = None) -> np.ndarray:
    """Jobs in arrival order: ``order`` ascending if given, else most ``elapsed`` first; ties
    by index (fairalloc's documented FIFO semantics)."""
    if order is not None:
        return np.argsort(_arr(order), kind="stable")
    return np.argsort(-g.elapsed, kind="stable")


def fifo_face_reference(g: Gavel, arrival: np.ndarray) -> np.ndarray | None:
    """Each job's ``v = tp / fastest`` at the textbook lexicographic optimum in ``arrival``
    order: one ``linprog`` (HiGHS, tolerances 1e-10) per job, each keeping the earlier stages'
    optimal *face* by complementary slackness with its own duals (columns at a bound whose
    reduced cost exceeds ``_FACE`` held there, rows whose dual does made equalities), with no
    value rows. ``None`` if an LP fails. The same sequence as tests/test_fifo_exact.py's
    reference; unlike rows that keep earlier values, a held face has no slack for the
    throughput ratios to amplify (fuzz seeds 606 / 707: see the FIFO branch of
    `check_allocation`)."""
    from scipy.optimize import linprog

    fastest = g.Ta.max(axis=1)
    A = g.Ta / np.where(fastest > 0, fastest, 1.0)[:, None]
    n, k = A.shape
    rows = np.zeros((k + n, n * k))
    for j in range(k):
        rows[j, j::k] = g.s
    for m in range(n):
        rows[k + m, m * k:(m + 1) * k] = 1.0
    b = np.r_[g.c, np.ones(n)]
    lo, hi = np.zeros(n * k), (A > 0).ravel().astype(float)
    tight = np.zeros(k + n, dtype=bool)
    v = np.zeros(n)
    for m in arrival:
        c = np.zeros(n * k)
        c[m * k:(m + 1) * k] = -A[m]
        kw: dict = {"bounds": np.c_[lo, hi], "method": "highs", "options": _FACE_HIGHS}
        if (~tight).any():
            kw.update(A_ub=rows[~tight], b_ub=b[~tight])
        if tight.any():
            kw.update(A_eq=rows[tight], b_eq=b[tight])
        r = linprog(c, **kw)
        if r.status != 0:
            return None
        v[m] = A[m] @ r.x[m * k:(m + 1) * k]
        free = lo < hi
        at_lo = free & (r.lower.marginals > _FACE)
        at_hi = free & (r.upper.marginals < -_FACE)
        lo, hi = lo.copy(), hi.copy()
        hi[at_lo] = lo[at_lo]
        lo[at_hi] = hi[at_hi]
        if (~tight).any():
            idx = np.flatnonzero(~tight)
            tight = tight.copy()
            tight[idx[r.ineqlin.marginals < -_FACE]] = True
    return v


def check_allocation(g: Gavel, result: Any, policy: str, *, slo: Any = None,
                     cost: Any = None, order: Any = None, caps: Any = None) -> None:
    """Feasibility of ``result.x`` always; optimality by linprog where the program is an LP.
    ``order``: FIFO's arrival order (as passed to fairalloc). ``caps``: a composed model's
    added constraints ``[(m, j, cap)]``, part of the reference LP for max-min fairness, total
    throughput and makespan (other policies: feasibility only)."""
    x = g.check_x(result.x)
    if not claims_success(result):
        raise Skip()
    check_caps(_arr(result.x), caps)
    extra = cap_rows(g, caps)
    if extra is not None and policy not in ("max_min_fairness", "max_total_throughput",
                                            "min_makespan"):
        return
    rel = max(LP_REL, 2 * float(result.certificate.gap_tol))  # objective tolerance
    if np.any(g.e <= 0):
        raise Wrong(f"job {int(np.argmin(g.e))} can run on no type, yet a certified result")
    tp = g.tp(x)
    eff = getattr(result, "effective_throughput", None)
    if eff is not None and not np.allclose(_arr(eff), tp, rtol=1e-6, atol=0):
        raise Wrong("effective_throughput differs from sum_j T_mj x_mj")
    obj = float(result.objective)
    if policy in ("max_min_fairness", "water_filling"):
        a = g.s[:, None] * g.Ta / (g.w * g.e)[:, None]
        theta_x = float(((a * x).sum(axis=1)).min())
        best, _ = g.solve(a, None, extra)
        if theta_x < best - rel * abs(best):
            raise Wrong(f"{policy}: min_m level {theta_x!r} below the LP optimum {best!r}")
        if policy == "max_min_fairness" and not _close(obj, theta_x, 1e-6):
            raise Wrong(f"objective {obj!r} != min level of x {theta_x!r}")
    elif policy == "max_total_throughput":
        gain = g.Ta
        val, _ = g.solve(None, gain, extra)
        mine = float((gain * x).sum())
        if mine < val - rel * abs(val):
            raise Wrong(f"total throughput {mine!r} below the LP optimum {val!r}")
    elif policy == "max_total_throughput_normalized":
        gain = g.Ta / g.e[:, None]
        val, _ = g.solve(None, gain)
        mine = float((gain * x).sum())
        if mine < val - rel * abs(val):
            raise Wrong(f"normalised total throughput {mine!r} below the LP optimum {val!r}")
    elif policy == "min_makespan":
        if g.steps is None:
            raise Skip()
        a = g.Ta / g.steps[:, None]
        theta_x = float(((a * x).sum(axis=1)).min())
        best, _ = g.solve(a, None, extra)
        if theta_x < best - rel * abs(best):
            raise Wrong(f"min_makespan: makespan {1 / theta_x if theta_x > 0 else math.inf!r} "
                        f"above the LP optimum {1 / best!r}")
        if not _close(obj, 1.0 / theta_x, 1e-5):
            raise Wrong(f"min_makespan objective {obj!r} is not the makespan of x "
                        f"{1.0 / theta_x!r}")
    elif policy == "finish_time_fairness":
        if g.steps is None:
            raise Skip()
        iso = np.where(g.allowed, g.c[None, :] / np.maximum(g.n * g.s, g.c.sum())[:, None], 0.0)
        tp_iso = g.tp(iso)
        D = g.iso + g.steps / tp_iso
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = (g.elapsed * tp + g.steps) / (D * tp)
        R = float(np.max(rho))
        if not np.isfinite(R):
            raise Wrong(f"finish_time_fairness: a job gets no throughput (max rho {R!r}, "
                        f"objective {obj!r}) although the isolated split gives every job a "
                        f"finite rho")
        if not _close(obj, R, 1e-5):
            raise Wrong(f"finish_time_fairness objective {obj!r} != max rho of x {R!r}")
        # is there an allocation with every rho <= R (1 - 1e-4)?  (R D - t) tp(x) >= steps
        Rb = R * (1 - max(1e-4, rel))
        coef = (Rb * D - g.elapsed)
        if np.any(coef <= 0):
            return
        a = g.Ta * (coef / g.steps)[:, None]
        best, _ = g.solve(a, None)
        if best >= 1 + 1e-6:
            raise Wrong(f"finish_time_fairness: an allocation has every rho <= {Rb!r} "
                        f"< objective {R!r}")
    elif policy == "shortest_job_first" and g.steps is not None:
        # stage 1: the job with the smallest steps / best throughput runs at its best
        best_tp = g.Ta.max(axis=1)
        with np.errstate(divide="ignore"):
            dur = np.where(best_tp > 0, g.steps / best_tp, np.inf)
        order = np.argsort(dur)
        if len(order) > 1 and dur[order[1]] <= dur[order[0]] * (1 + 1e-9):
            return  # a tie: either may go first
        m0 = int(order[0])
        if tp[m0] < best_tp[m0] * (1 - 1e-6):
            raise Wrong(f"shortest_job_first: the shortest job {m0} runs at {tp[m0]!r}, not its "
                        f"best throughput {best_tp[m0]!r}")
    elif policy == "fifo":
        # default semantics "arrival": lexicographic max of v_m = tp_m / fastest_m in arrival
        # order (most elapsed first, or ``order``; ties by index) -- one LP per job, each
        # keeping every earlier job at exactly what the allocation gives it. A job that can
        # gain while no earlier job loses is then a lexicographically better allocation: a
        # witness, whatever the reference LPs' own accuracy (their tolerated violations are
        # subtracted by `Gavel.solve`). Fuzz seed 303 (30 jobs, throughputs 1e2..1e10):
        # keeping the reference's *values* let a job worth 5.0e-6, kept at the reference's
        # -2.8e-6, give up its type to a later job (a false 'wrong'); and a slack of even 1e-9
        # of each value is room the throughput ratios amplify (1e-9 of a type freed 3.4e-5 of
        # another), so the kept rows have none, in unit form v_m(y) / v_m(x) >= 1 (met to
        # linprog's tolerance relative to the value, not absolutely: an absolute 1e-7 frees
        # all of a job worth 3e-7).
        arrival = arrival_order(g, order)
        fastest = g.Ta.max(axis=1)
        v = tp / fastest
        fixed_rows: list[np.ndarray] = []
        for rank, m in enumerate(arrival):
            gain = np.zeros((g.n, g.k))
            gain[m] = g.Ta[m] / fastest[m]
            extra = ((np.array(fixed_rows), np.full(len(fixed_rows), -1.0))
                     if fixed_rows else None)
            best, _ = g.solve(None, gain, extra_rows=extra)
            if v[m] < best - max(rel, 1e-6):  # v is unit-free, in [0, 1]
                # confirm by the face-keeping sequence: kept rows, even exact, are met to
                # linprog's tolerance, which the throughput ratios amplify along a chain of
                # trades (fuzz seed 606: job 20 gives up 2e-9 of t4, worth 1 to job 13, which
                # gives up 6.3e-5 of t5, worth 1.6e4 times its t2 to job 19, which frees all of
                # t2 for job 27; each kept value met to 2e-9 relative, and job 27 'achieves'
                # 1.0 where the exact program gives it 0)
                ref = fifo_face_reference(g, arrival)
                if ref is None:
                    raise Skip()
                off = np.flatnonzero(np.abs(v[arrival] - ref[arrival]) > max(rel, 1e-6))
                if not off.size or v[arrival[off[0]]] > ref[arrival[off[0]]]:
                    return  # the answer is the reference's sequence, or beats it: no witness
                rank = int(off[0])
                m = arrival[rank]
                best = float(ref[m])
                raise Wrong(f"fifo: job {int(m)} (arrival rank {rank}) gets normalised "
                            f"throughput {v[m]!r} < {best!r}, achievable while every "
                            f"earlier job keeps what the allocation gives it "
                            f"(lexicographic LP, confirmed by the face-keeping sequence)")
            if v[m] > best + max(rel, 1e-6):
                return  # the reference LP fell short: stop comparing
            if v[m] > 0:  # (v_m >= 0 needs no row)
                row = np.zeros((g.n, g.k))
                row[m] = -g.Ta[m] / fastest[m] / v[m]
                fixed_rows.append(row)
    elif policy == "fifo_objective":
        # semantics="objective": max sum_m (M - r_m) v_m, r the 0-based arrival rank
        rank = np.empty(g.n)
        rank[arrival_order(g, order)] = np.arange(g.n)
        gain = (g.n - rank)[:, None] * g.Ta / g.Ta.max(axis=1)[:, None]
        val, _ = g.solve(None, gain)
        mine = float((gain * x).sum())
        if mine < val - rel * abs(val):
            raise Wrong(f"fifo (semantics='objective'): sum (M - r_m) v_m = {mine!r} below the "
                        f"LP optimum {val!r}")
    elif policy == "min_cost" and cost is not None:
        need = None
        if slo is not None and g.steps is not None:
            need = g.steps / _arr(slo).reshape(g.n)
            if np.any(tp < need * (1 - 1e-6)):
                raise Wrong("min_cost: an SLO is not met")
        cost = _arr(cost).reshape(g.k)
        ratio_x, best = min_cost_ratio(g, cost, x, need)
        scale = float(g.Ta.max()) / float(cost.max())
        if not _close(obj, ratio_x * scale, 1e-5):
            raise Wrong(f"min_cost objective {obj!r} is not the throughput per cost of x "
                        f"{ratio_x * scale!r}")
        if ratio_x < best * (1 - rel):
            raise Wrong(f"min_cost: throughput per cost {ratio_x!r} below the "
                        f"Charnes-Cooper LP optimum {best!r}")


# --------------------------------------------------------------------------------------------
# hierarchical water-filling (Gavel §4.3; formulations/water_filling.md)
# --------------------------------------------------------------------------------------------
#: a job that can rise by more than this share of its best level while no other job drops
#: below its level is not water-filled (bottleneck_tol is 1e-7; 100x slack, as for objectives)
WF_RISE = 1e-5


def first_level_weights(g: Gavel, entities: Any = None, entity_weights: Any = None,
                        entity_policies: Any = None, order: Any = None) -> np.ndarray:
    """The weight ``w_m`` of each job in the first level LP ``u_m >= w_m theta``: in a fairness
    entity ``w_s omega_m / sum omega`` over its jobs, in a FIFO entity ``w_s`` for its first job
    in arrival order and 0 for the others (formulations/water_filling.md). No entities: one
    fairness entity of weight 1."""
    labels = [0] * g.n if entities is None else list(entities)
    ew = dict(entity_weights or {})
    ep = dict(entity_policies or {})
    rank = np.empty(g.n)
    rank[arrival_order(g, order)] = np.arange(g.n)
    w = np.zeros(g.n)
    for e in dict.fromkeys(labels):
        members = np.array([i for i, lab in enumerate(labels) if lab == e])
        ws = float(ew.get(e, 1.0))
        if ep.get(e, "fairness") == "fifo":
            w[members[np.argmin(rank[members])]] = ws
        else:
            w[members] = ws * g.w[members] / g.w[members].sum()
    return w


def check_water_filling(g: Gavel, result: Any, *, entities: Any = None,
                        entity_weights: Any = None, entity_policies: Any = None,
                        order: Any = None, single_level: bool = False) -> None:
    """Hierarchical water-filling, by two LPs built from the definitions: (1) the first level
    ``max theta s.t. u_m >= w_m theta`` (``w``: :func:`first_level_weights`; ``u_m = s_m
    tp_m / e_m``) is the result's ``objective``, (2) the final levels are Pareto optimal: no job
    can rise by more than :data:`WF_RISE` of its best level while every other job keeps its
    level (every job ends frozen, i.e. bottlenecked) -- claimed only by a result with status
    ``optimal`` (``suboptimal``: water-filling's end check could not prove it). ``single_level``:
    ``max_min_fairness(water_filling=True)``, whose level weights are the job weights
    themselves (its objective is max-min fairness's ``min_m u_m / omega_m``)."""
    x = g.check_x(result.x)
    if not claims_success(result):
        raise Skip()
    rel = max(LP_REL, 2 * float(result.certificate.gap_tol))
    if np.any(g.e <= 0):
        raise Wrong(f"job {int(np.argmin(g.e))} can run on no type, yet a certified result")
    coef = g.s[:, None] * g.Ta / g.e[:, None]            # u_m = coef_m . x_m
    w = g.w.copy() if single_level else first_level_weights(g, entities, entity_weights,
                                                             entity_policies, order)
    on = w > 0
    level = coef / np.where(on, w, 1.0)[:, None]
    best, _ = g.solve(level, None, level_rows=on)
    u = (coef * x).sum(axis=1)
    theta_x = float((u[on] / w[on]).min())
    obj = float(result.objective)
    if theta_x < best - rel * abs(best):
        raise Wrong(f"water-filling: the allocation's first level {theta_x!r} is below the "
                    f"level LP's optimum {best!r} (levels only rise after the first)")
    if obj < best - rel * abs(best) or obj > theta_x + rel * abs(theta_x):
        raise Wrong(f"water-filling: objective {obj!r} is not the first level (LP optimum "
                    f"{best!r}, reached by the allocation: {theta_x!r})")
    from fairalloc.results import Status

    if result.status != Status.OPTIMAL:
        return  # "suboptimal": the levels are not claimed Pareto-maximal (its end check's
        # verdict is in stats.fallbacks; formulations/water_filling.md), only the first level
    rise, m = pareto_rise(g, coef, u)
    if rise > max(WF_RISE, rel):
        raise Wrong(f"water-filling: job {m} can rise by {rise:.3g} of its best level (level "
                    f"{u[m]!r}) while no other job drops: not every job is bottlenecked")


#: feasibility tolerances of the Pareto LP (HiGHS through linprog), tighter than its defaults
PARETO_LP_TOL = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def pareto_rise(g: Gavel, coef: np.ndarray, u: np.ndarray) -> tuple[float, int]:
    """How far the levels ``u`` (``u_m = coef_m . x_m``) are from Pareto optimal: the largest
    total rise ``sum_m (u_m(y) - u_m) / umax_m`` over allocations ``y`` that keep every job at
    ``u_m``, *proven* for exact arithmetic: the LP's point meets its rows only to HiGHS'
    tolerance, and a job may gain from the others' tolerated drops at the rate of their
    throughput ratios (up to 1e8 on data spanning 1e-4..1e4), so what those violations could
    buy (``sum_r y_r viol_r``, weak duality with the LP's duals ``y``) is subtracted. Returns
    ``(proven rise, the job that rises most)``."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    E = len(g.cols)
    if E == 0:
        raise Skip()
    jm, jt = g.cols[:, 0], g.cols[:, 1]
    umax = coef.max(axis=1)
    ar = np.arange(E)
    a = coef[jm, jt] / umax[jm]                                   # u_m / umax_m per column
    # keep every level in unit form u_m(y) / u_m >= 1 (u_m > 0; else u_m(y) / umax_m >= 0):
    # in umax units a level far below its best (1.6e-10 of 23.6: 7e-12) is within the LP's
    # feasibility tolerance, the LP dropped it to 0, HiGHS gave that row no dual (so no
    # amplified violation), and the type it freed raised another job by 1.8e-5 of its best
    # (a false 'wrong', fuzz seed 909; as for FIFO's kept rows, seed 303)
    unit = np.where(u > 0, u, umax)
    rows = [coo_matrix((np.ones(E), (jm, ar)), shape=(g.n, E)),  # time
            coo_matrix((g.s[jm] / g.c[jt], (jt, ar)), shape=(g.k, E)),  # capacity / c_j
            coo_matrix((-coef[jm, jt] / unit[jm], (jm, ar)), shape=(g.n, E))]  # keep levels
    A = vstack(rows).tocsr()
    b = np.concatenate([np.ones(g.n), np.ones(g.k), -u / unit])
    res = linprog(-a, A_ub=A, b_ub=b, bounds=(0.0, 1.0), method="highs",
                  options=PARETO_LP_TOL)
    if res.status != 0 or getattr(res, "ineqlin", None) is None:
        raise Skip()
    y = np.clip(res.x, 0.0, 1.0)
    viol = np.maximum(A @ y - b, 0.0)
    amplified = float(np.abs(res.ineqlin.marginals) @ viol)
    gain = np.zeros(g.n)
    np.add.at(gain, jm, a * y)
    gain -= u / umax
    proven = float(gain.sum()) - amplified
    return proven, int(np.argmax(gain))


# --------------------------------------------------------------------------------------------
# elastic fair queuing (Ares §3): a tiny event simulation, linear scaling, one pool
# --------------------------------------------------------------------------------------------
def gps_finish(arrival: np.ndarray, work: np.ndarray, M: float) -> np.ndarray:
    """Finish times under GPS with M GPUs shared equally by active jobs, each capped at one
    GPU... (Ares's reference: dV/dt = M / N_t, a job's virtual finish V(a) + L)."""
    n = len(arrival)
    order = np.argsort(arrival, kind="stable")
    t, V = 0.0, 0.0
    vfin = np.full(n, np.nan)
    fin = np.full(n, np.nan)
    active: list[int] = []
    pending = list(order)
    while pending or active:
        next_arr = arrival[pending[0]] if pending else math.inf
        if active:
            rate = M / len(active)
            j = min(active, key=lambda i: vfin[i])
            t_done = t + (vfin[j] - V) / rate
        else:
            t_done = math.inf
        if next_arr <= t_done:
            if active:
                V += (next_arr - t) * M / len(active)
            t = next_arr
            i = pending.pop(0)
            vfin[i] = V + work[i]
            active.append(i)
        else:
            V = vfin[j]
            t = t_done
            fin[j] = t
            active.remove(j)
    return fin


def brute_force_nash(bundles: list, values: list, g: int, empty: Any) -> tuple[int, float]:
    """Lexicographic Nash welfare by enumeration, the reference of tests/test_auctions.py and
    the bundle_auction fuzz target: (#agents with zero empty value made positive, sum of
    logs)."""
    best: tuple[int, float] | None = None
    for combo in itertools.product(*[[-1, *range(len(b))] for b in bundles]):
        used = np.zeros(g, dtype=int)
        for i, c in enumerate(combo):
            if c >= 0:
                used[list(bundles[i][c])] += 1
        if (used > 1).any():
            continue
        vals = [values[i][c] if c >= 0 else empty[i] for i, c in enumerate(combo)]
        key = (sum(1 for i, v in enumerate(vals) if empty[i] == 0 and v > 0),
               sum(math.log(v) for v in vals if v > 0))
        if best is None or key[0] > best[0] or (key[0] == best[0] and key[1] > best[1] + 1e-12):
            best = key
    return best if best is not None else (0, 0.0)
