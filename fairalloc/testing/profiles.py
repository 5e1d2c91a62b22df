"""Hypothesis profiles of the property checks (deterministic by default).

Deterministic by default: the same ``seed`` gives the same instances, so a CI run is
reproducible. Set ``FAIRALLOC_HYPOTHESIS_PROFILE=nondeterministic`` (or pytest's
``--fairalloc-profile=nondeterministic``) for a fresh random seed per run; the report records
the seed it used, so ``check_policy(..., seed=report.seed)`` replays a failure.
``FAIRALLOC_HYPOTHESIS_PROFILE=ci`` is the deterministic profile with every policy call isolated
in a child process with a per-call deadline (a crash or a hang is reported, not fatal).
``FAIRALLOC_HYPOTHESIS_DATABASE=DIR`` turns on hypothesis' example database: the failures of a
run are replayed first in the next (``check_policy(database=)``).
``FAIRALLOC_MAX_EXAMPLES`` (``--fairalloc-max-examples``) overrides ``max_examples`` everywhere,
e.g. for a thorough nightly run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Verbosity, settings

from .._validation import as_option
from ..errors import InputError
from .defaults import MAX_EXAMPLES_ENV, PROFILE_ENV, PROFILES

__all__ = ["active_profile", "max_examples_override", "without_local_constants"]


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
settings.register_profile("fairalloc-ci", derandomize=False, **_COMMON)


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
def without_local_constants() -> Iterator[None]:
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


def max_examples_override() -> int | None:
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
