"""Self-check: before the reply leaves, it must be true, grounded and meant for the customer.

Every variant that checks rewrites internal text away (tool names, harness notes, "the user") and checks
the facts the draft states against this message's tool results (``fact_check``): a contradicted draft is
regenerated once, then corrected from the results. Variant ``grounded``: identifiers of the domain's grounded entity types (``EntityType.ground``) and amounts
in the reply must appear in this turn's tool results, the fact card or the user's own words. ``off`` passes everything (for designs
that rebuild harnesses without a check).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from lg_harness.core.state import HarnessState, StateUpdate, TurnStats
from lg_harness.memory.context import turn_messages
from lg_harness.memory.known_ids import ungrounded_values
from lg_harness.nodes.answer_words import ZH_VERBS
from lg_harness.nodes.base import NodeDeps, builtin_variant
from lg_harness.nodes.customer_text import (
    IDENTIFIER,
    customer_safe,
    dump_kind,
    errors_in_customer_words,
    only_data,
    outcome_phrase,
    told_back,
    untold_refusal,
    without_echoes,
    wrong_language,
)
from lg_harness.nodes.fact_check import contradictions, corrected, result_of, results_of
from lg_harness.nodes.money import with_currency
from lg_harness.nodes.phrases import say
from lg_harness.nodes.render_answer import (
    OWN_KEYS,
    Voice,
    kind_of,
    labels_in_chinese,
    localized,
    relevance,
    render_answer,
    values_in_words,
)
from lg_harness.tools.effects import WRITES, first_word
from lg_harness.tools.entities import EntityType

_AMOUNT = re.compile(r"(?<![\d.])\d+\.\d{2}(?![\d])")


def grounding_text(state: HarnessState) -> str:
    messages = state.get("messages") or []
    parts = [json.dumps(state.get("fact_card") or {}, ensure_ascii=False)]
    parts += [str(m.content) for m in messages if isinstance(m, HumanMessage)]
    # Error results count too: quoting a tool's own error text is grounded.
    parts += [str(m.content) for m in turn_messages(messages) if isinstance(m, ToolMessage)]
    return "\n".join(parts)


def ungrounded_claims(reply: str, evidence: str, entity_types: Sequence[EntityType] = ()) -> list[str]:
    """Identifiers and amounts the reply states that the evidence does not hold (as written or canonically)."""
    grounded = [t for t in entity_types if t.ground]
    claims: list[str] = []
    for t in grounded:
        stated = t.find(reply or "")
        known = set(t.find(evidence)) if stated else set()
        claims += [c for c in stated if c not in evidence and c not in known]
    amounts = [a for a in _AMOUNT.findall(reply or "") if a not in evidence]
    if amounts:  # "131.00" is grounded by a result's 131.0: compare as numbers
        known = {round(float(n), 2) for n in re.findall(r"\d+(?:\.\d+)?", evidence)}
        claims += [a for a in amounts if round(float(a), 2) not in known]
    return list(dict.fromkeys(claims))


NO_WORDS = "it was a tool call or raw data, not an answer in words for the customer"
WRONG_LANGUAGE = "it was not in the customer's language ({language}); answer in {language}"
_LANGUAGES = {"en": "English", "zh": "Chinese"}


# A model stuck in a loop writes the same words over and over ("一共 啊，一共 啊，一共 啊，..."): not an answer.
_STUCK = re.compile(r"(.{2,24}?)(?:[\s，,、;；]*\1){4,}", re.S)


def draft_words(draft: str, log: Sequence[Mapping[str, Any]], lang: str, deps: NodeDeps) -> str | None:
    """The draft as words a customer may read, or None when it has none: a call or a result pasted as data
    (JSON, field lines, a Python literal), or nothing left once internal text and relayed instructions go."""
    if only_data(draft) or dump_kind(draft) or _STUCK.search(draft):
        return None
    text = customer_safe(errors_in_customer_words(draft, log, lang, deps.domain), deps.registry.names())
    return None if text is None or dump_kind(text) else text


_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})")


def stamp_parts(text: str) -> list[str]:
    """A time stamp's day and clock ("2026-10-25T17:29:00" -> "2026-10-25", "17:29"); [] for anything else."""
    m = _STAMP.match(text)
    return [m.group(1), m.group(2)] if m else []


