"""fairalloc._symmetry.exact_classes: exact classes, never merging near-ties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairalloc._symmetry import exact_classes
from fairalloc.errors import InputError


def test_hand_checked_classes_in_order_of_first_appearance():
    rows = np.array([[2.0, 1.0], [1.0, 2.0], [2.0, 1.0], [1.0, 2.0], [3.0, 3.0]])
    cl = exact_classes(rows, np.array([1.0, 1.0, 1.0, 1.0, 1.0]))
    assert cl.representative.tolist() == [0, 1, 4]
    assert cl.inverse.tolist() == [0, 1, 0, 1, 2]
    assert cl.counts.tolist() == [2, 2, 1]
    assert cl.reduces and cl.num_classes == 3 and cl.n == 5
    assert cl.total(np.arange(5.0)).tolist() == [2.0, 4.0, 4.0]
    assert cl.expand(np.array([10, 20, 30])).tolist() == [10, 20, 10, 20, 30]


def test_a_second_array_splits_classes():
    rows = np.ones((4, 2))
    cl = exact_classes(rows, np.array([1.0, 2.0, 1.0, 2.0]))
    assert cl.inverse.tolist() == [0, 1, 0, 1]


def test_near_ties_and_signed_zero():
    assert exact_classes(np.array([1.0, np.nextafter(1.0, 2.0)])).num_classes == 2
    assert exact_classes(np.array([0.0, -0.0])).num_classes == 1


def test_no_repeats_is_the_identity():
    cl = exact_classes(np.random.default_rng(0).random((50, 3)))
    assert not cl.reduces
    assert cl.inverse.tolist() == list(range(50))


def test_none_skipped_and_bad_input():
    assert exact_classes(np.ones(3), None).num_classes == 1
    with pytest.raises(InputError, match="data\\[1\\] has 2 rows"):
        exact_classes(np.ones(3), np.ones(2))
    with pytest.raises(InputError, match="finite"):
        exact_classes(np.array([1.0, np.nan]))
    with pytest.raises(InputError, match="at least one"):
        exact_classes()
    with pytest.raises(InputError, match="1-D or 2-D"):
        exact_classes(np.ones((2, 2, 2)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=40))
def test_classes_are_exactly_the_equal_rows(pairs):
    rows = np.array(pairs, dtype=float)
    cl = exact_classes(rows[:, 0], rows[:, 1])
    # members of a class have equal rows; different classes have different rows
    assert np.array_equal(rows[cl.representative][cl.inverse], rows)
    assert len({tuple(r) for r in rows[cl.representative]}) == cl.num_classes
    assert cl.counts.sum() == len(pairs)
    assert np.all(cl.representative[cl.inverse[cl.representative]] == cl.representative)
    assert np.all(np.diff(cl.representative) > 0)


def test_equal_rows_project_alike_under_any_blas_kernel() -> None:
    """Equal rows must fall into one class whatever BLAS kernel runs: with a BLAS product
    (``rows @ probe``) OpenBLAS' Sandybridge kernel (two threads) gave equal rows different
    projections, so no class was found (the fuzz harness's BLAS variations). Run in a
    subprocess with that kernel."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from fairalloc._symmetry import exact_classes\n"
            "for seed in range(200):\n"
            "    rng = np.random.default_rng(seed); c, k = rng.integers(1, 6), rng.integers(1, 4)\n"
            "    T = rng.lognormal(0, 0.8, (c, k)); T[rng.random((c, k)) < 0.25] = 0.0\n"
            "    pick = rng.integers(c, size=int(rng.integers(2, 40)))\n"
            "    extra = rng.uniform(1e2, 1e4, (c, 3))\n"
            "    cl = exact_classes(T[pick], extra[pick])\n"
            "    assert cl.num_classes == np.unique(pick).size, (seed, cl.num_classes)\n")
    env = dict(os.environ, OPENBLAS_CORETYPE="Sandybridge", OPENBLAS_NUM_THREADS="2")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
