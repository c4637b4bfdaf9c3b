"""Benchmarks that print figures measured in one run, each next to its own baseline."""

if __name__ != "lg_harness.benchmarks":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.benchmarks, not benchmarks: the folder installs as lg_harness/benchmarks")
