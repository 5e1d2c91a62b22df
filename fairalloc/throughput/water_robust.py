"""Robust water-filling: the textbook algorithm with exact decisions (Gavel §4.3).

`fairalloc.throughput.WaterFilling.solve` is a plan of two strategies
(`fairalloc.plan.run_plan`, recorded in the call's `SolveLog`): the fast water-filling of
`fairalloc.throughput.max_min` (path step ``water-filling-fast``: the level duals' rule,
saturation jumps, an end check) and, when it fails, this one (``water-filling-robust``, the
plan's exact tail). Every level (path step ``robust-level``) is

1. the **level LP** through `StageSolver.run` (the stage plan with its exact tail: a warm
   simplex, the whole LP, the kept rows relaxed, HiGHS' unscaled simplex, Clarabel),
   certified on the level LP itself. The frozen jobs' floors are the solver's *kept rows*
   (``u_m / f_m >= 1``, so the kept-row steps ease them by a share of feas_tol relative to
   the floor); a point below the last allocation's level, or short of a frozen floor by more
   than its certificate allows, is replaced by the last allocation (with the strategy's
   duals) before it is certified; an infeasibility verdict is believed only from the plan's
   last strategy (the last allocation meets every floor);
2. the new floors ``min(f + w theta*, u(x*))``, reached exactly by the level's (repaired)
   allocation ``x*``. A rise within the level's certified accuracy, or one that the point's
   shortfalls below the frozen floors explain (their kept-row duals times the shortfalls),
   is none: the floors and the allocation stay (lowered to each point's levels, the floors
   drifted: a rise of ``5e-4`` at every level from shortfalls of ``5e-9``, duals ``1e5``).
   Those duals bound what a shortfall buys only from below (at the relaxed optimum): a rise
   whose point misses a frozen floor by more than ``1e-10`` (relative) counts only as far as
   **iterative refinement** (path step ``robust-refine``: the level LP again, around the
   point, in units of ``1e-6``) reaches with every frozen floor met (a rise of 0.58 bought by
   a miss of ``4e-9`` is none), less what the refined point's own shortfall buys, priced by
   the refinement LP's kept-row duals (a refined point ``2e-12`` short rose by ``5e-4`` at
   every level, its duals ``2e8``, and the levels never ended);
3. a level that rose leaves its bottlenecked candidates to the next level, which then does
   not rise (one level LP instead of bottleneck LPs over every candidate). At a level that did
   not rise, **each candidate is decided by a certified claim**: a candidate whose floor
   reaches its largest level (its best column all the time) is bottlenecked; one with spare
   time and a column on a type with spare workers rises (`water_path.can_rise`); the binding
   ones (weighted level duals above noise: the duals only choose which) are decided **each by
   its own bottleneck LP** (`water_path.bottleneck_lp`, path step
   ``robust-single-bottleneck``): its certified *dual bound* at most the job's threshold
   proves the job cannot rise that much with every floor kept (a relaxed or anchored
   strategy's bound is larger, still a bound); a point that rises is no proof either way
   (it meets the floors to a tolerance) and the job stays live. Without binding duals, LPs
   over all undecided candidates come first (risers leave, the LP is solved again).

No rule reads the level duals to freeze, no saturation jump. A level that did not
rise and froze nothing (every claim unproven) freezes by its own certified dual bound
(`water_path.rise_bound` at exact floors, path step ``robust-dual-freeze``), else the
candidate with the largest weighted dual, whose rise that bound caps at about ``|C|`` times its
threshold (``|C|`` candidates). So every level that did not rise freezes a job, and (in exact
arithmetic) a level that rose is followed by one that freezes or rises again; the solve
raises `SolverError` after ``max_levels`` levels that froze jobs or ``2 max_levels`` in all.

**What it proves.** Every LP is certified, and every freeze holds at the floors of its time
(to the job's threshold). The floors are lowered only to what each certified allocation
reaches (its shortfalls, at most feas_tol relative, usually ``1e-9``); where level duals reach
``1e7`` (throughputs spanning ``1e8`` within a job) such a shortfall lets a job frozen earlier
rise by ``1e-3`` at the final levels. So each LP's certified bound is kept as a
`water_path.Proof`, which stays valid at floors missed later (its duals times the misses), and
the **end check** (`end_check`, path step ``pareto-check``) proves every job at the final
allocation's own levels ``u(x)``: saturated, capped by a standing proof, or by the certified
dual bound of a capped bottleneck LP at those levels (over the unproven jobs, then each one
alone). Jobs that rise in its point are unfrozen and water-filling resumes (two rounds at
most). A level LP that no strategy certified (Clarabel on duals of ``1e8``) is used
uncertified from the exact backend (path step ``robust-level-uncertified``). Whatever is not
proven is reported, never claimed: the run's ``unproven`` verdict makes the result's status
``suboptimal`` (path step ``pareto-unproven``, the verdict in ``stats.fallbacks``); its first
level (the objective) is certified either way.

Cost: about one level LP per level and one bottleneck LP per binding candidate of a level that
did not rise: 0.9 s for 64 jobs x 10 types (fast: 0.3 s), 240 s and 7,071 LPs for 256 (fast:
3 s). `Tuning.water_robust_max_jobs` (default 256) gates it; beyond it the plan holds the
fast water-filling only, and its error stands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..backends import Backend, LPBasis
from ..errors import SolverError
from ..results import Certificate
from ..solvelog import SolveLog
from .instance import ColumnInstance
from .programs import LevelStage, StageResult
from .stages import StageSolver, backend_for, capacity_prices, scaled_solve
from .tuning import Tuning
from .water_path import (
    PARETO_CHECK,
    Proof,
    anchored_floors,
    bottleneck_lp,
    can_rise,
    on_face,
    proven_by,
    rise_bound,
)

__all__ = ["ROBUST", "ROBUST_FREEZE", "ROBUST_SINGLE", "ROBUST_UNCERTIFIED", "ROBUST_REFINE",
           "EndCheck", "PRICE_PROOF_LEVELS", "level_prices", "price_proof",
           "WaterContext", "WaterParams", "WaterRun", "end_check",
           "certify_run", "level_accuracy", "robust_applies", "robust_water_filling"]

ROBUST = "water-filling-robust"  # path step: the robust water-filling (the plan's tail)
ROBUST_LEVEL = "robust-level"  # path step: one level LP of the robust water-filling
ROBUST_SINGLE = "robust-single-bottleneck"  # path step: one candidate's own bottleneck LP
#: path step: a level that did not rise froze by its certified dual bound (every candidate
#: rose in its own LP only at floors met to the solvers' tolerance)
ROBUST_FREEZE = "robust-dual-freeze"
#: path step: a level whose point missed a frozen floor, refined (`_witnessed_rise`): its rise
#: stands only as far as a point meeting every frozen floor exactly reaches it
ROBUST_REFINE = "robust-refine"
#: path step: a level LP no strategy certified, solved once more by the exact backend and
#: used uncertified (the result's status then says ``suboptimal``)
ROBUST_UNCERTIFIED = "robust-level-uncertified"
#: ACCURACY: a level's point short of a frozen floor by more than this share of feas_tol
#: (relative: what its certificate would reject) is replaced by the last allocation, which
#: meets them, before it is certified (an interior point 9e-7 short failed its certificate;
#: the last allocation with the interior point's duals can pass it)
_KEPT_SHORT = 1.0
#: ACCURACY: infeasibility verdicts a robust level needs before it is believed: more than any
#: plan holds (its floors are reached by the last allocation), so only the last one stands
_NO_VOTES = 1_000
#: ACCURACY: a level's weighted dual at or below this fraction of the largest is noise (it
#: only orders the decisions, each made by an LP)
_DUAL_NOISE = 1e-9
#: ACCURACY: rounds the robust water-filling resumes after an end check that found risers
_END_RESUMES = 2
#: ACCURACY: a level point short of a frozen floor by more than this (relative) witnesses its
#: rise only after refinement (`_witnessed_rise`): a shortfall of 4e-9 let a job rise by
#: 0.58 that no point meeting the floor has. Not less: the floors are the leximin levels only
#: to this accuracy (the tests' independent reference LPs meet them to HiGHS' 1e-10), and
#: points 6e-11 short rose by 0.09 where the floors held exactly allowed 0.01
_EXACT_SHORT = 1e-10
#: ACCURACY: rounds of iterative refinement a rise whose point misses a frozen floor gets
#: (each solves the level LP again around the point in `_REFINE_UNIT`); a point still short
#: after them witnesses no rise
_REFINE_ROUNDS = 2
#: ACCURACY: the unit of a refinement's change of the point: HiGHS' feasibility tolerance
#: (1e-7) of it is below `_EXACT_SHORT`, and times level duals of 1e7 still below a job's
#: threshold (in units of the shortfall itself, ``1e-10``, the columns' bounds reached
#: ``1e10`` and HiGHS ended "Unknown"; a trust region of 1e-3 around the point made genuine
#: rises infeasible: their exact points lie on another vertex of a degenerate face)
_REFINE_UNIT = 1e-6
#: ACCURACY: unit roundoff of the price proof's capacity sum (`price_proof`)
_EPS = float(np.finfo(float).eps)
#: PERFORMANCE: the standing proofs of this many last levels also give their capacity prices
#: to `price_proof` (each costs O(nnz); the first level's prices are always tried)
PRICE_PROOF_LEVELS = 4


@dataclass(frozen=True)
class WaterParams:
    """The caller's choices of one water-filling solve (validated): the backend spec, the
    tuning, the method, the tolerances and the level cap (``None``: one per job)."""

    spec: Any
    tuning: Tuning
    method: str
    gap_tol: float
    feas_tol: float
    stage_tol: float
    btol: float
    max_levels: int | None

    def backend(self, columns: int) -> Backend:
        """The LP backend for a program of ``columns`` columns."""
        return backend_for(self.spec, columns, self.tuning)

    def stage_solver(self, inst: ColumnInstance, backend: Backend, log: SolveLog
                     ) -> StageSolver:
        """A fresh stage solver on ``inst`` at these tolerances, writing to ``log``."""
        return StageSolver(inst, backend, stage_tol=self.stage_tol, gap_tol=self.gap_tol,
                           feas_tol=self.feas_tol, backend_spec=self.spec, tuning=self.tuning,
                           log=log)


@dataclass
class WaterContext:
    """What both water-filling strategies read: the builder (``wf``, a
    `fairalloc.WaterFilling`), its level rows ``U`` (``u(x) = U @ x``), the backend, the
    caller's choices (``params``), and the call's log (shared by every solver a strategy
    makes)."""

    wf: Any
    U: sp.csr_matrix
    backend: Backend
    params: WaterParams
    log: SolveLog

    @property
    def max_levels(self) -> int:
        """The level cap: the caller's, else one level per job."""
        cap = self.params.max_levels
        return self.wf.inst.n if cap is None else cap

    def solver(self) -> StageSolver:
        """A fresh stage solver writing to the call's log (a strategy's own state: kept rows,
        anchors, warm bases are never shared between strategies)."""
        return self.params.stage_solver(self.wf.inst, self.backend, self.log)


