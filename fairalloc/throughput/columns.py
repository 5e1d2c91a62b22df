"""Restricted columns for stage LPs on many accelerator types (column generation).

With ``k`` types a job has ``k`` columns, but an optimal vertex of a stage LP gives each job
at most a couple of them (a basis has as many non-zero columns as rows, and there are about
two rows per job). On clusters with many types (``k >= MIN_TYPES``) a stage is solved over
a *restricted* set of columns (per job its best few by objective coefficient per worker, plus
the columns the previous stage's optimum uses, so every kept row stays satisfiable); the
restricted LP's row duals price every other column (``reduced cost = c - A^T y``) and the
columns that price out improving are added, per job the best few, until the whole LP's
certificate (`fairalloc.certificates.lp_certificate`, on the **whole** program, with the
restricted point padded by zeros and the restricted LP's row duals) holds. A row dual vector
that prices every column out non-negative proves the padded point optimal, so nothing about
the answer depends on which columns were tried; when the loop does not certify within
`MAX_ROUNDS` rounds or the restricted LP would hold more than `MAX_SHARE` of the columns,
the stage is solved as the whole LP (``StageSolver.fallbacks``).

Measured (2 cores, HiGHS 1.16, ``benchmarks/families.py`` instance ``many-types-100``, 4,096
jobs, max-min level stage): the whole LP by HiGHS' interior point 15.0 s; restricted columns
7 rounds, at most 35,519 of 409,600 columns, 8.2 s (6.6 s with ``theta`` bounded below, see
``stages._level_at_zero``), the same optimum (certified gap 0). 16,384 jobs x 100 types:
whole LP 194 s, restricted columns 107 s.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ADD_PER_JOB", "FIRST_PER_JOB", "MAX_ROUNDS", "MAX_SHARE", "MIN_COLUMNS",
           "MIN_TYPES", "RC_NOISE", "RESTRICTED_LP", "applies", "first_columns", "priced_columns"]

#: PERFORMANCE knob: accelerator types from which a whole stage LP is first solved over
#: restricted columns: above the 64 types where the structured solvers hand over. Measured
#: (4,096 jobs, max-min + work-conserving, whole LP / restricted): 30 types 4.8 / 7.1 s,
#: 64 types 11.2 / 9.6 s, 100 types 15.0 / 8.5 s
MIN_TYPES = 65
#: PERFORMANCE knob: columns from which the restricted solve pays for its extra rounds (the
#: whole LP of 1,024 jobs x 100 types takes 1.5 s; smaller LPs are solved whole)
MIN_COLUMNS = 50_000
#: PERFORMANCE knob: columns per job in the first restricted LP (its best by objective
#: coefficient per worker); 2 and 2 measured fastest of (2, 2), (4, 1), (4, 4), (3, 3)
FIRST_PER_JOB = 2
#: PERFORMANCE knob: improving columns added per job and round (most improving first)
ADD_PER_JOB = 2
#: PERFORMANCE knob: rounds before the stage is handed to the whole LP (7 at 4,096 x 100)
MAX_ROUNDS = 12
#: PERFORMANCE knob: a restricted LP holding more than this share of the columns costs about
#: what the whole LP does: hand over instead
MAX_SHARE = 0.5
#: ACCURACY: a column counts as improving when its reduced cost is below this fraction of
#: the largest ``|c|`` or ``|A^T y|`` (rounding of the dual prices; the certificate decides)
RC_NOISE = 1e-12
#: the path step of a stage solved over restricted columns (``stats.path``)
RESTRICTED_LP = "restricted-columns"


def applies(k: int, E: int, single_job_columns: bool) -> bool:
    """Whether a whole stage LP over ``E`` columns on ``k`` types is first solved over
    restricted columns: many types, many columns, and one job per column (no job pairs or
    placement columns, whose pricing would need every member).

    Examples
    --------
    >>> applies(100, 409_600, True), applies(30, 122_880, True), applies(100, 409_600, False)
    (True, False, False)
    """
    return single_job_columns and k >= MIN_TYPES and E >= MIN_COLUMNS


def _best_per_job(job: np.ndarray, key: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` entries with the smallest ``key`` within each job (ties: the
    lower index), by one sort over all entries (no loop over jobs)."""
    if key.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((key, job))
    sj = job[order]
    first = np.concatenate(([True], sj[1:] != sj[:-1]))
    starts = np.flatnonzero(first)
    rank = np.arange(sj.size) - np.repeat(starts, np.diff(np.append(starts, sj.size)))
    return order[rank < count]


def first_columns(col_job: np.ndarray, coef: np.ndarray, workers: np.ndarray,
                  anchor: np.ndarray | None, per_job: int | None = None) -> np.ndarray:
    """The first restricted column set (a boolean mask over the ``E`` allocation columns).

    Per job its ``per_job`` (default `FIRST_PER_JOB`) columns with the largest objective
    coefficient per worker ``coef / workers`` (a level stage: the level row's coefficient; a
    linear stage: the objective's), and every column ``anchor`` (the last fixed stage's
    optimum, whose rows the stage keeps) uses, so that the restricted LP is feasible whenever
    the whole one is.

    Examples
    --------
    >>> first_columns(np.array([0, 0, 0, 1, 1]), np.array([1.0, 3.0, 2.0, 5.0, 1.0]),
    ...               np.ones(5), np.array([1.0, 0, 0, 0, 0]), per_job=1).tolist()
    [True, True, False, True, False]
    """
    keep = np.zeros(col_job.size, dtype=bool)
    count = FIRST_PER_JOB if per_job is None else per_job
    keep[_best_per_job(col_job, -(coef / workers), count)] = True
    if anchor is not None:
        keep |= anchor > 0
    return keep


def priced_columns(col_job: np.ndarray, reduced_cost: np.ndarray, active: np.ndarray,
                   tol: float, per_job: int | None = None) -> np.ndarray:
    """Columns to add (a boolean mask): outside ``active``, reduced cost (of the
    minimisation) below ``-tol``, per job the ``per_job`` (default `ADD_PER_JOB`) most
    improving.

    Examples
    --------
    >>> priced_columns(np.array([0, 0, 0, 1]), np.array([-1.0, -3.0, -2.0, 0.5]),
    ...                np.array([False, False, False, False]), 1e-9, per_job=1).tolist()
    [False, True, False, False]
    """
    cand = np.flatnonzero(~active & (reduced_cost < -tol))
    add = np.zeros(active.size, dtype=bool)
    count = ADD_PER_JOB if per_job is None else per_job
    add[cand[_best_per_job(col_job[cand], reduced_cost[cand], count)]] = True
    return add
