if __name__ != "lg_harness.memory":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.memory, not memory: the folder installs as lg_harness/memory")
