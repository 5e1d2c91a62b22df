"""``fairalloc simulate`` and ``fairalloc sweep`` (read by `cli` from
`COMMANDS`).

``fairalloc simulate --trace FILE --gpus 32 --policy shockwave --policy themis-ftf ...``
simulates each policy on the trace (or, without ``--trace``, on a built-in generated
workload), reports progress on stderr, prints the comparison table and writes ``summary.csv``,
``jobs.csv``, ``schedule.csv``, ``timing.csv`` and PNG plots into ``--out``. Everything but
``timing.csv`` (seconds each simulation took) is the same on any machine, however loaded: the
policies' MILPs stop at work limits (``--node-limit``), not at a clock, unless
``--time-limit`` asks for one. (``--milp-node-limit`` and ``--milp-time-limit``, the old
spellings, still work, with a deprecation note on stderr.)

``fairalloc sweep --policy fifo --policy las --seeds 0 1 2 --load 4 8 --param las.promote_knob=4,8``
runs the grid on local processes (``--workers``) or on Ray (``--ray ADDRESS``), appends every
finished simulation to ``runs.jsonl`` in ``--out`` at once (``--resume`` continues a killed
sweep) and writes ``sweep.csv`` at the end.

One rule for an ``--out`` that holds an earlier run of the same command: refused, unless
``--overwrite`` replaces it or (``sweep``) ``--resume`` continues it. Every file is written
whole (a temporary file renamed into place), and an interrupt -- Ctrl-C, which reaches the
sweep's worker processes too, or SIGTERM -- ends the command with one line on stderr: the
workers ignore SIGINT and are stopped by the sweep, so no process prints a traceback.

Both commands share one set of defaults (`DEFAULT_JOBS` jobs,
`DEFAULT_GPUS` GPUs, rounds of `DEFAULT_ROUND_DURATION` s, no MILP time limit,
each policy's own MILP node limit). Every user error -- a bad option value, an
unknown policy or parameter, an unusable ``--out`` -- is an `InputError`
whose message starts with the option's name, raised before any simulation runs.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._tables import format_table
from .._validation import as_positive_float, as_positive_int
from ..errors import InputError
from ._progress import Progress
from .sweep import (
    DEFAULT_GPUS,
    DEFAULT_JOBS,
    DEFAULT_RATE,
    DEFAULT_ROUND_DURATION,
    build_policy,
    canonical_policy,
)

__all__ = ["COMMANDS", "DEFAULT_POLICIES", "RUNS_FILE", "SIMULATE_COLUMNS", "SIMULATE_FILES",
           "SWEEP_COLUMNS", "SWEEP_FILES", "TIMING_COLUMNS"]

#: policies ``fairalloc simulate`` compares without ``--policy``
DEFAULT_POLICIES = ("max_min_fairness", "themis", "themis_ftf", "allox", "ossp",
                    "gandiva_fair", "las", "fifo", "efq", "shockwave")
#: the sweep's log in ``--out``: one JSON line per finished simulation
RUNS_FILE = "runs.jsonl"
#: the tables ``simulate`` writes into ``--out`` (an ``--out`` holding any of them is an
#: earlier simulation: refused without ``--overwrite``)
SIMULATE_FILES = ("summary.csv", "jobs.csv", "schedule.csv", "timing.csv")
#: the files ``sweep`` writes into ``--out`` (refused without ``--resume`` or ``--overwrite``)
SWEEP_FILES = (RUNS_FILE, "sweep.csv")
#: the plots ``simulate`` writes (`fairalloc.sim.plots.save_plots`), removed by ``--overwrite``
PLOT_PATTERNS = ("gantt_*.png", "utilization.png", "rho_cdf.png", "comparison.png")
#: seconds per hour (tables show times in hours)
SECONDS_PER_HOUR = 3600.0
#: a whole, in percent (tables show fractions in percent)
PERCENT = 100.0
#: most workers of one type (``--gpus``, ``--cluster``): the simulator counts workers in int64
#: and Shockwave's plans take at most this many GPUs
MAX_WORKERS = 2**31 - 1

_HOURS = ("h", SECONDS_PER_HOUR, "{:.2f}")
_PERCENT = ("%", 1.0 / PERCENT, "{:.1f}")
_RATIO = ("", 1.0, "{:.3f}")
_COUNT = ("", 1.0, "{:.0f}")
_SECONDS = ("s", 1.0, "{:.2f}")
#: summary column -> (header, (unit, divisor, format)) of the ``simulate`` table
SIMULATE_COLUMNS: dict[str, tuple[str, tuple[str, float, str]]] = {
    "makespan": ("makespan", _HOURS), "avg_jct": ("avg JCT", _HOURS),
    "p99_jct": ("p99 JCT", _HOURS), "worst_rho": ("worst rho", _RATIO),
    "unfair_fraction": ("unfair jobs", _PERCENT), "utilization": ("GPU util.", _PERCENT),
    "preemptions": ("preemptions", _COUNT), "policy_seconds": ("policy time", _SECONDS),
}
#: summary columns that measure the machine, not the schedule: ``simulate`` writes them to
#: ``timing.csv`` (with ``wall_seconds``), so that ``summary.csv`` is the same on any machine
TIMING_COLUMNS = ("policy_seconds",)
#: sweep column -> (header, (unit, divisor, format)) of the ``sweep`` table (means over seeds)
SWEEP_COLUMNS = {k: SIMULATE_COLUMNS[k] for k in
                 ("makespan", "avg_jct", "worst_rho", "unfair_fraction", "utilization")}
#: library argument names -> the option that sets them (error messages name the option)
OPTION_OF = {"num_jobs": "--jobs", "rate": "--rate", "limit": "--limit", "path": "--trace",
             "trace": "--trace", "throughputs": "--throughputs", "types": "--cluster",
             "workers": "--gpus", "capacity": "--gpus", "gpus": "--gpus",
             "cluster": "--cluster", "policies": "--policy", "policy": "--policy",
             "params": "--param", "seeds": "--seeds", "loads": "--load",
             "round_duration": "--round-duration", "restart_overhead": "--restart-overhead",
             "time_limit": "--time-limit", "node_limit": "--node-limit",
             "milp_time_limit": "--time-limit", "milp_node_limit": "--node-limit",
             "log": "--out",
             "ray_address": "--ray", "contention_kind": "--contention",
             "unfair_threshold": "--unfair-threshold"}


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_params(items: Sequence[str], grid: bool) -> dict[str, dict[str, Any]]:
    """``policy.key=value`` (``value1,value2`` for grids) -> {policy: {key: value(s)}}; policy
    and parameter names may use hyphens."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise InputError(f"--param {item!r}: expected POLICY.NAME=VALUE", argument="--param")
        key, val = item.split("=", 1)
        policy, name = key.split(".", 1)
        vals = [_value(v) for v in val.split(",")] if grid else _value(val)
        out.setdefault(canonical_policy(policy), {})[name.replace("-", "_")] = vals
    return out


