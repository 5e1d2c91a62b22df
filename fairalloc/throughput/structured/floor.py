"""The structured exact solver of floor (work-conserving) stages: `fast_floor`.

Certifies the stage at the level stage's allocation when it can (``floor-from-level``), else
prices the floor rows by Newton's method on the floor demand (`FloorDemand`), frees the
blocking jobs (``floor-freed:<jobs>``) and solves a restricted master until the full LP's
certificate passes (``structured-floor``); hand-over ``structured-floor->exact-lp: <reason>``
(`fairalloc.throughput.structured`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ..._sparse import csr_from_triplets, entries_at
from ...backends import LinearProgram
from ...plan import Decline, Strategy
from ..instance import ColumnInstance
from ..programs import LinearStage, StageResult
from ..rows import RowLayout
from .common import (
    ACTIVITY_ROUNDING,
    DEGENERATE,
    MANY_TYPES,
    NO_ESTIMATE,
    REDUCED_COST_TOL,
    SAT_ROUNDING,
    Vertices,
    certified,
    explicit_columns,
    floor_vertex_x,
    free_overloaded,
    structured_applies,
    sub_solve,
    too_many_explicit,
    too_many_types,
)
from .floor_bases import crash_statuses, warm_master_basis
from .floor_demand import FloorDemand, floor_newton_prices
from .rowclass import ROUGH_MIN_SHARE, Aggregator, Groups, disaggregate, master_block

if TYPE_CHECKING:  # (stages imports the plans that use these solvers)
    from ..stages import StageSolver

STRUCTURED_FLOOR = "structured-floor"  # path step: floor stage certified from its master
FLOOR_FROM_LEVEL = "floor-from-level"  # path step: floor stage certified with level duals
FLOOR_DUAL_LP = "floor-dual-lp"  # path step: the elastic dual LP in the k prices (`_floor_duals`)
#: path step prefix: blocking jobs given their own variables (named by the master's own
#: duals, or by the elastic dual LP `_floor_duals`)
FLOOR_FREED = "floor-freed"
# master rounds (``tuning.floor_max_rounds``) and rounds priced by the master's own duals
# before the dual LP, an LP with about ``n (k + 1)`` rows (``tuning.floor_priced_rounds``;
# FTF random, 16,384 jobs: the two dual LPs cost about 80 % of the stage) are `Tuning` fields
_FLOOR_BAND_GROWTH = 4.0  # PERFORMANCE knob: the same for floor stages
#: PERFORMANCE knob: band of near-ties around Newton's unbalanced end point (row classes)
_FLOOR_ROUGH_BAND = 0.05
#: ACCURACY: relative tolerance for a work-conserving objective to be a per-job multiple of
#: the level rows (the floor solver's structure)
_OMEGA_RTOL = 1e-12
#: PERFORMANCE knob: floor masters with more jobs with their own variables go to HiGHS'
#: interior point when they have no starting basis (no basis capability, or
#: ``tuning.warm_start`` off; Gavel-drawn FTF, CPU, cold simplex against IPM: 432 of 2,048
#: jobs, simplex 14 ms, IPM 20 ms; 585,
#: simplex 22 ms, IPM 20 ms; 664 of 8,192, simplex 36 ms, IPM 30 ms)
_FLOOR_IPM_MIN_OWN = 600
#: ACCURACY: a column with more time than this is "used" (reads a vertex off an allocation)
_USED = 1e-12
#: ACCURACY: relative distance of a job's level from its floor at which it sits on the floor
_AT_FLOOR = 1e-7
#: ACCURACY: a split whose two columns' rates differ by at most this (relative) is degenerate
#: (its floor and time rows are parallel): its ``lambda, mu`` are not fixed by the prices
_SPLIT_TIE = 1e-12


def floor_strategies(prior: StageResult | None = None, *, any_size: bool = False
                     ) -> tuple[Strategy[Any, StageResult], ...]:
    """The structured strategies of a floor (work-conserving) stage's plan: ``floor-from-level``
    (with ``prior``, the level stage's result: its allocation certified with scaled level
    duals, no LP) and ``structured-floor`` (`fast_floor`). Both apply only to stages with the
    floor structure (`floor_structure`; ``any_size``: below ``tuning.structured_min_jobs``
    too) and decline where they cannot win."""

    def from_level(ctx: Any) -> StageResult:
        assert prior is not None
        found = floor_structure(ctx.solver, ctx.stage, any_size)
        assert found is not None  # (checked by `applies`)
        a, omega = found
        done = _floor_from_level(ctx.solver, ctx.stage, prior, a, omega)
        if done is None:
            raise Decline("the level's allocation is not optimal for the floor stage")
        return done

    def structured(ctx: Any) -> StageResult:
        return fast_floor(ctx.solver, ctx.stage, prior=prior, any_size=any_size)

    def applies(ctx: Any) -> bool:
        return (isinstance(ctx.stage, LinearStage)
                and floor_structure(ctx.solver, ctx.stage, any_size) is not None)

    out = [Strategy(STRUCTURED_FLOOR, structured, _own_certificate, applies)]
    if prior is not None:
        out.insert(0, Strategy(FLOOR_FROM_LEVEL, from_level, _own_certificate, applies))
    return tuple(out)


def _own_certificate(ctx: Any, res: StageResult) -> Any:
    return res.cert  # the whole stage LP's certificate, computed by `certified`


def floor_structure(solver: StageSolver, stage: LinearStage, any_size: bool = False
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(a, omega)`` when ``stage`` is a floor stage the structured solvers handle: one kept
    level block with positive single-column coefficients ``a`` (one per column) and an
    objective that is a non-negative per-job multiple ``omega`` of each job's level row;
    else ``None`` (``any_size``: also below ``tuning.structured_min_jobs`` jobs)."""
    inst = solver.inst
    if not structured_applies(solver, kept=1, any_size=any_size):
        return None
    C, _ = solver.fixed[0]
    owner = inst.mem_job
    if C.shape[0] != inst.n:
        return None
    a = entries_at(C, owner)
    if (a <= 0).any():
        return None
    omega_e = stage.g / a
    starts = np.searchsorted(owner, np.arange(inst.n))
    omega = omega_e[starts]
    if (not np.allclose(omega_e, omega[owner], rtol=_OMEGA_RTOL, atol=0.0)
            or (omega < 0).any()):
        return None
    return a, omega


