"""The Themis auction round and the Shockwave re-plan behind `fairalloc.RoundPolicy`.

Both solve the *reduced* round (runnable jobs, present worker types) that
`fairalloc.solve_round` hands them and return a
`fairalloc.rounds.mechanisms.ReducedRound`
whose allocation it expands with zeros.

* **Themis** (``"themis"``; Themis §3.3, the simulator's
  `fairalloc.sim.policies.themis.ThemisPolicy` for one round): every runnable
  job's finish-time fairness on type ``j``, ``rho_ij = (t_i + steps_i / T_ij) / D_i`` (``D_i``
  its isolated finish time, as `fairalloc.throughput.FinishTimeFairness`; across rounds
  `fairalloc.RoundPolicy` carries each job's isolated time as for its finish-time fairness
  rounds, `fairalloc.rounds.state.IsolatedTime`),
  ranks the jobs by ``min_j rho_ij``; the ``max(1, ceil((1 - f) N))`` furthest from fairness
  bid for their gang on one type (valuation ``1/rho_ij``, nothing without it) in an exact
  partial-allocation auction of the workers (the lexicographic Nash-welfare MILP of
  `fairalloc.auctions` over worker counts: workers of a type are
  interchangeable, so the count program is the GPU set-packing program). A winner runs its gang
  on its type for the fraction ``c_i`` of the round (``x_ij = c_i``); the leftover worker time
  (the hidden payments and what nobody won) goes to the jobs that did not bid, furthest from
  fairness first, each on its best type with room, then to the bidders. ``prices`` are the
  hidden payments: worker time of each type withheld from the winners. The certificate is the
  auction's (kind ``"milp"``).
* **Shockwave** (``"shockwave"``; Shockwave §4-6, the simulator's
  `fairalloc.sim.policies.shockwave.ShockwavePolicy`): the window plan
  `fairalloc.plan_schedule` of the runnable jobs' `fairalloc.PlanJob`
  on the one present worker type; the round runs the plan's current column (``x = 1``: the job
  runs on its gang this round). `fairalloc.RoundPolicy` keeps the plan and
  re-plans every ``replan_every`` rounds, when the window is used up, or when the runnable jobs
  or the workers change. ``prices`` are 0 (a MILP plan has no capacity prices).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_finite_float
from ..errors import InputError
from ..results import Certificate, SolveStats, Status

__all__ = ["ReducedRound", "solve_shockwave", "solve_themis"]

#: worker time below this (relative to a type's workers) is not handed out as leftover
LEFTOVER_TOL = 1e-12


@dataclass(frozen=True)
class ReducedRound:
    """The solved reduced round (runnable jobs by present types) of Themis or Shockwave.

    ``detail`` is the mechanism's own result: the auction outcome (Themis) or the
    `fairalloc.PlanResult` (Shockwave); ``column`` the plan column this round
    runs (Shockwave; ``-1`` for Themis).
    """

    x: np.ndarray
    prices: np.ndarray
    effective_throughput: np.ndarray
    objective: float
    status: Status
    stats: SolveStats
    certificate: Certificate
    detail: Any = None
    column: int = -1
    bidders: tuple[int, ...] = ()
    fraction: np.ndarray | None = None


# --------------------------------------------------------------------------------------------
# Themis
# --------------------------------------------------------------------------------------------
def _rho(T: np.ndarray, sf: np.ndarray, cap: np.ndarray, steps: np.ndarray | None,
         elapsed: np.ndarray | None, isolated_elapsed: np.ndarray | None) -> np.ndarray:
    """``rho[i, j]``: job ``i``'s finish-time fairness if it ran its gang on type ``j``
    (``inf`` where it cannot); ``D_i`` as in FinishTimeFairness (isolated split, 1/n of every
    type)."""
    from ..data import Cluster, Jobs
    from ..throughput import FinishTimeFairness

    if steps is None:
        raise InputError("themis needs steps_remaining= (per job) to compute finish-time "
                         "fairness", argument="steps_remaining")
    jobs = Jobs(T, scale_factor=sf, steps_remaining=steps, elapsed=elapsed,
                isolated_elapsed=isolated_elapsed)
    ftf = FinishTimeFairness(jobs, Cluster({f"t{j}": int(c)
                                             for j, c in enumerate(cap.tolist())}))
    Ta = ftf.inst.T_allowed
    with np.errstate(divide="ignore"):
        return np.where(Ta > 0, (ftf.t[:, None] + ftf.steps[:, None] / np.where(Ta > 0, Ta, 1.0))
                        / ftf.D[:, None], np.inf)


def solve_themis(T: np.ndarray, sf: np.ndarray, cap: np.ndarray, steps: np.ndarray | None,
                 elapsed: np.ndarray | None, isolated_elapsed: np.ndarray | None, *,
                 fairness_knob: float, options: Mapping[str, Any]) -> ReducedRound:
    """One Themis auction round over the reduced round (see the module docstring)."""
    from ..auctions.counts import count_auction

    t0 = time.perf_counter()
    bad = [key for key in options if key != "backend"]
    if bad:
        raise InputError(f"themis takes no {bad[0]!r} (options: backend)", argument=bad[0])
    f = as_finite_float(fairness_knob, "fairness_knob", lo=0.0, hi=1.0)
    if not f < 1.0:
        raise InputError(f"fairness_knob must be in [0, 1), got {fairness_knob!r}",
                         argument="fairness_knob")
    n, k = T.shape
    rho = _rho(T, sf, cap, steps, elapsed, isolated_elapsed)
    rho_now = rho.min(axis=1)
    n_bid = min(n, max(1, math.ceil((1.0 - f) * n)))
    rank = np.argsort(-rho_now, kind="stable")  # furthest from fairness first; ties: job order
    bidders = np.sort(rank[:n_bid])
    # the count program: column (a, j) = bidder a runs its gang on type j
    ab, tj = np.nonzero(np.isfinite(rho[bidders]))
    out = count_auction(ab, tj, 1.0 / rho[bidders[ab], tj], sf[bidders], cap,
                        backend=options.get("backend", "highs"))
    stats = out.stats
    x = np.zeros((n, k))
    won = out.choice >= 0
    x[bidders[won], tj[out.choice[won]]] = out.fraction[won]
    payments = np.zeros(k)
    np.add.at(payments, tj[out.choice[won]], (1.0 - out.fraction[won]) * sf[bidders[won]])
    # leftover worker time: non-bidders first, then bidders, furthest from fairness first
    left = cap.astype(float) - sf @ x
    path = ["auction"]
    is_bidder = np.zeros(n, dtype=bool)
    is_bidder[bidders] = True
    for group, step in ((rank[~is_bidder[rank]], "leftovers-to-non-bidders"),
                        (rank[is_bidder[rank]], "leftovers-to-bidders")):
        gave = False
        for i in group.tolist():
            for j in np.argsort(rho[i], kind="stable").tolist():
                room = 1.0 - x[i].sum()
                if not np.isfinite(rho[i, j]) or room <= LEFTOVER_TOL:
                    break
                y = min(room, left[j] / sf[i])
                if y > LEFTOVER_TOL * max(cap[j], 1.0):
                    x[i, j] += y
                    left[j] = max(left[j] - y * sf[i], 0.0)
                    gave = True
        if gave:
            path.append(step)
    stats = SolveStats(backend=stats.backend, method="auction",
                       seconds=time.perf_counter() - t0, iterations=stats.iterations,
                       solves=stats.solves, raw_status=stats.raw_status,
                       path=tuple(path) + tuple(s for s in stats.path if s not in path),
                       fallbacks=stats.fallbacks)
    status = Status.OPTIMAL if out.optimal else Status.SUBOPTIMAL
    tp = np.einsum("ij,ij->i", T, x)
    return ReducedRound(x=x, prices=payments, effective_throughput=tp,
                        objective=out.sumlog, status=status, stats=stats,
                        certificate=out.certificate, detail=out,
                        bidders=tuple(bidders.tolist()), fraction=out.fraction)


# --------------------------------------------------------------------------------------------
# Shockwave
# --------------------------------------------------------------------------------------------
def solve_shockwave(T: np.ndarray, sf: np.ndarray, cap: np.ndarray, plan_jobs: Sequence[Any], *,
                    plan_options: Mapping[str, Any] | None, options: Mapping[str, Any],
                    previous: Any = None) -> ReducedRound:
    """The Shockwave plan of the reduced round and its column 0 (see the module docstring).

    ``previous`` is ``(PlanResult, column)`` to run ``column`` of a kept plan instead of
    re-planning (the caller checked that the jobs and workers did not change).
    """
    from ..schedule import plan_schedule

    t0 = time.perf_counter()
    n, k = T.shape
    if k != 1:
        raise InputError(f"shockwave plans one worker type; {k} types have workers this "
                         "round", argument="workers")
    bad = [key for key in options if key not in ("method", "backend")]
    if bad:
        raise InputError(f"shockwave takes no {bad[0]!r} (options: method, backend; the "
                         "planner's own in plan_options=)", argument=bad[0])
    if previous is not None:
        plan, column = previous
        stats = SolveStats(backend="none", method="plan-reused",
                           seconds=time.perf_counter() - t0, iterations=0, solves=0,
                           raw_status=plan.stats.raw_status, path=("reuse-plan",))
    else:
        opts = {key: value for key, value in (plan_options or {}).items()}
        opts.update(options)
        try:
            plan = plan_schedule(list(plan_jobs), int(cap[0]), **opts)
        except TypeError as exc:  # an unknown planner option
            raise InputError(f"plan_options: {exc}", argument="plan_options") from None
        column = 0
        stats = SolveStats(backend=plan.stats.backend, method="plan",
                           seconds=time.perf_counter() - t0,
                           iterations=plan.stats.iterations, solves=plan.stats.solves,
                           raw_status=plan.stats.raw_status, path=plan.stats.path,
                           fallbacks=plan.stats.fallbacks)
    x = plan.schedule[:, column].astype(float)[:, None]
    return ReducedRound(x=x, prices=np.zeros(k), effective_throughput=T[:, 0] * x[:, 0],
                        objective=float(plan.objective), status=plan.status, stats=stats,
                        certificate=plan.certificate, detail=plan, column=column)
