"""fairalloc measured where a scheduler calls it: Gavel's jobs, Gavel's dicts, one run (#28).

Jobs are drawn from Gavel's measured throughputs (``../shared/data/gavel/
simulation_throughputs.json``, or ``--data DIR``) the way Gavel's ``generate_job`` draws them:
scale factor 1/2/4/8 with probability .7/.1/.15/.05; model uniform over the 26 templates,
re-drawn until it supports the scale factor; priority 5 with probability .2, else 1; duration
``60 * 10**U(1.5, 3)`` s with probability .8, else ``60 * 10**U(3, 4)`` s; total steps =
duration x the V100 throughput. Worker types v100, p100, k80 (the ``*_unconsolidated``
throughputs are not read: no adapter policy is placement-sensitive); the cluster has N/4
workers of each type (at least 8, so every gang fits). A single call sees the jobs mid-run:
``times_since_start`` = 0-19 whole 6-minute rounds, ``num_steps_remaining`` = U(0.1, 1) of the
total. Water-filling: ``clip(N / 40, 5, 50)`` entities (Gavel's ``entity_to_job_mapping`` /
``entity_weights``, weights 1-3), jobs uniform over them. Packing: pair keys (Gavel's
``JobIdPair(a, b)``, rates ``[rate of a, rate of b]`` from the file's pair entries, which exist
for single-GPU jobs only) for every pair of single-GPU jobs that fits on some type, or a uniform
sample of ``--max-pairs`` of them (all pairs grow as N**2: 2,590 at 100 jobs, 17,165 at 256,
1.02 M at 2,048). Seeded; the same ``--seed`` draws the same jobs.

**(a) one cold call through the Gavel adapter** (``fairalloc.integrations.gavel.policy(name)``,
a new object per call, dicts keyed by ``JobIdPair`` in and out; the timed call includes both
conversions) for every policy the adapter offers, side by side with, in the same process
(every solver's first call, on 32 jobs, is not timed; a call under 1 s is timed 3 times, the
median kept; ``ref / fairalloc`` is the ratio of wall times, CPU seconds in brackets):

* **bare minimum**: the dicts read once into arrays, exact symmetry classes
  (``fairalloc._symmetry.exact_classes`` on what the program reads) and HiGHS (its default
  simplex up to 1,000 classes, its interior point above) on the class-reduced LP of each stage
  fairalloc solves (max-min, makespan, FTF: level then
  work-conserving stage; FTF: the two LPs at the optimal rho, known in advance -- a floor, not
  an algorithm; water-filling: the LP sequence over classes; FIFO: the arrival-order greedy;
  packing: the whole LP once). ``fairalloc / bare`` is fairalloc's total over that floor.
* **cvxpy+ECOS / cvxpy+Clarabel**: Gavel-style vectorised cvxpy programs (``x`` an (n, 3)
  variable, ``cp.multiply`` rows; FTF the SOCP ``min max(t/D + steps/D inv_pos(tp))``;
  water-filling and FIFO the sequence of LPs those policies are) with the solver named. FIFO
  also has **Gavel greedy**: jobs in arrival order each fill their fastest types first.
* **HiGHS whole LP**: highspy (interior point) on the same stages job by job (FTF: a
  Dinkelbach sequence of LPs).
* **POP k=4 / k=16**: jobs split at random into k sub-problems with ``floor(workers / k)`` of each
  type, each solved by HiGHS, merged; the time is the sum (serial) and ``loss`` the merged
  allocation's objective against the exact optimum (inf: some job got nothing under FTF).

``rel. diff`` is the largest relative difference of the compared values (the policy objective
and, for two-stage policies, the total normalised throughput; FIFO: every job's normalised
throughput; water-filling: every job's level) from fairalloc's, flagged ``!`` above
``AGREE_TOL``. A reference over ``--ref-seconds`` is stopped (between its solver calls) and
skipped at larger sizes.

**(b) a trace through ``RoundPolicy``**: ``--rounds`` rounds (at most ``--trace-seconds`` per
policy and size), about 1 % of the jobs leaving and as many arriving each round, every job
6 minutes older and a quarter round of V100 steps further; each round solved cold
(``fa.solve_round``) and warm (one ``fa.RoundPolicy``); p50/p90 wall and CPU (thread) time per
round, and rounds whose certificate failed. Packing is not a ``RoundPolicy`` policy.

**(c) every name of Gavel's ``get_available_policies()``** (#29) through
``gavel.policy(name)``, one cold call each with the arguments Gavel's scheduler passes for that
name (packed names and ``gandiva``: the pair keys as well; cost names: ``INSTANCE_COSTS``, every
``SLO_EVERY``-th job an SLO of ``SLO_SLACK`` x its time alone on a V100; ``allox``: the
single-GPU jobs), with the certificate of the LP names (``--no-names`` skips it).

Run::

    python benchmarks/gavel_inputs.py                     # 100 / 256 jobs, 100 rounds: ~1.5 min
    python benchmarks/gavel_inputs.py --jobs 100 256 2048 --rounds 500
    python benchmarks/gavel_inputs.py --jobs 8192 --policy max-min ftf
    python benchmarks/gavel_inputs.py --jobs 100 256 2048 8192 32768 --rounds 500 \\
        --ref-seconds 600 --trace-seconds 600               # everything (hours)

ECOS: ``pip install ".[bench]"`` (in the checkout); without it the ECOS rows say "not installed".

Measured 2026-11-29 on the shared 2-core development machine (1-minute load average 1.5-3.2
from other sessions while it ran, so wall times are inflated by waiting for a core: compare
the CPU seconds in brackets and the trace's cpu columns between versions), Python 3.11.7,
numpy 2.4.6, scipy 1.17.1, cvxpy 1.9.3, HiGHS 1.16.0, Clarabel 0.11.1, ECOS 2.0.14, with the
code of commit 2b9d046 (the merged stop 38), the two commands one after the other::

    python benchmarks/gavel_inputs.py --jobs 100 256 2048 --rounds 500 --plain     # 11.5 min
    python benchmarks/gavel_inputs.py --jobs 8192 --policy max-min ftf --rounds 500 --plain  # 2 min

Both printed their (a) and (b) tables, then stopped in (c) (exit status 1, so no (c) table and
no ``uncertified results`` line below): the AlloX name's call (``gavel.policy("allox")`` on the
single-GPU jobs) builds a dense (waiting jobs, waiting jobs x workers) cost matrix and numpy
could not allocate it (24 GiB at 2,048 jobs, 1.47 TiB at 8,192). The default (``python
benchmarks/gavel_inputs.py``: 100 / 256 jobs, 100 rounds, run right after) took 90 s (65 s CPU)
and ran through (c) (AlloX 0.54 s at 256 jobs; uncertified results: 0). AlloX was fixed right
after this recording (an exact matching over (type, level) slots, `allox_match`: 2,048 jobs
0.16 s, 256 jobs 0.007 s thread CPU); (c) at 2,048 and 8,192 jobs is not re-recorded here. The
previous recording
(commit 2c98748, 2026-11-28) predates (c). What the numbers say (``was``: that recording):

* every fairalloc result was certified: every cold call and all 9,294 trace rounds, each
  solved cold and warm (0 bad). fairalloc agrees with every exact reference to 2e-6 or better,
  except the FIFO LP sequences (1-2e-5 at 100 jobs; HiGHS at 2,048 jobs 4e-4 "!"), as before:
  that reference drifts, while fairalloc equals Gavel's greedy to 0;
* against the fastest exact reference (ref / fairalloc, wall) at 256 / 2,048 / 8,192 jobs:
  max-min 5.2x / 18.5x / 29.1x, ECOS the fastest at each (was 1.95x / 6.4x / 8.5x); FTF 5.2x
  (HiGHS whole LP; ECOS 5.6x) / 7.1x / 13.5x, ECOS (was 1.5x / 2.0x / 3.65x; the 2,048-job call
  waited for a core: 0.029 s CPU, ECOS ~10x in CPU); makespan 1.9x / 5.8x, ECOS (was 1.5x /
  1.2x); max throughput 2.1x / 2.9x, HiGHS (was 0.97x / 2.9x; ECOS 3.4x / 6.5x, was 2.2x /
  6.0x); water-filling 21.8x (Clarabel; ECOS fails: unbounded_inaccurate) / > 203x (every LP
  sequence stopped at 60 s; was 22.8x / > 155x); packing 4.2x / 2.2x, HiGHS whole LP (1.5x in
  CPU; was 3.7x / 1.2x; ECOS 6.1x / 73x). FIFO is no longer the exception: 0.000 / 0.001 /
  0.003 s at 100 / 256 / 2,048 jobs (was 0.005 / 0.008 / 0.106 s), Gavel's greedy 1.17x /
  0.76x / 1.21x of it (was 0.05x / 0.08x / 0.04x), ECOS 1,353x / > 18,552x (stopped);
* fairalloc / bare minimum at 100 / 256 / 2,048 (/ 8,192) jobs: max-min 1.0 / 0.8 / 0.9 / 1.6x
  (was 1.5 / 1.9 / 2.3 / 3.0x), FTF 0.6 / 0.5 / 0.1 / 0.1x (was 2.4 / 1.6 / 0.4 / 0.3x),
  makespan 0.9 / 1.3 / 0.2x (was 2.0 / 1.3 / 0.8x), max throughput 1.7 / 1.6 / 2.0x (was 1.9 /
  2.0 / 2.1x), FIFO 0.5 / 1.2 / 0.5x (was 13.2 / 10.0 / 17.9x), water-filling 0.3 / 0.1x (the
  floor stopped at 2,048), packing 0.4 / 0.2 / 0.7x: fairalloc is within 1.3x of the floor
  or below it except max throughput (1.6-2.0x) and max-min at 8,192 jobs (1.6x);
* RoundPolicy trace, CPU p50 warm against cold at 100 / 256 / 2,048 (/ 8,192) jobs: max-min 1.5
  / 1.7 / 3.2 / 8.3 against 3.0 / 4.1 / 6.8 / 12.3 ms (was 5.9 / 10.7 / 17.3 / 36.6 warm, warm =
  cold); FTF 1.6 / 2.2 / 11.7 / 58.3 against 3.6 / 5.8 / 26.8 / 86.4 ms (was 13.7 / 18.9 / 88.1
  / 265.5, warm = cold); the policies without an incremental round cost as much warm as cold or
  a little more (at most 14 %): makespan 4.9 / 7.0 / 26.6 against 4.3 / 6.7 / 26.1 ms (was 8.8 /
  14.1 / 131), max throughput 2.6 / 2.8 / 5.0 against 2.4 / 2.6 / 4.6 (was 2.9 / 3.3 / 5.8),
  FIFO 1.8 / 2.3 / 6.8 against 1.8 / 2.2 / 6.4 (was 4.1 / 7.4 / 97.5), water-filling 26.7 / 43.4
  / 318 against 26.7 / 43.1 / 314 ms (was 49 / 66 / 418). All 500 rounds ran within 30 s per
  mode except water-filling at 2,048 jobs (94 rounds; was 43) and FTF at 8,192 (200; was 52);
* POP: with floor(workers / k) workers, 8-GPU gangs cannot run in a sub-cluster at 100 jobs
  (k = 4) and 256 jobs (k = 16): loss 100 % / inf, as before. From 2,048 jobs its loss is
  0.0 % for the fairness policies (0.5-1.6 % for max throughput), but its serial time is above
  fairalloc's (max-min 24-26x fairalloc's at 2,048 jobs, 27-40x at 8,192; FTF 6.5-10x and
  12-15x), except packing (2,048 jobs, k = 16: 0.20 s against 0.38 s, loss 0.0 %; was 0.14
  against 0.45 s).

First command:

gavel_inputs: fairalloc 0.1.0, numpy 2.4.6, cvxpy 1.9.3, 2 CPUs, ECOS installed, seed 2028
data: /work/shared/data/gavel/simulation_throughputs.json

(a) 100 jobs, one cold call per solver (8 s for this size)

| policy | solver | wall s (cpu s) | ref / fairalloc | rel. diff | certificate / note |
|---|---|---|---|---|---|
| max-min | fairalloc (adapter, cold) | 0.005 (0.005) |  |  | ok, gap 1e-09, res 1e-15 |
| max-min | bare minimum | 0.005 (0.005) | 0.98x | 1e-15 | fa / bare 1.0x |
| max-min | cvxpy+ECOS | 0.019 (0.015) | 3.90x | 7e-10 |  |
| max-min | cvxpy+Clarabel | 0.019 (0.017) | 3.97x | 2e-08 |  |
| max-min | HiGHS whole LP | 0.011 (0.011) | 2.36x | 2e-16 |  |
| max-min | POP k=4 | 0.022 (0.022) | 4.68x |  | loss 100.0% |
| max-min | POP k=16 | 0.050 (0.049) | 10.52x |  | loss 100.0% |
| ftf | fairalloc (adapter, cold) | 0.004 (0.004) |  |  | ok, gap 6e-10, res 9e-15 |
| ftf | bare minimum | 0.007 (0.007) | 1.54x | 3e-10 | fa / bare 0.6x (rho known) |
| ftf | cvxpy+ECOS | 0.019 (0.019) | 4.30x | 2e-10 |  |
| ftf | cvxpy+Clarabel | 0.022 (0.022) | 5.07x | 3e-10 |  |
| ftf | HiGHS whole LP | 0.023 (0.023) | 5.38x | 3e-10 |  |
| ftf | POP k=4 | 0.061 (0.061) | 13.99x |  | loss inf (a job got 0) |
| ftf | POP k=16 | 0.176 (0.167) | 40.36x |  | loss inf (a job got 0) |
| makespan | fairalloc (adapter, cold) | 0.005 (0.005) |  |  | ok, gap 1e-09, res 3e-16 |
| makespan | bare minimum | 0.006 (0.006) | 1.09x | 2e-16 | fa / bare 0.9x |
| makespan | cvxpy+ECOS | 0.018 (0.016) | 3.58x | 5e-07 |  |
| makespan | cvxpy+Clarabel | 0.019 (0.019) | 3.81x | 2e-06 |  |
| makespan | HiGHS whole LP | 0.011 (0.011) | 2.15x | 2e-16 |  |
| makespan | POP k=4 | 0.022 (0.022) | 4.24x |  | loss inf (a job got 0) |
| makespan | POP k=16 | 0.054 (0.054) | 10.56x |  | loss inf (a job got 0) |
| max-throughput | fairalloc (adapter, cold) | 0.003 (0.003) |  |  | ok, gap 0e+00, res 0e+00 |
| max-throughput | bare minimum | 0.002 (0.002) | 0.60x | 1e-16 | fa / bare 1.7x |
| max-throughput | cvxpy+ECOS | 0.006 (0.006) | 2.04x | 5e-12 |  |
| max-throughput | cvxpy+Clarabel | 0.007 (0.007) | 2.41x | 1e-11 |  |
| max-throughput | HiGHS whole LP | 0.003 (0.003) | 0.99x | 1e-16 |  |
| max-throughput | POP k=4 | 0.007 (0.007) | 2.17x |  | loss 7.6% |
| max-throughput | POP k=16 | 0.020 (0.020) | 6.64x |  | loss 33.0% |
| fifo | fairalloc (adapter, cold) | 0.000 (0.000) |  |  | ok, gap 0e+00, res 0e+00 |
| fifo | bare minimum | 0.000 (0.000) | 1.91x | 0e+00 | fa / bare 0.5x (greedy) |
| fifo | Gavel greedy | 0.000 (0.000) | 1.17x | 0e+00 |  |
| fifo | HiGHS whole LP | 0.081 (0.069) | 389.74x | 1e-05 |  |
| fifo | cvxpy+Clarabel | 0.433 (0.402) | 2086.87x | 1e-05 |  |
| fifo | cvxpy+ECOS | 0.390 (0.376) | 1880.55x | 2e-05 |  |
| water-filling | fairalloc (adapter, cold) | 0.019 (0.020) |  |  | ok, gap 5e-15, res 0e+00 |
| water-filling | bare minimum | 0.066 (0.066) | 3.38x | 2e-08 | fa / bare 0.3x (LP sequence) |
| water-filling | cvxpy+ECOS | error |  |  | ECOS: unbounded_inaccurate |
| water-filling | cvxpy+Clarabel | 0.227 (0.207) | 11.64x | 2e-08 |  |
| water-filling | HiGHS whole LP | 0.149 (0.149) | 7.66x | 2e-08 |  |
| packing | fairalloc (adapter, cold) | 0.042 (0.039) |  |  | ok, gap 7e-14, res 0e+00 |
| packing | bare minimum | 0.103 (0.091) | 2.44x | 7e-14 | fa / bare 0.4x (whole LP) |
| packing | cvxpy+ECOS | 0.115 (0.115) | 2.72x | 2e-12 |  |
| packing | cvxpy+Clarabel | 0.164 (0.145) | 3.87x | 1e-10 |  |
| packing | HiGHS whole LP | 0.105 (0.093) | 2.48x | 7e-14 |  |
| packing | POP k=4 | 0.033 (0.033) | 0.78x |  | loss 100.0% |
| packing | POP k=16 | 0.050 (0.050) | 1.19x |  | loss 100.0% |

(a) 256 jobs, one cold call per solver (23 s for this size)

| policy | solver | wall s (cpu s) | ref / fairalloc | rel. diff | certificate / note |
|---|---|---|---|---|---|
| max-min | fairalloc (adapter, cold) | 0.004 (0.004) |  |  | ok, gap 1e-09, res 4e-16 |
| max-min | bare minimum | 0.005 (0.005) | 1.24x | 0e+00 | fa / bare 0.8x |
| max-min | cvxpy+ECOS | 0.022 (0.022) | 5.23x | 6e-10 |  |
| max-min | cvxpy+Clarabel | 0.028 (0.028) | 6.54x | 1e-09 |  |
| max-min | HiGHS whole LP | 0.028 (0.020) | 6.58x | 3e-13 |  |
| max-min | POP k=4 | 0.031 (0.031) | 7.24x |  | loss -0.0% |
| max-min | POP k=16 | 0.069 (0.069) | 16.29x |  | loss 100.0% |
| ftf | fairalloc (adapter, cold) | 0.007 (0.007) |  |  | ok, gap 6e-10, res 9e-15 |
| ftf | bare minimum | 0.013 (0.013) | 1.88x | 3e-10 | fa / bare 0.5x (rho known) |
| ftf | cvxpy+ECOS | 0.040 (0.033) | 5.63x | 3e-10 |  |
| ftf | cvxpy+Clarabel | 0.038 (0.038) | 5.39x | 1e-08 |  |
| ftf | HiGHS whole LP | 0.037 (0.033) | 5.24x | 3e-10 |  |
| ftf | POP k=4 | 0.082 (0.082) | 11.51x |  | loss -0.0% |
| ftf | POP k=16 | 0.217 (0.213) | 30.50x |  | loss inf (a job got 0) |
| makespan | fairalloc (adapter, cold) | 0.013 (0.009) |  |  | ok, gap 1e-09, res 5e-15 |
| makespan | bare minimum | 0.010 (0.010) | 0.77x | 2e-13 | fa / bare 1.3x |
| makespan | cvxpy+ECOS | 0.024 (0.024) | 1.93x | 2e-07 |  |
| makespan | cvxpy+Clarabel | 0.103 (0.039) | 8.21x | 5e-07 |  |
| makespan | HiGHS whole LP | 0.043 (0.020) | 3.41x | 5e-15 |  |
| makespan | POP k=4 | 0.065 (0.032) | 5.17x |  | loss -0.0% |
| makespan | POP k=16 | 0.175 (0.082) | 14.00x |  | loss inf (a job got 0) |
| max-throughput | fairalloc (adapter, cold) | 0.004 (0.004) |  |  | ok, gap 1e-16, res 0e+00 |
| max-throughput | bare minimum | 0.003 (0.003) | 0.64x | 0e+00 | fa / bare 1.6x |
| max-throughput | cvxpy+ECOS | 0.014 (0.010) | 3.38x | 9e-12 |  |
| max-throughput | cvxpy+Clarabel | 0.021 (0.013) | 5.07x | 3e-11 |  |
| max-throughput | HiGHS whole LP | 0.009 (0.005) | 2.07x | 0e+00 |  |
| max-throughput | POP k=4 | 0.016 (0.009) | 3.93x |  | loss 2.5% |
| max-throughput | POP k=16 | 0.042 (0.026) | 10.27x |  | loss 17.5% |
| fifo | fairalloc (adapter, cold) | 0.001 (0.001) |  |  | ok, gap 0e+00, res 0e+00 |
| fifo | bare minimum | 0.001 (0.001) | 0.82x | 0e+00 | fa / bare 1.2x (greedy) |
| fifo | Gavel greedy | 0.001 (0.001) | 0.76x | 0e+00 |  |
| fifo | HiGHS whole LP | 0.612 (0.350) | 672.48x | 6e-07 |  |
| fifo | cvxpy+Clarabel | 1.688 (1.560) | 1854.24x | 7e-07 |  |
| fifo | cvxpy+ECOS | 1.232 (1.161) | 1352.64x | 6e-07 |  |
| water-filling | fairalloc (adapter, cold) | 0.062 (0.056) |  |  | ok, gap 2e-15, res 0e+00 |
| water-filling | bare minimum | 0.601 (0.539) | 9.76x | 7e-08 | fa / bare 0.1x (LP sequence) |
| water-filling | cvxpy+ECOS | error |  |  | ECOS: unbounded_inaccurate |
| water-filling | cvxpy+Clarabel | 1.341 (1.224) | 21.78x | 2e-08 |  |
| water-filling | HiGHS whole LP | 2.016 (1.861) | 32.74x | 8e-08 |  |
| packing | fairalloc (adapter, cold) | 0.125 (0.121) |  |  | ok, gap 3e-15, res 0e+00 |
| packing | bare minimum | 0.540 (0.469) | 4.32x | 2e-15 | fa / bare 0.2x (whole LP) |
| packing | cvxpy+ECOS | 0.759 (0.699) | 6.07x | 3e-12 |  |
| packing | cvxpy+Clarabel | 0.962 (0.924) | 7.69x | 2e-11 |  |
| packing | HiGHS whole LP | 0.521 (0.456) | 4.17x | 2e-15 |  |
| packing | POP k=4 | 0.105 (0.101) | 0.84x |  | loss 0.0% |
| packing | POP k=16 | 0.078 (0.078) | 0.62x |  | loss 100.0% |

(a) 2,048 jobs, one cold call per solver (382 s for this size)

| policy | solver | wall s (cpu s) | ref / fairalloc | rel. diff | certificate / note |
|---|---|---|---|---|---|
| max-min | fairalloc (adapter, cold) | 0.008 (0.008) |  |  | ok, gap 1e-09, res 2e-15 |
| max-min | bare minimum | 0.009 (0.009) | 1.10x | 9e-15 | fa / bare 0.9x |
| max-min | cvxpy+ECOS | 0.155 (0.144) | 18.46x | 4e-10 |  |
| max-min | cvxpy+Clarabel | 0.275 (0.259) | 32.82x | 3e-08 |  |
| max-min | HiGHS whole LP | 0.309 (0.280) | 36.78x | 1e-15 |  |
| max-min | POP k=4 | 0.199 (0.181) | 23.67x |  | loss 0.0% |
| max-min | POP k=16 | 0.216 (0.208) | 25.71x |  | loss 0.0% |
| ftf | fairalloc (adapter, cold) | 0.045 (0.029) |  |  | ok, gap 6e-10, res 8e-16 |
| ftf | bare minimum | 0.332 (0.318) | 7.33x | 3e-10 | fa / bare 0.1x (rho known) |
| ftf | cvxpy+ECOS | 0.320 (0.285) | 7.07x | 2e-10 |  |
| ftf | cvxpy+Clarabel | 0.401 (0.370) | 8.85x | 2e-09 |  |
| ftf | HiGHS whole LP | 0.438 (0.423) | 9.67x | 2e-10 |  |
| ftf | POP k=4 | 0.295 (0.294) | 6.51x |  | loss 0.0% |
| ftf | POP k=16 | 0.468 (0.445) | 10.33x |  | loss -0.0% |
| makespan | fairalloc (adapter, cold) | 0.029 (0.029) |  |  | ok, gap 1e-09, res 1e-14 |
| makespan | bare minimum | 0.175 (0.171) | 6.06x | 1e-14 | fa / bare 0.2x |
| makespan | cvxpy+ECOS | 0.167 (0.166) | 5.76x | 3e-07 |  |
| makespan | cvxpy+Clarabel | 0.370 (0.362) | 12.78x | 1e-06 |  |
| makespan | HiGHS whole LP | 0.178 (0.169) | 6.15x | 1e-14 |  |
| makespan | POP k=4 | 0.166 (0.158) | 5.74x |  | loss 0.0% |
| makespan | POP k=16 | 0.207 (0.192) | 7.14x |  | loss -0.0% |
| max-throughput | fairalloc (adapter, cold) | 0.010 (0.010) |  |  | ok, gap 0e+00, res 0e+00 |
| max-throughput | bare minimum | 0.005 (0.005) | 0.50x | 0e+00 | fa / bare 2.0x |
| max-throughput | cvxpy+ECOS | 0.066 (0.054) | 6.47x | 4e-13 |  |
| max-throughput | cvxpy+Clarabel | 0.109 (0.109) | 10.60x | 9e-13 |  |
| max-throughput | HiGHS whole LP | 0.030 (0.029) | 2.88x | 0e+00 |  |
| max-throughput | POP k=4 | 0.033 (0.033) | 3.23x |  | loss 0.5% |
| max-throughput | POP k=16 | 0.049 (0.049) | 4.78x |  | loss 1.6% |
| fifo | fairalloc (adapter, cold) | 0.003 (0.003) |  |  | ok, gap 0e+00, res 0e+00 |
| fifo | bare minimum | 0.006 (0.006) | 1.96x | 0e+00 | fa / bare 0.5x (greedy) |
| fifo | Gavel greedy | 0.004 (0.004) | 1.21x | 0e+00 |  |
| fifo | HiGHS whole LP | 21.448 (20.293) | 6631.91x | 4e-04 ! |  |
| fifo | cvxpy+Clarabel | > 60 | > 18552x |  | stopped |
| fifo | cvxpy+ECOS | > 60 | > 18552x |  | stopped |
| water-filling | fairalloc (adapter, cold) | 0.295 (0.279) |  |  | ok, gap 1e-12, res 2e-15 |
| water-filling | bare minimum | > 60 |  |  | stopped |
| water-filling | cvxpy+ECOS | error |  |  | ECOS: infeasible_inaccurate |
| water-filling | cvxpy+Clarabel | > 60 | > 203x |  | stopped |
| water-filling | HiGHS whole LP | > 60 | > 203x |  | stopped |
| packing | fairalloc (adapter, cold) | 0.379 (0.376) |  |  | ok, gap 0e+00, res 0e+00 |
| packing | bare minimum | 0.542 (0.540) | 1.43x | 4e-16 | fa / bare 0.7x (whole LP) |
| packing | cvxpy+ECOS | 27.627 (26.767) | 72.92x | 1e-12 |  |
| packing | cvxpy+Clarabel | 9.130 (8.379) | 24.10x | 4e-10 |  |
| packing | HiGHS whole LP | 0.829 (0.567) | 2.19x | 4e-16 |  |
| packing | POP k=4 | 0.219 (0.170) | 0.58x |  | loss 0.0% |
| packing | POP k=16 | 0.199 (0.132) | 0.53x |  | loss 0.0% |

summary (fa: fairalloc; ref / fa > 1: fairalloc faster; rel. diff: largest)

| policy | jobs | fa s | bare s | fa / bare | fastest exact ref. | ref / fa | rel. diff | cert. |
|---|---|---|---|---|---|---|---|---|
| max-min | 100 | 0.005 | 0.005 | 1.0x | HiGHS whole LP 0.011 | 2.36x | 2e-08 | ok |
| ftf | 100 | 0.004 | 0.007 | 0.6x | cvxpy+ECOS 0.019 | 4.30x | 3e-10 | ok |
| makespan | 100 | 0.005 | 0.006 | 0.9x | HiGHS whole LP 0.011 | 2.15x | 2e-06 | ok |
| max-throughput | 100 | 0.003 | 0.002 | 1.7x | HiGHS whole LP 0.003 | 0.99x | 1e-11 | ok |
| fifo | 100 | 0.000 | 0.000 | 0.5x | Gavel greedy 0.000 | 1.17x | 2e-05 | ok |
| water-filling | 100 | 0.019 | 0.066 | 0.3x | HiGHS whole LP 0.149 | 7.66x | 2e-08 | ok |
| packing | 100 | 0.042 | 0.103 | 0.4x | HiGHS whole LP 0.105 | 2.48x | 1e-10 | ok |
| max-min | 256 | 0.004 | 0.005 | 0.8x | cvxpy+ECOS 0.022 | 5.23x | 1e-09 | ok |
| ftf | 256 | 0.007 | 0.013 | 0.5x | HiGHS whole LP 0.037 | 5.24x | 1e-08 | ok |
| makespan | 256 | 0.013 | 0.010 | 1.3x | cvxpy+ECOS 0.024 | 1.93x | 5e-07 | ok |
| max-throughput | 256 | 0.004 | 0.003 | 1.6x | HiGHS whole LP 0.009 | 2.07x | 3e-11 | ok |
| fifo | 256 | 0.001 | 0.001 | 1.2x | Gavel greedy 0.001 | 0.76x | 7e-07 | ok |
| water-filling | 256 | 0.062 | 0.601 | 0.1x | cvxpy+Clarabel 1.341 | 21.78x | 8e-08 | ok |
| packing | 256 | 0.125 | 0.540 | 0.2x | HiGHS whole LP 0.521 | 4.17x | 2e-11 | ok |
| max-min | 2,048 | 0.008 | 0.009 | 0.9x | cvxpy+ECOS 0.155 | 18.46x | 3e-08 | ok |
| ftf | 2,048 | 0.045 | 0.332 | 0.1x | cvxpy+ECOS 0.320 | 7.07x | 2e-09 | ok |
| makespan | 2,048 | 0.029 | 0.175 | 0.2x | cvxpy+ECOS 0.167 | 5.76x | 1e-06 | ok |
| max-throughput | 2,048 | 0.010 | 0.005 | 2.0x | HiGHS whole LP 0.030 | 2.88x | 9e-13 | ok |
| fifo | 2,048 | 0.003 | 0.006 | 0.5x | Gavel greedy 0.004 | 1.21x | 4e-04 ! | ok |
| water-filling | 2,048 | 0.295 | > 60 |  | - | - | - | ok |
| packing | 2,048 | 0.379 | 0.542 | 0.7x | HiGHS whole LP 0.829 | 2.19x | 4e-10 | ok |

(b) RoundPolicy trace, ms per round (<= 500 rounds, <= 30 s per mode; bad: uncertified rounds)

| policy | jobs | rounds | warm p50 | p90 | cpu p50 | p90 | cold p50 | p90 | cpu p50 | p90 | bad |
|---|---|---|---|---|---|---|---|---|---|---|---|
| max-min | 100 | 500 | 1.5 | 5.4 | 1.5 | 1.8 | 3.3 | 7.8 | 3.0 | 3.9 | 0 |
| ftf | 100 | 500 | 1.6 | 5.8 | 1.6 | 1.8 | 3.7 | 7.9 | 3.6 | 4.0 | 0 |
| makespan | 100 | 500 | 4.9 | 5.3 | 4.9 | 5.3 | 4.3 | 4.6 | 4.3 | 4.6 | 0 |
| max-throughput | 100 | 500 | 2.6 | 6.8 | 2.6 | 2.9 | 2.4 | 6.5 | 2.4 | 2.6 | 0 |
| fifo | 100 | 500 | 1.8 | 6.0 | 1.8 | 2.1 | 1.8 | 5.9 | 1.8 | 2.0 | 0 |
| water-filling | 100 | 500 | 28.4 | 39.9 | 26.7 | 31.3 | 28.3 | 40.3 | 26.7 | 31.4 | 0 |
| max-min | 256 | 500 | 1.7 | 1.9 | 1.7 | 1.9 | 4.3 | 5.6 | 4.1 | 5.5 | 0 |
| ftf | 256 | 500 | 2.2 | 2.5 | 2.2 | 2.4 | 5.8 | 6.4 | 5.8 | 6.4 | 0 |
| makespan | 256 | 500 | 7.0 | 8.5 | 7.0 | 7.7 | 6.7 | 8.1 | 6.7 | 7.3 | 0 |
| max-throughput | 256 | 500 | 2.8 | 3.1 | 2.8 | 3.1 | 2.6 | 2.8 | 2.6 | 2.8 | 0 |
| fifo | 256 | 500 | 2.3 | 2.6 | 2.3 | 2.5 | 2.2 | 2.5 | 2.2 | 2.4 | 0 |
| water-filling | 256 | 500 | 44.4 | 57.3 | 43.4 | 51.9 | 44.3 | 56.5 | 43.1 | 51.7 | 0 |
| max-min | 2,048 | 500 | 3.2 | 7.5 | 3.2 | 3.7 | 7.1 | 14.4 | 6.8 | 10.2 | 0 |
| ftf | 2,048 | 500 | 11.8 | 14.5 | 11.7 | 13.1 | 27.4 | 55.7 | 26.8 | 51.0 | 0 |
| makespan | 2,048 | 500 | 26.7 | 35.8 | 26.6 | 35.5 | 26.3 | 34.9 | 26.1 | 34.8 | 0 |
| max-throughput | 2,048 | 500 | 5.0 | 5.4 | 5.0 | 5.4 | 4.6 | 5.2 | 4.6 | 5.0 | 0 |
| fifo | 2,048 | 500 | 6.8 | 7.3 | 6.8 | 7.2 | 6.4 | 7.0 | 6.4 | 6.9 | 0 |
| water-filling | 2,048 | 94 | 317.6 | 380.2 | 317.5 | 379.9 | 314.1 | 381.3 | 313.7 | 381.2 | 0 |

Second command:

(a) 8,192 jobs, one cold call per solver (27 s for this size)

| policy | solver | wall s (cpu s) | ref / fairalloc | rel. diff | certificate / note |
|---|---|---|---|---|---|
| max-min | fairalloc (adapter, cold) | 0.023 (0.023) |  |  | ok, gap 1e-09, res 1e-15 |
| max-min | bare minimum | 0.015 (0.015) | 0.63x | 9e-16 | fa / bare 1.6x |
| max-min | cvxpy+ECOS | 0.679 (0.679) | 29.10x | 7e-10 |  |
| max-min | cvxpy+Clarabel | 0.681 (0.680) | 29.18x | 2e-08 |  |
| max-min | HiGHS whole LP | 1.225 (1.224) | 52.49x | 9e-16 |  |
| max-min | POP k=4 | 0.942 (0.925) | 40.34x |  | loss 0.0% |
| max-min | POP k=16 | 0.637 (0.634) | 27.29x |  | loss 0.0% |
| ftf | fairalloc (adapter, cold) | 0.095 (0.095) |  |  | ok, gap 6e-10, res 7e-13 |
| ftf | bare minimum | 1.119 (1.107) | 11.73x | 1e-10 | fa / bare 0.1x (rho known) |
| ftf | cvxpy+ECOS | 1.286 (1.271) | 13.48x | 1e-10 |  |
| ftf | cvxpy+Clarabel | 1.297 (1.278) | 13.60x | 1e-09 |  |
| ftf | HiGHS whole LP | 2.169 (2.146) | 22.73x | 1e-10 |  |
| ftf | POP k=4 | 1.419 (1.403) | 14.87x |  | loss -0.0% |
| ftf | POP k=16 | 1.184 (1.170) | 12.41x |  | loss -0.0% |

summary (fa: fairalloc; ref / fa > 1: fairalloc faster; rel. diff: largest)

| policy | jobs | fa s | bare s | fa / bare | fastest exact ref. | ref / fa | rel. diff | cert. |
|---|---|---|---|---|---|---|---|---|
| max-min | 8,192 | 0.023 | 0.015 | 1.6x | cvxpy+ECOS 0.679 | 29.10x | 2e-08 | ok |
| ftf | 8,192 | 0.095 | 1.119 | 0.1x | cvxpy+ECOS 1.286 | 13.48x | 1e-09 | ok |

(b) RoundPolicy trace, ms per round (<= 500 rounds, <= 30 s per mode; bad: uncertified rounds)

| policy | jobs | rounds | warm p50 | p90 | cpu p50 | p90 | cold p50 | p90 | cpu p50 | p90 | bad |
|---|---|---|---|---|---|---|---|---|---|---|---|
| max-min | 8,192 | 500 | 8.3 | 9.2 | 8.3 | 9.2 | 12.3 | 16.7 | 12.3 | 16.7 | 0 |
| ftf | 8,192 | 200 | 58.4 | 72.4 | 58.3 | 72.4 | 86.4 | 121.3 | 86.4 | 121.3 | 0 |
"""

