"""Round-based realisation of fractional allocations and placement onto servers (Gavel §3.2, §5).

A policy returns a *target* allocation ``X``: ``X[m, j]`` is the fraction of wall-clock time job
(or job combination) ``m`` should spend on accelerator type ``j``. A cluster, however, runs whole
jobs on whole workers. Gavel realises ``X`` in *rounds* (§5): in every round each worker runs one
job (or one combination of co-located jobs, space sharing) for the round's duration, and the jobs
that run are chosen so that, over many rounds, the fraction of time each one receives on each type
approaches ``X``.

Mechanism (Algorithm 1)
-----------------------
With ``t[m, j]`` the time row ``m`` has received on type ``j`` so far and ``e[m]`` the time that
has elapsed since it entered the system, the *received fraction* is ``f = t / e`` and the
*priority* of the pair ``(m, j)`` is ``X[m, j] / f[m, j]`` (§5: "the matrix of priorities is the
element-wise division of X^opt by f"): rows that received less than their share have priority
above 1. A row that never ran on a type where its target is positive has infinite priority; a
zero target gives priority 0. :func:`schedule_round` sorts all ``(row, type)`` pairs by priority
(numpy ``lexsort``; ties broken by the *deficit* ``X e - t``, then the target, then the larger
gang, then row and type index) and walks them greedily, exactly as Algorithm 1: a pair is taken
when its gang (``scale_factor`` workers) fits in the type's remaining workers and none of its jobs
already runs this round; a pair that does not fit is skipped (``continue``), and a taken
combination removes every combination that shares a job with it. The walk is vectorised: it
accepts, in one numpy step, the longest run of pairs whose outcome is already decided, and only
revisits the pair where a type overflows (so a round costs ``O(E log E)`` for ``E`` pairs, with
about one vectorised pass per accelerator type for single-worker jobs).

Jobs with large gangs are never starved (§5): a row that is not scheduled keeps its received time
while its elapsed time grows, so its priority grows without bound until it is the highest of all;
the first pair of a round is placed into an empty cluster, where any gang that fits the type at
all fits. ``proofs/round_convergence.md`` proves this and the convergence of the received
fractions to ``X``.

Placement (§5, §6)
------------------
:func:`place` maps a round's assignment onto physical GPUs (:class:`ServerLayout`): first every
job that ran last round on exactly the gang of GPUs it needs now, of the right type, keeps them
(a *lease renewal*, §6: no checkpoint/restart); the other jobs are placed in decreasing order of
requested workers, each on as few servers as possible (best fit: the fullest server that still
holds the whole gang; a gang larger than every server's free GPUs takes the servers with the most
free GPUs first and best-fits its remainder).

Gavel's own code (ANCHORS.md) normalises the received fraction per accelerator type
(``f = t / sum_m t[m, j]``, the literal formula of §5); ``fraction="type_share"`` reproduces it,
the default ``"elapsed"`` compares each row's own time fraction with its target, which makes
priorities comparable across types and is what the convergence proofs use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import as_array, as_bool, as_option, as_positive_float, fmt_index
from .data import Cluster, Jobs
from .errors import InputError, only_fairalloc_errors
from .results import readonly, require_pandas

__all__ = [
    "Placement",
    "RoundAssignment",
    "RoundScheduler",
    "ServerLayout",
    "place",
    "schedule_round",
]

#: relative tolerance of the target feasibility checks (solver output is feasible to ~1e-9)
_FEAS_TOL = 1e-6
#: a pair is "behind" its target when ``t <= X e + _BEHIND_TOL * max(1, e)``
_BEHIND_TOL = 1e-9

_ELIGIBLE = ("all", "positive", "behind")
_FRACTION = ("elapsed", "type_share")


# --------------------------------------------------------------------------------------------
# validated structure of a round problem: rows (jobs or combinations) x accelerator types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Rows:
    target: np.ndarray  # (R, k) float
    members: np.ndarray  # (R, s) int, padded with n_jobs
    row_sf: np.ndarray  # (R,) float (workers a row occupies)
    runnable: np.ndarray  # (R, k) bool: the row may run on the type (and its gang fits)
    capacity: np.ndarray  # (k,) float
    types: tuple[str, ...]
    job_ids: tuple[Hashable, ...]
    row_labels: tuple[Hashable, ...]
    combinations: tuple[tuple[int, ...], ...] | None

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def n_rows(self) -> int:
        return int(self.target.shape[0])

    @property
    def k(self) -> int:
        return int(self.capacity.shape[0])


def _as_cluster(cluster: Any, k: int | None) -> tuple[tuple[str, ...], np.ndarray]:
    if isinstance(cluster, Cluster):
        types, cap = cluster.types, np.array(cluster.capacity, dtype=float)
    else:
        cap = np.array(as_array(cluster, "cluster", ndim=1, positive=True, integer=True))
        types = tuple(str(j) for j in range(cap.shape[0]))
    if k is not None and cap.shape[0] != k:
        raise InputError(
            f"target has {k} columns but the cluster has {cap.shape[0]} accelerator types",
            argument="target",
        )
    return types, cap


def _target_array(target: Any, combinations: Any) -> tuple[Any, tuple[Hashable, ...] | None, Any]:
    """Accept an array or a policy result with ``x`` (e.g. :class:`fairalloc.Allocation`).

    A space-sharing result (``pair_x`` set) becomes one row per job alone (``x`` minus the
    time of the pairs that contain the job) plus one row per pair; ``combinations`` must then
    give the pairs (a :class:`fairalloc.JobPairs`, or a sequence of index pairs).
    """
    ids = None
    if hasattr(target, "x") and not isinstance(target, np.ndarray):
        ids_attr = getattr(target, "job_ids", None)
        ids = tuple(ids_attr) if ids_attr is not None else None
        pair_x = getattr(target, "pair_x", None)
        x = np.asarray(as_array(target.x, "target.x", ndim=2))
        if pair_x is None:
            return x, ids, combinations
        pair_x = np.asarray(as_array(pair_x, "target.pair_x", ndim=2, shape=(None, x.shape[1]),
                                     allow_empty=True))
        if combinations is None:
            raise InputError(
                "target is a space-sharing allocation: pass its pairs as combinations= "
                "(a JobPairs or a sequence of (a, b) job indices)", argument="combinations",
            )
        pairs = getattr(combinations, "members", combinations)
        pairs = np.asarray(as_array(pairs, "combinations", ndim=2, shape=(pair_x.shape[0], 2),
                                    integer=True, allow_empty=True)).astype(np.int64)
        n = x.shape[0]
        if pairs.size and pairs.max() >= n:
            p = int(np.argwhere(pairs >= n)[0, 0])
            raise InputError(f"combinations[{p}] names a job outside 0..{n - 1}",
                             argument="combinations", index=(p,))
        alone = x.copy()
        np.subtract.at(alone, pairs[:, 0], pair_x)
        np.subtract.at(alone, pairs[:, 1], pair_x)
        alone = np.where(alone > -_FEAS_TOL, np.maximum(alone, 0.0), alone)
        rows = np.vstack([alone, pair_x])
        combos = [(i,) for i in range(n)] + [(int(a), int(b)) for a, b in pairs.tolist()]
        return rows, ids, combos
    members = getattr(combinations, "members", None)
    if members is not None:  # a JobPairs with a plain target: jobs alone first, then pairs
        pairs = np.asarray(members, dtype=np.int64)
        n = int(np.shape(target)[0]) - pairs.shape[0]
        combos = [(i,) for i in range(max(n, 0))] + [(int(a), int(b)) for a, b in pairs.tolist()]
        return target, ids, combos
    return target, ids, combinations


def _combinations(combinations: Any, n_jobs: int | None) -> tuple[tuple[int, ...], ...]:
    if isinstance(combinations, str | bytes) or not isinstance(combinations, Sequence):
        raise InputError(
            "combinations must be a sequence of tuples of job indices", argument="combinations"
        )
    out: list[tuple[int, ...]] = []
    seen: dict[frozenset[int], int] = {}
    for r, combo in enumerate(combinations):
        if isinstance(combo, int | np.integer) and not isinstance(combo, bool):
            combo = (combo,)
        try:
            members = tuple(int(i) for i in combo)
            ok = all(
                not isinstance(i, bool) and float(i) == int(i) for i in combo
            )
        except (TypeError, ValueError):
            ok, members = False, ()
        if not ok or not members:
            raise InputError(
                f"combinations[{r}] = {combo!r} must be a non-empty tuple of job indices",
                argument="combinations", index=(r,),
            )
        if len(set(members)) != len(members):
            raise InputError(
                f"combinations[{r}] = {members} repeats a job", argument="combinations",
                index=(r,),
            )
        bad = [i for i in members if i < 0 or (n_jobs is not None and i >= n_jobs)]
        if bad:
            raise InputError(
                f"combinations[{r}] contains job index {bad[0]}, outside 0..{(n_jobs or 1) - 1}",
                argument="combinations", index=(r,),
            )
        key = frozenset(members)
        if key in seen:
            raise InputError(
                f"combinations[{r}] = {members} repeats combinations[{seen[key]}]",
                argument="combinations", index=(r,),
            )
        seen[key] = r
        out.append(members)
    if not out:
        raise InputError("combinations is empty", argument="combinations")
    return tuple(out)


def _build_rows(
    target: Any,
    cluster: Any,
    jobs: Jobs | None,
    *,
    scale_factor: Any,
    combinations: Any,
    runnable: Any,
    ids: Sequence[Hashable] | None,
) -> _Rows:
    raw, target_ids, combinations = _target_array(target, combinations)
    X = as_array(raw, "target", ndim=2)
    n_rows, k = X.shape
    types, cap = _as_cluster(cluster, k)
    if jobs is not None and not isinstance(jobs, Jobs):
        raise InputError(f"jobs must be a fairalloc.Jobs, got {type(jobs).__name__}",
                         argument="jobs")
    if jobs is not None and scale_factor is not None:
        raise InputError("pass the scale factors through jobs or scale_factor=, not both",
                         argument="scale_factor")
    if jobs is not None and ids is not None:
        raise InputError("pass the job ids through jobs or ids=, not both", argument="ids")
    if ids is not None and (isinstance(ids, str | bytes) or not hasattr(ids, "__iter__")):
        raise InputError(f"ids must be a sequence of job labels, got {ids!r}", argument="ids")
    if jobs is not None and jobs.num_types != k:
        raise InputError(
            f"jobs have {jobs.num_types} throughput columns but the target has {k}",
            argument="jobs",
        )

    # number of jobs and the rows' members
    if combinations is None:
        n_jobs = n_rows
        combos = None
        members = np.arange(n_rows, dtype=np.int64)[:, None]
    else:
        known = jobs.n if jobs is not None else None
        if known is None and scale_factor is not None:
            known = int(np.size(scale_factor))
        if known is None and ids is not None:
            known = len(ids)
        combos = _combinations(combinations, known)
        if len(combos) != n_rows:
            raise InputError(
                f"target has {n_rows} rows but {len(combos)} combinations were given",
                argument="target",
            )
        n_jobs = known if known is not None else 1 + max(max(c) for c in combos)
        width = max(len(c) for c in combos)
        members = np.full((n_rows, width), n_jobs, dtype=np.int64)
        flat = np.fromiter((i for c in combos for i in c), dtype=np.int64)
        lens = np.fromiter((len(c) for c in combos), dtype=np.int64, count=n_rows)
        slot = np.arange(flat.size) - np.repeat(np.cumsum(lens) - lens, lens)
        members[np.repeat(np.arange(n_rows), lens), slot] = flat

    # labels
    if jobs is not None:
        job_ids = jobs.ids
    elif ids is not None:
        job_ids = tuple(ids)
        if len(job_ids) != n_jobs:
            raise InputError(f"ids has {len(job_ids)} entries for {n_jobs} jobs", argument="ids")
        if len(set(job_ids)) != n_jobs:
            raise InputError("ids must be unique", argument="ids")
    elif target_ids is not None and len(target_ids) == n_jobs:
        job_ids = target_ids
    else:
        job_ids = tuple(range(n_jobs))

    # scale factors of jobs and rows (a combination occupies the largest gang of its members)
    if jobs is not None:
        sf = np.asarray(jobs.scale_factor, dtype=float)
    elif scale_factor is not None:
        sf = np.asarray(as_array(scale_factor, "scale_factor", ndim=1, shape=(n_jobs,),
                                 positive=True, integer=True))
    else:
        sf = np.ones(n_jobs)
    sf_ext = np.append(sf, 0.0)
    row_sf = sf_ext[members].max(axis=1)

    # where a row may run
    if runnable is not None:
        run = np.asarray(as_array(runnable, "runnable", ndim=2, shape=(n_rows, k))) != 0
    elif jobs is not None:
        can = np.vstack([jobs.throughput > 0, np.ones((1, k), dtype=bool)])
        run = can[members].all(axis=1)
    else:
        run = np.ones((n_rows, k), dtype=bool)
    run = run & (row_sf[:, None] <= cap[None, :])

    # the target must be a feasible allocation (§3.1 constraints)
    over = X > 1.0 + _FEAS_TOL
    if over.any():
        idx = tuple(int(i) for i in np.argwhere(over)[0])
        raise InputError(f"target{fmt_index(idx)} = {X[idx]:g} exceeds 1", argument="target",
                         index=idx)
    bad = (X > 0) & ~run
    if bad.any():
        r, j = (int(i) for i in np.argwhere(bad)[0])
        why = (f"its gang of {row_sf[r]:g} workers exceeds the {cap[j]:g} workers of the type"
               if row_sf[r] > cap[j] else "it cannot run there")
        who = _row_label(job_ids, members[r], n_jobs)
        raise InputError(
            f"target[{r}, {j}] = {X[r, j]:g} is positive but row {r} ({who}) "
            f"cannot run on type {types[j]!r}: {why}",
            argument="target", index=(r, j),
        )
    job_time = np.bincount(members.ravel(), weights=np.repeat(X.sum(axis=1), members.shape[1]),
                           minlength=n_jobs + 1)[:n_jobs]
    over = job_time > 1.0 + _FEAS_TOL
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise InputError(
            f"target gives job {i} ({job_ids[i]!r}) a total time fraction of {job_time[i]:.6g} "
            f"> 1 over all types and combinations", argument="target", index=(i,),
        )
    load = (X * row_sf[:, None]).sum(axis=0)
    over = load > cap * (1.0 + _FEAS_TOL) + _FEAS_TOL
    if over.any():
        j = int(np.flatnonzero(over)[0])
        raise InputError(
            f"target needs {load[j]:.6g} workers of type {types[j]!r} (sum of target times "
            f"scale factor) but it has {cap[j]:g}", argument="target", index=(j,),
        )

    if combos is None:
        row_labels: tuple[Hashable, ...] = job_ids
    else:
        row_labels = tuple(tuple(job_ids[i] for i in c) for c in combos)
    X = np.array(X)
    X.flags.writeable = False
    for arr in (members, row_sf, run, cap):
        arr.flags.writeable = False
    return _Rows(X, members, row_sf, run, cap, types, job_ids, row_labels, combos)


def _row_label(job_ids: tuple[Hashable, ...], members: np.ndarray, n_jobs: int) -> str:
    """Readable label of a row for error messages."""
    ids = [repr(job_ids[int(i)]) for i in members if int(i) < n_jobs]
    return "job " + ids[0] if len(ids) == 1 else "jobs " + ", ".join(ids)


def _history(rows: _Rows, received: Any, elapsed: Any) -> tuple[np.ndarray, np.ndarray]:
    R, k = rows.n_rows, rows.k
    if received is None:
        t = np.zeros((R, k))
    else:
        t = np.asarray(as_array(received, "received", ndim=2, shape=(R, k)))
    if elapsed is None:
        if t.any():
            raise InputError(
                "elapsed is required with received: the time over which received was "
                "accumulated (scalar, or one value per row)", argument="elapsed",
            )
        e = np.zeros(R)
    else:
        e_arr = np.asarray(as_array(elapsed, "elapsed", ndim=(0, 1)))
        if e_arr.ndim == 0:
            e = np.full(R, float(e_arr))
        else:
            if e_arr.shape != (R,):
                raise InputError(f"elapsed has shape {e_arr.shape}; expected a scalar or ({R},)",
                                 argument="elapsed")
            e = np.array(e_arr)
    total = t.sum(axis=1)
    over = total > e * (1.0 + 1e-9) + 1e-9
    if over.any():
        r = int(np.flatnonzero(over)[0])
        raise InputError(
            f"received[{r}] sums to {total[r]:g}, more than the elapsed time {e[r]:g} of row {r}",
            argument="received", index=(r,),
        )
    return t, e


# --------------------------------------------------------------------------------------------
# priorities and the greedy walk of Algorithm 1
# --------------------------------------------------------------------------------------------


def _priority(X: np.ndarray, t: np.ndarray, e: np.ndarray, fraction: str) -> np.ndarray:
    """``X / f`` with ``f`` the received fraction; ``inf`` where ``f = 0 < X``, 0 where X = 0."""
    if fraction == "elapsed":
        denom = np.broadcast_to(e[:, None], t.shape)
    else:  # the literal §5 formula: share of the type's total time so far
        denom = np.broadcast_to(t.sum(axis=0)[None, :], t.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(denom > 0, t / np.where(denom > 0, denom, 1.0), 0.0)
        pr = np.where(X > 0, np.where(f > 0, X / np.where(f > 0, f, 1.0), np.inf), 0.0)
    return pr


def _greedy(
    members: np.ndarray,
    row_sf: np.ndarray,
    rows: np.ndarray,
    types: np.ndarray,
    rem: np.ndarray,
    used: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 over candidate pairs already sorted by decreasing priority.

    Returns the (row, type) pairs taken, in the order Algorithm 1 takes them. Exactly equal to
    the sequential walk "take the pair if its gang fits in the remaining workers of its type and
    none of its jobs runs yet", but decided a run of pairs at a time: a pair is *clean* when
    none of its jobs appears in an earlier candidate; clean pairs are taken up to the first one
    whose type overflows (cumulative gang sizes), and a non-clean pair is skipped when an earlier
    clean pair (which is taken) shares a job with it. Only the pair that ends the run is decided
    on its own. ``rem`` (remaining workers per type) and ``used`` (jobs already running, with a
    last slot for the padding of ``members``) are updated in place, so the walk can continue
    over a later batch of candidates.
    """
    k = rem.shape[0]
    n_jobs = used.shape[0] - 1
    out_r: list[np.ndarray] = []
    out_t: list[np.ndarray] = []
    r, t = rows, types
    single = members.shape[1] == 1
    while r.size:
        w = row_sf[r]
        mem = members[r]
        keep = w <= rem[t]
        keep &= ~used[mem].any(axis=1)
        if not keep.all():
            r, t, w, mem = r[keep], t[keep], w[keep], mem[keep]
            if not r.size:
                break
        E = r.size
        pos = np.arange(E)
        first = np.full(n_jobs + 1, E, dtype=np.int64)  # first candidate of each job
        if single:
            job = mem[:, 0]
            np.minimum.at(first, job, pos)
            clean = first[job] == pos
            p1 = E  # a repeated job's first pair is clean and earlier, hence taken: skip it
        else:
            s = mem.shape[1]
            np.minimum.at(first, mem.ravel(), np.repeat(pos, s))
            first[n_jobs] = E
            fm = first[mem]  # (E, s): first pair of each member
            pad = mem >= n_jobs
            clean = ((fm == pos[:, None]) | pad).all(axis=1)
            clean_ext = np.append(clean, False)
            skip = ((fm < pos[:, None]) & clean_ext[np.minimum(fm, E)] & ~pad).any(axis=1)
            undecided = ~clean & ~skip
            p1 = int(np.argmax(undecided)) if undecided.any() else E
        load = np.zeros((E, k))
        load[pos, t] = np.where(clean, w, 0.0)
        cum = np.cumsum(load, axis=0)[pos, t]
        over = clean & (cum > rem[t] + 1e-9)
        p2 = int(np.argmax(over)) if over.any() else E
        p = min(p1, p2)
        take = np.flatnonzero(clean[:p])
        if take.size:
            rem -= np.bincount(t[take], weights=w[take], minlength=k)
            used[mem[take].ravel()] = True
            used[n_jobs] = False
            out_r.append(r[take])
            out_t.append(t[take])
        if p >= E:
            break
        if p == p1 and p1 < p2 and w[p] <= rem[t[p]] + 1e-9 and not used[mem[p]].any():
            # every earlier pair sharing a job with it was skipped: decide it on its own
            rem[t[p]] -= w[p]
            used[mem[p]] = True
            used[n_jobs] = False
            out_r.append(r[p:p + 1])
            out_t.append(t[p:p + 1])
        r, t = r[p + 1:], t[p + 1:]
    if not out_r:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(out_r), np.concatenate(out_t)


