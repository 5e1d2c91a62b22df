"""The fast path's Lagrangian relaxation over round counts (module docstring of
`fairalloc.schedule`, method ``"fast"``).

Utility depends only on how many rounds a job gets, so relaxing the aggregate capacity
``sum_j w_j n_j <= M*T`` with a price ``pi`` and the makespan epigraph with multipliers
``kappa`` leaves one independent choice per job on its ``(T+1)``-entry table of per-count
values. Bisection over ``pi`` gives the dual bound and the counts at the critical price;
`_greedy_fill` uses the capacity those counts leave.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .instance import _PlanInstance

# ACCURACY: per-count Lagrangian values within this relative distance of a row's maximum are
# ties (broken towards more rounds)
TIE_RTOL = 1e-13
# ACCURACY: the smallest magnitude a tie tolerance or a price scale is taken relative to
MAGNITUDE_FLOOR = 1e-300
# ACCURACY: the bisection's upper price exceeds every job's best ratio by this relative (and,
# times the table's magnitude, absolute) margin, so that no job wants a round there
PRICE_BRACKET_RTOL = 1e-6
# PERFORMANCE: most bisection steps over the capacity price (stops earlier when the interval
# cannot be halved in floating point)
MAX_BISECTIONS = 200
# PERFORMANCE: most passes that move the marginal jobs to their next choice
MAX_MARGINAL_PASSES = 8
# ACCURACY: the longest remaining time dominates the area term of H when within this relative
# amount of it (then multipliers aimed at the longest job are tried)
LONGEST_DOMINATES_RTOL = 1e-9


def _masked(inst: _PlanInstance, table: np.ndarray) -> np.ndarray:
    """``table`` with counts above each job's useful cap set to -inf."""
    nn = np.arange(inst.T + 1)
    return np.where(nn[None, :] <= inst.cap[:, None], table, -np.inf)


def _restart_lower(inst: _PlanInstance) -> np.ndarray:
    """Per-job count table with the least restart penalty a count implies (0 or one start)."""
    gp = inst.gval.copy()
    if inst.eta > 0:
        gp[:, 1:] -= inst.eta * (~inst.running)[:, None]
    return gp


@dataclass
class _LagrangianDual:
    """The Lagrangian dual at one (price, makespan multipliers) point."""

    value: float
    pi: float
    kappa: np.ndarray
    phi: np.ndarray  # (N, T+1) per-count Lagrangian values (-inf outside the domain)


def _phi(inst: _PlanInstance, gpm: np.ndarray, pi: float, kappa: np.ndarray) -> np.ndarray:
    nn = np.arange(inst.T + 1, dtype=float)
    return gpm - pi * inst.w[:, None] * nn[None, :] - kappa[:, None] * inst.rem


def _argmax_last(phi: np.ndarray) -> np.ndarray:
    """Largest maximiser per row (ties to more rounds)."""
    best = phi.max(axis=1, keepdims=True)
    tol = TIE_RTOL * np.maximum(np.abs(best), MAGNITUDE_FLOOR)
    hit = phi >= best - tol
    return phi.shape[1] - 1 - np.argmax(hit[:, ::-1], axis=1)


