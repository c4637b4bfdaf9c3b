"""The shop's fact words: what a reply may say about stock and order status, and what must then hold."""

from __future__ import annotations

from lg_harness.core.claims import Claim, equals, none_left, positive

STOCK = ("stock", "in_stock")

# An order's status in the words a reply uses (English, Chinese); the result's ``status`` must match.
ORDER_STATUS = {
    "pending": ("pending", "not shipped yet", "not yet shipped", "待发货", "待处理"),
    "shipped": ("shipped", "on the way", "in transit", "已发货", "运输中"),
    "delivered": ("delivered", "已签收", "已送达"),
    "cancelled": ("cancelled", "canceled", "已取消"),
}

CLAIMS = (
    Claim(("out of stock", "not in stock", "sold out", "not available", "unavailable", "no stock", "缺货",
           "无货", "没货", "售罄"), STOCK, none_left, says="out of stock"),
    Claim(("in stock", "available", "有货", "现货"), STOCK, positive, says="in stock"),
    *(Claim(words, ("status",), equals(status), says=status) for status, words in ORDER_STATUS.items()),
)
