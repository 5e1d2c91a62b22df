"""Profile the re-plans of `ShockwavePolicy`'s defaults on a Shockwave trace (issue #31).

Every ``plan_schedule`` call of the run is timed through the policy's public ``planner=`` seam
(process CPU time) and summarised: re-plans by path and status, CPU by the number of jobs in
the system. ``--dump FILE`` pickles the re-plans that took more than ``--slow`` CPU seconds
(their inputs), and ``--replay FILE`` times those re-plans alone, e.g. against another
checkout (``PYTHONPATH=<checkout> python benchmarks/profile_shockwave_plans.py --replay
FILE``).

Usage::

    python benchmarks/profile_shockwave_plans.py [--scale 120|900] [--dump FILE] [--slow S]
    python benchmarks/profile_shockwave_plans.py --replay FILE
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import fairalloc as fa
from fairalloc.sim import compare, read_trace
from fairalloc.sim.policies import ShockwavePolicy
from fairalloc.sim.simulator import Simulator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reproduce_shockwave import DEFAULT_DATA, RESTART, ROUND, SCALES, UNFAIR  # noqa: E402

#: the most slow re-plans ``--dump`` keeps
MAX_DUMPED = 8
#: job-count bins of the CPU summary
BINS = (0, 300, 500, 700, 10**9)


def replay(path: Path) -> int:
    with path.open("rb") as fh:
        calls = pickle.load(fh)
    for jobs, gpus, options in calls:
        t0 = time.process_time()
        plan = fa.plan_schedule(jobs, gpus, **options)
        cpu = time.process_time() - t0
        print(f"{len(jobs):5d} jobs  {cpu:7.3f} s CPU  objective {plan.objective:.10g}  "
              f"{plan.status.value}  {plan.stats.path}"
              f"  counts {hashlib.sha1(plan.rounds_given.tobytes()).hexdigest()[:12]}")
    return 0


def profile(args: argparse.Namespace) -> int:
    records: list[tuple[int, float, str, tuple[str, ...]]] = []
    slow: list[Any] = []

    def planner(jobs: Any, num_gpus: int, **options: Any) -> Any:
        t0 = time.process_time()
        plan = fa.plan_schedule(jobs, num_gpus, **options)
        cpu = time.process_time() - t0
        records.append((len(jobs), cpu, plan.status.value, tuple(plan.stats.path)))
        if args.dump is not None and cpu > args.slow and len(slow) < MAX_DUMPED:
            slow.append((jobs, num_gpus, options))
        return plan

    _, gpus, trace, table = SCALES[args.scale]
    w = read_trace(args.data / trace, throughputs=args.data / table, types=["v100"])
    policy = ShockwavePolicy(planner=planner)
    t0 = time.process_time()
    result = Simulator(w, fa.Cluster({"v100": gpus}), policy, round_duration=ROUND,
                       restart_overhead=RESTART).run()
    total = time.process_time() - t0
    row = compare({"shockwave": result}, unfair_threshold=UNFAIR).iloc[0]
    print(f"{w.n} jobs on {gpus} GPUs: makespan {row['makespan']:.0f} s, avg JCT "
          f"{row['avg_jct']:.0f} s, worst rho {row['worst_rho']:.2f}, unfair "
          f"{100 * row['unfair_fraction']:.1f} %; {total:.1f} s CPU, of which re-plans "
          f"{sum(r[1] for r in records):.1f} s ({len(records)} calls, "
          f"{policy.time_limited} stopped by a limit)")
    for (status, path), n in collections.Counter((r[2], r[3]) for r in records).most_common():
        print(f"  {n:4d} x {status:16s} {path}")
    sizes = np.array([r[0] for r in records])
    cpus = np.array([r[1] for r in records])
    for lo, hi in zip(BINS[:-1], BINS[1:], strict=True):
        sel = (sizes >= lo) & (sizes < hi)
        if sel.any():
            print(f"  {lo:4d}-{min(hi, 10**4) - 1:<5d} jobs: {int(sel.sum()):4d} re-plans, median "
                  f"{np.median(cpus[sel]):.3f} s, max {cpus[sel].max():.3f} s CPU")
    if args.dump is not None:
        with args.dump.open("wb") as fh:
            pickle.dump(slow, fh)
        print(f"{len(slow)} re-plans over {args.slow} s written to {args.dump}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--scale", type=int, choices=(120, 900), default=900)
    ap.add_argument("--dump", type=Path, default=None)
    ap.add_argument("--slow", type=float, default=1.0, help="CPU seconds (with --dump)")
    ap.add_argument("--replay", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.replay is not None:
        return replay(args.replay)
    if not (args.data / SCALES[args.scale][2]).exists():
        print(f"no trace in {args.data}: nothing to profile (the data folder is optional)")
        return 0
    return profile(args)


if __name__ == "__main__":
    raise SystemExit(main())
