"""How `fairalloc.solve_round` and `fairalloc.RoundPolicy` read a round's inputs: the
throughputs and workers (dicts, arrays or a DataFrame) as validated arrays in job and type
order, and every per-job argument in job order (`fairalloc.rounds.keys.same_keys`: by position
when its keys are the job ids themselves). Every invalid entry is an `InputError` naming the
job and the type (``throughput['b']['y']``), never a position in an intermediate list.

Examples
--------
>>> T, cap, ids, types = _matrix({"a": {"x": 1.0}, "b": {"x": 2.0, "y": 3.0}}, {"x": 2, "y": 1},
...                              None, None)
>>> T.tolist(), cap.tolist(), ids, types
([[1.0, 0.0], [2.0, 3.0]], [2.0, 1.0], ('a', 'b'), ('x', 'y'))
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import as_array, as_real_array, fmt_index
from ..errors import InputError
from .keys import same_keys

__all__: list[str] = []


def _labels(value: Any, name: str) -> tuple[Hashable, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray | range):
        raise InputError(f"{name} must be a sequence of labels", argument=name)
    out = tuple(value.tolist() if isinstance(value, np.ndarray) else value)
    if len(set(out)) != len(out):
        raise InputError(f"{name} repeats a label; labels must be unique", argument=name)
    return out


def _matrix(throughput: Any, workers: Any, job_ids: Any, types: Any
            ) -> tuple[np.ndarray, np.ndarray, tuple[Hashable, ...], tuple[str, ...]]:
    """(T (n, k), workers (k,), job ids, types) from dicts, arrays or a DataFrame."""
    cap, wtypes = _workers(workers, types)  # workers first: it fixes the type order
    return _rates(throughput, cap, wtypes, job_ids)


def _workers(workers: Any, types: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    """(workers (k,), types) from a mapping type -> count or an array with ``types``."""
    if isinstance(workers, Mapping):
        wtypes = tuple(str(t) for t in workers)
        if len(set(wtypes)) != len(wtypes):
            raise InputError("workers names a type twice", argument="workers")
        cap = as_array(list(workers.values()), "workers", ndim=1, integer=True,
                       allow_empty=True)
    else:
        cap = as_array(workers, "workers", ndim=1, integer=True, allow_empty=True)
        if types is None:
            raise InputError("types= is needed when workers is an array", argument="types")
        wtypes = tuple(str(t) for t in _labels(types, "types"))
        if len(wtypes) != cap.size:
            raise InputError(f"types has {len(wtypes)} entries for {cap.size} workers",
                             argument="types")
    return cap, wtypes


def _rates(throughput: Any, cap: np.ndarray, wtypes: tuple[str, ...], job_ids: Any
           ) -> tuple[np.ndarray, np.ndarray, tuple[Hashable, ...], tuple[str, ...]]:
    """`_matrix` after the workers were read (``cap`` and ``wtypes``)."""
    if isinstance(throughput, Mapping):
        ids = tuple(throughput)
        rows = list(throughput.values())
        plain = set(map(type, rows)) <= {dict}  # (the common case, checked in C)
        if not plain:
            for j, row in zip(ids, rows):
                if not isinstance(row, Mapping):
                    raise InputError(f"throughput[{j!r}] must be a mapping worker type -> "
                                     "rate", argument="throughput")
        # a type a job names that the cluster does not list has no workers: drained
        keys = set().union(*rows) if rows else set()
        if not all(type(t) is str for t in keys):  # types are named by str (as in workers)
            rows = [{str(t): v for t, v in row.items()} for row in rows]
            keys = {str(t) for t in keys}
        extra = keys - set(wtypes)
        all_types = wtypes + tuple(sorted(extra))
        cap = np.concatenate((cap, np.zeros(len(extra))))
        # column by column: one pass over the rows per type (dict.get mapped in C)
        by_type = ([list(map(dict.get, rows, itertools.repeat(t), itertools.repeat(0.0)))
                    for t in all_types] if plain else
                   [[row.get(t, 0.0) for row in rows] for t in all_types])
        try:
            T = as_real_array(by_type, "throughput")
        except InputError as exc:  # name the job and the type, not the column's position
            raise _rate_error(exc if exc.index else _first_nested(by_type), ids,
                              all_types) from None
        if T.ndim != 2 and T.size:  # (a list or an array given as one rate: one level more)
            raise _rate_error(_first_nested(by_type), ids, all_types)
        try:  # (a negative or non-finite rate: named by job and type, as every rate error)
            T = as_array(T.T.reshape(len(ids), len(all_types)), "throughput", ndim=2,
                         allow_empty=True)
        except InputError as exc:
            raise _rate_error(exc, ids, all_types, job_first=True) from None
        return T, cap, ids, all_types
    if hasattr(throughput, "index") and hasattr(throughput, "columns") and hasattr(
            throughput, "to_numpy"):  # a pandas DataFrame: index job ids, columns types
        ids = tuple(throughput.index)
        cols = tuple(str(c) for c in throughput.columns)
        pos = {t: i for i, t in enumerate(cols)}
        missing = [t for t in wtypes if t not in pos]
        if missing:
            raise InputError(f"throughput has no column for type {missing[0]!r}",
                             argument="throughput")
        T = as_array(throughput.to_numpy(dtype=float)[:, [pos[t] for t in wtypes]]
                     if len(ids) else np.zeros((0, len(wtypes))), "throughput", ndim=2,
                     allow_empty=True)
        return T, cap, ids, wtypes
    T = as_array(throughput, "throughput", ndim=2, allow_empty=True)
    if T.shape[1] != cap.size:
        raise InputError(f"throughput has {T.shape[1]} columns for {cap.size} worker types",
                         argument="throughput")
    ids = tuple(range(T.shape[0])) if job_ids is None else _labels(job_ids, "job_ids")
    if len(ids) != T.shape[0]:
        raise InputError(f"job_ids has {len(ids)} entries for {T.shape[0]} jobs",
                         argument="job_ids")
    return T, cap, ids, wtypes


def _first_nested(cols: list[list[Any]]) -> InputError:
    """The error naming the first rate (column ``t``, row ``j``) that is not a scalar."""
    for t, col in enumerate(cols):
        for j, v in enumerate(col):
            if (isinstance(v, Sequence) and not isinstance(v, str | bytes)) or (
                    isinstance(v, np.ndarray) and v.ndim):
                return InputError(f"throughput{fmt_index((t, j))} is {v!r}: a "
                                  f"{type(v).__name__} where a number belongs; every entry must "
                                  "be a real number", argument="throughput", index=(t, j))
    return InputError("throughput rates must be numbers", argument="throughput")  # unreached


def _rate_error(exc: InputError, ids: tuple[Hashable, ...], tnames: tuple[str, ...], *,
                job_first: bool = False) -> InputError:
    """``exc`` about entry (type, job) of the column-major rates (``job_first``: entry (job,
    type) of the matrix), naming the job and type; its index is (job, type) in the returned
    order."""
    if exc.index is None or len(exc.index) != 2:
        return exc
    t, j = exc.index[::-1] if job_first else exc.index
    head = f"throughput{fmt_index(exc.index)}"
    text = str(exc)
    detail = text[len(head):] if text.startswith(head) else f": {text}"
    return InputError(f"throughput[{ids[j]!r}][{tnames[t]!r}]{detail}", argument="throughput",
                      index=(j, t))


#: the per-job arguments of `fairalloc.Jobs` (read by every policy built on it)
_JOBS_ARGS = ("scale_factor", "weight", "steps_remaining", "elapsed", "isolated_elapsed")
#: per policy, the per-job arguments its round reads (and validates); `fairalloc.solve_round`
#: and `fairalloc.RoundPolicy` ignore the others (shockwave also reads ``plan_jobs``)
READS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("max_min_fairness", "finish_time_fairness", "min_makespan",
                     "shortest_job_first", "max_total_throughput"), _JOBS_ARGS),
    "water_filling": (*_JOBS_ARGS, "order", "entities"), "fifo": (*_JOBS_ARGS, "order"),
    "min_cost": (*_JOBS_ARGS, "slo"), "fisher_market": ("scale_factor", "weight"),
    "themis": ("scale_factor", "steps_remaining", "elapsed", "isolated_elapsed"),
    "shockwave": ("scale_factor",)}
#: the checks of each numeric per-job argument (`fairalloc._validation.as_array` keywords)
CHECKS: dict[str, dict[str, bool]] = {
    "scale_factor": {"positive": True, "integer": True}, "weight": {"positive": True},
    "steps_remaining": {}, "elapsed": {}, "isolated_elapsed": {}, "order": {"nonneg": False}}


def _check_read(policy: str, ids: tuple[Hashable, ...], values: Mapping[str, Any],
                by_id: frozenset[str] = frozenset()) -> None:
    """Validate every per-job argument ``policy`` reads (`READS`) where no solve reads them
    (an empty round), with the errors a solve would raise."""
    for name in READS[policy]:
        if name in CHECKS:
            _per_job(values[name], name, ids, by_id=name in by_id, **CHECKS[name])
    if "slo" in READS[policy]:
        _slo_array(values["slo"], ids)
    if "entities" in READS[policy]:
        _per_job_labels(values["entities"], "entities", ids)


def _named(exc: InputError, name: str, ids: tuple[Hashable, ...],
           at: np.ndarray | None = None) -> InputError:
    """``exc`` about entry ``i`` of ``name`` (of the runnable jobs ``at`` when given), naming
    the job by id and its index in the round (``name['b']``), or ``exc`` itself."""
    if exc.argument != name or exc.index is None or len(exc.index) != 1:
        return exc
    i = exc.index[0]
    full = i if at is None else int(at[i])
    text = str(exc).replace(f"{name}{fmt_index(exc.index)}", f"{name}[{ids[full]!r}]", 1)
    return InputError(text, argument=name, index=(full,))


def _per_job(value: Any, name: str, ids: tuple[Hashable, ...], *, by_id: bool = False,
             **kw: Any) -> np.ndarray | None:
    """A per-job quantity given as a mapping job -> value or an array in job order (``by_id``:
    an array read from a mapping, its entries named by job id as a mapping's)."""
    if value is None:
        return None
    try:
        return as_array(_listed_by_job(value, name, ids), name, ndim=1, shape=(len(ids),),
                        allow_empty=True, **kw)
    except InputError as exc:  # a mapping's entry: name its job id, not its position
        if not (by_id or isinstance(value, Mapping)):
            raise
        raise _named(exc, name, ids) from None


def _listed_by_job(value: Any, name: str, ids: tuple[Hashable, ...]) -> Any:
    """``value`` as given, or a mapping job -> value listed in ``ids`` order (by position
    when its keys are ``ids`` themselves, `same_keys`)."""
    if not isinstance(value, Mapping):
        return value
    if same_keys(value, ids):
        return list(value.values())
    try:
        return list(map(value.__getitem__, ids))
    except KeyError as exc:
        raise InputError(f"{name} has no entry for job {exc.args[0]!r}",
                         argument=name) from None


def _slo_array(slo: Any, ids: tuple[Hashable, ...]) -> np.ndarray | None:
    """SLOs in job order (seconds; ``inf``: none); their values are validated by MinCost."""
    if slo is None:
        return None
    try:
        arr = as_real_array(_listed_by_job(slo, "slo", ids), "slo")
    except InputError as exc:  # a mapping's entry: name its job id, not its position
        if not isinstance(slo, Mapping):
            raise
        raise _named(exc, "slo", ids) from None
    if arr.shape != (len(ids),):
        raise InputError(f"slo must be {len(ids)} numbers (seconds; inf: none)",
                         argument="slo")
    return arr


def _per_job_labels(value: Any, name: str, ids: tuple[Hashable, ...]) -> list[Hashable] | None:
    """Per-job labels (entities, plan jobs) in job order, as `_listed_by_job` lists them."""
    if value is None:
        return None
    out = list(_listed_by_job(value, name, ids))
    if len(out) != len(ids):
        raise InputError(f"{name} has {len(out)} entries for {len(ids)} jobs", argument=name)
    return out


def _plan_jobs(value: Any, ids: tuple[Hashable, ...]) -> list[Any]:
    """Shockwave's `fairalloc.PlanJob` of every job, in job order."""
    if value is None and ids:
        raise InputError("shockwave needs plan_jobs= (job id -> fairalloc.PlanJob)",
                         argument="plan_jobs")
    out = _per_job_labels(value, "plan_jobs", ids) or []
    from ..schedule import PlanJob

    for j, pj in zip(ids, out):
        if not isinstance(pj, PlanJob):
            raise InputError(f"plan_jobs[{j!r}] must be a fairalloc.PlanJob",
                             argument="plan_jobs")
    return out


def _in_job_order(value: Any, name: str, ids: tuple[Hashable, ...]) -> np.ndarray | None:
    """A per-job mapping (or sequence) as a finite float array in job order; signs and
    integrality are checked by `fairalloc.solve_round`, per argument (naming the job as
    here: ``by_id``)."""
    return _per_job(value, name, ids, nonneg=False)

