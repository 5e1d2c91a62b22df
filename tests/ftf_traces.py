"""Shared set-up of the warm finish-time fairness tests (`tests/test_rounds_incremental_ftf.py`,
`tests/test_rounds_incremental_ftf_closed.py`): job traces with churn and their
`fairalloc.RoundPolicy.allocate` arguments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

import fairalloc as fa

TYPES = ("v100", "p100", "k80")
ROUND_S = 360.0


def job_trace(rng: np.random.Generator, n: int, k: int, churn: int, rounds: int,
              progress: float, gangs: bool = True) -> list[dict[int, dict[str, Any]]]:
    """``rounds`` rounds of jobs on the first ``k`` of `TYPES`: ``n`` at first, then
    ``churn`` leave and arrive per round (at least one stays); every job advances (its steps
    shrink by its throughput on its first type for a ``progress`` share of the round, its
    elapsed time grows by the round). ``gangs``: gangs of 1 or 2 (else 1)."""
    def job(first: bool) -> dict[str, Any]:
        tp = {t: float(rng.uniform(0.5, 20.0)) for t in TYPES[:k] if rng.random() < 0.8}
        total = float(rng.uniform(1e3, 1e5))
        return {"tp": tp or {TYPES[0]: 3.0},
                "sf": int(rng.choice([1, 1, 2])) if gangs else 1,
                "steps": total * (rng.uniform(0.1, 1.0) if first else 1.0),
                "t": float(ROUND_S * rng.integers(0, 20)) if first else 0.0}

    active = {i: job(True) for i in range(n)}
    out, nxt = [], n
    for r in range(rounds):
        if r:
            for j in active.values():
                rate = next(iter(j["tp"].values()))
                j["steps"] = max(j["steps"] - progress * ROUND_S * rate, 1.0)
                j["t"] += ROUND_S
            for j in rng.choice(list(active), size=min(churn, len(active) - 1), replace=False):
                del active[j]
            for _ in range(churn):
                active[nxt] = job(False)
                nxt += 1
        out.append({i: dict(j) for i, j in active.items()})
    return out


def allocate_args(jobs: dict[int, dict[str, Any]]) -> tuple[dict, dict]:
    """``(throughputs, per-job keywords)`` of one round of a `job_trace`."""
    return ({i: j["tp"] for i, j in jobs.items()},
            {"scale_factor": {i: j["sf"] for i, j in jobs.items()},
             "steps_remaining": {i: j["steps"] for i, j in jobs.items()},
             "elapsed": {i: j["t"] for i, j in jobs.items()},
             "isolated_elapsed": {i: j["t"] for i, j in jobs.items()}})


def warm_and_cold(rounds: list[dict[int, dict[str, Any]]], cap: dict[str, int]
                  ) -> Iterator[tuple[dict[int, dict[str, Any]], Any, Any]]:
    """Each round of a trace with its warm result (one `fairalloc.RoundPolicy` across the
    rounds) and its cold one (`fairalloc.solve_round` on the same inputs)."""
    p = fa.RoundPolicy("finish_time_fairness")
    for jobs in rounds:
        tp, per = allocate_args(jobs)
        yield (jobs, p.allocate(tp, cap, **per),
               fa.solve_round("finish_time_fairness", tp, cap, **per))
