"""FIFO through the Gavel adapter without building a program: the greedy fill, certified.

Gavel's ``fifo_perf`` in arrival order (sorted job ids) is fairalloc's FIFO with
``semantics="arrival"`` (`fairalloc.throughput.FIFO`): while every job's stage optimum is
unique, each job in turn fills its fastest types with what the earlier jobs left
(`fairalloc.throughput.ordering.forced_prefix`), and the knapsacks' closed-form duals certify
it (`fairalloc.throughput.ordering.forced_certificate`, ``kind="fifo-knapsack"``). That is
the whole answer of `fairalloc.RoundPolicy` on such a round, so `fifo_round` computes
it straight from Gavel's dicts: one pass to read them, the greedy pass (which stops once no
worker is spare) and the vectorised certificate, with no column instance, stage solver or LP.
It returns ``None`` -- and the adapter runs `fairalloc.RoundPolicy` -- for anything else:
a tie between two equally fast types (the LP stages decide it), a type a job names that the
spec does not list, inputs the exact path must validate (and reject with its own error), a
result whose certificate does not pass, or settings other than tolerances and the backend.
The result is the exact path's (`tests/test_gavel_fifo.py` checks them equal).

Examples
--------
>>> from fairalloc.integrations.gavel_fifo import fifo_round
>>> r = fifo_round({0: {"v100": 2.0, "k80": 1.0}, 1: {"v100": 3.0}}, {0: 1, 1: 2},
...                {"v100": 2, "k80": 1}, {})
>>> r.job_allocation, r.stats.path, r.certificate.ok
({0: {'v100': 1.0, 'k80': 0.0}, 1: {'v100': 0.5, 'k80': 0.0}}, ('fifo-greedy:2',), True)
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from ..results import SolveStats, Status
from ..rounds import RoundResult
from ..throughput.ordering import (
    FIFO_GREEDY,
    ForcedStages,
    forced_certificate,
    forced_prefix,
)
from ..throughput.policy import Allocation
from ..tolerances import FEAS_TOL, GAP_TOL

__all__ = ["fifo_round"]

#: RoundPolicy settings the greedy path honours (others: the exact path)
_SETTINGS = frozenset(("gap_tol", "feas_tol", "backend"))
_NUMBERS = frozenset((int, float, np.int64, np.float64))  # (bool: the exact path)


def _read(throughputs: Mapping[Hashable, Any], scale_factors: Any, cluster_spec: Any
          ) -> tuple[list[Hashable], tuple[str, ...], np.ndarray, np.ndarray, np.ndarray] | None:
    """``(ids, types, T, sf, cap)`` from Gavel's dicts, or ``None`` where the exact path must
    read them (its validation names the argument and the job)."""
    if not (isinstance(scale_factors, Mapping) and isinstance(cluster_spec, Mapping)):
        return None
    ids = list(throughputs)
    rows = list(throughputs.values())
    types = tuple(cluster_spec)
    if not (set(map(type, rows)) <= {dict} and set(map(type, types)) <= {str}):
        return None
    if not set().union(*rows) <= set(types):  # a type the spec does not list: exact path
        return None
    if len(scale_factors) == len(ids) and all(map(operator.is_, scale_factors, ids)):
        sfl = list(scale_factors.values())  # the same key objects in the same order (Gavel's
        # dicts, built from one job list): no lookup, so no Python-level ``__hash__`` per job
    else:
        try:
            sfl = list(map(scale_factors.__getitem__, ids))
        except (KeyError, TypeError):
            return None
    capl = list(cluster_spec.values())
    if not (set(map(type, sfl)) <= _NUMBERS and set(map(type, capl)) <= _NUMBERS):
        return None
    n, k = len(ids), len(types)
    cols = [list(map(dict.get, rows, itertools.repeat(t), itertools.repeat(0.0)))
            for t in types]  # (every rate a row lists is in a column: its types are listed)
    if not set(map(type, itertools.chain.from_iterable(cols))) <= _NUMBERS:
        return None
    T = np.array(cols, dtype=float).reshape(k, n).T
    sf = np.array(sfl, dtype=float)
    cap = np.array(capl, dtype=float)
    ok = (np.isfinite(T).all() and (T >= 0).all() and np.isfinite(sf).all() and (sf >= 1).all()
          and (sf == np.floor(sf)).all() and np.isfinite(cap).all() and (cap >= 0).all()
          and (cap == np.floor(cap)).all())
    return (ids, types, T, sf, cap) if ok else None


def _residual(x: np.ndarray, sf: np.ndarray, cap: np.ndarray) -> float:
    """The allocation's primal residual on the program's rows and bounds, each violation
    relative to its row's own scale (as `fairalloc.certificates.lp_primal_residual`)."""
    time_ = x.sum(axis=1)
    used = sf @ x
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = np.concatenate((np.maximum(time_ - 1.0, 0.0) / np.maximum(time_, 1.0),
                               np.where(used > cap, (used - cap) / np.maximum(used, cap), 0.0)))
    top = max(float(np.max(x, initial=0.0)), 1.0)
    cols = max(float(np.max(-x, initial=0.0)), float(np.max(x - 1.0, initial=0.0))) / top
    return max(float(np.max(rows, initial=0.0)), cols)