from __future__ import annotations

import argparse
import ast
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from gavel_references import cvxpy_policy as cvxpy_program  # noqa: E402
from gavel_references import (  # noqa: E402  (next to this file)
    derive,
    fifo_greedy,
    fifo_lps,
    lp_policy,
    packing_lp,
    rel_diff,
    take,
    values,
    water_filling_lps,
)

# --------------------------------------------------------------------------------------------
# constants
# --------------------------------------------------------------------------------------------
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "gavel"
DATA_FILE = "simulation_throughputs.json"
SEED = 2028
TYPES = ("v100", "p100", "k80")
SF_VALUES = (1, 2, 4, 8)
SF_P = (0.7, 0.1, 0.15, 0.05)  # Gavel's generate_job
PRIORITY_HIGH, PRIORITY_P = 5.0, 0.2  # priority 5 w.p. 0.2, else 1
SHORT_P = 0.8  # duration 60 * 10**U(1.5, 3) s w.p. 0.8, else 60 * 10**U(3, 4) s
SHORT_EXP, LONG_EXP = (1.5, 3.0), (3.0, 4.0)
ROUND_S = 360.0  # Gavel's round (s)
MIDRUN_ROUNDS = 20  # a single call's jobs have run 0-19 rounds
MIDRUN_LEFT = (0.1, 1.0)  # ... and have this fraction of their steps left
PROGRESS = 0.25  # trace: a job advances PROGRESS * ROUND_S seconds of V100 steps per round
MIN_LEFT = 0.01  # trace: steps left never fall below this fraction of the total
CHURN = 0.01  # trace: fraction of the jobs leaving (and arriving) per round
MIN_WORKERS = 8  # workers per type at least the largest gang
JOBS_PER_ENTITY, MIN_ENTITIES, MAX_ENTITIES = 40, 5, 50
ENTITY_WEIGHTS = (1.0, 2.0, 3.0)
MAX_PAIRS = 10_000  # packing: pair keys at most (a uniform sample of all fitting pairs)
POP_K = (4, 16)
AGREE_TOL = 1e-4  # ACCURACY: relative difference flagged "!" (two exact solvers, one program)
#: PERFORMANCE: the bare minimum solves up to this many classes by HiGHS's default (simplex),
#: more by its interior point (8,192 unreduced FTF rows: simplex 4.4 s, interior point 1.4 s)
BARE_SIMPLEX_MAX = 1000
REPEAT_BELOW = 1.0  # PERFORMANCE: a solver faster than this (s) is timed 3x (median)
REPEATS = 3
DEFAULT_JOBS = (100, 256)
DEFAULT_ROUNDS = 100
DEFAULT_REF_SECONDS = 60.0  # PERFORMANCE: per reference and size
DEFAULT_TRACE_SECONDS = 30.0  # PERFORMANCE: per policy, size and mode (cold / warm)
WARM_N = 32  # every solver's first (untimed) call
POLICIES = {  # our label -> (Gavel adapter name, RoundPolicy name or None)
    "max-min": ("max_min_fairness_perf", "max_min_fairness"),
    "ftf": ("finish_time_fairness_perf", "finish_time_fairness"),
    "makespan": ("min_total_duration_perf", "min_makespan"),
    "max-throughput": ("max_sum_throughput_perf", "max_total_throughput"),
    "fifo": ("fifo_perf", "fifo"),
    "water-filling": ("max_min_fairness_water_filling_perf", "water_filling"),
    "packing": ("max_min_fairness_packing", None),
}
MINIMISE = ("ftf", "makespan")
CVXPY = {"cvxpy+ECOS": "ECOS", "cvxpy+Clarabel": "CLARABEL"}


