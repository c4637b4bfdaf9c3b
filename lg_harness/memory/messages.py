"""Small readers of LangChain messages that need nothing else of the harness (``harness history`` uses them
without loading context assembly)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage


def last_human_text(messages: Sequence[BaseMessage]) -> str:
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            return m.text if isinstance(m.text, str) else str(m.content)
    return ""
