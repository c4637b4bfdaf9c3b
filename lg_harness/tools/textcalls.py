"""Text tool calls: how a model without native tool calling asks for a tool in plain text.

Two forms are accepted anywhere in a reply; prose around them is ignored:

* ``TOOL: name(key="value", n=3, flag=true, x=null, lst=["a", 2])`` -- keyword arguments only. Every call
  is introduced by its own ``TOOL:`` (one per line, or several back to back). ``TOOL:`` is case-insensitive
  and may carry markdown around it (``**TOOL:**``, ``- TOOL:``).
* JSON: ``{"tool": "name", "arguments": {...}}`` (also ``"name"`` with ``"arguments"``, ``"args"`` or
  ``"parameters"``), a list of such objects, a ```` ```json ```` fenced block, or ``TOOL: {...}``.

Small and quantised models garble punctuation, so the scanner is forgiving where intent is unambiguous:
invisible characters (zero-width, bidi controls, BOM, soft hyphen) are removed everywhere, smart and
full-width quotes delimit strings, full-width ``（ ） ， ：`` act as their ASCII forms outside strings. Where
intent is not clear (a positional argument, an unquoted word, a missing parenthesis) it raises
``TextCallParseError`` whose message names the problem, where it is, and the expected form, so the harness can
hand it back to the model as a repair hint. Values are read by a hand-written scanner; nothing is evaluated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "EXPECTED_CALL",
    "EXPECTED_JSON",
    "INVISIBLE_CHARS",
    "ParsedCall",
    "TextCallParseError",
    "format_tool_call_instructions",
    "has_tool_call",
    "parse_tool_calls",
    "strip_invisible",
]

EXPECTED_CALL = 'TOOL: name(key="value", n=3)'
EXPECTED_JSON = '{"tool": "name", "arguments": {"key": "value"}}'


def _char_range(first: int, last: int) -> str:
    return "".join(map(chr, range(first, last + 1)))


INVISIBLE_CHARS = frozenset(
    "\u00ad\ufeff"  # soft hyphen, BOM / zero-width no-break space
    + _char_range(0x200B, 0x200F)  # zero-width space/joiners, LRM, RLM
    + _char_range(0x2060, 0x2064)  # word joiner, invisible operators
    + _char_range(0x202A, 0x202E)  # bidi embeddings and overrides
    + _char_range(0x2066, 0x2069)  # bidi isolates
)
_INVISIBLE_TABLE = dict.fromkeys(map(ord, INVISIBLE_CHARS))

# Outside strings, full-width punctuation from CJK keyboards means its ASCII twin.
_STRUCTURAL = {"（": "(", "）": ")", "，": ",", "、": ",", "：": ":", "；": ";", "＝": "=",
               "［": "[", "］": "]", "｛": "{", "｝": "}"}
_DOUBLE_QUOTES = '"“”„«»＂'
_SINGLE_QUOTES = "'‘’‚＇"
# An ASCII quote closes only on itself (so text written by json.dumps round-trips exactly). Typographic
# quotes come in sloppy pairs, so any quote of the same family closes them.
_CLOSERS = {'"': '"', "'": "'", "「": "」", "『": "』"}
_CLOSERS.update(dict.fromkeys(_DOUBLE_QUOTES[1:], _DOUBLE_QUOTES))
_CLOSERS.update(dict.fromkeys(_SINGLE_QUOTES[1:], _SINGLE_QUOTES))
_AFTER_VALUE = set(",)]}:;=")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0", "a": "\a",
            "\\": "\\", "/": "/", '"': '"', "'": "'"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_LITERALS = {"true": True, "false": False, "null": None, "none": None}
_MAX_DEPTH = 64

_QUOTE_CLASS = "[" + re.escape("".join(sorted(set(_CLOSERS) | set("".join(_CLOSERS.values()))))) + "]"
_MARKER_RE = re.compile(r"(?<![A-Za-z0-9])(TOOL)[ \t*]*[:：]", re.IGNORECASE)
_STRICT_MARKER_RE = re.compile(r"(?<![A-Za-z0-9])TOOL[ \t*]*[:：]")
_MARKUP_RE = re.compile(r"[\s*`~]*")
_NAME_RE = re.compile(r"[^\W\d][\w.-]*")
_KEY_RE = re.compile(r"[^\W\d]\w*")
_WORD_RE = re.compile(r"[^\s,)\]}:;=，）］｝：；＝]{1,40}")
_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_INT_RE = re.compile(r"[-+]?\d+")
_CALL_START_RE = re.compile(_MARKER_RE.pattern + r"[\s*`~]*(?:[^\W\d][\w.-]*\s*[(（]|[{｛\[［])", re.IGNORECASE)
_OBJECT_START_RE = re.compile(r"[{｛]")


def _key_re(names: str) -> re.Pattern[str]:
    """A JSON key written quoted (any quote style) or bare right after '{' or ','."""
    return re.compile(rf"(?:{_QUOTE_CLASS}(?:{names}){_QUOTE_CLASS}|[{{,｛，]\s*(?:{names}))\s*[:：]")


_TOOL_KEY_RE = _key_re("tool")
_NAME_KEY_RE = _key_re("name|function")
_ARGS_KEY_RE = _key_re("arguments|args|parameters")
_FIRST_KEY_RE = re.compile(r"[{｛]\s*" + _QUOTE_CLASS + r"(tool|name|function)" + _QUOTE_CLASS + r"\s*[:：]")
_ARGS_KEYS = ("arguments", "args", "parameters")
_BARE_CALL_KEYS = {"tool", "name", "id", "type"}


class TextCallParseError(ValueError):
    """A text tool call is malformed; the message says what is wrong, where, and the expected form."""


@dataclass(frozen=True)
class ParsedCall:
    """One tool call read from model text.

    Attributes:
        name: The tool name, cleaned of invisible characters.
        args: Keyword arguments with their decoded values.
        raw: The call as written (after invisible characters were removed).
        form: ``"call"`` for ``TOOL: name(...)``, ``"json"`` for the JSON forms.
    """

    name: str
    args: dict[str, Any] = field(hash=False)
    raw: str = ""
    form: Literal["call", "json"] = "call"


def strip_invisible(text: str) -> str:
    """Remove zero-width characters, bidi controls, BOM and soft hyphens.

    Args:
        text: Any text.

    Returns:
        The text without the characters in ``INVISIBLE_CHARS``.
    """
    return text.translate(_INVISIBLE_TABLE)


class _Fail(Exception):
    """A syntax problem at a position; turned into a TextCallParseError with context by the caller."""

    def __init__(self, problem: str, pos: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.pos = pos


def _error(text: str, problem: str, pos: int, start: int, expected: str) -> TextCallParseError:
    """Build the user-facing error: the problem, the call as written, the line/column, the expected form."""
    line_start = text.rfind("\n", 0, pos) + 1
    line_no = text.count("\n", 0, pos) + 1
    where = f"line {line_no}, column {pos - line_start + 1}" if line_no > 1 else f"column {pos - line_start + 1}"
    end = text.find("\n", max(pos, start))
    end = len(text) if end < 0 else end
    snippet = text[start:end]
    if len(snippet) > 80 or end < len(text):
        snippet = snippet[:80].rstrip() + " ..."
    return TextCallParseError(f"{problem} in {snippet} at {where}; expected {expected}")


class _Scanner:
    """A forgiving reader of JSON-like values (the argument values and the JSON call form)."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos

    def char(self) -> str:
        """The current character as structure: full-width punctuation mapped to ASCII, '' at the end."""
        if self.pos >= len(self.text):
            return ""
        ch = self.text[self.pos]
        return _STRUCTURAL.get(ch, ch)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def expect(self, ch: str, problem: str) -> None:
        self.skip_ws()
        if self.char() != ch:
            raise _Fail(problem, self.pos)
        self.pos += 1

    def value(self, depth: int = 0) -> Any:
        """Read one value: string, number, literal, list or object."""
        self.skip_ws()
        raw = self.text[self.pos] if self.pos < len(self.text) else ""
        if raw in _CLOSERS:
            return self.string()
        ch = self.char()
        if ch == "[":
            return self.array(depth + 1)
        if ch == "{":
            return self.object(depth + 1)
        if ch and (ch.isdigit() or ch in "+-."):
            return self.number()
        return self.literal()

    def string(self) -> str:
        """Read a quoted string starting at the opening quote, decoding backslash escapes."""
        start = self.pos
        opener = self.text[start]
        closers = _CLOSERS[opener]
        strict = opener in "\"'"
        parts: list[str] = []
        self.pos += 1
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\\":
                parts.append(self._escape())
                continue
            self.pos += 1
            if ch in closers and (strict or self._ends_value()):
                return _join_string(parts)
            parts.append(ch)
        raise _Fail("unterminated string", start)

    def _ends_value(self) -> bool:
        """After a typographic closing quote: does structure follow? (else it was an apostrophe)."""
        probe = self.pos
        while probe < len(self.text) and self.text[probe].isspace():
            probe += 1
        return probe == len(self.text) or _STRUCTURAL.get(self.text[probe], self.text[probe]) in _AFTER_VALUE

    def _escape(self) -> str:
        start = self.pos
        if start + 1 >= len(self.text):
            raise _Fail("unterminated string", start)
        kind = self.text[start + 1]
        if kind in _HEX_ESCAPES:
            digits = self.text[start + 2:start + 2 + _HEX_ESCAPES[kind]]
            if len(digits) != _HEX_ESCAPES[kind] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise _Fail(f"bad escape \\{kind}{digits}", start)
            self.pos = start + 2 + len(digits)
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise _Fail(f"bad escape \\{kind}{digits}", start)
            return chr(code)
        self.pos = start + 2
        # Unknown escapes keep their backslash, as Python does.
        return _ESCAPES.get(kind, "\\" + kind)

    def number(self) -> int | float:
        start = self.pos
        match = _NUMBER_RE.match(self.text, start)
        if not match:
            return self.literal()
        self.pos = match.end()
        token = match.group()
        try:
            if _INT_RE.fullmatch(token):
                return int(token)
            number = float(token)
        except ValueError as exc:
            raise _Fail(f"bad number {token[:20]}", start) from exc
        if number in (float("inf"), float("-inf")):
            raise _Fail(f"number out of range {token[:20]}", start)
        return number

    def literal(self) -> Any:
        start = self.pos
        match = _WORD_RE.match(self.text, start)
        if not match:
            found = self.char()
            raise _Fail(f"missing value (found {found!r})" if found else "missing value", start)
        word = match.group()
        if word.lower() in _LITERALS:
            self.pos = match.end()
            return _LITERALS[word.lower()]
        raise _Fail(f"bad value {word!r} (strings need quotes; numbers, true, false, null are bare)", start)

    def array(self, depth: int) -> list[Any]:
        start = self.pos
        if depth > _MAX_DEPTH:
            raise _Fail("values nested too deeply", start)
        self.pos += 1
        items: list[Any] = []
        while True:
            self.skip_ws()
            ch = self.char()
            if ch == "]":
                self.pos += 1
                return items
            if not ch:
                raise _Fail("unterminated list: missing ']'", start)
            items.append(self.value(depth))
            self._separator("]", "list", start)

    def object(self, depth: int) -> dict[str, Any]:
        start = self.pos
        if depth > _MAX_DEPTH:
            raise _Fail("values nested too deeply", start)
        self.pos += 1
        result: dict[str, Any] = {}
        while True:
            self.skip_ws()
            ch = self.char()
            if ch == "}":
                self.pos += 1
                return result
            if not ch:
                raise _Fail("unterminated object: missing '}'", start)
            key = self._object_key()
            self.expect(":", f"expected ':' after key {key!r}")
            result[key] = self.value(depth)
            self._separator("}", "object", start)

    def _object_key(self) -> str:
        if self.pos < len(self.text) and self.text[self.pos] in _CLOSERS:
            return self.string()
        match = _KEY_RE.match(self.text, self.pos)
        if not match:
            raise _Fail("expected a key in object", self.pos)
        self.pos = match.end()
        return match.group()

    def _separator(self, closer: str, what: str, start: int) -> None:
        """After an item: consume a ',' or stop before the closer."""
        self.skip_ws()
        ch = self.char()
        if ch == ",":
            self.pos += 1
        elif not ch:
            raise _Fail(f"unterminated {what}: missing '{closer}'", start)
        elif ch != closer:
            raise _Fail(f"expected ',' or '{closer}' in {what}, found {ch!r}", self.pos)


