"""Where a warm max-min round of `fairalloc.RoundPolicy` spends its time (#28).

The rounds are `benchmarks/gavel_inputs.py`'s section (b) trace (Gavel-drawn jobs, fresh
``JobIdPair`` keys and fresh dicts every round, about 1 % of the jobs leaving and as many
arriving) through one ``RoundPolicy("max_min_fairness")`` (no cold round in between). Each
named step is timed with ``time.thread_time`` around the library function that does it (a
wrapper installed by this script only, removed at the end; a step the library does not have is
left out); per round, ``HiGHS solves`` is the time inside `fairalloc.backends.kept.KeptLP.solve`
and ``everything else`` the round less it. Medians over the rounds after the first 3 (a step
that does not run every round: over the rounds it ran in).

Run: ``python benchmarks/profile_warm_max_min.py --jobs 100 1000 [--rounds 300] [--data DIR]``.
Timing on a loaded machine: thread CPU, medians; compare checkouts back to back.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import gavel_inputs as gi  # noqa: E402
import profile_gavel_cold as pgc  # noqa: E402

#: (module, owner attribute or None, function, label): the steps timed
STEPS = (
    ("fairalloc.rounds.api", None, "_matrix", "dicts -> arrays (_matrix)"),
    ("fairalloc.rounds.api", None, "_in_job_order", "per-job dicts (_in_job_order)"),
    ("fairalloc.rounds.incremental", None, "_classes", "exact classes (_classes)"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "_fill", "slot filled (_fill)"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "_append", "slots added (_append)"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "_release", "slots freed (_release)"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "_recount", "classes resized "
     "(_recount)"),
    ("fairalloc.rounds.incremental", None, "_certificates", "certificates (_certificates)"),
)
SOLVE = ("fairalloc.backends.kept", "KeptLP", "solve", "HiGHS solves")


def profile(table: Any, n: int, rounds: int) -> list[tuple[str, float]]:
    """(label, median ms) of each step over a warm trace of ``n`` jobs."""
    import fairalloc as fa

    acc: dict[str, int] = collections.defaultdict(int)  # thread CPU ns by label
    per: dict[str, list[float]] = collections.defaultdict(list)
    saved = pgc._install(acc, (*STEPS, SOLVE))
    try:
        rng = np.random.default_rng(7)
        js = gi.job_set(table, n, 0)
        st = {f: getattr(js, f) for f in ("ids", "key", "T", "sf", "w", "total", "steps",
                                          "elapsed", "entity")}
        spec = dict(zip(gi.TYPES, js.cap.astype(int).tolist()))
        policy = fa.RoundPolicy("max_min_fairness")
        churn, nxt = max(1, round(n * gi.CHURN)), n
        for r in range(rounds):
            if r:
                keep = np.ones(st["ids"].size, dtype=bool)
                keep[rng.choice(keep.size, churn, replace=False)] = False
                new = gi.draw(table, churn, rng, nxt, js.entity_w.size)
                new["steps"], new["elapsed"] = new["total"].copy(), np.zeros(churn)
                st = {f: np.concatenate([v[keep], new[f]]) for f, v in st.items()}
                nxt += churn
            ids = [gi.JobIdPair(int(i)) for i in st["ids"]]
            tp = {j: dict(zip(gi.TYPES, row)) for j, row in zip(ids, st["T"].tolist())}
            sf, w = dict(zip(ids, st["sf"].tolist())), dict(zip(ids, st["w"].tolist()))
            acc.clear()
            start = time.thread_time_ns()
            res = policy.allocate(tp, spec, scale_factor=sf, weight=w)
            total = time.thread_time_ns() - start
            if not res.certificate.ok:
                raise RuntimeError(f"round {r}: the certificate failed")
            if r >= 3:
                per["round (total)"].append(total * 1e-9)
                per["everything else"].append((total - acc.get(SOLVE[3], 0)) * 1e-9)
                for label, value in acc.items():
                    per[label].append(value * 1e-9)
    finally:
        for target, name, fn in reversed(saved):
            setattr(target, name, fn)
    order = ["round (total)", SOLVE[3], "everything else", *(s[3] for s in STEPS)]
    return [(label, float(np.median(per[label])) * 1e3) for label in order if per[label]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1000])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared"
                    / "data" / "gavel")
    args = ap.parse_args(argv)
    table = gi.load_table(args.data / "simulation_throughputs.json")
    for n in args.jobs:
        print(f"\nwarm max-min rounds, {n:,} jobs ({args.rounds} rounds): thread CPU p50, ms\n")
        for label, ms in profile(table, n, args.rounds):
            print(f"| {label:36s} | {ms:7.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
