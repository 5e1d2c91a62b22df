"""Parameter sweeps: policies x seeds x loads x hyper-parameters, in parallel.

A sweep is a list of `fairalloc.sim.sweep.SweepTask` objects, each a complete,
picklable description of one simulation (the workload is *described*, not passed: a generated
workload by its size, load and seed, or a trace by its path), run by
`fairalloc.sim.sweep.run_task` wherever it lands. Tasks run

* sequentially (``workers=1``),
* on local processes (``workers=N``, default: the machine's cores), or
* on a Ray cluster (``ray_address=...``; ``pip install ".[ray]"`` in the checkout),

and the result rows come back in task order. A task's outcome depends only on its fields (the
simulator and every policy are deterministic for a seed; the MILPs of Shockwave's re-plans and
Themis's auctions stop at work limits, ``node_limit``, never at a clock), so all three give
identical tables on any machine. Only ``policy_seconds`` (a measurement) differs, and an explicit
``time_limit`` (an opt-in for interactive use) makes the MILPs it stops depend on the
machine's speed and load; the row's ``milp_time_limited`` counts the MILPs stopped by either
limit.

With ``log=PATH``, `fairalloc.sim.sweep.run_sweep` appends every finished simulation to
``PATH`` as one JSON line the moment it finishes (a killed sweep loses no finished simulation) and,
with ``resume=True``, reuses the rows already there instead of running those tasks again
(`task_key` identifies a task by its fields).

Examples
--------
>>> tasks = sweep_tasks(["fifo", "las"], seeds=[0, 1], loads=[6.0], num_jobs=6, gpus=4)
>>> len(tasks), tasks[0].policy, tasks[0].seed
(4, 'fifo', 0)
>>> df = run_sweep(tasks, workers=1)
>>> df[["policy", "seed", "load"]].values.tolist()[:2]
[['fifo', 0, 6.0], ['fifo', 1, 6.0]]
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._deprecate import renamed_kwargs
from .._validation import as_option, as_positive_float, as_positive_int
from ..errors import InputError
from ..results import require_pandas
from .generator import ARRIVAL_RATE, MAX_JOBS, poisson_workload
from .metrics import CONTENTION

__all__ = ["DEFAULT_GPUS", "DEFAULT_JOBS", "DEFAULT_RATE", "DEFAULT_ROUND_DURATION",
           "MILP_NODE_LIMIT", "MILP_TIME_LIMIT", "SweepTask", "build_policy", "canonical_policy",
           "read_log", "run_sweep", "run_task", "sweep", "sweep_tasks", "task_key"]

# One set of defaults for sweeps and for the ``fairalloc simulate`` / ``sweep`` commands.
#: jobs per generated workload
DEFAULT_JOBS = 40
#: GPUs of the default homogeneous cluster
DEFAULT_GPUS = 16
#: seconds per scheduling round (Gavel's; Shockwave's experiments use 120)
DEFAULT_ROUND_DURATION = 360.0
#: arrivals per hour of a generated workload
DEFAULT_RATE = 12.0
#: seconds a policy's MILP may run (a Shockwave re-plan, a Themis auction) before the best
#: solution found is used: ``None`` (no clock), because a time limit makes results depend on the
#: machine's speed and load (issue #27); a number is an opt-in for interactive use
MILP_TIME_LIMIT: float | None = None
#: branch-and-bound nodes per MILP of a policy (its ``node_limit``): ``None`` keeps each
#: policy's own default (`fairalloc.sim.policies.shockwave.PLAN_NODE_LIMIT`,
#: `fairalloc.sim.policies.themis.AUCTION_NODE_LIMIT`), a work limit like any given value
MILP_NODE_LIMIT: int | None = None
#: characters of the hexadecimal digest that names a task in a sweep log
TASK_KEY_DIGITS = 16
#: seconds between a pool worker's checks that the sweep that started it is still alive
PARENT_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class SweepTask:
    """One simulation of a sweep (picklable; everything needed to rebuild it).

    Attributes
    ----------
    policy : str
        Registered policy name (`fairalloc.sim.make_policy`).
    params : tuple of (str, value)
        Policy hyper-parameters.
    seed : int
        Workload seed (generated workloads) and policy seed.
    load : float or None
        Arrival rate in jobs per hour (generated workloads).
    workload : tuple of (str, value)
        ``("kind", "poisson")`` with ``num_jobs``, ``types``, ``mode_probs`` ..., or
        ``("kind", "trace")`` with ``path``, ``throughputs``, ``types``, ``limit``.
    cluster : tuple of (str, int)
        Accelerator type -> GPUs.
    round_duration, restart_overhead : float
    contention_kind : str
    unfair_threshold : float
    index : int
        Position in the sweep (rows are returned in this order).
    time_limit : float or None
        Seconds per MILP of a policy that solves MILPs (its ``time_limit``; ``None``: none).
        The deprecated ``milp_time_limit`` (argument and attribute) still works with a
        ``DeprecationWarning``.
    node_limit : int or None
        Nodes per MILP of such a policy (its ``node_limit``; ``None``: its default). The
        deprecated ``milp_node_limit`` likewise.
    """

    policy: str
    params: tuple[tuple[str, Any], ...]
    seed: int
    load: float | None
    workload: tuple[tuple[str, Any], ...]
    cluster: tuple[tuple[str, int], ...]
    round_duration: float = DEFAULT_ROUND_DURATION
    restart_overhead: float = 0.0
    contention_kind: str = "static"
    unfair_threshold: float = 1.0
    index: int = 0
    time_limit: float | None = MILP_TIME_LIMIT
    node_limit: int | None = MILP_NODE_LIMIT
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def milp_time_limit(self) -> float | None:
        """Deprecated spelling of `time_limit`."""
        warnings.warn("SweepTask.milp_time_limit is deprecated, use time_limit (same meaning)",
                      DeprecationWarning, stacklevel=2)
        return self.time_limit

    @property
    def milp_node_limit(self) -> int | None:
        """Deprecated spelling of `node_limit`."""
        warnings.warn("SweepTask.milp_node_limit is deprecated, use node_limit (same meaning)",
                      DeprecationWarning, stacklevel=2)
        return self.node_limit


#: the old option spellings the sweep API keeps with a DeprecationWarning
_RENAMED = {"milp_time_limit": "time_limit", "milp_node_limit": "node_limit"}
SweepTask.__init__ = renamed_kwargs(**_RENAMED)(SweepTask.__init__)  # type: ignore[method-assign]
#: `task_key` hashes the fields under the names they had when the limits were spelled
#: ``milp_*``, so that a log written before the rename still resumes
_KEY_NAMES = {new: old for old, new in _RENAMED.items()}


def _workload(task: SweepTask) -> Any:
    from .trace import read_trace

    spec = dict(task.workload)
    kind = spec.pop("kind", "poisson")
    if kind == "trace":
        return read_trace(spec.pop("path"), **spec)
    if kind != "poisson":
        raise InputError(f"workload kind {kind!r} is not 'poisson' or 'trace'",
                         argument="workload")
    rate = task.load if task.load is not None else spec.pop("rate", ARRIVAL_RATE)
    spec.pop("rate", None)
    return poisson_workload(spec.pop("num_jobs"), rate=rate, seed=task.seed, **spec)


def canonical_policy(name: str) -> str:
    """The registered name of ``name``, accepting hyphens and spaces for underscores.

    Examples
    --------
    >>> canonical_policy("max-min-fairness"), canonical_policy("fifo")
    ('max_min_fairness', 'fifo')
    """
    from .policies import available_policies

    known = available_policies()
    if not isinstance(name, str) or name in known:
        return name
    alt = name.strip().lower().replace("-", "_").replace(" ", "_")
    return alt if alt in known else name


@renamed_kwargs(**_RENAMED)
def build_policy(name: str, params: Mapping[str, Any] | None = None,
                 time_limit: float | None = MILP_TIME_LIMIT,
                 node_limit: int | None = MILP_NODE_LIMIT) -> Any:
    """`fairalloc.sim.make_policy`, with ``time_limit`` and (when given) ``node_limit``
    for a policy that takes them (its MILPs) unless ``params`` sets them. The deprecated
    ``milp_time_limit``/``milp_node_limit`` still work with a ``DeprecationWarning``.

    Examples
    --------
    >>> p = build_policy("themis", node_limit=500)
    >>> p.time_limit, p.node_limit
    (None, 500)
    """
    from .._validation import as_time_limit
    from .policies import make_policy

    limit = as_time_limit(time_limit, "time_limit")
    nodes = None if node_limit is None else as_positive_int(node_limit, "node_limit")
    given = dict(params or {})
    policy = make_policy(name, given)
    try:
        takes = inspect.signature(type(policy)).parameters
    except (TypeError, ValueError):  # pragma: no cover - a factory without a signature
        takes = {}
    limits = {}
    if "time_limit" in takes and "time_limit" not in given:
        limits["time_limit"] = limit
    if "node_limit" in takes and "node_limit" not in given and nodes is not None:
        limits["node_limit"] = nodes
    return make_policy(name, {**given, **limits}) if limits else policy


def run_task(task: SweepTask) -> dict[str, Any]:
    """Run one task; return its row: the task's fields, `fairalloc.sim.summarize` and
    ``milp_time_limited`` (the policy's MILPs stopped by their node or time limit before their
    proof)."""
    from ..data import Cluster
    from .metrics import summarize
    from .simulator import Simulator

    w = _workload(task)
    cluster = Cluster(dict(task.cluster))
    policy = build_policy(task.policy, dict(task.params), task.time_limit, task.node_limit)
    r = Simulator(w, cluster, policy, round_duration=task.round_duration,
                  restart_overhead=task.restart_overhead, seed=task.seed).run()
    row: dict[str, Any] = {"index": task.index, "policy": task.policy, "seed": task.seed,
                           "load": task.load, "jobs": w.n}
    row.update({f"param.{k}": v for k, v in task.params})
    row.update(summarize(r, contention_kind=task.contention_kind,
                         unfair_threshold=task.unfair_threshold))
    row["milp_time_limited"] = int(getattr(policy, "time_limited", 0))
    return row


def task_key(task: SweepTask) -> str:
    """A short digest of everything that determines ``task``'s outcome (not its position).

    Examples
    --------
    >>> a, b = sweep_tasks(["fifo"], seeds=[0, 1], num_jobs=4, gpus=2)
    >>> task_key(a) != task_key(b), len(task_key(a))
    (True, 16)
    """
    fields = {_KEY_NAMES.get(k, k): v for k, v in asdict(task).items()}
    fields.pop("index")
    fields.pop("extra")
    text = json.dumps(fields, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:TASK_KEY_DIGITS]


def _plain(value: Any) -> Any:
    """A JSON-friendly version of a row value (numpy scalars, tuples)."""
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def read_log(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The finished simulations of a sweep log: task key -> row (a cut-off last line, left by
    a killed sweep, is skipped)."""
    out: dict[str, dict[str, Any]] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("row"), dict):
            out[str(entry.get("key"))] = entry["row"]
    return out


