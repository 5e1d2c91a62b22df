"""The Eisenberg-Gale engine: the edge form of a market, its dual, recovery, conic solve and
polishes. One cohesive algorithm (solve + certify + polish one market), hence its length.

Used by `fairalloc.markets.fisher` (static and volatile markets) and by the partial
allocation mechanism (`fairalloc.auctions.partial`); the interior-point method for many
small markets at once lives in `fairalloc.markets.ipm`, the warm-started searches and
batched leave-one-out markets in `fairalloc.markets.warm`.

Markets: linear and Leontief, static and over time (volatile); the program and the solution
paths (``method=``) are described in `fairalloc.markets.fisher`.

All four markets share one *edge form*, which this module solves and certifies:
buyer ``i`` owns edges ``e`` (a good for linear utilities, a per-round bundle for Leontief);
running edge ``e`` at level ``z_e`` yields ``w_e z_e`` utility and consumes ``C[r, e] z_e`` of
resource ``r``. Then ``U_i = sum_{e in E_i} w_e z_e`` and the constraints are ``C z <= s``.
Its dual function has a closed form, used as the certificate (independent of any solver):

    D(p) = s @ p + sum_i B_i (log B_i - 1 - log beta_i(p)),
    beta_i(p) = min_{e in E_i} (C^T p)_e / w_e          (price of one unit of utility)

and ``D(p) >= OPT >= P(z) = sum_i B_i log U_i(z)`` for every ``p >= 0`` and feasible ``z``.

Every market is solved in normalised units (see
`fairalloc.FisherMarket`); the certificate's gap is judged against
the total budget (``Certificate.scale``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk

from ..errors import SolverError
from ..results import Certificate
from ..solvelog import SolveLog, SolveStatus

# --- accuracy contracts (what a polished point must meet) -------------------------------------
CONIC_TOL = 1e-9  # ACCURACY: relative tolerance of a whole-market conic solve
RESCALED_TOL = 1e-10  # ACCURACY: tolerance of the price-scaled re-solve (better units, tighter)
POLISH_NOISE = 1e-10  # ACCURACY: a polished point may be worse by this (relative) rounding
NEWTON_KKT_TOL = 1e-13  # ACCURACY: market-clearing residual ending the dual Newton polish
NEWTON_FLAT_DUAL = 1e-13  # ACCURACY: D is flat to this relative rounding near the optimum
SUPPORT_NEWTON_TOL = 1e-14  # ACCURACY: KKT residual ending Newton on a support
FOREST_WRONG_EDGE = 1e-10  # ACCURACY: relative price excess marking a support edge as wrong
NEG_FLOW_TOL = 1e-9  # ACCURACY: most negative spending flow (per unit budget) still a flow
# --- heuristic knobs (reading supports off approximate points; speed) -------------------------
UNIT_LOW, UNIT_HIGH = 0.25, 4.0  # PERFORMANCE: quantities in [1/4, 4) are left unscaled
#: Clarabel's statuses of a solve stopped by its time limit / its iteration limit (a work limit)
_LIMITS = {"MaxTime": SolveStatus.TIME_LIMIT, "MaxIterations": SolveStatus.ITERATION_LIMIT}
TINY_PRICE = 1e-300  # numerical floor of a price before dividing by it
PR_TIE = 1e-6  # PERFORMANCE: edges within this of the best bang-per-buck get a full bid
PR_OFF_SHARE = 1e-3  # PERFORMANCE: bid share of the other edges when warm-starting
PR_DENSE_SHARE = 0.5  # PERFORMANCE: dense proportional response above this share of edges
DEMAND_TIE = 1e-7  # relative price gap within which edges count as a buyer's cheapest
DENSE_NEWTON_MAX_ENTRIES = 4_000_000  # PERFORMANCE: dense Newton while C has at most this
NEWTON_ZERO_PRICE = 1e-12  # prices below this fraction of the largest start at 0
NEWTON_FIX_PRICE = 1e-8  # an oversupplied good priced below this fraction is fixed at 0
NEWTON_MIN_STEP = 1e-12  # smallest line-search step of the dual Newton polish
STRICT_SHARE = 1e-6  # utility share above which a bundle is on the strict support
PRICED_GOOD = 1e-4  # price (relative to the largest) above which a good is read as priced
DENSE_LSTSQ_MAX_ROWS = 3000  # PERFORMANCE: largest singular system solved by dense lstsq
TIE_TIGHT = 1e-6  # relative bang-per-buck gap read as a tie (solver prices ~sqrt(tol))
TIE_LOOSE = 1e-4  # the looser second reading of ties
SUPPORT_SHARE = 1e-7  # share of utility/supply above which an edge is on the support
SUPPORT_UTILITY_SHARE = 1e-9  # utility share above which a tied edge carries utility
FLOW_TIE = 1e-9  # relative bang-per-buck gap of the edges the transportation LP may use
INCUMBENT_PR_ITERS = 30  # PERFORMANCE: proportional-response rounds of the time-limit incumbent


# --------------------------------------------------------------------------------------------
# edge form
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class EdgeForm:
    """The edge form of a market (see module docstring). Edges are sorted by owner."""

    owner: np.ndarray  # (E,) buyer of each edge, non-decreasing
    weight: np.ndarray  # (E,) utility per unit level
    C: sp.csc_matrix  # (R, E) resource use per unit level
    budget: np.ndarray  # (n,)
    supply: np.ndarray  # (R,)
    starts: np.ndarray  # (n,) first edge of each buyer

    @property
    def n(self) -> int:
        return int(self.budget.size)

    @property
    def num_edges(self) -> int:
        return int(self.owner.size)

    def subset(self, keep: np.ndarray) -> EdgeForm:
        """The edge form restricted to the edges ``keep`` (must keep >= 1 edge per buyer)."""
        owner = self.owner[keep]
        return EdgeForm(owner, self.weight[keep], self.C[:, keep].tocsc(), self.budget,
                         self.supply, edge_starts(owner, self.n))

    # --- certificate pieces ---------------------------------------------------------------
    def utilities(self, z: np.ndarray) -> np.ndarray:
        return np.bincount(self.owner, weights=self.weight * z, minlength=self.n)

    def primal_value(self, z: np.ndarray) -> float:
        u = self.utilities(z)
        with np.errstate(divide="ignore"):
            return float(self.budget @ np.log(u))

    def beta(self, prices: np.ndarray) -> np.ndarray:
        """Cheapest price of one unit of utility for each buyer: ``min_e (C^T p)_e / w_e``
        (an edge worth a denormal 5e-324 costs ``inf`` per unit: no warning, fuzz seed 16)."""
        with np.errstate(over="ignore"):
            q = (self.C.T @ prices) / self.weight
        return np.minimum.reduceat(q, self.starts)

    def dual_value(self, prices: np.ndarray) -> float:
        # D(p) = s@p + sum_i B_i (log B_i - 1 - log beta_i(p)), evaluated with p = m * p_hat
        # (m = max p) so that prices near the float limit give +inf, never inf - inf = nan
        p = np.maximum(prices, 0.0)
        m = float(np.max(p, initial=0.0))
        if m <= 0.0:
            return float("inf")
        beta_hat = self.beta(p / m)
        if np.any(beta_hat <= 0):
            return float("inf")
        B = self.budget
        with np.errstate(over="ignore"):
            linear = m * float(self.supply @ (p / m))
        if math.isinf(linear):  # the log terms are finite: the linear term dominates
            return float("inf")
        return linear + float(np.sum(B * (np.log(B) - 1.0 - math.log(m) - np.log(beta_hat))))

    def repair(self, z: np.ndarray) -> np.ndarray:
        """Make ``z`` exactly feasible: clip at 0 and scale down edges on overused resources."""
        z = np.maximum(z, 0.0)
        load = self.C @ z
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(load > self.supply, self.supply / load, 1.0)
        per_entry = ratio[self.C.indices]
        factor = np.minimum.reduceat(per_entry, self.C.indptr[:-1]) if per_entry.size else ratio
        return z * np.minimum(factor, 1.0)

    def residual(self, z: np.ndarray) -> float:
        """Largest supply violation relative to the good's supply (and negativity of ``z``
        relative to its largest entry): unit invariant."""
        s = self.supply
        with np.errstate(divide="ignore", invalid="ignore"):
            over = np.where(s > 0, (self.C @ z - s) / np.where(s > 0, s, 1.0), self.C @ z)
        zmax = float(np.max(np.abs(z), initial=0.0))
        neg = float(np.max(-z, initial=0.0)) / zmax if zmax > 0 else 0.0
        return float(max(np.max(over, initial=0.0), neg))

    def implied_prices(self, z: np.ndarray) -> np.ndarray:
        """Prices at which each buyer's spending, split by utility share, clears (linear)."""
        u = self.utilities(z)
        with np.errstate(divide="ignore", invalid="ignore"):
            spend = self.budget[self.owner] * self.weight * z / u[self.owner]
        used = self.C @ spend  # linear edges use one resource with coefficient 1
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.supply > 0, used / self.supply, 0.0)

    def certificate(self, z: np.ndarray, candidates: list[np.ndarray], *, gap_tol: float,
                    feas_tol: float) -> tuple[Certificate, np.ndarray]:
        """Best (lowest) dual bound over candidate price vectors; returns it with its prices."""
        primal = self.primal_value(z)
        best_p, best_d = candidates[0], float("inf")
        for p in candidates:
            d = self.dual_value(p)
            if d < best_d:
                best_p, best_d = np.maximum(p, 0.0), d
        cert = Certificate(
            kind="eisenberg_gale",
            primal_value=primal,
            dual_bound=best_d,
            gap=max(best_d - primal, 0.0),
            primal_residual=self.residual(z),
            gap_tol=gap_tol,
            feas_tol=feas_tol,
            # the gap is a sum of budget-weighted terms B_i (log ...): judge it against the
            # total budget, not the objective (which shifts by B_i log a when utilities scale)
            scale=float(self.budget.sum()),
        )
        return cert, best_p


