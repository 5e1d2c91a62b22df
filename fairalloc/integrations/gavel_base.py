"""Shared pieces of the Gavel adapter
(`fairalloc.integrations.gavel`).

The base class `fairalloc.integrations.gavel_base.GavelPolicy` (a
`fairalloc.RoundPolicy` behind Gavel's interface), the translation of
Gavel's dicts into fairalloc's arrays (errors renamed to Gavel's argument names), Gavel's
isolated throughputs (the denominators of finish-time fairness) and the space-sharing solve
shared by every ``*_packed`` policy
(`fairalloc.integrations.gavel_base.packed_solve`).

Examples
--------
>>> from fairalloc.integrations.gavel_base import gavel_isolated_throughputs
>>> tp = {0: {"v100": 4.0, "k80": 1.0}, 1: {"v100": 2.0, "k80": 2.0}}
>>> gavel_isolated_throughputs(tp, {0: 1, 1: 1}, {"v100": 1, "k80": 1}).tolist()
[2.5, 2.0]
"""

from __future__ import annotations

import itertools
import operator
import types
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from .._validation import as_array, as_real_array, fmt_index
from ..errors import InputError
from ..rounds import RoundPolicy, RoundResult
from ..rounds.keys import same_keys
from ..rounds.state import gavel_isolated_split

__all__ = ["GAVEL_ARGUMENTS", "NORMALIZATIONS", "GavelPolicy", "check_cluster", "check_rates",
           "gavel_isolated_throughputs", "packed_solve", "pair_rates"]

#: ``normalization=`` options of the max-min policies. In Gavel's current code
#: (``MaxMinFairnessPolicyWithPerf``, commit c4fa400) the objective is
#: ``min_m s_m tp_m(X) / (w_m tp_m(X^prop))``: scale factor over weight applied once, which is
#: the paper's formula, so both options give the same program (``"gavel_code"`` is kept for
#: callers that name it; it no longer squares the weight).
NORMALIZATIONS = ("paper", "gavel_code")

#: fairalloc's argument names -> the names of Gavel's ``get_allocation`` arguments (an
#: `fairalloc.InputError` names the argument the caller passed)
GAVEL_ARGUMENTS = {"throughput": "unflattened_throughputs", "workers": "cluster_spec",
                   "types": "cluster_spec", "scale_factor": "scale_factors",
                   "weight": "unflattened_priority_weights", "elapsed": "times_since_start",
                   "steps_remaining": "num_steps_remaining",
                   "entities": "entity_to_job_mapping", "slo": "SLOs",
                   "cost": "instance_costs"}


def gavel_error(exc: InputError) -> InputError:
    """``exc`` with the argument renamed to Gavel's name for it."""
    ours = exc.argument or ""
    name = GAVEL_ARGUMENTS.get(ours)
    if name is None:
        return exc
    text = str(exc)
    text = (name + text[len(ours):] if text.startswith(ours) and text[len(ours):][:1] in "[ "
            else f"{name}: {text}")
    return InputError(text, argument=name, index=exc.index)


def is_pair(job_id: Any) -> bool:
    """Whether ``job_id`` is a job-pair key (Gavel's ``JobIdPair.is_pair()`` or a 2-tuple)."""
    flag = getattr(job_id, "is_pair", None)
    if callable(flag):
        return bool(flag())
    return isinstance(job_id, tuple) and len(job_id) == 2 and job_id[1] is not None


def pair_keys(keys: Any) -> list[Any]:
    """The job-pair keys among ``keys`` (`is_pair`); Gavel's ``JobIdPair`` keys are asked
    by one mapped method call each (keys all of one class: its ``is_pair`` function mapped
    over them, no bound method made per key)."""
    first = next(iter(keys), None)
    flag = getattr(type(first), "is_pair", None)
    if isinstance(flag, types.FunctionType) and len(set(map(type, keys))) == 1:
        try:
            return [j for j in keys if flag(j)] if any(map(flag, keys)) else []
        except (AttributeError, TypeError):  # (not Gavel's method: asked key by key below)
            pass
    if first is not None and callable(getattr(first, "is_pair", None)):
        try:
            flags = list(map(operator.methodcaller("is_pair"), keys))
        except (AttributeError, TypeError):  # (keys of mixed kinds)
            pass
        else:
            return [j for j, f in zip(keys, flags) if f] if any(flags) else []
    return [j for j in keys if is_pair(j)]


