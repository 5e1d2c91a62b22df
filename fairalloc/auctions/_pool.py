"""The process pool of the auctions' leave-one-out solves, and the thread-local log of backend
solves behind their ``SolveStats`` (which backends really ran, with their raw statuses).

Workers are forked so they inherit the problem data without pickling it; each worker's
backend-solve log travels back with its results.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from .._validation import as_positive_int
from ..errors import FairallocError, SolverError
from ..results import SolveStats

# ============================================================================================
# parallel map (fork: the workers inherit the problem data without pickling it)
# ============================================================================================
_WORKER: tuple[Callable[..., Any], Any, bool] | None = None
_LOG = threading.local()  # (backend, raw status) of every backend solve, in order


def _used() -> list[tuple[str, str]]:
    """This thread's log of backend solves (see :func:`_record`)."""
    log = getattr(_LOG, "solves", None)
    if log is None:
        log = _LOG.solves = []
    return log


def _record(backend: str, raw_status: str) -> None:
    """Note that ``backend`` ran a solve that ended in ``raw_status`` (for ``SolveStats``)."""
    _used().append((str(backend), str(raw_status)))


def _solve_stats(mark: int, *, method: str, t0: float, solves: int) -> SolveStats:
    """SolveStats naming the backends that really ran since ``_used()[mark]`` (``"numpy"`` if
    only fairalloc's own numpy code did), with the last backend solve's raw status."""
    log = _used()
    ran = log[mark:]
    del log[mark:]
    names = list(dict.fromkeys(name for name, _ in ran))
    return SolveStats(backend="+".join(names) if names else "numpy", method=method,
                      seconds=time.perf_counter() - t0, solves=solves,
                      raw_status=ran[-1][1] if ran else "")


def _clean_log(func: Callable[..., Any]) -> Callable[..., Any]:
    """Drop the backend-solve entries a public entry point logged, even when it raises."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        mark = len(_used())
        try:
            return func(*args, **kwargs)
        finally:
            del _used()[mark:]

    return wrapper


def _init_worker(func: Callable[..., Any], ctx: Any, chunked: bool) -> None:
    global _WORKER
    _WORKER = (func, ctx, chunked)


def _run_chunk(indices: np.ndarray) -> tuple[list[Any], list[tuple[str, str]]]:
    if _WORKER is None:  # pragma: no cover - set by _init_worker in every process
        raise SolverError("worker process started without its problem")
    func, ctx, chunked = _WORKER
    log = _used()
    mark = len(log)
    out = list(func(ctx, indices)) if chunked else [func(ctx, int(i)) for i in indices]
    return out, log[mark:]


def _parallel_map(func: Callable[[Any, Any], Any], ctx: Any, indices: np.ndarray,
                  workers: int, *, chunk: int | None = None) -> list[Any]:
    """``[func(ctx, i) for i in indices]`` over ``workers`` processes when that is > 1.

    With ``chunk``, ``func(ctx, index_array)`` handles a chunk of up to ``chunk`` indices at
    once and returns one result per index. Never more processes than chunks or cores; the
    backend solves of the workers are added to this thread's log.
    """
    size = chunk if chunk is not None else max(1, -(-indices.size // (4 * max(workers, 1))))
    pieces = [c for c in np.array_split(indices, max(1, -(-indices.size // size))) if c.size]
    workers = min(workers, len(pieces), max(os.cpu_count() or 1, 1))
    if workers <= 1 or len(pieces) < 2:
        _init_worker(func, ctx, chunk is not None)
        out: list[Any] = []
        for piece in pieces:
            out.extend(_run_chunk(piece)[0])
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
                _used().extend(log)
    except FairallocError:
        raise
    except Exception as exc:  # a broken pool (a worker killed, fork refused): not the caller's
        raise SolverError(f"a worker process failed: {type(exc).__name__}: {exc}",
                          status="exception") from exc
    return out


def _workers(workers: Any) -> int:
    if workers is None:
        return max(1, min(2, os.cpu_count() or 1))
    return as_positive_int(workers, "workers")