def _note(log: EngineLog | None, step: str) -> None:
    if log is not None:
        log.step(step)


def _polished(form: EdgeForm, z: np.ndarray, candidates: list[np.ndarray], noise: float,
              gap_tol: float, feas_tol: float, log: EngineLog | None, step: str
              ) -> tuple[Certificate, np.ndarray, np.ndarray] | None:
    """``(certificate, prices, z)`` of a polished point if it certifies and is no worse than
    ``noise`` (the original's gap, or rounding); the polish ``step`` is then logged. The
    polish's own prices (``candidates[0]``, exact on its support) are kept whenever they
    certify: another candidate's bound may be lower by rounding only, while its prices of
    goods worth little are accurate only to the solver's absolute tolerance."""
    for cands in ((candidates[:1], candidates) if len(candidates) > 1 else (candidates,)):
        cert, prices = form.certificate(z, cands, gap_tol=gap_tol, feas_tol=feas_tol)
        if cert.ok and cert.gap <= noise:
            _note(log, step)
            return cert, prices, z
    return None


def edge_starts(owner: np.ndarray, n: int) -> np.ndarray:
    return np.searchsorted(owner, np.arange(n))


class EngineLog(SolveLog):
    """The log of one market solve (`fairalloc.solvelog.SolveLog`) with the backends it
    solves by: ``conic`` for exponential-cone programs, ``lp`` for the LP polishes (resolved
    on first use), and ``on_solve`` called with ``(backend, raw status)`` after every solve."""

    def __init__(self, conic: Any = None, lp: Any = None,
                 on_solve: Callable[[str, str], None] | None = None) -> None:
        from ..backends import get_backend

        super().__init__()
        self.conic = get_backend("clarabel" if conic is None else conic, need="exp_cone")
        self.lp = lp  # an LP backend (or its name; None: HiGHS), resolved on first use
        self.on_solve = on_solve

    def ran(self, name: str, raw_status: str | None = None) -> None:
        """Record a backend solve (counted by the market's own solve count)."""
        if self.on_solve is not None:
            self.on_solve(name, "" if raw_status is None else str(raw_status))
        self.solved(name, None if raw_status is None else str(raw_status), count=False)
        if raw_status is not None and str(raw_status) in _LIMITS:
            self.stopped(_LIMITS[str(raw_status)])

    def lp_backend(self) -> Any:
        from ..backends import get_backend

        if self.lp is None or isinstance(self.lp, str):
            self.lp = get_backend("highs" if self.lp is None else self.lp, need="lp")
        return self.lp


