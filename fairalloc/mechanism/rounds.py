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
zero target gives priority 0. `fairalloc.schedule_round` sorts all ``(row, type)``
pairs by priority (numpy ``lexsort``; ties broken by the *deficit* ``X e - t``, then the target,
then the larger gang, then row and type index) and walks them greedily, exactly as Algorithm 1: a
pair is taken when its gang (``scale_factor`` workers) fits in the type's remaining workers and none
of its jobs already runs this round; a pair that does not fit is skipped (``continue``), and a taken
combination removes every combination that shares a job with it. The walk is vectorised: it
accepts, in one numpy step, the longest run of pairs whose outcome is already decided, and only
revisits the pair where a type overflows (so a round costs ``O(E log E)`` for ``E`` pairs, with
about one vectorised pass per accelerator type for single-worker jobs).

Jobs with large gangs are never starved (§5): a row that is not scheduled keeps its received time
while its elapsed time grows, so its priority grows without bound until it is the highest of all;
the first pair of a round is placed into an empty cluster, where any gang that fits the type at
all fits. ``proofs/round_convergence.md`` proves this and the convergence of the received
fractions to ``X``.

Gavel's own code normalises the received fraction per accelerator type
(``f = t / sum_m t[m, j]``, the literal formula of §5); ``fraction="type_share"`` reproduces it,
the default ``"elapsed"`` compares each row's own time fraction with its target, which makes
priorities comparable across types and is what the convergence proofs use.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_array, as_option, fmt_index
from ..data import Cluster, Jobs
from ..errors import InputError, only_fairalloc_errors
from .assignment import RoundAssignment

#: ACCURACY: relative tolerance of the target feasibility checks (looser than FEAS_TOL on
#: purpose: a target may come from any solver, rounded or hand-written)
_TARGET_FEAS_TOL = 1e-6
#: ACCURACY: a pair is "behind" its target when ``t <= X e + _BEHIND_TOL * max(1, e)``
_BEHIND_TOL = 1e-9
#: ACCURACY: received time may exceed elapsed time by this relative (and absolute) round-off
_HISTORY_RTOL = 1e-9
#: ACCURACY: a gang fits when its workers are at most the type's remaining workers plus this
#: round-off (remaining workers are float sums of integers)
_FIT_TOL = 1e-9
#: ACCURACY: when Algorithm 1 orders pairs, a positive target within `_TARGET_SNAP` of a multiple
#: of 10**-`_TARGET_DECIMALS` is read as that multiple: a certified allocation's round-off
#: (0.5 +- 5e-10 for two tied jobs; at most the solve's feasibility tolerance) must not decide
#: which of two tied jobs runs first
_TARGET_DECIMALS = 6
_TARGET_SNAP = 1e-7

#: options of ``eligible=`` (which (row, type) pairs Algorithm 1 may choose)
ELIGIBLE = ("all", "positive", "behind")
#: options of ``fraction=`` (how the received fraction is normalised)
FRACTION = ("elapsed", "type_share")



