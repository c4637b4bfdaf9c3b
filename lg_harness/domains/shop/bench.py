"""The shop's benchmark conversation: what ``harness bench context|graph`` plays in the shop.

One customer's conversation: an order in turn 1, a standing request in turn 2, then products, coupons,
their own orders and acknowledgements, and questions about the start near the end. Reading tools only, so
repeating the script to 200 turns changes nothing in the shop. Placeholders come from the shop DB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lg_harness.core.domain import BenchScript
from lg_harness.domains.shop.db import ShopDB

USER = "U001"
RECALL_QUESTION = "Which order number did I give you at the very start?"

SCRIPT = (
    "Hi, I'm still waiting for my order {shipped}. Where is it?",
    "Please don't transfer me to a human, I'd rather sort this out here with you.",
    "Do you sell wireless bluetooth headphones?",
    "Which coupons can I use right now?",
    "ok, thanks",
    "What's the status of {pending}?",
    "Show me my orders please",
    "Tell me more about {product_a}",
    "Any portable speakers under 50 dollars?",
    "What was in my order {delivered}?",
    "great",
    "Do you have a gaming headset?",
    "Is there a coupon for electronics?",
    "Where is my order {pending_2}?",
    "Which of my orders are still pending?",
    "Does {product_b} come in other colors?",
    "thanks a lot",
    "I'm looking for a fast charger for my phone",
    "What's the status of {cancelled}?",
    "Which of my orders have been delivered?",
    "Any discount codes for new customers?",
    "Tell me about {product_c}",
    "ok",
    "Has {shipped} shipped yet? What's the tracking number?",
    "Do you have smart speakers?",
    "Which of my orders were cancelled?",
    "What coupons do you have?",
    "Is {product_a} in stock?",
    "got it, thanks",
    "What did my order {pending} contain?",
    "Do you have true wireless earbuds?",
    "Show my recent orders",
    "Any coupons for orders over 100?",
    "Where is my order {delivered}?",
    "ok great",
    "Do you sell 5G smartphones?",
    "What's the status of {pending_2}?",
    RECALL_QUESTION,
    "Thanks. Which coupons could I still use?",
    "Where is {shipped} now?",
)
FIRST_ORDER = "shipped"  # the placeholder of the order given in turn 1, the recall question's answer

# bench graph: order and product questions of one customer about their own orders; every one calls a tool.
GRAPH_SCRIPT = (
    "Where is my order {shipped}?",
    "Do you sell wireless bluetooth headphones?",
    "What's the status of {pending}?",
    "Show me my orders please",
    "Tell me more about {product_a}",
    "What was in my order {delivered}?",
    "Which coupons can I use right now?",
    "Do you have a gaming headset?",
    "Where is my order {pending_2}?",
    "Is {product_b} in stock?",
)


def customer_facts(shop: ShopDB, user_id: str = USER) -> dict[str, str]:
    """The user's own orders by status and three product ids, to fill the script's placeholders."""
    orders = shop.query("SELECT id, status FROM orders WHERE user_id = ? ORDER BY created_at DESC, id DESC",
                        (user_id,))
    by_status: dict[str, list[str]] = {}
    for row in orders:
        by_status.setdefault(row["status"], []).append(row["id"])
    newest = orders[0]["id"]
    products = [r["id"] for r in shop.query("SELECT id FROM products ORDER BY id LIMIT 3")]

    def pick(status: str, index: int = 0) -> str:
        # Not every user has every status; any of their own orders keeps the script valid.
        found = by_status.get(status, [])
        return found[index] if len(found) > index else newest

    return {"shipped": pick("shipped"), "pending": pick("pending"), "pending_2": pick("pending", 1),
            "delivered": pick("delivered"), "cancelled": pick("cancelled"),
            "product_a": products[2], "product_b": products[0], "product_c": products[1]}


def shop_facts(resources: Mapping[str, Any], user_id: str) -> dict[str, str]:
    """``BenchScript.facts``: the customer's facts from the shop backend among the harness's resources."""
    return customer_facts(resources["shop"], user_id)


BENCH = BenchScript(messages=SCRIPT, facts=shop_facts, recall_question=RECALL_QUESTION, recall_key=FIRST_ORDER,
                    graph_messages=GRAPH_SCRIPT)

__all__ = ["BENCH", "GRAPH_SCRIPT", "SCRIPT", "customer_facts", "shop_facts"]