def unit_scale(x: Any) -> np.ndarray:
    """``x`` where positive, else 1: the canonical unit of each positive quantity."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x, 1.0)


def pow2_scale(x: Any) -> np.ndarray:
    """Power-of-two scale factor of ``x``: 1 where ``x`` is already at unit scale
    (``1/4 <= x < 4``) or ``x <= 0``, else the power of two just above ``x``
    (``x / pow2_scale(x)`` in [1/2, 1)).

    Dividing by it is exact, so normalising data by these factors loses no precision; data
    already at unit scale are solved exactly as given."""
    x = np.asarray(x, dtype=float)
    _, e = np.frexp(np.where(x > 0, x, 1.0))
    return np.where((x >= UNIT_LOW) & (x < UNIT_HIGH) | (x <= 0), 1.0, np.ldexp(1.0, e))


# --------------------------------------------------------------------------------------------
# solvers on the edge form
# --------------------------------------------------------------------------------------------
def solve_conic(form: EdgeForm, *, time_limit: float | None = None, tol: float = CONIC_TOL,
                log: EngineLog | None = None, settings: dict[str, Any] | None = None
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact solve of the edge-form EG program by a conic backend; returns
    (z, prices, iterations).

    Variables ``[z (E), t (n)]``; ``min -B@t`` s.t. ``C z <= s``, ``z >= 0`` and
    ``(t_i, 1, U_i(z))`` in the exponential cone (``t_i <= log U_i``).
    """
    from ..backends import ConicProgram

    log = EngineLog() if log is None else log
    E, n, R = form.num_edges, form.n, form.supply.size
    rows = np.arange(n)
    exp_t = sp.csr_matrix((-np.ones(n), (3 * rows, E + rows)), shape=(3 * n, E + n))
    exp_u = sp.csr_matrix((-form.weight, (3 * form.owner + 2, np.arange(E))), shape=(3 * n, E + n))
    A = sp.vstack([
        sp.hstack([form.C, sp.csc_matrix((R, n))]),
        sp.hstack([-sp.identity(E), sp.csc_matrix((E, n))]),
        exp_t + exp_u,
    ], format="csc")
    b = np.concatenate([form.supply, np.zeros(E), np.tile([0.0, 1.0, 0.0], n)])
    c = np.concatenate([np.zeros(E), -form.budget])
    sol = log.conic.solve_conic(ConicProgram(c=c, A=A, b=b, nonneg=R + E, exp=n), tol=tol,
                                time_limit=time_limit, settings=settings)
    log.ran(sol.backend or log.conic.name, sol.raw_status)
    if not sol.usable:
        raise SolverError(f"{sol.backend} failed on the Eisenberg-Gale program: "
                          f"{sol.raw_status}", backend=sol.backend, status=sol.status,
                          raw_status=sol.raw_status)
    if sol.x is None or sol.z is None:  # pragma: no cover - usable implies a point
        raise SolverError(f"{sol.backend} returned no point", backend=sol.backend,
                          status=sol.status, raw_status=sol.raw_status)
    return sol.x[:E], sol.z[:R], sol.iterations


def resolve_price_scaled(form: EdgeForm, p: np.ndarray, *, time_limit: float | None,
                         log: EngineLog, tol: float = RESCALED_TOL
                          ) -> tuple[np.ndarray, np.ndarray, int]:
    """Re-solve with every good measured in units worth about 1 at the prices ``p``.

    The conic solver resolves prices to an absolute tolerance, so the price of a good whose
    utility is tiny next to a buyer's others is only known to a few digits, and the dual
    bound (a minimum of price / utility ratios) fails. Measuring each resource in units of
    its approximate value (``h_r = 2^round(log2 p_r)``), each edge in units of its largest
    resource use and each buyer's utility in units of its largest edge (all powers of two,
    so exact) makes the re-solve well scaled; ``(z, p, iterations)`` are returned in the
    units of ``form``.
    """
    h = np.where(p > 0, pow2_scale(p), 1.0)
    C2 = sp.diags(h) @ form.C
    k = pow2_scale(np.asarray(abs(C2).max(axis=0).todense()).ravel())
    C3 = (C2 @ sp.diags(1.0 / k)).tocsc()
    w3 = form.weight / k
    g = pow2_scale(np.maximum.reduceat(w3, form.starts))
    w4 = w3 / g[form.owner]
    scaled = EdgeForm(form.owner, w4, C3, form.budget, form.supply * h, form.starts)
    z3, p3, it = solve_conic(scaled, time_limit=time_limit, tol=tol, log=log)
    return z3 / k, p3 * h, it


