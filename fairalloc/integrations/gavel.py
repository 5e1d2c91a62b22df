"""Gavel-compatible policy objects: drop fairalloc into Gavel's round-based scheduler.

Gavel (stanford-futuredata/gavel, ``scheduler/policies/``) calls its policy once per round as
``policy.get_allocation(unflattened_throughputs, scale_factors, priority_weights,
cluster_spec)`` (other policies take ``times_since_start`` / ``num_steps_remaining`` /
``instance_costs`` / ``SLOs`` as well) with dicts keyed by job id and worker type, and expects
``{job_id: {worker_type: fraction}}`` back. `fairalloc.integrations.gavel.policy`
accepts every name of Gavel's ``utils.get_available_policies()`` (22 names, plus
``max_min_fairness_packing``) and returns an object with the same ``get_allocation`` signature
and return shape as Gavel's class for that name. The LP policies solve the round with
`fairalloc.RoundPolicy` (certified, warm-started across rounds,
accepting drained worker types and jobs that cannot run this round); the ``*_packed`` ones
with fairalloc's space-sharing formulations (``pairs=``,
`fairalloc.integrations.gavel_base.packed_solve`); ``fifo``, ``gandiva``,
``allox`` and ``isolated`` are Gavel's heuristics, seeded and deterministic
(`fairalloc.integrations.gavel_heuristics`).
The table of names, fairalloc policies and differences is in ``formulations/gavel_policies.md``
("Gavel's policy names").

Normalisation (Gavel's code vs the paper, Gavel §4.1)
--------------------------------------------------------
* ``X^equal``: fairalloc normalises each job's throughput by ``throughput(m, X^equal)``, its
  time split across types in proportion to worker counts (row sum 1): Gavel's
  ``ProportionalPolicy`` (``c_j / sum c``), on the types where the job's gang fits.
* Scale factors and priority weights: Gavel's ``MaxMinFairnessPolicyWithPerf`` maximises
  ``min_m s_m tp_m(X) / (w_m tp_m(X^equal))``: ``s_m / w_m`` once, the paper's formula.
  ``normalization="paper"`` (default) and ``"gavel_code"`` are the same program (the latter
  used to square the weight, which matches no revision of Gavel's current code).
* Heterogeneity-agnostic names (``max_min_fairness``, ``max_min_fairness_water_filling``:
  every throughput 1; ``finish_time_fairness``, ``min_total_duration``: every type at the
  job's ``v100`` rate) collapse the throughputs exactly as Gavel's wrappers do, then solve the
  ``_perf`` program.
* Finish-time fairness keeps Gavel's per-job state across rounds: the time each job would have
  needed in isolation so far (``FinishTimeFairnessPolicyWithPerf.cumulative_isolated_time``),
  passed to fairalloc as ``isolated_elapsed``.
* Empty rounds: Gavel's policies return ``None`` when there are no jobs; these return ``{}``.
  A worker type with 0 workers in ``cluster_spec`` (or one that a job names and the spec does
  not list) and jobs that fit on no present type get 0.

Examples
--------
>>> from fairalloc.integrations import gavel
>>> p = gavel.MaxMinFairnessPolicyWithPerf()
>>> tp = {0: {"v100": 40.0, "k80": 10.0}, 1: {"v100": 12.0, "k80": 4.0},
...       2: {"v100": 100.0, "k80": 50.0}}
>>> alloc = p.get_allocation(tp, {0: 1, 1: 1, 2: 1}, {0: 1.0, 1: 1.0, 2: 1.0},
...                          {"v100": 1, "k80": 1})
>>> {j: {t: round(v * 11, 6) for t, v in row.items()} for j, row in alloc.items()}
{0: {'v100': 5.0, 'k80': 0.0}, 1: {'v100': 5.0, 'k80': 1.0}, 2: {'v100': 1.0, 'k80': 10.0}}
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from .._validation import as_option
from ..errors import InputError
from ..rounds import RoundPolicy, RoundResult
from .gavel_base import (
    NORMALIZATIONS,
    GavelPolicy,
    check_rates,
    require_mapping,
)
from .gavel_fifo import fifo_fill, fifo_result
from .gavel_heuristics import AlloXPolicy, FIFOPolicy, GandivaPolicy, IsolatedPolicy
from .gavel_packed import (
    FIFOPolicyWithPacking,
    FinishTimeFairnessPolicyWithPacking,
    IsolatedTimeState,
    MaxMinFairnessPolicyWithPacking,
    MaxMinFairnessWaterFillingPolicyWithPacking,
    MinTotalDurationPolicyWithPacking,
    ThroughputNormalizedByCostSumWithPackingSLOs,
    cost_objective,
    entity_map,
    meeting_slos_or_dropping,
    slo_map,
)

__all__ = [
    "GAVEL_POLICY_NAMES",
    "AlloXPolicy",
    "FIFOPolicy",
    "FIFOPolicyWithPacking",
    "FIFOPolicyWithPerf",
    "FinishTimeFairnessPolicy",
    "FinishTimeFairnessPolicyWithPacking",
    "FinishTimeFairnessPolicyWithPerf",
    "GandivaPolicy",
    "GavelPolicy",
    "IsolatedPolicy",
    "MaxMinFairnessPolicy",
    "MaxMinFairnessPolicyWithPacking",
    "MaxMinFairnessPolicyWithPerf",
    "MaxMinFairnessWaterFillingPolicy",
    "MaxMinFairnessWaterFillingPolicyWithPacking",
    "MaxMinFairnessWaterFillingPolicyWithPerf",
    "MinTotalDurationPolicy",
    "MinTotalDurationPolicyWithPacking",
    "MinTotalDurationPolicyWithPerf",
    "ThroughputNormalizedByCostSumWithPackingSLOs",
    "ThroughputNormalizedByCostSumWithPerf",
    "ThroughputNormalizedByCostSumWithPerfSLOs",
    "ThroughputSumWithPerf",
    "policy",
]

#: the worker type whose rate Gavel's heterogeneity-agnostic ``finish_time_fairness`` and
#: ``min_total_duration`` give every type (hard-coded in Gavel's wrappers)
REFERENCE_TYPE = "v100"

#: the prefix of Gavel's parametrised AlloX names (``"allox_alpha=0.5"``)
ALLOX_ALPHA = "allox_alpha="


def _weights(priority_weights: Any, scale_factors: Any, normalization: str) -> Any:
    """The fairalloc weights for Gavel's priority weights: unchanged under both
    normalisations (see the module notes)."""
    del scale_factors
    as_option(normalization, "normalization", NORMALIZATIONS)
    return priority_weights


def _collapse(tp: Any, reference: str | None) -> dict[Hashable, dict[str, float]]:
    """Gavel's heterogeneity-agnostic throughputs: every type 1 (``reference=None``) or every
    type at the job's rate on ``reference``; the rates are validated all the same."""
    check_rates(tp)
    out: dict[Hashable, dict[str, float]] = {}
    for j, row in tp.items():
        require_mapping(row, "unflattened_throughputs")
        if reference is None:
            out[j] = dict.fromkeys(row, 1.0)
        elif reference not in row:
            raise InputError(f"unflattened_throughputs[{j!r}] has no {reference!r} rate: the "
                             "heterogeneity-agnostic policy runs every type at it (Gavel "
                             "hard-codes 'v100'; pass reference_type=...)",
                             argument="unflattened_throughputs")
        else:
            out[j] = dict.fromkeys(row, row[reference])
    return out


