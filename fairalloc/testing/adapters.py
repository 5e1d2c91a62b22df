"""Policies in other shapes, as the property checks call them: Gavel-style policy objects.

Gavel (stanford-futuredata/gavel, ``scheduler/policies/``) policies are objects whose
``get_allocation`` takes dicts keyed by job id and worker type and returns ``{job_id:
{worker_type: fraction}}``. `fairalloc.testing.gavel_policy` turns one into
``policy(jobs, cluster, **entities)`` for the cluster domain: each argument of
``get_allocation`` is filled by its Gavel name (`GAVEL_PARAMETERS`, the inverse of the names
the Gavel adapter `fairalloc.integrations.gavel` reads), the answer is read back into an array
by the same translation the adapter and `fairalloc.RoundPolicy` use for
Gavel's dicts, and every call gets a fresh copy of the object (Gavel's policies keep state
between rounds; the checks need a pure function of the instance). Jobs are keyed as Gavel's
scheduler keys them (`GavelJobId`: ``is_pair()``, ``singletons()``, arrival order = row order).
`fairalloc.testing.check_policy` applies it to any object with ``get_allocation``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["GAVEL_PARAMETERS", "GavelJobId", "GavelObjectPolicy", "as_policy", "gavel_policy"]

#: Gavel's ``get_allocation`` argument names -> what the checks pass for them (the
#: ``Jobs`` / ``Cluster`` attribute, or an entity table); the inverse of the Gavel
#: adapter's ``GAVEL_ARGUMENTS`` plus FIFO's ``throughputs``
GAVEL_PARAMETERS = {
    "unflattened_throughputs": "throughput", "throughputs": "throughput",
    "scale_factors": "scale_factor", "unflattened_priority_weights": "weight",
    "priority_weights": "weight", "times_since_start": "elapsed",
    "num_steps_remaining": "steps_remaining", "cluster_spec": "workers",
    "entity_weights": "entity_weights", "entity_to_job_mapping": "entities",
}


class GavelJobId:
    """Job ``i`` as Gavel's scheduler names a single job (``JobIdPair(i, None)``: Gavel's
    policies call ``is_pair()``, ``singletons()`` and sort ids in arrival order); it hashes,
    compares and sorts as the integer ``i``.

    Examples
    --------
    >>> ids = [GavelJobId(1), GavelJobId(0)]
    >>> sorted(ids), ids[0].is_pair(), ids[0] == 1, {GavelJobId(0): "x"}[0]
    ([0, 1], False, True, 'x')
    """

    __slots__ = ("_job0",)

    def __init__(self, job: int) -> None:
        self._job0 = int(job)

    def __getitem__(self, index: int) -> int | None:
        if index not in (0, 1):
            raise ValueError(f"a job id has indices 0 and 1, not {index}")
        return self._job0 if index == 0 else None

    def _key(self, other: Any) -> Any:
        return other._job0 if isinstance(other, GavelJobId) else getattr(other, "_job0", other)

    def __lt__(self, other: Any) -> bool:
        if getattr(other, "_job1", None) is not None:  # Gavel sorts singles before pairs
            return True
        return bool(self._job0 < self._key(other))

    def __eq__(self, other: object) -> bool:
        return getattr(other, "_job1", None) is None and bool(self._job0 == self._key(other))

    def __hash__(self) -> int:
        return hash(self._job0)

    def __int__(self) -> int:
        return self._job0

    __index__ = __int__

    def __repr__(self) -> str:
        return str(self._job0)

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return GavelJobId, (self._job0,)

    def is_pair(self) -> bool:
        return False

    def singletons(self) -> tuple[GavelJobId]:
        return (self,)

    def as_tuple(self) -> tuple[int, None]:
        return (self._job0, None)

    def as_set(self) -> set[int | None]:
        return {self._job0, None}

    def overlaps_with(self, other: Any) -> bool:
        members = other.as_set() if hasattr(other, "as_set") else {int(other)}
        return self._job0 in members


def _gavel_args(jobs: Any, cluster: Any, entities: Any, entity_weights: Any
                ) -> dict[str, Any]:
    ids = [GavelJobId(i) for i in range(jobs.n)]
    types = [str(t) for t in cluster.types]
    T = jobs.throughput
    per_job = {"scale_factor": jobs.scale_factor, "weight": jobs.weight,
               "elapsed": jobs.elapsed, "steps_remaining": jobs.steps_remaining}
    out: dict[str, Any] = {
        "throughput": {i: dict(zip(types, T[i].tolist())) for i in ids},
        "workers": dict(zip(types, (int(c) for c in cluster.capacity))),
    }
    for name, value in per_job.items():
        out[name] = None if value is None else dict(zip(ids, value.tolist()))
    for name in ("scale_factor",):  # Gavel's scale factors are ints
        out[name] = {i: int(v) for i, v in out[name].items()}
    if entities is not None:
        mapping: dict[Any, list[GavelJobId]] = {}
        for i, e in zip(ids, entities):
            mapping.setdefault(e, []).append(i)
        out["entities"] = mapping
        out["entity_weights"] = (dict(entity_weights) if entity_weights is not None
                                 else dict.fromkeys(mapping, 1.0))
    else:
        out["entities"] = out["entity_weights"] = None
    return out


class GavelObjectPolicy:
    """A Gavel-style policy object as ``policy(jobs, cluster, **entities)`` (see the module
    docs); built by `fairalloc.testing.gavel_policy`."""

    def __init__(self, obj: Any) -> None:
        method = getattr(obj, "get_allocation", None)
        if not callable(method):
            raise InputError(f"policy: {type(obj).__name__} has no get_allocation method",
                             argument="policy")
        try:
            params = list(inspect.signature(method).parameters.values())
        except (TypeError, ValueError):
            raise InputError("policy: the signature of get_allocation cannot be read",
                             argument="policy") from None
        self.obj = obj
        self.parameters: list[tuple[str, str | None]] = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            what = GAVEL_PARAMETERS.get(p.name)
            if what is None and p.default is p.empty:
                raise InputError(f"policy: get_allocation takes {p.name!r}, which the property "
                                 f"checks cannot fill (known: {', '.join(GAVEL_PARAMETERS)})",
                                 argument="policy")
            self.parameters.append((p.name, what))
        self.__name__ = self.__qualname__ = type(obj).__name__
        self.__module__ = type(obj).__module__

    def __call__(self, jobs: Any, cluster: Any, *, entities: Any = None,
                 entity_weights: Any = None, entity_policies: Any = None) -> np.ndarray:
        from ..rounds.api import _matrix  # the translation Gavel's dicts go through

        del entity_policies  # Gavel's water-filling takes them in its constructor
        args = _gavel_args(jobs, cluster, entities, entity_weights)
        kwargs = {name: args[what] for name, what in self.parameters
                  if what is not None and args.get(what) is not None}
        fresh = copy.deepcopy(self.obj)  # Gavel's policies keep state between rounds
        raw = fresh.get_allocation(**kwargs)
        if isinstance(raw, tuple):  # (allocation, effective throughputs)
            raw = raw[0]
        if raw is None:  # Gavel returns None for no jobs
            return np.zeros(jobs.throughput.shape)
        if not isinstance(raw, Mapping):
            raise TypeError(f"get_allocation returned {type(raw).__name__}, not a dict "
                            "job_id -> {worker_type: fraction}")
        rows = {i: raw.get(GavelJobId(i), {}) for i in range(jobs.n)}
        X, _, _, tnames = _matrix(rows, args["workers"], None, None)
        return X[:, :len(cluster.types)]


def gavel_policy(obj: Any) -> GavelObjectPolicy:
    """A Gavel-style policy object (anything with Gavel's ``get_allocation``) as a cluster
    domain policy ``policy(jobs, cluster)``.

    Parameters
    ----------
    obj : object
        A Gavel policy: ``obj.get_allocation(unflattened_throughputs, scale_factors,
        unflattened_priority_weights, cluster_spec)`` returning ``{job: {type: fraction}}``.

    Returns
    -------
    GavelObjectPolicy
        A callable ``policy(jobs, cluster) -> x`` (an ``(n, k)`` array of time fractions)
        that converts fairalloc's jobs and cluster to Gavel's dicts and back.

    Examples
    --------
    >>> import fairalloc as fa
    >>> class EqualShare:  # Gavel's interface: dicts in, dicts out
    ...     def get_allocation(self, unflattened_throughputs, scale_factors,
    ...                        unflattened_priority_weights, cluster_spec):
    ...         n = len(unflattened_throughputs)
    ...         return {j: {t: min(1.0, c / n / len(cluster_spec)) for t, c in
    ...                     cluster_spec.items()} for j in unflattened_throughputs}
    >>> policy = gavel_policy(EqualShare())
    >>> policy(fa.Jobs([[1.0, 2.0], [3.0, 1.0]]), fa.Cluster({"v100": 1, "k80": 1})).tolist()
    [[0.25, 0.25], [0.25, 0.25]]
    """
    return GavelObjectPolicy(obj)


def as_policy(policy: Any, domain: Any) -> Callable[..., Any]:
    """``policy`` as the domain calls it: callables as they are, Gavel-style objects wrapped
    (cluster domain); anything else raises `fairalloc.InputError`."""
    if isinstance(policy, type) and hasattr(policy, "get_allocation"):
        # a Gavel policy class named as it is (``fairalloc check fifo:FIFOPolicyWithPerf``):
        # its instance with the constructor's defaults, else say what to pass
        try:
            policy = policy()
        except TypeError as exc:
            raise InputError(f"policy: {policy.__name__} is a Gavel-style policy class whose "
                             f"constructor needs arguments ({exc}); pass an instance, e.g. "
                             f"{policy.__name__}(solver='ECOS')", argument="policy") from None
    if callable(policy):
        return policy  # type: ignore[no-any-return]
    if hasattr(policy, "get_allocation"):
        if getattr(domain, "label", "") != "cluster":
            raise InputError("policy: a Gavel-style object (get_allocation) is checked in the "
                             "cluster domain; pass domain='cluster'", argument="policy")
        return gavel_policy(policy)
    raise InputError(f"policy must be callable, got {type(policy).__name__}",
                     argument="policy")
