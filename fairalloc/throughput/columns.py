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

from typing import TYPE_CHECKING

import numpy as np

from .._sparse import rmatvec
from ..backends import LinearProgram, LPBasis
from ..errors import SolverError
from ..plan import Decline
from .tuning import DEFAULT_TUNING, Tuning

if TYPE_CHECKING:  # (stages imports this module)
    from ..backends import Backend
    from .programs import LevelStage, LinearStage, StageResult
    from .stages import StageSolver

__all__ = ["RC_NOISE", "RESTRICTED_LP", "RESTRICTED_ROUND", "applies", "first_columns",
           "priced_columns", "sampled_prices", "sampled_program", "solve_restricted"]

# The performance knobs (which stages, how many columns and rounds) are fields of `Tuning`:
# ``columns_min_types``, ``columns_min_columns``, ``priced_min_types``,
# ``priced_max_types``, ``sample_jobs``, ``columns_first_per_job``, ``columns_add_per_job``,
# ``columns_max_rounds``, ``columns_max_share`` (measurements in its docstring).
#: ACCURACY: a column counts as improving when its reduced cost is below this fraction of
#: the largest ``|c|`` or ``|A^T y|`` (rounding of the dual prices; the certificate decides)
RC_NOISE = 1e-12
#: a capacity price below this fraction of the largest ranks as this fraction (free capacity)
PRICE_FLOOR = 1e-12
#: the path step of a stage solved over restricted columns (``stats.path``)
RESTRICTED_LP = "restricted-columns"
#: the path step of one restricted LP of that loop (cold; ``+warm``: from the last basis)
RESTRICTED_ROUND = "restricted-round"
#: the path step of the sampled LP whose capacity prices choose the first columns
SAMPLED_PRICES = "sampled-prices"

#: seed of the job sample (the answer does not depend on it: the whole LP's certificate does)
SAMPLE_SEED = 0


def applies(k: int, E: int, single_job_columns: bool, tuning: Tuning = DEFAULT_TUNING,
            priced: bool = False) -> bool:
    """Whether a whole stage LP over ``E`` columns on ``k`` types is first solved over
    restricted columns: many types (``tuning.columns_min_types``; ``priced_min_types`` to
    ``priced_max_types`` when capacity prices from a sampled LP choose the first columns),
    many columns (``columns_min_columns``), and one job per column (no job pairs or placement
    columns, whose pricing would need every member).

    Examples
    --------
    >>> applies(100, 409_600, True), applies(30, 122_880, True), applies(100, 409_600, False)
    (True, False, False)
    >>> applies(30, 122_880, True, priced=True), applies(100, 409_600, True, priced=True)
    (True, False)
    """
    t = tuning
    if priced:  # (above priced_max_types the sampled prices choose poor first columns)
        return (single_job_columns and t.priced_min_types <= k <= t.priced_max_types
                and E >= t.columns_min_columns)
    return single_job_columns and k >= t.columns_min_types and E >= t.columns_min_columns