@dataclass
class WaterRun:
    """What a water-filling strategy returns: the allocation (columns), the final floors, the
    level LPs solved, the first level (its stage and result: the result's certificate), every
    LP's certificate, the solver that certifies the first level at ``xcol``, and ``unproven``:
    ``None`` when the end check proved the levels Pareto-maximal, else its verdict."""

    xcol: np.ndarray
    floors: np.ndarray
    levels: int
    first: tuple[LevelStage, StageResult]
    certs: list[Certificate]
    solver: StageSolver
    unproven: str | None = None
    #: the standing proofs of the levels that froze jobs (`water_path.Proof`; a reduced run's
    #: are expanded to the original jobs by `water_symmetry`)
    proofs: list[Proof] = field(default_factory=list)


def certify_run(ctx: WaterContext, run: WaterRun) -> Certificate:
    """The result's certificate: the first level LP's (the max-min level), at the final
    allocation (every later level kept that level); both strategies' ``certify``."""
    stage, res = run.first
    return run.solver.certify(res, stage, run.xcol)


def robust_applies(ctx: WaterContext) -> bool:
    """The robust water-filling is tried up to `Tuning.water_robust_max_jobs` jobs."""
    return bool(ctx.wf.inst.n <= ctx.params.tuning.water_robust_max_jobs)


