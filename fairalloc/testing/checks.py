"""Property checks of allocation policies: [`check_policy`][fairalloc.testing.check_policy] and its
report.

A *policy* is any callable that maps an instance to an allocation.
[`check_policy`][fairalloc.testing.check_policy] draws valid instances with the strategies of
[`fairalloc.testing.strategies`][fairalloc.testing.strategies], calls the policy, checks the chosen
properties of what it returns, and when a property fails lets hypothesis *shrink* the instance to a
minimal one; the report shows that instance, the allocation, and which agent is hurt by how much
([`Counterexample`][fairalloc.testing.Counterexample]). It is fairalloc's counterpart of
scikit-learn's ``check_estimator``.

The search lives here ([`check_policy`][fairalloc.testing.check_policy],
[`PropertySearch`][fairalloc.testing.checks.PropertySearch],
[`PropertyCheck`][fairalloc.testing.PropertyCheck]); the domains and the meaning of each property in
[`fairalloc.testing.domains`][fairalloc.testing.domains], the reports in
[`fairalloc.testing.report`][fairalloc.testing.report], the hypothesis profiles in
[`fairalloc.testing.profiles`][fairalloc.testing.profiles].

What a policy may return
------------------------
An array; a pair ``(allocation, prices)``; a mapping with keys ``"allocation"`` (and
``"prices"``); or an object with an ``allocation`` attribute (cluster domain: ``x`` first) and
optionally ``prices`` -- so fairalloc's own result objects work as they are. Prices are needed
by ``market_clearing`` and ``budget_clearing`` only.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from .. import properties as props
from .._validation import as_bool
from ..errors import InputError
from .defaults import DEFAULT_MAX_EXAMPLES, DEFAULT_PROPERTIES, DEFAULT_TOL
from .domains import (
    NEEDS_PRICES,
    Domain,
    Outcome,
    property_names,
    property_result,
    resolve_domain,
)
from .profiles import active_profile, max_examples_override, without_local_constants
from .report import Counterexample, PolicyReport, PropertyReport

__all__ = ["PropertyCheck", "PropertySearch", "check_policy", "policy_name"]

#: the policy's answers are cached per instance; the cache is emptied beyond this many entries
#: (a PERFORMANCE knob: memory against repeated calls while hypothesis shrinks)
SEARCH_CACHE_SIZE = 20_000

# ============================================================================================
# the search
# ============================================================================================
class _Falsified(Exception):
    """Raised inside the hypothesis test to mark a failing example (recorded beforehand)."""


def policy_name(policy: Any) -> str:
    """A readable name of a policy (``module.qualname``; partials with their arguments)."""
    if isinstance(policy, functools.partial):
        args = [policy_name(policy.func), *map(repr, policy.args),
                *(f"{k}={v!r}" for k, v in policy.keywords.items())]
        return f"partial({', '.join(args)})"
    name = getattr(policy, "__qualname__", None) or getattr(policy, "__name__", None)
    if name is None:
        return repr(policy)
    module = getattr(policy, "__module__", None)
    return f"{module}.{name}" if module and module not in ("__main__", "builtins") else name


@dataclass
class PropertySearch:
    """The search of one policy in one domain: `evaluate` judges one property on one
    generated item (an instance; for ``"strategy_proof"`` a probe ``(instance, agent,
    scaling, distortion)``) and returns the [`Counterexample`][fairalloc.testing.Counterexample] or
    ``None``. The policy's answers are cached per instance."""

    policy: Callable[..., Any]
    domain: Domain
    tol: float
    cache: dict[bytes, Outcome] = field(default_factory=dict)
    missing_prices: bool = False

    def outcome(self, inst: Any) -> Outcome:
        key = inst.key()
        out = self.cache.get(key)
        if out is None:
            out = self.domain.call(self.policy, inst)
            if len(self.cache) > SEARCH_CACHE_SIZE:
                self.cache.clear()
            self.cache[key] = out
        return out

    def _counterexample(self, name: str, inst: Any, out: Outcome,
                        r: props.PropertyResult | None = None, **extra: Any
                        ) -> Counterexample:
        if r is None:  # the policy raised or returned something unusable
            msg = (f"the policy raised {type(out.error).__name__}: {out.error}"
                   if out.error is not None else out.problem)
            return Counterexample(name, self.domain.label, inst, out.allocation, out.prices,
                                  np.inf, None, None, msg, error=out.error, **extra)
        return Counterexample(name, self.domain.label, inst, out.allocation, out.prices,
                              r.violation, r.agent, r.other, r.message, **extra)

    def _answer(self, name: str, inst: Any, out: Outcome) -> Counterexample | None:
        """Counterexample when the policy's answer is unusable or infeasible."""
        if out.error is not None or out.problem or out.allocation is None:
            return self._counterexample(name, inst, out)
        feas = self.domain.feasible(inst, out.allocation, self.tol)
        if not feas.passed:
            if name != "feasible":
                feas = property_result(name, False, feas.violation, feas.agent, feas.other,
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
        if name in NEEDS_PRICES and out.prices is None:
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
        best: tuple[float, np.ndarray, Outcome] | None = None
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


def _run_property(search: PropertySearch, name: str, max_examples: int, seed: int, shrink: bool
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
    deterministic = (without_local_constants() if active_profile() == "deterministic"
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
                 max_examples: int = DEFAULT_MAX_EXAMPLES, seed: int | None = 0, *,
                 domain: Any = "market", tol: float = DEFAULT_TOL, shrink: bool = True
                 ) -> PolicyReport:
    """Check an allocation policy's properties on hypothesis-generated instances.

    Parameters
    ----------
    policy : callable
        ``policy(utility, budget, supply)`` for the market domains, ``policy(jobs, cluster)``
        for the cluster domain (see the module docs for what it may return).
    properties : str or sequence of str
        Property names (``"envy_free"`` or ``"envy-free"``, aliases, or ``"all"``); see
        [`PROPERTIES`][fairalloc.testing.PROPERTIES].
    max_examples : int
        Instances tried per property (``$FAIRALLOC_MAX_EXAMPLES`` overrides it).
    seed : int or None
        Seed of the search: the same seed gives the same instances (deterministic profile).
        ``None``, or the nondeterministic profile, draws a fresh seed; the report records it.
    domain : str or MarketDomain or ClusterDomain
        ``"market"``, ``"leontief"``, ``"volatile"``, ``"volatile-leontief"`` or
        ``"cluster"``, or a domain object with custom sizes and value ranges.
    tol : float
        Relative tolerance of every property (as in `fairalloc.properties`).
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
    dom = resolve_domain(domain)
    names = property_names(properties, dom)
    if isinstance(max_examples, bool) or not isinstance(max_examples, int | np.integer) \
            or max_examples < 1:
        raise InputError(f"max_examples must be a positive integer, got {max_examples!r}",
                         argument="max_examples")
    override = max_examples_override()
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
    search = PropertySearch(policy, dom, tol_f)
    results = tuple(_run_property(search, name, n_examples, int(seed), shrink)
                    for name in names)
    asked = [r.name for r in results if r.status == "skipped"]
    if asked and not (isinstance(properties, str) and properties.strip().lower() == "all"):
        raise InputError(f"{', '.join(asked)} needs prices, but the policy returns none: "
                         "return (allocation, prices) or an object with .prices",
                         argument="properties")
    return PolicyReport(policy_name(policy), dom.label, results, n_examples, int(seed),
                        profile)


# ============================================================================================
# one property as a callable (pytest parametrisation)
# ============================================================================================
@dataclass(frozen=True, eq=False)
class PropertyCheck:
    """One property of one policy, runnable as ``check()``; raises
    [`PropertyCheckError`][fairalloc.testing.PropertyCheckError] with the readable report when the
    property fails."""

    policy: Callable[..., Any]
    property: str
    max_examples: int = DEFAULT_MAX_EXAMPLES
    seed: int | None = 0
    domain: Any = "market"
    tol: float = DEFAULT_TOL

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
        return f"PropertyCheck({policy_name(self.policy)}, {self.property!r})"
