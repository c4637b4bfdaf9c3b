"""Tool registry: schemas (inline snapshots), LangChain and async tools, metadata, masking, hot changes."""

import asyncio
import enum
import threading
from datetime import date, datetime
from typing import Annotated, Literal

import pydantic
import pytest
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from lg_harness.domains.shop.backend import SHOP_TOOLS, list_my_orders
from lg_harness.errors import UsageError
from lg_harness.tools.context import ToolContext
from lg_harness.tools.executor import ToolExecutor
from lg_harness.tools.registry import ToolRegistry, build_spec, self_contained_schema, tool_meta

CTX = ToolContext(user_id="U001", thread_id="t1")


# ----------------------------------------------------------------------------- tools with rich signatures


class Priority(enum.Enum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


class Address(BaseModel):
    street: str = Field(min_length=1, description="Street and number.")
    postcode: Annotated[str, Field(pattern=r"^\d{5}$")]
    country: Literal["US", "CN"] = "US"


class LineItem(BaseModel):
    sku: Annotated[str, Field(pattern=r"^SKU-\d{3}$", description="Stock keeping unit.")]
    qty: Annotated[int, Field(ge=1, le=99)] = 1
    priority: Priority | None = None


def place_order(
    ctx: ToolContext,
    items: Annotated[list[LineItem], Field(min_length=1, max_length=10)],
    ship_to: Address,
    deliver_on: date,
    priority: Priority = Priority.NORMAL,
    note: str | None = None,
) -> dict:
    """Place an order for the user.

    Args:
        items: What to buy, one line per SKU.
        ship_to: Where to send the parcel.
        deliver_on: Wanted delivery day.
        priority: How urgent the order is.
        note: A note for the courier,
            written on the label.

    Returns:
        The new order.
    """
    return {"user": ctx.user_id, "items": items, "ship_to": ship_to, "deliver_on": deliver_on,
            "priority": priority, "note": note}


def schedule_callback(
    when: datetime,
    reference: int | str,
    channel: Literal["phone", "email"] = "phone",
    tags: list[str] | None = None,
    score: Annotated[float, Field(ge=0, le=1, description="Annotated text.")] = 0.5,
    title: Annotated[str, Field(max_length=40)] = "",
) -> dict:
    """Schedule a call back.

    Args:
        when: Date and time of the call.
        reference: Ticket number or order id.
    """
    return {"when": when, "reference": reference}


class TreeNode(BaseModel):
    label: str
    children: list["TreeNode"] = []


def count_nodes(root: TreeNode) -> int:
    """Count the nodes of a tree."""
    return 1 + sum(count_nodes(c) for c in root.children)


PLACE_ORDER_SCHEMA = {
    "type": "function",
    "function": {
        "name": "place_order",
        "description": "Place an order for the user.",
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "items": {
                    "description": "What to buy, one line per SKU.",
                    "items": {
                        "properties": {
                            "sku": {"description": "Stock keeping unit.", "pattern": "^SKU-\\d{3}$", "type": "string"},
                            "qty": {"default": 1, "maximum": 99, "minimum": 1, "type": "integer"},
                            "priority": {"anyOf": [{"enum": ["low", "normal", "high"], "type": "string"},
                                                   {"type": "null"}],
                                         "default": None},
                        },
                        "required": ["sku"],
                        "type": "object",
                    },
                    "maxItems": 10,
                    "minItems": 1,
                    "type": "array",
                },
                "ship_to": {
                    "properties": {
                        "street": {"description": "Street and number.", "minLength": 1, "type": "string"},
                        "postcode": {"pattern": "^\\d{5}$", "type": "string"},
                        "country": {"default": "US", "enum": ["US", "CN"], "type": "string"},
                    },
                    "required": ["street", "postcode"],
                    "type": "object",
                    "description": "Where to send the parcel.",
                },
                "deliver_on": {"description": "Wanted delivery day.", "format": "date", "type": "string"},
                "priority": {"enum": ["low", "normal", "high"], "type": "string", "default": "normal",
                             "description": "How urgent the order is."},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                         "description": "A note for the courier, written on the label."},
            },
            "required": ["items", "ship_to", "deliver_on"],
            "type": "object",
        },
    },
}

