"""Clusters and job sets (Gavel §3): clusters, throughputs, gangs, weights, job sets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ...errors import InputError
from ._common import (
    ACCELERATOR_TYPES,
    PERMILLE,
    Range,
    Size,
    as_count,
    density_permille,
    fmt_array,
    plural,
    reals,
    size_bounds,
    value_draws,
    value_range,
)


# ============================================================================================
# clusters and job sets (Gavel §3)
# ============================================================================================
def clusters(*, types: Size = (1, 3), workers: Size = (1, 8),
             names: Sequence[str] = ACCELERATOR_TYPES) -> st.SearchStrategy[Any]:
    """`fairalloc.Cluster` with ``types`` accelerator types of ``workers``
    each.

    Type names come from ``names`` in order (``type<k>`` beyond its end); worker counts
    shrink towards 1.
    """
    from ...data import Cluster

    tlo, thi = size_bounds(types, "types")
    wlo, whi = size_bounds(workers, "workers")
    pool = tuple(str(x) for x in names)
    if len(set(pool)) != len(pool):
        raise InputError("names repeats a type name", argument="names")

    @st.composite
    def draw_cluster(draw: st.DrawFn) -> Cluster:
        k = draw(st.integers(tlo, thi))
        caps = draw(arrays(np.int64, k, elements=st.integers(wlo, whi)))
        labels = [pool[i] if i < len(pool) else f"type{i}" for i in range(k)]
        return Cluster({t: int(c) for t, c in zip(labels, caps)})

    return draw_cluster()


def throughputs(n: int, k: int, *, values: Range = (0.5, 100.0), density: float = 0.7,
                integers: bool = False, runnable: np.ndarray | None = None
                ) -> st.SearchStrategy[np.ndarray]:
    """Throughput matrices (n, k) in steps/s; zero means "cannot run on that type".

    Every job can run somewhere: its favourite type gets a positive throughput. With
    ``runnable`` (boolean (n, k)) the favourite is drawn among the ``True`` entries of its
    row (e.g. the types its gang fits on); every row of ``runnable`` needs one.
    """
    nn = as_count(n, "n")
    kk = as_count(k, "k")
    lo, hi = value_range(values, "values")
    zero = density_permille(density)
    vals = value_draws(lo, hi, bool(integers))
    if runnable is not None:
        fit = np.asarray(runnable, dtype=bool)
        if fit.shape != (nn, kk):
            raise InputError(f"runnable has shape {fit.shape}, expected {(nn, kk)}",
                             argument="runnable")
        if not fit.any(axis=1).all():
            i = int(np.flatnonzero(~fit.any(axis=1))[0])
            raise InputError(f"runnable[{i}] is all False", argument="runnable", index=(i,))
    else:
        fit = np.ones((nn, kk), dtype=bool)

    @st.composite
    def draw_throughput(draw: st.DrawFn) -> np.ndarray:
        values_ = draw(arrays(np.float64, (nn, kk), elements=vals))
        roll = draw(arrays(np.int64, (nn, kk), elements=st.integers(0, PERMILLE - 1)))
        tp = np.where(roll >= zero, values_, 0.0)
        # favourite: the r-th runnable type of the row (r drawn, taken modulo the count)
        count = fit.sum(axis=1)
        r = draw(arrays(np.int64, nn, elements=st.integers(0, kk - 1))) % count
        fav = np.argmax(np.cumsum(fit, axis=1) > r[:, None], axis=1)
        fav_val = draw(arrays(np.float64, nn, elements=vals))
        rows = np.arange(nn)
        tp[rows, fav] = np.where(tp[rows, fav] > 0, tp[rows, fav], fav_val)
        return tp

    return draw_throughput()


def scale_factors(n: int, *, max_scale_factor: int = 1, powers_of_two: bool = False
                  ) -> st.SearchStrategy[np.ndarray]:
    """Gang sizes (workers a job uses at once), integers in ``[1, max_scale_factor]``.

    ``powers_of_two`` draws 1, 2, 4, ... as distributed training jobs usually use.
    """
    nn = as_count(n, "n")
    top = as_count(max_scale_factor, "max_scale_factor")
    if powers_of_two:
        exps = int(math.floor(math.log2(top)))
        elem = st.integers(0, exps).map(lambda e: float(2 ** e))
    else:
        elem = st.integers(1, top).map(float)
    return arrays(np.float64, nn, elements=elem)


def weights(n: int, *, values: Range = (0.25, 4.0)) -> st.SearchStrategy[np.ndarray]:
    """Positive priority weights; they shrink towards 1 (unweighted)."""
    nn = as_count(n, "n")
    lo, hi = value_range(values, "values")
    return arrays(np.float64, nn, elements=reals(lo, hi))


def job_sets(cluster: Any, *, n: Size = (1, 5), values: Range = (0.5, 100.0),
             density: float = 0.7, integers: bool = False, max_scale_factor: int = 1,
             weighted: bool = False, weight_values: Range = (0.25, 4.0),
             steps: Range | None = (100.0, 10000.0), elapsed: Range | None = None,
             isolated: Range | None = None) -> st.SearchStrategy[Any]:
    """`fairalloc.Jobs` that can all be scheduled on ``cluster``.

    Gang sizes are drawn up to ``min(max_scale_factor, largest capacity)`` and every job gets
    a positive throughput on a type its gang fits on (``Jobs.check_cluster`` passes).

    Parameters
    ----------
    cluster : fairalloc.Cluster
    n : int or (int, int)
        Number of jobs.
    values, density, integers
        Throughput range, fraction of non-zero throughputs, integer throughputs
        (`fairalloc.testing.strategies.throughputs`).
    max_scale_factor : int
        Largest gang size.
    weighted : bool
        Draw priority weights (else all 1).
    steps : (float, float) or None
        Range of ``steps_remaining`` (needed by finish-time, makespan and SJF policies);
        ``None`` leaves it unset.
    elapsed : (float, float) or None
        Range of ``elapsed`` seconds (FIFO order, finish-time fairness); default all zero.
    isolated : (float, float) or None
        Range of ``isolated_elapsed`` seconds (multi-round state: the time each job would have
        run alone so far, Themis' and finish-time fairness' history); default unset.
    """
    from ...data import Cluster, Jobs

    if not isinstance(cluster, Cluster):
        raise InputError(f"cluster must be a fairalloc.Cluster, got {type(cluster).__name__}",
                         argument="cluster")
    nlo, nhi = size_bounds(n, "n")
    top = min(as_count(max_scale_factor, "max_scale_factor"), int(cluster.capacity.max()))
    k = cluster.num_types
    cap = cluster.capacity
    value_range(values, "values")
    density_permille(density)
    if weighted:
        value_range(weight_values, "weight_values")
    if steps is not None:
        value_range(steps, "steps")
    if elapsed is not None:
        value_range(elapsed, "elapsed", allow_zero=True)
    if isolated is not None:
        value_range(isolated, "isolated", allow_zero=True)

    @st.composite
    def draw_jobs(draw: st.DrawFn) -> Jobs:
        nn = draw(st.integers(nlo, nhi))
        sf = draw(scale_factors(nn, max_scale_factor=top))
        fits = sf[:, None] <= cap[None, :]
        tp = draw(throughputs(nn, k, values=values, density=density, integers=integers,
                              runnable=fits))
        w = draw(weights(nn, values=weight_values)) if weighted else None
        rem = (draw(arrays(np.float64, nn, elements=reals(*steps)))
               if steps is not None else None)
        el = (draw(arrays(np.float64, nn, elements=reals(*elapsed)))
              if elapsed is not None else None)
        iso = (draw(arrays(np.float64, nn, elements=reals(*isolated)))
               if isolated is not None else None)
        return Jobs(tp, scale_factor=sf, weight=w, steps_remaining=rem, elapsed=el,
                    isolated_elapsed=iso)

    return draw_jobs()


class ClusterState:
    """A cluster with drained types: ``types`` and ``capacity`` as `fairalloc.Cluster` has
    them, but a type may have 0 workers (drained or failed; with multi-round state, capacity
    removed mid-trace). `fairalloc.Cluster` lists only types with workers, so a cluster domain
    instance with a drained type gives its policy this object instead (`fairalloc.solve_round`
    and Gavel's ``cluster_spec`` take such a cluster; ``workers`` is its mapping).

    Examples
    --------
    >>> c = ClusterState({"v100": 2, "k80": 0})
    >>> c.drained_types, c.present
    (('k80',), Cluster({'v100': 2}))
    """

    types: tuple[str, ...]
    capacity: np.ndarray

    def __init__(self, workers: dict[str, int]) -> None:
        cap = np.array([int(v) for v in workers.values()], dtype=np.float64)
        if cap.size == 0 or np.any(cap < 0) or not np.any(cap > 0):
            raise InputError(f"workers {workers!r} needs a type with workers and none "
                             "negative", argument="workers")
        cap.flags.writeable = False
        object.__setattr__(self, "types", tuple(str(t) for t in workers))
        object.__setattr__(self, "capacity", cap)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ClusterState is immutable")

    @property
    def num_types(self) -> int:
        """Number of accelerator types (drained ones included)."""
        return len(self.types)

    @property
    def total_workers(self) -> float:
        """Workers of all types."""
        return float(self.capacity.sum())

    @property
    def workers(self) -> dict[str, int]:
        """``{type: workers}`` (0 for a drained type), as `fairalloc.solve_round` takes it."""
        return {t: int(c) for t, c in zip(self.types, self.capacity)}

    @property
    def drained_types(self) -> tuple[str, ...]:
        """The types with no workers."""
        return tuple(t for t, c in zip(self.types, self.capacity) if c == 0)

    @property
    def present(self) -> Any:
        """The `fairalloc.Cluster` of the types with workers."""
        from ...data import Cluster

        return Cluster({t: c for t, c in self.workers.items() if c > 0})

    def __repr__(self) -> str:
        return f"ClusterState({self.workers!r})"


@dataclass(frozen=True, eq=False)
class ClusterInstance:
    """Jobs on a cluster: what a Gavel-style policy ``policy(jobs, cluster)`` is given."""

    jobs: Any
    cluster: Any
    #: entity label of each job (hierarchical policies), or ``None``
    entities: tuple[int, ...] | None = None
    #: ``{entity: weight}`` and ``{entity: "fairness" | "fifo"}`` (with ``entities``)
    entity_weights: dict[int, float] | None = None
    entity_policies: dict[int, str] | None = None
    #: job pairs that may share a worker (`fairalloc.JobPairs`, space sharing), or ``None``
    pairs: Any = None

    @property
    def n(self) -> int:
        """Number of jobs."""
        return int(self.jobs.n)

    def args(self) -> tuple[Any, Any]:
        """``(jobs, cluster)`` (both immutable)."""
        return self.jobs, self.cluster

    def kwargs(self) -> dict[str, Any]:
        """``entities=``, ``entity_weights=``, ``entity_policies=`` when the instance has
        entities (as `fairalloc.water_filling` takes them) and ``pairs=`` when it has job
        pairs (as every `fairalloc` throughput policy takes them), else nothing."""
        out: dict[str, Any] = {} if self.pairs is None else {"pairs": self.pairs}
        if self.entities is None:
            return out
        return {"entities": list(self.entities), "entity_weights": dict(self.entity_weights or {}),
                "entity_policies": dict(self.entity_policies or {}), **out}

    def key(self) -> bytes:
        """Bytes that identify the instance (for caching policy outputs)."""
        j = self.jobs
        parts = [repr(j.throughput.shape).encode(), j.throughput.tobytes(),
                 j.scale_factor.tobytes(), j.weight.tobytes(), j.elapsed.tobytes(),
                 b"" if j.steps_remaining is None else j.steps_remaining.tobytes(),
                 b"" if j.isolated_elapsed is None else j.isolated_elapsed.tobytes(),
                 repr(self.cluster.types).encode(), self.cluster.capacity.tobytes(),
                 repr((self.entities, self.entity_weights, self.entity_policies)).encode()]
        if self.pairs is not None:
            parts += [self.pairs.members.tobytes(), self.pairs.throughput.tobytes()]
        return b"|".join(parts)

    def with_row(self, agent: int, row: np.ndarray) -> ClusterInstance:
        """The same jobs with job ``agent``'s throughput row replaced (a misreport)."""
        from ...data import Jobs

        j = self.jobs
        tp = np.array(j.throughput, copy=True)
        tp[agent] = row
        return ClusterInstance(Jobs(tp, scale_factor=j.scale_factor, weight=j.weight,
                                    ids=j.ids, steps_remaining=j.steps_remaining,
                                    elapsed=j.elapsed, isolated_elapsed=j.isolated_elapsed),
                               self.cluster, self.entities, self.entity_weights,
                               self.entity_policies, self.pairs)

    def _columns(self) -> list[tuple[str, np.ndarray]]:
        j = self.jobs
        cols = [("scale_factor", j.scale_factor), ("weight", j.weight)]
        if j.steps_remaining is not None:
            cols.append(("steps_remaining", j.steps_remaining))
        if np.any(j.elapsed != 0):
            cols.append(("elapsed", j.elapsed))
        if j.isolated_elapsed is not None:
            cols.append(("isolated_elapsed", j.isolated_elapsed))
        return cols

    def describe(self) -> str:
        """The cluster and the jobs, one array per line."""
        cols = self._columns()
        width = max(len("throughput"), *(len(name) for name, _ in cols))
        pad = " " * (width + 5)
        lines = [f"cluster {self.cluster!r}; {plural(self.n, 'job')} on types "
                 f"{list(self.cluster.types)}",
                 f"  {'throughput':<{width}} = "
                 + fmt_array(self.jobs.throughput).replace("\n", "\n" + pad)]
        lines += [f"  {name:<{width}} = {fmt_array(v)}" for name, v in cols]
        if self.entities is not None:
            lines.append(f"  entities = {list(self.entities)}, entity_weights = "
                         f"{self.entity_weights}, entity_policies = {self.entity_policies}")
        if self.pairs is not None:
            lines.append(f"  pairs = {self.pairs.members.tolist()} (rows {self.n}.. of the "
                         "allocation), pair throughput [pair, type, member] = "
                         + fmt_array(self.pairs.throughput).replace("\n", " "))
        return "\n".join(lines)

    def as_code(self, name: str = "policy") -> str:
        """A Python call that reproduces the policy's input."""
        kw = ", ".join(f"{k}={v.tolist()!r}" for k, v in self._columns())
        workers = {t: int(c) for t, c in zip(self.cluster.types, self.cluster.capacity)}
        ent = "".join(f", {k}={v!r}" for k, v in self.kwargs().items() if k != "pairs")
        if self.pairs is not None:
            ent += (f", pairs=fa.JobPairs({self.pairs.members.tolist()!r}, "
                    f"{self.pairs.throughput.tolist()!r})")
        cl = ("fa.testing.strategies.ClusterState"
              if isinstance(self.cluster, ClusterState) else "fa.Cluster")
        return (f"{name}(fa.Jobs({self.jobs.throughput.tolist()!r}, {kw}), "
                f"{cl}({workers!r}){ent})")


def cluster_instances(*, n: Size = (1, 4), types: Size = (1, 3), workers: Size = (1, 4),
                      names: Sequence[str] = ACCELERATOR_TYPES, values: Range = (0.5, 100.0),
                      density: float = 0.7, integers: bool = False, max_scale_factor: int = 1,
                      weighted: bool = False, weight_values: Range = (0.25, 4.0),
                      steps: Range | None = (100.0, 10000.0), elapsed: Range | None = None,
                      isolated: Range | None = None, entities: Size | None = None,
                      entity_weight_values: Range = (0.25, 4.0),
                      entity_policies: Sequence[str] = ("fairness",),
                      drained: Size | None = None, pairs: Size | None = None,
                      pair_slowdown: Range = (0.2, 1.0)
                      ) -> st.SearchStrategy[ClusterInstance]:
    """A cluster (`clusters`) and jobs that fit it
    (`fairalloc.testing.strategies.job_sets`, with ``values`` to ``isolated`` as
    there).

    ``entities`` (a count or range, e.g. ``(1, 3)``) groups the jobs into that many entities
    (at most one per job) with weights from ``entity_weight_values`` and a policy each drawn
    from ``entity_policies`` (``"fairness"``, ``"fifo"``): the input of hierarchical
    water-filling (Gavel §4.2), passed to the policy as ``entities=``, ``entity_weights=``,
    ``entity_policies=``.

    ``drained`` (a count or range, e.g. ``1`` or ``(0, 1)``) adds that many *drained* types:
    types with 0 workers (drained or failed; with ``isolated=`` state, capacity removed
    mid-trace), placed among the others, with throughputs for the jobs as if they had
    workers. `fairalloc.Cluster` lists only types with workers, so with ``drained`` set every
    instance (even one with none drained) gives its policy a `ClusterState` (``types``,
    ``capacity`` with zeros, ``workers``, ``present``) instead; every job can still run on a
    type with workers.

    ``pairs`` (a count or range) draws that many distinct job pairs that may share a worker
    (space sharing, Gavel §3.1), passed to the policy as ``pairs=`` (`fairalloc.JobPairs`):
    on every type both members can run on, each member runs at a fraction drawn from
    ``pair_slowdown`` of its own throughput (colocated jobs slow each other down, Gavel Fig.
    4); elsewhere the pair cannot run. The allocation then has a row per job and then a row per
    pair (``n + P`` rows, as a result's ``x`` stacked over its ``pair_x``).

    Examples
    --------
    >>> from fairalloc.testing.strategies import minimal
    >>> inst = minimal(cluster_instances(), lambda x: x.n == 2)
    >>> inst.jobs.throughput.shape, inst.cluster.types
    ((2, 1), ('v100',))
    """
    cl = clusters(types=types, workers=workers, names=names)
    size_bounds(n, "n")
    ebounds = None if entities is None else size_bounds(entities, "entities")
    if entities is not None:
        value_range(entity_weight_values, "entity_weight_values")
        pols = tuple(entity_policies) if not isinstance(entity_policies, str) else ()
        bad = [p for p in pols if p not in ("fairness", "fifo")]
        if not pols or bad:
            raise InputError(f"entity_policies must name 'fairness' and/or 'fifo', got "
                             f"{entity_policies!r}", argument="entity_policies")
    dbounds = None if drained is None else size_bounds(drained, "drained", minimum=0)
    pbounds = None if pairs is None else size_bounds(pairs, "pairs", minimum=0)
    if pairs is not None:
        slo, shi = value_range(pair_slowdown, "pair_slowdown")
        if shi > 1.0:
            raise InputError(f"pair_slowdown must lie in (0, 1] (a colocated job runs at most "
                             f"as fast as alone), got {pair_slowdown!r}",
                             argument="pair_slowdown")

    @st.composite
    def draw_instance(draw: st.DrawFn) -> ClusterInstance:
        c = draw(cl)
        jobs = draw(job_sets(
            c, n=n, values=values, density=density, integers=integers,
            max_scale_factor=max_scale_factor, weighted=weighted, weight_values=weight_values,
            steps=steps, elapsed=elapsed, isolated=isolated))
        if dbounds is not None:
            c, jobs = draw(_drain(c, jobs, dbounds, names, values, integers))
        pp = None if pbounds is None else draw(_job_pairs(jobs, pbounds, pair_slowdown))
        if ebounds is None:
            return ClusterInstance(jobs, c, pairs=pp)
        m = draw(st.integers(min(ebounds[0], jobs.n), min(ebounds[1], jobs.n)))
        raw = draw(arrays(np.int64, jobs.n, elements=st.integers(0, m - 1)))
        used = {e: i for i, e in enumerate(dict.fromkeys(raw.tolist()))}  # first-seen order
        labels = tuple(used[e] for e in raw.tolist())
        k = len(used)
        ew = draw(arrays(np.float64, k, elements=reals(*entity_weight_values)))
        ep = [draw(st.sampled_from(pols)) for _ in range(k)]
        return ClusterInstance(jobs, c, labels, dict(enumerate(ew.tolist())),
                               dict(enumerate(ep)), pp)

    return draw_instance()


@st.composite
def _drain(draw: st.DrawFn, cluster: Any, jobs: Any, bounds: tuple[int, int],
           names: Sequence[str], values: Range, integers: bool) -> tuple[ClusterState, Any]:
    """``cluster`` with ``bounds`` drained types (0 workers) inserted among its types, and
    ``jobs`` with throughputs on them (shrinks to none drained, then to placed first)."""
    from ...data import Jobs

    d = draw(st.integers(*bounds))
    k = cluster.num_types
    if d == 0:  # still a ClusterState: the policy sees one cluster type in the domain
        return ClusterState({t: int(c) for t, c in zip(cluster.types, cluster.capacity)}), jobs
    lo, hi = value_range(values, "values")
    extra = draw(arrays(np.float64, (jobs.n, d), elements=value_draws(lo, hi, bool(integers))))
    # where each drained type goes: positions among the k + d types (shrinks to the end)
    slots = draw(st.lists(st.integers(0, k), min_size=d, max_size=d))
    order = np.argsort(np.r_[np.arange(k) + 0.5, np.sort(slots)], kind="stable")
    cap = np.r_[cluster.capacity, np.zeros(d)][order]
    tp = np.hstack([jobs.throughput, extra])[:, order]
    pool = tuple(str(x) for x in names)
    labels = [pool[i] if i < len(pool) else f"type{i}" for i in range(k + d)]
    state = ClusterState({t: int(c) for t, c in zip(labels, cap)})
    return state, Jobs(tp, scale_factor=jobs.scale_factor, weight=jobs.weight,
                       steps_remaining=jobs.steps_remaining, elapsed=jobs.elapsed,
                       isolated_elapsed=jobs.isolated_elapsed)


@st.composite
def _job_pairs(draw: st.DrawFn, jobs: Any, bounds: tuple[int, int], slowdown: Range) -> Any:
    """``bounds`` distinct pairs of ``jobs`` with pair throughputs (see `cluster_instances`);
    ``None`` when the jobs have no pair to form."""
    from ...data import JobPairs

    n = jobs.n
    a, b = np.triu_indices(n, 1)
    if a.size == 0:
        return None
    P = draw(st.integers(min(bounds[0], a.size), min(bounds[1], a.size)))
    if P == 0:
        return None
    chosen = draw(st.lists(st.integers(0, a.size - 1), min_size=P, max_size=P, unique=True))
    mem = np.stack([a[chosen], b[chosen]], axis=1)
    T = jobs.throughput
    k = T.shape[1]
    frac = draw(arrays(np.float64, (P, k, 2), elements=reals(*slowdown)))
    solo = np.stack([T[mem[:, 0]], T[mem[:, 1]]], axis=2)  # (P, k, 2)
    both = (solo > 0).all(axis=2, keepdims=True)
    return JobPairs(mem, np.where(both, frac * solo, 0.0))
