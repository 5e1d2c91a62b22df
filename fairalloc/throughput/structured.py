"""Structured exact solvers for the level and floor stages of the throughput policies.

One cohesive algorithm (over 800 lines on purpose): the level solver (:func:`fast_level`) and
the floor solver (:func:`fast_floor`, the work-conserving stage) share the demand model
(:class:`_Demand`, :class:`_FloorDemand`), the Newton price estimate (:func:`_newton`), the
restricted-master machinery and the full-LP certificate; splitting them would split one
method across files.

Only the ``k`` capacity rows (and the level ``theta``) couple the jobs of a stage LP, so at
given capacity prices every job's best response is a vertex of its own small polytope. These
solvers estimate the prices by Newton's method on *demand = capacity*, fold every job whose
vertex is clear into the capacity rows, solve a small restricted master LP with HiGHS, assemble
the duals of the whole LP (in closed form, or by an LP in the ``k`` prices) and accept the
result only when :func:`fairalloc.certificates.lp_certificate` on the **full** LP passes;
otherwise they hand the stage to the full LP. The method, with the paper sections, is in
``formulations/max_min_fairness.md``.

Path steps recorded in the stage solver (``SolveStats.path``): ``structured-level`` (a level
stage certified by the structured solver), ``floor-from-level`` (the work-conserving stage
certified at the level's allocation with scaled level duals, no LP), ``structured-floor``
(the floor stage certified from its restricted master), ``floor-freed:<jobs>`` (a floor round
gave ``<jobs>`` blocking jobs their own variables), ``exact-lp`` (the whole LP). A hand-over
to the whole LP is recorded in ``SolveStats.fallbacks`` as ``"structured-level->exact-lp:
<reason>"`` or ``"structured-floor->exact-lp: <reason>"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backends import LinearProgram, LPSolution, get_backend
from ..errors import SolverError
from .instance import TINY, ColumnInstance
from .rows import RowLayout
from .stages import LevelStage, LinearStage, StageResult, StageSolver

# --------------------------------------------------------------------------------------------
# structured exact solver for level (max-min) stages: aggregation + column generation
# --------------------------------------------------------------------------------------------
__all__ = ["FLOOR_FREED", "FLOOR_FROM_LEVEL", "STRUCTURED_FLOOR", "STRUCTURED_LEVEL",
           "fast_floor", "fast_level"]

STRUCTURED_LEVEL = "structured-level"  # path step: level stage certified by this solver
STRUCTURED_FLOOR = "structured-floor"  # path step: floor stage certified from its master
FLOOR_FROM_LEVEL = "floor-from-level"  # path step: floor stage certified with level duals
FLOOR_FREED = "floor-freed"  # path step prefix: blocking jobs given their own variables

_FAST_MIN_JOBS = 64  # PERFORMANCE knob: below this many jobs the full LP is as fast
_BAND0 = 0.001  # PERFORMANCE knob: relative price error assumed for the Newton prices
_LEVEL_MAX_ROUNDS = 30  # PERFORMANCE knob: master rounds of a level stage before the full LP
_FLOOR_MAX_ROUNDS = 4  # PERFORMANCE knob: master rounds of a floor stage before the full LP
_LEVEL_BAND_GROWTH = 3.0  # PERFORMANCE knob: band widening when folded vertices do not fit
_FLOOR_BAND_GROWTH = 4.0  # PERFORMANCE knob: the same for floor stages
_MAX_BAND = 0.5  # PERFORMANCE knob: widest band of near-ties before the full LP takes over
#: ACCURACY: relative rounding margin at which theta counts as at its saturation bound
_SAT_ROUNDING = 1e-12
#: ACCURACY: a reduced cost above this (relative to the column's level term) is a violation
_REDUCED_COST_TOL = 1e-9
#: ACCURACY: relative tolerance for a work-conserving objective to be a per-job multiple of
#: the level rows (the floor solver's structure)
_OMEGA_RTOL = 1e-12
#: ACCURACY: a column with more time than this is "used" (reads a vertex off an allocation)
_USED = 1e-12
#: ACCURACY: relative rounding of a row activity (time, capacity, floor, theta range) below
#: which the row counts as tight
_ACTIVITY_ROUNDING = 1e-9
#: ACCURACY: relative distance of a job's level from its floor at which it sits on the floor
_AT_FLOOR = 1e-7
# Newton on demand = capacity (:func:`_newton`, :func:`_newton_prices`): PERFORMANCE knobs
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
_SAMPLE_MAX_ERROR = 0.05  # the sampled phase's solution seeds the full phase below this
_NEWTON_TOL = 1e-3  # capacity error at which the full phase stops
_NEWTON_EVALS = 40  # demand evaluations of the sampled phase and of a floor stage
_LEVEL_NEWTON_EVALS = 30  # demand evaluations of the full phase of a level stage
_IPM_MIN_EXPLICIT = 400  # masters with more explicit jobs go to HiGHS' interior point


def fast_level(solver: StageSolver, stage: LevelStage, *, max_rounds: int = _LEVEL_MAX_ROUNDS,
                warm: tuple[np.ndarray, float] | None = None) -> StageResult:
    """Exact solve of a level stage (see :func:`_fast_level_unit`), at unit scale.

    The stage is first divided by the powers of two of :meth:`LevelStage.units` (``theta =
    sigma theta'``, level rows divided by ``rho``), so that the structured solver's own
    thresholds see the same numbers whatever the caller's units; its duals are mapped back
    (level rows ``lambda = sigma lambda' / rho``, the others ``sigma y'``) and the full LP's
    certificate is computed in the caller's units.
    """
    sigma, rho = stage.units()
    # a warm start (capacity prices and level of a previous, similar stage, in the caller's
    # units) only seeds Newton: the price ratios are unit free, the level goes to unit scale
    wu = None if warm is None else (np.asarray(warm[0], dtype=float), float(warm[1]) / sigma)
    if sigma == 1.0 and rho == 1.0:
        return _fast_level_unit(solver, stage, stage, 1.0, 1.0, max_rounds, wu)
    unit = LevelStage(sp.csr_matrix(stage.C / rho), stage.b * (sigma / rho), stage.h / rho,
                  stage.name)
    return _fast_level_unit(solver, stage, unit, sigma, rho, max_rounds, wu)


def _fast_level_unit(solver: StageSolver, orig: LevelStage, stage: LevelStage, sigma: float,
                     rho: float, max_rounds: int,
                     warm: tuple[np.ndarray, float] | None = None) -> StageResult:
    """Exact solve of a level stage ``max theta: C x - b theta >= h`` exploiting its structure.

    Only the ``k`` capacity rows and ``theta`` couple the jobs. At given capacity prices each
    job's cheapest way to reach its level ``L_m = h_m + b_m theta`` is a vertex of its own
    small polytope ``{a_m . x_m = L_m, sum x_m <= 1, x_m >= 0}``: one column at
    ``x_e = L_m / a_e``, or two columns splitting its whole time. Either way its capacity use
    is *affine in theta*, so a job whose vertex is clear folds into the ``k`` capacity rows;
    only jobs near a tie keep their own variables and rows. The restricted master LP is solved
    by HiGHS, every job's duals follow in closed form (one column:
    ``lambda = s p_j / a_e``; a split: ``lambda = s (p_j' - p_j) / (a_e' - a_e)``,
    ``mu = lambda a_e - s p_j``), every column of the full LP is priced, jobs with positive
    reduced costs get their own variables, and the loop ends when the full LP's independent
    certificate (:func:`lp_certificate` on the complete program with the assembled duals)
    passes. Initial prices and level come from :func:`_newton_prices` (the ``k`` equations
    *demand = capacity* solved by Newton in ``k`` unknowns, a few milliseconds for thousands
    of jobs); jobs near a tie at those prices (within 0.1 %, more where Newton's capacity
    error is larger: :func:`_band`) keep their own variables, so a single small master LP
    usually finishes. Falls back to the full LP when Newton finds no
    estimate (for instance many identical jobs: demand jumps instead of a fine staircase) or
    the loop cannot finish.
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    if not _structured_applies(solver, kept=0):
        return solver.run(orig, orig.name)
    layout = solver.layout(orig)  # time, capacity, kept (empty), level

    def duals_of(mu_: np.ndarray, p_: np.ndarray, lam_: np.ndarray) -> np.ndarray:
        """The full LP's duals in its row layout, in the caller's units (level rows
        ``lambda = sigma lambda' / rho``, the others ``sigma y'``)."""
        return layout.assemble({"time": -mu_ * sigma, "capacity": -p_ * sigma,
                                "level": lam_ * (sigma / rho)})
    owner = inst.mem_job  # single-member columns: one entry per column, sorted by owner
    typ = inst.col_type
    s_e = inst.col_workers
    a = np.asarray(stage.C[owner, np.arange(E)]).ravel()
    b, h = stage.b, stage.h
    need = (b > 0) | (h > 0)
    col = np.full((n, k), -1)
    col[owner, typ] = np.arange(E)
    A = np.zeros((n, k))
    A[owner, typ] = a
    s = inst.jobs.scale_factor
    amax = A.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(b > 0, (amax - h) / np.where(b > 0, b, 1.0), np.inf)
    m0 = int(np.argmin(sat))
    sat_theta = float(sat[m0])
    info: dict[str, bool] = {}
    est = (_newton_prices(A, s, b, h, inst.cap) if warm is None
           else _newton_prices(A, s, b, h, inst.cap, warm=warm, info=info))
    solver.warm_used = bool(est is not None and info.get("warm"))
    if est is None:
        solver.fall_back(STRUCTURED_LEVEL, "no price estimate (Newton found no balance of "
                         "demand and capacity)")
        return solver.run(orig, orig.name)
    p, theta, band = est
    dem = _Demand(A, s, b, h)
    vert = dem.vertices(col, p, theta, band=band)
    explicit = need & vert.ambiguous
    iterations = solves = 0
    refined = False
    for _ in range(max_rounds):
        agg = need & ~explicit
        out = _solve_master(solver, stage, a, agg, vert, explicit)
        if out is None:
            # the folded vertices do not fit together (the Newton prices or level were off):
            # widen the band of jobs that keep their own variables and try again
            band *= _LEVEL_BAND_GROWTH
            if band > _MAX_BAND:
                reason = "the folded vertices do not fit at any band of near-ties"
                break
            vert = dem.vertices(col, p, theta, band=band)
            explicit |= need & vert.ambiguous
            continue
        xcol, theta, lam, mu, p, it, bound_jobs = out
        iterations += it
        solves += 1
        if theta >= sat_theta - _SAT_ROUNDING * max(1.0, abs(sat_theta)):
            # theta reached the level at which job m0 runs its best column all the time:
            # no allocation does better, and the dual lambda_m0 = 1 / b_m0,
            # mu_m0 = lambda_m0 max_e a_e (all other multipliers 0) proves it
            lam0 = np.zeros(n)
            mu0 = np.zeros(n)
            lam0[m0] = 1.0 / b[m0]
            mu0[m0] = lam0[m0] * amax[m0]
            done = _certified(solver, orig, inst.repair(xcol), duals_of(mu0, np.zeros(k), lam0),
                              iterations, solves, STRUCTURED_LEVEL)
            if done is not None:
                return done
        red = lam[owner] * a - mu[owner] - s_e * p[typ]
        # explicit jobs have all their columns in the master: a positive reduced cost there
        # is solver tolerance, judged by the certificate below
        viol = (red > _REDUCED_COST_TOL * (1.0 + lam[owner] * a)) & ~explicit[owner]
        if not viol.any() and not bound_jobs.any():
            done = _certified(solver, orig, inst.repair(xcol), duals_of(mu, p, lam),
                              iterations, solves, STRUCTURED_LEVEL)
            if done is not None:
                return done
            reason = "the assembled duals did not certify the whole LP"
            break
        grown = explicit.copy()
        grown[owner[viol]] = True
        grown |= bound_jobs
        if not refined:
            # the master's prices are usually close to optimal: choose the vertices again
            # around them with a tight band, unless that keeps more jobs explicit than just
            # adding the violators (degenerate prices); later rounds only add jobs
            refined = True
            new = dem.vertices(col, p, theta, band=2 * _BAND0)
            fresh = need & (new.ambiguous | (mu > 0) & explicit)
            fresh[owner[viol]] = True
            fresh |= bound_jobs
            if fresh.sum() < grown.sum():
                vert, grown = new, fresh
        explicit = grown
    else:
        reason = f"not certified within {max_rounds} master rounds"
    solver.iterations += iterations
    solver.solves += solves
    solver.fall_back(STRUCTURED_LEVEL, reason)
    return solver.run(orig, orig.name)


