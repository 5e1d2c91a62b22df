"""What a simulator policy sees and returns (``fairalloc.sim.state``).

The data types of the policy protocol, shared by the simulator, the policies and the metrics
(this module imports none of them):

* `fairalloc.sim.ClusterState`, `fairalloc.sim.JobView` and
  `fairalloc.sim.RoundState` -- what a scheduler can see before a round;
* `fairalloc.sim.TimeShares` (a fractional allocation, realised by Gavel's round-based
  mechanism) and `fairalloc.sim.Schedule` (whole GPUs per job and type) -- what it
  returns;
* `fairalloc.sim.Policy` -- the protocol the simulator calls.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..data import Cluster

if TYPE_CHECKING:
    from .workload import Workload

__all__ = ["EPOCH_ROUNDOFF", "ClusterState", "JobView", "Policy", "RoundState", "Schedule",
           "TimeShares"]

#: whole epochs are counted with this round-off margin (an epoch 1e-9 short of its end counts)
EPOCH_ROUNDOFF = 1e-9
#: a job with no steps left is shown to the library's programs with this many epochs' worth of
#: steps (their inputs must be positive)
MIN_STEPS_EPOCHS = 1e-9


@dataclass(frozen=True)
class ClusterState:
    """The cluster during a round.

    Parameters
    ----------
    cluster : fairalloc.Cluster
        The GPU types and their counts.
    time : float
        Start of the round (seconds).
    round_index : int
        Rounds simulated before this one.
    round_duration : float
        Length of a round (seconds).
    num_gpus : int
        Total GPUs.

    Examples
    --------
    A policy that shares each type equally and records what it is given
    (`fairalloc.sim.Policy`):

    >>> import numpy as np
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> class Equal:
    ...     name = "equal"
    ...     def reset(self, workload, cluster, *, round_duration, seed):
    ...         self.seen = []
    ...     def allocate(self, state):
    ...         self.seen.append(state)
    ...         return TimeShares(np.full((state.jobs.n, 1), 1.0 / state.jobs.n))
    >>> p = Equal()
    >>> _ = simulate(Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0]),
    ...              fa.Cluster({"gpu": 1}), p)
    >>> c = p.seen[1].cluster
    >>> c.time, c.round_index, c.round_duration, c.num_gpus
    (360.0, 1, 360.0, 1)
    """

    cluster: Cluster
    time: float
    round_index: int
    round_duration: float
    num_gpus: int


@dataclass(frozen=True, eq=False, repr=False)
class JobView:
    """What a scheduler can see of the active jobs (arrived, not finished), one row each.

    Future regimes are hidden: ``epoch_seconds`` and ``throughput`` are those of the regime a
    job is in now; a job that changed regime since the previous round has ``regime_changed``.

    Parameters
    ----------
    index : ndarray of int
        Row of each job in the workload (stable across rounds; use it to keep state).
    ids : tuple
        Job labels.
    types : tuple of str
    arrival, scale_factor, weight : ndarray, shape (n,)
    model, mode : tuple of str
    batch_size : ndarray, shape (n,)
        Batch size of the current regime.
    initial_batch, max_batch : ndarray, shape (n,)
        First batch size, and the largest one the job could use (its scaling rule's limit).
    epoch_seconds : ndarray, shape (n, k)
        Seconds per epoch with its gang on each type in the current regime (``inf``: cannot
        run there).
    iterations_per_epoch : ndarray, shape (n,)
    total_epochs, epochs_done : ndarray, shape (n,)
    attained : ndarray, shape (n,)
        Seconds the job has been scheduled (including restart overhead).
    gpu_seconds : ndarray, shape (n,)
        GPU-seconds it has held.
    received : ndarray, shape (n, k)
        Seconds it has run on each type.
    elapsed : ndarray, shape (n,)
        ``now - arrival``.
    idle_for : ndarray, shape (n,)
        Seconds since it last ran (since arrival if it never ran).
    running : ndarray of bool
        Ran in the previous round.
    last_gpus : ndarray of int, shape (n, k)
        GPUs it held in the previous round.
    regime : ndarray of int
        Index of the current regime (``regime + 1`` regimes seen).
    regime_changed, arrived_now : ndarray of bool
        Changed regime / arrived since the previous round.
    contention_seconds : ndarray, shape (n,)
        Integral of the number of active jobs over the job's life so far (for the contention
        factor ``N_avg`` of Shockwave App. G.2:
        `fairalloc.contention_factor`).
    history_batch, history_epochs : ndarray, shape (n, R)
        Batch size and epochs done of each regime seen so far (padded with 0).
    history_seconds : ndarray, shape (n, R)
        Seconds per epoch of each regime seen so far on the job's fastest type.

    Examples
    --------
    A policy that shares each type equally and records what it is given
    (`fairalloc.sim.Policy`):

    >>> import numpy as np
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> class Equal:
    ...     name = "equal"
    ...     def reset(self, workload, cluster, *, round_duration, seed):
    ...         self.seen = []
    ...     def allocate(self, state):
    ...         self.seen.append(state)
    ...         return TimeShares(np.full((state.jobs.n, 1), 1.0 / state.jobs.n))
    >>> p = Equal()
    >>> _ = simulate(Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0]),
    ...              fa.Cluster({"gpu": 1}), p)
    >>> jobs = p.seen[0].jobs
    >>> jobs, jobs.ids, jobs.epoch_seconds.tolist(), jobs.elapsed.tolist()
    (JobView(n=2, types=('gpu',)), (0, 1), [[360.0], [360.0]], [0.0, 0.0])
    """

    index: np.ndarray
    ids: tuple[Hashable, ...]
    types: tuple[str, ...]
    arrival: np.ndarray
    scale_factor: np.ndarray
    weight: np.ndarray
    model: tuple[str, ...]
    mode: tuple[str, ...]
    batch_size: np.ndarray
    initial_batch: np.ndarray
    max_batch: np.ndarray
    epoch_seconds: np.ndarray
    iterations_per_epoch: np.ndarray
    total_epochs: np.ndarray
    epochs_done: np.ndarray
    attained: np.ndarray
    gpu_seconds: np.ndarray
    received: np.ndarray
    elapsed: np.ndarray
    idle_for: np.ndarray
    running: np.ndarray
    last_gpus: np.ndarray
    regime: np.ndarray
    regime_changed: np.ndarray
    arrived_now: np.ndarray
    contention_seconds: np.ndarray
    history_batch: np.ndarray
    history_epochs: np.ndarray
    history_seconds: np.ndarray

    @property
    def n(self) -> int:
        """Number of active jobs."""
        return int(self.index.shape[0])

    @property
    def runnable(self) -> np.ndarray:
        """``(n, k)`` bool: finite epoch time on the type."""
        return np.isfinite(self.epoch_seconds)

    @property
    def throughput(self) -> np.ndarray:
        """Steps/s of the gang on each type in the current regime (0 where it cannot run)."""
        with np.errstate(divide="ignore"):
            return np.where(self.runnable, self.iterations_per_epoch[:, None]
                            / np.where(self.runnable, self.epoch_seconds, 1.0), 0.0)

    @property
    def epochs_remaining(self) -> np.ndarray:
        return np.maximum(self.total_epochs - self.epochs_done, 0.0)

    @property
    def steps_remaining(self) -> np.ndarray:
        """Remaining epochs in steps of the current regime (what a reactive scheduler sees)."""
        return self.epochs_remaining * self.iterations_per_epoch

    @property
    def remaining_seconds(self) -> np.ndarray:
        """``(n, k)``: remaining run time on each type if the current regime lasted to the end."""
        with np.errstate(invalid="ignore"):
            return np.where(self.runnable, self.epochs_remaining[:, None] * self.epoch_seconds,
                            np.inf)

    @property
    def waiting(self) -> np.ndarray:
        """Seconds spent queued (not scheduled) since arrival."""
        return np.maximum(self.elapsed - self.attained, 0.0)

    def observed_epochs(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Batch size and seconds of every *finished* epoch of job row ``i`` (for
        `fairalloc.forecast_regimes`): whole epochs only, in order."""
        ep = np.floor(self.history_epochs[i] + EPOCH_ROUNDOFF).astype(np.int64)
        keep = ep > 0
        return (np.repeat(self.history_batch[i][keep], ep[keep]),
                np.repeat(self.history_seconds[i][keep], ep[keep]))

    def to_jobs(self) -> Any:
        """The active jobs as `fairalloc.Jobs` (steps/s, steps remaining,
        elapsed)."""
        from ..data import Jobs

        steps = np.maximum(self.steps_remaining, MIN_STEPS_EPOCHS * self.iterations_per_epoch)
        return Jobs(self.throughput, scale_factor=self.scale_factor, weight=self.weight,
                    ids=self.ids, steps_remaining=steps, elapsed=self.elapsed)

    def __repr__(self) -> str:
        return f"JobView(n={self.n}, types={self.types})"