def _bisect_price(inst: _PlanInstance, gpm: np.ndarray, kappa: np.ndarray
                  ) -> tuple[_LagrangianDual, np.ndarray, np.ndarray]:
    """Minimise the Lagrangian dual over the capacity price for fixed makespan weights.

    Returns the dual at the smallest price whose demand fits, its counts and the counts just
    below that price (the marginal jobs' next choices).
    """
    C = inst.capacity
    w = inst.w
    phi0 = _phi(inst, gpm, 0.0, kappa)
    n0 = _argmax_last(phi0)
    if int(w @ n0) <= C:
        val = float(phi0.max(axis=1).sum())
        return _LagrangianDual(val, 0.0, kappa, phi0), n0, n0
    nn = np.arange(inst.T + 1, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (phi0[:, 1:] - phi0[:, :1]) / (w[:, None] * nn[None, 1:])
    finite = np.isfinite(ratio)
    top = float(ratio[finite].max(initial=0.0))
    scale = float(np.abs(phi0[np.isfinite(phi0)]).max(initial=0.0)) + MAGNITUDE_FLOOR
    # at this price every job strictly prefers no round
    hi = max(top, 0.0) * (1 + PRICE_BRACKET_RTOL) + PRICE_BRACKET_RTOL * scale
    lo = 0.0
    n_lo = n0
    for _ in range(MAX_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        n_mid = _argmax_last(_phi(inst, gpm, mid, kappa))
        if int(w @ n_mid) <= C:
            hi = mid
        else:
            lo, n_lo = mid, n_mid
    phi = _phi(inst, gpm, hi, kappa)
    n_hi = _argmax_last(phi)
    val = hi * C + float(phi.max(axis=1).sum())
    return _LagrangianDual(val, hi, kappa, phi), n_hi, n_lo


def _greedy_fill(inst: _PlanInstance, gp: np.ndarray, n: np.ndarray, nxt: np.ndarray,
                 kappa: np.ndarray) -> np.ndarray:
    """Use the capacity the Lagrangian counts leave: marginal jobs first, then +1 steps."""
    C = inst.capacity
    w = inst.w
    n = n.copy()
    # marginal jobs: move to their choice just below the critical price, best ratio first
    up = np.flatnonzero(nxt > n)
    if up.size:
        extra = (nxt[up] - n[up]) * w[up]
        gain = (gp[up, nxt[up]] - gp[up, n[up]]) + kappa[up] * (inst.rem[up, n[up]]
                                                                 - inst.rem[up, nxt[up]])
        order = up[np.argsort(-gain / extra, kind="stable")]
        left = C - int(w @ n)
        for _ in range(MAX_MARGINAL_PASSES):
            ext = (nxt[order] - n[order]) * w[order]
            fit = ext <= left
            if not fit.any():
                break
            cand = order[fit]
            take = cand[np.cumsum(ext[fit]) <= left]
            n[take] = nxt[take]
            left = C - int(w @ n)
            order = order[~np.isin(order, take)]  # keep the ratio order
            if order.size == 0:
                break
    # single rounds while capacity remains (bounded by the capacity left)
    left = C - int(w @ n)
    while left > 0:
        room = (n < inst.cap) & (w <= left)
        if not room.any():
            break
        cand = np.flatnonzero(room)
        n1 = n[cand] + 1
        gain = (gp[cand, n1] - gp[cand, n[cand]]) + kappa[cand] * (
            inst.rem[cand, n[cand]] - inst.rem[cand, n1])
        best = int(np.argmax(gain / w[cand]))
        if gain[best] <= 0:
            break
        j = cand[best]
        n[j] += 1
        left -= int(w[j])
    return n


def _kappa_candidates(inst: _PlanInstance, n_inc: np.ndarray | None) -> list[np.ndarray]:
    """Makespan multipliers to try (each a valid split of lam/Z0 over the pieces of H)."""
    c = inst.coef
    N = inst.N
    if c == 0:
        return [np.zeros(N)]
    out = []
    if inst.makespan == "paper":
        out.append(c * inst.w / inst.M)
    rem = inst.rem[np.arange(N), n_inc] if n_inc is not None else inst.rem[:, 0]
    jstar = int(np.argmax(rem))
    longest = float(rem[jstar])
    area = float(rem @ inst.w / inst.M)
    if inst.makespan == "max_remaining" or longest >= area * (1 - LONGEST_DOMINATES_RTOL):
        for theta in ((1.0, 0.5) if inst.makespan == "paper" else (1.0,)):
            kap = (1 - theta) * c * inst.w / inst.M if inst.makespan == "paper" else np.zeros(N)
            kap = kap.copy()
            kap[jstar] += theta * c
            out.append(kap)
    return out


