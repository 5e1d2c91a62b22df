"""Exact symmetry classes: items (jobs, buyers) whose data are identical bit for bit.

Real clusters run many jobs of the same few models, so a formulation's per-item data (a
throughput row, a scale factor, a weight or a budget) often repeat exactly. For a convex
program symmetric under permutations of such items an optimal solution exists that is equal
within each class, so a builder may solve the program over classes and expand the result
(see ``proofs/symmetry_reduction.md``). Near-ties are never merged: two items share a class
only if every value they are compared on is equal as a float64 (``-0.0`` equals ``0.0``).

`exact_classes` is the one class finder of the library; every builder that reduces by symmetry
calls it with the arrays its program reads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .errors import InputError

__all__ = ["Classes", "classes_of_labels", "exact_classes", "screen_direction"]

#: PERFORMANCE: seed of the random projection that screens for repeated rows before the exact
#: (byte-wise) comparison; any value works, a fixed one keeps runs reproducible
_SCREEN_SEED = 20261124
#: PERFORMANCE: range of the projection's weights (any positive range; bounded away from 0)
_SCREEN_LOW, _SCREEN_HIGH = 0.5, 1.5
_PROBE_CACHE = 64  # PERFORMANCE knob: screening directions kept (one per row width)


@dataclass(frozen=True)
class Classes:
    """A partition of ``n`` items into classes of identical data.

    Attributes
    ----------
    representative : ndarray of int, shape (c,)
        The first item of each class; classes are numbered in order of first appearance.
    inverse : ndarray of int, shape (n,)
        The class of every item (``representative[inverse[i]]`` has the data of item ``i``).
    counts : ndarray of int, shape (c,)
        Members of each class.

    Examples
    --------
    >>> import numpy as np
    >>> cl = exact_classes(np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]]))
    >>> cl.representative, cl.inverse, cl.counts
    (array([0, 1]), array([0, 1, 0]), array([2, 1]))
    >>> cl.reduces
    True
    """

    representative: np.ndarray
    inverse: np.ndarray
    counts: np.ndarray

    @property
    def n(self) -> int:
        """Number of items."""
        return int(self.inverse.size)

    @property
    def num_classes(self) -> int:
        """Number of classes."""
        return int(self.representative.size)

    @property
    def reduces(self) -> bool:
        """Whether some class has more than one member (the reduced program is smaller)."""
        return self.num_classes < self.n

    def expand(self, per_class: np.ndarray) -> np.ndarray:
        """Per-item values from per-class values (rows indexed by class)."""
        return np.asarray(per_class)[self.inverse]

    def total(self, per_item: np.ndarray) -> np.ndarray:
        """Per-class sums of a 1-D per-item array."""
        return np.bincount(self.inverse, weights=np.asarray(per_item, dtype=float),
                           minlength=self.num_classes)


def _identity(n: int) -> Classes:
    idx = np.arange(n)
    return Classes(idx, idx.copy(), np.ones(n, dtype=np.int64))


@functools.lru_cache(maxsize=_PROBE_CACHE)
def screen_direction(d: int) -> np.ndarray:
    """The screening direction for rows of ``d`` values (fixed seed, so classes never depend
    on a call's randomness; cached: a generator costs more than the screen of 100 rows)."""
    probe = np.random.default_rng(_SCREEN_SEED).uniform(_SCREEN_LOW, _SCREEN_HIGH, d)
    probe.flags.writeable = False
    return probe


def exact_classes(*data: np.ndarray) -> Classes:
    """Partition items into classes whose data are identical in every array of ``data``.

    Parameters
    ----------
    *data : ndarray
        Arrays whose first axis indexes the ``n`` items (1-D, or 2-D with one row per item);
        ``None`` entries are skipped. Compared exactly, as float64.

    Returns
    -------
    Classes

    Notes
    -----
    A random projection of the rows screens first: equal rows have equal projections, so if
    all projections differ there is no class with two members and the exact comparison is
    skipped (the cost is then one matrix-vector product and one sort of ``n`` floats).

    Examples
    --------
    >>> import numpy as np
    >>> exact_classes(np.array([1.0, 1.0, 2.0]), np.array([5.0, 5.0, 5.0])).counts
    array([2, 1])
    >>> exact_classes(np.array([1.0, 1.0 + 1e-15])).num_classes  # near-ties stay separate
    2
    """
    cols = []
    n = None
    for i, arr in enumerate(data):
        if arr is None:
            continue
        a = np.asarray(arr, dtype=float)
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2:
            raise InputError(f"data[{i}] must be 1-D or 2-D, got {a.ndim}-D", argument="data",
                             index=(i,))
        if n is None:
            n = a.shape[0]
        elif a.shape[0] != n:
            raise InputError(f"data[{i}] has {a.shape[0]} rows, expected {n}",
                             argument="data", index=(i,))
        cols.append(a)
    if n is None:
        raise InputError("exact_classes needs at least one array", argument="data")
    if n <= 1 or not cols:
        return _identity(n)
    # + 0.0 maps -0.0 to 0.0 so that equal values have equal bytes
    rows = np.ascontiguousarray(np.hstack(cols) + 0.0)
    if not np.isfinite(rows).all():
        raise InputError("exact_classes needs finite data", argument="data")
    d = rows.shape[1]
    probe = screen_direction(d)
    with np.errstate(over="ignore", invalid="ignore"):
        # elementwise products summed along each row, not a BLAS product: a BLAS kernel may
        # handle rows in blocks with different rounding (OPENBLAS_CORETYPE=Sandybridge gave
        # equal rows different projections), and equal rows must project alike
        screen = (rows * probe).sum(axis=1)
    first = None
    if np.isfinite(screen).all():
        ordered = np.sort(screen)
        if bool((ordered[1:] != ordered[:-1]).all()):
            return _identity(n)  # every projection differs: no two rows are equal
        # one sort of the scalar projections; rows sharing one are compared exactly, and a
        # projection shared by different rows (rare) sends the call to the byte-wise sort
        _, first, inverse, counts = np.unique(screen, return_index=True, return_inverse=True,
                                              return_counts=True)
        if first.size == n:
            return _identity(n)
        inverse = inverse.ravel()
        if not (rows == rows[first[inverse]]).all():
            first = None
    if first is None:
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * d))).ravel()
        _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True,
                                              return_counts=True)
    return _ordered(first, inverse, counts, n)


def _ordered(first: np.ndarray, inverse: np.ndarray, counts: np.ndarray, n: int) -> Classes:
    """`Classes` from `numpy.unique`'s index, inverse and counts, numbered in order of first
    appearance."""
    if first.size == n:
        return _identity(n)
    order = np.argsort(first, kind="stable")  # classes in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return Classes(first[order].astype(np.int64), rank[inverse.ravel()].astype(np.int64),
                   counts[order].astype(np.int64))


def classes_of_labels(labels: np.ndarray) -> Classes:
    """The partition of items by an integer label per item (equal labels, one class).

    Examples
    --------
    >>> import numpy as np
    >>> cl = classes_of_labels(np.array([7, 3, 7, 5]))
    >>> cl.representative, cl.inverse, cl.counts
    (array([0, 1, 3]), array([0, 1, 0, 2]), array([2, 1, 1]))
    """
    labels = np.asarray(labels).ravel()
    if labels.size <= 1:
        return _identity(labels.size)
    _, first, inverse, counts = np.unique(labels, return_index=True, return_inverse=True,
                                          return_counts=True)
    return _ordered(first, inverse, counts, labels.size)