def _values(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for x in node.values() for v in _values(x)]
    if isinstance(node, list):
        return [v for x in node for v in _values(x)]
    if isinstance(node, str) and (parts := stamp_parts(node)):
        return [node, *parts]  # a time stamp is stated by its day or its clock too
    return [str(node)] if isinstance(node, str | int | float) and not isinstance(node, bool) else []


def mentions(text: str, results: Sequence[Any], said: str = "", claims: Sequence[Any] = ()) -> bool:
    """Whether ``text`` states any value of the results (an id, a name, a status, an amount) that is not
    already in ``said`` (what the customer wrote): echoing the customer's own order number answers nothing.
    A domain's claim words count for the value they state ("已发货" states status shipped)."""
    folded, known = text.casefold(), said.casefold()
    if any(v.casefold() in folded for v in _values(list(results)) if len(v) >= 3 and v.casefold() not in known):
        return True
    return any(w.casefold() in folded and _claim_holds(c, results) for c in claims for w in c.words)


# A text this long is what a result says (an article's steps, a product's description), not a label or a name.
_LONG_TEXT = 90
_RUN_WORDS, _RUN_CJK = 4, 6


def _long_texts(node: Any, lang: str) -> list[str]:
    """The long texts of a result in ``lang``'s variant where it has one ("body_zh" beside "body")."""
    if isinstance(node, Mapping):
        return [t for v in localized(node, lang).values() for t in _long_texts(v, lang)]
    if isinstance(node, list):
        return [t for v in node for t in _long_texts(v, lang)]
    return [node] if isinstance(node, str) and len(node) >= _LONG_TEXT else []


def _runs(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.casefold())
    cjk = "".join(_CJK_CHAR.findall(text))
    return ({" ".join(words[i:i + _RUN_WORDS]) for i in range(len(words) - _RUN_WORDS + 1)}
            | {cjk[i:i + _RUN_CJK] for i in range(len(cjk) - _RUN_CJK + 1)})


def tells_the_text(text: str, results: Sequence[Any], lang: str) -> bool:
    """Whether ``text`` says something of what the results' long texts say, where they have any: "You need to
    fix Wi-Fi connection problems." names the article ("Fix Wi-Fi connection problems") and none of its steps
    ("Forget the NW-Corp network and join it again..."). A result without a long text asks nothing of this."""
    texts = [t for r in results for t in _long_texts(r, lang)]
    if not texts:
        return True
    said = _runs(text)
    return any(said & _runs(t) for t in texts)


_ORDER = re.compile(r"^\s*([A-Za-z]+) (?:the|this|that|it)\b")


def orders_the_system(text: str, results: Sequence[Any], lang: str) -> bool:
    """Whether ``text`` is a command to the system instead of an answer: "Mark the ticket as resolved." after a
    lookup of tickets (a small model writing the next step as if it were the agent). Steps from an article
    ("Clear the cache…") are instructions the results gave, so a result with a long text asks nothing of this."""
    m = _ORDER.match(text)
    return bool(m) and m.group(1).lower() in WRITES and not any(_long_texts(r, lang) for r in results)


def _claim_holds(claim: Any, results: Sequence[Any]) -> bool:
    records = [r for r in results if isinstance(r, dict)] + [x for r in results if isinstance(r, dict)
                                                            for v in r.values() if isinstance(v, list)
                                                            for x in v if isinstance(x, dict)]
    for record in records:
        if any(field in record and claim.true_of(record[field]) for field in claim.fields):
            return True
    return False


def _counts(node: Any) -> list[str]:
    """How many items each list in a result holds ("I found 12 orders" counts them)."""
    if isinstance(node, dict):
        return [c for v in node.values() for c in _counts(v)]
    if isinstance(node, list):
        return [str(len(node)), *(c for v in node for c in _counts(v))]
    return []


