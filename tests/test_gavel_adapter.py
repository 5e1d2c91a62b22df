"""Issue #16: fairalloc.integrations.gavel, driven with dicts shaped exactly like Gavel's."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.integrations import gavel


class JobIdPair:
    """The shape of Gavel's ``job_id_pair.JobIdPair`` (hashable, ordered, ``is_pair``)."""

    def __init__(self, a, b=None):
        self._t = (a, b)

    def is_pair(self):
        return self._t[1] is not None

    def singletons(self):
        return (JobIdPair(self._t[0]), JobIdPair(self._t[1])) if self.is_pair() else (self,)

    def __getitem__(self, i):
        return self._t[i]

    def __hash__(self):
        return hash(self._t)

    def __eq__(self, other):
        return isinstance(other, JobIdPair) and self._t == other._t

    def __lt__(self, other):
        return (self._t[0], -1 if self._t[1] is None else self._t[1]) < (
            other._t[0], -1 if other._t[1] is None else other._t[1])

    def __repr__(self):
        return f"JobIdPair({self._t[0]}, {self._t[1]})"


J = [JobIdPair(i) for i in range(6)]
SPEC = {"k80": 2, "p100": 2, "v100": 2}


def _round(n=6, seed=0):
    rng = np.random.default_rng(seed)
    tp = {J[i]: {"k80": float(rng.uniform(1, 3)), "p100": float(rng.uniform(3, 6)),
                 "v100": float(rng.uniform(6, 12))} for i in range(n)}
    sf = {J[i]: int(rng.choice([1, 2])) for i in range(n)}
    pw = {J[i]: float(rng.choice([1.0, 2.0])) for i in range(n)}
    return tp, sf, pw


def _check_shape(alloc, tp, spec):
    assert set(alloc) == set(tp)
    for row in alloc.values():
        assert set(row) == set(spec)
        assert all(isinstance(v, float) and v >= 0 for v in row.values())
        assert sum(row.values()) <= 1 + 1e-9


def test_paper_example_through_gavel_interface():
    p = gavel.MaxMinFairnessPolicyWithPerf(solver="ECOS")
    tp = {J[0]: {"v100": 40.0, "k80": 10.0}, J[1]: {"v100": 12.0, "k80": 4.0},
          J[2]: {"v100": 100.0, "k80": 50.0}}
    ones = {j: 1 for j in tp}
    alloc = p.get_allocation(tp, ones, {j: 1.0 for j in tp}, {"v100": 1, "k80": 1})
    _check_shape(alloc, tp, {"v100": 1, "k80": 1})
    got = np.array([[alloc[j]["v100"], alloc[j]["k80"]] for j in tp]) * 11
    np.testing.assert_allclose(got, [[5, 0], [5, 1], [1, 10]], atol=1e-6)
    assert p.last_result.certificate.ok and p.name == "MaxMinFairness_Perf"


def test_max_min_matches_fairalloc_and_gavel_code_normalisation():
    tp, sf, pw = _round()
    p = gavel.MaxMinFairnessPolicyWithPerf()
    alloc = p.get_allocation(tp, sf, pw, SPEC)
    _check_shape(alloc, tp, SPEC)
    types = list(SPEC)
    T = np.array([[tp[j][t] for t in types] for j in tp])
    s = np.array([sf[j] for j in tp])
    w = np.array([pw[j] for j in tp])
    d = fa.max_min_fairness(fa.Jobs(T, scale_factor=s, weight=w), fa.Cluster(SPEC))
    got = np.array([[alloc[j][t] for t in types] for j in tp])
    np.testing.assert_allclose(got, d.x, atol=1e-9)
    # Gavel's current code applies s / w once: normalization="gavel_code" is the same program
    q = gavel.MaxMinFairnessPolicyWithPerf(normalization="gavel_code")
    alloc2 = q.get_allocation(tp, sf, pw, SPEC)
    np.testing.assert_allclose(np.array([[alloc2[j][t] for t in types] for j in tp]), d.x,
                               atol=1e-9)


def test_drained_type_and_unrunnable_job_in_a_gavel_round():
    tp, sf, pw = _round()
    tp[J[5]] = {"k80": 0.0, "p100": 0.0, "v100": 5.0}   # runs only on V100
    spec = {"k80": 2, "p100": 2, "v100": 0}              # V100 nodes drained
    p = gavel.MaxMinFairnessPolicyWithPerf()
    alloc = p.get_allocation(tp, sf, pw, spec)
    _check_shape(alloc, tp, spec)
    assert all(v == 0.0 for v in alloc[J[5]].values())
    assert all(alloc[j]["v100"] == 0.0 for j in tp)
    r = p.last_result
    assert r.drained_types == ("v100",) and r.unrunnable_jobs == (J[5],)
    assert r.certificate.ok


def test_empty_round_returns_an_empty_dict():
    assert gavel.MaxMinFairnessPolicyWithPerf().get_allocation({}, {}, {}, SPEC) == {}


