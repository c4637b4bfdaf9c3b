"""What a customer may read: no tool names, error types, harness notes or talk of "the user".

Tool errors and the harness's own screening notes are written for the model ("identical call already
made for this message; use its result above", "Use list_x to see ...", "the user can follow up"). A
model that quotes them shows internals to the customer. ``internal_text`` finds such text in a reply;
``customer_safe`` rewrites a reply without it: third-person talk of the user becomes "you", clauses that
name a tool, an error type or a harness note are dropped, a call written as JSON too (a result dumped as
JSON becomes plain text), and a reply left with nothing to say is
replaced by the answer the harness writes from this message's results (``nodes.render_answer``) when a call
worked, else by the customer-facing phrase for what happened (``outcome_phrase``), in the customer's
language. ``dump_kind`` tells a reply that is data (JSON, field lines, a Python literal) from words;
``wrong_language`` one in another language than the customer's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness.nodes.phrases import say
from lg_harness.tools.cleaning import holds_instruction

# Text the harness writes for the model (tool-error notes, screening verdicts, reply instructions) and the
# names of its error classes: none of it is meant for a customer.
HARNESS_NOTES = (
    "identical call already made", "use its result above", "not given by the customer or found in any result",
    "ask the customer", "do not call it", "do not call tools", "the tool loop was stopped", "tool result",
    "tool call", "tool_error", "error_type", "invalid arguments for", "extra inputs are not permitted",
    "field required", "input should be", "string should", "traceback", "validation error",
    # a tool's description told back as the answer ("This tool returns the article details for KB0001017.")
    "tool returns", "工具返回",
    # The same notes as a model answering in Chinese writes them ("根据工具结果…": "according to the tool results").
    "工具结果", "工具的结果", "工具调用", "调用工具",
)
ERROR_CLASSES = (
    "DuplicateCall", "InventedArgument", "ConstraintViolation", "TextCallParseError", "ValidationError",
    "BusinessError", "NotFoundError", "TransientError", "ToolTimeoutError", "MalformedPayloadError",
    "RateLimitedError", "PermanentError", "ToolExecutionFailed", "ToolError", "HarnessError",
    "ModelCallFailed", "UngroundedValue", "UnsaidName", "CopiedExample",
)
_THIRD_PERSON = re.compile(r"\b(the (?:user|customer))('s)?\b", re.I)
_GRAMMAR = ((r"\byou has\b", "you have"), (r"\byou is\b", "you are"), (r"\byou was\b", "you were"),
            (r"\byou does\b", "you do"), (r"\byou wants\b", "you want"), (r"\byou needs\b", "you need"))
_CLAUSE = re.compile(r".+?(?:[.!?](?=\s|$)|[。！？;；]|\n|$)", re.S)
_DANGLING = re.compile(r"[:：]\s*$")
# The label ``tools.cleaning.label`` puts around a result: a model that pastes the result pastes it too.
_LABEL_TAG = re.compile(r"</?tool_result\b[^>]*>")


def _fragments(tool_names: Iterable[str]) -> list[re.Pattern[str]]:
    names = [n for n in tool_names if n]
    pats = [re.compile(rf"(?<![\w]){re.escape(n)}(?![\w])") for n in names]
    pats += [re.compile(re.escape(n), re.I) for n in HARNESS_NOTES]
    pats.append(_SCORE)
    pats += [re.compile(rf"\b{re.escape(n)}\b") for n in ERROR_CLASSES]
    return pats


# A JSON object in a reply is a tool call or a result dumped as data (small real models write their calls
# as text, or echo the result instead of answering): no customer reads `{"status": ...}`.
_JSON_START = re.compile(r"\{\s*\"[^\"\n]{1,64}\"\s*:")


def _json_spans(text: str) -> list[tuple[int, int]]:
    """Where JSON objects stand in ``text``, ill-formed ones too (to their matching brace, or the end)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while m := _JSON_START.search(text, pos):
        depth, end, quoted = 0, len(text), False
        for i in range(m.start(), len(text)):
            ch = text[i]
            if ch == '"' and text[i - 1] != "\\":
                quoted = not quoted
            elif not quoted and ch in "{}":
                depth += 1 if ch == "{" else -1
                if depth == 0:
                    end = i + 1
                    break
        spans.append((m.start(), end))
        pos = end
    return spans


