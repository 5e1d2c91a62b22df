"""``fairalloc simulate`` and ``fairalloc sweep`` (read by `fairalloc.cli` from
`COMMANDS`).

``fairalloc simulate --trace FILE --gpus 32 --policy shockwave --policy themis_ftf ...``
simulates each policy on the trace (or, without ``--trace``, on a built-in generated
workload), shows a progress bar, prints the comparison table and writes ``summary.csv``,
``jobs.csv``, ``schedule.csv`` and PNG plots into ``--out``.

``fairalloc sweep --policy fifo --policy las --seeds 0 1 2 --load 4 8 --param las.promote_knob=4,8``
runs the grid on local processes (``--workers``) or on Ray (``--ray ADDRESS``) and writes
``sweep.csv``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._tables import format_table
from .._validation import as_positive_float
from ..errors import InputError

__all__ = ["COMMANDS", "DEFAULT_POLICIES"]

#: policies ``fairalloc simulate`` compares without ``--policy``
DEFAULT_POLICIES = ("max_min_fairness", "themis", "themis_ftf", "allox", "ossp",
                    "gandiva_fair", "las", "fifo", "efq", "shockwave")
#: ``simulate`` defaults: GPUs of a homogeneous cluster
SIMULATE_GPUS = 32
#: ``simulate`` defaults: seconds per round (Shockwave's; Gavel uses 360)
SIMULATE_ROUND_DURATION = 120.0
#: ``simulate`` defaults: jobs of the generated workload
SIMULATE_JOBS = 40
#: ``simulate`` defaults: arrivals per hour of the generated workload
SIMULATE_RATE = 12.0
#: ``sweep`` defaults: jobs per generated workload
SWEEP_JOBS = 24
#: ``sweep`` defaults: GPUs of a homogeneous cluster
SWEEP_GPUS = 8
#: ``sweep`` defaults: seconds per round (Gavel's)
SWEEP_ROUND_DURATION = 360.0
#: the plain progress report prints every this many percent
PROGRESS_STEP_PERCENT = 10
#: a whole, in percent
PERCENT = 100


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_params(items: Sequence[str], grid: bool) -> dict[str, dict[str, Any]]:
    """``policy.key=value`` (``value1,value2`` for grids) -> {policy: {key: value(s)}}."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise InputError(f"--param {item!r}: expected POLICY.NAME=VALUE", argument="param")
        key, val = item.split("=", 1)
        policy, name = key.split(".", 1)
        vals = [_value(v) for v in val.split(",")] if grid else _value(val)
        out.setdefault(policy, {})[name] = vals
    return out


def _cluster(args: argparse.Namespace) -> dict[str, int]:
    if args.cluster:
        spec: dict[str, int] = {}
        for part in args.cluster.split(","):
            if "=" not in part:
                raise InputError(f"--cluster {args.cluster!r}: expected TYPE=COUNT,...",
                                 argument="cluster")
            t, c = part.split("=", 1)
            try:
                spec[t.strip()] = int(c)
            except ValueError:
                raise InputError(f"--cluster: {c!r} is not an integer",
                                 argument="cluster") from None
        return spec
    return {args.gpu_type: int(args.gpus)}