def members(key: Any) -> tuple[Any, Any]:
    """The two single-job keys of a pair key."""
    singletons = getattr(key, "singletons", None)
    if callable(singletons):
        a, b = singletons()
        return a, b
    return key[0], key[1]


def require_mapping(value: Any, name: str) -> None:
    """`fairalloc.InputError` naming ``name`` unless ``value`` is a dict."""
    if not isinstance(value, Mapping):
        raise InputError(f"{name} must be a dict keyed by job id, got {type(value).__name__}",
                         argument=name)


class GavelPolicy:
    """Base of the Gavel-compatible policies: a `fairalloc.RoundPolicy`
    behind Gavel's interface.

    Parameters
    ----------
    solver : str, optional
        Accepted for compatibility with Gavel's constructors (``solver='ECOS'``) and ignored:
        fairalloc picks its own certified solvers (``backend=`` selects the LP backend).
    seed : int, optional
        Accepted (as Gavel's ``utils.get_policy(name, solver, seed)`` passes it) and ignored:
        the LP policies draw nothing at random.
    **settings
        Passed to `fairalloc.RoundPolicy` (``backend``, ``gap_tol``, ...).

    Attributes
    ----------
    last_result : fairalloc.RoundResult or None
        The previous round's full result (prices, certificate, facts).
    packing_result : fairalloc.Allocation or None
        ``*_packed`` policies: the previous round's certified space-sharing allocation
        (``None`` when no pair could run).

    Examples
    --------
    >>> from fairalloc.integrations.gavel import MaxMinFairnessPolicyWithPerf
    >>> MaxMinFairnessPolicyWithPerf().get_allocation({}, {}, {}, {"v100": 1})
    {}
    """

    _policy = "max_min_fairness"
    _name = "fairalloc"

    def __init__(self, solver: str | None = None, *, seed: int | None = None,
                 **settings: Any) -> None:
        del solver, seed  # Gavel's cvxpy solver name (fairalloc chooses its own); no draws
        self._round = RoundPolicy(self._policy, **settings)
        self.last_result: RoundResult | None = None
        #: packed policies: the certified space-sharing allocation of the last round
        self.packing_result: Any = None

    @property
    def name(self) -> str:
        """Gavel-style policy name."""
        return self._name

    def _solve(self, unflattened_throughputs: Mapping[Hashable, Mapping[str, float]],
               cluster_spec: Mapping[str, int], **per_job: Any
               ) -> dict[Hashable, dict[str, float]]:
        require_mapping(unflattened_throughputs, "unflattened_throughputs")
        pairs = pair_keys(unflattened_throughputs)
        if pairs:
            raise InputError(f"job-pair key {pairs[0]!r}: space sharing needs one of Gavel's "
                             "*_packed policies (gavel.policy('max_min_fairness_packed'), ...)",
                             argument="unflattened_throughputs")
        try:
            r = self._round.allocate(unflattened_throughputs, cluster_spec, **per_job)
        except InputError as exc:
            raise gavel_error(exc) from None
        self.last_result = r
        return r.job_allocation


def by_job(values: Any, name: str, jobs: list[Any], **kw: Any) -> Any:
    """``values[j]`` for each job ``j``, validated by ``as_array`` (``kw``); errors name
    ``name`` and the job id."""
    if not isinstance(values, Mapping):
        raise InputError(f"{name} must be a dict job_id -> number, got {type(values).__name__}",
                         argument=name)
    if same_keys(values, jobs):
        listed = list(values.values())
    else:
        missing = [j for j in jobs if j not in values]
        if missing:
            raise InputError(f"{name} has no entry for job {missing[0]!r}", argument=name)
        listed = [values[j] for j in jobs]
    try:
        return as_array(listed, name, ndim=1, allow_empty=True, **kw)
    except InputError as exc:
        if exc.index is None or len(exc.index) != 1:
            raise
        text = str(exc).replace(f"{name}{fmt_index(exc.index)}",
                                f"{name}[{jobs[exc.index[0]]!r}]", 1)
        raise InputError(text, argument=name, index=exc.index) from None


