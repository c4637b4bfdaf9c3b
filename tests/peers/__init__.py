"""Tests of ``peers/`` (``lg_harness.peers``)."""
