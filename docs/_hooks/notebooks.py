"""MkDocs hook: the notebook gallery (``docs/notebooks/*.ipynb``) in the navigation.

Runs after ``pages.py`` (which builds the navigation) and inserts a "Notebooks" section after
the tutorial, one page per notebook, titled by the notebook's first heading. The mkdocs-jupyter
plugin renders (and executes) the notebooks themselves.

Its page template also loads MathJax (from an empty ``<script src="">`` unless a CDN address is
configured) and Mermaid (from a CDN); the site typesets maths with its bundled KaTeX
(``docs/javascripts/katex.js`` covers the notebooks' Markdown cells too) and the notebooks draw no
Mermaid diagram, so ``on_post_page`` drops both loaders: a notebook page works offline and loads
nothing from another host. ``on_config`` sets ``MPLBACKEND`` to the kernel's inline backend, so
the executed notebooks keep their figures whatever backend the build's environment names.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

#: the MathJax loader and configuration nbconvert's template writes into every notebook page
_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)
#: an inline script that imports a module from another host (the Mermaid loader)
_REMOTE_SCRIPT = re.compile(r"<script\b[^>]*>(?:(?!</script>).)*?import\(\s*[\"']https?://"
                            r"(?:(?!</script>).)*</script>", re.S)


def _offline(html: str) -> str:
    """``html`` without the MathJax loader and inline scripts that import from another host."""
    return _REMOTE_SCRIPT.sub("", _MATHJAX.sub("", html))


def _title(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem.split("-", 1)[-1].replace("-", " ").capitalize()


#: the Jupyter kernel's inline backend: a figure becomes an image output of its cell. The
#: kernels that execute the gallery inherit the build's environment, and ``MPLBACKEND=Agg``
#: (set in CI or by a test) would make every figure vanish from the executed pages.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def on_config(config, **kwargs):
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    docs = Path(config["docs_dir"])
    paths = sorted((docs / "notebooks").glob("*.ipynb"))
    books = [{_title(p): f"notebooks/{p.name}"} for p in paths]
    nav = config.get("nav") or []
    if books:
        after = next((i + 1 for i, item in enumerate(nav) if "Tutorial" in item), len(nav))
        nav.insert(after, {"Notebooks": books})
        config["nav"] = nav
    return config


def on_post_page(output, page, config, **kwargs):
    if page.file.src_uri.endswith(".ipynb"):
        return _offline(output)
    return output