def test_finish_time_fairness_makespan_throughput_sum_and_fifo():
    tp, sf, _ = _round()
    t0 = {j: float(10 * i) for i, j in enumerate(tp)}
    steps = {j: 1000.0 * (i + 1) for i, j in enumerate(tp)}
    a = gavel.FinishTimeFairnessPolicyWithPerf().get_allocation(tp, sf, {j: 1.0 for j in tp},
                                                                 t0, steps, SPEC)
    _check_shape(a, tp, SPEC)
    b = gavel.MinTotalDurationPolicyWithPerf().get_allocation(tp, sf, steps, SPEC)
    _check_shape(b, tp, SPEC)
    c = gavel.ThroughputSumWithPerf().get_allocation(tp, sf, SPEC)
    _check_shape(c, tp, SPEC)
    # FIFO: the example, 4 GPUs, the first job a 4-GPU gang
    tp4 = {J[i]: {"gpu": 1.0} for i in range(5)}
    f = gavel.policy("fifo_perf").get_allocation(tp4, {J[0]: 4, **{J[i]: 1 for i in
                                                                  range(1, 5)}}, {"gpu": 4})
    assert f[J[0]]["gpu"] == pytest.approx(1.0, abs=1e-6)
    assert max(f[J[i]]["gpu"] for i in range(1, 5)) == pytest.approx(0.0, abs=1e-6)


def test_water_filling_with_gavel_entities():
    tp, sf, pw = _round()
    ents = {"A": [J[0], J[1], J[2]], "B": [J[3], J[4], J[5]]}
    p = gavel.policy("max_min_fairness_water_filling_perf")
    alloc = p.get_allocation(tp, sf, pw, SPEC, entity_weights={"A": 1.0, "B": 3.0},
                             entity_to_job_mapping=ents)
    _check_shape(alloc, tp, SPEC)
    assert p.last_result.certificate.ok
    # Gavel's return shape: (normalized effective throughputs, sorted job ids)
    eff, ids = p.get_allocation(tp, sf, pw, SPEC, entity_weights={"A": 1.0, "B": 3.0},
                                entity_to_job_mapping=ents, return_effective_throughputs=True)
    assert ids == sorted(tp) and isinstance(eff, np.ndarray) and eff.shape == (len(tp),)
    c = np.array([SPEC[t] for t in SPEC], dtype=float)
    want = [sum(tp[j][t] * alloc[j][t] for t in SPEC)
            / (np.array([tp[j][t] for t in SPEC]) @ (c / c.sum())) for j in ids]
    np.testing.assert_allclose(eff, want, rtol=1e-9)


def test_pair_keys_are_refused_clearly():
    tp, sf, pw = _round(2)
    tp[JobIdPair(0, 1)] = {"k80": [1.0, 1.0], "p100": [2.0, 2.0], "v100": [3.0, 3.0]}
    with pytest.raises(fa.InputError, match="space sharing"):
        gavel.MaxMinFairnessPolicyWithPerf().get_allocation(tp, sf, pw, SPEC)
    with pytest.raises(fa.InputError, match="name"):
        gavel.policy("lottery")


def test_space_sharing_pair_keys_like_gavel():
    # two jobs that run at 80 % each when colocated on one V100: sharing beats time slicing
    tp = {J[0]: {"v100": 10.0}, J[1]: {"v100": 10.0},
          JobIdPair(0, 1): {"v100": [8.0, 8.0]}}
    sf = {J[0]: 1, J[1]: 1}
    pw = {J[0]: 1.0, J[1]: 1.0}
    p = gavel.policy("max_min_fairness_packing")
    alloc = p.get_allocation(tp, sf, pw, {"v100": 1})
    assert set(alloc) == set(tp)
    pair = alloc[JobIdPair(0, 1)]
    assert pair["v100"] == pytest.approx(1.0, abs=1e-6)
    assert alloc[J[0]]["v100"] == pytest.approx(0.0, abs=1e-6)
    assert p.packing_result.certificate.ok
    # without the pair each job gets half the GPU: level 0.5 vs 0.8 with sharing
    no_pair = gavel.MaxMinFairnessPolicyWithPerf()
    no_pair.get_allocation({j: tp[j] for j in J[:2]}, sf, pw, {"v100": 1})
    assert p.packing_result.objective == pytest.approx(
        no_pair.last_result.objective * 1.6, rel=1e-6)
    tp = {J[0]: {"v100": 10.0, "k80": 2.0}, J[1]: {"v100": 10.0, "k80": 2.0},
          J[2]: {"v100": 10.0, "k80": 5.0},
          JobIdPair(0, 1): {"v100": [8.0, 8.0], "k80": [1.0, 1.0]}}
    sf = {J[0]: 1, J[1]: 1, J[2]: 1}
    pw = {J[0]: 1.0, J[1]: 1.0, J[2]: 1.0}
    # a pair whose member cannot run gets 0; a drained type gets 0
    tp2 = dict(tp)
    tp2[J[1]] = {"v100": 0.0, "k80": 0.0, "tpu": 1.0}
    alloc2 = gavel.policy("max_min_fairness_packing").get_allocation(
        tp2, sf, pw, {"v100": 1, "k80": 1})
    assert alloc2[JobIdPair(0, 1)] == {"v100": 0.0, "k80": 0.0}


def test_an_entity_without_jobs_is_accepted_as_gavel_does():
    """Gavel's generator (and any scheduler whose entity's jobs all finished) passes
    ``entity_to_job_mapping={'b': []}`` with a weight for 'b': accepted, no effect."""
    p = gavel.MaxMinFairnessWaterFillingPolicyWithPerf()
    tp = {0: {"v100": 40.0, "k80": 10.0}, 1: {"v100": 12.0, "k80": 4.0}}
    args = (tp, {0: 1, 1: 1}, {0: 1.0, 1: 1.0}, {"v100": 1, "k80": 1})
    with_empty = p.get_allocation(*args, entity_weights={"a": 1.0, "b": 2.0},
                                  entity_to_job_mapping={"a": [0, 1], "b": []})
    plain = gavel.MaxMinFairnessWaterFillingPolicyWithPerf().get_allocation(
        *args, entity_weights={"a": 1.0}, entity_to_job_mapping={"a": [0, 1]})
    assert with_empty == plain
