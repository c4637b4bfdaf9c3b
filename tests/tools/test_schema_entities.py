"""Entity types from the tools' own schemas: a domain of tools alone knows which arguments are identifiers.

Issue 26: the id patterns were in the schemas, yet without hand-written entity types no argument was tied to
an id; and where declared patterns overlapped (a payment id also matches a loose user-id pattern) the order
of declaration decided the label. Now the schema gives the type, a declared type refines it, and the
argument's name and description decide between overlapping ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from lg_harness import Domain, EntityType
from lg_harness.tools.entities import derived_type, entity_args
from tests.fixtures import retail_domain

RETAIL_IDS = {
    "cancel_pending_order": {"order_id": "order"},
    "exchange_delivered_order_items": {"order_id": "order", "item_ids": "item", "new_item_ids": "item",
                                       "payment_method_id": "payment_method"},
    "get_order_details": {"order_id": "order"}, "get_product_details": {"product_id": "product"},
    "get_user_details": {"user_id": "user"}, "modify_pending_order_address": {"order_id": "order"},
    "modify_pending_order_items": {"order_id": "order", "item_ids": "item", "new_item_ids": "item",
                                   "payment_method_id": "payment_method"},
    "modify_pending_order_payment": {"order_id": "order", "payment_method_id": "payment_method"},
    "modify_user_address": {"user_id": "user"},
    "return_delivered_order_items": {"order_id": "order", "item_ids": "item", "payment_method_id": "payment_method"},
}


def labels(domain: Domain) -> dict[str, dict[str, str]]:
    registry = domain.registry()
    labelled = {}
    for name in registry.names():
        spec = registry.get(name)
        assert spec is not None, name
        if found := domain.tool_entities(spec):
            labelled[name] = found
    return labelled


def derived(argument: str, prop: dict[str, Any]) -> EntityType:
    """The entity type of an argument whose schema names an identifier."""
    found = derived_type(argument, prop)
    assert found is not None, argument
    return found


def test_a_domain_of_tools_alone_ties_every_identifier_argument():
    assert labels(retail_domain.DOMAIN) == RETAIL_IDS
    derived = {t.name: t.pattern for t in retail_domain.DOMAIN.all_entity_types()}
    assert derived["order"] == r"#W\d{7}" and derived["payment_method"] == r"(credit_card|paypal|gift_card)_\d{7}"
    assert [t.find("my order #W2378156, thanks") for t in retail_domain.DOMAIN.all_entity_types()
            if t.name == "order"] == [["#W2378156"]]


def test_overlapping_declared_types_are_told_apart_by_the_argument_not_the_order():
    declared = retail_domain.DECLARED
    reversed_order = dataclasses.replace(declared, entity_types=tuple(reversed(declared.entity_types)))
    expected = {tool: {arg: ("payment" if t == "payment_method" else t) for arg, t in args.items()}
                for tool, args in RETAIL_IDS.items()}
    # the payment example matches the user-id pattern; product ids look like item ids: both orders agree
    assert labels(declared) == expected == labels(reversed_order)


def test_schemas_without_patterns_still_name_identifiers():
    assert derived("order_id", {"type": "string", "description": "The order"}).name == "order"
    assert derived("ticket", {"type": "string", "format": "uuid"}).name == "ticket"
    assert derived("new_item_ids", {"type": "array", "items": {"type": "string", "pattern": r"^\d{10}$"}}
                   ).name == "item"
    optional = {"anyOf": [{"type": "string", "pattern": "^ORD-\\d{5}$"}, {"type": "null"}],
                "description": "The order, e.g. ORD-10042."}
    found = derived("order_id", optional)
    assert found.pattern == r"ORD-\d{5}" and found.examples == ("ORD-10042",)
    for plain in ({"type": "string"}, {"type": "string", "enum": ["a", "b"]}, {"type": "integer"}):
        assert derived_type("reason", plain) is None
    assert derived_type("status_code", {"type": "string", "enum": ["x"]}) is None  # an enum is no identifier


def test_a_declared_type_refines_the_derived_one():
    book = EntityType("book", r"BOOK-(\d{4})", canonical="BOOK-{0}", examples=("BOOK-0042",), slot="book_id")
    schema = {"properties": {"book_id": {"type": "string", "pattern": r"^BOOK-\d{4}$"},
                             "book_ref": {"type": "string"}, "isbn": {"type": "string", "pattern": r"^\d{13}$"}}}
    assert entity_args({}, schema, [book]) == {"book_id": "book", "book_ref": "book", "isbn": "isbn"}
