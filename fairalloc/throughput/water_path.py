"""The saturation trajectory of hierarchical water-filling (Gavel §4.3), in closed form.

Between two capacity events water-filling only ever freezes jobs that *saturate*: a job's level
``u_m`` never exceeds ``umax_m = s_m max_e T_me / e_m`` (its best column all the time), so a job
whose level reaches it stops there and its entity's weight is redistributed. Without capacity
rows this trajectory is known in closed form as a function of the level parameter ``theta``
(`SaturationPath`): inside a fairness entity ``s`` every live job rises at ``omega_m w_s /
Omega`` (``Omega``: the live job weight), so jobs saturate in the order of ``(umax_m - f_m) /
omega_m``; a FIFO entity raises its first live job at ``w_s`` until it saturates, then the next;
in the single-level case every job rises at its own weight. `WaterFilling.solve` uses it to
jump over any number of saturation events with a bisection of feasibility LPs (the
trajectory point ``L(theta)`` is feasible for every ``theta`` up to the first capacity event
and for none after it), instead of one level LP per saturating job. Every array operation here
is vectorised over jobs (sorting by entity, grouped cumulative sums).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

from ..backends import LinearProgram, LPBasis, get_backend
from ..certificates import lp_certificate
from ..errors import InfeasibleError
from ..plan import Strategy, run_plan
from ..results import Certificate
from . import structured
from .instance import ColumnInstance
from .programs import LevelStage
from .stages import StageSolver, scaled_solve
from .water_bounds import group_cumsum, saturation_workers

#: PERFORMANCE knob: cap of each job's rise in a bottleneck LP, relative to max(1, floor)
#: (spreads the rises over as many jobs as possible)
_RISE_CAP = 1e-3
#: PERFORMANCE knob: hand-overs before water-filling may drop the structured level solver
_DROP_AFTER_HAND_OVERS = 2
#: ACCURACY: relative slacks of the kept floors tried in turn when a bottleneck LP is declared
#: infeasible (the floors are reached only to rounding); far below ``bottleneck_tol``
_FLOOR_SLACKS = (0.0, 1e-12, 1e-10, 1e-8)
WATER_FILLING_LEVEL = "water-filling-level"  # path step: one water-filling level
#: ACCURACY: a saturation-trajectory rise below this relative to max(1, level) is rounding
_PATH_ROUNDING = 1e-12
BOTTLENECK_LP = "bottleneck-lp"  # path step: one bottleneck LP
PARETO_CHECK = "pareto-check"  # path step: the end check's LP over the unproven jobs
FLOORS_RELAXED = "bottleneck-floors-relaxed"  # path step: the next slack of _FLOOR_SLACKS
FLOORS_ANCHORED = "level-floors-anchored"  # path step: a level LP solved again, anchored floors
#: path step: a bottleneck LP with its floors anchored to the last allocation's levels
FLOORS_ANCHORED_RISE = "bottleneck-floors-anchored"
#: the slack of `_rise_solve` that stands for "floors anchored to the last allocation"
ANCHORED = -1.0
#: ACCURACY: a bottleneck LP's relative gap may reach this fraction of (sum of the candidates'
#: thresholds) / (sum of their caps): the decisions it makes need the optimum only to that
_DECISION_GAP_SHARE = 0.5
#: ACCURACY: each candidate's rise cap is at least this multiple of its threshold: a bound
#: ``D <= thr_m`` on the capped rises proves job ``m`` only when its cap exceeds ``thr_m``
#: (with gap_tol 1e-4 the thresholds, twice a level's accuracy, exceeded the caps of
#: ``_RISE_CAP``: every job sat at its cap, the bound "proved" it, and a job that could rise by
#: 0.44 of its level was returned as optimal; issue #27, seed 707)
_CAP_OVER_THR = 2.0


def anchored_floors(floors: np.ndarray, U: sp.csr_matrix, xcol: np.ndarray) -> np.ndarray:
    """``min(floors, u(xcol))``: the floors lowered to the levels an exactly feasible (repaired)
    allocation reaches, so that a level LP at them is feasible at ``xcol`` with ``theta = 0``.

    A solver's allocation meets its floors only to the solver's tolerance (about ``1e-9``
    relative, far below ``bottleneck_tol``); a presolve may declare the thin face of floors met
    only that way infeasible.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> anchored_floors(np.array([1.0, 2.0]), sp.csr_matrix(np.eye(2)),
    ...                 np.array([1.0 - 1e-10, 3.0])).tolist()
    [0.9999999999, 2.0]
    """
    return np.minimum(floors, U @ xcol)


class StructuredLevels:
    """Whether water-filling still tries the structured level solver on its levels.

    On 10 types Newton finds no balance on most levels (each try costs time) and the masters
    of the levels it solves meet the frozen floors only to their tolerance (5e-11 on
    ``_types_instance(320)``), which compounded over about ``n`` levels into floors above the
    leximin levels; there the warm simplex's exact vertices do every level. The solver is
    therefore dropped once it handed over at least `_DROP_AFTER_HAND_OVERS` levels and more
    levels than it solved.

    Examples
    --------
    >>> fast = StructuredLevels(True)
    >>> fast.record(handed_over=True); fast.record(handed_over=True); fast.on
    False
    """

    def __init__(self, on: bool) -> None:
        self.on = on
        self.handed = self.solved = 0

    def record(self, handed_over: bool) -> None:
        """Count one level the structured solver handed to the whole LP, or solved."""
        if handed_over:
            self.handed += 1
        else:
            self.solved += 1
        self.on = self.handed < _DROP_AFTER_HAND_OVERS or self.handed <= self.solved


def rise_bound(lam: np.ndarray, dual_bound: float, theta: float,
               floors: np.ndarray) -> np.ndarray:
    """Each job's largest rise above its floor, with every level at its floor exactly, that a
    level LP's duals allow (``inf`` where its dual is 0).

    Weak duality with the level LP's level-row duals ``lam`` and certified dual bound ``D``
    gives ``sum_m lam_m (u_m - floor_m) <= D - theta`` for every allocation meeting every
    floor (``theta``: the level the floors were raised by), so job ``m`` rises by at most
    ``(D - theta) / lam_m``; the room adds the rounding of ``D``'s sum (``n eps`` times its
    largest terms ``lam_m max(1, floor_m)``). The bound is about the exact floors, not the
    found point, so the amplified violations (`amplified_violation`) do not enter it.

    Examples
    --------
    >>> import numpy as np
    >>> rise_bound(np.array([1.0, 0.0]), 0.25, 0.0, np.array([0.5, 0.5])).round(6).tolist()
    [0.25, inf]
    """
    room = max(dual_bound - theta, 0.0) + (np.finfo(float).eps * lam.size
                                           * float(lam @ np.maximum(1.0, np.abs(floors))))
    with np.errstate(divide="ignore"):
        return np.where(lam > 0, room / np.where(lam > 0, lam, 1.0), np.inf)


@dataclass(frozen=True)
class Proof:
    """A certified bound on rises that stays valid where its floors are missed later.

    A level LP's duals ``lam`` (of its rows ``u_m >= floors_m``, level units, ``>= 0``) and
    certified dual bound give, by weak duality, ``sum_m lam_m (u_m(y) - floors_m) <= room``
    for *every* allocation ``y`` (``room``: the dual bound less the level the floors were
    raised by). A bottleneck LP's (``coef``: its objective's coefficients, ``caps``: the
    caps of the rises) gives ``sum_m coef_m min(u_m(y) - floors_m, caps_m) <= room`` for
    every ``y`` meeting the floors. Where ``y`` meets only ``levels`` (below the floors by
    ``s = (floors - levels)_+``), the same duals bound the relaxed program by ``room + lam @
    s`` (the dual function is linear in the floors). So each job's rise above ``levels``,
    with every job kept at ``levels``, is at most `bound` -- also after water-filling's
    floors moved down to what a later allocation reaches, which a proof at the floors of its
    time alone does not cover (10 types with throughputs spanning ``1e8``: level duals of
    ``1e7``; a shortfall of ``4e-8`` let a frozen job rise by ``1e-2``).

    Examples
    --------
    Two jobs, ``u_0 - 1 + 2 (u_1 - 1) <= 0.5``: at levels ``[1, 0.9]`` (job 1 missed its
    floor by 0.1) job 0 rises by at most ``0.5 + 2 * 0.1 = 0.7``.

    >>> import numpy as np
    >>> p = Proof(np.ones(2), np.array([1.0, 2.0]), 0.5)
    >>> p.bound(np.array([1.0, 0.9])).round(6).tolist()
    [0.7, 0.45]
    """

    floors: np.ndarray
    lam: np.ndarray
    room: float
    coef: np.ndarray | None = None
    caps: np.ndarray | None = None
    #: a level LP's capacity prices (`water_robust.price_proof` tries them)
    prices: np.ndarray | None = None

    def bound(self, levels: np.ndarray) -> np.ndarray:
        """Each job's largest rise above ``levels`` with every job kept at ``levels``
        (``inf`` where this proof says nothing about it)."""
        s = np.clip(self.floors - levels, 0.0, None)
        lam = self.lam
        # the rounding of the dual bound's sum (n eps times its largest terms)
        eps = np.finfo(float).eps * lam.size * float(
            lam @ np.maximum(1.0, np.abs(self.floors)) + abs(self.room))
        extra = max(self.room, 0.0) + float(lam @ s) + eps
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.coef is None:
                b = np.where(lam > 0, extra / np.where(lam > 0, lam, 1.0), np.inf)
            else:
                assert self.caps is not None
                b = np.where(self.coef > 0, extra / np.where(self.coef > 0, self.coef, 1.0),
                             np.inf)
                b = np.where(b < self.caps, b, np.inf)  # a rise at its cap is not bounded
        return b + s


def proven_by(proofs: list[Proof], levels: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """The jobs that some proof caps at ``thr`` above ``levels`` (every job kept there)."""
    out = np.zeros(levels.size, dtype=bool)
    for p in proofs:
        out |= p.bound(levels) <= thr
    return out


def amplified_violation(lam: np.ndarray, U: sp.csr_matrix, x: np.ndarray,
                        floors: np.ndarray) -> float:
    """``sum_m lambda_m (floor_m - u_m(x))_+``: the floor violations of ``x`` weighted by the
    level duals ``lambda``.

    The weak-duality room ``D - theta`` of a level bounds the rises of allocations that meet
    every floor exactly; an allocation meeting them only to a tolerance may exceed it by this
    much (the violations amplified by the duals).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> v = amplified_violation(np.array([1e8, 1.0]), sp.csr_matrix(np.eye(2)),
    ...                         np.array([1.0 - 1e-9, 3.0]), np.array([1.0, 2.0]))
    >>> round(v, 6)
    0.1
    """
    gap = np.clip(floors - U @ x, 0.0, None)
    return float(lam @ gap)


class SaturationPath:
    """Levels ``L(theta)`` of the saturation-only water-filling trajectory from ``floors``.

    Parameters
    ----------
    floors : ndarray (n,)
        Current floors (levels at ``theta = 0``).
    live : ndarray of bool (n,)
        Jobs not frozen yet.
    umax : ndarray (n,)
        Each job's largest possible level (``inf``: never saturates).
    job_weight : ndarray (n,)
        Job weights ``omega``.
    entity : ndarray of int (n,), entity_weight, entity_fifo : ndarray (entities,)
        The hierarchy; ignored when ``single_level``.
    rank : ndarray of int (n,)
        FIFO arrival rank.
    single_level : bool
        Every job rises at its own weight (no entities).
    mult : ndarray (n,), optional
        Members of each job's symmetry class (a reduced builder's: an entity's live weight
        counts every member; `fairalloc.throughput.water_symmetry`). Default 1.

    Examples
    --------
    Two jobs of one fairness entity (weight 1) with maxima 1 and 3 from floors 0: the first
    saturates at ``theta = 2`` (both rise at 1/2), the second then rises at 1 and saturates at
    ``theta = 4``.

    >>> import numpy as np
    >>> p = SaturationPath(np.zeros(2), np.ones(2, bool), np.array([1.0, 3.0]), np.ones(2),
    ...                    np.zeros(2, int), np.ones(1), np.zeros(1, bool), np.arange(2), False)
    >>> p.times.tolist(), p.breakpoints.tolist(), p.at(3.0).tolist()
    ([2.0, 4.0], [2.0, 4.0], [1.0, 2.0])
    """

    def __init__(self, floors: np.ndarray, live: np.ndarray, umax: np.ndarray,
                 job_weight: np.ndarray, entity: np.ndarray, entity_weight: np.ndarray,
                 entity_fifo: np.ndarray, rank: np.ndarray, single_level: bool,
                 mult: np.ndarray | None = None) -> None:
        n = floors.size
        self.floors, self.umax, self.live = floors, umax, live
        self.single = single_level
        gap = np.maximum(umax - floors, 0.0)
        times = np.full(n, np.inf)
        if single_level:
            with np.errstate(invalid="ignore"):
                times[live] = gap[live] / job_weight[live]
            self.rate = np.where(live, job_weight, 0.0)
            self.times = times
            self.breakpoints = np.unique(times[np.isfinite(times)])
            return
        ws = entity_weight[entity]
        self._ews = ws
        fifo = entity_fifo[entity]
        # fairness entities: sort by (entity, phi), phi = (umax - f) / omega
        fj = np.flatnonzero(live & ~fifo)
        phi = gap[fj] / job_weight[fj]
        o = np.lexsort((phi, entity[fj]))
        fj, phi = fj[o], phi[o]
        ent = entity[fj]
        first = np.r_[True, ent[1:] != ent[:-1]] if fj.size else np.zeros(0, bool)
        gid = np.cumsum(first) - 1
        om = job_weight[fj]
        omc = om if mult is None else om * mult[fj]  # the weight of every member
        total = np.bincount(gid, weights=omc) if fj.size else np.zeros(0)
        before = total[gid] - (group_cumsum(omc, first, gid) - omc)  # live weight while rising
        fin = np.isfinite(phi)
        prev = np.r_[0.0, phi[:-1]] if fj.size else phi
        prev = np.where(first, 0.0, prev)
        inc = np.where(fin, (phi - np.where(np.isfinite(prev), prev, 0.0)) * before
                       / ws[fj], 0.0)
        t_f = np.where(fin, group_cumsum(inc, first, gid), np.inf)
        times[fj] = t_f
        self._fair = (fj, phi, t_f, first, gid, total, om, omc)
        # FIFO entities: sort by (entity, rank); each job rises at w_s after the previous ones
        qj = np.flatnonzero(live & fifo)
        qj = qj[np.lexsort((rank[qj], entity[qj]))]
        qe = entity[qj]
        qfirst = np.r_[True, qe[1:] != qe[:-1]] if qj.size else np.zeros(0, bool)
        qgid = np.cumsum(qfirst) - 1
        dur = gap[qj] / ws[qj]
        dfin = np.isfinite(dur)
        blocked = group_cumsum((~dfin).astype(float), qfirst, qgid) - (~dfin)  # infs before
        end = group_cumsum(np.where(dfin, dur, 0.0), qfirst, qgid)
        start = np.where(blocked > 0, np.inf, end - np.where(dfin, dur, 0.0))
        end = np.where((blocked > 0) | ~dfin, np.inf, end)
        times[qj] = end
        self._fifo = (qj, start, dur)
        self.times = times
        self.breakpoints = np.unique(times[np.isfinite(times)])

    def at(self, theta: float) -> np.ndarray:
        """The trajectory's levels at ``theta`` (frozen jobs keep their floors)."""
        f, umax = self.floors, self.umax
        if self.single:
            out = np.where(self.live, np.minimum(f + self.rate * theta, umax), f)
            out[self.times <= theta] = umax[self.times <= theta]  # exactly, not to rounding
        else:
            out = f.copy()
            fj, phi, t_f, first, gid, total, om, omc = self._fair
            if fj.size:
                done = t_f <= theta
                q = np.bincount(gid, weights=done, minlength=total.size).astype(int)
                starts = np.flatnonzero(first)
                last = starts + q - 1
                has = q > 0
                li = np.maximum(last, 0)
                phi0 = np.where(has, phi[li], 0.0)
                t0 = np.where(has, t_f[li], 0.0)
                cum = np.bincount(gid, weights=np.where(done, omc, 0.0), minlength=total.size)
                left = total - cum
                ws_g = self._ews[fj[starts]]
                with np.errstate(divide="ignore", invalid="ignore"):
                    phig = np.where(left > 0, phi0 + (theta - t0) * ws_g
                                    / np.where(left > 0, left, 1.0), phi0)
                lev = f[fj] + om * phig[gid]
                out[fj] = np.where(done, umax[fj], np.minimum(lev, umax[fj]))
            qj, start, dur = self._fifo
            if qj.size:
                ws = self._ews[qj]
                run = np.clip(theta - np.where(np.isfinite(start), start, np.inf), 0.0, dur)
                run = np.where(np.isfinite(start), run, 0.0)
                out[qj] = np.where(self.times[qj] <= theta, umax[qj],
                                   np.minimum(f[qj] + ws * run, umax[qj]))
        return out


