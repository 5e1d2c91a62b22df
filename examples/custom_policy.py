"""Write your own scheduling policy and simulate it next to the library's.

A policy has a ``name``, ``reset(...)`` and ``allocate(state)``; it sees only what a real
scheduler could (the active jobs' current speed, progress and history) and returns the GPUs
each job holds this round (``Schedule``) or fractional time shares (``TimeShares``).

Run: ``python examples/custom_policy.py``
"""

import numpy as np

import fairalloc as fa
from fairalloc.sim import BasePolicy, compare, pack_by_priority, poisson_workload, simulate


class ShortestRemainingFirst(BasePolicy):
    """Preemptive shortest-remaining-time-first, as if the current batch size lasted."""

    name = "srtf"

    def allocate(self, state):
        jobs = state.jobs
        remaining = np.min(jobs.remaining_seconds, axis=1)  # on each job's fastest type
        return pack_by_priority(jobs, state.cluster.cluster, remaining)


workload = poisson_workload(12, rate=10.0, seed=1, max_scale_factor=4)
cluster = fa.Cluster({"v100": 8})
results = [simulate(workload, cluster, ShortestRemainingFirst(), round_duration=360.0),
           simulate(workload, cluster, "fifo", round_duration=360.0)]
table = compare(results)
print(table[["makespan", "avg_jct", "worst_rho"]].round(2))
assert table.loc["srtf", "avg_jct"] <= table.loc["fifo", "avg_jct"] * 1.5
