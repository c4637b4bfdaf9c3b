"""Tests of ``core/`` (``lg_harness.core``)."""
