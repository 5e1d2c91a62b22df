"""max_min_space_sharing as a plan run by the one driver (issue #27 build item 1): the
column-generation -> clarabel-master -> whole-program chain, each edge reached through a public
seam (an instance, ``max_rounds``, a ``backend=`` subclass), and the same certified answer as
the whole program solved by ``max_min_fairness``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend
from fairalloc.plan import describe
from fairalloc.throughput import Tuning, max_min_space_sharing
from fairalloc.throughput.space_sharing import space_sharing_plan

GAP_TOL = 1e-6


def _agree(r, ref):
    """Two certified answers of one program: each level is below the other's bound."""
    assert r.certificate.ok and ref.certificate.ok
    assert r.objective <= ref.certificate.dual_bound * (1 + GAP_TOL) + GAP_TOL
    assert ref.objective <= r.certificate.dual_bound * (1 + GAP_TOL) + GAP_TOL


def _sharing():
    # two jobs that keep 80 % of their speed when sharing one GPU: the first master (no pair
    # column) is at 0.5, column generation needs a second round to reach 0.8
    return fa.Jobs([[10.0], [10.0]]), fa.Cluster({"gpu": 1}), fa.JobPairs([[0, 1]], [[[8.0, 8.0]]])


def test_the_plan_is_data_of_the_backend_choice():
    assert describe(space_sharing_plan(True)) == (
        "column-generation", "clarabel-master", "whole-program!")
    assert describe(space_sharing_plan(False, Tuning())) == (
        "column-generation", "whole-program!")


def test_column_generation_out_of_rounds_hands_over_to_the_whole_program():
    # main raised SolverError("column generation did not converge") on this valid input
    jobs, cl, pairs = _sharing()
    r = max_min_space_sharing(jobs, cl, pairs, max_rounds=1, gap_tol=GAP_TOL)
    assert r.objective == pytest.approx(0.8, rel=GAP_TOL)
    assert r.pair_x.shape == (1, 1) and not r.pair_x.flags.writeable
    assert r.stats.path[0] == "column-generation" and "whole-program" in r.stats.path
    assert "clarabel-master" not in r.stats.path  # (ready only when the masters priced out)
    assert any(f.startswith("column-generation->whole-program: failed")
               for f in r.stats.fallbacks)


class _RefuseSmallLPs(HighsBackend):
    """HiGHS that fails every LP with fewer than ``columns`` columns (the restricted masters,
    not the whole program): a backend fault injected at the public backend boundary."""

    def __init__(self, columns: int):
        super().__init__()
        self.columns, self.refused = columns, 0

    def solve_lp(self, lp, **kw):
        if lp.c.size < self.columns:
            self.refused += 1
            raise fa.SolverError("refused", backend=self.name)
        return super().solve_lp(lp, **kw)


def test_a_failing_master_backend_hands_over_to_the_whole_program():
    # main let the master's SolverError escape: no answer on a valid input
    jobs, cl, pairs = _sharing()
    be = _RefuseSmallLPs(columns=4)  # the first master: 2 job columns + the level
    r = max_min_space_sharing(jobs, cl, pairs, backend=be, gap_tol=GAP_TOL)
    assert be.refused >= 1
    assert r.objective == pytest.approx(0.8, rel=GAP_TOL) and r.certificate.ok
    assert r.stats.path[0] == "column-generation" and "whole-program" in r.stats.path


def test_every_exact_method_failing_is_a_typed_error_with_each_verdict():
    jobs, cl, pairs = _sharing()
    with pytest.raises(fa.SolverError) as err:
        max_min_space_sharing(jobs, cl, pairs, backend=_RefuseSmallLPs(columns=10 ** 6))
    assert [v.split(":")[0] for v in err.value.verdicts] == [
        "column-generation", "whole-program"]


@st.composite
def _instances(draw):
    n = draw(st.integers(2, 5))
    k = draw(st.integers(1, 2))
    speed = st.floats(0.1, 100.0)
    T = np.array(draw(st.lists(st.lists(speed, min_size=k, max_size=k), min_size=n,
                               max_size=n)))
    members = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(
        lambda m: m[0] != m[1]), min_size=1, max_size=4, unique=True))
    share = st.sampled_from([0.0, 0.3, 0.55, 0.8, 1.0])  # of each member's single speed
    rates = np.array(draw(st.lists(st.lists(st.tuples(share, share), min_size=k,
                                            max_size=k), min_size=len(members),
                                   max_size=len(members))))
    rates = rates * T[np.array(members)].transpose(0, 2, 1)
    cl = fa.Cluster({f"t{j}": draw(st.integers(1, 3)) for j in range(k)})
    weight = np.array(draw(st.lists(st.floats(0.2, 5.0), min_size=n, max_size=n)))
    return fa.Jobs(T, weight=weight), cl, fa.JobPairs(members, rates)


@settings(max_examples=25)
@given(_instances(), st.sampled_from([None, "clarabel"]), st.sampled_from([1, 50]))
def test_the_plan_gives_the_whole_programs_certified_answer(case, backend, max_rounds):
    jobs, cl, pairs = case
    ref = fa.max_min_fairness(jobs, cl, pairs=pairs, gap_tol=GAP_TOL, work_conserving=False)
    r = max_min_space_sharing(jobs, cl, pairs, gap_tol=GAP_TOL, backend=backend,
                              max_rounds=max_rounds, batch=1)
    _agree(r, ref)
    assert r.certificate.relative_gap <= GAP_TOL
    assert r.pair_x.shape == (pairs.num_pairs, jobs.throughput.shape[1])
    assert r.stats.path[0] == "column-generation"
