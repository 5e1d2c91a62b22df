"""Water-filling over symmetry classes of interchangeable jobs (issue #28, "no cliffs").

Jobs with the same data (throughput row, scale factor, unconsolidated row), the same weight and
the same entity -- and, in a FIFO entity, never two jobs (their arrival ranks differ) -- are
interchangeable in every level of water-filling: the leximin optimum is equal within each
such class (``proofs/symmetry_reduction.md``, "Water-filling"). `solve_water_reduced` runs
water-filling's own plan on one row per class (multiplicity ``c``: `reduced_instance`; the
entity's weight share counts every member: `fairalloc.WaterFilling.multiplicity`), expands
the allocation (every member gets its class's columns) and certifies it on the ORIGINAL
program, as the job-by-job solve certifies its own:

* the first level (the max-min level) by its certificate on the original level LP, with the
  reduced duals expanded (`ClassMap.expand_duals`: per-job blocks divided among the members);
* Pareto-maximality by the end check (`water_robust.end_check`) at the levels the expanded
  allocation reaches: standing proofs of the reduced levels expanded to every member (exact
  classes: a bound on a class's average rise is ``c`` times one on a member's) and a bottleneck
  LP over the jobs no proof covers.

Near-identical jobs (data within ``Tuning.near_tie_share * gap_tol``, `near_classes`) form
coarser classes tried first (``near-symmetry:<classes>``); their reduced answer is the optimum
of slightly different data: the first level's certificate is computed on the original data,
and the reduced level proofs are reused with their room widened by how far each job's row is
from its class's (`expand_proofs`); each job they leave is proven by a Lagrangian proof on the
original data at the reduced levels' capacity prices (`price_proof`, O(nnz)), and the end
check's LP covers only the jobs left after that. Any failure hands over
(`symmetry.solve_by_plan`): near classes, then exact classes, then job by job.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._symmetry import Classes, classes_of_labels, exact_classes, near_classes
from ..results import Certificate, SolveStats
from ..solvelog import SolveLog, SolveStatus
from .programs import LevelStage
from .stages import capacity_prices
from .symmetry import (
    NEAR_MAX_SHARE,
    NEAR_STEP,
    SYMMETRY_STEP,
    ClassMap,
    reduced_instance,
)
from .water_path import Proof
from .water_robust import (
    WaterParams,
    claimed_rise,
    end_check,
    level_prices,
    price_proof,
)

__all__ = ["WaterParams", "expand_proofs", "price_proof", "reduced_water",
           "solve_water_reduced", "water_allocation",
           "water_classes", "water_near_classes"]


def _reducible(wf: Any) -> bool:
    inst = wf.inst
    return (inst.pairs is None and inst.n > 1 and not wf.composed
            and wf._extra_rows() is None)


def _categorical(wf: Any) -> np.ndarray:
    """Per job: its entity and, in a FIFO entity, its arrival rank (compared exactly)."""
    fifo = wf.entity_fifo[wf.entity]
    return np.stack([wf.entity, np.where(fifo, wf.rank, -1)], axis=1).astype(float)


def water_classes(wf: Any) -> Classes | None:
    """Exact classes of interchangeable jobs of the water-filling builder ``wf`` (``None``:
    the program is not reduced: job pairs, added rows, a single job).

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [3.0, 1.0]], weight=[1, 1, 2, 1])
    >>> water_classes(fa.WaterFilling(jobs, fa.Cluster({"a": 1, "b": 1}))).counts
    array([2, 1, 1])
    """
    if not _reducible(wf):
        return None
    return exact_classes(*wf._class_key(), wf.jobs.weight, _categorical(wf))


def water_near_classes(wf: Any, exact: Classes, rel: float) -> Classes | None:
    """Classes of jobs whose data and weight agree within ``rel`` (same entity; never two jobs
    of a FIFO entity), over one representative per ``exact`` class; ``None`` when ``rel`` is 0,
    they are not fewer than the exact classes or more than `NEAR_MAX_SHARE` of the jobs."""
    if not rel > 0:
        return None
    rep = exact.representative
    sub = near_classes(*(a[rep] for a in wf._class_key()), wf.jobs.weight[rep], rel=rel)
    cat = exact_classes(_categorical(wf)[rep])
    both = classes_of_labels(sub.inverse.astype(np.int64) * cat.num_classes + cat.inverse)
    if both.num_classes >= exact.num_classes:
        return None
    near = classes_of_labels(both.inverse[exact.inverse])
    return near if near.num_classes <= NEAR_MAX_SHARE * near.n else None


def reduced_water(wf: Any, cl: Classes) -> Any:
    """A copy of the builder over one representative job per class, with multiplicities
    (normalisers, best levels and entity weights as computed for all jobs)."""
    red = copy.copy(wf)
    red.inst = reduced_instance(wf.inst, cl)
    red.jobs, red._cvx = red.inst.jobs, None
    rep = cl.representative
    red.entity = wf.entity[rep]
    red.rank = np.argsort(np.argsort(wf.rank[rep], kind="stable"), kind="stable")
    red.unorm = wf.unorm[rep]
    red._max_level = wf._max_level[rep]
    red.multiplicity = cl.counts.astype(float)
    return red


def _row_distance(U: sp.csr_matrix, U_r: sp.csr_matrix, cmap: ClassMap) -> np.ndarray:
    """Per job ``m``, ``d_m = max_e |U_me - U_r[class, colmap e]|`` over its columns: its level
    differs from its class row's at the same columns by at most ``d_m`` at any allocation (its
    columns sum to at most 1). 0 for exact classes (one non-zero per single-job column)."""
    uo = np.asarray(U.sum(axis=0)).ravel()
    ur = np.asarray(U_r.sum(axis=0)).ravel()[cmap.colmap]
    d = np.zeros(U.shape[0])
    np.maximum.at(d, cmap.owner, np.abs(uo - ur))
    return d


def expand_proofs(proofs: list[Proof], cl: Classes, members: np.ndarray, d: np.ndarray,
                  exact: bool) -> list[Proof]:
    """The reduced run's standing proofs as proofs about the original jobs.

    An original allocation ``y``, averaged over each class's members, is one of the reduced
    program (same capacity use: equal scale factors), and a level is linear in the allocation:
    so a reduced level proof ``sum_c lam_c (u_c - f_c) <= room`` gives ``sum_m (lam_c / c)
    (u_m(y) - f_m) <= room + sum_m (lam_c / c) d_m`` (`_row_distance`). A bottleneck LP's proof
    holds only for allocations meeting the reduced floors: kept for ``exact`` classes alone
    (its capped rises are concave, so the members' average is bounded by the class's)."""
    inv = cl.inverse
    out = []
    for p in proofs:
        if p.coef is not None and not exact:
            continue
        lam = p.lam[inv] / members
        out.append(Proof(p.floors[inv], lam, p.room + float(lam @ d),
                         None if p.coef is None else p.coef[inv] / members,
                         None if p.caps is None else p.caps[inv], p.prices))
    return out


def solve_water_reduced(wf: Any, cl: Classes, params: WaterParams, t0: float, *,
                        near: bool = False, prior: SolveLog | None = None) -> Any:
    """Water-filling over the classes ``cl``, expanded and certified on ``wf``'s original
    program (module docstring). Returns the allocation, or why the reduction does not hold
    (the symmetry plan then hands over)."""
    red = reduced_water(wf, cl)
    log = SolveLog()
    if prior is not None:
        log.replay((), prior.hand_overs)
    log.step(f"{NEAR_STEP if near else SYMMETRY_STEP}:{cl.num_classes}")
    found = red.run_water(params, log)
    run = found.result
    if run.unproven is not None:
        return f"the reduced water-filling is not proven Pareto-maximal ({run.unproven})"
    inst = wf.inst
    cmap = ClassMap(inst, red.inst, cl)
    xcol = cmap.expand_x(run.xcol)
    solver = params.stage_solver(inst, params.backend(inst.E), log)
    U = sp.csr_matrix(sp.diags(wf.unorm) @ inst.Tm)  # (as `WaterFilling.run_water`)
    U_r = sp.csr_matrix(sp.diags(red.unorm) @ red.inst.Tm)
    # the first level on the original program, at the final allocation
    stage_r, res_r = run.first
    stage = LevelStage(U, wf.job_weights(np.zeros(inst.n, dtype=bool)),
                       stage_r.h[cl.inverse], stage_r.name)
    duals = cmap.expand_duals(res_r.duals, res_r.rows, solver.layout(stage), [])
    cert = solver.certificate(solver.program(stage), stage, solver.point(stage, xcol), duals)
    if not cert.ok:
        return (f"the expanded first level's certificate failed (relative gap "
                f"{cert.relative_gap:.3g}, residual {cert.primal_residual:.3g})")
    # Pareto-maximality at the levels the expanded allocation reaches
    sf = wf.jobs.scale_factor
    proofs = (expand_proofs(run.proofs, cl, cmap.members, _row_distance(U, U_r, cmap), not near)
              if np.array_equal(sf, sf[cl.representative][cl.inverse]) else [])
    ell = U @ xcol
    thr = claimed_rise(ell, wf._max_level, params.btol, params.gap_tol)
    # jobs no expanded proof covers: Lagrangian proofs on the original data at the reduced
    # levels' capacity prices (`price_proof`) before the end check's LP over what is left
    chk = end_check(inst, solver, U, xcol, thr, wf._max_level, proofs, btol=params.btol,
                    prices=level_prices(run.first, run.proofs))
    if not chk.ok:
        return (f"{int((~chk.proven).sum())} jobs of the expanded allocation are not proven "
                f"bottlenecked on the original program")
    # one certificate per LP solved: the first level's on the original program, the reduced
    # run's later LPs (levels, probes, bottleneck LPs) and the end check's on the original
    return water_allocation(wf, xcol, capacity_prices(res_r), cert,
                            (cert, *run.certs[1:], *chk.certs), log, params, t0, run.levels,
                            chk.levels.copy(), None, cl.num_classes)


def water_allocation(wf: Any, xcol: np.ndarray, prices: np.ndarray, cert: Certificate,
                     certs: tuple[Certificate, ...], log: SolveLog, params: WaterParams,
                     t0: float, levels: int, floors: np.ndarray, unproven: str | None,
                     classes: int | None = None) -> Any:
    """The allocation of the water-filling builder ``wf`` (its stats from ``log``;
    ``unproven``: the end check's verdict where it did not prove the levels, status
    ``suboptimal``)."""
    stats = SolveStats.from_log(log, method="highs" if params.method == "highs" else "fast",
                                seconds=time.perf_counter() - t0, classes=classes)
    out = wf._result(xcol, prices, cert.primal_value, cert, certs, stats)
    floors.flags.writeable = False
    status = SolveStatus.OPTIMAL if unproven is None else SolveStatus.SUBOPTIMAL
    return dataclasses.replace(out, levels=levels, level_floors=floors, status=status)