def _join_string(parts: list[str]) -> str:
    text = "".join(parts)
    if any("\ud800" <= c <= "\udfff" for c in text):
        # \uD83D\uDE00 escapes arrive as two surrogates: pair them up as JSON does.
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    return strip_invisible(text)


def _parse_arguments(scanner: _Scanner, open_pos: int) -> dict[str, Any]:
    """Read ``key=value, ...)`` after the opening parenthesis; leave the scanner after ``)``."""
    args: dict[str, Any] = {}
    while True:
        scanner.skip_ws()
        ch = scanner.char()
        if ch == ")":
            scanner.pos += 1
            return args
        if not ch:
            raise _Fail("unbalanced parentheses: missing ')'", open_pos)
        key = _argument_key(scanner)
        if key in args:
            raise _Fail(f"duplicate argument {key!r}", scanner.pos)
        args[key] = scanner.value()
        scanner.skip_ws()
        ch = scanner.char()
        if ch == ",":
            scanner.pos += 1
        elif ch != ")":
            if not ch:
                raise _Fail("unbalanced parentheses: missing ')'", open_pos)
            raise _Fail(f"expected ',' or ')' after argument {key!r}, found {ch!r}", scanner.pos)


def _argument_key(scanner: _Scanner) -> str:
    """Read ``key=`` (``key:`` is forgiven); a bare value here is a positional argument."""
    start = scanner.pos
    match = _KEY_RE.match(scanner.text, start)
    if match:
        scanner.pos = match.end()
        scanner.skip_ws()
        if scanner.char() in ("=", ":"):
            scanner.pos += 1
            return match.group()
    scanner.pos = start
    raise _Fail("positional argument (every argument needs a name: key=value)", start)


