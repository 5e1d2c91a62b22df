"""Elastic fair queuing (Ares §3): GPS virtual time, virtual-finish priority, α-capped doubling.

Ares (Liu et al., TOCS 2025) serves deep-learning jobs in the order in which they would finish
under *Generalized Processor Sharing* (GPS, instantaneous fair sharing of the ``M`` GPUs), and lets
the job at the head of that order use more GPUs than it asked for, as long as its per-GPU
efficiency stays at least ``alpha`` (endo-elastic training: the global batch size is fixed, so a
job's total work does not change with its GPU count).

* **Virtual time** (§3.2, Eq. 2): ``V(0) = 0`` and ``dV/dt = M / N_t`` where ``N_t`` is the number
  of jobs active in the GPS reference system; ``V`` is frozen while the reference is empty.
* **Virtual finish time** (Eq. 3): ``F_j = V(a_j) + L_j``, fixed at arrival; ``L_j`` is the job's
  GPU-time with its requested GPUs. Jobs leave the reference in increasing ``F``, at the instant
  ``V`` reaches their ``F``. The reference is maintained exactly, event by event, with a heap
  (``O(log n)`` per arrival or departure), including jobs that arrive while others are mid-flight.
* **Service** (§3.2-3.3, Fig. 4): active jobs are served preemptively in increasing ``F`` (ties by
  arrival). Each job's *maximum* is found once, at arrival: start from its requested GPU count
  ``r`` and double (``r, 2r, 4r, ...``) while the per-GPU efficiency
  ``e(g) = (T(g)/g) / (T(r)/r)`` of its scaling curve ``T`` stays ``>= alpha``; the maximum is
  the last accepted count, clipped to the cluster. Walking the jobs in priority order, each gets
  ``min(max, free GPUs)`` (possibly fewer than it requested: endo-elastic jobs shrink, §4).
* **Scaling curves** (§3.3, §4 "Throughput Profiling"): throughput profiled at 1, 2, 4, ...,
  ``2^K`` GPUs, linearly interpolated in between; ``None`` is linear scaling. Per-GPU throughput
  must not increase with the GPU count (diminishing returns), so every count up to a job's
  maximum runs at efficiency ``>= alpha``.
* **Heterogeneous GPUs** (§3.5): GPU-time is counted in *average* GPUs of the cluster (the virtual
  time uses the GPU count), and the job at the head of the queue picks the fastest free GPUs; a
  job's speed scales with the mean relative power of the GPUs it holds (the global batch is split
  in proportion to GPU power).
* **Unknown GPU-time** (§3.5): jobs submitted without a GPU-time estimate go to a dedicated pool
  of GPUs shared by instantaneous (max-min) fair sharing, without prioritising or delaying them.

There is no optimisation program here, so a schedule carries no optimality certificate: it
carries a :class:`ReplayCheck`, an independent replay of the schedule itself, and its status is
:attr:`~fairalloc.Status.REPLAYED` (:func:`efq_schedule` raises
:class:`~fairalloc.CertificateError` when the replay check fails): capacity is never exceeded,
no job exceeds its α-capped maximum, no GPU idles while an active job is below its maximum
(work conservation), the work each job received integrates to its GPU-time exactly when it
finishes, and the GPS finish times are the fixed point of the fair-sharing equations.
This module never imports cvxpy.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import (
    as_array,
    as_bool,
    as_finite_float,
    as_positive_float,
    as_positive_int,
    fmt_index,
)
from .errors import CertificateError, InputError, SolverError, only_fairalloc_errors
from .results import FrozenArrays, SolveStats, Status, readonly, require_pandas
from .tolerances import FEAS_TOL

__all__ = ["EFQResult", "ElasticFairQueue", "QueuedJob", "ReplayCheck", "efq_finish_times",
           "efq_schedule"]

#: relative tolerance of the efficiency test ``e(g) >= alpha`` (round-off in profiled curves)
_EFF_RTOL = 1e-12
#: a job whose remaining work is below this fraction of its GPU-time has finished
_DONE_RTOL = 1e-11
#: per-GPU throughput may rise by at most this relative amount between doublings (noise)
_MONO_RTOL = 1e-9
#: longest profiled curve accepted (2**30 GPUs)
_MAX_LEVELS = 31


# --------------------------------------------------------------------------------------------
# validation and scaling curves
# --------------------------------------------------------------------------------------------


def _validate_alpha(alpha: Any) -> float:
    a = as_positive_float(alpha, "alpha")
    if a > 1.0:
        raise InputError(f"alpha must be in (0, 1], got {alpha!r}", argument="alpha")
    return a


def _validate_scaling(scaling: Any, n: int, name: str = "scaling") -> np.ndarray | None:
    """Validate throughput curves at 1, 2, 4, ... GPUs; return an (n, K+1) array or ``None``."""
    if scaling is None:
        return None
    arr = as_array(scaling, name, ndim=(1, 2), positive=True)
    if arr.ndim == 2 and arr.shape[0] != n:
        raise InputError(
            f"{name} has shape {arr.shape}; axis 0 must have length {n} (one curve per job)",
            argument=name,
        )
    width = arr.shape[-1]
    if width > _MAX_LEVELS:
        raise InputError(
            f"{name} has {width} levels (1 to {2 ** (width - 1)} GPUs); at most {_MAX_LEVELS}",
            argument=name,
        )
    per_gpu = arr / np.exp2(np.arange(width))
    rising = per_gpu[..., 1:] > per_gpu[..., :-1] * (1.0 + _MONO_RTOL)
    if rising.any():
        idx = tuple(int(i) for i in np.argwhere(rising)[0])
        idx = idx[:-1] + (idx[-1] + 1,)
        prev = idx[:-1] + (idx[-1] - 1,)
        raise InputError(
            f"{name}{fmt_index(idx)} = {arr[idx]:g} at {2 ** idx[-1]} GPUs is more than twice "
            f"{name}{fmt_index(prev)} = {arr[prev]:g}: per-GPU throughput must not increase "
            "with the GPU count (Ares §3.3: diminishing returns)",
            argument=name,
            index=idx,
        )
    if arr.ndim == 1:
        arr = np.broadcast_to(arr, (n, width))
    return arr


def _validate_requested(
    requested: Any, n: int, num_gpus: int, scaling: np.ndarray | None, name: str = "requested"
) -> np.ndarray:
    if requested is None:
        return np.ones(n)
    req = as_array(requested, name, ndim=1, shape=(n,), positive=True, integer=True)
    over = req > num_gpus
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise InputError(
            f"{name}[{i}] = {req[i]:g} exceeds the {num_gpus} GPUs the queue schedules",
            argument=name,
            index=(i,),
        )
    if scaling is not None:
        top = 2.0 ** (scaling.shape[1] - 1)
        over = req > top
        if over.any():
            i = int(np.flatnonzero(over)[0])
            raise InputError(
                f"{name}[{i}] = {req[i]:g} is beyond the scaling curve, which is profiled up to "
                f"{top:g} GPUs",
                argument=name,
                index=(i,),
            )
    return req


def _interp_pow2(table: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation of values at 1, 2, 4, ... GPUs, at counts ``x`` (>= 1).

    ``table`` has shape (n, W); ``x`` shape (n,) or (n, m), with ``x <= 2**(W-1)``.
    """
    width = table.shape[1]
    expo = np.frexp(x)[1] - 1  # floor(log2 x), exact for floats
    frac = x / np.ldexp(1.0, expo) - 1.0
    hi = np.minimum(expo + 1, width - 1)
    rows = np.arange(table.shape[0])
    if x.ndim == 2:
        rows = rows[:, None]
    lo_v = table[rows, expo]
    return lo_v + (table[rows, hi] - lo_v) * frac


