"""Scheduling policies for the simulator: adapters to the library and the papers' baselines.

A policy is any object with a ``name``, ``reset(workload, cluster, *, round_duration, seed)``
and ``allocate(state) -> TimeShares | Schedule`` (:class:`fairalloc.sim.simulator.Policy`);
:func:`make_policy` builds the registered ones by name (:func:`available_policies`).

Library policies (adapters)
---------------------------
* :class:`GavelPolicy` -- Gavel's effective-throughput programs (gavel.txt §4): max-min
  fairness / LAS (``"max_min_fairness"``, alias ``"gavel"``), water-filling, finish-time
  fairness (``"finish_time_fairness"``; what the Shockwave artifact runs as its "Themis"
  baseline, ANCHORS.md, hence the alias ``"themis_ftf"``), minimum makespan (``"min_makespan"``,
  alias ``"ossp"``: the Shockwave artifact's OSSP baseline is Gavel's makespan policy),
  maximum total (normalised) throughput (``"max_total_throughput"``, alias ``"mst"``), Gavel's
  FIFO and SJF, and the isolated 1/n split. They return fractional :class:`TimeShares` that the
  simulator realises with Gavel's round-based mechanism; the program is re-solved when jobs
  arrive, finish or change regime (or every round with ``recompute="round"``).
* :class:`ShockwavePolicy` -- Shockwave (shockwave.txt §4-6): regime forecasts from each job's
  observed epochs (:func:`fairalloc.forecast_regimes`), FTF estimates (Eq. 9,
  :func:`fairalloc.ftf_estimate` with :func:`fairalloc.contention_factor`), a windowed plan
  (:func:`fairalloc.plan_schedule`) re-planned by :class:`fairalloc.ReplanPolicy`.
* :class:`EFQPolicy` -- Ares elastic fair queuing (ares.md §3) through
  :class:`fairalloc.ElasticFairQueue`: jobs may get more (or fewer) GPUs than they asked for.
* :class:`ThemisPolicy` -- Themis (themis.md §3.3): leases, the filter of the jobs furthest
  from finish-time fairness and a partial-allocation auction of the offered GPUs
  (:func:`fairalloc.auctions.gpu_auction`).

Baselines of the papers' evaluations (implemented here)
-------------------------------------------------------
* :class:`FIFOPolicy` -- first come first served with backfilling.
* :class:`TiresiasLAS` -- Tiresias's discretised two-dimensional least-attained-service
  (queues by attained GPU-time, FIFO within a queue, promotion of starving jobs).
* :class:`AlloXPolicy` -- AlloX: minimum average completion time by min-cost bipartite
  matching of jobs to (accelerator type, position) slots, with its fairness filter.
* :class:`GandivaFairPolicy` -- Gandiva-fair's stride scheduling with tickets (by default the
  gang size, as in the Shockwave evaluation), work conserving.

Every baseline realises its priority order with one vectorised greedy packing
(:func:`greedy_pack`): in priority order, each job takes its gang on the first type in its
preference list with room; a job that does not fit is skipped (backfilling).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from .._validation import (
    as_bool,
    as_finite_float,
    as_option,
    as_positive_float,
    as_positive_int,
    as_time_limit,
)
from ..data import Cluster
from ..errors import FairallocError, InputError
from .simulator import JobView, RoundState, Schedule, TimeShares
from .workload import Workload

__all__ = [
    "AlloXPolicy",
    "BasePolicy",
    "EFQPolicy",
    "FIFOPolicy",
    "GandivaFairPolicy",
    "GavelPolicy",
    "ShockwavePolicy",
    "ThemisPolicy",
    "TiresiasLAS",
    "available_policies",
    "greedy_pack",
    "make_policy",
    "pack_by_priority",
    "register_policy",
]


# --------------------------------------------------------------------------------------------
# greedy packing (vectorised)
# --------------------------------------------------------------------------------------------
def greedy_pack(job: Any, typ: Any, size: Any, capacity: Any, n_jobs: int) -> np.ndarray:
    """Walk ``(job, type)`` candidates in priority order; take a candidate when its job is not
    placed yet and its gang ``size`` fits in the type's free workers, else skip it.

    Vectorised: each pass accepts the longest prefix that fits, then drops the overflowing
    candidate together with every later candidate of that type that can no longer fit. The
    largest gang that can still be accepted on a type strictly shrinks with each pass, so
    there are at most (number of types x distinct gang sizes) passes.

    Parameters
    ----------
    job, typ : array_like of int, shape (c,)
        Candidates in priority order (a job may appear with several types).
    size : array_like of int, shape (c,)
        Workers each candidate needs.
    capacity : array_like of int, shape (k,)
        Workers of each type.
    n_jobs : int

    Returns
    -------
    ndarray of int, shape (n_jobs,)
        Type each job was placed on (``-1``: not placed).

    Examples
    --------
    >>> greedy_pack([0, 1, 2, 3], [0, 0, 0, 0], [2, 2, 1, 1], [3], 4).tolist()
    [0, -1, 0, -1]
    """
    job = np.asarray(job, dtype=np.int64)
    typ = np.asarray(typ, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    free = np.asarray(capacity, dtype=np.int64).copy()
    out = np.full(int(n_jobs), -1, dtype=np.int64)
    k = free.shape[0]
    alive = np.ones(job.shape[0], dtype=bool)
    while True:
        idx = np.flatnonzero(alive & (out[job] < 0))
        if idx.size == 0:
            break
        j, t, s = job[idx], typ[idx], size[idx]
        # first occurrence of each job among the live candidates
        first = np.zeros(idx.size, dtype=bool)
        _, pos = np.unique(j, return_index=True)
        first[pos] = True
        # running use of each type by first occurrences, in order
        onehot = np.zeros((idx.size, k), dtype=np.int64)
        onehot[np.arange(idx.size), t] = np.where(first, s, 0)
        use = np.cumsum(onehot, axis=0)[np.arange(idx.size), t]
        over = first & (use > free[t])
        stop = int(np.argmax(over)) if over.any() else idx.size
        acc = first[:stop]
        out[j[:stop][acc]] = t[:stop][acc]
        np.subtract.at(free, t[:stop][acc], s[:stop][acc])
        if stop == idx.size:
            break
        tt = t[stop]
        alive[idx[stop]] = False
        alive[idx[stop:][(t[stop:] == tt) & (s[stop:] > free[tt])]] = False
        alive[idx[:stop]] = False  # decided
    return out


def _type_preference(view: JobView, cluster: Cluster, prefer: str) -> np.ndarray:
    """``(n, k)`` rank of each type for each job (0 = first choice); ``inf`` where unusable."""
    usable = view.runnable & (view.scale_factor[:, None] <= cluster.capacity[None, :])
    k = cluster.num_types
    if prefer == "fastest":
        key = np.where(usable, view.epoch_seconds, np.inf)
    else:  # "order": the cluster's type order (heterogeneity-agnostic)
        key = np.where(usable, np.arange(k, dtype=float)[None, :], np.inf)
    rank = np.argsort(np.argsort(key, axis=1, kind="stable"), axis=1, kind="stable")
    return np.where(usable, rank, np.inf)


def pack_by_priority(view: JobView, cluster: Cluster, priority: Any, *,
                     prefer: str | np.ndarray = "fastest", limit: Any = None) -> Schedule:
    """Greedy packing of the active jobs by ``priority`` (smaller first, ties by row).

    Parameters
    ----------
    view : JobView
    cluster : Cluster
    priority : array_like, shape (n,)
    prefer : {"fastest", "order"} or ndarray of shape (n, k)
        Type preference of each job: fastest epoch first, the cluster's order, or explicit
        ranks (``inf`` = never).
    limit : array_like of bool, shape (n,), optional
        Only these jobs may run.
    """
    pr = np.asarray(priority, dtype=float)
    rank = (_type_preference(view, cluster, prefer) if isinstance(prefer, str)
            else np.asarray(prefer, dtype=float))
    if limit is not None:
        rank = np.where(np.asarray(limit, dtype=bool)[:, None], rank, np.inf)
    rows, cols = np.nonzero(np.isfinite(rank))
    order = np.lexsort((rank[rows, cols], rows, pr[rows]))
    rows, cols = rows[order], cols[order]
    placed = greedy_pack(rows, cols, view.scale_factor[rows].astype(np.int64),
                         cluster.capacity.astype(np.int64), view.n)
    return Schedule.from_types(placed, view.scale_factor, cluster.num_types)


# --------------------------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------------------------
class BasePolicy:
    """Common plumbing: ``name``, ``params`` and ``reset`` storing the run's context."""

    name = "policy"

    def __init__(self, **params: Any) -> None:
        self.params = params
        self.workload: Workload | None = None
        self.cluster: Cluster | None = None
        self.round_duration = 0.0
        self.seed = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        """Start a new simulation."""
        self.workload, self.cluster = workload, cluster
        self.round_duration, self.seed = float(round_duration), int(seed)

    def allocate(self, state: RoundState) -> TimeShares | Schedule:  # pragma: no cover
        raise NotImplementedError

    def __repr__(self) -> str:
        ps = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.name!r}{', ' + ps if ps else ''})"


