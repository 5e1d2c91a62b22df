"""fairalloc.sim.simulator: event-accurate rounds, regimes, overheads, mechanism, validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.sim import (
    BasePolicy,
    JobSpec,
    Schedule,
    SimulationError,
    Simulator,
    TimeShares,
    Workload,
    available_policies,
    make_policy,
    poisson_workload,
    simulate,
)


class Scripted(BasePolicy):
    """Runs a fixed function of the round state; records what it saw."""

    name = "scripted"

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn
        self.seen: list = []

    def allocate(self, state):
        self.seen.append(state)
        return self.fn(state)


def run_all(state):
    v = state.jobs
    return Schedule.from_types(np.zeros(v.n, dtype=int), v.scale_factor, len(v.types))


def test_a_job_finishes_mid_round_at_the_exact_instant() -> None:
    w = Workload.from_arrays([0.0], [[1.0]], [100.0])
    r = Simulator(w, fa.Cluster({"gpu": 1}), Scripted(run_all), round_duration=360.0).run()
    assert r.finish.tolist() == [100.0] and r.makespan == 100.0
    assert r.attained.tolist() == [100.0] and r.round_busy.tolist() == [100.0]
    assert r.sched_end.tolist() == [100.0]


def test_regime_change_mid_round_is_exact_and_visible_next_round() -> None:
    # 2 epochs at 50 s, then 4 epochs at 25 s: 200 s alone; rounds of 150 s
    job = JobSpec(arrival=0.0, regimes=[(32, 2.0, [50.0]), (64, 4.0, [25.0])],
                  iterations_per_epoch=[10, 5], mode="gns")
    pol = Scripted(run_all)
    r = Simulator(Workload.from_jobs([job], ["gpu"]), fa.Cluster({"gpu": 1}), pol,
                  round_duration=150.0).run()
    assert r.finish.tolist() == [200.0]
    first, second = pol.seen[0].jobs, pol.seen[1].jobs
    assert first.batch_size.tolist() == [32.0] and not first.regime_changed[0]
    assert first.throughput.tolist() == [[0.2]]  # 10 iterations per 50 s
    # after 150 s: regime 0 (100 s) done, 50 s of regime 1 = 2 epochs; 4 epochs in total
    assert second.epochs_done.tolist() == [4.0] and second.regime_changed.tolist() == [True]
    assert second.batch_size.tolist() == [64.0] and second.epoch_seconds.tolist() == [[25.0]]
    assert second.steps_remaining.tolist() == [10.0]  # 2 epochs x 5 iterations
    bs, sec = second.observed_epochs(0)
    assert bs.tolist() == [32, 32, 64, 64] and sec.tolist() == [50.0, 50.0, 25.0, 25.0]


def test_round_robin_with_restart_overhead_hand_computed() -> None:
    # two 150-s jobs on one GPU, alternating rounds of 100 s, 10 s lost at every (re)start
    def alternate(state):
        v = state.jobs
        turn = state.cluster.round_index % 2
        pick = np.flatnonzero(v.index == turn)
        if pick.size == 0:
            pick = np.array([0])
        ti = np.full(v.n, -1)
        ti[pick] = 0
        return Schedule.from_types(ti, v.scale_factor, 1)

    w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [150.0, 150.0])
    r = Simulator(w, fa.Cluster({"gpu": 1}), Scripted(alternate), round_duration=100.0,
                  restart_overhead=10.0).run()
    # A: 90 s in round 0, 60 s (after 10 s) in round 2 -> 270; B likewise in rounds 1, 3
    assert r.finish.tolist() == [270.0, 370.0]
    assert r.preemptions.tolist() == [1, 1] and r.restarts.tolist() == [1, 1]
    assert r.attained.tolist() == [170.0, 170.0]


def test_elastic_speedup_and_slowest_type_of_a_mixed_gang() -> None:
    job = JobSpec(arrival=0.0, regimes=[(1, 1.0, [100.0, 200.0])], scaling=0.9)
    w = Workload.from_jobs([job], ["fast", "slow"])

    def two_gpus(state):
        return Schedule(np.array([[2, 0]]))

    r = Simulator(w, fa.Cluster({"fast": 2, "slow": 2}), Scripted(two_gpus),
                  round_duration=1000.0).run()
    assert r.finish[0] == pytest.approx(100.0 / 1.8)  # 2 GPUs at 90 % efficiency

    def mixed(state):
        return Schedule(np.array([[1, 1]]))

    r = Simulator(w, fa.Cluster({"fast": 2, "slow": 2}), Scripted(mixed),
                  round_duration=1000.0).run()
    assert r.finish[0] == pytest.approx(200.0 / 1.8)  # paced by the slow GPU
    assert r.sched_type.tolist() == [1]


def test_time_shares_are_realised_by_gavels_mechanism() -> None:
    # the paper's 3-job allocation (gavel §4.1) on one V100 and one K80; jobs never finish:
    # after 11 rounds every job has received exactly 11 X rounds on each type
    X = np.array([[5, 0], [5, 1], [1, 10]]) / 11
    w = Workload.from_arrays([0.0] * 3, [[1.0, 1.0]] * 3, [1e9] * 3, types=["v100", "k80"])
    pol = Scripted(lambda s: TimeShares(X))
    # (a job needing 1e9 rounds is refused unless the round limit is explicit)
    sim = Simulator(w, fa.Cluster({"v100": 1, "k80": 1}), pol, round_duration=1.0,
                    max_rounds=100)
    rounds = []

    def stop_after_12(done: int, total: int) -> None:
        rounds.append(1)
        if len(rounds) == 12:
            raise StopIteration

    with pytest.raises(StopIteration):
        sim.run(progress=stop_after_12)
    assert pol.seen[11].jobs.received.tolist() == [[5.0, 0.0], [5.0, 1.0], [1.0, 10.0]]
    assert pol.seen[11].jobs.elapsed.tolist() == [11.0, 11.0, 11.0]


@pytest.mark.parametrize("name", sorted(available_policies()))
def test_an_arrival_just_after_a_round_boundary_waits_for_the_next_round(name: str) -> None:
    # issue #27: a job arriving 1e-9 s after a round started was admitted to that round (a
    # 1e-9 s slack): it ran before it arrived and every policy saw elapsed = -1e-9 s (the Gavel
    # programs and Shockwave's contention factor refused it)
    D = 360.0
    arrival = [0.0] + [k * D + 1e-9 for k in range(1, 5)]
    # job 0 keeps the GPU busy, so the rounds stay on the grid 0, D, 2D, ...
    w = Workload.from_arrays(arrival, [[1.0]] * 5, [5000.0] + [100.0] * 4)
    seen: list = []

    class Watch(BasePolicy):
        name = "watch"

        def __init__(self) -> None:
            super().__init__()
            self.inner = make_policy(name)

        def reset(self, workload, cluster, *, round_duration, seed) -> None:
            self.inner.reset(workload, cluster, round_duration=round_duration, seed=seed)

        def allocate(self, state):
            seen.append((state.cluster.time, state.jobs.elapsed.min()))
            return self.inner.allocate(state)

    r = Simulator(w, fa.Cluster({"gpu": 1}), Watch(), round_duration=D).run()
    assert (r.start >= w.arrival).all()
    assert (r.start[1:] >= np.arange(2, 6) * D).all()  # the first round after the arrival
    assert all(elapsed >= 0.0 for _, elapsed in seen)


def test_an_arrival_on_a_round_boundary_joins_that_round() -> None:
    w = Workload.from_arrays([0.0, 720.0], [[1.0], [1.0]], [100.0, 100.0])
    r = Simulator(w, fa.Cluster({"gpu": 1}), Scripted(run_all), round_duration=360.0).run()
    assert r.start.tolist() == [0.0, 720.0]


def test_bad_policy_output_is_an_input_error_naming_the_policy() -> None:
    w = Workload.from_arrays([0.0, 0.0], [[1.0, 0.0], [1.0, 1.0]], [10.0, 10.0],
                             types=["a", "b"])
    cl = fa.Cluster({"a": 1, "b": 1})
    for out, match in [(Schedule(np.array([[1, 0], [1, 0]])), "uses 2 GPUs of type 'a'"),
                       (Schedule(np.array([[0, 1], [0, 0]])), "cannot run"),
                       (Schedule(np.array([[1, 0]])), "shape"),
                       (Schedule(np.array([[0.5, 0], [0, 0]])), "integers"),
                       ("run everything", "expected TimeShares or Schedule")]:
        with pytest.raises(fa.InputError, match=match):
            Simulator(w, cl, Scripted(lambda s, o=out: o)).run()


def test_a_policy_that_never_schedules_is_stopped() -> None:
    w = Workload.from_arrays([0.0], [[1.0]], [10.0])
    idle = Scripted(lambda s: Schedule(np.zeros((s.jobs.n, 1), dtype=int)))
    with pytest.raises(SimulationError, match="scheduled no job for 3"):
        Simulator(w, fa.Cluster({"gpu": 1}), idle, max_idle_rounds=3).run()


def test_simulator_argument_validation() -> None:
    w = Workload.from_arrays([0.0], [[1.0]], [10.0])
    cl = fa.Cluster({"gpu": 1})
    with pytest.raises(fa.InputError, match="round_duration"):
        Simulator(w, cl, make_policy("fifo"), round_duration=0)
    with pytest.raises(fa.InputError, match="restart_overhead"):
        Simulator(w, cl, make_policy("fifo"), round_duration=10, restart_overhead=10)
    with pytest.raises(fa.InputError, match="policy"):
        Simulator(w, cl, object())  # type: ignore[arg-type]
    with pytest.raises(fa.InputError, match="workload"):
        Simulator("w", cl, make_policy("fifo"))  # type: ignore[arg-type]
    with pytest.raises(fa.InputError, match="unknown policy"):
        simulate(w, cl, "nope")
    with pytest.raises(fa.InputError, match="policy_params"):
        simulate(w, cl, make_policy("fifo"), policy_params={"prefer": "order"})


def test_idle_gaps_are_skipped_to_the_next_arrival() -> None:
    w = Workload.from_arrays([0.0, 10_000.0], [[1.0], [1.0]], [100.0, 100.0])
    r = simulate(w, fa.Cluster({"gpu": 1}), "fifo", round_duration=360.0)
    assert r.finish.tolist() == [100.0, 10_100.0]
    assert r.round_time.tolist() == [0.0, 10_000.0]


POLICIES = ["fifo", "las", "allox", "gandiva_fair", "max_min_fairness", "isolated"]


@settings(max_examples=8)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(POLICIES),
       gpus=st.sampled_from([2, 4, 8]))
def test_conservation_capacity_and_determinism(seed: int, policy: str, gpus: int) -> None:
    w = poisson_workload(6, rate=20.0, seed=seed, max_scale_factor=gpus)
    cl = fa.Cluster({"v100": gpus})
    r = simulate(w, cl, policy, round_duration=600.0)
    # every job finishes, never before it could alone
    assert np.isfinite(r.finish).all() and (r.start >= w.arrival).all()
    assert (r.jct >= w.isolated_seconds * (1 - 1e-9)).all()
    # non-elastic, no overhead: the GPU-seconds held are exactly the jobs' GPU-times
    np.testing.assert_allclose(r.gpu_seconds, w.gpu_seconds, rtol=1e-9)
    # capacity in every round
    used = np.bincount(r.sched_round, weights=r.sched_gpus, minlength=r.round_time.size)
    assert (used <= gpus).all()
    again = simulate(w, cl, policy, round_duration=600.0)
    assert np.array_equal(again.finish, r.finish)
