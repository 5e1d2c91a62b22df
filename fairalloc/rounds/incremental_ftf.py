"""An incremental warm round of finish-time fairness for `fairalloc.RoundPolicy` (#28).

Finish-time fairness (`fairalloc.FinishTimeFairness`) minimises ``max_m rho_m`` with
``rho_m = (t_m + steps_m / tp_m) / D_m``. Between two rounds a scheduler adds and removes a
few jobs and every other job's remaining steps and elapsed time move a little, so the optimal
ratio ``R*`` and the set of jobs that bind it change little. The incremental round keeps:

* **one HiGHS model per stage** (`fairalloc.backends.kept.KeptLP`), a *slot* per job (its
  ``k`` columns ``x_mt``, its time row ``sum_t x_mt <= 1`` and its throughput row), kept while
  the job stays with the same throughputs and gang size. A job that leaves frees its slot
  (columns fixed at 0, rows free), a job that arrives takes a free slot (its entries changed
  in place: the model keeps its size and HiGHS the slot's basis statuses, which on the Gavel
  trace cut the re-solves' simplex iterations 4-7x against new slots) or new ones (one call
  for all); the model is rebuilt once free slots outnumber used ones. The first round is
  the normal round (a single call costs what it did); a new model gets its basis from the
  last round's allocation (HiGHS' crossover: 1,000 Gavel jobs ~30 ms once, where from
  nothing it took one simplex iteration per job).
* **the Dinkelbach level LP in a form whose data change in row bounds**: at ``R = 1 + r``
  ``F(r) = max theta`` s.t. the time and capacity rows and ``T_m . x_m - c_m theta >= b_m(r)``
  with ``b_m(r) = steps_m / (R D_m - t_m)`` (the throughput at which ``rho_m = R``). Scaled
  by ``1 / c_m`` this is the cold path's Dinkelbach stage with normalisation ``q_m = c_m (R D_m
  - t_m)`` (`fairalloc.FinishTimeFairness.dinkelbach_stage`); ``c_m = -mu b_m'(r_0)`` at the
  round's start ``r_0`` puts ``theta`` in units of ``mu rho`` (``mu``, a power of two, brings
  it to the rates' scale). ``F`` is concave and increasing in
  ``r`` and its derivative is ``sum_m y_m (-b_m'(r))`` (the throughput rows' duals), so the
  round runs Newton's method on ``F(r) = 0`` from the previous round's ``r*``, each step one
  change of the rows' bounds and a re-solve from the held basis (``proofs/incremental_ftf.md``);
* **the work-conserving LP** (total normalised throughput with every ``T_m . x_m >= (1 -
  stage_tol) b_m(r*)``: the cold path's kept rows at ``theta = 0``), re-solved from its own
  basis;
* **the closed form first**: where the last optimum was its lower bound ``R_lb`` (each job at
  its fastest column all the time, `fairalloc.throughput.duration`'s ``ftf-closed-form``),
  the work-conserving LP alone, its rows at ``r_lb``, re-solved from its basis: a certified
  point proves ``R* = R_lb`` by the lower bound's duals (``stats.path[0] ==
  "ftf-closed-form"``; else the Newton path, ``"newton:<steps>"``);
* **the certificates on the original program**, job by job, in ``O(n k)`` numpy: the level
  LP's at the returned allocation and its own ``R`` (the duals of the last Newton step; the
  reduced costs do not depend on ``r``), judged against ``R`` as the cold path's are, and the
  work-conserving LP's.

What it cannot answer (another type set or other worker counts, a drained type, a job that
cannot run, many identical jobs, data the normal round must check, a failed solve, Newton
without convergence, a failed certificate) raises `fairalloc.plan.Decline` (or a
`fairalloc.SolverError`): `fairalloc.RoundPolicy` runs this as the first strategy of a plan
whose second is the normal round (``stats.fallbacks``: ``"incremental->round: <reason>"``).

Examples
--------
>>> import fairalloc as fa
>>> p = fa.RoundPolicy("finish_time_fairness")
>>> tp = {"a": {"x": 1.0, "y": 2.0}, "b": {"x": 3.0, "y": 1.0}}
>>> r1 = p.allocate(tp, {"x": 1, "y": 1}, steps_remaining={"a": 100.0, "b": 300.0})
>>> r2 = p.allocate(tp, {"x": 1, "y": 1}, steps_remaining={"a": 90.0, "b": 280.0})
>>> r3 = p.allocate(tp, {"x": 1, "y": 1}, steps_remaining={"a": 80.0, "b": 260.0})
>>> r1.stats.method.startswith("incremental"), r3.stats.method, r3.certificate.ok
(False, 'incremental+warm', True)
>>> r2.stats.path, r3.stats.path    # a new model from r1's allocation, then kept
(('ftf-closed-form', 'incremental-lp+crossover'), ('ftf-closed-form', 'incremental-lp+warm'))
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
import time
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from .._symmetry import exact_classes
from ..data import _MIN_RATIO
from ..errors import SolverError
from ..plan import Decline
from ..results import Certificate, SolveStats, Status
from ..throughput.duration import CLOSED_FORM, lower_bound_duals
from ..throughput.programs import pow2
from ._kept_round import (
    KeptRound,
    decline_failed,
    kept_residual,
    lagrangian,
    new_models,
    release_slots,
    residual,
    round_tolerances,
    row_duals,
    slot_columns,
)
from .incremental import INCREMENTAL_OPTIONS
from .result import RoundResult

__all__ = ["IncrementalFTF"]

#: PERFORMANCE: the model is rebuilt (compact) once free slots outnumber used ones by this
_COMPACT_RATIO = 1.0
#: PERFORMANCE: Newton steps on ``F(r) = 0`` in one round before the round hands over
#: (from the previous round's ``r*`` it takes 1-3 on the Gavel-drawn trace)
_MAX_NEWTON = 12
#: PERFORMANCE: a job's ``theta`` coefficient ``c_m`` (its units) is set again only when it is
#: off ``-b_m'(r_0)`` by more than this factor either way: a coefficient change costs HiGHS
#: its factorisation, and any ``c_m > 0`` gives the same ``F(r) = 0`` (the certificate uses
#: the coefficients the model holds)
_C_DRIFT = 2.0
_LOG_DRIFT = float(np.log(_C_DRIFT))
#: PERFORMANCE: the largest spread ``max_m / min_m`` of the units ``slope_m`` one kept model
#: takes (its single ``theta`` column; the normal round scales its rows one by one): above it
#: the round hands over (Gavel-drawn rounds: about 5e4; rates or times 1e9 off unit: 1e11+)
_C_SPREAD = 1e8
#: PERFORMANCE: below this share of distinct jobs (exact classes of the whole job data over
#: jobs) the normal round's symmetry reduction solves a smaller program: a round that would
#: build a model hands over
_MIN_DISTINCT_SHARE = 0.5
#: per-job data finish-time fairness does not read, which the normal round still validates
_UNREAD = ("order", "slo", "entities")
_INF = float("inf")


class IncrementalFTF(KeptRound):
    """The kept HiGHS models of a finish-time fairness round, one slot per job.

    `solve` answers one round (a `fairalloc.RoundResult`, certified on the original program)
    or raises `fairalloc.plan.Decline` / `fairalloc.SolverError` (the caller hands over);
    `round` runs it as a plan (`fairalloc.rounds._kept_round.KeptRound.round`).
    """

    _UNREAD = _UNREAD
    _WHAT = "finish-time fairness round"

    def clear(self) -> None:
        """Forget the models and the last round (the next round is the normal round)."""
        self._seed: tuple[tuple[Hashable, ...], np.ndarray] | None = None
        self._at_lb = True  # whether the last round's optimum was its lower bound R_lb
        self._drop()

    def _drop(self) -> None:
        """Forget the models (the next round builds new ones, from the last round's
        allocation)."""
        self._hs: tuple[Any, ...] = ()  # the level and work-conserving models
        self._types: tuple[str, ...] = ()
        self._cap = np.zeros(0)
        self._owner: list[Hashable] = []       # slot -> job id (None: free) ...
        self._index: dict[Hashable, int] = {}  # ... and job id -> slot (each id hashed once)
        self._ids: tuple[Hashable, ...] = ()   # the last round's jobs ...
        self._slot_of = np.zeros(0, dtype=np.intp)  # ... and their slots
        self._T = np.zeros((0, 0))             # each slot's throughput row
        self._sf = np.zeros(0)                 # ... and gang size
        self._c = np.zeros(0)                  # ... and theta coefficient (level model)
        self._used = np.zeros(0, dtype=bool)
        self._r: float | None = None           # the last round's r* = R* - 1
        self._mu = 1.0                         # theta's unit: c_m ~ mu slope_m (a power of 2)
        self._lam = 1.0                        # the throughput rows' unit (a power of 2)
        self._pending: np.ndarray | None = None  # a new level model's start (column values)

    # --- the models ---------------------------------------------------------------------------
    def _new_model(self, tnames: tuple[str, ...], cap: np.ndarray) -> None:
        """Both stages' models (equal rows and columns; each keeps its own basis): column 0 is
        ``theta`` (free in the level model, fixed at 0 in the work-conserving one), rows
        ``0 .. k-1`` the capacity rows."""
        r, mu, lam = self._r, self._mu, self._lam  # (the start and the units carry over)
        self._drop()
        self._r, self._mu, self._lam = r, mu, lam
        self._hs = new_models(cap, ((1.0, -_INF, _INF), (0.0, 0.0, 0.0)))
        self._types, self._cap = tnames, cap.copy()
        self._T = np.zeros((0, cap.size))

    def _append(self, ids: list[Hashable], T: np.ndarray, Ta: np.ndarray, sf: np.ndarray,
                g: np.ndarray, c: np.ndarray) -> np.ndarray:
        """New slots for jobs (throughput rows ``T``, allowed rates ``Ta``, gang sizes,
        work-conserving costs ``g``), in one call per model; returns their slots. Slot ``s``
        has columns ``1 + s k + t``, time row ``k + 2 s`` and throughput row ``k + 2 s + 1``
        (free until a round sets its bound; ``theta``'s coefficient there is ``-c`` in the
        level model, 0 in the work-conserving one). Throughput rows are stored divided by
        ``lam`` (rates near unit scale: HiGHS' tolerances are absolute)."""
        m = sf.size
        first = self._used.size
        at = np.arange(m, dtype=np.int32)
        lower = np.full(2 * m, -_INF)
        upper = np.column_stack([np.ones(m), np.full(m, _INF)]).ravel()
        lam = self._lam
        starts, index, value, col_upper = slot_columns(Ta, sf, Ta / lam, first)
        ncol = Ta.size
        level, wc = self._hs
        level.add_rows(lower, upper, np.repeat(at, 2), np.zeros(m, dtype=np.int32), -c / lam)
        wc.add_rows(lower, upper, np.zeros(2 * m, dtype=np.int32), np.zeros(0, dtype=np.int32),
                    np.zeros(0))
        for lp, cost in ((level, np.zeros(ncol)), (wc, g.ravel())):
            lp.add_cols(cost, np.zeros(ncol), col_upper, starts, index, value)
        self._owner.extend(ids)
        self._index.update(zip(ids, range(first, first + m)))
        self._T = np.concatenate([self._T, T])
        self._sf = np.concatenate([self._sf, sf])
        self._c = np.concatenate([self._c, c])
        self._used = np.concatenate([self._used, np.ones(m, dtype=bool)])
        slots = first + np.arange(m)
        return slots

    def _release(self, slots: np.ndarray) -> None:
        """Free slots of jobs that left (or changed rates): columns fixed at 0, rows free."""
        release_slots(self._hs, self._cap.size, slots)
        for s in slots.tolist():
            self._owner[s] = None
        self._used[slots] = False

    def _fill(self, slots: np.ndarray, ids: list[Hashable], T: np.ndarray, Ta: np.ndarray,
              sf: np.ndarray, g: np.ndarray, c: np.ndarray) -> None:
        """Free slots take jobs (as `_append`, by changing the slots' entries in place: the
        models keep their size, and HiGHS its basis)."""
        k = self._cap.size
        lam = self._lam
        level, wc = self._hs
        for s, row_t, row_a, gang, theta in zip(slots.tolist(), T.tolist(), Ta.tolist(),
                                                 sf.tolist(), c.tolist(), strict=True):
            thr = k + 2 * s + 1
            for lp in self._hs:
                for t in range(k):
                    col = 1 + s * k + t
                    if self._sf[s] != gang:
                        lp.change_coeff(t, col, gang)
                    lp.change_coeff(thr, col, row_a[t] / lam)
                lp.change_row_bounds(thr - 1, -_INF, 1.0)
            level.change_coeff(thr, 0, -theta / lam)
            self._T[s], self._sf[s], self._c[s] = row_t, gang, theta
        cols = (1 + slots[:, None] * k + np.arange(k)).astype(np.int32).ravel()
        upper = np.where(Ta > 0, _INF, 0.0).ravel()
        for lp in self._hs:
            lp.change_cols_bounds(cols, np.zeros(cols.size), upper)
        wc.change_costs(cols, g.ravel())
        for s, job in zip(slots.tolist(), ids, strict=True):
            self._owner[s] = job
            self._index[job] = s
        self._used[slots] = True

    def _discard(self) -> None:
        self._drop()  # (a model HiGHS could not solve is not kept; the last round is)

    @staticmethod
    def applies(options: dict[str, Any]) -> bool:
        """Whether a round with these solve options may be incremental (tolerances only)."""
        return all(key in INCREMENTAL_OPTIONS for key in options)

    def _tries(self, options: dict[str, Any]) -> bool:
        # (the first round is the normal round: a new model starts from its allocation)
        return self.applies(options) and (bool(self._hs) or self._seed is not None)

    def _solve(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
               tnames: tuple[str, ...], per_job: dict[str, Any], options: dict[str, Any]
               ) -> RoundResult:
        return self.solve(t0, T, cap, ids, tnames, per_job, options)

    def round(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
              tnames: tuple[str, ...], per_job: dict[str, Any], options: dict[str, Any],
              normal: Callable[[], RoundResult]) -> RoundResult:
        """A round as a plan (`fairalloc.rounds._kept_round.KeptRound.round`: `solve` where
        it is tried, then ``normal()``); the next round starts from this one's allocation."""
        res = super().round(t0, T, cap, ids, tnames, per_job, options, normal)
        self._seed = (ids, res.x)  # (a new model starts from this round's allocation ...
        if not res.stats.method.startswith("incremental"):
            self._r = res.objective - 1.0  # ... and its ratio; whether its optimum was R_lb)
            self._at_lb = res.stats.path[:1] == (CLOSED_FORM,)
        return res

    # --- one round ----------------------------------------------------------------------------
    @np.errstate(over="ignore", divide="ignore", invalid="ignore")  # (extreme data: it declines)
    def solve(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
              tnames: tuple[str, ...], per_job: dict[str, Any], options: dict[str, Any]
              ) -> RoundResult:
        """This round (validated throughputs ``T``, workers ``cap``; per-job data in job
        order, unchecked: a value the normal round would refuse declines)."""
        n, k = T.shape
        if n == 0 or k == 0 or not np.all(cap > 0):
            raise Decline("an empty round or a drained type")
        data = _job_data(per_job, n)
        s, steps, t, t_iso = data
        allowed = (T > 0) & (s[:, None] <= cap[None, :])
        if not allowed.any(axis=1).all():
            raise Decline("a job that cannot run")
        Ta = np.where(allowed, T, 0.0)
        iso_tp = (Ta @ cap) / np.maximum(n * s, cap.sum())  # under X^isolated
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            dur_iso = steps / iso_tp
            D = t_iso + dur_iso
        if not (np.isfinite(dur_iso).all() and np.isfinite(D).all()):
            raise Decline("steps_remaining / throughput overflows (the normal round reports it)")
        if not self._hs and exact_classes(np.column_stack([T, s, steps, t, t_iso])).counts.size \
                < _MIN_DISTINCT_SHARE * n:  # (checked where a model is built)
            raise Decline("many identical jobs (the normal round's symmetry reduction)")
        tols = round_tolerances(options)
        job = _Jobs(Ta, s, steps, t, t_iso, dur_iso, D, Ta @ (cap / cap.sum()))
        lower = job.excess(Ta.max(axis=1))  # each job at its fastest type: R_lb - 1 is
        top = int(np.argmax(lower))         # the largest, job top's
        r_lb = float(lower[top])
        r_up = float(job.excess(job.iso_tp()).max())  # X^isolated is feasible
        r = min(max(self._r if self._r is not None else r_lb, r_lb), r_up)
        if not self._hs:  # theta's unit: c_m = mu slope_m in the rates' units (as the cold
            # stage's unit scaling, a power of two)
            fastest = Ta.max(axis=1)
            self._mu = pow2(float(np.median(fastest / job.slope(r))))
            self._lam = pow2(float(np.median(fastest)))
        c = self._mu * job.slope(r)
        slot_of, warm = self._slots(T, s, Ta, job.equal_tp, c, cap, ids, tnames)
        return self._answer(t0, warm, job, cap, ids, tnames, slot_of, (r_lb, r, top),
                            tols)

    def _find(self, ids: tuple[Hashable, ...]) -> np.ndarray:
        """Each job's kept slot (-1: none)."""
        if not self._hs:
            return np.full(len(ids), -1, dtype=np.intp)
        return _positions(ids, self._ids, self._slot_of, self._index)

    def _start(self, ids: tuple[Hashable, ...], Ta: np.ndarray) -> None:
        """A new model (slots in job order) starts from the last round's allocation (its
        jobs' rows; 0 for the others): a few simplex iterations where HiGHS from nothing takes
        about one per job."""
        if self._seed is None or self._seed[1].shape[1] != Ta.shape[1]:
            return
        old, x = self._seed
        at = _positions(ids, old, np.arange(len(old)), dict(zip(old, range(len(old)))))
        x0 = np.where((at >= 0)[:, None] & (Ta > 0), x[np.maximum(at, 0)], 0.0)
        self._pending = np.concatenate([np.zeros(1), x0.ravel()])  # (once its rows are set)

    def _slots(self, T: np.ndarray, s: np.ndarray, Ta: np.ndarray, equal_tp: np.ndarray,
               c: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...], tnames: tuple[str, ...]
               ) -> tuple[np.ndarray, bool]:
        """Each job's slot: its kept one when its rates and gang size are unchanged, else a
        new one (jobs that left, or changed, free theirs first); and whether the models were
        kept (``False``: new ones, without a basis)."""
        if self._hs and (tnames != self._types or not np.array_equal(cap, self._cap)):
            self._drop()
            raise Decline("the worker types or counts changed")
        n = len(ids)
        slot_of = self._find(ids)
        known = slot_of >= 0
        if known.any():
            ks = slot_of[known]
            same = (self._T[ks] == T[known]).all(axis=1) & (self._sf[ks] == s[known])
            known[np.flatnonzero(known)[~same]] = False
        keep = np.zeros(self._used.size, dtype=bool)
        keep[slot_of[known]] = True
        gone = np.flatnonzero(self._used & ~keep)
        for slot in gone.tolist():  # (a job that changed rates takes a new slot below)
            del self._index[self._owner[slot]]
        new = np.flatnonzero(~known)
        free = int((~self._used).sum()) + gone.size
        kept = bool(self._hs) and free <= _COMPACT_RATIO * n
        if not kept:
            # a new model, or mostly free slots: a new, compact model over this round's jobs
            self._new_model(tnames, cap)
            new = np.arange(n)
        elif gone.size > new.size:  # (the slots arrivals take now are refilled, not freed)
            self._release(gone[new.size:])
        if kept and new.size:  # departed jobs' slots, then free ones, take new jobs first
            free_slots = np.concatenate([gone, np.flatnonzero(~self._used)])[: new.size]
            fill, new = new[: free_slots.size], new[free_slots.size:]
            self._fill(free_slots, [ids[i] for i in fill.tolist()], T[fill], Ta[fill], s[fill],
                       Ta[fill] / equal_tp[fill][:, None], c[fill])
            slot_of[fill] = free_slots
        if new.size:
            slot_of[new] = self._append([ids[i] for i in new.tolist()], T[new], Ta[new], s[new],
                                        Ta[new] / equal_tp[new][:, None], c[new])
        if not kept:
            self._start(ids, Ta)
        self._ids, self._slot_of = ids, slot_of
        return slot_of, kept

    def _answer(self, t0: float, warm: bool, job: _Jobs, cap: np.ndarray,
                ids: tuple[Hashable, ...], tnames: tuple[str, ...], slot_of: np.ndarray,
                start: tuple[float, float, int], tols: tuple[float, float, float]
                ) -> RoundResult:
        k = cap.size
        gap_tol, feas_tol, stage_tol = tols
        level, wcm = self._hs
        seeded = self._pending is not None  # (a new model from the last round's allocation)
        rows = (k + 2 * slot_of + 1).astype(np.int32)  # each job's throughput row
        r_lb, r, top = start
        low = (1.0 - stage_tol) * job.steps / job.g(r_lb)
        if self._at_lb:
            res = self._closed_form(t0, (warm, seeded), job, cap, ids, tnames, slot_of, rows,
                                    (low, top), (gap_tol, feas_tol))
            if res is not None:
                return res
        spread = job.slope(r)
        if not float(spread.max()) <= _C_SPREAD * float(spread.min()):
            raise Decline("rows of too many scales (the normal round scales them one by one)")
        c = self._c[slot_of].copy()
        best: tuple[float, np.ndarray] | None = None
        iterations = solves = 0
        cert1 = None
        y1 = np.zeros(0)
        for _ in range(_MAX_NEWTON):
            # theta in units of mu rho near the best R so far (rows whose units are off by
            # more than _C_DRIFT get them again): the certificate's gap, in rho, is divided
            # by min_m slope_m / c_m (`_level_certificate`), which this keeps near 1 / mu
            c_now = self._mu * job.slope(
                r if best is None or not np.isfinite(best[0]) else best[0])
            off = np.flatnonzero(np.abs(np.log(c / c_now)) > _LOG_DRIFT)
            for row, value in zip(rows[off].tolist(), (-c_now[off] / self._lam).tolist(),
                                  strict=True):
                level.change_coeff(row, 0, value)
            c[off] = c_now[off]
            self._c[slot_of[off]] = c_now[off]
            b = job.steps / job.g(r)
            level.change_rows_bounds(rows, b / self._lam, np.full(rows.size, _INF))
            if self._pending is not None:  # a new model: a basis from the last allocation
                level.start_from(self._pending)
                self._pending = None
            xv, y1, its = self._run(level, "finish-time fairness level")
            iterations, solves = iterations + its, solves + 1
            x = job.clip(xv[1:].reshape(-1, k)[slot_of])
            r_x = float(job.excess(job.tp(x)).max())
            if best is None or r_x < best[0]:
                best = (r_x, x)
            duals = row_duals(y1, slot_of, k, self._lam)
            cert1 = _level_certificate(job, c, cap, best[1], best[0], duals, gap_tol, feas_tol)
            if cert1.ok:
                break
            slope = float(duals[2] @ job.slope(r))  # dF/dr
            if not (slope > 0 and np.isfinite(slope)):
                raise Decline("the level LP's duals give no Newton step")
            r_new = min(max(r - float(xv[0]) / slope, r_lb), best[0])
            if r_new == r and off.size == 0:
                break
            r = r_new
        assert best is not None and cert1 is not None
        if not cert1.ok:
            self._drop()
            raise Decline(f"the Dinkelbach level did not certify (relative gap "
                          f"{cert1.relative_gap:.3g})")
        r_star = best[0]
        # stage 2: total normalised throughput, every rho kept at R* (to stage_tol)
        low = (1.0 - stage_tol) * job.steps / job.g(r_star)
        wcm.change_rows_bounds(rows, low / self._lam, np.full(rows.size, _INF))
        if not warm:  # (or from the level optimum, by the primal simplex)
            wcm.take_basis(level)
        xv2, y2, it2 = self._run(wcm, "finish-time fairness work-conserving")
        x = job.lift(job.clip(xv2[1:].reshape(-1, k)[slot_of]), low)
        tp = job.tp(x)
        cert2 = _wc_certificate(job, cap, low, x, row_duals(y2, slot_of, k, self._lam), gap_tol,
                                feas_tol)
        r_f = float(job.excess(tp).max())
        cert1 = _level_certificate(job, c, cap, x, r_f, row_duals(y1, slot_of, k, self._lam),
                                   gap_tol,
                                   feas_tol)
        if not (cert1.ok and cert2.ok):
            self._drop()
            raise decline_failed(cert1 if not cert1.ok else cert2)
        self._r = r_f
        # (an optimum at the lower bound: the next round tries the closed form again)
        self._at_lb = r_f - r_lb <= gap_tol * (1.0 + r_f)
        return _result(t0, (warm, seeded), job, cap, x, tp, np.maximum(y1[:k], 0.0), ids,
                       tnames, (cert1, cert2), iterations + it2, solves + 1,
                       f"newton:{solves - 1}")

    def _closed_form(self, t0: float, start: tuple[bool, bool], job: _Jobs, cap: np.ndarray,
                     ids: tuple[Hashable, ...], tnames: tuple[str, ...], slot_of: np.ndarray,
                     rows: np.ndarray, bound: tuple[np.ndarray, int], tols: tuple[float, float]
                     ) -> RoundResult | None:
        """``ftf-closed-form`` on the kept work-conserving model: its rows at ``rho <= R_lb``
        (to ``stage_tol``), one re-solve from its basis; a feasible point proves ``R* = R_lb``
        by the lower bound's duals (`fairalloc.throughput.duration.lower_bound_duals`, in the
        level certificate's normalisation ``c_m = slope_m``). ``None`` (the models kept) when
        the rows have no point (``R_lb`` not attained) or a certificate fails: the Newton
        path follows, and later rounds try the closed form again once an optimum is at
        ``R_lb``."""
        k = cap.size
        gap_tol, feas_tol = tols
        low, top = bound  # (the rows' bounds; the job that sets R_lb)
        wcm = self._hs[1]
        wcm.change_rows_bounds(rows, low / self._lam, np.full(rows.size, _INF))
        if not start[0] and self._pending is not None:  # (a new model: its basis from the
            wcm.start_from(self._pending)                # last round's allocation)
        try:
            xv, y, its = wcm.solve("finish-time fairness work-conserving")
        except SolverError:
            self._at_lb = False
            return None
        x = job.lift(job.clip(xv[1:].reshape(-1, k)[slot_of]), low)
        tp = job.tp(x)
        r_f = float(job.excess(tp).max())
        if not r_f < _INF:  # (a job without throughput: no certificate at R_lb)
            self._at_lb = False
            return None
        c = job.slope(r_f)
        y_cap, y_time, y_thr = np.zeros(k), np.zeros(len(ids)), np.zeros(len(ids))
        level_dual, y_time[top] = lower_bound_duals(job.Ta[top] / c[top])
        y_thr[top] = level_dual / c[top]  # (the row T . x >= b unscaled: its dual / c)
        cert1 = _level_certificate(job, c, cap, x, r_f, (y_cap, y_time, y_thr), gap_tol,
                                   feas_tol)
        cert2 = _wc_certificate(job, cap, low, x, row_duals(y, slot_of, k, self._lam), gap_tol,
                                feas_tol)
        if not (cert1.ok and cert2.ok):
            self._at_lb = False
            return None
        if self._pending is not None:  # (the level model, not solved yet, starts from here)
            self._pending = xv
        self._r = r_f
        return _result(t0, start, job, cap, x, tp, y_cap, ids, tnames, (cert1, cert2), its, 1,
                       CLOSED_FORM)


