"""Evaluation: scenarios, runs, metrics and reports for A/B comparisons of designs."""

if __name__ != "lg_harness.evals":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.evals, not evals: the folder installs as lg_harness/evals")
