"""``harness graph --design peer:...``: the peer's own graph, where its framework compiles one."""

from __future__ import annotations

from typing import Any

from lg_harness.errors import HarnessError

DRAWN = {"peer:langchain": False, "peer:langchain-mw": True}  # name -> with middleware


def peer_graph(name: str, domain: Any) -> Any:
    """The compiled LangGraph of a LangChain peer (``create_agent`` returns one), drawn offline."""
    from lg_harness_lab.peers import get_peer

    get_peer(name)
    if name not in DRAWN:
        raise HarnessError(f"{name} has no LangGraph graph to draw: its framework runs its own loop; "
                           f"peers with a graph: {', '.join(DRAWN)}")
    from lg_harness_lab.peers.langchain_peer import draw_graph

    return draw_graph(DRAWN[name], domain)
