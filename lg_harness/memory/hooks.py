"""Where the graph meets long-term memory: recall at the start of a message, remember after a success.

Only confirmed, stable information is written: the outcome of a tool call that succeeded and passed the
self-check, and the language the user writes in. Every read and write is scoped to the user.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lg_harness.core.state import HarnessState, StateUpdate
from lg_harness.tools.cleaning import DEFAULT_KEY_FIELDS

if TYPE_CHECKING:  # chromadb comes with it; the graph imports this module whether memory is on or not
    from lg_harness.memory.longterm import LongTermMemory


class UnopenedMemory:
    """Long-term memory's place in the graph of a harness that only reads threads (``runs_messages=False``):
    the graph keeps its remember step, so its checkpoints read the same, but nothing may use it."""

    def __getattr__(self, name: str) -> Any:
        from lg_harness.errors import HarnessError

        raise HarnessError("long-term memory is not open: this harness only reads threads")


def recall(memory: LongTermMemory, user_id: str, text: str, k: int = 3, vector: Any = None,
           names: Sequence[str] = ()) -> StateUpdate:
    """State updates with what long-term memory knows that is relevant to this message.

    ``names``: the identifiers the message names (``known_ids.names_in_text``). A message that names one
    recalls the records about it and nothing else (similarity ranks records about other orders above the
    one asked about); one that names none recalls by similarity.
    ``vector``: the message's embedding, when the caller has it (the one embedding of the message)."""
    memory.writer.wait_idle()  # what the previous message asked to keep is written before it is looked for
    if names:
        hits = memory.experiences.naming(user_id, names, k=k, include_stale=False)
    else:
        hits = memory.experiences.search(user_id, text, k=k, include_stale=False, query_vector=vector)
    facts = {f.key: f.value for f in memory.facts.all(user_id)}
    return {"recalled": [h.text for h in hits], "recalled_ids": [h.id for h in hits], "known_facts": facts}


def outcome_sentence(record: Mapping[str, Any], result: Any) -> str:
    """One self-contained sentence for a successful tool call, e.g. for the next session's context."""
    args = ", ".join(f"{k}={v}" for k, v in sorted((record.get("args") or {}).items()) if k != "reason")
    found = ", ".join(f"{k}={v}" for k, v in (result.items() if isinstance(result, dict) else ())
                      if (k in DEFAULT_KEY_FIELDS or k == "name") and v not in (None, "", [], {})
                      and not isinstance(v, dict | list))
    return f"{record['name']}({args}) succeeded: {found or 'ok'}"


def to_remember(state: HarnessState, remembered: Collection[str] = ()) -> dict[str, Any] | None:
    """What this message gives long-term memory, or None when it gives nothing (small talk, a question
    answered without a successful call, a language already known).

    ``outcomes``: a sentence per successful call; ``facts``: ``[key, value, source]`` for each identifier a
    confirmed call acted on (the slots in ``remembered``) and the user's language, when new; ``hits``: the
    recalled records, credited when the message succeeded at something.
    """
    known = state.get("known_facts") or {}
    outcomes: list[str] = []
    facts: list[list[Any]] = []
    for record in state.get("tool_log") or []:
        if record.get("status") != "ok":
            continue
        result = json.loads(record.get("result_digest") or "{}")
        outcomes.append(outcome_sentence(record, result))
        for key, value in (record.get("args") or {}).items():
            if key in remembered and isinstance(value, str):  # the identifier a confirmed call acted on
                facts.append([f"last_{key}", value, "tool"])
    lang = (state.get("fact_card") or {}).get("language")
    facts.append(["language", lang, "user"])
    facts = [f for f in facts if f[1] and known.get(f[0]) != f[1]]
    if not outcomes and not facts:
        return None
    return {"outcomes": outcomes, "facts": facts, "hits": list(state.get("recalled_ids") or []) if outcomes else []}


def remember(memory: LongTermMemory, key: str, state: HarnessState, remembered: Collection[str] = ()) -> bool:
    """Record what this message gives long-term memory (``to_remember``) under ``key`` and have the writer
    write it after the reply (``memory.writer``); False when there was nothing to keep."""
    payload = to_remember(state, remembered)
    if payload is None:
        return False
    memory.facts.enqueue(key, (state.get("user") or {}).get("id", ""), payload)
    memory.writer.kick()
    return True
