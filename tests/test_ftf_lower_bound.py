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

sys.path.insert(0, str(Path(__file__).parent))
from test_floor_crash_basis import _gavel_like  # noqa: E402


def _dinkelbach_stages(a: fa.Allocation) -> int:
    return dict(a.stats.step_counts).get("dinkelbach", 0)


@pytest.mark.parametrize(("n", "seed"), [(256, 3), (200, 11)])
def test_whole_lp_sequence_starts_at_the_lower_bound(n, seed):
    """Two Dinkelbach stages (main: three, from the isolated split), same optimum as the
    conic reference, every stage certified."""
    jobs, cl = _gavel_like(n, seed, True)
    a = fa.finish_time_fairness(jobs, cl, method="highs")
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
