"""The harness's own words to the user, in English and Chinese; a domain's phrases come first.

A domain adds what only it can say (its greeting, how to ask for each slot: ``ask_<slot>``) and may
reword any generic phrase here.
"""

from __future__ import annotations

from lg_harness.core.domain import Domain

_PHRASES: dict[str, dict[str, str]] = {
    "waiting_human": {
        "en": "A human colleague has your conversation (ticket {ticket}) and will answer here.",
        "zh": "人工客服已接手您的会话（工单 {ticket}），会在这里回复您。",
    },
    "with_human": {
        "en": "Thanks, your message is with our colleague (ticket {ticket}), who will answer you here.",
        "zh": "收到，您的消息已转给人工客服同事（工单 {ticket}），他们会在这里回复您。",
    },
    "ask_generic": {
        "en": "Could you tell me a bit more so I can help?",
        "zh": "能再具体说一下您的需求吗？",
    },
    "greeting": {"en": "Hello! What can I do for you?", "zh": "您好！请问有什么可以帮您？"},
    "thanks": {"en": "You're welcome! Anything else I can help with?", "zh": "不客气！还有什么可以帮您的吗？"},
    "handoff": {
        "en": "I've passed this conversation to a human colleague (ticket {ticket}). They will reply here soon.",
        "zh": "已为您转接人工客服（工单 {ticket}），同事会尽快在这里回复您。",
    },
    "change_checking": {
        "en": "I need to check whether your request already went through before doing anything more, so nothing "
              "happens twice. A colleague is checking it now (ticket {ticket}) and will confirm here.",
        "zh": "为避免重复操作，我需要先确认您的请求是否已经办理。同事正在核实（工单 {ticket}），会在这里回复您。",
    },
    "busy": {
        "en": "Sorry, I'm a bit busy right now. Please send your message again in a moment.",
        "zh": "抱歉，系统有点忙，请稍后再发一次。",
    },
    "could_not_finish": {
        "en": "Sorry, I couldn't get that done just now. Could you tell me again what you need, or shall I pass "
              "you to a colleague?",
        "zh": "抱歉，这件事我暂时没能办成。您可以再说一下需要什么，或者需要我为您转接人工客服吗？",
    },
    "tool_refused": {"en": "Sorry, that didn't work: {reason}", "zh": "抱歉，没有办成：{reason}"},
    "service_down": {
        "en": "Sorry, the system I need for this is not answering right now. Please try again in a moment.",
        "zh": "抱歉，处理这件事的系统暂时没有响应，请稍后再试。",
    },
    "not_done_as_asked": {
        "en": "As you asked, I have not done that. Is there anything else I can help with?",
        "zh": "按照您的要求，我没有执行这个操作。还有什么可以帮您的吗？",
    },
    "named": {"en": "What I have is {names}.", "zh": "我这边记录的是：{names}。"},
    "facts_changed": {
        "en": "Here is what I found: {facts}",
        "zh": "查询结果如下：{facts}",
    },
    "confirm_change": {
        "en": "To confirm: I will {change}. Reply yes to go ahead, or no to leave everything as it is.",
        "zh": "请确认：我将{change}。回复“是”继续，回复“不”则不做任何更改。",
    },
    "change_generic": {"en": "make this change: {details}", "zh": "进行以下更改：{details}"},
    "change_dropped": {
        "en": "OK, I won't change anything. Is there anything else I can do?",
        "zh": "好的，我不做任何更改。还有什么可以帮您的吗？",
    },
    "change_already_made": {
        "en": "Your earlier yes already went through, so that change is made (see my reply above). Is there "
              "anything else I can do?",
        "zh": "您之前的确认已经生效，这项更改已经完成（见上面的回复）。还有什么可以帮您的吗？",
    },
    "not_for_role": {  # a task the user's role cannot do (a domain words its own: refuse_<intent>)
        "en": "Sorry, that is not something I can do for your account here. Would you like me to pass you to a "
              "colleague who can help?",
        "zh": "抱歉，这项操作我无法为您的账户办理。需要我为您转接能处理的同事吗？",
    },
    "request_dropped": {
        "en": "OK, I've stopped there: nothing was done. Is there anything else I can help with?",
        "zh": "好的，已经停下，没有做任何操作。还有什么可以帮您的吗？",
    },
    "offer_declined": {"en": "All right. Is there anything else I can help with?", "zh": "好的。还有什么可以帮您的吗？"},
    "nothing_to_confirm": {  # a yes or no when no change was asked about (domains add what they can do)
        "en": "No change is waiting for your answer right now. What can I help you with?",
        "zh": "目前没有需要您确认的更改。请问有什么可以帮您？",
    },
    "change_already_dropped": {
        "en": "Your earlier no already stands: nothing was changed. If you do want the change, just ask for it "
              "again.",
        "zh": "您之前已经选择不更改，所以没有做任何更改。如果需要这项更改，请重新告诉我。",
    },
    "interrupted": {
        "en": "(I stopped working on this message when your next one arrived; my answer to that one follows.)",
        "zh": "（收到您的新消息后，我停止处理这一条；下面是对新消息的回复。）",
    },
    "partial": {
        "en": "I couldn't finish everything for this request. Here is what I found so far: {done}",
        "zh": "这个请求没能全部完成，目前查到的信息是：{done}",
    },
}


def has_phrase(key: str, domain: Domain | None = None) -> bool:
    return key in _PHRASES or (domain is not None and key in domain.phrases)


def say(key: str, lang: str, domain: Domain | None = None, **values: str) -> str:
    """The phrase ``key`` in ``lang`` (English when missing): the domain's wording first, then the core's."""
    text = domain.phrase(key, lang) if domain is not None else None
    if text is None:
        texts = _PHRASES[key]
        text = texts.get(lang, texts["en"])
    return text.format(**values)
