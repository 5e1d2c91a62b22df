"""Exact symmetry reduction of the effective-throughput policies (issue #15, item 1).

Guarantees (proofs/symmetry_reduction.md): a policy solved over exact classes of jobs has the
objective of the job-by-job solve, gives every member of a class the same allocation, and is
certified against the original program; near-ties never form exact classes; order-based
policies, job pairs and composed models are never reduced; inputs are not changed.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import fairalloc as fa
from fairalloc.backends import LinearProgram
from fairalloc.certificates import lp_certificate
from fairalloc.data import JobPairs
from fairalloc.errors import InputError
from fairalloc.throughput.duration import FinishTimeFairness, MinMakespan
from fairalloc.throughput.efficiency import MaxTotalThroughput, MinCost
from fairalloc.throughput.max_min import MaxMinFairness, WaterFilling
from fairalloc.throughput.ordering import FIFO, ShortestJobFirst
from fairalloc.throughput.registry import GAVEL_POLICIES
from fairalloc.throughput.symmetry import classes_of

REDUCED = {
    "max_min_fairness": (MaxMinFairness, ("weight",)),
    "finish_time_fairness": (FinishTimeFairness, ("steps_remaining", "elapsed")),
    "min_makespan": (MinMakespan, ("steps_remaining",)),
    "max_total_throughput": (MaxTotalThroughput, ()),
}


def _solve(cls, jobs, cluster, *, symmetry, method="auto", **kw):
    return cls(jobs, cluster, **kw).solve(method=method, symmetry=symmetry)


def _expected_classes(jobs, fields):
    """Number of distinct job records over the program's data (None: all distinct)."""
    cols = [jobs.throughput, jobs.scale_factor[:, None]]
    cols += [getattr(jobs, f)[:, None] for f in fields]
    c = np.unique(np.hstack(cols), axis=0).shape[0]
    return None if c == jobs.n else c


# --------------------------------------------------------------------------------------------
# hand-checked example
# --------------------------------------------------------------------------------------------
def test_hand_checked_three_identical_jobs_and_one_other():
    """Jobs A, A, A with throughputs (2, 1) and B with (1, 1) on one worker of each type.

    X^equal gives A 1.5 and B 1, so A's level is (2 x_a + x_b) / 1.5 and B's x_a + x_b.
    Prices (4/11, 2/11): B pays 4/11 per unit of level on type a and 2/11 on b, so it runs on
    b only; A pays 3/11 on either. Both types full: 3 x_a = 1 and 3 x_b + x_B = 1 with
    (2/3 + x_b) / 1.5 = x_B = theta, so theta = 6/11, x_b = 5/33."""
    jobs = fa.Jobs([[2.0, 1.0]] * 3 + [[1.0, 1.0]])
    cluster = fa.Cluster({"a": 1, "b": 1})
    r = _solve(MaxMinFairness, jobs, cluster, symmetry=True)
    assert r.stats.classes == 2
    assert r.stats.path[0] == "symmetry:2"
    assert r.objective == pytest.approx(6 / 11, rel=1e-8)
    np.testing.assert_allclose(r.x, [[1 / 3, 5 / 33]] * 3 + [[0.0, 6 / 11]], atol=1e-8)
    np.testing.assert_allclose(r.prices, [4 / 11, 2 / 11], rtol=1e-6)
    np.testing.assert_allclose(r.metric, [6 / 11] * 4, rtol=1e-8)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert len(r.stage_certificates) == 2
    plain = _solve(MaxMinFairness, jobs, cluster, symmetry=False, method="highs")
    assert plain.stats.classes is None and "symmetry:2" not in plain.stats.path
    assert plain.objective == pytest.approx(r.objective, rel=1e-8)
    np.testing.assert_allclose(plain.prices, r.prices, rtol=1e-6)


def test_hand_checked_makespan_of_identical_jobs():
    """Four jobs of 100 steps at 10 steps/s on 2 GPUs: half a GPU each, makespan 20 s."""
    jobs = fa.Jobs([[10.0]] * 4, steps_remaining=[100.0] * 4)
    r = _solve(MinMakespan, jobs, fa.Cluster({"gpu": 2}), symmetry=True)
    assert r.stats.classes == 1
    assert r.objective == pytest.approx(20.0, rel=1e-9)
    np.testing.assert_allclose(r.x.ravel(), [0.5] * 4, rtol=1e-9)


