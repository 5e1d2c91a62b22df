"""The EFQ service system on a homogeneous cluster, updated incrementally per event.

`_Incremental` is what `fairalloc.ElasticFairQueue` and
`fairalloc.efq_schedule` run on a homogeneous cluster (every GPU equally
fast). It keeps exactly the state of the vectorised
`fairalloc.queuing.engine._Engine` -- the active jobs in ``(F, arrival)`` order and the greedy
allocation ``g_k = min(cap_k, max(0, M - sum_{l<k} cap_l))`` -- but changes only what an event
changes, in plain Python scalars (no per-event numpy call, whose fixed cost of about a
microsecond dominates at the sizes one event touches):

* the order is kept as keys ``(F, seq, row)`` in two sorted parts: the running jobs (a
  prefix of the order, ``used`` GPUs in all) in a Python list ``run``, at most ``M`` entries,
  and the waiting jobs in `_Blocks`, a list of sorted blocks of at most ``2 _BLOCK`` keys with
  the largest key of each block alongside. ``bisect`` finds a position in ``O(log n)``; an
  insertion or deletion moves at most ``M`` or ``2 _BLOCK`` pointers (one sorted array of all
  ``n`` jobs would move ``n``: a quarter of a megabyte per event at 65,536 jobs);
* greedy allocation over a budget ``B`` fills jobs in order until ``B`` runs out, so giving a
  new job ``x`` GPUs takes them from the idle GPUs first and then from the *tail* of the
  running prefix backwards (jobs cut to zero move to the front of the waiting part), and
  freeing ``x`` GPUs grows the tail job to its cap and admits the first waiting jobs. Only
  jobs whose allocation changes are touched: ``O(log n + changes)`` per event;
* remaining work is lazy: a job stores its remaining work ``rem0`` at the time ``t0`` of its
  last allocation change, and ``rem(t) = rem0 - rate (t - t0)``; the next completion is the top
  of a heap of projected finish times ``t0 + rem0 / rate`` (stale entries skipped by a stamp).

On a heterogeneous cluster a job's speed depends on *which* GPUs it holds (its position in the
list of GPUs sorted fastest first), so an event changes the speed of every running job after
it; both then use the vectorised `_Engine` instead. ``tests/test_queuing_events.py`` checks
the queue against a brute-force recomputation on random event sequences and the two engines
against each other on whole schedules.
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
#: PERFORMANCE: waiting-job blocks hold up to twice this many keys (a split halves them)
_BLOCK = 256
#: PERFORMANCE: a block that shrinks below this many keys merges with the next one
_BLOCK_MIN = _BLOCK // 4


class _Blocks:
    """Sorted keys in blocks: ``blocks[i]`` is sorted, every key of block ``i`` is below every
    key of block ``i + 1``, ``maxes[i]`` is the last key of block ``i``; empty blocks are
    dropped. Keys are unique (``seq`` is)."""

    __slots__ = ("blocks", "maxes", "n")

    def __init__(self) -> None:
        self.blocks: list[list[tuple[float, int, int]]] = []
        self.maxes: list[tuple[float, int, int]] = []
        self.n = 0

    def _split(self, b: int) -> None:
        blk = self.blocks[b]
        if len(blk) > 2 * _BLOCK:
            self.blocks[b: b + 1] = [blk[:_BLOCK], blk[_BLOCK:]]
            self.maxes[b: b + 1] = [blk[_BLOCK - 1], blk[-1]]

    def insert(self, key: tuple[float, int, int]) -> None:
        self.n += 1
        blocks, maxes = self.blocks, self.maxes
        b = bisect_left(maxes, key)
        if b == len(maxes):  # beyond every key: append to the last block
            if not blocks:
                blocks.append([key])
                maxes.append(key)
                return
            b -= 1
            blocks[b].append(key)
            maxes[b] = key
            if len(blocks[b]) > 2 * _BLOCK:
                self._split(b)
        else:
            blk = blocks[b]
            blk.insert(bisect_left(blk, key), key)
            if len(blk) > 2 * _BLOCK:
                self._split(b)

    def push_first(self, key: tuple[float, int, int]) -> None:
        """Insert a key below every key held."""
        self.n += 1
        if self.blocks:
            blk = self.blocks[0]
            blk.insert(0, key)
            if len(blk) > 2 * _BLOCK:
                self._split(0)
        else:
            self.blocks.append([key])
            self.maxes.append(key)

    def pop_first(self) -> tuple[float, int, int]:
        self.n -= 1
        blk = self.blocks[0]
        key = blk.pop(0)
        if not blk:
            del self.blocks[0]
            del self.maxes[0]
        return key

    def remove(self, key: tuple[float, int, int]) -> None:
        self.n -= 1
        b = bisect_left(self.maxes, key)
        blk = self.blocks[b]
        i = bisect_left(blk, key)
        del blk[i]
        if not blk:
            del self.blocks[b]
            del self.maxes[b]
            return
        if i == len(blk):
            self.maxes[b] = blk[-1]
        if len(blk) < _BLOCK_MIN and b + 1 < len(self.blocks):  # no long tail of tiny blocks
            blk += self.blocks.pop(b + 1)
            self.maxes[b] = self.maxes.pop(b + 1)
            self._split(b)

    def keys(self) -> list[tuple[float, int, int]]:
        return [key for blk in self.blocks for key in blk]


class _Incremental:
    """EFQ service on ``M`` identical GPUs: the order, the allocation and the work, per event.

    Rows (one per job, recycled by the caller) index plain lists. The active jobs, as keys
    ``(F, seq, row)`` sorted by ``(F, seq)``: ``run`` (the ones holding GPUs, ``used`` in all),
    then ``wait``; ``used < M`` only when every active job runs at its maximum (``wait`` empty).
    """

    __slots__ = ("m", "record", "auto_finish", "now", "run", "wait", "used", "rows", "work", "cap",
                 "speed", "g", "rate", "rem0", "t0", "vfin", "seq", "stamp", "heap", "t_next",
                 "tick", "changed", "log_t", "log_j", "log_g", "hold", "done", "preempt")

    def __init__(self, num_gpus: int, *, record: bool, auto_finish: bool) -> None:
        self.m = int(num_gpus)
        self.record = record
        self.auto_finish = auto_finish
        self.now = 0.0
        self.run: list[tuple[float, int, int]] = []
        self.wait = _Blocks()
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
        self.hold = False  # True: events end only at end_event() (a batch at one instant)
        self.done: set[int] = set()  # rows that finished or left in the current event
        self.preempt: list[int] = []  # times each row lost all its GPUs (record=True only)

    # storage ---------------------------------------------------------------------------
    def _store(self, row: int, work: float, cap: int, speed: Sequence[float]) -> None:
        """Write a new job into row ``row`` (``row == rows``: a new row at the end)."""
        if row == self.rows:
            self.rows += 1
            for col in (self.g, self.seq, self.stamp, self.preempt):
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
            self.preempt[row] = 0
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
        m, used, run = self.m, self.used, self.run
        if used < m and run:
            r = run[-1][2]
            add = self.cap[r] - self.g[r]
            if add > m - used:
                add = m - used
            if add > 0:
                self._set(r, self.g[r] + add)
                used += add
        wait, cap = self.wait, self.cap
        while used < m and wait.n:
            key = wait.pop_first()
            r = key[2]
            got = cap[r] if cap[r] < m - used else m - used
            self._set(r, got)
            used += got
            run.append(key)
        self.used = used

    def _remove(self, row: int) -> None:
        """Take ``row`` out of the order; its GPUs go to the jobs behind it."""
        key = (self.vfin[row], self.seq[row], row)
        run = self.run
        if run and key <= run[-1]:  # a running job (every waiting key is above run[-1])
            del run[bisect_left(run, key)]
            self.used -= self.g[row]
            self._set(row, 0)
            self._fill()
        else:
            self.wait.remove(key)

    def end_event(self) -> None:
        """Log the event's net changes (losses first) and count preemptions (running jobs that
        lost all their GPUs without finishing); forget the event's marks."""
        changed, g, done = self.changed, self.g, self.done
        if changed:
            now = self.now
            for lost in (True, False):
                for r, before in changed.items():
                    if g[r] != before and (g[r] == 0) is lost:
                        self.log_t.append(now)
                        self.log_j.append(r)
                        self.log_g.append(g[r])
                        if lost and r not in done:
                            self.preempt[r] += 1
            changed.clear()
        done.clear()

    def _flush(self) -> None:
        """End of an operation: the event ends too unless ``hold``; the next completion."""
        if self.record and not self.hold:
            self.end_event()
        heap, stamp = self.heap, self.stamp
        if len(heap) > _HEAP_MIN and len(heap) > _HEAP_SLACK * len(self.run):
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
        if row == self.rows:
            self._store(row, work, cap, speed)
        else:  # _store, inlined for the usual case of a recycled row
            self.work[row] = work
            self.cap[row] = cap
            self.speed[row] = speed
            self.g[row] = 0
            self.rate[row] = 0.0
            self.preempt[row] = 0
            self.rem0[row] = work
            self.t0[row] = self.now
        self.activate(row, f)

    def reserve(self, work: list[float], cap: list[int], speed: list[list[float]]) -> None:
        """Store every job of a whole arrival sequence up front (rows ``0..n-1``)."""
        n = len(work)
        self.work, self.cap, self.speed = list(work), list(cap), list(speed)
        self.g, self.seq, self.stamp, self.preempt = [0] * n, [0] * n, [0] * n, [0] * n
        self.rate, self.t0, self.vfin = [0.0] * n, [0.0] * n, [0.0] * n
        self.rem0 = list(work)
        self.rows = n

    def activate(self, row: int, f: float) -> None:
        """A stored job arrives now with virtual finish time ``f``."""
        self.tick += 1
        seq = self.tick
        self.vfin[row] = f
        self.seq[row] = seq
        key = (f, seq, row)  # seq is the largest yet: after every job with the same F
        m, used, run = self.m, self.used, self.run
        if run and key < run[-1]:  # ahead of the last running job: it runs
            pos = bisect_right(run, key)
            run.insert(pos, key)
            want = self.cap[row]
            got = want if want < m - used else m - used
            used += got
            g = self.g
            while got < want and len(run) - 1 > pos:  # reclaim from the lowest-priority runners
                r = run[-1][2]
                take = g[r] if g[r] < want - got else want - got
                self._set(r, g[r] - take)
                got += take
                if g[r]:
                    break
                self.wait.push_first(run.pop())
            self.used = used
            self._set(row, got)
        elif used < m:  # every active job is at its maximum: the newcomer takes idle GPUs
            self.wait.insert(key)
            self._fill()
        else:
            self.wait.insert(key)
        self._flush()

    def leave(self, row: int) -> None:
        """``row`` finished early or was cancelled."""
        if self.record:
            self.done.add(row)
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
        if self.record:
            self.done.update(due)
        run, vfin, seq, g = self.run, self.vfin, self.seq, self.g
        for r in due:  # running jobs (valid heap entries only exist while g > 0)
            del run[bisect_left(run, (vfin[r], seq[r]))]
            self.used -= g[r]
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
        return [key[2] for key in self.run] + [key[2] for key in self.wait.keys()]

    def gpus(self, rows: Sequence[int]) -> list[int]:
        return list(map(self.g.__getitem__, rows))

    def running(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows holding GPUs, the first GPU each holds, and how many (priority order)."""
        rows = np.array([key[2] for key in self.run], dtype=np.int64)
        g = np.array(self.gpus(rows.tolist()), dtype=np.int64)
        return rows, np.cumsum(g) - g, g

    def pop_log(self) -> tuple[list[float], list[int], list[int]]:
        """Take (and clear) the changes logged so far: times, rows, GPUs."""
        out = (self.log_t, self.log_j, self.log_g)
        self.log_t, self.log_j, self.log_g = [], [], []
        return out
