"""Gavel's effective-throughput programs as a simulator policy (gavel.txt §4-5).

:class:`GavelPolicy` solves one of the library's Gavel programs (:data:`GAVEL_OBJECTIVES`)
on the active jobs and returns fractional :class:`~fairalloc.sim.TimeShares`, which the
simulator realises with Gavel's round-based mechanism; the program is re-solved when jobs
arrive, finish or change regime (or every round with ``recompute="round"``).

:data:`GAVEL_POLICIES` is the one table of the Gavel programs the simulator registers by name
(:mod:`fairalloc.sim.policies.registry` reads it): registry name, objective, description.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from ..._validation import as_option
from ...data import Cluster, Jobs
from ..state import RoundState, TimeShares
from ..workload import Workload
from .base import BasePolicy

__all__ = ["GAVEL_OBJECTIVES", "GAVEL_POLICIES", "GavelPolicy"]

#: the Gavel programs a :class:`GavelPolicy` can run (``"isolated"``: the 1/n split, no program)
GAVEL_OBJECTIVES = ("max_min_fairness", "water_filling", "finish_time_fairness",
                    "min_makespan", "max_total_throughput", "fifo", "shortest_job_first",
                    "isolated")

#: registry name -> (objective, description) of every Gavel program the simulator registers
GAVEL_POLICIES: dict[str, tuple[str, str]] = {
    "max_min_fairness": ("max_min_fairness", "Gavel heterogeneity-aware max-min fairness (LAS)"),
    "gavel": ("max_min_fairness", "alias of max_min_fairness"),
    "water_filling": ("water_filling", "Gavel max-min fairness with water filling"),
    "finish_time_fairness": ("finish_time_fairness", "Gavel finish-time fairness program"),
    "themis_ftf": ("finish_time_fairness",
                   "the Shockwave artifact's 'Themis' baseline: Gavel's FTF program"),
    "min_makespan": ("min_makespan", "Gavel minimum makespan (one LP)"),
    "ossp": ("min_makespan", "OSSP baseline: minimum makespan"),
    "max_total_throughput": ("max_total_throughput",
                             "maximum total normalised throughput (MST)"),
    "mst": ("max_total_throughput", "alias of max_total_throughput"),
    "gavel_fifo": ("fifo", "Gavel's FIFO program"),
    "sjf": ("shortest_job_first", "Gavel's shortest-job-first program"),
    "isolated": ("isolated", "each job 1/n of every type"),
}


def _solve(objective: str, jobs: Jobs, cluster: Cluster, options: dict[str, Any]) -> Any:
    """Time shares ``x`` of the Gavel program ``objective`` (``options``: solver options)."""
    from ... import throughput as tp

    if objective == "isolated":
        return tp.isolated_split(jobs, cluster)
    if objective == "max_min_fairness":
        return tp.max_min_fairness(jobs, cluster, **options).x
    if objective == "water_filling":
        return tp.max_min_fairness(jobs, cluster, water_filling=True, **options).x
    if objective == "finish_time_fairness":
        return tp.finish_time_fairness(jobs, cluster, **options).x
    if objective == "min_makespan":
        return tp.min_makespan(jobs, cluster, **options).x
    if objective == "max_total_throughput":
        return tp.max_total_throughput(jobs, cluster, normalized=True, **options).x
    if objective == "fifo":
        return tp.fifo(jobs, cluster, order=-jobs.elapsed, **options).x
    return tp.shortest_job_first(jobs, cluster, **options).x


class GavelPolicy(BasePolicy):
    """A Gavel effective-throughput program as a simulator policy (gavel.txt §4-5).

    Parameters
    ----------
    objective : str
        One of :data:`GAVEL_OBJECTIVES`.
    recompute : {"event", "round"}
        Re-solve when jobs arrive, finish or change regime (default; Gavel recomputes its
        allocation on such events), or every round.
    name : str, optional
        Display name (default ``objective``).
    method, backend, work_conserving, gap_tol, feas_tol : optional
        Passed to the library function when given (e.g. ``method="highs"``); ``None``: the
        function's default. Not used by ``"isolated"``.
    """

    def __init__(self, objective: str = "max_min_fairness", *, recompute: str = "event",
                 name: str | None = None, method: str | None = None, backend: Any = None,
                 work_conserving: bool | None = None, gap_tol: float | None = None,
                 feas_tol: float | None = None) -> None:
        objective = as_option(objective, "objective", GAVEL_OBJECTIVES)
        recompute = as_option(recompute, "recompute", ("event", "round"))
        given = {"method": method, "backend": backend, "work_conserving": work_conserving,
                 "gap_tol": gap_tol, "feas_tol": feas_tol}
        solve_options = {k: v for k, v in given.items() if v is not None}
        super().__init__({"objective": objective, "recompute": recompute, **solve_options})
        self.name = name or objective
        self.objective = objective
        self.recompute = recompute
        self.solve_options = solve_options
        self._x: dict[Hashable, np.ndarray] = {}
        self.solves = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._x = {}
        self.solves = 0

    def allocate(self, state: RoundState) -> TimeShares:
        v = state.jobs
        cluster = state.cluster.cluster
        stale = (self.recompute == "round" or bool(state.arrived) or bool(state.finished)
                 or bool(v.regime_changed.any()) or any(i not in self._x for i in v.ids))
        if stale:
            x = _solve(self.objective, v.to_jobs(), cluster, self.solve_options)
            self.solves += 1
            self._x = dict(zip(v.ids, np.asarray(x), strict=True))
        return TimeShares(np.array([self._x[i] for i in v.ids]))
