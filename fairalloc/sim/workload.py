"""Workloads for the simulator: jobs (`fairalloc.sim.JobSpec`) and their table
(`fairalloc.sim.Workload`).

A simulated job (`fairalloc.sim.JobSpec`) is a training run of ``total_epochs`` epochs on
a gang of ``scale_factor`` workers. Its *batch-size schedule* splits the epochs into **regimes**
(runs of epochs with one batch size, Shockwave §5): static jobs have one regime, Accordion jobs
alternate between a small batch size in *critical regimes* and the model's largest batch size
elsewhere, GNS jobs double their batch size as the gradient noise scale grows. Each regime has its
own seconds per epoch on every accelerator type, so a job's speed changes when it changes regime;
the simulator reveals a regime to the policies only when the job enters it.

Model families, throughput tables and batch-size schedules:
`fairalloc.sim.models`; the Poisson generator:
`fairalloc.sim.generator`; the trace reader:
`fairalloc.sim.trace`. `job_from_config` builds one job from a (model, batch
size, steps) description for both.

What the simulator represents
-----------------------------
A job described by (model, batch size, steps) -- a trace line or a generated job -- is bounded by
these constants (a value outside them is an `fairalloc.InputError`, named by
file, line and field for a trace): `MAX_STEPS` training steps, `MAX_EPOCHS` epochs (its
batch-size schedule holds one entry per epoch), batch sizes up to `MAX_BATCH_SIZE`, gangs up
to `MAX_SCALE_FACTOR` workers, arrival times up to `MAX_SECONDS`, durations in
[`MIN_DURATION`, `MAX_DURATION`] and priority weights in [`MIN_WEIGHT`, `MAX_WEIGHT`].
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import (
    as_array,
    as_real_array,
    fmt_index,
)
from ..data import Cluster
from ..errors import InputError
from ..results import require_pandas
from ._files import as_names
from .models import (
    MODELS,
    MODES,
    NOMINAL_EPOCHS,
    ThroughputTable,
    batch_size_schedule,
    job_type_name,
    run_lengths,
)

__all__ = ["MAX_BATCH_SIZE", "MAX_DURATION", "MAX_EPOCHS", "MAX_SCALE_FACTOR", "MAX_SECONDS",
           "MAX_STEPS", "MAX_WEIGHT", "MIN_DURATION", "MIN_WEIGHT", "JobSpec", "Workload",
           "job_from_config"]

#: floor of an iterations-per-second rate under a division (no division-by-zero warning)
MIN_RATE = 1e-300
#: a last regime shorter than this many epochs (a fractional last epoch's round-off) is dropped
LAST_REGIME_MIN_EPOCHS = 1e-12

# bounds of a job described by (model, batch size, steps): what the simulator represents
#: most training steps of one job (a trillion; integers up to 2**53 are exact floats)
MAX_STEPS = 1e12
#: most epochs of one job: its batch-size schedule is an array with one entry per epoch
MAX_EPOCHS = 1_000_000
#: largest batch size (samples per step; batch sizes are int64 in the schedules)
MAX_BATCH_SIZE = 2**30
#: largest gang (workers a job uses at once), far above any simulated cluster
MAX_SCALE_FACTOR = 2**20
#: latest arrival, in seconds (about 32 years: float time stays exact to well under a
#: microsecond; the simulator skips idle time)
MAX_SECONDS = 1e9
#: longest duration of a job alone, in seconds (about 3 years; the simulator runs every round
#: of a job's life: up to about 280,000 rounds of Gavel's 360 s, which take minutes)
MAX_DURATION = 1e8
#: shortest duration in seconds (with `MAX_STEPS`, rates stay below 1e18 steps/s)
MIN_DURATION = 1e-6
#: smallest and largest priority weight (relative priorities: the policies' programs are
#: certified to relative tolerances, so a ratio above 1e12 would lose the lightest jobs)
MIN_WEIGHT = 1e-6
#: see `MIN_WEIGHT`
MAX_WEIGHT = 1e6
#: digits of an out-of-range integer quoted in a message (display only)
_SHOWN_DIGITS = 20

# jobs and workloads
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobSpec:
    """One simulated job: arrival, gang, and its regimes in order.

    Parameters
    ----------
    arrival : float
        Arrival time (seconds).
    regimes : sequence of (batch_size, epochs, epoch_seconds)
        Regimes in order: batch size (a label of the configuration), number of epochs (the
        last may be fractional) and seconds per epoch on each accelerator type (shape
        ``(k,)``; ``inf`` where the job cannot run), all with the job's gang.
    iterations_per_epoch : sequence of float, optional
        Iterations of one epoch in each regime (to report throughput in steps/s); default 1.
    scale_factor : int
        Gang size (workers used at once).
    weight : float
        Priority weight.
    job_id : hashable, optional
    model, mode : str
        Labels (model family; static / accordion / gns).
    scaling : float
        Per-GPU efficiency kept per doubling of the GPU count when an elastic policy (Ares
        EFQ) gives the job more or fewer GPUs than its gang: ``T(2g) = 2 * scaling * T(g)``
        (``1``: linear).

    Examples
    --------
    A 2-GPU job that runs 10 epochs at batch 32, then 5 at batch 64 (faster on the first
    of two types, unable to run on the second):

    >>> job = JobSpec(0.0, [(32, 10, [60.0, float("inf")]), (64, 5, [40.0, float("inf")])],
    ...               scale_factor=2)
    >>> w = Workload.from_jobs([job], types=["v100", "k80"])
    >>> w.n, w.num_regimes.tolist(), w.isolated_seconds.tolist()
    (1, [2], [800.0])
    """

    arrival: float
    regimes: Sequence[tuple[float, float, Any]]
    iterations_per_epoch: Sequence[float] | None = None
    scale_factor: int = 1
    weight: float = 1.0
    job_id: Hashable | None = None
    model: str = "job"
    mode: str = "static"
    scaling: float = 1.0


@dataclass(frozen=True, eq=False, repr=False)
class Workload:
    """A validated set of jobs, stored as padded arrays over (jobs, regimes, types).

    Build it from `fairalloc.sim.JobSpec` objects
    (`fairalloc.sim.workload.Workload.from_jobs`), from static throughputs
    (`fairalloc.sim.workload.Workload.from_arrays`), with
    `fairalloc.sim.poisson_workload` or with
    `fairalloc.sim.read_trace`.

    Parameters
    ----------
    types : tuple of str
        Accelerator types (a simulated cluster must have the same types, in this order).
    ids : tuple
        Job labels.
    arrival, scale_factor, weight, scaling : ndarray, shape (n,)
        Per job, as in `fairalloc.sim.JobSpec`.
    model, mode : tuple of str
        Per job: model family and mode labels.
    regime_batch, regime_epochs, regime_iterations : ndarray, shape (n, R)
        Per regime (padded with zeros after each job's last regime).
    regime_seconds : ndarray, shape (n, R, k)
        Seconds per epoch on each type (``inf`` on types the job cannot use and in padding).
    num_regimes : ndarray of int, shape (n,)
        Regimes of each job (the unpadded length of its regime arrays).
    max_batch : ndarray, shape (n,)
        Largest batch size the job could use (what a forecaster may assume, Shockwave §5 (b)).
    _index : dict, optional
        Job label -> row (`index`); filled by the constructors ``from_jobs`` /
        ``from_arrays``, not to be passed by hand.

    Examples
    --------
    >>> w = Workload.from_arrays(arrival=[0, 60], throughput=[[2.0, 1.0], [1.0, 1.0]],
    ...                          steps=[100, 50], types=["v100", "k80"])
    >>> w.n, w.isolated_seconds.tolist()
    (2, [50.0, 50.0])
    """

    types: tuple[str, ...]
    ids: tuple[Hashable, ...]
    arrival: np.ndarray
    scale_factor: np.ndarray
    weight: np.ndarray
    scaling: np.ndarray
    model: tuple[str, ...]
    mode: tuple[str, ...]
    regime_batch: np.ndarray
    regime_epochs: np.ndarray
    regime_iterations: np.ndarray
    regime_seconds: np.ndarray
    num_regimes: np.ndarray
    max_batch: np.ndarray
    _index: dict[Hashable, int] = field(default_factory=dict, repr=False)

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def from_jobs(cls, jobs: Sequence[JobSpec], types: Sequence[str],
                  max_batch: Sequence[float] | None = None) -> Workload:
        """Validate and pack `fairalloc.sim.JobSpec` objects (one per job, any order of
        arrival).

        Raises
        ------
        InputError
            Naming the job (``jobs[i]``) and the field on bad input.
        """
        types = tuple(as_names(types, "types"))
        k = len(types)
        if isinstance(jobs, JobSpec) or not isinstance(jobs, Sequence):
            raise InputError("jobs must be a sequence of JobSpec", argument="jobs")
        n = len(jobs)
        if n == 0:
            raise InputError("jobs is empty: a workload needs at least one job",
                             argument="jobs")
        R = 1
        for i, job in enumerate(jobs):
            if not isinstance(job, JobSpec):
                raise InputError(f"jobs[{i}] is a {type(job).__name__}, not a JobSpec",
                                 argument="jobs", index=(i,))
            if len(job.regimes) == 0:
                raise InputError(f"jobs[{i}].regimes is empty", argument="jobs", index=(i,))
            R = max(R, len(job.regimes))
        batch = np.zeros((n, R))
        epochs = np.zeros((n, R))
        iters = np.zeros((n, R))
        seconds = np.full((n, R, k), np.inf)
        nreg = np.zeros(n, dtype=np.int64)
        for i, job in enumerate(jobs):
            name = f"jobs[{i}]"
            r = len(job.regimes)
            nreg[i] = r
            try:
                b = as_real_array([reg[0] for reg in job.regimes], "batch_size")
                ep = as_real_array([reg[1] for reg in job.regimes], "epochs")
                secs = [as_real_array(reg[2], "epoch_seconds") for reg in job.regimes]
                sec = np.array([np.full(k, float(s)) if s.ndim == 0 else s.reshape(-1)
                                for s in secs])
            except (TypeError, ValueError, IndexError) as exc:  # (InputError too)
                detail = f" ({exc})" if isinstance(exc, InputError) else ""
                raise InputError(f"{name}.regimes must be (batch_size, epochs, epoch_seconds) "
                                 f"triples of real numbers{detail}", argument="jobs",
                                 index=(i,)) from None
            if sec.shape != (r, k):
                raise InputError(f"{name}.regimes: epoch_seconds must have {k} entries (one per "
                                 f"type), got shape {sec.shape[1:]}", argument="jobs", index=(i,))
            if not (np.isfinite(b).all() and (b > 0).all()):
                raise InputError(f"{name}.regimes: batch sizes must be positive",
                                 argument="jobs", index=(i,))
            if not (np.isfinite(ep).all() and (ep > 0).all()):
                raise InputError(f"{name}.regimes: epochs must be positive and finite",
                                 argument="jobs", index=(i,))
            sec = np.where(np.isnan(sec), np.inf, sec)
            if (sec <= 0).any():
                raise InputError(f"{name}.regimes: epoch seconds must be positive",
                                 argument="jobs", index=(i,))
            usable = np.isfinite(sec).all(axis=0)
            if not usable.any():
                raise InputError(f"{name} cannot run on any type (every type has an infinite "
                                 "epoch time in some regime)", argument="jobs", index=(i,))
            sec[:, ~usable] = np.inf
            try:
                it = (np.ones(r) if job.iterations_per_epoch is None
                      else as_real_array(job.iterations_per_epoch,
                                         "iterations_per_epoch").reshape(-1))
            except InputError as exc:
                raise InputError(f"{name}.{exc}", argument="jobs", index=(i,)) from None
            if it.shape != (r,) or not (np.isfinite(it).all() and (it > 0).all()):
                raise InputError(f"{name}.iterations_per_epoch must have one positive entry "
                                 "per regime", argument="jobs", index=(i,))
            batch[i, :r], epochs[i, :r], iters[i, :r], seconds[i, :r] = b, ep, it, sec
        arrival = as_array([j.arrival for j in jobs], "arrival", ndim=1, nonneg=False)
        sf = as_array([j.scale_factor for j in jobs], "scale_factor", ndim=1, positive=True,
                      integer=True)
        weight = as_array([j.weight for j in jobs], "weight", ndim=1, positive=True)
        scaling = as_array([j.scaling for j in jobs], "scaling", ndim=1, positive=True)
        bad = np.flatnonzero(scaling > 1.0)
        if bad.size:
            i = int(bad[0])
            raise InputError(f"jobs[{i}].scaling = {scaling[i]:g}: per-GPU efficiency cannot "
                             "grow with more GPUs (scaling <= 1)", argument="jobs", index=(i,))
        modes = tuple(str(j.mode) for j in jobs)
        for i, m in enumerate(modes):
            if m not in MODES:
                raise InputError(f"jobs[{i}].mode = {m!r}; must be one of {MODES}",
                                 argument="jobs", index=(i,))
        ids = tuple(i if j.job_id is None else j.job_id for i, j in enumerate(jobs))
        index: dict[Hashable, int] = {}
        for i, label in enumerate(ids):
            if label in index:
                raise InputError(f"jobs[{i}].job_id = {label!r} repeats jobs[{index[label]}]",
                                 argument="jobs", index=(i,))
            index[label] = i
        mb = batch.max(axis=1) if max_batch is None else as_array(
            max_batch, "max_batch", ndim=1, shape=(n,), positive=True)
        mb = np.maximum(mb, batch.max(axis=1))
        for a in (batch, epochs, iters, seconds, nreg):
            a.flags.writeable = False
        mb.flags.writeable = False
        return cls(types=types, ids=ids, arrival=arrival, scale_factor=sf, weight=weight,
                   scaling=scaling, model=tuple(str(j.model) for j in jobs), mode=modes,
                   regime_batch=batch, regime_epochs=epochs, regime_iterations=iters,
                   regime_seconds=seconds, num_regimes=nreg, max_batch=mb, _index=index)

    @classmethod
    def from_arrays(cls, arrival: Any, throughput: Any, steps: Any, *,
                    scale_factor: Any = None, weight: Any = None,
                    types: Sequence[str] | None = None,
                    ids: Sequence[Hashable] | None = None) -> Workload:
        """Static jobs from throughputs: job ``i`` runs ``steps[i]`` steps at
        ``throughput[i, j]`` steps/s on type ``j`` (one regime holding a single epoch of
        ``steps[i]`` iterations). Types default to ``("gpu",)`` for one column, else
        ``("gpu0", "gpu1", ...)``.

        Examples
        --------
        >>> w = Workload.from_arrays([0.0], [[4.0]], [40.0])
        >>> float(w.regime_seconds[0, 0, 0]), float(w.total_epochs[0])
        (10.0, 1.0)
        """
        tp = as_array(throughput, "throughput", ndim=2)
        n, k = tp.shape
        a = as_array(arrival, "arrival", ndim=1, shape=(n,), nonneg=False)
        st = as_array(steps, "steps", ndim=1, shape=(n,), positive=True)
        dead = np.flatnonzero(~(tp > 0).any(axis=1))
        if dead.size:
            i = int(dead[0])
            raise InputError(f"throughput[{i}] is all zero: job {i} cannot run anywhere",
                             argument="throughput", index=(i,))
        sf = np.ones(n) if scale_factor is None else as_array(
            scale_factor, "scale_factor", ndim=1, shape=(n,), positive=True, integer=True)
        w = np.ones(n) if weight is None else as_array(weight, "weight", ndim=1, shape=(n,),
                                                       positive=True)
        if types is None:
            types = ("gpu",) if k == 1 else tuple(f"gpu{j}" for j in range(k))
        types = tuple(as_names(types, "types"))
        if len(types) != k:
            raise InputError(f"types has {len(types)} names for {k} throughput columns",
                             argument="types")
        if ids is not None and (isinstance(ids, str | bytes) or not hasattr(ids, "__len__")):
            raise InputError(f"ids must be a sequence of job labels, got {ids!r}",
                             argument="ids")
        if ids is not None and len(ids) != n:
            raise InputError(f"ids has {len(ids)} entries for {n} jobs", argument="ids")
        with np.errstate(divide="ignore"):
            sec = np.where(tp > 0, st[:, None] / np.where(tp > 0, tp, 1.0), np.inf)
        jobs = [JobSpec(arrival=float(a[i]), regimes=[(1.0, 1.0, sec[i])],
                        iterations_per_epoch=[float(st[i])], scale_factor=int(sf[i]),
                        weight=float(w[i]), job_id=None if ids is None else ids[i])
                for i in range(n)]
        return cls.from_jobs(jobs, types)

    # -- derived quantities ----------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of jobs."""
        return len(self.ids)

    @property
    def num_types(self) -> int:
        return len(self.types)

    @property
    def total_epochs(self) -> np.ndarray:
        """Epochs of each job (shape (n,))."""
        return self.regime_epochs.sum(axis=1)

    @property
    def total_steps(self) -> np.ndarray:
        """Iterations of each job over all its regimes (shape (n,))."""
        return (self.regime_epochs * self.regime_iterations).sum(axis=1)

    @property
    def runnable(self) -> np.ndarray:
        """``(n, k)`` bool: the job can run on the type (finite epoch time in every regime)."""
        return np.isfinite(self._seconds_masked()).all(axis=1)

    def _seconds_masked(self) -> np.ndarray:
        real = np.arange(self.regime_epochs.shape[1])[None, :] < self.num_regimes[:, None]
        return np.where(real[:, :, None], self.regime_seconds, 1.0)

    def seconds_on(self) -> np.ndarray:
        """Isolated run time of each job on each type with its gang (``inf`` where it
        cannot run), shape (n, k)."""
        with np.errstate(invalid="ignore"):
            t = np.einsum("nr,nrk->nk", self.regime_epochs, self._seconds_masked())
        return np.where(self.runnable, t, np.inf)

    @property
    def isolated_seconds(self) -> np.ndarray:
        """Run time of each job alone on the cluster with its gang, on its fastest type."""
        return self.seconds_on().min(axis=1)

    @property
    def gpu_seconds(self) -> np.ndarray:
        """``isolated_seconds * scale_factor``: GPU-time of each job."""
        return self.isolated_seconds * self.scale_factor

    def index(self, job_id: Hashable) -> int:
        """Row of the job labelled ``job_id``."""
        try:
            return self._index[job_id]
        except KeyError:
            raise InputError(f"job_id: no job {job_id!r} in the workload",
                             argument="job_id") from None

    def check_cluster(self, cluster: Cluster) -> None:
        """Raise `fairalloc.InputError` unless every job can run on ``cluster`` (same
        types, each gang fits on a type the job can use)."""
        if not isinstance(cluster, Cluster):
            raise InputError(f"cluster must be a fairalloc.Cluster, got "
                             f"{type(cluster).__name__}", argument="cluster")
        if tuple(cluster.types) != self.types:
            raise InputError(f"cluster types {cluster.types} differ from the workload's "
                             f"{self.types}", argument="cluster")
        fits = self.runnable & (self.scale_factor[:, None] <= cluster.capacity[None, :])
        bad = np.flatnonzero(~fits.any(axis=1))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"scale_factor{fmt_index([i])} = {self.scale_factor[i]:g}: job "
                             f"{self.ids[i]!r} fits on no type it can run on",
                             argument="scale_factor", index=(i,))

    def subset(self, rows: Any) -> Workload:
        """The workload restricted to ``rows`` (indices or a boolean mask), in that order."""
        idx = np.arange(self.n)[np.asarray(rows)]
        if idx.size == 0:
            raise InputError("rows selects no job", argument="rows")
        R = max(int(self.num_regimes[idx].max()), 1)

        def take(a: np.ndarray) -> np.ndarray:
            out = np.array(a[idx][:, :R] if a.ndim >= 2 else a[idx])
            out.flags.writeable = False
            return out

        ids = tuple(self.ids[i] for i in idx.tolist())
        return Workload(types=self.types, ids=ids, arrival=take(self.arrival),
                        scale_factor=take(self.scale_factor), weight=take(self.weight),
                        scaling=take(self.scaling),
                        model=tuple(self.model[i] for i in idx.tolist()),
                        mode=tuple(self.mode[i] for i in idx.tolist()),
                        regime_batch=take(self.regime_batch),
                        regime_epochs=take(self.regime_epochs),
                        regime_iterations=take(self.regime_iterations),
                        regime_seconds=take(self.regime_seconds),
                        num_regimes=take(self.num_regimes), max_batch=take(self.max_batch),
                        _index={label: i for i, label in enumerate(ids)})

    def to_frame(self) -> Any:
        """One row per job: arrival, gang, model, mode, epochs, regimes, isolated run time."""
        pd = require_pandas()
        return pd.DataFrame({
            "arrival": self.arrival, "scale_factor": self.scale_factor.astype(int),
            "weight": self.weight, "model": list(self.model), "mode": list(self.mode),
            "epochs": self.total_epochs, "regimes": self.num_regimes,
            "initial_batch": self.regime_batch[:, 0], "max_batch": self.max_batch,
            "isolated_seconds": self.isolated_seconds,
        }, index=pd.Index(list(self.ids), name="job"))

    def __repr__(self) -> str:
        modes = {m: self.mode.count(m) for m in MODES if m in self.mode}
        return f"Workload(n={self.n}, types={self.types}, modes={modes})"


