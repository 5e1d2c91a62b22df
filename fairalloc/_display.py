"""How results show themselves: one summary line for ``repr`` and a compact HTML view for
notebooks (``_repr_html_``), in one place for every result type. Pure Python and numpy.

A result describes itself as a `View` (title, a few facts, the certificate verdict, tables
with row ids and column names); `summary_line` and `to_html` render it. Large tables are
truncated to their first rows and columns, with a "… N more rows" line, so a 10,000-job
allocation displays as fast as a 10-job one.
"""

from __future__ import annotations

import html
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["MAX_COLUMNS", "MAX_ROWS", "Table", "Verdict", "View", "fmt", "summary_line",
           "labelled", "line_plot", "price_table", "to_html",
           "verdict_of"]

MAX_ROWS = 12  # display: rows of a table shown before "… N more rows"
MAX_COLUMNS = 10  # display: value columns of a table shown before "… N more columns"
DIGITS = 4  # display: significant digits of a number
_CHECK = "\u2713"  # display: a true boolean cell
PLOT_WIDTH, PLOT_HEIGHT = 480, 140  # display: size of an inline plot, in CSS pixels
PLOT_POINTS = 400  # display: points drawn per line at most (longer series are subsampled)
PLOT_MARGIN = 28  # display: room for the axis labels, in CSS pixels
PLOT_PAD = 4  # display: right-hand padding of a plot, in CSS pixels
PLOT_TOP = 20  # display: room above the highest point (title, legend), in CSS pixels
PLOT_LINE = 12  # display: height of a line of plot text, in CSS pixels
PLOT_BELOW = 14  # display: offset of the x-axis labels below the axis, in CSS pixels
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")
_ELLIPSIS = "\u2026"


def fmt(value: Any) -> str:
    """A value as a short string: numbers to four significant digits, booleans as a tick.

    Examples
    --------
    >>> fmt(3.14159265), fmt(2), fmt(True), fmt(False), fmt(1.5e-9), fmt(float("nan"))
    ('3.142', '2', '✓', '', '1.5e-09', 'nan')
    """
    if isinstance(value, bool | np.bool_):
        return _CHECK if value else ""
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        v = float(value)
        if v == 0.0:
            return "0"
        return f"{v:.{DIGITS}g}" if math.isfinite(v) else str(v)
    return str(value)


@dataclass(frozen=True)
class Table:
    """A labelled table: row ``rows[i]``; columns ``columns`` = the ``extra`` columns (one
    sequence each, any dtype), then the columns of ``matrix`` (2-d, one row per table row).

    Nothing is copied: a cell is read only when it is shown.
    """

    caption: str
    row_name: str
    rows: Sequence[Hashable]
    columns: Sequence[Hashable]
    matrix: np.ndarray | None = None
    extra: Sequence[Any] = ()

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return len(self.rows), len(self.columns)

    def cell(self, i: int, c: int) -> Any:
        """The value of row ``i``, column ``c``."""
        k = len(self.extra)
        if c < k:
            return self.extra[c][i]
        if self.matrix is None:
            raise IndexError(f"column {c} is outside a table of {k} columns")
        return self.matrix[i, c - k]


def labelled(caption: str, row_name: str, rows: Sequence[Hashable], columns: Sequence[Hashable],
             matrix: np.ndarray | None, extra: Sequence[tuple[str, Any]] = ()) -> Table:
    """A `Table` whose first columns are the named ``extra`` ones and then ``matrix``'s,
    labelled ``columns`` (a 3-d ``matrix`` is shown with one column per ``(column, round)``)."""
    names: list[Hashable] = [name for name, _ in extra]
    if matrix is not None and matrix.ndim == 3:
        rounds = matrix.shape[2]
        names += [f"{c},{t}" for c in columns for t in range(rounds)]
        matrix = matrix.reshape(matrix.shape[0], -1)
    elif matrix is not None:
        names += list(columns)
    return Table(caption, row_name, rows, names, matrix, [values for _, values in extra])


