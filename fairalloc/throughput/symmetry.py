"""Exact symmetry reduction of the effective-throughput programs (issue #15).

Jobs whose data -- everything a policy's program reads per job: throughput row, scale factor,
unconsolidated row and the policy's own per-job arrays (`ThroughputPolicy._per_job`) -- are
equal bit for bit form a *class* (`fairalloc._symmetry.exact_classes`). A program symmetric
under permutations of a class's members has an optimum that is equal within each class
(``proofs/symmetry_reduction.md``), so a policy may be solved over one row per class:

* a class of ``c`` jobs becomes one row with multiplicity ``c``: its capacity coefficient is
  ``c s`` (`ColumnInstance.cap_weight`), its time row and level row are one job's;
* objectives that sum over jobs (work-conserving stage, total throughput) weigh it by ``c``;
* normalisers that depend on the number of jobs (``X^isolated``) stay those of all ``n`` jobs
  (the policy computes them before reducing).

The reduced solution is then *expanded* (every member gets its class's allocation) and
certified against the original program: the duals of per-job row blocks (time, level, kept
level rows) are the class duals divided by ``c`` on every member, those of per-type blocks
(capacity) are unchanged. This module holds that bookkeeping; the solve itself is
`ThroughputPolicy.solve`.

Jobs whose data agree only within a relative ``rel`` (round-off of a profiler; issue #28;
``Tuning.near_tie_share`` of the gap tolerance) form no exact class; `near_classes_of` groups
them (`fairalloc._symmetry.near_classes`) and the plan tries that coarser reduction first
(``near-symmetry:<classes>``). It is not exact: the reduced answer is the optimum of slightly
different data. Its expansion is certified on the ORIGINAL program, whose stages are rebuilt
from the original data by the policy's own stage builder (the call that built the reduced
stage, with per-class arrays given to every member: `StageCalls`); the work-conserving stage
keeps the original rows at the reduced level. A certificate that fails hands over to the
exact classes, then to the job-by-job solve.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from .._sparse import csr_from_triplets
from .._symmetry import Classes, classes_of_labels, exact_classes, near_classes
from ..data import Jobs
from ..errors import CertificateError, SolverError
from ..plan import Decline, Strategy, run_nested
from ..results import Certificate
from ..solvelog import SolveLog
from .instance import ColumnInstance
from .programs import LevelStage, LinearStage, StageResult
from .rows import RowLayout
from .stages import StageSolver, backend_for

__all__ = ["EXACT", "NEAR_MAX_SHARE", "NEAR_STEP", "PER_JOB_BLOCKS",
           "STAGE_BUILDERS", "SYMMETRY_STEP", "ClassMap", "StageCalls", "certify_original",
           "classes_of", "near_classes_of", "reduced_instance", "solve_by_plan",
           "symmetry_plan"]

#: path step prefix: the stages that follow were solved over ``<classes>`` symmetry classes
SYMMETRY_STEP = "symmetry"
#: the hand-over target of a reduction that failed: the program solved job by job
EXACT = "exact"
#: path step prefix: the stages that follow were solved over ``<classes>`` near-identical
#: classes (certified on the original program)
NEAR_STEP = "near-symmetry"
#: PERFORMANCE: try the near classes only when they number at most this share of the jobs and
#: fewer than the exact classes (a merge of few jobs costs a second build and certificate)
NEAR_MAX_SHARE = 0.75
#: the public stage builders of the policies (`MaxMinFairness.level_stage`,
#: `FinishTimeFairness.dinkelbach_stage`, ...): a near reduction records their calls
STAGE_BUILDERS = ("level_stage", "dinkelbach_stage")

A = TypeVar("A")  # a policy's result (an Allocation)


def _own_certificate(ctx: Any, result: Any) -> Certificate:
    return result.certificate


def symmetry_plan(reduced: Callable[[None], A], job_by_job: Callable[[None], A], *,
                  reduces: bool, near: Callable[[None], A] | None = None
                  ) -> tuple[Strategy[None, A], ...]:
    """The plan of a throughput policy's solve: ``near-symmetry`` (over one row per class of
    near-identical jobs; only where ``near`` is given), ``symmetry`` (over one row per exact
    class of jobs; only where ``reduces``), each expanded and certified on the original
    program, then ``exact`` (job by job). None is a step of ``stats.path`` itself: each runs
    its stages' plans, whose steps are the path's (the reduced solves' start with
    ``near-symmetry:<classes>`` or ``symmetry:<classes>``); a failed reduction is a hand-over
    such as ``symmetry->exact: <reason>``. Each result is a
    policy's allocation, certified by its own certificate.

    Parameters
    ----------
    reduced, job_by_job : callable ``(None) -> Allocation``
        The two strategies' ``solve`` (closures over the call: context in, result out).
    reduces : bool
        Whether the jobs form fewer classes than jobs (and the policy may be reduced).
    near : callable ``(None) -> Allocation``, optional
        The solve over near-identical classes (tried first).

    Returns
    -------
    tuple of fairalloc.plan.Strategy

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(symmetry_plan(print, print, reduces=True))
    ('symmetry', 'exact!')
    >>> describe(symmetry_plan(print, print, reduces=False, near=print))
    ('near-symmetry', 'symmetry', 'exact!')
    """
    head = (() if near is None else
            (Strategy(NEAR_STEP, near, _own_certificate, step=False),))
    return (*head,
            Strategy(SYMMETRY_STEP, reduced, _own_certificate, applies=lambda _: reduces,
                     step=False),
            Strategy(EXACT, job_by_job, _own_certificate, exact=True, step=False))


def solve_by_plan(reduced: Callable[[], A | str], job_by_job: Callable[[], A], *,
                  reduces: bool, log: SolveLog, what: str,
                  near: Callable[[], A | str] | None = None) -> A:
    """Run `symmetry_plan` in ``log``: ``near()`` (if given) and ``reduced()`` return the
    certified allocation or why the reduction does not hold for the original program (or
    raise a solver error: the reduced program failed); either hands over to the next, the
    last to ``job_by_job()``, whose own typed error (with its stage plans' verdicts) is raised
    as it is. ``log`` must be the one the job-by-job solve records in, so that its stats show
    the hand-overs."""
    def declining(solve: Callable[[], A | str]) -> Callable[[None], A]:
        def run(_: None) -> A:
            try:
                out = solve()
            except (CertificateError, SolverError) as exc:  # only the reduced program's
                raise Decline(f"the reduced program failed ({exc})") from exc
            if isinstance(out, str):
                raise Decline(out)
            return out
        return run

    return run_nested(symmetry_plan(declining(reduced), lambda _: job_by_job(),
                                    reduces=reduces,
                                    near=None if near is None else declining(near)),
                      None, log, what=what).result


#: row blocks with one row per job (their duals are divided among a class's members)
PER_JOB_BLOCKS = ("time", "level")


def _take(arr: np.ndarray | None, idx: np.ndarray) -> np.ndarray | None:
    return None if arr is None else arr[idx]


def reduced_instance(inst: ColumnInstance, cl: Classes) -> ColumnInstance:
    """The column instance over one representative job per class, with multiplicities."""
    if inst.pairs is not None:
        raise ValueError("job pairs are never reduced by symmetry")  # callers check first
    jobs = inst.jobs
    rep = cl.representative
    sub = Jobs(jobs.throughput[rep], scale_factor=jobs.scale_factor[rep],
               weight=jobs.weight[rep], steps_remaining=_take(jobs.steps_remaining, rep),
               elapsed=jobs.elapsed[rep],
               isolated_elapsed=_take(jobs.isolated_elapsed, rep))
    return ColumnInstance(sub, inst.cluster, None,
                          _take(inst.unconsolidated, rep),
                          inst.cons_cap if inst.placement else None,
                          multiplicity=cl.counts.astype(float))


class ClassMap:
    """How the columns and rows of an instance map onto those of its reduced instance.

    Attributes
    ----------
    classes : Classes
    colmap : ndarray of int, shape (E,)
        The reduced column of every original column (same kind and type, the job's class).
    members : ndarray of float, shape (n,)
        Members of each original job's class (``counts[inverse]``).

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc._symmetry import exact_classes
    >>> jobs = fa.Jobs([[2.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    >>> inst = ColumnInstance(jobs, fa.Cluster({"a": 1, "b": 1}))
    >>> cl = exact_classes(jobs.throughput)
    >>> red = reduced_instance(inst, cl)
    >>> red.n, red.cap_weight.tolist()
    (2, [2.0, 1.0])
    >>> ClassMap(inst, red, cl).expand_x(np.array([0.1, 0.2, 0.3, 0.4])).tolist()
    [0.1, 0.2, 0.3, 0.4, 0.1, 0.2]
    """

    def __init__(self, inst: ColumnInstance, red: ColumnInstance, cl: Classes) -> None:
        self.inst, self.red, self.classes = inst, red, cl
        k, c = inst.k, cl.num_classes
        # single-job columns only (no pairs): column e has the one member mem_job[e]
        own_o = np.empty(inst.E, dtype=np.int64)
        own_o[inst.mem_col] = inst.mem_job
        own_r = np.empty(red.E, dtype=np.int64)
        own_r[red.mem_col] = red.mem_job
        slot = np.full(2 * c * k, -1, dtype=np.int64)  # (kind, class, type) -> reduced column
        slot[(red.col_kind.astype(np.int64) * c + own_r) * k + red.col_type] = np.arange(red.E)
        self.colmap = slot[(inst.col_kind.astype(np.int64) * c + cl.inverse[own_o]) * k
                           + inst.col_type]
        if (self.colmap < 0).any():  # cannot happen: a class's members have equal rows
            raise ValueError("a column has no reduced counterpart")
        self.members = cl.counts[cl.inverse].astype(float)
        #: the original job owning each original column
        self.owner = own_o

    def expand_x(self, xcol: np.ndarray) -> np.ndarray:
        """Original column allocation: every member gets its class's columns."""
        return np.asarray(xcol, dtype=float)[self.colmap]

    def expand_rows(self, B: sp.spmatrix, per_class: bool) -> sp.csr_matrix:
        """Original rows of reduced rows ``B`` (over reduced columns).

        ``per_class``: ``B`` has one row per class, each non-zero only on its own class's
        columns (level rows); every member gets its class's row, with the same values. Else
        ``B`` is a few rows over all columns (a kept linear objective summing over jobs,
        whose coefficient on a class's column is ``c`` times one member's): each original
        column gets its reduced column's coefficient divided by the class size."""
        B = B if isinstance(B, sp.csr_matrix) else sp.csr_matrix(B)
        if per_class:  # one non-zero per column: its column sum is exact
            val = np.bincount(B.indices, weights=B.data, minlength=B.shape[1])
            return csr_from_triplets(self.owner, np.arange(self.inst.E), val[self.colmap],
                                     (self.inst.n, self.inst.E))
        mult = self.red.col_mult
        assert mult is not None  # a reduced instance has multiplicities
        dense = B.toarray()[:, self.colmap] / mult[self.colmap][None, :]
        return sp.csr_matrix(dense)

    def expand_level(self, stage: LevelStage) -> LevelStage:
        """The original level stage of a reduced one (rows repeated over every member)."""
        inv = self.classes.inverse
        return LevelStage(self.expand_rows(stage.C, True), stage.b[inv], stage.h[inv],
                          stage.name, scale=stage.scale)

    def expand_duals(self, duals: np.ndarray, red_layout: RowLayout, layout: RowLayout,
                     kept: list[tuple[int, bool]]) -> np.ndarray:
        """Original row duals from the reduced program's: per-job blocks (time, level and
        per-class kept rows) divided by the class size on every member,
        per-type blocks (capacity) and scalar kept rows unchanged. ``kept``: ``(rows,
        per_class)`` of every kept block of the reduced program, in order."""
        inv = self.classes.inverse
        parts: dict[str, np.ndarray] = {}
        for name, _ in layout.blocks():
            y = red_layout.take(duals, name)
            if name in PER_JOB_BLOCKS:
                parts[name] = y[inv] / self.members
            elif name == "kept":
                out, at = [], 0
                for rows, per_class in kept:
                    part = y[at: at + rows]
                    out.append(part[inv] / self.members if per_class else part)
                    at += rows
                parts[name] = np.concatenate(out) if out else np.zeros(0)
            else:
                parts[name] = y
        return layout.assemble(parts)


def classes_of(key: tuple[np.ndarray, ...], derived: list[np.ndarray]) -> Classes:
    """Exact classes of the jobs' data ``key``; the per-job arrays ``derived`` from it (computed
    element by element) are then checked to be equal within every class as well -- should one
    differ, it joins the key."""
    cl = exact_classes(*key)
    if not cl.reduces:
        return cl
    rep, inv = cl.representative, cl.inverse
    if all(np.array_equal(a, a[rep][inv]) for a in derived):
        return cl
    return exact_classes(*key, *derived)


def near_classes_of(policy: Any, exact: Classes, rel: float) -> Classes | None:
    """Classes of ``policy``'s jobs whose program data (those `classes_of` compares: its
    ``_class_key()`` and per-job arrays ``_per_job``) agree within ``rel``
    (`fairalloc._symmetry.near_classes`, over one representative per ``exact`` class), or
    ``None`` when they are not worth trying: ``rel`` is 0, the policy has no stage builder
    (`STAGE_BUILDERS`: its original stages could not be built again), they are not fewer
    than the ``exact`` classes, or more than `NEAR_MAX_SHARE` of the jobs.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[1.0, 2.0], [1.0 + 1e-12, 2.0], [1.0, 2.0 - 1e-12], [3.0, 1.0]])
    >>> b = fa.MaxMinFairness(jobs, fa.Cluster({"a": 1, "b": 1}))
    >>> near_classes_of(b, exact_classes(jobs.throughput), rel=1e-8).counts
    array([3, 1])
    """
    if not rel > 0 or not any(callable(getattr(policy, b, None)) for b in STAGE_BUILDERS):
        return None
    key = policy._class_key()
    derived = [np.asarray(getattr(policy, name)) for name in policy._per_job]
    rep = exact.representative  # one row per exact class: identical rows are near anyway
    sub = near_classes(*(a[rep] for a in key), *(a[rep] for a in derived), rel=rel)
    if sub.num_classes == exact.num_classes:
        return None
    near = classes_of_labels(sub.inverse[exact.inverse])
    return near if near.num_classes <= NEAR_MAX_SHARE * near.n else None


class StageCalls:
    """The stage-builder calls (`STAGE_BUILDERS`) of a reduced builder, recorded so that the
    stage it ended with can be built again on the original data.

    ``record(red)`` wraps the builders of the reduced copy ``red`` (its own attributes);
    ``original(policy, stage, classes)`` calls the builder that made ``stage`` on ``policy``
    with the same arguments, per-class arrays given to every member (``None``: ``stage`` was
    not built by a recorded call)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, str, tuple[Any, ...], dict[str, Any]]] = []

    @classmethod
    def of(cls, red: Any) -> StageCalls:
        """A record of ``red``'s stage-builder calls from now on (`record`)."""
        calls = cls()
        calls.record(red)
        return calls

    def record(self, red: Any) -> None:
        for name in STAGE_BUILDERS:
            build = getattr(red, name, None)
            if build is None:
                continue

            def recorded(*args: Any, _build: Any = build, _name: str = name,
                         **kw: Any) -> Any:
                stage = _build(*args, **kw)
                self.calls.append((stage, _name, args, kw))
                return stage

            setattr(red, name, recorded)

    def original(self, policy: Any, stage: Any, cl: Classes) -> Any:
        def member(a: Any) -> Any:
            return (a[cl.inverse] if isinstance(a, np.ndarray) and a.ndim >= 1
                    and a.shape[0] == cl.num_classes else a)

        for built, name, args, kw in reversed(self.calls):
            if built is stage:
                return getattr(policy, name)(*map(member, args),
                                             **{k: member(v) for k, v in kw.items()})
        return None


def certify_original(policy: Any, red: Any, cl: Classes, solver: StageSolver, stages: Any,
                     xr: np.ndarray, wres: StageResult | None, spec: Any,
                     tols: tuple[float, float, float], near: StageCalls | None = None
                     ) -> tuple[np.ndarray, list[Certificate]] | str:
    """Expand the reduced builder ``red``'s solution and certify it on ``policy``'s original
    program: the first stage (at the final allocation) and, if it ran, the work-conserving
    stage with the first stage's kept rows. Returns ``(xcol, certificates)`` or, if a
    certificate fails, the reason (the caller then solves job by job).

    ``near``: the classes are near-identical (not exact) and ``near`` recorded ``red``'s stage
    builders: the original first stage is built again from the original data
    (`StageCalls.original`) and the work-conserving stage keeps its rows at the reduced
    level (`StageSolver.fix`), so both certificates are of the original program."""
    res, stage = stages.result, stages.stage
    cmap = ClassMap(policy.inst, red.inst, cl)
    orig = policy._stage_solver(policy, backend_for(spec, policy.inst.E, solver.tuning), spec,
                                tols, solver.tuning)
    if near is None:
        stage_o = policy._original_stage(stage, cmap)
    else:
        stage_o = near.original(policy, stage, cl)
        if not isinstance(stage_o, LevelStage) or not isinstance(stage, LevelStage):
            return "the first stage was not built by a policy's stage builder"
    xcol = cmap.expand_x(xr)
    layout = orig.layout(stage_o)
    y1 = cmap.expand_duals(res.duals, res.rows, layout, [])
    res_o = StageResult(orig.program(stage_o), orig.point(stage_o, cmap.expand_x(
        res.x[: red.inst.E])), y1, res.value, res.cert, res.iterations, layout)
    certs = [policy._certify_final(orig, res_o, stage_o, xcol)]
    if wres is not None:
        if len(solver.fixed) != 1:
            return "kept rows beyond the first stage's"
        B, low = solver.fixed[0]
        per_class = isinstance(stage, LevelStage)
        if near is None:
            orig.fixed = [(cmap.expand_rows(B, per_class),
                           low[cl.inverse] if per_class else low)]
        else:  # the original rows at the reduced level, stored at their own unit scale
            orig.fix(stage_o, res.value)
        wstage = LinearStage(policy._wc_objective(), "work-conserving")
        wy = cmap.expand_duals(wres.duals, wres.rows, orig.layout(wstage),
                               [(low.size, per_class)])
        if near is not None:  # kept rows divided by rho_o instead of rho: duals times the ratio
            kept = orig.layout(wstage).slice("kept")
            wy[kept] *= stage_o.units()[1] / stage.units()[1]
        certs.append(orig.certificate(orig.program(wstage), wstage, orig.point(wstage, xcol),
                                      wy))
    bad = [c for c in certs if not c.ok]
    if bad:
        return (f"the expanded solution's certificate failed (relative gap "
                f"{bad[0].relative_gap:.3g}, residual {bad[0].primal_residual:.3g})")
    return xcol, certs