class JobIdPair:
    """A job id as Gavel keys its dicts: one job (``b is None``) or a space-sharing pair."""

    __slots__ = ("_a", "_b")

    def __init__(self, a: int, b: int | None = None) -> None:
        self._a, self._b = a, b

    def __hash__(self) -> int:
        return hash((self._a, self._b))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobIdPair) and (self._a, self._b) == (other._a, other._b)

    def __lt__(self, other: JobIdPair) -> bool:  # arrival order (Gavel's ids increase)
        return (self._a, -1 if self._b is None else self._b) < (
            other._a, -1 if other._b is None else other._b)

    def is_pair(self) -> bool:
        return self._b is not None

    def singletons(self) -> tuple[JobIdPair, JobIdPair]:
        assert self._b is not None
        return JobIdPair(self._a), JobIdPair(self._b)

    def __repr__(self) -> str:
        return f"{self._a}" if self._b is None else f"({self._a}, {self._b})"


# --------------------------------------------------------------------------------------------
# Gavel's jobs
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    """The throughput file as arrays: ``keys`` (model, sf); ``T`` (K, 3) alone; ``pair``
    (K1, K1, 3, 2) for the single-GPU keys (``single[key]``: its row there, or -1)."""

    keys: tuple[tuple[str, int], ...]
    T: np.ndarray
    single: np.ndarray
    pair: np.ndarray
    models: tuple[str, ...]


