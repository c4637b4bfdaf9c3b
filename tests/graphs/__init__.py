"""Tests of ``lg_harness/graphs/`` (``lg_harness.graphs``)."""
