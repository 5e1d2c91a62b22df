"""FIFO in arrival order answers every valid instance, certified and lexicographic (#27).

The forced stages (each the only optimum of its knapsack) are certified in closed form; the
LP stages after a tie keep the face of each stage's optimal set. Every answer is compared with
an independent lexicographic sequence (tests/fuzz/checks.py's `fifo_face_reference`, shared with
the fuzz check): ``scipy.optimize.linprog`` (HiGHS,
tolerances 1e-10), one LP per job in arrival order, each keeping the optimal face of the
earlier ones by complementary slackness with its own duals (the textbook sequence: no
objective rows, so a job whose value is 1e-7 of its best keeps its type).
"""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput.ordering import (
    FIFO_GREEDY,
    FIFO_KNAPSACK,
    forced_certificate,
    forced_prefix,
)
from fairalloc.tolerances import FEAS_TOL, GAP_TOL
from tests.fuzz.checks import Gavel, fifo_face_reference

_DATA = json.loads((Path(__file__).with_name("fifo_exact_cases.json")).read_text())
CASES = _DATA["cases"]
#: instances whose answers the long fuzz's FIFO check called wrong (``fuzz_source``)
FUZZ_CASES = _DATA["fuzz"]

#: each stage is certified to GAP_TOL of one job's worth (v <= 1); the reference drops
#: reduced costs below its face threshold (1e-9; at most n k of them, each moving at most one
#: unit of time)
TOL = 2 * GAP_TOL


def _ratios(T, sf, cap):
    """``a_mj = T_mj / T_m,fastest`` over the usable types (the gang fits), 0 elsewhere."""
    T = np.asarray(T, dtype=float)
    A = np.where((T > 0) & (np.asarray(sf)[:, None] <= np.asarray(cap)[None, :]), T, 0.0)
    return A / A.max(axis=1, keepdims=True)


def lexicographic_reference(T, sf, cap, order):
    """Each job's ``v`` of the lexicographic optimum in arrival order (ties by index): the
    textbook sequence of tests/fuzz/checks.py (`fifo_face_reference`: one LP per job, each
    keeping the earlier stages' optimal face), so that the tests and the fuzz check share it."""
    g = Gavel(np.asarray(T, dtype=float), sf, None, cap)
    v = fifo_face_reference(g, np.argsort(order, kind="stable"))
    assert v is not None, "a reference LP failed"
    return v


def _check(x, certificates, T, sf, cap, order):
    """Certified (every stage), feasible, and each job's v that of the reference."""
    assert all(c.ok for c in certificates), certificates
    assert (x >= -FEAS_TOL).all() and (x.sum(axis=1) <= 1 + FEAS_TOL).all()
    assert (np.asarray(sf) @ x <= np.asarray(cap) * (1 + FEAS_TOL)).all()
    v = (x * _ratios(T, sf, cap)).sum(axis=1)
    ref = lexicographic_reference(T, sf, cap, order)
    np.testing.assert_allclose(v, ref, rtol=0, atol=TOL)


# --------------------------------------------------------------------------------------------
# every instance on which main raised (CertificateError / InfeasibleError)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_probe_case_is_answered_certified_and_lexicographic(case):
    T = np.array(case["throughput"])
    cap, sf = case["workers"], case["scale_factor"]
    n, k = T.shape
    if case["entry"] == "solve_round":
        order = np.array(case["order"])
        r = fa.solve_round("fifo", {i: {f"t{j}": T[i, j] for j in range(k)} for i in range(n)},
                           {f"t{j}": w for j, w in enumerate(cap)},
                           scale_factor=dict(enumerate(sf)), order=dict(enumerate(order)))
        certs = (r.certificate, *r.reduced.stage_certificates)
    else:
        order = -np.array(case["elapsed"])  # the default order: most elapsed first
        r = fa.fifo(fa.Jobs(T, scale_factor=sf, elapsed=case["elapsed"]),
                    fa.Cluster({f"t{j}": w for j, w in enumerate(cap)}))
        certs = (r.certificate, *r.stage_certificates)
    _check(np.asarray(r.x), certs, T, sf, cap, order)