def _option_error(exc: InputError, params: Mapping[str, Mapping[str, Any]] | None = None,
                  policy: str | None = None, option: str | None = None) -> InputError:
    """``exc`` with its message prefixed by the option it concerns (``option`` when given,
    else the one that sets its argument) instead of the library argument's name."""
    message = " ".join(str(exc).split())
    if message.startswith("--"):
        return exc
    arg = exc.argument or ""
    message = message.removeprefix(f"{arg}: ") if arg else message
    if option is not None:
        return InputError(f"{option}: {message}", argument=option)
    if policy is not None and params is not None and arg in params.get(policy, {}):
        value = params[policy][arg]
        shown = ",".join(map(str, value)) if isinstance(value, list) else value
        option = f"--param {policy}.{arg}={shown}"
    elif policy is not None:
        option = f"--policy {policy}"
    else:
        option = OPTION_OF.get(arg.split("[")[0], "") or "input"
    return InputError(f"{option}: {message}", argument=option.split()[0])


def _cluster(args: argparse.Namespace) -> dict[str, int]:
    if args.cluster:
        spec: dict[str, int] = {}
        for part in args.cluster.split(","):
            if "=" not in part:
                raise InputError(f"--cluster {args.cluster!r}: expected TYPE=COUNT,...",
                                 argument="--cluster")
            t, c = part.split("=", 1)
            t = t.strip()
            if not t:
                raise InputError(f"--cluster {args.cluster!r}: {part!r} names no type; "
                                 "expected TYPE=COUNT,...", argument="--cluster")
            if t in spec:
                raise InputError(f"--cluster {args.cluster!r}: type {t!r} is given twice "
                                 "(each type once, with its count)", argument="--cluster")
            try:
                count = int(c)
            except ValueError:
                raise InputError(f"--cluster: {c!r} is not an integer",
                                 argument="--cluster") from None
            spec[t] = _workers(count, f"--cluster {t}")
        return spec
    return {args.gpu_type: _workers(args.gpus, "--gpus")}


