if __name__ != "lg_harness.tools":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.tools, not tools: the folder installs as lg_harness/tools")