class _Log:
    """Appends one JSON line per finished simulation, flushed at once; the file is created by
    the first one (a sweep that fails or is stopped before any simulation finishes leaves no
    log behind)."""

    def __init__(self, path: Path, done: Mapping[str, dict[str, Any]]) -> None:
        self._path = path
        self._fh: Any = None
        if path.exists():
            # rewrite the valid lines (a line cut off by a kill must not swallow the next
            # one) into a new file that replaces the log whole: an interrupt leaves either
            text = "".join(json.dumps({"key": key, "row": row}) + "\n"
                           for key, row in done.items())
            tmp = path.with_name(path.name + ".tmp")
            try:
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)

    def write(self, key: str, row: dict[str, Any]) -> None:
        if self._fh is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self._path.open("a", encoding="utf-8")
        self._fh.write(json.dumps({"key": key, "row": {k: _plain(v) for k, v in row.items()}})
                       + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


@renamed_kwargs(**_RENAMED)
def sweep_tasks(
    policies: Sequence[str],
    *,
    seeds: Sequence[int] = (0,),
    loads: Sequence[float | None] = (None,),
    params: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    num_jobs: int = DEFAULT_JOBS,
    gpus: int | Mapping[str, int] = DEFAULT_GPUS,
    trace: str | None = None,
    workload: Mapping[str, Any] | None = None,
    round_duration: float = DEFAULT_ROUND_DURATION,
    restart_overhead: float = 0.0,
    contention_kind: str = "static",
    unfair_threshold: float = 1.0,
    time_limit: float | None = MILP_TIME_LIMIT,
    node_limit: int | None = MILP_NODE_LIMIT,
) -> list[SweepTask]:
    """The cross product policies x hyper-parameter grid x loads x seeds, as tasks.

    Parameters
    ----------
    policies : sequence of str
        Registered policy names (hyphens accepted: ``"max-min-fairness"``).
    seeds : sequence of int
    loads : sequence of float or None
        Arrival rates (jobs/hour) of generated workloads (``None``: the generator's default or
        the trace's own arrivals).
    params : mapping, optional
        ``{policy: {parameter: [values...]}}``; every combination is a separate task.
    num_jobs : int
        Jobs per generated workload.
    gpus : int or mapping of str to int
        Cluster: ``N`` V100s, or type -> count.
    trace : str, optional
        Trace file instead of a generated workload (``loads`` must then be ``(None,)``).
    workload : mapping, optional
        Further generator / trace-reader arguments (e.g. ``mode_probs``, ``throughputs``).
    round_duration, restart_overhead, contention_kind, unfair_threshold
        As for the simulator and `fairalloc.sim.summarize`.
    time_limit : float or None, default `MILP_TIME_LIMIT`
        Seconds per MILP of the policies that solve MILPs (`build_policy`); ``None`` (the
        default): no clock. A number makes the MILPs it stops depend on the machine's speed.
        (Deprecated spelling: ``milp_time_limit``, with a ``DeprecationWarning``.)
    node_limit : int or None, default `MILP_NODE_LIMIT`
        Branch-and-bound nodes per MILP of those policies (``None``: each policy's default).
        (Deprecated spelling: ``milp_node_limit``.)

    Every policy is built once for each of its parameter combinations, and the workload (the
    trace read, or the first generated one) once, here, so that an unknown or invalid
    parameter, or an unreadable trace, is an `fairalloc.InputError` before
    anything runs.
    """
    if isinstance(policies, str) or not policies:
        raise InputError("policies must be a non-empty list of policy names",
                         argument="policies")
    from .policies import available_policies

    known = available_policies()
    policies = [canonical_policy(p) for p in policies]
    for p in policies:
        if p not in known:
            raise InputError(f"unknown policy {p!r}; available: {', '.join(known)}",
                             argument="policies")
    if isinstance(seeds, str) or not isinstance(seeds, Sequence | range):
        raise InputError(f"seeds must be a sequence of integers, got {seeds!r}",
                         argument="seeds")
    seeds = [as_positive_int(s, "seeds", allow_zero=True) for s in seeds]
    if not seeds:
        raise InputError("seeds is empty", argument="seeds")
    if isinstance(loads, str) or not isinstance(loads, Sequence):
        raise InputError(f"loads must be a sequence of arrival rates, got {loads!r}",
                         argument="loads")
    loads = [None if load is None else as_positive_float(load, "loads") for load in loads]
    loads = loads or [None]
    if isinstance(gpus, Mapping):
        if not gpus:
            raise InputError("gpus is an empty mapping", argument="gpus")
        cluster = {str(t): as_positive_int(c, f"gpus[{t!r}]") for t, c in gpus.items()}
    else:
        cluster = {"v100": as_positive_int(gpus, "gpus")}
    if trace is not None and not isinstance(trace, str | os.PathLike):
        raise InputError(f"trace must be a file path, got {trace!r}", argument="trace")
    if workload is not None and not isinstance(workload, Mapping):
        raise InputError(f"workload must be a mapping of generator / reader arguments, got "
                         f"{type(workload).__name__}", argument="workload")
    if params is not None and not isinstance(params, Mapping):
        raise InputError("params must be a mapping {policy: {parameter: [values]}}",
                         argument="params")
    for pol, g in (params or {}).items():
        if not isinstance(g, Mapping):
            raise InputError(f"params[{pol!r}] must be a mapping {{parameter: [values]}}",
                             argument="params")
        for key, vals in g.items():
            if isinstance(vals, str | bytes) or not hasattr(vals, "__iter__"):
                raise InputError(f"params[{pol!r}][{key!r}] must be a list of values, got "
                                 f"{vals!r}", argument="params")
    duration = as_positive_float(round_duration, "round_duration")
    overhead = as_positive_float(restart_overhead, "restart_overhead", allow_zero=True)
    contention_kind = as_option(contention_kind, "contention_kind", CONTENTION)
    unfair_threshold = as_positive_float(unfair_threshold, "unfair_threshold")
    extra = dict(workload or {})
    if trace is not None:
        if any(load is not None for load in loads):
            raise InputError("loads apply to generated workloads, not to a trace",
                             argument="loads")
        extra.setdefault("types", list(cluster))
        wl = (("kind", "trace"), ("path", str(trace)),
              *sorted((k, _freeze(v)) for k, v in extra.items()))
    else:
        extra.setdefault("types", list(cluster))
        extra.setdefault("max_scale_factor", min(cluster.values()))
        count = as_positive_int(num_jobs, "num_jobs", maximum=MAX_JOBS)
        wl = (("kind", "poisson"), ("num_jobs", count),
              *sorted((k, _freeze(v)) for k, v in extra.items()))
    from .._validation import as_time_limit

    limit = as_time_limit(time_limit, "time_limit")
    nodes = None if node_limit is None else as_positive_int(node_limit, "node_limit")
    grid = {canonical_policy(p): g for p, g in (params or {}).items()}
    unknown = [p for p in grid if p not in policies]
    if unknown:
        raise InputError(f"params names policy {unknown[0]!r}, which is not swept",
                         argument="params")
    tasks: list[SweepTask] = []
    for policy in policies:
        g = grid.get(policy, {})
        keys = sorted(g)
        combos = itertools.product(*(list(g[k]) for k in keys)) if keys else [()]
        for combo in combos:
            build_policy(policy, dict(zip(keys, combo, strict=True)), limit,
                         nodes)  # fail early
            for load in loads:
                for seed in seeds:
                    tasks.append(SweepTask(
                        policy=policy, params=tuple(zip(keys, combo, strict=True)), seed=seed,
                        load=load, workload=wl, cluster=tuple(cluster.items()),
                        round_duration=duration, restart_overhead=overhead,
                        contention_kind=contention_kind, unfair_threshold=unfair_threshold,
                        index=len(tasks), time_limit=limit, node_limit=nodes))
    _workload(tasks[0])  # fail early: an unreadable trace, a bad generator argument
    return tasks


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def run_sweep(tasks: Sequence[SweepTask], *, workers: int | None = None,
              ray_address: str | None = None,
              progress: Callable[[int, int], None] | None = None,
              log: str | os.PathLike[str] | None = None, resume: bool = False,
              on_result: Callable[[dict[str, Any], bool], None] | None = None) -> Any:
    """Run ``tasks``; return a `pandas.DataFrame`, one row per task in task order.

    Parameters
    ----------
    tasks : sequence of SweepTask
    workers : int, optional
        Local processes (default: the machine's CPU count; ``1`` runs in this process).
    ray_address : str, optional
        Run on Ray instead: ``"auto"`` / ``"ray://host:port"`` for a cluster, ``"local"`` for
        a local Ray instance. Needs ``pip install ".[ray]"`` (in the checkout).
    progress : callable, optional
        Called as ``progress(done, total)`` as tasks finish.
    log : path, optional
        A JSON-lines file that receives every finished simulation at once (``{"key":
        task_key(task), "row": row}``). Without ``resume`` it must not exist yet.
    resume : bool, default False
        Reuse the rows of ``log`` for the tasks it holds (`task_key`); run the others.
    on_result : callable, optional
        Called as ``on_result(row, reused)`` for every row, as it finishes or is reused.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> tasks = sweep_tasks(["fifo"], seeds=[0, 1], num_jobs=4, gpus=2)
    >>> first = run_sweep(tasks[:1], workers=1, log=log)
    >>> again = run_sweep(tasks, workers=1, log=log, resume=True)  # runs only seed 1
    >>> len(log.read_text().splitlines()), again["seed"].tolist()
    (2, [0, 1])
    """
    pd = require_pandas()
    tasks = list(tasks)
    if not tasks:
        raise InputError("tasks is empty", argument="tasks")
    for i, t in enumerate(tasks):
        if not isinstance(t, SweepTask):
            raise InputError(f"tasks[{i}] is a {type(t).__name__}, not a SweepTask",
                             argument="tasks", index=(i,))
    if not isinstance(resume, bool):
        raise InputError(f"resume must be True or False, got {resume!r}", argument="resume")
    nw = 1
    if ray_address is None:
        nw = os.cpu_count() or 1 if workers is None else as_positive_int(workers, "workers")
    elif importlib.util.find_spec("ray") is None:
        raise InputError('ray_address needs Ray: pip install ".[ray]" in the fairalloc checkout',
                         argument="ray_address")
    keys = [task_key(t) for t in tasks]
    done_rows: dict[str, dict[str, Any]] = {}
    writer: _Log | None = None
    if log is not None:
        path = Path(log)
        if path.exists() and not resume:
            raise InputError(f"log {str(path)!r} exists; resume=True continues that sweep",
                             argument="log")
        done_rows = read_log(path) if resume else {}
        writer = _Log(path, done_rows)
    total = len(tasks)
    rows: dict[int, dict[str, Any]] = {}
    for i, key in enumerate(keys):
        if key in done_rows:
            rows[i] = {**done_rows[key], "index": tasks[i].index}
            if on_result is not None:
                on_result(rows[i], True)
    if progress is not None and rows:
        progress(len(rows), total)

    def finish(i: int, row: dict[str, Any]) -> None:
        rows[i] = row
        if writer is not None:
            writer.write(keys[i], row)
        if on_result is not None:
            on_result(row, False)
        if progress is not None:
            progress(len(rows), total)

    todo = [i for i in range(total) if i not in rows]
    try:
        if todo and ray_address is not None:
            _run_ray(tasks, todo, ray_address, finish)
        elif len(todo) <= 1 or nw == 1:
            for i in todo:
                finish(i, run_task(tasks[i]))
        else:
            _run_pool(tasks, todo, nw, finish)
    finally:
        if writer is not None:
            writer.close()
    ordered = sorted(rows.values(), key=lambda r: r["index"])
    return pd.DataFrame(ordered).set_index("index")


def _worker_init(parent: int) -> None:
    """Pool initializer: leave interrupts to the sweep's process and end this worker when that
    process is gone (killed), instead of waiting forever for tasks that will never come.

    A Ctrl-C at a terminal reaches every process of the foreground group: the workers ignore
    SIGINT (the parent stops them), and SIGTERM, whose handler a forked worker would inherit
    from the ``fairalloc`` command, gets its default action back, so that a worker the parent
    terminates ends silently instead of printing a traceback.
    """
    import signal
    import threading
    import time

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _run_pool(tasks: list[SweepTask], todo: list[int], workers: int,
              finish: Callable[[int, dict[str, Any]], None]) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ex = ProcessPoolExecutor(max_workers=min(workers, len(todo)),
                             mp_context=multiprocessing.get_context(method),
                             initializer=_worker_init, initargs=(os.getpid(),))
    futures = {ex.submit(run_task, tasks[i]): i for i in todo}
    try:
        for fut in as_completed(futures):
            finish(futures[fut], fut.result())
    except BaseException:
        # a failure or an interrupt: drop the queued tasks and stop the running ones (their
        # finished siblings are already in the log)
        procs = list((getattr(ex, "_processes", None) or {}).values())
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        raise
    ex.shutdown()


def _run_ray(tasks: list[SweepTask], todo: list[int], address: str,
             finish: Callable[[int, dict[str, Any]], None]) -> None:
    import ray

    if not ray.is_initialized():
        if address == "local":
            ray.init(ignore_reinit_error=True, include_dashboard=False,
                     log_to_driver=False)
        else:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(run_task)
    pending = {remote.remote(tasks[i]): i for i in todo}
    waiting = list(pending)
    while waiting:
        ready, waiting = ray.wait(waiting, num_returns=1)
        for ref in ready:
            finish(pending[ref], ray.get(ref))


@renamed_kwargs(**_RENAMED)
def sweep(policies: Sequence[str], *, workers: int | None = None,
          ray_address: str | None = None, progress: Callable[[int, int], None] | None = None,
          seeds: Sequence[int] = (0,), loads: Sequence[float | None] = (None,),
          params: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
          num_jobs: int = DEFAULT_JOBS, gpus: int | Mapping[str, int] = DEFAULT_GPUS,
          trace: str | None = None, workload: Mapping[str, Any] | None = None,
          round_duration: float = DEFAULT_ROUND_DURATION, restart_overhead: float = 0.0,
          contention_kind: str = "static", unfair_threshold: float = 1.0,
          time_limit: float | None = MILP_TIME_LIMIT,
          node_limit: int | None = MILP_NODE_LIMIT,
          log: str | os.PathLike[str] | None = None, resume: bool = False) -> Any:
    """`fairalloc.sim.sweep.sweep_tasks` then
    `fairalloc.sim.sweep.run_sweep` (the keyword arguments of both, with the same
    defaults)."""
    tasks = sweep_tasks(policies, seeds=seeds, loads=loads, params=params, num_jobs=num_jobs,
                        gpus=gpus, trace=trace, workload=workload,
                        round_duration=round_duration, restart_overhead=restart_overhead,
                        contention_kind=contention_kind, unfair_threshold=unfair_threshold,
                        time_limit=time_limit, node_limit=node_limit)
    return run_sweep(tasks, workers=workers, ray_address=ray_address, progress=progress,
                     log=log, resume=resume)


def task_dict(task: SweepTask) -> dict[str, Any]:
    """A task as a plain dict (for logs)."""
    return asdict(task)
