"""Tests of the Shockwave planner (fairalloc.schedule): semantics, exactness, properties.

The reference implementation below is deliberately independent of fairalloc.schedule: it
walks a job's regimes one at a time in plain Python and enumerates every binary schedule of a
tiny instance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc as fa

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------
# independent reference
# --------------------------------------------------------------------------------------------
def ref_advance(regimes, seconds):
    """Epochs done in ``seconds`` walking the regimes in order (plain Python)."""
    done = 0.0
    left = seconds
    for sec, ep in regimes:
        if left <= 0:
            break
        span = sec * ep
        if left >= span:
            done += ep
            left -= span
        else:
            done += left / sec
            left = 0.0
    return done


def ref_seconds(regimes, epochs):
    """Seconds needed to finish ``epochs`` epochs along the regimes."""
    need, total = epochs, 0.0
    for sec, ep in regimes:
        if need <= 0:
            break
        take = min(ep, need)
        total += take * sec
        need -= take
    return total


def ref_tables(jobs, T, D, scenarios=False):
    """UTIL_j(n), R_j(n) for n = 0..T and the rounds each job needs (expected over scenarios)."""
    N = len(jobs)
    util = np.zeros((N, T + 1))
    rem = np.zeros((N, T + 1))
    fin = np.zeros(N, dtype=int)
    for i, job in enumerate(jobs):
        trajs = job.scenarios if scenarios and job.scenarios else [job.regimes]
        for traj in trajs:
            left = job.total_epochs - job.done_epochs
            P = ref_seconds(traj, left)
            rounds = math.ceil(P / D - 1e-9)
            fin[i] = max(fin[i], rounds)
            for n in range(T + 1):
                adv = min(ref_advance(traj, n * D), left)
                u = 1.0 if n >= rounds else (job.done_epochs + adv) / job.total_epochs
                util[i, n] += u / len(trajs)
                rem[i, n] += max(P - n * D, 0.0) / len(trajs)
    return util, rem, fin


def ref_objective(jobs, x, M, D=120.0, k=5.0, lam=1e-3, eta=0.0, floor=1e-6,
                  makespan="paper", scenarios=False):
    """Eq. 11 (plus restart penalty) for one schedule or a stack of them (..., N, T)."""
    x = np.asarray(x, dtype=bool)
    T = x.shape[-1]
    N = len(jobs)
    util, rem, _ = ref_tables(jobs, T, D, scenarios)
    n = x.sum(axis=-1)
    rows = np.arange(N)
    rho = np.array([j.ftf for j in jobs])
    w = np.array([j.workers for j in jobs])
    welfare = (rho ** k * np.log(np.maximum(util[rows, n], floor))).sum(axis=-1) / (N * M)
    R = rem[rows, n]
    if makespan == "paper":
        H = np.maximum((R * w).sum(axis=-1) / M, R.max(axis=-1))
        coef = lam / rem[:, 0].sum() if rem[:, 0].sum() > 0 else 0.0
    else:
        H = R.max(axis=-1)
        coef = lam
    running = np.array([j.running for j in jobs])
    prev = np.concatenate([np.broadcast_to(running[:, None], x.shape[:-1] + (1,)),
                           x[..., :-1]], axis=-1)
    restarts = (x & ~prev).sum(axis=(-1, -2))
    return welfare - coef * H - eta * restarts


def feasible_mask(jobs, X, M, D=120.0, wc=True):
    """Which of the schedules X (S, N, T) satisfy capacity, useful rounds and (optionally) WC."""
    T = X.shape[-1]
    w = np.array([j.workers for j in jobs])
    _, _, fin = ref_tables(jobs, T, D)
    load = np.einsum("j,sjt->st", w, X)
    ok = (load <= M).all(axis=1)
    ok &= (X.sum(axis=2) <= np.minimum(fin, T)).all(axis=1)
    if wc:
        before = np.cumsum(X, axis=2) - X
        idle = M - load
        viol = (~X) & (before < fin[None, :, None]) & (w[None, :, None] <= idle[:, None, :])
        ok &= ~viol.any(axis=(1, 2))
    return ok


def brute_force(jobs, M, T, wc=True, **kw):
    """Optimal value over every binary schedule (tiny instances only)."""
    N = len(jobs)
    codes = np.arange(2 ** (N * T))[:, None]
    X = ((codes >> np.arange(N * T)) & 1).astype(bool).reshape(-1, N, T)
    X = X[feasible_mask(jobs, X, M, wc=wc)]
    values = ref_objective(jobs, X, M, **kw)
    return float(values.max()), X[int(np.argmax(values))]


def wc_violated(jobs, x, M, D=120.0):
    return not feasible_mask(jobs, np.asarray(x, dtype=bool)[None], M, D, wc=True)[0]


def random_jobs(rng, N, max_workers, unit=False):
    jobs = []
    for _ in range(N):
        E = float(rng.integers(5, 40))
        F = float(rng.integers(0, int(E)))
        left = E - F
        K = int(rng.integers(1, 4))
        cuts = np.sort(rng.uniform(0, left, K - 1))
        eps = np.diff(np.concatenate([[0.0], cuts, [left]]))
        secs = rng.uniform(20, 200, K)
        jobs.append(fa.PlanJob(
            workers=1 if unit else int(rng.integers(1, max_workers + 1)), total_epochs=E,
            done_epochs=F, ftf=float(rng.uniform(0.5, 2.0)),
            regimes=list(zip(secs.tolist(), eps.tolist(), strict=True)),
            running=bool(rng.integers(0, 2))))
    return jobs


# --------------------------------------------------------------------------------------------
# PlanJob and UTIL semantics
# --------------------------------------------------------------------------------------------
def test_planjob_contract_example():
    job = fa.PlanJob(workers=2, total_epochs=100, done_epochs=20, ftf=1.3,
                     regimes=[(60.0, 30), (30.0, 50)])
    assert job.remaining_seconds == pytest.approx(30 * 60 + 50 * 30)
    assert job.remaining_epochs == 80
    # two epochs per 120 s round in the first regime, four in the second, capped at E
    got = job.epochs_advanced([0.0, 120.0, 1800.0, 1920.0, 3300.0, 1e6])
    np.testing.assert_allclose(got, [0, 2, 30, 34, 80, 80])
    assert job.regimes == ((60.0, 30.0), (30.0, 50.0))


def test_planjob_overshooting_forecast_is_capped():
    job = fa.PlanJob(workers=1, total_epochs=10, done_epochs=4, ftf=1.0,
                     regimes=[(10.0, 4), (20.0, 5)])  # covers 9 > 6 epochs left
    assert job.remaining_seconds == pytest.approx(4 * 10 + 2 * 20)
    np.testing.assert_allclose(job.epochs_advanced([40.0, 80.0, 500.0]), [4, 6, 6])


def test_single_job_hand_worked_plan():
    """The API-contract job alone: 20 rounds take it 30 epochs at 2/round then 20 at 4/round."""
    job = fa.PlanJob(workers=2, total_epochs=100, done_epochs=20, ftf=1.3,
                     regimes=[(60.0, 30), (30.0, 50)])
    for method in ("fast", "milp"):
        plan = fa.plan_schedule([job], 2, rounds=20, method=method)
        assert plan.schedule.all()  # work conservation: nothing else to run
        assert plan.utility[0] == pytest.approx(0.70)
        assert plan.remaining[0] == pytest.approx(3300 - 2400)
        assert plan.makespan_bound == pytest.approx(900.0)  # max(2 * 900 / 2, 900)
        assert plan.z0 == pytest.approx(3300.0)
        expected = 1.3 ** 5 * math.log(0.70) / (1 * 2) - 1e-3 / 3300 * 900
        assert plan.objective == pytest.approx(expected, rel=1e-12)
        # regime decomposition: rounds 0-14 in regime 0 (1800 s), 15-19 in regime 1
        assert plan.regime[0].tolist() == [0] * 15 + [1] * 5
        assert plan.gap <= 1e-12
        assert plan.status == "optimal"


def test_ftf_weight_decides_who_gets_the_gpu():
    """One GPU, one round: the job with the larger rho^k gets it (hand-computed values)."""
    a = fa.PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=2.0, regimes=[(60.0, 90)])
    b = fa.PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=1.0, regimes=[(60.0, 90)])
    plan = fa.plan_schedule([b, a], 1, rounds=1, lam=0.0)
    assert plan.schedule[:, 0].tolist() == [False, True]
    expected = (1.0 * math.log(0.10) + 32.0 * math.log(0.12)) / 2
    assert plan.objective == pytest.approx(expected, rel=1e-12)
    # with k = 0 the weights are equal and both choices tie
    tie = fa.plan_schedule([b, a], 1, rounds=1, lam=0.0, k=0.0)
    assert tie.objective == pytest.approx((math.log(0.10) + math.log(0.12)) / 2, rel=1e-12)


def test_fresh_job_uses_util_floor():
    """A job with no finished epoch that gets no round costs rho^k log(util_floor)/(NM)."""
    jobs = [fa.PlanJob(workers=1, total_epochs=10, done_epochs=0, ftf=1.0,
                       regimes=[(600.0, 10)]) for _ in range(2)]
    plan = fa.plan_schedule(jobs, 1, rounds=1, lam=0.0, k=1.0, util_floor=1e-4)
    assert plan.rounds_given.sum() == 1
    assert plan.objective == pytest.approx((math.log(0.02) + math.log(1e-4)) / 2, rel=1e-12)


def test_finished_job_is_never_scheduled():
    jobs = [fa.PlanJob(workers=1, total_epochs=10, done_epochs=10, ftf=1.0, regimes=[]),
            fa.PlanJob(workers=1, total_epochs=10, done_epochs=5, ftf=1.0,
                       regimes=[(120.0, 5)])]
    plan = fa.plan_schedule(jobs, 2, rounds=8)
    assert plan.rounds_given.tolist() == [0, 5]  # job 1 needs exactly 5 rounds
    assert plan.utility.tolist() == [1.0, 1.0]
    assert plan.makespan_bound == 0.0


@pytest.mark.parametrize("method", ["fast", "milp", "auto"])
def test_all_jobs_finished(method):
    jobs = [fa.PlanJob(workers=1, total_epochs=5, done_epochs=5, ftf=1.0, regimes=[])] * 3
    plan = fa.plan_schedule(jobs, 2, rounds=3, method=method, lam=1.0, restart_penalty=0.1)
    assert not plan.schedule.any() and plan.objective == 0.0 and plan.gap == 0.0
    assert plan.makespan_bound == 0.0 and plan.status == "optimal"


def test_tables_match_reference():
    """The per-count tables UTIL_j(n), R_j(n) and the rounds each job needs, read through
    public results: a job alone in a window of n rounds gets min(n, its useful rounds) (its
    utility only grows and work conservation runs it), so the plan reports UTIL_j(n) and
    R_j(n), its z0 is R_j(0), and a window longer than the job gets exactly the rounds it
    needs."""
    rng = np.random.default_rng(5)
    jobs = random_jobs(rng, 6, 3)
    T, D = 7, 90.0
    util, rem, fin = ref_tables(jobs, T, D)
    opts = {"round_duration": D, "k": 2.0, "lam": 1e-3, "method": "fast"}
    for j, job in enumerate(jobs):
        for n in range(1, T + 1):
            plan = fa.plan_schedule([job], 4, rounds=n, **opts)
            assert plan.rounds_given[0] == min(n, fin[j])
            assert plan.utility[0] == pytest.approx(util[j, n], rel=1e-12, abs=1e-12)
            assert plan.remaining[0] == pytest.approx(rem[j, n], rel=1e-12, abs=1e-9)
            assert plan.z0 == pytest.approx(rem[j, 0], rel=1e-12)
        whole = fa.plan_schedule([job], 4, rounds=int(fin[j]) + 1, **opts)
        assert whole.rounds_given[0] == fin[j]
    # Z0 is the forecast engine's normaliser of the remaining run times
    plan = fa.plan_schedule(jobs, 4, rounds=T, **opts)
    assert plan.z0 == pytest.approx(fa.makespan_normalizer(rem[:, 0]))


# --------------------------------------------------------------------------------------------
# exactness: brute force on tiny instances (4 jobs, 4 rounds, 3 GPUs)
# --------------------------------------------------------------------------------------------
OPTIONS = [
    {"lam": 1e-3},
    {"lam": 0.0},
    {"lam": 1.0, "makespan": "max_remaining"},
    {"lam": 50.0},
    {"lam": 1e-3, "eta": 1e-3},
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                   o.items()))
def test_brute_force_unit_gangs(seed, opts):
    """Unit gangs: both the fast path and the MILP are exactly optimal."""
    rng = np.random.default_rng(100 + seed)
    jobs = random_jobs(rng, 4, 1, unit=True)
    kw = {"lam": opts["lam"], "makespan": opts.get("makespan", "paper"),
          "eta": opts.get("eta", 0.0)}
    best, _ = brute_force(jobs, 3, 4, **kw)
    for method in ("fast", "milp"):
        plan = fa.plan_schedule(jobs, 3, rounds=4, lam=kw["lam"], makespan=kw["makespan"],
                                restart_penalty=kw["eta"], method=method, gap_tol=1e-9)
        assert plan.objective == pytest.approx(best, rel=1e-9, abs=1e-12), method
        assert plan.bound >= best - 1e-12
        assert ref_objective(jobs, plan.schedule, 3, **kw) == pytest.approx(plan.objective,
                                                                             rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                   o.items()))
def test_brute_force_gangs(seed, opts):
    """Gangs of 1-3 GPUs: the MILP and "auto" are optimal; the fast path is certified."""
    rng = np.random.default_rng(200 + seed)
    jobs = random_jobs(rng, 4, 3)
    kw = {"lam": opts["lam"], "makespan": opts.get("makespan", "paper"),
          "eta": opts.get("eta", 0.0)}
    best, _ = brute_force(jobs, 3, 4, **kw)
    common = {"lam": kw["lam"], "makespan": kw["makespan"], "restart_penalty": kw["eta"],
              "gap_tol": 1e-9}
    for method in ("milp", "auto"):
        plan = fa.plan_schedule(jobs, 3, rounds=4, method=method, **common)
        assert plan.objective == pytest.approx(best, rel=1e-9, abs=1e-12), method
    fast = fa.plan_schedule(jobs, 3, rounds=4, method="fast", **common)
    assert fast.objective <= best + 1e-12
    assert fast.bound >= best - 1e-12  # the certified bound is valid
    assert fast.gap == pytest.approx(fast.bound - fast.objective, abs=1e-15)
    if fast.status == "optimal":
        assert fast.objective == pytest.approx(best, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("wc", ["none", "greedy"])
def test_brute_force_without_work_conservation(wc):
    """Without the constraint the optimum can only rise; "greedy" is upstream's post-pass."""
    rng = np.random.default_rng(7)
    for _ in range(3):
        jobs = random_jobs(rng, 4, 2)
        free, _ = brute_force(jobs, 3, 4, wc=False)
        constrained, _ = brute_force(jobs, 3, 4, wc=True)
        assert free >= constrained - 1e-12
        plan = fa.plan_schedule(jobs, 3, rounds=4, work_conservation=wc, method="milp",
                                gap_tol=1e-9)
        if wc == "none":
            assert plan.objective == pytest.approx(free, rel=1e-9)
        else:  # the post-pass fills idle GPUs; its result is feasible and work conserving
            assert not wc_violated(jobs, plan.schedule, 3)
            assert plan.objective <= free + 1e-12


