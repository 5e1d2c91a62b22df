"""Gavel-compatible policy objects: drop fairalloc into Gavel's round-based scheduler.

Gavel (stanford-futuredata/gavel, ``scheduler/policies/``) calls its policy once per round as
``policy.get_allocation(unflattened_throughputs, scale_factors, priority_weights,
cluster_spec)`` (other policies take ``times_since_start`` / ``num_steps_remaining`` as well)
with dicts keyed by job id and worker type, and expects ``{job_id: {worker_type:
fraction}}`` back. The classes here have the same names, signatures and return shape as
Gavel's ``*WithPerf`` policies and solve the round with
[`fairalloc.RoundPolicy`][fairalloc.RoundPolicy] (certified, warm-started across rounds, accepting
drained worker types and jobs that cannot run this round).
[`policy`][fairalloc.integrations.gavel.policy] maps Gavel's policy names to them.

Normalisation (Gavel's code vs the paper, Gavel §4.1)
--------------------------------------------------------
* ``X^equal``: fairalloc normalises each job's throughput by ``throughput(m, X^equal)``,
  its time split across types in proportion to worker counts (row sum 1). Gavel's code uses
  the throughput of its "isolated" allocation (max-min fairness on unit throughputs), which
  for equal weights and scale factors is the same up to one common factor; a common factor
  does not change any max-min allocation.
* Scale factors and priority weights: the paper's objective is ``min_m (s_m / w_m)
  throughput(m, X) / throughput(m, X^equal)`` (``normalization="paper"``, the default).
  Gavel's code applies ``s_m / w_m`` twice (once in its isolated allocation, whose time is
  proportional to ``w_m / s_m``, and once in the objective), i.e. it ranks jobs by
  ``(s_m / w_m)^2 ...``; ``normalization="gavel_code"`` reproduces that by passing the weight
  ``w_m^2 / s_m`` to fairalloc. With unit weights and scale factors both agree.
* FIFO: Gavel's job ids increase with arrival;
  [`FIFOPolicyWithPerf`][fairalloc.integrations.gavel.FIFOPolicyWithPerf] serves jobs in sorted
  job-id order with fairalloc's arrival semantics (a first-arrived gang job is never starved by
  later, smaller jobs).
* Empty rounds: Gavel's policies return ``None`` when there are no jobs; these return
  ``{}``. A worker type with 0 workers in ``cluster_spec`` (or one that a job names and the
  spec does not list) and jobs that fit on no present type get 0.

Space-sharing job-pair keys:
[`MaxMinFairnessPolicyWithPacking`][fairalloc.integrations.gavel.MaxMinFairnessPolicyWithPacking]
takes them (single and pair keys in, a fraction for every key out); the other policies refuse a pair
key with [`fairalloc.InputError`][fairalloc.InputError].

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

from .._validation import as_array, as_option, fmt_index
from ..errors import InputError
from ..rounds import RoundPolicy, RoundResult

__all__ = [
    "FIFOPolicyWithPerf",
    "FinishTimeFairnessPolicyWithPerf",
    "GavelPolicy",
    "MaxMinFairnessPolicyWithPacking",
    "MaxMinFairnessPolicyWithPerf",
    "MaxMinFairnessWaterFillingPolicyWithPerf",
    "MinTotalDurationPolicyWithPerf",
    "ThroughputSumWithPerf",
    "policy",
]

NORMALIZATIONS = ("paper", "gavel_code")

#: fairalloc's argument names -> the names of Gavel's ``get_allocation`` arguments (an
#: [`InputError`][fairalloc.InputError] names the argument the caller passed)
GAVEL_ARGUMENTS = {"throughput": "unflattened_throughputs", "workers": "cluster_spec",
                   "types": "cluster_spec", "scale_factor": "scale_factors",
                   "weight": "unflattened_priority_weights", "elapsed": "times_since_start",
                   "steps_remaining": "num_steps_remaining",
                   "entities": "entity_to_job_mapping"}


def _gavel_error(exc: InputError) -> InputError:
    """``exc`` with the argument renamed to Gavel's name for it."""
    ours = exc.argument or ""
    name = GAVEL_ARGUMENTS.get(ours)
    if name is None:
        return exc
    text = str(exc)
    text = (name + text[len(ours):] if text.startswith(ours) and text[len(ours):][:1] in "[ "
            else f"{name}: {text}")
    return InputError(text, argument=name, index=exc.index)


