"""The elastic fair queuing event engine: the exact GPS reference and the EFQ service system.

`_GPSReference` keeps the virtual time ``V`` of the fair-sharing reference (Ares §3.2,
Eq. 2-3) event by event with a heap; `_Engine` holds the active jobs in virtual-finish
order with their α-capped maxima, remaining work and allocation, and recomputes the greedy
allocation after every event with numpy. Both are driven by
`fairalloc.efq_schedule` (a whole arrival sequence) and
`fairalloc.ElasticFairQueue` (online); on identical GPUs
both use `fairalloc.queuing.incremental._Incremental` instead of `_Engine` (same state,
changed only where an event changes it).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

#: ACCURACY: a job whose remaining work is below this fraction of its GPU-time has finished
_DONE_RTOL = 1e-11
#: PERFORMANCE: rows of per-job storage allocated up front (the arrays double when full)
INITIAL_ROWS = 64


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

    def advance(self, t: float) -> list[tuple[int, float]]:
        """Move to time ``t``; return ``(key, GPS finish time)`` of the departures on the way."""
        out: list[tuple[int, float]] = []
        if t == self.tv:  # already there: every live job departs after tv (F > V), none is due
            return out
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
        return self.add(gpu_time, key), departed

    def add(self, gpu_time: float, key: int) -> float:
        """Add a job now (the reference already advanced to its arrival); return ``F``."""
        f = self.v + gpu_time
        self.seq += 1
        heapq.heappush(self.heap, (f, self.seq, key))
        self.live[key] = self.seq
        self.n_active += 1
        return f

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
        auto_finish: bool = True, rows: int = INITIAL_ROWS,
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

    def set_row(self, i: int, work: float, cap: int, speed: Sequence[float]) -> None:
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

    # the online queue's per-event interface (shared with `incremental._Incremental`) -------
    def arrive(self, row: int, f: float, work: float, cap: int, speed: Sequence[float]) -> None:
        """One job arrives into row ``row`` (a free row, or ``rows`` for a new one): store it,
        activate it with virtual finish time ``f`` and reallocate."""
        if row == self.rows:
            self.add(np.array([work]), np.array([cap]), np.asarray(speed)[None, :])
        else:
            self.set_row(row, work, cap, speed)
        self.insert(np.array([row]), np.array([f]))
        self.reallocate()

    def leave(self, row: int) -> None:
        """One row finished early or was cancelled: deactivate it and reallocate."""
        was_running = self.g[row] > 0
        self.remove_one(row)
        self.reallocate(np.array([row]) if was_running else None)

    def complete_next(self) -> tuple[float, list[int]]:
        """Run to the next completion, finish the jobs due then; return the time and rows."""
        tc = self.t_next
        self.progress(tc)
        fin = self.remove_head(self.due())
        self.reallocate(fin)
        return tc, fin.tolist()

    def remaining(self, row: int) -> float:
        return float(self.rem[row])

    def order_rows(self) -> list[int]:
        return self.order.tolist()  # type: ignore[no-any-return]

    def gpus(self, rows: Sequence[int]) -> list[int]:
        return self.g[np.asarray(rows, dtype=np.int64)].tolist()  # type: ignore[no-any-return]

    def running(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows holding GPUs, the first GPU each holds, and how many (priority order)."""
        return self.run_idx, self.run_start, self.run_g

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