def test_work_conservation_does_not_cost_objective_without_restarts():
    """The objective is monotone in counts, so the WC optimum equals the unconstrained one."""
    rng = np.random.default_rng(11)
    for _ in range(4):
        jobs = random_jobs(rng, 4, 2)
        free, _ = brute_force(jobs, 3, 4, wc=False)
        constrained, _ = brute_force(jobs, 3, 4, wc=True)
        assert constrained == pytest.approx(free, rel=1e-12)


def test_restart_penalty_prefers_contiguous_rounds():
    jobs = [fa.PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
                       regimes=[(60.0, 50)]) for _ in range(2)]
    for method in ("fast", "milp"):
        plan = fa.plan_schedule(jobs, 1, rounds=4, restart_penalty=1e-3, method=method,
                                gap_tol=1e-9)
        assert plan.rounds_given.tolist() == [2, 2]
        assert plan.restarts == 2  # AABB or BBAA: each job starts once
        runs = np.diff(plan.schedule.astype(int), axis=1)
        assert (np.abs(runs).sum(axis=1) <= 1).all()
    running = [jobs[0], fa.PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
                                   regimes=[(60.0, 50)], running=True)]
    plan = fa.plan_schedule(running, 1, rounds=4, restart_penalty=1e-3, method="milp")
    assert plan.restarts == 1 and plan.schedule[1, 0]  # the running job keeps going


