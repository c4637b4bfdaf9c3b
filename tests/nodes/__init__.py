"""Tests of ``lg_harness/nodes/`` (``lg_harness.nodes``)."""
