"""Text tool calls (``tools.textcalls``): both forms, robustness to garbled text, clear errors, properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lg_harness.tools.textcalls import (
    EXPECTED_CALL,
    EXPECTED_JSON,
    INVISIBLE_CHARS,
    ParsedCall,
    TextCallParseError,
    format_tool_call_instructions,
    has_tool_call,
    parse_tool_calls,
    strip_invisible,
)

INVISIBLES = sorted(INVISIBLE_CHARS)
SHOP_TOOLS = ["get_order_status", "cancel_order", "search_products"]


def one(text: str, **kwargs) -> ParsedCall:
    calls = parse_tool_calls(text, **kwargs)
    assert len(calls) == 1, calls
    return calls[0]


def parse_error(text: str, **kwargs) -> str:
    with pytest.raises(TextCallParseError) as info:
        parse_tool_calls(text, **kwargs)
    return str(info.value)


# --- the TOOL: form -------------------------------------------------------------------------------------


def test_call_form_with_every_value_kind():
    call = one('TOOL: f(k="v", n=3, flag=true, x=null, f=1.5, lst=["a", 2], obj={"a": [1, {"b": false}]})')
    assert call == ParsedCall(
        "f",
        {"k": "v", "n": 3, "flag": True, "x": None, "f": 1.5, "lst": ["a", 2], "obj": {"a": [1, {"b": False}]}},
        'TOOL: f(k="v", n=3, flag=true, x=null, f=1.5, lst=["a", 2], obj={"a": [1, {"b": false}]})',
        "call",
    )
    assert type(call.args["n"]) is int and type(call.args["f"]) is float


def test_python_spellings_and_single_quotes():
    call = one("TOOL: f(a=True, b=False, c=None, d='single', e=-2, g=1e3, h=-0.5)")
    assert call.args == {"a": True, "b": False, "c": None, "d": "single", "e": -2, "g": 1000.0, "h": -0.5}


def test_backslash_escapes_in_both_quote_styles():
    call = one(r"""TOOL: f(a="say \"hi\"\n", b='it\'s', c="tab\tback\\slash", d="\u00e9\ud83d\ude00", e="\x41")""")
    assert call.args == {"a": 'say "hi"\n', "b": "it's", "c": "tab\tback\\slash", "d": "é😀", "e": "A"}


def test_no_arguments():
    assert one("TOOL: list_my_orders()").args == {}


def test_commas_and_parentheses_inside_quotes_do_not_split():
    call = one('TOOL: search_products(query="cable (USB-C), 2m, white)", note=\'a,b)(c\')')
    assert call.args == {"query": "cable (USB-C), 2m, white)", "note": "a,b)(c"}


def test_prose_around_the_call_is_ignored():
    call = one('Sure! Let me check. TOOL: get_order_status(order_id="ORD-10001") Hope that helps')
    assert call.name == "get_order_status"
    assert call.args == {"order_id": "ORD-10001"}
    assert call.raw == 'TOOL: get_order_status(order_id="ORD-10001")'


def test_several_calls_on_lines_and_back_to_back():
    text = 'I will do both.\nTOOL: a(x=1)\nTOOL: b(y="2")TOOL: c() and TOOL: d(z=[])\nDone.'
    assert [(c.name, c.args) for c in parse_tool_calls(text)] == [
        ("a", {"x": 1}), ("b", {"y": "2"}), ("c", {}), ("d", {"z": []}),
    ]


@pytest.mark.parametrize("text", [
    'tool: get_order_status(order_id="ORD-10001")',
    'Tool: get_order_status(order_id="ORD-10001")',
    '**TOOL:** get_order_status(order_id="ORD-10001")',
    '**TOOL**: get_order_status(order_id="ORD-10001")',
    '- TOOL: get_order_status(order_id="ORD-10001")',
    '   TOOL:   `get_order_status(order_id="ORD-10001")`',
    '> TOOL :get_order_status (order_id = "ORD-10001",)',
    '好的，我来查一下。TOOL: get_order_status(order_id="ORD-10001")',
])
def test_marker_is_case_insensitive_and_tolerates_markdown(text):
    call = one(text)
    assert (call.name, call.args, call.form) == ("get_order_status", {"order_id": "ORD-10001"}, "call")


def test_lowercase_tool_colon_in_prose_is_not_a_call():
    assert parse_tool_calls("The right tool: a soft brush. Use it gently.") == []
    assert not has_tool_call("The right tool: a soft brush.")


def test_text_without_a_call_returns_nothing():
    assert parse_tool_calls("Your order ORD-10001 has shipped (tracking SF123).") == []
    assert parse_tool_calls("") == []


# --- the JSON forms -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    '{"tool": "get_order_status", "arguments": {"order_id": "ORD-10001"}}',
    '{"name": "get_order_status", "arguments": {"order_id": "ORD-10001"}}',
    '{"name": "get_order_status", "args": {"order_id": "ORD-10001"}}',
    '{"name": "get_order_status", "parameters": {"order_id": "ORD-10001"}}',
    '{"name": "get_order_status", "arguments": "{\\"order_id\\": \\"ORD-10001\\"}"}',
    '{"type": "function", "function": {"name": "get_order_status", "arguments": "{\\"order_id\\": \\"ORD-10001\\"}"}}',
    "{'tool': 'get_order_status', 'arguments': {'order_id': 'ORD-10001'}}",
    'Checking now.\n```json\n{"tool": "get_order_status", "arguments": {"order_id": "ORD-10001"}}\n```\nOne moment.',
    'TOOL: {"tool": "get_order_status", "arguments": {"order_id": "ORD-10001"}}',
])
def test_json_forms(text):
    call = one(text)
    assert (call.name, call.args, call.form) == ("get_order_status", {"order_id": "ORD-10001"}, "json")


def test_json_list_of_calls_in_a_fence():
    text = ('```json\n[{"tool": "get_order_status", "arguments": {"order_id": "ORD-10001"}},\n'
            ' {"name": "search_products", "args": {"query": "耳机", "max_results": 3}}]\n```')
    assert [(c.name, c.args) for c in parse_tool_calls(text)] == [
        ("get_order_status", {"order_id": "ORD-10001"}),
        ("search_products", {"query": "耳机", "max_results": 3}),
    ]


def test_json_tool_without_arguments_and_empty_argument_string():
    assert one('{"tool": "list_coupons"}').args == {}
    assert one('{"name": "list_coupons", "arguments": ""}').args == {}


def test_ordinary_json_data_is_not_a_call():
    assert parse_tool_calls('{"name": "Bob", "age": 3}') == []
    assert parse_tool_calls('{"tool": "hammer", "price": 12.5, "in_stock": true}') == []
    schema = {"name": "get_order_status", "description": "Get an order.",
              "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}
    assert parse_tool_calls(json.dumps(schema)) == []


def test_both_forms_in_one_text_keep_their_order():
    text = '{"tool": "a", "arguments": {}} then TOOL: b(x=1) then {"tool": "c", "arguments": {"y": 2}}'
    assert [(c.name, c.form) for c in parse_tool_calls(text)] == [("a", "json"), ("b", "call"), ("c", "json")]


# --- robustness -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", INVISIBLES)
def test_each_invisible_character_is_removed_from_names_keys_and_values(char):
    text = f'{char}TO{char}OL{char}: get_{char}order_status{char}({char}order{char}_id{char}="ORD-{char}10001{char}")'
    call = one(text)
    assert (call.name, call.args) == ("get_order_status", {"order_id": "ORD-10001"})


def test_bom_and_bidi_controls_around_a_json_call():
    text = '\ufeff\u202e{"tool": "get_\u200border_status", "arguments": {"order_\u00adid": "ORD-\u206610001\u2069"}}'
    assert (one(text).name, one(text).args) == ("get_order_status", {"order_id": "ORD-10001"})


def test_escaped_invisible_characters_in_values_are_removed_too():
    call = one(r'TOOL: get_order_status(order_id="ORD-\u200b10001\ufeff")')
    assert call.args == {"order_id": "ORD-10001"}


@pytest.mark.parametrize("text", [
    "TOOL: get_order_status(order_id=“ORD-10001”)",
    "TOOL: get_order_status(order_id=”ORD-10001”)",
    "TOOL: get_order_status(order_id=‘ORD-10001’)",
    "TOOL: get_order_status(order_id=«ORD-10001»)",
    "TOOL: get_order_status(order_id=「ORD-10001」)",
    "TOOL: get_order_status(order_id=＂ORD-10001＂)",
    "TOOL：get_order_status（order_id＝“ORD-10001”）",
    "tool：get_order_status（order_id：‘ORD-10001’）",
])
def test_smart_and_full_width_quotes_and_punctuation(text):
    call = one(text)
    assert (call.name, call.args) == ("get_order_status", {"order_id": "ORD-10001"})


def test_full_width_comma_separates_but_stays_inside_strings():
    call = one("TOOL：search_products（query＝“蓝牙耳机，降噪（黑色）”， max_results＝３）")
    assert call.args == {"query": "蓝牙耳机，降噪（黑色）", "max_results": 3}


def test_smart_quotes_inside_ascii_strings_are_content():
    call = one('TOOL: f(note="he said “hi” and ‘bye’", x=1)')
    assert call.args == {"note": "he said “hi” and ‘bye’", "x": 1}


def test_typographic_apostrophe_inside_smart_quoted_string():
    assert one("TOOL: f(note=‘Bob’s order’, n=1)").args == {"note": "Bob’s order", "n": 1}


def test_smart_quoted_json_call():
    call = one("{“tool”： “get_order_status”， “arguments”： {“order_id”： “ORD-10001”}}")
    assert (call.name, call.args) == ("get_order_status", {"order_id": "ORD-10001"})


# --- errors ---------------------------------------------------------------------------------------------


def test_unterminated_string_message_names_problem_place_and_form():
    message = parse_error('TOOL: cancel_order(order_id="ORD-1')
    assert message.startswith('unterminated string in TOOL: cancel_order(order_id="ORD-1')
    assert "at column 29" in message
    assert message.endswith(f"expected {EXPECTED_CALL}")


@pytest.mark.parametrize(("text", "problem"), [
    ('TOOL: cancel_order(order_id="ORD-10001"', "unbalanced parentheses: missing ')'"),
    ('TOOL: cancel_order("ORD-10001")', "positional argument"),
    ("TOOL: cancel_order(ORD)", "positional argument"),
    ("TOOL: cancel_order(order_id=ORD-10001)", "bad value 'ORD-10001'"),
    ('TOOL: cancel_order(order_id="ORD-1" reason="x")', "expected ',' or ')' after argument 'order_id'"),
    ("TOOL: cancel_order(n=1, n=2)", "duplicate argument 'n'"),
    ("TOOL: cancel_order(x=[1, 2)", "expected ',' or ']' in list"),
    ("TOOL: cancel_order(x={'a' 1})", "expected ':' after key 'a'"),
    ("TOOL: cancel_order(x=)", "missing value"),
    ('TOOL: cancel_order(x="\\u12")', "bad escape"),
    ("TOOL: cancel_order(x=1e999)", "number out of range"),
    ("TOOL: cancel_order", "missing '(' after tool name cancel_order"),
    ("TOOL: 42", "missing tool name after TOOL:"),
    ("TOOL: f(x=" + "[" * 100 + "]" * 100 + ")", "nested too deeply"),
])
def test_malformed_calls_raise_with_the_problem(text, problem):
    message = parse_error(text)
    assert problem in message
    assert f"expected {EXPECTED_CALL}" in message


def test_error_reports_line_and_column_for_later_lines():
    message = parse_error('Let me look.\nTOOL: get_order_status(order_id="ORD-10001" x=1)')
    assert "at line 2, column 45" in message


@pytest.mark.parametrize(("text", "problem"), [
    ('{"tool": "a", "arguments": [1, 2]}', "arguments of a must be an object, got list"),
    ('{"tool": "a", "arguments": "{not json"}', "arguments of a are not valid JSON"),
    ('{"tool": "a", "arguments": "{} trailing"}', "text after the object"),
    ('{"tool": "a b", "arguments": {}}', "invalid tool name 'a b'"),
    ('{"tool": "a", "arguments": {"x": }}', "missing value"),
    ('{"name": "a", "arguments": {"x": 1}', "unterminated object"),
    ('TOOL: {"city": "Paris"}', "not a tool call object"),
])
def test_malformed_json_calls_raise_with_the_problem(text, problem):
    message = parse_error(text)
    assert problem in message
    assert f"expected {EXPECTED_JSON}" in message


def test_unknown_tool_lists_the_known_ones():
    message = parse_error('TOOL: refund_everything(order_id="ORD-1")', known_tools=SHOP_TOOLS)
    assert "unknown tool 'refund_everything'" in message
    assert "known tools: cancel_order, get_order_status, search_products" in message
    assert one('TOOL: cancel_order(order_id="ORD-1")', known_tools=SHOP_TOOLS).name == "cancel_order"


def test_unknown_tool_in_json_form():
    message = parse_error('{"tool": "rm_rf", "arguments": {}}', known_tools=SHOP_TOOLS)
    assert "unknown tool 'rm_rf'" in message and "get_order_status" in message


def test_error_is_a_value_error():
    assert issubclass(TextCallParseError, ValueError)


# --- detection and instructions -------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ('TOOL: get_order_status(order_id="ORD-1")', True),
    ("\u200bT\u200bOOL: x(", True),
    ("TOOL: ", True),
    ('```json\n{"tool": "x", "arguments": {}}\n```', True),
    ('{"name": "x", "arguments": {}}', True),
    ("Your order has shipped.", False),
    ('{"name": "Bob"}', False),
    ("a good tool: pliers", False),
])
def test_has_tool_call(text, expected):
    assert has_tool_call(text) is expected


SCHEMAS = [
    {"type": "function", "function": {
        "name": "get_order_status",
        "description": "Get the status of one order.\nUse it when you know the order number.",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["order_id"], "properties": {
            "order_id": {"type": "string", "pattern": "^ORD-\\d{5}$", "description": "The order number."}}}}},
    {"type": "function", "function": {
        "name": "list_my_orders",
        "description": "List the user's orders.",
        "parameters": {"type": "object", "properties": {
            "status": {"anyOf": [{"enum": ["pending", "shipped"], "type": "string"}, {"type": "null"}],
                       "default": None, "description": "Only this status."},
            "limit": {"type": "integer", "default": 10}}}}},
    {"name": "search_products", "description": "Search the catalogue.",
     "parameters": {"type": "object", "required": ["query", "max_results"], "properties": {
         "query": {"type": "string"}, "max_results": {"type": "integer"},
         "tags": {"type": "array", "items": {"type": "string"}}}}},
]


def test_instructions_list_tools_descriptions_and_argument_types():
    text = format_tool_call_instructions(SCHEMAS)
    assert EXPECTED_CALL in text
    assert "- get_order_status: Get the status of one order. Use it when you know the order number." in text
    assert "order_id (string matching ^ORD-\\d{5}$, required): The order number." in text
    assert 'status ("pending" | "shipped" or null, optional, default null): Only this status.' in text
    assert "limit (integer, optional, default 10)" in text
    assert "tags (list of string, optional)" in text
    assert "keyword" in text.lower() or "name every argument" in text.lower()


def test_instruction_examples_parse_back_to_the_tools():
    text = format_tool_call_instructions(SCHEMAS)
    examples = [line.split("example: ", 1)[1] for line in text.splitlines() if "example: " in line]
    calls = [one(example, known_tools=["get_order_status", "list_my_orders", "search_products"])
             for example in examples]
    assert [(c.name, sorted(c.args)) for c in calls] == [
        ("get_order_status", ["order_id"]), ("list_my_orders", []), ("search_products", ["max_results", "query"]),
    ]


def test_instructions_without_tools():
    assert "No tools" in format_tool_call_instructions([])


# --- properties -----------------------------------------------------------------------------------------

identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)
visible_text = st.text(alphabet=st.characters(exclude_characters=INVISIBLE_CHARS, exclude_categories=("Cs",)))
values = st.one_of(
    visible_text,
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
arg_dicts = st.dictionaries(identifiers, values, max_size=5)
# Prose may hold anything (invisible characters too) but no call marker of its own.
prose = st.text(max_size=40).filter(lambda s: "tool" not in strip_invisible(s).lower())
gaps = st.text(alphabet=st.sampled_from(INVISIBLES), max_size=2)
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def sprinkled(draw, text: str) -> str:
    """``text`` with invisible characters inserted at random places."""
    spots = draw(st.lists(st.tuples(st.integers(0, len(text)), st.sampled_from(INVISIBLES)), max_size=8))
    chars = list(text)
    for spot, char in sorted(spots, reverse=True):
        chars.insert(spot, char)
    return "".join(chars)


@st.composite
def call_texts(draw) -> tuple[str, str, dict]:
    name, args = draw(identifiers), draw(arg_dicts)
    ascii_only = draw(st.booleans())
    parts = [f"{draw(gaps)}{k}{draw(gaps)}={draw(gaps)}{json.dumps(v, ensure_ascii=ascii_only)}{draw(gaps)}"
             for k, v in args.items()]
    call = f"TOOL:{draw(gaps)} {name}{draw(gaps)}({','.join(parts)})"
    before = draw(st.sampled_from([" ", "\n", "\n\n", " - ", "\n**", "。", ": "]))
    after = draw(st.sampled_from([" ", "\n", "", "** "]))
    text = draw(prose) + before + draw(sprinkled(call)) + after + draw(prose)
    return text, name, args


@st.composite
def json_call_texts(draw) -> tuple[str, str, dict]:
    name, args = draw(identifiers), draw(arg_dicts)
    args_key = draw(st.sampled_from(["arguments", "args", "parameters"]))
    arguments = json.dumps(args) if draw(st.booleans()) else args
    obj = {draw(st.sampled_from(["tool", "name"])): name, args_key: arguments}
    payload = json.dumps(obj, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 2])))
    shape = draw(st.sampled_from(["bare", "list", "fence"]))
    if shape == "list":
        payload = f"[{payload}]"
    elif shape == "fence":
        payload = f"```json\n{payload}\n```"
    text = draw(prose) + "\n" + draw(sprinkled(payload)) + "\n" + draw(prose)
    return text, name, args


def assert_same_args(parsed: dict, expected: dict) -> None:
    assert parsed == expected
    assert {k: type(v) for k, v in parsed.items()} == {k: type(v) for k, v in expected.items()}


@PROPERTY_SETTINGS
@given(call_texts())
def test_property_call_form_round_trips(case):
    text, name, args = case
    calls = parse_tool_calls(text, known_tools=[name])
    assert [(c.name, c.form) for c in calls] == [(name, "call")]
    assert_same_args(calls[0].args, args)
    assert has_tool_call(text)


@PROPERTY_SETTINGS
@given(json_call_texts())
def test_property_json_form_round_trips(case):
    text, name, args = case
    calls = parse_tool_calls(text, known_tools=[name])
    assert [(c.name, c.form) for c in calls] == [(name, "json")]
    assert_same_args(calls[0].args, args)
    assert has_tool_call(text)


call_alphabet = st.sampled_from(list("TOOLtool: (),=\"'[]{}\\-.0123456789abcxyz_\n“”‘’（），：«»") + INVISIBLES)
arbitrary = st.one_of(
    st.text(),
    st.text(alphabet=call_alphabet),
    st.builds(lambda s: "TOOL: f(" + s, st.text(alphabet=call_alphabet)),
    st.builds(lambda s: '{"tool": "f", "arguments": ' + s, st.text(alphabet=call_alphabet)),
)


@PROPERTY_SETTINGS
@given(arbitrary)
def test_property_parse_never_crashes(text):
    try:
        calls = parse_tool_calls(text)
    except TextCallParseError as exc:
        assert "expected" in str(exc)
        return
    assert all(isinstance(c, ParsedCall) for c in calls)
    if calls:
        assert has_tool_call(text)
