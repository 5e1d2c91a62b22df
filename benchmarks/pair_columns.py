"""Gavel's packed water-filling (and finish-time fairness) with pair columns by column
generation (`fairalloc.throughput.pair_columns`) against every level LP over every column.

Gavel's jobs and pair keys as `benchmarks/gavel_inputs.py` builds them (its instance, seed and
pair cap), through the ``*_packed`` adapters; the whole-column path is the same call with
``Tuning(pair_columns_min_columns=0)`` as the family's default (the adapters take no
``tuning``; this script swaps ``fairalloc.throughput.tuning.DEFAULT_TUNING``, which
``as_tuning(None)`` reads, and checks that no ``pair-columns`` step ran). The two run
alternately in one process, each timed by thread CPU (`time.thread_time`), the median of
``--repeats``; the floors (water-filling) and objectives (finish-time fairness) must agree
within the bottleneck thresholds.

    PYTHONPATH=$PWD python benchmarks/pair_columns.py --jobs 100 256 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gavel_inputs as gi  # noqa: E402

import fairalloc.throughput.tuning as tuning_module  # noqa: E402
from fairalloc.integrations import gavel  # noqa: E402
from fairalloc.throughput import Tuning  # noqa: E402
from fairalloc.throughput.max_min import BOTTLENECK_TOL  # noqa: E402

WHOLE = Tuning(pair_columns_min_columns=0)
NAMES = ("max_min_fairness_water_filling_packed", "finish_time_fairness_packed")


def _once(name: str, g: object, tuning: Tuning) -> tuple[float, object]:
    p = gavel.policy(name, seed=gi.SEED)
    call = gi.name_call(name, p, g)
    default = tuning_module.DEFAULT_TUNING
    tuning_module.DEFAULT_TUNING = tuning
    try:
        t0 = time.thread_time()
        call()
        t = time.thread_time() - t0
    finally:
        tuning_module.DEFAULT_TUNING = default
    r = getattr(p, "packing_result", None) or p.last_result
    assert tuning is not WHOLE or "pair-columns" not in r.stats.path, r.stats.path
    return t, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[100, 256])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--policy", nargs="+", default=list(NAMES), choices=NAMES)
    ap.add_argument("--min-columns", type=int, default=None,
                    help="the new path's pair_columns_min_columns (default: the Tuning's)")
    args = ap.parse_args()
    new_tuning = (tuning_module.DEFAULT_TUNING if args.min_columns is None
                  else Tuning(pair_columns_min_columns=args.min_columns))
    ctx = gi.Context(gi.load_table(gi.DEFAULT_DATA / gi.DATA_FILE), gi.SEED, gi.MAX_PAIRS,
                     60.0, {}, False)
    print("| policy | jobs | whole columns (s) | pair columns (s) | ratio | LPs | agree | path |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.jobs:
        _, _, g, _ = gi.instance(ctx, n)
        for name in args.policy:
            old, new = [], []
            for _ in range(args.repeats):
                t, ra = _once(name, g, WHOLE)
                old.append(t)
                t, rb = _once(name, g, new_tuning)
                new.append(t)
            if name.startswith("max_min"):
                fa_, fb = np.asarray(ra.level_floors), np.asarray(rb.level_floors)
                agree = bool(np.all(np.abs(fa_ - fb) <= BOTTLENECK_TOL * np.maximum(1.0, fa_)))
            else:
                agree = bool(abs(ra.objective - rb.objective)
                             <= BOTTLENECK_TOL * max(1.0, abs(ra.objective)))
            mo, mn = statistics.median(old), statistics.median(new)
            print(f"| {name} | {n} | {mo:.3f} | {mn:.3f} | {mo / mn:.1f}x | "
                  f"{ra.stats.solves} / {rb.stats.solves} | {agree and rb.certificate.ok} | "
                  f"{'pair-columns' if 'pair-columns' in rb.stats.path else 'whole'} |")


if __name__ == "__main__":
    main()