@dataclasses.dataclass(frozen=True)
class _Jobs:
    """One round's job data in job order (runnable jobs, every type present)."""

    Ta: np.ndarray        # throughput where the job may run, else 0
    s: np.ndarray         # gang sizes
    steps: np.ndarray
    t: np.ndarray         # elapsed
    t_iso: np.ndarray     # isolated elapsed
    dur_iso: np.ndarray   # steps / throughput under X^isolated
    D: np.ndarray         # isolated finish time: rho's denominator
    equal_tp: np.ndarray  # throughput under X^equal (the work-conserving normaliser)

    def iso_tp(self) -> np.ndarray:
        return self.steps / self.dur_iso

    def g(self, r: float) -> np.ndarray:
        """``R D - t`` at ``R = 1 + r``, without the cancellation of ``R D - t`` (positive
        for ``r >= r_lb``: `FinishTimeFairness.dinkelbach_stage`)."""
        return r * self.D + (self.t_iso - self.t) + self.dur_iso

    def slope(self, r: float) -> np.ndarray:
        """``-d b_m / d r`` with ``b_m = steps_m / g_m(r)``: ``steps_m D_m / g_m(r)^2``."""
        g = self.g(r)
        return self.steps * self.D / (g * g)

    def tp(self, x: np.ndarray) -> np.ndarray:
        return (self.Ta * x).sum(axis=1)

    def clip(self, x: np.ndarray) -> np.ndarray:
        return np.where(self.Ta > 0, np.maximum(x, 0.0), 0.0)

    def lift(self, x: np.ndarray, low: np.ndarray) -> np.ndarray:
        """``x`` with each job short of its kept row ``T . x >= low`` given the throughput it
        lacks at its fastest type. HiGHS' primal tolerance is absolute (rows in units of
        ``lam``, the rates' scale): a nearly finished job's row, whose bound is below it,
        may be met by ``x = 0`` (``rho = inf``); the shares added are within that tolerance,
        and the certificates judge the point."""
        short = low - self.tp(x)
        if not (short > 0).any():
            return x
        at = np.flatnonzero(short > 0)
        fast = self.Ta[at].argmax(axis=1)
        x = x.copy()
        x[at, fast] += short[at] / self.Ta[at, fast]
        return x

    def excess(self, tp: np.ndarray) -> np.ndarray:
        """``rho - 1`` without cancellation (`FinishTimeFairness.excess`)."""
        with np.errstate(divide="ignore", over="ignore"):
            dur = np.where(tp > 0, self.steps / np.maximum(tp, np.finfo(float).tiny), _INF)
        return ((self.t - self.t_iso) + (dur - self.dur_iso)) / self.D


