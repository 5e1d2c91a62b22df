"""No fast path slower than its exact fallback (#15 item 2): the early hand-overs of the
structured level / floor solvers and of finish-time fairness's Dinkelbach sequence, the
interior point without crossover on whole level LPs, and the near-tie test that keeps one
dominant type on the structured path. Each rule: the path taken (``stats.path`` /
``stats.fallbacks``) is the one expected and the answer equals the exact method's (certified).
No timed tests: the speed is shown by ``benchmarks/``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend, LinearProgram, LPSolution
from fairalloc.throughput import MaxMinFairness, Tuning
from fairalloc.throughput.duration import DINKELBACH_HAND_OVERS
from fairalloc.throughput.programs import LinearStage
from fairalloc.throughput.stages import StageSolver, backend_for, exact_backend_for
from fairalloc.throughput.strategies import CROSSOVER, EXACT_LP, FROM_LEVEL_LP
from fairalloc.throughput.structured.common import Demand, price_spread, too_many_explicit

DEFAULT = Tuning()
SAMPLE_GATE_TYPES, STRUCTURED_MAX_TYPES = DEFAULT.sample_gate_types, DEFAULT.structured_max_types
#: every near-tie job counts as degenerate prices
DEGENERATE = Tuning(max_explicit_share=0.0, min_degenerate_jobs=0, structured_min_jobs=64)
#: the structured solvers from 64 jobs (these instances have 80 to 600)
STRUCT = Tuning(structured_min_jobs=64)


def _whole_lp_steps(stats) -> int:
    """How many whole-LP steps of a stage plan ran."""
    return sum(c for step, c in stats.step_counts if step.startswith(EXACT_LP))


def _jobs(n, k, seed=0, *, dominant=None, steps=False):
    """Log-normal speeds, 10 % gangs of 2-8; ``dominant``: type 0 that many times faster."""
    rng = np.random.default_rng(seed)
    T = np.exp(rng.normal(0.0, 0.5, (n, k))) * np.linspace(1.0, 3.0, k)
    if dominant is not None:
        T[:, 0] *= dominant
    s = np.where(rng.random(n) < 0.1, rng.choice([2, 4, 8], n), 1)
    extra = {}
    if steps:
        extra = {"steps_remaining": rng.integers(1000, 100000, n).astype(float),
                 "elapsed": rng.uniform(0.0, 1000.0, n)}
    return fa.Jobs(T, scale_factor=s, **extra)


def _cluster(workers):
    """Types ``t0, t1, ...`` with at least 8 workers each (the largest gang)."""
    return fa.Cluster({f"t{j}": max(int(w), 8) for j, w in enumerate(workers)})


def _agree(fast, exact, rel=1e-7):
    assert fast.certificate.ok and exact.certificate.ok
    assert fast.objective == pytest.approx(exact.objective, rel=rel, abs=1e-9)
    for c in fast.stage_certificates:
        assert c.ok


# --------------------------------------------------------------------------------------------
# many types: straight to the whole LP
# --------------------------------------------------------------------------------------------
def test_many_types_go_to_the_whole_lp_at_once():
    k = STRUCTURED_MAX_TYPES + 1
    n = 96
    jobs, cl = _jobs(n, k), _cluster(np.full(k, 3))
    fast = fa.max_min_fairness(jobs, cl, tuning=STRUCT)
    exact = fa.max_min_fairness(jobs, cl, method="highs")
    assert fast.stats.path[:2] == ("structured-level", EXACT_LP)
    reason = f"structured-level->exact-lp: many types (k = {k} > {STRUCTURED_MAX_TYPES})"
    assert fast.stats.fallbacks[0] == reason
    # the work-conserving stage: certified at the level's allocation, or the whole LP at once
    if fast.stats.path[-1] == EXACT_LP:
        assert fast.stats.fallbacks[-1].startswith("structured-floor->exact-lp: many types")
    assert fast.stats.solves == _whole_lp_steps(fast.stats) <= 2  # no Newton, no master LP
    _agree(fast, exact)
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        exact.stage_certificates[1].primal_value, rel=1e-6)


def test_at_the_sample_gate_the_structured_path_runs():
    k = SAMPLE_GATE_TYPES
    jobs, cl = _jobs(400, k, seed=1), _cluster(np.full(k, 12))
    fast = fa.max_min_fairness(jobs, cl, work_conserving=False, tuning=STRUCT)
    exact = fa.max_min_fairness(jobs, cl, method="highs", work_conserving=False)
    assert not any("many types" in f for f in fast.stats.fallbacks)
    _agree(fast, exact)


@pytest.mark.parametrize("k", [3, SAMPLE_GATE_TYPES + 1])
def test_many_types_need_a_balanced_sample(k):
    """Above SAMPLE_GATE_TYPES types a level stage whose sampled Newton phase (1,024 of more
    than 2,048 jobs) finds no balance goes to the whole LP without the full phase; with few
    types the full phase still runs. The sampled phase is made to fail here."""
    n = 2100
    jobs, cl = _jobs(n, k, seed=9), _cluster(np.full(k, 2 * n // k))
    exact = fa.max_min_fairness(jobs, cl, method="highs", work_conserving=False)
    fast = fa.max_min_fairness(jobs, cl, work_conserving=False,
                               tuning=Tuning(newton_sample_max_error=0.0))
    gate = (f"structured-level->exact-lp: many types (k = {k} > {SAMPLE_GATE_TYPES}) and the "
            "sampled Newton phase found no balance of demand and capacity")
    if k > SAMPLE_GATE_TYPES:
        assert fast.stats.path == ("structured-level", "newton-sample", EXACT_LP)
        assert fast.stats.fallbacks == (gate,)
    else:
        assert gate not in fast.stats.fallbacks
        assert fast.stats.path == ("structured-level", "newton-sample")
    _agree(fast, exact)


def test_dinkelbach_goes_to_the_whole_lp_after_the_first_hand_over():
    """Finish-time fairness with many types: after two Dinkelbach stages handed over in a row
    the later ones are solved as whole LPs directly (one hand-over recorded for the rest of
    the sequence)."""
    k = max(STRUCTURED_MAX_TYPES + 1, 65)  # (65: an instance needing more than 2 stages)
    jobs, cl = _jobs(80, k, seed=6, steps=True), _cluster(np.full(k, 2))
    fast = fa.finish_time_fairness(jobs, cl, work_conserving=False, tuning=STRUCT)
    exact = fa.finish_time_fairness(jobs, cl, method="highs", work_conserving=False)
    stats = fast.stats
    assert stats.count("dinkelbach") >= 2
    assert "structured-level" not in stats.path
    # two stages handed over in a row (DINKELBACH_HAND_OVERS), then none: the later stages
    # go to the whole LP directly
    assert stats.count("structured-level-provisional") == DINKELBACH_HAND_OVERS
    assert stats.fallbacks[0] == (f"structured-level-provisional->exact-lp: many types (k = {k} "
                                  f"> {STRUCTURED_MAX_TYPES}) (×{DINKELBACH_HAND_OVERS})")
    assert stats.count("dinkelbach") > DINKELBACH_HAND_OVERS
    assert any(f.startswith("dinkelbach->exact-lp: iterations 1-2 went to the whole LP")
               for f in fast.stats.fallbacks)
    _agree(fast, exact, rel=1e-6)


def test_dinkelbach_keeps_the_structured_path_when_it_certifies():
    jobs, cl = _jobs(300, 3, seed=3, steps=True), _cluster([50, 50, 50])
    fast = fa.finish_time_fairness(jobs, cl, work_conserving=False, tuning=STRUCT)
    exact = fa.finish_time_fairness(jobs, cl, method="highs", work_conserving=False)
    assert fast.stats.fallbacks == ()
    # every iteration's stage is solved by the structured solver; the intermediate ones are
    # provisional (no certificate: they only choose the next point), the last is certified
    stats = fast.stats
    assert stats.count("dinkelbach") == stats.count("structured-level-provisional") >= 2
    assert stats.path[-1] == "structured-level" and stats.count("structured-level") == 1
    _agree(fast, exact, rel=1e-6)


def test_dinkelbach_provisional_stages_give_the_certified_answer():
    """Intermediate stages without their certificate change nothing but the time: the same
    Dinkelbach points (same number of iterations) and the same certified optimum as with
    every stage certified; a provisional stage's own certificate is never ok."""
    from fairalloc.throughput.structured.common import unchecked_certificate

    assert not unchecked_certificate(0.5).ok
    jobs, cl = _jobs(300, 3, seed=3, steps=True), _cluster([50, 50, 50])
    fast = fa.finish_time_fairness(jobs, cl, work_conserving=False, tuning=STRUCT)
    checked = fa.finish_time_fairness(jobs, cl, work_conserving=False, tuning=Tuning(
        dinkelbach_provisional=False, structured_min_jobs=64))
    assert "structured-level-provisional" not in checked.stats.path
    assert fast.stats.count("dinkelbach") == checked.stats.count("dinkelbach")
    assert fast.certificate.ok and checked.certificate.ok
    assert fast.objective == pytest.approx(checked.objective, rel=1e-9)


