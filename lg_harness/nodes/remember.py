"""Remember: after a message that passed the self-check, record what it confirmed for long-term memory.

The node writes one durable row (``FactStore.enqueue``) and leaves the embedding and the stores to the
memory's writer thread (``memory.writer``), so the reply does not wait for them.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from lg_harness.core.state import HarnessState, StateUpdate, acting_user
from lg_harness.memory.hooks import remember
from lg_harness.nodes.base import NodeDeps


class Remember:
    def __init__(self, deps: NodeDeps) -> None:
        self.memory = deps.resources["memory"]
        self.slots = [t.slot for t in deps.domain.entity_types if t.remember and t.slot]

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        # One row per message: finishing a message again after a crash replaces it instead of adding a second.
        thread = (config.get("configurable") or {}).get("thread_id", "")
        acting_user(state, config)  # long-term memory is the caller's own: never written under another's id
        remember(self.memory, f"{thread}:{state.get('turn') or 0}", state, self.slots)
        return {}
