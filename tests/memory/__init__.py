"""Tests of ``memory/`` (``lg_harness.memory``)."""
