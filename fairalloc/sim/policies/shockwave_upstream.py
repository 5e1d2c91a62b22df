"""Upstream Shockwave's behaviours as options of `fairalloc.sim.ShockwavePolicy`.

``ShockwavePolicy(preset="upstream")`` runs the policy as upstream's simulator does
(``scheduler/shockwave.py`` and ``scheduler/configurations/*.json`` of uw-mad-dash/shockwave);
``formulations/shockwave_options.md`` lists each behaviour with its source location. This
module holds the pieces the paper does not describe: the configuration per cluster size
(`upstream_config`), the lateness test against a momentum-averaged equal-share finish time
(`EqualShareLateness`) and the reordering program (`reorder_window`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import sparse

from ...backends import LinearProgram, get_backend
from ...errors import InputError
from ...schedule.instance import UPSTREAM_LOG_BREAKPOINTS
from ..state import EPOCH_ROUNDOFF
from .base import greedy_pack

__all__ = ["UPSTREAM_CONFIGS", "UPSTREAM_PRESET", "EqualShareLateness", "dirichlet_remaining",
           "calibration_factor", "fill_window", "reorder_window", "upstream_config",
           "whole_epochs"]

#: upstream's configuration by cluster size (its reproduction configs): GPUs ->
#: (makespan coefficient, upstream's ``k``; FTF exponent, upstream's ``lambda``)
UPSTREAM_CONFIGS = {32: (1e-3, 12.0), 64: (10.0, 5.0), 128: (1e-3, 15.0), 256: (1e5, 5.0)}
#: momentum of upstream's averaged fair finish time (``finish_time_momentumed_average``)
FINISH_TIME_MOMENTUM = 0.9
# PERFORMANCE: branch-and-bound nodes of the reordering MILP (a work limit: the best schedule
# found is used, the plan's own when none; deterministic on any machine)
REORDER_NODE_LIMIT = 1000
# ACCURACY: relative gap of the reordering MILP (upstream's solver_rel_gap)
REORDER_MIP_GAP = 1e-3
# ACCURACY: priorities are divided by the largest; those below this fraction of it count as
# this fraction (a priority of rho^100 next to 1 would otherwise underflow)
REORDER_MIN_PRIORITY = 1e-9

# ACCURACY: upstream's JobMetaData.calibrate_profiled_epoch_duration keeps the profiled epoch
# times while the samples it measured and those the profile predicts differ by at most this
# fraction of the latter
CALIBRATION_TOLERANCE = 0.4

#: the options ``preset="upstream"`` sets (``k`` and ``lam`` come from `upstream_config` at
#: reset, from the cluster's size)
UPSTREAM_PRESET: dict[str, Any] = {
    "makespan": "max_remaining",  # lam max_j R_j in raw seconds
    "welfare_norm": "rounds",  # welfare / (N T)
    "log_breakpoints": UPSTREAM_LOG_BREAKPOINTS,  # 6-point piecewise-linear log
    "util_floor": 1e-6,  # logapx_origin: log(1e-6) at zero progress
    "weights": "clipped",
    "near_completion": "weight",  # priority_M = 1e2 within one round
    "boost": 100.0,
    "lateness": "upstream",
    "hard_ftf": True,
    "rhomax": 1.0,
    "hard_ftf_drop": "all",
    "hard_ftf_weights": "none",
    "reorder": "milp",
    "execution": "columns",
    "idle_fill": "at_solve",  # construct_schedules' greedy fill of the window at the solve
    "work_conservation": "none",  # no work-conservation constraint in the program
    "replan": "lazy",  # no re-plan on regime changes
    "replan_interval": 8,
    "replan_clock": "simulation",  # _iround_reopt: rounds 8, 16, ... of the simulation
    "lateness_submit": "admitted",  # register_job_submit at the admitting round's start
    "epoch_calibration": "upstream",  # calibrate_profiled_epoch_duration (Dirichlet only)
    "ftf_forecast": None,  # one forecast everywhere
    "plan_progress": "seen_mean",  # continuous epochs at the mean epoch time seen so far
    "lateness_work": "epochs",  # equal-share finish times from measured epoch durations
}


def upstream_config(num_gpus: int) -> tuple[float, float]:
    """Upstream's ``(makespan coefficient, FTF exponent)`` for a cluster of ``num_gpus`` GPUs.

    Upstream configures 32, 64, 128 and 256 GPUs (`UPSTREAM_CONFIGS`); another size takes the
    configuration of the nearest configured size in log scale (the smaller one on a tie).

    Parameters
    ----------
    num_gpus : int

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> upstream_config(32), upstream_config(64), upstream_config(256)
    ((0.001, 12.0), (10.0, 5.0), (100000.0, 5.0))
    >>> upstream_config(40)
    (0.001, 12.0)
    """
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, int | np.integer) or num_gpus < 1:
        raise InputError(f"num_gpus must be a positive integer, got {num_gpus!r}",
                         argument="num_gpus")
    sizes = sorted(UPSTREAM_CONFIGS)
    dist = [abs(math.log2(s) - math.log2(int(num_gpus))) for s in sizes]
    return UPSTREAM_CONFIGS[sizes[int(np.argmin(dist))]]


class EqualShareLateness:
    """Upstream's lateness test: projected finish ``now + R / min(1, M/N)`` over a
    momentum-averaged equal-share finish time.

    At each re-estimate (upstream: only when jobs arrive or complete) every active job's
    equal-share finish time ``arrival + (L + R) / min(1, M/N)`` is recorded (``L`` its attained
    isolated seconds, ``R`` its forecast remaining ones). Its target at round ``r`` is
    ``0.9 a + 0.1 f_last``, with ``a`` the average of its recorded values weighted by how many
    rounds each stood (``f_last`` alone before a round has passed).

    Parameters
    ----------
    size : int
        Jobs of the workload (rows of the per-job state).

    Examples
    --------
    >>> late = EqualShareLateness(2)
    >>> late.record([0, 1], 0, [0.0, 0.0], [0.0, 0.0], [100.0, 400.0], num_gpus=1)
    >>> late.target([0, 1], 0).tolist()
    [200.0, 800.0]
    >>> late.record([1], 10, [0.0], [400.0], [200.0], num_gpus=1)
    >>> late.target([1], 20).tolist()
    [690.0]
    """

    def __init__(self, size: int) -> None:
        self.start = np.full(size, -1, dtype=np.int64)
        self.last_round = np.zeros(size, dtype=np.int64)
        self.last = np.zeros(size)
        self.area = np.zeros(size)

    def record(self, rows: Any, round_index: int, arrival: Any, attained: Any,
               remaining: Any, *, num_gpus: int) -> None:
        """Record the active jobs' (``rows``) equal-share finish times at ``round_index``."""
        rows = np.asarray(rows, dtype=np.int64)
        share = min(1.0, num_gpus / max(rows.size, 1))
        value = (np.asarray(arrival, dtype=float)
                 + (np.asarray(attained, dtype=float) + np.asarray(remaining, dtype=float))
                 / share)
        new = self.start[rows] < 0
        self.start[rows] = np.where(new, round_index, self.start[rows])
        self.area[rows] += np.where(new, 0.0,
                                    self.last[rows] * (round_index - self.last_round[rows]))
        self.last_round[rows] = round_index
        self.last[rows] = value

    def target(self, rows: Any, round_index: int) -> np.ndarray:
        """The momentum-averaged equal-share finish time of each job of ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        last = self.last[rows]
        span = round_index - self.start[rows]
        area = self.area[rows] + last * (round_index - self.last_round[rows])
        avg = np.where(span > 0, area / np.maximum(span, 1), last)
        return FINISH_TIME_MOMENTUM * avg + (1.0 - FINISH_TIME_MOMENTUM) * last


def whole_epochs(view: Any) -> tuple[np.ndarray, np.ndarray]:
    """Upstream's epoch progress of each job of a `fairalloc.sim.JobView`: its whole epochs
    done and their measured seconds.

    Upstream's simulator counts a job's progress in whole epochs (``epoch_progress``, the floor
    of the steps run over the steps of an epoch, ``_update_shockwave_scheduler`` of
    ``scheduler/scheduler.py``) and reads ``epoch_duration[:epoch_progress]``: an epoch in
    progress counts neither as done nor in the seconds seen. Whole epochs are counted per
    batch-size regime, as `fairalloc.sim.JobView.observed_epochs` does.

    Parameters
    ----------
    view : JobView
        Needs ``history_epochs`` and ``history_seconds`` (shape ``(n, regimes)``).

    Returns
    -------
    (ndarray, ndarray), shape (n,) each
        Whole epochs done, and the seconds of those epochs.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> v = SimpleNamespace(history_epochs=np.array([[3.0, 1.5]]),
    ...                     history_seconds=np.array([[60.0, 30.0]]))
    >>> [x.tolist() for x in whole_epochs(v)]
    [[4.0], [210.0]]
    """
    whole = np.floor(np.asarray(view.history_epochs, dtype=float) + EPOCH_ROUNDOFF)
    return whole.sum(axis=1), (whole * np.asarray(view.history_seconds, dtype=float)).sum(axis=1)


def calibration_factor(run_rounds: Any, run_seconds: Any, profile_seconds: Any,
                       round_duration: float, *, previous: float = 1.0) -> float:
    """Upstream's calibration of a job's profiled epoch times (``calibrate_profiled_epoch_duration``
    of ``scheduler/JobMetaData.py``): the factor it multiplies them by, or ``nan`` (keep them).

    Each measurement (the epoch time at the batch size of a round the job ran; upstream records
    it under the round count after that round) is taken to hold from the previous measurement
    -- from round 0 for the first, arrival and waits included -- so the measured work is
    ``sum_k (r_k - r_{k-1}) D / s_k`` epochs over ``D r_last`` seconds. The profile's work over
    the same seconds is read along the job's whole schedule (``profile_seconds``, one entry per
    epoch): the whole epochs that fit, then the rest of the seconds at the next epoch's time
    (the last epoch's past the end) as calibrated so far (``previous``, as upstream reads its
    already calibrated times there). When the two differ by more than 40 % of the profile's
    (`CALIBRATION_TOLERANCE`) the factor is ``profile / measured``.

    Parameters
    ----------
    run_rounds : array_like of int, shape (m,)
        Round counts of the measurements, increasing (empty: not run yet).
    run_seconds : array_like, shape (m,)
        Epoch seconds measured at each.
    profile_seconds : array_like, shape (E,)
        Profiled seconds of every epoch of the job's schedule.
    round_duration : float
    previous : float, default 1.0
        The factor in force.

    Returns
    -------
    float

    Examples
    --------
    One epoch of 100 s then one of 50 s, run in round 0 only at 100 s an epoch (measured: 1.2
    epochs over 120 s; the profile: 1 + 20/50 = 1.4 epochs, within 40 %); then, after waiting
    to round 9, in round 9 (10 rounds at 50 s: 24 epochs over 1,200 s; the profile runs out
    after 150 s and goes on at 50 s an epoch: 2 + 1050/50 = 23, within 40 % again). Measured
    at round counts 1 and 2 as 200 s epochs: 1.2 epochs over 240 s, the profile's
    2 + 90/50 = 3.8: calibrated by 3.8 / 1.2.

    >>> calibration_factor([1], [100.0], [100.0, 50.0], 120.0)
    nan
    >>> calibration_factor([1, 10], [100.0, 50.0], [100.0, 50.0], 120.0)
    nan
    >>> round(calibration_factor([1, 2], [200.0, 200.0], [100.0, 50.0], 120.0), 4)
    3.1667
    """
    keys = np.asarray(run_rounds, dtype=float)
    run = np.asarray(run_seconds, dtype=float)
    prof = np.asarray(profile_seconds, dtype=float)
    if keys.size == 0 or prof.size == 0:
        return math.nan
    span = float(round_duration) * keys[-1]
    measured = float((np.diff(keys, prepend=0.0) * round_duration / run).sum())
    ends = np.concatenate([[0.0], np.cumsum(prof)])
    whole = int(np.searchsorted(ends[1:], span, side="right"))  # epochs ending by `span`
    rest = span - ends[whole]
    predicted = whole + (rest / (prof[min(whole, prof.size - 1)] * previous) if rest > 0
                         else 0.0)
    if measured <= 0 or predicted <= 0 or \
            abs(measured - predicted) <= CALIBRATION_TOLERANCE * predicted:
        return math.nan
    return float(predicted / measured)


def dirichlet_remaining(batch_sizes: Any, epoch_seconds: Any, done_epochs: int) -> float:
    """Upstream's forecast of a job's remaining seconds (``dirichlet_posterior_remaining_runtime``).

    It reads the job's future: the set of batch sizes its whole schedule uses and each one's
    mean epoch time. A Dirichlet prior of ``E / K`` epochs on each of the ``K`` batch sizes is
    updated with the batch sizes of epochs ``0 .. done`` (the current one included), rebased to
    ``E`` epochs, the observed epochs taken off (one at a time, while a size keeps at least one),
    and the rebased epochs' seconds scaled by ``(E - done) / max(E - done, int(sum + 1))``.

    Parameters
    ----------
    batch_sizes, epoch_seconds : array_like, shape (E,)
        Batch size and seconds of every epoch of the job, past and future.
    done_epochs : int
        Epochs finished.

    Returns
    -------
    float
        Seconds (upstream's 1.0 when no epoch is left).

    Examples
    --------
    >>> round(dirichlet_remaining([32, 32, 64, 64], [60, 60, 30, 30], 1), 6)
    80.0
    """
    bs = np.asarray(batch_sizes, dtype=float)
    sec = np.asarray(epoch_seconds, dtype=float)
    if bs.ndim != 1 or bs.shape != sec.shape or bs.size == 0:
        raise InputError("batch_sizes and epoch_seconds must be 1-d of one length",
                         argument="epoch_seconds")
    E = bs.size
    done = int(done_epochs)
    left = E - done
    if left <= 0:
        return 1.0
    modes, inv = np.unique(bs, return_inverse=True)
    obs = np.bincount(inv[:done + 1], minlength=modes.size).astype(float)
    conc = E / modes.size + obs
    reb = E * conc / conc.sum()
    reb -= np.minimum(obs, np.floor(reb))
    dur = np.bincount(inv, weights=sec) / np.bincount(inv)
    inflated = max(int(reb.sum() + 1), left)
    return float((reb * dur).sum() * left / inflated)


def fill_window(schedule: Any, workers: Any, remaining: Any, num_gpus: int) -> np.ndarray:
    """Upstream's idle fill, chosen at the solve for every round of the window.

    In each round (column) the jobs the plan leaves out are taken by forecast remaining time,
    longest first, each one whose gang fits in the GPUs still idle (upstream's
    ``construct_schedules``).

    Parameters
    ----------
    schedule : array_like of bool, shape (n, T)
    workers : array_like of int, shape (n,)
    remaining : array_like, shape (n,)
        Forecast remaining seconds at the solve.
    num_gpus : int

    Returns
    -------
    ndarray of bool, shape (n, T)

    Examples
    --------
    >>> fill_window([[1, 0], [0, 0], [0, 0]], [2, 1, 2], [5.0, 1.0, 9.0], 3).astype(int).tolist()
    [[1, 0], [1, 1], [0, 1]]
    """
    out = np.array(schedule, dtype=bool, copy=True)
    w = np.asarray(workers, dtype=np.int64)
    order = np.argsort(-np.asarray(remaining, dtype=float), kind="stable")
    free = int(num_gpus) - (out * w[:, None]).sum(axis=0)
    for t in np.flatnonzero(free > 0).tolist():  # one greedy pass per round of the window
        cand = order[~out[order, t]]
        got = greedy_pack(np.arange(cand.size), np.zeros(cand.size, dtype=np.int64), w[cand],
                          [int(free[t])], cand.size)
        out[cand[got >= 0], t] = True
    return out


def reorder_window(schedule: Any, workers: Any, log_priority: Any, num_gpus: int) -> np.ndarray:
    """Upstream's post-solve reordering: the same round counts, high-priority jobs first.

    Minimises ``sum_j p_j * mean round index of job j`` over binary schedules with each job's
    count of ``schedule`` and at most ``num_gpus`` GPUs in every round (a MILP solved by the
    HiGHS backend from the plan's schedule as a MIP start, with a node limit, so the result is
    the same on any machine; the plan's schedule is returned when the solver gives no point).
    Priorities are given as logs (``p_j = exp(log_priority_j)``; a near-completion boost is
    ``rho^100``).

    Parameters
    ----------
    schedule : array_like of bool, shape (n, T)
    workers : array_like of int, shape (n,)
    log_priority : array_like, shape (n,)
    num_gpus : int

    Returns
    -------
    ndarray of bool, shape (n, T)

    Examples
    --------
    >>> reorder_window([[1, 0, 0], [0, 1, 1]], [1, 1], [0.0, 1.0], 1).astype(int).tolist()
    [[0, 0, 1], [1, 1, 0]]
    """
    x0 = np.asarray(schedule, dtype=bool)
    n, T = x0.shape
    w = np.asarray(workers, dtype=float)
    count = x0.sum(axis=1)
    act = np.flatnonzero(count > 0)
    if act.size == 0 or T < 2:
        return x0.copy()
    logp = np.asarray(log_priority, dtype=float)[act]
    p = np.maximum(np.exp(logp - logp.max()), REORDER_MIN_PRIORITY)
    na = act.size
    t = np.arange(T, dtype=float)
    c = ((p / count[act])[:, None] * t[None, :]).ravel()
    cols = np.arange(na * T)
    rows_count = np.repeat(np.arange(na), T)
    a = sparse.vstack([
        sparse.csr_matrix((np.ones(na * T), (rows_count, cols)), shape=(na, na * T)),
        sparse.csr_matrix((np.repeat(w[act], T), (np.tile(np.arange(T), na), cols)),
                          shape=(T, na * T))], format="csr")
    lo = np.concatenate([count[act], np.full(T, -np.inf)])
    hi = np.concatenate([count[act], np.full(T, float(num_gpus))])
    lp = LinearProgram.build(c, a, lo, hi, 0.0, 1.0, integrality=np.ones(na * T, dtype=bool))
    # the plan's own schedule is feasible: the MIP start keeps an incumbent under the limit
    sol = get_backend("highs").solve_lp(lp, gap_tol=REORDER_MIP_GAP,
                                        node_limit=REORDER_NODE_LIMIT,
                                        start=x0[act].ravel().astype(float))
    if sol.x is None:
        return x0.copy()
    out = np.zeros_like(x0)
    out[act] = sol.x.reshape(na, T) > 0.5
    return out
