"""The generic intent classifier a domain gets from its declared intents (rules first, then embeddings).

Keyword rules per language decide first (they carry Chinese, where the bundled English-centric MiniLM is
weak); a bare mention of an entity type means the intent that names it as ``entity_hint``; the nearest
example by MiniLM embeddings catches English paraphrases the rules miss. A domain with a classifier of
its own (``Domain.classifier``) replaces all of this.
"""

from __future__ import annotations

import re
from typing import Any

from lg_harness.core.domain import Domain
from lg_harness.llm.embeddings import Embedder, current_embedder
from lg_harness.tools.text import clean_text, is_low_information, is_phrase, keyword_hit, language, rule_text

UNKNOWN = "unknown"
OPEN = "open"  # the one task of a domain without intents, or of a design without an intent step
EMBEDDING_THRESHOLD = 0.45


def rule_hits(domain: Domain, text: str) -> list[tuple[str, list[str]]]:
    """Every intent, in declaration order, with the keywords of it that occur un-negated in ``text``."""
    t = rule_text(text)
    hits = [(i.name, [w for words in i.rules.values() for w in words if keyword_hit(t, w.lower())])
            for i in domain.intents]
    return [(name, words) for name, words in hits if words]


def rule_intent(domain: Domain, text: str) -> str | None:
    """The first intent, in declaration order, one of whose keywords (any language) occurs un-negated; a
    conversational one ("thanks") gives way to a task the same message also asks for ("ok thanks, is it
    resolved yet?")."""
    return _first_hit(domain, [name for name, _ in rule_hits(domain, text)])


def _first_hit(domain: Domain, hits: list[str]) -> str | None:
    if not hits:
        return None
    if courtesy(domain, hits[0]):
        task = next((h for h in hits[1:] if domain.kind(h) != "conversational"), None)
        return task or hits[0]
    return hits[0]


def rule_decision(domain: Domain, text: str) -> tuple[str | None, float]:
    """What the keyword rules decide, and how surely: 1.0 when one task intent's phrase names it (or the message
    is only courtesy), 0.6 when the hit is only a single word or two intents' phrases compete (the rule's
    pick is a candidate then: ``candidates``, and the model decides where the design asks it,
    ``HybridIntent``); None when no keyword occurs."""
    hits = rule_hits(domain, text)  # matched once: every keyword of every intent, on every message
    hit = _first_hit(domain, [name for name, _ in hits])
    if hit is None:
        return None, 0.0
    if domain.kind(hit) == "conversational" and not domain.route(hit).tools:
        return hit, 1.0  # "thanks", "hello", "what did I say at the start?": nothing to get wrong by acting
    sure = [name for name, words in hits
            if domain.kind(name) != "conversational" and any(is_phrase(w) for w in words)]
    if len(sure) == 1:
        return sure[0], 1.0  # "add a note to INC..., it started after I changed my password": the phrase decides
    return hit, 0.6


def courtesy(domain: Domain, intent: str) -> bool:
    """A conversational intent answered with a set phrase (a greeting, thanks): it asks for nothing itself."""
    from lg_harness.nodes.phrases import has_phrase

    return domain.kind(intent) == "conversational" and has_phrase(intent, domain)


def says_more(domain: Domain, text: str) -> bool:
    """Whether an English message says more than its courtesy words: four words or more besides them."""
    if language(text) == "zh":
        return False
    hit = [i for n, _ in rule_hits(domain, text) if (i := domain.intent(n)) is not None]
    words = [w for i in hit for ws in i.rules.values() for w in ws]
    rest = clean_text(text).lower()
    for w in words:
        rest = re.sub(rf"\b{re.escape(w.lower())}\b", " ", rest)
    return len(re.findall(r"[a-z']+", rest)) >= 4


def past_courtesy(domain: Domain, text: str, hit: str, embedder: Embedder | None = None) -> tuple[str, float] | None:
    """The request after a greeting or thanks ("hi, can you check on my order for me? it still hasn't turned
    up"), by the nearest examples, as a guess (0.6 at most); None when the courtesy is all there is."""
    if not courtesy(domain, hit) or not says_more(domain, text):
        return None
    guess, score = embedding_intent(domain, text, embedder)
    return (guess, min(score, 0.6)) if guess != UNKNOWN and domain.kind(guess) != "conversational" else None