def _sub_solve(solver: StageSolver, lp: LinearProgram, *, ipm: bool) -> LPSolution | None:
    """Solve a restricted master / dual LP with the stage solver's backend (HiGHS: simplex,
    or interior point for large masters, when the caller left the choice to fairalloc).
    ``None`` unless an optimal point with duals came back (the caller then falls back to the
    full LP, whose certificate decides). The solve is counted (backend, raw status)."""
    be = solver.backend
    if solver.backend_spec == "highs":
        be = get_backend("highs", need="lp", solver="ipm" if ipm else "choose")
    try:
        sol = be.solve_lp(lp)
    except SolverError:
        return None
    solver.raw_status = sol.raw_status
    if be.name not in solver.backends:
        solver.backends.append(be.name)
    if sol.status != "optimal" or sol.x is None or sol.row_duals is None:
        return None
    return sol


def _structured_applies(solver: StageSolver, *, kept: int) -> bool:
    """Whether a stage of ``solver`` has the structure the structured solvers exploit: single
    job columns only (no pairs, no placement), only time and capacity rows besides ``kept``
    kept stages, and enough jobs for the structure to pay (else the whole LP is as fast)."""
    inst = solver.inst
    return (inst.pairs is None and not inst.placement and len(solver.fixed) == kept
            and solver.base_layout.blocks() == (("time", inst.n), ("capacity", inst.k))
            and inst.n >= _FAST_MIN_JOBS)


