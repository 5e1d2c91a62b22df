"""Water-filling that scales (issue #15, item 3): saturation jumps, no wrong failures.

* `SaturationPath` (the closed-form saturation trajectory) equals an event-by-event
  simulation of water-filling without capacity rows;
* water-filling's levels equal a slow reference (a level LP sequence with exact freezing by one
  rise LP per job, scipy's linprog) on small random hierarchies;
* a cascade of saturations is jumped over with a handful of LPs (hand-checked allocation);
* the 10-type instances on which main raised (a bottleneck LP certified against the wrong scale,
  and a bottleneck LP declared infeasible at floors reached only to rounding) now solve;
* the end check (one bottleneck LP over every job) repairs wrong freezes or raises, and on the
  ill-conditioned 320-job 10-type instance no frozen job can rise (main: 203 could).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import fairalloc as fa
from fairalloc.backends import HighsBackend
from fairalloc.throughput import Tuning
from fairalloc.throughput.water_path import SaturationPath
from tests.water_reference import capped_rises, leximin_levels, rises_alone


# --------------------------------------------------------------------------------------------
# the saturation trajectory
# --------------------------------------------------------------------------------------------
def _simulate(f, umax, live, jw, ent, ew, fifo, rank, single, theta):
    """Water-filling without capacity rows, event by event (reference for SaturationPath)."""
    n = f.size
    L, alive, t = f.copy(), live.copy(), 0.0
    while t < theta:
        r = np.zeros(n)
        if single:
            r = np.where(alive, jw, 0.0)
        else:
            for e in range(ew.size):
                m = np.flatnonzero(alive & (ent == e))
                if not m.size:
                    continue
                if fifo[e]:
                    r[m[np.argmin(rank[m])]] = ew[e]
                else:
                    r[m] = ew[e] * jw[m] / jw[m].sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.where(r > 0, (umax - L) / r, np.inf)
        step = min(float(dt.min()), theta - t)
        L = np.where(alive, np.minimum(L + r * step, umax), L)
        t += step
        alive &= ~((r > 0) & (dt <= step))
    return L


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), single=st.booleans())
def test_saturation_path_equals_event_simulation(seed, single):
    rng = np.random.default_rng(seed)
    n, E = int(rng.integers(1, 12)), int(rng.integers(1, 4))
    ent = rng.integers(0, E, n)
    ew = rng.uniform(0.5, 3.0, E)
    fifo = rng.random(E) < 0.4
    f = rng.uniform(0.0, 1.0, n)
    umax = f + rng.uniform(0.0, 2.0, n)
    umax[rng.random(n) < 0.1] = np.inf  # never saturates (pairs, placement)
    live = rng.random(n) < 0.8
    jw = rng.choice([1.0, 2.0, 3.0], n)
    rank = rng.permutation(n)
    p = SaturationPath(f, live, umax, jw, ent, ew, fifo, rank, single)
    assert np.all(np.diff(p.breakpoints) > 0)
    assert np.all(np.isinf(p.times[~live]))
    for theta in sorted({0.0, 0.3, 1.0, 4.0, *p.breakpoints.tolist()}):
        want = _simulate(f, umax, live, jw, ent, ew, fifo, rank, single, theta)
        np.testing.assert_allclose(p.at(theta), want, rtol=1e-12, atol=1e-12)
    # a job saturates exactly at its time, and not before
    fin = np.isfinite(p.times)
    for m in np.flatnonzero(fin):
        assert p.at(float(p.times[m]))[m] == umax[m]


# --------------------------------------------------------------------------------------------
# a cascade of saturations (hand-checked)
# --------------------------------------------------------------------------------------------
def test_saturation_cascade_is_jumped_with_few_lps():
    """90 jobs on 76 GPUs, three of each weight 1..30 (single level, rates = weights): a
    job of weight w saturates (a whole GPU) at theta = 1/w, so jobs of weight 30, 29, ..., 11
    saturate one after the other (20 events; main: 21 level LPs); then the GPUs run out at
    theta = 16/165 (60 GPUs for the saturated, 3 (1 + ... + 10) theta = 16 for the rest):
    x = 16 w / 165 for w <= 10. One level LP, a few saturation probes, one capacity level."""
    w = np.repeat(np.arange(1.0, 31.0), 3)
    jobs = fa.Jobs(np.ones((90, 1)), weight=w)
    r = fa.max_min_fairness(jobs, fa.Cluster({"gpu": 76}), water_filling=True)
    want = np.where(w >= 11, 1.0, 16.0 * w / 165.0)
    np.testing.assert_allclose(r.x.ravel(), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(r.level_floors, want, rtol=1e-7, atol=1e-9)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert r.stats.count("water-filling-level") == r.levels <= 12
    assert r.stats.solves <= 13  # and the end check (one LP)


def test_everything_saturates_in_one_probe():
    """Enough GPUs for every job: the level LP ends at the first saturation, one probe of the
    last one shows that every job reaches its whole GPU (2 LPs; main: 100, one per weight)."""
    w = np.arange(1.0, 101.0)
    r = fa.max_min_fairness(fa.Jobs(np.ones((100, 1)), weight=w), fa.Cluster({"gpu": 100}),
                            water_filling=True)
    np.testing.assert_allclose(r.x.ravel(), 1.0, atol=1e-9)
    assert r.levels == 2 and r.stats.solves == 2
    assert r.objective == pytest.approx(1.0 / 100.0, rel=1e-9)  # the first level


# --------------------------------------------------------------------------------------------
# levels equal a slow exact reference
# --------------------------------------------------------------------------------------------
def _reference_levels(T, sf, jw, cap, ents, ew, fifo, rank, single):
    """Water-filling by a level LP sequence with exact freezing: after each level, every
    candidate is tested by its own LP (max u_m with every level at its floor)."""
    n, k = T.shape
    allowed = (T > 0) & (sf[:, None] <= cap[None, :])
    mi, mj = np.nonzero(allowed)
    E = mi.size
    e_eq = np.where(allowed, T, 0.0) @ (cap / cap.sum())
    U = sp.csr_matrix((sf[mi] * T[mi, mj] / e_eq[mi], (mi, np.arange(E))), shape=(n, E))
    time = sp.csr_matrix((np.ones(E), (mi, np.arange(E))), shape=(n, E))
    work = sp.csr_matrix((sf[mi], (mj, np.arange(E))), shape=(k, E))
    base = sp.vstack([time, work])
    b_base = np.r_[np.ones(n), cap]
    floors, frozen = np.zeros(n), np.zeros(n, bool)
    while not frozen.all():
        live = ~frozen
        w = np.zeros(n)
        if single:
            w = np.where(live, jw, 0.0)
        else:
            for e in set(ents):
                m = np.flatnonzero(live & (ents == e))
                if m.size and fifo[e]:
                    w[m[np.argmin(rank[m])]] = ew[e]
                elif m.size:
                    w[m] = ew[e] * jw[m] / jw[m].sum()
        A = sp.vstack([sp.hstack([base, sp.csr_matrix((n + k, 1))]),
                       sp.hstack([-U, sp.csr_matrix(w[:, None])])])
        res = linprog(np.r_[np.zeros(E), -1.0], A_ub=A, b_ub=np.r_[b_base, -floors],
                      bounds=[(0, 1)] * E + [(0, None)], method="highs")
        assert res.status == 0
        floors = floors + w * max(res.x[-1], 0.0)
        keep = floors * (1 - 1e-9) - 1e-12
        for m in np.flatnonzero(w > 0):
            rr = linprog(-U[m].toarray().ravel(), A_ub=sp.vstack([base, -U]),
                         b_ub=np.r_[b_base, -keep], bounds=(0, 1), method="highs")
            assert rr.status == 0
            if -rr.fun <= floors[m] + 1e-6 * max(1.0, floors[m]):
                frozen[m] = True
    return floors


@st.composite
def small_hierarchies(draw):
    n = draw(st.integers(2, 7))
    k = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    T = np.round(rng.lognormal(0.0, 0.7, (n, k)), 2)
    T[rng.random((n, k)) < 0.2] = 0.0
    T[:, 0] = np.maximum(T[:, 0], 0.5)
    sf = rng.choice([1, 1, 2], n)
    cap = rng.integers(1, 4, k)
    cap[0] = max(cap[0], 2)
    ents = rng.integers(0, 3, n)
    ew = rng.choice([0.5, 1.0, 3.0], 3)
    fifo = np.array([draw(st.booleans()) for _ in range(3)])
    jw = rng.choice([1.0, 2.0], n)
    single = draw(st.booleans())
    return T, sf, jw, cap, ents, ew, fifo, rng.permutation(n), single


@settings(max_examples=30, deadline=None, derandomize=True)
@given(h=small_hierarchies())
def test_levels_equal_the_exact_reference(h):
    T, sf, jw, cap, ents, ew, fifo, rank, single = h
    jobs = fa.Jobs(T, scale_factor=sf, weight=jw)
    cl = fa.Cluster({f"t{j}": int(c) for j, c in enumerate(cap)})
    if single:
        r = fa.max_min_fairness(jobs, cl, water_filling=True)
    else:
        r = fa.water_filling(jobs, cl, entities=list(ents),
                             entity_weights={e: float(ew[e]) for e in set(ents)},
                             entity_policies={e: "fifo" if fifo[e] else "fairness"
                                              for e in set(ents)}, order=rank)
    want = _reference_levels(T, sf.astype(float), jw, cap.astype(float), ents, ew, fifo, rank,
                             single)
    np.testing.assert_allclose(r.level_floors, want, rtol=1e-5, atol=1e-7)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    # every job's level (computed here from the allocation) reaches its floor
    allowed = (T > 0) & (sf[:, None] <= cap[None, :])
    u = sf * (r.x * T).sum(axis=1) / (np.where(allowed, T, 0.0) @ (cap / cap.sum()))
    assert np.all(u >= r.level_floors - 1e-7 * np.maximum(1.0, r.level_floors))
    assert np.all(r.x.sum(axis=1) <= 1 + 1e-9)
    assert np.all(jobs.scale_factor @ r.x <= cl.capacity + 1e-9)


# --------------------------------------------------------------------------------------------
# wrong failures on feasible instances (main raised on these)
# --------------------------------------------------------------------------------------------
def _types_instance(n, seed, k=10):
    """Log-normal speeds on 10 types, n/10 (at least 8) workers each, scale factors 1-8."""
    rng = np.random.default_rng(seed)
    T = rng.lognormal(0.0, 0.8, n)[:, None] * 10.0 * np.c_[np.ones(n),
                                                            rng.uniform(0.1, 1.0, (n, k - 1))]
    s = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05])
    g = max(8, n // k)
    return fa.Jobs(T, scale_factor=s), fa.Cluster({f"t{j}": g for j in range(k)})


def test_ten_types_instance_that_raised_now_solves():
    # main: CertificateError in a bottleneck LP after 1.7 s (its gap judged against one cap,
    # not the objective's scale, the sum of the caps); 160 jobs, 10 types
    jobs, cl = _types_instance(160, seed=2)
    r = fa.max_min_fairness(jobs, cl, water_filling=True)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert np.all(r.metric >= r.level_floors - 1e-7 * np.maximum(1.0, r.level_floors))
    mm = fa.max_min_fairness(jobs, cl, work_conserving=False)
    assert r.objective == pytest.approx(mm.objective, rel=1e-6)


class _RefuseHighs(HighsBackend):
    """HiGHS that declares the ``nth`` LP of one kind infeasible, as HiGHS' presolve did on
    the thin face of floors reached only to rounding (a fault injected at the public backend
    boundary). Kinds: ``"bottleneck"`` (the only LPs whose last column, a rise, has a finite
    upper bound below 1) and ``"level"`` (a level or saturation-probe LP: ``theta`` last,
    unbounded above)."""

    def __init__(self, kind: str, nth: int = 1):
        super().__init__()
        self.kind, self.nth, self.seen, self.refused = kind, nth, 0, 0

    def _solve_lp(self, lp, **kw):
        sol = super()._solve_lp(lp, **kw)
        last = lp.col_upper[-1]
        if (last < 1.0) if self.kind == "bottleneck" else (last == np.inf):
            self.seen += 1
            if self.seen == self.nth:
                self.refused += 1
                return dataclasses.replace(sol, status="infeasible", x=None, row_duals=None)
        return sol


def test_bottleneck_lp_declared_infeasible_is_retried_with_relaxed_floors():
    """12 jobs on 10 types (bottleneck LPs decide some levels): the first bottleneck LP is
    declared infeasible once; its plan solves it with relaxed floors, and the floors are
    those of the plain solve."""
    jobs, cl = _types_instance(12, 0)
    want = fa.max_min_fairness(jobs, cl, water_filling=True)
    be = _RefuseHighs("bottleneck")
    r = fa.max_min_fairness(jobs, cl, water_filling=True, backend=be)
    assert be.refused == 1
    assert r.stats.count("bottleneck-floors-relaxed") + r.stats.count(
        "bottleneck-floors-relaxed+warm") == 1
    assert any(f.startswith("bottleneck-lp") and ": infeasible" in f for f in r.stats.fallbacks)
    np.testing.assert_allclose(r.level_floors, want.level_floors, rtol=1e-7)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


# --------------------------------------------------------------------------------------------
# the end check: the final floors are proven Pareto-maximal, or water-filling resumes / raises
# --------------------------------------------------------------------------------------------
#: a broken rule (a): every live job is frozen by the first level that rises, and the end check
#: runs after every level that froze jobs (`Tuning.water_dual_rule`, `Tuning.end_check_ratio`)
FREEZE_EVERY_CANDIDATE = Tuning(water_dual_rule=False, end_check_ratio=0.0)


def test_end_check_repairs_wrong_freezes():
    """12 jobs on 10 types: with rule (a) broken, the first level freezes every job; the end
    check (one bottleneck LP over all jobs) finds risers and water-filling resumes until the
    floors are Pareto-maximal (checked by independent per-job LPs)."""
    jobs, cl = _types_instance(12, 0)
    want = fa.max_min_fairness(jobs, cl, water_filling=True)
    tuning = FREEZE_EVERY_CANDIDATE
    r = fa.max_min_fairness(jobs, cl, water_filling=True, tuning=tuning)
    assert r.stats.count("pareto-check") == 3  # two failed checks, two resumed rounds
    np.testing.assert_allclose(r.level_floors, want.level_floors, rtol=1e-7)
    assert rises_alone(jobs, cl, np.asarray(r.level_floors)).max() < 1e-7
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


def test_end_check_raises_when_resuming_does_not_repair():
    """24 jobs on 10 types with the same broken rule: two resumed rounds do not repair it, and
    the fast water-filling never returns the wrong result silently (its verdict says why);
    the plan's robust water-filling then answers with the correct floors."""
    jobs, cl = _types_instance(24, 0)
    want = fa.max_min_fairness(jobs, cl, water_filling=True)
    tuning = FREEZE_EVERY_CANDIDATE
    fast_only = dataclasses.replace(tuning, water_robust_max_jobs=0)
    with pytest.raises(fa.SolverError, match="can still rise") as exc:
        fa.max_min_fairness(jobs, cl, water_filling=True, tuning=fast_only)
    assert exc.value.verdicts[0].startswith("water-filling-fast: failed (certificate_failed")
    r = fa.max_min_fairness(jobs, cl, water_filling=True, tuning=tuning)
    assert r.stats.path[0] == "water-filling-fast" and "water-filling-robust" in r.stats.path
    assert any(f.startswith("water-filling-fast->water-filling-robust") and "can still rise"
               in f for f in r.stats.fallbacks)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    # (bottleneck_tol: the decisions' threshold, relative to max(1, floor))
    np.testing.assert_allclose(r.level_floors, want.level_floors, rtol=1e-7, atol=1e-7)


