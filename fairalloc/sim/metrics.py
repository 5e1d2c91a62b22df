"""The outcome of a simulation and its metrics (Shockwave §8.2, Gavel §7.1, Themis §2, Ares §5).

`fairalloc.sim.SimulationResult` holds what the simulator recorded (per job and
per round); the functions below compute the metrics from it:

* **makespan** -- last finish minus first arrival;
* **JCT** -- ``finish - arrival`` per job; average and 99th percentile;
* **finish-time fairness** ``rho_j = JCT_j / (T_iso_j * c_j)`` (Themis Eq. 1, as evaluated by
  Shockwave): ``T_iso`` is the job's run time alone on the cluster with its gang (its whole
  batch-size schedule, on its fastest type) and ``c_j`` the contention it faced:
  ``contention="static"`` uses one factor for every job, ``max(1, N / M)`` with ``N`` the jobs
  in the workload and ``M`` the GPUs (the Shockwave artifact's evaluation);
  ``contention="dynamic"`` uses ``N_avg(j) = max(1, mean over [arrival_j, finish_j] of
  active jobs / M)`` (Shockwave App. G.2's contention factor, measured after the fact);
* **worst rho**, **unfair fraction** -- the largest ``rho`` and the share of jobs with
  ``rho > unfair_threshold`` (the paper counts ``rho > 1``; the artifact ``rho > 1.05``);
* **utilization** -- GPU-seconds held by jobs over ``M * makespan``;
* **preemptions** -- rounds in which a running, unfinished job was stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._display import Table, View, fmt, labelled, line_plot, to_html
from .._validation import as_option, as_positive_float
from ..data import Cluster
from ..errors import InputError
from ..results import FrozenArrays, readonly, require_pandas
from .workload import Workload

__all__ = ["SimulationResult", "compare", "contention", "finish_time_fairness", "job_metrics",
           "summarize", "utilization"]

CONTENTION = ("static", "dynamic")
#: floor of a job's life (seconds) in the dynamic contention factor (a job that finished at its
#: arrival would divide by zero)
MIN_LIFE_SECONDS = 1e-12
#: percentile of the job completion times reported as ``p99_jct``
TAIL_PERCENTILE = 99


@dataclass(frozen=True, eq=False, repr=False)
class SimulationResult(FrozenArrays):
    """Outcome of one simulation. Metrics: the functions of this module (``summary()``).

    Parameters
    ----------
    policy : str
        The policy's name.
    workload : Workload
        The simulated jobs.
    cluster : Cluster
        The simulated cluster.
    round_duration, restart_overhead : float
        Seconds per round, and seconds lost each time a job (re)starts.
    start, finish : ndarray, shape (n,)
        First time each job ran and when it finished (seconds).
    attained, gpu_seconds : ndarray, shape (n,)
        Seconds scheduled and GPU-seconds held.
    preemptions : ndarray of int, shape (n,)
        Rounds in which an unfinished job that ran in the previous round did not run.
    restarts : ndarray of int, shape (n,)
        Times the job (re)started after not running or on different GPUs (first start
        excluded).
    round_time, round_busy, round_active, round_demand : ndarray, shape (rounds,)
        Start of each round, GPU-seconds used in it, active jobs and GPUs they request.
    sched_job, sched_round, sched_type, sched_gpus : ndarray of int
        One entry per (round, scheduled job): workload row, round, type (slowest held), GPUs.
    sched_start, sched_end : ndarray
        When that job's run in the round started and ended.
    policy_seconds : float
        Wall-clock seconds spent inside the policy.
    wall_seconds : float
        Wall-clock seconds of the whole simulation.
    params : dict, default {}
        The policy's settings (``policy.params``).

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 2}), "fifo")
    >>> r.policy, r.start.tolist(), r.finish.tolist(), r.round_time.tolist()
    ('fifo', [0.0, 0.0], [360.0, 720.0], [0.0, 360.0])
    >>> r.params
    {'prefer': 'fastest'}
    """

    policy: str
    workload: Workload
    cluster: Cluster
    round_duration: float
    restart_overhead: float
    start: np.ndarray
    finish: np.ndarray
    attained: np.ndarray
    gpu_seconds: np.ndarray
    preemptions: np.ndarray
    restarts: np.ndarray
    round_time: np.ndarray
    round_busy: np.ndarray
    round_active: np.ndarray
    round_demand: np.ndarray
    sched_job: np.ndarray
    sched_round: np.ndarray
    sched_type: np.ndarray
    sched_gpus: np.ndarray
    sched_start: np.ndarray
    sched_end: np.ndarray
    policy_seconds: float
    wall_seconds: float
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def jct(self) -> np.ndarray:
        """Job completion times ``finish - arrival``."""
        return readonly(self.finish - self.workload.arrival)

    @property
    def makespan(self) -> float:
        """Last finish minus first arrival."""
        return float(self.finish.max() - self.workload.arrival.min())

    def summary(self, *, contention_kind: str = "static", unfair_threshold: float = 1.0
                ) -> dict[str, float]:
        """Headline metrics (`fairalloc.sim.summarize`)."""
        return summarize(self, contention_kind=contention_kind,
                         unfair_threshold=unfair_threshold)

    def jobs_frame(self, *, contention_kind: str = "static") -> Any:
        """Per-job metrics (`fairalloc.sim.job_metrics`)."""
        return job_metrics(self, contention_kind=contention_kind)

    def to_frame(self) -> Any:
        """Per-job metrics as a DataFrame (same as
        `fairalloc.sim.metrics.SimulationResult.jobs_frame`)."""
        return self.jobs_frame()

    def schedule_frame(self) -> Any:
        """One row per (round, scheduled job): job id, round, type, GPUs, start, end."""
        pd = require_pandas()
        ids = np.array(self.workload.ids, dtype=object)
        return pd.DataFrame({
            "job": ids[self.sched_job] if self.sched_job.size else [],
            "round": self.sched_round, "type": np.array(self.cluster.types,
                                                        dtype=object)[self.sched_type]
            if self.sched_type.size else [],
            "gpus": self.sched_gpus, "start": self.sched_start, "end": self.sched_end})

    def rounds_frame(self) -> Any:
        """One row per round: start, utilisation, active jobs, GPUs requested."""
        pd = require_pandas()
        cap = self.cluster.total_workers * self.round_duration
        return pd.DataFrame({"time": self.round_time, "utilization": self.round_busy / cap,
                             "active_jobs": self.round_active,
                             "gpus_requested": self.round_demand})

    def __repr__(self) -> str:
        return (f"SimulationResult(policy={self.policy!r}, jobs={self.workload.n}, "
                f"rounds={self.round_time.shape[0]}, makespan={self.makespan:.6g})")

    def _repr_html_(self) -> str:
        """The notebook view: the headline metrics (``summary()``), the first jobs, and a plot
        of utilisation and active jobs per round (inline SVG)."""
        metrics = self.summary()
        w = self.workload
        facts = [("policy", self.policy), ("jobs", str(w.n)),
                 ("rounds", str(self.round_time.shape[0])), ("makespan", fmt(self.makespan))]
        tables = [Table("headline metrics (summary())", "metric", list(metrics), ["value"],
                        np.array(list(metrics.values()), dtype=float)[:, None]),
                  labelled("jobs (seconds)", "job", w.ids, (), None, extra=[
                      ("arrival", w.arrival), ("start", self.start), ("finish", self.finish),
                      ("jct", self.jct), ("preemptions", self.preemptions)])]
        cap = self.cluster.total_workers * self.round_duration
        plot = line_plot("per round", self.round_time,
                         [("utilisation", self.round_busy / cap),
                          ("active jobs", self.round_active)], x_label="s")
        page = to_html(View("SimulationResult", facts, None, tables), self.wall_seconds)
        return page.removesuffix("</div>") + f"<div>{plot}</div></div>"




def _check(result: Any) -> SimulationResult:
    if not isinstance(result, SimulationResult):
        raise InputError(f"result must be a SimulationResult, got {type(result).__name__}",
                         argument="result")
    return result


def contention(result: SimulationResult, kind: str = "static") -> np.ndarray:
    """Contention factor ``c_j`` of every job (see the module docstring), shape (n,).

    Parameters
    ----------
    result : SimulationResult
        A finished simulation (`fairalloc.sim.simulate`).
    kind : {"static", "dynamic"}, default "static"
        ``"static"``: ``max(1, N/M)``, as in the Shockwave evaluation; ``"dynamic"``: the
        mean number of active jobs per GPU over the job's life.

    Returns
    -------
    numpy.ndarray
        ``c_j >= 1`` per job, shape (n,), read-only.

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), "fifo")
    >>> contention(r).tolist(), contention(r, "dynamic").tolist()
    ([2.0, 2.0], [2.0, 1.5])
    """
    r = _check(result)
    kind = as_option(kind, "kind", CONTENTION)
    M = r.cluster.total_workers
    n = r.workload.n
    if kind == "static":
        return readonly(np.full(n, max(1.0, n / M)))
    a, f = r.workload.arrival, r.finish
    start = r.round_time
    end = np.minimum(start + r.round_duration, np.r_[start[1:], np.inf])
    overlap = np.clip(np.minimum(f[:, None], end[None, :])
                      - np.maximum(a[:, None], start[None, :]), 0.0, None)
    life = np.maximum(f - a, MIN_LIFE_SECONDS)
    return readonly(np.maximum(1.0, (overlap @ r.round_active) / life / M))


def finish_time_fairness(result: SimulationResult, contention_kind: str = "static"
                         ) -> np.ndarray:
    """``rho_j = JCT_j / (T_iso_j * c_j)`` of every job, shape (n,).

    Parameters
    ----------
    result : SimulationResult
        A finished simulation (`fairalloc.sim.simulate`).
    contention_kind : {"static", "dynamic"}, default "static"
        ``"static"``: ``max(1, N/M)``, as in the Shockwave evaluation; ``"dynamic"``: the
        mean number of active jobs per GPU over the job's life.

    Returns
    -------
    numpy.ndarray
        ``rho_j`` per job, shape (n,), read-only.

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), "fifo")
    >>> finish_time_fairness(r).tolist()
    [0.5, 1.0]
    """
    r = _check(result)
    return readonly(r.jct / (r.workload.isolated_seconds * contention(r, contention_kind)))


def utilization(result: SimulationResult) -> float:
    """GPU-seconds held by jobs over ``M * makespan`` (in ``[0, 1]``).

    Parameters
    ----------
    result : SimulationResult
        A finished simulation (`fairalloc.sim.simulate`).

    Returns
    -------
    float
        The fraction of the cluster's GPU-time held by jobs (``0.0`` for a zero makespan).

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), "fifo")
    >>> utilization(r)
    1.0
    """
    r = _check(result)
    span = r.makespan
    if span <= 0:
        return 0.0
    return float(r.gpu_seconds.sum() / (r.cluster.total_workers * span))


def job_metrics(result: SimulationResult, *, contention_kind: str = "static") -> Any:
    """Per-job metrics as a `pandas.DataFrame` (index: job ids).

    Columns: ``model``, ``mode``, ``scale_factor``, ``arrival``, ``start``, ``finish``,
    ``jct``, ``queueing`` (first start minus arrival), ``isolated`` (``T_iso``),
    ``contention``, ``rho``, ``attained``, ``gpu_seconds``, ``preemptions``, ``restarts``.

    Parameters
    ----------
    result : SimulationResult
        A finished simulation (`fairalloc.sim.simulate`).
    contention_kind : {"static", "dynamic"}, default "static"
        ``"static"``: ``max(1, N/M)``, as in the Shockwave evaluation; ``"dynamic"``: the
        mean number of active jobs per GPU over the job's life.

    Returns
    -------
    pandas.DataFrame
        One row per job, times in seconds.

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), "fifo")
    >>> job_metrics(r)[["jct", "rho"]].to_numpy().tolist()
    [[360.0, 0.5], [720.0, 1.0]]
    """
    pd = require_pandas()
    r = _check(result)
    w = r.workload
    c = contention(r, contention_kind)
    return pd.DataFrame({
        "model": list(w.model), "mode": list(w.mode),
        "scale_factor": w.scale_factor.astype(int), "arrival": w.arrival, "start": r.start,
        "finish": r.finish, "jct": r.jct, "queueing": r.start - w.arrival,
        "isolated": w.isolated_seconds, "contention": c,
        "rho": r.jct / (w.isolated_seconds * c), "attained": r.attained,
        "gpu_seconds": r.gpu_seconds, "preemptions": r.preemptions, "restarts": r.restarts,
    }, index=pd.Index(list(w.ids), name="job"))


def summarize(result: SimulationResult, *, contention_kind: str = "static",
              unfair_threshold: float = 1.0) -> dict[str, float]:
    """Headline metrics of one simulation.

    Parameters
    ----------
    result : SimulationResult
        A finished simulation (`fairalloc.sim.simulate`).
    contention_kind : {"static", "dynamic"}, default "static"
        ``"static"``: ``max(1, N/M)``, as in the Shockwave evaluation; ``"dynamic"``: the
        mean number of active jobs per GPU over the job's life.
    unfair_threshold : float, default 1.0
        A job is unfair when its ``rho`` exceeds this (``unfair_fraction``).

    Returns
    -------
    dict
        ``makespan``, ``avg_jct``, ``p99_jct``, ``avg_rho``, ``worst_rho``,
        ``unfair_fraction``, ``utilization``, ``preemptions``, ``restarts``, ``rounds``,
        ``policy_seconds``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> s = summarize(simulate(w, fa.Cluster({"gpu": 2}), "fifo"))
    >>> s["makespan"], s["avg_jct"], s["worst_rho"], s["utilization"]
    (720.0, 540.0, 1.0, 0.75)
    """
    r = _check(result)
    thr = as_positive_float(unfair_threshold, "unfair_threshold")
    rho = finish_time_fairness(r, contention_kind)
    jct = r.jct
    return {
        "makespan": r.makespan,
        "avg_jct": float(jct.mean()),
        "p99_jct": float(np.percentile(jct, TAIL_PERCENTILE)),
        "avg_rho": float(rho.mean()),
        "worst_rho": float(rho.max()),
        "unfair_fraction": float((rho > thr).mean()),
        "utilization": utilization(r),
        "preemptions": int(r.preemptions.sum()),
        "restarts": int(r.restarts.sum()),
        "rounds": int(r.round_time.shape[0]),
        "policy_seconds": float(r.policy_seconds),
    }


def compare(results: Sequence[SimulationResult] | Mapping[str, SimulationResult], *,
            contention_kind: str = "static", unfair_threshold: float = 1.0) -> Any:
    """One row per simulation of `fairalloc.sim.summarize`'s metrics.

    Parameters
    ----------
    results : sequence or mapping of SimulationResult
        Finished simulations; a mapping's keys name the rows, else each result's policy.
    contention_kind : {"static", "dynamic"}, default "static"
        ``"static"``: ``max(1, N/M)``, as in the Shockwave evaluation; ``"dynamic"``: the
        mean number of active jobs per GPU over the job's life.
    unfair_threshold : float, default 1.0
        A job is unfair when its ``rho`` exceeds this (``unfair_fraction``).

    Returns
    -------
    pandas.DataFrame
        One row per simulation (index ``policy``), one column per metric of `summarize`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), "fifo")
    >>> compare({"fifo": r})[["makespan", "avg_jct"]].to_numpy().tolist()
    [[720.0, 540.0]]
    """
    pd = require_pandas()
    if isinstance(results, Mapping):
        items = list(results.items())
    elif isinstance(results, SimulationResult) or not isinstance(results, Sequence):
        raise InputError("results must be a sequence or mapping of SimulationResult, got "
                         f"{type(results).__name__}", argument="results")
    else:
        items = [(_check(r).policy, r) for r in results]
    if not items:
        raise InputError("results is empty", argument="results")
    rows = {name: summarize(r, contention_kind=contention_kind,
                               unfair_threshold=unfair_threshold) for name, r in items}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("policy")
