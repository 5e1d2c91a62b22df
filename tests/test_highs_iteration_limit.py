"""Every HiGHS LP solve has a simplex iteration limit (a work limit, never a time limit).

Fuzz seed 2727 (target "water_filling (entities)"): a single-level water-filling of 20 jobs x 9
types never returned. Its level-9 LP (59 x 112, coefficients 3e-8..30, as fairalloc passes it
to HiGHS: dual simplex, no presolve, crossover basis kept) reaches an optimum in 56 dual simplex
iterations, then HiGHS' clean-up of a 2e-7 primal infeasibility cycles for millions of
iterations. The limit makes that solve fail, and the stage plan hands over to its next exact
strategy.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fairalloc.backends import LinearProgram, SolveStatus, highs

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "water_filling_hang_2727.npz"
#: a guard only, so that the test fails instead of hanging where the limit is missing (HiGHS
#: stops on it with "Time limit reached"); the limit itself counts iterations
_GUARD_S = 20.0


def _stalling_lp() -> LinearProgram:
    d = np.load(DATA)
    A = sp.csr_matrix((d["lp_data"], d["lp_indices"], d["lp_indptr"]),
                      shape=tuple(d["lp_shape"]))
    return LinearProgram.build(d["lp_c"], A, d["lp_row_lower"], d["lp_row_upper"],
                               d["lp_col_lower"], d["lp_col_upper"])


def test_limit_scales_with_the_model() -> None:
    assert highs.simplex_iteration_limit(10, 20) == 10_000
    assert highs.simplex_iteration_limit(1000, 3000) == 200_000


def test_cycling_simplex_stops_at_the_iteration_limit() -> None:
    lp = _stalling_lp()
    sol = highs.HighsBackend(presolve=False).solve_lp(lp, time_limit=_GUARD_S, keep_basis=True)
    assert sol.raw_status == "Iteration limit reached"
    assert sol.status in (SolveStatus.ITERATION_LIMIT, SolveStatus.ERROR)
    assert sol.iterations <= highs.simplex_iteration_limit(*lp.shape)


def test_hang_case_answers_certified() -> None:
    # in a subprocess with a timeout: without the limit the call never returns (C code that
    # no in-process timeout interrupts)
    script = textwrap.dedent(f"""
        import numpy as np
        import fairalloc as fa
        d = np.load({str(DATA)!r})
        jobs = fa.Jobs(d["throughput"], scale_factor=d["scale_factor"], weight=d["weight"],
                       elapsed=d["elapsed"])
        cl = fa.Cluster(dict(zip(d["worker_names"].tolist(), d["worker_counts"].tolist())))
        r = fa.max_min_fairness(jobs, cl, water_filling=True, method="auto", backend="highs",
                                gap_tol=1e-6)
        print(r.certificate.ok)
        print(any("Iteration limit reached" in f for f in r.stats.fallbacks))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env=None, check=True)
    assert out.stdout.split() == ["True", "True"]
