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
import enum
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import CertificateError

__all__ = ["Certificate", "Result", "SolveStats", "Status"]


class Status(enum.StrEnum):
    """Status of a returned result.

    ``OPTIMAL``: the certificate proves optimality to the requested tolerance.
    ``TIME_LIMIT``: (mixed-integer programs only) the time limit was reached with a feasible,
    certified-feasible incumbent; ``certificate.gap`` says how far from optimal it may be.
    """

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"


@dataclass(frozen=True)
class SolveStats:
    """How a result was computed.

    Attributes
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
    """

    backend: str
    method: str
    seconds: float
    iterations: int = 0
    solves: int = 1


@dataclass(frozen=True)
class Certificate:
    """An optimality certificate computed independently of the solver.

    ``primal_residual`` is the largest violation of any constraint by the returned allocation,
    relative to the constraint's scale (``0`` means exactly feasible). ``gap`` is the absolute
    duality gap ``dual_bound - primal_value`` for a maximisation (``primal_value - dual_bound``
    for a minimisation), where the dual bound is evaluated from the returned prices alone by a
    closed-form dual function: weak duality makes it a valid bound on the optimum, so a small gap
    proves the allocation optimal whatever the solver claimed. For mixed-integer programs, where
    no convex dual exists, ``gap`` is computed from the solver's best bound (``kind="milp"``).

    Attributes
    ----------
    kind : str
        Which certificate: ``"eisenberg_gale"``, ``"lp"``, ``"conic"`` or ``"milp"``.
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
        Tolerances the certificate was checked against.
    """

    kind: str
    primal_value: float
    dual_bound: float
    gap: float
    primal_residual: float
    dual_residual: float = 0.0
    gap_tol: float = 1e-6
    feas_tol: float = 1e-7

    @property
    def relative_gap(self) -> float:
        """``gap / max(1, |primal_value|)``."""
        return self.gap / max(1.0, abs(self.primal_value))

    @property
    def ok(self) -> bool:
        """Whether the gap and both residuals are within tolerance."""
        return (
            math.isfinite(self.gap)
            and self.relative_gap <= self.gap_tol
            and self.primal_residual <= self.feas_tol
            and self.dual_residual <= max(self.feas_tol, 1e-6)
        )

    def check(self, *, backend: str | None = None) -> Certificate:
        """Return ``self`` if :attr:`ok`, else raise :class:`fairalloc.CertificateError`."""
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


def _summarise(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size <= 8:
            return np.array2string(value, precision=4, separator=", ")
        return f"<array {value.shape} {value.dtype}>"
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)


@dataclass(frozen=True, repr=False)
class Result:
    """Base class of every result: objective, status, statistics and certificate.

    Subclasses add their arrays (allocation, prices, ...). The repr summarises large arrays by
    shape so that results print readably in a notebook.
    """

    objective: float
    status: Status
    stats: SolveStats
    certificate: Certificate

    @property
    def gap(self) -> float:
        """The certified absolute duality gap (shortcut for ``certificate.gap``)."""
        return self.certificate.gap

    def __repr__(self) -> str:
        parts = []
        for f in dataclasses.fields(self):
            if f.name in ("stats", "certificate"):
                continue
            parts.append(f"{f.name}={_summarise(getattr(self, f.name))}")
        parts.append(f"gap={self.certificate.gap:.2e}")
        parts.append(f"backend={self.stats.backend!r}")
        parts.append(f"seconds={self.stats.seconds:.3g}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_frame(self) -> Any:
        """Return the result as a :class:`pandas.DataFrame` (requires pandas)."""
        raise NotImplementedError(f"{type(self).__name__} has no tabular form")


def require_pandas() -> Any:
    """Import pandas or raise an ImportError that says how to install it."""
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - exercised only without pandas
        raise ImportError("to_frame() needs pandas: pip install 'fairalloc[plot]'") from exc
    return pd
