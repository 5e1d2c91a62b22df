"""Shockwave's windowed schedule planner (shockwave.txt §4.3, §6.1, App. F, G.1-G.3, H).

A plan is a binary matrix ``x[j, t]``: job ``j`` runs on its gang of ``w_j`` GPUs in round
``t`` of a window of ``T`` rounds of ``D`` seconds. Job ``j`` has ``E_j`` epochs in total,
``F_j`` finished, an FTF estimate ``rho_j`` (App. G.2) and its *remaining regimes in order*,
each ``(seconds per epoch, epochs)`` (§5; :class:`PlanJob`). Scheduling it for ``n`` rounds
advances it by ``n*D`` seconds of work through its regimes in order -- the epoch rate changes
when a regime's epochs are used up -- capped at ``E_j`` (the regime decomposition of App. G),
so its utility depends only on how many rounds it gets:

    UTIL_j(n) = (F_j + epochs advanced by n*D seconds) / E_j,
    R_j(n)    = max(P_j - n*D, 0)         (remaining run time after the window; P_j before it).

The plan maximises Eq. 11,

    (1/(N*M)) * sum_j rho_j^k * log UTIL_j(n_j)  -  (lam/Z0) * H,
    H  = max(sum_j w_j R_j(n_j) / M, max_j R_j(n_j)),      Z0 = sum_j P_j,

subject to ``sum_j w_j x[j, t] <= M`` in every round, the regime order (built into
``UTIL_j``), and work conservation (App. H): no round leaves idle GPUs that an unscheduled,
unfinished job would fit in. An optional restart penalty (objective units per restart)
prefers contiguous rounds.

Two exact methods (``method=``), both certified against an upper bound:

* ``"milp"`` -- the whole plan as one MILP for HiGHS: binary ``x``, the round count ``n_j``,
  ``log UTIL_j`` through *unary increments* (``y[j, s] = [n_j >= s]``; continuous where
  ``log UTIL_j`` is concave in ``n``, binary with an order chain where a faster regime makes it
  convex -- exact at every integer point, no SOS2), the makespan through epigraph variables,
  work conservation through finish indicators. The gap is HiGHS's best bound.
* ``"fast"`` -- exploits that utility depends only on counts: a Lagrangian relaxation of the
  aggregate capacity ``sum_j w_j n_j <= M*T`` and of the makespan epigraph, solved by
  bisection over the capacity price on the ``(jobs, T+1)`` table of per-count values, gives
  counts and an upper bound; reduced-cost fixing shrinks every job's count range to the counts
  that could beat the incumbent, and a small count-level MILP on that core closes the gap.
  The counts are then packed into rounds (least slack first, running jobs kept contiguous),
  and the schedule is made work conserving (which never lowers the objective). With unit
  gangs the packing always succeeds, so the fast path is exact; with gangs the certificate
  reports any loss against the count relaxation's bound.
* ``"auto"`` (default) -- the fast path, then the MILP with the time left if the fast path
  could not certify ``mip_gap``; the better schedule and the better bound are kept.

``expectation="scenarios"`` plans against each job's sampled trajectories (App. F): the
objective uses ``log E[UTIL_j]`` over the job's scenarios (and the expected remaining times
in ``H``). :func:`relax_plan` is the continuous relaxation, which with equal weights and
``lam = 0`` is the volatile Fisher market over the window (``formulations/shockwave_plan.md``).
:class:`ReplanPolicy` says when to re-plan (§6.1).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._validation import (
    as_array,
    as_bool,
    as_finite_float,
    as_option,
    as_positive_float,
    as_positive_int,
    as_time_limit,
    as_tolerance,
)
from .backends import Backend, LinearProgram, get_backend
from .certificates import milp_certificate
from .errors import CertificateError, FairallocError, InputError, SolverError
from .results import Certificate, Result, SolveStats, Status, require_pandas
from .tolerances import FEAS_TOL, GAP_TOL

__all__ = [
    "PlanJob",
    "PlanResult",
    "RelaxedPlan",
    "ReplanDecision",
    "ReplanPolicy",
    "plan_schedule",
    "relax_plan",
]

METHODS = ("auto", "fast", "milp")
WORK_CONSERVATION = ("exact", "greedy", "none")
EXPECTATIONS = ("mean", "scenarios")
MAKESPAN = ("paper", "max_remaining")
REGIME_MODELS = ("forecast", "flat")
# a regime list may fall short of the remaining epochs by this relative amount (round-off)
_EPOCH_RTOL = 1e-9
# relative slack (of the objective's data scale) used when comparing objective values
_REL_SLACK = 1e-12
# the largest cluster and window the planner accepts (tables are jobs x (rounds + 1))
_MAX_GPUS = 2**31 - 1
_MAX_ROUNDS = 10_000
# |k log rho| beyond which rho^k is computed relative to the largest weight (log space)
_LOG_WEIGHT_LIMIT = 600.0


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
    if total < remaining * (1.0 - _EPOCH_RTOL) - 1e-12:
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
        :func:`fairalloc.ftf_estimate`. The plan weighs the job by ``rho_j ** k``.
    regimes : sequence of (float, float)
        The remaining regimes in order, each ``(seconds per epoch, epochs)``, starting with
        what is left of the ongoing one (:attr:`fairalloc.RegimeForecast.regimes`). They must
        cover the ``E_j - F_j`` epochs left; progress stops at ``E_j``.
    running : bool, default False
        Whether the job runs in the round just before the window (running on in round 0 is
        not a restart).
    scenarios : sequence of regime lists, optional
        Trajectories sampled from the forecast posterior (App. F;
        :meth:`fairalloc.RegimeForecast.sample_regimes`), used by
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
        if w > _MAX_GPUS:
            raise InputError(f"workers = {w} exceeds the largest supported gang "
                             f"({_MAX_GPUS} GPUs)", argument="workers")
        total = as_positive_float(self.total_epochs, "total_epochs")
        done = as_positive_float(self.done_epochs, "done_epochs", allow_zero=True)
        if done > total * (1.0 + _EPOCH_RTOL):
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
        """Build a job from a :class:`fairalloc.RegimeForecast` (posterior-mean regimes).

        ``samples > 0`` also draws that many trajectories from the posterior as
        :attr:`scenarios` (App. F).
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
        """``P_j``: isolated run time to finish along :attr:`regimes` (seconds)."""
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
class _Instance:
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
    coef: float  # lam / Z0 (paper) or lam (max_remaining)
    makespan: str
    eta: float  # restart penalty
    z0: float
    reg_seconds: np.ndarray  # (N, K+1) cumulative regime seconds of the mean trajectory
    k: float
    lam: float
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
        """Whether ``bound - value`` is within ``gap`` of :meth:`gap_scale` (unit free)."""
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
    return _pow2(min(max(D, longest * 1e-15), longest))


