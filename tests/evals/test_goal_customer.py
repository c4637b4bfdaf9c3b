"""The simulated customer with a goal (issue 45): it answers what the reply asks, from its own facts, the same
way for any agent; it imports nothing of the harness."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from lg_harness.core.design import load_design
from lg_harness_lab.evals.customer import GoalCustomer
from lg_harness_lab.evals.metrics import cell_metrics
from lg_harness_lab.evals.runner import run_cell
from lg_harness_lab.evals.scenario import Scenario

REPO = Path(__file__).resolve().parents[2]

LOOKUP = {"knows": {"order_id": {"value": "ORD-10171", "about": ["order number", "order id", "订单号"]},
                    "email": {"value": "kim@example.com", "about": ["email address", "邮箱"]}},
          "tasks": [{"ask": ["where is my order?", "can you check my order please?"],
                     "told": [{"kind": "status", "value": "shipped"}]},
                    {"ask": ["and the tracking number?"], "told": [{"kind": "id", "value": "JD252333510707"}]}]}
CANCEL = {"knows": {"order_id": {"value": "ORD-10185", "about": ["order number"]}},
          "tasks": [{"ask": ["please cancel my order ORD-10185"], "change": True,
                     "told": [{"kind": "status", "value": "cancelled"}]}]}


def test_the_customer_imports_nothing_of_the_harness() -> None:
    tree = ast.parse((REPO / "lab" / "lg_harness_lab" / "evals" / "customer.py").read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "hashlib", "re", "unicodedata", "collections", "dataclasses", "typing"}


def test_it_gives_what_it_is_asked_for_in_its_language_and_in_more_than_one_wording() -> None:
    wordings = set()
    for seed in range(6):
        c = GoalCustomer(LOOKUP, seed=seed)
        assert c.opening() == "where is my order?"
        said = c.react("Could you tell me your order number?")
        assert said is not None and "ORD-10171" in said
        wordings.add(said)
    assert len(wordings) > 1
    zh = GoalCustomer(LOOKUP, lang="zh")
    zh.opening()
    assert "ORD-10171" in (zh.react("请提供您的订单号。") or "")
    assert "kim@example.com" in (zh.react("请问您的邮箱是什么？") or "")


def test_it_says_it_does_not_know_what_it_does_not_know_then_asks_again() -> None:
    c = GoalCustomer(LOOKUP)
    c.opening()
    first, second = c.react("What is your PIN?"), c.react("Please provide your PIN?")
    assert first and second and all(re.search(r"don't|not sure", t, re.I) for t in (first, second))
    third = c.react("I need your PIN to continue. What is your PIN?")
    assert third is not None and "check my order" in third, "after twice it asks for what it came for"


def test_it_answers_a_question_to_go_ahead_in_words_as_its_goal_says() -> None:
    wants = GoalCustomer(CANCEL)
    wants.opening()
    assert re.match(r"yes", wants.react("Shall I cancel order ORD-10185 for you?") or "", re.I)
    declines = GoalCustomer({**CANCEL, "tasks": [{**CANCEL["tasks"][0], "confirm": "no"}]})
    declines.opening()
    assert re.match(r"no", declines.react("To confirm: I will cancel order ORD-10185. Reply yes to go ahead.") or "",
                    re.I)
    looker = GoalCustomer(LOOKUP)
    looker.opening()
    assert re.match(r"no", looker.react("Would you like me to cancel order ORD-10171?") or "", re.I), \
        "a customer who asked for no change declines one"


def test_it_moves_on_when_answered_asks_again_once_when_not_and_ends() -> None:
    c = GoalCustomer(LOOKUP)
    c.opening()
    # a status comes in words it cannot list in advance: a reply that asks nothing answers it
    assert c.react("Your order is on its way.") == "and the tracking number?"
    assert c.react("Sorry, something went wrong.") == "and the tracking number?", "no number yet: asked again"
    assert c.react("Still nothing, sorry.") is None, "asked once again, then it gives up on that task"
    assert [e.kind for e in c.events] == ["open", "next", "again", "bye"]
    served = GoalCustomer(LOOKUP)
    served.opening()
    served.react("It shipped yesterday.")
    assert served.react("The tracking number is JD252333510707.") is None and served.events[-1].kind == "bye"


def test_a_conversation_that_goes_nowhere_ends_at_the_cap() -> None:
    c = GoalCustomer({**LOOKUP, "max_turns": 3})
    c.opening()
    replies = [c.react("What is your PIN?") for _ in range(5)]
    assert replies[2:] == [None, None, None] and c.events[-1].kind == "cap"


SHOP_LOOKUP = Scenario.model_validate({
    "id": "goal-lookup", "user_id": "U012", "lang": "en", "outcome": {"changes": []},
    "goal": {"knows": LOOKUP["knows"], "tasks": [{"ask": ["where is my order?"],
                                                   "told": [{"kind": "status", "value": "shipped",
                                                             "record": "ORD-10171"}]}]}})
HELPDESK_LOOKUP = Scenario.model_validate({
    "id": "goal-ticket", "user_id": "E1001", "lang": "en", "outcome": {"changes": []},
    "goal": {"knows": {"ticket": {"value": "INC0012346", "about": ["ticket number", "ticket id", "incident"]}},
             "tasks": [{"ask": ["any update on my ticket?"],
                        "told": [{"kind": "status", "value": "in_progress", "record": "INC0012346"}]}]}})


def test_the_customer_answers_a_question_the_old_script_would_have_ignored_in_each_domain() -> None:
    for scenario, domain in ((SHOP_LOOKUP, "shop"), (HELPDESK_LOOKUP, "helpdesk")):
        rec = run_cell(load_design("harness"), scenario, 1, model="sim:clean", domain=domain)
        kinds = [t["customer"] for t in rec["turns"]]
        assert kinds[:2] == ["open", "give"], [(t["user"], t["reply"]) for t in rec["turns"]]
        assert cell_metrics(rec, scenario)["success"], [(t["user"], t["reply"]) for t in rec["turns"]]


class AsksInWords(BaseChatModel):
    """A model that asks "shall I?" in words before a change, as a design without a confirm step may."""

    @property
    def _llm_type(self) -> str:
        return "asks-in-words"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        said_yes = messages[-1].type == "human" and messages[-1].text.lower().startswith("yes")
        if messages[-1].type == "tool":
            msg = AIMessage("Your order ORD-10185 has been cancelled.")
        elif said_yes:
            msg = AIMessage("", tool_calls=[{"name": "cancel_order", "args": {"order_id": "ORD-10185"},
                                             "id": "c1", "type": "tool_call"}])
        else:
            msg = AIMessage("Would you like me to cancel order ORD-10185?")
        return ChatResult(generations=[ChatGeneration(message=msg)])


def test_a_design_other_than_harness_gets_its_confirmation_answered_in_words() -> None:
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.graphs.app import Harness, Parts, Settings
    from lg_harness_lab.evals.runner import customer_for

    scenario = Scenario.model_validate({"id": "goal-cancel", "user_id": "U001", "lang": "en", "goal": CANCEL,
                                        "outcome": {"changes": [{"table": "orders", "op": "update",
                                                                 "key": {"id": "ORD-10185"},
                                                                 "set": {"status": "cancelled"}}]}})
    customer = customer_for(scenario, 1)
    naive = load_design("naive")  # the first bot, with its message going straight to the tool loop
    design = naive.model_copy(update={"variants": {**naive.variants, "intent": "passthrough"}})
    assert DOMAIN.fresh_resources is not None
    with Harness(AsksInWords(), domain=DOMAIN, design=design,
                 settings=Settings(data_dir=None, parts=Parts(resources=DOMAIN.fresh_resources()))) as h:
        text: str | None = customer.opening()
        seen: list[tuple[str, str]] = []
        while text is not None:
            reply = h.send("t", text, "U001").reply
            seen.append((text, reply))
            text = customer.react(reply)
        status = h.resources["shop"].query_one("SELECT status FROM orders WHERE id = 'ORD-10185'")["status"]
    assert seen[1][0].lower().startswith("yes") and status == "cancelled", seen


def test_a_change_made_without_asking_first_is_taken_as_answered() -> None:
    """A design that cancels at once and says so has answered the request: the customer moves on instead of
    asking for the change again (which only a design asking for a yes escaped before); a reply that does not
    say it was done gets the request once more."""
    c = GoalCustomer(CANCEL)
    c.opening()
    assert c.react("Done: order ORD-10185 is cancelled and 78.98 USD will be refunded.") is None
    assert [e.kind for e in c.events] == ["open", "bye"]
    shown = GoalCustomer(CANCEL)
    shown.opening()
    assert shown.react("Order ORD-10185 is pending.") is not None and shown.events[-1].kind == "again"


def test_a_list_of_what_the_agent_can_do_is_not_a_question_for_the_order_number() -> None:
    """Seen in transcripts: "I can help with your orders, returns and coupons. What do you need?" got the order
    id, because "order" is in the reply; only the sentences that ask count."""
    c = GoalCustomer(LOOKUP)
    c.opening()
    said = c.react("I can help with your order status, returns and coupons. What do you need?")
    assert said is not None and "ORD-10171" not in said and "check my order" in said, said
    c = GoalCustomer(LOOKUP)
    c.opening()
    said = c.react("I need the order number first. Could you share it?")  # the ask is the sentence before
    assert said is not None and "ORD-10171" in said, said
    zh = GoalCustomer(LOOKUP, lang="zh")
    zh.opening()
    assert "ORD-10171" not in (zh.react("我可以帮您查询订单、退货和优惠券。请问您需要什么帮助？") or "")


def test_a_confirmation_that_offers_yes_or_no_is_not_read_as_asking_for_the_ticket_no() -> None:
    """Real model, helpdesk test 0009: "To confirm: I will open a ticket: ... Reply yes to go ahead, or no to
    leave everything as it is." got "It's INC0012358." because the fact's description "ticket no" shared
    "ticket" and the "no" of yes-or-no; the customer never said yes."""
    goal = {"knows": {"ticket_id": {"value": "INC0012358", "about": ["ticket no", "ticket number"]}},
            "tasks": [{"ask": ["open a new ticket: wifi in room 4B keeps dropping"], "change": True}]}
    c = GoalCustomer(goal, seed=0)
    c.opening()
    said = c.react('To confirm: I will open a ticket: "Wi-Fi drops in room 4B". Reply yes to go ahead, or no to '
                   "leave everything as it is.")
    assert said is not None and "INC0012358" not in said and said.lower().startswith("yes")
    # asked for the ticket number in so many words, it still gives it
    c = GoalCustomer(goal, seed=0)
    c.opening()
    assert "INC0012358" in (c.react("What is your ticket number?") or "")