class _OffMasterDuals(HighsBackend):
    """HiGHS whose row duals of small LPs (the structured solvers' restricted masters, below
    ``below`` columns) come back 1 % off: a fault at the public backend boundary, so that a
    master's point no longer certifies the whole LP (the whole LPs are solved exactly)."""

    def __init__(self, below: int):
        super().__init__()
        self.below, self.masters = below, 0

    def _solve_lp(self, lp, **kw):
        import dataclasses

        sol = super()._solve_lp(lp, **kw)
        if lp.shape[1] < self.below and sol.row_duals is not None:
            self.masters += 1
            sol = dataclasses.replace(sol, row_duals=sol.row_duals * 1.01)
        return sol


def test_dinkelbach_last_provisional_stage_that_does_not_certify_is_solved_again():
    """When the master's point of what would be the last stage fails the whole LP's
    certificate, that stage is solved again with certification (recorded as a hand-over),
    and the answer is still the certified optimum."""
    jobs, cl = _jobs(300, 3, seed=3, steps=True), _cluster([50, 50, 50])
    exact = fa.finish_time_fairness(jobs, cl, method="highs", work_conserving=False)
    off = _OffMasterDuals(below=300)  # (the whole LP has a column per job and type)
    fast = fa.finish_time_fairness(jobs, cl, work_conserving=False, tuning=STRUCT,
                                   backend=off)
    assert off.masters > 0
    assert fast.stats.path[:3] == ("dinkelbach", "structured-level-provisional",
                                   "structured-level")
    assert fast.stats.fallbacks[0].startswith(
        "structured-level-provisional->structured-level: the last stage's master did not "
        "certify")
    assert fast.certificate.ok
    _agree(fast, exact, rel=1e-6)
    assert DEFAULT.dinkelbach_provisional


