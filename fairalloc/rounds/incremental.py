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
  numpy without building it: every member of a class has its class's data, allocation and row
  duals (a class's rows are its members' summed; capacity duals unchanged), so each job's
  residual and reduced cost is its class's and each sum over the jobs a sum over the classes
  weighted by their sizes (``O(classes k)``); the dual function and both residuals are
  evaluated as `fairalloc.certificates.lp_certificate` does.

Like `fairalloc.solve_round`, a round is solved on its reduced program: the present types (a
drained type, 0 workers, gets nothing and is priced 0) and the runnable jobs (a job that can
run on no present type gets nothing, `fairalloc.RoundResult.unrunnable_jobs`). The kept model
is the reduced program's: other present types or worker counts (a node drained, back or
resized) build a new model in that round (``stats.method == "incremental"``), and the rounds
after it are warm again.

What cannot be answered here (a round where no job can run, a failed solve or certificate)
raises `fairalloc.plan.Decline` (or a `fairalloc.SolverError`): `fairalloc.RoundPolicy` runs
this as the first strategy of a plan whose second is the normal round, so the hand-over is in
``stats.fallbacks`` (``"incremental->round: <reason>"``). Solve options: any tolerance, the
defaults spelled out (``method="auto"``, ``backend="highs"``, ``work_conserving=True``) and
``work_conserving=False`` (the level stage only, one kept model, certified as the normal round
certifies it); any other option (``method="highs"``, a backend object, ``bottleneck_tol=``, ...)
is the normal round's (`IncrementalMaxMin.applies`, `refusal`).

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
from collections.abc import Hashable, Mapping
from typing import Any, NamedTuple

import numpy as np

from .._symmetry import exact_classes
from ..plan import Decline
from ..results import Certificate, SolveStats, Status
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
from .result import RoundResult

__all__ = ["INCREMENTAL_OPTIONS", "UNREAD_ARGUMENTS", "IncrementalMaxMin", "refusal"]

#: the solve options an incremental round honours with any value (tolerances)
INCREMENTAL_OPTIONS = ("gap_tol", "feas_tol", "stage_tol")
#: the solve options it honours with these values only (the normal round's defaults)
_DEFAULT_OPTIONS = {"method": "auto", "backend": "highs"}
#: PERFORMANCE: classes whose slot is free for good are compacted away (the model rebuilt)
#: once free slots outnumber used ones by this factor
_COMPACT_RATIO = 2.0
#: the per-job arguments max-min fairness reads (`fairalloc.rounds.readers.READS`: `fairalloc.Jobs`
#: validates them) that its kept model does not: given, the round is the normal one's, which
#: validates them (`refusal`); the arguments max-min does not read are ignored by both rounds
UNREAD_ARGUMENTS = ("steps_remaining", "elapsed", "isolated_elapsed")
_UNREAD = UNREAD_ARGUMENTS
_INF = float("inf")
#: option value types whose equality (with equal type) means the same validated tolerance
_PLAIN_OPTIONS = (float, int, bool, str)
#: what one kept model is (`IncrementalMaxMin._fits` sets one aside and brings it back)
_MODEL = ("_hs", "_types", "_cap", "_slot", "_count", "_sf", "_free", "_mu")
#: ACCURACY: a model's level rows are kept in units ``mu`` (a power of two) within this factor
#: of the smallest job's best level coefficient ``s max_t T / (w equal_tp)``: the certificate's
#: dual residual is absolute, so a level row of coefficients ~1e-12 (weights 1e12) certified
#: theta 0 (a job starved); ``mu`` is 1 while that coefficient is within the factor of 1
_UNIT_DRIFT = 2.0 ** 10
#: ACCURACY: a round whose jobs' best level coefficients spread over more than this factor is
#: handed to the normal round (no one unit keeps every level row near 1)
_LEVEL_SPREAD = 1e8


