"""Ares elastic fair queuing (§3) as a simulator policy, through
[`fairalloc.ElasticFairQueue`][fairalloc.ElasticFairQueue]: jobs may get more (or fewer) GPUs than
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
    [`fairalloc.ElasticFairQueue`][fairalloc.ElasticFairQueue].

    Each job is submitted when it arrives with its GPU-time ``L_j`` (total epochs times the
    epoch time of the regime it starts in, on its fastest type, times its gang: the visible
    estimate), its gang as the requested GPU count and the scaling curve of its
    `scaling` (per-GPU efficiency kept per doubling); it is
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

    def __init__(self, *, alpha: float = EFQ_ALPHA) -> None:
        alpha = as_finite_float(alpha, "alpha", lo=0.0, hi=1.0, lo_open=True)
        super().__init__({"alpha": alpha})
        self.alpha = alpha
        self._q: Any = None

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
