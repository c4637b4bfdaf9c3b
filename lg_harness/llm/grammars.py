"""llama.cpp grammars (GBNF) for the two steps that talk to a customer or to the tools.

- ``answer_grammar()``: text for the customer. The first character may not open data (``{ [ <``, a backtick),
  be a quote mark (``>``) or white space, and no brace comes anywhere, so the model cannot paste a result,
  write a call or open markup; otherwise it writes freely. On Qwen2.5-Coder-0.5B the first-character rule
  turned 8 of 8 answers that re-emitted the call and the result as JSON into 7 of 8 answers in words
  (DESIGN.md, "What the customer reads").
- ``action_grammar(tools)``: one call of an offered tool, as the JSON object ``{"name": ..., "arguments":
  {...}}`` with the name as a constant per tool and the arguments under that tool's own schema (types,
  enums, patterns), or text for the customer as above (a question for a missing value, or the answer).
- ``json_grammar(schema)``: one JSON value under ``schema``, for a step whose output is data for the harness
  (the intent step's label, held to the domain's intents by an enum).
- ``call_grammar(tools)``: the call alone, for a step that must call (a routed task with every value known
  and nothing run yet: there the text branch only ever held a decline or an answer made up from memory).

llama-cpp-python 0.3.36's JSON-schema converter does not understand ``\\d`` and the other class escapes
inside ``pattern``: it writes the escape's letters as literals (``^ORD-\\d{5}$`` became ``"ORD-\\dORD-\\d..."``),
so a constrained call could never match. ``portable_pattern`` rewrites them as bracket classes first.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

# Rule names no JSON-schema conversion produces (it derives names from property names, with "-").
# Words: not opening with data or markup, and no brace anywhere, so a call cannot come back as text in the words
# branch (the 0.5B model wrote '>{"name": "get_product", ...}' as an answer, lab/reports/bench-local run 9).
_TEXT_RULES = r'''
zq-text ::= zq-first zq-rest
zq-first ::= [^{}\[<>` \t\n]
zq-rest ::= [^{}\x00]*
'''

_CLASS_ESCAPES = {r"\d": "[0-9]", r"\D": "[^0-9]", r"\w": "[A-Za-z0-9_]", r"\W": "[^A-Za-z0-9_]",
                  r"\s": "[ \\t\\n]", r"\S": "[^ \\t\\n]"}
_IN_CLASS = {r"\d": "0-9", r"\w": "A-Za-z0-9_", r"\s": " \\t\\n"}


def portable_pattern(pattern: str) -> str:
    """``pattern`` with ``\\d \\w \\s`` (and their negations) written as bracket classes, inside and outside
    brackets, so llama.cpp's converter reads them."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        two = pattern[i:i + 2]
        if two in _CLASS_ESCAPES:
            out.append(_IN_CLASS.get(two, two) if in_class else _CLASS_ESCAPES[two])
            i += 2
            continue
        if pattern[i] == "\\":
            out.append(two)
            i += 2
            continue
        if pattern[i] == "[" and not in_class:
            in_class = True
        elif pattern[i] == "]" and in_class:
            in_class = False
        out.append(pattern[i])
        i += 1
    return "".join(out)


_LONGEST_SPELLED = 32  # a longer maxLength becomes a rule per character; the tool boundary checks it anyway


def _portable(node: Any) -> Any:
    if isinstance(node, list):
        return [_portable(x) for x in node]
    if not isinstance(node, dict):
        return node
    return {k: (portable_pattern(v) if k == "pattern" and isinstance(v, str) else _portable(v)) for k, v in node.items()
            if not (k == "maxLength" and isinstance(v, int) and v > _LONGEST_SPELLED)}


def call_schema(tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema of one call of any of ``tools`` (OpenAI function-tool dicts)."""
    options = []
    for tool in tools:
        fn = tool["function"]
        params = copy.deepcopy(fn.get("parameters") or {"type": "object", "properties": {}})
        params.setdefault("type", "object")
        params["additionalProperties"] = False
        options.append({"type": "object", "properties": {"name": {"const": fn["name"]}, "arguments": params},
                        "required": ["name", "arguments"], "additionalProperties": False})
    return _portable(options[0] if len(options) == 1 else {"anyOf": options})


def _renamed_root(gbnf: str, name: str) -> str:
    return re.sub(r"(?m)^root\s*::=", f"{name} ::=", gbnf)


def answer_grammar() -> str:
    """GBNF text: words for the customer, not data (see the module doc)."""
    return "root ::= zq-text\n" + _TEXT_RULES


@lru_cache(maxsize=64)
def _action_grammar(tools_json: str, words: bool) -> str:
    from lg_harness.llm.gbnf import schema_gbnf

    # ours, not llama-cpp-python's converter: that one crashed on (?:LT|MN|PH) and misread class escapes
    calls = schema_gbnf(call_schema(json.loads(tools_json)), root="zq-call")
    return ("root ::= zq-call | zq-text\n" + calls + _TEXT_RULES) if words else ("root ::= zq-call\n" + calls)


def action_grammar(tools: Sequence[dict[str, Any]]) -> str:
    """GBNF text: one call matching an offered tool's schema, or words for the customer."""
    return _action_grammar(json.dumps(list(tools), sort_keys=True, ensure_ascii=False), True)


@lru_cache(maxsize=16)
def _json_grammar(schema_json: str) -> str:
    from lg_harness.llm.gbnf import schema_gbnf

    return schema_gbnf(_portable(json.loads(schema_json)), root="root")


def json_grammar(schema: dict[str, Any]) -> str:
    """GBNF text: one JSON value matching ``schema`` (a classification's label from an enum, a slot object)."""
    return _json_grammar(json.dumps(schema, ensure_ascii=False))  # property order kept: the label first


def call_grammar(tools: Sequence[dict[str, Any]]) -> str:
    """GBNF text: one call matching an offered tool's schema and nothing else (a step that must call)."""
    return _action_grammar(json.dumps(list(tools), sort_keys=True, ensure_ascii=False), False)
