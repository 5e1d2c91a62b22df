"""Gavel's round-based mechanism (§3.2, §5), physical placement (§5, §6) and throughput
estimation (§3.3, §6).

A policy's fractional allocation is realised round by round
(`fairalloc.schedule_round`, `fairalloc.RoundScheduler`),
each round is placed on servers (`fairalloc.place`), and the throughputs the
policies need for a new job are estimated from a few measurements
(`fairalloc.ThroughputEstimator`,
`fairalloc.complete_matrix`).

One job per file: `rounds` (the round problem and Algorithm 1),
`assignment` (the values `fairalloc.RoundAssignment`,
`fairalloc.ServerLayout`, `fairalloc.Placement`), `placement`
(`fairalloc.place`), `scheduler` (`fairalloc.RoundScheduler`) and
`estimation` (matrix completion and fingerprint matching).
"""

from __future__ import annotations

from .assignment import Placement, RoundAssignment, ServerLayout
from .estimation import Completion, FingerprintMatch, ThroughputEstimator, complete_matrix
from .placement import place
from .rounds import schedule_round
from .scheduler import RoundScheduler

__all__ = [
    "Completion",
    "FingerprintMatch",
    "Placement",
    "RoundAssignment",
    "RoundScheduler",
    "ServerLayout",
    "ThroughputEstimator",
    "complete_matrix",
    "place",
    "schedule_round",
]
