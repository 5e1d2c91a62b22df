"""An incremental warm round of max-min fairness for `fairalloc.RoundPolicy` (#28 item 2).

Between two rounds a scheduler adds and removes a few jobs; everything else stays. The
incremental round keeps what does not change:

* **one HiGHS model per stage kept alive** (`fairalloc.backends.kept.KeptLP`) over the exact
  symmetry classes of the jobs (jobs with equal throughput row, scale factor and weight;
  ``proofs/symmetry_reduction.md``). A class owns a *slot*: ``k`` columns (its members' total
  time on each type), its time row (``<= count``) and its level row (``coef T . X >= count
  theta``). A class that appears takes a free slot (or new ones, added in one call); a class
  that leaves frees its slot (its columns fixed at 0, its rows free); a class whose member
  count changed gets one row bound and one coefficient changed. Each model is then re-solved
  from its own basis: the level LP (``max theta``), then the work-conserving LP (total
  normalised throughput, ``theta`` fixed ``stage_tol`` below the level found). A new model's
  work-conserving LP starts from the level optimum's basis by the primal simplex
  (`fairalloc.backends.kept.KeptLP.take_basis`: 20-50 % fewer of its simplex iterations than
  from nothing on Gavel's throughputs, 16-1,000 jobs);
* **the certificate on the original program** (every job, not the classes) computed with
  numpy in ``O(n k)`` without building it: each job's row duals are its class's divided by the
  class size (capacity duals unchanged), and the dual function and both residuals are
  evaluated as `fairalloc.certificates.lp_certificate` does.

What cannot be reused (another type set or other worker counts, a drained type, a job that
cannot run, a failed solve or certificate) raises `fairalloc.plan.Decline` (or a
`fairalloc.SolverError`): `fairalloc.RoundPolicy` runs this as the first strategy of a plan
whose second is the normal round, so the hand-over is in ``stats.fallbacks``
(``"incremental->round: <reason>"``). A `fairalloc.RoundPolicy` given solve options other
than tolerances (``method=``, ``backend=``, ``work_conserving=``, ...) never uses it
(`IncrementalMaxMin.applies`).

Examples
--------
>>> import fairalloc as fa
>>> p = fa.RoundPolicy("max_min_fairness")
>>> r1 = p.allocate({"a": {"x": 1.0, "y": 2.0}, "b": {"x": 3.0, "y": 1.0}}, {"x": 1, "y": 1})
>>> r2 = p.allocate({"a": {"x": 1.0, "y": 2.0}, "c": {"x": 2.0, "y": 2.0}}, {"x": 1, "y": 1})
>>> r1.stats.method, r2.stats.method, r2.certificate.ok
('incremental', 'incremental+warm', True)
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from .._symmetry import exact_classes
from .._validation import as_tolerance
from ..errors import SolverError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate, SolveStats, Status
from ..solvelog import SolveLog
from ..tolerances import FEAS_TOL, GAP_TOL
from .result import RoundResult

__all__ = ["INCREMENTAL_OPTIONS", "IncrementalMaxMin"]

#: the solve options an incremental round honours (tolerances); any other declines
INCREMENTAL_OPTIONS = ("gap_tol", "feas_tol", "stage_tol")
#: PERFORMANCE: classes whose slot is free for good are compacted away (the model rebuilt)
#: once free slots outnumber used ones by this factor
_COMPACT_RATIO = 2.0
#: per-job data max-min fairness does not read, which the normal round still validates
_UNREAD = ("steps_remaining", "elapsed", "isolated_elapsed")
_INF = float("inf")


class IncrementalMaxMin:
    """The kept HiGHS model of a max-min fairness round and its symmetry classes.

    `solve` answers one round (a `fairalloc.RoundResult`, certified on the original program)
    or raises `fairalloc.plan.Decline` / `fairalloc.SolverError` (the caller hands over).
    """

    def __init__(self) -> None:
        self.clear()

    def __getstate__(self) -> dict[str, Any]:
        return {}  # a copy (or a pickled policy) builds its own model: HiGHS is not copied

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget the model (the next round builds a new one)."""
        self._hs: tuple[Any, ...] = ()      # the level and work-conserving models
        self._types: tuple[str, ...] = ()
        self._cap = np.zeros(0)
        self._slot: dict[bytes, int] = {}    # class key -> slot
        self._count = np.zeros(0)            # members of each slot's class (0: free)
        self._sf = np.zeros(0)               # its scale factor
        self._free: list[int] = []

    # --- the models ---------------------------------------------------------------------------
    def _new_model(self, tnames: tuple[str, ...], cap: np.ndarray) -> None:
        """The two stages' models (equal rows and columns; each keeps its own basis): column
        0 is ``theta`` (the level stage maximises it), rows ``0 .. k-1`` the capacity rows."""
        from ..backends.kept import KeptLP

        self.clear()
        k = cap.size
        models = []
        for cost in (1.0, 0.0):
            lp = KeptLP()
            lp.add_cols(np.array([cost]), np.zeros(1), np.full(1, _INF),
                        np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
            lp.add_rows(np.full(k, -_INF), cap.astype(float), np.zeros(k, dtype=np.int32),
                        np.zeros(0, dtype=np.int32), np.zeros(0))
            models.append(lp)
        self._hs, self._types, self._cap = tuple(models), tnames, cap.copy()

    def _col(self, s: int, t: int) -> int:
        return 1 + s * self._cap.size + t

    def _append(self, Ta: np.ndarray, sf: np.ndarray, coef: np.ndarray, g: np.ndarray,
                count: np.ndarray) -> None:
        """New slots for classes (one member's allowed rates ``Ta`` per row, its scale factor,
        level coefficient, work-conserving objective and members), built in one call per
        model. Slot ``s``'s columns are its class's *total* time on each type (``count`` times
        a member's), so a class that changes size changes two numbers: the bound of its time
        row ``k + 2 s`` (``<= count``) and the ``theta`` coefficient of its level row
        ``k + 2 s + 1`` (``coef T . X - count theta >= 0``)."""
        k = self._cap.size
        m = count.size
        first = self._count.size
        at = np.arange(m, dtype=np.int32)
        lower = np.column_stack([np.full(m, -_INF), np.zeros(m)]).ravel()
        upper = np.column_stack([count, np.full(m, _INF)]).ravel()
        # column (s, t): capacity row t (scale factor), time row (1), level row
        row_t = np.broadcast_to(np.arange(k, dtype=np.int32), (m, k))
        time_row = np.broadcast_to((k + 2 * (first + at))[:, None], (m, k)).astype(np.int32)
        index = np.stack([row_t, time_row, time_row + 1], axis=2).reshape(-1)
        value = np.stack([np.broadcast_to(sf[:, None], (m, k)), np.ones((m, k)),
                          coef[:, None] * Ta], axis=2).reshape(-1)
        ncol = m * k
        starts = np.arange(0, 3 * ncol, 3, dtype=np.int32)
        col_upper = np.where(Ta > 0, _INF, 0.0).ravel()
        for lp, cost in zip(self._hs, (np.zeros(ncol), g.ravel()), strict=True):
            lp.add_rows(lower, upper, np.repeat(at, 2), np.zeros(m, dtype=np.int32), -count)
            lp.add_cols(cost, np.zeros(ncol), col_upper, starts, index, value)
        self._count = np.concatenate([self._count, count])
        self._sf = np.concatenate([self._sf, sf])

    def _fill(self, s: int, T: np.ndarray, allowed: np.ndarray, sf: float, coef: float,
              g: np.ndarray, count: float) -> None:
        """Free slot ``s`` takes a class (one member's rates ``T``, its types ``allowed``)."""
        k = self._cap.size
        lev = k + 2 * s + 1
        self._count[s], self._sf[s] = count, sf
        for lp in self._hs:
            for t in range(k):
                c = self._col(s, t)
                lp.change_coeff(lev, c, float(coef * T[t]) if allowed[t] else 0.0)
                lp.change_coeff(t, c, sf)
                lp.change_col_bounds(c, 0.0, _INF if allowed[t] else 0.0)
            lp.change_coeff(lev, 0, -count)
            lp.change_row_bounds(k + 2 * s, -_INF, count)
            lp.change_row_bounds(lev, 0.0, _INF)
        self._hs[1].change_costs(np.arange(self._col(s, 0), self._col(s, k), dtype=np.int32),
                                 np.where(allowed, g, 0.0))

    def _release(self, s: int) -> None:
        k = self._cap.size
        for lp in self._hs:
            for t in range(k):
                lp.change_col_bounds(self._col(s, t), 0.0, 0.0)
            lp.change_row_bounds(k + 2 * s, -_INF, _INF)
            lp.change_row_bounds(k + 2 * s + 1, -_INF, _INF)
        self._count[s] = 0.0
        self._free.append(s)

    def _recount(self, slots: np.ndarray, counts: np.ndarray) -> None:
        """Classes that changed size: their time rows' bounds, their level rows' ``theta``."""
        k = self._cap.size
        self._count[slots] = counts
        rows = (k + 2 * slots).astype(np.int32)
        for lp in self._hs:
            for row, count in zip(rows.tolist(), counts.tolist(), strict=True):
                lp.change_coeff(row + 1, 0, -count)
            lp.change_rows_bounds(rows, np.full(rows.size, -_INF), counts)

    def _run(self, lp: Any, what: str) -> tuple[np.ndarray, np.ndarray, int]:
        try:
            return lp.solve(what)
        except SolverError:
            self.clear()  # (a model HiGHS could not solve is not kept)
            raise

    @staticmethod
    def applies(options: dict[str, Any]) -> bool:
        """Whether a round with these solve options may be incremental (tolerances only: a
        method, backend or stage switch of the caller's is honoured by the normal round)."""
        return all(key in INCREMENTAL_OPTIONS for key in options)

    def round(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
              tnames: tuple[str, ...], per_job: dict[str, Any], options: dict[str, Any],
              normal: Callable[[], RoundResult]) -> RoundResult:
        """A round as a plan (`fairalloc.plan.run_plan`): `solve` (where `applies`), then
        ``normal()`` (the normal round); a hand-over is in ``stats.fallbacks``."""
        def solve(_: None) -> RoundResult:
            unread = [name for name in _UNREAD if per_job.get(name) is not None]
            if unread:
                raise Decline(f"{unread[0]} given (the normal round checks it)")
            return self.solve(t0, T, cap, ids, tnames, per_job["scale_factor"],
                              per_job["weight"], options)

        plan = (Strategy("incremental", solve, _own_certificate,
                         applies=lambda _: self.applies(options), step=False),
                Strategy("round", lambda _: normal(), _own_certificate, exact=True,
                         step=False))
        log = SolveLog()
        res = run_plan(plan, None, log, what="max-min fairness round").result
        if log.fallbacks:
            res = dataclasses.replace(res, stats=dataclasses.replace(
                res.stats, fallbacks=(*log.fallbacks, *res.stats.fallbacks)))
        return res

    # --- one round ----------------------------------------------------------------------------
    def solve(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
              tnames: tuple[str, ...], sf: np.ndarray | None, w: np.ndarray | None,
              options: dict[str, Any]) -> RoundResult:
        """This round (validated throughputs ``T``, workers ``cap``; per-job ``sf`` and ``w``
        in job order, unchecked: a value the normal round would refuse declines)."""
        n, k = T.shape
        if n == 0 or k == 0 or not np.all(cap > 0):
            raise Decline("an empty round or a drained type")
        s = np.ones(n) if sf is None else sf
        wt = np.ones(n) if w is None else w
        if not (np.all(np.isfinite(s)) and np.all(s >= 1) and np.all(s == np.round(s))
                and np.all(np.isfinite(wt)) and np.all(wt > 0)):
            raise Decline("a scale factor or weight the normal round must check")
        allowed = (T > 0) & (s[:, None] <= cap[None, :])
        if not allowed.any(axis=1).all():
            raise Decline("a job that cannot run")
        from ..throughput.policy import STAGE_SHARE_OF_GAP, STAGE_TOL

        gap_tol = as_tolerance(options.get("gap_tol", GAP_TOL), "gap_tol")
        feas_tol = as_tolerance(options.get("feas_tol", FEAS_TOL), "feas_tol")
        stage_tol = min(as_tolerance(options.get("stage_tol", STAGE_TOL), "stage_tol"),
                        STAGE_SHARE_OF_GAP * gap_tol)
        warm = bool(self._hs)
        if warm and (tnames != self._types or not np.array_equal(cap, self._cap)):
            self.clear()
            raise Decline("the worker types or counts changed")
        if warm and len(self._free) > _COMPACT_RATIO * max(len(self._slot), 1):
            warm = False  # mostly free slots (many classes left): a new, compact model
        if not warm:
            self._new_model(tnames, cap)
        Ta = np.where(allowed, T, 0.0)
        equal_tp = Ta @ (cap / cap.sum())
        coef = s / (wt * equal_tp)
        inv, rep, counts, keys = _classes(np.column_stack([T, s, wt]))
        slot_of = np.fromiter(map(self._slot.get, keys, itertools.repeat(-1)),
                              dtype=np.intp, count=len(keys))
        if len(self._slot) > int((slot_of >= 0).sum()):  # classes that left free their slots
            now = set(keys)
            for key in [key for key in self._slot if key not in now]:
                self._release(self._slot.pop(key))
        new = np.flatnonzero(slot_of < 0)
        reuse, fresh = new[: len(self._free)], new[len(self._free):]
        for c in reuse.tolist():  # a free slot takes the class
            slot = self._free.pop()
            slot_of[c] = slot
            self._slot[keys[c]] = slot
            r = int(rep[c])
            self._fill(slot, T[r], allowed[r], float(s[r]), float(coef[r]),
                       Ta[r] / equal_tp[r], float(counts[c]))
        if fresh.size:  # new slots, at the end
            slot_of[fresh] = np.arange(self._count.size, self._count.size + fresh.size)
            self._slot.update(zip([keys[c] for c in fresh.tolist()], slot_of[fresh].tolist()))
            r = rep[fresh]
            self._append(Ta[r], s[r], coef[r], Ta[r] / equal_tp[r][:, None],
                         counts[fresh].astype(float))
        changed = np.flatnonzero(self._count[slot_of] != counts)
        if changed.size:
            self._recount(slot_of[changed], counts[changed].astype(float))
        return self._answer(t0, warm, T, Ta, cap, ids, tnames, s, coef, equal_tp, inv,
                            slot_of,
                            counts, (gap_tol, feas_tol, stage_tol))

    def _answer(self, t0: float, warm: bool, T: np.ndarray, Ta: np.ndarray, cap: np.ndarray,
                ids: tuple[Hashable, ...], tnames: tuple[str, ...], s: np.ndarray,
                coef: np.ndarray, equal_tp: np.ndarray, inv: np.ndarray, slot_of: np.ndarray,
                counts: np.ndarray, tols: tuple[float, float, float]) -> RoundResult:
        k = self._cap.size
        gap_tol, feas_tol, stage_tol = tols
        xv, y1, it1 = self._run(self._hs[0], "level")
        theta = float(xv[0])
        # stage 2: total normalised throughput, every level kept to stage_tol of theta
        low = theta - stage_tol * abs(theta)
        self._hs[1].change_col_bounds(0, low, low)
        if not warm:  # a new model: from the level optimum (primal feasible but for theta's
            # move to low) by the primal simplex, in fewer steps than from nothing (#28)
            self._hs[1].take_basis(self._hs[0])
        xv2, y2, it2 = self._run(self._hs[1], "work-conserving")
        cols = slot_of[inv]  # each job's slot
        # a member's share of its class's total time
        x = xv2[1:].reshape(-1, k)[cols] / counts[inv][:, None]
        x = np.where(Ta > 0, np.maximum(x, 0.0), 0.0)

        def per_job(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            # a class's time and level rows are its members' summed: each member's dual is
            # the class's; HiGHS reports a maximisation's duals (the minimisation's negated)
            yt = y[k:].reshape(-1, 2)[cols]
            return -y[:k], -yt[:, 0], -yt[:, 1]

        cert1, cert2 = _certificates(Ta, s, coef, equal_tp, cap, x, per_job(y1), per_job(y2),
                                     low, gap_tol, feas_tol)
        if not (cert1.ok and cert2.ok):
            bad = cert1 if not cert1.ok else cert2
            self.clear()
            raise Decline(f"the certificate failed (relative gap {bad.relative_gap:.3g}, "
                          f"residual {max(bad.primal_residual, bad.dual_residual):.3g})")
        prices = np.maximum(y1[:k], 0.0)  # d theta / d workers
        tp = (T * x).sum(axis=1)
        for arr in (x, prices, tp):
            arr.flags.writeable = False
        steps = (f"symmetry:{counts.size}", "incremental-lp+warm" if warm else "incremental-lp")
        stats = SolveStats(backend="highs", method="incremental+warm" if warm else "incremental",
                           seconds=time.perf_counter() - t0, iterations=it1 + it2, solves=2,
                           raw_status="Optimal", path=steps, classes=int(counts.size))
        from ..throughput.policy import Allocation

        # the reduced program is the whole round's (every type present, every job runnable)
        red = Allocation(objective=cert1.primal_value, status=Status.OPTIMAL, stats=stats,
                         certificate=cert1, allocation=x, prices=prices,
                         effective_throughput=tp, metric=coef * tp, policy="max_min_fairness",
                         job_ids=tuple(range(len(ids))), types=tnames, pair_x=None,
                         consolidated_x=None, utilization=(s @ x) / cap,
                         stage_certificates=(cert1, cert2))
        return RoundResult(objective=cert1.primal_value, status=Status.OPTIMAL, stats=stats,
                           certificate=cert1, x=x, prices=prices, effective_throughput=tp,
                           job_ids=ids, types=tnames, drained_types=(), unrunnable_jobs=(),
                           policy="max_min_fairness", reduced=red)


def _own_certificate(_: None, res: RoundResult) -> Certificate:
    return res.certificate


def _certificates(Ta: np.ndarray, s: np.ndarray, coef: np.ndarray, equal_tp: np.ndarray,
                  cap: np.ndarray, x: np.ndarray, y1: tuple[np.ndarray, ...],
                  y2: tuple[np.ndarray, ...], low: float, gap_tol: float, feas_tol: float
                  ) -> tuple[Certificate, Certificate]:
    """`fairalloc.certificates.lp_certificate` of both max-min stages on the original program,
    job by job, without building it (``O(n k)``). Level stage: ``min -theta`` s.t. ``sum_t
    x_mt <= 1``, ``sum_m s_m x_mt <= cap_t``, ``coef_m T_m . x_m - theta >= 0``, ``theta``
    free; work-conserving stage: ``min -sum_m T_m . x_m / equal_m`` s.t. the same time and
    capacity rows and ``coef_m T_m . x_m >= low``; columns ``x_mt >= 0`` where job ``m`` may
    run on type ``t`` (``Ta > 0``; none elsewhere). ``y1``, ``y2``: each stage's capacity,
    time and level row duals in the minimisation's signs; ``x`` (non-negative, 0 where a job
    may not run) is the final allocation, at which both are judged."""
    allowed = Ta > 0
    rate = (Ta * x).sum(axis=1)
    level = coef * rate
    busy = x.sum(axis=1)
    used = s @ x
    with np.errstate(invalid="ignore", divide="ignore"):
        base = max(float(np.max((busy - 1.0) / np.maximum(busy, 1.0), initial=0.0)),
                   float(np.max((used - cap) / np.maximum(cap, used), initial=0.0)))
        kept = float(np.max((low - level) / np.maximum(abs(low), level), initial=0.0))
    theta = float(level.min())
    g = Ta / equal_tp[:, None]  # the work-conserving objective (negated), per column
    certs = []
    for y, wc in ((y1, False), (y2, True)):
        y_cap, y_time, y_lev = (np.minimum(y[0], 0.0), np.minimum(y[1], 0.0),
                                np.maximum(y[2], 0.0))
        # minus each column's reduced cost: its objective term and the rows' duals
        neg_d = y_time[:, None] + s[:, None] * y_cap[None, :] + (coef * y_lev)[:, None] * Ta
        rows = float(y_time.sum() + y_cap @ cap)
        if wc:
            neg_d += g
            primal, c_mag = -float((rate / equal_tp).sum()), float(np.max(g, initial=0.0))
            rows += low * float(y_lev.sum())
            d_theta, res = 0.0, max(base, kept)
        else:
            primal, c_mag = -theta, 1.0
            d_theta, res = -1.0 + float(y_lev.sum()), base
        dual_res = max(float(np.max(neg_d, where=allowed, initial=0.0)), abs(d_theta))
        # (every column at its lower bound 0: the columns add nothing to the dual bound)
        certs.append(Certificate(kind="lp", primal_value=-primal, dual_bound=-rows,
                                 gap=max(primal - rows, 0.0), primal_residual=res,
                                 dual_residual=dual_res / c_mag, gap_tol=gap_tol,
                                 feas_tol=feas_tol))
    return certs[0], certs[1]


def _classes(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[bytes]]:
    """Exact classes of the rows of ``data`` (`fairalloc._symmetry.exact_classes`): each
    row's class, a representative row and the size of each class, and each class's key (its
    representative row's bytes, -0.0 read as 0.0), which names its slot across rounds."""
    data = np.ascontiguousarray(data, dtype=float) + 0.0
    cl = exact_classes(data)
    buf = data[cl.representative].tobytes()
    step = data.itemsize * data.shape[1]
    keys = [buf[i: i + step] for i in range(0, len(buf), step)]
    return cl.inverse, cl.representative, cl.counts, keys
