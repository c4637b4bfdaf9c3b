"""A simulated customer with a goal: it reads the agent's visible reply and answers as a person would.

It is the same customer for every design and peer. It sees only the reply text, never the agent's state, and
it recognises what is asked from the scenario's own descriptions of what it knows (the ``about`` words of each
fact, plus an optional sentence similarity), never from any domain's rules or a design's phrases. So this
module imports nothing of the harness (like ``sim/simlm/``): a goal is a plain mapping (``evals.scenario.Goal``
dumped), and the conversation is strings in, strings out.

What it does with a reply, in order:
1. A question whether to go ahead with a change: yes or no in words, as its current task says (a customer who
   asked for no change says no).
2. A question for something it knows: it gives it (worded in more than one way); for something it does not
   know: it says so, and after twice it asks for what it came for again.
3. Anything else is an answer: it goes on to its next task, or ends. A task whose expected values are nowhere
   in the replies yet is asked again once, in other words, before it moves on (a person who got no answer asks
   again). A turn cap ends a conversation that goes nowhere.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Similarity = Callable[[str, str], float]  # two texts -> cosine similarity (optional)

# Generic language cues, not any agent's phrasing: a question, an ask for permission, a request for input.
_QUESTION = re.compile(r"[?？]|\b(please (provide|share|send|give|tell|confirm)|could you|can you|what is|"
                       r"which|may i have)\b|请(提供|告诉|问|输入|发送|确认)|是多少|是什么|哪个|吗[。！!]?$", re.I)
_PERMISSION = re.compile(r"\b(confirm|go ahead|proceed|shall i|should i|do you want me to|would you like me to|"
                         r"want me to|ok to|okay to|yes or no|reply yes|say yes)\b|确认|是否|要不要|继续吗|可以吗|同意", re.I)
_SAY_YES = re.compile(r"\b(reply|say|answer|type)\s+[\"'“]?(yes|y|ok)\b|回复\s*[“\"]?(是|好|确认)", re.I)
# A reply that waits for a yes or a no to act: asked in so many words ("Reply yes to go ahead", "Shall I cancel
# it?"), not a question that merely mentions confirming ("Could you confirm your email?").
_ASKS_TO_ACT = re.compile(r"\b(shall i|should i|do you want me to|would you like me to|want me to|go ahead|proceed|"
                          r"yes or no|yes/no)\b|继续|是否(办理|确认)|要不要|确认办理|可以吗", re.I)


def asks_permission(reply: str) -> bool:
    """Whether ``reply`` waits for the customer's yes or no before it acts, read from its words alone."""
    return bool(_ASKS_TO_ACT.search(reply)) and (bool(_QUESTION.search(reply)) or bool(_SAY_YES.search(reply)))


# A question for something of the customer's own ("your PIN", "请提供"), as against "anything else?"
_ASKS_FOR_INPUT = re.compile(r"\b(your|provide|enter|share)\b|您的|你的|请提供|请输入|请告诉", re.I)
_ANSWER_WORDS = frozenset({"yes", "no", "ok", "okay", "是", "不", "好"})
_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]", re.I)

SAY = {
    "en": {"give": ("It's {value}.", "{value}", "Sure, it's {value}.", "My {about} is {value}."),
           "unknown": ("I don't know that, sorry.", "I'm not sure, I don't have that.",
                       "I don't have that information."),
           "yes": ("Yes, please go ahead.", "Yes.", "Yes, do it."),
           "no": ("No, please don't.", "No, leave it as it is.", "No thanks."),
           "again": ("Sorry, that doesn't answer my question. {ask}", "I asked: {ask}"),
           "bye": ("Thanks, that's all.", "OK, thank you.")},
    "zh": {"give": ("是{value}。", "{value}", "好的，是{value}。", "我的{about}是{value}。"),
           "unknown": ("这个我不知道。", "我不清楚，没有这个信息。", "抱歉，这个我没有。"),
           "yes": ("是的，请办理。", "好的，确认。", "可以，办吧。"),
           "no": ("不用了，先不要。", "不要，保持原样。", "不了，谢谢。"),
           "again": ("这没有回答我的问题。{ask}", "我是问：{ask}"),
           "bye": ("好的，谢谢，没别的了。", "谢谢。")},
}


