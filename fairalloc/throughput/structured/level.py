"""The structured exact solver of level (max-min) stages: `fast_level`.

Newton prices, aggregation of the jobs whose best vertex is clear, a small restricted master LP
(`_solve_master`) and column generation until the full LP's certificate passes; path
step ``structured-level``, hand-over ``structured-level->exact-lp: <reason>``
(`fairalloc.throughput.structured`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..._sparse import csr_from_triplets, entries_at
from ...backends import LinearProgram
from ...plan import Decline, Strategy
from ..programs import LevelStage, StageResult
from ..rows import RowLayout
from .common import (
    ACTIVITY_ROUNDING,
    BAND0,
    DEGENERATE,
    IPM_MIN_EXPLICIT,
    MANY_TYPES,
    NEWTON_SAMPLE_STEP,
    REDUCED_COST_TOL,
    SAT_ROUNDING,
    Demand,
    NewtonSeed,
    Vertices,
    certified,
    explicit_columns,
    newton_prices,
    structured_applies,
    sub_solve,
    too_many_explicit,
    too_many_types,
)
from .rowclass import ROUGH_MIN_SHARE, Aggregator, Groups, disaggregate, master_block

if TYPE_CHECKING:  # (stages imports the plans that use these solvers)
    from ..stages import StageSolver

STRUCTURED_LEVEL = "structured-level"  # path step: level stage certified by this solver
_LEVEL_BAND_GROWTH = 3.0  # PERFORMANCE knob: band widening when folded vertices do not fit
_MAX_BAND = 0.5  # PERFORMANCE knob: widest band of near-ties before the full LP takes over
#: PERFORMANCE knob: band of near-ties around Newton's unbalanced end point (row classes)
_ROUGH_BAND = 0.05
#: PERFORMANCE knob: master rounds from such a start before the whole LP (it replaces an
#: immediate hand-over, so it may not cost much more than one whole LP; measured on tied
#: rows: one or two rounds)
_ROUGH_MAX_ROUNDS = 6


def level_strategy(*, warm: tuple[np.ndarray, float] | None = None,
                   degenerate_handover: bool = True, seed: NewtonSeed | None = None
                   ) -> Strategy[Any, StageResult]:
    """The strategy ``structured-level`` of a level stage's plan (`fast_level` with these
    options; it applies to stages with the structure, `structured_applies` -- of any size
    with a ``warm`` start: the previous round's prices skip the Newton search -- and declines
    where it cannot win)."""
    any_size = warm is not None

    def solve(ctx: Any) -> StageResult:
        return fast_level(ctx.solver, ctx.stage, warm=warm,
                          degenerate_handover=degenerate_handover, seed=seed,
                          any_size=any_size)

    def applies(ctx: Any) -> bool:
        return isinstance(ctx.stage, LevelStage) and structured_applies(
            ctx.solver, kept=0, any_size=any_size)

    return Strategy(STRUCTURED_LEVEL, solve, _own_certificate, applies)


def _own_certificate(ctx: Any, res: StageResult) -> Any:
    return res.cert  # the whole stage LP's certificate, computed by `certified`


def fast_level(solver: StageSolver, stage: LevelStage, *, max_rounds: int | None = None,
                warm: tuple[np.ndarray, float] | None = None,
                degenerate_handover: bool = True, seed: NewtonSeed | None = None,
                provisional: bool = False, any_size: bool = False) -> StageResult:
    """Exact solve of a level stage (see `_fast_level_unit`), at unit scale; raises
    `fairalloc.plan.Decline` with the reason where it cannot win (the plan's next strategy
    then runs). ``max_rounds``: master rounds (default ``tuning.level_max_rounds``).
    ``any_size``: also below ``tuning.structured_min_jobs`` jobs (the plan's exact tail: its
    closed-form duals certify levels whose rows span many orders of magnitude, where the LP
    solvers' absolute tolerances do not).

    ``provisional``: when the restricted master prices out (no column with a positive reduced
    cost), return its allocation without the whole LP's certificate (`certified`); the
    caller certifies what it uses as an answer. A Dinkelbach sequence's intermediate stages
    only choose its next point, and the certificate was a fifth of each stage (finish-time
    fairness, 16,384 jobs).

    ``seed`` (`NewtonSeed`): Newton's end point in a similar stage solved before (the
    previous stage of a Dinkelbach sequence) starts this one's Newton search; it is updated
    with this stage's. Only the start changes: the answer is certified as always.

    ``degenerate_handover=False`` keeps a master with many jobs near a tie instead of handing
    the stage to the whole LP (water-filling: its later exact LPs need the structured
    solver's vertex allocation, which meets the floors exactly).

    The stage is first divided by the powers of two of `LevelStage.units` (``theta =
    sigma theta'``, level rows divided by ``rho``), so that the structured solver's own
    thresholds see the same numbers whatever the caller's units; its duals are mapped back
    (level rows ``lambda = sigma lambda' / rho``, the others ``sigma y'``) and the full LP's
    certificate is computed in the caller's units.
    """
    if max_rounds is None:
        max_rounds = solver.tuning.level_max_rounds
    sigma, rho = stage.units()
    # a warm start (capacity prices and level of a previous, similar stage, in the caller's
    # units) only seeds Newton: the price ratios are unit free, the level goes to unit scale
    wu = None if warm is None else (np.asarray(warm[0], dtype=float), float(warm[1]) / sigma)
    if sigma == 1.0 and rho == 1.0:
        return _fast_level_unit(solver, stage, stage, 1.0, 1.0, max_rounds, wu,
                                degenerate_handover, seed, provisional, any_size)
    unit = LevelStage(sp.csr_matrix(stage.C / rho), stage.b * (sigma / rho), stage.h / rho,
                  stage.name)
    return _fast_level_unit(solver, stage, unit, sigma, rho, max_rounds, wu,
                            degenerate_handover, seed, provisional, any_size)


def _fast_level_unit(solver: StageSolver, orig: LevelStage, stage: LevelStage, sigma: float,
                     rho: float, max_rounds: int,
                     warm: tuple[np.ndarray, float] | None = None,
                     degenerate_handover: bool = True, seed: NewtonSeed | None = None,
                     provisional: bool = False, any_size: bool = False) -> StageResult:
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
    certificate (`lp_certificate` on the complete program with the assembled duals)
    passes. Initial prices and level come from `newton_prices` (the ``k`` equations
    *demand = capacity* solved by Newton in ``k`` unknowns, a few milliseconds for thousands
    of jobs); jobs near a tie at those prices (within 0.1 %, more where Newton's capacity
    error is larger: `band`) keep their own variables, so a single small master LP
    usually finishes. Falls back to the full LP when Newton finds no
    estimate (for instance many identical jobs: demand jumps instead of a fine staircase) or
    the loop cannot finish.
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    tuning = solver.tuning
    if not structured_applies(solver, kept=0, any_size=any_size):
        raise Decline("the stage has rows beyond time, capacity and level")
    if too_many_types(solver):
        raise Decline(f"{MANY_TYPES} (k = {k} > {tuning.structured_max_types})")
    layout = solver.layout(orig)  # time, capacity, kept (empty), level

    def duals_of(mu_: np.ndarray, p_: np.ndarray, lam_: np.ndarray) -> np.ndarray:
        """The full LP's duals in its row layout, in the caller's units (level rows
        ``lambda = sigma lambda' / rho``, the others ``sigma y'``)."""
        return layout.assemble({"time": -mu_ * sigma, "capacity": -p_ * sigma,
                                "level": lam_ * (sigma / rho)})
    owner = inst.mem_job  # single-member columns: one entry per column, sorted by owner
    typ = inst.col_type
    s_e = inst.col_workers
    a = entries_at(stage.C, owner)
    b, h = stage.b, stage.h
    need = (b > 0) | (h > 0)
    col = np.full((n, k), -1)
    col[owner, typ] = np.arange(E)
    A = np.zeros((n, k))
    A[owner, typ] = a
    s = inst.cap_weight  # workers per unit of time: scale factor x class size
    amax = A.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(b > 0, (amax - h) / np.where(b > 0, b, 1.0), np.inf)
    m0 = int(np.argmin(sat))
    sat_theta = float(sat[m0])
    info: dict[str, bool] = {}
    rough: list[tuple[np.ndarray, float]] = []
    dem = Demand(A, s, b, h)
    est = newton_prices(A, s, b, h, inst.cap, warm=warm, info=info, rough=rough, seed=seed,
                        demand=dem, tuning=tuning)
    solver.warm_used = bool(est is not None and info.get("warm"))
    if info.get("sampled"):
        solver.step(NEWTON_SAMPLE_STEP)
    if est is None and info.get("sample_failed"):
        raise Decline(f"{MANY_TYPES} (k = {k} > {tuning.sample_gate_types}) and the sampled "
                      "Newton phase found no balance of demand and capacity")
    # jobs near a tie whose rows are proportional to others' (one model) share one variable
    # per (row class, type) in the master instead of their own (rowclass.py)
    agr = Aggregator(A, need, b, h, tuning)
    if est is None and rough and agr.classed_share() >= ROUGH_MIN_SHARE:
        # Newton found no balance because whole row classes switch types together (a coarse
        # staircase); with those classes aggregated its last point is a usable start
        p, theta = rough[0]
        est = (p, theta, _ROUGH_BAND)
        max_rounds = min(max_rounds, _ROUGH_MAX_ROUNDS)
    if est is None:
        raise Decline("no price estimate (Newton found no balance of demand and capacity)")
    p, theta, band = est
    vert = dem.vertices(col, p, theta, band=band)
    explicit = need & vert.ambiguous
    grouped = agr.grouped(explicit, p, theta)
    refined = False
    for _ in range(max_rounds):
        own_vars = explicit & ~grouped
        if degenerate_handover and too_many_explicit(own_vars, n, tuning):
            reason = (f"{DEGENERATE} ({int(own_vars.sum())} of {n} jobs near a tie: the "
                      "master would be about the whole LP)")
            break
        agg = need & ~explicit
        mg = agr.master_groups(grouped)
        out = _solve_master(solver, stage, a, agg, vert, own_vars,
                            None if mg is None else (*mg, col))
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
        if theta >= sat_theta - SAT_ROUNDING * max(1.0, abs(sat_theta)):
            # theta reached the level at which job m0 runs its best column all the time:
            # no allocation does better, and the dual lambda_m0 = 1 / b_m0,
            # mu_m0 = lambda_m0 max_e a_e (all other multipliers 0) proves it
            lam0 = np.zeros(n)
            mu0 = np.zeros(n)
            lam0[m0] = 1.0 / b[m0]
            mu0[m0] = lam0[m0] * amax[m0]
            done = certified(solver, orig, inst.repair(xcol), duals_of(mu0, np.zeros(k), lam0),
                             provisional)
            if done is not None:
                return done
        red = lam[owner] * a - mu[owner] - s_e * p[typ]
        # explicit jobs have all their columns in the master: a positive reduced cost there
        # is solver tolerance, judged by the certificate below
        viol = (red > REDUCED_COST_TOL * (1.0 + lam[owner] * a)) & ~explicit[owner]
        if not viol.any() and not bound_jobs.any():
            done = certified(solver, orig, inst.repair(xcol), duals_of(mu, p, lam),
                             provisional)
            if done is not None:
                return done
            reason = "the assembled duals did not certify the whole LP"
            break
        agr.leave(bound_jobs & grouped)
        grown = explicit.copy()
        grown[owner[viol]] = True
        grown |= bound_jobs
        g_grown = agr.grouped(grown, p, theta)
        if not refined:
            # the master's prices are usually close to optimal: choose the vertices again
            # around them with a tight band, unless that keeps more jobs explicit than just
            # adding the violators (degenerate prices); later rounds only add jobs
            refined = True
            new = dem.vertices(col, p, theta, band=2 * BAND0)
            fresh = need & (new.ambiguous | (mu > 0) & explicit)
            fresh[owner[viol]] = True
            fresh |= bound_jobs
            g_fresh = agr.grouped(fresh, p, theta)
            if (fresh & ~g_fresh).sum() < (grown & ~g_grown).sum():
                vert, grown, g_grown = new, fresh, g_fresh
        explicit, grouped = grown, g_grown
    else:
        reason = f"not certified within {max_rounds} master rounds"
    raise Decline(reason)


def _solve_master(solver: StageSolver, stage: LevelStage, a: np.ndarray, agg: np.ndarray,
                  vert: Vertices, explicit: np.ndarray,
                  grouped: tuple[Groups, np.ndarray, np.ndarray, np.ndarray] | None = None
                  ) -> tuple | None:
    """Solve the restricted master.

    ``grouped``: ``(groups, row maxima, dense rows, column of each (job, type))`` of the jobs
    aggregated by row class (`fairalloc.throughput.structured.rowclass`).

    Returns ``(xcol, theta, lambda, mu, prices, iterations, bound_jobs)``; ``bound_jobs``
    marks folded jobs whose vertex range stopped theta, and aggregated jobs whose share does
    not fit (they need their own variables).
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    b, h = stage.b, stage.h
    s = inst.cap_weight
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
    fixed_bad = ~pos & ((h[ag] > hi_v * (1 + SAT_ROUNDING)) | (h[ag] < lo_v * (1 - SAT_ROUNDING)))
    if fixed_bad.any():
        return None
    # the ranges are not imposed on theta (a wrong guess would make the master infeasible):
    # jobs whose vertex is invalid at the master's theta get their own variables next round
    ex, cols, own = explicit_columns(inst, explicit)
    nx, r = cols.size, ex.size
    # rows: capacity (k), time (r), level (r); built as one triplet list (one sparse
    # construction per master instead of three and a stack: a round at 100 jobs spends more
    # in scipy.sparse's constructors than in HiGHS)
    jx = np.arange(nx)
    # aggregated row classes: group rows after the level rows, their variables after theta
    gr: Groups | None = None
    g_c = g_A = g_col = g_rows = g_cols = g_vals = g_lo = np.zeros(0)
    if grouped is not None:
        gr, g_c, g_A, g_col = grouped
        g_rows, g_cols, g_vals, g_lo = master_block(gr, g_c, s, b, h, k + 2 * r, nx, nx + 1)
    G = 0 if gr is None else gr.D.shape[0]
    nu_cols = 0 if gr is None else gr.ug.size
    M = csr_from_triplets(
        np.concatenate((typ[cols], np.arange(k), k + own, k + r + own, k + r + np.arange(r),
                        g_rows)),
        np.concatenate((jx, np.full(k, nx), jx, jx, np.full(r, nx), g_cols)),
        np.concatenate((inst.col_workers[cols], coef_theta, np.ones(nx), a[cols], -b[ex],
                        g_vals)),
        (k + 2 * r + G, nx + 1 + nu_cols))
    lo = np.concatenate((np.full(k + r, -np.inf), h[ex], g_lo))
    up = np.concatenate((inst.cap - const, np.ones(r), np.full(r + G, np.inf)))
    # the objective is scaled by n so that the duals (which sum to 1 over the jobs) are of
    # order one against the solver's absolute dual tolerance
    scale = float(n)
    c = np.zeros(nx + 1 + nu_cols)
    c[nx] = -scale
    # no column upper bounds (implied by the time rows): the duals stay on the rows
    col_lo = np.zeros(nx + 1 + nu_cols)
    col_lo[nx] = -np.inf
    lp = LinearProgram.build(c, M, lo, up, col_lo, np.full(nx + 1 + nu_cols, np.inf))
    sol = sub_solve(solver, lp, ipm=r > IPM_MIN_EXPLICIT)
    if sol is None:
        return None
    assert sol.x is not None and sol.row_duals is not None  # checked by sub_solve
    theta = float(sol.x[nx])
    y = sol.row_duals / scale
    rows = RowLayout((("capacity", k), ("time", r), ("level", r), ("group", G)))
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
    tol = ACTIVITY_ROUNDING * max(1.0, abs(theta))
    bound_jobs[ag] = pos & ((th_up < theta - tol) | (th_dn > theta + tol))
    if (lam[ag] < -SAT_ROUNDING).any() or (mu[ag] < -SAT_ROUNDING).any():
        bad = (lam[ag] < -SAT_ROUNDING) | (mu[ag] < -SAT_ROUNDING)
        bound_jobs[ag[bad]] = True
    xcol = np.zeros(E)
    if gr is not None:
        nu = np.maximum(rows.take(y, "group"), 0.0)
        gc, gv, lam_g, bound_g = disaggregate(gr, sol.x[nx + 1:], nu, theta, g_A, g_col, g_c,
                                              s, b, h)
        xcol[gc] = gv
        lam[gr.jobs] = lam_g
        mu[gr.jobs] = 0.0
        bound_jobs[gr.jobs] = bound_g
    lam = np.maximum(lam, 0.0)
    mu = np.maximum(mu, 0.0)
    xcol[cols] = sol.x[:nx]
    xcol[e1] = al1 + be1 * theta
    xcol[np.maximum(e2, 0)[two]] = (al2 + be2 * theta)[two]
    return xcol, theta, lam, mu, p, sol.iterations, bound_jobs