def _job_data(per_job: dict[str, Any], n: int) -> tuple[np.ndarray, ...]:
    """Gang sizes, steps, elapsed and isolated elapsed (default: elapsed); data the normal
    round must check or refuse (missing steps, a value out of range) declines."""
    steps = per_job.get("steps_remaining")
    if steps is None:
        raise Decline("no steps_remaining (the normal round reports it)")
    s = np.ones(n) if per_job.get("scale_factor") is None else per_job["scale_factor"]
    w = per_job.get("weight")
    t = np.zeros(n) if per_job.get("elapsed") is None else per_job["elapsed"]
    t_iso = t if per_job.get("isolated_elapsed") is None else per_job["isolated_elapsed"]
    arrays = [np.asarray(a, dtype=float) for a in (s, steps, t, t_iso)]
    s, steps, t, t_iso = arrays
    if not (all(a.shape == (n,) and np.isfinite(a).all() for a in arrays)
            and np.all(s >= 1) and np.all(s == np.round(s)) and np.all(steps > 0)
            and np.all(t >= 0) and np.all(t_iso >= 0)
            and (w is None or (np.isfinite(w).all() and np.all(np.asarray(w) > 0)
                               and np.all(w >= _MIN_RATIO * np.max(w))))):  # (as Jobs)
        raise Decline("a per-job value the normal round must check")
    return s, steps, t, t_iso