def test_ten_types_320_jobs_no_frozen_job_can_rise():
    """320 jobs on 10 types (level duals of frozen rows about 1e8): main's dual rule froze 203
    jobs that can still rise (per-job LPs: by up to 5.3x their level; here every one of them
    reaches the 1e-3 cap). Now the ill-conditioned levels are decided by exact bottleneck LPs
    and the end check proves the floors; an independent LP finds no rise above 1e-6."""
    jobs, cl = _types_instance(320, seed=2)
    r = fa.max_min_fairness(jobs, cl, water_filling=True)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert capped_rises(jobs, cl, np.asarray(r.level_floors)).max() < 1e-6
    u = jobs.scale_factor / (jobs.throughput @ (cl.capacity / cl.capacity.sum()))
    lev = u * (r.x * jobs.throughput).sum(axis=1)
    assert np.all(lev >= r.level_floors - 1e-7 * np.maximum(1.0, r.level_floors))


class _LooseFloorsHighs(HighsBackend):
    """HiGHS that solves the ``nth`` bottleneck LP (the only LPs whose last column, a rise,
    has a finite upper bound below 1) with its ``n`` floor rows (its last rows) lowered by
    ``slack`` (relative): a solver meeting the floors only loosely, whose point shows rises
    that no allocation meeting the floors has (a fault injected at the public backend
    boundary)."""

    def __init__(self, n: int, slack: float, nth: int = 1):
        super().__init__()
        self.n, self.slack, self.nth, self.seen, self.loosened = n, slack, nth, 0, 0

    def _solve_lp(self, lp, **kw):
        if lp.col_upper[-1] < 1.0:
            self.seen += 1
            if self.seen == self.nth:
                self.loosened += 1
                lo = lp.row_lower.copy()
                lo[-self.n:] -= self.slack * np.maximum(1.0, np.abs(lo[-self.n:]))
                lp = dataclasses.replace(lp, row_lower=lo)
        return super()._solve_lp(lp, **kw)