def test_fast_path_reports_uncertified_gang_packing():
    """A gang instance the fast path cannot certify: status says so, "auto" closes the gap."""
    jobs = [
        fa.PlanJob(workers=2, total_epochs=12, done_epochs=11, ftf=1.7,
                   regimes=[(30.4, 0.0723), (111.7, 0.6594), (132.2, 0.2683)]),
        fa.PlanJob(workers=1, total_epochs=7, done_epochs=1, ftf=1.85,
                   regimes=[(65.2, 1.4417), (67.2, 3.1398), (22.2, 1.4185)]),
        fa.PlanJob(workers=1, total_epochs=6, done_epochs=2, ftf=1.4, regimes=[(136.5, 4.0)]),
        fa.PlanJob(workers=3, total_epochs=15, done_epochs=5, ftf=1.75,
                   regimes=[(37.9, 0.1841), (114.3, 1.4057), (126.6, 8.4102)]),
    ]
    best, _ = brute_force(jobs, 3, 4, lam=100.0)
    fast = fa.plan_schedule(jobs, 3, rounds=4, lam=100.0, method="fast", gap_tol=1e-9)
    assert fast.status == "iteration_limit"  # its fixed work budget, not the clock
    assert fast.objective < best - 1e-6 and fast.bound >= best
    assert fast.relative_gap > 1e-9
    auto = fa.plan_schedule(jobs, 3, rounds=4, lam=100.0, gap_tol=1e-9)
    assert auto.status == "optimal" and auto.objective == pytest.approx(best, rel=1e-9)
    assert auto.method == "milp"


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------
@st.composite
def plan_jobs(draw, max_workers):
    total = draw(st.integers(2, 60))
    done = draw(st.integers(0, total))
    left = total - done
    k = draw(st.integers(1, 3)) if left else 0
    cuts = sorted(draw(st.lists(st.integers(0, left), min_size=k - 1, max_size=k - 1))) \
        if k else []
    edges = [0, *cuts, left]
    epochs = [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)] if k else []
    secs = draw(st.lists(st.floats(5.0, 400.0), min_size=len(epochs), max_size=len(epochs)))
    return fa.PlanJob(workers=draw(st.integers(1, max_workers)), total_epochs=float(total),
                      done_epochs=float(done), ftf=draw(st.floats(0.3, 3.0)),
                      regimes=list(zip(secs, epochs, strict=True)),
                      running=draw(st.booleans()))


