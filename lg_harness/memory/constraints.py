"""Pinned constraints and corrections, read from a user message by patterns (English and Chinese).

A constraint is a negation or a hard requirement the user stated ("don't use the external API",
"只要黑色"). It is pinned in the state and rides in every model call, so it must be found without a
model call and phrased the same way every time: one normalised sentence per constraint
("Do not use the external API.", "不要打电话。"). Patterns favour precision: a missed constraint can
still be seen in the working messages, while a false one would be repeated to the model on every turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lg_harness.tools.text import CJK, clean_text, is_correction  # noqa: F401 - re-exported

# Sentences end at terminal punctuation (English only when followed by space, so "1.5kg" stays whole).
# NFKC turns full-width "？！；，" into ASCII, so ASCII marks right before Chinese text end a sentence too.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；\n])|(?<=[!?;])(?=[\u4e00-\u9fff])")

# A constraint opens a clause: at the start, after a comma, or after a discourse word ("and", "I said").
_EN_LEAD = (r"(?:^|[,;:]\s*|\b(?:and|but|also|so|then|please|pls|plz|kindly|just|again|actually|said|"
            r"told you|remember|ok|okay)\s+)")
_EN_TRIGGERS = {
    "do_not_want_you": r"(?:i|we)\s+(?:do not|don't|dont)\s+want\s+(?:you|anyone|anybody|them)\s+to\s+",
    "do_not_want": r"(?:i|we)\s+(?:do not|don't|dont)\s+want\s+",
    # "don't you sell ...?" and "don't worry" are not instructions.
    "do_not": r"(?:do not|don't|dont)\s+(?!(?:you|we|they|i|know|think|worry|mind|care|understand)\b)",
    "never": r"never\s+",
    "no": r"no\s+(?!(?:thanks?|thank|problem|problems|worries|way|idea|one|i|it|that|not|more)\b)(?=[a-z])",
    "only": r"only\s+",
    "ensure": r"(?:make sure|be sure to|ensure)\s+",
}
_EN_TRIGGER = re.compile(_EN_LEAD + "(" + "|".join(f"(?P<{k}>{v})" for k, v in _EN_TRIGGERS.items()) + ")",
                         re.I)
# These sit after their subject ("it must arrive ...", "I only want black"), so the whole clause is kept;
# guesses ("it must be lost", "must have been") are not rules, and "I have to go" is not about the order.
_EN_CLAUSE = re.compile(
    r"\bmust\s+(?!have\b|be\s+(?:a\s+)?(?:mistake|wrong|joke|lost|broken|kidding)\b)"
    r"|\b(?:i|we)\s+only\s+(?:want|accept|need|use|take|pay)\b"
    r"|\b(?:it|this|that|they|the\s+\w+)\s+(?:has|have|needs?)\s+to\s+(?:be|arrive|reach|come|ship|go)\b",
    re.I,
)
_EN_FILLERS = re.compile(r"^(?:and|but|also|so|then|please|pls|plz|kindly|just|again|actually|ok|okay|oh|"
                         r"sorry|remember|as i said|like i said|i said|i told you|note that)\b[\s,]*", re.I)
_EN_TAIL = re.compile(r"[\s,;:.!]+$|\s+(?:and|but|please)$", re.I)

# 别 inside words (特别, 区别, 别的, 别人) is not a prohibition; 要不要 is a question; 不要紧 means "never mind".
_ZH_NEGATION = re.compile(r"(?:千万|请)?(?:(?<!要)不要(?!紧)|(?<![特分区告级类性识差个辨离派])别(?![的人处])|请勿|禁止|不许|不准)")
_ZH_REQUIREMENT = re.compile(r"必须|务必|一定要|只(?:要|用|能|发|走|接受|收)|不用(?![了谢])")
_ZH_FILLERS = re.compile(r"^(?:我说了|我说过|我说的是|我都说了|还有|另外|而且|但是|不过|记住|麻烦|请|对了|然后)[，,\s]*")
_ZH_CLAUSE_END = re.compile(r"(?<=[，,])")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(clean_text(text).replace("\u2019", "'")) if s and s.strip()]


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith(("?", "？")) or bool(re.search(r"[吗呢][。！!？?]*$", sentence))


def _strip_fillers(text: str, fillers: re.Pattern[str]) -> str:
    previous = None
    while previous != text:
        previous, text = text, fillers.sub("", text).strip()
    return text


def _sentence_case(text: str) -> str:
    text = " ".join(text.split())
    return text[:1].upper() + text[1:] + "." if text else ""


def _english_normalised(kind: str, rest: str) -> str:
    rest = _EN_TAIL.sub("", rest.strip())
    while _EN_TAIL.search(rest):
        rest = _EN_TAIL.sub("", rest)
    if not rest:
        return ""
    prefix = {"do_not_want_you": "Do not ", "do_not_want": "I do not want ", "do_not": "Do not ",
              "never": "Never ", "no": "No ", "only": "Only "}.get(kind, "")
    return _sentence_case(prefix + rest) if prefix else _sentence_case(rest)


def _english_constraints(sentence: str) -> list[str]:
    found: list[tuple[int, str]] = []
    matches = list(_EN_TRIGGER.finditer(sentence))
    spans = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(sentence)
        spans.append((match.start(1), end))
        kind = next(k for k in _EN_TRIGGERS if match.group(k) is not None)
        # "make sure" keeps its verb: the phrase itself is the instruction.
        text = sentence[match.start(1):end] if kind == "ensure" else sentence[match.end():end]
        found.append((match.start(1), _english_normalised(kind, text)))
    for clause in re.finditer(r"[^,;]+", sentence):
        overlaps = any(clause.start() < e and s < clause.end() for s, e in spans)
        if not overlaps and _EN_CLAUSE.search(clause.group()):
            text = _strip_fillers(clause.group().strip(), _EN_FILLERS)
            found.append((clause.start(), _english_normalised("clause", text)))
    return [text for _, text in sorted(found) if text]


def _chinese_constraints(sentence: str) -> list[str]:
    out = []
    for clause in _ZH_CLAUSE_END.split(sentence):
        clause = clause.strip().rstrip("，,。！!；;~ ")
        if not clause or _is_question(clause):
            continue
        negation = _ZH_NEGATION.search(clause)
        requirement = _ZH_REQUIREMENT.search(clause)
        # "只要…就…" means "as long as", not "only".
        if requirement and requirement.group().startswith("只要") and "就" in clause[requirement.end():]:
            requirement = None
        if negation and clause[negation.end():].strip("了 "):
            clause = clause[:negation.start()] + "不要" + clause[negation.end():]
        elif not requirement or not clause[requirement.end():].strip():
            continue
        clause = _strip_fillers(clause, _ZH_FILLERS)
        if clause:
            out.append(clause + "。")
    return out


def extract_constraints(text: str) -> list[str]:
    """Negations and hard requirements stated in ``text``, as normalised sentences, in order, no duplicates.

    Args:
        text: One user message, English, Chinese or mixed.

    Returns:
        Sentences such as ``"Do not use the external API."`` or ``"必须周五前送到。"``; questions
        ("don't you sell X?", "要不要…？") and acknowledgements ("no thanks") give nothing.
    """
    found: list[str] = []
    for sentence in _sentences(text):
        if CJK.search(sentence):
            found.extend(_chinese_constraints(sentence))
        elif not _is_question(sentence):
            found.extend(_english_constraints(sentence))
    return list(dict.fromkeys(found))



_NEGATIVE = re.compile(r"\b(?:do not|don't|never|no)\b|不要|别|不用|禁止", re.I)


def forbidden_tools(constraints: list[str], words: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """Tool name (or ``handoff``) -> the pinned constraint that forbids it.

    Args:
        constraints: The pinned constraints.
        words: The domain's constraint words: ``{"cancel_order": ("cancel", "取消"), "handoff": (...)}``;
            "Do not cancel anything." then forbids ``cancel_order``.
    """
    out: dict[str, str] = {}
    for c in constraints:
        if not _NEGATIVE.search(c):
            continue
        low = c.lower()
        for tool, tool_words in words.items():
            if any(w in low for w in tool_words):
                out.setdefault(tool, c)
    return out
