"""Knowledge-base search: MiniLM embeddings in an in-memory Chroma collection, plus a small lexical term.

The collection is built once per process from the seeded articles (``seed.ARTICLES``) and cached; every
service-desk copy shares it, since the articles never change at run time. Embeddings come from the bundled
MiniLM (``memory.experiences.MiniLMEmbeddingFunction`` over ``llm.embeddings``), so nothing is downloaded,
and Chroma runs embedded with telemetry off.

The bundled MiniLM is English-centric and weak on Chinese, so the score adds a lexical term: English word
overlap with title and body, and Chinese character-bigram overlap with the Chinese title and body (the pack's
translations, ``kb_zh``)::

    score = cosine + 0.25 * (title word hits / query words) + 0.05 * (body word hits / query words)
                   + 0.8 * (Chinese query bigrams found in title_zh / Chinese query bigrams)
                   + 0.05 * (Chinese query bigrams found in body_zh / Chinese query bigrams)
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from lg_harness.domains.helpdesk.seed import ARTICLES, article_id, body_zh, title_zh

COLLECTION = "helpdesk_kb"
MIN_SCORE = 0.3
_LATIN = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_STOPWORDS = frozenset((
    "a", "an", "the", "and", "or", "for", "with", "of", "to", "in", "on", "at", "my", "me", "i", "you", "do", "does",
    "how", "can", "could", "what", "why", "is", "are", "was", "it", "this", "that", "be", "get", "set", "up", "use",
    "using", "help", "please", "need", "want", "when", "where", "which", "there", "not", "no", "from", "by", "into",
    "our", "your",
))
_CJK_STOP = frozenset("的了我吗呢请帮怎么办如何样一下个是在和有要什么为啥")
_lock = threading.Lock()


@dataclass(frozen=True)
class Hit:
    article_id: str
    score: float
    audience: str


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _latin_words(text: str) -> set[str]:
    return {_stem(w) for w in _LATIN.findall(text.lower()) if w not in _STOPWORDS}


def _cjk_bigrams(text: str) -> set[str]:
    grams: set[str] = set()
    for run in _CJK_RUN.findall(text):
        chars = "".join(c if c not in _CJK_STOP else " " for c in run)
        for part in chars.split():
            grams.update(part[i : i + 2] for i in range(len(part) - 1))
            if len(part) == 1:
                grams.add(part)
    return grams


def _document(index: int) -> str:
    title, _title_zh, _category, _audience, body = ARTICLES[index]
    return f"{title}. {title_zh(index) or ''}\n{body}"


def _client() -> Any:
    """An in-memory Chroma client on the process's one ephemeral system.

    Chroma allows a single ephemeral system per process and refuses a second one with other settings, so
    an existing system's settings are reused (the evaluation runner makes one for memory); otherwise the
    runner's settings are used, so whichever comes second still matches.
    """
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient
    from chromadb.config import Settings

    existing = SharedSystemClient._identifier_to_system.get("ephemeral")
    settings = existing.settings if existing is not None else Settings(anonymized_telemetry=False, allow_reset=True)
    return chromadb.EphemeralClient(settings=settings)


_cached: list[Any] = []


def _collection() -> Any:
    """The articles' Chroma collection (in memory, built on first use, then cached for the process)."""
    if _cached:
        return _cached[0]
    from lg_harness.memory.experiences import MiniLMEmbeddingFunction

    with _lock:
        if not _cached:
            ef = MiniLMEmbeddingFunction()
            col = _client().get_or_create_collection(COLLECTION, embedding_function=ef,
                                                     configuration={"hnsw": {"space": "cosine"}})
            ids = [article_id(i) for i in range(len(ARTICLES))]
            docs = [_document(i) for i in range(len(ARTICLES))]
            col.upsert(ids=ids, documents=docs, embeddings=ef(docs),
                       metadatas=[{"audience": a[3], "category": a[2]} for a in ARTICLES])
            _cached.append(col)
    return _cached[0]


def _forget() -> None:
    with _lock:
        _cached.clear()


def _lexical(query: str, index: int) -> float:
    title, _title_zh, _category, _audience, body = ARTICLES[index]
    words, score = _latin_words(query), 0.0
    if words:
        score += 0.25 * len(words & _latin_words(title)) / len(words)
        score += 0.05 * len(words & _latin_words(body)) / len(words)
    grams = _cjk_bigrams(query)
    zh_title, zh_body = title_zh(index), body_zh(article_id(index))
    if grams and zh_title:
        score += 0.8 * sum(1 for g in grams if g in zh_title) / len(grams)
    if grams and zh_body:  # the Chinese body weighs what the English body weighs for English words
        score += 0.05 * sum(1 for g in grams if g in zh_body) / len(grams)
    return score


def _query(query: str) -> Any:
    try:
        return _collection().query(query_texts=[query], n_results=len(ARTICLES), include=["distances", "metadatas"])
    except Exception:  # noqa: BLE001 - the shared in-memory Chroma was reset or dropped: build it again once
        _forget()
        return _collection().query(query_texts=[query], n_results=len(ARTICLES), include=["distances", "metadatas"])


def search(query: str, k: int = 3, include_internal: bool = False) -> list[Hit]:
    """The ``k`` best articles for ``query`` (English or Chinese), best first, above ``MIN_SCORE``.

    Args:
        query: Free text.
        k: How many hits at most.
        include_internal: Also return agent-only articles (runbooks).
    """
    if not query.strip():
        return []
    got = _query(query)
    hits = []
    for aid, dist, meta in zip(got["ids"][0], got["distances"][0], got["metadatas"][0], strict=True):
        if meta["audience"] != "all" and not include_internal:
            continue
        score = (1.0 - dist) + _lexical(query, int(aid[2:]) - 1001)
        hits.append(Hit(aid, round(score, 4), meta["audience"]))
    hits.sort(key=lambda h: (-h.score, h.article_id))
    return [h for h in hits if h.score >= MIN_SCORE][:k]


__all__ = ["COLLECTION", "Hit", "MIN_SCORE", "search"]
