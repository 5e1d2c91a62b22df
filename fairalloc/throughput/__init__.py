"""Heterogeneity-aware effective-throughput policies (Gavel §3-4, Table 1).

Modules (each has one job; lower ones never import higher ones)::

    rows.py          RowLayout: named row blocks of a stage LP (prices read by block name)
    instance.py      ColumnInstance: the allocation columns as sparse tables
    tuning.py        Tuning: the performance knobs of the solve plans (passed to solve())
    programs.py      LevelStage / LinearStage and a solved stage's StageResult
    stages.py        the lexicographic StageSolver (kept rows, warm state, the solve log)
    strategies.py    the solve plan of a stage LP (stage_plan), run by fairalloc.plan's driver
    columns.py       restricted columns (column generation) for many-type stage LPs
    structured/      structured exact level and floor solvers (Newton prices + small masters)
    policy.py        Allocation, the ThroughputPolicy base class, isolated/equal splits
    composed.py      the cvxpy path (method="cvxpy"): solve, certify the returned point
    max_min.py       MaxMinFairness and hierarchical WaterFilling (§4.1, §4.3)
    duration.py      MinMakespan, FinishTimeFairness (§4.1)
    efficiency.py    MaxTotalThroughput, MinCost (§3.1, §4.2)
    ordering.py      FIFO, ShortestJobFirst (§4.2)
    space_sharing.py max_min_space_sharing: column generation over job pairs (§3.1)
    registry.py      GAVEL_POLICIES: the one table of policies (name -> builder, function)

An allocation ``X`` (jobs x accelerator types) gives the fraction of wall-clock time each job
spends on each type (§3.1). A job's *effective throughput* is the time-weighted throughput
``throughput(m, X) = sum_j T[m, j] X[m, j]`` (plus, with space sharing, what it gets inside the
job pairs that contain it, §3.1). Every allocation satisfies

* ``0 <= X[m, j] <= 1`` and ``X[m, j] = 0`` where ``T[m, j] = 0`` or the job's gang does not fit;
* ``sum_j X[m, j] <= 1``                               (a job runs on one type at a time);
* ``sum_m X[m, j] * scale_factor[m] <= workers[j]``     (the *capacity rows*).

Every policy is an LP over the columns of ``X`` (only the allowed entries, stored as a sparse
column list; no loops per job), built with numpy/scipy.sparse and solved by HiGHS through
`fairalloc.backends`, and certified by `fairalloc.certificates.lp_certificate`
from the returned allocation and row duals. Where a policy's optimum is not unique, a
*work-conserving* second stage keeps the policy objective at its optimum (to ``stage_tol``) and
maximises the total normalised throughput, so no capacity is left idle that a job could use.

Prices
------
``prices[j]`` is the non-negative multiplier of capacity row ``j`` in the policy's first-stage
*maximisation* LP (the minimisation policies are solved as maximisations: makespan as
``max 1/makespan``, finish-time fairness as the Dinkelbach level, cost as throughput per unit
cost), i.e. ``d OPT / d workers[j]``: zero on a type that is not fully used.

Policies (builders and one-call functions)
------------------------------------------
Each builder, its one-call function and the Gavel section it implements:

* `fairalloc.MaxMinFairness`, `fairalloc.max_min_fairness`:
  §4.1 LAS, weighted, scale factors;
* `fairalloc.WaterFilling`, `fairalloc.water_filling`:
  §4.3 hierarchical water-filling;
* `fairalloc.FinishTimeFairness`,
  `fairalloc.finish_time_fairness`:
  §4.1 min max rho (Themis);
* `fairalloc.MinMakespan`, `fairalloc.min_makespan`:
  §4.1 makespan (one LP, 1/T);
* `fairalloc.MaxTotalThroughput`,
  `fairalloc.max_total_throughput`:
  §3.1 / §4.2;
* `fairalloc.FIFO`, `fairalloc.fifo`: §4.2 FIFO;
* `fairalloc.ShortestJobFirst`,
  `fairalloc.shortest_job_first`:
  §4.2 SJF;
* `fairalloc.MinCost`, `fairalloc.min_cost`: §4.2 min cost (and with SLOs).

Every builder accepts ``pairs`` (`fairalloc.JobPairs`, space sharing) and
``unconsolidated_throughput`` (placement sensitivity, §3.1). Builders expose their program as
cvxpy objects (`fairalloc.throughput.ThroughputPolicy.x`,
`fairalloc.throughput.ThroughputPolicy.capacity_constraint`, ...) so that
constraints and objective terms can be added and the model re-solved with ``method="cvxpy"``
(certified at the allocation it returns, for the objective it reports:
`fairalloc.throughput.composed`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# public name -> module that defines it (loaded on first access: a scheduler calling one policy
# imports only that policy's modules)
_EXPORTS: dict[str, str] = {
    "FinishTimeFairness": "duration",
    "MinMakespan": "duration",
    "finish_time_fairness": "duration",
    "min_makespan": "duration",
    "MaxTotalThroughput": "efficiency",
    "MinCost": "efficiency",
    "max_total_throughput": "efficiency",
    "min_cost": "efficiency",
    "MaxMinFairness": "max_min",
    "WaterFilling": "max_min",
    "max_min_fairness": "max_min",
    "water_filling": "max_min",
    "FIFO": "ordering",
    "ShortestJobFirst": "ordering",
    "fifo": "ordering",
    "shortest_job_first": "ordering",
    "Allocation": "policy",
    "ThroughputPolicy": "policy",
    "equal_split": "policy",
    "isolated_split": "policy",
    "GAVEL_POLICIES": "registry",
    "GavelPolicySpec": "registry",
    "gavel_policy": "registry",
    "max_min_space_sharing": "space_sharing",
    "Tuning": "tuning",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "FIFO",
    "GAVEL_POLICIES",
    "Allocation",
    "FinishTimeFairness",
    "GavelPolicySpec",
    "MaxMinFairness",
    "MaxTotalThroughput",
    "MinCost",
    "MinMakespan",
    "ShortestJobFirst",
    "ThroughputPolicy",
    "Tuning",
    "WaterFilling",
    "equal_split",
    "fifo",
    "finish_time_fairness",
    "gavel_policy",
    "isolated_split",
    "max_min_fairness",
    "max_min_space_sharing",
    "max_total_throughput",
    "min_cost",
    "min_makespan",
    "shortest_job_first",
    "water_filling",
]

if TYPE_CHECKING:  # static type checkers see every lazily exported name
    from .duration import (
        FinishTimeFairness as FinishTimeFairness,
        MinMakespan as MinMakespan,
        finish_time_fairness as finish_time_fairness,
        min_makespan as min_makespan,
    )
    from .efficiency import (
        MaxTotalThroughput as MaxTotalThroughput,
        MinCost as MinCost,
        max_total_throughput as max_total_throughput,
        min_cost as min_cost,
    )
    from .max_min import (
        MaxMinFairness as MaxMinFairness,
        WaterFilling as WaterFilling,
        max_min_fairness as max_min_fairness,
        water_filling as water_filling,
    )
    from .ordering import (
        FIFO as FIFO,
        ShortestJobFirst as ShortestJobFirst,
        fifo as fifo,
        shortest_job_first as shortest_job_first,
    )
    from .policy import (
        Allocation as Allocation,
        ThroughputPolicy as ThroughputPolicy,
        equal_split as equal_split,
        isolated_split as isolated_split,
    )
    from .registry import (
        GAVEL_POLICIES as GAVEL_POLICIES,
        GavelPolicySpec as GavelPolicySpec,
        gavel_policy as gavel_policy,
    )
    from .space_sharing import (
        max_min_space_sharing as max_min_space_sharing,
    )
    from .tuning import Tuning as Tuning
