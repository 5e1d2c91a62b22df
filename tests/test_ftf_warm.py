"""Warm-started Dinkelbach sequences: HiGHS' simplex from the previous level LP's basis.

The backend capability (`HighsBackend.solve_warm`) on its own, and finish-time fairness with
it (``stats.path`` step ``exact-lp+warm``) against the same policy solved cold (a backend
instance the caller names is used as given, never warm-started).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend, LinearProgram, LPSolution, SolveStatus
from fairalloc.backends.highs import LPBasis
from fairalloc.errors import InputError
from fairalloc.throughput.stages import EXACT_LP, WARM_LP

REL = 1e-7  # agreement of two certified optima (gap_tol is 1e-6)


def _lp(A: np.ndarray, b: np.ndarray) -> LinearProgram:
    """``max sum x`` s.t. ``A x <= b``, ``x >= 0`` (as a minimisation)."""
    return LinearProgram.build(-np.ones(A.shape[1]), A, -np.inf, b, 0.0, np.inf)


# --- the backend capability ------------------------------------------------------------------
def test_warm_resolve_hand_checked():
    # max x + y s.t. x + 2y <= 4, 3x + y <= 6: (1.6, 1.2), 2.8; with 3x + y <= 7: (2, 1), 3
    be = HighsBackend()
    A = np.array([[1.0, 2.0], [3.0, 1.0]])
    first = be.solve_warm(_lp(A, np.array([4.0, 6.0])))
    assert first.extra["warm"] is False and isinstance(first.extra["basis"], LPBasis)
    assert first.objective == pytest.approx(-2.8)
    again = be.solve_warm(_lp(A, np.array([4.0, 7.0])), first.extra["basis"])
    assert again.extra["warm"] is True
    assert again.objective == pytest.approx(-3.0)
    np.testing.assert_allclose(again.x, [2.0, 1.0], atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 8), st.integers(2, 8))
def test_warm_resolve_equals_cold(seed, m, n):
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.1, 2.0, (m, n))
    b = rng.uniform(1.0, 5.0, m)
    be = HighsBackend()
    first = be.solve_warm(_lp(A, b))
    # change coefficients and bounds (same shape), then solve warm and cold
    A2 = A * rng.uniform(0.5, 1.5, A.shape)
    b2 = b * rng.uniform(0.5, 1.5, m)
    warm = be.solve_warm(_lp(A2, b2), first.extra["basis"])
    cold = be.solve_lp(_lp(A2, b2))
    assert warm.status == cold.status == SolveStatus.OPTIMAL
    assert warm.extra["warm"] is True
    assert warm.objective == pytest.approx(cold.objective, rel=REL)
    assert np.all(A2 @ warm.x <= b2 + 1e-9) and np.all(warm.x >= -1e-12)


def test_basis_of_another_shape_is_ignored():
    be = HighsBackend()
    small = be.solve_warm(_lp(np.array([[1.0, 1.0]]), np.array([1.0])))
    A = np.array([[1.0, 2.0, 1.0], [3.0, 1.0, 2.0]])
    sol = be.solve_warm(_lp(A, np.array([4.0, 6.0])), small.extra["basis"])
    cold = be.solve_lp(_lp(A, np.array([4.0, 6.0])))
    assert sol.extra["warm"] is False
    assert sol.objective == pytest.approx(cold.objective, rel=REL)


def test_bad_basis_and_milp_refused():
    be = HighsBackend()
    lp = _lp(np.array([[1.0, 1.0]]), np.array([1.0]))
    with pytest.raises(InputError, match="LPBasis"):
        be.solve_warm(lp, basis=[1, 0])  # type: ignore[arg-type]
    mip = LinearProgram.build(-np.ones(2), np.array([[1.0, 1.0]]), -np.inf, np.array([1.5]),
                              0.0, 1.0, integrality=np.array([True, True]))
    with pytest.raises(InputError, match="linear programs only"):
        be.solve_warm(mip)


def test_ipm_without_crossover_still_returns_a_basis():
    # solve_warm always ends HiGHS' interior point with crossover, so a basis comes back
    be = HighsBackend(solver="ipm", crossover=False)
    sol = be.solve_warm(_lp(np.array([[1.0, 2.0], [3.0, 1.0]]), np.array([4.0, 6.0])))
    assert isinstance(sol.extra.get("basis"), LPBasis)
    assert sol.objective == pytest.approx(-2.8)


# --- finish-time fairness ----------------------------------------------------------------------
def _instance(seed: int, n: int, models: int, k: int) -> tuple[fa.Jobs, fa.Cluster]:
    """``n`` jobs whose rows are drawn from ``models`` model types (ties when models < n)."""
    rng = np.random.default_rng(seed)
    rows = rng.uniform(0.5, 4.0, (models, k))
    T = rows[rng.integers(0, models, n)]
    steps = rng.choice([100.0, 400.0, 1000.0], n)
    elapsed = rng.choice([0.0, 30.0, 200.0], n)
    cluster = fa.Cluster({f"t{j}": int(w) for j, w in enumerate(rng.integers(1, 5, k))})
    return fa.Jobs(T, steps_remaining=steps, elapsed=elapsed), cluster


def test_ftf_path_records_warm_steps_hand_checked():
    jobs, cluster = _instance(0, 12, 12, 2)
    warm = fa.finish_time_fairness(jobs, cluster)
    cold = fa.finish_time_fairness(jobs, cluster, backend=HighsBackend())
    # the first Dinkelbach LP is solved cold (it returns the basis), every later one warm
    steps = [s for s in warm.stats.path if s in (EXACT_LP, WARM_LP)]
    assert steps[0] == EXACT_LP and steps.count(WARM_LP) >= 1
    assert warm.stats.path.index(WARM_LP) == warm.stats.path.index(EXACT_LP) + 2
    assert WARM_LP not in cold.stats.path
    assert warm.certificate.ok and cold.certificate.ok
    assert warm.objective == pytest.approx(cold.objective, rel=REL)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 40), st.integers(1, 6), st.integers(1, 3))
def test_ftf_warm_equals_cold(seed, n, models, k):
    jobs, cluster = _instance(seed, n, models, k)
    warm = fa.finish_time_fairness(jobs, cluster)
    cold = fa.finish_time_fairness(jobs, cluster, backend=HighsBackend())
    assert warm.certificate.ok and cold.certificate.ok
    assert warm.objective == pytest.approx(cold.objective, rel=REL)
    # the metric is the certified rho of every job: no job above the optimum
    assert np.max(warm.metric) <= warm.objective * (1 + REL)
    assert WARM_LP not in cold.stats.path
    exact = [s for s in warm.stats.path if s in (EXACT_LP, WARM_LP)]
    if WARM_LP in exact:  # a warm step follows the cold solve that gave its basis
        assert exact[0] == EXACT_LP


def test_failed_warm_solve_falls_back_to_the_cold_lp(monkeypatch):
    jobs, cluster = _instance(0, 12, 12, 2)
    cold = fa.finish_time_fairness(jobs, cluster, backend=HighsBackend())
    real = HighsBackend.solve_warm

    def fail_when_warm(self, lp, basis=None, **options):
        if basis is None:
            return real(self, lp, basis)
        return LPSolution(SolveStatus.ERROR, None, float("nan"), raw_status="forced",
                          backend="highs")

    monkeypatch.setattr(HighsBackend, "solve_warm", fail_when_warm)
    r = fa.finish_time_fairness(jobs, cluster)
    assert r.certificate.ok
    assert r.objective == pytest.approx(cold.objective, rel=REL)
    assert any(f.startswith(f"{WARM_LP}->{EXACT_LP}: the warm-startable solve failed")
               for f in r.stats.fallbacks)
    # the basis is dropped after a failure: the next level LP is solved cold again
    assert r.stats.path.count(WARM_LP) <= r.stats.path.count(EXACT_LP)
