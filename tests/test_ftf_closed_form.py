"""#28: finish-time fairness with its work-conserving stage first tries the closed-form optimum
``R_lb = max_m rho_m(the job's fastest column all the time)`` (plan step ``ftf-closed-form``):
``R_lb <= R*`` always, and a certified point of the work-conserving stage with every
``rho_m <= R_lb`` proves ``R* <= R_lb``. Where the stage has no such point (capacity binds
the optimum above ``R_lb``) the Dinkelbach sequence answers. Either way the answer is the
sequence's and the whole LP's, certified on the original program."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.duration import CLOSED_FORM, DINKELBACH

sys.path.insert(0, str(Path(__file__).parent))
from test_floor_crash_basis import _gavel_like  # noqa: E402
from test_ftf_floor_overload import _gavel_4096  # noqa: E402

SEQUENCE = Tuning(ftf_closed_form=False)


def _r_lb(jobs: fa.Jobs, cl: fa.Cluster) -> float:
    """``R_lb``: each job's rho with its fastest type all the time (the denominators ``D``,
    isolated finish times, from the policy's definition; no solve)."""
    p = fa.FinishTimeFairness(jobs, cl)
    T = np.asarray(jobs.throughput, dtype=float)
    steps = np.asarray(jobs.steps_remaining, dtype=float)
    return float(np.max((p.t + steps / T.max(axis=1)) / p.D))


def _agree(a: fa.Allocation, b: fa.Allocation) -> None:
    """Same optimum and work-conserving value within both certificates' tolerances."""
    assert all(c.ok for c in a.stage_certificates)
    assert all(c.ok for c in b.stage_certificates)
    tol = a.certificate.gap_tol + b.certificate.gap_tol
    assert a.objective == pytest.approx(b.objective, rel=tol)
    assert a.stage_certificates[1].primal_value == pytest.approx(
        b.stage_certificates[1].primal_value, rel=tol)


def _closed(a: fa.Allocation) -> bool:
    return CLOSED_FORM in a.stats.path and DINKELBACH not in a.stats.path


@pytest.mark.parametrize(("n", "seed", "spread"), [(256, 1, False), (1100, 2, True)])
def test_closed_form_answers_without_a_dinkelbach_stage(n, seed, spread):
    """R_lb attained: no Dinkelbach stage (main: two whole-LP stages at 256 jobs, two
    structured ones at 1,100), objective R_lb, the sequence's and the whole LP's answer."""
    jobs, cl = _gavel_like(n, seed, spread)
    a = fa.finish_time_fairness(jobs, cl)
    assert _closed(a) and a.stats.fallbacks == ()
    # the certificate's bound is the closed form's: 0 (no job beats its fastest column)
    assert abs(a.certificate.dual_bound) <= a.certificate.gap_tol * a.objective
    assert a.objective == pytest.approx(_r_lb(jobs, cl), rel=a.certificate.gap_tol)
    assert np.max(a.metric) <= a.objective * (1 + a.certificate.feas_tol)
    _agree(a, fa.finish_time_fairness(jobs, cl, tuning=SEQUENCE))
    _agree(a, fa.finish_time_fairness(jobs, cl, method="highs", tuning=SEQUENCE))


@pytest.mark.parametrize("n", [256, 2048])
def test_not_attained_hands_over_to_the_sequence(n):
    """Capacity binds the optimum above R_lb: the closed form declines (the whole LP's
    infeasible verdict at 256 jobs, the structured floor's at 2,048) and the Dinkelbach
    sequence answers from a solver left as the closed form found it."""
    jobs, cl = _gavel_like(n, 0, False)
    a = fa.finish_time_fairness(jobs, cl)
    assert a.objective > _r_lb(jobs, cl) * (1 + 1e3 * a.certificate.gap_tol)
    assert CLOSED_FORM in a.stats.path and DINKELBACH in a.stats.path
    assert any(f.startswith(f"{CLOSED_FORM}->dinkelbach-sequence:") for f in a.stats.fallbacks)
    _agree(a, fa.finish_time_fairness(jobs, cl, tuning=SEQUENCE))


def test_floor_prices_it_cannot_settle_go_to_the_whole_lp_at_r_lb():
    """R_lb attained, but the structured floor solver declines on its prices (degenerate
    here): the floors after the sequence are the same, so the whole LP solves the stage at
    R_lb directly, with no Dinkelbach stage (the first version handed this round to the
    sequence, whose floor stage then went to the whole LP as well)."""
    jobs, cl = _gavel_like(2048, 5, True)
    a = fa.finish_time_fairness(jobs, cl)
    assert _closed(a)
    assert a.objective == pytest.approx(_r_lb(jobs, cl), rel=a.certificate.gap_tol)
    _agree(a, fa.finish_time_fairness(jobs, cl, tuning=SEQUENCE))


def test_gavel_drawn_4096_jobs_closed_form():
    """The benchmark's 4,096 Gavel-drawn jobs (seed 2028): closed form with the structured
    floor stage, no whole LP, the sequence's answer."""
    jobs, cl = _gavel_4096()
    a = fa.finish_time_fairness(jobs, cl)
    assert _closed(a) and "exact-lp" not in a.stats.path
    _agree(a, fa.finish_time_fairness(jobs, cl, tuning=SEQUENCE))


@settings(max_examples=10, deadline=None, derandomize=True)
@given(n=st.integers(24, 96), seed=st.integers(0, 2**31 - 1), spread=st.booleans(),
       workers=st.sampled_from([0.1, 0.25, 0.5]))
def test_closed_form_agrees_with_the_sequence(n, seed, spread, workers):
    """Attained or not (fewer workers per job: capacity binds more often), the default plan
    and the Dinkelbach sequence give the same certified optimum and work-conserving value;
    on the closed-form path the objective is R_lb."""
    jobs, _ = _gavel_like(n, seed, spread)
    cap = max(8, int(workers * n))  # (gangs of up to 8 workers)
    cl = fa.Cluster({"a": cap, "b": cap, "c": cap})
    a = fa.finish_time_fairness(jobs, cl)
    b = fa.finish_time_fairness(jobs, cl, tuning=SEQUENCE)
    _agree(a, b)
    if _closed(a):
        assert a.objective == pytest.approx(_r_lb(jobs, cl), rel=a.certificate.gap_tol)


def test_work_conserving_off_keeps_the_sequence():
    """Without the work-conserving stage (Gavel's program) the Dinkelbach sequence runs,
    as before: the closed form needs that stage for its point."""
    jobs, cl = _gavel_like(256, 1, False)
    a = fa.finish_time_fairness(jobs, cl, work_conserving=False)
    assert CLOSED_FORM not in a.stats.path and DINKELBACH in a.stats.path
    b = fa.finish_time_fairness(jobs, cl)
    assert a.objective == pytest.approx(b.objective, rel=2 * a.certificate.gap_tol)
