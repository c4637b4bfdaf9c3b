"""Confirm before changing: a changing tool call waits for the user's explicit yes in their next message.

With the design knob ``confirm_changes`` on, the action node does not run a state-changing call the model
made; it states what would change (the domain's ``change_<tool>`` phrase, or the core's generic one: no
tool names) and ends the turn. The next message decides: an explicit yes runs exactly that call, and
nothing else; a no, a changed mind, a question or any other message drops it. Questions and hypotheticals
("Should I cancel...?", "If I returned it...") therefore never change anything: at most they get the
question back, which the user answers with a no or with something else.

The words are language-level (English and Chinese), not domain-level, like ``tools.text``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from lg_harness.core.domain import Domain
from lg_harness.nodes.answer_words import ZH_VERBS
from lg_harness.nodes.phrases import say
from lg_harness.obs.tracing import span_event
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import ToolError, classify
from lg_harness.tools.executor import Executor, ToolExecutor, ToolOutcome, call_tool
from lg_harness.tools.registry import ToolRegistry, ToolSpec

_YES_EN = (r"y|yes|yeah|yep|yup|sure|ok|okay|confirm(?:ed)?|correct|right|go ahead|do it|please do|"
           r"please go ahead|yes please|that'?s right|proceed")
_NO_EN = (r"n|no|nope|nah|don'?t|do not|stop|wait|hold on|never ?mind|cancel that|not now|leave it|forget it|"
          r"i changed my mind|changed my mind|actually,? no|no thanks|no,? thank you")
_YES = re.compile(rf"^\s*(?:{_YES_EN})\b[\s,.!]*(?:(?:please|thanks|thank you|do it|go ahead)\b[\s,.!]*)*$"
                  # one or more of them in a row: "可以，办吧。", "好的，确认。"
                  r"|^\s*嗯[\s，。！!,.]*$"  # a lone "嗯"; "嗯嗯嗯啊" is a noise, not a yes
                  # "是的，请办理。", "好的，麻烦了": a plea or thanks beside the yes is still a yes
                  r"|^\s*(?:请?(?:是|是的|对|对的|好|好的|可以|行|确认|确定|没错|继续|就这样|办|办理|去办|"
                  r"就这么办|没问题|同意)[吧的啊呀]?[\s，。！!,.]*)+(?:(?:谢谢|麻烦[你您]?了)[\s，。！!,.]*)*$",
                  re.I)
# A no anywhere wins over a yes: "yes, but don't cancel it" is not a confirmation.
_NO = re.compile(rf"\b(?:{_NO_EN})\b|不要|不用|别|算了|先不|不了|改主意|不是|等一下|再想想", re.I)
_QUESTION = re.compile(r"[?？]|\b(?:if|should|would|could|how|what|when|why|whether)\b|如果|要是|吗|呢|怎么|是否", re.I)

Answer = Literal["yes", "no", "other"]


def answer_to_confirmation(text: str) -> Answer:
    """How a message answers "shall I make this change?": an explicit yes, a no, or something else.

    Only a short, plain yes counts: "yes?" or "yes if it is free" is a question or a condition, not consent.
    """
    if _NO.search(text):
        return "no"
    if _YES.match(text) and not _QUESTION.search(text):
        return "yes"
    return "other"


def describe_change(call: Mapping[str, Any], domain: Domain, lang: str, spec: ToolSpec | None = None) -> str:
    """What one changing call will do, in the user's language: ``change_<tool>`` with the call's arguments
    filled in, else the action in words from the tool itself (``action_words``), never the tool's name."""
    args = {k: str(v) for k, v in (call.get("args") or {}).items()}
    text = domain.phrase(f"change_{call['name']}", lang)
    if text is not None:
        try:
            return text.format_map(_Defaults(args)).strip()
        except (IndexError, ValueError):
            pass
    return action_words(call, domain, lang, spec)


def _verb_and_object(name: str, description: str) -> tuple[str, list[str]]:
    """The action a tool takes: its description's first word when that is a verb ("Cancel a pending order
    ..."), else its name's first word; the thing acted on: the rest of its name ("cancel_pending_order")."""
    words = [w.lower() for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name) if w]
    first = re.match(r"\s*([A-Za-z]+)", description or "")
    said = first.group(1).lower() if first else ""
    verb = said if said in ZH_VERBS or (said and said == (words[:1] or [""])[0]) else (words[0] if words else said)
    rest = words[1:] if words and (words[0] == verb or words[0] in ZH_VERBS) else words
    return verb, [w for w in rest if w not in ("my", "the", "a")]


