"""Customers never see internals (issue 17, item 4): every guard outcome, tool error and refusal reaches
them in customer words, in their language; a scan of every reply of the builtin suites finds none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from lg_harness.core.design import load_design
from lg_harness.core.domain import load_domain
from lg_harness.evals.runner import run_cell
from lg_harness.evals.scenario import load_scenarios
from lg_harness.graphs.app import Harness
from lg_harness.nodes.customer_text import customer_safe, internal_text
from lg_harness.nodes.phrases import say

try:
    from support import patient_design
except ImportError:  # tests/ imported as a package
    from tests.support import patient_design

SHOP_TOOLS = load_domain("shop").registry().names()


@pytest.mark.parametrize("reply,kept", [
    ("Sorry, that didn't work: identical call already made for this message; use its result above", None),
    ("Sorry, that didn't work: invalid arguments for get_order_status: note: Extra inputs are not permitted", None),
    ("Sorry, that didn't work: Coupon code X1 does not exist. Use list_coupons to see the codes the user can claim.",
     "Sorry, that didn't work: Coupon code X1 does not exist."),
    ("It has already been delivered; the user can request a return instead.",
     "It has already been delivered; you can request a return instead."),
])
def test_internal_text_is_rewritten_away(reply: str, kept: str | None) -> None:
    assert internal_text(reply, SHOP_TOOLS)
    assert customer_safe(reply, SHOP_TOOLS) == kept
    if kept is not None:
        assert internal_text(kept, SHOP_TOOLS) == []


def test_plain_customer_text_is_left_alone() -> None:
    assert internal_text("Your order ORD-10134 has shipped.", SHOP_TOOLS) == []
    assert customer_safe("Your order ORD-10134 has shipped.", SHOP_TOOLS) == "Your order ORD-10134 has shipped."


class Scripted(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
        return self


def _call(name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{len(args)}-{name}", "type": "tool_call"}])


@pytest.mark.parametrize("lang,message", [("en", "Where is my order ORD-10134?"), ("zh", "我的订单ORD-10134到哪了？")])
def test_a_guard_outcome_reaches_the_customer_in_their_words(tmp_path: Path, lang: str, message: str) -> None:
    """The model repeats a call the harness blocks and then quotes the block note: the customer reads the
    phrase for what happened, in their language, with no tool name or harness wording."""
    quoted = "Sorry, that didn't work: identical call already made for this message; use its result above"
    call = _call("get_order_status", order_id="ORD-10134", note=True)  # invalid: an extra key
    model = Scripted(messages=iter([call, call, AIMessage(quoted), AIMessage(quoted)]))
    with Harness(tmp_path, patient_design(), model) as h:
        r = h.send("t", message, "U001")
    assert internal_text(r["reply"], SHOP_TOOLS) == []
    assert r["reply"] in (say("could_not_finish", lang), say("ask_order_id", lang, load_domain("shop")),
                          say("ask_generic", lang))


def _every_reply(domain: str, design: str) -> list[tuple[str, str]]:
    pack = load_domain(domain)
    out = []
    for scenario in load_scenarios(pack.scenario_path("builtin")):
        record = run_cell(load_design(design), scenario, 0, "sim", domain)
        out += [(scenario.id, t.get("reply") or "") for t in record["turns"]]
    return out


@pytest.mark.parametrize("domain", ["shop", "helpdesk"])
def test_no_reply_of_the_builtin_suite_shows_internal_text(domain: str) -> None:
    """Every scenario of the domain (both splits) on the faulty sim with the `harness` design."""
    tools = load_domain(domain).registry().names()
    replies = _every_reply(domain, "harness")
    assert len(replies) > 300
    shown = [(sid, reply, found) for sid, reply in replies if (found := internal_text(reply, tools))]
    assert shown == [], shown[:5]
