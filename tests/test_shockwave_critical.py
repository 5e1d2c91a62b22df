"""ShockwavePolicy's critical-path rule (``critical="drain"``, the default; issue #31 item 3)."""

from __future__ import annotations

import pytest

import fairalloc as fa
from fairalloc.sim import Workload, simulate
from fairalloc.sim.policies.shockwave import ShockwavePolicy

#: the simulator's default round (seconds)
ROUND = 360.0


def _three_jobs() -> Workload:
    """8, 4 and 4 rounds of work arriving together: on 2 GPUs the makespan's lower bound
    ``max(sum_j R_j / M, max_j R_j) = max(16 / 2, 8) = 8`` rounds is met only if the
    8-round job runs every round."""
    return Workload.from_arrays([0.0] * 3, [[1.0]] * 3, [8 * ROUND, 4 * ROUND, 4 * ROUND])


def test_a_job_on_the_critical_path_runs_every_round() -> None:
    """Hand-checked: the 8-round job's remaining time equals the drain time 16 / 2 rounds, so it
    is critical and runs every round: it ends at 8 rounds (the lower bound) and the two short
    jobs share the other GPU (4 and 8 rounds). Without the rule the plan runs both short jobs
    first and the long one ends at 12 rounds (the previous default)."""
    w, cluster = _three_jobs(), fa.Cluster({"gpu": 2})
    r = simulate(w, cluster, ShockwavePolicy())
    assert sorted(r.finish.tolist()) == [4 * ROUND, 8 * ROUND, 8 * ROUND]
    assert r.finish[0] == 8 * ROUND
    off = simulate(w, cluster, ShockwavePolicy(critical="off"))
    assert off.finish.max() > 8 * ROUND


def test_critical_is_a_recorded_validated_option_and_off_in_the_preset() -> None:
    assert ShockwavePolicy().params["critical"] == "drain"
    assert ShockwavePolicy(preset="upstream").params["critical"] == "off"
    assert ShockwavePolicy(preset="upstream", critical="drain").params["critical"] == "drain"
    with pytest.raises(fa.InputError) as e:
        ShockwavePolicy(critical="longest")
    assert e.value.argument == "critical"


def test_critical_rounds_count_rounds_beyond_the_plan() -> None:
    """A plan with no makespan term (``lam=0``) over a two-round window does not give the
    critical job every round; the rule still runs it every round (it ends at the lower bound of
    8 rounds), and ``critical_rounds`` counts the rounds it ran beyond the plan's count."""
    w, cluster = _three_jobs(), fa.Cluster({"gpu": 2})
    pol = ShockwavePolicy(lam=0.0, window=2)
    r = simulate(w, cluster, pol)
    assert r.finish[0] == 8 * ROUND
    assert pol.critical_rounds > 0
    off = ShockwavePolicy(lam=0.0, window=2, critical="off")
    assert simulate(w, cluster, off).finish[0] > 8 * ROUND
    assert off.critical_rounds == 0