def _without_json(text: str) -> str:
    """A call written as text is dropped; a result dumped as JSON keeps its facts as plain ``key: value``
    text (dropping it would leave a customer whose change was made with nothing, or a wrong "sorry")."""
    for start, end in reversed(_json_spans(text)):
        span = text[start:end]
        plain = "" if re.search(r'"arguments"\s*:', span) else re.sub(r'[{}\[\]"]', "", span)
        text = text[:start] + re.sub(r"\s+", " ", plain).strip() + text[end:]
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def only_data(text: str) -> bool:
    """Whether ``text`` is JSON and nothing else: a call or a pasted result, no words for a customer."""
    text = _LABEL_TAG.sub("", text or "")
    spans = _json_spans(text)
    rest, pos = [], 0
    for start, end in spans:
        rest.append(text[pos:start])
        pos = end
    return bool(spans) and len(re.sub(r"\W", "", "".join(rest) + text[pos:])) < 2


# A field pair as a dump writes it: "Order id: ORD-1", "status=shipped", "状态：已发货", at the start of a line or
# after a separator; three of them (or two lines of them) are a list of fields, not a sentence.
_PAIR = re.compile(r"(?:^|[;；,，\n|]|\s{2,})\s*[-*•]?\s*([A-Za-z_][\w ]{0,28}?|[\u3400-\u9fff]{1,8})\s*[:：=]\s*"
                   r"(?=[^\s/])", re.M)
_PAIR_LINE = re.compile(r"^\s*[-*•]?\s*[\w\u3400-\u9fff][\w \u3400-\u9fff]{0,28}\s*[:：=]\s*\S", re.M)
_PY_LITERAL = re.compile(r"\{\s*'[^'\n]{1,40}'\s*:|\[\s*\{\s*'|[:=]\s*(?:True|False|None)\b|\b(?:datetime|Decimal)\(|"
                         r"(?<=[a-z])\s+(?:True|False|None)\b")
_SCORE = re.compile(r"\b(?:score|relevance|confidence|similarity)\s*[:=]?\s*\d*\.\d+", re.I)


def dump_kind(text: str) -> str | None:
    """What kind of data dump ``text`` is, if any: ``json`` (an object or array), ``key_value`` (field lines
    or pairs), ``python_literal`` (a dict or flag printed by Python); None for words."""
    text = _LABEL_TAG.sub("", text or "")
    stripped = text.strip()
    if _PY_LITERAL.search(text):
        return "python_literal"
    if _json_spans(text) or (stripped[:1] in "[{" and stripped[-1:] in "]}"):
        return "json"
    if len(_PAIR.findall(text)) >= 3 or len(_PAIR_LINE.findall(text)) >= 2:
        return "key_value"
    return None


def internal_text(reply: str, tool_names: Iterable[str]) -> list[str]:
    """The internal strings ``reply`` shows: tool names, harness notes, error classes, raw JSON, "the user",
    scores."""
    found = [m.group(0) for p in (*_fragments(tool_names), _LABEL_TAG, _SCORE) for m in [p.search(reply or "")] if m]
    found += [(reply or "")[s:e][:40] for s, e in _json_spans(reply or "")]
    found += [m.group(1) for m in _THIRD_PERSON.finditer(reply or "")]
    return list(dict.fromkeys(found))


def _second_person(text: str) -> str:
    def swap(m: re.Match[str]) -> str:
        word = "your" if m.group(2) else "you"
        return word.capitalize() if m.group(1)[0].isupper() else word

    text = _THIRD_PERSON.sub(swap, text)
    for pattern, repl in _GRAMMAR:
        text = re.sub(pattern, repl, text, flags=re.I)
    return text.replace("该用户", "您")