def proportional_response(form: EdgeForm, *, iters: int, prices: np.ndarray | None
                           ) -> np.ndarray:
    """Proportional-response dynamics (linear markets); returns approximate prices.

    Bids ``b_e`` sum to ``B_i`` per buyer; ``p_r = sum_{e on r} b_e / s_r``; each buyer then
    re-bids in proportion to the utility each edge gave it (Zhang 2011; Birnbaum, Devanur and
    Xiao 2011). Starts from uniform bids, or from bids on the best edges at ``prices``.
    """
    B, owner, w = form.budget, form.owner, form.weight
    res = form.C.indices  # each linear edge uses exactly one resource
    s = form.supply
    if prices is None:
        deg = np.bincount(owner, minlength=form.n).astype(float)
        bids = B[owner] / deg[owner]
    else:
        q = np.maximum(prices[res], TINY_PRICE) / w
        beta = np.minimum.reduceat(q, form.starts)
        share = np.where(q <= beta[owner] * (1 + PR_TIE), 1.0, PR_OFF_SHARE)
        bids = B[owner] * share / np.bincount(owner, weights=share, minlength=form.n)[owner]
    if form.num_edges >= PR_DENSE_SHARE * form.n * s.size:
        return _proportional_response_dense(form, bids, iters)
    for _ in range(iters):
        p = np.bincount(res, weights=bids, minlength=s.size) / s
        x = bids / p[res]
        gain = w * x
        u = np.bincount(owner, weights=gain, minlength=form.n)
        bids = B[owner] * gain / u[owner]
    return np.bincount(res, weights=bids, minlength=s.size) / s


