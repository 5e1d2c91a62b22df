"""The base of the property-check domains (`fairalloc.testing.domains`): property names, the
default generator ranges, what a policy returned (`Outcome`) and the `Domain` interface."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from .. import properties as props
from .strategies._common import reals

__all__ = ["GATES", "NEEDS_PRICES", "PROPERTIES", "Domain", "Outcome", "call_kwargs",
           "parse_outcome", "property_result"]


#: Every property a domain may support, with a one-line meaning (used by the CLI's table).
PROPERTIES: dict[str, str] = {
    "runs": "the policy answers (no exception, crash or hang)",
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
    "answers": "runs",
    "no_crash": "runs",
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

# default instance sizes and value ranges of the domains (hypothesis generator ranges, as in
# `fairalloc.testing.strategies`; each is a documented argument of
# its domain)
#: market domain: buyers and goods per instance
MARKET_BUYERS = (1, 4)
MARKET_GOODS = (1, 3)
#: market domain: utility, budget and supply value ranges
MARKET_VALUES = (0.1, 10.0)
MARKET_BUDGETS = (0.1, 10.0)
MARKET_SUPPLIES = (0.2, 5.0)
#: market domain: fraction of positive utilities
MARKET_DENSITY = 0.6
#: cluster domain: jobs, accelerator types and workers per type per instance
CLUSTER_JOBS = (1, 4)
CLUSTER_TYPES = (1, 3)
CLUSTER_WORKERS = (1, 4)
#: cluster domain: throughput (steps/s) and steps-remaining ranges
CLUSTER_THROUGHPUTS = (0.5, 100.0)
CLUSTER_STEPS = (100.0, 10000.0)
#: cluster domain: fraction of types a job can run on
CLUSTER_DENSITY = 0.7
#: cluster domain: entity weight range (with ``entities=``)
CLUSTER_ENTITY_WEIGHTS = (0.25, 4.0)
#: cluster domain: fraction of its own throughput a job keeps when paired (with ``pairs=``)
CLUSTER_PAIR_SLOWDOWN = (0.2, 1.0)
NEEDS_PRICES = ("market_clearing", "budget_clearing")
#: the gates: every other property is checked only where the policy answers feasibly
GATES = ("runs", "feasible")


# ============================================================================================
# outcomes: what a policy returned
# ============================================================================================
@dataclass(frozen=True, eq=False)
class Outcome:
    allocation: np.ndarray | None = None
    prices: np.ndarray | None = None
    error: BaseException | None = None
    problem: str = ""
    #: ``"crash"`` or ``"timeout"`` when an isolated call gave no answer (see `problem`)
    lost: str = ""

    @property
    def answered(self) -> bool:
        """Whether the policy returned a usable allocation (feasible or not)."""
        return self.error is None and not self.problem and self.allocation is not None


def parse_outcome(raw: Any, attrs: Sequence[str]) -> Outcome:
    """Allocation (and prices) from whatever the policy returned (see the module docs)."""
    prices: Any = None
    if isinstance(raw, tuple) and len(raw) == 2:
        alloc, prices = raw
    elif isinstance(raw, Mapping):
        if "allocation" not in raw:
            return Outcome(problem="the policy returned a mapping without an 'allocation' key")
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
        return Outcome(problem=f"the policy returned {type(raw).__name__}, not an allocation "
                                f"array ({exc})")
    p = None
    if prices is not None:
        try:
            p = np.array(prices, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            return Outcome(x, problem=f"the policy's prices are not numeric ({exc})")
    return Outcome(x, p)


def call_kwargs(inst: Any) -> dict[str, Any]:
    """Keyword arguments of the policy call (the entities of a cluster instance; else none)."""
    kw = getattr(inst, "kwargs", None)
    return dict(kw()) if callable(kw) else {}


def _good(index: Sequence[Any]) -> str:
    """``good 2`` or, in a market over time, ``good 2 in round 1``."""
    j = [int(v) for v in index]
    return f"good {j[0]}" + (f" in round {j[1]}" if len(j) > 1 else "")


def property_result(name: str, ok: bool, violation: float, agent: int | None = None,
            other: int | None = None, message: str = "") -> props.PropertyResult:
    return props.PropertyResult(name, bool(ok), float(max(violation, 0.0)), agent, other,
                                message)


# ============================================================================================
# domains
# ============================================================================================
class Domain:
    """What a family of policies is given, how it answers, and what its properties mean."""

    label = "domain"
    agent_word = "agent"
    #: the type of the instances (pinned ``examples=`` must be of it)
    instance_type: type = object
    properties: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ("allocation",)

    def instances(self) -> st.SearchStrategy[Any]:
        raise NotImplementedError

    def feasible(self, inst: Any, x: np.ndarray, tol: float) -> props.PropertyResult:
        raise NotImplementedError

    def check(self, name: str, inst: Any, out: Outcome, tol: float) -> props.PropertyResult:
        raise NotImplementedError

    def own_value(self, inst: Any, agent: int, x: np.ndarray) -> float:
        raise NotImplementedError

    def scale(self, inst: Any) -> float:
        """The instance's value scale (its largest utility / throughput, at least 1)."""
        raise NotImplementedError

    def explain(self, name: str, inst: Any, out: Outcome, tol: float) -> dict[str, Any]:
        """Extra `fairalloc.testing.Counterexample` fields for a failure."""
        return {}

    def true_row(self, inst: Any, agent: int) -> np.ndarray:
        raise NotImplementedError

    def valid_row(self, inst: Any, agent: int, row: np.ndarray) -> bool:
        raise NotImplementedError

    def parse(self, raw: Any, inst: Any) -> Outcome:
        """The `Outcome` of what the policy returned on ``inst``."""
        return parse_outcome(raw, self.attrs)

    def call(self, policy: Callable[..., Any], inst: Any) -> Outcome:
        try:
            raw = policy(*inst.args(), **call_kwargs(inst))
        except Exception as exc:  # the policy's failure is a finding, not a crash
            return Outcome(error=exc)
        return self.parse(raw, inst)

    def probes(self) -> st.SearchStrategy[tuple[Any, int, np.ndarray, float]]:
        """(instance, lying agent, per-entry scaling of its row, distortion factor)."""
        inner = self.instances()

        @st.composite
        def draw_probe(draw: st.DrawFn) -> tuple[Any, int, np.ndarray, float]:
            inst = draw(inner)
            agent = draw(st.integers(0, inst.n - 1))
            shape = self.true_row(inst, agent).shape
            scale = draw(arrays(np.float64, shape, elements=reals(*_SCALING)))
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
