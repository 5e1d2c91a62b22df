"""`as_real_array` on the lists a scheduler passes (#28): a flat list of Python floats and ints
is converted straight to float64, and a matrix's few entries equal to 0 or 1 are checked for
bools by their row and column. Both shortcuts must give exactly the answer of the entry-by-entry
rule: every real number accepted (as its float), the first entry that is not one refused by
its index."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fairalloc import InputError
from fairalloc._validation import as_real_array

#: entries a caller may pass: real numbers (accepted) and what is not one (refused)
_GOOD = st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(
    lambda v: v == 0.0 or not math.isfinite(v) or abs(v) >= 2.3e-308),  # (no subnormals)
    st.integers(-(2**70), 2**70), st.sampled_from([0, 1, 0.0, 1.0]))
_BAD = st.sampled_from([True, False, "1", None, 1 + 0j, 10**400, np.bool_(True)])


def _expected(entries: list) -> tuple[int, ...] | np.ndarray:
    """The index of the first entry that is not a real number, else the floats."""
    for i, v in enumerate(entries):
        if isinstance(v, bool | np.bool_ | str | complex) or v is None or (
                isinstance(v, int) and abs(v) > 2**1023):
            return (i,)
    return np.array([float(v) for v in entries])


def _check(value: list, flat: list, shape: tuple[int, ...]) -> None:
    want = _expected(flat)
    try:
        got = as_real_array(value, "x")
    except InputError as exc:
        assert isinstance(want, tuple), (value, str(exc))
        assert exc.argument == "x"
        assert exc.index == np.unravel_index(want[0], shape), (exc.index, want)
        return
    assert not isinstance(want, tuple), (value, got)
    assert got.dtype == np.float64 and got.shape == shape
    np.testing.assert_array_equal(got.ravel(), want)  # (NaN equal to NaN)


@given(st.lists(_GOOD, max_size=40), st.lists(st.tuples(st.integers(0, 40), _BAD), max_size=2))
def test_a_flat_list_is_converted_or_refused_as_entry_by_entry(good, bad):
    entries = list(good)
    for at, v in bad:
        entries.insert(min(at, len(entries)), v)
    _check(entries, entries, (len(entries),))


@given(st.integers(1, 4), st.integers(1, 30), st.data())
def test_a_matrix_with_few_zeros_and_ones_hides_no_bool(rows, cols, data):
    # mostly other values, so the few candidates (0 or 1) are gathered by row and column
    value = [[data.draw(st.sampled_from([2.5, 3.0, 7, 0.0, 1])) if data.draw(
        st.booleans()) else 5.0 for _ in range(cols)] for _ in range(rows)]
    if data.draw(st.booleans()):
        i, j = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1))
        value[i][j] = data.draw(st.sampled_from([True, False, np.bool_(False)]))
    _check(value, [v for row in value for v in row], (rows, cols))
