"""A simulated model that takes a fixed real time per call, like a hosted model on the other end of a network.

``paced:<seconds>[:<sim options>]`` (e.g. ``paced:0.25:clean``) is the sim with ``time.sleep(seconds)`` before
each answer. The sim's own latency is virtual; this one holds a worker for real, which is what ``harness
bench serve`` and the many-worker tests need: an I/O-bound model whose throughput scales with workers.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from lg_harness.llm.sim import SimChatModel


class PacedSimChatModel(SimChatModel):
    delay_s: float = 0.25

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        time.sleep(self.delay_s)
        return super()._generate(messages, stop, run_manager, **kwargs)
