"""The independent replay check of an elastic fair queuing schedule
(`fairalloc.ReplayCheck`).

A schedule is a simulation, not the solution of an optimisation program: instead of an
optimality certificate it carries this check, which replays the allocation log with code
independent of the event engine (its own interpolation, its own doubling rule, its own sweep
over time) and measures every rule of elastic fair queuing: capacity, α-capped maxima, work
conservation, the work each job received against its GPU-time, and the GPS fixed point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import CertificateError
from ..tolerances import FEAS_TOL
from .curves import _EFF_RTOL

#: ACCURACY: smallest GPU-time scale of the work and GPS residuals, relative to ``M`` times the
#: horizon (a job's relative residual stays finite however tiny its GPU-time)
_SCALE_FLOOR = 1e-9
#: ACCURACY: the GPU power in use may exceed ``M`` by this relative round-off
_POWER_RTOL = 1e-9
#: ACCURACY: two times closer than this fraction of the horizon are the same instant
_INSTANT_RTOL = 1e-12

#: residuals grouped into ReplayCheck.capacity_violation
_CAPACITY_CHECKS = ("capacity", "power")
#: residuals grouped into ReplayCheck.finish_residual (finish times and virtual times)
_FINISH_CHECKS = ("finished", "causal", "gps_service", "virtual_finish", "work", "release",
                  "window")


@dataclass(frozen=True, repr=False)
class ReplayCheck:
    """The independent replay check of a simulated schedule (not an optimality certificate).

    A schedule is not the solution of an optimisation program, so it has no duality gap: the
    check replays every event of the allocation log with code independent of the engine and
    measures how far the schedule is from the rules of elastic fair queuing. Every residual is
    relative to the data's own scale (GPUs, GPU-time, the horizon), so rescaling the arrival
    times and GPU-times by any factor gives the same verdict.

    Parameters
    ----------
    kind : str
        ``"efq_schedule"``.
    events : int
        Allocation-log entries replayed.
    capacity_violation : float
        Largest excess of GPUs (or GPU power) in use over the cluster, relative to ``M``.
    finish_residual : float
        Largest relative residual of the finish times and virtual times: work done at a job's
        finish minus its GPU-time, GPS finish times against the fair-sharing fixed point,
        ``F_j - V(a_j) - L_j``, GPUs held outside ``[a_j, f_j]``, unfinished jobs.
    residuals : dict of str to float
        Every individual check (the two above are maxima over some of them; the others are
        ``integral``, ``max_gpus``, ``gpu_power``, ``work_conserving``).
    tol : float
        Tolerance each residual is checked against (default `fairalloc.tolerances.FEAS_TOL`).

    Notes
    -----
    `fairalloc.queuing.ReplayCheck.ok` is computed from the residuals, never set: it needs a
    finite tolerance and every residual finite and ``<= tol``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> check = fa.efq_schedule([0, 0, 0], [1.0, 2.0, 3.0], 1).check
    >>> check.kind, check.events, check.ok, check.capacity_violation <= check.tol
    ('efq_schedule', 6, True, True)
    """

    kind: str
    events: int
    capacity_violation: float
    finish_residual: float
    residuals: Mapping[str, float]
    tol: float = FEAS_TOL

    @property
    def max_residual(self) -> float:
        """The largest residual of any check (``inf`` if one is not finite)."""
        vals = [float(v) for v in self.residuals.values()]
        vals += [float(self.capacity_violation), float(self.finish_residual)]
        if not all(math.isfinite(v) for v in vals):
            return math.inf
        return max(vals, default=0.0)

    @property
    def primal_residual(self) -> float:
        """Alias of `fairalloc.queuing.ReplayCheck.max_residual` (the name
        optimisation certificates use)."""
        return self.max_residual

    @property
    def ok(self) -> bool:
        """Whether every residual is finite and within the (finite, positive) tolerance."""
        tol = float(self.tol)
        return math.isfinite(tol) and tol > 0.0 and self.max_residual <= tol

    def check(self) -> ReplayCheck:
        """Return ``self`` if `fairalloc.queuing.ReplayCheck.ok`, else raise
        `fairalloc.CertificateError`."""
        if not self.ok:
            worst = max(self.residuals.items(), key=lambda kv: (not math.isfinite(kv[1]), kv[1]),
                        default=("none", 0.0))
            raise CertificateError(
                f"replay check failed ({self.kind}): largest residual {self.max_residual:.3g} "
                f"(tol {self.tol:g}), worst check {worst[0]!r} = {worst[1]:.3g}",
                certificate=self, backend="efq")
        return self

    def __repr__(self) -> str:
        return (f"ReplayCheck({self.kind}, events={self.events}, "
                f"capacity_violation={self.capacity_violation:.2e}, "
                f"finish_residual={self.finish_residual:.2e}, ok={self.ok})")


def _replay_check(res: Mapping[str, float], events: int, tol: float = FEAS_TOL) -> ReplayCheck:
    def worst(names: tuple[str, ...]) -> float:
        vals = [float(res[k]) for k in names if k in res]
        if not all(math.isfinite(v) for v in vals):
            return math.inf
        return max(vals, default=0.0)

    return ReplayCheck(kind="efq_schedule", events=int(events),
                       capacity_violation=worst(_CAPACITY_CHECKS),
                       finish_residual=worst(_FINISH_CHECKS),
                       residuals=dict(res), tol=tol)


def _throughput_at(scaling: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Interpolated throughput at GPU counts ``x`` (searchsorted formulation, for the check)."""
    levels = scaling.shape[1]
    grid = np.exp2(np.arange(levels))
    k = np.clip(np.searchsorted(grid, x, side="right") - 1, 0, levels - 1)
    k1 = np.minimum(k + 1, levels - 1)
    rows = np.arange(scaling.shape[0]) if x.ndim == 1 else np.arange(scaling.shape[0])[:, None]
    x0, x1 = grid[k], grid[k1]
    y0, y1 = scaling[rows, k], scaling[rows, k1]
    w = np.where(x1 > x0, (x - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0)
    return y0 + (y1 - y0) * w


def _independent_caps(requested: np.ndarray, scaling: np.ndarray | None, num_gpus: int,
                      alpha: float) -> np.ndarray:
    """The doubling rule of §3.3 evaluated level by level (used only by the schedule check)."""
    if scaling is None:
        return np.full(requested.shape, float(num_gpus))
    levels = scaling.shape[1]
    top = 2.0 ** (levels - 1)
    per_req = _throughput_at(scaling, requested) / requested
    cap = requested.copy()
    alive = np.ones(requested.shape, dtype=bool)
    for _ in range(levels):  # at most K doublings (loop over levels, not jobs)
        nxt = cap * 2.0
        ok = alive & (nxt <= top)
        eff = np.ones_like(cap)
        eff[ok] = (_throughput_at(scaling[ok], nxt[ok]) / nxt[ok]) / per_req[ok]
        grow = ok & (eff >= alpha * (1.0 - _EFF_RTOL))
        cap = np.where(grow, nxt, cap)
        alive = grow
    return np.minimum(cap, num_gpus)


def _verify_schedule(
    *, num_gpus: int, power: np.ndarray | None, alpha: float, arrival: np.ndarray,
    gpu_time: np.ndarray, requested: np.ndarray, scaling: np.ndarray | None,
    virtual_finish: np.ndarray, gps_finish: np.ndarray, efq_finish: np.ndarray,
    log_t: np.ndarray, log_j: np.ndarray, log_g: np.ndarray, log_p: np.ndarray,
) -> tuple[ReplayCheck, float, dict[str, float]]:
    """Re-check a finished EFQ schedule from its allocation log alone.

    Returns the replay check, the longest busy period (all GPUs allocated) and the residual of
    each check. Nothing computed by the engine except the log and the finish times is used.
    """
    n = arrival.size
    m = float(num_gpus)
    res: dict[str, float] = {}
    # the horizon, in the data's own time unit (no absolute floor: unit invariant)
    horizon = np.abs(np.concatenate([efq_finish, gps_finish, arrival]))
    horizon = horizon[np.isfinite(horizon)]
    tscale = float(np.max(horizon)) if horizon.size else 0.0
    if not tscale > 0.0:
        tscale = float(np.max(gpu_time, initial=0.0)) / m or 1.0
    finite = np.isfinite(efq_finish) & np.isfinite(gps_finish)
    res["finished"] = 0.0 if finite.all() else 1.0
    late = np.maximum(arrival - np.minimum(efq_finish, gps_finish), 0.0) / tscale
    res["causal"] = float(np.max(late, initial=0.0))

    # GPS: the finish times must solve the fair-sharing fixed point. With N(t) the number of
    # jobs with a_j <= t < gps_j and V' = M/N(t), every job receives V(gps_j) - V(a_j) = L_j.
    ev_t = np.concatenate([arrival, gps_finish])
    ev_d = np.concatenate([np.ones(n), -np.ones(n)])
    srt = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[srt], ev_d[srt]
    uniq = np.unique(ev_t)
    last = np.searchsorted(ev_t, uniq, side="right") - 1
    n_after = np.cumsum(ev_d)[last]  # active count on [uniq[u], uniq[u+1])
    seg = np.diff(uniq)
    rate = np.where(n_after[:-1] > 0.5, m / np.maximum(n_after[:-1], 1.0), 0.0)
    v_at = np.concatenate(([0.0], np.cumsum(rate * seg)))
    v_arr = v_at[np.searchsorted(uniq, arrival)]
    v_fin = v_at[np.searchsorted(uniq, gps_finish)]
    vscale = np.maximum(gpu_time, m * tscale * _SCALE_FLOOR)
    res["gps_service"] = float(np.max(np.abs(v_fin - v_arr - gpu_time) / vscale, initial=0.0))
    fscale = np.maximum(np.abs(virtual_finish), gpu_time)
    res["virtual_finish"] = float(np.max(np.abs(virtual_finish - v_arr - gpu_time) / fscale,
                                         initial=0.0))

    # Allocation log: per-entry bounds.
    cap = _independent_caps(requested, scaling, num_gpus, alpha)
    if log_g.size:
        bad_int = np.abs(log_g - np.round(log_g)) + np.maximum(-log_g, 0)
        res["integral"] = float(np.max(bad_int))
        res["max_gpus"] = float(np.max(np.maximum(log_g - cap[log_j], 0.0))) / m
        window = np.maximum(arrival[log_j] - log_t, 0.0) + np.maximum(log_t - efq_finish[log_j],
                                                                      0.0)
        res["window"] = float(np.max(window)) / tscale
        if power is None:
            top_g = log_g.astype(float)
        else:
            top_g = np.concatenate(([0.0], np.cumsum(power)))[log_g.astype(np.int64)]
        res["gpu_power"] = float(np.max(np.maximum(log_p - top_g, 0.0)
                                        / np.maximum(top_g, 1.0)))
    else:
        res["integral"] = res["max_gpus"] = res["window"] = res["gpu_power"] = 0.0

    # Work: integrate each job's rate over its piecewise-constant allocation.
    by_job = np.lexsort((np.arange(log_t.size), log_t, log_j))
    jj, tt, gg, pp = log_j[by_job], log_t[by_job], log_g[by_job], log_p[by_job]
    same_next = np.concatenate((jj[1:] == jj[:-1], [False]))
    t_end = np.where(same_next, np.concatenate((tt[1:], [0.0])), tt)
    dur = t_end - tt
    live = gg > 0
    speed = np.zeros(tt.size)
    if live.any():
        gl = gg[live].astype(float)
        r = requested[jj[live]]
        if scaling is None:
            base = gl
        else:
            sc = scaling[jj[live]]
            base = r * _throughput_at(sc, gl) / _throughput_at(sc, r)
        speed[live] = base * (pp[live] / gl)
    work = np.bincount(jj, weights=speed * dur, minlength=n)
    wscale = np.maximum(gpu_time, m * tscale * _SCALE_FLOOR)
    res["work"] = float(np.max(np.abs(work - gpu_time) / wscale, initial=0.0))
    # the last entry of every job releases its GPUs, at its finish time
    last_of_job = ~same_next
    ends = np.zeros(n, dtype=bool)
    ends[jj[last_of_job]] = True
    final_ok = (gg[last_of_job] == 0) & (np.abs(tt[last_of_job] - efq_finish[jj[last_of_job]])
                                          <= _INSTANT_RTOL * tscale)
    res["release"] = 0.0 if (ends.all() and final_ok.all()) else 1.0

    # Sweep over time: capacity, power, work conservation and busy periods.
    g_prev = np.where(np.concatenate(([False], same_next[:-1])),
                      np.concatenate(([0], gg[:-1])), 0)
    dg = (gg - g_prev).astype(float)
    p_prev = np.where(np.concatenate(([False], same_next[:-1])),
                      np.concatenate(([0.0], pp[:-1])), 0.0)
    dp = pp - p_prev
    capj = cap[jj]
    dd = (gg < capj).astype(float) - (g_prev < capj).astype(float)
    times = np.concatenate([tt, arrival, efq_finish])
    d_g = np.concatenate([dg, np.zeros(2 * n)])
    d_p = np.concatenate([dp, np.zeros(2 * n)])
    d_d = np.concatenate([dd, np.ones(n), -np.ones(n)])
    srt = np.argsort(times, kind="stable")
    times = times[srt]
    uniq = np.unique(times)
    last = np.searchsorted(times, uniq, side="right") - 1
    used = np.cumsum(d_g[srt])[last]
    pw_used = np.cumsum(d_p[srt])[last]
    deficit = np.cumsum(d_d[srt])[last]
    res["capacity"] = float(np.max(np.maximum(used - m, 0.0), initial=0.0)) / m
    res["power"] = float(np.max(np.maximum(pw_used - m * (1.0 + _POWER_RTOL), 0.0),
                                initial=0.0)) / m
    length = np.diff(uniq)
    positive = length > _INSTANT_RTOL * tscale
    idle = (m - used[:-1]) >= 0.5
    waste = positive & idle & (deficit[:-1] >= 0.5)
    res["work_conserving"] = float(np.sum(length[waste])) / tscale
    busy = positive & ~idle
    busy_max = 0.0
    if busy.any():
        # merge consecutive busy intervals: a run of True in `busy` (zero-length gaps allowed)
        busy_or_instant = busy | ~positive
        cum = np.concatenate(([0.0], np.cumsum(np.where(busy, length, 0.0))))
        brk = np.flatnonzero(~busy_or_instant)
        bounds = np.concatenate(([-1], brk, [busy.size]))
        totals = cum[bounds[1:]] - cum[bounds[:-1] + 1]
        busy_max = float(np.max(totals))
    return _replay_check(res, log_t.size), busy_max, res