def throughput_matrix(tp: Mapping[Hashable, Any], jobs: list[Any], types: list[str]
                      ) -> np.ndarray:
    """``T[i, j] = tp[jobs[i]][types[j]]`` (0 where a job does not list a type), validated
    as every rate of the library (text, bools, sequences and other non-numbers are an
    `fairalloc.InputError` naming the job and the worker type)."""
    name = "unflattened_throughputs"
    listed = list(tp.values()) if same_keys(tp, jobs) else [tp[j] for j in jobs]
    if set(map(type, listed)) <= {dict}:  # (the common case: one pass per type, in C)
        by_type = [list(map(dict.get, listed, itertools.repeat(t), itertools.repeat(0.0)))
                   for t in types]
    else:
        for j, row in zip(jobs, listed):
            if not isinstance(row, Mapping):
                raise InputError(f"{name}[{j!r}] must be a dict worker_type -> throughput",
                                 argument=name)
        by_type = [[row.get(t, 0.0) for row in listed] for t in types]
    return _validated_rates(by_type, name, jobs, types)


def _validated_rates(by_type: list[list[Any]], name: str, keys: list[Any], types: list[str],
                     width: int | None = None) -> np.ndarray:
    """The rates ``by_type[t][k]`` of key ``keys[k]`` on type ``types[t]`` as a validated
    ``(keys, types)`` array, or ``(keys, types, width)`` where each rate is a sequence of
    ``width`` numbers (a pair key's ``[rate of member 0, rate of member 1]``): finite,
    non-negative real numbers (text, bools, wrong shapes are refused); an error names the key
    and the worker type."""
    tail = () if width is None else (width,)
    try:  # (validated column by column: an entry's index is (type, key, ...))
        T = as_real_array(by_type, name)
        shape = (len(types), len(keys), *tail)
        if T.shape != shape and (T.size or 0 not in shape):  # (any empty shape is no rate)
            raise InputError(f"{name}: a rate has the wrong shape", argument=name)
    except InputError as exc:
        if exc.index is None or len(exc.index) != 2 + len(tail):  # (a rate of a wrong shape)
            exc = _misshapen_rate(by_type, name, exc, width)
        raise _rate_error(exc, name, keys, types, transposed=True) from None
    T = T.reshape(shape).swapaxes(0, 1)
    try:
        return as_array(T, name, ndim=2 + len(tail), allow_empty=True)
    except InputError as exc:
        raise _rate_error(exc, name, keys, types, transposed=False) from None


def pair_rates(tp: Mapping[Hashable, Any], keys: list[Any], types: list[Any]) -> np.ndarray:
    """The rates of the pair keys ``keys`` of ``tp`` (``{worker_type: [rate of member 0, rate
    of member 1]}``; ``(0, 0)`` where a type is not listed) as a validated
    ``(pairs, types, 2)`` array, read and checked as `throughput_matrix` reads single rates:
    an invalid rate is an `fairalloc.InputError` naming the pair key and the worker type.

    Examples
    --------
    >>> pair_rates({(0, 1): {"v100": [1.0, 0.5]}}, [(0, 1)], ["v100", "k80"]).tolist()
    [[[1.0, 0.5], [0.0, 0.0]]]
    """
    name = "unflattened_throughputs"
    rows = [tp[p] for p in keys]
    for p, row in zip(keys, rows):
        if not isinstance(row, Mapping):
            raise InputError(f"{name}[{p!r}] must be a dict worker type -> [rate of member 0, "
                             "rate of member 1]", argument=name)
    zero = (0.0, 0.0)
    by_type = [[row.get(t, zero) for row in rows] for t in types]
    return _validated_rates(by_type, name, keys, types, width=2)


def check_rates(tp: Mapping[Hashable, Any]) -> None:
    """Validate the rates of ``tp`` (``{job: {worker_type: rate}}``, and pair keys'
    ``{worker_type: [rate, rate]}``) as `throughput_matrix` and `pair_rates` do, for the
    policies that read them only as flags or not at all (Gavel's heuristics, the
    heterogeneity-agnostic policies): an invalid rate is an `fairalloc.InputError` naming
    the job id (or pair key) and the worker type.

    Examples
    --------
    >>> check_rates({0: {"v100": 2.0}, (0, 1): {"v100": [1.0, 1.0]}})
    >>> try:
    ...     check_rates({0: {"v100": "2"}})
    ... except InputError as exc:
    ...     print(str(exc)[:36])
    unflattened_throughputs[0]['v100'] i
    """
    require_mapping(tp, "unflattened_throughputs")
    pairs = pair_keys(tp)
    listed = set(pairs)
    singles = [j for j in tp if j not in listed] if pairs else list(tp)
    for keys, check in ((singles, throughput_matrix), (pairs, pair_rates)):
        rows = [tp[j] for j in keys]
        types = list(dict.fromkeys(itertools.chain.from_iterable(
            row for row in rows if isinstance(row, Mapping))))
        if keys:
            check({j: tp[j] for j in keys}, keys, types)


