"""``Simulator(..., mechanics="upstream")``: the Shockwave artifact's round mechanics
(uw-mad-dash/shockwave scheduler/scheduler.py), each checked by hand on a one-job simulation.

Each expected time below is worked out in the test's comment; the tolerance is the
simulator's own finish tolerance (`fairalloc.sim._rounds.FINISH_ATOL` scaled to seconds of
float round-off), never a measured figure.
"""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.sim import JobSpec, Schedule, Simulator, Workload, make_policy

GPU = fa.Cluster({"gpu": 1})
#: seconds of float round-off allowed on a finish time (steps / steps-per-second)
TOL = 1e-6


class SkipRound1:
    """Runs every active job on its gang except in round 1 (a preemption then a restart)."""

    name = "skip-round-1"

    def reset(self, workload, cluster, *, round_duration, seed):
        pass

    def allocate(self, state):
        on = -1 if state.cluster.round_index == 1 else 0
        return Schedule.from_types(np.full(state.jobs.n, on), state.jobs.scale_factor, 1)


def run(workload, policy, mechanics, overhead=0.0):
    return Simulator(workload, GPU, policy, round_duration=100.0, restart_overhead=overhead,
                     mechanics=mechanics).run()


def test_whole_steps_per_round():
    # 0.999 steps/s, 300 steps, rounds of 100 s. Upstream: int(99.9) = 99 steps a round, so
    # 297 after three rounds and the last 3 steps take 3 / 0.999 s of round 3. Event-accurate:
    # 300 / 0.999 = 300.3 s.
    w = Workload.from_arrays([0.0], [[0.999]], [300.0])
    up = run(w, make_policy("fifo"), "upstream")
    ev = run(w, make_policy("fifo"), "event")
    assert up.finish[0] == pytest.approx(300.0 + 3 / 0.999, abs=TOL)
    assert ev.finish[0] == pytest.approx(300 / 0.999, abs=TOL)


@pytest.mark.parametrize(("steps", "upstream", "event"), [
    # 250 steps at 1 step/s, overhead 20 s, the job preempted in round 1.
    # upstream: round 0 free of overhead (100), round 2 restarts with a full run: keeps
    # int(100 * 80 / 100) = 80 (180), round 3 runs 70 s: 370. event: 80 + 80 + 90: 390.
    (250.0, 370.0, 390.0),
    # 190 steps: upstream's restart in round 2 runs only 90 s <= 100 - 5: no overhead, 290.
    # event: 80 + 80 + 30 (round 3): 330.
    (190.0, 290.0, 330.0),
])
def test_restart_overhead(steps, upstream, event):
    w = Workload.from_arrays([0.0], [[1.0]], [steps])
    up = run(w, SkipRound1(), "upstream", overhead=20.0)
    ev = run(w, SkipRound1(), "event", overhead=20.0)
    assert up.finish[0] == pytest.approx(upstream, abs=TOL)
    assert ev.finish[0] == pytest.approx(event, abs=TOL)


def test_batch_size_changes_after_the_flagged_run_with_epochs_rounded_up():
    # 2 epochs of 10 steps at 30 s/epoch (1/3 step/s), then 10 epochs of 5 steps at 10 s/epoch.
    # event: 60 s + 10 * 10 s = 160 s. upstream: round 0 runs int(100 / 3) = 33 steps at the
    # first batch size (3.3 epochs); at its end the change is flagged (ceil(3.3) = 4 >= 2) and
    # applied after the job's next run: round 1 runs 33 more steps at the first batch size
    # (6.6 epochs), then the epochs are rounded up to 7; round 2 runs the last 5 epochs (25
    # steps at 0.5 step/s): 250 s. Without the rounding up: 5.4 epochs = 27 steps -> 254 s;
    # with the change applied at round 0's end already: ceil(3.3) = 4, 8 epochs -> 180 s.
    job = JobSpec(0.0, [(32, 2, [30.0]), (64, 10, [10.0])], iterations_per_epoch=[10, 5])
    w = Workload.from_jobs([job], types=["gpu"])
    up = run(w, make_policy("fifo"), "upstream")
    ev = run(w, make_policy("fifo"), "event")
    assert up.finish[0] == pytest.approx(250.0, abs=TOL)
    assert ev.finish[0] == pytest.approx(160.0, abs=TOL)


