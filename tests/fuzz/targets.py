"""The registry of fuzz targets: one (or more) per public entry point of fairalloc.

``TARGETS`` maps a target name to a :class:`~tests.fuzz.core.Target`. Each draws a case that
mixes valid inputs at awkward scales with invalid ones (see ``tests/fuzz/strategies.py``),
calls the entry point, and checks a returned result independently (``tests/fuzz/checks.py``).
``RESCALE_FAMILIES`` (``tests/fuzz/rescale.py``) holds the unit-rescaling checks.

Run the quick profile with ``pytest tests/test_fuzz.py`` and the long one with
``python benchmarks/fuzz.py --examples N``.
"""

from __future__ import annotations

import math
import os
import tempfile
from typing import Any

import numpy as np
from hypothesis import strategies as st

from . import checks as C
from .core import Ctx, Skip, Target, Wrong, short_repr
from .strategies import (
    STYLES,
    chance,
    choose,
    corrupt,
    corruption,
    doubt,
    finish,
    maybe,
    pick,
    pick_scale,
    positive_matrix,
    rng_from,
    scalar,
    time_limit,
    tolerance,
)

TARGETS: dict[str, Target] = {}


# entry points whose program always has a feasible point (nothing allocated): an
# InfeasibleError from them is a wrong answer
ALWAYS_FEASIBLE = {"fisher_market", "volatile_fisher_market", "FisherMarket.solve",
                   "max_min_fairness", "max_total_throughput", "min_makespan",
                   "finish_time_fairness", "fifo", "shortest_job_first", "water_filling",
                   "ThroughputPolicy.solve", "partial_allocation", "plan_schedule", "relax_plan"}


def register(name: str, family: str, strategy: Any, call: Any, check: Any = None,
             render: Any = None, slow: bool = False, unused: tuple[str, ...] = (),
             always_feasible: bool | None = None,
             known: tuple[tuple[str, str], ...] = (), weight: float | None = None) -> Target:
    t = Target(name, family, strategy, call, check, render, slow,
               always_feasible=(name in ALWAYS_FEASIBLE if always_feasible is None
                                else always_feasible), unused=unused, known=known,
               weight=weight)
    TARGETS[name] = t
    return t


def _via_registry(name: str) -> Any:
    """A one-line reproducer that replays the case through the registry's own call."""
    return lambda c: (f"from tests.fuzz.core import Ctx; from tests.fuzz.targets import TARGETS; "
                      f"TARGETS[{name!r}].call({short_repr(c, 6000)}, Ctx())")


def _kw(d: dict) -> str:
    return ", ".join(f"{k}={short_repr(v)}" for k, v in d.items())


def _fa() -> Any:
    import fairalloc as fa
    return fa


TIME_LIMITS = st.sampled_from([None, None, None, 30.0, 1e-9, 5.0])
GAP_TOLS = st.sampled_from([1e-6, 1e-6, 1e-4, 1e-9, 1e-3])


# ============================================================================================
# markets
# ============================================================================================
@st.composite
def market_cases(draw: Any, kind: str | None = None, volatile: bool = False) -> dict:
    rng = rng_from(draw)
    n = pick(draw, range(1, 6 + 1))
    m = pick(draw, range(1, 4 + 1))
    T = pick(draw, range(1, 3 + 1)) if volatile else 1
    kind = kind or pick(draw, ["linear", "linear", "leontief"])
    style = pick(draw, STYLES)
    U = positive_matrix(rng, n, m * T, style, pick_scale(draw)).reshape(n, m, T)
    if not volatile:
        U = U[:, :, 0]
    B = maybe(draw, rng.uniform(0.5, 2.0, n) * pick(draw,
        [1.0, 1e-6, 1e6, 1e-12, 1e12, 1e-9, 1e9]), 0.7)
    if B is not None and B.min() >= 1e5 and draw(st.booleans()):
        B = np.round(B)  # budgets counted in micro-units
    S = maybe(draw, rng.uniform(0.5, 4.0, (m, T) if volatile else m) * pick(draw,
        [1.0, 1e6, 3600e6, 1e-6, 1e12, 1e-12]), 0.6)
    which = pick(draw, ["utility", "budget", "supply"])
    how = corruption(draw)
    case: dict = {"utility": U, "budget": B, "supply": S}
    if how != "none" and case[which] is not None:
        case[which] = corrupt(rng, case[which], how)
    case["kind"] = choose(draw, [kind] * 14, ["bogus", None])
    case["method"] = choose(draw, ["auto"] * 5 + ["fast", "conic", "cvxpy"], ["nope"])
    if case["method"] == "fast" and case["kind"] == "leontief":
        doubt(draw, "method='fast' is for linear markets (documented InputError)")
    case["gap_tol"] = tolerance(draw, GAP_TOLS, 0.1)
    case["time_limit"] = time_limit(draw, TIME_LIMITS, 0.1)
    return finish(draw, case)


def _market_args(c: dict, *extra: str) -> dict:
    return {k: c[k] for k in ("utility", "budget", "supply", "kind", *extra)}


def _market_check(case: dict, r: Any) -> None:
    C.check_market(case["utility"], case["budget"], case["supply"], case["kind"], r)


def _call_market(fn_name: str) -> Any:
    def call(case: dict, ctx: Ctx) -> Any:
        return getattr(_fa(), fn_name)(**case)
    return call


register("fisher_market", "markets", market_cases(), _call_market("fisher_market"),
         _market_check, lambda c: f"fa.fisher_market({_kw(c)})")
register("volatile_fisher_market", "markets", market_cases(volatile=True),
         _call_market("volatile_fisher_market"), _market_check,
         lambda c: f"fa.volatile_fisher_market({_kw(c)})")


@st.composite
def builder_cases(draw: Any) -> dict:
    case = draw(market_cases(volatile=draw(st.booleans())))
    solve = {"method": case.pop("method"), "gap_tol": case.pop("gap_tol"),
             "time_limit": case.pop("time_limit"),
             "backend": choose(draw, ["clarabel"] * 6 + [None], ["highs", "nope"])}
    case["solve"] = solve
    case["constraint"] = pick(draw, ["none", "none", "nonbinding", "binding"])
    return finish(draw, case)


def _build_market(case: dict) -> Any:
    return _fa().FisherMarket(case["utility"], case["budget"], case["supply"], kind=case["kind"])


def _call_builder_solve(case: dict, ctx: Ctx) -> Any:
    m = _build_market(case)
    if case["constraint"] != "none":
        s = np.ones(m.m * m.T) if case["supply"] is None else np.asarray(case["supply"], float)
        s = s.reshape(-1)
        bound = s[0] * (10.0 if case["constraint"] == "nonbinding" else 0.01)
        m.add_constraint(m.x[0, 0] <= bound)
    return m.solve(**case["solve"])


def _check_builder_solve(case: dict, r: Any) -> None:
    binding = case["constraint"] == "binding"
    C.check_market(case["utility"], case["budget"], case["supply"], case["kind"], r,
                   extra_ok=not binding)
    if binding and C.claims_success(r):
        s = np.ones(1) if case["supply"] is None else np.asarray(case["supply"], float).ravel()
        x00 = float(np.asarray(r.allocation).reshape(np.asarray(r.allocation).shape[0], -1)[0, 0])
        if x00 > s[0] * 0.01 * (1 + 1e-6):
            raise Wrong(f"added constraint x[0,0] <= {s[0] * 0.01!r} violated: {x00!r}")


def _render_builder(c: dict) -> str:
    base = {k: c[k] for k in ("utility", "budget", "supply", "kind")}
    con = {"none": "", "nonbinding": "m.add_constraint(m.x[0, 0] <= 10*s0); ",
           "binding": "m.add_constraint(m.x[0, 0] <= 0.01*s0); "}[c["constraint"]]
    return f"m = fa.FisherMarket({_kw(base)}); {con}m.solve({_kw(c['solve'])})"


register("FisherMarket.solve", "markets", builder_cases(), _call_builder_solve,
         _check_builder_solve, _render_builder)


@st.composite
def column_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n, m, T = pick(draw, range(1, 3 + 1)), pick(draw, range(1, 4 + 1)), pick(draw, range(1, 3 + 1))
    U = positive_matrix(rng, n, m * T, "uniform").reshape(n, m, T)
    good = pick(draw, list(range(m)) * 4 + [-1, m, m + 1, 1.0, True])
    rnd = pick(draw, list(range(T)) * 4 + [-1, T, 0.0, None])
    return {"utility": U, "good": good, "rnd": rnd}


def _call_column(case: dict, ctx: Ctx) -> Any:
    return _fa().FisherMarket(case["utility"]).column(case["good"], case["rnd"])


def _check_column(case: dict, col: Any) -> None:
    n, m, T = np.shape(case["utility"])
    g, r = case["good"], case["rnd"]
    valid = (isinstance(g, (int, np.integer)) and not isinstance(g, bool) and 0 <= g < m
             and isinstance(r, (int, np.integer)) and not isinstance(r, bool) and 0 <= r < T)
    if not valid:
        raise Wrong(f"column({g!r}, {r!r}) accepted for {m} goods x {T} rounds -> {col!r}")
    if col != g * T + r:
        raise Wrong(f"column({g}, {r}) = {col!r}, expected {g * T + r}")


register("FisherMarket.column", "markets", column_cases(), _call_column, _check_column,
         lambda c: f"fa.FisherMarket({short_repr(c['utility'])}).column({c['good']!r}, "
                   f"{c['rnd']!r})")


@st.composite
def dual_value_cases(draw: Any) -> dict:
    case = draw(market_cases())
    rng = rng_from(draw)
    m = np.shape(case["utility"])[1] if np.ndim(case["utility"]) == 2 else 1
    p = rng.uniform(0.1, 3.0, m) * pick_scale(draw)
    case = {k: case[k] for k in ("utility", "budget", "supply", "kind")}
    case["prices"] = corrupt(rng, p, corruption(draw, 0.3))
    return case


def _call_dual_value(case: dict, ctx: Ctx) -> Any:
    m = _fa().FisherMarket(case["utility"], case["budget"], case["supply"], kind=case["kind"])
    return m.dual_value(case["prices"])


def _check_dual_value(case: dict, v: Any) -> None:
    v = float(v)
    if math.isnan(v):
        raise Wrong("dual_value returned NaN")


register("FisherMarket.dual_value", "markets", dual_value_cases(), _call_dual_value,
         _check_dual_value,
         lambda c: f"fa.FisherMarket({_kw(_market_args(c))}).dual_value({short_repr(c['prices'])})")


# ============================================================================================
# properties and the testing suite
# ============================================================================================
@st.composite
def property_cases(draw: Any, fn: str) -> dict:
    rng = rng_from(draw)
    n, m = pick(draw, range(1, 5 + 1)), pick(draw, range(1, 4 + 1))
    scale = pick_scale(draw)
    U = positive_matrix(rng, n, m, pick(draw, STYLES), scale)
    B = maybe(draw, rng.uniform(0.5, 2, n) * pick_scale(draw), 0.6)
    S = maybe(draw, rng.uniform(0.5, 2, m) * pick_scale(draw), 0.6)
    s = np.ones(m) if S is None else S
    b = np.ones(n) if B is None else B
    how_alloc = pick(draw, ["proportional", "random", "all_to_0"])
    if how_alloc == "proportional":
        X = np.outer(b / b.sum(), s)
    elif how_alloc == "all_to_0":
        X = np.zeros((n, m))
        X[0] = s
    else:
        X = rng.dirichlet(np.ones(n), size=m).T * s[None, :]
    P = rng.uniform(0.1, 2, m) * pick_scale(draw)
    case: dict = {"utility": U, "allocation": X}
    if fn in ("budget_clearing", "market_clearing"):
        case = {"allocation": X, "prices": P}
    if fn == "optimal_spending":
        case["prices"] = P
    if fn in ("budget_clearing", "envy_free", "sharing_incentive", "proportionality"):
        case["budget"] = B
    if fn in ("market_clearing", "sharing_incentive", "proportionality", "pareto_optimal"):
        case["supply"] = S
    if fn in ("envy_free", "sharing_incentive", "proportionality", "pareto_optimal",
              "bundle_values"):
        case["kind"] = pick(draw, ["linear"] * 6 + ["leontief", "nope"])
    if fn != "bundle_values":
        case["tol"] = scalar(draw, st.sampled_from([1e-6, 1e-3]), 0.15)
    which = pick(draw, [k for k in case if isinstance(case[k], np.ndarray)])
    how = corruption(draw, 0.25)
    case[which] = corrupt(rng, case[which], how)
    case["_alloc"] = how_alloc if how == "none" else "corrupted"
    return case


