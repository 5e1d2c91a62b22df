"""Exact symmetry classes: items (jobs, buyers) whose data are identical bit for bit.

Real clusters run many jobs of the same few models, so a formulation's per-item data (a
throughput row, a scale factor, a weight or a budget) often repeat exactly. For a convex
program symmetric under permutations of such items an optimal solution exists that is equal
within each class, so a builder may solve the program over classes and expand the result
(see ``proofs/symmetry_reduction.md``). Near-ties are never merged here: two items share an
exact class only if every value they are compared on is equal as a float64 (``-0.0`` equals
``0.0``).

`exact_classes` is the one class finder of the library; every builder that reduces by symmetry
calls it with the arrays its program reads. `near_classes` groups items whose data agree only
within a relative tolerance (round-off of a profiler or a unit conversion); a builder that
solves over them must certify the expanded point on its original program (markets:
`fairalloc.markets.symmetry`, throughput policies: `fairalloc.throughput.symmetry`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .errors import InputError

__all__ = ["NEAR_PASSES", "NEAR_SCREEN", "Classes", "classes_of_labels", "exact_classes",
           "near_classes", "screen_direction"]

#: PERFORMANCE: seed of the random projection that screens for repeated rows before the exact
#: (byte-wise) comparison; any value works, a fixed one keeps runs reproducible
_SCREEN_SEED = 20261124
#: PERFORMANCE: range of the projection's weights (any positive range; bounded away from 0)
_SCREEN_LOW, _SCREEN_HIGH = 0.5, 1.5
_PROBE_CACHE = 64  # PERFORMANCE knob: screening directions kept (one per row width)
#: PERFORMANCE: sorts of the rows not yet near their run's leader (`near_classes`); rows left
#: after them stay alone
NEAR_PASSES = 4
#: ACCURACY: slack of the screen for near rows (their projections differ by at most about
#: ``rel`` relative; twice that so that round-off in the sums never hides a near pair)
NEAR_SCREEN = 2.0


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


def _stacked(data: tuple[np.ndarray | None, ...]) -> np.ndarray:
    """The arrays of ``data`` (``None`` skipped) side by side, one row per item, as float64."""
    cols = []
    for i, arr in enumerate(data):
        if arr is None:
            continue
        a = np.asarray(arr, dtype=float)
        a = a.reshape(a.shape[0], -1) if a.ndim >= 1 else a.reshape(1, 1)
        if cols and a.shape[0] != cols[0].shape[0]:
            raise InputError(f"data[{i}] has {a.shape[0]} rows, expected {cols[0].shape[0]}",
                             argument="data", index=(i,))
        cols.append(a)
    if not cols:
        raise InputError("near_classes needs at least one array", argument="data")
    return np.hstack(cols) + 0.0


def near_classes(*data: np.ndarray | None, rel: float) -> Classes:
    """Classes of items whose data agree within ``rel``, entry by entry.

    Two items are near when their values have the same signs (zeros only with zeros) and
    every non-zero value of one is within a factor ``exp(rel)`` (about ``1 + rel``) of the
    other's. Rows are sorted along a fixed positive direction of their logarithms (near rows
    project within ``rel`` times the direction's sum of each other), cut into runs where the
    projection jumps, and each row joins its run's first row if it is near it; the rest are
    sorted again, at most `NEAR_PASSES` times, then left alone. So every member of a class is
    near its leader (members are within ``2 rel`` of each other), and rows near each other
    usually, but not always, share a class (which costs a class, never correctness). Not
    exact: a builder solving over these classes certifies the expanded point on its original
    program before using it.

    Parameters
    ----------
    *data : ndarray
        Arrays whose first axis indexes the ``n`` items (any trailing shape; ``None`` entries
        are skipped), finite.
    rel : float
        The relative tolerance per entry (on the logarithms of the magnitudes).

    Returns
    -------
    Classes

    Examples
    --------
    >>> import numpy as np
    >>> u = np.array([[1.0, 2.0], [1.0 + 1e-12, 2.0], [1.0, 2.1], [0.0, 2.0]])
    >>> near_classes(u, rel=1e-8).counts
    array([2, 1, 1])
    >>> near_classes(np.array([-1.0, -1.0 - 1e-12, 1.0]), rel=1e-8).inverse
    array([0, 0, 1])
    """
    u = _stacked(data)
    n, d = u.shape
    if not np.isfinite(u).all():
        raise InputError("near_classes needs finite data", argument="data")
    if n <= 1 or not _any_near_pair(u, rel):  # no two rows near, so none identical either
        return _identity(n)
    mag = np.abs(u)
    logs = np.log(np.where(mag > 0, mag, 1.0))  # a zero reads 0; the pattern tells it apart
    pattern = exact_classes(np.sign(u)).inverse
    direction = screen_direction(d)
    jump = rel * float(direction.sum())
    label = np.arange(n)
    todo = label
    for _ in range(NEAR_PASSES):
        proj = (logs[todo] * direction).sum(axis=1)
        order = np.lexsort((proj, pattern[todo]))
        rows = todo[order]
        cut = np.ones(rows.size, dtype=bool)
        cut[1:] = (np.diff(pattern[rows]) != 0) | (np.diff(proj[order]) > jump)
        leader = rows[cut][np.cumsum(cut) - 1]
        near = np.abs(logs[rows] - logs[leader]).max(axis=1, initial=0.0) <= rel
        label[rows[near]] = leader[near]
        todo = rows[~near]  # every leader is near itself: each pass settles its runs' leaders
        if todo.size <= 1:
            break
    return classes_of_labels(label)


def _any_near_pair(u: np.ndarray, rel: float) -> bool:
    """Whether some two rows of ``u`` are near (a screen on the magnitudes: rows adjacent
    along a positive direction whose projections are within about ``rel`` relative are
    compared entry by entry; a near pair with another row projected between them may be
    missed, which only costs a merge)."""
    mag = np.abs(u)
    with np.errstate(over="ignore", invalid="ignore"):
        proj = (mag * screen_direction(u.shape[1])).sum(axis=1)
    if not np.isfinite(proj).all():
        return True
    order = np.argsort(proj, kind="stable")
    p = proj[order]
    close = np.flatnonzero(np.diff(p) <= NEAR_SCREEN * rel * p[1:])
    a, b = mag[order[close]], mag[order[close + 1]]
    with np.errstate(over="ignore", invalid="ignore"):
        gap = np.abs(a - b) <= NEAR_SCREEN * rel * np.maximum(a, b)
    return bool(gap.all(axis=1).any())
