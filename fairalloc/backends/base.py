"""The small contract every solver backend implements.

A backend declares its capabilities as class attributes, imports its solver lazily, and solves
a :class:`LinearProgram` (LP or MILP in scipy's ``milp``-like matrix form) into an
:class:`LPSolution` with primal values and duals. Backends that cvxpy can drive name the cvxpy
solver explicitly (``cvxpy_solver``): fairalloc never lets cvxpy pick a solver, because cvxpy
silently prefers Gurobi when gurobipy is installed.

Dual sign convention (minimisation, ``row_lower <= A x <= row_upper``,
``col_lower <= x <= col_upper``): ``c - A.T @ row_duals - col_duals = 0`` at an optimum, with
``row_duals[i] >= 0`` when the lower bound of row ``i`` is active and ``<= 0`` when its upper
bound is -- i.e. ``row_duals[i]`` is the derivative of the optimal value with respect to the
active bound.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from ..errors import BackendUnavailableError, InputError

__all__ = ["Backend", "LPSolution", "LinearProgram"]


@dataclass(frozen=True, eq=False)
class LinearProgram:
    """``minimise c @ x`` s.t. ``row_lower <= A @ x <= row_upper``, ``col_lower <= x <= col_upper``.

    Infinite bounds are ``-inf`` / ``inf``. ``integrality[j]`` true makes ``x[j]`` integer.
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
        A = sp.csr_matrix((0, n)) if A is None else sp.csr_matrix(A, dtype=float)
        if A.shape[1] != n:
            raise InputError(f"A has {A.shape[1]} columns but c has {n} entries", argument="A")
        m = A.shape[0]

        def vec(v: np.ndarray | float | None, size: int, default: float) -> np.ndarray:
            if v is None:
                return np.full(size, default)
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
class LPSolution:
    """What a backend returns for a :class:`LinearProgram` (see module doc for dual signs).

    ``status`` is one of ``"optimal"``, ``"time_limit"`` (MILP incumbent found),
    ``"infeasible"``, ``"unbounded"``, ``"error"``; ``raw_status`` is the backend's own string.
    ``mip_dual_bound`` is the solver's best bound for a MILP (``nan`` for an LP).
    """

    status: str
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


class Backend:
    """Base class: capabilities as class attributes, lazy import, explicit solver names.

    Subclasses set :attr:`name`, :attr:`module` (the import that must succeed),
    :attr:`capabilities` (subset of ``{"lp", "milp", "duals", "exp_cone", "cvxpy"}``) and
    :attr:`cvxpy_solver`, and implement :meth:`solve_lp`.
    """

    name: ClassVar[str] = ""
    module: ClassVar[str] = ""
    extra: ClassVar[str] = ""  # pip extra that installs it, e.g. "gurobi"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    cvxpy_solver: ClassVar[str | None] = None

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
        hint = f" (pip install 'fairalloc[{cls.extra}]')" if cls.extra else ""
        return f"backend {cls.name!r} needs the Python package {cls.module!r}{hint}"

    def __init__(self) -> None:
        reason = self.unavailable_reason()
        if reason is not None:
            raise BackendUnavailableError(reason)

    def supports(self, capability: str) -> bool:
        """Whether this backend declares ``capability``."""
        return capability in self.capabilities

    def solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None = None,
        mip_gap: float | None = None,
        threads: int | None = None,
        start: np.ndarray | None = None,
    ) -> LPSolution:
        """Solve ``lp``; never raises on infeasibility (reports it in ``status``).

        ``start`` is an optional MIP start (a point the solver may take as its first
        incumbent); backends that cannot use one ignore it.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        caps = ", ".join(sorted(self.capabilities))
        return f"<{type(self).__name__} {self.name!r}: {caps}>"
