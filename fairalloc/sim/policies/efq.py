"""Ares elastic fair queuing (§3) as a simulator policy, through
`fairalloc.ElasticFairQueue`: jobs may get more (or fewer) GPUs than
they asked for.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._validation import as_finite_float
from ...data import Cluster
from ..state import RoundState, Schedule
from ..workload import Workload
from .base import BasePolicy

__all__ = ["EFQPolicy"]

#: Ares's default scaling-control threshold alpha (Ares §3.3)
EFQ_ALPHA = 0.75

class EFQPolicy(BasePolicy):
    """Ares elastic fair queuing (§3) through
    `fairalloc.ElasticFairQueue`.

    Each job is submitted when it arrives with its GPU-time ``L_j`` (total epochs times the
    epoch time of the regime it starts in, on its fastest type, times its gang: the visible
    estimate), its gang as the requested GPU count and the scaling curve of its
    `scaling` (per-GPU efficiency kept per doubling); it is
    finished when the simulator reports it. Every round the queue's allocation is used as
    is: jobs first in virtual-finish order may hold up to their α-capped maximum of GPUs.
    On a heterogeneous cluster (``gpu_power``: the mean speed of each type relative to the
    others over the workload) the policy places the queue's order itself, because the queue
    knows nothing of which types a job can run on: each job in turn takes up to its α-capped
    maximum from the free GPUs of the types where it can run, fastest type first. When every
    job can run everywhere this is exactly the queue's own placement; otherwise a job that
    cannot use the GPUs left to it gets fewer (or none), and later jobs may use them.

    The queue moves only at arrivals and completions (its allocation changes only then), so
    the policy is ``time_invariant``: the simulator reuses its decision between events and
    fast-forwards over rounds in which nothing happens.

    Parameters
    ----------
    alpha : float, default 0.75
        Scaling-control threshold (§3.3).

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), EFQPolicy())
    >>> r.policy, r.finish.tolist()
    ('efq', [360.0, 1080.0])
    """

    name = "efq"
    #: the decision changes only when a job arrives or finishes (the simulator's contract)
    time_invariant = True

    def __init__(self, *, alpha: float = EFQ_ALPHA) -> None:
        alpha = as_finite_float(alpha, "alpha", lo=0.0, hi=1.0, lo_open=True)
        super().__init__({"alpha": alpha})
        self.alpha = alpha
        self._q: Any = None
        self._cap: dict[Any, int] = {}
        self._type_order = np.zeros(0, dtype=np.int64)

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        from ...queuing import ElasticFairQueue

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
        # the queue's type order: fastest first, ties in the cluster's order
        self._type_order = (np.argsort(-rel, kind="stable") if cluster.num_types > 1
                            else np.zeros(1, dtype=np.int64))
        self._cap = {}
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
                self._cap.pop(jid, None)
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
            self._cap[jid] = q.job(jid).max_gpus
        # (no advance to the round's start: with auto_finish=False the allocation changes only
        # at the events above, so the queue moves only with them)
        k = state.cluster.cluster.num_types
        gpus = np.zeros((v.n, k), dtype=np.int64)
        alloc = q.allocation()  # every job in the queue, in priority order
        if k == 1:
            gpus[:, 0] = [int(alloc.get(jid, 0)) for jid in v.ids]
            return Schedule(gpus)
        rows = np.array([row_of[jid] for jid in alloc], dtype=np.int64)
        need = np.array([self._cap[jid] for jid in alloc], dtype=np.int64)
        free = state.cluster.cluster.capacity.astype(np.int64)
        usable = v.runnable[rows]
        for j in self._type_order.tolist():  # fastest type first, every job at once
            want = np.where(usable[:, j], need, 0)
            take = np.clip(free[j] - (np.cumsum(want) - want), 0, want)
            gpus[rows, j] = take
            need -= take
        return Schedule(gpus)
