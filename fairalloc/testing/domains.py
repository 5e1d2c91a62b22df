"""Domains of the property checks: what a policy is given, how it answers, and what each
property means there (`fairalloc.testing.MarketDomain`,
`fairalloc.testing.ClusterDomain`).

Domains (what the policy is given and returns)
----------------------------------------------
``"market"`` (default; Fisher markets), ``"leontief"``, ``"volatile"``,
``"volatile-leontief"``
    ``policy(utility, budget, supply) -> allocation`` with ``utility`` (n, m) (or (n, m, T) for
    markets over time; Leontief demands for the Leontief domains), ``budget`` (n,) and
    ``supply`` (m,) (or (m, T)); the allocation has the shape of ``utility``.
``"cluster"``
    ``policy(jobs, cluster) -> allocation`` with `fairalloc.Jobs` and
    `fairalloc.Cluster` (Gavel): the allocation is the time fraction ``x`` (n,
    k) of each job on each accelerator type. Every Gavel policy (``fa.max_min_fairness``, ...) is
    such a policy as it is.

A `fairalloc.testing.MarketDomain` or
`fairalloc.testing.ClusterDomain` object instead of a name sets sizes and value
ranges (e.g. ``MarketDomain(equal_budgets=True, n=(2, 6))``).

Properties
----------
With budgets ``B`` (cluster domain: job weights ``w``), supply ``s`` (cluster: workers ``c`` per
type) and each agent's true utility ``u_i`` (cluster: effective throughput
``sum_j T[i, j] x[i, j]``):

``runs``
    The policy answers: it raises no exception, returns something that reads as an allocation,
    and (with ``isolate=True``) does not crash its process or overrun the per-call deadline.
``feasible``
    Non-negative, finite, the right shape, nothing beyond supply (cluster: ``x <= 1``, zero where
    a job cannot run or its gang does not fit, ``sum_j x[i, j] <= 1``,
    ``sum_i scale_factor_i x[i, j] <= c_j``). ``runs`` and ``feasible`` are the *gates*: every
    other property is checked only on the instances where the policy answered feasibly (the
    others are set aside and reported once, by the gate that failed).
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
    §2 -- with equal weights, `fairalloc.throughput.isolated_split`; where part of some job's
    share cannot be used -- its share of all workers exceeds its gang, or its gang misses a
    type -- scaled by ``d_min / d_i`` as `ClusterDomain.share_guarantee` says: what weighted
    max-min fairness promises, proofs/weighted_sharing_incentive.md).
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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .. import properties as props
from .._validation import as_option
from ..errors import InputError
from . import strategies as fst
from .cluster_domain import ClusterDomain
from .domain_base import (
    _ALIASES,
    GATES,
    MARKET_BUDGETS,
    MARKET_BUYERS,
    MARKET_DENSITY,
    MARKET_GOODS,
    MARKET_SUPPLIES,
    MARKET_VALUES,
    NEEDS_PRICES,
    PROPERTIES,
    Domain,
    Outcome,
    _good,
    parse_outcome,
    property_result,
)

__all__ = ["DOMAINS", "GATES", "NEEDS_PRICES", "PROPERTIES", "ClusterDomain",
           "Domain", "MarketDomain", "Outcome", "parse_outcome", "property_names",
           "property_result", "resolve_domain"]



class MarketDomain(Domain):
    """Fisher markets: ``policy(utility, budget, supply) -> allocation``.

    Parameters
    ----------
    kind : {"linear", "leontief"}
        Linear utilities or Leontief demands.
    rounds : int or (int, int), optional
        Markets over ``T`` rounds (utility (n, m, T), supply (m, T)).
    n, m, values, density, integers, equal_budgets, budget_values, supply_values
        As in
        `fairalloc.testing.strategies.market_instances`.

    Examples
    --------
    >>> dom = MarketDomain("leontief", rounds=2)
    >>> dom.label, dom.kind, dom.properties[:3]
    ('volatile-leontief', 'leontief', ('runs', 'feasible', 'market_clearing'))
    >>> MarketDomain().label
    'market'
    """

    agent_word = "buyer"
    instance_type = fst.MarketInstance
    properties = ("runs", "feasible", "market_clearing", "budget_clearing", "envy_free",
                  "sharing_incentive", "proportionality", "pareto_optimal", "strategy_proof")

    def __init__(self, kind: str = "linear", *, rounds: Any = None, n: Any = MARKET_BUYERS,
                 m: Any = MARKET_GOODS, values: Any = MARKET_VALUES,
                 density: float = MARKET_DENSITY, integers: bool = False,
                 equal_budgets: bool = False, budget_values: Any = MARKET_BUDGETS,
                 supply_values: Any = MARKET_SUPPLIES) -> None:
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
            return property_result("feasible", False, np.inf, message=(
                f"the allocation has shape {x.shape}; expected {U.shape} (buyers x goods"
                f"{'' if U.ndim == 2 else ' x rounds'})"))
        if not np.all(np.isfinite(x)):
            idx = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
            return property_result("feasible", False, np.inf, idx[0], message=(
                f"allocation[{', '.join(map(str, idx))}] is {x[idx]}"))
        neg = -x
        i_neg = np.unravel_index(int(np.argmax(neg)), x.shape)
        scale = max(1.0, float(s.max()))
        if neg[i_neg] > tol * scale:
            return property_result("feasible", False, float(neg[i_neg]), int(i_neg[0]), message=(
                f"buyer {int(i_neg[0])} gets a negative amount {x[i_neg]:.6g} of "
                f"{_good(i_neg[1:])}"))
        over = x.sum(axis=0) - s
        j = np.unravel_index(int(np.argmax(over)), s.shape)
        if over[j] > tol * max(1.0, float(s[j])):
            return property_result("feasible", False, float(over[j]), message=(
                f"{_good(j)} is allocated {x.sum(axis=0)[j]:.6g} but its supply is "
                f"{s[j]:.6g} (over by {over[j]:.4g})"))
        return property_result("feasible", True, 0.0, message="the allocation is feasible")

    def _clipped(self, inst: fst.MarketInstance, x: np.ndarray) -> np.ndarray:
        """``x`` moved into the feasible set (changes it by at most the feasibility tol)."""
        x = np.maximum(x, 0.0)
        total = x.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(total > inst.supply, inst.supply / total, 1.0)
        return x * scale[None]

    def check(self, name: str, inst: fst.MarketInstance, out: Outcome, tol: float
              ) -> props.PropertyResult:
        U, B, s, x = inst.utility, inst.budget, inst.supply, out.allocation
        assert x is not None
        kind = self.kind
        if name in NEEDS_PRICES:
            p = out.prices
            assert p is not None
            if p.shape != s.shape:
                return property_result(name, False, np.inf, message=(
                    f"the policy's prices have shape {p.shape}; expected {s.shape}"))
            if not np.all(np.isfinite(p)) or np.any(p < 0):
                return property_result(name, False, np.inf, message=(
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

    def scale(self, inst: fst.MarketInstance) -> float:
        """The instance's value scale: its largest utility times supply (1 when all are
        zero)."""
        top = float((inst.utility * inst.supply[None]).max())
        return top if top > 0 and np.isfinite(top) else 1.0

    def own_value(self, inst: fst.MarketInstance, agent: int, x: np.ndarray) -> float:
        u = inst.utility[agent:agent + 1]
        return float(props.bundle_values(u, x[agent:agent + 1], kind=self.kind)[0, 0])


_DOMAIN_FACTORIES: dict[str, Callable[[], Domain]] = {
    "market": lambda: MarketDomain("linear"),
    "leontief": lambda: MarketDomain("leontief"),
    "volatile": lambda: MarketDomain("linear", rounds=(2, 3), n=(1, 3), m=(1, 2)),
    "volatile-leontief": lambda: MarketDomain("leontief", rounds=(2, 3), n=(1, 3), m=(1, 2)),
    "cluster": lambda: ClusterDomain(),
}
#: Domain names accepted by `fairalloc.testing.check_policy` (``domain=``) and
#: ``fairalloc check``.
DOMAINS = tuple(_DOMAIN_FACTORIES)


def resolve_domain(domain: Any) -> Domain:
    if isinstance(domain, Domain):
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

    Parameters
    ----------
    properties : str or sequence of str
        One property name or several, in any of the spellings above.
    domain : str or Domain, default "market"
        The domain whose properties are named (``"market"``, ``"cluster"`` or a
        `fairalloc.testing.Domain`).

    Returns
    -------
    tuple of str
        The canonical names, in the order given, without repeats.

    Raises
    ------
    InputError
        ``argument="properties"``: an empty list, a non-string, or a name that is not a
        property of the domain (with its index).

    Examples
    --------
    >>> property_names(["envy-free", "Sharing incentive", "pareto"])
    ('envy_free', 'sharing_incentive', 'pareto_optimal')
    >>> property_names("all", "cluster")[:3]
    ('runs', 'feasible', 'market_clearing')
    """
    dom = resolve_domain(domain)
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