def test_finish_time_fairness_keeps_the_isolated_share_of_all_jobs():
    """X^isolated splits each type among all n jobs, not among the classes: 4 identical jobs
    on 2 GPUs get 1/2 each, exactly their isolated share, so rho = 1 for every job."""
    jobs = fa.Jobs([[10.0]] * 4, steps_remaining=[100.0] * 4)
    r = _solve(FinishTimeFairness, jobs, fa.Cluster({"gpu": 2}), symmetry=True)
    assert r.stats.classes == 1
    assert r.objective == pytest.approx(1.0, rel=1e-9)
    np.testing.assert_allclose(r.metric, 1.0, rtol=1e-9)


# --------------------------------------------------------------------------------------------
# property: reduced solve == job-by-job solve
# --------------------------------------------------------------------------------------------
@st.composite
def repeated_instances(draw):
    """2-14 jobs drawn from 1-4 job records (throughput row, gang, weight, steps, elapsed),
    1-3 types, some throughputs missing; capacities 1-6 workers per type."""
    k = draw(st.integers(1, 3))
    c = draw(st.integers(1, 4))
    n = draw(st.integers(2, 14))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    caps = np.array(draw(st.lists(st.integers(1, 6), min_size=k, max_size=k)), dtype=float)
    T = rng.lognormal(0.0, 0.8, (c, k))
    T[rng.random((c, k)) < 0.25] = 0.0
    T[:, 0] = np.maximum(T[:, 0], 0.5)
    s = np.minimum(rng.choice([1, 1, 2], c), caps[0])
    w = rng.choice([0.5, 1.0, 2.0], c)
    steps = rng.uniform(1e2, 1e4, c)
    elapsed = rng.choice([0.0, 100.0, 1000.0], c)
    pick = rng.integers(c, size=n)
    jobs = fa.Jobs(T[pick], scale_factor=s[pick], weight=w[pick], steps_remaining=steps[pick],
                   elapsed=elapsed[pick])
    return jobs, fa.Cluster({f"t{j}": caps[j] for j in range(k)})


@pytest.mark.parametrize("name", sorted(REDUCED))
@settings(max_examples=20, deadline=None, derandomize=True)
@given(inst=repeated_instances())
def test_reduced_solve_equals_job_by_job_solve(name, inst):
    jobs, cluster = inst
    cls, fields = REDUCED[name]
    red = _solve(cls, jobs, cluster, symmetry=True)
    plain = _solve(cls, jobs, cluster, symmetry=False, method="highs")
    assert plain.stats.classes is None
    expected = _expected_classes(jobs, fields)
    assert red.stats.classes == expected
    if expected is not None:
        assert red.stats.path[0] == f"symmetry:{expected}"
        assert red.stats.fallbacks == ()
    # certified against the original program (its size: one level row per job)
    assert red.certificate.ok and all(c.ok for c in red.stage_certificates)
    assert red.objective == pytest.approx(plain.objective, rel=1e-6, abs=1e-9)
    if len(red.stage_certificates) > 1:  # the work-conserving stage's optimum too
        assert red.stage_certificates[1].primal_value == pytest.approx(
            plain.stage_certificates[1].primal_value, rel=1e-6, abs=1e-9)
    # every member of a class gets the same allocation
    key = np.hstack([jobs.throughput, jobs.scale_factor[:, None]]
                    + [getattr(jobs, f)[:, None] for f in fields])
    _, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.ravel()
    for cls_id in np.unique(inv):
        rows = red.x[inv == cls_id]
        assert (rows == rows[0]).all()
    # feasible for the original capacity
    load = jobs.scale_factor @ red.x
    assert (load <= cluster.capacity * (1 + 1e-7) + 1e-9).all()
    assert (red.x.sum(axis=1) <= 1 + 1e-7).all()