SCHEDULE_CALLBACK_SCHEMA = {
    "type": "function",
    "function": {
        "name": "schedule_callback",
        "description": "Schedule a call back.",
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "when": {"description": "Date and time of the call.", "format": "date-time", "type": "string"},
                "reference": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                              "description": "Ticket number or order id."},
                "channel": {"default": "phone", "enum": ["phone", "email"], "type": "string"},
                "tags": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                         "default": None},
                # no docstring entry: the Annotated Field's description is kept
                "score": {"default": 0.5, "description": "Annotated text.", "maximum": 1, "minimum": 0,
                          "type": "number"},
                # a property called "title" survives title stripping
                "title": {"default": "", "maxLength": 40, "type": "string"},
            },
            "required": ["when", "reference"],
            "type": "object",
        },
    },
}

LIST_MY_ORDERS_SCHEMA = {
    "type": "function",
    "function": {
        "name": "list_my_orders",
        "description": "List the user's own orders, newest first, optionally only one status. Use it when the "
                       "user asks\nabout \"my orders\", or refers to an order without giving its number. Do not "
                       "use it when you know the\norder number (use get_order_status).",
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "status": {"anyOf": [{"enum": ["pending", "shipped", "delivered", "cancelled"], "type": "string"},
                                     {"type": "null"}],
                           "default": None,
                           "description": "Only orders with this status: pending, shipped, delivered or "
                                          "cancelled; omit for all."},
                "limit": {"default": 10, "description": "Maximum number of orders to return (1-50).",
                          "maximum": 50, "minimum": 1, "type": "integer"},
            },
            "type": "object",
        },
    },
}


def _schema_keys(node) -> list[str]:
    """Every keyword used by the schema objects in ``node`` (property names are not keywords)."""
    if isinstance(node, list):
        return [k for v in node for k in _schema_keys(v)]
    if not isinstance(node, dict):
        return []
    found = list(node)
    for key, value in node.items():
        if key == "properties":
            found += [k for prop in value.values() for k in _schema_keys(prop)]
        elif key not in ("default", "enum"):
            found += _schema_keys(value)
    return found


# ------------------------------------------------------------------------------------------ snapshots


def test_nested_models_enums_lists_dates_constraints_snapshot():
    spec = ToolRegistry().register(place_order)
    assert spec.json_schema() == PLACE_ORDER_SCHEMA


def test_unions_literals_datetime_and_annotated_descriptions_snapshot():
    spec = ToolRegistry().register(schedule_callback)
    assert spec.json_schema() == SCHEDULE_CALLBACK_SCHEMA


def test_real_shop_tool_snapshot():
    assert ToolRegistry().register(list_my_orders).json_schema() == LIST_MY_ORDERS_SCHEMA


def test_schemas_are_self_contained_for_every_shop_tool():
    registry = ToolRegistry()
    for fn in SHOP_TOOLS:
        schema = registry.register(fn).json_schema()
        params = schema["function"]["parameters"]
        assert not {"$defs", "$ref", "title"} & set(_schema_keys(params))
        assert "ctx" not in params["properties"]  # the injected context never reaches the model
        assert schema["function"]["description"]


def test_inlined_schema_has_no_refs_and_no_titles():
    params = ToolRegistry().register(place_order).json_schema()["function"]["parameters"]
    assert not {"$defs", "$ref", "title"} & set(_schema_keys(params))


def test_recursive_model_keeps_its_defs():
    params = ToolRegistry().register(count_nodes).json_schema()["function"]["parameters"]
    assert params == {
        "$defs": {"TreeNode": {"properties": {"label": {"type": "string"},
                                              "children": {"default": [], "items": {"$ref": "#/$defs/TreeNode"},
                                                           "type": "array"}},
                               "required": ["label"], "type": "object"}},
        "additionalProperties": False,
        "properties": {"root": {"$ref": "#/$defs/TreeNode"}},
        "required": ["root"],
        "type": "object",
    }