# --------------------------------------------------------------------------------------------
# Gavel programs
# --------------------------------------------------------------------------------------------
def _gavel_objectives() -> dict[str, Callable[..., Any] | None]:
    from .. import throughput as tp

    def water_filling(jobs: Any, cluster: Cluster, **kw: Any) -> Any:
        return tp.max_min_fairness(jobs, cluster, water_filling=True, **kw)

    def mst(jobs: Any, cluster: Cluster, **kw: Any) -> Any:
        kw.setdefault("normalized", True)
        return tp.max_total_throughput(jobs, cluster, **kw)

    def gavel_fifo(jobs: Any, cluster: Cluster, **kw: Any) -> Any:
        return tp.fifo(jobs, cluster, order=-jobs.elapsed, **kw)

    return {
        "max_min_fairness": tp.max_min_fairness,
        "water_filling": water_filling,
        "finish_time_fairness": tp.finish_time_fairness,
        "min_makespan": tp.min_makespan,
        "max_total_throughput": mst,
        "fifo": gavel_fifo,
        "shortest_job_first": tp.shortest_job_first,
        "isolated": None,  # the 1/n split, no program
    }


GAVEL_OBJECTIVES = ("max_min_fairness", "water_filling", "finish_time_fairness",
                    "min_makespan", "max_total_throughput", "fifo", "shortest_job_first",
                    "isolated")