@pytest.mark.parametrize("name", sorted(GAVEL_POLICIES))
@settings(max_examples=6, deadline=None, derandomize=True)
@given(inst=repeated_instances())
def test_every_gavel_policy_agrees_with_the_job_by_job_solve(name, inst):
    """Every registered policy (reduced or not) gives the objective of the job-by-job solve;
    the order-based ones and min cost are never reduced (water-filling is:
    ``tests/test_water_filling_symmetry.py``)."""
    jobs, cluster = inst
    spec = GAVEL_POLICIES[name]
    extra = {"cost": np.arange(1.0, cluster.num_types + 1)} if "cost" in spec.needs else {}

    def run(symmetry):
        return spec.builder(jobs, cluster, **extra).solve(symmetry=symmetry)

    on, off = run(True), run(False)
    assert on.certificate.ok and off.stats.classes is None
    assert on.objective == pytest.approx(off.objective, rel=1e-6, abs=1e-9)
    if name not in REDUCED and name != "water_filling":
        assert on.stats.classes is None
        assert not any(p.startswith("symmetry") for p in on.stats.path)


# --------------------------------------------------------------------------------------------
# what is and is not reduced
# --------------------------------------------------------------------------------------------
def test_near_ties_never_form_exact_classes():
    """Exact classes never merge near-ties; near ones merge only through the near step,
    certified on the original program (``tests/test_throughput_near_symmetry.py``)."""
    t = 3.0
    near = np.nextafter(t, np.inf)  # one ulp apart
    jobs = fa.Jobs([[t, 1.0], [near, 1.0], [t, 1.0]])
    cluster = fa.Cluster({"a": 1, "b": 1})
    off = fa.throughput.Tuning(near_tie_share=0.0)
    r = MaxMinFairness(jobs, cluster).solve(symmetry=True, tuning=off)
    assert r.stats.classes == 2  # jobs 0 and 2 merge, job 1 stays apart
    only_near = fa.Jobs([[t, 1.0], [near, 1.0]])
    r2 = MaxMinFairness(only_near, cluster).solve(symmetry=True, tuning=off)
    assert r2.stats.classes is None and r2.stats.path[0] != "symmetry:1"
    r3 = _solve(MaxMinFairness, jobs, cluster, symmetry=True)
    assert r3.stats.path[0] == "near-symmetry:1" and r3.certificate.ok


def test_weights_split_classes():
    jobs = fa.Jobs([[1.0]] * 4, weight=[1.0, 1.0, 2.0, 2.0])
    r = _solve(MaxMinFairness, jobs, fa.Cluster({"gpu": 3}), symmetry=True)
    assert r.stats.classes == 2
    # weight 2 gets twice the level's share: 1 x + 2 x ... with 2 x1 + 2 x2 = 3, x2 = 2 x1
    np.testing.assert_allclose(r.x.ravel(), [0.5, 0.5, 1.0, 1.0], rtol=1e-8)


@pytest.mark.parametrize("cls", [FIFO, ShortestJobFirst])
def test_order_based_policies_are_not_reduced(cls):
    jobs = fa.Jobs([[1.0, 2.0]] * 5, steps_remaining=[10.0] * 5)
    r = _solve(cls, jobs, fa.Cluster({"a": 2, "b": 1}), symmetry=True)
    assert r.stats.classes is None
    assert not any(p.startswith("symmetry") for p in r.stats.path)


def test_min_cost_is_not_reduced_water_filling_is():
    jobs = fa.Jobs([[1.0, 2.0]] * 5)
    cl = fa.Cluster({"a": 2, "b": 1})
    assert MinCost(jobs, cl, [1.0, 2.0]).solve().stats.classes is None
    assert WaterFilling(jobs, cl).solve().stats.classes == 1  # (issue #28; main: None)


def test_job_pairs_are_not_reduced():
    jobs = fa.Jobs([[1.0, 2.0]] * 4)
    pairs = JobPairs([[0, 1]], [[[0.6, 0.6], [1.2, 1.2]]])
    r = MaxMinFairness(jobs, fa.Cluster({"a": 2, "b": 1}), pairs=pairs).solve()
    assert r.stats.classes is None and r.certificate.ok


def test_no_repeats_no_reduction():
    rng = np.random.default_rng(0)
    jobs = fa.Jobs(rng.random((50, 3)) + 0.1)
    r = fa.max_min_fairness(jobs, fa.Cluster({"a": 5, "b": 5, "c": 5}))
    assert r.stats.classes is None
    assert not any(p.startswith("symmetry") for p in r.stats.path)


