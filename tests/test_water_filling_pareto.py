"""Water-filling's claim about its levels (issue #27): a result with status ``optimal`` is
Pareto-maximal (no job can rise while every other job keeps its level), checked by the fuzz
profile's independent Pareto LP (`tests.fuzz.checks.check_water_filling`); a result the end
check could not prove says so (status ``suboptimal``, path step ``pareto-unproven``, the
verdict in ``stats.fallbacks``) and still has a certified first level.

The cases in ``water_filling_fuzz_cases.json`` are the long fuzz profile's (seeds 303 and 404):
certified "optimal" results a job of which could rise by up to 0.9 of its level (decisions
proven at floors the allocation met only to the solvers' tolerance, amplified by level duals
of 1e7), and programs no strategy answered (a level LP no strategy certified); seed 707: an
"optimal" result whose end check bounded rises capped below their thresholds, and an
InfeasibleError from the robust level's uncertified solve on an always-feasible program;
seed 909: an "optimal" result (gap_tol 1e-4) whose end check proved a job its own LP raised
158-fold, its thresholds twice the level LPs' accuracy at the instance's scale (the end check
now claims ``max(bottleneck_tol max(1, level), gap_tol umax)`` per job,
`fairalloc.throughput.water_robust.claimed_rise`), and a false 'wrong' of the check itself
(`test_pareto_check_keeps_a_level_far_below_its_best`).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.core import Ctx, Skip
from tests.fuzz.targets import TARGETS
from tests.fuzz.wide import water_filling_cases

_TARGET = "water_filling (entities)"
_CASES = json.loads((pathlib.Path(__file__).parent / "water_filling_fuzz_cases.json").read_text())


def _decode(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"array", "dtype"}:
        return np.asarray(v["array"], dtype=v["dtype"])
    if isinstance(v, dict):
        return {k: _decode(x) for k, x in v.items()}
    return v


def _solve_and_check(case: dict) -> Any:
    target = TARGETS[_TARGET]
    r = target.call(case, Ctx())
    try:
        target.check(case, r)  # raises Wrong: not the first level, or "optimal" not Pareto
    except Skip:
        pass
    assert r.status in ("optimal", "suboptimal")
    if r.status == "suboptimal":
        assert r.stats.count("pareto-unproven") == 1
        assert any("pareto-unproven" in f for f in r.stats.fallbacks)
        assert r.certificate.ok  # the first level stays certified
    return r


@pytest.mark.parametrize("entry", _CASES, ids=[f"case{i}" for i in range(len(_CASES))])
def test_fuzz_cases_answered_and_not_wrong(entry: dict) -> None:
    _solve_and_check(_decode(entry["case"]))


def test_pareto_check_keeps_a_level_far_below_its_best() -> None:
    """The check's Pareto LP keeps every job at its level exactly, however far below its best.

    Proof that the allocation is Pareto-maximal: job 0 runs only on ``t0`` and holds all of it,
    so it keeps its level only with all of ``t0``; job 1 then keeps its level ``2e-11 > 0``
    only on ``t1``, all of it (its rate there is its only one left); so job 2, which runs only
    on ``t1``, gets nothing in any allocation keeping every level: the largest rise is 0.
    Fuzz seed 909: with the keep rows in units of each job's best level, job 1's row (``1e-11``
    of its best) was met within the LP's feasibility tolerance by dropping job 1 to 0, HiGHS
    gave the row no dual (no amplified violation to subtract), and job 2 "rose" by all of
    ``t1``: a rise of 1 reported for an allocation that cannot improve.
    """
    from tests.fuzz.checks import Gavel, pareto_rise

    g = Gavel(np.array([[1.0, 0.0], [1.0, 1e-11], [0.0, 1.0]]), None, None, [1, 1])
    x = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    coef = g.s[:, None] * g.Ta / g.e[:, None]
    rise, _ = pareto_rise(g, coef, (coef * x).sum(axis=1))
    assert rise <= 0.0  # the rises it proves (its point's gains less amplified violations)
    # a rise is still found: with t1 idle, job 1 or job 2 can take all of it (1 of its best)
    idle = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    rise, m = pareto_rise(g, coef, (coef * idle).sum(axis=1))
    assert m in (1, 2) and rise >= 1.0 - 1e-9


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(water_filling_cases())
def test_water_filling_cases_property(case: dict) -> None:
    _solve_and_check(case)