def test_end_check_rise_bought_by_missed_floors_is_rejected():
    """The end check's LP meets the floors only to its tolerance, and on ill-conditioned
    instances (10 types: a job's rise is about 2e6 times the others' slack) its point shows
    rises that no allocation meeting the floors exactly has. A solver missing the floors by
    1e-3 (relative, at the backend) gives such a point: its certificate rejects it (the point
    misses the floors, its rises exceed the dual bound), the plan's next strategy answers,
    the end check does not resume, and the floors are those of the plain solve. (Within the
    certificate's tolerances such a point is certified; the end check then proves a job by
    the LP's certified dual bound before it reads the point's rises.)"""
    jobs, cl = _types_instance(12, 0)
    tuning = Tuning(end_check_ratio=0.0)  # (the end check after every level that froze jobs)
    want = fa.max_min_fairness(jobs, cl, water_filling=True, tuning=tuning)
    be = _LooseFloorsHighs(jobs.n, 1e-3)
    r = fa.max_min_fairness(jobs, cl, water_filling=True, backend=be, tuning=tuning)
    assert be.loosened == 1
    assert r.stats.count("pareto-check") == 1
    assert any(f.startswith("bottleneck-lp->") and "did not certify" in f
               for f in r.stats.fallbacks)
    assert r.status == "optimal"
    np.testing.assert_allclose(r.level_floors, want.level_floors, rtol=1e-9)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


