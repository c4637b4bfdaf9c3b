"""Tests of ``lg_harness/tools/`` (``lg_harness.tools``)."""
