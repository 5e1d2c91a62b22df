"""The plan's input: `fairalloc.PlanJob` and the per-count tables every solver path
reads.

A job's utility depends only on how many rounds it gets, so the whole plan is described by
``(jobs, rounds + 1)`` tables of ``UTIL_j(n)``, ``R_j(n)`` and the weighted ``log UTIL_j(n)``
(`_PlanInstance`, built and validated by `_build_plan_instance`). This module also
holds the solver-independent evaluation of a schedule against those tables (objective of
Eq. 11, restarts, capacity / useful-round / work-conservation residual), which certifies every
returned plan.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import (
    as_array,
    as_bool,
    as_finite_float,
    as_positive_float,
    as_positive_int,
    as_real_array,
)
from ..errors import InputError

__all__ = ["PlanJob"]

WORK_CONSERVATION = ("exact", "greedy", "none")
EXPECTATIONS = ("mean", "scenarios")
MAKESPAN_KINDS = ("paper", "max_remaining", "scale_free")
# how the welfare sum is normalised: by N*M (the paper's Eq. 11) or N*T (upstream's code)
WELFARE_NORMS = ("gpus", "rounds")
REGIME_MODELS = ("forecast", "flat")
# ACCURACY: a regime list may fall short of the remaining epochs by this relative amount
# (round-off); also the relative tolerance of regime boundaries
EPOCH_RTOL = 1e-9
# ACCURACY: absolute slack (epochs) on top of EPOCH_RTOL when a regime list is checked
EPOCH_ATOL = 1e-12
# ACCURACY (input limit): the largest cluster / gang the planner accepts (int32 GPU counts)
MAX_GPUS = 2**31 - 1
# PERFORMANCE (input limit): the longest window (the tables are jobs x (rounds + 1))
MAX_ROUNDS = 10_000
# ACCURACY: |k log rho| beyond which rho^k is computed relative to the largest weight (log space)
LOG_WEIGHT_LIMIT = 600.0
# ACCURACY: a job needs ceil(P/D - ROUND_SLACK) rounds (a finish within this of a round's end
# counts as done in that round)
ROUND_SLACK = 1e-9
# ACCURACY: the most rounds a table counts (2**53: beyond it float rounds are not integers)
MAX_NEEDED_ROUNDS = 2.0**53
# ACCURACY: the solver programs' time unit is at least this fraction of the longest remaining
# time, so no remaining time exceeds 1e15 units (solvers treat larger numbers as infinite)
MIN_TIME_UNIT_FRACTION = 1e-15
# documented argument: plan_schedule's default util_floor, also the floor of relax_plan's tables
UTIL_FLOOR = 1e-6
#: upstream Shockwave's piecewise-linear log (its ``log_approximation_bases``): ``log UTIL``
#: interpolated linearly between these progress fractions, ``log(util_floor)`` at 0
UPSTREAM_LOG_BREAKPOINTS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


# --------------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------------
def _regime_array(value: Any, name: str, remaining: float) -> np.ndarray:
    """Validate a regime list ``[(epoch_seconds, epochs), ...]`` as a read-only (K, 2) array."""
    arr = as_array(value, name, ndim=(1, 2), allow_empty=True)
    if arr.size == 0:
        arr = np.zeros((0, 2))
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"{name} must be a list of (epoch_seconds, epochs) pairs, got shape "
                         f"{arr.shape}", argument=name)
    bad = np.flatnonzero(arr[:, 0] <= 0)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{name}[{i}] has epoch_seconds = {arr[i, 0]:g}; it must be positive",
                         argument=name, index=(i, 0))
    with np.errstate(over="ignore", invalid="ignore"):
        span = float(np.sum(arr[:, 0] * arr[:, 1]))
    if not math.isfinite(span):
        raise InputError(f"{name}: the regimes' run time (sum of epoch_seconds * epochs) "
                         "overflows a float; express the durations in larger units",
                         argument=name)
    total = float(arr[:, 1].sum())
    if not math.isfinite(total):
        raise InputError(f"{name}: the regimes' epochs overflow a float", argument=name)
    if total < remaining * (1.0 - EPOCH_RTOL) - EPOCH_ATOL:
        raise InputError(
            f"{name} covers {total:g} epochs but the job has {remaining:g} epochs left "
            "(total_epochs - done_epochs); the forecast must cover the remaining work",
            argument=name)
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class PlanJob:
    """One job to plan: gang size, epochs, FTF estimate and forecast regimes (App. G.1).

    Parameters
    ----------
    workers : int
        Gang size ``w_j``: GPUs the job uses whenever it runs.
    total_epochs : float
        ``E_j`` (positive).
    done_epochs : float
        ``F_j``, epochs finished so far (``0 <= F_j <= E_j``).
    ftf : float
        Finish-time-fairness estimate ``rho_j`` (Eq. 9; positive), e.g. from
        `fairalloc.ftf_estimate`. The plan weighs the job by ``rho_j **
        k``.
    regimes : sequence of (float, float)
        The remaining regimes in order, each ``(seconds per epoch, epochs)``, starting with
        what is left of the ongoing one (`fairalloc.RegimeForecast.regimes`). They must
        cover the ``E_j - F_j`` epochs left; progress stops at ``E_j``.
    running : bool, default False
        Whether the job runs in the round just before the window (running on in round 0 is
        not a restart).
    scenarios : sequence of regime lists, optional
        Trajectories sampled from the forecast posterior (App. F;
        `fairalloc.RegimeForecast.sample_regimes`), used by
        ``plan_schedule(..., expectation="scenarios")``.

    Examples
    --------
    >>> job = PlanJob(workers=2, total_epochs=100, done_epochs=20, ftf=1.3,
    ...               regimes=[(60.0, 30), (30.0, 50)])
    >>> job.remaining_seconds
    3300.0
    >>> job.epochs_advanced([0.0, 1800.0, 2400.0, 1e9]).tolist()
    [0.0, 30.0, 50.0, 80.0]
    """

    workers: int
    total_epochs: float
    done_epochs: float
    ftf: float
    regimes: Sequence[tuple[float, float]]
    running: bool = False
    scenarios: Sequence[Sequence[tuple[float, float]]] | None = None
    _regimes: np.ndarray = field(init=False, repr=False, compare=False)
    _scenarios: tuple[np.ndarray, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        w = as_positive_int(self.workers, "workers")
        if w > MAX_GPUS:
            raise InputError(f"workers = {w} exceeds the largest supported gang "
                             f"({MAX_GPUS} GPUs)", argument="workers")
        total = as_positive_float(self.total_epochs, "total_epochs")
        done = as_positive_float(self.done_epochs, "done_epochs", allow_zero=True)
        if done > total * (1.0 + EPOCH_RTOL):
            raise InputError(f"done_epochs = {done:g} exceeds total_epochs = {total:g}",
                             argument="done_epochs")
        done = min(done, total)
        ftf = as_positive_float(self.ftf, "ftf")
        as_bool(self.running, "running")
        left = total - done
        reg = _regime_array(self.regimes, "regimes", left)
        scen: tuple[np.ndarray, ...] = ()
        if self.scenarios is not None:
            if isinstance(self.scenarios, np.ndarray | str) or not isinstance(
                    self.scenarios, Sequence):
                raise InputError("scenarios must be a list of regime lists", argument="scenarios")
            if len(self.scenarios) == 0:
                raise InputError("scenarios is empty; pass None for no scenarios",
                                 argument="scenarios")
            scen = tuple(_regime_array(s, f"scenarios[{i}]", left)
                         for i, s in enumerate(self.scenarios))
        object.__setattr__(self, "workers", w)
        object.__setattr__(self, "total_epochs", total)
        object.__setattr__(self, "done_epochs", done)
        object.__setattr__(self, "ftf", ftf)
        object.__setattr__(self, "running", bool(self.running))
        object.__setattr__(self, "regimes", tuple((float(a), float(b)) for a, b in reg))
        if self.scenarios is not None:
            object.__setattr__(self, "scenarios", tuple(
                tuple((float(a), float(b)) for a, b in s) for s in scen))
        object.__setattr__(self, "_regimes", reg)
        object.__setattr__(self, "_scenarios", scen)

    @classmethod
    def from_forecast(cls, forecast: Any, *, workers: int, ftf: float, running: bool = False,
                      samples: int = 0, rng: Any = 0) -> PlanJob:
        """Build a job from a `fairalloc.RegimeForecast` (posterior-mean regimes).

        ``samples > 0`` also draws that many trajectories from the posterior as
        `scenarios` (App. F).
        """
        from .forecast import RegimeForecast

        if not isinstance(forecast, RegimeForecast):
            raise InputError("forecast must be a fairalloc.RegimeForecast", argument="forecast")
        scen = None
        if as_positive_int(samples, "samples", allow_zero=True) > 0:
            scen = forecast.sample_regimes(samples, rng)
        return cls(workers=workers, total_epochs=forecast.total_epochs,
                   done_epochs=forecast.done_epochs, ftf=ftf, regimes=forecast.regimes,
                   running=running, scenarios=scen)

    @property
    def remaining_epochs(self) -> float:
        """``E_j - F_j``."""
        return self.total_epochs - self.done_epochs

    @property
    def remaining_seconds(self) -> float:
        """``P_j``: isolated run time to finish along `regimes` (seconds)."""
        sec, ep = self._regimes[None, :, 0], self._regimes[None, :, 1]
        return float(_trajectory_tables(sec, ep, np.array([self.remaining_epochs]),
                                        np.zeros((1, 1)))[1][0])

    def epochs_advanced(self, seconds: Any) -> np.ndarray:
        """Epochs done in ``seconds`` more of run time, through the regimes in order, capped."""
        s = as_array(seconds, "seconds", ndim=(0, 1), allow_empty=True)
        sec, ep = self._regimes[None, :, 0], self._regimes[None, :, 1]
        adv = _trajectory_tables(sec, ep, np.array([self.remaining_epochs]),
                                 np.atleast_1d(s)[None, :])[0][0]
        out = adv.reshape(s.shape)
        out.flags.writeable = False
        return out


# --------------------------------------------------------------------------------------------
# per-count tables
# --------------------------------------------------------------------------------------------
def _trajectory_tables(sec: np.ndarray, ep: np.ndarray, left: np.ndarray,
                       query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Epochs advanced after ``query`` seconds and the seconds to finish, per trajectory.

    ``sec``/``ep`` (Q, K): padded regimes (padding has ``ep = 0``); ``left`` (Q,): epochs
    left; ``query`` (Q, P) seconds. Returns ``adv`` (Q, P) (capped at ``left``) and ``P`` (Q,).
    """
    q_rows, k = sec.shape
    cs = np.zeros((q_rows, k + 1))
    ce = np.zeros((q_rows, k + 1))
    if k:
        cs[:, 1:] = np.cumsum(sec * ep, axis=1)
        ce[:, 1:] = np.cumsum(ep, axis=1)
    rows = np.arange(q_rows)[:, None]
    if k:
        idx = (cs[:, None, 1:] <= query[:, :, None]).sum(axis=-1)  # segment of each query
        seg = np.minimum(idx, k - 1)
        with np.errstate(over="ignore"):  # inf: past the regime's end (capped below)
            inside = ce[rows, seg] + (query - cs[rows, seg]) / sec[rows, seg]
        adv = np.where(idx >= k, ce[:, k:k + 1], inside)
    else:
        adv = np.zeros_like(query)
    adv = np.minimum(adv, left[:, None])
    # seconds to finish: the segment where the cumulative epochs reach `left`
    if k:
        seg = np.minimum((ce[:, 1:] < left[:, None]).sum(axis=1), k - 1)
        r = np.arange(q_rows)
        finish = cs[r, seg] + np.maximum(left - ce[r, seg], 0.0) * sec[r, seg]
        finish = np.where(left > 0, finish, 0.0)
    else:
        finish = np.zeros(q_rows)
    return adv, finish


