"""The online elastic fair queuing scheduler `fairalloc.ElasticFairQueue` (Ares
§3.2-3.5).

Events (arrivals, completions, cancellations) drive the GPS reference of
`fairalloc.queuing.engine` and, one event at a time, the incremental EFQ service system of
`fairalloc.queuing.incremental` (homogeneous clusters: ``O(log n + changes)`` per event) or the
vectorised `_Engine` (heterogeneous clusters), as the offline schedule does; jobs without a
GPU-time estimate share a separate pool by max-min fair sharing (§3.5).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_bool, as_finite_float, as_positive_float, as_positive_int
from ..errors import FairallocError, InputError, foreign_error, only_fairalloc_errors
from ..results import readonly
from .curves import (
    DEFAULT_ALPHA,
    _cluster_power,
    _one_cap_and_speed,
    _validate_alpha,
    _validate_one_curve,
    _water_fill,
)
from .engine import _Engine, _GPSReference
from .incremental import _Incremental


def _check_job_id(job_id: Any) -> None:
    try:
        hash(job_id)
    except TypeError:
        raise InputError(f"job_id must be hashable, got {type(job_id).__name__}",
                         argument="job_id") from None


@dataclass(frozen=True)
class QueuedJob:
    """A job known to an `fairalloc.ElasticFairQueue`.

    Parameters
    ----------
    job_id : hashable
    arrival : float
    pool : str
        ``"efq"`` (known GPU-time, served by elastic fair queuing) or ``"fair_share"`` (unknown
        GPU-time, §3.5).
    gpus : int
        GPUs it holds now.
    max_gpus : int
        Its α-capped maximum (§3.3).
    gpu_time : float or None
        ``L_j`` (None in the fair-share pool).
    virtual_finish : float or None
        ``F_j`` (None in the fair-share pool).
    remaining : float or None
        GPU-time still to run, as tracked by the queue from its own allocations.

    Examples
    --------
    >>> q = ElasticFairQueue(4)
    >>> q.submit("a", gpu_time=8.0)                  # F = V(0) + 8
    8.0
    >>> q.job("a")
    QueuedJob(job_id='a', arrival=0.0, pool='efq', gpus=4, max_gpus=4, gpu_time=8.0, \
virtual_finish=8.0, remaining=8.0)
    """

    job_id: Hashable
    arrival: float
    pool: str
    gpus: int
    max_gpus: int
    gpu_time: float | None
    virtual_finish: float | None
    remaining: float | None


class ElasticFairQueue:
    """Online elastic fair queuing scheduler (Ares §3.2-3.5).

    Tell it when jobs arrive (`fairalloc.queuing.ElasticFairQueue.submit`), finish
    (`fairalloc.queuing.ElasticFairQueue.finish`) or are cancelled
    (`fairalloc.queuing.ElasticFairQueue.cancel`), and read the allocation
    (`fairalloc.queuing.ElasticFairQueue.allocation`) after each event. On a
    homogeneous cluster every event costs ``O(log n)`` for the virtual time and the priority
    order (a sorted list with ``bisect``) plus ``O(1)`` per job whose allocation changes; on a
    heterogeneous cluster the allocation is a vectorised pass over at most ``M`` jobs.

    Parameters
    ----------
    num_gpus : int or mapping of str to int
        The cluster: ``M`` GPUs, or GPU type -> count (heterogeneous, with ``gpu_power``).
    alpha : float, default 0.75
        Scaling-control threshold in (0, 1] (§3.3).
    gpu_power : mapping of str to float, optional
        Relative power of each GPU type (§3.5); GPU-times are then in average GPUs of the
        EFQ-scheduled part of the cluster, and the job first in line takes the fastest GPUs.
    unknown_pool : int, default 0
        GPUs set aside for jobs submitted without a GPU-time (§3.5); they share this pool by
        max-min fair sharing (first come first for the indivisible remainder). On a heterogeneous
        cluster the pool takes the slowest GPUs.
    auto_finish : bool, default True
        Track each job's remaining work from its allocations and finish it when it runs out
        (simulation). With ``False`` a job keeps its GPUs until
        `fairalloc.queuing.ElasticFairQueue.finish` is called.
    record : bool, default False
        Keep the allocation history (`fairalloc.queuing.ElasticFairQueue.history`).
    start : float, default 0.0
        Initial clock (virtual time is 0 there).

    Examples
    --------
    >>> q = ElasticFairQueue(4)
    >>> q.submit("a", gpu_time=8.0)                  # F = V(0) + 8
    8.0
    >>> q.submit("b", gpu_time=2.0, at=1.0)          # V(1) = 4 (a alone on 4 GPUs)
    6.0
    >>> q.allocation()                               # b finishes first under GPS: it goes first
    {'b': 4, 'a': 0}
    >>> q.advance(2.0)                               # b needs 2 GPU-hours: done at 1.5
    [('b', 1.5)]
    >>> q.allocation()
    {'a': 4}
    """

    @only_fairalloc_errors
    def __init__(
        self, num_gpus: int | Mapping[str, int], alpha: float = DEFAULT_ALPHA, *,
        gpu_power: Mapping[str, float] | None = None, unknown_pool: int = 0,
        auto_finish: bool = True, record: bool = False, start: float = 0.0,
    ) -> None:
        self._alpha = _validate_alpha(alpha)
        total, power, types, counts, tpow = _cluster_power(num_gpus, gpu_power)
        pool = as_positive_int(unknown_pool, "unknown_pool", allow_zero=True)
        if pool >= total:
            raise InputError(
                f"unknown_pool = {pool} leaves no GPU for elastic fair queuing (cluster has "
                f"{total})", argument="unknown_pool")
        self._total = total
        self._m = total - pool
        self._pool = pool
        self._types, self._type_counts = types, counts.astype(np.int64)
        if power is not None:
            main = power[: self._m]
            self._power_main = main / main.mean()
        else:
            self._power_main = None
        start_f = as_finite_float(start, "start")
        auto_finish = as_bool(auto_finish, "auto_finish")
        record = as_bool(record, "record")
        self._width = max(int(self._m - 1).bit_length(), 0) + 2
        self._eng: _Incremental | _Engine
        if self._power_main is None:
            self._eng = _Incremental(self._m, record=record, auto_finish=auto_finish)
        else:
            self._eng = _Engine(self._m, self._power_main, self._width, record=record,
                                auto_finish=auto_finish)
        self._eng.now = start_f
        self._gps = _GPSReference(self._m)
        self._gps.tv = start_f
        self._now = start_f
        self._moved_to = start_f  # the engine and the GPS reference have been moved to here
        self._record = record
        self._id_of: list[Hashable] = []  # row -> job id
        self._row: dict[Hashable, int] = {}
        self._arrival: dict[Hashable, float] = {}
        self._in_gps: set[int] = set()
        self._free_rows: list[int] = []
        self._row_busy: set[int] = set()
        # fair-share pool of jobs with unknown GPU-time
        self._pool_jobs: dict[Hashable, int] = {}  # id -> cap, in arrival order
        self._hist: list[tuple[float, Hashable, int]] = []
        self._pool_prev: dict[Hashable, int] = {}  # pool shares at the last logged event

    # properties ------------------------------------------------------------------------
    @property
    def now(self) -> float:
        """The queue's clock (time of the last event)."""
        return self._now

    @property
    def alpha(self) -> float:
        return self._alpha

    @property
    def num_gpus(self) -> int:
        """GPUs in the cluster (EFQ part plus the unknown-GPU-time pool)."""
        return self._total

    @property
    def virtual_time(self) -> float:
        """``V(now)`` of the GPS reference (§3.2, Eq. 2)."""
        return self._gps.v

    @property
    def storage_rows(self) -> int:
        """Rows of per-job storage in use (read-only; a diagnostic of memory use).

        A row is recycled once its job has left both the EFQ system and the GPS reference
        (``record=False``), so this stays bounded by the jobs present at once, however many
        jobs pass through the queue; with ``record=True`` rows are never reused.
        """
        return self._eng.rows

    def __len__(self) -> int:
        return len(self._row) + len(self._pool_jobs)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._row or job_id in self._pool_jobs

    def __repr__(self) -> str:
        return (f"ElasticFairQueue(num_gpus={self._total}, alpha={self._alpha:g}, "
                f"unknown_pool={self._pool}, jobs={len(self)}, now={self._now:g})")

    # events ----------------------------------------------------------------------------
    def submit(
        self, job_id: Hashable, *, gpu_time: float | None = None, steps: float | None = None,
        requested: int = 1, scaling: Any = None, at: float | None = None,
    ) -> float | None:
        """A job arrives.

        Parameters
        ----------
        job_id : hashable
            Label, unique among the jobs currently in the queue.
        gpu_time : float, optional
            ``L_j``: GPU-time with its requested GPUs.
        steps : float, optional
            Alternatively, the steps to run; then ``scaling`` gives absolute throughput (steps
            per time unit at 1, 2, 4, ... average GPUs) and ``L_j = steps * r / T(r)``.
        requested : int, default 1
            GPUs asked for.
        scaling : array_like, shape (K+1,), optional
            Throughput at 1, 2, ..., ``2^K`` GPUs (linear if omitted).
        at : float, optional
            Arrival time (default: the queue's clock); not earlier than the clock.

        Returns
        -------
        float or None
            The virtual finish time ``F_j``; ``None`` for a job without GPU-time (it joins the
            fair-share pool).
        """
        # what @only_fairalloc_errors does, without its *args/**kwargs forwarding (a third of
        # a microsecond of the per-event hot path)
        try:
            return self._submit(job_id, gpu_time, steps, requested, scaling, at)
        except FairallocError:
            raise
        except Exception as exc:
            raise foreign_error(exc, "ElasticFairQueue.submit", backend="none") from exc

    def _submit(self, job_id: Hashable, gpu_time: float | None, steps: float | None,
                requested: int, scaling: Any, at: float | None) -> float | None:
        try:
            known = job_id in self._row or job_id in self._pool_jobs
        except TypeError:
            _check_job_id(job_id)
            raise  # pragma: no cover - _check_job_id raised
        if known:
            raise InputError(f"job_id {job_id!r} is already in the queue", argument="job_id")
        if gpu_time is not None and steps is not None:
            raise InputError("give gpu_time or steps, not both", argument="steps")
        unknown = gpu_time is None and steps is None
        limit = self._pool if unknown else self._m
        if type(requested) is int and requested > 0:  # the hot path of as_positive_int
            req = requested
        else:
            req = as_positive_int(requested, "requested")
        curve = _validate_one_curve(scaling)
        if unknown and limit == 0:
            raise InputError(
                f"job {job_id!r} has no gpu_time or steps and the queue has no unknown_pool "
                "(Ares §3.5: such jobs need a dedicated fair-share pool)", argument="gpu_time")
        if req > limit:
            where = "unknown-GPU-time pool" if unknown else "elastic fair queue"
            raise InputError(f"requested = {req} exceeds the {limit} GPUs of the {where}",
                             argument="requested")
        if curve is not None and req > 2 ** (len(curve) - 1):
            raise InputError(f"requested = {req} is beyond the scaling curve, which is profiled "
                             f"up to {2 ** (len(curve) - 1)} GPUs", argument="requested")
        cap, speed, t_req = _one_cap_and_speed(req, curve, limit, self._alpha, self._width)
        if steps is not None:
            if curve is None:
                raise InputError("steps needs scaling (absolute throughput per GPU count) to "
                                 "convert steps to GPU-time", argument="scaling")
            work = as_positive_float(steps, "steps") * req / t_req
        elif type(gpu_time) is float and 0.0 < gpu_time < math.inf:  # the hot path
            work = gpu_time
        elif gpu_time is not None:
            work = as_positive_float(gpu_time, "gpu_time")
        if type(at) is float and self._now <= at < math.inf:  # the hot path of _clock
            t = at
        else:
            t = self._clock(at)
        self._arrival[job_id] = t
        if unknown:
            self._move(t)
            self._pool_jobs[job_id] = cap
            self._log_pool(t)
            return None
        if t != self._moved_to or self._eng.t_next <= t:
            self._move(t)
        else:  # already moved to t (an advance(t) just before, the usual pattern): nothing due
            self._now = t
        free = self._free_rows  # (never filled with record=True: the history needs every row)
        row = free.pop() if free else self._eng.rows
        f = self._gps.add(work, row)  # the reference is at t: _move advanced it
        self._eng.arrive(row, f, work, cap, speed)
        self._in_gps.add(row)
        self._row_busy.add(row)
        self._row[job_id] = row
        if row == len(self._id_of):
            self._id_of.append(job_id)
        else:
            self._id_of[row] = job_id
        if self._record:
            self._log_main()
        return f

    @only_fairalloc_errors
    def finish(self, job_id: Hashable, *, at: float | None = None) -> None:
        """The job finished (reported by the cluster). It stays in the GPS reference until its
        virtual finish time, as in fair queuing."""
        self._leave(job_id, at, cancel=False)

    @only_fairalloc_errors
    def cancel(self, job_id: Hashable, *, at: float | None = None) -> None:
        """The job is withdrawn: it leaves both the queue and the GPS reference."""
        self._leave(job_id, at, cancel=True)

    def advance(self, to: float) -> list[tuple[Hashable, float]]:
        """Move the clock to ``to``; return the jobs that finished on the way (``auto_finish``),
        as ``(job_id, finish time)`` in order."""
        try:  # @only_fairalloc_errors, inlined as in submit
            if type(to) is float and self._now <= to < math.inf:  # the hot path of _clock
                return self._move(to)
            return self._move(self._clock(to, "to"))
        except FairallocError:
            raise
        except Exception as exc:
            raise foreign_error(exc, "ElasticFairQueue.advance", backend="none") from exc

    # queries ---------------------------------------------------------------------------
    def allocation(self) -> dict[Hashable, int]:
        """GPUs each job in the queue holds now (0 for waiting jobs), in priority order for the
        EFQ pool, then the fair-share pool in arrival order."""
        order = self._eng.order_rows()
        out: dict[Hashable, int] = dict(zip(map(self._id_of.__getitem__, order),
                                            self._eng.gpus(order), strict=True))
        if self._pool_jobs:
            shares = self._pool_shares()
            out.update(zip(self._pool_jobs, shares.tolist(), strict=True))
        return out

    @only_fairalloc_errors
    def placement(self) -> dict[Hashable, dict[str, int]]:
        """GPUs of each type every running job holds (the first in line takes the fastest)."""
        bounds = np.concatenate(([0], np.cumsum(self._type_counts)))
        eng = self._eng
        out: dict[Hashable, dict[str, int]] = {}

        def spread(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
            # overlap of [lo, hi) with each type's range, shape (jobs, types)
            return np.maximum(np.minimum(hi[:, None], bounds[None, 1:])
                              - np.maximum(lo[:, None], bounds[None, :-1]), 0)

        run_idx, run_start, run_g = eng.running()
        if run_idx.size:
            cnt = spread(run_start, run_start + run_g)
            for r, row in zip(run_idx.tolist(), cnt.tolist(), strict=True):
                out[self._id_of[r]] = {t: c for t, c in zip(self._types, row, strict=True) if c}
        if self._pool_jobs:
            shares = self._pool_shares()
            lo = self._m + np.concatenate(([0], np.cumsum(shares)[:-1]))
            cnt = spread(lo, lo + shares)
            for jid, s, row in zip(self._pool_jobs, shares.tolist(), cnt.tolist(), strict=True):
                if s:
                    out[jid] = {t: c for t, c in zip(self._types, row, strict=True) if c}
        return out

    @only_fairalloc_errors
    def job(self, job_id: Hashable) -> QueuedJob:
        """State of one job in the queue."""
        _check_job_id(job_id)
        if job_id in self._pool_jobs:
            shares = dict(zip(self._pool_jobs, self._pool_shares().tolist(), strict=True))
            return QueuedJob(job_id, self._arrival[job_id], "fair_share", shares[job_id],
                             self._pool_jobs[job_id], None, None, None)
        row = self._row.get(job_id)
        if row is None:
            raise InputError(f"no job with job_id = {job_id!r} in the queue",
                             argument="job_id")
        eng = self._eng
        return QueuedJob(job_id, self._arrival[job_id], "efq", int(eng.g[row]),
                         int(eng.cap[row]), float(eng.work[row]), float(eng.vfin[row]),
                         max(eng.remaining(row), 0.0))

    @only_fairalloc_errors
    def history(self) -> tuple[np.ndarray, list[Hashable], np.ndarray]:
        """Allocation changes ``(times, job ids, GPUs from then on)``; needs ``record=True``."""
        if not self._record:
            raise InputError("history() needs ElasticFairQueue(..., record=True)",
                             argument="record")
        t = np.array([h[0] for h in self._hist])
        return readonly(t), [h[1] for h in self._hist], readonly(
            np.array([h[2] for h in self._hist], dtype=np.int64))

    # internals -------------------------------------------------------------------------
    def _clock(self, at: float | None, name: str = "at") -> float:
        if at is None:
            if name == "to":
                raise InputError("to must be a finite number, got None", argument="to")
            return self._now
        if type(at) is float and math.isfinite(at):  # fast path of the per-event hot loop
            t = at
        else:
            t = as_finite_float(at, name)
        if t < self._now:
            raise InputError(f"{name} = {t:g} is earlier than the queue's clock {self._now:g}",
                             argument=name)
        return t

    def _move(self, t: float) -> list[tuple[Hashable, float]]:
        """Advance the EFQ system (with automatic completions) and the GPS reference to ``t``."""
        eng = self._eng
        done: list[tuple[Hashable, float]] = []
        if eng.auto_finish:
            while eng.t_next <= t:
                tc, fin = eng.complete_next()
                for r in fin:
                    jid = self._id_of[r]
                    del self._row[jid]
                    del self._arrival[jid]
                    done.append((jid, tc))
                    self._row_busy.discard(r)  # _release, inlined
                    if r not in self._in_gps and not self._record:
                        self._free_rows.append(r)
                self._now = tc
                if self._record:
                    self._log_main()
        if t != self._moved_to:  # (a second event at the same instant skips this)
            eng.progress(t)
            departed = self._gps.advance(t)
            if departed:
                self._gps_departed(departed)
            self._moved_to = t
        self._now = t
        return done

    def _leave(self, job_id: Hashable, at: float | None, *, cancel: bool) -> None:
        _check_job_id(job_id)
        t = self._clock(at)
        if job_id in self._pool_jobs:
            self._move(t)
            if job_id not in self._pool_jobs:  # pragma: no cover - pool jobs never auto-finish
                raise InputError(f"no job with job_id = {job_id!r} in the queue",
                                 argument="job_id")
            del self._pool_jobs[job_id]
            del self._arrival[job_id]
            self._log_pool(t)
            return
        if job_id not in self._row:
            raise InputError(f"no job with job_id = {job_id!r} in the queue",
                             argument="job_id")
        self._move(t)
        row = self._row.get(job_id)
        if row is None:
            raise InputError(f"job_id {job_id!r} already finished before at = {t:g} "
                             "(auto_finish)", argument="job_id")
        self._eng.leave(row)
        del self._row[job_id]
        del self._arrival[job_id]
        if cancel:
            self._gps_departed(self._gps.remove(row, t))
            self._in_gps.discard(row)
        self._release(row)
        self._log_main()

    def _gps_departed(self, departed: list[tuple[int, float]]) -> None:
        for key, _ in departed:
            self._in_gps.discard(key)
            if key not in self._row_busy and not self._record:
                self._free_rows.append(key)

    def _release(self, row: int) -> None:
        """Row left the EFQ system; recycle it once the GPS reference is done with it too."""
        self._row_busy.discard(row)
        if row not in self._in_gps and not self._record:
            self._free_rows.append(row)

    def _pool_shares(self) -> np.ndarray:
        caps = np.fromiter(self._pool_jobs.values(), dtype=np.int64, count=len(self._pool_jobs))
        return _water_fill(caps, self._pool)

    def _log_main(self) -> None:
        if not self._record:
            return
        t, j, g = self._eng.pop_log()
        self._hist.extend(zip(t, map(self._id_of.__getitem__, j), g, strict=True))

    def _log_pool(self, t: float) -> None:
        if not self._record:
            return
        shares = self._pool_shares()
        prev = self._pool_prev
        now = dict(zip(self._pool_jobs, shares.tolist(), strict=True))
        for jid in list(prev):
            if jid not in now:
                self._hist.append((t, jid, 0))
        for jid, s in now.items():
            if prev.get(jid, 0) != s:
                self._hist.append((t, jid, s))
        self._pool_prev = now
