"""Tests of ``lg_harness/service/`` (``lg_harness.service``)."""
