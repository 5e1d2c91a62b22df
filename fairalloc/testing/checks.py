"""Property checks of allocation policies: `fairalloc.testing.check_policy` and its
report.

A *policy* is any callable that maps an instance to an allocation.
`fairalloc.testing.check_policy` draws valid instances with the strategies of
`fairalloc.testing.strategies`, calls the policy, checks the chosen
properties of what it returns, and when a property fails lets hypothesis *shrink* the instance to a
minimal one; the report shows that instance, the allocation, and which agent is hurt by how much
(`fairalloc.testing.Counterexample`). It is fairalloc's counterpart of
scikit-learn's ``check_estimator``.

The search lives here (`fairalloc.testing.check_policy`,
`fairalloc.testing.checks.PropertySearch`,
`fairalloc.testing.PropertyCheck`); the domains and the meaning of each property in
`fairalloc.testing.domains`, the reports in
`fairalloc.testing.report`, the hypothesis profiles in
`fairalloc.testing.profiles`.

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
import hashlib
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from hypothesis import Phase, example, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky, Unsatisfiable

from .. import properties as props
from .._validation import as_bool
from ..errors import InputError
from .adapters import as_policy
from .defaults import (
    DATABASE_ENV,
    DEFAULT_MAX_EXAMPLES,
    DEFAULT_PROPERTIES,
    DEFAULT_TOL,
    MAX_EXAMPLES_LIMIT,
)
from .domain_base import GATES, NEEDS_PRICES, Domain, Outcome, call_kwargs
from .domains import property_names, resolve_domain
from .isolation import DEFAULT_DEADLINE, IsolatedPolicy, Lost
from .profiles import active_profile, max_examples_override, without_local_constants
from .report import Counterexample, PolicyReport, PropertyReport
from .tolerance import Tolerance, resolve_tolerances

__all__ = ["PropertyCheck", "PropertySearch", "check_policy", "policy_name"]

#: the policy's answers are cached per instance; the cache is emptied beyond this many entries
#: (a PERFORMANCE knob: memory against repeated calls while hypothesis shrinks)
SEARCH_CACHE_SIZE = 20_000
#: after this many policy calls crashed or overran the deadline, new instances are not tried
#: (a PERFORMANCE knob: each lost call costs a process start or a whole deadline)
MAX_LOST_CALLS = 16
#: a violation above ``tol`` but at most this fraction of the instance's value scale is
#: "within solver accuracy" (interior-point solvers such as ECOS stop about 1e-6 to 1e-5
#: relative): reported as a warning, not a failure (an ACCURACY contract of the checks)
ACCURACY_BAND = 1e-5
#: after this many calls overran the deadline, new instances are not tried (a PERFORMANCE
#: knob: each costs a whole deadline; a hang is not shrunk far)
MAX_TIMEOUTS = 2

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
    module = getattr(policy, "__module__", None)
    if name is None and hasattr(policy, "get_allocation"):  # a Gavel-style policy object
        name, module = type(policy).__qualname__, type(policy).__module__
    if name is None:
        return repr(policy)
    return f"{module}.{name}" if module and module not in ("__main__", "builtins") else name


@dataclass
class PropertySearch:
    """The search of one policy in one domain: `evaluate` judges one property on one
    generated item (an instance; for ``"strategy_proof"`` a probe ``(instance, agent,
    scaling, distortion)``) and returns the `fairalloc.testing.Counterexample` or
    ``None``; an item the property cannot be judged on (the policy gave no feasible answer) is
    rejected (``hypothesis.reject``). The policy's answers are cached per instance; with a
    ``runner`` (isolation) each call runs in a child process."""

    policy: Callable[..., Any]
    domain: Domain
    #: one number (the ``rtol`` of every property), a `Tolerance` or a mapping
    #: ``{property: Tolerance}`` (`fairalloc.testing.tolerance.resolve_tolerances`)
    tol: Any
    runner: IsolatedPolicy | None = None
    #: the policy's name (the key of its examples in the database)
    name: str = ""
    cache: dict[bytes, Outcome] = field(default_factory=dict)
    missing_prices: bool = False
    #: calls that crashed or overran the deadline (see `MAX_LOST_CALLS`)
    lost_calls: int = 0
    timeouts: int = 0
    #: gates (``"runs"``, ``"feasible"``) that failed on some instance during the search
    gated: set[str] = field(default_factory=set)
    #: instances set aside by the current property (no feasible answer)
    rejected: int = 0
    #: instances of the current property not tried (see `exhausted`)
    untried: int = 0
    #: violations of the current property within solver accuracy (warned, not failed)
    warned: int = 0
    worst_warning: float = 0.0
    #: the `Tolerance` of each property of the domain (from ``tol``)
    tolerances: dict[str, Tolerance] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tolerances = resolve_tolerances(self.tol, self.domain.properties)

    def _call(self, inst: Any) -> Outcome:
        if self.runner is None:
            return self.domain.call(self.policy, inst)
        res = self.runner.call(inst.args(), call_kwargs(inst))
        if isinstance(res, Lost):
            self.lost_calls += 1
            self.timeouts += res.kind == "timeout"
            return Outcome(problem=res.message, lost=res.kind)
        kind, value = res
        if kind == "raised":
            return Outcome(error=value)
        return self.domain.parse(value, inst)

    def outcome(self, inst: Any) -> Outcome | None:
        """The policy's answer, or ``None`` when the instance is not tried (too many calls
        crashed or hung already)."""
        key = inst.key()
        out = self.cache.get(key)
        if out is None:
            if self.exhausted:
                return None
            out = self._call(inst)
            if len(self.cache) > SEARCH_CACHE_SIZE:
                self.cache.clear()
            self.cache[key] = out
        return out

    @builtins.property
    def exhausted(self) -> bool:
        """Whether too many calls crashed or hung for new instances to be tried."""
        return self.lost_calls >= MAX_LOST_CALLS or self.timeouts >= MAX_TIMEOUTS

    def _counterexample(self, name: str, inst: Any, out: Outcome,
                        r: props.PropertyResult | None = None, **extra: Any
                        ) -> Counterexample:
        if r is None:  # the policy raised, crashed, hung or returned something unusable
            msg = (f"the policy raised {type(out.error).__name__}: {out.error}"
                   if out.error is not None else out.problem)
            return Counterexample(name, self.domain.label, inst, out.allocation, out.prices,
                                  np.inf, None, None, msg, error=out.error,
                                  outcome=out.lost or ("raised" if out.error is not None
                                                       else "unusable"), **extra)
        return Counterexample(name, self.domain.label, inst, out.allocation, out.prices,
                              r.violation, r.agent, r.other, r.message, **extra)

    def _gate(self, inst: Any, out: Outcome | None) -> str:
        """``""`` when ``out`` is a feasible answer, else the gate it fails."""
        if out is None:
            return "untried"
        if not out.answered:
            self.gated.add("runs")
            return "runs"
        assert out.allocation is not None
        if not self.domain.feasible(inst, out.allocation,
                                    self.tolerances["feasible"].rtol).passed:
            self.gated.add("feasible")
            return "feasible"
        return ""

    def _reject(self) -> None:
        self.rejected += 1
        reject()

    def evaluate(self, name: str, item: Any) -> Counterexample | None:
        if name == "strategy_proof":
            return self._probe(*item)
        inst = item
        out = self.outcome(inst)
        if out is None:  # not tried (too many calls were lost): counted, not judged
            self.untried += 1
            return None
        if name == "runs":
            return None if out.answered else self._counterexample(name, inst, out)
        if not out.answered:
            self.gated.add("runs")
            self._reject()
        assert out.allocation is not None
        if name == "feasible":
            feas = self.domain.feasible(inst, out.allocation,
                                        self.tolerances["feasible"].rtol)
            return None if feas.passed else self._counterexample(name, inst, out, feas)
        if self._gate(inst, out):
            self._reject()
        if name in NEEDS_PRICES and out.prices is None:
            self.missing_prices = True
            return None
        tol = self.tolerances[name]
        # rtol: judged by the domain against the property's own reference (the table of
        # fairalloc.testing.tolerance); atol: a floor, a fraction of the instance's scale
        r = self.domain.check(name, inst, out, tol.rtol)
        scale = self.domain.scale(inst)
        if r.passed or r.violation <= tol.atol * scale:
            return None
        if self._within_accuracy(r.violation, scale):
            return None
        return self._counterexample(name, inst, out, r,
                                    **self.domain.explain(name, inst, out, tol.rtol))

    def _within_accuracy(self, violation: float, scale: float) -> bool:
        """Whether a violation is within solver accuracy at the instance's scale (counted
        as a warning, not a failure)."""
        if not violation <= ACCURACY_BAND * scale:
            return False
        self.warned += 1
        self.worst_warning = max(self.worst_warning, violation / scale)
        return True

    def _probe(self, inst: Any, agent: int, row: np.ndarray, factor: float
               ) -> Counterexample | None:
        name = "strategy_proof"
        out = self.outcome(inst)
        if out is None:
            self.untried += 1
            return None
        if self._gate(inst, out):
            self._reject()
        assert out is not None and out.allocation is not None
        honest = self.domain.own_value(inst, agent, out.allocation)
        best: tuple[float, np.ndarray, Outcome] | None = None
        for lie in self.domain.lies(inst, agent, row, factor):
            fake = inst.with_row(agent, lie)
            lied = self.outcome(fake)
            if self._gate(fake, lied):  # no feasible answer to the lie: reported by the gates
                continue
            assert lied is not None and lied.allocation is not None
            gain = self.domain.own_value(inst, agent, lied.allocation) - honest
            if best is None or gain > best[0]:
                best = (gain, lie, lied)
        if best is None:
            return None
        gain, lie, lied = best
        tol = self.tolerances[name]
        scale = self.domain.scale(inst)
        # relative to the better of the agent's true values (honest or lying)
        if tol.allows(gain, max(abs(honest), abs(honest + gain)), scale) or \
                self._within_accuracy(gain, scale):
            return None
        who = f"{self.domain.agent_word} {agent}"
        truth = self.domain.true_row(inst, agent).tolist()
        msg = (f"{who} gains {gain:.4g} by misreporting its row {truth} as {lie.tolist()}: "
               f"its true value rises from {honest:.6g} to {honest + gain:.6g}")
        return Counterexample(name, self.domain.label, inst, out.allocation, out.prices, gain,
                              agent, None, msg, misreport=lie,
                              misreport_allocation=lied.allocation)


def _database(database: Any) -> Any:
    """The example database: a directory (``database=`` or ``$FAIRALLOC_HYPOTHESIS_DATABASE``)
    or ``None`` (off, the default)."""
    import os

    from hypothesis.database import DirectoryBasedExampleDatabase

    where = database if database is not None else (os.environ.get(DATABASE_ENV, "").strip()
                                                   or None)
    if where is None or where is False:
        return None
    if not isinstance(where, str | os.PathLike):
        raise InputError(f"database must be a directory path, got {database!r}",
                         argument="database")
    return DirectoryBasedExampleDatabase(os.fspath(where))


def _pinned(examples: Any, dom: Domain) -> tuple[Any, ...]:
    """The pinned instances, checked against the domain's instance type."""
    if examples is None:
        return ()
    if isinstance(examples, str | bytes) or not isinstance(examples, Sequence):
        raise InputError("examples must be a sequence of instances", argument="examples")
    kind = dom.instance_type
    for i, inst in enumerate(examples):
        if not isinstance(inst, kind):
            raise InputError(f"examples[{i}] is a {type(inst).__name__}, not an instance of "
                             f"the {dom.label} domain ({kind.__name__})",
                             argument="examples", index=(i,))
    return tuple(examples)