# --------------------------------------------------------------------------------------------
# degenerate prices: a master about as large as the whole LP is not built
# --------------------------------------------------------------------------------------------
def test_too_many_explicit_hand_checked():
    t = DEFAULT
    assert t.max_explicit_share == 0.3 and t.min_degenerate_jobs == 1024
    # 10,000 jobs: 3,000 explicit is 0.3 n (not more), 3,001 is
    assert not too_many_explicit(np.arange(10000) < 3000, 10000, t)
    assert too_many_explicit(np.arange(10000) < 3001, 10000, t)
    # 2,000 jobs: 1,000 explicit is half of them, but a small master
    assert not too_many_explicit(np.arange(2000) < 1000, 2000, t)
    assert too_many_explicit(np.arange(2000) < 1025, 2000, t)
    assert not too_many_explicit(np.zeros(10, bool), 10, t)
    t0 = Tuning(min_degenerate_jobs=0)
    assert too_many_explicit(np.r_[np.ones(4, bool), np.zeros(6, bool)], 10, t0)
    assert not too_many_explicit(np.r_[np.ones(3, bool), np.zeros(7, bool)], 10, t0)


def test_degenerate_prices_hand_the_level_to_the_whole_lp():
    """With the share and the minimum at 0 every near-tie job counts as degenerate: the level
    stage goes to the whole LP before any master LP, with the reason recorded, and the answer
    is the same."""
    jobs, cl = _jobs(600, 3, seed=4), _cluster([100, 100, 100])
    exact = fa.max_min_fairness(jobs, cl, method="highs", work_conserving=False)
    fast = fa.max_min_fairness(jobs, cl, work_conserving=False, tuning=DEGENERATE)
    assert fast.stats.path == ("structured-level", EXACT_LP)
    assert len(fast.stats.fallbacks) == 1
    assert fast.stats.fallbacks[0].startswith("structured-level->exact-lp: degenerate prices (")
    assert fast.stats.solves == 1  # the whole LP only: no master was solved
    _agree(fast, exact)