def parts_unanswered(text: str, state: HarnessState, deps: NodeDeps) -> list[str]:
    """The tools of a several-request message whose results worked but ``text`` states nothing of."""
    asked = state.get("request_intents") or []
    if len(asked) < 2:
        return []
    log = state.get("tool_log") or []
    said = question_of(state)
    missed = []
    for intent in asked:  # each request's results: any of its route's tools that worked
        tools = set(deps.domain.route(intent).tools)
        mine = [r for r in log if r.get("status") == "ok" and r.get("name") in tools]
        if mine and not mentions(text, results_of(mine), said, deps.domain.claims):
            missed.append(str(mine[0].get("name")))
    return missed


_ZH_DIGITS = "零一二三四五六七八九十"


def _forms(key: str, value: Any, voice: Voice) -> set[str]:
    """How a reply may write one value: as the result has it and as the customer's voice words it (a time
    stamp's day or clock alone too: "2026-10-25", "25 October 2026", "17:29")."""
    forms = [str(value), voice.value(key, value)]
    if isinstance(value, str) and (parts := stamp_parts(value)):
        forms += [*parts, voice.value(key, parts[0])]  # the day, or the clock ("17:29")
    return {f.casefold() for f in forms if f.strip()}


def _states(text: str, key: str, value: Any, voice: Voice) -> bool:
    """Whether ``text`` states the value: a number as a number of its own (not the 1 inside ORD-10147; 1 or
    1.00, 一 or 两 in Chinese), anything else in one of its forms."""
    if isinstance(value, int | float):
        numbers = {round(float(n), 2) for n in re.findall(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w.]*\d)", text.replace(",", ""))}
        if round(float(value), 2) in numbers:
            return True
        words = ([_ZH_DIGITS[value]] + (["两"] if value == 2 else [])) if isinstance(value, int) and 0 <= value <= 10 else []
        return any(re.search(f"{w}[个单张项次件笔条位]", text) for w in words)  # 一个, 两单: 一共 counts nothing
    return any(f in text.casefold() for f in _forms(key, value, voice))


# Where a message's questions part: "多少钱？是哪个牌子的？", "the tracking number?? has it left the warehouse".
_QUESTION_PARTS = re.compile(r"[?？!！。；;\n]+|，|,\s+and\b|\s+and\s+(?=(?:what|when|where|which|who|how|is|are|has|"
                             r"have|did|does|do|can)\b)", re.I)


def question_parts(question: str) -> list[str]:
    """The questions of one message, each on its own: every part that asks about a field needs an answer."""
    return [p for p in (part.strip() for part in _QUESTION_PARTS.split(question)) if p] or [question]


