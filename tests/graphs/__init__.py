"""Tests of ``graphs/`` (``lg_harness.graphs``)."""
