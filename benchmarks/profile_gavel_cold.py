"""Where one cold call through the Gavel adapter spends its time (#28).

The call is `benchmarks/gavel_inputs.py`'s ``adapter_call(POLICY, ...)`` (``--policy``:
``max-min`` (default), ``ftf`` or ``makespan``): a new Gavel policy object per call,
Gavel-drawn jobs, ``JobIdPair`` keys. Each
named step is timed with ``time.thread_time_ns`` around the library function that does it
(a wrapper installed by this script only, removed at the end; a step the library no longer
has is left out), medians over ``--reps`` calls after 5 untimed ones. Nested steps are
included in their callers' times (``(total)`` rows); ``outside the reduced solve`` is the
call less `_solve_reduced` (dict readers, per-job state, result and output dicts). Max-min
only, also timed: the same call with
``work_conserving=False`` (the level stage only, as Gavel's ``MaxMinFairnessPolicyWithPerf``
solves: its one cvxpy program has no work-conserving stage) and with ``work_conserving=True``
given explicitly (both run the normal round, not the incremental one).

Run: ``python benchmarks/profile_gavel_cold.py --jobs 256 2048 [--policy ftf] [--data DIR]
[--reps 60]``.
Timing on a loaded machine: thread CPU, medians; compare runs back to back.
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import gavel_inputs as gi  # noqa: E402

#: (module, owner attribute or None, function, label): the steps timed
STEPS = (
    ("fairalloc.rounds.api", "RoundPolicy", "allocate", "RoundPolicy.allocate (total)"),
    ("fairalloc.rounds.api", None, "_matrix", "dicts -> arrays (_matrix)"),
    ("fairalloc.rounds.api", None, "_in_job_order", "per-job dicts (_in_job_order)"),
    ("fairalloc.rounds.state", "IsolatedTime", "prepare", "isolated times (prepare)"),
    ("fairalloc.rounds.state", "IsolatedTime", "commit", "isolated times (commit)"),
    ("fairalloc.rounds.api", None, "_solve_arrays", "arrays -> result (_solve_arrays)"),
    ("fairalloc.data", "Jobs", "__init__", "Jobs checks"),
    ("fairalloc.rounds.api", None, "_solve_reduced", "the reduced solve (_solve_reduced)"),
    ("fairalloc.integrations.gavel_base", None, "pair_keys", "pair-key check (pair_keys)"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "solve", "incremental round (total)"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "_new_model", "new HiGHS models"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "_append", "classes into the LPs"),
    ("fairalloc.rounds.incremental", None, "_classes", "symmetry classes"),
    ("fairalloc.rounds.incremental", "IncrementalMaxMin", "_answer", "solves + answer (total)"),
    ("fairalloc.backends.kept", "KeptLP", "solve", "HiGHS runs (both stages)"),
    ("fairalloc.rounds.incremental", None, "_certificates", "certificates (both stages)"),
    ("fairalloc.rounds.result", "RoundResult", "__post_init__", "RoundResult checks"),
)


def _install(acc: dict[str, int], steps: tuple[tuple[str, str | None, str, str], ...] = STEPS
             ) -> list[tuple[Any, str, Any]]:
    """Thread-CPU timing wrappers (ns into ``acc`` by label) around ``steps`` (module, owner
    attribute or None, function, label; those that exist); the undo list."""
    import importlib

    undo = []
    for modname, owner, fname, label in steps:
        obj: Any = importlib.import_module(modname)
        if owner is not None:
            obj = getattr(obj, owner, None)
        f = getattr(obj, fname, None) if obj is not None else None
        if f is None:
            continue

        def wrapped(*a: Any, _f: Any = f, _label: str = label, **k: Any) -> Any:
            t0 = time.thread_time_ns()
            try:
                return _f(*a, **k)
            finally:
                acc[_label] += time.thread_time_ns() - t0

        functools.update_wrapper(wrapped, f)
        setattr(obj, fname, wrapped)
        undo.append((obj, fname, f))
    return undo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[256])
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--policy", choices=("max-min", "ftf", "makespan"), default="max-min")
    ap.add_argument("--data", type=Path, default=gi.DEFAULT_DATA)
    args = ap.parse_args(argv)
    path = args.data / "simulation_throughputs.json"
    if not path.exists():
        print(f"profile_gavel_cold: no Gavel data at {path}; skipped")
        return 0
    from fairalloc.integrations import gavel

    table = gi.load_table(path)
    for n in args.jobs:
        g = gi.job_set(table, n, gi.SEED)
        g = gi.gavel_args(g)
        acc: dict[str, int] = collections.defaultdict(int)
        per_step: dict[str, list[int]] = collections.defaultdict(list)
        totals = []
        undo = _install(acc)
        try:
            for i in range(5 + args.reps):
                acc.clear()
                t0 = time.thread_time_ns()
                fn, p = gi.adapter_call(args.policy, g)
                fn()
                if i >= 5:
                    totals.append(time.thread_time_ns() - t0)
                    for label, v in acc.items():
                        per_step[label].append(v)
        finally:
            for obj, fname, f in reversed(undo):
                setattr(obj, fname, f)
        r = p.last_result
        print(f"\n{args.policy}, {n} jobs, {r.stats.classes} classes, "
              f"{r.stats.iterations} simplex iterations, "
              f"path {'/'.join(r.stats.path)}: cold adapter call "
              f"{1e-6 * np.median(totals):.3f} ms thread CPU (median of {args.reps})")
        for _, _, _, label in STEPS:
            if label in per_step:
                print(f"  {label:34s} {1e-6 * np.median(per_step[label]):7.3f} ms")
        outside = np.subtract(totals, per_step[STEPS[0][3]]) if STEPS[0][3] in per_step else []
        if len(outside):
            print(f"  {'outside allocate (pair check, dicts out)':34s} "
                  f"{1e-6 * np.median(outside):7.3f} ms")
        solve = "the reduced solve (_solve_reduced)"
        if solve in per_step:
            print(f"  {'outside the reduced solve':34s} "
                  f"{1e-6 * np.median(np.subtract(totals, per_step[solve])):7.3f} ms")
        if args.policy != "max-min":
            continue
        for label, kw in (("work_conserving=False (Gavel's one stage)", {"work_conserving": False}),
                          ("work_conserving=True (explicit)", {"work_conserving": True})):
            times = []
            for i in range(5 + args.reps):
                t0 = time.thread_time_ns()
                q = gavel.policy("max_min_fairness_perf", **kw)
                q.get_allocation(g["tp"], g["sf"], g["w"], g["spec"])
                if i >= 5:
                    times.append(time.thread_time_ns() - t0)
            rq = q.last_result
            print(f"  {label:42s} {1e-6 * np.median(times):7.3f} ms "
                  f"(method {rq.stats.method}, level {rq.objective:.10g} vs default "
                  f"{r.objective:.10g}, certified {rq.certificate.ok})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
