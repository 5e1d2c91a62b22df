"""Model families, throughput tables and batch-size schedules of the simulated jobs.

Throughputs
-----------
Speeds come from a `fairalloc.sim.ThroughputTable` -- iterations per second of
``(model, batch size, scale factor)`` on each accelerator type -- either read from a
Gavel/Shockwave-format JSON file
(`fairalloc.sim.models.ThroughputTable.from_json`, e.g.
``tacc_throughputs.json``) or the built-in synthetic table
(`fairalloc.sim.models.ThroughputTable.builtin`). An epoch is
``ceil(dataset_size / batch_size)`` iterations (the convention of the Shockwave artifact: the named
batch size is the global batch), so ``seconds per epoch = iterations per epoch / iterations per
second``.

Batch-size schedules (Shockwave §5 (a), (b); Accordion [1], GNS [31] of Shockwave)
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
  ... epochs (``e0`` per model, `fairalloc.sim.models.MODELS`).

Both rules are this library's parametric models of the behaviour described in the papers (the
Shockwave artifact hard-codes per-configuration epoch tables); the per-model constants are in
`fairalloc.sim.models.MODELS`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import as_array, as_option, as_positive_int
from ..errors import InputError
from ._files import as_names, as_path, describe_value, json_rate, read_text

__all__ = [
    "MODELS",
    "MODES",
    "ModelInfo",
    "ThroughputTable",
    "batch_size_schedule",
    "job_type_name",
    "run_lengths",
    "split_job_type",
]

MODES = ("static", "accordion", "gns")
_JOB_TYPE = re.compile(r"^\s*(?P<model>.+?)\s*\(batch size (?P<batch>\d+)\)\s*$")
_TABLE_KEY = re.compile(r"^\(\s*'(?P<name>[^']*)'\s*,\s*(?P<sf>\d+)\s*\)$")
#: nominal epochs of a job whose model has no dataset size (unknown to
#: `fairalloc.sim.models.MODELS`)
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
#: types of the built-in table
#: (`fairalloc.sim.models.ThroughputTable.builtin`)
BUILTIN_TYPES = ("v100", "p100", "k80")
#: gang sizes of the built-in table
BUILTIN_SCALE_FACTORS = (1, 2, 4, 8)
#: Accordion: every epoch in this leading fraction of training is critical
ACCORDION_CRITICAL_FRACTION = 0.3
#: round-off margin of the GNS doubling counts (log2 of an exact power of two)
LOG2_ROUNDOFF = 1e-12


def split_job_type(job_type: str) -> tuple[str, int | None]:
    """``"ResNet-18 (batch size 32)"`` -> ``("ResNet-18", 32)``; other names -> ``(name, None)``."""
    m = _JOB_TYPE.match(job_type)
    if m is None:
        return job_type.strip(), None
    return m.group("model"), int(m.group("batch"))


def job_type_name(model: str, batch_size: int | None) -> str:
    """Inverse of `split_job_type`."""
    return model if batch_size is None else f"{model} (batch size {int(batch_size)})"


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
        self.types = tuple(as_names(types, "types"))
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
    def builtin(cls, types: Sequence[str] = BUILTIN_TYPES,
                scale_factors: Sequence[int] = BUILTIN_SCALE_FACTORS) -> ThroughputTable:
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
        p = as_path(path, "path")
        text = read_text(p, "throughputs")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            where = (f" (line {exc.lineno}, column {exc.colno})"
                     if isinstance(exc, json.JSONDecodeError) else "")
            raise InputError(f"path: {str(p)!r} is not valid JSON{where}: {exc}",
                             argument="path") from None
        if not isinstance(data, dict) or not data:
            raise InputError(f"path: {str(p)!r} at $: a throughput file maps GPU types to job "
                             f"tables (a non-empty JSON object), got {describe_value(data)}",
                             argument="path")
        if types is None:
            keep = [t for t in data if "_unconsolidated" not in t]
            if not keep:
                raise InputError(f"path: {str(p)!r} has no GPU type without an "
                                 "'_unconsolidated' suffix; pass types=", argument="path")
        else:
            keep = as_names(types, "types")
        missing = [t for t in keep if t not in data]
        if missing:
            raise InputError(f"types: {missing[0]!r} is not in {str(p)!r}", argument="types")
        rows: dict[tuple[str, int | None, int], np.ndarray] = {}
        for j, t in enumerate(keep):
            table = data[t]
            here = f"$[{json.dumps(t)}]"
            if not isinstance(table, dict):
                raise InputError(f"path: {str(p)!r} at {here}: expected a JSON object of job "
                                 f"entries, got {describe_value(table)}", argument="path")
            for key, entry in table.items():
                at = f"{here}[{json.dumps(key)}]"
                m = _TABLE_KEY.match(key)
                if m is None:
                    raise InputError(f"path: {str(p)!r} at {at}: a job key must look like "
                                     "\"('<model> (batch size <B>)', <scale factor>)\"",
                                     argument="path")
                if not isinstance(entry, dict) or "null" not in entry:
                    raise InputError(f"path: {str(p)!r} at {at}: expected an object with the "
                                     "isolated throughput under \"null\", got "
                                     f"{describe_value(entry)}",
                                     argument="path")
                for other, value in entry.items():
                    sub = f"{at}[{json.dumps(other)}]"
                    if other == "null":
                        json_rate(value, p, sub)
                        continue
                    if _TABLE_KEY.match(other) is None:
                        raise InputError(f"path: {str(p)!r} at {sub}: a pair key must look like "
                                         "\"('<model> (batch size <B>)', <scale factor>)\"",
                                         argument="path")
                    if not isinstance(value, list) or len(value) != 2:
                        raise InputError(f"path: {str(p)!r} at {sub}: a pair entry must be a "
                                         f"list of 2 throughputs, got {describe_value(value)}",
                                         argument="path")
                    for q, v in enumerate(value):
                        json_rate(v, p, f"{sub}[{q}]")
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
                row[j] = json_rate(entry["null"], p, f"{at}[\"null\"]")
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
        Model family (its rule constants come from `fairalloc.sim.models.MODELS`; unknown
        models are static).
    initial : int
        Initial batch size ``b0``.
    num_epochs : int
        Epochs to schedule.
    max_batch_size : int
        Largest batch size the job can use (the table's largest for its model and gang).

    Returns
    -------
    numpy.ndarray
        Integer batch size of each epoch, shape ``(num_epochs,)``.

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
        critical = (e < info.accordion_head) | (e <= ACCORDION_CRITICAL_FRACTION * n)
        for lo, hi in info.accordion_windows:
            critical |= (e >= lo) & (e < hi)
        if info.accordion_period is not None:
            period, length = info.accordion_period
            critical |= (e % period) < length
        out[~critical] = cap
        return out
    if info.gns_e0 is None:
        return out
    doublings = np.floor(np.log2(1.0 + e / info.gns_e0) + LOG2_ROUNDOFF).astype(np.int64)
    max_doublings = int(math.floor(math.log2(cap / b0) + LOG2_ROUNDOFF))
    return b0 * 2 ** np.minimum(doublings, max_doublings)


def run_lengths(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run-length encoding: (value of each run, length of each run)."""
    if values.size == 0:
        return values[:0], np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], np.flatnonzero(values[1:] != values[:-1]) + 1])
    lengths = np.diff(np.concatenate([starts, [values.size]]))
    return values[starts], lengths


# --------------------------------------------------------------------------------------------
