"""Adapters that put fairalloc's certified policies behind other schedulers' interfaces.

* `fairalloc.integrations.gavel` -- Gavel's ``get_allocation(...)``
  policy objects (stanford-futuredata/gavel), dicts keyed by job id and worker type in and out.
"""

from __future__ import annotations

__all__ = ["gavel"]