def fast_floor(solver: StageSolver, stage: LinearStage, *, prior: StageResult | None = None,
                max_rounds: int | None = None, any_size: bool = False) -> StageResult:
    """Exact solve of a *floor* stage ``max g @ x`` s.t. ``C x >= f`` (one fixed level block).

    Used for the work-conserving stage, where the objective of each job is a multiple
    ``omega_m`` of its level row (``g_e = omega_m a_e``; true whenever both are per-job
    multiples of its throughput). At prices ``p`` each job's best response is a vertex of
    ``{a . x >= f, sum x <= 1, x >= 0}`` (its floor on one column, all its time on one
    column, or its time split between two columns at the floor) whose capacity use is a
    constant. Prices come from `floor_newton_prices` (best-response demand =
    capacity; it declines where its prices prove the floors have no point:
    `FloorDemand.priced_out`); jobs whose best vertex is clear at them are constants (where
    the constants' vertices overload a type, those nearest a tie on it are not:
    `free_overloaded`), the
    others keep their variables in a restricted master LP (those near a tie in a row class
    held at their floors by class, `fairalloc.throughput.structured.rowclass`). The master's
    own duals, with the constants' and the aggregated jobs' duals in closed form at its prices
    (`_master_duals`), are tried first; the constants they price out get their own variables
    (``floor-freed:<jobs>``) and the aggregated jobs they price out leave their classes (at
    most ``tuning.floor_priced_rounds`` rounds). Otherwise `_floor_duals` finds the full
    LP's duals complementary to the master's allocation (an LP in the ``k`` prices).
    Either way the certificate of the full LP decides. If it fails, the band of jobs with
    their own variables widens; after ``max_rounds`` (default ``tuning.floor_max_rounds``)
    it raises `fairalloc.plan.Decline` (the plan's whole-LP strategies run). ``prior``: the
    level stage's result (see `floor_strategies`), which only lifts the many-types gate.
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    tuning = solver.tuning
    if max_rounds is None:
        max_rounds = tuning.floor_max_rounds
    found = floor_structure(solver, stage, any_size)
    if found is None:
        raise Decline("the stage has no floor structure")
    if too_many_types(solver):
        raise Decline(f"{MANY_TYPES} (k = {k} > {tuning.structured_max_types})")
    a, omega = found
    C, f = solver.fixed[0]
    layout = solver.layout(stage)  # time, capacity, kept (the level rows)
    col = np.full((n, k), -1)
    col[inst.mem_job, inst.col_type] = np.arange(E)
    A = np.zeros((n, k))
    A[inst.mem_job, inst.col_type] = a
    dem = FloorDemand(A, inst.cap_weight, f, omega)
    rough: list[np.ndarray] = []
    est = floor_newton_prices(dem, inst.cap, rough)
    # jobs near a tie with proportional rows held at their floors share one variable per
    # (row class, type) in the master (rowclass.py)
    agr = Aggregator(A, f > 0, np.zeros(n), f, tuning)
    if est is None and rough and agr.classed_share() >= ROUGH_MIN_SHARE:
        # no balance because row classes switch types together: start from Newton's end
        est = rough[0], _FLOOR_ROUGH_BAND
    if est is None:
        raise Decline(f"{NO_ESTIMATE} (Newton found no balance of demand and capacity)")
    p, band = est
    explicit = np.zeros(n, dtype=bool)
    reason = f"not certified within {max_rounds} master rounds"
    rounds = max_rounds  # a round spent on aggregated shares that did not work is given back
    used = priced = 0
    retried = False
    memo: dict[str, Any] = {}  # the previous master's basis, rows and columns (a warm start)
    while used < rounds:
        used += 1
        vert = dem.vertices(col, p, band=band)
        explicit |= vert.ambiguous
        # constants whose vertices overload a type: the master would have no point; the
        # ones nearest a tie get their variables (not a wider band for every job: #28)
        fresh = _overloading(inst, a, f, col, vert, ~explicit, explicit, dem, p)
        if fresh.any():
            solver.step(f"{FLOOR_FREED}:{int(fresh.sum())}")
            explicit |= fresh
        grouped = agr.floor_grouped(explicit, p, omega, inst.cap_weight)
        own_vars = explicit & ~grouped
        if too_many_explicit(own_vars, n, tuning):
            reason = (f"{DEGENERATE} ({int(own_vars.sum())} of {n} jobs near a tie or "
                      "blocking: the master would be about the whole LP)")
            break
        mg = agr.master_groups(grouped)
        out = _solve_floor_master(inst, a, f, omega, vert, explicit, solver, own_vars,
                                  None if mg is None else (*mg, col), memo, p)
        if out is None:
            # no feasible point: with every job at its vertex, a type overloaded? (#28)
            fresh = _overloading(inst, a, f, col, vert, np.ones(n, dtype=bool), explicit, dem, p)
            if fresh.any() and not retried:
                retried = True
                solver.step(f"{FLOOR_FREED}:{int(fresh.sum())}")
                explicit |= fresh
                continue
            band *= _FLOOR_BAND_GROWTH
            continue
        xcol, it, bound, mduals = out
        if bound.any():  # aggregated shares that do not fit their time: own variables next
            agr.leave(bound)
            rounds = min(rounds + 1, 2 * max_rounds)
            continue
        xcol = inst.repair(xcol)
        # the master's own duals first (closed-form duals of the constants and of the
        # aggregated jobs at its prices): no dual LP when they certify; constants they price
        # out get their variables, and so do aggregated jobs they price out
        parts, viol = _master_duals(inst, A, col, a, f, omega, xcol, own_vars, mduals)
        done = _certified_parts(solver, stage, xcol, layout, parts)
        if done is not None:
            return done
        split = viol & grouped
        viol &= ~explicit
        if too_many_explicit(explicit | viol, n, tuning):  # prices far off: a wider band
            band *= _FLOOR_BAND_GROWTH  # (#28: Gavel-drawn, 12,288 jobs, 9,427 priced out)
            continue
        if (viol.any() or split.any()) and priced < tuning.floor_priced_rounds:
            priced += 1
            if viol.any():
                solver.step(f"{FLOOR_FREED}:{int(viol.sum())}")
                explicit |= viol
            agr.leave(split | viol)
            rounds = min(rounds + 1, 2 * max_rounds)
            continue
        solver.step(FLOOR_DUAL_LP)
        parts, blocking = _floor_duals(inst, A, col, a, f, omega, xcol, explicit, solver)
        done = _certified_parts(solver, stage, xcol, layout, parts)
        if done is not None:
            return done
        if grouped.any():
            # no duals complementary to the aggregated shares (a job that values more than
            # its floor, prices that split the class): they get their own variables, and so
            # do the constants in the way (one master round, not two: #28)
            fresh = blocking & ~explicit
            if fresh.any():
                solver.step(f"{FLOOR_FREED}:{int(fresh.sum())}")
                explicit |= fresh
            agr.leave(grouped | fresh)
            rounds = min(rounds + 1, 2 * max_rounds)
        elif (blocking & ~explicit).any():
            # exactly the constants in the way get their variables
            solver.step(f"{FLOOR_FREED}:{int((blocking & ~explicit).sum())}")
            explicit |= blocking
        else:
            band *= _FLOOR_BAND_GROWTH
    raise Decline(reason)


def _certified_parts(solver: StageSolver, stage: LinearStage, xcol: np.ndarray,
                     layout: RowLayout, parts: dict[str, np.ndarray] | None
                     ) -> StageResult | None:
    """The floor stage certified at ``xcol`` with the dual blocks ``parts`` (``None``: no
    duals were found, or they do not certify)."""
    if parts is None:
        return None
    return certified(solver, stage, xcol, layout.assemble(parts))


@dataclass
class _VertexDuals:
    """Complementary slackness at the jobs' vertices (`_vertices_from_x`): ``lambda = alpha
    . p + alpha0`` and ``mu = beta . p + beta0`` for the jobs at a vertex (``floor1``: floor
    on one column, ``full``: all the time on one column, ``split``: two columns), zero for
    the others; ``general``: jobs at no vertex (their ``lambda, mu`` are not fixed by ``p``)."""

    general: np.ndarray
    floor1: np.ndarray
    full: np.ndarray
    split: np.ndarray
    alpha: np.ndarray
    alpha0: np.ndarray
    beta: np.ndarray
    beta0: np.ndarray


def _vertex_duals(inst: ColumnInstance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                  f: np.ndarray, omega: np.ndarray, xcol: np.ndarray) -> _VertexDuals:
    """The floor LP's ``(lambda, mu)`` of every job at a vertex as affine functions of the
    prices (floor on ``e``: ``lambda = s p_e / a_e - omega``, ``mu = 0``; all time on ``e``:
    ``lambda = 0``, ``mu = omega a_e - s p_e``; a split ``e1, e2``: ``omega + lambda =
    s (p_e2 - p_e1) / (a_e2 - a_e1)``, ``mu = (omega + lambda) a_e1 - s p_e1``), shared by
    the master's closed-form duals (`_master_duals`) and the dual LP (`_floor_duals`)."""
    n, k = A.shape
    s = np.asarray(inst.cap_weight, dtype=float)
    vert, general = _vertices_from_x(inst, A, col, a, f, xcol)
    tot = np.bincount(inst.mem_job, xcol, n)
    e1, e2 = vert.e1, vert.e2
    # one column at the floor *and* all the time: lambda and mu share one equation
    general = general | ((e1 >= 0) & (e2 == -1) & (tot >= 1.0 - ACTIVITY_ROUNDING))
    typ_of = np.full(inst.E + 1, 0)
    typ_of[:-1] = inst.col_type
    t1 = typ_of[np.where(e1 >= 0, e1, inst.E)]
    t2 = typ_of[np.where(e2 >= 0, e2, inst.E)]
    a1 = np.where(e1 >= 0, a[np.maximum(e1, 0)], 1.0)
    a2 = np.where(e2 >= 0, a[np.maximum(e2, 0)], 1.0)
    # a split between two columns of (about) one rate: its floor row is its time row times
    # that rate, so only ``omega + lambda - mu / a`` is fixed (no closed form: general)
    general = general | ((e2 >= 0) & (np.abs(a2 - a1) <= _SPLIT_TIE * np.abs(a2)))
    floor1 = ~general & (e1 >= 0) & (e2 == -1)
    full = ~general & (e1 >= 0) & (e2 == -2)
    split = ~general & (e2 >= 0)
    onehot = np.eye(k)
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
    return _VertexDuals(general, floor1, full, split, alpha, alpha0, beta, beta0)


