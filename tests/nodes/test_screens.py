"""A design's screens are composed from its knobs once (lg_harness/nodes/screens.py): what a call meets before it runs is a
list a reader can print, not switches inside the action step."""

from __future__ import annotations

from lg_harness.core.design import load_design
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.nodes import screens
from lg_harness.nodes.screens import screens_for


def kinds(design: str) -> list[str]:
    d = load_design(design)
    return [type(s).__name__ for s in screens_for(d.knobs, SHOP, SHOP.registry())]


def test_each_design_gets_the_screens_its_knobs_ask_for_in_order():
    assert kinds("harness") == ["NotOffered", "CustomerConstraints", "Unreadable", "BlockRepeats", "InventedIds",
                                "UngroundedFigures", "AwaitYes"]
    # the write-ups' designs: no entity alignment, no yes before a change, repeats let through where they say so
    assert kinds("layered") == ["NotOffered", "CustomerConstraints", "Unreadable", "BlockRepeats"]
    assert kinds("custom-lightweight") == ["NotOffered", "Unreadable"]
    assert kinds("harness-no:align_entities") == ["NotOffered", "CustomerConstraints", "Unreadable", "BlockRepeats",
                                                  "AwaitYes"]


def test_a_repeat_is_refused_or_answered_from_the_first_outcome_as_the_design_says():
    from lg_harness.tools.executor import ToolOutcome

    call = {"name": "get_order_status", "args": {"order_id": "ORD-10144"}, "id": "b"}
    first = ToolOutcome(call_id="a", name="get_order_status", args=dict(call["args"]), status="ok",
                        result={"status": "delivered"})
    seen = screens.Screening({}, {"sig": first}, None, False, host=None)  # type: ignore[arg-type]
    blocked = screens.BlockRepeats()(seen, call, "sig")
    reused = screens.ReuseRepeats()(seen, call, "sig")
    assert blocked is not None and blocked.error_type == "duplicate_call"
    assert reused is not None and reused.status == "ok" and reused.result == {"status": "delivered"}
    assert reused.call_id == "b" and reused.attempts == 0
    assert screens.BlockRepeats()(seen, call, "other") is None
