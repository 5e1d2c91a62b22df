"""The machinery both incremental rounds share (`fairalloc.rounds._kept_round`).

Its ``O(rows k)`` certificate parts (`lagrangian`, `kept_residual`) must be
`fairalloc.certificates.lp_certificate` of the original program, which they never build: here
the program is built (every member of a class a job of its own) and certified, and both must
agree up to the rounding of their sums.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fairalloc.backends import LinearProgram
from fairalloc.certificates import lp_certificate
from fairalloc.rounds._kept_round import kept_residual, lagrangian, residual

EPS = np.finfo(float).eps


def _program(Ta, s, cap, g, low, members):
    """The original program, one job per member: columns ``x_jt >= 0`` (upper 0 where job
    ``j`` may not run), ``min -g . x`` s.t. time rows ``<= 1``, capacity rows ``<= cap`` and
    level rows ``Ta_j . x_j >= low_j``."""
    rep = np.repeat(np.arange(members.size), members)
    Ta, s, g, low = Ta[rep], s[rep], g[rep], low[rep]
    n, k = Ta.shape
    eye = sp.eye(n, format="csr")
    A = sp.vstack([sp.kron(eye, np.ones((1, k))),            # time rows
                   sp.kron(s[None, :], sp.eye(k)),           # capacity rows
                   sp.kron(eye, np.ones((1, k))).multiply(Ta.ravel()[None, :])],  # level rows
                  format="csr")
    lp = LinearProgram.build(-g.ravel(), A,
                             row_lower=np.r_[np.full(n + k, -np.inf), low],
                             row_upper=np.r_[np.ones(n), cap, np.full(n, np.inf)],
                             col_lower=0.0, col_upper=np.where(Ta > 0, np.inf, 0.0).ravel())
    return lp, rep


@st.composite
def stages(draw):
    """Classes of jobs with rates (some not allowed), gangs, members, an allocation (busy
    up to 1.2: some rows violated) and duals of either sign (the certificate projects them)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    m, k = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    Ta = np.where(rng.random((m, k)) < 0.7, rng.uniform(0.5, 10.0, (m, k)), 0.0)
    Ta[:, 0] = np.where(Ta.any(axis=1), Ta[:, 0], 1.0)
    s = rng.integers(1, 3, m).astype(float)
    members = rng.integers(1, 4, m)
    x = np.where(Ta > 0, rng.random((m, k)), 0.0)
    x *= rng.uniform(0.0, 1.2, m)[:, None] / np.maximum(x.sum(axis=1), 1e-300)[:, None]
    cap = rng.integers(1, 8, k).astype(float)
    y = tuple(rng.normal(size=size) for size in (k, m, m))
    low = rng.uniform(0.0, 5.0, m)
    return Ta, s, members, x, cap, y, low, bool(draw(st.booleans()))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(stages())
def test_the_shared_certificate_parts_are_lp_certificate_of_the_built_program(stage):
    Ta, s, members, x, cap, y, low, single = stage
    if single:
        members = np.ones_like(members)
    g = Ta / np.maximum(Ta.sum(axis=1), 1.0)[:, None]
    # the duals projected onto the minimisation's signs (as `row_duals` does)
    duals = (np.minimum(y[0], 0.0), np.minimum(y[1], 0.0), np.maximum(y[2], 0.0))
    part = lagrangian(Ta, s, cap, duals, g=g, members=None if single else members)
    rows = float(part.rows) + float(members @ (duals[2] * low))
    lp, rep = _program(Ta, s, cap, g, low, members)
    cert = lp_certificate(lp, x[rep].ravel(),
                          np.r_[y[1][rep], y[0], y[2][rep]])
    # the same sums in another order (a sum of N terms is within N eps of their magnitudes)
    terms = (np.abs(members @ duals[1]) + np.abs(duals[0]) @ cap
             + members @ (duals[2] * low))
    assert abs(rows - cert.dual_bound) <= 4 * lp.A.shape[0] * EPS * max(terms, 1.0)
    per_entry = 4 * (Ta.shape[1] + 4) * EPS  # a column's reduced cost, a row's activity
    assert np.isclose(part.columns / np.max(np.abs(g)), cert.dual_residual, rtol=per_entry,
                      atol=0.0)
    tp = (Ta * x).sum(axis=1)
    res = residual(s, cap, x, None if single else members)
    assert np.isclose(max(res, kept_residual(low, tp)), cert.primal_residual,
                      rtol=per_entry, atol=0.0)
