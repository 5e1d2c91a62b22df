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