def _prop_call(fn: str) -> Any:
    def call(case: dict, ctx: Ctx) -> Any:
        import fairalloc.properties as P
        return getattr(P, fn)(**{k: v for k, v in case.items() if not k.startswith("_")})
    return call


def _prop_check(fn: str) -> Any:
    def check(case: dict, r: Any) -> None:
        if fn == "bundle_values":
            kind = case.get("kind", "linear")
            U, X = np.asarray(case["utility"], float), np.asarray(case["allocation"], float)
            V = C._bundle_values(U[:, :, None], X[:, :, None], kind)
            got = np.asarray(r, float)
            if got.shape == V.shape and not np.allclose(got, V, rtol=1e-9, atol=0):
                raise Wrong("bundle_values differs from the recomputed values")
            return
        if not isinstance(r.passed, (bool, np.bool_)) or np.isnan(r.violation) \
                or r.violation < 0 or (r.passed and not np.isfinite(r.violation)):
            raise Wrong(f"malformed PropertyResult {r!r}")
        kind = case.get("kind", "linear")
        if fn in ("envy_free", "sharing_incentive", "proportionality") and kind == "linear":
            U, X = np.asarray(case["utility"], float), np.asarray(case["allocation"], float)
            n = U.shape[0]
            B = np.ones(n) if case.get("budget") is None else np.asarray(case["budget"], float)
            V = U @ X.T
            u = np.diag(V)
            if fn == "envy_free":
                with np.errstate(divide="ignore", invalid="ignore"):
                    rel = (V / B[None]) / (u / B)[:, None] - 1
                rel = np.where(np.isfinite(rel), rel, 0.0)
                np.fill_diagonal(rel, 0.0)
                worst = float(rel.max(initial=0.0))
            else:
                S = np.ones(U.shape[1]) if case.get("supply") is None else \
                    np.asarray(case["supply"], float)
                si = B / B.sum() * (U @ S)
                worst = float(np.max(np.where(si > 0, 1 - u / np.where(si > 0, si, 1.0), 0.0),
                                     initial=0.0))
            if r.passed and worst > 0.1:
                raise Wrong(f"{fn} passed although it is violated by {worst:.3g} (relative)")
            tol = case.get("tol", 1e-6)
            exact_enough = isinstance(tol, float) and 1e-9 <= tol <= 0.1
            if not r.passed and case["_alloc"] == "proportional" and worst <= 1e-12 and \
                    exact_enough:
                raise Wrong(f"{fn} failed on the proportional split, which satisfies it")
    return check


for _fn in ("envy_free", "sharing_incentive", "proportionality", "budget_clearing",
            "market_clearing", "optimal_spending", "pareto_optimal", "bundle_values"):
    register(f"properties.{_fn}", "properties", property_cases(_fn), _prop_call(_fn),
             _prop_check(_fn),
             (lambda f: lambda c: f"fairalloc.properties.{f}("
              f"{_kw({k: v for k, v in c.items() if not k.startswith('_')})})")(_fn))


@st.composite
def pareto_gain_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n, m = pick(draw, range(1, 5 + 1)), pick(draw, range(1, 4 + 1))
    U = positive_matrix(rng, n, m, pick(draw, STYLES), pick_scale(draw))
    S = rng.uniform(0.5, 2.0, m) * pick_scale(draw)
    X = np.outer(np.ones(n) / n, S) * pick(draw, [1.0, 1.0, 0.5, 0.0])
    own = (U * X).sum(axis=1)
    return {"U": U, "S": S, "own": corrupt(rng, own, corruption(draw, 0.15))}


def _pareto_gain_lp(U: np.ndarray, S: np.ndarray) -> tuple[Any, Any, Any]:
    import scipy.sparse as sp
    n, m = U.shape
    rows = np.repeat(np.arange(n), m)
    util = sp.csr_matrix((U.ravel(), (rows, np.arange(n * m))), shape=(n, n * m))
    feas = sp.csr_matrix((np.ones(n * m), (np.tile(np.arange(m), n), np.arange(n * m))),
                         shape=(m, n * m))
    return util, feas, np.full(n * m, np.inf)


def _call_pareto_gain(case: dict, ctx: Ctx) -> Any:
    from fairalloc.properties import pareto_gain
    util, feas, col_upper = _pareto_gain_lp(case["U"], case["S"])
    return pareto_gain(util, case["own"], feas, case["S"], col_upper)


def _check_pareto_gain(case: dict, t: Any) -> None:
    """Recompute max sum t with linprog (y, t >= 0; util y - t >= own; feas y <= S)."""
    import scipy.sparse as sp
    from scipy.optimize import linprog
    t = C._finite("pareto_gain", t)
    own = np.asarray(case["own"], float)
    if not np.all(np.isfinite(own)) or np.any(own < 0):
        raise Wrong("pareto_gain returned a result for NaN/inf/negative utilities")
    if np.any(t < -1e-9 * max(1.0, float(np.abs(t).max(initial=0.0)))):
        raise Wrong(f"negative gain {t.tolist()}")
    util, feas, _ = _pareto_gain_lp(case["U"], case["S"])
    n, E = util.shape
    scale = np.maximum(own, np.asarray(util.max(axis=1).todense()).ravel()
                       * float(np.max(case["S"])))
    scale = np.where(scale > 0, scale, 1.0)
    S = np.asarray(case["S"], float)
    tmax = float(scale.max())  # t = tmax * tau: every coefficient O(1)
    A = sp.vstack([sp.hstack([-sp.diags(1 / scale) @ util, sp.diags(tmax / scale)]),
                   sp.hstack([feas.multiply(1 / S[:, None]), sp.csr_matrix((len(S), n))])])
    b = np.concatenate([-own / scale, np.ones(len(S))])
    res = linprog(np.concatenate([np.zeros(E), -np.ones(n)]), A_ub=A.tocsr(), b_ub=b,
                  bounds=[(0, None)] * (E + n), method="highs")
    if res.status != 0:
        raise Skip()
    y = np.maximum(res.x[:E], 0.0)
    used = feas @ y
    y = y * min(1.0, float(np.min(np.where(used > 0, S / np.where(used > 0, used, 1.0), 1.0))))
    gain = util @ y - own  # a Pareto improvement only if nobody loses (to LP tolerance)
    if np.any(gain < -1e-7 * scale):
        raise Skip()
    best = float(gain.sum())
    mine = float(t.sum())
    if mine < best - 1e-6 * max(best, float(own.sum()), 1e-300):
        raise Wrong(f"pareto_gain total {mine!r} below the gain {best!r} of a feasible "
                    f"allocation (linprog)")


register("properties.pareto_gain", "properties", pareto_gain_cases(), _call_pareto_gain,
         _check_pareto_gain, _via_registry("properties.pareto_gain"))


@st.composite
def check_market_cases(draw: Any) -> dict:
    case = draw(market_cases(kind="linear"))
    case["method"] = "auto"
    case["time_limit"] = None
    case["properties"] = choose(draw, [
        ("market_clearing", "budget_clearing", "envy_free", "sharing_incentive"),
        ("pareto_optimal",)], [("nope",), "envy_free"])
    return finish(draw, case)


def _call_check_market(case: dict, ctx: Ctx) -> Any:
    from fairalloc.properties import check_market
    fa = _fa()
    r = fa.fisher_market(case["utility"], case["budget"], case["supply"], kind=case["kind"],
                         gap_tol=case["gap_tol"])
    return r, check_market(r, case["utility"], supply=case["supply"], kind=case["kind"],
                           properties=case["properties"])


def _check_check_market(case: dict, out: Any) -> None:
    r, report = out
    if C.claims_success(r):
        items = report.values() if isinstance(report, dict) else report
        for item in items:
            if hasattr(item, "passed") and not item.passed:
                raise Wrong(f"check_market rejects a certified equilibrium: {item!r}")


register("properties.check_market", "properties", check_market_cases(), _call_check_market,
         _check_check_market,
         lambda c: f"r = fa.fisher_market({_kw(_market_args(c, 'gap_tol'))}); "
                   f"check_market(r, utility, supply=supply, kind={c['kind']!r}, "
                   f"properties={c['properties']!r})")


@st.composite
def check_policy_cases(draw: Any) -> dict:
    return {"policy": pick(draw, ["proportional", "fisher_market", "not_callable"]),
            "properties": pick(draw, [("sharing_incentive", "envy_free"),
                                                "envy_free", ("nope",), ()]),
            "max_examples": scalar(draw, st.integers(1, 8), 0.2),
            "seed": scalar(draw, st.integers(0, 5), 0.1),
            "tol": scalar(draw, st.sampled_from([1e-6, 1e-4]), 0.1)}


def _proportional(utility: Any, budget: Any, supply: Any) -> np.ndarray:
    b = np.asarray(budget, float)
    return np.outer(b / b.sum(), np.asarray(supply, float))


def _policy(name: str) -> Any:
    if name == "proportional":
        return _proportional
    if name == "fisher_market":
        return lambda u, b, s: _fa().fisher_market(u, b, s).allocation
    return 42


def _call_check_policy(case: dict, ctx: Ctx) -> Any:
    from fairalloc.testing import check_policy
    kw = dict(case)
    kw["policy"] = _policy(kw["policy"])
    return check_policy(**kw, shrink=False)


def _check_check_policy(case: dict, rep: Any) -> None:
    props = case["properties"]
    props = (props,) if isinstance(props, str) else tuple(props)
    if case["policy"] == "proportional" and set(props) <= {"sharing_incentive", "envy_free"} \
            and not rep.passed:
        raise Wrong("check_policy: the proportional split fails sharing incentive/envy-freeness,"
                    f" which it satisfies exactly: {rep!r}"[:300])


register("testing.check_policy", "properties", check_policy_cases(), _call_check_policy,
         _check_check_policy,
         _via_registry("testing.check_policy"), slow=True)


# ============================================================================================
# throughput policies (Gavel)
# ============================================================================================
@st.composite
def gavel_cases(draw: Any, policy: str, small: bool = False, rounds: bool = False) -> dict:
    """A Gavel instance and options for ``policy``. ``rounds``: for the round API, where a
    drained type and a job that can run on no present type are normal (not doubts)."""
    rng = rng_from(draw)
    n = pick(draw, range(1, 4 if small else 7 + 1))
    k = pick(draw, [1, 2, 3, 3, 4] + ([] if small else [8]))
    style = pick(draw, STYLES)
    T = positive_matrix(rng, n, k, style, pick_scale(draw))
    workers = rng.integers(1, 6, k)
    if k > 1 and chance(draw, 0.15):
        workers[rng.integers(k)] = 0  # a drained type
    names = [f"t{j}" for j in range(k)]
    sf = maybe(draw, rng.choice([1, 1, 1, 2, 4], n), 0.5)
    if sf is not None and not chance(draw, 0.1):
        sf = np.minimum(sf, max(1, int(workers.max())))
    w = maybe(draw, rng.uniform(0.5, 3.0, n) * pick_scale(draw), 0.4)
    need_steps = policy in ("min_makespan", "finish_time_fairness", "shortest_job_first",
                            "min_cost")
    steps = rng.uniform(100, 1e4, n) * pick_scale(draw) if need_steps or draw(st.booleans()) \
        else None
    if policy in ("finish_time_fairness", "fifo") and draw(st.booleans()):
        elapsed = rng.uniform(0, 1000, n)
    else:
        elapsed = None
    case: dict = {"throughput": T, "scale_factor": sf, "weight": w, "steps_remaining": steps,
                  "elapsed": elapsed, "workers": dict(zip(names, workers.tolist()))}
    runs = (T > 0) & ((np.ones(n) if sf is None else sf)[:, None] <= workers[None, :])
    if not rounds and (np.any(workers == 0) or not runs.any(axis=1).all()):
        # fa.Cluster lists types with capacity, and a job must be able to run somewhere
        doubt(draw, "a drained type or a job that can run on no type (direct API)")
    if chance(draw, 0.1):
        case["workers"] = {names[0]: pick(draw, [-1, 1.5, math.nan, "2", None, 1e12])}
        doubt(draw, "invalid workers")
    which = pick(draw, ["throughput", "scale_factor", "weight", "steps_remaining",
                                  "elapsed"])
    how = corruption(draw, 0.15)
    if how != "none" and case[which] is not None:
        case[which] = corrupt(rng, case[which], how)
    kw: dict = {}
    if policy not in ("max_min_space_sharing",):
        # fifo (arrival order), water-filling and min_cost are not cvxpy programs (documented)
        no_cvx = policy in ("fifo", "water_filling", "min_cost")
        kw["method"] = choose(draw, ["auto"] * 5 + ["highs", "fast"] + ([] if no_cvx else
                                                                       ["cvxpy"]),
                              ["x"] + (["cvxpy"] if no_cvx else []))
        kw["backend"] = choose(draw, ["highs"] * 6 + ["clarabel", None], ["nope"])
        if kw["method"] == "cvxpy" and kw["backend"] == "highs":
            doubt(draw, "a cvxpy program certified through highs (documented InputError)")
    kw["gap_tol"] = tolerance(draw, GAP_TOLS, 0.1)
    if policy == "min_cost":
        case["cost"] = corrupt(rng, rng.uniform(0.5, 5.0, k) * pick_scale(draw),
                               corruption(draw, 0.1))
        kw["slo"] = maybe(draw, rng.uniform(1e3, 1e6, n) * pick_scale(draw), 0.3)
        if kw["slo"] is not None:
            doubt(draw, "SLOs that may be infeasible")
    if policy == "max_total_throughput":
        kw["normalized"] = draw(st.booleans())
    if policy == "water_filling" and draw(st.booleans()):
        kw["entities"] = [f"e{i % 2}" for i in range(n)]
        kw["entity_weights"] = {"e0": 1.0, "e1": choose(draw, [2.0, 0.5], [-1.0])}
        if n < 2:
            doubt(draw, "entity_weights names an entity without jobs")
    if policy == "max_min_fairness":
        kw["water_filling"] = pick(draw, [False, False, True])
        if kw["water_filling"] and kw.get("method") == "cvxpy":
            doubt(draw, "water_filling=True is not a cvxpy program (documented)")
    case["kw"] = kw
    return finish(draw, case)


