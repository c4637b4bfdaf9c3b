"""Tests of ``service/`` (``lg_harness.service``)."""
