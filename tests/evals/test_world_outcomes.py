"""Outcomes judged on the world: a scenario passes when the backend ends as it says, not when a call
"succeeded" or a reply held the right words (``evals.world``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from lg_harness.core.design import load_design
from lg_harness.core.domain import Domain
from lg_harness.errors import HarnessError
from lg_harness.tools.backend import SeededDB, changes_once
from lg_harness.tools.context import ToolContext
from lg_harness.tools.entities import Entity
from lg_harness_lab.evals import runner
from lg_harness_lab.evals.metrics import arg_validity, cell_metrics
from lg_harness_lab.evals.scenario import Outcome, Scenario, Turn, parse_splits, select_split, split_of
from lg_harness_lab.evals.world import judge_outcome, value_matches

# ----------------------------------------------------------------------- a retail domain the core never saw


class RetailDB(SeededDB):
    SCHEMA = """
    CREATE TABLE IF NOT EXISTS customers (id TEXT PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS addresses (customer_id TEXT PRIMARY KEY, street TEXT NOT NULL, city TEXT NOT NULL,
                                          updated_at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, status TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS idempotency (key TEXT PRIMARY KEY, tool TEXT NOT NULL, result_json TEXT NOT NULL,
                                            created_at TEXT NOT NULL)
    """
    SEED_TABLE = "customers"
    BOOKKEEPING = {"idempotency": ("*",), "addresses": ("updated_at",)}

    @classmethod
    def seed(cls, conn: Any, seed: int) -> None:
        conn.execute("INSERT INTO customers VALUES ('C1', 'Ada')")
        conn.execute("INSERT INTO addresses VALUES ('C1', '1 Elm St', 'Shelbyville', '2026-01-01')")
        conn.execute("INSERT INTO orders VALUES ('RT-20017', 'C1', 'pending')")


def _db(ctx: ToolContext) -> RetailDB:
    return ctx.extras["retail"]


OrderRef = Annotated[str, Entity("order"), Field(pattern=r"^RT-\d{5}$", description="Order number, e.g. RT-10000.")]


@changes_once(_db, lambda: datetime(2026, 1, 2))
def update_address(ctx: ToolContext, street: str, city: str) -> dict:
    """Change the customer's delivery address.

    Args:
        street: Street and number.
        city: The city.
    """
    _db(ctx).execute("UPDATE addresses SET street = ?, city = ?, updated_at = '2026-01-02' WHERE customer_id = ?",
                     (street, city, ctx.user_id))
    return {"customer_id": ctx.user_id, "street": street, "city": city}


def get_order(ctx: ToolContext, order_id: OrderRef) -> dict:
    """Look up an order.

    Args:
        order_id: The order number.
    """
    row = _db(ctx).query_one("SELECT * FROM orders WHERE id = ?", (order_id,))
    return dict(row) if row else {"error": "not found"}


get_order.changes_state = False  # type: ignore[attr-defined]

RETAIL = Domain(name="retail", tools=[get_order, update_address], default_user="C1",
                fresh_resources=lambda: {"retail": RetailDB.fresh_copy()})

ASKED = "Please ship order RT-20017 to 9 Oak Road in Springfield instead."
MOVE = {"changes": [{"table": "addresses", "op": "update", "key": {"customer_id": "C1"},
                     "set": {"street": "9 Oak Road", "city": "Springfield"}}]}


class Mover(BaseChatModel):
    """Offered tools and no result yet this turn: calls ``update_address`` with its city; else answers."""

    city: str

    @property
    def _llm_type(self) -> str:
        return "mover"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        answered = isinstance(messages[-1], ToolMessage)
        call = {"name": "update_address", "args": {"street": "9 Oak Road", "city": self.city}, "id": "c1",
                "type": "tool_call"}
        reply = AIMessage("", tool_calls=[call]) if kw.get("tools") and not answered else \
            AIMessage("Done: your address is updated.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _play(monkeypatch: pytest.MonkeyPatch, city: str, outcome: dict[str, Any] = MOVE) -> tuple[dict, Scenario]:
    """One turn on the naive design, the model calling ``update_address`` with ``city``."""
    monkeypatch.setattr(runner, "make_model", lambda spec, domain=None: Mover(city=city))
    scenario = Scenario.model_validate({"id": "retail-move-01", "user_id": "C1", "outcome": outcome, "turns": [
        {"user": ASKED, "confirm": "yes", "expect": {"reply_contains_any": ["updated"]}}]})
    record = runner.run_cell(load_design("naive"), scenario, 0, "scripted", RETAIL)
    return {**record, "domain": RETAIL}, scenario  # judged on this domain value, not one loaded by name


def test_a_write_with_a_wrong_value_fails_its_scenario_though_the_call_succeeded(monkeypatch):
    """The order id lands in the address's city: the call is ok, its arguments are valid (the user gave that
    id), the reply says the right words, and the world is wrong, so the scenario fails and the diff counts it."""
    record, scenario = _play(monkeypatch, city="RT-20017")
    calls = [c for t in record["turns"] for c in t["tool_calls"]]
    assert [c["status"] for c in calls if c["name"] == "update_address"] == ["ok"]
    assert arg_validity(record, scenario, RETAIL)["rate"] == 1.0
    cell = cell_metrics(record, scenario)
    assert cell["turns"][0]["passed"]  # the reply's words are there
    assert not cell["success"] and cell["sums"]["wrong_changes"] == 1
    assert cell["outcome"]["wrong"][0]["changed"]["city"] == ["Shelbyville", "RT-20017"]
    assert cell["counts"]["end_state"] == [0, 1]

    right, _ = _play(monkeypatch, city="Springfield")
    good = cell_metrics(right, scenario)
    assert good["success"] and good["sums"]["wrong_changes"] == 0 and good["counts"]["end_state"] == [1, 1]


def test_a_change_no_one_asked_for_fails_a_scenario_that_must_leave_the_world_alone(monkeypatch):
    record, scenario = _play(monkeypatch, city="Springfield", outcome={"changes": []})
    cell = cell_metrics(record, scenario)
    assert not cell["success"] and cell["sums"]["wrong_changes"] == 1
    # the per-turn record holds the same change, so a "no changes" turn is judged on the world too
    assert record["turns"][0]["world"] and record["turns"][0]["world"][0]["table"] == "addresses"


def test_the_timestamp_a_tool_sets_is_bookkeeping_and_idempotency_records_are_not_changes(monkeypatch):
    record, _ = _play(monkeypatch, city="Springfield")
    counted = [c for c in record["world"] if c["counted"]]
    assert [(c["table"], sorted(c["changed"])) for c in counted] == [("addresses", ["city", "street", "updated_at"])]
    assert counted[0]["bookkeeping"] == ["updated_at"]
    assert {c["table"] for c in record["world"] if not c["counted"]} == {"idempotency"}


# ------------------------------------------------------------------------------------------ judging alone


def _update(city: str, counted: bool = True, **changed: list[Any]) -> dict[str, Any]:
    return {"table": "addresses", "op": "update", "key": {"customer_id": "C1"}, "counted": counted,
            "row": {"customer_id": "C1", "street": "9 Oak Road", "city": city},
            "changed": {"city": ["Shelbyville", city], **changed}, "bookkeeping": []}


def test_an_update_may_change_only_the_columns_it_names():
    outcome = Outcome.model_validate({"changes": [{"table": "addresses", "op": "update", "key": {"customer_id": "C1"},
                                                   "set": {"city": "Springfield"}}]})
    assert judge_outcome([_update("Springfield")], outcome)["passed"]
    extra = judge_outcome([_update("Springfield", street=["1 Elm St", "9 Oak Road"])], outcome)
    assert not extra["passed"] and extra["missing"] and extra["wrong"]


def test_each_expected_insert_needs_its_own_row_and_listed_bookkeeping_is_still_required():
    inserted = [{"table": "returns", "op": "insert", "counted": True, "row": {"order_id": o, "user_id": "U1"}}
                for o in ("A-1", "A-2")]
    both = Outcome.model_validate({"changes": [{"table": "returns", "op": "insert", "row": {"order_id": {"any": True}}},
                                               {"table": "returns", "op": "insert", "row": {"order_id": "A-1"}}]})
    assert judge_outcome(inserted, both)["passed"]  # the matching finds A-2 for the first, A-1 for the second
    assert not judge_outcome(inserted[:1], both)["passed"]
    queue = {"table": "handoffs", "op": "insert", "counted": False, "row": {"user_id": "U1"}}
    wants_queue = Outcome.model_validate({"changes": [{"table": "handoffs", "op": "insert", "row": {"user_id": "U1"}}]})
    assert judge_outcome([queue], Outcome(changes=[]))["passed"]  # bookkeeping is never extra
    assert not judge_outcome([], wants_queue)["passed"] and judge_outcome([queue], wants_queue)["passed"]


@pytest.mark.parametrize(("expected", "actual", "held"), [
    ("Springfield", " Springfield ", True), ("Springfield", "springfield", False), (1, 1.0, True), (True, 1, True),
    (12.5, "12.50", True), ({"any": True}, "", False), ({"any": True}, "x", True), ({"contains": "oak"}, "9 Oak Rd", True),
    ({"one_of": ["cancelled", "refunded"]}, "refunded", True), ({"one_of": ["a"]}, "b", False), (None, None, True),
])
def test_values_are_literals_or_matchers(expected, actual, held):
    assert value_matches(expected, actual) is held


def test_an_outcome_change_says_what_it_lacks():
    with pytest.raises(ValueError, match="needs 'set'"):
        Outcome.model_validate({"changes": [{"table": "orders", "op": "update", "key": {"id": "X"}}]})
    with pytest.raises(ValueError, match="needs 'key'"):
        Outcome.model_validate({"changes": [{"table": "orders", "op": "delete"}]})


# ------------------------------------------------------------------------------------------------ splits


def test_a_heldout_scenario_is_in_its_own_split_never_dev_or_test():
    made = [Scenario(id=f"ho-retail-{i:04d}", tags=["heldout", "en"], turns=[Turn(user="hi")]) for i in range(40)]
    assert {split_of(s) for s in made} == {"heldout"}
    assert select_split(made, "heldout") == made and select_split(made, "test") == select_split(made, "dev") == []
    assert split_of(Scenario(id="hw-1", tags=["handwritten"], turns=[Turn(user="hi")])) == "test"
    assert parse_splits("test,heldout") == ["test", "heldout"]
    with pytest.raises(HarnessError, match="--split"):
        parse_splits("test,held")
