"""Gavel's round loop as the Shockwave artifact's simulator runs it (``scheduler/scheduler.py``
in uw-mad-dash/shockwave), for the baselines' ``upstream`` variants.

`fairalloc.sim.policies.upstream_rounds.UpstreamRounds` realises a fractional allocation
(jobs x types) the way upstream's scheduler does, where it differs from the simulator's own
realisation of `fairalloc.sim.TimeShares`:

* the allocation is recomputed only when a job arrived, finished or changed its batch size
  since the last recomputation (scheduler.py:744, 903, 4569, 4709) **and** at least
  ``min_interval`` seconds have passed (``minimum_time_between_allocation_resets=1000``,
  scheduler.py:101; the test at scheduler.py:3612-3630);
* a job that arrived after the last recomputation is not in the allocation and gets no GPU
  until the next one: upstream's loop chooses it like a job of allocation 0 (it counts its
  workers as used) and then skips it when workers are assigned (scheduler.py:1363-1367), so
  those workers stay idle;
* each recomputation restarts every job's received time (``_reset_time_run_so_far``,
  scheduler.py:3498-3551), and a job's priority is its allocation over its share of the
  type's worker time since then (scheduler.py:3684-3712: the mechanism's
  ``fraction="type_share"``).

The round mechanism itself is `fairalloc.mechanism.RoundScheduler` (Gavel's Algorithm 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...data import Cluster
from ...errors import InputError
from ..state import RoundState, Schedule

__all__ = ["UPSTREAM_MIN_INTERVAL", "UpstreamRounds"]

#: upstream's ``minimum_time_between_allocation_resets`` (Gavel's scheduler.py:101), seconds:
#: the shortest time between two recomputations of the allocation
UPSTREAM_MIN_INTERVAL = 1000.0
#: floor of a type's requested workers when an oversubscribed type is scaled (no 0/0)
MIN_NEED = 1e-12


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
    at 100 s, after the first recomputation: it waits, on an idle GPU once job 0 is done,
    until the next one, 1000 s after the first:

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
    >>> w = Workload.from_arrays([0.0, 100.0], [[1.0], [1.0]], [300.0, 300.0])
    >>> simulate(w, fa.Cluster({"gpu": 1}), Equal(), round_duration=100.0).finish.tolist()
    [300.0, 1300.0]
    """

    def __init__(self, min_interval: float = UPSTREAM_MIN_INTERVAL) -> None:
        self.min_interval = as_min_interval(min_interval)
        self.reset(0)

    def reset(self, n: int) -> None:
        """Start a simulation of ``n`` workload rows."""
        self._x = np.zeros((n, 0))
        self._in_allocation = np.zeros(n, dtype=bool)
        self._last: float | None = None
        self._pending = False
        self._mech: Any = None
        self.recomputes = 0

    def due(self, state: RoundState) -> bool:
        """Whether upstream would recompute the allocation before this round."""
        v = state.jobs
        self._pending = (self._pending or bool(state.arrived) or bool(state.finished)
                         or bool(np.any(v.regime_changed)))
        now = state.cluster.time
        # scheduler.py:3616-3618: a last recomputation at time 0 does not count (upstream reads
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
        recomputed = x is not None
        if recomputed:
            if self._x.shape[1] != k:
                self._x = np.zeros((self._in_allocation.size, k))
            self._x[rows] = np.asarray(x, dtype=float)
            self._in_allocation[:] = False
            self._in_allocation[rows] = True
            self._last, self._pending = state.cluster.time, False
            self.recomputes += 1
        runnable = v.runnable & (v.scale_factor[:, None] <= cluster.capacity[None, :])
        allocated = self._in_allocation[rows]
        target = np.where(runnable & allocated[:, None],
                          self._x[rows] if self._x.shape[1] == k else 0.0, 0.0)
        # an allocation can ask for more workers of a type than it has (upstream's AlloX
        # keeps gangs' shares): upstream serves jobs in order of allocation / share
        # received, an order that scaling a type's column down to its workers keeps
        need = (target * v.scale_factor[:, None]).sum(axis=0)
        cap = cluster.capacity.astype(float)
        target = target * np.where(need > cap, cap / np.maximum(need, MIN_NEED), 1.0)[None, :]
        from ...mechanism import RoundScheduler

        if self._mech is None:
            self._mech = RoundScheduler(target, cluster, scale_factor=v.scale_factor,
                                        runnable=runnable, ids=v.ids, fraction="type_share")
        else:
            self._mech.update(target, scale_factor=v.scale_factor, runnable=runnable,
                              ids=v.ids, reset=recomputed)
        a = self._mech.step()
        # scheduler.py:1363-1367: a job chosen for the round but not in the allocation gets
        # no workers, and the workers it was counted on stay idle
        return Schedule.from_types(np.where(allocated, a.type_index, -1), v.scale_factor, k)
