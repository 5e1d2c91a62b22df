"""The Shockwave artifact's Themis and MST programs solved by an interior-point solver
(issue #31, item 2): `solve_upstream_program` and ``GavelPolicy(..., solver=...)``.

Both programs have a face of optimal points in the cases below (derived by hand in the
comments); upstream's solvers (ECOS for MST, Gurobi's barrier for Themis) return a point inside
that face, fairalloc's exact solve a vertex, and upstream's round loop runs jobs by their
allocation, so the point decides the schedule.
"""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.sim import GavelPolicy, Workload, simulate
from fairalloc.sim.policies.upstream_programs import solve_upstream_program

#: Clarabel stops at a relative gap and feasibility of 1e-8 (its documented defaults); the
#: checks allow 1e-6, relative
IPM_TOL = 1e-6
#: a point "inside" the face keeps this share of the face's width from either end (the
#: interior-point limit is the face's analytic centre, hand-derived below; any vertex is 0)
INSIDE = 0.1
TWO_GPUS = fa.Cluster({"gpu": 2})


def test_mst_program_returns_a_point_inside_a_tie_between_gang_sizes() -> None:
    # max x_a + 2 x_b  s.t.  x_a + 2 x_b <= 2, 0 <= x <= 1: a 1-GPU job and a 2-GPU gang with
    # the same steps/s per GPU. Every x_b = 1 - x_a / 2, x_a in [0, 1] is optimal (value 2);
    # the vertices are x_a = 0 and x_a = 1. The face's analytic centre solves
    # 2/x - 1/(1-x) - 1/(2-x) = 0: x_a ~ 0.61
    x = solve_upstream_program("max_total_throughput", np.array([[1.0], [2.0]]),
                               np.array([1.0, 2.0]), np.array([2.0]), "CLARABEL").ravel()
    assert x[0] + 2.0 * x[1] == pytest.approx(2.0, rel=IPM_TOL)
    assert INSIDE < x[0] < 1.0 - INSIDE
    assert x[1] == pytest.approx(1.0 - x[0] / 2.0, abs=IPM_TOL)


def test_ftf_program_returns_a_point_inside_the_face_of_a_job_held_at_its_gpu() -> None:
    # two 1-GPU jobs of 100 steps at 1 step/s on 2 GPUs (isolated rate 1, isolated time 100 s
    # each); job a has waited 1000 s. Its ratio (1000 + 100 / x_a) / 100 is at least 11, at
    # x_a = 1: the optimum is 11, and job b's ratio (100 / x_b) / 100 <= 11 for any
    # x_b in [1/11, 1] -- the face; the exact solve returns its end x_b = 1
    steps, elapsed = np.array([100.0, 100.0]), np.array([1000.0, 0.0])
    x = solve_upstream_program("finish_time_fairness", np.ones((2, 1)), np.ones(2),
                               np.array([2.0]), "CLARABEL", steps=steps, elapsed=elapsed,
                               isolated_elapsed=np.zeros(2), isolated_rate=np.ones(2)).ravel()
    ratio = (elapsed + steps / x) / steps
    assert ratio.max() == pytest.approx(11.0, rel=IPM_TOL)
    lo, width = 1.0 / 11.0, 1.0 - 1.0 / 11.0
    assert lo + INSIDE * width < x[1] < 1.0 - INSIDE * width


def test_max_min_program_returns_a_point_inside_the_gang_s_free_share() -> None:
    # upstream's max-min: max min_i scale_factor_i * x_i (throughputs set to 1). A 1-GPU job
    # and a 2-GPU gang on 4 GPUs: the job is capped at x_a = 1, so the level is 1; the gang
    # reaches it at x_b = 1/2 and may take up to 1 (capacity 1 + 2 x_b <= 4 holds): the face is
    # x_b in [1/2, 1]
    x = solve_upstream_program("max_min_fairness", np.array([[3.0], [5.0]]),
                               np.array([1.0, 2.0]), np.array([4.0]), "CLARABEL").ravel()
    assert x[0] == pytest.approx(1.0, abs=IPM_TOL)
    assert 0.5 + INSIDE * 0.5 < x[1] < 1.0 - INSIDE * 0.5


def test_upstream_mst_point_takes_turns_in_the_round_loop() -> None:
    # the tie above as a simulation: a 1-GPU job of 240 s and a 2-GPU gang of 240 s on 2 GPUs,
    # rounds of 120 s, upstream's round loop (priority = allocation / share of the time run).
    # Exact solve, vertex (0, 1): the gang runs rounds 1-2 (done at 240 s), the job after it.
    # Interior point (~0.62, ~0.69): round 1 both at half a round (shares 1/2), the gang's
    # priority is higher; after it the job's share is 60/240 against the gang's 180/240, the
    # job runs round 2 (the gang does not fit beside it); round 3 shares 1/2 again: the gang
    # (done at 360 s); round 4 the job (done at 480 s)
    w = Workload.from_arrays([0.0, 0.0], [[1.0], [2.0]], [240.0, 480.0], scale_factor=[1, 2])

    def finish(solver: str | None) -> list[float]:
        policy = GavelPolicy("max_total_throughput", normalized=False, work_conserving=False,
                             rounds="upstream", solver=solver)
        return simulate(w, TWO_GPUS, policy, round_duration=120.0).finish.tolist()

    assert finish(None) == [480.0, 240.0]
    assert finish("CLARABEL") == [480.0, 360.0]


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"objective": "min_makespan", "solver": "CLARABEL"}, "solver"),
    ({"objective": "max_total_throughput", "solver": "CLARABEL"}, "normalized"),
    ({"objective": "max_total_throughput", "normalized": True, "solver": "CLARABEL"},
     "normalized"),
    ({"objective": "finish_time_fairness", "method": "highs", "solver": "CLARABEL"}, "method"),
    ({"objective": "finish_time_fairness", "work_conserving": True, "solver": "CLARABEL"},
     "work_conserving"),
    ({"objective": "finish_time_fairness", "solver": ""}, "solver"),
    ({"objective": "finish_time_fairness", "solver": 3}, "solver"),
    ({"objective": "finish_time_fairness", "solver": "NO_SUCH_SOLVER"}, "solver"),
])
def test_solver_option_is_checked(kwargs: dict, argument: str) -> None:
    with pytest.raises(fa.InputError) as err:
        GavelPolicy(**kwargs)
    assert err.value.argument == argument


@pytest.mark.parametrize(("objective", "tp", "sf", "cap", "argument"), [
    ("min_makespan", np.ones((1, 1)), np.ones(1), np.ones(1), "objective"),
    ("max_total_throughput", np.ones(2), np.ones(2), np.ones(1), "throughput"),
    ("max_total_throughput", np.ones((2, 1)), np.ones(3), np.ones(1), "scale_factor"),
    ("max_total_throughput", np.ones((2, 1)), np.ones(2), np.ones(2), "capacity"),
    ("finish_time_fairness", np.ones((2, 1)), np.ones(2), np.ones(1), "steps"),
])
def test_bad_upstream_program_input_is_an_input_error(objective: str, tp: np.ndarray,
                                                      sf: np.ndarray, cap: np.ndarray,
                                                      argument: str) -> None:
    with pytest.raises(fa.InputError) as err:
        solve_upstream_program(objective, tp, sf, cap, "CLARABEL")
    assert err.value.argument == argument


def test_upstream_program_result_is_read_only() -> None:
    x = solve_upstream_program("max_total_throughput", np.ones((2, 1)), np.ones(2),
                               np.array([1.0]), "CLARABEL")
    with pytest.raises(ValueError):
        x[0, 0] = 0.0
