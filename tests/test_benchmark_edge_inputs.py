"""benchmarks/edge_inputs.py: the weighted max-min traces agree with the normal round (the
weights-1e12 and mixed-weight incremental rounds were off on main) and lists no problem."""

from __future__ import annotations

import pytest

from tests.scripts import load_script


def test_weighted_max_min_traces_agree_with_the_normal_round(
        capsys: pytest.CaptureFixture[str]) -> None:
    mod = load_script("benchmarks/edge_inputs.py")
    assert mod.main(["--policy", "max_min_fairness", "--case", "w1e12", "wmixed"]) == 0
    out = capsys.readouterr().out
    assert "0 problem(s)" in out
    assert "certified False" not in out