def load_table(path: Path) -> Table:
    raw = json.loads(path.read_text())
    keys = tuple(sorted(ast.literal_eval(k) for k in raw["v100"]))
    T = np.array([[raw[t].get(str(key), {}).get("null", 0.0) for t in TYPES] for key in keys])
    ones = [key for key in keys if key[1] == 1]
    single = np.array([ones.index(key) if key in ones else -1 for key in keys])
    pair = np.zeros((len(ones), len(ones), len(TYPES), 2))
    for a, ka in enumerate(ones):
        for ti, t in enumerate(TYPES):
            row = raw[t].get(str(ka), {})
            for b, kb in enumerate(ones):
                v = row.get(str(kb))
                if isinstance(v, list) and len(v) == 2:
                    pair[a, b, ti] = v
    return Table(keys, T, single, pair, tuple(sorted({m for m, _ in keys})))


@dataclass(frozen=True)
class JobSet:
    """Active jobs (arrays in job order) and the cluster."""

    ids: np.ndarray
    key: np.ndarray  # row of Table.keys
    T: np.ndarray
    sf: np.ndarray
    w: np.ndarray
    total: np.ndarray  # total steps
    steps: np.ndarray  # steps remaining
    elapsed: np.ndarray
    entity: np.ndarray
    cap: np.ndarray
    entity_w: np.ndarray


