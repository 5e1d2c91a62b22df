"""Gavel's effective-throughput programs as a simulator policy (Gavel §4-5).

`fairalloc.sim.GavelPolicy` solves one of the library's Gavel programs
(`fairalloc.sim.policies.gavel.GAVEL_OBJECTIVES`) on the active jobs and returns
fractional `fairalloc.sim.TimeShares`, which the simulator realises with Gavel's
round-based mechanism; the program is re-solved when jobs arrive, finish or change regime (or every
round with ``recompute="round"``).

The programs come from the one table of Gavel policies,
`fairalloc.throughput.registry.GAVEL_POLICIES`:
every policy there whose inputs the simulator can provide
(`fairalloc.sim.policies.gavel.SIMULATOR_PROVIDES`) is an objective here and
is registered by its name (`fairalloc.sim.policies.gavel.gavel_policies`), so
adding a Gavel policy needs no edit in ``fairalloc.sim``. This module only adds what is the
simulator's own: the short names of the papers' evaluations
(`fairalloc.sim.policies.gavel.GAVEL_ALIASES`), the 1/n split ``"isolated"``, and
the fixed options some objectives run with
(`fairalloc.sim.policies.gavel.OBJECTIVE_OPTIONS`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from ..._validation import as_bool, as_option
from ...data import Cluster, Jobs
from ...errors import InputError
from ...throughput import isolated_split
from ...throughput.registry import GAVEL_POLICIES as THROUGHPUT_POLICIES
from ..state import RoundState, Schedule, TimeShares
from ..workload import Workload
from .base import BasePolicy
from .upstream_programs import UPSTREAM_PROGRAMS, as_solver_name, solve_upstream_program
from .upstream_rounds import UPSTREAM_MIN_INTERVAL, UpstreamRounds, as_min_interval

__all__ = ["GAVEL_ALIASES", "GAVEL_OBJECTIVES", "OBJECTIVE_OPTIONS", "SIMULATOR_PROVIDES",
           "GavelPolicy", "gavel_policies"]

#: the job data a simulated round gives a Gavel program beyond throughputs
#: (`fairalloc.sim.state.JobView.to_jobs`); a registry policy that
#: needs more (e.g. ``cost``)
#: is not offered by the simulator
SIMULATOR_PROVIDES = frozenset({"steps_remaining"})

#: the Gavel programs a `fairalloc.sim.GavelPolicy` can run (``"isolated"``: the 1/n
#: split, no program)
GAVEL_OBJECTIVES = (*(name for name, spec in THROUGHPUT_POLICIES.items()
                      if set(spec.needs) <= SIMULATOR_PROVIDES), "isolated")

#: objective -> (registry policy whose function solves it, the options it always runs with):
#: the simulator's water-filling is Gavel's single-level max-min water-filling, and its
#: maximum total throughput is normalised (the papers' "MST")
OBJECTIVE_OPTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "water_filling": ("max_min_fairness", {"water_filling": True}),
    "max_total_throughput": ("max_total_throughput", {"normalized": True}),
}

#: the simulator's own names: name -> (objective, description)
GAVEL_ALIASES: dict[str, tuple[str, str]] = {
    "gavel": ("max_min_fairness", "alias of max_min_fairness"),
    "themis_ftf": ("finish_time_fairness",
                   "the Shockwave artifact's 'Themis' baseline: Gavel's FTF program"),
    "ossp": ("min_makespan", "OSSP baseline: minimum makespan"),
    "mst": ("max_total_throughput", "alias of max_total_throughput"),
    "gavel_fifo": ("fifo", "Gavel's FIFO program"),
    "sjf": ("shortest_job_first", "Gavel's shortest-job-first program"),
    "isolated": ("isolated", "each job 1/n of every type"),
}


def gavel_policies() -> dict[str, tuple[str, str]]:
    """Simulator name -> (objective, description) of every Gavel program: each objective under
    its registry name (description from the registry), then
    `fairalloc.sim.policies.gavel.GAVEL_ALIASES`."""
    out = {name: (name, f"Gavel {THROUGHPUT_POLICIES[name].description}")
           for name in GAVEL_OBJECTIVES if name in THROUGHPUT_POLICIES}
    out.update(GAVEL_ALIASES)
    return out


def _check_upstream_program(objective: str, normalized: bool | None,
                            given: dict[str, Any]) -> None:
    """`fairalloc.InputError` unless ``GavelPolicy(objective, ..., solver=...)`` names an
    upstream program (`fairalloc.sim.policies.upstream_programs.UPSTREAM_PROGRAMS`) and no
    option of fairalloc's exact solve."""
    if objective not in UPSTREAM_PROGRAMS:
        raise InputError(f"solver applies to objectives {sorted(UPSTREAM_PROGRAMS)} only "
                         f"(the artifact's programs), not {objective!r}", argument="solver")
    if objective == "max_total_throughput" and normalized is not False:
        raise InputError("solver runs the artifact's MST, the raw sum of steps per second: "
                         "give normalized=False", argument="normalized")
    for name in ("method", "backend", "gap_tol", "feas_tol"):
        if given[name] is not None:
            raise InputError(f"{name} is an option of fairalloc's exact solve, not of "
                             "solver=", argument=name)
    if given["work_conserving"]:
        raise InputError("the artifact's programs have no work-conserving stage: "
                         "work_conserving=True does not apply with solver=",
                         argument="work_conserving")


