"""The Shockwave artifact's Themis, MST and max-min programs as its code writes them
(``scheduler/policies/finish_time_fairness.py``, ``max_sum_throughput.py`` and
``max_min_fairness.py`` in uw-mad-dash/shockwave), solved by a named cvxpy solver, for the
``-upstream`` baselines (`fairalloc.sim.GavelPolicy` with ``solver=``).

Both programs are degenerate on the Shockwave traces: their optimal points form a face, not
one point, and which point of the face a solver returns decides the schedule.

* Upstream's MST maximises the raw sum of steps per second (max_sum_throughput.py:79-85):
  jobs of the same model and batch size have the same throughput and are interchangeable, so
  a vertex (fairalloc's exact solve) runs some of them whole and leaves the others at 0,
  where an interior-point solver (upstream's driver runs ECOS,
  ``simulate_scheduler_with_trace.py --solver``) stops in the middle of the face and gives
  the tied jobs equal shares.
* Upstream's Themis minimises the largest finish-time ratio (finish_time_fairness.py:101-126):
  when the worst job is held at its whole GPU, the other jobs can take anything between what
  keeps them under that ratio and their whole GPU; a vertex puts each at one end, Gurobi's
  barrier (the driver forces Gurobi for this policy) in the middle.
* Upstream's ``"max_min_fairness"`` sets every throughput to 1 (max_min_fairness.py:37-41) and
  maximises the smallest ``scale_factor_i / weight_i * sum_j x_ij`` (max_min_fairness.py:74-107;
  the proportional throughput it divides by is then 1 for every job): with fewer jobs than
  workers, the gangs' shares above the level are free.

The allocation of each is then realised by upstream's round loop
(`fairalloc.sim.policies.upstream_rounds.UpstreamRounds`), whose priorities are the
allocations themselves: the point decides which jobs run. Clarabel (a dependency) is an
interior-point solver like ECOS and Gurobi's barrier and stops near the same central point;
the point is deterministic for a given solver version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InputError, SolverError
from ...results import readonly

__all__ = ["UPSTREAM_PROGRAMS", "as_solver_name", "solve_upstream_program"]

#: the objectives with an upstream program here -> upstream's file:line of it
UPSTREAM_PROGRAMS = {
    "finish_time_fairness": "finish_time_fairness.py:96-133",
    "max_total_throughput": "max_sum_throughput.py:58-98",
    "max_min_fairness": "max_min_fairness.py:37-41, 74-107",
}


def as_solver_name(value: Any) -> str:
    """``value`` as the name of an installed cvxpy solver, upper case (`fairalloc.InputError`
    naming ``solver`` otherwise)."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"solver must be a cvxpy solver name, got {value!r}",
                         argument="solver")
    import cvxpy as cp

    name = value.strip().upper()
    if name not in cp.installed_solvers():
        raise InputError(f"solver {value!r} is not an installed cvxpy solver; installed: "
                         f"{cp.installed_solvers()}", argument="solver")
    return name


