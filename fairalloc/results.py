"""Result types shared by every formulation: solve statistics, certificates, a base result.

Sign convention for prices
--------------------------
Every ``prices`` array in fairalloc is the vector of **non-negative** Lagrange multipliers of the
supply / capacity constraints ``sum_i x_ij <= s_j`` of a *maximisation* program: ``prices[j]`` is
the marginal increase of the optimal objective per extra unit of resource ``j``
(``d OPT / d s_j``). A price is zero on a resource that is not fully used (complementary
slackness), and positive prices mean the resource is fully allocated (market clearing).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ._display import Table, View, summary_line, to_html, verdict_of
from ._display import fmt as fmt_value
from .errors import CertificateError
from .solvelog import SolveLog, SolveStatus, count_step
from .tolerances import DUAL_RESIDUAL_FACTOR, FEAS_TOL, GAP_TOL

__all__ = ["Certificate", "FrozenArrays", "Result", "SolveStats", "Status", "fill_labels",
           "readonly"]


_CONTAINERS = (np.ndarray, tuple, list, dict)


def readonly(value: Any) -> Any:
    """Return ``value`` with every numpy array in it made read-only (the caller's stay writable).

    Arrays become read-only *views* (the array the caller passed in keeps its own flags); the
    arrays inside tuples, lists and dicts are converted recursively (a container of the same
    type is returned; one holding no array or container is returned as is). Anything else is
    returned unchanged.

    Parameters
    ----------
    value : object
        An array, a (named) tuple, list or dict of them (nested), or anything else.

    Returns
    -------
    object
        ``value`` with its arrays replaced by read-only views.

    Examples
    --------
    >>> a = np.arange(3.0)
    >>> b = readonly(a)
    >>> b.flags.writeable, a.flags.writeable
    (False, True)
    """
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            return value
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, dict):
        if not any(isinstance(v, _CONTAINERS) for v in value.values()):
            return value  # nothing to freeze, no per-item work
        return {k: readonly(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        if not any(isinstance(v, _CONTAINERS) for v in value):
            return value  # e.g. a tuple of job ids
        items = [readonly(v) for v in value]
        if isinstance(value, list):
            return items
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def fill_labels(obj: Any, **sizes: int) -> None:
    """Give each empty label field of a frozen dataclass its default ``(0, ..., size - 1)``.

    Parameters
    ----------
    obj : object
        A frozen dataclass instance, set in place (in its ``__post_init__``).
    **sizes : int
        ``field=size`` for each label field; a field that is already non-empty is kept.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class R:
    ...     ids: tuple = ()
    >>> r = R(); fill_labels(r, ids=3); r.ids
    (0, 1, 2)
    """
    for name, size in sizes.items():
        if not getattr(obj, name):
            object.__setattr__(obj, name, tuple(range(size)))


class FrozenArrays:
    """Mixin for frozen dataclasses: every array field is made read-only after construction.

    Subclasses that define ``__post_init__`` must call ``super().__post_init__()``. Fields named
    in ``LABEL_FIELDS`` hold labels (job ids, good or type names), never arrays: they are left
    as they are (see `fairalloc.results.fill_labels` for their defaults).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Shares(FrozenArrays):
    ...     x: np.ndarray
    >>> a = np.ones(2)
    >>> Shares(a).x.flags.writeable, a.flags.writeable
    (False, True)
    """

    LABEL_FIELDS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name in self.LABEL_FIELDS:
                continue
            value = getattr(self, f.name)
            frozen = readonly(value)
            if frozen is not value:
                object.__setattr__(self, f.name, frozen)


#: The status of a result: the one vocabulary of the library,
#: `fairalloc.SolveStatus` (``Status`` is the same class). A result is
#: ``OPTIMAL`` only when its certificate passed; ``TIME_LIMIT`` / ``ITERATION_LIMIT``: a limit
#: stopped it with a certified-feasible point whose gap is not proven (``certificate.gap`` says
#: how far from optimal it may be); ``SUBOPTIMAL``: a certified-feasible point whose gap target
#: was missed for another reason (a MIP gap limit); ``REPLAYED``: a simulation whose every event
#: was replayed and checked by an independent verifier
#: (`fairalloc.ReplayCheck`).
Status = SolveStatus


@dataclass(frozen=True)
class SolveStats:
    """How a result was computed.

    Parameters
    ----------
    backend : str
        Solver backend(s) used, e.g. ``"clarabel"`` or ``"highs"``.
    method : str
        Algorithm path, e.g. ``"conic"`` or ``"fast"`` (first-order + restricted exact solve).
    seconds : float
        Wall-clock seconds for the whole call (validation, building, solving, certifying).
    iterations : int
        Solver iterations (summed over all solves of the call).
    solves : int
        Number of backend solves the call made.
    raw_status : str
        The last backend solve's own status string (``""`` when no solver ran).
    path : tuple of str
        The named algorithm steps that ran, in order (e.g. ``("structured-level",
        "exact-lp")``), compressed by the solve log (`fairalloc.solvelog`): consecutive
        repeats once, and at most a few entries. Each builder's docstring lists its
        vocabulary. Tests and users read this to see which path produced the result, instead
        of patching internals.
    fallbacks : tuple of str
        Every hand-over from one strategy of the solve plan to the next, as
        ``"from->to: reason"`` (empty when the first strategy tried finished the job).
    step_counts : tuple of (str, int)
        How many times each step ran, in the order steps first ran (`count`).
    classes : int or None
        Number of exact symmetry classes the program was solved over (items -- jobs or
        buyers -- with identical data merged; `fairalloc._symmetry`); ``None`` when the builder
        solved the program item by item. The result is always expanded to the items and
        certified against the original program.

    Examples
    --------
    >>> import fairalloc as fa
    >>> r = fa.max_min_fairness(fa.Jobs([[40.0, 10.0], [12.0, 4.0]]),
    ...                         fa.Cluster({"v100": 1, "k80": 1}))
    >>> r.stats.backend, r.stats.solves >= 1, r.stats.path[-1] in r.stats.path
    ('highs', True, True)
    """

    backend: str
    method: str
    seconds: float
    iterations: int = 0
    solves: int = 1
    raw_status: str = ""
    path: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    classes: int | None = None
    step_counts: tuple[tuple[str, int], ...] = ()

    def count(self, step: str) -> int:
        """How many times the named step ran (`step_counts`; without them, its entries in
        `path`).

        Examples
        --------
        >>> SolveStats("highs", "fast", 0.1, path=("structured-level", "exact-lp"),
        ...            step_counts=(("structured-level", 1), ("exact-lp", 2))).count("exact-lp")
        2
        """
        if not self.step_counts:
            return self.path.count(step)
        return count_step(self.step_counts, step)

    @classmethod
    def from_log(cls, log: SolveLog, *, method: str, seconds: float,
                 classes: int | None = None) -> SolveStats:
        """The statistics of a call whose solves were recorded in ``log``."""
        return cls(backend=log.backend, method=method, seconds=seconds,
                   iterations=log.iterations, solves=log.solves, raw_status=log.raw_status,
                   path=log.path, fallbacks=log.fallbacks, classes=classes,
                   step_counts=log.step_counts)


@dataclass(frozen=True)
class Certificate:
    """An optimality certificate computed independently of the solver.

    ``primal_residual`` is the largest violation of any constraint by the returned allocation,
    relative to the constraint's own scale (``0`` means exactly feasible). ``gap`` is the absolute
    duality gap ``dual_bound - primal_value`` for a maximisation (``primal_value - dual_bound``
    for a minimisation), where the dual bound is evaluated from the returned prices alone by a
    closed-form dual function: weak duality makes it a valid bound on the optimum, so a small gap
    proves the allocation optimal whatever the solver claimed. For mixed-integer programs, where
    no convex dual exists, ``gap`` is computed from the solver's best bound (``kind="milp"``).

    Parameters
    ----------
    kind : str
        Which certificate: ``"eisenberg_gale"``, ``"lp"``, ``"conic"``, ``"milp"`` or
        ``"fifo-knapsack"`` (FIFO's forced arrival-order stages, each a fractional knapsack
        bounded by its closed-form dual: `fairalloc.throughput.ordering.forced_certificate`).
    primal_value : float
        Objective of the returned allocation, recomputed from the allocation.
    dual_bound : float
        Bound on the optimum implied by the returned prices (``nan`` if none).
    gap : float
        Absolute duality gap (>= 0 up to rounding).
    primal_residual : float
        Largest relative constraint violation of the returned allocation.
    dual_residual : float
        Largest violation of dual feasibility (0 where the dual function is closed-form).
    gap_tol, feas_tol : float
        Tolerances the certificate was checked against (see
        `fairalloc.tolerances`).
    scale : float or None
        The magnitude the gap is judged against, in the objective's own units and computed from
        the problem's data (e.g. the total budget for an Eisenberg-Gale program, whose gap is a
        sum of budget-weighted terms). ``None`` means the standard relative gap
        ``gap / max(|primal_value|, |dual_bound|)``. Either way the verdict does not change when
        the data are rescaled (budgets, supply, utilities, weights, throughputs).

    Notes
    -----
    `fairalloc.results.Certificate.ok` is a proof, never true by construction: it needs finite
    tolerances, a finite gap and residuals, and ``relative_gap <= gap_tol``.

    Examples
    --------
    >>> c = Certificate("lp", primal_value=2.0, dual_bound=2.0 + 1e-9, gap=1e-9,
    ...                 primal_residual=0.0)
    >>> c.ok, c.relative_gap < 1e-9
    (True, True)
    >>> Certificate("lp", 1.0, 2.0, 1.0, 0.0).ok        # a gap of 50%: not a proof
    False
    """

    kind: str
    primal_value: float
    dual_bound: float
    gap: float
    primal_residual: float
    dual_residual: float = 0.0
    gap_tol: float = GAP_TOL
    feas_tol: float = FEAS_TOL
    scale: float | None = None

    @property
    def relative_gap(self) -> float:
        """``gap / scale``, with ``scale = max(|primal_value|, |dual_bound|)`` when not given.

        ``0`` when the gap is exactly zero, ``inf`` when it is positive on a zero scale.
        """
        gap = self.gap
        if not math.isfinite(gap):
            return math.inf
        if gap <= 0.0:
            return 0.0
        if self.scale is not None:
            scale = float(self.scale)
        else:
            vals = [abs(v) for v in (self.primal_value, self.dual_bound) if math.isfinite(v)]
            scale = max(vals, default=0.0)
        if not (math.isfinite(scale) and scale > 0.0):
            return math.inf
        return gap / scale

    @property
    def ok(self) -> bool:
        """Whether the gap and both residuals are proven within (finite) tolerances."""
        tols_valid = all(
            math.isfinite(t) and t >= 0.0 for t in (self.gap_tol, self.feas_tol)
        )
        return (
            tols_valid
            and math.isfinite(self.gap)
            and math.isfinite(self.primal_residual)
            and math.isfinite(self.dual_residual)
            and self.relative_gap <= self.gap_tol
            and self.primal_residual <= self.feas_tol
            and self.dual_residual <= max(self.feas_tol, FEAS_TOL * DUAL_RESIDUAL_FACTOR)
        )

    def check(self, *, backend: str | None = None) -> Certificate:
        """Return ``self`` if `fairalloc.results.Certificate.ok`, else raise
        `fairalloc.CertificateError`."""
        if not self.ok:
            raise CertificateError(
                f"certificate failed ({self.kind}): relative gap {self.relative_gap:.3g} "
                f"(tol {self.gap_tol:g}), primal residual {self.primal_residual:.3g} "
                f"(tol {self.feas_tol:g}), dual residual {self.dual_residual:.3g}",
                certificate=self,
                backend=backend,
            )
        return self

    def __repr__(self) -> str:
        return (
            f"Certificate({self.kind}, gap={self.gap:.2e}, rel_gap={self.relative_gap:.2e}, "
            f"primal_residual={self.primal_residual:.2e}, dual_residual={self.dual_residual:.2e}, "
            f"ok={self.ok})"
        )


@dataclass(frozen=True, repr=False)
class Result(FrozenArrays):
    """Base class of every result: objective, status, statistics and certificate.

    Subclasses add their arrays (allocation, prices, ...); every array field is read-only.
    Every result names what it allocates ``allocation`` (rows: jobs, buyers or agents; columns:
    types, goods, GPUs or rounds), whatever its family also calls it.

    Display: ``repr(result)`` is one summary line (sizes, objective, status, certificate
    verdict, seconds), never the arrays; in a notebook ``_repr_html_`` shows a compact table of
    the allocation labelled with the job ids and type names (the first rows, then "… N more
    rows"), the prices, and the certificate verdict with its gap, residual and status.

    Parameters
    ----------
    objective : float
        The objective value of the returned point.
    status : Status
        ``OPTIMAL`` only when ``certificate.ok`` (see `Status`).
    stats : SolveStats
        How the result was computed.
    certificate : Certificate
        The independent optimality certificate.

    Raises
    ------
    CertificateError
        On construction with ``status=Status.OPTIMAL`` and a certificate that is not ``ok``:
        an unproven result can never be reported as optimal.

    Examples
    --------
    >>> cert = Certificate("lp", 1.0, 1.0, 0.0, 0.0)
    >>> r = Result(1.0, Status.OPTIMAL, SolveStats("highs", "exact", 0.01), cert)
    >>> r.status, r.certificate.ok
    (<SolveStatus.OPTIMAL: 'optimal'>, True)
    >>> Result(1.0, Status.OPTIMAL, SolveStats("highs", "exact", 0.01),
    ...        Certificate("lp", 1.0, 2.0, 1.0, 0.0))
    Traceback (most recent call last):
    ...
    fairalloc.errors.CertificateError: ...
    """

    objective: float
    status: Status
    stats: SolveStats
    certificate: Certificate

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.status == Status.OPTIMAL and not self.certificate.ok:
            self.certificate.check(backend=self.stats.backend)

    @property
    def gap(self) -> float:
        """The certified absolute duality gap (shortcut for ``certificate.gap``)."""
        return self.certificate.gap

    def _facts(self) -> list[tuple[str, str]]:
        """The facts of the summary line; subclasses put their sizes first."""
        return [("objective", fmt_value(self.objective)),
                ("gap", f"{self.certificate.gap:.2e}")]

    def _tables(self) -> list[Table]:
        """The tables of the HTML view (the allocation, prices, ...); none by default."""
        return []

    def _view(self, tables: bool = True) -> View:
        return View(type(self).__name__, self._facts(),
                    verdict_of(self.certificate, self.status),
                    self._tables() if tables else ())

    def __repr__(self) -> str:
        return summary_line(self._view(tables=False), self.stats.seconds)

    def _repr_html_(self) -> str:
        """The notebook view: allocation with ids and type names, prices, verdict."""
        return to_html(self._view(), self.stats.seconds)

    def to_frame(self) -> Any:
        """Return the result as a `pandas.DataFrame` (requires pandas)."""
        raise NotImplementedError(f"{type(self).__name__} has no tabular form")


def require_pandas() -> Any:
    """Import pandas or raise an ImportError that says how to install it."""
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - exercised only without pandas
        raise ImportError('to_frame() needs pandas: pip install ".[plot]" in the checkout') from exc
    return pd