# --------------------------------------------------------------------------------------------
# validated structure of a round problem: rows (jobs or combinations) x accelerator types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _RoundRows:
    """A validated round problem: rows (jobs, or combinations of jobs) x accelerator types."""

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
    """Accept an array or a policy result with ``x`` (e.g.
    `fairalloc.Allocation`).

    A space-sharing result (``pair_x`` set) becomes one row per job alone (``x`` minus the
    time of the pairs that contain the job) plus one row per pair; ``combinations`` must then
    give the pairs (a `fairalloc.JobPairs`, or a sequence of index pairs).
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
        alone = np.where(alone > -_TARGET_FEAS_TOL, np.maximum(alone, 0.0), alone)
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
) -> _RoundRows:
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
        run = np.asarray(as_array(runnable, "runnable", ndim=2, shape=(n_rows, k),
                                  allow_bool=True)) != 0
    elif jobs is not None:
        can = np.vstack([jobs.throughput > 0, np.ones((1, k), dtype=bool)])
        run = can[members].all(axis=1)
    else:
        run = np.ones((n_rows, k), dtype=bool)
    run = run & (row_sf[:, None] <= cap[None, :])

    # the target must be a feasible allocation (§3.1 constraints)
    over = X > 1.0 + _TARGET_FEAS_TOL
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
    over = job_time > 1.0 + _TARGET_FEAS_TOL
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise InputError(
            f"target gives job {i} ({job_ids[i]!r}) a total time fraction of {job_time[i]:.6g} "
            f"> 1 over all types and combinations", argument="target", index=(i,),
        )
    load = (X * row_sf[:, None]).sum(axis=0)
    over = load > cap * (1.0 + _TARGET_FEAS_TOL) + _TARGET_FEAS_TOL
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
    return _RoundRows(X, members, row_sf, run, cap, types, job_ids, row_labels, combos)


def _row_label(job_ids: tuple[Hashable, ...], members: np.ndarray, n_jobs: int) -> str:
    """Readable label of a row for error messages."""
    ids = [repr(job_ids[int(i)]) for i in members if int(i) < n_jobs]
    return "job " + ids[0] if len(ids) == 1 else "jobs " + ", ".join(ids)


def _history(rows: _RoundRows, received: Any, elapsed: Any) -> tuple[np.ndarray, np.ndarray]:
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
    over = total > e * (1.0 + _HISTORY_RTOL) + _HISTORY_RTOL
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


def _snapped(X: np.ndarray) -> np.ndarray:
    """``X`` with each positive target within `_TARGET_SNAP` of a grid point (multiples of
    10**-`_TARGET_DECIMALS`) set to it; every other entry (zeros included) kept exactly."""
    grid = np.round(X, _TARGET_DECIMALS)
    return np.where((grid > 0) & (np.abs(X - grid) <= _TARGET_SNAP), grid, X)


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
        over = clean & (cum > rem[t] + _FIT_TOL)
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
        if p == p1 and p1 < p2 and w[p] <= rem[t[p]] + _FIT_TOL and not used[mem[p]].any():
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


def _candidates(rows: _RoundRows, t: np.ndarray, e: np.ndarray, eligible: str, fraction: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Priorities, deficits and the two candidate batches: (row, type) pairs with a positive
    target, and (``eligible="all"``) runnable pairs with a zero target, each as flat indices
    in ascending (row, type) order. Every positive-target pair has priority > 0, so the whole
    first batch precedes the second in Algorithm 1's order."""
    X = rows.target
    Xs = _snapped(X)
    pr = _priority(Xs, t, e, fraction)
    deficit = Xs * e[:, None] - t
    positive = rows.runnable & (X > 0)
    if eligible == "behind":
        positive &= deficit >= -_BEHIND_TOL * np.maximum(1.0, e)[:, None]
    first = np.flatnonzero(positive.ravel())
    if eligible == "all":
        second = np.flatnonzero((rows.runnable & (X <= 0)).ravel())
    else:
        second = np.zeros(0, dtype=np.int64)
    return pr, deficit, first, second


def _in_order(rows: _RoundRows, pr: np.ndarray, deficit: np.ndarray, cand: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Sort flat candidates by priority, then deficit, target, gang (descending), then row and
    type (ascending: the candidates' own order, kept by the stable sorts)."""
    k = rows.k
    cr, ct = np.divmod(cand, k)
    order = _sorted(-pr.ravel()[cand], -deficit.ravel()[cand],
                    -_snapped(rows.target).ravel()[cand], -rows.row_sf[cr])
    return cr[order], ct[order]


def _assignment(
    rows: _RoundRows, t: np.ndarray, e: np.ndarray, eligible: str, fraction: str
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
        jobs; no job runs in two rows of the same round. With a `fairalloc.JobPairs`
        (or, for a space-sharing allocation, a sequence of ``(a, b)`` pairs), the rows are the
        jobs alone followed by the pairs; a space-sharing
        `fairalloc.Allocation` is split into these rows (``x`` minus pair
        time, then ``pair_x``).
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
    eligible = as_option(eligible, "eligible", ELIGIBLE)
    fraction = as_option(fraction, "fraction", FRACTION)
    rows = _build_rows(target, cluster, jobs, scale_factor=scale_factor,
                       combinations=combinations, runnable=runnable, ids=ids)
    t, e = _history(rows, received, elapsed)
    return _assignment(rows, t, e, eligible, fraction)
