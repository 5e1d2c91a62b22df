"""Named row layout of a stage LP: which rows hold which constraint block.

Every program of `fairalloc.throughput` stacks its constraint rows in blocks
(time rows, capacity rows, ...). A `RowLayout` records each block's name and slice as the program
is built, so the duals of a block are read by name (``layout.take(duals, "capacity")``) and a
dual vector is assembled by name (``layout.assemble(...)``), never by hard-coded offsets:
adding a block cannot silently shift the prices another module reads.

Block names used by the package:

============  ===============================================================================
``time``      ``sum_j x[m, j] <= 1`` per job (``n`` rows)
``capacity``  ``sum_m scale_factor_m x[m, j] <= workers_j`` per type (``k`` rows; the prices)
``consolidated``  consolidated-capacity rows (placement sensitivity, ``k`` rows)
``policy``    rows a policy keeps in every stage (e.g. min-cost SLO rows)
``kept``      rows fixing earlier stages' optima (lexicographic stages)
``level``     level rows ``C x - b theta >= h`` of a level stage (``n`` rows)
``cost``      the Charnes-Cooper normalisation row ``cost(y) = 1`` (min cost)
============  ===============================================================================
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["RowLayout"]


class RowLayout:
    """Ordered, named row blocks of one LP (immutable once built: `extended` copies).

    Examples
    --------
    >>> layout = RowLayout().extended("time", 3).extended("capacity", 2)
    >>> layout.slice("capacity"), layout.size
    (slice(3, 5, None), 5)
    >>> layout.take(np.arange(5.0), "capacity").tolist()
    [3.0, 4.0]
    """

    __slots__ = ("_blocks", "size")

    def __init__(self, blocks: tuple[tuple[str, int], ...] = ()) -> None:
        self._blocks: dict[str, slice] = {}
        start = 0
        for name, rows in blocks:
            if name in self._blocks:
                raise ValueError(f"row block {name!r} appears twice")
            self._blocks[name] = slice(start, start + int(rows))
            start += int(rows)
        self.size = start

    def extended(self, name: str, rows: int) -> RowLayout:
        """A copy with block ``name`` of ``rows`` rows appended (a block of 0 rows is kept:
        reading it gives an empty array)."""
        return RowLayout((*self.blocks(), (name, int(rows))))

    def blocks(self) -> tuple[tuple[str, int], ...]:
        """``(name, rows)`` of every block, in row order."""
        return tuple((name, s.stop - s.start) for name, s in self._blocks.items())

    def __contains__(self, name: object) -> bool:
        return name in self._blocks

    def slice(self, name: str) -> slice:
        """The rows of block ``name`` (``KeyError`` if the program has no such block)."""
        return self._blocks[name]

    def take(self, vec: np.ndarray, name: str) -> np.ndarray:
        """The entries of a row vector (duals, activities) that belong to block ``name``."""
        if vec.shape[0] != self.size:
            raise ValueError(f"vector of {vec.shape[0]} rows for a layout of {self.size}")
        return vec[self._blocks[name]]

    def assemble(self, parts: Mapping[str, np.ndarray]) -> np.ndarray:
        """A row vector from per-block parts (blocks not named are 0)."""
        out = np.zeros(self.size)
        for name, values in parts.items():
            out[self._blocks[name]] = values
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowLayout) and self.blocks() == other.blocks()

    def __hash__(self) -> int:
        return hash(self.blocks())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={rows}" for name, rows in self.blocks())
        return f"RowLayout({inner})"
