"""Elastic fair queuing (Ares §3) timings: per-event decisions and a 100,000-job sequence.

Run:  python benchmarks/queuing.py [--quick]

Part 1 -- per-event decision time with 2048 GPUs and 1000 active jobs (Ares §5.6 reports a
scheduling overhead under 0.06 s per decision at 2048 GPUs). Each event is a submission or a
completion followed by reading the allocation. ``ElasticFairQueue`` (heap virtual time, sorted
priority array, vectorised greedy) is timed side by side with a straightforward reference that
keeps the same virtual time but re-sorts all active jobs by F and walks them in a Python loop;
both must give the same allocation at every event. Two workloads: jobs that scale well (the
first job in line takes the whole cluster) and jobs that scale poorly (alpha caps them at 1-16
GPUs, so hundreds of jobs run at once).

Part 2 -- a 100,000-job arrival sequence on 2048 GPUs run to completion by ``efq_schedule``
(event-driven, exact), including the independent schedule check, with EFQ vs GPS metrics.

``--scaling`` (issue #15 item 4) -- per-event time of ``ElasticFairQueue`` (auto_finish: arrivals
and the completions they cause, each reallocating) against ``BisectEFQ``, a plain sorted-array +
``bisect`` implementation of the same semantics, at 256 ... 65,536 active jobs, with the ratio and
a check that both produce the same schedule (finish times equal to 1e-9 relative, same final
allocation). ``--before PATH`` adds a column timed on another checkout of fairalloc (run in a
subprocess with ``PYTHONPATH=PATH``, on the same instances, in the same run).
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

import fairalloc as fa
from fairalloc.queuing.curves import _caps_and_speeds
from fairalloc.queuing.replay import _verify_schedule

M = 2048
ALPHA = 0.75


def curves(rng: np.random.Generator, n: int, lo: float, hi: float) -> np.ndarray:
    """Throughput at 1..2048 GPUs: per-doubling efficiency factors drawn from [lo, hi]."""
    factors = rng.uniform(lo, hi, (n, 11))
    eff = np.hstack([np.ones((n, 1)), np.cumprod(factors, axis=1)])
    return eff * 2.0 ** np.arange(12)


class ReferenceQueue:
    """Same semantics, straightforward implementation: re-sort and Python-loop greedy."""

    def __init__(self, num_gpus: int) -> None:
        self.m = num_gpus
        self.jobs: dict[object, tuple[float, int, int]] = {}  # id -> (F, seq, cap)
        self.seq = 0

    def submit(self, job_id: object, f: float, cap: int) -> None:
        self.seq += 1
        self.jobs[job_id] = (f, self.seq, cap)

    def finish(self, job_id: object) -> None:
        del self.jobs[job_id]

    def allocation(self) -> dict[object, int]:
        free = self.m
        out = {}
        for job_id, (_, _, cap) in sorted(self.jobs.items(), key=lambda kv: kv[1][:2]):
            g = min(cap, free)
            free -= g
            out[job_id] = g
        return out


def per_event(rng: np.random.Generator, label: str, lo: float, hi: float, events: int) -> dict:
    n0 = 1000
    pool = curves(rng, n0 + events, lo, hi)
    req = 2.0 ** rng.integers(0, 4, n0 + events)
    work = rng.lognormal(2.0, 1.5, n0 + events)
    caps, _ = _caps_and_speeds(req, pool, M, ALPHA)
    q = fa.ElasticFairQueue(M, ALPHA, auto_finish=False)
    ref = ReferenceQueue(M)
    t = 0.0
    for j in range(n0):
        f = q.submit(j, gpu_time=float(work[j]), requested=int(req[j]), scaling=pool[j], at=t)
        ref.submit(j, f, int(caps[j]))
        t += 0.001
    active = list(range(n0))
    ours, ours_dict, ours_cpu, theirs = [], [], [], []
    running = []
    nxt = n0
    for e in range(events):
        t += 0.001
        if e % 2 == 0:  # a submission
            j = nxt
            nxt += 1
            c0 = time.thread_time()
            t0 = time.perf_counter()
            f = q.submit(j, gpu_time=float(work[j]), requested=int(req[j]), scaling=pool[j],
                         at=t)
            t1 = time.perf_counter()
            a = q.allocation()
            ours.append(t1 - t0)
            ours_dict.append(time.perf_counter() - t0)
            ours_cpu.append(time.thread_time() - c0)
            t0 = time.perf_counter()
            ref.submit(j, f, int(caps[j]))
            b = ref.allocation()
            theirs.append(time.perf_counter() - t0)
            active.append(j)
        else:  # a completion of a running job
            alloc = q.allocation()
            j = next(k for k in alloc if alloc[k] > 0)
            c0 = time.thread_time()
            t0 = time.perf_counter()
            q.finish(j, at=t)
            t1 = time.perf_counter()
            a = q.allocation()
            ours.append(t1 - t0)
            ours_dict.append(time.perf_counter() - t0)
            ours_cpu.append(time.thread_time() - c0)
            t0 = time.perf_counter()
            ref.finish(j)
            b = ref.allocation()
            theirs.append(time.perf_counter() - t0)
            active.remove(j)
        if a != b:
            raise AssertionError(f"allocations differ at event {e}")
        running.append(sum(1 for g in a.values() if g > 0))
    return dict(label=label, active=len(active), running=float(np.mean(running)),
                ours=np.array(ours) * 1e3, ours_dict=np.array(ours_dict) * 1e3,
                ours_cpu=np.array(ours_cpu) * 1e3,
                theirs=np.array(theirs) * 1e3)


def sequence(rng: np.random.Generator, n: int, lo: float, hi: float, load: float) -> dict:
    req = 2.0 ** rng.integers(0, 4, n)
    work = rng.lognormal(2.0, 1.5, n)  # GPU-hours: mostly small/medium, a heavy tail
    arrival = np.cumsum(rng.exponential(work.mean() / (M * load), n))
    sc = None if lo is None else curves(rng, n, lo, hi)
    c0 = time.process_time()
    t0 = time.perf_counter()
    r = fa.efq_schedule(arrival, work, M, alpha=ALPHA, requested=req, scaling=sc)
    total = time.perf_counter() - t0
    cpu = time.process_time() - c0
    t0 = time.perf_counter()
    _verify_schedule(num_gpus=M, power=None, alpha=ALPHA, arrival=r.arrival, gpu_time=r.gpu_time,
                     requested=req, scaling=sc, virtual_finish=r.virtual_finish,
                     gps_finish=r.gps_finish, efq_finish=r.efq_finish, log_t=r.log_time,
                     log_j=r.log_job, log_g=r.log_gpus, log_p=r.log_power)
    check = time.perf_counter() - t0
    gps_jct = r.gps_finish - r.arrival
    return dict(n=n, total=total, cpu=cpu, check=check, events=r.stats.iterations, r=r,
                efq_jct=float(r.jct.mean()), gps_jct=float(gps_jct.mean()),
                unfair=float(np.mean(r.delay > 1e-9)), worst=float(r.delay.max()),
                bound=r.delay_bound, busy=r.busy_period, residual=r.check.max_residual,
                preempt=float(r.preemptions.mean()))


# ---------------------------------------------------------------------------------------------
# --scaling: per-event time against a plain sorted-array + bisect EFQ
# ---------------------------------------------------------------------------------------------

DONE_RTOL = 1e-11  # same completion tolerance as fairalloc.queuing.engine
SIZES = (256, 1024, 4096, 16384, 65536)


class BisectEFQ:
    """Plain EFQ with ``auto_finish`` semantics, homogeneous cluster (a speed reference only).

    Same rules as ``ElasticFairQueue``: GPS virtual time on a heap (Ares Eq. 2-3), the priority
    order ``(F, arrival)`` kept in a sorted Python list with ``bisect``, α-capped maxima by
    doubling, and after every event the greedy allocation recomputed by walking the running
    prefix; every running job's remaining work is charged at each event and the next completion
    is the minimum over the running jobs.
    """

    def __init__(self, num_gpus: int, alpha: float) -> None:
        self.m = num_gpus
        self.alpha = alpha
        self.width = max(int(num_gpus - 1).bit_length(), 0) + 2
        self.v = self.tv = self.now = 0.0
        self.heap: list[tuple[float, int]] = []
        self.n_gps = 0
        self.order: list[tuple[float, int]] = []
        self.jobs: dict[int, list] = {}  # seq -> [job_id, F, work, rem, cap, speed, g, rate]
        self.running: list[int] = []
        self.seq = 0

    def _cap_speed(self, r: int, curve) -> tuple[int, list[float]]:
        if curve is None:
            return self.m, [2.0 ** k for k in range(self.width)]
        t = [float(x) for x in curve]
        levels = len(t)

        def at(x: float) -> float:
            k = int(math.frexp(x)[1]) - 1
            if k >= levels - 1:
                return t[-1]
            return t[k] + (t[k + 1] - t[k]) * (x / (1 << k) - 1.0)

        t_req = at(r)
        g = float(r)
        while 2 * g <= 2 ** (levels - 1) and at(2 * g) / (2 * g) >= \
                self.alpha * t_req / r * (1.0 - 1e-12):
            g *= 2.0
        row = [v * r / t_req for v in t[:self.width]]
        row += [row[-1]] * (self.width - len(row))
        return int(min(g, self.m)), row

    def _gps_advance(self, t: float) -> None:
        while self.heap:
            f = self.heap[0][0]
            t_dep = self.tv + (f - self.v) * self.n_gps / self.m
            if t_dep > t:
                break
            heapq.heappop(self.heap)
            self.v, self.tv = max(self.v, f), max(self.tv, t_dep)
            self.n_gps -= 1
        if self.n_gps:
            self.v += (t - self.tv) * self.m / self.n_gps
        self.tv = t

    def _charge(self, t: float) -> None:
        dt = t - self.now
        for s in self.running:
            job = self.jobs[s]
            job[3] -= job[7] * dt
        self.now = t

    def _allocate(self) -> None:
        free = self.m
        old, new = self.running, []
        for _, s in self.order:
            if free <= 0:
                break
            job = self.jobs[s]
            g = min(job[4], free)
            if g != job[6]:
                sp = job[5]
                k = g.bit_length() - 1
                job[6], job[7] = g, sp[k] + (sp[k + 1] - sp[k]) * (g / (1 << k) - 1.0)
            free -= g
            new.append(s)
        keep = set(new)
        for s in old:
            if s not in keep and s in self.jobs:
                self.jobs[s][6], self.jobs[s][7] = 0, 0.0
        self.running = new

    def advance(self, t: float) -> list[tuple[object, float]]:
        done = []
        while self.running:
            best = min(self.running, key=lambda s: self.jobs[s][3] / self.jobs[s][7])
            tc = self.now + self.jobs[best][3] / self.jobs[best][7]
            if tc > t:
                break
            self._charge(tc)
            fin = [s for s in self.running if self.jobs[s][3] <= DONE_RTOL * self.jobs[s][2]]
            for s in fin or [best]:
                job = self.jobs.pop(s)
                del self.order[bisect.bisect_left(self.order, (job[1], s))]
                done.append((job[0], tc))
            self._allocate()
        self._charge(t)
        self._gps_advance(t)
        return done

    def submit(self, job_id: object, gpu_time: float, requested: int, scaling, at: float) -> float:
        self.advance(at)
        cap, speed = self._cap_speed(requested, scaling)
        f = self.v + gpu_time
        self.seq += 1
        heapq.heappush(self.heap, (f, self.seq))
        self.n_gps += 1
        self.jobs[self.seq] = [job_id, f, gpu_time, gpu_time, cap, speed, 0, 0.0]
        bisect.insort(self.order, (f, self.seq))
        self._allocate()
        return f

    def allocation(self) -> dict[object, int]:
        return {self.jobs[s][0]: self.jobs[s][6] for _, s in self.order}


def scaling_instance(n: int, arrivals: int, lo: float, hi: float, seed: int) -> dict:
    """``n`` long background jobs at time 0, then a Poisson stream of short jobs (load 0.5)."""
    rng = np.random.default_rng(seed)
    total = n + arrivals
    curve = curves(rng, total, lo, hi).tolist()
    req = (2 ** rng.integers(0, 4, total)).tolist()
    work = np.concatenate((rng.uniform(50.0, 500.0, n), rng.lognormal(0.0, 1.0, arrivals)))
    gaps = rng.exponential(np.exp(0.5) / (0.5 * M), arrivals)
    at = np.concatenate((np.zeros(n), np.cumsum(gaps)))
    return dict(n=n, curve=curve, req=req, work=work.tolist(), at=at.tolist())


def run_scaling(inst: dict, who: str) -> dict:
    """Prefill (untimed), then time the stream: ``advance`` + ``submit`` per arrival."""
    n = inst["n"]
    curve, req, work, at = inst["curve"], inst["req"], inst["work"], inst["at"]
    if who == "bisect":
        q = BisectEFQ(M, ALPHA)

        def submit(j):
            q.submit(j, work[j], req[j], curve[j], at[j])
    else:
        q = fa.ElasticFairQueue(M, ALPHA)

        def submit(j):
            q.submit(j, gpu_time=work[j], requested=req[j], scaling=curve[j], at=at[j])
    for j in range(n):
        submit(j)
    finish: dict = {}
    t0 = time.thread_time()  # CPU time of this thread: other processes' load does not count
    for j in range(n, len(at)):
        finish.update(q.advance(at[j]))
        submit(j)
    seconds = time.thread_time() - t0
    alloc = q.allocation()
    # events: the arrivals and the completions they caused (both reallocate)
    return dict(seconds=seconds, events=len(at) - n + len(finish),
                finish={str(k): v for k, v in finish.items()},
                alloc={str(k): v for k, v in alloc.items()})


def scaling_table(sizes, arrivals: int, before: str | None) -> None:
    print(f"Per-event time, {M} GPUs, alpha={ALPHA}: n long jobs active, then {arrivals} short "
          "arrivals (load 0.5) and the completions they cause; us of thread CPU time per event "
          "(noisy on a shared machine: compare within a row)")
    head = f"{'workload':<14}{'active':>8}{'events':>8}{'fairalloc':>11}{'bisect ref':>11}"
    head += f"{'before':>9}" if before else ""
    head += f"{'ref/fairalloc':>15}" + (f"{'before/fairalloc':>18}" if before else "")
    print(head + "  same schedule")
    for label, lo, hi in (("scales well", 0.95, 1.0), ("scales poorly", 0.6, 0.9)):
        for n in sizes:
            inst = scaling_instance(n, arrivals, lo, hi, seed=n)
            ours = run_scaling(inst, "fairalloc")
            ref = run_scaling(inst, "bisect")
            same = ours["finish"].keys() == ref["finish"].keys() and all(
                math.isclose(ours["finish"][k], ref["finish"][k], rel_tol=1e-9)
                for k in ours["finish"]) and ours["alloc"] == ref["alloc"]
            per = 1e6 * ours["seconds"] / ours["events"]
            per_ref = 1e6 * ref["seconds"] / ref["events"]
            row = f"{label:<14}{n:>8,}{ours['events']:>8}{per:>11.1f}{per_ref:>11.1f}"
            if before:
                old = before_run(before, n, arrivals, lo, hi)
                same = same and old["finish"].keys() == ours["finish"].keys() and all(
                    math.isclose(old["finish"][k], ours["finish"][k], rel_tol=1e-9)
                    for k in old["finish"])
                per_old = 1e6 * old["seconds"] / old["events"]
                row += f"{per_old:>9.1f}"
            row += f"{per_ref / per:>14.2f}x"
            if before:
                row += f"{per_old / per:>17.2f}x"
            print(row + f"  {'yes' if same else 'NO'}", flush=True)


def before_run(path: str, n: int, arrivals: int, lo: float, hi: float) -> dict:
    env = dict(os.environ, PYTHONPATH=path)
    out = subprocess.run(
        [sys.executable, __file__, "--one", json.dumps([n, arrivals, lo, hi])], env=env,
        capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer events and jobs")
    parser.add_argument("--scaling", action="store_true",
                        help="per-event time vs the sorted-array + bisect reference")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--arrivals", type=int, default=1000)
    parser.add_argument("--before", help="another fairalloc checkout to time alongside")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        n, arrivals, lo, hi = json.loads(args.one)
        print(json.dumps(run_scaling(scaling_instance(n, arrivals, lo, hi, seed=n), "fairalloc")))
        return
    if args.scaling:
        scaling_table(args.sizes, args.arrivals, args.before)
        return
    rng = np.random.default_rng(2025)
    events = 400 if args.quick else 2000
    n_jobs = 20_000 if args.quick else 100_000

    print(f"Per-event decision time, {M} GPUs, 1000 active jobs, alpha={ALPHA} "
          f"({events} events: submissions and completions, each followed by allocation())")
    print("wall-clock ms unless marked CPU (thread CPU time: excludes descheduling by other "
          "processes on this shared machine)")
    print(f"{'workload':<35}{'running':>8}  {'EFQ decision':>18}  {'+ allocation() dict':>20}"
          f"  {'same, CPU':>18}  {'re-sort + loop':>18}  {'speed-up':>9}")
    print(f"{'':<35}{'jobs':>8}  {'median':>9}{'p99':>9}  {'median':>11}{'p99':>9}  "
          f"{'p99':>9}{'max':>9}  {'median':>9}{'p99':>9}  {'(median)':>9}")
    for label, lo, hi in (("scales well (eff/doubling .95-1)", 0.95, 1.0),
                          ("scales poorly (eff/doubling .6-.9)", 0.6, 0.9)):
        res = per_event(rng, label, lo, hi, events)
        o, d, c, t = res["ours"], res["ours_dict"], res["ours_cpu"], res["theirs"]
        print(f"{label:<35}{res['running']:>8.0f}  {np.median(o):>9.3f}"
              f"{np.percentile(o, 99):>9.3f}  {np.median(d):>11.3f}{np.percentile(d, 99):>9.3f}  "
              f"{np.percentile(c, 99):>9.3f}{c.max():>9.3f}  "
              f"{np.median(t):>9.3f}{np.percentile(t, 99):>9.3f}  "
              f"{np.median(t) / np.median(d):>8.1f}x")
    print("(paper, Ares §5.6: < 60 ms per scheduling decision at 2048 GPUs; target here < 1 ms)")
    print()
    print(f"{n_jobs:,}-job arrival sequence on {M} GPUs run to completion (efq_schedule, exact "
          "event-driven, schedule check included)")
    print("(GPS is the paper's idealised reference: fluid, linear scaling, so with measured curves "
          "EFQ cannot match it)")
    print(f"{'workload':<34}{'events':>9}{'wall s':>8}{'CPU s':>7}{'us/event':>10}{'check s':>9}"
          f"{'mean JCT h EFQ':>16}{'GPS':>8}{'delayed':>9}{'max delay h':>13}{'residual':>10}")
    for label, lo, hi, load in (("linear scaling, load 0.9", None, None, 0.9),
                                ("measured .95-1/doubling, load 0.7", 0.95, 1.0, 0.7),
                                ("measured .6-.9/doubling, load 0.5", 0.6, 0.9, 0.5)):
        s = sequence(rng, n_jobs, lo, hi, load)
        print(f"{label:<34}{s['events']:>9,}{s['total']:>8.1f}{s['cpu']:>7.1f}"
              f"{1e6 * s['total'] / s['events']:>10.1f}{s['check']:>9.2f}{s['efq_jct']:>16.2f}"
              f"{s['gps_jct']:>8.2f}{100 * s['unfair']:>8.1f}%{s['worst']:>13.3f}"
              f"{s['residual']:>10.1e}")


if __name__ == "__main__":
    main()
