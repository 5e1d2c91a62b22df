"""Water-filling over symmetry classes (issue #28, "no cliffs").

Interchangeable jobs (same data, weight and entity; never two jobs of a FIFO entity) are solved
as one row per class (path step ``symmetry:<classes>``), near-identical ones first as near
classes (``near-symmetry:<classes>``); the expansion is certified on the ORIGINAL program (the
first level's certificate, the end check), and any failure hands over (``stats.fallbacks``)
down to the job-by-job solve. Levels agree with the job-by-job solve within both results'
claimed bottleneck tolerance (`claimed_rise`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning, water_symmetry
from fairalloc.throughput.max_min import BOTTLENECK_TOL
from fairalloc.throughput.water_robust import claimed_rise
from fairalloc.tolerances import GAP_TOL

BASE = np.array([[4.0, 2.0, 1.0], [3.0, 3.0, 0.5], [1.0, 1.0, 1.0]])
CLUSTER = fa.Cluster({"v100": 2, "p100": 3, "k80": 4})


def _umax(jobs: fa.Jobs, r: fa.Allocation) -> np.ndarray:
    """Each job's best level (its best type all the time; unit scale factors)."""
    unorm = np.asarray(r.metric) / np.asarray(r.effective_throughput)
    return unorm * jobs.throughput.max(axis=1)


def _agree(jobs: fa.Jobs, r: fa.Allocation, p: fa.Allocation) -> None:
    """Both certified and optimal; floors within both results' claimed rises."""
    for a in (r, p):
        assert a.certificate.ok and all(c.ok for c in a.stage_certificates)
        assert a.status == "optimal"
    fr, fp = np.asarray(r.level_floors), np.asarray(p.level_floors)
    tol = 2.0 * claimed_rise(np.maximum(fr, fp), _umax(jobs, p), BOTTLENECK_TOL, GAP_TOL)
    assert np.all(np.abs(fr - fp) <= tol), (fr, fp, tol)


def _jobs(copies: tuple[int, ...], noise: float = 0.0, seed: int = 0, **kw) -> fa.Jobs:
    kind = np.repeat(np.arange(len(copies)), copies)
    tp = BASE[kind] * (1.0 + np.random.default_rng(seed).uniform(-noise, noise,
                                                                  (kind.size, 3)))
    return fa.Jobs(tp, **kw)


def test_identical_jobs_take_the_symmetry_path():
    """Regression (fails on main: water-filling never reduced; ``symmetry`` was validated
    only and ``water_filling`` had no ``symmetry`` argument)."""
    jobs = _jobs((5, 3, 4), weight=[1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1])
    ents = ["a"] * 8 + ["b"] * 4
    r = fa.water_filling(jobs, CLUSTER, entities=ents, entity_weights={"a": 2.0})
    assert r.stats.path[0] == "symmetry:3" and r.stats.classes == 3
    assert r.stats.fallbacks == ()
    np.testing.assert_array_equal(r.x[:5], np.repeat(r.x[:1], 5, axis=0))
    p = fa.water_filling(jobs, CLUSTER, entities=ents, entity_weights={"a": 2.0},
                         symmetry=False)
    assert p.stats.classes is None and not p.stats.path[0].startswith("symmetry")
    _agree(jobs, r, p)


def test_an_entity_share_counts_every_member_on_the_saturation_path():
    """Entity ``a``'s three identical jobs are one class; its saturation jump must divide
    the entity's weight among all three (without the class sizes in `SaturationPath`, a
    first draft's reduced fast strategy failed its first level's certificate, relative gap
    8e-2, and the robust strategy answered). FIFO jobs are never merged (their ranks
    differ)."""
    jobs = _jobs((3, 2, 3), weight=[1, 1, 1, 2, 2, 1, 1, 1])
    kw = dict(entities=["a"] * 5 + ["b"] * 3, entity_weights={"a": 2.0},
              entity_policies={"b": "fifo"})
    r = fa.water_filling(jobs, CLUSTER, **kw)
    assert r.stats.path[:2] == ("symmetry:5", "water-filling-fast")
    assert r.stats.fallbacks == ()
    _agree(jobs, r, fa.water_filling(jobs, CLUSTER, symmetry=False, **kw))


