"""Answers that answer (issue 41, item 5), as the local model showed they did not.

- "Does P1001 have noise cancelling? How long does the battery last?" was answered with the price; the
  model searched instead of looking P1001 up, then answered from the hits.
- Coupons were listed as "HOLIDAY30 (500.00 USD)", where 500 is the minimum spend.
- "What coupons can I use?" ended in "To confirm: I will apply coupon SAVE20", a change nobody asked for.
- A search for noise-cancelling headphones listed products that matched one word of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.graphs.app import Harness, Settings
from lg_harness.nodes.render_answer import Voice, fact_lines, result_sentences
from tests.support import patient_design


class Picker(BaseChatModel):
    """Calls the first tool it is offered whose name is in ``wants`` (in order), with ``args``; writes
    ``say`` when offered nothing it wants. Records what it was offered."""

    wants: list = Field(default_factory=list)
    args: dict = Field(default_factory=dict)
    say: str = "Here is what I found."
    offers: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "picker"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        offered = [t["function"]["name"] for t in kwargs.get("tools") or []]
        self.offers.append(offered)
        name = next((w for w in self.wants if w in offered), None)
        if name is None:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(self.say))])
        call = {"name": name, "args": self.args.get(name, {}), "id": f"c{len(self.offers)}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_question_about_coupons_lists_them_and_claims_nothing(tmp_path: Path) -> None:
    model = Picker(wants=["list_coupons", "claim_coupon"], args={"claim_coupon": {"code": "SAVE20"}})
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "What coupons can I use?", "U001")
    assert [(c["name"], c["status"]) for c in r.tool_calls] == [("list_coupons", "ok")]
    assert not r.values.get("pending_change") and "To confirm" not in r.reply
    goal = r.values.get("goal_tools") or []
    assert "list_coupons" in goal and "claim_coupon" not in goal, goal  # the list is the goal, not a claim


def test_a_request_to_claim_still_aims_at_the_claim(tmp_path: Path) -> None:
    with Harness(Picker(), design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "Please claim WELCOME10 for me", "U001")
    assert r.values.get("goal_tools") == ["claim_coupon"]


def test_coupon_figures_say_what_they_are() -> None:
    coupon = {"code": "HOLIDAY30", "description": "Holiday special: 30% off orders of 500 or more",
              "description_zh": "节日特惠满500享七折", "discount_pct": 30, "min_total": 500.0, "vip_only": False}
    lines = fact_lines({"available": [coupon]}, Voice("en", SHOP, None, "USD"))
    assert lines == ["available: HOLIDAY30 (Holiday special: 30% off orders of 500 or more)"]
    alone = result_sentences({k: v for k, v in coupon.items() if not k.startswith("description")},
                             Voice("en", SHOP, None, "USD"), "what is the minimum spend and discount of HOLIDAY30?")
    assert "discount is 30%" in alone[0] and "minimum spend is 500.00 USD" in alone[0], alone
    assert "(500.00 USD)" not in " ".join(alone)


def test_a_named_product_is_looked_up_not_searched_and_its_description_answers(tmp_path: Path) -> None:
    model = Picker(wants=["search_products", "get_product"], say="",
                   args={"search_products": {"query": "noise cancelling"}, "get_product": {"product_id": "P1001"}})
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "Does P1001 have noise cancelling? How long does the battery last?", "U001")
    assert model.offers[0] == ["get_product"], "the search that only finds ids is not offered for a named id"
    assert [(c["name"], c["status"]) for c in r.tool_calls] == [("get_product", "ok")]
    assert "noise cancelling" in r.reply and "40-hour battery" in r.reply, r.reply


def test_a_search_lists_what_matches_all_its_words_not_one_of_them(tmp_path: Path) -> None:
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        found = h.resources["shop"]  # the shop's database, through the tool itself below
        from lg_harness.domains.shop.tools import search_products
        from lg_harness.tools.context import ToolContext

        ctx = ToolContext(user_id="U001", extras={"shop": found})
        hits = [p["name"] for p in search_products(ctx, "I'm looking for noise-cancelling headphones")["results"]]
    assert hits[0] == "Wireless Bluetooth Headphones"
    assert not {"Thermal Underwear Set", "Portable Bluetooth Speaker", "Wired Earphones with Mic"} & set(hits), hits


def test_a_list_without_ids_or_names_reads_as_its_facts_with_units() -> None:
    forecast = {"city": "Lisbon", "forecast": [{"day": "Monday", "conditions": "sunny", "high_c": 19, "low_c": 12},
                                               {"day": "Tuesday", "conditions": "rain", "high_c": 18, "low_c": 12}]}
    said = " ".join(result_sentences(forecast, Voice("en"), "What's the weather forecast for Lisbon?"))
    assert "Monday (sunny, high 19 °C, low 12 °C)" in said and "Tuesday (rain, high 18 °C, low 12 °C)" in said, said


def test_a_casual_question_about_promo_codes_claims_nothing(tmp_path: Path) -> None:
    """Held-out (real model): "got any promo codes rn? which ones can i use" ended in "To confirm: I will apply
    coupon SAVE20"; the question mark is not at the end, and the message does not start with "what"."""
    model = Picker(wants=["claim_coupon", "list_coupons"], args={"claim_coupon": {"code": "SAVE20"}})
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "got any promo codes rn? which ones can i use", "U001")
    assert model.offers[0] == ["list_coupons"] and [(c["name"], c["status"]) for c in r.tool_calls] == [
        ("list_coupons", "ok")]