def test_placement_sensitivity_is_reduced_and_agrees():
    T = np.array([[4.0, 2.0]] * 6 + [[3.0, 3.0]] * 2)
    U = 0.5 * T
    cl = fa.Cluster({"a": 3, "b": 2})
    jobs = fa.Jobs(T, scale_factor=[2] * 6 + [1] * 2)
    red = _solve(MaxMinFairness, jobs, cl, symmetry=True, unconsolidated_throughput=U,
                 consolidated_capacity=[2, 2])
    plain = _solve(MaxMinFairness, jobs, cl, symmetry=False, method="highs",
                   unconsolidated_throughput=U, consolidated_capacity=[2, 2])
    assert red.stats.classes == 2 and red.certificate.ok
    assert red.objective == pytest.approx(plain.objective, rel=1e-7)
    U2 = U.copy()
    U2[0, 0] = 1.0  # one job's unconsolidated row differs: it leaves its class
    red2 = _solve(MaxMinFairness, jobs, cl, symmetry=True, unconsolidated_throughput=U2)
    assert red2.stats.classes == 3


def test_composed_and_cvxpy_are_not_reduced():
    pytest.importorskip("cvxpy")
    jobs = fa.Jobs([[1.0, 2.0]] * 4)
    cl = fa.Cluster({"a": 2, "b": 1})
    r = MaxMinFairness(jobs, cl).solve(method="cvxpy", work_conserving=False)
    assert r.stats.classes is None


def test_inputs_are_not_mutated():
    T = np.array([[2.0, 1.0]] * 3 + [[1.0, 1.0]])
    steps = np.array([5.0, 5.0, 5.0, 7.0])
    jobs = fa.Jobs(T, steps_remaining=steps)
    cluster = fa.Cluster({"a": 1, "b": 1})
    before = (jobs.throughput.copy(), jobs.scale_factor.copy(), jobs.weight.copy(),
              jobs.steps_remaining.copy(), cluster.capacity.copy(), T.copy(), steps.copy())
    for cls in (MaxMinFairness, FinishTimeFairness, MinMakespan, MaxTotalThroughput):
        _solve(cls, jobs, cluster, symmetry=True)
    after = (jobs.throughput, jobs.scale_factor, jobs.weight, jobs.steps_remaining,
             cluster.capacity, T, steps)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_symmetry_switch_is_validated():
    b = MaxMinFairness(fa.Jobs([[1.0]] * 2), fa.Cluster({"gpu": 1}))
    with pytest.raises(InputError, match="symmetry"):
        b.solve(symmetry="yes")
    with pytest.raises(InputError, match="symmetry"):
        fa.max_min_fairness(fa.Jobs([[1.0]] * 2), fa.Cluster({"gpu": 1}), symmetry=None)


def _max_min_lp(T: np.ndarray, members: np.ndarray, cap: np.ndarray) -> LinearProgram:
    """``max t`` s.t. ``t <= T_i x_i`` (level), ``sum_k x_ik <= 1`` (time) per row and
    ``sum_i members_i x_ik <= cap_k`` (capacity): the job-by-job program when every row has one
    member, the program over symmetry classes with multiplicities otherwise."""
    n, k = T.shape
    rows = np.arange(n)
    level = sp.hstack([-sp.block_diag([row[None, :] for row in T]), sp.csr_matrix(np.ones((n, 1)))])
    time = sp.hstack([sp.kron(sp.eye(n), np.ones((1, k))), sp.csr_matrix((n, 1))])
    capacity = sp.hstack([sp.kron(members[None, :], sp.eye(k)), sp.csr_matrix((k, 1))])
    A = sp.vstack([level, time, capacity]).tocsr()
    assert A.shape == (2 * n + k, n * k + 1) and rows.size == n
    return LinearProgram.build(np.r_[np.zeros(n * k), -1.0], A, -np.inf,
                               np.r_[np.zeros(n), np.ones(n), cap])


