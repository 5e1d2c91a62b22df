"""Issue #27: what counts as a number at every public entry point (``fairalloc._validation``).

A complex entry (even with a zero imaginary part; Python or numpy), a bool where a number
belongs, text, ``None``, nested sequences, objects and integers beyond a float are an
``InputError`` naming the argument (and, for arrays, the entry) -- never silently cut to a real
part, never a foreign exception. Real numbers of any Python or numpy type (``Decimal``,
``Fraction`` too) are accepted and give the same answer as floats. Masks (``array_like of
bool`` arguments) still take bools.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.errors import InputError
from fairalloc.integrations import gavel
from fairalloc.sim import Workload

PROPERTY = settings(max_examples=60, deadline=None)

# -- the entry points: (label, argument named in the error, base value, call(value)) ---------
T23 = [[4.0, 2.0, 1.0], [3.0, 3.0, 2.0]]
TYPES = ("v100", "p100", "k80")


def _rows(T: list[list[Any]]) -> dict[str, dict[str, Any]]:
    """``{job: {type: rate}}`` with jobs ``j0, j1, ...`` (a round's dict input)."""
    return {f"j{i}": dict(zip(TYPES, row)) for i, row in enumerate(T)}


def _by_job(values: list[Any]) -> dict[str, Any]:
    return {f"j{i}": v for i, v in enumerate(values)}


def _gavel(norm: str, tp: Any = None, sf: Any = None, w: Any = None, spec: Any = None) -> Any:
    return gavel.MaxMinFairnessPolicyWithPerf(normalization=norm).get_allocation(
        _rows(T23) if tp is None else tp, sf or {"j0": 1, "j1": 1},
        w or {"j0": 1.0, "j1": 2.0}, spec or dict(zip(TYPES, (1, 1, 1))))


PLAN_JOB = {"workers": 1, "total_epochs": 100, "done_epochs": 20, "ftf": 1.3}
CASES: list[tuple[str, str, list[Any], Callable[[Any], Any]]] = [
    ("Cluster", "workers", [2, 2, 1], lambda a: fa.Cluster(dict(zip(TYPES, a)))),
    ("Jobs", "throughput", T23, lambda a: fa.Jobs(a)),
    ("Jobs", "scale_factor", [1, 2], lambda a: fa.Jobs(T23, scale_factor=a)),
    ("Jobs", "weight", [1.0, 2.0], lambda a: fa.Jobs(T23, weight=a)),
    ("Jobs", "steps_remaining", [10.0, 20.0], lambda a: fa.Jobs(T23, steps_remaining=a)),
    ("Jobs", "elapsed", [10.0, 20.0], lambda a: fa.Jobs(T23, elapsed=a)),
    ("Jobs", "isolated_elapsed", [1.0, 2.0], lambda a: fa.Jobs(T23, isolated_elapsed=a)),
    ("fisher_market", "utility", T23, lambda a: fa.fisher_market(a)),
    ("fisher_market", "budget", [1.0, 2.0], lambda a: fa.fisher_market(T23, a)),
    ("fisher_market", "supply", [1.0, 2.0, 1.0], lambda a: fa.fisher_market(T23, None, a)),
    ("FisherMarket", "utility", T23, lambda a: fa.FisherMarket(a)),
    ("FisherMarket", "budget", [1.0, 2.0], lambda a: fa.FisherMarket(T23, a)),
    ("volatile_fisher_market", "utility", [[[1.0, 2.0], [2.0, 1.0]], [[3.0, 1.0], [1.0, 1.0]]],
     lambda a: fa.volatile_fisher_market(a)),
    ("volatile_fisher_market", "supply", [[1.0, 2.0], [2.0, 1.0]],
     lambda a: fa.volatile_fisher_market(np.ones((2, 2, 2)), None, a)),
    ("partial_allocation", "utility", [[4.0, 1.0], [1.0, 3.0], [2.0, 2.0]],
     lambda a: fa.partial_allocation(a)),
    ("partial_allocation", "supply", [1.0, 2.0],
     lambda a: fa.partial_allocation([[4.0, 1.0], [1.0, 3.0]], a)),
    ("efq_schedule", "arrival", [0.0, 1.0, 2.0], lambda a: fa.efq_schedule(a, [1, 2, 3], 2)),
    ("efq_schedule", "gpu_time", [1.0, 2.0, 3.0], lambda a: fa.efq_schedule([0, 1, 2], a, 2)),
    ("efq_schedule", "requested", [1, 2, 1],
     lambda a: fa.efq_schedule([0, 1, 2], [1, 2, 3], 2, requested=a)),
    ("efq_finish_times", "scaling", [1.0, 1.5],
     lambda a: fa.efq_finish_times([0, 1], [1, 2], 2, scaling=a)),
    ("efq_finish_times", "num_gpus", [2, 1],
     lambda a: fa.efq_finish_times([0, 1], [1, 2], dict(zip(TYPES, a)))),
    ("ElasticFairQueue.submit", "scaling", [1.0, 1.5],
     lambda a: fa.ElasticFairQueue(2).submit("x", gpu_time=1.0, scaling=a)),
    ("PlanJob", "regimes", [[60.0, 30.0], [30.0, 50.0]],
     lambda a: fa.PlanJob(**PLAN_JOB, regimes=a)),
    ("plan_schedule", "remaining_limit", [1000.0],
     lambda a: fa.plan_schedule([fa.PlanJob(workers=1, total_epochs=10, done_epochs=0, ftf=1.0,
                                            regimes=[(60.0, 10)])], 1, rounds=2,
                                remaining_limit=a)),
    ("Workload.from_arrays", "steps", [100.0, 50.0],
     lambda a: Workload.from_arrays([0, 60], T23, a)),
    ("solve_round", "throughput", T23,
     lambda a: fa.solve_round("max_min_fairness", _rows(a), dict(zip(TYPES, (1, 1, 1))))),
    ("solve_round", "workers", [1, 2, 1],
     lambda a: fa.solve_round("max_min_fairness", _rows(T23), dict(zip(TYPES, a)))),
    ("solve_round", "weight", [1.0, 2.0],
     lambda a: fa.solve_round("max_min_fairness", _rows(T23), dict(zip(TYPES, (1, 1, 1))),
                              weight=_by_job(a))),
    ("solve_round", "scale_factor", [1, 1],
     lambda a: fa.solve_round("max_min_fairness", _rows(T23), dict(zip(TYPES, (1, 1, 1))),
                              scale_factor=_by_job(a))),
    ("solve_round", "slo", [1e6, 1e7],
     lambda a: fa.solve_round("min_cost", _rows(T23), dict(zip(TYPES, (1, 1, 1))),
                              cost=dict(zip(TYPES, (3.0, 2.0, 1.0))), slo=_by_job(a),
                              steps_remaining=_by_job([10.0, 10.0]))),
    ("RoundPolicy.allocate", "throughput", T23,
     lambda a: fa.RoundPolicy().allocate(_rows(a), dict(zip(TYPES, (1, 1, 1))))),
    ("RoundPolicy.allocate", "steps_remaining", [10.0, 20.0],
     lambda a: fa.RoundPolicy("min_makespan").allocate(
         _rows(T23), dict(zip(TYPES, (1, 1, 1))), steps_remaining=_by_job(a))),
    ("RoundPolicy.allocate", "elapsed", [10.0, 20.0],
     lambda a: fa.RoundPolicy("finish_time_fairness").allocate(
         _rows(T23), dict(zip(TYPES, (1, 1, 1))), steps_remaining=_by_job([5.0, 5.0]),
         elapsed=_by_job(a))),
    ("gavel paper", "unflattened_throughputs", T23, lambda a: _gavel("paper", tp=_rows(a))),
    ("gavel paper", "unflattened_priority_weights", [1.0, 2.0],
     lambda a: _gavel("paper", w=_by_job(a))),
    ("gavel gavel_code", "unflattened_priority_weights", [1.0, 2.0],
     lambda a: _gavel("gavel_code", w=_by_job(a))),
    ("gavel gavel_code", "scale_factors", [1, 1], lambda a: _gavel("gavel_code", sf=_by_job(a))),
    ("gavel paper", "cluster_spec", [1, 2, 1],
     lambda a: _gavel("paper", spec=dict(zip(TYPES, a)))),
]
IDS = [f"{label}.{arg}" for label, arg, _, _ in CASES]


def _positions(base: list[Any]) -> list[tuple[int, ...]]:
    return [tuple(int(i) for i in idx) for idx in np.ndindex(np.shape(base))]


def _put(base: list[Any], idx: tuple[int, ...], value: Any) -> list[Any]:
    out = np.array(base, dtype=object)
    out[idx] = value
    return out.tolist()


def _index_in_error(label: str, idx: tuple[int, ...]) -> tuple[int, ...]:
    """Where the error says the entry is: dict rates are indexed (job, type) like the array."""
    return idx


COMPLEX = st.one_of(
    st.builds(complex, st.integers(1, 9).map(float), st.just(0.0)),  # zero imaginary part
    st.builds(complex, st.integers(1, 9).map(float), st.integers(1, 9).map(float)),
)
WRAP = st.sampled_from([complex, np.complex128, np.complex64])


@PROPERTY
@given(st.data(), COMPLEX, WRAP)
def test_any_complex_entry_of_any_array_argument_is_an_input_error(
        data: st.DataObject, value: complex, wrap: Callable[[complex], Any]) -> None:
    """Issue #27: a complex entry anywhere -- zero imaginary part or not, Python or numpy --
    names its argument and its index (it was cut to its real part)."""
    case = data.draw(st.sampled_from(range(len(CASES))), label="case")
    label, arg, base, call = CASES[case]
    idx = data.draw(st.sampled_from(_positions(base)), label="index")
    entry = wrap(complex(float(np.array(base, dtype=float)[idx]), value.imag))
    with pytest.raises(InputError) as info:
        call(_put(base, idx, entry))
    assert info.value.argument == arg, (IDS[case], str(info.value))
    assert info.value.index == _index_in_error(label, idx), (IDS[case], str(info.value))
    assert "complex" in str(info.value)


#: the cases whose argument is an array (not a dict keyed by job or type)
ARRAY_CASES = [i for i, (label, arg, _, _) in enumerate(CASES)
               if not label.startswith(("Cluster", "solve_round", "RoundPolicy", "gavel"))
               and arg != "num_gpus"]


@pytest.mark.parametrize("case", ARRAY_CASES, ids=[IDS[i] for i in ARRAY_CASES])
def test_a_numpy_complex_array_is_an_input_error(case: int) -> None:
    """A whole complex array (every imaginary part zero) names its argument; the same values
    as floats are accepted (so the refusal is the complex type's)."""
    label, arg, base, call = CASES[case]
    call(np.array(base, dtype=float))
    with pytest.raises(InputError, match="complex") as info:
        call(np.array(base, dtype=complex))
    assert info.value.argument == arg


DICT_CASES = [i for i in range(len(CASES)) if i not in ARRAY_CASES]


@pytest.mark.parametrize("case", DICT_CASES, ids=[IDS[i] for i in DICT_CASES])
def test_a_real_valued_complex_in_a_dict_argument_is_an_input_error(case: int) -> None:
    """A dict entry (job -> value, type -> count, job -> type -> rate) equal to a valid real
    number but complex is refused, naming its argument and position; the real value is
    accepted."""
    label, arg, base, call = CASES[case]
    call(base)
    idx = _positions(base)[-1]
    real = np.array(base, dtype=float)[idx]
    for entry in (complex(real, 0.0), np.complex64(real)):
        with pytest.raises(InputError, match="complex") as info:
            call(_put(base, idx, entry))
        assert (info.value.argument, info.value.index) == (arg, idx), str(info.value)


#: values that are not real numbers, with a word their message must contain
NOT_NUMBERS = [(True, "bool"), (np.False_, "bool"), ("2", "text"), (b"2", "text"),
               (None, "None"), (object(), "object"), (10**400, "too large"),
               (Decimal("sNaN"), "not a number"), (np.datetime64("2020-01-01"), "datetime64")]


def _not_number_params() -> list[Any]:
    out = []
    for case, (label, arg, _, _) in enumerate(CASES):
        for value, word in NOT_NUMBERS:
            if value is None and label.startswith(("RoundPolicy", "gavel")) and arg not in (
                    "throughput", "unflattened_throughputs", "cluster_spec"):
                continue  # a round's per-job value: None is "missing" (NaN), refused as NaN
            out.append(pytest.param(case, value, word, id=f"{IDS[case]}-{value!r:.16}"))
    return out


@pytest.mark.parametrize(("case", "value", "word"), _not_number_params())
def test_a_non_number_entry_is_an_input_error_naming_argument_and_index(
        case: int, value: Any, word: str) -> None:
    label, arg, base, call = CASES[case]
    idx = _positions(base)[-1]
    with pytest.raises(InputError) as info:
        call(_put(base, idx, value))
    assert info.value.argument == arg, str(info.value)
    assert info.value.index == _index_in_error(label, idx), str(info.value)
    assert word in str(info.value), str(info.value)


def test_the_issue_examples() -> None:
    """The examples of issue #27: each succeeded (or raised numpy's ValueError) on main."""
    with pytest.raises(InputError) as info:
        fa.Cluster({"a": 2 + 0j})
    assert (info.value.argument, info.value.index) == ("workers", (0,))
    with pytest.raises(InputError) as info:
        fa.Jobs([[1 + 1j, 2]])
    assert (info.value.argument, info.value.index) == ("throughput", (0, 0))
    with pytest.raises(InputError) as info:
        fa.fisher_market([[1 + 1j, 2]])
    assert (info.value.argument, info.value.index) == ("utility", (0, 0))
    # a list taken as a rate (it returned a result)
    with pytest.raises(InputError, match=r"throughput\[0\]\['a'\] is \[1\.0\]") as info:
        fa.solve_round("max_min_fairness", {0: {"a": [1.0]}}, {"a": 1})
    assert (info.value.argument, info.value.index) == ("throughput", (0, 0))
    for rate in ([1.0, 2.0], np.array([1.0]), "1", None, 1 + 0j, object()):  # ValueError before
        for call in (lambda r: fa.solve_round("max_min_fairness", {0: {"a": 1.0}, 1: {"a": r}},
                                              {"a": 1}),
                     lambda r: fa.RoundPolicy().allocate({0: {"a": 1.0}, 1: {"a": r}},
                                                         {"a": 1})):
            with pytest.raises(InputError) as info:
                call(rate)
            assert (info.value.argument, info.value.index) == ("throughput", (1, 0)), rate
            assert "throughput[1]['a']" in str(info.value)


def test_bools_are_not_numbers_but_masks_take_them() -> None:
    """The rule (``fairalloc._validation``): a bool where a number belongs is refused --
    scalar, bool array, or one bool among numbers (numpy would read it as 1) -- while an
    argument documented as ``array_like of bool`` (a mask) takes bools."""
    for bad in ([[True, 2.0], [1.0, 1.0]], np.ones((2, 2), dtype=bool), [[1.0, 2.0], [1, False]]):
        with pytest.raises(InputError, match="bool") as info:
            fa.Jobs(bad)
        assert info.value.argument == "throughput"
    with pytest.raises(InputError, match="bool") as info:
        fa.Jobs(T23, weight=[1.0, True])
    assert info.value.index == (1,)
    with pytest.raises(InputError, match="bool"):
        fa.PlanJob(workers=1, total_epochs=np.True_, done_epochs=0, ftf=1.0,
                   regimes=[(1.0, 1.0)])
    from fairalloc.mechanism import RoundScheduler

    mech = RoundScheduler([[1.0, 0.0], [0.0, 1.0]], fa.Cluster({"a": 1, "b": 1}),
                          runnable=np.array([[True, False], [True, True]]))
    assert mech.next_round() is not None


MIXED = st.sampled_from([int, float, np.int64, np.int32, np.float32, np.float64, np.uint16,
                         Decimal, Fraction])


@PROPERTY
@given(st.lists(st.tuples(MIXED, MIXED, MIXED), min_size=2, max_size=2),
       st.lists(MIXED, min_size=2, max_size=2))
def test_real_numbers_of_any_type_are_accepted_and_equal_floats(
        kinds: list[tuple[type, type, type]], wkinds: list[type]) -> None:
    """int, float, numpy integers and floats, Decimal and Fraction, mixed in one argument,
    give exactly the answer of the same values as floats."""
    T = [[3, 2, 1], [1, 2, 4]]
    W = [1, 2]
    typed = [[k(v) for k, v in zip(row_k, row)] for row_k, row in zip(kinds, T)]
    wtyped = [k(v) for k, v in zip(wkinds, W)]
    jobs = fa.Jobs(typed, weight=wtyped)
    assert jobs.throughput.tolist() == [[3.0, 2.0, 1.0], [1.0, 2.0, 4.0]]
    assert jobs.weight.tolist() == [1.0, 2.0]
    workers = dict(zip(TYPES, (1, 1, 1)))
    got = fa.solve_round("max_min_fairness", _rows(typed), workers, weight=_by_job(wtyped))
    want = fa.solve_round("max_min_fairness", _rows([[float(v) for v in r] for r in T]),
                          workers, weight=_by_job([1.0, 2.0]))
    assert np.array_equal(got.x, want.x)
    # ... and among them, a complex of the same value is not a real number
    typed[1][2] = np.complex64(typed[1][2])
    with pytest.raises(InputError) as info:
        fa.Jobs(typed, weight=wtyped)
    assert (info.value.argument, info.value.index) == ("throughput", (1, 2))


def test_ragged_and_too_deep_arrays_name_the_entry() -> None:
    """A sequence where a number belongs names the entry (numpy's ValueError had no index)."""
    with pytest.raises(InputError, match=r"throughput\[1\] has another shape") as info:
        fa.Jobs([[1.0, 2.0], [3.0]])
    assert info.value.index == (1,)
    with pytest.raises(InputError, match=r"utility\[1, 2\] has another shape") as info:
        fa.fisher_market(_put(T23, (1, 2), [2.0]))
    assert info.value.index == (1, 2)
    with pytest.raises(InputError, match=r"regimes\[1, 1\] has another shape") as info:
        fa.PlanJob(**PLAN_JOB, regimes=[[60.0, 30.0], [30.0, [50.0]]])
    assert info.value.index == (1, 1)
    with pytest.raises(InputError, match=r"weight\[0\] is \[1\.0\]") as info:
        fa.Jobs(T23, weight=[[1.0], [2.0]])
    assert info.value.index == (0,)
    with pytest.raises(InputError, match=r"weight\['j1'\]") as info:
        fa.solve_round("max_min_fairness", _rows(T23), dict(zip(TYPES, (1, 1, 1))),
                       weight={"j0": 1.0, "j1": "2"})
    assert info.value.index == (1,)


def test_scalar_arguments_refuse_numpy_complex_and_dates() -> None:
    """A numpy complex scalar was cut to its real part by ``float()`` (with a warning)."""
    for name in ("total_epochs", "done_epochs", "ftf"):
        kw = {**PLAN_JOB, "regimes": [(60.0, 80.0)], name: np.complex128(PLAN_JOB[name])}
        with pytest.raises(InputError, match="complex") as info:
            fa.PlanJob(**kw)
        assert info.value.argument == name
    with pytest.raises(InputError) as info:
        fa.efq_schedule([0.0], [1.0], 2, alpha=np.complex64(0.5))
    assert info.value.argument == "alpha"
    with pytest.raises(InputError) as info:
        fa.ElasticFairQueue(np.timedelta64(4))
    assert info.value.argument == "num_gpus"


def test_huge_gpu_counts_of_a_queue_are_bounded() -> None:
    """A finite count far beyond any cluster overflowed later (OverflowError, or a per-GPU
    array of 2**31 entries: MemoryError) inside a SolverError."""
    from fairalloc.queuing.curves import MAX_GPUS

    for num_gpus in (10**400, MAX_GPUS + 1, {"a": MAX_GPUS, "b": 1}):
        with pytest.raises(InputError, match="MAX_GPUS") as info:
            fa.efq_schedule([0.0, 1.0], [1.0, 2.0], num_gpus,
                            gpu_power=None if isinstance(num_gpus, int) else {"a": 1, "b": 2})
        assert info.value.argument == "num_gpus"
    with pytest.raises(InputError, match="MAX_GPUS"):
        fa.ElasticFairQueue(10**400)
    with pytest.raises(InputError, match="twice"):
        fa.efq_schedule([0.0], [1.0], {1: 2, "1": 2})
    assert fa.efq_schedule([0.0], [1.0], MAX_GPUS).efq_finish[0] > 0


def test_gavel_adapter_inputs() -> None:
    """Gavel-shaped dicts: errors name Gavel's argument; the gavel_code normalisation and the
    packing policy's pair rates are checked (they raised TypeError / OverflowError)."""
    for w, match in ((1 + 0j, "complex"), ("2", "text")):
        with pytest.raises(InputError, match=match) as info:
            _gavel("gavel_code", w={"j0": 1.0, "j1": w})
        assert info.value.argument == "unflattened_priority_weights"
    # gavel_code no longer squares the weight (#29): a weight of 1e200 is a weight like any other
    assert _gavel("gavel_code", w={"j0": 1.0, "j1": 1e200}) == _gavel("paper", w={"j0": 1.0,
                                                                                 "j1": 1e200})
    with pytest.raises(InputError) as info:
        _gavel("gavel_code", sf={"j0": 1})
    assert info.value.argument == "scale_factors"
    packing = gavel.MaxMinFairnessPolicyWithPacking()
    tp = {0: {"v100": 1.0}, 1: {"v100": 1.0}}
    for rate in ([0.6, 0.6 + 0j], ["0.6", 0.6], 0.6, [0.6, [0.6]], [0.6, 0.6, 0.6]):
        with pytest.raises(InputError) as info:
            packing.get_allocation({**tp, (0, 1): {"v100": rate}}, {0: 1, 1: 1}, {0: 1, 1: 1},
                                   {"v100": 1})
        assert info.value.argument == "unflattened_throughputs", rate
        assert "(0, 1)" in str(info.value)
    out = packing.get_allocation({**tp, (0, 1): {"v100": [0.6, 0.6]}}, {0: 1, 1: 1}, None,
                                 {"v100": 1})  # priority weights None: TypeError before
    assert set(out) == {0, 1, (0, 1)}


def test_workload_regimes_and_masked_values() -> None:
    from fairalloc.mechanism import complete_matrix
    from fairalloc.sim import JobSpec, Workload

    for regimes in ([(1 + 0j, 2.0, [1.0])], [(1.0, 2.0, np.array([1.0 + 0j]))],
                    [(1.0, True, [1.0])]):
        with pytest.raises(InputError) as info:
            Workload.from_jobs([JobSpec(arrival=0.0, regimes=regimes)], ["a"])
        assert (info.value.argument, info.value.index) == ("jobs", (0,))
    values = np.array([[1.0, 2.0], [2.0, 4.0 + 0j]])
    with pytest.raises(InputError, match="complex") as info:
        complete_matrix(values, mask=np.ones((2, 2), dtype=bool), rank=1)
    assert info.value.argument == "values"