def test_degenerate_prices_hand_the_floor_to_the_whole_lp():
    """A floor stage whose first master would keep too many jobs explicit goes to the whole
    LP (the level's allocation is first tried as the floor optimum, as always)."""
    rng = np.random.default_rng(5)
    jobs, cl = _jobs(600, 3, seed=5), _cluster([100, 100, 100])
    w = rng.choice([0.5, 1.0, 2.0, 4.0], 600)
    jobs = fa.Jobs(jobs.throughput, scale_factor=jobs.scale_factor, weight=w)
    exact = fa.max_min_fairness(jobs, cl, method="highs")
    base = fa.max_min_fairness(jobs, cl)
    fast = fa.max_min_fairness(jobs, cl, tuning=DEGENERATE)
    # weights: the level's allocation is not the floor optimum, a floor master is needed
    assert base.stats.path == ("structured-level", "floor-from-level", "structured-floor")
    # the level too (share 0)
    # (the whole floor LP from the whole level LP's basis)
    assert fast.stats.path == ("structured-level", EXACT_LP, "floor-from-level",
                               "structured-floor", FROM_LEVEL_LP)
    assert fast.stats.fallbacks[-1].startswith(
        f"structured-floor->{FROM_LEVEL_LP}: degenerate prices (")
    _agree(fast, exact)
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        exact.stage_certificates[1].primal_value, rel=1e-6)


# --------------------------------------------------------------------------------------------
# one dominant type: the near-tie test is relative to the price spread
# --------------------------------------------------------------------------------------------
def test_price_spread_hand_checked():
    """Two types at prices 1 and 0.01 (and idle, price 0). Candidates of one job: type 0 for
    0.25 of its time (slots idle / type 0), and a split 0.2 on type 0, 0.8 on type 1."""
    rext = np.array([1.0, 0.01, 0.0])
    s1 = np.array([2, 0])  # lo slots: idle, type 0
    s2 = np.array([0, 1])  # hi slots: type 0, type 1
    x1 = np.array([[0.75, 0.2]])
    x2 = np.array([[0.25, 0.8]])
    spread = price_spread(rext, s1, s2, x1, x2, np.array([0]))
    # against itself 0; the split differs by 0.05 on type 0 and 0.8 on type 1
    np.testing.assert_allclose(spread, [[0.0, 0.05 * 1.0 + 0.8 * 0.01]], atol=1e-15)


def test_a_dominant_type_is_not_a_tie():
    """Type 0 is 1e4 times faster: a job's candidates cost nearly the same (they differ only
    on the cheap type 1), yet a 0.1 % price error cannot change its cheapest one."""
    A = np.array([[1e4, 1.0]])
    dem = Demand(A, np.ones(1), np.ones(1), np.zeros(1))
    col = np.array([[0, 1]])
    p = np.array([1.0, 1.0e-4 * 0.9])  # type 1 a little cheaper per throughput than type 0
    v = dem.vertices(col, p, 0.5e4, band=1e-3)
    assert not v.ambiguous[0]
    L, _, _, cost = dem._priced(p, 0.5e4)
    finite = np.sort(cost[0][np.isfinite(cost[0])])
    assert (finite[1] - finite[0]) / finite[0] < 1e-3  # the old relative test saw a tie
    # a price error of 100 % on type 1 can: the job is a tie at that band
    assert dem.vertices(col, p, 0.5e4, band=1.0).ambiguous[0]


