"""Round-based, event-accurate cluster simulator (Gavel §5-7, Shockwave §8, Ares §5).

Time advances in rounds of ``round_duration`` seconds. Before every round the simulator admits
the jobs that have arrived, shows the policy what a real scheduler could see -- the cluster and,
for every active job, its arrival, gang, current batch size and speed on each type, progress,
attained service and history (`fairalloc.sim.JobView`) -- and asks it for the round's
allocation:

* `fairalloc.sim.TimeShares` -- a fractional allocation ``X`` (jobs x types, Gavel
  §3.1), realised round by round by Gavel's mechanism
  (`fairalloc.RoundScheduler`, Algorithm 1: the job furthest
  below its share runs; history kept per job id);
* `fairalloc.sim.Schedule` -- the GPUs of each type every job holds this round (a plan's
  column, a priority queue's choice, an EFQ allocation; a gang may be smaller or larger than
  requested for elastic policies).

Within a round every scheduled job progresses **event-accurately**: it runs at the epoch speed
of its current regime on the slowest type it holds, scaled by its elastic speed-up when it holds
more or fewer GPUs than its gang (``(g / w) * scaling ** log2(g / w)``), crosses regime
boundaries at the exact instant (its speed changes there) and finishes at the exact instant its
last epoch ends; its GPUs then idle until the round ends. A job that starts (or restarts after
not running, or changes its GPUs) loses ``restart_overhead`` seconds at the start of the round
(checkpoint/restore; the Shockwave artifact uses 20 s). Regime changes become visible to the
policy at the next round, through the job's new speed and ``regime_changed``.

A job arriving at time ``a`` joins the first round that starts at or after ``a`` (never a round
that started before it arrived, however close: policies see ``elapsed >= 0``). Round ``r`` after
the clock last jumped to an arrival at ``t0`` (in round ``r0``) starts at ``t0 + (r - r0) D``.

**Fast-forward.** A policy that declares ``time_invariant = True`` promises that, while no job
arrives, finishes or changes regime, ``allocate`` returns a `fairalloc.sim.Schedule`
equal to the one it returned at its previous call and changes no state a later call reads,
whatever the clock, progress or service figures of the view say (``time``, ``round_index``,
``elapsed``, ``epochs_done``, ``attained``, ``gpu_seconds``, ``received``, ``idle_for``,
``contention_seconds``, ``running``, ``last_gpus``): FIFO and EFQ do, finish-time fairness (which
reads ``elapsed``), least attained service, stride scheduling or a plan counting its rounds do not.
For such a policy the simulator reuses its last decision without calling it in rounds whose state
shows no event, and jumps over every run of rounds in which no job arrives, finishes or changes
regime in one vectorised step (`fairalloc.sim._rounds`): the same floating-point operations, so
the results are bit-for-bit those of stepping through every round (``fast_forward=False``). A job
alone for a million rounds then takes half a second, not five minutes.

All per-round work is vectorised over jobs (numpy over jobs x regimes x types); the simulation
is deterministic for a given policy, workload and seed, and does not depend on the clock.
"""

from __future__ import annotations

import math
import sys
import time as _time
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .._validation import as_array, as_bool, as_option, as_positive_float, as_positive_int
from ..data import Cluster
from ..errors import FairallocError, InputError, SolverError, only_fairalloc_errors
from ._rounds import _JobRows, _repeat_add, _run_jobs, _run_jobs_upstream, _speedup, _steady_rounds
from .metrics import SimulationResult
from .state import ClusterState, JobView, Policy, RoundState, Schedule, TimeShares
from .workload import Workload

__all__ = ["MAX_ROUNDS", "MAX_STEPPED_ROUNDS", "SimulationError", "Simulator"]

#: the most rounds a simulation runs by default (its per-round records: about 32 bytes a round,
#: plus 48 per job scheduled in it); a workload with a job that alone needs more is refused with
#: InputError up front, and a simulation that reaches it stops with SimulationError, unless
#: ``max_rounds`` is given
MAX_ROUNDS = 10_000_000
#: the most rounds a simulation steps through by default when its policy must be called every
#: round (a policy that is not ``time_invariant``, or ``fast_forward=False``): about 3,000 rounds
#: a CPU-second for one job with FIFO stepping on a two-core machine (5.5 minutes of CPU); a
#: workload with a job that alone needs more is refused up front, unless ``max_rounds`` is given
MAX_STEPPED_ROUNDS = 1_000_000
#: default seconds per round (Gavel's 6 minutes)
DEFAULT_ROUND_DURATION = 360.0
#: default number of consecutive rounds in which jobs wait but the policy schedules none
#: before the simulation stops with `fairalloc.sim.SimulationError`
DEFAULT_MAX_IDLE_ROUNDS = 10_000


