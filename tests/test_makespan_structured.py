"""Minimum makespan's level LP through the structured level solver (issue #28).

``max theta`` s.t. ``throughput(m, X) / steps_m >= theta`` has the structure of a max-min
level (time and capacity rows only, rows ``T_m / steps_m``), so from
`Tuning.structured_min_jobs` jobs it is solved by `fairalloc.throughput.structured.fast_level`
(capacity prices; each job's best column in closed form) and certified on the whole level LP,
the whole LP staying the plan's exact tail. The answers equal the whole LP's to the
certificates' relative gap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.structured import STRUCTURED_LEVEL
from fairalloc.tolerances import GAP_TOL

#: the structured level solver at every size
STRUCT = Tuning(structured_min_jobs=1)


def _instance(seed: int, n: int, k: int, spread: float) -> tuple[fa.Jobs, fa.Cluster]:
    """Gavel-like: log-normal speeds, slower types at per-job ratios (some 0), gangs 1-8,
    steps over ``spread`` decades."""
    rng = np.random.default_rng(seed)
    ratio = np.c_[np.ones(n), rng.uniform(0.1, 0.9, (n, k - 1))]
    ratio[:, 1:][rng.random((n, k - 1)) < 0.15] = 0.0
    T = rng.lognormal(0.0, 0.8, n)[:, None] * 10.0 * ratio
    T = T[:, rng.permutation(k)]
    sf = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05])
    steps = 10.0 ** rng.uniform(2.0, 2.0 + spread, n)
    cl = fa.Cluster({f"t{j}": int(rng.integers(8, max(9, n // 2))) for j in range(k)})
    return fa.Jobs(T, scale_factor=sf, steps_remaining=steps), cl


def test_large_makespan_level_is_structured():
    """From `Tuning.structured_min_jobs` jobs (320) the level LP is solved structured, not
    by the whole LP (before: ``exact-lp`` first, 2,048 Gavel jobs 109 ms against 27 ms)."""
    jobs, cl = _instance(5, 400, 3, 4.0)
    r = fa.min_makespan(jobs, cl)
    assert r.stats.path[0] == STRUCTURED_LEVEL
    assert all(c.ok for c in r.stage_certificates)
    exact = fa.min_makespan(jobs, cl, method="highs")
    assert STRUCTURED_LEVEL not in exact.stats.path
    assert r.objective == pytest.approx(exact.objective, rel=2 * GAP_TOL)


def test_small_makespan_keeps_the_whole_lp():
    """Below `Tuning.structured_min_jobs` the whole LP is as fast: unchanged."""
    jobs, cl = _instance(6, 40, 3, 2.0)
    assert fa.min_makespan(jobs, cl).stats.path[0] == "exact-lp"


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(0, 10**6), st.integers(4, 48), st.integers(2, 5),
       st.sampled_from([0.0, 1.0, 5.0]), st.booleans())
def test_structured_makespan_equals_the_whole_lp(seed, n, k, spread, wc):
    jobs, cl = _instance(seed, n, k, spread)
    fast = fa.min_makespan(jobs, cl, tuning=STRUCT, work_conserving=wc, symmetry=False)
    exact = fa.min_makespan(jobs, cl, method="highs", work_conserving=wc, symmetry=False)
    assert fast.stats.path[0] == STRUCTURED_LEVEL
    if not fast.stats.fallbacks:
        assert "exact-lp" not in fast.stats.path[:1]
    assert all(c.ok for c in fast.stage_certificates)
    assert all(c.ok for c in exact.stage_certificates)
    # the level (1 / makespan) certified by both to the certificates' relative gap
    a, b = fast.stage_certificates[0], exact.stage_certificates[0]
    scale = max(abs(a.primal_value), abs(b.primal_value), a.scale or 0.0, 1e-300)
    assert abs(a.primal_value - b.primal_value) <= 2 * GAP_TOL * scale
    assert fast.objective == pytest.approx(exact.objective, rel=2 * GAP_TOL)
    # the allocation reaches the makespan it reports
    tp = np.einsum("ij,ij->i", fast.allocation, jobs.throughput)
    assert np.max(jobs.steps_remaining / tp) <= fast.objective * (1 + 2 * GAP_TOL)


def test_makespan_work_conserving_lp_is_solved_cold():
    """The work-conserving LP of makespan never starts from the level LP's basis
    (``exact-lp+from-level`` was 20-50 % slower than cold from 160 to 1,000 jobs); the answer
    is the same optimum, certified."""
    jobs, cl = _instance(8, 250, 3, 3.0)
    r = fa.min_makespan(jobs, cl)
    assert len(r.stage_certificates) == 2 and all(c.ok for c in r.stage_certificates)
    assert r.stats.path == ("exact-lp",)
    cold = fa.min_makespan(jobs, cl, tuning=Tuning(warm_start=False))
    a, b = r.stage_certificates[1], cold.stage_certificates[1]
    assert a.primal_value == pytest.approx(b.primal_value, rel=2 * GAP_TOL)


def test_a_makespan_that_overflows_a_float_is_an_input_error():
    """steps 1e308 at 0.5 steps/s is 2e308 s even alone on the fastest type: no float makespan,
    so the caller hears which job (fuzz seed 2222 met it as a SolverError "model rejected")."""
    tp = np.array([[0.5], [0.5]])
    with pytest.raises(fa.InputError) as info:
        fa.min_makespan(fa.Jobs(tp, steps_remaining=np.array([8257.78, 1e308])),
                        fa.Cluster({"t0": 4}))
    assert info.value.argument == "steps_remaining" and info.value.index == (1,)
    r = fa.min_makespan(fa.Jobs(tp, steps_remaining=np.array([8257.78, 1e300])),
                        fa.Cluster({"t0": 4}))  # representable: answered and certified
    assert r.certificate.ok and r.objective == pytest.approx(2e300, rel=1e-6)
