"""Designs that other packages provide, by prefix: ``peer:langchain`` is what the ``peer`` source makes of it.

A package registers a source in the ``lg_harness.designs`` entry point group: the entry's name is the prefix
before the colon, its object a function from the whole name to a ``Design``. The peers register ``peer``
(pyproject.toml); a package of one's own named designs registers the same way. So ``load_design`` reaches
designs the core never imports, and the core stays below the packages that build on it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

GROUP = "lg_harness.designs"


@functools.cache  # read once: every ablation's name has a colon, and reading the installed metadata is slow
def registered(group: str = GROUP) -> dict[str, Any]:
    """An entry point group's entries, by name (unloaded: loading one imports its package)."""
    return {ep.name: ep for ep in entry_points(group=group)}


def installed(entry: Any) -> Any | None:
    """The entry's object, or None when the package that registered it is gone (its metadata left behind by an
    uninstall, or another environment's on the path): a missing plugin is not an error of the harness."""
    try:
        return entry.load()
    except ModuleNotFoundError as exc:
        if exc.name and entry.module.split(".")[0] == exc.name.split(".")[0]:
            return None
        raise


def design_sources() -> dict[str, Any]:
    """The registered design sources' entry points, by prefix."""
    return registered(GROUP)


def by_prefix(name: str, group: str = GROUP) -> Callable[..., Any] | None:
    """What ``group`` registered for the prefix of ``name`` (``<prefix>:<rest>``), loaded; None when the name
    has no prefix or nothing is registered for it."""
    prefix, sep, _ = name.partition(":")
    entry = registered(group).get(prefix) if sep else None
    return installed(entry) if entry is not None else None


def design_source(name: str) -> Callable[[str], Any] | None:
    """The function that makes ``name`` (``<prefix>:<rest>``) into a design, or None when no source has
    the prefix (then the name is a preset, an ablation or a file)."""
    return by_prefix(name)
