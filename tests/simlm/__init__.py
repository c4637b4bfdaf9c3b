"""Tests of ``simlm/``, the simulated model."""