def test_a_wrong_dual_expansion_fails_the_original_programs_certificate():
    """The reduced program's duals, expanded to the original program, are certified on it
    (`fairalloc.certificates.lp_certificate`): per-job rows' duals divided by the class size
    pass, undivided ones fail -- so a wrong expansion can never be returned as certified (the
    policy then solves job by job: ``symmetry->exact``)."""
    T = np.array([[2.0, 1.0]] * 3 + [[1.0, 1.0]])
    cap = np.array([1.0, 1.0])
    cl = classes_of((T,), [])
    red = _max_min_lp(T[cl.representative], cl.counts.astype(float), cap)
    sol = linprog(red.c, A_ub=red.A, b_ub=red.row_upper, bounds=(0, None), method="highs")
    assert sol.status == 0
    c, k = cl.num_classes, T.shape[1]
    y = sol.ineqlin.marginals  # <= 0 on these <= rows, as lp_certificate reads them
    x = np.r_[sol.x[:-1].reshape(c, k)[cl.inverse].ravel(), sol.x[-1]]
    orig = _max_min_lp(T, np.ones(T.shape[0]), cap)

    def expanded(divide: bool) -> np.ndarray:
        per_job = y[: 2 * c].reshape(2, c)[:, cl.inverse]
        if divide:
            per_job = per_job / cl.counts[cl.inverse]
        return np.r_[per_job.ravel(), y[2 * c:]]

    right = lp_certificate(orig, x, expanded(True))
    # by hand: the three [2, 1] jobs share type a (2/3 each) plus 1/12 of b; the [1, 1] job
    # gets 3/4 of b: every level is 3/4
    assert right.ok and right.primal_value == pytest.approx(-0.75, rel=1e-9)
    wrong = lp_certificate(orig, x, expanded(False))
    # (undivided level duals price the level column at -1 + 3 y_c + y_4 != 0: dual infeasible)
    assert not wrong.ok and wrong.dual_residual > 100 * wrong.feas_tol
    # the library's own symmetric solve of these jobs passes the same kind of certificate
    r = _solve(MaxMinFairness, fa.Jobs(T), fa.Cluster({"a": 1, "b": 1}), symmetry=True)
    assert r.stats.classes == 2 and r.certificate.ok and r.stats.fallbacks == ()


def test_original_certificate_is_the_original_programs():
    """The result's certificate is that of the original LP (one time and one level row per
    job): its bound is the job-by-job solve's."""
    jobs = fa.Jobs([[2.0, 1.0]] * 30 + [[1.0, 1.0]] * 10)
    cl = fa.Cluster({"a": 10, "b": 10})
    r = _solve(MaxMinFairness, jobs, cl, symmetry=True, method="highs")
    assert r.stats.classes == 2 and r.certificate.ok
    assert r.certificate.primal_value == pytest.approx(r.objective, rel=1e-12)
    assert r.certificate.dual_bound == pytest.approx(r.objective, rel=1e-6)
    # the same level, certified on the n-row program without any reduction
    plain = _solve(MaxMinFairness, jobs, cl, symmetry=False, method="highs")
    assert r.certificate.dual_bound == pytest.approx(plain.certificate.dual_bound, rel=1e-6)


