"""Reproduction study: the Shockwave artifact's 120-job trace on 32 GPUs (shockwave.txt §8.3).

Reads ``trace_120jobs.tsv`` and ``tacc_throughputs.json`` from ``../shared/data/shockwave``
(or ``--data DIR``), simulates Shockwave, Themis, Gavel max-min fairness, AlloX and OSSP with
the artifact's settings -- 32 GPUs of one type, rounds of 120 s, 20 s lost by a job that did not
run in the previous round, finish-time fairness ``rho = JCT / (isolated time * max(1, N/M))``,
a job unfair when ``rho > 1.05`` -- and prints the results next to the upstream reference
numbers of that folder's README, all measured in this one run.

Policy names (the artifact's legends): ``shockwave`` (this library's planner with the paper's
``k = 5``, ``lambda = 1e-3``; ``shockwave-upstream-config``: the artifact's configuration,
FTF exponent 12 and makespan coefficient 1e-3 on the largest remaining time in seconds, with
the artifact's 15 s solver time limit -- so that row depends on the machine's speed),
``themis`` (the artifact's Themis is Gavel's finish-time-fairness program, ANCHORS.md:
``themis_ftf``; ``themis-auction`` is the paper's Themis: leases, filter and
partial-allocation auction, with no upstream number), ``gavel`` (max-min fairness),
``allox``, ``ossp`` (the artifact's OSSP is
Gavel's makespan policy: ``min_makespan``). ``--all`` adds MST, Gandiva-fair, Ares EFQ, Tiresias
LAS and FIFO.

Usage::

    python benchmarks/reproduce_shockwave.py [--data DIR] [--all] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import fairalloc as fa
from fairalloc.sim import compare, make_policy, read_trace
from fairalloc.sim.policies import ShockwavePolicy
from fairalloc.sim.simulator import Simulator

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "shockwave"

#: upstream reference results (README of the data folder): makespan s, avg JCT s, worst rho,
#: unfair fraction
REFERENCE = {
    "shockwave": (24197.0, 9958.0, 1.78, 0.050),
    "themis": (31929.0, 11302.0, 3.44, 0.225),
    "ossp": (24205.0, 19807.0, 7.74, 0.742),
}


#: rows compared with another row's upstream numbers
REFERENCE_ROW = {"shockwave-upstream-config": "shockwave"}


def policies(all_: bool) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [
        ("shockwave", ShockwavePolicy(k=5.0, lam=1e-3)),
        ("shockwave-upstream-config", ShockwavePolicy(k=12.0, lam=1e-3,
                                                      makespan="max_remaining",
                                                      time_limit=15.0)),
        ("themis", make_policy("themis_ftf")),
        ("themis-auction", make_policy("themis")),
        ("gavel", make_policy("max_min_fairness")),
        ("allox", make_policy("allox")),
        ("ossp", make_policy("min_makespan")),
    ]
    if all_:
        out += [(n, make_policy(n)) for n in ("mst", "gandiva_fair", "efq", "las", "fifo")]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--all", action="store_true", help="also MST, Gandiva-fair, EFQ, LAS, FIFO")
    ap.add_argument("--out", type=Path, default=None, help="write summary.csv and plots here")
    args = ap.parse_args(argv)
    trace = args.data / "trace_120jobs.tsv"
    if not trace.exists():
        print(f"no trace at {trace}: nothing to reproduce (the data folder is optional)")
        return 0
    w = read_trace(trace, throughputs=args.data / "tacc_throughputs.json", types=["v100"])
    cluster = fa.Cluster({"v100": 32})
    modes = ", ".join(f"{m}: {w.mode.count(m)}" for m in ("static", "accordion", "gns"))
    print(f"{w.n} jobs ({modes}) on {cluster}; rounds of 120 s, restart overhead 20 s\n")
    results = {}
    for name, pol in policies(args.all):
        t0 = time.perf_counter()
        sim = Simulator(w, cluster, pol, round_duration=120.0, restart_overhead=20.0)
        results[name] = sim.run()
        print(f"  {name:28s} simulated in {time.perf_counter() - t0:6.1f} s", file=sys.stderr)
    table = compare(results, unfair_threshold=1.05)
    head = (f"{'policy':28s} {'makespan (s)':>22s} {'avg JCT (s)':>20s} {'worst rho':>16s} "
            f"{'unfair %':>16s} {'util':>6s} {'preempt':>8s}")
    print(head)
    print(f"{'':28s} {'ours / upstream':>22s} {'ours / upstream':>20s} "
          f"{'ours / upstream':>16s} {'ours / upstream':>16s}")
    print("-" * len(head))
    for name, row in table.iterrows():
        ref = REFERENCE.get(REFERENCE_ROW.get(str(name), str(name)))

        def cell(v: float, r: float | None, fmt: str, width: int) -> str:
            rs = "n/a" if r is None else format(r, fmt)
            return f"{format(v, fmt)} / {rs}".rjust(width)

        print(f"{name:28s} "
              f"{cell(row['makespan'], ref and ref[0], '.0f', 22)} "
              f"{cell(row['avg_jct'], ref and ref[1], '.0f', 20)} "
              f"{cell(row['worst_rho'], ref and ref[2], '.2f', 16)} "
              f"{cell(100 * row['unfair_fraction'], ref and 100 * ref[3], '.1f', 16)} "
              f"{row['utilization']:6.3f} {int(row['preemptions']):8d}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "summary.csv")
        try:
            from fairalloc.sim.plots import save_plots

            save_plots(results, args.out, unfair_threshold=1.05)
        except ImportError:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
