"""Per-user experiences in Chroma: the "experiences in vectors" half of long-term memory.

An experience is a short free-text record ("the customer prefers email over phone calls", "resetting the
router fixed the pairing problem") with metadata: ``user_id``, ``kind``, ``confidence``, ``created_at``,
``updated_at``, ``hits``, ``mentions``, ``stale`` and the links ``supersedes``/``superseded_by``/
``conflicts_with`` (comma-separated ids, since Chroma metadata values are scalars).

Writes:
    * Dedupe: when the user's nearest current record of the same kind has cosine >= ``dedupe_threshold``
      (0.92), the same negation polarity and names the same identifiers, it is refreshed (``updated_at`` =
      now, confidence = max of both, ``mentions`` + 1) instead of inserting; its id is returned. The
      identifiers matter because MiniLM scores two outcomes that differ only in them ("order ORD-10001 is
      shipped" vs "order ORD-10004 is shipped") above 0.97: by cosine alone, a customer's outcomes about
      two hundred orders collapsed into one record.
    * Explicit conflict: ``add(..., supersedes=[ids])`` inserts the new record and marks those records
      stale (kept, linked both ways). Use it whenever the caller knows a statement replaces another:
      MiniLM scores reordered sentences ("prefers email over phone" vs "prefers phone over email") at
      0.99, so no similarity rule can tell them apart.
    * Heuristic conflict: a same-kind record with cosine >= ``conflict_threshold`` (0.75) but opposite
      negation polarity ("wants ..." vs "does not want ...") is treated as a contradiction: both are kept
      (the new one lists the old in ``conflicts_with``), neither is marked stale, and the newer one wins
      through the recency term.

Reads by what a message names (``naming``): the current records that contain one of the identifiers, by the
same score at similarity 1, without an embedding. Similarity cannot single out an identifier: for "where is
ORD-10005?" it ranks outcomes of other orders first.

Reads (``search``) rank a candidate pool fetched from Chroma with ``where={"user_id": ...}`` by::

    score = w_sim * similarity + w_recency * recency + w_hits * hit_rate + w_conf * confidence
    recency  = 0.5 ** (age_days / half_life_days)         # true half-life, age from updated_at
    hit_rate = hits / (hits + hit_saturation)             # per record, so it needs no global max
    score   *= stale_factor  if the record is stale       # stale records stay findable but rank lower

Hit counts are not Chroma metadata: a search that helped would cost a metadata update in Chroma per hit.
They live in a small counter beside the rest of the state (``HitCounts``: the fact store's table in
``LongTermMemory``, a dict in this process for a store on its own); ``hits`` in older collections' metadata
still counts.

Every method takes ``user_id``; touching another user's record id raises ``MemoryAccessError``.
Chroma is used directly rather than through ``langchain_chroma.Chroma`` because the store needs
metadata-only updates (hits, stale, timestamps) without re-embedding, raw cosine distances under a
``where`` filter, and ownership checks on ``get(ids=...)``; the LangChain wrapper hides or re-embeds
for all three, and takes a LangChain ``Embeddings`` object rather than a Chroma embedding function.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, cast

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.types import Documents, Embeddable, EmbeddingFunction, Embeddings
from chromadb.config import Settings
from chromadb.utils.embedding_functions import register_embedding_function

from lg_harness.errors import HarnessError, UsageError
from lg_harness.llm.embeddings import Embedder
from lg_harness.memory.chroma_retry import RetryingCollection
from lg_harness.memory.facts import Clock, to_epoch
from lg_harness.memory.known_ids import ids_in_text

COLLECTION = "experiences"
SECONDS_PER_DAY = 86_400.0

_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|neither|nor|cannot|without)\b|n't\b|[不没別别]",
    re.IGNORECASE,
)


class MemoryAccessError(UsageError):
    """A memory record id that does not exist or belongs to another user was read or changed."""


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma embedding function backed by the harness's ``Embedder`` (bundled MiniLM, offline).

    Chroma's default embedding function downloads an ONNX model, so collections here always carry
    this one. It is registered under ``name()`` so a persisted collection's config round-trips.
    """

    def __init__(self, model_name: str | None = None, embedder: Embedder | None = None) -> None:
        """Args:
        model_name: recorded in the collection config; defaults to the embedder's.
        embedder: the runtime's embedder (``graphs.runtime``); None: the current one at each call.
        """
        from lg_harness.llm.embeddings import embed_model_name

        self.embedder = embedder
        self.model_name = model_name or (embedder.model_name if embedder is not None else embed_model_name())

    def __call__(self, input: Documents) -> Embeddings:
        """Embed ``input`` with the harness embedder (unit-normalised rows)."""
        from lg_harness.llm.embeddings import current_embedder

        return list((self.embedder or current_embedder()).embed(list(input)))

    @staticmethod
    def name() -> str:
        """Registry name stored in the collection configuration."""
        return "lg_harness_minilm"

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        """Rebuild from a persisted collection configuration."""
        return MiniLMEmbeddingFunction(config.get("model_name"))

    def get_config(self) -> dict[str, Any]:
        """Serializable configuration persisted with the collection."""
        return {"model_name": self.model_name}

    def default_space(self) -> str:
        """Cosine: the vectors are unit-normalised and the thresholds are cosines."""
        return "cosine"


