"""Whole-repository checks: the layers, the core boundary, the docs, the notebooks, the README, the types."""
