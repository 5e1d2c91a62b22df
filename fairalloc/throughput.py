"""Heterogeneity-aware effective-throughput policies (Gavel, gavel.txt §3-4, Table 1).

An allocation ``X`` (jobs x accelerator types) gives the fraction of wall-clock time each job
spends on each type (§3.1). A job's *effective throughput* is the time-weighted throughput
``throughput(m, X) = sum_j T[m, j] X[m, j]`` (plus, with space sharing, what it gets inside the
job pairs that contain it, §3.1). Every allocation satisfies

* ``0 <= X[m, j] <= 1`` and ``X[m, j] = 0`` where ``T[m, j] = 0`` or the job's gang does not fit;
* ``sum_j X[m, j] <= 1``                               (a job runs on one type at a time);
* ``sum_m X[m, j] * scale_factor[m] <= workers[j]``     (the *capacity rows*).

Every policy is an LP over the columns of ``X`` (only the allowed entries, stored as a sparse
column list; no loops per job), built with numpy/scipy.sparse and solved by HiGHS through
:mod:`fairalloc.backends`, and certified by :func:`fairalloc.certificates.lp_certificate` from
the returned allocation and row duals. Where a policy's optimum is not unique, a
*work-conserving* second stage keeps the policy objective at its optimum (to ``stage_tol``) and
maximises the total normalised throughput, so no capacity is left idle that a job could use.

Prices
------
``prices[j]`` is the non-negative multiplier of capacity row ``j`` in the policy's first-stage
*maximisation* LP (the minimisation policies are solved as maximisations: makespan as
``max 1/makespan``, finish-time fairness as the Dinkelbach level, cost as throughput per unit
cost), i.e. ``d OPT / d workers[j]``: zero on a type that is not fully used.

Policies (builders and one-call functions)
------------------------------------------
========================  ================================  =====================================
builder                   function                          Gavel
========================  ================================  =====================================
:class:`MaxMinFairness`   :func:`max_min_fairness`          §4.1 LAS, weighted, scale factors
:class:`FinishTimeFairness` :func:`finish_time_fairness`    §4.1 min max rho (Themis)
:class:`MinMakespan`      :func:`min_makespan`              §4.1 makespan (one LP, 1/T)
:class:`MaxTotalThroughput` :func:`max_total_throughput`    §3.1 / §4.2
:class:`FIFO`             :func:`fifo`                      §4.2 FIFO
:class:`ShortestJobFirst` :func:`shortest_job_first`        §4.2 SJF
:class:`MinCost`          :func:`min_cost`                  §4.2 min cost (and with SLOs)
========================  ================================  =====================================

Every builder accepts ``pairs`` (:class:`fairalloc.space_sharing.JobPairs`, space sharing) and
``unconsolidated_throughput`` (placement sensitivity, §3.1). Builders expose their program as
cvxpy objects (:attr:`ThroughputPolicy.x`, :attr:`~ThroughputPolicy.capacity_constraint`, ...)
so that constraints and objective terms can be added and the model re-solved with
``method="cvxpy"`` (certified by the conic KKT certificate of :func:`fairalloc._cvxpy.solve_cvxpy`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import scipy.sparse as sp

from ._compose import Composable
from ._lp_stages import (
    _backend_for,
    _Instance,
    _Level,
    _Linear,
    _pow2,
    _prices,
    _scaled_solve,
    _StageResult,
    _StageSolver,
    top_up_rows,
)
from ._structured import _fast_floor, _fast_level
from ._validation import (
    as_array,
    as_bool,
    as_option,
    as_positive_int,
    as_tolerance,
)
from .backends import LinearProgram
from .certificates import lp_certificate
from .data import Cluster, Jobs
from .errors import CertificateError, FairallocWarning, InfeasibleError, InputError, SolverError
from .results import Certificate, Result, SolveStats, Status, readonly, require_pandas
from .tolerances import FEAS_TOL, GAP_TOL

__all__ = [
    "FIFO",
    "Allocation",
    "FinishTimeFairness",
    "MaxMinFairness",
    "MaxTotalThroughput",
    "MinCost",
    "MinMakespan",
    "ShortestJobFirst",
    "ThroughputPolicy",
    "equal_split",
    "fifo",
    "finish_time_fairness",
    "isolated_split",
    "max_min_fairness",
    "max_total_throughput",
    "min_cost",
    "min_makespan",
    "shortest_job_first",
]

METHODS = ("auto", "highs", "fast", "cvxpy")


# --------------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Allocation(Result):
    """An effective-throughput allocation (Gavel §3.1) with prices and certificate.

    Attributes
    ----------
    x : ndarray, shape (n, k)
        ``x[m, j]``: fraction of time job ``m`` runs on type ``j`` (alone or in a pair, in any
        placement).
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
    policy : str
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
    """

    x: np.ndarray
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

    def to_frame(self) -> Any:
        """One row per job (index: job ids): ``x[type]``, effective throughput and metric."""
        pd = require_pandas()
        df = pd.DataFrame(self.x, index=pd.Index(list(self.job_ids), name="job"),
                          columns=[f"x[{t}]" for t in self.types])
        df["effective_throughput"] = self.effective_throughput
        df["metric"] = self.metric
        return df


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
        One entry per allocation column (see :attr:`column_labels`).
    effective_throughput : cvxpy Expression (n,)
    capacity_constraint : cvxpy Constraint
        ``sum_m scale_factor_m x[m, j] <= workers[j]``; its duals are the prices.
    time_constraint : cvxpy Constraint
        ``sum_j x[m, j] <= 1``.
    """

    name = "policy"
    _work_conserving_default = True

    def __init__(self, jobs: Jobs, cluster: Cluster, *, pairs: Any = None,
                 unconsolidated_throughput: Any = None,
                 consolidated_capacity: Any = None) -> None:
        self.inst = _Instance(jobs, cluster, pairs, unconsolidated_throughput,
                              consolidated_capacity)
        self.jobs, self.cluster = jobs, cluster
        self._init_composition()
        self._cvx: dict[str, Any] | None = None

    # --- policy definition (subclasses) -----------------------------------------------------
    def _extra_rows(self) -> tuple[sp.csr_matrix, np.ndarray] | None:
        """Rows ``B x >= lower`` every stage keeps (e.g. SLOs)."""
        return None

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        """Solve the policy's own stages; return (certified stage, its result, objective)."""
        raise NotImplementedError

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return tp / self.inst.equal_tp

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        """(maximised cvxpy expression, extra constraints) of the policy."""
        raise NotImplementedError

    # --- cvxpy composition ------------------------------------------------------------------
    def _build_cvxpy(self) -> dict[str, Any]:
        if self._cvx is not None:
            return self._cvx
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
        self._cvx = cvx
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
        """Add a cvxpy constraint (on :attr:`x`, :attr:`effective_throughput`, ...)."""
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
        import cvxpy as cp

        cvx = self._build_cvxpy()
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
              feas_tol: float = FEAS_TOL, stage_tol: float = 1e-9) -> Allocation:
        """Solve the policy and certify the result.

        Parameters
        ----------
        method : {"auto", "highs", "fast", "cvxpy"}
            ``"highs"``: the LPs as sparse matrices through ``backend``; ``"fast"``: the
            structured path where a policy has one (max-min fairness; else as ``"highs"``);
            ``"cvxpy"``: the cvxpy model with added constraints/terms (Clarabel, conic KKT
            certificate). ``"auto"``: ``"cvxpy"`` for composed models, else ``"fast"``.
        backend : str or Backend, optional
            LP backend (default HiGHS; interior point with crossover for large LPs); with
            ``method="cvxpy"`` the conic backend (default and only certified one: Clarabel).
            The structured fast paths solve their small LPs with the same backend.
        work_conserving : bool, optional
            Add the second stage (default: on where the policy's optimum is not unique).
        gap_tol, feas_tol : float
            Certificate tolerances (relative gap, relative constraint violation), in
            ``(0, 0.1]`` (:mod:`fairalloc.tolerances`).
        stage_tol : float
            Relative slack with which a stage's optimum is kept in later stages (at most
            ``gap_tol / 10``, so the first stage's certificate still holds at the end).

        Every program is solved at unit scale (exact powers of two), so multiplying weights,
        throughputs or durations by a constant gives the same allocation and verdict.

        Raises
        ------
        InputError, InfeasibleError, SolverError, CertificateError
        """
        t0 = time.perf_counter()
        method = as_option(method, "method", METHODS)
        gap_tol = as_tolerance(gap_tol, "gap_tol")
        feas_tol = as_tolerance(feas_tol, "feas_tol")
        stage_tol = as_tolerance(stage_tol, "stage_tol")
        # a kept stage loses at most stage_tol of its optimum: below the certificate's gap_tol
        stage_tol = min(stage_tol, 0.1 * gap_tol)
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
        be = _backend_for(spec, self.inst.E)
        solver = _StageSolver(self.inst, be, stage_tol=stage_tol, gap_tol=gap_tol,
                              feas_tol=feas_tol, extra_rows=self._extra_rows(),
                              backend_spec=spec)
        self._method = method
        stage, res, objective = self._first_stages(solver)
        certs = [res.cert]
        xcol = res.x[: self.inst.E]
        if wc:
            solver.fix(stage, res.value, at=xcol)
            wstage = _Linear(self._wc_objective(), "work-conserving")
            try:
                wres = (_fast_floor(solver, wstage, prior=res) if method == "fast"
                        else solver.run(wstage, "work-conserving"))
                certs.append(wres.cert)
                xcol = wres.x[: self.inst.E]
            except CertificateError as exc:
                # the secondary stage could not be certified (e.g. a job whose level needs a
                # 1e-9 share of a type, below the solver's absolute tolerance): keep the
                # certified first-stage allocation; its failed certificate is reported in
                # stage_certificates
                if exc.certificate is None:
                    raise
                warnings.warn(
                    f"{self.name}: the work-conserving stage could not be certified "
                    f"({exc}); returning the certified first-stage allocation, which may leave "
                    "capacity idle (stage_certificates[1].ok is False)",
                    FairallocWarning, stacklevel=2)
                assert isinstance(exc.certificate, Certificate)
                certs.append(exc.certificate)
        cert = self._certify_final(solver, res, stage, xcol)
        cert.check(backend=be.name)
        certs[0] = cert
        if getattr(solver, "warm_used", False):
            method = f"{method}+warm"  # the structured solver started from warm prices
        stats = SolveStats(backend=solver.backend_names, method=method,
                           seconds=time.perf_counter() - t0, iterations=solver.iterations,
                           solves=solver.solves, raw_status=solver.raw_status)
        return self._result(xcol, self._stage_prices(res), self._objective_value(cert, xcol),
                            cert, tuple(certs), stats)

    def _stage_prices(self, res: _StageResult) -> np.ndarray:
        return _prices(res)

    def _certify_final(self, solver: _StageSolver, res: _StageResult,
                       stage: _Level | _Linear, xcol: np.ndarray) -> Certificate:
        """The certified stage's certificate at the final allocation."""
        return solver.certify(res, stage, xcol)

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        return cert.primal_value

    def _wc_objective(self) -> np.ndarray:
        """Work-conserving objective: total normalised throughput, per column."""
        inst = self.inst
        return np.asarray(inst.Tm.T @ (1.0 / inst.equal_tp)).ravel()

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
        util = (inst.W @ xcol) / inst.cap
        arrays = [x, prices, tp, pair_x, cons_x, util]
        for arr in arrays:
            if arr is not None:
                arr.flags.writeable = False
        metric = self._metric(tp)
        metric.flags.writeable = False
        return Allocation(objective=float(objective), status=Status.OPTIMAL, stats=stats,
                          certificate=cert, x=x, prices=prices, effective_throughput=tp,
                          metric=metric, policy=self.name, job_ids=self.jobs.ids,
                          types=self.cluster.types, pair_x=pair_x, consolidated_x=cons_x,
                          utilization=util, stage_certificates=certs)

    def _cvx_objective_value(self, value: float, xcol: np.ndarray) -> float:
        """The policy objective, in its own units, from the cvxpy optimum (default: as is)."""
        return value

    def _solve_cvxpy(self, wc: bool, gap_tol: float, feas_tol: float, stage_tol: float,
                     t0: float, backend: Any = "clarabel") -> Allocation:
        import cvxpy as cp

        from ._cvxpy import solve_cvxpy

        prob = self.problem()
        unit = self._cvx_unit()
        stats, cert = solve_cvxpy(prob, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol)
        cvx = self._build_cvxpy()
        prices = unit * np.maximum(np.asarray(cvx["capacity"].dual_value, dtype=float), 0.0)
        scaled = float(prob.value)
        value = scaled * unit
        cert = _rescale_cert(cert, unit)
        certs = [cert]
        iters, solves = stats.iterations, 1
        if wc:
            slack = stage_tol * max(abs(scaled), float(cert.scale or 0.0) / unit)
            value_kept = scaled
            obj = prob.objective.args[0]
            g = self._wc_objective()
            p2 = cp.Problem(cp.Maximize(g @ cvx["xc"]),
                            [*prob.constraints, obj >= value_kept - slack])
            stats2, cert2 = solve_cvxpy(p2, backend=backend, gap_tol=gap_tol,
                                        feas_tol=feas_tol)
            certs.append(cert2)
            iters += stats2.iterations
            solves += 1
        xcol = np.clip(np.asarray(cvx["xc"].value, dtype=float), 0.0, 1.0)
        st = SolveStats(backend=stats.backend, method="cvxpy", seconds=time.perf_counter() - t0,
                        iterations=iters, solves=solves, raw_status=stats.raw_status)
        return self._result(xcol, prices, self._cvx_objective_value(value, xcol), cert,
                            tuple(certs), st)

    def __repr__(self) -> str:
        extra = (f", {len(self._constraints)} constraints, {len(self._terms)} terms"
                 if self.composed else "")
        return (f"{type(self).__name__}(jobs={self.inst.n}, types={self.inst.k}, "
                f"columns={self.inst.E}{extra})")


