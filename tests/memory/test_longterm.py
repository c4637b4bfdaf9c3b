"""Long-term memory against a real Chroma persistent client and real MiniLM embeddings.

Cosines quoted in comments were measured with the bundled all-MiniLM-L6-v2; each test re-measures the
pairs it relies on and asserts them, so a different embedder fails loudly instead of silently
testing nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime

import chromadb
import pytest
from chromadb.config import Settings

from lg_harness.errors import HarnessError
from lg_harness.llm.embeddings import embed
from lg_harness.memory.longterm import (
    ExperienceStore,
    FactStore,
    LongTermMemory,
    MemoryAccessError,
    MemoryPolicy,
    MiniLMEmbeddingFunction,
    RetrievalWeights,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
DAY = 86_400.0

EMAIL = "The customer prefers email over phone calls."
EMAIL_LOWER = "the customer prefers email over phone calls"  # 0.985 to EMAIL: a duplicate
ADDRESS = "The customer prefers delivery to the office address."  # about 0.53 to EMAIL: distinct
PHONE = "The customer prefers phone calls over email."  # 0.988 to EMAIL, yet it contradicts it
BOX = "Returns of opened headphones need the original box."
PACKAGING = "Opened headphones can only be returned with the original packaging."  # 0.833 to BOX
WANTS = "Customer wants email notifications for shipping."
WANTS_NOT = "Customer does not want email notifications for shipping."  # 0.840 to WANTS
RESTART = "Restarting the headset fixed the Bluetooth pairing problem."
FIRMWARE = "Updating the phone firmware solved the Bluetooth pairing failure."  # 0.888 to RESTART


@pytest.fixture(scope="module", autouse=True)
def _embedder():
    """Load MiniLM once per module; later embed calls take milliseconds."""
    embed(["warm up"])


def cos(a: str, b: str) -> float:
    """Cosine of two texts (the vectors are unit-normalised)."""
    va, vb = embed([a, b])
    return float(va @ vb)


@pytest.fixture
def mem(tmp_path):
    memory = LongTermMemory(tmp_path, clock=lambda: T0)
    yield memory
    memory.close()


# ---- experiences: dedupe --------------------------------------------------------------------


def test_near_duplicate_refreshes_instead_of_inserting(mem):
    exp = mem.experiences
    assert cos(EMAIL, EMAIL_LOWER) >= 0.92
    first = exp.add("u1", EMAIL, kind="preference", confidence=0.6, now=T0)
    again = exp.add("u1", EMAIL_LOWER, kind="preference", confidence=0.9, now=T0 + 3 * DAY)
    assert again == first
    assert exp.count("u1") == 1
    record = exp.get("u1", first)
    assert record.text == EMAIL  # the original wording stays
    assert record.updated_at == T0 + 3 * DAY
    assert record.created_at == T0
    assert record.confidence == pytest.approx(0.9)  # max of both
    assert record.mentions == 2


def test_distinct_texts_insert(mem):
    exp = mem.experiences
    assert cos(EMAIL, ADDRESS) < 0.75
    assert cos(BOX, PACKAGING) < 0.92
    ids = {exp.add("u1", t, kind="preference", now=T0) for t in (EMAIL, ADDRESS, BOX, PACKAGING)}
    assert len(ids) == 4
    assert exp.count("u1") == 4


def test_dedupe_threshold_is_configurable(tmp_path):
    sim = cos(BOX, PACKAGING)
    assert 0.80 <= sim < 0.92
    with LongTermMemory(tmp_path, clock=lambda: T0, policy=MemoryPolicy(dedupe_threshold=0.80)) as mem:
        first = mem.experiences.add("u1", BOX, kind="policy")
        assert mem.experiences.add("u1", PACKAGING, kind="policy") == first
        assert mem.experiences.count("u1") == 1


def test_dedupe_only_within_the_same_kind(mem):
    exp = mem.experiences
    a = exp.add("u1", EMAIL, kind="preference", now=T0)
    b = exp.add("u1", EMAIL, kind="episode", now=T0)
    assert a != b
    assert exp.count("u1") == 2


def outcome(order: str, status: str) -> str:
    return f"get_order_status(order_id={order}) succeeded: order_id={order}, status={status}"


def test_outcomes_that_differ_only_in_their_identifiers_are_kept_apart(mem):
    exp = mem.experiences
    # MiniLM scores them as duplicates: only the identifiers tell them apart.
    assert cos(outcome("ORD-10001", "shipped"), outcome("ORD-10004", "shipped")) >= 0.92
    orders = [f"ORD-1000{i}" for i in range(8)]
    ids = exp.add_many("u1", [outcome(o, "shipped") for o in orders], kind="outcome", now=T0)
    assert len(set(ids)) == 8 and exp.count("u1") == 8
    # One by one as well, and the same outcome again is still a duplicate.
    single = exp.add("u1", outcome("ORD-20001", "shipped"), kind="outcome", now=T0)
    assert exp.add("u1", outcome("ORD-20001", "shipped"), kind="outcome", now=T0 + DAY) == single
    assert exp.count("u1") == 9 and exp.get("u1", single).mentions == 2


# ---- experiences: by what a message names -----------------------------------------------------


def test_a_named_identifier_recalls_its_own_records_where_similarity_recalls_others(mem):
    exp = mem.experiences
    statuses = ["shipped", "pending", "delivered", "cancelled", "shipped", "pending", "delivered", "shipped"]
    exp.add_many("u1", [outcome(f"ORD-1000{i}", s) for i, s in enumerate(statuses)], kind="outcome", now=T0)
    cancel = exp.add("u1", "cancel_order(order_id=ORD-10005) succeeded: status=cancelled", kind="outcome",
                     now=T0 + DAY)
    exp.add("u2", outcome("ORD-10005", "shipped"), kind="outcome", now=T0)  # another user's
    question = "Where is my order ORD-10005?"
    by_similarity = [h.record.text for h in exp.search("u1", question, k=3, now=T0 + DAY)]
    assert not any("ORD-10005" in t for t in by_similarity), by_similarity  # why recall goes by the name
    hits = exp.naming("u1", ["ORD-10005"], k=3, now=T0 + DAY)
    assert [h.id for h in hits][0] == cancel  # the newer of its two records first
    assert [h.record.text for h in hits][1] == outcome("ORD-10005", "pending")
    assert len(hits) == 2 and all(h.record.user_id == "u1" for h in hits)
    assert exp.naming("u1", ["ord-10005"], k=3, now=T0 + DAY)[0].id == cancel  # any case
    assert exp.naming("u1", ["ORD-1000"], k=3) == []  # a prefix names nothing
    assert exp.naming("u1", ["ORD-99999"], k=3) == []  # nothing remembered: nothing recalled
    exp.add("u1", "The order ORD-10005 was cancelled at the customer's request.", kind="note",
            supersedes=[cancel], now=T0 + 2 * DAY)
    assert cancel not in [h.id for h in exp.naming("u1", ["ORD-10005"], k=3, include_stale=False)]


# ---- experiences: conflicts -----------------------------------------------------------------


def test_explicit_supersedes_keeps_both_and_newer_ranks_first(mem):
    exp = mem.experiences
    # So close that dedupe would merge them; only the caller can say one replaces the other.
    assert cos(EMAIL, PHONE) >= 0.92
    old = exp.add("u1", EMAIL, kind="preference", confidence=0.9, now=T0)
    new = exp.add("u1", PHONE, kind="preference", confidence=0.9, supersedes=[old], now=T0 + DAY)
    assert new != old
    assert exp.count("u1") == 2
    old_rec, new_rec = exp.get("u1", old), exp.get("u1", new)
    assert old_rec.stale and old_rec.superseded_by == (new,)
    assert not new_rec.stale and new_rec.supersedes == (old,)

    hits = exp.search("u1", "how does the customer want to be contacted", now=T0 + DAY)
    assert [h.id for h in hits] == [new, old]
    assert [h.id for h in exp.search("u1", "contact preference", include_stale=False, now=T0 + DAY)] == [new]


def test_negated_statement_is_a_conflict_not_a_duplicate(mem):
    exp = mem.experiences
    sim = cos(WANTS, WANTS_NOT)
    assert 0.75 <= sim < 0.92
    old = exp.add("u1", WANTS, kind="preference", now=T0)
    new = exp.add("u1", WANTS_NOT, kind="preference", now=T0 + 30 * DAY)
    assert new != old
    assert exp.get("u1", new).conflicts_with == (old,)
    assert not exp.get("u1", old).stale  # a heuristic conflict keeps both as current

    query = "email notifications for shipping"
    # The query is closer to the old wording (0.908 vs 0.768); recency must outweigh that.
    assert cos(query, WANTS) > cos(query, WANTS_NOT)
    hits = exp.search("u1", query, now=T0 + 30 * DAY)
    assert [h.id for h in hits] == [new, old]
    assert hits[0].recency == pytest.approx(1.0)
    assert hits[1].recency == pytest.approx(0.5)  # one half-life old


def test_negation_blocks_dedupe_even_above_threshold(tmp_path):
    # With the dedupe bar lowered below the pair's cosine, polarity alone keeps them apart.
    policy = MemoryPolicy(dedupe_threshold=0.80)
    with LongTermMemory(tmp_path, clock=lambda: T0, policy=policy) as mem:
        a = mem.experiences.add("u1", WANTS, kind="preference")
        b = mem.experiences.add("u1", WANTS_NOT, kind="preference")
        assert a != b


# ---- experiences: ranking -------------------------------------------------------------------


def test_older_record_with_equal_similarity_ranks_lower_and_weights_change_order(mem):
    exp = mem.experiences
    # Same text under two kinds: identical embeddings, so similarity is exactly equal.
    old = exp.add("u1", RESTART, kind="resolution", confidence=0.9, now=T0)
    new = exp.add("u1", RESTART, kind="note", confidence=0.5, now=T0 + 20 * DAY)
    now = T0 + 20 * DAY
    hits = exp.search("u1", "headset pairing fix", now=now)
    assert hits[0].similarity == pytest.approx(hits[1].similarity, abs=1e-6)
    assert [h.id for h in hits] == [new, old]
    assert hits[0].score > hits[1].score

    # Without a recency term the older record's higher confidence wins.
    no_recency = RetrievalWeights(similarity=0.4, recency=0.0, hits=0.2, confidence=0.4)
    assert [h.id for h in exp.search("u1", "headset pairing fix", weights=no_recency, now=now)] == [old, new]


def test_recency_half_life_is_configurable(tmp_path):
    policy = MemoryPolicy(half_life_days=10.0)
    with LongTermMemory(tmp_path, clock=lambda: T0, policy=policy) as mem:
        rid = mem.experiences.add("u1", RESTART, kind="resolution", now=T0)
        (hit,) = mem.experiences.search("u1", RESTART, now=T0 + 20 * DAY)
        assert hit.id == rid
        assert hit.recency == pytest.approx(0.25)


def test_score_uses_the_documented_formula(mem):
    exp = mem.experiences
    rid = exp.add("u1", RESTART, kind="resolution", confidence=0.7, now=T0)
    exp.record_hits("u1", [rid], count=5)
    (hit,) = exp.search("u1", RESTART, now=T0 + 30 * DAY)
    assert hit.similarity == pytest.approx(1.0, abs=1e-5)
    assert hit.hit_rate == pytest.approx(0.5)
    assert hit.score == pytest.approx(0.4 * 1.0 + 0.3 * 0.5 + 0.2 * 0.5 + 0.1 * 0.7, abs=1e-5)


def test_hits_written_back_raise_rank(mem):
    exp = mem.experiences
    query = "bluetooth headset will not pair"
    assert cos(RESTART, FIRMWARE) < 0.92
    assert cos(query, RESTART) > cos(query, FIRMWARE)  # 0.763 vs 0.644
    restart = exp.add("u1", RESTART, kind="resolution", now=T0)
    firmware = exp.add("u1", FIRMWARE, kind="resolution", now=T0)
    assert [h.id for h in exp.search("u1", query, now=T0)] == [restart, firmware]

    for _ in range(3):  # three tasks succeeded with the firmware advice
        exp.record_hits("u1", [firmware, firmware])  # duplicate ids in one call count once
    assert exp.get("u1", firmware).hits == 3
    assert [h.id for h in exp.search("u1", query, now=T0)] == [firmware, restart]


def test_stale_is_marked_not_deleted_and_ranks_lower(mem):
    exp = mem.experiences
    a = exp.add("u1", RESTART, kind="resolution", now=T0)
    b = exp.add("u1", RESTART, kind="note", now=T0)
    record = exp.mark_stale("u1", a, now=T0 + DAY)
    assert record.stale
    assert exp.get("u1", a).stale
    assert exp.count("u1") == 2
    assert exp.count("u1", include_stale=False) == 1

    hits = exp.search("u1", RESTART, now=T0 + DAY)
    assert [h.id for h in hits] == [b, a]
    assert hits[1].score == pytest.approx(hits[0].score * 0.5, rel=1e-4)
    assert [h.id for h in exp.search("u1", RESTART, include_stale=False, now=T0 + DAY)] == [b]

    # A stale record is never a dedupe target: restating it stores a fresh current record.
    c = exp.add("u1", RESTART, kind="resolution", now=T0 + 2 * DAY)
    assert c not in (a, b)
    assert exp.count("u1") == 3


def test_search_edge_cases(mem):
    exp = mem.experiences
    assert exp.search("u1", "anything") == []
    exp.add("u1", RESTART, kind="resolution")
    assert exp.search("u1", "   ") == []
    assert exp.search("u1", RESTART, k=0) == []
    assert len(exp.search("u1", RESTART, k=10)) == 1
    assert exp.search("u1", RESTART, kind="preference") == []


# ---- persistence ----------------------------------------------------------------------------


def test_persistence_across_close_and_reopen(tmp_path):
    mem = LongTermMemory(tmp_path, clock=lambda: T0)
    rid = mem.experiences.add("u1", RESTART, kind="resolution", confidence=0.7)
    mem.experiences.record_hits("u1", [rid])
    mem.facts.put("u1", "shipping_address", "12 Elm St", confirmed=True, source="t1/turn2")
    mem.close()
    assert (tmp_path / "memory" / "facts.sqlite").is_file()
    assert (tmp_path / "memory" / "chroma").is_dir()

    again = LongTermMemory(tmp_path, clock=lambda: T0 + DAY)
    try:
        record = again.experiences.get("u1", rid)
        assert (record.text, record.hits, record.confidence) == (RESTART, 1, pytest.approx(0.7))
        assert [h.id for h in again.experiences.search("u1", "headset pairing")] == [rid]
        fact = again.facts.get("u1", "shipping_address")
        assert fact is not None
        assert (fact.value, fact.source) == ("12 Elm St", "t1/turn2")
    finally:
        again.close()


def test_collection_uses_the_harness_embedder(mem):
    col = mem.experiences._col
    assert isinstance(col._embedding_function, MiniLMEmbeddingFunction)
    assert col.configuration["hnsw"]["space"] == "cosine"


def test_external_client_is_used_and_left_open(tmp_path):
    client = chromadb.PersistentClient(
        path=str(tmp_path / "ext"), settings=Settings(anonymized_telemetry=False)
    )
    try:
        with LongTermMemory(facts_path=":memory:", chroma_client=client, clock=lambda: T0) as mem:
            rid = mem.experiences.add("u1", RESTART)
        # Still usable after the facade closed: the caller owns the client.
        assert client.get_collection("experiences").get(ids=[rid])["ids"] == [rid]
    finally:
        client.close()  # pyright: ignore[reportAttributeAccessIssue]  (chromadb types it ClientAPI, which lacks close())


def test_facade_needs_locations():
    with pytest.raises(HarnessError, match="data_dir"):
        LongTermMemory()
    with pytest.raises(HarnessError, match="path or a client"):
        ExperienceStore()


# ---- isolation ------------------------------------------------------------------------------


def test_users_cannot_see_or_touch_each_others_experiences(mem):
    exp = mem.experiences
    a_id = exp.add("alice", RESTART, kind="resolution", now=T0)

    assert exp.search("bob", RESTART) == []
    assert exp.all("bob") == []
    assert exp.count("bob") == 0

    with pytest.raises(MemoryAccessError, match="belongs to another user"):
        exp.get("bob", a_id)
    with pytest.raises(MemoryAccessError, match="belongs to another user"):
        exp.record_hits("bob", [a_id])
    with pytest.raises(MemoryAccessError, match="belongs to another user"):
        exp.mark_stale("bob", a_id)
    with pytest.raises(MemoryAccessError, match="belongs to another user"):
        exp.add("bob", FIRMWARE, supersedes=[a_id])
    with pytest.raises(MemoryAccessError, match="does not exist"):
        exp.get("bob", "exp-nope")

    # Bob's identical text is his own record, not a dedupe into Alice's.
    b_id = exp.add("bob", RESTART, kind="resolution", now=T0)
    assert b_id != a_id
    alice = exp.get("alice", a_id)
    assert (alice.hits, alice.stale, alice.mentions) == (0, False, 1)
    assert [h.id for h in exp.search("alice", RESTART)] == [a_id]
    assert [h.id for h in exp.search("bob", RESTART)] == [b_id]


def test_record_hits_is_all_or_nothing(mem):
    exp = mem.experiences
    mine = exp.add("bob", FIRMWARE, kind="resolution")
    theirs = exp.add("alice", RESTART, kind="resolution")
    with pytest.raises(MemoryAccessError):
        exp.record_hits("bob", [mine, theirs])
    assert exp.get("bob", mine).hits == 0


# ---- facts ----------------------------------------------------------------------------------


@pytest.fixture
def facts():
    store = FactStore(":memory:", clock=lambda: T0)
    yield store
    store.close()


def test_fact_put_requires_confirmation(facts):
    assert facts.put("u1", "size", "M", confirmed=False) is None
    assert facts.get("u1", "size") is None
    with pytest.raises(TypeError):
        facts.put("u1", "size", "M")  # the decision must be explicit


def test_fact_same_value_refreshes(facts):
    first = facts.put("u1", "size", "M", confirmed=True, confidence=0.6, source="t1/1", now=T0)
    again = facts.put("u1", "size", "M", confirmed=True, confidence=0.9, source="t2/4", now=T0 + DAY)
    assert again.id == first.id
    assert (again.confidence, again.updated_at, again.source) == (0.9, T0 + DAY, "t1/1")
    assert len(facts.history("u1", "size")) == 1


def test_fact_conflict_keeps_history(facts):
    facts.put("u1", "address", "12 Elm St", confirmed=True, source="t1/2", now=T0)
    current = facts.put("u1", "address", "7 Oak Ave", confirmed=True, source="t3/1", now=T0 + DAY)
    assert facts.get("u1", "address") == current
    assert facts.value("u1", "address") == "7 Oak Ave"
    history = facts.history("u1", "address")
    assert [(f.value, f.stale) for f in history] == [("12 Elm St", True), ("7 Oak Ave", False)]
    assert history[0].updated_at == T0 + DAY  # when it stopped being current


def test_fact_mark_stale_and_all(facts):
    facts.put("u1", "address", "12 Elm St", confirmed=True)
    facts.put("u1", "prefs", {"channel": "email", "lang": ["en", "zh"]}, confirmed=True)
    assert facts.value("u1", "prefs") == {"channel": "email", "lang": ["en", "zh"]}
    assert [f.key for f in facts.all("u1")] == ["address", "prefs"]

    assert facts.mark_stale("u1", "address") is True
    assert facts.mark_stale("u1", "address") is False  # nothing current left
    assert facts.get("u1", "address") is None
    assert facts.value("u1", "address", "unknown") == "unknown"
    assert [f.key for f in facts.all("u1")] == ["prefs"]
    assert [(f.key, f.stale) for f in facts.all("u1", include_stale=True)] == [
        ("address", True),
        ("prefs", False),
    ]


def test_facts_are_isolated_per_user(facts):
    facts.put("alice", "address", "12 Elm St", confirmed=True)
    assert facts.get("bob", "address") is None
    assert facts.all("bob") == []
    assert facts.mark_stale("bob", "address") is False
    facts.put("bob", "address", "9 Pine Rd", confirmed=True)
    assert facts.value("alice", "address") == "12 Elm St"
    assert [f.stale for f in facts.history("alice", "address")] == [False]