def _jobs_cluster(case: dict, ctx: Ctx) -> tuple[Any, Any]:
    fa = _fa()
    jobs = fa.Jobs(case["throughput"], scale_factor=case["scale_factor"], weight=case["weight"],
                   steps_remaining=case["steps_remaining"], elapsed=case["elapsed"])
    cluster = fa.Cluster(case["workers"])
    ctx.watch("jobs", jobs)
    ctx.watch("cluster", cluster)
    return jobs, cluster


def _render_jobs(c: dict) -> str:
    jk = {k: c[k] for k in ("scale_factor", "weight", "steps_remaining", "elapsed")
          if c[k] is not None}
    return f"fa.Jobs({short_repr(c['throughput'])}{', ' + _kw(jk) if jk else ''}), " \
           f"fa.Cluster({c['workers']!r})"


def _gavel(case: dict) -> C.Gavel:
    return C.Gavel(case["throughput"], case["scale_factor"], case["weight"],
                   list(case["workers"].values()), case["steps_remaining"], case["elapsed"])


#: open defects the quick CI profile meets on these Gavel targets (tolerated there; the long
#: profile reports them). Empty: issue #27's Clarabel NumericalError on a cvxpy
#: finish-time-fairness program whose throughputs span 1e-11..1e10 is answered by the
#: composed plan (`fairalloc._cvxpy`; tests/test_composed_plan.py)
KNOWN_GAVEL: dict[str, tuple[tuple[str, str], ...]] = {}


def _gavel_target(policy: str, fn: str | None = None) -> None:
    fn = fn or policy

    def call(case: dict, ctx: Ctx) -> Any:
        jobs, cluster = _jobs_cluster(case, ctx)
        args = (jobs, cluster) + ((case["cost"],) if policy == "min_cost" else ())
        return getattr(_fa(), fn)(*args, **case["kw"])

    def check(case: dict, r: Any) -> None:
        pol = policy
        if policy == "max_total_throughput" and case["kw"].get("normalized"):
            pol = "max_total_throughput_normalized"
        if policy == "max_min_fairness" and case["kw"].get("water_filling"):
            pol = "water_filling"
        if policy == "water_filling" and "entities" in case["kw"]:
            pol = "feasibility"
        C.check_allocation(_gavel(case), r, pol, slo=case["kw"].get("slo"),
                           cost=case.get("cost"))

    def render(c: dict) -> str:
        cost = f", {short_repr(c['cost'])}" if policy == "min_cost" else ""
        return f"fa.{fn}({_render_jobs(c)}{cost}, {_kw(c['kw'])})"

    register(fn, "throughput", gavel_cases(policy), call, check, render,
             known=KNOWN_GAVEL.get(fn, ()))


for _p in ("max_min_fairness", "max_total_throughput", "min_makespan", "finish_time_fairness",
           "fifo", "shortest_job_first", "min_cost", "water_filling"):
    _gavel_target(_p)


@st.composite
def gavel_builder_cases(draw: Any) -> dict:
    policy = pick(draw, ["MaxMinFairness", "MinMakespan", "MaxTotalThroughput",
                                   "FinishTimeFairness", "FIFO", "ShortestJobFirst",
                                   "WaterFilling", "MinCost"])
    case = draw(gavel_cases("min_makespan", small=True))
    case["kw"].pop("normalized", None)
    case["policy"] = policy
    case["constraint"] = pick(draw, ["none", "nonbinding", "binding"])
    if case["constraint"] != "none" and not chance(draw, 0.15):
        case["kw"]["method"], case["kw"]["backend"] = "cvxpy", "clarabel"
    if policy in ("FIFO", "WaterFilling", "MinCost") and (
            case["constraint"] != "none" or case["kw"].get("method") == "cvxpy"):
        doubt(draw, f"{policy} is not composable in cvxpy (documented)")
    return finish(draw, case)


def _call_gavel_builder(case: dict, ctx: Ctx) -> Any:
    jobs, cluster = _jobs_cluster(case, ctx)
    if case["policy"] == "MinCost":
        b = _fa().MinCost(jobs, cluster, np.ones(len(case["workers"])))
    else:
        b = getattr(_fa(), case["policy"])(jobs, cluster)
    if case["constraint"] != "none":
        b.add_constraint(b.x[0, 0] <= (2.0 if case["constraint"] == "nonbinding" else 0.01))
    return b.solve(**case["kw"])


_BUILDER_POLICY = {"MaxMinFairness": "max_min_fairness", "MinMakespan": "min_makespan",
                   "MaxTotalThroughput": "max_total_throughput",
                   "FinishTimeFairness": "finish_time_fairness", "FIFO": "fifo",
                   "ShortestJobFirst": "shortest_job_first", "WaterFilling": "water_filling",
                   "MinCost": "min_cost"}


def _check_gavel_builder(case: dict, r: Any) -> None:
    pol = _BUILDER_POLICY[case["policy"]] if case["constraint"] != "binding" else "feasibility"
    C.check_allocation(_gavel(case), r, pol)
    if case["constraint"] == "binding" and C.claims_success(r) and r.x[0, 0] > 0.01 + 1e-6:
        raise Wrong(f"added constraint x[0,0] <= 0.01 violated: {r.x[0, 0]!r}")


register("ThroughputPolicy.solve", "throughput", gavel_builder_cases(), _call_gavel_builder,
         _check_gavel_builder,
         lambda c: f"b = fa.{c['policy']}({_render_jobs(c)}); "
                   + ("" if c["constraint"] == "none" else
                      f"b.add_constraint(b.x[0, 0] <= "
                      f"{2.0 if c['constraint'] == 'nonbinding' else 0.01}); ")
                   + f"b.solve({_kw(c['kw'])})")


@st.composite
def space_sharing_cases(draw: Any) -> dict:
    case = draw(gavel_cases("max_min_space_sharing", small=True))
    rng = rng_from(draw)
    n, k = np.shape(case["throughput"]) if np.ndim(case["throughput"]) == 2 else (1, 1)
    pairs = [[i, j] for i in range(n) for j in range(i + 1, n)][:3]
    if not pairs:
        pairs = [[0, 0]]
        doubt(draw, "a job paired with itself")
    try:  # a corrupted throughput (strings, None) has no largest value: unit pair speeds
        top = float(np.nanmax(np.asarray(case["throughput"], float), initial=1.0))
    except (TypeError, ValueError):
        top = 1.0
    tp = rng.uniform(0.1, 1.0, (len(pairs), k, 2)) * top
    case["pairs"] = (pairs, corrupt(rng, tp, corruption(draw, 0.15)))
    return finish(draw, case)


