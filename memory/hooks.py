"""Where the graph meets long-term memory: recall at the start of a message, remember after a success.

Only confirmed, stable information is written: the outcome of a tool call that succeeded and passed the
self-check, and the language the user writes in. Every read and write is scoped to the user.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from lg_harness.core.state import HarnessState
from lg_harness.memory.longterm import LongTermMemory
from lg_harness.tools.cleaning import DEFAULT_KEY_FIELDS


def recall(memory: LongTermMemory, user_id: str, text: str, k: int = 3) -> dict[str, Any]:
    """State updates with what long-term memory knows that is relevant to this message."""
    hits = memory.experiences.search(user_id, text, k=k, include_stale=False)
    facts = {f.key: f.value for f in memory.facts.all(user_id)}
    return {"recalled": [h.text for h in hits], "recalled_ids": [h.id for h in hits], "known_facts": facts}


def outcome_sentence(record: dict[str, Any], result: dict[str, Any]) -> str:
    """One self-contained sentence for a successful tool call, e.g. for the next session's context."""
    args = ", ".join(f"{k}={v}" for k, v in sorted((record.get("args") or {}).items()) if k != "reason")
    found = ", ".join(f"{k}={v}" for k, v in (result.items() if isinstance(result, dict) else ())
                      if (k in DEFAULT_KEY_FIELDS or k == "name") and v not in (None, "", [], {})
                      and not isinstance(v, dict | list))
    return f"{record['name']}({args}) succeeded: {found or 'ok'}"


def remember(memory: LongTermMemory, state: HarnessState, remembered: Collection[str] = ()) -> list[str]:
    """Write the outcomes of this message's successful calls; count hits on what recall brought back.

    ``remembered``: the slots whose identifiers are kept as long-term facts (the domain's remembered types).
    """
    user_id = (state.get("user") or {}).get("id", "")
    outcomes = []
    for record in state.get("tool_log") or []:
        if record.get("status") != "ok":
            continue
        result = json.loads(record.get("result_digest") or "{}")
        outcomes.append(outcome_sentence(record, result))
        for key, value in (record.get("args") or {}).items():
            if key in remembered and isinstance(value, str):  # the identifier a confirmed call acted on
                memory.facts.put(user_id, f"last_{key}", value, confirmed=True, source="tool")
    # One batch per message: with a Chroma server every write is a round trip.
    written = memory.experiences.add_many(user_id, outcomes, kind="outcome", confidence=0.9)
    lang = (state.get("fact_card") or {}).get("language")
    if lang:
        memory.facts.put(user_id, "language", lang, confirmed=True, source="user")
    if written and state.get("recalled_ids"):
        memory.experiences.record_hits(user_id, state["recalled_ids"])
    return written
