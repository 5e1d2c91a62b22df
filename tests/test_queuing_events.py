"""ElasticFairQueue event by event against a brute-force reference (issue #15 item 4).

The queue's homogeneous engine (`fairalloc.queuing.incremental`) changes only what an event
changes; the reference here recomputes everything from scratch after every event: it re-sorts
the active jobs by ``(F, arrival)``, walks them greedily, integrates each job's work in small
exact steps between events, and runs its own GPS clock. Caps come from ``np.interp`` doubling
(``brute_caps``), rates from ``np.interp`` of the raw curve. After every event the queue's
allocation must equal the reference's *in priority order* (``allocation()`` lists jobs in
priority order), and every completion time must agree to 1e-9.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.queuing import incremental
from fairalloc.queuing.incremental import _HEAP_MIN, _HEAP_SLACK, _Blocks
from tests.test_queuing import brute_caps, general_instance, saturating_instance

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)
RTOL = 1e-9


class BruteQueue:
    """EFQ from scratch after every event (no incremental state besides remaining work)."""

    def __init__(self, m: int, alpha: float) -> None:
        self.m, self.alpha = m, alpha
        self.now = 0.0
        self.v = 0.0
        self.gps: dict[object, float] = {}  # id -> F, jobs still in the GPS reference
        self.jobs: dict[object, dict] = {}  # active EFQ jobs
        self.seq = 0

    def _gps_to(self, t: float) -> None:
        tv = self.now
        while self.gps and tv < t:
            n = len(self.gps)
            f_min = min(self.gps.values())
            t_dep = tv + (f_min - self.v) * n / self.m
            if t_dep > t:
                self.v += (t - tv) * self.m / n
                break
            self.v, tv = f_min, t_dep
            self.gps = {k: f for k, f in self.gps.items() if f > f_min}

    def order(self) -> list[object]:
        return sorted(self.jobs, key=lambda k: (self.jobs[k]["F"], self.jobs[k]["seq"]))

    def allocation(self) -> list[tuple[object, int]]:
        free, out = self.m, []
        for k in self.order():
            g = min(self.jobs[k]["cap"], free)
            free -= g
            out.append((k, g))
        return out

    def _rates(self) -> dict[object, float]:
        out = {}
        for k, g in self.allocation():
            if g:
                job = self.jobs[k]
                if job["curve"] is None:
                    out[k] = float(g)
                else:
                    grid = 2.0 ** np.arange(len(job["curve"]))
                    r = job["req"]
                    out[k] = r * np.interp(g, grid, job["curve"]) / np.interp(r, grid, job["curve"])
        return out

    def advance(self, t: float) -> list[tuple[object, float]]:
        done = []
        while True:
            rates = self._rates()
            if not rates:
                break
            k_min = min(rates, key=lambda k: self.jobs[k]["rem"] / rates[k])
            tc = self.now + self.jobs[k_min]["rem"] / rates[k_min]
            if tc > t:
                break
            self._charge(rates, tc)
            for k in [k for k in rates if self.jobs[k]["rem"] <= 1e-11 * self.jobs[k]["work"]
                      or k == k_min]:
                del self.jobs[k]
                done.append((k, tc))
        self._charge(self._rates(), t)
        return done

    def _charge(self, rates: dict[object, float], t: float) -> None:
        for k, rate in rates.items():
            self.jobs[k]["rem"] -= rate * (t - self.now)
        self._gps_to(t)
        self.now = t

    def submit(self, k: object, work: float, req: int, curve, t: float) -> float:
        self.advance(t)
        cap = int(brute_caps([req], None if curve is None else [curve], self.m, self.alpha)[0])
        f = self.v + work
        self.seq += 1
        self.gps[k] = f
        self.jobs[k] = dict(F=f, seq=self.seq, cap=cap, work=work, rem=work, req=req,
                            curve=curve)
        return f

    def leave(self, k: object, t: float, cancel: bool) -> None:
        self.advance(t)
        del self.jobs[k]
        if cancel:
            self.gps.pop(k, None)


@st.composite
def event_sequences(draw):
    """Submissions (ties in F and simultaneous arrivals frequent), finishes, cancellations and
    clock moves on a small cluster."""
    m = draw(st.integers(1, 9))
    alpha = draw(st.sampled_from([0.5, 0.75, 1.0]))
    events = []
    for _ in range(draw(st.integers(1, 30))):
        dt = draw(st.integers(0, 3)) / 4.0
        kind = draw(st.sampled_from(["submit", "submit", "submit", "finish", "cancel", "move"]))
        if kind == "submit":
            levels = draw(st.integers(1, 5))
            linear = draw(st.booleans())
            req = draw(st.integers(1, min(m, 2 ** (levels - 1))))
            curve = None
            if not linear:
                eff = np.minimum.accumulate(np.concatenate(
                    ([1.0], draw(st.lists(st.floats(0.3, 1.0), min_size=levels - 1,
                                          max_size=levels - 1)))))
                curve = (eff * 2.0 ** np.arange(levels)).tolist()
            events.append((kind, dt, draw(st.integers(1, 16)) / 4.0, req, curve))
        else:
            events.append((kind, dt, draw(st.integers(0, 1000)), None, None))
    return m, alpha, events


def _same_finish(got: list, want: list) -> None:
    got_d, want_d = dict(got), dict(want)  # simultaneous completions: any order
    assert got_d.keys() == want_d.keys()
    for k, b in want_d.items():
        assert math.isclose(got_d[k], b, rel_tol=RTOL, abs_tol=RTOL)


@SETTINGS
@given(event_sequences(), st.sampled_from([None, 1, 2]))
def test_queue_matches_brute_force_event_by_event(seq, block):
    """Allocation in priority order and completion times equal a from-scratch recomputation
    after every event; the incremental engine's tail reclaim, refill, tie order (F, arrival)
    and lazy work accounting are all exercised (a wrong order fails the list comparison).
    ``block``: the waiting jobs' block size shrunk to 1 or 2 keys, so that a few jobs already
    split, merge and empty blocks."""
    if block is None:
        run_events(*seq)
        return
    saved = incremental._BLOCK, incremental._BLOCK_MIN
    incremental._BLOCK, incremental._BLOCK_MIN = block, block
    try:
        run_events(*seq)
    finally:
        incremental._BLOCK, incremental._BLOCK_MIN = saved


def run_events(m, alpha, events):
    q = fa.ElasticFairQueue(m, alpha)
    ref = BruteQueue(m, alpha)
    t, nxt = 0.0, 0
    for kind, dt, a, b, curve in events:
        t += dt
        _same_finish(q.advance(t), ref.advance(t))
        if kind == "submit":
            f = q.submit(nxt, gpu_time=a, requested=b, scaling=curve, at=t)
            assert math.isclose(f, ref.submit(nxt, a, b, curve, t), rel_tol=RTOL)
            nxt += 1
        elif kind in ("finish", "cancel") and ref.jobs:
            # only jobs far from their completion: at a completion instant the two sides may
            # legitimately disagree by round-off about whether the job is still there
            live = [k for k, job in ref.jobs.items() if job["rem"] > 1e-6 * job["work"]]
            if live:
                k = live[a % len(live)]
                (q.cancel if kind == "cancel" else q.finish)(k, at=t)
                ref.leave(k, t, cancel=kind == "cancel")
        assert list(q.allocation().items()) == ref.allocation()
        assert math.isclose(q.virtual_time, ref.v, rel_tol=RTOL, abs_tol=RTOL)
        for k, job in ref.jobs.items():
            assert q.job(k).max_gpus == job["cap"]
            assert math.isclose(q.job(k).remaining, max(job["rem"], 0.0), rel_tol=1e-7,
                                abs_tol=1e-7 * job["work"])
    _same_finish(q.advance(t + 1e3), ref.advance(t + 1e3))
    assert len(q) == 0


def test_arrival_takes_idle_gpus_then_the_tail():
    """Hand-checked on 5 GPUs: caps 2, 2, then 2 and 4 arriving with ever smaller F."""
    two = [1.0, 1.9, 2.0]  # e(2) = 0.95 >= 0.75, e(4) = 0.5 < 0.75 (from 1 GPU): cap 2
    q = fa.ElasticFairQueue(5, record=True)
    q.submit("A", gpu_time=8.0, scaling=two)
    q.submit("B", gpu_time=9.0, scaling=two)
    assert list(q.allocation().items()) == [("A", 2), ("B", 2)]  # one GPU idle: all at cap
    q.submit("C", gpu_time=4.0, scaling=two)  # F = 4: first; the idle GPU, then one of B's
    assert list(q.allocation().items()) == [("C", 2), ("A", 2), ("B", 1)]
    q.submit("D", gpu_time=1.0)  # linear (cap 5), F = 1: takes B's, A's, and one of C's
    assert list(q.allocation().items()) == [("D", 5), ("C", 0), ("A", 0), ("B", 0)]
    # D holds 5 GPUs for 1/5; then C, A get 2 each and B the last one again
    assert q.advance(0.2) == [("D", pytest.approx(0.2))]
    assert list(q.allocation().items()) == [("C", 2), ("A", 2), ("B", 1)]
    t, ids, gpus = q.history()
    at_d = [(i, g) for s, i, g in zip(t, ids, gpus, strict=True) if s == 0.0]
    assert sorted(at_d[-4:-1]) == [("A", 0), ("B", 0), ("C", 0)]  # losses logged first
    assert at_d[-1] == ("D", 5)


def test_equal_virtual_finish_is_first_come_first_served():
    q = fa.ElasticFairQueue(2)
    for k in "abc":
        q.submit(k, gpu_time=4.0)  # F = 4 for all three
    assert list(q.allocation()) == ["a", "b", "c"]
    assert q.allocation() == {"a": 2, "b": 0, "c": 0}
    q.cancel("a")
    assert q.allocation() == {"b": 2, "c": 0}


def test_completion_heap_stays_bounded():
    """Jobs whose allocation keeps changing leave stale heap entries; they are compacted."""
    q = fa.ElasticFairQueue(4)
    for i in range(400):
        q.submit(("long", i), gpu_time=1e6, at=float(i))  # each one displaces the last
        q.submit(("short", i), gpu_time=0.5, at=float(i))
    q.advance(1000.0)
    # without compaction ~800 entries would pile up (the stale ones sit below the top)
    assert len(q._eng.heap) <= max(_HEAP_MIN, _HEAP_SLACK * len(q._eng.run)) + 1


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(["insert", "first", "pop", "remove"]),
                          st.integers(0, 20)), max_size=120), st.integers(1, 3))
def test_blocks_stay_sorted(ops, block):
    """`_Blocks` against a plain sorted list, with blocks of 1-3 keys (many splits/merges)."""
    saved = incremental._BLOCK, incremental._BLOCK_MIN
    incremental._BLOCK, incremental._BLOCK_MIN = block, block
    try:
        blocks, plain, seq = _Blocks(), [], 0
        for op, x in ops:
            seq += 1
            if op == "insert":
                key = (float(x), seq, x)
                blocks.insert(key)
                plain.append(key)
                plain.sort()
            elif op == "first" and (not plain or (float(x) - 21.0, seq, x) < plain[0]):
                key = (float(x) - 21.0, seq, x)  # below every key held
                blocks.push_first(key)
                plain.insert(0, key)
            elif op == "pop" and plain:
                assert blocks.pop_first() == plain.pop(0)
            elif op == "remove" and plain:
                blocks.remove(plain.pop(x % len(plain)))
            assert blocks.keys() == plain and blocks.n == len(plain)
            assert blocks.maxes == [blk[-1] for blk in blocks.blocks]
            assert all(0 < len(blk) <= 2 * block for blk in blocks.blocks)
    finally:
        incremental._BLOCK, incremental._BLOCK_MIN = saved


@SETTINGS
@given(saturating_instance())
def test_online_queue_matches_schedule_also_on_heterogeneous_clusters(kw):
    """The online queue (incremental engine on identical GPUs, the vectorised engine on mixed
    GPUs) finishes every job when `efq_schedule` does."""
    r = fa.efq_schedule(**kw)
    q = fa.ElasticFairQueue(kw["num_gpus"], kw["alpha"], gpu_power=kw.get("gpu_power"))
    finish = {}
    for j in np.argsort(kw["arrival"], kind="stable").tolist():
        finish.update(q.advance(float(kw["arrival"][j])))
        q.submit(j, gpu_time=float(kw["gpu_time"][j]), requested=int(kw["requested"][j]),
                 scaling=kw["scaling"][j])
    finish.update(q.advance(float(r.efq_finish.max()) + 1.0))
    got = np.array([finish[j] for j in range(r.arrival.size)])
    np.testing.assert_allclose(got, r.efq_finish, rtol=1e-9, atol=1e-9)
    assert len(q) == 0


@SETTINGS
@given(general_instance())
def test_schedule_engines_agree(kw):
    """`efq_schedule` runs identical GPUs on the incremental engine; the vectorised engine
    (kept for heterogeneous clusters) gives the same finish times, preemption counts and
    allocation at every logged instant."""
    from fairalloc.queuing.curves import _caps_and_speeds
    from fairalloc.queuing.offline import _events_incremental, _events_vectorised

    r = fa.efq_schedule(**kw)
    req = kw["requested"].astype(float)
    cap, speed = _caps_and_speeds(req, kw["scaling"], kw["num_gpus"], kw["alpha"])
    by_arrival = np.argsort(kw["arrival"], kind="stable")
    a_sorted = kw["arrival"][by_arrival]
    batch_end = np.searchsorted(a_sorted, a_sorted, side="right")
    args = (kw["num_gpus"], None, kw["gpu_time"], cap, speed, r.virtual_finish, a_sorted,
            by_arrival, batch_end)
    fin_a, ev_a, log_a, pre_a = _events_incremental(*args)
    fin_b, ev_b, log_b, pre_b = _events_vectorised(*args)
    np.testing.assert_allclose(fin_a, fin_b, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fin_a, r.efq_finish, rtol=0, atol=0)
    assert pre_a.tolist() == pre_b.tolist() == r.preemptions.tolist()
    assert ev_a == ev_b

    def held(log, t):
        out = np.zeros(r.arrival.size, dtype=np.int64)
        for tt, j, g in zip(log[0], log[1], log[2], strict=True):
            if tt <= t:
                out[j] = g
        return out.tolist()

    times = np.unique(np.concatenate((log_a[0], log_b[0])))
    scale = max(float(np.abs(times).max(initial=0.0)), 1.0)
    for lo, hi in zip(times[:-1], times[1:], strict=True):
        if hi - lo > 1e-9 * scale:  # change times agree to round-off: compare in between
            assert held(log_a, (lo + hi) / 2) == held(log_b, (lo + hi) / 2)
    assert held(log_a, math.inf) == held(log_b, math.inf)
