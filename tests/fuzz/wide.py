"""Case classes of issue #27 (point 7): valid instances on which fairalloc owes an answer.

Every strategy here draws *valid* cases only (each ends with ``finish``, so a case carries
``VALID``; a doubt is recorded only where an option may legitimately prevent an answer), so
that a ``SolverError`` / ``CertificateError`` / ``InfeasibleError`` is the failure
``no_answer`` (``tests/fuzz/core.py``):

* ``fifo (wide range)`` -- arrival order with ties (``elapsed`` or ``order=`` drawn from a few
  values), gangs, types with 1-8 workers, throughputs spanning 1e-4..1e4 with zeros, the whole
  table x1e-6 / x1e6; checked as the lexicographic LP in arrival order (``checks.py``).
* ``min_makespan (wide range)`` -- the same instances with steps, often a single type, x1e-6;
  checked against the makespan LP.
* ``water_filling (entities)`` -- entities with fairness / FIFO policies, entity and job
  weights, up to 10 types, zeros; checked by the first level LP and a Pareto LP (every job
  ends bottlenecked). Also ``max_min_fairness(water_filling=True)``.
* ``cvxpy: throughput`` / ``cvxpy: markets`` -- ``method="cvxpy"`` on every entry point that
  accepts it (throughput policies and builders, FIFO with ``semantics="objective"``, markets,
  the round API and the Gavel adapter), checked like their exact paths.
* ``FisherMarket.solve (binding caps)`` / ``ThroughputPolicy.solve (binding caps)`` -- composed
  models with added constraints ``x[i, j] <= cap`` that bind (small caps); checked against the
  capped program solved independently (cvxpy + Clarabel for markets, linprog for LPs).
* ``solve_round (mixed types)`` / ``RoundPolicy.allocate (mixed types)`` / ``gavel adapter`` --
  dicts by job id with mixed Python types (int, float, numpy scalars), job ids of mixed types
  and Gavel-like :class:`JobIdPair` keys with their own ``__hash__`` / ``__eq__``, drained types
  (0 workers, or named by a job and absent from the cluster), unrunnable jobs; checked on the
  reduced program built independently from the dicts.
"""

from __future__ import annotations

import types as _types
from collections.abc import Hashable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from . import checks as C
from .core import Ctx, Wrong, short_repr
from .strategies import chance, choose, finish, pick, rng_from
from .targets import _fa, _kw, _via_registry, register

#: most jobs / types in a wide-range instance (the tester's instances had <= 30 jobs)
MAX_JOBS = 30
MAX_TYPES = 8
WF_MAX_TYPES = 10
#: share of the long profile's examples of each case class here (1: an ordinary target); the
#: classes of issue #27 get more, since the tester found 246 failures in ~14k instances
WIDE_WEIGHT = 4.0
#: the whole throughput table is multiplied by one of these (issue #27: x1e-6 throughputs)
TABLE_SCALES = (1e-6, 1.0, 1.0, 1e6)


# --------------------------------------------------------------------------------------------
# Gavel's job ids
# --------------------------------------------------------------------------------------------
class JobIdPair:
    """A job id as Gavel's scheduler passes it (``scheduler/job_id_pair.py``): one job or a
    pair, hashed and compared by its members, ordered by them; ``is_pair`` / ``singletons``."""

    def __init__(self, job0: Any, job1: Any = None) -> None:
        self._job0, self._job1 = job0, job1

    def is_pair(self) -> bool:
        return self._job1 is not None

    def singletons(self) -> tuple[JobIdPair, JobIdPair]:
        return JobIdPair(self._job0), JobIdPair(self._job1)

    def __hash__(self) -> int:
        return hash((self._job0, self._job1))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobIdPair) and (self._job0, self._job1) == (other._job0,
                                                                             other._job1)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, JobIdPair):
            return NotImplemented
        return (self._job0, -1 if self._job1 is None else self._job1) < \
            (other._job0, -1 if other._job1 is None else other._job1)

    def __repr__(self) -> str:
        return f"JobIdPair({self._job0!r}, {self._job1!r})"


