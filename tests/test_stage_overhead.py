"""The per-solve work around a stage LP (issue #28, stg39) is built on the library's own arrays
without changing a value: the level rows ``[C, -b]`` and the kept rows ``C / rho`` equal
scipy's constructions entry for entry, HiGHS reads the model's arrays without copying or
changing them, and `lp_certificate` (fewer passes over the data) equals the definition
evaluated term by term with the same kernels."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from fairalloc._sparse import abs_matvec, matvec, rmatvec
from fairalloc.backends import LinearProgram, get_backend
from fairalloc.certificates import lp_certificate
from fairalloc.throughput.stages import _scaled_rows, _with_last_column


def _matrix(seed: int, m: int, n: int, wide: bool) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    C = sp.random(m, n, density=rng.uniform(0.0, 1.0), random_state=rng, format="csr")
    C.data *= 10.0 ** rng.uniform(-6, 6, C.nnz)
    if wide:  # int64 index arrays (as `fairalloc._sparse.csr` builds them)
        C.indices, C.indptr = C.indices.astype(np.int64), C.indptr.astype(np.int64)
    return C


@given(st.integers(0, 2**32 - 1), st.integers(0, 12), st.integers(1, 12), st.booleans())
def test_level_rows_equal_scipy_hstack(seed: int, m: int, n: int, wide: bool) -> None:
    C = _matrix(seed, m, n, wide)
    rng = np.random.default_rng(seed + 1)
    rows = np.flatnonzero(rng.random(m) < 0.6)
    values = rng.normal(size=rows.size)
    before = (C.data.copy(), C.indices.copy(), C.indptr.copy())
    got = _with_last_column(C, rows, values, n)
    last = sp.csr_matrix((values, (rows, np.zeros(rows.size, dtype=int))), shape=(m, 1))
    want = sp.csr_matrix(sp.hstack([C, last], format="csr"))
    want.sort_indices()
    assert got.shape == (m, n + 1) and got.has_sorted_indices
    assert np.array_equal(got.indptr, want.indptr)
    assert np.array_equal(got.indices, want.indices)
    assert np.array_equal(got.data, want.data)
    assert got.indices.dtype == got.indptr.dtype
    for a, b in zip(before, (C.data, C.indices, C.indptr)):
        assert np.array_equal(a, b)  # C is shared with the stage: never changed


@given(st.integers(0, 2**32 - 1), st.integers(0, 12), st.integers(1, 12), st.booleans(),
       st.integers(-30, 30))
def test_kept_rows_equal_scipy_division(seed: int, m: int, n: int, wide: bool, e: int) -> None:
    C = _matrix(seed, m, n, wide)
    rho = 2.0 ** e  # `LevelStage.units`' rho: a power of two
    data = C.data.copy()
    got = _scaled_rows(C, 1.0 / rho)
    want = sp.csr_matrix(C / rho)
    assert got.shape == want.shape
    assert np.array_equal(got.indptr, want.indptr)
    assert np.array_equal(got.indices, want.indices)
    assert np.array_equal(got.data, want.data)
    assert np.array_equal(C.data, data)


def test_highs_reads_the_model_without_changing_it() -> None:
    """The model's arrays go to HiGHS as they are (no copies): read-only arrays are taken and
    no array of the LP changes."""
    lp = LinearProgram.build(np.array([-1.0, -2.0]), sp.csr_matrix(np.array([[1.0, 1.0]])),
                             row_lower=[-np.inf], row_upper=[1.5], col_upper=[1.0, 1.0])
    arrays = (lp.c, lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper, lp.A.data,
              lp.A.indices, lp.A.indptr)
    copies = [a.copy() for a in arrays]
    for a in arrays:
        a.flags.writeable = False
    sol = get_backend("highs").solve_lp(lp)
    assert sol.x is not None
    np.testing.assert_allclose(sol.x, [0.5, 1.0], atol=1e-9)
    for a, b in zip(arrays, copies):
        assert np.array_equal(a, b)


def _reference(lp: LinearProgram, x: np.ndarray, y: np.ndarray) -> tuple[float, ...]:
    """The certificate's bound, primal value and residuals as the definition states them
    (`lp_certificate`'s docstring), with the same kernels and sums."""
    y = y.copy()
    y[(y > 0) & ~np.isfinite(lp.row_lower)] = 0.0
    y[(y < 0) & ~np.isfinite(lp.row_upper)] = 0.0
    up, down = y > 0, y < 0
    rows = float(np.sum(y[up] * lp.row_lower[up]) - np.sum(-y[down] * lp.row_upper[down]))
    d = lp.c - rmatvec(lp.A, y)
    lo_ok = (d > 0) & np.isfinite(lp.col_lower)
    hi_ok = (d < 0) & np.isfinite(lp.col_upper)
    cols = float(np.sum(d[lo_ok] * lp.col_lower[lo_ok]))
    cols += float(np.sum(d[hi_ok] * lp.col_upper[hi_ok]))
    bad = np.concatenate([d[(d > 0) & ~np.isfinite(lp.col_lower)],
                          -d[(d < 0) & ~np.isfinite(lp.col_upper)]])
    c_mag = float(np.max(np.abs(lp.c), initial=0.0))
    dual_res = float(np.max(bad, initial=0.0))
    dual_res = dual_res / c_mag if c_mag > 0 else (0.0 if dual_res == 0 else np.inf)
    ax, mag = matvec(lp.A, x), abs_matvec(lp.A, x)
    res = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        for val, lo, hi, scale in ((ax, lp.row_lower, lp.row_upper, mag),
                                   (x, lp.col_lower, lp.col_upper,
                                    np.full(x.size, np.max(np.abs(x), initial=0.0)))):
            for bound, excess in ((lo, lo - val), (hi, val - hi)):
                hit = np.isfinite(bound) & (excess > 0)
                if hit.any():
                    s = np.maximum(np.abs(bound[hit]), scale[hit])
                    rel = np.where(s > 0, excess[hit] / np.where(s > 0, s, 1.0), np.inf)
                    res = max(res, float(rel.max()))
    if not np.isfinite(x).all():
        res = np.inf
    return rows + cols, float(np.sum(lp.c * x)), res, dual_res


@given(st.integers(0, 2**32 - 1), st.integers(0, 10), st.integers(1, 10))
def test_lp_certificate_is_its_definition(seed: int, m: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    A = _matrix(seed, m, n, False)

    def bounds(k: int, inf: float) -> np.ndarray:
        v = rng.normal(size=k) * 3.0
        v[rng.random(k) < 0.3] = inf
        return v

    lp = LinearProgram.build(rng.normal(size=n), A, bounds(m, -np.inf), bounds(m, np.inf),
                             bounds(n, -np.inf), bounds(n, np.inf))
    x, y = rng.normal(size=n), rng.normal(size=m) * 10.0 ** rng.uniform(-3, 3, m)
    cert = lp_certificate(lp, x, y)
    bound, primal, res, dual_res = _reference(lp, x, y)
    # the same expressions in the same order: equal to the last bit
    assert cert.dual_bound == bound
    assert cert.primal_residual == res
    assert cert.dual_residual == dual_res
    assert cert.gap == max(cert.primal_value - bound, 0.0)
    assert cert.primal_value == primal