def test_ten_types_320_jobs_equal_an_independent_leximin():
    """320 jobs on 10 types, seed 0: 35afbb6 raised `InfeasibleError` (a structured level's
    master met the frozen floors to 5e-11 only, the floors drifted 3e-9 above the leximin
    levels by level 90 and the LPs became infeasible). The levels are now warm-started
    simplex vertices, and the floors equal an independent scipy LP sequence
    (`leximin_levels`) to the certificates' gap tolerance; the allocation reaches them."""
    jobs, cl = _types_instance(320, 0)
    r = fa.max_min_fairness(jobs, cl, water_filling=True)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert r.stats.count("exact-lp+warm") >= r.levels // 2
    # each level is certified to gap_tol: the floors agree to that (measured 7e-11 on one CPU,
    # 2.7e-8 under OPENBLAS_CORETYPE=Sandybridge, where the reference needs HiGHS' default
    # tolerances; the drift this test caught was 1.8e-5)
    np.testing.assert_allclose(r.level_floors, leximin_levels(jobs, cl),
                               rtol=r.certificate.gap_tol)
    u = jobs.scale_factor / (jobs.throughput @ (cl.capacity / cl.capacity.sum()))
    lev = u * (r.x * jobs.throughput).sum(axis=1)
    # reached to the certificate's feasibility tolerance (1e-11 on one CPU, 1e-9 on others)
    assert np.all(lev >= r.level_floors - r.certificate.feas_tol * np.maximum(1.0,
                                                                              r.level_floors))


