"""The cold per-round path of the two-stage throughput policies (issue #28): small whole stage
LPs go to HiGHS without its presolve (`Tuning.presolve_min_columns`), and a work-conserving LP
starts from the basis of the level LP it follows (``exact-lp+from-level``) from
`Tuning.from_level_min_columns` columns (below, cold is faster). Neither changes an answer:
every stage is certified on the original program, and the answers equal those of the cold
path (``Tuning(warm_start=False)``) to the certificates' tolerances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.stages import backend_for
from fairalloc.throughput.strategies import EXACT_LP, FROM_LEVEL_LP
from fairalloc.tolerances import GAP_TOL

COLD = Tuning(warm_start=False)
#: the work-conserving LP from the level basis at every size
FROM_LEVEL = Tuning(from_level_min_columns=0)


def _instance(seed: int, n: int, k: int, repeat: bool) -> tuple[fa.Jobs, fa.Cluster]:
    rng = np.random.default_rng(seed)
    T = rng.uniform(1.0, 10.0, (n, k))
    T[rng.random((n, k)) < 0.2] = 0.0
    T[np.arange(n), rng.integers(0, k, n)] = rng.uniform(1.0, 10.0, n)
    sf = rng.choice([1, 1, 2, 4], n)
    w = rng.choice([0.5, 1.0, 2.0], n)
    if repeat:  # exact repeats: the symmetry-reduced program (as Gavel's models give)
        pick = rng.integers(0, max(2, n // 4), n)
        T, sf, w = T[pick], sf[pick], w[pick]
    cl = fa.Cluster({f"t{j}": int(rng.integers(4, max(5, n // 2))) for j in range(k)})
    return fa.Jobs(T, scale_factor=sf, weight=w), cl


def test_small_whole_lps_skip_presolve():
    assert backend_for("highs", 500).presolve is False
    assert backend_for("highs", 500, Tuning(presolve_min_columns=0)).presolve is True
    assert backend_for("highs", 10**5).solver == "ipm"


def test_work_conserving_lp_starts_from_the_level_basis():
    jobs, cl = _instance(3, 60, 3, repeat=True)
    r = fa.max_min_fairness(jobs, cl, tuning=FROM_LEVEL)
    assert r.stats.path[-2:] == (EXACT_LP, FROM_LEVEL_LP)
    assert all(c.ok for c in r.stage_certificates)
    cold = fa.max_min_fairness(jobs, cl, tuning=COLD)
    assert FROM_LEVEL_LP not in cold.stats.path
    # fewer pivots than the cold simplex (142 against 227 on Gavel's 2,048 jobs)
    assert r.stats.iterations < cold.stats.iterations


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(2, 40), st.integers(1, 4), st.booleans(),
       st.sampled_from(["max-min", "makespan"]))
def test_from_level_path_equals_the_cold_path(seed, n, k, repeat, policy):
    jobs, cl = _instance(seed, n, k, repeat)
    if policy == "makespan":
        jobs = fa.Jobs(jobs.throughput, scale_factor=jobs.scale_factor,
                       steps_remaining=np.random.default_rng(seed).uniform(10.0, 1e3, n))
        solve = fa.min_makespan
    else:
        solve = fa.max_min_fairness
    fast, cold = solve(jobs, cl, tuning=FROM_LEVEL), solve(jobs, cl, tuning=COLD)
    assert all(c.ok for c in fast.stage_certificates)
    assert all(c.ok for c in cold.stage_certificates)
    if len(fast.stage_certificates) > 1:  # (the work-conserving stage ran; makespan's is
        # always solved cold: tests/test_makespan_structured.py)
        assert (FROM_LEVEL_LP in fast.stats.path) == (policy == "max-min")
    # both stages' certified values agree to the certificates' relative gap
    for a, b in zip(fast.stage_certificates, cold.stage_certificates, strict=True):
        scale = max(abs(a.primal_value), abs(b.primal_value), a.scale or 0.0, 1e-300)
        assert abs(a.primal_value - b.primal_value) <= 2 * GAP_TOL * scale
    assert fast.objective == pytest.approx(cold.objective, rel=2 * GAP_TOL)


def test_small_work_conserving_lps_are_solved_cold():
    """Below `Tuning.from_level_min_columns` columns the work-conserving LP is solved cold
    (a level basis first factored and repaired costs more: Gavel's 256 jobs, 267-291 columns,
    0.88-1.28 ms from the level basis against 0.59-0.94 ms cold); from there on it starts from
    the level LP's basis. Both certified, the same optimum to the certificates' gap."""
    jobs, cl = _instance(7, 60, 3, repeat=False)  # 60 jobs x 3 types: under 400 columns
    small = fa.max_min_fairness(jobs, cl)
    assert small.stats.path == (EXACT_LP,) and len(small.stage_certificates) == 2
    assert all(c.ok for c in small.stage_certificates)
    warm = fa.max_min_fairness(jobs, cl, tuning=FROM_LEVEL)
    assert warm.stats.path == (EXACT_LP, FROM_LEVEL_LP)
    a, b = small.stage_certificates[1], warm.stage_certificates[1]
    assert a.primal_value == pytest.approx(b.primal_value, rel=2 * GAP_TOL)
    cols = int((small.allocation > 0).size)  # (an upper bound on the LP's columns)
    at = fa.max_min_fairness(jobs, cl, tuning=Tuning(from_level_min_columns=cols // 2))
    assert at.stats.path == (EXACT_LP, FROM_LEVEL_LP)


def test_a_grown_master_starts_from_its_predecessors_basis():
    """`LPBasis.carried(..., repair=False)` (the floor stage's restricted masters, which only
    gain jobs: rows and columns): the grown LP solved from the carried basis has the cold
    optimum, in fewer pivots; a basis that would lose a basic variable is refused."""
    from fairalloc.backends import HighsBackend, LinearProgram

    rng = np.random.default_rng(7)
    m, n = 40, 60
    A = rng.uniform(0.0, 1.0, (m, n)) * (rng.random((m, n)) < 0.3)
    c = -rng.uniform(0.5, 1.5, n)
    be = HighsBackend(solver="simplex", presolve=False)
    small = LinearProgram.build(c[:50], A[:30, :50], -np.inf, np.ones(30), 0.0, 1.0)
    basis = be.solve_lp(small, keep_basis=True).extra["basis"]
    grown = LinearProgram.build(c, A, -np.inf, np.ones(m), 0.0, 1.0)
    rows = np.r_[np.arange(30), np.full(m - 30, -1)]
    cols = np.r_[np.arange(50), np.full(n - 50, -1)]
    warm_basis = basis.carried(cols, rows, repair=False)
    assert warm_basis is not None and warm_basis.shape == (m, n)
    cold, warm = be.solve_lp(grown), be.solve_lp(grown, basis=warm_basis)
    assert warm.status == cold.status == "optimal"
    assert warm.objective == pytest.approx(cold.objective, rel=1e-9)
    assert warm.iterations < cold.iterations
    # dropping a basic column of the small LP leaves one basic variable too few: refused
    basic_col = next(j for j, st_ in enumerate(basis.raw.col_status) if st_.name == "kBasic")
    assert basis.carried(np.delete(np.arange(50), basic_col), np.arange(30), repair=False) is None


def test_sixty_four_types_go_straight_to_the_whole_lp():
    """#28: at 64 types (``benchmarks/families.py`` many-types-64, 4,096 jobs) the structured
    level's sampled Newton phase found no balance and cost a third of the time before the
    whole LP (0.52x one HiGHS interior-point solve): above ``structured_max_types`` (48) the
    stage declines before any Newton work (main: its Newton search ran and found no balance)."""
    rng = np.random.default_rng(2)
    n, k = 320, 64
    jobs = fa.Jobs(rng.lognormal(0.0, 1.0, (n, k)))
    cl = fa.Cluster({f"t{j}": int(rng.integers(8, 65)) for j in range(k)})
    r = fa.max_min_fairness(jobs, cl, work_conserving=False)
    assert r.certificate.ok
    assert "newton-sample" not in r.stats.path
    assert r.stats.fallbacks[0].startswith(f"structured-level->{EXACT_LP}: many types (k = 64")
