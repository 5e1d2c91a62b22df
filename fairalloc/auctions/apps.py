"""App models for the multi-round auction (Themis §4.3): `fairalloc.SingleJobApp`,
`fairalloc.SuccessiveHalvingApp` and
`fairalloc.CurveStoppingApp` hold an app's progress for
`fairalloc.MultiRoundAuction`; they report ``rho``
(`fairalloc.auctions.valuations`) for any allocation at any time and advance their iterations when
they run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import as_array, as_positive_float, as_positive_int
from ..errors import InputError
from ..results import readonly
from .valuations import (
    MAX_COUNT,
    _contention,
    _count,
    _gpus_and_slowdown,
    _halving_jobs,
    _phase_time,
    _rho,
    _slowdown_levels,
    _upper_median,
    curve_stopping_rho,
    single_job_rho,
    successive_halving_rho,
)

__all__ = ["CurveStoppingApp", "SingleJobApp", "SuccessiveHalvingApp"]

#: ACCURACY contract: an app with at most this fraction of its iterations left has finished
#: (progress is a sum of floating-point steps).
DONE_REL_TOL = 1e-12


class _App:
    """Common state of an app model: arrival time, per-level slowdown, demand."""

    def __init__(self, arrival: float, slowdown: Any, name: str | None) -> None:
        self.arrival = as_positive_float(arrival, "arrival", allow_zero=True)
        self.slowdown_levels = readonly(_slowdown_levels(slowdown))
        if name is not None and not isinstance(name, str):
            raise InputError(f"name must be a string or None, got {name!r}", argument="name")
        self.name = name

    @staticmethod
    def _run_args(num_gpus: Any, slowdown: Any, dt: Any = 0.0) -> tuple[int, float, float]:
        """Validate ``(num_gpus, slowdown, dt)`` of `advance` / `time_to_finish`."""
        g = as_positive_int(num_gpus, "num_gpus", allow_zero=True)
        if g > MAX_COUNT:
            raise InputError(f"num_gpus must be at most 2**53, got {num_gpus!r:.40}",
                             argument="num_gpus")
        s = as_positive_float(slowdown, "slowdown")
        if s < 1.0:
            raise InputError(f"slowdown must be >= 1, got {slowdown!r}", argument="slowdown")
        return g, s, as_positive_float(dt, "dt", allow_zero=True)

    @property
    def demand_max(self) -> int:
        """Most GPUs the app can use at once now."""
        raise NotImplementedError

    @property
    def finished(self) -> bool:
        """Whether the app has no work left."""
        raise NotImplementedError

    def rho(self, num_gpus: Any, slowdown: Any, *, now: float, cluster_gpus: int,
            contention: float) -> np.ndarray:
        """``rho`` if the app held ``num_gpus`` GPUs with slowdown ``slowdown`` from ``now`` on."""
        raise NotImplementedError

    def advance(self, num_gpus: int, slowdown: float, dt: float) -> None:
        """Run for ``dt`` seconds on ``num_gpus`` GPUs with slowdown ``slowdown``."""
        raise NotImplementedError

    def time_to_finish(self, num_gpus: int, slowdown: float) -> float:
        """Seconds until the app finishes if it keeps this allocation (``inf`` with 0 GPUs)."""
        raise NotImplementedError

    def _elapsed(self, now: float) -> float:
        return max(as_positive_float(now, "now", allow_zero=True) - self.arrival, 0.0)


class SingleJobApp(_App):
    """A one-job app (Themis §4.3.1) whose progress the multi-round auction simulates.

    Parameters
    ----------
    iter_total : float
        Iterations of the job.
    iter_time_serial : float
        Seconds per iteration on one GPU.
    job_demand_max : int
        Most GPUs the job can use.
    arrival : float
        Arrival time ``T_start``.
    iter_done : float
        Iterations already run.
    slowdown : array_like, shape (3,), optional
        The app's profiled slowdown on one machine / one rack / across racks.
    name : str, optional

    Examples
    --------
    >>> app = SingleJobApp(iter_total=100, iter_time_serial=2.0, job_demand_max=2)
    >>> app.rho([1, 2], 1.0, now=0.0, cluster_gpus=4, contention=2).tolist()
    [1.0, 0.5]
    >>> app.advance(2, 1.0, 50.0); app.iter_done
    50.0
    """

    def __init__(self, *, iter_total: float, iter_time_serial: float, job_demand_max: int,
                 arrival: float = 0.0, iter_done: float = 0.0, slowdown: Any = None,
                 name: str | None = None) -> None:
        super().__init__(arrival, slowdown, name)
        self.iter_total = as_positive_float(iter_total, "iter_total")
        self.iter_time_serial = as_positive_float(iter_time_serial, "iter_time_serial")
        self.job_demand_max = _count(job_demand_max, "job_demand_max")
        self.iter_done = as_positive_float(iter_done, "iter_done", allow_zero=True)
        if self.iter_done > self.iter_total:
            raise InputError("iter_done exceeds iter_total", argument="iter_done")

    @property
    def demand_max(self) -> int:
        return 0 if self.finished else self.job_demand_max

    @property
    def finished(self) -> bool:
        return self.iter_done >= self.iter_total * (1 - DONE_REL_TOL)

    def rho(self, num_gpus: Any, slowdown: Any, *, now: float, cluster_gpus: int,
            contention: float) -> np.ndarray:
        return single_job_rho(
            num_gpus, iter_total=self.iter_total,
            iter_left=max(self.iter_total - self.iter_done, 0.0),
            iter_time_serial=self.iter_time_serial, job_demand_max=self.job_demand_max,
            cluster_gpus=cluster_gpus, contention=contention, elapsed=self._elapsed(now),
            slowdown=slowdown)

    def _rate(self, num_gpus: int, slowdown: float) -> float:
        return min(num_gpus, self.job_demand_max) / (self.iter_time_serial * slowdown)

    def advance(self, num_gpus: int, slowdown: float, dt: float) -> None:
        num_gpus, slowdown, dt = self._run_args(num_gpus, slowdown, dt)
        if num_gpus > 0 and dt > 0:
            self.iter_done = min(self.iter_total,
                                 self.iter_done + dt * self._rate(num_gpus, slowdown))

    def time_to_finish(self, num_gpus: int, slowdown: float) -> float:
        num_gpus, slowdown, _ = self._run_args(num_gpus, slowdown)
        if self.finished:
            return 0.0
        if num_gpus <= 0:
            return math.inf
        return (self.iter_total - self.iter_done) / self._rate(num_gpus, slowdown)


class SuccessiveHalvingApp(_App):
    """A hyper-parameter search with successive halving (Themis §4.3.2).

    Phase ``p`` runs ``phase_jobs[p]`` jobs for ``phase_iters[p]`` iterations each; when a
    phase ends, the best half survive. Which jobs survive is not known in advance: the model
    draws the survivors with its own seeded generator (``seed``), so simulations are
    reproducible. Within a phase, all jobs progress at the rate of the ``"balanced"`` schedule
    (each job's remaining work shrinks in proportion, so the phase ends at the time
    `fairalloc.successive_halving_rho` predicts).

    Parameters
    ----------
    iter_time_serial : array_like, shape (J,)
        Seconds per iteration on one GPU of each initial job.
    phase_iters : array_like, shape (P,)
        Iterations per job in each phase.
    budget : float, optional
        GPU-seconds budget ``B``; default: the plan's work with the median job in later phases.
    job_demand_max : int
    arrival : float
    slowdown : array_like, shape (3,), optional
    seed : int
        Seed of the survivor draw.
    name : str, optional

    Examples
    --------
    >>> app = SuccessiveHalvingApp(iter_time_serial=[80, 100, 100, 120], phase_iters=[8, 16, 36],
    ...                            budget=10_000, job_demand_max=8)
    >>> app.rho([1, 2], 1.0, now=0.0, cluster_gpus=16, contention=4).tolist()
    [4.0, 2.0]
    """

    def __init__(self, *, iter_time_serial: Any, phase_iters: Any, job_demand_max: int,
                 budget: float | None = None, arrival: float = 0.0, slowdown: Any = None,
                 seed: int = 0, name: str | None = None) -> None:
        super().__init__(arrival, slowdown, name)
        seed = as_positive_int(seed, "seed", allow_zero=True)
        times = as_array(iter_time_serial, "iter_time_serial", ndim=1, positive=True)
        self.phase_iters = as_array(phase_iters, "phase_iters", ndim=1, positive=True)
        self.phase_jobs = _halving_jobs(times.size, self.phase_iters.size)
        self.job_demand_max = _count(job_demand_max, "job_demand_max")
        median = _upper_median(times)
        plan = float(self.phase_iters[0] * times.sum()
                     + median * (self.phase_iters[1:] * self.phase_jobs[1:]).sum())
        self.budget = plan if budget is None else as_positive_float(budget, "budget")
        self.times = np.array(times)
        self.left = np.full(times.size, float(self.phase_iters[0]))
        self.phase = 0
        self._rng = np.random.default_rng(seed)

    @property
    def finished(self) -> bool:
        return self.phase >= self.phase_iters.size

    @property
    def demand_max(self) -> int:
        if self.finished:
            return 0
        return int(self.job_demand_max * self.times.size)

    def rho(self, num_gpus: Any, slowdown: Any, *, now: float, cluster_gpus: int,
            contention: float) -> np.ndarray:
        if self.finished:
            G, S = _gpus_and_slowdown(num_gpus, slowdown)
            rc = _count(cluster_gpus, "cluster_gpus")
            n_avg = _contention(contention)
            with np.errstate(over="ignore", under="ignore"):
                t_cluster = self.budget / min(rc, self.job_demand_max *
                                              int(self.phase_jobs.max()))
            return _rho(np.full(G.shape, self._elapsed(now)), n_avg * t_cluster, "budget")
        return successive_halving_rho(
            num_gpus, iter_time_serial=self.times, phase_iters=self.phase_iters,
            budget=self.budget, job_demand_max=self.job_demand_max, cluster_gpus=cluster_gpus,
            contention=contention, elapsed=self._elapsed(now), slowdown=slowdown,
            phase=self.phase, iter_left=self.left, phase_jobs=self.phase_jobs)

    def _phase_time(self, num_gpus: int, slowdown: float) -> float:
        work = (self.left * self.times)[None, :]
        return float(_phase_time(np.array(float(num_gpus)), np.array(float(slowdown)), work,
                                 float(self.job_demand_max), "balanced"))

    def advance(self, num_gpus: int, slowdown: float, dt: float) -> None:
        num_gpus, slowdown, dt = self._run_args(num_gpus, slowdown, dt)
        remaining = float(dt)
        while remaining > 0 and not self.finished and num_gpus > 0:
            t_phase = self._phase_time(num_gpus, slowdown)
            if t_phase > remaining:
                self.left = self.left * (1.0 - remaining / t_phase)
                return
            remaining -= t_phase
            self._next_phase()

    def _next_phase(self) -> None:
        self.phase += 1
        if self.finished:
            self.left = np.zeros(0)
            self.times = np.zeros(0)
            return
        keep = int(self.phase_jobs[self.phase])
        survivors = np.sort(self._rng.choice(self.times.size, size=min(keep, self.times.size),
                                             replace=False))
        self.times = self.times[survivors]
        self.left = np.full(self.times.size, float(self.phase_iters[self.phase]))

    def time_to_finish(self, num_gpus: int, slowdown: float) -> float:
        """Estimated seconds to finish: this phase, then later phases with the median job."""
        num_gpus, slowdown, _ = self._run_args(num_gpus, slowdown)
        if self.finished:
            return 0.0
        if num_gpus <= 0:
            return math.inf
        p0 = self.phase
        median = _upper_median(self.times)
        width = int(max(self.times.size, self.phase_jobs[p0:].max()))
        work = np.zeros((self.phase_iters.size - p0, width))
        work[0, :self.times.size] = self.left * self.times
        future = np.arange(width)[None, :] < self.phase_jobs[p0 + 1:, None]
        work[1:] = np.where(future, (self.phase_iters[p0 + 1:] * median)[:, None], 0.0)
        return float(_phase_time(np.array(float(num_gpus)), np.array(float(slowdown)), work,
                                 float(self.job_demand_max), "balanced"))


class CurveStoppingApp(_App):
    """A hyper-parameter search with performance-curve stopping (Themis §4.3.2).

    Each job ``j`` runs until its forecast stop ``iter_total[j]`` (the app's most pessimistic
    forecast); the running jobs share the app's GPUs with the ``"balanced"`` schedule.

    Parameters
    ----------
    iter_time_serial, iter_total : array_like, shape (J,)
    job_demand_max : int
    arrival : float
    slowdown : array_like, shape (3,), optional
    name : str, optional

    Examples
    --------
    >>> app = CurveStoppingApp(iter_time_serial=[1.0, 1.0], iter_total=[100, 100], job_demand_max=1)
    >>> app.rho(2, 1.0, now=0.0, cluster_gpus=2, contention=1).tolist()
    1.0
    """

    def __init__(self, *, iter_time_serial: Any, iter_total: Any, job_demand_max: int,
                 arrival: float = 0.0, slowdown: Any = None, name: str | None = None) -> None:
        super().__init__(arrival, slowdown, name)
        self.times = np.array(as_array(iter_time_serial, "iter_time_serial", ndim=1,
                                       positive=True))
        J = self.times.size
        self.iter_total = np.array(as_array(iter_total, "iter_total", ndim=1, shape=(J,),
                                            positive=True))
        self.left = self.iter_total.copy()
        self.job_demand_max = _count(job_demand_max, "job_demand_max")

    @property
    def finished(self) -> bool:
        return bool(np.all(self.left <= DONE_REL_TOL * self.iter_total))

    @property
    def demand_max(self) -> int:
        return 0 if self.finished else int(self.job_demand_max * np.count_nonzero(self.left > 0))

    def rho(self, num_gpus: Any, slowdown: Any, *, now: float, cluster_gpus: int,
            contention: float) -> np.ndarray:
        return curve_stopping_rho(
            num_gpus, iter_time_serial=self.times, iter_left=self.left,
            iter_total=self.iter_total, job_demand_max=self.job_demand_max,
            cluster_gpus=cluster_gpus, contention=contention, elapsed=self._elapsed(now),
            slowdown=slowdown)

    def time_to_finish(self, num_gpus: int, slowdown: float) -> float:
        num_gpus, slowdown, _ = self._run_args(num_gpus, slowdown)
        if self.finished:
            return 0.0
        if num_gpus <= 0:
            return math.inf
        work = (self.left * self.times)[None, :]
        return float(_phase_time(np.array(float(num_gpus)), np.array(float(slowdown)), work,
                                 float(self.job_demand_max), "balanced"))

    def advance(self, num_gpus: int, slowdown: float, dt: float) -> None:
        num_gpus, slowdown, dt = self._run_args(num_gpus, slowdown, dt)
        if num_gpus <= 0 or dt <= 0 or self.finished:
            return
        t = self.time_to_finish(num_gpus, slowdown)
        self.left = np.zeros_like(self.left) if dt >= t else self.left * (1.0 - dt / t)


AppModel = SingleJobApp | SuccessiveHalvingApp | CurveStoppingApp


def _check_apps(apps: Sequence[Any]) -> list[Any]:
    """Validate a sequence of app models (used by the multi-round auction)."""
    out = list(apps)
    if not out:
        raise InputError("apps is empty", argument="apps")
    for i, app in enumerate(out):
        if not isinstance(app, _App):
            raise InputError(f"apps[{i}] is a {type(app).__name__}, not an app model "
                             "(SingleJobApp, SuccessiveHalvingApp, CurveStoppingApp)",
                             argument="apps", index=(i,))
    return out
