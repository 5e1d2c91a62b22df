"""The stage programs of the effective-throughput policies: `LevelStage` (``max theta`` s.t.
``C x - b theta >= h``), `LinearStage` (``max g @ x``) and a solved stage's `StageResult`
(with its named row blocks), plus the exact power-of-two unit helpers they use.

`fairalloc.throughput.stages` solves them (`StageSolver`), through the plans of
`fairalloc.throughput.strategies`; the structured solvers read and build them too, so they
live below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from ..backends import LinearProgram, LPBasis
from ..results import Certificate
from .rows import RowLayout

__all__ = ["LevelStage", "LinearStage", "StageResult", "pow2"]


_UNIT_BAND = 4  # data within 2**+-4 of unit scale is left as given


def _median(v: np.ndarray) -> float:
    """``np.median`` of a non-empty 1-D array by one partition (np.median's wrapper cost
    about 20 us, twice per warm round)."""
    h = v.size // 2
    if v.size % 2:
        return float(np.partition(v, h)[h])
    part = np.partition(v, (h - 1, h))
    return float(np.mean(part[h - 1: h + 1]))


def pow2(v: float) -> float:
    """The power of two nearest ``v`` (> 0, finite), or 1 when ``v`` is already within
    ``2**+-_UNIT_BAND`` of 1 (or not a positive finite number). Scaling by it is exact."""
    if not (np.isfinite(v) and v > 0):
        return 1.0
    m, e = np.frexp(v)
    e = int(e) - (1 if m < np.sqrt(0.5) else 0)
    return 1.0 if abs(e) <= _UNIT_BAND else float(np.ldexp(1.0, e))


def _row_absmax(A: sp.spmatrix) -> np.ndarray:
    """Largest absolute entry of each row of a sparse matrix (0 for empty rows)."""
    A = A if isinstance(A, sp.csr_matrix) else sp.csr_matrix(A)
    out = np.zeros(A.shape[0])
    if A.nnz == 0:
        return out
    ptr = A.indptr
    full = ptr[1:] > ptr[:-1]
    out[full] = np.maximum.reduceat(np.abs(A.data), ptr[:-1][full])
    return out


@dataclass
class LevelStage:
    """``max theta`` s.t. ``C x - b theta >= h`` (rows of C per job); the max-min stage."""

    level: ClassVar[bool] = True

    C: sp.csr_matrix
    b: np.ndarray
    h: np.ndarray
    name: str = "level"
    #: the objective's data scale in ``theta`` units when the policy knows it (e.g. ``R``
    #: for a Dinkelbach stage, whose ``theta`` is in units of ``rho``); default from ``h``
    scale: float | None = None

    def units(self) -> tuple[float, float]:
        """``(sigma, rho)``: powers of two with ``theta = sigma theta'`` and level rows
        divided by ``rho`` giving a unit-scale program (`pow2`): ``rho`` from the
        rows' typical largest coefficient, ``sigma`` from the smallest saturation level
        ``max_e C_me / b_m`` (an upper bound on theta)."""
        cached = self.__dict__.get("_units")
        if cached is not None:
            return cached
        rowmax = _row_absmax(self.C)
        pos = (self.b > 0) & (rowmax > 0)
        nz = rowmax[rowmax > 0]
        rho = pow2(_median(nz)) if nz.size else 1.0
        # theta never exceeds min_m max_e C_me / b_m (no job's row can do better): theta' =
        # theta / sigma is at most about 1, and about 1 / (jobs per worker) at least
        sigma = pow2(float(np.min(rowmax[pos] / self.b[pos]))) if pos.any() else 1.0
        self.__dict__["_units"] = (sigma, rho)
        return sigma, rho

    def data_scale(self) -> float:
        """The level's own data scale in ``theta`` units: ``max_m |h_m| / max_m b_m`` (the
        rise of the fastest-rising row that matches the largest offset; 0 when every offset
        is 0). The gap of a stage whose optimum is legitimately about 0 (a Dinkelbach stage at
        its root, a late water-filling level) is judged against it."""
        if self.scale is not None:
            return float(self.scale)
        bmax = float(np.max(self.b, initial=0.0))
        if not bmax > 0:
            return 0.0
        return float(np.max(np.abs(self.h), initial=0.0)) / bmax


@dataclass
class LinearStage:
    """``max g @ x``."""

    level: ClassVar[bool] = False

    g: np.ndarray
    name: str = "linear"
    #: the objective's data scale when it is legitimately about 0 (FIFO's sums of normalised
    #: throughputs, each at most 1: one job's worth); ``None``: the standard relative gap
    scale: float | None = None


@dataclass
class StageResult:
    lp: LinearProgram
    x: np.ndarray  # full LP vector (columns + theta)
    duals: np.ndarray
    value: float
    cert: Certificate
    iterations: int
    #: the stage program's named row blocks (read prices and job duals through it)
    rows: RowLayout
    #: a structured solve returned without its certificate (`unchecked_certificate`): the
    #: caller (a Dinkelbach sequence, whose intermediate stages only move its point) must
    #: certify it (`StageSolver.certify`) before using it as an answer
    provisional: bool = False
    #: the final simplex basis (the next level LP of a sequence starts from it), if kept
    basis: LPBasis | None = None
    #: the columns a restricted-columns solve ended with (the next stage starts from them)
    columns: np.ndarray | None = None

    def block(self, name: str) -> np.ndarray:
        """The duals of row block ``name`` (``capacity``, ``time``, ``level``, ...)."""
        return self.rows.take(self.duals, name)
