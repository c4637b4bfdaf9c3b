"""Tests of ``nodes/`` (``lg_harness.nodes``)."""
