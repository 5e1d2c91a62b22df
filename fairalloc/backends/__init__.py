"""Solver backends behind one small contract (see `fairalloc.backends.base`).

======== ============================ ============================== ==========
name     package                      capabilities                   default for
======== ============================ ============================== ==========
highs    highspy (core)               lp, milp, duals, cvxpy, basis  LP / MILP
clarabel clarabel (core)              lp, duals, exp_cone, cvxpy     conic
gurobi   gurobipy (extra ``gurobi``)  lp, milp, duals, cvxpy         never
pyomo    pyomo (extra ``pyomo``)      lp, milp, duals                never
======== ============================ ============================== ==========

Optional backends are never picked implicitly; `fairalloc.get_backend` raises
`fairalloc.BackendUnavailableError` with the pip command when
one is missing.
"""

from __future__ import annotations

from ..errors import InputError
from .base import (
    USABLE,
    Backend,
    ConicProgram,
    ConicSolution,
    LinearProgram,
    LPBasis,
    LPSolution,
    SolveStatus,
)
from .clarabel import ClarabelBackend
from .gurobi import GurobiBackend
from .highs import HighsBackend
from .pyomo import PyomoBackend

__all__ = [
    "BACKENDS",
    "USABLE",
    "Backend",
    "ClarabelBackend",
    "ConicProgram",
    "ConicSolution",
    "GurobiBackend",
    "HighsBackend",
    "LPBasis",
    "LPSolution",
    "LinearProgram",
    "PyomoBackend",
    "SolveStatus",
    "available_backends",
    "get_backend",
]

BACKENDS: dict[str, type[Backend]] = {
    cls.name: cls for cls in (HighsBackend, ClarabelBackend, GurobiBackend, PyomoBackend)
}


def available_backends() -> list[str]:
    """Names of the backends whose packages are importable here.

    Returns
    -------
    list of str
        The registered backend names (``"highs"``, ``"clarabel"``, ``"gurobi"``, ``"pyomo"``)
        whose solver package imports, in registry order.

    Examples
    --------
    >>> "highs" in available_backends()
    True
    """
    return [name for name, cls in BACKENDS.items() if cls.available()]


def get_backend(backend: str | Backend, *, need: str | None = None,
                solver: str | None = None, presolve: bool | None = None,
                crossover: bool | None = None) -> Backend:
    """Return a backend instance by name (or pass an instance through).

    Parameters
    ----------
    backend : str or Backend
        ``"highs"``, ``"clarabel"``, ``"gurobi"`` or ``"pyomo"``.
    need : str, optional
        A capability the caller requires (``"lp"``, ``"milp"``, ``"exp_cone"``, ``"duals"``,
        ``"cvxpy"``); `fairalloc.InputError` if the backend lacks it.
    solver : str, optional
        The algorithm or sub-solver of a backend that has several, passed to its constructor:
        HiGHS's ``"choose"`` (default), ``"simplex"``, ``"ipm"`` or ``"pdlp"``; Pyomo's solver
        name (default ``"appsi_highs"``). `fairalloc.InputError` for a
        backend instance or a backend without sub-solvers.
    presolve, crossover : bool, optional
        HiGHS only: whether it presolves linear programs, whether its interior point ends
        with crossover (defaults ``True``).

    Returns
    -------
    Backend
        A new instance of the named backend (configured with ``solver``, ``presolve``,
        ``crossover``), or ``backend`` itself when an instance was passed.

    Raises
    ------
    InputError
        An unknown name, options the backend does not take, or a missing ``need``.

    Examples
    --------
    >>> get_backend("highs", need="milp").name
    'highs'
    """
    if isinstance(backend, Backend):
        if solver is not None or presolve is not None or crossover is not None:
            raise InputError("solver=, presolve= and crossover= apply to a backend named by "
                             "string, not an instance", argument="solver")
        inst = backend
    else:
        cls = BACKENDS.get(backend) if isinstance(backend, str) else None
        if cls is None:
            raise InputError(
                f"backend must be one of {sorted(BACKENDS)}; got {backend!r}", argument="backend"
            )
        if presolve is not None or crossover is not None:
            if cls is not HighsBackend:
                raise InputError(f"presolve= and crossover= apply to backend 'highs', not "
                                 f"{backend!r}", argument="presolve")
            inst = HighsBackend(solver=solver or "choose",
                                presolve=True if presolve is None else presolve,
                                crossover=True if crossover is None else crossover)
        elif solver is None:
            inst = cls()
        elif cls in (HighsBackend, PyomoBackend):
            inst = cls(solver=solver)
        else:
            raise InputError(f"backend {backend!r} has no sub-solvers; got solver={solver!r}",
                             argument="solver")
    if need is not None and not inst.supports(need):
        raise InputError(
            f"backend {inst.name!r} cannot solve this program (needs {need!r}; it supports "
            f"{', '.join(sorted(inst.capabilities))})",
            argument="backend",
        )
    return inst