class GavelPolicy(BasePolicy):
    """A Gavel effective-throughput program as a simulator policy (gavel.txt §4-5).

    Parameters
    ----------
    objective : str
        One of :data:`GAVEL_OBJECTIVES`.
    recompute : {"event", "round"}
        Re-solve when jobs arrive, finish or change regime (default; Gavel recomputes its
        allocation on such events), or every round.
    name : str, optional
        Display name (default ``objective``).
    **solve_kw
        Passed to the library function (e.g. ``method="highs"``).
    """

    def __init__(self, objective: str = "max_min_fairness", *, recompute: str = "event",
                 name: str | None = None, **solve_kw: Any) -> None:
        objective = as_option(objective, "objective", GAVEL_OBJECTIVES)
        recompute = as_option(recompute, "recompute", ("event", "round"))
        super().__init__(objective=objective, recompute=recompute, **solve_kw)
        self.name = name or objective
        self.objective = objective
        self.recompute = recompute
        self.solve_kw = solve_kw
        self._fn = _gavel_objectives()[objective]
        self._x: dict[Hashable, np.ndarray] = {}
        self.solves = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._x = {}
        self.solves = 0

    def allocate(self, state: RoundState) -> TimeShares:
        v = state.jobs
        cluster = state.cluster.cluster
        stale = (self.recompute == "round" or bool(state.arrived) or bool(state.finished)
                 or bool(v.regime_changed.any()) or any(i not in self._x for i in v.ids))
        if stale:
            if self._fn is None:
                from ..throughput import isolated_split

                x = isolated_split(v.to_jobs(), cluster)
            else:
                x = self._fn(v.to_jobs(), cluster, **self.solve_kw).x
            self.solves += 1
            self._x = dict(zip(v.ids, np.asarray(x), strict=True))
        return TimeShares(np.array([self._x[i] for i in v.ids]))


# --------------------------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------------------------
class FIFOPolicy(BasePolicy):
    """First come, first served with backfilling (re-evaluated every round).

    Jobs are ranked by arrival (ties by workload row); each, in turn, takes its gang on its
    fastest type with room (``prefer="order"``: the cluster's type order). A job that does not
    fit is skipped and later jobs may use the GPUs; an earlier job reclaims them at the next
    round when it fits (so backfilled jobs can be preempted).
    """

    name = "fifo"

    def __init__(self, *, prefer: str = "fastest") -> None:
        prefer = as_option(prefer, "prefer", ("fastest", "order"))
        super().__init__(prefer=prefer)
        self.prefer = prefer

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        pr = v.arrival + 1e-9 * v.index / max(1, v.index.max(initial=0) + 1)
        return pack_by_priority(v, state.cluster.cluster, pr, prefer=self.prefer)


class TiresiasLAS(BasePolicy):
    """Tiresias's discretised 2D least-attained-service (Gu et al., NSDI 19; gavel.txt §4.1).

    A job's *attained service* is its GPU-time (gang size x time run, "2D"). Jobs sit in
    priority queues by attained service: queue ``q`` holds the jobs with
    ``thresholds[q-1] <= attained < thresholds[q]``; queues are served in order, FIFO (by
    arrival) within a queue. A job that has run before and has now waited at least
    ``promote_knob`` times the time it has run is promoted to the first queue (Tiresias's
    starvation knob; new jobs start in the first queue anyway). Heterogeneity-agnostic by
    default: types in the cluster's order.

    Parameters
    ----------
    thresholds : sequence of float
        Queue boundaries in GPU-seconds (default: 1 and 10 GPU-hours).
    promote_knob : float or None
        ``None`` disables promotion.
    prefer : {"order", "fastest"}
    """

    name = "las"

    def __init__(self, *, thresholds: Any = (3600.0, 36000.0), promote_knob: float | None = 8.0,
                 prefer: str = "order") -> None:
        th = np.sort(np.asarray(thresholds, dtype=float).reshape(-1))
        if th.size and not (np.isfinite(th).all() and (th > 0).all()):
            raise InputError("thresholds must be positive and finite", argument="thresholds")
        knob = None if promote_knob is None else as_positive_float(promote_knob, "promote_knob")
        prefer = as_option(prefer, "prefer", ("fastest", "order"))
        super().__init__(thresholds=tuple(th.tolist()), promote_knob=knob, prefer=prefer)
        self.thresholds, self.promote_knob, self.prefer = th, knob, prefer

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        queue = np.searchsorted(self.thresholds, v.gpu_seconds, side="right").astype(float)
        if self.promote_knob is not None:
            starving = (v.attained > 0) & (v.idle_for >= self.promote_knob * v.attained) \
                & ~v.running
            queue = np.where(starving, 0.0, queue)
        scale = max(float(v.arrival.max(initial=0.0)), 1.0) * 4.0
        return pack_by_priority(v, state.cluster.cluster, queue * scale + v.arrival,
                                prefer=self.prefer)


