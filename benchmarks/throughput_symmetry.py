"""Exact symmetry reduction of the throughput policies (#15 item 1): before / after, one run.

For the ``identical`` and ``ties`` instance families of ``benchmarks/families.py`` (rows drawn
from ~20 model types, scale factors and weights repeating) this times, in the same process and
run, each policy with its work-conserving stage:

* ``after``: fairalloc as called by users (the symmetry reduction on, ``method="auto"``);
* ``before``: the same builder with ``solve(symmetry=False)`` (job by job, as before #15);
* the strongest plain reference of ``benchmarks/families.py``: Gavel's vectorised cvxpy program
  with ECOS (Gavel's default) and with Clarabel (``--no-reference`` skips them);

and prints seconds, the speed-ups (before / after, reference / after), the relative objective
difference from the job-by-job solve, the number of classes and the certificate verdicts (every
stage; both are certificates of the original, unreduced program).

Run: ``python benchmarks/throughput_symmetry.py [--sizes 4096 16384] [--family identical ties]
[--policy max-min ftf] [--no-reference]``. Timings on a shared machine are noisy: compare the
ratios of one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from families import _data, cvxpy_ftf, cvxpy_max_min, make_instance  # noqa: E402

import fairalloc as fa  # noqa: E402

BUILDERS = {"max-min": fa.MaxMinFairness, "ftf": fa.FinishTimeFairness}
REFERENCES = {"max-min": cvxpy_max_min, "ftf": cvxpy_ftf}
WARM_N = 64  # jobs of the warm-up instance (imports, cvxpy compilation paths)


def _ours(policy: str, jobs: Any, cluster: Any, symmetry: bool) -> tuple[float, Any]:
    t = time.perf_counter()
    r = BUILDERS[policy](jobs, cluster).solve(symmetry=symmetry)
    return time.perf_counter() - t, r


def _reference(policy: str, jobs: Any, cluster: Any, solver: str) -> tuple[float, list[float]]:
    t = time.perf_counter()
    d = _data(jobs, cluster)
    vals = REFERENCES[policy](d, solver, True)
    return time.perf_counter() - t, vals


def _verdict(r: Any) -> str:
    return "/".join("ok" if c.ok else "FAIL" for c in r.stage_certificates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 16384])
    ap.add_argument("--family", nargs="+", default=["identical", "ties"])
    ap.add_argument("--policy", nargs="+", default=["max-min", "ftf"], choices=list(BUILDERS))
    ap.add_argument("--no-reference", action="store_true")
    args = ap.parse_args()
    refs = () if args.no_reference else ("ECOS", "Clarabel")
    for policy in args.policy:  # warm-up: imports and first-call costs of every solver
        jobs, cluster = make_instance("ties", WARM_N)
        _ours(policy, jobs, cluster, True)
        _ours(policy, jobs, cluster, False)
        for solver in refs:
            _reference(policy, jobs, cluster, solver)
    head = (f"{'policy':<8}{'family':<10}{'jobs':>7}{'classes':>8}{'after s':>9}{'before s':>10}"
            f"{'x before':>9}" + "".join(f"{s + ' s':>11}" for s in refs)
            + (f"{'x ref':>7}" if refs else "") + f"{'|dObj|':>10}  certificates")
    print(head)
    print("-" * len(head))
    for policy in args.policy:
        for family in args.family:
            for n in args.sizes:
                jobs, cluster = make_instance(family, n)
                t_after, after = _ours(policy, jobs, cluster, True)
                t_before, before = _ours(policy, jobs, cluster, False)
                t_refs = [_reference(policy, jobs, cluster, s)[0] for s in refs]
                d_obj = abs(after.objective - before.objective) / max(abs(before.objective),
                                                                      1e-300)
                line = (f"{policy:<8}{family:<10}{n:>7}{after.stats.classes or n:>8}"
                        f"{t_after:>9.3f}{t_before:>10.3f}{t_before / t_after:>9.1f}"
                        + "".join(f"{t:>11.3f}" for t in t_refs)
                        + (f"{min(t_refs) / t_after:>7.1f}" if refs else "")
                        + f"{d_obj:>10.1e}  {_verdict(after)} / {_verdict(before)}")
                print(line, flush=True)


if __name__ == "__main__":
    main()