def _is_pair(job_id: Any) -> bool:
    is_pair = getattr(job_id, "is_pair", None)
    if callable(is_pair):
        return bool(is_pair())
    return isinstance(job_id, tuple) and len(job_id) == 2 and job_id[1] is not None


class GavelPolicy:
    """Base of the Gavel-compatible policies: a [`fairalloc.RoundPolicy`][fairalloc.RoundPolicy]
    behind Gavel's interface.

    Parameters
    ----------
    solver : str, optional
        Accepted for compatibility with Gavel's constructors (``solver='ECOS'``) and ignored:
        fairalloc picks its own certified solvers (``backend=`` selects the LP backend).
    **settings
        Passed to [`fairalloc.RoundPolicy`][fairalloc.RoundPolicy] (``backend``, ``gap_tol``, ...).

    Attributes
    ----------
    last_result : fairalloc.RoundResult or None
        The previous round's full result (prices, certificate, facts).
    """

    _policy = "max_min_fairness"
    _name = "fairalloc"

    def __init__(self, solver: str | None = None, **settings: Any) -> None:
        del solver  # Gavel passes its cvxpy solver name; fairalloc chooses its own
        self._round = RoundPolicy(self._policy, **settings)
        self.last_result: RoundResult | None = None

    @property
    def name(self) -> str:
        """Gavel-style policy name."""
        return self._name

    def _solve(self, unflattened_throughputs: Mapping[Hashable, Mapping[str, float]],
               cluster_spec: Mapping[str, int], **per_job: Any
               ) -> dict[Hashable, dict[str, float]]:
        if not isinstance(unflattened_throughputs, Mapping):
            raise InputError("unflattened_throughputs must be a dict job_id -> {worker_type: "
                             "throughput}", argument="unflattened_throughputs")
        pairs = [j for j in unflattened_throughputs if _is_pair(j)]
        if pairs:
            raise InputError(f"job-pair key {pairs[0]!r}: space sharing (Gavel's *WithPacking "
                             "policies) needs "
                             "MaxMinFairnessPolicyWithPacking", argument="unflattened_throughputs")
        try:
            r = self._round.allocate(unflattened_throughputs, cluster_spec, **per_job)
        except InputError as exc:
            raise _gavel_error(exc) from None
        self.last_result = r
        return r.allocation


def _by_job(values: Any, name: str, jobs: list[Any], **kw: Any) -> Any:
    """``values[j]`` for each job ``j``, validated by ``as_array`` (``kw``); errors name
    ``name`` and the job id."""
    if not isinstance(values, Mapping):
        raise InputError(f"{name} must be a dict job_id -> number, got {type(values).__name__}",
                         argument=name)
    missing = [j for j in jobs if j not in values]
    if missing:
        raise InputError(f"{name} has no entry for job {missing[0]!r}", argument=name)
    try:
        return as_array([values[j] for j in jobs], name, ndim=1, allow_empty=True, **kw)
    except InputError as exc:
        if exc.index is None or len(exc.index) != 1:
            raise
        text = str(exc).replace(f"{name}{fmt_index(exc.index)}",
                                f"{name}[{jobs[exc.index[0]]!r}]", 1)
        raise InputError(text, argument=name, index=exc.index) from None


