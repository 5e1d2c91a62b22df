"""Shared helpers of the restricted-column tests (`tests/test_restricted_columns.py`,
`tests/test_priced_columns.py`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import fairalloc as fa
from fairalloc.backends import HighsBackend, SolveStatus
from fairalloc.throughput import Tuning


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


#: restricted columns off, priced or not (the whole LP, as before)
WHOLE_LP = Tuning(columns_min_types=10**9, priced_min_types=10**9)
#: the priced path on every instance with at least 2 x 10 jobs (production: 17-48 types,
#: 50,000 columns, 512 jobs sampled), the unpriced one nowhere
PRICED_EVERYWHERE = Tuning(priced_min_types=1, priced_max_types=10**9, columns_min_types=10**9,
                           columns_min_columns=0, sample_jobs=10)
#: the unpriced restricted columns on every instance (production: 65 types, 50,000 columns)
RESTRICTED_EVERYWHERE = Tuning(columns_min_types=1, columns_min_columns=0)


def tuned(base: Tuning, **changes: Any) -> Tuning:
    """``base`` with ``changes``."""
    return dataclasses.replace(base, **changes)


class SpyHighs(HighsBackend):
    """HiGHS (a caller-named backend, so warm starts still apply: it has the ``basis``
    capability) that records whether each solve started from a basis, and can fail the
    ``fail``-th solve or scale the row duals of every warm-startable solve (one that keeps its
    basis) by ``dual_scale`` (faults injected at the public backend boundary)."""

    def __init__(self, *, fail: int | None = None, dual_scale: float = 1.0, **kw: Any):
        super().__init__(**kw)
        self.warm: list[bool] = []
        self.fail, self.dual_scale = fail, dual_scale

    def _solve_lp(self, lp: Any, **kw: Any) -> Any:
        sol = super()._solve_lp(lp, **kw)
        self.warm.append(kw.get("basis") is not None)
        if self.fail is not None and len(self.warm) == self.fail:
            return dataclasses.replace(sol, status=SolveStatus.ERROR, x=None, row_duals=None,
                                       raw_status="injected failure")
        if kw.get("keep_basis") and self.dual_scale != 1.0 and sol.row_duals is not None:
            return dataclasses.replace(sol, row_duals=sol.row_duals * self.dual_scale)
        return sol


def priced_instance(n: int, k: int, seed: int, gangs: bool = True
                    ) -> tuple[fa.Jobs, fa.Cluster]:
    """About 2 to 4 jobs' worth of workers per type (capacity binds)."""
    return many_type_instance(n, k, seed, gangs, workers=(2 * n // k + 2, 4 * n // k + 4))
