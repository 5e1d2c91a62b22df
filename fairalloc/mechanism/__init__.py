"""Gavel's round-based mechanism (§3.2, §5), physical placement (§5, §6) and throughput
estimation (§3.3, §6).

A policy's fractional allocation is realised round by round
(:func:`~fairalloc.mechanism.schedule_round`, :class:`~fairalloc.mechanism.RoundScheduler`),
each round is placed on servers (:func:`~fairalloc.mechanism.place`), and the throughputs the
policies need for a new job are estimated from a few measurements
(:class:`~fairalloc.mechanism.ThroughputEstimator`, :func:`~fairalloc.mechanism.complete_matrix`).

One job per file: :mod:`~fairalloc.mechanism.rounds` (the round problem and Algorithm 1),
:mod:`~fairalloc.mechanism.assignment` (the values :class:`RoundAssignment`,
:class:`ServerLayout`, :class:`Placement`), :mod:`~fairalloc.mechanism.placement` (:func:`place`),
:mod:`~fairalloc.mechanism.scheduler` (:class:`RoundScheduler`) and
:mod:`~fairalloc.mechanism.estimation` (matrix completion and fingerprint matching).
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
