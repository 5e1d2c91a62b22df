"""Shared test configuration: deterministic hypothesis profiles (switch with HYPOTHESIS_PROFILE)."""

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from fairalloc.testing.profiles import without_local_constants

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=25, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", derandomize=False, deadline=None, max_examples=300,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _without_local_constants() -> Iterator[None]:
    """Each test's hypothesis examples are fixed by its own seed alone.

    Recent hypothesis versions mix into their draws literal constants of the *local* modules
    imported so far, so a test's examples depended on which tests ran before it in the same
    process (a lone run, ``-k``, the files an xdist worker happened to get): an example that
    fails could appear in one CI run and not the next. `fairalloc.testing.profiles.
    without_local_constants` empties that pool while each test runs.
    """
    with without_local_constants():
        yield
