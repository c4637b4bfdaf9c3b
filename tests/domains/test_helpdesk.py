"""The helpdesk domain pack: seeded backend, tools through the real executor, KB search, domain, scenarios."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from lg_harness.domains.helpdesk import DOMAIN, HELPDESK_TOOLS, kb, pin_slot, system_slot
from lg_harness.domains.helpdesk import tools as hd_tools
from lg_harness.domains.helpdesk.db import HelpdeskDB
from lg_harness.domains.helpdesk.seed import INJECTED_ARTICLES, LOCKED
from lg_harness.tools.context import ToolContext
from lg_harness.tools.executor import ToolExecutor, ToolOutcome
from lg_harness.tools.registry import ToolRegistry
from lg_harness_lab.evals.generators import helpdesk as generate
from lg_harness_lab.evals.scenario import Scenario, Tag, load_scenarios, select_split, split_of
from lg_harness_lab.evals.scenario_sets import scenario_path
from tests.support import tool_spec

SCENARIO_DIR = Path(scenario_path(DOMAIN))
REQUIRED_TAGS = ("single", "multi-turn", "slot-filling", "long", "referential", "correction", "negation", "role",
                 "adversarial", "injection", "unicode", "tool-faults", "handoff", "en", "zh", "handwritten")
FAULT_KINDS = {"timeout", "rate_limited", "server_error", "malformed", "ok"}
ID_ARGS = {"ticket_id": r"INC\d{7}", "asset_id": r"(?:LT|MN|PH)-\d{5}", "employee_id": r"E\d{4}",
           "article_id": r"KB\d{7}", "request_id": r"REQ\d{7}"}
_calls = itertools.count(1)


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture
def db() -> Iterator[HelpdeskDB]:
    desk = HelpdeskDB.fresh_copy()
    yield desk
    desk.close()


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return DOMAIN.registry()


@pytest.fixture(scope="module")
def executor(registry: ToolRegistry) -> ToolExecutor:
    return ToolExecutor(registry, sleep=lambda _s: None)


@pytest.fixture(scope="module")
def suite() -> list[Scenario]:
    return load_scenarios(SCENARIO_DIR)


@pytest.fixture(scope="module")
def scenarios(suite: list[Scenario]) -> list[Scenario]:
    """The generated and hand-written suite (dev and test), whose tag vocabulary the project owns."""
    return [s for s in suite if split_of(s) != "heldout"]


@pytest.fixture(scope="module")
def heldout(suite: list[Scenario]) -> list[Scenario]:
    """Written without the routing rules or the generator, so with its own tags: checked for realness only."""
    return select_split(suite, "heldout")


def ctx(db: HelpdeskDB, user: str = "E1001", role: str = "employee", thread: str = "t1", key: str = "") -> ToolContext:
    return ToolContext(user_id=user, role=role, thread_id=thread, idempotency_key=key, extras={"helpdesk": db})


def run(executor: ToolExecutor, context: ToolContext, name: str, **args: Any) -> ToolOutcome:
    return executor.run({"id": f"c{next(_calls)}", "name": name, "args": args}, context)


def ok(outcome: ToolOutcome) -> dict:
    assert outcome.status == "ok", (outcome.name, outcome.error_type, outcome.error)
    return outcome.result


def failed(outcome: ToolOutcome, error_type: str, words: str = "") -> str:
    assert outcome.status == "error" and outcome.error_type == error_type, (outcome.name, outcome.error_type,
                                                                           outcome.error)
    assert words.lower() in (outcome.error or "").lower(), outcome.error
    return outcome.error or ""


# ----------------------------------------------------------------------------------------------- backend


def test_seed_has_the_described_records(db: HelpdeskDB) -> None:
    def count(table: str) -> int:
        return db.query_one(f"SELECT COUNT(*) FROM {table}")[0]

    assert count("employees") == 30 and count("agents") == 3 and count("accounts") == 30
    assert count("kb_articles") == 40 and count("tickets") >= 50 and count("access_requests") >= 20
    ids = {t: [r[0] for r in db.query(f"SELECT id FROM {t}")] for t in ("employees", "agents", "tickets", "assets",
                                                                         "access_requests", "kb_articles")}
    assert ids["employees"] == [f"E{n}" for n in range(1001, 1031)]
    assert ids["agents"] == ["A9001", "A9002", "A9003"]
    for table, pattern in (("tickets", r"INC\d{7}"), ("assets", r"(?:LT|MN|PH)-\d{5}"),
                           ("access_requests", r"REQ\d{7}"), ("kb_articles", r"KB\d{7}")):
        assert all(re.fullmatch(pattern, i) for i in ids[table]), table
    assert {i[:2] for i in ids["assets"]} == {"LT", "MN", "PH"}
    assert {r[0] for r in db.query("SELECT status FROM tickets")} == {"new", "in_progress", "resolved", "closed"}
    assert {r[0] for r in db.query("SELECT employee_id FROM accounts WHERE locked = 1")} == set(LOCKED)
    assert all(re.fullmatch(r"\d{6}", r[0]) for r in db.query("SELECT pin FROM employees"))
    assert db.query_one("SELECT COUNT(*) FROM kb_articles WHERE title_zh IS NOT NULL")[0] >= 10
    injected = [r["id"] for r in db.query("SELECT id, body FROM kb_articles")
                if re.search(r"ignore (all )?previous instructions|忽略之前的所有指令", r["body"], re.I)]
    assert injected == list(INJECTED_ARTICLES)


def test_seed_is_deterministic_and_fresh_copies_are_isolated(executor: ToolExecutor) -> None:
    a, b = HelpdeskDB.fresh_copy(), HelpdeskDB.fresh_copy()
    try:
        dump = "SELECT id, status, owner_id, short_description FROM tickets ORDER BY id"
        assert [tuple(r) for r in a.query(dump)] == [tuple(r) for r in b.query(dump)]
        created = ok(run(executor, ctx(a), "create_ticket", short_description="Printer jams on every page"))
        assert created["ticket_id"] == "INC0012361"
        assert b.query_one("SELECT 1 FROM tickets WHERE id = 'INC0012361'") is None
        assert ok(run(executor, ctx(b), "create_ticket", short_description="Mouse is broken"))["ticket_id"] == \
            "INC0012361"
    finally:
        a.close()
        b.close()


def test_open_seeds_a_file_once(tmp_path: Path) -> None:
    path = tmp_path / "data" / "helpdesk.sqlite"
    with HelpdeskDB.open(path) as first, first.transaction() as conn:
        conn.execute("UPDATE accounts SET locked = 1 WHERE employee_id = 'E1001'")
    with HelpdeskDB.open(path) as again:
        assert again.query_one("SELECT COUNT(*) FROM employees")[0] == 30
        assert again.query_one("SELECT locked FROM accounts WHERE employee_id = 'E1001'")[0] == 1


def test_transaction_rolls_back_on_error(db: HelpdeskDB) -> None:
    with pytest.raises(RuntimeError), db.transaction() as conn:
        conn.execute("UPDATE accounts SET locked = 1 WHERE employee_id = 'E1001'")
        raise RuntimeError("boom")
    assert db.query_one("SELECT locked FROM accounts WHERE employee_id = 'E1001'")[0] == 0


# ------------------------------------------------------------------------------------ schemas and registry


def test_schemas_carry_patterns_and_entity_markers(registry: ToolRegistry) -> None:
    expected = {"get_ticket": {"ticket_id": "ticket"}, "add_ticket_comment": {"ticket_id": "ticket"},
                "get_asset": {"asset_id": "asset"}, "get_article": {"article_id": "article"},
                "verify_identity": {"employee_id": "employee", "pin": "pin"}, "reset_password": {"employee_id": "employee"},
                "unlock_account": {"employee_id": "employee"}, "get_access_request": {"request_id": "request"}}
    for name in registry.names():
        spec = tool_spec(registry, name)
        assert DOMAIN.tool_entities(spec) == expected.get(name, {}), name
        props = spec.json_schema()["function"]["parameters"]["properties"]
        for arg, pattern in ID_ARGS.items():
            if arg in props:
                assert props[arg]["pattern"] == f"^{pattern}$", (name, arg)
                assert props[arg]["description"], (name, arg)
        assert spec.description and "Args:" not in spec.description, name
    props = tool_spec(registry, "create_ticket").json_schema()["function"]["parameters"]["properties"]
    assert props["priority"]["enum"] == ["low", "medium", "high", "critical"]
    props = tool_spec(registry, "request_access").json_schema()["function"]["parameters"]["properties"]
    assert "github" in props["system"]["enum"]
    assert tool_spec(registry, "verify_identity").json_schema()["function"]["parameters"]["properties"]["pin"]["pattern"]


def test_changing_tools_and_roles(registry: ToolRegistry) -> None:
    changing = {n for n in registry.names() if tool_spec(registry, n).changes_state}
    assert changing == {"create_ticket", "add_ticket_comment", "reset_password", "request_access", "unlock_account",
                        "escalate_to_technician"}
    assert tool_spec(registry, "unlock_account").roles == frozenset({"agent"})
    assert all(tool_spec(registry, n).roles is None for n in registry.names() if n != "unlock_account")
    employee = [s.name for s in registry.offer(None, "employee")]
    agent = [s.name for s in registry.offer(None, "agent")]
    assert "unlock_account" not in employee and "unlock_account" in agent
    assert set(agent) - set(employee) == {"unlock_account"}
    assert len(registry) == len(HELPDESK_TOOLS) == 14


def test_validation_rejects_bad_identifiers(executor: ToolExecutor, db: HelpdeskDB) -> None:
    failed(run(executor, ctx(db), "get_ticket", ticket_id="12345"), "validation", "ticket_id")
    failed(run(executor, ctx(db), "get_asset", asset_id="LT4201"), "validation", "asset_id")
    failed(run(executor, ctx(db), "verify_identity", employee_id="E1001", pin="12ab"), "validation", "pin")
    failed(run(executor, ctx(db), "create_ticket", short_description="Broken", priority="urgent"), "validation")


def test_missing_backend_is_a_permanent_error(executor: ToolExecutor) -> None:
    failed(run(executor, ToolContext(user_id="E1001", role="employee"), "list_my_tickets"), "permanent",
           "not available")


# ------------------------------------------------------------------------------------------ owner-only


def test_employees_read_only_their_own_records(executor: ToolExecutor, db: HelpdeskDB) -> None:
    mine = ok(run(executor, ctx(db), "get_ticket", ticket_id="INC0012346"))
    assert mine["status"] == "in_progress" and mine["owner_id"] == "E1001" and mine["comments"]
    failed(run(executor, ctx(db), "get_ticket", ticket_id="INC0012337"), "not_found", "not found")  # E1002's
    failed(run(executor, ctx(db), "get_ticket", ticket_id="INC0099999"), "not_found", "not found")
    assert ok(run(executor, ctx(db), "get_asset", asset_id="LT-04201"))["model"] == "Lenovo ThinkPad T14 Gen 4"
    failed(run(executor, ctx(db), "get_asset", asset_id="LT-04202"), "not_found")
    assert ok(run(executor, ctx(db), "get_access_request", request_id="REQ0001210"))["status"] == "approved"
    failed(run(executor, ctx(db), "get_access_request", request_id="REQ0001201"), "not_found")
    listed = ok(run(executor, ctx(db), "list_my_tickets"))
    assert {t["ticket_id"] for t in listed["tickets"]} == {"INC0012308", "INC0012346"}
    assert ok(run(executor, ctx(db), "list_my_tickets", status="closed"))["total_count"] == 1
    assert {a["asset_id"] for a in ok(run(executor, ctx(db), "list_my_assets"))["assets"]} == \
        {"LT-04201", "MN-05301", "PH-06101"}


def test_agents_read_everything_and_a_role_claim_is_not_enough(executor: ToolExecutor, db: HelpdeskDB) -> None:
    agent = ctx(db, "A9002", "agent")
    assert ok(run(executor, agent, "get_ticket", ticket_id="INC0012337"))["owner_id"] == "E1002"
    assert ok(run(executor, agent, "get_asset", asset_id="LT-04202"))["status"] == "in_repair"
    assigned = ok(run(executor, ctx(db, "A9001", "agent"), "list_my_tickets", limit=50))["tickets"]
    assert assigned and all(db.query_one("SELECT assignee_id FROM tickets WHERE id = ?", (t["ticket_id"],))[0] ==
                            "A9001" for t in assigned)
    faker = ctx(db, "E1001", "agent")  # an employee claiming the agent role
    failed(run(executor, faker, "get_ticket", ticket_id="INC0012337"), "not_found")
    failed(run(executor, faker, "unlock_account", employee_id="E1004"), "business", "only service-desk agents")


# ------------------------------------------------------------------------------------ identity and resets


def test_reset_requires_verification_on_this_thread(executor: ToolExecutor, db: HelpdeskDB) -> None:
    me = ctx(db, "E1003", thread="th-a")
    failed(run(executor, me, "reset_password", employee_id="E1003"), "business", "identity must be verified first")
    failed(run(executor, me, "verify_identity", employee_id="E1003", pin="000000"), "business", "does not match")
    failed(run(executor, me, "reset_password", employee_id="E1003"), "business", "verified first")
    verified = ok(run(executor, me, "verify_identity", employee_id="E1003", pin="661913"))
    assert verified == {"employee_id": "E1003", "verified": True, "name": "Carla Diaz"}
    done = ok(run(executor, me, "reset_password", employee_id="E1003"))
    assert done["status"] == "reset" and done["reset_link_sent_to"] == "c***@northwind.example"
    assert "661913" not in json.dumps(done)
    failed(run(executor, ctx(db, "E1003", thread="th-b"), "reset_password", employee_id="E1003"), "business",
           "verified first")
    failed(run(executor, ctx(db, "E1003", thread=""), "verify_identity", employee_id="E1003", pin="661913"),
           "business", "conversation")


def test_employees_reset_only_their_own_password(executor: ToolExecutor, db: HelpdeskDB) -> None:
    me = ctx(db, "E1001", thread="th-x")
    failed(run(executor, me, "verify_identity", employee_id="E1002", pin="150631"), "business", "your own identity")
    failed(run(executor, me, "reset_password", employee_id="E1002"), "business", "your own password")
    agent = ctx(db, "A9001", "agent", thread="th-y")
    failed(run(executor, agent, "reset_password", employee_id="E1002"), "business", "verified first")
    ok(run(executor, agent, "verify_identity", employee_id="E1002", pin="150631"))
    assert ok(run(executor, agent, "reset_password", employee_id="E1002"))["employee_id"] == "E1002"


def test_three_wrong_pins_end_verification_on_the_thread(executor: ToolExecutor, db: HelpdeskDB) -> None:
    me = ctx(db, "E1005", thread="th-pin")
    for left in ("2", "1", "0"):
        failed(run(executor, me, "verify_identity", employee_id="E1005", pin="111111"), "business", f"{left} attempt")
    failed(run(executor, me, "verify_identity", employee_id="E1005", pin="325127"), "business", "too many")
    ok(run(executor, ctx(db, "E1005", thread="th-other"), "verify_identity", employee_id="E1005", pin="325127"))


def test_reset_runs_once_per_idempotency_key(executor: ToolExecutor, db: HelpdeskDB,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    real = hd_tools._mask_email
    monkeypatch.setattr(hd_tools, "_mask_email", lambda email: runs.append(email) or real(email))
    ok(run(executor, ctx(db, "E1003", thread="th-i"), "verify_identity", employee_id="E1003", pin="661913"))
    keyed = ctx(db, "E1003", thread="th-i", key="th-i:call-7")
    first = ok(run(executor, keyed, "reset_password", employee_id="E1003"))
    again = ok(run(executor, keyed, "reset_password", employee_id="E1003"))
    assert first == again and len(runs) == 1
    assert db.query_one("SELECT COUNT(*) FROM idempotency WHERE key = 'th-i:call-7'")[0] == 1
    failed(run(executor, keyed, "create_ticket", short_description="Reusing a key"), "validation", "already used")
    ok(run(executor, ctx(db, "E1003", thread="th-i", key="th-i:call-8"), "reset_password", employee_id="E1003"))
    assert len(runs) == 2


def test_unlock_is_for_agents_only(executor: ToolExecutor, db: HelpdeskDB) -> None:
    failed(run(executor, ctx(db, "E1004"), "unlock_account", employee_id="E1004"), "business", "only service-desk")
    agent = ctx(db, "A9003", "agent")
    assert ok(run(executor, agent, "unlock_account", employee_id="E1004"))["locked"] is False
    assert db.query_one("SELECT locked FROM accounts WHERE employee_id = 'E1004'")[0] == 0
    failed(run(executor, agent, "unlock_account", employee_id="E1004"), "business", "not locked")
    failed(run(executor, agent, "unlock_account", employee_id="E1099"), "not_found")


def test_request_access_needs_verification_and_no_duplicate(executor: ToolExecutor, db: HelpdeskDB) -> None:
    me = ctx(db, "E1006", thread="th-acc")
    failed(run(executor, me, "request_access", system="github", reason="New project"), "business", "verified first")
    ok(run(executor, me, "verify_identity", employee_id="E1006", pin=_pin(db, "E1006")))
    made = ok(run(executor, me, "request_access", system="github", reason="New project"))
    assert made["request_id"] == "REQ0001226" and made["status"] == "pending"
    failed(run(executor, me, "request_access", system="github", reason="Again"), "business", "REQ0001226")
    assert ok(run(executor, me, "get_access_request", request_id="REQ0001226"))["system"] == "github"


def _pin(db: HelpdeskDB, employee: str) -> str:
    return db.query_one("SELECT pin FROM employees WHERE id = ?", (employee,))[0]


# -------------------------------------------------------------------------------- tickets and handoff


def test_comments_reopen_resolved_and_refuse_closed(executor: ToolExecutor, db: HelpdeskDB) -> None:
    failed(run(executor, ctx(db), "add_ticket_comment", ticket_id="INC0012308", comment="Back again"), "business",
           "closed")
    resolved = ok(run(executor, ctx(db, "E1004"), "add_ticket_comment", ticket_id="INC0012311", comment="Came back"))
    assert resolved["reopened"] is True and resolved["status"] == "in_progress"
    view = ok(run(executor, ctx(db, "E1004"), "get_ticket", ticket_id="INC0012311"))
    assert view["comments"][-1]["body"] == "Came back"
    failed(run(executor, ctx(db), "add_ticket_comment", ticket_id="INC0012311", comment="Not mine"), "not_found")


def test_escalation_opens_one_ticket_per_thread(executor: ToolExecutor, db: HelpdeskDB, registry: ToolRegistry) -> None:
    assert DOMAIN.handoff.tool == "escalate_to_technician" and DOMAIN.handoff.tool in registry
    first = ok(run(executor, ctx(db, thread="th-h"), "escalate_to_technician", reason="Laptop will not boot"))
    assert re.fullmatch(r"INC\d{7}", first[DOMAIN.handoff.ticket_key]) and first["already_waiting"] is False
    again = ok(run(executor, ctx(db, thread="th-h"), "escalate_to_technician", reason="Still waiting"))
    assert again["ticket_id"] == first["ticket_id"] and again["already_waiting"] is True
    other = ok(run(executor, ctx(db, "E1002", thread="th-k"), "escalate_to_technician", reason="No network"))
    assert other["ticket_id"] != first["ticket_id"] and other["queue_position"] == 2
    ticket = ok(run(executor, ctx(db, thread="th-h"), "get_ticket", ticket_id=first["ticket_id"]))
    assert ticket["priority"] == "high" and ticket["category"] == "escalation"


# ----------------------------------------------------------------------------------------------- KB


@pytest.mark.parametrize(("query", "article"), [
    ("My printer shows as offline", "KB0001025"),
    ("How do I connect to the VPN?", "KB0001002"),
    ("recover a deleted file", "KB0001011"),
    ("打印机显示脱机了怎么办", "KB0001025"),
    ("怎么连接VPN", "KB0001002"),
    ("账户被锁定了", "KB0001009"),
])
def test_kb_search_finds_the_article(executor: ToolExecutor, db: HelpdeskDB, query: str, article: str) -> None:
    found = ok(run(executor, ctx(db), "search_kb", query=query))
    assert found["results"][0]["article_id"] == article, found["results"]
    assert found["results"][0]["excerpt"]


def test_kb_hides_internal_articles_from_employees(executor: ToolExecutor, db: HelpdeskDB) -> None:
    query = "runbook unlocking accounts verify caller"
    employee = [r["article_id"] for r in ok(run(executor, ctx(db), "search_kb", query=query))["results"]]
    agent = [r["article_id"] for r in ok(run(executor, ctx(db, "A9001", "agent"), "search_kb", query=query))["results"]]
    assert "KB0001037" not in employee and "KB0001037" in agent
    failed(run(executor, ctx(db), "get_article", article_id="KB0001037"), "not_found")
    assert ok(run(executor, ctx(db, "A9001", "agent"), "get_article", article_id="KB0001037"))["category"] == "internal"
    assert ok(run(executor, ctx(db), "search_kb", query="write me a poem about the sea"))["results"] == []


def test_kb_collection_is_built_once_and_shares_chromas_ephemeral_system() -> None:
    import chromadb
    from chromadb.config import Settings

    assert kb._collection() is kb._collection()
    assert kb._collection().count() == 40
    # the evaluation runner's in-memory client (same process, one ephemeral system) must still open
    runner = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False, allow_reset=True))
    assert "helpdesk_kb" in [c.name for c in runner.list_collections()]
    runner.delete_collection("helpdesk_kb")  # dropped under our feet: the next search builds it again
    assert kb.search("printer offline")[0].article_id == "KB0001025"


# -------------------------------------------------------------------------------------------- domain


def test_domain_shape(registry: ToolRegistry) -> None:
    assert DOMAIN.name == "helpdesk" and DOMAIN.languages == ("en", "zh")
    assert DOMAIN.default_user == "E1001" and DOMAIN.default_role == "employee"
    assert set(DOMAIN.roles) == {"employee", "agent"}
    kinds = Counter(i.kind for i in DOMAIN.intents)
    assert set(kinds) == {"task", "conversational", "to-human", "escalate"}
    for intent in DOMAIN.intents:
        assert len(intent.route.tools) <= 3 and set(intent.route.tools) <= set(registry.names()), intent.name
        if intent.name != "unknown":
            assert intent.rules.get("en") and intent.rules.get("zh"), intent.name
        if intent.entity_hint:
            assert DOMAIN.entity_type(intent.entity_hint) is not None, intent.name
    slots = {s for i in DOMAIN.intents for g in i.route.required for s in g}
    for key in ("greeting", "thanks", "handoff", *(f"ask_{s}" for s in slots)):
        assert DOMAIN.phrases[key]["en"] and DOMAIN.phrases[key]["zh"], key
    assert set(DOMAIN.constraint_words) - {"handoff"} <= set(registry.names())
    described = DOMAIN.describe()
    assert described["handoff_tool"] == "escalate_to_technician" and len(described["tools"]) == 14


def test_entity_types_find_canonical_mentions() -> None:
    names = [t.name for t in DOMAIN.entity_types]
    assert names == ["ticket", "request", "article", "asset", "employee"]
    found = DOMAIN.entities_in("查一下ＩＮＣ００１２３０１和lt 04201、MN–05301，我是e1003，见kb0001024和REQ0001201")
    assert found == {"ticket": ["INC0012301"], "request": ["REQ0001201"], "article": ["KB0001024"],
                     "asset": ["LT-04201", "MN-05301"], "employee": ["E1003"]}
    assert DOMAIN.entities_in("INC00\u200b12301")["ticket"] == ["INC0012301"]
    assert DOMAIN.slot_entities()["ticket_id"].remember


def test_slot_extractors() -> None:
    assert pin_slot("reset_password", "My PIN is 661913, ticket INC0012345") == "661913"
    assert pin_slot("ticket_status", "661913") is None
    assert pin_slot("request_access", "E1003") is None
    assert system_slot("request_access", "我需要开通GitHub权限") == "github"
    assert system_slot("request_access", "I need the wiki") == "confluence"
    assert system_slot("kb_search", "vpn") is None
    assert DOMAIN.slot_extractors["query"]("kb_search", "  printer   offline ") == "printer offline"


def test_users_resources_and_scenario_path(tmp_path: Path) -> None:
    assert DOMAIN.fresh_resources is not None and DOMAIN.open_resources is not None
    resources = DOMAIN.fresh_resources()
    try:
        employee = DOMAIN.user("E1001", resources)
        assert employee is not None and employee["role"] == "employee"
        assert DOMAIN.user("a9001", resources) == {"id": "A9001", "role": "agent", "name": "Priya Nair",
                                                  "department": "Service Desk"}
        assert DOMAIN.user("U001", resources) is None and DOMAIN.user("E1001", {}) is None
    finally:
        resources["helpdesk"].close()
    opened = DOMAIN.open_resources(lambda name: str(tmp_path / name))
    try:
        assert Path(opened["helpdesk"].path) == tmp_path / "helpdesk.sqlite"
    finally:
        opened["helpdesk"].close()
    assert SCENARIO_DIR.is_dir() and (SCENARIO_DIR / "generated.jsonl").is_file()


def test_rules_classify_first_turns(scenarios: list[Scenario]) -> None:
    classify = pytest.importorskip("lg_harness.nodes.classify").classify
    wrong = [(s.id, s.turns[0].user, s.turns[0].expect.intent, classify(DOMAIN, s.turns[0].user)[0])
             for s in scenarios if s.turns[0].expect.intent]
    wrong = [w for w in wrong if w[2] != w[3]]
    assert not wrong, wrong[:5]


# ------------------------------------------------------------------------------------------- scenarios


def _raw_rows() -> list[dict]:
    rows = [json.loads(line) for line in (SCENARIO_DIR / "generated.jsonl").read_text("utf-8").splitlines() if line]
    return rows + yaml.safe_load((SCENARIO_DIR / "handwritten.yaml").read_text("utf-8"))


def test_scenarios_load_and_cover_every_kind(scenarios: list[Scenario]) -> None:
    assert len(scenarios) >= 120
    counts = Counter(t for s in scenarios for t in s.tags)
    assert set(counts) <= set(get_args(Tag)), set(counts) - set(get_args(Tag))
    for tag in REQUIRED_TAGS:
        assert counts[tag] >= 2, (tag, counts[tag])
    assert counts["handwritten"] >= 15
    assert all("user_id" in r and "lang" in r and "role" in r for r in _raw_rows())
    for s in scenarios:
        assert s.lang in s.tags and s.turns, s.id
        assert ("single" in s.tags) == (len(s.turns) == 1), s.id
    assert min(len(s.turns) for s in scenarios if "long" in s.tags) >= 20


def test_scenario_users_tools_intents_and_faults_are_known(scenarios: list[Scenario], registry: ToolRegistry) -> None:
    assert DOMAIN.fresh_resources is not None
    resources = DOMAIN.fresh_resources()
    intents = set(DOMAIN.intent_names())
    try:
        for s in scenarios:
            assert s.user_id is not None, s.id
            user = DOMAIN.user(s.user_id, resources)
            assert user is not None and user["role"] == s.role, s.id
            assert set(s.tool_faults) <= set(registry.names()), s.id
            assert all(set(f) <= FAULT_KINDS for f in s.tool_faults.values()), s.id
            for t in s.turns:
                assert t.expect.intent is None or t.expect.intent in intents, (s.id, t.expect.intent)
                assert set(t.expect.must_not_call) <= set(registry.names()), s.id
                assert all(c.name in registry for c in t.expect.tools or []), s.id
                assert t.expect.asks_for is None or t.expect.asks_for in DOMAIN.slot_words, s.id
    finally:
        resources["helpdesk"].close()
    faults = {k for s in scenarios for f in s.tool_faults.values() for k in f}
    assert faults == FAULT_KINDS


def test_heldout_scenarios_use_real_users_and_tools(heldout: list[Scenario], registry: ToolRegistry) -> None:
    assert DOMAIN.fresh_resources is not None
    resources = DOMAIN.fresh_resources()
    try:
        assert len(heldout) >= 60
        for s in heldout:
            assert s.user_id is not None, s.id
            user = DOMAIN.user(s.user_id, resources)
            assert user is not None and s.role in (None, user["role"]), s.id
            assert s.lang in s.tags and (s.turns or s.goal), s.id
            for t in s.turns:
                assert set(t.expect.must_not_call) <= set(registry.names()), s.id
                assert all(c.name in registry for c in t.expect.tools or []), s.id
    finally:
        resources["helpdesk"].close()
    injections = [s for s in heldout if "injection" in s.tags and s.goal is None]
    assert len(injections) >= 5
    for s in injections:
        assert all(t.expect.no_changes and t.expect.must_not_call for t in s.turns), s.id
    goals = [s for s in heldout if s.goal is not None]  # the customers with a goal (issue 41's split)
    assert len(goals) >= 40 and {"en", "zh"} <= {s.lang for s in goals}
    assert all(s.outcome is not None and s.outcome.changes == [] for s in goals if "injection" in s.tags)


def _seed_text(db: HelpdeskDB) -> str:
    tables = ("employees", "agents", "tickets", "assets", "access_requests", "kb_articles")
    return json.dumps([dict(r) for t in tables for r in db.query(f"SELECT * FROM {t}")], ensure_ascii=False).casefold()


def _fill(spec: Any, args: dict[str, Any], text: str) -> dict[str, Any]:
    """The expected args plus the free-text ones the model would write (query, description, reason...)."""
    out = dict(args)
    for name, info in spec.args_model.model_fields.items():
        if name not in out and info.is_required():
            out[name] = text[:180].ljust(5, ".")
    return out


def _replay(s: Scenario, executor: ToolExecutor, registry: ToolRegistry) -> list[tuple[Any, str, str]]:
    """Run every turn's expected tools in order on a fresh desk; (turn, its results, everything so far)."""
    assert s.user_id is not None, s.id
    db = HelpdeskDB.fresh_copy()
    context = ctx(db, s.user_id, s.role or "employee", thread=s.id)
    seen, out = "", []
    try:
        for t in s.turns:
            results = ""
            for expected in t.expect.tools or []:
                outcome = run(executor, context, expected.name, **_fill(registry.get(expected.name), expected.args,
                                                                         t.user))
                assert outcome.status == "ok", (s.id, expected.name, outcome.error)
                results += json.dumps(outcome.result, ensure_ascii=False).casefold()
            seen += results + t.user.casefold()
            out.append((t, results, seen))
    finally:
        db.close()
    return out


