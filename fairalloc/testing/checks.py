"""Property checks of allocation policies: :func:`check_policy` and its report.

A *policy* is any callable that maps an instance to an allocation. :func:`check_policy` draws
valid instances with the strategies of :mod:`fairalloc.testing.strategies`, calls the policy,
checks the chosen properties of what it returns, and when a property fails lets hypothesis
*shrink* the instance to a minimal one; the report shows that instance, the allocation, and
which agent is hurt by how much (:class:`Counterexample`). It is fairalloc's counterpart of
scikit-learn's ``check_estimator``.

Domains (what the policy is given and returns)
----------------------------------------------
``"market"`` (default; DESIGN.md's contract), ``"leontief"``, ``"volatile"``,
``"volatile-leontief"``
    ``policy(utility, budget, supply) -> allocation`` with ``utility`` (n, m) (or (n, m, T) for
    markets over time; Leontief demands for the Leontief domains), ``budget`` (n,) and
    ``supply`` (m,) (or (m, T)); the allocation has the shape of ``utility``.
``"cluster"``
    ``policy(jobs, cluster) -> allocation`` with :class:`fairalloc.Jobs` and
    :class:`fairalloc.Cluster` (Gavel): the allocation is the time fraction ``x`` (n, k) of each
    job on each accelerator type. Every Gavel policy (``fa.max_min_fairness``, ...) is such a
    policy as it is.

A :class:`MarketDomain` or :class:`ClusterDomain` object instead of a name sets sizes and value
ranges (e.g. ``MarketDomain(equal_budgets=True, n=(2, 6))``).

What a policy may return
------------------------
An array; a pair ``(allocation, prices)``; a mapping with keys ``"allocation"`` (and
``"prices"``); or an object with an ``allocation`` attribute (cluster domain: ``x`` first) and
optionally ``prices`` -- so fairalloc's own result objects work as they are. Prices are needed
by ``market_clearing`` and ``budget_clearing`` only.

Properties
----------
With budgets ``B`` (cluster domain: job weights ``w``), supply ``s`` (cluster: workers ``c`` per
type) and each agent's true utility ``u_i`` (cluster: effective throughput
``sum_j T[i, j] x[i, j]``):

``feasible``
    Non-negative, finite, the right shape, nothing beyond supply (cluster: ``x <= 1``, zero where
    a job cannot run or its gang does not fit, ``sum_j x[i, j] <= 1``,
    ``sum_i scale_factor_i x[i, j] <= c_j``). Every other property first requires it: an
    allocation that is not feasible fails them all.
``market_clearing``
    Every good (type) with a positive price is sold out (needs prices).
``budget_clearing`` (market domains)
    Every buyer spends its budget at the policy's prices (needs prices).
``envy_free``
    ``u_i(x_i) / B_i >= u_i(x_k) / B_k`` for all ``i, k``. In the cluster domain valuations are
    capped (a job runs at most all of its time), so the bundle is scaled instead:
    ``u_i(x_i) >= u_i((w_i / w_k) x_k)``, where ``u_i`` of a bundle is the throughput job ``i``
    gets from that worker-time (``x_kj`` times ``k``'s gang size, usable only where ``i`` can
    run and fits, at most all of its time). For linear utilities the two forms agree.
``sharing_incentive``
    At least as well off as with the budget share ``B_i / sum B`` of every good (cluster: with
    the weight share of every type's workers, the isolated allocation of Gavel §4.1 and Themis
    §2 -- with equal weights, :func:`fairalloc.throughput.isolated_split`).
``proportionality``
    ``u_i(x_i) >= B_i / sum B * u_i(everything)`` (cluster: the job alone on the whole cluster
    runs on its fastest usable type).
``pareto_optimal``
    No feasible allocation makes someone better off and nobody worse off -- decided exactly by a
    linear program (HiGHS), not by sampling.
``strategy_proof``
    Probes by misreporting: one agent reports a different utility row (its true row scaled
    entry by entry, and the truth with one good hidden, shaded, halved, doubled or
    exaggerated); the check fails when the agent's *true* utility from the policy's answer to
    the lie beats telling the truth. Probes can find manipulations, never prove their absence.

Hypothesis profiles
-------------------
Deterministic by default: the same ``seed`` gives the same instances, so a CI run is
reproducible. Set ``FAIRALLOC_HYPOTHESIS_PROFILE=nondeterministic`` (or pytest's
``--fairalloc-profile=nondeterministic``) for a fresh random seed per run; the report records
the seed it used, so ``check_policy(..., seed=report.seed)`` replays a failure.
``FAIRALLOC_MAX_EXAMPLES`` (``--fairalloc-max-examples``) overrides ``max_examples`` everywhere,
e.g. for a thorough nightly run.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.extra.numpy import arrays

from .. import properties as props
from .._validation import as_bool, as_option
from ..errors import InputError
from . import strategies as fst

__all__ = [
    "DOMAINS",
    "MAX_EXAMPLES_ENV",
    "PROFILES",
    "PROFILE_ENV",
    "PROPERTIES",
    "ClusterDomain",
    "Counterexample",
    "MarketDomain",
    "PolicyReport",
    "PropertyCheck",
    "PropertyCheckError",
    "PropertyReport",
    "active_profile",
    "check_policy",
    "property_names",
]

PROFILE_ENV = "FAIRALLOC_HYPOTHESIS_PROFILE"
MAX_EXAMPLES_ENV = "FAIRALLOC_MAX_EXAMPLES"
PROFILES = ("deterministic", "nondeterministic")

#: Every property a domain may support, with a one-line meaning (used by the CLI's table).
PROPERTIES: dict[str, str] = {
    "feasible": "non-negative, within supply / capacity",
    "market_clearing": "every priced good is sold out",
    "budget_clearing": "every buyer spends its budget",
    "envy_free": "nobody prefers another's bundle (per unit budget)",
    "sharing_incentive": "everyone at least as well off as with its share",
    "proportionality": "everyone gets its share of its value of everything",
    "pareto_optimal": "no Pareto improvement (exact LP)",
    "strategy_proof": "no gain from misreporting a row (probes)",
}
_ALIASES = {
    "feasibility": "feasible",
    "envy_freeness": "envy_free",
    "envy_freedom": "envy_free",
    "pareto": "pareto_optimal",
    "pareto_efficient": "pareto_optimal",
    "pareto_efficiency": "pareto_optimal",
    "pareto_optimality": "pareto_optimal",
    "strategyproof": "strategy_proof",
    "strategy_proofness": "strategy_proof",
    "truthful": "strategy_proof",
    "proportional": "proportionality",
}
DEFAULT_PROPERTIES = ("sharing_incentive", "envy_free", "pareto_optimal")
_NEEDS_PRICES = ("market_clearing", "budget_clearing")

_COMMON: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "verbosity": Verbosity.quiet,
    "report_multiple_bugs": False,
    "print_blob": False,
    "suppress_health_check": list(HealthCheck),
}
settings.register_profile("fairalloc-deterministic", derandomize=False, **_COMMON)
settings.register_profile("fairalloc-nondeterministic", derandomize=False, **_COMMON)


def active_profile() -> str:
    """The hypothesis profile in force: ``$FAIRALLOC_HYPOTHESIS_PROFILE`` or deterministic.

    Examples
    --------
    >>> active_profile() in PROFILES
    True
    """
    name = os.environ.get(PROFILE_ENV, "").strip() or "deterministic"
    return as_option(name, PROFILE_ENV, PROFILES)


@contextlib.contextmanager
def _without_local_constants() -> Iterator[None]:
    """Keep hypothesis from mixing in literal constants of the modules loaded so far.

    Recent hypothesis versions draw, now and then, numbers that appear as literals in the
    *local* modules imported at the time (the user's code). Which modules are imported differs
    between a lone run and a whole test session, so the same seed would give different
    instances. While a deterministic check runs, the local pool is empty (hypothesis' own
    global constants stay); the cache of permitted constants is cleared on the way in and out.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - hypothesis without local constants
        yield
        return
    getter = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    if getter is None or cache is None:  # pragma: no cover - other hypothesis versions
        yield
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = getter
        cache.clear()


def _max_examples_override() -> int | None:
    raw = os.environ.get(MAX_EXAMPLES_ENV, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(f"{MAX_EXAMPLES_ENV} must be a positive integer, got {raw!r}",
                         argument=MAX_EXAMPLES_ENV)
    return value


# ============================================================================================
# outcomes: what a policy returned
# ============================================================================================
@dataclass(frozen=True, eq=False)
class _Outcome:
    allocation: np.ndarray | None = None
    prices: np.ndarray | None = None
    error: BaseException | None = None
    problem: str = ""


def _parse(raw: Any, attrs: Sequence[str]) -> _Outcome:
    """Allocation (and prices) from whatever the policy returned (see the module docs)."""
    prices: Any = None
    if isinstance(raw, tuple) and len(raw) == 2:
        alloc, prices = raw
    elif isinstance(raw, Mapping):
        if "allocation" not in raw:
            return _Outcome(problem="the policy returned a mapping without an 'allocation' key")
        alloc, prices = raw["allocation"], raw.get("prices")
    else:
        alloc = raw
        for name in attrs:
            if hasattr(raw, name) and not isinstance(raw, np.ndarray):
                alloc = getattr(raw, name)
                prices = getattr(raw, "prices", None)
                break
    try:
        x = np.array(alloc, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        return _Outcome(problem=f"the policy returned {type(raw).__name__}, not an allocation "
                                f"array ({exc})")
    p = None
    if prices is not None:
        try:
            p = np.array(prices, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            return _Outcome(x, problem=f"the policy's prices are not numeric ({exc})")
    return _Outcome(x, p)


def _good(index: Sequence[Any]) -> str:
    """``good 2`` or, in a market over time, ``good 2 in round 1``."""
    j = [int(v) for v in index]
    return f"good {j[0]}" + (f" in round {j[1]}" if len(j) > 1 else "")


def _result(name: str, ok: bool, violation: float, agent: int | None = None,
            other: int | None = None, message: str = "") -> props.PropertyResult:
    return props.PropertyResult(name, bool(ok), float(max(violation, 0.0)), agent, other,
                                message)


# ============================================================================================
# domains
# ============================================================================================
class _Domain:
    """What a family of policies is given, how it answers, and what its properties mean."""

    label = "domain"
    agent_word = "agent"
    properties: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ("allocation",)

    def instances(self) -> st.SearchStrategy[Any]:
        raise NotImplementedError

    def feasible(self, inst: Any, x: np.ndarray, tol: float) -> props.PropertyResult:
        raise NotImplementedError

    def check(self, name: str, inst: Any, out: _Outcome, tol: float) -> props.PropertyResult:
        raise NotImplementedError

    def own_value(self, inst: Any, agent: int, x: np.ndarray) -> float:
        raise NotImplementedError

    def true_row(self, inst: Any, agent: int) -> np.ndarray:
        raise NotImplementedError

    def valid_row(self, inst: Any, agent: int, row: np.ndarray) -> bool:
        raise NotImplementedError

    def call(self, policy: Callable[..., Any], inst: Any) -> _Outcome:
        try:
            raw = policy(*inst.args())
        except Exception as exc:  # the policy's failure is a finding, not a crash
            return _Outcome(error=exc)
        return _parse(raw, self.attrs)

    def probes(self) -> st.SearchStrategy[tuple[Any, int, np.ndarray, float]]:
        """(instance, lying agent, per-entry scaling of its row, distortion factor)."""
        inner = self.instances()

        @st.composite
        def draw_probe(draw: st.DrawFn) -> tuple[Any, int, np.ndarray, float]:
            inst = draw(inner)
            agent = draw(st.integers(0, inst.n - 1))
            shape = self.true_row(inst, agent).shape
            scale = draw(arrays(np.float64, shape, elements=st.floats(*_SCALING)))
            factor = draw(st.sampled_from(_DISTORTIONS))
            return inst, agent, scale, factor

        return draw_probe()

    def lies(self, inst: Any, agent: int, scale: np.ndarray, factor: float
             ) -> list[np.ndarray]:
        """The misreports a probe tries: the true row scaled entry by entry (``scale``; it
        shrinks to ones, i.e. to the truth, which is skipped), and for every good the truth with
        that good's entry replaced by ``factor`` times the row's largest entry (``0`` hides the
        good, ``0.05`` shades it, ``10`` exaggerates it; a good valued at zero can be claimed)."""
        truth = self.true_row(inst, agent)
        out = []
        scaled = truth * scale
        if not np.array_equal(scaled, truth) and self.valid_row(inst, agent, scaled):
            out.append(scaled)
        flat = truth.reshape(-1)
        top = float(flat.max())
        for g in range(flat.size):
            lie = flat.copy()
            lie[g] = factor * top
            if lie[g] != flat[g] and self.valid_row(inst, agent, lie.reshape(truth.shape)):
                out.append(lie.reshape(truth.shape))
        return out


# misreports tried by strategy-proofness probes: one-good distortions (the first is where
# shrinking ends) and the range of the per-entry scaling of the whole row
_DISTORTIONS = (0.05, 2.0, 0.0, 10.0, 0.5)
_SCALING = (0.05, 3.0)


class MarketDomain(_Domain):
    """Fisher markets: ``policy(utility, budget, supply) -> allocation`` (DESIGN.md).

    Parameters
    ----------
    kind : {"linear", "leontief"}
        Linear utilities or Leontief demands.
    rounds : int or (int, int), optional
        Markets over ``T`` rounds (utility (n, m, T), supply (m, T)).
    n, m, values, density, integers, equal_budgets, budget_values, supply_values
        As in :func:`fairalloc.testing.strategies.market_instances`.
    """

    agent_word = "buyer"
    properties = ("feasible", "market_clearing", "budget_clearing", "envy_free",
                  "sharing_incentive", "proportionality", "pareto_optimal", "strategy_proof")

    def __init__(self, kind: str = "linear", *, rounds: Any = None, n: Any = (1, 4),
                 m: Any = (1, 3), values: Any = (0.1, 10.0), density: float = 0.6,
                 integers: bool = False, equal_budgets: bool = False,
                 budget_values: Any = (0.1, 10.0), supply_values: Any = (0.2, 5.0)) -> None:
        self.kind = as_option(kind, "kind", ("linear", "leontief"))
        self.rounds = rounds
        self._kw = {"kind": self.kind, "rounds": rounds, "n": n, "m": m, "values": values,
                    "density": density, "integers": integers, "equal_budgets": equal_budgets,
                    "budget_values": budget_values, "supply_values": supply_values}
        self._strategy = fst.market_instances(**self._kw)  # validates the arguments
        base = "market" if self.kind == "linear" else "leontief"
        self.label = base if rounds is None else (
            "volatile" if self.kind == "linear" else "volatile-leontief")

    def __repr__(self) -> str:
        kw = ", ".join(f"{k}={v!r}" for k, v in self._kw.items() if k != "kind")
        return f"MarketDomain({self.kind!r}, {kw})"

    def instances(self) -> st.SearchStrategy[fst.MarketInstance]:
        return self._strategy

    def true_row(self, inst: fst.MarketInstance, agent: int) -> np.ndarray:
        return np.array(inst.utility[agent], copy=True)

    def valid_row(self, inst: fst.MarketInstance, agent: int, row: np.ndarray) -> bool:
        return bool(np.all(row >= 0) and np.any(row > 0))

    def feasible(self, inst: fst.MarketInstance, x: np.ndarray, tol: float
                 ) -> props.PropertyResult:
        U, s = inst.utility, inst.supply
        if x.shape != U.shape:
            return _result("feasible", False, np.inf, message=(
                f"the allocation has shape {x.shape}; expected {U.shape} (buyers x goods"
                f"{'' if U.ndim == 2 else ' x rounds'})"))
        if not np.all(np.isfinite(x)):
            idx = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
            return _result("feasible", False, np.inf, idx[0], message=(
                f"allocation[{', '.join(map(str, idx))}] is {x[idx]}"))
        neg = -x
        i_neg = np.unravel_index(int(np.argmax(neg)), x.shape)
        scale = max(1.0, float(s.max()))
        if neg[i_neg] > tol * scale:
            return _result("feasible", False, float(neg[i_neg]), int(i_neg[0]), message=(
                f"buyer {int(i_neg[0])} gets a negative amount {x[i_neg]:.6g} of "
                f"{_good(i_neg[1:])}"))
        over = x.sum(axis=0) - s
        j = np.unravel_index(int(np.argmax(over)), s.shape)
        if over[j] > tol * max(1.0, float(s[j])):
            return _result("feasible", False, float(over[j]), message=(
                f"{_good(j)} is allocated {x.sum(axis=0)[j]:.6g} but its supply is "
                f"{s[j]:.6g} (over by {over[j]:.4g})"))
        return _result("feasible", True, 0.0, message="the allocation is feasible")

    def _clipped(self, inst: fst.MarketInstance, x: np.ndarray) -> np.ndarray:
        """``x`` moved into the feasible set (changes it by at most the feasibility tol)."""
        x = np.maximum(x, 0.0)
        total = x.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(total > inst.supply, inst.supply / total, 1.0)
        return x * scale[None]

    def check(self, name: str, inst: fst.MarketInstance, out: _Outcome, tol: float
              ) -> props.PropertyResult:
        U, B, s, x = inst.utility, inst.budget, inst.supply, out.allocation
        assert x is not None
        kind = self.kind
        if name in _NEEDS_PRICES:
            p = out.prices
            assert p is not None
            if p.shape != s.shape:
                return _result(name, False, np.inf, message=(
                    f"the policy's prices have shape {p.shape}; expected {s.shape}"))
            if not np.all(np.isfinite(p)) or np.any(p < 0):
                return _result(name, False, np.inf, message=(
                    f"the policy's prices {p.tolist()} are not finite and non-negative"))
            if name == "market_clearing":
                return props.market_clearing(x, p, s, tol=tol)
            return props.budget_clearing(x, p, B, tol=tol)
        if name == "envy_free":
            return props.envy_free(U, x, B, kind=kind, tol=tol)
        if name == "sharing_incentive":
            return props.sharing_incentive(U, x, B, s, kind=kind, tol=tol)
        if name == "proportionality":
            return props.proportionality(U, x, B, s, kind=kind, tol=tol)
        if name == "pareto_optimal":
            return props.pareto_optimal(U, self._clipped(inst, x), s, kind=kind, tol=tol)
        raise AssertionError(name)  # pragma: no cover - names are validated up front

    def own_value(self, inst: fst.MarketInstance, agent: int, x: np.ndarray) -> float:
        u = inst.utility[agent:agent + 1]
        return float(props.bundle_values(u, x[agent:agent + 1], kind=self.kind)[0, 0])


class ClusterDomain(_Domain):
    """Jobs on a heterogeneous cluster: ``policy(jobs, cluster) -> x`` (Gavel §3-4).

    Parameters
    ----------
    n, types, workers, names
        Jobs, accelerator types, workers per type, type names
        (:func:`fairalloc.testing.strategies.cluster_instances`).
    max_scale_factor, weighted, values, density, integers, steps, elapsed
        As in :func:`fairalloc.testing.strategies.job_sets`.
    """

    label = "cluster"
    agent_word = "job"
    properties = ("feasible", "market_clearing", "envy_free", "sharing_incentive",
                  "proportionality", "pareto_optimal", "strategy_proof")
    attrs = ("x", "allocation")

    def __init__(self, *, n: Any = (1, 4), types: Any = (1, 3), workers: Any = (1, 4),
                 names: Sequence[str] = fst.ACCELERATOR_TYPES, max_scale_factor: int = 1,
                 weighted: bool = False, values: Any = (0.5, 100.0), density: float = 0.7,
                 integers: bool = False, steps: Any = (100.0, 10000.0),
                 elapsed: Any = None) -> None:
        self._kw = {"n": n, "types": types, "workers": workers, "max_scale_factor":
                    max_scale_factor, "weighted": weighted, "values": values,
                    "density": density, "integers": integers, "steps": steps,
                    "elapsed": elapsed}
        self._strategy = fst.cluster_instances(names=names, **self._kw)

    def __repr__(self) -> str:
        return "ClusterDomain(" + ", ".join(f"{k}={v!r}" for k, v in self._kw.items()) + ")"

    def instances(self) -> st.SearchStrategy[fst.ClusterInstance]:
        return self._strategy

    @staticmethod
    def _fits(inst: fst.ClusterInstance) -> np.ndarray:
        j, c = inst.jobs, inst.cluster
        return j.scale_factor[:, None] <= c.capacity[None, :]

    @staticmethod
    def _allowed(inst: fst.ClusterInstance) -> np.ndarray:
        return (inst.jobs.throughput > 0) & ClusterDomain._fits(inst)

    def true_row(self, inst: fst.ClusterInstance, agent: int) -> np.ndarray:
        return np.array(inst.jobs.throughput[agent], copy=True)

    def valid_row(self, inst: fst.ClusterInstance, agent: int, row: np.ndarray) -> bool:
        return bool(np.all(row >= 0) and np.any((row > 0) & self._fits(inst)[agent]))

    def feasible(self, inst: fst.ClusterInstance, x: np.ndarray, tol: float
                 ) -> props.PropertyResult:
        jobs, cap = inst.jobs, inst.cluster.capacity
        shape = jobs.throughput.shape
        if x.shape != shape:
            return _result("feasible", False, np.inf, message=(
                f"the allocation has shape {x.shape}; expected {shape} (jobs x types)"))
        if not np.all(np.isfinite(x)):
            i, j = (int(v) for v in np.argwhere(~np.isfinite(x))[0])
            return _result("feasible", False, np.inf, i, message=f"x[{i}, {j}] is {x[i, j]}")
        types = inst.cluster.types
        allowed = self._allowed(inst)
        # worst offence of each kind, in time-fraction units (workers for capacity rows)
        bad = np.where(allowed, np.maximum(-x, x - 1.0), np.abs(x))
        i, j = (int(v) for v in np.unravel_index(int(np.argmax(bad)), shape))
        if bad[i, j] > tol:
            why = ("a time fraction must lie in [0, 1]" if allowed[i, j] else
                   "the job cannot run there" if jobs.throughput[i, j] <= 0 else
                   f"its gang of {jobs.scale_factor[i]:g} does not fit in "
                   f"{cap[j]:g} workers")
            return _result("feasible", False, float(bad[i, j]), int(i), message=(
                f"job {i} gets x = {x[i, j]:.6g} on {types[j]}: {why}"))
        busy = x.sum(axis=1) - 1.0
        i = int(np.argmax(busy))
        if busy[i] > tol:
            return _result("feasible", False, float(busy[i]), i, message=(
                f"job {i} runs {x[i].sum():.6g} of its time (more than all of it)"))
        used = jobs.scale_factor @ np.maximum(x, 0.0)
        over = used - cap
        j = int(np.argmax(over))
        if over[j] > tol * max(1.0, float(cap[j])):
            return _result("feasible", False, float(over[j]), message=(
                f"type {types[j]} has {cap[j]:g} workers but the jobs use {used[j]:.6g}"))
        return _result("feasible", True, 0.0, message="the allocation is feasible")

    def _clipped(self, inst: fst.ClusterInstance, x: np.ndarray) -> np.ndarray:
        x = np.where(self._allowed(inst), np.clip(x, 0.0, 1.0), 0.0)
        busy = x.sum(axis=1)
        x = x / np.maximum(busy, 1.0)[:, None]
        used = inst.jobs.scale_factor @ x
        cap = inst.cluster.capacity
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(used > cap, cap / used, 1.0)
        return x * scale[None, :]

    def throughput(self, inst: fst.ClusterInstance, x: np.ndarray) -> np.ndarray:
        """Effective throughput ``sum_j T[i, j] x[i, j]`` of every job (Gavel §3.1)."""
        return np.einsum("ij,ij->i", np.where(self._allowed(inst), inst.jobs.throughput, 0.0),
                         x)

    def share(self, inst: fst.ClusterInstance) -> np.ndarray:
        """The weight-share allocation: job ``i`` gets ``w_i / sum w`` of every type's
        workers, running ``c_j f_i / max(s_i, f_i sum_j c_j)`` of its time on type ``j`` where
        it can run (Gavel §4.1's ``X^isolated``; rows capped at all of its time)."""
        jobs, cap = inst.jobs, inst.cluster.capacity
        f = jobs.weight / jobs.weight.sum()
        x = cap[None, :] * f[:, None] / np.maximum(jobs.scale_factor, f * cap.sum())[:, None]
        return np.where(self._allowed(inst), x, 0.0)

    def bundle_values(self, inst: fst.ClusterInstance, x: np.ndarray) -> np.ndarray:
        """``V[i, k]``: throughput job ``i`` gets from job ``k``'s worker-time, scaled by the
        weight ratio ``w_i / w_k`` (so ``V[i, i]`` is ``i``'s own throughput).

        Job ``k`` holds ``x[k, j] * s_k`` worker-time of type ``j``; job ``i`` (gang ``s_i``)
        can turn ``w_i / w_k`` times it into time fractions on the types it can run on, at
        most 1 in total: a fractional knapsack filled from its fastest type down. Scaling the
        bundle (rather than dividing values by weights) keeps the comparison right for jobs
        whose time is capped.
        """
        jobs = inst.jobs
        T = np.where(self._allowed(inst), jobs.throughput, 0.0)
        order = np.argsort(-T, axis=1, kind="stable")  # (n, k): i's types, fastest first
        rate = np.take_along_axis(T, order, axis=1)  # (n, k)
        work = np.maximum(x, 0.0) * jobs.scale_factor[:, None]  # (n, k) worker-time of k
        avail = work[:, order].transpose(1, 0, 2)  # avail[i, k, j] = work[k, order[i, j]]
        w = jobs.weight
        avail = avail * (w[:, None] / w[None, :] / jobs.scale_factor[:, None])[:, :, None]
        avail = np.where(rate[:, None, :] > 0, avail, 0.0)
        filled = np.minimum(np.cumsum(avail, axis=2), 1.0)
        time_ = np.diff(filled, axis=2, prepend=0.0)
        return np.einsum("ikj,ij->ik", time_, rate)

    def check(self, name: str, inst: fst.ClusterInstance, out: _Outcome, tol: float
              ) -> props.PropertyResult:
        jobs, cap, types = inst.jobs, inst.cluster.capacity, inst.cluster.types
        x = out.allocation
        assert x is not None
        w = jobs.weight
        tp = self.throughput(inst, x)
        if name == "market_clearing":
            p = out.prices
            assert p is not None
            if p.shape != cap.shape or not np.all(np.isfinite(p)) or np.any(p < 0):
                return _result(name, False, np.inf, message=(
                    f"the policy's prices {p.tolist()} are not {cap.size} finite, "
                    "non-negative numbers"))
            r = props.market_clearing(x * jobs.scale_factor[:, None], p, cap, tol=tol)
            if r.passed or r.agent is None:
                return r
            j = r.agent
            used = float(jobs.scale_factor @ x[:, j])
            return _result(name, False, r.violation, None, None, (
                f"type {types[j]} has price {p[j]:.4g} but only {used:.6g} of its {cap[j]:g} "
                "workers are used"))
        if name == "envy_free":
            V = self.bundle_values(inst, x)
            own = np.diag(V)
            envy = V - own[:, None]
            np.fill_diagonal(envy, 0.0)
            i, k = (int(v) for v in np.unravel_index(int(np.argmax(envy)), envy.shape))
            ok = envy[i, k] <= tol * max(1.0, float(abs(own[i])))
            ratio = "" if w[i] == w[k] else f" scaled by its weight ratio {w[i] / w[k]:.4g}"
            return _result(name, ok, float(envy[i, k]), int(i), int(k),
                           "no job prefers another's allocation" if ok else
                           f"job {i} would get throughput {V[i, k]:.6g} from job {k}'s "
                           f"allocation{ratio} but gets {own[i]:.6g} from its own "
                           f"(envy {envy[i, k]:.4g})")
        if name in ("sharing_incentive", "proportionality"):
            if name == "sharing_incentive":
                fair = self.throughput(inst, self.share(inst))
                what = "its weight share of every type"
            else:
                best = np.where(self._allowed(inst), jobs.throughput, 0.0).max(axis=1)
                fair = w / w.sum() * best
                what = "its weight share of running alone on its fastest type"
            short = fair - tp
            i = int(np.argmax(short))
            ok = short[i] <= tol * max(1.0, float(fair[i]))
            return _result(name, ok, float(short[i]), i, None,
                           f"every job is at least as well off as with {what}" if ok else
                           f"job {i} gets throughput {tp[i]:.6g} < {fair[i]:.6g} from {what} "
                           f"(short by {short[i]:.4g})")
        if name == "pareto_optimal":
            return self._pareto(inst, self._clipped(inst, x), tol)
        raise AssertionError(name)  # pragma: no cover

    def _pareto(self, inst: fst.ClusterInstance, x: np.ndarray, tol: float
                ) -> props.PropertyResult:
        """``max sum t`` over feasible ``y`` with ``T_i . y_i >= T_i . x_i + t_i``, ``t >= 0``."""
        jobs, cap = inst.jobs, inst.cluster.capacity
        n, k = jobs.throughput.shape
        own = self.throughput(inst, x)
        rows, cols = np.nonzero(self._allowed(inst))
        E = rows.size
        e = np.arange(E)
        time_rows = sp.csr_matrix((np.ones(E), (rows, e)), shape=(n, E))
        cap_rows = sp.csr_matrix((jobs.scale_factor[rows], (cols, e)), shape=(k, E))
        util_rows = sp.csr_matrix((jobs.throughput[rows, cols], (rows, e)), shape=(n, E))
        gain = props.pareto_gain(util_rows, own, sp.vstack([time_rows, cap_rows]).tocsr(),
                                 np.r_[np.ones(n), cap], np.ones(E))
        i = int(np.argmax(gain))
        ok = gain[i] <= tol * max(1.0, float(own[i]))
        return _result("pareto_optimal", ok, float(gain[i]), i, None,
                       "no Pareto improvement exists" if ok else
                       f"job {i} can gain {gain[i]:.4g} throughput (from {own[i]:.6g}) with "
                       "no job worse off")

    def own_value(self, inst: fst.ClusterInstance, agent: int, x: np.ndarray) -> float:
        return float(self.throughput(inst, x)[agent])


_DOMAIN_FACTORIES: dict[str, Callable[[], _Domain]] = {
    "market": lambda: MarketDomain("linear"),
    "leontief": lambda: MarketDomain("leontief"),
    "volatile": lambda: MarketDomain("linear", rounds=(2, 3), n=(1, 3), m=(1, 2)),
    "volatile-leontief": lambda: MarketDomain("leontief", rounds=(2, 3), n=(1, 3), m=(1, 2)),
    "cluster": lambda: ClusterDomain(),
}
#: Domain names accepted by :func:`check_policy` (``domain=``) and ``fairalloc check``.
DOMAINS = tuple(_DOMAIN_FACTORIES)


def _domain(domain: Any) -> _Domain:
    if isinstance(domain, _Domain):
        return domain
    if isinstance(domain, str):
        key = domain.strip().lower().replace("_", "-")
        if key in _DOMAIN_FACTORIES:
            return _DOMAIN_FACTORIES[key]()
    raise InputError(f"domain must be one of {', '.join(map(repr, DOMAINS))} or a "
                     f"MarketDomain / ClusterDomain; got {domain!r}", argument="domain")


def property_names(properties: Any, domain: Any = "market") -> tuple[str, ...]:
    """Canonical property names: accepts ``"envy-free"``, ``"Envy free"``, aliases such as
    ``"pareto"``, one name or a sequence, and ``"all"`` (every property of the domain).

    Examples
    --------
    >>> property_names(["envy-free", "Sharing incentive", "pareto"])
    ('envy_free', 'sharing_incentive', 'pareto_optimal')
    >>> property_names("all", "cluster")[:3]
    ('feasible', 'market_clearing', 'envy_free')
    """
    dom = _domain(domain)
    names = [properties] if isinstance(properties, str) else properties
    if not isinstance(names, Iterable):
        raise InputError(f"properties must be a name or a sequence of names, got "
                         f"{properties!r}", argument="properties")
    out: list[str] = []
    for i, raw in enumerate(names):
        if not isinstance(raw, str):
            raise InputError(f"properties[{i}] = {raw!r} is not a property name",
                             argument="properties", index=(i,))
        key = raw.strip().lower().replace("-", "_").replace(" ", "_")
        if key == "all":
            out.extend(p for p in dom.properties if p not in out)
            continue
        key = _ALIASES.get(key, key)
        if key not in dom.properties:
            raise InputError(
                f"properties[{i}] = {raw!r} is not a property of the {dom.label} domain; "
                f"choose from {', '.join(dom.properties)} (or 'all')",
                argument="properties", index=(i,))
        if key not in out:
            out.append(key)
    if not out:
        raise InputError("properties is empty", argument="properties")
    return tuple(out)


# ============================================================================================
# reports
# ============================================================================================
def _fmt(arr: np.ndarray | None) -> str:
    if arr is None:
        return "None"
    return np.array2string(np.asarray(arr), precision=6, separator=", ", floatmode="maxprec")


def _indent(text: str, pad: str) -> str:
    return text.replace("\n", "\n" + pad)


@dataclass(frozen=True, eq=False)
class Counterexample:
    """A (shrunk) instance on which a property fails, in readable form.

    Attributes
    ----------
    property : str
    domain : str
    instance : MarketInstance or ClusterInstance
        The policy's input (``instance.describe()``, ``instance.as_code()``).
    allocation : ndarray or None
        What the policy returned (``None`` when it raised).
    prices : ndarray or None
    violation : float
        Size of the violation in the property's own units (utility, throughput, money, goods):
        how much ``agent`` is hurt (envy, shortfall, Pareto gain, gain from lying).
    agent : int or None
        The agent hurt most (the liar, for ``strategy_proof``).
    other : int or None
        The envied agent (``envy_free``).
    message : str
        One sentence: who is hurt, by how much, compared with what.
    error : BaseException or None
        The exception the policy raised, if it did.
    misreport : ndarray or None
        ``strategy_proof``: the reported row that pays off.
    misreport_allocation : ndarray or None
        ``strategy_proof``: the policy's allocation for the misreport.
    """

    property: str
    domain: str
    instance: Any
    allocation: np.ndarray | None
    prices: np.ndarray | None
    violation: float
    agent: int | None
    other: int | None
    message: str
    error: BaseException | None = None
    misreport: np.ndarray | None = None
    misreport_allocation: np.ndarray | None = None

    def __str__(self) -> str:
        lines = [f"{self.property} fails: {self.message}"]
        if self.error is None and np.isfinite(self.violation):
            who = "" if self.agent is None else f" ({self.domain_agent()} {self.agent})"
            lines.append(f"  violation: {self.violation:.6g}{who}")
        lines.append("instance: " + _indent(self.instance.describe(), "  "))
        if self.error is not None:
            lines.append(f"the policy raised {type(self.error).__name__}: {self.error}")
        else:
            lines.append("allocation = " + _indent(_fmt(self.allocation), " " * 13))
            if self.prices is not None:
                lines.append("prices     = " + _fmt(self.prices))
        if self.misreport is not None:
            lines.append(f"misreport of {self.domain_agent()} {self.agent} = "
                         + _fmt(self.misreport))
            lines.append("allocation for the misreport = "
                         + _indent(_fmt(self.misreport_allocation), " " * 31))
        lines.append("reproduce: " + self.instance.as_code())
        return "\n".join(lines)

    def domain_agent(self) -> str:
        """``"job"`` in the cluster domain, else ``"buyer"``."""
        return "job" if self.domain == "cluster" else "buyer"


@dataclass(frozen=True, eq=False)
class PropertyReport:
    """Outcome of one property over the examples hypothesis tried.

    Attributes
    ----------
    name : str
    status : {"passed", "failed", "skipped"}
    examples : int
        Instances checked before the first failure (all of them when it passed).
    shrink_steps : int
        Further instances tried while shrinking the counterexample.
    seconds : float
    counterexample : Counterexample or None
    note : str
        Why a property was skipped, or that the policy looked nondeterministic.
    """

    name: str
    status: str
    examples: int
    shrink_steps: int
    seconds: float
    counterexample: Counterexample | None = None
    note: str = ""

    @property
    def passed(self) -> bool:
        """Whether the property did not fail (skipped counts as not failed)."""
        return self.status != "failed"


@dataclass(frozen=True, eq=False)
class PolicyReport:
    """What :func:`check_policy` found.

    Attributes
    ----------
    policy : str
        The policy's name.
    domain : str
    results : tuple of PropertyReport
        One per property, in the order asked.
    max_examples, seed : int
        Examples per property and the seed used (replay with ``check_policy(..., seed=)``).
    profile : str
        The hypothesis profile (``FAIRALLOC_HYPOTHESIS_PROFILE``).
    """

    policy: str
    domain: str
    results: tuple[PropertyReport, ...]
    max_examples: int
    seed: int
    profile: str

    @property
    def passed(self) -> bool:
        """True when no property failed."""
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[PropertyReport, ...]:
        """The properties that failed."""
        return tuple(r for r in self.results if not r.passed)

    @property
    def counterexample(self) -> Counterexample | None:
        """The shrunk counterexample of the first failing property (``None`` if all pass)."""
        return next((r.counterexample for r in self.failures), None)

    def __bool__(self) -> bool:
        return self.passed

    def __getitem__(self, name: str) -> PropertyReport:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(name)

    def table(self) -> str:
        """The pass/fail table, one row per property."""
        header = ("property", "result", "examples", "violation", "seconds")
        rows = []
        for r in self.results:
            cx = r.counterexample
            viol = "-" if cx is None else ("error" if cx.error is not None else
                                          f"{cx.violation:.4g}")
            rows.append((r.name, r.status.upper() if r.status == "failed" else r.status,
                         str(r.examples), viol, f"{r.seconds:.2f}"))
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

        return "\n".join([line(header), line(["-" * w for w in widths])]
                         + [line(row) for row in rows])

    def __str__(self) -> str:
        head = (f"fairalloc property checks of {self.policy} ({self.domain} domain; "
                f"{self.max_examples} examples per property, seed {self.seed}, "
                f"{self.profile} profile)")
        parts = [head, "", self.table()]
        notes = [f"  {r.name}: {r.note}" for r in self.results if r.note]
        if notes:
            parts += ["", "notes:", *notes]
        for r in self.failures:
            assert r.counterexample is not None
            parts += ["", f"--- counterexample for {r.name} (shrunk) ---", str(r.counterexample)]
        verdict = "passed" if self.passed else (
            f"FAILED: {', '.join(r.name for r in self.failures)}")
        parts += ["", verdict]
        return "\n".join(parts)

    def __repr__(self) -> str:
        status = "passed" if self.passed else f"failed={[r.name for r in self.failures]}"
        return f"PolicyReport({self.policy}, {self.domain}, {status})"

    def assert_passed(self) -> None:
        """Raise :class:`PropertyCheckError` (an ``AssertionError``) unless every property
        passed; the message is the whole report with its counterexamples."""
        if not self.passed:
            raise PropertyCheckError(self)

    def to_frame(self) -> Any:
        """One row per property: status, examples, violation, agent, seconds."""
        from ..results import require_pandas

        pd = require_pandas()
        rows = []
        for r in self.results:
            cx = r.counterexample
            rows.append({"property": r.name, "status": r.status, "examples": r.examples,
                         "violation": None if cx is None else cx.violation,
                         "agent": None if cx is None else cx.agent,
                         "seconds": r.seconds})
        return pd.DataFrame(rows).set_index("property")


class PropertyCheckError(AssertionError):
    """A policy failed a property check; ``report`` holds the :class:`PolicyReport`."""

    def __init__(self, report: PolicyReport) -> None:
        super().__init__(str(report))
        self.report = report


# ============================================================================================
# the search
# ============================================================================================
class _Falsified(Exception):
    """Raised inside the hypothesis test to mark a failing example (recorded beforehand)."""


def _policy_name(policy: Any) -> str:
    if isinstance(policy, functools.partial):
        args = [_policy_name(policy.func), *map(repr, policy.args),
                *(f"{k}={v!r}" for k, v in policy.keywords.items())]
        return f"partial({', '.join(args)})"
    name = getattr(policy, "__qualname__", None) or getattr(policy, "__name__", None)
    if name is None:
        return repr(policy)
    module = getattr(policy, "__module__", None)
    return f"{module}.{name}" if module and module not in ("__main__", "builtins") else name


@dataclass
class _Search:
    policy: Callable[..., Any]
    domain: _Domain
    tol: float
    cache: dict[bytes, _Outcome] = field(default_factory=dict)
    missing_prices: bool = False

    def outcome(self, inst: Any) -> _Outcome:
        key = inst.key()
        out = self.cache.get(key)
        if out is None:
            out = self.domain.call(self.policy, inst)
            if len(self.cache) > 20000:
                self.cache.clear()
            self.cache[key] = out
        return out

    def _counterexample(self, name: str, inst: Any, out: _Outcome,
                        r: props.PropertyResult | None = None, **extra: Any
                        ) -> Counterexample:
        if r is None:  # the policy raised or returned something unusable
            msg = (f"the policy raised {type(out.error).__name__}: {out.error}"
                   if out.error is not None else out.problem)
            return Counterexample(name, self.domain.label, inst, out.allocation, out.prices,
                                  np.inf, None, None, msg, error=out.error, **extra)
        return Counterexample(name, self.domain.label, inst, out.allocation, out.prices,
                              r.violation, r.agent, r.other, r.message, **extra)

    def _answer(self, name: str, inst: Any, out: _Outcome) -> Counterexample | None:
        """Counterexample when the policy's answer is unusable or infeasible."""
        if out.error is not None or out.problem or out.allocation is None:
            return self._counterexample(name, inst, out)
        feas = self.domain.feasible(inst, out.allocation, self.tol)
        if not feas.passed:
            if name != "feasible":
                feas = _result(name, False, feas.violation, feas.agent, feas.other,
                               "the allocation is not feasible: " + feas.message)
            return self._counterexample(name, inst, out, feas)
        return None

    def evaluate(self, name: str, item: Any) -> Counterexample | None:
        if name == "strategy_proof":
            return self._probe(*item)
        inst = item
        out = self.outcome(inst)
        bad = self._answer(name, inst, out)
        if bad is not None or name == "feasible":
            return bad
        if name in _NEEDS_PRICES and out.prices is None:
            self.missing_prices = True
            return None
        r = self.domain.check(name, inst, out, self.tol)
        return None if r.passed else self._counterexample(name, inst, out, r)

    def _probe(self, inst: Any, agent: int, row: np.ndarray, factor: float
               ) -> Counterexample | None:
        name = "strategy_proof"
        out = self.outcome(inst)
        bad = self._answer(name, inst, out)
        if bad is not None:
            return bad
        assert out.allocation is not None
        honest = self.domain.own_value(inst, agent, out.allocation)
        best: tuple[float, np.ndarray, _Outcome] | None = None
        for lie in self.domain.lies(inst, agent, row, factor):
            fake = inst.with_row(agent, lie)
            lied = self.outcome(fake)
            bad = self._answer(name, fake, lied)
            if bad is not None:
                who = f"{self.domain.agent_word} {agent}"
                msg = (f"when {who} misreports its row as {lie.tolist()}, "
                       + bad.message[0].lower() + bad.message[1:])
                return Counterexample(name, self.domain.label, inst, out.allocation,
                                      out.prices, bad.violation, agent, None, msg,
                                      error=bad.error, misreport=lie,
                                      misreport_allocation=lied.allocation)
            assert lied.allocation is not None
            gain = self.domain.own_value(inst, agent, lied.allocation) - honest
            if best is None or gain > best[0]:
                best = (gain, lie, lied)
        assert best is not None
        gain, lie, lied = best
        if gain <= self.tol * max(1.0, abs(honest)):
            return None
        who = f"{self.domain.agent_word} {agent}"
        truth = self.domain.true_row(inst, agent).tolist()
        msg = (f"{who} gains {gain:.4g} by misreporting its row {truth} as {lie.tolist()}: "
               f"its true value rises from {honest:.6g} to {honest + gain:.6g}")
        return Counterexample(name, self.domain.label, inst, out.allocation, out.prices, gain,
                              agent, None, msg, misreport=lie,
                              misreport_allocation=lied.allocation)


def _run_property(search: _Search, name: str, max_examples: int, seed: int, shrink: bool
                  ) -> PropertyReport:
    strategy = search.domain.probes() if name == "strategy_proof" else (
        search.domain.instances())
    found: list[Counterexample] = []
    calls = [0, 0]  # examples before the first failure, examples after it

    def test(item: Any) -> None:
        calls[1 if found else 0] += 1
        cx = search.evaluate(name, item)
        if cx is not None:
            found.append(cx)
            raise _Falsified

    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])
    conf = settings(settings.get_profile(f"fairalloc-{active_profile()}"),
                    max_examples=max_examples, phases=phases)
    runner = hypothesis_seed(seed)(conf(given(strategy)(test)))
    search.missing_prices = False
    t0 = time.perf_counter()
    note = ""
    deterministic = (_without_local_constants() if active_profile() == "deterministic"
                     else contextlib.nullcontext())
    try:
        with deterministic:
            runner()
    except _Falsified:
        pass
    except Flaky:
        note = ("the policy gave different answers for the same instance (nondeterministic?); "
                "the counterexample is the last failing instance")
    seconds = time.perf_counter() - t0
    if found:
        return PropertyReport(name, "failed", calls[0], max(calls[1] - 1, 0), seconds,
                              found[-1], note)
    if search.missing_prices:
        return PropertyReport(name, "skipped", calls[0], 0, seconds, None,
                              "the policy returns no prices; return (allocation, prices) or an "
                              "object with .prices to check it")
    return PropertyReport(name, "passed", calls[0], 0, seconds, None, note)


def check_policy(policy: Callable[..., Any],
                 properties: str | Sequence[str] = DEFAULT_PROPERTIES,
                 max_examples: int = 100, seed: int | None = 0, *, domain: Any = "market",
                 tol: float = 1e-6, shrink: bool = True) -> PolicyReport:
    """Check an allocation policy's properties on hypothesis-generated instances.

    Parameters
    ----------
    policy : callable
        ``policy(utility, budget, supply)`` for the market domains, ``policy(jobs, cluster)``
        for the cluster domain (see the module docs for what it may return).
    properties : str or sequence of str
        Property names (``"envy_free"`` or ``"envy-free"``, aliases, or ``"all"``); see
        :data:`PROPERTIES`.
    max_examples : int
        Instances tried per property (``$FAIRALLOC_MAX_EXAMPLES`` overrides it).
    seed : int or None
        Seed of the search: the same seed gives the same instances (deterministic profile).
        ``None``, or the nondeterministic profile, draws a fresh seed; the report records it.
    domain : str or MarketDomain or ClusterDomain
        ``"market"``, ``"leontief"``, ``"volatile"``, ``"volatile-leontief"`` or
        ``"cluster"``, or a domain object with custom sizes and value ranges.
    tol : float
        Relative tolerance of every property (as in :mod:`fairalloc.properties`).
    shrink : bool
        Shrink a failing instance to a minimal one (default); ``False`` reports the first.

    Returns
    -------
    PolicyReport
        ``report.passed``; ``report.counterexample`` is ``None`` or the shrunk instance, the
        allocation and the violation of the first failing property; ``print(report)`` shows
        a table and every counterexample.

    Raises
    ------
    InputError
        For an unknown property or domain, a non-callable policy, bad ``max_examples`` /
        ``seed`` / ``tol``, or ``market_clearing`` / ``budget_clearing`` asked explicitly of a
        policy that returns no prices.

    Examples
    --------
    A policy that gives everything to buyer 0 is not envy-free; the counterexample is shrunk
    to two buyers with one good:

    >>> import numpy as np
    >>> def dictator(utility, budget, supply):
    ...     x = np.zeros_like(utility)
    ...     x[0] = supply
    ...     return x
    >>> report = check_policy(dictator, ["envy_free"], max_examples=20)
    >>> report.passed, report.counterexample.agent, report.counterexample.instance.utility
    (False, 1, array([[1.],
           [1.]]))
    """
    if not callable(policy):
        raise InputError(f"policy must be callable, got {type(policy).__name__}",
                         argument="policy")
    dom = _domain(domain)
    names = property_names(properties, dom)
    if isinstance(max_examples, bool) or not isinstance(max_examples, int | np.integer) \
            or max_examples < 1:
        raise InputError(f"max_examples must be a positive integer, got {max_examples!r}",
                         argument="max_examples")
    override = _max_examples_override()
    n_examples = int(override if override is not None else max_examples)
    profile = active_profile()
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)
                             or seed < 0):
        raise InputError(f"seed must be a non-negative integer or None, got {seed!r}",
                         argument="seed")
    if seed is None or profile == "nondeterministic":
        seed = random.SystemRandom().randrange(2 ** 32)
    if isinstance(tol, bool | str | bytes):
        tol_f = -1.0
    else:
        try:
            tol_f = float(tol)
        except (TypeError, ValueError, OverflowError):
            tol_f = -1.0
    if not (0.0 <= tol_f < 1.0):
        raise InputError(f"tol must be a number in [0, 1), got {tol!r}", argument="tol")
    shrink = as_bool(shrink, "shrink")
    search = _Search(policy, dom, tol_f)
    results = tuple(_run_property(search, name, n_examples, int(seed), shrink)
                    for name in names)
    asked = [r.name for r in results if r.status == "skipped"]
    if asked and not (isinstance(properties, str) and properties.strip().lower() == "all"):
        raise InputError(f"{', '.join(asked)} needs prices, but the policy returns none: "
                         "return (allocation, prices) or an object with .prices",
                         argument="properties")
    return PolicyReport(_policy_name(policy), dom.label, results, n_examples, int(seed),
                        profile)


# ============================================================================================
# one property as a callable (pytest parametrisation)
# ============================================================================================
@dataclass(frozen=True, eq=False)
class PropertyCheck:
    """One property of one policy, runnable as ``check()``; raises
    :class:`PropertyCheckError` with the readable report when the property fails."""

    policy: Callable[..., Any]
    property: str
    max_examples: int = 100
    seed: int | None = 0
    domain: Any = "market"
    tol: float = 1e-6

    @builtins.property  # to mypy, the field ``property`` above shadows the builtin
    def id(self) -> str:
        """Test id: the property name."""
        return self.property

    def __call__(self) -> PolicyReport:
        report = check_policy(self.policy, (self.property,), self.max_examples, self.seed,
                              domain=self.domain, tol=self.tol)
        report.assert_passed()
        return report

    def __repr__(self) -> str:
        return f"PropertyCheck({_policy_name(self.policy)}, {self.property!r})"
