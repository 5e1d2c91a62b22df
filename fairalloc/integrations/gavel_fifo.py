"""FIFO through the Gavel adapter without building a program: the greedy fill, certified.

Gavel's ``fifo_perf`` in arrival order (sorted job ids) is fairalloc's FIFO with
``semantics="arrival"`` (`fairalloc.throughput.FIFO`): while every job's stage optimum is
unique, each job in turn fills its fastest types with what the earlier jobs left
(`fairalloc.throughput.ordering.forced_prefix`), and the knapsacks' closed-form duals certify
it (`fairalloc.throughput.ordering.forced_certificate`, ``kind="fifo-knapsack"``). That is
the whole answer of `fairalloc.RoundPolicy` on such a round, so `fifo_round` computes
it straight from Gavel's dicts, in plain Python (`fifo_fill`): flat C-level passes to
validate every rate, gang and worker count, then job by job in arrival order the greedy fill
and each stage's closed-form certificate, stopping once every worker is in use (the later
stages have room 0, bound and value 0; their rates are read only to price a type no earlier
stage prices), with no column instance, stage solver, LP or numpy call. The adapter returns
``fill.allocation()`` (Gavel's dict) and builds the `fairalloc.RoundResult` (`fifo_result`:
arrays, facts, the reduced `fairalloc.Allocation`) only when ``last_result`` is read.
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
import math
import operator
import time
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from ..results import Certificate, SolveStats, Status
from ..rounds import RoundResult
from ..throughput.ordering import (
    FIFO_GREEDY,
    FIFO_KNAPSACK,
    _tied,
)
from ..throughput.policy import Allocation
from ..tolerances import FEAS_TOL, GAP_TOL

__all__ = ["fifo_fill", "fifo_result", "fifo_round"]

#: RoundPolicy settings the greedy path honours (others: the exact path)
_SETTINGS = frozenset(("gap_tol", "feas_tol", "backend"))
_NUMBERS = frozenset((int, float, np.int64, np.float64))  # (bool: the exact path)
_INTS = frozenset((int, np.int64))


def _validate(throughputs: Mapping[Hashable, Any], scale_factors: Any, cluster_spec: Any
              ) -> tuple[list[Hashable], list[tuple], tuple[str, ...], list[Any], list[Any]
                         ] | None:
    """``(ids, rates, types, sfl, capl)`` when every input is one the greedy path takes (each
    rate a finite non-negative number on a listed type, each gang a whole number >= 1, each
    count a whole number >= 0), else ``None`` (the exact path reads them and names the
    argument and the job). ``rates[i]``: job ``i``'s rates on ``types`` (0 where its dict
    has none). Flat passes over every rate, in C: no Python loop per job."""
    if not (isinstance(scale_factors, Mapping) and isinstance(cluster_spec, Mapping)):
        return None
    ids = list(throughputs)
    rows = list(throughputs.values())
    types = tuple(cluster_spec)
    if not (set(map(type, rows)) <= {dict} and set(map(type, types)) <= {str}) or not types:
        return None
    try:  # every row lists every type (Gavel's): one C pass, a tuple per job
        rates = list(map(operator.itemgetter(*types), rows)) if len(types) > 1 else \
            list(zip(map(operator.itemgetter(types[0]), rows)))
        listed = sum(map(len, rows)) == len(rows) * len(types)
    except KeyError:  # a row without some type: 0 there
        zeros = [0.0] * len(types)
        rates = [tuple(map(r.get, types, zeros)) for r in rows]
        listed = set(types).issuperset(itertools.chain.from_iterable(rows))
    if not listed:
        return None  # a type the spec does not list: the exact path (drained there)
    if len(scale_factors) == len(ids) and all(map(operator.is_, scale_factors, ids)):
        sfl = list(scale_factors.values())  # the same key objects in the same order (Gavel's
        # dicts, built from one job list): no lookup, so no Python-level ``__hash__`` per job
    else:
        try:
            sfl = list(map(scale_factors.__getitem__, ids))
        except (KeyError, TypeError):
            return None
    capl = list(cluster_spec.values())
    flat = list(itertools.chain.from_iterable(rates))
    gangs, counts = set(map(type, sfl)), set(map(type, capl))
    if not (set(map(type, flat)) | gangs | counts) <= _NUMBERS:
        return None
    total = sum(flat)  # NaN or inf when a rate is (or the sum overflows: the exact path)
    if not (total == total and total != math.inf and min(flat) >= 0.0):
        return None
    if not (_whole(sfl, gangs) and _whole(capl, counts) and min(sfl) >= 1 and min(capl) >= 0):
        return None
    return ids, rates, types, sfl, capl


def _whole(values: list[Any], kinds: set[type]) -> bool:
    """Whether every number of ``values`` (of the types ``kinds``) is a whole number."""
    if kinds <= _INTS:
        return True
    try:
        return all(map(float.is_integer, values if kinds == {float} else map(float, values)))
    except OverflowError:  # (an int beyond the float range: the exact path)
        return False


def _opened(spare: list[float]) -> tuple[list[int], Any]:
    """The types with spare workers and a function giving a job's rates on them (a
    tuple)."""
    opened = [j for j, w in enumerate(spare) if w > 0.0]
    if len(opened) > 1:
        return opened, operator.itemgetter(*opened)
    if opened:
        only = opened[0]
        return opened, lambda a: (a[only],)
    return [], None  # (no spare worker: the fill ends)


class _Fill:
    """The greedy fill of one round and its closed-form certificate (`_fill`): the jobs in
    arrival order as far as the fill needs, in plain Python. ``ones``: ``(job, present type)``
    of every job decided that runs all its time on one type; ``head``: ``(job, x row over the
    present types)`` of every other runnable job decided (``x`` 0 for every other job);
    ``prices`` per present type."""

    __slots__ = ("ids", "rates", "types", "sfl", "capl", "head", "ones", "cert", "prices",
                 "seconds")
    ids: list[Hashable]
    rates: list[tuple]
    types: tuple[str, ...]
    sfl: list[Any]
    capl: list[Any]
    head: list[tuple[int, list[float]]]
    ones: list[tuple[int, int]]
    cert: Certificate
    prices: list[float]
    seconds: float

    def allocation(self) -> dict[Hashable, dict[str, float]]:
        """Gavel's ``{job_id: {worker_type: fraction}}`` (every job and type, zeros
        included; a new dict per job)."""
        zero = dict.fromkeys(self.types, 0.0)
        rows = list(map(dict.copy, itertools.repeat(zero, len(self.ids))))
        ptypes = [t for t, c in zip(self.types, self.capl) if c > 0]
        for i, j in self.ones:
            rows[i][ptypes[j]] = 1.0
        for i, xrow in self.head:
            rows[i].update(zip(ptypes, xrow))
        return dict(zip(self.ids, rows))


def _fill(ids: list[Hashable], rates: list[tuple], types: tuple[str, ...], sfl: list[Any],
          capl: list[Any], gap_tol: float, feas_tol: float) -> _Fill | None:
    """FIFO's arrival-order stages by the greedy fill (`forced_prefix`'s one-by-one pass) and
    their closed-form certificate (`forced_certificate`), job by job in plain Python. Once
    every worker is in use (by the certificate's own sums too) every later stage has room 0
    on every type, so its knapsack's dual is ``mu = 0``, ``lambda = a``, bound and value 0:
    the later jobs are read only to price a type no earlier stage prices (``a / s`` of the
    first that can use it, as `forced_certificate` reads it). A job that takes all its time
    on its one fastest type with spare workers (at least its gang) is decided in a few steps
    (its stage's dual: ``mu`` its rate, ``lambda`` 0 but on the faster, full types). ``None``:
    a tie (the LP stages decide), no runnable job, or a certificate that does not pass."""
    n = len(ids)
    keys: list[Any] = ids
    try:  # arrival order: sorted job ids (Gavel's); ids that do not sort keep their order
        order: Any = range(n) if all(map(operator.lt, keys, keys[1:])) else \
            sorted(range(n), key=keys.__getitem__)  # (in order already: no key per id)
    except TypeError:
        order = range(n)
    pidx = [j for j, c in enumerate(capl) if c > 0]
    pcap = [float(capl[j]) for j in pidx]
    kp = len(pidx)
    if not kp:
        return None  # no worker: no job can run
    # each job's rates on the present types (its own tuple when every type is present)
    pick = None if kp == len(types) else (
        operator.itemgetter(*pidx) if kp > 1 else lambda r: (r[pidx[0]],))
    least = min(pcap)
    cols = range(kp)
    zeros = [0.0] * kp
    spare = pcap.copy()  # the fill's own spare workers
    cum = zeros.copy()  # the certificate's: workers the jobs so far use, recomputed from x
    prices = zeros.copy()
    fits: dict[float, Any] = {}  # per gang: the types it fits (None: all)
    sff = list(map(float, sfl))
    head: list[tuple[int, list[float]]] = []  # (job, x over the present types)
    ones: list[tuple[int, int]] = []  # (job, present type): x = 1 there, 0 elsewhere
    bound_sum = value_sum = gap = worst = x_hi = 0.0
    x_lo = 0.0
    filling, pos = True, n
    sealed = True  # every type without spare workers is full by the certificate's sums
    opened, open_rates = _opened(spare)  # the types with spare workers; a job's rates there
    for p, i in enumerate(order):
        if filling and not opened:  # (no spare worker)
            if all(map(operator.ge, cum, pcap)):
                pos = p  # every later stage: room 0, bound and value 0 (docstring)
                break
            filling = False  # (rounding left room by the certificate's sums: read them all)
        s = sff[i]
        fit = fits.get(s, fits)
        if fit is fits:
            fit = fits[s] = None if s <= least else [c >= s for c in pcap]
        a = rates[i] if pick is None else pick(rates[i])  # (rates: finite, >= 0)
        if fit is not None:
            a = [v if f else 0.0 for v, f in zip(a, fit)]
        fastest = max(a)
        if fastest <= 0.0:
            continue  # unrunnable: not a stage
        if filling:
            top = a.index(fastest)
            if spare[top] > 0.0 and a.count(fastest) == 1:
                best, unique = fastest, True  # (usual: the fastest type has spare workers)
            else:  # the fastest type with spare workers, if only one is that fast
                avail = open_rates(a)
                best = max(avail)
                top = opened[avail.index(best)]
                unique = avail.count(best) == 1
            if (best > 0.0 and unique and spare[top] >= s
                    and pcap[top] - ((cum[top] + s) - s) >= s  # (room >= 1 below)
                    and (best == fastest or sealed)):
                # the usual job: all its time on its one fastest type with spare workers,
                # at least its gang (the general steps below give exactly this: x = 1 there,
                # no tie; the knapsack dual mu = its rate, lambda > 0 only on the faster
                # types, which have no spare worker: room 0 by the certificate's sums too
                # when ``sealed``, so bound = value = mu)
                mu = best / fastest
                if best != fastest:
                    for j in cols:
                        if a[j] > best and prices[j] == 0.0:
                            prices[j] = (a[j] / fastest - mu) / s
                spare[top] -= s  # (0 exactly when the job uses the type up)
                cum[top] += s
                if spare[top] <= 0.0:
                    sealed = sealed and cum[top] >= pcap[top]
                    opened, open_rates = _opened(spare)
                ones.append((i, top))
                bound_sum += mu
                value_sum += mu
                continue
        a = [v / fastest for v in a]
        x = zeros.copy()
        if filling:
            use = sorted((j for j in cols if a[j] > 0.0 and spare[j] > 0.0),
                         key=a.__getitem__, reverse=True)
            left = 1.0
            room = [0.0] * len(use)
            take = room.copy()
            for q, j in enumerate(use):
                u = spare[j] / s
                if left <= 0.0:
                    room[q] = u
                elif u <= left:  # the type is used up (exactly: no rounding remainder)
                    take[q], left, spare[j] = u, left - u, 0.0
                else:  # the job's time is used up
                    take[q], left = left, 0.0
                    room[q] = u - take[q]
                    spare[j] = max(spare[j] - take[q] * s, 0.0)
            if len({a[j] for j in use}) < len(use) and _tied(use, take, room, a):
                return None  # two equally fast types could trade time: the LP stages
            for q, j in enumerate(use):
                x[j] = take[q]
            head.append((i, x))
        # the stage's knapsack dual in closed form, from the data and x (`forced_certificate`)
        used = [s * v for v in x]
        cum = list(map(operator.add, cum, used))
        before = map(operator.sub, cum, used)
        room_c = [max(c - b, 0.0) / s if v > 0 else 0.0 for c, b, v in zip(pcap, before, a)]
        mu = acc = 0.0
        for j in sorted(cols, key=a.__getitem__, reverse=True):
            acc += room_c[j]
            if acc >= 1.0:
                mu = a[j]
                break
        lam = [max(v - mu, 0.0) for v in a]
        bound = mu + sum(map(operator.mul, room_c, lam))
        value = sum(map(operator.mul, a, x))
        bound_sum += bound
        value_sum += value
        gap += max(bound - value, 0.0)
        t = sum(x)
        worst = max(worst, max(t - 1.0, 0.0) / max(t, 1.0))
        x_hi, x_lo = max(x_hi, *x), min(x_lo, *x)
        for j in cols:
            if prices[j] == 0.0 and lam[j] > 0.0:
                prices[j] = lam[j] / s  # the earliest stage the type limits: its dual
        if filling:  # (this step may use types up)
            sealed = all(c >= w for c, w, r in zip(cum, pcap, spare) if r <= 0.0)
            opened, open_rates = _opened(spare)
    if not (ones or head):  # (a job takes workers before every one is in use)
        return None
    if ones:
        x_hi = max(x_hi, 1.0)
    if pos < n:  # types no stage priced: the first later stage that can use them
        need = [j for j in cols if prices[j] == 0.0]
        for i in order[pos:]:
            if not need:
                break
            s = sff[i]
            fit = fits.get(s, fits)
            if fit is fits:
                fit = fits[s] = None if s <= least else [c >= s for c in pcap]
            a = rates[i] if pick is None else pick(rates[i])
            if fit is not None:
                a = [v if f else 0.0 for v, f in zip(a, fit)]
            fastest = max(a)
            if fastest > 0.0:
                for j in [j for j in need if a[j] > 0.0]:
                    prices[j] = a[j] / fastest / s
                    need.remove(j)
    for u, c in zip(cum, pcap):
        if u > c:
            worst = max(worst, (u - c) / max(u, c))
    top = max(x_hi, 1.0)
    residual = max(worst, max(-x_lo, x_hi - 1.0) / top)
    cert = Certificate(kind=FIFO_KNAPSACK, primal_value=value_sum, dual_bound=bound_sum,
                       gap=gap, primal_residual=residual, dual_residual=0.0, gap_tol=gap_tol,
                       feas_tol=feas_tol, scale=1.0)
    if not cert.ok:
        return None
    out = _Fill()
    out.ids, out.rates, out.types, out.sfl, out.capl = ids, rates, types, sfl, capl
    out.head, out.ones, out.cert, out.prices, out.seconds = head, ones, cert, prices, 0.0
    return out


def fifo_fill(throughputs: Mapping[Hashable, Any], scale_factors: Any, cluster_spec: Any,
              settings: Mapping[str, Any]) -> _Fill | None:
    """The certified FIFO round's fill (`_Fill`: Gavel's dict by ``allocation()``, the
    `fairalloc.RoundResult` by `fifo_result`), or ``None`` where `fairalloc.RoundPolicy` must
    solve it (module docstring)."""
    t0 = time.perf_counter()
    if set(settings) - _SETTINGS or not throughputs:
        return None
    read = _validate(throughputs, scale_factors, cluster_spec)
    if read is None:
        return None
    fill = _fill(*read, float(settings.get("gap_tol", GAP_TOL)),
                 float(settings.get("feas_tol", FEAS_TOL)))
    if fill is not None:
        fill.seconds = time.perf_counter() - t0
    return fill


def fifo_round(throughputs: Mapping[Hashable, Any], scale_factors: Any, cluster_spec: Any,
               settings: Mapping[str, Any]) -> RoundResult | None:
    """The certified FIFO round (arrival order: sorted job ids) by the greedy fill, or
    ``None`` where `fairalloc.RoundPolicy` must solve it (module docstring)."""
    fill = fifo_fill(throughputs, scale_factors, cluster_spec, settings)
    return None if fill is None else fifo_result(fill)


def fifo_result(fill: _Fill) -> RoundResult:
    """The fill as a `fairalloc.RoundResult` (arrays, facts and the reduced program's
    `fairalloc.Allocation`)."""
    ids, types, cert = fill.ids, fill.types, fill.cert
    n, k = len(ids), len(types)
    T = np.array(fill.rates, dtype=float).reshape(n, k)
    sf = np.array(fill.sfl, dtype=np.float64)
    cap = np.array(fill.capl, dtype=np.float64)
    present = cap > 0
    allowed = (T > 0) & (sf[:, None] <= cap[None, :]) & present[None, :]
    runnable = allowed.any(axis=1)
    rj, pt = np.flatnonzero(runnable), np.flatnonzero(present)
    x = np.zeros((n, k))
    if fill.head:
        done = np.array([i for i, _ in fill.head])
        x[np.ix_(done, pt)] = [xrow for _, xrow in fill.head]
    if fill.ones:
        jobs, cols = np.array(fill.ones).T
        x[jobs, pt[cols]] = 1.0
    xr = x[np.ix_(rj, pt)]
    Tr = np.where(allowed, T, 0.0)[np.ix_(rj, pt)]
    fastest = Tr.max(axis=1)
    tp_r = np.einsum("ij,ij->i", Tr, xr)
    stats = SolveStats(backend="none", method="fast", seconds=fill.seconds, iterations=0,
                       solves=0, path=(f"{FIFO_GREEDY}:{rj.size}",))
    prices_r = np.array(fill.prices, dtype=np.float64)
    reduced = Allocation(objective=cert.primal_value, status=Status.OPTIMAL, stats=stats,
                         certificate=cert, allocation=xr, prices=prices_r,
                         effective_throughput=tp_r, metric=tp_r / fastest, policy="fifo",
                         job_ids=tuple(range(rj.size)), types=tuple(types[j] for j in pt),
                         pair_x=None, consolidated_x=None, utilization=(sf[rj] @ xr) / cap[pt],
                         stage_certificates=(cert,))
    prices = np.zeros(k)
    prices[pt] = prices_r
    tp = np.zeros(n)
    tp[rj] = tp_r
    drained = tuple(t for t, p in zip(types, present.tolist()) if not p)
    unrunnable = tuple(ids[i] for i in np.flatnonzero(~runnable).tolist())
    return RoundResult(objective=cert.primal_value, status=Status.OPTIMAL, stats=stats,
                       certificate=cert, x=x, prices=prices, effective_throughput=tp,
                       job_ids=tuple(ids), types=types, drained_types=drained,
                       unrunnable_jobs=unrunnable, policy="fifo", reduced=reduced)