def hinted_intent(domain: Domain, text: str) -> str | None:
    """The intent whose ``entity_hint`` the message mentions ("INC0012345?" alone asks about that ticket)."""
    mentioned = domain.entities_in(text)
    return next((i.name for i in domain.intents if i.entity_hint and i.entity_hint in mentioned), None)


def example_matrix(domain: Domain, embedder: Embedder | None = None) -> tuple[tuple[str, ...], Any]:
    """The labels and embeddings of the domain's English intent examples (built when a harness opens)."""
    pairs = [(i.name, ex) for i in domain.intents for ex in i.examples.get("en", ())]
    if not pairs:
        return (), None
    return tuple(p[0] for p in pairs), (embedder or current_embedder()).matrix([p[1] for p in pairs])


def message_vector(text: str, embedder: Embedder | None = None) -> Any:
    """The message's one embedding: intent examples and long-term recall both compare against it (memoised
    per text by the embedder, so the second lookup costs nothing)."""
    return (embedder or current_embedder()).embed([clean_text(text)])[0]


def embedding_intent(domain: Domain, text: str, embedder: Embedder | None = None) -> tuple[str, float]:
    """Nearest example by cosine; ``unknown`` below the threshold or without examples."""
    labels, matrix = example_matrix(domain, embedder)
    if not labels:
        return UNKNOWN, 0.0
    scores = matrix @ message_vector(text, embedder)
    best = int(scores.argmax())
    score = float(scores[best])
    return (labels[best] if score >= EMBEDDING_THRESHOLD else UNKNOWN), score


CANDIDATE_THRESHOLD = 0.30  # an example this close is a candidate when nothing decided (set a priori, not tuned)
MAX_CANDIDATES = 3


def embedding_ranking(domain: Domain, text: str, embedder: Embedder | None = None) -> list[tuple[str, float]]:
    """Every intent with examples by its nearest example's cosine to ``text``, best first (none for Chinese
    or a message too short to say anything: the English-centric embedder cannot tell there)."""
    labels, matrix = example_matrix(domain, embedder)
    if not labels or language(text) == "zh" or len(clean_text(text).strip()) < 4:
        return []
    scores = matrix @ message_vector(text, embedder)
    best: dict[str, float] = {}
    for label, score in zip(labels, scores, strict=True):
        best[label] = max(best.get(label, -1.0), float(score))
    return sorted(best.items(), key=lambda kv: -kv[1])


TOOL_SCORE = 1.5  # a tool this relevant shares a word with the message besides its meaning (set a priori)


def tool_intents(domain: Domain, text: str, embedder: Embedder | None = None) -> list[str]:
    """The task intents whose routes hold the (at most two) lookups most relevant to ``text`` by their own
    names and descriptions (``nodes.offer.scores``): what the tools say they do names a request the keywords
    and examples missed ("how long do deleted files stay in the bin?" -> the knowledge-base search). None for
    Chinese, where the English descriptions say nothing to the embedder."""
    from lg_harness.nodes.offer import scores

    if len(clean_text(text).strip()) < 4:
        return []
    specs = domain.registry().specs()
    named = set(domain.entities_in(text))
    if language(text) == "zh":
        return _intents_of(domain, chinese_tool_hits(text, [s for s in specs if not s.changes_state and (
            not named or named & set(domain.tool_entities(s).values()))]))
    # Only lookups, for requests that change nothing: a change is offered where a keyword or an example asks
    # for it, never on a description's likeness alone; and a message that names a record is about a tool
    # that takes it.
    fit = [(score, spec) for score, spec in zip(scores(text, specs, embedder=embedder), specs, strict=True)
           if not spec.changes_state and (not named or named & set(domain.tool_entities(spec).values()))]
    return _intents_of(domain, {spec.name for score, spec in sorted(fit, key=lambda p: -p[0])[:2]
                                if score >= TOOL_SCORE})


def _intents_of(domain: Domain, names: set[str]) -> list[str]:
    """The task intents whose routes hold one of the lookups ``names`` and no tool that changes anything."""
    changing = domain.changing_tools()
    return [i.name for i in domain.intents if i.kind == "task" and names & set(i.route.tools)
            and not changing & set(i.route.tools)]


# Characters that say nothing of what a Chinese question is about ("怎么", "的", "我"): no bigram holds them.
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_CJK_FILLER = frozenset("的了我你您吗呢吧啊请帮怎么办如何样一下个是在和有要什么为啥哪能可以这那里")


def chinese_bigrams(text: str) -> set[str]:
    """The character pairs of ``text``'s Chinese runs that hold no filler character."""
    return {run[i:i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)
            if not set(run[i:i + 2]) & _CJK_FILLER}


