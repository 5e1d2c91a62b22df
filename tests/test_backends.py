"""Solver backends: one contract, parity on small LPs/MILPs, explicit solver names, certificates."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.backends import BACKENDS, LinearProgram, get_backend
from fairalloc.certificates import lp_certificate, milp_certificate


def _backend_params(capability: str) -> list:
    params = []
    for name, cls in BACKENDS.items():
        if capability not in cls.capabilities:
            continue
        reason = cls.unavailable_reason()
        params.append(pytest.param(name, marks=pytest.mark.skipif(
            reason is not None, reason=reason or "")))
    return params


def _small_lp() -> LinearProgram:
    # max x0 + 2 x1 + 3 x2  s.t.  x0 + x1 + x2 <= 2,  x1 + x2 >= 0.5,  x2 <= 1 (range row)
    A = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    return LinearProgram.build(-np.array([1.0, 2.0, 3.0]), A,
                               row_lower=[-np.inf, 0.5, 0.2], row_upper=[2.0, np.inf, 1.0],
                               col_lower=0.0, col_upper=[1.0, 1.5, 5.0])


@pytest.mark.parametrize("name", _backend_params("lp"))
def test_lp_parity_and_certificate(name: str) -> None:
    lp = _small_lp()
    sol = get_backend(name).solve_lp(lp)
    assert sol.status == "optimal"
    # optimum: x2 = 1, x1 = 1 (x0 = 0): objective 5
    assert sol.objective == pytest.approx(-5.0, abs=1e-6)
    np.testing.assert_allclose(sol.x, [0.0, 1.0, 1.0], atol=1e-6)
    cert = lp_certificate(lp, sol.x, sol.row_duals, maximize=True)
    assert cert.ok and cert.primal_value == pytest.approx(5.0, abs=1e-6)
    # duals: d OPT / d (row-0 upper bound) = -2 in the minimisation's sign
    assert sol.row_duals[0] == pytest.approx(-2.0, abs=1e-6)


@pytest.mark.parametrize("name", _backend_params("milp"))
def test_milp_parity(name: str) -> None:
    # knapsack: max 5a + 4b + 3c, 2a + 3b + c <= 5, binary
    lp = LinearProgram.build(-np.array([5.0, 4.0, 3.0]), np.array([[2.0, 3.0, 1.0]]),
                             row_upper=[5.0], col_lower=0.0, col_upper=1.0, integrality=True)
    sol = get_backend(name).solve_lp(lp)
    assert sol.status == "optimal"
    np.testing.assert_allclose(sol.x, [1.0, 1.0, 0.0], atol=1e-6)  # 9 beats 8 (a + c)
    cert = milp_certificate(lp, sol.x, sol.mip_dual_bound, maximize=True)
    assert cert.ok and cert.primal_value == pytest.approx(9.0)


@pytest.mark.parametrize("name", _backend_params("lp"))
def test_infeasible_lp_is_reported(name: str) -> None:
    lp = LinearProgram.build(np.ones(1), np.ones((1, 1)), row_lower=[2.0], row_upper=[np.inf],
                             col_lower=0.0, col_upper=1.0)
    assert get_backend(name).solve_lp(lp).status == "infeasible"


def test_lp_certificate_detects_wrong_duals_and_infeasible_points() -> None:
    lp = _small_lp()
    sol = get_backend("highs").solve_lp(lp)
    bad = lp_certificate(lp, sol.x, sol.row_duals * 0.5, maximize=True)
    assert bad.gap > 0.5 and not bad.ok
    with pytest.raises(fa.CertificateError):
        bad.check()
    infeasible = lp_certificate(lp, sol.x + 1.0, sol.row_duals, maximize=True)
    assert infeasible.primal_residual > 0.1 and not infeasible.ok


def test_get_backend_errors() -> None:
    with pytest.raises(fa.InputError, match="backend must be one of"):
        get_backend("cplex")
    with pytest.raises(fa.InputError, match="cannot solve"):
        get_backend("clarabel", need="milp")


def test_missing_optional_backend_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = BACKENDS["gurobi"]
    # a None entry in sys.modules makes `import gurobipy` raise ImportError, installed or not
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    assert cls.unavailable_reason() == ("backend 'gurobi' needs the Python package 'gurobipy' "
                                        '(pip install ".[gurobi]" in the fairalloc checkout)')
    with pytest.raises(fa.BackendUnavailableError):
        get_backend("gurobi")
    assert "gurobi" not in fa.available_backends()


def test_cvxpy_never_picks_its_own_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """cvxpy prefers Gurobi when installed; fairalloc must always name Clarabel explicitly."""
    import cvxpy as cp

    real_solve = cp.Problem.solve

    def guarded(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert kwargs.get("solver") is not None, "cvxpy was called without an explicit solver"
        return real_solve(self, *args, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", guarded)
    m = fa.FisherMarket([[1.0, 2.0], [2.0, 1.0]])
    m.add_constraint(m.x[0, 0] <= 0.5)
    r = m.solve()
    assert r.stats.backend == "clarabel"


# Parity on models of a realistic size that stay within the size-limited licence that
# `pip install gurobipy` ships (2,000 variables and 2,000 constraints): CI installs
# the .[gurobi] extra so these run on Gurobi too (.ci/run, optional engines step).
GUROBI_PIP_LIMIT = 2000


def _sparse_lp(seed: int, n: int, m: int, integer: bool) -> LinearProgram:
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.1, 1.0, (m, n)) * (rng.uniform(size=(m, n)) < 0.05)
    A[np.arange(m), rng.integers(0, n, m)] += 1.0  # no empty row
    return LinearProgram.build(-rng.uniform(1.0, 2.0, n), A, row_upper=rng.uniform(1.0, 5.0, m),
                               col_lower=0.0, col_upper=1.0, integrality=integer)


@pytest.mark.parametrize("name", _backend_params("lp"))
def test_lp_parity_on_a_mid_sized_model(name: str) -> None:
    lp = _sparse_lp(0, n=600, m=400, integer=False)
    assert lp.A.shape[0] + lp.A.shape[1] <= GUROBI_PIP_LIMIT
    ref = get_backend("highs").solve_lp(lp)
    sol = get_backend(name).solve_lp(lp)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref.objective, rel=1e-6)
    cert = lp_certificate(lp, sol.x, sol.row_duals, maximize=True)
    assert cert.ok, cert


@pytest.mark.parametrize("name", _backend_params("milp"))
def test_milp_parity_on_a_mid_sized_model(name: str) -> None:
    lp = _sparse_lp(1, n=120, m=40, integer=True)
    ref = get_backend("highs").solve_lp(lp)
    sol = get_backend(name).solve_lp(lp)
    assert sol.status == "optimal"
    cert = milp_certificate(lp, sol.x, sol.mip_dual_bound, maximize=True)
    assert cert.ok, cert
    # both proved optimal within their relative MIP gaps (1e-4 by default)
    assert sol.objective == pytest.approx(ref.objective, rel=2e-4)


@pytest.mark.parametrize("name", [p for p in _backend_params("lp")
                                  if p.values[0] in ("highs", "gurobi")])
def test_policy_parity_across_backends(name: str) -> None:
    # a Gavel policy (a sequence of LPs with dual certificates) on HiGHS and Gurobi (the
    # pyomo backend leaves unused columns without a value: x[72] here)
    rng = np.random.default_rng(2)
    jobs = fa.Jobs(rng.uniform(1.0, 10.0, (24, 3)), scale_factor=rng.choice([1, 2], 24))
    cluster = fa.Cluster({"k80": 4, "p100": 4, "v100": 4})
    ref = fa.max_min_fairness(jobs, cluster, backend="highs")
    got = fa.max_min_fairness(jobs, cluster, backend=name)
    assert got.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-9)


# -- work limits and a fixed thread count (issue #27) ------------------------------------------
def _knapsacks(seed: int = 1) -> LinearProgram:
    """A multi-knapsack MILP whose branch and bound takes about a hundred nodes."""
    rng = np.random.default_rng(seed)
    A = rng.integers(1, 30, (20, 60)).astype(float)
    c = -rng.integers(1, 50, 60).astype(float)
    return LinearProgram.build(c, A, -np.inf, A.sum(axis=1) / 3, 0.0, 1.0,
                               integrality=np.ones(60, dtype=bool))


def test_node_limit_stops_branch_and_bound_reproducibly() -> None:
    be = get_backend("highs")
    lp = _knapsacks()
    full = be.solve_lp(lp, gap_tol=0.0)
    assert full.status == "optimal" and full.iterations > 5
    runs = [be.solve_lp(lp, gap_tol=0.0, node_limit=5) for _ in range(2)]
    for sol in runs:
        assert sol.status == "iteration_limit" and sol.usable  # its best point, no proof
        assert sol.iterations == 5
        assert sol.mip_dual_bound <= full.objective <= sol.objective
    assert np.array_equal(runs[0].x, runs[1].x) and runs[0].objective == runs[1].objective
    with pytest.raises(fa.InputError) as info:
        be.solve_lp(lp, node_limit=0)
    assert info.value.argument == "node_limit"


def test_a_backend_without_node_limits_warns_and_solves() -> None:
    from fairalloc.backends import HighsBackend

    class NoNodes(HighsBackend):
        options = HighsBackend.options - {"node_limit"}

    with pytest.warns(fa.FairallocWarning, match="node_limit"):
        sol = NoNodes().solve_lp(_knapsacks(), gap_tol=0.0, node_limit=5)
    assert sol.status == "optimal"


def test_highs_runs_on_one_thread_and_accepts_any_thread_count_after_another() -> None:
    # HiGHS keeps one thread scheduler per process and refused ("Not Set") a run asking for
    # another thread count than the first run's; the default is now a fixed count (its own
    # default follows the machine's cores, and its MIP search depends on the count)
    be = get_backend("highs")
    lp = _knapsacks()
    results = [be.solve_lp(lp, gap_tol=0.0, threads=threads) for threads in
               (None, 2, None, 1, 3, 1)]
    assert [r.status for r in results] == ["optimal"] * len(results)
    from fairalloc.backends.highs import DEFAULT_THREADS

    assert DEFAULT_THREADS == 1
    assert results[0].iterations == results[2].iterations == results[5].iterations


def test_highs_runs_after_a_foreign_highspy_started_the_scheduler() -> None:
    """HiGHS' thread scheduler is process-wide: a run fairalloc did not make (the caller's own
    highspy, cvxpy's HIGHS) started it with 2 threads, so fairalloc's 1-thread runs were
    refused ("Not Set") and a space-sharing max-min through the Gavel adapter raised
    SolverError. Each run now restarts the scheduler once when HiGHS refuses. In a fresh
    process (the scheduler outlives any test)."""
    import subprocess
    import sys

    code = """if True:
        import highspy, numpy as np, fairalloc as fa
        from fairalloc.backends import LinearProgram, get_backend
        h = highspy.Highs(); h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 2)
        lp = highspy.HighsLp(); lp.num_col_ = 1; lp.col_cost_ = [1.0]
        lp.col_lower_ = [0.0]; lp.col_upper_ = [1.0]
        h.passModel(lp); assert h.run() == highspy.HighsStatus.kOk
        sol = get_backend("highs").solve_lp(LinearProgram.build(
            np.array([-1.0]), np.array([[1.0]]), -np.inf, np.array([2.0]), 0.0, np.inf))
        print(sol.status.value, sol.raw_status, sol.objective)
        r = fa.max_min_fairness(fa.Jobs(np.random.default_rng(1).random((30, 3))),
                                fa.Cluster({"a": 3, "b": 3, "c": 3}))
        print(r.stats.path, r.stats.fallbacks)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[-2] == "optimal Optimal -2.0"
    # (#28: 90 columns, below Tuning.from_level_min_columns: both stages cold)
    assert out[-1] == "('exact-lp',) ()"