def _arguments(call: Mapping[str, Any], domain: Domain, spec: ToolSpec | None) -> tuple[list[str], list[tuple[str, str]]]:
    """The values that say which thing changes (identifiers), and the other arguments worth naming."""
    entity = set(domain.tool_entities(spec)) if spec is not None else set()
    props = spec.json_schema()["function"]["parameters"].get("properties", {}) if spec is not None else {}
    ids, others = [], []
    for key, value in (call.get("args") or {}).items():
        if value in (None, "", [], {}):
            continue
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        pattern = (props.get(key) or {}).get("pattern") or any(b.get("pattern") for b in (props.get(key) or {}).get("anyOf", []))
        if key in entity or pattern or re.search(r"(?:^|_)(?:id|ids|no|number|code)$", key):
            ids.append(shown)
        else:
            others.append((key, shown if len(shown) <= 60 else shown[:57] + "..."))
    return ids, others


def action_words(call: Mapping[str, Any], domain: Domain, lang: str, spec: ToolSpec | None = None) -> str:
    """The action of a changing call in words: "cancel the pending order #W1 (reason: ordered by mistake)" /
    "取消 pending order #W1（原因：ordered by mistake）", from the tool's description and name."""
    from lg_harness.nodes.answer_words import ZH_FIELD_WORDS, field_words

    verb, thing = _verb_and_object(call["name"], spec.description if spec is not None else "")
    ids, others = _arguments(call, domain, spec)
    if lang == "zh":
        noun = "".join(ZH_FIELD_WORDS.get(w, w) for w in thing) if all(w in ZH_FIELD_WORDS for w in thing) else " ".join(thing)
        extra = "，".join(f"{''.join(ZH_FIELD_WORDS.get(w, w) for w in field_words(k))}：{v}" for k, v in others)
        head = f"{ZH_VERBS.get(verb, verb)}{noun}" + (f" {'、'.join(ids)}" if ids else "")
        return head + (f"（{extra}）" if extra else "")
    extra = "; ".join(f"{' '.join(field_words(k))}: {v}" for k, v in others)
    head = verb + (f" the {' '.join(thing)}" if thing else "") + (f" {', '.join(ids)}" if ids else "")
    return head + (f" ({extra})" if extra else "")


class _Defaults(dict):
    """Format values where an argument the phrase names is missing from the call read as empty."""

    def __missing__(self, key: str) -> str:
        return ""


def confirmation_question(calls: Sequence[Mapping[str, Any]], domain: Domain, lang: str,
                          registry: ToolRegistry | None = None) -> str:
    sep = "；" if lang == "zh" else "; "
    registry = registry or domain.registry()
    changes = sep.join(describe_change(c, domain, lang, registry.get(c["name"])) for c in calls)
    return say("confirm_change", lang, domain, change=changes)


def precheck_outcome(registry: ToolRegistry, executor: Executor, call: Mapping[str, Any],
                     ctx: ToolContext) -> ToolOutcome | None:
    """Check, then confirm: the outcome that answers a changing call at once when its tool's ``precheck``
    says the change is impossible (the tool's own error, with its customer phrase), else None (ask).

    The precheck changes nothing. A call that does not validate, or a precheck that breaks, is left to the
    usual path: the question is asked, and the tool itself decides once confirmed."""
    spec = registry.get(call["name"])
    if spec is None or spec.precheck is None:
        return None
    try:
        _, args = executor.validate(call["name"], call.get("args") or {})
        call_tool(dataclasses.replace(spec, fn=spec.precheck), args, ctx)
    except ToolError as err:
        outcome = ToolOutcome(call_id=call.get("id") or "", name=call["name"], args=call.get("args") or {})
        ToolExecutor._fail(outcome, err, classify(err))
        span_event("change.precheck_refused", tool=call["name"], error_type=outcome.error_type or "")
        return outcome
    except Exception:  # noqa: BLE001 - a broken precheck must not block asking; the tool decides later
        return None
    return None
