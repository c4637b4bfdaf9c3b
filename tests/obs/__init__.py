"""Tests of ``lg_harness/obs/`` (``lg_harness.obs``)."""
