"""Warm-started Dinkelbach sequences: HiGHS' simplex from the previous level LP's basis.

The backend capability (``solve_lp(..., basis=, keep_basis=)``, capability ``basis``) on its
own, and finish-time fairness with it (``stats.path`` step ``exact-lp+warm``) against the same
policy solved cold (``Tuning(warm_start=False)``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend, LinearProgram, LPBasis, LPSolution, SolveStatus
from fairalloc.errors import InputError
from fairalloc.throughput import Tuning
from fairalloc.throughput.strategies import EXACT_LP, WARM_LP

COLD = Tuning(warm_start=False)

REL = 1e-7  # agreement of two certified optima (gap_tol is 1e-6)


def _lp(A: np.ndarray, b: np.ndarray) -> LinearProgram:
    """``max sum x`` s.t. ``A x <= b``, ``x >= 0`` (as a minimisation)."""
    return LinearProgram.build(-np.ones(A.shape[1]), A, -np.inf, b, 0.0, np.inf)


# --- the backend capability ------------------------------------------------------------------
def test_warm_resolve_hand_checked():
    # max x + y s.t. x + 2y <= 4, 3x + y <= 6: (1.6, 1.2), 2.8; with 3x + y <= 7: (2, 1), 3
    be = HighsBackend()
    A = np.array([[1.0, 2.0], [3.0, 1.0]])
    first = be.solve_lp(_lp(A, np.array([4.0, 6.0])), keep_basis=True)
    assert first.extra["warm"] is False and isinstance(first.extra["basis"], LPBasis)
    assert first.objective == pytest.approx(-2.8)
    again = be.solve_lp(_lp(A, np.array([4.0, 7.0])), basis=first.extra["basis"],
                        keep_basis=True)
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
    first = be.solve_lp(_lp(A, b), keep_basis=True)
    # change coefficients and bounds (same shape), then solve warm and cold
    A2 = A * rng.uniform(0.5, 1.5, A.shape)
    b2 = b * rng.uniform(0.5, 1.5, m)
    warm = be.solve_lp(_lp(A2, b2), basis=first.extra["basis"], keep_basis=True)
    cold = be.solve_lp(_lp(A2, b2))
    assert warm.status == cold.status == SolveStatus.OPTIMAL
    assert warm.extra["warm"] is True
    assert warm.objective == pytest.approx(cold.objective, rel=REL)
    assert np.all(A2 @ warm.x <= b2 + 1e-9) and np.all(warm.x >= -1e-12)


def test_basis_of_another_shape_is_ignored():
    be = HighsBackend()
    small = be.solve_lp(_lp(np.array([[1.0, 1.0]]), np.array([1.0])), keep_basis=True)
    A = np.array([[1.0, 2.0, 1.0], [3.0, 1.0, 2.0]])
    sol = be.solve_lp(_lp(A, np.array([4.0, 6.0])), basis=small.extra["basis"],
                      keep_basis=True)
    cold = be.solve_lp(_lp(A, np.array([4.0, 6.0])))
    assert sol.extra["warm"] is False
    assert sol.objective == pytest.approx(cold.objective, rel=REL)


def test_bad_basis_and_milp_refused():
    be = HighsBackend()
    lp = _lp(np.array([[1.0, 1.0]]), np.array([1.0]))
    with pytest.raises(InputError, match="LPBasis"):
        be.solve_lp(lp, basis=[1, 0])  # type: ignore[arg-type]
    mip = LinearProgram.build(-np.ones(2), np.array([[1.0, 1.0]]), -np.inf, np.array([1.5]),
                              0.0, 1.0, integrality=np.array([True, True]))
    with pytest.raises(InputError, match="linear programs only"):
        be.solve_lp(mip, keep_basis=True)


def test_a_backend_without_the_capability_warns_and_solves_cold():
    from fairalloc.backends import get_backend

    be = get_backend("clarabel")
    assert not be.supports("basis")
    with pytest.warns(fa.FairallocWarning, match="no basis capability"):
        sol = be.solve_lp(_lp(np.array([[1.0, 2.0]]), np.array([4.0])), keep_basis=True)
    assert "basis" not in sol.extra and sol.objective == pytest.approx(-4.0, rel=1e-7)


def test_ipm_without_crossover_still_returns_a_basis():
    # keep_basis always ends HiGHS' interior point with crossover, so a basis comes back
    be = HighsBackend(solver="ipm", crossover=False)
    sol = be.solve_lp(_lp(np.array([[1.0, 2.0], [3.0, 1.0]]), np.array([4.0, 6.0])),
                      keep_basis=True)
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
    cold = fa.finish_time_fairness(jobs, cluster, tuning=COLD)
    # the first Dinkelbach LP is solved cold (it returns the basis), every later one warm
    steps = [s for s in warm.stats.path if s in (EXACT_LP, WARM_LP)]
    assert steps[0] == EXACT_LP and warm.stats.count(WARM_LP) >= 1
    assert warm.stats.path.index(WARM_LP) > warm.stats.path.index(EXACT_LP)
    assert WARM_LP not in cold.stats.path
    assert warm.certificate.ok and cold.certificate.ok
    assert warm.objective == pytest.approx(cold.objective, rel=REL)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 40), st.integers(1, 6), st.integers(1, 3))
def test_ftf_warm_equals_cold(seed, n, models, k):
    jobs, cluster = _instance(seed, n, models, k)
    warm = fa.finish_time_fairness(jobs, cluster)
    cold = fa.finish_time_fairness(jobs, cluster, tuning=COLD)
    assert warm.certificate.ok and cold.certificate.ok
    assert warm.objective == pytest.approx(cold.objective, rel=REL)
    # the metric is the certified rho of every job: no job above the optimum
    assert np.max(warm.metric) <= warm.objective * (1 + REL)
    assert WARM_LP not in cold.stats.path
    exact = [s for s in warm.stats.path if s in (EXACT_LP, WARM_LP)]
    if WARM_LP in exact:  # a warm step follows the cold solve that gave its basis
        assert exact[0] == EXACT_LP


class _FailWhenWarm(HighsBackend):
    """HiGHS whose solves from a basis fail (a fault at the public backend boundary)."""

    def _solve_lp(self, lp, **kw):
        if kw.get("basis") is not None:
            return LPSolution(SolveStatus.ERROR, None, float("nan"), raw_status="forced",
                              backend="highs")
        return super()._solve_lp(lp, **kw)


def test_failed_warm_solve_falls_back_to_the_cold_lp():
    jobs, cluster = _instance(0, 12, 12, 2)
    cold = fa.finish_time_fairness(jobs, cluster, tuning=COLD)
    r = fa.finish_time_fairness(jobs, cluster, backend=_FailWhenWarm())
    assert r.certificate.ok
    assert r.objective == pytest.approx(cold.objective, rel=REL)
    assert any(f.startswith(f"{WARM_LP}->{EXACT_LP}: failed (error: forced)")
               for f in r.stats.fallbacks)
    # every warm attempt failed and was answered by the cold LP, which keeps its basis
    assert 1 <= r.stats.count(WARM_LP) <= r.stats.count(EXACT_LP)