def test_near_identical_jobs_take_the_near_symmetry_path():
    """Regression (fails on main: no near step, the jobs solved one by one)."""
    jobs = _jobs((7, 5), noise=1e-10, seed=3)
    r = fa.water_filling(jobs, CLUSTER)
    assert r.stats.path[0] == "near-symmetry:2" and r.stats.classes == 2
    assert r.stats.fallbacks == ()
    np.testing.assert_array_equal(r.x[:7], np.repeat(r.x[:1], 7, axis=0))
    _agree(jobs, r, fa.water_filling(jobs, CLUSTER, symmetry=False))


def test_a_near_merge_that_does_not_certify_hands_over_to_the_exact_classes():
    """Rows 4e-8 apart on one entry, merged (share 5 of gap_tol 1e-8) but the merge moves
    the first level by more than gap_tol: the near step hands over, the exact classes
    answer, certified on the original program."""
    tp = BASE[np.repeat([0, 1], 4)].copy()
    tp[1::2, 0] *= 1.0 - 4e-8
    jobs = fa.Jobs(tp)
    r = fa.water_filling(jobs, CLUSTER, gap_tol=1e-8, tuning=Tuning(near_tie_share=5.0))
    assert r.stats.path[0] == "symmetry:4"
    assert r.stats.fallbacks[0].startswith(
        "near-symmetry->symmetry: the expanded first level's certificate failed")
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)


def test_an_expansion_the_end_check_does_not_prove_hands_over_to_job_by_job(monkeypatch):
    """The end check on the original program is what accepts an expansion: where it leaves
    a job unproven (simulated at the public seam), the plan hands over to job by job."""
    real = water_symmetry.end_check

    def unproven(*args, **kw):
        chk = real(*args, **kw)
        return dataclasses.replace(chk, proven=np.zeros_like(chk.proven))

    monkeypatch.setattr(water_symmetry, "end_check", unproven)
    jobs = _jobs((4, 4))
    r = fa.water_filling(jobs, CLUSTER)
    assert r.stats.classes is None
    assert r.stats.fallbacks[0].startswith("symmetry->exact: 8 jobs of the expanded")
    assert not any(s.startswith("symmetry") for s in r.stats.path)
    monkeypatch.undo()
    _agree(jobs, r, fa.water_filling(jobs, CLUSTER, symmetry=False))


def test_symmetry_argument_is_validated():
    with pytest.raises(fa.InputError, match="symmetry"):
        fa.water_filling(_jobs((2,)), CLUSTER, symmetry="yes")


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(copies=st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(0, 4)),
       noise=st.sampled_from([0.0, 1e-12, 3e-10]), seed=st.integers(0, 2**16),
       hier=st.sampled_from(["single", "entities", "fifo"]))
def test_symmetry_agrees_with_the_job_by_job_solve(copies, noise, seed, hier):
    rng = np.random.default_rng(seed)
    n = sum(copies)
    jobs = _jobs(copies, noise=noise, seed=seed,
                 weight=rng.choice([1.0, 2.0], n) if hier != "single" else None)
    kw = {} if hier == "single" else dict(
        entities=list(rng.choice(["a", "b"], n)), entity_weights={"a": 1.5},
        entity_policies={"b": "fifo" if hier == "fifo" else "fairness"})
    r = fa.water_filling(jobs, CLUSTER, **kw)
    p = fa.water_filling(jobs, CLUSTER, symmetry=False, **kw)
    _agree(jobs, r, p)
    if r.stats.classes is not None:
        assert r.stats.classes < n and r.stats.fallbacks == ()
