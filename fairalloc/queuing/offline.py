"""Elastic fair queuing of a whole arrival sequence: `fairalloc.efq_schedule` and
its result.

Runs the GPS reference and the EFQ event engine over every arrival to completion, then checks
the schedule with the independent replay (`fairalloc.queuing.replay`) before returning an
`fairalloc.EFQResult`; `fairalloc.efq_finish_times` is the
``(efq_finish, gps_finish)`` wrapper.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._display import View, fmt, labelled, summary_line, to_html, verdict_of
from .._validation import as_array, as_finite_float, as_labels
from ..errors import InputError, SolverError, only_fairalloc_errors
from ..results import FrozenArrays, SolveStats, Status, fill_labels, readonly, require_pandas
from .curves import (
    DEFAULT_ALPHA,
    _caps_and_speeds,
    _cluster_power,
    _validate_alpha,
    _validate_requested,
    _validate_scaling,
)
from .engine import _Engine, _GPSReference
from .incremental import _Incremental
from .replay import ReplayCheck, _verify_schedule

#: named steps of `fairalloc.efq_schedule`, in order (``EFQResult.stats.path``)
EFQ_PATH = ("gps_reference", "efq_events", "replay_check")



@dataclass(frozen=True, repr=False)
class EFQResult(FrozenArrays):
    """A whole arrival sequence run to completion under EFQ, with its GPS reference.

    This is a simulation, not an optimisation: there is no optimality certificate. ``check`` is
    the independent replay of the schedule (`fairalloc.ReplayCheck`: capacity,
    α-capped maxima, work conservation, work done equals each job's GPU-time at its finish, GPS
    fixed point) and ``status`` is `fairalloc.Status.REPLAYED` (a result is only returned when
    ``check.ok``). Every array is read-only.

    Parameters
    ----------
    objective : float
        Mean job completion time under EFQ.
    status : Status
        Always ``Status.REPLAYED``.
    stats : SolveStats
        ``backend="efq"`` (no solver ran), ``iterations`` = events simulated, ``path`` =
        ``("gps_reference", "efq_events", "replay_check")`` (the GPS reference over the
        arrivals, the EFQ event loop, the independent replay check; no fallbacks exist).
    check : ReplayCheck
        The independent replay check (``check.ok`` is true on every returned result).
    efq_finish, gps_finish : ndarray, shape (n,)
        Finish times under EFQ and under the GPS reference.
    arrival, gpu_time : ndarray, shape (n,)
        The inputs (read-only copies).
    virtual_finish : ndarray, shape (n,)
        ``F_j = V(a_j) + L_j`` (Eq. 3).
    priority : ndarray of int, shape (n,)
        Rank of each job in the EFQ order ``(F, arrival)``; 0 is served first.
    max_gpus : ndarray of int, shape (n,)
        The α-capped maximum of each job (§3.3), clipped to the cluster.
    preemptions : ndarray of int, shape (n,)
        How many times each job lost all its GPUs before finishing.
    busy_period : float
        The longest interval during which every GPU was allocated (the paper's 𝓛, §3.4).
    alpha : float
        The α of the α-capped maxima (§3.3).
    num_gpus : int
        GPUs in the cluster.
    ids : tuple
        The jobs' ids (``efq_schedule(ids=)``; default ``0..n-1``): rows of ``allocation``,
        ``to_frame()`` and the notebook view (``log_job`` holds row indices).
    log_time, log_job, log_gpus, log_power : ndarray
        Allocation changes: from ``log_time`` on, job ``log_job`` holds ``log_gpus`` GPUs of
        total relative power ``log_power`` (equal to the GPU count on a homogeneous cluster).

    Attributes
    ----------
    allocation : scipy.sparse.csr_array, shape (n, len(allocation_times))
        GPUs each job holds from each allocation change on (a property computed from the log;
        the name every result uses for what it allocates); ``x`` is the same. ``prices`` is
        ``None`` (a simulation has no dual prices).

    Examples
    --------
    >>> r = efq_schedule([0, 0, 0], [1.0, 2.0, 3.0], 1)
    >>> r.status.value, r.check.ok, r.priority.tolist(), r.preemptions.tolist()
    ('replayed', True, [0, 1, 2], [0, 0, 0])
    >>> r.stats.path, r.allocation.shape
    (('gps_reference', 'efq_events', 'replay_check'), (3, 4))
    """

    objective: float
    status: Status
    stats: SolveStats
    check: ReplayCheck
    efq_finish: np.ndarray
    gps_finish: np.ndarray
    arrival: np.ndarray
    gpu_time: np.ndarray
    virtual_finish: np.ndarray
    priority: np.ndarray
    max_gpus: np.ndarray
    preemptions: np.ndarray
    busy_period: float
    alpha: float
    num_gpus: int
    log_time: np.ndarray
    log_job: np.ndarray
    log_gpus: np.ndarray
    log_power: np.ndarray
    ids: tuple[Hashable, ...] = ()

    LABEL_FIELDS: ClassVar[tuple[str, ...]] = ("ids",)

    def __post_init__(self) -> None:
        fill_labels(self, ids=self.arrival.size)
        super().__post_init__()
        if not isinstance(self.check, ReplayCheck):
            raise InputError("check must be a ReplayCheck", argument="check")
        if self.status != Status.REPLAYED:
            raise InputError(f"an EFQ schedule is a replayed simulation: status must be "
                             f"{Status.REPLAYED!r}, got {self.status!r}", argument="status")
        self.check.check()

    @property
    def x(self) -> Any:
        """Alias of ``allocation`` (the name every result shares)."""
        return self.allocation

    @property
    def prices(self) -> None:
        """``None``: EFQ is a simulation, not an optimisation, so there are no dual prices.
        Every result has ``prices``."""
        return None

    @property
    def certificate(self) -> ReplayCheck:
        """Alias of `check` (a `fairalloc.ReplayCheck`, not an optimality
        certificate)."""
        return self.check

    @property
    def allocation_times(self) -> np.ndarray:
        """The distinct times at which some job's allocation changes, increasing (the column
        times of `fairalloc.queuing.EFQResult.allocation`)."""
        return readonly(np.unique(self.log_time))

    @property
    def allocation(self) -> Any:
        """GPUs each job holds over time: a ``scipy.sparse.csr_array`` of shape
        ``(n, len(allocation_times))``, entry ``[j, k]`` the GPUs job ``j`` holds from
        ``allocation_times[k]`` until the next change (``.toarray()`` for a dense array).

        The name every result uses for what it allocates; sparse because a job holds GPUs
        only between its arrival and its finish. ``allocation_at(t)`` gives one instant.
        """
        import scipy.sparse as sp  # only here: the queue itself never needs scipy

        times = self.allocation_times
        n = self.arrival.size
        order = np.lexsort((np.arange(self.log_time.size), self.log_time, self.log_job))
        job, t, g = self.log_job[order], self.log_time[order], self.log_gpus[order]
        last = np.ones(job.size, dtype=bool)  # the last entry of a (job, time) pair holds
        last[:-1] = (job[1:] != job[:-1]) | (t[1:] != t[:-1])
        job, t, g = job[last], t[last], g[last]
        start = np.searchsorted(times, t)
        end = np.full_like(start, times.size)
        same = job[1:] == job[:-1]
        end[:-1][same] = start[1:][same]
        held = g > 0
        job, g, start, end = job[held], g[held], start[held], end[held]
        span = end - start
        offset = np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span)
        cols = np.repeat(start, span) + offset
        return sp.csr_array((np.repeat(g, span), (np.repeat(job, span), cols)),
                            shape=(n, times.size))

    def _view(self, tables: bool = True) -> View:
        facts = [("jobs", str(self.arrival.size)), ("num_gpus", str(self.num_gpus)),
                 ("alpha", fmt(self.alpha)), ("mean_jct", fmt(self.objective)),
                 ("busy_period", fmt(self.busy_period))]
        table = labelled("jobs (times in the arrivals' unit)", "job", self.ids,
                         (), None, extra=[
                             ("arrival", self.arrival), ("gpu_time", self.gpu_time),
                             ("max_gpus", self.max_gpus), ("efq_finish", self.efq_finish),
                             ("gps_finish", self.gps_finish), ("delay", self.delay),
                             ("preemptions", self.preemptions)])
        return View("EFQResult", facts, verdict_of(self.check, self.status),
                    [table] if tables else ())

    def __repr__(self) -> str:
        return summary_line(self._view(tables=False), self.stats.seconds)

    def _repr_html_(self) -> str:
        """The notebook view: the replay verdict and one row per job (first rows)."""
        return to_html(self._view(), self.stats.seconds)

    @property
    def delay(self) -> np.ndarray:
        """``f_j - f~_j``: EFQ finish minus GPS finish (negative: the job finished earlier)."""
        return readonly(self.efq_finish - self.gps_finish)

    @property
    def delay_bound(self) -> float:
        """Theorem 1's bound ``(1/alpha - 1) * busy_period`` (see ``proofs/efq_delay_bound.md``
        for the condition under which it is guaranteed)."""
        return (1.0 / self.alpha - 1.0) * self.busy_period

    @property
    def jct(self) -> np.ndarray:
        """Job completion times under EFQ, ``efq_finish - arrival``."""
        return readonly(self.efq_finish - self.arrival)

    @only_fairalloc_errors
    def allocation_at(self, t: float) -> np.ndarray:
        """GPUs each job holds at time ``t`` (right-continuous), shape (n,)."""
        t = as_finite_float(t, "t")
        out = np.zeros(self.arrival.size, dtype=np.int64)
        srt = np.lexsort((np.arange(self.log_time.size), self.log_time, self.log_job))
        hit = srt[self.log_time[srt] <= t]
        if hit.size:
            jobs = self.log_job[hit]
            last = hit[np.concatenate((jobs[1:] != jobs[:-1], [True]))]
            out[self.log_job[last]] = self.log_gpus[last]
        return readonly(out)

    def to_frame(self) -> Any:
        """One row per job: arrival, GPU-time, F, priority, maxima, finish times, delay."""
        pd = require_pandas()
        return pd.DataFrame(index=pd.Index(list(self.ids), name="job"), data={
            "arrival": self.arrival, "gpu_time": self.gpu_time,
            "virtual_finish": self.virtual_finish, "priority": self.priority,
            "max_gpus": self.max_gpus, "efq_finish": self.efq_finish,
            "gps_finish": self.gps_finish, "delay": self.delay,
            "preemptions": self.preemptions,
        })


@only_fairalloc_errors
def efq_schedule(
    arrival: Any, gpu_time: Any, num_gpus: int | Mapping[str, int], *, alpha: float = DEFAULT_ALPHA,
    requested: Any = None, scaling: Any = None, gpu_power: Mapping[str, float] | None = None,
    ids: Any = None,
) -> EFQResult:
    """Run an arrival sequence to completion under elastic fair queuing (Ares §3.2-3.5).

    Idealised: preemption and resizing are free, and every job's GPU-time is known. Events are
    arrivals and EFQ completions; between events allocations are constant, so the simulation is
    exact (no time step). The GPS reference runs alongside with a heap (O(log n) per event).

    Parameters
    ----------
    arrival : array_like, shape (n,)
        Arrival times ``a_j >= 0`` (any order; ties are served first-come first by index).
    gpu_time : array_like, shape (n,)
        ``L_j > 0``: GPU-time of each job with its requested GPUs (in *average* GPUs on a
        heterogeneous cluster).
    num_gpus : int or mapping of str to int
        ``M`` GPUs, or GPU type -> count for a heterogeneous cluster (with ``gpu_power``).
    alpha : float, default 0.75
        Scaling-control threshold in (0, 1]: a job keeps doubling its GPUs while its per-GPU
        efficiency relative to its request stays ``>= alpha``.
    requested : array_like of int, shape (n,), optional
        GPUs each job asked for (default 1); at most ``M``.
    scaling : array_like, shape (K+1,) or (n, K+1), optional
        Throughput at 1, 2, 4, ..., ``2^K`` GPUs (one curve for all jobs, or one per job),
        linearly interpolated in between; per-GPU throughput must not increase. ``None``:
        linear scaling (a job can use the whole cluster at full efficiency).
    gpu_power : mapping of str to float, optional
        Relative computing power of each GPU type (heterogeneous clusters, §3.5).
    ids : sequence of hashable, optional
        The jobs' ids (unique, one per arrival); default ``0..n-1``. The result carries them
        and labels ``to_frame()`` and its notebook view with them.

    Returns
    -------
    EFQResult
        Finish times under EFQ and GPS, virtual finish times, the allocation log, and the
        independent replay check (``status == Status.REPLAYED``: a simulation, not an
        optimisation).

    Raises
    ------
    InputError
        For invalid inputs, naming the argument and index.
    CertificateError
        If the independent replay check of the schedule fails (never expected; e.g. times so
        large that they overflow).

    Examples
    --------
    Three jobs at time 0 with 1, 2 and 3 GPU-hours on one GPU (the idea of Ares Fig. 1).

    >>> r = efq_schedule([0, 0, 0], [1.0, 2.0, 3.0], 1)
    >>> r.efq_finish.tolist(), r.gps_finish.tolist()
    ([1.0, 3.0, 6.0], [3.0, 5.0, 6.0])
    >>> float(r.objective)  # mean JCT: 3.33 h instead of 4.67 h under fair sharing
    3.3333333333333335
    """
    t_start = time.perf_counter()
    alpha_f = _validate_alpha(alpha)
    m, power, _types, _counts, _tpow = _cluster_power(num_gpus, gpu_power)
    arr = as_array(arrival, "arrival", ndim=1)
    n = arr.shape[0]
    work = as_array(gpu_time, "gpu_time", ndim=1, shape=(n,), positive=True)
    labels = as_labels(ids, "ids", n, "jobs")
    curves = _validate_scaling(scaling, n)
    req = _validate_requested(requested, n, m, curves)
    if power is not None:
        power = power / power.mean()
    cap, speed = _caps_and_speeds(req, curves, m, alpha_f)

    # GPS reference (virtual time) over the arrivals in order.
    by_arrival = np.argsort(arr, kind="stable")
    gps = _GPSReference(m)
    vfin = np.empty(n)
    gps_fin = np.empty(n)
    a_sorted = arr[by_arrival]
    w_sorted = work[by_arrival]
    for pos in range(n):  # one heap event per arrival (the algorithm's O(log n) step)
        f, departed = gps.arrive(float(a_sorted[pos]), float(w_sorted[pos]), int(pos))
        vfin[by_arrival[pos]] = f
        for key, t_dep in departed:
            gps_fin[by_arrival[key]] = t_dep
    for key, t_dep in gps.advance(math.inf):
        gps_fin[by_arrival[key]] = t_dep

    # EFQ service, event by event.
    batch_end = np.searchsorted(a_sorted, a_sorted, side="right")
    run = _events_vectorised if power is not None else _events_incremental
    efq_fin, events, (log_t, log_j, log_g, log_p), preempt = run(
        m, power, work, cap, speed, vfin, a_sorted, by_arrival, batch_end)
    with np.errstate(all="ignore"):  # overflowing times show up as non-finite residuals
        replay, busy, _ = _verify_schedule(
            num_gpus=m, power=power, alpha=alpha_f, arrival=arr, gpu_time=work,
            requested=req, scaling=curves, virtual_finish=vfin, gps_finish=gps_fin,
            efq_finish=efq_fin, log_t=log_t, log_j=log_j, log_g=log_g, log_p=log_p,
        )
    replay.check()
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), by_arrival.argsort(kind="stable"), vfin))] = np.arange(n)
    out = {}
    for name, val in (("efq_finish", efq_fin), ("gps_finish", gps_fin), ("arrival", arr),
                      ("gpu_time", work), ("virtual_finish", vfin), ("priority", rank),
                      ("max_gpus", cap), ("preemptions", preempt),
                      ("log_time", log_t), ("log_job", log_j), ("log_gpus", log_g),
                      ("log_power", log_p)):
        val = np.asarray(val)
        val.flags.writeable = False
        out[name] = val
    stats = SolveStats(backend="efq", method="event-driven", seconds=time.perf_counter() - t_start,
                       iterations=events, solves=0, path=EFQ_PATH)
    mean_jct = float(np.mean(efq_fin - arr)) if n else 0.0
    return EFQResult(objective=mean_jct, status=Status.REPLAYED, stats=stats, check=replay,
                     busy_period=busy, alpha=alpha_f, num_gpus=m, ids=labels, **out)


def _check_events(events: int, n: int) -> None:
    if events > 2 * n + 2:  # every event admits a batch or finishes a job: never reached
        raise SolverError(f"efq_schedule: the event loop did not terminate after {events} "
                          f"events for {n} jobs (non-finite times?)", backend="efq")


def _events_vectorised(
    m: int, power: np.ndarray | None, work: np.ndarray, cap: np.ndarray, speed: np.ndarray,
    vfin: np.ndarray, a_sorted: np.ndarray, by_arrival: np.ndarray, batch_end: np.ndarray,
) -> tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """The EFQ events of a whole sequence with the vectorised engine (`_Engine`: any cluster,
    needed on heterogeneous ones); returns finish times, events, the log and preemptions."""
    n = work.size
    eng = _Engine(m, power, speed.shape[1], record=True, rows=n)
    eng.add(work, cap, speed)
    efq_fin = np.full(n, np.nan)
    i = 0
    events = 0
    while i < n or eng.run_idx.size:
        t_arr = float(a_sorted[i]) if i < n else math.inf
        t_done = eng.t_next
        finished = None
        if t_done <= t_arr:
            eng.progress(t_done)
            finished = eng.remove_head(eng.due())
            efq_fin[finished] = t_done
            now = t_done
        else:
            now = t_arr
            eng.progress(now)
        if i < n and a_sorted[i] <= now:
            j = int(batch_end[i])
            batch = by_arrival[i:j]
            eng.insert(batch, vfin[batch])
            i = j
        eng.reallocate(finished)
        events += 1
        _check_events(events, n)

    return efq_fin, events, eng.log(), eng.preempt[:n].copy()


def _events_incremental(
    m: int, power: np.ndarray | None, work: np.ndarray, cap: np.ndarray, speed: np.ndarray,
    vfin: np.ndarray, a_sorted: np.ndarray, by_arrival: np.ndarray, batch_end: np.ndarray,
) -> tuple[np.ndarray, int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """The same on identical GPUs with the incremental engine (`_Incremental`,
    ``O(log n + changes)`` per event): completions first, then the arrivals of the same
    instant, logged as one event (``power`` is None)."""
    n = work.size
    eng = _Incremental(m, record=True, auto_finish=True)
    eng.reserve(work.tolist(), cap.tolist(), speed.tolist())
    eng.hold = True
    efq_fin = np.full(n, np.nan)
    f_of = vfin.tolist()
    arr_t = a_sorted.tolist()
    order = by_arrival.tolist()
    ends = batch_end.tolist()
    i = 0
    events = 0
    while i < n or eng.run:
        t_arr = arr_t[i] if i < n else math.inf
        if eng.t_next <= t_arr:
            now, fin = eng.complete_next()
            efq_fin[fin] = now
        else:
            now = t_arr
            eng.progress(now)
        if i < n and arr_t[i] <= now:
            j = ends[i]
            for row in order[i:j]:
                eng.activate(row, f_of[row])
            i = j
        eng.end_event()
        events += 1
        _check_events(events, n)
    log_g = np.array(eng.log_g, dtype=np.int64)
    log = (np.array(eng.log_t, dtype=float), np.array(eng.log_j, dtype=np.int64), log_g,
           log_g.astype(float))
    return efq_fin, events, log, np.array(eng.preempt, dtype=np.int64)


@only_fairalloc_errors
def efq_finish_times(
    arrival: Any, gpu_time: Any, num_gpus: int | Mapping[str, int], *, alpha: float = DEFAULT_ALPHA,
    requested: Any = None, scaling: Any = None, gpu_power: Mapping[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Finish time of every job under elastic fair queuing and under GPS (Ares §3.2-3.4).

    Runs the whole arrival sequence to completion (idealised: no preemption overhead) with
    `fairalloc.efq_schedule`, whose independent schedule check must pass.

    Parameters
    ----------
    arrival, gpu_time, num_gpus, alpha, requested, scaling, gpu_power
        As in `fairalloc.efq_schedule`. Defaults: one GPU requested, linear scaling.

    Returns
    -------
    efq_finish, gps_finish : ndarray, shape (n,)

    Examples
    --------
    >>> efq, gps = efq_finish_times([0, 0, 0], [1.0, 2.0, 3.0], 1)
    >>> efq.tolist(), gps.tolist()
    ([1.0, 3.0, 6.0], [3.0, 5.0, 6.0])
    """
    r = efq_schedule(arrival, gpu_time, num_gpus, alpha=alpha, requested=requested,
                     scaling=scaling, gpu_power=gpu_power)
    return r.efq_finish, r.gps_finish