def solve_upstream_program(objective: str, throughput: np.ndarray, scale_factor: np.ndarray,
                           capacity: np.ndarray, solver: str, *,
                           steps: np.ndarray | None = None, elapsed: np.ndarray | None = None,
                           isolated_elapsed: np.ndarray | None = None,
                           isolated_rate: np.ndarray | None = None,
                           weight: np.ndarray | None = None) -> np.ndarray:
    """The point ``solver`` returns for upstream's program ``objective``, clipped to
    ``[0, 1]`` as upstream does (finish_time_fairness.py:151-153, max_sum_throughput.py:108).

    Parameters
    ----------
    objective : {"finish_time_fairness", "max_total_throughput", "max_min_fairness"}
        The program (`UPSTREAM_PROGRAMS`).
    throughput : numpy.ndarray, shape (n, k)
        Steps per second of each job on each type.
    scale_factor : numpy.ndarray, shape (n,)
        Gang sizes.
    capacity : numpy.ndarray, shape (k,)
        Workers of each type.
    weight : numpy.ndarray, shape (n,), optional
        ``"max_min_fairness"`` only: priority weights (default 1; upstream divides by them).
    solver : str
        A cvxpy solver name (e.g. ``"CLARABEL"``).
    steps, elapsed, isolated_elapsed, isolated_rate : numpy.ndarray, shape (n,), optional
        ``"finish_time_fairness"`` only: steps left, time since arrival (upstream's
        ``times_since_start``), isolated time so far (its ``_cumulative_isolated_time``) and
        steps per second with the isolated split (its ``isolated_throughputs``).

    Returns
    -------
    numpy.ndarray, shape (n, k)
        Read-only time fractions. Themis' program without a point falls back to the isolated
        split, as upstream's (finish_time_fairness.py:147-150); MST's raises
        `fairalloc.SolverError`.

    Examples
    --------
    Three identical 1-GPU jobs on two GPUs: every split of the two GPUs is optimal; an
    interior-point solver gives each two thirds of a GPU, a vertex two jobs a whole GPU:

    >>> import numpy as np
    >>> x = solve_upstream_program("max_total_throughput", np.ones((3, 1)), np.ones(3),
    ...                            np.array([2.0]), "CLARABEL")
    >>> x.ravel().round(3).tolist()
    [0.667, 0.667, 0.667]
    """
    import cvxpy as cp

    tp = np.asarray(throughput, dtype=float)
    sf = np.asarray(scale_factor, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    _check_shapes(tp, {"scale_factor": sf, "steps": steps, "elapsed": elapsed,
                       "isolated_elapsed": isolated_elapsed, "isolated_rate": isolated_rate,
                       "weight": weight},
                  capacity)
    x = cp.Variable(tp.shape)
    # policy.py:58-65: Gavel's base constraints
    cons = [x >= 0, cp.sum(cp.multiply(sf[:, None], x), axis=0) <= capacity,
            cp.sum(x, axis=1) <= 1]
    if objective == "max_total_throughput":
        goal = cp.Maximize(cp.sum(cp.multiply(tp, x)))
    elif objective == "max_min_fairness":
        w = np.ones(tp.shape[0]) if weight is None else np.asarray(weight, dtype=float)
        goal = cp.Maximize(cp.min(cp.multiply(sf / w, cp.sum(x, axis=1))))
    elif objective == "finish_time_fairness":
        if steps is None or isolated_rate is None:
            raise InputError("the finish-time-fairness program needs steps and isolated_rate",
                             argument="steps" if steps is None else "isolated_rate")
        n = tp.shape[0]
        zero = np.zeros(n)
        t_alloc = np.asarray(zero if elapsed is None else elapsed, dtype=float)
        t_iso = np.asarray(zero if isolated_elapsed is None else isolated_elapsed, dtype=float)
        s = np.asarray(steps, dtype=float)
        iso = np.asarray(isolated_rate, dtype=float)
        # a job that cannot run anywhere has no finite ratio: it takes no part (upstream's
        # programs are never given one)
        live = np.flatnonzero((iso > 0) & (tp.sum(axis=1) > 0))
        # finish_time_fairness.py:111-122: (time so far + steps / rate) over
        # (isolated time so far + steps / isolated rate), one term per job
        rate = cp.sum(cp.multiply(tp[live], x[live]), axis=1)
        ratio = cp.multiply(t_alloc[live] + cp.multiply(s[live], cp.inv_pos(rate)),
                            1.0 / (t_iso[live] + s[live] / iso[live]))
        goal = cp.Minimize(cp.max(ratio) if live.size else 0.0)
    else:
        raise InputError(f"no upstream program for objective {objective!r}; known: "
                         f"{sorted(UPSTREAM_PROGRAMS)}", argument="objective")
    prob = cp.Problem(goal, cons)
    try:
        prob.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise SolverError(f"upstream's {objective} program: {exc}", backend=solver) from exc
    if x.value is None:
        if objective == "finish_time_fairness":
            # isolated.py:41-55: the workers split over the jobs, rows capped at 1
            split = capacity[None, :] / (tp.shape[0] * sf[:, None])
            return readonly(split / np.maximum(split.sum(axis=1), 1.0)[:, None])
        raise SolverError(f"upstream's {objective} program: no point ({prob.status})",
                          backend=solver)
    return readonly(np.clip(np.asarray(x.value, dtype=float), 0.0, 1.0))


def _check_shapes(tp: np.ndarray, rows: dict[str, Any], capacity: np.ndarray) -> None:
    """`fairalloc.InputError` unless ``tp`` is (n, k) and finite, every given row array (n,),
    ``capacity`` (k,)."""
    if tp.ndim != 2 or not np.isfinite(tp).all():
        raise InputError(f"throughput must be a finite (jobs x types) array, got shape "
                         f"{tp.shape}", argument="throughput")
    n, k = tp.shape
    if capacity.shape != (k,):
        raise InputError(f"capacity must have one entry per type ({k}), got shape "
                         f"{capacity.shape}", argument="capacity")
    for name, value in rows.items():
        if value is not None and np.shape(value) != (n,):
            raise InputError(f"{name} must have one entry per job ({n}), got shape "
                             f"{np.shape(value)}", argument=name)
