"""Tests of ``sim/simlm/``, the simulated model."""