def _parse_marker(text: str, marker: re.Match[str]) -> tuple[list[ParsedCall], int]:
    """Parse what follows one ``TOOL:`` marker; return the calls and where scanning continues."""
    start = marker.start()
    markup = _MARKUP_RE.match(text, marker.end())  # always a match: the pattern matches the empty string
    pos = markup.end() if markup else marker.end()
    strict = marker.group(1) == "TOOL"
    if pos < len(text) and _STRUCTURAL.get(text[pos], text[pos]) in "{[":
        return _parse_json_after_marker(text, start, pos)
    name = _NAME_RE.match(text, pos)
    if not name:
        # Lower-case "tool:" is common in prose; only the literal marker promises a call.
        if strict:
            raise _error(text, "missing tool name after TOOL:", pos, start, EXPECTED_CALL)
        return [], marker.end()
    scanner = _Scanner(text, name.end())
    scanner.skip_ws()
    if scanner.char() != "(":
        if strict:
            raise _error(text, f"missing '(' after tool name {name.group()}", scanner.pos, start, EXPECTED_CALL)
        return [], marker.end()
    open_pos = scanner.pos
    scanner.pos += 1
    try:
        args = _parse_arguments(scanner, open_pos)
    except _Fail as fail:
        raise _error(text, fail.problem, fail.pos, start, EXPECTED_CALL) from None
    return [ParsedCall(name.group(), args, text[start:scanner.pos], "call")], scanner.pos


