"""Gavel's round loop as the Shockwave artifact's simulator runs it (``scheduler/scheduler.py``
in uw-mad-dash/shockwave), for the baselines' ``upstream`` variants.

`fairalloc.sim.policies.upstream_rounds.UpstreamRounds` realises a fractional allocation
(jobs x types) the way upstream's scheduler does, where it differs from the simulator's own
realisation of `fairalloc.sim.TimeShares`:

* the allocation is recomputed only when a job arrived, finished or changed its batch size
  since the last recomputation (scheduler.py:744, 903, 4569, 4709) **and** at least
  ``min_interval`` seconds have passed (``minimum_time_between_allocation_resets=1000``,
  scheduler.py:101; the test at scheduler.py:3611-3636);
* a job that arrived after the last recomputation is not in the allocation and gets no GPU
  until the next one: upstream's loop chooses it like a job of allocation 0 (it counts its
  workers as used) and then skips it when workers are assigned (scheduler.py:1360-1366), so
  those workers stay idle;
* each recomputation restarts every job's time at half a round and adds what it missed
  against the old allocation to its deficit (``_reset_time_run_so_far``,
  scheduler.py:3498-3551); a job's priority is its allocation over its share of the type's
  time since then (scheduler.py:3670-3724), and each round takes, type after type, the jobs by
  priority, deficit and allocation (largest first) whose gang still fits
  (scheduler.py:1153-1269): jobs of allocation 0 run on what is left, and an allocation
  that asks for more workers than a type has (upstream's AlloX keeps gangs' shares) is
  simply served in that order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...data import Cluster
from ...errors import InputError
from ..state import RoundState, Schedule
from .base import greedy_pack

__all__ = ["UPSTREAM_MIN_INTERVAL", "UpstreamRounds"]

#: upstream's ``minimum_time_between_allocation_resets`` (Gavel's scheduler.py:101), seconds:
#: the shortest time between two recomputations of the allocation
UPSTREAM_MIN_INTERVAL = 1000.0
#: ACCURACY: upstream's priority of a job before any time was counted on the type is its
#: allocation times this (scheduler.py:3698-3705: "don't use inf so 2*new_priority > new_priority")
UNTIMED_PRIORITY = 1e9


def as_min_interval(value: Any) -> float:
    """``value`` as a finite number of seconds ``>= 0`` (`fairalloc.InputError` naming
    ``min_interval`` otherwise)."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    gap = float(value) if ok else math.nan
    if not (math.isfinite(gap) and gap >= 0.0):
        raise InputError(f"min_interval must be a finite number >= 0, got {value!r}",
                         argument="min_interval")
    return gap