def _rescale_cert(cert: Certificate, unit: float) -> Certificate:
    """``cert`` of a program whose objective was divided by ``unit`` (a power of two), in the
    caller's units (exact; the relative gap and residuals are unchanged)."""
    if unit == 1.0:
        return cert
    import dataclasses

    return dataclasses.replace(
        cert, primal_value=cert.primal_value * unit, dual_bound=cert.dual_bound * unit,
        gap=cert.gap * unit, scale=None if cert.scale is None else cert.scale * unit)


def _level_objective(cvx: dict[str, Any], stage: _Level) -> tuple[Any, list[Any]]:
    """``max theta`` s.t. the level rows; ``theta = sigma theta'`` with a unit-scale variable
    ``theta'`` and the rows divided by ``rho`` (:meth:`_Level.units`)."""
    import cvxpy as cp

    sigma, rho = stage.units()
    var = cp.Variable(name="level")
    theta = var if sigma == 1.0 else sigma * var
    cvx["level"] = theta
    C = stage.C if rho == 1.0 else sp.csr_matrix(stage.C / rho)
    return theta, [C @ cvx["xc"] - (stage.b * (sigma / rho)) * var >= stage.h / rho]


# --------------------------------------------------------------------------------------------
# max-min fairness (LAS), gavel.txt §4.1
# --------------------------------------------------------------------------------------------
class MaxMinFairness(ThroughputPolicy):
    """Heterogeneity-aware weighted max-min fairness / LAS (gavel.txt §4.1).

    ``maximise min_m (scale_factor_m / w_m) * throughput(m, X) / throughput(m, X^equal)``
    where ``X^equal`` splits a job's time across types in proportion to their worker counts
    (row sum 1). As an LP: ``max theta`` s.t. ``a_m . x_m >= theta`` with
    ``a_mj = s_m T_mj / (w_m throughput(m, X^equal))``, plus the allocation constraints.

    With ``water_filling=True`` the level is raised further for the jobs that are not
    bottlenecked (gavel.txt §4.3; :mod:`fairalloc.waterfilling`), which makes the allocation
    Pareto efficient.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    >>> cluster = fa.Cluster({"v100": 1, "k80": 1})
    >>> b = MaxMinFairness(jobs, cluster)
    >>> r = b.solve()
    >>> (r.x * 11).round(6).tolist()
    [[5.0, 0.0], [5.0, 1.0], [1.0, 10.0]]
    """

    name = "max_min_fairness"

    def __init__(self, jobs: Jobs, cluster: Cluster, *, water_filling: bool = False,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.water_filling = as_bool(water_filling, "water_filling")
        inst = self.inst
        self.coef = inst.jobs.scale_factor / (inst.jobs.weight * inst.equal_tp)
        #: (capacity prices, level) of a previous, similar round: seeds the structured
        #: solver's price estimate (set by :class:`fairalloc.RoundPolicy`; never changes the
        #: answer, which is certified as always)
        self.warm_start: tuple[np.ndarray, float] | None = None

    def level_stage(self) -> _Level:
        inst = self.inst
        C = sp.diags(self.coef) @ inst.Tm
        return _Level(sp.csr_matrix(C), np.ones(inst.n), np.zeros(inst.n), "max-min level")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return self.coef * tp

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        stage = self.level_stage()
        if self._method == "fast":
            res = _fast_level(solver, stage, warm=self.warm_start)
        else:
            res = solver.run(stage, "max-min fairness")
        return stage, res, res.value

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return _level_objective(cvx, self.level_stage())

    def _cvx_unit(self) -> float:
        return self.level_stage().units()[0]

    def solve(self, **kw: Any) -> Allocation:  # noqa: D102 - documented on the base class
        if self.water_filling:
            if self.composed or kw.get("method") == "cvxpy":
                raise InputError("water_filling=True cannot be combined with added constraints"
                                 " or method='cvxpy'", argument="water_filling")
            from .waterfilling import _water_fill_policy

            return _water_fill_policy(self, **kw)
        return super().solve(**kw)


def max_min_fairness(jobs: Jobs, cluster: Cluster, *, water_filling: bool = False,
                     pairs: Any = None, unconsolidated_throughput: Any = None,
                     consolidated_capacity: Any = None, method: str = "auto",
                     backend: Any = None, work_conserving: bool | None = None,
                     gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL) -> Allocation:
    """Heterogeneity-aware weighted max-min fairness (LAS) (gavel.txt §4.1, §4.3).

    Maximises ``min_m (scale_factor_m / w_m) throughput(m, X) / throughput(m, X^equal)``
    (``X^equal``: time split across types in proportion to worker counts, row sum 1). By
    default a work-conserving second stage then maximises the total normalised throughput at
    that level; ``water_filling=True`` instead raises the level of non-bottlenecked jobs until
    every job is bottlenecked (Pareto efficient; :func:`fairalloc.waterfilling.water_filling`).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    water_filling : bool
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see :class:`ThroughputPolicy`).
    method, backend, work_conserving, gap_tol, feas_tol
        See :meth:`ThroughputPolicy.solve`.

    Returns
    -------
    Allocation
        ``objective`` is the max-min level; ``metric`` each job's weighted normalised
        throughput.

    Examples
    --------
    The paper's example (§4.1): every job gets 12/11 of what 1/3 of each GPU would give it.

    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    >>> a = fa.max_min_fairness(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    >>> (a.effective_throughput / (jobs.throughput @ [1/3, 1/3])).round(6).tolist()
    [1.090909, 1.090909, 1.090909]
    """
    b = MaxMinFairness(jobs, cluster, water_filling=water_filling, pairs=pairs,
                       unconsolidated_throughput=unconsolidated_throughput,
                       consolidated_capacity=consolidated_capacity)
    return b.solve(method=method, backend=backend, work_conserving=work_conserving,
                   gap_tol=gap_tol, feas_tol=feas_tol)


# --------------------------------------------------------------------------------------------
# helpers shared by the duration-based policies
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


# --------------------------------------------------------------------------------------------
# minimum makespan, gavel.txt §4.1
# --------------------------------------------------------------------------------------------
class MinMakespan(ThroughputPolicy):
    """Minimum makespan (gavel.txt §4.1): ``min_X max_m steps_m / throughput(m, X)``.

    Exact as one LP through the substitution ``theta = 1 / makespan``:
    ``max theta`` s.t. ``throughput(m, X) / steps_m >= theta`` (no bisection). ``objective``
    is the makespan in seconds; ``prices`` are ``d theta / d workers``.
    """

    name = "min_makespan"

    def __init__(self, jobs: Jobs, cluster: Cluster, **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.steps = _steps(jobs, "min_makespan")

    def level_stage(self) -> _Level:
        inst = self.inst
        C = sp.csr_matrix(inst.Tm, copy=True)  # rows T / steps (not T * (1 / steps))
        rows = np.repeat(np.arange(inst.n), np.diff(C.indptr))
        with np.errstate(over="ignore"):
            C.data = C.data / self.steps[rows]
        _check_rates(C.data)
        return _Level(C, np.ones(inst.n), np.zeros(inst.n), "makespan")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore"):
            return np.where(tp > 0, self.steps / np.maximum(tp, 1e-300), np.inf)

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        stage = self.level_stage()
        res = solver.run(stage, "makespan")
        return stage, res, res.value

    def _makespan(self, xcol: np.ndarray) -> float:
        """``max_m steps_m / throughput(m, X)`` of the allocation (never ``1 / theta``, which
        underflows: theta is solved at unit scale and the makespan computed from ``X``)."""
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            span = float(np.max(self._metric(self.inst.throughput(xcol))))
        if not np.isfinite(span):
            raise InputError("the makespan exceeds the floating-point range (steps_remaining "
                             "/ throughput overflows)", argument="steps_remaining")
        return span

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        return self._makespan(xcol)

    def _cvx_objective_value(self, value: float, xcol: np.ndarray) -> float:
        return self._makespan(xcol)

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return _level_objective(cvx, self.level_stage())

    def _cvx_unit(self) -> float:
        return self.level_stage().units()[0]


def min_makespan(jobs: Jobs, cluster: Cluster, **kw: Any) -> Allocation:
    """Minimum makespan allocation (gavel.txt §4.1), exact as one LP.

    ``objective`` is the makespan ``max_m steps_m / throughput(m, X)`` in seconds; keyword
    arguments as for :func:`max_min_fairness` (``pairs``, ``method``, ...).

    Examples
    --------
    Two jobs of 100 steps at 10 steps/s on one GPU: the GPU is split, both finish at 20 s.

    >>> import fairalloc as fa
    >>> a = fa.min_makespan(fa.Jobs([[10.0], [10.0]], steps_remaining=[100, 100]),
    ...                     fa.Cluster({"gpu": 1}))
    >>> round(a.objective, 6), a.x.ravel().round(6).tolist()
    (20.0, [0.5, 0.5])
    """
    return MinMakespan(jobs, cluster, **_builder_kw(kw)).solve(**kw)


_SOLVE_KEYS = ("method", "backend", "work_conserving", "gap_tol", "feas_tol", "stage_tol")


def _builder_kw(kw: dict[str, Any], extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Pop the builder's keyword arguments out of a one-call function's ``kw``; an argument
    that neither the builder nor :meth:`ThroughputPolicy.solve` takes is an InputError."""
    keys = ("pairs", "unconsolidated_throughput", "consolidated_capacity", *extra)
    out = {key: kw.pop(key) for key in keys if key in kw}
    unknown = [key for key in kw if key not in _SOLVE_KEYS]
    if unknown:
        raise InputError(f"unexpected argument {unknown[0]!r} (solve options: "
                         f"{', '.join(_SOLVE_KEYS)})", argument=str(unknown[0]))
    return out


# --------------------------------------------------------------------------------------------
# finish-time fairness, gavel.txt §4.1 (Themis)
# --------------------------------------------------------------------------------------------
class FinishTimeFairness(ThroughputPolicy):
    """Finish-time fairness (gavel.txt §4.1, Themis): ``min_X max_m rho(m, X)``,

    ``rho(m, X) = (t_m + steps_m / throughput(m, X)) / (t_m^iso + steps_m /
    throughput(m, X^isolated))`` with ``t_m`` = ``jobs.elapsed``, ``t_m^iso`` =
    ``jobs.isolated_elapsed`` (default: ``elapsed``) and ``X^isolated`` =
    :func:`isolated_split` (1/n of every type).

    ``rho`` is a ratio of affine functions of ``X`` (``(t tp + steps) / (D tp)``), so the
    program is a generalised linear-fractional program. It is solved exactly by the
    Dinkelbach-type method of Crouzeix, Ferland and Schaible: at ``R`` solve the LP
    ``F(R) = max theta`` s.t. ``(R D_m tp_m - t_m tp_m - steps_m) / q_m >= theta``
    (``q_m`` = the current denominator); set ``R`` to the largest ``rho`` of its solution and
    stop when ``F(R) = 0``: the certificate of that last LP proves that no allocation has every
    ``rho_m < R`` (``certificate`` certifies ``F(R) = 0``; ``objective`` is ``R``).
    """

    name = "finish_time_fairness"

    def __init__(self, jobs: Jobs, cluster: Cluster, *, max_iterations: int = 50,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.steps = _steps(jobs, "finish_time_fairness")
        self.max_iterations = as_positive_int(max_iterations, "max_iterations")
        iso = isolated_split(jobs, cluster)
        self.iso_tp = np.einsum("ij,ij->i", self.inst.T_allowed, iso)
        t_iso = jobs.elapsed if jobs.isolated_elapsed is None else jobs.isolated_elapsed
        with np.errstate(over="ignore"):
            self.dur_iso = self.steps / self.iso_tp
        self.D = t_iso + self.dur_iso  # isolated finish time (denominator of rho)
        self.t = jobs.elapsed
        self.t_iso = t_iso
        if not (np.isfinite(self.dur_iso).all() and np.isfinite(self.D).all()):
            raise InputError("steps_remaining / throughput overflows: the isolated finish "
                             "times are beyond the floating-point range",
                             argument="steps_remaining")

    def excess(self, tp: np.ndarray) -> np.ndarray:
        """``rho(m, X) - 1`` computed without cancellation: ``((t - t_iso) + (steps / tp -
        steps / tp_iso)) / D`` (``rho`` rounds to 1 when elapsed times dwarf durations)."""
        with np.errstate(divide="ignore", over="ignore"):
            dur = np.where(tp > 0, self.steps / np.maximum(tp, 1e-300), np.inf)
            return ((self.t - self.t_iso) + (dur - self.dur_iso)) / self.D

    def rho(self, tp: np.ndarray) -> np.ndarray:
        """``rho(m, X)`` for effective throughputs ``tp``."""
        with np.errstate(divide="ignore"):
            dur = np.where(tp > 0, self.steps / np.maximum(tp, 1e-300), np.inf)
        return (self.t + dur) / self.D

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return self.rho(tp)

    def dinkelbach_stage(self, R: float, tp_prev: np.ndarray, r: float | None = None
                         ) -> _Level:
        """Level stage of ``F(R)``: rows ``((R D - t) tp - steps) / q >= theta``.

        ``R D - t`` is computed as ``(R - 1) D + (t_iso - t) + steps / tp_iso`` (``r``:
        ``R - 1`` when known exactly), without the cancellation of ``R D - t`` when elapsed
        times dwarf the remaining durations."""
        inst = self.inst
        q = self.D * tp_prev
        r = R - 1.0 if r is None else r
        coef = (r * self.D + (self.t_iso - self.t) + self.dur_iso) / q
        C = sp.csr_matrix(sp.diags(coef) @ inst.Tm)
        # theta is in units of rho (rows ~ (R - rho_m) tp_m / tp_prev_m): its gap is judged
        # against R, the level being certified
        return _Level(C, np.ones(inst.n), self.steps / q, "finish-time fairness", scale=abs(R))

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        inst = self.inst
        iso = isolated_split(self.jobs, self.cluster)
        x_prev = np.zeros(inst.E)  # X^isolated in column form (single-job columns)
        single = np.flatnonzero(inst.col_kind[inst.mem_col] == 0)
        x_prev[inst.mem_col[single]] = iso[inst.mem_job[single],
                                           inst.col_type[inst.mem_col[single]]]
        tp = inst.throughput(x_prev)
        r = float(self.excess(tp).max())  # R - 1, tracked without cancellation
        R = 1.0 + r
        for _ in range(self.max_iterations):
            stage = self.dinkelbach_stage(R, tp, r)
            res = (_fast_level(solver, stage) if self._method == "fast"
                   else solver.run(stage, "finish-time fairness"))
            xcol = res.x[: inst.E]
            tp_new = inst.throughput(xcol)
            r_new = float(self.excess(tp_new).max())
            R_new = 1.0 + r_new
            # F(R) <= 0 always (the previous allocation is feasible with theta <= 0); F is
            # in units of rho (its rows are (R - rho_m) tp_m / tp_prev_m)
            if r_new >= r:
                # no progress (F(R) ~ 0 to rounding): the previous allocation attains R and
                # the stage's duals certify it (its theta is 0 there)
                v = solver.point(stage, x_prev)
                cert = solver.certify(res, stage, x_prev).check(backend=solver.backend.name)
                return stage, _StageResult(res.lp, v, res.duals, cert.primal_value, cert,
                                           res.iterations, res.cap_rows), R
            if res.value <= self.gap_stop(R):
                return stage, res, R_new
            R, r, tp, x_prev = R_new, r_new, tp_new, xcol
        raise SolverError("finish-time fairness: Dinkelbach iterations did not converge",
                          backend=solver.backend.name, status="iteration_limit")

    def gap_stop(self, R: float) -> float:
        return 1e-9 * abs(R)

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        return float(self.rho(self.inst.throughput(xcol)).max())

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        R = cp.Variable(name="rho_max")
        cvx["level"] = R
        # t + steps / tp <= D R, divided by D and with tp at unit scale (tau: a power of
        # two): every coefficient is a ratio of times or of throughputs
        tau = _pow2(float(np.median(self.inst.equal_tp)))
        tp_unit = cvx["tp"] * (1.0 / tau) if tau != 1.0 else cvx["tp"]
        con = [self.t / self.D + cp.multiply(self.steps / (self.D * tau), cp.inv_pos(tp_unit))
               <= R]
        return -R, con

    def _cvx_objective_value(self, value: float, xcol: np.ndarray) -> float:
        return float(self.rho(self.inst.throughput(xcol)).max())


def _replace(res: Allocation, **changes: Any) -> Allocation:
    import dataclasses

    return dataclasses.replace(res, **changes)


def finish_time_fairness(jobs: Jobs, cluster: Cluster, **kw: Any) -> Allocation:
    """Finish-time fairness (gavel.txt §4.1; Themis): minimise ``max_m rho(m, X)``.

    Needs ``jobs.steps_remaining``; uses ``jobs.elapsed`` and ``jobs.isolated_elapsed``
    (default: ``elapsed``). Solved exactly by a Dinkelbach sequence of LPs (see
    :class:`FinishTimeFairness`), then a work-conserving stage keeps every ``rho <= R*``.
    ``objective`` is ``max_m rho``; ``metric`` each job's ``rho``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[10.0], [10.0]], steps_remaining=[100, 300])
    >>> a = fa.finish_time_fairness(jobs, fa.Cluster({"gpu": 1}))
    >>> round(a.objective, 6)
    1.0
    """
    return FinishTimeFairness(jobs, cluster, **_builder_kw(kw, ("max_iterations",))).solve(**kw)


# --------------------------------------------------------------------------------------------
# linear objectives: total throughput, FIFO, shortest job first
# --------------------------------------------------------------------------------------------
class MaxTotalThroughput(ThroughputPolicy):
    """Maximum total effective throughput (gavel.txt §3.1): ``max sum_m throughput(m, X)``.

    ``normalized=True`` sums ``throughput(m, X) / throughput(m, X^equal)`` instead (comparable
    across models). All coefficients are positive, so the optimum is work-conserving.
    """

    name = "max_total_throughput"
    _work_conserving_default = False

    def __init__(self, jobs: Jobs, cluster: Cluster, *, normalized: bool = False,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.normalized = as_bool(normalized, "normalized")

    def weights(self) -> np.ndarray:
        return 1.0 / self.inst.equal_tp if self.normalized else np.ones(self.inst.n)

    def stage(self) -> _Linear:
        return _Linear(np.asarray(self.inst.Tm.T @ self.weights()).ravel(), "total throughput")

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        st = self.stage()
        res = solver.run(st, self.name)
        return st, res, res.value

    def _cvx_unit(self) -> float:
        return _pow2(float(np.max(np.abs(self.stage().g), initial=0.0)))

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return self.weights() @ cvx["tp"], []


def max_total_throughput(jobs: Jobs, cluster: Cluster, *, normalized: bool = False,
                         **kw: Any) -> Allocation:
    """Maximise total effective throughput (gavel.txt §3.1, §4.2).

    Examples
    --------
    >>> import fairalloc as fa
    >>> a = fa.max_total_throughput(fa.Jobs([[40.0, 10.0], [12.0, 4.0]]),
    ...                             fa.Cluster({"v100": 1, "k80": 1}))
    >>> a.x.tolist(), a.objective
    ([[1.0, 0.0], [0.0, 1.0]], 44.0)
    """
    return MaxTotalThroughput(jobs, cluster, normalized=normalized, **_builder_kw(kw)).solve(**kw)


def _rank(order: Any, n: int, name: str) -> np.ndarray:
    arr = as_array(order, name, ndim=1, shape=(n,), nonneg=False)
    return np.argsort(np.argsort(arr, kind="stable"), kind="stable")


FIFO_SEMANTICS = ("arrival", "objective")


class FIFO(ThroughputPolicy):
    """First in, first out (gavel.txt §4.2), in two named semantics.

    ``semantics="arrival"`` (default; what schedulers, and Gavel's own ``FIFOPolicy``, mean):
    jobs are served strictly in arrival order. It is the *lexicographic* program over the
    normalised throughputs ``v_m = throughput(m, X) / throughput(m, X^fastest)`` in arrival
    order: maximise ``v`` of the first job, then of the second keeping the first at its
    optimum, and so on. A gang job that fits is therefore never starved by later, smaller
    jobs (4 GPUs, a first-arrived 4-GPU job and four later 1-GPU jobs: the first job runs).
    Solved in one pass in arrival order while each job's stage optimum is unique (a
    fractional knapsack over its types given the earlier jobs, filled in decreasing
    throughput; see formulations/gavel_policies.md), then, from the first tie, by one LP per
    job (skipping later jobs the same LP puts at their bound, stopping as soon as one LP
    proves that no later job can run). ``objective`` is ``sum_m v_m``; ``certificate`` is that
    of the LP ``max sum_m v_m`` keeping every job's value (proving that no job left at 0 can
    run), or after a tie the last stage LP's (every stage's certificate is in
    ``stage_certificates``).

    ``semantics="objective"`` (the paper's formula): ``max sum_m (M - r_m) throughput(m, X) /
    throughput(m, X^fastest)``, one LP. It ignores gang size: a 4-GPU job counts as much as a
    1-GPU job per unit of its own time, so with 4 GPUs it runs three later 1-GPU jobs and
    gives the first a quarter of its time.

    ``r_m`` is the job's 0-based arrival rank (``order``; default: most ``elapsed`` first, ties
    by index), ``M`` the number of jobs (so every weight is positive: the paper's 1-based
    ``M - m`` gives the last job weight 0) and ``throughput(m, X^fastest)`` the job's
    throughput on its fastest usable type.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[1.0]] * 5, scale_factor=[4, 1, 1, 1, 1])
    >>> FIFO(jobs, fa.Cluster({"gpu": 4}), order=range(5)).solve().x.ravel().round(6).tolist()
    [1.0, 0.0, 0.0, 0.0, 0.0]
    >>> r = FIFO(jobs, fa.Cluster({"gpu": 4}), order=range(5), semantics="objective").solve()
    >>> r.x.ravel().round(6).tolist()
    [0.25, 1.0, 1.0, 1.0, 0.0]
    """

    name = "fifo"
    _work_conserving_default = False

    def __init__(self, jobs: Jobs, cluster: Cluster, *, order: Any = None,
                 semantics: str = "arrival", **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        n = jobs.n
        self.rank = (_rank(-jobs.elapsed, n, "elapsed") if order is None
                     else _rank(order, n, "order"))
        self.semantics = as_option(semantics, "semantics", FIFO_SEMANTICS)

    def weights(self) -> np.ndarray:
        return (self.inst.n - self.rank) / self.inst.fastest_tp

    def stage(self) -> _Linear:
        return _Linear(np.asarray(self.inst.Tm.T @ self.weights()).ravel(), "fifo")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return tp / self.inst.fastest_tp

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        if self.semantics == "objective":
            return MaxTotalThroughput._first_stages(self, solver)  # type: ignore[arg-type]
        return self._arrival_stages(solver)

    def _greedy_forced(self) -> tuple[int, np.ndarray, np.ndarray]:
        """The arrival-order stages that need no LP, in one pass (no LP, O(k) per job).

        Given the earlier jobs' allocations *forced* (the only ones attaining their stage
        optima), job ``m``'s stage is the fractional knapsack ``max sum_j a_j x_j`` s.t.
        ``0 <= x_j <= spare_j / s_m``, ``sum_j x_j <= 1`` (``a_j = T_mj / T_m,fastest``),
        solved exactly by filling its types in decreasing ``a_j``. With distinct ``a_j`` on
        the types with spare workers its optimum is unique, so job ``m`` is forced too. Returns
        ``(stop, xcol, v)``: ``order[:stop]`` are decided (``stop == n``: all of them; once no
        worker is spare every later job is forced to 0), ``xcol`` their allocation, ``v``
        their values; ``stop < n`` where a tie makes a stage's optimum not unique (the LP
        stages take over from there)."""
        inst = self.inst
        n, k = inst.n, inst.k
        order = np.argsort(self.rank, kind="stable")
        A = (inst.T_allowed / inst.fastest_tp[:, None]).tolist()
        sf = inst.jobs.scale_factor.tolist()
        cap = inst.cap.tolist()
        spare = list(cap)
        x = np.zeros((n, k))
        v = np.zeros(n)
        stop = n
        for pos, m in enumerate(order.tolist()):
            live = [j for j in range(k) if spare[j] > 1e-12 * cap[j]]
            if not live:
                break  # no spare worker: every later job is forced to 0
            a = A[m]
            use = sorted((j for j in live if a[j] > 0), key=lambda j: -a[j])
            if len({a[j] for j in use}) != len(use):
                stop = pos  # tied types: the stage optimum is not unique
                break
            left, val = 1.0, 0.0
            for j in use:
                take = min(left, spare[j] / sf[m])
                if take <= 0.0:
                    continue
                x[m, j] = take
                spare[j] = max(spare[j] - take * sf[m], 0.0)
                left -= take
                val += a[j] * take
                if left <= 0.0:
                    break
            v[m] = val
        xcol = np.zeros(inst.E)
        single = np.flatnonzero(inst.col_kind[inst.mem_col] == 0)
        own, col = inst.mem_job[single], inst.mem_col[single]
        xcol[col] = x[own, inst.col_type[col]]
        return stop, xcol, v

    def _arrival_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                              float]:
        inst = self.inst
        V = sp.csr_matrix(sp.diags(1.0 / inst.fastest_tp) @ inst.Tm)  # rows v_m(x) <= 1
        order = np.argsort(self.rank, kind="stable")
        stop, xcol, vals = self._greedy_forced()
        prefix = order[:stop]
        # each stage is kept to a tenth of gap_tol of one job's worth (v <= 1): tighter kept
        # rows pile up into programs the solver's absolute tolerances call infeasible
        slack = max(solver.stage_tol, 0.1 * solver.gap_tol)
        at_bound = 1.0 - 1e-12  # jobs at their bound v = 1

        def keep(jobs_: np.ndarray, low: np.ndarray | None = None) -> None:
            if low is not None:  # forced jobs at their greedy values (those above 0), no
                # slack: a relative slack per row adds up over hundreds of rows into room that
                # the final LP hands to jobs that cannot run (1e-9 x 437 rows: 3e-3)
                pos_ = low > 0
                jobs_ = jobs_[pos_]
                low = np.minimum(low[pos_], V[jobs_] @ xcol)  # met by the greedy point
            if jobs_.size:
                solver.fixed.append((V[jobs_], np.full(jobs_.size, at_bound) if low is None
                                     else low))

        def fix(st: _Linear, res: _StageResult) -> None:
            solver.anchor = res.x[: inst.E]
            if res.value <= solver.gap_tol:
                return  # 0 to the certificate's accuracy: nothing to keep
            solver.fixed.append((sp.csr_matrix(st.g[None, :]),
                                 np.array([res.value - slack * max(1.0, abs(res.value))])))

        keep(prefix, vals[prefix])
        solver.anchor = xcol
        pos = prefix.size
        n = inst.n
        self._stage_certs: list[Certificate] = []
        last: tuple[_Linear, _StageResult] | None = None
        while pos < n:
            m = order[pos]
            st = _Linear(np.asarray(V[m].todense()).ravel(), f"fifo job {inst.jobs.ids[m]!r}")
            res = _run_unit_scale(solver, st, "fifo (arrival order)")
            self._stage_certs.append(res.cert)
            fix(st, res)
            last = (st, res)
            pos += 1
            # later jobs that this optimum already puts at their bound v = 1 are optimal too
            v = V @ res.x[: inst.E]
            nxt = order[pos:]
            run = np.flatnonzero(v[nxt] < at_bound)
            step = int(run[0]) if run.size else nxt.size
            keep(nxt[:step])
            pos += step
            if pos >= n:
                break
            rest = order[pos:]
            st = _Linear(np.asarray(V[rest].sum(axis=0)).ravel(), "fifo (later jobs)")
            res = _run_unit_scale(solver, st, "fifo (later jobs)")
            self._stage_certs.append(res.cert)
            if res.value <= solver.gap_tol:
                # no later job can run at all: every later stage's optimum is 0
                last = (st, res)
                break
        self._v = V
        if last is not None:
            # every job has been maximised in arrival order: the last LP's optimum is the
            # lexicographic optimum (every earlier stage is one of its constraints)
            return last[0], last[1], last[1].value
        # every stage was decided without an LP (each job forced, in arrival order): certify
        # the allocation against the LP max sum_m v_m keeping every job's value, whose duals
        # also prove that no job left at 0 can get anything while the others keep theirs
        final = _Linear(np.asarray(V.sum(axis=0)).ravel(), "fifo (total)")
        res = _run_unit_scale(solver, final, "fifo (total)")
        v = solver.point(final, xcol)
        cert = solver.certificate(res.lp, final, v, res.duals)
        cert.check(backend=solver.backend.name)
        return final, _StageResult(res.lp, v, res.duals, cert.primal_value, cert,
                                   res.iterations, res.cap_rows), cert.primal_value

    def _certify_final(self, solver: _StageSolver, res: _StageResult,
                       stage: _Level | _Linear, xcol: np.ndarray) -> Certificate:
        cert = solver.certify(res, stage, xcol)
        if self.semantics == "objective":
            return cert
        import dataclasses

        # sums of normalised throughputs (each at most 1): judged against one job's worth
        return dataclasses.replace(cert, scale=max(1.0, abs(cert.primal_value),
                                                   abs(cert.dual_bound)))

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        if self.semantics == "objective":
            return cert.primal_value
        return float(np.sum(self._v @ xcol))  # sum of normalised throughputs

    def solve(self, **kw: Any) -> Allocation:  # noqa: D102 - documented on the base class
        if self.semantics == "arrival" and (self.composed or kw.get("method") == "cvxpy"):
            raise InputError("semantics='arrival' is a sequence of LPs; composed models and "
                             "method='cvxpy' need semantics='objective'", argument="semantics")
        self._stage_certs = []
        res = super().solve(**kw)
        if self.semantics == "arrival" and self._stage_certs:
            return _replace(res, stage_certificates=(*self._stage_certs,
                                                     *res.stage_certificates))
        return res

    _cvx_objective = MaxTotalThroughput._cvx_objective
    _cvx_unit = MaxTotalThroughput._cvx_unit


def _run_unit_scale(solver: _StageSolver, st: _Linear, what: str) -> _StageResult:
    """``solver.run(st)`` for a stage whose objective ``sum v_m`` (normalised throughputs, each
    at most 1) is legitimately 0: its gap is judged against one job's worth (scale 1)."""
    import dataclasses

    lp = solver._program(st)
    sol = _scaled_solve(lp, solver.backend, what)
    solver.used(sol)
    assert sol.x is not None and sol.row_duals is not None
    xcol = solver.inst.repair(sol.x[: solver.inst.E])
    # the solver's point first; moved towards the last stage's optimum only if a kept row is
    # violated beyond the certificate's tolerance
    for cand in (xcol, solver.toward_anchor(xcol)):
        v = solver.point(st, cand)
        cert = lp_certificate(lp, v, sol.row_duals, maximize=True, gap_tol=solver.gap_tol,
                              feas_tol=solver.feas_tol)
        cert = dataclasses.replace(cert, scale=max(1.0, abs(cert.primal_value),
                                                   abs(cert.dual_bound)))
        if cert.ok:
            break
    cert.check(backend=solver.backend.name)
    return _StageResult(lp, v, sol.row_duals, cert.primal_value, cert, sol.iterations,
                        solver.cap_rows)