def _run_property(search: PropertySearch, name: str, max_examples: int, seed: int, shrink: bool,
                  database: Any = None, pinned: Sequence[Any] = ()) -> PropertyReport:
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

    phases = ([Phase.explicit] + ([Phase.reuse] if database is not None else [])
              + [Phase.generate] + ([Phase.shrink] if shrink else []))
    conf = settings(settings.get_profile(f"fairalloc-{active_profile()}"),
                    max_examples=max_examples, phases=phases, database=database)
    # the seed first: hypothesis' @seed turns the database off, the settings turn it back on
    runner = given(strategy)(test)
    if name != "strategy_proof":  # (a probe is more than an instance)
        for inst in reversed(pinned):
            runner = example(inst)(runner)
    runner = conf(hypothesis_seed(seed)(runner))
    if database is not None:  # one key per policy, domain and property
        ident = f"{search.name}|{search.domain!r}|{name}".encode()
        runner._hypothesis_internal_database_key = hashlib.sha256(ident).digest()
    search.missing_prices = False
    search.rejected = 0
    search.untried = 0
    search.warned = 0
    search.worst_warning = 0.0
    t0 = time.perf_counter()
    note = ""
    never = False
    deterministic = (without_local_constants() if active_profile() != "nondeterministic"
                     else contextlib.nullcontext())
    try:
        with deterministic:
            runner()
    except _Falsified:
        pass
    except Unsatisfiable:
        never = True
    except Flaky:
        note = ("the policy gave different answers for the same instance (nondeterministic?); "
                "the counterexample is the last failing instance")
    seconds = time.perf_counter() - t0
    checked = calls[0] - search.rejected - search.untried if not found else calls[0]
    aside = ""
    if search.rejected and name not in GATES[:1]:
        aside = (f"checked where the policy answered feasibly; {search.rejected} instances set "
                 "aside (see runs / feasible)")
    if search.untried:
        aside += ("; " if aside else "") + (f"{search.untried} new instances not tried after "
                                            f"{search.lost_calls} calls crashed or hung")
    warn = ""
    if search.warned:
        warn = (f"warning: violated within solver accuracy on {search.warned} instances "
                f"(worst {search.worst_warning:.2g} of the instance's scale; above "
                f"tol={search.tolerances[name].rtol:g}, at most {ACCURACY_BAND:g})")
    note = "; ".join(n for n in (note, aside, warn) if n)
    if found:
        return PropertyReport(name, "failed", calls[0], max(calls[1] - 1, 0), seconds,
                              found[-1], note)
    if never or (not found and checked <= 0 and search.untried):
        return PropertyReport(name, "skipped", 0, 0, seconds, None,
                              "not checked: the policy gave no feasible answer on any instance "
                              "tried (see runs / feasible)")
    if search.missing_prices:
        return PropertyReport(name, "skipped", checked, 0, seconds, None,
                              "the policy returns no prices; return (allocation, prices) or an "
                              "object with .prices to check it")
    return PropertyReport(name, "passed", checked, 0, seconds, None, note)


