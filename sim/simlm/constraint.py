"""What a constrained decoder lets the model write, read from the request as a provider reads it.

Two request fields constrain decoding (OpenAI's structured outputs; llama.cpp's server and vLLM honour
the same): ``response_format`` (``{"type": "json_schema", "json_schema": {"schema": ...}}`` or
``{"type": "json_object"}``) shapes the text of a reply, and ``"strict": true`` on a function tool makes its
arguments match the tool's schema exactly. A constrained model cannot emit what the schema forbids: the
brain asks ``admits`` before it writes text the schema would reject (a pasted result where the reply must
not open with ``{``) and writes what it would otherwise have said; ``fits`` tells whether a call's arguments
match a strict schema. Its other faults (a wrong tool, an invented value that fits the pattern, a misstated
fact) are not constraints' business and stay.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    types = {"string": str, "array": list, "object": dict}
    return isinstance(value, types[kind]) if kind in types else True


def _fits_object(value: dict[str, Any], schema: dict[str, Any]) -> bool:
    props = schema.get("properties") or {}
    if any(r not in value for r in schema.get("required") or []):
        return False
    if schema.get("additionalProperties") is False and any(k not in props for k in value):
        return False
    return all(fits(v, props[k]) for k, v in value.items() if k in props)


def fits(value: Any, schema: Any) -> bool:
    """Whether ``value`` matches the JSON schema ``schema`` (types, enums, patterns, objects, arrays)."""
    if not isinstance(schema, dict):
        return True
    if "anyOf" in schema:
        return any(fits(value, s) for s in schema["anyOf"])
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if kinds and not any(_is(value, k) for k in kinds):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "const" in schema and value != schema["const"]:
        return False
    if isinstance(value, str) and schema.get("pattern") and re.search(schema["pattern"], value) is None:
        return False
    if isinstance(value, dict):
        return _fits_object(value, schema)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return all(fits(v, schema["items"]) for v in value)
    return True


def strict(tool: dict[str, Any]) -> bool:
    return bool((tool.get("function") or {}).get("strict"))


@dataclass(frozen=True)
class Constraint:
    """The reply's text constraint: ``schema`` from ``response_format`` (``{}``: any JSON object), or None."""

    schema: dict[str, Any] | None = None

    def field(self) -> tuple[str | None, dict[str, Any]]:
        """The string property the reply's words go in (a required one first), if the schema has one."""
        props = (self.schema or {}).get("properties") or {}
        required = [k for k in (self.schema or {}).get("required") or [] if k in props]
        for key in [*required, *props]:
            if (props[key] or {}).get("type") == "string":
                return key, props[key]
        return None, {}

    def admits(self, text: str) -> bool:
        """Whether the decoder lets the model write ``text`` as its reply."""
        if self.schema is None:
            return True
        key, prop = self.field()
        pattern = prop.get("pattern")
        return key is None or not pattern or re.search(pattern, text) is not None

    def written(self, text: str) -> str:
        """The reply's content as the decoder emits it: ``text`` inside the schema's object."""
        if self.schema is None:
            return text
        try:
            if fits(json.loads(text), self.schema) and self.schema:
                return text
        except ValueError:
            pass
        key, prop = self.field()
        if key is not None and not self.admits(text):
            text = re.sub(r"^[\s{\[<`]+", "", text) or "OK"  # what is left once the forbidden opening is gone
        return json.dumps({key or "text": text}, ensure_ascii=False)


def constraint_of(request: dict[str, Any]) -> Constraint:
    """The text constraint a chat-completions request carries."""
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return Constraint(dict((fmt.get("json_schema") or {}).get("schema") or {}))
    if fmt.get("type") == "json_object":
        return Constraint({})
    return Constraint(None)