def _parse_json_after_marker(text: str, start: int, pos: int) -> tuple[list[ParsedCall], int]:
    """``TOOL: {...}`` or ``TOOL: [...]``: the value must be one call object or a list of them."""
    scanner = _Scanner(text, pos)
    try:
        value = scanner.value()
    except _Fail as fail:
        raise _error(text, fail.problem, fail.pos, start, EXPECTED_JSON) from None
    calls = _calls_from_value(value, text, pos, scanner.pos)
    if not calls:
        raise _error(text, "not a tool call object", pos, start, EXPECTED_JSON)
    return calls, scanner.pos


def _calls_from_value(value: Any, text: str, start: int, end: int) -> list[ParsedCall]:
    """The calls a decoded JSON value describes: one object, or a list whose items are all calls."""
    raw = text[start:end]
    if isinstance(value, dict):
        call = _call_from_object(value, text, start, raw)
        return [call] if call else []
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        calls = [_call_from_object(v, text, start, raw) for v in value]
        if all(calls):
            return calls  # type: ignore[return-value]
    return []


def _call_from_object(obj: dict[str, Any], text: str, start: int, raw: str) -> ParsedCall | None:
    """A call if ``obj`` is shaped like one; None for ordinary data such as ``{"name": "Bob"}``."""
    function = obj.get("function")
    if isinstance(function, dict) and "tool" not in obj:
        return _call_from_object(function, text, start, raw)  # OpenAI's {"type": "function", "function": {...}}
    name = obj.get("tool", obj.get("name"))
    args_key = next((k for k in _ARGS_KEYS if k in obj), None)
    if not isinstance(name, str) or "description" in obj:
        return None  # an echoed tool schema has a description; a call never does
    if args_key is None and ("tool" not in obj or not set(obj) <= _BARE_CALL_KEYS):
        return None
    name = name.strip()
    if not _NAME_RE.fullmatch(name):
        raise _error(text, f"invalid tool name {name!r}", start, start, EXPECTED_JSON)
    args = _decode_arguments(obj.get(args_key) if args_key else None, name, text, start)
    return ParsedCall(name, args, raw, "json")


