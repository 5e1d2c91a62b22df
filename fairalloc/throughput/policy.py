"""The effective-throughput allocation, its builder base class and shared helpers.

An allocation ``X`` (jobs x accelerator types) gives the fraction of wall-clock time each job
spends on each type (Gavel §3.1). `fairalloc.ThroughputPolicy` builds
a policy's stage LPs on the column form of the instance (`fairalloc.throughput.instance`), solves
them with `StageSolver` (or the structured solvers of
`fairalloc.throughput.structured`), adds the work-conserving stage, certifies the result
and returns an `fairalloc.Allocation`; it also exposes the program as cvxpy objects
for composition. The policies themselves are in `max_min`,
`duration`, `efficiency` and
`ordering`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._compose import Composable
from .._display import Table, labelled, price_table
from .._sparse import matvec, rmatvec
from .._symmetry import Classes
from .._validation import as_array, as_bool, as_option, as_tolerance
from ..data import Cluster, JobPairs, Jobs
from ..errors import InputError
from ..results import Certificate, Result, SolveStats, Status, readonly, require_pandas
from ..solvelog import SolveLog
from ..tolerances import FEAS_TOL, GAP_TOL
from .composed import solve_composed
from .instance import TINY, ColumnInstance
from .programs import LevelStage, LinearStage, StageResult
from .stages import ROUND_BASES, StageSolver, backend_for, capacity_prices
from .symmetry import (
    NEAR_STEP,
    SYMMETRY_STEP,
    ClassMap,
    StageCalls,
    certify_original,
    classes_of,
    near_classes_of,
    reduced_instance,
    solve_by_plan,
)
from .tuning import Tuning, as_tuning
from .wc_stage import lp_work_conserving

__all__ = [
    "STAGE_TOL",
    "THROUGHPUT_METHODS",
    "TINY",
    "Allocation",
    "PolicyStages",
    "ThroughputPolicy",
    "equal_split",
    "isolated_split",
]

#: the ``method=`` values of `fairalloc.throughput.ThroughputPolicy.solve`
THROUGHPUT_METHODS = ("auto", "highs", "fast", "cvxpy")
#: default ``stage_tol``: relative slack with which a stage's optimum is kept in later stages
#: (ACCURACY; at most gap_tol / 10 is used)
STAGE_TOL = 1e-9
#: ACCURACY: fraction of gap_tol a kept stage may lose (so the first stage stays certified)
STAGE_SHARE_OF_GAP = 0.1


# --------------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Allocation(Result):
    """An effective-throughput allocation (Gavel §3.1) with prices and certificate.

    Parameters
    ----------
    allocation : ndarray, shape (n, k)
        ``allocation[m, j]``: fraction of time job ``m`` runs on type ``j`` (alone or in a
        pair, in any placement); rows are ``job_ids``, columns ``types``. The name every
        result uses.
    prices : ndarray, shape (k,)
        Non-negative capacity prices: multipliers of the capacity rows of the policy's
        (first-stage, maximisation) LP, ``d OPT / d workers[j]``; zero on unsaturated types.
    effective_throughput : ndarray, shape (n,)
        ``throughput(m, X)`` (steps/s).
    metric : ndarray, shape (n,)
        The per-job quantity the policy's objective is taken over: the weighted normalised
        throughput for max-min fairness, ``rho`` for finish-time fairness, the duration
        ``steps / throughput`` for makespan and shortest job first, the normalised throughput
        otherwise.
    objective : float
        The policy objective (see each policy); ``certificate`` certifies it.
    status : Status
        ``OPTIMAL`` only when ``certificate`` passed (`fairalloc.Result`).
    stats : SolveStats
        How it was computed (``stats.path``: the steps that ran).
    certificate : Certificate
        The certificate of the policy objective.
    policy : str
        The policy's name (``"max_min_fairness"``, ...).
    job_ids, types : tuple
        Row and column labels.
    pair_x : ndarray of shape (P, k) or None
        Time fraction of each job pair on each type (space sharing).
    consolidated_x : ndarray of shape (n, k) or None
        Part of ``x`` spent in consolidated placement (placement sensitivity).
    utilization : ndarray, shape (k,)
        Fraction of each type's workers in use.
    stage_certificates : tuple of Certificate
        The certificate of every stage solved (first stage first).
    levels : int
        Water-filling levels (1 for the other policies).
    level_floors : ndarray of shape (n,) or None
        Water-filling: the level ``u_m`` at which each job was frozen.

    Attributes
    ----------
    x : ndarray, shape (n, k)
        Alias of ``allocation`` (Gavel's name ``X``): a read-only property returning the same
        array, kept for existing code.

    Examples
    --------
    >>> import fairalloc as fa
    >>> r = fa.max_min_fairness(fa.Jobs([[40.0, 10.0], [12.0, 4.0]]),
    ...                         fa.Cluster({"v100": 1, "k80": 1}))
    >>> r.policy, r.job_ids, r.types, r.x is r.allocation, r.status.value
    ('max_min_fairness', (0, 1), ('v100', 'k80'), True, 'optimal')
    >>> r.allocation.round(6).tolist(), r.prices.round(6).tolist()
    ([[0.5, 0.5], [0.5, 0.5]], [0.545455, 0.0])
    """

    allocation: np.ndarray
    prices: np.ndarray
    effective_throughput: np.ndarray
    metric: np.ndarray
    policy: str
    job_ids: tuple[Hashable, ...]
    types: tuple[str, ...]
    pair_x: np.ndarray | None
    consolidated_x: np.ndarray | None
    utilization: np.ndarray
    stage_certificates: tuple[Certificate, ...]
    levels: int = 1
    level_floors: np.ndarray | None = None

    def __post_init__(self) -> None:
        # job ids and type names are hashable labels, never arrays: skip them when the
        # array fields are made read-only (walking thousands of labels costs more than a solve)
        ids, types = self.job_ids, self.types
        object.__setattr__(self, "job_ids", ())
        object.__setattr__(self, "types", ())
        try:
            super().__post_init__()
        finally:
            object.__setattr__(self, "job_ids", ids)
            object.__setattr__(self, "types", types)

    @property
    def x(self) -> np.ndarray:
        """Alias of ``allocation`` (Gavel's ``X``; the same read-only array, not a copy)."""
        return self.allocation

    def _facts(self) -> list[tuple[str, str]]:
        n, k = self.x.shape
        return [("jobs", str(n)), ("types", str(k)), ("policy", self.policy),
                *super()._facts()]

    def _tables(self) -> list[Table]:
        return [labelled("allocation (fraction of time on each type)", "job", self.job_ids,
                         self.types, self.x,
                         extra=[("effective_throughput", self.effective_throughput)]),
                price_table(self.prices, self.types)]

    def to_frame(self) -> Any:
        """One row per job (index: job ids): ``x[type]``, effective throughput and metric."""
        pd = require_pandas()
        df = pd.DataFrame(self.x, index=pd.Index(list(self.job_ids), name="job"),
                          columns=[f"x[{t}]" for t in self.types])
        df["effective_throughput"] = self.effective_throughput
        df["metric"] = self.metric
        return df


@dataclass(frozen=True)
class PolicyStages:
    """What a policy's own stages return to
    `fairalloc.throughput.ThroughputPolicy.solve` (no builder state).

    Attributes
    ----------
    stage : LevelStage or LinearStage
        The stage whose optimum the work-conserving stage keeps and whose certificate is the
        result's ``certificate``.
    result : StageResult
        Its solution (allocation, duals, certificate).
    objective : float
        The policy objective at ``result``.
    before : tuple of Certificate
        Certificates of stages solved before ``stage`` (FIFO's per-job stages), listed first in
        ``stage_certificates``.
    after_first : tuple of Certificate
        Certificates of the policy's later stages (shortest job first's ordering stage),
        listed right after ``stage``'s.
    context : object
        Policy data the final objective needs (FIFO: the normalised-throughput rows).
    """

    stage: LevelStage | LinearStage
    result: StageResult
    objective: float
    before: tuple[Certificate, ...] = ()
    after_first: tuple[Certificate, ...] = ()
    context: Any = None


# --------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------
class ThroughputPolicy(Composable):
    """Base class of the effective-throughput policy builders (Gavel §3.1, §4).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    pairs : fairalloc.JobPairs, optional
        Job pairs that may share a worker, with their pair throughputs (space sharing, §3.1).
    unconsolidated_throughput : array_like, shape (n, k), optional
        Throughput of each job when its workers are on different servers (placement
        sensitivity, §3.1); ``jobs.throughput`` is then the consolidated throughput. Each
        (job, type) gets a consolidated and an unconsolidated column sharing the capacity row.
    consolidated_capacity : array_like, shape (k,), optional
        Workers of each type that can host consolidated gangs (default: all of them).

    Attributes (cvxpy, built on first use)
    --------------------------------------
    x : cvxpy Expression (n, k)
        Time fractions (sums columns of pairs and placements).
    x_columns : cvxpy Variable (E,)
        One entry per allocation column (see `column_labels`).
    effective_throughput : cvxpy Expression (n,)
    capacity_constraint : cvxpy Constraint
        ``sum_m scale_factor_m x[m, j] <= workers[j]``; its duals are the prices.
    time_constraint : cvxpy Constraint
        ``sum_j x[m, j] <= 1``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> b = fa.MaxMinFairness(fa.Jobs([[40.0, 10.0], [12.0, 4.0]]),
    ...                       fa.Cluster({"v100": 1, "k80": 1}))
    >>> isinstance(b, ThroughputPolicy), b.name, b.solve().certificate.ok
    (True, 'max_min_fairness', True)
    """

    name = "policy"
    _work_conserving_default = True
    #: whether the policy's program is symmetric under permutations of jobs with equal data
    #: (False: arrival or duration ranks make every job distinct -- FIFO, shortest job first)
    _symmetric = True
    #: names of the builder's per-job arrays (first axis: jobs) that its program reads; the
    #: reduced builder takes one row per class of each (they must be equal within a class)
    _per_job: tuple[str, ...] = ()
    #: the `Jobs` fields beyond throughput and scale factor the program reads (class key)
    _job_fields: tuple[str, ...] = ()

    def __init__(self, jobs: Jobs, cluster: Cluster, *, pairs: JobPairs | None = None,
                 unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        self.inst = ColumnInstance(jobs, cluster, pairs, unconsolidated_throughput,
                                   consolidated_capacity)
        self.jobs, self.cluster = jobs, cluster
        self._init_composition()
        self._cvx: dict[str, Any] | None = None

    # --- policy definition (subclasses) -----------------------------------------------------
    def _extra_rows(self) -> tuple[sp.csr_matrix, np.ndarray] | None:
        """Rows ``B x >= lower`` every stage keeps (e.g. SLOs)."""
        return None

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        """Solve the policy's own stages (``method``: ``"fast"`` or ``"highs"``)."""
        raise NotImplementedError

    def _structured_worth(self, solver: StageSolver) -> bool:
        """Whether the structured solvers pay on this instance (`Tuning.structured_min_jobs`;
        policies with a warm start may say more)."""
        return solver.structured_worth()

    def _check_method(self, method: str) -> None:
        """Raise `fairalloc.InputError` if the policy cannot be solved by ``method``
        (as the caller passed it) in its current state (composed or not)."""

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return tp / self.inst.equal_tp

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        """(maximised cvxpy expression, extra constraints) of the policy."""
        raise NotImplementedError

    # --- cvxpy composition ------------------------------------------------------------------
    def _build_cvxpy(self) -> dict[str, Any]:
        """The builder's cvxpy model, built on first use and kept: composition
        (`fairalloc.throughput.ThroughputPolicy.add_constraint`, the properties)
        refers to its variables."""
        if self._cvx is None:
            self._cvx = self._new_cvxpy_model()
        return self._cvx

    def _new_cvxpy_model(self) -> dict[str, Any]:
        """A fresh cvxpy model of the policy (variables, constraints, objective)."""
        import cvxpy as cp

        inst = self.inst
        xc = cp.Variable(inst.E, nonneg=True, name="x_columns")
        sel = np.isin(inst.col_kind[inst.mem_col], (0, 1, 2))
        S = sp.csr_matrix((np.ones(int(sel.sum())),
                           (inst.mem_job[sel] * inst.k + inst.col_type[inst.mem_col[sel]],
                            inst.mem_col[sel])), shape=(inst.n * inst.k, inst.E))
        x = cp.reshape(S @ xc, (inst.n, inst.k), order="C")
        tp = inst.Tm @ xc
        cvx: dict[str, Any] = {"xc": xc, "x": x, "tp": tp}
        cvx["capacity"] = inst.W @ xc <= inst.cap
        cvx["time"] = inst.M @ xc <= 1
        base = [cvx["capacity"], cvx["time"], xc <= 1]
        if inst.placement:
            cvx["consolidated"] = inst.Wc @ xc <= inst.cons_cap
            base.append(cvx["consolidated"])
        extra = self._extra_rows()
        if extra is not None:
            base.append(extra[0] @ xc >= extra[1])
        cvx["base"] = base
        objective, cons = self._cvx_objective(cvx)
        cvx["objective"] = objective
        cvx["policy"] = cons
        return cvx

    @property
    def x(self) -> Any:
        """cvxpy expression ``(n, k)`` of time fractions."""
        return self._build_cvxpy()["x"]

    @property
    def x_columns(self) -> Any:
        """cvxpy variable over the allocation columns."""
        return self._build_cvxpy()["xc"]

    @property
    def effective_throughput(self) -> Any:
        """cvxpy expression ``(n,)``: ``throughput(m, X)``."""
        return self._build_cvxpy()["tp"]

    @property
    def capacity_constraint(self) -> Any:
        """cvxpy constraint ``W x <= workers`` (its duals are the prices)."""
        return self._build_cvxpy()["capacity"]

    @property
    def time_constraint(self) -> Any:
        """cvxpy constraint ``sum_j x[m, j] <= 1``."""
        return self._build_cvxpy()["time"]

    @property
    def objective(self) -> Any:
        """cvxpy expression of the (maximised) policy objective."""
        return self._build_cvxpy()["objective"]

    def add_constraint(self, constraint: Any) -> Self:
        """Add a cvxpy constraint (on `fairalloc.throughput.ThroughputPolicy.x`,
        `fairalloc.throughput.ThroughputPolicy.effective_throughput`,
        ...)."""
        self._build_cvxpy()  # builders that cannot compose (min cost) raise here
        return super().add_constraint(constraint)

    def add_objective_term(self, term: Any) -> Self:
        """Add a concave cvxpy expression to the maximised objective; returns ``self``."""
        self._build_cvxpy()
        return super().add_objective_term(term)

    def _cvx_unit(self) -> float:
        """Power of two of the policy objective's scale (the cvxpy objective is divided by it,
        so that the conic solver's tolerances see a unit-scale objective)."""
        return 1.0

    def problem(self) -> Any:
        """The cvxpy problem ``max (objective + terms) / unit`` s.t. all constraints.

        ``unit`` is a power of two of the policy objective's data scale (1 for data near unit
        scale): the same maximiser, at a scale the conic solver's tolerances are made for."""
        return self._problem(self._build_cvxpy())

    def _problem(self, cvx: dict[str, Any]) -> Any:
        import cvxpy as cp

        obj = cvx["objective"]
        for term in self._terms:
            obj = obj + term
        unit = self._cvx_unit()
        if unit != 1.0:
            obj = obj * (1.0 / unit)
        return cp.Problem(cp.Maximize(obj), [*cvx["base"], *cvx["policy"], *self._constraints])

    # --- solve ------------------------------------------------------------------------------
    def solve(self, *, method: str = "auto", backend: Any = None,
              work_conserving: bool | None = None, gap_tol: float = GAP_TOL,
              feas_tol: float = FEAS_TOL, stage_tol: float = STAGE_TOL,
              symmetry: bool = True, tuning: Tuning | None = None) -> Allocation:
        """Solve the policy and certify the result.

        Parameters
        ----------
        method : {"auto", "highs", "fast", "cvxpy"}
            ``"highs"``: the LPs as sparse matrices through ``backend``; ``"fast"``: the
            structured path where a policy has one (max-min fairness; else as ``"highs"``);
            ``"cvxpy"``: the cvxpy model with added constraints/terms (Clarabel; certified at
            the allocation returned, for the objective reported, see
            `fairalloc.throughput.composed`). ``"auto"``: ``"cvxpy"`` for composed models,
            else ``"fast"``.
        backend : str or Backend, optional
            LP backend (default HiGHS; interior point with crossover for large LPs); with
            ``method="cvxpy"`` the conic backend (default and only certified one: Clarabel).
            The structured fast paths solve their small LPs with the same backend.
        work_conserving : bool, optional
            Add the second stage (default: on where the policy's optimum is not unique).
        gap_tol, feas_tol : float
            Certificate tolerances (relative gap, relative constraint violation), in
            ``(0, 0.1]`` (`fairalloc.tolerances`).
        stage_tol : float
            Relative slack with which a stage's optimum is kept in later stages (at most
            ``gap_tol / 10``, so the first stage's certificate still holds at the end).
        symmetry : bool
            Solve over exact symmetry classes of jobs where the policy allows it (default
            ``True``, below); ``False`` solves job by job (the reference the reduction is
            tested against).
        tuning : fairalloc.throughput.Tuning, optional
            Performance knobs of the solve plans (which strategies are tried, and for how
            long); never changes an answer (every result is certified).

        Every program is solved at unit scale (exact powers of two), so multiplying weights,
        throughputs or durations by a constant gives the same allocation and verdict.

        ``stats.path`` names the steps that ran, in order: ``exact-lp`` (a stage solved as the
        whole LP), ``structured-level`` / ``structured-floor`` / ``floor-from-level`` /
        ``floor-freed:<jobs>`` (the structured solvers, `fairalloc.throughput.structured`),
        ``dinkelbach`` (one finish-time-fairness iteration), ``ftf-closed-form`` (finish-time
        fairness at its closed-form optimum, proved by the work-conserving stage),
        ``fifo-greedy:<jobs>`` (FIFO's greedy pass), ``charnes-cooper`` (min cost), ``cvxpy``
        (one conic solve), ``symmetry:<classes>`` (the steps after it ran on one row per
        exact symmetry class).
        ``stats.fallbacks`` lists every hand-over as ``"from->to: reason"`` (a structured stage
        handed to ``exact-lp``; an uncertified work-conserving stage solved again with the
        tiny shares the anchor gives reserved, ``work-conserving+reserved``, and, where that
        fails too, replaced by the ``first-stage allocation``, also a step of the path;
        ``symmetry->exact``: the reduced program failed or its expanded solution failed the
        original program's certificate;
        solved job by job). Both are plans run by `fairalloc.plan.run_plan`
        (`fairalloc.throughput.wc_stage.composed_wc_plan`,
        `fairalloc.throughput.symmetry.symmetry_plan`).

        Symmetry: where jobs repeat exactly (equal throughput row, scale factor and every
        per-job value the policy reads) and ``symmetry`` is on,
        ``"highs"`` and ``"fast"`` solve over one row per class (``c`` members use ``c`` gangs
        of capacity), give every member its class's allocation and certify it on the original
        program (``certificate``, ``stage_certificates``); ``stats.classes`` is
        the number of classes (``None``: not reduced). Composed models, ``method="cvxpy"``,
        job pairs, FIFO and shortest job first are never reduced
        (``proofs/symmetry_reduction.md``). Jobs whose data agree within a relative
        ``tuning.near_tie_share * gap_tol`` are tried first as near classes
        (``near-symmetry:<classes>``), kept only if certified on the original program.

        Raises
        ------
        InputError, InfeasibleError, SolverError, CertificateError
        """
        t0 = time.perf_counter()
        self._check_method(method)
        method = as_option(method, "method", THROUGHPUT_METHODS)
        tuning = as_tuning(tuning)
        gap_tol = as_tolerance(gap_tol, "gap_tol")
        feas_tol = as_tolerance(feas_tol, "feas_tol")
        stage_tol = as_tolerance(stage_tol, "stage_tol")
        # a kept stage loses at most stage_tol of its optimum: below the certificate's gap_tol
        stage_tol = min(stage_tol, STAGE_SHARE_OF_GAP * gap_tol)
        wc = (self._work_conserving_default if work_conserving is None
              else as_bool(work_conserving, "work_conserving"))
        if method == "auto":
            method = "cvxpy" if self.composed else "fast"
        if self.composed and method != "cvxpy":
            raise InputError(f"method={method!r} cannot solve a model with added constraints "
                             "or terms; use method='cvxpy'", argument="method")
        if method == "cvxpy":
            return self._solve_cvxpy(wc, gap_tol, feas_tol, stage_tol, t0,
                                     "clarabel" if backend is None else backend)
        spec = "highs" if backend is None else backend
        tols = (gap_tol, feas_tol, stage_tol)
        cl = self._classes() if as_bool(symmetry, "symmetry") and self._reducible() else None
        near = None if cl is None else near_classes_of(self, cl, tuning.near_tie_share * gap_tol)
        log = SolveLog()  # the plan's: a hand-over to the job-by-job solve is in its stats
        reduces = cl is not None and cl.reduces
        return solve_by_plan(
            lambda: (self._solve_reduced(cl, method, spec, wc, tols, t0, tuning, prior=log)
                     if cl is not None else "not reducible"),  # (run only where it reduces)
            lambda: self._solve_plain(method, spec, wc, tols, t0, tuning, log),
            reduces=reduces, log=log, what=self.name,
            near=None if near is None else
            (lambda: self._solve_reduced(near, method, spec, wc, tols, t0, tuning, True)))

    def _solve_plain(self, method: str, spec: Any, wc: bool, tols: tuple[float, float, float],
                     t0: float, tuning: Tuning, log: SolveLog) -> Allocation:
        """The program solved job by job (its stages recorded in ``log``)."""
        be = backend_for(spec, self.inst.E, tuning)
        solver = self._stage_solver(self, be, spec, tols, tuning, log)
        if (bases := ROUND_BASES.get()) is not None:  # a RoundPolicy round (its bases)
            solver.bases = bases.program(self._class_key, reduced=False)  # (read if labelled)
        stages, xcol, certs, _ = self._run_stages(solver, method, wc)
        res, stage = stages.result, stages.stage
        cert = self._certify_final(solver, res, stage, xcol)
        cert.check(backend=be.name)
        certs[0] = cert
        stats = self._stats(solver, method, t0, None)
        return self._result(xcol, self._stage_prices(res),
                            self._objective_value(cert, xcol, stages), cert,
                            (*stages.before, certs[0], *stages.after_first, *certs[1:]), stats)

    # --- the stages, shared by the plain and the reduced solve ------------------------------
    def _stage_solver(self, policy: ThroughputPolicy, be: Any, spec: Any,
                      tols: tuple[float, float, float], tuning: Tuning,
                      log: SolveLog | None = None) -> StageSolver:
        gap_tol, feas_tol, stage_tol = tols
        return StageSolver(policy.inst, be, stage_tol=stage_tol, gap_tol=gap_tol,
                           feas_tol=feas_tol, extra_rows=policy._extra_rows(),
                           backend_spec=spec, tuning=tuning, log=log)

    def _stats(self, solver: StageSolver, method: str, t0: float, classes: int | None
               ) -> SolveStats:
        if solver.warm_used:
            method = f"{method}+warm"  # the structured solver started from warm prices
        return SolveStats.from_log(solver.log, method=method, seconds=time.perf_counter() - t0,
                                   classes=classes)

    def _run_stages(self, solver: StageSolver, method: str, wc: bool
                    ) -> tuple[PolicyStages, np.ndarray, list[Certificate], StageResult | None]:
        """The policy's own stages and the work-conserving stage on ``solver``'s instance
        (``self.inst``: the original or a reduced one). Returns the policy stages, the final
        column allocation, the certificates (first stage, work-conserving stage) and the
        certified work-conserving stage's result (``None`` if none)."""
        stages = self._first_stages(solver, method)
        stage, res = stages.stage, stages.result
        certs = [res.cert]
        xcol = res.x[: self.inst.E]
        wres = None
        if wc:
            solver.fix(stage, res.value, at=xcol)
            # its plan (shared with composed models): the stage, else the certified
            # first-stage allocation with a FairallocWarning (`wc_stage.composed_wc_plan`)
            wres, wcert = lp_work_conserving(self, solver, method, res, xcol)
            certs.append(wcert)
            if wres is not None:
                xcol = wres.x[: self.inst.E]
        return stages, xcol, certs, wres

    # --- exact symmetry reduction -----------------------------------------------------------
    def _reducible(self) -> bool:
        """Whether the program may be solved over symmetry classes (symmetric policy, no job
        pairs, no rows beyond the per-job and per-type blocks)."""
        n = self.inst.n  # a per-job array not declared in _per_job: solve job by job
        return (self._symmetric and self.inst.pairs is None and n > 1
                and self._extra_rows() is None
                and not any(isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == n
                            and name not in self._per_job for name, v in vars(self).items()))

    def _class_key(self) -> tuple[np.ndarray, ...]:
        """The job data the program is built from: throughput row, scale factor,
        unconsolidated row and the `Jobs` fields named by ``_job_fields`` (those set)."""
        jobs = self.jobs
        key = (jobs.throughput, jobs.scale_factor, self.inst.unconsolidated,
               *(getattr(jobs, name) for name in self._job_fields))
        return tuple(a for a in key if a is not None)

    def _classes(self) -> Classes:
        """Exact classes of jobs whose program data are equal bit for bit (`classes_of`)."""
        return classes_of(self._class_key(),
                          [np.asarray(getattr(self, name)) for name in self._per_job])

    def _reduced(self, cl: Classes) -> ThroughputPolicy:
        """A copy of the builder over one representative per class (per-job arrays taken at
        the representatives; normalisers over all ``n`` jobs are kept as computed)."""
        red = copy.copy(self)
        red.inst = reduced_instance(self.inst, cl)
        red.jobs, red._cvx = red.inst.jobs, None
        for name in self._per_job:
            setattr(red, name, np.asarray(getattr(self, name))[cl.representative])
        return red

    def _original_stage(self, stage: LevelStage | LinearStage, cmap: ClassMap
                        ) -> LevelStage | LinearStage:
        """The original program's first stage of a reduced one (level stages: every member
        gets its class's row; a linear first stage needs the policy's own definition)."""
        if isinstance(stage, LevelStage):
            return cmap.expand_level(stage)
        raise NotImplementedError  # policies with a linear first stage override this

    def _solve_reduced(self, cl: Classes, method: str, spec: Any, wc: bool,
                       tols: tuple[float, float, float], t0: float, tuning: Tuning,
                       near: bool = False, prior: SolveLog | None = None
                       ) -> Allocation | str:
        """Solve over the classes ``cl``, expand, certify against the original program.

        ``near``: near-identical classes (`near_classes_of`; the original stages are built
        again from the original data). ``prior``: the plan's log (its hand-overs so far).
        Returns the allocation, or the reason why the reduced solution is not certified for
        the original program (the caller then solves job by job)."""
        red = self._reduced(cl)
        calls = StageCalls.of(red) if near else None
        solver = self._stage_solver(red, backend_for(spec, red.inst.E, tuning), spec, tols,
                                    tuning)
        if prior is not None:
            solver.log.replay((), prior.hand_overs)
        solver.step(f"{NEAR_STEP if near else SYMMETRY_STEP}:{cl.num_classes}")
        if not near and (bases := ROUND_BASES.get()) is not None:  # a RoundPolicy round
            solver.bases = bases.program(red._class_key, reduced=True)
        stages, xr, _, wres = red._run_stages(solver, method, wc)
        if stages.before or stages.after_first:
            return "stages beyond the first and work-conserving ones"
        if wc and wres is None:
            return "the reduced work-conserving stage was not certified"
        out = certify_original(self, red, cl, solver, stages, xr, wres, spec, tols, calls)
        if isinstance(out, str):
            return out
        xcol, certs = out
        cert = certs[0]
        stats = self._stats(solver, method, t0, cl.num_classes)
        return self._result(xcol, red._stage_prices(stages.result),
                            self._objective_value(cert, xcol, stages), cert, tuple(certs),
                            stats)

    def _stage_prices(self, res: StageResult) -> np.ndarray:
        return capacity_prices(res)

    def _certify_final(self, solver: StageSolver, res: StageResult,
                       stage: LevelStage | LinearStage, xcol: np.ndarray) -> Certificate:
        """The stage's certificate at the final allocation (its own at the same point)."""
        v = solver.point(stage, xcol)
        return (res.cert if np.array_equal(v, res.x)
                else solver.certificate(res.lp, stage, v, res.duals))

    def _objective_value(self, cert: Certificate, xcol: np.ndarray,
                         stages: PolicyStages) -> float:
        return cert.primal_value

    def _wc_objective(self) -> np.ndarray:
        """Work-conserving objective: total normalised throughput, per column."""
        inst = self.inst
        return rmatvec(inst.Tm, 1.0 / inst.equal_tp)

    def _result(self, xcol: np.ndarray, prices: np.ndarray, objective: float, cert: Certificate,
                certs: tuple[Certificate, ...], stats: SolveStats) -> Allocation:
        inst = self.inst
        tp = inst.throughput(xcol)
        x = inst.to_matrix(xcol)
        pair_x = None
        if inst.pairs is not None:
            sel = inst.col_kind == 2
            flat = np.zeros((inst.pairs.num_pairs, inst.k))
            flat[inst.pair_index, inst.col_type[sel]] = xcol[sel]
            pair_x = flat
        cons_x = inst.to_matrix(xcol, (0,)) if inst.placement else None
        util = matvec(inst.W, xcol) / inst.cap
        arrays = [x, prices, tp, pair_x, cons_x, util]
        for arr in arrays:
            if arr is not None:
                arr.flags.writeable = False
        metric = self._metric(tp)
        metric.flags.writeable = False
        return Allocation(objective=float(objective), status=Status.OPTIMAL, stats=stats,
                          certificate=cert, allocation=x, prices=prices,
                          effective_throughput=tp,
                          metric=metric, policy=self.name, job_ids=self.jobs.ids,
                          types=self.cluster.types, pair_x=pair_x, consolidated_x=cons_x,
                          utilization=util, stage_certificates=certs)

    def _cvx_report(self, cert: Certificate, xcol: np.ndarray) -> Certificate:
        """The certificate of the objective the result reports, from that of the maximised
        cvxpy objective at the returned point (caller's units; default: as is)."""
        return cert

    def _solve_cvxpy(self, wc: bool, gap_tol: float, feas_tol: float, stage_tol: float,
                     t0: float, backend: Any = "clarabel") -> Allocation:
        xcol, prices, cert, certs, stats = solve_composed(
            self, wc, (gap_tol, feas_tol, stage_tol), backend, t0)
        return self._result(xcol, prices, cert.primal_value, cert, certs, stats)

    def __repr__(self) -> str:
        extra = (f", {len(self._constraints)} constraints, {len(self._terms)} terms"
                 if self.composed else "")
        return (f"{type(self).__name__}(jobs={self.inst.n}, types={self.inst.k}, "
                f"columns={self.inst.E}{extra})")


# --------------------------------------------------------------------------------------------
# helpers shared by the policies
# --------------------------------------------------------------------------------------------
def _steps(jobs: Jobs, policy: str) -> np.ndarray:
    if jobs.steps_remaining is None:
        raise InputError(f"{policy} needs jobs.steps_remaining", argument="steps_remaining")
    bad = jobs.steps_remaining <= 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"steps_remaining[{i}] is {jobs.steps_remaining[i]:g}; every job "
                         f"must have steps left", argument="steps_remaining", index=(i,))
    return jobs.steps_remaining


def isolated_split(jobs: Jobs, cluster: Cluster) -> np.ndarray:
    """The isolated allocation ``X^isolated``: each job gets ``1/n`` of every type (§4.1).

    A job with gang size ``s`` and ``1/n`` of the ``c_j`` workers of type ``j`` runs
    ``c_j / (n s)`` of the time there; rows are capped at 1 (a job cannot use more than all of
    its time): ``X[m, j] = c_j / max(n s_m, sum_j c_j)`` on usable types. This allocation is
    always feasible.

    Parameters
    ----------
    jobs, cluster
        The jobs (`fairalloc.Jobs`: throughputs, gang sizes) and the workers of each type.

    Returns
    -------
    numpy.ndarray, shape (n, k)
        Read-only time fractions; 0 where a job cannot run on a type (zero throughput or a
        gang larger than the type's workers).

    Examples
    --------
    >>> import fairalloc as fa
    >>> isolated_split(fa.Jobs([[1.0, 1.0]] * 3), fa.Cluster({"a": 1, "b": 1})).round(4)
    array([[0.3333, 0.3333],
           [0.3333, 0.3333],
           [0.3333, 0.3333]])
    """
    _check_jobs(jobs)
    jobs.check_cluster(cluster)
    cap = cluster.capacity
    s = jobs.scale_factor
    allowed = (jobs.throughput > 0) & (s[:, None] <= cap[None, :])
    x = cap[None, :] / np.maximum(jobs.n * s, cap.sum())[:, None]
    return readonly(np.where(allowed, x, 0.0))


def _check_rates(rates: np.ndarray) -> None:
    """``throughput / steps_remaining`` must be a finite float (steps of 1e-320 overflow)."""
    if not np.isfinite(rates).all():
        raise InputError("throughput / steps_remaining overflows the floating-point range "
                         "(steps_remaining too small)", argument="steps_remaining")


def _check_jobs(jobs: Any) -> None:
    if not isinstance(jobs, Jobs):
        raise InputError(f"jobs must be a fairalloc.Jobs, got {type(jobs).__name__}",
                         argument="jobs")


def equal_split(jobs: Jobs, cluster: Cluster) -> np.ndarray:
    """``X^equal``: each job's time split across types in proportion to worker counts (§4.1).

    Row sum 1 (the normaliser of max-min fairness, not itself a feasible allocation).

    Parameters
    ----------
    jobs, cluster
        The jobs (`fairalloc.Jobs`; only their count is used) and the workers of each type.

    Returns
    -------
    numpy.ndarray, shape (n, k)
        Read-only; every row is ``capacity / capacity.sum()``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> equal_split(fa.Jobs([[40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}))
    array([[0.5, 0.5]])
    """
    _check_jobs(jobs)
    jobs.check_cluster(cluster)
    cap = cluster.capacity
    return readonly(np.tile(cap / cap.sum(), (jobs.n, 1)))


def _rank(order: Any, n: int, name: str) -> np.ndarray:
    arr = as_array(order, name, ndim=1, shape=(n,), nonneg=False)
    return np.argsort(np.argsort(arr, kind="stable"), kind="stable")