def test_self_contained_schema_keeps_data_values_untouched():
    schema = {"$defs": {"A": {"title": "A", "type": "object", "properties": {"title": {"title": "T", "type": "string"}}}},
              "properties": {"a": {"$ref": "#/$defs/A", "default": {"title": "keep me"}}}}
    assert self_contained_schema(schema) == {
        "properties": {"a": {"type": "object", "properties": {"title": {"type": "string"}},
                             "default": {"title": "keep me"}}},
    }


def test_json_schema_returns_a_fresh_copy():
    spec = ToolRegistry().register(place_order)
    spec.json_schema()["function"]["parameters"]["properties"].clear()
    assert spec.json_schema() == PLACE_ORDER_SCHEMA


# ------------------------------------------------------------------------------------------- validation


def test_parse_gives_python_values_nested_models_and_dates():
    spec = ToolRegistry().register(place_order)
    args = spec.parse({"items": [{"sku": "SKU-001", "qty": 2, "priority": "high"}],
                       "ship_to": {"street": "1 Main St", "postcode": "12345"}, "deliver_on": "2026-11-03"})
    assert args["deliver_on"] == date(2026, 11, 3)
    assert isinstance(args["ship_to"], Address) and args["ship_to"].country == "US"
    assert args["items"][0].priority is Priority.HIGH and args["priority"] is Priority.NORMAL


@pytest.mark.parametrize("bad", [
    {"items": [], "ship_to": {"street": "x", "postcode": "12345"}, "deliver_on": "2026-11-03"},  # min_length
    {"items": [{"sku": "SKU-1"}], "ship_to": {"street": "x", "postcode": "12345"}, "deliver_on": "2026-11-03"},
    {"items": [{"sku": "SKU-001", "qty": 100}], "ship_to": {"street": "x", "postcode": "12345"},
     "deliver_on": "2026-11-03"},  # le
    {"items": [{"sku": "SKU-001"}], "ship_to": {"street": "x", "postcode": "1234"}, "deliver_on": "2026-11-03"},
    {"items": [{"sku": "SKU-001"}], "ship_to": {"street": "x", "postcode": "12345"}, "deliver_on": "soon"},
    {"items": [{"sku": "SKU-001"}], "ship_to": {"street": "x", "postcode": "12345"}, "deliver_on": "2026-11-03",
     "priority": "urgent"},  # not in the enum
    {"items": [{"sku": "SKU-001"}], "ship_to": {"street": "x", "postcode": "12345"}, "deliver_on": "2026-11-03",
     "ctx": "sneaky"},  # extra keys are refused, including the context's name
])
def test_parse_rejects_what_the_schema_forbids(bad):
    spec = ToolRegistry().register(place_order)
    with pytest.raises(pydantic.ValidationError):
        spec.parse(bad)


# ------------------------------------------------------------------------------------ kinds of tools


@tool
def lookup_sku(sku: str, qty: int = 1) -> str:
    """Look up a SKU in the warehouse.

    Args:
        sku: The SKU to look up.
        qty: How many are wanted.
    """
    return f"{sku} x{qty}: in stock"


@tool
async def lookup_sku_async(sku: str) -> str:
    """Look up a SKU, asynchronously."""
    await asyncio.sleep(0)
    return f"{sku}: in stock"


def test_langchain_tool_takes_name_description_and_args_schema():
    spec = ToolRegistry().register(lookup_sku, roles={"agent"})
    assert spec.json_schema() == {
        "type": "function",
        "function": {
            "name": "lookup_sku",
            "description": "Look up a SKU in the warehouse.",
            "parameters": {
                "additionalProperties": False,
                "properties": {"sku": {"type": "string", "description": "The SKU to look up."},
                               "qty": {"default": 1, "type": "integer", "description": "How many are wanted."}},
                "required": ["sku"],
                "type": "object",
            },
        },
    }
    assert spec.roles == frozenset({"agent"}) and not spec.wants_context and not spec.is_async
    assert spec.source is lookup_sku


