"""benchmarks/profile_gavel_cold.py on the synthetic stand-in for Gavel's throughput file:
it prints every timed step of the cold adapter call and both ``work_conserving`` variants,
restores the functions it wrapped, and skips with one line without the data."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import load_script
from tests.test_benchmark_gavel_inputs import _stand_in


def test_profile_prints_each_step_and_restores_the_library(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    from fairalloc.backends.kept import KeptLP
    from fairalloc.rounds import api

    before = (api._matrix, KeptLP.solve)
    mod = load_script("benchmarks/profile_gavel_cold.py")
    _stand_in(tmp_path)
    assert mod.main(["--jobs", "16", "--reps", "1", "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "16 jobs" in out and "cold adapter call" in out
    for label in ("dicts -> arrays (_matrix)", "HiGHS runs (both stages)",
                  "work_conserving=False", "certified True"):
        assert label in out, label
    assert "certified False" not in out
    assert (api._matrix, KeptLP.solve) == before  # the timing wrappers are removed


def test_profile_skips_without_the_data(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    mod = load_script("benchmarks/profile_gavel_cold.py")
    assert mod.main(["--data", str(tmp_path / "absent")]) == 0
    assert "skipped" in capsys.readouterr().out


def test_profile_ftf_prints_the_state_and_the_solve(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from fairalloc.rounds.state import IsolatedTime

    before = IsolatedTime.prepare
    mod = load_script("benchmarks/profile_gavel_cold.py")
    _stand_in(tmp_path)
    assert mod.main(["--policy", "ftf", "--jobs", "16", "--reps", "1",
                     "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for label in ("ftf, 16 jobs", "isolated times (prepare)", "isolated times (commit)",
                  "the reduced solve (_solve_reduced)", "outside the reduced solve"):
        assert label in out, label
    assert "work_conserving" not in out  # (max-min only)
    assert IsolatedTime.prepare is before