def _certify(A: np.ndarray, s: np.ndarray, c: np.ndarray, order: np.ndarray, xr: np.ndarray,
             gap_tol: float, feas_tol: float) -> ForcedStages:
    """`forced_certificate` of every stage, reading only the stages up to the last job that
    runs when the workers are then all in use (the usual FIFO round: more gangs than workers).

    A later stage has room 0 on every type (each ``cap - used <= 0``, ``x = 0`` after), so its
    knapsack's closed-form dual is ``mu = 0``, ``lambda = a``, its bound and value 0: the
    certificate's sums are those of the head, and a type that no head stage limits gets its
    price from the first later stage that can use it (``a / s``, as `forced_certificate` would
    read it). Otherwise every stage is read."""
    residual = _residual(xr, s, c)
    ran = xr[order].any(axis=1)
    head = int(np.flatnonzero(ran)[-1]) + 1 if ran.any() else order.size
    if head < order.size:
        first = order[:head]
        full = (np.cumsum(s[first, None] * xr[first], axis=0)[-1] >= c).all()
        if full:
            forced = forced_certificate(A, s, c, first, xr, residual, gap_tol, feas_tol)
            tail = order[head:]
            at = A[tail]
            can = at > 0.0
            m = np.argmax(can, axis=0)
            cols = np.arange(A.shape[1])
            later = np.where(can.any(axis=0), at[m, cols] / s[tail][m], 0.0)
            prices = np.where(forced.prices > 0.0, forced.prices, later)
            return ForcedStages(forced.certificate, np.concatenate(
                (forced.bounds, np.zeros(tail.size))), prices)
    return forced_certificate(A, s, c, order, xr, residual, gap_tol, feas_tol)


def fifo_round(throughputs: Mapping[Hashable, Any], scale_factors: Any, cluster_spec: Any,
               settings: Mapping[str, Any]) -> RoundResult | None:
    """The certified FIFO round (arrival order: sorted job ids) by the greedy fill, or
    ``None`` where `fairalloc.RoundPolicy` must solve it (module docstring)."""
    t0 = time.perf_counter()
    if set(settings) - _SETTINGS or not throughputs:
        return None
    read = _read(throughputs, scale_factors, cluster_spec)
    if read is None:
        return None
    ids, types, T, sf, cap = read
    n, k = T.shape
    present = cap > 0
    allowed = (T > 0) & (sf[:, None] <= cap[None, :]) & present[None, :]
    runnable = allowed.any(axis=1)
    rj, pt = np.flatnonzero(runnable), np.flatnonzero(present)
    if rj.size == 0:
        return None
    try:  # arrival order: sorted job ids (Gavel's); ids that do not sort keep their order
        rank = sorted(range(n), key=ids.__getitem__)
    except TypeError:
        rank = list(range(n))
    pos = np.full(n, -1)
    pos[rj] = np.arange(rj.size)
    order = pos[np.asarray(rank, dtype=int)]
    order = order[order >= 0]
    Tr = np.where(allowed, T, 0.0)[np.ix_(rj, pt)]
    s, c = sf[rj], cap[pt]
    fastest = Tr.max(axis=1)
    A = Tr / fastest[:, None]
    stop, xr = forced_prefix(A, s, c, order)
    if stop < rj.size:
        return None  # a tie: the LP stages decide the rest
    gap_tol = float(settings.get("gap_tol", GAP_TOL))
    feas_tol = float(settings.get("feas_tol", FEAS_TOL))
    forced = _certify(A, s, c, order, xr, gap_tol, feas_tol)
    cert = forced.certificate
    if not cert.ok:
        return None
    tp_r = np.einsum("ij,ij->i", Tr, xr)
    stats = SolveStats(backend="none", method="fast", seconds=time.perf_counter() - t0,
                       iterations=0, solves=0, path=(f"{FIFO_GREEDY}:{rj.size}",))
    reduced = Allocation(objective=cert.primal_value, status=Status.OPTIMAL, stats=stats,
                         certificate=cert, allocation=xr, prices=forced.prices,
                         effective_throughput=tp_r, metric=tp_r / fastest, policy="fifo",
                         job_ids=tuple(range(rj.size)), types=tuple(types[j] for j in pt),
                         pair_x=None, consolidated_x=None, utilization=(s @ xr) / c,
                         stage_certificates=(cert,))
    x = np.zeros((n, k))
    x[np.ix_(rj, pt)] = xr
    prices = np.zeros(k)
    prices[pt] = forced.prices
    tp = np.zeros(n)
    tp[rj] = tp_r
    drained = tuple(t for t, p in zip(types, present.tolist()) if not p)
    unrunnable = tuple(ids[i] for i in np.flatnonzero(~runnable).tolist())
    return RoundResult(objective=cert.primal_value, status=Status.OPTIMAL, stats=stats,
                       certificate=cert, x=x, prices=prices, effective_throughput=tp,
                       job_ids=tuple(ids), types=types, drained_types=drained,
                       unrunnable_jobs=unrunnable, policy="fifo", reduced=reduced)