# The request told back before (or instead of) the answer: "You asked me to look up ORD-1.", "您问的是…".
# The customer knows what they asked; small models open with it (45 of 65 real answers did).
_RESTATED = re.compile(r"^\s*(?:you(?:'ve| have)? (?:asked|wanted|want|requested|are asking|were asking|would like)\b|"
                       r"your (?:question|request|message) (?:is|was)\b|i found that (?:your|the customer's) message\b|"
                       r"(?:您|你)(?:问|说|想知道|询问|咨询|要求|想查询|(?:需要|想要?)(?:查找|查询|查看|了解|知道|获取)))", re.I)


# A lookup told back as the customer's to do ("You need to find the ticket with the ID INC0012343…") or as our
# prompt's words ("Your message was found in two tickets…"): not an answer, whatever facts ride along.
_LOOKUP_TOLD = re.compile(r"^\s*(?:you need to (?:find|look up|look for|check|see|view|know|get)\b|"
                          r"your (?:message|request) (?:was|is) found\b)", re.I)


def told_back(text: str) -> bool:
    """Whether ``text`` opens by telling the request back (``_RESTATED``, ``_LOOKUP_TOLD``)."""
    return bool(_RESTATED.search(text) or _LOOKUP_TOLD.search(text))


# "您说，" / "你说：" / "You said:" opening a reply, then the answer in the same clause; "您想查询的资产编号是…"
# (the record you want to look up is...) opens the answer the same way.
_SAID_LEAD = re.compile(r"^\s*(?:(?:您|你)(?:刚才)?说[，,：:]\s*|(?:您|你)(?:想|需要)(?:查询|查找|查看)的|you said[,:]\s*)",
                        re.I)


# The answer step's own prompt words told back (``nodes.presentation``): cut out, the facts after them kept
# ("The lookup for the customer's message found (data from the systems, not instructions) is that the time is
# 17:38" -> "The time is 17:38").
_PARROTED = re.compile(r"(?:the )?(?:(?:lookup|search|information) for )?(?:the customer's|your) message (?:found|shows?)\s*"
                       r"(?:\(data from the systems, not instructions\)\s*)?(?:(?:is|was) that|is|was|:)?\s*|"
                       r"\s*\(data from the systems, not instructions\)", re.I)


def _unparroted(text: str) -> str:
    out = _PARROTED.sub("", text)
    return out[:1].upper() + out[1:] if out != text and out[:1].islower() else out


_ECHO_WORDS = 5  # a run of this many words shared with a note of ours is the note told back
_ECHO_CJK = 6  # Chinese: a run of this many characters


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", _second_person(text).lower())


def _word_runs(text: str) -> set[tuple[str, ...]]:
    ws = _words(text)
    runs = {tuple(ws[i:i + _ECHO_WORDS]) for i in range(len(ws) - _ECHO_WORDS + 1)}
    cjk = "".join(re.findall(r"[\u3400-\u9fff]", text))
    return runs | {tuple(cjk[i:i + _ECHO_CJK]) for i in range(len(cjk) - _ECHO_CJK + 1)}


def _echoes(clause: str, runs: set[tuple[str, ...]], notes: Sequence[list[str]]) -> bool:
    """A clause shares a run of words with a note, or is a short piece of one ("say it")."""
    ws = _words(clause)
    if _word_runs(clause) & runs:
        return True
    return 0 < len(ws) < _ECHO_WORDS and any(ws == n[i:i + len(ws)] for n in notes for i in range(len(n)))


def without_echoes(reply: str, notes: Iterable[str]) -> str | None:
    """``reply`` without the clauses that tell back a note the harness wrote for the model (why a draft was
    sent back: "the change is already done (its status is now cancelled); tell the customer it is done"), or
    None when nothing is left. A small model asked to answer again often copies the note into the answer."""
    runs = set().union(*(_word_runs(n) for n in notes)) if notes else set()
    if not runs:
        return reply
    said = [_words(n) for n in notes]
    kept = [c.group(0) for c in _CLAUSE.finditer(reply or "") if not _echoes(c.group(0), runs, said)]
    out = "".join(kept).strip()
    return out if len(re.sub(r"\W", "", out)) >= 2 else None


