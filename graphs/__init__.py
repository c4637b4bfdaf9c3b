if __name__ != "lg_harness.graphs":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.graphs, not graphs: the folder installs as lg_harness/graphs")
