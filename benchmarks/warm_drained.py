"""Warm max-min rounds with a drained worker type (#28 item 3), on the Gavel-drawn trace.

The trace of ``benchmarks/gavel_inputs.py`` (b) (same seed, the same 1 % of the jobs leaving
and arriving per round, dicts keyed by Gavel's ``JobIdPair``), with the workers of ``--drain``
types set to 0 in rounds ``--drain-from`` .. ``--drain-to - 1`` (all rounds by default). Each
round is solved warm (``RoundPolicy("max_min_fairness").allocate``) and cold
(``solve_round``); the table gives this thread's CPU time per round (p50 / p90, ms), the
rounds' ``stats.method`` counts and the rounds whose certificate failed (``bad``).

Measured 2026-11-29 on the loaded 2-core machine (``--jobs 100 1000 --rounds 200``, the K80s
drained in every round), warm / cold p50: before #28 item 3 (every warm round handed over to
the normal round, ``fast+warm``) 3.8 / 3.5 ms at 100 jobs and 6.0 / 5.8 ms at 1,000; after
(``incremental+warm``) 1.3 / 3.8 ms and 2.2 / 6.1 ms, 0 uncertified rounds.

Run::

    python benchmarks/warm_drained.py --jobs 100 1000 --rounds 200
    python benchmarks/warm_drained.py --jobs 1000 --drain k80 --drain-from 50 --drain-to 100
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

import fairalloc as fa  # (first: the checkout on PYTHONPATH, before gavel_inputs adds its own)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gavel_inputs as gi  # noqa: E402  (the trace's own generator)


def trace(n: int, rounds: int, drain: tuple[str, ...], window: tuple[int, int],
          data: Path) -> list[str]:
    table = gi.load_table(data / gi.DATA_FILE)
    rng = np.random.default_rng(gi.SEED + 7)
    js = gi.job_set(table, n, gi.SEED)
    st = {f: getattr(js, f) for f in ("ids", "key", "T", "sf", "w", "total", "entity")}
    spec = dict(zip(gi.TYPES, js.cap.astype(int).tolist()))
    churn = max(1, round(n * gi.CHURN))
    nxt = n
    warm = fa.RoundPolicy("max_min_fairness")
    times: dict[str, list[float]] = {"warm": [], "cold": []}
    methods: collections.Counter[str] = collections.Counter()
    bad = 0
    for r in range(rounds):
        if r:
            keep = np.ones(st["ids"].size, dtype=bool)
            keep[rng.choice(keep.size, churn, replace=False)] = False
            new = gi.draw(table, churn, rng, nxt, js.entity_w.size)
            st = {f: np.concatenate([v[keep], new[f]]) for f, v in st.items()}
            nxt += churn
        ids = [gi.JobIdPair(int(i)) for i in st["ids"]]
        tp = {j: dict(zip(gi.TYPES, row)) for j, row in zip(ids, st["T"].tolist())}
        per = {"scale_factor": dict(zip(ids, st["sf"].tolist())),
               "weight": dict(zip(ids, st["w"].tolist()))}
        up = dict(spec, **dict.fromkeys(drain, 0)) if window[0] <= r < window[1] else spec
        c0 = time.thread_time()
        rc = fa.solve_round("max_min_fairness", tp, up, **per)
        c1 = time.thread_time()
        rw = warm.allocate(tp, up, **per)
        c2 = time.thread_time()
        times["cold"].append(c1 - c0)
        times["warm"].append(c2 - c1)
        methods[rw.stats.method] += 1
        bad += (not rc.certificate.ok) + (not all(c.ok for c in rw.reduced.stage_certificates))
    cells = [f"{np.percentile(np.array(times[m]) * 1e3, q):.1f}" for m in ("warm", "cold")
             for q in (50, 90)]
    shown = ", ".join(f"{m} {c}" for m, c in sorted(methods.items()))
    return [f"{n:,}", str(rounds), *cells, shown, str(bad)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=gi.DEFAULT_DATA)
    ap.add_argument("--jobs", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--drain", nargs="+", default=["k80"], choices=list(gi.TYPES))
    ap.add_argument("--drain-from", type=int, default=0)
    ap.add_argument("--drain-to", type=int, default=None, help="(default: every round)")
    args = ap.parse_args(argv)
    if not (args.data / gi.DATA_FILE).is_file():
        print(f"warm_drained: skipped: {args.data / gi.DATA_FILE} not found")
        return 0
    window = (args.drain_from, args.rounds if args.drain_to is None else args.drain_to)
    print(f"fairalloc from {Path(fa.__file__).parent.parent}; drained "
          f"{', '.join(args.drain)} in rounds {window[0]} .. {window[1] - 1}; thread CPU ms "
          "per round")
    print("| jobs | rounds | warm p50 | p90 | cold p50 | p90 | warm methods | bad |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.jobs:
        row = trace(n, args.rounds, tuple(args.drain), window, args.data)
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
