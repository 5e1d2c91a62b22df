"""The process pool of the auctions' leave-one-out solves, and the thread-local log behind
their ``SolveStats``: which backends really ran (with their raw statuses), which named steps
ran (``stats.path``) and every hand-over to a slower path (``stats.fallbacks``).

Workers are forked so they inherit the problem data without pickling it; each worker's log
travels back with its results, so a pooled run reports the same stats as a serial one.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, ParamSpec, TypeVar

import numpy as np

from .._validation import as_positive_int
from ..errors import FairallocError, SolverError
from ..results import SolveStats
from ..solvelog import SolveLog

#: PERFORMANCE knob: leave-one-out solves are cut into this many chunks per worker process
#: (small chunks balance the load; each chunk costs one inter-process round trip).
CHUNKS_PER_WORKER = 4
#: PERFORMANCE knob: processes used when ``workers=None`` (at most the machine's cores).
DEFAULT_WORKERS = 2

_P = ParamSpec("_P")
_R = TypeVar("_R")

_WORKER: tuple[Callable[..., Any], Any, bool] | None = None
_LOG = threading.local()  # this thread's solve log (`fairalloc.solvelog.SolveLog`)


def _used() -> SolveLog:
    """This thread's solve log (see `_record`, `_step`; hand-overs are recorded by the plans'
    driver, `fairalloc.plan.run_plan`, on this log); a call marks its
    start (``SolveLog.mark``) and `_solve_stats` cuts what it recorded."""
    log = getattr(_LOG, "log", None)
    if log is None:
        log = _LOG.log = SolveLog()
    return log


def _record(backend: str, raw_status: str) -> None:
    """Note that ``backend`` ran a solve that ended in ``raw_status`` (for ``SolveStats``)."""
    _used().solved(str(backend), str(raw_status))


def _step(name: str) -> None:
    """Note that the named algorithm step ``name`` ran (``stats.path``)."""
    _used().step(name)


def _solve_stats(mark: tuple[int, int, int], *, method: str, t0: float, solves: int
                 ) -> SolveStats:
    """SolveStats of what was logged since ``mark`` (cut from the log).

    ``backend`` names the backends that really ran (``"numpy"`` if only fairalloc's own numpy
    code did) with the last backend solve's raw status; ``path`` and ``fallbacks`` list each
    distinct step and hand-over once, in the order they first happened (a call with many
    leave-one-out solves would otherwise repeat them per solve).
    """
    ran = _used().cut(mark)
    return SolveStats(backend=ran.backend if ran.backends else "numpy", method=method,
                      seconds=time.perf_counter() - t0, solves=solves,
                      raw_status=ran.raw_status, path=tuple(dict.fromkeys(ran.steps)),
                      fallbacks=tuple(dict.fromkeys(ran.hand_overs)),
                      step_counts=ran.step_counts)


def _clean_log(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Drop the events a public entry point logged, even when it raises (the signature of
    ``func`` is kept, for type checkers too)."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        mark = _used().mark()
        try:
            return func(*args, **kwargs)
        finally:
            _used().cut(mark)

    return wrapper


def _init_worker(func: Callable[..., Any], ctx: Any, chunked: bool) -> None:
    global _WORKER
    _WORKER = (func, ctx, chunked)


def _run_chunk(indices: np.ndarray) -> tuple[list[Any], SolveLog]:
    if _WORKER is None:  # pragma: no cover - set by _init_worker in every process
        raise SolverError("worker process started without its problem")
    func, ctx, chunked = _WORKER
    mark = _used().mark()
    out = list(func(ctx, indices)) if chunked else [func(ctx, int(i)) for i in indices]
    return out, _used().cut(mark)


def _parallel_map(func: Callable[[Any, Any], Any], ctx: Any, indices: np.ndarray,
                  workers: int, *, chunk: int | None = None) -> list[Any]:
    """``[func(ctx, i) for i in indices]`` over ``workers`` processes when that is > 1.

    With ``chunk``, ``func(ctx, index_array)`` handles a chunk of up to ``chunk`` indices at
    once and returns one result per index. Never more processes than chunks or cores; the
    events the workers logged are added to this thread's log.
    """
    size = chunk if chunk is not None else max(
        1, -(-indices.size // (CHUNKS_PER_WORKER * max(workers, 1))))
    pieces = [c for c in np.array_split(indices, max(1, -(-indices.size // size))) if c.size]
    workers = min(workers, len(pieces), max(os.cpu_count() or 1, 1))
    if workers <= 1 or len(pieces) < 2:
        _init_worker(func, ctx, chunk is not None)
        out: list[Any] = []
        for piece in pieces:
            part, log = _run_chunk(piece)
            out.extend(part)
            _used().absorb(log)
        return out
    import multiprocessing as mp

    method = "fork" if "fork" in mp.get_all_start_methods() else None
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method),
                                 initializer=_init_worker,
                                 initargs=(func, ctx, chunk is not None)) as ex:
            out = []
            for part, log in ex.map(_run_chunk, pieces):
                out.extend(part)
                _used().absorb(log)
    except FairallocError:
        raise
    except Exception as exc:  # a broken pool (a worker killed, fork refused): not the caller's
        raise SolverError(f"a worker process failed: {type(exc).__name__}: {exc}",
                          raw_status=type(exc).__name__) from exc
    return out


def _workers(workers: Any) -> int:
    """The ``workers`` argument as a process count (``None``: up to DEFAULT_WORKERS)."""
    if workers is None:
        return max(1, min(DEFAULT_WORKERS, os.cpu_count() or 1))
    return as_positive_int(workers, "workers")
