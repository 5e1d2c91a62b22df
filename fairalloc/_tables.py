"""Plain-text tables for the command line (`format_table`).

Used by the ``fairalloc`` commands (`fairalloc.cli`, `fairalloc.sim.cli`); imports
nothing from the package.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_table"]


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table with a header line and a rule; the first column left-aligned, the others
    right-aligned.

    Examples
    --------
    >>> print(format_table(["job", "GPUs"], [["a", "1"], ["bb", "12"]]))
    job  GPUs
    ---------
    a       1
    bb     12
    """
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.rjust(w) if i else h.ljust(w)
                     for i, (h, w) in enumerate(zip(header, widths)))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(c.rjust(w) if i else c.ljust(w)
                             for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)
