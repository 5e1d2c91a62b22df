"""Names and defaults of the property checks, in one place.

This module imports nothing, so the pytest plugin
(`fairalloc.testing.pytest_plugin`) and the ``fairalloc check``
command (`fairalloc.testing.cli`) read the same values as
`fairalloc.testing.check_policy` without loading hypothesis.
"""

from __future__ import annotations

__all__ = ["DATABASE_ENV", "DEFAULT_MAX_EXAMPLES", "DEFAULT_PROPERTIES", "DEFAULT_TOL",
           "DOMAIN_NAMES", "MAX_EXAMPLES_ENV", "MAX_EXAMPLES_LIMIT", "PROFILES", "PROFILE_ENV"]

#: environment variable naming the hypothesis profile (see
#: `fairalloc.testing.profiles`)
PROFILE_ENV = "FAIRALLOC_HYPOTHESIS_PROFILE"
#: environment variable naming a directory: the opt-in hypothesis example database (failures
#: found in one run are replayed first in the next)
DATABASE_ENV = "FAIRALLOC_HYPOTHESIS_DATABASE"
#: environment variable overriding ``max_examples`` everywhere
MAX_EXAMPLES_ENV = "FAIRALLOC_MAX_EXAMPLES"
#: the hypothesis profiles (the first is the default; ``ci`` is deterministic with every
#: policy call isolated in a child process, ``check_policy(isolate=True)``)
PROFILES = ("deterministic", "nondeterministic", "ci")
#: properties checked when none are named
DEFAULT_PROPERTIES = ("sharing_incentive", "envy_free", "pareto_optimal")
#: instances tried per property (a documented argument of check_policy)
DEFAULT_MAX_EXAMPLES = 100
#: the most instances one property search may be asked for (PERFORMANCE: a bound on the work
#: a call can be asked to do -- a million instances of even a millisecond policy is a quarter
#: of an hour per property; more is a typo, refused rather than run for ever)
MAX_EXAMPLES_LIMIT = 1_000_000
#: relative tolerance of every property, an ACCURACY contract of the checks (as in
#: `fairalloc.properties`; a documented argument of check_policy)
DEFAULT_TOL = 1e-6
#: the domain names of `fairalloc.testing.DOMAINS`
DOMAIN_NAMES = ("market", "leontief", "volatile", "volatile-leontief", "cluster")
