"""What the structured level and floor solvers share: the per-job demand model at given
capacity prices (`Demand`), Newton's method on *demand = capacity* (`newton`,
`newton_prices`), the restricted-master sub-solve and the full-LP certificate
(`certified`). The method is described in `fairalloc.throughput.structured`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...backends import Backend, LinearProgram, LPBasis, LPSolution, get_backend
from ...errors import SolverError
from ...results import Certificate
from ..instance import TINY, ColumnInstance
from ..programs import LevelStage, LinearStage, StageResult
from ..tuning import DEFAULT_TUNING, Tuning

if TYPE_CHECKING:  # (stages imports the plans that use these solvers)
    from ..stages import StageSolver

#: path-step suffix of a stage returned without its certificate (`certified`)
PROVISIONAL = "-provisional"
#: path step: a level stage's Newton search ran its sampled phase (no seed or warm start)
NEWTON_SAMPLE_STEP = "newton-sample"

BAND0 = 0.001  # PERFORMANCE knob: relative price error assumed for the Newton prices
#: ACCURACY: relative rounding margin at which theta counts as at its saturation bound
SAT_ROUNDING = 1e-12
#: ACCURACY: a reduced cost above this (relative to the column's level term) is a violation
REDUCED_COST_TOL = 1e-9
#: ACCURACY: relative rounding of a row activity (time, capacity, floor, theta range) below
#: which the row counts as tight
ACTIVITY_ROUNDING = 1e-9
# Newton on demand = capacity (`newton`, `newton_prices`): PERFORMANCE knobs
# (they decide how good the price estimate is, never the answer, which is certified)
_NEWTON_STEP0 = 0.05  # first (and largest) finite-difference step in the log prices
_NEWTON_STEP_MIN = 0.01  # smallest finite-difference step after a move
_PLATEAU_MOVE = 1e-12  # demand change (relative to capacity) that counts as "moved"
_PLATEAU_WIDEN = 4.0  # factor widening a finite-difference step on a demand plateau
_CUT_UNDERUSE = 0.99  # a type used below this fraction of capacity may be priced 0
_CUT_LOG_DROP = -2.0  # ... when Newton wants its log price this much below the others
_CUT_BALANCE = 0.1  # level stages cut only once the other types are within this of balance
_CUT_TRIES = 4  # attempts to price a slack type 0
_BACKTRACK = (1.0, 0.5, 0.25, 0.125)  # damped Newton step lengths tried in turn
_BAND_PER_ERROR = 4.0  # band of near-ties = Newton's capacity error / this ...
_BAND_MAX = 0.05  # ... at most this
_SAMPLE_TOL = 1e-2  # capacity error at which the sampled phase stops
NEWTON_TOL = 1e-3  # capacity error at which the full phase stops
NEWTON_EVALS = 40  # demand evaluations of the sampled phase and of a floor stage
_LEVEL_NEWTON_EVALS = 30  # demand evaluations of the full phase of a level stage
IPM_MIN_EXPLICIT = 400  # masters with more explicit jobs go to HiGHS' interior point


_MASTERS: dict[bool, Backend] = {}


def _master_backend(ipm: bool) -> Backend:
    """The backend of restricted masters and dual LPs when the caller left HiGHS' algorithm
    to fairalloc: the simplex without presolve for small ones (PERFORMANCE: a 23 x 31 master
    of a 100-job round, 0.33 ms per solve with HiGHS' defaults, 0.17 ms like this: presolve
    removes nothing from a master), the interior point for large ones (made once)."""
    be = _MASTERS.get(ipm)
    if be is None:
        be = get_backend("highs", need="lp", solver="ipm") if ipm else \
            get_backend("highs", need="lp", solver="simplex", presolve=False)
        _MASTERS[ipm] = be
    return be


def sub_solve(solver: StageSolver, lp: LinearProgram, *, ipm: bool,
              basis: LPBasis | None = None, keep_basis: bool = False,
              statuses: tuple[np.ndarray, np.ndarray] | None = None) -> LPSolution | None:
    """Solve a restricted master / dual LP with the stage solver's backend (HiGHS: simplex,
    or interior point for large masters, when the caller left the choice to fairalloc).
    ``None`` unless an optimal point with duals came back (the caller then falls back to the
    full LP, whose certificate decides). The solve is recorded in the solver's log.
    ``basis`` / ``keep_basis``: start the simplex from a basis of this LP's shape, keep the
    final one (``extra["basis"]``); only where the backend has the ``basis`` capability.
    ``statuses`` (columns', rows'; without ``basis``): a crash basis the simplex starts from
    (`fairalloc.backends.Backend.basis_from_statuses`)."""
    be = _master_backend(ipm) if solver.backend_spec == "highs" else solver.backend
    if not be.supports("basis"):
        basis, keep_basis = None, False
    elif basis is None and statuses is not None:
        basis = be.basis_from_statuses(lp.shape, *statuses)
    try:
        sol = be.solve_lp(lp, basis=basis, keep_basis=keep_basis)
    except SolverError as exc:
        solver.log.solved(be.name, exc.raw_status, status=exc.status)
        return None
    solver.log.solved(be.name, sol.raw_status, sol.iterations, status=sol.status)
    if sol.status != "optimal" or sol.x is None or sol.row_duals is None:
        return None
    return sol


# The knobs that decide when the structured solvers decline (``structured_max_types``,
# ``sample_gate_types``, ``max_explicit_share``, ``min_degenerate_jobs``) are fields of
# `fairalloc.throughput.Tuning`, with their measurements.
#: path-step note of a stage handed to the whole LP before any structured work
MANY_TYPES = "many types"
DEGENERATE = "degenerate prices"
#: decline reason: Newton's method found no prices balancing demand and capacity
NO_ESTIMATE = "no price estimate"


def too_many_types(solver: StageSolver) -> bool:
    """Whether the stage has more accelerator types than ``tuning.structured_max_types``."""
    return solver.inst.k > solver.tuning.structured_max_types


def too_many_explicit(explicit: np.ndarray, n: int, tuning: Tuning) -> bool:
    """Whether a restricted master with the ``explicit`` jobs would be about as large as the
    whole LP (more than ``tuning.max_explicit_share`` of the ``n`` jobs, and more than
    ``tuning.min_degenerate_jobs``)."""
    m = int(explicit.sum())
    return m > tuning.max_explicit_share * n and m > tuning.min_degenerate_jobs


def floor_vertex_x(E: int, a: np.ndarray, e1: np.ndarray, e2: np.ndarray, L: np.ndarray
                 ) -> np.ndarray:
    """The allocation (``E`` columns) of jobs held at their vertices ``e1, e2`` (see
    `fairalloc.throughput.structured.floor`'s vertices: ``e2 = -1`` floor on ``e1``, ``-2``
    all the time on ``e1``, ``>= 0`` split at the floor; ``e1 = -1`` nothing) with floors
    ``L`` and single-column coefficients ``a``."""
    xcol = np.zeros(E)
    has1 = e1 >= 0
    split = e2 >= 0
    full = e2 == -2
    floor1 = has1 & (e2 == -1)
    e1s = np.maximum(e1, 0)
    e2s = np.maximum(e2, 0)
    a1 = a[e1s]
    a2 = np.where(split, a[e2s], 1.0)
    d = np.where(split, a2 - a1, 1.0)
    xcol[e1s[has1]] = np.where(floor1, L / np.where(has1, a1, 1.0),
                               np.where(full, 1.0, np.where(split, (a2 - L) / d, 0.0)))[has1]
    xcol[e2s[split]] = np.where(split, (L - a1) / d, 0.0)[split]
    return xcol


#: PERFORMANCE knob: constants freed on a type their vertices overload carry this many times
#: the overload (`free_overloaded`): freed jobs keep their floors, so they cannot shed all of it
OVERLOAD_FREE_FACTOR = 5.0


def free_overloaded(use: np.ndarray, over: np.ndarray, tie: np.ndarray, constant: np.ndarray
                    ) -> np.ndarray:
    """The ``constant`` jobs to give their own variables where the constants' vertices use
    more than the capacity of a type (``over > 0``: by how much; ``use``: each job's use of
    each type, ``(n, k)``): on each such type, those closest to a tie (smallest ``tie``, the
    price band at which a job's vertex becomes ambiguous) until they carry
    `OVERLOAD_FREE_FACTOR` times the overload (all of them if they carry less). A master
    with the constants as they are has no feasible point; widening the band for every job
    instead makes it about the whole LP (#28: Gavel-drawn FTF, 4,096 jobs)."""
    free = np.zeros(constant.size, dtype=bool)
    cand = np.flatnonzero(constant)
    order = cand[np.argsort(tie[cand], kind="stable")]
    for t in np.flatnonzero(over > 0):  # a few types, not jobs
        on = order[use[order, t] > 0]
        cum = np.cumsum(use[on, t])
        free[on[: int(np.searchsorted(cum, OVERLOAD_FREE_FACTOR * over[t])) + 1]] = True
    return free


def structured_applies(solver: StageSolver, *, kept: int, any_size: bool = False) -> bool:
    """Whether a stage of ``solver`` has the structure the structured solvers exploit: single
    job columns only (no pairs, no placement), only time and capacity rows besides ``kept``
    kept stages, and (unless ``any_size``: the plan's exact tail) enough jobs for the
    structure to pay (else the whole LP is as fast)."""
    inst = solver.inst
    return (inst.pairs is None and not inst.placement and len(solver.fixed) == kept
            and solver.base_layout.blocks() == (("time", inst.n), ("capacity", inst.k))
            and (any_size or solver.structured_worth()))


def unchecked_certificate(value: float) -> Certificate:
    """The certificate of a provisional stage: no bound was computed, so its gap and
    residuals are infinite and it is not ``ok`` (if it ever reached a user, the check would
    fail)."""
    return Certificate(kind="lp", primal_value=value, dual_bound=float("inf"),
                       gap=float("inf"), primal_residual=float("inf"))


def certified(solver: StageSolver, stage: LevelStage | LinearStage, xcol: np.ndarray,
               duals: np.ndarray, provisional: bool = False) -> StageResult | None:
    """The stage result if the full LP's certificate at ``xcol`` and ``duals`` (in the
    stage program's row layout) passes, else ``None``.

    ``provisional``: return the result without computing the certificate (its certificate
    is `unchecked_certificate`). Only for callers that certify whatever they use as an
    answer: a Dinkelbach sequence, whose intermediate stages only choose its next point."""
    lp = solver.program(stage)
    v = solver.point(stage, xcol)
    if provisional:
        cert = unchecked_certificate(float(v[-1]))
    else:
        cert = solver.certificate(lp, stage, v, duals)
        if not cert.ok:
            return None
    return StageResult(lp, v, duals, cert.primal_value, cert, 0, solver.layout(stage),
                       provisional)


@dataclass
class Vertices:
    """Each job's chosen vertex: columns ``e1, e2`` (``e2 = -1``: one column) and flags."""

    e1: np.ndarray
    e2: np.ndarray
    lo: np.ndarray  # level range in which the vertex is valid
    hi: np.ndarray
    ambiguous: np.ndarray


class Demand:
    """Capacity each job uses at its cheapest vertex, vectorised over jobs (``k`` small).

    A job needing throughput ``L`` from its polytope ``{a . x >= L, sum x <= 1, x >= 0}``
    pays (per unit of its scale factor) the lower convex envelope of the points ``(0, 0)``
    (idle) and ``(a_j, r_j)`` at ``L``. Its candidate vertices mix two points, ``lo`` (a type,
    or idle) and ``hi``: ``w = (L - a_lo) / (a_hi - a_lo)`` of the time on ``hi``, valid while
    ``0 <= w <= 1``, at cost ``r_lo + w (r_hi - r_lo)``. A candidate's ``(lo, hi)`` pair is
    the same for every job, so pricing them is a handful of ``(jobs, candidates)`` array
    operations with no gather.
    """

    def __init__(self, A: np.ndarray, s: np.ndarray, b: np.ndarray, h: np.ndarray) -> None:
        n, k = A.shape
        lo = [k] * k + [j for j in range(k) for _ in range(j + 1, k)]
        hi = list(range(k)) + [jp for j in range(k) for jp in range(j + 1, k)]
        self.lo, self.hi = np.array(lo), np.array(hi)
        Aext = np.concatenate((A, np.zeros((n, 1))), axis=1)
        self.alo, self.ahi = Aext[:, self.lo], Aext[:, self.hi]
        span = self.ahi - self.alo
        ok = (self.ahi > 0) & ((self.lo == k) | (self.alo > 0)) & (span != 0)
        with np.errstate(divide="ignore"):
            self.inv = np.where(ok, 1.0 / span, np.nan)  # nan: never a vertex of this job
        self.s, self.b, self.h, self.k = s, b, h, k

    def _priced(self, r: np.ndarray, theta: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(L, idle, W, cost)``: levels (a level below 0 needs nothing: ``idle``), each
        candidate's weight on ``hi`` and its cost per unit scale factor (``inf``: invalid)."""
        L = self.h + self.b * theta
        idle = L < 0.0
        L = np.where(idle, 0.0, L)
        W = (L[:, None] - self.alo) * self.inv
        rext = np.append(r, 0.0)
        rlo = rext[self.lo]
        cost = np.where((W >= 0.0) & (W <= 1.0), rlo + W * (rext[self.hi] - rlo), np.inf)
        return L, idle, W, cost

    def vertices(self, col: np.ndarray, r: np.ndarray, theta: float, *, band: float
                 ) -> Vertices:
        """Every job's cheapest vertex as master columns (``col``: column of each (job, type),
        ``-1`` if none). ``ambiguous`` marks jobs with a second vertex within ``band`` of the
        cheapest cost, a level within ``band`` of the vertex's validity range, or no valid
        vertex at all."""
        L, _, W, cost = self._priced(r, theta)
        rows = np.arange(cost.shape[0])
        best = cost.argmin(axis=1)
        low = cost[rows, best]
        near = self._near(r, L, W, cost, best, low, band)
        lo_t, hi_t = self.lo[best], self.hi[best]
        two = lo_t < self.k
        colx = np.concatenate((col, np.full((rows.size, 1), -1)), axis=1)
        e1 = np.where(two, colx[rows, lo_t], colx[rows, hi_t])
        e2 = np.where(two, colx[rows, hi_t], -1)
        a_lo, a_hi = self.alo[rows, best], self.ahi[rows, best]
        lo = np.where(two, np.minimum(a_lo, a_hi), 0.0)  # level range of the vertex
        hi = np.maximum(a_lo, a_hi)
        edge = (L >= hi * (1 - band)) | (two & (L <= lo * (1 + band)))
        none = ~np.isfinite(low)
        return Vertices(np.where(none, -1, e1), e2, lo, hi, near | edge | none)

    def _near(self, r: np.ndarray, L: np.ndarray, W: np.ndarray, cost: np.ndarray,
              best: np.ndarray, low: np.ndarray, band: float) -> np.ndarray:
        """Jobs with a second candidate that relative errors of ``band`` in every price and in
        the level could make cheapest.

        A price error ``p_t (1 + e_t)`` changes the cost difference of candidates ``c`` and
        the cheapest ``b`` by ``sum_t e_t p_t (x_ct - x_bt)``, at most ``band sum_t p_t
        |x_ct - x_bt|`` (`price_spread`); a level error ``L (1 + e)`` by at most ``band L
        |slope_c - slope_b|`` (``slope``: a candidate's cost per unit of level). Comparing the
        cost gap with this sensitivity, not with the cost itself, keeps jobs whose candidates
        differ only on a cheap type (one dominant type, the others priced far below it) out
        of the band."""
        rows = np.arange(cost.shape[0])
        rext = np.append(r, 0.0)
        with np.errstate(invalid="ignore"):
            spread = price_spread(rext, self.lo, self.hi, 1.0 - W, W, best)
            slope = (rext[self.hi] - rext[self.lo]) * self.inv
            dslope = np.abs(slope - slope[rows, best][:, None]) * L[:, None]
            sens = band * (spread + np.nan_to_num(dslope, nan=0.0, posinf=0.0))
            close = np.isfinite(cost) & ((cost - low[:, None]) <= sens + TINY)
        close[rows, best] = False
        return close.any(axis=1)

    def __call__(self, r: np.ndarray, theta: float) -> tuple[np.ndarray, np.ndarray] | None:
        """Capacity used per type and its derivative in ``theta`` (``None``: a level unmet)."""
        k = self.k
        _, idle, W, cost = self._priced(r, theta)
        best = cost.argmin(axis=1)
        rows = np.arange(best.size)
        if not np.isfinite(cost[rows, best]).all():
            return None
        w = W[rows, best]
        g = np.where(idle, 0.0, self.s * self.b * self.inv[rows, best])
        lo, hi = self.lo[best], self.hi[best]
        use = np.bincount(hi, self.s * w, k + 1) + np.bincount(lo, self.s * (1.0 - w), k + 1)
        d = np.bincount(hi, g, k + 1) - np.bincount(lo, g, k + 1)
        return use[:k], d[:k]


def price_spread(rext: np.ndarray, s1: np.ndarray, s2: np.ndarray, x1: np.ndarray,
                 x2: np.ndarray, best: np.ndarray) -> np.ndarray:
    """``sum_t p_t |x_ct - x_bt|`` for every job and candidate ``c`` against the job's ``best``.

    Each candidate puts time ``x1[:, c]`` on type ``s1[c]`` and ``x2[:, c]`` on ``s2[c]``
    (type ``k``: idle, ``rext[k] = 0``; ``s1[c] != s2[c]``); ``rext`` are the prices with a
    trailing 0. Uses ``|u - v| = u + v - 2 min(u, v)`` over the types two candidates share.
    Invalid candidates (``nan`` weights) give ``nan``.
    """
    rows = np.arange(best.size)
    y1, y2 = x1[rows, best][:, None], x2[rows, best][:, None]
    r1, r2 = rext[s1], rext[s2]
    # the price of each type a candidate shares with each other candidate (K x K tables,
    # gathered by ``best``; 0 where they share none): no (n, K) comparisons (#28: 35 % of
    # the function's time at 2,048 jobs)
    share = np.where(s1[None, :] == s1[:, None], r1[None, :], 0.0)[best]
    share *= np.minimum(x1, y1)
    share += np.where(s1[None, :] == s2[:, None], r1[None, :], 0.0)[best] * np.minimum(x1, y2)
    share += np.where(s2[None, :] == s1[:, None], r2[None, :], 0.0)[best] * np.minimum(x2, y1)
    share += np.where(s2[None, :] == s2[:, None], r2[None, :], 0.0)[best] * np.minimum(x2, y2)
    own = r1 * x1
    own += r2 * x2
    own += (r1[best] * y1[:, 0] + r2[best] * y2[:, 0])[:, None]
    own -= 2.0 * share
    return np.maximum(own, 0.0, out=own)


def newton(dem: Demand, cap: np.ndarray, ref: int, theta: float, lr: np.ndarray,
            J: np.ndarray | None, sat: float, *, tol: float, max_evals: int
            ) -> tuple[float, np.ndarray, np.ndarray | None, float] | None:
    """Damped Newton on the capacity equations ``demand(prices, theta) = cap``.

    Unknowns: ``theta`` and the log prices ``lr`` of the priced types other than ``ref``
    (price 1). With ``ref = -1`` every price is free and ``theta`` stays put (floor stages,
    whose demand does not depend on it and whose prices have a scale of their own: ``dem``
    returns a zero derivative). ``d demand / d theta`` is exact; the price columns of ``J``
    (``k x (k + 1)``: column 0 for theta, ``1 + j`` for type ``j``) are one-sided differences
    (towards balance, widened on plateaus of the demand staircase) when ``J`` is ``None``,
    then kept up to date by Broyden updates. Steps are damped (at most ``e`` in any price;
    backtracking on the largest relative capacity error).

    Two boundary cases of the optimality conditions are followed as well:

    * a type with slack (that Newton wants much cheaper, or used below half its capacity)
      is priced 0 (``lr = -inf``) when it stays within capacity at price 0 and the error
      falls; its equation becomes ``demand <= cap`` (complementary slackness). In a level
      stage this waits until the other types balance (a low ``theta`` leaves every type
      slack), and if ``ref`` is priced 0 the most expensive remaining type becomes ``ref``.
      A type priced 0 that is overloaded later gets its price back;
    * ``theta`` never exceeds ``sat`` (where the first job reaches its full speed). Once it
      sits there the unknown ``theta`` is replaced by a common utilisation ``u``
      (``demand = u cap``): a solution with ``u <= 1`` proves ``sat`` optimal; one with
      ``u > 1`` means the level lies just below ``sat`` and ``u - 1`` counts as error.

    Returns ``(theta, lr, J, error)``; ``error`` is the largest relative capacity violation
    (or gap on a priced type); 0 when ``sat`` is proved optimal.
    """
    k = cap.size
    types = np.arange(k)

    def at(th: float, lp: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        with np.errstate(over="ignore"):
            return dem(np.exp(lp), th)

    def merit(use: np.ndarray, zero: np.ndarray, u: float) -> float:
        rel = use / cap - u
        return float(np.max(np.where(zero, np.maximum(rel, 0.0), np.abs(rel))))

    top = sat - SAT_ROUNDING * max(1.0, abs(sat))  # theta at sat, up to rounding
    first = at(theta, lr)
    if first is None:
        return None
    out = first
    evals, delta, fresh, restores, cut_tries = 1, _NEWTON_STEP0, False, 0, 0
    zero = np.isneginf(lr)
    saved = np.zeros(k)  # log prices (relative to ref) of types priced 0, to restore
    at_sat = False
    u = 1.0
    err = merit(out[0], zero, u)
    while evals < max_evals:
        use, d = out
        if theta >= top and (use <= cap * (1.0 + tol)).all():
            return theta, lr, J, 0.0
        if err <= tol and not at_sat:
            break
        back = zero & (use > cap * (1.0 + tol))
        if back.any() and restores < 3:  # a type priced 0 is overloaded again: price it
            restores += 1
            lr = lr.copy()
            lr[back] = saved[back] + (lr[ref] if ref >= 0 else 0.0)
            zero = np.isneginf(lr)
            o = at(theta, lr)
            evals += 1
            if o is None:
                return None
            out, err, J = o, merit(o[0], zero, u), None
            continue
        act = ~zero
        fr = act & (types != ref)
        cols = np.r_[0, 1 + types[fr]]
        if J is None:
            J = np.zeros((k, k + 1))
            for j in types[fr]:
                # difference towards balance (an underused type gets cheaper); on a plateau
                # of the staircase, widen the step until demand moves
                h = -delta if use[j] < cap[j] else delta
                for _ in range(4):
                    lp = lr.copy()
                    lp[j] += h
                    o = at(theta, lp)
                    evals += 1
                    if o is None:
                        return None
                    J[:, 1 + j] = (o[0] - use) / h
                    if np.abs(o[0] - use).max() > _PLATEAU_MOVE * cap.max():
                        break
                    h *= _PLATEAU_WIDEN
            fresh = True
        J[:, 0] = -cap if at_sat else d
        Js = J[np.ix_(act, cols)] / cap[act, None]
        step = np.linalg.lstsq(Js, u - use[act] / cap[act], rcond=None)[0]
        if not at_sat and theta >= top and step[0] > 0:
            at_sat, u = True, float(np.max(use[act] / cap[act]))  # theta stays at sat
            J[:, 0] = -cap
            err = merit(use, zero, u)
            continue
        full = np.zeros(k)
        full[fr] = step[1:]
        drop = full - full[act].max() if ref >= 0 else full  # floor stages: absolute prices
        # candidates for price 0: slack types Newton wants much cheaper, or far below capacity
        cut = act & (use < cap * _CUT_UNDERUSE) & ((drop < _CUT_LOG_DROP) | (use < cap * 0.5))
        if ref < 0 and cut.any():  # floor stages: the most underused type first
            cut = types == np.argmin(np.where(cut, use / cap, np.inf))
        rest = act & ~cut
        # level stages: only once the other types balance (a low theta leaves all slack)
        near = ref < 0 or bool(np.all(np.abs(use[rest] / cap[rest] - u) < _CUT_BALANCE))
        if cut.any() and near and (ref < 0 or rest.any()) and cut_tries < _CUT_TRIES:
            cut_tries += 1
            lp2 = lr.copy()
            lp2[cut] = -np.inf
            z2 = np.isneginf(lp2)
            ref2 = ref
            if ref >= 0 and z2[ref]:
                ref2 = int(np.argmax(np.where(z2, -np.inf, lr + full)))
                lp2 = lp2 - lp2[ref2]
            o = at(theta, lp2)
            evals += 1
            # price 0 is right for a type still within capacity at price 0; keep the cut if
            # it also helps
            if (o is not None and (o[0][cut] <= cap[cut] * (1.0 + tol)).all()
                    and merit(o[0], z2, u) < err):
                saved[cut] = lr[cut] - (lr[ref2] if ref2 >= 0 else 0.0)
                lr, zero, ref, out = lp2, z2, ref2, o
                err, J = merit(o[0], zero, u), None
                continue
        big = float(np.abs(step[1:]).max(initial=0.0))
        if big > 1.0:
            step /= big
        moved = False
        for t in _BACKTRACK:
            u2, th2 = (u + t * step[0], theta) if at_sat else (u, min(theta + t * step[0], sat))
            lp2 = lr.copy()
            lp2[fr] += t * step[1:]
            o = at(th2, lp2)
            evals += 1
            if o is not None and th2 >= top and (o[0] <= cap * (1 + tol)).all():
                return th2, lp2, J, 0.0
            e2 = merit(o[0], zero, u2) if o is not None else np.inf
            if e2 < err:
                moved = True
                break
        if not moved:
            if fresh:
                break  # no progress even with a fresh Jacobian: the staircase's resolution
            J = None
            continue
        assert o is not None  # moved: the accepted point has a demand
        dz = np.r_[(u2 - u) if at_sat else (th2 - theta), lp2[fr] - lr[fr]]
        if dz[1:] @ dz[1:] > 0:  # Broyden update of the price columns
            resid = o[0] - use - J[:, cols] @ dz
            J[:, cols[1:]] += np.outer(resid, dz[1:]) / (dz[1:] @ dz[1:])
        fresh = False
        delta = min(_NEWTON_STEP0, max(_PLATEAU_WIDEN * float(np.abs(dz[1:]).max(initial=0.0)),
                                     _NEWTON_STEP_MIN))
        theta, u, lr, out, err = th2, u2, lp2, o, e2
    if at_sat:  # demand at sat exceeds capacity by the factor u: the level lies just below
        err = max(err, u - 1.0)
    return theta, lr, J, err


_WARM_SKIPS_NEWTON = True  # a warm start uses the previous prices as the estimate as is
_WARM_BAND = 0.005  # relative band of near-ties kept explicit around warm prices
_NEWTON_SAMPLE = 1024  # jobs in the first (sampled) Newton phase
NEWTON_MAX_ERROR = 0.25  # larger capacity errors: no estimate (the full LP answers)


@dataclass
class NewtonSeed:
    """Newton's end point in one level stage, to start the next of a sequence of similar
    stages (the Dinkelbach stages of finish-time fairness: same rows, other levels).

    ``prices``: the price ratios (reference type 1), ``jacobian``: the capacity Jacobian
    (`newton`'s ``J``), both ``None`` until a stage balanced demand and capacity."""

    prices: np.ndarray | None = None
    jacobian: np.ndarray | None = None

    def usable(self, k: int, ref: int) -> bool:
        """Whether the seed holds ``k`` positive, finite prices (``ref`` priced)."""
        p = self.prices
        return (p is not None and p.shape == (k,) and bool(np.all(np.isfinite(p)))
                and bool(np.all(p > 0)))

    def remember(self, out: tuple[float, np.ndarray, np.ndarray | None, float] | None,
                 ref: int) -> None:
        """Keep `newton`'s end point ``out`` if it balanced (else forget the seed)."""
        if out is None or out[3] > NEWTON_MAX_ERROR or not np.all(np.isfinite(out[1])):
            self.prices = self.jacobian = None
            return
        self.prices = np.exp(out[1] - out[1][ref])
        self.jacobian = None if out[2] is None else out[2].copy()


def band(err: float) -> float:
    """Band of near-ties given Newton's capacity error: coarse staircases (few, large jobs
    per type) leave errors of several percent, and the jobs on their steps must stay free."""
    return float(np.clip(err / _BAND_PER_ERROR, BAND0, _BAND_MAX))


def newton_prices(A: np.ndarray, s: np.ndarray, b: np.ndarray, h: np.ndarray,
                   cap: np.ndarray, *, warm: tuple[np.ndarray, float] | None = None,
                   info: dict[str, bool] | None = None,
                   rough: list[tuple[np.ndarray, float]] | None = None,
                   seed: NewtonSeed | None = None, demand: Demand | None = None,
                   tuning: Tuning = DEFAULT_TUNING
                   ) -> tuple[np.ndarray, float, float] | None:
    """Approximate prices, level and band of near-ties of a level stage (``None``: none).

    Solves the ``k`` equations *demand = capacity* for ``theta`` and the ``k - 1`` free price
    ratios, where demand is every job's capacity use at its cheapest vertex (`Demand`)
    at level ``h + b theta`` (`newton`). These are the stage's optimality conditions;
    with ``n`` jobs demand is a fine staircase in the prices, so Newton converges to the prices
    up to about the staircase's steps. It runs first on a sample of jobs (with the capacity
    scaled alike), then on all of them starting from the sample's solution and Jacobian. The
    estimate only decides which jobs get their own variables in the master LP; the exact
    solution and its certificate come from there. ``rough``: a list to which the prices and
    level of Newton's last point are appended when it found no balance (``None`` returned).
    ``seed`` (`NewtonSeed`): price ratios and Jacobian of a similar stage solved before (the
    previous stage of a Dinkelbach sequence) start the full phase instead of the sampled
    phase; the seed is then overwritten with this stage's end point. ``demand``: the
    caller's `Demand` of all ``n`` jobs (reused when every job needs throughput).
    """
    need = (b > 0) | (h > 0)
    idx = np.flatnonzero(need)
    if idx.size == 0 or not (b[idx] > 0).any():
        return None
    whole = idx.size == A.shape[0]
    A, s, b, h = A[idx], s[idx], b[idx], h[idx]
    pos = b > 0
    sat = float(np.min((A[pos].max(axis=1) - h[pos]) / b[pos]))
    low = float(np.max(-h[pos] / b[pos]))  # below this level some job needs nothing
    # the reference type: largest median throughput (np.median's wrapper cost 20 us of a
    # warm 100-job round; the same value from one sort, no NaN here)
    ref = int(np.argmax(_column_nanmedian(A)))
    if not (np.isfinite(sat) and sat > low):
        return None
    m = idx.size
    warmed = False
    # above the sampled phase's size a cold start is faster (measured: 10,000 jobs, 34 ms cold
    # vs 52-62 ms from the previous round's prices, whose band keeps more jobs explicit)
    if warm is not None and m <= 2 * _NEWTON_SAMPLE:
        # start from a previous round's prices and level (scheduling rounds differ by a few
        # arrivals and departures): usable when every price is positive and the level lies
        # inside this stage's bracket; the sampled phase is skipped
        wp, wt = warm
        if (wp.shape == (A.shape[1],) and np.all(np.isfinite(wp)) and np.all(wp > 0)
                and np.isfinite(wt) and low < wt < sat):
            if _WARM_SKIPS_NEWTON:
                # the previous round's prices are the estimate (a few arrivals and
                # departures move them little); the master LP and the certificate decide,
                # and a wider band follows if the folded vertices do not fit
                if info is not None:
                    info["warm"] = True
                return wp / wp[ref], float(wt), _WARM_BAND
            warmed = True
    both = (A > 0) & (A[:, [ref]] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r0 = _column_nanmedian(np.where(both, A / A[:, [ref]], np.nan))
    if not (np.isfinite(r0).all() and (r0 > 0).all()):
        return None
    theta, lr, J = 0.5 * (low + sat), np.log(r0), None
    if warmed:
        assert warm is not None
        theta, lr = float(warm[1]), np.log(warm[0] / warm[0][ref])
    seeded = (seed is not None and not warmed and m > 2 * _NEWTON_SAMPLE
              and seed.usable(A.shape[1], ref))
    if seeded:
        assert seed is not None and seed.prices is not None
        lr, J = np.log(seed.prices / seed.prices[ref]), seed.jacobian
        J = None if J is None else J.copy()
    if m > 2 * _NEWTON_SAMPLE and not warmed and not seeded:
        if info is not None:
            info["sampled"] = True
        sub = np.random.default_rng(0).choice(m, size=_NEWTON_SAMPLE, replace=False)
        frac = _NEWTON_SAMPLE / m
        out = newton(Demand(A[sub], s[sub], b[sub], h[sub]), cap * frac, ref, theta, lr, None,
                      sat, tol=_SAMPLE_TOL, max_evals=NEWTON_EVALS)
        if out is not None and out[3] < tuning.newton_sample_max_error:
            theta, lr, J, _ = out
            J = None if J is None else J / frac
        elif A.shape[1] > tuning.sample_gate_types:
            # many types: the full phase (O(n k^2) per step) would not balance either
            if info is not None:
                info["sample_failed"] = True
            return None
    dem = demand if demand is not None and whole else Demand(A, s, b, h)
    out = newton(dem, cap, ref, theta, lr, J, sat, tol=NEWTON_TOL, max_evals=_LEVEL_NEWTON_EVALS)
    if seed is not None:
        seed.remember(out, ref)
    if out is None or out[3] > NEWTON_MAX_ERROR:
        if out is not None and rough is not None:
            # Newton's unbalanced end point (coarse staircases: jobs of one model switch
            # types together): a caller that aggregates tied rows may still start from it
            rough.append((np.exp(out[1]), float(out[0])))
        return None
    if info is not None:
        info["warm"] = warmed
    return np.exp(out[1]), float(out[0]), band(out[3])


def _column_nanmedian(X: np.ndarray) -> np.ndarray:
    """``np.nanmedian(X, axis=0)`` (NaN for a column without numbers) from one sort:
    numpy's version goes through masked arrays, about 0.15 ms on a 100 x 3 matrix, a tenth of
    a warm scheduling round."""
    S = np.sort(X, axis=0)  # NaNs sort last
    cnt = np.count_nonzero(~np.isnan(X), axis=0)
    cols = np.arange(X.shape[1])
    lo = np.maximum((cnt - 1) // 2, 0)
    hi = np.minimum(cnt // 2, max(X.shape[0] - 1, 0))
    if X.shape[0] == 0:
        return np.full(X.shape[1], np.nan)
    med = 0.5 * (S[lo, cols] + S[hi, cols])
    return np.where(cnt > 0, med, np.nan)


def explicit_columns(inst: ColumnInstance, explicit: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The jobs that keep their own variables in a restricted master, their columns, and
    each column's row among those jobs."""
    ex = np.flatnonzero(explicit)
    cols = np.flatnonzero(explicit[inst.mem_job])
    remap = np.full(inst.n, -1)
    remap[ex] = np.arange(ex.size)
    return ex, cols, remap[inst.mem_job[cols]]