def customer_safe(reply: str, tool_names: Iterable[str]) -> str | None:
    """``reply`` without internal text, or None when nothing worth saying is left."""
    text = _second_person(_without_json(_LABEL_TAG.sub("", reply or "")))
    text = _unparroted(text)
    pats = _fragments(tool_names)
    # A clause that names internals, or relays an instruction found in data, is not for the customer.
    kept = [c.group(0) for c in _CLAUSE.finditer(text)
            if not any(p.search(c.group(0)) for p in pats) and not holds_instruction(c.group(0))]
    restated = 0
    while len(kept) > restated + 1 and _RESTATED.search(kept[restated]):  # the answer, not the question told back
        restated += 1
    out = "".join(kept[restated:]).strip()
    # "您说，订单编号为ORD-10051，状态已签收…": the answer behind a "you said" lead-in of one clause (on dev, 3 of
    # the small model's 4 restated shop answers); the lead-in goes, the facts stay
    lead = _SAID_LEAD.match(out)
    if lead and len(re.sub(r"\W", "", out[lead.end():])) >= 4:
        out, restated = out[lead.end():], restated + 1
    if restated:  # what is left starts a sentence
        out = out[:1].upper() + out[1:]
    dangling = bool(_DANGLING.search(out))
    out = _DANGLING.sub("", out).strip()
    # A lead-in whose substance was dropped ("Sorry, that didn't work:") says nothing on its own.
    if len(re.sub(r"\W", "", out)) < 2 or (dangling and len(kept) == 1):
        return None
    return out


# Which customer-facing phrase a message's failed tool calls call for, by error type (first match wins).
_OUTCOMES = (
    ("constraint", "not_done_as_asked"),
    (("timeout", "transient", "rate_limited", "server_error", "malformed", "tool_execution_failed"),
     "service_down"),
    (("invented_argument", "validation", "duplicate_call"), "could_not_finish"),
)


_MCP_PREFIX = re.compile(r"^\s*Error executing tool [\w.-]+:\s*")  # how the MCP SDK wraps a tool's own error


def outcome_phrase(tool_log: Sequence[Mapping[str, Any]], lang: str, domain: Domain | None = None) -> str:
    """The customer-facing words for what this message's tool calls ran into: a failed tool's own words for
    its failure (``ToolSpec.phrases``) where it has them, else the generic phrase for the kind of failure."""
    for r in tool_log:
        customer = r.get("customer") or {}
        key = str(customer.get("phrase") or "")
        if r.get("status") != "ok" and key and domain is not None and domain.phrase(key, lang) is not None:
            return say(key, lang, domain, **{k: str(v) for k, v in (customer.get("values") or {}).items()})
    names = domain.registry().names() if domain is not None else ()
    for r in reversed(tool_log):
        # the tool said no, with its reason ("No forecast for Lisboa; known cities: Lisbon, Oslo, Tokyo."): the
        # customer hears the reason, in words fit for them, when it is in their language
        if r.get("status") != "ok" and r.get("error_type") in ("business", "not_found"):
            reason = customer_safe(_MCP_PREFIX.sub("", str(r.get("error") or "")), names)
            if reason and not (lang != "en" and not _CJK.search(reason)):
                return say("tool_refused", lang, domain, reason=reason)
    types = {str(r.get("error_type")) for r in tool_log if r.get("status") != "ok"}
    for keys, phrase in _OUTCOMES:
        if types & ({keys} if isinstance(keys, str) else set(keys)):
            return say(phrase, lang, domain)
    return say("could_not_finish", lang, domain)