@dataclass(frozen=True, eq=False)
class _PlanInstance:
    """Validated plan data and the per-count tables (all arrays over jobs)."""

    N: int
    T: int
    M: int
    D: float
    w: np.ndarray  # (N,) int gang sizes
    weight: np.ndarray  # (N,) rho^k / (N M)
    util: np.ndarray  # (N, T+1) UTIL_j(n) (expected over scenarios)
    rem: np.ndarray  # (N, T+1) R_j(n) seconds (expected)
    gval: np.ndarray  # (N, T+1) weight * log(max(UTIL, floor))
    finish: np.ndarray  # (N,) int rounds after which more rounds are useless (c_j)
    cap: np.ndarray  # (N,) int min(T, c_j)
    running: np.ndarray  # (N,) bool
    coef: float  # lam / Z0 (paper), lam / (M Z0) (scale_free) or lam (max_remaining)
    makespan: str  # the form of H: "paper" (Eq. 10; also for scale_free) or "max_remaining"
    eta: float  # restart penalty
    z0: float
    reg_seconds: np.ndarray  # (N, K+1) cumulative regime seconds of the mean trajectory
    E: np.ndarray  # (N,) total epochs
    F: np.ndarray  # (N,) done epochs
    traj_owner: np.ndarray  # (Q,) job of each trajectory (one per job, or its scenarios)
    traj_sec: np.ndarray  # (Q, K) padded seconds per epoch
    traj_ep: np.ndarray  # (Q, K) padded epochs
    traj_finish: np.ndarray  # (Q,) seconds to finish along each trajectory
    log_shift: float = 0.0  # weights are exp(k log rho - log_shift) / (N M) (see _weights)
    data_scale: float = 0.0  # the objective's data scale (see _data_scale)
    tau: float = 1.0  # time unit of the solver programs: a power of two near D (seconds)

    @property
    def capacity(self) -> int:
        return self.M * self.T

    def gap_scale(self, value: float, bound: float) -> float:
        """The magnitude a gap is judged against: ``max(|value|, |bound|, data scale)``."""
        vals = [abs(v) for v in (value, bound) if math.isfinite(v)]
        return max(max(vals, default=0.0), self.data_scale)

    def certified(self, value: float, bound: float, gap: float) -> bool:
        """Whether ``bound - value`` is within ``gap`` of `gap_scale` (unit free)."""
        if not (math.isfinite(value) and math.isfinite(bound)):
            return False
        return bound - value <= gap * self.gap_scale(value, bound)


