"""Reproduction study: the Shockwave artifact's 120-job trace on 32 GPUs (shockwave.txt §8.3).

Reads ``trace_120jobs.tsv`` and ``tacc_throughputs.json`` from ``../shared/data/shockwave``
(or ``--data DIR``), simulates Shockwave, Themis, Gavel max-min fairness, AlloX and OSSP with
the artifact's settings -- 32 GPUs of one type, rounds of 120 s, 20 s lost by a job that did not
run in the previous round, finish-time fairness ``rho = JCT / (isolated time * max(1, N/M))``,
a job unfair when ``rho > 1.05`` -- and prints the results next to the upstream reference
numbers of that folder's README, all measured in this one run.

It prints upstream's published rows first, then each row simulated here next to upstream's
number for the same policy (``ours / upstream``; ``n/a`` where upstream published none).

Policy names (the artifact's legends): ``shockwave-upstream`` (``ShockwavePolicy(
preset="upstream")``: upstream's behaviours and 32-GPU configuration, observed-only
forecast; formulations/shockwave_options.md) and ``shockwave-upstream-oracle`` (the same
with the exact future, ``forecast="oracle"``), ``shockwave-upstream-dirichlet`` (the same with
upstream's own forecast, ``forecast="upstream_dirichlet"``: a Dirichlet posterior over the
batch sizes the job's whole schedule uses, at their future epoch times), ``shockwave`` (this
library's planner with its defaults: observed-only forecasts, clipped weights,
near-completion boost, the makespan term
``4 max_j R_j / Z0``, hard finish-time limits first with ``rhomax = 1.6``, the fairness
side reading the empirical forecast (``ftf_forecast="empirical"``); see
``docs/how-to/reproduce-shockwave.md`` for the experiment that chose them),
``shockwave-scale-free`` (the previous defaults: the term ``32 H / (M Z0)``, no hard limits),
``shockwave-no-hard-ftf`` (the defaults without the hard limits),
``shockwave-paper`` (the paper's Eq. 11 as written with §6.1's ``k = 5``, ``lambda = 1e-3``:
``rho^k`` weights for every job, no boost; App. G.2 gives ``lambda`` in [0.1, 10] instead),
``shockwave-upstream-hparams`` (upstream hyper-parameters only: FTF exponent 12 and makespan
coefficient 1e-3 on the largest remaining time in seconds, the artifact's 15 s solver time
limit -- so that row depends on the machine's speed -- and none of upstream's behaviours),
``shockwave-max-remaining`` (the defaults with upstream's makespan term ``1e-3 max_j R_j`` in
raw seconds instead of the scale-free one: better at 256 GPUs),
``shockwave-empirical`` / ``shockwave-empirical-lam16`` (the defaults with
``forecast="empirical"``, and with ``lam=16`` too), ``shockwave-previous`` (the previous
defaults: ``ftf_forecast=None``, i.e. the restatement rule on both sides, ``rhomax = 1.5``),
``themis`` (the artifact's Themis is Gavel's finish-time-fairness program, ANCHORS.md:
``themis_ftf``; ``themis-auction`` is the paper's Themis: leases, filter and
partial-allocation auction, with no upstream number), ``gavel`` (max-min fairness),
``allox`` (fairalloc's AlloX re-matches every job every round: not upstream's variant),
``ossp`` (the artifact's OSSP is Gavel's makespan policy: ``min_makespan``), ``mst`` (Gavel's
max sum throughput), ``gandiva_fair`` (stride scheduling), and for each baseline an
``-upstream`` row (``themis-upstream``, ``gavel-upstream``, ``allox-upstream``,
``mst-upstream``, ``gandiva_fair-upstream``, ``ossp-upstream``) that runs it as the artifact's
code does, through upstream's round loop (``rounds="upstream"``; the differences, with
upstream's file and line, are in docs/how-to/reproduce-shockwave.md). On the traces the
``-upstream`` rows (the preset's and the baselines') run with the artifact's own simulator
mechanics, ``Simulator(..., mechanics="upstream")`` (``--event-mechanics``: without; the
generated workloads of ``--seeds`` always without). ``--all`` adds Ares
EFQ, Tiresias LAS and FIFO.

``--trace900`` runs the 900-job trace on 256 GPUs instead, paired with ``wisr_throughputs.json``
(the table its durations were generated with; the data folder's README), and prints the
makespan ratios the paper reports for that scale (aggregates only: upstream publishes no
256-GPU result files), with each policy's simulation time.

``--seeds N`` replaces the trace by N workloads of fairalloc's generator
(`fairalloc.sim.poisson_workload`, the builtin throughput table, the arrival rate of the trace
of that scale; ``--scale 120``, ``900`` or ``both``) and prints each policy's mean and
standard deviation over the seeds (no data folder needed), after one row per seed and policy,
and the defaults' means relative to the upstream preset's when both run. ``--seed-offset K``
uses seeds ``K .. K+N-1`` (the defaults were chosen on seeds 0-2: report others).

``--policies a,b`` runs only the named rows.

Usage::

    python benchmarks/reproduce_shockwave.py [--data DIR] [--all] [--out DIR]
    python benchmarks/reproduce_shockwave.py --trace900 [--policies shockwave,gavel,...]
    python benchmarks/reproduce_shockwave.py --seeds 5 --scale both
    python benchmarks/reproduce_shockwave.py --seeds 5 --seed-offset 100 \
        --policies shockwave,shockwave-upstream
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import fairalloc as fa
from fairalloc.sim import compare, make_policy, poisson_workload, read_trace
from fairalloc.sim.policies import GavelPolicy, ShockwavePolicy
from fairalloc.sim.simulator import Simulator

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "shockwave"

#: upstream reference results (README of the data folder: every result file of upstream's
#: tacc_32gpus runs), keyed by the row of this benchmark that runs the same policy: makespan s,
#: avg JCT s, worst rho, unfair fraction
REFERENCE = {
    "shockwave": (24197.0, 9958.0, 1.78, 0.050),
    "themis": (31929.0, 11302.0, 3.44, 0.225),
    "ossp": (24205.0, 19807.0, 7.74, 0.742),
    "gavel": (33208.0, 11274.0, 2.95, 0.250),
    "allox": (32489.0, 9926.0, 4.96, 0.275),
    "mst": (31909.0, 9655.0, 4.98, 0.250),
    "gandiva_fair": (32367.0, 12574.0, 1.85, 0.517),
}
#: upstream's result files (its names) -> the reference row above; the two older Shockwave
#: configurations have no row here
PUBLISHED = {
    "shockwave": "shockwave", "old_shockwave": (23749.0, 10056.0, 1.64, 0.050),
    "new_orig_hyperparam_shockwave": (24418.0, 9963.0, 2.00, 0.042),
    "min_total_duration (OSSP)": "ossp", "finish_time_fairness (Themis)": "themis",
    "max_min_fairness (Gavel)": "gavel", "allox": "allox",
    "max_sum_throughput_perf (MST)": "mst", "gandiva_fair": "gandiva_fair",
}

#: rows compared with another row's upstream numbers
REFERENCE_ROW = {"shockwave-upstream": "shockwave", "shockwave-upstream-oracle": "shockwave",
                 "shockwave-upstream-dirichlet": "shockwave",
                 "shockwave-upstream-hparams": "shockwave", "shockwave-paper": "shockwave",
                 "shockwave-scale-free": "shockwave", "shockwave-no-hard-ftf": "shockwave",
                 "shockwave-max-remaining": "shockwave", "shockwave-empirical": "shockwave",
                 "shockwave-empirical-lam16": "shockwave",
                 "shockwave-previous": "shockwave", "gavel-upstream": "gavel",
                 "themis-upstream": "themis", "mst-upstream": "mst",
                 "allox-upstream": "allox", "ossp-upstream": "ossp",
                 "gandiva_fair-upstream": "gandiva_fair"}

#: the row labels of the printed tables (honest names: what each row runs)
LABELS = {
    "shockwave": "Shockwave (fairalloc defaults)",
    "shockwave-upstream": "Shockwave (preset='upstream', observed forecast)",
    "shockwave-upstream-oracle": "Shockwave (preset='upstream', oracle forecast)",
    "shockwave-upstream-dirichlet": "Shockwave (preset='upstream', upstream's Dirichlet)",
    "shockwave-paper": "Shockwave (Eq. 11, §6.1 k=5, lam=1e-3)",
    "shockwave-upstream-hparams": "Shockwave (upstream hyper-parameters only)",
    "shockwave-max-remaining": "Shockwave (defaults, upstream's 1e-3 max_j R_j term)",
    "shockwave-scale-free": "Shockwave (previous defaults: 32 H/(M Z0), no hard FTF)",
    "shockwave-no-hard-ftf": "Shockwave (defaults without hard FTF first)",
    "shockwave-empirical": "Shockwave (defaults, forecast='empirical')",
    "shockwave-empirical-lam16": "Shockwave (defaults, forecast='empirical', lam=16)",
    "shockwave-previous": "Shockwave (previous defaults: ftf_forecast=None, rhomax=1.5)",
    "themis": "Themis (artifact: Gavel FTF program)",
    "themis-auction": "Themis (paper: leases, auction)",
    "gavel": "Gavel max-min fairness",
    "gavel-upstream": "Gavel max-min (upstream: one LP, Clarabel, up. rounds)",
    "themis-upstream": "Themis (upstream: summed t_iso, Clarabel, up. rounds)",
    "allox": "AlloX (re-matched every round; not upstream's variant)",
    "allox-upstream": "AlloX (upstream: alpha 0.2, kept GPUs, upstream rounds)",
    "ossp": "OSSP (min makespan)",
    "ossp-upstream": "OSSP (upstream: bisection, Clarabel, upstream rounds)",
    "mst": "MST (Gavel max sum throughput)",
    "mst-upstream": "MST (upstream: raw steps/s sum, Clarabel, up. rounds)",
    "gandiva_fair": "Gandiva-fair (stride scheduling)",
    "gandiva_fair-upstream": "Gandiva-fair (upstream: shares M/n, upstream rounds)",
}

#: the paper's 256-GPU aggregates (no upstream result files): Shockwave's makespan is
#: 1.26-1.37x better than the fair baselines, 5-9 % worse than OSSP, worst rho ~1.32, ~4 % unfair
PAPER_900 = {"speedup_over_fair": (1.26, 1.37), "vs_ossp": (1.05, 1.09), "worst_rho": 1.32,
             "unfair": 0.04}

#: (jobs, GPUs, trace file, throughput table) of each scale
SCALES = {120: (120, 32, "trace_120jobs.tsv", "tacc_throughputs.json"),
          900: (900, 256, "trace_900jobs.tsv", "wisr_throughputs.json")}
#: arrivals per hour of the generated workloads: those of the traces (120 jobs in 5011 s,
#: 900 jobs in 4400 s)
SEED_RATES = {120: 86.0, 900: 736.0}
ROUND, RESTART, UNFAIR = 120.0, 20.0, 1.05
#: rows simulated with the artifact's own round mechanics (``Simulator(...,
#: mechanics="upstream")``: whole steps, batch sizes changed at round ends with epochs rounded
#: up, its restart-overhead rule) on the traces; ``--event-mechanics`` runs them event-accurately
#: like every other row, and the generated workloads (``--seeds``) always do
UPSTREAM_MECHANICS_ROWS = frozenset({
    "shockwave-upstream", "shockwave-upstream-oracle", "shockwave-upstream-dirichlet",
    "gavel-upstream", "themis-upstream", "allox-upstream", "ossp-upstream", "mst-upstream",
    "gandiva_fair-upstream"})


def policies(all_: bool, only: list[str] | None = None) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [
        ("shockwave", ShockwavePolicy()),
        ("shockwave-upstream", ShockwavePolicy(preset="upstream")),
        ("shockwave-upstream-oracle", ShockwavePolicy(preset="upstream", forecast="oracle")),
        ("shockwave-upstream-dirichlet", ShockwavePolicy(preset="upstream",
                                                         forecast="upstream_dirichlet")),
        ("shockwave-scale-free", ShockwavePolicy(makespan="scale_free", lam=32.0,
                                                 hard_ftf=False)),
        ("shockwave-no-hard-ftf", ShockwavePolicy(hard_ftf=False)),
        ("shockwave-paper", ShockwavePolicy(k=5.0, lam=1e-3, weights="power",
                                            near_completion="off", makespan="paper",
                                            hard_ftf=False)),
        ("shockwave-upstream-hparams", ShockwavePolicy(k=12.0, lam=1e-3, weights="power",
                                                       near_completion="off",
                                                       makespan="max_remaining",
                                                       time_limit=15.0, hard_ftf=False)),
        ("shockwave-max-remaining", ShockwavePolicy(makespan="max_remaining", lam=1e-3)),
        ("shockwave-empirical", ShockwavePolicy(forecast="empirical")),
        ("shockwave-empirical-lam16", ShockwavePolicy(forecast="empirical", lam=16.0)),
        ("shockwave-previous", ShockwavePolicy(ftf_forecast=None, rhomax=1.5)),
        ("themis", make_policy("themis_ftf")),
        ("themis-auction", make_policy("themis")),
        ("gavel", make_policy("max_min_fairness")),
        # upstream's Gavel programs stop at the max-min (min-max) level: no work-conserving
        # second stage; its Themis counts isolated time of the work done
        # (formulations/shockwave_options.md, "Baselines"); each keeps the point its
        # interior-point solver returns (ECOS, Gurobi's barrier) inside a face of optimal
        # points: solver="CLARABEL" (docs/how-to/reproduce-shockwave.md)
        ("gavel-upstream", GavelPolicy("max_min_fairness", work_conserving=False,
                                       rounds="upstream", solver="CLARABEL")),
        ("themis-upstream", GavelPolicy("finish_time_fairness", work_conserving=False,
                                        isolated_time="cumulative", rounds="upstream",
                                        solver="CLARABEL")),
        ("allox", make_policy("allox")),
        ("allox-upstream", make_policy("allox_upstream")),
        ("ossp", make_policy("min_makespan")),
        ("ossp-upstream", make_policy("ossp_upstream")),
        ("mst", make_policy("mst")),
        ("mst-upstream", GavelPolicy("max_total_throughput", normalized=False,
                                     work_conserving=False, rounds="upstream",
                                     solver="CLARABEL")),
        ("gandiva_fair", make_policy("gandiva_fair")),
        ("gandiva_fair-upstream", make_policy("gandiva_fair_upstream")),
    ]
    if all_:
        out += [(n, make_policy(n)) for n in ("efq", "las", "fifo")]
    if only:
        unknown = sorted(set(only) - {n for n, _ in out})
        if unknown:
            raise SystemExit(f"unknown policies {unknown}; known: {[n for n, _ in out]}")
        out = [(n, p) for n, p in out if n in only]
    return out


def simulate_all(w: Any, gpus: int, all_: bool, only: list[str] | None,
                 quiet: bool = False, upstream_mechanics: bool = False
                 ) -> tuple[dict[str, Any], dict[str, float]]:
    cluster = fa.Cluster({"v100": gpus})
    results, seconds = {}, {}
    for name, pol in policies(all_, only):
        t0 = time.perf_counter()
        mechanics = ("upstream" if upstream_mechanics and name in UPSTREAM_MECHANICS_ROWS
                     else "event")
        sim = Simulator(w, cluster, pol, round_duration=ROUND, restart_overhead=RESTART,
                        mechanics=mechanics)
        results[name] = sim.run()
        seconds[name] = time.perf_counter() - t0
        if not quiet:
            print(f"  {name:28s} simulated in {seconds[name]:6.1f} s", file=sys.stderr)
    return results, seconds


def print_published() -> None:
    """Upstream's published rows (its result files for this trace), as published."""
    print("upstream's published results (scheduler/reproduce/pickles/tacc_32gpus/)")
    print(f"{'upstream result file':56s} {'makespan (s)':>12s} {'avg JCT (s)':>12s} "
          f"{'worst rho':>10s} {'unfair %':>9s}")
    for name, ref in PUBLISHED.items():
        m, j, r, u = REFERENCE[ref] if isinstance(ref, str) else ref
        print(f"{name:56s} {m:12.0f} {j:12.0f} {r:10.2f} {100 * u:9.1f}")
    print()