class SimulationError(FairallocError, RuntimeError):
    """The simulation cannot go on (a policy keeps scheduling nothing, or exceeded limits).

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import BasePolicy, Schedule, Workload, simulate
    >>> class Nothing(BasePolicy):
    ...     name = "nothing"
    ...     def allocate(self, state):
    ...         return Schedule([[0]] * state.jobs.n)
    >>> w = Workload.from_arrays([0.0], [[1.0]], [360.0])
    >>> try:
    ...     simulate(w, fa.Cluster({"gpu": 1}), Nothing(), max_rounds=3)
    ... except SimulationError as exc:
    ...     print(exc)
    policy 'nothing': 1 of 1 jobs unfinished after 3 rounds (the round limit; see \
Simulator.round_limit, or pass max_rounds)
    """


class _Column:
    """A growing column of per-round values: single appends, or a whole run of rounds."""

    def __init__(self) -> None:
        self.chunks: list[np.ndarray] = []
        self.buf: list[float] = []

    def append(self, value: float) -> None:
        self.buf.append(value)

    def extend(self, values: np.ndarray) -> None:
        self._flush()
        self.chunks.append(values)

    def _flush(self) -> None:
        if self.buf:
            self.chunks.append(np.array(self.buf))
            self.buf = []

    def array(self, dtype: Any) -> np.ndarray:
        self._flush()
        return np.concatenate(self.chunks).astype(dtype) if self.chunks else np.zeros(0, dtype)


