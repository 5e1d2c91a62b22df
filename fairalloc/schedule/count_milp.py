"""The fast path's exact core: a count-level MILP on the reduced-cost core, with the
valid inequalities per-round capacity implies for gangs (module docstring of
`fairalloc.schedule`, method ``"fast"``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..backends import LinearProgram
from .instance import _PlanInstance
from .milp import (
    _ColumnLayout,
    _concave_break,
    _has_point,
    _max_bound,
    _MilpRows,
    _MilpRunner,
    _objective_scale,
    _raw_status,
    _rem_cuts,
    _steps,
)

# PERFORMANCE: cover-cut separation looks at the prefixes of at most this many jobs
COVER_CUT_MAX_SET = 256


def _packing_cuts(inst: _PlanInstance) -> tuple[list[np.ndarray], list[int], list[np.ndarray]]:
    """Valid count inequalities implied by per-round capacity with gangs.

    * cardinality: at most ``floor(M/s)`` jobs of size ``>= s`` share a round, so
      ``sum_{w_j >= s} n_j <= floor(M/s) * T`` (kept where not implied);
    * cliques: jobs larger than ``M/2`` never share a round, nor does any of them with a job
      of size ``> M - a`` where ``a`` is the smallest of them: ``n_i + sum_{w_j >= a} n_j <= T``
      for every such small job ``i`` (one linking variable per ``a``).

    Returns (cardinality sets, their right-hand sides, clique pairs ``[C_a, G_a]``).
    """
    M, T = inst.M, inst.T
    act = inst.cap > 0
    sizes = np.unique(inst.w[act])
    sets, rhs, cliques = [], [], []
    for size in sizes:
        members = act & (inst.w >= size)
        q = M // int(size)
        if int(inst.cap[members].sum()) > q * T:
            sets.append(members)
            rhs.append(q * T)
    for big in sizes[2 * sizes > M]:
        clique = act & (inst.w >= big)
        small = act & (2 * inst.w <= M) & (inst.w > M - big)
        if small.any():
            cliques.append(np.stack([clique, small]))
    return sets, rhs, cliques


def _fit_count(sizes: np.ndarray, M: int) -> int:
    """Most of ``sizes`` that fit together in ``M`` GPUs (smallest first)."""
    return int(np.searchsorted(np.cumsum(np.sort(sizes)), M, side="right"))


def _cover_cut(inst: _PlanInstance, n: np.ndarray, *, max_size: int = COVER_CUT_MAX_SET
               ) -> tuple[np.ndarray, int] | None:
    """A violated cardinality cut ``sum_S n_j <= k(S) T`` for counts ``n``, or None.

    At most ``k(S)`` jobs of ``S`` run together (``k(S)`` = how many of their smallest gangs
    fit in ``M``), so every schedule has ``sum_{j in S} n_j <= k(S) * T`` -- this covers the
    cover inequalities (``k = |S| - 1`` for a set whose gangs overflow a round). Separation
    tries the prefixes of two orders (most rounds first; cheapest ``(T - n_j)/w_j`` first)
    and returns the most violated set.
    """
    T, M = inst.T, inst.M
    live = np.flatnonzero(n > 0)
    if live.size < 2:
        return None
    w = inst.w
    orders = (live[np.lexsort((-w[live], -n[live]))],
              live[np.lexsort((-w[live], (T - n[live]) / w[live]))])
    best, best_set = 0, None
    for order in orders:
        order = order[:max_size]
        csum = np.cumsum(n[order])
        for size in range(2, order.size + 1):
            k = _fit_count(w[order[:size]], M)
            excess = int(csum[size - 1]) - k * T
            if excess > best:
                best, best_set = excess, (order[:size], k)
    if best_set is None:
        return None
    mask = np.zeros(inst.N, dtype=bool)
    mask[best_set[0]] = True
    return mask, best_set[1] * T




def _count_milp(inst: _PlanInstance, gp: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
                time_limit: float | None, mip_gap: float, solver: _MilpRunner,
                extra_cuts: Sequence[tuple[np.ndarray, int]] = ()
                ) -> tuple[np.ndarray | None, float, int, str]:
    """Exact count-level MILP on the count ranges ``[lo_j, hi_j]``.

    Aggregate capacity ``sum_j w_j n_j <= M*T`` plus the gang cuts of `_packing_cuts`
    (a relaxation of per-round capacity), the exact count values ``gp`` by unary increments
    and the makespan epigraph. Column blocks: ``step`` (unary increments of the free jobs),
    ``remaining`` and ``makespan`` (epigraphs, with a makespan term), ``clique`` (one linking
    count per clique group of `_packing_cuts`). Returns (counts or None, upper bound on
    the restricted optimum, nodes, the backend's status).
    """
    N, T = inst.N, inst.T
    free = np.flatnonzero(hi > lo)
    flo, fhi = lo[free], hi[free]
    owner, s, start = _steps(flo, fhi)
    jobs_of = free[owner]
    delta = gp[jobs_of, s] - gp[jobs_of, s - 1]
    ny = owner.size
    rem_t = inst.rem / inst.tau  # remaining times in the time unit tau (a power of two)
    fixed_rem = rem_t[np.arange(N), lo]
    coef = inst.coef
    use_h = coef > 0
    sets, rhs, cliques = _packing_cuts(inst)
    for mask, b in extra_cuts:
        sets.append(mask)
        rhs.append(b)
    nr = free.size if use_h else 0
    layout = _ColumnLayout.of([("step", ny), ("remaining", nr), ("makespan", 1 if use_h else 0),
                               ("clique", len(cliques)), ("count", free.size)])
    yb, rb, hb, mb, nb = (layout["step"], layout["remaining"], layout["makespan"],
                          layout["clique"], layout["count"])
    ncols = layout.ncols
    sigma = _objective_scale(delta, inst)
    c = np.zeros(ncols)
    c[yb.cols] = -delta * sigma
    col_lo = np.zeros(ncols)
    col_hi = np.ones(ncols)
    col_hi[mb.cols] = T
    integ = np.zeros(ncols, dtype=bool)
    rows = _MilpRows()

    def set_row(mask: np.ndarray, extra_cols: np.ndarray, extra_vals: np.ndarray,
                upper: float) -> None:
        """One row ``sum_{j in mask} n_j + extra <= upper`` over the y columns."""
        ycols = yb.at(np.flatnonzero(mask[jobs_of]))
        const = float(lo[mask].sum())
        rows.add(np.zeros(ycols.size + extra_cols.size),
                 np.concatenate([ycols, extra_cols]),
                 np.concatenate([np.ones(ycols.size), extra_vals]), 1, -np.inf, upper - const)

    # aggregate capacity
    room = inst.capacity - int(inst.w @ lo)
    rows.add(np.zeros(ny), yb.all(), inst.w[jobs_of], 1, -np.inf, room)
    for members, b in zip(sets, rhs, strict=True):
        set_row(members, np.zeros(0, dtype=np.int64), np.zeros(0), b)
    for g, (clique, small) in enumerate(cliques):
        col = mb.at(g)
        set_row(clique, np.array([col]), np.array([1.0]), T)
        # n_i <= m_g for the small jobs i of the group
        idx = np.flatnonzero(small)
        sel = small[jobs_of]
        yrows = np.searchsorted(idx, jobs_of[sel])
        rows.add(np.concatenate([yrows, np.arange(idx.size)]),
                 np.concatenate([yb.at(np.flatnonzero(sel)), np.full(idx.size, col)]),
                 np.concatenate([np.ones(int(sel.sum())), -np.ones(idx.size)]),
                 idx.size, -np.inf, -lo[idx].astype(float))
    # order chains where the job's values are not concave on its range
    bent = _concave_break(delta, owner, s, flo)
    chain = bent[owner[:-1]] & (owner[1:] == owner[:-1]) if ny > 1 else np.zeros(0, bool)
    idx = np.flatnonzero(chain)
    k = idx.size
    rows.add(np.repeat(np.arange(k), 2), yb.at(np.stack([idx, idx + 1], 1).ravel()),
             np.tile([1.0, -1.0], k), k, 0.0, np.inf)
    # the counts are integers: one integer column n_j - lo_j = sum_s y_js per free job (a
    # count is one branching decision, not up to T binaries); the steps are binary (with
    # their chains) only where the job's values bend up, else the LP fills them in order
    col_hi[nb.cols] = fhi - flo
    integ[nb.cols] = True
    rows.add(np.concatenate([owner, np.arange(free.size)]),
             np.concatenate([yb.all(), nb.all()]),
             np.concatenate([np.ones(ny), -np.ones(free.size)]), free.size, 0.0, 0.0)
    integ[yb.cols] = bent[owner]
    if use_h:
        c[hb.start] = coef * inst.tau * sigma
        col_hi[rb.cols] = np.inf
        col_hi[hb.cols] = np.inf
        jj, slope, icpt = _rem_cuts(rem_t, free, flo, fhi)
        # r_j - slope * (lo_j + sum_s y_js) >= icpt, expanded over the job's steps
        ncut = jj.size
        per = (fhi - flo)[jj]
        cut_rows = np.repeat(np.arange(ncut), per)
        ycols = yb.at(np.repeat(start[jj], per)) + (np.arange(int(per.sum()))
                                             - np.repeat(np.cumsum(per) - per, per))
        rows.add(np.concatenate([np.arange(ncut), cut_rows]),
                 np.concatenate([rb.at(jj), ycols]),
                 np.concatenate([np.ones(ncut), -np.repeat(slope, per)]),
                 ncut, icpt + slope * flo[jj], np.inf)
        fixed = np.ones(N, dtype=bool)
        fixed[free] = False
        col_lo[hb.start] = float(fixed_rem[fixed].max(initial=0.0))
        rows.add(np.repeat(np.arange(nr), 2),
                 np.stack([np.full(nr, hb.start), rb.all()], 1).ravel(),
                 np.tile([1.0, -1.0], nr), nr, 0.0, np.inf)
        if inst.makespan == "paper":
            const = float(fixed_rem[fixed] @ inst.w[fixed]) / inst.M
            rows.add(np.zeros(nr + 1), np.concatenate([[hb.start], rb.all()]),
                     np.concatenate([[1.0], -inst.w[free] / inst.M]), 1, const, np.inf)
    A, rl, ru = rows.matrix(ncols)
    offset = -float(gp[np.arange(N), lo].sum()) * sigma
    lp = LinearProgram.build(c, A, rl, ru, col_lo, col_hi, integrality=integ, offset=offset)
    sol = solver.solve(lp, time_limit, mip_gap)
    if not _has_point(sol, lp):
        return None, math.inf, 0, _raw_status(sol)
    n = lo.copy()
    n[free] += np.round(sol.x[nb.cols]).astype(np.int64)
    return n, _max_bound(lp, sol, sigma), sol.iterations, _raw_status(sol)


