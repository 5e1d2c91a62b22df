"""#28: finish-time fairness's Dinkelbach sequence on the whole-LP path first jumps to the
closed-form lower bound ``R_lb = max_m rho_m(its fastest column all the time) <= R*``. Where
the job slowest even at full speed sets the optimum (Gavel-drawn rounds), the next stage
ends the sequence: two whole-LP stages instead of three. The answer is unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning

sys.path.insert(0, str(Path(__file__).parent))
from test_floor_crash_basis import _gavel_like  # noqa: E402

#: the Dinkelbach sequence itself (the default first tries the closed-form optimum R_lb with
#: the work-conserving stage, which answers these instances without any Dinkelbach stage)
SEQUENCE = Tuning(ftf_closed_form=False)


def _dinkelbach_stages(a: fa.Allocation) -> int:
    return dict(a.stats.step_counts).get("dinkelbach", 0)


@pytest.mark.parametrize(("n", "seed"), [(256, 3), (200, 11)])
def test_whole_lp_sequence_starts_at_the_lower_bound(n, seed):
    """Two Dinkelbach stages (main: five and three, from the isolated split), the optimum of the
    conic program, every stage certified."""
    jobs, cl = _gavel_like(n, seed, True)
    a = fa.finish_time_fairness(jobs, cl, method="highs", tuning=SEQUENCE)
    assert _dinkelbach_stages(a) == 2
    assert all(c.ok for c in a.stage_certificates)
    ref = fa.finish_time_fairness(jobs, cl, method="cvxpy")
    tol = a.certificate.gap_tol + ref.certificate.gap_tol
    assert a.objective == pytest.approx(ref.objective, rel=tol)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(n=st.integers(32, 64), seed=st.integers(0, 2**31 - 1), spread=st.booleans())
def test_lower_bound_jump_agrees_with_the_conic_program(n, seed, spread):
    """Whether or not the lower bound is attained (capacity binding: the jump is one stage
    more), the sequence ends at the conic program's optimum, certified."""
    jobs, cl = _gavel_like(n, seed, spread)
    a = fa.finish_time_fairness(jobs, cl)
    assert all(c.ok for c in a.stage_certificates)
    ref = fa.finish_time_fairness(jobs, cl, method="cvxpy")
    tol = a.certificate.gap_tol + ref.certificate.gap_tol
    assert a.objective == pytest.approx(ref.objective, rel=tol)


@pytest.mark.parametrize(("n", "seed", "spread"), [(1024, 1, False), (1100, 2, True)])
def test_structured_sequence_jumps_next_to_the_lower_bound(n, seed, spread):
    """The structured path's first stage jumps just above ``R_lb``: three and two
    Dinkelbach stages (main: five and three), the whole LP's optimum, certified."""
    jobs, cl = _gavel_like(n, seed, spread)
    fast = fa.finish_time_fairness(jobs, cl, tuning=SEQUENCE)
    assert "structured-level" in fast.stats.path
    assert _dinkelbach_stages(fast) <= {1024: 3, 1100: 2}[n]
    assert all(c.ok for c in fast.stage_certificates)
    full = fa.finish_time_fairness(jobs, cl, method="highs", tuning=SEQUENCE)
    tol = 2 * fast.certificate.gap_tol
    assert fast.objective == pytest.approx(full.objective, rel=tol)
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        full.stage_certificates[1].primal_value, rel=tol)
