"""Gavel's space-sharing (``*_packed``) policies on fairalloc's certified ``pairs=`` formulations.

Gavel passes single-job keys (``{worker_type: rate}``) and job-pair keys (``JobIdPair(a, b)``:
``{worker_type: [rate of a, rate of b]}``) in one dict and expects a fraction for every key back.
Each class here solves the round with the fairalloc policy of the same name with
``pairs=`` (`fairalloc.JobPairs`) through
`fairalloc.integrations.gavel_base.packed_solve`; see
`fairalloc.integrations.gavel` for the name table. Also here:
the per-job isolated-time state of finish-time fairness
(`fairalloc.integrations.gavel_packed.IsolatedTimeState`) and the
translation of Gavel's entity, SLO and cost arguments.

Examples
--------
>>> from fairalloc.integrations.gavel_packed import MinTotalDurationPolicyWithPacking
>>> p = MinTotalDurationPolicyWithPacking()
>>> out = p.get_allocation({0: {"v100": 1.0}, 1: {"v100": 1.0},
...                         (0, 1): {"v100": [0.9, 0.9]}}, {0: 1, 1: 1},
...                        {0: 100.0, 1: 100.0}, {"v100": 1})
>>> round(out[(0, 1)]["v100"], 6)
1.0
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from ..errors import InfeasibleError, InputError
from .gavel_base import (
    GavelPolicy,
    is_pair,
    packed_solve,
    require_mapping,
)

__all__ = [
    "FIFOPolicyWithPacking",
    "FinishTimeFairnessPolicyWithPacking",
    "IsolatedTimeState",
    "MaxMinFairnessPolicyWithPacking",
    "MaxMinFairnessWaterFillingPolicyWithPacking",
    "MinTotalDurationPolicyWithPacking",
    "ThroughputNormalizedByCostSumWithPackingSLOs",
    "cost_objective",
    "entity_map",
    "packed_effective",
    "slo_map",
]


def _singles(tp: Mapping[Hashable, Any]) -> dict[Hashable, Any]:
    return {j: row for j, row in tp.items() if not is_pair(j)}


def cost_objective(cluster_spec: Mapping[str, int],
                   instance_costs: Mapping[str, float] | None) -> dict[str, float]:
    """Gavel's ``instance_costs`` as fairalloc's ``cost`` (``None``: every type costs 1, as in
    Gavel's code).

    Examples
    --------
    >>> cost_objective({"v100": 2, "k80": 1}, None)
    {'v100': 1.0, 'k80': 1.0}
    """
    if instance_costs is None:
        return dict.fromkeys((str(t) for t in cluster_spec), 1.0)
    require_mapping(instance_costs, "instance_costs")
    missing = [t for t in cluster_spec if t not in instance_costs]
    if missing:
        raise InputError(f"instance_costs has no cost for worker type {missing[0]!r}",
                         argument="instance_costs")
    return {str(t): instance_costs[t] for t in cluster_spec}


def meeting_slos_or_dropping(policy: Any, solve: Callable[[bool], Any]) -> Any:
    """``solve(True)`` (with the SLO rows); where no allocation meets the SLOs, Gavel drops
    them for the round: ``solve(False)``, and ``policy.slo_dropped`` says so."""
    policy.slo_dropped = False
    try:
        return solve(True)
    except InfeasibleError:
        policy.slo_dropped = True
        return solve(False)


def slo_map(tp: Mapping[Hashable, Any], slos: Mapping[Hashable, float] | None,
            steps: Mapping[Hashable, float] | None) -> tuple[Any, Any]:
    """Gavel's ``SLOs`` / ``num_steps_remaining`` (SLO jobs only) as fairalloc's per-job ``slo``
    (``inf``: none) and ``steps_remaining``; ``(None, None)`` without SLOs.

    Examples
    --------
    >>> slo_map({0: {}, 1: {}}, {1: 50.0}, {1: 100.0})
    ({0: inf, 1: 50.0}, {0: 1.0, 1: 100.0})
    """
    if not slos:
        return None, None
    require_mapping(slos, "SLOs")
    steps = {} if steps is None else steps
    require_mapping(steps, "num_steps_remaining")
    unknown = [j for j in slos if j not in tp]
    if unknown:
        raise InputError(f"SLOs names job {unknown[0]!r}, which has no throughputs",
                         argument="SLOs")
    missing = [j for j in slos if j not in steps]
    if missing:
        raise InputError(f"num_steps_remaining has no entry for SLO job {missing[0]!r}",
                         argument="num_steps_remaining")
    singles = [j for j in tp if not is_pair(j)]
    return ({j: slos.get(j, float("inf")) for j in singles},
            {j: steps.get(j, 1.0) for j in singles})


def entity_map(tp: Mapping[Hashable, Any], entity_to_job_mapping: Mapping[Hashable, Any] | None,
               entity_weights: Mapping[Hashable, float] | None,
               entity_policies: Mapping[Hashable, str] | None) -> tuple[Any, Any, Any]:
    """Gavel's ``entity_to_job_mapping`` as fairalloc's ``entities`` (job -> entity), with
    ``entity_weights`` / ``entity_policies`` kept to the entities that have a job this round
    (an entity whose jobs all finished is accepted, as Gavel accepts it).

    Examples
    --------
    >>> entity_map({0: {}}, {"a": [0], "b": []}, {"a": 1.0, "b": 2.0}, None)
    ({0: 'a'}, {'a': 1.0}, None)
    """
    if entity_to_job_mapping is None:
        return None, entity_weights, entity_policies
    require_mapping(entity_to_job_mapping, "entity_to_job_mapping")
    entities = {j: e for e, js in entity_to_job_mapping.items() for j in js if j in tp}
    active = set(entities.values())

    def keep(d: Mapping[Hashable, Any] | None) -> Any:
        if d is None:
            return None
        return {e: v for e, v in d.items() if e in active or e not in entity_to_job_mapping}

    return entities, keep(entity_weights), keep(entity_policies)


class IsolatedTimeState:
    """Gavel's finish-time-fairness state, per job: the time it would have needed in isolation
    for the steps it ran in the rounds seen (``cumulative_isolated_time``), kept by the
    policy's `fairalloc.RoundPolicy` (``isolated_start="gavel"``, see
    `fairalloc.rounds.state`).

    Between two calls a job's steps done (previous ``num_steps_remaining`` minus this one's)
    over its previous isolated throughput (Gavel's formula) are added; a job seen for the
    first time starts at 0; a job that leaves is kept; an empty round forgets the previous
    round (as Gavel does). A job with isolated throughput 0 (it can run nowhere) accrues
    nothing. ``cumulative_isolated_time`` is a plain dict: a scheduler that creates the policy
    while jobs are already running may seed it (e.g. with their ``times_since_start``,
    fairalloc's default when no history is known), in place or by assignment.

    Examples
    --------
    >>> from fairalloc.integrations import gavel
    >>> p = gavel.policy("finish_time_fairness_perf")
    >>> tp, sf, cs = {0: {"v100": 2.0}}, {0: 1}, {"v100": 1}
    >>> _ = p.get_allocation(tp, sf, {0: 1.0}, {0: 0.0}, {0: 100.0}, cs)
    >>> _ = p.get_allocation(tp, sf, {0: 1.0}, {0: 30.0}, {0: 40.0}, cs)
    >>> p.cumulative_isolated_time
    {0: 30.0}
    """

    _round: Any

    @property
    def cumulative_isolated_time(self) -> dict[Hashable, float]:
        """``{job_id: seconds}``: Gavel's ``_cumulative_isolated_time``."""
        return self._round.isolated_elapsed

    @cumulative_isolated_time.setter
    def cumulative_isolated_time(self, value: Mapping[Hashable, float]) -> None:
        require_mapping(value, "cumulative_isolated_time")
        state = self._round.isolated_elapsed
        if value is not state:
            state.clear()
            state.update(value)


class MaxMinFairnessPolicyWithPacking(GavelPolicy):
    """Gavel's max-min fairness with space sharing (``max_min_fairness_packed``; also accepted
    as ``max_min_fairness_packing``).

    Solved by `fairalloc.max_min_space_sharing` (column
    generation, certified) on the present types and runnable jobs; a pair with a member that
    cannot run gets 0. Weighted by ``s_m / w_m`` over the ``X^equal`` throughput, as Gavel's
    ``MaxMinFairnessPolicyWithPacking.get_allocation``.
    """

    _policy = "max_min_fairness"
    _name = "MaxMinFairness_Packing"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{key: {worker_type: fraction}}`` for single and pair keys."""
        from ..throughput import max_min_space_sharing

        def solve(jobs: Any, cluster: Any, pairs: Any) -> Any:
            return max_min_space_sharing(jobs, cluster, pairs)

        return packed_solve(self, unflattened_throughputs, cluster_spec, scale_factors, solve,
                            per_job={"weight": unflattened_priority_weights})


class MaxMinFairnessWaterFillingPolicyWithPacking(GavelPolicy):
    """Gavel's hierarchical water-filling with space sharing
    (``max_min_fairness_water_filling_packed``):
    `fairalloc.water_filling` with ``pairs=``."""

    _policy = "water_filling"
    _name = "MaxMinFairnessWaterFilling_Packing"

    def __init__(self, solver: str | None = None, *,
                 entity_policies: Mapping[Hashable, str] | None = None,
                 priority_reweighting_policies: Mapping[Hashable, str] | None = None,
                 **settings: Any) -> None:
        super().__init__(solver, **settings)
        self.entity_policies = (entity_policies if entity_policies is not None
                                else priority_reweighting_policies)

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, cluster_spec: Any,
                       entity_weights: Mapping[Hashable, float] | None = None,
                       entity_to_job_mapping: Mapping[Hashable, Any] | None = None,
                       verbose: bool = False, return_effective_throughputs: bool = False
                       ) -> Any:
        """``{key: {worker_type: fraction}}`` for single and pair keys; with
        ``return_effective_throughputs``, Gavel's ``(normalized_effective_throughputs,
        single_job_ids)``: each job's throughput (alone and in its pairs) over its ``X^equal``
        throughput, in sorted job order."""
        from ..throughput import water_filling
        from ..throughput.space_sharing import singles_dominated_pairs

        del verbose
        require_mapping(unflattened_throughputs, "unflattened_throughputs")
        entities, weights, policies = entity_map(_singles(unflattened_throughputs),
                                                 entity_to_job_mapping, entity_weights,
                                                 self.entity_policies)
        self._round.settings.update(entity_weights=weights, entity_policies=policies)
        def solve(jobs: Any, cluster: Any, pairs: Any, **options: Any) -> Any:
            # (pair columns the singles match: the same levels on a smaller program)
            return water_filling(jobs, cluster, pairs=singles_dominated_pairs(jobs, cluster,
                                                                             pairs), **options)

        out = packed_solve(self, unflattened_throughputs, cluster_spec, scale_factors,
                           solve, per_job={"weight": unflattened_priority_weights},
                           extra={"entities": entities}, entity_weights=weights,
                           entity_policies=policies)
        if not return_effective_throughputs:
            return out
        return packed_effective(unflattened_throughputs, out, cluster_spec)


def packed_effective(tp: Mapping[Hashable, Any], alloc: Mapping[Hashable, Any],
                     cluster_spec: Mapping[str, int]) -> tuple[np.ndarray, list[Any]]:
    """Gavel's ``(normalized_effective_throughputs, single_job_ids)`` of a packed allocation:
    ``(sum_t T_jt x_jt + sum_{pairs p of j} rate_{p,j,t} x_pt) / (T_j . c / sum c)``.

    Examples
    --------
    >>> eff, ids = packed_effective({0: {"a": 2.0}, 1: {"a": 2.0}, (0, 1): {"a": [1.5, 1.0]}},
    ...                             {0: {"a": 0.0}, 1: {"a": 0.0}, (0, 1): {"a": 1.0}},
    ...                             {"a": 1})
    >>> eff.tolist(), ids
    ([0.75, 0.5], [0, 1])
    """
    from .gavel_base import members, pair_keys, pair_rates, throughput_matrix

    require_mapping(tp, "unflattened_throughputs")
    pairs = pair_keys(tp)
    listed = set(pairs)
    singles: list[Any] = [j for j in tp if j not in listed]
    try:
        ids = sorted(singles)
    except TypeError:
        ids = singles
    pos = {j: i for i, j in enumerate(ids)}
    types = [str(t) for t in cluster_spec]
    T = throughput_matrix({j: tp[j] for j in ids}, ids, types)
    R = pair_rates(tp, pairs, types)                                  # (pairs, types, 2)
    X = np.array([[alloc[j][t] for t in types] for j in ids]).reshape(T.shape)
    eff = (T * X).sum(axis=1)
    at = [pos.get(m) for p in pairs for m in members(p)]
    if None in at:
        p = pairs[at.index(None) // 2]
        raise InputError(f"unflattened_throughputs[{p!r}]: pair key of a job with no "
                         "throughputs of its own", argument="unflattened_throughputs")
    P = np.array([[alloc[p][t] for t in types] for p in pairs]).reshape(len(pairs), len(types))
    np.add.at(eff, np.array(at, dtype=np.int64), (R * P[:, :, None]).sum(axis=1).ravel())
    c = np.array([float(cluster_spec[t]) for t in cluster_spec])
    prop = T @ (c / c.sum()) if c.sum() > 0 else np.zeros(len(ids))
    safe = np.where(prop > 0, prop, 1.0)
    return np.where(prop > 0, eff / safe, 0.0), ids


class FinishTimeFairnessPolicyWithPacking(IsolatedTimeState, GavelPolicy):
    """Gavel's finish-time fairness with space sharing (``finish_time_fairness_packed``):
    `fairalloc.finish_time_fairness` with ``pairs=`` and
    Gavel's per-job isolated-time state (on the single-job throughputs). Priority weights are
    unused (Gavel's packed code divides the rates by them, which rescales its rho; fairalloc
    keeps rho a ratio of times)."""

    _policy = "finish_time_fairness"
    _name = "FinishTimeFairness_Packing"

    def __init__(self, solver: str | None = None, **settings: Any) -> None:
        super().__init__(solver, **{"isolated_start": "gavel", **settings})

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, times_since_start: Any,
                       num_steps_remaining: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{key: {worker_type: fraction}}`` for single and pair keys."""
        from ..throughput import finish_time_fairness

        del unflattened_priority_weights
        return packed_solve(self, unflattened_throughputs, cluster_spec, scale_factors,
                            finish_time_fairness,
                            per_job={"steps_remaining": num_steps_remaining,
                                     "elapsed": times_since_start})


class MinTotalDurationPolicyWithPacking(GavelPolicy):
    """Gavel's minimum makespan with space sharing (``min_total_duration_packed``):
    `fairalloc.min_makespan` with ``pairs=`` (one exact LP; Gavel
    bisects to 5 %)."""

    _policy = "min_makespan"
    _name = "MinTotalDuration_Packing"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       num_steps_remaining: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{key: {worker_type: fraction}}`` for single and pair keys."""
        from ..throughput import min_makespan

        return packed_solve(self, unflattened_throughputs, cluster_spec, scale_factors,
                            min_makespan, per_job={"steps_remaining": num_steps_remaining})


class FIFOPolicyWithPacking(GavelPolicy):
    """FIFO with space sharing (``fifo_packed``): `fairalloc.fifo` (arrival
    semantics, sorted job-id order) with ``pairs=``, fractional and certified. Gavel's
    ``FIFOPolicyWithPacking`` is a greedy: whole workers of each job's fastest free type in
    arrival order, then queued jobs packed onto a running job when the pair's normalised
    throughput exceeds 1.5."""

    _policy = "fifo"
    _name = "FIFO_Packing"

    def get_allocation(self, throughputs: Any, scale_factors: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{key: {worker_type: fraction}}`` for single and pair keys."""
        from ..throughput import fifo

        require_mapping(throughputs, "unflattened_throughputs")
        ids: list[Any] = list(_singles(throughputs))
        try:
            ranked = sorted(ids)
        except TypeError:
            ranked = ids
        order = dict(zip(ranked, np.arange(len(ranked), dtype=float).tolist()))
        return packed_solve(self, throughputs, cluster_spec, scale_factors, fifo,
                            extra={"order": order})


class ThroughputNormalizedByCostSumWithPackingSLOs(GavelPolicy):
    """Gavel's cost policy with SLOs and space sharing
    (``max_sum_throughput_normalized_by_cost_packed_SLOs``): the paper's objective
    (`fairalloc.min_cost`, linear-fractional) with ``pairs=``; SLOs
    dropped for the round when no allocation meets them (``slo_dropped``), as Gavel does."""

    _policy = "min_cost"
    _name = "ThroughputNormalizedByCostSum_PackingSLOs"

    def __init__(self, solver: str | None = None, **settings: Any) -> None:
        super().__init__(solver, **settings)
        self.slo_dropped = False

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       cluster_spec: Any, instance_costs: Mapping[str, float] | None = None,
                       SLOs: Mapping[Hashable, float] | None = None,  # noqa: N803 (Gavel's name)
                       num_steps_remaining: Mapping[Hashable, float] | None = None
                       ) -> dict[Hashable, dict[str, float]]:
        """``{key: {worker_type: fraction}}`` for single and pair keys."""
        from ..throughput import min_cost

        require_mapping(unflattened_throughputs, "unflattened_throughputs")
        costs = cost_objective(cluster_spec, instance_costs)
        slo, steps = slo_map(unflattened_throughputs, SLOs, num_steps_remaining)
        self._round.settings["cost"] = costs
        present = {t: c for t, c in costs.items() if cluster_spec.get(t, 0) > 0}
        return meeting_slos_or_dropping(self, lambda with_slos: packed_solve(
            self, unflattened_throughputs, cluster_spec, scale_factors, min_cost,
            **({"per_job": {"steps_remaining": steps}, "extra": {"slo": slo}} if with_slos
               else {}), cost=present))