class IncrementalMaxMin(KeptRound):
    """The kept HiGHS model of a max-min fairness round and its symmetry classes.

    `solve` answers one round (a `fairalloc.RoundResult`, certified on the original program)
    or raises `fairalloc.plan.Decline` / `fairalloc.SolverError` (the caller hands over);
    `round` (`fairalloc.rounds._kept_round.KeptRound.round`) runs it as a plan.
    """

    _UNREAD = _UNREAD
    _WHAT = "max-min fairness round"

    def clear(self) -> None:
        """Forget the models (the next round builds a new one)."""
        self._forget()
        self._tols: tuple[tuple[Any, ...], tuple[float, float, float]] | None = None
        # the model of the previous present types and worker counts, set aside when they
        # changed (a node drained, then back: its model is warm again)
        self._spare: dict[str, Any] | None = None

    def _forget(self) -> None:
        """Forget the current model (the spare one is kept)."""
        self._hs: tuple[Any, ...] = ()      # the level and work-conserving models
        self._types: tuple[str, ...] = ()
        self._cap = np.zeros(0)
        self._slot: dict[bytes, int] = {}    # class key -> slot
        self._count = np.zeros(0)            # members of each slot's class (0: free)
        self._sf = np.zeros(0)               # its scale factor
        self._free: list[int] = []
        self._mu = 1.0                       # the unit of its level rows (theta / mu is solved)

    # --- the models ---------------------------------------------------------------------------
    def _new_model(self, tnames: tuple[str, ...], cap: np.ndarray, stages: int) -> None:
        """The stages' models (the level stage's, then the work-conserving one's unless
        ``stages`` is 1; equal rows and columns; each keeps its own basis): column 0 is
        ``theta`` (the level stage maximises it), rows ``0 .. k-1`` the capacity rows."""
        self._forget()
        self._hs = new_models(cap, ((1.0, 0.0, _INF), (0.0, 0.0, _INF))[:stages])
        self._types, self._cap = tnames, cap.copy()

    def _fits(self, tnames: tuple[str, ...], cap: np.ndarray) -> bool:
        """Whether the current model is that of these present types and worker counts; when
        it is not, it is set aside as the spare and the spare, if it fits, comes back."""
        def same(types: tuple[str, ...], c: np.ndarray) -> bool:
            return types == tnames and np.array_equal(c, cap)

        if not self._hs or same(self._types, self._cap):
            return bool(self._hs)
        spare, self._spare = self._spare, {name: getattr(self, name) for name in _MODEL}
        if spare is None or not same(spare["_types"], spare["_cap"]):
            return False  # (a new model is built)
        for name, value in spare.items():
            setattr(self, name, value)
        return True

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
        m = count.size
        at = np.arange(m, dtype=np.int32)
        lower = np.column_stack([np.full(m, -_INF), np.zeros(m)]).ravel()
        upper = np.column_stack([count, np.full(m, _INF)]).ravel()
        starts, index, value, col_upper = slot_columns(Ta, sf, coef[:, None] * Ta,
                                                       self._count.size)
        costs = (np.zeros(Ta.size), g.ravel())[: len(self._hs)]
        for lp, cost in zip(self._hs, costs, strict=True):
            lp.add_rows(lower, upper, np.repeat(at, 2), np.zeros(m, dtype=np.int32), -count)
            lp.add_cols(cost, np.zeros(Ta.size), col_upper, starts, index, value)
        self._count = np.concatenate([self._count, count])
        self._sf = np.concatenate([self._sf, sf])

    def _fill(self, s: int, T: np.ndarray, allowed: np.ndarray, sf: float, coef: float,
              g: np.ndarray, count: float) -> None:
        """Free slot ``s`` takes a class (one member's rates ``T``, its types ``allowed``)."""
        k = self._cap.size
        lev = k + 2 * s + 1
        # (a freed slot keeps its coefficients: its capacity ones are its last class's scale
        # factor, unchanged when the new class's is the same)
        same_sf = bool(self._sf[s] == sf)
        self._count[s], self._sf[s] = count, sf
        cols = np.arange(self._col(s, 0), self._col(s, k), dtype=np.int32)
        upper = np.where(allowed, _INF, 0.0)
        for lp in self._hs:
            for t in range(k):
                c = self._col(s, t)
                lp.change_coeff(lev, c, float(coef * T[t]) if allowed[t] else 0.0)
                if not same_sf:
                    lp.change_coeff(t, c, sf)
            lp.change_cols_bounds(cols, np.zeros(k), upper)
            lp.change_coeff(lev, 0, -count)
            lp.change_row_bounds(k + 2 * s, -_INF, count)
            lp.change_row_bounds(lev, 0.0, _INF)
        if len(self._hs) > 1:
            self._hs[1].change_costs(cols, np.where(allowed, g, 0.0))

    def _release(self, slots: list[int]) -> None:
        """Classes that left free their slots (`fairalloc.rounds._kept_round.release_slots`)."""
        release_slots(self._hs, self._cap.size, np.array(slots, dtype=np.intp))
        self._count[slots] = 0.0
        self._free.extend(slots)

    def _recount(self, slots: np.ndarray, counts: np.ndarray) -> None:
        """Classes that changed size: their time rows' bounds, their level rows' ``theta``."""
        k = self._cap.size
        self._count[slots] = counts
        rows = (k + 2 * slots).astype(np.int32)
        for lp in self._hs:
            for row, count in zip(rows.tolist(), counts.tolist(), strict=True):
                lp.change_coeff(row + 1, 0, -count)
            lp.change_rows_bounds(rows, np.full(rows.size, -_INF), counts)

    def _tolerances(self, options: dict[str, Any]) -> tuple[float, float, float]:
        """`fairalloc.rounds._kept_round.round_tolerances`, validated once for options equal
        (value and type) to the previous round's."""
        key = (tuple((name, type(v), v) for name, v in options.items())
               if all(type(v) in _PLAIN_OPTIONS for v in options.values()) else None)
        if key is not None and self._tols is not None and self._tols[0] == key:
            return self._tols[1]
        tols = round_tolerances(options)
        if key is not None:
            self._tols = (key, tols)
        return tols

    @staticmethod
    def applies(options: dict[str, Any], given: Mapping[str, Any] | None = None) -> bool:
        """Whether a round with these solve options (and the arguments ``given``, by name)
        may be incremental (`refusal` is ``None``: tolerances, the defaults spelled out,
        ``work_conserving`` either way, none of `UNREAD_ARGUMENTS` given)."""
        return refusal(options, given) is None

    def _tries(self, options: dict[str, Any]) -> bool:
        return self.applies(options)

    def _solve(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
               tnames: tuple[str, ...], per_job: dict[str, Any], options: dict[str, Any]
               ) -> RoundResult:
        return self.solve(t0, T, cap, ids, tnames, per_job["scale_factor"], per_job["weight"],
                          options)

    # --- one round ----------------------------------------------------------------------------
    def solve(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
              tnames: tuple[str, ...], sf: np.ndarray | None, w: np.ndarray | None,
              options: dict[str, Any]) -> RoundResult:
        """This round (validated throughputs ``T``, workers ``cap``; per-job ``sf`` and ``w``
        in job order, unchecked: a value the normal round would refuse declines).

        As `fairalloc.solve_round`, the round is solved on its reduced program: the present
        types (a drained type, 0 workers, is left out and priced 0) and the runnable jobs (a
        job whose gang fits no present type it can use gets nothing); the kept model is the
        reduced program's, so a cluster with a drained node keeps its warm rounds."""
        n, k = T.shape
        s = np.ones(n) if sf is None else sf
        wt = np.ones(n) if w is None else w
        if not (np.all(np.isfinite(s)) and np.all(s >= 1) and np.all(s == np.round(s))
                and np.all(np.isfinite(wt)) and np.all(wt > 0)):
            raise Decline("a scale factor or weight the normal round must check")
        # the exact classes first: what follows is computed once per class, not per job
        cl = _classes(T, s, wt)
        # (s >= 1: a drained type, 0 workers, allows no job)
        Tc, sc = T[cl.rep], s[cl.rep]
        allowed_c = (Tc > 0) & (sc[:, None] <= cap[None, :])
        runnable_c = allowed_c.any(axis=1)
        if not runnable_c.any():
            raise Decline("an empty round (no job can run on a present type)")
        tols = self._tolerances(options)
        present = cap > 0
        stages = 2 if bool(options.get("work_conserving", True)) else 1
        pt = None if present.all() else np.flatnonzero(present)
        rj = None if runnable_c.all() else np.flatnonzero(runnable_c[cl.inv])
        if pt is None and rj is None:  # (the reduced program is the round's own)
            red = self._reduced(t0, cl, Tc, sc, wt[cl.rep], allowed_c, cap, tnames, tols,
                                stages)
        else:  # its jobs and types, then their classes (jobs that differ on a drained type
            # only are one class of the reduced program)
            Tr, sr, wr, cr, tr = T, s, wt, cap, tnames
            if pt is not None:
                Tr, cr = Tr[:, pt], cap[pt]
                tr = tuple(tnames[i] for i in pt.tolist())
            if rj is not None:
                Tr, sr, wr = Tr[rj], sr[rj], wr[rj]
            cr_ = _classes(Tr, sr, wr)
            Trc, src = Tr[cr_.rep], sr[cr_.rep]
            red = self._reduced(t0, cr_, Trc, src, wr[cr_.rep],
                                (Trc > 0) & (src[:, None] <= cr[None, :]), cr, tr, tols,
                                stages)
        runnable = runnable_c[cl.inv] if rj is not None else None
        x, prices, tp = red.allocation, red.prices, red.effective_throughput
        if pt is not None or rj is not None:  # zeros for what cannot run (as solve_round)
            rows = np.arange(n) if rj is None else rj
            cols = np.arange(k) if pt is None else pt
            x = np.zeros((n, k))
            x[np.ix_(rows, cols)] = red.allocation
            prices = np.zeros(k)
            prices[cols] = red.prices
            tp = np.zeros(n)
            tp[rows] = red.effective_throughput
            for arr in (x, prices, tp):
                arr.flags.writeable = False
        drained = () if pt is None else tuple(t for t, p in zip(tnames, present.tolist())
                                               if not p)
        unrunnable = () if runnable is None else tuple(
            ids[i] for i in np.flatnonzero(~runnable).tolist())
        return RoundResult(objective=red.objective, status=Status.OPTIMAL, stats=red.stats,
                           certificate=red.certificate, x=x, prices=prices,
                           effective_throughput=tp, job_ids=ids, types=tnames,
                           drained_types=drained, unrunnable_jobs=unrunnable,
                           policy="max_min_fairness", reduced=red)

    def _reduced(self, t0: float, cl: _Classes, T: np.ndarray, s: np.ndarray, wt: np.ndarray,
                 allowed: np.ndarray, cap: np.ndarray, tnames: tuple[str, ...],
                 tols: tuple[float, float, float], stages: int) -> Any:
        """The reduced program's round (every type present, every job runnable) on the kept
        model (``stages``: 2 with the work-conserving stage, 1 without): its
        `fairalloc.throughput.Allocation`, certified on the whole reduced program. ``cl``: the
        jobs' exact classes; ``T`` .. ``allowed``: one member's data per class."""
        Ta = np.where(allowed, T, 0.0)
        equal_tp = Ta @ (cap / cap.sum())
        coef = s / (wt * equal_tp)
        best = coef * Ta.max(axis=1)  # each class's level coefficient on its best type
        low, high = float(best.min()), float(best.max())
        if not high <= _LEVEL_SPREAD * low:
            raise Decline(f"level coefficients spread over {high / low:.3g} (weights or rates "
                          "far apart): the normal round scales them")
        warm = self._fits(tnames, cap) and len(self._hs) == stages
        if warm and len(self._free) > _COMPACT_RATIO * max(len(self._slot), 1):
            warm = False  # mostly free slots (many classes left): a new, compact model
        if warm and not 1.0 / _UNIT_DRIFT <= low / self._mu <= _UNIT_DRIFT:
            warm = False  # the level rows far from the model's unit: a new model
        if not warm:
            self._new_model(tnames, cap, stages)
            if not 1.0 / _UNIT_DRIFT <= low <= _UNIT_DRIFT:
                self._mu = float(2.0 ** np.round(np.log2(low)))
        coef = coef / self._mu  # (a power of two: exact) the model's units
        keys, counts = cl.keys, cl.counts
        slot_of = np.fromiter(map(self._slot.get, keys, itertools.repeat(-1)),
                              dtype=np.intp, count=len(keys))
        if len(self._slot) > int((slot_of >= 0).sum()):  # classes that left free their slots
            now = set(keys)
            self._release([self._slot.pop(key) for key in
                           [key for key in self._slot if key not in now]])
        new = np.flatnonzero(slot_of < 0)
        reuse, fresh = new[: len(self._free)], new[len(self._free):]
        for c in reuse.tolist():  # a free slot takes the class
            slot = self._free.pop()
            slot_of[c] = slot
            self._slot[keys[c]] = slot
            self._fill(slot, T[c], allowed[c], float(s[c]), float(coef[c]), Ta[c] / equal_tp[c],
                       float(counts[c]))
        if fresh.size:  # new slots, at the end
            slot_of[fresh] = np.arange(self._count.size, self._count.size + fresh.size)
            self._slot.update(zip([keys[c] for c in fresh.tolist()], slot_of[fresh].tolist()))
            self._append(Ta[fresh], s[fresh], coef[fresh], Ta[fresh] / equal_tp[fresh][:, None],
                         counts[fresh].astype(float))
        m = counts.astype(float)
        changed = np.flatnonzero(self._count[slot_of] != m)
        if changed.size:
            self._recount(slot_of[changed], m[changed])
        return self._answer(t0, warm, T, Ta, cap, tnames, s, coef, equal_tp, m, slot_of, cl.inv,
                            tols, self._mu)

    def _answer(self, t0: float, warm: bool, T: np.ndarray, Ta: np.ndarray, cap: np.ndarray,
                tnames: tuple[str, ...], s: np.ndarray, coef: np.ndarray,
                equal_tp: np.ndarray, m: np.ndarray, slot_of: np.ndarray, inv: np.ndarray,
                tols: tuple[float, float, float], mu: float) -> Any:
        """Both stages re-solved, certified and expanded to the jobs. ``T`` .. ``equal_tp``:
        one member's data per class (every member's are these very numbers; ``coef`` in the
        model's units ``mu``), ``m`` the members, ``slot_of`` each class's slot, ``inv`` each
        job's class."""
        k = cap.size
        gap_tol, feas_tol, stage_tol = tols
        xv2, y1, it1 = self._run(self._hs[0], "level")
        theta = float(xv2[0])
        low, y2, it2 = theta, None, 0
        if len(self._hs) > 1:
            # stage 2: total normalised throughput, every level kept to stage_tol of theta
            low = theta - stage_tol * abs(theta)
            self._hs[1].change_cols_bounds(np.zeros(1, np.int32), np.full(1, low), np.full(1, low))
            if not warm:  # a new model: from the level optimum (primal feasible but for
                # theta's move to low) by the primal simplex, in fewer steps than from nothing
                self._hs[1].take_basis(self._hs[0])
            xv2, y2, it2 = self._run(self._hs[1], "work-conserving")
        # a member's share of its class's total time (each member gets the same)
        xc = xv2[1:].reshape(-1, k)[slot_of] / m[:, None]
        xc = np.where(Ta > 0, np.maximum(xc, 0.0), 0.0)

        # a class's time and level rows are its members' summed: each member's dual is the
        # class's (`fairalloc.rounds._kept_round.row_duals`: in the minimisation's signs)
        certs = _certificates(Ta, s, coef, equal_tp, m, cap, xc, row_duals(y1, slot_of, k),
                              None if y2 is None else row_duals(y2, slot_of, k), low, gap_tol,
                              feas_tol)
        if mu != 1.0:  # the level stage's values back in units of theta (residuals: unit)
            certs = (dataclasses.replace(certs[0], primal_value=certs[0].primal_value * mu,
                                         dual_bound=certs[0].dual_bound * mu,
                                         gap=certs[0].gap * mu), *certs[1:])
        cert1 = certs[0]
        if not all(c.ok for c in certs):
            self.clear()
            raise decline_failed(next(c for c in certs if not c.ok))
        prices = np.maximum(y1[:k], 0.0)  # d theta / d workers
        tpc = (T * xc).sum(axis=1)
        x, tp = xc[inv], tpc[inv]
        for arr in (x, prices, tp):
            arr.flags.writeable = False
        steps = (f"symmetry:{m.size}", "incremental-lp+warm" if warm else "incremental-lp")
        stats = SolveStats(backend="highs", method="incremental+warm" if warm else "incremental",
                           seconds=time.perf_counter() - t0, iterations=it1 + it2,
                           solves=len(self._hs),
                           raw_status="Optimal", path=steps, classes=int(m.size))
        from ..throughput.policy import Allocation

        return Allocation(objective=cert1.primal_value, status=Status.OPTIMAL, stats=stats,
                          certificate=cert1, allocation=x, prices=prices,
                          effective_throughput=tp, metric=(mu * coef * tpc)[inv],
                          policy="max_min_fairness", job_ids=tuple(range(inv.size)),
                          types=tnames, pair_x=None, consolidated_x=None,
                          utilization=((m * s) @ xc) / cap, stage_certificates=certs)


