"""The library's accuracy contracts: one family of default tolerances, each documented.

Every certificate in fairalloc is judged against these unless the caller passes its own
``gap_tol`` / ``feas_tol``. All of them are **relative**: a gap is divided by the objective's data
scale (`fairalloc.Certificate.scale`) and a constraint violation by the constraint's own
magnitude, so the verdict does not change when budgets, supply, utilities, weights or
throughputs are expressed in other units.

========================= ========= ========================================================
name                      value     contract
========================= ========= ========================================================
``GAP_TOL``               1e-6      relative duality gap of a convex program (LP, conic)
``FEAS_TOL``              1e-7      relative primal residual of any returned allocation
``MILP_GAP_TOL``          1e-4      relative gap of a mixed-integer incumbent to its bound
``MAX_TOL``               1e-1      the largest tolerance a caller may request
``MIN_TOL``               1e-15     the smallest (below it double precision cannot prove it)
``DUAL_RESIDUAL_FACTOR``  10        a dual residual passes up to this many ``FEAS_TOL``
                                    (or up to the caller's ``feas_tol`` if looser)
``SOLVER_TOL``            1e-9      gap/feasibility tolerance fairalloc asks interior-point
                                    solvers for (tighter than ``GAP_TOL`` so the independent
                                    certificate has room to pass)
``CONE_EPS``              1e-12     below this an exponential-cone scale coordinate counts as 0
                                    (the cone's closure is checked instead)
========================= ========= ========================================================

Examples
--------
>>> from fairalloc import tolerances
>>> tolerances.GAP_TOL
1e-06
"""

from __future__ import annotations

__all__ = [
    "CONE_EPS",
    "DUAL_RESIDUAL_FACTOR",
    "FEAS_TOL",
    "GAP_TOL",
    "MAX_TOL",
    "MILP_GAP_TOL",
    "MIN_TOL",
    "SOLVER_TOL",
]

#: Relative duality gap a convex solve must prove (gap / objective data scale).
GAP_TOL: float = 1e-6
#: Relative primal residual any returned allocation must meet (violation / constraint scale).
FEAS_TOL: float = 1e-7
#: Relative gap a mixed-integer incumbent must prove against the solver's best bound.
MILP_GAP_TOL: float = 1e-4
#: Largest gap or feasibility tolerance a caller may request (a looser one is an InputError).
MAX_TOL: float = 1e-1
#: Smallest tolerance a caller may request: double precision cannot prove less.
MIN_TOL: float = 1e-15
#: A certificate's dual residual passes up to ``max(feas_tol, DUAL_RESIDUAL_FACTOR * FEAS_TOL)``
#: (dual residuals are recomputed from returned prices and carry one more rounding step).
DUAL_RESIDUAL_FACTOR: float = 10.0
#: Gap and feasibility tolerance requested from interior-point solvers (Clarabel, cvxpy's
#: chain): tighter than GAP_TOL so the independent certificate has room to pass.
SOLVER_TOL: float = 1e-9
#: An exponential-cone scale coordinate at or below this counts as zero: the certificate then
#: checks the cone's closure (r1 <= 0, r3 >= 0) instead of dividing by it.
CONE_EPS: float = 1e-12
