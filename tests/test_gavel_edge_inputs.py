"""Real and invalid inputs at the point of use in the Gavel adapter's own readers (edge38)."""

from __future__ import annotations

import numpy as np
import pytest

from fairalloc import InputError
from fairalloc.integrations.gavel_base import gavel_isolated_throughputs


@pytest.mark.parametrize("bad", ["1.5", True, np.bool_(False), [1.0], b"2"])
def test_isolated_throughputs_refuse_non_numbers_naming_job_and_type(bad):
    # numpy's float conversion read "1.5" as 1.5 and True as 1.0 before the checks (rnd38)
    tp = {3: {"v100": 2.0, "k80": 1.0}, 7: {"v100": bad, "k80": 1.0}}
    with pytest.raises(InputError) as info:
        gavel_isolated_throughputs(tp, {3: 1, 7: 1}, {"v100": 1, "k80": 1})
    assert info.value.argument == "unflattened_throughputs"
    assert info.value.index == (1, 0)
    assert str(info.value).startswith("unflattened_throughputs[7]['v100']")


def test_isolated_throughputs_name_job_and_type_of_a_negative_rate():
    tp = {"a": {"v100": 2.0}, "b": {"k80": -1.0}}
    with pytest.raises(InputError, match=r"unflattened_throughputs\['b'\]\['k80'\]") as info:
        gavel_isolated_throughputs(tp, {"a": 1, "b": 1}, {"v100": 1, "k80": 1})
    assert info.value.index == (1, 1)


def test_isolated_throughputs_take_numpy_scalars_as_numbers():
    tp = {0: {"v100": np.float32(4.0), "k80": np.int64(1)}, 1: {"v100": 2, "k80": 2.0}}
    out = gavel_isolated_throughputs(tp, {0: 1, 1: 1}, {"v100": 1, "k80": 1})
    assert out.tolist() == [2.5, 2.0]


def _calls():
    from fairalloc.integrations import gavel

    def fifo(tp, sf, cl):
        return gavel.FIFOPolicy().get_allocation(tp, sf, cl)

    def gandiva(tp, sf, cl):
        return gavel.GandivaPolicy().get_allocation(tp, sf, cl)

    def isolated(tp, sf, cl):
        return gavel.IsolatedPolicy().get_allocation(tp, sf, cl)

    def agnostic(tp, sf, cl):
        return gavel.MaxMinFairnessPolicy().get_allocation(tp, sf, dict.fromkeys(tp, 1.0), cl)

    def allox(tp, sf, cl):
        return gavel.AlloXPolicy().get_allocation(tp, sf, dict.fromkeys(tp, 1.0),
                                                  dict.fromkeys(tp, 100.0), cl)

    return {"fifo": fifo, "gandiva": gandiva, "isolated": isolated, "max_min_fairness": agnostic,
            "allox": allox}


CALLS = _calls()
GOOD_TP = {3: {"v100": 2.0, "k80": 1.0}, 7: {"v100": 3.0, "k80": 1.5}}


@pytest.mark.parametrize("name", ["fifo", "gandiva", "isolated", "max_min_fairness"])
@pytest.mark.parametrize("bad", ["1.5", True, [1.0], -1.0])
def test_heuristic_and_agnostic_policies_check_the_rates(name, bad):
    # these read a rate only as a flag (> 0) or not at all: "1.5" and True passed, a list
    # raised TypeError in FIFOPolicy
    tp = {3: {"v100": 2.0, "k80": 1.0}, 7: {"v100": bad, "k80": 1.0}}
    with pytest.raises(InputError) as info:
        CALLS[name](tp, {3: 1, 7: 1}, {"v100": 1, "k80": 1})
    assert info.value.argument == "unflattened_throughputs"
    assert info.value.index == (1, 0)
    assert "[7]['v100']" in str(info.value)


@pytest.mark.parametrize("name", ["fifo", "gandiva", "isolated", "allox"])
@pytest.mark.parametrize("bad", ["1", True, 1.5])
def test_heuristic_policies_check_the_cluster(name, bad):
    with pytest.raises(InputError) as info:
        CALLS[name](GOOD_TP, {3: 1, 7: 1}, {"v100": 1, "k80": bad})
    assert info.value.argument == "cluster_spec"
    assert info.value.index == (1,)
    assert "cluster_spec['k80']" in str(info.value)


@pytest.mark.parametrize("name", ["fifo", "gandiva"])
@pytest.mark.parametrize("bad", [True, "1", 1.5, 0])
def test_heuristic_policies_check_the_scale_factors(name, bad):
    with pytest.raises(InputError) as info:
        CALLS[name](GOOD_TP, {3: 1, 7: bad}, {"v100": 1, "k80": 1})
    assert info.value.argument == "scale_factors"
    assert "scale_factors[7]" in str(info.value)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_heuristic_policies_take_numpy_scalars(name):
    tp = {j: {t: np.float32(v) for t, v in row.items()} for j, row in GOOD_TP.items()}
    out = CALLS[name](tp, {3: np.int64(1), 7: 1}, {"v100": np.int64(1), "k80": 1})
    assert set(out) == {3, 7}
    assert all(0.0 <= v <= 1.0 for row in out.values() for v in row.values())