def price_table(prices: np.ndarray, columns: Sequence[Hashable], caption: str = "prices"
                ) -> Table:
    """Prices as a one-row table over ``columns`` (goods or types); prices of shape (m, T) as
    one row per good and one column per round."""
    if prices.ndim == 2:
        return Table(caption, "good", columns, [f"t{t}" for t in range(prices.shape[1])],
                     prices)
    return Table(caption, "", ["price"], columns, prices.reshape(1, -1))


@dataclass(frozen=True)
class Verdict:
    """The certificate verdict: ``ok``, the status and one line of numbers."""

    ok: bool
    status: str
    text: str
    word: str = ""  # "certified" / "NOT certified" unless given

    @property
    def label(self) -> str:
        """The verdict in one or two words."""
        return self.word or ("certified" if self.ok else "NOT certified")


@dataclass(frozen=True)
class View:
    """What a result shows: its class name, facts (``(name, value)``), verdict and tables."""

    title: str
    facts: Sequence[tuple[str, str]]
    verdict: Verdict | None
    tables: Sequence[Table] = field(default_factory=tuple)


def verdict_of(certificate: Any, status: Any) -> Verdict:
    """The verdict of a `fairalloc.Certificate` (relative gap, residual) or of a
    replay check (its largest residual)."""
    status_text = str(getattr(status, "value", status))
    ok = bool(certificate.ok)
    if hasattr(certificate, "relative_gap"):
        text = (f"{certificate.kind}: relative gap {certificate.relative_gap:.2e} "
                f"(tol {certificate.gap_tol:.0e}), residual "
                f"{certificate.primal_residual:.2e} (tol {certificate.feas_tol:.0e})")
        return Verdict(ok=ok, status=status_text, text=text)
    text = (f"{certificate.kind}: {certificate.events} events replayed, largest residual "
            f"{certificate.max_residual:.2e} (tol {certificate.tol:.0e})")
    return Verdict(ok=ok, status=status_text, text=text,
                   word="replay-checked" if ok else "replay check FAILED")


def summary_line(view: View, seconds: float | None = None) -> str:
    """``Title(fact=value, ..., status=..., ok=..., 0.012 s)`` on one line.

    Examples
    --------
    >>> summary_line(View("R", [("jobs", "3")], Verdict(True, "optimal", "")), 0.5)
    'R(jobs=3, status=optimal, certified, 0.5 s)'
    """
    parts = [f"{k}={v}" for k, v in view.facts]
    if view.verdict is not None:
        parts.append(f"status={view.verdict.status}")
        parts.append(view.verdict.label)
    if seconds is not None:
        parts.append(f"{seconds:.3g} s")
    return f"{view.title}({', '.join(parts)})"


def _cells(table: Table, max_rows: int, max_columns: int) -> list[str]:
    n, m = table.shape
    shown_c = min(m, max_columns)
    esc = html.escape
    out = ["<table class='dataframe'>"]  # styled like a pandas table by notebook front ends
    if table.caption:
        out.append(f"<caption style='text-align:left'>{esc(table.caption)}</caption>")
    head = "".join(f"<th>{esc(fmt(c))}</th>" for c in table.columns[:shown_c])
    if m > shown_c:
        head += f"<th>{_ELLIPSIS} {m - shown_c} more columns</th>"
    out.append(f"<thead><tr><th>{esc(table.row_name)}</th>{head}</tr></thead><tbody>")
    for i in range(min(n, max_rows)):
        row = "".join(f"<td>{esc(fmt(table.cell(i, c)))}</td>" for c in range(shown_c))
        if m > shown_c:
            row += "<td></td>"
        out.append(f"<tr><th>{esc(fmt(table.rows[i]))}</th>{row}</tr>")
    if n > max_rows:
        span = shown_c + 1 + (m > shown_c)
        out.append(f"<tr><td colspan='{span}'>{_ELLIPSIS} {n - max_rows} more rows</td></tr>")
    out.append("</tbody></table>")
    return out


