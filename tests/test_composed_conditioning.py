"""Every valid composed program gets a certified answer (issue #27, the long fuzz's seeds 606 and
707): the cases in ``composed_fuzz_cases.json`` are valid inputs on which the composed / cvxpy
plan (`fairalloc._cvxpy`) answered no solver resolved the program.

* finish-time fairness with a binding cap ``x[6, 0] <= 1.2e-6``: the capped job's hyperbolic
  cone (``inv_pos`` of its throughput) is 1e12 out of balance at the optimum; Clarabel stopped
  with ``NumericalError`` in every step, and the unit-scale steps, which rotate such cones from a
  reference point, had none (a failed solve left none). The iterate a failed solve stopped at is
  now the next step's reference.
* min_cost's work-conserving stage (``backend="clarabel"``): Clarabel meets the kept ratio row
  (a difference of nearly equal terms) only to its absolute tolerance, and its point is
  repaired by moving it towards the anchor -- the Charnes-Cooper point, whose scale is
  arbitrary (the ratio is scale-invariant: 0.78 of a job's time where 1 was free), so the
  repair dragged the work-conserving point back by a relative 2e-2. The anchor is now the
  ratio-optimal point scaled up as far as its rows allow.
* a Leontief market and a composed min_makespan whose caps box a variable loosely
  (``4e-14 v <= 1e-7``: ``v <= 2.4e6`` for a ``v`` at 2): the unit scaling scaled the column by
  its range, and its rows with it, so the scaled solve's tolerance was 2.4e6 times too coarse on
  them (a supply row exceeded by 2.4e-2). A boxed column is now scaled at its magnitude at the
  reference point where that is smaller than its range.
* a capped Leontief market (seed 909) in which buyers need nothing in some round: such a bundle
  (its level fixed at 0) took factor 1 while its buyer's unit was 2^-51, so its weight in the
  buyer's utility was 2^51 and the conic program held an entry of 2.3e15; Clarabel stopped at a
  relative gap of 3.2 and the unit-scaled copy reported DualInfeasible. A bundle without
  demand now takes its buyer's unit (weight 1: every weight is at most 1, as documented).

Each answer is checked by the fuzz profile's independent checks (caps, supply, objective
against a reference point).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import cvxpy as cp
import numpy as np
import pytest

import fairalloc as fa
from fairalloc._conic import unit_scaling
from fairalloc.tolerances import FEAS_TOL
from tests.fuzz.core import Ctx, Skip
from tests.fuzz.targets import TARGETS

_ALL = json.loads((pathlib.Path(__file__).parent / "composed_fuzz_cases.json").read_text())
_CASES = [e for e in _ALL if e["target"] != "min_cost"]
_MIN_COST = [e for e in _ALL if e["target"] == "min_cost"]


def _decode(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"array", "dtype"}:
        return np.asarray(v["array"], dtype=v["dtype"])
    if isinstance(v, dict):
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


@pytest.mark.parametrize("entry", _CASES, ids=[f"case{i}" for i in range(len(_CASES))])
def test_fuzz_cases_answered_and_certified(entry: dict) -> None:
    target = TARGETS[entry["target"]]
    case = _decode(entry["case"])
    r = target.call(case, Ctx())  # raised SolverError / CertificateError before
    assert r.certificate.ok
    try:
        target.check(case, r)  # caps, supply, objective against a reference point
    except Skip:
        pass


def test_loose_box_scaled_at_the_reference_magnitude() -> None:
    # v <= 1e-7 / 4e-14 = 2.5e6 (a loose box), v at 2 in the reference: v is scaled by 2, not
    # by 2 ** 22, so the supply row stays at unit scale where v lives
    v, w = cp.Variable(nonneg=True), cp.Variable(nonneg=True)
    prob = cp.Problem(cp.Maximize(cp.log(v) + cp.log(w)), [4e-14 * v <= 1e-7, v + w <= 4.0])
    data = prob.get_problem_data(cp.CLARABEL)[0]
    ref = np.full(data["A"].shape[1], 2.0)  # every column at 2 (v = w = 2 is the optimum)
    loose = unit_scaling(data)  # without a reference: v at its range (what the box says)
    at_ref = unit_scaling(data, ref)
    assert float(np.max(loose.col)) >= 2.0 ** 21
    assert float(np.max(at_ref.col)) <= 4.0


@pytest.mark.parametrize("entry", _MIN_COST, ids=[f"min_cost{i}" for i in range(len(_MIN_COST))])
def test_min_cost_work_conserving_certified(entry: dict) -> None:
    c = entry["case"]
    kw = c["kw"]
    jobs = fa.Jobs(np.asarray(c["throughput"]), weight=np.asarray(c["weight"]),
                   steps_remaining=np.asarray(c["steps_remaining"]))
    r = fa.min_cost(jobs, fa.Cluster(c["workers"]), np.asarray(c["cost"]), **kw)
    # (raised CertificateError: no strategy certified the work-conserving program)
    assert r.certificate.ok
    assert all(cert.ok for cert in r.stage_certificates)
    x = np.asarray(r.x)
    assert np.all(x >= 0.0)
    assert np.all(x.sum(axis=1) <= 1.0 + FEAS_TOL)  # the library's documented feasibility


def test_leontief_bundle_weights_are_at_most_one_with_empty_rounds() -> None:
    """`MarketUnits.bundle_weights` is at most 1 (its documented range) also for a round in
    which a buyer needs nothing (seed 909: it was 2^51 there)."""
    from fairalloc.markets.units import market_units

    U = np.array([[[7.3e9, 2.2e9, 0.0]], [[0.0, 3.4e8, 8.2e9]], [[2.5e9, 5.1e9, 6.1e9]]])
    units = market_units(U, np.ones(3), np.full(3, 3.2e-6), "leontief")
    w = units.bundle_weights()
    assert np.all(w <= 1.0) and np.all(w > 0), w
    assert w.max() == 1.0  # each buyer's largest bundle keeps weight 1
