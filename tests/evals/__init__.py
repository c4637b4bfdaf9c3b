"""Tests of ``lab/lg_harness_lab/evals/`` (``lg_harness_lab.evals``)."""