# --------------------------------------------------------------------------------------------
# building jobs from (model, batch size, steps) descriptions
# --------------------------------------------------------------------------------------------
def job_from_config(table: ThroughputTable, *, model: str, batch: int | None, sf: int,
                     mode: str, steps: float, arrival: float, weight: float,
                     reference: int, duration: float | None, job_id: Hashable,
                     scaling: float, where: str) -> tuple[JobSpec, float]:
    """Regimes of one job (the trace reader and the generator share this; bounds in the
    module notes)."""
    if batch is not None and not 1 <= batch <= MAX_BATCH_SIZE:
        shown = str(batch) if len(str(batch)) <= _SHOWN_DIGITS else f"a {len(str(batch))}-digit"
        raise InputError(f"{where}: batch size {shown} is outside [1, {MAX_BATCH_SIZE}]",
                         argument="batch")
    if not 0 < steps <= MAX_STEPS:
        raise InputError(f"{where}: {steps:g} steps is outside (0, {MAX_STEPS:g}]",
                         argument="steps")
    base = table.rate(model, batch, sf)
    if base is None or not (base > 0).any():
        if duration is None:
            raise InputError(f"{where}: the throughput table has no entry for "
                             f"{job_type_name(model, batch)!r} with scale factor {sf}",
                             argument="throughputs")
        base = np.zeros(table.num_types)
        base[reference] = steps / duration  # only the reference type is known
    if duration is not None:
        ref_rate = steps / duration
        if base[reference] > 0:
            factor = ref_rate / base[reference]
        else:  # the table cannot run it on the reference type: trust the table elsewhere
            factor = 1.0
    else:
        factor = 1.0
    info = MODELS.get(model)
    if info is not None and batch is not None and (
            steps / math.ceil(info.dataset_size / batch) > MAX_EPOCHS):
        raise InputError(f"{where}: {steps:g} steps of {model} at batch size {batch} are "
                         f"{steps / math.ceil(info.dataset_size / batch):g} epochs, more than "
                         f"the {MAX_EPOCHS:,} a job may have (MAX_EPOCHS)", argument="steps")
    if info is None or batch is None:
        epochs_total = NOMINAL_EPOCHS
        it0 = steps / epochs_total
        with np.errstate(divide="ignore"):
            sec = np.where(base > 0, it0 / np.maximum(base * factor, MIN_RATE), np.inf)
        spec = JobSpec(arrival=arrival, regimes=[(float(batch or 1), epochs_total, sec)],
                       iterations_per_epoch=[it0], scale_factor=sf, weight=weight,
                       job_id=job_id, model=model, mode="static" if mode != "static" else mode,
                       scaling=scaling)
        return spec, float(batch or 1)
    it_per_epoch = math.ceil(info.dataset_size / batch)
    epochs_total = steps / it_per_epoch
    # batch sizes the job can switch to: runnable wherever its initial configuration is
    sizes = []
    for b in table.batch_sizes(model, sf):
        rate_b = table.rate(model, b, sf)
        assert rate_b is not None  # batch_sizes lists only sizes the table has
        if b >= batch and bool((rate_b[base > 0] > 0).all()):
            sizes.append(b)
    sizes = sizes or [batch]
    cap = max(sizes)
    per_epoch = batch_size_schedule(mode, model, batch, int(math.ceil(epochs_total)), cap)
    # only batch sizes the table has (a doubling to a size it lacks stays at the last one)
    have = np.array(sorted(set(sizes) | {batch}))
    per_epoch = have[np.searchsorted(have, per_epoch, side="right") - 1]
    values, lengths = run_lengths(per_epoch)
    lengths = lengths.astype(float)
    lengths[-1] -= math.ceil(epochs_total) - epochs_total  # fractional last epoch
    if lengths[-1] <= LAST_REGIME_MIN_EPOCHS and lengths.size > 1:
        values, lengths = values[:-1], lengths[:-1]
    regimes = []
    iters = []
    for b, ep in zip(values.tolist(), lengths.tolist(), strict=True):
        r = table.rate(model, b, sf)
        r = base if r is None else r
        ipe = math.ceil(info.dataset_size / b)
        with np.errstate(divide="ignore"):
            sec = np.where(r > 0, ipe / np.maximum(r * factor, MIN_RATE), np.inf)
        regimes.append((float(b), float(ep), sec))
        iters.append(float(ipe))
    spec = JobSpec(arrival=arrival, regimes=regimes, iterations_per_epoch=iters,
                   scale_factor=sf, weight=weight, job_id=job_id, model=model, mode=mode,
                   scaling=scaling)
    return spec, float(cap)
