"""What the two incremental warm rounds share (`fairalloc.rounds.incremental`, max-min over
exact symmetry classes, and `fairalloc.rounds.incremental_ftf`, finish-time fairness one slot
per job).

* `KeptRound`, their base: kept HiGHS models that a copy (or a pickled policy) does not carry,
  a solve that forgets a model HiGHS could not solve, and a round as a plan (the incremental
  round first, the normal round as its fallback, the hand-over in ``stats.fallbacks``);
* the slot layout of their models (`new_models`, `slot_columns`, `release_slots`, `row_duals`):
  column 0 is ``theta``, rows ``0 .. k-1`` the capacity rows; slot ``s`` owns columns ``1 + s k
  + t``, its time row ``k + 2 s`` and its level (throughput) row ``k + 2 s + 1``;
* `lagrangian`, the ``O(slots k)`` parts of `fairalloc.certificates.lp_certificate` that every
  stage of both rounds shares, on the original program without building it.

Examples
--------
>>> import numpy as np
>>> Ta, s, cap = np.array([[1.0, 2.0]]), np.ones(1), np.ones(2)
>>> part = lagrangian(Ta, s, cap, (np.zeros(2), np.array([-2.0]), np.array([1.0])))
>>> float(part.rows), part.columns, residual(s, cap, np.array([[0.0, 1.0]]))
(-2.0, 0.0, 0.0)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._validation import as_tolerance
from ..errors import SolverError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate
from ..solvelog import SolveLog
from ..tolerances import FEAS_TOL, GAP_TOL
from .result import RoundResult

__all__ = ["KeptRound", "Lagrangian", "decline_failed", "kept_residual", "lagrangian",
           "new_models", "release_slots", "residual", "round_tolerances", "row_duals",
           "slot_columns"]

_INF = float("inf")


class KeptRound:
    """Base of an incremental round: its HiGHS models are not copied, a failed solve forgets
    them (`_discard`), and `round` runs the incremental round then the normal one as a plan.

    A subclass sets ``_UNREAD`` (per-job data it does not read: given, the normal round
    checks it), ``_WHAT`` (the plan's name) and defines `clear`, `_discard`, `_tries` and
    `_solve`.
    """

    _UNREAD: tuple[str, ...] = ()
    _WHAT = "round"

    def __init__(self) -> None:
        self.clear()

    def __getstate__(self) -> dict[str, Any]:
        return {}  # a copy (or a pickled policy) builds its own model: HiGHS is not copied

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.clear()

    def clear(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _discard(self) -> None:
        """What a model HiGHS could not solve costs (by default: everything, `clear`)."""
        self.clear()

    def _tries(self, options: dict[str, Any]) -> bool:  # pragma: no cover - abstract
        """Whether this round with these solve options is tried incrementally."""
        raise NotImplementedError

    def _solve(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Any, ...],
               tnames: tuple[str, ...], per_job: dict[str, Any], options: dict[str, Any]
               ) -> RoundResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def _run(self, lp: Any, what: str) -> tuple[np.ndarray, np.ndarray, int]:
        """``lp.solve(what)``; a model HiGHS could not solve is not kept."""
        try:
            return lp.solve(what)
        except SolverError:
            self._discard()
            raise

    def round(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Any, ...],
              tnames: tuple[str, ...], per_job: dict[str, Any], options: dict[str, Any],
              normal: Callable[[], RoundResult]) -> RoundResult:
        """A round as a plan (`fairalloc.plan.run_plan`): the incremental round (where it is
        tried), then ``normal()`` (the normal round); a hand-over is in ``stats.fallbacks``."""
        def solve(_: None) -> RoundResult:
            unread = [name for name in self._UNREAD if per_job.get(name) is not None]
            if unread:
                raise Decline(f"{unread[0]} given (the normal round checks it)")
            return self._solve(t0, T, cap, ids, tnames, per_job, options)

        plan = (Strategy("incremental", solve, _own_certificate,
                         applies=lambda _: self._tries(options), step=False),
                Strategy("round", lambda _: normal(), _own_certificate, exact=True,
                         step=False))
        log = SolveLog()
        res = run_plan(plan, None, log, what=self._WHAT).result
        if log.fallbacks:
            res = dataclasses.replace(res, stats=dataclasses.replace(
                res.stats, fallbacks=(*log.fallbacks, *res.stats.fallbacks)))
        return res


def _own_certificate(_: None, res: RoundResult) -> Certificate:
    return res.certificate


def round_tolerances(options: dict[str, Any]) -> tuple[float, float, float]:
    """``(gap_tol, feas_tol, stage_tol)`` of a round's solve options, as the normal round reads
    them (``stage_tol`` at most `fairalloc.throughput.policy.STAGE_SHARE_OF_GAP` of the gap)."""
    from ..throughput.policy import STAGE_SHARE_OF_GAP, STAGE_TOL

    gap_tol = as_tolerance(options.get("gap_tol", GAP_TOL), "gap_tol")
    feas_tol = as_tolerance(options.get("feas_tol", FEAS_TOL), "feas_tol")
    stage_tol = min(as_tolerance(options.get("stage_tol", STAGE_TOL), "stage_tol"),
                    STAGE_SHARE_OF_GAP * gap_tol)
    return gap_tol, feas_tol, stage_tol


# --- the models' slot layout -------------------------------------------------------------------
def new_models(cap: np.ndarray, thetas: Sequence[tuple[float, float, float]]) -> tuple[Any, ...]:
    """One `fairalloc.backends.kept.KeptLP` per ``(cost, lower, upper)`` of ``theta`` (column
    0), each with the capacity rows ``0 .. k-1`` (``<= cap``) and no slot yet."""
    from ..backends.kept import KeptLP

    k = cap.size
    models = []
    for cost, low, up in thetas:
        lp = KeptLP()
        lp.add_cols(np.array([cost]), np.array([low]), np.array([up]),
                    np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        lp.add_rows(np.full(k, -_INF), cap.astype(float), np.zeros(k, dtype=np.int32),
                    np.zeros(0, dtype=np.int32), np.zeros(0))
        models.append(lp)
    return tuple(models)


def slot_columns(Ta: np.ndarray, sf: np.ndarray, level: np.ndarray, first: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The columns of new slots ``first, first + 1, ..`` (one per row of ``Ta``, the allowed
    rates), column-wise for `KeptLP.add_cols`: ``(starts, index, value, upper)``. Column
    ``(s, t)`` has ``sf_s`` in capacity row ``t``, 1 in its time row and ``level[s, t]`` in
    its level row; its upper bound is 0 where the slot's job may not run on ``t``."""
    m, k = Ta.shape
    at = np.arange(m, dtype=np.int32)
    row_t = np.broadcast_to(np.arange(k, dtype=np.int32), (m, k))
    time_row = np.broadcast_to((k + 2 * (first + at))[:, None], (m, k)).astype(np.int32)
    index = np.stack([row_t, time_row, time_row + 1], axis=2).reshape(-1)
    value = np.stack([np.broadcast_to(sf[:, None], (m, k)), np.ones((m, k)), level],
                     axis=2).reshape(-1)
    starts = np.arange(0, 3 * m * k, 3, dtype=np.int32)
    return starts, index, value, np.where(Ta > 0, _INF, 0.0).ravel()


def release_slots(models: Sequence[Any], k: int, slots: np.ndarray) -> None:
    """Free slots in every model: their columns fixed at 0, their time and level rows free."""
    slots = np.asarray(slots, dtype=np.int64)
    rows = np.concatenate([k + 2 * slots, k + 2 * slots + 1]).astype(np.int32)
    cols = (1 + slots[:, None] * k + np.arange(k)).astype(np.int32).ravel()  # (s, t)
    zeros = np.zeros(cols.size)
    for lp in models:
        lp.change_cols_bounds(cols, zeros, zeros)
        lp.change_rows_bounds(rows, np.full(rows.size, -_INF), np.full(rows.size, _INF))


def row_duals(y: np.ndarray, slot_of: np.ndarray, k: int, lam: float = 1.0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Capacity, time and level row duals per slot user (``slot_of``), projected onto the
    minimisation's signs (HiGHS reports a maximisation's: ``d objective / d bound``, the
    minimisation's negated); a level row stored divided by ``lam`` has dual ``y / lam``."""
    ys = y[k:].reshape(-1, 2)[slot_of]
    return (np.minimum(-y[:k], 0.0), np.minimum(-ys[:, 0], 0.0),
            np.maximum(-ys[:, 1], 0.0) / lam)


# --- the certificate's shared parts ------------------------------------------------------------
class Lagrangian(NamedTuple):
    """The dual parts of `fairalloc.certificates.lp_certificate` every stage shares."""

    rows: float       # the time and capacity rows' part of the dual function
    columns: float    # the columns' dual residual (absolute): max -reduced cost where allowed


def lagrangian(Ta: np.ndarray, s: np.ndarray, cap: np.ndarray,
               duals: tuple[np.ndarray, np.ndarray, np.ndarray], *,
               g: np.ndarray | None = None, members: np.ndarray | None = None) -> Lagrangian:
    """The shared dual parts of the certificate of an LP over jobs ``j`` (columns ``x_jt >= 0``
    where ``Ta > 0``, none elsewhere) with time rows ``sum_t x_jt <= 1``, capacity rows ``sum_j
    s_j x_jt <= cap_t`` and one level row per job whose entries are ``Ta_j`` times a factor
    (``min -g . x`` plus the ``theta`` column, which the caller prices), in ``O(rows k)``;
    the primal side is `residual` (and `kept_residual` for kept rows).

    ``duals``: capacity, time and level-row multipliers in the minimisation's signs, the last
    already times the row's factor. ``members``: each row stands for this many jobs of equal
    data, allocation and duals (an exact symmetry class: every sum over the jobs is the sum
    over the rows weighted by it; ``None``: one job each). The caller adds its level rows'
    bounds to ``rows`` and its ``theta`` column's reduced cost to ``columns``."""
    y_cap, y_time, y_row = duals
    neg_d = y_time[:, None] + s[:, None] * y_cap[None, :] + y_row[:, None] * Ta
    if g is not None:
        neg_d += g
    time_sum = y_time.sum() if members is None else members @ y_time
    return Lagrangian(rows=time_sum + y_cap @ cap,
                      columns=float(np.max(neg_d, where=Ta > 0, initial=0.0)))


def residual(s: np.ndarray, cap: np.ndarray, x: np.ndarray, members: np.ndarray | None = None
             ) -> float:
    """Relative violation of the time and capacity rows at ``x`` (``cap > 0``; ``members`` as
    in `lagrangian`)."""
    busy = x.sum(axis=1)
    used = (s if members is None else members * s) @ x
    return max(float(np.max((busy - 1.0) / np.maximum(busy, 1.0), initial=0.0)),
               float(np.max((used - cap) / np.maximum(cap, used), initial=0.0)))


def kept_residual(low: np.ndarray | float, level: np.ndarray) -> float:
    """Relative violation of kept rows ``level >= low``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.max((low - level) / np.maximum(np.abs(low), level), initial=0.0))


def decline_failed(cert: Certificate) -> Decline:
    """The `fairalloc.plan.Decline` of a certificate that failed."""
    return Decline(f"the certificate failed (relative gap {cert.relative_gap:.3g}, "
                   f"residual {max(cert.primal_residual, cert.dual_residual):.3g})")
