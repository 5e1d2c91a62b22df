"""Trace-driven round-based cluster simulator and policy comparison (``fairalloc.sim``).

* `fairalloc.sim.models` -- model families, throughput tables and static / Accordion /
  GNS batch-size schedules; `fairalloc.sim.workload` -- jobs and workloads;
  `fairalloc.sim.generator` -- the Poisson generator of the papers;
  `fairalloc.sim.trace` -- the Shockwave trace reader;
* `fairalloc.sim.state` -- the policy protocol: what a policy sees and returns
  (`fairalloc.sim.Policy`, `fairalloc.sim.RoundState`,
  `fairalloc.sim.JobView`, `fairalloc.sim.TimeShares`,
  `fairalloc.sim.Schedule`);
* `fairalloc.sim.simulator` -- the round-based, event-accurate simulator (it takes a
  policy object); `fairalloc.sim.runner` -- `fairalloc.sim.simulate`, a policy
  object or a registered name in one call;
* `policies` -- adapters to the library's policies (Gavel, Shockwave, Ares)
  and the papers' baselines (FIFO, Tiresias LAS, AlloX, Gandiva-fair);
* `fairalloc.sim.metrics` -- `fairalloc.sim.SimulationResult` and its
  metrics: makespan, JCT, finish-time fairness, utilisation, preemptions as pandas DataFrames;
* `fairalloc.sim.plots` -- Gantt charts, utilisation, rho CDFs, comparison bars
  (matplotlib);
* `fairalloc.sim.sweep` -- parameter sweeps on local processes or Ray.

Examples
--------
>>> import fairalloc as fa
>>> from fairalloc.sim import compare, poisson_workload, simulate
>>> w = poisson_workload(8, rate=8.0, seed=0)
>>> results = [simulate(w, fa.Cluster({"v100": 4}), p) for p in ("fifo", "las")]
>>> sorted(compare(results).index)
['fifo', 'las']
"""

from __future__ import annotations

from .generator import poisson_workload
from .metrics import (
    SimulationResult,
    compare,
    contention,
    finish_time_fairness,
    job_metrics,
    summarize,
    utilization,
)
from .models import MODELS, ThroughputTable, batch_size_schedule
from .policies import (
    AlloXPolicy,
    AlloXUpstreamPolicy,
    BasePolicy,
    EFQPolicy,
    FIFOPolicy,
    GandivaFairPolicy,
    GandivaFairUpstreamPolicy,
    GavelPolicy,
    OSSPUpstreamPolicy,
    ShockwavePolicy,
    ThemisPolicy,
    TiresiasLAS,
    available_policies,
    greedy_pack,
    make_policy,
    pack_by_priority,
    register_policy,
)
from .runner import simulate
from .simulator import SimulationError, Simulator
from .state import ClusterState, JobView, Policy, RoundState, Schedule, TimeShares
from .trace import read_trace
from .workload import JobSpec, Workload

__all__ = [
    "MODELS",
    "AlloXPolicy",
    "AlloXUpstreamPolicy",
    "BasePolicy",
    "ClusterState",
    "EFQPolicy",
    "FIFOPolicy",
    "GandivaFairPolicy",
    "GandivaFairUpstreamPolicy",
    "GavelPolicy",
    "OSSPUpstreamPolicy",
    "JobSpec",
    "JobView",
    "Policy",
    "RoundState",
    "Schedule",
    "ShockwavePolicy",
    "SimulationError",
    "SimulationResult",
    "Simulator",
    "ThemisPolicy",
    "ThroughputTable",
    "TimeShares",
    "TiresiasLAS",
    "Workload",
    "available_policies",
    "batch_size_schedule",
    "compare",
    "contention",
    "finish_time_fairness",
    "greedy_pack",
    "job_metrics",
    "make_policy",
    "pack_by_priority",
    "poisson_workload",
    "read_trace",
    "register_policy",
    "simulate",
    "summarize",
    "utilization",
]