def test_langchain_tools_run_through_invoke_and_ainvoke():
    registry = ToolRegistry()
    registry.register(lookup_sku)
    spec = registry.register(lookup_sku_async)
    assert spec.is_async
    executor = ToolExecutor(registry)
    sync = executor.run({"id": "c1", "name": "lookup_sku", "args": {"sku": "SKU-001", "qty": 2}}, CTX)
    async_ = executor.run({"id": "c2", "name": "lookup_sku_async", "args": {"sku": "SKU-002"}}, CTX)
    assert (sync.status, sync.result) == ("ok", "SKU-001 x2: in stock")
    assert (async_.status, async_.result) == ("ok", "SKU-002: in stock")
    bad = executor.run({"id": "c3", "name": "lookup_sku", "args": {"sku": "SKU-001", "colour": "red"}}, CTX)
    assert bad.error_type == "validation" and bad.error is not None and "colour" in bad.error


def test_langchain_tool_metadata_and_name_override():
    lookup = lookup_sku.model_copy(update={"metadata": {"changes_state": True, "timeout": 2.0}})
    spec = build_spec(lookup, name="warehouse_lookup")
    assert (spec.name, spec.changes_state, spec.timeout) == ("warehouse_lookup", True, 2.0)


async def fetch_rate(ctx: ToolContext, currency: Literal["USD", "CNY"]) -> dict:
    """Exchange rate of a currency.

    Args:
        currency: ISO code.
    """
    await asyncio.sleep(0)
    return {"currency": currency, "user": ctx.user_id}


def test_async_function_tool():
    registry = ToolRegistry()
    spec = registry.register(fetch_rate)
    assert spec.is_async and spec.wants_context
    assert spec.json_schema()["function"]["parameters"]["properties"] == {
        "currency": {"description": "ISO code.", "enum": ["USD", "CNY"], "type": "string"}}
    outcome = ToolExecutor(registry).run({"id": "r", "name": "fetch_rate", "args": {"currency": "CNY"}}, CTX)
    assert outcome.result == {"currency": "CNY", "user": "U001"}


def tagged(note: str, *, ctx: ToolContext) -> dict:
    """Echo a note with the user's id."""
    return {"note": note, "user": ctx.user_id}


def test_context_parameter_anywhere_is_injected_by_keyword():
    registry = ToolRegistry()
    spec = registry.register(tagged)
    assert spec.wants_context and spec.context_keyword == "ctx"
    assert list(spec.json_schema()["function"]["parameters"]["properties"]) == ["note"]
    outcome = ToolExecutor(registry).run({"id": "k", "name": "tagged", "args": {"note": "hi"}}, CTX)
    assert outcome.result == {"note": "hi", "user": "U001"}


class QuotaBackend:
    """Class docstring: not what the model should read."""

    async def __call__(self, query: str) -> dict:
        """Search the partner catalogue.

        Args:
            query: Words to look for.
        """
        return {"query": query}


def test_callable_object_uses_its_call_docstring_and_may_be_async():
    registry = ToolRegistry()
    spec = registry.register(QuotaBackend(), name="partner_search")
    assert spec.is_async and spec.description == "Search the partner catalogue."
    assert spec.json_schema()["function"]["parameters"]["properties"] == {
        "query": {"description": "Words to look for.", "type": "string"}}
    outcome = ToolExecutor(registry).run({"id": "q", "name": "partner_search", "args": {"query": "tea"}}, CTX)
    assert outcome.result == {"query": "tea"}


def test_description_override_and_docstring_sections():
    def helper(x: int) -> int:
        """First line
        wraps here.

        Second paragraph:
        - a bullet stays on its line

        Args:
            x: A number.

        Raises:
            ValueError: never.
        """
        return x

    # the text is kept as written (only Google section names end it): the tool JSON must not drift
    assert build_spec(helper).description == (
        "First line\nwraps here.\n\nSecond paragraph:\n- a bullet stays on its line")
    assert build_spec(helper).json_schema()["function"]["parameters"]["properties"]["x"] == {
        "description": "A number.", "type": "integer"}
    assert build_spec(helper, description="Custom.").description == "Custom."


def test_signature_pydantic_cannot_describe_fails_at_registration():
    class Opaque:
        pass

    def uses_opaque(thing: Opaque) -> None:
        """Nope."""

    with pytest.raises(UsageError, match="uses_opaque"):
        ToolRegistry().register(uses_opaque)


# ------------------------------------------------------------------------------------------- metadata


