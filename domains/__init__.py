if __name__ != "lg_harness.domains":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.domains, not domains: the folder installs as lg_harness/domains")
