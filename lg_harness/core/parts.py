"""A design's part written as a Python object instead of a registered name (issue 44).

A design names each role's variant. A name is looked up in the runtime's registry (``graphs.runtime``); a
``Part`` is the variant itself: an object with a ``name`` (what reports, fingerprints and design files show)
and ``build(deps)``, which returns the node from the collaborators the graph hands every node
(``nodes.base.NodeDeps``). It may also ``warm(domain, embedder)`` what its first message would otherwise pay
for. Nothing is registered: swap it into a preset with ``with_variant(PRESETS["harness"], "intent", Mine())``
and run the design from Python, or from a ``.py`` design file (``harness compare --designs mine.py:DESIGN``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Part(Protocol):
    """A variant as an object: its name, and the node it builds from the graph's collaborators."""

    name: str

    def build(self, deps: Any) -> Any: ...


def is_part(value: Any) -> bool:
    """Whether ``value`` is a ``Part`` (not a registered variant's name)."""
    return not isinstance(value, str) and isinstance(value, Part) and isinstance(getattr(value, "name", None), str)


def part_name(value: Any) -> str:
    """A variant's name, whether it is given by name or as a ``Part``."""
    return value if isinstance(value, str) else str(value.name)
