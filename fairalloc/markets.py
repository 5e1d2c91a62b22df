"""Eisenberg-Gale markets: linear and Leontief, static and over time (volatile).

Shockwave (shockwave.txt §4.1, App. C-D) defines the *volatile Fisher market*: resources bought
in round ``t`` are consumed in round ``t``, buyer ``i`` has budget ``B_i`` for the whole window,
and its utility is ``U_i = sum_t u_it(x_it)`` with per-round linear or Leontief ``u_it``. The
equilibrium is the optimum of the Eisenberg-Gale program

    maximise  sum_i B_i log U_i   s.t.  sum_i x_ijt <= s_jt,  x >= 0,

and the prices are the multipliers of the supply constraints. The static market is ``T = 1``.

All four markets share one *edge form*, which this module solves and certifies:
buyer ``i`` owns edges ``e`` (a good for linear utilities, a per-round bundle for Leontief);
running edge ``e`` at level ``z_e`` yields ``w_e z_e`` utility and consumes ``C[r, e] z_e`` of
resource ``r``. Then ``U_i = sum_{e in E_i} w_e z_e`` and the constraints are ``C z <= s``.
Its dual function has a closed form, used as the certificate (independent of any solver):

    D(p) = s @ p + sum_i B_i (log B_i - 1 - log beta_i(p)),
    beta_i(p) = min_{e in E_i} (C^T p)_e / w_e          (price of one unit of utility)

and ``D(p) >= OPT >= P(z) = sum_i B_i log U_i(z)`` for every ``p >= 0`` and feasible ``z``.

Three exact methods solve it (``method=``):

* ``"fast"`` (linear only): proportional-response dynamics to rough prices, then an exact conic
  solve restricted to each buyer's near-best edges, re-adding every edge the full-market
  certificate shows to be violated until the certified gap meets ``gap_tol``;
* ``"conic"``: the whole edge-form program, handed to Clarabel as sparse conic data;
* ``"cvxpy"``: the program as a cvxpy model (the composable builder :class:`FisherMarket`;
  constraints and objective terms can be added), solved by Clarabel (named explicitly).

``"auto"`` picks ``"cvxpy"`` for composed models, ``"fast"`` for linear markets with more than
2,000 edges, and ``"conic"`` otherwise.

Units: every market is first normalised by exact powers of two (budgets to mean ~1, each good's
supply to ~1, each buyer's utility row to largest entry ~1), solved and certified there, and
mapped back (``x = f_s x'``, ``p = f_b p' / f_s``); the certificate's gap is judged against the
total budget (``Certificate.scale``), so results and verdicts do not depend on the units of
budgets, supply or utilities (see ``formulations/eisenberg_gale.md``).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._compose import Composable
from ._validation import (
    as_array,
    as_option,
    as_positive_int,
    as_time_limit,
    as_tolerance,
)
from .errors import FairallocError, InputError, SolverError
from .results import Certificate, Result, SolveStats, Status, require_pandas
from .tolerances import FEAS_TOL, GAP_TOL

__all__ = ["FisherMarket", "MarketResult", "fisher_market", "volatile_fisher_market"]

KINDS = ("linear", "leontief")
METHODS = ("auto", "fast", "conic", "cvxpy")
_FAST_MIN_EDGES = 2000


# --------------------------------------------------------------------------------------------
# edge form
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _EdgeForm:
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

    def subset(self, keep: np.ndarray) -> _EdgeForm:
        """The edge form restricted to the edges ``keep`` (must keep >= 1 edge per buyer)."""
        owner = self.owner[keep]
        return _EdgeForm(owner, self.weight[keep], self.C[:, keep].tocsc(), self.budget,
                         self.supply, _starts(owner, self.n))

    # --- certificate pieces ---------------------------------------------------------------
    def utilities(self, z: np.ndarray) -> np.ndarray:
        return np.bincount(self.owner, weights=self.weight * z, minlength=self.n)

    def primal_value(self, z: np.ndarray) -> float:
        u = self.utilities(z)
        with np.errstate(divide="ignore"):
            return float(self.budget @ np.log(u))

    def beta(self, prices: np.ndarray) -> np.ndarray:
        """Cheapest price of one unit of utility for each buyer: ``min_e (C^T p)_e / w_e``."""
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


def _starts(owner: np.ndarray, n: int) -> np.ndarray:
    return np.searchsorted(owner, np.arange(n))


class _Log:
    """What one public solve ran: the backends used (in order), the last conic solve's raw
    status, and the backends themselves (``conic`` for exponential-cone programs, ``lp`` for the
    LP polishes)."""

    def __init__(self, conic: Any = None, lp: Any = None) -> None:
        from .backends import get_backend

        self.conic = get_backend("clarabel" if conic is None else conic, need="exp_cone")
        self.lp = lp
        self.used: list[str] = []
        self.raw_status = ""
        self.hit_limit = False  # a solve stopped at its time or iteration limit

    def ran(self, name: str, raw_status: str | None = None) -> None:
        if name not in self.used:
            self.used.append(name)
        if raw_status is not None:
            self.raw_status = str(raw_status)
            if self.raw_status in ("MaxTime", "MaxIterations"):
                self.hit_limit = True

    def lp_backend(self) -> Any:
        from .backends import get_backend

        if self.lp is None:
            self.lp = get_backend("highs", need="lp")
        return self.lp

    @property
    def backend(self) -> str:
        return "+".join(self.used) if self.used else "none"


def _unit(x: Any) -> np.ndarray:
    """``x`` where positive, else 1: the canonical unit of each positive quantity."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x, 1.0)


def _pow2(x: Any) -> np.ndarray:
    """Power-of-two scale factor of ``x``: 1 where ``x`` is already at unit scale
    (``1/4 <= x < 4``) or ``x <= 0``, else the power of two just above ``x``
    (``x / _pow2(x)`` in [1/2, 1)).

    Dividing by it is exact, so normalising data by these factors loses no precision; data
    already at unit scale are solved exactly as given."""
    x = np.asarray(x, dtype=float)
    _, e = np.frexp(np.where(x > 0, x, 1.0))
    return np.where((x >= 0.25) & (x < 4.0) | (x <= 0), 1.0, np.ldexp(1.0, e))