def print_trace_table(table: Any, seconds: dict[str, float], with_ref: bool) -> None:
    head = (f"{'policy':56s} {'makespan (s)':>22s} {'avg JCT (s)':>20s} {'worst rho':>16s} "
            f"{'unfair %':>16s} {'util':>6s} {'preempt':>8s} {'sim s':>7s}")
    print(head)
    if with_ref:
        print(f"{'':56s} {'ours / upstream':>22s} {'ours / upstream':>20s} "
              f"{'ours / upstream':>16s} {'ours / upstream':>16s}")
    print("-" * len(head))
    for name, row in table.iterrows():
        ref = REFERENCE.get(REFERENCE_ROW.get(str(name), str(name))) if with_ref else None

        def cell(v: float, r: float | None, fmt: str, width: int) -> str:
            if not with_ref:
                return format(v, fmt).rjust(width)
            rs = "n/a" if r is None else format(r, fmt)
            return f"{format(v, fmt)} / {rs}".rjust(width)

        print(f"{LABELS.get(str(name), str(name)):56s} "
              f"{cell(row['makespan'], ref and ref[0], '.0f', 22)} "
              f"{cell(row['avg_jct'], ref and ref[1], '.0f', 20)} "
              f"{cell(row['worst_rho'], ref and ref[2], '.2f', 16)} "
              f"{cell(100 * row['unfair_fraction'], ref and 100 * ref[3], '.1f', 16)} "
              f"{row['utilization']:6.3f} {int(row['preemptions']):8d} "
              f"{seconds.get(str(name), float('nan')):7.1f}")


