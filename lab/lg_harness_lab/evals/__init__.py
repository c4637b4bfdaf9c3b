"""Evaluation: scenarios, runs, metrics and reports for A/B comparisons of designs."""

