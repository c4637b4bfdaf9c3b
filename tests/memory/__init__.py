"""Tests of ``lg_harness/memory/`` (``lg_harness.memory``)."""
