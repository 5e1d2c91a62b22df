"""fairalloc's fuzz suite (issue #12, point 5): the README's promises as properties, over every
public entry point.

* ``targets.py`` -- ``TARGETS``: one target per public entry point (functions, constructors,
  builder methods, simulator, trace reader, property checks, ``fairalloc.testing``). Each has a
  hypothesis strategy mixing valid data at awkward scales with invalid data, a call, and an
  independent check of what it returns (``checks.py``: numpy/scipy recomputations -- Eisenberg-
  Gale gaps at returned and at allocation-implied prices, sharing incentive and envy-freeness;
  LPs built from the papers' definitions and solved with ``scipy.optimize.linprog``; an event
  simulation of EFQ/GPS; proportional-response leave-one-out markets; brute-force Nash welfare;
  DESIGN.md's Dirichlet rule and plan semantics).
* ``core.py`` -- ``run_case`` classifies one call: ok, typed_error, crash, wrong, mutated,
  writable, hang (see its docstring); ``drive`` runs a target under hypothesis with a fixed
  seed. Also recorded: what a call printed (and its numpy RuntimeWarnings), and InputErrors
  that do not name their argument.
* ``rescale.py`` -- unit rescaling (x 10^k, k in -12..12) and permutation checks.
* ``strategies.py`` -- the input generators.

Quick profile (CI): ``pytest tests/test_fuzz.py``. Long profile:
``python benchmarks/fuzz.py --examples 10000``. A new public entry point needs a target
(``tests/test_fuzz.py::test_registry_covers_the_public_api``).
"""