def can_rise(inst: Any, unorm: np.ndarray, xcol: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """Jobs that can raise their level by more than ``thr`` alone (a constructive proof).

    Job ``m`` with spare time ``1 - sum_j x_mj`` and a single-job column on a type with spare
    workers can run that column longer without touching any other job (``inst``: the
    policy's column instance, ``unorm``: each job's level per unit of throughput).
    """
    single = inst.col_kind != 2
    owner = np.full(inst.E, -1)
    owner[inst.mem_col[single[inst.mem_col]]] = inst.mem_job[single[inst.mem_col]]
    spare_time = 1.0 - inst.M @ xcol
    spare = inst.cap - inst.W @ xcol
    room_e = spare[inst.col_type] / inst.col_workers
    if inst.placement:
        cspare = inst.cons_cap - inst.Wc @ xcol
        room_e = np.where(inst.col_kind == 0,
                          np.minimum(room_e, cspare[inst.col_type] / inst.col_workers),
                          room_e)
    cols = np.flatnonzero(single)
    own = owner[cols]
    step = np.minimum(room_e[cols], spare_time[own])
    gain = step * unorm[own] * np.asarray(inst.Tm[own, cols]).ravel()
    best = np.zeros(inst.n)
    np.maximum.at(best, own, gain)
    return best > 2.0 * thr


@dataclass
class _Bottleneck:
    """The context of one bottleneck LP's plan (`bottleneck_lp`)."""

    inst: ColumnInstance
    solver: StageSolver
    A: sp.csr_matrix
    lo0: np.ndarray
    up: np.ndarray
    c: np.ndarray
    caps: np.ndarray
    floors: np.ndarray
    U: sp.csr_matrix
    gap_tol: float
    basis: LPBasis | None
    warm: bool
    #: an exactly feasible allocation (the last one): floors anchored to what it reaches
    anchor: np.ndarray | None
    #: the objective's coefficient of each candidate's capped rise (its data scale: the sum of
    #: the caps times these)
    weights: np.ndarray

    def program(self, slack: float) -> LinearProgram:
        floors = self.floors - slack * np.maximum(1.0, np.abs(self.floors))
        if slack == ANCHORED:
            assert self.anchor is not None
            floors = anchored_floors(self.floors, self.U, self.anchor)
        lo = np.r_[self.lo0, floors]
        return LinearProgram.build(self.c, self.A, lo, self.up, 0.0,
                                   np.r_[np.ones(self.inst.E), self.caps])


@dataclass
class _Rise:
    x: np.ndarray
    cert: Certificate
    basis: LPBasis | None
    proof: Proof


def _rise_solve(slack: float, backend: str | None = None, *, warm: bool = False,
                row_band: int | None = None) -> Any:
    """The solve of a bottleneck-LP strategy: the LP with floors lowered by ``slack``
    (relative), by the solver's backend (or the named one), from the last basis (``warm``)."""

    def solve(ctx: _Bottleneck) -> _Rise:
        s, inst = ctx.solver, ctx.inst
        E, n = inst.E, inst.n
        be = s.backend if backend is None else get_backend(backend, need="lp",
                                                           solver="simplex" if backend ==
                                                           "highs" else None)
        lp = ctx.program(slack)
        extra = {} if row_band is None else {"row_band": row_band}
        sol = scaled_solve(lp, be, "bottleneck", basis=ctx.basis if warm else None,
                           keep_basis=ctx.warm and backend is None, **extra)
        s.used(sol)
        assert sol.x is not None and sol.row_duals is not None
        x = np.r_[inst.repair(sol.x[:E]), np.zeros(n)]  # (its point proves no bound)
        rise = np.clip(ctx.U @ x[:E] - ctx.floors, 0.0, None)
        x[E:] = np.minimum(rise, ctx.caps)
        # the objective (sum of capped rises) is legitimately 0 when every candidate is
        # bottlenecked: its gap is judged against the caps' scale
        cert = lp_certificate(lp, x, sol.row_duals, maximize=True, gap_tol=ctx.gap_tol,
                              feas_tol=s.feas_tol, scale=float(ctx.caps @ ctx.weights))
        basis = sol.extra.get("basis")
        # the floor rows' duals (lower bounds: the certificate's projection) keep the bound
        # valid where the floors it was proved at are missed later (`Proof`)
        mu = np.maximum(sol.row_duals[-n:], 0.0)
        proof = Proof(lp.row_lower[-n:].copy(), mu, float(cert.dual_bound),
                      -ctx.c[E:], ctx.caps)
        return _Rise(x, cert, basis if isinstance(basis, LPBasis) else None, proof)

    return solve


def _rise_cert(ctx: _Bottleneck, r: _Rise) -> Certificate:
    return r.cert


def _warm_on(ctx: _Bottleneck) -> bool:
    return (ctx.warm and ctx.basis is not None
            and ctx.basis.shape == (ctx.A.shape[0], ctx.inst.E + ctx.inst.n))


def _chosen(ctx: _Bottleneck) -> bool:
    return bool(ctx.solver.backend_spec == "highs")


def _anchored(ctx: _Bottleneck) -> bool:
    return ctx.anchor is not None


def _chosen_anchored(ctx: _Bottleneck) -> bool:
    return _chosen(ctx) and _anchored(ctx)


#: the bottleneck LP's plan: from the last basis; cold; with the floors lowered by each slack
#: of `_FLOOR_SLACKS` in turn (the floors are reached only to rounding, and a presolve may call
#: the thin face infeasible: 10 types, 256 jobs); with the floors anchored to what the last
#: allocation reaches (feasible by construction: a bottleneck LP's point meets its floors
#: only to the solver's tolerance, 5e-8 relative on rows spanning 1e5); then, anchored,
#: HiGHS' simplex on a unit-scaled copy and Clarabel (where fairalloc chose HiGHS)
_BOTTLENECK_PLAN: tuple[Strategy[_Bottleneck, _Rise], ...] = (
    Strategy(BOTTLENECK_LP + "+warm", _rise_solve(0.0, warm=True), _rise_cert, _warm_on),
    Strategy(BOTTLENECK_LP, _rise_solve(0.0), _rise_cert),
    *(s for slack in _FLOOR_SLACKS[1:] for s in (
        Strategy(FLOORS_RELAXED + "+warm", _rise_solve(slack, warm=True), _rise_cert, _warm_on),
        Strategy(FLOORS_RELAXED, _rise_solve(slack), _rise_cert))),
    Strategy(FLOORS_ANCHORED_RISE, _rise_solve(ANCHORED), _rise_cert, _anchored, exact=True),
    Strategy(BOTTLENECK_LP + "+simplex", _rise_solve(ANCHORED, "highs", row_band=0),
             _rise_cert, _chosen_anchored, exact=True),
    Strategy(BOTTLENECK_LP + "+clarabel", _rise_solve(ANCHORED, "clarabel", row_band=0),
             _rise_cert, _chosen_anchored, exact=True),
)


def bottleneck_lp(inst: ColumnInstance, floors: np.ndarray, D: np.ndarray, solver: StageSolver,
                  U: sp.csr_matrix, thr: np.ndarray, warm: list[LPBasis | None] | None = None,
                  *, anchor: np.ndarray | None = None, weights: np.ndarray | None = None,
                  proofs: list[Proof] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, Certificate]:
    """``max sum_{m in D} sigma_m`` s.t. ``u_m(x) - sigma_m >= floor_m`` (m in D),
    ``u(x) >= floor`` (others), ``0 <= sigma_m <= max(_RISE_CAP max(1, floor_m), 2 thr_m)``.

    The caps spread the rises over as many jobs as possible; any ``sigma_m > thr_m`` proves
    that job ``m`` is not bottlenecked (the returned allocation, exactly feasible, reaches it).
    When none does, the certified optimum bounds every candidate's rise; that claim needs the
    optimum only to the candidates' thresholds, so the certificate's relative gap tolerance is
    ``max(gap_tol, _DECISION_GAP_SHARE * sum(thr) / sum(caps))`` (on ill-conditioned 10-type
    levels HiGHS' optimum was certified only to ``1e-5`` of the caps, ``1e-8`` of a level,
    and the solve raised although every decision was proven).

    Solved by its plan (`_BOTTLENECK_PLAN`, through `fairalloc.plan.run_plan`; path steps
    ``bottleneck-lp[+warm|+simplex|+clarabel]``, ``bottleneck-floors-relaxed``,
    ``bottleneck-floors-anchored``: ``anchor``, an exactly feasible allocation, lowers the
    floors to what it reaches, which makes the LP feasible by construction). Every job has
    a rise column (bounded by 0 outside ``D``), so every bottleneck LP of a solve has one
    shape: with ``warm`` (a one-element holder) and fairalloc's choice of HiGHS, HiGHS'
    simplex starts from the last bottleneck LP's basis (consecutive levels change a few
    floors: 10 types, 512 jobs, 0.5-1.2 s cold against a warm level LP's 0.06 s).

    ``weights`` (default 1): the objective is ``sum_{m in D} weights_m sigma_m`` (the end
    check weighs each rise by ``1 / max(1, floor)``); ``proofs``: the LP's certified bound is
    appended as a `Proof` (valid also where its floors are missed later).
    """
    E, n = inst.E, inst.n
    A0, lo0, up0, _ = inst.base_rows()
    S = sp.csr_matrix((-np.ones(n), (np.arange(n), np.arange(n))), shape=(n, n))
    A = sp.vstack([sp.hstack([A0, sp.csr_matrix((A0.shape[0], n))]),
                   sp.hstack([U, S])], format="csr")
    # a rise capped at or below its threshold proves nothing either way: a certified bound
    # below the threshold proves the job only where the cap exceeds the threshold
    caps = np.where(D, np.maximum(_RISE_CAP * np.maximum(1.0, floors), _CAP_OVER_THR * thr),
                    0.0)
    wts = np.ones(n) if weights is None else weights
    decide = _DECISION_GAP_SHARE * float(thr[D] @ wts[D]) / float(caps[D] @ wts[D])
    use_warm = warm is not None and solver.warm_backend()
    ctx = _Bottleneck(inst, solver, A, lo0, np.r_[up0, np.full(n, np.inf)],
                      np.r_[np.zeros(E), -np.where(D, wts, 0.0)], caps, floors, U,
                      max(solver.gap_tol, decide), warm[0] if use_warm and warm else None,
                      use_warm, anchor, wts)
    found = run_plan(_BOTTLENECK_PLAN, ctx, solver.log, what="bottleneck",
                     backend=solver.backend.name)
    x = found.result.x
    if use_warm:
        assert warm is not None
        warm[0] = found.result.basis
    if proofs is not None:
        proofs.append(found.result.proof)
    return x[E:].copy(), x[:E], found.certificate


def level_lp(solver: StageSolver, stage: LevelStage, use_fast: StructuredLevels,
             anchor: np.ndarray) -> Any:
    """One level LP (path step ``water-filling-level``, then the solver's own step), by
    the structured level solver while ``use_fast`` says it pays. ``anchor``: the last
    allocation (it meets every floor exactly): a solver's point that meets the frozen
    floors only to its tolerance is moved towards it (`StageSolver.toward_anchor`)."""
    solver.fixed = []
    solver.anchor = anchor
    solver.step(WATER_FILLING_LEVEL)
    # whole-LP points moved onto their face (the end check proves the levels the allocation
    # reaches: 320 jobs x 10 types were not provable from the solver's vertices)
    solver.meet_extra_rows = on_face(solver, stage)
    try:
        if not use_fast.on or not solver.structured_worth():
            return solver.run(stage, stage.name)
        mark = solver.log.mark()
        # no degenerate-prices hand-over: the whole LP's interior point meets the floors
        # only to its tolerance, rule (a) then distrusts the duals and the bottleneck LP on
        # the whole degenerate program is the slow step (ties, 8,192 jobs: > 60 s vs 0.7 s)
        res = solver.run(stage, stage.name,
                         (structured.level_strategy(degenerate_handover=False),))
        use_fast.record(handed_over=bool(solver.log.since(mark)[1]))
        return res
    finally:
        solver.meet_extra_rows = None


def on_face(solver: StageSolver, stage: LevelStage,
            then: Any = None) -> Any:
    """A `StageSolver.meet_extra_rows` hook for the level LP ``stage``: each whole-LP point
    (columns and the level ``theta``) moved onto its face to rounding (`refine_point`), made
    exactly feasible (``inst.repair``), then passed to ``then`` (if any)."""
    lp = solver.program(stage)
    E = solver.inst.E

    def hook(xcol: np.ndarray) -> np.ndarray:
        v = refine_point(lp, solver.point(stage, xcol))
        x = solver.inst.repair(v[:E])
        return x if then is None else then(x)

    return hook

def saturation_jump(wf: Any, solver: StageSolver, U: sp.csr_matrix, floors: np.ndarray,
                    frozen: np.ndarray, reached: np.ndarray, use_fast: StructuredLevels,
                    btol: float, certs: list[Certificate], anchor: np.ndarray
                    ) -> tuple[np.ndarray | None, np.ndarray, int]:
    """Jump from ``floors`` over every saturation event before the next capacity event
    (``wf``: the `fairalloc.WaterFilling` builder; ``anchor``: an allocation meeting
    ``floors`` exactly).

    `SaturationPath` gives the trajectory ``L(theta)`` water-filling follows while only
    saturations happen; ``L(Theta_i)`` (``Theta_i``: the ``i``-th saturation) is
    feasible exactly for the ``i`` up to the first capacity event (the trajectory rises
    monotonically, and a capacity event is a set of rising jobs that cannot rise
    further). Feasibility of ``L(Theta_i)`` is one level LP along the segment from the
    floors, ``max t: u >= floors + t (L(Theta_i) - floors)``, always feasible at
    ``t = 0``; ``Theta_i`` is passed when every job saturating there ends within the
    bottleneck tolerance of its maximum. The largest passed ``i`` is found by trying the
    last event (every job saturates: one LP), then galloping up from the events already
    passed and bisection: ``O(log n)`` LPs for any number of saturations.
    Returns ``(floors, xcol, LPs)`` of the furthest passed point (floors ``None`` when
    no event beyond those the level LP ``reached`` is passed).
    """
    umax = wf._max_level
    path = SaturationPath(floors, ~frozen, umax, wf.jobs.weight, wf.entity, wf.entity_weight,
                          wf.entity_fifo, wf.rank, wf.single_level, wf.multiplicity)
    bp, times = path.breakpoints, path.times
    pending = ~frozen & ~reached & np.isfinite(times)
    lo = int(np.searchsorted(bp, times[pending].min(initial=np.inf), side="left"))
    hi = bp.size
    best: tuple[np.ndarray, np.ndarray] | None = None
    probes = 0
    trial, step, galloping = hi, 1, True
    last = ~frozen & np.isfinite(times)
    if float(saturation_workers(wf.inst)[last].sum()) > float(wf.inst.cap.sum()):
        # the cluster cannot hold every job at its maximum: the last event's probe would fail
        # (Gavel's packed water-filling, 256 jobs on 192 workers: 9,146 of 31,000 pivots)
        trial, step = min(lo + 1, hi), 2
    while hi > lo:
        target = path.at(float(bp[trial - 1]))
        step_ = target - floors
        # a rise that is rounding of the trajectory (1e-15) is none: as a level row's rate
        # it would be met only to the solver's tolerance and certify a level of 0
        step_[step_ <= _PATH_ROUNDING * np.maximum(1.0, target)] = 0.0
        stage = LevelStage(U, step_, floors.copy(), "saturation probe")
        probes += 1
        try:
            res = level_lp(solver, stage, use_fast, anchor)
        except InfeasibleError:
            # feasible at t = 0 in exact arithmetic; declared infeasible (thin face of
            # floors met only to tolerance): not passed, so the jump only goes less far
            hi, galloping = trial - 1, False
            trial = (lo + hi + 1) // 2
            continue
        certs.append(res.cert)
        t = min(max(res.value, 0.0), 1.0)
        new = floors + t * step_
        due = ~frozen & (times <= bp[trial - 1])
        if np.all(new[due] >= umax[due] - btol * np.maximum(1.0, new[due])):
            best, lo = (new, res.x[: wf.inst.E]), trial
        else:
            hi = trial - 1
            galloping = galloping and probes == 1  # the last event first, then gallop
        # the last event first (every job saturates: one probe), then galloping up from
        # the events already passed (capacity events usually come early), then bisection
        if galloping:
            trial = min(lo + step, hi)
            step *= 2
        else:
            trial = (lo + hi + 1) // 2
    if best is None:
        return None, np.zeros(0), probes
    return best[0], best[1], probes


#: ACCURACY: a row within this share of its magnitude of a bound is taken as tight when a
#: point is refined onto its face (`refine_point`): about ten times HiGHS' feasibility
#: tolerance, so every row a simplex vertex holds at a bound is found
_TIGHT_SHARE = 1e-6
#: PERFORMANCE knob: the largest tight-rows x free-columns system `refine_point` solves by
#: the dense QR (`_least_norm_solver`, where the sparse LU fails); beyond it the point is left
_REFINE_MAX_ENTRIES = 250_000
#: PERFORMANCE knob: the most nonzeros of the tight rows' free columns `refine_point` solves
#: for by the sparse LU (issue #28: with the dense cap, 768 saturating jobs x 10 types left a
#: floor missed by 1.3e-10, times floor duals of 1e6: the end check saw rises of 7e-4)
_REFINE_MAX_NNZ = 2_000_000
#: ACCURACY: regularisation of `refine_point`'s least-norm system, relative to its largest
#: squared row norm (the refinement steps remove its bias)
_REGULARIZE = 1e-13
#: ACCURACY: tight rows met to this share of their magnitude are on their face already
_ON_FACE = 1e-14
#: ACCURACY: refinement steps (each one solves for the residual computed in extended
#: precision: iterative refinement)
_REFINE_STEPS = 3
#: ACCURACY: an interior point's column this close to a bound (relative to max(1, |bound|))
#: is held at it when the point is refined (a vertex's are exactly at theirs)
_NEAR_BOUND = 1e-9


def _least_norm_solver(M: sp.csr_matrix) -> Any:
    """``r -> d``, about the least-norm solution of ``M d = r``: the sparse LU (SuperLU) of the
    quasi-definite system ``[[I, M^T], [M, -delta I]]``, nonsingular also where tight rows are
    dependent (``delta``: `_REGULARIZE` times the largest squared row norm), else the dense QR
    with column pivoting (``None`` where that is larger than `_REFINE_MAX_ENTRIES`). Issue
    #28: that dense QR of a 144 x 122 system took 2 s where BLAS
    threads competed for loaded cores (40 of 47 s of a saturating water-filling); the
    refinement steps and `refine_point`'s final check absorb the regularisation."""
    m, c = M.shape
    C = M.tocoo()
    rows = np.bincount(C.row, weights=C.data * C.data, minlength=m)
    delta = _REGULARIZE * max(float(rows.max(initial=0.0)), 1.0)
    # K from its COO triplets (`sp.bmat` of the four blocks cost 1.2 of 7.4 s of a saturating
    # 256-job water-filling: 205 systems, its per-block conversions dominate small ones)
    ic, im = np.arange(c), c + np.arange(m)
    K = sp.csc_matrix((np.concatenate([np.ones(c), C.data, C.data, np.full(m, -delta)]),
                       (np.concatenate([ic, C.col, c + C.row, im]),
                        np.concatenate([ic, c + C.row, C.col, im]))), shape=(c + m, c + m))
    try:
        lu = scipy.sparse.linalg.splu(K)
    except RuntimeError:  # exactly singular
        if m * c > _REFINE_MAX_ENTRIES:
            return None
        dense = M.toarray()
        return lambda r: scipy.linalg.lstsq(dense, r, lapack_driver="gelsy",
                                            check_finite=False)[0]
    return lambda r: lu.solve(np.r_[np.zeros(c), r])[:c]


def refine_point(lp: LinearProgram, z: np.ndarray) -> np.ndarray:
    """``z`` moved onto the face of ``lp`` it lies on, to rounding: the rows within
    `_TIGHT_SHARE` of a bound are met exactly (in float64) with the columns at a bound held,
    by the least-norm change of the other columns (iterative refinement: the residuals in
    extended precision). ``z`` itself where that change leaves a bound or another row
    violated, or the system is too large (`_REFINE_MAX_NNZ`, `_REFINE_MAX_ENTRIES`).

    A simplex vertex meets its rows only to the solver's feasibility tolerance (``1e-7``);
    where the LP's duals reach ``1e8`` (throughputs spanning ``1e8`` within a job) that is a
    level of ``1e-1``: frozen floors missed by ``4e-8`` let other jobs rise by ``1e-2``, and
    the decisions made on such points cannot be proven.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import LinearProgram
    >>> lp = LinearProgram.build(np.zeros(2), np.array([[1.0, 1.0]]), row_lower=[1.0],
    ...                          row_upper=[1.0], col_lower=0.0, col_upper=1.0)
    >>> float(refine_point(lp, np.array([0.5 - 1e-8, 0.5])).sum())
    1.0
    """
    A = lp.A if isinstance(lp.A, sp.csr_matrix) else sp.csr_matrix(lp.A)
    z = np.clip(np.asarray(z, dtype=float), lp.col_lower, lp.col_upper)
    # columns near a bound held there first (a vertex's degenerate basic ones too: held only
    # exactly, 180 of 275 level points of 512 saturating jobs failed, then both passes ran)
    for near in (_NEAR_BOUND, 0.0):
        y = _onto_face(lp, A, z, near)
        if y is not None:
            return y
    return z


def _onto_face(lp: LinearProgram, A: sp.csr_matrix, z: np.ndarray, near: float
               ) -> np.ndarray | None:
    """`refine_point` with the columns within ``near`` (relative to ``max(1, |bound|)``) of a
    bound held there; ``None`` where that fails."""
    cl, cu, rl, ru = lp.col_lower, lp.col_upper, lp.row_lower, lp.row_upper
    tol_c = near * np.maximum(1.0, np.maximum(np.where(np.isfinite(cl), np.abs(cl), 0.0),
                                              np.where(np.isfinite(cu), np.abs(cu), 0.0)))
    low, high = z - cl <= tol_c, cu - z <= tol_c
    z = np.where(low, cl, np.where(high, cu, z))
    free = ~low & ~high
    act = A @ z
    mag = abs(A) @ np.abs(z) + np.maximum(np.where(np.isfinite(rl), np.abs(rl), 0.0),
                                          np.where(np.isfinite(ru), np.abs(ru), 0.0))
    band = _TIGHT_SHARE * np.maximum(mag, np.finfo(float).tiny)
    at_lo = np.isfinite(rl) & (np.abs(act - rl) <= band)
    at_up = np.isfinite(ru) & (np.abs(act - ru) <= band) & ~at_lo
    tight = at_lo | at_up
    rows, cols = np.flatnonzero(tight), np.flatnonzero(free)
    t = np.where(at_lo, rl, ru)[rows]
    if np.all(np.abs(act[rows] - t) <= _ON_FACE * mag[rows]):
        return z  # met to rounding already (a warm simplex's vertex, mostly)
    if not cols.size:
        return None
    target = t.astype(np.longdouble)
    At = A[rows]
    sub = At[:, cols]
    solve = _least_norm_solver(sub) if sub.nnz <= _REFINE_MAX_NNZ else None
    if solve is None:
        return None
    data = At.data.astype(np.longdouble)
    filled = np.diff(At.indptr) > 0  # row sums by CSR segments (np.add.at: 1 ms a step)
    starts = At.indptr[:-1][filled]
    y = z.copy()
    for _ in range(_REFINE_STEPS):
        prod = np.zeros(rows.size, dtype=np.longdouble)
        if starts.size:
            prod[filled] = np.add.reduceat(data * y[At.indices].astype(np.longdouble), starts)
        r = np.asarray(target - prod, dtype=float)
        if not np.any(r):
            break
        y[cols] += solve(r)
    act2 = A @ y
    other = ~tight
    ok = (np.all(y[cols] >= cl[cols]) and np.all(y[cols] <= cu[cols])
          and np.all(act2[other] >= rl[other] - band[other])
          and np.all(act2[other] <= ru[other] + band[other]))
    if not ok or np.abs(act2[rows] - t).max() > np.abs(act[rows] - t).max():
        return None
    return y