@st.composite
def instances(draw, max_jobs=6, max_gpus=6, max_rounds=6):
    M = draw(st.integers(1, max_gpus))
    T = draw(st.integers(1, max_rounds))
    jobs = draw(st.lists(plan_jobs(M), min_size=1, max_size=max_jobs))
    lam = draw(st.sampled_from([0.0, 1e-3, 1.0]))
    return jobs, M, T, lam


def check_plan(jobs, M, T, plan, wc=True):
    x = plan.schedule
    w = np.array([j.workers for j in jobs])
    assert x.shape == (len(jobs), T) and x.dtype == bool
    assert (w @ x <= M).all()  # capacity in every round
    _, _, fin = ref_tables(jobs, T, 120.0)
    assert (x.sum(axis=1) <= np.minimum(fin, T)).all()  # no round after finishing
    if wc:
        assert not wc_violated(jobs, x, M)
    # regime order: a job moves through its regimes in order, never back
    reg = plan.regime
    for row, mask in zip(reg, x, strict=True):
        seq = row[mask]
        assert (np.diff(seq) >= 0).all() and (seq >= 0).all()
    assert (reg[~x] == -1).all()
    assert plan.bound >= plan.objective - 1e-15
    assert plan.objective == pytest.approx(
        ref_objective(jobs, x, M, lam=plan_lam[0]), rel=1e-10, abs=1e-14)


plan_lam = [1e-3]


@SETTINGS
@given(instances())
def test_fast_path_properties(inst):
    jobs, M, T, lam = inst
    plan_lam[0] = lam
    plan = fa.plan_schedule(jobs, M, rounds=T, lam=lam, method="fast")
    check_plan(jobs, M, T, plan)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_jobs=4, max_gpus=4, max_rounds=4))
def test_milp_properties_and_agreement(inst):
    jobs, M, T, lam = inst
    plan_lam[0] = lam
    milp = fa.plan_schedule(jobs, M, rounds=T, lam=lam, method="milp", gap_tol=1e-9)
    check_plan(jobs, M, T, milp)
    fast = fa.plan_schedule(jobs, M, rounds=T, lam=lam, method="fast", gap_tol=1e-9)
    # each certified bound covers the other path's schedule
    assert fast.bound >= milp.objective - 1e-12
    assert milp.bound >= fast.objective - 1e-12
    if all(j.workers == 1 for j in jobs):
        assert fast.objective == pytest.approx(milp.objective, rel=1e-9, abs=1e-13)


@SETTINGS
@given(instances(max_jobs=5), st.sampled_from(["none", "greedy"]))
def test_capacity_without_work_conservation(inst, wc):
    jobs, M, T, lam = inst
    plan_lam[0] = lam
    plan = fa.plan_schedule(jobs, M, rounds=T, lam=lam, method="fast",
                            work_conservation=wc)
    check_plan(jobs, M, T, plan, wc=(wc == "greedy"))


def test_fast_matches_milp_on_medium_instances():
    """Unit gangs: the fast path is exact. Large gangs (up to M/2): it is certified, and
    "auto" falls back to the MILP (warm-started from it) to close the gap."""
    rng = np.random.default_rng(21)
    for unit in (True, False):
        jobs = random_jobs(rng, 14, 3, unit=unit)
        fast = fa.plan_schedule(jobs, 6, rounds=6, method="fast", gap_tol=1e-6)
        milp = fa.plan_schedule(jobs, 6, rounds=6, method="milp", gap_tol=1e-6,
                                time_limit=30)
        assert fast.bound >= milp.objective - 1e-12 and milp.bound >= fast.objective - 1e-12
        if unit:
            assert fast.objective == pytest.approx(milp.objective, rel=2e-6)
            assert fast.status == "optimal"
        else:
            assert fast.objective <= milp.objective + 1e-12
            auto = fa.plan_schedule(jobs, 6, rounds=6, gap_tol=1e-6, time_limit=30)
            assert auto.objective == pytest.approx(milp.objective, rel=2e-6)