def _positions(ids: tuple[Hashable, ...], last: tuple[Hashable, ...], last_at: np.ndarray,
               index: dict[Hashable, int]) -> np.ndarray:
    """Each job's position (-1: none): ``last_at`` while the scheduler passes the very id
    objects ``last`` in the same order (no job id is hashed), else through ``index`` (id ->
    position: each of this round's ids hashed once)."""
    n = len(ids)
    if n == len(last) and all(map(operator.is_, ids, last)):
        return np.asarray(last_at, dtype=np.intp).copy()
    return np.fromiter(map(index.get, ids, itertools.repeat(-1)), dtype=np.intp, count=n)


def _level_certificate(job: _Jobs, c: np.ndarray, cap: np.ndarray, x: np.ndarray, r_x: float,
                       duals: tuple[np.ndarray, ...], gap_tol: float, feas_tol: float
                       ) -> Certificate:
    """`fairalloc.certificates.lp_certificate` of the Dinkelbach level stage at ``R = 1 + r_x``
    (``r_x``: the allocation's own ``max rho - 1``) with normalisation ``q_m = c_m (R D_m -
    t_m)``, on the original program job by job in ``O(n k)``: ``min -theta`` s.t. ``sum_t
    x_mt <= 1``, ``sum_m s_m x_mt <= cap_t``, ``T_m . x_m / c_m - theta >= b_m / c_m``
    (``b_m = steps_m / (R D_m - t_m)``), ``theta`` free, ``x_mt >= 0`` where job ``m`` may run.
    Primal point ``x`` with its largest ``theta`` (0 up to rounding: the job at ``max rho``
    has ``T . x = b``); dual: ``duals`` (capacity, time, throughput rows of the kept model in
    the minimisation's signs; a scaled row's dual is ``c_m`` times the kept row's).

    The gap is stated in units of ``rho`` and judged against ``R``, as the cold path's: the
    dual bound ``F(R) <= DB`` means no allocation has ``max rho < R - DB / kappa`` with
    ``kappa = min_m slope_m(r_x) / c_m`` (``proofs/incremental_ftf.md``), so the gap is
    ``DB / kappa``."""
    y_thr = duals[2]
    b = job.steps / job.g(r_x)
    theta = float(np.min((job.tp(x) - b) / c))
    part = lagrangian(job.Ta, job.s, cap, duals)
    d_theta = -1.0 + float(c @ y_thr)
    rows = float(part.rows + y_thr @ b)
    kappa = float(np.min(job.slope(r_x) / c))
    dual_res = max(part.columns, abs(d_theta))
    gap = max(-rows - min(theta, 0.0), 0.0) / kappa if kappa > 0 else _INF
    return Certificate(kind="lp", primal_value=theta, dual_bound=-rows, gap=gap,
                       primal_residual=residual(job.s, cap, x), dual_residual=dual_res,
                       gap_tol=gap_tol, feas_tol=feas_tol, scale=abs(1.0 + r_x))