def _expected(expected_failures: Any, dom: Domain) -> dict[str, str]:
    if expected_failures is None:
        return {}
    if not isinstance(expected_failures, Mapping):
        raise InputError("expected_failures must be a mapping property -> reason, got "
                         f"{type(expected_failures).__name__}", argument="expected_failures")
    out = {}
    for key, reason in expected_failures.items():
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"expected_failures[{key!r}] must be a non-empty reason string, "
                             f"got {reason!r}", argument="expected_failures")
        try:
            (name,) = property_names([key], dom)
        except (InputError, ValueError):
            raise InputError(f"expected_failures names {key!r}, not a property of the "
                             f"{dom.label} domain", argument="expected_failures") from None
        out[name] = reason
    return out


def _judge(report: PropertyReport, reason: str | None) -> PropertyReport:
    """``report`` under an expected failure: failed -> xfailed, passed -> xpassed (strict)."""
    if reason is None or report.status == "skipped":
        return report
    if report.status == "failed":
        note = "; ".join(n for n in (f"expected to fail: {reason}", report.note) if n)
        return replace(report, status="xfailed", note=note)
    return replace(report, status="xpassed",
                   note=f"expected to fail ({reason}) but passed: remove it from "
                        "expected_failures")


def check_policy(policy: Any,
                 properties: str | Sequence[str] = DEFAULT_PROPERTIES,
                 max_examples: int = DEFAULT_MAX_EXAMPLES, seed: int | None = 0, *,
                 domain: Any = "market", tol: Any = DEFAULT_TOL, shrink: bool = True,
                 expected_failures: Mapping[str, str] | None = None,
                 isolate: bool | None = None, deadline: float = DEFAULT_DEADLINE,
                 database: Any = None, examples: Sequence[Any] = ()) -> PolicyReport:
    """Check an allocation policy's properties on hypothesis-generated instances.

    Parameters
    ----------
    policy : callable or Gavel-style policy object
        ``policy(utility, budget, supply)`` for the market domains, ``policy(jobs, cluster)``
        for the cluster domain (see the module docs for what it may return). In the cluster
        domain an object with Gavel's ``get_allocation`` method is accepted as it is
        (`fairalloc.testing.gavel_policy`).
    properties : str or sequence of str
        Property names (``"envy_free"`` or ``"envy-free"``, aliases, or ``"all"``); see
        `fairalloc.testing.PROPERTIES`. Every property except the gates
        ``runs`` and ``feasible`` is checked only where the policy answered feasibly; when the
        policy failed to, the gate that failed is added to the report with its own shrunk
        counterexample.
    max_examples : int
        Instances tried per property, at most 1,000,000 (``$FAIRALLOC_MAX_EXAMPLES``
        overrides it).
    seed : int or None
        Seed of the search: the same seed gives the same instances (deterministic profile).
        ``None``, or the nondeterministic profile, draws a fresh seed; the report records it.
    domain : str or MarketDomain or ClusterDomain
        ``"market"``, ``"leontief"``, ``"volatile"``, ``"volatile-leontief"`` or
        ``"cluster"``, or a domain object with custom sizes and value ranges.
    tol : float, Tolerance or mapping
        One number: the relative tolerance ``rtol`` of every property. A
        `fairalloc.testing.Tolerance` ``(rtol, atol)``, or a mapping ``{property: rtol |
        (rtol, atol) | Tolerance}`` (aliases accepted; the key ``"default"`` sets the
        others): a violation passes when at most ``rtol`` times the property's own reference
        (envy: the agent's own value; sharing incentive: its share; market clearing: the
        market's value; Pareto: the agent's best level; the table in
        `fairalloc.testing.tolerance`) or at most ``atol`` times the instance's value scale
        (its largest utility times supply / throughput), so a verdict does not change when the
        instance is rescaled. A violation above that but at most `ACCURACY_BAND` of the
        instance's value scale is within solver accuracy: a warning in the property's note,
        not a failure.
    shrink : bool
        Shrink a failing instance to a minimal one (default); ``False`` reports the first.
    expected_failures : mapping, optional
        ``{"envy_free": "FIFO by design"}``: properties known to fail, with the reason. A
        failure of one is reported as ``xfailed`` (not a failure); a pass as ``xpassed``, which
        *is* a failure (strict, as pytest's ``xfail(strict=True)``).
    isolate : bool, optional
        Run every policy call in a child process with a per-call ``deadline``, so that a
        crash (``abort()``, a segfault) or a hang is reported as a failure of ``runs`` instead
        of ending the check (`fairalloc.testing.isolation`).
        Default: on in the ``ci`` profile, off otherwise.
    deadline : float
        Seconds one isolated call may take (a guard against hangs, not a measurement).
    database : str or path, optional
        A directory for hypothesis' example database (default ``$FAIRALLOC_HYPOTHESIS_DATABASE``,
        else none): the shrunk failures of a run are saved there and replayed first in the
        next, per policy, domain and property.
    examples : sequence of instances
        Pinned regression instances (``MarketInstance`` / ``ClusterInstance``, e.g. a
        counterexample's ``.instance``), checked first for every property but
        ``strategy_proof``, like hypothesis' ``@example``.

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
        ``seed`` / ``tol`` / ``expected_failures`` / ``deadline``, or ``market_clearing`` /
        ``budget_clearing`` asked explicitly of a policy that returns no prices.

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

    Declared as expected, the failure no longer fails the report:

    >>> check_policy(dictator, ["envy_free"], max_examples=20,
    ...              expected_failures={"envy_free": "a dictatorship"}).passed
    True
    """
    return _check_policy(policy, properties, max_examples, seed, domain=domain, tol=tol,
                         shrink=shrink, expected_failures=expected_failures, isolate=isolate,
                         deadline=deadline, database=database, examples=examples)