@dataclass(frozen=True)
class RoundState:
    """Everything a policy gets before a round.

    Parameters
    ----------
    cluster : ClusterState
        The cluster and the round's time.
    jobs : JobView
        Active jobs.
    finished : tuple of (hashable, float)
        Jobs that finished since the previous round, with their finish times (in order).
    arrived : tuple of (hashable, float)
        Jobs that arrived since the previous round, with their arrival times (in order).

    Examples
    --------
    A policy that shares each type equally and records what it is given
    (`fairalloc.sim.Policy`):

    >>> import numpy as np
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> class Equal:
    ...     name = "equal"
    ...     def reset(self, workload, cluster, *, round_duration, seed):
    ...         self.seen = []
    ...     def allocate(self, state):
    ...         self.seen.append(state)
    ...         return TimeShares(np.full((state.jobs.n, 1), 1.0 / state.jobs.n))
    >>> p = Equal()
    >>> _ = simulate(Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0]),
    ...              fa.Cluster({"gpu": 1}), p)
    >>> p.seen[0].arrived, p.seen[1].finished, p.seen[1].jobs.ids
    (((0, 0.0), (1, 0.0)), ((0, 360.0),), (1,))
    """

    cluster: ClusterState
    jobs: JobView
    finished: tuple[tuple[Hashable, float], ...] = ()
    arrived: tuple[tuple[Hashable, float], ...] = ()