def _pow2(x: float) -> float:
    """The power of two nearest ``x`` (in log scale); 1 for zero or non-finite ``x``."""
    if not (math.isfinite(x) and x > 0):
        return 1.0
    return math.ldexp(1.0, round(math.log2(x)))


def _time_unit(D: float, rem: np.ndarray) -> float:
    """The solver programs' time unit: a power of two near ``D`` (remaining times in rounds),
    raised where needed so that no remaining time exceeds ``1e15`` units (solvers treat
    larger numbers as infinite) and lowered to the longest remaining time when every job
    finishes within a round (a round then changes ``R`` by at most that much)."""
    longest = float(rem.max(initial=0.0))
    if not longest > 0:
        return _pow2(D)
    return _pow2(min(max(D, longest * MIN_TIME_UNIT_FRACTION), longest))


def _weights(rho: np.ndarray, k: float, N: int, M: int, coef: float, eta: float
             ) -> tuple[np.ndarray, float]:
    """FTF weights ``rho^k / (N M)`` computed in log space, and the log-scale shift applied.

    (``M`` is the welfare normaliser's second factor: GPUs, or rounds with
    ``welfare_norm="rounds"``.)

    ``rho^k`` overflows (or underflows) for large ``k``. When ``max_j |k log rho_j|`` exceeds
    `LOG_WEIGHT_LIMIT` the weights are ``exp(k log rho_j - s) / (N M)`` with
    ``s = max_j k log rho_j`` (raised where needed so that ``coef e^-s`` and ``eta e^-s`` stay
    finite), and the caller divides the makespan coefficient and the restart penalty by
    ``e^s`` too: the whole objective is multiplied by ``e^-s > 0``, which leaves its argmax
    (the plan) unchanged. Otherwise ``s = 0`` and the weights are exactly ``rho^k / (N M)``.
    """
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        logw = k * np.log(rho) if k else np.zeros_like(rho)
    if not np.isfinite(logw).all():
        raise InputError(f"k = {k:g} makes k * log(ftf) overflow a float; use a smaller k",
                         argument="k")
    if float(np.abs(logw).max()) <= LOG_WEIGHT_LIMIT:
        return rho ** k / (N * M), 0.0
    shift = float(logw.max())
    for extra in (coef, eta):
        if extra > 0:
            shift = max(shift, math.log(extra) - LOG_WEIGHT_LIMIT)
    return np.exp(logw - shift) / (N * M), shift


