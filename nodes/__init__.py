"""Node roles; importing this package registers the built-in variants of each role."""

if __name__ != "lg_harness.nodes":  # one import name per file (README, Layout)
    raise ImportError("import lg_harness.nodes, not nodes: the folder installs as lg_harness/nodes")

from lg_harness.nodes import action, collect, handoff, intent, reply, self_check  # noqa: F401
