"""Gavel's round-based mechanism (§3.2, §5), physical placement (§5, §6) and throughput
estimation (§3.3, §6).

A policy's fractional allocation is realised round by round
([`schedule_round`][fairalloc.schedule_round], [`RoundScheduler`][fairalloc.RoundScheduler]),
each round is placed on servers ([`place`][fairalloc.place]), and the throughputs the
policies need for a new job are estimated from a few measurements
([`ThroughputEstimator`][fairalloc.ThroughputEstimator],
[`complete_matrix`][fairalloc.complete_matrix]).

One job per file: `rounds` (the round problem and Algorithm 1),
`assignment` (the values [`RoundAssignment`][fairalloc.RoundAssignment],
[`ServerLayout`][fairalloc.ServerLayout], [`Placement`][fairalloc.Placement]), `placement`
([`place`][fairalloc.place]), `scheduler` ([`RoundScheduler`][fairalloc.RoundScheduler]) and
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
