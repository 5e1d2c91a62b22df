"""fairalloc.testing: property checks that policy researchers run in their own CI.

The counterpart of scikit-learn's ``check_estimator`` / ``parametrize_with_checks`` for
allocation policies:

* `fairalloc.testing.check_policy` -- run properties (feasibility, market clearing,
  envy-freeness, sharing incentive, proportionality, Pareto optimality, strategy-proofness probes)
  on hypothesis-generated instances; on failure, the report holds the *shrunk* counterexample:
  the instance, the allocation, and which agent is hurt by how much;
* `fairalloc.testing.parametrize_with_property_checks` -- one
  pytest test per property;
* `fairalloc.testing.strategies` -- hypothesis strategies that build
  only valid inputs (markets, clusters and job sets, bid tables, regime forecasts, arrival
  sequences);
* ``fairalloc check package.module:policy --property envy-free`` -- the same from a shell.

It needs hypothesis (``pip install ".[testing]"`` in the checkout, or ``".[dev]"``).
Names are imported lazily, so the ``fairalloc`` command and the pytest plugin load without it.

Examples
--------
>>> import numpy as np
>>> from fairalloc.testing import check_policy
>>> def equal_split(utility, budget, supply):
...     return np.outer(budget / budget.sum(), supply)
>>> report = check_policy(equal_split, ["envy_free", "sharing_incentive"], max_examples=10)
>>> report.passed, report.counterexample is None
(True, True)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "DOMAINS",
    "PROPERTIES",
    "ClusterDomain",
    "Counterexample",
    "MarketDomain",
    "PolicyReport",
    "PropertyCheck",
    "PropertyCheckError",
    "PropertyReport",
    "Tolerance",
    "check_policy",
    "gavel_policy",
    "parametrize_with_property_checks",
    "property_names",
    "strategies",
]

_LAZY = {
    "DOMAINS": "domains",
    "PROPERTIES": "domains",
    "ClusterDomain": "domains",
    "Counterexample": "report",
    "MarketDomain": "domains",
    "PolicyReport": "report",
    "PropertyCheck": "checks",
    "PropertyCheckError": "report",
    "PropertyReport": "report",
    "Tolerance": "tolerance",
    "check_policy": "checks",
    "gavel_policy": "adapters",
    "property_names": "domains",
    "parametrize_with_property_checks": "pytest_plugin",
}

_HINT = ('fairalloc.testing needs hypothesis; install it with pip install ".[testing]" '
         '(or ".[dev]") in the fairalloc checkout')


def _import(name: str) -> Any:
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "hypothesis":
            raise ImportError(_HINT) from exc
        raise


def __getattr__(name: str) -> Any:
    if name == "strategies":
        value = _import("strategies")
    elif name in _LAZY:
        value = getattr(_import(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'fairalloc.testing' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from . import strategies
    from .adapters import gavel_policy
    from .checks import PropertyCheck, check_policy
    from .domains import DOMAINS, PROPERTIES, ClusterDomain, MarketDomain, property_names
    from .pytest_plugin import parametrize_with_property_checks
    from .report import Counterexample, PolicyReport, PropertyCheckError, PropertyReport
    from .tolerance import Tolerance