class AlloXPolicy(BasePolicy):
    """AlloX (Le et al., EuroSys 20; gavel.txt §7.3, shockwave.txt §8.2): minimum average
    job completion time on heterogeneous resources by min-cost bipartite matching.

    Each type ``j`` with ``c_j`` workers offers, at every position ``p = 1, 2, ...`` from the
    end of its queue, ``c_j`` slots; placing job ``i`` there costs ``p * w_i * T_ij`` (its
    remaining processing time on the type times its gang, weighted by the number of jobs it
    delays). The minimum-cost matching (Hungarian method,
    :func:`scipy.optimize.linear_sum_assignment`) minimises the total completion time of the
    single-worker case exactly (Bruno, Coffman and Sethi); jobs at higher positions run
    first. Each round the matching is recomputed; the round runs jobs in matching order on
    their matched type (greedy packing for gangs; AlloX itself handles single-worker jobs).

    Fairness filter (AlloX §4, shockwave.txt §2): only the ``ceil(alpha * n)`` jobs that have
    waited longest (largest ``waiting / elapsed``) take part; ``alpha = 1`` disables it.
    """

    name = "allox"

    def __init__(self, *, alpha: float = 1.0) -> None:
        a = as_positive_float(alpha, "alpha")
        if a > 1.0:
            raise InputError(f"alpha must be in (0, 1], got {alpha!r}", argument="alpha")
        super().__init__(alpha=a)
        self.alpha = a

    def allocate(self, state: RoundState) -> Schedule:
        from scipy.optimize import linear_sum_assignment

        v = state.jobs
        cluster = state.cluster.cluster
        n = v.n
        usable = v.runnable & (v.scale_factor[:, None] <= cluster.capacity[None, :])
        if self.alpha < 1.0:
            take = max(1, math.ceil(self.alpha * n))
            share = np.where(v.elapsed > 0, v.waiting / np.maximum(v.elapsed, 1e-12), 1.0)
            keep = np.zeros(n, dtype=bool)
            keep[np.lexsort((v.arrival, -share))[:take]] = True
        else:
            keep = np.ones(n, dtype=bool)
        rows = np.flatnonzero(keep)
        cap = cluster.capacity.astype(np.int64)
        k = cap.shape[0]
        pos = np.array([math.ceil(rows.size / c) for c in cap], dtype=np.int64)
        # slot columns: (type j, position p) repeated c_j times
        col_type = np.repeat(np.repeat(np.arange(k), pos), np.repeat(cap, pos))
        col_pos = np.repeat(np.concatenate([np.arange(1, p + 1) for p in pos]),
                            np.repeat(cap, pos))
        T = v.remaining_seconds[rows]  # (r, k) seconds on each type
        big = 1e18
        cost = np.where(usable[rows][:, col_type],
                        col_pos[None, :] * (v.scale_factor[rows, None] * T[:, col_type]), big)
        cost = np.where(np.isfinite(cost), cost, big)
        r_idx, c_idx = linear_sum_assignment(cost)
        matched_type = np.full(n, -1, dtype=np.int64)
        matched_pos = np.zeros(n)
        ok = cost[r_idx, c_idx] < big
        matched_type[rows[r_idx[ok]]] = col_type[c_idx[ok]]
        matched_pos[rows[r_idx[ok]]] = col_pos[c_idx[ok]]
        pref = _type_preference(v, cluster, "fastest")
        pref = np.where(np.arange(k)[None, :] == matched_type[:, None], -1.0, pref)
        # higher position = starts earlier; ties: shorter on the matched type first
        short = np.take_along_axis(v.remaining_seconds, np.maximum(matched_type, 0)[:, None],
                                   axis=1)[:, 0]
        order_key = np.lexsort((short, -matched_pos))
        priority = np.empty(n)
        priority[order_key] = np.arange(n)
        return pack_by_priority(v, cluster, priority, prefer=pref, limit=matched_type >= 0)


class GandivaFairPolicy(BasePolicy):
    """Gandiva-fair (Chaudhary et al., EuroSys 20; shockwave.txt §8.2, §8.5): proportional
    share by stride scheduling, work conserving.

    Job ``i`` holds ``tickets_i`` tickets (default its gang size, as in the Shockwave
    evaluation: large jobs get a larger share); its stride is ``1 / tickets_i`` and its pass
    grows by ``stride * GPUs * round_fraction`` whenever it runs. Each round the jobs with the
    smallest pass run first (greedy packing, so idle GPUs go to the next jobs: work
    conserving). A job entering starts at the smallest pass among the active jobs (it is not
    owed service for the time before it arrived).

    Parameters
    ----------
    tickets : {"scale_factor", "weight", "equal"}
    prefer : {"fastest", "order"}
    """

    name = "gandiva_fair"

    def __init__(self, *, tickets: str = "scale_factor", prefer: str = "fastest") -> None:
        tickets = as_option(tickets, "tickets", ("scale_factor", "weight", "equal"))
        prefer = as_option(prefer, "prefer", ("fastest", "order"))
        super().__init__(tickets=tickets, prefer=prefer)
        self.tickets, self.prefer = tickets, prefer
        self._pass = np.zeros(0)
        self._gpus_seen = np.zeros(0)

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._pass = np.full(workload.n, np.nan)
        self._gpus_seen = np.zeros(workload.n)

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        idx = v.index
        D = state.cluster.round_duration
        # charge last round's service (GPU-seconds since the previous call)
        delta = v.gpu_seconds - self._gpus_seen[idx]
        self._gpus_seen[idx] = v.gpu_seconds
        tk = {"scale_factor": v.scale_factor, "weight": v.weight,
              "equal": np.ones(v.n)}[self.tickets]
        p = self._pass[idx]
        known = ~np.isnan(p)
        p = np.where(known, p + delta / (tk * D), p)
        start = p[known].min() if known.any() else 0.0
        p = np.where(known, p, start)
        self._pass[idx] = p
        return pack_by_priority(v, state.cluster.cluster, p + 1e-12 * v.arrival,
                                prefer=self.prefer)


