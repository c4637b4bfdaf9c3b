"""Correct lookup -> write chains on a domain: how many the harness refuses, and whether unseen ids are refused.

A scripted model plays the ground truth: each user message has planned calls whose ids come from results the
model saw earlier in the conversation (it remembers every result it was shown, as a model with the whole
conversation would). Each planned call is what a correct agent does, so any ``invented_argument`` refusal of
one is a false rejection. After each conversation one more message plays each write again with one id
swapped for a real id of the same kind that the conversation never showed (another customer's): every one of
those must be refused before the tool runs.

Run: ``.venv/bin/python scripts/measure_chains.py [--design harness] [--json]`` (all three domains).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from lg_harness import Harness, load_design, load_domain
from lg_harness.tools.cleaning import unlabel
from pydantic import Field

ROOT = Path(__file__).resolve().parents[1]
RETAIL = f"{ROOT / 'tests' / 'fixtures' / 'retail_domain.py'}"
Memory = dict[str, list[Any]]
Step = Callable[[Memory], tuple[str, dict[str, Any]]]


class ChainModel(BaseChatModel):
    """Emits the planned calls of the current user message, one per round, with ids from what it saw."""

    plan: dict[str, list[Step]] = Field(default_factory=dict)
    memory: dict[str, list[Any]] = Field(default_factory=dict)
    read: set[str] = Field(default_factory=set)
    broken: int = 0  # planned calls whose ids never came back (an earlier call of the chain was refused)
    offers: list[list[str]] = Field(default_factory=list)  # the tool names offered on each call with tools

    @property
    def _llm_type(self) -> str:
        return "chain-script"

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=tools, **kwargs)

    def _remember(self, messages: list[Any]) -> None:
        for m in messages:
            if isinstance(m, ToolMessage) and m.tool_call_id not in self.read and m.status != "error":
                self.read.add(m.tool_call_id)
                _, body, _ = unlabel(m.content if isinstance(m.content, str) else json.dumps(m.content))
                try:
                    self.memory.setdefault(m.name or "", []).append(json.loads(body))
                except ValueError:
                    pass

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self._remember(messages)
        if kwargs.get("tools"):
            self.offers.append([t["function"]["name"] for t in kwargs["tools"]])
        last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        text = messages[last].content if last >= 0 else ""
        done = sum(1 for m in messages[last + 1:] if isinstance(m, AIMessage) and m.tool_calls)
        steps = self.plan.get(text, [])
        msg = AIMessage("Done.")
        if kwargs.get("tools") and done < len(steps):
            try:
                name, args = steps[done](self.memory)
                msg = AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{len(self.read)}-{done}",
                                                 "type": "tool_call"}])
            except (KeyError, StopIteration, IndexError):
                self.broken += 1
        return ChatResult(generations=[ChatGeneration(message=msg)])


def latest(memory: Memory, tool: str) -> Any:
    return memory[tool][-1]


# ------------------------------------------------------------------------------------------- retail chains


def retail_task(uid: str, other: dict[str, Any]) -> tuple[list[tuple[str, list[Step]]], list[tuple[str, dict]]]:
    """One customer's conversation: lookups, then writes whose ids came from lookups turns earlier; and the
    writes again with another customer's ids (``other``)."""
    user = lambda m: next(r for r in m["get_user_details"] if "orders" in r)  # noqa: E731
    order = lambda m, oid: next(r for r in reversed(m["get_order_details"]) if r["order_id"] == oid)  # noqa: E731
    pending = lambda m: [o for o in user(m)["orders"] if order_known(m, o, "pending")]  # noqa: E731
    method = lambda m, kind: next(k for k in user(m)["payment_methods"] if k.startswith(kind))  # noqa: E731

    def order_known(m: Memory, oid: str, status: str) -> bool:
        return any(r["order_id"] == oid and r["status"] == status for r in m.get("get_order_details", []))

    def delivered(m: Memory) -> dict:
        return next(r for r in m["get_order_details"] if r["status"] == "delivered")

    def other_variant(m: Memory) -> str:
        item = delivered(m)["items"][0]
        product = next(p for p in m["get_product_details"] if p["product_id"] == item["product_id"])
        return next(i for i in product["variants"] if i != item["item_id"])

    turns: list[tuple[str, list[Step]]] = [
        (f"Hi, my user id is {uid}. What orders do I have?", [lambda m: ("get_user_details", {"user_id": uid})]),
        ("What is in my first order?", [lambda m: ("get_order_details", {"order_id": user(m)["orders"][0]})]),
        ("And my second order?", [lambda m: ("get_order_details", {"order_id": user(m)["orders"][1]})]),
        ("And the third one?", [lambda m: ("get_order_details", {"order_id": user(m)["orders"][2]})]),
        ("What colours does the product of my delivered order come in?",
         [lambda m: ("get_product_details", {"product_id": delivered(m)["items"][0]["product_id"]})]),
        ("How much is 15 percent of 120?", [lambda m: ("calculate", {"expression": "120 * 0.15"})]),
        ("Please pay my first pending order with my gift card instead.",
         [lambda m: ("modify_pending_order_payment", {"order_id": pending(m)[0],
                                                      "payment_method_id": method(m, "gift_card")})]),
        ("Exchange the item of my delivered order for another colour, paid by my credit card.",
         [lambda m: ("exchange_delivered_order_items", {
             "order_id": delivered(m)["order_id"], "item_ids": [delivered(m)["items"][0]["item_id"]],
             "new_item_ids": [other_variant(m)], "payment_method_id": method(m, "credit_card")})]),
        ("Cancel my last pending order, I no longer need it.",
         [lambda m: ("cancel_pending_order", {"order_id": pending(m)[-1], "reason": "no longer needed"})]),
    ]
    unseen = [("modify_pending_order_payment", {"order_id": other["pending"], "payment_method_id": other["gift"]}),
              ("cancel_pending_order", {"order_id": other["pending"], "reason": "no longer needed"}),
              ("return_delivered_order_items", {"order_id": other["delivered"], "item_ids": [other["item"]],
                                                "payment_method_id": other["credit"]})]
    return turns, unseen


