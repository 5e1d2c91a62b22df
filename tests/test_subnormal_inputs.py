"""Issue #27 (fuzz seeds 707/808): a subnormal number is refused at every public entry point.

A nonzero finite value whose magnitude is below ``np.finfo(float).tiny`` (e.g. ``5e-324``) was
read as 0 by the solvers while the certificate read it as nonzero: a Leontief requirement of
5e-324 gave an Eisenberg-Gale gap of 1.98 with ``ok=True``, and ``partial_allocation`` gave
nothing to a buyer whom a 4.9e-324 supply was "worth" something. One rule in
``fairalloc._validation`` now refuses such a value with an `InputError` naming the argument
and the entry (pass 0 or a normal number).
"""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.errors import InputError

from .test_input_types import CASES, IDS

SUBNORMALS = (5e-324, -5e-324, np.float64(2.2e-309), np.finfo(float).tiny / 2)
#: the real-valued arguments (an integer argument -- a count, a gang size -- refuses 5e-324 as
#: a non-integer already)
INTEGER_ARGS = ("workers", "scale_factor", "requested", "num_gpus", "cluster_spec",
                "scale_factors")
REAL_CASES = [i for i, (_, arg, _, _) in enumerate(CASES) if arg not in INTEGER_ARGS]


@pytest.mark.parametrize("case", REAL_CASES, ids=[IDS[i] for i in REAL_CASES])
@pytest.mark.parametrize("value", SUBNORMALS, ids=["min", "-min", "np", "tiny/2"])
def test_a_subnormal_entry_is_an_input_error_naming_argument_and_index(case: int,
                                                                       value: float) -> None:
    label, arg, base, call = CASES[case]
    idx = tuple(int(i) for i in list(np.ndindex(np.shape(base)))[-1])
    bad = np.array(base, dtype=object)
    bad[idx] = value
    with pytest.raises(InputError, match="subnormal") as info:
        call(bad.tolist())
    assert info.value.argument == arg, str(info.value)
    assert info.value.index == idx, str(info.value)
    assert "pass 0 or a normal number" in str(info.value)


def test_the_smallest_normal_number_and_zero_are_accepted() -> None:
    """The boundary: ``tiny`` itself is a normal number, and 0 is 0 (only the subnormal range
    between them is refused)."""
    tiny = float(np.finfo(float).tiny)
    assert fa.Jobs([[tiny, 0.0]]).throughput[0, 0] == tiny
    r = fa.efq_schedule([0.0, tiny], [1.0, 2.0], 2)
    assert r.arrival[1] == tiny and len(r.efq_finish) == 2


def test_seed_808_leontief_requirement_is_refused_not_certified_wrong() -> None:
    """The fuzz case: a Leontief requirement of 5e-324 (solvers read 0) with ok=True."""
    U = np.array([[[0.0, 9.3e8], [1.0e9, 1.9e13]], [[1.7e9, 1.8e9], [0.0, 0.0]],
                  [[7.9e8, 1.7e9], [8.7e8, 1.95e13]], [[2.0e9, 5.9e8], [5e-324, 5.7e12]]])
    m = fa.FisherMarket(utility=np.ones((4, 2, 2)), kind="leontief")
    assert m is not None  # (a normal market is accepted)
    with pytest.raises(InputError, match="subnormal") as info:
        fa.FisherMarket(utility=U, budget=np.array([6.1e-13, 1.0e-12, 1.2e-12, 1.0e-12]),
                        kind="leontief")
    assert (info.value.argument, info.value.index) == ("utility", (3, 1, 0))


def test_seed_707_partial_allocation_supply_is_refused() -> None:
    with pytest.raises(InputError, match="subnormal") as info:
        fa.partial_allocation(utility=np.full((6, 1), 1.165), supply=np.array([5e-324]))
    assert (info.value.argument, info.value.index) == ("supply", (0,))


@pytest.mark.parametrize("call, arg", [
    (lambda v: fa.efq_schedule([0.0, 1.0], [1.0, 2.0], 2, alpha=v), "alpha"),
    (lambda v: fa.fisher_market([[1.0]], time_limit=v), "time_limit"),
])
def test_a_subnormal_scalar_is_an_input_error(call, arg: str) -> None:
    with pytest.raises(InputError) as info:
        call(5e-324)
    assert info.value.argument == arg


def test_partial_allocation_names_an_entry_its_scaling_makes_subnormal() -> None:
    """Normal utilities 4 and 1.2e-307 in one row: scaled to unit utility the second falls
    below the smallest normal number. The error names the user's entry and says why (before:
    `fisher_market`'s refusal of a subnormal utility 1.5e-308 the user never passed)."""
    U = np.array([[4.0, 1.2095342725321902e-307, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    with pytest.raises(InputError, match="span more than double precision") as info:
        fa.partial_allocation(U, supply=np.full(3, 0.5))
    assert (info.value.argument, info.value.index) == ("utility", (0, 1))


def test_makespan_regularizer_refuses_a_subnormal_constant_work() -> None:
    """Fuzz seed 1313: a constant ``work`` with a 5e-324 entry was accepted."""
    import cvxpy as cp

    with pytest.raises(InputError, match="subnormal") as info:
        fa.makespan_regularizer(cp.Constant(np.array([5e-324, 8.3e10])),
                                np.array([2.6e10, 8.9e10]), 1.0, lam=0.3, kind="paper")
    assert (info.value.argument, info.value.index) == ("work", (0,))
    ok = fa.makespan_regularizer(cp.Constant(np.array([0.0, 8.3e10])),
                                 np.array([2.6e10, 8.9e10]), 1.0, lam=0.3, kind="paper")
    assert np.isfinite(ok.value)
