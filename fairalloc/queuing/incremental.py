"""The online EFQ service system on a homogeneous cluster, updated incrementally per event.

`_Incremental` is what [`ElasticFairQueue`][fairalloc.ElasticFairQueue] runs on a homogeneous
cluster (every GPU equally fast). It keeps exactly the state of the vectorised
`fairalloc.queuing.engine._Engine` -- the active jobs in ``(F, arrival)`` order and the greedy
allocation ``g_k = min(cap_k, max(0, M - sum_{l<k} cap_l))`` -- but changes only what an event
changes, in plain Python scalars (no per-event numpy call, whose fixed cost of about a
microsecond dominates at the sizes one event touches):

* the order is one sorted Python list of keys ``(F, seq, row)``: ``bisect`` finds a position
  in ``O(log n)``, the insertion or deletion is one ``memmove`` of ``n`` pointers;
* the running jobs are the first ``p`` entries of the order, ``used`` GPUs in all. Greedy
  allocation over a budget ``B`` fills jobs in order until ``B`` runs out, so giving a new job
  ``x`` GPUs takes them from the idle GPUs first and then from the *tail* of the running prefix
  backwards, and freeing ``x`` GPUs grows the tail job to its cap and admits the next waiting
  jobs. Only jobs whose allocation changes are touched: ``O(log n + changes)`` per event;
* remaining work is lazy: a job stores its remaining work ``rem0`` at the time ``t0`` of its
  last allocation change, and ``rem(t) = rem0 - rate (t - t0)``; the next completion is the top
  of a heap of projected finish times ``t0 + rem0 / rate`` (stale entries skipped by a stamp).

On a heterogeneous cluster a job's speed depends on *which* GPUs it holds (its position in the
list of GPUs sorted fastest first), so an event changes the speed of every running job after
it; the queue then uses the vectorised `_Engine` instead. ``tests/test_queuing.py`` checks both
against the offline schedule and against a brute-force greedy on random event sequences.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from heapq import heapify, heappop, heappush

import numpy as np

from .engine import _DONE_RTOL

#: PERFORMANCE: rebuild the completion heap when it holds more than this many entries per
#: running job (stale entries of jobs whose allocation changed since)
_HEAP_SLACK = 4
#: PERFORMANCE: ... and at least this many entries (small heaps are never rebuilt)
_HEAP_MIN = 64


class _Incremental:
    """EFQ service on ``M`` identical GPUs: the order, the allocation and the work, per event.

    Rows (one per job, recycled by the caller) index plain lists. ``keys`` holds the active
    jobs sorted by ``(F, seq)`` as ``(F, seq, row)``; the first ``p`` of them hold GPUs
    (``used`` in all; ``used < M`` only when every active job is at its maximum).
    """

    __slots__ = ("m", "record", "auto_finish", "now", "keys", "p", "used", "rows", "work", "cap",
                 "speed", "g", "rate", "rem0", "t0", "vfin", "seq", "stamp", "heap", "t_next",
                 "tick", "changed", "log_t", "log_j", "log_g")

    def __init__(self, num_gpus: int, *, record: bool, auto_finish: bool) -> None:
        self.m = int(num_gpus)
        self.record = record
        self.auto_finish = auto_finish
        self.now = 0.0
        self.keys: list[tuple[float, int, int]] = []
        self.p = 0
        self.used = 0
        self.rows = 0
        self.work: list[float] = []
        self.cap: list[int] = []
        self.speed: list[Sequence[float]] = []
        self.g: list[int] = []
        self.rate: list[float] = []
        self.rem0: list[float] = []
        self.t0: list[float] = []
        self.vfin: list[float] = []
        self.seq: list[int] = []
        self.stamp: list[int] = []
        self.heap: list[tuple[float, int, int]] = []  # (projected finish, stamp, row)
        self.t_next = math.inf  # the next completion (top of the heap, kept by _flush)
        self.tick = 0
        self.changed: dict[int, int] = {}  # row -> GPUs it held when the event began
        self.log_t: list[float] = []
        self.log_j: list[int] = []
        self.log_g: list[int] = []

    # storage ---------------------------------------------------------------------------
    def _store(self, row: int, work: float, cap: int, speed: Sequence[float]) -> None:
        """Write a new job into row ``row`` (``row == rows``: a new row at the end)."""
        if row == self.rows:
            self.rows += 1
            for col in (self.g, self.seq, self.stamp):
                col.append(0)
            for col_f in (self.rate, self.rem0, self.t0, self.vfin):
                col_f.append(0.0)
            self.work.append(work)
            self.cap.append(cap)
            self.speed.append(speed)
        else:
            self.work[row] = work
            self.cap[row] = cap
            self.speed[row] = speed
            self.g[row] = 0
            self.rate[row] = 0.0
        self.rem0[row] = work
        self.t0[row] = self.now

    # allocation changes ----------------------------------------------------------------
    def _set(self, row: int, g: int) -> None:
        """Give ``row`` ``g`` GPUs from now on (charging its work so far)."""
        now = self.now
        gs = self.g
        old = gs[row]
        rem = self.rem0[row]
        if old:
            rem -= self.rate[row] * (now - self.t0[row])
            self.rem0[row] = rem
        self.t0[row] = now
        if self.record and row not in self.changed:
            self.changed[row] = old
        gs[row] = g
        tick = self.tick + 1
        self.tick = tick
        self.stamp[row] = tick
        if g:
            sp = self.speed[row]
            k = g.bit_length() - 1  # speed is linear between powers of two
            rate = sp[k] + (sp[k + 1] - sp[k]) * (g / (1 << k) - 1.0)
            self.rate[row] = rate
            if self.auto_finish:
                heappush(self.heap, (now + rem / rate, tick, row))
        else:
            self.rate[row] = 0.0

    def _fill(self) -> None:
        """Hand idle GPUs to the tail job (up to its cap), then to the next waiting jobs."""
        m, used, p = self.m, self.used, self.p
        if used < m and p:
            r = self.keys[p - 1][2]
            add = self.cap[r] - self.g[r]
            if add > m - used:
                add = m - used
            if add > 0:
                self._set(r, self.g[r] + add)
                used += add
        keys, cap = self.keys, self.cap
        n = len(keys)
        while used < m and p < n:
            r = keys[p][2]
            got = cap[r] if cap[r] < m - used else m - used
            self._set(r, got)
            used += got
            p += 1
        self.used, self.p = used, p

    def _remove(self, row: int) -> None:
        """Take ``row`` out of the order; its GPUs go to the jobs behind it."""
        pos = bisect_left(self.keys, (self.vfin[row], self.seq[row]))
        del self.keys[pos]
        if pos < self.p:
            self.used -= self.g[row]
            self.p -= 1
            self._set(row, 0)
            self._fill()

    def _flush(self) -> None:
        """End of an event: log the net changes (losses first), forget the event's marks."""
        changed, g = self.changed, self.g
        if self.record and changed:
            now = self.now
            for lost in (True, False):
                for r, before in changed.items():
                    if g[r] != before and (g[r] == 0) is lost:
                        self.log_t.append(now)
                        self.log_j.append(r)
                        self.log_g.append(g[r])
        changed.clear()
        heap, stamp = self.heap, self.stamp
        if len(heap) > _HEAP_MIN and len(heap) > _HEAP_SLACK * self.p:
            heap = self.heap = [e for e in heap if stamp[e[2]] == e[1]]
            heapify(heap)
        while heap and stamp[heap[0][2]] != heap[0][1]:
            heappop(heap)
        self.t_next = heap[0][0] if heap else math.inf

    # events ------------------------------------------------------------------------------
    def arrive(self, row: int, f: float, work: float, cap: int, speed: Sequence[float]) -> None:
        """A job arrives into row ``row`` (a free row, or ``rows`` for a new one) with GPU-time
        ``work``, maximum ``cap``, speed row ``speed`` and virtual finish time ``f``; it goes
        after every active job with the same ``F``."""
        self._store(row, work, cap, speed)
        self.tick += 1
        seq = self.tick
        self.vfin[row] = f
        self.seq[row] = seq
        keys = self.keys
        pos = bisect_right(keys, (f, seq))  # seq is the largest yet: after every equal F
        keys.insert(pos, (f, seq, row))
        m, p, used = self.m, self.p, self.used
        if pos < p:
            p += 1
            want = self.cap[row]
            got = want if want < m - used else m - used
            used += got
            g = self.g
            last = p - 1
            while got < want and last > pos:  # reclaim from the lowest-priority runners
                r = keys[last][2]
                take = g[r] if g[r] < want - got else want - got
                self._set(r, g[r] - take)
                got += take
                if g[r]:
                    break
                p -= 1
                last -= 1
            self.p, self.used = p, used
            self._set(row, got)
        elif used < m:  # every active job is at its maximum: the newcomer takes idle GPUs
            self._fill()
        self._flush()

    def leave(self, row: int) -> None:
        """``row`` finished early or was cancelled."""
        self._remove(row)
        self._flush()

    def progress(self, t: float) -> None:
        """Advance the clock to ``t`` (work is charged lazily)."""
        if t > self.now:
            self.now = t

    def complete_next(self) -> tuple[float, list[int]]:
        """Run to the next completion; finish every job whose work is used up then (at least
        the one that defines it, against round-off); return the time and their rows."""
        tc = self.t_next
        if tc > self.now:
            self.now = tc
        heap, stamp = self.heap, self.stamp
        due: list[int] = []
        while heap:
            tf, st, r = heap[0]
            if stamp[r] != st:
                heappop(heap)
                continue
            if due and tf > tc and (self.rem0[r] - self.rate[r] * (tc - self.t0[r])
                                    > _DONE_RTOL * self.work[r]):
                break
            heappop(heap)
            due.append(r)
        keys, vfin, seq, g = self.keys, self.vfin, self.seq, self.g
        for r in due:  # running jobs (valid heap entries only exist while g > 0)
            del keys[bisect_left(keys, (vfin[r], seq[r]))]
            self.used -= g[r]
            self.p -= 1
            if self.record and r not in self.changed:
                self.changed[r] = g[r]
            g[r] = 0  # no charge and no new stamp: it has finished, its entry is popped
            self.rate[r] = 0.0
        self._fill()  # the tail job (partial, if any) is still last: one refill suffices
        self._flush()
        return tc, due

    # queries ---------------------------------------------------------------------------
    def remaining(self, row: int) -> float:
        """Work ``row`` still has to do now."""
        return self.rem0[row] - self.rate[row] * (self.now - self.t0[row])

    def order_rows(self) -> list[int]:
        return [key[2] for key in self.keys]

    def gpus(self, rows: Sequence[int]) -> list[int]:
        return list(map(self.g.__getitem__, rows))

    def running(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows holding GPUs, the first GPU each holds, and how many (priority order)."""
        rows = np.array([key[2] for key in self.keys[: self.p]], dtype=np.int64)
        g = np.array(self.gpus(rows.tolist()), dtype=np.int64)
        return rows, np.cumsum(g) - g, g

    def pop_log(self) -> tuple[list[float], list[int], list[int]]:
        """Take (and clear) the changes logged so far: times, rows, GPUs."""
        out = (self.log_t, self.log_j, self.log_g)
        self.log_t, self.log_j, self.log_g = [], [], []
        return out