def level_accuracy(cert: Certificate) -> float:
    """A level LP's certified accuracy in ``theta`` units: its gap tolerance times its scale.

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> level_accuracy(Certificate("lp", 2.0, 2.0, 0.0, 0.0))
    2e-06
    """
    scale = (cert.scale if cert.scale is not None
             else max(abs(cert.primal_value), abs(cert.dual_bound)))
    return float(cert.gap_tol * scale)


def _decide(ctx: WaterContext, solver: StageSolver, floors: np.ndarray, undecided: np.ndarray,
            thr: np.ndarray, x: np.ndarray, bwarm: list[Any], certs: list[Certificate],
            proofs: list[Proof], alone: bool = False) -> np.ndarray:
    """The bottlenecked jobs among ``undecided`` (``x``: the last allocation).

    A job is frozen only on a proof about the floors as they are: a bottleneck LP's certified
    **dual bound** ``D`` (weak duality: no allocation meeting every floor gives the candidates
    a total capped rise above ``D``; a relaxed or anchored strategy's bound is larger, still a
    bound) at most the job's threshold. Its point is no proof either way: it meets the floors
    only to the solver's tolerance, which level duals of up to ``1e8`` turn into rises of
    ``1e-3`` (a job rising there stays live, and the next level decides). LPs over all undecided
    jobs first (their bound proves each whose threshold it does not exceed; the jobs that rise
    in their point leave, and the LP is solved again), then each job left by its own LP, whose
    bound is that job's rise alone. A job whose LP no strategy solved stays live."""
    inst, U = ctx.wf.inst, ctx.U

    def bound(cand: np.ndarray) -> tuple[np.ndarray, float] | None:
        try:
            sigma, _, cert = bottleneck_lp(inst, floors, cand, solver, U, thr, bwarm, anchor=x,
                                           proofs=proofs)
        except SolverError:  # (every strategy's verdict is in the log's hand-overs)
            return None
        certs.append(cert)
        return sigma, float(cert.dual_bound)

    und = undecided.copy()
    bott = np.zeros(und.size, dtype=bool)
    while und.sum() > 1 and not alone:
        out = bound(und)
        if out is None:
            break
        sigma, D = out
        proven = und & (D <= thr)
        bott |= proven
        und &= ~proven
        up = und & (sigma > thr)
        if not up.any():
            break
        und &= ~up
    for m in np.flatnonzero(und):
        solver.step(ROBUST_SINGLE)
        one = np.zeros(und.size, dtype=bool)
        one[m] = True
        out = bound(one)
        bott[m] = out is not None and out[1] <= thr[m]
    return bott


