"""Load a repository script (``docs/_tools``, ``docs/_hooks``, ``tools``) as a module by path:
they are not packages, and the tests call their functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str, name: str | None = None) -> ModuleType:
    """The module at ``ROOT / relative``, executed once per call (``name``: its module name,
    default the file's stem)."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
