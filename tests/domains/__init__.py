"""Tests of ``lg_harness/domains/`` (``lg_harness.domains``)."""