def _level(solver: StageSolver, U: sp.csr_matrix, w: np.ndarray, floors: np.ndarray,
           frozen: np.ndarray, x: np.ndarray, levels: int) -> tuple[LevelStage, StageResult]:
    """Level ``levels``: ``max theta`` s.t. ``u_m >= f_m + w_m theta`` for the live jobs, by
    `StageSolver.run`. The frozen jobs' floors are the solver's *kept rows*, which ``x`` (the
    last allocation) reaches exactly: the stage plan's kept-row steps answer a solver that
    meets them only to its tolerance or calls their thin face infeasible, and a point short
    of them is moved towards ``x`` (`StageSolver.toward_anchor`). A point whose level is below
    ``x``'s (a vertex found to the solver's tolerance, ``theta* = -3e-6`` against ``0`` at
    ``x`` with level duals of ``3e8``) is replaced by ``x`` before it is certified."""
    bmax = float(w.max(initial=0.0))
    # the gap of a level that legitimately does not rise is judged against every floor
    scale = float(np.abs(floors).max(initial=0.0)) / bmax if bmax > 0 else None
    # (a frozen job's level row is u_m >= 0, always met: its floor is a kept row)
    stage = LevelStage(U, w, np.where(frozen, 0.0, floors), f"water-filling level {levels}",
                       scale=scale)
    # kept rows u_m / f_m >= 1 (f_m > 0; a floor of 0 is always met): the kept-row steps move
    # them by a share of feas_tol * max(1, bound), which is then the certificate's own scale
    keep = frozen & (floors > 0)
    solver.fixed = ([(sp.csr_matrix(sp.diags(1.0 / floors[keep]) @ U[keep]),
                      np.ones(int(keep.sum())))] if keep.any() else [])
    solver.anchor = None
    at_x = solver.point(stage, x)[-1]
    B, low = solver.fixed[0] if solver.fixed else (None, None)

    def no_worse(xcol: np.ndarray) -> np.ndarray:
        short = 0.0 if B is None else float(np.max(low - B @ xcol, initial=0.0))
        worse = short > _KEPT_SHORT * solver.feas_tol or solver.point(stage, xcol)[-1] < at_x
        return x if worse else xcol

    solver.meet_extra_rows = on_face(solver, stage, no_worse)
    # x reaches every floor: an infeasibility verdict is a solver's, on a thin face; only
    # the plan's last strategy's stands
    solver.infeasible_votes = _NO_VOTES
    solver.step(ROBUST_LEVEL)
    try:
        return stage, solver.run(stage, stage.name)
    except SolverError:
        if levels == 1:
            raise
        # no strategy certified this level (Clarabel on level duals of 1e8: an interior point
        # short of the frozen floors, a dual bound that proves no optimum): its whole-LP
        # solve goes on uncertified -- its point, moved onto its face or else the last
        # allocation, meets every floor, and its dual bound is still a bound -- and the
        # result says so (`WaterRun.unproven`)
        solver.step(ROBUST_UNCERTIFIED)
        lp = solver.program(stage)
        try:
            sol, v, cert = solver.run_once(lp, stage, stage.name, solver.exact_backend)
        except SolverError:
            # that solve failed too (HiGHS called the thin face infeasible, issue #27): the
            # last allocation x meets every floor, so the program is feasible and x answers
            # the level (it does not rise; no duals, so no bound: it proves nothing)
            v = solver.point(stage, x)
            duals = np.zeros(lp.A.shape[0])
            res = StageResult(lp, v, duals, float(v[-1]),
                              solver.certificate(lp, stage, v, duals), 0, solver.layout(stage))
            return stage, res
        return stage, solver.result(lp, stage, sol, v, cert)
    finally:
        solver.meet_extra_rows = None


def _amplified_shortfall(solver: StageSolver, res: StageResult, frozen: np.ndarray) -> float:
    """How much of a level's rise its point's shortfalls below the frozen floors (the kept
    rows, ``u_m / f_m >= 1``) can explain: their duals times the shortfalls, in level units
    (`water_path.amplified_violation` for the kept rows)."""
    if not solver.fixed:
        return 0.0
    B, low = solver.fixed[0]
    lam = np.maximum(res.block("kept"), 0.0)
    return float(lam @ np.clip(low - B @ res.x[: B.shape[1]], 0.0, None))


def _kept_short(solver: StageSolver, xcol: np.ndarray) -> float:
    """The largest relative shortfall of ``xcol`` below the frozen floors (the solver's kept
    rows ``u_m / f_m >= 1``); 0 without frozen floors."""
    if not solver.fixed:
        return 0.0
    B, low = solver.fixed[0]
    return float(np.max(low - B @ xcol[: B.shape[1]], initial=0.0))