def _weights(rho: np.ndarray, k: float, N: int, M: int, coef: float, eta: float
             ) -> tuple[np.ndarray, float]:
    """FTF weights ``rho^k / (N M)`` computed in log space, and the log-scale shift applied.

    ``rho^k`` overflows (or underflows) for large ``k``. When ``max_j |k log rho_j|`` exceeds
    :data:`_LOG_WEIGHT_LIMIT` the weights are ``exp(k log rho_j - s) / (N M)`` with
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
    if float(np.abs(logw).max()) <= _LOG_WEIGHT_LIMIT:
        return rho ** k / (N * M), 0.0
    shift = float(logw.max())
    for extra in (coef, eta):
        if extra > 0:
            shift = max(shift, math.log(extra) - _LOG_WEIGHT_LIMIT)
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


def _build_instance(jobs: Any, num_gpus: Any, *, rounds: Any, round_duration: Any, k: Any,
                    lam: Any, z0: Any, util_floor: Any, expectation: str, makespan: str,
                    regime_model: str, restart_penalty: Any) -> _Instance:
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
    if M > _MAX_GPUS:
        raise InputError(f"num_gpus = {M} exceeds the largest supported cluster "
                         f"({_MAX_GPUS} GPUs)", argument="num_gpus")
    T = as_positive_int(rounds, "rounds")
    if T > _MAX_ROUNDS:
        raise InputError(f"rounds = {T} exceeds the largest supported window "
                         f"({_MAX_ROUNDS} rounds)", argument="rounds")
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
        need = np.minimum(finish_s / D, 2.0**53)
    rounds_q = np.ceil(need - 1e-9).astype(np.int64)
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
    cap = np.minimum(finish, T)

    # the mean trajectory's regime boundaries (seconds), for reporting regime indices
    msec, mep = _pad_regimes(mean_arrays)
    if regime_model == "flat":
        msec, mep = _flatten(msec, mep, left)
    reg_seconds = np.zeros((N, msec.shape[1] + 1))
    reg_seconds[:, 1:] = np.cumsum(msec * mep, axis=1)

    if makespan == "paper":
        if z0 is None:
            z0_v = float(rem[:, 0].sum())
        else:
            z0_v = as_positive_float(z0, "z0")
        with np.errstate(over="ignore"):
            coef = lam_v / z0_v if z0_v > 0 else 0.0
        if not math.isfinite(coef):
            raise InputError(f"lam / z0 = {lam_v:g} / {z0_v:g} overflows a float",
                             argument="z0")
    else:  # upstream: the largest remaining run time, in raw seconds
        z0_v = 1.0
        coef = lam_v
    weight, shift = _weights(rho, kexp, N, M, coef, eta)
    if shift:  # the whole objective is scaled by exp(-shift) (see _weights)
        coef = math.exp(math.log(coef) - shift) if coef > 0 else 0.0
        eta = math.exp(math.log(eta) - shift) if eta > 0 else 0.0
    gval = weight[:, None] * np.log(np.maximum(util, floor))
    inst = _Instance(N=N, T=T, M=M, D=D, w=w, weight=weight, util=util, rem=rem, gval=gval,
                     finish=finish, cap=cap, running=running, coef=coef, makespan=makespan,
                     eta=eta, z0=z0_v, reg_seconds=reg_seconds, k=kexp, lam=lam_v, E=E, F=F,
                     traj_owner=owner, traj_sec=sec, traj_ep=ep, traj_finish=finish_s,
                     log_shift=shift, tau=_time_unit(D, rem))
    scale = _data_scale(inst)
    if not math.isfinite(scale):
        raise InputError(f"lam = {lam_v:g} (or restart_penalty = {eta:g}) makes the objective "
                         "overflow a float; use a smaller value (or a larger z0)",
                         argument="lam")
    return dataclasses.replace(inst, data_scale=scale)


def _data_scale(inst: _Instance) -> float:
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
def _makespan(inst: _Instance, rem: np.ndarray) -> np.ndarray:
    """H for remaining times ``rem`` (..., N)."""
    longest = rem.max(axis=-1)
    if inst.makespan == "max_remaining":
        return longest
    return np.maximum(rem @ inst.w / inst.M, longest)


def _restarts(inst: _Instance, x: np.ndarray) -> int:
    prev = np.concatenate([inst.running[:, None], x[:, :-1]], axis=1)
    return int((x & ~prev).sum())


def _evaluate(inst: _Instance, x: np.ndarray) -> dict[str, Any]:
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


def _count_value(inst: _Instance, n: np.ndarray, gp: np.ndarray) -> float:
    """Count-level objective with the per-job table ``gp`` (restart lower bound included)."""
    r = np.arange(inst.N)
    return float(gp[r, n].sum() - inst.coef * _makespan(inst, inst.rem[r, n]))


def _unfinished_before(inst: _Instance, x: np.ndarray) -> np.ndarray:
    """(N, T) bool: job j has not received all the rounds it needs before round t."""
    before = np.cumsum(x, axis=1) - x
    return before < inst.finish[:, None]


def _wc_violations(inst: _Instance, x: np.ndarray) -> np.ndarray:
    """(N, T) bool: job j is idle, unfinished and would fit in round t's idle GPUs."""
    idle = inst.M - inst.w @ x
    return (~x) & _unfinished_before(inst, x) & (inst.w[:, None] <= idle[None, :])


def _schedule_residual(inst: _Instance, x: np.ndarray, wc: str) -> float:
    """Largest relative violation of capacity, useful-round caps and work conservation."""
    load = inst.w @ x
    res = max(float(np.max(load - inst.M, initial=0)) / inst.M, 0.0)
    over = x.sum(axis=1) - inst.cap
    res = max(res, float(np.max(over, initial=0)))
    if wc != "none" and _wc_violations(inst, x).any():
        res = max(res, 1.0)
    return res


# --------------------------------------------------------------------------------------------
# fast path: Lagrangian relaxation over counts
# --------------------------------------------------------------------------------------------
def _masked(inst: _Instance, table: np.ndarray) -> np.ndarray:
    """``table`` with counts above each job's useful cap set to -inf."""
    nn = np.arange(inst.T + 1)
    return np.where(nn[None, :] <= inst.cap[:, None], table, -np.inf)


def _restart_lower(inst: _Instance) -> np.ndarray:
    """Per-job count table with the least restart penalty a count implies (0 or one start)."""
    gp = inst.gval.copy()
    if inst.eta > 0:
        gp[:, 1:] -= inst.eta * (~inst.running)[:, None]
    return gp


@dataclass
class _Lagrange:
    value: float
    pi: float
    kappa: np.ndarray
    phi: np.ndarray  # (N, T+1) per-count Lagrangian values (-inf outside the domain)


def _phi(inst: _Instance, gpm: np.ndarray, pi: float, kappa: np.ndarray) -> np.ndarray:
    nn = np.arange(inst.T + 1, dtype=float)
    return gpm - pi * inst.w[:, None] * nn[None, :] - kappa[:, None] * inst.rem


def _argmax_last(phi: np.ndarray) -> np.ndarray:
    """Largest maximiser per row (ties to more rounds)."""
    best = phi.max(axis=1, keepdims=True)
    tol = 1e-13 * np.maximum(np.abs(best), 1e-300)
    hit = phi >= best - tol
    return phi.shape[1] - 1 - np.argmax(hit[:, ::-1], axis=1)


