"""The package as scientific Python users expect it (issue #30): ``python -m fairalloc`` is the
``fairalloc`` command, subpackages are reachable lazily from ``import fairalloc`` (SPEC 1, as
``np.linalg`` is), and the namespace holds the library's names only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fairalloc as fa
from fairalloc.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["check", "--help"], []])
def test_python_dash_m_is_the_fairalloc_command(args: list[str], capsys) -> None:
    proc = _python("-m", "fairalloc", *args)
    with pytest.raises(SystemExit) as stop:  # argparse exits after --version / --help
        sys.exit(main(args))
    out = capsys.readouterr()
    assert proc.returncode == stop.value.code
    assert proc.stdout == out.out and proc.stderr == out.err


def test_subpackages_are_imported_on_first_access() -> None:
    code = ("import sys, fairalloc as fa\n"
            "before = 'fairalloc.throughput' in sys.modules or 'fairalloc.sim' in sys.modules\n"
            "print(before, fa.throughput.max_min_fairness.__module__, fa.sim.__name__,\n"
            "      'fairalloc.throughput' in sys.modules)\n")
    proc = _python("-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "fairalloc.throughput.max_min", "fairalloc.sim",
                                   "True"]


def test_every_public_submodule_is_an_attribute() -> None:
    for name in fa._SUBMODULES:
        module = getattr(fa, name)
        assert module.__name__ == f"fairalloc.{name}"
        assert name in dir(fa)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        fa.nope  # noqa: B018


def test_namespace_holds_no_import_machinery() -> None:
    for leaked in ("annotations", "TYPE_CHECKING"):
        assert leaked not in dir(fa) and not hasattr(fa, leaked)