def _caps_and_speeds(
    requested: np.ndarray, scaling: np.ndarray | None, num_gpus: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each job's α-capped maximum GPUs and its speed table (Ares §3.3).

    Returns ``cap`` (n,) int64 and ``speed`` (n, W) with ``W = ceil(log2 M) + 2``:
    ``speed[j, k]`` is the rate (GPU-time of job ``j`` per unit time, i.e. ``r T(2^k)/T(r)``) at
    ``2^k`` GPUs; counts in between are interpolated linearly.
    """
    n = requested.shape[0]
    kc = max(int(num_gpus - 1).bit_length(), 0)  # 2**kc >= num_gpus
    width = kc + 2
    if scaling is None:
        cap = np.full(n, num_gpus, dtype=np.int64)
        speed = np.broadcast_to(np.exp2(np.arange(width)), (n, width)).copy()
        return cap, speed
    levels = scaling.shape[1]
    top = 2.0 ** (levels - 1)
    t_req = _interp_pow2(scaling, requested)
    ladder = requested[:, None] * np.exp2(np.arange(levels))[None, :]
    valid = ladder <= top
    t_lad = _interp_pow2(scaling, np.minimum(ladder, top))
    eff = (t_lad / np.minimum(ladder, top)) / (t_req / requested)[:, None]
    ok = valid & (eff >= alpha * (1.0 - _EFF_RTOL))
    accepted = np.logical_and.accumulate(ok, axis=1).sum(axis=1) - 1  # >= 0: level 0 is r
    cap = np.minimum(requested * np.exp2(accepted), num_gpus).astype(np.int64)
    norm = scaling * (requested / t_req)[:, None]
    if levels >= width:
        speed = np.ascontiguousarray(norm[:, :width])
    else:
        speed = np.concatenate([norm, np.repeat(norm[:, -1:], width - levels, axis=1)], axis=1)
    return cap, speed


def _one_cap_and_speed(
    requested: int, curve: np.ndarray | None, num_gpus: int, alpha: float, width: int
) -> tuple[int, np.ndarray, float]:
    """:func:`_caps_and_speeds` for one job in plain floats (the online queue's hot path).

    Loops over the curve's levels (at most 31), never over jobs. Returns ``(cap, speed row,
    T(r))``. ``tests/test_queuing.py::test_online_queue_matches_batch_simulation`` checks it
    against the vectorised version.
    """
    if curve is None:
        return num_gpus, np.exp2(np.arange(width)), float(requested)
    t = curve.tolist()
    levels = len(t)

    def at(x: float) -> float:
        k = int(math.frexp(x)[1]) - 1
        if k >= levels - 1:
            return t[levels - 1]
        frac = x / (1 << k) - 1.0
        return t[k] + (t[k + 1] - t[k]) * frac

    r = float(requested)
    t_req = at(r)
    per_req = t_req / r
    top = float(1 << (levels - 1))
    g = r
    while 2.0 * g <= top and at(2.0 * g) / (2.0 * g) >= alpha * per_req * (1.0 - _EFF_RTOL):
        g *= 2.0
    scale = r / t_req
    row = [v * scale for v in t[:width]]
    row.extend([row[-1]] * (width - len(row)))
    return int(min(g, num_gpus)), np.array(row), t_req


def _cluster_power(
    num_gpus: Any, gpu_power: Any, name: str = "num_gpus"
) -> tuple[int, np.ndarray | None, tuple[str, ...], np.ndarray, np.ndarray]:
    """Expand a cluster into per-GPU relative power sorted fastest first (mean 1).

    Returns ``(M, power or None, types, type_counts, type_power)``; ``power`` is ``None`` for a
    homogeneous cluster. Types are listed fastest first.
    """
    if isinstance(num_gpus, Mapping):
        if len(num_gpus) == 0:
            raise InputError(f"{name} is empty: the cluster needs at least one GPU type",
                             argument=name)
        types = tuple(str(t) for t in num_gpus)
        counts = as_array(list(num_gpus.values()), name, ndim=1, positive=True, integer=True)
        if gpu_power is None:
            tpow = np.ones(len(types))
        else:
            if not isinstance(gpu_power, Mapping):
                raise InputError("gpu_power must be a mapping of GPU type to relative power "
                                 "when num_gpus is a mapping", argument="gpu_power")
            missing = [t for t in num_gpus if t not in gpu_power]
            if missing:
                raise InputError(f"gpu_power has no entry for GPU type {missing[0]!r}",
                                 argument="gpu_power")
            extra = [t for t in gpu_power if t not in num_gpus]
            if extra:
                raise InputError(f"gpu_power names GPU type {extra[0]!r}, which the cluster "
                                 "does not have", argument="gpu_power")
            tpow = as_array([gpu_power[t] for t in num_gpus], "gpu_power", ndim=1,
                            positive=True)
    else:
        if gpu_power is not None:
            raise InputError("gpu_power needs num_gpus as a mapping of GPU type to count",
                             argument="gpu_power")
        m = as_positive_int(num_gpus, name)
        return m, None, ("gpu",), np.array([float(m)]), np.array([1.0])
    rank = np.argsort(-tpow, kind="stable")
    types = tuple(types[i] for i in rank)
    counts, tpow = counts[rank], tpow[rank]
    m = int(counts.sum())
    if np.all(tpow == tpow[0]):
        return m, None, types, counts, tpow
    power = np.repeat(tpow, counts.astype(np.int64))
    return m, power, types, counts, tpow


def _water_fill(caps: np.ndarray, capacity: int) -> np.ndarray:
    """Integer max-min fair shares under per-job caps; leftover units go first-come first.

    ``caps`` is in arrival order. Returns GPUs per job (sums to ``min(capacity, caps.sum())``).
    """
    caps = caps.astype(np.int64)
    n = caps.size
    if n == 0 or caps.sum() <= capacity:
        return caps.copy()
    sorted_caps = np.sort(caps)
    prefix = np.concatenate(([0], np.cumsum(sorted_caps)))
    used_at = prefix[:-1] + sorted_caps * (n - np.arange(n))  # sum of min(caps, sorted_caps[i])
    full = int(np.searchsorted(used_at, capacity, side="right"))  # caps met at the level
    level = (capacity - int(prefix[full])) // (n - full)
    alloc = np.minimum(caps, level)
    rest = capacity - int(alloc.sum())
    eligible = caps > level
    alloc += eligible & (np.cumsum(eligible) <= rest)
    return alloc


# --------------------------------------------------------------------------------------------
# GPS reference system (virtual time)
# --------------------------------------------------------------------------------------------


class _GPSReference:
    """Exact event-driven GPS virtual time (Ares §3.2, Eq. 2-3) on ``M`` GPUs.

    A heap holds ``(F, seq, key)`` of the jobs in the reference; ``V`` is advanced piecewise
    linearly between departures. Cancelled jobs leave at once (lazy deletion from the heap).
    """

    __slots__ = ("m", "v", "tv", "n_active", "heap", "live", "seq")

    def __init__(self, num_gpus: int) -> None:
        self.m = float(num_gpus)
        self.v = 0.0
        self.tv = 0.0
        self.n_active = 0
        self.heap: list[tuple[float, int, int]] = []
        self.live: dict[int, int] = {}
        self.seq = 0

    @only_fairalloc_errors
    def advance(self, t: float) -> list[tuple[int, float]]:
        """Move to time ``t``; return ``(key, GPS finish time)`` of the departures on the way."""
        out: list[tuple[int, float]] = []
        heap, live, m = self.heap, self.live, self.m
        while heap:
            f, seq, key = heap[0]
            if live.get(key) != seq:  # cancelled (or key reused): drop the stale entry
                heapq.heappop(heap)
                continue
            t_dep = self.tv + (f - self.v) * self.n_active / m
            if t_dep > t:
                break
            heapq.heappop(heap)
            del live[key]
            self.v = max(self.v, f)
            self.tv = max(self.tv, t_dep)
            self.n_active -= 1
            out.append((key, self.tv))
        if self.n_active > 0:
            self.v += (t - self.tv) * m / self.n_active
        self.tv = t
        return out

    def arrive(self, t: float, gpu_time: float, key: int) -> tuple[float, list[tuple[int, float]]]:
        """Add a job at time ``t``; return its virtual finish time and departures before ``t``."""
        departed = self.advance(t)
        f = self.v + gpu_time
        self.seq += 1
        heapq.heappush(self.heap, (f, self.seq, key))
        self.live[key] = self.seq
        self.n_active += 1
        return f, departed

    def remove(self, key: int, t: float) -> list[tuple[int, float]]:
        """Withdraw a job (cancellation) at time ``t``; return departures before ``t``."""
        departed = self.advance(t)
        if self.live.pop(key, None) is not None:
            self.n_active -= 1
        return departed


# --------------------------------------------------------------------------------------------
# EFQ service engine
# --------------------------------------------------------------------------------------------


class _Engine:
    """The EFQ system: active jobs in priority order, their allocations and remaining work.

    Jobs live in rows of growable arrays. ``order`` holds the active rows sorted by
    ``(F, arrival)`` (with ``okey`` = F and ``ocap`` = maxima aligned to it); only its first
    ``M`` entries can hold GPUs, and the allocation is the vectorised greedy
    ``g_k = min(cap_k, max(0, M - sum_{l<k} cap_l))``. Rates are cached per row and recomputed
    only for the jobs whose allocation changed.
    """

    def __init__(
        self, num_gpus: int, power: np.ndarray | None, width: int, *, record: bool,
        auto_finish: bool = True, rows: int = 64,
    ) -> None:
        self.m = int(num_gpus)
        self.pcum = None if power is None else np.concatenate(([0.0], np.cumsum(power)))
        self.width = width
        self.record = record
        self.auto_finish = auto_finish
        self.rows = 0
        self._alloc_rows(max(rows, 1))
        self._set_order(np.empty(0, np.int64), np.empty(0), np.empty(0, np.int64))
        # floor(log2 g) and the interpolation weight for every possible GPU count g
        counts = np.arange(self.m + 1, dtype=float)
        counts[0] = 1.0
        self.lg = (np.frexp(counts)[1] - 1).astype(np.int64)
        self.fr = counts / np.ldexp(1.0, self.lg) - 1.0
        self.run_idx = np.empty(0, dtype=np.int64)
        self.run_g = np.empty(0, dtype=np.int64)
        self.run_rate = np.empty(0)
        self.run_start = np.empty(0, dtype=np.int64)
        self.now = 0.0
        self.t_next = math.inf
        self.tick = 0
        self.log_t: list[float] = []  # one entry per logged event ...
        self.log_k: list[int] = []  # ... with this many changes
        self.log_j: list[np.ndarray] = []
        self.log_g: list[np.ndarray] = []
        self.log_p: list[np.ndarray] = []

    def _set_order(self, order: np.ndarray, okey: np.ndarray, ocap: np.ndarray) -> None:
        self.order, self.okey, self.ocap = order, okey, ocap

    # storage ---------------------------------------------------------------------------
    def _alloc_rows(self, size: int) -> None:
        def grow(old: np.ndarray | None, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
            new = np.zeros(shape, dtype=dtype)
            if old is not None:
                new[: old.shape[0]] = old
            return new

        get = self.__dict__.get
        self.work = grow(get("work"), (size,), float)
        self.rem = grow(get("rem"), (size,), float)
        self.cap = grow(get("cap"), (size,), np.int64)
        self.speed = grow(get("speed"), (size, self.width), float)
        self.g = grow(get("g"), (size,), np.int64)
        self.st = grow(get("st"), (size,), np.int64)  # first GPU held (heterogeneous only)
        self.rate = grow(get("rate"), (size,), float)
        self.mark = grow(get("mark"), (size,), np.int64)
        self.preempt = grow(get("preempt"), (size,), np.int64)
        self.vfin = grow(get("vfin"), (size,), float)
        self.capacity_rows = size

    def add(self, work: np.ndarray, cap: np.ndarray, speed: np.ndarray) -> np.ndarray:
        """Append rows; return their indices."""
        k = work.shape[0]
        need = self.rows + k
        if need > self.capacity_rows:
            self._alloc_rows(max(need, 2 * self.capacity_rows))
        idx = np.arange(self.rows, need)
        self.set_rows(idx, work, cap, speed)
        self.rows = need
        return idx

    def set_row(self, i: int, work: float, cap: int, speed: np.ndarray) -> None:
        """Reuse row ``i`` for a new job (scalar writes)."""
        self.work[i] = work
        self.rem[i] = work
        self.cap[i] = cap
        self.speed[i] = speed
        self.g[i] = 0
        self.st[i] = -1
        self.preempt[i] = 0

    def set_rows(self, idx: np.ndarray, work: np.ndarray, cap: np.ndarray,
                 speed: np.ndarray) -> None:
        self.work[idx] = work
        self.rem[idx] = work
        self.cap[idx] = cap
        self.speed[idx] = speed
        self.g[idx] = 0
        self.st[idx] = -1
        self.preempt[idx] = 0

    # time ------------------------------------------------------------------------------
    def progress(self, t: float) -> None:
        """Advance the clock to ``t``, charging the running jobs' work."""
        dt = t - self.now
        if dt > 0.0 and self.run_idx.size:
            self.rem[self.run_idx] -= self.run_rate * dt
        if t > self.now:
            self.now = t

    def due(self) -> np.ndarray:
        """Positions in the running prefix of the jobs whose work is used up now (at least the
        one that defined ``t_next``, against round-off)."""
        run = self.run_idx
        rem = self.rem[run]
        done = rem <= _DONE_RTOL * self.work[run]
        if not done.any():
            done[int(np.argmin(rem / self.run_rate))] = True
        return np.flatnonzero(done)

    # queue -----------------------------------------------------------------------------
    def insert(self, idx: np.ndarray, f: np.ndarray) -> None:
        """Activate rows ``idx`` (in arrival order) with virtual finish times ``f``."""
        self.vfin[idx] = f
        caps = self.cap[idx]
        o, k, c = self.order, self.okey, self.ocap
        if idx.size == 1:
            pos = int(k.searchsorted(f[0], side="right"))
            self._set_order(np.concatenate((o[:pos], idx, o[pos:])),
                            np.concatenate((k[:pos], f, k[pos:])),
                            np.concatenate((c[:pos], caps, c[pos:])))
            return
        srt = np.argsort(f, kind="stable")
        idx, f, caps = idx[srt], f[srt], caps[srt]
        where = k.searchsorted(f, side="right")
        self._set_order(np.insert(o, where, idx), np.insert(k, where, f), np.insert(c, where, caps))

    def remove_head(self, pos: np.ndarray) -> np.ndarray:
        """Deactivate the running jobs at positions ``pos`` of the order; return their rows."""
        o, k, c = self.order, self.okey, self.ocap
        rows = o[pos]
        if pos.size == 1:
            i = int(pos[0])
            self._set_order(np.concatenate((o[:i], o[i + 1:])), np.concatenate((k[:i], k[i + 1:])),
                            np.concatenate((c[:i], c[i + 1:])))
            return rows
        p = self.run_idx.size
        keep = np.ones(p, dtype=bool)
        keep[pos] = False
        self._set_order(np.concatenate((o[:p][keep], o[p:])), np.concatenate((k[:p][keep], k[p:])),
                        np.concatenate((c[:p][keep], c[p:])))
        return rows

    def remove_one(self, i: int) -> None:
        """Deactivate row ``i`` wherever it is in the order (O(log n) search)."""
        f = self.vfin[i]
        lo = int(self.okey.searchsorted(f, side="left"))
        hi = int(self.okey.searchsorted(f, side="right"))
        self.remove_head(lo + np.flatnonzero(self.order[lo:hi] == i)[:1])

    def reallocate(self, finished: np.ndarray | None = None) -> None:
        """Recompute the greedy allocation in priority order and log what changed.

        ``finished`` are rows that just left because they finished or were cancelled (they
        lose their GPUs without counting as preempted).
        """
        m = self.m
        caps = self.ocap[:m]
        csum = caps.cumsum()
        p = int(csum.searchsorted(m, side="left")) + 1
        if p > caps.size:
            p = caps.size
        idx = self.order[:p]
        start = csum[:p] - caps[:p]
        g = np.minimum(caps[:p], m - start)
        self.tick += 1
        old = self.run_idx
        self.mark[idx] = self.tick
        dropped = old[self.mark[old] != self.tick]
        changed = self.g[idx] != g
        hetero = self.pcum is not None
        if hetero:
            changed |= self.st[idx] != start
            self.st[dropped] = -1
            self.st[idx] = start
        ic = idx[changed]
        gc = g[changed]
        psum = gc.astype(float)
        if ic.size:
            expo = self.lg[gc]
            frac = self.fr[gc]
            lo = self.speed[ic, expo]
            rate = lo + (self.speed[ic, expo + 1] - lo) * frac
            if hetero:
                sc = start[changed]
                pcum = self.pcum
                assert pcum is not None  # hetero
                psum = pcum[sc + gc] - pcum[sc]
                rate *= psum / gc
            self.rate[ic] = rate
            self.g[ic] = gc
        if dropped.size:
            self.g[dropped] = 0
            self.preempt[dropped] += 1
            if finished is not None:
                self.preempt[finished] -= 1
        if self.record:
            if dropped.size:
                self.log_t.append(self.now)
                self.log_k.append(dropped.size)
                self.log_j.append(dropped)
                self.log_g.append(np.zeros(dropped.size, np.int64))
                self.log_p.append(np.zeros(dropped.size))
            if ic.size:
                self.log_t.append(self.now)
                self.log_k.append(ic.size)
                self.log_j.append(ic)
                self.log_g.append(gc)
                self.log_p.append(psum)
        self.run_idx, self.run_g, self.run_start = idx, g, start
        self.run_rate = self.rate[idx]
        self._set_next()

    def _set_next(self) -> None:
        run = self.run_idx
        if not run.size:
            self.t_next = math.inf
            return
        ttf = self.rem[run] / self.run_rate
        if self.auto_finish:
            self.t_next = self.now + float(ttf.min())
        else:
            pos = ttf > 0
            self.t_next = self.now + float(ttf[pos].min()) if pos.any() else math.inf

    def log(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.log_t:
            e = np.empty(0)
            return e, np.empty(0, np.int64), np.empty(0, np.int64), e
        return (np.repeat(np.array(self.log_t), self.log_k), np.concatenate(self.log_j),
                np.concatenate(self.log_g), np.concatenate(self.log_p))

    def pop_log(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Take (and clear) the changes logged so far: times, rows, GPUs."""
        t, j, g, _ = self.log()
        self.log_t, self.log_k, self.log_j, self.log_g, self.log_p = [], [], [], [], []
        return t, j, g


# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------
# independent verification of a finished schedule
# --------------------------------------------------------------------------------------------


#: residuals grouped into ReplayCheck.capacity_violation
_CAPACITY_CHECKS = ("capacity", "power")
#: residuals grouped into ReplayCheck.finish_residual (finish times and virtual times)
_FINISH_CHECKS = ("finished", "causal", "gps_service", "virtual_finish", "work", "release",
                  "window")


@dataclass(frozen=True, repr=False)
class ReplayCheck:
    """The independent replay check of a simulated schedule (not an optimality certificate).

    A schedule is not the solution of an optimisation program, so it has no duality gap: the
    check replays every event of the allocation log with code independent of the engine and
    measures how far the schedule is from the rules of elastic fair queuing. Every residual is
    relative to the data's own scale (GPUs, GPU-time, the horizon), so rescaling the arrival
    times and GPU-times by any factor gives the same verdict.

    Attributes
    ----------
    kind : str
        ``"efq_schedule"``.
    events : int
        Allocation-log entries replayed.
    capacity_violation : float
        Largest excess of GPUs (or GPU power) in use over the cluster, relative to ``M``.
    finish_residual : float
        Largest relative residual of the finish times and virtual times: work done at a job's
        finish minus its GPU-time, GPS finish times against the fair-sharing fixed point,
        ``F_j - V(a_j) - L_j``, GPUs held outside ``[a_j, f_j]``, unfinished jobs.
    residuals : dict of str to float
        Every individual check (the two above are maxima over some of them; the others are
        ``integral``, ``max_gpus``, ``gpu_power``, ``work_conserving``).
    tol : float
        Tolerance each residual is checked against (default :data:`fairalloc.tolerances.FEAS_TOL`).

    Notes
    -----
    :attr:`ok` is computed from the residuals, never set: it needs a finite tolerance and every
    residual finite and ``<= tol``.
    """

    kind: str
    events: int
    capacity_violation: float
    finish_residual: float
    residuals: Mapping[str, float]
    tol: float = FEAS_TOL

    @property
    def max_residual(self) -> float:
        """The largest residual of any check (``inf`` if one is not finite)."""
        vals = [float(v) for v in self.residuals.values()]
        vals += [float(self.capacity_violation), float(self.finish_residual)]
        if not all(math.isfinite(v) for v in vals):
            return math.inf
        return max(vals, default=0.0)

    @property
    def primal_residual(self) -> float:
        """Alias of :attr:`max_residual` (the name optimisation certificates use)."""
        return self.max_residual

    @property
    def ok(self) -> bool:
        """Whether every residual is finite and within the (finite, positive) tolerance."""
        tol = float(self.tol)
        return math.isfinite(tol) and tol > 0.0 and self.max_residual <= tol

    def check(self) -> ReplayCheck:
        """Return ``self`` if :attr:`ok`, else raise :class:`fairalloc.CertificateError`."""
        if not self.ok:
            worst = max(self.residuals.items(), key=lambda kv: (not math.isfinite(kv[1]), kv[1]),
                        default=("none", 0.0))
            raise CertificateError(
                f"replay check failed ({self.kind}): largest residual {self.max_residual:.3g} "
                f"(tol {self.tol:g}), worst check {worst[0]!r} = {worst[1]:.3g}",
                certificate=self, backend="efq")
        return self

    def __repr__(self) -> str:
        return (f"ReplayCheck({self.kind}, events={self.events}, "
                f"capacity_violation={self.capacity_violation:.2e}, "
                f"finish_residual={self.finish_residual:.2e}, ok={self.ok})")


def _replay_check(res: Mapping[str, float], events: int, tol: float = FEAS_TOL) -> ReplayCheck:
    def worst(names: tuple[str, ...]) -> float:
        vals = [float(res[k]) for k in names if k in res]
        if not all(math.isfinite(v) for v in vals):
            return math.inf
        return max(vals, default=0.0)

    return ReplayCheck(kind="efq_schedule", events=int(events),
                       capacity_violation=worst(_CAPACITY_CHECKS),
                       finish_residual=worst(_FINISH_CHECKS),
                       residuals=dict(res), tol=tol)


def _throughput_at(scaling: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Interpolated throughput at GPU counts ``x`` (searchsorted formulation, for the check)."""
    levels = scaling.shape[1]
    grid = np.exp2(np.arange(levels))
    k = np.clip(np.searchsorted(grid, x, side="right") - 1, 0, levels - 1)
    k1 = np.minimum(k + 1, levels - 1)
    rows = np.arange(scaling.shape[0]) if x.ndim == 1 else np.arange(scaling.shape[0])[:, None]
    x0, x1 = grid[k], grid[k1]
    y0, y1 = scaling[rows, k], scaling[rows, k1]
    w = np.where(x1 > x0, (x - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0)
    return y0 + (y1 - y0) * w


def _independent_caps(requested: np.ndarray, scaling: np.ndarray | None, num_gpus: int,
                      alpha: float) -> np.ndarray:
    """The doubling rule of §3.3 evaluated level by level (used only by the schedule check)."""
    if scaling is None:
        return np.full(requested.shape, float(num_gpus))
    levels = scaling.shape[1]
    top = 2.0 ** (levels - 1)
    per_req = _throughput_at(scaling, requested) / requested
    cap = requested.copy()
    alive = np.ones(requested.shape, dtype=bool)
    for _ in range(levels):  # at most K doublings (loop over levels, not jobs)
        nxt = cap * 2.0
        ok = alive & (nxt <= top)
        eff = np.ones_like(cap)
        eff[ok] = (_throughput_at(scaling[ok], nxt[ok]) / nxt[ok]) / per_req[ok]
        grow = ok & (eff >= alpha * (1.0 - _EFF_RTOL))
        cap = np.where(grow, nxt, cap)
        alive = grow
    return np.minimum(cap, num_gpus)


def _verify_schedule(
    *, num_gpus: int, power: np.ndarray | None, alpha: float, arrival: np.ndarray,
    gpu_time: np.ndarray, requested: np.ndarray, scaling: np.ndarray | None,
    virtual_finish: np.ndarray, gps_finish: np.ndarray, efq_finish: np.ndarray,
    log_t: np.ndarray, log_j: np.ndarray, log_g: np.ndarray, log_p: np.ndarray,
) -> tuple[ReplayCheck, float, dict[str, float]]:
    """Re-check a finished EFQ schedule from its allocation log alone.

    Returns the replay check, the longest busy period (all GPUs allocated) and the residual of
    each check. Nothing computed by the engine except the log and the finish times is used.
    """
    n = arrival.size
    m = float(num_gpus)
    res: dict[str, float] = {}
    # the horizon, in the data's own time unit (no absolute floor: unit invariant)
    horizon = np.abs(np.concatenate([efq_finish, gps_finish, arrival]))
    horizon = horizon[np.isfinite(horizon)]
    tscale = float(np.max(horizon)) if horizon.size else 0.0
    if not tscale > 0.0:
        tscale = float(np.max(gpu_time, initial=0.0)) / m or 1.0
    finite = np.isfinite(efq_finish) & np.isfinite(gps_finish)
    res["finished"] = 0.0 if finite.all() else 1.0
    late = np.maximum(arrival - np.minimum(efq_finish, gps_finish), 0.0) / tscale
    res["causal"] = float(np.max(late, initial=0.0))

    # GPS: the finish times must solve the fair-sharing fixed point. With N(t) the number of
    # jobs with a_j <= t < gps_j and V' = M/N(t), every job receives V(gps_j) - V(a_j) = L_j.
    ev_t = np.concatenate([arrival, gps_finish])
    ev_d = np.concatenate([np.ones(n), -np.ones(n)])
    srt = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[srt], ev_d[srt]
    uniq = np.unique(ev_t)
    last = np.searchsorted(ev_t, uniq, side="right") - 1
    n_after = np.cumsum(ev_d)[last]  # active count on [uniq[u], uniq[u+1])
    seg = np.diff(uniq)
    rate = np.where(n_after[:-1] > 0.5, m / np.maximum(n_after[:-1], 1.0), 0.0)
    v_at = np.concatenate(([0.0], np.cumsum(rate * seg)))
    v_arr = v_at[np.searchsorted(uniq, arrival)]
    v_fin = v_at[np.searchsorted(uniq, gps_finish)]
    vscale = np.maximum(gpu_time, m * tscale * 1e-9)
    res["gps_service"] = float(np.max(np.abs(v_fin - v_arr - gpu_time) / vscale, initial=0.0))
    fscale = np.maximum(np.abs(virtual_finish), gpu_time)
    res["virtual_finish"] = float(np.max(np.abs(virtual_finish - v_arr - gpu_time) / fscale,
                                         initial=0.0))

    # Allocation log: per-entry bounds.
    cap = _independent_caps(requested, scaling, num_gpus, alpha)
    if log_g.size:
        bad_int = np.abs(log_g - np.round(log_g)) + np.maximum(-log_g, 0)
        res["integral"] = float(np.max(bad_int))
        res["max_gpus"] = float(np.max(np.maximum(log_g - cap[log_j], 0.0))) / m
        window = np.maximum(arrival[log_j] - log_t, 0.0) + np.maximum(log_t - efq_finish[log_j],
                                                                      0.0)
        res["window"] = float(np.max(window)) / tscale
        if power is None:
            top_g = log_g.astype(float)
        else:
            top_g = np.concatenate(([0.0], np.cumsum(power)))[log_g.astype(np.int64)]
        res["gpu_power"] = float(np.max(np.maximum(log_p - top_g, 0.0)
                                        / np.maximum(top_g, 1.0)))
    else:
        res["integral"] = res["max_gpus"] = res["window"] = res["gpu_power"] = 0.0

    # Work: integrate each job's rate over its piecewise-constant allocation.
    by_job = np.lexsort((np.arange(log_t.size), log_t, log_j))
    jj, tt, gg, pp = log_j[by_job], log_t[by_job], log_g[by_job], log_p[by_job]
    same_next = np.concatenate((jj[1:] == jj[:-1], [False]))
    t_end = np.where(same_next, np.concatenate((tt[1:], [0.0])), tt)
    dur = t_end - tt
    live = gg > 0
    speed = np.zeros(tt.size)
    if live.any():
        gl = gg[live].astype(float)
        r = requested[jj[live]]
        if scaling is None:
            base = gl
        else:
            sc = scaling[jj[live]]
            base = r * _throughput_at(sc, gl) / _throughput_at(sc, r)
        speed[live] = base * (pp[live] / gl)
    work = np.bincount(jj, weights=speed * dur, minlength=n)
    wscale = np.maximum(gpu_time, m * tscale * 1e-9)
    res["work"] = float(np.max(np.abs(work - gpu_time) / wscale, initial=0.0))
    # the last entry of every job releases its GPUs, at its finish time
    last_of_job = ~same_next
    ends = np.zeros(n, dtype=bool)
    ends[jj[last_of_job]] = True
    final_ok = (gg[last_of_job] == 0) & (np.abs(tt[last_of_job] - efq_finish[jj[last_of_job]])
                                          <= 1e-12 * tscale)
    res["release"] = 0.0 if (ends.all() and final_ok.all()) else 1.0

    # Sweep over time: capacity, power, work conservation and busy periods.
    g_prev = np.where(np.concatenate(([False], same_next[:-1])),
                      np.concatenate(([0], gg[:-1])), 0)
    dg = (gg - g_prev).astype(float)
    p_prev = np.where(np.concatenate(([False], same_next[:-1])),
                      np.concatenate(([0.0], pp[:-1])), 0.0)
    dp = pp - p_prev
    capj = cap[jj]
    dd = (gg < capj).astype(float) - (g_prev < capj).astype(float)
    times = np.concatenate([tt, arrival, efq_finish])
    d_g = np.concatenate([dg, np.zeros(2 * n)])
    d_p = np.concatenate([dp, np.zeros(2 * n)])
    d_d = np.concatenate([dd, np.ones(n), -np.ones(n)])
    srt = np.argsort(times, kind="stable")
    times = times[srt]
    uniq = np.unique(times)
    last = np.searchsorted(times, uniq, side="right") - 1
    used = np.cumsum(d_g[srt])[last]
    pw_used = np.cumsum(d_p[srt])[last]
    deficit = np.cumsum(d_d[srt])[last]
    res["capacity"] = float(np.max(np.maximum(used - m, 0.0), initial=0.0)) / m
    res["power"] = float(np.max(np.maximum(pw_used - m * (1.0 + 1e-9), 0.0), initial=0.0)) / m
    length = np.diff(uniq)
    positive = length > 1e-12 * tscale
    idle = (m - used[:-1]) >= 0.5
    waste = positive & idle & (deficit[:-1] >= 0.5)
    res["work_conserving"] = float(np.sum(length[waste])) / tscale
    busy = positive & ~idle
    busy_max = 0.0
    if busy.any():
        # merge consecutive busy intervals: a run of True in `busy` (zero-length gaps allowed)
        busy_or_instant = busy | ~positive
        cum = np.concatenate(([0.0], np.cumsum(np.where(busy, length, 0.0))))
        brk = np.flatnonzero(~busy_or_instant)
        bounds = np.concatenate(([-1], brk, [busy.size]))
        totals = cum[bounds[1:]] - cum[bounds[:-1] + 1]
        busy_max = float(np.max(totals))
    return _replay_check(res, log_t.size), busy_max, res


# --------------------------------------------------------------------------------------------
# whole-sequence simulation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class EFQResult(FrozenArrays):
    """A whole arrival sequence run to completion under EFQ, with its GPS reference.

    This is a simulation, not an optimisation: there is no optimality certificate. ``check`` is
    the independent replay of the schedule (:class:`ReplayCheck`: capacity, α-capped maxima,
    work conservation, work done equals each job's GPU-time at its finish, GPS fixed point) and
    ``status`` is :attr:`fairalloc.Status.REPLAYED` (a result is only returned when
    ``check.ok``). Every array is read-only.

    Attributes
    ----------
    objective : float
        Mean job completion time under EFQ.
    status : Status
        Always ``Status.REPLAYED``.
    stats : SolveStats
        ``backend="efq"`` (no solver ran), ``iterations`` = events simulated.
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
    num_gpus : int
    log_time, log_job, log_gpus, log_power : ndarray
        Allocation changes: from ``log_time`` on, job ``log_job`` holds ``log_gpus`` GPUs of
        total relative power ``log_power`` (equal to the GPU count on a homogeneous cluster).
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

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.check, ReplayCheck):
            raise InputError("check must be a ReplayCheck", argument="check")
        if self.status != Status.REPLAYED:
            raise InputError(f"an EFQ schedule is a replayed simulation: status must be "
                             f"{Status.REPLAYED!r}, got {self.status!r}", argument="status")
        self.check.check()

    @property
    def certificate(self) -> ReplayCheck:
        """Alias of :attr:`check` (a :class:`ReplayCheck`, not an optimality certificate)."""
        return self.check

    def __repr__(self) -> str:
        return (f"EFQResult(jobs={self.arrival.size}, num_gpus={self.num_gpus}, "
                f"alpha={self.alpha:g}, objective={self.objective:.6g}, "
                f"status={self.status.value!r}, busy_period={self.busy_period:.6g}, "
                f"check={self.check!r}, seconds={self.stats.seconds:.3g})")

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
        return pd.DataFrame({
            "arrival": self.arrival, "gpu_time": self.gpu_time,
            "virtual_finish": self.virtual_finish, "priority": self.priority,
            "max_gpus": self.max_gpus, "efq_finish": self.efq_finish,
            "gps_finish": self.gps_finish, "delay": self.delay,
            "preemptions": self.preemptions,
        })


@only_fairalloc_errors
def efq_schedule(
    arrival: Any, gpu_time: Any, num_gpus: int | Mapping[str, int], *, alpha: float = 0.75,
    requested: Any = None, scaling: Any = None, gpu_power: Mapping[str, float] | None = None,
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
    eng = _Engine(m, power, speed.shape[1], record=True, rows=n)
    eng.add(work, cap, speed)
    efq_fin = np.full(n, np.nan)
    batch_end = np.searchsorted(a_sorted, a_sorted, side="right")
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
        if events > 2 * n + 2:  # every event admits a batch or finishes a job: never reached
            raise SolverError(f"efq_schedule: the event loop did not terminate after {events} "
                              f"events for {n} jobs (non-finite times?)", backend="efq")

    log_t, log_j, log_g, log_p = eng.log()
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
                      ("max_gpus", cap), ("preemptions", eng.preempt[:n].copy()),
                      ("log_time", log_t), ("log_job", log_j), ("log_gpus", log_g),
                      ("log_power", log_p)):
        val = np.asarray(val)
        val.flags.writeable = False
        out[name] = val
    stats = SolveStats(backend="efq", method="event-driven", seconds=time.perf_counter() - t_start,
                       iterations=events, solves=0)
    mean_jct = float(np.mean(efq_fin - arr)) if n else 0.0
    return EFQResult(objective=mean_jct, status=Status.REPLAYED, stats=stats, check=replay,
                     busy_period=busy, alpha=alpha_f, num_gpus=m, **out)


@only_fairalloc_errors
def efq_finish_times(
    arrival: Any, gpu_time: Any, num_gpus: int | Mapping[str, int], *, alpha: float = 0.75,
    requested: Any = None, scaling: Any = None, gpu_power: Mapping[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Finish time of every job under elastic fair queuing and under GPS (Ares §3.2-3.4).

    Runs the whole arrival sequence to completion (idealised: no preemption overhead) with
    :func:`efq_schedule`, whose independent schedule check must pass.

    Parameters
    ----------
    arrival, gpu_time, num_gpus, alpha, requested, scaling, gpu_power
        As in :func:`efq_schedule`. Defaults: one GPU requested, linear scaling.

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


# --------------------------------------------------------------------------------------------
# online queue
# --------------------------------------------------------------------------------------------


def _check_job_id(job_id: Any) -> None:
    try:
        hash(job_id)
    except TypeError:
        raise InputError(f"job_id must be hashable, got {type(job_id).__name__}",
                         argument="job_id") from None


@dataclass(frozen=True)
class QueuedJob:
    """A job known to an :class:`ElasticFairQueue`.

    Attributes
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

    Tell it when jobs arrive (:meth:`submit`), finish (:meth:`finish`) or are cancelled
    (:meth:`cancel`), and read the allocation (:meth:`allocation`) after each event. Every event
    costs ``O(log n)`` for the virtual time plus a vectorised pass over at most ``M`` jobs for
    the allocation.

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
        (simulation). With ``False`` a job keeps its GPUs until :meth:`finish` is called.
    record : bool, default False
        Keep the allocation history (:meth:`history`).
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
        self, num_gpus: int | Mapping[str, int], alpha: float = 0.75, *,
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
        self._eng = _Engine(self._m, self._power_main, self._width, record=record,
                            auto_finish=auto_finish)
        self._eng.now = start_f
        self._gps = _GPSReference(self._m)
        self._gps.tv = start_f
        self._now = start_f
        self._record = record
        self._id_of = np.empty(64, dtype=object)  # row -> job id
        self._row: dict[Hashable, int] = {}
        self._arrival: dict[Hashable, float] = {}
        self._in_gps: set[int] = set()
        self._free_rows: list[int] = []
        self._row_busy: set[int] = set()
        # fair-share pool of jobs with unknown GPU-time
        self._pool_jobs: dict[Hashable, int] = {}  # id -> cap, in arrival order
        self._hist: list[tuple[float, Hashable, int]] = []

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

    def __len__(self) -> int:
        return len(self._row) + len(self._pool_jobs)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._row or job_id in self._pool_jobs

    def __repr__(self) -> str:
        return (f"ElasticFairQueue(num_gpus={self._total}, alpha={self._alpha:g}, "
                f"unknown_pool={self._pool}, jobs={len(self)}, now={self._now:g})")

    # events ----------------------------------------------------------------------------
    @only_fairalloc_errors
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
        _check_job_id(job_id)
        if job_id in self:
            raise InputError(f"job_id {job_id!r} is already in the queue", argument="job_id")
        if gpu_time is not None and steps is not None:
            raise InputError("give gpu_time or steps, not both", argument="steps")
        unknown = gpu_time is None and steps is None
        limit = self._pool if unknown else self._m
        req = as_positive_int(requested, "requested")
        curve = _validate_scaling(scaling, 1)
        if unknown and limit == 0:
            raise InputError(
                f"job {job_id!r} has no gpu_time or steps and the queue has no unknown_pool "
                "(Ares §3.5: such jobs need a dedicated fair-share pool)", argument="gpu_time")
        if req > limit:
            where = "unknown-GPU-time pool" if unknown else "elastic fair queue"
            raise InputError(f"requested = {req} exceeds the {limit} GPUs of the {where}",
                             argument="requested")
        if curve is not None and req > 2 ** (curve.shape[1] - 1):
            raise InputError(f"requested = {req} is beyond the scaling curve, which is profiled "
                             f"up to {2 ** (curve.shape[1] - 1)} GPUs", argument="requested")
        cap, speed, t_req = _one_cap_and_speed(req, None if curve is None else curve[0], limit,
                                               self._alpha, self._width)
        if steps is not None:
            if curve is None:
                raise InputError("steps needs scaling (absolute throughput per GPU count) to "
                                 "convert steps to GPU-time", argument="scaling")
            work = as_positive_float(steps, "steps") * req / t_req
        elif gpu_time is not None:
            work = as_positive_float(gpu_time, "gpu_time")
        t = self._clock(at)
        self._arrival[job_id] = t
        if unknown:
            self._move(t)
            self._pool_jobs[job_id] = cap
            self._log_pool(t)
            return None
        self._move(t)
        row = self._take_row(work, cap, speed)
        f, departed = self._gps.arrive(t, work, row)
        self._gps_departed(departed)
        self._in_gps.add(row)
        self._row[job_id] = row
        self._bind(row, job_id)
        self._eng.insert(np.array([row]), np.array([f]))
        self._eng.reallocate()
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
        t = self._clock(to, "to")
        return self._move(t)

    # queries ---------------------------------------------------------------------------
    def allocation(self) -> dict[Hashable, int]:
        """GPUs each job in the queue holds now (0 for waiting jobs), in priority order for the
        EFQ pool, then the fair-share pool in arrival order."""
        order = self._eng.order
        out: dict[Hashable, int] = dict(zip(self._id_of[order].tolist(),
                                            self._eng.g[order].tolist(), strict=True))
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

        if eng.run_idx.size:
            lo = eng.run_start
            cnt = spread(lo, lo + eng.run_g)
            for r, row in zip(eng.run_idx.tolist(), cnt.tolist(), strict=True):
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
                         max(float(eng.rem[row]), 0.0))

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
        while eng.auto_finish and eng.t_next <= t:
            tc = eng.t_next
            eng.progress(tc)
            fin = eng.remove_head(eng.due())
            eng.reallocate(fin)
            for r in fin.tolist():
                jid = self._id_of[r]
                del self._row[jid]
                del self._arrival[jid]
                done.append((jid, tc))
                self._release(r)
            self._now = tc
            self._log_main()
        eng.progress(t)
        self._gps_departed(self._gps.advance(t))
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
        eng = self._eng
        was_running = eng.g[row] > 0
        eng.remove_one(row)
        eng.reallocate(np.array([row]) if was_running else None)
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

    def _take_row(self, work: float, cap: int, speed: np.ndarray) -> int:
        eng = self._eng
        if self._free_rows and not self._record:
            row = self._free_rows.pop()
            eng.set_row(row, work, cap, speed)
        else:
            row = int(eng.add(np.array([work]), np.array([cap]), speed[None, :])[0])
        self._row_busy.add(row)
        return row

    def _bind(self, row: int, job_id: Hashable) -> None:
        if row >= self._id_of.size:
            grown = np.empty(max(2 * self._id_of.size, row + 1), dtype=object)
            grown[: self._id_of.size] = self._id_of
            self._id_of = grown
        self._id_of[row] = job_id

    def _pool_shares(self) -> np.ndarray:
        caps = np.fromiter(self._pool_jobs.values(), dtype=np.int64, count=len(self._pool_jobs))
        return _water_fill(caps, self._pool)

    def _log_main(self) -> None:
        if not self._record:
            return
        t, j, g = self._eng.pop_log()
        self._hist.extend(zip(t.tolist(), self._id_of[j].tolist(), g.tolist(), strict=True))

    def _log_pool(self, t: float) -> None:
        if not self._record:
            return
        shares = self._pool_shares()
        prev = getattr(self, "_pool_prev", {})
        now = dict(zip(self._pool_jobs, shares.tolist(), strict=True))
        for jid in list(prev):
            if jid not in now:
                self._hist.append((t, jid, 0))
        for jid, s in now.items():
            if prev.get(jid, 0) != s:
                self._hist.append((t, jid, s))
        self._pool_prev = now
