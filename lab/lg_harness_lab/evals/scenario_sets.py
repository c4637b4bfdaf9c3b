"""Where a domain's scenario sets are: its own (``Domain.scenarios``, for a pack that brings its scenarios), else
the lab's sets of the bundled packs (``lab/lg_harness_lab/packs/<domain>/``: ``scenarios/`` is the set named
``builtin``, ``goals/`` the goal scenarios written for dev and test).

The scenarios measure designs, so they belong to the lab: the library's packs (``lg_harness/domains/``) carry none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lg_harness.errors import UsageError

PACKS = Path(__file__).resolve().parents[1] / "packs"


def bundled(domain_name: str) -> dict[str, Path]:
    """The lab's sets for a bundled pack, by name (none for another domain)."""
    folder = PACKS / domain_name / "scenarios"
    return {"builtin": folder} if folder.is_dir() else {}


def scenario_sets(domain: Any) -> dict[str, Path]:
    """Every scenario set ``domain`` has: the lab's for a bundled pack, then the domain's own (which win)."""
    return {**bundled(domain.name), **{k: Path(v) for k, v in domain.scenarios.items()}}


def scenario_path(domain: Any, name: str = "builtin") -> Path:
    """The file or folder of ``domain``'s scenario set ``name``."""
    sets = scenario_sets(domain)
    if name not in sets:
        raise UsageError(f"domain '{domain.name}' has no scenario set '{name}' (its sets: {', '.join(sets) or 'none'}); "
                         "give a scenario file or folder instead, or declare sets with Domain(scenarios=...)")
    return sets[name]