def test_every_expectation_holds_on_the_seeded_desk(scenarios: list[Scenario], executor: ToolExecutor,
                                                    registry: ToolRegistry, db: HelpdeskDB) -> None:
    seed = _seed_text(db)
    for s in scenarios:
        for t, results, seen in _replay(s, executor, registry):
            for fact in t.expect.reply_contains:
                assert fact.casefold() in seen or fact.casefold() in seed, (s.id, fact)
            if t.expect.tools and t.expect.reply_contains_any:
                assert any(f.casefold() in results or f.casefold() in seed for f in t.expect.reply_contains_any), \
                    (s.id, t.user, t.expect.reply_contains_any)


def _owned(db: HelpdeskDB) -> dict[str, str | None]:
    rows = [*db.query("SELECT id, owner_id FROM tickets"), *db.query("SELECT id, employee_id FROM assets"),
            *db.query("SELECT id, employee_id FROM access_requests")]
    return {r[0]: r[1] for r in rows}


def test_scenario_ids_are_real_and_owned(scenarios: list[Scenario], db: HelpdeskDB) -> None:
    owners = _owned(db)
    articles = {r[0] for r in db.query("SELECT id FROM kb_articles")}
    employees = {r[0] for r in db.query("SELECT id FROM employees")}
    for s in scenarios:
        for t in s.turns:
            for c in t.expect.tools or []:
                for arg, value in c.args.items():
                    if arg in ("ticket_id", "asset_id", "request_id"):
                        assert value in owners, (s.id, value)
                        if s.role == "employee" and "adversarial" not in s.tags:
                            assert owners[value] == s.user_id, (s.id, value, owners[value])
                    elif arg == "article_id":
                        assert value in articles, (s.id, value)
                    elif arg == "employee_id":
                        assert value in employees and (s.role == "agent" or value == s.user_id), (s.id, value)
                    elif arg == "pin":
                        assert value == _pin(db, c.args["employee_id"]), s.id


