"""#28: a floor (work-conserving) stage's first restricted master starts HiGHS' simplex from a
crash basis, each job's best vertex at Newton's prices (`Backend.basis_from_statuses`),
instead of a cold simplex or the interior point. The answer is the whole LP's; only the
pivots change."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import ClarabelBackend, HighsBackend, LinearProgram
from fairalloc.backends.base import BASIC, LOWER, UPPER
from fairalloc.throughput import Tuning
from fairalloc.throughput.structured import floor

MODELS = 26  # models drawn from (Gavel's trace has 26 of them)


def _gavel_like(n: int, seed: int, spread: bool) -> tuple[fa.Jobs, fa.Cluster]:
    """Gavel-shaped FTF round: ``MODELS`` models on three types (the faster ones 2-3x),
    Gavel's gang sizes, three orders of steps and three elapsed times (``spread``: steps
    spread by up to 1.5x either way, so no two jobs share a row)."""
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


def _lp() -> LinearProgram:
    # max x0 + 2 x1 + x2 s.t. x0 + x1 <= 1, x2 <= 2, x >= 0: optimum x = (0, 1, 2), its
    # basis x1 and x2 basic, both rows at their bounds (nondegenerate)
    return LinearProgram.build([-1.0, -2.0, -1.0], [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                               row_upper=[1.0, 2.0])


def test_basis_from_statuses_starts_the_simplex_there():
    lp = _lp()
    be = HighsBackend(solver="simplex")
    optimal = be.basis_from_statuses(lp.shape, np.array([LOWER, BASIC, BASIC]),
                                     np.array([UPPER, UPPER]))
    sol = be.solve_lp(lp, basis=optimal)
    assert sol.extra["warm"] and sol.iterations == 0
    assert sol.x == pytest.approx([0.0, 1.0, 2.0])
    # a crash basis that is not optimal still ends at the optimum
    slack = be.basis_from_statuses(lp.shape, np.full(3, LOWER), np.full(2, BASIC))
    sol = be.solve_lp(lp, basis=slack)
    assert sol.status.value == "optimal" and sol.objective == pytest.approx(-4.0)
    assert sol.iterations > 0


def test_basis_from_statuses_refuses_a_wrong_count_or_shape():
    lp = _lp()
    be = HighsBackend()
    # three basic variables for two rows; a status vector of the wrong length
    assert be.basis_from_statuses(lp.shape, np.array([BASIC, BASIC, LOWER]),
                                  np.array([BASIC, UPPER])) is None
    assert be.basis_from_statuses(lp.shape, np.array([BASIC, LOWER]),
                                  np.array([BASIC, UPPER])) is None
    # a backend without the basis capability builds none
    assert ClarabelBackend().basis_from_statuses(
        lp.shape, np.array([LOWER, BASIC, BASIC]), np.array([UPPER, UPPER])) is None


@pytest.mark.parametrize(("n", "seed", "spread"), [(1024, 1, False), (2048, 5, True)])
def test_first_floor_master_from_the_crash_basis_saves_pivots(n, seed, spread):
    """The whole solve takes fewer simplex pivots with warm starts (the crash basis of the
    floor stage's only master) than without; on the previous main the floor master started
    cold either way and the counts were equal (1,773 and 5,640)."""
    jobs, cl = _gavel_like(n, seed, spread)
    # (the floor stage after the Dinkelbach sequence: at 2,048 jobs the closed form's floor
    # stage, at R_lb with other row scales, finds degenerate prices and goes to the whole LP)
    warm = fa.finish_time_fairness(jobs, cl, tuning=Tuning(ftf_closed_form=False))
    cold = fa.finish_time_fairness(jobs, cl, tuning=Tuning(warm_start=False,
                                                           ftf_closed_form=False))
    assert floor.STRUCTURED_FLOOR in warm.stats.path
    # no hand-over to the whole LP (constants freed where the first master had no feasible
    # point are part of the structured route, #28)
    assert not any(f.startswith(floor.STRUCTURED_FLOOR + "->") for f in warm.stats.fallbacks)
    assert warm.stats.iterations < cold.stats.iterations
    for a in (warm, cold):
        assert all(c.ok for c in a.stage_certificates)
    assert warm.objective == pytest.approx(cold.objective, rel=2 * warm.certificate.gap_tol)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(n=st.integers(1024, 1200), seed=st.integers(0, 2**31 - 1), spread=st.booleans())
def test_crash_started_floor_agrees_with_the_whole_lp(n, seed, spread):
    """Whatever path the floor stage takes from its crash basis, the answer is HiGHS' on
    the whole LP: the same rho and the same work-conserving value, both stages certified."""
    jobs, cl = _gavel_like(n, seed, spread)
    fast = fa.finish_time_fairness(jobs, cl)
    full = fa.finish_time_fairness(jobs, cl, method="highs")
    assert all(c.ok for c in fast.stage_certificates)
    tol = 2 * fast.certificate.gap_tol
    assert fast.objective == pytest.approx(full.objective, rel=tol)
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        full.stage_certificates[1].primal_value, rel=tol)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(n=st.integers(0, 40_000), seed=st.integers(0, 2**31 - 1))
def test_certificate_objective_dot_is_the_inner_product(n, seed):
    """`fairalloc._sparse.dot` (the certificates' objective ``c @ x`` without BLAS threads,
    whose spinning workers cost a cold 8,192-job FTF solve 45 ms of process CPU) is the
    inner product to rounding: within ``n`` ulps of ``sum |a_i b_i|``."""
    from fairalloc._sparse import dot

    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    scale = float(np.abs(a * b).sum())
    assert abs(dot(a, b) - float(a @ b)) <= 2 * n * np.finfo(float).eps * scale


def _spread_reference(rext, s1, s2, x1, x2, best):
    """``sum_t p_t |x_ct - x_bt|`` written out type by type (the reference)."""
    n, K = x1.shape
    out = np.zeros((n, K))
    for t in range(rext.size):
        xc = np.where(s1 == t, x1, 0.0) + np.where(s2 == t, x2, 0.0)
        xb = xc[np.arange(n), best][:, None]
        out += rext[t] * np.abs(xc - xb)
    return out


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(1, 300), k=st.integers(1, 6), seed=st.integers(0, 2**31 - 1),
       floor_kind=st.booleans())
def test_price_spread_is_the_priced_l1_distance(n, k, seed, floor_kind):
    """`price_spread` (rewritten with K x K share tables, #28) is ``sum_t p_t |x_ct - x_bt|``
    against each job's best candidate, for level candidates (pairs of types and idle) and
    floor candidates (also all the time on one type, and nothing), nan where a weight is."""
    from fairalloc.throughput.structured.common import price_spread

    rng = np.random.default_rng(seed)
    lo = np.array([k] * k + [j for j in range(k) for _ in range(j + 1, k)])
    hi = np.array(list(range(k)) + [j2 for j in range(k) for j2 in range(j + 1, k)])
    if floor_kind:
        lo, hi = np.r_[lo, np.arange(k), k], np.r_[hi, np.full(k, k), k]
    x1 = rng.uniform(size=(n, lo.size))
    x2 = 1.0 - x1
    x1[rng.uniform(size=x1.shape) < 0.1] = np.nan
    x2[np.isnan(x1)] = np.nan
    rext = np.r_[rng.uniform(0.0, 2.0, k), 0.0]
    best = rng.integers(0, lo.size, n)
    x1[np.arange(n), best] = rng.uniform(size=n)  # the best candidate is valid
    x2[np.arange(n), best] = 1.0 - x1[np.arange(n), best]
    got = price_spread(rext, lo, hi, x1, x2, best)
    want = _spread_reference(rext, lo, hi, x1, x2, best)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.allclose(got[ok], want[ok], rtol=0.0, atol=8 * np.finfo(float).eps * 2 * rext.sum())