class CollectionSource(Protocol):
    """What the store needs of a Chroma client (``chromadb.PersistentClient``, ``HttpClient``, or a wrapper of
    one): a collection by name, made on first use."""

    def get_or_create_collection(self, name: str, *args: Any, **kwargs: Any) -> Any: ...


class HitCounts(Protocol):
    """Where an experience store keeps how often each record helped (``FactStore`` is one)."""

    def add_hits(self, user_id: str, record_ids: list[str], count: int = 1) -> None: ...

    def hits(self, user_id: str, record_ids: list[str]) -> dict[str, int]: ...


class LocalHits:
    """Hit counts in this process only: for a store used on its own (``LongTermMemory`` keeps them in SQL)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}

    def add_hits(self, user_id: str, record_ids: list[str], count: int = 1) -> None:
        for rid in record_ids:
            self._counts[user_id, rid] = self._counts.get((user_id, rid), 0) + count

    def hits(self, user_id: str, record_ids: list[str]) -> dict[str, int]:
        return {rid: self._counts[user_id, rid] for rid in record_ids if (user_id, rid) in self._counts}


@dataclass(frozen=True)
class RetrievalWeights:
    """Weights of the four ranking terms (the source write-up's 0.4/0.3/0.2/0.1)."""

    similarity: float = 0.4
    recency: float = 0.3
    hits: float = 0.2
    confidence: float = 0.1


@dataclass(frozen=True)
class MemoryPolicy:
    """Thresholds and decay constants of the experience store.

    Attributes:
        dedupe_threshold: cosine at or above which a same-kind, same-polarity record is refreshed.
        conflict_threshold: lowest cosine at which opposite polarity counts as a contradiction.
        half_life_days: recency halves every this many days since ``updated_at``.
        hit_saturation: ``hits / (hits + hit_saturation)``; 5 hits give 0.5.
        stale_factor: multiplier on a stale record's score.
        candidate_pool: records fetched from Chroma per search before re-ranking (at least ``k``).
        min_similarity: candidates below this cosine are dropped (0 keeps the pure formula).
    """

    dedupe_threshold: float = 0.92
    conflict_threshold: float = 0.75
    half_life_days: float = 30.0
    hit_saturation: float = 5.0
    stale_factor: float = 0.5
    candidate_pool: int = 20
    min_similarity: float = 0.0


@dataclass(frozen=True)
class Experience:
    """One stored experience record."""

    id: str
    user_id: str
    text: str
    kind: str
    confidence: float
    created_at: float
    updated_at: float
    hits: int
    mentions: int
    stale: bool
    supersedes: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchHit:
    """A ranked search result with the terms of its score, for logs and A/B reports."""

    record: Experience
    score: float
    similarity: float
    recency: float
    hit_rate: float

    @property
    def id(self) -> str:
        """The record id (pass these to ``record_hits`` when the task succeeded)."""
        return self.record.id

    @property
    def text(self) -> str:
        """The record text."""
        return self.record.text


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


_WORD = re.compile(r"[^\s,;!?()\[\]{}<>\"'`=]+")


def _words(text: str) -> set[str]:
    """The upper-cased words of ``text``, split at spaces, brackets, quotes, list punctuation and ``=``
    (a remembered outcome reads ``order_id=ORD-10005``), edges' ``.:`` stripped."""
    return {w.strip(".:").upper() for w in _WORD.findall(text)}


def negated(text: str) -> bool:
    """Polarity heuristic: an odd number of negation words means the statement is negated."""
    return len(_NEGATION.findall(text)) % 2 == 1


def recency(age_seconds: float, half_life_days: float) -> float:
    """``0.5 ** (age_days / half_life_days)``; future timestamps count as age 0."""
    age_days = max(age_seconds, 0.0) / SECONDS_PER_DAY
    return math.pow(0.5, age_days / half_life_days)


def hit_rate(hits: int, saturation: float) -> float:
    """Saturating hit rate in [0, 1): independent of other records, so scores are stable."""
    return hits / (hits + saturation) if hits > 0 else 0.0


def _ids(value: str) -> tuple[str, ...]:
    return tuple(v for v in value.split(",") if v)


def _join(ids: Iterable[str]) -> str:
    return ",".join(dict.fromkeys(i for i in ids if i))


def _to_record(rid: str, text: str, meta: Mapping[str, Any]) -> Experience:
    return Experience(
        id=rid,
        user_id=str(meta["user_id"]),
        text=text,
        kind=str(meta.get("kind", "note")),
        confidence=float(meta.get("confidence", 1.0)),
        created_at=float(meta.get("created_at", 0.0)),
        updated_at=float(meta.get("updated_at", 0.0)),
        hits=int(meta.get("hits", 0)),
        mentions=int(meta.get("mentions", 1)),
        stale=bool(meta.get("stale", False)),
        supersedes=_ids(str(meta.get("supersedes", ""))),
        superseded_by=_ids(str(meta.get("superseded_by", ""))),
        conflicts_with=_ids(str(meta.get("conflicts_with", ""))),
    )


def _where(user_id: str, *, kind: str | None = None, current_only: bool = False) -> dict[str, Any]:
    clauses: list[dict[str, Any]] = [{"user_id": user_id}]
    if kind is not None:
        clauses.append({"kind": kind})
    if current_only:
        clauses.append({"stale": False})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


@contextmanager
def _folder_lock(folder: Path | None) -> Iterator[None]:
    if folder is None:
        yield
        return
    import fcntl

    with open(folder.with_name(folder.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class ExperienceStore:
    """Per-user experience memory in a Chroma collection with cosine space and MiniLM embeddings.

    Args:
        path: folder of a ``chromadb.PersistentClient``; ignored when ``client`` is given.
        client: an existing Chroma client (e.g. ``chromadb.HttpClient``); the caller keeps ownership
            and ``close()`` leaves it open.
        collection: collection name.
        weights: default ranking weights (``search`` can override per call).
        policy: thresholds and decay constants.
        clock: time source (epoch seconds) used when a method gets no ``now``.
        hits: where hit counts are kept (default: in this process).
        embedder: what embeds texts and queries (a runtime's); None: the current one at each call.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        client: CollectionSource | ClientAPI | None = None,
        collection: str = COLLECTION,
        weights: RetrievalWeights | None = None,
        policy: MemoryPolicy | None = None,
        clock: Clock = time.time,
        hits: HitCounts | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        folder = None
        if client is None:
            if path is None:
                raise HarnessError("ExperienceStore needs a Chroma path or a client.")
            folder = Path(path)
            folder.mkdir(parents=True, exist_ok=True)
        self._owns_client = client is None
        self._ef = MiniLMEmbeddingFunction(embedder=embedder)
        # Chroma types the function for text and images alike; these collections only ever hold text.
        function = cast("EmbeddingFunction[Embeddable]", self._ef)
        # Processes starting together on one data dir would race to create Chroma's own tables ("table
        # collections already exists"): the first open of a folder is serialised by a lock file beside it.
        with _folder_lock(folder):
            if client is None:
                # Telemetry off: the harness must run without network access.
                client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
            self._col = RetryingCollection(client.get_or_create_collection(
                collection, embedding_function=function, configuration={"hnsw": {"space": "cosine"}}
            ))
        self._client = client
        self.weights = weights or RetrievalWeights()
        self.policy = policy or MemoryPolicy()
        self._clock = clock
        self._hits = hits if hits is not None else LocalHits()
        # Hits and merges are read-modify-write on metadata; serialise them within this process.
        self._lock = threading.RLock()

    # ---- writes -------------------------------------------------------------------------------

    def add(
        self,
        user_id: str,
        text: str,
        *,
        kind: str = "note",
        confidence: float = 0.8,
        supersedes: Sequence[str] = (),
        now: float | datetime | None = None,
    ) -> str:
        """Remember ``text`` for ``user_id``; returns the id of the new or refreshed record.

        Args:
            user_id: owner.
            text: the experience, one self-contained sentence.
            kind: free label (``"preference"``, ``"resolution"``, ...); dedupe and conflicts only
                compare records of the same kind.
            confidence: 0..1.
            supersedes: ids of the user's records this one replaces; they are marked stale, and
                dedupe is skipped so the replacement is always stored.
            now: timestamp override (epoch seconds or datetime).

        Raises:
            MemoryAccessError: a ``supersedes`` id is unknown or belongs to another user.
        """
        ts = to_epoch(now, self._clock)
        with self._lock:
            old = self._owned(user_id, supersedes)
            vector = self._ef([text])[0]
            if old:
                return self._insert_superseding(user_id, text, kind, confidence, vector, old, ts)
            neighbours = self._neighbours(user_id, kind, vector)
            duplicate = self._find_duplicate(text, neighbours)
            if duplicate is not None:
                return self._refresh(duplicate, confidence, ts)
            conflicts = self._find_conflicts(text, neighbours)
            meta = {"conflicts_with": _join(conflicts)}
            return self._insert(user_id, text, kind, confidence, vector, ts, meta)

    def add_many(self, user_id: str, texts: Sequence[str], *, kind: str = "note", confidence: float = 0.8,
                 now: float | datetime | None = None) -> list[str]:
        """``add`` for several texts at once, with the same outcome as adding them one by one, in order.

        One embedding call, one neighbour query, one insert and one update in all: against a Chroma server
        each call is a network round trip, so a message's outcomes are written in one batch.
        """
        texts = list(texts)
        if not texts:
            return []
        ts = to_epoch(now, self._clock)
        with self._lock:
            vectors = [list(map(float, v)) for v in self._ef(texts)]
            got = self._col.query(query_embeddings=vectors, n_results=5, where=_where(user_id, kind=kind,
                                                                                     current_only=True),
                                  include=["documents", "metadatas", "distances"])
            out: list[str] = []
            fresh: list[tuple[Experience, list[float], dict[str, Any]]] = []  # inserted by this batch
            refresh: dict[str, dict[str, Any]] = {}
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                neighbours = [(_to_record(rid, d, m), 1.0 - dist) for rid, d, m, dist in
                              zip(got["ids"][i], got["documents"][i], got["metadatas"][i], got["distances"][i],
                                  strict=True)]
                neighbours += [(rec, _cosine(vector, vec)) for rec, vec, _ in fresh]
                neighbours.sort(key=lambda pair: -pair[1])
                duplicate = self._find_duplicate(text, neighbours)
                if duplicate is not None:
                    pending = next((meta for rec, _, meta in fresh if rec.id == duplicate.id), None)
                    target = pending if pending is not None else refresh.setdefault(duplicate.id, {
                        "updated_at": duplicate.updated_at, "confidence": duplicate.confidence,
                        "mentions": duplicate.mentions})
                    target.update(updated_at=max(target["updated_at"], ts),
                                  confidence=max(target["confidence"], float(confidence)),
                                  mentions=target["mentions"] + 1)
                    out.append(duplicate.id)
                    continue
                taken = {rec.id for rec, _, _ in fresh}
                rid = self._new_id(user_id, text, ts, taken)
                meta = self._meta(user_id, kind, confidence, ts,
                                  {"conflicts_with": _join(self._find_conflicts(text, neighbours))})
                fresh.append((_to_record(rid, text, meta), vector, meta))
                out.append(rid)
            if fresh:
                self._col.add(ids=[r.id for r, _, _ in fresh], documents=[r.text for r, _, _ in fresh],
                              embeddings=[v for _, v, _ in fresh], metadatas=[m for _, _, m in fresh])
            if refresh:
                self._col.update(ids=list(refresh), metadatas=list(refresh.values()))
            return out

    def record_hits(self, user_id: str, ids: Iterable[str], *, count: int = 1) -> None:
        """Credit records that helped a task succeed; each distinct id gets ``count`` more hits.

        Raises:
            MemoryAccessError: an id is unknown or belongs to another user (nothing is written).
        """
        with self._lock:
            records = self._owned(user_id, list(dict.fromkeys(ids)))
            if records:
                self._hits.add_hits(user_id, [r.id for r in records], count)

    def mark_stale(self, user_id: str, record_id: str, *, now: float | datetime | None = None) -> Experience:
        """Mark a record stale (kept, ranked lower, never a dedupe target); returns the updated record.

        Raises:
            MemoryAccessError: the id is unknown or belongs to another user.
        """
        ts = to_epoch(now, self._clock)
        with self._lock:
            (record,) = self._owned(user_id, [record_id])
            self._col.update(ids=[record_id], metadatas=[{"stale": True, "stale_at": ts}])
            return replace(record, stale=True)

    # ---- reads --------------------------------------------------------------------------------

    def get(self, user_id: str, record_id: str) -> Experience:
        """The record ``record_id`` if it belongs to ``user_id``.

        Raises:
            MemoryAccessError: the id is unknown or belongs to another user.
        """
        (record,) = self._owned(user_id, [record_id])
        return record

    def all(self, user_id: str, *, include_stale: bool = True) -> list[Experience]:
        """Every record of the user, oldest first."""
        got = self._col.get(
            where=_where(user_id, current_only=not include_stale), include=["documents", "metadatas"]
        )
        records = self._counted(user_id, [
            _to_record(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ])
        return sorted(records, key=lambda r: (r.created_at, r.id))

    def count(self, user_id: str, *, include_stale: bool = True) -> int:
        """How many records the user has."""
        return len(self._col.get(where=_where(user_id, current_only=not include_stale), include=[])["ids"])

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        *,
        kind: str | None = None,
        include_stale: bool = True,
        weights: RetrievalWeights | None = None,
        now: float | datetime | None = None,
        query_vector: Sequence[float] | None = None,
    ) -> list[SearchHit]:
        """The user's ``k`` best records for ``query`` by the combined score (see the module doc).

        ``query_vector``: the query's embedding when the caller has it already (one embedding per message
        serves every lookup), else it is embedded here.

        Only ``policy.candidate_pool`` nearest records (at least ``k``) are re-ranked, so a very old
        or rarely similar record outside that pool cannot be lifted in by recency or hits alone.
        Ties break on newer ``updated_at``, then id, so results are deterministic.
        """
        if k <= 0 or not query.strip():
            return []
        ts = to_epoch(now, self._clock)
        got = self._col.query(
            query_embeddings=[query_vector if query_vector is not None else self._ef([query])[0]],
            n_results=max(k, self.policy.candidate_pool),
            where=_where(user_id, kind=kind, current_only=not include_stale),
            include=["documents", "metadatas", "distances"],
        )
        found = [
            (_to_record(i, d, m), 1.0 - dist)
            for i, d, m, dist in zip(
                got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True
            )
            if 1.0 - dist >= self.policy.min_similarity
        ]
        counted = self._counted(user_id, [record for record, _ in found])
        hits = [self._score(record, sim, ts, weights or self.weights)
                for record, (_, sim) in zip(counted, found, strict=True)]
        hits.sort(key=lambda h: (-h.score, -h.record.updated_at, h.record.id))
        return hits[:k]

    def naming(self, user_id: str, names: Collection[str], k: int = 5, *, include_stale: bool = True,
               weights: RetrievalWeights | None = None, now: float | datetime | None = None) -> list[SearchHit]:
        """The user's ``k`` best records that name one of ``names`` (identifiers as
        ``known_ids.names_in_text`` reads them, any case), by the combined score at similarity 1; no embedding.

        Chroma finds the candidates by substring (case-sensitive, so the name as given and upper-cased);
        a record counts only when the name is one of its own identifiers (``ORD-1000`` does not name
        ``ORD-10001``).
        """
        wanted = {n.upper() for n in names if n.strip()}
        if k <= 0 or not wanted:
            return []
        forms = sorted({f for n in map(str.strip, names) if n for f in (n, n.upper())})
        clauses = [{"$contains": f} for f in forms]
        got = self._col.get(where=_where(user_id, current_only=not include_stale),
                            where_document=clauses[0] if len(clauses) == 1 else {"$or": clauses},
                            include=["documents", "metadatas"])
        records = [_to_record(i, d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
                   if wanted & _words(d)]
        ts = to_epoch(now, self._clock)
        hits = [self._score(r, 1.0, ts, weights or self.weights) for r in self._counted(user_id, records)]
        hits.sort(key=lambda h: (-h.score, -h.record.updated_at, h.record.id))
        return hits[:k]

    def close(self) -> None:
        """Release the Chroma client if this store created it (a passed-in client stays open)."""
        if self._owns_client:
            close = getattr(self._client, "close", None)
            if close is not None:
                close()

    # ---- internals ----------------------------------------------------------------------------

    def _owned(self, user_id: str, ids: Sequence[str]) -> list[Experience]:
        """Fetch ``ids`` and check each belongs to ``user_id``; all-or-nothing."""
        if not ids:
            return []
        got = self._col.get(ids=list(ids), include=["documents", "metadatas"])
        found = {
            i: _to_record(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }
        for rid in ids:
            record = found.get(rid)
            if record is None:
                raise MemoryAccessError(f"Memory record {rid!r} does not exist (user {user_id!r}).")
            if record.user_id != user_id:
                raise MemoryAccessError(
                    f"Memory record {rid!r} belongs to another user; user {user_id!r} may only read or "
                    "change its own memories."
                )
        return self._counted(user_id, [found[rid] for rid in ids])

    def _counted(self, user_id: str, records: list[Experience]) -> list[Experience]:
        """``records`` with the hits the counter holds added to any their metadata carries (older stores)."""
        counts = self._hits.hits(user_id, [r.id for r in records]) if records else {}
        return [replace(r, hits=r.hits + counts[r.id]) if r.id in counts else r for r in records]

    def _neighbours(self, user_id: str, kind: str, vector: Any) -> list[tuple[Experience, float]]:
        """The user's nearest current same-kind records with their cosine similarity, best first."""
        got = self._col.query(
            query_embeddings=[vector],
            n_results=5,
            where=_where(user_id, kind=kind, current_only=True),
            include=["documents", "metadatas", "distances"],
        )
        return [
            (_to_record(i, d, m), 1.0 - dist)
            for i, d, m, dist in zip(
                got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0], strict=True
            )
        ]

    def _find_duplicate(self, text: str, neighbours: list[tuple[Experience, float]]) -> Experience | None:
        polarity, names = negated(text), set(ids_in_text(text))
        for record, sim in neighbours:
            if (sim >= self.policy.dedupe_threshold and negated(record.text) == polarity
                    and set(ids_in_text(record.text)) == names):
                return record
        return None

    def _find_conflicts(self, text: str, neighbours: list[tuple[Experience, float]]) -> list[str]:
        polarity = negated(text)
        return [
            record.id
            for record, sim in neighbours
            if sim >= self.policy.conflict_threshold and negated(record.text) != polarity
        ]

    def _refresh(self, record: Experience, confidence: float, ts: float) -> str:
        # Max, not a noisy-OR: repeating a statement should not push confidence towards certainty.
        self._col.update(
            ids=[record.id],
            metadatas=[
                {
                    "updated_at": max(record.updated_at, ts),
                    "confidence": max(record.confidence, float(confidence)),
                    "mentions": record.mentions + 1,
                }
            ],
        )
        return record.id

    def _insert_superseding(
        self,
        user_id: str,
        text: str,
        kind: str,
        confidence: float,
        vector: Any,
        old: list[Experience],
        ts: float,
    ) -> str:
        rid = self._insert(
            user_id, text, kind, confidence, vector, ts, {"supersedes": _join(r.id for r in old)}
        )
        self._col.update(
            ids=[r.id for r in old],
            metadatas=[
                {"stale": True, "stale_at": ts, "superseded_by": _join([*r.superseded_by, rid])} for r in old
            ],
        )
        return rid

    def _insert(
        self,
        user_id: str,
        text: str,
        kind: str,
        confidence: float,
        vector: Any,
        ts: float,
        links: Mapping[str, str],
    ) -> str:
        rid = self._new_id(user_id, text, ts)
        meta = self._meta(user_id, kind, confidence, ts, links)
        self._col.add(ids=[rid], documents=[text], embeddings=[vector], metadatas=[meta])
        return rid

    @staticmethod
    def _meta(user_id: str, kind: str, confidence: float, ts: float, links: Mapping[str, str]) -> dict[str, Any]:
        return {
            "user_id": user_id,
            "kind": kind,
            "confidence": float(confidence),
            "created_at": ts,
            "updated_at": ts,
            "hits": 0,
            "mentions": 1,
            "stale": False,
            "stale_at": 0.0,
            "supersedes": "",
            "superseded_by": "",
            "conflicts_with": "",
            **links,
        }

    def _new_id(self, user_id: str, text: str, ts: float, taken: Collection[str] = ()) -> str:
        """Content-derived id (reproducible runs give reproducible ids); a suffix resolves collisions."""
        base = hashlib.sha256(f"{user_id}\x00{text}\x00{ts!r}".encode()).hexdigest()[:20]
        rid, n = f"exp-{base}", 1
        while rid in taken or self._col.get(ids=[rid], include=[])["ids"]:
            rid, n = f"exp-{base}-{n}", n + 1
        return rid

    def _score(self, record: Experience, similarity: float, ts: float, w: RetrievalWeights) -> SearchHit:
        sim = min(max(similarity, 0.0), 1.0)
        rec = recency(ts - record.updated_at, self.policy.half_life_days)
        rate = hit_rate(record.hits, self.policy.hit_saturation)
        score = w.similarity * sim + w.recency * rec + w.hits * rate + w.confidence * record.confidence
        if record.stale:
            score *= self.policy.stale_factor
        return SearchHit(record=record, score=score, similarity=sim, recency=rec, hit_rate=rate)
