"""The documentation site builds with warnings as errors, and every example script runs."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
# examples/test_*.py are pytest files (run by their own tests); the rest are scripts
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("test_"))


def _docs_tools() -> str | None:
    for mod in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(mod.split(".")[0]) is None:
            return mod
    return None


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip()


def test_there_are_examples() -> None:
    assert {"simulate_policies.py", "custom_policy.py", "trace_replay.py",
            "parameter_sweep.py"} <= {p.name for p in EXAMPLES}


@pytest.mark.skipif(_docs_tools() is not None,
                    reason=f"documentation tools not installed ({_docs_tools()}): "
                    'pip install ".[docs]" in the checkout')
def test_site_builds_strict(tmp_path: Path) -> None:
    # the pages present before the build (others may add files while it runs)
    sources = [md for folder in ("formulations", "proofs") for md in (ROOT / folder).glob("*.md")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    site = tmp_path / "site"
    # one page per formulation and per proof, generated from the repository's folders
    assert sources
    for md in sources:
        assert (site / md.parent.name / md.stem / "index.html").exists(), md
    api = (site / "api" / "sim" / "index.html").read_text()
    assert "poisson_workload" in api and "Simulator" in api
    assert (site / "tutorial" / "index.html").exists()
    # the executed notebooks keep their figures (even when the environment says Agg)
    book = (site / "notebooks" / "02-gavel-heterogeneous-cluster" / "index.html")
    if os.environ.get("FAIRALLOC_DOCS_EXECUTE", "true") != "false":
        assert re.search(r'<img[^>]*src="data:image/png', book.read_text(encoding="utf-8"))
    # every internal href/src resolves to a file of the site and, with #anchor, to an id
    linkcheck = load_script("docs/_tools/linkcheck.py")
    checked, broken = linkcheck.check_site(site)
    assert checked > 1000 and not broken, broken[:20]
    # mathematics is left for KaTeX (arithmatex), never as emphasis or raw code
    page = (site / "proofs" / "market_equilibrium" / "index.html").read_text()
    assert '<span class="arithmatex">\\((p^*, x^*)\\)</span>' in page


@pytest.mark.skipif(_docs_tools() is not None, reason="documentation tools not installed")
def test_hook_keeps_links_between_pages_and_inlines_other_files() -> None:
    hook = load_script("docs/_hooks/pages.py", "pages_hook")
    published = {"formulations/a.md", "proofs/b.md"}
    text = ("see [the proof](../proofs/b.md#thm), [code](../fairalloc/x.py), "
            "[web](https://example.org) and [`tests/t.py`](../tests/t.py)")
    out = hook._rewrite(text, "formulations/a.md", published)
    assert "[the proof](../proofs/b.md#thm)" in out
    assert "code (`fairalloc/x.py`)" in out and "[web](https://example.org)" in out
    assert "`tests/t.py`" in out and "](../tests" not in out