# --------------------------------------------------------------------------------------------
# many types: one level per distinct bottleneck level, and no wrong failure on thin faces
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,seed", [(30, 0), (40, 1)])
def test_ten_types_one_level_per_distinct_level_of_the_exact_reference(n, seed):
    """With 10 types and every job different, the exact water-filling levels (per-job rise LPs,
    `_reference_levels`) are nearly all distinct (24 of 30 and 31 of 40 jobs): a level LP per
    distinct level is intrinsic there, not a missed freeze. Water-filling spends at most one
    level LP per distinct level plus the saturation probes (at most 2 log2 n + 1) and at most
    two bottleneck LPs, and its floors equal the reference."""
    jobs, cl = _types_instance(n, seed)
    r = fa.max_min_fairness(jobs, cl, water_filling=True)
    want = _reference_levels(jobs.throughput, jobs.scale_factor.astype(float), jobs.weight,
                             cl.capacity.astype(float), np.zeros(n, int), np.ones(1),
                             np.zeros(1, bool), np.arange(n), True)
    np.testing.assert_allclose(r.level_floors, want, rtol=1e-7, atol=1e-9)
    distinct = np.unique(np.round(want, 7)).size
    assert distinct >= 0.75 * n  # the instance family this test is about
    assert r.levels <= distinct + 2 * int(np.ceil(np.log2(n))) + 1
    assert r.stats.solves - r.levels <= 2
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