class MaxMinFairnessPolicyWithPerf(GavelPolicy):
    """Gavel's LAS / heterogeneity-aware max-min fairness (``max_min_fairness_perf``).

    ``normalization``: ``"paper"`` (default) or ``"gavel_code"`` (the same program; see the
    module notes).
    """

    _policy = "max_min_fairness"
    _name = "MaxMinFairness_Perf"

    def __init__(self, solver: str | None = None, *, normalization: str = "paper",
                 **settings: Any) -> None:
        super().__init__(solver, **settings)
        self.normalization = as_option(normalization, "normalization", NORMALIZATIONS)

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        return self._solve(unflattened_throughputs, cluster_spec, scale_factor=scale_factors,
                           weight=_weights(unflattened_priority_weights, scale_factors,
                                           self.normalization))


class MaxMinFairnessPolicy(MaxMinFairnessPolicyWithPerf):
    """Gavel's heterogeneity-agnostic max-min fairness (``max_min_fairness``): every
    throughput set to 1, then ``max_min_fairness_perf``."""

    _name = "MaxMinFairness"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        return super().get_allocation(_collapse(unflattened_throughputs, None), scale_factors,
                                      unflattened_priority_weights, cluster_spec)


class MaxMinFairnessWaterFillingPolicyWithPerf(GavelPolicy):
    """Gavel's hierarchical max-min fairness with water-filling
    (``max_min_fairness_water_filling_perf``), certified and without big-M MILPs.

    ``entity_policies``: optional ``{entity: "fairness" | "fifo"}`` (Gavel's
    ``priority_reweighting_policies``; default fairness). An entity with no job this round is
    accepted (its weight is kept for the rounds it has jobs).
    """

    _policy = "water_filling"
    _name = "MaxMinFairnessWaterFilling_Perf"
    _reference: str | None = ""

    def __init__(self, solver: str | None = None, *, normalization: str = "paper",
                 entity_policies: Mapping[Hashable, str] | None = None,
                 priority_reweighting_policies: Mapping[Hashable, str] | None = None,
                 **settings: Any) -> None:
        super().__init__(solver, **settings)
        self.normalization = as_option(normalization, "normalization", NORMALIZATIONS)
        self.entity_policies = (entity_policies if entity_policies is not None
                                else priority_reweighting_policies)

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, cluster_spec: Any,
                       entity_weights: Mapping[Hashable, float] | None = None,
                       entity_to_job_mapping: Mapping[Hashable, Any] | None = None,
                       verbose: bool = False, return_effective_throughputs: bool = False
                       ) -> Any:
        """``{job_id: {worker_type: fraction}}``; with ``return_effective_throughputs``,
        Gavel's ``(normalized_effective_throughputs, job_ids)`` instead: each job's
        throughput over its ``X^equal`` throughput (an array) in sorted job order."""
        del verbose
        real = unflattened_throughputs
        tp = real if self._reference == "" else _collapse(real, self._reference)
        entities, weights, policies = entity_map(tp, entity_to_job_mapping, entity_weights,
                                                 self.entity_policies)
        self._round.settings.update(entity_weights=weights, entity_policies=policies)
        alloc = self._solve(tp, cluster_spec, scale_factor=scale_factors, entities=entities,
                            weight=_weights(unflattened_priority_weights, scale_factors,
                                            self.normalization))
        if not return_effective_throughputs:
            return alloc
        return _normalized_effective(real, alloc, cluster_spec)


