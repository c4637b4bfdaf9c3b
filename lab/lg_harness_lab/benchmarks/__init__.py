"""Benchmarks that print figures measured in one run, each next to its own baseline."""