def test_gns_flags_one_epoch_ahead():
    # 5 epochs of 10 steps at 30 s/epoch (1/3 step/s), then 10 epochs of 5 steps at 10 s/epoch;
    # 33 steps (3.3 epochs) a round at the first batch size. After round 0 (3.3 epochs,
    # ceil 4): GNS flags (4 + 1 >= 5), accordion does not (4 < 5). GNS: round 1 runs at the
    # first batch size (6.6), rounded up to 7 = 2 epochs into the second regime; 8 left = 40
    # steps at 0.5 step/s = 80 s of round 2: 280 s. Accordion: flagged after round 1 (ceil 7
    # >= 5); round 2 -> 9.9, rounded up to 10; 5 left = 25 steps = 50 s of round 3: 350 s.
    def job(mode):
        return JobSpec(0.0, [(32, 5, [30.0]), (64, 10, [10.0])], iterations_per_epoch=[10, 5],
                       mode=mode)

    gns = run(Workload.from_jobs([job("gns")], types=["gpu"]), make_policy("fifo"), "upstream")
    acc = run(Workload.from_jobs([job("accordion")], types=["gpu"]), make_policy("fifo"),
              "upstream")
    assert gns.finish[0] == pytest.approx(280.0, abs=TOL)
    assert acc.finish[0] == pytest.approx(350.0, abs=TOL)


def test_same_batch_regimes_move_without_rounding():
    # two regimes with the same batch size (no batch-size change upstream): the job moves on
    # without rounding its epochs: 33 steps of 10 per epoch, then 17 more at 1/3 step/s
    # (the second regime's speed is the same): 100 + 51 s.
    job = JobSpec(0.0, [(32, 2, [30.0]), (32, 3, [30.0])], iterations_per_epoch=[10, 10])
    w = Workload.from_jobs([job], types=["gpu"])
    assert run(w, make_policy("fifo"), "upstream").finish[0] == pytest.approx(151.0, abs=TOL)


def test_default_is_event_and_option_checked():
    w = Workload.from_arrays([0.0], [[1.0]], [10.0])
    sim = Simulator(w, GPU, make_policy("fifo"), round_duration=100.0)
    assert sim.mechanics == "event"
    with pytest.raises(fa.InputError) as err:
        Simulator(w, GPU, make_policy("fifo"), round_duration=100.0, mechanics="paper")
    assert err.value.argument == "mechanics"


def test_less_than_a_step_a_round_is_refused():
    # 0.005 steps/s: int(0.5) = 0 whole steps a round of 100 s, upstream's job would never end
    w = Workload.from_arrays([0.0, 0.0], [[1.0], [0.005]], [10.0, 10.0])
    with pytest.raises(fa.InputError) as err:
        Simulator(w, GPU, make_policy("fifo"), round_duration=100.0, mechanics="upstream")
    assert err.value.argument == "workload" and err.value.index == (1, 0)
    Simulator(w, GPU, make_policy("fifo"), round_duration=100.0)  # event: fine


class RecordReceived(SkipRound1):
    """`SkipRound1`, keeping the time on the type each round's view shows."""

    def reset(self, workload, cluster, *, round_duration, seed):
        self.received = []

    def allocate(self, state):
        self.received.append(float(state.jobs.received[0, 0]))
        return super().allocate(state)


@pytest.mark.parametrize(("mechanics", "expected"), [
    # upstream: the 20 s charged at round 2's restart are not time on the type
    # (``execution_time -= preemption_overhead``): 100 (round 0) + 80 (round 2)
    ("upstream", [0.0, 100.0, 100.0, 180.0]),
    # event-accurate: every second held counts, overhead included: 100 + 100
    ("event", [0.0, 100.0, 100.0, 200.0]),
])
def test_charged_overhead_is_not_time_on_the_type(mechanics, expected):
    w = Workload.from_arrays([0.0], [[1.0]], [250.0])
    pol = RecordReceived()
    run(w, pol, mechanics, overhead=20.0)
    assert pol.received == pytest.approx(expected, abs=TOL)