def _sorted(primary: np.ndarray, *ties: np.ndarray) -> np.ndarray:
    """Stable order by ``primary`` then ``ties`` (earlier first), like ``np.lexsort((*reversed
    (ties), primary))``, but only the runs of equal ``primary`` are sorted by the tie keys."""
    order = np.argsort(primary, kind="stable")
    if order.size < 2 or not ties:
        return order
    p = primary[order]
    same = p[1:] == p[:-1]
    if not same.any():
        return order
    start = np.concatenate([[True], ~same])
    gid = np.cumsum(start) - 1
    size = np.bincount(gid)
    tied = size[gid] > 1
    sub = order[tied]
    keys = tuple(t[sub] for t in reversed(ties)) + (gid[tied],)
    order[tied] = sub[np.lexsort(keys)]
    return order


def _candidates(rows: _Rows, t: np.ndarray, e: np.ndarray, eligible: str, fraction: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Priorities, deficits and the two candidate batches: (row, type) pairs with a positive
    target, and (``eligible="all"``) runnable pairs with a zero target, each as flat indices
    in ascending (row, type) order. Every positive-target pair has priority > 0, so the whole
    first batch precedes the second in Algorithm 1's order."""
    X = rows.target
    pr = _priority(X, t, e, fraction)
    deficit = X * e[:, None] - t
    positive = rows.runnable & (X > 0)
    if eligible == "behind":
        positive &= deficit >= -_BEHIND_TOL * np.maximum(1.0, e)[:, None]
    first = np.flatnonzero(positive.ravel())
    if eligible == "all":
        second = np.flatnonzero((rows.runnable & (X <= 0)).ravel())
    else:
        second = np.zeros(0, dtype=np.int64)
    return pr, deficit, first, second


def _in_order(rows: _Rows, pr: np.ndarray, deficit: np.ndarray, cand: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Sort flat candidates by priority, then deficit, target, gang (descending), then row and
    type (ascending: the candidates' own order, kept by the stable sorts)."""
    k = rows.k
    cr, ct = np.divmod(cand, k)
    order = _sorted(-pr.ravel()[cand], -deficit.ravel()[cand], -rows.target.ravel()[cand],
                    -rows.row_sf[cr])
    return cr[order], ct[order]


def _order(
    rows: _Rows, t: np.ndarray, e: np.ndarray, eligible: str, fraction: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Priorities and every candidate (row, type) pair in Algorithm 1's order."""
    pr, deficit, first, second = _candidates(rows, t, e, eligible, fraction)
    r1, t1 = _in_order(rows, pr, deficit, first)
    r2, t2 = _in_order(rows, pr, deficit, second)
    return pr, np.concatenate([r1, r2]), np.concatenate([t1, t2])


# --------------------------------------------------------------------------------------------
# the round's result
# --------------------------------------------------------------------------------------------


def _freeze(obj: Any, names: tuple[str, ...]) -> None:
    """Make the named array fields of a frozen dataclass read-only views (O(fields), unlike a
    walk over every field and tuple element: the label tuples hold one entry per job)."""
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, np.ndarray) and value.flags.writeable:
            view = value.view()
            view.flags.writeable = False
            object.__setattr__(obj, name, view)



@dataclass(frozen=True, repr=False)
class RoundAssignment:
    """Which job (or combination) runs on which accelerator type in the next round (§5).

    Attributes
    ----------
    type_index : ndarray of int, shape (rows,)
        Accelerator type each row runs on this round, ``-1`` when it does not run.
    priority : ndarray, shape (rows, k)
        The priorities ``target / received fraction`` the round was decided with.
    workers : ndarray, shape (k,)
        Workers of each type in use this round.
    capacity : ndarray, shape (k,)
        Workers of each type.
    scale_factor : ndarray, shape (rows,)
        Workers each row occupies (a combination: the largest gang of its jobs).
    selection : ndarray of int
        The scheduled rows in the order Algorithm 1 took them.
    row_labels : tuple
        Label of each row: the job id, or the tuple of job ids of a combination.
    job_ids : tuple
        Job labels.
    types : tuple of str
        Accelerator type names.
    combinations : tuple of tuple of int, or None
        Job indices of each row when rows are combinations (space sharing).
    members : ndarray of int, shape (rows, s)
        Job indices of each row, padded with the number of jobs.
    placement : Placement or None
        GPUs of each row, when the round was placed (:class:`RoundScheduler` with servers).

    Examples
    --------
    >>> a = schedule_round([[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]], [1, 1])
    >>> a.type_index.tolist(), a.workers.tolist()
    ([0, 1, -1], [1.0, 1.0])
    """

    type_index: np.ndarray
    priority: np.ndarray
    workers: np.ndarray
    capacity: np.ndarray
    scale_factor: np.ndarray
    selection: np.ndarray
    row_labels: tuple[Hashable, ...]
    job_ids: tuple[Hashable, ...]
    types: tuple[str, ...]
    combinations: tuple[tuple[int, ...], ...] | None = None
    members: np.ndarray | None = None
    placement: Placement | None = None

    def __post_init__(self) -> None:
        _freeze(self, ("type_index", "priority", "workers", "capacity", "scale_factor",
                       "selection", "members"))

    @property
    def scheduled(self) -> np.ndarray:
        """Boolean mask of the rows that run this round."""
        return readonly(self.type_index >= 0)

    @property
    def idle(self) -> np.ndarray:
        """Workers of each type left idle this round."""
        return readonly(self.capacity - self.workers)

    @property
    def job_type(self) -> np.ndarray:
        """Accelerator type each *job* runs on this round (``-1``: it does not run)."""
        n = len(self.job_ids)
        if self.combinations is None:
            return self.type_index
        out = np.full(n + 1, -1, dtype=np.int64)
        mem = _members(self)
        rows = np.flatnonzero(self.scheduled)
        out[mem[rows].ravel()] = np.repeat(self.type_index[rows], mem.shape[1])
        return readonly(out[:n])

    def assignment(self) -> dict[str, list[Hashable]]:
        """Accelerator type name -> labels of the rows that run on it, in selection order."""
        out: dict[str, list[Hashable]] = {t: [] for t in self.types}
        for r in self.selection.tolist():
            out[self.types[self.type_index[r]]].append(self.row_labels[r])
        return out

    def to_frame(self) -> Any:
        """One row per scheduled job/combination: type, workers and its priority there."""
        pd = require_pandas()
        rows = self.selection
        ti = self.type_index[rows]
        df = pd.DataFrame(
            {
                "type": [self.types[j] for j in ti.tolist()],
                "workers": self.scale_factor[rows],
                "priority": self.priority[rows, ti],
            },
            index=pd.Index([self.row_labels[r] for r in rows.tolist()], name="row"),
        )
        return df

    def __repr__(self) -> str:
        used = ", ".join(f"{t}: {int(u)}/{int(c)}" for t, u, c in
                         zip(self.types, self.workers, self.capacity))
        return (f"RoundAssignment(rows={self.type_index.shape[0]}, "
                f"scheduled={int(self.scheduled.sum())}, workers={{{used}}})")


def _assignment(
    rows: _Rows, t: np.ndarray, e: np.ndarray, eligible: str, fraction: str
) -> RoundAssignment:
    pr, deficit, first, second = _candidates(rows, t, e, eligible, fraction)
    rem = rows.capacity.astype(float).copy()
    used = np.zeros(rows.n_jobs + 1, dtype=bool)  # last slot: padding of ``members``
    cr, ct = _in_order(rows, pr, deficit, first)
    sel_r, sel_t = _greedy(rows.members, rows.row_sf, cr, ct, rem, used)
    if second.size:
        # zero-target pairs only matter when workers are left that such a pair can fill
        fits = rows.row_sf[second // rows.k] <= rem[second % rows.k]
        fits &= ~used[rows.members[second // rows.k]].any(axis=1)
        second = second[fits]
        if second.size:
            cr, ct = _in_order(rows, pr, deficit, second)
            r2, t2 = _greedy(rows.members, rows.row_sf, cr, ct, rem, used)
            sel_r, sel_t = np.concatenate([sel_r, r2]), np.concatenate([sel_t, t2])
    type_index = np.full(rows.n_rows, -1, dtype=np.int64)
    type_index[sel_r] = sel_t
    workers = np.bincount(sel_t, weights=rows.row_sf[sel_r], minlength=rows.k)
    return RoundAssignment(
        type_index=type_index, priority=pr, workers=workers, capacity=rows.capacity,
        scale_factor=rows.row_sf, selection=sel_r, row_labels=rows.row_labels,
        job_ids=rows.job_ids, types=rows.types, combinations=rows.combinations,
        members=rows.members,
    )


@only_fairalloc_errors
def schedule_round(
    target: Any,
    cluster: Any,
    jobs: Jobs | None = None,
    *,
    received: Any = None,
    elapsed: Any = None,
    scale_factor: Any = None,
    combinations: Sequence[Sequence[int]] | None = None,
    runnable: Any = None,
    ids: Sequence[Hashable] | None = None,
    eligible: str = "all",
    fraction: str = "elapsed",
) -> RoundAssignment:
    """Decide the next round: which job (or combination) runs on which type (§5, Algorithm 1).

    Parameters
    ----------
    target : array_like, shape (rows, k), or a policy result with ``x``
        Target allocation: fraction of time each job (or combination) should spend on each
        type. Must be feasible: ``0 <= X <= 1``, every job's total over types and the
        combinations containing it ``<= 1``, ``sum_rows X[:, j] * scale_factor <= workers[j]``.
    cluster : fairalloc.Cluster or array_like of int, shape (k,)
        Workers of each accelerator type.
    jobs : fairalloc.Jobs, optional
        Supplies scale factors, ids (labels) and where each job can run (throughput > 0).
    received : array_like, shape (rows, k), optional
        Time each row has received on each type so far (any unit); default zeros.
    elapsed : float or array_like, shape (rows,), optional
        Time elapsed since each row entered (same unit as ``received``); required with
        ``received``.
    scale_factor : array_like of int, shape (jobs,), optional
        Workers each job needs at once (when ``jobs`` is not given); default 1.
    combinations : sequence of tuple of int, or fairalloc.JobPairs, optional
        Space sharing: row ``r`` of ``target`` is the combination ``combinations[r]`` of job
        indices (``(i,)`` for job ``i`` alone). A combination occupies the largest gang of its
        jobs; no job runs in two rows of the same round. With a :class:`fairalloc.JobPairs`
        (or, for a space-sharing allocation, a sequence of ``(a, b)`` pairs), the rows are the
        jobs alone followed by the pairs; a space-sharing :class:`fairalloc.Allocation` is
        split into these rows (``x`` minus pair time, then ``pair_x``).
    runnable : array_like of bool, shape (rows, k), optional
        Where each row may run; default: everywhere (with ``jobs``: where every member's
        throughput is positive). Rows never run where their gang exceeds the type's workers.
    ids : sequence of hashable, optional
        Job labels when ``jobs`` is not given.
    eligible : {"all", "positive", "behind"}
        Which ``(row, type)`` pairs may be chosen: ``"all"`` (Gavel: every runnable pair;
        zero-target pairs have priority 0 and only fill workers nobody else can use,
        work-conserving), ``"positive"`` (only the allocation's support, Algorithm 1 over the
        positive entries), ``"behind"`` (only pairs that have not received more than their
        target, ``t <= X e``: the received fractions track ``X`` from both sides and capacity the
        target leaves unused stays idle).
    fraction : {"elapsed", "type_share"}
        Received fraction ``f = t / e`` (default) or the literal §5 formula
        ``f = t / sum_m t[m, j]``.

    Returns
    -------
    RoundAssignment

    Raises
    ------
    InputError
        On an infeasible target, a positive target where a row cannot run, a history whose
        received time exceeds its elapsed time, or malformed arguments.

    Examples
    --------
    The paper's 3-job allocation (§4.1) on one V100 and one K80; after 11 rounds the received
    fractions are within one round of the target:

    >>> import numpy as np
    >>> X = np.array([[5, 0], [5, 1], [1, 10]]) / 11
    >>> t, e = np.zeros((3, 2)), 0.0
    >>> for _ in range(11):
    ...     a = schedule_round(X, [1, 1], received=t, elapsed=e)
    ...     t[np.flatnonzero(a.scheduled), a.type_index[a.scheduled]] += 1.0
    ...     e += 1.0
    >>> (t / e * 11).round(6).tolist()
    [[5.0, 0.0], [5.0, 1.0], [1.0, 10.0]]
    """
    eligible = as_option(eligible, "eligible", _ELIGIBLE)
    fraction = as_option(fraction, "fraction", _FRACTION)
    rows = _build_rows(target, cluster, jobs, scale_factor=scale_factor,
                       combinations=combinations, runnable=runnable, ids=ids)
    t, e = _history(rows, received, elapsed)
    return _assignment(rows, t, e, eligible, fraction)


# --------------------------------------------------------------------------------------------
# servers and placement
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, init=False, eq=False)
class ServerLayout:
    """Physical servers of each accelerator type and global GPU ids.

    GPUs are numbered ``0..G-1`` type by type (in the cluster's type order), server by server.

    Parameters
    ----------
    servers : mapping of str to sequence of int
        Accelerator type -> GPUs of each of its servers.

    Attributes
    ----------
    types : tuple of str
    capacity : ndarray, shape (k,)
        GPUs of each type.
    server_type, server_size, server_start : ndarray of int, shape (S,)
        Type, GPU count and first GPU id of each server.
    gpu_type, gpu_server : ndarray of int, shape (G,)

    Examples
    --------
    >>> lay = ServerLayout.uniform(Cluster({"v100": 8, "k80": 6}), 4)
    >>> lay.server_size.tolist(), lay.gpu_server[:6].tolist()
    ([4, 4, 4, 2], [0, 0, 0, 0, 1, 1])
    """

    types: tuple[str, ...]
    capacity: np.ndarray
    server_type: np.ndarray
    server_size: np.ndarray
    server_start: np.ndarray
    gpu_type: np.ndarray
    gpu_server: np.ndarray

    @only_fairalloc_errors
    def __init__(self, servers: Mapping[str, Sequence[int]]) -> None:
        if not isinstance(servers, Mapping) or not servers:
            raise InputError("servers must be a non-empty mapping of accelerator type to the "
                             "GPU counts of its servers", argument="servers")
        types = tuple(str(t) for t in servers)
        sizes, stype = [], []
        for j, (name, sv) in enumerate(servers.items()):
            arr = as_array(sv, f"servers[{name!r}]", ndim=1, positive=True, integer=True)
            sizes.append(arr.astype(np.int64))
            stype.append(np.full(arr.shape[0], j, dtype=np.int64))
        size = np.concatenate(sizes)
        stype_arr = np.concatenate(stype)
        start = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
        cap = np.bincount(stype_arr, weights=size, minlength=len(types)).astype(float)
        gpu_server = np.repeat(np.arange(size.shape[0]), size)
        for name, val in (("types", types), ("capacity", cap), ("server_type", stype_arr),
                          ("server_size", size), ("server_start", start),
                          ("gpu_type", stype_arr[gpu_server]), ("gpu_server", gpu_server)):
            if isinstance(val, np.ndarray):
                val.flags.writeable = False
            object.__setattr__(self, name, val)

    @classmethod
    @only_fairalloc_errors
    def uniform(cls, cluster: Cluster, gpus_per_server: int | Mapping[str, int]) -> ServerLayout:
        """Servers of ``gpus_per_server`` GPUs (per type, or one count for all types); a type
        whose GPU count is not a multiple gets a last, smaller server."""
        if not isinstance(cluster, Cluster):
            raise InputError("cluster must be a fairalloc.Cluster", argument="cluster")
        per: dict[str, list[int]] = {}
        for name, cap in zip(cluster.types, cluster.capacity.astype(int).tolist()):
            if isinstance(gpus_per_server, Mapping) and name not in gpus_per_server:
                raise InputError(f"gpus_per_server has no entry for type {name!r}",
                                 argument="gpus_per_server")
            g = gpus_per_server[name] if isinstance(gpus_per_server, Mapping) else gpus_per_server
            if isinstance(g, bool) or not isinstance(g, int | np.integer) or g <= 0:
                raise InputError(f"gpus_per_server for {name!r} must be a positive integer, "
                                 f"got {g!r}", argument="gpus_per_server")
            q, r = divmod(cap, int(g))
            per[name] = [int(g)] * q + ([r] if r else [])
        return cls(per)

    @property
    def num_gpus(self) -> int:
        """Total number of GPUs ``G``."""
        return int(self.gpu_type.shape[0])

    @property
    def num_servers(self) -> int:
        """Total number of servers ``S``."""
        return int(self.server_size.shape[0])

    def __repr__(self) -> str:
        body = ", ".join(f"{t!r}: {int((self.server_type == j).sum())} servers/"
                         f"{int(self.capacity[j])} GPUs" for j, t in enumerate(self.types))
        return f"ServerLayout({body})"


@dataclass(frozen=True, repr=False, eq=False)
class Placement:
    """GPUs of every job of a round (§5 placement, §6 lease renewals).

    Attributes
    ----------
    gpu_row : ndarray of int, shape (G,)
        Row (job or combination) running on each GPU, ``-1`` when idle.
    row_ptr : ndarray of int, shape (rows + 1,)
        ``gpu_ids[row_ptr[r]:row_ptr[r + 1]]`` are the GPUs of row ``r`` (sorted).
    gpu_ids : ndarray of int
    row_type : ndarray of int, shape (rows,)
        Type of each row (``-1``: not running).
    servers_spanned : ndarray of int, shape (rows,)
        Servers each running row spans (1 = consolidated).
    renewed : ndarray of bool, shape (rows,)
        Rows that kept GPUs a member held last round (lease renewal).
    job_row : ndarray of int, shape (jobs,)
        Row each job runs in (``-1``: not running).
    job_restarted : ndarray of bool, shape (jobs,)
        Running jobs that must (re)load a checkpoint: they did not run last round on exactly
        these GPUs.
    job_preempted : ndarray of bool, shape (jobs,)
        Jobs that ran last round and do not run this round.
    row_labels, job_ids : tuple
    layout : ServerLayout

    Examples
    --------
    >>> lay = ServerLayout.uniform(Cluster({"v100": 8}), 4)
    >>> a = schedule_round([[1.0], [0.5]], [8], scale_factor=[4, 2])
    >>> p = place(a, lay)
    >>> p.gpus(0), p.gpus(1), p.restarts
    ((0, 1, 2, 3), (4, 5), 2)
    """

    gpu_row: np.ndarray
    row_ptr: np.ndarray
    gpu_ids: np.ndarray
    row_type: np.ndarray
    servers_spanned: np.ndarray
    renewed: np.ndarray
    job_row: np.ndarray
    job_restarted: np.ndarray
    job_preempted: np.ndarray
    row_labels: tuple[Hashable, ...]
    job_ids: tuple[Hashable, ...]
    layout: ServerLayout

    def __post_init__(self) -> None:
        _freeze(self, ("gpu_row", "row_ptr", "gpu_ids", "row_type", "servers_spanned",
                       "renewed", "job_row", "job_restarted", "job_preempted"))

    @property
    def restarts(self) -> int:
        """Jobs that (re)load a checkpoint this round (run, but not on last round's GPUs)."""
        return int(self.job_restarted.sum())

    @property
    def renewals(self) -> int:
        """Jobs that keep last round's GPUs (no restart)."""
        return int(((self.job_row >= 0) & ~self.job_restarted).sum())

    @property
    def preemptions(self) -> int:
        """Jobs that ran last round and are paused this round."""
        return int(self.job_preempted.sum())

    def row_gpus(self, row: int) -> np.ndarray:
        """GPU ids of row ``row`` (empty when it does not run)."""
        if isinstance(row, bool) or not isinstance(row, int | np.integer) or not (
                -self.row_type.shape[0] <= row < self.row_type.shape[0]):
            raise InputError(f"row must be a row index in 0..{self.row_type.shape[0] - 1}, "
                             f"got {row!r}", argument="row")
        row = int(row) % self.row_type.shape[0]
        return self.gpu_ids[self.row_ptr[row]:self.row_ptr[row + 1]]

    def gpus(self, label: Hashable) -> tuple[int, ...]:
        """GPU ids of the row labelled ``label`` (a job id, or a tuple of job ids)."""
        try:
            r = self.row_labels.index(label)
        except ValueError:
            raise InputError(f"no row labelled {label!r}", argument="label") from None
        return tuple(int(g) for g in self.row_gpus(r))

    def job_gpus(self, job: Hashable) -> tuple[int, ...]:
        """GPU ids the job labelled ``job`` runs on (empty when it does not run)."""
        try:
            i = self.job_ids.index(job)
        except ValueError:
            raise InputError(f"no job labelled {job!r}", argument="job") from None
        r = int(self.job_row[i])
        return () if r < 0 else tuple(int(g) for g in self.row_gpus(r))

    def to_frame(self) -> Any:
        """One row per running job/combination: type, GPUs, servers spanned, renewed."""
        pd = require_pandas()
        rows = np.flatnonzero(self.row_type >= 0)
        return pd.DataFrame(
            {
                "type": [self.layout.types[j] for j in self.row_type[rows].tolist()],
                "gpus": [tuple(int(g) for g in self.row_gpus(r)) for r in rows.tolist()],
                "servers": self.servers_spanned[rows],
                "renewed": self.renewed[rows],
            },
            index=pd.Index([self.row_labels[r] for r in rows.tolist()], name="row"),
        )

    def _for_jobs(self, job_ids: tuple[Hashable, ...]) -> Placement:
        """The same placement with its per-job arrays re-indexed to ``job_ids``."""
        index = {label: i for i, label in enumerate(self.job_ids)}
        old = np.array([index.get(label, -1) for label in job_ids], dtype=np.int64)
        ok = old >= 0
        job_row = np.full(len(job_ids), -1, dtype=np.int64)
        job_row[ok] = self.job_row[old[ok]]
        zeros = np.zeros(len(job_ids), dtype=bool)
        return dataclasses.replace(self, job_row=job_row, job_restarted=zeros,
                                   job_preempted=zeros.copy(), job_ids=job_ids)

    def __repr__(self) -> str:
        running = int((self.row_type >= 0).sum())
        busy = int((self.gpu_row >= 0).sum())
        return (f"Placement(rows_running={running}, gpus_busy={busy}/{self.layout.num_gpus}, "
                f"restarts={self.restarts}, renewals={self.renewals}, "
                f"preemptions={self.preemptions})")


def _csr(gpu_row: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    busy = np.flatnonzero(gpu_row >= 0)
    order = np.argsort(gpu_row[busy], kind="stable")
    gpu_ids = busy[order]
    counts = np.bincount(gpu_row[busy], minlength=n_rows)
    row_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return row_ptr, gpu_ids


@only_fairalloc_errors
def place(
    assignment: RoundAssignment,
    layout: ServerLayout,
    *,
    previous: Placement | None = None,
    lease_renewal: bool = True,
) -> Placement:
    """Place a round's jobs on GPUs: lease renewals first, then consolidated best fit (§5, §6).

    Parameters
    ----------
    assignment : RoundAssignment
        The round (from :func:`schedule_round` or :class:`RoundScheduler`).
    layout : ServerLayout
        Servers of each type; its types and GPU counts must match the assignment's cluster.
    previous : Placement, optional
        Last round's placement of the same jobs (same job order), for lease renewals and the
        restart count.
    lease_renewal : bool
        Let a job keep last round's GPUs when it runs again on the same type (§6). When False,
        every job is placed afresh (and restarts unless it happens to land on the same GPUs).

    Returns
    -------
    Placement

    Notes
    -----
    Rows are placed in decreasing order of workers (ties by row index). A gang that fits on one
    server goes to the server with the fewest free GPUs that holds it (best fit, leaving large
    holes for large gangs); a larger gang takes the servers with the most free GPUs until its
    remainder fits on one, which it best-fits. Single-GPU rows are placed in one vectorised step
    (best fit for each of them in turn is "fill the fullest servers first"). Renewals are
    honoured before fresh placements, so a renewal can cost a larger fresh gang its
    consolidation; ``servers_spanned`` reports it.

    Examples
    --------
    >>> lay = ServerLayout.uniform(Cluster({"v100": 4}), 2)
    >>> sched = RoundScheduler([[0.5], [0.5], [0.5], [0.5]], Cluster({"v100": 4}),
    ...                        scale_factor=[1, 1, 2, 2], servers=lay)
    >>> [sched.step().placement.restarts for _ in range(4)]
    [2, 2, 1, 1]
    """
    if not isinstance(assignment, RoundAssignment):
        raise InputError("assignment must be a RoundAssignment", argument="assignment")
    lease_renewal = as_bool(lease_renewal, "lease_renewal")
    if not isinstance(layout, ServerLayout):
        raise InputError("layout must be a ServerLayout", argument="layout")
    default_names = tuple(str(j) for j in range(len(assignment.types)))
    if len(layout.types) != len(assignment.types) or (
        assignment.types != default_names and layout.types != assignment.types
    ):
        raise InputError(f"layout has types {layout.types}, the assignment {assignment.types}",
                         argument="layout")
    if not np.array_equal(layout.capacity, assignment.capacity):
        raise InputError(
            f"layout has {layout.capacity.astype(int).tolist()} GPUs per type, the assignment's "
            f"cluster {assignment.capacity.astype(int).tolist()}", argument="layout",
        )
    n_rows = assignment.type_index.shape[0]
    n_jobs = len(assignment.job_ids)
    members = _members(assignment)
    if previous is not None:
        if not isinstance(previous, Placement):
            raise InputError("previous must be a Placement", argument="previous")
        if previous.layout.num_gpus != layout.num_gpus or previous.job_row.shape[0] != n_jobs:
            raise InputError(
                "previous is a placement of a different cluster or job set (re-index it, or use "
                "RoundScheduler, which tracks jobs by id)", argument="previous",
            )

    row_type = assignment.type_index
    sf = assignment.scale_factor.astype(np.int64)
    running = np.flatnonzero(row_type >= 0)
    order = running[np.lexsort((running, -sf[running]))]
    G = layout.num_gpus
    gpu_row = np.full(G, -1, dtype=np.int64)
    renewed = np.zeros(n_rows, dtype=bool)

    # 1. lease renewals: keep the GPU set a member held last round (same type, same size)
    if previous is not None and lease_renewal and order.size:
        prev_sizes = np.diff(previous.row_ptr)
        mem = members[order]
        pad = mem >= n_jobs
        prev_job_row = np.append(previous.job_row, -1)
        cand = prev_job_row[mem]  # (U, s)
        ok = (cand >= 0) & ~pad
        cs = np.where(ok, cand, 0)
        ok &= (previous.row_type[cs] == row_type[order][:, None])
        ok &= (prev_sizes[cs] == sf[order][:, None])
        has = ok.any(axis=1)
        pick = np.where(has, cand[np.arange(order.size), np.argmax(ok, axis=1)], -1)
        units = order[has]
        lease = pick[has]
        _, first = np.unique(lease, return_index=True)  # a lease goes to its first claimant
        first = np.sort(first)
        units, lease = units[first], lease[first]
        if units.size:
            lens = prev_sizes[lease]
            starts = previous.row_ptr[lease]
            idx = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())
            gpu_row[previous.gpu_ids[idx]] = np.repeat(units, lens)
            renewed[units] = True

    # 2. fresh placement, decreasing gang size, consolidated best fit
    fresh = order[~renewed[order]]
    gpu_free = gpu_row < 0
    free_count = np.bincount(layout.gpu_server, weights=gpu_free,
                             minlength=layout.num_servers).astype(np.int64)
    multi = fresh[sf[fresh] > 1]
    singles = fresh[sf[fresh] == 1]
    starts_of_type = np.searchsorted(layout.server_type, np.arange(len(layout.types) + 1))
    for r in multi.tolist():
        j = int(row_type[r])
        s0, s1 = int(starts_of_type[j]), int(starts_of_type[j + 1])
        fc = free_count[s0:s1]
        need = int(sf[r])
        while need > 0:
            fit = np.flatnonzero(fc >= need)
            if fit.size:
                srv = int(fit[np.argmin(fc[fit])])
                take = need
            else:
                srv = int(np.argmax(fc))
                take = int(fc[srv])
            g0 = int(layout.server_start[s0 + srv])
            g1 = g0 + int(layout.server_size[s0 + srv])
            gp = g0 + np.flatnonzero(gpu_free[g0:g1])[:take]
            gpu_row[gp] = r
            gpu_free[gp] = False
            fc[srv] -= take
            need -= take
    if singles.size:
        st = row_type[singles]
        for j in np.unique(st).tolist():
            rows_j = singles[st == j]
            gj = np.flatnonzero(gpu_free & (layout.gpu_type == j))
            gsrv = layout.gpu_server[gj]
            gj = gj[np.lexsort((gj, gsrv, free_count[gsrv]))]
            gpu_row[gj[:rows_j.size]] = rows_j
            gpu_free[gj[:rows_j.size]] = False

    row_ptr, gpu_ids = _csr(gpu_row, n_rows)
    srv_of = layout.gpu_server[gpu_ids]
    row_of = np.repeat(np.arange(n_rows), np.diff(row_ptr))
    pairs = np.unique(row_of * layout.num_servers + srv_of)
    spanned = np.bincount(pairs // max(layout.num_servers, 1), minlength=n_rows)

    # per-job bookkeeping: restarts and preemptions
    job_row = np.full(n_jobs, -1, dtype=np.int64)
    mem_all = members[running]
    job_row_flat = np.repeat(running, mem_all.shape[1])
    valid = mem_all.ravel() < n_jobs
    job_row[mem_all.ravel()[valid]] = job_row_flat[valid]
    is_running = job_row >= 0
    if previous is None:
        restarted = is_running.copy()
        preempted = np.zeros(n_jobs, dtype=bool)
    else:
        # a job keeps running (no restart) iff it holds exactly last round's GPUs: every GPU of
        # its previous row now belongs to its current row, and both rows have the same size
        both = (previous.gpu_row >= 0) & (gpu_row >= 0)
        key = previous.gpu_row[both] * (n_rows + 1) + gpu_row[both]
        keys, counts = np.unique(key, return_counts=True)
        keys, counts = np.append(keys, -2), np.append(counts, 0)  # sentinel: never matched
        pj = previous.job_row
        q = np.where(is_running & (pj >= 0), pj * (n_rows + 1) + job_row, -1)
        at = np.minimum(np.searchsorted(keys[:-1], q), keys.size - 1)
        overlap = np.where(keys[at] == q, counts[at], 0)
        size_now = np.diff(row_ptr)[np.maximum(job_row, 0)]
        size_prev = np.diff(previous.row_ptr)[np.maximum(pj, 0)]
        same = is_running & (pj >= 0) & (overlap == size_now) & (size_now == size_prev)
        restarted = is_running & ~same
        preempted = (pj >= 0) & ~is_running
    for arr in (gpu_row, row_ptr, gpu_ids, spanned, renewed, job_row, restarted, preempted):
        arr.flags.writeable = False
    return Placement(
        gpu_row=gpu_row, row_ptr=row_ptr, gpu_ids=gpu_ids, row_type=row_type.copy(),
        servers_spanned=spanned, renewed=renewed, job_row=job_row, job_restarted=restarted,
        job_preempted=preempted, row_labels=assignment.row_labels, job_ids=assignment.job_ids,
        layout=layout,
    )


def _members(a: RoundAssignment) -> np.ndarray:
    if a.members is not None:
        return a.members
    if a.combinations is None:
        return np.arange(a.type_index.shape[0], dtype=np.int64)[:, None]
    n_jobs = len(a.job_ids)
    width = max(len(c) for c in a.combinations)
    out = np.full((len(a.combinations), width), n_jobs, dtype=np.int64)
    for r, c in enumerate(a.combinations):
        out[r, :len(c)] = c
    return out


# --------------------------------------------------------------------------------------------
# stateful helper
# --------------------------------------------------------------------------------------------


class RoundScheduler:
    """Run the round-based mechanism over many rounds, accumulating the history (§5).

    Parameters
    ----------
    target, cluster, jobs, scale_factor, combinations, runnable, ids, eligible, fraction
        As in :func:`schedule_round`.
    servers : ServerLayout, optional
        When given, every round is also placed (:func:`place`), with lease renewals across
        rounds; the placement is attached to the returned assignment.
    round_duration : float
        Length of a round (the unit of :attr:`received` and :attr:`elapsed`); default 1.
    lease_renewal : bool
        Passed to :func:`place`.

    Attributes
    ----------
    received : ndarray, shape (rows, k)
        Time each row has received on each type.
    elapsed : ndarray, shape (rows,)
        Time since each row entered.
    rounds : int
        Rounds run.

    Examples
    --------
    >>> sched = RoundScheduler([[0.5, 0.0], [0.25, 0.5], [0.25, 0.5]], Cluster({"a": 1, "b": 1}))
    >>> errors = sched.run(400)
    >>> bool(errors[-1] <= 1 / 400), float(sched.received_fraction[1, 1])
    (True, 0.5)
    """

    @only_fairalloc_errors
    def __init__(
        self,
        target: Any,
        cluster: Any,
        jobs: Jobs | None = None,
        *,
        scale_factor: Any = None,
        combinations: Sequence[Sequence[int]] | None = None,
        runnable: Any = None,
        ids: Sequence[Hashable] | None = None,
        servers: ServerLayout | None = None,
        round_duration: float = 1.0,
        eligible: str = "all",
        fraction: str = "elapsed",
        lease_renewal: bool = True,
    ) -> None:
        self._eligible = as_option(eligible, "eligible", _ELIGIBLE)
        self._fraction = as_option(fraction, "fraction", _FRACTION)
        self._duration = as_positive_float(round_duration, "round_duration")
        if servers is not None and not isinstance(servers, ServerLayout):
            raise InputError("servers must be a ServerLayout", argument="servers")
        self._cluster = cluster
        self._layout = servers
        self._lease_renewal = as_bool(lease_renewal, "lease_renewal")
        self._rows = _build_rows(target, cluster, jobs, scale_factor=scale_factor,
                                 combinations=combinations, runnable=runnable, ids=ids)
        if servers is not None and not np.array_equal(servers.capacity, self._rows.capacity):
            raise InputError("servers do not match the cluster's GPU counts", argument="servers")
        self._t = np.zeros((self._rows.n_rows, self._rows.k))
        self._e = np.zeros(self._rows.n_rows)
        self._rounds = 0
        self._placement: Placement | None = None
        self._restarts = 0

    # -- state -------------------------------------------------------------------------------
    @property
    def target(self) -> np.ndarray:
        """The target allocation being realised (read-only)."""
        return self._rows.target

    @property
    def received(self) -> np.ndarray:
        """Time each row has received on each type (a read-only copy)."""
        return readonly(self._t.copy())

    @property
    def elapsed(self) -> np.ndarray:
        """Time since each row entered (a read-only copy)."""
        return readonly(self._e.copy())

    @property
    def rounds(self) -> int:
        """Number of rounds run."""
        return self._rounds

    @property
    def row_labels(self) -> tuple[Hashable, ...]:
        """Labels of the rows (job ids, or tuples of job ids for combinations)."""
        return self._rows.row_labels

    @property
    def received_fraction(self) -> np.ndarray:
        """``received / elapsed`` per row and type (0 for rows with no elapsed time)."""
        e = self._e[:, None]
        return readonly(np.where(e > 0, self._t / np.where(e > 0, e, 1.0), 0.0))

    @property
    def error(self) -> float:
        """``max |received_fraction - target|`` over rows and types."""
        return float(np.abs(self.received_fraction - self._rows.target).max())

    @property
    def shortfall(self) -> float:
        """``max (target - received_fraction)^+``: how far the worst row is behind."""
        return float(np.maximum(self._rows.target - self.received_fraction, 0.0).max())

    @property
    def placement(self) -> Placement | None:
        """Placement of the last round (with ``servers``)."""
        return self._placement

    @property
    def total_restarts(self) -> int:
        """Checkpoint (re)loads over all rounds placed so far."""
        return self._restarts

    # -- rounds ------------------------------------------------------------------------------
    @only_fairalloc_errors
    def next_round(self) -> RoundAssignment:
        """The assignment the next round would get, without running it."""
        return _assignment(self._rows, self._t, self._e, self._eligible, self._fraction)

    @only_fairalloc_errors
    def step(self) -> RoundAssignment:
        """Decide, place (with ``servers``) and run one round; return its assignment."""
        a = self.next_round()
        if self._layout is not None:
            p = place(a, self._layout, previous=self._placement,
                      lease_renewal=self._lease_renewal)
            self._placement = p
            self._restarts += p.restarts
            a = dataclasses.replace(a, placement=p)
        rows = a.selection
        self._t[rows, a.type_index[rows]] += self._duration
        self._e += self._duration
        self._rounds += 1
        return a

    @only_fairalloc_errors
    def run(self, rounds: int) -> np.ndarray:
        """Run ``rounds`` rounds; return :attr:`error` after each of them."""
        if isinstance(rounds, bool) or not isinstance(rounds, int | np.integer) or rounds < 0:
            raise InputError(f"rounds must be a non-negative integer, got {rounds!r}",
                             argument="rounds")
        out = np.empty(int(rounds))
        for i in range(int(rounds)):
            self.step()
            out[i] = self.error
        return readonly(out)

    @only_fairalloc_errors
    def update(
        self,
        target: Any,
        jobs: Jobs | None = None,
        *,
        scale_factor: Any = None,
        combinations: Sequence[Sequence[int]] | None = None,
        runnable: Any = None,
        ids: Sequence[Hashable] | None = None,
        reset: bool = False,
    ) -> None:
        """Change the target (a recomputed allocation) and possibly the set of jobs.

        Rows are matched by label (job id, or tuple of job ids): rows that persist keep their
        received and elapsed time, new rows start from zero, rows that left are dropped. With
        ``reset=True`` the history of every row restarts from zero (Gavel resets it when the
        allocation is recomputed). Leases of persisting jobs are kept.
        """
        rows = _build_rows(target, self._cluster, jobs, scale_factor=scale_factor,
                           combinations=combinations, runnable=runnable, ids=ids)
        t = np.zeros((rows.n_rows, rows.k))
        e = np.zeros(rows.n_rows)
        if not reset:
            old = {label: i for i, label in enumerate(self._rows.row_labels)}
            idx = np.array([old.get(label, -1) for label in rows.row_labels], dtype=np.int64)
            ok = idx >= 0
            t[ok] = self._t[idx[ok]]
            e[ok] = self._e[idx[ok]]
        if self._placement is not None:
            self._placement = self._placement._for_jobs(rows.job_ids)
        self._rows, self._t, self._e = rows, t, e

    def __repr__(self) -> str:
        return (f"RoundScheduler(rows={self._rows.n_rows}, types={self._rows.types}, "
                f"rounds={self._rounds}, error={self.error:.3g})")
