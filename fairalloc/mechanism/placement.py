"""Placement of a round onto physical GPUs (Gavel §5, §6): `fairalloc.place`.

`fairalloc.place` maps a round's assignment onto physical GPUs
(`fairalloc.ServerLayout`): first every job that ran last round on exactly the gang
of GPUs it needs now, of the right type, keeps them (a *lease renewal*, §6: no checkpoint/restart);
the other jobs are placed in decreasing order of requested workers, each on as few servers as
possible (best fit: the fullest server that still holds the whole gang; a gang larger than every
server's free GPUs takes the servers with the most free GPUs first and best-fits its remainder).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_bool
from ..errors import InputError, only_fairalloc_errors
from .assignment import Placement, RoundAssignment, ServerLayout, _members


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
        The round (from `fairalloc.schedule_round` or
        `fairalloc.RoundScheduler`).
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
    >>> from fairalloc import Cluster
    >>> from fairalloc.mechanism import RoundScheduler
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
