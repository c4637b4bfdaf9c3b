"""JSON schema -> llama.cpp grammar (GBNF), ours: every ``pattern`` Python's ``re`` accepts, never an exception.

llama-cpp-python's own converter crashed on a non-capturing group (``^(?:LT|MN|PH)-\\d{5}$``, the helpdesk's
asset tags) and wrote class escapes as literals. This one reads a pattern with Python's own parser
(``re._parser``, what ``re.compile`` uses), so a grammar means what the tool's validation means: literals,
classes and their escapes, ``.``, alternation, groups of any kind, every quantifier, ``^``/``$`` at the ends
and case-insensitive flags (``\\d``, ``\\w``, ``\\s`` as their ASCII members: a grammar a little stricter
than Python's Unicode classes, and ``$`` without the final newline it also allows). What it cannot say in a grammar (a lookaround, a backreference, an anchor inside)
makes that string free text: the call is then only as strict as the tool's own validation, which always runs.

JSON schema keywords read: ``type`` (object, string, integer, number, boolean, null, array; a list of them),
``properties``/``required``, ``enum``, ``const``, ``anyOf``/``oneOf``, ``items``, ``$ref`` into ``$defs``,
``pattern``, and ``additionalProperties: false`` (the only kind emitted: no unknown keys). Lengths and numeric
bounds are left to validation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

try:  # Python 3.11+: the parser behind re.compile
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

MAX_REPEAT_SPELLED = 64  # {m,n} beyond this is written as m copies and an open tail

JSON_RULES = r'''
ws ::= [ \t\n]{0,8}
jchar ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
jstring ::= "\"" jchar* "\""
jint ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
jnumber ::= jint ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})?
jbool ::= "true" | "false"
jnull ::= "null"
jvalue ::= jstring | jnumber | jbool | jnull | "[" ws (jvalue (ws "," ws jvalue)*)? ws "]" | "{" ws (jstring ws ":" ws jvalue (ws "," ws jstring ws ":" ws jvalue)*)? ws "}"
'''


class Untranslatable(Exception):
    """A regex construct a grammar cannot say; the string it was in becomes free text."""


# ------------------------------------------------------------------------------------------ regex -> GBNF


def _char(code: int) -> str:
    """One character inside a GBNF character class. llama.cpp's parser knows the escapes \\ \" [ ] and hex
    ones only: "-" and "^" (range and negation there) and control characters are written in hex."""
    c = chr(code)
    if c in "\\][\"":
        return "\\" + c
    if c in "-^" or code < 0x20 or code == 0x7F:
        return f"\\x{code:02X}"
    return c


def _lit(code: int) -> str:
    c = chr(code)
    return '"' + ("\\" + c if c in '"\\' else c if code >= 0x20 else f"\\x{code:02X}") + '"'


_CATEGORIES = {sre_c.CATEGORY_DIGIT: "0-9", sre_c.CATEGORY_WORD: "a-zA-Z0-9_", sre_c.CATEGORY_SPACE: " \\t\\n\\r\\x0C\\x0B"}
_NEGATED = {sre_c.CATEGORY_NOT_DIGIT: "0-9", sre_c.CATEGORY_NOT_WORD: "a-zA-Z0-9_",
            sre_c.CATEGORY_NOT_SPACE: " \\t\\n\\r\\x0C\\x0B"}
# Inside a JSON string a raw quote, backslash or control character cannot appear: a class never offers them.
_NOT_IN_JSON = '"\\\\\\x00-\\x1F'


def _cased(code: int) -> list[int]:
    c = chr(code)
    return sorted({ord(x) for x in (c, c.lower(), c.upper()) if len(x) == 1})


def _class(items: list[tuple[Any, Any]], fold: bool) -> str:
    if len(items) == 1 and items[0][0] is sre_c.CATEGORY and items[0][1] in _NEGATED:
        return f"[^{_NEGATED[items[0][1]]}{_NOT_IN_JSON}]"  # \D \W \S outside brackets
    negate, parts = False, []
    for op, av in items:
        if op is sre_c.NEGATE:
            negate = True
        elif op is sre_c.LITERAL:
            parts += [_char(c) for c in (_cased(av) if fold else [av])]
        elif op is sre_c.RANGE:
            lo, hi = av
            parts.append(f"{_char(lo)}-{_char(hi)}")
            if fold:
                for a, b in ((ord("a"), ord("z")), (ord("A"), ord("Z"))):
                    s, e = max(lo, a), min(hi, b)
                    if s <= e:
                        other = 32 if a == ord("a") else -32
                        parts.append(f"{_char(s - other)}-{_char(e - other)}")
        elif op is sre_c.CATEGORY and av in _CATEGORIES:
            parts.append(_CATEGORIES[av])
        else:  # a negated category inside a class ([\D]) is a class of its own: not said here
            raise Untranslatable(f"class item {op}")
    body = "".join(parts)
    if negate:
        return f"[^{body}{_NOT_IN_JSON}]"
    return f"[{body}]"


def _seq(items: Any, fold: bool) -> str:
    """A parsed regex sequence as one GBNF expression (``fold``: case-insensitive here)."""
    return " ".join(_item(op, av, fold) for op, av in items) or '""'


def _item(op: Any, av: Any, fold: bool) -> str:  # noqa: C901 - one branch per regex construct
    if op is sre_c.LITERAL:
        cased = _cased(av) if fold else [av]
        return _lit(av) if len(cased) == 1 else "[" + "".join(_char(c) for c in cased) + "]"
    if op is sre_c.NOT_LITERAL:
        return f"[^{''.join(_char(c) for c in (_cased(av) if fold else [av]))}{_NOT_IN_JSON}]"
    if op is sre_c.ANY:
        return f"[^\\n{_NOT_IN_JSON}]"
    if op is sre_c.IN:
        return _class(av, fold)
    if op is sre_c.BRANCH:
        return "(" + " | ".join(_seq(alt, fold) for alt in av[1]) + ")"
    if op is sre_c.SUBPATTERN:
        _, add, drop, sub = av
        inner = (fold or bool(add & re.IGNORECASE)) and not (drop & re.IGNORECASE)
        return "(" + _seq(sub, inner) + ")"
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
        lo, hi, sub = av
        return _repeat("(" + _seq(sub, fold) + ")", lo, hi)
    if op is sre_c.CATEGORY and av in _CATEGORIES:
        return f"[{_CATEGORIES[av]}]"
    if op is sre_c.CATEGORY and av in _NEGATED:
        return f"[^{_NEGATED[av]}{_NOT_IN_JSON}]"
    raise Untranslatable(str(op))


def _repeat(body: str, lo: int, hi: int) -> str:
    if hi == sre_c.MAXREPEAT:
        return {0: f"{body}*", 1: f"{body}+"}.get(lo, f"{body}{{{lo},}}")
    if (lo, hi) == (0, 1):
        return f"{body}?"
    if hi > MAX_REPEAT_SPELLED:
        return f"{body}{{{lo},}}"  # looser: validation keeps the bound
    return f"{body}{{{lo}}}" if lo == hi else f"{body}{{{lo},{hi}}}"


def pattern_expr(pattern: str) -> str:
    """A GBNF expression for the characters of a JSON string that ``re.search(pattern, s)`` accepts; raises
    ``Untranslatable`` for what a grammar cannot say."""
    try:
        tree = sre_parse.parse(pattern)
    except re.error as err:
        raise Untranslatable(f"not a regular expression: {err}") from None
    fold = bool(tree.state.flags & re.IGNORECASE)
    items: list[Any] = [tree[i] for i in range(len(tree))]
    start = bool(items) and items[0][0] is sre_c.AT and items[0][1] in (sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING)
    end = bool(items) and items[-1][0] is sre_c.AT and items[-1][1] in (sre_c.AT_END, sre_c.AT_END_STRING)
    core = items[1 if start else 0: len(items) - (1 if end else 0)]
    if any(op is sre_c.AT for op, _ in core):
        raise Untranslatable("an anchor inside the pattern")
    body = _seq(core, fold)
    free = f"[^{_NOT_IN_JSON}]*"
    return (("" if start else free + " ") + body + ("" if end else " " + free)).strip()


# --------------------------------------------------------------------------------------- schema -> GBNF


class _Schema:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root, self.rules, self.count = root, {}, 0

    def rule(self, body: str) -> str:
        for name, known in self.rules.items():
            if known == body:
                return name
        self.count += 1
        name = f"zs-{self.count}"
        self.rules[name] = body
        return name

    def value(self, node: Any) -> str:  # noqa: C901 - one branch per JSON-schema keyword
        if not isinstance(node, dict) or not node:
            return "jvalue"
        if "$ref" in node:
            return self.value(self._resolve(node["$ref"]))
        if "const" in node:
            return _json_literal(node["const"])
        if "enum" in node:
            return "(" + " | ".join(_json_literal(v) for v in node["enum"]) + ")"
        for key in ("anyOf", "oneOf"):
            if key in node:
                return "(" + " | ".join(self.value(n) for n in node[key]) + ")"
        kind = node.get("type")
        if isinstance(kind, list):
            return "(" + " | ".join(self.value({**node, "type": k}) for k in kind) + ")"
        return self._typed(kind, node)

    def _typed(self, kind: Any, node: dict[str, Any]) -> str:
        if kind == "string":
            return self.string(node.get("pattern"))
        simple = {"integer": "jint", "number": "jnumber", "boolean": "jbool", "null": "jnull"}
        if kind in simple:
            return simple[kind]
        if kind == "array":
            item = self.value(node.get("items"))
            return self.rule(f'"[" ws ({item} (ws "," ws {item})*)? ws "]"')
        if kind == "object" or "properties" in node:
            return self.object(node)
        return "jvalue"

    def string(self, pattern: str | None) -> str:
        # what cannot be said becomes any JSON string: looser, and the tool boundary validates the pattern
        return self.rule(f'"\\"" {translate(pattern)} "\\""') if pattern else "jstring"

    def object(self, node: dict[str, Any]) -> str:
        props: dict[str, Any] = node.get("properties") or {}
        if not props:
            return self.rule('"{" ws "}"') if node.get("additionalProperties") is False else "jvalue"
        required = [k for k in props if k in set(node.get("required") or [])]
        optional = [k for k in props if k not in required]
        pair = {k: f'"{_json_key(k)}" ws ":" ws {self.value(props[k])}' for k in props}
        if required:
            body = ' ws "," ws '.join(pair[k] for k in required)
            body += "".join(f' (ws "," ws {pair[k]})?' for k in optional)
            return self.rule(f'"{{" ws {body} ws "}}"')
        # no key is required: any of the optional ones, in order, the first without a comma before it
        heads = [" ".join([pair[k], *(f'(ws "," ws {pair[o]})?' for o in optional[i + 1:])])
                 for i, k in enumerate(optional)]
        return self.rule('"{" ws (' + " | ".join(heads) + ')? ws "}"')

    def _resolve(self, ref: str) -> Any:
        node: Any = self.root
        for part in ref.lstrip("#/").split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node


def _json_literal(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _json_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)[1:-1].replace("\\", "\\\\").replace('"', '\\"').join(['\\"', '\\"'])


def schema_gbnf(schema: dict[str, Any], root: str = "root") -> str:
    """GBNF text whose rule ``root`` accepts JSON values valid for ``schema`` (within the module doc's limits)."""
    conv = _Schema(schema)
    top = conv.value(schema)
    lines = [f"{root} ::= {top}", *(f"{name} ::= {body}" for name, body in conv.rules.items())]
    return "\n".join(lines) + "\n" + JSON_RULES


def translate(pattern: str, on_loose: Callable[[str], None] | None = None) -> str:
    """The GBNF expression for ``pattern`` inside a JSON string, or free text when it cannot be said."""
    try:
        return pattern_expr(pattern)
    except Untranslatable as err:
        if on_loose:
            on_loose(str(err))
        return "jchar*"