def _workers(value: int, option: str) -> int:
    """A worker count of the simulated cluster: a positive integer up to `MAX_WORKERS`."""
    count = as_positive_int(value, option)
    if count > MAX_WORKERS:
        raise InputError(f"{option}: {count} workers; at most {MAX_WORKERS:,} per type",
                         argument=option.split()[0])
    return count


#: deprecated option -> its one spelling (kept with a note on stderr and a DeprecationWarning)
RENAMED_OPTIONS = {"--milp-time-limit": "--time-limit", "--milp-node-limit": "--node-limit"}


def _renamed_options(args: argparse.Namespace) -> None:
    """Move each deprecated option's value to its new one; both given is an error."""
    for old, new in RENAMED_OPTIONS.items():
        old_dest, new_dest = old[2:].replace("-", "_"), new[2:].replace("-", "_")
        value = getattr(args, old_dest, None)
        if value is None:
            continue
        if getattr(args, new_dest) is not None:
            raise InputError(f"{old}: give {new}, not both {new} and its deprecated spelling "
                             f"{old}", argument=old)
        message = f"{old} is deprecated, use {new} (same meaning)"
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        print(f"note: {message}", file=sys.stderr, flush=True)
        setattr(args, new_dest, value)
        setattr(args, old_dest, None)


def _check_common(args: argparse.Namespace) -> None:
    """Validate the options both commands share, naming each; before anything runs."""
    _renamed_options(args)
    as_positive_int(args.jobs, "--jobs")
    d = as_positive_float(args.round_duration, "--round-duration")
    o = as_positive_float(args.restart_overhead, "--restart-overhead", allow_zero=True)
    if o >= d:
        raise InputError("--restart-overhead must be shorter than --round-duration",
                         argument="--restart-overhead")
    if args.time_limit is not None:
        as_positive_float(args.time_limit, "--time-limit", allow_zero=True)
    if args.node_limit is not None:
        as_positive_int(args.node_limit, "--node-limit")
    if getattr(args, "limit", None) is not None:
        as_positive_int(args.limit, "--limit")
    as_positive_float(args.unfair_threshold, "--unfair-threshold")


def _time_limit(args: argparse.Namespace) -> float | None:
    return None if not args.time_limit else float(args.time_limit)


def _limits(args: argparse.Namespace) -> tuple[float | None, int | None]:
    """``(time_limit, node_limit)`` of `build_policy` from the options."""
    return _time_limit(args), args.node_limit


def _out_folder(text: str, command: str, holds: Sequence[str], *, overwrite: bool,
                resume: bool = False) -> Path:
    """Create ``--out`` (or check it) before anything runs; errors name ``--out``.

    The rule for an ``--out`` that already holds ``command``'s outputs (any of ``holds``),
    the same for every command: it is refused unless ``--overwrite`` replaces them or
    (``sweep``) ``--resume`` continues them.
    """
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {text}: exists and is not a folder", argument="--out")
    found = [name for name in holds if (out / name).exists()]
    if found and not (overwrite or resume):
        how = "--resume to continue it, --overwrite to replace it" if command == "sweep" \
            else "--overwrite to replace it"
        raise InputError(f"--out {text}: holds an earlier {command} ({', '.join(found)}); "
                         f"add {how}, or choose another --out", argument="--out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".fairalloc-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"--out {text}: cannot write there ({exc.strerror or exc})",
                         argument="--out") from None
    return out


def _drop_if_empty(out: Path, fresh: bool) -> None:
    """Remove ``out`` if this command created it (``fresh``) and it is still empty."""
    if fresh:
        try:
            out.rmdir()
        except OSError:  # not empty (or gone): leave it
            pass


