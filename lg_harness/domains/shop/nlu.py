"""The shop's text understanding: its identifiers and its intent classifier, from plain text.

The shop's domain pack gives this classifier to the harness (``Domain.classifier``). The simulated model
shares none of it (it is ``simlm``, which imports nothing of the harness or any domain). Language-level
helpers (cleaning, negation, corrections) are the core's, in ``tools.text``.

Intent detection is keyword/pattern rules first (they carry Chinese, where the bundled English-centric
MiniLM is weak) and nearest prototype by MiniLM embeddings second, for paraphrases the rules miss.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lg_harness.tools.text import (  # noqa: F401 - re-exported for the shop's callers
    CJK,
    clean_text,
    has_invisible,
    is_correction,
    is_low_information,
    is_phrase,
    keyword_hit,
    language,
    rule_text,
)

INTENTS = (
    "product",
    "order_status",
    "my_orders",
    "cancel_order",
    "return_order",
    "coupons",
    "complaint",
    "human",
    "greeting",
    "thanks",
    "recall",
    "unknown",
)

# Boundaries by character class, not \b: "查一下ORD-10172" has no word boundary before the id.
ORDER_ID = re.compile(r"(?<![A-Za-z0-9])(?:ORD|ord|Ord)[-_ ]?(\d{5})(?![0-9])")
PRODUCT_ID = re.compile(r"(?<![A-Za-z0-9])[Pp](\d{4})(?![0-9])")
COUPON = re.compile(r"(?<![A-Za-z0-9])([A-Z][A-Z0-9]{3,15})(?![A-Za-z0-9])")
_HAVE_QUESTION = re.compile(r"有[\u4e00-\u9fffa-z0-9 -]{1,12}吗")
USER_ID = re.compile(r"U\d{3}")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
PHONE = re.compile(r"(?<!\d)(?:\+?\d[\d -]{8,14}\d)(?!\d)")

# Order matters: the first rule that matches wins, so specific actions come before generic order talk.
_RULES: list[tuple[str, tuple[str, ...]]] = [
    ("recall", ("did i give you", "did i tell you", "i gave you", "i mentioned", "at the start", "at the beginning",
                "at first", "一开始", "最开始", "刚开始", "最早", "我之前说", "我刚才说", "之前给你")),
    ("human", ("human", "real person", "agent please", "speak to someone", "talk to a person",
               "人工", "真人", "转客服", "找客服")),
    ("complaint", ("complain", "complaint", "terrible", "unacceptable", "furious", "angry", "worst",
                   "投诉", "差评", "太差", "气死", "垃圾", "不满")),
    ("cancel_order", ("cancel", "取消")),
    ("return_order", ("return", "refund", "send it back", "send back", "退货", "退款", "退掉", "退回", "退了")),
    ("coupons", ("coupon", "voucher", "claim", "promo code", "discount code", "discount", "优惠券", "优惠码",
                 "折扣", "券")),
    ("my_orders", ("my orders", "order history", "all my orders", "orders i placed", "recent orders",
                   "我的订单", "所有订单", "订单列表", "历史订单", "最近的订单")),
    ("order_status", ("where is", "where's", "status", "track", "tracking", "shipped", "delivery", "delivered",
                      "arrive", "物流", "到哪", "状态", "快递", "发货", "到了吗", "什么时候到", "订单")),
    ("product", ("do you have", "do you sell", "looking for", "recommend", "price", "how much", "in stock",
                 "available", "colors", "colour", "sizes", "有没有", "有卖", "推荐", "多少钱", "价格",
                 "库存", "有货", "想买", "颜色", "尺码")),
    ("thanks", ("thanks", "thank you", "thx", "谢谢", "多谢", "感谢")),
    ("greeting", ("hello", "hi", "hey", "good morning", "你好", "您好", "在吗", "嗨")),
]

_PROTOTYPES: dict[str, tuple[str, ...]] = {
    "product": ("do you sell wireless headphones", "I want to buy running shoes", "what does this jacket cost",
                "show me some phone chargers"),
    "order_status": ("where is my package", "when will my parcel arrive", "has my order been sent"),
    "my_orders": ("show me everything I bought", "list my purchases"),
    "cancel_order": ("I don't want the order anymore, stop it", "please call off my purchase"),
    "return_order": ("the item is broken, I want my money back", "I'd like to send the product back"),
    "coupons": ("any deals or savings for me", "can I get a price reduction code"),
    "complaint": ("your service is awful", "I am very unhappy with how I was treated"),
    "human": ("let me talk to a real person", "connect me to an operator"),
    "greeting": ("good evening", "hey there"),
    "thanks": ("great, cheers", "much appreciated"),
}

_FILLER_EN = {
    "do", "you", "have", "any", "sell", "some", "the", "a", "an", "i", "im", "i'm", "am", "looking", "for",
    "want", "to", "buy", "need", "please", "recommend", "me", "show", "what", "is", "are", "price", "of",
    "how", "much", "does", "cost", "in", "stock", "available", "there", "can", "get", "your", "my", "with",
    "and", "or", "it", "this", "that", "which", "would", "like", "could", "tell", "about", "details", "on",
    "hi", "hello", "hey", "sells", "got", "colors", "colours", "sizes", "come", "cheap", "good", "best",
}
_FILLER_ZH = (
    "你们", "请问", "有没有", "有卖", "有吗", "推荐", "一下", "多少钱", "价格", "是多少", "想买", "我想",
    "我要", "帮我", "找", "一款", "一个", "一些", "吗", "呢", "的", "什么", "哪些", "库存", "有货", "买", "你好",
    "您好", "给我", "看看", "有", "？", "?", "，", "。", "！",
)


@dataclass
class Entities:
    order_ids: list[str] = field(default_factory=list)
    product_ids: list[str] = field(default_factory=list)
    coupon_codes: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    phones: list[str] = field(default_factory=list)


def _unique(items) -> list[str]:
    """Distinct items ordered by their last appearance, so ``[-1]`` is the latest mention."""
    return list(reversed(dict.fromkeys(reversed(list(items)))))


def extract_entities(text: str) -> Entities:
    """Identifiers the text states, in order of appearance, normalised to the shop's formats."""
    t = clean_text(text)
    orders = _unique(f"ORD-{m}" for m in ORDER_ID.findall(t))
    products = _unique(f"P{m}" for m in PRODUCT_ID.findall(t))
    taken = {o.replace("-", "") for o in orders} | set(products) | {"ORD"}
    coupons = _unique(c for c in COUPON.findall(t) if any(ch.isdigit() for ch in c) and c not in taken
                      and not c.startswith("ORD") and not USER_ID.fullmatch(c))
    return Entities(orders, products, coupons, _unique(EMAIL.findall(t)), _unique(PHONE.findall(t)))


