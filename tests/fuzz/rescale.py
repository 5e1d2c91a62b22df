"""Unit-rescaling checks (issue #12, point 2): multiply one kind of data by 10^k and compare the
answer, mapped back as the maths says, with the answer at the original scale.

``RESCALE_FAMILIES`` maps a family name to how to build a generic instance, how to call the
entry point with the data scaled by ``alpha``, and how to map the result back:

* markets (linear and Leontief): budgets x a -> same allocation and utilities, prices x a;
  supply x a -> allocation and utilities x a; utilities x a -> same allocation, utilities x a.
* throughput policies: weights x a (max-min: same x, objective / a); throughputs x a (same x;
  max-min objective unchanged, total throughput x a, makespan / a); steps x a (min makespan:
  same x, makespan x a).
* partial allocation: utilities x a (same allocation and fractions); supply x a (allocation x a).
* finish-time fairness: steps and elapsed times x a (same x and objective: rho is unit-free).
* efq_schedule: arrival times and GPU-times x a (finish times x a).
* plan_schedule: durations (regime epoch seconds and the round duration) x a: same objective.

``PERM_FAMILIES``: permuting buyers / goods / jobs permutes the answer alike.

A *violation* is a different mapped answer (relative tolerance :data:`RTOL`, or the wider
tolerance the two certificates allow: a market's utilities, :func:`market_utility_tolerance`)
or a different certificate verdict; a *failure* is an exception at a scale where the base
instance solved.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .core import _Hang, _Timer

FACTORS = tuple(10.0 ** k for k in (-12, -9, -6, -3, 3, 6, 9, 12))
RTOL = 1e-5


@dataclass
class Family:
    name: str
    make: Callable[[np.random.Generator], dict]
    call: Callable[[dict, float], Any]
    mapped: Callable[[Any, float, dict], dict]   # result, alpha, case -> comparable arrays
    render: Callable[[dict, float], str]
    #: (base result, scaled result, alpha, case) -> {key: relative tolerance the results'
    #: certificates allow}; a key not listed is compared at :data:`RTOL`
    tolerance: Callable[[Any, Any, float, dict], dict[str, float]] | None = None


def market_utility_tolerance(gaps: tuple[float, float], budgets: tuple[Any, Any],
                             residuals: tuple[float, float] = (0.0, 0.0)) -> float:
    """How far apart (relative, as :func:`_rel_diff` measures) the utilities of two certified
    answers of one Fisher market may be, from their certificates alone.

    The Eisenberg-Gale objective ``f(u) = sum_i B_i log u_i`` is maximised over a convex set
    of utility vectors; at its maximiser ``u*`` the first-order condition gives
    ``sum_i B_i (u_i - u*_i) / u*_i <= 0`` for every feasible ``u``, and ``log`` curves down by
    at least ``1 / max(u_i, u*_i)^2``, so a feasible point with objective gap ``g``
    (``f(u*) - f(u) <= g``, what the certificate bounds) has
    ``B_i r_i^2 / 2 <= g`` with ``r_i = |u_i - u*_i| / max(u_i, u*_i)``: ``r_i <= sqrt(2 g /
    B_i)``. Two answers (gaps and budgets in each call's own units: a budget rescaling
    scales both) are apart by at most ``(r + r') / (1 - max(r, r'))`` of the larger; a
    relative primal residual ``p`` (the point is feasible for a supply ``1 + p`` times larger,
    whose utilities are ``1 + p`` times larger: utilities are homogeneous of degree 1) adds
    ``p``.

    >>> round(market_utility_tolerance((2e-10, 2e-10), ([1.0], [1.0])), 8)
    4e-05
    """
    def r(g: float, B: Any) -> float:
        b = float(np.min(np.asarray(B, float)))
        return math.sqrt(2.0 * max(float(g), 0.0) / b) if b > 0 else math.inf
    r1, r2 = r(gaps[0], budgets[0]), r(gaps[1], budgets[1])
    if not max(r1, r2) < 1.0:
        return math.inf
    return (r1 + r2) / (1.0 - max(r1, r2)) + float(residuals[0]) + float(residuals[1])


def _fa() -> Any:
    import fairalloc as fa
    return fa


def _verdict(r: Any) -> bool:
    return bool(r.certificate.ok)


def _rel_diff(a: Any, b: Any) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return math.inf
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    if scale == 0:
        return 0.0
    return float(np.max(np.abs(a - b), initial=0.0)) / scale


# --- markets --------------------------------------------------------------------------------
# instance styles: generic (unique allocation) half of the time, else real-data awkwardness
# (tied or identical rows, a dominant good, small integers, entries spread over 1e-6..1e6);
# allocations are compared only on generic instances, unique quantities always
STYLES = ("uniform", "uniform", "uniform", "tied", "tied_cols", "dominant", "integer", "spread")


def _matrix(rng: np.random.Generator, n: int, m: int, style: str) -> np.ndarray:
    from .strategies import positive_matrix
    if style == "spread":
        a = 10.0 ** rng.uniform(-6, 6, (n, m))
        return a
    return positive_matrix(rng, n, m, style, density=0.8)


def _generic(case: dict) -> bool:
    return case.get("_style", "uniform") == "uniform"


def _args(case: dict) -> dict:
    return {k: v for k, v in case.items() if not k.startswith("_")}


def _market_make(kind: str) -> Callable[[np.random.Generator], dict]:
    def make(rng: np.random.Generator) -> dict:
        n, m = int(rng.integers(2, 6)), int(rng.integers(2, 5))
        style = str(rng.choice(STYLES))
        U = _matrix(rng, n, m, style)
        return {"utility": U, "budget": rng.uniform(0.5, 2.0, n),
                "supply": rng.uniform(0.5, 4.0, m), "kind": kind, "_style": style}
    return make


def _volatile_make(kind: str) -> Callable[[np.random.Generator], dict]:
    def make(rng: np.random.Generator) -> dict:
        n, m, T = int(rng.integers(2, 5)), int(rng.integers(1, 4)), int(rng.integers(2, 4))
        style = str(rng.choice(STYLES))
        U = _matrix(rng, n, m * T, style).reshape(n, m, T)
        return {"utility": U, "budget": rng.uniform(0.5, 2.0, n),
                "supply": rng.uniform(0.5, 4.0, (m, T)), "kind": kind, "_style": style}
    return make


def _market_family(kind: str, what: str, volatile: bool = False) -> Family:
    fn = "volatile_fisher_market" if volatile else "fisher_market"

    def call(case: dict, a: float) -> Any:
        kw = _args(case)
        kw[what] = np.asarray(case[what]) * a
        return getattr(_fa(), fn)(**kw)

    def mapped(r: Any, a: float, case: dict) -> dict:
        from .checks import _bundle_values
        U = np.asarray(case["utility"], float) * (a if what == "utility" else 1.0)
        X = np.asarray(r.allocation, float)
        if U.ndim == 2:
            U, X = U[:, :, None], X[:, :, None]
        u = np.diag(_bundle_values(U, X, kind))
        back_x = X / a if what == "supply" else X
        if what == "supply" or (what == "utility" and kind == "linear"):
            back_u = u / a      # linear utility is sum_j u_ij x_ij
        elif what == "utility":
            back_u = u * a      # Leontief: u_i = min_j x_ij / a_ij
        else:
            back_u = u
        out = {"utility": back_u}
        if kind == "linear" and _generic(case):
            out["allocation"] = back_x
        return out

    def render(case: dict, a: float) -> str:
        from .core import short_repr
        kw = {k: (np.asarray(v) * a if k == what else v) for k, v in _args(case).items()}
        return f"fa.{fn}(" + ", ".join(f"{k}={short_repr(v)}" for k, v in kw.items()) + ")"

    def tolerance(base: Any, r: Any, a: float, case: dict) -> dict[str, float]:
        B = case["budget"]
        B = np.ones(np.asarray(case["utility"]).shape[0]) if B is None else np.asarray(B, float)
        c1, c2 = base.certificate, r.certificate
        return {"utility": market_utility_tolerance(
            (c1.gap, c2.gap), (B, B * a if what == "budget" else B),
            (c1.primal_residual, c2.primal_residual))}

    make = _volatile_make(kind) if volatile else _market_make(kind)
    label = "volatile market" if volatile else "market"
    return Family(f"{label} {kind}: {what} x a", make, call, mapped, render, tolerance)


# --- throughput policies --------------------------------------------------------------------
def _gavel_make(rng: np.random.Generator) -> dict:
    n, k = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    style = str(rng.choice(STYLES))
    return {"throughput": _matrix(rng, n, k, style), "_style": style,
            "weight": rng.uniform(0.5, 3.0, n),
            "steps_remaining": rng.uniform(100.0, 1e4, n),
            "workers": {f"t{j}": int(c) for j, c in enumerate(rng.integers(1, 5, k))}}


def _gavel_family(policy: str, what: str) -> Family:
    obj_power = {("max_min_fairness", "weight"): -1, ("max_min_fairness", "throughput"): 0,
                 ("max_total_throughput", "throughput"): 1, ("min_makespan", "throughput"): -1,
                 ("min_makespan", "steps_remaining"): 1,
                 ("water_filling", "weight"): None}[(policy, what)]

    def call(case: dict, a: float) -> Any:
        fa = _fa()
        kw = {k: v for k, v in _args(case).items() if k != "workers"}
        kw[what] = np.asarray(case[what]) * a
        return getattr(fa, policy)(fa.Jobs(**kw), fa.Cluster(case["workers"]))

    def mapped(r: Any, a: float, case: dict) -> dict:
        if obj_power is None:  # water-filling: its (weight-free) level vector is unique
            out = {"metric": np.asarray(r.metric, float)}
        else:
            out = {"objective": np.array([float(r.objective) / a ** obj_power])}
        if _generic(case):
            out["x"] = np.asarray(r.x, float)
        return out

    def render(case: dict, a: float) -> str:
        from .core import short_repr
        kw = {k: (np.asarray(v) * a if k == what else v) for k, v in _args(case).items()
              if k != "workers"}
        return f"fa.{policy}(fa.Jobs(" + ", ".join(f"{k}={short_repr(v)}" for k, v in kw.items()) \
            + f"), fa.Cluster({case['workers']!r}))"

    return Family(f"{policy}: {what} x a", _gavel_make, call, mapped, render)


# --- partial allocation ---------------------------------------------------------------------
def _partial_family(what: str) -> Family:
    def make(rng: np.random.Generator) -> dict:
        c = _market_make("linear")(rng)
        return {"utility": c["utility"], "supply": c["supply"], "_style": c["_style"]}

    def call(case: dict, a: float) -> Any:
        kw = _args(case)
        kw[what] = np.asarray(case[what]) * a
        return _fa().partial_allocation(**kw)

    def mapped(r: Any, a: float, case: dict) -> dict:
        x = np.asarray(r.allocation, float)
        out = {"fraction": np.asarray(r.fraction, float)}
        if _generic(case):
            out["allocation"] = x / a if what == "supply" else x
        return out

    def render(case: dict, a: float) -> str:
        from .core import short_repr
        kw = {k: (np.asarray(v) * a if k == what else v) for k, v in _args(case).items()}
        return "fa.partial_allocation(" + ", ".join(f"{k}={short_repr(v)}"
                                                    for k, v in kw.items()) + ")"

    return Family(f"partial_allocation: {what} x a", make, call, mapped, render)


# --- plan_schedule --------------------------------------------------------------------------
def _plan_make(rng: np.random.Generator) -> dict:
    jobs = []
    for _ in range(int(rng.integers(2, 5))):
        total = float(rng.integers(20, 200))
        done = float(rng.integers(0, int(total) - 10))
        left = total - done
        first = float(rng.integers(1, int(left)))
        jobs.append({"workers": int(rng.choice([1, 1, 2])), "total_epochs": total,
                     "done_epochs": done, "ftf": float(rng.uniform(0.5, 3.0)),
                     "regimes": [(float(rng.uniform(10, 100)), first),
                                 (float(rng.uniform(10, 100)), left - first)]})
    return {"jobs": jobs, "num_gpus": int(rng.choice([2, 4])), "rounds": 4,
            "round_duration": 120.0}


def _plan_scaled(case: dict, a: float) -> tuple[list, dict]:
    jobs = [dict(j, regimes=[(s * a, e) for s, e in j["regimes"]]) for j in case["jobs"]]
    kw = {"rounds": case["rounds"], "round_duration": case["round_duration"] * a}
    return jobs, kw


def _plan_call(case: dict, a: float) -> Any:
    fa = _fa()
    jobs, kw = _plan_scaled(case, a)
    return fa.plan_schedule([fa.PlanJob(**j) for j in jobs], case["num_gpus"], **kw)


def _relax_call(case: dict, a: float) -> Any:
    fa = _fa()
    jobs, kw = _plan_scaled(case, a)
    return fa.relax_plan([fa.PlanJob(**j) for j in jobs], case["num_gpus"], **kw)


def _relax_mapped(r: Any, a: float, case: dict) -> dict:
    # the relaxation's objective is concave but piecewise linear where a later regime is
    # faster (its concave envelope), so the rounds given are not unique: compare the optimum
    return {"objective": np.array([float(r.objective)])}


def _plan_mapped(r: Any, a: float, case: dict) -> dict:
    return {"objective": np.array([float(r.objective)])}


def _plan_render(case: dict, a: float) -> str:
    jobs, kw = _plan_scaled(case, a)
    js = ", ".join("fa.PlanJob(" + ", ".join(f"{k}={v!r}" for k, v in j.items()) + ")"
                   for j in jobs)
    return f"fa.plan_schedule([{js}], {case['num_gpus']!r}, " + \
        ", ".join(f"{k}={v!r}" for k, v in kw.items()) + ")"


# --- finish-time fairness: steps and elapsed times x a (rho is unit-free) --------------------
def _ftf_family() -> Family:
    def make(rng: np.random.Generator) -> dict:
        c = _gavel_make(rng)
        c["elapsed"] = rng.uniform(0.0, 1e3, len(c["weight"]))
        return c

    def call(case: dict, a: float) -> Any:
        fa = _fa()
        kw = {k: v for k, v in _args(case).items() if k != "workers"}
        kw["steps_remaining"] = np.asarray(case["steps_remaining"]) * a
        kw["elapsed"] = np.asarray(case["elapsed"]) * a
        return fa.finish_time_fairness(fa.Jobs(**kw), fa.Cluster(case["workers"]))

    def mapped(r: Any, a: float, case: dict) -> dict:
        out = {"objective": np.array([float(r.objective)])}
        if _generic(case):
            out["x"] = np.asarray(r.x, float)
        return out

    def render(case: dict, a: float) -> str:
        from .core import short_repr
        kw = {k: (np.asarray(v) * a if k in ("steps_remaining", "elapsed") else v)
              for k, v in _args(case).items() if k != "workers"}
        return "fa.finish_time_fairness(fa.Jobs(" + ", ".join(
            f"{k}={short_repr(v)}" for k, v in kw.items()) + f"), fa.Cluster({case['workers']!r}))"

    return Family("finish_time_fairness: steps, elapsed x a", make, call, mapped, render)


# --- elastic fair queuing: arrival times and GPU-times x a -> finish times x a ----------------
def _efq_family() -> Family:
    def make(rng: np.random.Generator) -> dict:
        n = int(rng.integers(2, 7))
        return {"arrival": np.sort(rng.uniform(0, 10, n)), "gpu_time": rng.uniform(0.5, 5, n),
                "num_gpus": int(rng.choice([1, 2, 4]))}

    def call(case: dict, a: float) -> Any:
        return _fa().efq_schedule(np.asarray(case["arrival"]) * a,
                                  np.asarray(case["gpu_time"]) * a, case["num_gpus"])

    def mapped(r: Any, a: float, case: dict) -> dict:
        return {"efq_finish": np.asarray(r.efq_finish, float) / a,
                "gps_finish": np.asarray(r.gps_finish, float) / a}

    def render(case: dict, a: float) -> str:
        from .core import short_repr
        return (f"fa.efq_schedule({short_repr(np.asarray(case['arrival']) * a)}, "
                f"{short_repr(np.asarray(case['gpu_time']) * a)}, {case['num_gpus']!r})")

    return Family("efq_schedule: times x a", make, call, mapped, render)


RESCALE_FAMILIES: dict[str, Family] = {}
for _f in ([_market_family(k, w) for k in ("linear", "leontief")
            for w in ("budget", "supply", "utility")]
           + [_market_family(k, w, volatile=True) for k in ("linear", "leontief")
              for w in ("budget", "supply")]
           + [_gavel_family("max_min_fairness", "weight"),
              _gavel_family("water_filling", "weight"),
              _gavel_family("max_min_fairness", "throughput"),
              _gavel_family("max_total_throughput", "throughput"),
              _gavel_family("min_makespan", "throughput"),
              _gavel_family("min_makespan", "steps_remaining"),
              _ftf_family(), _efq_family(),
              _partial_family("utility"), _partial_family("supply"),
              Family("plan_schedule: durations x a", _plan_make, _plan_call, _plan_mapped,
                     _plan_render),
              Family("relax_plan: durations x a", _plan_make, _relax_call, _relax_mapped,
                     lambda c, a: _plan_render(c, a).replace("fa.plan_schedule(",
                                                             "fa.relax_plan("))]):
    RESCALE_FAMILIES[_f.name] = _f


def _first(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0][:200] if lines else ""


def compare(family: Family, base: Any, base_map: dict, r: Any, got: dict, a: float,
            case: dict) -> list[str]:
    """The differences between the mapped answers ``base_map`` (scale 1) and ``got`` (scale
    ``a``) beyond :data:`RTOL` or, where wider, the tolerance the certificates allow
    (``family.tolerance``)."""
    allowed = family.tolerance(base, r, a, case) if family.tolerance else {}
    bad = []
    for key, v in base_map.items():
        d = _rel_diff(got[key], v)
        tol = max(RTOL, allowed.get(key, 0.0))
        if not d <= tol:
            bad.append(f"{key} differs by {d:.3g} (relative; allowed {tol:.3g})")
    return bad


@dataclass
class RescaleFinding:
    family: str
    factor: float
    kind: str       # "violation" or "failure"
    detail: str
    reproducer: str


def run_rescale(family: Family, instances: int, *, seed: int = 0,
                factors: tuple[float, ...] = FACTORS, timeout: float = 20.0,
                ) -> tuple[dict[float, dict[str, int]], list[RescaleFinding]]:
    """Rescaling checks of one family over ``instances`` generic instances."""
    import warnings

    import fairalloc as fa

    table: dict[float, dict[str, int]] = {1.0: {"checks": 0, "violations": 0, "failures": 0}}
    for f in factors:
        table[f] = {"checks": 0, "violations": 0, "failures": 0}
    findings: list[RescaleFinding] = []
    rng = np.random.default_rng([seed, zlib.crc32(family.name.encode())])

    def guarded(case: dict, a: float) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _Timer(timeout):
                return family.call(case, a)

    for _ in range(instances):
        case = family.make(rng)
        table[1.0]["checks"] += 1
        try:
            base = guarded(case, 1.0)
            base_map = family.mapped(base, 1.0, case)
            base_ok = _verdict(base)
        except (fa.FairallocError, Exception, _Hang) as exc:
            table[1.0]["failures"] += 1
            findings.append(RescaleFinding(family.name, 1.0, "failure",
                                           f"{type(exc).__name__}: {str(exc)[:200]}",
                                           family.render(case, 1.0)))
            continue
        for a in factors:
            table[a]["checks"] += 1
            try:
                r = guarded(case, a)
                got = family.mapped(r, a, case)
                ok = _verdict(r)
            except (Exception, _Hang) as exc:
                table[a]["failures"] += 1
                findings.append(RescaleFinding(family.name, a, "failure",
                                               f"{type(exc).__name__}: "
                                               f"{_first(exc)}",
                                               family.render(case, a)))
                continue
            bad = [] if ok == base_ok else [f"verdict {ok} vs {base_ok} at scale 1"]
            bad += compare(family, base, base_map, r, got, a, case)
            if bad:
                table[a]["violations"] += 1
                findings.append(RescaleFinding(family.name, a, "violation", "; ".join(bad),
                                               family.render(case, a)))
    return table, findings


# --------------------------------------------------------------------------------------------
# permutation of jobs / buyers / goods: the answer is permuted alike
# --------------------------------------------------------------------------------------------
@dataclass
class PermFamily:
    name: str
    make: Callable[[np.random.Generator], dict]
    call: Callable[[dict], Any]
    permute: Callable[[dict, np.random.Generator], tuple[dict, Any]]   # case -> (case', perm)
    compare: Callable[[Any, Any, Any, dict], dict]  # base, permuted, perm, case -> {k: (a, b)}


def _perm_market(kind: str) -> PermFamily:
    def call(case: dict) -> Any:
        return _fa().fisher_market(**_args(case))

    def permute(case: dict, rng: np.random.Generator) -> tuple[dict, Any]:
        n, m = np.shape(case["utility"])
        pi, sg = rng.permutation(n), rng.permutation(m)
        return ({"utility": np.asarray(case["utility"])[pi][:, sg],
                 "budget": np.asarray(case["budget"])[pi],
                 "supply": np.asarray(case["supply"])[sg], "kind": kind,
                 "_style": case["_style"]}, (pi, sg))

    def compare(base: Any, r: Any, perm: Any, case: dict) -> dict:
        pi, sg = perm
        out = {"utility": (np.asarray(base.utility)[pi], np.asarray(r.utility))}
        if kind == "linear":
            out["prices"] = (np.asarray(base.prices)[sg], np.asarray(r.prices))
        if kind == "linear" and _generic(case):
            out["allocation"] = (np.asarray(base.allocation)[pi][:, sg],
                                 np.asarray(r.allocation))
        return out

    return PermFamily(f"market {kind}: buyers and goods", _market_make(kind), call, permute,
                      compare)


def _perm_gavel(policy: str) -> PermFamily:
    def call(case: dict) -> Any:
        fa = _fa()
        kw = {k: v for k, v in _args(case).items() if k != "workers"}
        return getattr(fa, policy)(fa.Jobs(**kw), fa.Cluster(case["workers"]))

    def permute(case: dict, rng: np.random.Generator) -> tuple[dict, Any]:
        n = len(case["weight"])
        pi = rng.permutation(n)
        c = {k: (np.asarray(v)[pi] if k not in ("workers", "_style") else v)
             for k, v in case.items()}
        return c, pi

    def compare(base: Any, r: Any, pi: Any, case: dict) -> dict:
        out = {"objective": (np.array([base.objective]), np.array([r.objective]))}
        if _generic(case):
            out["x"] = (np.asarray(base.x)[pi], np.asarray(r.x))
        return out

    return PermFamily(f"{policy}: jobs", _gavel_make, call, permute, compare)


def _perm_partial() -> PermFamily:
    def make(rng: np.random.Generator) -> dict:
        c = _market_make("linear")(rng)
        return {"utility": c["utility"], "supply": c["supply"], "_style": c["_style"]}

    def call(case: dict) -> Any:
        return _fa().partial_allocation(**_args(case))

    def permute(case: dict, rng: np.random.Generator) -> tuple[dict, Any]:
        n, m = np.shape(case["utility"])
        pi, sg = rng.permutation(n), rng.permutation(m)
        return ({"utility": np.asarray(case["utility"])[pi][:, sg],
                 "supply": np.asarray(case["supply"])[sg], "_style": case["_style"]}, (pi, sg))

    def compare(base: Any, r: Any, perm: Any, case: dict) -> dict:
        pi, sg = perm
        out = {"fraction": (np.asarray(base.fraction)[pi], np.asarray(r.fraction))}
        if _generic(case):
            out["allocation"] = (np.asarray(base.allocation)[pi][:, sg],
                                 np.asarray(r.allocation))
        return out

    return PermFamily("partial_allocation: agents and goods", make, call, permute, compare)


def _perm_plan() -> PermFamily:
    def call(case: dict) -> Any:
        return _plan_call(case, 1.0)

    def permute(case: dict, rng: np.random.Generator) -> tuple[dict, Any]:
        pi = rng.permutation(len(case["jobs"]))
        return dict(case, jobs=[case["jobs"][i] for i in pi]), pi

    def compare(base: Any, r: Any, pi: Any, case: dict) -> dict:
        return {"objective": (np.array([base.objective]), np.array([r.objective]))}

    return PermFamily("plan_schedule: jobs", _plan_make, call, permute, compare)


PERM_FAMILIES: dict[str, PermFamily] = {
    f.name: f for f in [_perm_market("linear"), _perm_market("leontief"),
                        _perm_gavel("max_min_fairness"), _perm_gavel("max_total_throughput"),
                        _perm_gavel("min_makespan"), _perm_partial(), _perm_plan()]}


def run_permutation(family: PermFamily, instances: int, *, seed: int = 0,
                    timeout: float = 20.0) -> tuple[dict[str, int], list[RescaleFinding]]:
    """Permutation checks of one family: checks, violations, failures."""
    import warnings

    from .core import short_repr

    counts = {"checks": 0, "violations": 0, "failures": 0}
    findings: list[RescaleFinding] = []
    rng = np.random.default_rng([seed, zlib.crc32(family.name.encode())])

    def guarded(case: dict) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with _Timer(timeout):
                return family.call(case)

    for _ in range(instances):
        case = family.make(rng)
        pcase, perm = family.permute(case, rng)
        counts["checks"] += 1
        try:
            base = guarded(case)
            r = guarded(pcase)
            pairs = family.compare(base, r, perm, case)
        except (Exception, _Hang) as exc:
            counts["failures"] += 1
            findings.append(RescaleFinding(family.name, 1.0, "failure",
                                           f"{type(exc).__name__}: {_first(exc)}",
                                           short_repr(pcase, 600)))
            continue
        bad = [f"{k} differs by {d:.3g}" for k, (a, b) in pairs.items()
               if not (d := _rel_diff(a, b)) <= RTOL]
        if bool(base.certificate.ok) != bool(r.certificate.ok):
            bad.append("certificate verdict differs")
        if bad:
            counts["violations"] += 1
            findings.append(RescaleFinding(family.name, 1.0, "violation", "; ".join(bad),
                                           f"base {short_repr(case, 300)} permuted by "
                                           f"{short_repr(perm, 100)}"))
    return counts, findings
