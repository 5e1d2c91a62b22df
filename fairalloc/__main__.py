"""``python -m fairalloc``: the ``fairalloc`` command (`fairalloc.cli`), the same as the
console script, for an environment whose scripts folder is not on ``PATH``.

Examples
--------
>>> import subprocess, sys
>>> out = subprocess.run([sys.executable, "-m", "fairalloc", "--version"],
...                      capture_output=True, text=True, check=True).stdout
>>> out.startswith("fairalloc ")
True
"""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