def test_inputs_are_not_mutated():
    jobs = [fa.PlanJob(workers=1, total_epochs=10, done_epochs=2, ftf=1.0,
                       regimes=[[30.0, 8.0]])]
    before = list(jobs)
    fa.plan_schedule(jobs, 1, rounds=3)
    assert jobs == before and jobs[0].regimes == ((30.0, 8.0),)
    plan = fa.plan_schedule(jobs, 1, rounds=3)
    with pytest.raises(ValueError):
        plan.schedule[0, 0] = False


# --------------------------------------------------------------------------------------------
# scenarios (App. F)
# --------------------------------------------------------------------------------------------
def switching_jobs(scenarios):
    """A steady job, and one whose slow first regime ends after 1 or 9 epochs (mean 5)."""
    steady = fa.PlanJob(workers=1, total_epochs=100, done_epochs=20, ftf=1.0,
                        regimes=[(120.0, 80)])
    fast_after = [[(240.0, 1.0), (12.0, 59.0)], [(240.0, 9.0), (12.0, 51.0)]]
    switching = fa.PlanJob(workers=1, total_epochs=100, done_epochs=40, ftf=1.0,
                           regimes=[(240.0, 5.0), (12.0, 55.0)],
                           scenarios=fast_after if scenarios else None)
    return [steady, switching], fast_after


def test_scenarios_objective_is_log_of_expected_util():
    jobs, _ = switching_jobs(True)
    plan = fa.plan_schedule(jobs, 1, rounds=8, lam=0.0, k=1.0, expectation="scenarios")
    util, _, _ = ref_tables(jobs, 8, 120.0, scenarios=True)
    n = plan.rounds_given
    np.testing.assert_allclose(plan.utility, util[[0, 1], n], rtol=1e-12)
    assert plan.objective == pytest.approx(ref_objective(jobs, plan.schedule, 1, k=1.0, lam=0.0,
                                                         scenarios=True), rel=1e-12)
    best, _ = brute_force_scen(jobs, 1, 8)
    assert plan.objective == pytest.approx(best, rel=1e-9)


def brute_force_scen(jobs, M, T):
    N = len(jobs)
    codes = np.arange(2 ** (N * T))[:, None]
    X = ((codes >> np.arange(N * T)) & 1).astype(bool).reshape(-1, N, T)
    X = X[feasible_mask(jobs, X, M)]
    values = ref_objective(jobs, X, M, k=1.0, lam=0.0, scenarios=True)
    return float(values.max()), X[int(np.argmax(values))]


def test_scenarios_help_when_a_regime_switch_is_uncertain():
    """Planning on the mean trajectory misses the chance of an early fast regime (App. F).

    The switching job's slow regime ends after 1 or 9 epochs (mean 5 = 10 rounds, beyond the
    window). The mean trajectory never reaches the fast regime, so it gives the job few
    rounds; the scenario plan sees the early switch in half the futures and gives it more.
    Judged by the App. F objective (log of the true expected utility) it is strictly better.
    """
    jobs, _ = switching_jobs(True)
    mean = fa.plan_schedule(jobs, 1, rounds=8, lam=0.0, k=1.0, expectation="mean")
    scen = fa.plan_schedule(jobs, 1, rounds=8, lam=0.0, k=1.0, expectation="scenarios")
    truth = ref_objective(jobs, np.stack([mean.schedule, scen.schedule]), 1, k=1.0, lam=0.0,
                          scenarios=True)
    assert truth[1] > truth[0] + 1e-3
    assert scen.rounds_given[1] > mean.rounds_given[1]


def test_scenarios_equal_to_mean_give_the_mean_plan():
    rng = np.random.default_rng(3)
    base = random_jobs(rng, 5, 2)
    jobs = [fa.PlanJob(workers=j.workers, total_epochs=j.total_epochs,
                       done_epochs=j.done_epochs, ftf=j.ftf, regimes=j.regimes,
                       scenarios=[j.regimes, j.regimes]) for j in base]
    a = fa.plan_schedule(base, 3, rounds=5)
    b = fa.plan_schedule(jobs, 3, rounds=5, expectation="scenarios")
    assert a.objective == pytest.approx(b.objective, rel=1e-12)


def test_from_forecast_and_sampled_scenarios():
    model = fa.RegimeModel.gns(32, num_regimes=3)
    fc = fa.forecast_regimes(model, 30, [32] * 4, [60.0] * 4, profiled={64: 30.0})
    job = fa.PlanJob.from_forecast(fc, workers=1, ftf=1.2, samples=8, rng=0)
    assert job.done_epochs == 4 and job.regimes == tuple(fc.regimes)
    assert len(job.scenarios) == 8
    other = fa.PlanJob(workers=1, total_epochs=30, done_epochs=10, ftf=1.0,
                       regimes=[(45.0, 20)])
    plan = fa.plan_schedule([job, other], 1, rounds=6, expectation="scenarios")
    assert plan.rounds_given.sum() == 6


