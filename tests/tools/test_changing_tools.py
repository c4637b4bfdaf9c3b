"""Which tools change the world: declared on the tool or read from MCP annotations; undeclared ones change.

Issue 26: a tool that did not say so was taken as reading, so a domain brought from tools alone had to list
its changing tools by hand or have its writes run unconfirmed and unledgered. Now an undeclared tool is
treated as changing (confirmed before it runs, recorded in the change ledger) and the domain says so once.
"""

from __future__ import annotations

import logging

from langchain_core.tools import StructuredTool

from lg_harness import Domain, Harness, Settings
from lg_harness.tools.registry import build_spec, tool_meta
from tests.support import ScriptedModel, patient_design, tool_spec

NOTES: list[str] = []


def add_note(text: str) -> dict:
    """Add a note to the customer's file.

    Args:
        text: The note.
    """
    NOTES.append(text)
    return {"saved": True}


@tool_meta(changes_state=False)
def read_notes() -> dict:
    """Read the customer's notes."""
    return {"notes": list(NOTES)}


def test_an_undeclared_tool_is_confirmed_and_ledgered_and_the_domain_says_so_once(tmp_path, caplog):
    domain = Domain(name="notes", tools=(add_note, read_notes))
    with caplog.at_level(logging.WARNING, logger="harness.domain"):
        registry = domain.registry()
        domain.registry()
    [warning] = [r.getMessage() for r in caplog.records if r.name == "harness.domain"]
    assert "add_note" in warning and "read_notes" not in warning and "changes_state=False" in warning
    assert tool_spec(registry, "add_note").changes_state and not tool_spec(registry, "add_note").idempotent
    assert not tool_spec(registry, "read_notes").changes_state
    NOTES.clear()
    model = ScriptedModel(calls=[{"name": "add_note", "args": {"text": "call back"}, "id": "a", "type": "tool_call"}])
    with Harness(model, domain=domain, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        asked = h.send("t", "Please note that I want a call back", "u1")
        assert asked.tool_calls[0]["error_type"] == "needs_confirmation" and NOTES == []
        model.calls = []
        done = h.send("t", "yes", "u1")
        assert [(c["name"], c["status"]) for c in done.tool_calls] == [("add_note", "ok")]
        [record] = [r for r in done.values["tool_log"] if r.get("ledger_key")]
        assert h.stores.ledger.get(record["ledger_key"]).status == "settled"
    assert NOTES == ["call back"]


def _lc(name: str, **annotations) -> StructuredTool:
    return StructuredTool.from_function(lambda text="": {"ok": True}, name=name, description=f"{name} things",
                                        metadata={"readOnlyHint": None, "destructiveHint": None,
                                                  "idempotentHint": None, **annotations})


def test_mcp_annotations_say_which_tools_change_the_world():
    assert not build_spec(_lc("look", readOnlyHint=True)).changes_state
    wipe = build_spec(_lc("wipe", readOnlyHint=False, destructiveHint=True))
    assert wipe.changes_state and wipe.changes_declared and not wipe.idempotent
    put = build_spec(_lc("put", destructiveHint=True, idempotentHint=True))
    assert put.changes_state and put.idempotent
    unsaid = build_spec(_lc("poke"))
    assert not unsaid.changes_declared
    assert tool_spec(Domain(name="x", tools=(_lc("poke"),)).registry(), "poke").changes_state