def test_level_lp_declared_infeasible_is_solved_again_at_anchored_floors():
    """A level LP is declared infeasible once (the 8th LP with a ``theta`` column: the
    earlier ones include saturation probes, which an infeasible verdict only stops), as HiGHS
    did on the thin face of floors met only to its tolerance (10 types, 1,024 jobs:
    `InfeasibleError` at level 94 on main); it is solved again at the floors the last
    allocation reaches."""
    jobs, cl = _types_instance(12, 0)
    want = fa.max_min_fairness(jobs, cl, water_filling=True, method="highs")
    be = _RefuseHighs("level", nth=8)
    r = fa.max_min_fairness(jobs, cl, water_filling=True, method="highs", backend=be)
    assert be.refused == 1
    assert r.stats.count("level-floors-anchored") == 1
    # the anchored floors are lower only by the last allocation's rounding (far below 1e-6)
    np.testing.assert_allclose(r.level_floors, want.level_floors, rtol=1e-7)
    assert rises_alone(jobs, cl, np.asarray(r.level_floors)).max() < 1e-6
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


def test_anchored_floors_are_reached_exactly():
    """The anchored floors never exceed the levels of the (exactly feasible) allocation and
    never exceed the floors: hand-checked on two jobs."""
    from fairalloc.throughput.water_path import anchored_floors

    U = sp.csr_matrix(np.array([[2.0, 0.0], [0.0, 3.0]]))
    out = anchored_floors(np.array([1.0, 1.0]), U, np.array([0.4, 0.5]))
    np.testing.assert_array_equal(out, [0.8, 1.0])


