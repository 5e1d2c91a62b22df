"""Finish-time fairness valuations, placement slowdown and cluster topology (Themis §3.2, §4.3).

Themis (§3.2) measures an app's fairness by ``rho = T_sh / T_id``: its finish time in
the shared cluster divided by its finish time on an exclusive ``1/N_avg`` share of the
cluster. Sharing incentive means ``rho <= 1``. An app bids ``rho(G)`` for GPU allocations
``G`` it may receive; the auction values an allocation at ``1 / rho(G)``.

This module computes ``rho`` for

* a single-job app (Eq. 1, `fairalloc.single_job_rho`),
* a hyper-parameter search with successive halving (Eq. 2 with the median-job estimate of
  future phases, `fairalloc.successive_halving_rho`),
* a hyper-parameter search with performance-curve stopping
  (`fairalloc.curve_stopping_rho`),

and the placement slowdown ``S(G) >= 1`` of a GPU set from the cluster topology
(`fairalloc.Topology`, `fairalloc.placement_slowdown`): ``1`` on
one machine, ``1.1`` across machines of one rack, ``1.3`` across racks (§4.3.1, footnote 3),
overridable by profiled values.

Within a phase of a multi-job app, Eq. 2 takes the finish time of the slowest job under the
app scheduler's "optimal allocation of GPUs within a phase". Two schedules are offered:

``"balanced"`` (default)
    jobs are malleable with linear speed-up up to ``job_demand_max`` GPUs each and may be
    preempted, so the phase takes ``S * max(sum_j W_j / G, max_j W_j / min(G, d))`` with
    ``W_j`` a job's serial work (the optimum of P|pmtn, size <= d|C_max). This reproduces
    every entry of the paper's Table 3 (4, 2, 1, 0.5, 0.34).
``"static"``
    each job keeps a fixed whole number of GPUs for the phase; with fewer GPUs than jobs the
    jobs run one per GPU in longest-processing-time order. This is the narrative of §4.3.3
    (two 100 s jobs on one GPU, the 80 s and 120 s jobs on the other) and gives 1.064,
    0.532 and 0.345 for 4, 8 and 16 GPUs (``formulations/finish_time_fairness.md``).

The app models built on these (`fairalloc.SingleJobApp`, ...) live in
`fairalloc.auctions.apps`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_array, as_option, as_positive_float, as_positive_int
from ..errors import InputError
from ..results import readonly

__all__ = [
    "DEFAULT_SLOWDOWN",
    "LEVELS",
    "Topology",
    "curve_stopping_rho",
    "placement_slowdown",
    "single_job_rho",
    "successive_halving_rho",
]

#: Placement levels: all GPUs on one machine, on one rack, anywhere (across racks).
LEVELS = ("machine", "rack", "cluster")
#: Themis §4.3.1 footnote 3: crude slowdown estimates for the three placement levels.
DEFAULT_SLOWDOWN = (1.0, 1.1, 1.3)
SCHEDULES = ("balanced", "static")
#: Largest cluster a Topology describes (GPUs); larger ones are an InputError, not a MemoryError.
MAX_GPUS = 1 << 24
#: ACCURACY contract: a job's work over a candidate phase time within this of an integer
#: needs that many GPUs (the balanced schedule's optimal phase time is found exactly).
CEIL_TOL = 1e-9


#: Largest GPU count (demand or cluster size) the valuations accept: exact in float64.
MAX_COUNT = 1 << 53


def _count(value: Any, name: str) -> int:
    """A positive GPU count (``job_demand_max``, ``cluster_gpus``) of at most ``2**53``."""
    out = as_positive_int(value, name)
    if out > MAX_COUNT:
        raise InputError(f"{name} must be at most 2**53 (exact in double precision), got "
                         f"{value!r:.40}", argument=name)
    return out


def _slowdown_levels(slowdown: Any, name: str = "slowdown") -> np.ndarray:
    """Validate per-level slowdowns: three values >= 1, non-decreasing (spreading never helps)."""
    if slowdown is None:
        return np.asarray(DEFAULT_SLOWDOWN, dtype=float)
    s = as_array(slowdown, name, ndim=1, shape=(3,), positive=True)
    if np.any(s < 1.0):
        j = int(np.flatnonzero(s < 1.0)[0])
        raise InputError(f"{name}[{j}] is {s[j]:g}; a placement slowdown is >= 1",
                         argument=name, index=(j,))
    if np.any(np.diff(s) < 0):
        j = int(np.flatnonzero(np.diff(s) < 0)[0]) + 1
        raise InputError(
            f"{name}[{j}] = {s[j]:g} < {name}[{j - 1}] = {s[j - 1]:g}; slowdowns must not "
            f"decrease from one machine to one rack to across racks", argument=name, index=(j,))
    return s


# --------------------------------------------------------------------------------------------
# topology and placement slowdown
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, init=False)
class Topology:
    """Where each GPU is: GPU -> machine -> rack.

    Parameters
    ----------
    machine : array_like of int, shape (g,)
        Machine of each GPU, ``0 .. H-1`` (every machine id below the largest must occur).
    rack : array_like of int, shape (H,), optional
        Rack of each machine, ``0 .. R-1``; default: one rack.

    Attributes
    ----------
    machine : ndarray of int, shape (g,)
    rack : ndarray of int, shape (H,)
        Rack of each machine.
    gpu_rack : ndarray of int, shape (g,)
        Rack of each GPU.

    Examples
    --------
    >>> t = Topology.uniform(4, 2, machines_per_rack=2)
    >>> t.num_gpus, t.num_machines, t.num_racks
    (8, 4, 2)
    >>> t.level([0, 1]), t.level([0, 2]), t.level([0, 7])
    (0, 1, 2)
    """

    machine: np.ndarray
    rack: np.ndarray
    gpu_rack: np.ndarray

    def __init__(self, machine: Any, rack: Any = None) -> None:
        mach_f = as_array(machine, "machine", ndim=1, integer=True)
        if mach_f.size > MAX_GPUS:
            raise InputError(f"machine lists {mach_f.size} GPUs; at most {MAX_GPUS} are "
                             "supported", argument="machine")
        if mach_f.max() >= mach_f.size:  # ids are 0..H-1 with every machine holding a GPU
            j = int(np.argmax(mach_f))
            raise InputError(f"machine[{j}] = {mach_f[j]:g}, but {mach_f.size} GPUs can be on "
                             f"at most {mach_f.size} machines (ids 0..{mach_f.size - 1})",
                             argument="machine", index=(j,))
        mach = mach_f.astype(np.int64)
        num_machines = int(mach.max()) + 1
        counts = np.bincount(mach, minlength=num_machines)
        if np.any(counts == 0):
            h = int(np.flatnonzero(counts == 0)[0])
            raise InputError(f"machine {h} has no GPU (machine ids must be 0..{num_machines - 1})",
                             argument="machine", index=(h,))
        if rack is None:
            rk = np.zeros(num_machines, dtype=np.int64)
        else:
            rk_f = as_array(rack, "rack", ndim=1, shape=(num_machines,), integer=True)
            if rk_f.max() >= num_machines:
                j = int(np.argmax(rk_f))
                raise InputError(f"rack[{j}] = {rk_f[j]:g}, but {num_machines} machines can be "
                                 f"in at most {num_machines} racks", argument="rack",
                                 index=(j,))
            rk = rk_f.astype(np.int64)
            rcount = np.bincount(rk, minlength=int(rk.max()) + 1)
            if np.any(rcount == 0):
                r = int(np.flatnonzero(rcount == 0)[0])
                raise InputError(f"rack {r} has no machine (rack ids must be consecutive)",
                                 argument="rack", index=(r,))
        for arr in (mach, rk):
            arr.flags.writeable = False
        gpu_rack = rk[mach]
        gpu_rack.flags.writeable = False
        object.__setattr__(self, "machine", mach)
        object.__setattr__(self, "rack", rk)
        object.__setattr__(self, "gpu_rack", gpu_rack)

    @classmethod
    def uniform(cls, num_machines: int, gpus_per_machine: int,
                machines_per_rack: int | None = None) -> Topology:
        """``num_machines`` machines of ``gpus_per_machine`` GPUs, ``machines_per_rack`` per rack.

        The last rack holds the remainder when ``machines_per_rack`` does not divide the count;
        ``None`` puts every machine in one rack.
        """
        h = as_positive_int(num_machines, "num_machines")
        k = as_positive_int(gpus_per_machine, "gpus_per_machine")
        if h * k > MAX_GPUS:
            raise InputError(f"{h} machines x {k} GPUs exceeds the {MAX_GPUS} GPUs a Topology "
                             "supports", argument="num_machines")
        per = h if machines_per_rack is None else as_positive_int(machines_per_rack,
                                                                  "machines_per_rack")
        return cls(np.repeat(np.arange(h), k), np.arange(h) // per)

    @property
    def num_gpus(self) -> int:
        """Number of GPUs ``g``."""
        return int(self.machine.size)

    @property
    def num_machines(self) -> int:
        """Number of machines ``H``."""
        return int(self.rack.size)

    @property
    def num_racks(self) -> int:
        """Number of racks ``R``."""
        return int(self.rack.max()) + 1

    @property
    def gpus_per_machine(self) -> np.ndarray:
        """GPUs on each machine, shape (H,) (read-only)."""
        return readonly(np.bincount(self.machine, minlength=self.num_machines))

    def mask(self, gpus: Any, name: str = "gpus") -> np.ndarray:
        """A GPU set as a read-only boolean mask (g,) or (s, g): accepts masks or 1-d lists of
        GPU ids."""
        try:
            arr = np.asarray(gpus)
        except (TypeError, ValueError):
            arr = None  # as_array below names the problem
        g = self.num_gpus
        if arr is not None and arr.dtype == bool:
            if arr.ndim not in (1, 2) or arr.shape[-1] != g:
                raise InputError(f"{name} as a mask must have shape ({g},) or (s, {g}); got "
                                 f"{arr.shape}", argument=name)
            return readonly(arr.copy())
        ids = as_array(arr, name, ndim=1, integer=True, allow_empty=True).astype(np.int64)
        if ids.size and ids.max() >= g:
            j = int(np.flatnonzero(ids >= g)[0])
            raise InputError(f"{name}[{j}] = {ids[j]} is not a GPU (the cluster has {g})",
                             argument=name, index=(j,))
        out = np.zeros(g, dtype=bool)
        out[ids] = True
        if np.unique(ids).size != ids.size:
            raise InputError(f"{name} lists a GPU twice", argument=name)
        return readonly(out)

    def level(self, gpus: Any) -> Any:
        """Placement level of GPU set(s): 0 one machine, 1 one rack, 2 across racks.

        An empty set (or a single GPU) is level 0. Vectorised over the rows of a 2-d mask.
        """
        m = self.mask(gpus)
        m2 = np.atleast_2d(m)
        H, R = self.num_machines, self.num_racks
        on_mach = np.zeros((m2.shape[0], H), dtype=bool)
        rows, cols = np.nonzero(m2)
        on_mach[rows, self.machine[cols]] = True
        on_rack = np.zeros((m2.shape[0], R), dtype=bool)
        on_rack[rows, self.gpu_rack[cols]] = True
        lev = np.where(on_mach.sum(1) <= 1, 0, np.where(on_rack.sum(1) <= 1, 1, 2))
        return int(lev[0]) if m.ndim == 1 else readonly(lev)

    def slowdown(self, gpus: Any, slowdown: Any = None) -> Any:
        """Placement slowdown ``S(G)`` of GPU set(s) (see
        `fairalloc.placement_slowdown`)."""
        s = _slowdown_levels(slowdown)
        lev = self.level(gpus)
        return float(s[lev]) if np.ndim(lev) == 0 else readonly(s[lev])

    def __repr__(self) -> str:
        return (f"Topology({self.num_gpus} GPUs, {self.num_machines} machines, "
                f"{self.num_racks} racks)")


def placement_slowdown(gpus: Any, topology: Topology, slowdown: Any = None) -> Any:
    """Slowdown ``S(G) >= 1`` of running on the GPU set ``G`` (Themis §4.3.1, footnote 3).

    ``S`` is set by the slowest interconnect the set spans (Appendix, proof of Theorem 3.2):
    one machine, several machines of one rack, or several racks.

    Parameters
    ----------
    gpus : array_like
        A GPU set: a boolean mask (g,), a 2-d mask (s, g) of ``s`` sets, or a list of GPU ids.
    topology : Topology
    slowdown : array_like, shape (3,), optional
        Slowdown on one machine, one rack, across racks: non-decreasing values >= 1. Defaults
        to the paper's crude estimates ``(1, 1.1, 1.3)``; pass an app's profiled values.

    Returns
    -------
    float or ndarray
        One slowdown per set.

    Examples
    --------
    >>> t = Topology.uniform(4, 2, machines_per_rack=2)
    >>> placement_slowdown([0, 1], t), placement_slowdown([1, 2], t), placement_slowdown([0, 6], t)
    (1.0, 1.1, 1.3)
    >>> placement_slowdown([0, 6], t, slowdown=[1.0, 1.05, 2.0])
    2.0
    """
    if not isinstance(topology, Topology):
        raise InputError(f"topology must be a Topology, got {type(topology).__name__}",
                         argument="topology")
    return topology.slowdown(gpus, slowdown)


# --------------------------------------------------------------------------------------------
# finish-time fairness rho
# --------------------------------------------------------------------------------------------
def _gpus_and_slowdown(num_gpus: Any, slowdown: Any) -> tuple[np.ndarray, np.ndarray]:
    G = as_array(num_gpus, "num_gpus", ndim=(0, 1, 2), integer=True)
    S = as_array(slowdown, "slowdown", ndim=(0, 1, 2), positive=True)
    if np.any(S < 1.0):
        idx = tuple(int(i) for i in np.argwhere(S < 1.0)[0])
        raise InputError(f"slowdown{list(idx)} is {S[idx]:g}; a placement slowdown is >= 1",
                         argument="slowdown", index=idx)
    try:
        G, S = np.broadcast_arrays(G, S)
    except ValueError:
        raise InputError(f"num_gpus {G.shape} and slowdown {S.shape} do not broadcast",
                         argument="slowdown") from None
    return G.astype(float), S.astype(float)


def _contention(contention: Any) -> float:
    c = as_positive_float(contention, "contention")
    if c < 1.0:
        raise InputError(f"contention must be >= 1 (the app itself is active), got {contention!r}",
                         argument="contention")
    return c


def _phase_time(G: np.ndarray, S: np.ndarray, work: np.ndarray, d: float,
                schedule: str) -> np.ndarray:
    """Finish time of each phase's slowest job; ``work`` (P, J) serial GPU-seconds (0 = no job).

    Returns the time summed over phases, shape of ``G``. ``G == 0`` gives ``inf`` when there is
    work left.
    """
    total = work.sum(axis=1)  # (P,)
    biggest = work.max(axis=1, initial=0.0)
    Gf = G[..., None]  # (..., 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if schedule == "balanced":
            per = np.maximum(total / Gf, biggest / np.minimum(Gf, d))
        else:
            per = _static_phase_time(G, work, d)
        per = np.where(total > 0, per, 0.0)
    out = per.sum(axis=-1)
    return np.where((G == 0) & (total.sum() > 0), np.inf, out * S)


def _static_phase_time(G: np.ndarray, work: np.ndarray, d: float) -> np.ndarray:
    """Phase times with a fixed whole number of GPUs per job (see module docstring), (..., P)."""
    out = np.zeros(G.shape + (work.shape[0],))
    for value in np.unique(G):
        g = int(value)
        sel = G == value
        for p, w in enumerate(work):
            w = w[w > 0]
            if w.size == 0 or g == 0:
                out[sel, p] = np.inf if (w.size and g == 0) else 0.0
                continue
            if g < w.size:  # one GPU per job, longest processing time first
                loads = [0.0] * g
                for job in np.sort(w)[::-1]:
                    heapq.heappush(loads, heapq.heappop(loads) + float(job))
                out[sel, p] = max(loads)
                continue
            # g >= jobs: smallest T with sum_j min(d, ceil(W_j / T)) <= g
            gg = np.arange(1, int(min(d, g)) + 1)
            cand = np.unique((w[:, None] / gg[None, :]).ravel())
            need = np.minimum(np.ceil(w[None, :] / cand[:, None] - CEIL_TOL), min(d, g))
            need = np.maximum(need, 1.0)
            finish = (w[None, :] / need).max(axis=1)
            ok = need.sum(axis=1) <= g
            out[sel, p] = float(finish[ok].min())
    return out


def single_job_rho(
    num_gpus: Any,
    *,
    iter_total: float,
    iter_left: float,
    iter_time_serial: float,
    job_demand_max: int,
    cluster_gpus: int,
    contention: float = 1.0,
    elapsed: float = 0.0,
    slowdown: Any = 1.0,
) -> np.ndarray:
    """Finish-time fairness ``rho(G)`` of a single-job app (Themis §4.3.1, Eq. 1).

    ``T_sh = elapsed + iter_left * iter_time_serial * S(G) / min(|G|, job_demand_max)``,
    ``T_id = N_avg * iter_total * iter_time_serial / min(R_C, job_demand_max)`` and
    ``rho = T_sh / T_id``; the allocation is assumed to last until the job completes.

    Parameters
    ----------
    num_gpus : int or array_like of int
        ``|G|_1``: GPUs in the allocation (vectorised; broadcast with ``slowdown``).
        ``0`` GPUs with iterations left gives ``rho = inf``.
    iter_total, iter_left : float
        Total iterations of the job, and those still to run (``0 <= iter_left <= iter_total``).
    iter_time_serial : float
        Seconds per iteration on one GPU.
    job_demand_max : int
        Most GPUs the job can use (linear speed-up up to this many).
    cluster_gpus : int
        ``R_C``, GPUs in the whole cluster.
    contention : float
        ``N_avg``: average number of apps in the cluster over the app's lifetime (>= 1).
    elapsed : float
        ``T_current - T_start``, seconds since the app arrived (queuing included).
    slowdown : float or array_like
        Placement slowdown ``S(G) >= 1`` (see `fairalloc.placement_slowdown`).

    Returns
    -------
    ndarray
        ``rho`` for each allocation (0-d for scalar input).

    Examples
    --------
    A 1,000-iteration job of 1 s per iteration, able to use 4 GPUs, on a 16-GPU cluster shared
    by 4 apps: ``T_id = 4 * 1000 / 4 = 1000 s``.

    >>> single_job_rho([0, 1, 2, 4, 8], iter_total=1000, iter_left=1000, iter_time_serial=1.0,
    ...                job_demand_max=4, cluster_gpus=16, contention=4).tolist()
    [inf, 1.0, 0.5, 0.25, 0.25]
    """
    G, S = _gpus_and_slowdown(num_gpus, slowdown)
    total = as_positive_float(iter_total, "iter_total")
    left = as_positive_float(iter_left, "iter_left", allow_zero=True)
    if left > total:
        raise InputError(f"iter_left ({iter_left!r}) exceeds iter_total ({iter_total!r})",
                         argument="iter_left")
    t_iter = as_positive_float(iter_time_serial, "iter_time_serial")
    d = _count(job_demand_max, "job_demand_max")
    rc = _count(cluster_gpus, "cluster_gpus")
    n_avg = _contention(contention)
    el = as_positive_float(elapsed, "elapsed", allow_zero=True)
    with np.errstate(over="ignore", under="ignore"):
        t_id = n_avg * total * t_iter / min(rc, d)
        work = np.array([[left * t_iter]])
        t_sh = el + _phase_time(G, S, work, float(d), "balanced")
    return _rho(t_sh, t_id, "iter_time_serial")


def _rho(t_sh: Any, t_id: float, name: str) -> Any:
    """``rho = T_sh / T_id`` (read-only), refusing data whose times overflow double precision.

    ``T_sh = inf`` (no GPU, work left) gives ``rho = inf``; ``T_id`` must be finite and
    positive, and no ``rho`` may be NaN.
    """
    if not (math.isfinite(t_id) and t_id > 0):
        raise InputError(f"the ideal finish time T_id = {t_id:g} s is not a finite positive "
                         f"number (the product of {name}, the iterations and the contention "
                         "over- or underflows)", argument=name)
    t_sh = np.asarray(t_sh, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        r = t_sh / t_id
    if np.isnan(r).any() or np.any(np.isinf(r) & np.isfinite(t_sh)):
        raise InputError(f"rho is undefined for these inputs (T_sh / T_id = nan); {name} or "
                         "elapsed over- or underflows (rho = T_sh / T_id overflows)",
                         argument=name)
    return readonly(r) if r.ndim else r[()]


def _upper_median(times: np.ndarray) -> float:
    """The median job's iteration time; the larger middle value for an even count."""
    return float(np.sort(times)[times.size // 2])


def _halving_jobs(first: int, phases: int) -> np.ndarray:
    return np.maximum(np.ceil(first / 2.0 ** np.arange(phases)), 1).astype(int)


def successive_halving_rho(
    num_gpus: Any,
    *,
    iter_time_serial: Any,
    phase_iters: Any,
    budget: float,
    job_demand_max: int,
    cluster_gpus: int,
    contention: float = 1.0,
    elapsed: float = 0.0,
    slowdown: Any = 1.0,
    phase: int = 0,
    iter_left: Any = None,
    phase_jobs: Any = None,
    schedule: str = "balanced",
) -> np.ndarray:
    """Finish-time fairness of a successive-halving app (Themis §4.3.2, Eq. 2).

    Phase ``p`` runs ``phase_jobs[p]`` jobs for ``phase_iters[p]`` iterations each; the app's
    shared finish time is ``T_sh = elapsed + sum_p T_sh(p)`` where ``T_sh(p)`` is the finish
    time of the phase's slowest job. The current phase uses its jobs' own iteration times;
    future phases, whose survivors are not known yet, use the *median* iteration time of the
    current jobs (§4.3.3); with an even number of jobs the upper median (the pessimistic one,
    as in the paper's revised bid, where the survivors 120 s and 100 s give 120 s).
    ``T_id = N_avg * budget / min(R_C, app_demand_max)`` with
    ``app_demand_max = job_demand_max * max_p phase_jobs[p]``.

    Parameters
    ----------
    num_gpus : int or array_like of int
        GPUs in the allocation (vectorised, broadcast with ``slowdown``).
    iter_time_serial : array_like, shape (J,)
        Seconds per iteration on one GPU of each job alive in the current phase.
    phase_iters : array_like, shape (P,)
        Iterations each job runs in each phase of the plan.
    budget : float
        ``B``: the app's total budget in GPU-seconds.
    job_demand_max : int
        Most GPUs one job can use.
    cluster_gpus : int
        ``R_C``.
    contention : float
        ``N_avg`` (>= 1).
    elapsed : float
        Seconds since the app arrived.
    slowdown : float or array_like
        ``S(G) >= 1``.
    phase : int
        Index of the current phase (0-based).
    iter_left : array_like, shape (J,), optional
        Iterations each current job still has in this phase (default: the whole phase).
    phase_jobs : array_like of int, shape (P,), optional
        Jobs per phase; default halves from the first phase's count (``J`` at phase 0):
        ``ceil(J_0 / 2^p)``. ``phase_jobs[phase]`` must equal ``J``.
    schedule : {"balanced", "static"}
        How the app scheduler runs a phase on ``G`` GPUs (module docstring).

    Returns
    -------
    ndarray
        ``rho`` for each allocation.

    Examples
    --------
    The §4.3.3 example: 16 GPUs, 4 apps, jobs of 80/100/100/120 s per iteration, 8, 16 and 36
    iterations per phase, budget 10,000 GPU-s, ``job_demand_max`` 8 (Table 3):

    >>> successive_halving_rho([1, 2, 4, 8, 16], iter_time_serial=[80, 100, 100, 120],
    ...     phase_iters=[8, 16, 36], budget=10_000, job_demand_max=8, cluster_gpus=16,
    ...     contention=4).round(4).tolist()
    [4.0, 2.0, 1.0, 0.5, 0.34]
    """
    G, S = _gpus_and_slowdown(num_gpus, slowdown)
    schedule = as_option(schedule, "schedule", SCHEDULES)
    times = as_array(iter_time_serial, "iter_time_serial", ndim=1, positive=True)
    iters = as_array(phase_iters, "phase_iters", ndim=1, positive=True)
    P = iters.size
    p0 = as_positive_int(phase, "phase", allow_zero=True)
    if p0 >= P:
        raise InputError(f"phase {phase} does not exist (phase_iters has {P} phases)",
                         argument="phase")
    J = times.size
    if phase_jobs is None:
        if p0 != 0:
            raise InputError("phase_jobs is needed after the first phase (the first phase's job "
                             "count cannot be inferred)", argument="phase_jobs")
        jobs = _halving_jobs(J, P)
    else:
        jobs = as_array(phase_jobs, "phase_jobs", ndim=1, shape=(P,), positive=True,
                        integer=True).astype(int)
        if jobs[p0] != J:
            raise InputError(f"phase_jobs[{p0}] = {jobs[p0]} but iter_time_serial lists {J} jobs",
                             argument="phase_jobs", index=(p0,))
    if iter_left is None:
        left = np.full(J, iters[p0])
    else:
        left = as_array(iter_left, "iter_left", ndim=1, shape=(J,))
        if np.any(left > iters[p0]):
            j = int(np.flatnonzero(left > iters[p0])[0])
            raise InputError(f"iter_left[{j}] = {left[j]:g} exceeds the phase's "
                             f"{iters[p0]:g} iterations", argument="iter_left", index=(j,))
    B = as_positive_float(budget, "budget")
    d = _count(job_demand_max, "job_demand_max")
    rc = _count(cluster_gpus, "cluster_gpus")
    n_avg = _contention(contention)
    el = as_positive_float(elapsed, "elapsed", allow_zero=True)
    median = _upper_median(times)
    width = int(max(J, jobs[p0:].max()))
    work = np.zeros((P - p0, width))
    work[0, :J] = left * times
    future = np.arange(width)[None, :] < jobs[p0 + 1:, None]
    work[1:] = np.where(future, (iters[p0 + 1:] * median)[:, None], 0.0)
    with np.errstate(over="ignore", under="ignore"):
        t_cluster = B / min(rc, d * int(jobs.max()))
        t_sh = el + _phase_time(G, S, work, float(d), schedule)
        t_id = n_avg * t_cluster
    return _rho(t_sh, t_id, "budget")


def curve_stopping_rho(
    num_gpus: Any,
    *,
    iter_time_serial: Any,
    iter_left: Any,
    iter_total: Any,
    job_demand_max: int,
    cluster_gpus: int,
    contention: float = 1.0,
    elapsed: float = 0.0,
    slowdown: Any = 1.0,
    schedule: str = "balanced",
) -> np.ndarray:
    """Finish-time fairness of an app with performance-curve stopping (Themis §4.3.2).

    Each running job ``j`` is forecast to stop after ``iter_total[j]`` iterations (the app passes
    the most pessimistic forecast: the convergence curve giving the latest stop), so
    ``T_sh = elapsed + `` the finish time of the job that finishes last when the running jobs
    share ``G`` GPUs, and ``T_id = N_avg * sum_j iter_total[j] * t_j / min(R_C, J * d)``.

    Parameters
    ----------
    num_gpus : int or array_like of int
        GPUs in the allocation.
    iter_time_serial, iter_left, iter_total : array_like, shape (J,)
        Per running job: seconds per iteration on one GPU, forecast iterations left, forecast
        total iterations (``iter_left <= iter_total``).
    job_demand_max, cluster_gpus, contention, elapsed, slowdown, schedule
        As for `fairalloc.successive_halving_rho`.

    Returns
    -------
    numpy.ndarray
        ``rho = T_sh / T_id`` for each allocation in ``num_gpus`` (the shape of
        ``num_gpus``; ``rho < 1`` means the app finishes sooner than with its fair share).

    Examples
    --------
    >>> curve_stopping_rho([1, 2], iter_time_serial=[1.0, 1.0], iter_left=[50, 100],
    ...                    iter_total=[100, 100], job_demand_max=1, cluster_gpus=2).tolist()
    [1.5, 1.0]
    """
    G, S = _gpus_and_slowdown(num_gpus, slowdown)
    schedule = as_option(schedule, "schedule", SCHEDULES)
    times = as_array(iter_time_serial, "iter_time_serial", ndim=1, positive=True)
    J = times.size
    left = as_array(iter_left, "iter_left", ndim=1, shape=(J,))
    total = as_array(iter_total, "iter_total", ndim=1, shape=(J,), positive=True)
    if np.any(left > total):
        j = int(np.flatnonzero(left > total)[0])
        raise InputError(f"iter_left[{j}] = {left[j]:g} exceeds iter_total[{j}] = {total[j]:g}",
                         argument="iter_left", index=(j,))
    d = _count(job_demand_max, "job_demand_max")
    rc = _count(cluster_gpus, "cluster_gpus")
    n_avg = _contention(contention)
    el = as_positive_float(elapsed, "elapsed", allow_zero=True)
    with np.errstate(over="ignore", under="ignore"):
        t_cluster = float(total @ times) / min(rc, d * J)
        t_sh = el + _phase_time(G, S, (left * times)[None, :], float(d), schedule)
        t_id = n_avg * t_cluster
    return _rho(t_sh, t_id, "iter_time_serial")
