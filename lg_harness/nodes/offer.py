"""Which tools one model call is offered when the domain has no intents: the most relevant to the request.

A domain of tools alone has no routes saying which tools a request needs, and offering the first few
registered ones (what a cap on the registry's order gives) offers the wrong tools for most requests. So the
tools are ranked by how well their names and descriptions fit the customer's words: lexically (shared word
stems, weighted by how few tools use the word, names counting double) and by the project's embedder (cosine
of the request against each tool's text), and the cap keeps the best. Tools the customer just confirmed a
change of are always offered (the yes only runs them). When the cap cuts, the trace says which were kept
and how many were left out (``tools.offer_cut``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from lg_harness.llm.embeddings import Embedder, current_embedder
from lg_harness.obs.tracing import span_event
from lg_harness.tools.registry import ToolSpec

_WORD = re.compile(r"[a-z]+")
_STOP = frozenset(re.findall(r"[a-z]+", """a an the and or of to in on for with by from at as is are be been was were it its this that
these those my me i you your we our us he she they them his her their can could would should will shall do does
did done please want need like just also then than so not no yes any some all what which who whom when where why
how about into over under again more most other such only own same too very get got give tell show let make"""))
_MIN_STEM = 3
_STEM = 6
# A word of the request that names the tool outright ("cancel" in cancel_pending_order) counts twice.
_NAME_WEIGHT = 2.0
_EMBED_WEIGHT = 1.0
_OLDER = 0.5


def words(text: str) -> list[str]:
    """Lower-case words of ``text`` (a tool name's parts split on ``_``), stop words left out."""
    return [w for w in _WORD.findall(text.lower().replace("_", " ")) if w not in _STOP and len(w) >= 2]


def _same_stem(a: str, b: str) -> bool:
    """``pay`` and ``payment``, ``cancel`` and ``cancelled``, ``available`` and ``availability``: they start
    alike, over the whole shorter word or its first ``_STEM`` letters (three letters at least)."""
    short, long_ = sorted((a, b), key=len)
    n = min(len(short), _STEM)
    return len(short) >= _MIN_STEM and long_[:n] == short[:n]


def _hits(request: Sequence[str], vocabulary: set[str]) -> set[str]:
    return {v for v in vocabulary if any(_same_stem(w, v) for w in request)}


def lexical_scores(request: str, specs: Sequence[ToolSpec]) -> list[float]:
    """Per tool: the inverse-document-frequency weight of the request's words found in its name (twice) and
    description, scaled so the best tool has 1 (all 0 when no word is shared)."""
    asked = words(request)
    names = [set(words(s.name)) for s in specs]
    texts = [set(words(s.description)) | n for s, n in zip(specs, names, strict=True)]
    df: dict[str, int] = {}
    for vocabulary in texts:
        for w in vocabulary:
            df[w] = df.get(w, 0) + 1
    idf = {w: math.log(1 + len(specs) / n) for w, n in df.items()}
    raw = [sum(idf[w] for w in _hits(asked, text)) + (_NAME_WEIGHT - 1) * sum(idf[w] for w in _hits(asked, name))
           for text, name in zip(texts, names, strict=True)]
    top = max(raw, default=0.0)
    return [r / top if top else 0.0 for r in raw]


def tool_texts(specs: Sequence[ToolSpec]) -> list[str]:
    """What the embedder reads of each tool: its name in words and its description."""
    return [f"{s.name.replace('_', ' ')}: {s.description}" for s in specs]


def embedding_scores(request: str, specs: Sequence[ToolSpec], embedder: Embedder | None = None) -> list[float]:
    """Per tool: the cosine of the request against the tool's name and description (``embedder``, else the
    current one), scaled from 0 (the least similar tool) to 1 (the most)."""
    if not specs or not request.strip():
        return [0.0] * len(specs)
    embedder = embedder or current_embedder()
    vectors = embedder.matrix(tool_texts(specs))
    cosines = [float(x) for x in vectors @ embedder.embed([request])[0]]
    low, high = min(cosines), max(cosines)
    # scaled like the lexical scores (the best tool 1, the worst 0): raw cosines of short texts bunch together
    return [(c - low) / (high - low) if high > low else 0.0 for c in cosines]


def scores(request: str, specs: Sequence[ToolSpec], use_embeddings: bool = True,
           embedder: Embedder | None = None) -> list[float]:
    """Per tool: its lexical score plus its embedding score, each from 0 to 1."""
    lexical = lexical_scores(request, specs)
    semantic = embedding_scores(request, specs, embedder) if use_embeddings else [0.0] * len(specs)
    return [lex + _EMBED_WEIGHT * sem for lex, sem in zip(lexical, semantic, strict=True)]


def ranked(requests: Sequence[str], specs: Sequence[ToolSpec], use_embeddings: bool = True,
           recent: Sequence[str] = (), embedder: Embedder | None = None) -> list[ToolSpec]:
    """``specs`` from the most to the least relevant to ``requests`` (the newest message first); ties keep
    the registry's order.

    The conversation before the newest message counts too, so "and the third one?" keeps the topic: each
    older message at half the weight of the one after it, and the tools the previous message used as much
    again. When the newest message shares a word with some tool it speaks for itself, and that context
    counts half.
    """
    newest = scores(requests[0], specs, use_embeddings, embedder) if requests else [0.0] * len(specs)
    context = _OLDER if any(lexical_scores(requests[0], specs)) else 1.0
    total = [n + (context * _OLDER if s.name in recent else 0.0) for n, s in zip(newest, specs, strict=True)]
    for age, text in enumerate(requests[1:], start=1):
        for i, score in enumerate(scores(text, specs, use_embeddings, embedder)):
            total[i] += context * score * _OLDER ** age
    order = sorted(range(len(specs)), key=lambda i: -total[i])
    return [specs[i] for i in order]


def recent_tools(messages: Sequence[BaseMessage]) -> list[str]:
    """The tools called for the previous user message (between the last two human messages)."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if len(humans) < 2:
        return []
    return [c["name"] for m in messages[humans[-2]:humans[-1]] if isinstance(m, AIMessage) for c in m.tool_calls]


def relevant_offer(messages: Sequence[BaseMessage], specs: Sequence[ToolSpec], cap: int, keep: Sequence[str] = (),
                   use_embeddings: bool = True, embedder: Embedder | None = None) -> list[ToolSpec]:
    """At most ``cap`` tools for the conversation's latest messages: those named in ``keep`` first, then the
    most relevant to the last two customer messages; a cut is recorded on the current span."""
    if len(specs) <= cap:
        return list(specs)
    kept = [s for s in specs if s.name in keep]
    requests = [m.text if isinstance(m.text, str) else str(m.content) for m in reversed(messages)
                if isinstance(m, HumanMessage)][:2]
    rest = ranked(requests, [s for s in specs if s.name not in keep], use_embeddings, recent_tools(messages),
                  embedder)
    chosen = (kept + rest)[: max(cap, len(kept))]
    span_event("tools.offer_cut", offered=",".join(s.name for s in chosen), left_out=len(specs) - len(chosen),
               of=len(specs))
    return chosen


__all__ = ["embedding_scores", "lexical_scores", "ranked", "recent_tools", "relevant_offer", "scores", "words"]
