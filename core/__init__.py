if __name__ != "lg_harness.core":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.core, not core: the folder installs as lg_harness/core")