def chinese_tool_hits(text: str, specs: list[Any]) -> set[str]:
    """The (at most two) tools whose own descriptions share the most Chinese word pairs with ``text``: a tool
    that says what it does in Chinese ("知识库：如何设置、连接、恢复…") names a request no keyword caught ("怎么
    恢复删掉的文件？"). Where no description holds Chinese, none."""
    asked = chinese_bigrams(text)
    if not asked:
        return set()
    shared = [(len(asked & chinese_bigrams(spec.description or "")), spec.name) for spec in specs]
    return {name for hits, name in sorted(shared, key=lambda p: -p[0])[:2] if hits}


# What a question asks for, as intents' descriptions say it ("the customer's orders: a list, how many, which
# ones"), and the Chinese that asks it: a count or a list is a request of its own, whatever record it names.
ASKED_FOR = {
    "how many": re.compile(r"\bhow many\b|几个|几单|几张|几次|多少个|多少单|多少张|一共有几|总共有几", re.I),
    "which ones": re.compile(r"\bwhich ones\b|\b(?:all|list) (?:of )?my\b|哪些|哪几", re.I),
    # "怎么把电脑画面投到大屏上？" asks how to do something, whatever device it names; "怎么还没到" asks why
    "how-to": re.compile(r"\bhow (?:do|can|should|would) (?:i|we|you)\b|\bhow to\b|如何|"
                         r"怎么(?!还|又|会|回事|没|不|了|样了)|怎样(?!了)|咋(?!还|没|回事|样了|要)", re.I),
}


def described_intents(domain: Domain, text: str) -> list[str]:
    """The task intents whose descriptions name what the message asks for (a count, a list, how to do
    something), in declaration order."""
    asked = [phrase for phrase, pattern in ASKED_FOR.items() if pattern.search(text)]
    return [i.name for i in domain.intents if i.kind == "task" and any(
        re.search(rf"\b{phrase}\b", (i.description or "").lower()) for phrase in asked)]


def candidates(domain: Domain, text: str, embedder: Embedder | None = None) -> list[str]:
    """The intents a message may mean when no keyword rule decided, most likely first: those whose
    descriptions name what it asks for (``described_intents``), every rule hit, the intent its identifier
    names, the intents of the lookups most relevant to it (``tool_intents``), and the nearest examples'
    intents above ``CANDIDATE_THRESHOLD``. Only intents with tools to offer count (a
    greeting needs none)."""
    # what the question asks for first: "我账户里被取消的订单一共有几个？" asks a count, not one order
    found = [*described_intents(domain, text), *(name for name, _ in rule_hits(domain, text))]
    if hint := hinted_intent(domain, text):
        found.append(hint)
    found += tool_intents(domain, text, embedder)  # what the tools say they do, before one example's likeness
    found += [name for name, score in embedding_ranking(domain, text, embedder) if score >= CANDIDATE_THRESHOLD]
    useful = [n for n in dict.fromkeys(found) if domain.route(n).tools and domain.kind(n) != "conversational"]
    return useful[:MAX_CANDIDATES]


def classify(domain: Domain, text: str, use_embeddings: bool = True,
             embedder: Embedder | None = None) -> tuple[str, float]:
    """Intent and confidence for one message in ``domain``: the domain's own classifier when it has one
    (``llm.embeddings.embed`` in it uses the current embedder: the graph's, in a node)."""
    if domain.classifier is not None:
        decided = domain.classifier(text)
        return (use_embeddings and past_courtesy(domain, text, decided[0], embedder)) or decided
    if not domain.intents:
        return OPEN, 1.0
    if is_low_information(text):
        ack = domain.intent("thanks")
        return (ack.name if ack else UNKNOWN), 1.0  # an acknowledgement asks for nothing
    hit, sure = rule_decision(domain, text)
    if hit and courtesy(domain, hit) and (hint := hinted_intent(domain, text)):
        return hint, 1.0  # "thanks! what about INC0012346?": the identifier names the task
    if hit and use_embeddings and (past := past_courtesy(domain, text, hit, embedder)):
        return past
    if hit:
        return hit, sure
    if hint := hinted_intent(domain, text):
        return hint, 0.6
    if not use_embeddings or language(text) == "zh" or len(clean_text(text).strip()) < 4:
        return UNKNOWN, 0.0
    return embedding_intent(domain, text, embedder)