# --------------------------------------------------------------------------------------------
# solvers on the edge form
# --------------------------------------------------------------------------------------------
def _solve_conic(form: _EdgeForm, *, time_limit: float | None = None, tol: float = 1e-9,
                 log: _Log | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact solve of the edge-form EG program by a conic backend; returns
    (z, prices, iterations).

    Variables ``[z (E), t (n)]``; ``min -B@t`` s.t. ``C z <= s``, ``z >= 0`` and
    ``(t_i, 1, U_i(z))`` in the exponential cone (``t_i <= log U_i``).
    """
    from .backends import ConicProgram

    log = _Log() if log is None else log
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
    sol = log.conic.solve_conic(
        ConicProgram(c=c, A=A, b=b, nonneg=R + E, exp=n), tol=tol, time_limit=time_limit)
    log.ran(sol.backend or log.conic.name, sol.raw_status)
    if not sol.usable:
        raise SolverError(f"{sol.backend} failed on the Eisenberg-Gale program: "
                          f"{sol.raw_status}", backend=sol.backend, status=sol.raw_status)
    if sol.x is None or sol.z is None:  # pragma: no cover - usable implies a point
        raise SolverError(f"{sol.backend} returned no point", backend=sol.backend,
                          status=sol.raw_status)
    return sol.x[:E], sol.z[:R], sol.iterations


def _resolve_price_scaled(form: _EdgeForm, p: np.ndarray, *, time_limit: float | None,
                          log: _Log, tol: float = 1e-10
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
    h = np.where(p > 0, _pow2(p), 1.0)
    C2 = sp.diags(h) @ form.C
    k = _pow2(np.asarray(abs(C2).max(axis=0).todense()).ravel())
    C3 = (C2 @ sp.diags(1.0 / k)).tocsc()
    w3 = form.weight / k
    g = _pow2(np.maximum.reduceat(w3, form.starts))
    w4 = w3 / g[form.owner]
    scaled = _EdgeForm(form.owner, w4, C3, form.budget, form.supply * h, form.starts)
    z3, p3, it = _solve_conic(scaled, time_limit=time_limit, tol=tol, log=log)
    return z3 / k, p3 * h, it


def _proportional_response(form: _EdgeForm, *, iters: int, prices: np.ndarray | None
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
        q = np.maximum(prices[res], 1e-300) / w
        beta = np.minimum.reduceat(q, form.starts)
        share = np.where(q <= beta[owner] * (1 + 1e-6), 1.0, 1e-3)
        bids = B[owner] * share / np.bincount(owner, weights=share, minlength=form.n)[owner]
    for _ in range(iters):
        p = np.bincount(res, weights=bids, minlength=s.size) / s
        x = bids / p[res]
        gain = w * x
        u = np.bincount(owner, weights=gain, minlength=form.n)
        bids = B[owner] * gain / u[owner]
    return np.bincount(res, weights=bids, minlength=s.size) / s


def _demand_polish(form: _EdgeForm, z: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Each buyer's demand at prices ``p``: its cheapest edges only, spending exactly ``B_i``.

    Keeps the solver's split among a buyer's cheapest edges (ties), scales it so the buyer
    spends its budget at ``p``, then repairs feasibility. At an exact equilibrium this is the
    identity; near one it removes the interior-point solver's residual mass on non-optimal
    edges, which is what budget clearing and envy-freeness are sensitive to.
    """
    q = (form.C.T @ p) / form.weight
    best = form.beta(p)
    cheap = q <= best[form.owner] * (1 + 1e-7)
    zc = np.where(cheap, np.maximum(z, 0.0), 0.0)
    spend = np.bincount(form.owner, weights=q * form.weight * zc, minlength=form.n)
    lonely = spend <= 0  # numerically no mass on a cheapest edge: buy the first one
    if lonely.any():
        first = np.minimum.reduceat(np.where(cheap, np.arange(form.num_edges), form.num_edges),
                                    form.starts)
        zc[first[lonely]] = 1.0
        spend = np.bincount(form.owner, weights=q * form.weight * zc, minlength=form.n)
    return form.repair(zc * (form.budget / spend)[form.owner])


def _newton_dual_polish(form: _EdgeForm, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Projected Newton on the dual of a market with one edge per buyer (static Leontief).

    The dual ``D(p) = s@p + sum_i B_i (log B_i - 1 - log c_i(p))`` with ``c = C^T p`` is smooth
    and strictly convex on the goods that are demanded; its KKT conditions are exactly market
    clearing (``g = s - C u >= 0``, ``p >= 0``, ``p g = 0``) with ``u_i = B_i / c_i``. A few
    Newton steps from the interior-point prices reach machine precision. Returns ``(z, p)``.
    """
    B, s = form.budget, form.supply
    # one bundle per buyer: C is (goods x buyers); dense is faster while it is small
    C: Any = form.C.toarray() if form.C.shape[0] * form.C.shape[1] <= 4_000_000 else form.C
    p = np.maximum(p, 0.0).copy()
    scale = float(p.max()) if p.max() > 0 else 1.0
    p[p < 1e-12 * scale] = 0.0
    dual = form.dual_value(p)
    for _ in range(50):
        c = C.T @ p
        u = B / c
        g = s - C @ u
        # epsilon-active set (Bertsekas' projected Newton): an oversupplied good (g > 0)
        # whose price is already negligible is fixed at price 0
        fixed = (p <= 1e-8 * scale) & (g >= 0)
        if np.max(np.abs(np.where(fixed, 0.0, g)) / (1.0 + s), initial=0.0) < 1e-13:
            p = np.where(fixed, 0.0, p)
            break  # KKT: market clearing on every good not fixed at price 0
        free = ~fixed
        Cf = C[free] if isinstance(C, np.ndarray) else C[free].toarray()
        H = np.dot(Cf * (B / c**2), Cf.T)  # (np.dot: matmul hit a slow BLAS path here)
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
        slack = 1e-13 * max(1.0, abs(dual))  # D is flat to rounding near the optimum
        while t > 1e-12:
            trial = np.maximum(p + t * step, 0.0)
            d_trial = form.dual_value(trial)
            if d_trial <= dual + slack:
                break
            t *= 0.5
        if t <= 1e-12 or np.array_equal(trial, p):
            break
        p, dual = trial, min(dual, d_trial)
    z = B / (C.T @ p)
    return form.repair(z), p


def _certify_general(form: _EdgeForm, z: np.ndarray, p: np.ndarray, *, gap_tol: float,
                     feas_tol: float, log: _Log | None = None
                     ) -> tuple[Certificate, np.ndarray, np.ndarray]:
    """Certificate of a (Leontief) market point; prefers the demand-polished allocation."""
    cert, best_p = form.certificate(z, [p], gap_tol=gap_tol, feas_tol=feas_tol)
    noise = max(cert.gap, 1e-10 * max(1.0, abs(cert.primal_value)))
    if form.num_edges == form.n:  # one bundle per buyer: the dual is smooth, polish it
        try:
            with np.errstate(all="ignore"):
                z2, p2 = _newton_dual_polish(form, best_p)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, ZeroDivisionError):
            pass  # the polish is an improvement only: keep the interior-point point
        else:
            cert2, best_p2 = form.certificate(z2, [p2], gap_tol=gap_tol, feas_tol=feas_tol)
            if cert2.ok and cert2.gap <= noise:
                return cert2, best_p2, z2
    else:  # several bundles per buyer (volatile Leontief): Newton on the support's KKT system
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                polished = _support_newton_polish(form, z, best_p)
        except (np.linalg.LinAlgError, FloatingPointError, ValueError, ZeroDivisionError,
                RuntimeError):
            polished = None
        if polished is not None:
            z2, p2 = polished
            cert2, best_p2 = form.certificate(z2, [p2, best_p], gap_tol=gap_tol,
                                              feas_tol=feas_tol)
            if cert2.ok and cert2.gap <= noise:
                return cert2, best_p2, z2
    z2 = _demand_polish(form, z, best_p)
    cert2, best_p2 = form.certificate(z2, [best_p], gap_tol=gap_tol, feas_tol=feas_tol)
    if (cert2.ok and cert2.gap <= noise) or not cert.ok:
        return cert2, best_p2, z2
    return cert, best_p, z


def _support_newton_polish(form: _EdgeForm, z: np.ndarray, p: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact equilibrium on the support of an approximate one (see :func:`_newton_on_support`),
    trying the support read off complementary pairs, then a stricter one (utility share above
    1e-6: an interior point may leave a bundle barely used whose reduced cost is still tiny)."""
    for strict in (False, True):
        out = _newton_on_support(form, z, p, strict=strict)
        if out is not None:
            return out
    return None


def _newton_on_support(form: _EdgeForm, z: np.ndarray, p: np.ndarray, *, strict: bool
                       ) -> tuple[np.ndarray, np.ndarray] | None:
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
    S = np.flatnonzero((share > 1e-6) if strict else (share > reduced))
    slack = np.where(s > 0, (s - form.C @ z) / np.where(s > 0, s, 1.0), np.inf)
    R = np.flatnonzero(p / pmax > slack)
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
        if max(np.max(np.abs(F1) / beta[own]), np.max(np.abs(F2) / s[R])) < 1e-14:
            break
        J12 = member @ sp.diags(B / U**2) @ member.T @ sp.diags(wS)
        J = sp.bmat([[J11, J12], [None, CS]], format="csc")
        rhs = -np.r_[F1, F2]
        delta = spsolve(J, rhs)
        if not np.all(np.isfinite(delta)):
            # singular (e.g. identical buyers): the system is consistent at an equilibrium,
            # so the minimum-norm step still converges
            if J.shape[0] > 3000:
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


def _polish_linear(form: _EdgeForm, z: np.ndarray, p: np.ndarray, tie: float | None = 1e-6
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
        cand = np.flatnonzero(share > 1e-7)
    else:
        q = (form.C.T @ p) / form.weight
        best = form.beta(p)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = form.weight * z / u[form.owner]
        # candidate support: edges at the buyer's best bang-per-buck that carry utility ...
        cand = np.flatnonzero((q <= best[form.owner] * (1 + tie)) & (share > 1e-7))
    if cand.size == 0:
        return None
    for _ in range(6):
        out = _forest_equilibrium(form, cand, share)
        if out is None:
            return None
        on, price, flow = out
        q = (form.C.T @ price) / form.weight
        best = form.beta(price)
        wrong = on & (q > best[form.owner] * (1 + 1e-10))
        if not wrong.any():
            z_new = np.zeros_like(z)
            z_new[on] = flow / price[form.C.indices[on]]
            return form.repair(z_new), price
        cand = cand[~np.isin(cand, np.flatnonzero(wrong))]
    return None


def _forest_equilibrium(form: _EdgeForm, cand: np.ndarray, share: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Prices and spending of the equilibrium supported on a max-flow forest of ``cand``."""
    from scipy.sparse.csgraph import minimum_spanning_tree
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
    out = _support_prices(form, np.flatnonzero(on), forest=True)
    if out is None:
        return None
    price, Mf, free = out
    owner = form.owner[on]
    # spending flow on the forest: buyer sums B_i, good sums p_r s_r (one redundant row per
    # component, dropped with the fixed node)
    rhs_flow = np.r_[form.budget, price * form.supply]
    try:
        flow = np.atleast_1d(spsolve(abs(Mf).T.tocsc(), rhs_flow[free]))
    except Exception:  # pragma: no cover
        return None
    if not np.all(np.isfinite(flow)) or np.any(flow < -1e-9 * form.budget[owner]):
        return None
    return on, price, np.maximum(flow, 0.0)


def _solve_fast(form: _EdgeForm, *, gap_tol: float, feas_tol: float,
                warm_prices: np.ndarray | None, time_limit: float | None,
                log: _Log | None = None
                ) -> tuple[np.ndarray, Certificate, np.ndarray, int, int]:
    """Column generation on the edge form, warm-started by proportional response."""
    p0 = _proportional_response(form, iters=60 if warm_prices is None else 10,
                                prices=warm_prices)
    with np.errstate(all="ignore"):
        q = np.maximum(p0[form.C.indices], 1e-300) / form.weight
        beta = np.minimum.reduceat(q, form.starts)
        keep = q <= beta[form.owner] * 1.05
    # every buyer keeps an edge (rough prices can be NaN/inf on extreme data)
    lost = np.bincount(form.owner, weights=keep.astype(float), minlength=form.n) == 0
    keep |= lost[form.owner]
    iterations = solves = 0
    for _ in range(25):
        sub = form.subset(keep)
        # the restricted program is small: solve it tightly so the support polish succeeds
        z_sub, p, it = _solve_conic(sub, time_limit=time_limit, tol=1e-11, log=log)
        iterations += it
        solves += 1
        z = np.zeros(form.num_edges)
        z[keep] = sub.repair(z_sub)
        cert, best_p, z = _certify_linear(form, z, p, gap_tol=gap_tol, feas_tol=feas_tol,
                                          log=log)
        if cert.ok:
            return z, cert, best_p, iterations, solves
        # re-add every edge cheaper (per unit utility) than what its buyer pays on the support
        q = (form.C.T @ p) / form.weight
        beta_sub = sub.beta(p)
        violated = ~keep & (q < beta_sub[form.owner] * (1 - 1e-9))
        if not violated.any():
            break
        keep = keep | violated
    # the support could not be certified (numerically hard instance): solve everything
    z, p, it = _solve_conic(form, time_limit=time_limit, log=log)
    cert, best_p, z = _certify_linear(form, form.repair(z), p, gap_tol=gap_tol,
                                      feas_tol=feas_tol, log=log)
    return z, cert, best_p, iterations + it, solves + 1


def _support_prices(form: _EdgeForm, edges: np.ndarray, *, forest: bool
                    ) -> tuple[np.ndarray, sp.csc_matrix, np.ndarray] | None:
    """Prices with ``log p_r - log beta_i = log w_e`` on ``edges`` (linear markets).

    Buyers are nodes ``0..n-1`` and goods ``n..n+R-1``; one node per connected component of
    ``edges`` is fixed at 0 and each component is then scaled so that its goods' value
    ``sum_r p_r s_r`` equals its buyers' budgets. On a ``forest`` the system is square and
    solved exactly; otherwise (supports with cycles, consistent at equilibrium) by least
    squares. Returns ``(prices, M_free, free)`` -- the incidence matrix on the free nodes is
    reused for the spending flow -- or ``None`` when the system is singular.
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
        if forest:
            if Mf.shape[0] != Mf.shape[1]:
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


def _log_prices(form: _EdgeForm, z: np.ndarray, p: np.ndarray, tie: float = 1e-6
                ) -> np.ndarray | None:
    """Prices on every tied best edge that carries utility (least squares; cycles allowed).

    Unlike the forest systems of :func:`_polish_linear` this accepts supports with cycles
    (degenerate markets), where the equations are consistent at equilibrium.
    """
    q = (form.C.T @ p) / form.weight
    best = form.beta(p)
    u = form.utilities(z)
    cand = np.flatnonzero((q <= best[form.owner] * (1 + tie))
                          & (form.weight * z > 1e-9 * u[form.owner]))
    if cand.size == 0:
        return None
    out = _support_prices(form, cand, forest=False)
    return None if out is None else out[0]


def _flow_at_prices(form: _EdgeForm, p: np.ndarray, log: _Log | None = None
                    ) -> np.ndarray | None:
    """Equilibrium allocation at prices ``p`` by a transportation LP (linear markets).

    Spending ``b_e >= 0`` on each buyer's best bang-per-buck edges with buyer sums ``B_i`` and
    good sums ``p_r s_r`` (slack allowed, minimised). Handles degenerate markets whose support
    has cycles, where :func:`_polish_linear`'s forest systems are singular.
    """
    from .backends import LinearProgram
    from .errors import FairallocError

    log = _Log() if log is None else log

    q = (form.C.T @ p) / form.weight
    best = form.beta(p)
    if np.any(best <= 0):
        return None
    cand = np.flatnonzero(q <= best[form.owner] * (1 + 1e-9))
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


def _certify_linear(form: _EdgeForm, z: np.ndarray, p: np.ndarray, *, gap_tol: float,
                    feas_tol: float, log: _Log | None = None
                    ) -> tuple[Certificate, np.ndarray, np.ndarray]:
    """Certificate of a linear market point, improved by :func:`_polish_linear` when it helps."""
    cert, best_p = form.certificate(z, [p, form.implied_prices(z)], gap_tol=gap_tol,
                                    feas_tol=feas_tol)
    # prefer an exactly balanced equilibrium (the gap is second order in allocation errors,
    # so an interior-point point can certify while its utilities are off by ~sqrt(gap))
    # a polished point may not be worse than the original beyond rounding
    noise = max(cert.gap, 1e-10 * max(1.0, abs(cert.primal_value)))
    # ties (edges at the buyer's best bang-per-buck) are read off the solver's prices, whose
    # relative accuracy is ~sqrt of the solver's tolerance: try a tight, then a loose reading
    for tie in (1e-6, 1e-4):
        polished = _polish_linear(form, z, best_p, tie)
        if polished is not None:
            z2, p2 = polished
            cert2, best_p2 = form.certificate(z2, [p2, best_p], gap_tol=gap_tol,
                                              feas_tol=feas_tol)
            if cert2.ok and cert2.gap <= noise:
                return cert2, best_p2, z2
        p3 = _log_prices(form, z, best_p, tie)
        z3 = None if p3 is None else _flow_at_prices(form, p3, log)
        if p3 is not None and z3 is not None:
            cert3, best_p3 = form.certificate(z3, [p3], gap_tol=gap_tol, feas_tol=feas_tol)
            if cert3.ok and cert3.gap <= noise:
                return cert3, best_p3, z3
    # badly scaled utilities: read the support off the allocation instead of the prices
    polished = _polish_linear(form, z, best_p, None)
    if polished is not None:
        z2, p2 = polished
        cert2, best_p2 = form.certificate(z2, [p2, best_p], gap_tol=gap_tol, feas_tol=feas_tol)
        if cert2.ok and (cert2.gap <= noise or not cert.ok):
            return cert2, best_p2, z2
    return cert, best_p, z


# --------------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class MarketResult(Result):
    """Equilibrium of an Eisenberg-Gale market.

    Attributes
    ----------
    allocation : ndarray, shape (n, m) or (n, m, T)
        ``allocation[i, j(, t)]``: amount of good ``j`` (in round ``t``) bought by buyer ``i``.
    prices : ndarray, shape (m,) or (m, T)
        Equilibrium prices: non-negative multipliers of the supply constraints
        (``d OPT / d supply``); zero exactly on goods that are not sold out.
    utility : ndarray, shape (n,)
        Each buyer's utility ``U_i`` (summed over rounds in a volatile market).
    budget : ndarray, shape (n,)
        The budgets the market was solved with.
    spending : ndarray, shape (n,)
        ``sum_j prices_j * allocation_ij``: what each buyer pays (equals its budget at
        equilibrium, up to the certified gap).
    objective : float
        ``sum_i B_i log U_i``.
    """

    allocation: np.ndarray
    prices: np.ndarray
    utility: np.ndarray
    budget: np.ndarray
    spending: np.ndarray

    def to_frame(self) -> Any:
        """One row per buyer: budget, utility, spending and the allocation of each good.

        For a volatile market the allocation columns are ``(good, round)`` pairs.
        """
        pd = require_pandas()
        base = pd.DataFrame({"budget": self.budget, "utility": self.utility,
                             "spending": self.spending})
        base.index.name = "buyer"
        n = self.allocation.shape[0]
        if self.allocation.ndim == 2:
            cols = [f"x[{j}]" for j in range(self.allocation.shape[1])]
        else:
            m, T = self.allocation.shape[1:]
            cols = [f"x[{j},{t}]" for j in range(m) for t in range(T)]
        alloc = pd.DataFrame(self.allocation.reshape(n, -1), columns=cols)
        return pd.concat([base, alloc], axis=1)


# --------------------------------------------------------------------------------------------
# the builder
# --------------------------------------------------------------------------------------------
class FisherMarket(Composable):
    """Composable builder of an Eisenberg-Gale market (static or volatile, linear or Leontief).

    Parameters
    ----------
    utility : array_like, shape (n, m) or (n, m, T)
        Linear: ``utility[i, j(, t)]`` is buyer ``i``'s utility per unit of good ``j`` (in
        round ``t``). Leontief: the demand vector, ``u_i = min_{j: a_ij > 0} x_ij / a_ij``.
        A 3-d array makes a volatile market over ``T`` rounds (Shockwave App. C).
    budget : array_like, shape (n,), optional
        Positive budgets (default ones).
    supply : array_like, shape (m,) or (m, T), optional
        Non-negative supply of each good (in each round); default ones.
    kind : {"linear", "leontief"}

    Attributes
    ----------
    x : cvxpy.Expression, shape (n, m) or (n, m*T)
        The allocation (round ``t`` of good ``j`` is column ``j*T + t``; see :meth:`column`).
    utility_expr : cvxpy.Expression, shape (n,)
        Each buyer's utility ``U_i``.
    supply_constraint : cvxpy.Constraint
        ``sum_i x_i <= supply``; its dual values are the prices.

    Examples
    --------
    Require buyer 0 to take some of good 1 and re-solve (the constraint binds, so the composed
    program is solved by cvxpy and certified by the conic KKT certificate):

    >>> import numpy as np
    >>> m = FisherMarket([[2.0, 1.0], [1.0, 2.0]])
    >>> m = m.add_constraint(m.x[0, 1] >= 0.25)
    >>> r = m.solve()
    >>> bool(r.allocation[0, 1] >= 0.25 - 1e-7), r.certificate.kind
    (True, 'conic')

    A cap that the plain equilibrium already meets does not move it; the exact equilibrium is
    returned with the Eisenberg-Gale certificate:

    >>> m = FisherMarket([[2.0, 1.0], [1.0, 2.0]])
    >>> r = m.add_constraint(m.x[0, 1] <= 0.1).solve()
    >>> bool(r.allocation[0, 1] <= 0.1), r.certificate.kind
    (True, 'eisenberg_gale')
    """

    def __init__(self, utility: Any, budget: Any = None, supply: Any = None, *,
                 kind: str = "linear") -> None:
        self.kind = as_option(kind, "kind", KINDS)
        U = as_array(utility, "utility", ndim=(2, 3))
        self.volatile = U.ndim == 3
        n, m = U.shape[:2]
        T = U.shape[2] if self.volatile else 1
        self.n, self.m, self.T = n, m, T
        self.utility = U
        self.budget = (np.ones(n) if budget is None
                       else as_array(budget, "budget", ndim=1, shape=(n,), positive=True))
        sup_shape = (m, T) if self.volatile else (m,)
        if supply is None:
            self.supply = np.ones(sup_shape)
        else:
            self.supply = as_array(supply, "supply", ndim=len(sup_shape), shape=sup_shape)
        if not (self.supply > 0).any():
            raise InputError("supply is all zero: there is nothing to allocate",
                             argument="supply")
        self._normalise()
        self._form = self._edge_form()
        self._init_composition()
        self._cvx: dict[str, Any] | None = None

    # --- unit normalisation ---------------------------------------------------------------
    def _normalise(self) -> None:
        """Factors that bring the market to unit scale.

        Budgets are divided by ``fb``, their mean (it becomes 1), so the normalised budgets
        are the same, to the last bit or two, in whatever unit the caller used (a
        power-of-two factor left a unit-dependent factor in [1/2, 2), and two such markets
        could certify different points within the gap tolerance). Each good's supply is
        divided by a power of two ``fs_r`` (~1) and each buyer's utility row, measured per
        normalised unit of goods, by a power of two ``ufac_i`` (largest entry ~1): exact, and
        quantities already near 1 keep factor 1 (the conic solver's iteration counts on such
        markets are unchanged). The equilibrium maps back as:
        ``x = fs * x'``, ``U_i = ufac_i * U'_i``, ``p_r = fb * p'_r / fs_r`` and
        ``sum B log U = fb * (sum B' log U' + sum B' log ufac)``.
        """
        n, m, T = self.n, self.m, self.T
        s = self.supply.reshape(m * T)
        with np.errstate(all="ignore"):  # extreme data are checked explicitly below
            # mean budget ~1 (with a budget sum of 1 and many buyers the interior-point solver
            # needs more iterations)
            mean = float(np.mean(self.budget / np.max(self.budget))) * float(np.max(self.budget))
            self._fb = float(_unit(mean))
            self._fs = _pow2(s)
            if self.kind == "linear":
                per_unit = self.utility.reshape(n, m * T) * self._fs  # per normalised unit
                self._ufac = _pow2(np.max(np.where(s > 0, per_unit, 0.0), axis=1))
                self._u_norm = per_unit / self._ufac[:, None]
            else:
                demand = self.utility.reshape(n, m * T) / self._fs  # goods per utility
                g = _pow2(np.max(demand, axis=1))
                self._ufac = 1.0 / g
                self._u_norm = demand / g[:, None]
            self._b_norm = self.budget / self._fb
        if not np.isfinite(self._fb):
            raise InputError("the budgets exceed the float range", argument="budget")
        tiny = ~(self.budget >= 1e-300 * np.max(self.budget)) | ~(self._b_norm > 0)
        if tiny.any():
            i = int(np.flatnonzero(tiny)[0])
            raise InputError(f"budget[{i}] = {self.budget[i]:g} is too small next to the "
                             "largest budget to be represented (ratio below 1e-300)",
                             argument="budget", index=(i,))
        if not (np.all(np.isfinite(self._u_norm)) and np.all(np.isfinite(self._ufac))
                and np.all(self._ufac > 0)):
            raise InputError("utility and supply are too far apart in scale to be represented "
                             "(utility x supply overflows a float)", argument="utility")
        self._s_norm = s / self._fs
        self._shift = float(self._b_norm @ np.log(self._ufac))

    def _user_certificate(self, cert: Certificate) -> Certificate:
        """A certificate of the normalised program, in the caller's units (``relative_gap``
        and the residuals are unchanged: they are ratios of quantities in the same units)."""
        fb, shift = self._fb, self._shift
        return Certificate(
            kind=cert.kind, primal_value=fb * (cert.primal_value + shift),
            dual_bound=fb * (cert.dual_bound + shift), gap=fb * cert.gap,
            primal_residual=cert.primal_residual, dual_residual=cert.dual_residual,
            gap_tol=cert.gap_tol, feas_tol=cert.feas_tol,
            scale=None if cert.scale is None else fb * cert.scale)

    def _user_prices(self, p_norm: np.ndarray) -> np.ndarray:
        return np.asarray(p_norm, dtype=float) * self._fb / self._fs

    # --- edge form ------------------------------------------------------------------------
    def _edge_form(self, user_units: bool = False) -> _EdgeForm:
        """The edge form, normalised (what is solved) or in the caller's units."""
        n, m, T = self.n, self.m, self.T
        # column j*T + t
        U = self.utility.reshape(n, m * T) if user_units else self._u_norm
        s = self.supply.reshape(m * T)
        if self.kind == "linear":
            valued = U > 0  # (an entry below 1e-308 of its row's largest counts as 0)
            usable = valued & (s > 0)[None, :]
            owner, res = np.nonzero(usable)
            weight = U[owner, res]
            C = sp.csc_matrix((np.ones(owner.size), (res, np.arange(owner.size))),
                              shape=(m * T, owner.size))
        else:
            A3 = U.reshape(n, m, T)
            valued = np.asarray((A3 > 0).any(axis=1))  # (n, T): buyer has demand in round t
            usable = self._usable_rounds()
            owner, rnd = np.nonzero(usable)
            sub = A3[owner, :, rnd]  # (E, m)
            e_idx, j = np.nonzero(sub)
            C = sp.csc_matrix((sub[e_idx, j], (j * T + rnd[e_idx], e_idx)),
                              shape=(m * T, owner.size))
            weight = np.ones(owner.size)
        values = valued.any(axis=1)
        if not values.all():
            i = int(np.flatnonzero(~values)[0])
            raise InputError(f"utility[{i}] is all zero: buyer {i} values nothing",
                             argument="utility", index=(i,))
        has_edge = np.bincount(owner, minlength=n) > 0
        if not has_edge.all():
            i = int(np.flatnonzero(~has_edge)[0])
            raise InputError(
                f"buyer {i} values only goods with zero supply (utility[{i}] vs supply); "
                "its utility would be 0 and log 0 = -inf",
                argument="supply", index=(i,))
        if user_units:
            return _EdgeForm(owner, weight.astype(float), C, self.budget, s.astype(float),
                             _starts(owner, n))
        return _EdgeForm(owner, weight.astype(float), C, self._b_norm,
                         self._s_norm.astype(float), _starts(owner, n))

    def _allocation(self, z: np.ndarray) -> np.ndarray:
        """The allocation in the caller's units from normalised edge levels ``z``."""
        n, m, T = self.n, self.m, self.T
        form = self._form
        if self.kind == "linear":
            res = form.C.indices
            flat = np.zeros((n, m * T))
            flat[form.owner, res] = z * self._fs[res]
        else:
            level = np.zeros((n, T))
            rnd = np.nonzero(self._usable_rounds())[1]
            level[form.owner, rnd] = z * self._ufac[form.owner]
            flat = (self.utility.reshape(n, m, T) * level[:, None, :]).reshape(n, m * T)
        return flat.reshape((n, m, T) if self.volatile else (n, m))

    def _usable_rounds(self) -> np.ndarray:
        """(Leontief) ``[i, t]``: buyer ``i`` has demand in round ``t`` and every resource it
        needs there has positive supply."""
        n, m, T = self.n, self.m, self.T
        A3 = self.utility.reshape(n, m, T)
        blocked = ((A3 > 0) & (self.supply.reshape(1, m, T) <= 0)).any(axis=1)
        return np.asarray((A3 > 0).any(axis=1) & ~blocked)

    def dual_value(self, prices: Any) -> float:
        """The Eisenberg-Gale dual function ``D(p)``: an upper bound on the optimum for any p >= 0.

        Examples
        --------
        >>> FisherMarket([[1.0]]).dual_value([1.0])
        0.0
        """
        p = as_array(prices, "prices", ndim=self.supply.ndim, shape=self.supply.shape)
        with np.errstate(all="ignore"):
            return self._edge_form(user_units=True).dual_value(p.reshape(-1))

    def column(self, good: int, rnd: int = 0) -> int:
        """Column of :attr:`x` holding good ``good`` in round ``rnd``.

        Raises
        ------
        InputError
            If ``good`` is not an integer in ``[0, m)`` or ``rnd`` not one in ``[0, T)``.

        Examples
        --------
        >>> import numpy as np
        >>> FisherMarket(np.ones((2, 3, 4))).column(1, 2)   # goods x rounds, row-major
        6
        """
        g = as_positive_int(good, "good", allow_zero=True)
        t = as_positive_int(rnd, "rnd", allow_zero=True)
        if g >= self.m:
            raise InputError(f"good must be in [0, {self.m}), got {good!r}", argument="good")
        if t >= self.T:
            raise InputError(f"rnd must be in [0, {self.T}), got {rnd!r}", argument="rnd")
        return g * self.T + t

    # --- cvxpy composition ----------------------------------------------------------------
    def _build_cvxpy(self) -> dict[str, Any]:
        """The program's cvxpy pieces. The variables live in normalised units (see
        :meth:`_normalise`); :attr:`x` and :attr:`utility_expr` are expressions in the caller's
        units, so added constraints and terms are written in the caller's units."""
        if self._cvx is not None:
            return self._cvx
        import cvxpy as cp

        n, m, T = self.n, self.m, self.T
        fs, ufac = self._fs, self._ufac
        unit_goods = bool(np.all(fs == 1.0))
        unit_util = bool(np.all(ufac == 1.0))
        x: Any
        var: Any
        alloc_n: Any
        if self.kind == "linear":
            var = cp.Variable((n, m * T), nonneg=True, name="x")
            util_n = cp.sum(cp.multiply(self._u_norm, var), axis=1)
            alloc_n = var
            x = var if unit_goods else cp.multiply(np.broadcast_to(fs, (n, m * T)), var)
            extra = []
        else:
            var = cp.Variable((n, T), nonneg=True, name="level")
            select = sp.csr_matrix((np.ones(m * T), (np.tile(np.arange(T), m),
                                                     np.arange(m * T))), shape=(T, m * T))
            spread = var @ select
            alloc_n = cp.multiply(self._u_norm, spread)
            x = alloc_n if unit_goods else cp.multiply(self._u_norm * fs, spread)
            util_n = cp.sum(var, axis=1)
            unusable = ~self._usable_rounds()
            extra = [cp.multiply(unusable.astype(float), var) == 0] if unusable.any() else []
        util = util_n if unit_util else cp.multiply(ufac, util_n)
        supply_con = cp.sum(alloc_n, axis=0) <= self._s_norm
        self._cvx = {"x": x, "util": util, "util_n": util_n, "var": var, "supply": supply_con,
                     "extra": extra}
        return self._cvx

    @property
    def x(self) -> Any:
        return self._build_cvxpy()["x"]

    @property
    def utility_expr(self) -> Any:
        return self._build_cvxpy()["util"]

    @property
    def supply_constraint(self) -> Any:
        return self._build_cvxpy()["supply"]

    def add_constraint(self, constraint: Any) -> FisherMarket:
        """Add a cvxpy constraint on :attr:`x` / :attr:`utility_expr`; returns ``self``.

        Examples
        --------
        >>> m = FisherMarket([[1.0, 1.0], [1.0, 1.0]])
        >>> r = m.add_constraint(m.utility_expr[0] >= 1.5).solve()
        >>> round(float(r.utility[0]), 4)
        1.5
        """
        return super().add_constraint(constraint)

    def add_objective_term(self, term: Any) -> FisherMarket:
        """Add a concave cvxpy expression to the maximised objective; returns ``self``.

        Examples
        --------
        A penalty on buyer 1's use of good 0 moves that good to buyer 0:

        >>> m = FisherMarket([[1.0, 1.0], [1.0, 1.0]])
        >>> r = m.add_objective_term(-10 * m.x[1, 0]).solve()
        >>> round(float(r.allocation[0, 0]), 3)
        1.0
        """
        return super().add_objective_term(term)

    def problem(self) -> Any:
        """The cvxpy problem ``max sum_i B_i log U_i + terms`` s.t. supply and added constraints.

        It is stated in normalised units (see :meth:`_normalise`): the objective is
        ``sum_i B'_i log U'_i + terms / fb``, i.e. the caller's objective divided by the budget
        factor ``fb`` and shifted by a constant, so it has the same optimal allocation; the
        supply constraint's dual values are the normalised prices ``p'_r = p_r fs_r / fb``.

        Examples
        --------
        >>> FisherMarket([[1.0, 2.0]]).problem().is_dcp()
        True
        """
        import cvxpy as cp

        cvx = self._build_cvxpy()
        objective = cp.sum(cp.multiply(self._b_norm, cp.log(cvx["util_n"])))
        for term in self._terms:
            objective = objective + (term if self._fb == 1.0 else term / self._fb)
        return cp.Problem(cp.Maximize(objective),
                          [cvx["supply"], *cvx["extra"], *self._constraints])

    # --- solve ----------------------------------------------------------------------------
    def solve(
        self,
        *,
        method: str = "auto",
        backend: Any = "clarabel",
        gap_tol: float = GAP_TOL,
        feas_tol: float = FEAS_TOL,
        time_limit: float | None = None,
        warm_start: Any = None,
    ) -> MarketResult:
        """Solve the market and certify the result.

        The market is first normalised to unit scale by powers of two (budgets to mean ~1, each
        good's supply to ~1, each buyer's utility row to largest entry ~1), solved and
        certified there, and mapped back exactly: rescaling budgets by ``a``, supply of good
        ``j`` by ``c_j`` and buyer ``i``'s utilities by ``d_i`` gives the allocation
        ``x_ij c_j``, the prices ``p_j a / c_j`` and the utilities ``U_i d_i`` (Leontief
        demands rescale as ``c_j / d_i``), and the same certificate verdict.

        Parameters
        ----------
        method : {"auto", "fast", "conic", "cvxpy"}
            See the module docstring. Composed models need ``"cvxpy"`` (``"auto"`` picks it).
            A plain market on which cvxpy fails is solved on the exact ``"conic"`` path.
        backend : str or Backend
            Backend for the exponential-cone programs (it needs the ``"exp_cone"`` capability:
            ``"clarabel"``). The LP polish of linear markets runs on HiGHS. ``stats.backend``
            names the backends that actually ran (e.g. ``"clarabel+highs"``) and
            ``stats.raw_status`` the last conic solve's own status.
        gap_tol : float
            Tolerance on the certified relative gap ``gap / sum(budget)`` (the Eisenberg-Gale
            gap is a sum of budget-weighted terms) or, for a composed model certified by the
            conic KKT certificate, ``gap`` over the magnitude of the program's terms.
        feas_tol : float
            Tolerance on the supply violation relative to each good's supply.
        time_limit : float, optional
            Seconds per conic solve.
        warm_start : array_like, optional
            Prices (shape of ``supply``) to start the fast path from (e.g. a related market's).

        Returns
        -------
        MarketResult
            ``status`` is ``OPTIMAL`` (``certificate.ok``), or ``TIME_LIMIT`` when a solve
            stopped at ``time_limit`` with an exactly feasible allocation whose proven gap
            misses ``gap_tol`` (``certificate.ok`` is then false and ``certificate.gap`` says
            how far from optimal it may be).

        Raises
        ------
        CertificateError
            If the certified gap or residual misses its tolerance (other than at a time
            limit, see Returns).
        SolverError
            If a solver fails (any foreign exception is chained as the cause).

        Notes
        -----
        A composed model without objective terms whose added constraints (on :attr:`x` /
        :attr:`utility_expr` only) all hold, within ``feas_tol`` relative to their sides, at the
        plain market's equilibrium is solved exactly: that equilibrium is optimal for the
        composed program too (it is optimal on a larger feasible set), and it is returned with
        the exact Eisenberg-Gale certificate (``certificate.kind == "eisenberg_gale"``).
        Otherwise the composed program is solved by cvxpy and certified by the conic KKT
        certificate (``"conic"``).

        Examples
        --------
        >>> r = FisherMarket([[3.0, 1.0], [1.0, 3.0]], budget=[1.0, 3.0]).solve(method="conic")
        >>> r.prices.round(6).tolist(), r.stats.method
        ([1.0, 3.0], 'conic')
        """
        t0 = time.perf_counter()
        method = as_option(method, "method", METHODS)
        gap_tol = as_tolerance(gap_tol, "gap_tol")
        feas_tol = as_tolerance(feas_tol, "feas_tol")
        time_limit = as_time_limit(time_limit)
        log = _Log(backend)
        warm = None
        if warm_start is not None:
            warm = as_array(warm_start, "warm_start", ndim=self.supply.ndim,
                            shape=self.supply.shape).reshape(-1) * self._fs / self._fb
        if method == "auto":
            method = "cvxpy" if self.composed else self._plain_method()
        if self.composed and method != "cvxpy":
            raise InputError(f"method={method!r} cannot solve a model with added constraints or "
                             "terms; use method='cvxpy'", argument="method")
        if method == "fast" and self.kind != "linear":
            raise InputError("method='fast' is for linear markets; use 'conic' or 'cvxpy'",
                             argument="method")
        try:
            if method == "cvxpy":
                alloc, prices_n, cert_n, iters, solves = self._solve_cvxpy(
                    gap_tol, feas_tol, time_limit, log)
            else:
                alloc, prices_n, cert_n, iters, solves = self._solve_plain(
                    method, gap_tol, feas_tol, time_limit, warm, log)
        except FairallocError:
            raise
        except Exception as exc:  # numerical trouble in a polish or a foreign package
            raise SolverError(f"market solve failed: {type(exc).__name__}: {exc}",
                              backend=log.backend, status="exception") from exc
        if (log.hit_limit and not cert_n.ok and not np.isfinite(cert_n.gap)
                and not self.composed):
            # out of time before the solver had a usable point: a cheap feasible incumbent
            # (each buyer's demand at rough prices), reported with its proven gap
            incumbent = self._incumbent(gap_tol, feas_tol)
            if incumbent is not None:
                alloc, prices_n, cert_n = incumbent
        cert = self._user_certificate(cert_n)
        status = Status.OPTIMAL
        if not cert.ok:
            if (log.hit_limit and np.isfinite(cert.gap) and np.isfinite(cert.primal_value)
                    and cert.primal_residual <= feas_tol):
                status = Status.TIME_LIMIT  # a feasible incumbent with its proven gap
            else:
                cert.check(backend=log.backend)
        with np.errstate(all="ignore"):
            prices = self._user_prices(prices_n).reshape(self.supply.shape)
            flat = alloc.reshape(self.n, -1)
            utility = self._utilities(alloc)
            spending = flat @ prices.reshape(-1)
        if not (np.all(np.isfinite(prices)) and np.all(np.isfinite(utility))
                and np.all(np.isfinite(alloc))):
            raise InputError("the equilibrium is not representable in these units (a price, "
                             "utility or allocation exceeds the float range); rescale budget, "
                             "supply or utility", argument="budget")
        stats = SolveStats(backend=log.backend, method=method,
                           seconds=time.perf_counter() - t0, iterations=iters, solves=solves,
                           raw_status=log.raw_status)
        return MarketResult(objective=cert.primal_value, status=status, stats=stats,
                            certificate=cert, allocation=alloc, prices=prices, utility=utility,
                            budget=self.budget, spending=spending)

    def _incumbent(self, gap_tol: float, feas_tol: float
                   ) -> tuple[np.ndarray, np.ndarray, Certificate] | None:
        """A feasible allocation with positive utilities and its certificate, without a
        solver: proportional-response prices (linear) or uniform prices (Leontief), then each
        buyer's demand at them, made feasible."""
        form = self._form
        try:
            with np.errstate(all="ignore"):
                if self.kind == "linear":
                    p = _proportional_response(form, iters=30, prices=None)
                else:
                    p = np.full(form.supply.size, float(form.budget.sum() / form.supply.sum()))
                if not np.all(np.isfinite(p)):
                    return None
                z = _demand_polish(form, np.ones(form.num_edges), p)
                cert, best_p = form.certificate(z, [p], gap_tol=gap_tol, feas_tol=feas_tol)
        except (ArithmeticError, ValueError, IndexError):
            return None
        if not np.isfinite(cert.gap):
            return None
        return self._allocation(z), best_p, cert

    def _plain_method(self) -> str:
        if self.kind == "linear" and self._form.num_edges > _FAST_MIN_EDGES:
            return "fast"
        return "conic"

    def _solve_plain(self, method: str, gap_tol: float, feas_tol: float,
                     time_limit: float | None, warm: np.ndarray | None, log: _Log
                     ) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
        """The exact paths on the normalised edge form; allocation in the caller's units,
        prices and certificate normalised."""
        form = self._form
        if method == "fast":
            z, cert, prices, iters, solves = _solve_fast(
                form, gap_tol=gap_tol, feas_tol=feas_tol, warm_prices=warm,
                time_limit=time_limit, log=log)
        else:
            z, p, iters = _solve_conic(form, time_limit=time_limit, log=log)
            solves = 1
            z = form.repair(z)
            certify = _certify_linear if self.kind == "linear" else _certify_general
            cert, prices, z = certify(form, z, p, gap_tol=gap_tol, feas_tol=feas_tol, log=log)
        if not cert.ok:
            z, prices, cert, it, more = self._refine(z, prices, cert, gap_tol, feas_tol,
                                                     time_limit, log)
            iters += it
            solves += more
        return self._allocation(z), prices, cert, iters, solves

    def _refine(self, z: np.ndarray, p: np.ndarray, cert: Certificate, gap_tol: float,
                feas_tol: float, time_limit: float | None, log: _Log
                ) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
        """Second chance for a point whose certificate failed: re-solve in units in which
        every good is worth about 1 (see :func:`_resolve_price_scaled`) and keep the better
        certificate. Returns ``(z, prices, certificate, iterations, solves)``."""
        form = self._form
        certify = _certify_linear if self.kind == "linear" else _certify_general
        iters = solves = 0
        if log.hit_limit:  # out of time: report the incumbent as it is
            return z, p, cert, iters, solves
        for _ in range(3):  # each re-solve's prices give the next one better units
            try:
                z2, p2, it = _resolve_price_scaled(form, p, time_limit=time_limit, log=log)
            except SolverError:
                break
            iters += it
            solves += 1
            cert2, p2, z2 = certify(form, form.repair(z2), p2, gap_tol=gap_tol,
                                    feas_tol=feas_tol, log=log)
            if not (cert2.ok or cert2.relative_gap < cert.relative_gap):
                break
            z, p, cert = z2, p2, cert2
            if cert.ok:
                break
        return z, p, cert, iters, solves

    def _utilities(self, alloc: np.ndarray) -> np.ndarray:
        return self._form.utilities(self._edge_levels(alloc)) * self._ufac

    def _constraints_hold(self, alloc: np.ndarray, feas_tol: float) -> bool:
        """Whether every added constraint holds at ``alloc`` (caller's units), within
        ``feas_tol`` relative to the magnitude of its sides; ``False`` when it cannot be
        decided (a constraint involving variables other than the market's)."""
        cvx = self._build_cvxpy()
        var = cvx["var"]
        if any(v is not var for c in self._constraints for v in c.variables()):
            return False
        z = self._edge_levels(alloc)
        if self.kind == "linear":
            value = np.zeros((self.n, self.m * self.T))
            value[self._form.owner, self._form.C.indices] = z
        else:
            value = np.zeros((self.n, self.T))
            value[self._form.owner, np.nonzero(self._usable_rounds())[1]] = z
        try:
            var.value = np.maximum(value, 0.0)
            for c in self._constraints:
                viol = np.abs(np.asarray(c.violation(), dtype=float))
                mag = np.zeros_like(viol)
                for arg in c.args:
                    val = arg.value
                    if val is None:
                        return False
                    mag = np.maximum(mag, np.abs(np.asarray(val, dtype=float)))
                tiny = np.finfo(float).tiny
                if not np.all(viol <= feas_tol * np.maximum(mag, tiny)):
                    return False
        except Exception:  # cannot evaluate: let the conic path decide
            return False
        return True

    def _solve_cvxpy(self, gap_tol: float, feas_tol: float, time_limit: float | None,
                     log: _Log) -> tuple[np.ndarray, np.ndarray, Certificate, int, int]:
        from ._cvxpy import solve_cvxpy

        iters = solves = 0
        if self.composed and not self._terms:
            # added constraints that the plain equilibrium satisfies do not move it: solve
            # exactly and certify with the Eisenberg-Gale dual (a bound for the composed
            # program too, whose feasible set is smaller)
            alloc, prices, cert, iters, solves = self._solve_plain(
                self._plain_method(), gap_tol, feas_tol, time_limit, None, log)
            if cert.ok and self._constraints_hold(alloc, feas_tol):
                return alloc, prices, cert, iters, solves
        problem = self.problem()
        try:
            stats, conic_cert = solve_cvxpy(problem, backend=log.conic, gap_tol=gap_tol,
                                            feas_tol=feas_tol, time_limit=time_limit)
        except SolverError:
            if self.composed:
                raise
            # a plain market has an exact path: use it rather than fail
            alloc, prices, cert, it, more = self._solve_plain(
                "conic", gap_tol, feas_tol, time_limit, None, log)
            return alloc, prices, cert, iters + it, solves + more
        log.ran(stats.backend, stats.raw_status)
        iters += stats.iterations
        solves += 1
        cvx = self._build_cvxpy()
        n, m, T = self.n, self.m, self.T
        dual = cvx["supply"].dual_value
        if dual is None or cvx["x"].value is None:
            raise SolverError("the cvxpy solve returned no allocation or prices",
                              backend=stats.backend, status=stats.raw_status)
        prices = np.maximum(np.asarray(dual, dtype=float).reshape(m * T), 0.0)
        alloc = np.maximum(np.asarray(cvx["x"].value, dtype=float), 0.0)
        alloc = alloc.reshape((n, m, T) if self.volatile else (n, m))
        if self.composed:
            return alloc, prices, conic_cert, iters, solves
        # plain market: the exact Eisenberg-Gale certificate applies
        z = self._form.repair(self._edge_levels(alloc))
        certify = _certify_linear if self.kind == "linear" else _certify_general
        cert, prices, z = certify(self._form, z, prices, gap_tol=gap_tol, feas_tol=feas_tol,
                                  log=log)
        if not cert.ok:
            z, prices, cert, it, more = self._refine(z, prices, cert, gap_tol, feas_tol,
                                                     time_limit, log)
            iters += it
            solves += more
        return self._allocation(z), prices, cert, iters, solves

    def _edge_levels(self, alloc: np.ndarray) -> np.ndarray:
        """Normalised edge levels of an allocation in the caller's units."""
        n = self.n
        form = self._form
        flat = alloc.reshape(n, -1)
        if self.kind == "linear":
            res = form.C.indices
            return flat[form.owner, res] / self._fs[res]
        A3 = self.utility.reshape(n, self.m, self.T)
        X3 = alloc.reshape(n, self.m, self.T)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where(A3 > 0, X3 / A3, np.inf).min(axis=1)
        rnd = np.nonzero(self._usable_rounds())[1]
        return level[form.owner, rnd] / self._ufac[form.owner]

    def __repr__(self) -> str:
        shape = f"{self.n}x{self.m}" + (f"x{self.T}" if self.volatile else "")
        extra = f", {len(self._constraints)} constraints, {len(self._terms)} terms"
        return f"FisherMarket({self.kind}, {shape}{extra if self.composed else ''})"


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
) -> MarketResult:
    """Equilibrium of a static Fisher market (Eisenberg-Gale program; shockwave.txt App. C-D).

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
    method : {"auto", "fast", "conic", "cvxpy"}
        Solution method (see :mod:`fairalloc.markets`); all are exact and certified.
    backend : str or Backend
        Exponential-cone backend (``"clarabel"``); see :meth:`FisherMarket.solve`.
    gap_tol, feas_tol : float
        Tolerances of the certificate: duality gap relative to the total budget, supply
        violation relative to each good's supply (both unit invariant).
    time_limit : float, optional
        Seconds per conic solve.
    warm_start : array_like, shape (m,), optional
        Prices to start the fast path from.

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
    return FisherMarket(U, budget, supply, kind=kind).solve(
        method=method, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol,
        time_limit=time_limit, warm_start=warm_start)


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
) -> MarketResult:
    """Equilibrium of a volatile Fisher market over ``T`` rounds (shockwave.txt §4.1, App. C).

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
        As for :func:`fisher_market` (``warm_start`` has shape (m, T)).

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
    return FisherMarket(U, budget, supply, kind=kind).solve(
        method=method, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol,
        time_limit=time_limit, warm_start=warm_start)