class _Progress:
    """A progress bar: rich if installed, else tqdm, else plain lines on stderr."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.kind = "plain"
        self._bar: Any = None
        if not self.enabled:
            return
        try:
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._bar.start()
            self.kind = "rich"
        except ImportError:  # pragma: no cover - depends on optional packages
            try:
                import tqdm  # noqa: F401

                self.kind = "tqdm"
            except ImportError:
                self.kind = "plain"

    def task(self, label: str, total: int) -> Callable[[int, int], None]:
        if not self.enabled:
            return lambda done, tot: None
        if self.kind == "rich":
            tid = self._bar.add_task(label, total=total)
            return lambda done, tot: self._bar.update(tid, completed=done)
        if self.kind == "tqdm":  # pragma: no cover
            from tqdm import tqdm

            bar = tqdm(total=total, desc=label, leave=False)

            def upd(done: int, tot: int) -> None:
                bar.n = done
                bar.refresh()
                if done >= tot:
                    bar.close()
            return upd
        last = [-1]  # pragma: no cover

        def plain(done: int, tot: int) -> None:  # pragma: no cover
            pct = int(PERCENT * done / max(tot, 1))
            if pct // PROGRESS_STEP_PERCENT != last[0]:
                last[0] = pct // PROGRESS_STEP_PERCENT
                print(f"{label}: {pct}%", file=sys.stderr)
        return plain  # pragma: no cover

    def close(self) -> None:
        if self.kind == "rich" and self._bar is not None:
            self._bar.stop()


def _print_table(frame: Any) -> None:
    cols = list(frame.columns)
    rows = []
    for name, r in frame.iterrows():
        cells = [str(name)]
        for c in cols:
            v = r[c]
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        rows.append(cells)
    print(format_table([frame.index.name or "", *cols], rows))


# --------------------------------------------------------------------------------------------
# simulate
# --------------------------------------------------------------------------------------------
def _configure_simulate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", help="trace file (Shockwave .tsv format); default: a generated "
                   "workload")
    p.add_argument("--throughputs", help="throughput JSON (default: tacc_throughputs.json "
                   "next to the trace, else the built-in table)")
    p.add_argument("--limit", type=int, help="read only the first N jobs of the trace")
    p.add_argument("--gpus", type=int, default=SIMULATE_GPUS,
                   help=f"GPUs of a homogeneous cluster (default {SIMULATE_GPUS})")
    p.add_argument("--gpu-type", default="v100", help="their type (default v100)")
    p.add_argument("--cluster", help="heterogeneous cluster, e.g. v100=16,p100=16,k80=16")
    p.add_argument("--policy", action="append", dest="policies", metavar="NAME",
                   help="policy to simulate (repeat); default: " + ", ".join(DEFAULT_POLICIES))
    p.add_argument("--param", action="append", default=[], metavar="POLICY.NAME=VALUE",
                   help="policy hyper-parameter, e.g. shockwave.k=12")
    p.add_argument("--round-duration", type=float, default=SIMULATE_ROUND_DURATION,
                   help=f"seconds per round (default {SIMULATE_ROUND_DURATION:g}, Shockwave; "
                   "Gavel uses 360)")
    p.add_argument("--restart-overhead", type=float, default=0.0,
                   help="seconds a job loses when it (re)starts (default 0)")
    p.add_argument("--jobs", type=int, default=SIMULATE_JOBS,
                   help=f"generated workload: jobs ({SIMULATE_JOBS})")
    p.add_argument("--rate", type=float, default=SIMULATE_RATE,
                   help=f"generated workload: arrivals per hour ({SIMULATE_RATE:g})")
    p.add_argument("--seed", type=int, default=0, help="workload and policy seed")
    p.add_argument("--contention", choices=("static", "dynamic"), default="static",
                   help="contention factor of rho (default static N/M)")
    p.add_argument("--unfair-threshold", type=float, default=1.0,
                   help="a job is unfair when rho exceeds this (default 1.0)")
    p.add_argument("--out", default="fairalloc-sim", help="output folder (CSV, PNG)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--list-policies", action="store_true", help="list policies and exit")


def _run_simulate(args: argparse.Namespace) -> int:
    from ..data import Cluster
    from .generator import poisson_workload
    from .metrics import compare, job_metrics
    from .policies import available_policies, make_policy
    from .simulator import Simulator
    from .trace import read_trace

    if args.list_policies:
        for name, desc in available_policies().items():
            print(f"{name:22s} {desc}")
        return 0
    spec = _cluster(args)
    cluster = Cluster(spec)
    _check_round_args(args)
    if args.trace:
        w = read_trace(args.trace, throughputs=args.throughputs, types=list(spec),
                       limit=args.limit)
        source = f"trace {args.trace}"
    else:
        w = poisson_workload(args.jobs, rate=args.rate, seed=args.seed, types=list(spec),
                             max_scale_factor=int(min(spec.values())))
        source = (f"generated workload ({args.jobs} jobs, {args.rate:g}/h, "
                  f"seed {args.seed})")
    names = args.policies or list(DEFAULT_POLICIES)
    params = _parse_params(args.param, grid=False)
    unknown = [p for p in params if p not in names]
    if unknown:
        raise InputError(f"--param names policy {unknown[0]!r}, which is not simulated",
                         argument="param")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # an unusable --out fails before simulating
    print(f"fairalloc simulate: {source} on {cluster}, rounds of {args.round_duration:g} s")
    results = {}
    bar = _Progress(not args.no_progress)
    try:
        for name in names:
            policy = make_policy(name, params.get(name, {}))
            sim = Simulator(w, cluster, policy, round_duration=args.round_duration,
                            restart_overhead=args.restart_overhead, seed=args.seed)
            results[name] = sim.run(bar.task(name, w.n))
    finally:
        bar.close()
    table = compare(results, contention_kind=args.contention,
                    unfair_threshold=args.unfair_threshold)
    print()
    _print_table(table[["makespan", "avg_jct", "p99_jct", "worst_rho", "unfair_fraction",
                        "utilization", "preemptions", "policy_seconds"]])
    table.to_csv(out / "summary.csv")
    import pandas as pd

    pd.concat({n: job_metrics(r, contention_kind=args.contention)
               for n, r in results.items()}, names=["policy"]).to_csv(out / "jobs.csv")
    pd.concat({n: r.schedule_frame() for n, r in results.items()},
              names=["policy", "row"]).to_csv(out / "schedule.csv")
    written = [out / "summary.csv", out / "jobs.csv", out / "schedule.csv"]
    if not args.no_plots:
        try:
            from .plots import save_plots

            written += save_plots(results, out, contention_kind=args.contention,
                                  unfair_threshold=args.unfair_threshold)
        except ImportError as exc:  # pragma: no cover - matplotlib missing
            print(f"(no plots: {exc})", file=sys.stderr)
    print(f"\nwrote {', '.join(str(p) for p in written)}")
    return 0


# --------------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------------
def _configure_sweep(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", action="append", dest="policies", metavar="NAME",
                   required=True, help="policy to sweep (repeat)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds (default 0)")
    p.add_argument("--load", type=float, nargs="+", default=None,
                   help="arrival rates in jobs/hour (generated workloads)")
    p.add_argument("--param", action="append", default=[],
                   metavar="POLICY.NAME=V1,V2", help="hyper-parameter grid, e.g. "
                   "shockwave.k=1,5,12")
    p.add_argument("--jobs", type=int, default=SWEEP_JOBS,
                   help=f"jobs per generated workload ({SWEEP_JOBS})")
    p.add_argument("--trace", help="trace file instead of generated workloads")
    p.add_argument("--gpus", type=int, default=SWEEP_GPUS,
                   help=f"GPUs (homogeneous, default {SWEEP_GPUS})")
    p.add_argument("--gpu-type", default="v100")
    p.add_argument("--cluster", help="heterogeneous cluster, e.g. v100=4,k80=4")
    p.add_argument("--round-duration", type=float, default=SWEEP_ROUND_DURATION)
    p.add_argument("--restart-overhead", type=float, default=0.0)
    p.add_argument("--workers", type=int, default=None,
                   help="local processes (default: CPU count)")
    p.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="run on a Ray cluster ('auto', 'ray://host:port', or 'local')")
    p.add_argument("--out", default="fairalloc-sweep", help="output folder")
    p.add_argument("--no-progress", action="store_true")


def _check_round_args(args: argparse.Namespace) -> None:
    """Validate the round options before anything is printed or simulated."""
    d = as_positive_float(args.round_duration, "--round-duration")
    o = as_positive_float(args.restart_overhead, "--restart-overhead", allow_zero=True)
    if o >= d:
        raise InputError("--restart-overhead must be shorter than --round-duration",
                         argument="--restart-overhead")


def _run_sweep(args: argparse.Namespace) -> int:
    from .sweep import run_sweep, sweep_tasks

    spec = _cluster(args)
    _check_round_args(args)
    tasks = sweep_tasks(args.policies, seeds=args.seeds,
                        loads=args.load if args.load else [None],
                        params=_parse_params(args.param, grid=True), num_jobs=args.jobs,
                        gpus=spec, trace=args.trace, round_duration=args.round_duration,
                        restart_overhead=args.restart_overhead)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # an unusable --out fails before simulating
    where = f"Ray at {args.ray}" if args.ray else f"{args.workers or 'all'} local processes"
    print(f"fairalloc sweep: {len(tasks)} simulations on {where}")
    bar = _Progress(not args.no_progress)
    try:
        df = run_sweep(tasks, workers=args.workers, ray_address=args.ray,
                       progress=bar.task("sweep", len(tasks)))
    finally:
        bar.close()
    keys = [c for c in df.columns if c in ("policy", "load") or c.startswith("param.")]
    metrics = ["makespan", "avg_jct", "worst_rho", "unfair_fraction", "utilization"]
    agg = df.groupby(keys, dropna=False)[metrics].mean()
    agg.index = [" ".join(str(x) for x in (i if isinstance(i, tuple) else (i,)))
                 for i in agg.index]
    agg.index.name = "/".join(keys)
    print()
    _print_table(agg)
    df.to_csv(out / "sweep.csv")
    print(f"\nwrote {out / 'sweep.csv'} (one row per simulation; table: mean over seeds)")
    return 0


#: the subcommands of this module: (name, help, configure(parser), run(args) -> exit code)
COMMANDS = (
    ("simulate", "simulate scheduling policies on a trace or a generated workload",
     _configure_simulate, _run_simulate),
    ("sweep", "parameter sweep of policies x seeds x loads x hyper-parameters",
     _configure_sweep, _run_sweep),
)