def check_cluster(cluster_spec: Any) -> np.ndarray:
    """``cluster_spec``'s worker counts (``{worker_type: count}``) in its order, validated
    (non-negative integers, not text or bools); errors name the worker type.

    Examples
    --------
    >>> check_cluster({"v100": 2, "k80": 0}).tolist()
    [2.0, 0.0]
    """
    if not isinstance(cluster_spec, Mapping):
        raise InputError("cluster_spec must be a dict worker_type -> count, got "
                         f"{type(cluster_spec).__name__}", argument="cluster_spec")
    types = list(cluster_spec)
    try:
        return as_array(list(cluster_spec.values()), "cluster_spec", ndim=1, integer=True,
                        allow_empty=True)
    except InputError as exc:
        if exc.index is None or len(exc.index) != 1:
            raise
        text = str(exc).replace(f"cluster_spec{fmt_index(exc.index)}",
                                f"cluster_spec[{types[exc.index[0]]!r}]", 1)
        raise InputError(text, argument="cluster_spec", index=exc.index) from None


def _misshapen_rate(by_type: list[list[Any]], name: str, exc: InputError,
                    width: int | None) -> InputError:
    """The error naming the first rate (type ``t``, key ``k``) that is not a number
    (``width`` None) or a sequence of ``width`` numbers (``exc`` when every rate is one)."""
    for t, col in enumerate(by_type):
        for k, v in enumerate(col):
            if width is None and not isinstance(v, str | bytes) and _is_nested(v):
                return InputError(f"{name}{fmt_index((t, k))} is {v!r}: a {type(v).__name__} "
                                  "where a number belongs; every entry must be a real number",
                                  argument=name, index=(t, k))
            if width is not None and (isinstance(v, str | bytes) or _shape(v) != (width,)):
                return InputError(f"{name}{fmt_index((t, k))} is {v!r}; a pair key's rate is "
                                  "[rate of member 0, rate of member 1]", argument=name,
                                  index=(t, k))
    return exc


def _shape(value: Any) -> tuple[int, ...] | None:
    """``value``'s shape (None when ragged)."""
    try:
        return np.shape(value)
    except ValueError:
        return None


def _is_nested(value: Any) -> bool:
    """Whether ``value`` is a sequence or an array of one dimension or more."""
    try:
        return np.ndim(value) > 0
    except ValueError:  # (ragged inside)
        return True


def _rate_error(exc: InputError, name: str, jobs: list[Any], types: list[Any], *,
                transposed: bool) -> InputError:
    """``exc`` about rate entry ``(type, job, ...)`` (``transposed``) or ``(job, type, ...)``,
    naming the job id (or pair key) and the worker type; the index returned is
    ``(job, type, ...)``."""
    if exc.index is None or len(exc.index) < 2:
        return exc
    i, t = (exc.index[1], exc.index[0]) if transposed else exc.index[:2]
    rest = tuple(exc.index[2:])
    head = f"{name}{fmt_index(exc.index)}"
    text = str(exc)
    detail = text[len(head):] if text.startswith(head) else f": {text}"
    return InputError(f"{name}[{jobs[i]!r}][{types[t]!r}]{fmt_index(rest) if rest else ''}"
                      f"{detail}", argument=name, index=(i, t, *rest))


def gavel_isolated_throughputs(unflattened_throughputs: Mapping[Hashable, Mapping[str, float]],
                               scale_factors: Mapping[Hashable, int],
                               cluster_spec: Mapping[str, int]) -> np.ndarray:
    """Each job's throughput under Gavel's isolated allocation (``IsolatedPolicy``), in the
    order of ``unflattened_throughputs``: ``1/n`` of every type's workers,
    ``x[m, j] = c_j / max(n s_m, sum_j c_j)``, ``tp_m = sum_j T[m, j] x[m, j]``.

    Examples
    --------
    >>> gavel_isolated_throughputs({7: {"a": 3.0}}, {7: 2}, {"a": 4}).tolist()
    [3.0]
    """
    jobs = list(unflattened_throughputs)
    types = [str(t) for t in cluster_spec]
    T = throughput_matrix(unflattened_throughputs, jobs, types)
    s = by_job(scale_factors, "scale_factors", jobs, positive=True)
    return gavel_isolated_split(T, np.array([float(cluster_spec[t]) for t in cluster_spec]), s)


