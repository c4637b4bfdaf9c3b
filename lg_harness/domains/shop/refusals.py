"""What the shop's tool errors and refusals tell a customer, in English and Chinese.

A tool error's message is written for the model (it names the tool to try next); the ``phrase`` it raises
with names one of these, which the harness shows a customer who would otherwise read the message
(``nodes.customer_text``). Values are filled from the error (``ToolError(..., phrase=key, **values)``).
"""

from __future__ import annotations

REFUSALS: dict[str, dict[str, str]] = {
    "error_order_not_found": {
        "en": "Order {order_id} was not found in your account. Please check the order number (ORD- and five digits).",
        "zh": "您的账户中没有找到订单 {order_id}，请核对订单号（ORD- 加五位数字）。",
    },
    "error_product_not_found": {
        "en": "Product {product_id} does not exist. Tell me what you are looking for and I will search for it.",
        "zh": "商品 {product_id} 不存在。告诉我您想找什么，我帮您搜索。",
    },
    "error_cancel_shipped": {
        "en": "Order {order_id} cannot be cancelled: it has already shipped. Once it is delivered you can request a return.",
        "zh": "订单 {order_id} 已发货，无法取消；签收后可以申请退货。",
    },
    "error_cancel_delivered": {
        "en": "Order {order_id} cannot be cancelled: it has already been delivered. You can request a return instead.",
        "zh": "订单 {order_id} 已签收，无法取消；您可以申请退货。",
    },
    "error_cancel_cancelled": {
        "en": "Order {order_id} is already cancelled; nothing more is needed.",
        "zh": "订单 {order_id} 已取消，无需再操作。",
    },
    "error_return_pending": {
        "en": "Order {order_id} cannot be returned: it has not shipped yet. You can cancel it instead.",
        "zh": "订单 {order_id} 还没有发货，无法退货；您可以直接取消订单。",
    },
    "error_return_shipped": {
        "en": "Order {order_id} cannot be returned yet: it is still on the way. A return can be requested once it "
              "is delivered.",
        "zh": "订单 {order_id} 已发货、还在运输途中，暂时无法退货；签收后即可申请。",
    },
    "error_return_cancelled": {
        "en": "Order {order_id} was cancelled, so there is nothing to return.",
        "zh": "订单 {order_id} 已取消，没有需要退货的商品。",
    },
    "error_return_open": {
        "en": "A return is already open for order {order_id} ({return_id}, status {status}); no new request is "
              "needed.",
        "zh": "订单 {order_id} 已有进行中的退货（{return_id}，状态 {status}），无需重新申请。",
    },
    "error_coupon_unknown": {
        "en": "Coupon code {code} does not exist. I can list the coupons you can claim.",
        "zh": "优惠码 {code} 不存在。我可以为您列出可领取的优惠券。",
    },
    "error_coupon_expired": {
        "en": "Coupon {code} expired on {expired} and can no longer be claimed.",
        "zh": "优惠券 {code} 已于 {expired} 过期，无法再领取。",
    },
    "error_coupon_vip": {
        "en": "Coupon {code} is for VIP members only.",
        "zh": "优惠券 {code} 仅限 VIP 会员领取。",
    },
    "error_coupon_claimed": {
        "en": "Coupon {code} was already claimed on {claimed}; each coupon can be claimed once. It applies "
              "automatically at checkout on orders of {min_total} or more.",
        "zh": "优惠券 {code} 已于 {claimed} 领取过，每张券只能领取一次；订单满 {min_total} 时结账会自动使用。",
    },
}
