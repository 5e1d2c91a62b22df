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
otherwise they decline (`fairalloc.plan.Decline`) and the stage plan's next strategy runs
(`fairalloc.throughput.strategies`). The method, with the paper sections, is in
``formulations/max_min_fairness.md``.

They are strategies of the stage plans (`level_strategy`, `floor_strategies`). Path steps
(``SolveStats.path``): ``structured-level`` (a level
stage certified by the structured solver), ``structured-level-provisional`` (an intermediate
Dinkelbach stage returned without its certificate: it only chooses the sequence's next point,
and the last stage is certified; ``formulations/gavel_policies.md``), ``floor-from-level``
(the work-conserving stage certified at the level's allocation with scaled level duals, no
LP), ``structured-floor``
(the floor stage certified from its restricted master), ``floor-freed:<jobs>`` (a floor round
gave ``<jobs>`` blocking jobs their own variables), ``exact-lp`` (the whole LP). A hand-over
to the whole LP is recorded in ``SolveStats.fallbacks`` as ``"structured-level->exact-lp:
<reason>"`` or ``"structured-floor->exact-lp: <reason>"``. Where the structured path cannot
win it declines before doing the work (#15): more than ``tuning.structured_max_types`` types,
or more than ``tuning.sample_gate_types`` and a sampled Newton phase that found no balance
(``many types``), or a master that would keep most jobs explicit (``degenerate prices``); the
decision rules and their measurements are in ``formulations/max_min_fairness.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

#: each name's module, imported on first use (PEP 562): the policies import this package at
#: module level, and a scheduler whose rounds are below ``tuning.structured_min_jobs`` jobs never
#: loads the solvers (about 10 ms of a first call, #16)
_EXPORTS = {"FLOOR_FREED": "floor", "FLOOR_FROM_LEVEL": "floor", "STRUCTURED_FLOOR": "floor",
            "fast_floor": "floor", "floor_strategies": "floor", "STRUCTURED_LEVEL": "level",
            "fast_level": "level", "level_strategy": "level"}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # static type checkers see every lazily exported name
    from .floor import FLOOR_FREED as FLOOR_FREED
    from .floor import FLOOR_FROM_LEVEL as FLOOR_FROM_LEVEL
    from .floor import STRUCTURED_FLOOR as STRUCTURED_FLOOR
    from .floor import fast_floor as fast_floor
    from .floor import floor_strategies as floor_strategies
    from .level import STRUCTURED_LEVEL as STRUCTURED_LEVEL
    from .level import fast_level as fast_level
    from .level import level_strategy as level_strategy
