"""The builtin scenario set: size, coverage, real data, and a deterministic generator."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.domains.shop.backend import SHOP_TOOLS, ShopDB
from lg_harness.domains.shop.nlu import INTENTS
from lg_harness.tools.context import ToolContext
from lg_harness_lab.evals.generators import shop as generate
from lg_harness_lab.evals.scenario import Scenario, Tag, load_scenarios, select_split, split_of
from lg_harness_lab.evals.scenario_sets import scenario_path

ORDER_ID = re.compile(r"ORD-\d{5}")
INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
GENERATED = scenario_path(SHOP) / "generated.jsonl"
TOOLS = {fn.__name__: fn for fn in SHOP_TOOLS}


@pytest.fixture(scope="module")
def suite() -> list[Scenario]:
    return load_scenarios(scenario_path(SHOP))


@pytest.fixture(scope="module")
def scenarios(suite: list[Scenario]) -> list[Scenario]:
    """The generated and hand-written suite (dev and test), whose tag vocabulary the project owns."""
    return [s for s in suite if split_of(s) != "heldout"]


@pytest.fixture(scope="module")
def heldout(suite: list[Scenario]) -> list[Scenario]:
    """Written without the routing rules or the generator, so with its own tags: checked for realness only."""
    return select_split(suite, "heldout")


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopDB]:
    db = ShopDB.open(":memory:")
    yield db
    db.close()


def tagged(scenarios: list[Scenario], tag: str) -> list[Scenario]:
    return [s for s in scenarios if tag in s.tags]


def clean(text: str) -> str:
    return INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


def referenced_orders(s: Scenario) -> set[str]:
    """Order ids the user states or the expectations require (reply_excludes lists what must NOT show)."""
    found: set[str] = set()
    if s.goal is not None:  # what the customer says, knows or must be told about
        texts = [*(a for task in s.goal.tasks for a in task.ask), *(k.value for k in s.goal.knows.values()),
                 *(str(f.record or f.value) for task in s.goal.tasks for f in task.told)]
        found.update(o for text in texts for o in ORDER_ID.findall(clean(text)))
    for t in s.turns:
        found.update(ORDER_ID.findall(clean(t.user)))
        for call in t.expect.tools or []:
            found.update(ORDER_ID.findall(str(call.args.get("order_id", ""))))
        for text in [*t.expect.reply_contains, *t.expect.reply_contains_any]:
            found.update(ORDER_ID.findall(text))
    return found


def test_size_languages_and_handwritten(scenarios: list[Scenario]) -> None:
    assert len(scenarios) >= 300
    assert len(tagged(scenarios, "handwritten")) >= 40
    langs = Counter(s.lang for s in scenarios)
    for lang in ("en", "zh"):
        assert langs[lang] >= 0.3 * len(scenarios), langs
    for s in scenarios:
        assert s.lang in s.tags, s.id
        assert s.turns, s.id


def test_tags_are_known_and_cover_the_categories(scenarios: list[Scenario]) -> None:
    known = set(get_args(Tag))
    counts = Counter(t for s in scenarios for t in s.tags)
    assert set(counts) <= known, set(counts) - known
    for tag in ("single", "multi-turn", "slot-filling", "long", "referential", "correction", "negation", "role",
                "adversarial", "injection", "unicode", "tool-faults", "handoff"):
        assert counts[tag] >= 5, (tag, counts[tag])


def test_every_intent_is_expected(scenarios: list[Scenario]) -> None:
    seen = {t.expect.intent for s in scenarios for t in s.turns if t.expect.intent}
    assert seen <= set(INTENTS), seen - set(INTENTS)
    assert set(INTENTS) <= seen, set(INTENTS) - seen


def test_long_scenarios_recall_the_start(scenarios: list[Scenario]) -> None:
    long = [s for s in tagged(scenarios, "long") if 30 <= len(s.turns) <= 40 and "referential" in s.tags]
    assert len(long) >= 20
    for s in long:
        first = next(o for t in s.turns[:2] for o in ORDER_ID.findall(clean(t.user)))
        recall = [t for t in s.turns if t.expect.recall and t.expect.intent == "recall"]
        assert recall and first in recall[0].expect.reply_contains, s.id
        assert any(t.expect.completes_task for t in s.turns), s.id


def test_orders_users_and_roles_are_real(scenarios: list[Scenario], shop: ShopDB) -> None:
    owners = {r["id"]: r["user_id"] for r in shop.query("SELECT id, user_id FROM orders")}
    roles = {r["id"]: r["role"] for r in shop.query("SELECT id, role FROM users")}
    products = {r["id"] for r in shop.query("SELECT id FROM products")}
    for s in scenarios:
        assert s.user_id in roles, s.id
        assert s.role in (None, roles[s.user_id]), s.id
        for oid in referenced_orders(s):
            if "adversarial" not in s.tags:
                assert owners.get(oid) == s.user_id, (s.id, oid, owners.get(oid))
        for t in s.turns:
            for call in t.expect.tools or []:
                assert call.name in TOOLS, (s.id, call.name)
                if "product_id" in call.args:
                    assert call.args["product_id"] in products, s.id
            assert set(t.expect.must_not_call) <= set(TOOLS), s.id


def test_heldout_scenarios_use_real_users_orders_and_tools(heldout: list[Scenario], shop: ShopDB) -> None:
    owners = {r["id"]: r["user_id"] for r in shop.query("SELECT id, user_id FROM orders")}
    roles = {r["id"]: r["role"] for r in shop.query("SELECT id, role FROM users")}
    assert len(heldout) >= 60
    for s in heldout:
        assert s.user_id in roles and s.role in (None, roles[s.user_id]), s.id
        for oid in referenced_orders(s):
            # An order of someone else is the point of an ``other-user`` scenario; anywhere else it is a typo.
            assert oid in owners and (owners[oid] == s.user_id or {"other-user", "third-party"} & set(s.tags)), \
                (s.id, oid)
        for t in s.turns:
            assert {c.name for c in t.expect.tools or []} | set(t.expect.must_not_call) <= set(TOOLS), s.id
    injections = [s for s in heldout if "injection" in s.tags and s.goal is None]
    assert len(injections) >= 5
    for s in injections:
        assert all(t.expect.no_changes and t.expect.must_not_call for t in s.turns), s.id
    goals = [s for s in heldout if s.goal is not None]  # the customers with a goal (issue 41's split)
    assert len(goals) >= 40 and {"en", "zh"} <= {s.lang for s in goals}
    assert all(s.outcome is not None and s.outcome.changes == [] for s in goals if "injection" in s.tags)


def test_injection_scenarios_guard_cancel(scenarios: list[Scenario]) -> None:
    injections = tagged(scenarios, "injection")
    products = {c.args.get("product_id") for s in injections for t in s.turns for c in t.expect.tools or []}
    assert {"P1005", "P1017"} <= products
    for s in injections:
        assert "adversarial" in s.tags, s.id
        assert any("cancel_order" in t.expect.must_not_call for t in s.turns), s.id


def test_tool_faults_are_declared(scenarios: list[Scenario]) -> None:
    faulty = tagged(scenarios, "tool-faults")
    assert len(faulty) >= 10
    kinds = {k for s in faulty for seq in s.tool_faults.values() for k in seq}
    assert kinds <= {"timeout", "rate_limited", "server_error", "malformed", "ok"}
    assert {"timeout", "rate_limited", "server_error", "malformed", "ok"} <= kinds
    for s in faulty:
        assert s.tool_faults and set(s.tool_faults) <= set(TOOLS), s.id


def test_unicode_scenarios_expect_clean_ids(scenarios: list[Scenario]) -> None:
    uni = tagged(scenarios, "unicode")
    assert len(uni) >= 10
    for s in uni:
        assert any(INVISIBLE.search(t.user) or clean(t.user) != t.user for t in s.turns), s.id
        for t in s.turns:
            for call in t.expect.tools or []:
                assert all(not INVISIBLE.search(str(v)) for v in call.args.values()), s.id


def _fresh(template: ShopDB) -> ShopDB:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    template.conn.backup(conn)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return ShopDB(conn)


def test_expected_tool_calls_succeed_on_a_fresh_shop(scenarios: list[Scenario], shop: ShopDB) -> None:
    """Replaying each scenario's required calls in order (args as expected) never hits an error."""
    for s in scenarios:
        db = _fresh(shop)
        try:
            for i, t in enumerate(s.turns):
                for k, call in enumerate(t.expect.tools or []):
                    args = dict(call.args)
                    if call.name == "search_products":
                        args.setdefault("query", "headphones")
                    if call.name == "request_return":
                        args.setdefault("reason", "does not fit")
                    assert s.user_id is not None, f"{s.id} names the user whose calls it expects"
                    ctx = ToolContext(user_id=s.user_id, role=s.role or "customer", thread_id=s.id,
                                      idempotency_key=f"{s.id}:{i}:{k}", extras={"shop": db})
                    TOOLS[call.name](ctx, **args)
        finally:
            db.close()


@pytest.mark.slow
def test_generator_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert generate.main(["--seed", "11", "--out", str(a)]) == 0
    assert generate.main(["--seed", "11", "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert len(load_scenarios(a)) >= 250
    other = tmp_path / "c.jsonl"
    generate.main(["--seed", "12", "--out", str(other)])
    assert other.read_bytes() != a.read_bytes()


@pytest.mark.slow
def test_committed_file_matches_a_fresh_generation(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.jsonl"
    generate.main(["--seed", str(generate.DEFAULT_SEED), "--out", str(fresh)])
    assert GENERATED.read_bytes() == fresh.read_bytes(), (
        "lab/lg_harness_lab/packs/shop/scenarios/generated.jsonl is stale: run python -m lg_harness_lab.evals.generators.shop --seed 11 "
        "--out lab/lg_harness_lab/packs/shop/scenarios/generated.jsonl"
    )
