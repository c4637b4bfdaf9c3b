"""An identifier no one gave, for a kind of record a lookup on offer lists, sends the model to that lookup.

Real model, shop test 0026: "数码产品满300打九折的那个券，帮我领一张" (the coupon named by its terms) got
``claim_coupon(code="WELCOME10")``, the example in the tool's own description, and the customer was asked for a
code; ``list_coupons`` shows every code with its terms, but the argument's name ("code") named no record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from lg_harness.graphs.app import Harness, Settings
from tests.support import patient_design


class ClaimsFirst(BaseChatModel):
    """Claims the example code while the claim is on offer and nothing was listed; else lists; then answers."""

    @property
    def _llm_type(self) -> str:
        return "claims-first"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        offered = [t["function"]["name"] for t in kwargs.get("tools") or []]
        listed = any(getattr(m, "name", None) == "list_coupons" for m in messages)
        if "claim_coupon" in offered and not listed and "list_coupons" not in str(messages[-1].content):
            name, args = "claim_coupon", {"code": "WELCOME10"}
        elif "list_coupons" in offered and not listed:
            name, args = "list_coupons", {}
        else:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("TECH10 is the one."))])
        call = {"name": name, "args": args, "id": f"c{len(messages)}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_made_up_code_names_the_list_that_shows_the_codes(tmp_path: Path) -> None:
    with Harness(ClaimsFirst(), domain="shop", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "please claim the electronics coupon, the 10% off one for orders of 300 or more", "U001")
    first = r.tool_calls[0]
    assert (first["name"], first["error_type"]) == ("claim_coupon", "validation"), r.tool_calls
    assert "call list_coupons first" in (first["error"] or "")
    assert ("list_coupons", "ok") in [(c["name"], c["status"]) for c in r.tool_calls], r.tool_calls