def _sorted_ids(ids: Any) -> list[Any]:
    try:
        return sorted(ids)
    except TypeError:
        return list(ids)


def _normalized_effective(tp: Mapping[Hashable, Any], alloc: Mapping[Hashable, Any],
                          cluster_spec: Mapping[str, int]) -> tuple[np.ndarray, list[Any]]:
    """Gavel's ``(normalized_effective_throughputs, job_ids)``: ``tp_m(X) / tp_m(X^prop)``."""
    ids = _sorted_ids(tp)
    types = list(cluster_spec)
    T = np.array([[float(tp[j].get(t, 0.0)) for t in types] for j in ids]).reshape(len(ids),
                                                                                 len(types))
    X = np.array([[alloc[j][t] for t in types] for j in ids]).reshape(T.shape)
    c = np.array([float(cluster_spec[t]) for t in types])
    prop = T @ (c / c.sum()) if c.sum() > 0 else np.zeros(len(ids))
    eff = (T * X).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(prop > 0, eff / np.where(prop > 0, prop, 1.0), 0.0)
    return out, ids


class MaxMinFairnessWaterFillingPolicy(MaxMinFairnessWaterFillingPolicyWithPerf):
    """Gavel's heterogeneity-agnostic water-filling (``max_min_fairness_water_filling``):
    every throughput 1, then the ``_perf`` program."""

    _name = "MaxMinFairnessWaterFilling"
    _reference = None