def _witnessed_rise(solver: StageSolver, stage: LevelStage, xcol: np.ndarray, slack: float
                    ) -> tuple[float, np.ndarray | None, float]:
    """A level's rise witnessed by a point that meets every frozen floor exactly, by
    iterative refinement of the solver's point ``xcol``: the level LP again, written around
    the point (``v = v0 + t e``, theta free, ``t`` = `_REFINE_UNIT`), so that the solver's
    tolerance applies to the change ``t e``, not to the floors (path step
    ``robust-refine``). Mathematically the same LP: its optimum is the level's rise at the
    floors themselves, whatever the point's shortfall bought (a rise of 0.58 for a shortfall
    of 4e-9, relative). ``(theta, point, slack)`` (``theta``: the point's own level;
    ``slack``: what the point's own shortfall below the frozen floors buys, the refinement
    LP's kept-row duals times it); ``(0, None, 0)`` (no rise) when no round gave a point
    meeting the floors to `_EXACT_SHORT`; the input point, its level and ``slack`` when a
    refinement LP failed (the rise then stands as the level's certificate allows it, and the
    end check proves the levels).

    The refinement LP's duals, not the level LP's, price the refined point's shortfall: they
    are taken at the floors met to ``1e-13`` where the level's value is steepest (a level
    LP's kept-row duals of 45 against a rate of ``2e8``: a refined point ``2e-12`` short rose
    by ``5e-4`` at every level, and the levels never ended, #27)."""
    lp = solver.program(stage)
    E = solver.inst.E
    xcol0, theta = xcol, float(solver.point(stage, xcol)[-1])
    sigma, _ = stage.units()
    col_unit = np.ones(E + 1)
    col_unit[E] = sigma
    kept = np.zeros(0)
    for _ in range(_REFINE_ROUNDS):
        if _kept_short(solver, xcol) <= _EXACT_SHORT:
            break
        v = solver.point(stage, xcol)
        Av = lp.A @ v
        t = _REFINE_UNIT
        col_lo, col_up = (lp.col_lower - v) / t, (lp.col_upper - v) / t
        col_lo[E], col_up[E] = -np.inf, np.inf  # (the live jobs may pay: a level below 0)
        corr = dataclasses.replace(lp, row_lower=(lp.row_lower - Av) / t,
                                   row_upper=(lp.row_upper - Av) / t, col_lower=col_lo,
                                   col_upper=col_up)
        solver.step(ROBUST_REFINE)
        try:
            sol = scaled_solve(corr, solver.exact_backend, f"{stage.name} refined",
                               col_unit=col_unit, obj_unit=sigma)
        except SolverError:
            # (no answer: HiGHS ended "Unknown" on points 4e-10 short; the rise stands as
            # the level's certificate allows it, and the end check proves the levels)
            return theta, xcol0, slack
        solver.used(sol)
        assert sol.x is not None and sol.row_duals is not None
        xcol = solver.inst.repair(v[:E] + t * sol.x[:E])
        # (the same rows as the level LP, each divided by t with its change: in level units
        # per unit of a row's shortfall, its dual is the refinement LP's own)
        kept = np.maximum(solver.layout(stage).take(sol.row_duals, "kept"), 0.0)
    if _kept_short(solver, xcol) > _EXACT_SHORT:
        return 0.0, None, 0.0
    B, low = solver.fixed[0]
    bought = float(kept @ np.clip(low - B @ xcol[: B.shape[1]], 0.0, None)) if kept.size else 0.0
    return float(solver.point(stage, xcol)[-1]), xcol, bought


