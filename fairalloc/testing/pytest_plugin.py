"""pytest integration of `fairalloc.testing` (registered as the ``fairalloc`` plugin).

Installing fairalloc registers this module through the ``pytest11`` entry point, so every
pytest run gets:

* the marker ``fairalloc_property`` on each test made by
  `fairalloc.testing.parametrize_with_property_checks` (select
  or skip them with ``-m fairalloc_property`` / ``-m "not fairalloc_property"``);
* ``--fairalloc-profile {deterministic,nondeterministic}`` (sets
  ``FAIRALLOC_HYPOTHESIS_PROFILE``) and ``--fairalloc-max-examples N`` (sets
  ``FAIRALLOC_MAX_EXAMPLES``, overriding ``max_examples`` of every property check);
* a header line naming the profile in force.

The plugin imports neither hypothesis nor numpy until a property check runs, so it costs
nothing in projects that do not use it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .defaults import (
    DEFAULT_MAX_EXAMPLES,
    DEFAULT_PROPERTIES,
    DEFAULT_TOL,
    MAX_EXAMPLES_ENV,
    PROFILE_ENV,
    PROFILES,
)

__all__ = ["parametrize_with_property_checks"]

MARKER = "fairalloc_property"


def parametrize_with_property_checks(
    policy: Callable[..., Any] | Sequence[Callable[..., Any]],
    properties: str | Sequence[str] = DEFAULT_PROPERTIES,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    seed: int | None = 0,
    *,
    domain: Any = "market",
    tol: Any = DEFAULT_TOL,
    expected_failures: Mapping[str, str] | None = None,
    isolate: bool | None = None,
    deadline: float | None = None,
) -> Any:
    """A pytest ``parametrize`` mark with one test per property (and per policy).

    The parameter is ``check``: calling ``check()`` runs
    `fairalloc.testing.check_policy` for that one property and
    raises `fairalloc.testing.PropertyCheckError` (an
    ``AssertionError``) whose message is the report with the shrunk counterexample.

    Parameters
    ----------
    policy : callable or sequence of callables
        The policy (or policies) under test.
    properties, max_examples, seed, domain, isolate, deadline
        As in `fairalloc.testing.check_policy`.
    tol : float, Tolerance or mapping
        As in `fairalloc.testing.check_policy`: one ``rtol``, or per property
        ``{"sharing_incentive": (1e-4, 1e-9)}``; checked when the mark is made (a bad
        tolerance is an `fairalloc.InputError` at collection, not a failing test).
    expected_failures : mapping, optional
        ``{"envy_free": "FIFO by design"}``: those tests are marked
        ``pytest.mark.xfail(strict=True, reason=...)``: the failure is reported as ``xfailed``,
        an unexpected pass fails the run (``XPASS(strict)``).

    Returns
    -------
    pytest.MarkDecorator
        ``pytest.mark.parametrize("check", ...)`` with one ``pytest.param`` per (policy,
        property), its id the property name (prefixed by the policy's name when several
        policies are given); apply it to a test function taking ``check``.

    Notes
    -----
    A property that does not apply (``market_clearing`` / ``budget_clearing`` of a policy that
    returns no prices, asked through ``"all"``) is skipped, not failed.

    Examples
    --------
    In a test file::

        from fairalloc.testing import parametrize_with_property_checks

        @parametrize_with_property_checks(my_policy, ["envy_free", "sharing_incentive"])
        def test_my_policy(check):
            check()

    gives the tests ``test_my_policy[envy_free]`` and ``test_my_policy[sharing_incentive]``.
    """
    import pytest

    from .checks import PropertyCheck, _expected, _tolerances, policy_name
    from .domains import property_names, resolve_domain
    from .isolation import DEFAULT_DEADLINE
    from .report import PropertyCheckError

    policies = list(policy) if isinstance(policy, Sequence) else [policy]
    if not policies:
        from ..errors import InputError

        raise InputError("policy is an empty sequence", argument="policy")
    names = property_names(properties, domain)
    dom = resolve_domain(domain)
    expected = _expected(expected_failures, dom)
    tols = _tolerances(tol, dom)
    named = [properties] if isinstance(properties, str) else list(properties)
    explicit = set(property_names([p for p in named if p.strip().lower() != "all"], domain)
                   ) if any(p.strip().lower() != "all" for p in named) else set()
    params = []
    for pol in policies:
        for name in names:
            reason = expected.get(name)
            check = PropertyCheck(pol, name, max_examples, seed, domain, tols, reason, isolate,
                                  DEFAULT_DEADLINE if deadline is None else deadline,
                                  name in explicit)
            label = name if len(policies) == 1 else f"{policy_name(pol)}-{name}"
            marks = [getattr(pytest.mark, MARKER)]
            if reason is not None:
                marks.append(pytest.mark.xfail(strict=True, reason=reason,
                                               raises=PropertyCheckError))
            params.append(pytest.param(check, id=label, marks=marks))
    return pytest.mark.parametrize("check", params)


# --------------------------------------------------------------------------------------------
# hooks
# --------------------------------------------------------------------------------------------
_saved: dict[str, str | None] = {}


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("fairalloc", "fairalloc property checks")
    group.addoption("--fairalloc-profile", choices=PROFILES, default=None,
                    help=f"hypothesis profile of fairalloc property checks (sets {PROFILE_ENV}; "
                         "default deterministic)")
    group.addoption("--fairalloc-max-examples", type=int, default=None, metavar="N",
                    help=f"examples per fairalloc property check, overriding max_examples "
                         f"(sets {MAX_EXAMPLES_ENV})")


def _set_env(name: str, value: str) -> None:
    _saved.setdefault(name, os.environ.get(name))
    os.environ[name] = value


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: a fairalloc.testing property check of an allocation policy")
    profile = config.getoption("fairalloc_profile", default=None)
    if profile:
        _set_env(PROFILE_ENV, profile)
    count = config.getoption("fairalloc_max_examples", default=None)
    if count is not None:
        if count < 1:
            import pytest

            raise pytest.UsageError("--fairalloc-max-examples must be a positive integer")
        _set_env(MAX_EXAMPLES_ENV, str(count))


def pytest_unconfigure(config: Any) -> None:
    for name, value in _saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _saved.clear()


def pytest_report_header(config: Any) -> str:
    profile = os.environ.get(PROFILE_ENV, "").strip() or "deterministic"
    extra = os.environ.get(MAX_EXAMPLES_ENV, "").strip()
    tail = f", max_examples {extra}" if extra else ""
    return f"fairalloc.testing: hypothesis profile {profile!r}{tail} ({PROFILE_ENV})"