def draw(table: Table, n: int, rng: np.random.Generator, first_id: int = 0,
         num_entities: int = MIN_ENTITIES) -> dict[str, np.ndarray]:
    """``n`` fresh jobs as Gavel's generate_job draws them."""
    index = {key: i for i, key in enumerate(table.keys)}
    sf = rng.choice(SF_VALUES, n, p=SF_P)
    model = rng.integers(0, len(table.models), n)
    ok = np.array([(table.models[m], s) in index for m, s in zip(model, sf)], dtype=bool)
    while not ok.all():  # re-drawn until the template supports the scale factor
        bad = np.flatnonzero(~ok)
        model[bad] = rng.integers(0, len(table.models), bad.size)
        ok[bad] = [(table.models[m], s) in index for m, s in zip(model[bad], sf[bad])]
    key = np.array([index[(table.models[m], s)] for m, s in zip(model, sf)], dtype=int)
    w = np.where(rng.random(n) < PRIORITY_P, PRIORITY_HIGH, 1.0)
    lo, hi = np.where(rng.random(n) < SHORT_P, SHORT_EXP[0], LONG_EXP[0]), None
    hi = np.where(lo == SHORT_EXP[0], SHORT_EXP[1], LONG_EXP[1])
    duration = 60.0 * 10.0 ** rng.uniform(lo, hi)
    T = table.T[key]
    return {"ids": np.arange(first_id, first_id + n), "key": key, "T": T,
            "sf": sf.astype(float), "w": w, "total": duration * T[:, 0],
            "entity": rng.integers(0, num_entities, n)}


