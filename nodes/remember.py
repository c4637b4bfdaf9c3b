"""Remember: after a message that passed the self-check, write what it confirmed to long-term memory."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from lg_harness.core.state import HarnessState
from lg_harness.memory.hooks import remember
from lg_harness.nodes.base import NodeDeps


class Remember:
    def __init__(self, deps: NodeDeps) -> None:
        self.memory = deps.resources["memory"]
        self.slots = [t.slot for t in deps.domain.entity_types if t.remember and t.slot]

    def __call__(self, state: HarnessState, config: RunnableConfig) -> dict[str, Any]:
        remember(self.memory, state, self.slots)
        return {}
