"""Replay a Shockwave-format trace (a small one written here, or the real one if present).

Run: ``python examples/trace_replay.py [TRACE.tsv]``
"""

import sys
import tempfile
from pathlib import Path

import fairalloc as fa
from fairalloc.sim import compare, read_trace, simulate

LINES = [  # job type, command, dir, steps arg, needs data, steps, gang, mode, weight, SLO,
    # duration on the reference type (s), arrival (s)
    ("ResNet-18 (batch size 32)", 60_000, 1, "accordion", 1400, 0),
    ("LM (batch size 10)", 120_000, 1, "gns", 1300, 60),
    ("Transformer (batch size 16)", 12_000, 2, "static", 1500, 120),
    ("Recommendation (batch size 2048)", 150_000, 1, "accordion", 2500, 300),
]

if len(sys.argv) > 1:
    trace = Path(sys.argv[1])
else:
    trace = Path(tempfile.mkdtemp()) / "trace_small.tsv"
    trace.write_text("".join(
        "\t".join([jt, "python3 train.py", "workdir", "--steps", "1", str(steps), str(sf), mode,
                   "1", "-1.000000", str(dur), str(arr)]) + "\n"
        for jt, steps, sf, mode, dur, arr in LINES))

workload = read_trace(trace, types=["v100"])  # built-in throughput table unless one is beside it
print(workload.to_frame()[["model", "mode", "scale_factor", "epochs", "regimes",
                           "isolated_seconds"]].round(1))
cluster = fa.Cluster({"v100": 2})
results = [simulate(workload, cluster, p, round_duration=120.0, restart_overhead=20.0)
           for p in ("themis_ftf", "allox", "shockwave")]
print(compare(results, unfair_threshold=1.05)[["makespan", "avg_jct", "worst_rho"]].round(2))
