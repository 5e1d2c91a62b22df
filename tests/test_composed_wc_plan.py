"""A composed model's work-conserving stage as a plan run by the one driver (issue #27 build
item 1): ``work-conserving`` -> ``first-stage allocation``, the documented degradation (the
certified first-stage point with a FairallocWarning), recorded as a step and a hand-over."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import fairalloc as fa
from fairalloc.plan import describe
from fairalloc.throughput.composed import composed_wc_plan

JOBS = fa.Jobs(np.array([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]]))
CLUSTER = fa.Cluster({"v100": 1, "k80": 1})


def test_the_plan():
    assert describe(composed_wc_plan(print, print)) == (
        "work-conserving", "first-stage allocation!")


def test_a_certified_work_conserving_stage_is_a_step_of_the_path():
    r = fa.MaxMinFairness(JOBS, CLUSTER).solve(method="cvxpy")
    assert r.stats.path[:2] == ("cvxpy", "work-conserving") and r.stats.fallbacks == ()
    assert len(r.stage_certificates) == 2 and all(c.ok for c in r.stage_certificates)


def test_a_failed_work_conserving_stage_degrades_to_the_first_stage(monkeypatch):
    # every cvxpy problem but the first stage's fails to compile (a fault injected at cvxpy's
    # public Problem.get_problem_data): the certified first-stage point is returned, announced
    first = fa.MaxMinFairness(JOBS, CLUSTER).solve(method="cvxpy", work_conserving=False)
    compile_, seen = cp.Problem.get_problem_data, []

    def failing(self, *args, **kw):
        seen.append(id(self)) if not seen else None
        if id(self) != seen[0]:
            raise cp.error.SolverError("injected")
        return compile_(self, *args, **kw)

    monkeypatch.setattr(cp.Problem, "get_problem_data", failing)
    with pytest.warns(fa.FairallocWarning, match="work-conserving stage could not be certified"
                      ) as rec:
        r = fa.MaxMinFairness(JOBS, CLUSTER).solve(method="cvxpy")
    # the warning names the caller's line, not a frame inside fairalloc
    assert {w.filename for w in rec if issubclass(w.category, fa.FairallocWarning)} == {__file__}
    assert r.certificate.ok and len(r.stage_certificates) == 1
    assert "first-stage allocation" in r.stats.path
    assert r.stats.fallbacks[-1].startswith(
        "work-conserving->first-stage allocation: its solve failed")
    # two certified answers of the first stage: each level is below the other's bound
    assert r.objective <= first.certificate.dual_bound * (1 + fa.tolerances.GAP_TOL)
    assert first.objective <= r.certificate.dual_bound * (1 + fa.tolerances.GAP_TOL)
