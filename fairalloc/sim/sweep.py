"""Parameter sweeps: policies x seeds x loads x hyper-parameters, in parallel.

A sweep is a list of [`SweepTask`][fairalloc.sim.sweep.SweepTask] objects, each a complete,
picklable description of one simulation (the workload is *described*, not passed: a generated
workload by its size, load and seed, or a trace by its path), run by
[`run_task`][fairalloc.sim.sweep.run_task] wherever it lands. Tasks run

* sequentially (``workers=1``),
* on local processes (``workers=N``, default: the machine's cores), or
* on a Ray cluster (``ray_address=...``; ``pip install 'fairalloc[ray]'``),

and the result rows come back in task order. A task's outcome depends only on its fields (the
simulator and every policy are deterministic for a seed), so all three give identical tables.

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

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .._validation import as_option, as_positive_float, as_positive_int
from ..errors import InputError
from ..results import require_pandas
from .generator import ARRIVAL_RATE, poisson_workload
from .metrics import CONTENTION

__all__ = ["SweepTask", "run_sweep", "run_task", "sweep", "sweep_tasks"]


@dataclass(frozen=True)
class SweepTask:
    """One simulation of a sweep (picklable; everything needed to rebuild it).

    Attributes
    ----------
    policy : str
        Registered policy name ([`fairalloc.sim.make_policy`][fairalloc.sim.make_policy]).
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
    """

    policy: str
    params: tuple[tuple[str, Any], ...]
    seed: int
    load: float | None
    workload: tuple[tuple[str, Any], ...]
    cluster: tuple[tuple[str, int], ...]
    round_duration: float = 360.0
    restart_overhead: float = 0.0
    contention_kind: str = "static"
    unfair_threshold: float = 1.0
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


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


def run_task(task: SweepTask) -> dict[str, Any]:
    """Run one task; return its row: the task's fields and
    [`summarize`][fairalloc.sim.summarize]."""
    from ..data import Cluster
    from .metrics import summarize
    from .policies import make_policy
    from .simulator import Simulator

    w = _workload(task)
    cluster = Cluster(dict(task.cluster))
    policy = make_policy(task.policy, dict(task.params))
    r = Simulator(w, cluster, policy, round_duration=task.round_duration,
                  restart_overhead=task.restart_overhead, seed=task.seed).run()
    row: dict[str, Any] = {"index": task.index, "policy": task.policy, "seed": task.seed,
                           "load": task.load, "jobs": w.n}
    row.update({f"param.{k}": v for k, v in task.params})
    row.update(summarize(r, contention_kind=task.contention_kind,
                         unfair_threshold=task.unfair_threshold))
    return row


def sweep_tasks(
    policies: Sequence[str],
    *,
    seeds: Sequence[int] = (0,),
    loads: Sequence[float | None] = (None,),
    params: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    num_jobs: int = 24,
    gpus: int | Mapping[str, int] = 8,
    trace: str | None = None,
    workload: Mapping[str, Any] | None = None,
    round_duration: float = 360.0,
    restart_overhead: float = 0.0,
    contention_kind: str = "static",
    unfair_threshold: float = 1.0,
) -> list[SweepTask]:
    """The cross product policies x hyper-parameter grid x loads x seeds, as tasks.

    Parameters
    ----------
    policies : sequence of str
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
        As for the simulator and [`summarize`][fairalloc.sim.summarize].
    """
    if isinstance(policies, str) or not policies:
        raise InputError("policies must be a non-empty list of policy names",
                         argument="policies")
    from .policies import available_policies

    known = available_policies()
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
        wl = (("kind", "poisson"), ("num_jobs", as_positive_int(num_jobs, "num_jobs")),
              *sorted((k, _freeze(v)) for k, v in extra.items()))
    grid = dict(params or {})
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
            for load in loads:
                for seed in seeds:
                    tasks.append(SweepTask(
                        policy=policy, params=tuple(zip(keys, combo, strict=True)), seed=seed,
                        load=load, workload=wl, cluster=tuple(cluster.items()),
                        round_duration=duration, restart_overhead=overhead,
                        contention_kind=contention_kind, unfair_threshold=unfair_threshold,
                        index=len(tasks)))
    return tasks


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


def run_sweep(tasks: Sequence[SweepTask], *, workers: int | None = None,
              ray_address: str | None = None,
              progress: Callable[[int, int], None] | None = None) -> Any:
    """Run ``tasks``; return a `pandas.DataFrame`, one row per task in task order.

    Parameters
    ----------
    tasks : sequence of SweepTask
    workers : int, optional
        Local processes (default: the machine's CPU count; ``1`` runs in this process).
    ray_address : str, optional
        Run on Ray instead: ``"auto"`` / ``"ray://host:port"`` for a cluster, ``"local"`` for
        a local Ray instance. Needs ``pip install 'fairalloc[ray]'``.
    progress : callable, optional
        Called as ``progress(done, total)`` as tasks finish.
    """
    pd = require_pandas()
    tasks = list(tasks)
    if not tasks:
        raise InputError("tasks is empty", argument="tasks")
    for i, t in enumerate(tasks):
        if not isinstance(t, SweepTask):
            raise InputError(f"tasks[{i}] is a {type(t).__name__}, not a SweepTask",
                             argument="tasks", index=(i,))
    total = len(tasks)
    rows: list[dict[str, Any]] = []
    if ray_address is not None:
        rows = _run_ray(tasks, ray_address, progress)
    else:
        nw = os.cpu_count() or 1 if workers is None else as_positive_int(workers, "workers")
        if nw == 1 or total == 1:
            for i, t in enumerate(tasks):
                rows.append(run_task(t))
                if progress is not None:
                    progress(i + 1, total)
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            with ProcessPoolExecutor(max_workers=min(nw, total),
                                     mp_context=multiprocessing.get_context(method)) as ex:
                futures = [ex.submit(run_task, t) for t in tasks]
                for done, _ in enumerate(as_completed(futures), start=1):
                    if progress is not None:
                        progress(done, total)
                rows = [f.result() for f in futures]
    rows.sort(key=lambda r: r["index"])
    return pd.DataFrame(rows).set_index("index")


def _run_ray(tasks: list[SweepTask], address: str,
             progress: Callable[[int, int], None] | None) -> list[dict[str, Any]]:
    try:
        import ray
    except ImportError as exc:
        raise ImportError("ray_address needs Ray: pip install 'fairalloc[ray]'") from exc
    if not ray.is_initialized():
        if address == "local":
            ray.init(ignore_reinit_error=True, include_dashboard=False,
                     log_to_driver=False)
        else:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    remote = ray.remote(run_task)
    pending = {remote.remote(t): i for i, t in enumerate(tasks)}
    out: list[dict[str, Any] | None] = [None] * len(tasks)
    done = 0
    waiting = list(pending)
    while waiting:
        ready, waiting = ray.wait(waiting, num_returns=1)
        for ref in ready:
            out[pending[ref]] = ray.get(ref)
            done += 1
            if progress is not None:
                progress(done, len(tasks))
    return [r for r in out if r is not None]


def sweep(policies: Sequence[str], *, workers: int | None = None,
          ray_address: str | None = None, progress: Callable[[int, int], None] | None = None,
          seeds: Sequence[int] = (0,), loads: Sequence[float | None] = (None,),
          params: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
          num_jobs: int = 24, gpus: int | Mapping[str, int] = 8, trace: str | None = None,
          workload: Mapping[str, Any] | None = None, round_duration: float = 360.0,
          restart_overhead: float = 0.0, contention_kind: str = "static",
          unfair_threshold: float = 1.0) -> Any:
    """[`sweep_tasks`][fairalloc.sim.sweep.sweep_tasks] then
    [`run_sweep`][fairalloc.sim.sweep.run_sweep] (the keyword arguments of both, with the same
    defaults)."""
    tasks = sweep_tasks(policies, seeds=seeds, loads=loads, params=params, num_jobs=num_jobs,
                        gpus=gpus, trace=trace, workload=workload,
                        round_duration=round_duration, restart_overhead=restart_overhead,
                        contention_kind=contention_kind, unfair_threshold=unfair_threshold)
    return run_sweep(tasks, workers=workers, ray_address=ray_address, progress=progress)


def task_dict(task: SweepTask) -> dict[str, Any]:
    """A task as a plain dict (for logs)."""
    return asdict(task)
