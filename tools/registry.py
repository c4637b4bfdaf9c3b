"""Tool registry: JSON schemas from type hints and docstrings, per-tool metadata, masking.

A tool is a plain function whose first parameter may be a ``ToolContext`` (injected, never in the schema).
Its arguments model is built with pydantic from the signature, so ``Annotated[..., Field(...)]`` constraints,
``Literal``, ``Optional`` and nested models become JSON schema and are checked before the tool runs.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from tools.context import ToolContext

_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.M)
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]+:\s*$", re.M)


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Description (everything before the first section) and per-argument texts (Google style)."""
    doc = inspect.cleandoc(doc or "")
    m = _ARGS_SECTION.search(doc)
    first_section = _SECTION.search(doc)
    description = doc[: first_section.start()].strip() if first_section else doc.strip()
    args: dict[str, str] = {}
    if m:
        body = doc[m.end():]
        end = _SECTION.search(body)
        body = body[: end.start()] if end else body
        current = None
        for line in body.splitlines():
            hit = re.match(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if hit:
                current = hit.group(1)
                args[current] = hit.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
    return description, args


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext


def args_model_for(fn: Callable[..., Any], name: str) -> tuple[type[BaseModel], str]:
    """Pydantic model of ``fn``'s model-facing arguments, and the tool description."""
    description, arg_docs = _split_docstring(fn.__doc__ or "")
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(pname, Any)
        if _is_context(annotation):
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
    model = create_model(  # type: ignore[call-overload]
        f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model, description


@dataclass
class ToolSpec:
    """A registered tool and what the harness needs to know about it."""

    name: str
    fn: Callable[..., Any]
    description: str
    args_model: type[BaseModel]
    changes_state: bool = False
    idempotent: bool = True
    timeout: float = 10.0
    roles: frozenset[str] | None = None  # None: every role
    phases: frozenset[str] = field(default_factory=lambda: frozenset({"action"}))
    wants_context: bool = True

    def json_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool format every LangChain chat model's ``bind_tools`` accepts."""
        params = self.args_model.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": params}}

    def allowed_for(self, role: str, phase: str) -> bool:
        return phase in self.phases and (self.roles is None or role in self.roles)


class ToolRegistry:
    """Tools by name; safe to change while graphs run (each model call asks for the current offer)."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            self._specs[spec.name] = spec

    def register(self, fn: Callable[..., Any], *, name: str | None = None, **meta: Any) -> ToolSpec:
        """Register a function; metadata defaults come from attributes the function carries."""
        tool_name = name or fn.__name__
        model, description = args_model_for(fn, tool_name)
        hints = get_type_hints(fn)
        wants_ctx = any(_is_context(h) for h in hints.values())
        changes = meta.pop("changes_state", getattr(fn, "changes_state", False))
        roles = meta.pop("roles", getattr(fn, "roles", None))
        spec = ToolSpec(tool_name, fn, description, model, changes_state=changes,
                        roles=frozenset(roles) if roles else None, wants_context=wants_ctx, **meta)
        self._specs[tool_name] = spec
        return spec

    def remove(self, name: str) -> None:
        self._specs.pop(name, None)

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return list(self._specs)

    def offer(self, names: Iterable[str] | None, role: str, phase: str = "action") -> list[ToolSpec]:
        """Tools offered on one model call: the named ones (all when None) the role may use in the phase."""
        wanted = list(self._specs) if names is None else list(names)
        return [s for n in wanted if (s := self._specs.get(n)) and s.allowed_for(role, phase)]
