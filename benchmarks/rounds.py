"""Per-round latency of the round-by-round API (issue #16): cold vs warm, import + first call.

A trace of ``--rounds`` scheduling rounds at a steady number of active jobs (100 / 1,000 /
10,000 by default): every round about 1 % of the jobs leave and as many arrive (at least one
of each), so consecutive rounds differ by a few arrivals and departures, as in a real
scheduler. Each round is solved

* **cold**: ``fa.solve_round(policy, throughputs, workers)`` — no state between rounds;
* **warm**: ``fa.RoundPolicy(policy).allocate(throughputs, workers)`` — the previous round
  seeds the solve (max-min fairness: previous prices and level; an identical round is reused).

Inputs are dicts ``{job_id: {worker_type: rate}}`` as a scheduler passes them (the conversion
is part of the measured time). Every round's certificate is checked (``ok`` must hold on every
round, cold and warm). Import + first call is measured in fresh subprocesses (median of 5),
next to the floor no Python library that uses numpy and scipy.sparse can go below: a fresh
interpreter importing ``numpy`` and ``scipy.sparse`` alone (fairalloc needs both; on its first
import scipy.sparse pulls in scipy's array-API layer, which imports ``numpy.testing`` and
``numpy.f2py``). fairalloc's own share is the difference. Every subprocess reads bytecode
from a cache filled by one unmeasured run (as after ``pip install``, which compiles it);
with ``PYTHONDONTWRITEBYTECODE=1`` and no cache each run would also compile fairalloc's
modules from source (about 45 ms more here).

The 150 ms target for import + first call includes that floor. On the shared 2-core
development machine (load average 3-4 from other jobs, 2026-11-24) the floor alone measured
268-462 ms and fairalloc's share (its imports, highspy's, the first HiGHS runs and the first
round) 64-109 ms; the brief that set the target measured the floor at ~150 ms on an idle
machine. The target is therefore not met and cannot be met without dropping numpy/scipy;
fairalloc's share is what this file tracks. On a loaded machine wall-clock times are inflated
by waiting for a core: the ``warm cpu p50`` column (this thread's CPU time per round) is the
figure to compare between versions.

Measured 2026-11-24 at stop 22, quiet machine (``--jobs 100 1000 --rounds 200 --policy
max_min_fairness``, two runs each, alternating with 35afbb6, the version before, run from its
own worktree): warm p50 at 100 jobs **1.9 ms** (before 2.5 ms), at 1,000 jobs 4.0 ms (before
4.9 ms); cold p50 3.8-3.9 / 6.9 ms (before 4.5 / 7.7 ms); 0 uncertified rounds; import + first
call 157-162 ms (floor 128-131 ms, fairalloc's share 28-30 ms; before 158-161 ms, share
30-33 ms). The 100-job target (2 ms) is met; the first-call target (150 ms) is not: the floor
alone is 130 ms, and fairalloc's share (its modules, highspy's import, the first HiGHS runs,
the first round) did not fall below 28 ms. What the step changed: CSR matrices the library
builds skip scipy's format checks (`fairalloc._sparse.csr`); certificates and the instance's
products use scipy's compiled CSR kernels directly; HiGHS receives models as flat arrays;
``np.median``/``np.r_`` wrappers left the hot path; a warm round's price estimate skips the
cold start's medians; the structured solvers are not imported for rounds below 64 jobs.
Earlier (stop 21, vs 24020d3): 3.5-3.6 -> 2.5 ms at 100 jobs. A restricted master's HiGHS run
still costs about 0.1 ms however small the LP (about 1.4 masters a round; a second master in
about a third of the rounds, when the previous round's prices leave a type slack).

Run::

    python benchmarks/rounds.py                       # 500 rounds at 100 / 1,000 / 10,000
    python benchmarks/rounds.py --jobs 100 1000 --rounds 200 --policy max_min_fairness

Targets (issue #16): warm p50 <= 2 ms at 100 jobs and <= 10 ms at 1,000 jobs for max-min
fairness; first call (import included) < 150 ms. Numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import fairalloc as fa
from fairalloc.rounds import POLICIES

TYPES = ("v100", "p100", "k80")


def _job(rng: np.random.Generator) -> dict[str, float]:
    base = float(rng.lognormal(0.0, 0.8)) * 10.0
    r = rng.uniform(0.1, 0.9, 2)
    return {"v100": base, "p100": base * float(max(r)), "k80": base * float(min(r))}


def trace(n: int, rounds: int, seed: int = 0):
    """Yield (throughputs dict, scale factors dict) for each round."""
    rng = np.random.default_rng(seed)
    active = {i: _job(rng) for i in range(n)}
    sf = {i: int(rng.choice([1, 1, 1, 2, 4])) for i in range(n)}
    nxt = n
    churn = max(1, n // 100)
    for _ in range(rounds):
        for j in list(active)[:churn]:
            del active[j]
            del sf[j]
        for _ in range(churn):
            active[nxt] = _job(rng)
            sf[nxt] = int(rng.choice([1, 1, 1, 2, 4]))
            nxt += 1
        yield dict(active), dict(sf)


def run(n: int, rounds: int, policy: str) -> dict[str, float]:
    workers = {t: max(1, n // 4) for t in TYPES}
    cold, warm, warm_cpu = [], [], []
    bad = 0
    methods: dict[str, int] = {}
    p = fa.RoundPolicy(policy)
    for tp, sf in trace(n, rounds):
        t0 = time.perf_counter()
        rc = fa.solve_round(policy, tp, workers, scale_factor=sf)
        t1, c1 = time.perf_counter(), time.thread_time()
        rw = p.allocate(tp, workers, scale_factor=sf)
        t2, c2 = time.perf_counter(), time.thread_time()
        warm_cpu.append(c2 - c1)
        cold.append(t1 - t0)
        warm.append(t2 - t1)
        bad += (not rc.certificate.ok) + (not rw.certificate.ok)
        methods[rw.stats.method] = methods.get(rw.stats.method, 0) + 1
    c, w = np.array(cold) * 1e3, np.array(warm) * 1e3
    return {"jobs": n, "rounds": rounds, "cold_p50": float(np.median(c)),
            "cold_p99": float(np.percentile(c, 99)), "warm_p50": float(np.median(w)),
            "warm_p99": float(np.percentile(w, 99)),
            "warm_cpu_p50": float(np.median(warm_cpu)) * 1e3, "uncertified": bad,
            "warm_methods": methods}


FIRST_CALL = (
    "import time; t = time.perf_counter(); import fairalloc as fa; "
    "r = fa.RoundPolicy('max_min_fairness').allocate("
    "{'a': {'v100': 40.0, 'k80': 10.0}, 'b': {'v100': 12.0, 'k80': 4.0}, "
    "'c': {'v100': 100.0, 'k80': 50.0}}, {'v100': 1, 'k80': 1}); "
    "assert r.certificate.ok; print(time.perf_counter() - t)"
)
IMPORT_ONLY = ("import time; t = time.perf_counter(); import fairalloc as fa; "
               "fa.RoundPolicy; print(time.perf_counter() - t)")


FLOOR = ("import time; t = time.perf_counter(); import numpy, scipy.sparse; "
         "print(time.perf_counter() - t)")


def first_call(repeats: int = 5) -> tuple[float, float, float]:
    """Median seconds of (import + first round, import alone, numpy + scipy.sparse alone) in
    fresh interpreters, alternating, with bytecode read from a cache (filled first)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(),
                                                       "fairalloc-bench-pycache"))
    codes = (FIRST_CALL, IMPORT_ONLY, FLOOR)
    subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, env=env,
                   check=True)  # fills the bytecode cache
    ts: list[list[float]] = [[] for _ in codes]
    for _ in range(repeats):
        for i, code in enumerate(codes):
            res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 env=env, check=True)
            ts[i].append(float(res.stdout.strip().splitlines()[-1]))
    fc, imp, floor = (float(np.median(t)) for t in ts)
    return fc, imp, floor


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--rounds", type=int, default=500)
    # themis and shockwave need per-job inputs this trace does not draw (steps_remaining,
    # PlanJobs): see tests/test_rounds.py for them
    ap.add_argument("--policy", default="max_min_fairness",
                    choices=[p for p in POLICIES if p not in ("themis", "shockwave")])
    args = ap.parse_args(argv)
    fc, imp, floor = first_call()
    print(f"import + first call: {fc * 1e3:.0f} ms (import alone {imp * 1e3:.0f} ms; floor "
          f"python + numpy + scipy.sparse {floor * 1e3:.0f} ms, fairalloc's share "
          f"{(fc - floor) * 1e3:.0f} ms; medians of 5 fresh interpreters)")
    print(f"policy {args.policy}, {os.cpu_count()} CPUs visible; times per round in ms")
    print("| active jobs | rounds | cold p50 | cold p99 | warm p50 | warm p99 | warm cpu p50 | "
          "uncertified rounds | warm methods |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.jobs:
        r = run(n, args.rounds, args.policy)
        print(f"| {n:,} | {r['rounds']} | {r['cold_p50']:.1f} | {r['cold_p99']:.1f} | "
              f"{r['warm_p50']:.1f} | {r['warm_p99']:.1f} | {r['warm_cpu_p50']:.1f} | "
              f"{r['uncertified']} | "
              f"{r['warm_methods']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