def test_one_dominant_type_stays_on_the_structured_path():
    n = 600
    jobs = _jobs(n, 3, seed=6, dominant=1e4)
    cl = _cluster([n // 2, n // 24, n // 24])
    fast = fa.max_min_fairness(jobs, cl, tuning=STRUCT)
    exact = fa.max_min_fairness(jobs, cl, method="highs")
    assert fast.stats.path[0] == "structured-level" and fast.stats.fallbacks == ()
    assert fast.stats.solves <= 3
    _agree(fast, exact)


# --------------------------------------------------------------------------------------------
# the exact path: HiGHS' interior point without crossover, crossover only when needed
# --------------------------------------------------------------------------------------------
def test_exact_backend_for():
    ipm = backend_for("highs", 10**5)
    assert isinstance(ipm, HighsBackend) and ipm.solver == "ipm" and ipm.crossover
    fast = exact_backend_for(ipm, "highs")
    assert isinstance(fast, HighsBackend) and fast.solver == "ipm" and not fast.crossover
    lin = exact_backend_for(ipm, "highs", linear=True)
    assert isinstance(lin, HighsBackend) and lin.solver == "simplex"
    # a caller's own backend is used as given; so is HiGHS' own choice on small LPs
    assert exact_backend_for(ipm, ipm) is ipm
    small = backend_for("highs", 10)
    assert exact_backend_for(small, "highs") is small


def test_highs_crossover_option_bad_input():
    with pytest.raises(fa.InputError):
        HighsBackend(solver="ipm", crossover="no")  # type: ignore[arg-type]


class _NoDuals(HighsBackend):
    """HiGHS whose duals come back zeroed: a point that cannot certify."""

    def _solve_lp(self, lp: LinearProgram, **kw) -> LPSolution:  # type: ignore[override]
        sol = super()._solve_lp(lp, **kw)
        assert sol.row_duals is not None
        sol.row_duals[:] = 0.0
        return sol


def _level_solver(n=120, k=3):
    jobs, cl = _jobs(n, k, seed=7), _cluster(np.full(k, n // 6))
    pol = MaxMinFairness(jobs, cl)
    be = HighsBackend(solver="ipm")
    solver = StageSolver(pol.inst, be, stage_tol=1e-9, gap_tol=1e-6, feas_tol=1e-7,
                         backend_spec="highs")
    return pol, solver


def test_a_point_without_crossover_that_does_not_certify_is_solved_again():
    pol, solver = _level_solver()
    assert not solver.exact_backend.crossover  # type: ignore[attr-defined]
    solver.exact_backend = _NoDuals(solver="ipm", crossover=False)
    res = solver.run(pol.level_stage(), "max-min")
    assert solver.log.steps == (EXACT_LP, CROSSOVER)
    assert len(solver.log.fallbacks) == 1
    assert solver.log.fallbacks[0].startswith("exact-lp->exact-lp+crossover: did not certify")
    assert res.cert.ok
    ref = fa.max_min_fairness(pol.jobs, pol.cluster, method="highs", work_conserving=False)
    assert res.value == pytest.approx(ref.objective, rel=1e-7)


def test_a_linear_stage_that_does_not_certify_is_solved_again():
    """The work-conserving stage's simplex point (duals zeroed here) does not certify: the
    interior point with crossover solves it again."""
    pol, solver = _level_solver()
    level = pol.level_stage()
    res = solver.run(level, "max-min")
    solver.fix(level, res.value, at=res.x[: pol.inst.E])
    solver.exact_linear_backend = _NoDuals(solver="simplex")
    wc = solver.run(LinearStage(pol._wc_objective(), "work-conserving"), "work-conserving")
    assert solver.log.steps == (EXACT_LP, EXACT_LP, CROSSOVER)
    assert len(solver.log.fallbacks) == 1 and wc.cert.ok
    assert solver.log.fallbacks[0].startswith("exact-lp->exact-lp+crossover: did not certify")
    ref = fa.max_min_fairness(pol.jobs, pol.cluster, method="highs")
    assert wc.value == pytest.approx(ref.stage_certificates[1].primal_value, rel=1e-6)


def test_a_level_lp_without_crossover_certifies_directly():
    pol, solver = _level_solver()
    res = solver.run(pol.level_stage(), "max-min")
    assert solver.log.steps == (EXACT_LP,) and solver.log.fallbacks == ()
    assert res.cert.ok and res.cert.relative_gap <= 1e-6


def test_large_level_lp_default_path():
    """Above the interior-point threshold (3,000 columns) the whole level LP runs without
    crossover and the work-conserving LP on the simplex; both certify on the first try."""
    n = 1100
    jobs, cl = _jobs(n, 3, seed=8), _cluster([n // 6] * 3)
    a = fa.max_min_fairness(jobs, cl, method="highs")
    assert a.stats.count(EXACT_LP) == 2 and a.stats.fallbacks == ()
    assert all(c.ok for c in a.stage_certificates)


# --------------------------------------------------------------------------------------------
# property: whichever path is taken, the answer is the exact method's
# --------------------------------------------------------------------------------------------
@settings(max_examples=10, deadline=None, derandomize=True)
@given(k=st.sampled_from([2, 3, 5, STRUCTURED_MAX_TYPES + 2]),
       dominant=st.sampled_from([None, 10.0, 1e4]),
       seed=st.integers(0, 10**6),
       scarce=st.booleans())
def test_any_path_equals_the_exact_method(k, dominant, seed, scarce):
    n = 80
    jobs = _jobs(n, k, seed=seed, dominant=dominant)
    per = 8 if scarce else max(8, 2 * n // k)
    cl = _cluster(np.full(k, per))
    fast = fa.max_min_fairness(jobs, cl, tuning=STRUCT)
    exact = fa.max_min_fairness(jobs, cl, method="highs")
    _agree(fast, exact)
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        exact.stage_certificates[1].primal_value, rel=1e-6)
    many = k > STRUCTURED_MAX_TYPES
    assert any("many types" in f for f in fast.stats.fallbacks) == many


# --- theta's lower bound in whole level LPs (HiGHS' interior point splits a free column) -----
def test_level_at_zero_hand_checked():
    from fairalloc.throughput.programs import LevelStage
    from fairalloc.throughput.stages import _level_at_zero

    C = np.eye(3)
    lo, up = np.full(2, -np.inf), np.array([1.0, 4.0])  # rows <= 1, <= 4: x = 0 meets them
    # max-min: h = 0 -> the level of x = 0 is 0
    assert _level_at_zero(LevelStage(C, np.ones(3), np.zeros(3)), lo, up) == 0.0
    # h = (-2, -6, 1) with b = (1, 2, 0.5): x = 0 has level min(2, 3, -2) = -2
    st = LevelStage(C, np.array([1.0, 2.0, 0.5]), np.array([-2.0, -6.0, 1.0]))
    assert _level_at_zero(st, lo, up) == -2.0
    # a kept floor (b = 0, h > 0) that x = 0 misses: no bound
    st = LevelStage(C, np.array([1.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    assert _level_at_zero(st, lo, up) == -np.inf
    # another row x = 0 misses (a policy row x >= 0.5): no bound
    assert _level_at_zero(LevelStage(C, np.ones(3), np.zeros(3)), np.array([-np.inf, 0.5]),
                          up) == -np.inf


def test_whole_max_min_lp_bounds_theta_and_keeps_its_optimum():
    rng = np.random.default_rng(4)
    jobs = fa.Jobs(rng.lognormal(0.0, 0.6, (30, 4)), scale_factor=rng.choice([1, 2], 30))
    cl = fa.Cluster({f"t{j}": 6 for j in range(4)})
    policy = MaxMinFairness(jobs, cl)
    solver = StageSolver(policy.inst, HighsBackend(), stage_tol=1e-9, gap_tol=1e-7,
                         feas_tol=1e-9)
    stage = policy.level_stage()
    lp = solver.program(stage)
    assert lp.col_lower[-1] == 0.0
    free = LinearProgram(c=lp.c, A=lp.A, row_lower=lp.row_lower, row_upper=lp.row_upper,
                         col_lower=np.append(lp.col_lower[:-1], -np.inf),
                         col_upper=lp.col_upper)
    be = HighsBackend(solver="simplex")
    assert be.solve_lp(lp).objective == pytest.approx(be.solve_lp(free).objective, rel=1e-12)
