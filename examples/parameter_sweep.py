"""Sweep policies x seeds x loads x hyper-parameters (local processes; Ray with --ray ADDRESS).

Run: ``python examples/parameter_sweep.py``
"""

from fairalloc.sim.sweep import sweep

df = sweep(["las", "gandiva_fair"], seeds=[0, 1], loads=[6.0, 12.0],
           params={"las": {"promote_knob": [2.0, 8.0]}}, num_jobs=6, gpus=4, workers=2)
summary = df.groupby(["policy", "load", "param.promote_knob"], dropna=False)[
    ["makespan", "avg_jct", "worst_rho"]].mean()
print(summary.round(2))
assert len(df) == (2 + 1) * 2 * 2