def test_bottleneck_lp_gap_is_judged_at_the_decision_thresholds():
    """The bottleneck LP's certificate needs its optimum only to the candidates' thresholds:
    its relative gap tolerance is max(gap_tol, 0.5 sum(thr) / sum(caps)), here
    0.5 * (2e-6 + 4e-6) / (1e-3 + 1e-3) = 1.5e-3 (floors 0.5, caps 1e-3 max(1, floor))."""
    from fairalloc.throughput.stages import StageSolver
    from fairalloc.throughput.water_path import bottleneck_lp

    jobs = fa.Jobs([[1.0], [2.0]])
    b = fa.WaterFilling(jobs, fa.Cluster({"gpu": 2}))
    inst = b.inst
    solver = StageSolver(inst, HighsBackend(), stage_tol=1e-9, gap_tol=1e-6, feas_tol=1e-7)
    U = sp.csr_matrix(sp.diags(b.unorm) @ inst.Tm)
    floors = np.array([0.5, 0.5])
    thr = np.array([2e-6, 4e-6])
    sigma, x, cert = bottleneck_lp(inst, floors, np.ones(2, bool), solver, U, thr)
    assert cert.gap_tol == pytest.approx(1.5e-3, rel=1e-12)
    assert cert.ok
    assert np.all(U @ x >= floors + sigma - 1e-12)


def test_bottleneck_lp_caps_exceed_the_thresholds():
    """A bottleneck LP's bound proves a job only where its rise cap exceeds its threshold
    (issue #27, seed 707: with gap_tol 1e-4 the thresholds exceeded the caps of 1e-3, every
    candidate sat at its cap, and a job that could rise by 0.44 of its level was frozen).
    Here each job can rise by 0.5 (one GPU each, floors 0.5): with thresholds 1e-2 (above
    the relative cap of 1e-3) the point shows rises above them and the certified bound does
    not prove either job."""
    from fairalloc.throughput.stages import StageSolver
    from fairalloc.throughput.water_path import bottleneck_lp

    jobs = fa.Jobs([[1.0], [2.0]])
    b = fa.WaterFilling(jobs, fa.Cluster({"gpu": 2}))
    inst = b.inst
    solver = StageSolver(inst, HighsBackend(), stage_tol=1e-9, gap_tol=1e-6, feas_tol=1e-7)
    U = sp.csr_matrix(sp.diags(b.unorm) @ inst.Tm)
    floors = np.array([0.5, 0.5])
    thr = np.array([1e-2, 1e-2])
    sigma, x, cert = bottleneck_lp(inst, floors, np.ones(2, bool), solver, U, thr)
    assert cert.ok
    assert np.all(sigma > thr)  # both rise (by their caps) beyond their thresholds
    assert cert.dual_bound > thr.max()  # the bound proves neither bottlenecked
    assert np.all(U @ x >= floors + sigma - 1e-12)


def test_saturation_probe_declared_infeasible_only_shortens_the_jump():
    """The cascade above with its first saturation probe (the LP after the first level)
    declared infeasible (a probe is feasible at t = 0; HiGHS may refuse a thin face): the
    probe counts as not passed, the jump goes less far, and the result is the hand-checked
    one."""
    w = np.repeat(np.arange(1.0, 31.0), 3)
    jobs = fa.Jobs(np.ones((90, 1)), weight=w)
    plain = fa.max_min_fairness(jobs, fa.Cluster({"gpu": 76}), water_filling=True,
                                method="highs")
    be = _RefuseHighs("level", nth=3)
    r = fa.max_min_fairness(jobs, fa.Cluster({"gpu": 76}), water_filling=True, method="highs",
                            backend=be)
    assert be.refused == 1 and r.stats.count("level-floors-anchored") == 0
    assert r.levels > plain.levels  # the refused probe only shortened a jump
    want = np.where(w >= 11, 1.0, 16.0 * w / 165.0)
    np.testing.assert_allclose(r.level_floors, want, rtol=1e-7, atol=1e-9)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


