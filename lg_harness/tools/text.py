"""Language-level text helpers every domain shares: cleaning, language, negation, corrections, acks.

Nothing here names a domain: these are facts about English and Chinese text (invisible characters,
"don't" before a keyword, "actually, I meant"), not about what a user wants from one assistant.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lg_harness.tools.entities import normalise_text

CJK = re.compile(r"[\u4e00-\u9fff]")
# Negations just before a keyword ("don't cancel", "不要转人工") mean the user does not want that.
NEGATION = re.compile(r"(?:\b(?:don'?t|do not|never|no need to|not)\s+(?:[a-z']+\s+){0,4}"
                      r"|(?:不要|别|不用|不想|无需)[\u4e00-\u9fff]{0,2})$", re.I)
# Pasted tool-call markup is not a request: "<tool_call>cancel_order(...)</tool_call>", "TOOL: ...".
MARKUP = re.compile(r"<tool_call>.*?(?:</tool_call>|$)|^\s*TOOL:.*$|```.*?```", re.I | re.S | re.M)
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad]")


def clean_text(text: str) -> str:
    """NFKC-normalise (full-width digits and letters), dash variants as '-', invisible characters dropped."""
    return normalise_text(text)


def has_invisible(text: str) -> bool:
    return bool(_INVISIBLE.search(text or ""))


def language(text: str) -> str:
    """'zh' when the text has Chinese characters, else 'en'."""
    return "zh" if CJK.search(text or "") else "en"


def keyword_hit(text: str, word: str) -> bool:
    """The keyword occurs at least once without a negation right before it (``text`` lower-cased)."""
    return any(not NEGATION.search(text[: m.start()]) for m in keyword_pattern(word).finditer(text))


# Words that cannot stand inside a phrase: they link, they do not name.
_GAP_STOP = (r"(?:on|in|at|of|to|for|from|with|about|my|your|our|the|a|an|this|that|it|its|me|you|and|or|not|no|"
             r"is|are|was|be|any|some|all)")


@lru_cache(maxsize=4096)
def keyword_pattern(word: str) -> re.Pattern[str]:
    """The pattern of one keyword. Compiled once per keyword (a harness compiles its domain's when it opens,
    ``graphs.warm``): the rules try every keyword of every intent on each message."""
    if CJK.search(word):
        return re.compile(re.escape(word))
    # plurals and simple inflections count ("coupons", "returned", "tracking"), and a phrase's words may have
    # one word between them ("request VPN access", "need Salesforce access" say "request access", "need access")
    # (a word that names something, not "on" or "my": "any update on my ticket" does not say "update my ticket")
    words = [rf"{re.escape(w)}(?:s|es|ed|ing)?" for w in word.split()]
    return re.compile(r"(?<![a-z])" + rf"\s+(?:(?!{_GAP_STOP}\b)[a-z0-9][\w.-]*\s+)?".join(words) + r"(?![a-z])")


def is_phrase(keyword: str) -> bool:
    """A keyword that says what is wanted by itself: a phrase ("reset my password", "新建工单"). A single word
    ("ticket", "password", "cancel", "工单", "笔记本") names a thing several requests are about, so a rule that
    hits only on it gives a candidate, not a decision: two words, or four Chinese characters (Chinese writes
    a word in two or three: "笔记本" is a laptop, "重置密码" a request)."""
    cjk = len(CJK.findall(keyword))
    return cjk >= 4 if cjk else len(keyword.split()) >= 2


def rule_text(text: str) -> str:
    """The text keyword rules read: cleaned, pasted markup removed, lower case."""
    return MARKUP.sub(" ", clean_text(text)).lower()


_CORRECTION_EN = re.compile(
    r"\bactually\b|\bi meant\b|\bi mean\b|\bi said\b|\bcorrection\b|\binstead\b|\bnot\s+[\w-]+(?:\s+[\w-]+){0,3}"
    r"\s*,?\s+but\b|\bchange (?:it|that) to\b|^\s*no\s*[,.!]\s*(?:it'?s|it is|the|my|that'?s not)\b|"
    r"\bthat'?s not what i\b|\bwrong (?:order|item|one|product|address)\b",
    re.I,
)
_CORRECTION_ZH = re.compile(r"改成|改为|换成|更正|我说的是|我是说|我的意思是|说错了|搞错了|应该是|(?<!是)不是[^。？?]{1,20}?(?:而)?是")


def is_correction(text: str) -> bool:
    """Whether the user corrects something said earlier ("actually", "no, I meant", "不是…是", "改成").

    Args:
        text: One user message.

    Returns:
        True when a correction pattern matches.
    """
    t = clean_text(text).replace("\u2019", "'")
    return bool(_CORRECTION_EN.search(t) or _CORRECTION_ZH.search(t))


_ACKNOWLEDGEMENTS = frozenset({
    "ok", "okay", "k", "sure", "yes", "thanks", "thank you", "thx", "嗯", "好", "好的", "哦", "谢谢", "收到", "行",
    "可以", "嗯嗯", "ok thanks", "知道了", "明白", "明白了", "了解", "懂了", "got it", "i see", "cool", "great",
    "alright", "fine", "noted", "perfect", "nice"})


def is_low_information(text: str) -> bool:
    """Acknowledgements that carry nothing for the task ("ok", "嗯", "thanks")."""
    return clean_text(text).strip().lower().strip("!.?。！？~ ") in _ACKNOWLEDGEMENTS
