"""fairalloc.sim.policies: greedy packing, baselines (hand-checked), library adapters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.sim import (
    JobSpec,
    Workload,
    available_policies,
    greedy_pack,
    make_policy,
    poisson_workload,
    register_policy,
    simulate,
)
from fairalloc.sim.policies import FIFOPolicy, ShockwavePolicy


# -- greedy packing --------------------------------------------------------------------------
def _reference_pack(job, typ, size, cap, n):
    free = list(cap)
    out = [-1] * n
    for j, t, s in zip(job, typ, size):
        if out[j] < 0 and s <= free[t]:
            out[j] = t
            free[t] -= s
    return out


@st.composite
def pack_instances(draw):
    n = draw(st.integers(1, 12))
    k = draw(st.integers(1, 3))
    cap = draw(st.lists(st.integers(0, 8), min_size=k, max_size=k))
    gang = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n))
    pairs = draw(st.permutations([(j, t) for j in range(n) for t in range(k)]))
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    pairs = [p for p, kp in zip(pairs, keep) if kp]
    return ([p[0] for p in pairs], [p[1] for p in pairs], [gang[p[0]] for p in pairs], cap, n)


@given(pack_instances())
def test_greedy_pack_equals_the_sequential_walk(inst) -> None:
    job, typ, size, cap, n = inst
    assert greedy_pack(job, typ, size, cap, n).tolist() == _reference_pack(job, typ, size,
                                                                           cap, n)


def test_greedy_pack_backfills_smaller_gangs() -> None:
    # 4 GPUs: gangs 2, 4 (skipped), 1, 1 -> the 4-gang waits, the small ones fill
    assert greedy_pack([0, 1, 2, 3], [0] * 4, [2, 4, 1, 1], [4], 4).tolist() == [0, -1, 0, 0]


# -- hand-checked baselines ------------------------------------------------------------------
def _one_gpu(durations, arrival=None, weight=None):
    n = len(durations)
    return Workload.from_arrays(arrival if arrival is not None else [0.0] * n,
                                [[1.0]] * n, durations, weight=weight)


def test_fifo_runs_in_arrival_order() -> None:
    w = _one_gpu([300.0, 100.0, 200.0], arrival=[0.0, 1.0, 2.0])
    r = simulate(w, fa.Cluster({"gpu": 1}), "fifo", round_duration=100.0)
    assert r.finish.tolist() == [300.0, 400.0, 600.0]


def test_allox_matching_is_shortest_processing_time_first() -> None:
    # min total completion time on one machine = SPT: 100, 300, 600 (avg 333.3)
    w = _one_gpu([300.0, 100.0, 200.0])
    r = simulate(w, fa.Cluster({"gpu": 1}), "allox", round_duration=100.0)
    assert sorted(r.finish.tolist()) == [100.0, 300.0, 600.0]
    assert r.finish[1] == 100.0 and r.finish[0] == 600.0
    # on two unrelated types the matching puts each job where it is relatively fastest
    # (serial on the v100: 50 + 150 = 200; in parallel: 100 + 80 = 180)
    w2 = Workload.from_arrays([0.0, 0.0], [[10.0, 1.0], [2.0, 1.25]], [1000.0, 100.0],
                              types=["v100", "k80"])
    r2 = simulate(w2, fa.Cluster({"v100": 1, "k80": 1}), "allox", round_duration=50.0)
    assert r2.sched_type[r2.sched_job == 0].tolist() == [0, 0]  # 100 s on the v100
    assert r2.sched_type[r2.sched_job == 1].tolist() == [1, 1]  # 80 s on the k80
    assert r2.finish.tolist() == [100.0, 80.0]


def test_las_prefers_least_attained_service_and_promotes_starving_jobs() -> None:
    # thresholds at 100 GPU-s: after its first round a job drops to queue 1
    pol = make_policy("las", dict(thresholds=[100.0], promote_knob=None))
    w = _one_gpu([300.0, 300.0], arrival=[0.0, 0.0])
    r = simulate(w, fa.Cluster({"gpu": 1}), pol, round_duration=100.0)
    # round 0: A (queue 0, first); round 1: B (queue 0); then both queue 1: FIFO -> A, A, B, B
    assert r.sched_job.tolist() == [0, 1, 0, 0, 1, 1]
    # A (1000 s) is first in FIFO order once both are demoted; without promotion B waits for
    # A to finish; with promotion after waiting 2x its run time, B gets a round at t = 400
    # (idle 200 s >= 2 x 100 s) and at t = 900 (idle 400 s >= 2 x 200 s)
    w2 = _one_gpu([1000.0, 300.0])
    plain = simulate(w2, fa.Cluster({"gpu": 1}), pol, round_duration=100.0)
    assert plain.sched_job.tolist() == [0, 1] + [0] * 9 + [1, 1]
    pol2 = make_policy("las", dict(thresholds=[100.0], promote_knob=2.0))
    r2 = simulate(w2, fa.Cluster({"gpu": 1}), pol2, round_duration=100.0)
    assert r2.sched_job.tolist()[:10] == [0, 1, 0, 0, 1, 0, 0, 0, 0, 1]
    assert r2.finish[1] == 1000.0


def test_gandiva_fair_stride_scheduling_by_tickets() -> None:
    # weights 1 and 3 as tickets on one GPU: in the first 4 rounds A runs once, B three times
    w = _one_gpu([1e6, 1e6], weight=[1.0, 3.0])
    pol = make_policy("gandiva_fair", dict(tickets="weight"))
    sim_rounds = []

    def stop(done, total):
        sim_rounds.append(1)
        if len(sim_rounds) == 4:
            raise StopIteration

    from fairalloc.sim import Simulator

    sim = Simulator(w, fa.Cluster({"gpu": 1}), pol, round_duration=10.0)
    with pytest.raises(StopIteration):
        sim.run(progress=stop)
    # rounds: A, B, B, B; service is charged when the next round is decided, so after the
    # 4th round the passes are A: 1 x 1/1 and B: 2 x 1/3 (its 3rd round not yet charged)
    assert pol.passes.tolist() == pytest.approx([1.0, 2.0 / 3.0])


def test_efq_reproduces_the_ares_example() -> None:
    # DESIGN.md: jobs of 1, 2, 3 GPU-hours arriving at 0 on one GPU finish at 1, 3, 6 h
    w = _one_gpu([3600.0, 7200.0, 10800.0])
    r = simulate(w, fa.Cluster({"gpu": 1}), "efq", round_duration=3600.0)
    assert r.finish.tolist() == [3600.0, 10800.0, 21600.0]


def test_efq_gives_elastic_jobs_more_gpus() -> None:
    job = JobSpec(arrival=0.0, regimes=[(1, 1.0, [800.0])], scaling=0.9)
    w = Workload.from_jobs([job], ["gpu"])
    r = simulate(w, fa.Cluster({"gpu": 4}), "efq", round_duration=1000.0)
    assert r.sched_gpus.tolist() == [4]  # efficiency 0.81 >= alpha at 4 GPUs
    assert r.finish[0] == pytest.approx(800.0 / (4 * 0.81))
    r2 = simulate(w, fa.Cluster({"gpu": 4}), "efq", round_duration=1000.0,
                  policy_params={"alpha": 0.85})
    assert r2.sched_gpus.tolist() == [2]  # 0.81 < 0.85: stops at 2 GPUs


def test_efq_places_jobs_only_on_types_where_they_run() -> None:
    # issue #27: the queue's own placement knows nothing of which types a job can use, and the
    # policy took it as is: job a (type "fast" only) got GPUs of type "slow" as well
    w = Workload.from_arrays([0.0, 0.0, 0.0], [[2.0, 0.0], [1.0, 1.0], [0.0, 1.0]],
                             [720.0, 360.0, 500.0], types=["fast", "slow"], ids=["a", "b", "c"])
    r = simulate(w, fa.Cluster({"fast": 2, "slow": 2}), "efq", round_duration=360.0)
    # in the queue's order (a, b, c; linear scaling: up to all 4 GPUs each), a takes both
    # fast GPUs, b the slow ones, c waits; then c runs on the two slow GPUs
    first = r.sched_round == 0
    assert r.sched_job[first].tolist() == [0, 1]
    assert r.sched_type[first].tolist() == [0, 1] and r.sched_gpus[first].tolist() == [2, 2]
    assert r.finish.tolist() == [180.0, 180.0, 360.0 + 500.0 / 2]


@st.composite
def _restricted(draw):
    """Heterogeneous workloads where some jobs cannot run on some types."""
    n = draw(st.integers(1, 6))
    tp = [[draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])) for _ in range(3)] for _ in range(n)]
    for row in tp:
        if not any(row):
            row[draw(st.integers(0, 2))] = 1.0
    arrival = [draw(st.sampled_from([0.0, 100.0, 360.0 + 1e-9])) for _ in range(n)]
    steps = [draw(st.floats(100.0, 3000.0)) for _ in range(n)]
    caps = {t: draw(st.integers(1, 3)) for t in ("x", "y", "z")}
    return Workload.from_arrays(arrival, tp, steps, types=list(caps)), fa.Cluster(caps)


@settings(max_examples=40, deadline=None)
@given(case=_restricted())
def test_efq_never_uses_a_type_a_job_cannot_run_on(case) -> None:
    w, cluster = case
    r = simulate(w, cluster, "efq", round_duration=360.0)  # the simulator checks every round
    assert np.isfinite(r.finish).all()
    runnable = w.runnable
    assert runnable[r.sched_job, r.sched_type].all()


def test_gavel_max_min_fairness_shares_one_gpu_equally() -> None:
    w = _one_gpu([1000.0, 1000.0])
    r = simulate(w, fa.Cluster({"gpu": 1}), "max_min_fairness", round_duration=100.0)
    first_ten = r.sched_job[:10]
    assert np.bincount(first_ten, minlength=2).tolist() == [5, 5]


def test_gavel_makespan_policy_finishes_a_batch_no_later_than_fifo() -> None:
    w = Workload.from_arrays([0.0] * 4, [[4.0, 1.0], [3.0, 1.0], [2.0, 1.9], [1.0, 1.0]],
                             [4000.0, 3000.0, 3800.0, 1000.0], types=["v100", "k80"])
    cl = fa.Cluster({"v100": 1, "k80": 1})
    ossp = simulate(w, cl, "ossp", round_duration=60.0)
    fifo = simulate(w, cl, "fifo", round_duration=60.0)
    assert ossp.makespan <= fifo.makespan
    assert ossp.policy == "ossp"


@pytest.mark.parametrize("name", ["water_filling", "themis_ftf", "mst", "gavel_fifo", "sjf",
                                  "isolated"])
def test_every_gavel_objective_runs_to_completion(name: str) -> None:
    w = poisson_workload(4, rate=30.0, seed=3, types=["v100", "k80"], max_scale_factor=2)
    r = simulate(w, fa.Cluster({"v100": 2, "k80": 2}), name, round_duration=900.0)
    assert np.isfinite(r.finish).all()


def test_shockwave_runs_forecasts_and_plans() -> None:
    w = poisson_workload(5, rate=30.0, seed=2, mode_probs=(0.0, 0.5, 0.5),
                         max_scale_factor=2)
    cl = fa.Cluster({"v100": 4})
    pol = ShockwavePolicy(window=6)
    r = simulate(w, cl, pol, round_duration=600.0)
    assert np.isfinite(r.finish).all() and pol.plans >= 1
    oracle = ShockwavePolicy(window=6, forecast="oracle", execution="columns")
    r2 = simulate(w, cl, oracle, round_duration=600.0)
    assert np.isfinite(r2.finish).all()
    # work conserving: a lone job runs every round from its arrival
    one = Workload.from_arrays([0.0], [[1.0]], [1000.0])
    assert simulate(one, fa.Cluster({"gpu": 1}), ShockwavePolicy(window=4),
                    round_duration=300.0).finish.tolist() == [pytest.approx(1000.0)]


def test_shockwave_prioritises_the_job_furthest_behind() -> None:
    # two GPUs; job 0 arrives first and runs alone; jobs 1 and 2 (short) arrive later;
    # with one GPU free per round the waiting short jobs must not be postponed to the end
    w = Workload.from_arrays([0.0, 0.0, 600.0, 600.0], [[1.0]] * 4,
                             [20_000.0, 20_000.0, 1200.0, 1200.0])
    r = simulate(w, fa.Cluster({"gpu": 2}), ShockwavePolicy(window=10), round_duration=600.0)
    assert r.finish[2] <= 4200.0 and r.finish[3] <= 4200.0


def test_registry_and_bad_parameters() -> None:
    names = available_policies()
    for required in ("fifo", "las", "allox", "gandiva_fair", "max_min_fairness", "ossp", "mst",
                     "themis_ftf", "efq", "shockwave"):
        assert required in names
    register_policy("my_fifo", lambda **kw: FIFOPolicy(**kw), "test")
    assert make_policy("my_fifo").name == "my_fifo"
    with pytest.raises(fa.InputError, match="unknown policy"):
        make_policy("nope")
    with pytest.raises(fa.InputError, match="prefer"):
        make_policy("fifo", dict(prefer="random"))
    with pytest.raises(fa.InputError, match="alpha"):
        make_policy("allox", dict(alpha=2.0))
    with pytest.raises(fa.InputError, match="tickets"):
        make_policy("gandiva_fair", dict(tickets="gold"))
    with pytest.raises(fa.InputError, match="objective"):
        from fairalloc.sim import GavelPolicy
        GavelPolicy("fastest")
    with pytest.raises(fa.InputError, match="execution"):
        ShockwavePolicy(execution="random")
    with pytest.raises(fa.InputError, match="thresholds"):
        make_policy("las", dict(thresholds=[-1.0]))


@settings(max_examples=6)
@given(seed=st.integers(0, 1000))
def test_work_conserving_baselines_leave_no_fitting_job_waiting(seed: int) -> None:
    w = poisson_workload(6, rate=40.0, seed=seed, max_scale_factor=4)
    cl = fa.Cluster({"v100": 4})
    for name in ("fifo", "las", "gandiva_fair"):
        r = simulate(w, cl, name, round_duration=900.0)
        for rnd, t in enumerate(r.round_time):
            ran = r.sched_job[r.sched_round == rnd]
            free = 4 - r.sched_gpus[r.sched_round == rnd].sum()
            active = np.flatnonzero((w.arrival <= t) & (r.finish > t))
            waiting = np.setdiff1d(active, ran)
            assert not (w.scale_factor[waiting] <= free).any(), (name, rnd)


def test_packing_ignores_types_a_job_cannot_use() -> None:
    w = Workload.from_arrays([0.0, 0.0], [[0.0, 1.0], [1.0, 1.0]], [100.0, 100.0],
                             types=["a", "b"])
    r = simulate(w, fa.Cluster({"a": 1, "b": 1}), "fifo", round_duration=100.0)
    assert r.sched_type.tolist() == [1, 0]
    assert list(itertools.chain(r.finish.tolist())) == [100.0, 100.0]


def test_themis_leases_and_auctions_hand_computed() -> None:
    # one GPU, two 1200-s jobs, leases of 600 s, rounds of 300 s; one bidder per auction
    # (f = 0.8 of 2 jobs): t=0 A (tie, earlier arrival), t=600 B (rho 0.75 vs A's 0.5),
    # t=1200 A (tie again), t=1800 B
    w = _one_gpu([1200.0, 1200.0])
    pol = make_policy("themis", dict(lease=600.0, gpus_per_server=1))
    r = simulate(w, fa.Cluster({"gpu": 1}), pol, round_duration=300.0)
    assert r.sched_job.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert r.finish.tolist() == [1800.0, 2400.0] and pol.auctions == 4


def test_themis_runs_gangs_whole_and_needs_a_homogeneous_cluster() -> None:
    w = poisson_workload(8, rate=30.0, seed=5, max_scale_factor=4)
    pol = make_policy("themis")
    r = simulate(w, fa.Cluster({"v100": 8}), pol, round_duration=300.0)
    assert np.isfinite(r.finish).all() and pol.auctions >= 1
    assert (r.sched_gpus == w.scale_factor[r.sched_job]).all()  # whole gangs only
    het = poisson_workload(3, seed=1, types=["v100", "k80"], max_scale_factor=1)
    with pytest.raises(fa.InputError, match="homogeneous"):
        simulate(het, fa.Cluster({"v100": 1, "k80": 1}), "themis")
    with pytest.raises(fa.InputError, match="fairness_knob"):
        make_policy("themis", dict(fairness_knob=1.0))