# --------------------------------------------------------------------------------------------
# the volatile Fisher market link (App. C-D)
# --------------------------------------------------------------------------------------------
def vfm_instance(seed, N=4, M=2, T=3, D=120.0, w=None):
    rng = np.random.default_rng(seed)
    w = rng.integers(1, M + 1, N) if w is None else np.asarray(w)
    d = rng.uniform(50, 200, N)
    E = rng.uniform(60, 100, N)
    jobs = [fa.PlanJob(workers=int(w[i]), total_epochs=float(E[i]), done_epochs=0.0,
                       ftf=float(rng.uniform(0.5, 2.0)), regimes=[(float(d[i]), float(E[i]))])
            for i in range(N)]
    # per-GPU utility in every round: progress per GPU-second of a round
    u = np.broadcast_to((D / (d * w * E))[:, None, None], (N, 1, T)).copy()
    return jobs, w, d, E, u


@pytest.mark.parametrize("seed", range(3))
def test_relaxation_is_the_volatile_fisher_market(seed):
    """Equal weights (k=0), lam=0, F=0, one regime: the relaxation is the VFM over the window.

    More jobs than GPUs, so the market has an equilibrium within the gang caps and the plain
    market (no caps) has the same value and prices; prices scale by 1/(N*M).
    """
    N, M, T = 4, 2, 3
    jobs, w, d, E, u = vfm_instance(seed, N, M, T)
    relax = fa.relax_plan(jobs, M, rounds=T, k=0.0, lam=0.0)
    market = fa.volatile_fisher_market(u, supply=np.full((1, T), float(M)))
    assert relax.objective == pytest.approx(market.objective / (N * M), rel=1e-6)
    np.testing.assert_allclose(relax.prices, market.prices[0] / (N * M), rtol=1e-4)
    np.testing.assert_allclose(relax.utility, market.utility, rtol=1e-4)
    # equal budgets: every buyer spends the same at equilibrium prices (budget clearing)
    spend = (relax.allocation * w[:, None] * relax.prices[None, :]).sum(axis=1)
    np.testing.assert_allclose(spend, 1.0 / (N * M), rtol=1e-3)


def test_relaxation_with_binding_gang_caps_is_a_capped_market():
    """Fewer jobs than GPUs: the caps x <= 1 bind; the market needs them as constraints."""
    N, M, T = 2, 4, 2
    jobs, w, d, E, u = vfm_instance(9, N, M, T, w=[1, 2])
    relax = fa.relax_plan(jobs, M, rounds=T, k=0.0, lam=0.0)
    plain = fa.volatile_fisher_market(u, supply=np.full((1, T), float(M)))
    capped = fa.FisherMarket(u, supply=np.full((1, T), float(M)))
    capped.add_constraint(capped.x <= np.broadcast_to(w[:, None], (N, T)).astype(float))
    res = capped.solve(method="cvxpy")
    assert relax.objective == pytest.approx(res.objective / (N * M), rel=1e-6)
    assert plain.objective > res.objective + 1e-3  # the caps cost something here
    # the capped GPUs are left unsold: their price is zero (market clearing)
    assert relax.prices.max() <= 1e-6 and (relax.allocation >= 1 - 1e-6).all()


def vfm_utility_of(alloc, w, d, E, D=120.0):
    """UTIL_j of a fractional allocation x (n, T) for one-regime jobs with F_j = 0."""
    return alloc.sum(axis=1) * D / (d * E)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.integers(0, 10_000), st.lists(st.floats(0.0, 1.0,
                                                  allow_subnormal=False), min_size=12, max_size=12))
def test_relaxation_minimises_the_product_of_ftf(seed, raw):
    """App. E (a): equal weights, so the relaxation minimises prod_j U_j(ref) / U_j(x) over
    every feasible allocation; here against random feasible fractional allocations."""
    N, M, T = 4, 2, 3
    jobs, w, d, E, _ = vfm_instance(seed % 50, N, M, T)
    relax = fa.relax_plan(jobs, M, rounds=T, k=0.0, lam=0.0)
    x = np.array(raw).reshape(N, T)
    load = w @ x
    x = x * np.minimum(1.0, M / np.maximum(load, 1e-12))[None, :]  # feasible: scale rounds
    ref = np.full(N, 0.5)  # any reference allocation gives the same ordering
    log_ftf_relax = np.log(ref / vfm_utility_of(relax.allocation, w, d, E)).sum()
    with np.errstate(divide="ignore"):
        log_ftf_x = np.log(ref / vfm_utility_of(x, w, d, E)).sum()
    assert log_ftf_relax <= log_ftf_x + 1e-6


def test_relaxation_sharing_incentive():
    """App. E (b): equal budgets. N >= M: every job's FTF against the equal split is <= 1;
    with binding gang caps the average FTF is <= 1 (proofs/volatile_fisher_market.md, P4)."""
    D = 120.0
    for seed in range(3):
        N, M, T = 4, 2, 3
        jobs, w, d, E, _ = vfm_instance(seed, N, M, T)
        relax = fa.relax_plan(jobs, M, rounds=T, k=0.0, lam=0.0)
        equal = T * (M / N) / w * D / (d * E)  # M/N GPUs every round = x = M/(N w)
        rho = equal / relax.utility
        assert (rho <= 1 + 1e-4).all()
    N, M, T = 3, 3, 2  # M/N = 1 GPU each; gangs of 1 or 2 so caps bind for unit jobs
    jobs, w, d, E, _ = vfm_instance(5, N, M, T, w=[1, 1, 2])
    relax = fa.relax_plan(jobs, M, rounds=T, k=0.0, lam=0.0)
    equal = T * (M / N) / w * D / (d * E)
    rho = equal / relax.utility
    assert rho.mean() <= 1 + 1e-6
    assert np.prod(rho) <= 1 + 1e-6


