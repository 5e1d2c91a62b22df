"""Partial-allocation auctions of indivisible GPUs: `fairalloc.bundle_auction`
(explicit bundles, Themis Table 2) and `fairalloc.gpu_auction` (bids by placement
class), and their result type.

Both solve the PF market and every leave-one-out market as lexicographic Nash-welfare
set-packing MILPs (`fairalloc.auctions.nash`). ``stats.path`` lists the exact routes
that ran, once each, in the order they first ran: ``"knapsack-relaxation"`` (gpu_auction
only), ``"lp-relaxation"``, ``"integral-vertex"``, ``"greedy-rounding"`` (gpu_auction
only), ``"fix-and-solve"``, ``"milp"``, ``"count-milp"``; ``stats.fallbacks`` every distinct
hand-over to a slower route, e.g. ``"lp-relaxation->milp: no exact rounding"`` or
``"milp->incumbent: time_limit"`` (a MILP stopped at its time limit before its proof).
``stats.solves`` counts the set-packing programs solved (each by one or more routes).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .._display import Table, labelled
from .._validation import as_array, as_labels, as_option, as_positive_int, as_time_limit
from ..errors import InputError
from ..results import Result, Status, fill_labels, require_pandas
from ._pool import _clean_log, _solve_stats, _used, _workers
from .bids import BidTable
from .nash import (
    SET_PACKING_METHODS,
    SetPackingColumns,
    _Form,
    _log_unit,
    _NodeLimited,
    _PAOutcome,
    _partial_allocation_milp,
)
from .placement import PlacementProgram
from .valuations import Topology

__all__ = ["BundleAuctionResult", "GPUAuctionResult", "bundle_auction", "gpu_auction"]

#: Largest number of goods (GPUs) an indivisible auction accepts (a larger one is an
#: InputError, not a MemoryError).
MAX_GOODS = 1 << 24


# ============================================================================================
# indivisible GPU auctions
# ============================================================================================
@dataclass(frozen=True, repr=False)
class GPUAuctionResult(Result):
    """Outcome of a partial-allocation auction of indivisible GPUs.

    Parameters
    ----------
    pf_bundles : ndarray of bool, shape (n, g)
        The PF assignment: ``pf_bundles[i, j]`` if GPU ``j`` goes to agent ``i``.
    choice : ndarray of int, shape (n,)
        Index of the winning bid of each agent (``-1``: none).
    pf_value : ndarray, shape (n,)
        Each agent's valuation ``1/rho`` of its PF bundle (of the empty bundle if none).
    fraction : ndarray, shape (n,)
        ``c_i`` in ``[0, 1]`` (``0`` only when removing ``i`` lets another agent win a positive
        valuation, see ``formulations/partial_allocation.md``).
    allocation : ndarray, shape (n, g)
        ``fraction[:, None] * pf_bundles``: the fractional PA allocation (rows: agents in the
        order of the bids; columns: GPUs). ``x`` is the same array (the name every result
        shares); ``prices`` is ``None`` (the hidden payments are ``leftover``).
    leftover : ndarray, shape (g,)
        ``offer - allocation.sum(0)``: unallocated GPU fractions (hidden payments).
    loo_objective, loo_bound : ndarray, shape (n,)
        ``sum_{j != i} log v_j`` of the best leave-one-out incumbent and the solver's bound.
    fraction_error : ndarray, shape (n,)
        Certified relative uncertainty of each fraction (``exp(bound - incumbent) - 1``).
    objective : float
        ``sum_i log v_i`` over the agents with positive valuation (PF).
    ids : tuple
        The agents' ids (``ids=`` of the auction; default ``0..n-1``), used by ``to_frame()``
        and the notebook view.
    certificate : Certificate
        Kind ``"milp"``, gap judged against the number of agents in the sum (its data
        scale) with `fairalloc.tolerances.MILP_GAP_TOL`: the PF solve's when every solve
        is proven (``Status.OPTIMAL``), else the first unproven one (never ok; status
        ``TIME_LIMIT`` with a time limit, ``ITERATION_LIMIT`` with only a node limit,
        ``SUBOPTIMAL`` otherwise).
    status : Status
        ``OPTIMAL`` only when ``certificate`` passed (`fairalloc.Result`).
    stats : SolveStats
        How it was computed (``stats.path``: the steps that ran).

    Examples
    --------
    Two agents want the same two GPUs; agent 1 also accepts GPU 2 (`bundle_auction`):

    >>> r = bundle_auction([[[0, 1]], [[0, 1], [2]]], [[4.0], [4.0, 1.0]])
    >>> r.choice.tolist(), r.fraction.round(4).tolist(), r.leftover.round(4).tolist()
    ([0, 1], [0.25, 1.0], [0.75, 0.75, 0.0])
    >>> r.status.value, r.certificate.kind
    ('optimal', 'milp')
    """

    pf_bundles: np.ndarray
    choice: np.ndarray
    pf_value: np.ndarray
    fraction: np.ndarray
    allocation: np.ndarray
    leftover: np.ndarray
    loo_objective: np.ndarray
    loo_bound: np.ndarray
    fraction_error: np.ndarray
    ids: tuple[Hashable, ...] = ()

    LABEL_FIELDS: ClassVar[tuple[str, ...]] = ("ids",)

    def __post_init__(self) -> None:
        fill_labels(self, ids=self.allocation.shape[0])
        super().__post_init__()

    @property
    def x(self) -> np.ndarray:
        """Alias of ``allocation`` (the name every result shares; the same object, not a
        copy)."""
        return self.allocation

    @property
    def prices(self) -> None:
        """``None``: the leave-one-out programs are mixed-integer, so there are no dual prices
        (the hidden payments are ``leftover``). Every result has ``prices``."""
        return None

    def _facts(self) -> list[tuple[str, str]]:
        n, g = self.allocation.shape
        return [("agents", str(n)), ("gpus", str(g)), *super()._facts()]

    def _tables(self) -> list[Table]:
        g = self.allocation.shape[1]
        return [labelled("allocation (fraction of each GPU)", "agent", self.ids, range(g),
                         self.allocation, extra=[("fraction", self.fraction),
                                                 ("pf_value", self.pf_value)])]

    def to_frame(self) -> Any:
        """One row per agent (index: ``ids``): GPUs won, PF valuation, fraction and its
        certified error."""
        pd = require_pandas()
        df = pd.DataFrame({"gpus": self.pf_bundles.sum(axis=1), "choice": self.choice,
                           "pf_value": self.pf_value, "fraction": self.fraction,
                           "fraction_error": self.fraction_error},
                          index=pd.Index(list(self.ids), name="agent"))
        return df


BundleAuctionResult = GPUAuctionResult


def _unproven_status(time_limit: float | None, node_limit: int | None) -> Status:
    """The status of a result whose MILPs were not all proven: ``TIME_LIMIT`` when a time
    limit was given (it may have stopped one), ``ITERATION_LIMIT`` when only a node limit
    was (a work limit), else ``SUBOPTIMAL``."""
    if time_limit is not None:
        return Status.TIME_LIMIT
    return Status.ITERATION_LIMIT if node_limit is not None else Status.SUBOPTIMAL


def _result(out: _PAOutcome, bundles: np.ndarray, offer: np.ndarray, value: np.ndarray,
            t0: float, mark: tuple[int, int, int], method: str, limited: Status,
            ids: tuple[Hashable, ...]) -> GPUAuctionResult:
    alloc = out.fraction[:, None] * bundles
    leftover = np.maximum(offer.astype(float) - alloc.sum(axis=0), 0.0)
    stats = _solve_stats(mark, method=method, t0=t0, solves=out.solves)
    pf = out.pf
    if out.optimal:
        status = Status.OPTIMAL
    else:
        status = limited
    return GPUAuctionResult(
        objective=pf.sumlog, status=status, stats=stats, certificate=out.certificate,
        pf_bundles=bundles, choice=pf.choice, pf_value=value, fraction=out.fraction,
        allocation=alloc, leftover=leftover, loo_objective=out.loo_sumlog,
        loo_bound=out.loo_bound, fraction_error=out.fraction_error, ids=ids)


def _as_list(value: Any, name: str) -> list[Any]:
    """A sequence argument as a list (strings, scalars and non-iterables are refused)."""
    if isinstance(value, str | bytes | dict) or (isinstance(value, np.ndarray) and
                                                  value.ndim == 0):
        raise InputError(f"{name} must be a sequence, got {type(value).__name__}",
                         argument=name)
    try:
        return list(value)
    except TypeError:
        raise InputError(f"{name} must be a sequence, got {type(value).__name__}",
                         argument=name) from None


def _milp_solver(backend: Any, node_limit: int | None = None) -> Any:
    """The MILP backend, its MILPs limited to ``node_limit`` nodes when given."""
    from ..backends import get_backend

    solver = get_backend(backend, need="milp")
    if node_limit is None:
        return solver
    return _NodeLimited(solver, as_positive_int(node_limit, "node_limit"))


@_clean_log
def bundle_auction(
    bundles: Sequence[Any],
    values: Sequence[Any],
    *,
    num_goods: int | None = None,
    empty_value: Any = None,
    time_limit: float | None = None,
    workers: int | None = 1,
    backend: Any = "highs",
    method: str = "auto",
    ids: Any = None,
    node_limit: int | None = None,
) -> GPUAuctionResult:
    """Partial-allocation auction over explicit bundles (Themis §3.3.1 with Table 2 bids).

    Agent ``i`` bids ``values[i][b]`` (its valuation ``1/rho``) for the bundle
    ``bundles[i][b]``, a set of goods; it wins at most one bundle, and no good is sold twice.
    The PF allocation maximises ``sum_i log v_i`` (agents that would value a bundle-less
    outcome at 0 are first made positive for as many as possible); it and every
    leave-one-out market are exact set-packing MILPs.

    Parameters
    ----------
    bundles : sequence of sequences
        ``bundles[i]``: the bundles agent ``i`` bids for, each a list of good ids
        (or a boolean array of shape (num_goods,)).
    values : sequence of array_like
        ``values[i][b] > 0``: the valuation of ``bundles[i][b]``.
    num_goods : int, optional
        Number of goods (default: the largest id + 1).
    empty_value : array_like, shape (n,), optional
        Valuation of winning nothing (``1/rho_old``; default 0).
    time_limit : float, optional
        Seconds per MILP. If a MILP stops at the limit before its optimum is proven, the
        result has ``Status.TIME_LIMIT`` and a certificate that is not ok (its gap bounds how
        far the incumbent may be from optimal; ``fraction_error`` bounds the fractions). Such a
        result depends on the machine's speed and load; ``node_limit`` does not.
    node_limit : int, optional
        Branch-and-bound nodes per MILP (the backend's node limit): a work limit with the same
        consequences as ``time_limit`` when it stops a MILP (status ``ITERATION_LIMIT`` when
        no time limit is given), but the same outcome on any machine.
    workers : int or None
        Processes for the leave-one-out MILPs.
    backend : str or Backend
        MILP backend (default ``"highs"``; ``InputError`` if it cannot solve MILPs). Many
        auctions need none: ``stats.backend`` is ``"numpy"`` when the exact relaxations
        certified every solve.
    method : {"auto", "lp", "milp"}
        Exact routes of every set-packing solve: ``"auto"`` all of them (cheapest first),
        ``"lp"`` no combinatorial route (the LP relaxation's routes, then the MILP),
        ``"milp"`` the whole MILP only. Every choice gives the optimum; ``stats.path``
        names the routes that ran (module docstring of `fairalloc.auctions.gpu`).
    ids : sequence of hashable, optional
        The agents' ids (unique, one per agent); default ``0..n-1``. The result carries them
        and labels ``to_frame()`` and its notebook view with them.

    Notes
    -----
    Certificates (kind ``"milp"``) judge the gap of ``sum log v`` against its data scale, the
    number of agents in the sum, with `fairalloc.tolerances.MILP_GAP_TOL`. The result's
    certificate is the PF solve's when every solve is proven (``Status.OPTIMAL``); otherwise
    it is the first unproven one (PF, then leave-one-out markets in agent order). Valuations
    are divided by one power of two before solving (exact), so rescaling every valuation
    leaves bundles and fractions unchanged.

    Returns
    -------
    GPUAuctionResult

    Examples
    --------
    Two agents want the same two GPUs; agent 1 also accepts GPU 2:

    >>> r = bundle_auction([[[0, 1]], [[0, 1], [2]]], [[4.0], [4.0, 1.0]])
    >>> r.pf_bundles.astype(int).tolist(), r.fraction.round(4).tolist()
    ([[1, 1, 0], [0, 0, 1]], [0.25, 1.0])
    """
    t0 = time.perf_counter()
    mark = _used().mark()
    bundles = _as_list(bundles, "bundles")
    values = _as_list(values, "values")
    n = len(bundles)
    if n == 0:
        raise InputError("bundles is empty: an auction needs at least one agent",
                         argument="bundles")
    labels = as_labels(ids, "ids", n, "agents")
    if len(values) != n:
        raise InputError(f"values has {len(values)} rows but bundles has {n} agents",
                         argument="values")
    vals = [as_array(values[i], f"values[{i}]", ndim=1, positive=True, allow_empty=True)
            for i in range(n)]
    sets: list[np.ndarray] = []
    agent: list[int] = []
    g_cap = MAX_GOODS if num_goods is None else as_positive_int(num_goods, "num_goods")
    if g_cap > MAX_GOODS:
        raise InputError(f"num_goods must be at most {MAX_GOODS}, got {num_goods!r}",
                         argument="num_goods")
    for i in range(n):
        own = _as_list(bundles[i], f"bundles[{i}]")
        if len(own) != vals[i].size:
            raise InputError(f"agent {i} has {len(own)} bundles but {vals[i].size} "
                             "values", argument="values", index=(i,))
        for b, bundle in enumerate(own):
            try:
                arr = np.asarray(bundle)
            except (TypeError, ValueError):
                arr = None  # as_array below names the problem
            if arr is not None and arr.dtype == bool:
                if arr.ndim != 1:
                    raise InputError(f"bundles[{i}][{b}] as a mask must be 1-d",
                                     argument="bundles", index=(i, b))
                ids = np.flatnonzero(arr).astype(float)
            else:
                ids = as_array(bundle, f"bundles[{i}][{b}]", ndim=1, integer=True,
                               allow_empty=True)
            if ids.size and ids.max() >= g_cap:
                raise InputError(
                    f"bundles[{i}][{b}] names good {ids.max():g}, but "
                    + (f"num_goods is {g_cap}" if num_goods is not None
                       else f"at most {MAX_GOODS} goods are supported"),
                    argument="num_goods" if num_goods is not None else "bundles",
                    index=(i, b))
            ids = ids.astype(np.int64)
            if ids.size == 0:
                raise InputError(f"bundles[{i}][{b}] is empty (the empty bundle is "
                                 "empty_value)", argument="bundles", index=(i, b))
            if np.unique(ids).size != ids.size:
                raise InputError(f"bundles[{i}][{b}] lists a good twice", argument="bundles",
                                 index=(i, b))
            sets.append(ids)
            agent.append(i)
    g_max = max((int(s.max()) for s in sets), default=-1) + 1
    g = g_max if num_goods is None else g_cap
    if g < g_max:
        raise InputError(f"a bundle names good {g_max - 1} but num_goods is {g}",
                         argument="num_goods")
    empty = np.zeros(n) if empty_value is None else as_array(empty_value, "empty_value",
                                                             ndim=1, shape=(n,))
    workers_n = _workers(workers)
    tl = as_time_limit(time_limit)
    solver = _milp_solver(backend, node_limit)
    routes = as_option(method, "method", SET_PACKING_METHODS)
    ag = np.array(agent, dtype=np.int64)
    flat = np.concatenate(vals) if vals else np.zeros(0)
    e, log_unit = _log_unit(np.r_[flat, empty])
    logv = np.log(flat) - log_unit  # valuations in units of 2^e (no underflow)
    with np.errstate(divide="ignore"):
        log_empty = np.log(empty) - log_unit
    useful = flat > empty[ag]  # never worse than nothing
    keep = np.flatnonzero(useful)
    K = keep.size
    rows_g = np.concatenate([sets[o] for o in keep]) if K else np.zeros(0, dtype=np.int64)
    cols_g = np.repeat(np.arange(K), [sets[o].size for o in keep]) if K else rows_g
    A = sp.vstack([
        sp.csr_matrix((np.ones(K), (ag[keep], np.arange(K))), shape=(n, K)),
        sp.csr_matrix((np.ones(rows_g.size), (rows_g, cols_g)), shape=(g, K)),
    ], format="csr")
    form = _Form(agent=ag[keep], logv=logv[keep], log_empty=log_empty, A=A,
                 row_lower=np.full(n + g, -np.inf), row_upper=np.ones(n + g),
                 col_upper=np.ones(K), integrality=np.ones(K, dtype=bool), num_agents=n,
                 option=np.arange(K), columns=SetPackingColumns(K))
    out = _partial_allocation_milp(form, time_limit=tl, solver=solver, workers=workers_n,
                                   log_unit=log_unit, method=routes)
    pf_bundles = np.zeros((n, g), dtype=bool)
    won = np.flatnonzero(out.pf.choice >= 0)
    for i in won.tolist():  # one row per winner: at most n small index sets
        pf_bundles[i, sets[keep[out.pf.choice[i]]]] = True
    flat_choice = np.where(out.pf.choice >= 0, np.r_[keep, -1][np.maximum(out.pf.choice, 0)],
                           -1)
    value = np.where(flat_choice >= 0, np.r_[flat, 0.0][flat_choice], empty)
    # report choice as the index within the agent's own bids
    first = np.searchsorted(ag, np.arange(n))
    choice = np.where(flat_choice >= 0, flat_choice - first, -1)
    out = dataclasses.replace(out, pf=dataclasses.replace(out.pf, choice=choice))
    return _result(out, pf_bundles, np.ones(g, dtype=bool), value, t0, mark, "set_packing",
                   _unproven_status(tl, node_limit), labels)


@_clean_log
def gpu_auction(
    bids: Sequence[BidTable],
    topology: Topology,
    offer: Any,
    *,
    time_limit: float | None = None,
    workers: int | None = 1,
    backend: Any = "highs",
    method: str = "auto",
    ids: Any = None,
    node_limit: int | None = None,
) -> GPUAuctionResult:
    """Partial-allocation auction of offered GPUs bid for by placement class (Themis §3.3.1).

    Exact MILP over the classes of `fairalloc.bid_table`: agent ``i`` picks at most one
    bid ``(k, level)``; ``z[i, h]`` of its GPUs come from machine ``h``; a level-0 bid takes all of
    them from one machine (its home machine if it holds GPUs), a level-1 bid from one rack.
    Machine capacities are the offered GPUs per machine. The objective is lexicographic Nash
    welfare over ``1/rho`` (``formulations/partial_allocation.md``); the same program without
    agent ``i`` gives ``c_i``.

    Parameters
    ----------
    bids : sequence of BidTable
        One table per agent.
    topology : Topology
    offer : array_like
        The GPUs being auctioned (mask or list of ids).
    time_limit : float, optional
        Seconds per MILP; an unproven solve makes the result ``Status.TIME_LIMIT`` with a
        certificate that is not ok (see `fairalloc.bundle_auction`); the
        outcome then depends on the machine's speed and load.
    node_limit : int, optional
        Branch-and-bound nodes per MILP: the same, but a work limit (the same outcome on any
        machine).
    workers : int or None
        Processes for the leave-one-out MILPs.
    backend : str or Backend
        MILP backend (default ``"highs"``; ``InputError`` if it cannot solve MILPs);
        ``stats.backend`` is ``"numpy"`` when the exact knapsack relaxation certified every
        solve and no backend ran.
    method : {"auto", "lp", "milp"}
        Exact routes of every set-packing solve (see `fairalloc.bundle_auction`):
        ``"lp"`` skips the knapsack relaxation and the greedy rounding, ``"milp"`` every route but
        the whole MILP.
    ids : sequence of hashable, optional
        The agents' ids (unique, one per ``BidTable``); default ``0..n-1``.

    Returns
    -------
    GPUAuctionResult

    Examples
    --------
    Two 2-GPU machines. Agent 0 is placement sensitive (2 GPUs on one machine: rho 0.5,
    across machines: rho 1), agent 1 is not:

    >>> from fairalloc.auctions import Topology
    >>> t = Topology.uniform(2, 2, machines_per_rack=1)
    >>> a = BidTable([1, 2, 2], [0, 0, 2], [1.0, 0.5, 1.0])
    >>> b = BidTable([1, 2], [0, 2], [1.0, 0.5])
    >>> r = gpu_auction([a, b], t, [0, 1, 2, 3])
    >>> r.pf_bundles.sum(axis=1).tolist(), r.pf_value.tolist()
    ([2, 2], [2.0, 2.0])
    """
    t0 = time.perf_counter()
    mark = _used().mark()
    if not isinstance(topology, Topology):
        raise InputError(f"topology must be a Topology, got {type(topology).__name__}",
                         argument="topology")
    tables = _as_list(bids, "bids")
    n = len(tables)
    if n == 0:
        raise InputError("bids is empty: an auction needs at least one agent", argument="bids")
    labels = as_labels(ids, "ids", n, "agents")
    for i, tb in enumerate(tables):
        if not isinstance(tb, BidTable):
            raise InputError(f"bids[{i}] is a {type(tb).__name__}, not a BidTable",
                             argument="bids", index=(i,))
        for name, v, top in (("home_machine", tb.home_machine, topology.num_machines),
                             ("home_rack", tb.home_rack, topology.num_racks)):
            if v >= top:
                raise InputError(f"bids[{i}].{name} = {v} does not exist in the topology",
                                 argument="bids", index=(i,))
    off = topology.mask(offer, "offer")
    if off.ndim != 1:
        raise InputError("offer must be one GPU set", argument="offer")
    workers_n = _workers(workers)
    tl = as_time_limit(time_limit)
    solver = _milp_solver(backend, node_limit)
    routes = as_option(method, "method", SET_PACKING_METHODS)
    e, log_unit = _log_unit(np.concatenate([t.value for t in tables]
                                           + [np.array([t.value_empty for t in tables])]))
    program = PlacementProgram(tables, topology, off, e)
    out = _partial_allocation_milp(program.form, time_limit=tl, solver=solver,
                                   workers=workers_n, log_unit=log_unit, method=routes)
    bundles = program.decode(out.pf.x)
    option_of = np.r_[program.bid_of_column, -1]  # choice column -> bid (-1: none)
    choice = np.where(out.pf.choice >= 0, option_of[np.maximum(out.pf.choice, 0)], -1)
    value = np.array([tables[i].value[c] if c >= 0 else tables[i].value_empty
                      for i, c in enumerate(choice.tolist())], dtype=float)
    out = dataclasses.replace(out, pf=dataclasses.replace(out.pf, choice=choice))
    return _result(out, bundles, off, value, t0, mark, "placement_classes",
                   _unproven_status(tl, node_limit), labels)

