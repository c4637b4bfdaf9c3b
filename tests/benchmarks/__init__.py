"""Tests of ``lab/lg_harness_lab/benchmarks/`` (``lg_harness_lab.benchmarks``)."""