def _proportional_response_dense(form: EdgeForm, bids: np.ndarray, iters: int) -> np.ndarray:
    """`proportional_response` on the dense ``(n, R)`` grid of a market whose buyers value
    most goods (the same rounds; row and column sums instead of scattered bincounts)."""
    n, R = form.n, form.supply.size
    res = form.C.indices
    W = np.zeros((n, R))
    W[form.owner, res] = form.weight
    bid = np.zeros((n, R))
    bid[form.owner, res] = bids
    B = form.budget[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(iters):
            total = bid.sum(axis=0)
            p = total / form.supply
            bid *= W
            bid /= np.where(total > 0, p, 1.0)  # a good no one bids on has no edge
            bid *= B / bid.sum(axis=1, keepdims=True)
        return bid.sum(axis=0) / form.supply


def demand_polish(form: EdgeForm, z: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Each buyer's demand at prices ``p``: its cheapest edges only, spending exactly ``B_i``.

    Keeps the solver's split among a buyer's cheapest edges (ties), scales it so the buyer
    spends its budget at ``p``, then repairs feasibility. At an exact equilibrium this is the
    identity; near one it removes the interior-point solver's residual mass on non-optimal
    edges, which is what budget clearing and envy-freeness are sensitive to.
    """
    q = (form.C.T @ p) / form.weight
    best = form.beta(p)
    cheap = q <= best[form.owner] * (1 + DEMAND_TIE)
    zc = np.where(cheap, np.maximum(z, 0.0), 0.0)
    spend = np.bincount(form.owner, weights=q * form.weight * zc, minlength=form.n)
    lonely = spend <= 0  # numerically no mass on a cheapest edge: buy the first one
    if lonely.any():
        first = np.minimum.reduceat(np.where(cheap, np.arange(form.num_edges), form.num_edges),
                                    form.starts)
        zc[first[lonely]] = 1.0
        spend = np.bincount(form.owner, weights=q * form.weight * zc, minlength=form.n)
    return form.repair(zc * (form.budget / spend)[form.owner])


def demand_incumbent(form: EdgeForm, *, linear: bool, gap_tol: float, feas_tol: float
                     ) -> tuple[np.ndarray, np.ndarray, Certificate] | None:
    """A feasible point with positive utilities and its certificate, without a solver:
    proportional-response prices (linear) or uniform prices (Leontief), then each buyer's
    demand at them (`demand_polish`), made feasible. ``(z, prices, certificate)`` or ``None``
    when no finite bound comes out."""
    try:
        with np.errstate(all="ignore"):
            if linear:
                p = proportional_response(form, iters=INCUMBENT_PR_ITERS, prices=None)
            else:
                p = np.full(form.supply.size, float(form.budget.sum() / form.supply.sum()))
            if not np.all(np.isfinite(p)):
                return None
            z = demand_polish(form, np.ones(form.num_edges), p)
            cert, best_p = form.certificate(z, [p], gap_tol=gap_tol, feas_tol=feas_tol)
    except (ArithmeticError, ValueError, IndexError):
        return None
    if not np.isfinite(cert.gap):
        return None
    return z, best_p, cert


def _newton_dual_polish(form: EdgeForm, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Projected Newton on the dual of a market with one edge per buyer (static Leontief).

    The dual ``D(p) = s@p + sum_i B_i (log B_i - 1 - log c_i(p))`` with ``c = C^T p`` is smooth
    and strictly convex on the goods that are demanded; its KKT conditions are exactly market
    clearing (``g = s - C u >= 0``, ``p >= 0``, ``p g = 0``) with ``u_i = B_i / c_i``. A few
    Newton steps from the interior-point prices reach machine precision. Returns ``(z, p)``.
    """
    B, s = form.budget, form.supply
    # one bundle per buyer: C is (goods x buyers); dense is faster while it is small
    small = form.C.shape[0] * form.C.shape[1] <= DENSE_NEWTON_MAX_ENTRIES
    C: Any = form.C.toarray() if small else form.C
    p = np.maximum(p, 0.0).copy()
    scale = float(p.max()) if p.max() > 0 else 1.0
    p[p < NEWTON_ZERO_PRICE * scale] = 0.0
    dual = form.dual_value(p)
    for _ in range(50):
        c = C.T @ p
        u = B / c
        g = s - C @ u
        # epsilon-active set (Bertsekas' projected Newton): an oversupplied good (g > 0)
        # whose price is already negligible is fixed at price 0
        fixed = (p <= NEWTON_FIX_PRICE * scale) & (g >= 0)
        if np.max(np.abs(np.where(fixed, 0.0, g)) / (1.0 + s), initial=0.0) < NEWTON_KKT_TOL:
            p = np.where(fixed, 0.0, p)
            break  # KKT: market clearing on every good not fixed at price 0
        free = ~fixed
        Cf = C[free] if isinstance(C, np.ndarray) else C[free].toarray()
        # C_f diag(B / c^2) C_f^T by BLAS syrk (upper triangle, mirrored): np.dot and matmul
        # of the two factors hit paths ten times slower on a busy machine
        H = dsyrk(1.0, Cf * (np.sqrt(B) / c))
        H = H + np.triu(H, 1).T
        step = np.where(fixed, -p, 0.0)  # fixed goods go to price 0
        # least squares: degenerate markets (several goods always used together) make H
        # singular; the minimum-norm step still decreases D
        if not (np.all(np.isfinite(H)) and np.all(np.isfinite(g))):
            break  # LAPACK would print an error on NaN input
        try:
            step[free] = -np.linalg.lstsq(H, g[free], rcond=None)[0]
        except np.linalg.LinAlgError:  # SVD did not converge: keep the prices reached so far
            break
        if not np.all(np.isfinite(step)):
            break
        t = 1.0
        slack = NEWTON_FLAT_DUAL * max(1.0, abs(dual))  # D is flat to rounding near the optimum
        while t > NEWTON_MIN_STEP:
            trial = np.maximum(p + t * step, 0.0)
            d_trial = form.dual_value(trial)
            if d_trial <= dual + slack:
                break
            t *= 0.5
        if t <= NEWTON_MIN_STEP or np.array_equal(trial, p):
            break
        p, dual = trial, min(dual, d_trial)
    z = B / (C.T @ p)
    return form.repair(z), p


def certify_general(form: EdgeForm, z: np.ndarray, p: np.ndarray, *, gap_tol: float,
                    feas_tol: float, log: EngineLog | None = None
                     ) -> tuple[Certificate, np.ndarray, np.ndarray]:
    """Certificate of a (Leontief) market point; prefers the demand-polished allocation."""
    cert, best_p = form.certificate(z, [p], gap_tol=gap_tol, feas_tol=feas_tol)
    noise = max(cert.gap, POLISH_NOISE * max(1.0, abs(cert.primal_value)))
    if form.num_edges == form.n:  # one bundle per buyer: the dual is smooth, polish it
        try:
            with np.errstate(all="ignore"):
                z2, p2 = _newton_dual_polish(form, best_p)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, ZeroDivisionError):
            pass  # the polish is an improvement only: keep the interior-point point
        else:
            kept = _polished(form, z2, [p2], noise, gap_tol, feas_tol, log, "newton-polish")
            if kept is not None:
                return kept
    else:  # several bundles per buyer (volatile Leontief): Newton on the support's KKT system
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                polished = _support_newton_polish(form, z, best_p)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, ZeroDivisionError,
                RuntimeError):
            polished = None
        if polished is not None:
            kept = _polished(form, polished[0], [polished[1], best_p], noise, gap_tol, feas_tol,
                             log, "support-newton-polish")
            if kept is not None:
                if form.dual_value(polished[1]) > kept[0].dual_bound:
                    # an exact allocation certified by the interior-point prices only (a
                    # degenerate market: a sold-out good priced 0): exact prices on the goods
                    # whose price is not negligible
                    kept = _exact_prices(form, z, best_p, kept, gap_tol, feas_tol)
                return kept
    z2 = demand_polish(form, z, best_p)
    cert2, best_p2 = form.certificate(z2, [best_p], gap_tol=gap_tol, feas_tol=feas_tol)
    if (cert2.ok and cert2.gap <= noise) or not cert.ok:
        _note(log, "demand-polish")
        return cert2, best_p2, z2
    return cert, best_p, z


