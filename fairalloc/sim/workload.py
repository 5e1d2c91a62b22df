"""Workloads for the simulator: jobs with batch-size schedules, a Poisson generator, a trace reader.

A simulated job (:class:`JobSpec`) is a training run of ``total_epochs`` epochs on a gang of
``scale_factor`` workers. Its *batch-size schedule* splits the epochs into **regimes** (runs of
epochs with one batch size, Shockwave §5): static jobs have one regime, Accordion jobs alternate
between a small batch size in *critical regimes* and the model's largest batch size elsewhere,
GNS jobs double their batch size as the gradient noise scale grows. Each regime has its own
seconds per epoch on every accelerator type, so a job's speed changes when it changes regime;
the simulator reveals a regime to the policies only when the job enters it.

Throughputs
-----------
Speeds come from a :class:`ThroughputTable` -- iterations per second of ``(model, batch size,
scale factor)`` on each accelerator type -- either read from a Gavel/Shockwave-format JSON file
(:meth:`ThroughputTable.from_json`, e.g. ``tacc_throughputs.json``) or the built-in synthetic
table (:meth:`ThroughputTable.builtin`). An epoch is ``ceil(dataset_size / batch_size)``
iterations (the convention of the Shockwave artifact: the named batch size is the global batch),
so ``seconds per epoch = iterations per epoch / iterations per second``.

Batch-size schedules (Shockwave §5 (a), (b); Accordion [1], GNS [31] of shockwave.txt)
------------------------------------------------------------------------------------
* **static** -- the initial batch size throughout.
* **accordion** -- epochs in a *critical regime* (the model's head epochs, its periodic or
  windowed critical epochs after learning-rate changes, and every epoch in the first 30 % of
  training, which Accordion keeps small to protect accuracy) use the initial batch size; all
  other epochs use the largest batch size the table has for the model and gang. Models without
  an Accordion rule (Transformer, CycleGAN, A3C) stay static.
* **gns** -- the gradient noise scale grows roughly linearly during training, ``B(e) =
  b0 (1 + e / e0)``, and GNS uses the largest power-of-two multiple of ``b0`` not above it,
  capped at the model's largest batch size: the batch doubles after ``e0``, ``3 e0``, ``7 e0``,
  ... epochs (``e0`` per model, :data:`MODELS`).

Both rules are this library's parametric models of the behaviour described in the papers (the
Shockwave artifact hard-codes per-configuration epoch tables); the per-model constants are in
:data:`MODELS`.

Trace format (``trace_*.tsv`` of the Shockwave artifact)
--------------------------------------------------------
Tab-separated, one job per line: job type ``"<Model> (batch size <B>)"``, command, working
directory, num-steps argument, needs-data-dir flag, **total steps** (at the initial batch size),
**scale factor**, **mode** (static | accordion | gns), **priority weight**, SLO (``-1``: none),
**duration** (seconds on the reference type alone) and **arrival time** (seconds).
:func:`read_trace` takes the job's speed at its initial configuration on the reference type from
``total steps / duration`` and the relative speeds of other types and batch sizes from the
throughput table.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import (
    as_array,
    as_bool,
    as_finite_float,
    as_option,
    as_positive_float,
    as_positive_int,
    fmt_index,
)
from ..data import Cluster
from ..errors import InputError
from ..results import require_pandas

__all__ = [
    "MODELS",
    "MODES",
    "JobSpec",
    "ModelInfo",
    "ThroughputTable",
    "Workload",
    "batch_size_schedule",
    "poisson_workload",
    "read_trace",
]

MODES = ("static", "accordion", "gns")
_JOB_TYPE = re.compile(r"^\s*(?P<model>.+?)\s*\(batch size (?P<batch>\d+)\)\s*$")
_TABLE_KEY = re.compile(r"^\(\s*'(?P<name>[^']*)'\s*,\s*(?P<sf>\d+)\s*\)$")
#: nominal epochs of a job whose model has no dataset size (unknown to :data:`MODELS`)
NOMINAL_EPOCHS = 100.0


@dataclass(frozen=True)
class ModelInfo:
    """What the simulator knows about a model family.

    Attributes
    ----------
    dataset_size : int
        Samples per epoch (an epoch is ``ceil(dataset_size / batch_size)`` iterations).
    batch_sizes : tuple of int
        Batch sizes of the built-in throughput table.
    samples_per_second : float
        Built-in table: saturated single-GPU training speed on a V100 (samples/s).
    half_batch : float
        Built-in table: batch size at which half of that speed is reached.
    type_speed : tuple of float
        Built-in table: speed on (v100, p100, k80) relative to a V100.
    accordion_head : int
        Accordion: critical epochs at the start of training.
    accordion_windows : tuple of (int, int)
        Accordion: further critical windows ``[start, end)`` (after learning-rate decays).
    accordion_period : tuple of (int, int) or None
        Accordion: periodic critical epochs ``(period, length)``: epoch ``e`` is critical when
        ``e % period < length`` (ResNet-50's step schedule).
    gns_e0 : float or None
        GNS: epochs until the first doubling (``None``: GNS does not apply).
    """

    dataset_size: int
    batch_sizes: tuple[int, ...]
    samples_per_second: float
    half_batch: float
    type_speed: tuple[float, float, float]
    accordion_head: int = 0
    accordion_windows: tuple[tuple[int, int], ...] = ()
    accordion_period: tuple[int, int] | None = None
    gns_e0: float | None = None


#: Model families of the Gavel/Shockwave workloads (dataset sizes: CIFAR-10, an ImageNet subset,
#: Multi30k, WikiText-2, ML-20M, monet2photo).
MODELS: dict[str, ModelInfo] = {
    "ResNet-18": ModelInfo(50_000, (16, 32, 64, 128, 256), 3200.0, 64.0, (1.0, 0.6, 0.2),
                           accordion_head=10, accordion_windows=((150, 160), (250, 260)),
                           gns_e0=10.0),
    "ResNet-50": ModelInfo(100_000, (16, 32, 64, 128), 420.0, 32.0, (1.0, 0.55, 0.2),
                           accordion_head=10, accordion_period=(30, 10), gns_e0=100.0),
    "Transformer": ModelInfo(10_000, (16, 32, 64, 128), 320.0, 32.0, (1.0, 0.7, 0.35),
                             gns_e0=10.0),
    "LM": ModelInfo(59_675, (5, 10, 20, 40, 80), 1600.0, 20.0, (1.0, 0.8, 0.3),
                    accordion_head=10, gns_e0=10.0),
    "Recommendation": ModelInfo(117_907, (512, 1024, 2048, 4096, 8192), 150_000.0, 4096.0,
                                (1.0, 0.9, 0.4), accordion_head=20,
                                accordion_windows=((60, 70), (80, 90)), gns_e0=10.0),
    "CycleGAN": ModelInfo(6_287, (1,), 12.0, 0.5, (1.0, 0.6, 0.25)),
}

#: exponent of the built-in table's gang speed-up: a gang of ``s`` workers runs ``s**0.8``
#: times as many iterations per second as one worker
_GANG_EXPONENT = 0.8


def split_job_type(job_type: str) -> tuple[str, int | None]:
    """``"ResNet-18 (batch size 32)"`` -> ``("ResNet-18", 32)``; other names -> ``(name, None)``."""
    m = _JOB_TYPE.match(job_type)
    if m is None:
        return job_type.strip(), None
    return m.group("model"), int(m.group("batch"))


def job_type_name(model: str, batch_size: int | None) -> str:
    """Inverse of :func:`split_job_type`."""
    return model if batch_size is None else f"{model} (batch size {int(batch_size)})"



# --------------------------------------------------------------------------------------------
# file-reading helpers: every field checked, errors name the file and the line / JSON path
# --------------------------------------------------------------------------------------------
def _as_path(path: Any, name: str) -> Path:
    if not isinstance(path, str | Path) or (isinstance(path, str) and not path):
        raise InputError(f"{name} must be a file path (str or Path), got {path!r}",
                         argument=name)
    return Path(path)


def _read_text(p: Path, what: str) -> str:
    """The whole file as UTF-8 text; InputError naming the file (and line) otherwise."""
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"path: cannot read {what} from {str(p)!r}: {exc}",
                         argument="path") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(f"path: {str(p)!r} line {line}: not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})", argument="path") from None


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r}"[:80]


def _json_rate(value: Any, p: Path, at: str) -> float:
    """A throughput from a JSON file: a finite non-negative number (not a bool or string)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"path: {str(p)!r} at {at}: a throughput must be a number, got "
                         f"{_kind(value)}", argument="path")
    out = float(value)
    if not math.isfinite(out) or out < 0:
        raise InputError(f"path: {str(p)!r} at {at}: a throughput must be finite and "
                         f"non-negative, got {value!r}", argument="path")
    return out