@dataclass(frozen=True)
class TimeShares:
    """A fractional allocation ``x`` (active jobs x types, Gavel §3.1) for the round-based
    mechanism; rows in the order of `RoundState.jobs`.

    Parameters
    ----------
    x : array_like, shape (n, k)
        The fraction of the time each active job runs its gang on each type (rows sum to at
        most 1, types' worker-time to at most their GPUs).

    Examples
    --------
    >>> import numpy as np
    >>> TimeShares(np.full((2, 1), 0.5)).x.tolist()
    [[0.5], [0.5]]
    """

    x: Any


@dataclass(frozen=True)
class Schedule:
    """GPUs of each type each active job holds this round, shape (n, k) (rows in the order
    of `RoundState.jobs`; a row of zeros: the job does not run).

    Parameters
    ----------
    gpus : array_like of int, shape (n, k)
        GPUs of each type per active job.

    Examples
    --------
    >>> Schedule([[1], [0]]).gpus
    [[1], [0]]
    >>> Schedule.from_types([0, -1], [1, 1], num_types=1).gpus.tolist()
    [[1], [0]]
    """

    gpus: Any

    @classmethod
    def from_types(cls, type_index: Any, scale_factor: Any, num_types: int) -> Schedule:
        """Each job runs its gang on ``type_index[i]`` (``-1``: not at all)."""
        ti = np.asarray(type_index, dtype=np.int64)
        g = np.zeros((ti.shape[0], num_types), dtype=np.int64)
        on = np.flatnonzero(ti >= 0)
        g[on, ti[on]] = np.asarray(scale_factor, dtype=np.int64)[on]
        return cls(g)


@runtime_checkable
class Policy(Protocol):
    """What the simulator calls. ``reset`` once per simulation, ``allocate`` once per round.

    Optionally ``time_invariant = True``: the policy's `fairalloc.sim.Schedule`
    changes only when a job arrives, finishes or changes regime, so the simulator may skip
    ``allocate`` between such events and fast-forward (the contract:
    `fairalloc.sim.simulator`).

    Parameters
    ----------
    *args, **kwargs
        A protocol takes none; an implementation's constructor takes its own settings.

    Examples
    --------
    A policy that gives every active job an equal share of each type, and records what it
    is given:

    >>> import numpy as np
    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> class Equal:
    ...     name = "equal"
    ...     def reset(self, workload, cluster, *, round_duration, seed):
    ...         self.seen = []
    ...     def allocate(self, state):
    ...         self.seen.append(state)
    ...         n, k = state.jobs.n, len(state.jobs.types)
    ...         return TimeShares(np.full((n, k), 1.0 / n))
    >>> p = Equal()
    >>> isinstance(p, Policy)
    True
    >>> r = simulate(Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 360.0]),
    ...              fa.Cluster({"gpu": 1}), p)
    >>> r.finish.tolist(), len(p.seen)
    ([360.0, 720.0], 2)
    """

    name: str

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None: ...  # pragma: no cover - protocol

    def allocate(self, state: RoundState) -> TimeShares | Schedule: ...  # pragma: no cover

