if __name__ != "lg_harness.llm":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.llm, not llm: the folder installs as lg_harness/llm")
