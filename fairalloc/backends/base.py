"""The small contract every solver backend implements.

A backend declares its capabilities as class attributes, imports its solver lazily, and solves
a `fairalloc.backends.LinearProgram` (LP or MILP in scipy's ``milp``-like matrix
form) into an `fairalloc.backends.LPSolution` with primal values and duals. Composed
cvxpy programs are solved by `fairalloc._cvxpy.solve_cvxpy` with the solver named explicitly:
fairalloc never lets cvxpy pick a solver, because cvxpy silently prefers Gurobi when gurobipy is
installed.

Every backend maps its own status strings onto one canonical
`fairalloc.backends.SolveStatus` (a table per backend, ``STATUS_MAP``), and one rule
decides what may be used: a solve whose status is in `USABLE` returned a point, and the caller's
*independent certificate* decides whether it is accepted -- an "inaccurate" or time-limited point
that certifies is as good as any other, one that does not is an error. Backends print nothing unless
``verbose=True``; an option a backend cannot honour triggers a
`fairalloc.FairallocWarning`; any exception the solver package
raises becomes a `fairalloc.SolverError` with the cause chained.

Dual sign convention (minimisation, ``row_lower <= A x <= row_upper``,
``col_lower <= x <= col_upper``): ``c - A.T @ row_duals - col_duals = 0`` at an optimum, with
``row_duals[i] >= 0`` when the lower bound of row ``i`` is active and ``<= 0`` when its upper
bound is -- i.e. ``row_duals[i]`` is the derivative of the optimal value with respect to the
active bound.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .._deprecate import renamed_kwargs
from .._validation import as_bool, as_positive_int, as_time_limit
from ..errors import (
    BackendUnavailableError,
    FairallocError,
    FairallocWarning,
    InputError,
    foreign_error,
)
from ..solvelog import LIMITED, SolveStatus

__all__ = ["BASIC", "LIMITED", "LOWER", "UPPER", "USABLE", "Backend", "ConicProgram",
           "ConicSolution", "LPBasis", "LPSolution", "LinearProgram", "SolveStatus"]


#: Status codes of a variable or row in a basis built by `Backend.basis_from_statuses`:
#: nonbasic at its lower bound, basic, nonbasic at its upper bound
LOWER, BASIC, UPPER = 0, 1, 2

#: Statuses whose point is handed to the caller's certificate (the one acceptance rule).
USABLE: frozenset[SolveStatus] = frozenset(
    {SolveStatus.OPTIMAL, SolveStatus.INACCURATE, SolveStatus.TIME_LIMIT,
     SolveStatus.ITERATION_LIMIT}
)


@dataclass(frozen=True, eq=False)
class LinearProgram:
    """``minimise c @ x`` s.t. ``row_lower <= A @ x <= row_upper``, ``col_lower <= x <= col_upper``.

    Infinite bounds are ``-inf`` / ``inf``. ``integrality[j]`` true makes ``x[j]`` integer.
    `fairalloc.backends.LinearProgram.build` fills these from scalars and ``None``.

    Parameters
    ----------
    c : numpy.ndarray, shape (n,)
        Objective coefficients (minimised).
    A : scipy.sparse.csr_matrix, shape (m, n)
        Constraint matrix.
    row_lower, row_upper : numpy.ndarray, shape (m,)
        Bounds of ``A @ x``.
    col_lower, col_upper : numpy.ndarray, shape (n,)
        Bounds of ``x``.
    integrality : numpy.ndarray of bool, shape (n,), optional
        Which variables are integer (``None``: an LP).
    offset : float, default 0.0
        A constant added to the objective.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import HighsBackend
    >>> lp = LinearProgram.build([-1.0, -2.0], [[1.0, 1.0]], row_upper=1.0, col_upper=1.0)
    >>> lp.shape, lp.is_mip
    ((1, 2), False)
    >>> sol = HighsBackend().solve_lp(lp)
    >>> sol.status, float(sol.x[1]), sol.objective
    (<SolveStatus.OPTIMAL: 'optimal'>, 1.0, -2.0)
    """

    c: np.ndarray
    A: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray | None = None
    offset: float = 0.0

    @classmethod
    def build(
        cls,
        c: np.ndarray,
        A: sp.spmatrix | np.ndarray | None = None,
        row_lower: np.ndarray | float | None = None,
        row_upper: np.ndarray | float | None = None,
        col_lower: np.ndarray | float | None = 0.0,
        col_upper: np.ndarray | float | None = None,
        integrality: np.ndarray | None = None,
        offset: float = 0.0,
    ) -> LinearProgram:
        """Normalise arguments (scalars broadcast, ``None`` = unbounded) into a LinearProgram."""
        c = np.asarray(c, dtype=float).ravel()
        n = c.size
        if A is None:
            A = sp.csr_matrix((0, n))
        elif not (isinstance(A, sp.csr_matrix) and A.dtype == np.float64):
            A = sp.csr_matrix(A, dtype=float)  # (a float CSR matrix is taken as it is)
        if A.shape[1] != n:
            raise InputError(f"A has {A.shape[1]} columns but c has {n} entries", argument="A")
        m = A.shape[0]

        def vec(v: np.ndarray | float | None, size: int, default: float) -> np.ndarray:
            if v is None:
                return np.full(size, default)
            if isinstance(v, np.ndarray) and v.shape == (size,):  # (the common case, fast)
                return v.astype(float)  # a copy
            return np.broadcast_to(np.asarray(v, dtype=float), (size,)).copy()

        integ = None
        if integrality is not None:
            integ = np.broadcast_to(np.asarray(integrality, dtype=bool), (n,)).copy()
            if not integ.any():
                integ = None
        return cls(
            c=c,
            A=A,
            row_lower=vec(row_lower, m, -np.inf),
            row_upper=vec(row_upper, m, np.inf),
            col_lower=vec(col_lower, n, -np.inf),
            col_upper=vec(col_upper, n, np.inf),
            integrality=integ,
            offset=float(offset),
        )

    @property
    def is_mip(self) -> bool:
        """Whether any variable is integer."""
        return self.integrality is not None and bool(self.integrality.any())

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return self.A.shape  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class LPBasis:
    """A simplex basis a backend ended an LP with (``solve_lp(..., keep_basis=True)``), for a
    warm start of an LP of the same ``shape`` (rows, columns) by the same backend
    (``solve_lp(..., basis=)``). ``raw`` is the backend's own object, never converted element
    by element; ``extend`` (the backend's) extends it to more columns. A basis says only
    which variables are basic or at which bound, so it stays meaningful when the LP's
    coefficients and bounds change (a Dinkelbach sequence) and when rows or columns are
    rescaled.

    Parameters
    ----------
    shape : tuple of int
        ``(rows, columns)`` of the LP it belongs to.
    raw : object
        The backend's own basis object.
    backend : str
        The backend's name; only that backend can warm-start from it.
    extend : callable, optional
        ``extend(basis, old, new) -> LPBasis``: the backend's extension to more columns
        (`with_columns`); ``None`` when it cannot extend.
    carry : callable, optional
        ``carry(basis, cols, rows) -> LPBasis``: the backend's carrying of the basis to another
        LP by column and row index (`carried`); ``None`` when it cannot carry.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import HighsBackend
    >>> lp = LinearProgram.build([-1.0], [[1.0]], row_upper=1.0)
    >>> basis = HighsBackend().solve_lp(lp, keep_basis=True).extra["basis"]
    >>> basis.shape, basis.backend
    ((1, 1), 'highs')
    """

    shape: tuple[int, int]
    raw: Any
    backend: str
    extend: Any = None
    carry: Any = None

    def with_columns(self, old: np.ndarray, new: np.ndarray) -> LPBasis:
        """This basis of an LP over the columns ``old`` (a boolean mask over some larger
        column set) extended to the columns ``new`` (a superset, same rows): the added
        columns are nonbasic at their lower bound, so a feasible basic point stays feasible
        and the primal simplex goes on from it (column generation).

        Examples
        --------
        >>> import numpy as np
        >>> from fairalloc.backends import HighsBackend
        >>> lp = LinearProgram.build(np.array([-1.0]), np.array([[1.0]]), -np.inf,
        ...                          np.array([1.0]), 0.0, np.inf)
        >>> b = HighsBackend().solve_lp(lp, keep_basis=True).extra["basis"]
        >>> b.with_columns(np.array([True, False]), np.array([True, True])).shape
        (1, 2)
        """
        if self.extend is None:
            raise InputError(f"a basis of backend {self.backend!r} cannot be extended",
                             argument="basis")
        return self.extend(self, old, new)  # type: ignore[no-any-return]

    def carried(self, cols: np.ndarray, rows: np.ndarray, *, repair: bool = True
                ) -> LPBasis | None:
        """This basis carried to another LP whose column ``i`` is this LP's column
        ``cols[i]`` and whose row ``r`` is this LP's row ``rows[r]`` (``-1``: new): a new
        column starts nonbasic at its lower bound, a new row's slack basic, and slacks (then
        columns) are made basic or nonbasic so that there are as many basic variables as rows
        (a warm start of the next round's LP, `fairalloc.rounds.state.RoundBases`). With
        ``repair=False`` no status is changed: ``None`` unless the carried statuses already
        hold one basic variable per row (a restricted master whose rows and columns only grew
        starts from its predecessor's basis, `fairalloc.throughput.structured.floor`).

        Examples
        --------
        >>> import numpy as np
        >>> from fairalloc.backends import HighsBackend
        >>> lp = LinearProgram.build([-1.0, -1.0], [[1.0, 1.0]], row_upper=1.0)
        >>> b = HighsBackend().solve_lp(lp, keep_basis=True).extra["basis"]
        >>> b.carried(np.array([1, -1, 0]), np.array([0, -1])).shape
        (2, 3)
        """
        if self.carry is None:
            raise InputError(f"a basis of backend {self.backend!r} cannot be carried",
                             argument="basis")
        return self.carry(self, np.asarray(cols), np.asarray(rows),  # type: ignore[no-any-return]
                          repair)


@dataclass(frozen=True, eq=False)
class LPSolution:
    """What a backend returns for a `fairalloc.backends.LinearProgram` (see module
    doc for dual signs).

    ``status`` is a `fairalloc.backends.SolveStatus` (a ``str``: ``sol.status ==
    "optimal"`` works); ``raw_status`` is the backend's own string. ``x`` is present exactly when
    the status is in `USABLE`. ``mip_dual_bound`` is the solver's best bound for a MILP (``nan`` for
    an LP).

    Parameters
    ----------
    status : SolveStatus
        The canonical status.
    x : numpy.ndarray or None
        The primal point (``None`` unless the status is usable).
    objective : float
        ``c @ x + offset``.
    row_duals, col_duals : numpy.ndarray, optional
        Duals of the rows and of the column bounds (module doc for signs; ``None`` without
        the ``duals`` capability or for a MILP).
    iterations : int, default 0
        Solver iterations.
    seconds : float, default 0.0
        Seconds of the solver call.
    mip_dual_bound : float, default nan
        The MILP's best bound.
    raw_status : str, default ""
        The backend's own status string.
    backend : str, default ""
        The backend's name.
    extra : dict, default {}
        Backend-specific results (e.g. ``"basis"``: an `LPBasis` with ``keep_basis=True``).

    Examples
    --------
    >>> from fairalloc.backends import HighsBackend
    >>> lp = LinearProgram.build([1.0], [[1.0]], row_lower=2.0)
    >>> sol = HighsBackend().solve_lp(lp)
    >>> sol.usable, sol.x.tolist(), sol.row_duals.tolist()
    (True, [2.0], [1.0])
    """

    status: SolveStatus
    x: np.ndarray | None
    objective: float
    row_duals: np.ndarray | None = None
    col_duals: np.ndarray | None = None
    iterations: int = 0
    seconds: float = 0.0
    mip_dual_bound: float = float("nan")
    raw_status: str = ""
    backend: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        """Whether a point came back for the caller's certificate to judge."""
        return self.status in USABLE and self.x is not None


@dataclass(frozen=True, eq=False)
class ConicProgram:
    """``minimise c @ x`` s.t. ``A @ x + s = b`` with ``s`` in the product cone ``K``.

    ``K`` is, in this order: the zero cone of dimension ``zero``, the non-negative orthant of
    dimension ``nonneg``, then ``exp`` exponential cones ``{(r, s, t): s e^(r/s) <= t, s > 0}``
    (three rows each) -- Clarabel's (and cvxpy's) standard form.

    Parameters
    ----------
    c : numpy.ndarray, shape (n,)
        Objective coefficients (minimised).
    A : scipy.sparse.csc_matrix, shape (m, n)
        Constraint matrix, rows in the cone order above.
    b : numpy.ndarray, shape (m,)
        Right-hand side.
    zero, nonneg, exp : int, default 0
        Dimension of the zero cone, of the orthant, and the number of exponential cones
        (``m = zero + nonneg + 3 exp``, else `fairalloc.InputError`).

    Examples
    --------
    ``max log(x)`` with ``x <= 2``: over ``(x, t)``, ``min -t`` s.t. ``2 - x >= 0`` and
    ``(t, 1, x)`` in the exponential cone (``e^t <= x``).

    >>> import numpy as np, scipy.sparse as sp
    >>> from fairalloc.backends import ClarabelBackend
    >>> A = sp.csc_matrix(np.array([[1.0, 0.0], [0.0, -1.0], [0.0, 0.0], [-1.0, 0.0]]))
    >>> prog = ConicProgram(np.array([0.0, -1.0]), A, np.array([2.0, 0.0, 1.0, 0.0]),
    ...                     nonneg=1, exp=1)
    >>> sol = ClarabelBackend().solve_conic(prog)
    >>> sol.status, round(float(sol.x[0]), 6), round(-sol.objective, 6)
    (<SolveStatus.OPTIMAL: 'optimal'>, 2.0, 0.693147)
    """

    c: np.ndarray
    A: sp.csc_matrix
    b: np.ndarray
    zero: int = 0
    nonneg: int = 0
    exp: int = 0

    def __post_init__(self) -> None:
        rows = self.zero + self.nonneg + 3 * self.exp
        if self.A.shape != (rows, self.c.size) or self.b.size != rows:
            raise InputError(
                f"conic program: A is {self.A.shape}, b has {self.b.size} rows, c has "
                f"{self.c.size} entries, the cones need {rows} rows", argument="A")


@dataclass(frozen=True, eq=False)
class ConicSolution:
    """What a backend returns for a `fairalloc.backends.ConicProgram`: primal ``x``,
    slack ``s`` and dual ``z`` (``z`` in the dual cone, ``A.T @ z + c = 0`` at an optimum); ``None``
    unless `fairalloc.backends.ConicSolution.usable`. ``extra["raw"]`` holds the solver's
    own solution object.

    Parameters
    ----------
    status : SolveStatus
        The canonical status.
    x, s, z : numpy.ndarray or None
        Primal point, slack and dual.
    objective : float
        ``c @ x``.
    iterations : int, default 0
        Solver iterations.
    seconds : float, default 0.0
        Seconds of the solver call.
    raw_status : str, default ""
        The backend's own status string.
    backend : str, default ""
        The backend's name.
    extra : dict, default {}
        Backend-specific results.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fairalloc.backends import ClarabelBackend
    >>> prog = ConicProgram(np.array([1.0]), sp.csc_matrix(np.array([[-1.0]])),
    ...                     np.array([-3.0]), nonneg=1)           # min x s.t. x >= 3
    >>> sol = ClarabelBackend().solve_conic(prog)
    >>> sol.usable, round(float(sol.x[0]), 6), round(float(sol.z[0]), 6)
    (True, 3.0, 1.0)
    """

    status: SolveStatus
    x: np.ndarray | None
    s: np.ndarray | None
    z: np.ndarray | None
    objective: float
    iterations: int = 0
    seconds: float = 0.0
    raw_status: str = ""
    backend: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        """Whether a point came back for the caller's certificate to judge."""
        return self.status in USABLE and self.x is not None


def _wrap_foreign(name: str, call: Any) -> Any:
    """Run ``call()``; a non-fairalloc exception becomes SolverError with the cause chained."""
    try:
        return call()
    except FairallocError:
        raise
    except Exception as exc:  # solver packages raise their own types (and linear algebra's)
        raise foreign_error(exc, f"backend {name!r}", backend=name) from exc


class Backend:
    """Base class: capabilities as class attributes, lazy import, explicit solver names.

    Subclasses set `name`, `module` (the import that must succeed),
    `capabilities` (subset of ``{"lp", "milp", "duals", "exp_cone", "cvxpy"}``),
    `options` (the solve options they honour), `STATUS_MAP` (their raw statuses to
    `fairalloc.backends.SolveStatus`), and implement `_solve_lp` (and
    `_solve_conic` with the ``exp_cone`` capability). The public
    `fairalloc.backends.Backend.solve_lp` /
    `fairalloc.backends.Backend.solve_conic` validate the options, warn about ignored
    ones and turn foreign exceptions into `fairalloc.SolverError`.

    Raises
    ------
    BackendUnavailableError
        On construction when the solver package cannot be imported (`unavailable_reason`).

    Examples
    --------
    >>> from fairalloc.backends import get_backend
    >>> b = get_backend("clarabel")
    >>> isinstance(b, Backend), b.supports("exp_cone"), b.supports("milp")
    (True, True, False)
    """

    name: ClassVar[str] = ""
    module: ClassVar[str] = ""
    extra: ClassVar[str] = ""  # pip extra that installs it, e.g. "gurobi"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    options: ClassVar[frozenset[str]] = frozenset({"time_limit", "verbose"})
    STATUS_MAP: ClassVar[dict[str, SolveStatus]] = {}

    @classmethod
    def canonical_status(cls, raw: str) -> SolveStatus:
        """The canonical status of the backend's raw status string (``ERROR`` if unknown)."""
        return cls.STATUS_MAP.get(raw, SolveStatus.ERROR)

    @classmethod
    def available(cls) -> bool:
        """Whether the solver's Python package can be imported (and licensed, where needed)."""
        try:
            importlib.import_module(cls.module)
        except Exception:
            return False
        return True

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the backend cannot be used here, or ``None`` when it can."""
        if cls.available():
            return None
        hint = f' (pip install ".[{cls.extra}]" in the fairalloc checkout)' if cls.extra else ""
        return f"backend {cls.name!r} needs the Python package {cls.module!r}{hint}"

    def __init__(self) -> None:
        reason = self.unavailable_reason()
        if reason is not None:
            raise BackendUnavailableError(reason)

    def supports(self, capability: str) -> bool:
        """Whether this backend declares ``capability``."""
        return capability in self.capabilities

    def basis_from_statuses(self, shape: tuple[int, int], col_status: np.ndarray,
                            row_status: np.ndarray) -> LPBasis | None:
        """A starting basis for an LP of ``shape`` (rows, columns) from each column's and row's
        status (`LOWER`, `BASIC`, `UPPER`; a row's status is that of its activity), a crash
        basis a caller built from what it knows of the optimum. ``None`` where the backend
        has no ``basis`` capability or the statuses do not hold one basic variable per row.

        Examples
        --------
        >>> import numpy as np
        >>> from fairalloc.backends import HighsBackend, LinearProgram
        >>> lp = LinearProgram.build([-1.0, -2.0], [[1.0, 1.0]], row_upper=1.0)
        >>> be = HighsBackend(solver="simplex")
        >>> b = be.basis_from_statuses(lp.shape, np.array([LOWER, BASIC]), np.array([UPPER]))
        >>> sol = be.solve_lp(lp, basis=b)
        >>> sol.x.tolist(), sol.iterations
        ([0.0, 1.0], 0)
        """
        col_status, row_status = np.asarray(col_status), np.asarray(row_status)
        if (not self.supports("basis") or col_status.shape != (shape[1],)
                or row_status.shape != (shape[0],)
                or int((col_status == BASIC).sum() + (row_status == BASIC).sum()) != shape[0]):
            return None
        return self._status_basis(shape, col_status, row_status)

    def _status_basis(self, shape: tuple[int, int], col_status: np.ndarray,
                      row_status: np.ndarray) -> LPBasis | None:
        """The backend's own basis object for `basis_from_statuses` (checked there)."""
        return None

    def _check_options(self, given: dict[str, Any]) -> None:
        ignored = sorted(k for k, v in given.items() if v not in (None, False)
                         and k not in self.options)
        if ignored:
            shown = ", ".join("gap_tol" if k == "mip_gap" else k for k in ignored)
            warnings.warn(f"backend {self.name!r} ignores the option(s) {shown}",
                          FairallocWarning, stacklevel=3)

    @renamed_kwargs(mip_gap="gap_tol")
    def solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None = None,
        gap_tol: float | None = None,
        threads: int | None = None,
        start: np.ndarray | None = None,
        basis: LPBasis | None = None,
        keep_basis: bool = False,
        verbose: bool = False,
        node_limit: int | None = None,
    ) -> LPSolution:
        """Solve ``lp``; never raises on infeasibility (reports it in ``status``).

        ``gap_tol`` is a MILP's relative gap target (the deprecated spelling ``mip_gap`` still
        works with a ``DeprecationWarning``). ``start`` is an optional MIP start (a point the
        solver may take as its first incumbent). With the ``basis`` capability, ``basis`` (an
        `LPBasis` this backend returned for an LP of the same shape; another shape is ignored)
        starts the simplex from it (``extra["warm"]`` says whether it was used), and
        ``keep_basis`` returns the final basis in ``extra["basis"]`` (an interior point then
        ends with crossover). ``node_limit`` (MILPs) stops branch and bound after that many
        nodes with the best point found (status ``TIME_LIMIT``): a work limit, so unlike
        ``time_limit`` the outcome does not depend on the machine's speed or load. Options the
        backend cannot honour are ignored with a `fairalloc.FairallocWarning`; nothing is
        printed unless ``verbose``.

        Raises
        ------
        InputError
            For an invalid option; `fairalloc.SolverError` if the solver
            package raises.
        """
        if not self.supports("milp" if lp.is_mip else "lp"):
            raise InputError(f"backend {self.name!r} cannot solve "
                             f"{'mixed-integer' if lp.is_mip else 'linear'} programs",
                             argument="backend")
        time_limit = as_time_limit(time_limit)
        if gap_tol is not None:
            from .._validation import as_finite_float

            gap_tol = as_finite_float(gap_tol, "gap_tol", lo=0.0)
        if threads is not None:
            threads = as_positive_int(threads, "threads")
        if node_limit is not None:
            node_limit = as_positive_int(node_limit, "node_limit")
        verbose = as_bool(verbose, "verbose")
        keep_basis = as_bool(keep_basis, "keep_basis")
        if basis is not None and not isinstance(basis, LPBasis):
            raise InputError(f"basis must be an LPBasis, not {type(basis).__name__}",
                             argument="basis")
        if (basis is not None or keep_basis) and lp.is_mip:
            raise InputError("a basis warm-starts linear programs only (it means nothing to a "
                             "MILP's branch and bound)", argument="basis")
        # the backends' option sets keep the solver-facing name mip_gap
        self._check_options({"time_limit": time_limit, "mip_gap": gap_tol if lp.is_mip else None,
                             "threads": threads, "start": start is not None and lp.is_mip,
                             "verbose": verbose,
                             "node_limit": node_limit if lp.is_mip else None})
        if not self.supports("basis"):
            if basis is not None or keep_basis:
                warnings.warn(f"backend {self.name!r} has no basis capability: basis and "
                              "keep_basis are ignored", FairallocWarning, stacklevel=2)
            basis, keep_basis = None, False
        elif basis is not None and (basis.backend != self.name or basis.shape != lp.shape):
            basis = None  # another backend's or another shape's: a cold solve
        # a backend that does not list "node_limit" in its options is not handed it (it was
        # warned about above), so its _solve_lp keeps the signature it had
        limits = {"node_limit": node_limit} if "node_limit" in self.options else {}
        return _wrap_foreign(self.name, lambda: self._solve_lp(
            lp, time_limit=time_limit, mip_gap=gap_tol, threads=threads, start=start,
            verbose=verbose, basis=basis, keep_basis=keep_basis, **limits))

    def _solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None,
        mip_gap: float | None,
        threads: int | None,
        start: np.ndarray | None,
        verbose: bool,
        basis: LPBasis | None = None,
        keep_basis: bool = False,
    ) -> LPSolution:
        raise NotImplementedError

    def solve_conic(
        self,
        prog: ConicProgram,
        *,
        tol: float = 1e-9,
        time_limit: float | None = None,
        verbose: bool = False,
        settings: dict[str, Any] | None = None,
    ) -> ConicSolution:
        """Solve a conic program (needs the ``exp_cone`` capability); never raises on
        infeasibility (reports it in ``status``). ``settings`` are backend-specific solver
        settings by name (e.g. Clarabel's ``direct_solve_method``).

        Raises
        ------
        InputError
            If the backend has no conic solver or an option is invalid;
            `fairalloc.SolverError` if the solver package raises.
        """
        if not self.supports("exp_cone"):
            raise InputError(f"backend {self.name!r} has no exponential-cone solver (use "
                             f"backend='clarabel')", argument="backend")
        time_limit = as_time_limit(time_limit)
        verbose = as_bool(verbose, "verbose")
        return _wrap_foreign(self.name, lambda: self._solve_conic(
            prog, tol=tol, time_limit=time_limit, verbose=verbose, settings=settings or {}))

    def _solve_conic(self, prog: ConicProgram, *, tol: float, time_limit: float | None,
                     verbose: bool, settings: dict[str, Any]) -> ConicSolution:
        raise NotImplementedError

    def __repr__(self) -> str:
        caps = ", ".join(sorted(self.capabilities))
        return f"<{type(self).__name__} {self.name!r}: {caps}>"