def _weights(priority_weights: Any, scale_factors: Any, normalization: str) -> Any:
    if normalization == "paper" or priority_weights is None:
        return priority_weights
    jobs = list(priority_weights) if isinstance(priority_weights, Mapping) else []
    w = _by_job(priority_weights, "unflattened_priority_weights", jobs, positive=True)
    s = (_by_job(scale_factors, "scale_factors", jobs, positive=True, integer=True)
         if scale_factors is not None else 1.0)
    import numpy as np

    with np.errstate(over="ignore"):
        out = w * (w / s)  # w^2 / s, without squaring first (w^2 may overflow where this does not)
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        j = jobs[int(bad[0])]
        raise InputError(f"unflattened_priority_weights[{j!r}] = {w[bad[0]]:g}: its square over "
                         "the scale factor (normalization='gavel_code') overflows a float",
                         argument="unflattened_priority_weights", index=(int(bad[0]),))
    return dict(zip(jobs, out.tolist()))


class MaxMinFairnessPolicyWithPerf(GavelPolicy):
    """Gavel's LAS / heterogeneity-aware max-min fairness (``max_min_fairness_perf``).

    ``normalization``: ``"paper"`` (default) or ``"gavel_code"`` (see the module notes).
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


class MaxMinFairnessWaterFillingPolicyWithPerf(GavelPolicy):
    """Gavel's hierarchical max-min fairness with water-filling
    (``max_min_fairness_water_filling_perf``), certified and without big-M MILPs.

    ``entity_policies``: optional ``{entity: "fairness" | "fifo"}`` (default fairness).
    """

    _policy = "water_filling"
    _name = "MaxMinFairnessWaterFilling_Perf"

    def __init__(self, solver: str | None = None, *, normalization: str = "paper",
                 entity_policies: Mapping[Hashable, str] | None = None,
                 **settings: Any) -> None:
        super().__init__(solver, **settings)
        self.normalization = as_option(normalization, "normalization", NORMALIZATIONS)
        self.entity_policies = entity_policies

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, cluster_spec: Any,
                       entity_weights: Mapping[Hashable, float] | None = None,
                       entity_to_job_mapping: Mapping[Hashable, Any] | None = None,
                       verbose: bool = False, return_effective_throughputs: bool = False
                       ) -> Any:
        """``{job_id: {worker_type: fraction}}`` (and effective throughputs if asked)."""
        del verbose
        entities = None
        if entity_to_job_mapping is not None:
            entities = {j: e for e, js in entity_to_job_mapping.items() for j in js}
        self._round.settings.update(entity_weights=entity_weights,
                                    entity_policies=self.entity_policies)
        alloc = self._solve(unflattened_throughputs, cluster_spec,
                            scale_factor=scale_factors, entities=entities,
                            weight=_weights(unflattened_priority_weights, scale_factors,
                                            self.normalization))
        if return_effective_throughputs:
            r = self.last_result
            assert r is not None
            return alloc, dict(zip(r.job_ids, r.effective_throughput.tolist()))
        return alloc


class FinishTimeFairnessPolicyWithPerf(GavelPolicy):
    """Gavel's finish-time fairness (``finish_time_fairness_perf``; Themis' rho), exact by
    a Dinkelbach sequence of LPs
    ([`fairalloc.finish_time_fairness`][fairalloc.finish_time_fairness])."""

    _policy = "finish_time_fairness"
    _name = "FinishTimeFairness_Perf"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, times_since_start: Any,
                       num_steps_remaining: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round (priority weights are unused,
        as in Gavel's code)."""
        del unflattened_priority_weights
        return self._solve(unflattened_throughputs, cluster_spec, scale_factor=scale_factors,
                           elapsed=times_since_start, steps_remaining=num_steps_remaining)


class MinTotalDurationPolicyWithPerf(GavelPolicy):
    """Gavel's minimum makespan (``min_total_duration_perf``), one exact LP (no bisection)."""

    _policy = "min_makespan"
    _name = "MinTotalDuration_Perf"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       num_steps_remaining: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        return self._solve(unflattened_throughputs, cluster_spec, scale_factor=scale_factors,
                           steps_remaining=num_steps_remaining)


