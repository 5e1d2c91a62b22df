"""Shockwave's long-term fairness and makespan estimators (§6.2, App. G.2), vectorised over
jobs: `fairalloc.contention_factor` (``N_avg``),
`fairalloc.ftf_estimate` (Eq. 9),
`fairalloc.makespan_lower_bound` (Eq. 10, with gang sizes) and
`makespan_normalizer` (``Z0`` of Eq. 11). ``formulations/shockwave_estimators.md`` has the exact
rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_array, as_gang_sizes, as_positive_float
from ..errors import InputError
from ..results import readonly

__all__ = ["contention_factor", "ftf_estimate", "makespan_lower_bound", "makespan_normalizer"]


def _finite_result(out: Any, name: str, what: str) -> Any:
    """``out`` as a read-only array (or float), or InputError if it overflowed a float."""
    arr = np.asarray(out)
    if not np.isfinite(arr).all():
        raise InputError(f"{what} overflows a float for these {name} (express them in other "
                         "units)", argument=name)
    return float(arr) if arr.ndim == 0 else readonly(arr)



def contention_factor(
    arrival: Any,
    now: float,
    num_gpus: float,
    *,
    times: Any = None,
    demand: Any = None,
    demand_seconds: Any = None,
    floor: float = 1.0,
) -> np.ndarray:
    """Each job's contention factor ``N_avg(j)`` over the time it was queued or running.

    Shockwave App. G.2: the contention factor is the number of jobs requesting GPUs divided
    by the number of GPUs ``M``, and job ``j``'s ``N_avg(j)`` averages it over
    ``[arrival_j, now]``:

        N_avg(j) = max(floor, (1/(now - a_j)) * integral_{a_j}^{now} demand(t) dt / M).

    Give the demand either as an **event history** (``times`` and ``demand``: a step function
    equal to ``demand[e]`` on ``[times[e], times[e+1])`` and to ``demand[-1]`` until ``now``)
    or as **running sums** (``demand_seconds[j]`` = the integral since job ``j`` arrived,
    accumulated by the scheduler, with ``demand`` the current scalar demand). A job that
    arrives at ``now`` gets the current demand. ``demand`` counts jobs requesting GPUs (the
    paper); pass GPUs requested to weigh gangs instead. ``floor=1`` (default) keeps a job's
    predicted shared run time from undercutting its isolated one when the cluster is not
    contended (as the upstream evaluation's ``max(1, N/M)``); ``floor=0`` is the literal ratio.

    Parameters
    ----------
    arrival : array_like, shape (n,)
        Arrival time of each job (``<= now``).
    now : float
        Current time.
    num_gpus : float
        ``M`` (positive).
    times, demand : array_like, shape (E,), optional
        Event history: non-decreasing segment start times (``times[0] <= min(arrival)``,
        ``times[-1] <= now``) and the demand on each segment (non-negative).
    demand_seconds : array_like, shape (n,), optional
        Running sums of demand x seconds since each job's arrival (then ``demand`` is a
        non-negative scalar, the current demand).
    floor : float, default 1.0
        Lower bound applied to the average (non-negative).

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    Four GPUs; 2 jobs requesting GPUs during [0, 10), then 8 until now = 20:

    >>> contention_factor([0.0, 10.0, 20.0], 20.0, 4, times=[0, 10], demand=[2, 8], floor=0)
    array([1.25, 2.  , 2.  ])
    >>> contention_factor([0.0, 10.0], 20.0, 4, demand_seconds=[100.0, 80.0], demand=8)
    array([1.25, 2.  ])
    """
    a = as_array(arrival, "arrival", ndim=1, nonneg=False)
    t_now = float(as_array(now, "now", ndim=0, nonneg=False))
    m = as_positive_float(num_gpus, "num_gpus")
    lo = as_positive_float(floor, "floor", allow_zero=True)
    late = np.flatnonzero(a > t_now)
    if late.size:
        i = int(late[0])
        raise InputError(f"arrival[{i}] = {a[i]:g} is after now = {t_now:g}",
                         argument="arrival", index=(i,))
    elapsed = t_now - a
    if (times is None) == (demand_seconds is None):
        raise InputError("give either an event history (times, demand) or running sums "
                         "(demand_seconds, demand)", argument="times")
    if times is not None:
        t = as_array(times, "times", ndim=1, nonneg=False)
        d = as_array(demand, "demand", ndim=1, shape=t.shape)
        back = np.flatnonzero(np.diff(t) < 0)
        if back.size:
            i = int(back[0]) + 1
            raise InputError(f"times[{i}] = {t[i]:g} is before times[{i - 1}]; times must be "
                             "non-decreasing", argument="times", index=(i,))
        if t[-1] > t_now:
            raise InputError(f"times[{t.size - 1}] = {t[-1]:g} is after now = {t_now:g}",
                             argument="times", index=(t.size - 1,))
        early = np.flatnonzero(a < t[0])
        if early.size:
            i = int(early[0])
            raise InputError(f"arrival[{i}] = {a[i]:g} is before the history starts "
                             f"(times[0] = {t[0]:g})", argument="arrival", index=(i,))
        xp = np.concatenate([t, [t_now]])
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: InputError below
            cp = np.concatenate([[0.0], np.cumsum(d * np.diff(xp))])  # integral up to xp[e]
            seg = np.searchsorted(t, a, side="right") - 1  # the segment of each arrival
            # whole segments after the arrival, plus the part of its own (no cancellation
            # for jobs that arrived in the last segment)
            integral = (cp[-1] - cp[seg + 1]) + d[seg] * (xp[seg + 1] - a)
        current = float(d[np.searchsorted(t, t_now, side="right") - 1])
    else:
        integral = as_array(demand_seconds, "demand_seconds", ndim=1, shape=a.shape)
        if demand is None:
            if (elapsed <= 0).any():
                raise InputError("a job arrived at now: pass the current demand (scalar) "
                                 "to use for it", argument="demand")
            current = 0.0
        else:
            current = float(as_array(demand, "demand", ndim=0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        avg = np.where(elapsed > 0, integral / np.where(elapsed > 0, elapsed, 1.0), current)
        out = np.maximum(avg / m, lo)
    return _finite_result(out, "demand", "the average demand")


def ftf_estimate(attained: Any, waiting: Any, remaining: Any, contention: Any) -> np.ndarray:
    """Finish-time-fairness estimate ``rho_hat`` of each job (Shockwave Eq. 9, App. G.2).

        rho_hat_j = (L_j + W_j + R_hat_j * N_avg(j)) / (P_hat_j * N_avg(j)),
        P_hat_j = L_j + R_hat_j

    The numerator predicts the job completion time under contention: attained service time
    ``L_j``, waiting time ``W_j``, and the predicted remaining isolated run time ``R_hat_j``
    (`RegimeForecast.remaining_seconds`) stretched by the contention factor. The
    denominator is the predicted total isolated run time ``P_hat_j`` (``R_hat = P_hat - L``)
    stretched the same way: the job's run time in its ``1/N_avg`` share. ``rho_hat > 1``
    predicts a violation of finish-time fairness.

    Parameters
    ----------
    attained : array_like, shape (n,)
        ``L_j``: seconds the job has run (non-negative).
    waiting : array_like, shape (n,)
        ``W_j``: seconds it has waited in the queue since arrival (non-negative).
    remaining : array_like, shape (n,)
        ``R_hat_j``: predicted remaining isolated run time (non-negative).
    contention : float or array_like, shape (n,)
        ``N_avg(j)`` (positive), e.g. from `fairalloc.contention_factor`.

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> ftf_estimate([100.0, 0.0], [300.0, 50.0], [100.0, 200.0], [2.0, 1.0])
    array([1.5 , 1.25])
    """
    L = as_array(attained, "attained", ndim=1)
    n = L.shape[0]
    W = as_array(waiting, "waiting", ndim=1, shape=(n,))
    R = as_array(remaining, "remaining", ndim=1, shape=(n,))
    N = as_array(contention, "contention", ndim=(0, 1), positive=True)
    if N.ndim == 1 and N.shape[0] != n:
        raise InputError(f"contention has {N.shape[0]} entries for {n} jobs",
                         argument="contention")
    P = L + R
    bad = np.flatnonzero(P <= 0)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"remaining[{i}] = 0 and attained[{i}] = 0: job {i} has no predicted "
                         "run time", argument="remaining", index=(i,))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        out = (L + W + R * N) / (P * N)
    return _finite_result(out, "contention", "the FTF estimate")


def makespan_lower_bound(remaining: Any, num_gpus: float, workers: Any = None) -> Any:
    """Makespan lower bound ``H`` (Shockwave Eq. 10, App. G.2, with gang sizes).

        H = max( sum_j w_j R_j / M , max_j R_j )

    ``R_j`` is job ``j``'s remaining run time (in isolation, on its gang of ``w_j`` GPUs):
    no schedule finishes before the longest job, nor before the cluster's ``M`` GPUs have
    delivered the ``sum_j w_j R_j`` GPU-seconds still owed (the paper writes
    ``sum_j R_j / M`` for single-GPU jobs). Vectorised over leading axes: pass
    ``remaining`` of shape ``(..., n)`` (e.g. one row per scenario or per candidate
    schedule) to get ``H`` of shape ``(...)``.

    Parameters
    ----------
    remaining : array_like, shape (..., n)
        Remaining run times (non-negative seconds).
    num_gpus : float
        ``M`` (positive).
    workers : array_like of int, shape (n,), optional
        Gang sizes ``w_j`` (default 1); each must fit in ``M``.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> makespan_lower_bound([100.0, 50.0, 50.0], 2, workers=[1, 2, 2])
    150.0
    >>> makespan_lower_bound([[100.0, 50.0], [10.0, 10.0]], 4)
    array([100.,  10.])
    """
    R = as_array(remaining, "remaining", ndim=(1, 2, 3))
    n = R.shape[-1]
    m = as_positive_float(num_gpus, "num_gpus")
    w = as_gang_sizes(workers, n, m)
    with np.errstate(over="ignore", invalid="ignore"):
        h = np.maximum(R @ w / m, R.max(axis=-1))
    return _finite_result(h, "remaining", "the makespan bound")


def makespan_normalizer(remaining: Any) -> Any:
    """``Z0`` of Shockwave Eq. 11: the sum of the jobs' remaining run times before the window.

    It makes the regulariser ``(lambda/Z0) * H`` insensitive to the scale of ``H``
    (``remaining`` as in `fairalloc.makespan_lower_bound`, predicted before
    planning). Vectorised over leading axes like
    `fairalloc.makespan_lower_bound`.

    Parameters
    ----------
    remaining : array_like, shape (..., N)
        Each job's remaining run time in seconds (last axis: the jobs).

    Returns
    -------
    float or numpy.ndarray
        ``Z0 = remaining.sum(axis=-1)``: a float for one job set, an array of the leading
        shape otherwise.

    Raises
    ------
    InputError
        If every remaining time is zero (``Z0 = 0`` leaves the regulariser undefined).

    Examples
    --------
    >>> makespan_normalizer([100.0, 50.0, 50.0])
    200.0
    """
    R = as_array(remaining, "remaining", ndim=(1, 2, 3))
    with np.errstate(over="ignore", invalid="ignore"):
        z = R.sum(axis=-1)
    z = _finite_result(z, "remaining", "Z0")
    zero = np.argwhere(np.atleast_1d(z) <= 0)
    if zero.size:
        raise InputError("remaining sums to 0: Z0 must be positive (no job has run time left)",
                         argument="remaining", index=tuple(int(i) for i in zero[0]))
    return z
