"""Near-identical jobs in the throughput policies (issue #28, "no cliffs").

Jobs whose program data agree only within ``Tuning.near_tie_share * gap_tol`` (a profiler's
round-off) are solved over one row per near class (path step ``near-symmetry:<classes>``); the
expansion is accepted only when it certifies on the ORIGINAL program (its stages rebuilt from
the original data), so the objective equals the job-by-job solve's within the certificates'
own tolerances; a merge that does not certify hands over (``stats.fallbacks``), never a
silent success.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc._symmetry import exact_classes, near_classes
from fairalloc.errors import InputError
from fairalloc.throughput import Tuning
from fairalloc.throughput.duration import FinishTimeFairness, MinMakespan
from fairalloc.throughput.efficiency import MaxTotalThroughput
from fairalloc.throughput.max_min import MaxMinFairness
from fairalloc.throughput.symmetry import near_classes_of, symmetry_plan
from fairalloc.tolerances import GAP_TOL

POLICIES = {"max-min": MaxMinFairness, "ftf": FinishTimeFairness, "makespan": MinMakespan}
BASE = np.array([[4.0, 2.0, 1.0], [3.0, 3.0, 0.5]])  # two job kinds over three types


def _near_jobs(copies: tuple[int, ...], noise: np.ndarray, base: np.ndarray = BASE,
               steps: tuple[float, ...] = (900.0, 500.0)) -> fa.Jobs:
    """``copies[i]`` jobs of kind ``i``, each entry times ``1 + noise`` (one per entry)."""
    kind = np.repeat(np.arange(len(copies)), copies)
    tp = base[kind] * (1.0 + noise[: kind.size, : base.shape[1]])
    st_ = np.asarray(steps)[kind] * (1.0 + noise[: kind.size, -1])
    return fa.Jobs(tp, steps_remaining=st_, elapsed=np.full(kind.size, 60.0))


CLUSTER = fa.Cluster({"v100": 2, "p100": 3, "k80": 4})


def _agree(r: fa.Allocation, p: fa.Allocation) -> None:
    """Both certified; objectives within the two certificates' gap tolerances."""
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert p.certificate.ok
    scale = max(abs(p.objective), abs(r.objective), 1.0)
    assert abs(r.objective - p.objective) <= 2 * GAP_TOL * scale


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_near_identical_jobs_take_the_near_symmetry_path(name):
    """Regression (fails on main: no near step; the jobs were solved one by one)."""
    noise = np.random.default_rng(3).normal(0.0, 1e-10, (12, 4))
    jobs = _near_jobs((7, 5), noise)
    cls = POLICIES[name]
    r = cls(jobs, CLUSTER).solve()
    assert r.stats.path[0] == "near-symmetry:2"
    assert r.stats.classes == 2 and r.stats.fallbacks == ()
    # every member of a near class gets its class's allocation
    np.testing.assert_array_equal(r.x[:7], np.repeat(r.x[:1], 7, axis=0))
    _agree(r, cls(jobs, CLUSTER).solve(symmetry=False))


def test_exact_classes_are_not_tried_as_near_ones():
    """Identical jobs keep the exact step (the near classes are no coarser)."""
    jobs = _near_jobs((4, 4), np.zeros((8, 4)))
    r = MaxMinFairness(jobs, CLUSTER).solve()
    assert r.stats.path[0] == "symmetry:2"


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_a_merge_that_does_not_certify_hands_over(name):
    """Rows 4e-8 apart on one entry, merged (share 5 of gap_tol 1e-8: within 5e-8) but the
    merge moves the gap by more than gap_tol: the near step hands over to the exact classes
    (``stats.fallbacks``), whose answer is certified -- never a silent success."""
    noise = np.zeros((8, 4))
    noise[1::2, 0] = -4e-8
    jobs = _near_jobs((4, 4), noise)
    exact = exact_classes(jobs.throughput)
    near = near_classes_of(POLICIES[name](jobs, CLUSTER), exact, rel=5e-8)
    assert near is not None and near.num_classes == 2
    r = POLICIES[name](jobs, CLUSTER).solve(gap_tol=1e-8, tuning=Tuning(near_tie_share=5.0))
    assert r.stats.path[0] == "symmetry:4"
    assert r.stats.fallbacks[0].startswith(
        "near-symmetry->symmetry: the expanded solution's certificate failed")
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


def test_policies_without_a_stage_builder_do_not_try_near_classes():
    """Total throughput's first stage is linear (no stage builder to rebuild it on the
    original data): no near attempt, no hand-over (main: the same; a regression guard)."""
    jobs = _near_jobs((7, 5), np.random.default_rng(4).normal(0.0, 1e-10, (12, 4)))
    r = MaxTotalThroughput(jobs, CLUSTER).solve()
    assert r.stats.fallbacks == () and r.stats.classes is None


def test_near_tie_share_zero_turns_near_classes_off():
    jobs = _near_jobs((7, 5), np.full((12, 4), 1e-12) * np.arange(12)[:, None])
    r = MaxMinFairness(jobs, CLUSTER).solve(tuning=Tuning(near_tie_share=0.0))
    assert r.stats.classes is None and r.stats.fallbacks == ()
    assert not any(p.startswith("near-symmetry") for p in r.stats.path)


def test_plan_lists_the_near_step_first():
    from fairalloc.plan import describe
    assert describe(symmetry_plan(print, print, reduces=True, near=print)) == (
        "near-symmetry", "symmetry", "exact!")


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(name=st.sampled_from(sorted(POLICIES)),
       copies=st.tuples(st.integers(1, 6), st.integers(2, 6)),
       seed=st.integers(0, 2**16), rel=st.sampled_from([1e-12, 1e-10, 3e-9]),
       wc=st.booleans())
def test_near_identical_jobs_agree_with_the_job_by_job_solve(name, copies, seed, rel, wc):
    noise = np.random.default_rng(seed).uniform(-rel, rel, (sum(copies), 4))
    jobs = _near_jobs(copies, noise)
    cls = POLICIES[name]
    r = cls(jobs, CLUSTER).solve(work_conserving=wc)
    p = cls(jobs, CLUSTER).solve(work_conserving=wc, symmetry=False)
    assert p.stats.classes is None
    _agree(r, p)
    # rows within 3e-9 of each other: merged (within 1e-8) and certified at gap_tol 1e-6
    assert r.stats.path[0].startswith("near-symmetry") and r.stats.fallbacks == ()
    assert r.stats.classes is not None and r.stats.classes < jobs.n


# --------------------------------------------------------------------------------------------
# the shared class finder
# --------------------------------------------------------------------------------------------
def test_near_classes_signs_zeros_and_several_arrays():
    a = np.array([[-1.0, 0.0], [-1.0 - 1e-12, 0.0], [1.0, 0.0], [-1.0, 1e-300]])
    w = np.array([2.0, 2.0, 2.0, 2.0])
    cl = near_classes(a, None, w, rel=1e-8)
    assert cl.inverse.tolist() == [0, 0, 1, 2]
    assert near_classes(a, np.array([2.0, 3.0, 2.0, 2.0]), rel=1e-8).num_classes == 4


def test_near_classes_rejects_bad_data():
    with pytest.raises(InputError) as exc:
        near_classes(np.ones(3), np.ones(4), rel=1e-8)
    assert exc.value.argument == "data" and exc.value.index == (1,)
    with pytest.raises(InputError):
        near_classes(np.array([1.0, np.nan]), rel=1e-8)
    with pytest.raises(InputError):
        near_classes(None, rel=1e-8)
