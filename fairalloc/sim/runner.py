"""One call to run a simulation: `fairalloc.sim.simulate` (a policy object or a
registered name).

The simulator takes a policy object; this module, above both the simulator and the policy
registry, turns a policy name into a policy
(`fairalloc.sim.make_policy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..data import Cluster
from ..errors import InputError
from .metrics import SimulationResult
from .policies import make_policy
from .simulator import DEFAULT_ROUND_DURATION, Simulator
from .state import Policy
from .workload import Workload

__all__ = ["simulate"]

def simulate(workload: Workload, cluster: Cluster, policy: Policy | str, *,
             round_duration: float = DEFAULT_ROUND_DURATION, restart_overhead: float = 0.0,
             seed: int = 0,
             progress: Any = None, max_rounds: int | None = None,
             policy_params: Mapping[str, Any] | None = None) -> SimulationResult:
    """Run one simulation: ``policy`` is a `fairalloc.sim.Policy` or a registered name
    (`fairalloc.sim.make_policy`, with ``policy_params``).

    ``policy_params`` maps the named policy's factory parameters to values (each registered
    policy has its own; `fairalloc.sim.make_policy` checks them against the
    factory's signature and raises `fairalloc.InputError` for an unknown one); given
    with a policy object they are an `fairalloc.InputError`.

    Parameters
    ----------
    workload : Workload
        The jobs (`fairalloc.sim.poisson_workload`, `fairalloc.sim.read_trace`).
    cluster : fairalloc.Cluster
        Same accelerator types as the workload.
    policy : Policy or str
        A policy object or a registered name (`fairalloc.sim.available_policies`).
    round_duration : float, default 360.0
        Seconds per round (Gavel uses 360, Shockwave 120).
    restart_overhead : float, default 0.0
        Seconds lost by a job each time it (re)starts.
    seed : int, default 0
        Passed to the policy's ``reset`` (policies with random choices use it).
    progress : callable, optional
        Called as ``progress(finished_jobs, total_jobs)`` after every round
        (`fairalloc.sim.Simulator.run`).
    max_rounds : int, optional
        Stop with `fairalloc.sim.SimulationError` after this many rounds (default: a bound
        derived from the workload, `fairalloc.sim.Simulator`).
    policy_params : mapping, optional
        The named policy's parameters (above).

    Returns
    -------
    SimulationResult
        Per-job finish times, per-round schedule and the policy's time
        (`fairalloc.sim.summarize` for the headline metrics).

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.sim import poisson_workload, simulate
    >>> w = poisson_workload(6, rate=6.0, seed=0)
    >>> r = simulate(w, fa.Cluster({"v100": 4}), "max_min_fairness", round_duration=360.0)
    >>> bool((r.finish >= w.arrival).all()), r.policy
    (True, 'max_min_fairness')
    """
    if isinstance(policy, str):
        chosen: Policy = make_policy(policy, policy_params)
    elif policy_params:
        raise InputError("policy_params are only used with a policy name", argument="policy")
    else:
        chosen = policy
    return Simulator(workload, cluster, chosen, round_duration=round_duration,
                     restart_overhead=restart_overhead, seed=seed,
                     max_rounds=max_rounds).run(progress)
