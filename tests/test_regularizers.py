"""Tests of the makespan regulariser as a standalone composable term (Shockwave Eq. 10-11).

Each combination the issue asks for is checked on a small case: with the volatile Fisher
market (FisherMarket.add_objective_term), with a Gavel effective-throughput builder, and with
the plan (its continuous relaxation and its integer objective).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import fairalloc as fa
from fairalloc.throughput import MaxMinFairness


def market_case(seed, N=4, M=2, T=3, D=120.0):
    """Single-regime jobs with no finished epoch: the plan's relaxation is the VFM."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, M + 1, N)
    d = rng.uniform(50, 200, N)
    E = rng.uniform(60, 100, N)
    jobs = [fa.PlanJob(workers=int(w[i]), total_epochs=float(E[i]), done_epochs=0.0, ftf=1.0,
                       regimes=[(float(d[i]), float(E[i]))]) for i in range(N)]
    u = np.broadcast_to((D / (d * w * E))[:, None, None], (N, 1, T)).copy()
    return jobs, w, d * E, u  # seconds to finish = d * E


def test_value_matches_the_estimator():
    """At a fixed allocation the term is -(lam/Z0) * makespan_lower_bound (forecast.py)."""
    rem = np.array([100.0, 300.0, 50.0])
    work = np.array([50.0, 20.0, 80.0])
    w = np.array([1, 2, 1])
    term = fa.makespan_regularizer(cp.Constant(work), rem, 2, workers=w, lam=0.3)
    H = fa.makespan_lower_bound(np.maximum(rem - work, 0.0), 2, workers=w)
    assert float(term.value) == pytest.approx(-0.3 / fa.makespan_normalizer(rem) * H)
    # hand-computed: R = (50, 280, 0); H = max((50 + 560 + 0)/2, 280) = 305; Z0 = 450
    assert float(term.value) == pytest.approx(-0.3 * 305 / 450)
    up = fa.makespan_regularizer(cp.Constant(work), rem, 2, workers=w, lam=0.3,
                                 kind="max_remaining")
    assert float(up.value) == pytest.approx(-0.3 * 280)
    given = fa.makespan_regularizer(cp.Constant(work), rem, 2, workers=w, lam=0.3, z0=1000.0)
    assert float(given.value) == pytest.approx(-0.3 * 305 / 1000)


@pytest.mark.parametrize("seed", range(2))
def test_with_the_volatile_fisher_market(seed):
    """VFM (with gang caps) + term == the plan's relaxation with the same lam (x N*M)."""
    N, M, T = 4, 2, 3
    jobs, w, P, u = market_case(seed, N, M, T)
    lam = 0.5
    market = fa.FisherMarket(u, supply=np.full((1, T), float(M)))
    market.add_constraint(market.x <= np.broadcast_to(w[:, None], (N, T)).astype(float))
    # utility is epoch progress: seconds of work done = (d * E) * U
    work = cp.multiply(P, market.utility_expr)
    market.add_objective_term(fa.makespan_regularizer(work, P, M, workers=w, lam=N * M * lam))
    res = market.solve(method="cvxpy")
    relax = fa.relax_plan(jobs, M, rounds=T, k=0.0, lam=lam)
    assert res.objective / (N * M) == pytest.approx(relax.objective, rel=1e-6)
    np.testing.assert_allclose(res.prices[0] / (N * M), relax.prices, rtol=1e-4)
    H = fa.makespan_lower_bound(np.maximum(P - P * res.utility, 0.0), M, workers=w)
    assert H == pytest.approx(relax.makespan_bound, rel=1e-5)


def test_regulariser_shortens_the_makespan_bound_in_the_market():
    """One job much longer than the rest: H is its remaining time, and lam buys it GPUs."""
    N, M, T = 3, 2, 3
    _, w, P, u = market_case(1, N, M, T)
    w = np.ones(N, dtype=int)
    P = P * np.array([20.0, 1.0, 1.0])  # job 0: 20x the work
    u = u * np.array([1 / 20, 1.0, 1.0])[:, None, None]
    bounds = []
    for lam in (0.0, 5.0, 50.0):
        market = fa.FisherMarket(u, supply=np.full((1, T), float(M)))
        work = cp.multiply(P, market.utility_expr)
        market.add_objective_term(fa.makespan_regularizer(work, P, M, workers=w, lam=lam))
        res = market.solve(method="cvxpy")
        bounds.append(fa.makespan_lower_bound(np.maximum(P - P * res.utility, 0.0), M,
                                              workers=w))
    tol = 1e-7 * bounds[0]
    assert bounds[0] >= bounds[1] - tol and bounds[1] >= bounds[2] - tol
    assert bounds[0] > bounds[2] + 1.0
    # lam = 0 leaves the plain market
    plain = fa.volatile_fisher_market(u, supply=np.full((1, T), float(M)))
    market = fa.FisherMarket(u, supply=np.full((1, T), float(M)))
    market.add_objective_term(fa.makespan_regularizer(
        cp.multiply(P, market.utility_expr), P, M, workers=w, lam=0.0))
    assert market.solve(method="cvxpy").objective == pytest.approx(plain.objective, rel=1e-6)


