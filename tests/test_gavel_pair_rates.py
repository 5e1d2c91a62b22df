"""Space-sharing pair rates (``JobIdPair(a, b)`` -> ``{type: [rate of a, rate of b]}``) read by
Gandiva's keep rule and by ``packed_effective`` are validated as single rates are (misc39)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairalloc import InputError
from fairalloc.errors import FairallocError
from fairalloc.integrations.gavel_heuristics import GandivaPolicy
from fairalloc.integrations.gavel_packed import packed_effective

PAIR = (3, 7)
SPEC = {"v100": 1, "k80": 1}


def _tp(bad):
    return {3: {"v100": 2.0, "k80": 1.0}, 7: {"v100": 2.0, "k80": 1.0},
            PAIR: {"v100": [1.0, 1.0], "k80": bad}}


def _gandiva(tp):
    return GandivaPolicy().get_allocation(tp, {3: 1, 7: 1}, SPEC)


def _effective(tp):
    alloc = {k: dict.fromkeys(SPEC, 0.0) for k in tp}
    return packed_effective(tp, alloc, SPEC)


BAD = {"short": [1.0], "long": [1.0, 2.0, 3.0], "scalar": 1.5, "text": "1.5",
       "bytes": b"2", "bool": True, "member_text": ["1", 2.0], "member_bool": [True, 1.0],
       "nan": [1.0, float("nan")], "inf": [float("inf"), 1.0], "negative": [1.0, -1.0],
       "nested": [[1.0, 1.0], [1.0, 1.0]], "ragged": [1.0, [1.0]], "none": None,
       "dict": {"a": 1.0}, "complex": [1.0, 1j]}


@pytest.mark.parametrize("call", [_gandiva, _effective], ids=["gandiva", "packed_effective"])
@pytest.mark.parametrize("bad", list(BAD.values()), ids=list(BAD))
def test_a_malformed_pair_rate_is_an_input_error_naming_pair_and_type(call, bad):
    # main: packed_effective raised ValueError/TypeError from numpy or read NaN, -1, True and
    # "1" as rates; Gandiva read them only when a kept pair's gain was computed
    with pytest.raises(InputError) as info:
        call(_tp(bad))
    assert info.value.argument == "unflattened_throughputs"
    assert str(info.value).startswith("unflattened_throughputs[(3, 7)]['k80']")
    assert info.value.index[:2] == (0, 1)


@pytest.mark.parametrize("call", [_gandiva, _effective], ids=["gandiva", "packed_effective"])
def test_a_pair_row_that_is_not_a_dict_is_an_input_error(call):
    tp = _tp([1.0, 1.0])
    tp[PAIR] = [1.0, 1.0]
    with pytest.raises(InputError, match=r"unflattened_throughputs\[\(3, 7\)\] must be a dict"):
        call(tp)


def test_packed_effective_reads_numpy_pair_rates():
    tp = {0: {"a": 2.0}, 1: {"a": 2.0}, (0, 1): {"a": np.array([1.5, 1.0], dtype=np.float32)}}
    eff, ids = packed_effective(tp, {0: {"a": 0.0}, 1: {"a": 0.0}, (0, 1): {"a": 1.0}},
                                {"a": 1})
    assert eff.tolist() == [0.75, 0.5] and ids == [0, 1]


def test_packed_effective_names_a_pair_of_unknown_jobs():
    tp = {0: {"a": 2.0}, (0, 9): {"a": [1.0, 1.0]}}
    with pytest.raises(InputError, match=r"\(0, 9\)"):
        packed_effective(tp, {0: {"a": 0.0}, (0, 9): {"a": 1.0}}, {"a": 1})


@pytest.mark.parametrize(("rates", "kept"), [([1.0, 1.0], True), ([0.9, 1.0], False),
                                             ([0.0, 3.0], False)])
def test_gandiva_keeps_a_pair_while_its_normalised_throughput_is_at_least_one(rates, kept):
    # round 1 packs 3 and 7 (the only pair); round 2 their gangs differ, so a dropped pair
    # cannot be packed again: it gets 0 and the jobs run alone
    g = GandivaPolicy(seed=0)
    first = g.get_allocation(_tp([1.0, 1.0]), {3: 1, 7: 1}, {"v100": 1, "k80": 0})
    assert first[PAIR]["v100"] == 1.0
    tp = {3: {"v100": 2.0}, 7: {"v100": 2.0}, PAIR: {"v100": rates}}
    out = g.get_allocation(tp, {3: 1, 7: 2}, {"v100": 2})
    assert out[PAIR]["v100"] == (1.0 if kept else 0.0)
    assert (out[7]["v100"] == 0.0) is kept


_ANY = st.recursive(
    st.one_of(st.floats(), st.integers(-3, 3), st.booleans(), st.text(max_size=2),
              st.binary(max_size=2), st.none(), st.complex_numbers(max_magnitude=2)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                            st.dictionaries(st.sampled_from(["v100", "k80"]), inner,
                                            max_size=2)),
    max_leaves=6)
_RATE = st.one_of(st.tuples(st.floats(0, 4), st.floats(0, 4)).map(list), _ANY)


@given(rates=st.dictionaries(st.sampled_from(["v100", "k80", "p100"]), _RATE, max_size=3),
       row=st.one_of(st.just(None), _ANY), sf=st.sampled_from([1, 2]))
def test_no_other_exception_escapes_the_pair_rate_readers(rates, row, sf):
    tp = {3: {"v100": 2.0, "k80": 1.0}, 7: {"v100": 1.0}, PAIR: rates if row is None else row}
    g = GandivaPolicy(seed=1)
    for call in (lambda: g.get_allocation(tp, {3: 1, 7: 1}, {"v100": 1, "k80": 0}),
                 lambda: g.get_allocation(tp, {3: 1, 7: sf}, {"v100": 1}),
                 lambda: _effective(tp)):
        try:
            call()
        except FairallocError:
            pass
