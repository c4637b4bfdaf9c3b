"""Tests of ``obs/`` (``lg_harness.obs``)."""
