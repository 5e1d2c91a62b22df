"""Starting bases of the structured floor solver's restricted masters
(`fairalloc.throughput.structured.floor`): a crash basis at the jobs' best vertices
(`crash_statuses`) for a first master, the previous master's basis carried over
(`warm_master_basis`) for one that only gained jobs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.base import BASIC, LOWER, UPPER
from .common import Vertices
from .rowclass import Groups

__all__ = ["crash_statuses", "warm_master_basis"]


def crash_statuses(vert: Vertices, ex: np.ndarray, cols: np.ndarray, k: int,
                   gr: Groups | None, prices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column and row statuses of a floor master (rows: ``k`` capacity, the time and then
    the floor row of each job in ``ex``, the row-class rows ``gr``; columns ``cols``, then
    the row classes' variables) at its jobs' vertices ``vert`` (`_FloorDemand.vertices` at
    ``prices``): floor on ``e1``: ``e1`` and the time row basic, the floor row at its bound;
    all the time on ``e1``: ``e1`` and the floor row basic, the time row at its bound; a
    split: both columns basic, both rows at their bounds; nothing: both rows basic. Each
    row class's (equality) row is at its bound with its cheapest type's variable at
    ``prices`` basic. The capacity rows are basic, so the basis is block-triangular with a
    nonsingular diagonal block per job and per row class."""
    e1, e2 = vert.e1[ex], vert.e2[ex]
    has1 = e1 >= 0
    split = has1 & (e2 >= 0)
    full = has1 & (e2 == -2)
    floor1 = has1 & (e2 == -1)
    col_st = np.full(cols.size, LOWER, dtype=np.int8)
    col_st[np.searchsorted(cols, e1[has1])] = BASIC
    col_st[np.searchsorted(cols, e2[split])] = BASIC
    time_st = np.where(full | split, UPPER, BASIC)
    floor_st = np.where(floor1 | split, LOWER, BASIC)
    G = 0 if gr is None else gr.D.shape[0]
    group_st = np.full(G, LOWER)
    u_st = np.full(0 if gr is None else gr.ug.size, LOWER, dtype=np.int8)
    if gr is not None:
        # the cheapest variable of each class: lexsort by (class, price per unit of level)
        per_level = prices[gr.ut] / gr.D[gr.ug, gr.ut]
        order = np.lexsort((per_level, gr.ug))
        first = order[np.r_[True, gr.ug[order][1:] != gr.ug[order][:-1]]]
        u_st[first] = BASIC
    row_st = np.r_[np.full(k, BASIC), time_st, floor_st, group_st].astype(np.int8)
    return np.r_[col_st, u_st], row_st


def warm_master_basis(memo: dict[str, Any], shape: tuple, k: int) -> Any:
    """The previous floor master's basis (``memo``) carried to this master (``shape``:
    its own jobs, their columns, row-class rows and variables and the row-class block), or
    ``None``: no previous basis, a different row-class block, or a job or column of the
    previous master missing here (the backend then starts cold)."""
    if "basis" not in memo:
        return None
    ex0, cols0, G0, nu0, gr0, gc0, gv0 = memo["shape"]
    ex, cols, G, nu, g_rows, g_cols, g_vals = shape
    r0, r, nx0, nx = ex0.size, ex.size, cols0.size, cols.size
    # the row-class block must be the same (rows after the floor rows, columns after the
    # explicit ones; the capacity rows come first in both)
    if (G0, nu0) != (G, nu) or not np.array_equal(gv0, g_vals) or not np.array_equal(
            np.where(gr0 < k, gr0, gr0 - 2 * r0), np.where(g_rows < k, g_rows, g_rows - 2 * r)
    ) or not np.array_equal(gc0 - nx0, g_cols - nx):
        return None
    pos = np.searchsorted(ex0, ex)
    hit = (pos < r0) & (ex0[np.minimum(pos, max(r0 - 1, 0))] == ex) if r0 else np.zeros(
        r, dtype=bool)
    jrow = np.where(hit, pos, -1)
    cpos = np.searchsorted(cols0, cols)
    chit = (cpos < nx0) & (cols0[np.minimum(cpos, max(nx0 - 1, 0))] == cols) if nx0 else \
        np.zeros(nx, dtype=bool)
    if int(hit.sum()) != r0 or int(chit.sum()) != nx0:
        return None  # (a job or column of the previous master left it)
    rows = np.r_[np.arange(k), np.where(hit, k + jrow, -1), np.where(hit, k + r0 + jrow, -1),
                 k + 2 * r0 + np.arange(G)]
    cols_from = np.r_[np.where(chit, cpos, -1), nx0 + np.arange(nu)]
    return memo["basis"].carried(cols_from, rows, repair=False)
