"""MkDocs hook: the notebook gallery (``docs/notebooks/*.ipynb``) in the navigation.

Runs after ``pages.py`` (which builds the navigation) and inserts a "Notebooks" section after
the tutorial, one page per notebook, titled by the notebook's first heading. The mkdocs-jupyter
plugin renders (and executes) the notebooks themselves.
"""

from __future__ import annotations

import json
from pathlib import Path


def _title(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem.split("-", 1)[-1].replace("-", " ").capitalize()


def on_config(config, **kwargs):
    docs = Path(config["docs_dir"])
    paths = sorted((docs / "notebooks").glob("*.ipynb"))
    books = [{_title(p): f"notebooks/{p.name}"} for p in paths]
    nav = config.get("nav") or []
    if books:
        after = next((i + 1 for i, item in enumerate(nav) if "Tutorial" in item), len(nav))
        nav.insert(after, {"Notebooks": books})
        config["nav"] = nav
    return config