def _floor_duals(inst: ColumnInstance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                 f: np.ndarray, omega: np.ndarray, xcol: np.ndarray, free: np.ndarray,
                 solver: StageSolver) -> tuple[dict[str, np.ndarray] | None, np.ndarray]:
    """Duals of the full floor LP complementary to ``xcol``, or the jobs in the way.

    The floor LP ``max sum_m omega_m a_m . x_m`` s.t. ``a_m . x_m >= f_m`` (``lambda_m``),
    ``sum x_m <= 1`` (``mu_m``), capacity (``p``) has reduced costs
    ``(omega + lambda) a_e - mu - s p_e``. For a job at a vertex of its polytope
    (`_vertices_from_x`), complementary slackness fixes ``lambda`` and ``mu`` as affine
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
    s = np.asarray(inst.cap_weight, dtype=float)
    vd = _vertex_duals(inst, A, col, a, f, omega, xcol)
    general, floor1, full, split = vd.general, vd.floor1, vd.full, vd.split
    alpha, alpha0, beta, beta0 = vd.alpha, vd.alpha0, vd.beta, vd.beta0
    X = np.zeros((n, k))
    X[inst.mem_job, inst.col_type] = xcol
    tot = X.sum(axis=1)
    onehot = np.eye(k)
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
    slack_t = inst.W @ xcol < inst.cap * (1.0 - ACTIVITY_ROUNDING)
    lev = (X * A).sum(axis=1)
    floor_slack = lev[gen] > f[gen] + ACTIVITY_ROUNDING * np.maximum(1.0, np.abs(f[gen]))
    time_slack = tot[gen] < 1.0 - ACTIVITY_ROUNDING
    hi = np.r_[np.where(slack_t, 0.0, np.inf), np.where(floor_slack, 0.0, np.inf),
               np.where(time_slack, 0.0, np.inf), np.where(general | free, 0.0, np.inf)]
    c = np.r_[np.zeros(k + 2 * q), np.ones(n)]
    lp = LinearProgram.build(c, M, lo, up, np.zeros(ncol), hi)
    sol = sub_solve(solver, lp, ipm=False)
    if sol is None:
        return None, np.zeros(n, dtype=bool)
    assert sol.x is not None  # checked by sub_solve
    sigma = sol.x[k + 2 * q:]
    blocking = sigma > REDUCED_COST_TOL * (1.0 + omega * A.max(axis=1))
    if blocking.any():
        return None, blocking
    pr = np.maximum(sol.x[:k], 0.0)
    lam = np.maximum(alpha @ pr + alpha0, 0.0)
    mu = np.maximum(beta @ pr + beta0, 0.0)
    lam[gen] = np.maximum(sol.x[k: k + q], 0.0)
    mu[gen] = np.maximum(sol.x[k + q: k + 2 * q], 0.0)
    return {"time": -mu, "capacity": -pr, "kept": lam}, blocking


def _master_duals(inst: ColumnInstance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                  f: np.ndarray, omega: np.ndarray, xcol: np.ndarray, own_vars: np.ndarray,
                  mduals: tuple | None
                  ) -> tuple[dict[str, np.ndarray] | None, np.ndarray]:
    """Duals of the full floor LP from a restricted master's own duals, or the jobs they
    price out.

    The jobs with their own variables in the master take its ``(mu, lambda)``; every other
    job sits at a vertex of its polytope (`_vertices_from_x`), whose ``lambda`` and ``mu``
    follow from the master's prices ``p`` in closed form (as in `_floor_duals`: floor on
    ``e``: ``lambda = s p_e / a_e - omega``; all the time on ``e``: ``mu = omega a_e -
    s p_e``; a split: ``omega + lambda = s (p_e2 - p_e1) / (a_e2 - a_e1)``, ``mu = (omega +
    lambda) a_e1 - s p_e1``); a job the master held at its floor by row class ``R`` has
    ``lambda = s nu_R / c - omega`` and ``mu = 0`` (``nu_R``: the class row's dual). The
    caller certifies the result on the full LP.

    Returns ``(duals, violators)``: ``duals`` by row block as `_floor_duals` (``None``
    without master duals, or when another job without its own variables sits at no vertex:
    the violators among the others are still named) and
    the jobs whose closed-form ``lambda`` or ``mu`` is negative or one of whose columns has a
    positive reduced cost at ``p`` (they need their own variables).
    """
    n, k = A.shape
    viol = np.zeros(n, dtype=bool)
    if mduals is None:
        return None, viol
    p, ex, mu_ex, lam_ex, g_jobs, lam_g = mduals
    vd = _vertex_duals(inst, A, col, a, f, omega, xcol)
    lam = vd.alpha @ p + vd.alpha0
    mu = vd.beta @ p + vd.beta0
    lam[ex] = lam_ex
    mu[ex] = mu_ex
    lam[g_jobs] = lam_g
    mu[g_jobs] = 0.0
    priced = own_vars.copy()
    priced[g_jobs] = True
    # other jobs at no vertex have no closed-form duals: no certificate from these duals,
    # but the constants they price out are still named (#28: instead of an elastic dual LP)
    known = ~(vd.general & ~priced) & np.isfinite(lam) & np.isfinite(mu)
    lam = np.where(known, lam, 0.0)
    mu = np.where(known, mu, 0.0)
    size = 1.0 + omega * A.max(axis=1)
    viol = known & ((lam < -REDUCED_COST_TOL * size) | (mu < -REDUCED_COST_TOL * size))
    lam = np.maximum(lam, 0.0)
    mu = np.maximum(mu, 0.0)
    owner = inst.mem_job
    gain = (omega + lam)[owner] * a
    red = gain - mu[owner] - inst.col_workers * p[inst.col_type]
    viol[owner[(red > REDUCED_COST_TOL * (1.0 + gain)) & known[owner]]] = True
    viol[ex] = False  # their columns are all in the master: the certificate judges them
    if not known.all():
        return None, viol
    return {"time": -mu, "capacity": -p, "kept": lam}, viol


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
    `lp_certificate` on the full floor LP at the level's allocation decides (its gap is
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
    return certified(solver, stage, prior.x[: inst.E], duals)


def _overloading(inst: ColumnInstance, a: np.ndarray, f: np.ndarray, col: np.ndarray,
                 vert: Vertices, at: np.ndarray, explicit: np.ndarray, dem: FloorDemand,
                 p: np.ndarray) -> np.ndarray:
    """The constants (not ``explicit``) to free where the jobs ``at`` their vertices overload a
    type at prices ``p`` (`free_overloaded`; none where no type is overloaded)."""
    x = floor_vertex_x(inst.E, a, vert.e1[at], vert.e2[at], f[at])
    over = inst.W @ x - inst.cap
    over[over <= ACTIVITY_ROUNDING * (1 + inst.cap)] = 0.0
    if not over.any():
        return np.zeros(inst.n, dtype=bool)
    use = np.where(col >= 0, inst.col_workers[col] * x[col], 0.0)
    return free_overloaded(use, over, dem.tie_bands(p), ~explicit)


def _solve_floor_master(inst: ColumnInstance, a: np.ndarray, f: np.ndarray, omega: np.ndarray,
                        vert: Vertices, explicit: np.ndarray, solver: StageSolver,
                        own_vars: np.ndarray | None = None,
                        grouped: tuple[Groups, np.ndarray, np.ndarray, np.ndarray] | None = None,
                        memo: dict[str, Any] | None = None,
                        prices: np.ndarray | None = None) -> tuple | None:
    """Restricted master of a floor stage: ``(xcol, iterations, bound, duals)`` (``None``: no
    fit; ``duals``: ``(prices, jobs with their own variables, their mu, their lambda, the
    aggregated jobs, their lambda)``).

    The jobs not ``explicit`` are constants at their vertices; of the others, ``own_vars``
    (default: all) keep their variables and ``grouped`` (``(groups, row maxima, dense rows,
    column of each (job, type))``) are held at their floors by row class
    (`fairalloc.throughput.structured.rowclass`); ``bound`` marks those whose share does not
    fit their time. ``memo`` (the caller's, kept across its rounds) holds the previous
    master's basis, jobs, columns and row-class block: a master that only adds jobs with their
    own variables to it starts the simplex from that basis (`warm_master_basis`)."""
    k, E = inst.k, inst.E
    n = inst.n
    if own_vars is None:
        own_vars = explicit
    typ = inst.col_type
    ag = np.flatnonzero(~explicit)
    e1, e2 = vert.e1[ag], vert.e2[ag]
    xcol = floor_vertex_x(E, a, e1, e2, f[ag])
    load = inst.W @ xcol
    ex, cols, own = explicit_columns(inst, own_vars)
    nx, r = cols.size, ex.size
    jx = np.arange(nx)
    # aggregated row classes: group rows (held at the floors: lo = up) after the level rows,
    # their variables after the explicit columns, with no value of their own
    gr: Groups | None = None
    g_c = g_A = g_col = g_rows = g_cols = g_vals = g_lo = np.zeros(0)
    if grouped is not None:
        gr, g_c, g_A, g_col = grouped
        g_rows, g_cols, g_vals, g_lo = master_block(gr, g_c, inst.cap_weight, np.zeros(n), f,
                                                    k + 2 * r, None, nx)
    G = 0 if gr is None else gr.D.shape[0]
    nu = 0 if gr is None else gr.ug.size
    M = csr_from_triplets(
        np.concatenate((typ[cols], k + own, k + r + own, g_rows)),
        np.concatenate((jx, jx, jx, g_cols)),
        np.concatenate((inst.col_workers[cols], np.ones(nx), a[cols], g_vals)),
        (k + 2 * r + G, nx + nu))
    lo = np.r_[np.full(k + r, -np.inf), f[ex], g_lo]
    up = np.r_[inst.cap - load, np.ones(r), np.full(r, np.inf), g_lo]
    if (up[:k] < -ACTIVITY_ROUNDING * (1 + inst.cap)).any():
        return None
    up[:k] = np.maximum(up[:k], 0.0)
    cost = np.r_[-omega[inst.mem_job[cols]] * a[cols], np.zeros(nu)]
    lp = LinearProgram.build(cost, M, lo, up, 0.0, np.inf)
    shape = (ex, cols, G, nu, g_rows, g_cols, g_vals)
    # a master that only gained jobs starts from its predecessor's basis, another one from
    # its jobs' best vertices at Newton's prices (a crash basis; Gavel-drawn FTF, CPU: 2,048
    # jobs 608 -> 104 pivots, 8.0 -> 4.0 ms; 8,192 jobs IPM 22 ms -> 130 pivots, 7.1 ms)
    basis = (warm_master_basis(memo, shape, k)
             if memo is not None and solver.warm_backend() else None)
    statuses = (crash_statuses(vert, ex, cols, k, gr, prices)
                if basis is None and prices is not None and solver.warm_backend() else None)
    ipm = basis is None and statuses is None and r > _FLOOR_IPM_MIN_OWN
    warm = memo is not None and not ipm and solver.warm_backend()
    sol = sub_solve(solver, lp, ipm=ipm, basis=basis, keep_basis=warm, statuses=statuses)
    if memo is not None:
        memo.clear()
        if sol is not None and sol.extra.get("basis") is not None:
            memo.update(basis=sol.extra["basis"], shape=shape)
    if sol is None:
        return None
    assert sol.x is not None  # checked by sub_solve
    xcol[cols] = sol.x[:nx]
    bound = np.zeros(n, dtype=bool)
    y = sol.row_duals
    assert y is not None  # checked by sub_solve
    g_jobs, g_val = np.zeros(0, dtype=int), np.zeros(0)
    if gr is not None:
        # the group rows' duals nu_R give each aggregated job's value of its floor
        # ``s_m nu_R / c_m`` (rowclass.py); its floor dual is that less omega_m (mu_m = 0)
        gc, gv, g_val, bound_g = disaggregate(gr, sol.x[nx:], y[k + 2 * r:], 0.0, g_A, g_col,
                                              g_c, inst.cap_weight, np.zeros(n), f)
        xcol[gc] = gv
        bound[gr.jobs] = bound_g
        g_jobs = gr.jobs
    # capacity prices, and (mu, lambda) of the jobs with their own variables and of the
    # aggregated ones
    mduals = (np.maximum(-y[:k], 0.0), ex, np.maximum(-y[k: k + r], 0.0),
              np.maximum(y[k + r: k + 2 * r], 0.0), g_jobs, g_val - omega[g_jobs])
    return xcol, sol.iterations, bound, mduals


def _vertices_from_x(inst: ColumnInstance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                     L: np.ndarray, xcol: np.ndarray) -> tuple[Vertices, np.ndarray]:
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
    full = (cnt == 1) & (np.abs(tot - 1.0) <= SAT_ROUNDING) & ~at_floor
    floor1 = (cnt == 1) & at_floor
    split = (cnt == 2) & at_floor & (np.abs(tot - 1.0) <= ACTIVITY_ROUNDING)
    e2 = np.where(split, col[rows, j2], np.where(full, -2, -1))
    # order a split's columns: slower first
    swap = split & (A[rows, j1] > A[rows, j2])
    e1, e2 = np.where(swap, e2, e1), np.where(swap, e1, e2)
    nothing = (cnt == 0) & (L <= 0)
    explicit = ~(full | floor1 | split | nothing)
    z = np.zeros(n)
    return Vertices(e1, e2, z, z, explicit), explicit