# --------------------------------------------------------------------------------------------
# wide-range instances
# --------------------------------------------------------------------------------------------
def wide_table(draw: Any, rng: np.random.Generator, *, max_jobs: int = MAX_JOBS,
               max_types: int = MAX_TYPES, single_type: float = 0.15
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(T (n, k), workers (k,), scale factors (n,)): throughputs 10^U(-4, 4) with zeros, the
    table x1e-6 / x1 / x1e6, types with 1-8 workers, gangs of 1-8 that fit on a type where
    the job runs (so every job can run: a valid instance for the direct API)."""
    n = pick(draw, range(1, max_jobs + 1))
    k = 1 if chance(draw, single_type) else pick(draw, range(1, max_types + 1))
    T = 10.0 ** rng.uniform(-4, 4, (n, k))
    if k > 1:
        T = np.where(rng.random((n, k)) < pick(draw, [0.6, 0.8, 1.0]), T, 0.0)
    for i in np.flatnonzero(T.max(axis=1) <= 0):
        T[i, rng.integers(k)] = 10.0 ** rng.uniform(-4, 4)
    if chance(draw, 0.3):  # tied rows: identical jobs
        T[rng.integers(n, size=n // 2)] = T[0]
    T = T * pick(draw, TABLE_SCALES)
    workers = rng.integers(1, 9, k)
    # a gang fits on the largest type the job runs on
    room = np.where(T > 0, workers[None, :], 0).max(axis=1)
    sf = np.minimum(rng.choice([1, 1, 1, 2, 4, 8], n), room) if chance(draw, 0.6) \
        else np.ones(n, dtype=int)
    return T, workers, sf


def tied(draw: Any, rng: np.random.Generator, n: int) -> np.ndarray:
    """Arrival data with ties: a few distinct values."""
    return rng.choice(np.array(pick(draw, [[0.0, 10.0], [0.0, 10.0, 100.0], [5.0]])), n)


def _exact_options(draw: Any, cvxpy: bool = False) -> dict:
    """Valid solve options of the throughput policies (no time limit, default tolerances)."""
    kw = {"method": choose(draw, ["auto"] * 4 + ["highs", "fast"] + (["cvxpy"] if cvxpy else
                                                                     []))}
    # a cvxpy program is certified through Clarabel (documented: highs is an InputError)
    backend = pick(draw, [None, None, "clarabel"] + ([] if kw["method"] == "cvxpy" else
                                                      ["highs"]))
    if backend is not None:
        kw["backend"] = backend
    if chance(draw, 0.2):
        kw["gap_tol"] = pick(draw, [1e-4, 1e-6])
    return kw


# --------------------------------------------------------------------------------------------
# FIFO and min_makespan over a wide range
# --------------------------------------------------------------------------------------------
@st.composite
def wide_gavel_cases(draw: Any, policy: str) -> dict:
    rng = rng_from(draw)
    T, workers, sf = wide_table(draw, rng, single_type=0.4 if policy == "min_makespan"
                                else 0.15)
    n = T.shape[0]
    case: dict = {"throughput": T, "scale_factor": sf,
                  "workers": {f"t{j}": int(c) for j, c in enumerate(workers)},
                  "steps_remaining": None, "elapsed": None, "weight": None, "order": None}
    if policy == "fifo":
        if chance(draw, 0.5):
            case["elapsed"] = tied(draw, rng, n)
        else:
            case["order"] = tied(draw, rng, n)
        case["kw"] = _exact_options(draw)
        if chance(draw, 0.2):  # the paper's weighted objective: one LP (also via cvxpy)
            case["kw"]["semantics"] = "objective"
            case["kw"]["method"] = pick(draw, ["auto", "highs", "cvxpy"])
            if case["kw"]["method"] == "cvxpy":
                case["kw"].pop("backend", None)
    else:
        case["steps_remaining"] = 10.0 ** rng.uniform(2, 6, n) * pick(draw, [1.0, 1e-6, 1e6])
        case["kw"] = _exact_options(draw, cvxpy=True)
    return finish(draw, case)


def _jobs(case: dict, ctx: Ctx | None = None) -> tuple[Any, Any]:
    fa = _fa()
    jobs = fa.Jobs(case["throughput"], scale_factor=case["scale_factor"],
                   weight=case.get("weight"), steps_remaining=case.get("steps_remaining"),
                   elapsed=case.get("elapsed"))
    cluster = fa.Cluster(case["workers"])
    if ctx is not None:
        ctx.watch("jobs", jobs)
        ctx.watch("cluster", cluster)
    return jobs, cluster


def _g(case: dict) -> C.Gavel:
    return C.Gavel(case["throughput"], case["scale_factor"], case.get("weight"),
                   list(case["workers"].values()), case.get("steps_remaining"),
                   case.get("elapsed"))


def _render_gavel(fn: str) -> Any:
    def render(c: dict) -> str:
        jk = {k: c[k] for k in ("scale_factor", "weight", "steps_remaining", "elapsed")
              if c.get(k) is not None}
        extra = {"order": c["order"]} if c.get("order") is not None else {}
        return (f"fa.{fn}(fa.Jobs({short_repr(c['throughput'], 20000)}, {_kw(jk)}), "
                f"fa.Cluster({c['workers']!r}), {_kw({**extra, **c['kw']})})")
    return render


def _call_wide_fifo(case: dict, ctx: Ctx) -> Any:
    jobs, cluster = _jobs(case, ctx)
    order = {} if case["order"] is None else {"order": case["order"]}
    return _fa().fifo(jobs, cluster, **order, **case["kw"])


def _check_wide_fifo(case: dict, r: Any) -> None:
    pol = "fifo_objective" if case["kw"].get("semantics") == "objective" else "fifo"
    C.check_allocation(_g(case), r, pol, order=case["order"])


def _call_wide_makespan(case: dict, ctx: Ctx) -> Any:
    jobs, cluster = _jobs(case, ctx)
    return _fa().min_makespan(jobs, cluster, **case["kw"])


register("fifo (wide range)", "wide", wide_gavel_cases("fifo"), _call_wide_fifo,
         _check_wide_fifo, _render_gavel("fifo"), weight=WIDE_WEIGHT, always_feasible=True)
register("min_makespan (wide range)", "wide", wide_gavel_cases("min_makespan"),
         _call_wide_makespan,
         lambda c, r: C.check_allocation(_g(c), r, "min_makespan"),
         _render_gavel("min_makespan"), weight=WIDE_WEIGHT, always_feasible=True)


# --------------------------------------------------------------------------------------------
# hierarchical water-filling
# --------------------------------------------------------------------------------------------
@st.composite
def water_filling_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    T, workers, sf = wide_table(draw, rng, max_types=WF_MAX_TYPES)
    n = T.shape[0]
    case: dict = {"throughput": T, "scale_factor": sf,
                  "workers": {f"t{j}": int(c) for j, c in enumerate(workers)},
                  "weight": rng.uniform(0.5, 4.0, n) if chance(draw, 0.5) else None,
                  "steps_remaining": None, "elapsed": tied(draw, rng, n), "order": None}
    case["single_level"] = chance(draw, 0.2)  # max_min_fairness(water_filling=True)
    if not case["single_level"]:
        num = pick(draw, [1, 2, 3, 4])
        labels = [f"e{i}" for i in rng.integers(num, size=n)]
        present = list(dict.fromkeys(labels))
        case["entities"] = labels if chance(draw, 0.85) else None
        case["entity_weights"] = {e: float(rng.choice([0.5, 1.0, 2.0, 3.0]))
                                  for e in present} if chance(draw, 0.7) else None
        case["entity_policies"] = {e: pick(draw, ["fairness", "fifo"]) for e in present} \
            if chance(draw, 0.7) else None
        if case["entities"] is None:
            case["entity_weights"] = case["entity_policies"] = None
        if chance(draw, 0.3):
            case["order"] = tied(draw, rng, n)
    kw = _exact_options(draw)
    case["kw"] = kw
    return finish(draw, case)


def _wf_kw(case: dict) -> dict:
    return {k: case[k] for k in ("entities", "entity_weights", "entity_policies", "order")
            if case.get(k) is not None}


def _call_water_filling(case: dict, ctx: Ctx) -> Any:
    jobs, cluster = _jobs(case, ctx)
    if case["single_level"]:
        return _fa().max_min_fairness(jobs, cluster, water_filling=True, **case["kw"])
    return _fa().water_filling(jobs, cluster, **_wf_kw(case), **case["kw"])


def _check_water_filling(case: dict, r: Any) -> None:
    C.check_water_filling(_g(case), r, single_level=case["single_level"], **_wf_kw(case))


def _render_wf(c: dict) -> str:
    jk = {k: c[k] for k in ("scale_factor", "weight", "elapsed") if c.get(k) is not None}
    head = f"fa.Jobs({short_repr(c['throughput'], 20000)}, {_kw(jk)}), " \
           f"fa.Cluster({c['workers']!r})"
    if c["single_level"]:
        return f"fa.max_min_fairness({head}, water_filling=True, {_kw(c['kw'])})"
    return f"fa.water_filling({head}, {_kw({**_wf_kw(c), **c['kw']})})"


register("water_filling (entities)", "wide", water_filling_cases(), _call_water_filling,
         _check_water_filling, _render_wf, weight=WIDE_WEIGHT, always_feasible=True)


# --------------------------------------------------------------------------------------------
# method="cvxpy" on every throughput entry point that takes it
# --------------------------------------------------------------------------------------------
CVXPY_POLICIES = ("max_min_fairness", "min_makespan", "finish_time_fairness",
                  "max_total_throughput", "shortest_job_first", "fifo")
_BUILDERS = {"max_min_fairness": "MaxMinFairness", "min_makespan": "MinMakespan",
             "finish_time_fairness": "FinishTimeFairness",
             "max_total_throughput": "MaxTotalThroughput",
             "shortest_job_first": "ShortestJobFirst", "fifo": "FIFO"}


@st.composite
def cvxpy_throughput_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    policy = pick(draw, CVXPY_POLICIES)
    T, workers, sf = wide_table(draw, rng, max_jobs=12, max_types=4)
    n = T.shape[0]
    case: dict = {"policy": policy, "throughput": T, "scale_factor": sf,
                  "workers": {f"t{j}": int(c) for j, c in enumerate(workers)},
                  "weight": rng.uniform(0.5, 3.0, n) if chance(draw, 0.4) else None,
                  "steps_remaining": 10.0 ** rng.uniform(2, 5, n) * pick(draw, [1.0, 1e-6, 1e6]),
                  "elapsed": rng.uniform(0, 1000, n) if chance(draw, 0.5) else None,
                  "order": None}
    case["via"] = pick(draw, ["function", "function", "builder", "solve_round", "RoundPolicy"])
    case["kw"] = {"method": "cvxpy", "backend": pick(draw, [None, "clarabel"])}
    if policy == "fifo":
        case["semantics"] = "objective"  # arrival order is a sequence of LPs (documented)
    return finish(draw, case)


def _call_cvxpy_throughput(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    pol, via = case["policy"], case["via"]
    kw = {k: v for k, v in case["kw"].items() if v is not None}
    extra = {"semantics": case["semantics"]} if "semantics" in case else {}
    if via in ("solve_round", "RoundPolicy"):
        names = list(case["workers"])
        T = case["throughput"]
        tp = {i: {names[j]: float(T[i, j]) for j in range(T.shape[1])}
              for i in range(T.shape[0])}
        per = {k: case[k] for k in ("scale_factor", "weight", "steps_remaining", "elapsed")
               if case[k] is not None}
        if via == "solve_round":
            return fa.solve_round(pol, tp, case["workers"], **per, **extra, **kw)
        return fa.RoundPolicy(pol, **extra, **kw).allocate(tp, case["workers"], **per)
    jobs, cluster = _jobs(case, ctx)
    if via == "builder":
        return getattr(fa, _BUILDERS[pol])(jobs, cluster, **extra).solve(**kw)
    return getattr(fa, pol)(jobs, cluster, **extra, **kw)


def _check_cvxpy_throughput(case: dict, r: Any) -> None:
    pol = "fifo_objective" if case["policy"] == "fifo" else case["policy"]
    res = r.reduced if hasattr(r, "reduced") else r
    if res is None:
        raise Wrong("a round with runnable jobs came back empty")
    C.check_allocation(_g(case), res, pol)


register("cvxpy: throughput", "wide", cvxpy_throughput_cases(), _call_cvxpy_throughput,
         _check_cvxpy_throughput, _via_registry("cvxpy: throughput"), weight=WIDE_WEIGHT,
         always_feasible=True)


# --------------------------------------------------------------------------------------------
# markets: method="cvxpy", and composed with binding caps
# --------------------------------------------------------------------------------------------
@st.composite
def capped_market_cases(draw: Any, cvxpy_only: bool = False) -> dict:
    rng = rng_from(draw)
    n, m = pick(draw, range(1, 8 + 1)), pick(draw, range(1, 5 + 1))
    kind = pick(draw, ["linear", "linear", "leontief"])
    U = 10.0 ** rng.uniform(-4, 4, (n, m))
    if m > 1:
        U = np.where(rng.random((n, m)) < 0.8, U, 0.0)
    for row in np.flatnonzero(U.max(axis=1) <= 0):
        U[row, rng.integers(m)] = 1.0
    U = U * pick(draw, [1.0, 1e-6, 1e6])
    B = rng.uniform(0.5, 2.0, n) * pick(draw, [1.0, 1e-6, 1e6])
    S = rng.uniform(0.5, 4.0, m) * pick(draw, [1.0, 1e6, 3600e6, 1e-6])
    case: dict = {"utility": U, "budget": B, "supply": S, "kind": kind}
    caps = []
    if not cvxpy_only or chance(draw, 0.3):
        for _ in range(pick(draw, [1, 1, 2, 3])):
            i, j = int(rng.integers(n)), int(rng.integers(m))
            if U[i, j] > 0:  # a cap on what the buyer wants: it binds when small
                caps.append((i, j, float(S[j] * 10.0 ** rng.uniform(-9, -1))))
    case["caps"] = caps
    case["solve"] = {"method": "cvxpy" if cvxpy_only else pick(draw, ["auto", "auto",
                                                                       "cvxpy"]),
                     "backend": pick(draw, ["clarabel", None])}
    case["via"] = pick(draw, ["builder", "function"]) if cvxpy_only and not caps \
        else "builder"
    return finish(draw, case)


def _call_capped_market(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    kw = {k: v for k, v in case["solve"].items() if v is not None}
    if case["via"] == "function":
        return fa.fisher_market(case["utility"], case["budget"], case["supply"],
                                kind=case["kind"], **kw)
    mk = fa.FisherMarket(case["utility"], case["budget"], case["supply"], kind=case["kind"])
    for i, j, cap in case["caps"]:
        mk.add_constraint(mk.x[i, j] <= cap)
    return mk.solve(**kw)


def _check_capped_market(case: dict, r: Any) -> None:
    if not case["caps"]:
        C.check_market(case["utility"], case["budget"], case["supply"], case["kind"], r)
        return
    C.check_capped_market(case["utility"], case["budget"], case["supply"], case["kind"],
                          case["caps"], r)


def _render_capped(c: dict) -> str:
    base = {k: c[k] for k in ("utility", "budget", "supply", "kind")}
    kw = _kw({k: v for k, v in c["solve"].items() if v is not None})
    if c["via"] == "function":
        return f"fa.fisher_market({_kw(base)}, {kw})"
    cons = "".join(f"m.add_constraint(m.x[{i}, {j}] <= {cap!r}); " for i, j, cap in c["caps"])
    return f"m = fa.FisherMarket({_kw(base)}); {cons}m.solve({kw})"


register("FisherMarket.solve (binding caps)", "wide", capped_market_cases(),
         _call_capped_market, _check_capped_market, _render_capped, weight=WIDE_WEIGHT,
         always_feasible=True)
register("cvxpy: markets", "wide", capped_market_cases(cvxpy_only=True), _call_capped_market,
         _check_capped_market, _render_capped, weight=WIDE_WEIGHT, always_feasible=True)


@st.composite
def capped_policy_cases(draw: Any) -> dict:
    case = draw(cvxpy_throughput_cases())
    rng = rng_from(draw)
    case["policy"] = pick(draw, ["max_min_fairness", "min_makespan", "max_total_throughput",
                                 "finish_time_fairness", "shortest_job_first"])
    case.pop("semantics", None)
    T = case["throughput"]
    caps = []
    for _ in range(pick(draw, [1, 1, 2, 3])):
        i = int(rng.integers(T.shape[0]))
        j = int(np.argmax(T[i]))  # the job's best type: a small cap binds
        caps.append((i, j, float(10.0 ** rng.uniform(-6, -1))))
    case["caps"] = caps
    case["kw"] = {"method": pick(draw, ["auto", "cvxpy"]), "backend": pick(draw, [None,
                                                                                  "clarabel"])}
    return finish(draw, case)


def _call_capped_policy(case: dict, ctx: Ctx) -> Any:
    jobs, cluster = _jobs(case, ctx)
    b = getattr(_fa(), _BUILDERS[case["policy"]])(jobs, cluster)
    for i, j, cap in case["caps"]:
        b.add_constraint(b.x[i, j] <= cap)
    return b.solve(**{k: v for k, v in case["kw"].items() if v is not None})


register("ThroughputPolicy.solve (binding caps)", "wide", capped_policy_cases(),
         _call_capped_policy,
         lambda c, r: C.check_allocation(_g(c), r, c["policy"], caps=c["caps"]),
         _via_registry("ThroughputPolicy.solve (binding caps)"), weight=WIDE_WEIGHT,
         always_feasible=True)


# --------------------------------------------------------------------------------------------
# the round API and the Gavel adapter with mixed Python types
# --------------------------------------------------------------------------------------------
ROUND_POLICIES = ("max_min_fairness", "max_total_throughput", "fifo", "finish_time_fairness",
                  "min_makespan", "water_filling")


def _mixed_id(rng: np.random.Generator, i: int, adapter: bool) -> Hashable:
    kind = int(rng.integers(5))
    if kind == 0:
        return i
    if kind == 1:
        return f"j{i}"
    if kind == 2:
        return np.int64(1000 + i)
    if kind == 3 and not adapter:  # (a 2-tuple is a job pair to the adapter)
        return ("job", i, 0)
    return JobIdPair(2000 + i)


def _mixed_number(rng: np.random.Generator, v: float) -> Any:
    """``v`` as an int (when integral), float, np.float32, np.float64 or np.int64."""
    kind = int(rng.integers(4))
    if float(v).is_integer() and kind == 0:
        return int(v) if rng.random() < 0.5 else np.int64(int(v))
    return (float(v), np.float32(v), np.float64(v), float(v))[kind]


@st.composite
def mixed_round_cases(draw: Any, adapter: bool = False) -> dict:
    rng = rng_from(draw)
    policy = pick(draw, ROUND_POLICIES)
    T, workers, sf = wide_table(draw, rng, max_types=6)
    n, k = T.shape
    if chance(draw, 0.4):  # small integer rates, as some schedulers keep them
        T = np.where(T > 0, np.maximum(np.round(T / T.max() * 100), 1.0), 0.0)
    names = [f"t{j}" for j in range(k)]
    spec = {t: (int(c) if rng.random() < 0.5 else np.int64(c)) for t, c in zip(names, workers)}
    if k > 1 and chance(draw, 0.4):
        spec[names[int(rng.integers(k))]] = 0                 # drained
    if k > 1 and chance(draw, 0.2):
        del spec[names[-1]]                                   # named by jobs, not listed
    if chance(draw, 0.3):                                      # an unrunnable job
        i = int(rng.integers(n))
        if chance(draw, 0.5):
            T[i] = 0.0
            T[i, 0] = 1.0 if k == 1 else 0.0
        else:
            sf[i] = 99
    ids = [_mixed_id(rng, i, adapter) for i in range(n)]
    tp = {j: {t: _mixed_number(rng, T[i, c]) for c, t in enumerate(names)
              if T[i, c] > 0 or rng.random() < 0.5} for i, j in enumerate(ids)}
    case: dict = {"policy": policy, "throughput": tp, "workers": spec,
                  "scale_factor": {j: (int(sf[i]) if rng.random() < 0.5 else np.int64(sf[i]))
                                   for i, j in enumerate(ids)}}
    if chance(draw, 0.5) or adapter:
        case["weight"] = {j: _mixed_number(rng, float(rng.choice([1.0, 2.0, 0.5, 3.0])))
                          for j in ids}
    if policy in ("min_makespan", "finish_time_fairness"):
        case["steps_remaining"] = {j: _mixed_number(rng, float(rng.integers(100, 10**5)))
                                   for j in ids}
    if policy == "finish_time_fairness":
        case["elapsed"] = {j: _mixed_number(rng, float(rng.integers(0, 1000))) for j in ids}
    if policy == "fifo" and not adapter:
        case["order"] = {j: _mixed_number(rng, float(v)) for j, v in zip(ids, tied(draw, rng,
                                                                                    n))}
    if policy == "water_filling":
        ent = [f"e{e}" for e in rng.integers(pick(draw, [1, 2, 3]), size=n)]
        case["entities"] = dict(zip(ids, ent))
        if chance(draw, 0.5):
            case["entity_weights"] = {e: float(rng.choice([1.0, 2.0])) for e in set(ent)}
        if chance(draw, 0.5) and not adapter:
            case["entity_policies"] = {e: pick(draw, ["fairness", "fifo"]) for e in set(ent)}
    case["next_keep"] = [bool(v) for v in np.asarray(rng.random(n)) < 0.7]
    if adapter and policy == "water_filling" and "entity_policies" in case:
        del case["entity_policies"]
    return finish(draw, case)


_PER_JOB = ("scale_factor", "weight", "steps_remaining", "elapsed", "order", "entities")


def _reference(case: dict, ids: list, types: list, r_x: np.ndarray, res: Any,
               order_ids: list | None = None) -> None:
    """Check one round's allocation ``r_x`` (rows ``ids``, columns ``types``) against the
    reduced program built here from the case's dicts: drained types (0 workers, or absent
    from the workers) and unrunnable jobs (no positive rate on a present type where the gang
    fits) get exactly 0; the rest is checked like the policy on arrays."""
    tp, spec = case["throughput"], case["workers"]
    cap = np.array([float(spec.get(t, 0)) for t in types])
    T = np.array([[float(tp[j].get(t, 0.0)) for t in types] for j in ids]).reshape(
        len(ids), len(types))
    sf = np.array([float(case["scale_factor"][j]) for j in ids])
    present = cap > 0
    runnable = ((T > 0) & (sf[:, None] <= cap[None, :]) & present[None, :]).any(axis=1)
    if np.any(r_x[:, ~present] != 0) or np.any(r_x[~runnable] != 0):
        raise Wrong("a drained type or an unrunnable job got time")
    if not runnable.any() or not present.any():
        if np.any(r_x != 0):
            raise Wrong("an empty round allocated time")
        return
    if res is None:
        raise Wrong("a round with runnable jobs and present types has no reduced result")
    keep = [j for j, ok in zip(ids, np.asarray(runnable, bool).tolist()) if ok]

    def vec(key: str) -> Any:
        v = case.get(key)
        return None if v is None else np.array([float(v[j]) for j in keep])
    g = C.Gavel(T[np.ix_(runnable, present)], sf[runnable], vec("weight"), cap[present],
                vec("steps_remaining"), vec("elapsed"), vec("isolated_elapsed"))
    xr = r_x[np.ix_(runnable, present)]
    if not np.array_equal(C._arr(res.x), xr):
        raise Wrong("the reduced result's x is not the round's x on present types/jobs")
    pol = case["policy"]
    order = None
    if pol == "fifo":
        if order_ids is not None:      # the adapter: sorted job ids, else their given order
            rank = {j: i for i, j in enumerate(order_ids)}
            order = np.array([float(rank[j]) for j in keep])
        elif case.get("order") is not None:
            order = vec("order")
    if pol == "water_filling":
        ent = case.get("entities")
        C.check_water_filling(g, res, entities=None if ent is None else [ent[j] for j in keep],
                              entity_weights=case.get("entity_weights"),
                              entity_policies=case.get("entity_policies"))
        return
    C.check_allocation(g, res, pol, order=order)


def _round_kw(case: dict) -> dict:
    kw = {key: case[key] for key in _PER_JOB if key in case}
    for key in ("entity_weights", "entity_policies"):
        if key in case:
            kw[key] = case[key]
    return kw


def _call_mixed_solve_round(case: dict, ctx: Ctx) -> Any:
    return _fa().solve_round(case["policy"], case["throughput"], case["workers"],
                             **_round_kw(case))


def _check_mixed_round(case: dict, r: Any) -> None:
    if list(r.job_ids) != list(case["throughput"]):
        raise Wrong(f"job ids {list(r.job_ids)!r} are not the given ones in their order")
    _reference(case, list(r.job_ids), list(r.types), C._arr(r.x), r.reduced)


def _second_round(case: dict) -> dict:
    """The next round of ``case``: some jobs left (departures), one more type drained."""
    kept = [j for j, keep in zip(case["throughput"], case["next_keep"]) if keep]
    second = dict(case, throughput={j: case["throughput"][j] for j in kept})
    for key in _PER_JOB:
        if key in case:
            second[key] = {j: case[key][j] for j in kept}
    spec = dict(case["workers"])
    live = [t for t, c in spec.items() if c > 0]
    if len(live) > 1:
        spec[live[0]] = 0
    second["workers"] = spec
    return second


def _call_mixed_round_policy(case: dict, ctx: Ctx) -> Any:
    """Two rounds of one RoundPolicy (the second: :func:`_second_round`); both results."""
    kw = _round_kw(case)
    fixed = {key: kw.pop(key) for key in ("entity_weights", "entity_policies") if key in kw}
    pol = _fa().RoundPolicy(case["policy"], **fixed)
    first = pol.allocate(case["throughput"], case["workers"], **kw)
    second = _second_round(case)
    kw2 = {key: v for key, v in _round_kw(second).items() if key not in fixed}
    return first, pol.allocate(second["throughput"], second["workers"], **kw2)


def _check_mixed_round_policy(case: dict, out: Any) -> None:
    first, second = out
    _check_mixed_round(case, first)
    _check_mixed_round(_second_round(case), second)


_ADAPTERS = {"max_min_fairness": "MaxMinFairnessPolicyWithPerf",
             "water_filling": "MaxMinFairnessWaterFillingPolicyWithPerf",
             "finish_time_fairness": "FinishTimeFairnessPolicyWithPerf",
             "min_makespan": "MinTotalDurationPolicyWithPerf",
             "max_total_throughput": "ThroughputSumWithPerf", "fifo": "FIFOPolicyWithPerf"}


def _call_adapter(case: dict, ctx: Ctx) -> Any:
    from fairalloc.integrations import gavel

    pol = case["policy"]
    p = getattr(gavel, _ADAPTERS[pol])()
    tp, sf, spec = case["throughput"], case["scale_factor"], case["workers"]
    w = case.get("weight")
    if pol == "max_min_fairness":
        alloc = p.get_allocation(tp, sf, w, spec)
    elif pol == "water_filling":
        mapping: dict = {}
        for j, e in case["entities"].items():
            mapping.setdefault(e, []).append(j)
        alloc = p.get_allocation(tp, sf, w, spec, entity_weights=case.get("entity_weights"),
                                 entity_to_job_mapping=mapping)
    elif pol == "finish_time_fairness":
        alloc = p.get_allocation(tp, sf, w, case["elapsed"], case["steps_remaining"], spec)
    elif pol == "min_makespan":
        alloc = p.get_allocation(tp, sf, case["steps_remaining"], spec)
    else:
        alloc = p.get_allocation(tp, sf, spec)
    return _types.SimpleNamespace(allocation=alloc, last=p.last_result)


def _check_adapter(case: dict, out: Any) -> None:
    alloc, last = out.allocation, out.last
    ids = list(case["throughput"])
    if list(alloc) != ids:
        raise Wrong(f"the adapter's keys {list(alloc)!r} are not the given job ids")
    if last is None:
        raise Wrong("the adapter kept no last_result")
    types = list(last.types)
    x = np.array([[float(alloc[j].get(t, 0.0)) for t in types] for j in ids]).reshape(
        len(ids), len(types))
    if case["policy"] != "fifo":
        order_ids = None
    else:
        try:
            order_ids = sorted(ids)
        except TypeError:
            order_ids = list(ids)
    ref = dict(case)
    if case["policy"] == "max_min_fairness" and "weight" in case:
        ref["weight"] = case["weight"]  # normalization="paper": the priority weights
    if case["policy"] in ("fifo", "max_total_throughput", "min_makespan",
                          "finish_time_fairness"):
        ref.pop("weight", None)        # these adapters take no priority weights
    if case["policy"] == "water_filling":
        ref.pop("entity_policies", None)
    if case["policy"] == "finish_time_fairness":
        # Gavel's state: a fresh policy object has seen no round, so each job's isolated time
        # so far (``cumulative_isolated_time``) is 0, not its elapsed time
        ref["isolated_elapsed"] = dict.fromkeys(ids, 0.0)
    _reference(ref, ids, types, x, last.reduced, order_ids)


for _name, _call, _check in (("solve_round (mixed types)", _call_mixed_solve_round,
                              _check_mixed_round),
                             ("RoundPolicy.allocate (mixed types)", _call_mixed_round_policy,
                              _check_mixed_round_policy)):
    register(_name, "wide", mixed_round_cases(), _call, _check, _via_registry(_name),
             weight=WIDE_WEIGHT, always_feasible=True)
register("gavel adapter", "wide", mixed_round_cases(adapter=True), _call_adapter,
         _check_adapter, _via_registry("gavel adapter"), weight=WIDE_WEIGHT, always_feasible=True)

__all__ = ["JobIdPair", "wide_table"]