@pytest.mark.parametrize("case", FUZZ_CASES, ids=[c["name"] for c in FUZZ_CASES])
def test_fuzz_flagged_answer_is_the_lexicographic_optimum(case):
    """Fuzz seed 303 (30 jobs x 5 types, throughputs 1e2..1e10, 13 identical rows): every
    stage is forced (one unique knapsack optimum each), and job 17 (arrival rank 26) finds
    every type full, so it gets nothing; the textbook sequence agrees job by job. The fuzz
    check had called this wrong (its reference freed job 14's type: tests/test_fuzz.py).
    Seeds 606 / 707 (``--examples 20000``): nine more such answers, all stages forced, each
    equal to the textbook sequence (the check's kept rows leaked through the throughput
    ratios: tests/test_fuzz.py)."""
    T = np.array(case["throughput"])
    cap, sf = case["workers"], case["scale_factor"]
    if "order" in case:
        order, jk, ok = np.array(case["order"]), {}, {"order": case["order"]}
    else:
        order, jk, ok = -np.array(case["elapsed"]), {"elapsed": case["elapsed"]}, {}
    r = fa.fifo(fa.Jobs(T, scale_factor=sf, **jk),
                fa.Cluster({f"t{j}": w for j, w in enumerate(cap)}), **ok, **case.get("kw", {}))
    assert r.stats.path == (f"{FIFO_GREEDY}:{T.shape[0]}",)
    assert r.certificate.kind == FIFO_KNAPSACK
    _check(np.asarray(r.x), (r.certificate, *r.stage_certificates), T, sf, cap, order)