# --------------------------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------------------------
class Simulator:
    """Simulate one policy on one workload and cluster.

    Parameters
    ----------
    workload : Workload
    cluster : fairalloc.Cluster
        Same accelerator types as the workload.
    policy : Policy
        Any object with ``name``, ``reset(...)`` and ``allocate(state)``
        (`fairalloc.sim.policies`); optionally ``time_invariant = True`` (module docstring).
    round_duration : float, default 360.0
        Seconds per round (Gavel uses 360, Shockwave 120).
    restart_overhead : float, default 0.0
        Seconds lost by a job each time it (re)starts.
    seed : int, default 0
        Passed to the policy's ``reset`` (policies with random choices use it).
    max_idle_rounds : int, default 10000
        Stop with `fairalloc.sim.SimulationError` after this many consecutive
        rounds in which jobs waited but the policy scheduled none.
    max_rounds : int, optional
        Stop with `fairalloc.sim.SimulationError` after this many rounds.
        Default: a bound derived from the workload
        (`fairalloc.sim.simulator.Simulator.round_limit`), so a simulation never runs
        forever; a workload with a job that alone needs more than
        `fairalloc.sim.simulator.MAX_ROUNDS` rounds (or
        `fairalloc.sim.simulator.MAX_STEPPED_ROUNDS` when the policy must be
        called every round) is refused with `fairalloc.InputError` unless
        ``max_rounds`` is given.
    record : bool, default True
        Keep the per-round schedule (for Gantt charts).
    mechanism_fraction : {"elapsed", "type_share"}
        Received-fraction rule of the round-based mechanism for
        `fairalloc.sim.TimeShares`.
    fast_forward : bool, default True
        With a ``time_invariant`` policy, skip its calls in rounds without events and jump over
        runs of rounds in which nothing changes (module docstring); ``False`` steps through every
        round and calls the policy each time (the same results, slower: for checking).
    mechanics : {"event", "upstream"}, default "event"
        How a round advances the jobs. ``"event"``: event-accurately (module docstring).
        ``"upstream"``: as the Shockwave artifact's simulator does (uw-mad-dash/shockwave
        ``scheduler/scheduler.py``, shared by its Shockwave and its baselines), for reproducing
        its published runs: a job runs ``int(steps/s * round_duration)`` whole steps at the
        batch size it starts the round with (scheduler.py:1425-1466); a batch-size change is
        flagged at a round's end when the job's epochs rounded up reach its regime's end (GNS:
        one epoch ahead) and made after the job's next run, its completed epochs rounded up to
        a whole number (scheduler.py:1604-1727, 4676-4678, 4900-4925); the restart overhead is
        charged only to a job that did not run in the previous round, never in the first round,
        and only when its run is longer than the round less 5 s, by keeping
        ``int(steps * (run - overhead) / run)`` of its steps, the overhead not counted in
        ``received`` (scheduler.py:1936-1990). Never fast-forwards
        (`fairalloc.sim._rounds._run_jobs_upstream`).

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, make_policy
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [720.0, 360.0])
    >>> r = Simulator(w, fa.Cluster({"gpu": 1}), make_policy("fifo"),
    ...               round_duration=360.0).run()
    >>> r.finish.tolist(), r.makespan
    ([720.0, 1080.0], 1080.0)
    """

    @only_fairalloc_errors
    def __init__(self, workload: Workload, cluster: Cluster, policy: Policy, *,
                 round_duration: float = DEFAULT_ROUND_DURATION, restart_overhead: float = 0.0,
                 seed: int = 0, max_idle_rounds: int = DEFAULT_MAX_IDLE_ROUNDS,
                 record: bool = True,
                 mechanism_fraction: str = "elapsed", max_rounds: int | None = None,
                 fast_forward: bool = True, mechanics: str = "event") -> None:
        if not isinstance(workload, Workload):
            raise InputError(f"workload must be a fairalloc.sim.Workload, got "
                             f"{type(workload).__name__}", argument="workload")
        workload.check_cluster(cluster)
        if not isinstance(policy, Policy):
            raise InputError("policy must have a name, reset(...) and allocate(state)",
                             argument="policy")
        self.workload, self.cluster, self.policy = workload, cluster, policy
        self.round_duration = as_positive_float(round_duration, "round_duration")
        self.restart_overhead = as_positive_float(restart_overhead, "restart_overhead",
                                                  allow_zero=True)
        if self.restart_overhead >= self.round_duration:
            raise InputError("restart_overhead must be shorter than a round",
                             argument="restart_overhead")
        seed = as_positive_int(seed, "seed", allow_zero=True)
        self.seed = int(seed)
        self.max_idle_rounds = as_positive_int(max_idle_rounds, "max_idle_rounds")
        self.record = as_bool(record, "record")
        self.mechanism_fraction = as_option(mechanism_fraction, "mechanism_fraction",
                                            ("elapsed", "type_share"))
        self.max_rounds = None if max_rounds is None else as_positive_int(max_rounds,
                                                                          "max_rounds")
        self.fast_forward = as_bool(fast_forward, "fast_forward")
        self.mechanics = as_option(mechanics, "mechanics", ("event", "upstream"))
        self.round_limit()  # refuse a workload that could not finish in reasonable time now
        if self.mechanics == "upstream":
            self._check_whole_steps()

    @property
    def fast(self) -> bool:
        """Whether this simulation fast-forwards (``fast_forward`` and a ``time_invariant``
        policy)."""
        return (self.fast_forward and self.mechanics == "event"
                and getattr(self.policy, "time_invariant", False) is True)

    def _check_whole_steps(self) -> None:
        """Under upstream's mechanics a job runs ``int(steps/s * round)`` steps a round: refuse
        a regime of fewer than one step a round on its fastest type (it would never end)."""
        w = self.workload
        real = np.arange(w.regime_epochs.shape[1])[None, :] < w.num_regimes[:, None]
        with np.errstate(all="ignore"):
            steps = np.floor(w.regime_iterations / w.regime_seconds.min(axis=2)
                             * self.round_duration)
        bad = np.argwhere(real & ~(steps >= 1))
        if bad.size:
            i, r = (int(v) for v in bad[0])
            raise InputError(f"workload: job {w.ids[i]!r} runs fewer than one whole step a "
                             f"round in its regime {r}, which mechanics='upstream' truncates to "
                             "none: use a longer round_duration or mechanics='event'",
                             argument="workload", index=(i, r))

    def min_rounds(self) -> int:
        """A lower bound on the rounds the simulation runs: the rounds the longest job needs
        alone, each regime on its fastest type, with its gang or -- when its elastic speed-up
        is larger there (EFQ) -- one GPU or all the GPUs of the largest type it can use,
        without restart overhead."""
        worst = float(self._alone_rounds().max())
        return int(worst) if math.isfinite(worst) else sys.maxsize

    def _alone_rounds(self) -> np.ndarray:
        """Per job, the rounds of `min_rounds` (``inf`` beyond a float)."""
        w = self.workload
        usable = w.runnable & (w.scale_factor[:, None] <= self.cluster.capacity[None, :])
        most = np.where(usable, self.cluster.capacity[None, :], 0).max(axis=1).astype(float)
        sf = w.scale_factor.astype(float)
        speed = np.maximum.reduce([_speedup(g, sf, w.scaling) for g in (np.ones_like(sf), sf,
                                                                         most)])
        real = np.arange(w.regime_epochs.shape[1])[None, :] < w.num_regimes[:, None]
        with np.errstate(all="ignore"):
            fastest = np.where(real, w.regime_epochs * w.regime_seconds.min(axis=2),
                               0.0).sum(axis=1)
            return np.ceil(fastest / (speed * self.round_duration))

    def round_limit(self) -> int:
        """Rounds after which `fairalloc.sim.simulator.Simulator.run` stops with
        `fairalloc.sim.SimulationError` (never hangs).

        ``max_rounds`` when given; otherwise derived from the workload: every round in which
        a job runs gives it at least ``round_duration - restart_overhead`` seconds on one GPU of
        its slowest usable type, where it needs at most ``W_i = scale_factor_i * sum_r epochs_r
        * max_type seconds_r`` seconds, so at most ``B = sum_i ceil(W_i / (D - overhead)) + n``
        rounds run a job; the limit is ``2 B + max_idle_rounds``, at most
        `fairalloc.sim.simulator.MAX_ROUNDS` (fast-forwarding) or
        `fairalloc.sim.simulator.MAX_STEPPED_ROUNDS` (a policy called
        every round).

        Raises
        ------
        InputError
            If a job alone needs more rounds than that bound
            (`fairalloc.sim.simulator.Simulator.min_rounds`: its epoch times are
            astronomically long for the round duration): pass ``max_rounds`` to allow it.
        """
        if self.max_rounds is not None:
            return self.max_rounds
        w = self.workload
        cap, cap_name = ((MAX_ROUNDS, "MAX_ROUNDS") if self.fast
                         else (MAX_STEPPED_ROUNDS, "MAX_STEPPED_ROUNDS"))
        need_min = self.min_rounds()
        if need_min > cap:
            i = int(np.argmax(self._alone_rounds()))
            stepping = "" if self.fast else (
                f", through which policy {self.policy.name!r} steps one round at a time (it is "
                "not time_invariant)")
            raise InputError(
                f"workload: job {w.ids[i]!r} alone needs {w.isolated_seconds[i]:.3g} s of "
                f"training, at least {need_min:,} rounds of {self.round_duration:g} s: more than "
                f"{cap_name} = {cap:,}{stepping}; check its durations or throughputs, use a "
                "longer round_duration, or pass max_rounds", argument="workload")
        R = w.regime_epochs.shape[1]
        real = np.arange(R)[None, :] < w.num_regimes[:, None]
        with np.errstate(all="ignore"):
            sec = np.where(np.isfinite(w.regime_seconds), w.regime_seconds, -np.inf).max(axis=2)
            need = np.where(real, w.regime_epochs * sec, 0.0).sum(axis=1) * w.scale_factor
            per_round = self.round_duration - self.restart_overhead
            rounds = np.ceil(need / per_round).sum() + w.n
        limit = 2.0 * float(rounds) + self.max_idle_rounds
        return int(limit) if math.isfinite(limit) and limit <= cap else cap

    # -- the run ---------------------------------------------------------------------------
    def run(self, progress: Any = None) -> SimulationResult:
        """Run the simulation to the end (every job finished).

        Parameters
        ----------
        progress : callable, optional
            Called as ``progress(finished_jobs, total_jobs)`` after every round (once after a
            fast-forwarded run of rounds). An exception it raises propagates unchanged (a way
            to stop a simulation early).

        Raises
        ------
        SimulationError
            When the jobs are not finished after
            `fairalloc.sim.simulator.Simulator.round_limit` rounds, or the policy
            schedules nothing for ``max_idle_rounds`` consecutive rounds.
        SolverError
            When the policy fails with a foreign exception (chained as the cause).
        InputError
            When the policy returns a malformed decision.
        """
        if progress is not None and not callable(progress):
            raise InputError(f"progress must be callable, got {progress!r}", argument="progress")
        return _Run(self, progress).run()

    # -- helpers ---------------------------------------------------------------------------
    def _call_policy(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call the policy; a foreign exception becomes SolverError (cause chained)."""
        try:
            return getattr(self.policy, method)(*args, **kwargs)
        except FairallocError:
            raise
        except Exception as exc:
            raise SolverError(f"policy {self.policy.name!r} failed in {method}(): "
                              f"{type(exc).__name__}: {exc}", backend="none") from exc

    def _view(self, active: np.ndarray, t: float, regime: np.ndarray, in_regime: np.ndarray,
              epochs_done: np.ndarray, attained: np.ndarray, gpu_sec: np.ndarray,
              received: np.ndarray, last_gpus: np.ndarray, last_run_end: np.ndarray,
              seen_regime: np.ndarray, arrived_now: np.ndarray, contention: np.ndarray,
              best_type_sec: np.ndarray, real: np.ndarray) -> JobView:
        w = self.workload
        a = active
        R = w.regime_epochs.shape[1]
        cur = regime[a]
        reg_idx = np.arange(R)[None, :]
        seen = reg_idx <= cur[:, None]
        hist_ep = np.where(reg_idx < cur[:, None], w.regime_epochs[a], 0.0)
        hist_ep[np.arange(a.size), cur] = in_regime[a]
        idle = np.where(np.isnan(last_run_end[a]), t - w.arrival[a], t - last_run_end[a])

        def ro(x: np.ndarray) -> np.ndarray:
            x.flags.writeable = False
            return x

        return JobView(
            index=ro(a.copy()), ids=tuple(w.ids[i] for i in a.tolist()), types=w.types,
            arrival=ro(w.arrival[a].copy()), scale_factor=ro(w.scale_factor[a].copy()),
            weight=ro(w.weight[a].copy()), model=tuple(w.model[i] for i in a.tolist()),
            mode=tuple(w.mode[i] for i in a.tolist()),
            batch_size=ro(w.regime_batch[a, cur].copy()),
            initial_batch=ro(w.regime_batch[a, 0].copy()), max_batch=ro(w.max_batch[a].copy()),
            epoch_seconds=ro(w.regime_seconds[a, cur].copy()),
            iterations_per_epoch=ro(w.regime_iterations[a, cur].copy()),
            total_epochs=ro(w.total_epochs[a].copy()), epochs_done=ro(epochs_done[a].copy()),
            attained=ro(attained[a].copy()), gpu_seconds=ro(gpu_sec[a].copy()),
            received=ro(received[a].copy()), elapsed=ro(t - w.arrival[a]),
            idle_for=ro(np.maximum(idle, 0.0)), running=ro(last_gpus[a].sum(axis=1) > 0),
            last_gpus=ro(last_gpus[a].copy()), regime=ro(cur.copy()),
            regime_changed=ro(cur != seen_regime[a]), arrived_now=ro(arrived_now[a].copy()),
            contention_seconds=ro(contention[a].copy()),
            history_batch=ro(np.where(seen, w.regime_batch[a], 0.0)),
            history_epochs=ro(hist_ep),
            history_seconds=ro(np.where(seen & real[a], best_type_sec[a], 0.0)))

    def _check_schedule(self, decision: Schedule, view: JobView) -> np.ndarray:
        name = f"policy {self.policy.name!r}"
        try:
            g = np.asarray(decision.gpus, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{name} returned a Schedule whose gpus is not numeric",
                             argument="policy") from None
        k = self.workload.num_types
        if g.shape != (view.n, k):
            raise InputError(f"{name} returned gpus of shape {g.shape}; expected "
                             f"{(view.n, k)} (active jobs x types)", argument="policy")
        if not np.isfinite(g).all() or (g < 0).any() or (g != np.round(g)).any():
            raise InputError(f"{name} returned gpus that are not non-negative integers",
                             argument="policy")
        g = g.astype(np.int64)
        use = g.sum(axis=0)
        over = np.flatnonzero(use > self.cluster.capacity)
        if over.size:
            j = int(over[0])
            raise InputError(f"{name} uses {use[j]} GPUs of type {self.workload.types[j]!r}, "
                             f"which has {int(self.cluster.capacity[j])}", argument="policy")
        bad = np.argwhere((g > 0) & ~view.runnable)
        if bad.size:
            i, j = (int(v) for v in bad[0])
            raise InputError(f"{name} put job {view.ids[i]!r} on type "
                             f"{self.workload.types[j]!r}, where it cannot run",
                             argument="policy", index=(i, j))
        return g

    def _realise(self, decision: TimeShares, view: JobView, mech: Any,
                 mech_ids: tuple[Hashable, ...] | None) -> tuple[Any, Any, np.ndarray]:
        from ..mechanism import RoundScheduler

        k = self.workload.num_types
        # (a policy's own output: a subnormal share is no time at all, read as 0, because the
        # round scheduler below validates x as user input, which refuses subnormals)
        x = as_array(decision.x, "x", ndim=2, shape=(view.n, k), allow_subnormal=True)
        runnable = view.runnable & (view.scale_factor[:, None] <= self.cluster.capacity[None, :])
        x = np.where(runnable & (np.abs(x) >= np.finfo(np.float64).tiny), x, 0.0)
        if mech is None:
            mech = RoundScheduler(x, self.cluster, scale_factor=view.scale_factor,
                                  runnable=runnable, ids=view.ids, fraction=self.mechanism_fraction)
        else:
            mech.update(x, scale_factor=view.scale_factor, runnable=runnable, ids=view.ids)
        a = mech.step()
        return mech, view.ids, Schedule.from_types(a.type_index, view.scale_factor, k).gpus


# --------------------------------------------------------------------------------------------
# one run: the state arrays and the round loop
# --------------------------------------------------------------------------------------------
class _Run:
    """The state of one simulation (arrays over the workload's jobs) and its round loop."""

    def __init__(self, sim: Simulator, progress: Any) -> None:
        self.sim, self.progress = sim, progress
        w = sim.workload
        n, k, R = w.n, w.num_types, w.regime_epochs.shape[1]
        self.w, self.D = w, sim.round_duration
        self.limit = sim.round_limit()
        self.fast = sim.fast
        self.reg_idx = np.arange(R)[None, :]
        self.real = self.reg_idx < w.num_regimes[:, None]
        self.sec_real = np.where(self.real[:, :, None], w.regime_seconds, np.inf)
        self.best_type_sec = np.where(self.real, np.min(self.sec_real, axis=2), 0.0)
        self.total_epochs = w.total_epochs
        # upstream's GNS flags a batch-size change one epoch ahead (mechanics="upstream")
        self.bs_lead = np.array([m == "gns" for m in w.mode], dtype=float)
        self.arrived = np.zeros(n, dtype=bool)
        self.done = np.zeros(n, dtype=bool)
        self.regime = np.zeros(n, dtype=np.int64)
        self.in_regime = np.zeros(n)  # epochs done in the current regime
        self.epochs_done = np.zeros(n)
        self.attained = np.zeros(n)
        self.gpu_sec = np.zeros(n)
        self.received = np.zeros((n, k))
        self.start = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.last_gpus = np.zeros((n, k), dtype=np.int64)
        self.last_run_end = np.full(n, np.nan)
        self.seen_regime = np.zeros(n, dtype=np.int64)
        self.contention = np.zeros(n)
        self.preempt = np.zeros(n, dtype=np.int64)
        self.restarts = np.zeros(n, dtype=np.int64)
        self.ever_ran = np.zeros(n, dtype=bool)
        self.rounds = 0
        self.idle_streak = 0
        self.policy_seconds = 0.0
        self.r_time, self.r_busy, self.r_active, self.r_demand = (_Column(), _Column(),
                                                                  _Column(), _Column())
        self.sched: tuple[list[np.ndarray], ...] = ([], [], [], [], [], [])
        self.pending_finished: list[tuple[Hashable, float]] = []
        self.mech: Any = None
        self.mech_ids: tuple[Hashable, ...] | None = None
        self.reuse: np.ndarray | None = None  # the time-invariant policy's last Schedule
        self.t_anchor = 0.0  # the clock jumped to t_anchor at round r_anchor
        self.r_anchor = 0

    def time_of(self, r: int) -> float:
        """Start of round ``r`` (rounds after the last jump of the clock, times D)."""
        return self.t_anchor + (r - self.r_anchor) * self.D

    def run(self) -> SimulationResult:
        sim, w, D = self.sim, self.w, self.D
        t_wall = _time.perf_counter()
        sim._call_policy("reset", w, sim.cluster, round_duration=D, seed=sim.seed)
        n = w.n
        order = np.argsort(w.arrival, kind="stable")
        next_arrival = 0  # position in `order`
        self.t_anchor = float(w.arrival[order[0]])
        while not self.done.all():
            t = self.time_of(self.rounds)
            # admit the jobs that have arrived by the round's start (none that arrive later)
            new = []
            while next_arrival < n and w.arrival[order[next_arrival]] <= t:
                new.append(order[next_arrival])
                next_arrival += 1
            new_idx = np.array(new, dtype=np.int64)
            self.arrived[new_idx] = True
            active = np.flatnonzero(self.arrived & ~self.done)
            if active.size == 0:  # jump to the next arrival
                self.t_anchor, self.r_anchor = float(w.arrival[order[next_arrival]]), self.rounds
                self.last_gpus[:] = 0
                self.reuse = None
                continue
            a_next = float(w.arrival[order[next_arrival]]) if next_arrival < n else math.inf
            event = (new_idx.size > 0 or bool(self.pending_finished)
                     or bool((self.regime[active] != self.seen_regime[active]).any()))
            if self.reuse is not None and not event:
                gpus = self.reuse  # a time-invariant policy: the decision stands
                if self._fast_forward(active, gpus, a_next):
                    continue
            else:
                gpus = self._decide(active, t, new_idx)
            self._round(active, gpus, t)

        sched = self.sched

        def cat(parts: Sequence[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

        params = dict(getattr(sim.policy, "params", {}) or {})
        return SimulationResult(
            policy=sim.policy.name, workload=w, cluster=sim.cluster, round_duration=D,
            restart_overhead=sim.restart_overhead, start=self.start, finish=self.finish,
            attained=self.attained, gpu_seconds=self.gpu_sec, preemptions=self.preempt,
            restarts=self.restarts, round_time=self.r_time.array(float),
            round_busy=self.r_busy.array(float),
            round_active=self.r_active.array(np.int64),
            round_demand=self.r_demand.array(np.int64),
            sched_job=cat(sched[0], np.int64), sched_round=cat(sched[1], np.int64),
            sched_type=cat(sched[2], np.int64), sched_gpus=cat(sched[3], np.int64),
            sched_start=cat(sched[4], float), sched_end=cat(sched[5], float),
            policy_seconds=self.policy_seconds, wall_seconds=_time.perf_counter() - t_wall,
            params=params)

    # -- one decision ----------------------------------------------------------------------
    def _decide(self, active: np.ndarray, t: float, new_idx: np.ndarray) -> np.ndarray:
        """Show the policy the round and return its GPUs per active job and type."""
        sim, w = self.sim, self.w
        arrived_now = np.zeros(w.n, dtype=bool)
        arrived_now[new_idx] = True
        view = sim._view(active, t, self.regime, self.in_regime, self.epochs_done,
                         self.attained, self.gpu_sec, self.received, self.last_gpus,
                         self.last_run_end, self.seen_regime, arrived_now, self.contention,
                         self.best_type_sec, self.real)
        self.seen_regime[active] = self.regime[active]
        state = RoundState(
            cluster=ClusterState(sim.cluster, t, self.rounds, self.D,
                                 int(sim.cluster.capacity.sum())),
            jobs=view, finished=tuple(self.pending_finished),
            arrived=tuple((w.ids[i], float(w.arrival[i])) for i in new_idx.tolist()))
        self.pending_finished = []
        t0 = _time.perf_counter()
        decision = sim._call_policy("allocate", state)
        if isinstance(decision, TimeShares):
            self.mech, self.mech_ids, gpus = sim._realise(decision, view, self.mech,
                                                          self.mech_ids)
            self.reuse = None
        elif isinstance(decision, Schedule):
            gpus = sim._check_schedule(decision, view)
            self.reuse = gpus if self.fast else None
        else:
            raise InputError(f"policy {sim.policy.name!r} returned a "
                             f"{type(decision).__name__}; expected TimeShares or Schedule",
                             argument="policy")
        self.policy_seconds += _time.perf_counter() - t0
        return gpus

    def _rows(self, S: np.ndarray, g: np.ndarray, total: np.ndarray
              ) -> tuple[_JobRows, np.ndarray, np.ndarray]:
        """The running jobs' rows, their held-type mask and the type each is reported on."""
        w = self.w
        held = g > 0
        sec = np.where(held[:, None, :], self.sec_real[S], -np.inf).max(axis=2)  # (s, R)
        speed = _speedup(total.astype(float), w.scale_factor[S], w.scaling[S])
        rows = _JobRows(epochs=w.regime_epochs[S], real=self.real[S], nreg=w.num_regimes[S],
                        total=self.total_epochs[S], sec_eff=sec / speed[:, None])
        return rows, held, speed

    # -- one round -------------------------------------------------------------------------
    def _round(self, active: np.ndarray, gpus: np.ndarray, t: float) -> None:
        """Run one round with ``gpus`` (active jobs x types), event-accurately."""
        w, D = self.w, self.D
        total = gpus.sum(axis=1)
        on = total > 0
        S = active[on]
        g = gpus[on]
        prev = self.last_gpus[active]
        was_running = prev.sum(axis=1) > 0
        changed = (gpus != prev).any(axis=1)
        # preemption: ran last round, still unfinished, and does not run now
        self.preempt[active[was_running & ~on]] += 1
        upstream = self.sim.mechanics == "upstream"
        # upstream charges a job absent from the previous round, never in the first one
        restarting = on & ((~was_running & (self.rounds > 0)) if upstream
                           else (changed | ~was_running))
        self.restarts[active[restarting & self.ever_ran[active]]] += 1
        overhead = np.where(restarting[on], self.sim.restart_overhead, 0.0)
        busy = 0.0
        if S.size:
            rows, held, _ = self._rows(S, g, total[on])
            if upstream:
                out = _run_jobs_upstream(rows, self.regime[S], self.in_regime[S],
                                         self.epochs_done[S], w.regime_iterations[S],
                                         w.regime_batch[S], self.bs_lead[S], D, overhead)
            else:
                out = _run_jobs(rows, self.regime[S], self.in_regime[S], D - overhead,
                                overhead)
            self.regime[S] = out.regime
            self.in_regime[S] = out.in_regime
            self.epochs_done[S] = out.epochs_done
            run_time = out.run_time
            self.attained[S] += run_time
            self.gpu_sec[S] += run_time * total[on]
            ttype = np.where(held, self.sec_real[S, self.regime[S]], -np.inf).argmax(axis=1)
            np.add.at(self.received, (S, ttype),
                      run_time if out.counted is None else out.counted)
            self.start[S] = np.where(np.isnan(self.start[S]), t, self.start[S])
            self.ever_ran[S] = True
            self.last_run_end[S] = t + run_time
            busy = float((run_time * total[on]).sum())
            fin_jobs = S[out.fin]
            self.finish[fin_jobs] = t + run_time[out.fin]
            self.done[fin_jobs] = True
            ordf = np.argsort(self.finish[fin_jobs], kind="stable")
            self.pending_finished = [(w.ids[i], float(self.finish[i]))
                                     for i in fin_jobs[ordf].tolist()]
            if self.sim.record:
                for part, value in zip(self.sched, (
                        S, np.full(S.size, self.rounds, dtype=np.int64), ttype, total[on],
                        np.full(S.size, t), t + run_time), strict=True):
                    part.append(value)
        self.last_gpus[:] = 0
        self.last_gpus[active] = gpus
        self.last_gpus[self.done] = 0
        self.contention[active] += active.size * D
        self.r_time.append(t)
        self.r_busy.append(busy)
        self.r_active.append(int(active.size))
        self.r_demand.append(int(w.scale_factor[active].sum()))
        self.rounds += 1
        self.idle_streak = 0 if S.size else self.idle_streak + 1
        self._checks(active)

    def _checks(self, active: np.ndarray) -> None:
        """After a round (or a fast-forwarded run of rounds): the idle and round limits, then
        the progress callback."""
        sim = self.sim
        if self.idle_streak >= sim.max_idle_rounds:
            raise SimulationError(
                f"policy {sim.policy.name!r} scheduled no job for {self.idle_streak} "
                f"consecutive rounds while {active.size} jobs waited")
        if self.rounds >= self.limit and not self.done.all():
            raise SimulationError(
                f"policy {sim.policy.name!r}: {int((~self.done).sum())} of {self.w.n} jobs "
                f"unfinished after {self.rounds} rounds (the round limit; see "
                "Simulator.round_limit, or pass max_rounds)")
        if self.progress is not None:
            self.progress(int(self.done.sum()), self.w.n)

    # -- fast-forward ----------------------------------------------------------------------
    def _horizon(self, a_next: float) -> int:
        """Rounds from the current one on whose start no job arrives by (the current one
        included), as the round loop would compute their starts."""
        if not math.isfinite(a_next):
            return self.limit - self.rounds
        k = max(int((a_next - self.time_of(self.rounds)) // self.D) - 1, 1)
        while self.time_of(self.rounds + k) < a_next:
            k += 1
        while k > 1 and self.time_of(self.rounds + k - 1) >= a_next:
            k -= 1
        return k

    def _fast_forward(self, active: np.ndarray, gpus: np.ndarray, a_next: float) -> int:
        """Run in one step the rounds, from the current one on, in which the (unchanged)
        decision ``gpus`` holds and no job arrives, finishes or changes regime; return how
        many (0: the current round is not one of them)."""
        w, D = self.w, self.D
        horizon = min(self._horizon(a_next), self.limit - self.rounds)
        total = gpus.sum(axis=1)
        on = total > 0
        S = active[on]
        if not S.size:
            horizon = min(horizon, self.sim.max_idle_rounds - self.idle_streak)
        if horizon <= 0:
            return 0
        zero = np.zeros(S.size)
        avail = D - zero
        if S.size:
            rows, held, _ = self._rows(S, gpus[on], total[on])
            f, before_last = _steady_rounds(rows, self.regime[S], self.in_regime[S], avail,
                                            horizon)
        else:
            f = horizon
        if f == 0:
            return 0
        times = self.t_anchor + np.arange(self.rounds - self.r_anchor,
                                          self.rounds - self.r_anchor + f) * D
        busy = 0.0
        if S.size:
            out = _run_jobs(rows, self.regime[S], before_last, avail, zero)  # the last round
            self.regime[S] = out.regime
            self.in_regime[S] = out.in_regime
            self.epochs_done[S] = out.epochs_done
            run_time = out.run_time
            self.attained[S] = _repeat_add(self.attained[S], run_time, f)
            self.gpu_sec[S] = _repeat_add(self.gpu_sec[S], run_time * total[on], f)
            ttype = np.where(held, self.sec_real[S, self.regime[S]], -np.inf).argmax(axis=1)
            self.received[S, ttype] = _repeat_add(self.received[S, ttype], run_time, f)
            self.start[S] = np.where(np.isnan(self.start[S]), times[0], self.start[S])
            self.ever_ran[S] = True
            self.last_run_end[S] = times[-1] + run_time
            busy = float((run_time * total[on]).sum())
            if self.sim.record:
                starts = np.repeat(times, S.size)
                for part, value in zip(self.sched, (
                        np.tile(S, f), np.repeat(np.arange(self.rounds, self.rounds + f),
                                                 S.size), np.tile(ttype, f),
                        np.tile(total[on], f), starts, starts + np.tile(run_time, f)),
                        strict=True):
                    part.append(value)
        self.contention[active] = _repeat_add(self.contention[active], active.size * D, f)
        self.r_time.extend(times)
        self.r_busy.extend(np.full(f, busy))
        self.r_active.extend(np.full(f, active.size, dtype=np.int64))
        self.r_demand.extend(np.full(f, int(w.scale_factor[active].sum()), dtype=np.int64))
        self.rounds += f
        self.idle_streak = 0 if S.size else self.idle_streak + f
        self._checks(active)
        return f
