"""Round-based, event-accurate cluster simulator (Gavel §5-7, Shockwave §8, Ares §5).

Time advances in rounds of ``round_duration`` seconds. Before every round the simulator admits
the jobs that have arrived, shows the policy what a real scheduler could see -- the cluster and,
for every active job, its arrival, gang, current batch size and speed on each type, progress,
attained service and history ([`JobView`][fairalloc.sim.JobView]) -- and asks it for the round's
allocation:

* [`TimeShares`][fairalloc.sim.TimeShares] -- a fractional allocation ``X`` (jobs x types, Gavel
  §3.1), realised round by round by Gavel's mechanism
  ([`fairalloc.mechanism.RoundScheduler`][fairalloc.RoundScheduler], Algorithm 1: the job furthest
  below its share runs; history kept per job id);
* [`Schedule`][fairalloc.sim.Schedule] -- the GPUs of each type every job holds this round (a plan's
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

All per-round work is vectorised over jobs (numpy over jobs x regimes x types); the simulation
is deterministic for a given policy, workload and seed.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .._validation import as_array, as_bool, as_option, as_positive_float, as_positive_int
from ..data import Cluster
from ..errors import FairallocError, InputError, SolverError, only_fairalloc_errors
from .metrics import SimulationResult
from .state import ClusterState, JobView, Policy, RoundState, Schedule, TimeShares
from .workload import Workload

__all__ = ["MAX_ROUNDS", "SimulationError", "Simulator"]

#: relative tolerance for "the job's last epoch ends within the round"
_FINISH_RTOL = 1e-9
#: a regime whose remaining epochs fall below this is finished (float round-off)
_EPOCH_TOL = 1e-9
#: the default round limit (derived from the workload) may not exceed this many rounds; a
#: workload that could need more must pass ``max_rounds`` explicitly
MAX_ROUNDS = 10_000_000_000
#: default seconds per round (Gavel's 6 minutes)
DEFAULT_ROUND_DURATION = 360.0
#: default number of consecutive rounds in which jobs wait but the policy schedules none
#: before the simulation stops with [`SimulationError`][fairalloc.sim.SimulationError]
DEFAULT_MAX_IDLE_ROUNDS = 10_000
#: a job arriving within this many seconds of a round's start is admitted to that round
ARRIVAL_SLACK = 1e-9
#: absolute slack (seconds) of "the job's last epoch ends within the round"
FINISH_ATOL = 1e-9
#: floor of the GPU ratio under the logarithm of the elastic speed-up (no log(0) warning)
MIN_GPU_RATIO = 1e-300


class SimulationError(FairallocError, RuntimeError):
    """The simulation cannot go on (a policy keeps scheduling nothing, or exceeded limits)."""


# --------------------------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------------------------
def _speedup(g: np.ndarray, w: np.ndarray, eff: np.ndarray) -> np.ndarray:
    """Elastic speed-up of ``g`` GPUs over the gang ``w``: ``(g/w) * eff**log2(g/w)``."""
    ratio = g / w
    with np.errstate(divide="ignore"):
        return np.where(ratio == 1.0, 1.0, ratio * eff ** np.log2(np.maximum(ratio, MIN_GPU_RATIO)))


class Simulator:
    """Simulate one policy on one workload and cluster.

    Parameters
    ----------
    workload : Workload
    cluster : fairalloc.Cluster
        Same accelerator types as the workload.
    policy : Policy
        Any object with ``name``, ``reset(...)`` and ``allocate(state)``
        (`fairalloc.sim.policies`).
    round_duration : float, default 360.0
        Seconds per round (Gavel uses 360, Shockwave 120).
    restart_overhead : float, default 0.0
        Seconds lost by a job each time it (re)starts.
    seed : int, default 0
        Passed to the policy's ``reset`` (policies with random choices use it).
    max_idle_rounds : int, default 10000
        Stop with [`SimulationError`][fairalloc.sim.SimulationError] after this many consecutive
        rounds in which jobs waited but the policy scheduled none.
    max_rounds : int, optional
        Stop with [`SimulationError`][fairalloc.sim.SimulationError] after this many rounds.
        Default: a bound derived from the workload
        ([`round_limit`][fairalloc.sim.simulator.Simulator.round_limit]), so a simulation never runs
        forever; a workload whose bound exceeds [`MAX_ROUNDS`][fairalloc.sim.simulator.MAX_ROUNDS]
        is refused with [`InputError`][fairalloc.InputError] unless ``max_rounds`` is given.
    record : bool, default True
        Keep the per-round schedule (for Gantt charts).
    mechanism_fraction : {"elapsed", "type_share"}
        Received-fraction rule of the round-based mechanism for
        [`TimeShares`][fairalloc.sim.TimeShares].

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
                 mechanism_fraction: str = "elapsed", max_rounds: int | None = None) -> None:
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
        self.round_limit()  # refuse a workload that could not finish in reasonable time now

    def round_limit(self) -> int:
        """Rounds after which [`run`][fairalloc.sim.simulator.Simulator.run] stops with
        [`SimulationError`][fairalloc.sim.SimulationError] (never hangs).

        ``max_rounds`` when given; otherwise derived from the workload: every round in which
        a job runs gives it at least ``round_duration - restart_overhead`` seconds on one GPU of
        its slowest usable type, where it needs at most ``W_i = scale_factor_i * sum_r epochs_r
        * max_type seconds_r`` seconds, so at most ``B = sum_i ceil(W_i / (D - overhead)) + n``
        rounds run a job; the limit is ``2 B + max_idle_rounds``.

        Raises
        ------
        InputError
            If the derived limit exceeds [`MAX_ROUNDS`][fairalloc.sim.simulator.MAX_ROUNDS] (a job
            whose epoch times are astronomically long for the round duration): pass ``max_rounds``
            to allow it.
        """
        if self.max_rounds is not None:
            return self.max_rounds
        w = self.workload
        R = w.regime_epochs.shape[1]
        real = np.arange(R)[None, :] < w.num_regimes[:, None]
        with np.errstate(all="ignore"):
            sec = np.where(np.isfinite(w.regime_seconds), w.regime_seconds, -np.inf).max(axis=2)
            need = np.where(real, w.regime_epochs * sec, 0.0).sum(axis=1) * w.scale_factor
            per_round = self.round_duration - self.restart_overhead
            rounds = np.ceil(need / per_round).sum() + w.n
        limit = 2.0 * float(rounds) + self.max_idle_rounds
        if not (math.isfinite(limit) and limit <= MAX_ROUNDS):
            i = int(np.argmax(need))
            raise InputError(
                f"workload: job {w.ids[i]!r} alone may need {need[i]:.3g} s of training "
                f"(rounds of {self.round_duration:g} s: up to {limit:.3g} rounds, more than "
                f"MAX_ROUNDS = {MAX_ROUNDS:,}); check its durations or throughputs, use a "
                "longer round_duration, or pass max_rounds", argument="workload")
        return int(limit)

    # -- the run ---------------------------------------------------------------------------
    def run(self, progress: Any = None) -> SimulationResult:
        """Run the simulation to the end (every job finished).

        Parameters
        ----------
        progress : callable, optional
            Called as ``progress(finished_jobs, total_jobs)`` after every round. An exception
            it raises propagates unchanged (a way to stop a simulation early).

        Raises
        ------
        SimulationError
            When the jobs are not finished after
            [`round_limit`][fairalloc.sim.simulator.Simulator.round_limit] rounds, or the policy
            schedules nothing for ``max_idle_rounds`` consecutive rounds.
        SolverError
            When the policy fails with a foreign exception (chained as the cause).
        InputError
            When the policy returns a malformed decision.
        """
        if progress is not None and not callable(progress):
            raise InputError(f"progress must be callable, got {progress!r}", argument="progress")
        t_wall = _time.perf_counter()
        w, cl = self.workload, self.cluster
        n, k, R = w.n, w.num_types, w.regime_epochs.shape[1]
        D = self.round_duration
        cap = cl.capacity.astype(np.int64)
        M = int(cap.sum())
        limit = self.round_limit()
        self._call_policy("reset", w, cl, round_duration=D, seed=self.seed)

        reg_idx = np.arange(R)[None, :]
        real = reg_idx < w.num_regimes[:, None]
        sec_real = np.where(real[:, :, None], w.regime_seconds, np.inf)
        best_type_sec = np.where(real, np.min(sec_real, axis=2), 0.0)  # (n, R) fastest type

        arrived = np.zeros(n, dtype=bool)
        done = np.zeros(n, dtype=bool)
        regime = np.zeros(n, dtype=np.int64)
        in_regime = np.zeros(n)  # epochs done in the current regime
        epochs_done = np.zeros(n)
        attained = np.zeros(n)
        gpu_sec = np.zeros(n)
        received = np.zeros((n, k))
        start = np.full(n, np.nan)
        finish = np.full(n, np.nan)
        last_gpus = np.zeros((n, k), dtype=np.int64)
        last_run_end = np.full(n, np.nan)
        seen_regime = np.zeros(n, dtype=np.int64)
        contention = np.zeros(n)
        preempt = np.zeros(n, dtype=np.int64)
        restarts = np.zeros(n, dtype=np.int64)
        ever_ran = np.zeros(n, dtype=bool)

        order = np.argsort(w.arrival, kind="stable")
        next_arrival = 0  # position in `order`
        t = float(w.arrival[order[0]])
        rounds = 0
        idle_streak = 0
        policy_seconds = 0.0
        r_time: list[float] = []
        r_busy: list[float] = []
        r_active: list[int] = []
        r_demand: list[int] = []
        s_job: list[np.ndarray] = []
        s_round: list[np.ndarray] = []
        s_type: list[np.ndarray] = []
        s_gpus: list[np.ndarray] = []
        s_start: list[np.ndarray] = []
        s_end: list[np.ndarray] = []
        pending_finished: list[tuple[Hashable, float]] = []
        mech = None
        mech_ids: tuple[Hashable, ...] | None = None

        while not done.all():
            # admit arrivals
            new = []
            while next_arrival < n and w.arrival[order[next_arrival]] <= t + ARRIVAL_SLACK:
                new.append(order[next_arrival])
                next_arrival += 1
            new_idx = np.array(new, dtype=np.int64)
            arrived[new_idx] = True
            active = np.flatnonzero(arrived & ~done)
            if active.size == 0:
                t = float(w.arrival[order[next_arrival]])  # jump to the next arrival
                last_gpus[:] = 0
                continue
            arrived_now = np.zeros(n, dtype=bool)
            arrived_now[new_idx] = True

            view = self._view(active, t, regime, in_regime, epochs_done, attained, gpu_sec,
                              received, last_gpus, last_run_end, seen_regime, arrived_now,
                              contention, best_type_sec, real)
            seen_regime[active] = regime[active]
            state = RoundState(
                cluster=ClusterState(cl, t, rounds, D, M), jobs=view,
                finished=tuple(pending_finished),
                arrived=tuple((w.ids[i], float(w.arrival[i])) for i in new_idx.tolist()))
            pending_finished = []
            t0 = _time.perf_counter()
            decision = self._call_policy("allocate", state)
            if isinstance(decision, TimeShares):
                mech, mech_ids, gpus = self._realise(decision, view, mech, mech_ids)
            elif isinstance(decision, Schedule):
                gpus = self._check_schedule(decision, view)
            else:
                raise InputError(f"policy {self.policy.name!r} returned a "
                                 f"{type(decision).__name__}; expected TimeShares or Schedule",
                                 argument="policy")
            policy_seconds += _time.perf_counter() - t0

            # -- run the round -----------------------------------------------------------
            total = gpus.sum(axis=1)
            on = total > 0
            S = active[on]
            g = gpus[on]
            prev = last_gpus[active]
            was_running = prev.sum(axis=1) > 0
            changed = (gpus != prev).any(axis=1)
            # preemption: ran last round, still unfinished, and does not run now
            preempt[active[was_running & ~on]] += 1
            restarting = on & (changed | ~was_running)
            restarts[active[restarting & ever_ran[active]]] += 1
            overhead = np.where(restarting[on], self.restart_overhead, 0.0)
            busy = 0.0
            if S.size:
                held = g > 0
                sec = np.where(held[:, None, :], sec_real[S], -np.inf).max(axis=2)  # (s, R)
                speed = _speedup(total[on].astype(float), w.scale_factor[S], w.scaling[S])
                sec_eff = sec / speed[:, None]
                rem = np.where(reg_idx > regime[S][:, None], w.regime_epochs[S], 0.0)
                cur_left = (w.regime_epochs[S, regime[S]] - in_regime[S])
                rem[np.arange(S.size), regime[S]] = np.maximum(cur_left, 0.0)
                rem = np.where(real[S], rem, 0.0)
                with np.errstate(invalid="ignore"):
                    need = np.where(rem > 0, rem * sec_eff, 0.0)
                cum = np.cumsum(need, axis=1)
                avail = D - overhead
                fin = cum[:, -1] <= avail * (1.0 + _FINISH_RTOL) + FINISH_ATOL
                ri = np.minimum((cum <= avail[:, None]).sum(axis=1), R - 1)
                prev_cum = np.where(ri > 0, np.take_along_axis(
                    cum, np.maximum(ri - 1, 0)[:, None], axis=1)[:, 0], 0.0)
                sec_ri = np.take_along_axis(sec_eff, ri[:, None], axis=1)[:, 0]
                with np.errstate(invalid="ignore", divide="ignore"):
                    adv = np.where(fin, 0.0, (avail - prev_cum) / sec_ri)
                run_time = np.where(fin, cum[:, -1], avail) + overhead
                # progress bookkeeping
                moved = ri != regime[S]
                base = np.where(moved, 0.0, in_regime[S])
                new_in = base + adv
                # epochs done: all regimes before ri fully, plus progress in ri
                full_before = np.where(reg_idx < ri[:, None], w.regime_epochs[S], 0.0).sum(1)
                epochs_new = np.where(fin, w.total_epochs[S], full_before + new_in)
                # a regime completed to round-off moves on
                ep_ri = w.regime_epochs[S, ri]
                roll = (~fin) & (new_in >= ep_ri - _EPOCH_TOL) & (ri + 1 < w.num_regimes[S])
                ri = np.where(roll, ri + 1, ri)
                new_in = np.where(roll, 0.0, new_in)
                regime[S] = np.where(fin, w.num_regimes[S] - 1, ri)
                in_regime[S] = np.where(fin, w.regime_epochs[S, w.num_regimes[S] - 1], new_in)
                epochs_done[S] = epochs_new
                attained[S] += run_time
                gpu_sec[S] += run_time * total[on]
                ttype = np.where(held, sec_real[S, regime[S]], -np.inf).argmax(axis=1)
                np.add.at(received, (S, ttype), run_time)
                start[S] = np.where(np.isnan(start[S]), t, start[S])
                ever_ran[S] = True
                last_run_end[S] = t + run_time
                busy = float((run_time * total[on]).sum())
                fin_jobs = S[fin]
                finish[fin_jobs] = t + run_time[fin]
                done[fin_jobs] = True
                ordf = np.argsort(finish[fin_jobs], kind="stable")
                pending_finished = [(w.ids[i], float(finish[i])) for i in fin_jobs[ordf].tolist()]
                if self.record:
                    s_job.append(S)
                    s_round.append(np.full(S.size, rounds, dtype=np.int64))
                    s_type.append(ttype)
                    s_gpus.append(total[on])
                    s_start.append(np.full(S.size, t))
                    s_end.append(t + run_time)
            last_gpus[:] = 0
            last_gpus[active] = gpus
            last_gpus[done] = 0
            contention[active] += active.size * D
            r_time.append(t)
            r_busy.append(busy)
            r_active.append(int(active.size))
            r_demand.append(int(w.scale_factor[active].sum()))
            rounds += 1
            idle_streak = 0 if S.size else idle_streak + 1
            if idle_streak >= self.max_idle_rounds:
                raise SimulationError(
                    f"policy {self.policy.name!r} scheduled no job for {idle_streak} "
                    f"consecutive rounds while {active.size} jobs waited")
            if rounds >= limit and not done.all():
                raise SimulationError(
                    f"policy {self.policy.name!r}: {int((~done).sum())} of {n} jobs unfinished "
                    f"after {rounds} rounds (the round limit; see Simulator.round_limit, or "
                    "pass max_rounds)")
            if progress is not None:
                progress(int(done.sum()), n)
            t += D

        def cat(parts: Sequence[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

        params = dict(getattr(self.policy, "params", {}) or {})
        return SimulationResult(
            policy=self.policy.name, workload=w, cluster=cl, round_duration=D,
            restart_overhead=self.restart_overhead, start=start, finish=finish,
            attained=attained, gpu_seconds=gpu_sec, preemptions=preempt, restarts=restarts,
            round_time=np.array(r_time), round_busy=np.array(r_busy),
            round_active=np.array(r_active, dtype=np.int64),
            round_demand=np.array(r_demand, dtype=np.int64),
            sched_job=cat(s_job, np.int64), sched_round=cat(s_round, np.int64),
            sched_type=cat(s_type, np.int64), sched_gpus=cat(s_gpus, np.int64),
            sched_start=cat(s_start, float), sched_end=cat(s_end, float),
            policy_seconds=policy_seconds, wall_seconds=_time.perf_counter() - t_wall,
            params=params)

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
        x = as_array(decision.x, "x", ndim=2, shape=(view.n, k))
        runnable = view.runnable & (view.scale_factor[:, None] <= self.cluster.capacity[None, :])
        x = np.where(runnable, x, 0.0)
        if mech is None:
            mech = RoundScheduler(x, self.cluster, scale_factor=view.scale_factor,
                                  runnable=runnable, ids=view.ids, fraction=self.mechanism_fraction)
        else:
            mech.update(x, scale_factor=view.scale_factor, runnable=runnable, ids=view.ids)
        a = mech.step()
        return mech, view.ids, Schedule.from_types(a.type_index, view.scale_factor, k).gpus
