"""Shared helpers of the restricted-column tests (`tests/test_restricted_columns.py`,
`tests/test_priced_columns.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.throughput import columns


def many_type_instance(n: int, k: int, seed: int, gangs: bool = True,
                       workers: tuple[int, int] = (4, 12)) -> tuple[fa.Jobs, fa.Cluster]:
    """Log-normal speeds on ``k`` types, workers per type drawn from ``[lo, hi)``."""
    rng = np.random.default_rng(seed)
    T = rng.lognormal(0.0, 0.8, n)[:, None] * rng.lognormal(0.0, 0.5, (n, k))
    s = rng.choice([1, 2, 4], n, p=[0.7, 0.2, 0.1]) if gangs else np.ones(n, dtype=int)
    count = rng.integers(workers[0], workers[1], k)
    steps = rng.uniform(1e3, 1e5, n)
    return (fa.Jobs(T, scale_factor=s, steps_remaining=steps),
            fa.Cluster({f"t{j}": int(w) for j, w in enumerate(count)}))


def whole_lp(monkeypatch: pytest.MonkeyPatch, solve: Callable[[], Any]) -> Any:
    """``solve()`` with restricted columns off, priced or not (the whole LP, as before)."""
    with monkeypatch.context() as m:
        m.setattr(columns, "MIN_TYPES", 10**9)
        m.setattr(columns, "PRICED_MIN_TYPES", 10**9)
        return solve()


def priced_everywhere(m: pytest.MonkeyPatch) -> None:
    """The priced path on every instance with at least 2 x 10 jobs (production: 17-48 types,
    50,000 columns, 512 jobs sampled), the unpriced one nowhere."""
    m.setattr(columns, "PRICED_MIN_TYPES", 1)
    m.setattr(columns, "PRICED_MAX_TYPES", 10**9)
    m.setattr(columns, "MIN_TYPES", 10**9)
    m.setattr(columns, "MIN_COLUMNS", 0)
    m.setattr(columns, "SAMPLE_JOBS", 10)


def priced_instance(n: int, k: int, seed: int, gangs: bool = True
                    ) -> tuple[fa.Jobs, fa.Cluster]:
    """About 2 to 4 jobs' worth of workers per type (capacity binds)."""
    return many_type_instance(n, k, seed, gangs, workers=(2 * n // k + 2, 4 * n // k + 4))