def sampled_program(lp: LinearProgram, col_job: np.ndarray, n: int, k: int,
                    sample: int = DEFAULT_TUNING.sample_jobs
                    ) -> tuple[LinearProgram, np.ndarray] | None:
    """A level stage's whole LP restricted to ``sample`` random jobs, capacities scaled by
    the sampled share: its capacity duals estimate the whole LP's capacity prices.

    ``lp``'s rows must be ``n`` time rows, ``k`` capacity rows and ``n`` level rows (a first
    level stage: nothing kept), its columns the ``E`` allocation columns of jobs ``col_job``
    and ``theta`` last. Returns ``(program, capacity rows of program)``, or ``None`` when
    there are too few jobs to sample. The prices only choose first columns: nothing about
    the answer depends on them (the whole LP's certificate decides).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fairalloc.backends import LinearProgram
    >>> n, k = 1024, 1
    >>> A = sp.vstack([sp.hstack([sp.identity(n), sp.csr_matrix((n, 1))]),
    ...                sp.csr_matrix(np.r_[np.ones(n), 0.0][None, :]),
    ...                sp.hstack([sp.identity(n), -np.ones((n, 1))])]).tocsr()
    >>> lp = LinearProgram.build(np.r_[np.zeros(n), -1.0], A,
    ...     np.r_[np.full(n + 1, -np.inf), np.zeros(n)], np.r_[np.ones(n), 8.0, np.full(n, np.inf)],
    ...     0.0, np.inf)
    >>> sub, cap_rows = sampled_program(lp, np.arange(n), n, k)
    >>> sub.shape, cap_rows.tolist(), float(sub.row_upper[cap_rows[0]])
    ((1025, 513), [512], 4.0)
    """
    if n < 2 * sample or lp.A.shape[0] != 2 * n + k:
        return None
    jobs = np.sort(np.random.default_rng(SAMPLE_SEED).choice(n, sample, replace=False))
    cols = np.append(np.flatnonzero(np.isin(col_job, jobs)), lp.A.shape[1] - 1)
    rows = np.concatenate((jobs, n + np.arange(k), n + k + jobs))
    A = lp.A.tocsr()[rows][:, cols]
    up = lp.row_upper[rows].copy()
    up[jobs.size:jobs.size + k] *= jobs.size / n
    lo = lp.row_lower[rows].copy()
    lo[jobs.size:jobs.size + k] *= jobs.size / n
    sub = LinearProgram(c=lp.c[cols], A=A, row_lower=lo, row_upper=up,
                        col_lower=lp.col_lower[cols], col_upper=lp.col_upper[cols],
                        integrality=None, offset=0.0)
    return sub, jobs.size + np.arange(k)


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
                  anchor: np.ndarray | None, per_job: int = DEFAULT_TUNING.columns_first_per_job,
                  price: np.ndarray | None = None) -> np.ndarray:
    """The first restricted column set (a boolean mask over the ``E`` allocation columns).

    Per job its ``per_job`` (``tuning.columns_first_per_job``) columns with the largest objective
    coefficient per worker ``coef / workers`` (a level stage: the level row's coefficient; a
    linear stage: the objective's) -- per unit of priced capacity ``coef / (workers *
    price)`` when each column's capacity ``price`` is given (`sampled_program`; a zero price
    counts as the smallest positive one divided by 10^12) -- and every column ``anchor`` (the
    last fixed stage's optimum, whose rows the stage keeps) uses, so that the restricted LP is
    feasible whenever the whole one is.

    Examples
    --------
    >>> first_columns(np.array([0, 0, 0, 1, 1]), np.array([1.0, 3.0, 2.0, 5.0, 1.0]),
    ...               np.ones(5), np.array([1.0, 0, 0, 0, 0]), per_job=1).tolist()
    [True, True, False, True, False]
    """
    keep = np.zeros(col_job.size, dtype=bool)
    count = per_job
    per = workers
    if price is not None:
        floor = PRICE_FLOOR * float(np.max(price, initial=0.0))
        per = workers * np.maximum(price, floor if floor > 0 else 1.0)
    keep[_best_per_job(col_job, -(coef / per), count)] = True
    if anchor is not None:
        keep |= anchor > 0
    return keep


def priced_columns(col_job: np.ndarray, reduced_cost: np.ndarray, active: np.ndarray,
                   tol: float, per_job: int = DEFAULT_TUNING.columns_add_per_job) -> np.ndarray:
    """Columns to add (a boolean mask): outside ``active``, reduced cost (of the
    minimisation) below ``-tol``, per job the ``per_job`` (``tuning.columns_add_per_job``) most
    improving.

    Examples
    --------
    >>> priced_columns(np.array([0, 0, 0, 1]), np.array([-1.0, -3.0, -2.0, 0.5]),
    ...                np.array([False, False, False, False]), 1e-9, per_job=1).tolist()
    [False, True, False, False]
    """
    cand = np.flatnonzero(~active & (reduced_cost < -tol))
    add = np.zeros(active.size, dtype=bool)
    count = per_job
    add[cand[_best_per_job(col_job[cand], reduced_cost[cand], count)]] = True
    return add