def test_refine_point_solves_dependent_tight_rows_sparsely(monkeypatch):
    """`refine_point` moves a point onto its face where the tight rows are dependent (a time
    row and a capacity row on the same columns, as in a saturating water-filling) with the
    sparse LU of its regularised least-norm system, no dense least squares: issue #28, the
    dense QR of a 144 x 122 system took 2 s where BLAS threads competed for loaded cores
    (96 jobs x 10 types, 1.5 GPUs per job: 21 s, now 1.7 s; ``benchmarks/throughput.py
    --water-filling``). scipy's dense solver is made to fail to show that it is not needed."""
    import scipy.linalg

    from fairalloc.backends import LinearProgram
    from fairalloc.throughput.water_path import refine_point

    def no_dense(*a, **k):
        raise AssertionError("dense least squares")

    monkeypatch.setattr(scipy.linalg, "lstsq", no_dense)
    A = np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [0.0, 1.0, 1.0]])
    lp = LinearProgram.build(np.zeros(3), A, row_lower=[1.0, 2.0, -np.inf],
                             row_upper=[1.0, 2.0, 1.5], col_lower=0.0, col_upper=1.0)
    z = np.array([0.5 - 3e-8, 0.5, 0.3])
    y = refine_point(lp, z)
    # on the face to rounding (the refinement steps remove the regularisation's bias)
    assert abs(y[0] + y[1] - 1.0) <= 4 * np.finfo(float).eps
    assert np.all(y >= 0.0) and np.all(y <= 1.0) and y[1] + y[2] <= 1.5
    assert np.abs(y - z).max() <= 1e-7  # the least change, not another point of the face


def test_refine_point_refines_a_large_sparse_face():
    """`refine_point` refines a point whose tight rows x free columns exceed the dense cap
    (250,000 entries) when the system is sparse: on the previous main every level point of
    512 saturating jobs x 10 types (about 1,000 x 1,000) was left at the solver's
    tolerance, and at 768 jobs (``benchmarks/throughput.py --wf-saturating 768``) a frozen
    floor missed by 1.3e-10, times floor duals of 1e6, left the end check unable to prove
    404 jobs: water-filling raised ``SolverError`` on a valid input. Here 700 jobs' "level
    rows" ``x_m1 + 2 x_m2 = f_m`` are met only to 1e-9 (a simplex vertex's tolerance)."""
    from fairalloc.backends import LinearProgram
    from fairalloc.throughput.water_path import refine_point

    n = 700
    rng = np.random.default_rng(7)
    r = np.arange(n)
    A = sp.csr_matrix((np.r_[np.ones(n), 2.0 * np.ones(n)], (np.r_[r, r], np.r_[2 * r, 2 * r + 1])),
                      shape=(n, 2 * n))
    f = rng.uniform(0.5, 1.0, n)
    lp = LinearProgram.build(np.zeros(2 * n), A, row_lower=f, row_upper=np.inf,
                             col_lower=0.0, col_upper=1.0)
    z = np.repeat(f / 3.0, 2) * (1.0 - 1e-9 * rng.uniform(0.5, 1.0, 2 * n))
    assert n * 2 * n > 250_000  # larger than the dense cap
    y = refine_point(lp, z)
    miss = f - A @ y
    # every tight row met to rounding (previously: z itself, rows missed by about 1e-9)
    assert np.abs(miss).max() <= 8 * np.finfo(float).eps
    assert np.all(y >= 0.0) and np.all(y <= 1.0)
    assert np.abs(y - z).max() <= 1e-8  # the least change, not another point of the face
