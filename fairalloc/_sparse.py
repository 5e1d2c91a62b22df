"""One fast way to build a CSR matrix from ``(row, column, value)`` triplets.

``scipy.sparse.csr_matrix((v, (r, c)))`` goes through a COO matrix and its conversion: about
60 microseconds for a few hundred entries, several times per scheduling round (issue #16: a
warm 100-job round is a few milliseconds in all). Sorting the triplets once with numpy and
handing scipy the index arrays costs a third of that; entries that meet are added, as scipy
does.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["abs_matvec", "csr_from_triplets", "entries_at", "entry_rows", "rmatvec", "scale_rows"]


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
    return sp.csr_matrix((v, c, indptr), shape=shape)


def entry_rows(A: sp.csr_matrix) -> np.ndarray:
    """The row of each stored entry of the CSR matrix ``A`` (aligned with ``A.data``)."""
    return np.repeat(np.arange(A.shape[0]), A.indptr[1:] - A.indptr[:-1])


def rmatvec(A: sp.csr_matrix, y: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """``A.T @ y`` for a CSR matrix without building the transpose (scipy constructs a CSC
    matrix object for ``A.T``: most of the cost on small matrices); ``rows`` from
    `entry_rows` when the caller has them.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> rmatvec(A, np.array([1.0, -1.0]))
    array([ 1., -1.])
    """
    r = entry_rows(A) if rows is None else rows
    return np.bincount(A.indices, weights=A.data * y[r], minlength=A.shape[1])


def abs_matvec(A: sp.csr_matrix, x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """``|A| @ |x|`` (entrywise absolute values) for a CSR matrix without building ``|A|``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[1.0, -2.0], [0.0, 3.0]]))
    >>> abs_matvec(A, np.array([1.0, -1.0]))
    array([3., 3.])
    """
    r = entry_rows(A) if rows is None else rows
    return np.bincount(r, weights=np.abs(A.data) * np.abs(x[A.indices]), minlength=A.shape[0])


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
    return sp.csr_matrix((A.data * np.asarray(w, dtype=float)[entry_rows(A)], A.indices,
                          A.indptr), shape=A.shape)


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
