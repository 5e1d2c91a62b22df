"""Pair columns the members' single columns match (`singles_dominated_pairs`): dropping them
leaves water-filling's levels (and so each job's normalised throughput) unchanged."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput.space_sharing import singles_dominated_pairs
from fairalloc.tolerances import FEAS_TOL, GAP_TOL


@st.composite
def _instances(draw):
    n = draw(st.integers(2, 5))
    k = draw(st.integers(1, 2))
    T = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=n * k,
                               max_size=n * k))).reshape(n, k)
    cap = np.array(draw(st.lists(st.sampled_from([1, 2]), min_size=k, max_size=k)))
    everything = [(a, b) for a in range(n) for b in range(a + 1, n)]
    members = np.array(draw(st.lists(st.sampled_from(everything), unique=True, min_size=1,
                                     max_size=5)))
    f = np.array(draw(st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.9]),
                               min_size=members.size * k, max_size=members.size * k)))
    ptp = T[members].transpose(0, 2, 1) * f.reshape(len(members), k, 2)
    return T, cap, members, ptp


@settings(max_examples=25, deadline=None)
@given(_instances())
def test_property_dropping_matched_pairs_keeps_water_filling(inst):
    T, cap, members, ptp = inst
    jobs = fa.Jobs(T)
    cluster = fa.Cluster({f"t{j}": int(c) for j, c in enumerate(cap)})
    pairs = fa.JobPairs(members, ptp)
    kept = singles_dominated_pairs(jobs, cluster, pairs)
    full = fa.water_filling(jobs, cluster, pairs=pairs)
    less = fa.water_filling(jobs, cluster, pairs=kept)
    assert full.certificate.ok and less.certificate.ok
    # leximin: each job's normalised throughput is unique; both met to the certificates'
    # accuracy (a level per job at most)
    tol = T.shape[0] * 10 * (GAP_TOL + FEAS_TOL)
    assert np.allclose(full.metric, less.metric, atol=tol, rtol=tol)


def test_singles_dominated_pairs_keeps_pairs_that_gain():
    jobs = fa.Jobs([[2.0, 2.0], [4.0, 0.0]])
    cluster = fa.Cluster({"a": 1, "b": 1})
    pairs = fa.JobPairs([[0, 1], [0, 1]], [[[1.0, 2.0], [1.0, 0.0]],
                                           [[1.5, 3.0], [0.0, 1.0]]])
    out = singles_dominated_pairs(jobs, cluster, pairs).throughput
    # pair 0: 1/2 + 2/4 = 1 on "a" (dropped); on "b" job 1 cannot run alone, its rate 0:
    # 1/2 (dropped). pair 1: 1.5/2 + 3/4 > 1 on "a" (kept); job 1 gets 1 on "b" where it
    # cannot run alone (kept)
    assert out.tolist() == [[[0.0, 0.0], [0.0, 0.0]], [[1.5, 3.0], [0.0, 1.0]]]