class FinishTimeFairnessPolicyWithPerf(IsolatedTimeState, GavelPolicy):
    """Gavel's finish-time fairness (``finish_time_fairness_perf``; Themis' rho), exact by a
    Dinkelbach sequence of LPs (`fairalloc.finish_time_fairness`).

    ``rho_m = (times_since_start_m + steps_m / tp_m(X)) / (iso_m + steps_m / tp_m(X^iso))``
    with Gavel's per-job state ``iso_m`` (``cumulative_isolated_time``): the time the job would
    have needed in isolation for the steps it ran in the rounds this object saw, the steps
    done between two calls over the previous round's isolated throughput (0 for a job seen for
    the first time). Priority weights are unused, as in Gavel's code.
    """

    _policy = "finish_time_fairness"
    _name = "FinishTimeFairness_Perf"
    _reference: str | None = ""

    def __init__(self, solver: str | None = None, *, reference_type: str = REFERENCE_TYPE,
                 **settings: Any) -> None:
        super().__init__(solver, **{"isolated_start": "gavel", **settings})
        self.reference_type = reference_type

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, times_since_start: Any,
                       num_steps_remaining: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        del unflattened_priority_weights
        tp = (unflattened_throughputs if self._reference == ""
              else _collapse(unflattened_throughputs, self.reference_type))
        return self._solve(tp, cluster_spec, scale_factor=scale_factors,
                           elapsed=times_since_start, steps_remaining=num_steps_remaining)


class FinishTimeFairnessPolicy(FinishTimeFairnessPolicyWithPerf):
    """Gavel's heterogeneity-agnostic finish-time fairness (``finish_time_fairness``): every
    type at the job's ``reference_type`` (``"v100"``) rate, then the ``_perf`` program (its
    isolated-time state on those rates, as in Gavel)."""

    _name = "FinishTimeFairness"
    _reference = REFERENCE_TYPE


class MinTotalDurationPolicyWithPerf(GavelPolicy):
    """Gavel's minimum makespan (``min_total_duration_perf``), one exact LP (Gavel bisects on
    the makespan to 5 %)."""

    _policy = "min_makespan"
    _name = "MinTotalDuration_Perf"
    _reference: str | None = ""

    def __init__(self, solver: str | None = None, *, reference_type: str = REFERENCE_TYPE,
                 **settings: Any) -> None:
        super().__init__(solver, **{"isolated_start": "gavel", **settings})
        self.reference_type = reference_type

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       num_steps_remaining: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        tp = (unflattened_throughputs if self._reference == ""
              else _collapse(unflattened_throughputs, self.reference_type))
        return self._solve(tp, cluster_spec, scale_factor=scale_factors,
                           steps_remaining=num_steps_remaining)


class MinTotalDurationPolicy(MinTotalDurationPolicyWithPerf):
    """Gavel's heterogeneity-agnostic minimum makespan (``min_total_duration``): every type at
    the job's ``reference_type`` (``"v100"``) rate, then the ``_perf`` program."""

    _name = "MinTotalDuration"
    _reference = REFERENCE_TYPE


class ThroughputSumWithPerf(GavelPolicy):
    """Gavel's maximum total throughput (``max_sum_throughput_perf``)."""

    _policy = "max_total_throughput"
    _name = "ThroughputSumWithPerf"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       cluster_spec: Any) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        return self._solve(unflattened_throughputs, cluster_spec, scale_factor=scale_factors)