@pytest.mark.parametrize("cls", [MaxMinFairness, FinishTimeFairness])
def test_structured_solvers_run_on_classes_with_multiplicities(cls):
    """Above the structured solvers' range (64 rows) the reduced program goes through the
    structured level / floor / Dinkelbach solvers with capacity weights c s; the result equals
    the job-by-job LP's and is certified against the original program."""
    rng = np.random.default_rng(7)
    c, n = 90, 400
    T = rng.lognormal(0.0, 0.8, c)[:, None] * np.c_[np.ones(c), rng.uniform(0.1, 0.9, (c, 2))]
    s = rng.choice([1, 2, 4], c)
    steps = rng.uniform(1e3, 1e5, c)
    pick = np.r_[np.arange(c), rng.integers(c, size=n - c)]
    jobs = fa.Jobs(T[pick], scale_factor=s[pick], steps_remaining=steps[pick])
    cl = fa.Cluster({"a": n // 4, "b": n // 4, "c": n // 4})
    red = _solve(cls, jobs, cl, symmetry=True)
    plain = _solve(cls, jobs, cl, symmetry=False, method="highs")
    assert red.stats.classes == c
    assert red.certificate.ok and all(cert.ok for cert in red.stage_certificates)
    assert red.objective == pytest.approx(plain.objective, rel=1e-6)
    assert red.stage_certificates[1].primal_value == pytest.approx(
        plain.stage_certificates[1].primal_value, rel=1e-6)


def test_a_failing_reduced_program_falls_back_to_the_job_by_job_solve():
    """A solver failure on the reduced program only (simulated by a backend, passed as
    ``backend=``, that fails every LP smaller than the original program's 4 x 2 allocation
    columns) is not the caller's error: the policy is solved job by job and stats.fallbacks
    names the failure."""
    from fairalloc.backends import HighsBackend
    from fairalloc.errors import SolverError

    failed: list[tuple[int, int]] = []

    class FailsOnTheReducedProgram(HighsBackend):
        def solve_lp(self, lp, **kwargs):  # type: ignore[no-untyped-def]
            if lp.shape[1] < 4 * 2:  # the 2-class program (the original has 8 x's)
                failed.append(lp.shape)
                raise SolverError("simulated failure", backend="highs", status="error")
            return super().solve_lp(lp, **kwargs)

    jobs = fa.Jobs([[2.0, 1.0]] * 3 + [[1.0, 1.0]])
    r = MaxMinFairness(jobs, fa.Cluster({"a": 1, "b": 1})).solve(
        symmetry=True, backend=FailsOnTheReducedProgram())
    assert failed  # the reduced program was tried, and failed
    assert r.stats.classes is None
    assert r.stats.fallbacks[0].startswith("symmetry->exact: the reduced program failed")
    assert r.certificate.ok and r.objective == pytest.approx(6 / 11, rel=1e-8)


@pytest.mark.parametrize("normalized", [False, True])
def test_total_throughput_with_a_work_conserving_stage(normalized):
    """A linear first stage kept as one summed row (coefficients c_r g_r in the reduced
    program, g_m in the original) and certified on the original work-conserving program."""
    rng = np.random.default_rng(3)
    T = rng.lognormal(0.0, 0.8, (4, 3))
    pick = rng.integers(4, size=30)
    jobs = fa.Jobs(T[pick], scale_factor=rng.choice([1, 2], 4)[pick])
    cl = fa.Cluster({"a": 5, "b": 4, "c": 3})
    runs = []
    for symmetry in (True, False):
        runs.append(fa.max_total_throughput(jobs, cl, normalized=normalized,
                                            work_conserving=True, method="highs",
                                            symmetry=symmetry))
    red, plain = runs
    assert red.stats.classes == 4 and plain.stats.classes is None
    assert all(c.ok for c in red.stage_certificates) and len(red.stage_certificates) == 2
    assert red.objective == pytest.approx(plain.objective, rel=1e-9)
    assert red.stage_certificates[1].primal_value == pytest.approx(
        plain.stage_certificates[1].primal_value, rel=1e-7)


@pytest.mark.parametrize("unit", [1e-9, 1e9])
def test_reduced_solve_is_unit_free(unit):
    """Throughputs and steps in other units (x1e-9, x1e9): the reduced solve finds the same
    classes, objective and (normalised) work-conserving optimum, both stages
    certified on the original program (allocations may differ: the second stage's optimum
    is not unique)."""
    rng = np.random.default_rng(1)
    rows = rng.lognormal(0.0, 0.8, (6, 3))
    pick = rng.integers(6, size=300)
    cl = fa.Cluster({"a": 40, "b": 30, "c": 20})
    steps = (np.arange(300) % 3 + 1) * 1e3
    for fn in (fa.max_min_fairness, fa.finish_time_fairness):
        ref = fn(fa.Jobs(rows[pick], steps_remaining=steps), cl)
        r = fn(fa.Jobs(rows[pick] * unit, steps_remaining=steps * unit), cl)
        assert r.stats.classes == ref.stats.classes is not None
        assert all(c.ok for c in r.stage_certificates)
        assert r.objective == pytest.approx(ref.objective, rel=1e-8)
        assert r.stage_certificates[1].primal_value == pytest.approx(  # normalised: unit free
            ref.stage_certificates[1].primal_value, rel=1e-6)
