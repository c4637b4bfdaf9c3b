"""Tests of ``lab/lg_harness_lab/peers/`` (``lg_harness_lab.peers``)."""