# --------------------------------------------------------------------------------------------
# wide-range instances: throughputs 10^U(-4, 4), rescaled, tied types, tied arrivals, gangs
# --------------------------------------------------------------------------------------------
@st.composite
def wide_instances(draw):
    """Valid FIFO instances by construction: every job has a usable type its gang fits."""
    n = draw(st.integers(2, 12))
    k = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    T = 10.0 ** rng.uniform(-4, 4, (n, k))
    T[rng.random((n, k)) < 0.2] = 0.0
    if k > 1:  # tied types: a job as fast on two of them (its stage optimum is not unique)
        tied = np.flatnonzero(rng.random(n) < 0.4)
        pick = np.argsort(rng.random((tied.size, k)), axis=1)[:, :2]
        T[tied, pick[:, 1]] = T[tied, pick[:, 0]]
    cap = rng.integers(1, 9, k)
    sf = rng.choice([1, 2, 4], n)
    j = int(np.argmax(cap))
    bad = ~((T > 0) & (sf[:, None] <= cap[None, :])).any(axis=1)
    T[bad, j] = np.where(T[bad, j] > 0, T[bad, j], 10.0 ** rng.uniform(-4, 4, bad.sum()))
    sf[bad] = np.minimum(sf[bad], cap[j])
    T = T * draw(st.sampled_from([1.0, 1e-6, 1e6]))
    order = rng.integers(0, max(1, n // 2), n)  # tied arrivals (ranked by index)
    return T, cap, sf, order


@settings(max_examples=60)
@given(inst=wide_instances())
def test_wide_range_fifo_is_certified_and_lexicographic(inst):
    T, cap, sf, order = inst
    r = fa.fifo(fa.Jobs(T, scale_factor=sf), fa.Cluster({f"t{j}": int(w) for j, w in
                                                         enumerate(cap)}), order=order)
    _check(r.x, (r.certificate, *r.stage_certificates), T, sf, cap, order)


# --------------------------------------------------------------------------------------------
# the forced stages: closed-form certificate, no LP
# --------------------------------------------------------------------------------------------
def test_forced_stages_are_certified_without_an_lp():
    rng = np.random.default_rng(7)
    n = 40
    T = rng.uniform(0.5, 10.0, (n, 3))  # distinct ratios: every stage optimum unique
    sf = rng.choice([1, 2, 4], n)
    cap = [6, 9, 5]
    r = fa.fifo(fa.Jobs(T, scale_factor=sf), fa.Cluster({"a": 6, "b": 9, "c": 5}),
                order=np.arange(n))
    assert r.stats.path == (f"fifo-greedy:{n}",) and r.stats.solves == 0
    assert r.certificate.kind == FIFO_KNAPSACK and r.certificate.ok
    assert r.stage_certificates == (r.certificate,)
    _check(r.x, (r.certificate,), T, sf, cap, np.arange(n))
    # a work-conserving stage keeps every forced column
    w = fa.fifo(fa.Jobs(T, scale_factor=sf), fa.Cluster({"a": 6, "b": 9, "c": 5}),
                order=np.arange(n), work_conserving=True)
    assert w.certificate.ok and np.array_equal(w.x, r.x)


def test_knapsack_certificate_proves_and_refutes():
    # two jobs, two one-worker types; job 0 prefers a, job 1 then gets b
    A = np.array([[1.0, 0.5], [1.0, 0.25]])
    one = np.ones(2)
    stop, x = forced_prefix(A, one, one, np.array([0, 1]))
    assert stop == 2 and x.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    good = forced_certificate(A, one, one, np.array([0, 1]), x, 0.0, GAP_TOL, FEAS_TOL)
    assert good.certificate.ok and good.certificate.gap == 0.0
    assert good.bounds.tolist() == [1.0, 0.25]
    # job 0 on its slower type: its stage bound (1) exceeds its value (0.5) -> refuted
    bad = forced_certificate(A, one, one, np.array([0, 1]), x[::-1], 0.0, GAP_TOL, FEAS_TOL)
    assert not bad.certificate.ok and bad.certificate.gap == pytest.approx(0.5)
    # a tie (equal ratios, room on both) is not forced
    assert forced_prefix(np.array([[1.0, 1.0]]), np.ones(1), np.ones(2), np.array([0]))[0] == 0


# --------------------------------------------------------------------------------------------
# semantics that main got wrong while certifying
# --------------------------------------------------------------------------------------------
def test_a_job_on_a_slow_type_keeps_it_after_a_tie():
    # job 0 may run on a or b (tie: LP stages from the start); job 1 needs a; job 2 can then
    # only run on c, at 3e-7 of its best speed; job 3 only on c. Arrival order: job 2 keeps c
    # (main gave it to job 3: job 2's value was below gap_tol and not kept)
    T = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 3e-7], [0.0, 0.0, 1.0]])
    r = fa.fifo(fa.Jobs(T), fa.Cluster({"a": 1, "b": 1, "c": 1}), order=range(4))
    assert r.x[2, 2] == pytest.approx(1.0, abs=FEAS_TOL)
    assert r.x[3, 2] == pytest.approx(0.0, abs=FEAS_TOL)
    _check(r.x, (r.certificate, *r.stage_certificates), T, [1] * 4, [1, 1, 1], range(4))


def test_job_pairs_are_not_taken_for_forced_stages():
    # two jobs sharing the one worker at full speed each: job 0's optimum is not unique
    # (alone or in the pair), so the arrival order gives both full speed (main's greedy
    # ignored the pair column and raised CertificateError)
    pairs = fa.JobPairs([[0, 1]], [[[1.0, 1.0]]])
    r = fa.fifo(fa.Jobs([[1.0], [1.0]]), fa.Cluster({"a": 1}), pairs=pairs, order=[0, 1])
    assert r.certificate.ok and r.stats.path[0] == "fifo-greedy:0"
    np.testing.assert_allclose(r.effective_throughput, [1.0, 1.0], atol=FEAS_TOL)
