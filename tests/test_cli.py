"""The ``fairalloc`` command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fairalloc.cli import main


def test_demo_prints_allocation_prices_and_certificate(capsys: pytest.CaptureFixture) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "v100" in out and "price" in out and "certificate: duality gap" in out
    assert "FAILED" not in out


def test_demo_runs_as_a_console_script() -> None:
    proc = subprocess.run([sys.executable, "-m", "fairalloc.cli", "demo", "--method", "cvxpy"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "sharing_incentive ok" in proc.stdout


def test_unknown_command_is_an_error() -> None:
    with pytest.raises(SystemExit) as info:
        main(["nonsense"])
    assert info.value.code == 2
