"""Simulations do not depend on the clock (issue #27).

Shockwave's re-plans and Themis's auctions used to stop their MILPs at wall-clock limits, so the
same ``fairalloc simulate`` command gave different schedules on a quiet and on a loaded machine.
Their MILPs now stop at work limits (branch-and-bound nodes) and HiGHS runs on a fixed thread
count, so a machine a thousand times slower gives byte-identical outputs. The slow machine is
simulated by the standard library's clock running a thousand times fast (every time fairalloc
reads -- a deadline, a time limit, its statistics -- comes from ``time.perf_counter``), together
with a solver that sleeps before every solve (a backend subclass: the public seam).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.backends import HighsBackend
from fairalloc.cli import main
from fairalloc.sim import Simulator, make_policy, poisson_workload

#: how much slower the simulated machine is
SLOWDOWN = 1000.0
#: seconds the slowed solver sleeps before each solve (x SLOWDOWN on the simulated clock: far
#: beyond any time limit a policy ever had)
SOLVER_SLEEP = 0.002
#: a generated workload whose Shockwave re-plans need MILPs (about 27 of them) and whose Themis
#: policy runs about 56 auctions: 12 jobs, 4 GPUs, 30 arrivals an hour, 120 s rounds
SIMULATE = ["simulate", "--jobs", "12", "--gpus", "4", "--rate", "30", "--seed", "1",
            "--round-duration", "120", "--policy", "shockwave", "--policy", "themis",
            "--no-plots", "--no-progress"]
#: what the command writes about the schedules (timing.csv measures the machine)
OUTPUTS = ("summary.csv", "jobs.csv", "schedule.csv")


def _slow_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    real = time.perf_counter
    origin = real()
    monkeypatch.setattr(time, "perf_counter", lambda: origin + (real() - origin) * SLOWDOWN)


class _SleepyHighs(HighsBackend):
    """HiGHS that sleeps before every solve and counts its MILPs."""

    def __init__(self, sleep: float = 0.0) -> None:
        super().__init__()
        self.sleep = sleep
        self.milps = 0

    def solve_lp(self, lp: Any, **options: Any) -> Any:  # type: ignore[override]
        time.sleep(self.sleep)
        self.milps += int(lp.is_mip)
        return super().solve_lp(lp, **options)


def _simulate(out: Path) -> dict[str, bytes]:
    assert main([*SIMULATE, "--out", str(out)]) == 0
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def test_simulate_outputs_are_byte_identical_on_a_slow_machine(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = _simulate(tmp_path / "quiet")
    _slow_machine(monkeypatch)
    slow = _simulate(tmp_path / "slow")
    for name in OUTPUTS:
        assert quiet[name] == slow[name], name
    assert b"policy_seconds" not in quiet["summary.csv"]  # measured: timing.csv
    assert (tmp_path / "slow" / "timing.csv").exists()


def _run(policy: Any) -> Any:
    w = poisson_workload(12, rate=30.0, seed=1, types=["v100"], max_scale_factor=4)
    return Simulator(w, fa.Cluster({"v100": 4}), policy, round_duration=120.0, seed=1).run()


@pytest.mark.parametrize("name", ["shockwave", "themis"])
def test_per_job_results_identical_under_a_slowed_solver(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def policy(solver: _SleepyHighs) -> Any:
        # Themis's auctions take no backend: their MILPs run on HiGHS' defaults
        return make_policy(name, {"backend": solver} if name == "shockwave" else {})

    quick = _SleepyHighs()
    a = _run(policy(quick))
    _slow_machine(monkeypatch)
    slow = _SleepyHighs(SOLVER_SLEEP)
    b = _run(policy(slow))
    if name == "shockwave":
        assert quick.milps > 0 and slow.milps == quick.milps  # the re-plans solved MILPs
    for field in ("start", "finish", "attained", "gpu_seconds", "preemptions", "restarts",
                  "round_time", "round_busy", "sched_job", "sched_gpus", "sched_end"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
