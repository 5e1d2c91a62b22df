"""Plots of simulations (matplotlib, optional: ``pip install ".[plot]"`` in the checkout).

* `fairalloc.sim.plots.plot_gantt` -- the schedule: one row per job, a bar for every
  round it ran (coloured by accelerator type), its arrival marked (Shockwave Figure 8(a));
* `fairalloc.sim.plots.plot_utilization` -- GPU utilisation per round, one line
  per policy;
* `fairalloc.sim.plots.plot_rho_cdf` -- CDF of finish-time fairness ``rho`` per
  policy (Shockwave Fig. 8(b));
* `fairalloc.sim.plots.plot_comparison` -- bars of headline metrics per policy
  (Shockwave Figure 7);
* `fairalloc.sim.plots.save_plots` -- all of them as PNG files.

Each function draws on ``ax`` (or a new figure) and returns the matplotlib ``Axes`` (or
``Figure``); nothing is shown unless you call ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from .metrics import compare, finish_time_fairness
from .simulator import SimulationResult

__all__ = ["plot_comparison", "plot_gantt", "plot_rho_cdf", "plot_utilization", "save_plots"]

#: metrics drawn by `fairalloc.sim.plots.plot_comparison` by default
DEFAULT_METRICS = ("makespan", "avg_jct", "worst_rho", "unfair_fraction", "utilization")
#: seconds per hour: time axes are in hours
SECONDS_PER_HOUR = 3600.0
#: metric -> (axis label with its unit, factor from the metric's own unit); every metric of
#: `fairalloc.sim.summarize`
METRIC_AXES = {
    "makespan": ("makespan (h)", 1 / SECONDS_PER_HOUR),
    "avg_jct": ("average JCT (h)", 1 / SECONDS_PER_HOUR),
    "p99_jct": ("p99 JCT (h)", 1 / SECONDS_PER_HOUR),
    "avg_rho": ("average rho (ratio)", 1.0),
    "worst_rho": ("worst rho (ratio)", 1.0),
    "unfair_fraction": ("unfair jobs (%)", 100.0),
    "utilization": ("GPU utilisation (%)", 100.0),
    "preemptions": ("preemptions (count)", 1.0),
    "restarts": ("restarts (count)", 1.0),
    "rounds": ("rounds (count)", 1.0),
    "policy_seconds": ("policy time (s)", 1.0),
}


def _plt() -> Any:
    try:
        import matplotlib.pyplot as plt  # headless machines fall back to Agg by themselves
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError('plots need matplotlib: pip install ".[plot]" in the fairalloc '
                          'checkout') from exc
    return plt


def _results(results: Any) -> list[tuple[str, SimulationResult]]:
    if isinstance(results, SimulationResult):
        return [(results.policy, results)]
    if isinstance(results, Mapping):
        items = list(results.items())
    elif isinstance(results, str | bytes) or not hasattr(results, "__iter__"):
        raise InputError(f"results must be a SimulationResult, or a sequence or mapping of "
                         f"them, got {type(results).__name__}", argument="results")
    else:
        items = [(getattr(r, "policy", str(i)), r) for i, r in enumerate(results)]
    for name, r in items:
        if not isinstance(r, SimulationResult):
            raise InputError(f"results[{name!r}] is a {type(r).__name__}, not a "
                             "SimulationResult", argument="results")
    if not items:
        raise InputError("results is empty", argument="results")
    return items


def plot_gantt(result: SimulationResult, ax: Any = None, *, max_jobs: int | None = 200) -> Any:
    """Schedule of one simulation: a row per job (by arrival), a bar per round it ran.

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> r = simulate(Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0]),
    ...              fa.Cluster({"gpu": 1}), "fifo")
    >>> ax = plot_gantt(r)
    >>> len(ax.patches) > 0
    True
    """
    plt = _plt()
    if not isinstance(result, SimulationResult):
        raise InputError("result must be a SimulationResult", argument="result")
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 6))
    w = result.workload
    order = np.argsort(w.arrival, kind="stable")
    if max_jobs is not None:
        order = order[:max_jobs]
    row = np.full(w.n, -1)
    row[order] = np.arange(order.size)
    keep = row[result.sched_job] >= 0
    colors = plt.get_cmap("tab10")
    y = row[result.sched_job[keep]]
    for t in np.unique(result.sched_type[keep]):
        m = result.sched_type[keep] == t
        ax.barh(y[m], (result.sched_end[keep] - result.sched_start[keep])[m] / SECONDS_PER_HOUR,
                left=result.sched_start[keep][m] / SECONDS_PER_HOUR, height=0.8,
                color=colors(int(t) % 10), label=result.cluster.types[int(t)], linewidth=0)
    ax.scatter(w.arrival[order] / SECONDS_PER_HOUR, np.arange(order.size), marker="|",
               color="black", s=12, label="arrival")
    ax.set_xlabel("time (h)")
    ax.set_ylabel("job (by arrival)")
    ax.set_title(f"schedule: {result.policy}")
    ax.legend(loc="upper right", fontsize="small")
    return ax


def plot_utilization(results: Any, ax: Any = None) -> Any:
    """GPU utilisation of every round over time, one line per simulation."""
    plt = _plt()
    items = _results(results)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    for name, r in items:
        util = r.round_busy / (r.cluster.total_workers * r.round_duration)
        ax.step(r.round_time / SECONDS_PER_HOUR, 100.0 * util, where="post", label=name)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPU utilisation (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize="small")
    return ax


def plot_rho_cdf(results: Any, ax: Any = None, *, contention_kind: str = "static") -> Any:
    """Empirical CDF of finish-time fairness ``rho`` per simulation (``rho = 1`` marked)."""
    plt = _plt()
    items = _results(results)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name, r in items:
        rho = np.sort(finish_time_fairness(r, contention_kind))
        ax.step(rho, 100.0 * np.arange(1, rho.size + 1) / rho.size, where="post", label=name)
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("finish-time fairness rho (shared / isolated time, ratio)")
    ax.set_ylabel("jobs (%, cumulative)")
    ax.legend(fontsize="small")
    return ax


def plot_comparison(results: Any, metrics: Sequence[str] = DEFAULT_METRICS, *,
                    fig: Any = None, contention_kind: str = "static",
                    unfair_threshold: float = 1.0) -> Any:
    """One bar chart per metric, one bar per policy (relative values annotated against the
    first policy, as in Shockwave Figure 7), in the units of `METRIC_AXES` (hours, %).
    Accepts results or a `fairalloc.sim.compare` frame (``contention_kind`` and
    ``unfair_threshold`` as for `fairalloc.sim.compare`)."""
    plt = _plt()
    frame = results if hasattr(results, "columns") else compare(
        dict(_results(results)), contention_kind=contention_kind,
        unfair_threshold=unfair_threshold)
    missing = [m for m in metrics if m not in frame.columns]
    if missing:
        raise InputError(f"metrics: {missing[0]!r} is not one of {list(frame.columns)}",
                         argument="metrics")
    if fig is None:
        fig = plt.figure(figsize=(3.2 * len(metrics), 3.4))
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    names = [str(i) for i in frame.index]
    for ax, m in zip(axes, metrics, strict=True):
        label, factor = METRIC_AXES.get(m, (m, 1.0))
        vals = frame[m].to_numpy(dtype=float) * factor
        bars = ax.bar(range(len(vals)), vals, color=plt.get_cmap("tab10")(np.arange(len(vals))))
        ax.set_xticks(range(len(vals)), names, rotation=45, ha="right", fontsize="small")
        ax.set_title(label)
        ax.set_ylabel(label)
        base = vals[0]
        if base:
            for b, v in zip(bars, vals, strict=True):
                ax.annotate(f"{v / base:.2f}x", (b.get_x() + b.get_width() / 2, v),
                            ha="center", va="bottom", fontsize="x-small")
    fig.tight_layout()
    return fig


def save_plots(results: Any, outdir: str | Path, *, prefix: str = "",
               contention_kind: str = "static", unfair_threshold: float = 1.0) -> list[Path]:
    """Write ``gantt_<policy>.png``, ``utilization.png``, ``rho_cdf.png`` and
    ``comparison.png`` into ``outdir``; return the paths written (``contention_kind`` and
    ``unfair_threshold`` as for `fairalloc.sim.compare`)."""
    plt = _plt()
    items = _results(results)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []

    def save(fig: Any, name: str) -> None:
        p = out / f"{prefix}{name}.png"
        fig.savefig(p, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(p)

    for name, r in items:
        fig, ax = plt.subplots(figsize=(10, 6))
        plot_gantt(r, ax)
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)
        save(fig, f"gantt_{safe}")
    fig, ax = plt.subplots(figsize=(8, 4))
    plot_utilization(dict(items), ax)
    save(fig, "utilization")
    fig, ax = plt.subplots(figsize=(6, 4))
    plot_rho_cdf(dict(items), ax, contention_kind=contention_kind)
    save(fig, "rho_cdf")
    save(plot_comparison(dict(items), contention_kind=contention_kind,
                         unfair_threshold=unfair_threshold), "comparison")
    return paths
