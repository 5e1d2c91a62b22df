"""Row-class aggregation in the structured level solver (#15: finish-time fairness on tied rows).

Jobs of one model have proportional stage rows; at degenerate prices they are all near a tie,
and the master carries one variable per (row class, type) for those whose level leaves time
to spare (`fairalloc.throughput.structured.rowclass`, proof in
``proofs/row_class_aggregation.md``). Checked: the building blocks on hand-computed numbers,
and whole solves against the whole LP (``method="highs"``), certified on the original program.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.structured.rowclass import (
    Aggregator,
    disaggregate,
    eligible,
    floor_eligible,
    groups,
    master_block,
    row_classes,
)

REL = 1e-9  # agreement of two certified optima of the same LP sequence


def _tied(n: int, seed: int = 7, models: int = 12) -> tuple[fa.Jobs, fa.Cluster]:
    """Jobs of a few models (Zipf popularity): rows identical within a model, steps, weights
    and elapsed times differ (the `ties` family of benchmarks/families.py, smaller)."""
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, models + 1)
    model = rng.choice(models, n, p=pop / pop.sum())
    rows = 1e3 * rng.lognormal(0.0, 0.8, models)[:, None] * np.array([1.0, 0.6, 0.3]) \
        * rng.lognormal(0.0, 0.3, (models, 3))
    per_epoch = np.round(rng.uniform(100, 2000, models))
    steps = per_epoch[model] * rng.choice([1, 2, 5, 10, 20, 50], n)
    elapsed = np.where(rng.random(n) < 0.5, 0.0, 360.0 * rng.integers(1, 20, n))
    weight = rng.choice([1.0, 2.0], n, p=[0.8, 0.2])
    jobs = fa.Jobs(rows[model], weight=weight, steps_remaining=steps, elapsed=elapsed)
    return jobs, fa.Cluster({"v100": 60, "p100": 90, "k80": 120})


# --- building blocks ---------------------------------------------------------------------------
def test_row_classes_groups_proportional_rows_only():
    A = np.array([[2.0, 1.0, 0.0],   # class of (1, .5, 0)
                  [4.0, 2.0, 0.0],   # same direction, twice the scale
                  [1.0, 1.0, 1.0],   # alone: not a class
                  [3.0, 1.5, 0.0],   # class of (1, .5, 0)
                  [0.5, 0.5, 0.5],   # class of (1, 1, 1) with row 2
                  [2.0, 1.0 + 1e-6, 0.0]])  # a near-tie of direction: stays apart
    rc = row_classes(A, np.ones(6, dtype=bool))
    assert rc is not None
    assert rc.cls[0] == rc.cls[1] == rc.cls[3] >= 0
    assert rc.cls[2] == rc.cls[4] >= 0 and rc.cls[2] != rc.cls[0]
    assert rc.cls[5] == -1
    np.testing.assert_allclose(rc.c, [2.0, 4.0, 1.0, 3.0, 0.5, 2.0])
    np.testing.assert_allclose(rc.D[rc.cls[0]], [1.0, 0.5, 0.0])
    # jobs that need no level are in no class; no class of two: None
    rc2 = row_classes(A, np.array([True, False, True, False, False, True]))
    assert rc2 is None


def test_row_classes_shared_keys_are_told_apart():
    # rows that differ only in a column ~1e-20 times the first: the screening projection
    # (weights in [0.5, 1.5]) of every row rounds to the same float (the tiny term is far below
    # half an ulp of the first), whatever the probe -- the byte-wise comparison of
    # exact_classes (the one class finder row_classes calls) still separates them, and rows
    # 1, 3 (one row that is not the first's) form their own class
    from fairalloc._symmetry import exact_classes

    rows = np.array([[1.0, 1e-20], [1.0, 2e-20], [1.0, 1e-20], [1.0, 2e-20], [1.0, 3e-20]])
    assert all(float(p + 1.5 * rows[:, 1].max()) == p for p in (0.5, 1.0, 1.5))  # collide
    cl = exact_classes(rows)
    assert cl.num_classes == 3
    np.testing.assert_array_equal(cl.inverse, [0, 1, 0, 1, 2])
    np.testing.assert_array_equal(cl.representative, [0, 1, 4])
    np.testing.assert_array_equal(cl.counts, [2, 2, 1])
    # and row_classes on rows sharing directions: 0, 1 and 2, 3 classes, 4 alone
    A = np.array([[1.0, 0.5], [2.0, 1.0], [1.0, 0.25], [4.0, 1.0], [1.0, 0.8]])
    rc = row_classes(A, np.ones(5, dtype=bool))
    assert rc is not None
    assert rc.cls[0] == rc.cls[1] >= 0
    assert rc.cls[2] == rc.cls[3] >= 0 and rc.cls[2] != rc.cls[0]
    assert rc.cls[4] == -1  # a direction of its own: no class
    np.testing.assert_allclose(rc.D[rc.cls[2]], [1.0, 0.25])


def test_disaggregate_hand_checked():
    # one class d = (1, 0.5); jobs m = 0, 1 with rows c_m d, c = (2, 4); s = (1, 2);
    # levels L = h + b theta at theta = 0.5: (0.4, 1.2), so l = L / c = (0.2, 0.3)
    A = np.array([[2.0, 1.0], [4.0, 2.0]])
    b = np.array([0.2, 0.4])
    h = np.array([0.3, 1.0])
    s = np.array([1.0, 2.0])
    rc = row_classes(A, np.ones(2, dtype=bool))
    assert rc is not None
    g = groups(rc, np.ones(2, dtype=bool))
    assert g is not None
    # the class row: sum_t U_t - beta theta >= alpha with alpha = sum s h / c, beta = sum s b / c
    rows, cols, vals, alpha = master_block(g, rc.c, s, b, h, row0=10, theta_col=3, col0=4)
    assert alpha == pytest.approx([0.3 / 2 + 2 * 1.0 / 4])
    beta = 0.2 / 2 + 2 * 0.4 / 4
    trip = {(int(r), int(c)): v for r, c, v in zip(rows, cols, vals, strict=True)}
    assert trip == pytest.approx({(0, 4): 1.0, (1, 5): 2.0, (10, 4): 1.0, (10, 5): 1.0,
                                  (10, 3): -beta})
    # the master put U = (0.5, 0.3) (total 0.8 = sum s l = 0.2 + 0.6) with nu = 0.7
    col = np.array([[0, 1], [2, 3]])
    cidx, vals_x, lam, bound = disaggregate(g, np.array([0.5, 0.3]), np.array([0.7]), 0.5,
                                            A, col, rc.c, s, b, h)
    x = np.zeros(4)
    x[cidx] = vals_x
    # in proportion to the levels: job 0 gets 0.2 * (5/8, 3/8) in class units, i.e.
    # x = (0.125 / 1, 0.075 / 0.5); job 1: 0.3 * (5/8, 3/8) -> (0.1875, 0.225)
    np.testing.assert_allclose(x, [0.125, 0.15, 0.1875, 0.225])
    np.testing.assert_allclose(A[0] @ x[:2], 0.4)  # levels met exactly
    np.testing.assert_allclose(A[1] @ x[2:], 1.2)
    # capacity use = U_t / d_t when the class row is tight
    np.testing.assert_allclose([x[0] + 2 * x[2], x[1] + 2 * x[3]], [0.5, 0.6])
    np.testing.assert_allclose(lam, [1 * 0.7 / 2, 2 * 0.7 / 4])  # lambda = s nu / c
    assert not bound.any()


def test_disaggregate_flags_a_share_that_does_not_fit():
    # the same class at theta = 3: l = (0.45, 0.55); all on the slow type (rate 0.5): job 1
    # would need 1.1 of its time, job 0 0.9 -- job 1 is bound, job 0 fits
    A = np.array([[2.0, 1.0], [4.0, 2.0]])
    b = np.array([0.2, 0.4])
    h = np.array([0.3, 1.0])
    s = np.ones(2)
    rc = row_classes(A, np.ones(2, dtype=bool))
    assert rc is not None
    g = groups(rc, np.ones(2, dtype=bool))
    assert g is not None
    _, _, _, bound = disaggregate(g, np.array([0.0, 1.0]), np.array([1.0]), 3.0, A,
                                  np.array([[0, 1], [2, 3]]), rc.c, s, b, h)
    assert bound.tolist() == [False, True]
    # a negative level cannot be aggregated either
    _, _, _, bound = disaggregate(g, np.array([1.0, 0.0]), np.array([1.0]), -2.0, A,
                                  np.array([[0, 1], [2, 3]]), rc.c, s, b, h)
    assert bound.tolist() == [True, False]


def test_eligible_keeps_jobs_at_the_edge_explicit():
    # class d = (1, 0.5) tied at prices p = (2, 1) (p_t / d_t = 2 for both types): jobs with
    # l <= 0.5 (1 - EDGE_MARGIN) are aggregated, the others (they need the fast type) are not
    A = np.array([[1.0, 0.5]] * 4)
    b = np.zeros(4)
    h = np.array([0.1, 0.45, 0.495, 0.99])
    rc = row_classes(A, np.ones(4, dtype=bool))
    assert rc is not None
    none = np.zeros(4, dtype=bool)
    ok = eligible(rc, np.ones(4, dtype=bool), np.array([2.0, 1.0]), 0.0, b, h, none)
    assert ok.tolist() == [True, True, False, False]
    # without a tie (the slow type much dearer) the fast type's rate bounds the level
    ok = eligible(rc, np.ones(4, dtype=bool), np.array([2.0, 5.0]), 0.0, b, h, none)
    assert ok.tolist() == [True, True, True, False]
    # candidates only, and jobs that left their class stay out
    ok = eligible(rc, np.array([False, True, True, True]), np.array([2.0, 5.0]), 0.0, b, h,
                  np.array([False, True, False, False]))
    assert ok.tolist() == [False, False, True, False]


def test_floor_eligible_holds_only_jobs_valuing_less_than_the_price():
    # class d = (1, 0.5) at prices p = (2, 1): price per unit of class throughput 2 on both
    # types. Value per worker omega c / s: 1 (below 2: held at the floor), 1.95 (within
    # TIE_BAND of the price: left explicit), 3 (wants more than its floor: explicit); the
    # fourth job's floor leaves no time to spare on the slow type (l = 0.6 > 0.5)
    A = np.array([[1.0, 0.5]] * 4)
    f = np.array([0.2, 0.2, 0.2, 0.6])
    omega = np.array([1.0, 1.95, 3.0, 1.0])
    s = np.ones(4)
    rc = row_classes(A, np.ones(4, dtype=bool))
    assert rc is not None
    ok = floor_eligible(rc, np.ones(4, dtype=bool), np.array([2.0, 1.0]), f, omega, s,
                        np.zeros(4, dtype=bool))
    assert ok.tolist() == [True, False, False, False]
    # a scale factor of 2 halves the value per worker: the second job is held too
    ok = floor_eligible(rc, np.ones(4, dtype=bool), np.array([2.0, 1.0]), f, omega,
                        np.array([1.0, 2.0, 1.0, 1.0]), np.zeros(4, dtype=bool))
    assert ok.tolist() == [True, True, False, False]


def test_aggregator_finds_classes_only_for_large_candidate_sets():
    A = np.tile([[1.0, 0.5]], (10, 1))
    agr = Aggregator(A, np.ones(10, dtype=bool), np.zeros(10), np.full(10, 0.1))
    cand = np.ones(10, dtype=bool)
    assert not agr.grouped(cand, np.array([2.0, 1.0]), 0.0).any()  # 10 <= the candidates' gate
    assert agr.master_groups(cand) is None
    agr = Aggregator(A, np.ones(10, dtype=bool), np.zeros(10), np.full(10, 0.1),
                     Tuning(class_min_candidates=5))
    assert agr.grouped(cand, np.array([2.0, 1.0]), 0.0).all()
    assert agr.classed_share() == 1.0
    agr.leave(np.arange(10) < 3)
    assert agr.grouped(cand, np.array([2.0, 1.0]), 0.0).tolist() == [False] * 3 + [True] * 7


# --- whole solves ------------------------------------------------------------------------------
@pytest.mark.parametrize("symmetry", [True, False])
def test_ftf_on_tied_rows_stays_structured_and_exact(symmetry):
    jobs, cluster = _tied(3000)
    a = fa.finish_time_fairness(jobs, cluster, symmetry=symmetry, work_conserving=False)
    ref = fa.finish_time_fairness(jobs, cluster, symmetry=symmetry, work_conserving=False,
                                  method="highs")
    assert a.certificate.ok and all(c.ok for c in a.stage_certificates)
    assert a.objective == pytest.approx(ref.objective, rel=REL)
    path = a.stats.path
    assert "structured-level" in path and "exact-lp" not in path
    assert not a.stats.fallbacks
    # the allocation is feasible on the original program and every rho is at most R*
    x = np.asarray(a.allocation)
    assert (x >= -1e-12).all() and (x.sum(axis=1) <= 1 + 1e-9).all()
    used = (x * jobs.scale_factor[:, None]).sum(axis=0)
    assert (used <= np.array([60, 90, 120]) * (1 + 1e-9)).all()
    assert np.max(a.metric) <= a.objective * (1 + 1e-9)


def test_ftf_on_tied_rows_needs_the_aggregation():
    """Without the row classes the same stages have most jobs near a tie and go to the whole
    LP (the hand-over the aggregation removes): the test above exercises it."""
    jobs, cluster = _tied(3000)
    a = fa.finish_time_fairness(jobs, cluster, symmetry=False, work_conserving=False,
                                tuning=Tuning(class_min_candidates=10**9))
    assert any("degenerate prices" in f or "no price estimate" in f for f in a.stats.fallbacks)


@pytest.mark.parametrize("symmetry", [True, False])
def test_ftf_work_conserving_on_tied_rows(symmetry):
    """The floor (work-conserving) stage holds the tied jobs at their floors by row class
    (`floor_eligible`): structured, no hand-over, equal to the whole LPs."""
    jobs, cluster = _tied(3000)
    a = fa.finish_time_fairness(jobs, cluster, work_conserving=True, symmetry=symmetry)
    ref = fa.finish_time_fairness(jobs, cluster, work_conserving=True, method="highs",
                                  symmetry=symmetry)
    assert a.certificate.ok and all(c.ok for c in a.stage_certificates)
    assert "structured-floor" in a.stats.path and not any(
        step.startswith("exact-lp") for step in a.stats.path)
    assert all(f.startswith("floor-from-level->structured-floor") for f in a.stats.fallbacks)
    assert a.objective == pytest.approx(ref.objective, rel=1e-7)
    tp = jobs.throughput * np.asarray(a.allocation)
    tp_ref = jobs.throughput * np.asarray(ref.allocation)
    # the work-conserving stage's objective: total normalised throughput, same to tolerance
    assert tp.sum() == pytest.approx(tp_ref.sum(), rel=1e-6)


def test_max_min_on_tied_rows_without_symmetry_stays_structured():
    jobs, cluster = _tied(4096, seed=3)
    a = fa.max_min_fairness(jobs, cluster, symmetry=False, work_conserving=False)
    ref = fa.max_min_fairness(jobs, cluster, symmetry=False, work_conserving=False,
                              method="highs")
    assert a.certificate.ok
    # the whole LP's point (interior point without crossover) is proven within its own gap:
    # the structured optimum lies in the reference's certified interval [point, dual bound]
    tol = REL * abs(ref.objective)
    assert ref.certificate.primal_value - tol <= a.objective <= ref.certificate.dual_bound + tol
    assert a.objective == pytest.approx(ref.objective, rel=10 * ref.certificate.gap + REL)
    assert not any("degenerate" in f for f in a.stats.fallbacks)


# --- randomised: small tied instances with the aggregation forced on ------------------------
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(64, 200), k=st.integers(2, 4),
       models=st.integers(1, 6), policy=st.sampled_from(["ftf", "max-min"]))
def test_aggregation_forced_on_small_tied_instances(seed, n, k, models, policy):
    """Every master aggregates whatever it can (no candidate threshold): the answer equals the
    whole LP's and is certified on the original program, whatever path the stages took
    (zeros in rows, scale factors, weights, a class per model and scale)."""
    forced = Tuning(class_min_candidates=0, class_min_candidate_share=0.0)
    rng = np.random.default_rng(seed)
    rows = rng.lognormal(0.0, 0.7, (models, k)) * 100.0
    rows[rng.random((models, k)) < 0.2] = 0.0
    rows[:, 0] = np.maximum(rows[:, 0], 1.0)
    model = rng.integers(0, models, n)
    sf = rng.choice([1, 1, 1, 2, 4], n)
    jobs = fa.Jobs(rows[model], scale_factor=sf, weight=rng.choice([1.0, 2.0], n),
                   steps_remaining=rng.choice([100.0, 500.0, 2000.0], n) * (1 + model),
                   elapsed=rng.choice([0.0, 360.0, 720.0], n))
    cluster = fa.Cluster({f"t{j}": int(rng.integers(max(4, n // 8), n)) for j in range(k)})
    fn = fa.finish_time_fairness if policy == "ftf" else fa.max_min_fairness
    a = fn(jobs, cluster, symmetry=False, work_conserving=False, tuning=forced)
    ref = fn(jobs, cluster, symmetry=False, work_conserving=False, method="highs")
    assert a.certificate.ok and all(c.ok for c in a.stage_certificates)
    # both certified: they agree to the certificates' accuracy
    assert a.objective == pytest.approx(ref.objective, rel=2 * a.certificate.gap_tol, abs=1e-12)