def _wc_certificate(job: _Jobs, cap: np.ndarray, low: np.ndarray, x: np.ndarray,
                    duals: tuple[np.ndarray, ...], gap_tol: float, feas_tol: float
                    ) -> Certificate:
    """`fairalloc.certificates.lp_certificate` of the work-conserving stage on the original
    program in ``O(n k)``: ``min -sum_m T_m . x_m / equal_m`` s.t. the time and capacity rows
    and ``T_m . x_m >= low_m``; at the final allocation ``x``."""
    g = job.Ta / job.equal_tp[:, None]
    tp = job.tp(x)
    part = lagrangian(job.Ta, job.s, cap, duals, g=g)
    primal = -float((tp / job.equal_tp).sum())
    rows = float(part.rows + duals[2] @ low)
    return Certificate(kind="lp", primal_value=-primal, dual_bound=-rows,
                       gap=max(primal - rows, 0.0),
                       primal_residual=max(residual(job.s, cap, x), kept_residual(low, tp)),
                       dual_residual=part.columns / float(np.max(g, initial=1.0)),
                       gap_tol=gap_tol, feas_tol=feas_tol)


def _result(t0: float, start: tuple[bool, bool], job: _Jobs, cap: np.ndarray, x: np.ndarray,
            tp: np.ndarray, prices: np.ndarray, ids: tuple[Hashable, ...],
            tnames: tuple[str, ...], certs: tuple[Certificate, Certificate], iterations: int,
            solves: int, how: str) -> RoundResult:
    """The round's `fairalloc.RoundResult` (objective: the allocation's ``max rho``; ``how``:
    the first path step, ``newton:<steps>`` or ``ftf-closed-form``)."""
    from ..throughput.policy import Allocation

    rho = (job.t + job.steps / tp) / job.D
    objective = float(rho.max())
    for arr in (x, prices, tp, rho):
        arr.flags.writeable = False
    kept, seeded = start  # (the models kept; a new one started from the last allocation)
    steps = (how, "incremental-lp+warm" if kept else
             "incremental-lp+crossover" if seeded else "incremental-lp")
    stats = SolveStats(backend="highs",
                       method="incremental+warm" if kept or seeded else "incremental",
                       seconds=time.perf_counter() - t0, iterations=iterations, solves=solves,
                       raw_status="Optimal", path=steps)
    red = Allocation(objective=objective, status=Status.OPTIMAL, stats=stats,
                     certificate=certs[0], allocation=x, prices=prices,
                     effective_throughput=tp, metric=rho, policy="finish_time_fairness",
                     job_ids=tuple(range(len(ids))), types=tnames, pair_x=None,
                     consolidated_x=None, utilization=(job.s @ x) / cap,
                     stage_certificates=certs)
    return RoundResult(objective=objective, status=Status.OPTIMAL, stats=stats,
                       certificate=certs[0], x=x, prices=prices, effective_throughput=tp,
                       job_ids=ids, types=tnames, drained_types=(), unrunnable_jobs=(),
                       policy="finish_time_fairness", reduced=red)