def fifo(jobs: Jobs, cluster: Cluster, *, order: Any = None, semantics: str = "arrival",
         **kw: Any) -> Allocation:
    """FIFO allocation (gavel.txt §4.2); ``order`` ranks jobs by arrival (smaller first).

    ``semantics="arrival"`` (default): strict arrival order, lexicographic (Gavel's FIFO);
    ``semantics="objective"``: the paper's weighted-sum objective (see :class:`FIFO`).

    Examples
    --------
    The first job gets the fast GPU:

    >>> import fairalloc as fa
    >>> a = fa.fifo(fa.Jobs([[40.0, 10.0], [40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}),
    ...             order=[0, 1])
    >>> a.x.round(6).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return FIFO(jobs, cluster, order=order, semantics=semantics, **_builder_kw(kw)).solve(**kw)


class ShortestJobFirst(ThroughputPolicy):
    """Shortest job first (gavel.txt §4.2): ``min_X min_m steps_m / throughput(m, X)``.

    The paper's objective is attained by giving the job with the smallest possible duration
    ``steps_m / max_j T[m, j]`` its fastest usable type for all of its time; the first stage
    is the LP maximising that job's throughput (its value is the bound every allocation obeys).
    Then the remaining capacity goes to the other jobs in shortest-first order (the FIFO
    objective with rank by isolated duration) and a work-conserving stage follows.
    ``objective`` is the shortest duration in seconds.
    """

    name = "shortest_job_first"

    def __init__(self, jobs: Jobs, cluster: Cluster, **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.steps = _steps(jobs, "shortest_job_first")
        self.duration = self.steps / self.inst.fastest_tp
        self.rank = _rank(self.duration, jobs.n, "steps_remaining")
        self.first = int(np.flatnonzero(self.rank == 0)[0])

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore"):
            return np.where(tp > 0, self.steps / np.maximum(tp, 1e-300), np.inf)

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        inst = self.inst
        with np.errstate(over="ignore"):
            g = np.asarray(inst.Tm[self.first].todense()).ravel() / self.steps[self.first]
        _check_rates(g)
        st = _Linear(g, "shortest job")
        res = solver.run(st, self.name)
        self._first_cert = res
        solver.fix(st, res.value, at=res.x[: inst.E])
        w = (inst.n - self.rank) / inst.fastest_tp
        st2 = _Linear(np.asarray(inst.Tm.T @ w).ravel(), "shortest-first order")
        res2 = solver.run(st2, self.name)
        solver.fix(st2, res2.value, at=res2.x[: inst.E])
        self._second = res2
        return st, _StageResult(res.lp, np.r_[res2.x[: inst.E], 0.0], res.duals, res.value,
                                res.cert, res.iterations, res.cap_rows), res.value

    def _shortest(self, xcol: np.ndarray) -> float:
        """The shortest job's duration ``steps / throughput`` under the allocation."""
        m = self.first
        with np.errstate(over="ignore", divide="ignore"):
            dur = float(self.steps[m] / float(self.inst.throughput(xcol)[m]))
        if not np.isfinite(dur):
            raise InputError("the shortest duration exceeds the floating-point range "
                             "(steps_remaining / throughput overflows)",
                             argument="steps_remaining")
        return dur

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        return self._shortest(xcol)

    def _cvx_objective_value(self, value: float, xcol: np.ndarray) -> float:
        return self._shortest(xcol)

    def solve(self, **kw: Any) -> Allocation:  # noqa: D102
        res = super().solve(**kw)
        if self.composed or kw.get("method") == "cvxpy":
            return res
        certs = (res.stage_certificates[0], self._second.cert, *res.stage_certificates[1:])
        return _replace(res, stage_certificates=certs)

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return cvx["tp"][self.first] / self.steps[self.first], []

    def _cvx_unit(self) -> float:
        g = np.asarray(self.inst.Tm[self.first].todense()).ravel() / self.steps[self.first]
        return _pow2(float(np.max(g, initial=0.0)))


