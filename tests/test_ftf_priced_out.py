"""#28: finish-time fairness's closed form (``ftf-closed-form``) at an ``R_lb`` that is not
attained ("ties"-like rounds: few model rows, capacity binds above ``R_lb``) declines before
the structured floor solver's master rounds: type prices that Newton starts from (or ends at)
prove that the floors at ``R_lb`` have no point (`FloorDemand.priced_out`, a Lagrangian
bound), and the Dinkelbach sequence answers. Main spent the floor solver's four master rounds
there (families "ties", 4,096 jobs: 0.068 -> 0.044 s process CPU)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.duration import CLOSED_FORM, DINKELBACH
from fairalloc.throughput.structured import FLOOR_FREED, STRUCTURED_FLOOR


def _ties(n: int, seed: int) -> tuple[fa.Jobs, fa.Cluster]:
    """A round drawn as the benchmark family "ties": rows of 20 models (Zipf popularity),
    3 types, Gavel-like gang sizes, on a cluster of about 0.14 workers per job."""
    rng = np.random.default_rng(seed)
    rows = (10.0 * rng.lognormal(0.0, 0.8, 20)[:, None] * np.array([1.0, 0.6, 0.35])
            * rng.lognormal(0.0, 0.3, (20, 3)))
    pop = 1.0 / np.arange(1, 21)
    model = rng.choice(20, n, p=pop / pop.sum())
    per_epoch = np.round(rng.uniform(100, 2000, 20))
    jobs = fa.Jobs(rows[model], scale_factor=rng.choice([1, 2, 4], n, p=[0.7, 0.2, 0.1]),
                   weight=rng.choice([1.0, 2.0], n, p=[0.8, 0.2]),
                   steps_remaining=per_epoch[model] * rng.choice([10, 20, 50, 100], n),
                   elapsed=np.where(rng.random(n) < 0.5, 0.0, 360.0 * rng.integers(1, 20, n)))
    workers = [max(1, round(w * n / 4096)) for w in (128, 192, 256)]
    return jobs, fa.Cluster(dict(zip(("v100", "p100", "k80"), workers, strict=True)))


def test_ties_round_skips_the_floor_masters_and_agrees_with_the_sequence():
    """The closed form declines at the floor solver's prices (no ``floor-freed`` step, i.e. no
    master round, before the sequence; main: ``floor-freed:180``, four master rounds); the
    answer is the Dinkelbach sequence's."""
    jobs, cl = _ties(800, 0)
    a = fa.finish_time_fairness(jobs, cl)
    path = a.stats.path
    assert path[path.index(CLOSED_FORM) + 1] == STRUCTURED_FLOOR
    cut = path.index(DINKELBACH)
    assert not any(s.startswith(FLOOR_FREED) for s in path[:cut])
    (why,) = a.stats.fallbacks
    from fairalloc.throughput.structured.floor_demand import FLOORS_PRICED_OUT

    assert why.startswith(f"{CLOSED_FORM}->dinkelbach-sequence:") and FLOORS_PRICED_OUT in why
    ref = fa.finish_time_fairness(jobs, cl, tuning=Tuning(ftf_closed_form=False))
    assert all(c.ok for c in a.stage_certificates + ref.stage_certificates)
    tol = a.certificate.gap_tol + ref.certificate.gap_tol
    assert a.objective == pytest.approx(ref.objective, rel=tol)
    assert a.stage_certificates[1].primal_value == pytest.approx(
        ref.stage_certificates[1].primal_value, rel=tol)


def test_attained_ties_round_keeps_the_closed_form():
    """Where ``R_lb`` is attained the gate never fires: the closed form answers."""
    jobs, cl = _ties(800, 6)
    a = fa.finish_time_fairness(jobs, cl)
    assert CLOSED_FORM in a.stats.path and DINKELBACH not in a.stats.path
    assert a.stats.fallbacks == () and a.certificate.ok


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(n=st.integers(1, 5), k=st.integers(1, 3), seed=st.integers(0, 2**31 - 1))
def test_priced_out_only_where_the_floors_have_no_point(n, k, seed):
    """Soundness of the Lagrangian gate: whenever some prices price the floors out, the LP
    ``a_m . x_m >= f_m``, ``sum x_m <= 1``, ``sum_m s_m x_m <= cap``, ``x >= 0`` has no point
    (HiGHS through scipy decides)."""
    from fairalloc.throughput.structured.floor_demand import FloorDemand

    rng = np.random.default_rng(seed)
    A = np.where(rng.random((n, k)) < 0.8, rng.uniform(0.5, 4.0, (n, k)), 0.0)
    A[:, 0] = np.maximum(A[:, 0], 0.5)  # (every job has a type)
    s = rng.choice([1.0, 2.0], n)
    f = A.max(axis=1) * rng.uniform(0.1, 0.9, n)
    cap = rng.uniform(0.2, 2.0, k)
    dem = FloorDemand(A, s, f, np.ones(n))
    proved = [dem.priced_out(p, cap)
              for p in (np.ones(k), cap.max() / cap, rng.uniform(0.0, 2.0, k))]
    # the LP over x (n, k) row-major
    rows = [np.kron(np.eye(n), np.ones(k)),  # time
            -np.einsum("mj,mi->mij", A, np.eye(n)).reshape(n, n * k),  # floors (>=)
            np.kron(s[None, :], np.eye(k))]  # capacity
    feasible = linprog(np.zeros(n * k), A_ub=np.vstack(rows), b_ub=np.r_[np.ones(n), -f, cap],
                       bounds=(0, None), method="highs").status == 0
    if feasible:
        assert not any(proved)
