"""One calibration probe: a prompt as the model sees it (messages, offered tools) and what its answer is
checked against. Apart from ``evals.calibrate``, which builds most kinds, because ``evals.probe_errors``
builds the tool-error kinds and ``calibrate`` runs those too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage


@dataclass
class Probe:
    kind: str
    domain: str
    scenario: str
    messages: list[BaseMessage]
    tools: list[dict[str, Any]]
    expect: dict[str, Any] = field(default_factory=dict)