# --------------------------------------------------------------------------------------------
# Shockwave
# --------------------------------------------------------------------------------------------
class ShockwavePolicy(BasePolicy):
    """Shockwave (shockwave.txt §4-6, App. G-H) as a simulator policy.

    Before a round it decides with :class:`fairalloc.ReplanPolicy` whether to re-plan (no
    plan, window used up, arrivals, completions, regime changes). Re-planning forecasts each
    active job's remaining regimes from its *observed* finished epochs
    (:func:`fairalloc.forecast_regimes` with the job's :class:`fairalloc.RegimeModel`: static,
    Accordion between its initial and largest batch sizes, or GNS doubling up to its largest),
    estimates its finish-time fairness (Eq. 9; contention factor ``N_avg`` over its life) and
    solves the window plan (:func:`fairalloc.plan_schedule`, Eq. 11). Each round runs the
    plan's column; idle GPUs left by gangs that do not fit a type go to the unscheduled jobs
    with the largest remaining time.

    Parameters
    ----------
    k : float, default 5.0
        Exponent of the FTF weights.
    lam : float, default 1e-3
        Makespan regulariser coefficient.
    window : int, default 20
        Rounds per plan.
    forecast : {"restatement", "bayesian", "greedy", "oracle"}
        ``"oracle"`` reads each job's true future schedule (comparison only; ANCHORS.md).
    replan : {"reactive", "lazy"}
    accordion_regimes : int, default 6
        ``K`` of an Accordion job's regime model (grown when a job shows more regimes).
    contention : {"jobs", "gpus"}
        Demand counted by the contention factor: active jobs (paper) or their GPUs.
    execution : {"counts", "columns"}
        How a plan is executed between re-plans. The plan's objective depends only on how
        many rounds each job gets in the window, not on which, so ``"counts"`` (default)
        runs, each round, first the jobs whose planned rounds fill the rest of the window
        (they must run now to get their count), then the jobs the plan finishes within the
        window (shortest remaining first), then the other jobs with planned rounds left
        (with ``keep_running``, those that ran in the previous round first) in decreasing
        order of their FTF estimate, and decrements their counts;
        ``"columns"`` runs the plan's next column as packed by the planner (least slack
        first), which -- re-planned at every arrival -- keeps pushing a pending job's few
        planned rounds to the end of the sliding window.
    keep_running : bool, default True
        With ``"counts"``: after the must-run jobs and the jobs finishing in the window,
        planned jobs that ran in the previous round go first (no restart).
    **plan_kw
        Passed to :func:`fairalloc.plan_schedule` (``method``, ``time_limit``, ``mip_gap``,
        ``work_conservation``, ...).
    """

    name = "shockwave"

    def __init__(self, *, k: float = 5.0, lam: float = 1e-3, window: int = 20,
                 forecast: str = "restatement", replan: str = "reactive",
                 accordion_regimes: int = 6, contention: str = "jobs",
                 execution: str = "counts", keep_running: bool = True,
                 **plan_kw: Any) -> None:
        from ..schedule import ReplanPolicy

        forecast = as_option(forecast, "forecast", ("restatement", "bayesian", "greedy",
                                                    "oracle"))
        contention = as_option(contention, "contention", ("jobs", "gpus"))
        window = as_positive_int(window, "window")
        execution = as_option(execution, "execution", ("counts", "columns"))
        k = as_positive_float(k, "k", allow_zero=True)
        lam = as_positive_float(lam, "lam", allow_zero=True)
        keep_running = as_bool(keep_running, "keep_running")
        super().__init__(k=k, lam=lam, window=window, forecast=forecast, replan=replan,
                         accordion_regimes=accordion_regimes, contention=contention,
                         execution=execution, keep_running=keep_running, **plan_kw)
        self.execution = execution
        self.keep_running = bool(keep_running)
        self.k, self.lam, self.window = float(k), float(lam), window
        self.forecast, self.contention = forecast, contention
        self.accordion_regimes = as_positive_int(accordion_regimes, "accordion_regimes")
        self.replan_policy = ReplanPolicy(replan)
        self.plan_kw = plan_kw
        self._plan: dict[Hashable, np.ndarray] = {}
        self._left: dict[Hashable, int] = {}
        self._ftf: dict[Hashable, float] = {}
        self._planned = 0
        self._elapsed = 0
        self.plans = 0
        self.plan_seconds = 0.0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._plan, self._planned, self._elapsed, self.plans = {}, 0, 0, 0
        self._left, self._ftf = {}, {}
        self.plan_seconds = 0.0

    def _model(self, v: JobView, i: int) -> Any:
        from ..forecast import RegimeModel

        b0, cap = float(v.initial_batch[i]), float(v.max_batch[i])
        mode = v.mode[i]
        if mode == "static" or cap <= b0:
            if v.regime[i] == 0:
                return RegimeModel.static(b0)
        if mode == "gns" and cap > b0:
            return RegimeModel.gns(b0, max_batch_size=cap)
        seen = int(v.regime[i]) + 1
        large = cap if cap > b0 else 2.0 * b0
        return RegimeModel.accordion(b0, large, num_regimes=max(self.accordion_regimes,
                                                                 seen + 1))

    def _forecasts(self, v: JobView) -> list[Any]:
        from ..forecast import forecast_regimes, oracle_forecast

        out = []
        w = self.workload
        for i in range(v.n):  # one forecast per job: the library's per-job API
            if self.forecast == "oracle":
                assert w is not None  # reset() stored the workload before the first round
                row = int(v.index[i])
                r = int(w.num_regimes[row])
                reps = np.ceil(w.regime_epochs[row, :r] - 1e-9).astype(np.int64)
                bs = np.repeat(w.regime_batch[row, :r], reps)
                sec = np.repeat(w.regime_seconds[row, :r].min(axis=1), reps)
                done = min(int(math.floor(v.epochs_done[i] + 1e-9)), bs.size)
                out.append(oracle_forecast(bs, sec, done))
                continue
            bs, sec = v.observed_epochs(i)
            profiled = {float(v.batch_size[i]): float(np.min(v.epoch_seconds[i]))}
            out.append(forecast_regimes(self._model(v, i), float(v.total_epochs[i]), bs, sec,
                                        current_batch_size=float(v.batch_size[i]),
                                        profiled=profiled, method=self.forecast))
        return out

    def _replan(self, state: RoundState) -> None:
        import time

        from ..forecast import contention_factor, ftf_estimate
        from ..schedule import PlanJob, plan_schedule

        t0 = time.perf_counter()
        v = state.jobs
        M = state.cluster.num_gpus
        fcs = self._forecasts(v)
        remaining = np.array([max(fc.remaining_seconds, 1e-6) for fc in fcs])
        demand = float(v.n if self.contention == "jobs" else v.scale_factor.sum())
        nav = contention_factor(v.arrival, state.cluster.time, M,
                                demand_seconds=v.contention_seconds
                                * (1.0 if self.contention == "jobs"
                                   else v.scale_factor.sum() / max(v.n, 1)),
                                demand=demand)
        ftf = ftf_estimate(v.attained, v.waiting, remaining, nav)
        jobs = []
        self._ftf = {}
        for i, fc in enumerate(fcs):
            ftf_i = float(ftf[i]) if np.isfinite(ftf[i]) and ftf[i] > 0 else 1.0
            self._ftf[v.ids[i]] = ftf_i
            regimes = fc.regimes
            left = float(v.total_epochs[i]) - fc.done_epochs
            if not regimes or left <= 0:
                regimes = [(float(np.min(v.epoch_seconds[i])), max(left, 1e-6))]
            jobs.append(PlanJob(workers=int(v.scale_factor[i]), total_epochs=fc.total_epochs,
                                done_epochs=fc.done_epochs, ftf=ftf_i, regimes=regimes,
                                running=bool(v.running[i])))
        plan = plan_schedule(jobs, M, rounds=self.window,
                             round_duration=state.cluster.round_duration, k=self.k,
                             lam=self.lam, **self.plan_kw)
        sched = np.asarray(plan.schedule, dtype=bool)
        self._plan = dict(zip(v.ids, sched, strict=True))
        self._left = dict(zip(v.ids, sched.sum(axis=1).tolist(), strict=True))
        self._planned, self._elapsed = sched.shape[1], 0
        self.plans += 1
        self.plan_seconds += time.perf_counter() - t0

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        decision = self.replan_policy.decide(
            rounds_elapsed=self._elapsed, planned_rounds=self._planned,
            arrived=len(state.arrived), finished=len(state.finished),
            regime_changed=int(v.regime_changed.sum()))
        if decision or any(i not in self._plan for i in v.ids):
            self._replan(state)
        col = self._elapsed
        self._elapsed += 1
        cluster = state.cluster.cluster
        rem = np.min(v.remaining_seconds, axis=1)
        fill = rem.max(initial=0.0) + 1.0
        if self.execution == "columns":
            run = np.array([bool(self._plan[i][col]) for i in v.ids])
            # the column's jobs (longest remaining first), then idle GPUs to the others
            priority = np.where(run, -rem, 2.0 * fill - rem)
        else:
            left = np.array([self._left[i] for i in v.ids])
            run = left > 0
            ftf = np.array([self._ftf[i] for i in v.ids])
            # planned jobs most at risk first (shortest remaining among equals: finishing a
            # job early never costs a planned round); idle GPUs to the longest remaining
            keep = v.running if self.keep_running else np.zeros(v.n, dtype=bool)
            # a job whose planned rounds fill the rest of the window must run now; jobs the
            # plan finishes within the window go next (shortest first): finishing them early
            # costs no other job a planned round
            must = run & (left >= self._planned - col)
            finisher = run & (rem <= left * state.cluster.round_duration)
            order = np.lexsort((rem, -ftf, ~keep, ~finisher, ~must))
            rank = np.empty(v.n)
            rank[order] = np.arange(v.n)
            priority = np.where(run, rank, v.n + fill - rem)
        sched = pack_by_priority(v, cluster, priority)
        ran = np.asarray(sched.gpus).sum(axis=1) > 0
        for i in np.flatnonzero(ran & run).tolist():
            self._left[v.ids[i]] -= 1
        return sched