def _check_policy(policy: Any, properties: Any, max_examples: Any, seed: Any, *, domain: Any,
                  tol: Any, shrink: Any, expected_failures: Any, isolate: Any, deadline: Any,
                  database: Any = None, examples: Sequence[Any] = (),
                  need_prices: bool | None = None) -> PolicyReport:
    dom = resolve_domain(domain)
    name_of = policy_name(policy)
    policy = as_policy(policy, dom)
    names = property_names(properties, dom)
    expected = _expected(expected_failures, dom)
    if isinstance(max_examples, bool) or not isinstance(max_examples, int | np.integer) \
            or not 1 <= max_examples <= MAX_EXAMPLES_LIMIT:
        raise InputError(f"max_examples must be an integer in [1, {MAX_EXAMPLES_LIMIT:,}], got "
                         f"{max_examples!r}", argument="max_examples")
    override = max_examples_override()
    n_examples = int(override if override is not None else max_examples)
    profile = active_profile()
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)
                             or seed < 0):
        raise InputError(f"seed must be a non-negative integer or None, got {seed!r}",
                         argument="seed")
    if seed is None or profile == "nondeterministic":
        seed = random.SystemRandom().randrange(2 ** 32)
    tols = _tolerances(tol, dom)
    shrink = as_bool(shrink, "shrink")
    isolated = (profile == "ci") if isolate is None else as_bool(isolate, "isolate")
    limit = _number(deadline)
    if not (0.0 < limit < np.inf):
        raise InputError(f"deadline must be a positive number of seconds, got {deadline!r}",
                         argument="deadline")
    db = _database(database)
    pinned = _pinned(examples, dom)
    runner = IsolatedPolicy(policy, limit) if isolated else None
    search = PropertySearch(policy, dom, tols, runner, name_of)
    try:
        results = [_run_property(search, name, n_examples, int(seed), shrink, db, pinned)
                   for name in names]
        extra = [g for g in GATES if g in search.gated and g not in names]
        if extra:  # the policy failed a gate on the way: report it, shrunk, first
            results = [_run_property(search, g, n_examples, int(seed), shrink, db, pinned)
                       for g in extra] + results
    finally:
        if runner is not None:
            runner.close()
    if need_prices is None:
        need_prices = not (isinstance(properties, str) and properties.strip().lower() == "all")
    asked = [r.name for r in results if r.status == "skipped" and r.name in NEEDS_PRICES
             and "no prices" in r.note]
    if asked and need_prices:
        raise InputError(f"{', '.join(asked)} needs prices, but the policy returns none: "
                         "return (allocation, prices) or an object with .prices",
                         argument="properties")
    results = [_judge(r, expected.get(r.name)) for r in results]
    return PolicyReport(name_of, dom.label, tuple(results), n_examples, int(seed), profile)