def packed_solve(policy: GavelPolicy, unflattened_throughputs: Mapping[Hashable, Any],
                 cluster_spec: Mapping[str, int], scale_factors: Mapping[Hashable, int],
                 solve: Callable[..., Any], per_job: Mapping[str, Any] | None = None,
                 extra: Mapping[str, Mapping[Hashable, Any]] | None = None,
                 **options: Any) -> dict[Hashable, dict[str, float]]:
    """One space-sharing round: ``solve(jobs, cluster, pairs=..., **options)`` on the reduced
    program, as Gavel's ``*_packed`` policies read their inputs.

    ``unflattened_throughputs`` holds single-job keys (``{worker_type: rate}``) and pair keys
    (``{worker_type: [rate of member 0, rate of member 1]}``). The reduction (present types,
    runnable jobs) is `fairalloc.RoundPolicy`'s, on the single jobs;
    a pair with a member that cannot run, or whose members' scale factors differ (Gavel gives
    such a pair scale factor 0, i.e. time 0), gets 0. ``per_job`` maps a
    `fairalloc.Jobs` field (``weight``, ``steps_remaining``, ``elapsed``,
    ``isolated_elapsed``) to its Gavel dict; ``extra`` maps ``slo`` / ``entities`` to a dict
    job -> value (passed to the round and, listed by job, to ``solve``). Returns a fraction
    for every key: for a single key the time the job runs *alone* on each type, for a pair
    key the time the pair shares a worker. ``policy.last_result`` is the single-job round,
    ``policy.packing_result`` the certified space-sharing allocation (``None`` when no pair
    can run).

    Examples
    --------
    >>> from fairalloc.integrations import gavel
    >>> p = gavel.policy("max_min_fairness_packed")
    >>> out = p.get_allocation({0: {"v100": 1.0}, 1: {"v100": 1.0},
    ...                         (0, 1): {"v100": [0.8, 0.8]}}, {0: 1, 1: 1},
    ...                        {0: 1.0, 1: 1.0}, {"v100": 1})
    >>> round(out[(0, 1)]["v100"], 6)
    1.0
    """
    from ..data import Cluster, JobPairs, Jobs

    require_mapping(unflattened_throughputs, "unflattened_throughputs")
    per_job = {k: v for k, v in (per_job or {}).items() if v is not None}
    extra = {k: v for k, v in (extra or {}).items() if v is not None}
    singles = [j for j in unflattened_throughputs if not is_pair(j)]
    pairs = [j for j in unflattened_throughputs if is_pair(j)]
    single_tp = {j: unflattened_throughputs[j] for j in singles}
    types = tuple(str(t) for t in cluster_spec)
    try:
        base = policy._round.allocate(single_tp, cluster_spec, scale_factor=scale_factors,
                                      **per_job, **extra)
    except InputError as exc:
        raise gavel_error(exc) from None
    policy.last_result = base
    if policy._policy == "finish_time_fairness" and "steps_remaining" in per_job:
        # (the isolated times the round used: RoundPolicy's state, as Gavel's)
        per_job.setdefault("isolated_elapsed", policy._round.isolated_elapsed)
    out: dict[Hashable, dict[str, float]] = {}
    unrunnable = set(base.unrunnable_jobs)
    run = [j for j in singles if j not in unrunnable]
    pos = {j: i for i, j in enumerate(run)}
    drained = set(base.drained_types)
    present = [t for t in types if t not in drained]
    mem, keep = [], []
    for p in pairs:
        a, b = members(p)
        if a in pos and b in pos and scale_factors[a] == scale_factors[b]:
            mem.append((pos[a], pos[b]))
            keep.append(p)
    if not keep or not run or not present:
        out.update(base.job_allocation)
        out.update({p: dict.fromkeys(types, 0.0) for p in pairs})
        policy.packing_result = None
        return out
    ptp = pair_rates(unflattened_throughputs, keep, present)
    T = throughput_matrix(single_tp, run, present)
    fields = {k: by_job(v, GAVEL_ARGUMENTS.get(k, k), run, nonneg=True)
              for k, v in per_job.items()}
    listed = {k: [v[j] for j in run] for k, v in extra.items()}
    try:
        jobs = Jobs(T, scale_factor=[scale_factors[j] for j in run], ids=run, **fields)
        cluster = Cluster({t: cluster_spec[t] for t in present})
        r = solve(jobs, cluster, pairs=JobPairs(np.array(mem), ptp), **listed, **options)
    except InputError as exc:
        raise gavel_error(exc) from None
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
    policy.packing_result = r
    return out