def _bisect_price(inst: _Instance, gpm: np.ndarray, kappa: np.ndarray
                  ) -> tuple[_Lagrange, np.ndarray, np.ndarray]:
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
        return _Lagrange(val, 0.0, kappa, phi0), n0, n0
    nn = np.arange(inst.T + 1, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (phi0[:, 1:] - phi0[:, :1]) / (w[:, None] * nn[None, 1:])
    finite = np.isfinite(ratio)
    top = float(ratio[finite].max(initial=0.0))
    scale = float(np.abs(phi0[np.isfinite(phi0)]).max(initial=0.0)) + 1e-300
    # at this price every job strictly prefers no round
    hi = max(top, 0.0) * (1 + 1e-6) + 1e-6 * scale
    lo = 0.0
    n_lo = n0
    for _ in range(200):
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
    return _Lagrange(val, hi, kappa, phi), n_hi, n_lo


def _greedy_fill(inst: _Instance, gp: np.ndarray, n: np.ndarray, nxt: np.ndarray,
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
        for _ in range(8):
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


def _kappa_candidates(inst: _Instance, n_inc: np.ndarray | None) -> list[np.ndarray]:
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
    if inst.makespan == "max_remaining" or longest >= area * (1 - 1e-9):
        for theta in ((1.0, 0.5) if inst.makespan == "paper" else (1.0,)):
            kap = (1 - theta) * c * inst.w / inst.M if inst.makespan == "paper" else np.zeros(N)
            kap = kap.copy()
            kap[jstar] += theta * c
            out.append(kap)
    return out


# --------------------------------------------------------------------------------------------
# MILP helpers
# --------------------------------------------------------------------------------------------
class _Rows:
    """Sparse row accumulator (COO triplets) with bounds."""

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


def _objective_scale(delta: np.ndarray, inst: _Instance) -> float:
    """Scale so that typical objective coefficients are O(1) for the MILP solver's tolerances.

    A power of two near ``1 / (90th percentile of |delta|)`` (exact scaling), lowered where
    needed so that the makespan and restart coefficients stay below ``1e12``.
    """
    mag = np.abs(delta[np.abs(delta) > 0])
    sigma = 1.0 if mag.size == 0 else _pow2(1.0 / float(np.quantile(mag, 0.9)))
    big = max(inst.coef * inst.tau, inst.eta)
    if big * sigma > 1e12:
        sigma = _pow2(1e12 / big)
    return sigma


def _concave_break(delta: np.ndarray, owner: np.ndarray, s: np.ndarray,
                   lo: np.ndarray) -> np.ndarray:
    """Per job: whether its step values increase anywhere (log UTIL convex somewhere)."""
    nj = lo.size
    if delta.size < 2:
        return np.zeros(nj, dtype=bool)
    same = owner[1:] == owner[:-1]
    scale = np.maximum(np.abs(delta[1:]), np.abs(delta[:-1]))
    rise = same & (delta[1:] > delta[:-1] + 1e-12 * scale)
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
        keep[1:] = ~((jj[1:] == jj[:-1]) & np.isclose(slope[1:], slope[:-1], rtol=1e-12,
                                                       atol=1e-9))
    jj, s, slope, rr = jj[keep], s[keep], slope[keep], rr[keep]
    return jj, slope, rem[rr, s] - slope * s


class _Solver:
    """The backend that runs every MILP of one call, and what it reported.

    The default ``"highs"`` (a core dependency) is instantiated on the first solve, so a plan
    the fast path certifies alone never imports the solver package; any other backend is
    resolved (and its availability checked) up front.
    """

    def __init__(self, backend: str | Backend, threads: int | None) -> None:
        self._backend: Backend | None = None
        if isinstance(backend, str) and backend == "highs":
            self._name = "highs"
        else:
            self._backend = get_backend(backend, need="milp")
            self._name = self._backend.name
        self.threads = threads
        self.solves = 0
        self.raw_status = ""

    @property
    def name(self) -> str:
        return self._name

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = get_backend(self._name, need="milp")
        return self._backend

    def solve(self, lp: LinearProgram, time_limit: float | None, mip_gap: float,
              start: np.ndarray | None = None) -> Any:
        if time_limit is not None and time_limit <= 0:
            time_limit = 1e-3
        sol = self.backend.solve_lp(lp, time_limit=time_limit, mip_gap=mip_gap,
                                    threads=self.threads, start=start)
        self.solves += 1
        self.raw_status = str(sol.raw_status or sol.status)
        return sol


def _has_point(sol: Any, lp: LinearProgram) -> bool:
    """Whether the solve returned a usable point of the right size (a backend may report a
    status with a point attached but hand back none, e.g. HiGHS's ``Empty`` model status)."""
    return bool(sol.usable) and sol.x is not None and sol.x.shape == (lp.shape[1],)


def _packing_cuts(inst: _Instance) -> tuple[list[np.ndarray], list[int], list[np.ndarray]]:
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


def _cover_cut(inst: _Instance, n: np.ndarray, *, max_size: int = 256
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


def _max_bound(lp: LinearProgram, sol: Any, sigma: float) -> float:
    """Upper bound on the maximised (unscaled) objective from a solve of the scaled minimum.

    A MILP's best bound comes from HiGHS; a program left with no integer column (nothing to
    decide) is an LP solved to optimality, whose objective is its own bound.
    """
    if lp.is_mip:
        b = float(sol.mip_dual_bound)
        return -b / sigma if math.isfinite(b) else math.inf
    return -float(sol.objective) / sigma if sol.status == "optimal" else math.inf


def _count_milp(inst: _Instance, gp: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
                time_limit: float | None, mip_gap: float, solver: _Solver,
                extra_cuts: Sequence[tuple[np.ndarray, int]] = ()
                ) -> tuple[np.ndarray | None, float, int]:
    """Exact count-level MILP on the count ranges ``[lo_j, hi_j]``.

    Aggregate capacity ``sum_j w_j n_j <= M*T`` plus the gang cuts of :func:`_packing_cuts`
    (a relaxation of per-round capacity), the exact count values ``gp`` by unary increments
    and the makespan epigraph. Returns (counts or None, upper bound on the restricted
    optimum, nodes).
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
    col_r = ny
    col_h = ny + nr
    col_m = col_h + (1 if use_h else 0)
    ncols = col_m + len(cliques)
    sigma = _objective_scale(delta, inst)
    c = np.zeros(ncols)
    c[:ny] = -delta * sigma
    col_lo = np.zeros(ncols)
    col_hi = np.ones(ncols)
    col_hi[col_m:] = T
    integ = np.zeros(ncols, dtype=bool)
    rows = _Rows()

    def set_row(mask: np.ndarray, extra_cols: np.ndarray, extra_vals: np.ndarray,
                upper: float) -> None:
        """One row ``sum_{j in mask} n_j + extra <= upper`` over the y columns."""
        ycols = np.flatnonzero(mask[jobs_of])
        const = float(lo[mask].sum())
        rows.add(np.zeros(ycols.size + extra_cols.size),
                 np.concatenate([ycols, extra_cols]),
                 np.concatenate([np.ones(ycols.size), extra_vals]), 1, -np.inf, upper - const)

    # aggregate capacity
    room = inst.capacity - int(inst.w @ lo)
    rows.add(np.zeros(ny), np.arange(ny), inst.w[jobs_of], 1, -np.inf, room)
    for members, b in zip(sets, rhs, strict=True):
        set_row(members, np.zeros(0, dtype=np.int64), np.zeros(0), b)
    for g, (clique, small) in enumerate(cliques):
        col = col_m + g
        set_row(clique, np.array([col]), np.array([1.0]), T)
        # n_i <= m_g for the small jobs i of the group
        idx = np.flatnonzero(small)
        sel = small[jobs_of]
        yrows = np.searchsorted(idx, jobs_of[sel])
        rows.add(np.concatenate([yrows, np.arange(idx.size)]),
                 np.concatenate([np.flatnonzero(sel), np.full(idx.size, col)]),
                 np.concatenate([np.ones(int(sel.sum())), -np.ones(idx.size)]),
                 idx.size, -np.inf, -lo[idx].astype(float))
    # order chains where the job's values are not concave on its range
    bent = _concave_break(delta, owner, s, flo)
    chain = bent[owner[:-1]] & (owner[1:] == owner[:-1]) if ny > 1 else np.zeros(0, bool)
    idx = np.flatnonzero(chain)
    k = idx.size
    rows.add(np.repeat(np.arange(k), 2), np.stack([idx, idx + 1], 1).ravel(),
             np.tile([1.0, -1.0], k), k, 0.0, np.inf)
    integ[:ny] = True  # counts are integers (no x here); chains only where values bend up
    if use_h:
        c[col_h] = coef * inst.tau * sigma
        col_hi[ny:col_m] = np.inf
        jj, slope, icpt = _rem_cuts(rem_t, free, flo, fhi)
        # r_j - slope * (lo_j + sum_s y_js) >= icpt, expanded over the job's steps
        ncut = jj.size
        per = (fhi - flo)[jj]
        cut_rows = np.repeat(np.arange(ncut), per)
        ycols = np.repeat(start[jj], per) + (np.arange(int(per.sum()))
                                             - np.repeat(np.cumsum(per) - per, per))
        rows.add(np.concatenate([np.arange(ncut), cut_rows]),
                 np.concatenate([col_r + jj, ycols]),
                 np.concatenate([np.ones(ncut), -np.repeat(slope, per)]),
                 ncut, icpt + slope * flo[jj], np.inf)
        fixed = np.ones(N, dtype=bool)
        fixed[free] = False
        col_lo[col_h] = float(fixed_rem[fixed].max(initial=0.0))
        rows.add(np.repeat(np.arange(nr), 2),
                 np.stack([np.full(nr, col_h), col_r + np.arange(nr)], 1).ravel(),
                 np.tile([1.0, -1.0], nr), nr, 0.0, np.inf)
        if inst.makespan == "paper":
            const = float(fixed_rem[fixed] @ inst.w[fixed]) / inst.M
            rows.add(np.zeros(nr + 1), np.concatenate([[col_h], col_r + np.arange(nr)]),
                     np.concatenate([[1.0], -inst.w[free] / inst.M]), 1, const, np.inf)
    A, rl, ru = rows.matrix(ncols)
    offset = -float(gp[np.arange(N), lo].sum()) * sigma
    lp = LinearProgram.build(c, A, rl, ru, col_lo, col_hi, integrality=integ, offset=offset)
    sol = solver.solve(lp, time_limit, mip_gap)
    if not _has_point(sol, lp):
        return None, math.inf, 0
    y = np.round(sol.x[:ny]).astype(np.int64) if ny else np.zeros(0, dtype=np.int64)
    n = lo.copy()
    np.add.at(n, jobs_of, y)
    return n, _max_bound(lp, sol, sigma), sol.iterations


# --------------------------------------------------------------------------------------------
# packing counts into rounds, work conservation
# --------------------------------------------------------------------------------------------
def _fit_in_order(order: np.ndarray, w: np.ndarray, room: int) -> np.ndarray:
    """Jobs of ``order`` accepted first-fit into ``room`` GPUs (vectorised passes)."""
    taken = []
    cand = order
    for _ in range(64):
        cand = cand[w[cand] <= room]
        if cand.size == 0:
            break
        acc = np.cumsum(w[cand]) <= room
        take = cand[acc]
        taken.append(take)
        room -= int(w[take].sum())
        cand = cand[~acc]
    return np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)


def _pack(inst: _Instance, n: np.ndarray, *, gangs_first: bool = False) -> np.ndarray:
    """Place ``n_j`` rounds per job, round by round.

    Jobs with no slack left (they need every remaining round) go first, then running jobs
    (contiguity), then least slack, then larger gangs; ``gangs_first`` puts larger gangs
    before running jobs. For unit gangs this never fails when ``sum_j n_j <= M*T`` and
    ``n_j <= T`` (every round is filled as far as the jobs with rounds left allow, and no job
    is left with more rounds than remain).
    """
    N, T = inst.N, inst.T
    w = inst.w
    x = np.zeros((N, T), dtype=bool)
    left = n.astype(np.int64).copy()
    prev = inst.running.copy()
    for t in range(T):
        live = np.flatnonzero(left > 0)
        if live.size == 0:
            break
        slack = (T - t) - left[live]
        # mandatory jobs (no slack left) first, then running ones (contiguity), then least
        # slack, then larger gangs (harder to place later)
        if gangs_first:
            key = np.lexsort((slack, ~prev[live], -w[live], slack > 0))
        else:
            key = np.lexsort((-w[live], slack, ~prev[live], slack > 0))
        take = _fit_in_order(live[key], w, inst.M)
        x[take, t] = True
        left[take] -= 1
        prev = x[:, t]
    return x


def _work_conserve(inst: _Instance, x: np.ndarray, gp: np.ndarray, kappa: np.ndarray
                   ) -> np.ndarray:
    """Make ``x`` work conserving round by round; never lowers the count objective.

    In round ``t``, an idle job that is unfinished and fits gets the round: a job short of
    its useful rounds gains one (best marginal value per GPU first); a job that already has
    them all (so it has a later round) moves its last round forward.
    """
    x = x.copy()
    w = inst.w
    N, T = inst.N, inst.T
    for t in range(T):
        for _ in range(N + 1):
            idle = inst.M - int(w @ x[:, t])
            if idle <= 0:
                break
            before = x[:, :t].sum(axis=1)
            n = x.sum(axis=1)
            cand = np.flatnonzero(~x[:, t] & (before < inst.finish) & (w <= idle))
            if cand.size == 0:
                break
            add = cand[n[cand] < inst.cap[cand]]
            move = cand[n[cand] >= inst.cap[cand]]
            gain = (gp[add, n[add] + 1] - gp[add, n[add]]) + kappa[add] * (
                inst.rem[add, n[add]] - inst.rem[add, n[add] + 1])
            order = np.concatenate([add[np.argsort(-gain / w[add], kind="stable")],
                                    move[np.argsort(-w[move], kind="stable")]])
            take = _fit_in_order(order, w, idle)
            mv = take[n[take] >= inst.cap[take]]
            if mv.size:
                last = T - 1 - np.argmax(x[mv, ::-1], axis=1)
                x[mv, last] = False
            x[take, t] = True
    return x


def _greedy_upstream(inst: _Instance, x: np.ndarray) -> np.ndarray:
    """Upstream's post-pass: fill idle GPUs with the jobs of largest remaining run time."""
    x = x.copy()
    w = inst.w
    r = np.arange(inst.N)
    for t in range(inst.T):
        idle = inst.M - int(w @ x[:, t])
        if idle <= 0:
            continue
        before = x[:, :t].sum(axis=1)
        n = x.sum(axis=1)
        cand = np.flatnonzero(~x[:, t] & (before < inst.finish) & (n < inst.cap) & (w <= idle))
        if cand.size == 0:
            continue
        rem_now = inst.rem[r[cand], n[cand]]
        order = cand[np.argsort(-rem_now, kind="stable")]
        take = _fit_in_order(order, w, idle)
        x[take, t] = True
    return x


# --------------------------------------------------------------------------------------------
# the full MILP
# --------------------------------------------------------------------------------------------
def _schedule_milp(inst: _Instance, wc: str, *, time_limit: float | None, mip_gap: float,
                   solver: _Solver, start_x: np.ndarray | None = None
                   ) -> tuple[np.ndarray | None, float, Any, LinearProgram]:
    """The whole plan as one MILP (binary x, unary increments, epigraphs, App. H rows).

    ``start_x`` (a feasible schedule) becomes HiGHS's first incumbent, with every auxiliary
    column computed from it.
    """
    N, T, M = inst.N, inst.T, inst.M
    act = np.flatnonzero(inst.cap > 0)
    na = act.size
    w = inst.w[act]
    cap = inst.cap[act]
    fin = inst.finish[act]
    gval = inst.gval[act]
    # columns
    nx = na * T
    col_n = nx
    col_y = col_n + na
    zeros = np.zeros(na, dtype=np.int64)
    owner, s, yoff = _steps(zeros, cap)
    ny = owner.size
    col_load = col_y + ny
    use_h = inst.coef > 0
    col_r = col_load + T
    nr = na if use_h else 0
    col_h = col_r + nr
    nh = 1 if use_h else 0
    col_f = col_h + nh
    if wc == "exact":
        fmask = np.arange(T)[None, :] >= fin[:, None]  # finished possible from round fin on
        fj, ft = np.nonzero(fmask)
    else:
        fj = ft = np.zeros(0, dtype=np.int64)
    nf = fj.size
    col_s = col_f + nf
    use_s = inst.eta > 0
    ns = nx if use_s else 0
    ncols = col_s + ns

    delta = gval[owner, s] - gval[owner, s - 1]
    sigma = _objective_scale(delta, inst)
    c = np.zeros(ncols)
    c[col_y:col_y + ny] = -delta * sigma
    lo = np.zeros(ncols)
    hi = np.ones(ncols)
    integ = np.zeros(ncols, dtype=bool)
    integ[:nx] = True
    hi[col_n:col_n + na] = cap
    hi[col_load:col_load + T] = M
    bent = _concave_break(delta, owner, s, zeros)
    integ[col_y:col_y + ny] = bent[owner]
    integ[col_f:col_f + nf] = True
    if use_h:
        hi[col_r:col_r + nr] = np.inf
        hi[col_h] = np.inf
        c[col_h] = inst.coef * inst.tau * sigma
    if use_s:
        c[col_s:col_s + ns] = inst.eta * sigma

    rows = _Rows()
    xj = np.repeat(np.arange(na), T)
    xt = np.tile(np.arange(T), na)
    xcol = xj * T + xt
    # n_j - sum_t x_jt = 0
    rows.add(np.concatenate([np.arange(na), xj]), np.concatenate([col_n + np.arange(na), xcol]),
             np.concatenate([np.ones(na), -np.ones(nx)]), na, 0.0, 0.0)
    # sum_s y_js - n_j = 0
    rows.add(np.concatenate([owner, np.arange(na)]),
             np.concatenate([col_y + np.arange(ny), col_n + np.arange(na)]),
             np.concatenate([np.ones(ny), -np.ones(na)]), na, 0.0, 0.0)
    # order chains for non-concave jobs: y_js >= y_j,s+1
    chain = np.flatnonzero(bent[owner[:-1]] & (owner[1:] == owner[:-1])) if ny > 1 else \
        np.zeros(0, dtype=np.int64)
    k = chain.size
    rows.add(np.repeat(np.arange(k), 2), col_y + np.stack([chain, chain + 1], 1).ravel(),
             np.tile([1.0, -1.0], k), k, 0.0, np.inf)
    # load_t - sum_j w_j x_jt = 0
    rows.add(np.concatenate([np.arange(T), xt]), np.concatenate([col_load + np.arange(T), xcol]),
             np.concatenate([np.ones(T), -w[xj].astype(float)]), T, 0.0, 0.0)
    if use_h:
        jj, slope, icpt = _rem_cuts(inst.rem / inst.tau, act, zeros, cap)
        ncut = jj.size
        rows.add(np.repeat(np.arange(ncut), 2),
                 np.stack([col_r + jj, col_n + jj], 1).ravel(),
                 np.stack([np.ones(ncut), -slope], 1).ravel(), ncut, icpt, np.inf)
        rows.add(np.repeat(np.arange(nr), 2),
                 np.stack([np.full(nr, col_h), col_r + np.arange(nr)], 1).ravel(),
                 np.tile([1.0, -1.0], nr), nr, 0.0, np.inf)
        if inst.makespan == "paper":
            rows.add(np.zeros(nr + 1), np.concatenate([[col_h], col_r + np.arange(nr)]),
                     np.concatenate([[1.0], -w / M]), 1, 0.0, np.inf)
    if wc == "exact":
        # load_t + K_j (x_jt + f_jt) >= K_j,  K_j = M - w_j + 1
        K = (M - w + 1).astype(float)
        fidx = np.full((na, T), -1, dtype=np.int64)
        fidx[fj, ft] = np.arange(nf)
        r0 = np.arange(nx)
        has_f = fidx[xj, xt] >= 0
        rr = np.concatenate([r0, r0, r0[has_f]])
        cc = np.concatenate([col_load + xt, xcol, col_f + fidx[xj, xt][has_f]])
        vv = np.concatenate([np.ones(nx), K[xj], K[xj][has_f]])
        rows.add(rr, cc, vv, nx, K[xj], np.inf)
        # f_jt <= f_j,t+1 ; f_jt + x_jt <= 1 ; fin_j f_jt - n_j <= 0
        nxt = np.flatnonzero((ft[:-1] + 1 == ft[1:]) & (fj[:-1] == fj[1:])) if nf > 1 else \
            np.zeros(0, dtype=np.int64)
        m1 = nxt.size
        rows.add(np.repeat(np.arange(m1), 2), col_f + np.stack([nxt, nxt + 1], 1).ravel(),
                 np.tile([1.0, -1.0], m1), m1, -np.inf, 0.0)
        rows.add(np.repeat(np.arange(nf), 2),
                 np.stack([col_f + np.arange(nf), fj * T + ft], 1).ravel(),
                 np.ones(2 * nf), nf, -np.inf, 1.0)
        rows.add(np.repeat(np.arange(nf), 2),
                 np.stack([col_f + np.arange(nf), col_n + fj], 1).ravel(),
                 np.stack([fin[fj].astype(float), -np.ones(nf)], 1).ravel(), nf, -np.inf, 0.0)
    if use_s:
        # s_jt - x_jt + x_j,t-1 >= 0 (t >= 1);  s_j0 - x_j0 >= -running_j
        first = xt == 0
        rr = np.concatenate([np.arange(nx), np.arange(nx), np.arange(nx)[~first]])
        cc = np.concatenate([col_s + np.arange(nx), xcol, xcol[~first] - 1])
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
        start[:nx] = xs.ravel()
        start[col_n:col_n + na] = cnt
        start[col_y:col_y + ny] = cnt[owner] >= s
        start[col_load:col_load + T] = w @ xs
        if use_h:
            start[col_r:col_r + nr] = inst.rem[act, cnt] / inst.tau
            start[col_h] = float(_makespan(inst, inst.rem[np.arange(N), start_x.sum(axis=1)])
                                 ) / inst.tau
        if nf:
            before = np.cumsum(xs, axis=1) - xs
            start[col_f:col_f + nf] = before[fj, ft] >= fin[fj]
        if use_s:
            prev = np.concatenate([inst.running[act][:, None], xs[:, :-1]], axis=1)
            start[col_s:col_s + ns] = (xs & ~prev).ravel()
    sol = solver.solve(lp, time_limit, mip_gap, start=start)
    if not _has_point(sol, lp):
        return None, math.inf, sol, lp
    x = np.zeros((N, T), dtype=bool)
    x[act] = sol.x[:nx].reshape(na, T) > 0.5
    bound = _max_bound(lp, sol, sigma)
    # the certificate works on the unscaled program
    lp_unscaled = dataclasses.replace(lp, c=lp.c / sigma, offset=lp.offset / sigma)
    return x, bound, sol, lp_unscaled


# --------------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class PlanResult(Result):
    """A Shockwave plan over a window of rounds, with its certificate.

    Attributes
    ----------
    schedule : ndarray of bool, shape (n, rounds)
        ``schedule[j, t]``: job ``j`` runs on its gang in round ``t``.
    rounds_given : ndarray of int, shape (n,)
        Rounds each job gets in the window.
    utility : ndarray, shape (n,)
        ``UTIL_j`` after the window (expected over scenarios in scenario mode).
    remaining : ndarray, shape (n,)
        ``R_j``: remaining isolated run time after the window (seconds).
    regime : ndarray of int, shape (n, rounds)
        Index into the job's ``regimes`` of the regime it is in when round ``t`` starts, for
        scheduled rounds (``-1`` elsewhere): the regime decomposition ``Y_j[k, t]`` of App. G.
    welfare : float
        ``(1/(N*M)) * sum_j rho_j^k log UTIL_j``.
    makespan_bound : float
        ``H`` after the window (seconds).
    z0 : float
        The normaliser ``Z0``.
    restarts : int
        Rounds in which a job starts that did not run in the round before.
    bound : float
        Certified upper bound on the optimal objective.
    method : str
        ``"fast"`` or ``"milp"`` (the path whose schedule was returned).
    objective : float
        ``welfare - (lam/Z0) * makespan_bound - restart_penalty * restarts``.
    log_scale : float
        ``0`` unless ``rho^k`` would overflow or underflow a float (``|k log rho| > 600``):
        then ``objective``, ``welfare``, ``bound`` and the certificate are the true values
        multiplied by ``exp(-log_scale)`` (the weights are computed in log space relative to
        the largest; the makespan and restart terms are scaled alike, so the plan is the
        argmax of the true objective).

    A plan whose gap target was not proven has ``status="time_limit"`` and
    ``certificate.ok == False``; ``certificate.relative_gap`` is the gap over
    ``certificate.scale`` (``max(|objective|, |bound|, data scale)``).
    """

    schedule: np.ndarray
    rounds_given: np.ndarray
    utility: np.ndarray
    remaining: np.ndarray
    regime: np.ndarray
    welfare: float
    makespan_bound: float
    z0: float
    restarts: int
    bound: float
    method: str
    log_scale: float = 0.0

    @property
    def relative_gap(self) -> float:
        """``gap / |objective|`` -- the MIP solvers' relative gap (0 when both are 0)."""
        if self.gap <= 0:
            return 0.0
        return self.gap / max(abs(self.objective), 1e-300)

    def jobs_in_round(self, t: int) -> np.ndarray:
        """Indices of the jobs scheduled in round ``t``."""
        t = as_positive_int(t, "t", allow_zero=True)
        if t >= self.schedule.shape[1]:
            raise InputError(f"t = {t} is outside the {self.schedule.shape[1]}-round window",
                             argument="t")
        return np.flatnonzero(self.schedule[:, t])

    def to_frame(self) -> Any:
        """One row per job: rounds, utility, remaining time, then one column per round."""
        pd = require_pandas()
        base = pd.DataFrame({"rounds": self.rounds_given, "utility": self.utility,
                             "remaining": self.remaining})
        base.index.name = "job"
        sched = pd.DataFrame(self.schedule, columns=[f"t{t}" for t in
                                                     range(self.schedule.shape[1])])
        return pd.concat([base, sched], axis=1)


def _regime_index(inst: _Instance, x: np.ndarray) -> np.ndarray:
    before = (np.cumsum(x, axis=1) - x) * inst.D
    k = inst.reg_seconds.shape[1] - 1
    tol = _EPOCH_RTOL * np.abs(inst.reg_seconds).max(axis=1, initial=0.0)[:, None, None]
    idx = (inst.reg_seconds[:, None, 1:] <= before[:, :, None] + tol).sum(axis=-1)
    idx = np.minimum(idx, max(k - 1, 0))
    return np.where(x, idx, -1)


@dataclass
class _Candidate:
    x: np.ndarray
    value: float
    bound: float
    method: str
    iterations: int = 0
    solves: int = 0
    lp: LinearProgram | None = None
    lp_x: np.ndarray | None = None
    lp_bound: float = math.nan


def _realise(inst: _Instance, n: np.ndarray, gp: np.ndarray, kappa: np.ndarray, wc: str
             ) -> tuple[np.ndarray, float]:
    """Pack counts into rounds (two orders), apply the work-conservation rule, keep the best."""
    best: tuple[np.ndarray, float] | None = None
    orders = (False, True) if int(inst.w.max()) > 1 else (False,)
    for gangs_first in orders:
        x = _pack(inst, n, gangs_first=gangs_first)
        if wc == "exact":
            x = _work_conserve(inst, x, gp, kappa)
        elif wc == "greedy":
            x = _greedy_upstream(inst, x)
        value = _evaluate(inst, x)["objective"]
        if best is None or value > best[1]:
            best = (x, value)
    assert best is not None
    return best


def _fast(inst: _Instance, wc: str, *, mip_gap: float, deadline: float | None,
          solver: _Solver) -> _Candidate:
    """Lagrangian counts, reduced-cost fixing, core count MILP, packing (module docstring)."""
    gp = _restart_lower(inst)
    gpm = _masked(inst, gp)
    best_lag: _Lagrange | None = None
    n_inc: np.ndarray | None = None
    z_inc = -math.inf
    seen: list[np.ndarray] = []
    # makespan multipliers: first the a-priori split, then splits aimed at the incumbent's H
    for pass_ in range(2 if inst.coef > 0 else 1):
        for kappa in _kappa_candidates(inst, n_inc if pass_ else None):
            if any(np.array_equal(kappa, old) for old in seen):
                continue
            seen.append(kappa)
            lag, n_hi, n_lo = _bisect_price(inst, gpm, kappa)
            if best_lag is None or lag.value < best_lag.value:
                best_lag = lag
            n = _greedy_fill(inst, gp, n_hi, n_lo, kappa)
            z = _count_value(inst, n, gp)
            if z > z_inc:
                z_inc, n_inc = z, n
    assert best_lag is not None and n_inc is not None
    x, value = _realise(inst, n_inc, gp, best_lag.kappa, wc)
    bound = best_lag.value
    solves = 0
    if not inst.certified(value, bound, mip_gap):
        # reduced-cost fixing against the realised schedule: a count whose Lagrangian slack
        # exceeds bound - value cannot be part of a better schedule
        phi = best_lag.phi
        slack = phi.max(axis=1, keepdims=True) - phi
        ok = slack <= (bound - value) * (1 + 1e-9) + _REL_SLACK * inst.gap_scale(value, bound)
        lo = np.minimum(np.argmax(ok, axis=1), n_inc)
        hi = np.maximum(inst.T - np.argmax(ok[:, ::-1], axis=1), n_inc)
        cuts: list[tuple[np.ndarray, int]] = []
        for _ in range(20):  # cover cuts for gang packings that fail
            left = None if deadline is None else deadline - time.perf_counter()
            n_core, core_bound, _ = _count_milp(inst, gp, lo, hi, time_limit=left,
                                                mip_gap=mip_gap * 0.5, solver=solver,
                                                extra_cuts=cuts)
            solves += 1
            if n_core is None:
                break
            bound = min(bound, max(value, core_bound))
            x2, value2 = _realise(inst, n_core, gp, best_lag.kappa, wc)
            if value2 > value:
                x, value = x2, value2
            if inst.certified(value, bound, mip_gap):
                break
            cut = _cover_cut(inst, n_core)
            if cut is None or (deadline is not None and time.perf_counter() >= deadline):
                break
            cuts.append(cut)
    return _Candidate(x=x, value=value, bound=max(bound, value), method="fast",
                      iterations=len(seen), solves=solves)


def _milp(inst: _Instance, wc: str, *, mip_gap: float, deadline: float | None,
          solver: _Solver, start_x: np.ndarray | None = None) -> _Candidate | None:
    left = None if deadline is None else deadline - time.perf_counter()
    if wc == "greedy":
        start_x = None  # the greedy post-pass schedule need not be optimal for "none"
    x, bound, sol, lp = _schedule_milp(inst, "none" if wc == "greedy" else wc,
                                       time_limit=left, mip_gap=mip_gap, solver=solver,
                                       start_x=start_x)
    if x is None:
        return None
    lp_x = sol.x
    if wc == "greedy":
        x = _greedy_upstream(inst, x)
    value = _evaluate(inst, x)["objective"]
    return _Candidate(x=x, value=value, bound=max(bound, value), method="milp",
                      iterations=sol.iterations, solves=1, lp=lp, lp_x=lp_x,
                      lp_bound=bound)


def plan_schedule(
    jobs: Sequence[PlanJob],
    num_gpus: int,
    *,
    rounds: int = 20,
    round_duration: float = 120.0,
    k: float = 5.0,
    lam: float = 1e-3,
    method: str = "auto",
    mip_gap: float = 1e-3,
    time_limit: float | None = None,
    work_conservation: str = "exact",
    restart_penalty: float = 0.0,
    expectation: str = "mean",
    makespan: str = "paper",
    regime_model: str = "forecast",
    z0: float | None = None,
    util_floor: float = 1e-6,
    warm_start: bool = False,
    threads: int | None = None,
    backend: str | Backend = "highs",
) -> PlanResult:
    """Plan the next ``rounds`` rounds with Shockwave's program (Eq. 11, App. G.1-G.3, H).

    Maximises ``(1/(N*M)) * sum_j rho_j^k log UTIL_j - (lam/Z0) * H`` (minus
    ``restart_penalty`` per restart) over binary schedules with ``sum_j w_j x[j, t] <= M``
    in every round and work conservation; see :mod:`fairalloc.schedule` for the semantics.

    Parameters
    ----------
    jobs : sequence of PlanJob
        The active jobs.
    num_gpus : int
        ``M``, GPUs in the cluster.
    rounds : int, default 20
        ``T``, rounds in the window (§6.1).
    round_duration : float, default 120.0
        ``D``, seconds per round.
    k : float, default 5.0
        Exponent of the FTF weights ``rho_j^k`` (the paper's ``k``; upstream calls it
        ``lambda``).
    lam : float, default 1e-3
        Makespan regulariser coefficient (the paper's ``lambda``; upstream calls it ``k``).
    method : {"auto", "fast", "milp"}
        See :mod:`fairalloc.schedule`.
    mip_gap : float, default 1e-3
        Relative gap to certify (upstream's Gurobi ``MIPGap``): ``bound - objective`` at most
        ``mip_gap * max(|objective|, |bound|, data scale)``, where the data scale is the sum of
        the FTF weights times each job's log range over the window plus the makespan term
        before it (``formulations/shockwave_plan.md``), so that an objective near zero is still
        judged against the size of what the window can change. In ``(0, 0.1]``.
    time_limit : float, optional
        Seconds for the whole call; the best certified schedule found is returned with
        ``status="time_limit"`` and ``certificate.ok == False`` if the gap target was not
        certified in time (also when the fast path alone cannot certify it, with
        ``method="fast"``: its fixed work budget ran out).
    work_conservation : {"exact", "greedy", "none"}
        ``"exact"`` (App. H): the constraint is part of the program. ``"greedy"``: upstream's
        post-pass filling idle GPUs with the jobs of largest remaining run time after solving
        without it. ``"none"``: no such constraint.
    restart_penalty : float, default 0.0
        Objective units charged per restart (a job running in a round but not in the one
        before, or not before the window unless ``PlanJob.running``).
    expectation : {"mean", "scenarios"}
        ``"mean"``: the posterior-mean trajectory (``PlanJob.regimes``; §5). ``"scenarios"``:
        ``log E[UTIL_j]`` over ``PlanJob.scenarios`` (App. F), and ``H`` of the expected
        remaining times; jobs without scenarios use their regimes.
    makespan : {"paper", "max_remaining"}
        ``"paper"``: Eq. 10 with gang sizes, normalised by ``Z0``. ``"max_remaining"``:
        upstream's regulariser, the largest remaining run time in raw seconds (no ``Z0``).
    regime_model : {"forecast", "flat"}
        ``"flat"`` reproduces upstream's lack of regime decomposition: every job advances at
        one mean epoch duration (its forecast total is kept).
    z0 : float, optional
        ``Z0``; default ``sum_j P_j`` (:func:`fairalloc.makespan_normalizer` of the remaining
        run times before the window).
    util_floor : float, default 1e-6
        ``log UTIL`` is evaluated at ``max(UTIL, util_floor)`` so that a job with no finished
        epoch that gets no round costs a finite amount (the value upstream's piecewise log
        takes at zero progress).
    warm_start : bool, default False
        ``method="milp"`` only: run the fast path first and give its schedule to HiGHS as a
        MIP start (``"auto"`` always does so when it falls back to the MILP).
    threads : int, optional
        Solver threads.
    backend : str or Backend, default "highs"
        The MILP backend (:func:`fairalloc.backends.get_backend`; it must support ``"milp"``)
        that solves the fast path's core count MILP and the full MILP. ``stats.backend`` names
        it when it ran (``"none"`` when the fast path needed no solve) and
        ``stats.raw_status`` is its last status.

    Returns
    -------
    PlanResult

    Raises
    ------
    InputError
        Bad jobs or parameters (e.g. a gang larger than the cluster), or a backend without
        MILP support.
    SolverError
        ``method="milp"`` found no schedule within the time limit, or the backend failed.
    CertificateError
        The returned schedule violates a constraint or the gap exceeds its tolerance.

    Examples
    --------
    Three single-GPU jobs, two GPUs, four rounds; the job furthest behind (FTF 2) gets every
    round, the other two share the second GPU:

    >>> jobs = [PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=2.0,
    ...                 regimes=[(60.0, 90)]),
    ...         PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
    ...                 regimes=[(60.0, 50)]),
    ...         PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
    ...                 regimes=[(60.0, 50)])]
    >>> plan = plan_schedule(jobs, 2, rounds=4)
    >>> plan.schedule.sum(axis=1).tolist(), plan.status.value
    ([4, 2, 2], 'optimal')
    """
    t0 = time.perf_counter()
    method = as_option(method, "method", METHODS)
    wc = as_option(work_conservation, "work_conservation", WORK_CONSERVATION)
    expectation = as_option(expectation, "expectation", EXPECTATIONS)
    makespan = as_option(makespan, "makespan", MAKESPAN)
    regime_model = as_option(regime_model, "regime_model", REGIME_MODELS)
    gap = as_tolerance(mip_gap, "mip_gap")
    limit = as_time_limit(time_limit)
    if threads is not None:
        threads = as_positive_int(threads, "threads")
    warm_start = as_bool(warm_start, "warm_start")
    solver = _Solver(backend, threads)
    inst = _build_instance(jobs, num_gpus, rounds=rounds, round_duration=round_duration, k=k,
                           lam=lam, z0=z0, util_floor=util_floor, expectation=expectation,
                           makespan=makespan, regime_model=regime_model,
                           restart_penalty=restart_penalty)
    try:
        return _plan(inst, method, wc, gap, limit, warm_start, solver, t0)
    except FairallocError:
        raise
    except Exception as exc:  # numerical trouble must not escape as a foreign exception
        raise SolverError(f"plan_schedule failed: {type(exc).__name__}: {exc}",
                          backend=solver.name, status="exception") from exc


def _plan(inst: _Instance, method: str, wc: str, gap: float, limit: float | None,
          warm_start: bool, solver: _Solver, t0: float) -> PlanResult:
    deadline = None if limit is None else t0 + limit
    cands: list[_Candidate] = []
    if method in ("auto", "fast") or (method == "milp" and warm_start):
        cands.append(_fast(inst, wc, mip_gap=gap, deadline=deadline, solver=solver))
    if method == "milp" or (method == "auto" and not inst.certified(cands[0].value,
                                                                    cands[0].bound, gap) and
                            (deadline is None or time.perf_counter() < deadline)):
        start_x = cands[0].x if cands else None
        cand = _milp(inst, wc, mip_gap=gap, deadline=deadline, solver=solver,
                     start_x=start_x)
        if cand is None and method == "milp" and not cands:
            why = "within the time limit; raise time_limit or use method='fast'" if (
                deadline is not None and time.perf_counter() >= deadline) else \
                f"(its status: {solver.raw_status!r}); try method='fast'"
            raise SolverError(f"backend {solver.name!r} returned no schedule {why}",
                              backend=solver.name, status=solver.raw_status or "time_limit")
        if cand is not None:
            cands.append(cand)
    best = max(cands, key=lambda c: c.value)
    bound = min(c.bound for c in cands)
    bound = max(bound, best.value)
    return _result(inst, best, bound, wc, gap, t0, sum(c.iterations for c in cands), solver)


def _result(inst: _Instance, cand: _Candidate, bound: float, wc: str, gap: float, t0: float,
            iterations: int, solver: _Solver) -> PlanResult:
    x = cand.x
    ev = _evaluate(inst, x)
    value = ev["objective"]
    scale = inst.gap_scale(value, bound)
    # feasibility is checked exactly on the returned integer schedule
    residual = _schedule_residual(inst, x, wc)
    if cand.lp is not None and cand.lp_x is not None and wc != "greedy":
        # the MILP's own objective must agree with the independent recomputation
        lp_cert = milp_certificate(cand.lp, cand.lp_x, -cand.lp_bound, maximize=True)
        if not abs(lp_cert.primal_value - value) <= 1e-6 * scale:
            raise SolverError(
                f"the MILP's objective {lp_cert.primal_value:.12g} differs from the schedule's "
                f"recomputed objective {value:.12g}", backend=solver.name)
    abs_gap = max(bound - value, 0.0) + 0.0  # (+0.0 turns -0.0 into 0.0)
    cert = Certificate(kind="milp", primal_value=value, dual_bound=bound, gap=abs_gap,
                       primal_residual=residual, gap_tol=gap, feas_tol=FEAS_TOL, scale=scale)
    backend = solver.name if solver.solves else "none"
    if residual > FEAS_TOL or not math.isfinite(residual):
        raise CertificateError(f"the plan violates a constraint (relative residual "
                               f"{residual:.3g})", certificate=cert, backend=backend)
    # a gap target that was not proven (time limit, or the fast path's work budget): never
    # OPTIMAL, and the certificate says so (ok is False)
    status = Status.OPTIMAL if cert.ok else Status.TIME_LIMIT
    stats = SolveStats(backend=backend, method=cand.method, seconds=time.perf_counter() - t0,
                       iterations=iterations, solves=solver.solves,
                       raw_status=solver.raw_status)
    return PlanResult(objective=value, status=status, stats=stats, certificate=cert,
                      schedule=x, rounds_given=ev["counts"], utility=ev["util"],
                      remaining=ev["remaining"], regime=_regime_index(inst, x),
                      welfare=ev["welfare"], makespan_bound=ev["makespan"], z0=inst.z0,
                      restarts=ev["restarts"], bound=bound, method=cand.method,
                      log_scale=inst.log_shift)


# --------------------------------------------------------------------------------------------
# continuous relaxation: the volatile Fisher market over the window (App. C-D)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class RelaxedPlan(Result):
    """The continuous relaxation of a plan (``0 <= x[j, t] <= 1``).

    Attributes
    ----------
    allocation : ndarray, shape (n, rounds)
        Fraction of round ``t`` job ``j`` runs on its gang (``w_j * x[j, t]`` GPUs).
    prices : ndarray, shape (rounds,)
        Non-negative multipliers of the per-round capacity ``sum_j w_j x[j, t] <= M``: the
        objective gained per extra GPU in round ``t`` (``d OPT / d M_t``). With equal weights
        and ``lam = 0`` they are the volatile Fisher market's prices divided by ``N*M``.
    rounds_given : ndarray, shape (n,)
        ``n_j = sum_t x[j, t]``.
    utility : ndarray, shape (n,)
        ``UTIL_j(n_j)`` on the concave envelope (the exact progress when later regimes are
        not faster).
    makespan_bound : float
        ``H`` of the relaxed remaining times.
    """

    allocation: np.ndarray
    prices: np.ndarray
    rounds_given: np.ndarray
    utility: np.ndarray
    makespan_bound: float

    def to_frame(self) -> Any:
        """One row per job: rounds and utility, then the fraction of each round."""
        pd = require_pandas()
        base = pd.DataFrame({"rounds": self.rounds_given, "utility": self.utility})
        base.index.name = "job"
        alloc = pd.DataFrame(self.allocation, columns=[f"t{t}" for t in
                                                       range(self.allocation.shape[1])])
        return pd.concat([base, alloc], axis=1)


def _breakpoints(inst: _Instance) -> tuple[np.ndarray, np.ndarray]:
    """Per job: the rounds at which its (expected) progress changes slope, and UTIL there.

    Progress along one trajectory is piecewise linear in the (real) number of rounds, with
    breaks where a regime ends and where the job finishes; the expectation over scenarios
    breaks at the union of its trajectories' breaks. Returns padded points (N, P) in
    ``[0, T]`` and the expected ``UTIL`` at them.
    """
    T, D = inst.T, inst.D
    owner = inst.traj_owner
    q, k = inst.traj_sec.shape
    cs = np.cumsum(inst.traj_sec * inst.traj_ep, axis=1) if k else np.zeros((q, 0))
    with np.errstate(over="ignore"):  # beyond the window either way
        own_pts = np.clip(np.concatenate([cs, inst.traj_finish[:, None]], axis=1) / D, 0.0, T)
    per = np.bincount(owner, minlength=inst.N) * own_pts.shape[1]
    width = int(per.max(initial=0)) + 2
    pts = np.full((inst.N, width), float(T))
    pts[:, 0] = 0.0
    flat = own_pts.ravel()
    rows = np.repeat(owner, own_pts.shape[1])
    start = np.cumsum(per) - per
    col = 1 + np.arange(flat.size) - start[rows]
    pts[rows, col] = flat
    query = pts[owner] * D
    left = inst.E[owner] - inst.F[owner]
    adv, _ = _trajectory_tables(inst.traj_sec, inst.traj_ep, left, query)
    done = query >= inst.traj_finish[:, None] * (1.0 - _EPOCH_RTOL)  # relative: any units
    util_q = np.where(done, 1.0, np.minimum((inst.F[owner, None] + adv) / inst.E[owner, None],
                                            1.0))
    util = np.zeros((inst.N, width))
    np.add.at(util, owner, util_q)
    util /= np.bincount(owner, minlength=inst.N)[:, None]
    return pts, util


def relax_plan(
    jobs: Sequence[PlanJob],
    num_gpus: int,
    *,
    rounds: int = 20,
    round_duration: float = 120.0,
    k: float = 5.0,
    lam: float = 1e-3,
    expectation: str = "mean",
    makespan: str = "paper",
    regime_model: str = "forecast",
    z0: float | None = None,
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    time_limit: float | None = None,
    backend: str | Backend = "clarabel",
) -> RelaxedPlan:
    """Continuous relaxation of :func:`plan_schedule` (``0 <= x[j, t] <= 1``), via Clarabel.

    Maximises ``(1/(N*M)) * sum_j rho_j^k log U_j - (lam/Z0) * H`` where ``U_j`` is
    ``UTIL_j`` of the real round count ``n_j = sum_t x[j, t]`` (progress through the regimes
    for ``n_j * D`` seconds; its concave envelope where a later regime is faster, which keeps
    the program convex), subject to ``sum_j w_j x[j, t] <= M``. No work conservation and no
    ``util_floor``: every job gets a positive share.

    With ``k = 0`` (or equal FTFs), ``lam = 0``, no finished epochs and one regime per job
    over the window, this is the volatile Fisher market of Shockwave App. C over the window:
    goods are the GPUs of each round (supply ``M``), buyer ``j`` values a GPU in round ``t`` at
    ``D / (d_j * w_j * E_j)`` (progress per GPU-second), budgets are equal, and
    ``x[j, t] <= 1`` caps each buyer's purchase at its gang size; the prices are the market's
    divided by ``N*M`` (``formulations/shockwave_plan.md``; ``tests/test_schedule.py``).

    Parameters
    ----------
    jobs, num_gpus, rounds, round_duration, k, lam, expectation, makespan, regime_model, z0
        As for :func:`plan_schedule`.
    gap_tol, feas_tol : float
        Tolerances of the conic certificate (:mod:`fairalloc.tolerances`). The gap is judged
        against ``max(|objective|, |bound|, data scale)`` as in :func:`plan_schedule`.
    time_limit : float, optional
        Seconds for the conic solve.
    backend : str or Backend, default "clarabel"
        The conic backend; composed programs are certified through Clarabel only
        (:func:`fairalloc._cvxpy.solve_cvxpy`), any other backend is an InputError.

    The program is solved in normalised units: the objective is multiplied by a power of two
    near the inverse of the sum of its coefficients and remaining times are expressed in a
    power of two near the longest one, so the solve does not depend on the units of the data.
    ``status`` is ``"optimal"`` only when the certificate is ok; a feasible solve whose gap
    was not proven is ``"time_limit"`` (its time limit ran out) or ``"suboptimal"``.

    Raises
    ------
    InputError
        Bad jobs or parameters, or a backend other than Clarabel.
    SolverError
        The conic solver failed (its own exceptions are chained as the cause).
    CertificateError
        The returned allocation violates a constraint beyond ``feas_tol``.

    Returns
    -------
    RelaxedPlan

    Examples
    --------
    Two identical jobs on one GPU each get one round's worth (2 epochs of 100):

    >>> jobs = [PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=1.0,
    ...                 regimes=[(60.0, 90)])] * 2
    >>> r = relax_plan(jobs, 1, rounds=2, lam=0.0)
    >>> r.rounds_given.round(3).tolist(), r.utility.round(4).tolist()
    ([1.0, 1.0], [0.12, 0.12])
    """
    t0 = time.perf_counter()
    expectation = as_option(expectation, "expectation", EXPECTATIONS)
    makespan = as_option(makespan, "makespan", MAKESPAN)
    regime_model = as_option(regime_model, "regime_model", REGIME_MODELS)
    gap_tol = as_tolerance(gap_tol, "gap_tol")
    feas_tol = as_tolerance(feas_tol, "feas_tol")
    limit = as_time_limit(time_limit)
    solver = get_backend(backend, need="cvxpy")
    if solver.name != "clarabel":
        raise InputError(f"relax_plan is certified through backend='clarabel' (got "
                         f"{solver.name!r})", argument="backend")
    inst = _build_instance(jobs, num_gpus, rounds=rounds, round_duration=round_duration, k=k,
                           lam=lam, z0=z0, util_floor=1e-6, expectation=expectation,
                           makespan=makespan, regime_model=regime_model, restart_penalty=0.0)
    try:
        return _relax(inst, gap_tol, feas_tol, limit, solver.name, t0)
    except FairallocError:
        raise
    except Exception as exc:  # cvxpy's and the solver's own exceptions
        raise SolverError(f"relax_plan: the conic solve failed ({type(exc).__name__}: {exc})",
                          backend=solver.name, status="exception") from exc


def _relax(inst: _Instance, gap_tol: float, feas_tol: float, limit: float | None,
           backend: str, t0: float) -> RelaxedPlan:
    import cvxpy as cp

    from ._cvxpy import solve_cvxpy

    N, T, M, D = inst.N, inst.T, inst.M, inst.D
    # remaining times in units of a power of two near the longest one (constants <= ~1)
    tau = _pow2(max(D, float(inst.traj_finish.max(initial=0.0))))
    # objective coefficients of order one: divide by a power of two (exact) near their sum
    mag = float(inst.weight.sum()) + inst.coef * tau
    sigma = _pow2(0.5 / mag) if mag > 0 else 1.0
    pts, vals = _breakpoints(inst)
    x = cp.Variable((N, T), nonneg=True, name="x")
    n = cp.sum(x, axis=1)
    mix = cp.Variable(pts.shape, nonneg=True, name="mix")
    util = cp.sum(cp.multiply(vals, mix), axis=1)
    capacity = cp.sum(cp.multiply(inst.w[:, None].astype(float), x), axis=0) <= M
    cons = [x <= (inst.cap > 0)[:, None].astype(float), capacity,
            cp.sum(mix, axis=1) == 1, cp.sum(cp.multiply(pts, mix), axis=1) == n]
    objective = cp.sum(cp.multiply(inst.weight * sigma, cp.log(util)))
    h_expr: Any = None
    if inst.coef > 0:
        owner = inst.traj_owner
        q = owner.size
        pick = sp.csr_matrix((np.ones(q), (np.arange(q), owner)), shape=(q, N))
        counts = np.bincount(owner, minlength=N)
        avg = sp.csr_matrix((1.0 / counts[owner], (owner, np.arange(q))), shape=(N, q))
        rem = avg @ cp.pos(inst.traj_finish / tau - (D / tau) * (pick @ n))
        h_expr = cp.max(rem)
        if inst.makespan == "paper":
            h_expr = cp.maximum(rem @ (inst.w / M), h_expr)
        objective = objective - (inst.coef * tau * sigma) * h_expr
    problem = cp.Problem(cp.Maximize(objective), cons)
    stats, raw = solve_cvxpy(problem, gap_tol=gap_tol, feas_tol=feas_tol, time_limit=limit)
    value, bound = raw.primal_value / sigma, raw.dual_bound / sigma
    cert = Certificate(kind="conic", primal_value=value, dual_bound=bound, gap=raw.gap / sigma,
                       primal_residual=raw.primal_residual, dual_residual=raw.dual_residual,
                       gap_tol=gap_tol, feas_tol=feas_tol, scale=inst.gap_scale(value, bound))
    if cert.ok:
        status = Status.OPTIMAL
    elif (cert.primal_residual <= feas_tol and math.isfinite(cert.gap)
          and cert.dual_residual <= max(feas_tol, FEAS_TOL * 10)):
        elapsed = time.perf_counter() - t0
        status = Status.TIME_LIMIT if limit is not None and elapsed >= limit else \
            Status.SUBOPTIMAL
    else:
        cert.check(backend=backend)
        status = Status.SUBOPTIMAL  # pragma: no cover - check raised
    alloc = np.clip(np.asarray(x.value, dtype=float), 0.0, 1.0)
    prices = np.maximum(np.asarray(capacity.dual_value, dtype=float).reshape(T), 0.0) / sigma
    given = alloc.sum(axis=1)
    u = np.asarray(util.value, dtype=float).reshape(N)
    h = float(h_expr.value) * tau if h_expr is not None else float(
        _makespan(inst, np.maximum(inst.rem[:, 0] - D * given, 0.0)))
    stats = dataclasses.replace(stats, seconds=time.perf_counter() - t0, backend=backend)
    return RelaxedPlan(objective=value, status=status, stats=stats, certificate=cert,
                       allocation=alloc, prices=prices, rounds_given=given, utility=u,
                       makespan_bound=h)


# --------------------------------------------------------------------------------------------
# re-planning (§6.1)
# --------------------------------------------------------------------------------------------
REPLAN_MODES = ("reactive", "lazy")


@dataclass(frozen=True)
class ReplanDecision:
    """Whether to re-plan now, and why.

    Attributes
    ----------
    replan : bool
        Re-plan before the next round.
    reasons : tuple of str
        The triggers that fired: ``"no_plan"``, ``"window_elapsed"``, ``"arrival"``,
        ``"completion"``, ``"regime_change"``.
    deferred : tuple of str
        Triggers seen but deliberately ignored (a regime change in lazy mode).
    """

    replan: bool
    reasons: tuple[str, ...]
    deferred: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.replan


def _event_count(value: Any, name: str) -> int:
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        return as_positive_int(value, name, allow_zero=True)
    if isinstance(value, Sequence | np.ndarray) and not isinstance(value, str):
        return len(value)
    raise InputError(f"{name} must be a count, a bool or a sequence of job ids, got "
                     f"{value!r}", argument=name)


@dataclass(frozen=True)
class ReplanPolicy:
    """When to recompute a plan (Shockwave §6.1, App. G).

    The plan is recomputed when its planned rounds have elapsed and when jobs arrive or
    finish (the paper). In ``"reactive"`` mode (default) it is also recomputed as soon as a
    job changes regime (its batch size changed, so the forecast behind the plan moved); in
    ``"lazy"`` mode a regime change waits for the next of those events.

    Parameters
    ----------
    mode : {"reactive", "lazy"}

    Examples
    --------
    >>> policy = ReplanPolicy()
    >>> bool(policy.decide(rounds_elapsed=3, planned_rounds=20, regime_changed=[7]))
    True
    >>> d = ReplanPolicy("lazy").decide(rounds_elapsed=3, planned_rounds=20, regime_changed=[7])
    >>> d.replan, d.deferred
    (False, ('regime_change',))
    >>> ReplanPolicy("lazy").decide(rounds_elapsed=20, planned_rounds=20).reasons
    ('window_elapsed',)
    """

    mode: str = "reactive"

    def __post_init__(self) -> None:
        as_option(self.mode, "mode", REPLAN_MODES)

    def decide(self, *, rounds_elapsed: int, planned_rounds: int, arrived: Any = 0,
               finished: Any = 0, regime_changed: Any = 0) -> ReplanDecision:
        """Decide before a round whether the current plan must be recomputed.

        Parameters
        ----------
        rounds_elapsed : int
            Rounds of the current plan already executed.
        planned_rounds : int
            Rounds the current plan covers (``0``: there is no plan yet).
        arrived, finished, regime_changed : int, bool or sequence of job ids
            Jobs that arrived, finished, or changed regime since the plan was made.
        """
        done = as_positive_int(rounds_elapsed, "rounds_elapsed", allow_zero=True)
        planned = as_positive_int(planned_rounds, "planned_rounds", allow_zero=True)
        if planned and done > planned:
            raise InputError(f"rounds_elapsed = {done} exceeds planned_rounds = {planned}",
                             argument="rounds_elapsed")
        reasons: list[str] = []
        deferred: list[str] = []
        if planned == 0:
            reasons.append("no_plan")
        elif done >= planned:
            reasons.append("window_elapsed")
        if _event_count(arrived, "arrived"):
            reasons.append("arrival")
        if _event_count(finished, "finished"):
            reasons.append("completion")
        if _event_count(regime_changed, "regime_changed"):
            (reasons if self.mode == "reactive" else deferred).append("regime_change")
        return ReplanDecision(replan=bool(reasons), reasons=tuple(reasons),
                              deferred=tuple(deferred) if not reasons else ())