def _solve(objective: str, jobs: Jobs, cluster: Cluster, options: dict[str, Any]) -> Any:
    """Time shares ``x`` of the Gavel program ``objective`` (``options``: solver options)."""
    if objective == "isolated":
        return isolated_split(jobs, cluster)
    name, fixed = OBJECTIVE_OPTIONS.get(objective, (objective, {}))
    return THROUGHPUT_POLICIES[name].function(jobs, cluster, **{**fixed, **options}).x


class GavelPolicy(BasePolicy):
    """A Gavel effective-throughput program as a simulator policy (Gavel §4-5).

    Parameters
    ----------
    objective : str
        One of `fairalloc.sim.policies.gavel.GAVEL_OBJECTIVES`.
    recompute : {"event", "round"}
        Re-solve when jobs arrive, finish or change regime (default; Gavel recomputes its
        allocation on such events), or every round.
    name : str, optional
        Display name (default ``objective``).
    method, backend, work_conserving, gap_tol, feas_tol : optional
        Passed to the library function when given (e.g. ``method="highs"``); ``None``: the
        function's default. Not used by ``"isolated"``.
    normalized : bool, optional
        ``"max_total_throughput"`` only: ``False`` sums raw throughputs (steps per second,
        the Shockwave artifact's MST) instead of the normalised ones (default).
    isolated_time : {"elapsed", "cumulative"}
        ``"finish_time_fairness"`` only: the isolated time a job has already had (``t_iso``
        of rho's denominator): its time since arrival (default), or, as the Shockwave
        artifact's Themis, the steps it ran between two solves divided by its isolated (1/n
        split) throughput at the first of them, summed.
    rounds : {"simulator", "upstream"}
        How the allocation becomes each round's GPUs: the simulator's round mechanism
        (default; the program re-solved as ``recompute`` says), or the Shockwave artifact's
        round loop (`fairalloc.sim.policies.upstream_rounds.UpstreamRounds`: re-solved at
        most every ``min_interval`` seconds after an arrival, completion or regime change;
        jobs that arrived since wait for the next solve; history restarted at each solve).
    min_interval : float
        ``rounds="upstream"`` only: seconds between two solves (upstream: 1000).
    solver : str, optional
        ``"finish_time_fairness"``, ``"max_min_fairness"`` and ``"max_total_throughput"``
        (with ``normalized=False``) only: solve the Shockwave artifact's own cvxpy program
        (`fairalloc.sim.policies.upstream_programs`) with this cvxpy solver and keep the point
        it returns, as upstream does, instead of fairalloc's exact solve. Both programs have
        many optimal points on the artifact's traces: an interior-point solver
        (``"CLARABEL"``; upstream ran ECOS for MST and Gurobi's barrier for Themis) returns one
        in the middle of the optimal face, fairalloc's exact solve a vertex; through
        ``rounds="upstream"`` the point decides which jobs run. ``None`` (default): the exact
        solve.

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), GavelPolicy("finish_time_fairness"))
    >>> r.policy, r.finish.tolist()
    ('finish_time_fairness', [360.0, 1080.0])

    The artifact's MST through its round loop on two GPUs, a 1-GPU job and a 2-GPU gang of
    the same steps/s per GPU (every split of the GPUs is optimal): the exact solve's vertex
    runs the gang first; the interior point gives both a share and they take turns:

    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [2.0]], [240.0, 480.0],
    ...                          scale_factor=[1, 2])
    >>> def mst(solver):
    ...     return GavelPolicy("max_total_throughput", normalized=False,
    ...                        work_conserving=False, rounds="upstream", solver=solver)
    >>> [simulate(w, fa.Cluster({"gpu": 2}), mst(s), round_duration=120.0).finish.tolist()
    ...  for s in (None, "CLARABEL")]
    [[480.0, 240.0], [480.0, 360.0]]
    """

    def __init__(self, objective: str = "max_min_fairness", *, recompute: str = "event",
                 name: str | None = None, method: str | None = None, backend: Any = None,
                 work_conserving: bool | None = None, gap_tol: float | None = None,
                 feas_tol: float | None = None, normalized: bool | None = None,
                 isolated_time: str = "elapsed", rounds: str = "simulator",
                 min_interval: float = UPSTREAM_MIN_INTERVAL, solver: str | None = None) -> None:
        objective = as_option(objective, "objective", GAVEL_OBJECTIVES)
        if normalized is not None:
            if objective != "max_total_throughput":
                raise InputError("normalized applies to objective='max_total_throughput' only, "
                                 f"not {objective!r}", argument="normalized")
            normalized = as_bool(normalized, "normalized")
        isolated_time = as_option(isolated_time, "isolated_time", ("elapsed", "cumulative"))
        if isolated_time != "elapsed" and objective != "finish_time_fairness":
            raise InputError("isolated_time applies to objective='finish_time_fairness' only, "
                             f"not {objective!r}", argument="isolated_time")
        recompute = as_option(recompute, "recompute", ("event", "round"))
        rounds = as_option(rounds, "rounds", ("simulator", "upstream"))
        min_interval = as_min_interval(min_interval)
        given = {"method": method, "backend": backend, "work_conserving": work_conserving,
                 "gap_tol": gap_tol, "feas_tol": feas_tol, "normalized": normalized}
        solve_options = {k: v for k, v in given.items() if v is not None}
        if solver is not None:
            solver = as_solver_name(solver)
            _check_upstream_program(objective, normalized, given)
        super().__init__({"objective": objective, "recompute": recompute, **solve_options,
                          **({"isolated_time": isolated_time}
                             if isolated_time != "elapsed" else {}),
                          **({"rounds": rounds, "min_interval": min_interval}
                             if rounds == "upstream" else {}),
                          **({"solver": solver} if solver is not None else {})})
        self.solver = solver
        self.rounds = rounds
        self._upstream = UpstreamRounds(min_interval) if rounds == "upstream" else None
        self.isolated_time = isolated_time
        self.name = name or objective
        self.objective = objective
        self.recompute = recompute
        self.solve_options = solve_options
        self._x: dict[Hashable, np.ndarray] = {}
        self.solves = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._x = {}
        # isolated_time="cumulative": per workload row, isolated seconds so far, and the steps
        # left and isolated throughput at the previous solve (0: not seen)
        self._iso = np.zeros(workload.n)
        self._prev_steps = np.zeros(workload.n)
        self._prev_rate = np.zeros(workload.n)
        self.solves = 0
        if self._upstream is not None:
            self._upstream.reset(workload.n)

    def allocate(self, state: RoundState) -> TimeShares | Schedule:
        v = state.jobs
        cluster = state.cluster.cluster
        if self._upstream is not None:
            if not self._upstream.due(state):
                return self._upstream.realise(state)
            self.solves += 1
            return self._upstream.realise(state, self._solve_now(v, cluster))
        stale = (self.recompute == "round" or bool(state.arrived) or bool(state.finished)
                 or bool(v.regime_changed.any()) or any(i not in self._x for i in v.ids))
        if stale:
            x = self._solve_now(v, cluster)
            self.solves += 1
            self._x = dict(zip(v.ids, np.asarray(x), strict=True))
        return TimeShares(np.array([self._x[i] for i in v.ids]))

    def _solve_now(self, v: Any, cluster: Cluster) -> np.ndarray:
        """The program's time shares for the active jobs ``v``."""
        jobs = v.to_jobs()
        if self.isolated_time == "cumulative":
            jobs = self._cumulative_isolated(v, jobs, cluster)
        if self.solver is None:
            return np.asarray(_solve(self.objective, jobs, cluster, self.solve_options))
        tp = np.asarray(jobs.throughput, dtype=float)
        ftf = self.objective == "finish_time_fairness"
        return solve_upstream_program(
            self.objective, tp, jobs.scale_factor, cluster.capacity.astype(float), self.solver,
            steps=jobs.steps_remaining if ftf else None, elapsed=jobs.elapsed,
            isolated_elapsed=(jobs.elapsed if jobs.isolated_elapsed is None
                              else jobs.isolated_elapsed),
            isolated_rate=(tp * isolated_split(jobs, cluster)).sum(axis=1) if ftf else None,
            weight=jobs.weight)

    def _cumulative_isolated(self, v: Any, jobs: Jobs, cluster: Cluster) -> Jobs:
        """``jobs`` with ``isolated_elapsed`` accumulated as the Shockwave artifact's Themis.

        As upstream (finish_time_fairness.py:103-114), the work done is the drop in steps
        left, whose size changes with the batch size: a job that moved to a smaller batch has
        more steps left than before and its sum goes down, below 0 at worst. The sum is kept
        as upstream's; the isolated time handed to the program is clipped at 0 (a time)."""
        rows = np.asarray(v.index, dtype=np.int64)
        steps = np.asarray(jobs.steps_remaining, dtype=float)
        prev = self._prev_rate[rows]
        seen = prev > 0
        self._iso[rows] += np.where(seen, (self._prev_steps[rows] - steps)
                                    / np.where(seen, prev, 1.0), 0.0)
        self._prev_steps[rows] = steps
        self._prev_rate[rows] = (jobs.throughput * isolated_split(jobs, cluster)).sum(axis=1)
        return Jobs(jobs.throughput, scale_factor=jobs.scale_factor, weight=jobs.weight,
                    ids=jobs.ids, steps_remaining=steps, elapsed=jobs.elapsed,
                    isolated_elapsed=np.maximum(self._iso[rows], 0.0))
