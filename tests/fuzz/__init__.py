"""fairalloc's fuzz suite (issue #12, point 5): a registry of targets over every public entry
point, independent checks, and drivers shared by ``tests/test_fuzz.py`` (quick profile, CI)
and ``benchmarks/fuzz.py`` (long profile)."""
