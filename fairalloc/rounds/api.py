"""Round-by-round policy API for schedulers: dicts keyed by job id and worker type in and out.

A cluster scheduler calls its policy once per scheduling round.
`fairalloc.RoundPolicy` wraps every Gavel policy of
`fairalloc.throughput` (and hierarchical water-filling) for that use:

Also the linear and Leontief Fisher markets (``"fisher_market"``, ``kind=``): buyers are jobs,
goods are worker types (supply: the workers), budgets the ``weight``; ``x`` is then the
amount of each type bought, ``effective_throughput`` the utility. And the Themis auction
round (``"themis"``: finish-time fairness from ``steps_remaining`` / ``elapsed`` /
``isolated_elapsed``, ``fairness_knob=``; ``x`` the fraction of the round each job runs its
gang on a type, ``prices`` the hidden payments) and the Shockwave re-plan (``"shockwave"``:
``plan_jobs=`` job id -> `fairalloc.PlanJob`, ``plan_options=`` for
`fairalloc.plan_schedule`; `fairalloc.RoundPolicy` keeps the
plan and re-plans every ``replan_every`` rounds): see
`fairalloc.rounds.mechanisms`.

* **ids in, ids out.** Throughputs as ``{job_id: {worker_type: rate}}`` and workers as
  ``{worker_type: count}`` (or numpy arrays with ``job_ids=`` / ``types=``, or a pandas
  DataFrame indexed by job id with one column per type); the allocation comes back as
  ``{job_id: {worker_type: fraction}}``
  (`fairalloc.rounds.result.RoundResult.job_allocation`) and as an array (``x``).
* **normal cluster states are accepted.** A worker type with 0 workers (drained, failed), a
  job that can run on no present type (or whose gang fits on none), and an empty round give
  a valid allocation with 0 for what cannot run, and the facts are reported
  (`RoundResult.drained_types`, `RoundResult.unrunnable_jobs`). The policy is
  solved on the *reduced* program (present types, runnable jobs) and its allocation is
  expanded with zeros: the expansion is exactly feasible for the full cluster (a drained type
  has no capacity and gets nothing; an unrunnable job gets nothing), and
  `RoundResult.certificate` is the reduced program's certificate.
* **jobs arrive and leave between rounds**: each call gives the current jobs; nothing has to
  be registered or removed.
* **warm start.** A round identical to the previous one reuses its certified result
  (``stats.method == "reused"``). Max-min fairness keeps one HiGHS model per stage over the
  symmetry classes and changes it in place (``stats.method == "incremental+warm"``,
  `fairalloc.rounds.incremental`; a round it cannot answer hands over to the normal round,
  in ``stats.fallbacks``). Otherwise each stage LP starts HiGHS' simplex from the
  previous round's basis, carried over job by job or symmetry class by class
  (`fairalloc.rounds.state.RoundBases`), and max-min fairness's structured solver from its
  prices (``stats.method == "fast+warm"`` when used); every answer is certified as always.

The reduced program is the policy over the runnable jobs on the present types: max-min
fairness normalises by ``X^equal`` over the present types (a drained type has no share),
finish-time fairness's isolated share is ``1/n`` of the present cluster over the ``n``
runnable jobs. Prices of drained types are reported as 0 (there is no capacity to price).

Examples
--------
>>> import fairalloc as fa
>>> policy = fa.RoundPolicy("max_min_fairness")
>>> r = policy.allocate({"a": {"v100": 40.0, "k80": 10.0}, "b": {"v100": 12.0, "k80": 4.0},
...                      "c": {"v100": 100.0, "k80": 50.0}}, {"v100": 1, "k80": 1})
>>> {j: {t: round(f * 11, 6) for t, f in row.items()} for j, row in r.job_allocation.items()}
{'a': {'v100': 5.0, 'k80': 0.0}, 'b': {'v100': 5.0, 'k80': 1.0}, 'c': {'v100': 1.0, 'k80': 10.0}}
>>> r = policy.allocate({"a": {"v100": 40.0, "k80": 10.0}, "b": {"k80": 4.0}},
...                     {"v100": 1, "k80": 0})          # the K80 node is drained
>>> r.drained_types, r.unrunnable_jobs, r.job_allocation["b"], r.certificate.ok
(('k80',), ('b',), {'v100': 0.0, 'k80': 0.0}, True)
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from .._validation import (
    as_array,
    as_bool,
    as_option,
    as_positive_int,
    as_time_limit,
    as_tolerance,
    check_keywords,
)
from ..data import Cluster, Jobs
from ..errors import InputError
from ..results import Certificate, SolveStats, Status
from .incremental import IncrementalMaxMin
from .incremental_ftf import IncrementalFTF
from .readers import (
    READS,
    _check_read,
    _in_job_order,
    _matrix,
    _named,
    _per_job,
    _per_job_labels,
    _plan_jobs,
    _slo_array,
)
from .result import RoundResult
from .state import ISOLATED_STARTS, IsolatedTime, RoundBases, same_key, warm_seed

__all__ = ["POLICIES", "RoundPolicy", "RoundResult", "solve_round"]

#: policy names accepted by `fairalloc.RoundPolicy` and `fairalloc.solve_round`
POLICIES = ("max_min_fairness", "water_filling", "finish_time_fairness", "min_makespan",
            "max_total_throughput", "fifo", "shortest_job_first", "min_cost", "fisher_market",
            "themis", "shockwave")

#: Themis's default fairness knob ``f`` (the paper's default, Themis §6.4)
THEMIS_FAIRNESS_KNOB = 0.8

_SOLVE_OPTIONS = ("method", "backend", "gap_tol", "feas_tol", "stage_tol", "work_conserving",
                  "bottleneck_tol", "max_levels")


# --------------------------------------------------------------------------------------------
# the reduced solve
# --------------------------------------------------------------------------------------------
def _empty_certificate() -> Certificate:
    """The certificate of a program with no variables: value 0, bound 0, nothing violated."""
    return Certificate(kind="lp", primal_value=0.0, dual_bound=0.0, gap=0.0,
                       primal_residual=0.0)


def solve_round(policy: str, throughput: Any, workers: Any, *, job_ids: Any = None,
                types: Any = None, scale_factor: Any = None, weight: Any = None,
                steps_remaining: Any = None, elapsed: Any = None, isolated_elapsed: Any = None,
                order: Any = None, cost: Any = None, slo: Any = None, entities: Any = None,
                entity_weights: Mapping[Hashable, float] | None = None,
                entity_policies: Mapping[Hashable, str] | None = None,
                water_filling: bool = False, semantics: str = "arrival",
                normalized: bool = False, kind: str = "linear",
                fairness_knob: float = THEMIS_FAIRNESS_KNOB, plan_jobs: Any = None,
                plan_options: Mapping[str, Any] | None = None, warm_start: Any = None,
                method: str | None = None, backend: Any = None, gap_tol: float | None = None,
                feas_tol: float | None = None, stage_tol: float | None = None,
                work_conserving: bool | None = None, bottleneck_tol: float | None = None,
                max_levels: int | None = None) -> RoundResult:
    """Solve one round of a Gavel policy, accepting drained types, unrunnable jobs, no jobs.

    See `fairalloc.rounds.api` for the rules (the reduced program, drained types, unrunnable
    jobs). Per-job arguments are mappings job id -> value or arrays in job order; an argument
    the chosen policy does not use is ignored, a solve option it does not take is an error.

    Parameters
    ----------
    policy : str
        One of `fairalloc.rounds.api.POLICIES`.
    throughput : mapping, array_like or pandas.DataFrame
        ``{job_id: {worker_type: rate}}`` (steps/s; a type a job does not name: rate 0), an
        ``(n, k)`` array in ``types`` order, or a DataFrame indexed by job id with one column
        per type.
    workers : mapping or array_like
        ``{worker_type: count}`` (its order fixes the columns), or an array of counts with
        ``types=``. A count of 0 is a drained type.
    job_ids : sequence, optional
        Job labels of an array ``throughput`` (default ``0 .. n-1``).
    types : sequence of str, optional
        Type names of an array ``workers`` (required then).
    scale_factor : mapping or array_like, optional
        Workers each job's gang needs at once (positive integers; default 1). A job whose
        gang fits on no present type is unrunnable.
    weight : mapping or array_like, optional
        Positive priority weights (max-min fairness, water-filling); the budgets of a Fisher
        market.
    steps_remaining, elapsed, isolated_elapsed : mapping or array_like, optional
        Finish-time fairness and Themis: steps each job has left, seconds it has run, and
        seconds it would have run alone on its share (see `fairalloc.Jobs`).
    order : mapping or array_like, optional
        FIFO and water-filling: arrival times (or any ordering key; smaller first).
    cost : mapping or array_like, optional
        ``min_cost``: cost per worker of each type (type -> cost, or an array in type order).
    slo : mapping or array_like, optional
        ``min_cost``: each job's deadline in seconds (``inf``: none).
    entities : mapping or sequence, optional
        Water-filling: the entity (user, team) of each job.
    entity_weights : mapping, optional
        Water-filling: entity -> weight.
    entity_policies : mapping, optional
        Water-filling: entity -> the policy shared within the entity.
    water_filling : bool
        Max-min fairness: run the water-filling (multi-level) version (default ``False``).
    semantics : {"arrival", "objective"}
        FIFO: strict arrival order (default) or the paper's weighted-sum objective (see
        `fairalloc.FIFO`).
    normalized : bool
        ``max_total_throughput``: maximise the sum of normalised throughputs (default
        ``False``: raw throughputs).
    kind : {"linear", "leontief"}
        ``fisher_market``: the buyers' utilities.
    fairness_knob : float
        Themis's fairness knob ``f`` in [0, 1) (default `THEMIS_FAIRNESS_KNOB`).
    plan_jobs : mapping or sequence, optional
        Shockwave: job id -> `fairalloc.PlanJob` (required for ``"shockwave"``).
    plan_options : mapping, optional
        Shockwave: keyword options of `fairalloc.plan_schedule`.
    warm_start : optional
        A seed from a previous round (what `fairalloc.RoundPolicy` passes: max-min fairness
        and Fisher markets take ``(prices, objective)``, Shockwave ``(PlanResult, column)``
        to run a column of a kept plan); the answer is certified as always.
    method, backend, gap_tol, feas_tol, stage_tol, work_conserving, bottleneck_tol, max_levels
        The policy's solve options (see its ``solve``; ``None``: the policy's default).

    Returns
    -------
    RoundResult
        The allocation over every job and type given (zeros for unrunnable jobs and drained
        types), its prices, the reduced program's certificate, and the drained types and
        unrunnable jobs (`fairalloc.RoundResult`).

    Raises
    ------
    InputError
        An invalid argument, naming it (and the job or type).

    Examples
    --------
    A 4-GPU job that arrived first and four later 1-GPU jobs on 4 GPUs (FIFO, arrival order),
    with a drained type:

    >>> r = solve_round("fifo", {0: {"a": 1.0}, 1: {"a": 1.0}, 2: {"a": 1.0}},
    ...                 {"a": 4, "b": 0}, scale_factor={0: 4, 1: 1, 2: 1},
    ...                 order={0: 0.0, 1: 1.0, 2: 2.0})
    >>> [round(r.job_allocation[j]["a"], 6) for j in (0, 1, 2)], r.drained_types
    ([1.0, 0.0, 0.0], ('b',))
    """
    t0 = time.perf_counter()
    policy = as_option(policy, "policy", POLICIES)
    given = (method, backend, gap_tol, feas_tol, stage_tol, work_conserving, bottleneck_tol,
             max_levels)
    options = {key: value for key, value in zip(_SOLVE_OPTIONS, given, strict=True)
               if value is not None}
    T, cap, ids, tnames = _matrix(throughput, workers, job_ids, types)
    normal = functools.partial(_solve_arrays, t0, policy, T, cap, ids, tnames, options,
        scale_factor=scale_factor, weight=weight, steps_remaining=steps_remaining, elapsed=elapsed,
        isolated_elapsed=isolated_elapsed, order=order, cost=cost, slo=slo, entities=entities,
        entity_weights=entity_weights, entity_policies=entity_policies,
        water_filling=water_filling, semantics=semantics, normalized=normalized, kind=kind,
        fairness_knob=fairness_knob, plan_jobs=plan_jobs, plan_options=plan_options,
        warm_start=warm_start)
    if (policy == "max_min_fairness" and ids and water_filling is False and warm_start is None
            and IncrementalMaxMin.applies(options, normal.keywords)):
        # RoundPolicy's cold round (one LP per stage over the classes, #28); else the normal one
        per_job = {name: _in_job_order(v, name, ids) for name, v in (
            ("scale_factor", scale_factor), ("weight", weight))}
        return IncrementalMaxMin().round(t0, T, cap, ids, tnames, per_job, options, normal)
    return normal()


def _solve_arrays(t0: float, policy: str, T: np.ndarray, cap: np.ndarray,
                  ids: tuple[Hashable, ...], tnames: tuple[str, ...], options: dict[str, Any],
                  *, scale_factor: Any, weight: Any, steps_remaining: Any, elapsed: Any,
                  isolated_elapsed: Any, order: Any, cost: Any, slo: Any, entities: Any,
                  entity_weights: Any, entity_policies: Any, water_filling: bool,
                  semantics: str, normalized: bool, kind: str, fairness_knob: float,
                  plan_jobs: Any, plan_options: Any, warm_start: Any,
                  by_id: frozenset[str] = frozenset()) -> RoundResult:
    """`fairalloc.solve_round` after the throughputs and workers were turned
    into validated arrays (``_matrix``); `fairalloc.RoundPolicy` enters here
    directly (every per-job argument is still checked here, as in ``solve_round``; those
    named in ``by_id`` were mappings: their errors name the job by id, as ``solve_round``)."""
    n, k = T.shape
    sf = _per_job(scale_factor, "scale_factor", ids, by_id="scale_factor" in by_id,
                  positive=True, integer=True)
    plans = _plan_jobs(plan_jobs, ids) if policy == "shockwave" else None
    if plans is not None and sf is None:  # a plan job's gang is its PlanJob.workers
        sf = np.array([float(pj.workers) for pj in plans])
    sf = np.ones(n) if sf is None else sf
    present = cap > 0
    market = policy == "fisher_market"
    if market:  # buyers buy amounts of each type: no gangs
        sf = np.ones(n)
    allowed = (T > 0) & (sf[:, None] <= cap[None, :]) & present[None, :]
    runnable = allowed.any(axis=1)
    if market and kind == "leontief":  # a Leontief buyer needs every good it names
        runnable &= ~((T > 0) & ~present[None, :]).any(axis=1)
    drained = tuple(t for t, p in zip(tnames, present) if not p)
    unrunnable = (tuple(ids[i] for i in np.flatnonzero(~runnable).tolist())
                  if not runnable.all() else ())
    rj = np.flatnonzero(runnable)
    pt = np.flatnonzero(present)
    x = np.zeros((n, k))
    prices = np.zeros(k)
    tp = np.zeros(n)
    if rj.size == 0 or pt.size == 0:
        _check_options(options)  # (an empty round solves nothing: its options still count)
        _check_read(policy, ids, {"weight": weight, "steps_remaining": steps_remaining,
                                  "elapsed": elapsed, "isolated_elapsed": isolated_elapsed,
                                  "order": order, "slo": slo, "entities": entities,
                                  "scale_factor": scale_factor}, by_id)  # (and its values)
        stats = SolveStats(backend="none", method="empty", seconds=time.perf_counter() - t0,
                           iterations=0, solves=0)
        return RoundResult(objective=0.0, status=Status.OPTIMAL, stats=stats,
                           certificate=_empty_certificate(), x=x, prices=prices,
                           effective_throughput=tp, job_ids=ids, types=tnames,
                           drained_types=drained, unrunnable_jobs=unrunnable, policy=policy)
    full = rj.size == n
    sub = (lambda a: a) if full else (lambda a: a[rj])  # noqa: E731 - tiny selector

    def opt(value: Any, name: str, **kw: Any) -> np.ndarray | None:
        arr = _per_job(value, name, ids, by_id=name in by_id, **kw)
        return None if arr is None else sub(arr)

    Tr = T[np.ix_(rj, pt)] if not (full and pt.size == k) else T
    if policy == "themis":
        from .mechanisms import solve_themis

        res = solve_themis(Tr, sub(sf), cap[pt], opt(steps_remaining, "steps_remaining"),
                           opt(elapsed, "elapsed"), opt(isolated_elapsed, "isolated_elapsed"),
                           fairness_knob=fairness_knob, options=options)
        x_red, tp_red = res.x, res.effective_throughput
    elif policy == "shockwave":
        from .mechanisms import solve_shockwave

        assert plans is not None  # _plan_jobs raised when plan_jobs was missing
        res = solve_shockwave(Tr, sub(sf), cap[pt], [plans[i] for i in rj.tolist()],
                              plan_options=plan_options, options=options, previous=warm_start)
        x_red, tp_red = res.x, res.effective_throughput
    elif market:
        res = _solve_market(Tr, cap[pt], opt(weight, "weight", positive=True), kind=kind,
                            warm_start=warm_start, options=options)
        x_red, tp_red = res.allocation, res.utility
    else:
        given = {"weight": opt(weight, "weight", positive=True),
                 "steps_remaining": opt(steps_remaining, "steps_remaining"),
                 "elapsed": opt(elapsed, "elapsed"),
                 "isolated_elapsed": opt(isolated_elapsed, "isolated_elapsed")}
        try:  # (validated above and by the readers as Jobs checks them: not again, #28)
            jobs = Jobs._validated(Tr, sub(sf), **given)
        except InputError as exc:  # (about the runnable jobs: name the job of the round)
            raise _named(exc, exc.argument or "", ids, rj) from None
        cluster = Cluster._validated(tuple(tnames[j] for j in pt.tolist()), cap[pt])
        res = _solve_reduced(policy, jobs, cluster, ids, rj, pt, order=order, cost=cost,
                             slo=slo, entities=entities, entity_weights=entity_weights,
                             entity_policies=entity_policies, water_filling=water_filling,
                             semantics=semantics, normalized=normalized,
                             warm_start=warm_start, options=options)
        x_red, tp_red = res.x, res.effective_throughput
    x[np.ix_(rj, pt)] = x_red
    prices[pt] = res.prices
    tp[rj] = tp_red
    stats = dataclasses.replace(res.stats, seconds=time.perf_counter() - t0)
    return RoundResult(objective=res.objective, status=res.status, stats=stats,
                       certificate=res.certificate, x=x, prices=prices,
                       effective_throughput=tp, job_ids=ids, types=tnames,
                       drained_types=drained, unrunnable_jobs=unrunnable, policy=policy,
                       reduced=res)


def _check_options(options: dict[str, Any]) -> None:
    """Validate the numeric solve options every policy shares (tolerances, time limit) where
    no solve runs to do it (fuzz seed 24: an empty round accepted ``gap_tol=1+1j``)."""
    for name in ("gap_tol", "feas_tol", "stage_tol", "bottleneck_tol"):
        if name in options:
            as_tolerance(options[name], name)
    if "time_limit" in options:
        as_time_limit(options["time_limit"])


def _solve_market(U: np.ndarray, supply: np.ndarray, budget: np.ndarray | None, *,
                  kind: str, warm_start: Any, options: dict[str, Any]) -> Any:
    """The Fisher market over the runnable buyers and present goods (warm: prices)."""
    from ..markets import fisher_market

    allowed = ("method", "backend", "gap_tol", "feas_tol")
    bad = [key for key in options if key not in allowed]
    if bad:
        raise InputError(f"fisher_market takes no {bad[0]!r} (options: {', '.join(allowed)})",
                         argument=str(bad[0]))
    opts = dict(options)
    if opts.get("backend") is None:
        opts.pop("backend", None)
    warm = None
    if warm_start is not None:
        wp = np.asarray(warm_start[0], dtype=float)
        if wp.shape == supply.shape and np.all(wp > 0) and np.all(np.isfinite(wp)):
            warm = wp
    res = fisher_market(U, budget, supply, kind=kind, warm_start=warm, **opts)
    if warm is not None and res.stats.method == "fast":  # the path that starts from them
        res = dataclasses.replace(res, stats=dataclasses.replace(res.stats,
                                                                 method="fast+warm"))
    return res


def _solve_reduced(policy: str, jobs: Jobs, cluster: Cluster, ids: tuple[Hashable, ...],
                   rj: np.ndarray, pt: np.ndarray, *, order: Any, cost: Any, slo: Any,
                   entities: Any, entity_weights: Any, entity_policies: Any,
                   water_filling: bool, semantics: str, normalized: bool, warm_start: Any,
                   options: dict[str, Any]) -> Any:
    from .. import throughput as th

    def per_job(value: Any, name: str) -> np.ndarray | None:
        arr = _per_job(value, name, ids, nonneg=False)
        return None if arr is None else arr[rj]

    if policy == "max_min_fairness":
        wf_on = as_bool(water_filling, "water_filling")
        b: Any = th.MaxMinFairness(jobs, cluster, water_filling=wf_on,
                                   warm_start=None if wf_on else warm_start)
    elif policy == "water_filling":
        ent = _per_job_labels(entities, "entities", ids)
        ent = None if ent is None else [ent[i] for i in rj]
        b = th.WaterFilling(jobs, cluster, entities=ent, entity_weights=entity_weights,
                            entity_policies=entity_policies, order=per_job(order, "order"))
    elif policy in ("finish_time_fairness", "min_makespan", "shortest_job_first"):
        b = {"finish_time_fairness": th.FinishTimeFairness, "min_makespan": th.MinMakespan,
             "shortest_job_first": th.ShortestJobFirst}[policy](jobs, cluster)
    elif policy == "max_total_throughput":
        b = th.MaxTotalThroughput(jobs, cluster, normalized=normalized)
    elif policy == "fifo":
        b = th.FIFO(jobs, cluster, order=per_job(order, "order"), semantics=semantics)
    else:  # min_cost
        if cost is None:
            raise InputError("min_cost needs cost= (type -> cost per worker)", argument="cost")
        if isinstance(cost, Mapping):
            cost_r = {t: cost[t] for t in cluster.types if t in cost}
            if len(cost_r) != cluster.num_types:
                missing = next(t for t in cluster.types if t not in cost)
                raise InputError(f"cost has no entry for type {missing!r}", argument="cost")
        else:
            cost_r = as_array(cost, "cost", ndim=1, positive=True)[pt]
        slo_arr = _slo_array(slo, ids)
        b = th.MinCost(jobs, cluster, cost_r, slo=None if slo_arr is None else slo_arr[rj])
    check_keywords(b.solve, options, policy, _SOLVE_OPTIONS)  # (not a TypeError)
    return b.solve(**options)


# --------------------------------------------------------------------------------------------
# the stateful per-round policy
# --------------------------------------------------------------------------------------------
class RoundPolicy:
    """A policy called once per scheduling round (see `fairalloc.rounds.api`).

    Parameters
    ----------
    policy : str
        One of `fairalloc.rounds.api.POLICIES`.
    warm_start : bool
        Reuse an identical previous round, start the stage LPs from the previous round's
        bases (up to `fairalloc.rounds.state.WARM_MAX_JOBS` jobs) and seed max-min fairness
        with the previous prices and level (default ``True``); max-min and finish-time fairness
        keep models across rounds (``fairalloc.rounds.incremental[_ftf]``;
        `fairalloc.rounds.incremental.refusal`: max-min's options).
    isolated_start : {"elapsed", "zero", "gavel"}
        Finish-time fairness: a new job's isolated time starts at its ``elapsed`` or at 0
        (Gavel's rule; ``"gavel"``: Gavel's state exactly, see `fairalloc.rounds.state`); the
        policy then carries it across rounds (`isolated_elapsed`).
    replan_every : int
        Shockwave: run the kept plan's next column for ``replan_every - 1`` rounds between
        re-plans (default 1: re-plan every round). A change of the runnable jobs or of the
        workers, or the end of the window, re-plans earlier; a round that runs the kept plan
        has ``stats.method == "plan-reused"`` and ``stats.path == ("reuse-plan",)``.
    water_filling, semantics, normalized, cost, entity_weights, entity_policies, kind, \
fairness_knob, plan_options
        Fixed per-policy settings passed to every round (see `fairalloc.solve_round`;
        ``None``: the default).
    method, backend, gap_tol, feas_tol, stage_tol, work_conserving, bottleneck_tol, max_levels
        Solve options passed to every round (``None``: the policy's default).

    Examples
    --------
    >>> import fairalloc as fa
    >>> p = fa.RoundPolicy("max_min_fairness")
    >>> r1 = p.allocate({"a": {"gpu": 1.0}, "b": {"gpu": 1.0}}, {"gpu": 1})
    >>> r2 = p.allocate({"a": {"gpu": 1.0}, "b": {"gpu": 1.0}}, {"gpu": 1})   # same round
    >>> r2.stats.method, r2.job_allocation == r1.job_allocation
    ('reused', True)
    >>> p.allocate({}, {"gpu": 1}).job_allocation                            # empty round
    {}
    """

    _SETTINGS = ("water_filling", "semantics", "normalized", "cost", "entity_weights",
                 "entity_policies", "kind", "fairness_knob", "plan_options", *_SOLVE_OPTIONS)

    def __init__(self, policy: str = "max_min_fairness", *, warm_start: bool = True,
                 isolated_start: str = "elapsed",
                 water_filling: bool | None = None, semantics: str | None = None,
                 normalized: bool | None = None, cost: Any = None,
                 entity_weights: Mapping[Hashable, float] | None = None,
                 entity_policies: Mapping[Hashable, str] | None = None,
                 kind: str | None = None, fairness_knob: float | None = None,
                 plan_options: Mapping[str, Any] | None = None, replan_every: int = 1,
                 method: str | None = None, backend: Any = None,
                 gap_tol: float | None = None, feas_tol: float | None = None,
                 stage_tol: float | None = None, work_conserving: bool | None = None,
                 bottleneck_tol: float | None = None, max_levels: int | None = None) -> None:
        self.policy = as_option(policy, "policy", POLICIES)
        self.warm_start = as_bool(warm_start, "warm_start")
        #: Shockwave: rounds between re-plans (the plan's columns are run in between)
        self.replan_every = as_positive_int(replan_every, "replan_every")
        given = (water_filling, semantics, normalized, cost, entity_weights, entity_policies,
                 kind, fairness_knob, plan_options, method, backend, gap_tol, feas_tol,
                 stage_tol, work_conserving, bottleneck_tol, max_levels)
        #: the settings passed to every round (those given, not ``None``)
        self.settings = {key: value for key, value in zip(self._SETTINGS, given, strict=True)
                         if value is not None}
        self._options = {key: v for key, v in self.settings.items() if key in _SOLVE_OPTIONS}
        self.rounds = 0
        self._last: tuple[tuple[Any, ...] | None, RoundResult] | None = None
        # Shockwave: (runnable job ids, workers, plan, column of the last round run)
        self._plan: tuple[tuple[Hashable, ...], bytes, Any, int] | None = None
        self.isolated_start = as_option(isolated_start, "isolated_start", ISOLATED_STARTS)
        self._isolated = IsolatedTime()  # finish-time fairness's state across rounds
        self._bases = RoundBases()  # the previous round's stage LP bases
        kept = {"max_min_fairness": IncrementalMaxMin, "finish_time_fairness": IncrementalFTF}
        self._incremental: IncrementalMaxMin | IncrementalFTF | None = (  # kept HiGHS models
            kept[self.policy]() if self.warm_start and self.policy in kept
            and not self.settings.get("water_filling") else None)

    @property
    def isolated_elapsed(self) -> dict[Hashable, float]:
        """Finish-time fairness: ``{job_id: seconds}`` each job of the last round was charged
        as its isolated time (alone on ``1/n`` of the cluster, for the steps done so far; see
        `fairalloc.rounds.state`); kept by `reset`, seed or clear it in place."""
        return self._isolated.seconds

    def reset(self) -> None:
        """Forget the previous round (the next one is solved cold) and any kept plan."""
        self._last = None
        self._plan = None
        self._bases.clear()
        if self._incremental is not None:
            self._incremental.clear()

    def allocate(self, throughput: Any, workers: Any, *, job_ids: Any = None,
                 types: Any = None, scale_factor: Any = None, weight: Any = None,
                 steps_remaining: Any = None, elapsed: Any = None,
                 isolated_elapsed: Any = None, order: Any = None, slo: Any = None,
                 entities: Any = None, plan_jobs: Any = None) -> RoundResult:
        """This round's allocation (see `fairalloc.solve_round` for the
        arguments)."""
        t0 = time.perf_counter()
        # inputs are converted to arrays in job order once; the round's fingerprint (for
        # reuse) is taken on those arrays (bytes), never by walking nested dicts
        T, cap, ids, tnames = _matrix(throughput, workers, job_ids, types)
        per_job: dict[str, Any] = {}
        reads = READS[self.policy]  # (the others are ignored, as by solve_round)
        given = (("scale_factor", scale_factor), ("weight", weight),
                 ("steps_remaining", steps_remaining), ("elapsed", elapsed),
                 ("isolated_elapsed", isolated_elapsed), ("order", order))
        for name, value in given:
            per_job[name] = _in_job_order(value, name, ids) if name in reads else None
        per_job["slo"] = _slo_array(slo, ids) if "slo" in reads else None
        per_job["entities"] = (_per_job_labels(entities, "entities", ids)
                               if "entities" in reads else None)
        mapped = frozenset(name for name, value in given if isinstance(value, Mapping))
        if self.policy == "shockwave":
            return self._shockwave(T, cap, ids, tnames, per_job, plan_jobs, t0, mapped)
        # finish-time fairness: this round's isolated times (in per_job), kept when solved
        iso = self._isolated.round(self.policy, ids, T, cap, per_job, self.isolated_start)
        key = None
        if self.warm_start:  # (ids last: bytes differ first, in C; ids may run __eq__ per job)
            key = (T.tobytes(), cap.tobytes(), tnames,
                   *(None if v is None else (tuple(v) if isinstance(v, list) else v.tobytes())
                     for v in per_job.values()), ids)
            if self._last is not None and same_key(self._last[0], key):
                prev = self._last[1]
                self.rounds += 1
                if iso is not None:
                    self._isolated.commit(iso)
                return dataclasses.replace(prev, stats=SolveStats(
                    backend=prev.stats.backend, method="reused",
                    seconds=time.perf_counter() - t0, iterations=0, solves=0,
                    raw_status=prev.stats.raw_status))
        warm = None
        if (self.warm_start and self._last is not None
                and not self.settings.get("water_filling", False)):
            warm = warm_seed(self.policy, self._last[1], tnames, cap, len(ids))

        def normal() -> RoundResult:
            with self._bases.round(self.warm_start, ids, T, cap, per_job["scale_factor"],
                                   tnames, self.policy):
                return self._solve(t0, T, cap, ids, tnames, per_job, warm, None, mapped)

        res = (self._incremental.round(t0, T, cap, ids, tnames, per_job, self._options, normal)
               if self._incremental is not None and ids else normal())
        self.rounds += 1
        if iso is not None:
            self._isolated.commit(iso)
        if self.warm_start:
            self._last = (key, res)
        return res

    def _shockwave(self, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
                   tnames: tuple[str, ...], per_job: dict[str, Any], plan_jobs: Any,
                   t0: float, mapped: frozenset[str]) -> RoundResult:
        """Run the kept plan's next column, or re-plan (every ``replan_every`` rounds, when the
        window is used up, or when the runnable jobs or the workers changed)."""
        window = int((self.settings.get("plan_options") or {}).get("rounds", _PLAN_WINDOW))
        previous = None
        if self._plan is not None:
            kept_ids, kept_cap, plan, column = self._plan
            nxt = column + 1
            sf = per_job["scale_factor"]
            if sf is None:
                sf = np.array([float(pj.workers) for pj in _plan_jobs(plan_jobs, ids)])
            present = cap > 0
            runnable = ((T > 0) & (sf[:, None] <= cap[None, :]) & present[None, :]).any(axis=1)
            now = tuple(j for j, r in zip(ids, runnable.tolist()) if r)
            if (now == kept_ids and cap.tobytes() == kept_cap and nxt < window
                    and nxt % self.replan_every != 0):
                previous = (plan, nxt)
        res = self._solve(t0, T, cap, ids, tnames, per_job, previous, plan_jobs, mapped)
        red = res.reduced
        if red is not None:
            kept = tuple(j for j in ids if j not in set(res.unrunnable_jobs))
            self._plan = (kept, cap.tobytes(), red.detail, red.column)
        else:
            self._plan = None
        self.rounds += 1
        return res

    def _solve(self, t0: float, T: np.ndarray, cap: np.ndarray, ids: tuple[Hashable, ...],
               tnames: tuple[str, ...], per_job: dict[str, Any], warm: Any,
               plan_jobs: Any, mapped: frozenset[str] = frozenset()) -> RoundResult:
        """`fairalloc.solve_round` on this round's validated arrays, with the
        policy's fixed settings (``seconds`` measured from ``t0``, the call's start;
        ``mapped``: the per-job arguments given as mappings, their errors named by job id)."""
        st = self.settings
        return _solve_arrays(
            t0, self.policy, T, cap, ids, tnames, self._options, **per_job,
            cost=st.get("cost"), entity_weights=st.get("entity_weights"),
            entity_policies=st.get("entity_policies"),
            water_filling=st.get("water_filling", False),
            semantics=st.get("semantics", "arrival"), normalized=st.get("normalized", False),
            kind=st.get("kind", "linear"),
            fairness_knob=st.get("fairness_knob", THEMIS_FAIRNESS_KNOB),
            plan_jobs=plan_jobs, plan_options=st.get("plan_options"), warm_start=warm,
            by_id=mapped)


#: plan_schedule's default window (rounds per plan)
_PLAN_WINDOW = 20