class UpstreamRounds:
    """Upstream's recomputation gate and round loop for one simulation.

    Parameters
    ----------
    min_interval : float
        Seconds between two recomputations (upstream: 1000).

    Examples
    --------
    A policy asks `UpstreamRounds.due` whether to recompute its allocation, then
    `UpstreamRounds.realise` turns the allocation into this round's GPUs. Job 1 arrives
    at 200 s, after the first recomputation (100 s): it waits, with the GPU idle once job 0
    is done at 400 s, until the next one, 1000 s after the first:

    >>> import numpy as np
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> class Equal:
    ...     name = "equal-upstream-rounds"
    ...     def reset(self, workload, cluster, *, round_duration, seed):
    ...         self.rounds = UpstreamRounds(1000.0)
    ...         self.rounds.reset(workload.n)
    ...     def allocate(self, state):
    ...         due = self.rounds.due(state)
    ...         x = np.full((state.jobs.n, 1), 1.0 / state.jobs.n) if due else None
    ...         return self.rounds.realise(state, x)
    >>> w = Workload.from_arrays([100.0, 200.0], [[1.0], [1.0]], [300.0, 300.0])
    >>> simulate(w, fa.Cluster({"gpu": 1}), Equal(), round_duration=100.0).finish.tolist()
    [400.0, 1400.0]
    """

    def __init__(self, min_interval: float = UPSTREAM_MIN_INTERVAL) -> None:
        self.min_interval = as_min_interval(min_interval)
        self.reset(0)

    def reset(self, n: int) -> None:
        """Start a simulation of ``n`` workload rows."""
        self._n = n
        self._x = np.zeros((n, 0))
        self._in_allocation = np.zeros(n, dtype=bool)
        self._last: float | None = None
        self._pending = False
        self._job_time = np.zeros((n, 0))  # seconds run per type since the last reset
        self._worker_time = np.zeros(0)  # their sum per type
        self._deficit = np.zeros((n, 0))
        self._seen = np.zeros((n, 0))  # v.received at the previous call
        self._known = np.zeros(n, dtype=bool)  # rows added to upstream's books
        self.recomputes = 0

    def due(self, state: RoundState) -> bool:
        """Whether upstream would recompute the allocation before this round."""
        v = state.jobs
        self._pending = (self._pending or bool(state.arrived) or bool(state.finished)
                         or bool(np.any(v.regime_changed)))
        now = state.cluster.time
        # scheduler.py:3617-3619: a last recomputation at time 0 does not count (upstream reads
        # ``_last_reset_time == 0`` as "never")
        never = self._last is None or self._last == 0.0
        return self._last is None or (self._pending and (
            never or now - self._last >= self.min_interval))

    def realise(self, state: RoundState, x: Any = None) -> Schedule:
        """This round's GPUs. ``x`` (active jobs x types): a recomputed allocation, given
        exactly when `UpstreamRounds.due` said so; ``None``: keep the last one."""
        v = state.jobs
        cluster: Cluster = state.cluster.cluster
        k = cluster.capacity.size
        rows = np.asarray(v.index, dtype=np.int64)
        if self._job_time.shape[1] != k:
            shape = (self._n, k)
            self._x, self._job_time = np.zeros(shape), np.zeros(shape)
            self._deficit, self._seen = np.zeros(shape), np.zeros(shape)
            self._worker_time = np.zeros(k)
        half = state.cluster.round_duration / 2.0
        # scheduler.py:738-740: a new job starts with half a round on every type
        new = ~self._known[rows]
        self._job_time[rows[new]] = half
        self._seen[rows[new]] = 0.0
        self._known[rows] = True
        # scheduler.py:4655-4661: the time each job ran last round, once per job
        ran = np.asarray(v.received, dtype=float) - self._seen[rows]
        self._seen[rows] = v.received
        self._job_time[rows] += ran
        self._worker_time += ran.sum(axis=0)
        now = state.cluster.time
        if x is not None:
            # scheduler.py:3498-3551: deficits against the old allocation, then every active
            # job back to half a round
            since = now - (self._last if self._last is not None else 0.0)
            old = np.where(self._in_allocation[rows][:, None], self._x[rows], 0.0)
            self._deficit[rows] += old * since - (self._job_time[rows] - half)
            self._job_time[rows] = half
            self._worker_time = np.full(k, half * rows.size)
            self._x[rows] = np.asarray(x, dtype=float)
            self._in_allocation[:] = False
            self._in_allocation[rows] = True
            self._last, self._pending = now, False
            self.recomputes += 1
        runnable = v.runnable & (v.scale_factor[:, None] <= cluster.capacity[None, :])
        allocated = self._in_allocation[rows]
        alloc = np.where(allocated[:, None], self._x[rows], 0.0)
        # scheduler.py:3670-3724: allocation over the share of the type's time since the
        # reset (1e9 x allocation before any time was counted); 0 without allocation
        wt = self._worker_time[None, :]
        frac = np.divide(self._job_time[rows], wt, out=np.zeros_like(alloc), where=wt > 0)
        prio = np.where(frac > 0, alloc / np.where(frac > 0, frac, 1.0),
                        alloc * UNTIMED_PRIORITY)
        prio = np.where(runnable & (alloc > 0), prio, 0.0)
        # scheduler.py:1153-1182, 1189-1269: one queue per type, by priority, deficit and
        # allocation (largest first, stable), types one after the other; a job that fits
        # takes its gang, a job without allocation counts its workers but gets none
        # (scheduler.py:1360-1366)
        n = rows.size
        typ = np.repeat(np.arange(k), n)
        job = np.tile(np.arange(n), k)
        keys = (prio.T.reshape(-1), self._deficit[rows].T.reshape(-1), alloc.T.reshape(-1))
        order = np.lexsort((np.arange(n * k), -keys[2], -keys[1], -keys[0], typ))
        ok = runnable.T.reshape(-1)[order]
        placed = greedy_pack(job[order][ok], typ[order][ok],
                             v.scale_factor[job[order][ok]], cluster.capacity, n)
        return Schedule.from_types(np.where(allocated, placed, -1), v.scale_factor, k)
