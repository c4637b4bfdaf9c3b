"""A deterministic e-commerce shop in SQLite and the tools that read and change it."""

from lg_harness.domains.shop.db import ShopDB
from lg_harness.domains.shop.seed import seed_shop
from lg_harness.domains.shop.tools import (
    CHANGING_TOOLS,
    SHOP_TOOLS,
    cancel_order,
    changing,
    claim_coupon,
    file_complaint,
    get_order_status,
    get_product,
    list_coupons,
    list_my_orders,
    request_return,
    search_products,
    shop_db,
    shop_now,
    transfer_to_human,
)

__all__ = [
    "CHANGING_TOOLS", "SHOP_TOOLS", "ShopDB", "cancel_order", "changing", "claim_coupon", "file_complaint",
    "get_order_status", "get_product", "list_coupons", "list_my_orders", "request_return", "search_products",
    "seed_shop", "shop_db", "shop_now", "transfer_to_human",
]