def _decode_arguments(value: Any, name: str, text: str, start: int) -> dict[str, Any]:
    """Arguments as an object, or as a JSON string holding one (OpenAI sends them that way)."""
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        scanner = _Scanner(value, 0)
        try:
            decoded = scanner.value()
            scanner.skip_ws()
        except _Fail as fail:
            raise _error(text, f"arguments of {name} are not valid JSON ({fail.problem})", start, start,
                         EXPECTED_JSON) from None
        if scanner.pos != len(value):
            raise _error(text, f"arguments of {name} have text after the object", start, start, EXPECTED_JSON)
        value = decoded
    if not isinstance(value, dict):
        raise _error(text, f"arguments of {name} must be an object, got {type(value).__name__}", start, start,
                     EXPECTED_JSON)
    return value


def _find_json_call(text: str, pos: int, limit: int) -> tuple[list[ParsedCall], int] | None:
    """The first JSON call object starting in ``text[pos:limit]``, and where it ends."""
    for match in _OBJECT_START_RE.finditer(text, pos, limit):
        start = match.start()
        scanner = _Scanner(text, start)
        try:
            value = scanner.value()
        except _Fail as fail:
            if _looks_like_call_object(text, start):
                raise _error(text, fail.problem, fail.pos, start, EXPECTED_JSON) from None
            continue  # a brace in prose, or data that is not a call
        calls = _calls_from_value(value, text, start, scanner.pos)
        if calls:
            return calls, scanner.pos
    return None


def _looks_like_call_object(text: str, start: int) -> bool:
    """Whether a JSON object that failed to parse was meant as a call (then its error is worth reporting)."""
    first = _FIRST_KEY_RE.match(text, start)
    if not first:
        return False
    return first.group(1) == "tool" or bool(_ARGS_KEY_RE.search(text, first.end()))


def _check_known(calls: list[ParsedCall], known_tools: Collection[str] | None) -> None:
    if known_tools is None:
        return
    for call in calls:
        if call.name not in known_tools:
            known = ", ".join(sorted(known_tools)) or "(none)"
            expected = EXPECTED_JSON if call.form == "json" else EXPECTED_CALL
            raise TextCallParseError(
                f"unknown tool {call.name!r} in {call.raw[:80]}; known tools: {known}; expected {expected}"
            )