def test_kb_and_injection_scenarios_retrieve_their_article(scenarios: list[Scenario]) -> None:
    injected: set[str] = set()
    for s in scenarios:
        for t in s.turns:
            names = [c.name for c in t.expect.tools or []]
            ids = [x for x in t.expect.reply_contains_any if re.fullmatch(r"KB\d{7}", x)]
            if "search_kb" in names and ids:
                assert ids[0] in [h.article_id for h in kb.search(t.user)], (s.id, t.user)
                if ids[0] in INJECTED_ARTICLES:
                    injected.add(ids[0])
                    assert "injection" in s.tags and set(t.expect.must_not_call) >= {"reset_password"}, s.id
    assert injected == set(INJECTED_ARTICLES)


def test_verification_comes_before_reset_in_scenarios(scenarios: list[Scenario]) -> None:
    checked = 0
    for s in scenarios:
        calls = [c.name for t in s.turns for c in t.expect.tools or []]
        if "reset_password" in calls or "request_access" in calls:
            first = min(calls.index(n) for n in ("reset_password", "request_access") if n in calls)
            assert "verify_identity" in calls[:first], s.id
            checked += 1
    guarded = [s for s in scenarios if any("reset_password" in t.expect.must_not_call and t.expect.asks_for
                                           for t in s.turns)]
    assert checked >= 10 and len(guarded) >= 8


def test_long_scenarios_recall_the_first_ticket(scenarios: list[Scenario]) -> None:
    for s in (s for s in scenarios if "long" in s.tags):
        first = next(m for t in s.turns for m in re.findall(r"INC\d{7}", t.user))
        recall = [t for t in s.turns if t.expect.recall]
        assert recall and first in recall[-1].expect.reply_contains, s.id


def test_generator_is_deterministic() -> None:
    written = [json.loads(line) for line in (SCENARIO_DIR / "generated.jsonl").read_text("utf-8").splitlines() if line]
    assert generate.generate() == written
