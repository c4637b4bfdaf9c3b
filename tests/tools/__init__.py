"""Tests of ``tools/`` (``lg_harness.tools``)."""