def _support_newton_polish(form: EdgeForm, z: np.ndarray, p: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact equilibrium on the support of an approximate one (see `_newton_on_support`),
    trying the support read off complementary pairs, then a stricter one (utility share above
    1e-6: an interior point may leave a bundle barely used whose reduced cost is still tiny)."""
    for strict in (False, True):
        out = _newton_on_support(form, z, p, strict=strict)
        if out is not None:
            return out
    return None


def _exact_prices(form: EdgeForm, z: np.ndarray, p: np.ndarray,
                  kept: tuple[Certificate, np.ndarray, np.ndarray], gap_tol: float,
                  feas_tol: float) -> tuple[Certificate, np.ndarray, np.ndarray]:
    """``kept``, or the equilibrium on the support whose priced goods are those with a
    non-negligible price if that certifies with its own prices at least as well."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _newton_on_support(form, z, p, strict=False, priced_only=True)
    except (np.linalg.LinAlgError, FloatingPointError, ValueError, ZeroDivisionError,
            RuntimeError):
        out = None
    if out is None:
        return kept
    cert, prices = form.certificate(out[0], [out[1]], gap_tol=gap_tol, feas_tol=feas_tol)
    return (cert, prices, out[0]) if cert.ok and cert.gap <= kept[0].gap else kept


def _newton_on_support(form: EdgeForm, z: np.ndarray, p: np.ndarray, *, strict: bool,
                       priced_only: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact equilibrium on the support of an approximate one (several bundles per buyer).

    On the support ``S`` (edges carrying utility) and the priced goods ``R``, the KKT system
    is square: ``(C^T p)_e / w_e = B_i / U_i`` for ``e in S`` (every used bundle is one of the
    buyer's cheapest per unit of utility) and ``(C z)_r = s_r`` for ``r in R`` (priced goods
    are sold out). Newton's method on it from the interior-point point converges
    quadratically; the result is returned only if it is an equilibrium on the whole market
    (``z, p >= 0``, no unused bundle cheaper, no unpriced good over-used) -- the caller's
    certificate has the last word. ``None`` when the support is degenerate (singular system).
    """
    from scipy.sparse.linalg import spsolve

    n, B, s, w = form.n, form.budget, form.supply, form.weight
    u = form.utilities(z)
    pmax = float(np.max(p, initial=0.0))
    if pmax <= 0 or np.any(u <= 0):
        return None
    # complementary pairs: an interior point has (share, reduced cost) and (price, slack) both
    # small-times-small; the larger of each pair says which side of the support it is on
    share = w * z / u[form.owner]
    reduced = (form.C.T @ p) / w / form.beta(p)[form.owner] - 1.0
    S = np.flatnonzero((share > STRICT_SHARE) if strict else (share > reduced))
    slack = np.where(s > 0, (s - form.C @ z) / np.where(s > 0, s, 1.0), np.inf)
    # priced goods: price above slack, or (``priced_only``) a price that is not negligible --
    # a sold-out good whose equilibrium price is 0 (degenerate) has a small interior price
    R = np.flatnonzero((p / pmax > PRICED_GOOD) if priced_only else (p / pmax > slack))
    if S.size == 0 or R.size == 0:
        return None
    CS = form.C[:, S].tocsr()[R].tocsc()  # |R| x |S|
    own, wS = form.owner[S], w[S]
    member = sp.csr_matrix((np.ones(S.size), (np.arange(S.size), own)), shape=(S.size, n))
    zs, pr = z[S].astype(float), p[R].astype(float)
    k = R.size
    J11 = (sp.diags(1.0 / wS) @ CS.T).tocsc()
    for _ in range(30):
        U = np.bincount(own, weights=wS * zs, minlength=n)
        if np.any(U[own] <= 0):
            return None
        beta = B / U
        F1 = (CS.T @ pr) / wS - beta[own]
        F2 = CS @ zs - s[R]
        if max(np.max(np.abs(F1) / beta[own]), np.max(np.abs(F2) / s[R])) < SUPPORT_NEWTON_TOL:
            break
        J12 = member @ sp.diags(B / U**2) @ member.T @ sp.diags(wS)
        J = sp.bmat([[J11, J12], [None, CS]], format="csc")
        rhs = -np.r_[F1, F2]
        delta = spsolve(J, rhs)
        if not np.all(np.isfinite(delta)):
            # singular (e.g. identical buyers): the system is consistent at an equilibrium,
            # so the minimum-norm step still converges
            if J.shape[0] > DENSE_LSTSQ_MAX_ROWS:
                return None
            delta = np.linalg.lstsq(J.toarray(), rhs, rcond=None)[0]
            if not np.all(np.isfinite(delta)):
                return None
        pr = pr + delta[:k]
        zs = zs + delta[k:]
    else:
        return None
    if np.any(pr < 0) or np.any(zs < 0):
        return None
    p_new = np.zeros_like(p)
    p_new[R] = pr
    z_new = np.zeros_like(z)
    z_new[S] = zs
    return form.repair(z_new), p_new


def _polish_linear(form: EdgeForm, z: np.ndarray, p: np.ndarray, tie: float | None = TIE_TIGHT
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact equilibrium on the support of an approximate one (linear markets).

    On the support ``S`` (edges that carry utility), equilibrium prices satisfy
    ``log p_r - log beta_i = log w_e`` (every bought good has the buyer's best bang-per-buck)
    and, in each connected component of ``S``, ``sum_r p_r s_r = sum_i B_i`` (budgets clear).
    Spending ``b_e`` is then a flow with buyer sums ``B_i`` and good sums ``p_r s_r``. Both
    are sparse linear systems. Returns ``(z, p)`` or ``None`` when the support is not an
    equilibrium support (negative flow); the caller keeps whichever certifies better.

    The candidate support is read off the prices (edges within a relative ``tie`` of the
    buyer's best bang-per-buck that carry utility) or, with ``tie=None``, off the allocation
    alone (edges that carry a fraction of their good's supply): the latter survives goods
    whose utility is tiny next to a buyer's others, whose prices an interior-point solver
    only resolves to its absolute tolerance.
    """
    u = form.utilities(z)
    if tie is None:
        share = z / form.supply[form.C.indices]
        cand = np.flatnonzero(share > SUPPORT_SHARE)
    else:
        q = (form.C.T @ p) / form.weight
        best = form.beta(p)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = form.weight * z / u[form.owner]
        # candidate support: edges at the buyer's best bang-per-buck that carry utility ...
        cand = np.flatnonzero((q <= best[form.owner] * (1 + tie)) & (share > SUPPORT_SHARE))
    if cand.size == 0:
        return None
    for _ in range(6):
        out = _forest_equilibrium(form, cand, share)
        if out is None:
            return None
        on, price, flow = out
        q = (form.C.T @ price) / form.weight
        best = form.beta(price)
        wrong = on & (q > best[form.owner] * (1 + FOREST_WRONG_EDGE))
        if not wrong.any():
            z_new = np.zeros_like(z)
            z_new[on] = flow / price[form.C.indices[on]]
            return form.repair(z_new), price
        cand = cand[~np.isin(cand, np.flatnonzero(wrong))]
    return None


def _forest_equilibrium(form: EdgeForm, cand: np.ndarray, share: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Prices and spending of the equilibrium supported on a max-flow forest of ``cand``."""
    from scipy.sparse.csgraph import connected_components, minimum_spanning_tree
    from scipy.sparse.linalg import spsolve

    n, R = form.n, form.supply.size
    # a maximum-flow spanning forest (generic equilibria have forest supports)
    nodes = n + R
    graph = sp.csr_matrix((1.0 / share[cand], (form.owner[cand], n + form.C.indices[cand])),
                          shape=(nodes, nodes))
    forest = minimum_spanning_tree(graph).tocoo()
    # map the forest's (node, node) pairs back to edges; it may list an edge as (good, buyer)
    keys = form.owner[cand] * nodes + n + form.C.indices[cand]
    order = np.argsort(keys)
    lo, hi = np.minimum(forest.row, forest.col), np.maximum(forest.row, forest.col)
    found = order[np.searchsorted(keys[order], lo * nodes + hi)]
    on = np.zeros(form.num_edges, dtype=bool)
    on[cand[found]] = True
    out = support_prices(form, np.flatnonzero(on), forest=True)
    if out is None:
        return None
    price, _, _ = out
    owner = form.owner[on]
    # spending flow on the forest: buyer sums B_i, good sums p_r s_r (one redundant row per
    # component). The row dropped is the component's largest balance: every other row is then
    # solved without cancelling against it (dropping the first buyer's, a budget 1e-296 of
    # the other's, gave it its good's rounding: 5e-16 of the supply, 1e280 x its share)
    rhs_flow = np.r_[form.budget, price * form.supply]
    edges = np.flatnonzero(on)
    ends = np.r_[owner, n + form.C.indices[edges]]
    inc = sp.csr_matrix((np.ones(2 * edges.size), (ends, np.tile(np.arange(edges.size), 2))),
                        shape=(nodes, edges.size))
    _, label = connected_components(inc @ inc.T, directed=False)
    used = np.flatnonzero(np.diff(inc.indptr) > 0)
    by_comp = used[np.lexsort((-rhs_flow[used], label[used]))]
    first = np.r_[True, label[by_comp][1:] != label[by_comp][:-1]][: by_comp.size]
    keep = np.zeros(nodes, dtype=bool)
    keep[used] = True
    keep[by_comp[first]] = False
    try:
        flow = np.atleast_1d(spsolve(inc[keep].tocsc(), rhs_flow[keep]))
    except Exception:  # pragma: no cover
        return None
    if not np.all(np.isfinite(flow)) or np.any(flow < -NEG_FLOW_TOL * form.budget[owner]):
        return None
    return on, price, np.maximum(flow, 0.0)


def support_prices(form: EdgeForm, edges: np.ndarray, *, forest: bool | None
                   ) -> tuple[np.ndarray, sp.csc_matrix, np.ndarray] | None:
    """Prices with ``log p_r - log beta_i = log w_e`` on ``edges`` (linear markets).

    Buyers are nodes ``0..n-1`` and goods ``n..n+R-1``; one node per connected component of
    ``edges`` is fixed at 0 and each component is then scaled so that its goods' value
    ``sum_r p_r s_r`` equals its buyers' budgets. On a ``forest`` the system is square and
    solved exactly; otherwise (supports with cycles, consistent at equilibrium) by least
    squares; ``forest=None`` solves a square system exactly and any other by least squares
    (partial allocation's dense support polish). Returns ``(prices, M_free, free)`` -- the
    incidence matrix on the free nodes is reused for the spending flow -- or ``None`` when the
    system is singular.
    """
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import spsolve

    n, R = form.n, form.supply.size
    owner, res, k = form.owner[edges], form.C.indices[edges], edges.size
    nodes = n + R
    # incidence: +1 on the good (log p), -1 on the buyer (log beta)
    M = sp.csr_matrix((np.r_[np.ones(k), -np.ones(k)], (np.r_[np.arange(k), np.arange(k)],
                       np.r_[n + res, owner])), shape=(k, nodes))
    ncomp, label = connected_components(
        sp.csr_matrix((np.ones(k), (owner, n + res)), shape=(nodes, nodes)), directed=False)
    used = np.zeros(nodes, dtype=bool)
    used[owner] = True
    used[n + res] = True
    order = np.flatnonzero(used)
    free = used.copy()
    free[order[np.unique(label[order], return_index=True)[1]]] = False
    Mf = M[:, free].tocsc()
    rhs = np.log(form.weight[edges])
    logv = np.zeros(nodes)
    try:
        square = Mf.shape[0] == Mf.shape[1]
        if forest or (forest is None and square):
            if not square:
                return None
            logv[free] = np.atleast_1d(spsolve(Mf, rhs))
        else:
            logv[free] = np.atleast_1d(spsolve((Mf.T @ Mf).tocsc(), Mf.T @ rhs))
    except Exception:  # pragma: no cover - singular: keep the unpolished point
        return None
    gidx = np.flatnonzero(used[n:])
    bud = np.bincount(label[:n][used[:n]], weights=form.budget[used[:n]], minlength=ncomp)
    val = np.bincount(label[n + gidx], weights=np.exp(logv[n + gidx]) * form.supply[gidx],
                      minlength=ncomp)
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(bud / val)
    price = np.zeros(R)
    price[gidx] = np.exp(logv[n + gidx] + shift[label[n + gidx]])
    if not np.all(np.isfinite(price)):
        return None
    return price, Mf, free


def _log_prices(form: EdgeForm, z: np.ndarray, p: np.ndarray, tie: float = TIE_TIGHT
                ) -> np.ndarray | None:
    """Prices on every tied best edge that carries utility (least squares; cycles allowed).

    Unlike the forest systems of `_polish_linear` this accepts supports with cycles
    (degenerate markets), where the equations are consistent at equilibrium.
    """
    q = (form.C.T @ p) / form.weight
    best = form.beta(p)
    u = form.utilities(z)
    cand = np.flatnonzero((q <= best[form.owner] * (1 + tie))
                          & (form.weight * z > SUPPORT_UTILITY_SHARE * u[form.owner]))
    if cand.size == 0:
        return None
    out = support_prices(form, cand, forest=False)
    return None if out is None else out[0]


def _flow_at_prices(form: EdgeForm, p: np.ndarray, log: EngineLog | None = None
                    ) -> np.ndarray | None:
    """Equilibrium allocation at prices ``p`` by a transportation LP (linear markets).

    Spending ``b_e >= 0`` on each buyer's best bang-per-buck edges with buyer sums ``B_i`` and
    good sums ``p_r s_r`` (slack allowed, minimised). Handles degenerate markets whose support
    has cycles, where `_polish_linear`'s forest systems are singular.
    """
    from ..backends import LinearProgram
    from ..errors import FairallocError

    log = EngineLog() if log is None else log

    q = (form.C.T @ p) / form.weight
    best = form.beta(p)
    if np.any(best <= 0):
        return None
    cand = np.flatnonzero(q <= best[form.owner] * (1 + FLOW_TIE))
    k, n, R = cand.size, form.n, form.supply.size
    res = form.C.indices[cand]
    # columns: b (k), slack_plus (R), slack_minus (R); rows: buyers (= B), goods (= p s)
    A = sp.vstack([
        sp.hstack([sp.csr_matrix((np.ones(k), (form.owner[cand], np.arange(k))), shape=(n, k)),
                   sp.csr_matrix((n, 2 * R))]),
        sp.hstack([sp.csr_matrix((np.ones(k), (res, np.arange(k))), shape=(R, k)),
                   sp.identity(R), -sp.identity(R)]),
    ])
    rhs = np.r_[form.budget, p * form.supply]
    lp = LinearProgram.build(np.r_[np.zeros(k), np.ones(2 * R)], A, rhs, rhs, 0.0)
    backend = log.lp_backend()
    try:
        sol = backend.solve_lp(lp)
    except FairallocError:  # the polish is optional: keep the unpolished point
        return None
    log.ran(sol.backend or backend.name)
    if sol.status != "optimal" or sol.x is None:
        return None
    z = np.zeros(form.num_edges)
    z[cand] = np.maximum(sol.x[:k], 0.0) / p[res]
    return form.repair(z)


def certify_linear(form: EdgeForm, z: np.ndarray, p: np.ndarray, *, gap_tol: float,
                   feas_tol: float, log: EngineLog | None = None
                    ) -> tuple[Certificate, np.ndarray, np.ndarray]:
    """Certificate of a linear market point, improved by `_polish_linear` when it helps."""
    cert, best_p = form.certificate(z, [p, form.implied_prices(z)], gap_tol=gap_tol,
                                    feas_tol=feas_tol)
    # prefer an exactly balanced equilibrium (the gap is second order in allocation errors,
    # so an interior-point point can certify while its utilities are off by ~sqrt(gap))
    # a polished point may not be worse than the original beyond rounding
    noise = max(cert.gap, POLISH_NOISE * max(1.0, abs(cert.primal_value)))
    # ties (edges at the buyer's best bang-per-buck) are read off the solver's prices, whose
    # relative accuracy is ~sqrt of the solver's tolerance: try a tight, then a loose reading
    for tie in (TIE_TIGHT, TIE_LOOSE):
        polished = _polish_linear(form, z, best_p, tie)
        if polished is not None:
            kept = _polished(form, polished[0], [polished[1], best_p], noise, gap_tol, feas_tol,
                             log, "forest-polish")
            if kept is not None:
                return kept
        p3 = _log_prices(form, z, best_p, tie)
        z3 = None if p3 is None else _flow_at_prices(form, p3, log)
        if p3 is not None and z3 is not None:
            kept = _polished(form, z3, [p3], noise, gap_tol, feas_tol, log, "flow-polish")
            if kept is not None:
                return kept
    # badly scaled utilities: read the support off the allocation instead of the prices
    polished = _polish_linear(form, z, best_p, None)
    if polished is not None:
        z2, p2 = polished
        cert2, best_p2 = form.certificate(z2, [p2, best_p], gap_tol=gap_tol, feas_tol=feas_tol)
        if cert2.ok and (cert2.gap <= noise or not cert.ok):
            _note(log, "allocation-forest-polish")
            return cert2, best_p2, z2
    return cert, best_p, z
