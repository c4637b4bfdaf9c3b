"""An identifier no one gave, for a kind of record a lookup on offer lists, sends the model to that lookup.

Real model, shop test 0026: "数码产品满300打九折的那个券，帮我领一张" (the coupon named by its terms) got
``claim_coupon(code="WELCOME10")``, the example in the tool's own description, and the customer was asked for a
code; ``list_coupons`` shows every code with its terms, but the argument's name ("code") named no record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lg_harness.graphs.app import Harness, Settings
from tests.support import ScriptedChat, patient_design


class ClaimsFirst(ScriptedChat):
    """Claims the example code while the claim is on offer and nothing was listed; else lists; then answers."""

    def decide(self, offered: list[str], messages: list[Any]) -> tuple[str, dict[str, Any]] | str:
        listed = any(getattr(m, "name", None) == "list_coupons" for m in messages)
        if "claim_coupon" in offered and not listed and "list_coupons" not in str(messages[-1].content):
            return "claim_coupon", {"code": "WELCOME10"}
        if "list_coupons" in offered and not listed:
            return "list_coupons", {}
        return "TECH10 is the one."


def test_a_made_up_code_names_the_list_that_shows_the_codes(tmp_path: Path) -> None:
    with Harness(ClaimsFirst(), domain="shop", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "please claim the electronics coupon, the 10% off one for orders of 300 or more", "U001")
    first = r.tool_calls[0]
    assert (first["name"], first["error_type"]) == ("claim_coupon", "validation"), r.tool_calls
    assert "call list_coupons first" in (first["error"] or "")
    assert ("list_coupons", "ok") in [(c["name"], c["status"]) for c in r.tool_calls], r.tool_calls