def sampled_prices(solver: StageSolver, lp: LinearProgram) -> np.ndarray | None:
    """Each column's capacity price estimated by the stage LP on a sample of jobs
    (`sampled_program`, solved by the solver's exact backend; path step ``sampled-prices``),
    or ``None`` (too few jobs, or the sampled LP failed: the first columns are then chosen
    without prices)."""
    inst = solver.inst
    out = sampled_program(lp, inst.mem_job[:inst.E], inst.n, inst.k,
                          solver.tuning.sample_jobs)
    if out is None:
        return None
    sub, cap_rows = out
    solver.step(SAMPLED_PRICES)
    try:
        sol = solver.solve_sub(sub, "the sampled LP")
    except SolverError:
        return None
    if sol.row_duals is None:
        return None
    return np.abs(sol.row_duals[cap_rows])[inst.col_type]


def solve_restricted(solver: StageSolver, lp: LinearProgram, stage: LevelStage | LinearStage,
                     coef: np.ndarray, what: str, backend: Backend,
                     price: np.ndarray | None = None) -> StageResult:
    """Solve ``stage``'s whole LP ``lp`` over restricted columns, adding the columns its
    duals price out improving, until the certificate on the whole LP holds
    (`fairalloc.throughput.columns`; the strategy ``restricted-columns``).
    ``price``: each column's estimated capacity price (`sampled_prices`), which chooses
    the first columns; then, where fairalloc chose HiGHS, each round after the first goes
    on from the last round's basis (HiGHS' primal simplex over the added columns: near
    the optimum, few pivots). Without prices every round is a cold solve by ``backend``
    (its interior-point duals price out the columns of every job near the level, where
    a simplex's vertex duals price out one bottleneck job's per round).
    ``coef``: each column's objective coefficient (a level stage: its level row's). Returns
    the certified stage result (its ``columns`` start the next stage), or raises
    `fairalloc.plan.Decline` when it does not certify within the round and size caps
    (``tuning.columns_max_rounds``, ``columns_max_share``): the plan's next strategy runs."""
    inst = solver.inst
    t = solver.tuning
    E = inst.E
    col_job = inst.mem_job[:E]  # one job per column (`applies`)
    active = first_columns(col_job, np.abs(coef), inst.col_workers, solver.anchor,
                           per_job=t.columns_first_per_job, price=price)
    if solver.columns_used is not None:  # the last stage's columns (a Dinkelbach sequence)
        active |= solver.columns_used
    A = lp.A.tocsc()
    reason = f"not certified within {t.columns_max_rounds} rounds"
    warm = price is not None and solver.warm_backend()
    basis: LPBasis | None = None
    last: np.ndarray | None = None
    for _ in range(t.columns_max_rounds):
        if active.sum() > t.columns_max_share * E:
            reason = f"more than {t.columns_max_share:.0%} of the columns needed"
            break
        keep = np.append(active, True)  # theta's column always
        if basis is not None and last is not None:
            basis = basis.with_columns(last, keep)
        solver.step(RESTRICTED_ROUND + ("+warm" if basis is not None else ""))
        try:  # (infeasible too: the whole LP decides, a restricted one proves nothing)
            sol, v, cert = solver.run_once(lp, stage, what,
                                            solver.backend if warm else backend,
                                            cols=(keep, A), keep_basis=warm, basis=basis)
        except SolverError as exc:
            reason = f"a restricted LP failed ({exc.status})"
            break
        found = sol.extra.get("basis") if warm else None
        basis, last = (found, keep) if isinstance(found, LPBasis) else (None, None)
        if cert.ok:
            res = solver.result(lp, stage, sol, v, cert)
            res.columns = active
            return res
        assert sol.row_duals is not None
        aty = rmatvec(lp.A, sol.row_duals)
        rc = lp.c - aty
        tol = RC_NOISE * float(max(np.max(np.abs(aty)), np.max(np.abs(lp.c))))
        add = priced_columns(col_job, rc[:E], active, tol, per_job=t.columns_add_per_job)
        if not add.any():
            if warm:
                # the simplex's duals are only as accurate as its dual feasibility tolerance:
                # solve the same restricted LP once more by ``backend`` (the interior point),
                # whose duals certify where the rounding left the bound loose (16,384 x 30:
                # relative gap 3.2e-6 at the simplex's duals)
                warm, basis, last = False, None, None
                continue
            reason = (f"no improving column left, gap {cert.gap:.2e}, residuals "
                      f"{cert.primal_residual:.2e} / {cert.dual_residual:.2e}")
            break
        active |= add
    raise Decline(reason)