def test_metadata_from_keywords_attributes_and_decorator():
    @tool_meta(changes_state=True, idempotent=False, timeout=3, roles={"agent"}, phases={"action", "collect"},
               fallback="other")
    def refund(order_id: str) -> dict:
        """Refund an order."""
        return {}

    spec = ToolRegistry().register(refund)
    assert (spec.changes_state, spec.idempotent, spec.timeout, spec.fallback) == (True, False, 3, "other")
    assert spec.roles == frozenset({"agent"}) and spec.phases == frozenset({"action", "collect"})
    # keywords win over what the function carries
    spec = ToolRegistry().register(refund, roles="admin", phases=None, timeout=None)
    assert spec.roles == frozenset({"admin"}) and spec.phases is None and spec.timeout is None
    with pytest.raises(UsageError, match="unknown tool metadata"):
        ToolRegistry().register(refund, retries=3)


def test_shop_changing_tools_are_marked():
    registry = ToolRegistry()
    specs = [registry.register(fn) for fn in SHOP_TOOLS]
    changing = {s.name for s in specs if s.changes_state}
    assert changing == {"cancel_order", "request_return", "claim_coupon", "file_complaint", "transfer_to_human"}
    assert all(s.timeout == 10.0 and s.phases == frozenset({"action"}) for s in specs)


# --------------------------------------------------------------------------------------------- masking


def _masking_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(lookup_sku)  # every role, action phase only (the default)
    registry.register(schedule_callback, roles={"agent", "admin"}, phases={"action", "collect"})
    registry.register(list_my_orders, roles={"customer", "vip"})
    registry.register(count_nodes, phases=None)  # every phase
    return registry


@pytest.mark.parametrize(("role", "phase", "expected"), [
    ("customer", "action", ["lookup_sku", "list_my_orders", "count_nodes"]),
    ("vip", "collect", ["count_nodes"]),
    ("agent", "action", ["lookup_sku", "schedule_callback", "count_nodes"]),
    ("agent", "collect", ["schedule_callback", "count_nodes"]),
    ("admin", "reply", ["count_nodes"]),
])
def test_offer_masks_by_role_and_phase(role, phase, expected):
    offered = _masking_registry().offer(None, role, phase)
    assert [s.name for s in offered] == expected


def test_offer_keeps_the_requested_order_and_skips_unknown_names():
    registry = _masking_registry()
    offered = registry.offer(["count_nodes", "nope", "lookup_sku", "schedule_callback"], "customer")
    assert [s.name for s in offered] == ["count_nodes", "lookup_sku"]


def test_tools_added_and_removed_between_offers():
    registry = _masking_registry()
    names = ["lookup_sku", "fetch_rate"]
    assert [s.name for s in registry.offer(names, "customer")] == ["lookup_sku"]
    registry.register(fetch_rate)
    assert [s.name for s in registry.offer(names, "customer")] == ["lookup_sku", "fetch_rate"]
    removed = registry.remove("lookup_sku")
    assert removed is not None and removed.name == "lookup_sku"
    assert registry.remove("lookup_sku") is None
    assert [s.name for s in registry.offer(names, "customer")] == ["fetch_rate"]
    assert "lookup_sku" not in registry and len(registry) == 4


def test_registry_changes_while_other_threads_offer():
    registry = _masking_registry()
    specs = [build_spec(lookup_sku, name=f"extra_{i}") for i in range(20)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                offered = registry.offer(None, "customer")
                assert {"list_my_orders", "count_nodes"} <= {s.name for s in offered}
                assert all(s.allowed_for("customer", "action") for s in offered)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    readers = [threading.Thread(target=reader) for _ in range(4)]
    for t in readers:
        t.start()
    try:
        for _ in range(50):
            for spec in specs:
                registry.add(spec)
            for spec in specs:
                registry.remove(spec.name)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors
    assert sorted(registry.names()) == ["count_nodes", "list_my_orders", "lookup_sku", "schedule_callback"]


def test_executor_sees_tools_registered_after_it_was_built():
    registry = ToolRegistry()
    executor = ToolExecutor(registry)
    call = {"id": "x", "name": "tagged", "args": {"note": "n"}}
    assert executor.run(call, CTX).error_type == "validation"
    registry.register(tagged)
    assert executor.run(call, CTX).status == "ok"