def _tolerances(tol: Any, dom: Domain) -> dict[str, Tolerance]:
    """The `Tolerance` of every property of ``dom`` (keys of a mapping may be aliases)."""

    def canonical(key: str) -> str:
        (name,) = property_names([key], dom)
        return name

    return resolve_tolerances(tol, dom.properties, canonical)


def _number(value: Any) -> float:
    if isinstance(value, bool | str | bytes):
        return -1.0
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return -1.0


# ============================================================================================
# one property as a callable (pytest parametrisation)
# ============================================================================================
@dataclass(frozen=True, eq=False)
class PropertyCheck:
    """One property of one policy, runnable as ``check()``; raises
    `fairalloc.testing.PropertyCheckError` with the readable report when the
    property fails, and skips the test (``pytest.skip``) when the property does not apply
    (``market_clearing`` of a policy without prices, from ``"all"``) or could never be checked.

    Built by `fairalloc.testing.parametrize_with_property_checks`, one per policy and property;
    the arguments are those of `fairalloc.testing.check_policy`.

    Parameters
    ----------
    policy : callable or Gavel-style policy object
        The policy checked (as for `fairalloc.testing.check_policy`).
    property : str
        One property name (`fairalloc.testing.PROPERTIES`).
    max_examples : int
        Instances tried.
    seed : int or None
        Seed of the search (``None``: a fresh one, recorded in the report).
    domain : str or MarketDomain or ClusterDomain
        Where the instances are drawn from (``"market"``, ``"cluster"``, ...).
    tol : float, Tolerance or mapping
        The tolerance of the property (as for `fairalloc.testing.check_policy`).
    expected_failure : str or None
        A reason when the property is known to fail: carried for the pytest mark
        (`fairalloc.testing.parametrize_with_property_checks` marks the test
        ``xfail(strict=True)``); ``check()`` itself raises on the failure either way.
    isolate : bool or None
        Run each policy call in a child process (``None``: the profile's default).
    deadline : float
        Seconds one isolated call may take.
    explicit : bool
        Whether the property was named (not reached through ``"all"``): a named property that
        needs prices the policy does not return is an error instead of a skip.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.testing import PropertyCheck
    >>> def equal_split(utility, budget, supply):   # every buyer gets 1/n of every good
    ...     return np.tile(supply / len(budget), (len(budget), 1))
    >>> check = PropertyCheck(equal_split, "feasible", max_examples=5)
    >>> check.id, check().passed
    ('feasible', True)
    """

    policy: Any
    property: str
    max_examples: int = DEFAULT_MAX_EXAMPLES
    seed: int | None = 0
    domain: Any = "market"
    tol: Any = DEFAULT_TOL
    expected_failure: str | None = None
    isolate: bool | None = None
    deadline: float = DEFAULT_DEADLINE
    explicit: bool = True

    @builtins.property  # to mypy, the field ``property`` above shadows the builtin
    def id(self) -> str:
        """Test id: the property name."""
        return self.property

    def __call__(self) -> PolicyReport:
        """Run the check: the policy's `fairalloc.testing.PolicyReport` when it passed."""
        report = _check_policy(self.policy, (self.property,), self.max_examples, self.seed,
                               domain=self.domain, tol=self.tol, shrink=True,
                               expected_failures=None, isolate=self.isolate,
                               deadline=self.deadline, need_prices=self.explicit)
        report.assert_passed()
        mine = report[self.property]
        if mine.status == "skipped":
            import pytest

            pytest.skip(f"{self.property}: {mine.note}")
        return report

    def __repr__(self) -> str:
        return f"PropertyCheck({policy_name(self.policy)}, {self.property!r})"
