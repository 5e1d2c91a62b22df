"""The Pyomo backend on programs with columns in no row and not in the objective: Pyomo never
hands such a column to the solver, which leaves it without a value ("No value for uninitialized
VarData x[4]"); the backend failed on them, and `max_min_fairness(..., backend="pyomo")` fell
back to its uncertified-work-conserving first stage with a warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.backends import BACKENDS, LinearProgram, get_backend

_reason = BACKENDS["pyomo"].unavailable_reason()
pytestmark = pytest.mark.skipif(_reason is not None, reason=_reason or "")


def _with_idle_columns(integer: bool) -> LinearProgram:
    # max x0 s.t. x0 <= 1; x1 in [0.5, 2.5] and x2 free appear nowhere else
    integrality = np.array([False, True, False]) if integer else None
    return LinearProgram.build(np.array([-1.0, 0.0, 0.0]), np.array([[1.0, 0.0, 0.0]]),
                               -np.inf, np.array([1.0]), np.array([0.0, 0.5, -np.inf]),
                               np.array([1.0, 2.5, np.inf]), integrality=integrality)


@pytest.mark.parametrize("integer", [False, True], ids=["lp", "milp"])
def test_a_column_in_no_row_gets_a_value_within_its_bounds(integer: bool) -> None:
    lp = _with_idle_columns(integer)
    sol = get_backend("pyomo").solve_lp(lp)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(-1.0)
    # the point of the bounds nearest 0: 0.5 (1 for the integer column), and 0 for the free one
    assert sol.x.tolist() == [pytest.approx(1.0), 1.0 if integer else 0.5, 0.0]


def test_max_min_fairness_certifies_both_stages_on_pyomo() -> None:
    """On main the work-conserving stage failed on every strategy (x[72] had no value)."""
    rng = np.random.default_rng(2)
    jobs = fa.Jobs(rng.uniform(1.0, 10.0, (24, 3)), scale_factor=rng.choice([1, 2], 24))
    cluster = fa.Cluster({"k80": 4, "p100": 4, "v100": 4})
    ref = fa.max_min_fairness(jobs, cluster, backend="highs")
    with warnings.catch_warnings():
        warnings.simplefilter("error", fa.FairallocWarning)
        got = fa.max_min_fairness(jobs, cluster, backend="pyomo")
    assert all(c.ok for c in got.stage_certificates)
    # both certified within the library's default gap_tol (1e-6, relative)
    assert got.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-9)