class ThroughputNormalizedByCostSumWithPerfSLOs(GavelPolicy):
    """Gavel's cost policy with SLOs (``max_sum_throughput_normalized_by_cost_perf_SLOs``).

    ``objective="paper"`` (default): the paper's §4.2 program, maximise total throughput per
    unit cost ``sum_m tp_m / sum cost_j s_m x_mj`` (`fairalloc.min_cost`,
    linear-fractional, exact). ``objective="gavel_code"``: Gavel's code, maximise
    ``sum_m sum_j T_mj x_mj / cost_j`` (one LP; with ``instance_costs=None`` this is
    ``max_sum_throughput_perf``). The paper's is the default because it is the quantity the
    paper defines and evaluates (Gavel's linear objective ignores the gang size in the cost).
    ``SLOs[j]`` (seconds) requires ``tp_j >= num_steps_remaining[j] / SLOs[j]``; when no
    allocation meets every SLO, the SLOs are dropped for the round (as Gavel does) and
    ``slo_dropped`` is ``True``.
    """

    _policy = "min_cost"
    _name = "ThroughputNormalizedByCostSum_PerfSLOs"

    def __init__(self, solver: str | None = None, *, objective: str = "paper",
                 **settings: Any) -> None:
        self.objective = as_option(objective, "objective", ("paper", "gavel_code"))
        super().__init__(solver, **settings)
        if self.objective == "gavel_code":
            self._round = RoundPolicy("max_total_throughput", **settings)
        self.slo_dropped = False

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       cluster_spec: Any, instance_costs: Mapping[str, float] | None = None,
                       SLOs: Mapping[Hashable, float] | None = None,  # noqa: N803 (Gavel's name)
                       num_steps_remaining: Mapping[Hashable, float] | None = None
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        require_mapping(unflattened_throughputs, "unflattened_throughputs")
        costs = cost_objective(cluster_spec, instance_costs)
        slo, steps = slo_map(unflattened_throughputs, SLOs, num_steps_remaining)
        self.slo_dropped = False
        if self.objective == "gavel_code":
            return self._gavel_code(unflattened_throughputs, scale_factors, cluster_spec,
                                    costs, slo, steps)
        self._round.settings["cost"] = costs
        return meeting_slos_or_dropping(self, lambda with_slos: self._solve(
            unflattened_throughputs, cluster_spec, scale_factor=scale_factors,
            **({"slo": slo, "steps_remaining": steps} if with_slos else {})))

    def _gavel_code(self, tp: Mapping[Hashable, Any], scale_factors: Any,
                    cluster_spec: Any, costs: Mapping[str, float], slo: Any, steps: Any
                    ) -> dict[Hashable, dict[str, float]]:
        if slo is not None:
            raise InputError("SLOs with objective='gavel_code' (Gavel's linear cost "
                             "objective under SLO rows) are not implemented: fairalloc's "
                             "max_total_throughput takes no per-job throughput floors; use "
                             "objective='paper'", argument="SLOs")
        scaled = {j: {t: float(v) / costs.get(t, 1.0) for t, v in row.items()}
                  for j, row in tp.items()}
        return self._solve(scaled, cluster_spec, scale_factor=scale_factors)


class ThroughputNormalizedByCostSumWithPerf(ThroughputNormalizedByCostSumWithPerfSLOs):
    """Gavel's cost policy (``max_sum_throughput_normalized_by_cost_perf``), no SLOs; see
    `fairalloc.integrations.gavel.ThroughputNormalizedByCostSumWithPerfSLOs`."""

    _name = "ThroughputNormalizedByCostSum_Perf"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,  # type: ignore[override]
                       cluster_spec: Any, instance_costs: Mapping[str, float] | None
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        return super().get_allocation(unflattened_throughputs, scale_factors, cluster_spec,
                                      instance_costs)


