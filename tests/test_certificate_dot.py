"""A certificate's primal value is numpy's own (pairwise) sum of ``c * x``, not a BLAS dot
product (issue #28): OpenBLAS runs a dot of 10,000 or more entries on its thread pool, and
waking that idle pool cost a cold Gavel round of 8,192 jobs about 4 ms of CPU and 30 ms of
wall-clock per certificate on a 2-core machine. The sum is also the same on every BLAS build
and thread count."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from fairalloc._sparse import dot
from fairalloc.backends import LinearProgram
from fairalloc.certificates import lp_certificate, milp_certificate


def _spread(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)  # magnitudes 1e-6..1e6: orders of summation differ
    return rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n), rng.random(n)


def test_certificate_primal_value_is_the_pairwise_sum():
    n = 20_000  # above OpenBLAS' threading threshold for a dot product
    c, x = _spread(n, 3)
    lp = LinearProgram.build(c, sp.csr_matrix((1, n)), np.array([-np.inf]), np.array([0.0]),
                             np.zeros(n), np.ones(n))
    pairwise = float(np.add.reduce(c * x))
    cert = lp_certificate(lp, x, np.zeros(1))
    assert cert.primal_value == pairwise  # bit for bit: no BLAS kernel in between
    assert lp_certificate(lp, x, np.zeros(1), maximize=True).primal_value == -pairwise
    lpi = LinearProgram.build(c, sp.csr_matrix((1, n)), np.array([-np.inf]), np.array([0.0]),
                              np.zeros(n), np.ones(n), integrality=np.zeros(n, dtype=bool))
    assert milp_certificate(lpi, x, pairwise).primal_value == pairwise


@given(st.integers(0, 4000), st.integers(0, 2**16))
def test_dot_equals_matmul_to_rounding(n, seed):
    a, b = _spread(n, seed)
    got = dot(a, b)
    assert isinstance(got, float)
    assert abs(got - float(a @ b)) <= 1e-12 * float(np.abs(a) @ np.abs(b))