def retail_tasks(domain: Any) -> list[tuple[str, list, list]]:
    data = domain.fresh_resources()["retail"]
    users = list(data["users"].values())
    tasks = []
    for i, u in enumerate(users):
        o = users[(i + 1) % len(users)]
        orders = [data["orders"][x] for x in o["orders"]]
        other = {"pending": next(x["order_id"] for x in orders if x["status"] == "pending"),
                 "delivered": next(x["order_id"] for x in orders if x["status"] == "delivered"),
                 "gift": next(k for k in o["payment_methods"] if k.startswith("gift")),
                 "credit": next(k for k in o["payment_methods"] if k.startswith("credit")),
                 "item": next(x for x in orders if x["status"] == "delivered")["items"][0]["item_id"]}
        tasks.append((u["user_id"], *retail_task(u["user_id"], other)))
    return tasks


# --------------------------------------------------------------------------------- shop and helpdesk chains


def shop_tasks(domain: Any) -> list[tuple[str, list, list]]:
    """List coupons and orders, talk about products, then claim a listed coupon and ask about a listed order."""
    coupons = lambda m: [c for c in latest(m, "list_coupons")["available"] if not c["vip_only"]]  # noqa: E731
    orders = lambda m: latest(m, "list_my_orders")["orders"]  # noqa: E731
    tasks = []
    db = domain.fresh_resources()["shop"]
    for uid in ("U001", "U002", "U003"):
        stranger = db.query_one("SELECT id FROM orders WHERE user_id != ? ORDER BY id", (uid,))["id"]
        turns = [("Which coupons can I claim?", [lambda m: ("list_coupons", {})]),
                 ("Show me all my orders", [lambda m: ("list_my_orders", {})]),
                 ("Do you have bluetooth headphones?", [lambda m: ("search_products", {"query": "bluetooth headphones"})]),
                 ("Do you have a yoga mat?", [lambda m: ("search_products", {"query": "yoga mat"})]),
                 ("Any running shoes?", [lambda m: ("search_products", {"query": "running shoes"})]),
                 ("In my orders, what is the status of the oldest one?",
                  [lambda m: ("get_order_status", {"order_id": orders(m)[-1]["order_id"]})]),
                 ("Please claim the last coupon you listed.",
                  [lambda m: ("claim_coupon", {"code": coupons(m)[-1]["code"]})])]
        tasks.append((uid, turns, [("get_order_status", {"order_id": stranger}, "In my orders, that one again")]))
    return tasks


