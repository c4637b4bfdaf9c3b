"""The routing table: from an intent to the slots its task needs and the tools its action may use."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    """``required`` is a tuple of slot groups; a group is satisfied when any slot in it is known."""

    required: tuple[tuple[str, ...], ...] = ()
    tools: tuple[str, ...] = ()


ROUTES: dict[str, Route] = {
    "product": Route(required=(("query", "product_id"),), tools=("search_products", "get_product")),
    "order_status": Route(required=(("order_id",),), tools=("get_order_status",)),
    "my_orders": Route(tools=("list_my_orders", "get_order_status")),
    "cancel_order": Route(required=(("order_id",),), tools=("cancel_order", "get_order_status")),
    "return_order": Route(required=(("order_id",),), tools=("request_return", "get_order_status")),
    "coupons": Route(tools=("list_coupons", "claim_coupon")),
    "complaint": Route(tools=("file_complaint", "transfer_to_human")),
}

# Intents answered without tools, and the ones that go straight to a human.
CONVERSATIONAL = frozenset({"greeting", "thanks", "recall", "unknown"})
HANDOFF_INTENTS = frozenset({"human"})
# Fallback pipeline for an intent the table does not know (a user-added classifier label, say).
FALLBACK = Route()


def route_for(intent: str | None) -> Route:
    return ROUTES.get(intent or "", FALLBACK)


def missing_slots(intent: str | None, slots: dict) -> list[str]:
    """The first slot of every required group that has no value yet."""
    return [group[0] for group in route_for(intent).required if not any(slots.get(s) for s in group)]