# --------------------------------------------------------------------------------------------
# Ares elastic fair queuing
# --------------------------------------------------------------------------------------------
class EFQPolicy(BasePolicy):
    """Ares elastic fair queuing (ares.md §3) through :class:`fairalloc.ElasticFairQueue`.

    Each job is submitted when it arrives with its GPU-time ``L_j`` (total epochs times the
    epoch time of the regime it starts in, on its fastest type, times its gang: the visible
    estimate), its gang as the requested GPU count and the scaling curve of its
    :attr:`~fairalloc.sim.JobSpec.scaling` (per-GPU efficiency kept per doubling); it is
    finished when the simulator reports it. Every round the queue's allocation is used as
    is: jobs first in virtual-finish order may hold up to their α-capped maximum of GPUs.
    On a heterogeneous cluster the queue places jobs on the fastest GPUs first
    (``gpu_power``: the mean speed of each type relative to the others over the workload).

    Parameters
    ----------
    alpha : float, default 0.75
        Scaling-control threshold (§3.3).
    """

    name = "efq"

    def __init__(self, *, alpha: float = 0.75) -> None:
        alpha = as_finite_float(alpha, "alpha", lo=0.0, hi=1.0, lo_open=True)
        super().__init__(alpha=alpha)
        self.alpha = alpha
        self._q: Any = None

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        from ..queuing import ElasticFairQueue

        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        start = float(workload.arrival.min())
        cap = {t: int(c) for t, c in zip(cluster.types, cluster.capacity, strict=True)}
        if cluster.num_types == 1:
            self._q = ElasticFairQueue(int(cluster.capacity[0]), self.alpha,
                                       auto_finish=False, start=start)
        else:
            t_on = workload.seconds_on()
            ok = np.isfinite(t_on).all(axis=1)
            rel = (t_on[ok].min(axis=1, keepdims=True) / t_on[ok]).mean(axis=0) if ok.any() \
                else np.ones(cluster.num_types)
            power = {t: float(p) for t, p in zip(cluster.types, rel, strict=True)}
            self._q = ElasticFairQueue(cap, self.alpha, gpu_power=power, auto_finish=False,
                                       start=start)
        self._levels = max(1, int(math.ceil(math.log2(max(cluster.total_workers, 2)))))

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        q = self._q
        events = [(t, 0, jid) for jid, t in state.finished] + \
                 [(t, 1, jid) for jid, t in state.arrived]
        row_of = {jid: i for i, jid in enumerate(v.ids)}
        lv = np.arange(self._levels + 1)
        assert self.workload is not None  # reset() set it (and _levels, read just above)
        for t, kind, jid in sorted(events, key=lambda e: (e[0], e[1])):
            if kind == 0:
                if jid in q:
                    q.finish(jid, at=max(t, q.now))
                continue
            i = row_of[jid]
            sf = int(v.scale_factor[i])
            gpu_time = float(v.total_epochs[i] * np.min(v.epoch_seconds[i]) * sf)
            eff = float(self.workload.scaling[v.index[i]])
            curve = (2.0 ** lv) * eff ** lv
            levels_needed = int(math.ceil(math.log2(sf))) if sf > 1 else 0
            if levels_needed > self._levels:
                curve = (2.0 ** np.arange(levels_needed + 1)) * eff ** np.arange(
                    levels_needed + 1)
            q.submit(jid, gpu_time=gpu_time, requested=sf, scaling=curve, at=max(t, q.now))
        q.advance(max(state.cluster.time, q.now))
        k = state.cluster.cluster.num_types
        gpus = np.zeros((v.n, k), dtype=np.int64)
        if k == 1:
            alloc = q.allocation()
            gpus[:, 0] = [int(alloc.get(jid, 0)) for jid in v.ids]
        else:
            place = q.placement()
            types = state.cluster.cluster.types
            for jid, per_type in place.items():  # running jobs only (at most the GPU count)
                i = row_of[jid]
                for t_name, c in per_type.items():
                    gpus[i, types.index(t_name)] = int(c)
        return Schedule(gpus)