def _pad_regimes(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Ragged (K_i, 2) regime arrays -> padded seconds and epochs (Q, Kmax)."""
    lengths = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    q, kmax = len(arrays), int(lengths.max(initial=0))
    sec = np.ones((q, kmax))
    ep = np.zeros((q, kmax))
    if kmax:
        flat = np.concatenate([a.reshape(-1, 2) for a in arrays], axis=0)
        row = np.repeat(np.arange(q), lengths)
        col = np.arange(flat.shape[0]) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        sec[row, col] = flat[:, 0]
        ep[row, col] = flat[:, 1]
    return sec, ep


def _flatten(sec: np.ndarray, ep: np.ndarray, left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One regime per trajectory at its mean epoch duration (``regime_model="flat"``)."""
    _, finish = _trajectory_tables(sec, ep, left, np.zeros((sec.shape[0], 1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(left > 0, finish / np.where(left > 0, left, 1.0), 1.0)
    return mean[:, None], left[:, None].copy()


def _build_plan_instance(jobs: Any, num_gpus: Any, *, rounds: Any, round_duration: Any,
                         k: Any, lam: Any, z0: Any, util_floor: Any, expectation: str,
                         makespan: str, regime_model: str, restart_penalty: Any,
                         welfare_norm: str = "gpus",
                         log_breakpoints: Any = None,
                         progress_seconds: Any = None) -> _PlanInstance:
    """Validate the plan's inputs and build its per-count tables (every solver path's data)."""
    if isinstance(jobs, PlanJob):
        jobs = [jobs]
    if not isinstance(jobs, Sequence) or isinstance(jobs, str):
        raise InputError("jobs must be a sequence of fairalloc.PlanJob", argument="jobs")
    if len(jobs) == 0:
        raise InputError("jobs is empty: there is nothing to plan", argument="jobs")
    not_job = [i for i, j in enumerate(jobs) if not isinstance(j, PlanJob)]
    if not_job:
        i = not_job[0]
        raise InputError(f"jobs[{i}] is a {type(jobs[i]).__name__}, not a fairalloc.PlanJob",
                         argument="jobs", index=(i,))
    M = as_positive_int(num_gpus, "num_gpus")
    if M > MAX_GPUS:
        raise InputError(f"num_gpus = {M} exceeds the largest supported cluster "
                         f"({MAX_GPUS} GPUs)", argument="num_gpus")
    T = as_positive_int(rounds, "rounds")
    if T > MAX_ROUNDS:
        raise InputError(f"rounds = {T} exceeds the largest supported window "
                         f"({MAX_ROUNDS} rounds)", argument="rounds")
    D = as_positive_float(round_duration, "round_duration")
    if not math.isfinite(D * (T + 1)):
        raise InputError(f"round_duration = {D:g} times {T} rounds overflows a float; express "
                         "durations in larger units", argument="round_duration")
    kexp = as_positive_float(k, "k", allow_zero=True)
    lam_v = as_positive_float(lam, "lam", allow_zero=True)
    eta = as_positive_float(restart_penalty, "restart_penalty", allow_zero=True)
    floor = as_finite_float(util_floor, "util_floor", lo=0.0, hi=1.0, lo_open=True)
    if floor >= 1.0:
        raise InputError(f"util_floor must be below 1, got {floor:g}", argument="util_floor")
    N = len(jobs)
    w = np.fromiter((j.workers for j in jobs), dtype=np.int64, count=N)
    big = np.flatnonzero(w > M)
    if big.size:
        i = int(big[0])
        raise InputError(f"jobs[{i}].workers = {w[i]} exceeds num_gpus = {M}: the job can "
                         "never run", argument="jobs", index=(i,))
    E = np.fromiter((j.total_epochs for j in jobs), dtype=float, count=N)
    F = np.fromiter((j.done_epochs for j in jobs), dtype=float, count=N)
    rho = np.fromiter((j.ftf for j in jobs), dtype=float, count=N)
    running = np.fromiter((j.running for j in jobs), dtype=bool, count=N)
    left = E - F

    mean_arrays = [j._regimes for j in jobs]
    if expectation == "scenarios":
        missing = [i for i, j in enumerate(jobs) if not j._scenarios]
        if len(missing) == N:
            raise InputError("expectation='scenarios' needs PlanJob.scenarios (e.g. "
                             "PlanJob.from_forecast(..., samples=S))", argument="expectation")
        traj = [s for j in jobs for s in (j._scenarios or (j._regimes,))]
        counts = np.fromiter((max(len(j._scenarios), 1) for j in jobs), dtype=np.int64,
                             count=N)
    else:
        traj = mean_arrays
        counts = np.ones(N, dtype=np.int64)
    owner = np.repeat(np.arange(N), counts)
    sec, ep = _pad_regimes(traj)
    tleft = left[owner]
    if regime_model == "flat":
        sec, ep = _flatten(sec, ep, tleft)
    query = np.broadcast_to(D * np.arange(T + 1, dtype=float), (owner.size, T + 1))
    adv, finish_s = _trajectory_tables(sec, ep, tleft, query)
    util_q = (F[owner, None] + adv) / E[owner, None]
    rem_q = np.maximum(finish_s[:, None] - query, 0.0)
    with np.errstate(over="ignore"):  # a tiny D: the job needs "infinitely" many rounds
        need = np.minimum(finish_s / D, MAX_NEEDED_ROUNDS)
    rounds_q = np.ceil(need - ROUND_SLACK).astype(np.int64)
    done_q = np.arange(T + 1)[None, :] >= rounds_q[:, None]
    util_q = np.where(done_q, 1.0, np.minimum(util_q, 1.0))
    rem_q = np.where(done_q, 0.0, rem_q)
    inv = 1.0 / counts
    util = np.zeros((N, T + 1))
    rem = np.zeros((N, T + 1))
    np.add.at(util, owner, util_q)
    np.add.at(rem, owner, rem_q)
    util *= inv[:, None]
    rem *= inv[:, None]
    finish = np.zeros(N, dtype=np.int64)
    np.maximum.at(finish, owner, rounds_q)
    if progress_seconds is not None:
        util, rem, finish = _seen_mean_tables(progress_seconds, util[:, 0], rem[:, 0], finish,
                                              F, E, D, T)
    cap = np.minimum(finish, T)

    # the mean trajectory's regime boundaries (seconds), for reporting regime indices
    msec, mep = _pad_regimes(mean_arrays)
    if regime_model == "flat":
        msec, mep = _flatten(msec, mep, left)
    reg_seconds = np.zeros((N, msec.shape[1] + 1))
    reg_seconds[:, 1:] = np.cumsum(msec * mep, axis=1)

    if makespan in ("paper", "scale_free"):
        if z0 is None:
            z0_v = float(rem[:, 0].sum())
        else:
            z0_v = as_positive_float(z0, "z0")
        with np.errstate(over="ignore"):
            coef = lam_v / z0_v if z0_v > 0 else 0.0
            if makespan == "scale_free":  # lam / (M Z0): the trade-off is free of M and N
                coef /= M
        if not math.isfinite(coef):
            raise InputError(f"lam / z0 = {lam_v:g} / {z0_v:g} overflows a float",
                             argument="z0")
    else:  # upstream: the largest remaining run time, in raw seconds
        z0_v = 1.0
        coef = lam_v
    weight, shift = _weights(rho, kexp, N, M if welfare_norm == "gpus" else T, coef, eta)
    if shift:  # the whole objective is scaled by exp(-shift) (see _weights)
        coef = math.exp(math.log(coef) - shift) if coef > 0 else 0.0
        eta = math.exp(math.log(eta) - shift) if eta > 0 else 0.0
    gval = weight[:, None] * _log_utility(util, floor, _as_breakpoints(log_breakpoints))
    inst = _PlanInstance(N=N, T=T, M=M, D=D, w=w, weight=weight, util=util, rem=rem,
                         gval=gval, finish=finish, cap=cap, running=running, coef=coef,
                         makespan="max_remaining" if makespan == "max_remaining" else "paper",
                         eta=eta, z0=z0_v, reg_seconds=reg_seconds, E=E,
                         F=F, traj_owner=owner, traj_sec=sec, traj_ep=ep,
                         traj_finish=finish_s, log_shift=shift, tau=_time_unit(D, rem))
    scale = _data_scale(inst)
    if not math.isfinite(scale):
        raise InputError(f"lam = {lam_v:g} (or restart_penalty = {eta:g}) makes the objective "
                         "overflow a float; use a smaller value (or a larger z0)",
                         argument="lam")
    return dataclasses.replace(inst, data_scale=scale)


def _seen_mean_tables(progress_seconds: Any, util0: np.ndarray, rem0: np.ndarray,
                      finish: np.ndarray, F: np.ndarray, E: np.ndarray, D: float,
                      T: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Upstream's continuous epoch progress: ``n`` rounds advance ``min(n D / s_j, E_j - F_j)``
    epochs at one epoch time ``s_j`` (``progress_seconds``), and the remaining time is the
    forecast's ``R_j`` less the seconds planned, ``max(0, R_j - min(n D, (E_j - F_j) s_j))``."""
    ps = as_real_array(progress_seconds, "progress_seconds")
    if ps.shape != F.shape:
        raise InputError(f"progress_seconds has shape {ps.shape}; expected {F.shape}",
                         argument="progress_seconds")
    bad = np.flatnonzero(~(np.isfinite(ps) & (ps > 0)))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"progress_seconds[{i}] = {ps[i]} (must be positive and finite)",
                         argument="progress_seconds", index=(i,))
    left = E - F
    planned = np.minimum(D * np.arange(T + 1, dtype=float)[None, :], (left * ps)[:, None])
    util = np.where(left[:, None] > 0, np.minimum((F[:, None] + planned / ps[:, None])
                                                  / E[:, None], 1.0), util0[:, None])
    rem = np.maximum(rem0[:, None] - planned, 0.0)
    with np.errstate(over="ignore"):
        need = np.minimum(left * ps / D, MAX_NEEDED_ROUNDS)
    finish = np.maximum(finish, np.ceil(need - ROUND_SLACK).astype(np.int64))
    return util, rem, finish


def _as_breakpoints(value: Any) -> np.ndarray | None:
    """``log_breakpoints``: None, or increasing progress fractions from 0 to 1 (two or more)."""
    if value is None:
        return None
    b = as_real_array(value, "log_breakpoints")
    if b.ndim != 1 or b.size < 2 or b[0] != 0.0 or b[-1] != 1.0:
        raise InputError("log_breakpoints must be a list of two or more progress fractions "
                         f"from 0 to 1, got {value!r}", argument="log_breakpoints")
    bad = np.flatnonzero(np.diff(b) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise InputError(f"log_breakpoints must increase: log_breakpoints[{i}] = {b[i]:g} "
                         f"follows {b[i - 1]:g}", argument="log_breakpoints", index=(i,))
    return b


def _log_utility(util: np.ndarray, floor: float, breakpoints: np.ndarray | None) -> np.ndarray:
    """``log max(UTIL, floor)``, or with ``breakpoints`` its linear interpolation between
    ``log max(b, floor)`` at each breakpoint (upstream's piecewise-linear log)."""
    if breakpoints is None:
        return np.log(np.maximum(util, floor))
    return np.interp(util, breakpoints, np.log(np.maximum(breakpoints, floor)))


def _data_scale(inst: _PlanInstance) -> float:
    """The objective's data scale: how much the window can move it.

    ``sum_j (g_j(c_j) - g_j(0)) + (lam/Z0) H(0) + eta * (jobs that can run)`` with
    ``g_j(n) = rho_j^k log UTIL_j(n) / (N M)``: the sum of the FTF weights times each job's log
    range over the window, the makespan term before the window and one restart per job. It is
    unit free (UTIL is a ratio; ``H/Z0`` and ``H`` under ``lam`` in raw seconds scale together
    for ``makespan="paper"``) and homogeneous in the weights, so the certificate's verdict does
    not change when durations are expressed in other units or ``rho`` is rescaled with
    ``lam = 0``.
    """
    r = np.arange(inst.N)
    with np.errstate(over="ignore", invalid="ignore"):
        welfare = float((inst.gval[r, inst.cap] - inst.gval[:, 0]).sum())
        h0 = float(_makespan(inst, inst.rem[:, 0])) if inst.coef > 0 else 0.0
        active = int((inst.cap > 0).sum())
        return welfare + inst.coef * h0 + inst.eta * active


# --------------------------------------------------------------------------------------------
# evaluation and checks (independent of every solver)
# --------------------------------------------------------------------------------------------
def _makespan(inst: _PlanInstance, rem: np.ndarray) -> np.ndarray:
    """H for remaining times ``rem`` (..., N)."""
    longest = rem.max(axis=-1)
    if inst.makespan == "max_remaining":
        return longest
    return np.maximum(rem @ inst.w / inst.M, longest)


def _restarts(inst: _PlanInstance, x: np.ndarray) -> int:
    prev = np.concatenate([inst.running[:, None], x[:, :-1]], axis=1)
    return int((x & ~prev).sum())


def _evaluate(inst: _PlanInstance, x: np.ndarray) -> dict[str, Any]:
    """Objective of Eq. 11 (plus restart penalty) recomputed from a schedule."""
    n = x.sum(axis=1)
    r = np.arange(inst.N)
    welfare = float(inst.gval[r, n].sum())
    rem = inst.rem[r, n]
    h = float(_makespan(inst, rem))
    restarts = _restarts(inst, x)
    objective = welfare - inst.coef * h - inst.eta * restarts
    return {"objective": objective, "welfare": welfare, "makespan": h, "restarts": restarts,
            "counts": n, "util": inst.util[r, n], "remaining": rem}


def _count_value(inst: _PlanInstance, n: np.ndarray, gp: np.ndarray) -> float:
    """Count-level objective with the per-job table ``gp`` (restart lower bound included)."""
    r = np.arange(inst.N)
    return float(gp[r, n].sum() - inst.coef * _makespan(inst, inst.rem[r, n]))


def _unfinished_before(inst: _PlanInstance, x: np.ndarray) -> np.ndarray:
    """(N, T) bool: job j has not received all the rounds it needs before round t."""
    before = np.cumsum(x, axis=1) - x
    return before < inst.finish[:, None]


def _wc_violations(inst: _PlanInstance, x: np.ndarray) -> np.ndarray:
    """(N, T) bool: job j is idle, unfinished and would fit in round t's idle GPUs."""
    idle = inst.M - inst.w @ x
    return (~x) & _unfinished_before(inst, x) & (inst.w[:, None] <= idle[None, :])


def _schedule_residual(inst: _PlanInstance, x: np.ndarray, wc: str) -> float:
    """Largest relative violation of capacity, useful-round caps and work conservation."""
    load = inst.w @ x
    res = max(float(np.max(load - inst.M, initial=0)) / inst.M, 0.0)
    over = x.sum(axis=1) - inst.cap
    res = max(res, float(np.max(over, initial=0)))
    if wc != "none" and _wc_violations(inst, x).any():
        res = max(res, 1.0)
    return res


