"""Tests of ``domains/`` (``lg_harness.domains``)."""
