"""max_min_space_sharing's last step: the whole program when the restricted masters miss the
certificate with no column left to add (issue #27, fuzz seed 1414)."""

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.throughput import max_min_space_sharing

GAP_TOL = 1e-4


def _case():
    # fuzz seed 1414 (drawn twice): speeds 1e-3 .. 1.2e7, weights ~1e-12. HiGHS' restricted
    # masters came back at level 0, Clarabel's at 0.53 of the full-program bound, and their
    # duals priced no column out: CertificateError (relative gap 0.472)
    jobs = fa.Jobs(np.array([[0.001], [0.001], [12121135.84279985]]),
                   scale_factor=np.array([3, 1, 3]),
                   weight=np.array([6.291889668486842e-13, 1.8278643787474274e-12,
                                    1.6863044425338473e-12]))
    pairs = fa.JobPairs([[0, 1], [0, 2], [1, 2]],
                        np.array([[[7322031.918826558, 12036687.670883365]],
                                  [[3357780.5507782255, 6724307.392970865]],
                                  [[3398053.7401285786, 3092044.726397515]]]))
    return jobs, fa.Cluster({"t0": 3}), pairs


def _check(r, ref):
    assert r.certificate.ok and r.certificate.relative_gap <= GAP_TOL
    # two certified answers of the same program: each level is below the other's bound
    assert r.objective <= ref.certificate.dual_bound * (1 + GAP_TOL)
    assert ref.objective <= r.certificate.dual_bound * (1 + GAP_TOL)
    assert r.pair_x.shape == (3, 1) and not r.pair_x.flags.writeable


def test_fuzz_1414_default_backend_is_certified_by_the_whole_program():
    jobs, cl, pairs = _case()
    ref = fa.max_min_fairness(jobs, cl, pairs=pairs, gap_tol=GAP_TOL, work_conserving=False)
    r = max_min_space_sharing(jobs, cl, pairs, gap_tol=GAP_TOL)
    _check(r, ref)
    path = r.stats.path
    assert path.index("clarabel-master") < path.index("whole-program")


@pytest.mark.parametrize("backend", ["clarabel", "highs-instance"])
def test_fuzz_1414_named_backend_is_certified_by_the_whole_program(backend):
    # a caller-named backend is used as given: its whole program's tail is that backend on
    # the LP in its levels' units (exact-lp+rescaled)
    jobs, cl, pairs = _case()
    be = fa.get_backend("highs", need="lp") if backend == "highs-instance" else backend
    ref = fa.max_min_fairness(jobs, cl, pairs=pairs, gap_tol=GAP_TOL, work_conserving=False)
    r = max_min_space_sharing(jobs, cl, pairs, gap_tol=GAP_TOL, backend=be)
    _check(r, ref)
    assert "whole-program" in r.stats.path and "clarabel-master" not in r.stats.path