def refusal(options: dict[str, Any], given: Mapping[str, Any] | None = None) -> str | None:
    """Why an incremental round cannot honour these solve options exactly (``None``: it can).

    It honours any tolerance, ``work_conserving`` either way (``False``: the level stage
    only) and the other options at their defaults (``method="auto"``, ``backend="highs"``);
    anything else (another method or backend, water-filling's options) is the normal round's,
    which also validates it, as is a round given (``given``: `fairalloc.solve_round`'s
    arguments by name, ``None`` where not given) any of `UNREAD_ARGUMENTS`.

    Examples
    --------
    >>> refusal({"work_conserving": False, "method": "auto", "gap_tol": 1e-6}) is None
    True
    >>> refusal({"method": "highs"})
    "method='highs' (the normal round honours it)"
    >>> refusal({}, {"weight": [1.0], "elapsed": [3.0]})
    'elapsed given (the normal round checks it)'
    """
    for key, value in options.items():
        if key in INCREMENTAL_OPTIONS or (key == "work_conserving" and isinstance(
                value, bool | np.bool_)):
            continue
        default = _DEFAULT_OPTIONS.get(key)
        if default is None or not isinstance(value, str) or value != default:
            return f"{key}={value!r} (the normal round honours it)"
    unread = [name for name in UNREAD_ARGUMENTS if (given or {}).get(name) is not None]
    return f"{unread[0]} given (the normal round checks it)" if unread else None