def test_with_gavel_max_min_fairness():
    """Gavel's max-min LP + the term: the work done in a window of L seconds is L * tp / iso."""
    throughput = np.array([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    steps = np.array([4e5, 1e5, 2e6])
    jobs = fa.Jobs(throughput, steps_remaining=steps)
    cluster = fa.Cluster({"v100": 1, "k80": 1})
    iso = throughput.max(axis=1)  # isolated rate: the job alone on its best worker
    remaining = steps / iso
    L = 3600.0
    results = {}
    for lam in (0.0, 50.0):
        b = MaxMinFairness(jobs, cluster)
        base = b.objective
        term = fa.makespan_regularizer(L * cp.multiply(1.0 / iso, b.effective_throughput),
                                       remaining, 2, lam=lam)
        b.add_objective_term(term)
        r = b.solve(method="cvxpy", work_conserving=False)
        work = L * r.effective_throughput / iso
        H = fa.makespan_lower_bound(np.maximum(remaining - work, 0.0), 2)
        # the composed objective is the policy's objective plus the term, at the solution
        assert r.objective == pytest.approx(float(base.value) + float(term.value), rel=1e-6,
                                            abs=1e-9)
        results[lam] = (H, r.x)
    assert results[50.0][0] < results[0.0][0] - 1.0  # the longest job gets more time
    plain = fa.max_min_fairness(jobs, cluster)
    np.testing.assert_allclose(results[0.0][1].sum(axis=1), plain.x.sum(axis=1), atol=1e-5)


def test_with_the_plan():
    """The integer plan's makespan part equals the term at the plan's work (D * rounds)."""
    jobs = [fa.PlanJob(workers=w, total_epochs=50.0, done_epochs=5.0 * w, ftf=1.0 + 0.2 * w,
                       regimes=[(30.0 * w, 20.0), (45.0, 50.0 - 5.0 * w - 20.0)])
            for w in (1, 2, 1, 3)]
    plan = fa.plan_schedule(jobs, 3, rounds=5, lam=2.0)
    P = np.array([j.remaining_seconds for j in jobs])
    w = np.array([j.workers for j in jobs])
    term = fa.makespan_regularizer(cp.Constant(120.0 * plan.rounds_given), P, 3, workers=w,
                                   lam=2.0)
    assert plan.objective == pytest.approx(plan.welfare + float(term.value), rel=1e-12)
    assert plan.makespan_bound == pytest.approx(
        fa.makespan_lower_bound(np.maximum(P - 120.0 * plan.rounds_given, 0), 3, workers=w))


def test_term_is_concave_and_composes_with_affine_work():
    x = cp.Variable(3, nonneg=True)
    term = fa.makespan_regularizer(100.0 * x, [100.0, 200.0, 300.0], 2)
    assert term.is_concave() and term.shape == ()
    prob = cp.Problem(cp.Maximize(term), [cp.sum(x) <= 2, x <= 1])
    prob.solve(solver=cp.CLARABEL)
    # H = max(sum R / 2, max R): best to spend on the longest jobs
    assert x.value[2] == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"work": np.array([1.0, 2.0])}, "work"),
        ({"work": cp.Constant([1.0, 2.0, 3.0])}, "work"),
        ({"work": cp.square(cp.Variable(2))}, "work"),
        ({"remaining": [-1.0, 2.0]}, "remaining"),
        ({"remaining": [np.nan, 2.0]}, "remaining"),
        ({"remaining": [0.0, 0.0]}, "remaining"),  # Z0 = 0
        ({"num_gpus": 0}, "num_gpus"),
        # fuzz (seed 8): a denormal GPU count made the term -inf; a default gang of one
        # worker does not fit in less than one GPU
        ({"num_gpus": 5e-324}, "num_gpus"),
        ({"num_gpus": 0.5}, "num_gpus"),
        ({"workers": [1, 3]}, "workers"),
        ({"workers": [1.5, 1]}, "workers"),
        ({"lam": -1.0}, "lam"),
        ({"z0": 0.0}, "z0"),
        ({"kind": "gavel"}, "kind"),
    ],
)
def test_bad_inputs(kwargs, argument):
    args = {"work": cp.Constant([1.0, 2.0]), "remaining": [10.0, 20.0], "num_gpus": 2}
    args.update(kwargs)
    work, rem, m = args.pop("work"), args.pop("remaining"), args.pop("num_gpus")
    with pytest.raises(fa.InputError) as err:
        fa.makespan_regularizer(work, rem, m, **args)
    assert err.value.argument == argument
