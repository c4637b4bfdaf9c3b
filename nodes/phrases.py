"""The harness's own words to the user, in English and Chinese."""

from __future__ import annotations

_PHRASES: dict[str, dict[str, str]] = {
    "ask_order_id": {
        "en": "Could you tell me the order number? It looks like ORD-12345.",
        "zh": "请提供一下订单号（格式如 ORD-12345）。",
    },
    "ask_query": {
        "en": "What product are you looking for?",
        "zh": "请问您想找什么商品？",
    },
    "ask_coupon": {
        "en": "Which coupon code would you like to use?",
        "zh": "请问您要使用哪个优惠码？",
    },
    "waiting_human": {
        "en": "A human colleague has your conversation (ticket {ticket}) and will answer here.",
        "zh": "人工客服已接手您的会话（工单 {ticket}），会在这里回复您。",
    },
    "ask_generic": {
        "en": "Could you tell me a bit more so I can help?",
        "zh": "能再具体说一下您的需求吗？",
    },
    "greeting": {
        "en": "Hello! I can help with products, orders, returns, coupons and complaints. What can I do for you?",
        "zh": "您好！我可以帮您查询商品、订单、退货、优惠券和处理投诉，请问有什么可以帮您？",
    },
    "thanks": {"en": "You're welcome! Anything else I can help with?", "zh": "不客气！还有什么可以帮您的吗？"},
    "handoff": {
        "en": "I've passed this conversation to a human colleague (ticket {ticket}). They will reply here soon.",
        "zh": "已为您转接人工客服（工单 {ticket}），同事会尽快在这里回复您。",
    },
    "busy": {
        "en": "Sorry, I'm a bit busy right now. Please send your message again in a moment.",
        "zh": "抱歉，系统有点忙，请稍后再发一次。",
    },
    "partial": {
        "en": "I couldn't finish everything for this request. Here is what I found so far: {done}",
        "zh": "这个请求没能全部完成，目前查到的信息是：{done}",
    },
}


def say(key: str, lang: str, **values: str) -> str:
    texts = _PHRASES[key]
    return texts.get(lang, texts["en"]).format(**values)
