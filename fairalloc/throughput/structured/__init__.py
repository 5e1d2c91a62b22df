"""Structured exact solvers for the level and floor stages of the throughput policies.

Files: ``level.py`` (`fast_level`), ``floor.py`` (`fast_floor`, the work-conserving
stage), ``rowclass.py`` (row classes: jobs near a tie with proportional rows share one master
variable per type, #15) and ``common.py`` (what they share: the demand model, the Newton price
estimate, the restricted-master sub-solve and the full-LP certificate).

Only the ``k`` capacity rows (and the level ``theta``) couple the jobs of a stage LP, so at
given capacity prices every job's best response is a vertex of its own small polytope. These
solvers estimate the prices by Newton's method on *demand = capacity*, fold every job whose
vertex is clear into the capacity rows, solve a small restricted master LP with HiGHS, assemble
the duals of the whole LP (in closed form, or by an LP in the ``k`` prices) and accept the
result only when `fairalloc.certificates.lp_certificate` on the **full** LP passes;
otherwise they hand the stage to the full LP. The method, with the paper sections, is in
``formulations/max_min_fairness.md``.

Path steps recorded in the stage solver (``SolveStats.path``): ``structured-level`` (a level
stage certified by the structured solver), ``structured-level-provisional`` (an intermediate
Dinkelbach stage returned without its certificate: it only chooses the sequence's next point,
and the last stage is certified; ``formulations/gavel_policies.md``), ``floor-from-level``
(the work-conserving stage certified at the level's allocation with scaled level duals, no
LP), ``structured-floor``
(the floor stage certified from its restricted master), ``floor-freed:<jobs>`` (a floor round
gave ``<jobs>`` blocking jobs their own variables), ``exact-lp`` (the whole LP). A hand-over
to the whole LP is recorded in ``SolveStats.fallbacks`` as ``"structured-level->exact-lp:
<reason>"`` or ``"structured-floor->exact-lp: <reason>"``. Where the structured path cannot
win it hands over before doing the work (#15): more than ``STRUCTURED_MAX_TYPES`` types, or
more than ``SAMPLE_GATE_TYPES`` and a sampled Newton phase that found no balance (``many
types``), or a master that would keep most jobs explicit (``degenerate prices``); the
decision rules and their measurements are in ``formulations/max_min_fairness.md``.
"""

from __future__ import annotations

from .floor import FLOOR_FREED, FLOOR_FROM_LEVEL, STRUCTURED_FLOOR, fast_floor
from .level import STRUCTURED_LEVEL, fast_level

__all__ = ["FLOOR_FREED", "FLOOR_FROM_LEVEL", "STRUCTURED_FLOOR", "STRUCTURED_LEVEL",
           "fast_floor", "fast_level"]
