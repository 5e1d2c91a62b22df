"""Pair columns by column generation for the level LPs of a sequence (water-filling with pairs).

With space sharing (``pairs=``) almost every column of a level LP is a pair column (Gavel's
packed water-filling at 256 jobs: 22.8k of 23.5k), yet an optimal vertex uses few of them
(a basis has as many columns as rows, about two per job). A level LP of a warm sequence
(water-filling's levels and saturation probes, finish-time fairness' Dinkelbach stages)
with at least ``tuning.pair_columns_min_columns`` pair columns is therefore solved first
over *restricted* columns (`solve_pair_columns`, the stage plan's step ``pair-columns``):
every single-job column, the pair columns the previous level of the sequence ended with (the
first level: per job its few most promising pair columns, `promising_pairs`), and every
column the anchor (the last allocation, which meets the kept floors) uses, so the
restricted LP is feasible whenever the whole one is.

Each round prices **every** column at once from the restricted LP's row duals (``reduced
cost = c - A^T y``: for a pair column on type ``j``, ``-(lambda_a u_a + lambda_b u_b) +
mu_a + mu_b + s_p p_j``, the members' level duals against their time duals and the
capacity dual) and adds, per job, the few most improving pair columns; the restricted LPs
are HiGHS' simplex, each round going on from the last one's basis and each level from the
previous level's. The answer is the whole LP's: the certificate
(`fairalloc.certificates.lp_certificate` through ``StageSolver.run_once``) is computed on
the **whole** level LP with the restricted point padded by zeros and the restricted LP's
row duals, so a pair column that prices in is a dual infeasibility it counts, and nothing
about the answer depends on which columns were tried. Where the loop does not certify
(``tuning.columns_max_rounds`` rounds, more than ``tuning.columns_max_share`` of the
columns, a failed restricted LP, no improving column left), the step declines and the plan
goes on with the whole LP (``exact-lp+warm`` from the last level's basis, then the exact
tail).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._sparse import rmatvec
from ..backends import LinearProgram, LPBasis, get_backend
from ..errors import SolverError
from ..plan import Decline, Strategy
from ..results import Certificate
from .columns import RC_NOISE, _best_per_job

if TYPE_CHECKING:  # (strategies imports this module)
    from .programs import StageResult
    from .strategies import StageContext

__all__ = ["PAIR_COLUMNS", "PAIR_ROUND", "PAIR_STRATEGY", "pair_columns_apply",
           "promising_pairs", "solve_pair_columns", "whole_basis"]

#: path step: a level LP solved over restricted pair columns (``stats.path``)
PAIR_COLUMNS = "pair-columns"
#: path step: one restricted LP of that loop (``+warm``: from a basis)
PAIR_ROUND = "pair-columns-round"
#: the `fairalloc.throughput.stages.StageSolver` column kind of a pair column
_PAIR_KIND = 2


def pair_columns_apply(ctx: StageContext) -> bool:
    """Whether ``ctx``'s stage is solved over restricted pair columns first: a level LP of a
    warm sequence (``solver.warm_levels``) where fairalloc chose HiGHS (a basis carries the
    rounds and the levels), with pairs, no placement columns, and at least
    ``tuning.pair_columns_min_columns`` pair columns."""
    s = ctx.solver
    inst = s.inst
    if not (ctx.level and ctx.chosen and s.warm_levels and s.warm_backend()
            and inst.pairs is not None and not inst.placement):
        return False
    minimum = s.tuning.pair_columns_min_columns
    return bool(minimum > 0 and int(np.count_nonzero(inst.col_kind == _PAIR_KIND)) >= minimum)


def promising_pairs(mem_job: np.ndarray, mem_col: np.ndarray, ratio: np.ndarray,
                    workers: np.ndarray, pair: np.ndarray, per_job: int) -> np.ndarray:
    """The first pair columns (a boolean mask over the columns): per job its ``per_job``
    pair columns with the largest *sharing gain per worker*, ``(r_a + r_b) / workers``
    (``r``: a member's level coefficient in the column over its best single column's), among
    those with ``r_a + r_b > 1`` (sharing beats taking turns). ``mem_job``/``mem_col``: the
    instance's memberships; ``ratio``: each membership's ``r``; ``pair``: the pair columns.

    Examples
    --------
    >>> import numpy as np
    >>> promising_pairs(np.array([0, 1, 0, 1, 0, 1]), np.array([0, 1, 2, 2, 3, 3]),
    ...                 np.array([1.0, 1.0, 0.8, 0.8, 0.4, 0.5]), np.ones(4),
    ...                 np.array([False, False, True, True]), per_job=1).tolist()
    [False, False, True, False]
    """
    gain = np.bincount(mem_col, weights=ratio, minlength=pair.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(pair & (gain > 1.0), gain / workers, -np.inf)
    ent = np.flatnonzero(np.isfinite(score[mem_col]))
    out = np.zeros(pair.size, dtype=bool)
    out[mem_col[ent[_best_per_job(mem_job[ent], -score[mem_col[ent]], per_job)]]] = True
    return out


def _first_active(ctx: StageContext) -> np.ndarray:
    """Single columns, the previous level's columns (else the promising pairs), the anchor's."""
    s = ctx.solver
    inst = s.inst
    E = inst.E
    pair = inst.col_kind == _PAIR_KIND
    active = ~pair
    used = s.columns_used
    if used is not None and used.shape == (E,):
        active |= used
    else:  # each membership's level coefficient (the stage's rows are the jobs')
        coef_rows = np.asarray(
            ctx.stage.C[inst.mem_job, inst.mem_col]).ravel()  # type: ignore[union-attr]
        best = np.zeros(inst.n)
        single = ~pair[inst.mem_col]
        np.maximum.at(best, inst.mem_job[single], coef_rows[single])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(best[inst.mem_job] > 0,
                             coef_rows / np.where(best[inst.mem_job] > 0,
                                                  best[inst.mem_job], 1.0), 0.0)
        active |= promising_pairs(inst.mem_job, inst.mem_col, ratio, inst.col_workers, pair,
                                  s.tuning.columns_first_per_job)
    if s.anchor is not None:
        active |= s.anchor > 0
    return active


def _start_basis(ctx: StageContext, lp: LinearProgram, keep: np.ndarray) -> LPBasis | None:
    """The previous level's basis (whole-LP shape) carried to the restricted columns."""
    s = ctx.solver
    basis = s.basis
    if basis is None or basis.shape != lp.shape or basis.carry is None:
        return None
    return basis.carried(np.flatnonzero(keep), np.arange(lp.shape[0]))


