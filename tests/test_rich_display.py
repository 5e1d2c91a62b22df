"""Rich display beyond the solvers (issue #30): the property-check report and a simulation
show a table (and the simulation a plot) in a notebook (``_repr_html_``)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import fairalloc as fa
from fairalloc._display import PLOT_POINTS, line_plot

pytest.importorskip("hypothesis")

from fairalloc.sim import Workload, simulate  # noqa: E402
from fairalloc.testing import check_policy  # noqa: E402


def dictator(utility, budget, supply):  # type: ignore[no-untyped-def]
    """Everything to buyer 0: feasible, and envy-free only with one buyer."""
    x = np.zeros_like(utility)
    x[0] = supply
    return x


class _Cells(HTMLParser):
    """The rows of every table: lists of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _rows(html: str) -> dict[str, list[str]]:
    parser = _Cells()
    parser.feed(html)
    return {row[0]: row[1:] for row in parser.rows if row}


def test_property_report_shows_a_table_and_its_counterexamples() -> None:
    report = check_policy(dictator, ["feasible", "envy_free"], max_examples=10)
    html = report._repr_html_()
    rows = _rows(html)
    assert rows["property"][:3] == ["result", "examples", "violation"]
    assert rows["feasible"][0] == "passed" and rows["envy_free"][0] == "FAILED"
    assert float(rows["envy_free"][2]) == pytest.approx(
        report["envy_free"].counterexample.violation, rel=1e-3)  # shown to 4 digits
    assert "FAILED: envy_free" in html and "counterexample for envy_free" in html
    assert "&lt;" not in rows["envy_free"][0]  # escaped once, not twice
    fine = check_policy(dictator, ["feasible"], max_examples=5)._repr_html_()
    assert "all properties hold" in fine and "counterexample" not in fine


def test_simulation_result_shows_metrics_jobs_and_a_plot() -> None:
    w = Workload.from_arrays([0.0, 0.0, 100.0], [[1.0], [1.0], [1.0]], [360.0, 720.0, 500.0])
    r = simulate(w, fa.Cluster({"gpu": 2}), "fifo")
    html = r._repr_html_()
    rows = _rows(html)
    summary = r.summary()
    assert float(rows["makespan"][0]) == pytest.approx(summary["makespan"], rel=1e-3)
    assert rows["job"] == ["arrival", "start", "finish", "jct", "preemptions"]
    assert [float(v) for v in rows["2"][:4]] == pytest.approx(
        [100.0, r.start[2], r.finish[2], r.jct[2]], rel=1e-3)
    svg = re.search(r"<svg.*?</svg>", html, re.S)
    assert svg is not None and svg.group(0).count("<polyline") == 2
    assert "utilisation" in svg.group(0) and "active jobs" in svg.group(0)


def test_line_plot_scales_each_line_and_caps_its_points() -> None:
    x = np.arange(10_000.0)
    svg = line_plot("t", x, [("a", np.sin(x) + 1)])
    points = re.search(r"points='([^']*)'", svg).group(1).split()
    assert 2 <= len(points) <= PLOT_POINTS
    xs = [float(p.split(",")[0]) for p in points]
    assert xs == sorted(xs)
    assert "<polyline" not in line_plot("empty", np.zeros(0), [("a", np.zeros(0))])