def job_set(table: Table, n: int, seed: int) -> JobSet:
    """``n`` jobs mid-run on a cluster of N/4 workers of each type."""
    rng = np.random.default_rng(seed)
    ne = int(np.clip(n // JOBS_PER_ENTITY, MIN_ENTITIES, MAX_ENTITIES))
    d = draw(table, n, rng, 0, ne)
    steps = d["total"] * rng.uniform(*MIDRUN_LEFT, n)
    elapsed = ROUND_S * rng.integers(0, MIDRUN_ROUNDS, n)
    cap = np.full(len(TYPES), float(max(n // 4, MIN_WORKERS)))
    ew = rng.choice(ENTITY_WEIGHTS, ne)
    return JobSet(steps=steps, elapsed=elapsed.astype(float), cap=cap, entity_w=ew, **d)


def pairs_of(table: Table, js: JobSet, max_pairs: int, seed: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """(members (P, 2), rates (P, 3, 2)) of single-GPU job pairs that fit on some type."""
    rng = np.random.default_rng(seed + 1)
    one = np.flatnonzero(table.single[js.key] >= 0)
    a, b = np.triu_indices(one.size, 1)
    m = np.stack([one[a], one[b]], axis=1)
    rates = table.pair[table.single[js.key[m[:, 0]]], table.single[js.key[m[:, 1]]]]
    fits = (rates > 0).all(axis=2).any(axis=1)
    m, rates = m[fits], rates[fits]
    if m.shape[0] > max_pairs:
        pick = np.sort(rng.choice(m.shape[0], max_pairs, replace=False))
        m, rates = m[pick], rates[pick]
    return m, rates


def gavel_args(js: JobSet, pairs: tuple[np.ndarray, np.ndarray] | None = None
               ) -> dict[str, Any]:
    """Gavel's get_allocation arguments (dicts keyed by JobIdPair) for these jobs."""
    ids = [JobIdPair(int(i)) for i in js.ids]
    tp: dict[Any, Any] = {j: dict(zip(TYPES, row)) for j, row in zip(ids, js.T.tolist())}
    if pairs is not None:
        mem, rates = pairs
        for (a, b), r in zip(mem.tolist(), rates.tolist()):
            tp[JobIdPair(int(js.ids[a]), int(js.ids[b]))] = dict(zip(TYPES, r))
    ents: dict[str, list[Any]] = {f"entity{e}": [] for e in range(js.entity_w.size)}
    for j, e in zip(ids, js.entity.tolist()):
        ents[f"entity{e}"].append(j)
    return {"ids": ids, "tp": tp, "sf": dict(zip(ids, js.sf.tolist())),
            "w": dict(zip(ids, js.w.tolist())), "t": dict(zip(ids, js.elapsed.tolist())),
            "steps": dict(zip(ids, js.steps.tolist())),
            "spec": dict(zip(TYPES, js.cap.astype(int).tolist())),
            "ew": {f"entity{e}": float(v) for e, v in enumerate(js.entity_w)},
            "e2j": {e: js_ for e, js_ in ents.items() if js_}}


def reference(policy: str, name: str, js: JobSet, pairs: Any) -> dict[str, Any]:
    """One reference's solution (the reference's own data preparation included)."""
    d = derive(js.T, js.sf, js.w, js.steps, js.elapsed, js.cap)
    solver = "highs" if name == "HiGHS whole LP" else CVXPY.get(name, "")
    if name == "Gavel greedy":
        return fifo_greedy(d)
    if policy == "fifo":  # (vertex solutions: the kept values are met exactly)
        return fifo_lps(d, "highs-strict" if solver == "highs" else solver)
    if policy == "water-filling":
        return water_filling_lps(d, js.entity, js.entity_w, None, solver)
    if solver == "highs":
        return packing_lp(d, pairs) if policy == "packing" else lp_policy(policy, d)
    return cvxpy_program(policy, d, solver, pairs)


def pop(policy: str, js: JobSet, pairs: Any, k: int, seed: int) -> dict[str, Any]:
    """POP: jobs split at random into ``k`` sub-problems with floor(workers / k) each."""
    rng = np.random.default_rng(seed + k)
    n = js.T.shape[0]
    group = np.empty(n, dtype=int)
    group[rng.permutation(n)] = np.arange(n) % k
    cap = np.floor(js.cap / k)
    x = np.zeros_like(js.T)
    px = None if pairs is None else np.zeros((pairs[0].shape[0], len(TYPES)))
    for g in range(k if cap.any() else 0):  # (no worker in a sub-cluster: nobody runs)
        rows = np.flatnonzero(group == g)
        sub = derive(js.T[rows], js.sf[rows], js.w[rows], js.steps[rows], js.elapsed[rows],
                     cap)
        ok = sub["allowed"].any(axis=1)  # jobs whose gang fits the sub-cluster
        if not ok.any():
            continue
        sub = take(sub, np.flatnonzero(ok))
        rows = rows[ok]
        if policy == "packing":
            pos = np.full(n, -1)
            pos[rows] = np.arange(rows.size)
            keep = (pos[pairs[0]] >= 0).all(axis=1)
            sol = packing_lp(sub, (pos[pairs[0][keep]], pairs[1][keep]))
            px[keep] = sol["px"]
        else:
            sol = lp_policy(policy, sub)
        x[rows] = sol["x"]
    return {"x": x, "px": px}


# --------------------------------------------------------------------------------------------
# fairalloc: one cold adapter call; the bare minimum
# --------------------------------------------------------------------------------------------
def _cert_text(r: Any) -> tuple[str, bool]:
    certs = tuple(getattr(getattr(r, "reduced", None), "stage_certificates", ())) or (
        r.certificate,)
    ok = all(c.ok for c in certs)
    return (f"{'ok' if ok else 'NOT OK'}, gap {max(c.relative_gap for c in certs):.0e}, "
            f"res {max(c.primal_residual for c in certs):.0e}"), ok


def adapter_call(policy: str, g: dict[str, Any]) -> tuple[Callable[[], Any], Any]:
    """(the timed call, the policy object) of one cold Gavel-adapter call."""
    from fairalloc.integrations import gavel

    p = gavel.policy(POLICIES[policy][0])
    if policy == "ftf":  # jobs drawn mid-run: their isolated time so far taken as their
        # elapsed time (the references' denominator), not 0 as for a policy object that
        # saw them start (#29)
        p.cumulative_isolated_time = dict(g["t"])
    tp = g["tp_pairs"] if policy == "packing" else g["tp"]
    calls: dict[str, Callable[[], Any]] = {
        "max-min": lambda: p.get_allocation(tp, g["sf"], g["w"], g["spec"]),
        "ftf": lambda: p.get_allocation(tp, g["sf"], g["w"], g["t"], g["steps"], g["spec"]),
        "makespan": lambda: p.get_allocation(tp, g["sf"], g["steps"], g["spec"]),
        "max-throughput": lambda: p.get_allocation(tp, g["sf"], g["spec"]),
        "fifo": lambda: p.get_allocation(tp, g["sf"], g["spec"]),
        "water-filling": lambda: p.get_allocation(
            tp, g["sf"], g["w"], g["spec"], entity_weights=g["ew"],
            entity_to_job_mapping=g["e2j"]),
        "packing": lambda: p.get_allocation(tp, g["sf"], g["w"], g["spec"]),
    }
    return calls[policy], p


def fairalloc_solution(policy: str, out: Any, p: Any, g: dict[str, Any], pairs: Any
                       ) -> tuple[dict[str, Any], str, bool]:
    """(solution arrays, certificate text, ok) read off an adapter call's output."""
    x = np.array([[out[j][t] for t in TYPES] for j in g["ids"]])
    sol: dict[str, Any] = {"x": x}
    text, ok = _cert_text(p.last_result)
    if policy == "water-filling":
        sol["floors"] = np.asarray(p.last_result.reduced.level_floors)
    if policy == "packing" and pairs is not None and p.packing_result is not None:
        keys = [k for k in out if k.is_pair()]
        sol["px"] = np.array([[out[k][t] for t in TYPES] for k in keys]).reshape(-1, len(TYPES))
        c = p.packing_result.certificate
        ok = ok and c.ok
        text = (f"{'ok' if ok else 'NOT OK'}, gap {c.relative_gap:.0e}, "
                f"res {c.primal_residual:.0e}")
    return sol, text, ok


def bare(policy: str, g: dict[str, Any], js: JobSet, pairs: Any) -> dict[str, Any]:
    """The dicts read once into arrays, exact classes, HiGHS on the reduced stage LPs."""
    from fairalloc._symmetry import exact_classes

    ids = g["ids"]
    rows = list(map(g["tp"].__getitem__, ids))
    n = len(ids)
    T = np.fromiter((r[t] for r in rows for t in TYPES), float, n * len(TYPES)).reshape(n, -1)
    get = lambda name: np.fromiter(map(g[name].__getitem__, ids), float, n)  # noqa: E731
    sf, w, steps, t = get("sf"), get("w"), get("steps"), get("t")
    cap = np.fromiter(g["spec"].values(), float, len(TYPES))
    d = derive(T, sf, w, steps, t, cap)
    if policy == "fifo":
        return fifo_greedy(d)
    if policy == "packing":
        return packing_lp(d, pairs)
    if policy == "water-filling":
        e_of = {j: e for e, members in g["e2j"].items() for j in members}
        ent_names = list(g["ew"])
        pos = {e: i for i, e in enumerate(ent_names)}
        entity = np.fromiter((pos[e_of[j]] for j in ids), int, n)
        ew = np.fromiter(g["ew"].values(), float, len(ent_names))
        cl = exact_classes(T, sf, w, entity)
        method = "highs-choose" if cl.num_classes <= BARE_SIMPLEX_MAX else "highs"
        sol = water_filling_lps(take(d, cl.representative), entity[cl.representative], ew,
                                cl.counts, method)
        return {"floors": cl.expand(sol["floors"])}
    key = {"max-min": (T, sf, w), "makespan": (T, sf, steps), "max-throughput": (T, sf),
           "ftf": (T, sf, steps, t)}[policy]
    cl = exact_classes(*key)
    method = "highs-choose" if cl.num_classes <= BARE_SIMPLEX_MAX else "highs"
    sol = lp_policy(policy, take(d, cl.representative), cl.counts, method, R_known=g.get("R"))
    return {"x": cl.expand(sol["x"])}


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------
class Budget(Exception):
    """A reference ran past its time budget."""


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise `Budget` after ``seconds`` (checked between the solver's calls: a single C call
    is not interrupted)."""
    def stop(signum: int, frame: Any) -> None:
        raise Budget

    if not hasattr(signal, "SIGALRM"):
        yield
        return
    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def timed(fn: Callable[[], Any], budget: float | None = None) -> tuple[Any, float, float]:
    """(result, wall s, CPU s): median of REPEATS when a call is under REPEAT_BELOW s."""
    runs = []
    out = None
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        if budget is None:
            out = fn()
        else:
            with time_budget(budget):
                out = fn()
        runs.append((time.perf_counter() - t0, time.process_time() - c0))
        if runs[0][0] >= REPEAT_BELOW:
            break
    wall, cpu = sorted(runs)[len(runs) // 2]
    return out, wall, cpu


# --------------------------------------------------------------------------------------------
# (a) one size: fairalloc, the bare minimum and the references side by side
# --------------------------------------------------------------------------------------------
BARE_NOTE = {"ftf": " (rho known)", "water-filling": " (LP sequence)",
             "packing": " (whole LP)", "fifo": " (greedy)"}


def references_for(policy: str) -> tuple[str, ...]:
    if policy == "fifo":
        return ("Gavel greedy", "HiGHS whole LP", "cvxpy+Clarabel", "cvxpy+ECOS")
    refs = ("cvxpy+ECOS", "cvxpy+Clarabel", "HiGHS whole LP")
    return refs if policy == "water-filling" else (*refs, *(f"POP k={k}" for k in POP_K))


def _fmt(wall: float, cpu: float) -> str:
    return f"{wall:.3f} ({cpu:.3f})"


@dataclass
class Context:
    table: Table
    seed: int
    max_pairs: int
    ref_seconds: float
    over: dict[tuple[str, str], str]  # (policy, reference) -> why it is skipped from now on
    ecos: bool


def instance(ctx: Context, n: int) -> tuple[JobSet, Any, dict[str, Any], dict[str, Any]]:
    js = job_set(ctx.table, n, ctx.seed)
    pairs = pairs_of(ctx.table, js, ctx.max_pairs, ctx.seed)
    g = gavel_args(js)
    g["tp_pairs"] = gavel_args(js, pairs)["tp"]
    return js, pairs, g, derive(js.T, js.sf, js.w, js.steps, js.elapsed, js.cap)


def run_size(ctx: Context, n: int, policies: tuple[str, ...], warm_up: bool = False
             ) -> tuple[list[list[str]], list[list[str]], int]:
    """Rows of the per-solver table, of the summary table, and the uncertified count."""
    js, pairs, g, d = instance(ctx, n)
    rows: list[list[str]] = []
    summary: list[list[str]] = []
    bad = 0
    for policy in policies:
        pp = pairs if policy == "packing" else None

        def call(policy: str = policy) -> tuple[Any, Any]:
            fn, p = adapter_call(policy, g)
            return fn(), p

        (out, p), wall, cpu = timed(call)
        sol, cert, ok = fairalloc_solution(policy, out, p, g, pp)
        bad += not ok
        ours = values(policy, d, sol, pp)
        g["R"] = float(p.last_result.objective) if policy == "ftf" else None
        vec = policy in ("fifo", "water-filling")
        rows.append([policy, "fairalloc (adapter, cold)", _fmt(wall, cpu), "", "", cert])
        try:
            b, bwall, bcpu = timed(lambda policy=policy, pp=pp: bare(policy, g, js, pp),
                                   ctx.ref_seconds)
        except (Budget, Exception) as exc:  # (past the budget, or HiGHS failed: say so)
            bwall = bcpu = float("nan")
            btext = f"> {ctx.ref_seconds:.0f}" if isinstance(exc, Budget) else "error"
            rows.append([policy, "bare minimum", btext, "", "", "stopped" if isinstance(
                exc, Budget) else str(exc).splitlines()[0][:60]])
        else:
            brel = rel_diff(ours, values(policy, d, b, pp), vec)
            rows.append([policy, "bare minimum", _fmt(bwall, bcpu), f"{bwall / wall:.2f}x",
                         f"{brel:.0e}" + (" !" if not brel <= AGREE_TOL else ""),
                         f"fa / bare {wall / bwall:.1f}x" + BARE_NOTE.get(policy, "")])
        best: tuple[float, str] | None = None
        worst: float | None = None
        exact = None
        for name in references_for(policy):
            if warm_up and name.startswith("POP"):
                continue
            why = ctx.over.get((policy, name))
            if name == "cvxpy+ECOS" and not ctx.ecos:
                why = 'not installed (pip install ".[bench]" in the checkout)'
            if why:
                rows.append([policy, name, "-", "", "", why])
                continue
            try:
                if name.startswith("POP"):
                    k = int(name.split("=")[1])
                    ref, rw, rc = timed(lambda k=k, policy=policy, pp=pp: pop(
                        policy, js, pp, k, ctx.seed), ctx.ref_seconds)
                else:
                    ref, rw, rc = timed(lambda name=name, policy=policy, pp=pp: reference(
                        policy, name, js, pp), ctx.ref_seconds)
            except Budget:
                ctx.over[(policy, name)] = f"> {ctx.ref_seconds:.0f} s at {n:,} jobs"
                rows.append([policy, name, f"> {ctx.ref_seconds:.0f}",
                             f"> {ctx.ref_seconds / wall:.0f}x", "", "stopped"])
                continue
            except Exception as exc:  # a reference's solver failed: say so, go on
                rows.append([policy, name, "error", "", "", str(exc).splitlines()[0][:60]])
                continue
            got = values(policy, d, ref, pp)
            ratio = f"{rw / wall:.2f}x"
            if name.startswith("POP"):
                opt = exact if exact is not None else ours
                loss = ((got[0] - opt[0]) if policy in MINIMISE else (opt[0] - got[0])) / abs(
                    opt[0])
                note = f"loss {loss:.1%}" if np.isfinite(loss) else "loss inf (a job got 0)"
                rows.append([policy, name, _fmt(rw, rc), ratio, "", note])
                continue
            rel = rel_diff(ours, got, vec)
            worst = rel if worst is None else max(worst, rel)
            if name == "HiGHS whole LP":
                exact = got
            if best is None or rw < best[0]:
                best = (rw, name)
            rows.append([policy, name, _fmt(rw, rc), ratio,
                         f"{rel:.0e}" + (" !" if not rel <= AGREE_TOL else ""), ""])
        summary.append([policy, f"{n:,}", f"{wall:.3f}",
                        f"{bwall:.3f}" if bwall == bwall else btext,
                        f"{wall / bwall:.1f}x" if bwall == bwall else "",
                        "-" if best is None else f"{best[1]} {best[0]:.3f}",
                        "-" if best is None else f"{best[0] / wall:.2f}x",
                        "-" if worst is None else f"{worst:.0e}" + (
                            " !" if not worst <= AGREE_TOL else ""), "ok" if ok else "NOT OK"])
    return rows, summary, bad


# --------------------------------------------------------------------------------------------
# (b) a trace through RoundPolicy, warm and cold
# --------------------------------------------------------------------------------------------
def trace(ctx: Context, policy: str, n: int, rounds: int, budget: float) -> list[str]:
    import fairalloc as fa

    name = POLICIES[policy][1]
    assert name is not None
    rng = np.random.default_rng(ctx.seed + 7)
    js = job_set(ctx.table, n, ctx.seed)
    ne = js.entity_w.size
    st = {f: getattr(js, f) for f in ("ids", "key", "T", "sf", "w", "total", "steps",
                                      "elapsed", "entity")}
    settings: dict[str, Any] = {}
    if policy == "water-filling":
        settings["entity_weights"] = {f"entity{e}": float(v) for e, v in enumerate(js.entity_w)}
    warm = fa.RoundPolicy(name, **settings)
    spec = dict(zip(TYPES, js.cap.astype(int).tolist()))
    churn = max(1, round(n * CHURN))
    nxt = n
    times: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    bad = 0
    for r in range(rounds):
        if r:
            keep = np.ones(st["ids"].size, dtype=bool)
            keep[rng.choice(keep.size, churn, replace=False)] = False
            new = draw(ctx.table, churn, rng, nxt, ne)
            new["steps"], new["elapsed"] = new["total"].copy(), np.zeros(churn)
            st = {f: np.concatenate([v[keep], new[f]]) for f, v in st.items()}
            nxt += churn
        ids = [JobIdPair(int(i)) for i in st["ids"]]
        tp = {j: dict(zip(TYPES, row)) for j, row in zip(ids, st["T"].tolist())}
        per = {"scale_factor": dict(zip(ids, st["sf"].tolist()))}
        if policy in ("max-min", "water-filling"):
            per["weight"] = dict(zip(ids, st["w"].tolist()))
        if policy in ("ftf", "makespan"):
            per["steps_remaining"] = dict(zip(ids, st["steps"].tolist()))
        if policy == "ftf":  # (the isolated time given: warm and cold solve the same program)
            per["elapsed"] = dict(zip(ids, st["elapsed"].tolist()))
            per["isolated_elapsed"] = per["elapsed"]
        if policy == "fifo":
            per["order"] = dict(zip(ids, st["ids"].astype(float).tolist()))
        if policy == "water-filling":
            per["entities"] = {j: f"entity{e}" for j, e in zip(ids, st["entity"].tolist())}
        t0, c0 = time.perf_counter(), time.thread_time()
        rc = fa.solve_round(name, tp, spec, **per, **settings)
        t1, c1 = time.perf_counter(), time.thread_time()
        rw = warm.allocate(tp, spec, **per)
        t2, c2 = time.perf_counter(), time.thread_time()
        times["cold"].append((t1 - t0, c1 - c0))
        times["warm"].append((t2 - t1, c2 - c1))
        bad += (not _cert_text(rc)[1]) + (not _cert_text(rw)[1])
        st["elapsed"] = st["elapsed"] + ROUND_S
        st["steps"] = np.maximum(st["steps"] - PROGRESS * ROUND_S * st["T"][:, 0],
                                 MIN_LEFT * st["total"])
        if max(sum(t for t, _ in v) for v in times.values()) > budget:
            break
    cells = []
    for mode in ("warm", "cold"):
        a = np.array(times[mode]) * 1e3
        cells += [f"{np.percentile(a[:, i], q):.1f}" for i in (0, 1) for q in (50, 90)]
    return [policy, f"{n:,}", str(len(times["cold"])), *cells, str(bad)]


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------
def print_table(title: str, header: list[str], rows: list[list[str]], plain: bool) -> None:
    if not plain:
        try:
            from rich.console import Console
            from rich.table import Table as RichTable
        except ImportError:
            plain = True
    if not plain:
        t = RichTable(title=title)
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i < 2 else "right")
        for r in rows:
            t.add_row(*r)
        Console(width=220).print(t)
        return
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |", flush=True)


# --------------------------------------------------------------------------------------------
# (c) every name of Gavel's get_available_policies() through the adapter (#29)
# --------------------------------------------------------------------------------------------
#: $/GPU-hour per type for the cost policies (AWS on-demand, as in Gavel's cost evaluation:
#: p3 V100 3.06, p100 1.46 (GCP), p2 K80 0.90)
INSTANCE_COSTS = {"v100": 3.06, "p100": 1.46, "k80": 0.90}
SLO_EVERY = 10  # the cost-with-SLO policies: every 10th job has an SLO
SLO_SLACK = 10.0  # ... of this many times its remaining time alone on a V100 (meetable)


def name_call(name: str, p: Any, g: dict[str, Any]) -> Callable[[], Any]:
    """``p.get_allocation`` with the arguments Gavel's scheduler passes for ``name``."""
    packed = name.endswith(("packed", "packed_SLOs")) or name == "gandiva"
    tp, sf, spec = (g["tp_pairs"] if packed else g["tp"]), g["sf"], g["spec"]
    w, t, steps = g["w"], g["t"], g["steps"]
    if name == "allox":  # AlloX schedules single-worker jobs only
        ones = [j for j in g["ids"] if sf[j] == 1]
        return lambda: p.get_allocation({j: tp[j] for j in ones}, dict.fromkeys(ones, 1),
                                        t, steps, spec)
    if name.startswith("fifo") or name in ("gandiva", "isolated", "max_sum_throughput_perf"):
        return lambda: p.get_allocation(tp, sf, spec)
    if name.startswith("finish_time_fairness"):
        return lambda: p.get_allocation(tp, sf, w, t, steps, spec)
    if "water_filling" in name:
        return lambda: p.get_allocation(tp, sf, w, spec, entity_weights=g["ew"],
                                        entity_to_job_mapping=g["e2j"])
    if name.startswith("max_min_fairness"):
        return lambda: p.get_allocation(tp, sf, w, spec)
    if name == "max_sum_throughput_normalized_by_cost_perf":
        return lambda: p.get_allocation(tp, sf, spec, INSTANCE_COSTS)
    if name.endswith("SLOs"):
        slo = {j: SLO_SLACK * steps[j] / g["tp"][j]["v100"] for j in g["ids"][::SLO_EVERY]}
        return lambda: p.get_allocation(tp, sf, spec, instance_costs=INSTANCE_COSTS, SLOs=slo,
                                        num_steps_remaining={j: steps[j] for j in slo})
    return lambda: p.get_allocation(tp, sf, steps, spec)


def all_names(ctx: Context, n: int) -> tuple[list[list[str]], int]:
    """One cold adapter call per Gavel name: rows and the uncertified count."""
    from fairalloc.integrations import gavel

    _, _, g, _ = instance(ctx, n)
    rows, bad = [], 0
    for name in gavel.GAVEL_POLICY_NAMES:
        made: list[Any] = []

        def call(name: str = name, made: list[Any] = made) -> Any:  # a new (cold) object
            made.append(gavel.policy(name, seed=ctx.seed))
            return name_call(name, made[-1], g)()

        out, wall, cpu = timed(call)
        p = made[-1]
        r = getattr(p, "packing_result", None) or getattr(p, "last_result", None)
        if r is None:
            note = "heuristic (no program)"
        else:
            note, ok = _cert_text(r)
            bad += not ok
        used = sum(1 for k, row in out.items() if k.is_pair() and sum(row.values()) > 0)
        rows.append([name, f"{n:,}", _fmt(wall, cpu), f"{len(out):,}", f"{used:,}", note])
    return rows, bad


NAMES_HEADER = ["Gavel name", "jobs", "wall s (cpu s)", "keys out", "pairs used",
                "certificate / note"]


SOLVE_HEADER = ["policy", "solver", "wall s (cpu s)", "ref / fairalloc", "rel. diff",
                "certificate / note"]
SUMMARY_HEADER = ["policy", "jobs", "fa s", "bare s", "fa / bare", "fastest exact ref.",
                  "ref / fa", "rel. diff", "cert."]
TRACE_HEADER = ["policy", "jobs", "rounds", "warm p50", "p90", "cpu p50", "p90", "cold p50",
                "p90", "cpu p50", "p90", "bad"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help=f"folder of Gavel's {DATA_FILE} (default ../shared/data/gavel)")
    ap.add_argument("--jobs", type=int, nargs="+", default=list(DEFAULT_JOBS))
    ap.add_argument("--policy", nargs="+", choices=list(POLICIES), default=list(POLICIES))
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="trace rounds")
    ap.add_argument("--trace-seconds", type=float, default=DEFAULT_TRACE_SECONDS,
                    help="per policy, size and mode: the trace stops after this")
    ap.add_argument("--ref-seconds", type=float, default=DEFAULT_REF_SECONDS,
                    help="per reference and size: stopped (and skipped above) after this")
    ap.add_argument("--max-pairs", type=int, default=MAX_PAIRS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--no-trace", action="store_true")
    ap.add_argument("--no-names", action="store_true",
                    help="skip (c), every Gavel policy name through the adapter")
    ap.add_argument("--plain", action="store_true", help="markdown tables even with rich")
    args = ap.parse_args(argv)
    path = args.data / DATA_FILE
    if not path.is_file():
        print(f"gavel_inputs: skipped: {path} not found (Gavel's measured throughputs; "
              "--data DIR names the folder)")
        return 0
    import cvxpy as cp
    import highspy  # noqa: F401  (its import is not timed)

    import fairalloc as fa

    ctx = Context(load_table(path), args.seed, args.max_pairs, args.ref_seconds, {},
                  "ECOS" in cp.installed_solvers())
    policies = tuple(args.policy)
    import os

    print(f"gavel_inputs: fairalloc {fa.__version__}, numpy {np.__version__}, cvxpy "
          f"{cp.__version__}, {os.cpu_count()} CPUs, ECOS "
          f"{'installed' if ctx.ecos else 'not installed'}, seed {args.seed}\ndata: {path}",
          flush=True)
    run_size(replace(ctx, over={}), WARM_N, policies, warm_up=True)  # imports, first solves
    summary: list[list[str]] = []
    bad = 0
    for n in args.jobs:
        t0 = time.perf_counter()
        rows, summ, b = run_size(ctx, n, policies)
        bad += b
        summary += summ
        print_table(f"(a) {n:,} jobs, one cold call per solver ({time.perf_counter() - t0:.0f} "
                    "s for this size)", SOLVE_HEADER, rows, args.plain)
    print_table("summary (fa: fairalloc; ref / fa > 1: fairalloc faster; rel. diff: largest)",
                SUMMARY_HEADER, summary,
                args.plain)
    trows = []
    if not args.no_trace:
        for n in args.jobs:
            for policy in policies:
                if POLICIES[policy][1] is None:
                    continue
                trows.append(trace(ctx, policy, n, args.rounds, args.trace_seconds))
                bad += int(trows[-1][-1])
        print_table(f"(b) RoundPolicy trace, ms per round (<= {args.rounds} rounds, <= "
                    f"{args.trace_seconds:.0f} s per mode; bad: uncertified rounds)",
                    TRACE_HEADER, trows, args.plain)
    if not args.no_names:
        nrows = []
        for n in args.jobs:
            rows, b = all_names(ctx, n)
            nrows += rows
            bad += b
        print_table("(c) every name of Gavel's get_available_policies(), one cold adapter call "
                    "(a new policy object, constructor included; median of 3 under 1 s)",
                    NAMES_HEADER, nrows, args.plain)
    print(f"\nuncertified results: {bad}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
