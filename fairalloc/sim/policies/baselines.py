"""Baselines of the papers' evaluations: FIFO, Tiresias LAS, AlloX and Gandiva-fair.

* `fairalloc.sim.FIFOPolicy` -- first come first served with backfilling.
* `fairalloc.sim.TiresiasLAS` -- Tiresias's discretised two-dimensional
  least-attained-service (queues by attained GPU-time, FIFO within a queue, promotion of starving
  jobs).
* `fairalloc.sim.AlloXPolicy` -- AlloX: minimum average completion time by min-cost
  bipartite matching of jobs to (accelerator type, position) slots, with its fairness filter.
* `fairalloc.sim.GandivaFairPolicy` -- Gandiva-fair's stride scheduling with
  tickets (by default the gang size, as in the Shockwave evaluation), work conserving.

Each realises its priority order with the greedy packing of `.base`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._validation import as_option, as_positive_float
from ...data import Cluster
from ...errors import InputError
from ..state import RoundState, Schedule
from ..workload import Workload
from .base import BasePolicy, pack_by_priority, type_preference

__all__ = ["AlloXPolicy", "FIFOPolicy", "GandivaFairPolicy", "TiresiasLAS"]

#: tie-break weight of the workload row in FIFO's arrival priority (rows stay below one
#: arrival-time unit: ties only)
FIFO_ROW_TIEBREAK = 1e-9
#: Tiresias's default queue boundaries in GPU-seconds (1 and 10 GPU-hours)
LAS_THRESHOLDS = (3600.0, 36000.0)
#: Tiresias's default starvation knob (promote after waiting this many times the time run)
LAS_PROMOTE_KNOB = 8.0
#: LAS priority = queue x (this factor x the latest arrival) + arrival: queues dominate
LAS_QUEUE_SPREAD = 4.0
#: floor of the elapsed time in AlloX's waiting share (no division by zero)
ALLOX_MIN_ELAPSED = 1e-12
#: cost of an impossible (job, slot) pair in AlloX's assignment problem
ALLOX_FORBIDDEN_COST = 1e18
#: tie-break weight of the arrival in Gandiva-fair's pass priority (earlier first among equals)
GANDIVA_ARRIVAL_TIEBREAK = 1e-12

class FIFOPolicy(BasePolicy):
    """First come, first served with backfilling (re-evaluated every round).

    Jobs are ranked by arrival (ties by workload row); each, in turn, takes its gang on its
    fastest type with room (``prefer="order"``: the cluster's type order). A job that does not
    fit is skipped and later jobs may use the GPUs; an earlier job reclaims them at the next
    round when it fits (so backfilled jobs can be preempted).

    Parameters
    ----------
    prefer : {"fastest", "order"}, default "fastest"
        Each job's type preference: its fastest type first, or the cluster's type order.

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), FIFOPolicy())
    >>> r.policy, r.finish.tolist()
    ('fifo', [360.0, 1080.0])
    """

    name = "fifo"
    #: the decision depends only on the active jobs, their arrival order and current regimes
    #: (the simulator's contract: it fast-forwards between events)
    time_invariant = True

    def __init__(self, *, prefer: str = "fastest") -> None:
        prefer = as_option(prefer, "prefer", ("fastest", "order"))
        super().__init__({"prefer": prefer})
        self.prefer = prefer

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        pr = v.arrival + FIFO_ROW_TIEBREAK * v.index / max(1, v.index.max(initial=0) + 1)
        return pack_by_priority(v, state.cluster.cluster, pr, prefer=self.prefer)


class TiresiasLAS(BasePolicy):
    """Tiresias's discretised 2D least-attained-service (Gu et al., NSDI 19; Gavel §4.1).

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
        Each job's type preference (`FIFOPolicy`'s ``prefer``); default ``"order"``.

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), TiresiasLAS())
    >>> r.policy, r.finish.tolist()
    ('las', [360.0, 1080.0])
    """

    name = "las"

    def __init__(self, *, thresholds: Any = LAS_THRESHOLDS,
                 promote_knob: float | None = LAS_PROMOTE_KNOB,
                 prefer: str = "order") -> None:
        th = np.sort(np.asarray(thresholds, dtype=float).reshape(-1))
        if th.size and not (np.isfinite(th).all() and (th > 0).all()):
            raise InputError("thresholds must be positive and finite", argument="thresholds")
        knob = None if promote_knob is None else as_positive_float(promote_knob, "promote_knob")
        prefer = as_option(prefer, "prefer", ("fastest", "order"))
        super().__init__({"thresholds": tuple(th.tolist()), "promote_knob": knob,
                          "prefer": prefer})
        self.thresholds, self.promote_knob, self.prefer = th, knob, prefer

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        queue = np.searchsorted(self.thresholds, v.gpu_seconds, side="right").astype(float)
        if self.promote_knob is not None:
            starving = (v.attained > 0) & (v.idle_for >= self.promote_knob * v.attained) \
                & ~v.running
            queue = np.where(starving, 0.0, queue)
        scale = max(float(v.arrival.max(initial=0.0)), 1.0) * LAS_QUEUE_SPREAD
        return pack_by_priority(v, state.cluster.cluster, queue * scale + v.arrival,
                                prefer=self.prefer)


class AlloXPolicy(BasePolicy):
    """AlloX (Le et al., EuroSys 20; Gavel §7.3, Shockwave §8.2): minimum average
    job completion time on heterogeneous resources by min-cost bipartite matching.

    Each type ``j`` with ``c_j`` workers offers, at every position ``p = 1, 2, ...`` from the
    end of its queue, ``c_j`` slots; placing job ``i`` there costs ``p * w_i * T_ij`` (its
    remaining processing time on the type times its gang, weighted by the number of jobs it
    delays). The minimum-cost matching (Hungarian method,
    `scipy.optimize.linear_sum_assignment`) minimises the total completion time of the
    single-worker case exactly (Bruno, Coffman and Sethi); jobs at higher positions run
    first. Each round the matching is recomputed; the round runs jobs in matching order on
    their matched type (greedy packing for gangs; AlloX itself handles single-worker jobs).

    Fairness filter (AlloX §4, Shockwave §2): only the ``ceil(alpha * n)`` jobs that have
    waited longest (largest ``waiting / elapsed``) take part; ``alpha = 1`` disables it.

    Not the Shockwave artifact's AlloX: this policy re-matches every job every round, while
    upstream's variant lets a job that holds its full allocation keep its GPUs and uses a
    different cost. The reproduction benchmark labels its row "AlloX (re-matched every round;
    not upstream's variant)".

    Parameters
    ----------
    alpha : float, default 1.0
        The fairness filter's fraction in ``(0, 1]`` (``1``: no filter).

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), AlloXPolicy(alpha=0.5))
    >>> r.policy, r.finish.tolist()
    ('allox', [360.0, 1080.0])
    """

    name = "allox"

    def __init__(self, *, alpha: float = 1.0) -> None:
        a = as_positive_float(alpha, "alpha")
        if a > 1.0:
            raise InputError(f"alpha must be in (0, 1], got {alpha!r}", argument="alpha")
        super().__init__({"alpha": a})
        self.alpha = a

    def allocate(self, state: RoundState) -> Schedule:
        from scipy.optimize import linear_sum_assignment

        v = state.jobs
        cluster = state.cluster.cluster
        n = v.n
        usable = v.runnable & (v.scale_factor[:, None] <= cluster.capacity[None, :])
        if self.alpha < 1.0:
            take = max(1, math.ceil(self.alpha * n))
            share = np.where(v.elapsed > 0,
                             v.waiting / np.maximum(v.elapsed, ALLOX_MIN_ELAPSED), 1.0)
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
        big = ALLOX_FORBIDDEN_COST
        cost = np.where(usable[rows][:, col_type],
                        col_pos[None, :] * (v.scale_factor[rows, None] * T[:, col_type]), big)
        cost = np.where(np.isfinite(cost), cost, big)
        r_idx, c_idx = linear_sum_assignment(cost)
        matched_type = np.full(n, -1, dtype=np.int64)
        matched_pos = np.zeros(n)
        ok = cost[r_idx, c_idx] < big
        matched_type[rows[r_idx[ok]]] = col_type[c_idx[ok]]
        matched_pos[rows[r_idx[ok]]] = col_pos[c_idx[ok]]
        pref = type_preference(v, cluster, "fastest")
        pref = np.where(np.arange(k)[None, :] == matched_type[:, None], -1.0, pref)
        # higher position = starts earlier; ties: shorter on the matched type first
        short = np.take_along_axis(v.remaining_seconds, np.maximum(matched_type, 0)[:, None],
                                   axis=1)[:, 0]
        order_key = np.lexsort((short, -matched_pos))
        priority = np.empty(n)
        priority[order_key] = np.arange(n)
        return pack_by_priority(v, cluster, priority, prefer=pref, limit=matched_type >= 0)


class GandivaFairPolicy(BasePolicy):
    """Gandiva-fair (Chaudhary et al., EuroSys 20; Shockwave §8.2, §8.5): proportional
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
        Each job's tickets (its share): its gang size (default), its priority weight, or 1.
    prefer : {"fastest", "order"}
        Each job's type preference (`FIFOPolicy`'s ``prefer``); default ``"fastest"``.

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), GandivaFairPolicy())
    >>> r.policy, r.finish.tolist()
    ('gandiva_fair', [360.0, 1080.0])
    """

    name = "gandiva_fair"

    def __init__(self, *, tickets: str = "scale_factor", prefer: str = "fastest") -> None:
        tickets = as_option(tickets, "tickets", ("scale_factor", "weight", "equal"))
        prefer = as_option(prefer, "prefer", ("fastest", "order"))
        super().__init__({"tickets": tickets, "prefer": prefer})
        self.tickets, self.prefer = tickets, prefer
        self._pass = np.zeros(0)
        self._gpus_seen = np.zeros(0)

    @property
    def passes(self) -> np.ndarray:
        """Stride-scheduling pass of every workload row so far (``nan``: not seen yet), a
        read-only copy; service is charged when the next round is decided."""
        out = self._pass.copy()
        out.flags.writeable = False
        return out

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
        return pack_by_priority(v, state.cluster.cluster, p + GANDIVA_ARRIVAL_TIEBREAK * v.arrival,
                                prefer=self.prefer)
