"""The trace reader of the simulator: `fairalloc.sim.read_trace`.


Trace format (``trace_*.tsv`` of the Shockwave artifact)
--------------------------------------------------------
Tab-separated, one job per line: job type ``"<Model> (batch size <B>)"``, command, working
directory, num-steps argument, needs-data-dir flag, **total steps** (at the initial batch size),
**scale factor**, **mode** (static | accordion | gns), **priority weight**, SLO (``-1``: none),
**duration** (seconds on the reference type alone) and **arrival time** (seconds).
`fairalloc.sim.read_trace` takes the job's speed at its initial configuration on the
reference type from ``total steps / duration`` and the relative speeds of other types and batch
sizes from the throughput table.

Every numeric field is bounded by what the simulator represents (the constants of
`fairalloc.sim.workload`: total steps in [1, `MAX_STEPS`] and at most
`MAX_EPOCHS` epochs, batch size in [1, `MAX_BATCH_SIZE`], scale factor an integer in [1,
`MAX_SCALE_FACTOR`], priority weight in [`MIN_WEIGHT`, `MAX_WEIGHT`], duration in
[`MIN_DURATION`, `MAX_DURATION`], arrival time in [0, `MAX_SECONDS`]); a field outside its
bounds is an `fairalloc.InputError` naming the file, the line and the field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._validation import as_finite_float, as_positive_int
from ..errors import InputError
from ._files import as_names, as_path, read_text
from .models import MODES, ThroughputTable, split_job_type
from .workload import (
    MAX_DURATION,
    MAX_SCALE_FACTOR,
    MAX_SECONDS,
    MAX_STEPS,
    MAX_WEIGHT,
    MIN_DURATION,
    MIN_WEIGHT,
    Workload,
    job_from_config,
)

__all__ = ["read_trace"]

# the trace's tab-separated columns (0-based; the module docstring lists them)
#: fields on every line
TRACE_FIELDS = 12
#: column of the total steps (at the initial batch size)
COL_STEPS = 5
#: column of the scale factor (gang size)
COL_SCALE_FACTOR = 6
#: column of the mode (static | accordion | gns)
COL_MODE = 7
#: column of the priority weight
COL_WEIGHT = 8
#: column of the duration (seconds on the reference type alone)
COL_DURATION = 10
#: column of the arrival time (seconds)
COL_ARRIVAL = 11
#: characters of a bad field quoted in a message (display only)
_SHOWN_CHARS = 40

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
        `JobSpec.scaling` of every job (for elastic policies).
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

    Examples
    --------
    A one-line trace (a ResNet-18 job at batch 32: 60,000 steps, 1,400 s on a V100):

    >>> import os, tempfile
    >>> fields = ["ResNet-18 (batch size 32)", "python3 train.py", "workdir", "--steps", "1",
    ...           "60000", "1", "static", "1", "-1", "1400", "0"]
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "trace.tsv")
    ...     with open(path, "w") as f:
    ...         _ = f.write("\\t".join(fields) + "\\n")
    ...     w = read_trace(path)
    >>> w.n, w.types, w.model, w.isolated_seconds.round(6).tolist()
    (1, ('v100', 'p100', 'k80'), ('ResNet-18',), [1400.0])
    """
    p = as_path(path, "path")
    if throughputs is None:
        sibling = p.parent / "tacc_throughputs.json"
        table = (ThroughputTable.from_json(sibling) if sibling.exists()
                 else ThroughputTable.builtin())
    elif isinstance(throughputs, ThroughputTable):
        table = throughputs
    else:
        table = ThroughputTable.from_json(as_path(throughputs, "throughputs"))
    if types is not None:
        table = table.restrict(as_names(types, "types"))
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
    text = read_text(p, "trace")
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
        if len(row) < TRACE_FIELDS:
            raise InputError(f"{where}: expected {TRACE_FIELDS} tab-separated fields, got "
                             f"{len(row)}",
                             argument="path", index=(i,))

        def field(col: int, name: str, lo: float, hi: float, *, integer: bool = False,
                  zero: bool = False, where: str = where, row: list[str] = row,
                  i: int = i) -> float:
            text = row[col].strip()
            shown = repr(row[col]) if len(row[col]) <= _SHOWN_CHARS else \
                f"{row[col][:_SHOWN_CHARS]!r}... ({len(row[col])} characters)"
            try:
                value = float(text)
            except ValueError:
                raise InputError(f"{where}: field {col + 1} ({name}) is {shown}, not a "
                                 "number", argument="path", index=(i,)) from None
            need = "non-negative" if zero else "positive"
            if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
                raise InputError(f"{where}: field {col + 1} ({name}) is {shown}; it must "
                                 f"be a finite {need} number", argument="path", index=(i,))
            if integer and value != math.floor(value):
                raise InputError(f"{where}: field {col + 1} ({name}) is {shown}; it must "
                                 "be an integer", argument="path", index=(i,))
            if not lo <= value <= hi:
                rng = ", ".join(f"{b:g}" if float(f"{b:g}") == b else str(int(b))
                                for b in (lo, hi))
                raise InputError(f"{where}: field {col + 1} ({name}) is {shown}; it must be "
                                 f"in [{rng}] (what the simulator represents)",
                                 argument="path", index=(i,))
            return value

        steps = field(COL_STEPS, "total steps", 1.0, MAX_STEPS)
        sf = int(field(COL_SCALE_FACTOR, "scale factor", 1.0, MAX_SCALE_FACTOR, integer=True))
        weight = field(COL_WEIGHT, "priority weight", MIN_WEIGHT, MAX_WEIGHT)
        duration = field(COL_DURATION, "duration", MIN_DURATION, MAX_DURATION)
        arrival = field(COL_ARRIVAL, "arrival time", 0.0, MAX_SECONDS, zero=True)
        mode = row[COL_MODE].strip().lower()
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
        try:
            with np.errstate(all="ignore"):
                spec, cap = job_from_config(table, model=model, batch=batch, sf=sf,
                                             mode=mode, steps=steps, arrival=arrival,
                                             weight=weight, reference=ref, duration=duration,
                                             job_id=i, scaling=eff, where=where)
        except InputError as exc:  # the line's fields (its message names file and line)
            if exc.argument == "throughputs":
                raise
            raise InputError(str(exc), argument="path", index=(i,)) from None
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
