"""Hypothesis strategies that build only valid fairalloc inputs.

Every strategy here draws inputs that the library's constructors and solvers accept as they
are: there is no ``assume()`` filtering anywhere, so no draw is thrown away and hypothesis can
shrink a failing example all the way down (fewer agents, fewer goods, zeros, round numbers)
to a counterexample a person can read. Validity is *built in* instead of filtered for: every
buyer gets one good it surely values, every job one accelerator type its gang surely fits on,
every scaling curve is built from per-GPU efficiencies that never rise, and so on.

Sizes and value ranges are controlled by arguments: a size is an ``int`` (exact) or an
inclusive ``(low, high)`` pair; a value range is a ``(low, high)`` pair of positive numbers.
Bad arguments raise :class:`fairalloc.InputError` when the strategy is *built*, not when it
draws.

=================================  ===============================================================
strategy                           draws
=================================  ===============================================================
:func:`utilities`                  linear utilities / Leontief demands, (n, m) or (n, m, T)
:func:`budgets`, :func:`supplies`  positive budgets (n,) and supplies
:func:`market_instances`           a whole market (:class:`MarketInstance`): linear, Leontief,
                                   static or over time (:func:`leontief_markets`,
                                   :func:`volatile_markets`)
:func:`clusters`                   :class:`fairalloc.Cluster` with accelerator types + capacities
:func:`throughputs`                throughput matrices with zeros for "cannot run"
:func:`scale_factors`,             gang sizes and priority weights
:func:`weights`
:func:`job_sets`                   :class:`fairalloc.Jobs` schedulable on a given cluster
:func:`cluster_instances`          a cluster and a job set (:class:`ClusterInstance`)
:func:`topologies`                 :class:`fairalloc.auctions.Topology` (GPUs, machines, racks)
:func:`bid_tables`                 Themis bid tables (:class:`fairalloc.auctions.BidTable`)
:func:`auction_instances`          bid tables, a topology and an offer (:class:`AuctionInstance`)
:func:`regime_models`              :class:`fairalloc.RegimeModel` (static, accordion, GNS, custom)
:func:`job_histories`              a job's observed epochs that follow its regime model
:func:`regime_forecasts`           :class:`fairalloc.RegimeForecast` from such a history
:func:`restatement_inputs`         arguments of :func:`fairalloc.restatement_posterior`
:func:`plan_jobs`,                 :class:`fairalloc.PlanJob` and job sets for
:func:`plan_instances`             :func:`fairalloc.plan_schedule`
:func:`scaling_curves`             Ares throughput curves at 1, 2, 4, ... GPUs (diminishing)
:func:`arrival_sequences`          arrivals, GPU-times, requests and curves for
                                   :func:`fairalloc.efq_schedule` (:class:`ArrivalSequence`)
:func:`minimal`                    the simplest draw of a strategy (where shrinking ends)
=================================  ===============================================================

Examples
--------
>>> from hypothesis import given, settings
>>> from fairalloc.testing import strategies as fst
>>> @settings(max_examples=5, database=None, derandomize=True)
... @given(fst.utilities(n=2, m=3))
... def test_every_buyer_values_something(u):
...     assert u.shape == (2, 3) and (u.max(axis=1) > 0).all()
>>> test_every_buyer_values_something()
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import Phase, find, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from .._validation import as_option
from ..errors import InputError

__all__ = [
    "ACCELERATOR_TYPES",
    "ArrivalSequence",
    "AuctionInstance",
    "ClusterInstance",
    "JobHistory",
    "MarketInstance",
    "PlanInstance",
    "arrival_sequences",
    "auction_instances",
    "bid_tables",
    "budgets",
    "cluster_instances",
    "clusters",
    "job_histories",
    "job_sets",
    "leontief_markets",
    "minimal",
    "market_instances",
    "plan_instances",
    "plan_jobs",
    "regime_forecasts",
    "regime_models",
    "restatement_inputs",
    "scale_factors",
    "scaling_curves",
    "supplies",
    "throughputs",
    "topologies",
    "utilities",
    "volatile_markets",
    "weights",
]

#: Default accelerator type names, in the order :func:`clusters` uses them.
ACCELERATOR_TYPES = ("v100", "p100", "k80", "a100", "t4", "h100")

Size = int | tuple[int, int]
Range = tuple[float, float]

# a per-entry draw below this many thousandths (of 1000) is a zero; shrinking drives it to 0,
# so minimal counterexamples are as sparse as they can be
_PERMILLE = 1000


# ============================================================================================
# argument validation (when a strategy is built)
# ============================================================================================
def _size(spec: Any, name: str, *, minimum: int = 1) -> tuple[int, int]:
    if isinstance(spec, bool):
        raise InputError(f"{name} must be an int or a (low, high) pair, got {spec!r}",
                         argument=name)
    if isinstance(spec, int | np.integer):
        lo = hi = int(spec)
    elif isinstance(spec, Sequence) and len(spec) == 2 and all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) for v in spec):
        lo, hi = int(spec[0]), int(spec[1])
    else:
        raise InputError(f"{name} must be an int or a (low, high) pair of ints, got {spec!r}",
                         argument=name)
    if lo < minimum or hi < lo:
        raise InputError(f"{name} = {spec!r} must satisfy {minimum} <= low <= high",
                         argument=name)
    return lo, hi


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InputError(f"{name} must be a positive int, got {value!r}", argument=name)
    return int(value)


def _range(spec: Any, name: str, *, allow_zero: bool = False) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in spec)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a (low, high) pair of numbers, got {spec!r}",
                         argument=name) from None
    ok = (math.isfinite(lo) and math.isfinite(hi) and lo <= hi
          and (lo >= 0 if allow_zero else lo > 0))
    if not ok:
        need = "0 <= low" if allow_zero else "0 < low"
        raise InputError(f"{name} = {spec!r} must be finite with {need} <= high",
                         argument=name)
    return lo, hi


def _density(value: Any, name: str = "density") -> int:
    """Permille of entries that are zero, from the fraction of non-zero entries."""
    try:
        d = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in [0, 1], got {value!r}",
                         argument=name) from None
    if not 0.0 <= d <= 1.0:
        raise InputError(f"{name} must be in [0, 1], got {value!r}", argument=name)
    return int(round(_PERMILLE * (1.0 - d)))


def _values(lo: float, hi: float, integers: bool) -> st.SearchStrategy[float]:
    if integers:
        ilo, ihi = math.ceil(lo), math.floor(hi)
        if ilo > ihi:
            raise InputError(f"values ({lo:g}, {hi:g}) contain no integer", argument="values")
        return st.integers(ilo, ihi).map(float)
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _sparse_positive(draw: st.DrawFn, shape: tuple[int, ...], vals: st.SearchStrategy[float],
                     zero_permille: int) -> np.ndarray:
    """Non-negative array of ``shape`` whose rows (axis 0) each have a positive entry."""
    n = shape[0]
    flat_len = int(np.prod(shape[1:]))
    values = draw(arrays(np.float64, (n, flat_len), elements=vals))
    roll = draw(arrays(np.int64, (n, flat_len), elements=st.integers(0, _PERMILLE - 1)))
    out = np.where(roll >= zero_permille, values, 0.0)
    # every row gets one surely positive entry: its favourite (valid by construction)
    fav = draw(arrays(np.int64, n, elements=st.integers(0, flat_len - 1)))
    fav_val = draw(arrays(np.float64, n, elements=vals))
    rows = np.arange(n)
    out[rows, fav] = np.where(out[rows, fav] > 0, out[rows, fav], fav_val)
    return out.reshape(shape)


def minimal(strategy: st.SearchStrategy[Any], condition: Any = None) -> Any:
    """The simplest value ``strategy`` draws (satisfying ``condition``): where shrinking ends.

    Handy to see what a strategy's minimal counterexamples look like.

    Examples
    --------
    >>> minimal(utilities(n=2, m=3)).tolist()
    [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    cond = (lambda _: True) if condition is None else condition
    conf = settings(database=None, phases=[Phase.generate, Phase.shrink], deadline=None)
    return find(strategy, cond, settings=conf)


# ============================================================================================
# markets (Eisenberg-Gale; Shockwave App. C-D)
# ============================================================================================
def utilities(*, n: Size = (1, 6), m: Size = (1, 4), rounds: Size | None = None,
              values: Range = (0.1, 10.0), density: float = 0.6,
              integers: bool = False) -> st.SearchStrategy[np.ndarray]:
    """Non-negative utilities (or Leontief demands) where every buyer values something.

    Parameters
    ----------
    n, m : int or (int, int)
        Buyers and goods.
    rounds : int or (int, int), optional
        Rounds ``T`` of a market over time: the array is then (n, m, T) and every buyer values
        something in some round.
    values : (float, float)
        Range of the non-zero entries (positive; entries shrink towards ``1``).
    density : float
        Roughly the fraction of non-zero entries (each buyer always has one).
    integers : bool
        Draw integer-valued entries (easier to read in counterexamples).

    Returns
    -------
    SearchStrategy of ndarray
    """
    nlo, nhi = _size(n, "n")
    mlo, mhi = _size(m, "m")
    rr = None if rounds is None else _size(rounds, "rounds")
    lo, hi = _range(values, "values")
    zero = _density(density)
    vals = _values(lo, hi, bool(integers))

    @st.composite
    def draw_utilities(draw: st.DrawFn) -> np.ndarray:
        nn = draw(st.integers(nlo, nhi))
        mm = draw(st.integers(mlo, mhi))
        shape = (nn, mm) if rr is None else (nn, mm, draw(st.integers(*rr)))
        return _sparse_positive(draw, shape, vals, zero)

    return draw_utilities()


def budgets(n: int, *, values: Range = (0.1, 10.0), equal: bool = False
            ) -> st.SearchStrategy[np.ndarray]:
    """Positive budgets (priority weights) for ``n`` buyers; ``equal=True`` gives ones.

    Budgets shrink towards ``1`` (equal budgets, the classic definitions).
    """
    nn = _count(n, "n")
    if equal:
        return st.just(np.ones(nn))
    lo, hi = _range(values, "values")
    return arrays(np.float64, nn, elements=st.floats(lo, hi))


def supplies(shape: int | tuple[int, ...], *, values: Range = (0.2, 5.0)
             ) -> st.SearchStrategy[np.ndarray]:
    """Positive supply of every good (and round): shape (m,) or (m, T); shrinks to ones."""
    shp = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if not shp or any(not isinstance(s, int | np.integer) or s < 1 for s in shp):
        raise InputError(f"shape must be positive ints, got {shape!r}", argument="shape")
    lo, hi = _range(values, "values")
    return arrays(np.float64, tuple(int(s) for s in shp), elements=st.floats(lo, hi))


def _fmt(arr: np.ndarray) -> str:
    return np.array2string(np.asarray(arr), precision=6, separator=", ", suppress_small=False,
                           floatmode="maxprec")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _code(arr: np.ndarray) -> str:
    return f"np.array({np.asarray(arr).tolist()!r})"


@dataclass(frozen=True, eq=False)
class MarketInstance:
    """A Fisher market: what a market policy ``policy(utility, budget, supply)`` is given.

    Attributes
    ----------
    utility : ndarray, shape (n, m) or (n, m, T)
        Linear utilities, or Leontief demands (``kind="leontief"``).
    budget : ndarray, shape (n,)
    supply : ndarray, shape (m,) or (m, T)
    kind : {"linear", "leontief"}
    """

    utility: np.ndarray
    budget: np.ndarray
    supply: np.ndarray
    kind: str = "linear"

    @property
    def n(self) -> int:
        """Number of buyers."""
        return int(self.utility.shape[0])

    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fresh copies of ``(utility, budget, supply)`` to call a policy with."""
        return self.utility.copy(), self.budget.copy(), self.supply.copy()

    def key(self) -> bytes:
        """Bytes that identify the instance (for caching policy outputs)."""
        return b"|".join([repr(self.utility.shape).encode(), self.utility.tobytes(),
                          self.budget.tobytes(), self.supply.tobytes(), self.kind.encode()])

    def with_row(self, agent: int, row: np.ndarray) -> MarketInstance:
        """The same market with buyer ``agent``'s utility row replaced (a misreport)."""
        u = self.utility.copy()
        u[agent] = row
        return MarketInstance(u, self.budget, self.supply, self.kind)

    def describe(self) -> str:
        """The instance, one array per line, as numpy prints it."""
        rounds = "" if self.utility.ndim == 2 else f" over {self.utility.shape[2]} rounds"
        pad = " " * 12
        return "\n".join([
            f"market ({self.kind} utilities{rounds}; {_plural(self.n, 'buyer')}, "
            f"{_plural(self.utility.shape[1], 'good')})",
            "  utility = " + _fmt(self.utility).replace("\n", "\n" + pad),
            "  budget  = " + _fmt(self.budget),
            "  supply  = " + _fmt(self.supply).replace("\n", "\n" + pad),
        ])

    def as_code(self, name: str = "policy") -> str:
        """A Python call that reproduces the policy's input."""
        return (f"{name}({_code(self.utility)}, {_code(self.budget)}, "
                f"{_code(self.supply)})")


def market_instances(*, kind: str = "linear", n: Size = (1, 5), m: Size = (1, 4),
                     rounds: Size | None = None, values: Range = (0.1, 10.0),
                     density: float = 0.6, integers: bool = False,
                     budget_values: Range = (0.1, 10.0), equal_budgets: bool = False,
                     supply_values: Range = (0.2, 5.0)) -> st.SearchStrategy[MarketInstance]:
    """Whole markets: utilities (or Leontief demands), budgets and supplies.

    ``kind`` is ``"linear"`` or ``"leontief"`` (the utilities are then the demands
    ``a_ij``); ``rounds`` makes a market over time (Shockwave's volatile market). The other
    arguments are those of :func:`utilities`, :func:`budgets` and :func:`supplies`.

    Examples
    --------
    >>> inst = minimal(market_instances(n=2, m=2))
    >>> inst.utility.shape, inst.budget.tolist(), inst.supply.tolist()
    ((2, 2), [1.0, 1.0], [1.0, 1.0])
    """
    kind = as_option(kind, "kind", ("linear", "leontief"))
    util = utilities(n=n, m=m, rounds=rounds, values=values, density=density,
                     integers=integers)
    if not equal_budgets:
        _range(budget_values, "budget_values")
    _range(supply_values, "supply_values")

    @st.composite
    def draw_market(draw: st.DrawFn) -> MarketInstance:
        u = draw(util)
        b = draw(budgets(u.shape[0], values=budget_values, equal=equal_budgets))
        s = draw(supplies(u.shape[1:], values=supply_values))
        return MarketInstance(u, b, s, kind)

    return draw_market()


def leontief_markets(*, n: Size = (1, 5), m: Size = (1, 4), rounds: Size | None = None,
                     values: Range = (0.1, 10.0), density: float = 0.6, integers: bool = False,
                     budget_values: Range = (0.1, 10.0), equal_budgets: bool = False,
                     supply_values: Range = (0.2, 5.0)) -> st.SearchStrategy[MarketInstance]:
    """:func:`market_instances` with ``kind="leontief"``: utility rows are demand vectors
    (the other arguments as there)."""
    return market_instances(kind="leontief", n=n, m=m, rounds=rounds, values=values,
                            density=density, integers=integers, budget_values=budget_values,
                            equal_budgets=equal_budgets, supply_values=supply_values)


def volatile_markets(*, rounds: Size = (2, 3), n: Size = (1, 4), m: Size = (1, 3),
                     kind: str = "linear", values: Range = (0.1, 10.0), density: float = 0.6,
                     integers: bool = False, budget_values: Range = (0.1, 10.0),
                     equal_budgets: bool = False, supply_values: Range = (0.2, 5.0)
                     ) -> st.SearchStrategy[MarketInstance]:
    """Markets over time (Shockwave App. D): utility (n, m, T), supply (m, T) (the other
    arguments as for :func:`market_instances`)."""
    return market_instances(kind=kind, rounds=rounds, n=n, m=m, values=values,
                            density=density, integers=integers, budget_values=budget_values,
                            equal_budgets=equal_budgets, supply_values=supply_values)


# ============================================================================================
# clusters and job sets (Gavel §3)
# ============================================================================================
def clusters(*, types: Size = (1, 3), workers: Size = (1, 8),
             names: Sequence[str] = ACCELERATOR_TYPES) -> st.SearchStrategy[Any]:
    """:class:`fairalloc.Cluster` with ``types`` accelerator types of ``workers`` each.

    Type names come from ``names`` in order (``type<k>`` beyond its end); worker counts
    shrink towards 1.
    """
    from ..data import Cluster

    tlo, thi = _size(types, "types")
    wlo, whi = _size(workers, "workers")
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
    nn = _count(n, "n")
    kk = _count(k, "k")
    lo, hi = _range(values, "values")
    zero = _density(density)
    vals = _values(lo, hi, bool(integers))
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
        roll = draw(arrays(np.int64, (nn, kk), elements=st.integers(0, _PERMILLE - 1)))
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
    nn = _count(n, "n")
    top = _count(max_scale_factor, "max_scale_factor")
    if powers_of_two:
        exps = int(math.floor(math.log2(top)))
        elem = st.integers(0, exps).map(lambda e: float(2 ** e))
    else:
        elem = st.integers(1, top).map(float)
    return arrays(np.float64, nn, elements=elem)


def weights(n: int, *, values: Range = (0.25, 4.0)) -> st.SearchStrategy[np.ndarray]:
    """Positive priority weights; they shrink towards 1 (unweighted)."""
    nn = _count(n, "n")
    lo, hi = _range(values, "values")
    return arrays(np.float64, nn, elements=st.floats(lo, hi))


def job_sets(cluster: Any, *, n: Size = (1, 5), values: Range = (0.5, 100.0),
             density: float = 0.7, integers: bool = False, max_scale_factor: int = 1,
             weighted: bool = False, weight_values: Range = (0.25, 4.0),
             steps: Range | None = (100.0, 10000.0), elapsed: Range | None = None
             ) -> st.SearchStrategy[Any]:
    """:class:`fairalloc.Jobs` that can all be scheduled on ``cluster``.

    Gang sizes are drawn up to ``min(max_scale_factor, largest capacity)`` and every job gets
    a positive throughput on a type its gang fits on (``Jobs.check_cluster`` passes).

    Parameters
    ----------
    cluster : fairalloc.Cluster
    n : int or (int, int)
        Number of jobs.
    values, density, integers
        Throughput range, fraction of non-zero throughputs, integer throughputs
        (:func:`throughputs`).
    max_scale_factor : int
        Largest gang size.
    weighted : bool
        Draw priority weights (else all 1).
    steps : (float, float) or None
        Range of ``steps_remaining`` (needed by finish-time, makespan and SJF policies);
        ``None`` leaves it unset.
    elapsed : (float, float) or None
        Range of ``elapsed`` seconds (FIFO order, finish-time fairness); default all zero.
    """
    from ..data import Cluster, Jobs

    if not isinstance(cluster, Cluster):
        raise InputError(f"cluster must be a fairalloc.Cluster, got {type(cluster).__name__}",
                         argument="cluster")
    nlo, nhi = _size(n, "n")
    top = min(_count(max_scale_factor, "max_scale_factor"), int(cluster.capacity.max()))
    k = cluster.num_types
    cap = cluster.capacity
    _range(values, "values")
    _density(density)
    if weighted:
        _range(weight_values, "weight_values")
    if steps is not None:
        _range(steps, "steps")
    if elapsed is not None:
        _range(elapsed, "elapsed", allow_zero=True)

    @st.composite
    def draw_jobs(draw: st.DrawFn) -> Jobs:
        nn = draw(st.integers(nlo, nhi))
        sf = draw(scale_factors(nn, max_scale_factor=top))
        fits = sf[:, None] <= cap[None, :]
        tp = draw(throughputs(nn, k, values=values, density=density, integers=integers,
                              runnable=fits))
        w = draw(weights(nn, values=weight_values)) if weighted else None
        rem = (draw(arrays(np.float64, nn, elements=st.floats(*steps)))
               if steps is not None else None)
        el = (draw(arrays(np.float64, nn, elements=st.floats(*elapsed)))
              if elapsed is not None else None)
        return Jobs(tp, scale_factor=sf, weight=w, steps_remaining=rem, elapsed=el)

    return draw_jobs()


@dataclass(frozen=True, eq=False)
class ClusterInstance:
    """Jobs on a cluster: what a Gavel-style policy ``policy(jobs, cluster)`` is given."""

    jobs: Any
    cluster: Any

    @property
    def n(self) -> int:
        """Number of jobs."""
        return int(self.jobs.n)

    def args(self) -> tuple[Any, Any]:
        """``(jobs, cluster)`` (both immutable)."""
        return self.jobs, self.cluster

    def key(self) -> bytes:
        """Bytes that identify the instance (for caching policy outputs)."""
        j = self.jobs
        parts = [repr(j.throughput.shape).encode(), j.throughput.tobytes(),
                 j.scale_factor.tobytes(), j.weight.tobytes(), j.elapsed.tobytes(),
                 b"" if j.steps_remaining is None else j.steps_remaining.tobytes(),
                 b"" if j.isolated_elapsed is None else j.isolated_elapsed.tobytes(),
                 repr(self.cluster.types).encode(), self.cluster.capacity.tobytes()]
        return b"|".join(parts)

    def with_row(self, agent: int, row: np.ndarray) -> ClusterInstance:
        """The same jobs with job ``agent``'s throughput row replaced (a misreport)."""
        from ..data import Jobs

        j = self.jobs
        tp = np.array(j.throughput, copy=True)
        tp[agent] = row
        return ClusterInstance(Jobs(tp, scale_factor=j.scale_factor, weight=j.weight,
                                    ids=j.ids, steps_remaining=j.steps_remaining,
                                    elapsed=j.elapsed, isolated_elapsed=j.isolated_elapsed),
                               self.cluster)

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
        lines = [f"cluster {self.cluster!r}; {_plural(self.n, 'job')} on types "
                 f"{list(self.cluster.types)}",
                 f"  {'throughput':<{width}} = "
                 + _fmt(self.jobs.throughput).replace("\n", "\n" + pad)]
        lines += [f"  {name:<{width}} = {_fmt(v)}" for name, v in cols]
        return "\n".join(lines)

    def as_code(self, name: str = "policy") -> str:
        """A Python call that reproduces the policy's input."""
        kw = ", ".join(f"{k}={v.tolist()!r}" for k, v in self._columns())
        workers = {t: int(c) for t, c in zip(self.cluster.types, self.cluster.capacity)}
        return (f"{name}(fa.Jobs({self.jobs.throughput.tolist()!r}, {kw}), "
                f"fa.Cluster({workers!r}))")


def cluster_instances(*, n: Size = (1, 4), types: Size = (1, 3), workers: Size = (1, 4),
                      names: Sequence[str] = ACCELERATOR_TYPES, values: Range = (0.5, 100.0),
                      density: float = 0.7, integers: bool = False, max_scale_factor: int = 1,
                      weighted: bool = False, weight_values: Range = (0.25, 4.0),
                      steps: Range | None = (100.0, 10000.0), elapsed: Range | None = None
                      ) -> st.SearchStrategy[ClusterInstance]:
    """A cluster (:func:`clusters`) and jobs that fit it (:func:`job_sets`, with ``values``
    to ``elapsed`` as there).

    Examples
    --------
    >>> inst = minimal(cluster_instances(), lambda x: x.n == 2)
    >>> inst.jobs.throughput.shape, inst.cluster.types
    ((2, 1), ('v100',))
    """
    cl = clusters(types=types, workers=workers, names=names)
    _size(n, "n")

    @st.composite
    def draw_instance(draw: st.DrawFn) -> ClusterInstance:
        c = draw(cl)
        return ClusterInstance(draw(job_sets(
            c, n=n, values=values, density=density, integers=integers,
            max_scale_factor=max_scale_factor, weighted=weighted, weight_values=weight_values,
            steps=steps, elapsed=elapsed)), c)

    return draw_instance()


# ============================================================================================
# Themis: topologies, bid tables, auctions (Themis §3.2-3.3)
# ============================================================================================
def topologies(*, machines: Size = (1, 4), gpus_per_machine: Size = (1, 4),
               racks: Size = (1, 2)) -> st.SearchStrategy[Any]:
    """:class:`fairalloc.auctions.Topology`: machines of varying GPU counts in racks.

    Racks are consecutive blocks of machines and never empty (at most one per machine).
    """
    from ..auctions import Topology

    hlo, hhi = _size(machines, "machines")
    glo, ghi = _size(gpus_per_machine, "gpus_per_machine")
    rlo, rhi = _size(racks, "racks")

    @st.composite
    def draw_topology(draw: st.DrawFn) -> Topology:
        h = draw(st.integers(hlo, hhi))
        per = draw(arrays(np.int64, h, elements=st.integers(glo, ghi)))
        r = draw(st.integers(min(rlo, h), min(rhi, h)))
        return Topology(np.repeat(np.arange(h), per), np.arange(h) * r // h)

    return draw_topology()


def bid_tables(*, max_gpus: int = 8, bids: Size = (0, 5), rho: Range = (0.1, 10.0),
               topology: Any = None) -> st.SearchStrategy[Any]:
    """Themis bid tables (:class:`fairalloc.auctions.BidTable`).

    Each bid asks for ``1..max_gpus`` GPUs at placement level 0 (one machine), 1 (one rack)
    or 2 (anywhere) with a finish-time fairness ``rho`` drawn from ``rho``; the app's
    ``rho_empty`` is either infinite (it holds no GPU) or above every bid's ``rho`` (winning
    GPUs helps). With a ``topology`` the app may hold GPUs on a home machine (and its rack).
    """
    from ..auctions import BidTable

    top = _count(max_gpus, "max_gpus")
    blo, bhi = _size(bids, "bids", minimum=0)
    lo, hi = _range(rho, "rho")
    if topology is not None:
        from ..auctions import Topology

        if not isinstance(topology, Topology):
            raise InputError(f"topology must be a Topology, got {type(topology).__name__}",
                             argument="topology")

    @st.composite
    def draw_table(draw: st.DrawFn) -> BidTable:
        b = draw(st.integers(blo, bhi))
        gpus = draw(arrays(np.int64, b, elements=st.integers(1, top)))
        level = draw(arrays(np.int64, b, elements=st.integers(0, 2)))
        r = draw(arrays(np.float64, b, elements=st.floats(lo, hi)))
        home_m = home_r = -1
        if topology is not None and draw(st.booleans()):
            home_m = draw(st.integers(0, topology.num_machines - 1))
            home_r = int(topology.rack[home_m])
        if home_m < 0 and draw(st.booleans()):
            empty = math.inf
        else:  # holds GPUs (or is waiting with a finite rho): winning must help
            worst = float(r.max()) if b else lo
            empty = worst * draw(st.floats(1.0, 4.0, exclude_min=True))
        return BidTable(gpus, level, r, rho_empty=empty, home_machine=home_m,
                        home_rack=home_r)

    return draw_table()


@dataclass(frozen=True, eq=False)
class AuctionInstance:
    """Inputs of :func:`fairalloc.auctions.gpu_auction`: one bid table per app."""

    bids: tuple[Any, ...]
    topology: Any
    offer: np.ndarray

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``gpu_auction``."""
        return {"bids": list(self.bids), "topology": self.topology, "offer": self.offer}


def auction_instances(*, n: Size = (1, 3), bids: Size = (1, 4), rho: Range = (0.1, 10.0),
                      machines: Size = (1, 4), gpus_per_machine: Size = (1, 4),
                      racks: Size = (1, 2)) -> st.SearchStrategy[AuctionInstance]:
    """A topology (:func:`topologies`, with ``machines``, ``gpus_per_machine`` and ``racks``),
    a non-empty offer of its GPUs and ``n`` apps' bid tables for it."""
    nlo, nhi = _size(n, "n")
    topo = topologies(machines=machines, gpus_per_machine=gpus_per_machine, racks=racks)

    @st.composite
    def draw_auction(draw: st.DrawFn) -> AuctionInstance:
        t = draw(topo)
        g = t.num_gpus
        mask = draw(arrays(np.bool_, g, elements=st.booleans()))
        mask[draw(st.integers(0, g - 1))] = True
        offer = np.flatnonzero(mask)
        k = draw(st.integers(nlo, nhi))
        tables = tuple(draw(bid_tables(max_gpus=int(offer.size), bids=bids, rho=rho,
                                       topology=t)) for _ in range(k))
        return AuctionInstance(tables, t, offer)

    return draw_auction()


# ============================================================================================
# Shockwave: regime models, job histories, forecasts, plans (Shockwave §5-6, App. G)
# ============================================================================================
def regime_models(*, max_regimes: int = 4, batch_sizes: Sequence[float] = (16, 32, 64, 128,
                                                                              256)
                  ) -> st.SearchStrategy[Any]:
    """:class:`fairalloc.RegimeModel`: static, accordion, GNS or custom configuration orders.

    Custom orders draw configurations from ``batch_sizes`` with consecutive ones different.
    """
    from ..schedule import RegimeModel

    kmax = _count(max_regimes, "max_regimes")
    pool = sorted({float(b) for b in batch_sizes})
    if len(pool) < 2 or pool[0] <= 0:
        raise InputError("batch_sizes needs two different positive sizes",
                         argument="batch_sizes")
    sizes = st.sampled_from(pool)

    @st.composite
    def draw_model(draw: st.DrawFn) -> RegimeModel:
        kind = draw(st.sampled_from(("static", "accordion", "gns", "custom")))
        if kind == "static":
            return RegimeModel.static(draw(sizes))
        k = draw(st.integers(1, kmax))
        if kind == "accordion":
            small, large = draw(st.lists(sizes, min_size=2, max_size=2, unique=True))
            return RegimeModel.accordion(small, large, num_regimes=k)
        if kind == "gns":
            return RegimeModel.gns(draw(sizes), num_regimes=k)
        # custom: each step moves to a different size (offset 1..len-1 around the pool)
        first = draw(st.integers(0, len(pool) - 1))
        steps = draw(arrays(np.int64, k - 1, elements=st.integers(1, len(pool) - 1)))
        idx = (first + np.concatenate([[0], np.cumsum(steps)])) % len(pool)
        return RegimeModel(np.asarray(pool)[idx])

    return draw_model()


@dataclass(frozen=True, eq=False)
class JobHistory:
    """What a scheduler observed of one job: the arguments of
    :func:`fairalloc.forecast_regimes` (``model, total_epochs, batch_sizes, epoch_seconds,
    profiled=...``)."""

    model: Any
    total_epochs: float
    batch_sizes: np.ndarray
    epoch_seconds: np.ndarray
    profiled: dict[float, float]

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``forecast_regimes``."""
        return {"model": self.model, "total_epochs": self.total_epochs,
                "batch_sizes": self.batch_sizes, "epoch_seconds": self.epoch_seconds,
                "profiled": self.profiled}


def job_histories(*, max_regimes: int = 4, max_epochs_per_regime: int = 10,
                  extra_epochs: Size = (1, 40), seconds: Range = (1.0, 120.0)
                  ) -> st.SearchStrategy[JobHistory]:
    """A job's finished epochs that follow its regime model, and its total epochs.

    The job has run the first ``r`` regimes of its model in order (``r >= 1``; the last is
    ongoing), each for ``1..max_epochs_per_regime`` epochs with measured durations near a
    per-configuration mean, and has ``extra_epochs`` epochs left. A job with no finished
    epoch yet has profiled durations for its configurations instead.
    """
    mmax = _count(max_epochs_per_regime, "max_epochs_per_regime")
    elo, ehi = _size(extra_epochs, "extra_epochs")
    slo, shi = _range(seconds, "seconds")
    models = regime_models(max_regimes=max_regimes)

    @st.composite
    def draw_history(draw: st.DrawFn) -> JobHistory:
        model = draw(models)
        cfg = model.configurations
        k = cfg.size
        mean = draw(arrays(np.float64, k, elements=st.floats(slo, shi)))
        started = draw(st.booleans())
        if started:
            r = draw(st.integers(1, k))
            runs = draw(arrays(np.int64, r, elements=st.integers(1, mmax)))
            regime = np.repeat(np.arange(r), runs)
            jitter = draw(arrays(np.float64, regime.size, elements=st.floats(0.9, 1.1)))
            bs, sec = cfg[regime], mean[regime] * jitter
        else:
            bs, sec = np.zeros(0), np.zeros(0)
        profiled = {float(c): float(s) for c, s in zip(cfg, mean)} if not started else {}
        total = float(bs.size + draw(st.integers(elo, ehi)))
        return JobHistory(model, total, bs, sec, profiled)

    return draw_history()


def regime_forecasts(*, methods: Sequence[str] = ("restatement", "bayesian", "greedy"),
                     max_regimes: int = 4, max_epochs_per_regime: int = 10,
                     extra_epochs: Size = (1, 40), seconds: Range = (1.0, 120.0)
                     ) -> st.SearchStrategy[Any]:
    """:class:`fairalloc.RegimeForecast` built by :func:`fairalloc.forecast_regimes` from a
    :func:`job_histories` draw (its arguments as there), with a method from ``methods``."""
    from ..schedule import FORECAST_METHODS as METHODS
    from ..schedule import forecast_regimes

    chosen = tuple(as_option(m, "methods", METHODS) for m in methods)
    if not chosen:
        raise InputError("methods is empty", argument="methods")
    hist = job_histories(max_regimes=max_regimes, max_epochs_per_regime=max_epochs_per_regime,
                         extra_epochs=extra_epochs, seconds=seconds)

    @st.composite
    def draw_forecast(draw: st.DrawFn) -> Any:
        h = draw(hist)
        return forecast_regimes(**h.kwargs(), method=draw(st.sampled_from(chosen)))

    return draw_forecast()


def restatement_inputs(*, max_regimes: int = 5, total_epochs: Range = (1.0, 500.0)
                       ) -> st.SearchStrategy[tuple[float, int, np.ndarray]]:
    """``(total_epochs, num_regimes, observed_epochs)`` for
    :func:`fairalloc.restatement_posterior`: at most ``K`` finished regimes whose epochs sum to
    at most ``N`` (and to more than zero when all ``K`` have finished)."""
    kmax = _count(max_regimes, "max_regimes")
    lo, hi = _range(total_epochs, "total_epochs")

    @st.composite
    def draw_inputs(draw: st.DrawFn) -> tuple[float, int, np.ndarray]:
        n = draw(st.floats(lo, hi))
        k = draw(st.integers(1, kmax))
        done = draw(st.integers(0, k))
        share = draw(arrays(np.float64, done, elements=st.floats(0.0, 1.0)))
        used = draw(st.floats(0.0, 1.0))
        if done == k:  # every regime finished: the epochs cannot all be zero
            share[draw(st.integers(0, k - 1))] = 1.0
            used = max(used, 0.5)
        total = share.sum()
        observed = share / total * used * n if total > 0 else share
        return n, k, observed

    return draw_inputs()


def plan_jobs(*, max_workers: int = 4, epochs: Size = (1, 60), regimes: Size = (1, 3),
              seconds: Range = (5.0, 300.0), ftf: Range = (0.25, 4.0)
              ) -> st.SearchStrategy[Any]:
    """:class:`fairalloc.PlanJob`: a gang size, integer epochs with some left, an FTF
    estimate and remaining regimes that cover exactly the epochs left."""
    from ..schedule import PlanJob

    wmax = _count(max_workers, "max_workers")
    elo, ehi = _size(epochs, "epochs")
    rlo, rhi = _size(regimes, "regimes")
    slo, shi = _range(seconds, "seconds")
    flo, fhi = _range(ftf, "ftf")

    @st.composite
    def draw_job(draw: st.DrawFn) -> PlanJob:
        total = draw(st.integers(elo, ehi))
        done = draw(st.integers(0, total - 1))
        left = total - done
        r = min(draw(st.integers(rlo, rhi)), left)
        # r positive parts of `left`: r - 1 distinct cut points in 1..left-1
        cuts = sorted(draw(st.lists(st.integers(1, max(left - 1, 1)), min_size=r - 1,
                                    max_size=r - 1, unique=True))) if r > 1 else []
        parts = np.diff(np.concatenate([[0], cuts, [left]]))
        sec = draw(arrays(np.float64, parts.size, elements=st.floats(slo, shi)))
        return PlanJob(workers=draw(st.integers(1, wmax)), total_epochs=float(total),
                       done_epochs=float(done), ftf=draw(st.floats(flo, fhi)),
                       regimes=[(float(s), float(e)) for s, e in zip(sec, parts)],
                       running=draw(st.booleans()))

    return draw_job()


@dataclass(frozen=True, eq=False)
class PlanInstance:
    """Inputs of :func:`fairalloc.plan_schedule`: jobs and the GPUs they share."""

    jobs: tuple[Any, ...]
    num_gpus: int


def plan_instances(*, n: Size = (1, 5), num_gpus: Size = (1, 8), max_workers: int = 4,
                   epochs: Size = (1, 60), regimes: Size = (1, 3),
                   seconds: Range = (5.0, 300.0), ftf: Range = (0.25, 4.0)
                   ) -> st.SearchStrategy[PlanInstance]:
    """``n`` :func:`plan_jobs` (their arguments as there) whose gangs all fit in ``num_gpus``
    GPUs."""
    nlo, nhi = _size(n, "n")
    glo, ghi = _size(num_gpus, "num_gpus")
    wmax = max_workers
    _count(wmax, "max_workers")

    @st.composite
    def draw_plan(draw: st.DrawFn) -> PlanInstance:
        m = draw(st.integers(glo, ghi))
        k = draw(st.integers(nlo, nhi))
        job = plan_jobs(max_workers=min(int(wmax), m), epochs=epochs, regimes=regimes,
                        seconds=seconds, ftf=ftf)
        return PlanInstance(tuple(draw(job) for _ in range(k)), m)

    return draw_plan()


# ============================================================================================
# Ares: scaling curves and arrival sequences (Ares §3.2-3.3)
# ============================================================================================
def scaling_curves(*, levels: Size = (1, 4), efficiency: Range = (0.3, 1.0),
                   base: Range = (0.5, 10.0)) -> st.SearchStrategy[np.ndarray]:
    """Throughput at 1, 2, 4, ..., ``2^K`` GPUs with per-GPU throughput that never rises.

    Each doubling keeps a fraction in ``efficiency`` (at most 1) of the per-GPU throughput,
    so the curves are exactly the diminishing-returns curves Ares §3.3 accepts.
    """
    llo, lhi = _size(levels, "levels")
    elo, ehi = _range(efficiency, "efficiency")
    if ehi > 1.0:
        raise InputError("efficiency must not exceed 1 (per-GPU throughput never rises)",
                         argument="efficiency")
    blo, bhi = _range(base, "base")

    @st.composite
    def draw_curve(draw: st.DrawFn) -> np.ndarray:
        k = draw(st.integers(llo, lhi))
        keep = draw(arrays(np.float64, k, elements=st.floats(elo, ehi)))
        b = draw(st.floats(blo, bhi))
        per_gpu = b * np.concatenate([[1.0], np.cumprod(keep)])
        return per_gpu * np.exp2(np.arange(k + 1))

    return draw_curve()


@dataclass(frozen=True, eq=False)
class ArrivalSequence:
    """Inputs of :func:`fairalloc.efq_schedule` / :func:`fairalloc.efq_finish_times`."""

    arrival: np.ndarray
    gpu_time: np.ndarray
    num_gpus: int
    requested: np.ndarray
    scaling: np.ndarray | None
    alpha: float

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``efq_schedule``."""
        return {"arrival": self.arrival, "gpu_time": self.gpu_time, "num_gpus": self.num_gpus,
                "alpha": self.alpha, "requested": self.requested, "scaling": self.scaling}


def arrival_sequences(*, n: Size = (1, 8), num_gpus: Size = (1, 8), horizon: float = 10.0,
                      gpu_time: Range = (0.1, 10.0), max_request: int = 4,
                      scaling: bool = True, alpha: Range = (0.5, 1.0),
                      integer_times: bool = False) -> st.SearchStrategy[ArrivalSequence]:
    """Job arrivals for elastic fair queuing: times in ``[0, horizon]`` (ties included),
    GPU-times, GPU requests within the cluster (and within the scaling curves' range) and,
    with ``scaling=True``, one diminishing-returns curve per job (else linear scaling).
    ``integer_times`` draws whole arrival times (many ties)."""
    nlo, nhi = _size(n, "n")
    glo, ghi = _size(num_gpus, "num_gpus")
    hz = _range((0.0, horizon), "horizon", allow_zero=True)[1]
    tlo, thi = _range(gpu_time, "gpu_time")
    rmax = _count(max_request, "max_request")
    alo, ahi = _range(alpha, "alpha")
    if ahi > 1.0:
        raise InputError("alpha must be in (0, 1]", argument="alpha")

    @st.composite
    def draw_sequence(draw: st.DrawFn) -> ArrivalSequence:
        k = draw(st.integers(nlo, nhi))
        m = draw(st.integers(glo, ghi))
        times = (st.integers(0, int(hz)).map(float) if integer_times
                 else st.floats(0.0, hz))
        arr = draw(arrays(np.float64, k, elements=times))
        work = draw(arrays(np.float64, k, elements=st.floats(tlo, thi)))
        curves = None
        top = min(m, rmax)
        if scaling:
            levels = max(1, math.ceil(math.log2(max(top, 1))))
            curves = np.stack([draw(scaling_curves(levels=levels)) for _ in range(k)])
            top = min(top, 2 ** levels)
        req = draw(arrays(np.float64, k, elements=st.integers(1, top).map(float)))
        return ArrivalSequence(arr, work, m, req, curves, draw(st.floats(alo, ahi)))

    return draw_sequence()