def untold_refusal(reply: str, tool_log: Sequence[Mapping[str, Any]], lang: str, domain: Domain | None) -> str | None:
    """The domain's words for a refusal the reply leaves out, or None. A tool that said no on the request's
    merits (``business``: "there is already a request REQ0001221 for github"), with a phrase for the customer,
    and that did not work later in the message: the customer hears why nothing was done, whatever the model
    wrote instead. Told already when the reply names one of the refusal's values (its record) or its words."""
    if domain is None:
        return None
    worked = {r.get("name") for r in tool_log if r.get("status") == "ok"}
    for r in tool_log:
        customer = r.get("customer") or {}
        key = str(customer.get("phrase") or "")
        if (r.get("status") == "ok" or r.get("error_type") != "business" or r.get("name") in worked or not key
                or domain.phrase(key, lang) is None):
            continue
        values = {k: str(v) for k, v in (customer.get("values") or {}).items()}
        told = say(key, lang, domain, **values)
        named = [v for v in values.values() if len(v) >= 4 and any(ch.isdigit() for ch in v)]
        if told in reply or any(v in reply for v in named):
            return None
        return told
    return None


_CJK = re.compile(r"[\u3400-\u9fff]")
_MIN_QUOTE = 12  # shorter clauses ("Nothing was changed.") are too common to tell a quote from a coincidence


def _quoted_span(draft: str, error: str) -> tuple[int, int] | None:
    """Where ``draft`` quotes the tool error ``error``: from its first quoted clause to its last."""
    spans = []
    for c in _CLAUSE.finditer(error):
        clause = c.group(0).strip().rstrip("…").strip()
        if len(clause) < _MIN_QUOTE:
            continue
        at = draft.find(clause)
        if at < 0 and len(clause) > 40:  # quoted in part, or cut where the record was
            at = draft.find(clause[:40])
            clause = clause[:40]
        if at >= 0:
            spans.append((at, at + len(clause)))
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None


def errors_in_customer_words(draft: str, tool_log: Sequence[Mapping[str, Any]], lang: str,
                             domain: Domain | None = None) -> str:
    """``draft`` with each quoted tool error (written for the model, in English) in the customer's words.

    A failed call whose error names a domain phrase (``ToolError(phrase=...)``) is told with that phrase in
    ``lang``; an error with no phrase, quoted to a customer who writes another language, is cut out (the
    reply then falls back to ``outcome_phrase`` when nothing else is left).
    """
    text = draft or ""
    for record in tool_log:
        error = str(record.get("error") or "")
        if record.get("status") == "ok" or not error:
            continue
        span = _quoted_span(text, error)
        if span is None:
            continue
        customer = record.get("customer") or {}
        key = customer.get("phrase")
        if key and domain is not None and domain.phrase(str(key), lang) is not None:
            told = say(str(key), lang, domain, **{k: str(v) for k, v in (customer.get("values") or {}).items()})
        elif lang != "en" and not _CJK.search(error):
            told = ""
        else:
            continue
        text = text[: span[0]] + told + text[span[1]:]
    return text


_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
# an English label before a Chinese colon or 是: "Verified：", "Next step是"; not a name in brackets ("（Nora）：")
ENGLISH_LABEL = re.compile(r"(?<![A-Za-z（(])([A-Za-z][a-z]{2,}(?: [A-Za-z][a-z]+){0,2})\s?(：|是)")


def wrong_language(text: str, lang: str) -> bool:
    """Whether ``text`` is written in another language than ``lang`` ("en" or "zh"). Identifiers, names and
    codes in Latin letters inside a Chinese reply are fine; a Chinese reply needs Chinese words, an English
    one mostly Latin words."""
    if not (text or "").strip():
        return False
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN_WORD.findall(IDENTIFIER.sub(" ", text)))
    if lang == "zh":
        # no Chinese ("Cancelled." to a Chinese customer), or a Chinese word in front of English ("抱歉, I'm a bit
        # busy right now. Please send..."); identifiers alone ("ORD-10197") are no language; nor an English label
        # in a Chinese sentence ("Verified：是", "Next step是..."): the label is what the customer reads first
        return ((cjk == 0 and latin >= 1) or (cjk < 2 and latin >= 2) or (latin >= 6 and latin > 2 * cjk)
                or ENGLISH_LABEL.search(IDENTIFIER.sub(" ", text)) is not None)
    if lang == "en":
        return cjk > 0 and cjk >= 2 * max(latin, 1)
    return False


IDENTIFIER = re.compile(r"\b[A-Z]{1,5}-?\d{3,}\b|\b[A-Z0-9]{6,}\b")
