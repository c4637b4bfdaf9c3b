"""Node roles; importing this package registers the built-in variants of each role."""

from lg_harness.nodes import action, collect, handoff, intent, reply, self_check  # noqa: F401