def shortest_job_first(jobs: Jobs, cluster: Cluster, **kw: Any) -> Allocation:
    """Shortest job first (gavel.txt §4.2); see :class:`ShortestJobFirst`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[10.0, 5.0], [10.0, 5.0]], steps_remaining=[500, 100])
    >>> a = fa.shortest_job_first(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    >>> a.x.tolist(), round(a.objective, 6)
    ([[0.0, 1.0], [1.0, 0.0]], 10.0)
    """
    return ShortestJobFirst(jobs, cluster, **_builder_kw(kw)).solve(**kw)


# --------------------------------------------------------------------------------------------
# minimum cost (and subject to SLOs), gavel.txt §4.2: linear-fractional, Charnes-Cooper
# --------------------------------------------------------------------------------------------
class MinCost(ThroughputPolicy):
    """Minimum cost, optionally subject to SLOs (gavel.txt §4.2).

    ``maximise sum_m throughput(m, X) / sum_{m, j} cost_j scale_factor_m X[m, j]`` (throughput
    per unit cost; the cost of a pair column is counted once), subject to the allocation
    constraints and ``throughput(m, X) >= steps_m / slo_m`` for jobs with an SLO.

    Linear-fractional, solved exactly by the Charnes-Cooper transformation ``y = z X``,
    ``z = 1 / cost(X)``: ``max sum_m throughput(m, y)`` s.t. ``cost(y) = 1``, ``M y <= z``,
    ``W y <= workers z``, ``throughput(m, y) >= (steps_m / slo_m) z``, ``y, z >= 0``; then
    ``X = y / z``. The ratio optimum is kept while a second stage maximises total normalised
    throughput (without it, any scaled-down optimum would do). ``prices[j] = p_j z*`` is
    ``d ratio / d workers[j]`` (``p``: the capacity duals of the transformed LP).
    """

    name = "min_cost"

    def __init__(self, jobs: Jobs, cluster: Cluster, cost: Any, *, slo: Any = None,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        inst = self.inst
        if isinstance(cost, Mapping):
            missing = [t for t in cluster.types if t not in cost]
            if missing:
                raise InputError(f"cost has no entry for type {missing[0]!r}", argument="cost")
            cost = [cost[t] for t in cluster.types]
        self.cost = as_array(cost, "cost", ndim=1, shape=(inst.k,), positive=True)
        self.col_cost = self.cost[inst.col_type] * inst.col_workers
        self.slo_rate = np.zeros(inst.n)
        if slo is not None:
            steps = _steps(jobs, "min_cost with slo")
            try:
                slo_arr = np.array(slo, dtype=float, copy=True)
            except (TypeError, ValueError, OverflowError) as exc:
                raise InputError(f"slo must be a numeric array of seconds ({exc})",
                                 argument="slo") from None
            if slo_arr.shape != (inst.n,):
                raise InputError(f"slo must have shape ({inst.n},), got {slo_arr.shape}",
                                 argument="slo")
            bad = np.isnan(slo_arr) | (slo_arr <= 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"slo[{i}] is {slo_arr[i]}; SLOs must be positive seconds "
                                 "(inf: none)", argument="slo", index=(i,))
            with np.errstate(over="ignore"):
                self.slo_rate = np.where(np.isinf(slo_arr), 0.0, steps / slo_arr)
            if not np.isfinite(self.slo_rate).all():
                i = int(np.flatnonzero(~np.isfinite(self.slo_rate))[0])
                raise InputError(f"slo[{i}] = {slo_arr[i]:g} s is too short to represent the "
                                 f"rate steps / slo", argument="slo", index=(i,))
            short = self.slo_rate > inst.fastest_tp * (1 + 1e-12)
            if short.any():
                i = int(np.flatnonzero(short)[0])
                raise InfeasibleError(
                    f"slo[{i}] is infeasible: job {jobs.ids[i]!r} needs {self.slo_rate[i]:g} "
                    f"steps/s but runs at most {inst.fastest_tp[i]:g} steps/s",
                    status="infeasible")
        self.has_slo = bool((self.slo_rate > 0).any())

    def _extra_rows(self) -> tuple[sp.csr_matrix, np.ndarray] | None:
        if not self.has_slo:
            return None
        rows = np.flatnonzero(self.slo_rate > 0)
        return sp.csr_matrix(self.inst.Tm[rows]), self.slo_rate[rows]

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        raise InputError("min_cost is linear-fractional; it cannot be composed with cvxpy "
                         "constraints or terms (use slo= or method='highs')",
                         argument="constraint")

    def ratio(self, xcol: np.ndarray) -> float:
        """Throughput per unit cost of column allocation ``xcol``."""
        cost = float(self.col_cost @ xcol)
        return float(self.inst.throughput(xcol).sum()) / cost if cost > 0 else 0.0

    def _cc_program(self) -> tuple[LinearProgram, slice]:
        inst = self.inst
        A, lo, up, cap_rows = inst.base_rows()
        rhs = up  # rows A y - rhs z <= 0
        A = sp.hstack([A, sp.csr_matrix(-rhs[:, None])], format="csr")
        blocks = [A, sp.csr_matrix(np.r_[self.col_cost, 0.0][None, :])]
        lows = [np.full(A.shape[0], -np.inf), np.array([1.0])]
        ups = [np.zeros(A.shape[0]), np.array([1.0])]
        if self.has_slo:
            B, rate = self._extra_rows()  # type: ignore[misc]
            blocks.append(sp.hstack([B, sp.csr_matrix(-rate[:, None])], format="csr"))
            lows.append(np.zeros(rate.size))
            ups.append(np.full(rate.size, np.inf))
        c = -np.r_[np.asarray(inst.Tm.sum(axis=0)).ravel(), 0.0]
        lp = LinearProgram.build(c, sp.vstack(blocks, format="csr"), np.concatenate(lows),
                                 np.concatenate(ups), 0.0, np.inf)
        return lp, cap_rows

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        inst = self.inst
        lp, cap_rows = self._cc_program()
        # unit scale: y = x z and z = 1 / cost(x) are of the order of 1 / cost
        kappa = _pow2(float(np.median(self.col_cost)))
        sol = _scaled_solve(lp, solver.backend, "minimum-cost (Charnes-Cooper)",
                            col_unit=np.full(inst.E + 1, 1.0 / kappa))
        solver.used(sol)
        assert sol.x is not None and sol.row_duals is not None
        z = float(sol.x[-1])
        if not z > 0:
            raise SolverError("minimum cost: Charnes-Cooper scale z = 0",
                              backend=solver.backend.name, status="degenerate")
        xcol = self._meet_slos(inst.repair(sol.x[: inst.E] / z))
        self._cc = (lp, sol.row_duals, z, cap_rows)
        r = self.ratio(xcol)
        st = _Linear(np.asarray(inst.Tm.sum(axis=0)).ravel() - r * self.col_cost, "cost ratio")
        cert = self._certify(xcol, solver)
        cert.check(backend=solver.backend.name)
        res = _StageResult(lp, np.r_[xcol, 0.0], sol.row_duals, 0.0, cert, sol.iterations,
                           cap_rows)
        return st, res, r

    def _meet_slos(self, xcol: np.ndarray) -> np.ndarray:
        """Top up jobs whose SLO row the solver left short within its absolute tolerance (a
        rate 1e-11 of the job's throughput is 'met' by x = 0): the missing time goes on the
        job's best column where time and workers are free; the certificate decides."""
        if not self.has_slo:
            return xcol
        need = np.where(self.slo_rate > 0, self.slo_rate - self.inst.throughput(xcol), 0.0)
        return top_up_rows(self.inst, self.inst.Tm, need, self.slo_rate, xcol)

    def _certify(self, xcol: np.ndarray, solver: _StageSolver) -> Certificate:
        lp, duals, _, _ = self._cc
        z = 1.0 / float(self.col_cost @ xcol)
        return lp_certificate(lp, np.r_[xcol * z, z], duals, maximize=True,
                              gap_tol=solver.gap_tol, feas_tol=solver.feas_tol)

    def solve(self, **kw: Any) -> Allocation:  # noqa: D102
        if self.composed or kw.get("method") == "cvxpy":
            raise InputError("min_cost is linear-fractional; it cannot be composed in cvxpy "
                             "(use method='highs')", argument="method")
        t0 = time.perf_counter()
        kw.setdefault("method", "highs")
        wc = kw.pop("work_conserving", None)
        wc = True if wc is None else as_bool(wc, "work_conserving")
        gap_tol = as_tolerance(kw.pop("gap_tol", GAP_TOL), "gap_tol")
        feas_tol = as_tolerance(kw.pop("feas_tol", FEAS_TOL), "feas_tol")
        stage_tol = min(as_tolerance(kw.pop("stage_tol", 1e-9), "stage_tol"), 0.1 * gap_tol)
        as_option(kw.pop("method"), "method", METHODS)
        spec = kw.pop("backend", None)
        spec = "highs" if spec is None else spec
        be = _backend_for(spec, self.inst.E)
        if kw:
            raise InputError(f"unexpected argument {next(iter(kw))!r}", argument=next(iter(kw)))
        solver = _StageSolver(self.inst, be, stage_tol=stage_tol, gap_tol=gap_tol,
                              feas_tol=feas_tol, extra_rows=self._extra_rows(),
                              backend_spec=spec, meet_extra_rows=self._meet_slos)
        st, res, r = self._first_stages(solver)
        certs = [res.cert]
        xcol = res.x[: self.inst.E]
        if wc:
            assert isinstance(st, _Linear)  # min cost's first stage is linear (Charnes-Cooper)
            # keep the ratio: tp(x) - r cost(x) >= -slack (linear in x); the slack is
            # relative to the optimum's throughput (units of steps/s), the row at unit scale.
            # The row is a difference of nearly equal terms at the optimum, so a solver may
            # violate it by its own (absolute) tolerance by more than the certificate allows:
            # then the stage is solved once more with a slack at that tolerance (at most a
            # tenth of gap_tol, so the ratio stays certified)
            tp_opt = float(self.inst.throughput(xcol).sum())
            gam = _pow2(float(np.max(np.abs(st.g), initial=0.0)))
            row = sp.csr_matrix(st.g[None, :] / gam)
            solver.anchor = xcol
            wstage = _Linear(self._wc_objective())
            wres = None
            for keep in (stage_tol, min(0.1 * gap_tol, max(stage_tol, FEAS_TOL))):
                solver.fixed = [(row, np.array([-keep * tp_opt / gam]))]
                try:
                    wres = solver.run(wstage, "work-conserving")
                    break
                except CertificateError:
                    if keep >= 0.1 * gap_tol or keep >= FEAS_TOL:
                        raise
            assert wres is not None
            certs.append(wres.cert)
            xcol = wres.x[: self.inst.E]
        cert = self._certify(xcol, solver).check(backend=be.name)
        certs[0] = cert
        _, duals, z, cap_rows = self._cc
        prices = np.maximum(-duals[cap_rows], 0.0) * z
        stats = SolveStats(backend=solver.backend_names, method="highs",
                           seconds=time.perf_counter() - t0, iterations=solver.iterations,
                           solves=solver.solves, raw_status=solver.raw_status)
        return self._result(xcol, prices, self.ratio(xcol), cert, tuple(certs), stats)


def min_cost(jobs: Jobs, cluster: Cluster, cost: Any, *, slo: Any = None,
             **kw: Any) -> Allocation:
    """Minimum cost (throughput per unit cost), optionally subject to SLOs (gavel.txt §4.2).

    Parameters
    ----------
    cost : array_like (k,) or mapping type -> cost
        Cost per worker per unit time of each type (positive).
    slo : array_like (n,), optional
        Seconds within which each job must finish (``inf``: no SLO); needs
        ``jobs.steps_remaining``. Infeasible SLOs raise :class:`fairalloc.InfeasibleError`.

    Returns
    -------
    Allocation
        ``objective``: total throughput per unit cost.

    Examples
    --------
    The K80 gives more steps per dollar:

    >>> import fairalloc as fa
    >>> a = fa.min_cost(fa.Jobs([[40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}),
    ...                 cost={"v100": 3.0, "k80": 0.5})
    >>> a.x.round(6).tolist(), round(a.objective, 6)
    ([[0.0, 1.0]], 20.0)
    """
    return MinCost(jobs, cluster, cost, slo=slo, **_builder_kw(kw)).solve(**kw)
