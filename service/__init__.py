if __name__ != "lg_harness.service":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.service, not service: the folder installs as lg_harness/service")
