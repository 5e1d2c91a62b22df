"""One fast way to build a CSR matrix from ``(row, column, value)`` triplets.

``scipy.sparse.csr_matrix((v, (r, c)))`` goes through a COO matrix and its conversion: about
60 microseconds for a few hundred entries, several times per scheduling round (issue #16: a
warm 100-job round is a few milliseconds in all). Sorting the triplets once with numpy and
handing scipy the index arrays costs a third of that; entries that meet are added, as scipy
does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["abs_matvec", "csr", "csr_from_triplets", "dot", "entries_at", "entry_rows", "matvec",
           "rmatvec", "scale_rows", "stack_rows"]

try:  # scipy's compiled CSR kernels: private, but unchanged across the supported versions;
    # every helper below falls back to public operations without them (tested)
    from scipy.sparse import _sparsetools as _KERNELS
except ImportError:  # pragma: no cover - a scipy without the module
    _KERNELS = None


def _plain_attributes() -> dict[str, object]:
    """The attributes scipy's checked constructor gives a CSR matrix besides its arrays and
    shape (``maxprint`` and whatever a scipy version adds), taken from one built matrix, so
    that `csr` sets exactly what the constructor would; cached flags (``_has_*``) are left
    out: they are computed from the arrays on first use."""
    built = sp.csr_matrix((np.ones(1), np.zeros(1, dtype=np.int64),
                           np.array([0, 1], dtype=np.int64)), shape=(1, 1))
    return {k: v for k, v in vars(built).items()
            if k not in ("data", "indices", "indptr", "_shape") and not k.startswith("_has")}


_PLAIN = _plain_attributes()


def csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
        shape: tuple[int, int]) -> sp.csr_matrix:
    """The CSR matrix with these arrays, without scipy's format checks.

    ``scipy.sparse.csr_matrix((data, indices, indptr))`` validates and re-types its index
    arrays: about 40 microseconds, eleven times in a warm 100-job round (issue #16). The
    library's own builders produce valid arrays (row pointers from cumulative counts, column
    indices inside ``shape``), so this constructor only makes the two index arrays share one
    integer type (scipy's kernels need that) and the data float. Callers must pass valid
    arrays; `tests/test_sparse_helpers.py` checks the output of `csr`, `csr_from_triplets`
    and `stack_rows` against scipy's full format check (and `tests/test_rounds.py` the level
    rows of `stages._with_last_column`).

    Examples
    --------
    >>> import numpy as np
    >>> A = csr(np.array([1.0, 2.0]), np.array([0, 2]), np.array([0, 1, 2]), (2, 3))
    >>> A.toarray()
    array([[1., 0., 0.],
           [0., 0., 2.]])
    """
    A = sp.csr_matrix.__new__(sp.csr_matrix)
    A.__dict__.update(_PLAIN)
    if indices.dtype != indptr.dtype or indptr.dtype.kind != "i":
        indices = indices.astype(np.int64)
        indptr = indptr.astype(np.int64)
    A.data = data if data.dtype == np.float64 else data.astype(float)
    A.indices = indices
    A.indptr = indptr
    A._shape = (int(shape[0]), int(shape[1]))
    return A


def csr_from_triplets(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                      shape: tuple[int, int]) -> sp.csr_matrix:
    """The ``shape`` CSR matrix with ``vals`` at ``(rows, cols)``; duplicates are summed.

    Rows and columns must lie inside ``shape`` (an internal helper: callers build them).
    Indices come out sorted within each row, duplicates summed (explicit zeros are kept, as
    scipy's COO conversion keeps them).

    Examples
    --------
    >>> import numpy as np
    >>> A = csr_from_triplets(np.array([1, 0, 1]), np.array([2, 0, 2]),
    ...                       np.array([1.0, 2.0, 3.0]), (2, 3))
    >>> A.toarray()
    array([[2., 0., 0.],
           [0., 0., 4.]])
    """
    m, n = shape
    r = np.asarray(rows, dtype=np.int64)
    c = np.asarray(cols, dtype=np.int64)
    v = np.asarray(vals, dtype=float)
    key = r * n + c
    if key.size > 1 and not bool((key[1:] > key[:-1]).all()):
        order = np.argsort(key, kind="stable")
        key, v = key[order], v[order]
        if not bool((key[1:] > key[:-1]).all()):  # entries that meet: add them
            first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            v = np.add.reduceat(v, first)
            key = key[first]
        r, c = np.divmod(key, n) if n else (key, key)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
    return csr(v, c, indptr, shape)


def stack_rows(blocks: list[Any], ncols: int) -> sp.csr_matrix:
    """The blocks (sparse matrices at most ``ncols`` wide) stacked in order as one CSR matrix,
    built from their index arrays in one construction (no chain of stacks, no sort).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> stack_rows([sp.csr_matrix(np.array([[1.0, 0.0]])), sp.eye(2, format="csr")], 2).toarray()
    array([[1., 0.],
           [1., 0.],
           [0., 1.]])
    """
    mats = [b if isinstance(b, sp.csr_matrix) else sp.csr_matrix(b) for b in blocks]
    indptr = [np.zeros(1, dtype=np.int64)]
    nnz = 0
    for b in mats:
        indptr.append(b.indptr[1:].astype(np.int64) + nnz)
        nnz += int(b.indptr[-1])
    return csr(np.concatenate([b.data[: b.indptr[-1]] for b in mats]).astype(float),
               np.concatenate([b.indices[: b.indptr[-1]] for b in mats]).astype(np.int64),
               np.concatenate(indptr), (sum(b.shape[0] for b in mats), ncols))


def entry_rows(A: sp.csr_matrix) -> np.ndarray:
    """The row of each stored entry of the CSR matrix ``A`` (aligned with ``A.data``)."""
    return np.repeat(np.arange(A.shape[0]), A.indptr[1:] - A.indptr[:-1])


def _kernel_ready(A: sp.csr_matrix) -> bool:
    """Whether scipy's compiled CSR kernels take ``A``'s arrays as they are (float data, one
    index type for ``indices`` and ``indptr``)."""
    return (_KERNELS is not None and isinstance(A, sp.csr_matrix)
            and A.data.dtype == np.float64 and A.indices.dtype == A.indptr.dtype
            and A.indptr.dtype.kind == "i")


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a @ b`` for two 1-D float vectors without BLAS: OpenBLAS runs a dot product of more
    than about 10,000 entries on its worker threads, which then spin for milliseconds (a cold
    FTF solve of 8,192 Gavel jobs: 45 ms of process CPU over 105 ms of its own from four
    certificate objectives). numpy's own loop sums in SIMD lanes.

    Examples
    --------
    >>> import numpy as np
    >>> dot(np.array([1.0, 2.0]), np.array([3.0, -1.0]))
    1.0
    """
    return float(np.einsum("i,i->", a, b))


def matvec(A: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """``A @ x`` for a CSR matrix through scipy's compiled kernel, without the operator's
    dispatch (about 9 microseconds of checks around a 4-microsecond product on a stage
    program of a 100-job round).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> matvec(A, np.array([1.0, -1.0]))
    array([-1., -3.])
    """
    x = np.ascontiguousarray(x, dtype=float)
    if not _kernel_ready(A):
        return np.asarray(A @ x, dtype=float)
    m, n = A.shape
    out = np.zeros(m)
    _KERNELS.csr_matvec(m, n, A.indptr, A.indices, A.data, x, out)
    return out


def rmatvec(A: sp.csr_matrix, y: np.ndarray) -> np.ndarray:
    """``A.T @ y`` for a CSR matrix without building the transpose (scipy constructs a CSC
    matrix object for ``A.T``: most of the cost on small matrices): ``A``'s arrays read as
    the CSC form of ``A.T`` by scipy's compiled kernel.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> rmatvec(A, np.array([1.0, -1.0]))
    array([ 1., -1.])
    """
    y = np.ascontiguousarray(y, dtype=float)
    if not _kernel_ready(A):
        return np.asarray(A.T @ y, dtype=float)
    m, n = A.shape
    out = np.zeros(n)
    _KERNELS.csc_matvec(n, m, A.indptr, A.indices, A.data, y, out)
    return out


def abs_matvec(A: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """``|A| @ |x|`` (entrywise absolute values) for a CSR matrix without building ``|A|``
    as a matrix object.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[1.0, -2.0], [0.0, 3.0]]))
    >>> abs_matvec(A, np.array([1.0, -1.0]))
    array([3., 3.])
    """
    ax = np.abs(np.asarray(x, dtype=float))
    if not _kernel_ready(A):
        return np.asarray(abs(A) @ ax, dtype=float)
    m, n = A.shape
    out = np.zeros(m)
    _KERNELS.csr_matvec(m, n, A.indptr, A.indices, np.abs(A.data), ax, out)
    return out


def scale_rows(A: sp.csr_matrix, w: np.ndarray) -> sp.csr_matrix:
    """``diag(w) @ A`` for a CSR matrix: its entries times their row's weight, on the same
    index arrays (no sparse product).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> scale_rows(A, np.array([2.0, -1.0])).toarray()
    array([[ 2.,  4.],
           [ 0., -3.]])
    """
    A = A if isinstance(A, sp.csr_matrix) else sp.csr_matrix(A)
    return csr(A.data * np.asarray(w, dtype=float)[entry_rows(A)], A.indices, A.indptr,
               A.shape)


def entries_at(A: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """``A[rows[j], j]`` for every column ``j`` (0 where none is stored): a column's entry in
    the row of its owner, without scipy's fancy indexing.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]))
    >>> entries_at(A, np.array([0, 1, 0]))
    array([1., 3., 0.])
    """
    A = A if isinstance(A, sp.csr_matrix) else sp.csr_matrix(A)
    hit = entry_rows(A) == np.asarray(rows)[A.indices]
    return np.bincount(A.indices[hit], weights=A.data[hit], minlength=A.shape[1])
