"""The report's section on the peer rows: which framework and version, what each was given, what it lacks
for these scenarios, and how it did on the scenario kinds that need what it lacks (measured, from the
summary's per-tag completion)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lg_harness_lab.evals.formatting import NA, table

# Tags whose scenarios need something a peer may lack: a human, a role's limits, coping with tool faults.
NEEDS = (("handoff", "a human takes over"), ("role", "what the user's role may do"),
         ("tool-faults", "failing tools"))


def _completion(summary: Mapping[str, Any], design: str, tag: str) -> str:
    stat = ((summary.get("by_tag") or {}).get(design) or {}).get(tag)
    if not stat or stat.get("mean") is None:
        return NA
    return f"{stat['mean'] * 100:.1f}% (n={stat.get('n_scenarios', stat.get('n'))})"


def peer_section(summary: Mapping[str, Any]) -> list[str]:
    """Markdown lines, or none when no peer ran."""
    from lg_harness_lab.peers import PEERS

    peers = [d for d in summary.get("designs") or [] if d in PEERS]
    if not peers:
        return []
    baseline = summary.get("baseline")
    lines = ["## Peer frameworks", "",
             "Each peer row runs the framework's own agent loop over every tool of the domain (as its own tool "
             "type, validated its own way), on the same model, tool faults and virtual clock as the designs, "
             "recorded into the same run records and scored by the same metric code.", ""]
    rows = []
    for name in peers:
        peer = PEERS[name]
        rows.append([name, f"{peer.framework} {peer.version or '?'}", "; ".join(peer.features), "; ".join(peer.lacks)])
    lines += [*table(["Peer", "Framework", "Given", "Lacks for these scenarios"], rows), ""]
    shown = [*peers, *([baseline] if baseline and baseline not in peers else [])]
    tag_rows = [[f"`{tag}` ({what})", *(_completion(summary, d, tag) for d in shown)] for tag, what in NEEDS]
    lines += ["Task completion on the scenario kinds that need what a peer may lack:", "",
              *table(["Scenarios tagged", *shown], tag_rows), ""]
    return lines