def helpdesk_tasks(domain: Any) -> list[tuple[str, list, list]]:
    """List tickets and devices, ask how-to questions, then open a listed ticket and a listed device."""
    tickets = lambda m: latest(m, "list_my_tickets")["tickets"]  # noqa: E731
    assets = lambda m: latest(m, "list_my_assets")["assets"]  # noqa: E731
    tasks = []
    db = domain.fresh_resources()["helpdesk"]
    for uid in ("E1001", "E1002"):
        stranger = db.query_one("SELECT id FROM tickets WHERE owner_id != ? ORDER BY id", (uid,))["id"]
        turns = [("List my tickets", [lambda m: ("list_my_tickets", {})]),
                 ("What devices are assigned to me?", [lambda m: ("list_my_assets", {})]),
                 ("How do I connect to the VPN?", [lambda m: ("search_kb", {"query": "vpn"})]),
                 ("How do I set up email on my phone?", [lambda m: ("search_kb", {"query": "email phone"})]),
                 ("How to fix the printer?", [lambda m: ("search_kb", {"query": "printer"})]),
                 ("From my tickets, show me the first one in full.",
                  [lambda m: ("get_ticket", {"ticket_id": tickets(m)[0]["ticket_id"]})]),
                 ("Of my devices, which is the first one exactly?",
                  [lambda m: ("get_asset", {"asset_id": assets(m)[0]["asset_id"]})])]
        tasks.append((uid, turns, [("get_ticket", {"ticket_id": stranger}, "From my tickets, that one again")]))
    return tasks


# ------------------------------------------------------------------------------------------------- runner


def run_task(domain: Any, design: str, uid: str, turns: list, unseen: list) -> dict[str, int]:
    """Play one conversation; count planned calls, refusals by kind, and unseen-id calls refused."""
    model = ChainModel(plan={text: steps for text, steps in turns})
    counts = {"calls": 0, "writes": 0, "ok": 0, "invented": 0, "not_offered": 0, "other_error": 0, "unseen": 0,
              "unseen_refused": 0}
    with Harness(None, load_design(design), model, domain=domain, resources=domain.fresh_resources()) as h:
        h.design.knobs.model_timeout_s = 120.0
        changing = domain.changing_tools()
        for text, _ in turns:
            for call in say(h, uid, text):
                counts["calls"] += 1
                counts["writes"] += call["name"] in changing
                kind = {"ok": "ok", "invented_argument": "invented", "not_offered": "not_offered"}.get(
                    call["status"] if call["status"] == "ok" else call["error_type"], "other_error")
                counts[kind] += 1
        for i, (name, args, *said) in enumerate(unseen):
            text = f"{said[0] if said else 'Do that once more, please'} ({i + 1})"
            model.plan[text] = [lambda m, name=name, args=args: (name, args)]
            calls = [c for c in say(h, uid, text) if c["name"] == name]
            counts["unseen"] += bool(calls)
            counts["unseen_refused"] += bool(calls) and calls[0]["error_type"] == "invented_argument"
    counts["broken"] = model.broken
    return counts