def test_relaxation_bounds_the_integer_plan():
    rng = np.random.default_rng(4)
    jobs = random_jobs(rng, 5, 2)
    jobs = [fa.PlanJob(workers=j.workers, total_epochs=j.total_epochs,
                       done_epochs=max(j.done_epochs, 1.0), ftf=j.ftf,
                       regimes=[(s, e) for s, e in j.regimes]) if j.done_epochs else j
            for j in jobs]
    jobs = [j for j in jobs if j.done_epochs > 0]
    for lam in (0.0, 1.0):
        plan = fa.plan_schedule(jobs, 3, rounds=4, lam=lam, gap_tol=1e-9, method="milp",
                                work_conservation="none")
        relax = fa.relax_plan(jobs, 3, rounds=4, lam=lam)
        assert relax.objective >= plan.objective - 1e-7 * abs(plan.objective)


# --------------------------------------------------------------------------------------------
# upstream comparison options
# --------------------------------------------------------------------------------------------
def test_flat_regime_model_ignores_regime_changes():
    job = fa.PlanJob(workers=1, total_epochs=100, done_epochs=20, ftf=1.0,
                     regimes=[(60.0, 30), (30.0, 50)])
    flat = fa.plan_schedule([job], 1, rounds=20, regime_model="flat")
    real = fa.plan_schedule([job], 1, rounds=20)
    # same total remaining time, but progress at the mean rate 3300 s / 80 epochs
    assert flat.remaining[0] == pytest.approx(real.remaining[0])
    assert flat.utility[0] == pytest.approx((20 + 2400 / (3300 / 80)) / 100)
    assert real.utility[0] == pytest.approx(0.70)
    assert (flat.regime[flat.schedule] == 0).all()


def test_max_remaining_makespan_is_upstreams():
    jobs = [fa.PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=1.0,
                       regimes=[(60.0, 90)]),
            fa.PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=1.0,
                       regimes=[(30.0, 90)])]
    plan = fa.plan_schedule(jobs, 1, rounds=2, lam=1e-4, k=0.0, makespan="max_remaining")
    R = plan.remaining
    welfare = np.log(plan.utility).sum() / 2
    assert plan.objective == pytest.approx(welfare - 1e-4 * R.max(), rel=1e-12)
    assert plan.z0 == 1.0


# --------------------------------------------------------------------------------------------
# re-planning
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "kw", "replan", "reasons", "deferred"),
    [
        ("reactive", {"rounds_elapsed": 0, "planned_rounds": 0}, True, ("no_plan",), ()),
        ("reactive", {"rounds_elapsed": 5, "planned_rounds": 20}, False, (), ()),
        ("reactive", {"rounds_elapsed": 20, "planned_rounds": 20}, True,
         ("window_elapsed",), ()),
        ("lazy", {"rounds_elapsed": 3, "planned_rounds": 20, "arrived": [4]}, True,
         ("arrival",), ()),
        ("lazy", {"rounds_elapsed": 3, "planned_rounds": 20, "finished": 2}, True,
         ("completion",), ()),
        ("reactive", {"rounds_elapsed": 3, "planned_rounds": 20, "regime_changed": [1]},
         True, ("regime_change",), ()),
        ("lazy", {"rounds_elapsed": 3, "planned_rounds": 20, "regime_changed": [1]}, False,
         (), ("regime_change",)),
        ("lazy", {"rounds_elapsed": 3, "planned_rounds": 20, "regime_changed": True,
                  "arrived": 1}, True, ("arrival",), ()),
    ],
)
def test_replan_policy(mode, kw, replan, reasons, deferred):
    d = fa.ReplanPolicy(mode).decide(**kw)
    assert d.replan is replan and bool(d) is replan
    assert d.reasons == reasons and d.deferred == deferred


def test_replan_policy_bad_inputs():
    with pytest.raises(fa.InputError, match="mode"):
        fa.ReplanPolicy("eager")
    p = fa.ReplanPolicy()
    with pytest.raises(fa.InputError, match="rounds_elapsed"):
        p.decide(rounds_elapsed=21, planned_rounds=20)
    with pytest.raises(fa.InputError, match="rounds_elapsed"):
        p.decide(rounds_elapsed=-1, planned_rounds=20)
    with pytest.raises(fa.InputError, match="arrived"):
        p.decide(rounds_elapsed=0, planned_rounds=20, arrived="job-3")


def test_plan_result_helpers():
    pd = pytest.importorskip("pandas")
    jobs = [fa.PlanJob(workers=1, total_epochs=50, done_epochs=10, ftf=1.0,
                       regimes=[(60.0, 40)])] * 3
    plan = fa.plan_schedule(jobs, 2, rounds=3)
    assert sorted(plan.jobs_in_round(0).tolist()) == np.flatnonzero(
        plan.schedule[:, 0]).tolist()
    frame = plan.to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns[:3]) == [
        "rounds", "utility", "remaining"]
    assert "PlanResult(" in repr(plan)
    with pytest.raises(fa.InputError, match="t"):
        plan.jobs_in_round(3)


# --------------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------------
GOOD = {"workers": 1, "total_epochs": 10, "done_epochs": 2, "ftf": 1.0,
        "regimes": [(30.0, 8.0)]}


@pytest.mark.parametrize(
    ("change", "argument"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": 2.5}, "workers"),
        ({"total_epochs": 0}, "total_epochs"),
        ({"done_epochs": -1}, "done_epochs"),
        ({"done_epochs": 11}, "done_epochs"),
        ({"ftf": 0.0}, "ftf"),
        ({"ftf": float("nan")}, "ftf"),
        ({"regimes": [(30.0, 5.0)]}, "regimes"),  # covers 5 of 8 epochs
        ({"regimes": [(0.0, 8.0)]}, "regimes"),
        ({"regimes": [(30.0, -1.0), (30.0, 9.0)]}, "regimes"),
        ({"regimes": [(30.0, 8.0, 1.0)]}, "regimes"),
        ({"regimes": [(float("inf"), 8.0)]}, "regimes"),
        ({"running": "yes"}, "running"),
        ({"scenarios": []}, "scenarios"),
        ({"scenarios": [[(30.0, 2.0)]]}, "scenarios[0]"),
    ],
)
def test_planjob_bad_inputs(change, argument):
    with pytest.raises(fa.InputError) as err:
        fa.PlanJob(**{**GOOD, **change})
    assert err.value.argument == argument


