"""How the simulated model words an answer from tool results, in English or Chinese.

It recognises results by their fields, as a model reads JSON, and never states a value the results lack.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from lg_harness.domains.shop.nlu import ORDER_ID, clean_text

_CARD_FIRST = re.compile(r"first_order_id\W+(ORD-\d{5})")
_CARD_ORDERS = re.compile(r"order_ids\W+(ORD-\d{5})")

STATUS_ZH = {"pending": "待发货", "shipped": "已发货", "delivered": "已签收", "cancelled": "已取消",
             "requested": "已提交", "waiting": "排队中"}


def _zh_status(status: str) -> str:
    return STATUS_ZH.get(status, status)


def _items(items: list[dict[str, Any]], zh: bool) -> str:
    names = [f"{(i.get('name_zh') if zh else None) or i.get('name')} x{i.get('qty', 1)}" for i in items or []]
    return ("、" if zh else ", ").join(names)


def _order(d: dict[str, Any], zh: bool) -> str:
    track = f"{d['carrier']} {d['tracking_no']}" if d.get("tracking_no") else ""
    if zh:
        text = f"订单 {d['order_id']} 当前状态：{_zh_status(d['status'])}（{d['status']}）"
        text += f"，物流：{track}" if track else ""
        return text + f"。商品：{_items(d.get('items', []), True)}，合计 {d.get('total')}。"
    text = f"Order {d['order_id']} is {d['status']}"
    text += f" ({track})" if track else ""
    return text + f". Items: {_items(d.get('items', []), False)}; total {d.get('total')}."


def _search(d: dict[str, Any], zh: bool) -> str:
    rows = d.get("results") or []
    if not rows:
        return f"没有找到与“{d.get('query')}”相关的商品。" if zh else f"I found no products matching '{d.get('query')}'."
    lines = []
    for r in rows[:3]:
        stock = ("有货" if r.get("in_stock") else "缺货") if zh else ("in stock" if r.get("in_stock") else "out of stock")
        name = r.get("name_zh") if zh else r.get("name")
        lines.append(f"{name} ({r['product_id']}): {r.get('price')}, {stock}")
    head = "为您找到这些商品：" if zh else "Here is what I found: "
    return head + ("；" if zh else "; ").join(lines) + ("。" if zh else ".")


def _product(d: dict[str, Any], zh: bool) -> str:
    options = [f"{v.get('color')}/{v.get('size')}" for v in d.get("variants", []) if v.get("stock", 0) > 0]
    if zh:
        avail = "可选：" + "、".join(options) if options else "目前缺货"
        return f"{d.get('name_zh')}（{d['product_id']}）售价 {d.get('price')}，{avail}。{d.get('description_zh', '')}"
    avail = "available in " + ", ".join(options) if options else "currently out of stock"
    return f"{d.get('name')} ({d['product_id']}) costs {d.get('price')}, {avail}. {d.get('description', '')}"


def _orders(d: dict[str, Any], zh: bool) -> str:
    rows = d.get("orders") or []
    if not rows:
        return "您目前没有订单。" if zh else "You have no orders."
    if zh:
        return "您的订单：" + "；".join(f"{o['order_id']} {_zh_status(o['status'])}" for o in rows[:5]) + "。"
    return "Your orders: " + "; ".join(f"{o['order_id']} ({o['status']})" for o in rows[:5]) + "."


def _cancelled(d: dict[str, Any], zh: bool) -> str:
    if zh:
        return f"订单 {d['order_id']} 已取消，退款 {d.get('refund_amount')} 将原路退回。"
    return f"Order {d['order_id']} is cancelled; {d.get('refund_amount')} will be refunded."


def _returned(d: dict[str, Any], zh: bool) -> str:
    if zh:
        return f"已为订单 {d['order_id']} 提交退货申请，退货单号 {d['return_id']}。"
    return f"I've opened return {d['return_id']} for order {d['order_id']}. {d.get('next_step', '')}".strip()


def _coupons(d: dict[str, Any], zh: bool) -> str:
    rows = d.get("available") or []
    if not rows:
        return "目前没有可领取的优惠券。" if zh else "There are no coupons you can claim right now."
    if zh:
        return "可领取的优惠券：" + "；".join(f"{c['code']}（{c.get('description_zh') or c.get('description')}）"
                                      for c in rows) + "。"
    return "Coupons you can claim: " + "; ".join(f"{c['code']} ({c.get('description')})" for c in rows) + "."


def _claimed(d: dict[str, Any], zh: bool) -> str:
    if zh:
        return f"优惠券 {d['code']} 已领取，满 {d.get('min_total')} 可享 {d.get('discount_pct')}% 折扣。"
    return f"Coupon {d['code']} is claimed: {d.get('discount_pct')}% off orders of {d.get('min_total')} or more."


def _complaint(d: dict[str, Any], zh: bool) -> str:
    if zh:
        return f"已记录您的投诉，编号 {d['complaint_id']}，客服团队会在 2 个工作日内邮件回复。"
    return f"I've recorded your complaint as {d['complaint_id']}. {d.get('next_step', '')}".strip()


def _ticket(d: dict[str, Any], zh: bool) -> str:
    if zh:
        return f"已为您转接人工客服，工单 {d['ticket_id']}，前面还有 {d.get('queue_position')} 位。"
    return f"A human agent will take over: ticket {d['ticket_id']}, position {d.get('queue_position')} in the queue."


# Recognised by a field only that result kind has; first match wins.
_RENDERERS: list[tuple[str, Callable[[dict[str, Any], bool], str]]] = [
    ("return_id", _returned), ("complaint_id", _complaint), ("ticket_id", _ticket), ("refund_amount", _cancelled),
    ("available", _coupons), ("claimed", _claimed), ("orders", _orders), ("results", _search), ("query", _search),
    ("variants", _product), ("order_id", _order),
]


def _error(d: dict[str, Any], zh: bool) -> str:
    message = (d.get("error") or {}).get("message", "")
    return f"抱歉，操作没有成功：{message}" if zh else f"Sorry, that didn't work: {message}"


def render(data: Any, zh: bool) -> str:
    if not isinstance(data, dict):
        return str(data)[:300]
    if "error" in data:
        return _error(data, zh)
    for key, renderer in _RENDERERS:
        if key in data:
            return renderer(data, zh)
    return json.dumps(data, ensure_ascii=False)[:300]


_LABELLED = re.compile(r'^\s*<tool_(result|error)\b[^>]*?(?:type="([^"]*)")?[^>]*>(.*)</tool_\1>\s*$', re.S)


def read_result(content: Any) -> Any:
    """A tool message as data: plain JSON, or the harness's labelled ``<tool_result>``/``<tool_error>`` form."""
    if not isinstance(content, str):
        return content
    m = _LABELLED.match(content)
    if m and m.group(1) == "error":
        return {"error": {"type": m.group(2), "message": m.group(3).strip()}}
    body = m.group(3) if m else content
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return body


def compose_answer(results: Sequence[ToolMessage], lang: str) -> str:
    zh = lang == "zh"
    parts = [render(read_result(m.content), zh) for m in results]
    return ("\n" if len(parts) > 1 else "").join(parts)


def recall_answer(messages: Sequence[BaseMessage], lang: str) -> str:
    """Answer "what did I tell you at the start?" from what is visible: the user's words, then the system text."""
    zh = lang == "zh"
    first = None
    # Stated facts first: the oldest message still visible may not be the start of the conversation.
    system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
    if hit := (_CARD_FIRST.search(system) or _CARD_ORDERS.search(system)):
        first = hit.group(1)
    if first is None:
        for m in messages:
            if isinstance(m, HumanMessage) and (ids := ORDER_ID.findall(clean_text(str(m.content)))):
                first = f"ORD-{ids[0]}"
                break
    if first is None:
        return "抱歉，我在之前的对话里找不到您提供的订单号。" if zh else "Sorry, I can't find an order number you gave me earlier."
    return f"您最开始提供的订单号是 {first}。" if zh else f"The order number you gave me at the start was {first}."
