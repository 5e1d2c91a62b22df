"""MILP building blocks (named column layout, row accumulator, the backend runner, unary
steps, secant cuts) and the whole plan as one MILP (``method="milp"``).

Every program names its variable blocks in a `_ColumnLayout` (name and slice of each
block, in order), so no column offset is computed by hand and adding a block cannot shift
another's columns silently.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..backends import Backend, LinearProgram, get_backend
from .instance import _makespan, _PlanInstance, _pow2

# ACCURACY: the MILP's objective is scaled by a power of two near 1 / (this quantile of the
# nonzero |per-step gains|), so typical coefficients are O(1) for the solver's tolerances
OBJECTIVE_SCALE_QUANTILE = 0.9
# ACCURACY: the makespan and restart coefficients stay below this after scaling
MAX_SCALED_COEFFICIENT = 1e12
# ACCURACY: consecutive step gains that rise by more than this relative amount make a job's
# log UTIL non-concave (its unary steps then get binary order chains)
CONCAVITY_RTOL = 1e-12
# ACCURACY: consecutive secant slopes of R this close (relative, absolute) are merged
SLOPE_RTOL = 1e-12
SLOPE_ATOL = 1e-9
# PERFORMANCE: the time limit handed to the solver when the call's deadline has passed (a
# positive limit: the solver still returns its start or first incumbent)
EXPIRED_TIME_LIMIT = 1e-3


@dataclass(frozen=True)
class _ColumnBlock:
    """One variable block of a program: its name, first column and number of columns."""

    name: str
    start: int
    size: int

    @property
    def cols(self) -> slice:
        """The block's columns as a slice."""
        return slice(self.start, self.start + self.size)

    def at(self, i: Any) -> Any:
        """Column of the block's ``i``-th variable (``i`` an int or an int array)."""
        return self.start + i

    def all(self) -> np.ndarray:
        """Every column of the block, in order."""
        return np.arange(self.start, self.start + self.size)


@dataclass(frozen=True)
class _ColumnLayout:
    """The variable blocks of one program, in column order (each block's name and slice)."""

    blocks: tuple[_ColumnBlock, ...]
    ncols: int

    @classmethod
    def of(cls, sizes: Sequence[tuple[str, int]]) -> _ColumnLayout:
        """Consecutive blocks of the given ``(name, size)``, starting at column 0."""
        blocks, start = [], 0
        for name, size in sizes:
            blocks.append(_ColumnBlock(name, start, int(size)))
            start += int(size)
        return cls(tuple(blocks), start)

    def __getitem__(self, name: str) -> _ColumnBlock:
        for block in self.blocks:
            if block.name == name:
                return block
        raise KeyError(name)


class _MilpRows:
    """Sparse row accumulator (COO triplets) with row bounds, for one program."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.m = 0

    def add(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, count: int,
            lo: Any, hi: Any) -> None:
        """Add ``count`` rows; ``rows`` are local indices 0..count-1."""
        if count == 0:
            return
        self.r.append(np.asarray(rows, dtype=np.int64) + self.m)
        self.c.append(np.asarray(cols, dtype=np.int64))
        self.v.append(np.asarray(vals, dtype=float))
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)))
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)))
        self.m += count

    def matrix(self, ncols: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        if not self.r:
            return sp.csr_matrix((0, ncols)), np.zeros(0), np.zeros(0)
        A = sp.csr_matrix((np.concatenate(self.v), (np.concatenate(self.r),
                                                    np.concatenate(self.c))),
                          shape=(self.m, ncols))
        return A, np.concatenate(self.lo), np.concatenate(self.hi)



def _steps(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ragged unary steps s = lo_j+1..hi_j: owner job, count s, and per-job offsets."""
    m = hi - lo
    owner = np.repeat(np.arange(lo.size), m)
    off = np.cumsum(m) - m
    s = lo[owner] + 1 + (np.arange(owner.size) - off[owner])
    return owner, s, off


def _objective_scale(delta: np.ndarray, inst: _PlanInstance) -> float:
    """Scale so that typical objective coefficients are O(1) for the MILP solver's tolerances.

    A power of two near ``1 / (90th percentile of |delta|)`` (exact scaling), lowered where
    needed so that the makespan and restart coefficients stay below ``1e12``.
    """
    mag = np.abs(delta[np.abs(delta) > 0])
    if mag.size == 0:
        sigma = 1.0
    else:
        sigma = _pow2(1.0 / float(np.quantile(mag, OBJECTIVE_SCALE_QUANTILE)))
    big = max(inst.coef * inst.tau, inst.eta)
    if big * sigma > MAX_SCALED_COEFFICIENT:
        sigma = _pow2(MAX_SCALED_COEFFICIENT / big)
    return sigma


