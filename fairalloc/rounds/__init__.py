"""The round-by-round policy API for schedulers (one call per scheduling round, by job id).

* ``api.py``: `fairalloc.RoundPolicy` and `fairalloc.solve_round`: ids in and out, drained
  types, unrunnable jobs, empty rounds, warm start, every Gavel policy and the Fisher markets;
* ``result.py``: `fairalloc.RoundResult`, what a round returns;
* ``mechanisms.py``: the Themis auction round and the Shockwave re-plan behind them.
"""

from __future__ import annotations

from .api import POLICIES, RoundPolicy, RoundResult, solve_round

__all__ = ["POLICIES", "RoundPolicy", "RoundResult", "solve_round"]