class FIFOPolicyWithPerf(GavelPolicy):
    """FIFO in arrival (sorted job id) order (``fifo_perf``), fractional and certified
    (`fairalloc.fifo` arrival semantics: a first-arrived gang job is never
    starved by later, smaller jobs; Gavel's greedy gives each job whole workers of its fastest
    type with room). Without ties between equally fast types this is a greedy fill, computed
    straight from the dicts and certified in closed form
    (`fairalloc.integrations.gavel_fifo`; ``last_result`` is then built when first read);
    otherwise `fairalloc.RoundPolicy`."""

    _policy = "fifo"
    _name = "FIFO_Perf"
    _fill: Any = None
    _last: RoundResult | None = None

    @property  # type: ignore[override]
    def last_result(self) -> RoundResult | None:
        """The previous round's full result (as `GavelPolicy.last_result`)."""
        if self._fill is not None:
            self._last, self._fill = fifo_result(self._fill), None
        return self._last

    @last_result.setter
    def last_result(self, value: RoundResult | None) -> None:
        self._last, self._fill = value, None

    def get_allocation(self, throughputs: Any, scale_factors: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        require_mapping(throughputs, "unflattened_throughputs")
        fill = fifo_fill(throughputs, scale_factors, cluster_spec, self._round.settings)
        if fill is not None:  # the greedy fill, certified (`gavel_fifo`; pair keys: not here)
            self._fill = fill  # (its RoundResult is built when ``last_result`` is read)
            return fill.allocation()
        self._fill = None
        ranked = _sorted_ids(throughputs)
        order = dict(zip(ranked, np.arange(len(ranked), dtype=float).tolist()))
        return self._solve(throughputs, cluster_spec, scale_factor=scale_factors, order=order)


#: every name of Gavel's ``utils.get_available_policies()`` (commit c4fa400), in its order
GAVEL_POLICY_NAMES = (
    "allox", "fifo", "fifo_perf", "fifo_packed", "finish_time_fairness",
    "finish_time_fairness_perf", "finish_time_fairness_packed", "gandiva", "isolated",
    "max_min_fairness", "max_min_fairness_perf", "max_min_fairness_packed",
    "max_min_fairness_water_filling", "max_min_fairness_water_filling_perf",
    "max_min_fairness_water_filling_packed", "max_sum_throughput_perf",
    "max_sum_throughput_normalized_by_cost_perf",
    "max_sum_throughput_normalized_by_cost_perf_SLOs",
    "max_sum_throughput_normalized_by_cost_packed_SLOs", "min_total_duration",
    "min_total_duration_perf", "min_total_duration_packed",
)

_BY_NAME: dict[str, type[Any]] = {
    "allox": AlloXPolicy,
    "fifo": FIFOPolicy,
    "fifo_perf": FIFOPolicyWithPerf,
    "fifo_packed": FIFOPolicyWithPacking,
    "finish_time_fairness": FinishTimeFairnessPolicy,
    "finish_time_fairness_perf": FinishTimeFairnessPolicyWithPerf,
    "finish_time_fairness_packed": FinishTimeFairnessPolicyWithPacking,
    "gandiva": GandivaPolicy,
    "isolated": IsolatedPolicy,
    "max_min_fairness": MaxMinFairnessPolicy,
    "max_min_fairness_perf": MaxMinFairnessPolicyWithPerf,
    "max_min_fairness_packed": MaxMinFairnessPolicyWithPacking,
    "max_min_fairness_packing": MaxMinFairnessPolicyWithPacking,
    "max_min_fairness_water_filling": MaxMinFairnessWaterFillingPolicy,
    "max_min_fairness_water_filling_perf": MaxMinFairnessWaterFillingPolicyWithPerf,
    "max_min_fairness_water_filling_packed": MaxMinFairnessWaterFillingPolicyWithPacking,
    "max_sum_throughput_perf": ThroughputSumWithPerf,
    "max_sum_throughput_normalized_by_cost_perf": ThroughputNormalizedByCostSumWithPerf,
    "max_sum_throughput_normalized_by_cost_perf_SLOs": ThroughputNormalizedByCostSumWithPerfSLOs,
    "max_sum_throughput_normalized_by_cost_packed_SLOs":
        ThroughputNormalizedByCostSumWithPackingSLOs,
    "min_total_duration": MinTotalDurationPolicy,
    "min_total_duration_perf": MinTotalDurationPolicyWithPerf,
    "min_total_duration_packed": MinTotalDurationPolicyWithPacking,
}


def policy(name: str, **settings: Any) -> Any:
    """The policy object for one of Gavel's policy names (``"max_min_fairness_perf"``, ...),
    as Gavel's ``utils.get_policy(name, solver=..., seed=...)`` returns it.

    ``settings`` go to the class (``solver=`` and ``seed=`` are accepted by every one; ``seed``
    is used by ``fifo`` and ``gandiva``; fairalloc's solve settings by the LP policies).
    ``"allox_alpha=<a>"`` is AlloX with ``alpha=a``, as Gavel's ``get_policy`` parses it.

    Examples
    --------
    >>> policy("fifo_perf").name
    'FIFO_Perf'
    >>> len(GAVEL_POLICY_NAMES), all(n in _BY_NAME for n in GAVEL_POLICY_NAMES)
    (22, True)
    >>> policy("allox_alpha=0.5").alpha
    0.5
    """
    if isinstance(name, str) and name.startswith(ALLOX_ALPHA):
        try:
            alpha = float(name[len(ALLOX_ALPHA):])
        except ValueError:
            raise InputError(f"name {name!r}: {ALLOX_ALPHA}<number> expected",
                             argument="name") from None
        return AlloXPolicy(alpha=alpha, **settings)
    return _BY_NAME[as_option(name, "name", tuple(_BY_NAME))](**settings)