def print_900_ratios(table: Any) -> None:
    if "shockwave" not in table.index:
        return
    sw = float(table.loc["shockwave", "makespan"])
    lo, hi = PAPER_900["speedup_over_fair"]
    print(f"\nmakespan of each policy / Shockwave's (paper: fair baselines {lo}-{hi}x; "
          f"OSSP {1 / PAPER_900['vs_ossp'][1]:.2f}-{1 / PAPER_900['vs_ossp'][0]:.2f}x)")
    for name in table.index:
        if name != "shockwave":
            print(f"  {LABELS.get(str(name), str(name)):56s} "
                  f"{float(table.loc[name, 'makespan']) / sw:6.3f}")
    print(f"paper: worst rho ~{PAPER_900['worst_rho']}, ~{100 * PAPER_900['unfair']:.0f} % "
          "unfair")


def run_trace(args: argparse.Namespace, scale: int) -> int:
    n, gpus, trace_name, table_name = SCALES[scale]
    trace = args.data / trace_name
    if not trace.exists():
        print(f"no trace at {trace}: nothing to reproduce (the data folder is optional)")
        return 0
    w = read_trace(trace, throughputs=args.data / table_name, types=["v100"])
    modes = ", ".join(f"{m}: {w.mode.count(m)}" for m in ("static", "accordion", "gns"))
    print(f"{w.n} jobs ({modes}) on {gpus} V100s, throughputs {table_name}; rounds of "
          f"{ROUND:.0f} s, restart overhead {RESTART:.0f} s\n")
    results, seconds = simulate_all(w, gpus, args.all, args.policies,
                                    upstream_mechanics=not args.event_mechanics)
    table = compare(results, unfair_threshold=UNFAIR)
    if scale == 120:
        print_published()
    print_trace_table(table, seconds, with_ref=scale == 120)
    if scale == 900:
        print_900_ratios(table)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table.assign(sim_seconds=[seconds[str(k)] for k in table.index]).to_csv(
            args.out / f"summary_{scale}.csv")
        try:
            from fairalloc.sim.plots import save_plots

            save_plots(results, args.out, unfair_threshold=UNFAIR)
        except ImportError:
            pass
    return 0