def _certified(solver: StageSolver, stage: LevelStage | LinearStage, xcol: np.ndarray,
               duals: np.ndarray, iterations: int, solves: int, step: str
               ) -> StageResult | None:
    """The stage result if the full LP's certificate at ``xcol`` and ``duals`` (in the
    stage program's row layout) passes -- counting the structured solver's LPs into
    ``solver`` and recording ``step`` in its path -- else ``None``."""
    lp = solver.program(stage)
    v = solver.point(stage, xcol)
    cert = solver.certificate(lp, stage, v, duals)
    if not cert.ok:
        return None
    solver.iterations += iterations
    solver.solves += solves
    solver.step(step)
    return StageResult(lp, v, duals, cert.primal_value, cert, iterations, solver.layout(stage))


@dataclass
class _Vertices:
    """Each job's chosen vertex: columns ``e1, e2`` (``e2 = -1``: one column) and flags."""

    e1: np.ndarray
    e2: np.ndarray
    lo: np.ndarray  # level range in which the vertex is valid
    hi: np.ndarray
    ambiguous: np.ndarray


class _Demand:
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
        Aext = np.c_[A, np.zeros(n)]
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
        rext = np.r_[r, 0.0]
        rlo = rext[self.lo]
        cost = np.where((W >= 0.0) & (W <= 1.0), rlo + W * (rext[self.hi] - rlo), np.inf)
        return L, idle, W, cost

    def vertices(self, col: np.ndarray, r: np.ndarray, theta: float, *, band: float
                 ) -> _Vertices:
        """Every job's cheapest vertex as master columns (``col``: column of each (job, type),
        ``-1`` if none). ``ambiguous`` marks jobs with a second vertex within ``band`` of the
        cheapest cost, a level within ``band`` of the vertex's validity range, or no valid
        vertex at all."""
        L, _, _, cost = self._priced(r, theta)
        rows = np.arange(cost.shape[0])
        best = cost.argmin(axis=1)
        low = cost[rows, best]
        near = (cost <= low[:, None] * (1 + band) + TINY).sum(axis=1) > 1
        lo_t, hi_t = self.lo[best], self.hi[best]
        two = lo_t < self.k
        colx = np.c_[col, np.full(rows.size, -1)]
        e1 = np.where(two, colx[rows, lo_t], colx[rows, hi_t])
        e2 = np.where(two, colx[rows, hi_t], -1)
        a_lo, a_hi = self.alo[rows, best], self.ahi[rows, best]
        lo = np.where(two, np.minimum(a_lo, a_hi), 0.0)  # level range of the vertex
        hi = np.maximum(a_lo, a_hi)
        edge = (L >= hi * (1 - band)) | (two & (L <= lo * (1 + band)))
        none = ~np.isfinite(low)
        return _Vertices(np.where(none, -1, e1), e2, lo, hi, near | edge | none)

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


