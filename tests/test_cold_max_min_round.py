"""`fairalloc.solve_round` for max-min fairness runs the cold round `fairalloc.RoundPolicy`
runs first (one HiGHS LP per stage over the exact symmetry classes, both stages certified on
the original program), with the normal round as its fallback (#28): the same answer as the
normal round, in about two thirds of its time on Gavel's jobs (benchmarks, not here)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.tolerances import FEAS_TOL, GAP_TOL

TYPES = ("v100", "p100", "k80")


def _feasible(r: fa.RoundResult, T: np.ndarray, cap: np.ndarray, sf: np.ndarray) -> None:
    """``r.x`` is a point of the original program (every job, every type), to ``FEAS_TOL``."""
    x = np.asarray(r.x)
    assert np.all(x >= 0.0)
    assert np.all(x[(T <= 0) | (sf[:, None] > cap[None, :])] == 0.0)
    assert np.all(x.sum(axis=1) <= 1.0 + FEAS_TOL)
    assert np.all(sf @ x <= cap * (1.0 + FEAS_TOL))


def test_solve_round_runs_the_cold_incremental_round_and_falls_back_on_other_options():
    tp = {j: {"v100": 4.0 + j % 3, "p100": 2.0, "k80": 1.0 + j % 2} for j in range(12)}
    workers = {"v100": 3, "p100": 2, "k80": 4}
    sf = {j: 1 + (j % 4 == 0) for j in tp}
    r = fa.solve_round("max_min_fairness", tp, workers, scale_factor=sf)
    assert r.stats.method == "incremental" and r.stats.solves == 2
    assert r.certificate.ok and all(c.ok for c in r.reduced.stage_certificates)
    first = fa.RoundPolicy("max_min_fairness").allocate(tp, workers, scale_factor=sf)
    assert np.array_equal(r.x, first.x)  # the very round a RoundPolicy solves first
    # a drained type: the incremental round solves the present types, as the normal round does
    drained = fa.solve_round("max_min_fairness", tp, {**workers, "k80": 0}, scale_factor=sf)
    normal = fa.solve_round("max_min_fairness", tp, {**workers, "k80": 0}, scale_factor=sf,
                            method="fast")
    assert drained.stats.method == "incremental" and drained.certificate.ok
    assert np.all(np.asarray(drained.x)[:, TYPES.index("k80")] == 0.0)
    assert abs(drained.objective - normal.objective) <= 2 * GAP_TOL * max(1.0, normal.objective)
    # another method or backend, or arguments max-min does not read: the normal round
    for kw in ({"method": "highs"}, {"method": "fast"}, {"backend": "clarabel"},
               {"steps_remaining": sf}):
        assert fa.solve_round("max_min_fairness", tp, workers, scale_factor=sf,
                              **kw).stats.method != "incremental", kw


def test_explicit_defaults_and_one_stage_take_the_incremental_round():
    """#28: spelling out a default, or asking for less work (Gavel's own one-stage program),
    never leaves the fast path for the slower normal round."""
    tp = {j: {"v100": 4.0 + j % 3, "p100": 2.0, "k80": 1.0 + j % 2} for j in range(12)}
    workers = {"v100": 3, "p100": 2, "k80": 4}
    for kw, solves in (({"work_conserving": True}, 2), ({"method": "auto"}, 2),
                       ({"backend": "highs"}, 2), ({"work_conserving": np.bool_(True)}, 2),
                       ({"work_conserving": False}, 1),
                       ({"work_conserving": False, "method": "auto", "gap_tol": 1e-6}, 1)):
        r = fa.solve_round("max_min_fairness", tp, workers, **kw)
        assert r.stats.method == "incremental" and r.stats.solves == solves, kw
        assert len(r.reduced.stage_certificates) == solves and r.certificate.ok, kw
    # a RoundPolicy keeps its one-stage model warm across rounds
    p = fa.RoundPolicy("max_min_fairness", work_conserving=False)
    methods = [p.allocate({**tp, f"new{i}": {"v100": 1.0 + i}}, workers).stats.method
               for i in range(3)]
    assert methods == ["incremental", "incremental+warm", "incremental+warm"]


def test_solve_round_refuses_bad_per_job_values_as_the_normal_round_does():
    tp = {"a": {"v100": 1.0}, "b": {"v100": 2.0}}
    for kw in ({"scale_factor": {"a": 1, "b": 0}}, {"weight": {"a": 1.0, "b": -1.0}},
               {"scale_factor": {"a": 1.5, "b": 1}}, {"weight": {"a": 1.0}},
               {"scale_factor": {"a": 1, "b": float("nan")}}):
        errors = []
        for extra in ({}, {"method": "highs"}):  # (method=: the normal round)
            try:
                fa.solve_round("max_min_fairness", tp, {"v100": 2}, **kw, **extra)
            except fa.InputError as exc:
                errors.append((str(exc), exc.argument, exc.index))
        assert len(errors) == 2 and errors[0] == errors[1], (kw, errors)


@st.composite
def _rounds(draw):
    n = draw(st.integers(1, 24))
    k = draw(st.integers(1, 3))
    rates = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 7.5])  # few values: classes form
    T = np.array([[draw(rates) for _ in range(k)] for _ in range(n)])
    T[:, 0] = np.maximum(T[:, 0], 1.0)  # every job runs somewhere
    sf = np.array([draw(st.sampled_from([1, 1, 2])) for _ in range(n)], dtype=float)
    w = np.array([draw(st.sampled_from([1.0, 1.0, 5.0])) for _ in range(n)])
    cap = np.array([draw(st.integers(2, 6)) for _ in range(k)], dtype=float)
    return T, sf, w, cap


@given(_rounds())
def test_cold_round_agrees_with_the_normal_round(inst):
    T, sf, w, cap = inst
    n, k = T.shape
    tp = {j: dict(zip(TYPES[:k], T[j].tolist())) for j in range(n)}
    workers = dict(zip(TYPES[:k], cap.astype(int).tolist()))
    sfd = dict(enumerate(sf.astype(int).tolist()))
    wd = dict(enumerate(w.tolist()))
    new = fa.solve_round("max_min_fairness", tp, workers, scale_factor=sfd, weight=wd)
    ref = fa.solve_round("max_min_fairness", tp, workers, scale_factor=sfd, weight=wd,
                         method="highs")  # the normal round, the whole LP
    assert new.stats.method == "incremental" and ref.stats.method != "incremental"
    assert new.certificate.ok and ref.certificate.ok
    assert all(c.ok for c in new.reduced.stage_certificates)
    _feasible(new, T, cap, sf)
    # both levels certified within GAP_TOL (relative) of the one optimum
    scale = max(1.0, abs(ref.objective))
    assert abs(new.objective - ref.objective) <= 2 * GAP_TOL * scale
    # the work-conserving stage: the same total normalised throughput (its objective: each
    # job's throughput over its throughput at X^equal), GAP_TOL relative
    equal = np.where(T > 0, T, 0.0) @ (cap / cap.sum())
    a, b = (float((np.asarray(r.effective_throughput) / equal).sum()) for r in (new, ref))
    assert abs(a - b) <= 2 * GAP_TOL * max(1.0, abs(b))


@given(_rounds())
def test_one_stage_cold_round_agrees_with_the_normal_one_stage_round(inst):
    T, sf, w, cap = inst
    n, k = T.shape
    tp = {j: dict(zip(TYPES[:k], T[j].tolist())) for j in range(n)}
    workers = dict(zip(TYPES[:k], cap.astype(int).tolist()))
    kw = {"scale_factor": dict(enumerate(sf.astype(int).tolist())),
          "weight": dict(enumerate(w.tolist())), "work_conserving": False}
    new = fa.solve_round("max_min_fairness", tp, workers, **kw)
    ref = fa.solve_round("max_min_fairness", tp, workers, method="highs", **kw)
    assert new.stats.method == "incremental" and ref.stats.method != "incremental"
    assert new.stats.solves == 1 and len(new.reduced.stage_certificates) == 1
    assert new.certificate.ok and ref.certificate.ok
    _feasible(new, T, cap, sf)
    # the level (the one stage's optimum), both certified within GAP_TOL of it
    assert abs(new.objective - ref.objective) <= 2 * GAP_TOL * max(1.0, abs(ref.objective))
    # and the allocation reaches it: every job's weighted normalised throughput >= the level
    equal = np.where(T > 0, T, 0.0) @ (cap / cap.sum())
    metric = sf * np.asarray(new.effective_throughput) / (w * equal)
    assert metric.min() >= new.objective * (1.0 - FEAS_TOL) - FEAS_TOL


def test_the_round_decides_which_solve_round_arguments_it_leaves_to_the_normal_round():
    """misc39: solve_round asks the round (`refusal`) whether it reads what was given; every
    argument of solve_round is read by the incremental round, routes the round, belongs to
    another policy (not read by max-min: `READS`, ignored by both rounds), or is one of the
    round's `UNREAD_ARGUMENTS` (read by max-min's normal round only; a new argument must be
    placed)."""
    import inspect

    from fairalloc.rounds.api import _SOLVE_OPTIONS
    from fairalloc.rounds.incremental import UNREAD_ARGUMENTS, IncrementalMaxMin, refusal
    from fairalloc.rounds.readers import READS

    read = {"policy", "throughput", "workers", "job_ids", "types", "scale_factor", "weight"}
    assert set(READS["max_min_fairness"]) == {"scale_factor", "weight", *UNREAD_ARGUMENTS}
    routes = {"water_filling", "warm_start"}
    other_policies = {"semantics", "normalized", "kind", "fairness_knob", "order", "cost", "slo",
                      "entities", "entity_weights", "entity_policies", "plan_jobs",
                      "plan_options"}
    names = set(inspect.signature(fa.solve_round).parameters)
    placed = read | routes | other_policies | set(_SOLVE_OPTIONS) | set(UNREAD_ARGUMENTS)
    assert names == placed
    for name in UNREAD_ARGUMENTS:
        assert refusal({}, {name: 0.0, "weight": [1.0]}) == \
            f"{name} given (the normal round checks it)"
        assert not IncrementalMaxMin.applies({}, {name: 0.0})
    assert IncrementalMaxMin.applies({}, dict.fromkeys(UNREAD_ARGUMENTS))


def test_arguments_the_kept_model_does_not_read_run_the_normal_round_without_a_hand_over():
    """``elapsed`` (read by max-min's normal round: `fairalloc.Jobs` validates it) runs the
    normal round; ``order``, ``entities``, ``slo`` (not read by max-min) are ignored, so the
    round is the incremental one, in solve_round as in RoundPolicy (dfix39's D3)."""
    tp = {j: {"v100": 4.0 + j % 3, "k80": 1.0} for j in range(6)}
    workers = {"v100": 2, "k80": 3}
    r = fa.solve_round("max_min_fairness", tp, workers, elapsed=dict.fromkeys(tp, 1.0))
    assert r.stats.method != "incremental" and r.stats.fallbacks == ()
    assert r.certificate.ok
    for kw in ({"order": {j: "x" for j in tp}}, {"entities": dict.fromkeys(tp, None)},
               {"slo": dict.fromkeys(tp, -9.0)}):
        r = fa.solve_round("max_min_fairness", tp, workers, **kw)
        w = fa.RoundPolicy("max_min_fairness").allocate(tp, workers, **kw)
        assert r.stats.method == w.stats.method == "incremental", kw
        assert r.certificate.ok, kw
