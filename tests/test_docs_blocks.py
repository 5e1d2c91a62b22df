"""Every code block of the tutorial, the how-to guides and the explanation pages runs as
written (`tests/doc_blocks.py` says how a page's blocks are read and run).

One test per page runs all of its blocks in one Python process in a fresh folder, in page
order: the ``python`` blocks as one script, the shell commands in the same process
(``fairalloc ...`` through the console script's entry point, `fairalloc.cli.main`). A block
run with a smaller input says so on the page (a visible note), and its substitutions apply.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests import doc_blocks as db

ROOT = db.ROOT
RUN_LANGS = {"python", "bash"}
SHOWN_LANGS = {"text"}            # output shown on a page, never run
_PAGE_ENV = re.compile(r"^<!--\s*docs-test:\s*page-env\s+(\w+)=(\S*)\s*-->\s*$", re.M)


def _page_env(page: Path) -> dict[str, str]:
    return dict(_PAGE_ENV.findall(page.read_text(encoding="utf-8")))


def _declared_extras() -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(meta["project"]["optional-dependencies"])


def _check_pip(block: db.Block, command: str) -> None:
    """``pip install .`` / ``pip install ".[x,y]"``: not run (no index offline); each extra named
    must be declared."""
    words = shlex.split(command)
    assert words[:2] == ["pip", "install"], f"{block.where}: {command!r}"
    for target in words[2:]:
        if target == ".":
            continue
        m = re.fullmatch(r"\.\[([\w,-]+)\]", target)
        assert m, f"{block.where}: pip installs {target!r}, not the checkout (\".[extra]\")"
        missing = set(m.group(1).split(",")) - _declared_extras()
        assert not missing, f"{block.where}: extras {sorted(missing)} are not in pyproject.toml"


_DRIVER = """
import runpy, shlex, sys


def _docs_run(where, command, allowed):
    print(f"--- {where}: {command}", flush=True)
    argv = shlex.split(command)
    try:
        if argv[0] == "fairalloc":            # what the console script calls
            from fairalloc.cli import main
            status = main(argv[1:])
        elif argv[0] == "python" and argv[1].endswith(".py"):
            saved, sys.argv = sys.argv, argv[1:]
            try:
                runpy.run_path(argv[1], run_name="__main__")
            finally:
                sys.argv = saved
            status = 0
        else:
            raise AssertionError(f"{where}: the docs tests cannot run {command!r}")
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if status not in allowed:
        raise SystemExit(f"{where}: FAILED (exit status {status}): {command}")

"""


def _page_script(page: Path) -> str:
    """The page as one Python script, in page order: each ``python`` block's code, and each
    shell command run in the same process (``fairalloc ...`` through `fairalloc.cli.main`,
    the console script's entry point; ``python script.py ...`` as ``__main__``), checked
    against the exit statuses its block allows."""
    parts = [_DRIVER]
    for b in db.blocks(page):
        if b.directive == "not-a-command":
            continue
        if b.lang == "python":
            parts.append(f"print('--- block {b.where}', flush=True)\n{b.as_tested()}")
        elif b.lang == "bash":
            for block, command in db.shell_commands(page):
                if block.line != b.line:
                    continue
                if command.startswith("pip "):
                    _check_pip(block, command)
                    continue
                parts.append(f"_docs_run({block.where!r}, {command!r}, {block.statuses!r})")
    return "\n".join(parts) + "\n"


def _runnable(page: Path) -> bool:
    return any(b.lang in RUN_LANGS for b in db.blocks(page))


@pytest.mark.parametrize("page", [p for p in db.PAGES if _runnable(p)],
                         ids=[p.relative_to(ROOT / "docs").as_posix()
                              for p in db.PAGES if _runnable(p)])
def test_page_blocks_run(page: Path, tmp_path: Path) -> None:
    db.prepare(tmp_path)
    (tmp_path / "page_blocks.py").write_text(_page_script(page), encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT), **_page_env(page)}
    proc = subprocess.run([sys.executable, "page_blocks.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-5000:])


def test_every_block_is_run_or_shown() -> None:
    """No block escapes: each is python or bash (run) or text (shown output); a block that is
    not run says why, and a block run on a smaller input has a visible note above it."""
    seen = {"run": 0, "shown": 0}
    for page in db.PAGES:
        for b in db.blocks(page):
            assert b.lang in RUN_LANGS | SHOWN_LANGS, f"{b.where}: a ```{b.lang} block is not run"
            if b.directive == "not-a-command":
                assert b.argument, f"{b.where}: not-a-command without a reason"
                assert "..." in b.code, f"{b.where}: not-a-command, yet it has no `...`"
            elif b.directive == "tiny":
                assert b.noted, f"{b.where}: run on a smaller input without a visible note"
                b.as_tested()                 # every substitution applies
            else:
                assert not b.directive, f"{b.where}: unknown directive {b.directive!r}"
            seen["run" if b.lang in RUN_LANGS else "shown"] += 1
    assert seen["run"] >= 30, seen


def test_pages_cover_the_tutorial_and_how_tos() -> None:
    names = {p.relative_to(ROOT / "docs").as_posix() for p in db.PAGES}
    assert {"tutorial.md", "how-to/test-your-own-policy.md", "how-to/run-a-sweep.md",
            "how-to/simulate-a-trace.md", "architecture.md"} <= names
    assert all(p.exists() for p in db.PAGES)


README = ROOT / "README.md"
#: what the README's Python example must end with: certified results, every property held
_README_CHECKS = """
assert r.certificate.ok and v.certificate.ok, (r.certificate, v.certificate)
assert all(p.passed for p in check_market(r, throughput).values())
"""


def test_readme_blocks_run(tmp_path: Path) -> None:
    """The README's blocks run as written, as a page's do: its Python example as one script
    (then checked: certified, every market property held), its shell lines in the same process
    (``pip install`` checked, not run; ``python -m pytest`` is this suite, not run again)."""
    parts = [_DRIVER]
    langs = []
    for b in db.blocks(README):
        langs.append(b.lang)
        if b.lang == "python":
            parts.append(f"print('--- block {b.where}', flush=True)\n{b.as_tested()}")
            continue
        assert b.lang == "bash", f"{b.where}: a ```{b.lang} block is not run"
        for block, line in db.shell_commands(README):
            if block.line != b.line:
                continue
            for command in (c.strip() for c in line.split("&&")):
                if command.startswith("pip "):
                    _check_pip(block, command)
                elif command != "python -m pytest":
                    parts.append(f"_docs_run({block.where!r}, {command!r}, {block.statuses!r})")
    assert "python" in langs and "bash" in langs, langs
    (tmp_path / "readme_blocks.py").write_text("\n".join(parts) + _README_CHECKS,
                                               encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "readme_blocks.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-5000:])
    assert "--- README.md:" in proc.stdout and "certificate" in proc.stdout, proc.stdout[-2000:]