def asked_untold(text: str, state: HarnessState, deps: NodeDeps, log: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fields a lookup of this message found that a part of the question asks about
    (``render_answer.relevance``: "where" asks the status, "一共多少钱" the total) when ``text`` states none of
    that part's fields; [] when every asking part is answered by one of its fields, or when nothing asked can
    be told apart from the customer's own words. "防摔手机壳。" does not answer "到哪了？" though it is true; a
    price does not answer "多少钱？是哪个牌子的？" whole. Prose fields (a description, an article) are left out: a
    paraphrase of them cannot be checked by value."""
    question = question_of(state)
    lang = (state.get("fact_card") or {}).get("language") or "en"
    fields: list[tuple[str, Any, Voice]] = []
    for record in log:
        spec = deps.registry.get(str(record.get("name") or ""))
        result = result_of(record)
        if spec is None or spec.changes_state or not isinstance(result, Mapping):
            continue
        currency = str(result.get("currency") or deps.domain.currency or "")
        voice = Voice(lang, deps.domain, spec, currency)
        # the record's own fields, and those of its lists' items ("which colour?" of a product's variants)
        rows = [localized(result, lang)] + [localized(i, lang) for v in result.values() if isinstance(v, list)
                                            for i in v if isinstance(i, Mapping)]
        fields += [(k, v, voice) for row in rows for k, v in row.items()
                   if isinstance(v, str | int | float) and not isinstance(v, bool) and str(v).strip()
                   and k not in OWN_KEYS and kind_of(k, v) != "text" and not _states(question, k, v, voice)]
    untold: list[str] = []
    for part in question_parts(question):
        asked = [(k, v, voice) for k, v, voice in fields if relevance(k, part) > 0]
        if not asked or any(_states(text, k, v, voice) for k, v, voice in asked) or mentions(
                text, [{k: v for k, v, _ in asked}], "", deps.domain.claims):
            continue
        untold += [voice.label(k) for k, _, voice in asked]
    return list(dict.fromkeys(untold))


def figures_made_up(text: str, state: HarnessState, deps: NodeDeps, results: Sequence[Any]) -> bool:
    """Whether ``text`` states a figure (two digits or more) found nowhere it could come from: the customer's
    messages, the results of calls that worked, the domain's own policy text, or a count of a result's items."""
    known = " ".join([deps.domain.system_prompt or "", *_counts(list(results))])
    evidence = {**state, "messages": [*(state.get("messages") or []), HumanMessage(known)]}
    # identifiers and amounts have checks of their own that name them (``ungrounded_claims``)
    for kind in deps.domain.all_entity_types():
        text = kind.regex.sub(" ", text)
    return bool(ungrounded_values({"args": {"reply": _AMOUNT.sub(" ", text)}}, evidence))


def figures_from_elsewhere(text: str, state: HarnessState) -> bool:
    """Whether ``text`` states a figure (two digits or more) that is in neither the customer's messages nor
    this message's tool results."""
    messages = state.get("messages") or []
    evidence = [m for m in messages if isinstance(m, HumanMessage)]
    evidence += [m for m in turn_messages(messages) if isinstance(m, ToolMessage) and m.status != "error"]
    return bool(ungrounded_values({"args": {"reply": text}}, {"messages": evidence,
                                                             "fact_card": state.get("fact_card") or {}}))


def untold_change(text: str, log: Sequence[Mapping[str, Any]], deps: NodeDeps) -> str | None:
    """The status word of a change this message made that ``text`` does not say (in any form the domain's
    claims know it by), or None: a reply to a change that worked states its outcome."""
    folded = text.casefold()
    for record in log:
        # each record's own result: ``results_of`` skips a result it cannot read, so a zip would pair it wrongly
        result = result_of(record)
        spec = deps.registry.get(str(record.get("name") or ""))
        status = result.get("status") if isinstance(result, Mapping) else None
        if spec is None or not spec.changes_state or not isinstance(status, str) or not status.strip():
            continue
        forms = {status.casefold(), status.replace("_", " ").casefold()}
        forms |= {w.casefold() for c in deps.domain.claims if "status" in c.fields and c.true_of(status) for w in c.words}
        if not any(f in folded for f in forms):
            return status
    return None


# "You need to cancel the order…" / "您需要创建一个工单…" after the change was made: told as the customer's to do.
_TO_DO = re.compile(r"^\s*(?:you (?:need|have|must|should|want)(?: to)?|(?:您|你)(?:需要|要|想要?))\s*(\w+)", re.I)


def change_told_as_to_do(text: str, log: Sequence[Mapping[str, Any]], deps: NodeDeps) -> str | None:
    """The status word of a change this message made when ``text`` opens by telling the customer to make it
    ("You need to return the order - the order ID is ORD-10116…" after the return went through), or None."""
    m = _TO_DO.match(text)
    if not m:
        return None
    said = m.group(1).lower()
    for record in log:
        spec = deps.registry.get(str(record.get("name") or ""))
        result = result_of(record)
        if spec is None or not spec.changes_state or record.get("status") != "ok" or not isinstance(result, Mapping):
            continue
        verb = first_word(spec.name)
        if said == verb or said.startswith(ZH_VERBS.get(verb, "\0")):
            return str(result.get("status") or "done")
    return None


def new_id_untold(text: str, state: HarnessState, deps: NodeDeps, log: Sequence[Mapping[str, Any]]) -> str | None:
    """The label of an identifier a change of this message made (in its result, never in the customer's
    words: a new ticket's number) that ``text`` does not state, or None."""
    said = " ".join(str(m.content) for m in state.get("messages") or [] if isinstance(m, HumanMessage))
    lang = (state.get("fact_card") or {}).get("language") or "en"
    for record in log:
        spec = deps.registry.get(str(record.get("name") or ""))
        result = result_of(record)
        if spec is None or not spec.changes_state or not isinstance(result, Mapping):
            continue
        for key, value in result.items():
            if kind_of(key, value) == "id" and len(str(value)) >= 4 and str(value) not in said \
                    and str(value) not in text:
                return Voice(lang, deps.domain, spec).label(key)
    return None


def confirmation_told_back(text: str, lang: str, deps: NodeDeps) -> str | None:
    """``text`` without the confirmation question's own words ("Reply yes to go ahead..."), once the change it
    asked about is done: an answer that asks again for a yes tells the customer nothing happened."""
    template = say("confirm_change", lang, deps.domain, change="\x00")
    return without_echoes(text, [part for part in template.split("\x00") if part.strip()])


def rendered(state: HarnessState, deps: NodeDeps, lang: str) -> str:
    """The answer the harness writes itself: the results in words (``render_answer``) when a call of the
    message worked, else what happened and what the customer can do next (``outcome_phrase``)."""
    log = state.get("tool_log") or []  # this message's calls
    mine = [r for r in log if r.get("status") == "ok"]
    text = render_answer(mine, deps.registry, deps.domain, question_of(state), lang) if mine else None
    return text or outcome_phrase(log, lang, deps.domain)


_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")


def question_of(state: HarnessState) -> str:
    """What the customer asked: the latest message, with the one before when the latest only answers a
    question of ours (an id, "yes")."""
    humans = [str(m.content) for m in state.get("messages") or [] if isinstance(m, HumanMessage)]
    if not humans:
        return ""
    latest = humans[-1]
    # short: three words at most, or (Chinese, written without spaces) six characters at most ("是的", "ORD-1")
    short = len(latest.split()) <= 3 and len(re.sub(r"[\s\W]", "", latest)) <= (6 if _CJK_CHAR.search(latest) else 40)
    return f"{humans[-2]} {latest}" if len(humans) > 1 and short else latest


def customer_draft(state: HarnessState, deps: NodeDeps, *, may_regenerate: bool) -> tuple[str, list[str]]:
    """The draft as the customer may read it, and the problems to regenerate for (if allowed).

    Quoted tool errors are told in the customer's words and language, internal text and relayed instructions
    are rewritten away (``customer_text``), amounts get the domain's currency (``money``); facts the tool
    results contradict (``fact_check``) are sent back for one more answer while regenerations are left,
    then corrected in place from the results. A draft with no words for the customer (a call, a result
    pasted as data) or in another language after calls that worked is sent back too, then replaced by the
    answer the harness writes from the results (``render_answer``): never a dump of fields. A tool's refusal
    the words leave out is added in the domain's words (``customer_text.untold_refusal``).
    """
    text, problems = checked_draft(state, deps, may_regenerate=may_regenerate)
    lang = (state.get("fact_card") or {}).get("language") or "en"
    if not problems and (refusal := untold_refusal(text, state.get("tool_log") or [], lang, deps.domain)):
        text = f"{text}{'' if lang == 'zh' else ' '}{refusal}"  # why nothing was done, in the domain's words
    return text, problems


def words_problem(text: str, state: HarnessState, deps: NodeDeps, log: Sequence[Mapping[str, Any]],
                  worked: bool) -> str | None:
    """Why words for the customer are not yet the answer, or None: the note for one more try while
    regenerations are left, after which the harness writes the answer from the results."""
    results = results_of(log)
    if worked and (missed := parts_unanswered(text, state, deps)):
        # several requests in one message: an answer to each, not to the first alone
        return f"it does not answer every part of the message (missing: {', '.join(missed)}); answer each"
    if worked and (untold := asked_untold(text, state, deps, log)):
        # True words about the record, but not what was asked ("防摔手机壳。" for "到哪了？").
        return f"it does not say what was asked ({', '.join(untold[:3])}); say it"
    if figures_made_up(text, state, deps, results):
        # A figure that neither the customer nor any result gave ("the battery lasts about 10 hours" after a
        # search that says nothing of batteries): made up.
        return "it states figures that no tool result or customer message gave"
    if log and not worked and figures_from_elsewhere(text, state):
        # Every call of this message failed, yet the words state figures neither the customer nor this
        # message's results gave (an earlier lookup's time, told as the answer to a new question).
        return "it states figures that no tool result of this message gave; say what went wrong"
    if ident := new_id_untold(text, state, deps, log):
        # A change that made a record (a ticket, a request) and an answer without its number: the customer
        # has nothing to quote when they come back.
        return f"it does not give the new {ident}; say it"
    if done := untold_change(text, log, deps) or change_told_as_to_do(text, log, deps):
        # A change that went through, told as one still to come ("You will renew the loan"): the outcome is
        # the tool's status word.
        return f"the change is already done (its status is now {done}); tell the customer it is done"
    return None


def checked_draft(state: HarnessState, deps: NodeDeps, *, may_regenerate: bool) -> tuple[str, list[str]]:
    """``customer_draft`` before a refusal the words leave out is added."""
    draft = state.get("reply") or ""
    log = state.get("tool_log") or []
    lang = (state.get("fact_card") or {}).get("language") or "en"
    text = draft_words(draft, log, lang, deps)
    if text is not None and (notes := (state.get("check") or {}).get("problems")):
        text = without_echoes(text, notes)  # our note on why the last draft went back, told to the customer
    if text is not None and any(r.get("status") == "ok" and (s := deps.registry.get(str(r.get("name")))) is not None
                                and s.changes_state for r in log):
        text = confirmation_told_back(text, lang, deps)
    results = results_of(log)
    if text is not None and results:  # "its status is in_repair" -> "its status is in repair"
        text = values_in_words(text, results, lang, deps.domain)
    # A repeat the executor turned away (the model asking again for what it has) is not a failure.
    worked = bool(results) and any(r.get("status") == "ok" for r in log)
    if text is not None and worked and not (mentions(text, results, question_of(state), deps.domain.claims)
                                            and tells_the_text(text, results, lang)
                                            and not orders_the_system(text, results, lang)
                                            and not told_back(text)):
        # Words, but none of what the lookup found, or the request told back with the facts inside it
        # ("您需要查看工单编号为INC0012327，状态为新建…"): a restatement of the request ("You asked me to look up
        # ORD-1"), the harness's own prompt parroted, "How can I help?", an article's title without its steps.
        # Not an answer: one more try, then the harness writes it from the results.
        text = None
    if text is not None and (problem := words_problem(text, state, deps, log, worked)):
        if may_regenerate:
            return draft, [problem]
        text = None
    # In another language than the customer's, with or without a result: an answer from the conversation
    # ("the first order you gave me was…") reaches the customer in their language too.
    if text is not None and lang == "zh":  # "共有 1 项Orders：..." -> "共有 1 项订单：...": a label, not the answer
        text = labels_in_chinese(text, deps.domain)
    foreign = text is not None and wrong_language(text, lang)
    if ((text is None and worked) or foreign) and may_regenerate:
        # Small models often answer a result by asking for the same call again (written as text, since the
        # answer step offers no tools), or in English: one more try for words before the harness writes it.
        return draft, [NO_WORDS if text is None else WRONG_LANGUAGE.format(language=_LANGUAGES.get(lang, lang))]
    if foreign and not worked:
        # Nothing to render from: keep what the answer named (ids, codes), said in the customer's language.
        named = IDENTIFIER.findall(text or "")
        text = say("named", lang, deps.domain, names="、".join(named) if lang == "zh" else ", ".join(named)) \
            if named else rendered(state, deps, lang)
    elif text is None or foreign:
        text = rendered(state, deps, lang)
    text = with_currency(text, results, deps.domain.currency)
    found = contradictions(text, results, deps.domain.claims, deps.domain.currency, grounding_text(state))
    if found and may_regenerate:
        return draft, [c.problem for c in found]
    if found:  # corrected in place, unless that leaves no words in the customer's language
        fixed = corrected(text, found)
        text = fixed if fixed and not wrong_language(fixed, lang) and not dump_kind(fixed) else rendered(state, deps, lang)
    return text, []


def replaced(state: HarnessState, text: str) -> StateUpdate:
    """The update that makes ``text`` the reply (and the last answer in the messages), if it changed."""
    if text == (state.get("reply") or ""):
        return {}
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    update: StateUpdate = {"reply": text}
    if isinstance(last, AIMessage) and not last.tool_calls and last.id:
        update["messages"] = [AIMessage(text, id=last.id)]  # same id: the reducer replaces the draft
    return update


def regenerations_left(state: HarnessState, deps: NodeDeps) -> bool:
    return (state.get("turn_stats") or {}).get("regenerations", 0) < deps.design.knobs.max_regenerations


@builtin_variant("self_check", "grounded")
class GroundedCheck:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        if (state.get("check") or {}).get("own_words"):
            return {"check": {"ok": True, "problems": []}, "phase": "done"}
        text, wrong = customer_draft(state, self.deps, may_regenerate=regenerations_left(state, self.deps))
        if wrong:
            return {"check": {"ok": False, "problems": wrong, "facts": True}, "phase": "self_check"}
        missing = ungrounded_claims(text, grounding_text(state), self.deps.domain.all_entity_types())
        problems = [f"'{c}' does not come from a tool result or the customer" for c in missing]
        return {"check": {"ok": not problems, "problems": problems}, "phase": "self_check" if problems else "done",
                **replaced(state, text)}


@builtin_variant("self_check", "off")
class NoCheck:
    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        return {"check": {"ok": True, "problems": []}, "phase": "done"}


VERIFY_PROMPT = (
    "You check an assistant's answer before it is sent. Every identifier (reference numbers, ids, codes) "
    "and amount in the ANSWER must appear in the EVIDENCE (tool results, the customer's words, known "
    'facts). Respond with JSON only: {"ok": true|false, "problems": ["..."]}.'
)


def parse_verdict(text: str) -> dict[str, Any]:
    """The model's verdict; anything unreadable counts as a pass with a note (the check must not block)."""
    match = re.search(r"\{.*\}", text or "", re.S)
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    if not isinstance(data.get("ok"), bool):
        return {"ok": True, "problems": [], "note": "unreadable verdict"}
    problems = [str(p) for p in data.get("problems") or []] if not data["ok"] else []
    return {"ok": data["ok"] or not problems, "problems": problems}


@builtin_variant("self_check", "model")
class ModelCheck:
    """For real LLMs: the model itself judges whether the answer is grounded (one extra call)."""

    def __init__(self, deps: NodeDeps) -> None:
        self.deps = deps

    def __call__(self, state: HarnessState, config: RunnableConfig) -> StateUpdate:
        from langchain_core.messages import HumanMessage as Human
        from langchain_core.messages import SystemMessage

        from lg_harness.nodes.base import ModelCallFailed, call_model

        prompt = f"ANSWER:\n{state.get('reply') or ''}\n\nEVIDENCE:\n{grounding_text(state)}"
        stats = TurnStats(**(state.get("turn_stats") or {}))  # a copy
        try:
            verdict_msg, stats = call_model(self.deps, [SystemMessage(VERIFY_PROMPT), Human(prompt)], stats)
            check: dict[str, Any] = parse_verdict(verdict_msg.text)
        except ModelCallFailed:
            check = {"ok": True, "problems": [], "note": "model unavailable"}
        text, _ = customer_draft(state, self.deps, may_regenerate=False)
        return {"check": check, "turn_stats": stats, "phase": "done" if check["ok"] else "self_check",
                **(replaced(state, text) if check["ok"] else StateUpdate())}
