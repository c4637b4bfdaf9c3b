"""Follow-up questions about an attribute stay on the product under discussion.

"Is the Fitness Tracker Band available in black?" then "Do you have it in blue?" or "what about in
black?" names only a colour or size: the product is the one the last product question was about. The
shop gives this to the harness as ``Domain.follow_up``; the intent and collect nodes call it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lg_harness.domains.shop import nlu
from lg_harness.domains.shop.seed import COLOR_CODES, SIZES

COLORS_ZH = {"黑色": "black", "白色": "white", "银色": "silver", "灰色": "grey", "蓝色": "blue", "红色": "red",
             "绿色": "green", "粉色": "pink", "棕色": "brown", "金色": "gold", "紫色": "purple", "橙色": "orange"}
ATTRIBUTES = ({c.lower() for c in COLOR_CODES} | {s.lower() for sizes in SIZES.values() for s in sizes}
              | {"size", "color", "colour", "colors", "colours", "sizes"})
# Words a follow-up wraps its attribute in: "what about", "then", "one", "yet", "那...呢".
_WRAPPERS = {"what", "about", "then", "one", "ones", "also", "too", "instead", "yet", "as", "well"}


def _attributes(text: str) -> tuple[list[str], list[str]]:
    """The attribute words of a message and whatever else names a product."""
    zh = [en for word, en in COLORS_ZH.items() if word in text]
    rest_text = text
    for word in COLORS_ZH:
        rest_text = rest_text.replace(word, " ")
    words = nlu.product_query(rest_text).split()
    words = [w for w in words if not re.fullmatch(r"[吗呢吧的那这个款有没]+|[?？!！.,，。]+", w)]
    attrs = zh + [w for w in words if w in ATTRIBUTES]
    rest = [w for w in words if w not in ATTRIBUTES and w not in _WRAPPERS]
    return attrs, rest


def follow_up(text: str, intent: str | None, slots: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """("product", slots with the earlier product and this attribute) for an attribute-only follow-up."""
    query = str(slots.get("query") or "")
    if intent != "product" or not query or nlu.extract_entities(text).order_ids:
        return None
    attrs, rest = _attributes(text)
    if not attrs or rest:
        return None  # no attribute, or a product of its own: a new question
    base = [w for w in query.split() if w not in ATTRIBUTES and w not in COLORS_ZH.values()]
    return "product", {**slots, "query": " ".join(dict.fromkeys([*base, *attrs]))}