def robust_water_filling(ctx: WaterContext) -> WaterRun:
    """Water-filling by level LPs and one exact decision per candidate (module docstring).

    Raises
    ------
    SolverError
        More than ``ctx.max_levels`` levels that froze jobs (twice that in all), or a level
        LP that no strategy of its plan solved (``exc.verdicts``; a bottleneck LP that none
        solved decides nothing: its job stays live).

    Examples
    --------
    Gavel §4.3's example by the robust strategy alone (job by job): every job ends on a
    full GPU.

    >>> import fairalloc as fa
    >>> from fairalloc.throughput import Tuning
    >>> jobs = fa.Jobs([[1.0]] * 4, weight=[3, 1, 1, 1])
    >>> r = fa.water_filling(jobs, fa.Cluster({"gpu": 4}), tuning=Tuning(water_fast=False),
    ...                      symmetry=False)
    >>> r.x.ravel().round(6).tolist(), r.stats.path[:2], r.levels
    ([1.0, 1.0, 1.0, 1.0], ('water-filling-robust', 'robust-level'), 2)
    """
    wf, U = ctx.wf, ctx.U
    inst = wf.inst
    n, E = inst.n, inst.E
    solver = ctx.solver()
    # each level changes only the rows of the jobs the last one froze: HiGHS' simplex starts
    # from the last level's basis where fairalloc chose HiGHS (an exact strategy of the plan)
    solver.warm_levels = True
    x = np.zeros(E)  # exactly feasible, reaches the floors (0 at first)
    floors = np.zeros(n)
    frozen = np.zeros(n, dtype=bool)
    thr_frz = ctx.params.btol * np.ones(n)  # each job's threshold when it was frozen
    certs: list[Certificate] = []
    proofs: list[Proof] = []  # every LP's certified bound, kept for the end check
    first: tuple[LevelStage, StageResult] | None = None
    bwarm: list[Any] = [None]
    levels = resumes = 0
    uncertified: list[str] = []  # the levels no strategy certified
    while True:
        freezing, start = 0, levels  # (counted per round: a resumed round refreezes jobs)
        while not frozen.all():
            # every level freezes a job or rises by more than its accuracy; the cap counts
            # levels that freeze jobs (``max_levels``), and as many that only rise
            if freezing >= ctx.max_levels or levels - start > 2 * ctx.max_levels:
                raise SolverError(f"robust water-filling did not finish within "
                                  f"{ctx.max_levels} levels", backend=ctx.backend.name,
                                  status="iteration_limit")
            levels += 1
            w = wf.job_weights(frozen)
            stage, res = _level(solver, U, w, floors, frozen, x, levels)
            certs.append(res.cert)
            if not res.cert.ok:
                uncertified.append(f"level {levels} (relative gap "
                                   f"{res.cert.relative_gap:.2e})")
            if first is None:
                first = (stage, res)
            proofs.append(_level_proof(solver, res, floors, frozen))
            x, floors, bott, thr = _freezes(ctx, solver, stage, res, floors, frozen, w, x,
                                            bwarm, certs, proofs, levels)
            thr_frz = np.where(frozen, thr_frz, thr)
            frozen |= bott
            freezing += int(bott.any())
        # the end check: every job proven at the allocation's own levels, else the jobs that
        # still rise are unfrozen and water-filling resumes; what no LP proves is reported
        thr_end = np.maximum(thr_frz, ctx.params.btol * np.maximum(1.0, floors))
        try:
            chk = end_check(inst, solver, U, x, thr_end, wf._max_level, proofs, bwarm,
                            alone=True, btol=ctx.params.btol, prices=level_prices(first, proofs))
        except SolverError as exc:
            unproven = f"the end check's LP failed ({exc.reason})"
            break
        certs += chk.certs
        floors = chk.levels
        unproven = (None if chk.ok else f"{int((~chk.proven).sum())} jobs not proven "
                    f"bottlenecked (their relative rises are bounded only by {chk.bound:.3g})")
        if chk.ok or not chk.risers.any() or resumes == _END_RESUMES:
            break
        resumes += 1
        frozen &= ~chk.risers
        x = chk.x
        floors = anchored_floors(floors, U, x)  # reached exactly by the LP's point
    assert first is not None
    if uncertified:
        unproven = "; ".join(([unproven] if unproven else [])
                             + [f"not certified: {', '.join(uncertified)}"])
    return WaterRun(x, floors, levels, first, certs, solver, unproven)


def _level_proof(solver: StageSolver, res: StageResult, floors: np.ndarray,
                 frozen: np.ndarray) -> Proof:
    """The level LP's certified bound as a `Proof` at its floors (the live jobs' level rows
    and the frozen jobs' kept rows ``u_m / f_m >= 1``, whose duals count ``1 / f_m`` per unit
    of level; a frozen job's level row ``u_m >= 0`` only adds a nonnegative term)."""
    lam = np.where(frozen, 0.0, np.maximum(res.block("level"), 0.0))
    if solver.fixed:
        keep = frozen & (floors > 0)
        lam[keep] = np.maximum(res.block("kept"), 0.0) / floors[keep]
    return Proof(floors.copy(), lam, float(res.cert.dual_bound), prices=capacity_prices(res))


