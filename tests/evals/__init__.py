"""Tests of ``evals/`` (``lg_harness.evals``)."""