# --------------------------------------------------------------------------------------------
# Themis
# --------------------------------------------------------------------------------------------
class ThemisPolicy(BasePolicy):
    """Themis's finish-time fair auction (themis.md §3.3.2, Pseudocode 1) as a simulator policy.

    GPUs are leased for ``lease`` seconds. At every round the GPUs of finished jobs and of
    expired leases are offered; every active job's finish-time fairness if it ran now,
    ``rho = (elapsed + remaining) / (isolated * max(1, N w / M))`` (Themis Eq. 1: ``T_sh /
    T_id`` with ``T_id`` the run time in a ``1/N`` share of the ``M`` GPUs), ranks the jobs that
    hold no GPUs; the ``max(1, ceil((1 - f) N))`` with the largest ``rho`` bid, each for its
    gang (valuation ``1/rho``, nothing without it), in a partial-allocation auction of the
    offered GPUs (:func:`fairalloc.auctions.gpu_auction`: proportionally fair bundles and the
    leave-one-out fractions ``c_i``). A job keeps ``c_i`` of its PF bundle, rounded to whole
    GPUs by a seeded draw; since a gang runs only with all its workers, it runs when it keeps
    the whole bundle and returns the GPUs otherwise. The leftover GPUs (hidden payments and
    GPUs nobody won) go, in a seeded random order, to the jobs that did not bid (then to the
    bidders) whose gang fits.

    Homogeneous clusters only (one accelerator type), laid out as servers of
    ``gpus_per_server`` GPUs.

    Parameters
    ----------
    fairness_knob : float, default 0.8
        ``f`` in ``[0, 1)`` (the paper's default).
    lease : float, default 600.0
        Lease length in seconds (10 minutes, §6.4).
    gpus_per_server : int, default 4
    time_limit : float, optional
        Seconds per auction MILP (results then depend on the machine's speed).
    """

    name = "themis"

    def __init__(self, *, fairness_knob: float = 0.8, lease: float = 600.0,
                 gpus_per_server: int = 4, time_limit: float | None = None) -> None:
        f = as_finite_float(fairness_knob, "fairness_knob", lo=0.0, hi=1.0)
        if not 0.0 <= f < 1.0:
            raise InputError(f"fairness_knob must be in [0, 1), got {fairness_knob!r}",
                             argument="fairness_knob")
        lease = as_positive_float(lease, "lease")
        gps = as_positive_int(gpus_per_server, "gpus_per_server")
        time_limit = as_time_limit(time_limit)
        super().__init__(fairness_knob=f, lease=lease, gpus_per_server=gps,
                         time_limit=time_limit)
        self.fairness_knob, self.lease, self.gpus_per_server = f, lease, gps
        self.time_limit = time_limit
        self.auctions = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        from ..valuations import Topology

        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        if cluster.num_types != 1:
            raise InputError("the Themis policy needs a homogeneous cluster (one GPU type)",
                             argument="cluster")
        M = int(cluster.capacity[0])
        per = self.gpus_per_server if M % self.gpus_per_server == 0 else 1
        self._topology = Topology.uniform(M // per, per)
        self._owner = np.full(M, -1, dtype=np.int64)
        self._lease_end = np.zeros(M)
        self._rng = np.random.default_rng(seed)
        self.auctions = 0

    def allocate(self, state: RoundState) -> Schedule:
        from ..auctions import BidTable, gpu_auction

        v = state.jobs
        t = state.cluster.time
        M = self._owner.shape[0]
        owner = self._owner
        gone = (owner >= 0) & ~np.isin(owner, v.index)
        owner[gone | ((owner >= 0) & (self._lease_end <= t + 1e-9))] = -1
        assert self.workload is not None  # reset() set it (and _owner, read just above)
        row = np.full(int(self.workload.n), -1, dtype=np.int64)
        row[v.index] = np.arange(v.n)
        held = np.bincount(row[owner[owner >= 0]], minlength=v.n)
        w = v.scale_factor.astype(np.int64)
        offer = owner < 0
        if offer.any():
            fastest = np.min(v.epoch_seconds, axis=1)
            t_id = v.total_epochs * fastest * np.maximum(1.0, v.n * w / M)
            rho = (v.elapsed + v.epochs_remaining * fastest) / t_id
            want = np.flatnonzero((held == 0) & (w <= offer.sum()))
            n_bid = min(want.size, max(1, math.ceil((1.0 - self.fairness_knob) * v.n)))
            bidders = want[np.lexsort((v.arrival[want], -rho[want]))[:n_bid]]
            level = 1 if self._topology.num_racks == 1 else 2
            if bidders.size:
                bids = [BidTable([int(w[i])], [level], [float(rho[i])]) for i in bidders]
                res = gpu_auction(bids, self._topology, np.flatnonzero(offer),
                                  time_limit=self.time_limit, workers=1)
                self.auctions += 1
                for a, i in enumerate(bidders.tolist()):
                    gpus = np.flatnonzero(res.pf_bundles[a])
                    if gpus.size < w[i]:
                        continue
                    keep = res.fraction[a] * gpus.size
                    kept = int(math.floor(keep + 1e-12))
                    kept += int(self._rng.random() < keep - kept)
                    if kept >= w[i]:  # a gang runs only with all its workers
                        owner[gpus[:w[i]]] = v.index[i]
                        self._lease_end[gpus[:w[i]]] = t + self.lease
                held = np.bincount(row[owner[owner >= 0]], minlength=v.n)
            # leftover GPUs: non-bidders first (seeded random order), then bidders
            free = np.flatnonzero(owner < 0)
            if free.size:
                can = np.flatnonzero((held == 0) & (w <= free.size))
                order = self._rng.permutation(can)
                order = order[np.argsort(np.isin(order, bidders), kind="stable")]
                got = greedy_pack(np.arange(order.size), np.zeros(order.size, dtype=np.int64),
                                  w[order], [free.size], order.size)
                take = order[got >= 0]
                ids = free[:int(w[take].sum())]
                owner[ids] = np.repeat(v.index[take], w[take])
                self._lease_end[ids] = t + self.lease
        gpus = np.bincount(row[owner[owner >= 0]], minlength=v.n)
        return Schedule(gpus[:, None].astype(np.int64))


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------
_REGISTRY: dict[str, tuple[Callable[..., Any], str]] = {}


def register_policy(name: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register a policy factory under ``name`` (``factory(**params)`` returns a policy)."""
    if not isinstance(name, str) or not name:
        raise InputError("name must be a non-empty string", argument="name")
    if not callable(factory):
        raise InputError("factory must be callable", argument="factory")
    _REGISTRY[name] = (factory, description)


def available_policies() -> dict[str, str]:
    """Registered policy names and what they are."""
    return {k: d for k, (_, d) in sorted(_REGISTRY.items())}


def make_policy(name: str, **params: Any) -> Any:
    """Build a registered policy by name.

    Examples
    --------
    >>> make_policy("ossp").name, make_policy("las", promote_knob=None).params["promote_knob"]
    ('ossp', None)
    """
    if name not in _REGISTRY:
        raise InputError(f"unknown policy {name!r}; available: {', '.join(sorted(_REGISTRY))}",
                         argument="policy")
    factory = _REGISTRY[name][0]
    target: Any = factory
    if isinstance(factory, type):
        target = factory.__dict__.get("__init__", factory)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        sig = None
    if sig is not None and not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        names = [p.name for p in sig.parameters.values()
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
        unknown = [k for k in params if k not in names]
        if unknown:
            raise InputError(f"policy {name!r} has no parameter {unknown[0]!r}; its parameters: "
                             f"{', '.join(names) or 'none'}", argument=unknown[0])
    try:
        policy = factory(**params)
    except FairallocError:
        raise
    except (TypeError, ValueError) as exc:
        raise InputError(f"policy {name!r}: {exc}", argument="params") from exc
    policy.name = name
    return policy


def _gavel(objective: str) -> Callable[..., Any]:
    def factory(**kw: Any) -> GavelPolicy:
        return GavelPolicy(objective, **kw)

    return factory


for _name, _obj, _desc in (
    ("max_min_fairness", "max_min_fairness", "Gavel heterogeneity-aware max-min fairness (LAS)"),
    ("gavel", "max_min_fairness", "alias of max_min_fairness"),
    ("water_filling", "water_filling", "Gavel max-min fairness with water filling"),
    ("finish_time_fairness", "finish_time_fairness", "Gavel finish-time fairness program"),
    ("themis_ftf", "finish_time_fairness",
     "the Shockwave artifact's 'Themis' baseline: Gavel's FTF program"),
    ("min_makespan", "min_makespan", "Gavel minimum makespan (one LP)"),
    ("ossp", "min_makespan", "OSSP baseline: minimum makespan"),
    ("max_total_throughput", "max_total_throughput",
     "maximum total normalised throughput (MST)"),
    ("mst", "max_total_throughput", "alias of max_total_throughput"),
    ("gavel_fifo", "fifo", "Gavel's FIFO program"),
    ("sjf", "shortest_job_first", "Gavel's shortest-job-first program"),
    ("isolated", "isolated", "each job 1/n of every type"),
):
    register_policy(_name, _gavel(_obj), _desc)
register_policy("fifo", FIFOPolicy, "first come first served with backfilling")
register_policy("las", TiresiasLAS, "Tiresias discretised 2D least attained service")
register_policy("tiresias", TiresiasLAS, "alias of las")
register_policy("allox", AlloXPolicy, "AlloX min-cost matching (min average JCT)")
register_policy("gandiva_fair", GandivaFairPolicy, "Gandiva-fair stride scheduling")
register_policy("shockwave", ShockwavePolicy, "Shockwave forecast + windowed plan")
register_policy("efq", EFQPolicy, "Ares elastic fair queuing")
register_policy("themis", ThemisPolicy, "Themis leases, filter and partial-allocation auction")
register_policy("ares", EFQPolicy, "alias of efq")
