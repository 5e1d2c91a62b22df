"""Upper bounds of water-filling's saturation (Gavel §4.3): each job's largest level and the
fewest workers it holds there, pairs and placement columns included.

A job's level is capped by its best column (its time row caps the time it runs); the
saturation rule (a') and the saturation jump (`fairalloc.throughput.water_path`) freeze a job
whose level reaches that cap, and skip a probe the cluster's workers cannot hold. Every
operation is vectorised over the instance's memberships.
"""

from __future__ import annotations

import numpy as np

from .instance import ColumnInstance

__all__ = ["best_levels", "group_cumsum", "saturation_workers"]


def best_levels(inst: ColumnInstance, unorm: np.ndarray) -> np.ndarray:
    """Each job's largest possible level ``u_m = unorm_m T_m x``: ``unorm_m`` times the best
    rate of any column it is a member of (single, pair or placement column).

    Job ``m``'s time row ``sum_{c ni m} x_c <= 1`` (``x >= 0``) caps ``T_m x`` at its largest
    rate ``max_c T_mc``, also where its best column is a pair (issue #29: with pairs every
    job's maximum was taken as ``inf``, no saturation was seen, and Gavel's packed
    water-filling solved one level LP per saturating job). ``inf`` for a job whose rate and
    time matrices differ in structure (no such instance is built; kept for safety).

    Examples
    --------
    >>> import numpy as np, fairalloc as fa
    >>> from fairalloc.throughput.instance import ColumnInstance
    >>> jobs = fa.Jobs([[1.0, 2.0], [3.0, 0.5]])
    >>> pairs = fa.JobPairs([[0, 1]], [[[2.5, 1.0], [0.0, 0.0]]])
    >>> best_levels(ColumnInstance(jobs, fa.Cluster({"a": 1, "b": 1}), pairs=pairs),
    ...             np.ones(2)).tolist()
    [2.5, 3.0]
    """
    T, M = inst.Tm, inst.M
    n = unorm.size
    if not (np.array_equal(T.indptr, M.indptr) and np.array_equal(T.indices, M.indices)):
        return np.full(n, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(M.data > 0, T.data / M.data, np.inf)
    rows = np.repeat(np.arange(n), np.diff(T.indptr))
    best = np.zeros(n)
    np.maximum.at(best, rows, rate)
    return unorm * best


def saturation_workers(inst: ColumnInstance) -> np.ndarray:
    """Each job's fewest workers held while it runs at its largest level (`best_levels`):
    a job at its maximum runs only columns of its best rate, all the time, each holding its
    workers shared by its members (``inf`` for an instance with class multiplicities, whose
    columns stand for several jobs; no bound is claimed there).

    The sum over jobs is a lower bound on the workers used when every job is at its maximum;
    above the cluster's workers that point is infeasible (`saturation_jump` skips its
    probe).

    Examples
    --------
    >>> import numpy as np, fairalloc as fa
    >>> from fairalloc.throughput.instance import ColumnInstance
    >>> jobs = fa.Jobs([[1.0, 2.0], [3.0, 0.5]], scale_factor=[2, 1])
    >>> pairs = fa.JobPairs([[0, 1]], [[[0.5, 3.0], [0.0, 0.0]]])
    >>> saturation_workers(ColumnInstance(jobs, fa.Cluster({"a": 2, "b": 2}), pairs=pairs)
    ...                    ).tolist()
    [2.0, 1.0]
    """
    T, M = inst.Tm, inst.M
    n = inst.n
    if inst.col_mult is not None or not (np.array_equal(T.indptr, M.indptr)
                                         and np.array_equal(T.indices, M.indices)):
        return np.full(n, np.inf)
    members = np.bincount(T.indices, minlength=inst.E)
    share = inst.col_workers / np.maximum(members, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(M.data > 0, T.data / M.data, np.inf)
    rows = np.repeat(np.arange(n), np.diff(T.indptr))
    best = np.zeros(n)
    np.maximum.at(best, rows, rate)
    top = rate >= best[rows]
    need = np.full(n, np.inf)
    np.minimum.at(need, rows[top], share[T.indices[top]])
    return need


def group_cumsum(v: np.ndarray, first: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sum of finite ``v`` restarted at every ``first`` (sorted groups;
    ``gid``: each entry's group).

    Examples
    --------
    >>> group_cumsum(np.array([1.0, 2.0, 3.0]), np.array([True, False, True]),
    ...              np.array([0, 0, 1])).tolist()
    [1.0, 3.0, 3.0]
    """
    c = np.cumsum(v)
    start = (c - v)[first]
    return c - start[gid]