def _as_names(value: Any, name: str) -> list[str]:
    """A non-empty sequence of distinct strings (type or model names)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | tuple | list):
        raise InputError(f"{name} must be a sequence of names, got {value!r}", argument=name)
    out = list(value)
    if not out:
        raise InputError(f"{name} is empty", argument=name)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise InputError(f"{name}[{i}] must be a string, got {v!r}", argument=name,
                             index=(i,))
    if len(set(out)) != len(out):
        dup = next(v for i, v in enumerate(out) if v in out[:i])
        raise InputError(f"{name} repeats {dup!r}", argument=name)
    return out


# --------------------------------------------------------------------------------------------
# throughput tables
# --------------------------------------------------------------------------------------------
class ThroughputTable:
    """Iterations per second of ``(model, batch size, scale factor)`` on each accelerator type.

    Parameters
    ----------
    types : sequence of str
        Accelerator types (columns).
    rates : mapping of (str, int or None, int) to array_like of shape (k,)
        ``(model, batch_size, scale_factor) -> iterations/s`` on each type (``0``: cannot run).

    Examples
    --------
    >>> t = ThroughputTable(["v100", "k80"], {("LM", 10, 1): [95.0, 25.0]})
    >>> t.rate("LM", 10, 1).tolist(), t.batch_sizes("LM", 1)
    ([95.0, 25.0], [10])
    """

    def __init__(self, types: Sequence[str],
                 rates: Mapping[tuple[str, int | None, int], Any]) -> None:
        self.types = tuple(_as_names(types, "types"))
        k = len(self.types)
        if not isinstance(rates, Mapping):
            raise InputError(f"rates must be a mapping of (model, batch_size, scale_factor) to "
                             f"throughputs, got {type(rates).__name__}", argument="rates")
        self._rates: dict[tuple[str, int | None, int], np.ndarray] = {}
        for key, value in rates.items():
            ok = isinstance(key, tuple) and len(key) == 3 and isinstance(key[0], str)
            ok = ok and (key[1] is None or (isinstance(key[1], int | np.integer)
                                            and not isinstance(key[1], bool) and key[1] > 0))
            ok = ok and isinstance(key[2], int | np.integer) and not isinstance(key[2], bool)
            if not ok or key[2] < 1:
                raise InputError(f"rates key {key!r} must be (model: str, batch_size: positive "
                                 "int or None, scale_factor: positive int)", argument="rates")
            key = (key[0], None if key[1] is None else int(key[1]), int(key[2]))
            self._rates[key] = as_array(value, f"rates[{key!r}]", ndim=1, shape=(k,))

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def builtin(cls, types: Sequence[str] = ("v100", "p100", "k80"),
                scale_factors: Sequence[int] = (1, 2, 4, 8)) -> ThroughputTable:
        """The built-in synthetic table (no data files needed).

        Single-GPU V100 speed ``samples_per_second * b / (b + half_batch)`` samples/s (it
        saturates with the batch size), other types by the model's relative speed, a gang of
        ``s`` workers ``s**0.8`` times as fast. Types outside v100/p100/k80 get the V100 speed.

        Examples
        --------
        >>> t = ThroughputTable.builtin()
        >>> round(float(t.rate("LM", 20, 1)[0]), 3)
        40.0
        """
        types = tuple(types)
        speed_of = {"v100": 0, "p100": 1, "k80": 2}
        rates: dict[tuple[str, int | None, int], np.ndarray] = {}
        for model, info in MODELS.items():
            rel = np.array([info.type_speed[speed_of[t]] if t in speed_of else 1.0
                            for t in types])
            b = np.asarray(info.batch_sizes, dtype=float)
            it = info.samples_per_second / (b + info.half_batch)  # iterations/s, one V100
            for sf in scale_factors:
                gang = float(sf) ** _GANG_EXPONENT
                for bi, batch in enumerate(info.batch_sizes):
                    rates[(model, batch, int(sf))] = it[bi] * gang * rel
        return cls(types, rates)

    @classmethod
    def from_json(cls, path: str | Path, *, types: Sequence[str] | None = None) -> ThroughputTable:
        """Read a Gavel/Shockwave throughput file (``{type: {"('<job type>', sf)": {"null":
        it/s, ...}}}``); only the isolated (``"null"``) entries are used.

        Parameters
        ----------
        path : str or Path
        types : sequence of str, optional
            Types to keep (default: every type whose name has no ``_unconsolidated`` suffix).
        """
        p = _as_path(path, "path")
        text = _read_text(p, "throughputs")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            where = (f" (line {exc.lineno}, column {exc.colno})"
                     if isinstance(exc, json.JSONDecodeError) else "")
            raise InputError(f"path: {str(p)!r} is not valid JSON{where}: {exc}",
                             argument="path") from None
        if not isinstance(data, dict) or not data:
            raise InputError(f"path: {str(p)!r} at $: a throughput file maps GPU types to job "
                             f"tables (a non-empty JSON object), got {_kind(data)}",
                             argument="path")
        if types is None:
            keep = [t for t in data if "_unconsolidated" not in t]
            if not keep:
                raise InputError(f"path: {str(p)!r} has no GPU type without an "
                                 "'_unconsolidated' suffix; pass types=", argument="path")
        else:
            keep = _as_names(types, "types")
        missing = [t for t in keep if t not in data]
        if missing:
            raise InputError(f"types: {missing[0]!r} is not in {str(p)!r}", argument="types")
        rows: dict[tuple[str, int | None, int], np.ndarray] = {}
        for j, t in enumerate(keep):
            table = data[t]
            here = f"$[{json.dumps(t)}]"
            if not isinstance(table, dict):
                raise InputError(f"path: {str(p)!r} at {here}: expected a JSON object of job "
                                 f"entries, got {_kind(table)}", argument="path")
            for key, entry in table.items():
                at = f"{here}[{json.dumps(key)}]"
                m = _TABLE_KEY.match(key)
                if m is None:
                    raise InputError(f"path: {str(p)!r} at {at}: a job key must look like "
                                     "\"('<model> (batch size <B>)', <scale factor>)\"",
                                     argument="path")
                if not isinstance(entry, dict) or "null" not in entry:
                    raise InputError(f"path: {str(p)!r} at {at}: expected an object with the "
                                     f"isolated throughput under \"null\", got {_kind(entry)}",
                                     argument="path")
                for other, value in entry.items():
                    sub = f"{at}[{json.dumps(other)}]"
                    if other == "null":
                        _json_rate(value, p, sub)
                        continue
                    if _TABLE_KEY.match(other) is None:
                        raise InputError(f"path: {str(p)!r} at {sub}: a pair key must look like "
                                         "\"('<model> (batch size <B>)', <scale factor>)\"",
                                         argument="path")
                    if not isinstance(value, list) or len(value) != 2:
                        raise InputError(f"path: {str(p)!r} at {sub}: a pair entry must be a "
                                         f"list of 2 throughputs, got {_kind(value)}",
                                         argument="path")
                    for q, v in enumerate(value):
                        _json_rate(v, p, f"{sub}[{q}]")
                sf = int(m.group("sf"))
                if sf < 1:
                    raise InputError(f"path: {str(p)!r} at {at}: the scale factor must be at "
                                     "least 1", argument="path")
                try:
                    model, batch = split_job_type(m.group("name"))
                except (ValueError, OverflowError):  # pragma: no cover - the pattern is digits
                    raise InputError(f"path: {str(p)!r} at {at}: bad batch size",
                                     argument="path") from None
                row = rows.setdefault((model, batch, sf), np.zeros(len(keep)))
                row[j] = _json_rate(entry["null"], p, f"{at}[\"null\"]")
        return cls(keep, rows)

    # -- queries ---------------------------------------------------------------------------
    @property
    def num_types(self) -> int:
        return len(self.types)

    def keys(self) -> list[tuple[str, int | None, int]]:
        """Every ``(model, batch_size, scale_factor)`` in the table."""
        return list(self._rates)

    def rate(self, model: str, batch_size: int | None, scale_factor: int) -> np.ndarray | None:
        """Iterations/s on each type, or ``None`` if the table lacks the configuration."""
        return self._rates.get((model, batch_size, int(scale_factor)))

    def batch_sizes(self, model: str, scale_factor: int) -> list[int]:
        """Batch sizes the table has for ``model`` with a gang of ``scale_factor`` (sorted)."""
        return sorted(b for (m, b, s), r in self._rates.items()
                      if m == model and s == int(scale_factor) and b is not None
                      and (r > 0).any())

    def restrict(self, types: Sequence[str]) -> ThroughputTable:
        """The same table with only (and in the order of) ``types``."""
        idx = []
        for t in types:
            if t not in self.types:
                raise InputError(f"types: {t!r} is not in the table's types {self.types}",
                                 argument="types")
            idx.append(self.types.index(t))
        return ThroughputTable(types, {k: v[idx] for k, v in self._rates.items()})

    def __repr__(self) -> str:
        return f"ThroughputTable(types={self.types}, entries={len(self._rates)})"


# --------------------------------------------------------------------------------------------
# batch-size schedules
# --------------------------------------------------------------------------------------------
def batch_size_schedule(mode: str, model: str, initial: int, num_epochs: int,
                        max_batch_size: int) -> np.ndarray:
    """Batch size of every epoch ``0..num_epochs-1`` under ``mode`` (see the module docstring).

    Parameters
    ----------
    mode : {"static", "accordion", "gns"}
    model : str
        Model family (its rule constants come from :data:`MODELS`; unknown models are static).
    initial : int
        Initial batch size ``b0``.
    num_epochs : int
        Epochs to schedule.
    max_batch_size : int
        Largest batch size the job can use (the table's largest for its model and gang).

    Examples
    --------
    >>> batch_size_schedule("gns", "LM", 10, 80, 80)[[0, 9, 10, 29, 30, 69, 70]].tolist()
    [10, 10, 20, 20, 40, 40, 80]
    >>> s = batch_size_schedule("accordion", "LM", 10, 40, 80)
    >>> int((s == 10).sum()), int(s[-1])             # first 30 % and the head are critical
    (13, 80)
    """
    mode = as_option(mode, "mode", MODES)
    n = as_positive_int(num_epochs, "num_epochs", allow_zero=True)
    b0 = as_positive_int(initial, "initial")
    cap = max(as_positive_int(max_batch_size, "max_batch_size"), b0)
    info = MODELS.get(model)
    e = np.arange(n)
    out = np.full(n, b0, dtype=np.int64)
    if info is None or mode == "static" or cap == b0:
        return out
    if mode == "accordion":
        if info.accordion_head == 0 and not info.accordion_windows \
                and info.accordion_period is None:
            return out  # Accordion does not apply to this model
        critical = (e < info.accordion_head) | (e <= 0.3 * n)
        for lo, hi in info.accordion_windows:
            critical |= (e >= lo) & (e < hi)
        if info.accordion_period is not None:
            period, length = info.accordion_period
            critical |= (e % period) < length
        out[~critical] = cap
        return out
    if info.gns_e0 is None:
        return out
    doublings = np.floor(np.log2(1.0 + e / info.gns_e0) + 1e-12).astype(np.int64)
    max_doublings = int(math.floor(math.log2(cap / b0) + 1e-12))
    return b0 * 2 ** np.minimum(doublings, max_doublings)


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run-length encoding: (value of each run, length of each run)."""
    if values.size == 0:
        return values[:0], np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], np.flatnonzero(values[1:] != values[:-1]) + 1])
    lengths = np.diff(np.concatenate([starts, [values.size]]))
    return values[starts], lengths


