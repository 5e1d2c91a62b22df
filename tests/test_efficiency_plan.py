"""min cost's work-conserving stage as a plan run by the one driver (issue #27 build item 1):
``work-conserving`` (the ratio row's slack at ``stage_tol``) -> ``work-conserving+ratio-slack``
(the slack at the solver's tolerance), reached through a ``backend=`` subclass."""

from __future__ import annotations

import pytest

import fairalloc as fa
from fairalloc.backends import HighsBackend
from fairalloc.plan import describe
from fairalloc.throughput.efficiency import kept_ratio_plan


class _FailCalls(HighsBackend):
    """HiGHS whose LP solves numbered in ``bad`` (from 1) raise SolverError: a backend fault
    injected at the public backend boundary."""

    def __init__(self, bad):
        super().__init__()
        self.bad, self.calls = set(bad), 0

    def solve_lp(self, lp, **kw):
        self.calls += 1
        if self.calls in self.bad:
            raise fa.SolverError("injected", backend=self.name)
        return super().solve_lp(lp, **kw)


JOBS = fa.Jobs([[40.0, 10.0], [3.0, 2.0]])
CLUSTER = fa.Cluster({"v100": 1, "k80": 2})
COST = {"v100": 3.0, "k80": 0.5}
GAP_TOL = 1e-6


def test_the_plan():
    assert describe(kept_ratio_plan()) == ("work-conserving!", "work-conserving+ratio-slack!")


def test_a_failed_work_conserving_stage_is_solved_again_with_the_ratio_slack():
    # call 1 is the Charnes-Cooper LP; calls 2-5 are every LP of the work-conserving stage's
    # own plan at stage_tol (main raised their SolverError on this valid input)
    ref = fa.min_cost(JOBS, CLUSTER, cost=COST, gap_tol=GAP_TOL)
    r = fa.min_cost(JOBS, CLUSTER, cost=COST, backend=_FailCalls(range(2, 6)), stage_tol=1e-9,
                    gap_tol=GAP_TOL)
    assert r.certificate.ok and len(r.stage_certificates) == 2
    assert all(c.ok for c in r.stage_certificates)
    assert r.objective == pytest.approx(ref.objective, rel=GAP_TOL)
    assert "work-conserving+ratio-slack" in r.stats.path
    assert r.stats.fallbacks[-1].startswith("work-conserving->work-conserving+ratio-slack: ")


def test_no_ratio_slack_step_when_it_is_not_looser():
    # stage_tol at the solver's tolerance already: the retry does not apply, the stage's
    # error is typed and names each verdict
    with pytest.raises(fa.SolverError) as err:
        fa.min_cost(JOBS, CLUSTER, cost=COST, backend=_FailCalls(range(2, 6)),
                    stage_tol=1e-7, gap_tol=GAP_TOL)
    assert [v.split(":")[0] for v in err.value.verdicts] == ["work-conserving"]
