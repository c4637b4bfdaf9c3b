"""Tests of ``benchmarks/`` (``lg_harness.benchmarks``)."""