def to_html(view: View, seconds: float | None = None, *, max_rows: int = MAX_ROWS,
            max_columns: int = MAX_COLUMNS) -> str:
    """The view as a compact HTML fragment: a title line, the verdict, then each table.

    Examples
    --------
    >>> t = Table("allocation", "job", ["a", "b"], ["gpu"], np.array([[0.5], [0.25]]))
    >>> h = to_html(View("R", [("jobs", "2")], Verdict(True, "optimal", "gap 0"), [t]))
    >>> "<th>a</th><td>0.5</td>" in h, "certified" in h
    (True, True)
    """
    esc = html.escape
    facts = ", ".join(f"{esc(k)} = {esc(v)}" for k, v in view.facts)
    out = [f"<div class='fairalloc-result'><p><b>{esc(view.title)}</b> {facts}"]
    if seconds is not None:
        out.append(f" ({seconds:.3g} s)")
    out.append("</p>")
    if view.verdict is not None:
        v = view.verdict
        colour = "green" if v.ok else "#b00"
        word = v.label
        out.append(f"<p>status <code>{esc(v.status)}</code>, "
                   f"<span style='color:{colour}'><b>{word}</b></span>: {esc(v.text)}</p>")
    for table in view.tables:
        out.extend(_cells(table, max_rows, max_columns))
    out.append("</div>")
    return "".join(out)


def line_plot(title: str, x: np.ndarray, lines: Sequence[tuple[str, np.ndarray]],
              x_label: str = "") -> str:
    """An inline SVG line plot (no plotting library, works offline): one line per
    ``(name, y)``, each scaled to its own range (the legend gives it), at most `PLOT_POINTS`
    points a line.

    Examples
    --------
    >>> svg = line_plot("utilisation", np.arange(3.0), [("used", np.array([0.0, 1.0, 0.5]))])
    >>> svg.startswith("<svg") and "<polyline" in svg and "used" in svg
    True
    """
    esc = html.escape
    x = np.asarray(x, dtype=float)
    w, h, m, pad = PLOT_WIDTH, PLOT_HEIGHT, PLOT_MARGIN, PLOT_PAD
    base, right = h - m, w - pad
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' "
           f"role='img' aria-label='{esc(title)}' style='font:11px sans-serif'>",
           f"<text x='{m}' y='{PLOT_LINE}'>{esc(title)}</text>",
           f"<line x1='{m}' y1='{base}' x2='{right}' y2='{base}' stroke='#888'/>"]
    if x.size:
        idx = np.unique(np.linspace(0, x.size - 1, min(x.size, PLOT_POINTS)).astype(int))
        lo, hi = float(x.min()), float(x.max())
        px = m + (x[idx] - lo) / ((hi - lo) or 1.0) * (right - m)
        out.append(f"<text x='{m}' y='{base + PLOT_BELOW}'>{esc(fmt(lo))}</text>"
                   f"<text x='{right}' y='{base + PLOT_BELOW}' text-anchor='end'>"
                   f"{esc(fmt(hi))} {esc(x_label)}</text>")
        for k, (name, y) in enumerate(lines):
            y = np.asarray(y, dtype=float)[idx]
            top = float(np.nanmax(y)) if y.size else 0.0
            py = base - np.nan_to_num(y) / (top or 1.0) * (base - PLOT_TOP)
            colour = _COLOURS[k % len(_COLOURS)]
            points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py))
            out.append(f"<polyline fill='none' stroke='{colour}' points='{points}'/>"
                       f"<text x='{right}' y='{PLOT_LINE * (k + 1)}' text-anchor='end' "
                       f"fill='{colour}'>{esc(name)} (max {esc(fmt(top))})</text>")
    out.append("</svg>")
    return "".join(out)