def _certificates(Ta: np.ndarray, s: np.ndarray, coef: np.ndarray, equal_tp: np.ndarray,
                  m: np.ndarray, cap: np.ndarray, x: np.ndarray, y1: tuple[np.ndarray, ...],
                  y2: tuple[np.ndarray, ...] | None, low: float, gap_tol: float, feas_tol: float
                  ) -> tuple[Certificate, ...]:
    """`fairalloc.certificates.lp_certificate` of both max-min stages on the original program,
    without building it. Level stage: ``min -theta`` s.t. ``sum_t x_jt <= 1``, ``sum_j s_j
    x_jt <= cap_t``, ``coef_j T_j . x_j - theta >= 0``, ``theta`` free; work-conserving stage:
    ``min -sum_j T_j . x_j / equal_j`` s.t. the same time and capacity rows and ``coef_j T_j .
    x_j >= low``; columns ``x_jt >= 0`` where job ``j`` may run on type ``t`` (``Ta > 0``; none
    elsewhere).

    The rows here are the exact classes, ``m`` members each: every member of a class has the
    class's data, allocation ``x`` (non-negative, 0 where it may not run: the final
    allocation, at which both stages are judged) and row duals ``y1``, ``y2`` (capacity, time
    and level, in the minimisation's signs), so each job's residual and reduced cost is its
    class's, bit for bit, and each sum over the jobs is the sum over the classes weighted by
    ``m`` (``O(classes k)``, not ``O(n k)``; `fairalloc.rounds._kept_round.lagrangian`). ``y2``
    ``None``: the level stage's only."""
    rate = (Ta * x).sum(axis=1)
    level = coef * rate
    kept = kept_residual(low, level)
    base = residual(s, cap, x, m)
    theta = float(level.min())
    g = Ta / equal_tp[:, None]  # the work-conserving objective (negated), per column
    certs = []
    stages = [(y1, False)] if y2 is None else [(y1, False), (y2, True)]
    for y, wc in stages:
        y_lev = y[2]
        part = lagrangian(Ta, s, cap, (y[0], y[1], coef * y_lev), g=g if wc else None,
                          members=m)
        rows = float(part.rows)
        if wc:
            primal, c_mag = -float(m @ (rate / equal_tp)), float(np.max(g, initial=0.0))
            rows += low * float(m @ y_lev)
            d_theta, res = 0.0, max(base, kept)
        else:
            primal, c_mag = -theta, 1.0
            d_theta, res = -1.0 + float(m @ y_lev), base
        dual_res = max(part.columns, abs(d_theta))
        # (every column at its lower bound 0: the columns add nothing to the dual bound)
        certs.append(Certificate(kind="lp", primal_value=-primal, dual_bound=-rows,
                                 gap=max(primal - rows, 0.0), primal_residual=res,
                                 dual_residual=dual_res / c_mag, gap_tol=gap_tol,
                                 feas_tol=feas_tol))
    return tuple(certs)


class _Classes(NamedTuple):
    """The exact classes of a round's jobs (`_classes`)."""

    inv: np.ndarray     # each job's class
    rep: np.ndarray     # each class's first job (classes in order of first appearance)
    counts: np.ndarray  # each class's members
    keys: list[bytes]   # each class's key: its row's bytes (-0.0 read as 0.0), naming its slot


def _classes(T: np.ndarray, s: np.ndarray, wt: np.ndarray) -> _Classes:
    """The exact classes of the jobs (equal throughput row, scale factor and weight:
    `fairalloc._symmetry.exact_classes` on ``(T, s, wt)``) with each class's row as bytes (its
    key in the kept models). The data are finite (validated by the round)."""
    data = np.column_stack([T, s, wt]) + 0.0
    ex = exact_classes(data)
    inv, rep, counts = ex.inverse, ex.representative, ex.counts
    buf = data[rep].tobytes()
    step = data.itemsize * data.shape[1]
    keys = [buf[i: i + step] for i in range(0, len(buf), step)]
    return _Classes(inv, rep, counts, keys)
