"""The sparse helpers of the hot round path (`fairalloc._sparse`), the column median of the
structured solver, and HiGHS' reused instance: each against the plain scipy / numpy / fresh
HiGHS computation it replaces (issue #16)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fairalloc._sparse import (
    abs_matvec,
    csr,
    csr_from_triplets,
    entries_at,
    matvec,
    rmatvec,
    scale_rows,
    stack_rows,
)
from fairalloc.backends import HighsBackend, LinearProgram
from fairalloc.backends import highs as highs_module
from fairalloc.throughput.structured.common import _column_nanmedian


@st.composite
def triplets(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    m = draw(st.integers(1, 6))
    n = draw(st.integers(1, 6))
    nnz = draw(st.integers(0, 15))
    rows = np.array(draw(st.lists(st.integers(0, m - 1), min_size=nnz, max_size=nnz)), int)
    cols = np.array(draw(st.lists(st.integers(0, n - 1), min_size=nnz, max_size=nnz)), int)
    vals = np.array(draw(st.lists(st.floats(-1e3, 1e3), min_size=nnz, max_size=nnz)), float)
    return rows, cols, vals, (m, n)


@settings(max_examples=200, deadline=None)
@given(triplets())
def test_csr_from_triplets_equals_scipy_coo_conversion(t):
    """Same matrix as scipy's COO route (duplicates summed in the same order), canonical."""
    r, c, v, shape = t
    got = csr_from_triplets(r, c, v, shape)
    want = sp.csr_matrix((v, (r, c)), shape=shape)
    np.testing.assert_allclose(got.toarray(), want.toarray(), rtol=1e-15, atol=1e-12)
    assert got.has_canonical_format and got.shape == shape
    got.check_format(full_check=True)  # the unchecked constructor built a valid matrix


@settings(max_examples=200, deadline=None)
@given(triplets(), st.sampled_from([np.int32, np.int64]), st.sampled_from([np.int32, np.int64]))
def test_unchecked_csr_behaves_as_scipy_checked_one(t, idx_type, ptr_type):
    """`csr` on valid arrays of any index types gives the matrix scipy's checked constructor
    gives: same entries, a valid format, and scipy's operations (products, transpose, stacking,
    canonical flags, copies) work on it and agree."""
    r, c, v, shape = t
    ref = sp.csr_matrix((v, (r, c)), shape=shape)
    A = csr(ref.data.copy(), ref.indices.astype(idx_type), ref.indptr.astype(ptr_type), shape)
    assert type(A) is sp.csr_matrix and A.shape == shape and A.nnz == ref.nnz
    A.check_format(full_check=True)
    assert A.indices.dtype == A.indptr.dtype
    x = np.arange(1.0, shape[1] + 1.0)
    np.testing.assert_array_equal(A.toarray(), ref.toarray())
    np.testing.assert_array_equal(A @ x, ref @ x)
    np.testing.assert_array_equal((A.T @ A).toarray(), (ref.T @ ref).toarray())
    np.testing.assert_array_equal(sp.vstack([A, ref]).toarray(), sp.vstack([ref, ref]).toarray())
    assert A.has_canonical_format == ref.has_canonical_format
    B = A.copy()
    B.data[:] = 0.0
    np.testing.assert_array_equal(A.toarray(), ref.toarray())  # a copy does not share data


@settings(max_examples=100, deadline=None)
@given(st.lists(triplets(), min_size=1, max_size=4))
def test_stack_rows_equals_scipy_vstack(ts):
    """Blocks of different widths (padded to the widest) stacked as scipy stacks them."""
    ncols = max(shape[1] for *_, shape in ts)
    blocks = [sp.csr_matrix((v, (r, c)), shape=(shape[0], ncols)) for r, c, v, shape in ts]
    got = stack_rows(blocks, ncols)
    got.check_format(full_check=True)
    np.testing.assert_array_equal(got.toarray(), sp.vstack(blocks).toarray())