def _newton(dem: _Demand, cap: np.ndarray, ref: int, theta: float, lr: np.ndarray,
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

    top = sat - _SAT_ROUNDING * max(1.0, abs(sat))  # theta at sat, up to rounding
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
_NEWTON_MAX_ERROR = 0.25  # larger capacity errors: no estimate (the full LP answers)


def _band(err: float) -> float:
    """Band of near-ties given Newton's capacity error: coarse staircases (few, large jobs
    per type) leave errors of several percent, and the jobs on their steps must stay free."""
    return float(np.clip(err / _BAND_PER_ERROR, _BAND0, _BAND_MAX))


def _newton_prices(A: np.ndarray, s: np.ndarray, b: np.ndarray, h: np.ndarray,
                   cap: np.ndarray, *, warm: tuple[np.ndarray, float] | None = None,
                   info: dict[str, bool] | None = None
                   ) -> tuple[np.ndarray, float, float] | None:
    """Approximate prices, level and band of near-ties of a level stage (``None``: none).

    Solves the ``k`` equations *demand = capacity* for ``theta`` and the ``k - 1`` free price
    ratios, where demand is every job's capacity use at its cheapest vertex (:class:`_Demand`)
    at level ``h + b theta`` (:func:`_newton`). These are the stage's optimality conditions;
    with ``n`` jobs demand is a fine staircase in the prices, so Newton converges to the prices
    up to about the staircase's steps. It runs first on a sample of jobs (with the capacity
    scaled alike), then on all of them starting from the sample's solution and Jacobian. The
    estimate only decides which jobs get their own variables in the master LP; the exact
    solution and its certificate come from there.
    """
    need = (b > 0) | (h > 0)
    idx = np.flatnonzero(need)
    if idx.size == 0 or not (b[idx] > 0).any():
        return None
    A, s, b, h = A[idx], s[idx], b[idx], h[idx]
    pos = b > 0
    sat = float(np.min((A[pos].max(axis=1) - h[pos]) / b[pos]))
    low = float(np.max(-h[pos] / b[pos]))  # below this level some job needs nothing
    ref = int(np.argmax(np.median(A, axis=0)))
    both = (A > 0) & (A[:, [ref]] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r0 = np.nanmedian(np.where(both, A / A[:, [ref]], np.nan), axis=0)
    if not (np.isfinite(sat) and sat > low and np.isfinite(r0).all() and (r0 > 0).all()):
        return None
    theta, lr, J = 0.5 * (low + sat), np.log(r0), None
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
            theta, lr, warmed = float(wt), np.log(wp / wp[ref]), True
            if _WARM_SKIPS_NEWTON:
                # the previous round's prices are the estimate (a few arrivals and
                # departures move them little); the master LP and the certificate decide,
                # and a wider band follows if the folded vertices do not fit
                if info is not None:
                    info["warm"] = True
                return wp / wp[ref], theta, _WARM_BAND
    if m > 2 * _NEWTON_SAMPLE and not warmed:
        sub = np.random.default_rng(0).choice(m, size=_NEWTON_SAMPLE, replace=False)
        frac = _NEWTON_SAMPLE / m
        out = _newton(_Demand(A[sub], s[sub], b[sub], h[sub]), cap * frac, ref, theta, lr, None,
                      sat, tol=_SAMPLE_TOL, max_evals=_NEWTON_EVALS)
        if out is not None and out[3] <= _SAMPLE_MAX_ERROR:
            theta, lr, J, _ = out
            J = None if J is None else J / frac
    out = _newton(_Demand(A, s, b, h), cap, ref, theta, lr, J, sat, tol=_NEWTON_TOL,
                  max_evals=_LEVEL_NEWTON_EVALS)
    if out is None or out[3] > _NEWTON_MAX_ERROR:
        return None
    if info is not None:
        info["warm"] = warmed
    return np.exp(out[1]), float(out[0]), _band(out[3])


def _explicit_columns(inst: ColumnInstance, explicit: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The jobs that keep their own variables in a restricted master, their columns, and
    each column's row among those jobs."""
    ex = np.flatnonzero(explicit)
    cols = np.flatnonzero(explicit[inst.mem_job])
    remap = np.full(inst.n, -1)
    remap[ex] = np.arange(ex.size)
    return ex, cols, remap[inst.mem_job[cols]]


def _solve_master(solver: StageSolver, stage: LevelStage, a: np.ndarray, agg: np.ndarray,
                  vert: _Vertices, explicit: np.ndarray) -> tuple | None:
    """Solve the restricted master.

    Returns ``(xcol, theta, lambda, mu, prices, iterations, bound_jobs)``; ``bound_jobs``
    marks aggregated jobs whose vertex range stopped theta (they need their own variables).
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    b, h = stage.b, stage.h
    s = inst.jobs.scale_factor
    typ = inst.col_type
    ag = np.flatnonzero(agg)
    e1, e2 = vert.e1[ag], vert.e2[ag]
    if (e1 < 0).any():
        return None
    two = e2 >= 0
    a1 = a[e1]
    a2 = np.where(two, a[np.maximum(e2, 0)], 1.0)
    d = np.where(two, a2 - a1, 1.0)
    # x_e1 = al1 + be1 theta, x_e2 = al2 + be2 theta (affine in theta)
    al1 = np.where(two, (a2 - h[ag]) / d, h[ag] / a1)
    be1 = np.where(two, -b[ag] / d, b[ag] / a1)
    al2 = np.where(two, (h[ag] - a1) / d, 0.0)
    be2 = np.where(two, b[ag] / d, 0.0)
    t1 = typ[e1]
    t2 = np.where(two, typ[np.maximum(e2, 0)], 0)
    const = (np.bincount(t1, weights=s[ag] * al1, minlength=k)
             + np.bincount(t2, weights=s[ag] * al2 * two, minlength=k))
    coef_theta = (np.bincount(t1, weights=s[ag] * be1, minlength=k)
                  + np.bincount(t2, weights=s[ag] * be2 * two, minlength=k))
    # validity range of each aggregated vertex: lo <= h + b theta <= hi
    pos = b[ag] > 0
    lo_v, hi_v = vert.lo[ag], vert.hi[ag]
    with np.errstate(divide="ignore", invalid="ignore"):
        th_up = np.where(pos, (hi_v - h[ag]) / np.where(pos, b[ag], 1.0), np.inf)
        th_dn = np.where(pos, (lo_v - h[ag]) / np.where(pos, b[ag], 1.0), -np.inf)
    fixed_bad = ~pos & ((h[ag] > hi_v * (1 + _SAT_ROUNDING)) | (h[ag] < lo_v * (1 - _SAT_ROUNDING)))
    if fixed_bad.any():
        return None
    # the ranges are not imposed on theta (a wrong guess would make the master infeasible):
    # jobs whose vertex is invalid at the master's theta get their own variables next round
    ex, cols, own = _explicit_columns(inst, explicit)
    nx, r = cols.size, ex.size
    M = sp.vstack([
        sp.csr_matrix((np.r_[inst.col_workers[cols], coef_theta],
                       (np.r_[typ[cols], np.arange(k)], np.r_[np.arange(nx), np.full(k, nx)])),
                      shape=(k, nx + 1)),
        sp.csr_matrix((np.ones(nx), (own, np.arange(nx))), shape=(r, nx + 1)),
        sp.csr_matrix((np.r_[a[cols], -b[ex]], (np.r_[own, np.arange(r)],
                                                 np.r_[np.arange(nx), np.full(r, nx)])),
                      shape=(r, nx + 1)),
    ], format="csr")
    lo = np.r_[np.full(k + r, -np.inf), h[ex]]
    up = np.r_[inst.cap - const, np.ones(r), np.full(r, np.inf)]
    # the objective is scaled by n so that the duals (which sum to 1 over the jobs) are of
    # order one against the solver's absolute dual tolerance
    scale = float(n)
    c = np.zeros(nx + 1)
    c[-1] = -scale
    # no column upper bounds (implied by the time rows): the duals stay on the rows
    lp = LinearProgram.build(c, M, lo, up, np.r_[np.zeros(nx), -np.inf],
                             np.r_[np.full(nx, np.inf), np.inf])
    sol = _sub_solve(solver, lp, ipm=r > _IPM_MIN_EXPLICIT)
    if sol is None:
        return None
    assert sol.x is not None and sol.row_duals is not None  # checked by _sub_solve
    theta = float(sol.x[-1])
    y = sol.row_duals / scale
    rows = RowLayout((("capacity", k), ("time", r), ("level", r)))  # the master's rows
    p = np.maximum(-rows.take(y, "capacity"), 0.0)
    mu = np.zeros(n)
    lam = np.zeros(n)
    mu[ex] = np.maximum(-rows.take(y, "time"), 0.0)
    lam[ex] = np.maximum(rows.take(y, "level"), 0.0)
    c1 = s[ag] * p[t1]
    c2 = s[ag] * p[t2]
    lam[ag] = np.where(two, (c2 - c1) / d, c1 / a1)
    mu[ag] = np.where(two, lam[ag] * a1 - c1, 0.0)
    bound_jobs = np.zeros(n, dtype=bool)
    tol = _ACTIVITY_ROUNDING * max(1.0, abs(theta))
    bound_jobs[ag] = pos & ((th_up < theta - tol) | (th_dn > theta + tol))
    if (lam[ag] < -_SAT_ROUNDING).any() or (mu[ag] < -_SAT_ROUNDING).any():
        bad = (lam[ag] < -_SAT_ROUNDING) | (mu[ag] < -_SAT_ROUNDING)
        bound_jobs[ag[bad]] = True
    lam = np.maximum(lam, 0.0)
    mu = np.maximum(mu, 0.0)
    xcol = np.zeros(E)
    xcol[cols] = sol.x[:nx]
    xcol[e1] = al1 + be1 * theta
    xcol[np.maximum(e2, 0)[two]] = (al2 + be2 * theta)[two]
    return xcol, theta, lam, mu, p, sol.iterations, bound_jobs


def fast_floor(solver: StageSolver, stage: LinearStage, *, prior: StageResult | None = None,
                max_rounds: int = _FLOOR_MAX_ROUNDS) -> StageResult:
    """Exact solve of a *floor* stage ``max g @ x`` s.t. ``C x >= f`` (one fixed level block).

    Used for the work-conserving stage, where the objective of each job is a multiple
    ``omega_m`` of its level row (``g_e = omega_m a_e``; true whenever both are per-job
    multiples of its throughput). At prices ``p`` each job's best response is a vertex of
    ``{a . x >= f, sum x <= 1, x >= 0}`` (its floor on one column, all its time on one
    column, or its time split between two columns at the floor) whose capacity use is a
    constant. Prices come from :func:`_floor_newton_prices` (best-response demand =
    capacity); jobs whose best vertex is clear at them are constants, the others keep their
    variables in a restricted master LP; :func:`_floor_duals` then finds the full LP's duals
    complementary to the master's allocation (an LP in the ``k`` prices), and the certificate
    of the full LP decides. If it fails, the band of jobs with their own variables widens;
    after ``max_rounds`` the full LP is solved.

    ``prior``: the result of the level stage whose optimum the floors fix. When its allocation
    is already optimal here (the level's optimum is unique up to ``stage_tol``, the common
    case: every job sits at its floor), :func:`_floor_from_level` certifies that with scaled
    level duals and no LP at all.
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    if not _structured_applies(solver, kept=1):
        return solver.run(stage, stage.name)
    C, f = solver.fixed[0]
    owner = inst.mem_job
    a = np.asarray(C[owner, np.arange(E)]).ravel()
    if C.shape[0] != n or (a <= 0).any():
        return solver.run(stage, stage.name)
    omega_e = stage.g / a
    starts = np.searchsorted(owner, np.arange(n))
    omega = omega_e[starts]
    if (not np.allclose(omega_e, omega[owner], rtol=_OMEGA_RTOL, atol=0.0)
            or (omega < 0).any()):
        return solver.run(stage, stage.name)
    layout = solver.layout(stage)  # time, capacity, kept (the level rows)
    if prior is not None:
        done = _floor_from_level(solver, stage, prior, a, omega)
        if done is not None:
            return done
    col = np.full((n, k), -1)
    col[owner, inst.col_type] = np.arange(E)
    A = np.zeros((n, k))
    A[owner, inst.col_type] = a
    dem = _FloorDemand(A, inst.jobs.scale_factor, f, omega)
    est = _floor_newton_prices(dem, inst.cap)
    if est is None:
        solver.fall_back(STRUCTURED_FLOOR, "no price estimate (Newton found no balance of "
                         "demand and capacity)")
        return solver.run(stage, stage.name)
    p, band = est
    explicit = np.zeros(n, dtype=bool)
    iterations = solves = 0
    for _ in range(max_rounds):
        vert = dem.vertices(col, p, band=band)
        explicit |= vert.ambiguous
        out = _solve_floor_master(inst, a, f, omega, vert, explicit, solver)
        if out is None:
            band *= _FLOOR_BAND_GROWTH
            continue
        xcol, it = out
        iterations += it
        solves += 1
        xcol = inst.repair(xcol)
        parts, blocking = _floor_duals(inst, A, col, a, f, omega, xcol, explicit, solver)
        done = (None if parts is None else
                _certified(solver, stage, xcol, layout.assemble(parts), iterations, solves,
                           STRUCTURED_FLOOR))
        if done is not None:
            return done
        if (blocking & ~explicit).any():
            # exactly the constants in the way get their variables
            solver.step(f"{FLOOR_FREED}:{int((blocking & ~explicit).sum())}")
            explicit |= blocking
        else:
            band *= _FLOOR_BAND_GROWTH
    solver.iterations += iterations
    solver.solves += solves
    solver.fall_back(STRUCTURED_FLOOR, f"not certified within {max_rounds} master rounds")
    return solver.run(stage, stage.name)


class _FloorDemand(_Demand):
    """Capacity each job uses at its best response in a floor stage, vectorised over jobs.

    A job with floor ``f`` and value ``omega`` per unit of level chooses, at prices ``p``, the
    vertex of ``{a . x >= f, sum x <= 1, x >= 0}`` maximising ``omega a.x - s p.x``: a mix at
    the floor (the candidates of :class:`_Demand` at ``L = f``: part time on one type, or two
    types sharing all the time), all its time on one type (valid when ``a_j >= f``), or
    nothing at all (valid when ``f <= 0``).
    """

    def __init__(self, A: np.ndarray, s: np.ndarray, f: np.ndarray, omega: np.ndarray) -> None:
        super().__init__(A, s, np.zeros(f.size), f)
        W = (f[:, None] - self.alo) * self.inv
        ok = (W >= 0.0) & (W <= 1.0) & (f > 0)[:, None]
        self.W = np.where(ok, W, np.nan)  # nan: not a floor vertex
        self.A, self.omega = A, omega
        self.full_ok = (A > 0) & (A >= f[:, None])
        self.rest = f <= 0

    def _values(self, r: np.ndarray) -> np.ndarray:
        """Each candidate's value ``omega a.x - s p.x`` (``-inf``: invalid); columns: the
        floor mixes, all the time on each type, nothing."""
        s = self.s
        rext = np.r_[r, 0.0]
        rlo = rext[self.lo]
        at_floor = (self.omega * self.h)[:, None] - s[:, None] * (rlo + self.W * (rext[self.hi]
                                                                               - rlo))
        full = np.where(self.full_ok, self.omega[:, None] * self.A - s[:, None] * r, -np.inf)
        return np.c_[np.where(np.isnan(at_floor), -np.inf, at_floor), full,
                     np.where(self.rest, 0.0, -np.inf)]

    def vertices(self, col: np.ndarray, r: np.ndarray, theta: float = 0.0, *, band: float
                 ) -> _Vertices:
        """Every job's best vertex as master columns. Kinds: ``e2 == -1``: floor on ``e1``;
        ``e2 == -2``: all the time on ``e1``; ``e2 >= 0``: time split between ``e1`` and
        ``e2`` at the floor; ``e1 == -1``: nothing. ``ambiguous``: a second vertex within
        ``band`` of the best value (relative to the size of the job's values), or none."""
        k, K = self.k, self.lo.size
        V = self._values(r)
        rows = np.arange(V.shape[0])
        best = V.argmax(axis=1)
        top = V[rows, best]
        # a price error of ``band`` moves a value by about band * (its price term), which is
        # of the order of omega * a even when the job's net value is close to 0
        scale = self.omega * self.A.max(axis=1) + self.s * r.max(initial=0.0)
        gap = band * np.maximum(np.abs(top), scale + _SAT_ROUNDING)
        near = (V >= (top - gap)[:, None]).sum(axis=1) > 1
        fl = best < K
        b = np.where(fl, best, 0)
        lo_t, hi_t = self.lo[b], self.hi[b]
        two = fl & (lo_t < k)
        colx = np.c_[col, np.full(rows.size, -1)]
        full_t = np.clip(best - K, 0, k)
        e1 = np.where(fl, np.where(two, colx[rows, lo_t], colx[rows, hi_t]), colx[rows, full_t])
        e2 = np.where(two, colx[rows, hi_t], np.where(fl, -1, -2))
        nothing = best == K + k
        e1 = np.where(nothing, -1, e1)
        e2 = np.where(nothing, -1, e2)
        return _Vertices(e1, e2, np.zeros(rows.size), np.zeros(rows.size),
                         near | ~np.isfinite(top))

    def __call__(self, r: np.ndarray, theta: float) -> tuple[np.ndarray, np.ndarray]:
        """Capacity used per type at prices ``r`` (``theta`` is ignored; zero derivative)."""
        k, s, K = self.k, self.s, self.lo.size
        best = self._values(r).argmax(axis=1)
        fl = best < K
        full = ~fl & (best < K + k)
        b = np.where(fl, best, 0)
        w = self.W[np.arange(best.size), b]
        use = (np.bincount(self.hi[b[fl]], s[fl] * w[fl], k + 1)
               + np.bincount(self.lo[b[fl]], s[fl] * (1.0 - w[fl]), k + 1))[:k]
        use = use + np.bincount(best[full] - K, s[full], k)
        return use, np.zeros(k)


def _floor_newton_prices(dem: _FloorDemand, cap: np.ndarray
                         ) -> tuple[np.ndarray, float] | None:
    """Approximate capacity prices (and band of near-ties) of a floor stage: best-response
    demand = capacity.

    :func:`_newton` with every price free (``ref = -1``), from prices at which each type
    alone would be just filled by the jobs valuing it most: ``p_j`` is the value per worker
    ``omega a_j / s`` above which the jobs' workers add up to ``cap_j``. ``None``: no
    estimate.
    """
    A, s, f, omega = dem.A, dem.s, dem.h, dem.omega
    if not (np.isfinite(f).all() and (omega > 0).any()):
        return None
    v = np.where(A > 0, (omega / s)[:, None] * A, 0.0)
    order = np.argsort(-v, axis=0)
    filled = np.cumsum(s[order], axis=0) >= cap[None, :]
    first = np.where(filled.any(axis=0), filled.argmax(axis=0), v.shape[0] - 1)
    p0 = v[order[first, np.arange(cap.size)], np.arange(cap.size)]
    low = v[v > 0].min() if (v > 0).any() else 0.0
    p0 = np.maximum(p0, 0.5 * low)
    if not (np.isfinite(p0).all() and (p0 > 0).all()):
        return None
    if (dem(np.zeros(cap.size), 0.0)[0] <= cap).all():
        return np.zeros(cap.size), _BAND0  # capacity binds nowhere
    out = _newton(dem, cap, -1, 0.0, np.log(p0), None, np.inf, tol=_NEWTON_TOL,
                  max_evals=_NEWTON_EVALS)
    if out is None or out[3] > _NEWTON_MAX_ERROR:
        return None
    return np.exp(out[1]), _band(out[3])


def _floor_duals(inst: ColumnInstance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                 f: np.ndarray, omega: np.ndarray, xcol: np.ndarray, free: np.ndarray,
                 solver: StageSolver) -> tuple[dict[str, np.ndarray] | None, np.ndarray]:
    """Duals of the full floor LP complementary to ``xcol``, or the jobs in the way.

    The floor LP ``max sum_m omega_m a_m . x_m`` s.t. ``a_m . x_m >= f_m`` (``lambda_m``),
    ``sum x_m <= 1`` (``mu_m``), capacity (``p``) has reduced costs
    ``(omega + lambda) a_e - mu - s p_e``. For a job at a vertex of its polytope
    (:func:`_vertices_from_x`), complementary slackness fixes ``lambda`` and ``mu`` as affine
    functions of ``p`` (floor on ``e``: ``lambda = s p_e / a_e - omega``, ``mu = 0``; all time
    on ``e``: ``lambda = 0``, ``mu = omega a_e - s p_e``; a split ``e1, e2``:
    ``omega + lambda = s (p_e2 - p_e1) / (a_e2 - a_e1)``, ``mu = (omega + lambda) a_e1 -
    s p_e1``); what remains is ``lambda, mu >= 0`` and every other column's reduced cost
    ``<= 0``: linear inequalities in the ``k`` prices. Jobs elsewhere (the few a basic
    solution couples) keep ``lambda_m, mu_m`` as variables, with reduced cost 0 on the columns
    they use. Types with slack are priced 0. The rows of each job that was a constant in
    the master (not ``free``) get an elastic slack ``sigma_m >= 0`` and HiGHS minimises
    ``sum sigma`` (``k`` + a few + ``n`` columns, about ``n (k + 1)`` rows; the master's own
    duals are feasible, so it always solves): at 0 the duals are complementary to ``xcol``,
    so their objective is ``xcol``'s value and ``xcol`` is optimal; otherwise the constants
    with ``sigma_m > 0`` conflict with every complementary price vector and must get their
    own variables.

    Returns ``(duals, blocking)``: ``duals`` (``None`` if there are none) by row block of the
    floor LP (``time``: ``-mu``, ``capacity``: ``-p``, ``kept``: ``lambda``) and the mask of
    blocking jobs.
    """
    n, k = A.shape
    s = inst.jobs.scale_factor.astype(float)
    vert, general = _vertices_from_x(inst, A, col, a, f, xcol)
    X = np.zeros((n, k))
    X[inst.mem_job, inst.col_type] = xcol
    tot = X.sum(axis=1)
    e1, e2 = vert.e1, vert.e2
    # one column at the floor *and* all the time: lambda and mu share one equation
    general = general | ((e1 >= 0) & (e2 == -1) & (tot >= 1.0 - _ACTIVITY_ROUNDING))
    typ_of = np.full(inst.E + 1, 0)
    typ_of[:-1] = inst.col_type
    t1 = typ_of[np.where(e1 >= 0, e1, inst.E)]
    t2 = typ_of[np.where(e2 >= 0, e2, inst.E)]
    a1 = np.where(e1 >= 0, a[np.maximum(e1, 0)], 1.0)
    a2 = np.where(e2 >= 0, a[np.maximum(e2, 0)], 1.0)
    floor1 = ~general & (e1 >= 0) & (e2 == -1)
    full = ~general & (e1 >= 0) & (e2 == -2)
    split = ~general & (e2 >= 0)
    onehot = np.eye(k)
    # lambda = alpha . p + alpha0, mu = beta . p + beta0 (zero for general jobs and no-ops)
    alpha = np.zeros((n, k))
    alpha0 = np.zeros(n)
    beta = np.zeros((n, k))
    beta0 = np.zeros(n)
    alpha[floor1] = (s / a1)[floor1, None] * onehot[t1[floor1]]
    alpha0[floor1 | split] = -omega[floor1 | split]
    beta[full] = -s[full, None] * onehot[t1[full]]
    beta0[full] = (omega * a1)[full]
    d = np.where(split, a2 - a1, 1.0)
    alpha[split] = (s / d)[split, None] * (onehot[t2[split]] - onehot[t1[split]])
    beta[split] = a1[split, None] * alpha[split] - s[split, None] * onehot[t1[split]]
    # rows G p <= g: lambda >= 0, mu >= 0, reduced cost <= 0 on every unused column
    Gs, gs = [-alpha[floor1 | split], -beta[full | split]], [alpha0[floor1 | split],
                                                              beta0[full | split]]
    owners = [np.flatnonzero(floor1 | split), np.flatnonzero(full | split)]
    rec = ~general
    used = np.zeros(inst.E, dtype=bool)
    used[xcol > _USED] = True
    ce = np.flatnonzero(rec[inst.mem_job] & ~used)
    m = inst.mem_job[ce]
    ae = a[ce]
    Gs.append(ae[:, None] * alpha[m] - beta[m] - s[m, None] * onehot[inst.col_type[ce]])
    gs.append(beta0[m] - (omega[m] + alpha0[m]) * ae)
    owners.append(m)
    G = np.concatenate(Gs)
    g = np.concatenate(gs)
    row_job = np.concatenate(owners)
    # general jobs: variables (lambda_m, mu_m); reduced cost = 0 on used columns, <= 0 others
    gen = np.flatnonzero(general)
    q = gen.size
    cg = np.flatnonzero(general[inst.mem_job])
    mg = np.searchsorted(gen, inst.mem_job[cg])
    ncol = k + 2 * q + n
    P = sp.hstack([sp.csr_matrix(G), sp.csr_matrix((g.size, 2 * q)),
                   sp.csr_matrix((-np.ones(g.size), (np.arange(g.size), row_job)),
                                 shape=(g.size, n))], format="csr")
    Q = sp.hstack([sp.csr_matrix(-s[inst.mem_job[cg], None] * onehot[inst.col_type[cg]]),
                   sp.csr_matrix((a[cg], (np.arange(cg.size), mg)), shape=(cg.size, q)),
                   sp.csr_matrix((-np.ones(cg.size), (np.arange(cg.size), mg)),
                                 shape=(cg.size, q))], format="csr")
    M = sp.vstack([P, sp.hstack([Q, sp.csr_matrix((Q.shape[0], n))])], format="csr")
    up = np.r_[g, -omega[inst.mem_job[cg]] * a[cg]]
    lo = np.r_[np.full(g.size, -np.inf), np.where(used[cg], up[g.size:], -np.inf)]
    slack_t = inst.W @ xcol < inst.cap * (1.0 - _ACTIVITY_ROUNDING)
    lev = (X * A).sum(axis=1)
    floor_slack = lev[gen] > f[gen] + _ACTIVITY_ROUNDING * np.maximum(1.0, np.abs(f[gen]))
    time_slack = tot[gen] < 1.0 - _ACTIVITY_ROUNDING
    hi = np.r_[np.where(slack_t, 0.0, np.inf), np.where(floor_slack, 0.0, np.inf),
               np.where(time_slack, 0.0, np.inf), np.where(general | free, 0.0, np.inf)]
    c = np.r_[np.zeros(k + 2 * q), np.ones(n)]
    lp = LinearProgram.build(c, M, lo, up, np.zeros(ncol), hi)
    sol = _sub_solve(solver, lp, ipm=False)
    if sol is None:
        return None, np.zeros(n, dtype=bool)
    assert sol.x is not None  # checked by _sub_solve
    sigma = sol.x[k + 2 * q:]
    blocking = sigma > _REDUCED_COST_TOL * (1.0 + omega * A.max(axis=1))
    if blocking.any():
        return None, blocking
    pr = np.maximum(sol.x[:k], 0.0)
    lam = np.maximum(alpha @ pr + alpha0, 0.0)
    mu = np.maximum(beta @ pr + beta0, 0.0)
    lam[gen] = np.maximum(sol.x[k: k + q], 0.0)
    mu[gen] = np.maximum(sol.x[k + q: k + 2 * q], 0.0)
    return {"time": -mu, "capacity": -pr, "kept": lam}, blocking


def _floor_from_level(solver: StageSolver, stage: LinearStage, prior: StageResult,
                      a: np.ndarray, omega: np.ndarray) -> StageResult | None:
    """Certify the level stage's allocation as the floor stage's optimum, if it is one.

    With level duals ``(lambda, mu, p)`` (reduced costs ``lambda_m a_e - mu_m - s p_e <= 0``,
    zero on used columns), the scaled duals ``p' = t p``, ``mu' = t mu``,
    ``lambda' = max(t lambda - omega, 0)`` are feasible for the floor stage
    ``max sum_m omega_m a_m . x_m`` s.t. ``a_m . x_m >= f_m`` as soon as every column's reduced
    cost ``omega a_e + lambda' a_e - mu' - s p'_e`` is ``<= 0``: for a job with
    ``t lambda_m >= omega_m`` it is ``t`` times the level one; otherwise it needs
    ``t >= omega a_e / (mu + s p_e)``. The smallest such ``t`` is taken, and
    :func:`lp_certificate` on the full floor LP at the level's allocation decides (its gap is
    the complementary slackness left: ``stage_tol`` on the floors, plus whatever a job above
    its floor could still gain). ``None`` when it does not pass.
    """
    inst = solver.inst
    n, k = inst.n, inst.k
    if (prior.rows.blocks() != (("time", n), ("capacity", k), ("kept", 0), ("level", n))
            or not isinstance(prior.lp, LinearProgram)):
        return None
    mu = np.maximum(-prior.block("time"), 0.0)
    p = np.maximum(-prior.block("capacity"), 0.0)
    lam = np.maximum(prior.block("level"), 0.0)
    owner = inst.mem_job
    unit = mu[owner] + inst.col_workers * p[inst.col_type]  # level cost of a column's time
    want = omega[owner] * a
    with np.errstate(divide="ignore", invalid="ignore"):
        per_col = np.where(want > 0, want / unit, 0.0)
        by_lam = np.where(lam > 0, omega / lam, np.inf)
    by_cols = np.zeros(n)
    np.maximum.at(by_cols, owner, per_col)
    t = float(np.max(np.minimum(by_lam, by_cols), initial=0.0))
    if not np.isfinite(t) or t <= 0.0:
        return None
    duals = solver.layout(stage).assemble({"time": -t * mu, "capacity": -t * p,
                                           "kept": np.maximum(t * lam - omega, 0.0)})
    return _certified(solver, stage, prior.x[: inst.E], duals, 0, 0, FLOOR_FROM_LEVEL)


def _solve_floor_master(inst: ColumnInstance, a: np.ndarray, f: np.ndarray, omega: np.ndarray,
                        vert: _Vertices, explicit: np.ndarray, solver: StageSolver
                        ) -> tuple | None:
    """Restricted master of a floor stage: ``(xcol, iterations)`` (``None``: no fit)."""
    k, E = inst.k, inst.E
    typ = inst.col_type
    ag = np.flatnonzero(~explicit)
    e1, e2 = vert.e1[ag], vert.e2[ag]
    L = f[ag]
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
    x1 = np.where(floor1, L / np.where(has1, a1, 1.0),
                  np.where(full, 1.0, np.where(split, (a2 - L) / d, 0.0)))
    x2 = np.where(split, (L - a1) / d, 0.0)
    xcol[e1s[has1]] = x1[has1]
    xcol[e2s[split]] = x2[split]
    load = inst.W @ xcol
    ex, cols, own = _explicit_columns(inst, explicit)
    nx, r = cols.size, ex.size
    M = sp.vstack([
        sp.csr_matrix((inst.col_workers[cols], (typ[cols], np.arange(nx))), shape=(k, nx)),
        sp.csr_matrix((np.ones(nx), (own, np.arange(nx))), shape=(r, nx)),
        sp.csr_matrix((a[cols], (own, np.arange(nx))), shape=(r, nx)),
    ], format="csr")
    lo = np.r_[np.full(k + r, -np.inf), f[ex]]
    up = np.r_[inst.cap - load, np.ones(r), np.full(r, np.inf)]
    if (up[:k] < -_ACTIVITY_ROUNDING * (1 + inst.cap)).any():
        return None
    up[:k] = np.maximum(up[:k], 0.0)
    lp = LinearProgram.build(-omega[inst.mem_job[cols]] * a[cols], M, lo, up, 0.0, np.inf)
    sol = _sub_solve(solver, lp, ipm=r > _IPM_MIN_EXPLICIT)
    if sol is None:
        return None
    assert sol.x is not None  # checked by _sub_solve
    xcol[cols] = sol.x
    return xcol, sol.iterations


def _vertices_from_x(inst: ColumnInstance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                     L: np.ndarray, xcol: np.ndarray) -> tuple[_Vertices, np.ndarray]:
    """Read each job's vertex (floor / full / split) off an allocation; others: explicit."""
    n, k = A.shape
    X = np.zeros((n, k))
    X[inst.mem_job, inst.col_type] = xcol
    used = X > _USED
    cnt = used.sum(axis=1)
    order = np.argsort(~used, axis=1, kind="stable")  # used types first
    rows = np.arange(n)
    j1, j2 = order[:, 0], order[:, min(1, k - 1)]
    lev = (X * A).sum(axis=1)
    tot = X.sum(axis=1)
    at_floor = np.abs(lev - L) <= _AT_FLOOR * np.maximum(1.0, np.abs(L))
    e1 = np.where(cnt >= 1, col[rows, j1], -1)
    full = (cnt == 1) & (np.abs(tot - 1.0) <= _SAT_ROUNDING) & ~at_floor
    floor1 = (cnt == 1) & at_floor
    split = (cnt == 2) & at_floor & (np.abs(tot - 1.0) <= _ACTIVITY_ROUNDING)
    e2 = np.where(split, col[rows, j2], np.where(full, -2, -1))
    # order a split's columns: slower first
    swap = split & (A[rows, j1] > A[rows, j2])
    e1, e2 = np.where(swap, e2, e1), np.where(swap, e1, e2)
    nothing = (cnt == 0) & (L <= 0)
    explicit = ~(full | floor1 | split | nothing)
    z = np.zeros(n)
    return _Vertices(e1, e2, z, z, explicit), explicit
