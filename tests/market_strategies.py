"""Hypothesis strategies for valid market inputs (no ``assume``: every draw is valid)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

_entries = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False)


@st.composite
def utilities(draw: st.DrawFn, *, n: tuple[int, int] = (1, 6), m: tuple[int, int] = (1, 4),
              rounds: int | None = None, density: float = 0.6) -> np.ndarray:
    """Non-negative utilities where every buyer values something (in some round)."""
    nn = draw(st.integers(*n))
    mm = draw(st.integers(*m))
    shape = (nn, mm) if rounds is None else (nn, mm, rounds)
    vals = draw(arrays(np.float64, shape, elements=_entries))
    keep = draw(arrays(np.bool_, shape, elements=st.booleans()))
    # zero or a realistic value (>= 0.01): HiGHS drops matrix entries below 1e-9
    vals = np.where((keep | (vals > 10 * (1 - density))) & (vals >= 0.01), vals, 0.0)
    flat = vals.reshape(nn, -1)
    # guarantee a positive entry per buyer: one chosen good gets a value in [0.5, 10]
    pick = draw(arrays(np.int64, nn, elements=st.integers(0, flat.shape[1] - 1)))
    boost = draw(arrays(np.float64, nn, elements=st.floats(0.5, 10.0)))
    flat[np.arange(nn), pick] = np.maximum(flat[np.arange(nn), pick], boost)
    return flat.reshape(shape)


@st.composite
def budgets(draw: st.DrawFn, n: int) -> np.ndarray:
    return draw(arrays(np.float64, n, elements=st.floats(0.1, 10.0)))


@st.composite
def supplies(draw: st.DrawFn, shape: tuple[int, ...]) -> np.ndarray:
    return draw(arrays(np.float64, shape, elements=st.floats(0.2, 5.0)))