def _concave_break(delta: np.ndarray, owner: np.ndarray, s: np.ndarray,
                   lo: np.ndarray) -> np.ndarray:
    """Per job: whether its step values increase anywhere (log UTIL convex somewhere)."""
    nj = lo.size
    if delta.size < 2:
        return np.zeros(nj, dtype=bool)
    same = owner[1:] == owner[:-1]
    scale = np.maximum(np.abs(delta[1:]), np.abs(delta[:-1]))
    rise = same & (delta[1:] > delta[:-1] + CONCAVITY_RTOL * scale)
    out = np.zeros(nj, dtype=bool)
    out[owner[1:][rise]] = True
    return out


def _rem_cuts(rem: np.ndarray, rows_of: np.ndarray, lo: np.ndarray, hi: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Secant cuts ``r_i - slope * n_i >= icpt`` of the convex ``R`` on ``[lo_i, hi_i]``.

    ``i`` indexes ``lo``/``hi``; ``rows_of[i]`` is its row of ``rem``. Secants between
    consecutive integers are exact at integer counts; consecutive equal slopes are merged.
    Returns the owner ``i`` of each cut, its slope and its intercept.
    """
    m = hi - lo
    jj = np.repeat(np.arange(lo.size), m)
    off = np.cumsum(m) - m
    s = lo[jj] + (np.arange(jj.size) - off[jj])
    rr = rows_of[jj]
    slope = rem[rr, s + 1] - rem[rr, s]
    keep = np.ones(jj.size, dtype=bool)
    if jj.size > 1:
        keep[1:] = ~((jj[1:] == jj[:-1]) & np.isclose(slope[1:], slope[:-1], rtol=SLOPE_RTOL,
                                                       atol=SLOPE_ATOL))
    jj, s, slope, rr = jj[keep], s[keep], slope[keep], rr[keep]
    return jj, slope, rem[rr, s] - slope * s


@dataclass(frozen=True)
class _MilpRunner:
    """The backend that runs every MILP of one call (immutable: each solve's statistics are
    returned with its solution, see `_raw_status`).

    The default ``"highs"`` (a core dependency) is instantiated at each solve, so a plan the
    fast path certifies alone never imports the solver package; any other backend is resolved
    (and its availability checked) up front by `of`.
    """

    name: str
    threads: int | None
    resolved: Backend | None = None
    node_limit: int | None = None  # branch-and-bound nodes per solve (a work limit)

    @classmethod
    def of(cls, backend: str | Backend, threads: int | None,
           node_limit: int | None = None) -> _MilpRunner:
        if isinstance(backend, str) and backend == "highs":
            return cls("highs", threads, node_limit=node_limit)
        resolved = get_backend(backend, need="milp")
        return cls(resolved.name, threads, resolved, node_limit)

    def solve(self, lp: LinearProgram, time_limit: float | None, mip_gap: float,
              start: np.ndarray | None = None) -> Any:
        if time_limit is not None and time_limit <= 0:
            time_limit = EXPIRED_TIME_LIMIT
        backend = self.resolved if self.resolved is not None else get_backend(self.name,
                                                                              need="milp")
        if self.node_limit is None:  # (a backend without the option is not warned about)
            return backend.solve_lp(lp, time_limit=time_limit, gap_tol=mip_gap,
                                    threads=self.threads, start=start)
        return backend.solve_lp(lp, time_limit=time_limit, gap_tol=mip_gap,
                                threads=self.threads, start=start, node_limit=self.node_limit)


def _raw_status(sol: Any) -> str:
    """The backend's own status string of one solve (its canonical status if it gave none)."""
    return str(sol.raw_status or sol.status)


def _has_point(sol: Any, lp: LinearProgram) -> bool:
    """Whether the solve returned a usable point of the right size (a backend may report a
    status with a point attached but hand back none, e.g. HiGHS's ``Empty`` model status)."""
    return bool(sol.usable) and sol.x is not None and sol.x.shape == (lp.shape[1],)


def _max_bound(lp: LinearProgram, sol: Any, sigma: float) -> float:
    """Upper bound on the maximised (unscaled) objective from a solve of the scaled minimum.

    A MILP's best bound comes from HiGHS; a program left with no integer column (nothing to
    decide) is an LP solved to optimality, whose objective is its own bound.
    """
    if lp.is_mip:
        b = float(sol.mip_dual_bound)
        return -b / sigma if math.isfinite(b) else math.inf
    return -float(sol.objective) / sigma if sol.status == "optimal" else math.inf



def _schedule_milp(inst: _PlanInstance, wc: str, *, time_limit: float | None,
                   mip_gap: float, solver: _MilpRunner, start_x: np.ndarray | None = None,
                   min_count: np.ndarray | None = None
                   ) -> tuple[np.ndarray | None, float, Any, LinearProgram]:
    """The whole plan as one MILP (binary x, unary increments, epigraphs, App. H rows).

    Column blocks (in order): ``x`` (jobs x rounds, binary), ``count`` (``n_j``), ``step``
    (unary increments ``y[j, s]``), ``load`` (GPUs used per round), ``remaining`` (``R_j``
    epigraphs, with a makespan term), ``makespan`` (``H``), ``finished`` (App. H finish
    indicators, ``work_conservation="exact"``), ``restart`` (restart indicators, with a restart
    penalty). ``start_x`` (a feasible schedule) becomes HiGHS's first incumbent, with every
    auxiliary column computed from it. ``min_count`` (per job) bounds each job's round count
    from below (the hard finish-time constraints of ``plan_schedule(remaining_limit=)``).
    """
    N, T, M = inst.N, inst.T, inst.M
    act = np.flatnonzero(inst.cap > 0)
    na = act.size
    w = inst.w[act]
    cap = inst.cap[act]
    fin = inst.finish[act]
    gval = inst.gval[act]
    nx = na * T
    zeros = np.zeros(na, dtype=np.int64)
    owner, s, _ = _steps(zeros, cap)
    ny = owner.size
    use_h = inst.coef > 0
    nr = na if use_h else 0
    if wc == "exact":
        fmask = np.arange(T)[None, :] >= fin[:, None]  # finished possible from round fin on
        fj, ft = np.nonzero(fmask)
    else:
        fj = ft = np.zeros(0, dtype=np.int64)
    nf = fj.size
    use_s = inst.eta > 0
    layout = _ColumnLayout.of([("x", nx), ("count", na), ("step", ny), ("load", T),
                               ("remaining", nr), ("makespan", 1 if use_h else 0),
                               ("finished", nf), ("restart", nx if use_s else 0)])
    xb, nb, yb, loadb = layout["x"], layout["count"], layout["step"], layout["load"]
    rb, hb, fb, sb = (layout["remaining"], layout["makespan"], layout["finished"],
                      layout["restart"])
    ncols = layout.ncols

    delta = gval[owner, s] - gval[owner, s - 1]
    sigma = _objective_scale(delta, inst)
    c = np.zeros(ncols)
    c[yb.cols] = -delta * sigma
    lo = np.zeros(ncols)
    hi = np.ones(ncols)
    integ = np.zeros(ncols, dtype=bool)
    integ[xb.cols] = True
    hi[nb.cols] = cap
    if min_count is not None:
        lo[nb.cols] = min_count[act]
    hi[loadb.cols] = M
    bent = _concave_break(delta, owner, s, zeros)
    integ[yb.cols] = bent[owner]
    integ[fb.cols] = True
    if use_h:
        hi[rb.cols] = np.inf
        hi[hb.start] = np.inf
        c[hb.start] = inst.coef * inst.tau * sigma
    if use_s:
        c[sb.cols] = inst.eta * sigma

    rows = _MilpRows()
    xj = np.repeat(np.arange(na), T)
    xt = np.tile(np.arange(T), na)
    xcol = xb.at(xj * T + xt)
    # n_j - sum_t x_jt = 0
    rows.add(np.concatenate([np.arange(na), xj]), np.concatenate([nb.all(), xcol]),
             np.concatenate([np.ones(na), -np.ones(nx)]), na, 0.0, 0.0)
    # sum_s y_js - n_j = 0
    rows.add(np.concatenate([owner, np.arange(na)]), np.concatenate([yb.all(), nb.all()]),
             np.concatenate([np.ones(ny), -np.ones(na)]), na, 0.0, 0.0)
    # order chains for non-concave jobs: y_js >= y_j,s+1
    chain = np.flatnonzero(bent[owner[:-1]] & (owner[1:] == owner[:-1])) if ny > 1 else \
        np.zeros(0, dtype=np.int64)
    k = chain.size
    rows.add(np.repeat(np.arange(k), 2), yb.at(np.stack([chain, chain + 1], 1).ravel()),
             np.tile([1.0, -1.0], k), k, 0.0, np.inf)
    # load_t - sum_j w_j x_jt = 0
    rows.add(np.concatenate([np.arange(T), xt]), np.concatenate([loadb.all(), xcol]),
             np.concatenate([np.ones(T), -w[xj].astype(float)]), T, 0.0, 0.0)
    if use_h:
        jj, slope, icpt = _rem_cuts(inst.rem / inst.tau, act, zeros, cap)
        ncut = jj.size
        rows.add(np.repeat(np.arange(ncut), 2),
                 np.stack([rb.at(jj), nb.at(jj)], 1).ravel(),
                 np.stack([np.ones(ncut), -slope], 1).ravel(), ncut, icpt, np.inf)
        rows.add(np.repeat(np.arange(nr), 2),
                 np.stack([np.full(nr, hb.start), rb.all()], 1).ravel(),
                 np.tile([1.0, -1.0], nr), nr, 0.0, np.inf)
        if inst.makespan == "paper":
            rows.add(np.zeros(nr + 1), np.concatenate([[hb.start], rb.all()]),
                     np.concatenate([[1.0], -w / M]), 1, 0.0, np.inf)
    if wc == "exact":
        # load_t + K_j (x_jt + f_jt) >= K_j,  K_j = M - w_j + 1
        K = (M - w + 1).astype(float)
        fidx = np.full((na, T), -1, dtype=np.int64)
        fidx[fj, ft] = np.arange(nf)
        r0 = np.arange(nx)
        has_f = fidx[xj, xt] >= 0
        rr = np.concatenate([r0, r0, r0[has_f]])
        cc = np.concatenate([loadb.at(xt), xcol, fb.at(fidx[xj, xt][has_f])])
        vv = np.concatenate([np.ones(nx), K[xj], K[xj][has_f]])
        rows.add(rr, cc, vv, nx, K[xj], np.inf)
        # f_jt <= f_j,t+1 ; f_jt + x_jt <= 1 ; fin_j f_jt - n_j <= 0
        nxt = np.flatnonzero((ft[:-1] + 1 == ft[1:]) & (fj[:-1] == fj[1:])) if nf > 1 else \
            np.zeros(0, dtype=np.int64)
        m1 = nxt.size
        rows.add(np.repeat(np.arange(m1), 2), fb.at(np.stack([nxt, nxt + 1], 1).ravel()),
                 np.tile([1.0, -1.0], m1), m1, -np.inf, 0.0)
        rows.add(np.repeat(np.arange(nf), 2),
                 np.stack([fb.all(), xb.at(fj * T + ft)], 1).ravel(),
                 np.ones(2 * nf), nf, -np.inf, 1.0)
        rows.add(np.repeat(np.arange(nf), 2),
                 np.stack([fb.all(), nb.at(fj)], 1).ravel(),
                 np.stack([fin[fj].astype(float), -np.ones(nf)], 1).ravel(), nf, -np.inf, 0.0)
    if use_s:
        # s_jt - x_jt + x_j,t-1 >= 0 (t >= 1);  s_j0 - x_j0 >= -running_j
        first = xt == 0
        rr = np.concatenate([np.arange(nx), np.arange(nx), np.arange(nx)[~first]])
        cc = np.concatenate([sb.all(), xcol, xcol[~first] - 1])
        vv = np.concatenate([np.ones(nx), -np.ones(nx), np.ones(int((~first).sum()))])
        rlo = np.where(first, -inst.running[act][xj].astype(float), 0.0)
        rows.add(rr, cc, vv, nx, rlo, np.inf)
    A, rl, ru = rows.matrix(ncols)
    offset = -float(inst.gval[:, 0].sum()) * sigma
    lp = LinearProgram.build(c, A, rl, ru, lo, hi, integrality=integ, offset=offset)
    start = None
    if start_x is not None:
        xs = start_x[act]
        cnt = xs.sum(axis=1)
        start = np.zeros(ncols)
        start[xb.cols] = xs.ravel()
        start[nb.cols] = cnt
        start[yb.cols] = cnt[owner] >= s
        start[loadb.cols] = w @ xs
        if use_h:
            start[rb.cols] = inst.rem[act, cnt] / inst.tau
            start[hb.start] = float(_makespan(inst, inst.rem[np.arange(N), start_x.sum(axis=1)])
                                    ) / inst.tau
        if nf:
            before = np.cumsum(xs, axis=1) - xs
            start[fb.cols] = before[fj, ft] >= fin[fj]
        if use_s:
            prev = np.concatenate([inst.running[act][:, None], xs[:, :-1]], axis=1)
            start[sb.cols] = (xs & ~prev).ravel()
    sol = solver.solve(lp, time_limit, mip_gap, start=start)
    if not _has_point(sol, lp):
        return None, math.inf, sol, lp
    x = np.zeros((N, T), dtype=bool)
    x[act] = sol.x[xb.cols].reshape(na, T) > 0.5
    bound = _max_bound(lp, sol, sigma)
    # the certificate works on the unscaled program
    lp_unscaled = dataclasses.replace(lp, c=lp.c / sigma, offset=lp.offset / sigma)
    return x, bound, sol, lp_unscaled
