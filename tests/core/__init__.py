"""Tests of ``lg_harness/core/`` (``lg_harness.core``)."""
