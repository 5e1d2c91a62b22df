"""Edge inputs on the round fast paths, against the normal round (edge38).

Each case is a 5-round trace (jobs arriving and leaving) solved by a warm
``RoundPolicy(policy)`` (the incremental rounds) and by ``RoundPolicy(policy, method="fast")``
(the normal round, every round), with the same inputs: throughputs scaled by 1e-9 / 1e9,
float32 rates, a drained type, every type drained, one job, no job, a job with no rate, a job
whose gang fits no type, identical and near-identical jobs, weights 1e12 / 1e-12 / mixed,
numpy scale factors and (finish-time fairness) steps remaining 1e-6 / 1e12. A round is a
problem when its certificate fails, its objective differs from the normal round's by more
than the certificate's ``GAP_TOL`` (relative), an input was changed, or either path raises
(every case here is valid). Then each invalid entry (NaN, inf, negative, bool, text, None,
a list, complex) in the rates, workers, weights and scale factors must be a
`fairalloc.InputError` from `fairalloc.solve_round` and the normal round alike.

Measured 2026-11-29 (``python benchmarks/edge_inputs.py``): on main 5fc78d6 the incremental
max-min round certified level 0 (a job starved) with weights 1e12 (normal round: 1.1e-12);
after edge38 no problem is listed. The warm finish-time fairness rounds differ from the
normal ones by up to 7.9e-7 relative (within ``GAP_TOL`` = 1e-6).

Run::

    python benchmarks/edge_inputs.py
    python benchmarks/edge_inputs.py --policy max_min_fairness --case w1e12 plain
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any

import numpy as np

import fairalloc as fa
from fairalloc.tolerances import GAP_TOL

TYPES = ("v100", "p100", "k80")
WORKERS = {"v100": 2, "p100": 2, "k80": 2}
N = 12
SETS = (range(0, 6), range(1, 8), range(3, 9), range(4, 12), range(2, 7))
CASES = ("plain", "drain-k80-mid", "all-drained-r2", "one-job", "zero-jobs-r2", "identical",
         "near-identical", "x1e-9", "x1e9", "zero-row", "float32", "w1e12", "w1e-12",
         "wmixed", "sf-unfit", "sf-int64", "steps-tiny", "steps-huge")
POLICIES = ("max_min_fairness", "finish_time_fairness")
BAD = (float("nan"), float("inf"), -1.0, True, "1.5", None, [1.0], 1 + 0j)


def rates(case: str) -> np.ndarray:
    T = np.round(np.random.default_rng(1).uniform(0.5, 4.0, (N, len(TYPES))), 3)
    if case == "identical":
        T[:] = T[0]
    elif case == "near-identical":
        T[:] = T[0] * (1 + 1e-12 * np.arange(N))[:, None]
    elif case in ("x1e-9", "x1e9"):
        T = T * float(case[1:])
    elif case == "zero-row":
        T[3] = 0.0
    return T


def round_inputs(case: str, policy: str, r: int, ids: list[int]) -> tuple[Any, ...]:
    workers = dict(WORKERS)
    if case == "drain-k80-mid" and r in (1, 2):
        workers["k80"] = 0
    if case == "all-drained-r2" and r == 2:
        workers = dict.fromkeys(WORKERS, 0)
    ids = ids[:1] if case == "one-job" else [] if (case == "zero-jobs-r2" and r == 2) else ids
    T = rates(case)
    conv: Any = np.float32 if case == "float32" else float
    tp = {j: {t: conv(T[j, k]) for k, t in enumerate(TYPES)} for j in ids}
    kw: dict[str, Any] = {}
    weight = {"w1e12": 1e12, "w1e-12": 1e-12}.get(case)
    if weight is not None:
        kw["weight"] = dict.fromkeys(ids, weight)
    if case == "wmixed":
        kw["weight"] = {j: (1e6 if j % 2 else 1.0) for j in ids}
    if case == "sf-unfit":
        kw["scale_factor"] = {j: (4 if j == 5 else 1) for j in ids}
    if case == "sf-int64":
        kw["scale_factor"] = {j: np.int64(1 + j % 2) for j in ids}
    if policy == "finish_time_fairness":
        steps = {"steps-tiny": 1e-6, "steps-huge": 1e12}.get(case, 1000.0)
        kw["steps_remaining"] = {j: steps * (j + 1) for j in ids}
        kw["elapsed"] = {j: 3.0 * j for j in ids}
    return tp, workers, kw


def traces(policies: list[str], cases: list[str]) -> list[str]:
    problems = []
    for policy in policies:
        for case in cases:
            if case.startswith("steps") and policy != "finish_time_fairness":
                continue
            fast = fa.RoundPolicy(policy)
            normal = fa.RoundPolicy(policy, method="fast")
            for r, ids in enumerate(SETS):
                tp, workers, kw = round_inputs(case, policy, r, list(ids))
                before = copy.deepcopy((tp, workers, kw))
                where = f"{policy} {case} round {r}"
                try:
                    a = fast.allocate(tp, workers, **kw)
                    b = normal.allocate(tp, workers, **kw)
                except Exception as exc:  # (every input here is valid)
                    problems.append(f"{where}: {type(exc).__name__}: {exc}")
                    continue
                if copy.deepcopy((tp, workers, kw)) != before:
                    problems.append(f"{where}: an input was changed")
                scale = max(abs(b.objective), np.finfo(float).tiny)
                d = abs(a.objective - b.objective) / scale
                print(f"{policy[:10]:10s} {case:15s} r{r} {len(ids):3d} jobs "
                      f"{a.stats.method:17s} objective {a.objective:.9g} / {b.objective:.9g} "
                      f"(rel {d:.1e}) certified {a.certificate.ok}")
                if not a.certificate.ok or not d <= GAP_TOL:
                    problems.append(f"{where}: objective {a.objective!r} vs the normal "
                                    f"round's {b.objective!r}, certified {a.certificate.ok}")
    return problems


def invalid_entries() -> list[str]:
    problems = []
    T = rates("plain")[:6]
    for name in ("throughput", "workers", "weight", "scale_factor"):
        for bad in BAD:
            tp = {j: dict(zip(TYPES, row)) for j, row in enumerate(T.tolist())}
            workers: dict[str, Any] = dict(WORKERS)
            kw: dict[str, Any] = {}
            if name == "throughput":
                tp[3]["p100"] = bad
            elif name == "workers":
                workers["k80"] = bad
            else:
                kw[name] = {j: (bad if j == 4 else 1) for j in tp}
            for method in (None, "fast"):
                try:
                    fa.solve_round("max_min_fairness", tp, workers, method=method, **kw)
                except fa.InputError as exc:
                    if exc.argument != name and not (name == "workers" and exc.argument):
                        problems.append(f"{name}={bad!r} ({method}): names {exc.argument}")
                except Exception as exc:
                    problems.append(f"{name}={bad!r} ({method}): {type(exc).__name__}: {exc}")
                else:
                    problems.append(f"{name}={bad!r} ({method}): accepted")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", nargs="+", default=list(POLICIES), choices=POLICIES)
    ap.add_argument("--case", nargs="+", default=list(CASES), choices=CASES)
    args = ap.parse_args(argv)
    problems = traces(args.policy, args.case) + invalid_entries()
    print(f"\n{len(problems)} problem(s)")
    for p in problems:
        print(" -", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
