"""Validated, immutable inputs: accelerator clusters, job sets and job pairs (space sharing).

Both types copy what they are given into read-only arrays, so neither the caller's arrays nor
the library's copies can be changed after validation.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import as_array, fmt_index
from .errors import InputError

__all__ = ["Cluster", "JobPairs", "Jobs"]

#: ACCURACY: smallest representable job weight, or positive throughput, relative to the largest
#: (as markets' budgets): every LP divides by them
_MIN_RATIO = 1e-300


@dataclass(frozen=True, init=False)
class Cluster:
    """Accelerator types and how many workers (devices) of each the cluster has.

    Parameters
    ----------
    workers : mapping of str to int
        Accelerator type -> number of workers, in the order the throughput columns use.

    Attributes
    ----------
    types : tuple of str
    capacity : ndarray of float, shape (k,)
        Workers per type (read-only).

    Examples
    --------
    >>> c = Cluster({"v100": 4, "k80": 1})
    >>> c.types, c.capacity.tolist(), c.num_types
    (('v100', 'k80'), [4.0, 1.0], 2)
    """

    types: tuple[str, ...]
    capacity: np.ndarray

    def __init__(self, workers: Mapping[str, float]) -> None:
        if not isinstance(workers, Mapping):
            raise InputError(
                f"workers must be a mapping of accelerator type to worker count, got "
                f"{type(workers).__name__}",
                argument="workers",
            )
        if len(workers) == 0:
            raise InputError("workers is empty: a cluster needs at least one type",
                             argument="workers")
        types = tuple(str(t) for t in workers)
        if len(set(types)) != len(types):
            dup = next(t for t in types if types.count(t) > 1)
            raise InputError(f"workers names type {dup!r} twice (type names are compared as "
                             "strings)", argument="workers")
        cap = as_array(list(workers.values()), "workers", ndim=1, integer=True)
        if not cap.all():
            i = int(np.flatnonzero(cap == 0)[0])
            # every formulation divides by the capacity (X^equal, unit scaling, prices): a
            # type without workers is a cluster *state*, handled one level up
            raise InputError(
                f"workers[{i}] is 0 (type {types[i]!r} has no workers): a Cluster lists the "
                "types with capacity. For a cluster with drained or failed types use "
                "fairalloc.solve_round / fairalloc.RoundPolicy (or the Gavel adapter), which "
                "solve on the present types, give 0 on the others and report them",
                argument="workers", index=(i,))
        object.__setattr__(self, "types", types)
        object.__setattr__(self, "capacity", cap)

    @classmethod
    def _validated(cls, types: tuple[str, ...], capacity: np.ndarray) -> Cluster:
        """`Cluster` from names and counts fairalloc already validated as ``__init__`` checks
        them (`fairalloc.solve_round`'s readers: unique ``str`` names, positive integer
        counts, at least one type); nothing is checked again."""
        self = object.__new__(cls)
        if capacity.flags.writeable:  # (a selection of the present types: a new array)
            capacity.flags.writeable = False
        object.__setattr__(self, "types", types)
        object.__setattr__(self, "capacity", capacity)
        return self

    @property
    def num_types(self) -> int:
        """Number of accelerator types ``k``."""
        return len(self.types)

    @property
    def total_workers(self) -> float:
        """Total number of workers over all types."""
        return float(self.capacity.sum())

    def __repr__(self) -> str:
        body = ", ".join(f"{t!r}: {int(c)}" for t, c in zip(self.types, self.capacity))
        return f"Cluster({{{body}}})"


def _check_rates(tp: np.ndarray) -> None:
    """`fairalloc.InputError` for a job that runs on no type or a positive rate too small
    next to the largest (the checks of `Jobs` across the validated rates ``tp``)."""
    dead = ~(tp > 0).any(axis=1)
    if dead.any():
        i = int(np.flatnonzero(dead)[0])
        raise InputError(
            f"throughput[{i}] is all zero: job {i} cannot run on any accelerator type",
            argument="throughput",
            index=(i,),
        )
    top = float(tp.max(initial=0.0))
    tiny = (tp > 0) & (tp < _MIN_RATIO * top)
    if tiny.any():  # (fuzz seed 18: 1e308 beside 5e-10 overflowed a stage's objective)
        i, j = (int(v) for v in np.argwhere(tiny)[0])
        raise InputError(f"throughput[{i}, {j}] = {tp[i, j]:g} is too small next to the "
                         f"largest throughput {top:g} to be represented (ratio below "
                         f"{_MIN_RATIO:g}); use 0 where a job cannot run, or other units",
                         argument="throughput", index=(i, j))


def _check_weights(w: np.ndarray) -> None:
    """`fairalloc.InputError` for a weight too small next to the largest (validated ``w``)."""
    tiny = w < _MIN_RATIO * float(np.max(w, initial=0.0))
    if tiny.any():  # (fuzz seed 16: a weight of 5e-324, 1 / w = inf in every LP)
        i = int(np.flatnonzero(tiny)[0])
        raise InputError(f"weight[{i}] = {w[i]:g} is too small next to the largest weight "
                         f"to be represented (ratio below {_MIN_RATIO:g})",
                         argument="weight", index=(i,))


def _optional(value: Any, name: str, n: int, default: float | None, **kw: Any) -> np.ndarray | None:
    if value is None:
        if default is None:
            return None
        out = np.full(n, float(default))
        out.flags.writeable = False
        return out
    return as_array(value, name, ndim=1, shape=(n,), **kw)


@dataclass(frozen=True, init=False, eq=False)
class Jobs:
    """A set of jobs with their throughput on each accelerator type (Gavel §3).

    Parameters
    ----------
    throughput : array_like, shape (n, k)
        ``throughput[i, m]``: steps/s of job ``i`` on one allocation of type ``m`` (with its
        scale factor's workers). ``0`` means the job cannot run on that type; every job must
        be able to run somewhere.
    scale_factor : array_like of int, shape (n,), optional
        Workers a job uses at once (gang size); default 1.
    weight : array_like, shape (n,), optional
        Priority weights, positive; default 1.
    ids : sequence of hashable, optional
        Labels (unique); default ``0..n-1``.
    steps_remaining : array_like, shape (n,), optional
        Steps each job still has to run (needed by finish-time policies and makespan).
    elapsed : array_like, shape (n,), optional
        Seconds since each job arrived; default 0.
    isolated_elapsed : array_like, shape (n,), optional
        Seconds each job would have run so far with the whole of its 1/n share (Themis/Gavel
        finish-time fairness); default ``None``.

    Examples
    --------
    >>> jobs = Jobs([[40.0, 10.0], [12.0, 4.0]], weight=[1, 2], ids=["a", "b"])
    >>> jobs.n, jobs.num_types, jobs.ids
    (2, 2, ('a', 'b'))
    """

    throughput: np.ndarray
    scale_factor: np.ndarray
    weight: np.ndarray
    ids: tuple[Hashable, ...]
    steps_remaining: np.ndarray | None
    elapsed: np.ndarray
    isolated_elapsed: np.ndarray | None
    _index: dict[Hashable, int] = field(repr=False, compare=False)

    def __init__(
        self,
        throughput: Any,
        scale_factor: Any = None,
        weight: Any = None,
        ids: Sequence[Hashable] | None = None,
        steps_remaining: Any = None,
        elapsed: Any = None,
        isolated_elapsed: Any = None,
    ) -> None:
        tp = as_array(throughput, "throughput", ndim=2)
        n = tp.shape[0]
        _check_rates(tp)
        sf = _optional(scale_factor, "scale_factor", n, 1.0, positive=True, integer=True)
        w = _optional(weight, "weight", n, 1.0, positive=True)
        assert w is not None  # (a default is given)
        _check_weights(w)
        if ids is None:
            labels: tuple[Hashable, ...] = tuple(range(n))
        else:
            if isinstance(ids, str | bytes):
                raise InputError("ids must be a sequence of labels, got a string",
                                 argument="ids")
            try:
                labels = tuple(ids)
            except TypeError:
                raise InputError(f"ids must be a sequence of labels, got "
                                 f"{type(ids).__name__}", argument="ids") from None
            if len(labels) != n:
                raise InputError(f"ids has {len(labels)} entries for {n} jobs", argument="ids")
            seen: dict[Hashable, int] = {}
            for i, label in enumerate(labels):
                try:
                    hash(label)
                except TypeError:
                    raise InputError(f"ids[{i}] = {label!r} is not hashable", argument="ids",
                                     index=(i,)) from None
                if label in seen:
                    raise InputError(
                        f"ids[{i}] = {label!r} repeats ids[{seen[label]}]; ids must be unique",
                        argument="ids",
                        index=(i,),
                    )
                seen[label] = i
        object.__setattr__(self, "throughput", tp)
        object.__setattr__(self, "scale_factor", sf)
        object.__setattr__(self, "weight", w)
        object.__setattr__(self, "ids", labels)
        object.__setattr__(self, "steps_remaining",
                           _optional(steps_remaining, "steps_remaining", n, None))
        object.__setattr__(self, "elapsed", _optional(elapsed, "elapsed", n, 0.0))
        object.__setattr__(self, "isolated_elapsed",
                           _optional(isolated_elapsed, "isolated_elapsed", n, None))
        object.__setattr__(self, "_index", {label: i for i, label in enumerate(labels)})

    @classmethod
    def _validated(cls, throughput: np.ndarray, scale_factor: np.ndarray,
                   weight: np.ndarray | None, steps_remaining: np.ndarray | None,
                   elapsed: np.ndarray | None, isolated_elapsed: np.ndarray | None) -> Jobs:
        """`Jobs` (ids ``0..n-1``) from arrays fairalloc already validated as `Jobs` checks
        each field (`fairalloc.solve_round`'s readers: read-only float arrays of the right
        shapes, finite, signs and integrality checked): the checks across entries (a job
        that runs nowhere, rates or weights too small next to the largest) run as in
        ``__init__``, with the same errors; the per-entry ones are not repeated."""
        self = object.__new__(cls)
        n = throughput.shape[0]
        _check_rates(throughput)
        if weight is None:
            weight = _optional(None, "weight", n, 1.0)
        assert weight is not None  # (a default is given)
        _check_weights(weight)
        fields = (("throughput", throughput), ("scale_factor", scale_factor),
                  ("weight", weight), ("steps_remaining", steps_remaining),
                  ("elapsed", _optional(None, "elapsed", n, 0.0) if elapsed is None
                   else elapsed), ("isolated_elapsed", isolated_elapsed))
        for name, arr in fields:
            if arr is not None:
                if arr.flags.writeable:  # (a selection of the caller's rows: a new array)
                    arr.flags.writeable = False
                assert arr.dtype == np.float64 and arr.shape[0] == n, name
            object.__setattr__(self, name, arr)
        labels = tuple(range(n))
        object.__setattr__(self, "ids", labels)
        object.__setattr__(self, "_index", dict(zip(labels, labels)))
        return self

    @property
    def n(self) -> int:
        """Number of jobs."""
        return int(self.throughput.shape[0])

    @property
    def num_types(self) -> int:
        """Number of accelerator types (columns of ``throughput``)."""
        return int(self.throughput.shape[1])

    def index(self, job_id: Hashable) -> int:
        """Row of the job labelled ``job_id``."""
        try:
            return self._index[job_id]
        except KeyError:
            raise InputError(f"job_id: no job with id {job_id!r}", argument="job_id") from None

    def check_cluster(self, cluster: Cluster) -> None:
        """Raise `fairalloc.InputError` unless these jobs can be scheduled on
        ``cluster``.

        Checks that there is one throughput column per accelerator type and that every job's
        gang (scale factor) fits on at least one type it can run on.
        """
        if not isinstance(cluster, Cluster):
            raise InputError(f"cluster must be a fairalloc.Cluster, got {type(cluster).__name__}",
                             argument="cluster")
        if self.num_types != cluster.num_types:
            raise InputError(
                f"throughput has {self.num_types} columns but the cluster has "
                f"{cluster.num_types} accelerator types {cluster.types}",
                argument="throughput",
            )
        fits = (self.throughput > 0) & (self.scale_factor[:, None] <= cluster.capacity[None, :])
        bad = ~fits.any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"scale_factor{fmt_index([i])} = {self.scale_factor[i]:g} exceeds the workers of "
                f"every type job {self.ids[i]!r} can run on",
                argument="scale_factor",
                index=(i,),
            )

    def __repr__(self) -> str:
        return f"Jobs(n={self.n}, types={self.num_types})"


@dataclass(frozen=True, init=False, eq=False)
class JobPairs:
    """Pairs of jobs that may share a worker, with their colocated throughputs (§3.1).

    Parameters
    ----------
    members : array_like of int, shape (P, 2)
        Row indices ``(a, b)`` of the two jobs of each pair (``a != b``).
    throughput : array_like, shape (P, k, 2)
        ``throughput[p, j, i]``: steps/s of member ``i`` of pair ``p`` when the pair shares a
        worker of type ``j`` (0: the pair cannot run there).

    Examples
    --------
    The paper's example: jobs 0 and 1 colocated on a V100 run at 20 and 7.5 steps/s.

    >>> pairs = JobPairs([[0, 1]], [[[20.0, 7.5], [10.0, 5.0], [0.0, 0.0]]])
    >>> pairs.num_pairs
    1
    """

    members: np.ndarray
    throughput: np.ndarray

    def __init__(self, members: Any, throughput: Any) -> None:
        mem = as_array(members, "members", ndim=2, integer=True)
        if mem.shape[1] != 2:
            raise InputError(f"members must have shape (P, 2), got {mem.shape}",
                             argument="members")
        same = mem[:, 0] == mem[:, 1]
        if same.any():
            p = int(np.flatnonzero(same)[0])
            raise InputError(f"members[{p}] pairs job {int(mem[p, 0])} with itself",
                             argument="members", index=(p,))
        tp = as_array(throughput, "throughput", ndim=3, shape=(mem.shape[0], None, 2))
        m = mem.astype(np.int64)
        m.flags.writeable = False
        object.__setattr__(self, "members", m)
        object.__setattr__(self, "throughput", tp)

    @property
    def num_pairs(self) -> int:
        """Number of pairs ``P``."""
        return int(self.members.shape[0])

    def check(self, jobs: Jobs, cluster: Cluster) -> None:
        """Raise `fairalloc.InputError` unless the pairs fit ``jobs`` and
        ``cluster``."""
        if self.throughput.shape[1] != cluster.num_types:
            raise InputError(f"pair throughput has {self.throughput.shape[1]} types but the "
                             f"cluster has {cluster.num_types}", argument="pairs")
        bad = self.members >= jobs.n
        if bad.any():
            p = int(np.argwhere(bad)[0, 0])
            raise InputError(f"pairs.members[{p}] names job {int(self.members[p].max())} but "
                             f"there are {jobs.n} jobs", argument="pairs", index=(p,))