def parse_tool_calls(text: str, known_tools: Collection[str] | None = None) -> list[ParsedCall]:
    """Read every tool call written in ``text``, in order.

    Args:
        text: A model reply, possibly with prose, markdown and invisible characters around the calls.
        known_tools: If given, a call to any other tool name is an error.

    Returns:
        The calls in the order they appear; ``[]`` when the text holds none.

    Raises:
        TextCallParseError: A call is malformed (unbalanced parentheses, bad value, positional argument,
            arguments that are not an object) or names an unknown tool.
    """
    text = strip_invisible(text)
    calls: list[ParsedCall] = []
    pos = 0
    while pos < len(text):
        marker = _MARKER_RE.search(text, pos)
        limit = marker.start() if marker else len(text)
        found = _find_json_call(text, pos, limit)
        if found:
            calls.extend(found[0])
            pos = found[1]
            continue
        if marker is None:
            break
        new_calls, pos = _parse_marker(text, marker)
        calls.extend(new_calls)
    _check_known(calls, known_tools)
    return calls


def has_tool_call(text: str) -> bool:
    """Cheaply tell whether ``text`` seems to contain a tool call (it may still fail to parse).

    Args:
        text: A model reply.

    Returns:
        True when a ``TOOL:`` call, a literal ``TOOL:`` marker or a JSON call-shaped object appears.
    """
    text = strip_invisible(text)
    if _CALL_START_RE.search(text) or _STRICT_MARKER_RE.search(text):
        return True
    if "{" not in text and "｛" not in text:
        return False
    return bool(_TOOL_KEY_RE.search(text) or (_NAME_KEY_RE.search(text) and _ARGS_KEY_RE.search(text)))


def _schema_type(schema: dict[str, Any]) -> str:
    """A short human type for a JSON-schema property: string, integer, "a" | "b", list of string..."""
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants:
        names = [_schema_type(v) for v in variants]
        return " or ".join(dict.fromkeys(names))
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"list of {_schema_type(schema.get('items', {}))}"
    if kind == "string" and "pattern" in schema:
        return f"string matching {schema['pattern']}"
    return str(kind)


def _example_value(schema: dict[str, Any]) -> str:
    if schema.get("enum"):
        return json.dumps(schema["enum"][0], ensure_ascii=False)
    kind = schema.get("type")
    if not isinstance(kind, str):  # none, or a list of types (["string", "null"]): a list is no dict key
        return '"..."'
    return {"integer": "1", "number": "1.5", "boolean": "true", "array": "[]", "object": "{}"}.get(kind, '"..."')


def _describe_tool(tool: dict[str, Any]) -> list[str]:
    """Lines for one OpenAI-format tool: name, description, arguments, one example call."""
    fn = tool.get("function", tool)
    name = fn["name"]
    params = fn.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or ())
    lines = [f"- {name}: {' '.join(str(fn.get('description', '')).split()) or '(no description)'}"]
    for arg, schema in props.items():
        need = "required" if arg in required else "optional"
        if "default" in schema and arg not in required:
            need += f", default {json.dumps(schema['default'], ensure_ascii=False)}"
        desc = " ".join(str(schema.get("description", "")).split())
        lines.append(f"    {arg} ({_schema_type(schema)}, {need}){': ' + desc if desc else ''}")
    example = ", ".join(f"{arg}={_example_value(props[arg])}" for arg in props if arg in required)
    lines.append(f"    example: TOOL: {name}({example})")
    return lines


def format_tool_call_instructions(tools: list[dict[str, Any]]) -> str:
    """The system-prompt text that teaches a text-only model to call the given tools.

    Args:
        tools: OpenAI-format tool dicts ``{"type": "function", "function": {"name", "description",
            "parameters"}}`` (the inner function dict alone is accepted too).

    Returns:
        Instructions naming the call syntax, its rules, and each tool with its arguments and types.
    """
    if not tools:
        return "No tools are available right now: answer the user directly."
    lines = [
        "You can call tools. To call one, write a line of its own in exactly this form:",
        f"    {EXPECTED_CALL}",
        "Rules:",
        "- Start every call with TOOL: and put each call on its own line; write several lines for several calls.",
        "- Name every argument (key=value); never pass an argument by position.",
        '- Strings in double quotes ("ABC-123"), numbers bare (3, 1.5), true / false / null, lists as [..].',
        "- Use only the tools and argument names listed below, and only values the user or a tool gave you.",
        "- After the calls, stop and wait: the results come back in the next message.",
        "",
        "Tools:",
    ]
    for tool in tools:
        lines.extend(_describe_tool(tool))
    return "\n".join(lines)
