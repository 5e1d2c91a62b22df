"""The Shockwave artifact's baselines as its code runs them (issue #31, item 2): upstream's
round loop (`UpstreamRounds`, `GavelPolicy(rounds="upstream")`), its AlloX and its Gandiva-fair.

Each case is small enough to follow by hand; the expected finish times are derived in the
comments from upstream's rules (scheduler.py, allox.py, gandiva_fair_proportional.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.sim import (
    AlloXUpstreamPolicy,
    GandivaFairUpstreamPolicy,
    GavelPolicy,
    OSSPUpstreamPolicy,
    Workload,
    make_policy,
    simulate,
)
from fairalloc.sim.policies.upstream_rounds import UpstreamRounds

ONE_GPU = fa.Cluster({"gpu": 1})


def _finish(w: Workload, cluster: fa.Cluster, policy: object) -> list[float]:
    r = simulate(w, cluster, policy, round_duration=100.0)
    return np.round(r.finish).tolist()


def test_a_job_arriving_between_solves_waits_for_the_next_one() -> None:
    # solve at 100 s (job 0 only); job 1 arrives at 200 s and is not in the allocation: the
    # GPU idles after job 0 ends at 400 s until the next solve, 1000 s after the first
    w = Workload.from_arrays([100.0, 200.0], [[1.0], [1.0]], [300.0, 300.0])
    upstream = GavelPolicy("max_min_fairness", rounds="upstream")
    assert _finish(w, ONE_GPU, upstream) == [400.0, 1400.0]
    assert upstream.solves == 2
    # without the 1000 s gate job 1 is solved in at its arrival: shares 1/2 each from
    # 200 s, ties to row 0 (200-300 s), then job 1 (300-400 s), job 0 (400-500 s), job 1
    assert _finish(w, ONE_GPU, GavelPolicy("max_min_fairness", rounds="upstream",
                                           min_interval=0.0)) == [500.0, 700.0]
    # the simulator's own rounds re-solve at the arrival and share the GPU
    assert _finish(w, ONE_GPU, GavelPolicy("max_min_fairness"))[1] < 1400.0


def test_a_solve_at_time_zero_does_not_start_the_interval() -> None:
    # upstream reads _last_reset_time == 0 as "never reset": the arrival at 100 s is solved
    # at once (2 solves); the completions after it wait for 1100 s, after the last job ends
    w = Workload.from_arrays([0.0, 100.0], [[1.0], [1.0]], [300.0, 300.0])
    p = GavelPolicy("max_min_fairness", rounds="upstream")
    simulate(w, ONE_GPU, p, round_duration=100.0)
    assert p.solves == 2


def test_upstream_rounds_serve_by_allocation_over_time_received() -> None:
    # two jobs with equal shares on one GPU: after each reset every job holds half a round
    # (50 s); ties go to the first row, then the job that has run less: they alternate
    class Equal:
        name = "equal"

        def reset(self, workload, cluster, *, round_duration, seed):
            self.rounds = UpstreamRounds(1000.0)
            self.rounds.reset(workload.n)

        def allocate(self, state):
            due = self.rounds.due(state)
            x = np.full((state.jobs.n, 1), 0.5) if due else None
            return self.rounds.realise(state, x)

    w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [200.0, 200.0])
    r = simulate(w, ONE_GPU, Equal(), round_duration=100.0)
    assert np.round(r.finish).tolist() == [300.0, 400.0]


def test_allox_upstream_keeps_a_placed_one_gpu_job_on_its_gpu() -> None:
    # job 0 (10 rounds) is placed alone at 0 s with allocation 1; upstream never re-matches
    # it (allox.py:56-58), so the shorter job 1 waits until 1000 s. fairalloc's AlloX
    # re-matches every round and runs job 1 first.
    w = Workload.from_arrays([0.0, 100.0], [[1.0], [1.0]], [1000.0, 200.0])
    assert _finish(w, ONE_GPU, AlloXUpstreamPolicy()) == [1000.0, 1200.0]
    assert _finish(w, ONE_GPU, make_policy("allox")) == [1200.0, 300.0]


def test_allox_upstream_alpha_matches_only_the_longest_waiting_jobs() -> None:
    # both arrive at 0 s: with alpha = 0.2 only max(int(0.2 * 2), 1 free worker) = 1 job, the
    # first of the longest waiting (row 0), is matched and keeps the GPU; with alpha = 1 the
    # matching puts the shorter job 1 first (shortest processing time)
    w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [300.0, 100.0])
    assert _finish(w, ONE_GPU, AlloXUpstreamPolicy()) == [300.0, 400.0]
    assert _finish(w, ONE_GPU, AlloXUpstreamPolicy(alpha=1.0)) == [400.0, 100.0]


def test_allox_upstream_gives_a_gang_one_worker_as_a_time_share() -> None:
    # a 2-GPU job on 2 GPUs matched to one worker gets 1 / 2 (allox.py:180); the second
    # worker goes to the 1-GPU job. The round loop serves the larger share first: the 1-GPU
    # job (allocation 1) runs first and the gang, which then no longer fits, waits for it
    w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [200.0, 100.0], scale_factor=[2, 1])
    p = AlloXUpstreamPolicy(alpha=1.0)
    assert _finish(w, fa.Cluster({"gpu": 2}), p) == [300.0, 100.0]
    assert p.recomputes >= 1


def test_gandiva_fair_upstream_gives_equal_shares_whatever_the_gang() -> None:
    # two jobs on 2 GPUs: each gets min(1, 2 / 2) = 1 (gandiva_fair_proportional.py:30-39),
    # 3 workers asked for 2: the gang (first row) runs 0-100 s, then the 1-GPU job, which
    # has received less of its share, then the gang again
    w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [200.0, 100.0], scale_factor=[2, 1])
    assert _finish(w, fa.Cluster({"gpu": 2}), GandivaFairUpstreamPolicy()) == [300.0, 200.0]


@pytest.mark.parametrize("make", [
    lambda: GavelPolicy("max_min_fairness", rounds="upstream", min_interval=-1.0),
    lambda: GavelPolicy("max_min_fairness", rounds="upstream", min_interval=float("inf")),
    lambda: AlloXUpstreamPolicy(min_interval="1000"),
    lambda: GandivaFairUpstreamPolicy(min_interval=True),
])
def test_bad_min_interval_is_refused(make) -> None:
    with pytest.raises(fa.InputError) as e:
        make()
    assert e.value.argument == "min_interval"


def test_bad_rounds_and_alpha_are_refused() -> None:
    with pytest.raises(fa.InputError) as e:
        GavelPolicy("max_min_fairness", rounds="gavel")
    assert e.value.argument == "rounds"
    with pytest.raises(fa.InputError) as e:
        AlloXUpstreamPolicy(alpha=1.5)
    assert e.value.argument == "alpha"


def test_registered_by_name() -> None:
    assert isinstance(make_policy("allox_upstream"), AlloXUpstreamPolicy)
    assert isinstance(make_policy("gandiva_fair_upstream"), GandivaFairUpstreamPolicy)
    assert isinstance(make_policy("ossp_upstream"), OSSPUpstreamPolicy)
    assert make_policy("allox_upstream", {"alpha": 0.5}).alpha == 0.5


def test_ossp_upstream_bisects_the_horizon_to_five_percent() -> None:
    # jobs of 100 s and 300 s on one GPU arriving together at 100 s (not at 0 s, which
    # upstream does not count as a recomputation time): a horizon T is feasible when
    # 100 / T + 300 / T <= 1, i.e. T >= 400 s. Upstream halves [100, 1e6] until the bracket
    # is within 5 % (min_total_duration.py:104-130): one feasibility solve per midpoint
    lo, hi, midpoints = 100.0, 1e6, 0
    while 1.05 * lo < hi:
        t = (lo + hi) / 2.0
        midpoints += 1
        lo, hi = (lo, t) if t >= 400.0 else (t, hi)
    w = Workload.from_arrays([100.0, 100.0], [[1.0], [1.0]], [100.0, 300.0])
    p = OSSPUpstreamPolicy()
    r = simulate(w, ONE_GPU, p, round_duration=100.0)
    assert p.solves == midpoints          # one recomputation: the last job ends at 500 s,
    assert round(float(r.finish.max())) == 500   # before the next one (1000 s later)


def test_ossp_upstream_solver_failure_is_a_solver_error() -> None:
    w = Workload.from_arrays([0.0], [[1.0]], [100.0])
    with pytest.raises(fa.SolverError):
        simulate(w, ONE_GPU, OSSPUpstreamPolicy(solver="NO_SUCH_SOLVER"), round_duration=100.0)
    with pytest.raises(fa.InputError) as e:
        OSSPUpstreamPolicy(solver="")
    assert e.value.argument == "solver"


def test_themis_cumulative_isolated_time_survives_a_smaller_batch() -> None:
    # job 0 runs 2 epochs of 10 steps, then 4 epochs of 40 steps (a smaller batch): its steps
    # left grow from at most 20 to 160 between two solves, so upstream's sum of steps done
    # over isolated throughput goes below 0. The program needs an isolated time >= 0: the sum
    # is handed over clipped at 0 (it used to raise InputError at the regime change)
    from fairalloc.sim import JobSpec

    a = JobSpec(0.0, [(64, 2, [100.0]), (16, 4, [100.0])], iterations_per_epoch=[10.0, 40.0])
    b = JobSpec(0.0, [(32, 6, [100.0])])
    w = Workload.from_jobs([a, b], types=["gpu"])
    p = GavelPolicy("finish_time_fairness", isolated_time="cumulative")
    r = simulate(w, ONE_GPU, p, round_duration=100.0)
    # 12 rounds of work on one GPU, none idle
    assert sorted(np.round(r.finish).tolist()) == [1000.0, 1200.0]
