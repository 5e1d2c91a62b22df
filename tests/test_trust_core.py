"""The trust core: scale-relative certificates, honest `ok`, read-only results, one solver layer.

Every test here fails on the code before issue #12 (certificates divided the gap by
``max(1, |objective|)``, ``ok`` could be true with an infinite tolerance, results were writable,
HiGHS printed its banner, foreign exceptions escaped the backends).
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import (
    USABLE,
    ClarabelBackend,
    ConicProgram,
    HighsBackend,
    LinearProgram,
    SolveStatus,
    get_backend,
)
from fairalloc.certificates import lp_certificate, lp_primal_residual, milp_certificate
from fairalloc.results import Certificate, Result, SolveStats, Status, readonly
from fairalloc.tolerances import FEAS_TOL, GAP_TOL, MAX_TOL, MILP_GAP_TOL

# --------------------------------------------------------------------------------------------
# certificates
# --------------------------------------------------------------------------------------------


def _cert(**kw: float | None) -> Certificate:
    base: dict = dict(kind="lp", primal_value=1.0, dual_bound=1.0, gap=0.0, primal_residual=0.0)
    base.update(kw)
    return Certificate(**base)


def test_small_objective_gap_is_judged_relative_not_absolute() -> None:
    # an objective of 1e-9 with a gap of 5e-10 is 50 % off: the old max(1, |obj|) rule said ok
    cert = _cert(primal_value=1e-9, dual_bound=1.5e-9, gap=5e-10)
    assert cert.relative_gap == pytest.approx(1 / 3)
    assert not cert.ok


def test_explicit_data_scale_overrides_objective_magnitude() -> None:
    # Eisenberg-Gale style: objective carries B*log(alpha) constants, the gap is budget-weighted
    cert = _cert(primal_value=27.6, dual_bound=27.6 + 1e-9, gap=1e-9, scale=1e-12)
    assert cert.relative_gap == pytest.approx(1e3)
    assert not cert.ok
    assert _cert(primal_value=27.6, dual_bound=27.6, gap=1e-19, scale=1e-12).ok


@given(st.integers(-12, 12), st.floats(0, 1e-3, allow_subnormal=False), st.floats(0.1, 10.0))
@settings(max_examples=60, deadline=None)
def test_verdict_is_invariant_under_objective_rescaling(k: int, rel: float, obj: float) -> None:
    a = 10.0**k
    c1 = _cert(primal_value=obj, dual_bound=obj * (1 + rel), gap=obj * rel)
    c2 = _cert(primal_value=a * obj, dual_bound=a * obj * (1 + rel), gap=a * obj * rel)
    assert c1.relative_gap == pytest.approx(c2.relative_gap, rel=1e-9, abs=1e-300)
    if abs(c1.relative_gap - GAP_TOL) > 1e-9:
        assert c1.ok == c2.ok


@pytest.mark.parametrize("field", ["gap_tol", "feas_tol"])
@pytest.mark.parametrize("value", [math.inf, math.nan, -1.0])
def test_ok_is_never_true_by_construction(field: str, value: float) -> None:
    assert not _cert(**{field: value}).ok


@pytest.mark.parametrize("kw", [dict(gap=math.nan), dict(gap=math.inf),
                                dict(primal_residual=math.nan), dict(dual_residual=math.inf)])
def test_non_finite_parts_are_not_ok(kw: dict) -> None:
    assert not _cert(**kw).ok


def test_zero_gap_on_zero_objective_is_ok_and_positive_gap_is_not() -> None:
    assert _cert(primal_value=0.0, dual_bound=0.0, gap=0.0).ok
    assert _cert(primal_value=0.0, dual_bound=0.0, gap=1e-30, scale=0.0).relative_gap == math.inf


def test_default_tolerance_family() -> None:
    cert = _cert()
    assert (cert.gap_tol, cert.feas_tol) == (GAP_TOL, FEAS_TOL)
    assert milp_certificate(
        LinearProgram.build(np.array([1.0]), integrality=[True]), np.array([0.0]), 0.0
    ).gap_tol == MILP_GAP_TOL
    assert 0 < GAP_TOL < MAX_TOL and 0 < FEAS_TOL < MAX_TOL


def test_primal_residual_is_relative_to_the_row_scale() -> None:
    # x <= 1e-9 violated by 50 %: the old (1 + |b|) rule called this a 5e-10 residual
    lp = LinearProgram.build(np.zeros(1), np.array([[1.0]]), row_upper=[1e-9])
    assert lp_primal_residual(lp, np.array([1.5e-9])) == pytest.approx(1 / 3)
    # the same program in other units has the same residual
    lp2 = LinearProgram.build(np.zeros(1), np.array([[1.0]]), row_upper=[1e3])
    assert lp_primal_residual(lp2, np.array([1.5e3])) == pytest.approx(1 / 3)
    assert lp_primal_residual(lp2, np.array([np.nan])) == math.inf


def test_lp_certificate_of_a_tiny_lp_catches_a_far_from_optimal_point() -> None:
    # max x s.t. x <= 1e-9: the point 0.5e-9 with the (valid) dual 1 is 50 % off
    lp = LinearProgram.build(np.array([-1.0]), np.array([[1.0]]), row_upper=[1e-9])
    cert = lp_certificate(lp, np.array([0.5e-9]), np.array([-1.0]), maximize=True)
    assert cert.gap == pytest.approx(0.5e-9)
    assert not cert.ok
    assert lp_certificate(lp, np.array([1e-9]), np.array([-1.0]), maximize=True).ok


def test_milp_certificate_without_a_bound_is_not_ok() -> None:
    lp = LinearProgram.build(np.array([1.0]), integrality=[True], col_upper=3.0)
    cert = milp_certificate(lp, np.array([1.0]), float("nan"))
    assert cert.gap == math.inf and not cert.ok


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------


def _stats() -> SolveStats:
    return SolveStats(backend="none", method="test", seconds=0.0)


def test_an_unproven_result_cannot_be_optimal() -> None:
    bad = _cert(primal_value=1.0, dual_bound=2.0, gap=1.0)
    with pytest.raises(fa.CertificateError):
        Result(objective=1.0, status=Status.OPTIMAL, stats=_stats(), certificate=bad)
    r = Result(objective=1.0, status=Status.TIME_LIMIT, stats=_stats(), certificate=bad)
    assert not r.certificate.ok and r.status == "time_limit"


def test_result_arrays_are_read_only_and_inputs_stay_writable() -> None:
    from fairalloc.markets import MarketResult

    r = fa.fisher_market([[1.0, 2.0], [2.0, 1.0]])
    from dataclasses import fields

    arrays = [getattr(r, f.name) for f in fields(MarketResult)
              if isinstance(getattr(r, f.name), np.ndarray)]
    assert arrays
    for arr in arrays:
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[...] = 0


def test_readonly_leaves_the_callers_array_writable() -> None:
    a = np.arange(4.0)
    out = readonly({"a": a, "t": (a, [a]), "n": 3})
    assert a.flags.writeable
    assert not out["a"].flags.writeable
    assert not out["t"][0].flags.writeable and not out["t"][1][0].flags.writeable
    assert out["n"] == 3
    same = (1, "x")
    assert readonly(same) is same


# --------------------------------------------------------------------------------------------
# the solver layer
# --------------------------------------------------------------------------------------------


def _lp() -> LinearProgram:
    # max x + y s.t. x + 2y <= 4, 3x + y <= 6
    return LinearProgram.build(np.array([-1.0, -1.0]), np.array([[1.0, 2.0], [3.0, 1.0]]),
                               row_upper=[4.0, 6.0])


@pytest.mark.parametrize("name", ["highs", "clarabel"])
def test_canonical_status_and_usable(name: str) -> None:
    sol = get_backend(name).solve_lp(_lp())
    assert sol.status is SolveStatus.OPTIMAL and sol.status == "optimal"
    assert sol.usable and sol.status in USABLE
    assert sol.raw_status and sol.backend == name
    assert sol.x is not None
    np.testing.assert_allclose(sol.x, [1.6, 1.2], atol=1e-7)


def test_status_maps_cover_the_backends_statuses() -> None:
    assert HighsBackend.canonical_status("Time limit reached") is SolveStatus.TIME_LIMIT
    assert HighsBackend.canonical_status("Primal infeasible or unbounded") is \
        SolveStatus.INFEASIBLE
    assert ClarabelBackend.canonical_status("AlmostSolved") is SolveStatus.INACCURATE
    assert ClarabelBackend.canonical_status("DualInfeasible") is SolveStatus.UNBOUNDED
    assert ClarabelBackend.canonical_status("something new") is SolveStatus.ERROR


@pytest.mark.parametrize("name", ["highs", "clarabel"])
def test_infeasible_is_reported_not_raised(name: str) -> None:
    lp = LinearProgram.build(np.array([1.0]), np.array([[1.0]]), row_lower=[2.0],
                             col_upper=1.0)
    sol = get_backend(name).solve_lp(lp)
    assert sol.status is SolveStatus.INFEASIBLE and not sol.usable and sol.x is None


@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, [1.0], "3", True])
def test_time_limit_is_validated(bad: object) -> None:
    with pytest.raises(fa.InputError, match="time_limit"):
        get_backend("highs").solve_lp(_lp(), time_limit=bad)  # type: ignore[arg-type]


def test_ignored_options_warn() -> None:
    with pytest.warns(fa.FairallocWarning, match="threads"):
        get_backend("clarabel").solve_lp(_lp(), threads=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        get_backend("highs").solve_lp(_lp(), threads=1)


def test_foreign_exceptions_become_solver_errors() -> None:
    class Broken(HighsBackend):
        def _solve_lp(self, lp, **kw):  # type: ignore[no-untyped-def, override]
            raise np.linalg.LinAlgError("singular")

    with pytest.raises(fa.SolverError) as info:
        Broken().solve_lp(_lp())
    assert isinstance(info.value.__cause__, np.linalg.LinAlgError)
    assert info.value.backend == "highs"


def test_capabilities_are_enforced() -> None:
    mip = LinearProgram.build(np.array([1.0]), integrality=[True], col_upper=2.0)
    with pytest.raises(fa.InputError, match="backend"):
        get_backend("clarabel").solve_lp(mip)
    prog = ConicProgram(c=np.array([1.0]), A=sp.csc_matrix(np.array([[-1.0]])),
                        b=np.array([0.0]), nonneg=1)
    with pytest.raises(fa.InputError, match="clarabel"):
        get_backend("highs").solve_conic(prog)


def test_conic_solve_through_the_backend() -> None:
    # max t s.t. t <= log(x), x <= 2  ->  t = log 2 ; exp cone row (t, 1, x)
    A = sp.csc_matrix(np.array([[0.0, 1.0], [-1.0, 0.0], [0.0, 0.0], [0.0, -1.0]]))
    b = np.array([2.0, 0.0, 1.0, 0.0])
    sol = get_backend("clarabel").solve_conic(
        ConicProgram(c=np.array([-1.0, 0.0]), A=A, b=b, nonneg=1, exp=1))
    assert sol.usable and sol.x is not None and sol.z is not None
    assert sol.x[0] == pytest.approx(math.log(2.0), abs=1e-7)
    assert sol.z[0] == pytest.approx(0.5, abs=1e-4)  # d log(x) / dx at the bound


def test_conic_program_shape_is_checked() -> None:
    with pytest.raises(fa.InputError):
        ConicProgram(c=np.zeros(2), A=sp.csc_matrix((2, 2)), b=np.zeros(2), exp=1)


def test_highs_prints_nothing() -> None:
    code = ("import numpy as np, fairalloc as fa\n"
            "fa.max_min_fairness(fa.Jobs(np.array([[1., 2.], [2., 1.]])), "
            "fa.Cluster({'a': 1, 'b': 1}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout == "" and "HiGHS" not in out.stderr


def test_no_solver_package_is_imported_outside_the_backends() -> None:
    import pathlib
    import re

    root = pathlib.Path(fa.__file__).parent
    pattern = re.compile(r"^\s*(import|from)\s+(clarabel|highspy)\b", re.M)
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if "backends" not in p.parts and pattern.search(p.read_text())]
    assert offenders == []


def test_highs_rejected_model_is_an_error_not_an_empty_optimum() -> None:
    lp = LinearProgram.build(np.array([1.0]), np.array([[1e25]]), row_upper=[1.0])
    sol = get_backend("highs").solve_lp(lp)
    assert sol.status is SolveStatus.ERROR and not sol.usable
    assert get_backend("highs").solve_lp(LinearProgram.build(np.zeros(0))).usable


@pytest.mark.parametrize("value", ["1", ["1", "2"], np.array(["1.0"]), b"1"])
def test_numeric_text_is_not_an_array(value: object) -> None:
    from fairalloc._validation import as_array

    with pytest.raises(fa.InputError, match="weights"):
        as_array(value, "weights", ndim=(0, 1))


def test_numbers_beyond_double_precision_are_input_errors() -> None:
    from fairalloc._validation import as_array

    with pytest.raises(fa.InputError, match="utility"):
        as_array([[10**400]], "utility", ndim=2)


@pytest.mark.parametrize("tol", [0.0, 5e-324, 1e-16, 0.5, math.inf, math.nan, "1e-6"])
def test_tolerances_outside_the_provable_range_are_refused(tol: object) -> None:
    from fairalloc._validation import as_tolerance

    with pytest.raises(fa.InputError, match="gap_tol"):
        as_tolerance(tol, "gap_tol")
    assert as_tolerance(1e-15, "gap_tol") == 1e-15


def test_readonly_skips_containers_without_arrays() -> None:
    ids = tuple(f"job{i}" for i in range(1000))
    assert readonly(ids) is ids
    nested = (ids, [np.zeros(2)])
    out = readonly(nested)
    assert out[0] is ids and not out[1][0].flags.writeable
