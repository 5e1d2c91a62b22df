"""Compare scheduling policies on a generated workload (no data files needed).

Run: ``python examples/simulate_policies.py``
"""

import fairalloc as fa
from fairalloc.sim import compare, poisson_workload, simulate

# 16 jobs arriving at 12 per hour (Poisson), static / Accordion / GNS batch-size schedules
workload = poisson_workload(16, rate=12.0, seed=0, max_scale_factor=4)
cluster = fa.Cluster({"v100": 8})

results = [simulate(workload, cluster, policy, round_duration=360.0)
           for policy in ("fifo", "las", "max_min_fairness", "gandiva_fair", "shockwave")]
table = compare(results)
print(table[["makespan", "avg_jct", "worst_rho", "unfair_fraction", "utilization"]].round(3))

# per-job view of one run: completion time and finish-time fairness
print(results[-1].jobs_frame()[["model", "mode", "jct", "rho"]].round(2).head())
assert (table["makespan"] > 0).all()