_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
# A sentence that asks for something without a question mark ("I need your order number first.")
_REQUEST = re.compile(r"\b(provide|enter|share|need|send|tell me|give me)\b|请提供|请输入|请告诉|需要", re.I)


def asking_sentences(reply: str) -> str:
    """The sentences of ``reply`` that ask: a question, or a request ("I need your order number. Could you
    share it?"); the whole reply when none does."""
    asking = [m.group(0) for m in _SENTENCE.finditer(reply or "")
              if _QUESTION.search(m.group(0)) or _REQUEST.search(m.group(0))]
    return " ".join(asking) if asking else reply


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").lower()


def _tokens(text: str) -> set[str]:
    """Words, Chinese characters and Chinese character pairs: what two phrasings of one thing share."""
    words = _WORD.findall(_norm(text))
    pairs = {a + b for a, b in zip(words, words[1:], strict=False) if len(a) == len(b) == 1 and a > "\u4e00"}
    return set(words) | pairs


@dataclass
class Event:
    """What the customer did with one reply (kept in the run record, so a transcript shows why)."""

    kind: str  # open | give | unknown | confirm | decline | ask | again | next | bye | cap
    detail: str = ""


@dataclass
class GoalCustomer:
    """One customer playing one goal. ``goal``: ``{"knows": {name: {"value", "about": [...]}}, "tasks": [...],
    "max_turns": n}``; a task is ``{"ask": [wordings...], "change": bool, "confirm": "yes"|"no",
    "told": [{"value": ...}, ...]}``."""

    goal: Mapping[str, Any]
    lang: str = "en"
    seed: int = 0
    similar: Similarity | None = None
    task: int = 0
    turns: int = 0
    asked_again: int = 0
    unknown_streak: int = 0
    confirmed: bool = False
    heard: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    # -- the conversation

    def opening(self) -> str:
        self.turns = 1
        self.events.append(Event("open"))
        return self._ask_text(0)

    def react(self, reply: str) -> str | None:
        """The customer's next message after the agent's ``reply``, or None when it is done."""
        self.heard.append(reply or "")
        if self.turns >= int(self.goal.get("max_turns") or 4 + 3 * len(self.tasks)):
            self.events.append(Event("cap"))
            return None
        message = self._respond(reply or "")
        if message is not None:
            self.turns += 1
        return message

    @property
    def tasks(self) -> Sequence[Mapping[str, Any]]:
        return self.goal.get("tasks") or []

    def _respond(self, reply: str) -> str | None:
        current = self.tasks[self.task] if self.task < len(self.tasks) else {}
        permission = bool(_PERMISSION.search(reply))
        # "reply yes to go ahead" asks as plainly as a question mark does
        question = bool(_QUESTION.search(reply)) or (permission and bool(_SAY_YES.search(reply)))
        # "confirm your email?" asks for the email; "confirm: I will cancel order X?" asks for a yes: with a
        # permission cue, a fact counts as asked only when every word of its description is there
        asked = self._asked_fact(reply, whole=permission) if question else None
        if asked is not None:
            name, fact = asked
            self.unknown_streak = 0
            self.events.append(Event("give", name))
            return self._say("give", value=str(fact["value"]), about=(fact.get("about") or [name])[0])
        if question and permission:
            wants = bool(current.get("change")) and current.get("confirm", "yes") == "yes"
            self.confirmed = True
            self.events.append(Event("confirm" if wants else "decline"))
            return self._say("yes" if wants else "no")
        if question and _ASKS_FOR_INPUT.search(asking_sentences(reply)) and not self._answered(current):
            self.unknown_streak += 1
            if self.unknown_streak <= 2:
                self.events.append(Event("unknown"))
                return self._say("unknown")
            self.unknown_streak = 0
            self.events.append(Event("again", "what it asked is not known"))
            return self._say("again", ask=self._ask_text(self.task, reword=True))
        return self._after_answer(current)

    def _after_answer(self, current: Mapping[str, Any]) -> str | None:
        if current and not self._answered(current) and self.asked_again < 1:
            self.asked_again += 1
            self.events.append(Event("again"))
            return self._ask_text(self.task, reword=True)
        self.task += 1
        self.asked_again, self.unknown_streak, self.confirmed = 0, 0, False
        if self.task < len(self.tasks):
            self.events.append(Event("next", str(self.task)))
            return self._ask_text(self.task)
        self.events.append(Event("bye"))
        return None

    # -- reading the reply

    def _answered(self, task: Mapping[str, Any]) -> bool:
        """Whether the replies so far hold what this task wants to hear (its values, loosely: the judge is
        strict), or for a change, whether a question to go ahead was answered or a reply said the status it wanted."""
        # a status is said in words the customer cannot list in advance ("已发货" for shipped): a reply that
        # asks nothing answers it; the other kinds are values it recognises when it reads them
        told = [str(t.get("value")) for t in task.get("told") or []
                if t.get("value") not in (None, "") and t.get("kind") != "status"]
        heard = _norm(" ".join(self.heard))
        if told:
            return any(_norm(v) in heard for v in told)
        if task.get("change"):
            # a yes it gave to a question to go ahead, or a reply that says the status it wanted (a design that
            # makes the change without asking first and says so has answered); else it asks again, once
            wanted = [str(t.get("value")) for t in task.get("told") or [] if t.get("kind") == "status" and t.get("value")]
            return self.confirmed or any(_norm(v) in heard for v in wanted)
        return bool(self.heard) and not _QUESTION.search(self.heard[-1])

    def _asked_fact(self, reply: str, whole: bool = False) -> tuple[str, Mapping[str, Any]] | None:
        """The known fact the reply asks for: the one whose ``about`` words its asking sentences share most
        (half of a description's words at least, all of them when ``whole``), or, failing that, the one most
        similar in meaning above a bar. Only sentences that ask count: "I can help with orders and returns.
        What do you need?" does not ask for the order number."""
        reply_all, reply = reply, asking_sentences(reply)
        words = _tokens(reply)
        if whole:  # "reply yes, or no to leave it": the yes and the no are the answers asked for, not a fact's words
            words -= _ANSWER_WORDS
        bar = 1.0 if whole else 0.5
        best: tuple[float, str, Mapping[str, Any]] | None = None
        for name, fact in (self.goal.get("knows") or {}).items():
            if _norm(str(fact.get("value"))) in _norm(reply_all):
                continue  # the reply already quotes it: it is asking something else (or for a yes)
            for about in fact.get("about") or [name.replace("_", " ")]:
                want = _tokens(about)
                share = len(want & words) / len(want) if want else 0.0
                if share >= bar and (best is None or share > best[0]):
                    best = (share, name, fact)
        if best is not None:
            return best[1], best[2]
        if self.similar is None or whole:
            return None
        scored = [(self.similar(reply, about), name, fact) for name, fact in (self.goal.get("knows") or {}).items()
                  for about in fact.get("about") or [name]]
        top = max(scored, default=None, key=lambda s: s[0])
        return (top[1], top[2]) if top is not None and top[0] >= 0.55 else None

    # -- wording

    def _ask_text(self, index: int, reword: bool = False) -> str:
        wordings = list(self.tasks[index].get("ask") or ["Can you help me?"])
        return wordings[min(1, len(wordings) - 1)] if reword else wordings[0]

    def _say(self, kind: str, **values: str) -> str:
        options = SAY.get(self.lang, SAY["en"])[kind]
        digest = hashlib.sha256(f"{self.seed}:{self.turns}:{kind}".encode()).digest()
        return options[digest[0] % len(options)].format(**values)


@dataclass
class Script:
    """A scripted customer: the scenario's turns in order, whatever the replies say (regression scenarios)."""

    messages: Sequence[str]
    turns: int = 0
    events: list[Event] = field(default_factory=list)

    def opening(self) -> str:
        self.turns = 1
        return self.messages[0]

    def react(self, reply: str) -> str | None:
        if self.turns >= len(self.messages):
            return None
        self.turns += 1
        return self.messages[self.turns - 1]