JOB = fa.PlanJob(**GOOD)


@pytest.mark.parametrize(
    ("kw", "argument"),
    [
        ({"jobs": []}, "jobs"),
        ({"jobs": [JOB, "job"]}, "jobs"),
        ({"jobs": "job"}, "jobs"),
        ({"jobs": [fa.PlanJob(**{**GOOD, "workers": 3})]}, "jobs"),  # gang > cluster
        ({"num_gpus": 0}, "num_gpus"),
        ({"num_gpus": 2.0}, "num_gpus"),
        ({"rounds": 0}, "rounds"),
        ({"round_duration": -1.0}, "round_duration"),
        ({"k": -1.0}, "k"),
        ({"lam": -1e-3}, "lam"),
        ({"method": "gurobi"}, "method"),
        ({"gap_tol": 0.0}, "gap_tol"),
        ({"time_limit": 0.0}, "time_limit"),
        ({"work_conservation": "maybe"}, "work_conservation"),
        ({"restart_penalty": -1.0}, "restart_penalty"),
        ({"expectation": "scenarios"}, "expectation"),  # no job has scenarios
        ({"expectation": "median"}, "expectation"),
        ({"makespan": "gavel"}, "makespan"),
        ({"regime_model": "oracle"}, "regime_model"),
        ({"z0": 0.0}, "z0"),
        ({"util_floor": 1.0}, "util_floor"),
        ({"util_floor": 0.0}, "util_floor"),
        ({"warm_start": 1}, "warm_start"),
        ({"threads": 0}, "threads"),
    ],
)
def test_plan_schedule_bad_inputs(kw, argument):
    args = {"jobs": [JOB], "num_gpus": 2, **kw}
    jobs, gpus = args.pop("jobs"), args.pop("num_gpus")
    with pytest.raises(fa.InputError) as err:
        fa.plan_schedule(jobs, gpus, **args)
    assert err.value.argument == argument


def test_gang_error_names_the_job():
    jobs = [JOB, fa.PlanJob(**{**GOOD, "workers": 4})]
    with pytest.raises(fa.InputError, match=r"jobs\[1\]\.workers = 4 exceeds num_gpus = 2") \
            as err:
        fa.plan_schedule(jobs, 2)
    assert err.value.index == (1,)


#: a plan whose full MILP branches (13 nodes to prove gap_tol=1e-6; found by a seeded search)
BRANCHING_PLAN = [
    fa.PlanJob(workers=4, total_epochs=123, done_epochs=40, ftf=1.7880001196070294,
               regimes=[(189.67176619657113, 83)]),
    fa.PlanJob(workers=3, total_epochs=105, done_epochs=6, ftf=1.9760812325678834,
               regimes=[(40.30838228208965, 99)]),
    fa.PlanJob(workers=3, total_epochs=199, done_epochs=14, ftf=1.9984086184067056,
               regimes=[(133.7352351437921, 185)]),
    fa.PlanJob(workers=4, total_epochs=61, done_epochs=20, ftf=1.6988771551977466,
               regimes=[(117.6784388789266, 41)]),
    fa.PlanJob(workers=4, total_epochs=175, done_epochs=7, ftf=1.5401672912332158,
               regimes=[(48.85684300808645, 168)]),
    fa.PlanJob(workers=2, total_epochs=35, done_epochs=16, ftf=1.4167001861980129,
               regimes=[(43.09056088734714, 19)]),
    fa.PlanJob(workers=3, total_epochs=141, done_epochs=53, ftf=1.259765279042815,
               regimes=[(161.9890463346771, 88)]),
    fa.PlanJob(workers=1, total_epochs=112, done_epochs=2, ftf=0.8174532898716408,
               regimes=[(162.30781123439897, 110)]),
    fa.PlanJob(workers=1, total_epochs=35, done_epochs=16, ftf=1.0287605852128412,
               regimes=[(26.13470374530627, 19)]),
    fa.PlanJob(workers=2, total_epochs=114, done_epochs=51, ftf=1.0998607781518512,
               regimes=[(116.10614853411336, 63)]),
]


def test_node_limit_is_a_reproducible_work_limit():
    # issue #27: a time limit makes a plan depend on the machine; a node limit does not
    def plan(**kw):
        return fa.plan_schedule(BRANCHING_PLAN, 6, rounds=8, round_duration=120.0, k=3.0,
                                lam=1.0, method="milp", gap_tol=1e-6, **kw)

    full = plan()
    assert full.status == "optimal" and full.stats.iterations > 2
    cut = [plan(node_limit=2) for _ in range(2)]
    for p in cut:
        assert p.status == "iteration_limit" and not p.certificate.ok
        assert p.stats.iterations == 2  # branch-and-bound nodes
        assert p.objective <= full.objective <= p.bound
    assert np.array_equal(cut[0].schedule, cut[1].schedule) and cut[0].bound == cut[1].bound
    with pytest.raises(fa.InputError) as err:
        plan(node_limit=0)
    assert err.value.argument == "node_limit"


def test_milp_time_limit_is_honoured():
    rng = np.random.default_rng(8)
    jobs = random_jobs(rng, 40, 3)
    plan = fa.plan_schedule(jobs, 8, rounds=10, method="milp", time_limit=2.0, gap_tol=1e-12,
                            warm_start=True)
    assert plan.stats.seconds < 10.0
    assert plan.bound >= plan.objective
    assert plan.status in ("optimal", "time_limit")
