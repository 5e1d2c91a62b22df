"""Scheduling policies for the simulator: adapters to the library and the papers' baselines.

One module per policy family: `.base` (the base class and the greedy packing),
`.gavel`, `.shockwave`, `.efq`, `.themis`, `.baselines` and
`.registry` (policies by name).

A policy is any object with a ``name``, ``reset(workload, cluster, *, round_duration, seed)``
and ``allocate(state) -> TimeShares | Schedule``
(`fairalloc.sim.Policy`); `fairalloc.sim.make_policy`
builds the registered ones by name (`fairalloc.sim.available_policies`).

Library policies (adapters)
---------------------------
* `fairalloc.sim.GavelPolicy` -- Gavel's effective-throughput programs (Gavel
  §4): max-min fairness / LAS (``"max_min_fairness"``, alias ``"gavel"``), water-filling,
  finish-time fairness (``"finish_time_fairness"``; what the Shockwave artifact runs as its "Themis"
  baseline, hence the alias ``"themis_ftf"``), minimum makespan (``"min_makespan"``,
  alias ``"ossp"``: the Shockwave artifact's OSSP baseline is Gavel's makespan policy),
  maximum total (normalised) throughput (``"max_total_throughput"``, alias ``"mst"``), Gavel's
  FIFO and SJF, and the isolated 1/n split. They return fractional
  `fairalloc.sim.TimeShares` that the simulator realises with Gavel's round-based
  mechanism; the program is re-solved when jobs arrive, finish or change regime (or every round with
  ``recompute="round"``).
* `fairalloc.sim.ShockwavePolicy` -- Shockwave (§4-6): regime
  forecasts from each job's observed epochs
  (`fairalloc.forecast_regimes`), FTF estimates (Eq. 9,
  `fairalloc.ftf_estimate` with
  `fairalloc.contention_factor`), a windowed plan
  (`fairalloc.plan_schedule`) re-planned by
  `fairalloc.ReplanPolicy`.
* `fairalloc.sim.EFQPolicy` -- Ares elastic fair queuing (§3) through
  `fairalloc.ElasticFairQueue`: jobs may get more (or fewer) GPUs than
  they asked for.
* `fairalloc.sim.ThemisPolicy` -- Themis (§3.3): leases, the filter of the
  jobs furthest from finish-time fairness and a partial-allocation auction of the offered GPUs
  (`fairalloc.gpu_auction`).

Baselines of the papers' evaluations (implemented here)
-------------------------------------------------------
* `fairalloc.sim.FIFOPolicy` -- first come first served with backfilling.
* `fairalloc.sim.TiresiasLAS` -- Tiresias's discretised two-dimensional
  least-attained-service (queues by attained GPU-time, FIFO within a queue, promotion of starving
  jobs).
* `fairalloc.sim.AlloXPolicy` -- AlloX: minimum average completion time by min-cost
  bipartite matching of jobs to (accelerator type, position) slots, with its fairness filter.
* `fairalloc.sim.AlloXUpstreamPolicy` -- the Shockwave artifact's AlloX as its code runs it
  (placed 1-GPU jobs keep their GPU, gangs as time shares of one worker; `.upstream_baselines`).
* `fairalloc.sim.GandivaFairUpstreamPolicy` -- the Shockwave artifact's "gandiva_fair": equal
  shares ``M / n`` whatever the gang, through upstream's round loop (`.upstream_rounds`).
* `fairalloc.sim.OSSPUpstreamPolicy` -- the Shockwave artifact's OSSP: a bisection on the
  horizon of a feasibility program, the interior-point solver's point, upstream's round loop.
* ``GavelPolicy(..., solver="CLARABEL")`` -- the Shockwave artifact's Themis and MST programs
  solved by an interior-point solver, whose point inside a face of optimal points upstream's
  round loop runs (`.upstream_programs`).
* `fairalloc.sim.GandivaFairPolicy` -- Gandiva-fair's stride scheduling with
  tickets (by default the gang size, as in the Shockwave evaluation), work conserving.

Every baseline realises its priority order with one vectorised greedy packing
(`fairalloc.sim.greedy_pack`): in priority order, each job takes its gang on the
first type in its preference list with room; a job that does not fit is skipped (backfilling).
"""

from __future__ import annotations

from .base import BasePolicy, greedy_pack, pack_by_priority
from .baselines import AlloXPolicy, FIFOPolicy, GandivaFairPolicy, TiresiasLAS
from .efq import EFQPolicy
from .gavel import GAVEL_OBJECTIVES, GavelPolicy
from .registry import available_policies, make_policy, register_policy
from .shockwave import ShockwavePolicy
from .themis import ThemisPolicy
from .upstream_baselines import (
    AlloXUpstreamPolicy,
    GandivaFairUpstreamPolicy,
    OSSPUpstreamPolicy,
)

__all__ = [
    "GAVEL_OBJECTIVES",
    "AlloXPolicy",
    "AlloXUpstreamPolicy",
    "BasePolicy",
    "EFQPolicy",
    "FIFOPolicy",
    "GandivaFairPolicy",
    "GandivaFairUpstreamPolicy",
    "GavelPolicy",
    "OSSPUpstreamPolicy",
    "ShockwavePolicy",
    "ThemisPolicy",
    "TiresiasLAS",
    "available_policies",
    "greedy_pack",
    "make_policy",
    "pack_by_priority",
    "register_policy",
]
