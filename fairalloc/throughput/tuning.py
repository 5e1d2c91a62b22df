"""`Tuning`: the performance knobs of the throughput family's solve plans, as one value.

A stage LP's plan (`fairalloc.throughput.strategies.stage_plan`) is a pure function of the
instance's shape and a `Tuning`: which strategies it holds (a structured solver, restricted
columns, a warm simplex, the exact whole-LP tail) and how long each tries before it declines.
No knob changes an answer -- every result is certified on the original program, and the plan
always ends in exact methods -- only which strategy produces it and how fast. The defaults are
measured (each field says where); a caller, a benchmark or a test passes another value through
``solve(..., tuning=Tuning(...))`` instead of patching module constants.

Examples
--------
>>> import fairalloc as fa
>>> from fairalloc.throughput import Tuning
>>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
>>> r = fa.max_min_fairness(jobs, fa.Cluster({"v100": 1, "k80": 1}),
...                         tuning=Tuning(structured_min_jobs=1))
>>> r.stats.path, round(r.objective * 11, 6)
(('structured-level', 'floor-from-level'), 8.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._validation import as_tuning_value, check_knobs

__all__ = ["DEFAULT_TUNING", "Tuning", "as_tuning"]


@dataclass(frozen=True)
class Tuning:
    """Performance knobs of the throughput policies' solve plans (none changes an answer).

    Parameters
    ----------
    structured_min_jobs : int
        Jobs (or symmetry classes) from which the structured solvers
        (`fairalloc.throughput.structured`) are tried first -- with a warm start (the previous
        round's prices) at any size: below, the whole LP is faster (and they are not even
        imported: first call). Measured (2 cores, log-normal speeds on 3 types, gangs 1-8,
        weights 1/5, with the work-conserving stage, structured / whole LP): max-min 96 jobs
        20 / 5 ms, 256 jobs 24 / 17 ms, 384 jobs 24 / 26 ms, 768 jobs 41 / 70 ms;
        finish-time fairness 256 jobs 62 / 50 ms, 384 jobs 44 / 80 ms; Gavel's throughputs,
        2,048 jobs in 156 classes: 12.8 / 10.7 ms.
    structured_max_types : int
        Types above which the structured solvers are not tried. They price ``k (k + 1) / 2``
        candidate vertices per job at each Newton step: at 4,096 jobs x 100 types the
        structured path took 118 s against 8 s for the whole LP (2 cores); at 4,096 x 64
        (``benchmarks/families.py``'s many-types-64, max-min) its sampled Newton phase found
        no balance and cost 4 of 11.4 CPU s before the whole LP (7.2 s alone: HiGHS' interior
        point).
    sample_gate_types : int
        Types above which a level stage's Newton search goes on to all jobs only if its
        sampled phase balanced demand and capacity (4,096 x 30 max-min: 2.5 s with the gate,
        3.8 s without).
    ipm_min_columns : int
        Columns above which fairalloc gives a whole LP to HiGHS' interior point (below: its
        own choice, usually the simplex).
    presolve_min_columns : int
        Columns from which HiGHS presolves a whole stage LP that fairalloc gives to its own
        choice (below, the presolve costs more than it saves). Measured (2 cores, HiGHS 1.16,
        Gavel's throughputs, level / work-conserving LP with / without presolve): 155
        classes (461 columns) 1.6 / 1.1 and 2.6 / 2.0 ms; 900 jobs (2,681 columns) 11.1 / 8.4
        and 18.8 / 13.7 ms, the same iterations.
    columns_min_types, columns_min_columns : int
        A whole stage LP on at least this many types and columns is first solved over
        restricted columns (column generation, `fairalloc.throughput.columns`). 4,096 jobs,
        max-min + work-conserving, whole LP / restricted: 30 types 4.8 / 7.1 s, 64 types
        11.2 / 9.6 s, 100 types 15.0 / 8.5 s.
    priced_min_types, priced_max_types : int
        ... and a first level stage on this range of types with the first columns chosen by
        capacity prices of a sampled LP (4,096 x 30: 3.07 s whole LP, 0.50 s priced).
    sample_jobs : int
        Jobs in that sampled LP (256 / 512 / 1,024: 0.82 / 0.50 / 0.64 s at 4,096 x 30).
    columns_first_per_job, columns_add_per_job : int
        Columns per job in the first restricted LP; improving columns added per job and round.
    columns_max_rounds : int
        Restricted rounds before the strategy declines (7 needed at 4,096 x 100).
    columns_max_share : float
        A restricted LP holding more than this share of the columns declines (it would cost
        about what the whole LP does).
    pair_columns_min_columns : int
        A level LP of a warm sequence (water-filling's levels, finish-time fairness'
        Dinkelbach stages) with at least this many pair columns (``pairs=``) is first solved
        by column generation over them (`fairalloc.throughput.pair_columns`; ``0``: never).
        Gavel's packed water-filling, whole columns / pair columns (thread CPU,
        ``benchmarks/pair_columns.py``): 256 jobs (22.8k pair columns) 6.3 / 0.82 s, 100
        jobs 0.43 / 0.17 s, 64 jobs (2,197) 0.108 / 0.099 s, 40 jobs (987) 0.058 / 0.078 s;
        packed finish-time fairness 256 jobs 0.60 / 0.33 s.
    level_max_rounds, floor_max_rounds : int
        Restricted-master rounds of the structured level / floor solvers before they decline.
    floor_priced_rounds : int
        Floor-master rounds whose own duals choose the jobs to free before the elastic dual LP
        does (16,384 jobs: the two dual LPs cost about 80 % of the stage).
    max_explicit_share : float
    min_degenerate_jobs : int
        A structured master in which more than this share (and number) of the jobs keep their
        own variables (degenerate prices) declines: it is about the whole LP, slower (16,384
        jobs, 96 % explicit: 12 s against 3 s).
    newton_sample_max_error : float
        Capacity error below which the sampled Newton phase seeds the full phase (``0``:
        never).
    class_min_candidates : int
    class_min_candidate_share : float
        Row classes (jobs of one model sharing one master variable per type) are formed only
        when a master would keep more than this many (and this share of) jobs explicit.
    dinkelbach_provisional : bool
        Finish-time fairness: intermediate Dinkelbach stages are taken from the structured
        solver without the whole LP's certificate (the stage that ends the sequence is
        certified); a fifth of each stage at 16,384 jobs.
    dinkelbach_seed : bool
        Each Dinkelbach stage's Newton search starts from the previous stage's end point.
    ftf_closed_form : bool
        Finish-time fairness with its work-conserving stage first tries the closed-form
        optimum ``R_lb`` (each job's rho at its fastest column; plan step
        ``ftf-closed-form``): the work-conserving stage with every ``rho <= R_lb`` proves it
        where it is attained (every Gavel-drawn round measured), with no Dinkelbach stage;
        where it is not, the Dinkelbach sequence runs (Gavel-drawn rounds through the adapter,
        thread CPU: 256 jobs 10.2 -> 5.4 ms, 2,048 jobs 47 -> 22 ms).
    warm_start : bool
        A sequence of LPs of one shape (Dinkelbach stages, water-filling levels, restricted
        rounds, bottleneck LPs) starts each from the previous one's basis, where the backend
        has the ``basis`` capability (HiGHS): few pivots instead of a cold solve (10 types, 512
        jobs: a warm level LP 0.06 s against 0.5-1.2 s cold). A whole work-conserving LP
        starts from the basis of the level LP it follows (``exact-lp+from-level``; Gavel's
        throughputs, 155 classes: 142 pivots 1.5 ms against 227 pivots 2.6 ms cold).
    from_level_min_columns : int
        Columns from which a whole work-conserving LP starts from the level LP's basis
        (``exact-lp+from-level``, with `warm_start`); below, it is solved cold (HiGHS' own
        choice). Measured (2 cores, HiGHS 1.16, Gavel's throughputs, seeds 1-3, HiGHS time of
        the work-conserving LP, from the level basis / cold): 128 jobs (192-210 columns)
        0.63-0.86 / 0.49-0.60 ms, 256 jobs (267-291) 0.88-1.28 / 0.59-0.94 ms, 512 jobs
        (355-369) 1.30-1.43 / 0.99-1.32 ms, 1,024 jobs (408-424) 1.38-1.73 / 1.62-1.87 ms,
        2,048 jobs (461-475) 1.51-1.60 / 2.05-2.36 ms: a basis that must first be factored
        and repaired pays from about 400 columns.
    end_check_ratio : float
        Water-filling: its end check (one LP over every unsaturated job) runs when a level's
        duals times the solvers' feasibility tolerance exceed this multiple of the level's
        accuracy (``0``: after every level that froze jobs).
    water_dual_rule : bool
        Water-filling's fast strategy freezes the jobs its level LP's duals prove bottlenecked
        (rule (a), `fairalloc.throughput.max_min`). ``False``: each level that rises freezes
        every unfrozen job (unless the LP's point overshot its certified bound) and leaves
        the decision to the end check, which unfreezes the jobs that can still rise and
        resumes; where two resumed rounds do not repair the floors the fast strategy fails
        and the plan's robust water-filling answers (tests drive the end check, the resumed
        rounds and that hand-over with it; never faster).
    water_fast : bool
        Water-filling tries its fast strategy first (the level duals' rule, saturation jumps,
        an end check; `fairalloc.throughput.max_min`); ``False``: the robust water-filling
        alone (`fairalloc.throughput.water_robust`; tests compare the two with it).
    water_robust_max_jobs : int
        Jobs up to which water-filling's plan ends with the robust water-filling, which answers
        where the fast one fails (one certified LP per decision; 10 types, robust alone: 64
        jobs 0.9 s, 256 jobs 240 s with 7,071 LPs, against 0.3 s and 3 s for the fast one).
        Beyond, the fast one's error stands.
    near_tie_share : float
        Jobs whose program data agree within this share of ``gap_tol`` (relative, entry by
        entry: ``1e-8`` at the default ``gap_tol``) are solved as one near class first
        (``near-symmetry:<classes>``, `fairalloc.throughput.symmetry`); the expansion must
        certify on the original program, else the plan hands over. Merging rows within ``r``
        moved the certified gap by about ``0.6 r`` to ``0.7 r`` (max-min, finish-time
        fairness, makespan), so the default keeps it a hundredth of the tolerance; ``0``
        turns near classes off. ``benchmarks/families.py``'s near-identical family, 4,096
        jobs (CPU s, identical family in brackets): max-min 0.135 to 0.025 (0.017),
        finish-time fairness 0.71 to 0.033 (0.019).

    Examples
    --------
    Trying the structured solvers first whatever the size (the answer is certified the same):

    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0]] * 2 + [[12.0, 4.0]] * 2)
    >>> b = fa.MaxMinFairness(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    >>> r = b.solve(tuning=Tuning(structured_min_jobs=0))
    >>> "structured-level" in r.stats.path, r.certificate.ok
    (True, True)
    """

    structured_min_jobs: int = 320
    structured_max_types: int = 48
    sample_gate_types: int = 16
    ipm_min_columns: int = 3000
    presolve_min_columns: int = 3000
    columns_min_types: int = 65
    columns_min_columns: int = 50_000
    priced_min_types: int = 17
    priced_max_types: int = 48
    sample_jobs: int = 512
    columns_first_per_job: int = 2
    columns_add_per_job: int = 2
    columns_max_rounds: int = 12
    pair_columns_min_columns: int = 2000
    columns_max_share: float = 0.5
    level_max_rounds: int = 30
    floor_max_rounds: int = 4
    floor_priced_rounds: int = 2
    max_explicit_share: float = 0.3
    min_degenerate_jobs: int = 1024
    newton_sample_max_error: float = 0.05
    class_min_candidates: int = 128
    class_min_candidate_share: float = 0.05
    dinkelbach_provisional: bool = True
    dinkelbach_seed: bool = True
    ftf_closed_form: bool = True
    warm_start: bool = True
    from_level_min_columns: int = 400
    end_check_ratio: float = 1.0
    water_dual_rule: bool = True
    water_fast: bool = True
    water_robust_max_jobs: int = 256
    near_tie_share: float = 0.01

    def __post_init__(self) -> None:
        check_knobs(self)


#: the measured defaults
DEFAULT_TUNING = Tuning()


def as_tuning(value: Any) -> Tuning:
    """``value`` as a `Tuning` (``None``: the defaults); anything else is an InputError."""
    return as_tuning_value(value, Tuning, DEFAULT_TUNING, "fairalloc.throughput.Tuning")  # type: ignore[no-any-return]