def say(h: Harness, uid: str, text: str) -> list[dict[str, Any]]:
    """Send ``text``; a confirmation question is answered yes (a user who means the change)."""
    first = h.send(uid + "-thread", text, uid)
    calls = [c for c in first["tool_calls"] if c.get("error_type") != "needs_confirmation"]
    if h.last_values.get("pending_change"):
        calls += h.send(uid + "-thread", "yes", uid)["tool_calls"]
    return calls


TASKS = {"retail": (RETAIL + ":DOMAIN", retail_tasks), "retail-declared": (RETAIL + ":DECLARED", retail_tasks),
         "shop": ("shop", shop_tasks), "helpdesk": ("helpdesk", helpdesk_tasks)}


def measure(name: str, design: str) -> dict[str, int]:
    spec, tasks = TASKS[name]
    domain = load_domain(spec)
    total: dict[str, int] = {}
    for uid, turns, unseen in tasks(domain):
        for k, v in run_task(domain, design, uid, turns, unseen).items():
            total[k] = total.get(k, 0) + v
    return total


# Requests of a retail customer and the tool that serves each (tau-bench's retail tasks, reworded).
REQUESTS = (
    ("I forgot my user id, my email is mia.garcia0@example.com", "find_user_id_by_email"),
    ("I am Mia Garcia, zip code 12345, can you find my account?", "find_user_id_by_name_zip"),
    ("Where is my order #W2378156, what is its status?", "get_order_details"),
    ("Cancel order #W2378156, I ordered it by mistake", "cancel_pending_order"),
    ("I want to return the headphones from my delivered order", "return_delivered_order_items"),
    ("Can I exchange the shoes I received for another size?", "exchange_delivered_order_items"),
    ("Please ship my pending order to my new address instead", "modify_pending_order_address"),
    ("Pay my pending order with paypal instead of the card", "modify_pending_order_payment"),
    ("I moved: update my default address on my account", "modify_user_address"),
    ("What products do you sell?", "list_all_product_types"),
    ("What colours and prices does the backpack come in?", "get_product_details"),
    ("Let me talk to a human agent please", "transfer_to_human_agents"),
)


def offers(design: str) -> list[tuple[str, str, list[str]]]:
    """The tools offered for each request of ``REQUESTS`` on the tools-only retail domain."""
    domain = load_domain(RETAIL + ":DOMAIN")
    rows = []
    for i, (text, wanted) in enumerate(REQUESTS):
        model = ChainModel()
        with Harness(None, load_design(design), model, domain=domain, resources=domain.fresh_resources()) as h:
            h.send(f"offer-{i}", text, domain.default_user)
        rows.append((text, wanted, model.offers[0] if model.offers else []))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", default="harness")
    parser.add_argument("--domains", default=",".join(TASKS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--offers", action="store_true", help="the tools offered per request instead")
    args = parser.parse_args()
    if args.offers:
        rows = offers(args.design)
        print(f"design {args.design}: the right tool offered for {sum(w in o for _, w, o in rows)}/{len(rows)}\n")
        print("| request | serving tool | offered |\n| --- | --- | --- |")
        for text, wanted, offered in rows:
            print(f"| {text} | {wanted} {'yes' if wanted in offered else 'NO'} | {', '.join(offered)} |")
        return
    rows = {n: measure(n, args.design) for n in args.domains.split(",")}
    if args.json:
        json.dump(rows, sys.stdout)
        return
    print(f"design {args.design}")
    print("| domain | planned calls | writes | ok | false rejections (invented id) | not offered | other errors "
          "| chain broken | unseen ids refused |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, r in rows.items():
        print(f"| {n} | {r['calls']} | {r['writes']} | {r['ok']} | {r['invented']} | {r['not_offered']} | "
              f"{r['other_error']} | {r['broken']} | {r['unseen_refused']}/{r['unseen']} |")


if __name__ == "__main__":
    main()