def _call_space_sharing(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    jobs, cluster = _jobs_cluster(case, ctx)
    pairs = fa.JobPairs(*case["pairs"])
    return fa.max_min_space_sharing(jobs, cluster, pairs, **case["kw"])


def _check_space_sharing(case: dict, r: Any) -> None:
    C.claims_success(r)


register("max_min_space_sharing", "throughput", space_sharing_cases(), _call_space_sharing,
         _check_space_sharing,
         lambda c: f"fa.max_min_space_sharing({_render_jobs(c)}, "
                   f"fa.JobPairs({short_repr(c['pairs'][0])}, {short_repr(c['pairs'][1])}), "
                   f"{_kw(c['kw'])})", slow=True)


# ============================================================================================
# round-based mechanism, placement, estimation
# ============================================================================================
@st.composite
def mechanism_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n, k = pick(draw, range(1, 6 + 1)), pick(draw, range(1, 3 + 1))
    X = rng.dirichlet(np.ones(k + 1), size=n)[:, :k] * pick(draw, [1.0, 0.5, 1.0])
    cap = rng.integers(1, 5, k)
    if chance(draw, 0.1):
        cap[0] = 0  # a drained type
    sf = rng.choice([1, 1, 2], n)
    if chance(draw, 0.85):  # a target the cluster can realise
        X = np.where(sf[:, None] <= cap[None, :], X, 0.0)
        load = sf @ X
        X = X * np.minimum(1.0, cap / np.maximum(load, 1e-300))[None, :]
    cap = cap.tolist()
    case: dict = {"target": corrupt(rng, X, corruption(draw, 0.2)), "cluster": cap,
                  "scale_factor": maybe(draw, sf.tolist(), 0.7) if max(sf) > 1 else
                  maybe(draw, sf.tolist(), 0.3),
                  "received": maybe(draw, rng.uniform(0, 1, (n, k)), 0.4),
                  "elapsed": scalar(draw, st.sampled_from([1.0, 10.0, 1e-9, 1e9]), 0.15),
                  "rounds": scalar(draw, st.integers(1, 5), 0.1),
                  "gpus_per_server": pick(draw, [1, 2, 4] * 3 + [0, -1])}
    if case["received"] is None:
        case["elapsed"] = None
    return case


def _call_schedule_round(case: dict, ctx: Ctx) -> Any:
    return _fa().schedule_round(case["target"], case["cluster"], received=case["received"],
                                elapsed=case["elapsed"], scale_factor=case["scale_factor"])


def _check_schedule_round(case: dict, a: Any) -> None:
    cap = np.asarray(case["cluster"])
    sf = np.ones(len(a.type_index)) if case["scale_factor"] is None else \
        np.asarray(case["scale_factor"])
    ti = np.asarray(a.type_index)
    used = np.zeros(len(cap))
    for i, t in enumerate(ti):
        if t >= 0:
            used[t] += sf[i] if i < len(sf) else 1
    if np.any(used > cap):
        raise Wrong(f"round uses {used.tolist()} workers of {cap.tolist()}")


register("schedule_round", "mechanism", mechanism_cases(), _call_schedule_round,
         _check_schedule_round,
         lambda c: f"fa.schedule_round({short_repr(c['target'])}, {c['cluster']!r}, "
                   f"received={short_repr(c['received'])}, elapsed={c['elapsed']!r}, "
                   f"scale_factor={c['scale_factor']!r})", unused=("rounds", "gpus_per_server"))


def _call_round_scheduler(case: dict, ctx: Ctx) -> Any:
    s = _fa().RoundScheduler(case["target"], case["cluster"], scale_factor=case["scale_factor"])
    return s.run(case["rounds"])


register("RoundScheduler.run", "mechanism", mechanism_cases(), _call_round_scheduler, None,
         lambda c: f"fa.RoundScheduler({short_repr(c['target'])}, {c['cluster']!r}, "
                   f"scale_factor={c['scale_factor']!r}).run({c['rounds']!r})",
         unused=("received", "elapsed", "gpus_per_server"))


def _call_place(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    cap = {f"t{j}": int(c) for j, c in enumerate(case["cluster"])}
    a = fa.schedule_round(case["target"], fa.Cluster(cap), scale_factor=case["scale_factor"])
    lay = fa.ServerLayout.uniform(fa.Cluster(cap), case["gpus_per_server"])
    p = fa.place(a, lay)
    return fa.place(a, lay, previous=p)


register("place", "mechanism", mechanism_cases(), _call_place, None,
         lambda c: f"cl = fa.Cluster({ {f't{j}': int(x) for j, x in enumerate(c['cluster'])} !r}); "
                   f"a = fa.schedule_round({short_repr(c['target'])}, cl, "
                   f"scale_factor={c['scale_factor']!r}); "
                   f"fa.place(a, fa.ServerLayout.uniform(cl, {c['gpus_per_server']!r}))",
         unused=("received", "elapsed", "rounds"))


@st.composite
def completion_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n, k = pick(draw, range(1, 6 + 1)), pick(draw, range(1, 4 + 1))
    r = pick(draw, range(1, 2 + 1))
    V = (rng.uniform(0.5, 2, (n, r)) @ rng.uniform(0.5, 2, (r, k))) * pick_scale(draw)
    mask = rng.random((n, k)) < 0.7
    holes = np.where(mask, V, np.nan)
    return {"values": corrupt(rng, holes, corruption(draw, 0.15)),
            "rank": pick(draw, ["auto"] * 3 + [1] * 3 + [2, 0, 99, "x"]),
            "method": pick(draw, ["als"] * 5 + ["soft_impute"] * 3 + ["nope"]),
            "max_iter": scalar(draw, st.sampled_from([50, 200]), 0.1),
            "reg": scalar(draw, st.sampled_from([1e-2, 1e-9]), 0.1)}


def _call_complete(case: dict, ctx: Ctx) -> Any:
    return _fa().complete_matrix(**case)


def _check_complete(case: dict, c: Any) -> None:
    if not np.all(np.isfinite(np.asarray(c.estimate, float))):
        raise Wrong("complete_matrix returned a non-finite estimate")


register("complete_matrix", "mechanism", completion_cases(), _call_complete, _check_complete,
         lambda c: f"fa.complete_matrix({_kw(c)})")


def _call_estimator(case: dict, ctx: Ctx) -> Any:
    try:
        v = np.asarray(case["values"], float)
    except (TypeError, ValueError):  # not numeric: hand it to fairalloc as is
        return _fa().ThroughputEstimator(case["values"], rank=case["rank"],
                                         method=case["method"], reg=case["reg"])
    r = v.shape[0] if v.ndim == 2 else 1
    ref = np.clip(np.nan_to_num(v[:, :1], nan=0.5) / max(np.nanmax(np.abs(v), initial=1.0), 1e-300),
                  0.05, 1.0) if v.ndim == 2 else v
    ref = np.tile(ref, (1, r)) * np.linspace(1.0, 0.5, r)[None, :] if v.ndim == 2 else ref
    sub = (v != 0) & (np.abs(v) < np.finfo(float).tiny)
    if v.ndim == 2 and sub.any():  # a drawn subnormal must reach fairalloc (the rescaling
        ref = ref.copy()          # above would hide it, and the case is drawn as invalid)
        ref[0, 0] = v[sub][0]
    est = _fa().ThroughputEstimator(ref, rank=case["rank"], method=case["method"],
                                    reg=case["reg"])
    return est.match(ref[:, 0] * 0.9 if ref.ndim == 2 else v)


register("ThroughputEstimator.match", "mechanism", completion_cases(), _call_estimator, None,
         _via_registry("ThroughputEstimator.match"), unused=("max_iter",))


# ============================================================================================
# data containers and backends
# ============================================================================================
@st.composite
def jobs_cases(draw: Any) -> dict:
    case = draw(gavel_cases("max_min_fairness"))
    case.pop("kw")  # only the constructors run
    return case


def _call_jobs(case: dict, ctx: Ctx) -> Any:
    jobs, cluster = _jobs_cluster(case, ctx)
    jobs.check_cluster(cluster)
    return jobs


register("Jobs", "data", jobs_cases(), _call_jobs, None,
         lambda c: "jobs, cl = " + _render_jobs(c) + "; jobs.check_cluster(cl)")


def _call_get_backend(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    fa.available_backends()
    return fa.get_backend(case["backend"], need=case["need"])


register("get_backend", "data",
         st.fixed_dictionaries({"backend": st.sampled_from(["highs", "clarabel", "gurobi", "x",
                                                            None, 3, ""]),
                                "need": st.sampled_from(["lp", "milp", "exp_cone", "cvxpy",
                                                         None, "nope"])}),
         _call_get_backend, None, lambda c: f"fa.get_backend({c['backend']!r}, need={c['need']!r})")


# ============================================================================================
# partial allocation and auctions (Themis)
# ============================================================================================
@st.composite
def partial_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n, m = pick(draw, range(1, 6 + 1)), pick(draw, range(1, 4 + 1))
    U = positive_matrix(rng, n, m, pick(draw, STYLES), pick_scale(draw))
    S = maybe(draw, rng.uniform(0.5, 4, m) * pick(draw, [1.0, 1e6, 1e-6, 1e12]), 0.6)
    case: dict = {"utility": U, "supply": S}
    which = pick(draw, ["utility", "supply"])
    how = corruption(draw, 0.15)
    if how != "none" and case[which] is not None:
        case[which] = corrupt(rng, case[which], how)
    case["method"] = choose(draw, ["warm"] * 5 + ["cold"] * 3, ["x"])
    case["gap_tol"] = tolerance(draw, st.sampled_from([1e-9, 1e-6, 1e-4]), 0.1)
    case["workers"] = choose(draw, [1] * 6 + [2, 2, None], [0, 1.5])
    return finish(draw, case)


def _call_partial(case: dict, ctx: Ctx) -> Any:
    return _fa().partial_allocation(**case)


def _check_partial(case: dict, r: Any) -> None:
    U = np.asarray(case["utility"], float)
    n, m = U.shape
    S = np.ones(m) if case["supply"] is None else np.asarray(case["supply"], float)
    f = C._finite("fraction", r.fraction)
    if np.any(f <= 0) or np.any(f > 1 + 1e-12):
        raise Wrong(f"fraction outside (0, 1]: {f.tolist()}")
    A = C._finite("allocation", r.allocation)
    pf = C._finite("pf_allocation", r.pf_allocation)
    if not np.allclose(A, f[:, None] * pf, rtol=1e-9, atol=0):
        raise Wrong("allocation != fraction[:, None] * pf_allocation")
    if np.any(A.sum(axis=0) > S * (1 + C.FEAS)):
        raise Wrong("partial allocation exceeds the supply")
    left = np.asarray(r.leftover, float)
    if not np.allclose(left, S - A.sum(axis=0), rtol=1e-6, atol=1e-9 * S.max()):
        raise Wrong("leftover != supply - sum(allocation)")

    class _PF:  # the PF allocation is the equal-budget Fisher equilibrium
        allocation = pf
        prices = r.prices
        certificate = r.certificate
        status = r.status
    C.check_market(U, None, S, "linear", _PF)
    # c_i = prod_{j != i} u_j(x*) / OPT_{-i}; bounds on OPT_{-i} from proportional response
    # dynamics on each leave-one-out market (numpy, unit budgets). The reported c_i is an upper
    # estimate and c_i / (1 + fraction_error_i) a lower one (formulations/partial_allocation.md)
    u = (U * pf).sum(axis=1)
    if n < 2 or np.any(u <= 0) or U.shape[0] * U.shape[1] > 64:
        return
    err = np.asarray(r.fraction_error, float)
    P_minus = np.log(u).sum() - np.log(u)
    for i in range(n):
        keep = np.arange(n) != i
        lo, hi = C.proportional_response(U[keep], np.ones(n - 1), S)
        if not (np.isfinite(lo) and np.isfinite(hi)) or hi - lo > 1e-6 * (n - 1):
            continue
        c_low, c_high = math.exp(min(P_minus[i] - hi, 0.0)), math.exp(min(P_minus[i] - lo, 0.0))
        if f[i] < c_low * (1 - 1e-5):
            raise Wrong(f"fraction[{i}] = {f[i]!r} below the exact fraction, which is >= "
                        f"{c_low!r} (leave-one-out market by proportional response)")
        if f[i] / (1 + err[i]) > c_high * (1 + 1e-5):
            raise Wrong(f"fraction[{i}] / (1 + fraction_error) = {f[i] / (1 + err[i])!r} above "
                        f"the exact fraction, which is <= {c_high!r}")


register("partial_allocation", "auctions", partial_cases(), _call_partial, _check_partial,
         lambda c: f"fa.partial_allocation({_kw(c)})")


@st.composite
def bundle_cases(draw: Any) -> dict:
    g = pick(draw, range(1, 4 + 1))
    n = pick(draw, range(1, 3 + 1))
    bundles, values = [], []
    for _ in range(n):
        b = pick(draw, range(1, 3 + 1))
        bundles.append([sorted(draw(st.sets(st.integers(0, g - 1), min_size=1, max_size=g)))
                        for _ in range(b)])
        values.append([pick(draw, [0.5, 1.0, 2.0, 3.0, 4.0] * 3 + [1e-9, 1e9])
                       for _ in range(b)])
    if chance(draw, 0.1):
        values[0][0] = pick(draw, [-1.0, 0.0, math.nan, math.inf])
        doubt(draw, "invalid bundle value")
    if chance(draw, 0.1):
        bundles[0][0] = [g + 3]  # out-of-range good
        doubt(draw, "out-of-range good")
    empty = [pick(draw, [0.0, 0.0, 0.25, 1.0]) for _ in range(n)]
    return finish(draw, {"bundles": bundles, "values": values, "num_goods": g,
                         "empty_value": np.array(empty),
                         "time_limit": time_limit(draw, TIME_LIMITS, 0.15)})


def _call_bundle(case: dict, ctx: Ctx) -> Any:
    return _fa().bundle_auction(**case)


def _check_bundle(case: dict, r: Any) -> None:
    pf = np.asarray(r.pf_bundles)
    if pf.ndim == 2 and np.any(pf.sum(axis=0) > 1):
        raise Wrong("a good is in two PF bundles")
    f = C._finite("fraction", r.fraction)
    if np.any(f < 0) or np.any(f > 1 + 1e-12):
        raise Wrong(f"fraction outside [0, 1]: {f.tolist()}")
    alloc = np.asarray(r.allocation, float)
    if not np.allclose(alloc, f[:, None] * pf):
        raise Wrong("allocation != fraction[:, None] * pf_bundles")
    if not C.claims_success(r) or "bundles" not in case:
        raise Skip()
    best = C.brute_force_nash(case["bundles"], case["values"], case["num_goods"],
                             np.asarray(case["empty_value"], float))
    if not abs(float(r.objective) - best[1]) <= 1e-9 * max(1.0, abs(best[1])):
        raise Wrong(f"bundle_auction objective {float(r.objective)!r} != brute-force Nash "
                    f"welfare {best[1]!r}")


register("bundle_auction", "auctions", bundle_cases(), _call_bundle, _check_bundle,
         lambda c: f"fa.bundle_auction({_kw(c)})")


@st.composite
def gpu_auction_cases(draw: Any) -> dict:
    machines = pick(draw, range(1, 3 + 1))
    per = pick(draw, [1, 2, 4])
    n = pick(draw, range(1, 3 + 1))
    apps = [{"iter_total": pick(draw, [100.0, 1e6, 1.0]),
             "iter_time_serial": pick(draw, [4.0, 4.0, 1.0, 1e-6, 1e6]),
             "job_demand_max": pick(draw, [1, 2, 4]),
             "contention": pick(draw, [1.0, 2.0, 4.0])}
            for _ in range(n)]
    if chance(draw, 0.2):
        key = pick(draw, ["iter_time_serial", "job_demand_max", "contention"])
        apps[0][key] = pick(draw, {"iter_time_serial": [math.nan, -1.0, 0.0],
                                   "job_demand_max": [0, -1, 2.5],
                                   "contention": [math.inf, 0.5, math.nan]}[key])
        doubt(draw, f"invalid app {key}")
    return finish(draw, {"machines": machines, "per": per, "apps": apps,
                         "offer": choose(draw, ["all"] * 4 + ["half"] * 3, ["none", "bad"]),
                         "time_limit": time_limit(draw, TIME_LIMITS, 0.1)})


def _call_gpu_auction(case: dict, ctx: Ctx) -> Any:
    from functools import partial
    fa = _fa()
    topo = fa.Topology.uniform(case["machines"], case["per"])
    G = case["machines"] * case["per"]
    offer = {"all": list(range(G)), "half": list(range(0, G, 2)), "none": [],
             "bad": [G + 1]}[case["offer"]]
    tables = []
    for a in case["apps"]:
        f = partial(fa.single_job_rho, iter_total=a["iter_total"], iter_left=a["iter_total"],
                    iter_time_serial=a["iter_time_serial"], job_demand_max=a["job_demand_max"],
                    cluster_gpus=G, contention=a["contention"])
        tables.append(fa.bid_table(lambda k, s, f=f: f(k, slowdown=s), topo, offer))
    return fa.gpu_auction(tables, topo, offer, time_limit=case["time_limit"])


def _check_gpu_auction(case: dict, r: Any) -> None:
    _check_bundle(case, r)  # structure: disjoint PF bundles, fractions, allocation


register("gpu_auction", "auctions", gpu_auction_cases(), _call_gpu_auction, _check_gpu_auction,
         _via_registry("gpu_auction"))


@st.composite
def multi_round_cases(draw: Any) -> dict:
    return {"n": pick(draw, range(1, 5 + 1)), "seed": pick(draw, range(0, 100 + 1)),
            "fairness_knob": scalar(draw, st.sampled_from([0.8, 0.2, 0.5, 0.0]), 0.15),
            "lease": scalar(draw, st.sampled_from([300.0, 100.0, 1e-3, 1e6]), 0.15),
            "until": pick(draw, [600.0, 3000.0, math.inf, -1.0])}


def _call_multi_round(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    rng = np.random.default_rng(case["seed"])
    apps: list[Any] = []
    for i in range(case["n"]):
        if i % 3 == 2:
            apps.append(fa.SuccessiveHalvingApp(iter_time_serial=rng.uniform(5, 15, 4),
                                                phase_iters=[4, 8, 16], job_demand_max=2,
                                                seed=i))
        elif i % 4 == 3:
            apps.append(fa.CurveStoppingApp(iter_time_serial=rng.uniform(0.5, 2.0, 2),
                                            iter_total=rng.integers(50, 200, 2),
                                            job_demand_max=int(rng.integers(1, 3))))
        else:
            apps.append(fa.SingleJobApp(iter_total=int(rng.integers(200, 2000)),
                                        iter_time_serial=float(rng.uniform(0.5, 2.0)),
                                        job_demand_max=int(rng.integers(1, 5))))
    auc = fa.MultiRoundAuction(fa.Topology.uniform(2, 4), apps,
                               fairness_knob=case["fairness_knob"], lease=case["lease"],
                               seed=case["seed"])
    return auc.run(case["until"], max_rounds=50)


register("MultiRoundAuction.run", "auctions", multi_round_cases(), _call_multi_round, None,
         _via_registry("MultiRoundAuction.run"), slow=True)


# ============================================================================================
# valuations (Themis finish-time fairness)
# ============================================================================================
@st.composite
def rho_cases(draw: Any, which: str) -> dict:
    num = pick(draw, [1, 2, [0, 1, 2, 4], [1, 3]] * 3 + [-1, 2.5, "2", [], None, [math.nan]])
    sc = pick_scale(draw)
    common = {"job_demand_max": scalar(draw, st.integers(1, 8), 0.1),
              "cluster_gpus": scalar(draw, st.integers(1, 16), 0.1),
              "contention": scalar(draw, st.sampled_from([1.0, 4.0]), 0.1),
              "elapsed": scalar(draw, st.sampled_from([0.0, 100.0 * sc]), 0.1)}
    if which == "single_job_rho":
        total = scalar(draw, st.sampled_from([100.0, 1e6, 1.0]), 0.1)
        return {"num_gpus": num, "iter_total": total, "iter_left": pick(draw,
            [total, 0.0, 50.0]), "iter_time_serial": scalar(draw, st.sampled_from([4.0 * sc]),
                                                             0.1), **common}
    if which == "curve_stopping_rho":
        return {"num_gpus": num, "iter_time_serial": [1.0 * sc, 2.0 * sc],
                "iter_left": pick(draw, [[50, 100]] * 4 + [[0, 0]] * 2 + [[5], [-1, 3]]),
                "iter_total": pick(draw, [[100, 200]] * 5 + [[100], [4, 4]]), **common}
    return {"num_gpus": num, "iter_time_serial": [80 * sc, 100 * sc, 100 * sc, 120 * sc],
            "phase_iters": pick(draw, [[8, 16, 36]] * 4 + [[1], [4, 8]] * 2 + [[0], [8, -1]]),
            "budget": scalar(draw, st.sampled_from([10_000.0 * sc]), 0.15), **common}


def _rho_target(name: str) -> None:
    def call(case: dict, ctx: Ctx) -> Any:
        return getattr(_fa(), name)(**case)

    def check(case: dict, rho: Any) -> None:
        r = np.asarray(rho, float)
        if np.any(np.isnan(r)) or np.any(r < 0):
            raise Wrong(f"{name} returned {r.tolist()}")

    register(name, "valuations", rho_cases(name), call, check,
             lambda c: f"fa.{name}({_kw(c)})")


for _n in ("single_job_rho", "curve_stopping_rho", "successive_halving_rho"):
    _rho_target(_n)


@st.composite
def topology_cases(draw: Any) -> dict:
    machine = pick(draw, [[0, 0, 1, 1]] * 4 + [[0, 1], [0, 0, 1, 1, 2, 2, 3, 3]] * 2
                   + [[], [-1, 0], [0.5, 1], "ab", None])
    size = len(machine) if isinstance(machine, list) else 4
    return {"machine": machine,
            "rack": pick(draw, [None] * 4 + [[0] * size, [0, 0], [0]]),
            "gpus": pick(draw, [[0, 1], [0, 1], [0, size - 1], [size - 1], [0, 2], [], [9],
                                [-1], [0, 0], "x"]),
            "slowdown": pick(draw, [None] * 4 + [[1.0, 1.2, 1.7]] * 2
                             + [[1.0], [math.nan] * 3, [-1.0, 1.0, 1.0]])}


def _call_topology(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    t = fa.Topology(case["machine"], case["rack"])
    return (t.level(case["gpus"]), t.mask(case["gpus"]),
            fa.placement_slowdown(case["gpus"], t, case["slowdown"]))


register("Topology+placement_slowdown", "valuations", topology_cases(), _call_topology, None,
         lambda c: f"t = fa.Topology({c['machine']!r}, {c['rack']!r}); t.level({c['gpus']!r}); "
                   f"t.mask({c['gpus']!r}); fa.placement_slowdown({c['gpus']!r}, t, "
                   f"{c['slowdown']!r})")


# ============================================================================================
# forecasts and estimators (Shockwave)
# ============================================================================================
@st.composite
def posterior_cases(draw: Any) -> dict:
    N = scalar(draw, st.sampled_from([100.0, 12.0, 1e6, 1e-6, 1.0]), 0.15)
    K = scalar(draw, st.integers(1, 6), 0.15)
    obs = draw(st.lists(st.sampled_from([10.0, 20.0, 0.0, 1.0, 60.0, -1.0, math.nan, 1e300]),
                        max_size=4))
    return {"total_epochs": N, "num_regimes": K, "observed": obs}


def _posterior_target(name: str) -> None:
    def call(case: dict, ctx: Ctx) -> Any:
        return getattr(_fa(), name)(case["total_epochs"], case["num_regimes"], case["observed"])

    def check(case: dict, a: Any) -> None:
        a = np.asarray(a, float)
        N, K, obs = float(case["total_epochs"]), int(case["num_regimes"]), case["observed"]
        if a.shape != (K,):
            raise Wrong(f"shape {a.shape}, expected ({K},)")
        if not np.all(np.isfinite(a)) or np.any(a < 0) or a.sum() <= 0:
            raise Wrong(f"Dirichlet parameters must be finite, >= 0, not all 0: {a.tolist()}")
        k = len(obs)
        if name == "bayesian_posterior" and np.any(a[k:] <= 0):
            raise Wrong(f"unobserved regimes need positive parameters: {a.tolist()}")
        if name == "restatement_posterior" and k < K:
            # DESIGN.md: Dir(m_1..m_k, S_k, ..., S_k), S_k = (N - sum m) / (K - k); sums to N
            Sk = (N - sum(obs)) / (K - k)
            want = np.array(list(obs) + [Sk] * (K - k), float)
            if Sk > 0 and not np.allclose(a, want, rtol=1e-9, atol=0):
                raise Wrong(f"restatement posterior {a.tolist()} != {want.tolist()} "
                            f"(DESIGN.md Dirichlet rule)")
            if Sk > 0 and not np.isclose(a.sum(), N, rtol=1e-9):
                raise Wrong(f"restatement posterior sums to {a.sum()!r}, not N = {N!r}")

    register(name, "forecast", posterior_cases(), call, check,
             lambda c: f"fa.{name}({c['total_epochs']!r}, {c['num_regimes']!r}, "
                       f"{c['observed']!r})")


for _n in ("restatement_posterior", "bayesian_posterior"):
    _posterior_target(_n)


@st.composite
def forecast_cases(draw: Any) -> dict:
    n = pick(draw, range(0, 4 + 1))
    return {"model": pick(draw, ["accordion", "gns", "static"]),
            "total_epochs": scalar(draw, st.sampled_from([12.0, 100.0, 1e6, 2.0]), 0.1),
            "batch_sizes": [32.0 * 2 ** min(i, 2) for i in range(n)] if not chance(draw, 0.1)
            else draw(st.lists(st.sampled_from([32.0, 0.0, -1.0]), min_size=n, max_size=n)),
            "epoch_seconds": draw(st.lists(st.sampled_from([60.0] * 6 + [1e-6, 1e9, math.inf]),
                                           min_size=n, max_size=n + pick(draw, [0] * 8 + [1]))),
            "method": pick(draw, ["restatement"] * 3 + ["bayesian"] * 3 + ["greedy", "x"])}


def _call_forecast(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    model = {"accordion": lambda: fa.RegimeModel.accordion(32, 128, num_regimes=4),
             "gns": lambda: fa.RegimeModel.gns(32, max_batch_size=256),
             "static": lambda: fa.RegimeModel.static(32)}[case["model"]]()
    fc = fa.forecast_regimes(model, case["total_epochs"], case["batch_sizes"],
                             case["epoch_seconds"], method=case["method"])
    return fc, fc.epochs_advanced([0.0, 60.0, 1e4]), fc.sample_epochs(3)


def _check_forecast(case: dict, out: Any) -> None:
    fc, adv, samp = out
    post = getattr(fc, "posterior", None)
    if post is not None:
        p = np.asarray(post, float)
        if not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise Wrong(f"posterior Dirichlet parameters negative/non-finite: {p.tolist()}")
    a = np.asarray(adv, float)
    if np.any(np.diff(a) < -1e-9) or np.any(a < -1e-12):
        raise Wrong(f"epochs_advanced not non-decreasing/non-negative: {a.tolist()}")


register("forecast_regimes", "forecast", forecast_cases(), _call_forecast, _check_forecast,
         _via_registry("forecast_regimes"))


def _call_oracle(case: dict, ctx: Ctx) -> Any:
    fc = _fa().oracle_forecast(case["batch_sizes"], case["epoch_seconds"],
                               case["done"])
    return fc, fc.epochs_advanced([0.0, 60.0]), fc.sample_epochs(2)


@st.composite
def oracle_cases(draw: Any) -> dict:
    n = pick(draw, range(0, 6 + 1))
    return {"batch_sizes": draw(st.lists(st.sampled_from([32.0, 64.0]), min_size=n, max_size=n)),
            "epoch_seconds": draw(st.lists(st.sampled_from([60.0, 30.0, 1e-9, math.nan]),
                                           min_size=n, max_size=n)),
            "done": scalar(draw, st.integers(0, 7), 0.15)}


register("oracle_forecast", "forecast", oracle_cases(), _call_oracle, _check_forecast,
         lambda c: f"fa.oracle_forecast({c['batch_sizes']!r}, {c['epoch_seconds']!r}, "
                   f"{c['done']!r})")


@st.composite
def estimator_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n = pick(draw, range(1, 5 + 1))
    sc = pick_scale(draw)

    def vec(lo: float, hi: float) -> Any:
        return corrupt(rng, rng.uniform(lo, hi, n) * sc, corruption(draw, 0.12))
    fn = pick(draw, ["ftf_estimate", "contention_factor", "makespan_lower_bound",
                     "makespan_normalizer"])
    uses = {"ftf_estimate": "abcd", "contention_factor": "ad", "makespan_lower_bound": "cdw",
            "makespan_normalizer": "c"}[fn]
    case = {"fn": fn, "a": vec(0, 100), "b": vec(0, 100), "c": vec(1, 100),
            "d": scalar(draw, st.sampled_from([2.0, 1.0, 8.0]), 0.15),
            "workers": maybe(draw, rng.integers(1, 4, n), 0.5)}
    for key, letter in (("a", "a"), ("b", "b"), ("d", "d"), ("workers", "w")):
        if letter not in uses:
            case[key] = None  # not an argument of fn
    return case


def _call_estimators(case: dict, ctx: Ctx) -> Any:
    fa = _fa()
    fn = case["fn"]
    if fn == "ftf_estimate":
        return fa.ftf_estimate(case["a"], case["b"], case["c"], case["d"])
    if fn == "contention_factor":
        a = case["a"]
        try:  # "now": after the last arrival (1.0 where the test data is not numeric)
            now = float(np.nanmax(np.asarray(a, float), initial=0)) + 1.0
        except (TypeError, ValueError):
            now = 1.0
        return fa.contention_factor(a, now, case["d"])
    if fn == "makespan_lower_bound":
        return fa.makespan_lower_bound(case["c"], case["d"], workers=case["workers"])
    return fa.makespan_normalizer(case["c"])


def _check_estimators(case: dict, v: Any) -> None:
    fn = case["fn"]
    r = np.asarray(v, float)
    if np.any(np.isnan(r)):
        raise Wrong(f"{fn} returned NaN")
    if fn == "makespan_lower_bound":
        # vectorised over leading axes (documented): remaining of shape (..., n) gives (...)
        R = np.asarray(case["c"], float)
        w = (np.ones(R.shape[-1]) if case["workers"] is None
             else np.asarray(case["workers"], float))
        want = np.maximum((w * R).sum(axis=-1) / float(case["d"]), R.max(axis=-1))
        if r.shape != want.shape or not np.allclose(r, want, rtol=1e-9, atol=0.0):
            raise Wrong(f"makespan_lower_bound {r!r} != max(sum w R / M, max R) = {want!r}")
    if fn == "contention_factor" and np.any(r < 0):
        raise Wrong("negative contention factor")


register("forecast estimators", "forecast", estimator_cases(), _call_estimators,
         _check_estimators,
         _via_registry("forecast estimators"))


@st.composite
def regularizer_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n = pick(draw, range(1, 4 + 1))
    sc = pick_scale(draw)
    rem = rng.uniform(1, 100, n) * sc
    return {"work": corrupt(rng, rem * rng.uniform(0, 1, n), corruption(draw, 0.1)),
            "remaining": rem, "num_gpus": scalar(draw, st.sampled_from([2.0, 1.0, 8.0]), 0.1),
            "lam": scalar(draw, st.sampled_from([1e-3, 0.3]), 0.1),
            "kind": pick(draw, ["paper", "paper", "max_remaining", "x"])}


def _call_regularizer(case: dict, ctx: Ctx) -> Any:
    import cvxpy as cp
    try:  # a cvxpy expression where cvxpy accepts the data (else the raw value)
        work = cp.Constant(case["work"])
    except Exception:
        work = case["work"]
    term = _fa().makespan_regularizer(work, case["remaining"],
                                      case["num_gpus"], lam=case["lam"], kind=case["kind"])
    return float(term.value)


def _check_regularizer(case: dict, v: Any) -> None:
    if not np.isfinite(v) or v > 1e-12:
        raise Wrong(f"makespan_regularizer value {v!r} (a penalty: finite, <= 0)")


register("makespan_regularizer", "forecast", regularizer_cases(), _call_regularizer,
         _check_regularizer,
         lambda c: f"fa.makespan_regularizer(cp.Constant({short_repr(c['work'])}), "
                   f"{short_repr(c['remaining'])}, {c['num_gpus']!r}, lam={c['lam']!r}, "
                   f"kind={c['kind']!r}).value")


# ============================================================================================
# Shockwave plans
# ============================================================================================
@st.composite
def plan_cases(draw: Any, relax: bool = False) -> dict:
    rng = rng_from(draw)
    n = pick(draw, range(1, 5 + 1))
    sc = pick(draw, [1.0, 1.0, 1e-6, 1e6, 1e-12, 1e12, 1e3])
    jobs = []
    for _ in range(n):
        total = float(rng.integers(10, 200))
        done = float(rng.integers(0, int(total)))
        left = total - done
        parts = int(rng.integers(1, 3)) if left >= 2 else 1
        first = float(rng.integers(1, int(left))) if parts == 2 else left
        epochs = [first, left - first][:parts]
        regimes = [(float(rng.uniform(10, 100)) * sc, e) for e in epochs]
        jobs.append({"workers": int(rng.choice([1, 1, 1, 2, 2, 4])), "total_epochs": total,
                     "done_epochs": done, "ftf": float(rng.uniform(0.5, 3.0)),
                     "regimes": regimes})
    if chance(draw, 0.15):
        j = jobs[0]
        key = pick(draw, ["workers", "total_epochs", "done_epochs", "ftf",
                                    "regimes"])
        j[key] = pick(draw, [math.nan, -1.0, 0, math.inf, [], [(math.inf, 3.0)],
                                       [(10.0, -2.0)], "x"])
        doubt(draw, f"invalid plan job {key}")
    case = {"jobs": jobs, "num_gpus": scalar(draw, st.sampled_from([4, 4, 8, 2, 1]), 0.1),
            "rounds": scalar(draw, st.sampled_from([2, 3, 5]), 0.1),
            "round_duration": scalar(draw, st.sampled_from([120.0 * sc, 60.0 * sc]), 0.1),
            "k": scalar(draw, st.sampled_from([5.0, 1.0, 0.0, 1100.0, 50.0]), 0.1),
            "lam": scalar(draw, st.sampled_from([1e-3, 0.0, 1.0]), 0.1)}
    if isinstance(case["num_gpus"], int) and max(
            (j["workers"] for j in jobs if isinstance(j["workers"], int)),
            default=0) > case["num_gpus"]:
        doubt(draw, "a job's gang exceeds the GPUs")
    if not relax:
        case["method"] = choose(draw, ["auto"] * 6 + ["fast", "milp"], ["x"])
        case["time_limit"] = time_limit(draw, TIME_LIMITS, 0.1)
        case["gap_tol"] = tolerance(draw, st.sampled_from([1e-3, 1e-6, 0.05]), 0.1)
        if case["gap_tol"] == 1e-6:
            doubt(draw, "a MIP gap of 1e-6 (may be out of reach)")
    return finish(draw, case)


def _plan_jobs(case: dict) -> list:
    fa = _fa()
    return [fa.PlanJob(**j) for j in case["jobs"]]


def _call_plan(case: dict, ctx: Ctx) -> Any:
    kw = {k: v for k, v in case.items() if k not in ("jobs", "num_gpus")}
    return _fa().plan_schedule(_plan_jobs(case), case["num_gpus"], **kw)


def _advance(regimes: list, left: float, seconds: float) -> float:
    """Epochs a job advances in ``seconds`` of work through its regimes (capped at ``left``)."""
    done = 0.0
    for sec, ep in regimes:
        if seconds <= 0:
            break
        take = min(float(ep), seconds / float(sec))
        done += take
        seconds -= take * float(sec)
    return min(done, left)


def _remaining_time(regimes: list, advanced: float) -> float:
    """Isolated run time of the epochs left after advancing ``advanced`` epochs."""
    t = 0.0
    for sec, ep in regimes:
        skip = min(float(ep), advanced)
        advanced -= skip
        t += (float(ep) - skip) * float(sec)
    return t


def _check_plan(case: dict, r: Any) -> None:
    S = np.asarray(r.schedule)
    jobs = case["jobs"]
    n = len(jobs)
    R = int(case["rounds"])
    if S.shape != (n, R):
        raise Wrong(f"schedule shape {S.shape}, expected {(n, R)}")
    w = np.array([j["workers"] for j in jobs], float)
    M = float(case["num_gpus"])
    load = w @ S.astype(float)
    if np.any(load > M + 1e-9):
        raise Wrong(f"a round uses {load.max()!r} GPUs of {case['num_gpus']!r}")
    given = S.sum(axis=1)
    if not np.array_equal(np.asarray(r.rounds_given), given):
        raise Wrong(f"rounds_given {np.asarray(r.rounds_given).tolist()} != schedule row sums "
                    f"{given.tolist()}")
    if not C.claims_success(r):
        raise Skip()
    # DESIGN.md "Regime forecast and plan": UTIL, R_j, H, Z0, welfare, objective
    D = float(case["round_duration"])
    E = np.array([j["total_epochs"] for j in jobs], float)
    F = np.array([j["done_epochs"] for j in jobs], float)
    adv = np.array([_advance(j["regimes"], E[i] - F[i], given[i] * D)
                    for i, j in enumerate(jobs)])
    util = (F + adv) / E
    rem = np.array([_remaining_time(j["regimes"], adv[i]) for i, j in enumerate(jobs)])
    z0 = sum(_remaining_time(j["regimes"], 0.0) for j in jobs)
    H = max(float((w * rem).sum()) / M, float(rem.max()))
    checks = {"utility": (np.asarray(r.utility, float), util),
              "remaining": (np.asarray(r.remaining, float), rem),
              "makespan_bound": (np.array([r.makespan_bound]), np.array([H])),
              "z0": (np.array([r.z0]), np.array([z0]))}
    for name, (got, want) in checks.items():
        if not np.allclose(got, want, rtol=1e-6, atol=1e-12 * max(1.0, float(np.abs(want).max()))):
            raise Wrong(f"plan {name} {got.tolist()} != {want.tolist()} (DESIGN.md semantics)")
    rho = np.array([j["ftf"] for j in jobs], float)
    k, lam = float(case["k"]), float(case["lam"])
    shift = float(getattr(r, "log_scale", 0.0))  # documented: values x exp(-log_scale)
    with np.errstate(over="ignore", divide="ignore"):
        weights = np.exp(k * np.log(rho) - shift)
        welfare = float((weights * np.log(np.maximum(util, 1e-300))).sum()) / (n * M)
    if np.all(np.isfinite(weights)) and np.all(util >= 1e-6) and np.isfinite(welfare):
        if not np.isclose(r.welfare, welfare, rtol=1e-6, atol=1e-12):
            raise Wrong(f"plan welfare {r.welfare!r} != (1/(N M)) sum rho^k log UTIL "
                        f"(x exp(-log_scale)) = {welfare!r}")
        with np.errstate(over="ignore"):
            obj = welfare - lam * H / z0 * np.exp(-shift)
        if np.isfinite(obj) and not np.isclose(r.objective, obj, rtol=1e-6, atol=1e-12):
            raise Wrong(f"plan objective {r.objective!r} != welfare - lam H / Z0 = {obj!r}")
    if r.bound < r.objective - 1e-9 * max(1.0, abs(r.objective)):
        raise Wrong(f"plan bound {r.bound!r} below its objective {r.objective!r}")


def _render_plan(c: dict, fn: str = "plan_schedule") -> str:
    jobs = ", ".join(f"fa.PlanJob({_kw(j)})" for j in c["jobs"])
    kw = {k: v for k, v in c.items() if k not in ("jobs", "num_gpus")}
    return f"fa.{fn}([{jobs}], {c['num_gpus']!r}, {_kw(kw)})"


register("plan_schedule", "schedule", plan_cases(), _call_plan, _check_plan, _render_plan)


def _call_relax(case: dict, ctx: Ctx) -> Any:
    kw = {k: v for k, v in case.items() if k not in ("jobs", "num_gpus")}
    return _fa().relax_plan(_plan_jobs(case), case["num_gpus"], **kw)


def _check_relax(case: dict, r: Any) -> None:
    x = C._finite("allocation", r.allocation)
    if np.any(x < -1e-7) or np.any(x > 1 + 1e-7):
        raise Wrong("relaxed plan fraction outside [0, 1]")
    w = np.array([j["workers"] for j in case["jobs"]], float)
    if x.ndim == 2 and np.any(w @ x > float(case["num_gpus"]) * (1 + 1e-6)):
        raise Wrong("relaxed plan exceeds the GPUs in a round")
    if not np.allclose(np.asarray(r.rounds_given, float), x.sum(axis=1), rtol=1e-9,
                       atol=1e-12):
        raise Wrong("relaxed plan rounds_given != allocation row sums")
    p = np.asarray(r.prices, float)
    if np.any(~np.isfinite(p)) or np.any(p < 0):
        raise Wrong(f"relaxed plan prices must be finite and non-negative: {p.tolist()}")
    C.claims_success(r)


register("relax_plan", "schedule", plan_cases(relax=True), _call_relax, _check_relax,
         lambda c: _render_plan(c, "relax_plan"))


@st.composite
def replan_cases(draw: Any) -> dict:
    return {"mode": pick(draw, ["reactive", "reactive", "lazy", "lazy", "x", None]),
            "rounds_elapsed": scalar(draw, st.integers(0, 30), 0.15),
            "planned_rounds": scalar(draw, st.integers(1, 30), 0.15),
            "arrived": scalar(draw, st.integers(0, 3), 0.15),
            "finished": scalar(draw, st.integers(0, 3), 0.15)}


def _call_replan(case: dict, ctx: Ctx) -> Any:
    kw = dict(case)
    return _fa().ReplanPolicy(kw.pop("mode")).decide(**kw)


register("ReplanPolicy.decide", "schedule", replan_cases(), _call_replan, None,
         lambda c: f"fa.ReplanPolicy({c['mode']!r}).decide("
                   f"{_kw({k: v for k, v in c.items() if k != 'mode'})})",
         unused=("arrived", "finished"))  # counts, bools or sequences of job ids


@st.composite
def planjob_cases(draw: Any) -> dict:
    case = draw(plan_cases(relax=True))
    return {"job": case["jobs"][0],
            "seconds": pick(draw, [[0.0, 60.0, 1e4], [1e300], [-1.0], [math.nan],
                                             [math.inf], 5.0])}


def _call_planjob(case: dict, ctx: Ctx) -> Any:
    return _fa().PlanJob(**case["job"]).epochs_advanced(case["seconds"])


def _check_planjob(case: dict, a: Any) -> None:
    a = np.asarray(a, float)
    j = case["job"]
    cap = float(j["total_epochs"]) - float(j["done_epochs"])
    if np.any(np.isnan(a)) or np.any(a < -1e-12) or np.any(a > cap * (1 + 1e-12) + 1e-12):
        raise Wrong(f"epochs_advanced {a.tolist()} outside [0, {cap}]")


register("PlanJob.epochs_advanced", "schedule", planjob_cases(), _call_planjob, _check_planjob,
         lambda c: f"fa.PlanJob({_kw(c['job'])}).epochs_advanced({c['seconds']!r})")


# ============================================================================================
# elastic fair queuing (Ares)
# ============================================================================================
@st.composite
def efq_cases(draw: Any) -> dict:
    rng = rng_from(draw)
    n = pick(draw, range(1, 6 + 1))
    sc = pick_scale(draw)
    if chance(draw, 0.15):
        arrival, work = np.zeros(3), np.array([1.0, 2.0, 3.0]) * sc
    else:
        arrival = np.sort(rng.uniform(0, 10, n)) * sc * pick(draw, [1.0, 0.0])
        work = rng.uniform(0.5, 5, n) * sc
    case: dict = {"arrival": arrival, "gpu_time": work,
                  "num_gpus": choose(draw, [1] * 4 + [2] * 3 + [4] * 3 + [{"a": 2},
                                                                     {"a": 1, "b": 2}],
                                     [0, -1, 1.5])}
    which = pick(draw, ["arrival", "gpu_time"])
    case[which] = corrupt(rng, case[which], corruption(draw, 0.2))
    case["alpha"] = scalar(draw, st.sampled_from([0.75, 0.5, 1.0]), 0.12)
    if chance(draw, 0.3):
        case["requested"] = rng.integers(1, 3, n)
        doubt(draw, "requested GPUs (may not match the jobs or the cluster)")
    if chance(draw, 0.2):
        # 2.5 at 2 GPUs is superlinear: per-GPU throughput may not rise (documented)
        case["scaling"] = choose(draw, [[1.0, 1.8, 3.0], [1.0]], [[1.0, 2.5], [1.0, math.nan]])
    if isinstance(case["num_gpus"], dict) and draw(st.booleans()):
        case["gpu_power"] = {k: choose(draw, [1.0, 2.0], [0.0, -1.0])
                             for k in case["num_gpus"]}
    return finish(draw, case)


def _efq_single(arrival: np.ndarray, work: np.ndarray, vfin: np.ndarray) -> np.ndarray:
    """Preemptive service in virtual-finish order on one GPU (EFQ with M = 1)."""
    n = len(arrival)
    rem = work.astype(float).copy()
    fin = np.full(n, np.nan)
    t = 0.0
    while np.isnan(fin).any():
        todo = np.isnan(fin)
        here = todo & (arrival <= t)
        if not here.any():
            t = float(arrival[todo].min())
            continue
        idx = np.flatnonzero(here)
        j = idx[np.lexsort((idx, arrival[idx], vfin[idx]))[0]]
        later = arrival[todo & (arrival > t)]
        ta = float(later.min()) if later.size else math.inf
        if t + rem[j] <= ta:
            t += rem[j]
            fin[j] = t
        else:
            rem[j] -= ta - t
            t = ta
    return fin


def _check_efq_times(case: dict, efq: Any, gps: Any) -> None:
    a = np.asarray(case["arrival"], float)
    L = np.asarray(case["gpu_time"], float)
    efq = C._finite("efq_finish", efq)
    gps = C._finite("gps_finish", gps)
    if np.any(efq < a + L / max(1.0, _gpus(case)) * (1 - 1e-9)) or np.any(gps < a):
        raise Wrong("a job finishes before it could have")
    M = case["num_gpus"]
    plain = (not isinstance(M, (dict, bool)) and M in (1, 2, 4) and "requested" not in case
             and "scaling" not in case)
    if plain:
        # linear scaling and a power-of-two cluster: the head job doubles up to all M GPUs,
        # so EFQ and GPS are the one-GPU schedules of the work L / M
        L = L / M
        want_gps = C.gps_finish(a, L, 1.0)
        tol = 1e-9 * float(np.max(np.abs(want_gps)))
        if not np.allclose(gps, want_gps, rtol=1e-9, atol=tol):
            raise Wrong(f"GPS finish {gps.tolist()} != reference {want_gps.tolist()}")
        # virtual finish times from the GPS reference: V(a_j) + L_j
        vfin = _virtual_finish(a, L)
        if np.unique(np.round(vfin / max(vfin.max(), 1e-300), 9)).size == len(vfin):
            want = _efq_single(a, L, vfin)
            if not np.allclose(efq, want, rtol=1e-9, atol=tol):
                raise Wrong(f"EFQ finish {efq.tolist()} != reference {want.tolist()} (preemptive "
                            f"virtual-finish order, work / M)")


def _gpus(case: dict) -> float:
    g = case["num_gpus"]
    return float(sum(g.values())) if isinstance(g, dict) else float(g)


def _virtual_finish(a: np.ndarray, L: np.ndarray) -> np.ndarray:
    """V(a_j) + L_j with dV/dt = 1 / N_t (GPS on one GPU)."""
    fin = C.gps_finish(a, L, 1.0)
    events = np.unique(np.concatenate([a, fin]))
    V = np.zeros(len(events))
    for i in range(1, len(events)):
        t0, t1 = events[i - 1], events[i]
        N = int(np.sum((a <= t0) & (fin > t0)))
        V[i] = V[i - 1] + ((t1 - t0) / N if N else 0.0)
    return np.interp(a, events, V) + L


def _call_efq_times(case: dict, ctx: Ctx) -> Any:
    return _fa().efq_finish_times(**case)


register("efq_finish_times", "queuing", efq_cases(), _call_efq_times,
         lambda c, r: _check_efq_times(c, *r), lambda c: f"fa.efq_finish_times({_kw(c)})")


def _call_efq_schedule(case: dict, ctx: Ctx) -> Any:
    return _fa().efq_schedule(**case)


def _check_efq_schedule(case: dict, r: Any) -> None:
    C.check_replay_status(r)
    _check_efq_times(case, r.efq_finish, r.gps_finish)


register("efq_schedule", "queuing", efq_cases(), _call_efq_schedule, _check_efq_schedule,
         lambda c: f"fa.efq_schedule({_kw(c)})")


@st.composite
def queue_cases(draw: Any) -> dict:
    ops: list[tuple[str, Any, dict[str, Any]]] = []
    t = 0.0
    sc = pick_scale(draw)
    for i in range(pick(draw, range(1, 8 + 1))):
        op = pick(draw, ["submit"] * 4 + ["advance"] * 2 + ["finish", "cancel"])
        t += pick(draw, [0.0, 1.0, 5.0])
        if op == "submit":
            ops.append(("submit", i, {"gpu_time": scalar(draw, st.sampled_from([1.0 * sc,
                                                                               3.0 * sc]), 0.15),
                                      "requested": scalar(draw, st.sampled_from([1, 1, 2]),
                                                          0.1),
                                      "at": t * sc}))
        elif op == "advance":
            ops.append(("advance", None, {"to": scalar(draw, st.just(t * sc), 0.15)}))
        else:
            known = [o[1] for o in ops if o[0] == "submit"]
            ops.append((op, pick(draw, known * 4 + [0, "nope"]) if known else 0, {}))
    return {"num_gpus": pick(draw, [2] * 3 + [4] * 4 + [1, 0, {"a": 2}, -3]),
            "alpha": scalar(draw, st.just(0.75), 0.1),
            "start": scalar(draw, st.just(0.0), 0.15), "ops": ops}


def _call_queue(case: dict, ctx: Ctx) -> Any:
    q = _fa().ElasticFairQueue(case["num_gpus"], case["alpha"], start=case["start"],
                               record=True)
    finished = []
    for op, jid, kw in case["ops"]:
        if op == "submit":
            q.submit(jid, **kw)
        elif op == "advance":
            finished += q.advance(**kw)
        elif op == "finish":
            q.finish(jid)
        else:
            q.cancel(jid)
        alloc = q.allocation()
        if sum(alloc.values()) > _gpus(case):
            raise Wrong(f"allocation {alloc} exceeds {case['num_gpus']} GPUs")
    return finished, q.history(), q.placement()


register("ElasticFairQueue", "queuing", queue_cases(), _call_queue, None,
         _via_registry("ElasticFairQueue"))


# ============================================================================================
# simulator
# ============================================================================================
@st.composite
def workload_cases(draw: Any) -> dict:
    return {"num_jobs": scalar(draw, st.integers(1, 4), 0.12),
            "rate": scalar(draw, st.sampled_from([6.0, 0.1, 100.0]), 0.12),
            "seed": scalar(draw, st.integers(0, 9), 0.1),
            "types": pick(draw, [("v100",), ("v100", "k80"), (), ("nope",)]),
            "models": pick(draw, [None, None, ("ResNet-18",), ("nope",), ()]),
            "max_scale_factor": pick(draw, [None, 1, 2, 0])}


def _call_poisson(case: dict, ctx: Ctx) -> Any:
    from fairalloc.sim import poisson_workload
    return poisson_workload(**case)


register("sim.poisson_workload", "sim", workload_cases(), _call_poisson, None,
         lambda c: f"fairalloc.sim.poisson_workload({_kw(c)})")


@st.composite
def trace_cases(draw: Any) -> dict:
    lines = []
    for j in range(pick(draw, [1, 1, 2, 3, 0])):
        f = ["LM (batch size 10)", "python3 main.py", "lm", "--steps", "1",
             str(pick(draw, [1000, 5000])), str(pick(draw, [1, 1, 1, 1, 2, 3])),
             pick(draw, ["static", "accordion", "gns"]), str(pick(draw, [1.0, 2.0])),
             "-1.000000", pick(draw, ["3600.0", "60.0", "86400.0"]), str(10.0 * j)]
        lines.append(f)
    if lines and chance(draw, 0.35):  # one bad field
        field, bad = pick(draw, [(5, ["0", "-5", "abc", "1e400"]), (6, ["0", "-1", "2.5"]),
                                 (7, ["nope", ""]), (8, ["0.0", "nan", "-1"]),
                                 (10, ["inf", "nan", "-1", "abc", "1e300", "1e-300", "0"]),
                                 (11, ["-5", "nan", "inf"]), (None, [""])])
        if field is None:
            lines[0] = lines[0][: pick(draw, range(0, 11 + 1))]
        else:
            lines[0][field] = pick(draw, bad)
    raw = ("\n".join("\t".join(f) for f in lines) + "\n").encode()
    if chance(draw, 0.05):
        raw = raw + b"\xff\xfe\x00bad"
    table = pick(draw, [None] * 8 + ["valid"] * 8 + ["bad_json", "non_numeric", "binary",
                                                     "wrong_shape"])
    return {"trace": raw, "table": table, "limit": pick(draw, [None] * 12 + [1, 0, -1])}


_TABLES = {
    "valid": b'{"v100": {"(\'LM (batch size 10)\', 1)": {"null": 100.0}}, '
             b'"k80": {"(\'LM (batch size 10)\', 1)": {"null": 25.0}}}',
    "bad_json": b'{"v100": {',
    "non_numeric": b'{"v100": {"(\'LM (batch size 10)\', 1)": {"null": "fast"}}}',
    "binary": b"\xff\xfe\x00\x01",
    "wrong_shape": b'[1, 2, 3]',
}


def _call_trace(case: dict, ctx: Ctx) -> Any:
    from fairalloc.sim import read_trace
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "trace_fuzz.tsv")
        with open(p, "wb") as fh:
            fh.write(case["trace"])
        if case["table"]:
            with open(os.path.join(d, "tacc_throughputs.json"), "wb") as fh:
                fh.write(_TABLES[case["table"]])
        w = read_trace(p, limit=case["limit"])
    return w


def _check_trace(case: dict, w: Any) -> None:
    for name in ("arrival",):
        a = np.asarray(getattr(w, name), float)
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise Wrong(f"workload.{name} has non-finite or negative entries: {a.tolist()}")
    sec = np.asarray(w.regime_seconds, float)  # (n, R, k); inf: cannot run there / padding
    if np.any(np.isnan(sec)) or np.any(sec <= 0):
        raise Wrong("workload.regime_seconds has NaN or non-positive entries")
    if sec.size and not np.all(np.isfinite(sec[:, 0, :]).any(axis=1)):
        raise Wrong("a job of the workload can run on no type (first regime all inf)")
    ep = np.asarray(w.regime_epochs, float)
    if np.any(np.isnan(ep)) or np.any(ep < 0):
        raise Wrong("workload.regime_epochs has NaN or negative entries")


register("sim.read_trace", "sim", trace_cases(), _call_trace, _check_trace,
         _via_registry("sim.read_trace"))


@st.composite
def simulate_cases(draw: Any) -> dict:
    return {"num_jobs": pick(draw, range(1, 3 + 1)), "seed": pick(draw, range(0, 20 + 1)),
            "policy": pick(draw, ["fifo", "las", "max_min_fairness", "efq", "nope",
                                            "gavel", "themis", "shockwave"]),
            "workers": pick(draw, [{"v100": 2}, {"v100": 1}, {"v100": 0},
                                             {"v100": 4}]),
            "round_duration": scalar(draw, st.sampled_from([360.0, 3600.0]), 0.15)}


#: Rounds a fuzzed simulation may run (see _call_trace_simulate).
SIMULATE_MAX_ROUNDS = 5_000


def _call_simulate(case: dict, ctx: Ctx) -> Any:
    from fairalloc.sim import poisson_workload, simulate
    w = poisson_workload(case["num_jobs"], seed=case["seed"], rate=60.0, max_scale_factor=1,
                         duration_classes=((0.05, 0.2, 1.0),))
    ctx.watch("workload", w)
    return simulate(w, _fa().Cluster(case["workers"]), case["policy"],
                    round_duration=case["round_duration"], max_rounds=SIMULATE_MAX_ROUNDS)


def _check_simulate(case: dict, r: Any) -> None:
    start, finish = np.asarray(r.start, float), np.asarray(r.finish, float)
    arrival = np.asarray(r.workload.arrival, float)
    done = np.isfinite(finish)
    if np.any(finish[done] < start[done] - 1e-9) or \
            np.any(start[np.isfinite(start)] < arrival[np.isfinite(start)] - 1e-9):
        raise Wrong("a job starts before it arrives or finishes before it starts")


register("sim.simulate", "sim", simulate_cases(), _call_simulate, _check_simulate,
         lambda c: f"w = poisson_workload({c['num_jobs']}, seed={c['seed']}, rate=60.0, "
                   f"max_scale_factor=1, duration_classes=((0.05, 0.2, 1.0),)); simulate(w, "
                   f"fa.Cluster({c['workers']!r}), {c['policy']!r}, "
                   f"round_duration={c['round_duration']!r})", slow=True)


@st.composite
def trace_simulate_cases(draw: Any) -> dict:
    lines = []
    for j in range(pick(draw, range(1, 3 + 1))):
        lines.append("\t".join([
            "LM (batch size 10)", "python3 main.py", "lm", "--steps", "1",
            str(pick(draw, [1000, 5000])), "1", pick(draw, ["static", "accordion", "gns"]),
            "1.0", "-1.000000",
            pick(draw, ["3600.0", "600.0", "60.0"] * 4 + ["1e-300", "1e300", "1e9", "1e7"]),
            str(10.0 * j)]))
    return {"trace": ("\n".join(lines) + "\n").encode(),
            "policy": pick(draw, ["fifo", "max_min_fairness", "las", "efq", "themis",
                                  "shockwave"]),
            "round_duration": pick(draw, [360.0, 360.0, 60.0, 1e-3, 1e6])}


def _call_trace_simulate(case: dict, ctx: Ctx) -> Any:
    from fairalloc.sim import read_trace, simulate
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "trace_fuzz.tsv")
        with open(p, "wb") as fh:
            fh.write(case["trace"])
        w = read_trace(p)
    ctx.watch("workload", w)
    cluster = _fa().Cluster({t: 1 for t in w.types})
    # a 1e7-second job in 60-second rounds is a long simulation, not a hang: the fuzz bounds
    # it with max_rounds (exceeding it is a SimulationError, a fairalloc error); a loop the
    # bound does not stop is still caught by the per-call time limit
    return simulate(w, cluster, case["policy"], round_duration=case["round_duration"],
                    max_rounds=SIMULATE_MAX_ROUNDS)


register("sim.simulate(read_trace)", "sim", trace_simulate_cases(), _call_trace_simulate,
         _check_simulate,
         _via_registry("sim.simulate(read_trace)"), slow=True)


# ============================================================================================
FAMILIES: dict[str, list[str]] = {}
for _t in TARGETS.values():
    FAMILIES.setdefault(_t.family, []).append(_t.name)

__all__ = ["TARGETS", "FAMILIES", "register", "Skip", "Wrong"]


# ============================================================================================
# round-by-round API (fairalloc.rounds): drained types, unrunnable jobs, arrivals/departures
# ============================================================================================
ROUND_POLICIES = ("max_min_fairness", "max_total_throughput", "fifo", "finish_time_fairness",
                  "min_makespan")


@st.composite
def round_cases(draw: Any) -> dict:
    policy = pick(draw, ROUND_POLICIES)
    case = draw(gavel_cases(policy, rounds=True))
    case["policy"] = policy
    rng = rng_from(draw)
    workers = case["workers"]
    if all(isinstance(v, int) for v in workers.values()) and chance(draw, 0.4):
        workers[pick(draw, sorted(workers))] = 0  # drained: a normal state in a round
    case["as_dict"] = draw(st.booleans())
    case["next_keep"] = rng.random(len(np.atleast_1d(case["scale_factor"] if case[
        "scale_factor"] is not None else np.ones(1)))) < 0.7
    kw = case["kw"]
    case["kw"] = {key: kw[key] for key in ("method", "backend", "gap_tol") if key in kw}
    if policy == "max_min_fairness":
        case["kw"]["water_filling"] = kw.get("water_filling", False)
    return finish(draw, case)


def _round_args(case: dict) -> tuple[Any, dict]:
    T = case["throughput"]
    per_job = {key: case[key] for key in ("scale_factor", "weight", "steps_remaining",
                                          "elapsed") if case[key] is not None}
    if case["as_dict"] and isinstance(T, np.ndarray) and T.ndim == 2:
        names = list(case["workers"])
        if len(names) == T.shape[1]:
            T = {f"j{i}": {names[j]: float(T[i, j]) for j in range(T.shape[1])}
                 for i in range(T.shape[0])}
            per_job = {key: {f"j{i}": v for i, v in enumerate(np.asarray(val).tolist())}
                       if isinstance(val, np.ndarray) and val.ndim == 1 else val
                       for key, val in per_job.items()}
    return T, per_job


def _call_solve_round(case: dict, ctx: Ctx) -> Any:
    T, per_job = _round_args(case)
    return _fa().solve_round(case["policy"], T, case["workers"], **per_job, **case["kw"])


def _check_round(case: dict, r: Any) -> None:
    """Drained types and unrunnable jobs get exactly 0; the reduced program (present types,
    runnable jobs) is checked like any Gavel policy against linprog."""
    x = C._finite("x", r.x)
    types = list(r.types)
    ids = list(r.job_ids)
    drained = [types.index(t) for t in r.drained_types]
    out = [ids.index(j) for j in r.unrunnable_jobs]
    if np.any(x[:, drained] != 0) or np.any(x[out] != 0):
        raise Wrong("a drained type or an unrunnable job got time")
    if r.reduced is None:
        if np.any(x != 0):
            raise Wrong("an empty reduced round allocated time")
        return
    keep = [i for i in range(len(ids)) if i not in out]
    cols = [j for j in range(len(types)) if j not in drained]
    n = x.shape[0]
    if any(case[key] is not None and np.size(case[key]) != n
           for key in ("scale_factor", "weight", "steps_remaining", "elapsed")):
        raise Skip()  # per-job dicts may carry ids that are not in this round (ignored)
    g = _gavel(case)
    sub = C.Gavel(g.T[np.ix_(keep, cols)], g.s[keep], g.w[keep], g.c[cols],
                  None if g.steps is None else g.steps[keep], g.elapsed[keep], g.iso[keep])
    if not np.allclose(C._arr(r.reduced.x), x[np.ix_(keep, cols)], rtol=0, atol=0):
        raise Wrong("the reduced result's x is not the round's x on present types/jobs")
    C.check_allocation(sub, r.reduced, case["policy"])


register("solve_round", "rounds", round_cases(), _call_solve_round, _check_round,
         lambda c: f"fa.solve_round({c['policy']!r}, {short_repr(_round_args(c)[0])}, "
                   f"{c['workers']!r}, {_kw({**_round_args(c)[1], **c['kw']})})")


def _call_round_policy(case: dict, ctx: Ctx) -> Any:
    """Two rounds of a RoundPolicy: the second drops some jobs (departures), re-adds none, and
    drains nothing new. Returns ``(first, second)`` (``second`` is None when the case gives no
    dict of jobs to drop from); ``_check_round_policy`` checks both (a check inside the call
    would report a wrong answer as a crash)."""
    fa = _fa()
    T, per_job = _round_args(case)
    pol = fa.RoundPolicy(case["policy"], **case["kw"])  # settings are fixed per policy
    first = pol.allocate(T, case["workers"], **per_job)
    keep = np.asarray(case["next_keep"], bool)
    if not isinstance(T, dict) or keep.size != len(T):
        return first, None
    kept = [j for j, k in zip(T, keep) if k]
    T2 = {j: T[j] for j in kept}
    per2 = {key: {j: v[j] for j in kept} for key, v in per_job.items() if isinstance(v, dict)}
    return first, pol.allocate(T2, case["workers"], **per2)


def _check_round_policy(case: dict, out: Any) -> None:
    first, second = out
    try:
        _check_round(case, first)
    except Skip:
        pass  # nothing the check can judge in this round
    if second is None or second.reduced is None or not len(second.job_ids):
        return
    T = _round_args(case)[0]
    idx = [list(T).index(j) for j in second.job_ids]
    sub = dict(case)
    for key in ("scale_factor", "weight", "steps_remaining", "elapsed"):
        if case[key] is not None:
            sub[key] = np.asarray(case[key])[idx]
    sub["throughput"] = np.asarray(case["throughput"])[idx]
    _check_round(sub, second)


register("RoundPolicy.allocate", "rounds", round_cases(), _call_round_policy,
         _check_round_policy, _via_registry("RoundPolicy.allocate"))


# the case classes of issue #27 (valid instances on which fairalloc owes an answer)
from . import wide as _wide  # noqa: E402,F401  (registers its targets)

FAMILIES.clear()
for _t in TARGETS.values():
    FAMILIES.setdefault(_t.family, []).append(_t.name)
