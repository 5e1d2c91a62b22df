"""A HiGHS LP kept alive across solves, changed in place and re-solved from its own basis.

`fairalloc.rounds.incremental` (max-min) and `fairalloc.rounds.incremental_ftf` (finish-time
fairness) keep one per stage of a round (`fairalloc.rounds._kept_round.new_models`): between
rounds a few rows, columns, coefficients, bounds and costs change, and HiGHS' simplex restarts
from the basis the model holds (a handful of iterations instead of a cold solve). The model is
a maximisation with HiGHS' presolve off (a kept basis is only used without it).

Examples
--------
>>> import numpy as np
>>> lp = KeptLP()
>>> lp.add_cols(np.array([1.0, 2.0]), np.zeros(2), np.full(2, np.inf), np.zeros(2, dtype=np.int32),
...             np.zeros(0, dtype=np.int32), np.zeros(0))
>>> lp.add_rows(np.array([-np.inf]), np.array([1.0]), np.array([0], dtype=np.int32),
...             np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]))
>>> x, y, iterations = lp.solve("demo")
>>> x.tolist(), y.tolist()
([0.0, 1.0], [2.0])
>>> lp.change_costs(np.array([0], dtype=np.int32), np.array([3.0]))
>>> lp.solve("demo")[0].tolist()
[1.0, 0.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SolverError
from .highs import new_highs, simplex_iteration_limit

__all__ = ["KeptLP"]

#: HiGHS' ``simplex_strategy`` values: dual (its default), primal
_DUAL, _PRIMAL = 1, 4


class KeptLP:
    """A maximisation LP held by one HiGHS instance (see the module docstring).

    Row duals are HiGHS' for the maximisation (``d objective / d row bound``); a solve that
    does not end optimal raises `fairalloc.SolverError`.
    """

    def __init__(self) -> None:
        import highspy

        h = new_highs()
        h.setOptionValue("presolve", "off")
        h.setOptionValue("threads", 1)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self._h: Any = h
        self._primal = False  # the next solve by the primal simplex (`take_basis`)

    def add_cols(self, cost: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                 starts: np.ndarray, index: np.ndarray, value: np.ndarray) -> None:
        """Columns with their costs, bounds and entries in existing rows (column-wise)."""
        self._h.addCols(int(cost.size), cost, lower, upper, int(index.size), starts, index,
                        value)

    def add_rows(self, lower: np.ndarray, upper: np.ndarray, starts: np.ndarray,
                 index: np.ndarray, value: np.ndarray) -> None:
        """Rows with their bounds and entries in existing columns (row-wise)."""
        self._h.addRows(int(lower.size), lower, upper, int(index.size), starts, index, value)

    def change_coeff(self, row: int, col: int, value: float) -> None:
        self._h.changeCoeff(row, col, value)

    def change_cols_bounds(self, cols: np.ndarray, lower: np.ndarray, upper: np.ndarray
                           ) -> None:
        """Bounds of several columns in one call (``cols``: int32 indices)."""
        self._h.changeColsBounds(int(cols.size), cols, lower, upper)

    def change_row_bounds(self, row: int, lower: float, upper: float) -> None:
        self._h.changeRowBounds(row, lower, upper)

    def change_rows_bounds(self, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray
                           ) -> None:
        self._h.changeRowsBounds(int(rows.size), rows, lower, upper)

    def change_costs(self, cols: np.ndarray, costs: np.ndarray) -> None:
        self._h.changeColsCost(int(cols.size), cols, costs)

    def take_basis(self, other: KeptLP) -> None:
        """Start the next solve from ``other``'s basis (a model of the same rows and columns:
        its last solve's basis, as HiGHS holds it), by the primal simplex (the basis of an
        optimum of other costs is primal feasible, or nearly, here); later solves are dual
        again (HiGHS' default, from this model's own basis)."""
        self._h.setBasis(other._h.getBasis())
        self._primal = True

    def start_from(self, x: np.ndarray) -> None:
        """Give a model without a basis one from the column values ``x`` (HiGHS' crossover,
        run now: the model's rows and bounds must be set): from a nearly optimal point the
        next solve takes a few iterations where one from nothing takes about one per row."""
        import highspy

        sol = highspy.HighsSolution()
        sol.col_value = x.tolist()
        sol.value_valid = True
        self._h.crossover(sol)

    def solve(self, what: str) -> tuple[np.ndarray, np.ndarray, int]:
        """Re-solve from the held basis: ``(column values, row duals, simplex iterations)``."""
        import highspy

        h = self._h
        h.setOptionValue("simplex_strategy", _PRIMAL if self._primal else _DUAL)
        # (a simplex that cycles stops, as every HiGHS LP solve of fairalloc's does: the
        # SolverError below hands the round over)
        h.setOptionValue("simplex_iteration_limit",
                         simplex_iteration_limit(h.getNumRow(), h.getNumCol()))
        self._primal = False
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"the kept {what} LP ended {h.modelStatusToString(status)}",
                              backend="highs")
        sol = h.getSolution()
        # (highspy hands lists over: numpy reads floats faster told their dtype; one info
        # value, not the whole info record)
        return (np.array(sol.col_value, dtype=np.float64),
                np.array(sol.row_dual, dtype=np.float64),
                int(h.getInfoValue("simplex_iteration_count")[1]))