# --------------------------------------------------------------------------------------------
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

    Build it from :class:`JobSpec` objects (:meth:`from_jobs`), from static throughputs
    (:meth:`from_arrays`), with :func:`poisson_workload` or with :func:`read_trace`.

    Attributes
    ----------
    types : tuple of str
        Accelerator types (a simulated cluster must have the same types, in this order).
    ids : tuple
        Job labels.
    arrival, scale_factor, weight, scaling : ndarray, shape (n,)
    model, mode : tuple of str
    regime_batch, regime_epochs, regime_iterations : ndarray, shape (n, R)
        Per regime (padded with zeros after each job's last regime).
    regime_seconds : ndarray, shape (n, R, k)
        Seconds per epoch on each type (``inf`` on types the job cannot use and in padding).
    num_regimes : ndarray of int, shape (n,)
    max_batch : ndarray, shape (n,)
        Largest batch size the job could use (what a forecaster may assume, Shockwave §5 (b)).

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
        """Validate and pack :class:`JobSpec` objects (one per job, any order of arrival).

        Raises
        ------
        InputError
            Naming the job (``jobs[i]``) and the field on bad input.
        """
        types = tuple(_as_names(types, "types"))
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
                b = np.array([float(reg[0]) for reg in job.regimes])
                ep = np.array([float(reg[1]) for reg in job.regimes])
                sec = np.array([np.asarray(reg[2], dtype=float).reshape(-1)
                                if np.ndim(reg[2]) else np.full(k, float(reg[2]))
                                for reg in job.regimes])
            except (TypeError, ValueError, IndexError):
                raise InputError(f"{name}.regimes must be (batch_size, epochs, epoch_seconds) "
                                 "triples", argument="jobs", index=(i,)) from None
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
            it = (np.ones(r) if job.iterations_per_epoch is None
                  else np.asarray(job.iterations_per_epoch, dtype=float).reshape(-1))
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
        types = tuple(_as_names(types, "types"))
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
        """Raise :class:`InputError` unless every job can run on ``cluster`` (same types,
        each gang fits on a type the job can use)."""
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
def _job_from_config(table: ThroughputTable, *, model: str, batch: int | None, sf: int,
                     mode: str, steps: float, arrival: float, weight: float,
                     reference: int, duration: float | None, job_id: Hashable,
                     scaling: float, where: str) -> tuple[JobSpec, float]:
    """Regimes of one job (the trace reader and the generator share this)."""
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
    if info is None or batch is None:
        epochs_total = NOMINAL_EPOCHS
        it0 = steps / epochs_total
        with np.errstate(divide="ignore"):
            sec = np.where(base > 0, it0 / np.maximum(base * factor, 1e-300), np.inf)
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
    values, lengths = _runs(per_epoch)
    lengths = lengths.astype(float)
    lengths[-1] -= math.ceil(epochs_total) - epochs_total  # fractional last epoch
    if lengths[-1] <= 1e-12 and lengths.size > 1:
        values, lengths = values[:-1], lengths[:-1]
    regimes = []
    iters = []
    for b, ep in zip(values.tolist(), lengths.tolist(), strict=True):
        r = table.rate(model, b, sf)
        r = base if r is None else r
        ipe = math.ceil(info.dataset_size / b)
        with np.errstate(divide="ignore"):
            sec = np.where(r > 0, ipe / np.maximum(r * factor, 1e-300), np.inf)
        regimes.append((float(b), float(ep), sec))
        iters.append(float(ipe))
    spec = JobSpec(arrival=arrival, regimes=regimes, iterations_per_epoch=iters,
                   scale_factor=sf, weight=weight, job_id=job_id, model=model, mode=mode,
                   scaling=scaling)
    return spec, float(cap)


def read_trace(path: str | Path, *, throughputs: ThroughputTable | str | Path | None = None,
               reference_type: str | None = None, types: Sequence[str] | None = None,
               scaling: float = 1.0, limit: int | None = None) -> Workload:
    """Read a Shockwave/Gavel trace file (format in the module docstring).

    Parameters
    ----------
    path : str or Path
        The ``.tsv`` trace.
    throughputs : ThroughputTable, str or Path, optional
        Relative speeds of other types and batch sizes. Default: ``tacc_throughputs.json``
        next to the trace if it exists, else the built-in table.
    reference_type : str, optional
        The type the trace's durations were measured on (default: ``"v100"`` if present,
        else the first type).
    types : sequence of str, optional
        Accelerator types to keep (default: the table's).
    scaling : float
        :attr:`JobSpec.scaling` of every job (for elastic policies).
    limit : int, optional
        Read only the first ``limit`` jobs.

    Returns
    -------
    Workload
        Job ids are the line numbers (0-based).

    Raises
    ------
    InputError
        Unreadable file, a malformed line (naming it), or configurations the table lacks.
    """
    p = _as_path(path, "path")
    if throughputs is None:
        sibling = p.parent / "tacc_throughputs.json"
        table = (ThroughputTable.from_json(sibling) if sibling.exists()
                 else ThroughputTable.builtin())
    elif isinstance(throughputs, ThroughputTable):
        table = throughputs
    else:
        table = ThroughputTable.from_json(_as_path(throughputs, "throughputs"))
    if types is not None:
        table = table.restrict(_as_names(types, "types"))
    if reference_type is not None and not isinstance(reference_type, str):
        raise InputError(f"reference_type must be a type name, got {reference_type!r}",
                         argument="reference_type")
    ref_name = reference_type or ("v100" if "v100" in table.types else table.types[0])
    if ref_name not in table.types:
        raise InputError(f"reference_type {ref_name!r} is not one of {table.types}",
                         argument="reference_type")
    ref = table.types.index(ref_name)
    eff = as_finite_float(scaling, "scaling", lo=0.0, hi=1.0, lo_open=True)
    cap_jobs = None if limit is None else as_positive_int(limit, "limit")
    text = _read_text(p, "trace")
    lines: list[tuple[int, list[str]]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        lines.append((lineno, line.split("\t")))
        if cap_jobs is not None and len(lines) >= cap_jobs:
            break
    if not lines:
        raise InputError(f"path: trace {str(p)!r} has no jobs", argument="path")
    specs, caps = [], []
    for i, (lineno, row) in enumerate(lines):
        where = f"{p.name} line {lineno}"
        if len(row) < 12:
            raise InputError(f"{where}: expected 12 tab-separated fields, got {len(row)}",
                             argument="path", index=(i,))

        def field(col: int, name: str, *, integer: bool = False, zero: bool = False,
                  where: str = where, row: list[str] = row, i: int = i) -> float:
            text = row[col].strip()
            try:
                value = float(text)
            except ValueError:
                raise InputError(f"{where}: field {col + 1} ({name}) is {row[col]!r}, not a "
                                 "number", argument="path", index=(i,)) from None
            need = "non-negative" if zero else "positive"
            if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
                raise InputError(f"{where}: field {col + 1} ({name}) is {row[col]!r}; it must "
                                 f"be a finite {need} number", argument="path", index=(i,))
            if integer and value != math.floor(value):
                raise InputError(f"{where}: field {col + 1} ({name}) is {row[col]!r}; it must "
                                 "be an integer", argument="path", index=(i,))
            return value

        steps = field(5, "total steps")
        sf = int(field(6, "scale factor", integer=True))
        weight = field(8, "priority weight")
        duration = field(10, "duration")
        arrival = field(11, "arrival time", zero=True)
        mode = row[7].strip().lower()
        if mode not in MODES:
            raise InputError(f"{where}: field 8 (mode) is {row[7]!r}, not one of {MODES}",
                             argument="path", index=(i,))
        try:
            model, batch = split_job_type(row[0])
        except (ValueError, OverflowError):  # pragma: no cover - the pattern only takes digits
            raise InputError(f"{where}: field 1 (job type) {row[0]!r} has a bad batch size",
                             argument="path", index=(i,)) from None
        if not model:
            raise InputError(f"{where}: field 1 (job type) is empty", argument="path",
                             index=(i,))
        with np.errstate(all="ignore"):
            spec, cap = _job_from_config(table, model=model, batch=batch, sf=sf, mode=mode,
                                         steps=steps, arrival=arrival, weight=weight,
                                         reference=ref, duration=duration, job_id=i,
                                         scaling=eff, where=where)
        specs.append(spec)
        caps.append(cap)
    try:
        return Workload.from_jobs(specs, table.types, max_batch=caps)
    except InputError as exc:  # name the line, not jobs[i]
        if exc.index is None or not 0 <= exc.index[0] < len(lines):
            raise
        lineno = lines[exc.index[0]][0]
        raise InputError(f"{p.name} line {lineno}: {exc} (the durations, steps and the "
                         "throughput table give unusable epoch times)", argument="path",
                         index=exc.index) from None


#: Default duration mix of :func:`poisson_workload`: (low hours, high hours, probability) of the
#: isolated run time, within Shockwave §8.1's "0.2 to 5 hours", skewed to short jobs.
DURATION_CLASSES = ((0.2, 1.0, 0.6), (1.0, 2.0, 0.3), (2.0, 4.0, 0.09), (4.0, 5.0, 0.01))
#: Gang sizes of Gavel's "continuous-multiple" trace (§7.1): 70 % one worker, 25 % two or four,
#: 5 % eight.
SCALE_FACTORS = ((1, 0.70), (2, 0.125), (4, 0.125), (8, 0.05))


def poisson_workload(
    num_jobs: int,
    *,
    rate: float = 6.0,
    seed: int = 0,
    types: Sequence[str] = ("v100",),
    throughputs: ThroughputTable | None = None,
    models: Sequence[str] | None = None,
    mode_probs: Sequence[float] = (0.2, 0.4, 0.4),
    duration_classes: Sequence[tuple[float, float, float]] = DURATION_CLASSES,
    scale_factors: Sequence[tuple[int, float]] = SCALE_FACTORS,
    max_scale_factor: int | None = None,
    reference_type: str | None = None,
    scaling: float = 0.9,
    batch_start: bool = False,
) -> Workload:
    """Generate a workload like the papers' (Gavel §7.1, Shockwave §8.1): Poisson arrivals.

    Job ``i`` arrives after exponential inter-arrival times of mean ``1/rate`` hours (the first
    at time 0; ``batch_start=True`` makes all arrive at 0, Gavel's static trace). Its model and
    initial batch size are drawn uniformly from the table, its gang from ``scale_factors``, its
    mode from ``mode_probs`` (static, accordion, gns), and its isolated run time on the
    reference type at the initial batch size from ``duration_classes`` (hours, uniform within a
    class); the step count follows from the table's throughput.

    Parameters
    ----------
    num_jobs : int
    rate : float
        Arrivals per hour (``lambda``).
    seed : int
        Seed of every random draw: the same seed gives the same workload.
    types : sequence of str
        Accelerator types of the cluster (default a homogeneous V100 cluster).
    throughputs : ThroughputTable, optional
        Default :meth:`ThroughputTable.builtin`.
    models : sequence of str, optional
        Model families to draw from (default: all the table has with a known batch size).
    mode_probs : (float, float, float)
    duration_classes : sequence of (low, high, probability)
    scale_factors : sequence of (int, probability)
    max_scale_factor : int, optional
        Cap on gang sizes (e.g. the cluster's smallest type).
    reference_type : str, optional
        Type the durations refer to (default the first).
    scaling : float
        :attr:`JobSpec.scaling` (per-GPU efficiency kept per doubling) for elastic policies.
    batch_start : bool

    Examples
    --------
    >>> w = poisson_workload(5, rate=4.0, seed=1)
    >>> w.n, float(w.arrival[0]), bool((np.diff(w.arrival) >= 0).all())
    (5, 0.0, True)
    >>> bool((poisson_workload(5, rate=4.0, seed=1).arrival == w.arrival).all())
    True
    """
    n = as_positive_int(num_jobs, "num_jobs")
    lam = as_positive_float(rate, "rate")
    seed = as_positive_int(seed, "seed", allow_zero=True)
    types = _as_names(types, "types")
    if throughputs is not None and not isinstance(throughputs, ThroughputTable):
        raise InputError(f"throughputs must be a ThroughputTable, got "
                         f"{type(throughputs).__name__}", argument="throughputs")
    table = (throughputs or ThroughputTable.builtin(types)).restrict(types)
    if reference_type is not None and (not isinstance(reference_type, str)
                                       or reference_type not in table.types):
        raise InputError(f"reference_type {reference_type!r} not in {table.types}",
                         argument="reference_type")
    ref = table.types.index(reference_type) if reference_type else 0
    if models is not None:
        models = _as_names(models, "models")
        known = sorted({m for (m, b, _s) in table.keys() if b is not None and m in MODELS})
        unknown = [m for m in models if m not in known]
        if unknown:
            raise InputError(f"models: {unknown[0]!r} is not a model the throughput table has "
                             f"with a batch size (known: {', '.join(known)})",
                             argument="models")
    batch_start = as_bool(batch_start, "batch_start")
    mp = as_array(mode_probs, "mode_probs", ndim=1, shape=(3,))
    if mp.sum() <= 0:
        raise InputError("mode_probs sums to 0", argument="mode_probs")
    dc = as_array(duration_classes, "duration_classes", ndim=2, shape=(None, 3), positive=True)
    if (dc[:, 1] < dc[:, 0]).any():
        i = int(np.flatnonzero(dc[:, 1] < dc[:, 0])[0])
        raise InputError(f"duration_classes[{i}]: high < low", argument="duration_classes",
                         index=(i,))
    if dc[:, 2].sum() <= 0:  # pragma: no cover - positive entries
        raise InputError("duration_classes probabilities sum to 0", argument="duration_classes")
    sfp = as_array(scale_factors, "scale_factors", ndim=2, shape=(None, 2), positive=True)
    if (sfp[:, 0] != np.round(sfp[:, 0])).any():
        i = int(np.flatnonzero(sfp[:, 0] != np.round(sfp[:, 0]))[0])
        raise InputError(f"scale_factors[{i}, 0] = {sfp[i, 0]:g} is not an integer gang size",
                         argument="scale_factors", index=(i, 0))
    sizes = sfp[:, 0].astype(np.int64)
    if max_scale_factor is not None:
        keep = sizes <= as_positive_int(max_scale_factor, "max_scale_factor")
        if not keep.any():
            raise InputError("max_scale_factor excludes every gang size",
                             argument="max_scale_factor")
        sfp, sizes = sfp[keep], sizes[keep]
    eff = as_finite_float(scaling, "scaling", lo=0.0, hi=1.0, lo_open=True)
    # configurations available per gang size
    configs: dict[int, list[tuple[str, int]]] = {}
    for (m, b, s) in table.keys():
        if b is None or m not in MODELS or (models is not None and m not in models):
            continue
        rate_ref = table.rate(m, b, s)
        if rate_ref is not None and rate_ref[ref] > 0:
            configs.setdefault(int(s), []).append((m, b))
    missing = [int(s) for s in sizes if int(s) not in configs]
    if missing:
        which = "models" if models is not None else "scale_factors"
        raise InputError(f"{which}: the throughput table has no job"
                         f"{' of these models' if models is not None else ''} with scale "
                         f"factor {missing[0]} runnable on {table.types[ref]!r}",
                         argument=which)
    rng = np.random.default_rng(int(seed))
    gaps = rng.exponential(3600.0 / lam, size=n)
    arrival = np.zeros(n) if batch_start else np.concatenate([[0.0], np.cumsum(gaps[1:])])
    sf = rng.choice(sizes, size=n, p=sfp[:, 1] / sfp[:, 1].sum())
    mode_idx = rng.choice(3, size=n, p=mp / mp.sum())
    cls_idx = rng.choice(dc.shape[0], size=n, p=dc[:, 2] / dc[:, 2].sum())
    hours = rng.uniform(dc[cls_idx, 0], dc[cls_idx, 1])
    pick = rng.random(size=n)
    specs, caps = [], []
    for i in range(n):  # workload construction only (not a simulation hot path)
        options = sorted(configs[int(sf[i])])
        models_i = sorted({m for m, _ in options})
        m = models_i[int(pick[i] * len(models_i))]
        batches = [b for mm, b in options if mm == m]
        b = batches[int((pick[i] * len(models_i) % 1.0) * len(batches))]
        r = table.rate(m, b, int(sf[i]))
        assert r is not None  # configs holds only (m, b) the table has at this gang size
        steps = float(hours[i] * 3600.0 * r[ref])
        spec, cap = _job_from_config(table, model=m, batch=b, sf=int(sf[i]),
                                     mode=MODES[int(mode_idx[i])], steps=steps,
                                     arrival=float(arrival[i]), weight=1.0, reference=ref,
                                     duration=None, job_id=i, scaling=eff, where=f"job {i}")
        specs.append(spec)
        caps.append(cap)
    return Workload.from_jobs(specs, table.types, max_batch=caps)
