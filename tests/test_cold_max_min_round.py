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
    # solve options other than tolerances, or arguments max-min does not read: the normal round
    for kw in ({"method": "highs"}, {"work_conserving": False}, {"steps_remaining": sf}):
        assert fa.solve_round("max_min_fairness", tp, workers, scale_factor=sf,
                              **kw).stats.method != "incremental", kw


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