class ThroughputSumWithPerf(GavelPolicy):
    """Gavel's maximum total throughput (``max_sum_throughput_perf``)."""

    _policy = "max_total_throughput"
    _name = "ThroughputSumWithPerf"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       cluster_spec: Any) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        return self._solve(unflattened_throughputs, cluster_spec, scale_factor=scale_factors)


class FIFOPolicyWithPerf(GavelPolicy):
    """FIFO in arrival (sorted job id) order (``fifo_perf``), fractional and certified."""

    _policy = "fifo"
    _name = "FIFO_Perf"

    def get_allocation(self, throughputs: Any, scale_factors: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        try:
            ranked = sorted(throughputs)
        except TypeError:
            ranked = list(throughputs)
        order = {j: float(i) for i, j in enumerate(ranked)}
        return self._solve(throughputs, cluster_spec, scale_factor=scale_factors, order=order)


def _members(key: Any) -> tuple[Any, Any]:
    singletons = getattr(key, "singletons", None)
    if callable(singletons):
        a, b = singletons()
        return a, b
    return key[0], key[1]


class MaxMinFairnessPolicyWithPacking(GavelPolicy):
    """Gavel's max-min fairness with space sharing (``max_min_fairness_packing``).

    ``unflattened_throughputs`` holds single-job keys (``{worker_type: rate}``) and job-pair
    keys (``{worker_type: [rate of member 0, rate of member 1]}``), as Gavel passes them.
    Solved by [`fairalloc.max_min_space_sharing`][fairalloc.max_min_space_sharing] (column
    generation, certified) on the present types and runnable jobs; a pair with a member that cannot
    run gets 0. Returns a fraction for every key: for a single key the time the job runs *alone* on
    each type, for a pair key the time the pair shares a worker. Normalisation as in
    [`MaxMinFairnessPolicyWithPerf`][fairalloc.integrations.gavel.MaxMinFairnessPolicyWithPerf]
    (``X^equal``; Gavel's packing code normalises by the sum of a job's throughputs over types
    instead, a per-job constant of another kind).
    """

    _policy = "max_min_fairness"
    _name = "MaxMinFairness_Packing"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       unflattened_priority_weights: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{key: {worker_type: fraction}}`` for single and pair keys."""
        import numpy as np

        from ..data import Cluster, JobPairs, Jobs
        from ..throughput import max_min_space_sharing

        if not isinstance(unflattened_throughputs, Mapping):
            raise InputError("unflattened_throughputs must be a dict",
                             argument="unflattened_throughputs")
        singles = [j for j in unflattened_throughputs if not _is_pair(j)]
        pairs = [j for j in unflattened_throughputs if _is_pair(j)]
        single_tp = {j: unflattened_throughputs[j] for j in singles}
        types = tuple(str(t) for t in cluster_spec)
        out: dict[Hashable, dict[str, float]] = {}
        try:
            base = self._round.allocate(single_tp, cluster_spec, scale_factor=scale_factors,
                                        weight=unflattened_priority_weights)
        except InputError as exc:
            raise _gavel_error(exc) from None
        self.last_result = base
        if not pairs or base.reduced is None:
            out.update(base.allocation)
            out.update({p: dict.fromkeys(types, 0.0) for p in pairs})
            return out
        # the reduced program's rows and columns, as RoundPolicy chose them
        run = [j for j in singles if j not in set(base.unrunnable_jobs)]
        pos = {j: i for i, j in enumerate(run)}
        present = [t for t in types if t not in set(base.drained_types)]
        mem, raw, keep = [], [], []
        for p in pairs:
            a, b = _members(p)
            if a in pos and b in pos:
                row = unflattened_throughputs[p]
                if not isinstance(row, Mapping):
                    raise InputError(f"unflattened_throughputs[{p!r}] must be a dict worker "
                                     "type -> [rate of member 0, rate of member 1]",
                                     argument="unflattened_throughputs")
                mem.append((pos[a], pos[b]))
                raw.append([row.get(t, (0.0, 0.0)) for t in present])
                keep.append(p)
        ptp = _pair_rates(raw, keep, present)
        T = np.array([[float(single_tp[j].get(t, 0.0)) for t in present] for j in run])
        weights = (None if unflattened_priority_weights is None
                   else [unflattened_priority_weights[j] for j in run])
        sfs = None if scale_factors is None else [scale_factors[j] for j in run]
        jobs = Jobs(T, scale_factor=sfs, weight=weights)
        cluster = Cluster({t: cluster_spec[t] for t in present})
        if not keep:
            out.update(base.allocation)
            out.update({p: dict.fromkeys(types, 0.0) for p in pairs})
            return out
        r = max_min_space_sharing(jobs, cluster, JobPairs(np.array(mem), np.array(ptp)))
        alone = np.array(r.x, dtype=float)
        P = np.asarray(r.pair_x)
        m = np.array(mem)
        np.add.at(alone, m[:, 0], -P)
        np.add.at(alone, m[:, 1], -P)
        alone = np.clip(alone, 0.0, None)
        col = {t: i for i, t in enumerate(present)}
        for j in singles:
            i = pos.get(j)
            out[j] = {t: (float(alone[i, col[t]]) if i is not None and t in col else 0.0)
                      for t in types}
        kept = {p: i for i, p in enumerate(keep)}
        for p in pairs:
            i = kept.get(p)
            out[p] = {t: (float(P[i, col[t]]) if i is not None and t in col else 0.0)
                      for t in types}
        self.packing_result = r
        return out


def _pair_rates(raw: list[list[Any]], keys: list[Any], types: list[str]) -> Any:
    """Validated pair rates (P, types, 2); errors name the pair key and the worker type."""
    import numpy as np

    if not raw:
        return np.zeros((0, len(types), 2))
    name = "unflattened_throughputs"
    for key, row in zip(keys, raw):  # each entry: a pair of rates (one per member)
        for wtype, v in zip(types, row):
            try:
                pair = not isinstance(v, str | bytes) and np.shape(v) == (2,)
            except ValueError:  # ragged
                pair = False
            if not pair:
                raise InputError(f"{name}[{key!r}][{wtype!r}] is {v!r}; a pair key's rate is "
                                 "[rate of member 0, rate of member 1]", argument=name)
    try:
        return as_array(raw, name, ndim=3, shape=(len(keys), len(types), 2))
    except InputError as exc:
        if exc.index is None or len(exc.index) != 3:
            raise
        p, t, i = exc.index
        text = str(exc).replace(f"{name}{fmt_index(exc.index)}",
                                f"{name}[{keys[p]!r}][{types[t]!r}][{i}]", 1)
        raise InputError(text, argument=name, index=exc.index) from None


_BY_NAME: dict[str, type[GavelPolicy]] = {
    "max_min_fairness_packing": MaxMinFairnessPolicyWithPacking,
    "max_min_fairness_perf": MaxMinFairnessPolicyWithPerf,
    "max_min_fairness_water_filling_perf": MaxMinFairnessWaterFillingPolicyWithPerf,
    "finish_time_fairness_perf": FinishTimeFairnessPolicyWithPerf,
    "min_total_duration_perf": MinTotalDurationPolicyWithPerf,
    "max_sum_throughput_perf": ThroughputSumWithPerf,
    "fifo_perf": FIFOPolicyWithPerf,
}


def policy(name: str, **settings: Any) -> GavelPolicy:
    """The policy object for one of Gavel's policy names (``"max_min_fairness_perf"``, ...).

    Examples
    --------
    >>> policy("fifo_perf").name
    'FIFO_Perf'
    """
    return _BY_NAME[as_option(name, "name", tuple(_BY_NAME))](**settings)