def run_seeds(args: argparse.Namespace) -> int:
    scales = [120, 900] if args.scale == "both" else [int(args.scale)]
    seeds = list(range(args.seed_offset, args.seed_offset + args.seeds))
    for scale in scales:
        n, gpus, _, _ = SCALES[scale]
        rows: dict[str, list[Any]] = {}
        cpu0 = time.process_time()
        span = f"{seeds[0]}..{seeds[-1]}" if seeds else "(none)"
        print(f"\n{n} generated jobs on {gpus} V100s, seeds {span} "
              f"(poisson_workload, {SEED_RATES[scale]:.0f} arrivals/h, builtin throughputs)")
        print(f"{'seed':>5s} {'policy':28s} {'makespan (s)':>12s} {'avg JCT (s)':>12s} "
              f"{'worst rho':>10s} {'unfair %':>9s} {'sim s':>7s}")
        for seed in seeds:
            w = poisson_workload(n, rate=SEED_RATES[scale], seed=seed)
            results, seconds = simulate_all(w, gpus, args.all, args.policies, quiet=True)
            table = compare(results, unfair_threshold=UNFAIR)
            for name, row in table.iterrows():
                vals = (row["makespan"], row["avg_jct"], row["worst_rho"],
                        100 * row["unfair_fraction"], seconds[str(name)])
                rows.setdefault(str(name), []).append(vals)
                print(f"{seed:5d} {str(name):28s} {vals[0]:12.0f} {vals[1]:12.0f} "
                      f"{vals[2]:10.2f} {vals[3]:9.1f} {vals[4]:7.1f}", flush=True)
        print(f"\nmean +- std over {len(seeds)} seeds (population std); CPU "
              f"{time.process_time() - cpu0:.0f} s")
        print(f"{'policy':56s} {'makespan (s)':>18s} {'avg JCT (s)':>18s} {'worst rho':>14s} "
              f"{'unfair %':>12s} {'sim s':>7s}")
        means = {}
        for name, vals in rows.items():
            a = np.asarray(vals)
            mean, std = a.mean(axis=0), a.std(axis=0)
            means[name] = mean
            print(f"{LABELS.get(name, name):56s} {mean[0]:9.0f} +- {std[0]:5.0f} "
                  f"{mean[1]:9.0f} +- {std[1]:5.0f} {mean[2]:6.2f} +- {std[2]:4.2f} "
                  f"{mean[3]:5.1f} +- {std[3]:4.1f} {mean[4]:7.1f}")
        if "shockwave" in means and "shockwave-upstream" in means:
            d, u = means["shockwave"], means["shockwave-upstream"]
            print(f"defaults vs upstream preset (mean): makespan {100 * (d[0] / u[0] - 1):+.1f} %, "
                  f"JCT {100 * (d[1] / u[1] - 1):+.1f} %, worst rho {d[2] - u[2]:+.2f}, "
                  f"unfair {d[3] - u[3]:+.1f} points")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--all", action="store_true", help="also MST, Gandiva-fair, EFQ, LAS, FIFO")
    ap.add_argument("--out", type=Path, default=None, help="write summary.csv and plots here")
    ap.add_argument("--trace900", action="store_true",
                    help="the 900-job trace on 256 GPUs (wisr_throughputs.json)")
    ap.add_argument("--seeds", type=int, default=0,
                    help="run this many generated workloads instead of a trace")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="first seed of --seeds (seeds 0-2 chose the defaults: report others)")
    ap.add_argument("--scale", choices=("120", "900", "both"), default="120",
                    help="scale of the generated workloads (--seeds)")
    ap.add_argument("--policies", type=lambda s: s.split(","), default=None,
                    help="comma-separated row names to run (default: all)")
    ap.add_argument("--event-mechanics", action="store_true",
                    help="simulate the -upstream rows of a trace event-accurately too, not "
                         "with the artifact's round mechanics")
    args = ap.parse_args(argv)
    if args.seeds > 0:
        return run_seeds(args)
    return run_trace(args, 900 if args.trace900 else 120)


if __name__ == "__main__":
    raise SystemExit(main())