@settings(max_examples=200, deadline=None)
@given(triplets(), st.integers(0, 2**31 - 1))
def test_matvec_helpers_equal_scipy(t, seed):
    """``A.T @ y``, ``|A| @ |x|``, ``diag(w) @ A`` and the owner entries, against scipy."""
    r, c, v, shape = t
    A = sp.csr_matrix((v, (r, c)), shape=shape)  # duplicates kept, as a caller may have them
    rng = np.random.default_rng(seed)
    x, y, w = rng.normal(size=shape[1]), rng.normal(size=shape[0]), rng.normal(size=shape[0])
    np.testing.assert_allclose(rmatvec(A, y), A.T @ y, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(abs_matvec(A, x), abs(A) @ np.abs(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(matvec(A, x), A @ x, rtol=1e-12, atol=1e-9)
    # the public fallbacks (what a scipy without its compiled kernels gets): a matrix the
    # kernels do not take as it is -- a sparse array rather than a csr_matrix -- or mixed index
    # types
    arr = sp.csr_array(A)
    np.testing.assert_allclose(rmatvec(arr, y), A.T @ y, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(abs_matvec(arr, x), abs(A) @ np.abs(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(matvec(arr, x), A @ x, rtol=1e-12, atol=1e-9)
    mixed = sp.csr_matrix(A)
    mixed.indices = mixed.indices.astype(np.int32)
    mixed.indptr = mixed.indptr.astype(np.int64)
    np.testing.assert_allclose(rmatvec(mixed, y), A.T @ y, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(matvec(mixed, x), A @ x, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(scale_rows(A, w).toarray(), (sp.diags(w) @ A).toarray(),
                               rtol=1e-15, atol=0)
    owner = rng.integers(0, shape[0], shape[1])
    dense = A.toarray()
    np.testing.assert_allclose(entries_at(A, owner), dense[owner, np.arange(shape[1])],
                               rtol=1e-12, atol=1e-9)


def test_entries_at_hand_checked():
    """Column j's entry in row owner[j]; 0 where that row stores nothing."""
    A = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]))
    np.testing.assert_array_equal(entries_at(A, np.array([0, 1, 0])), [1.0, 3.0, 0.0])
    np.testing.assert_array_equal(entries_at(A, np.array([1, 0, 1])), [0.0, 2.0, 4.0])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 7), st.integers(1, 4), st.floats(0.0, 1.0), st.integers(0, 2**31 - 1))
def test_column_nanmedian_equals_numpy(n, k, p_nan, seed):
    """Bit-for-bit numpy's ``nanmedian(axis=0)``, NaN for a column without numbers."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    X[rng.random((n, k)) < p_nan] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanmedian(X, axis=0) if n else np.full(k, np.nan)
    np.testing.assert_array_equal(_column_nanmedian(X), want)


def _lp(rhs: float) -> LinearProgram:
    A = np.array([[1.0, 2.0], [3.0, 1.0]])
    return LinearProgram.build(np.array([-1.0, -1.0]), A, -np.inf, np.array([4.0, rhs]),
                               0.0, np.inf)


def test_reused_highs_instance_starts_clean():
    """A small LP reuses this thread's HiGHS instance; options and basis of the previous solve
    do not leak: after a time-limited interior-point solve, a plain solve of another LP is the
    same as on a fresh instance (optimum -2.8 at x = (1.6, 1.2); hand-checked vertex)."""
    HighsBackend(solver="ipm", crossover=False).solve_lp(_lp(7.0), time_limit=5.0)
    reused = highs_module._LOCAL.highs
    sol = HighsBackend().solve_lp(_lp(6.0))
    assert highs_module._LOCAL.highs is reused
    assert sol.status.value == "optimal"
    np.testing.assert_allclose(sol.x, [1.6, 1.2], atol=1e-12)
    assert sol.objective == pytest.approx(-2.8, abs=1e-12)
    assert reused.getOptionValue("time_limit")[1] == float("inf")
    assert reused.getOptionValue("solver")[1] == "choose"
    assert reused.getOptionValue("run_crossover")[1] == "on"


def test_presolve_off_gives_the_same_optimum():
    """``presolve=False`` (the structured masters' setting) solves to the same vertex."""
    on = HighsBackend(solver="simplex").solve_lp(_lp(6.0))
    off = HighsBackend(solver="simplex", presolve=False).solve_lp(_lp(6.0))
    np.testing.assert_allclose(off.x, on.x, atol=1e-12)
    np.testing.assert_allclose(off.row_duals, on.row_duals, atol=1e-12)


def test_presolve_must_be_a_bool():
    from fairalloc import InputError

    with pytest.raises(InputError, match="presolve"):
        HighsBackend(presolve="no")  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1e-300, 1e300), min_size=1, max_size=40))
def test_stage_units_median_equals_numpy(values):
    """The level stage's unit scale uses a one-partition median: numpy's value exactly."""
    from fairalloc.throughput.programs import _median

    v = np.array(values)
    assert _median(v) == float(np.median(v))