def _after_courtesy(t: str) -> str | None:
    """The task a message asks for once its greeting or thanks words are taken out, if any."""
    rest = t
    for intent, words in _RULES:
        if intent in ("greeting", "thanks"):
            for w in sorted(words, key=len, reverse=True):
                rest = re.sub(rf"(?<![a-z]){re.escape(w)}(?![a-z])" if not CJK.search(w) else re.escape(w), " ", rest)
    if not re.search(r"[a-z\u4e00-\u9fff]{2,}", rest):
        return None
    for intent, words in _RULES:
        if intent not in ("greeting", "thanks") and any(keyword_hit(rest, w) for w in words):
            return "order_status" if intent == "my_orders" and ORDER_ID.search(rest) else intent
    return None


def rule_match(text: str) -> tuple[str, bool] | None:
    """The first keyword rule that matches, and whether it decides by itself (``tools.text.is_phrase``: a
    phrase, or a rule made sure by an identifier or a question after courtesy words); None when none does."""
    t = rule_text(text)
    for intent, words in _RULES:
        hit = [w for w in words if keyword_hit(t, w)]
        if hit:
            # "my order ORD-10001, where is it?" is about one order, not the list.
            if intent == "my_orders" and ORDER_ID.search(clean_text(text)):
                return "order_status", True
            # "Hi, any update on ORD-10150?" is a request with a greeting in front.
            if intent in ("greeting", "thanks") and (ents := extract_entities(text)).order_ids + ents.product_ids:
                return ("order_status" if ents.order_ids else "product"), True
            # "ok thanks, is it delivered yet?" asks something after the thanks: the question is the intent.
            if intent in ("greeting", "thanks") and (asked := _after_courtesy(t)) is not None:
                return asked, True
            return intent, intent in ("greeting", "thanks", "recall") or any(is_phrase(w) for w in hit)
    if _HAVE_QUESTION.search(t):  # "你们有蓝牙耳机吗？" asks whether the shop sells something
        return "product", True
    return None


def rule_intent(text: str) -> str | None:
    """The first keyword rule that matches, or None."""
    found = rule_match(text)
    return found[0] if found else None


def _prototype_matrix():
    from lg_harness.llm.embeddings import current_embedder

    labels, texts = [], []
    for intent, examples in _PROTOTYPES.items():
        for ex in examples:
            labels.append(intent)
            texts.append(ex)
    return labels, current_embedder().matrix(texts)  # stacked once per embedder


def embedding_intent(text: str, threshold: float = 0.45) -> tuple[str, float]:
    """Nearest prototype by cosine; 'unknown' below the threshold."""
    from lg_harness.llm.embeddings import embed

    labels, matrix = _prototype_matrix()
    scores = matrix @ embed([clean_text(text)])[0]
    best = int(scores.argmax())
    score = float(scores[best])
    return (labels[best] if score >= threshold else "unknown"), score


def classify_intent(text: str, use_embeddings: bool = True) -> tuple[str, float]:
    """Intent and a confidence: rules first (1.0 for a phrase, 0.6 for a single word), then embeddings for
    English paraphrases."""
    if is_low_information(text):
        return "thanks", 1.0  # an acknowledgement ("ok", "嗯", "好的") asks for nothing
    found = rule_match(text)
    if found:  # a single word ("cancel", "订单") is a candidate the model may overrule (``HybridIntent``)
        return found[0], 1.0 if found[1] else 0.6
    ents = extract_entities(text)
    if ents.order_ids:
        return "order_status", 0.6
    if ents.product_ids:
        return "product", 0.6
    if ents.coupon_codes:
        return "coupons", 0.6
    if not use_embeddings or language(text) == "zh" or len(clean_text(text).strip()) < 4:
        return "unknown", 0.0
    return embedding_intent(text)


def product_query(text: str) -> str:
    """The product words of a shopping question ("do you have bluetooth headphones?" -> "bluetooth headphones")."""
    t = clean_text(text)
    t = ORDER_ID.sub(" ", PRODUCT_ID.sub(" ", t))
    if language(t) == "zh":
        for filler in _FILLER_ZH:
            t = t.replace(filler, " ")
        return " ".join(t.split())
    words = re.findall(r"[a-zA-Z0-9'-]+", t.lower())
    return " ".join(w for w in words if w not in _FILLER_EN)
