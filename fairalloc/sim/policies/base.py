"""The base class of the simulator's policies and the greedy packing every baseline uses.

* `fairalloc.sim.greedy_pack` -- vectorised greedy packing of ``(job, type)``
  candidates in priority order (a job that does not fit is skipped: backfilling);
* `fairalloc.sim.pack_by_priority` -- the active jobs packed by a priority, each
  on its preferred types;
* `fairalloc.sim.BasePolicy` -- ``name``, ``params`` and ``reset`` storing the run's
  context.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...data import Cluster
from ..state import JobView, RoundState, Schedule, TimeShares
from ..workload import Workload

__all__ = ["BasePolicy", "greedy_pack", "pack_by_priority", "type_preference"]

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


def type_preference(view: JobView, cluster: Cluster, prefer: str) -> np.ndarray:
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

    Returns
    -------
    Schedule
        The round's placement: jobs in priority order, each on the first of its preferred
        types with room for its whole gang (a job that fits nowhere waits).

    Examples
    --------
    A policy that runs the job with the most work left first (`BasePolicy`):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> class LongestFirst(BasePolicy):
    ...     name = "longest_first"
    ...     def allocate(self, state):
    ...         v = state.jobs
    ...         left = (v.total_epochs - v.epochs_done) * v.epoch_seconds.min(axis=1)
    ...         return pack_by_priority(v, self.cluster, -left)
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> simulate(w, fa.Cluster({"gpu": 1}), LongestFirst()).finish.tolist()
    [720.0, 1080.0]
    """
    pr = np.asarray(priority, dtype=float)
    rank = (type_preference(view, cluster, prefer) if isinstance(prefer, str)
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
    """Common plumbing: ``name``, ``params`` and ``reset`` storing the run's context.

    Parameters
    ----------
    params : mapping, optional
        The policy's parameters, shown by ``repr`` and recorded in
        `fairalloc.sim.SimulationResult.params`.

    Examples
    --------
    A subclass sets ``name`` and implements ``allocate``; ``reset`` has stored the run's
    ``workload``, ``cluster`` and ``round_duration``:

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> class ByArrival(BasePolicy):
    ...     name = "by_arrival"
    ...     def allocate(self, state):
    ...         return pack_by_priority(state.jobs, self.cluster, state.jobs.arrival)
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), ByArrival({"note": "demo"}))
    >>> r.policy, r.params, r.finish.tolist()
    ('by_arrival', {'note': 'demo'}, [360.0, 1080.0])
    """

    name = "policy"

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        self.params = dict(params or {})
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