def _freezes(ctx: WaterContext, solver: StageSolver, stage: LevelStage, res: StageResult,
             floors: np.ndarray,
             frozen: np.ndarray, w: np.ndarray, x: np.ndarray, bwarm: list[Any],
             certs: list[Certificate], proofs: list[Proof], levels: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One level's outcome: ``(allocation, floors, jobs it freezes, thresholds)``."""
    wf, U, inst = ctx.wf, ctx.U, ctx.wf.inst
    cand = w > 0
    acc = level_accuracy(res.cert)
    # a rise below the level's certified accuracy is none (floors raised by noise would
    # be floors no allocation is known to reach), and so is one that the point's shortfalls
    # below the frozen floors explain (their duals times the shortfalls: with level duals of
    # 1e5, a shortfall of 5e-9 at every level gave a rise of 5e-4 at every level, the
    # floors lowered to each point's levels, and the level never ended)
    slack = _amplified_shortfall(solver, res, frozen)
    theta, xnew = res.value, res.x[: inst.E]
    if levels > 1 and theta > acc + slack and _kept_short(solver, xnew) > _EXACT_SHORT:
        # the point misses a frozen floor: its rise may be bought by that miss (duals at the
        # relaxed optimum bound that gain only from below); only a point that meets every
        # frozen floor exactly witnesses a rise
        theta, refined, slack = _witnessed_rise(solver, stage, xnew, slack)
        xnew = x if refined is None else refined
    if levels == 1 or theta > acc + slack:
        x = xnew
    else:
        theta = 0.0  # (the floors stay, and so does the allocation that reaches them)
    floors = np.minimum(floors + w * max(theta, 0.0), U @ x)  # reached by x
    thr = np.maximum(ctx.params.btol * np.maximum(1.0, floors), 2.0 * acc * w)
    bott = cand & (floors >= wf._max_level - thr)  # saturated: its best column all the time
    # a level that rose leaves its bottlenecked candidates to the next level, which then
    # does not rise (one level LP instead of bottleneck LPs over every candidate)
    undecided = (cand & ~bott & ~can_rise(inst, wf.unorm, x, thr) if theta <= 0.0
                 else np.zeros(inst.n, dtype=bool))
    lam = np.maximum(res.block("level"), 0.0)
    if undecided.any():
        # the level's binding candidates (weighted duals above noise) are decided first,
        # each by its own LP (the duals only choose which: they prove nothing); the others
        # usually rise, and the next level tells (about n LPs where bottleneck LPs over all
        # candidates found a few risers each: 6,720 LPs on 256 jobs x 10 types)
        lam_w = lam * w
        binding = undecided & (lam_w > _DUAL_NOISE * float(lam_w.max(initial=0.0)))
        bott |= _decide(ctx, solver, floors, binding if binding.any() else undecided, thr,
                        x, bwarm, certs, proofs, alone=binding.any())
    if not bott.any() and theta <= 0.0:
        # the level LP proves (to its accuracy) that the candidates cannot rise together;
        # their rises alone exist only at floors met to the solvers' tolerance
        solver.step(ROBUST_FREEZE)
        bott = cand & (rise_bound(lam, res.cert.dual_bound, 0.0, floors) <= thr)
        if not bott.any():
            # no proof at all: a guess that keeps every level freezing a job; the end check
            # proves it at the final levels or finds the job rising
            bott[np.argmax(np.where(cand, lam * w, -np.inf))] = True
    return x, floors, bott, thr


def price_proof(inst: Any, U: sp.csr_matrix, x: np.ndarray, prices: np.ndarray) -> Proof:
    """A Lagrangian proof on the ORIGINAL program at capacity prices ``prices`` (any ``>= 0``)
    and the levels ``u(x)`` of an exactly feasible allocation ``x``, in O(nnz).

    Each job's weight is the largest that prices none of its columns above cost,
    ``lam_m = min_e p(e) / U_me`` over its columns (``p(e)``: the column's workers times its
    type's price); then for every allocation ``y`` (columns in ``[0, 1]``, capacity kept)
    ``sum_m lam_m u_m(y) <= p . cap + r`` (``r``: the columns' positive reduced profits, the
    rounding of the ratios), so with every job kept at its level, job ``m`` rises by at most
    ``(p . cap + r - lam . u(x)) / lam_m`` (`Proof.bound` at floors ``u(x)``;
    ``proofs/symmetry_reduction.md``, "Claim W3").

    Examples
    --------
    Two jobs sharing one worker equally: neither can rise while the other keeps its level.

    >>> import fairalloc as fa, numpy as np, scipy.sparse as sp
    >>> from fairalloc.throughput.instance import ColumnInstance
    >>> inst = ColumnInstance(fa.Jobs([[2.0], [1.0]]), fa.Cluster({"a": 1}))
    >>> U = sp.csr_matrix(inst.Tm)
    >>> p = price_proof(inst, U, np.array([0.5, 0.5]), np.array([1.0]))
    >>> bool(p.bound(U @ np.array([0.5, 0.5])).max() < 1e-12)
    True
    """
    U = sp.csr_matrix(U)
    cost = np.asarray(inst.W.T @ prices).ravel()
    job = np.repeat(np.arange(U.shape[0]), np.diff(U.indptr))
    pos = U.data > 0
    lam = np.full(U.shape[0], np.inf)
    np.minimum.at(lam, job[pos], cost[U.indices[pos]] / U.data[pos])
    lam[~np.isfinite(lam)] = 0.0
    r = float(np.clip(U.T @ lam - cost, 0.0, None).sum())
    ell = U @ x
    supply = float(prices @ inst.cap)
    # the rounding of the capacity sum (k eps times its terms; `Proof.bound` adds the rest)
    room = supply + r - float(lam @ ell) + _EPS * prices.size * supply
    return Proof(ell, lam, room)


def level_prices(first: tuple[LevelStage, StageResult] | None,
                 proofs: list[Proof]) -> list[np.ndarray]:
    """The capacity prices `end_check` tries in price proofs: the first level's (its stage and
    result) and those of the last `PRICE_PROOF_LEVELS` standing proofs that carry them."""
    own = [p.prices for p in proofs[-PRICE_PROOF_LEVELS:] if p.prices is not None]
    return own if first is None else [capacity_prices(first[1]), *own]


def claimed_rise(levels: np.ndarray, umax: np.ndarray, btol: float,
                 gap_tol: float) -> np.ndarray:
    """The rise above ``levels`` up to which a result with status ``optimal`` calls a job
    bottlenecked: ``max(btol max(1, level), gap_tol umax)`` (``umax``: the job's best level,
    its best column all the time).

    Examples
    --------
    >>> import numpy as np
    >>> claimed_rise(np.array([0.5, 20.0]), np.array([4.0, 32.0]), 1e-7, 1e-6).tolist()
    [4e-06, 3.2e-05]
    """
    return np.maximum(btol * np.maximum(1.0, levels), gap_tol * umax)


@dataclass(frozen=True)
class EndCheck:
    """The end check's verdict (`end_check`) on an allocation and the floors it meets."""

    #: the allocation's levels ``u(x)``: every claim is about these
    levels: np.ndarray
    #: jobs proven not to rise above ``levels`` by more than their threshold (saturated,
    #: capped by a standing `Proof`, or by the end check LP's certified bound)
    proven: np.ndarray
    #: unproven jobs whose rise in the LP's point exceeds their threshold
    risers: np.ndarray
    #: the last LP's allocation (repaired; the input allocation where no LP ran)
    x: np.ndarray
    #: the last LP's certified bound on the weighted rises it did not exclude (0: none ran)
    bound: float
    certs: tuple[Certificate, ...]

    @property
    def ok(self) -> bool:
        """Whether every job is proven: the allocation's levels are Pareto-maximal."""
        return bool(self.proven.all())


def end_check(inst: ColumnInstance, solver: StageSolver, U: sp.csr_matrix, x: np.ndarray,
              thr: np.ndarray, umax: np.ndarray, proofs: list[Proof],
              warm: list[LPBasis | None] | None = None, *, every: bool = False,
              alone: bool = False, btol: float | None = None,
              prices: Sequence[np.ndarray] = ()) -> EndCheck:
    """Prove that no job can rise above the levels ``u(x)`` of ``x`` (an exactly feasible
    allocation) by more than ``thr`` while every job keeps its level: water-filling's claim
    about its result.

    The claim is about ``u(x)``, not about the floors ``x`` was meant to meet: a solver's
    allocation meets them only to its tolerance, and where level duals reach ``1e7`` a proof at
    floors that ``x`` misses by ``4e-8`` says nothing about ``x`` (10 types: a frozen job rose
    by ``1e-2``); nor about floors below ``u(x)``, from which a job "rises" to what ``x``
    already gives it. A job is proven when it is saturated (``umax``), when a standing
    `Proof` of an earlier LP caps it at those levels, by a `price_proof` at one of ``prices``
    (capacity prices, any: O(nnz) each, tried only where jobs are left), or by a capped
    bottleneck LP (path step ``pareto-check``, then its own) over the others (all unsaturated
    jobs with ``every``), weighted by ``1 / max(1, level)``: its certified *dual bound* ``D``
    bounds the sum of their relative rises, so it proves each job ``m`` with ``D <= thr_m /
    max(1, level_m)`` (its point, which meets the levels only to the solver's tolerance, proves
    nothing).
    Unproven jobs that rise in its point are the risers; where none does, the LP runs again
    over the unproven jobs alone, and with ``alone`` each one left gets its own LP.

    Raises
    ------
    SolverError
        When no strategy of a bottleneck LP's plan solved it.
    """
    ell = U @ x
    if btol is not None:
        thr = np.minimum(thr, claimed_rise(ell, umax, btol, solver.gap_tol))
    sat = ell >= umax - thr
    proven = sat | proven_by(proofs, ell, thr)
    for p in prices:
        if proven.all():
            break
        proven |= proven_by([price_proof(inst, U, x, p)], ell, thr)
    w = 1.0 / np.maximum(1.0, ell)
    certs: list[Certificate] = []
    risers = np.zeros(ell.size, dtype=bool)
    x2, bound = x, 0.0

    def lp(todo: np.ndarray) -> None:
        nonlocal x2, bound
        solver.step(PARETO_CHECK)
        sigma, xs, cert = bottleneck_lp(inst, ell, todo, solver, U, thr, warm, anchor=x,
                                        weights=w)
        certs.append(cert)
        bound = float(cert.dual_bound)
        proven[todo & (bound <= thr * w)] = True
        up = ~proven & todo & (sigma > thr)
        if up.any():
            risers[up], x2 = True, xs

    todo = ~sat if every else ~proven
    if todo.any():
        lp(todo)
        if (~proven).any() and not risers.any() and (todo & proven).any():
            lp(~proven)  # the bound was spent on jobs proven otherwise: again without them
        if alone and not risers.any():
            for m in np.flatnonzero(~proven):  # each job left by its own LP
                lp(np.arange(ell.size) == m)
    return EndCheck(ell, proven, risers, x2, 0.0 if proven.all() else bound, tuple(certs))