def _write_atomic(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` then rename ``tmp`` to ``path``: an interrupt leaves the old file or
    the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _add_common(p: argparse.ArgumentParser, out: str) -> None:
    from .policies.shockwave import PLAN_NODE_LIMIT
    from .policies.themis import AUCTION_NODE_LIMIT

    p.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                   help=f"jobs per generated workload (default {DEFAULT_JOBS})")
    p.add_argument("--trace", help="trace file (Shockwave .tsv format) instead of a generated "
                   "workload")
    p.add_argument("--gpus", type=int, default=DEFAULT_GPUS,
                   help=f"GPUs of a homogeneous cluster (default {DEFAULT_GPUS})")
    p.add_argument("--gpu-type", default="v100", help="their type (default v100)")
    p.add_argument("--cluster", help="heterogeneous cluster, e.g. v100=16,p100=16,k80=16")
    p.add_argument("--round-duration", type=float, default=DEFAULT_ROUND_DURATION,
                   metavar="SECONDS", help=f"seconds per round (default "
                   f"{DEFAULT_ROUND_DURATION:g}, Gavel's; Shockwave's experiments use 120)")
    p.add_argument("--restart-overhead", type=float, default=0.0, metavar="SECONDS",
                   help="seconds a job loses when it (re)starts (default 0)")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="seconds per MILP a policy solves (a Shockwave re-plan, a Themis "
                   "auction), an opt-in for interactive use: the best solution found is used "
                   "when it runs out, so results then depend on the machine's speed and load "
                   "(default 0: no time limit)")
    p.add_argument("--node-limit", type=int, default=None, metavar="NODES",
                   help="branch-and-bound nodes per MILP a policy solves; a work limit, so "
                   "results are the same on any machine (default: each policy's own, "
                   f"shockwave {PLAN_NODE_LIMIT}, themis {AUCTION_NODE_LIMIT})")
    for old, new in RENAMED_OPTIONS.items():
        p.add_argument(old, type=float if "time" in old else int, default=None,
                       metavar="SECONDS" if "time" in old else "NODES",
                       help=f"deprecated spelling of {new}")
    p.add_argument("--contention", choices=("static", "dynamic"), default="static",
                   help="contention factor of rho (default static N/M)")
    p.add_argument("--unfair-threshold", type=float, default=1.0,
                   help="a job is unfair when rho exceeds this (default 1.0)")
    p.add_argument("--out", default=out, metavar="FOLDER",
                   help=f"output folder, created if missing (default ./{out}); one that "
                   "holds this command's outputs needs --overwrite"
                   + (" or --resume" if out == "fairalloc-sweep" else ""))
    p.add_argument("--no-progress", action="store_true",
                   help="no progress lines on stderr")


def _cell(value: Any, unit: tuple[str, float, str]) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "n/a" if number != number else unit[2].format(number / unit[1])


def _print_table(frame: Any, columns: Mapping[str, tuple[str, tuple[str, float, str]]],
                 label: str) -> None:
    """Print ``frame``'s ``columns`` with units in the headers and one format per column."""
    cols = [c for c in columns if c in frame.columns]
    header = [label] + [f"{columns[c][0]} ({columns[c][1][0]})" if columns[c][1][0]
                        else columns[c][0] for c in cols]
    rows = [[str(name)] + [_cell(r[c], columns[c][1]) for c in cols]
            for name, r in frame.iterrows()]
    print(format_table(header, rows))


# --------------------------------------------------------------------------------------------
# simulate
# --------------------------------------------------------------------------------------------
def _configure_simulate(p: argparse.ArgumentParser) -> None:
    p.epilog = ("Writes summary.csv (one row per policy), jobs.csv (per job), schedule.csv "
                "(every round), timing.csv (seconds each simulation took: the only output "
                "that depends on the machine) and PNG plots into --out; CSV times are in "
                "seconds, fractions in [0, 1]. Progress goes to stderr.")
    p.add_argument("--throughputs", help="throughput JSON (default: tacc_throughputs.json "
                   "next to the trace, else the built-in table)")
    p.add_argument("--limit", type=int, help="read only the first N jobs of the trace")
    p.add_argument("--policy", action="append", dest="policies", metavar="NAME",
                   help="policy to simulate (repeat; hyphens or underscores); default: "
                   + ", ".join(DEFAULT_POLICIES))
    p.add_argument("--param", action="append", default=[], metavar="POLICY.NAME=VALUE",
                   help="policy hyper-parameter, e.g. shockwave.k=12")
    p.add_argument("--rate", type=float, default=DEFAULT_RATE,
                   help=f"generated workload: arrivals per hour (default {DEFAULT_RATE:g})")
    p.add_argument("--seed", type=int, default=0, help="workload and policy seed (default 0)")
    _add_common(p, "fairalloc-sim")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the outputs of an earlier simulate in --out (without it, "
                   "such an --out is refused)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--list-policies", action="store_true", help="list policies and exit")


def _build_policies(names: Sequence[str], params: Mapping[str, Mapping[str, Any]],
                    limits: tuple[float | None, int | None]) -> dict[str, Any]:
    """Every policy with its parameters, built before any simulation runs."""
    from .policies import available_policies

    known = available_policies()
    for name in names:
        if name not in known:
            raise InputError(f"--policy {name}: unknown policy; available: "
                             f"{', '.join(known)} (hyphens allowed)", argument="--policy")
    unknown = [p for p in params if p not in names]
    if unknown:
        raise InputError(f"--param {unknown[0]}...: policy {unknown[0]!r} is not simulated "
                         f"(add --policy {unknown[0]})", argument="--param")
    out = {}
    for name in names:
        try:
            out[name] = build_policy(name, params.get(name, {}), *limits)
        except InputError as exc:
            raise _option_error(exc, params, name) from None
    return out


def _run_simulate(args: argparse.Namespace) -> int:
    from ..data import Cluster
    from .generator import poisson_workload
    from .metrics import compare, job_metrics
    from .policies import available_policies
    from .simulator import Simulator
    from .trace import read_trace

    if args.list_policies:
        for name, desc in available_policies().items():
            print(f"{name:22s} {desc}")
        return 0
    _check_common(args)
    as_positive_float(args.rate, "--rate")
    as_positive_int(args.seed, "--seed", allow_zero=True)
    spec = _cluster(args)
    names = list(dict.fromkeys(canonical_policy(n) for n in (args.policies
                                                             or DEFAULT_POLICIES)))
    params = _parse_params(args.param, grid=False)
    policies = _build_policies(names, params, _limits(args))
    table = None
    if args.throughputs is not None:
        if not args.trace:
            raise InputError("--throughputs: applies to --trace (a generated workload uses "
                             "the built-in table)", argument="--throughputs")
        from .models import ThroughputTable

        try:
            table = ThroughputTable.from_json(args.throughputs)
        except InputError as exc:
            raise _option_error(exc, option="--throughputs") from None
    try:
        cluster = Cluster(spec)
        if args.trace:
            w = read_trace(args.trace, throughputs=table, types=list(spec),
                           limit=args.limit)
            source = f"trace {args.trace} ({w.n} jobs)"
        else:
            w = poisson_workload(args.jobs, rate=args.rate, seed=args.seed, types=list(spec),
                                 max_scale_factor=int(min(spec.values())))
            source = f"generated workload ({args.jobs} jobs, {args.rate:g}/h, seed {args.seed})"
        sims = {name: Simulator(w, cluster, pol, round_duration=args.round_duration,
                                restart_overhead=args.restart_overhead, seed=args.seed)
                for name, pol in policies.items()}
    except InputError as exc:
        raise _option_error(exc) from None
    for name, pol in policies.items():  # e.g. Themis refuses a heterogeneous cluster
        try:
            pol.reset(w, cluster, round_duration=args.round_duration, seed=args.seed)
        except InputError as exc:
            raise _option_error(exc, params, name) from None
    fresh = not Path(args.out).exists()
    out = _out_folder(args.out, "simulate", SIMULATE_FILES, overwrite=args.overwrite)
    print(f"fairalloc simulate: {source} on {cluster}, rounds of {args.round_duration:g} s; "
          f"{len(names)} {'policy' if len(names) == 1 else 'policies'}; output in "
          f"{out.resolve()}/", flush=True)
    try:
        results = {}
        with Progress(not args.no_progress) as bar:
            for i, (name, sim) in enumerate(sims.items(), start=1):
                t0 = time.perf_counter()
                results[name] = sim.run(bar.task(f"[{i}/{len(sims)}] {name}"))
                limited = int(getattr(policies[name], "time_limited", 0))
                note = f"; {limited} MILPs stopped at their limit" if limited else ""
                bar.line(f"[{i}/{len(sims)}] {name}: {w.n} jobs done in "
                         f"{time.perf_counter() - t0:.1f} s{note}")
        table = compare(results, contention_kind=args.contention,
                        unfair_threshold=args.unfair_threshold)
        print()
        _print_table(table, SIMULATE_COLUMNS, "policy")
        import pandas as pd

        timing = [c for c in TIMING_COLUMNS if c in table.columns]
        times = table[timing].copy()
        times["wall_seconds"] = [float(r.wall_seconds) for r in results.values()]
        frames = {
            "summary.csv": table.drop(columns=timing),
            "jobs.csv": pd.concat({n: job_metrics(r, contention_kind=args.contention)
                                   for n, r in results.items()}, names=["policy"]),
            "schedule.csv": pd.concat({n: r.schedule_frame() for n, r in results.items()},
                                      names=["policy", "row"]),
            "timing.csv": times,
        }
        if args.overwrite:  # the earlier run's plots too (this one may draw fewer, or none)
            for pattern in PLOT_PATTERNS:
                for old in out.glob(pattern):
                    old.unlink()
        for name, frame in frames.items():
            _write_atomic(out / name, frame.to_csv)
        written = list(frames)
        if not args.no_plots:
            written += _write_plots(results, out, args)
        print(f"\nwrote {', '.join(written)} in {out.resolve()}/ (CSV times in seconds)")
    except KeyboardInterrupt:
        _drop_if_empty(out, fresh)
        raise
    return 0


def _write_plots(results: Mapping[str, Any], out: Path, args: argparse.Namespace) -> list[str]:
    """Draw the plots into a hidden folder in ``out`` and move each into place once drawn (an
    interrupt leaves no half-written PNG); return their names."""
    import shutil
    import tempfile

    from .plots import save_plots

    staging = Path(tempfile.mkdtemp(prefix=".plots-", dir=out))
    try:
        try:
            paths = save_plots(results, staging, contention_kind=args.contention,
                               unfair_threshold=args.unfair_threshold)
        except ImportError as exc:  # pragma: no cover - matplotlib missing
            print(f"(no plots: {exc})", file=sys.stderr)
            return []
        for p in paths:
            os.replace(p, out / p.name)
        return [p.name for p in paths]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------------
def _configure_sweep(p: argparse.ArgumentParser) -> None:
    p.epilog = (f"Each finished simulation is appended to {RUNS_FILE} in --out at once (a "
                f"killed sweep loses nothing finished; --resume skips the runs already "
                f"there); sweep.csv (one row per simulation, times in seconds) is written at "
                f"the end. A line per finished simulation goes to stderr.")
    p.add_argument("--policy", action="append", dest="policies", metavar="NAME",
                   required=True, help="policy to sweep (repeat; hyphens or underscores)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds (default 0)")
    p.add_argument("--load", type=float, nargs="+", default=None, metavar="RATE",
                   help=f"arrival rates in jobs/hour of generated workloads (default "
                   f"{DEFAULT_RATE:g})")
    p.add_argument("--param", action="append", default=[],
                   metavar="POLICY.NAME=V1,V2", help="hyper-parameter grid, e.g. "
                   "shockwave.k=1,5,12")
    _add_common(p, "fairalloc-sweep")
    p.add_argument("--workers", type=int, default=None,
                   help="local processes (default: CPU count)")
    p.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="run on a Ray cluster ('auto', 'ray://host:port', or 'local'); "
                   'needs pip install ".[ray]" in the fairalloc checkout')
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help=f"continue the sweep in --out: skip the simulations in {RUNS_FILE}")
    again.add_argument("--overwrite", action="store_true",
                       help="replace the sweep in --out (without --resume or --overwrite, an "
                       "--out that holds a sweep is refused)")


def _run_sweep(args: argparse.Namespace) -> int:
    import importlib.util

    from .sweep import run_sweep, sweep_tasks

    _check_common(args)
    if args.workers is not None:
        as_positive_int(args.workers, "--workers")
    if args.ray is not None and importlib.util.find_spec("ray") is None:
        raise InputError("--ray: needs Ray, which is not installed: pip install "
                         '".[ray]" in the fairalloc checkout', argument="--ray")
    if args.trace and args.load:
        raise InputError("--load applies to generated workloads, not to --trace",
                         argument="--load")
    loads = [None] if args.trace else (args.load or [DEFAULT_RATE])
    spec = _cluster(args)
    params = _parse_params(args.param, grid=True)
    names = list(dict.fromkeys(canonical_policy(n) for n in args.policies))
    for name in names:
        try:
            build_policy(name, {}, *_limits(args))
        except InputError as exc:
            raise _option_error(exc, None, name) from None
    try:
        tasks = sweep_tasks(names, seeds=args.seeds, loads=loads, params=params,
                            num_jobs=args.jobs, gpus=spec, trace=args.trace,
                            round_duration=args.round_duration,
                            restart_overhead=args.restart_overhead,
                            contention_kind=args.contention,
                            unfair_threshold=args.unfair_threshold,
                            time_limit=_time_limit(args), node_limit=args.node_limit)
    except InputError as exc:
        bad = next((n for n in names if exc.argument in params.get(n, {})), None)
        raise _option_error(exc, params, bad) from None
    fresh = not Path(args.out).exists()
    out = _out_folder(args.out, "sweep", SWEEP_FILES, overwrite=args.overwrite,
                      resume=args.resume)
    log = out / RUNS_FILE
    if args.overwrite:
        for name in SWEEP_FILES:
            (out / name).unlink(missing_ok=True)
    where = f"Ray at {args.ray}" if args.ray else f"{args.workers or 'all'} local processes"
    print(f"fairalloc sweep: {len(tasks)} simulations on {where}; each finished one is "
          f"appended to {log.resolve()}", flush=True)
    bar = Progress(not args.no_progress)
    t0 = time.perf_counter()
    counts = [0, 0]  # reused, run
    advance = bar.task("sweep", "simulations", lines=False)
    advance(0, len(tasks))

    def report(row: dict[str, Any], reused: bool) -> None:
        counts[0 if reused else 1] += 1
        advance(sum(counts), len(tasks))
        if reused:
            return
        knobs = " ".join(f"{k[len('param.'):]}={v}" for k, v in row.items()
                         if k.startswith("param."))
        load = "" if row.get("load") is None else f" load={row['load']:g}/h"
        limited = int(row.get("milp_time_limited", 0))
        note = f", {limited} MILPs at their limit" if limited else ""
        bar.line(f"[{sum(counts)}/{len(tasks)}] {row['policy']} {knobs}{load} "
                 f"seed={row['seed']}: avg JCT {row['avg_jct'] / SECONDS_PER_HOUR:.2f} h, "
                 f"worst rho {row['worst_rho']:.3f} ({time.perf_counter() - t0:.0f} s "
                 f"elapsed{note})".replace("  ", " "))

    try:  # Ctrl-C, or a SIGTERM (the fairalloc command turns it into a KeyboardInterrupt)
        with bar:
            df = run_sweep(tasks, workers=args.workers, ray_address=args.ray, log=log,
                           resume=args.resume, on_result=report)
    except KeyboardInterrupt:
        if not log.exists():
            _drop_if_empty(out, fresh)
            raise KeyboardInterrupt("stopped before any simulation finished; nothing was "
                                    "written") from None
        raise KeyboardInterrupt(f"stopped; {sum(counts)} finished simulations are in {log} "
                                f"(add --resume to continue)") from None
    if counts[0]:
        print(f"resumed: {counts[0]} simulations read from {RUNS_FILE}, {counts[1]} run now")
    keys = [c for c in df.columns if c in ("policy", "load") or c.startswith("param.")]
    agg = df.groupby(keys, dropna=False)[list(SWEEP_COLUMNS)].mean()
    agg.insert(0, "runs", df.groupby(keys, dropna=False).size())
    agg.index = [" ".join("-" if x != x else f"{x:g}" if isinstance(x, float) else str(x)
                          for x in (i if isinstance(i, tuple) else (i,))) for i in agg.index]
    label = " / ".join("load (jobs/h)" if k == "load" else k.removeprefix("param.")
                       for k in keys)
    print()
    _print_table(agg, {"runs": ("runs", ("", 1.0, "{:.0f}")), **SWEEP_COLUMNS},
                 label)
    _write_atomic(out / "sweep.csv", df.to_csv)
    print(f"\nwrote sweep.csv and {RUNS_FILE} in {out.resolve()}/ (one row per simulation, "
          f"times in seconds; the table shows means over seeds)")
    return 0


#: the subcommands of this module: (name, help, configure(parser), run(args) -> exit code)
COMMANDS = (
    ("simulate", "simulate scheduling policies on a trace or a generated workload",
     _configure_simulate, _run_simulate),
    ("sweep", "parameter sweep of policies x seeds x loads x hyper-parameters",
     _configure_sweep, _run_sweep),
)
