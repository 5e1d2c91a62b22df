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
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer events and jobs")
    args = parser.parse_args()
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
