"""#28: the structured floor (work-conserving) stage on Gavel-shaped jobs (a few dozen
models, gangs, discrete steps and elapsed times: row classes) certifies from its restricted
masters' own duals, the aggregated jobs' included (``lambda_m = s_m nu_R / c_m - omega_m``,
``mu_m = 0``), and frees the constants those duals price out, without the elastic dual LP
(`fairalloc.throughput.structured.floor`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput.structured import floor

MODELS = 26  # models drawn from (Gavel's trace has 26 of them)


def _gavel_like(n: int, seed: int, spread: bool = False) -> tuple[fa.Jobs, fa.Cluster]:
    """Jobs of ``MODELS`` models (three types, the faster ones 2-3x), Gavel's gang sizes,
    three orders of steps and three elapsed times: many jobs share a row direction
    (``spread``: steps spread by a factor up to 1.5 either way, so no two jobs are the
    same)."""
    rng = np.random.default_rng(seed)
    base = (rng.uniform(0.2, 1.0, (MODELS, 1)) * np.array([1.0, 1.9, 3.1])[None, :]
            * rng.uniform(0.7, 1.3, (MODELS, 3)))
    m = rng.integers(0, MODELS, n)
    s = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05])
    steps = rng.choice([1e3, 1e4, 1e5], n)
    if spread:
        steps = steps * rng.uniform(0.5, 1.5, n)
    elapsed = rng.choice([0.0, 600.0, 3600.0], n)
    cap = n // 4
    return (fa.Jobs(base[m], scale_factor=s, steps_remaining=steps, elapsed=elapsed),
            fa.Cluster({"a": cap, "b": cap, "c": cap}))


def _agrees_with_whole_lp(fast: fa.Allocation, jobs: fa.Jobs, cl: fa.Cluster) -> None:
    full = fa.finish_time_fairness(jobs, cl, method="highs")
    assert all(c.ok for c in fast.stage_certificates)
    assert fast.objective == pytest.approx(full.objective, rel=1e-6, abs=1e-8)
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        full.stage_certificates[1].primal_value, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize(("n", "seed"), [(1024, 1), (2048, 1)])
def test_grouped_floor_master_certifies_without_the_dual_lp(n, seed):
    """The floor stage runs restricted masters with row classes aggregated; their duals
    price every job (main: no duals from an aggregated master, so an elastic dual LP each
    round: two of them at 2,048 jobs)."""
    jobs, cl = _gavel_like(n, seed)
    fast = fa.finish_time_fairness(jobs, cl)
    assert floor.STRUCTURED_FLOOR in fast.stats.path
    assert fast.stats.count(floor.FLOOR_DUAL_LP) == 0
    _agrees_with_whole_lp(fast, jobs, cl)


def test_constants_priced_out_by_a_grouped_master_are_freed_without_a_dual_lp():
    """A grouped master whose prices price out constants names them itself (``floor-freed``)
    and the next master certifies; the aggregated jobs it prices out leave their groups
    (main: an elastic dual LP that fails, then a second one)."""
    jobs, cl = _gavel_like(2048, 3)
    fast = fa.finish_time_fairness(jobs, cl)
    freed = [step for step in fast.stats.path if step.startswith(floor.FLOOR_FREED + ":")]
    assert freed and fast.stats.count(floor.FLOOR_DUAL_LP) == 0
    _agrees_with_whole_lp(fast, jobs, cl)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(n=st.integers(1024, 1280), seed=st.integers(0, 2**31 - 1), spread=st.booleans())
def test_structured_floor_on_row_classes_matches_the_whole_lp(n, seed, spread):
    """Whatever path the floor stage takes on Gavel-shaped jobs (level duals, grouped or
    plain masters, freed jobs, the dual LP), it equals HiGHS on the whole LP and every
    certificate holds."""
    jobs, cl = _gavel_like(n, seed, spread)
    _agrees_with_whole_lp(fa.finish_time_fairness(jobs, cl), jobs, cl)
