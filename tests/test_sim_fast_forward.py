"""The simulator fast-forwards over rounds in which nothing can change (issue #27).

A ``time_invariant`` policy (FIFO, EFQ) is not called between events and runs of identical
rounds are jumped over in one step; the results are bit-for-bit those of stepping through every
round (``fast_forward=False``). A workload that cannot finish within the documented round bounds
is refused up front, so no simulation runs unbounded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc import InputError
from fairalloc.sim import JobSpec, Simulator, Workload, make_policy, simulate

#: every array a simulation returns (compared bit for bit, NaN equal to NaN)
FIELDS = ("start", "finish", "attained", "gpu_seconds", "preemptions", "restarts",
          "round_time", "round_busy", "round_active", "round_demand", "sched_job",
          "sched_round", "sched_type", "sched_gpus", "sched_start", "sched_end")


class Counting:
    """A registered policy, with its ``allocate`` calls counted (a wrapper: the public
    protocol, nothing of the policy patched)."""

    def __init__(self, name: str) -> None:
        self.inner = make_policy(name)
        self.name = name
        self.time_invariant = getattr(self.inner, "time_invariant", False)
        self.params: dict = {}
        self.calls = 0

    def reset(self, workload: Any, cluster: Any, *, round_duration: float, seed: int) -> None:
        self.calls = 0
        self.inner.reset(workload, cluster, round_duration=round_duration, seed=seed)

    def allocate(self, state: Any) -> Any:
        self.calls += 1
        return self.inner.allocate(state)


@st.composite
def workloads(draw: Any) -> tuple[Workload, fa.Cluster, float, float]:
    """Random jobs with regimes (speeds that change), gangs, elastic scaling, one or two GPU
    types (a job may be unable to use one), arrivals on, just after and between round
    boundaries; round durations that are not integers."""
    k = draw(st.integers(1, 2))
    types = ["a", "b"][:k]
    caps = [draw(st.integers(1, 4)) for _ in range(k)]
    D = draw(st.sampled_from([360.0, 7.3, 0.1, 1e-3 * 1024 / 3]))
    jobs = []
    for i in range(draw(st.integers(1, 5))):
        sf = draw(st.integers(1, min(caps)))
        usable = [draw(st.booleans()) for _ in range(k)]
        if not any(usable):
            usable = [True] * k
        regimes = []
        for r in range(draw(st.integers(1, 3))):
            sec = [draw(st.floats(0.01, 3.0)) * D if usable[j] else np.inf for j in range(k)]
            regimes.append((2.0 ** r * 16, draw(st.floats(0.5, 40.0)), sec))
        slot = draw(st.integers(0, 12))
        arrival = slot * D + draw(st.sampled_from([0.0, 1e-9, 0.5 * D, -1e-9 if slot else 0.0]))
        jobs.append(JobSpec(arrival=arrival, regimes=regimes, scale_factor=sf,
                            scaling=draw(st.sampled_from([1.0, 0.9, 0.6])), job_id=f"j{i}",
                            mode="accordion"))
    overhead = draw(st.sampled_from([0.0, 0.2 * D]))
    return Workload.from_jobs(jobs, types), fa.Cluster(dict(zip(types, caps))), D, overhead


@pytest.mark.parametrize("name", ["fifo", "efq"])
@settings(max_examples=40, deadline=None)
@given(case=workloads())
def test_fast_forward_is_bit_for_bit_stepping(name: str, case: Any) -> None:
    w, cluster, D, overhead = case
    runs = {}
    for fast in (False, True):
        pol = Counting(name)
        runs[fast] = (Simulator(w, cluster, pol, round_duration=D, restart_overhead=overhead,
                                fast_forward=fast).run(), pol.calls)
    (step, step_calls), (jump, jump_calls) = runs[False], runs[True]
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(step, field), getattr(jump, field),
                                      err_msg=field)
    assert step_calls == step.round_time.size  # stepping asks the policy every round
    assert jump_calls <= step_calls


@pytest.mark.parametrize("name", ["fifo", "efq"])
def test_a_long_job_alone_is_decided_once(name: str) -> None:
    # 3,000 rounds of 360 s; with another job arriving in the middle and a regime change
    job = JobSpec(arrival=0.0, regimes=[(32, 1_500.0, [360.0]), (64, 1_500.0, [360.0])])
    late = JobSpec(arrival=1_000 * 360.0 + 1e-9, regimes=[(32, 1.0, [360.0])])
    w = Workload.from_jobs([job, late], ["gpu"])
    pol = Counting(name)
    r = Simulator(w, fa.Cluster({"gpu": 1}), pol, round_duration=360.0).run()
    # one decision per event: start, regime change, arrival, finishes (not one per round)
    assert pol.calls <= 6, pol.calls
    assert r.round_time.size >= 3_000
    step = Simulator(w, fa.Cluster({"gpu": 1}), make_policy(name), round_duration=360.0,
                     fast_forward=False).run()
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(step, field), getattr(r, field), err_msg=field)


def test_a_million_round_job_takes_seconds() -> None:
    w = Workload.from_arrays([0.0], [[1.0]], [360.0 * 1e6])
    pol = Counting("fifo")
    r = simulate(w, fa.Cluster({"gpu": 4}), pol, round_duration=360.0)
    assert r.finish[0] == pytest.approx(360.0 * 1e6, rel=1e-9) and pol.calls == 1
    assert r.round_time.size == 1_000_000 and r.round_time[-1] == 360.0 * (1e6 - 1)


def test_a_workload_a_stepping_policy_cannot_finish_is_refused_up_front() -> None:
    from fairalloc.sim.simulator import MAX_ROUNDS, MAX_STEPPED_ROUNDS

    # a job alone needs 2,000,000 rounds: LAS (not time-invariant) would step through them
    w = Workload.from_arrays([0.0], [[1.0]], [360.0 * 2 * MAX_STEPPED_ROUNDS])
    with pytest.raises(InputError, match="MAX_STEPPED_ROUNDS") as info:
        Simulator(w, fa.Cluster({"gpu": 1}), make_policy("las"), round_duration=360.0)
    assert info.value.argument == "workload"
    with pytest.raises(InputError, match="MAX_STEPPED_ROUNDS"):
        Simulator(w, fa.Cluster({"gpu": 1}), make_policy("fifo"), round_duration=360.0,
                  fast_forward=False)
    # FIFO fast-forwards: allowed; an explicit max_rounds allows the stepping policy too
    Simulator(w, fa.Cluster({"gpu": 1}), make_policy("fifo"), round_duration=360.0)
    Simulator(w, fa.Cluster({"gpu": 1}), make_policy("las"), round_duration=360.0,
              max_rounds=10)
    # more rounds than any simulation keeps records for
    huge = Workload.from_arrays([0.0], [[1.0]], [360.0 * 2 * MAX_ROUNDS])
    with pytest.raises(InputError, match="MAX_ROUNDS"):
        Simulator(huge, fa.Cluster({"gpu": 1}), make_policy("fifo"), round_duration=360.0)


def test_elastic_jobs_bound_by_their_fastest_possible_run() -> None:
    from fairalloc.sim.simulator import MAX_STEPPED_ROUNDS

    # EFQ may give a job all 8 GPUs (linear scaling): 8x faster than its gang of 1; the
    # refusal reads the fastest possible run, so a job needing 1.5 M rounds on one GPU but
    # 187,500 on eight is accepted for a stepping elastic policy as well
    job = JobSpec(arrival=0.0, regimes=[(32, 1.5 * MAX_STEPPED_ROUNDS, [360.0])], scaling=1.0)
    w = Workload.from_jobs([job], ["gpu"])
    sim = Simulator(w, fa.Cluster({"gpu": 8}), make_policy("efq"), round_duration=360.0,
                    fast_forward=False)
    assert sim.min_rounds() == 1.5 * MAX_STEPPED_ROUNDS / 8