def whole_basis(restricted: LPBasis, keep: np.ndarray) -> LPBasis:
    """The basis ``restricted`` of the LP over the columns ``keep`` (a mask) as a basis of the
    whole LP: every other column nonbasic at its lower bound (`LPBasis.with_columns`). The
    next level's restricted columns (a superset of ``keep``, same rows) are carried from it
    by extending ``restricted`` itself: the same statuses the backend's carry would give,
    without reading the whole LP's column statuses (a Python object each: a third of a level
    at 23.5k columns); any other carry is the backend's.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import HighsBackend, LinearProgram
    >>> lp = LinearProgram.build([-1.0], [[1.0]], row_upper=1.0)
    >>> b = HighsBackend().solve_lp(lp, keep_basis=True).extra["basis"]
    >>> w = whole_basis(b, np.array([True, False, False]))
    >>> w.shape, w.carried(np.array([0, 2]), np.array([0])).shape
    ((1, 3), (1, 2))
    """
    full = restricted.with_columns(keep, np.ones(keep.size, dtype=bool))
    backend_carry = full.carry

    def carry(basis: LPBasis, cols: np.ndarray, rows: np.ndarray,
              repair: bool = True) -> LPBasis | None:
        new = np.zeros(keep.size, dtype=bool)
        new[cols[cols >= 0]] = True
        if (rows.size == basis.shape[0] and np.array_equal(rows, np.arange(rows.size))
                and cols.size == int(new.sum()) and bool(np.all(np.diff(cols) > 0))
                and not bool((keep & ~new).any())):
            return restricted.with_columns(keep, new)
        return backend_carry(basis, cols, rows, repair)  # type: ignore[no-any-return]

    return LPBasis(full.shape, full.raw, full.backend, full.extend, carry)


def solve_pair_columns(ctx: StageContext) -> StageResult:
    """Solve ``ctx``'s level LP over restricted pair columns, adding those its duals price
    in, until the certificate on the whole LP holds (module docstring). The result's basis
    is the whole LP's shape (the restricted basis with every other column at its lower
    bound) and its ``columns`` start the next level; raises `fairalloc.plan.Decline` where
    it does not certify within ``tuning.columns_max_rounds`` rounds and
    ``tuning.columns_max_share`` of the columns."""
    s, lp, stage = ctx.solver, ctx.lp, ctx.stage
    inst, t = s.inst, s.tuning
    E = inst.E
    active = _first_active(ctx)
    A = lp.A.tocsc()
    be = get_backend("highs", need="lp", solver="simplex")
    keep = np.append(active, True)  # theta's column always
    basis = _start_basis(ctx, lp, keep)
    scale_c = float(np.max(np.abs(lp.c), initial=0.0))
    reason = f"not certified within {t.columns_max_rounds} rounds"
    for _ in range(t.columns_max_rounds):
        if active.sum() > t.columns_max_share * E:
            reason = f"more than {t.columns_max_share:.0%} of the columns needed"
            break
        s.step(PAIR_ROUND + ("+warm" if basis is not None else ""))
        try:
            sol, v, cert = s.run_once(lp, stage, ctx.what, be, cols=(keep, A),
                                      keep_basis=True, basis=basis)
        except SolverError as exc:
            reason = f"a restricted LP failed ({exc.status})"
            break
        found = sol.extra.get("basis")
        basis = found if isinstance(found, LPBasis) and found.extend is not None else None
        if cert.ok:
            res = s.result(lp, stage, sol, v, cert)
            res.columns = active
            res.basis = None if basis is None else whole_basis(basis, keep)
            return res
        assert sol.row_duals is not None
        aty = rmatvec(lp.A, sol.row_duals)
        rc = lp.c - aty
        tol = RC_NOISE * max(float(np.max(np.abs(aty), initial=0.0)), scale_c)
        cand = ~active & (rc[:E] < -tol)
        if not cand.any():
            reason = (f"no improving column left, gap {cert.gap:.2e}, residuals "
                      f"{cert.primal_residual:.2e} / {cert.dual_residual:.2e}")
            break
        ent = np.flatnonzero(cand[inst.mem_col])
        pick = ent[_best_per_job(inst.mem_job[ent], rc[inst.mem_col[ent]],
                                 t.columns_add_per_job)]
        new_keep = keep.copy()
        new_keep[inst.mem_col[pick]] = True
        if basis is not None:
            basis = basis.with_columns(keep, new_keep)
        keep = new_keep
        active = keep[:E].copy()
    raise Decline(reason)


def _certificate(ctx: StageContext, res: StageResult) -> Certificate:
    return res.cert  # (computed on the whole level LP by ``StageSolver.run_once``)


#: the stage plan's step (`fairalloc.throughput.strategies`): before the warm whole LP
PAIR_STRATEGY: Strategy[StageContext, StageResult] = Strategy(
    PAIR_COLUMNS, solve_pair_columns, _certificate, pair_columns_apply)
