"""Tool registry: JSON schemas from type hints and docstrings, per-tool metadata, masking.

A tool is either a plain function (sync or ``async def``) or a LangChain tool (``BaseTool``, e.g. made with
``@tool``). A function's parameter annotated ``ToolContext`` is injected by the executor and never appears
in the schema. Its arguments model is built with pydantic from the signature, so ``Annotated[...,
Field(...)]`` constraints, ``Literal``, ``Optional``, unions, enums, lists, nested models and
``date``/``datetime`` (ISO strings with ``format: date`` / ``date-time``) become JSON schema and are checked
before the tool runs. Argument descriptions come from the Google-style ``Args:`` section of the docstring
(they win over a ``Field(description=...)``, which is the fallback).

Schemas are self-contained: pydantic's ``$defs``/``$ref`` are inlined because many local models (and some
OpenAI-compatible servers) ignore or reject ``$ref``; only a recursive model, which cannot be inlined, keeps
its ``$defs``. ``title`` keys are dropped everywhere: they repeat the names and cost tokens.

The registry is safe to change while graphs run: writers swap in a new dict under a lock, readers take the
current dict without locking, and every model call asks ``offer`` for the tools of that moment.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from lg_harness.errors import UsageError
from lg_harness.tools.context import ToolContext
from lg_harness.tools.json_schema import JsonSchemaArgs, model_for

_ARGS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.M)
# Only Google's own section names end the description: "Second paragraph:" is ordinary text.
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|Returns?|Yields?"
    r"|Raises|Examples?|Notes?|Attributes|Todo|Warnings?|See Also|References|Methods):\s*$", re.M)
_ARG_LINE = re.compile(r"^\s{2,}(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)$")
_META_KEYS = ("changes_state", "idempotent", "timeout", "roles", "phases", "fallback", "phrases", "precheck")
_DEFAULT_PHASES = frozenset({"action"})
_MISSING = object()
# Keys whose values are data, not schemas: never strip "title" inside them.
_DATA_KEYS = frozenset({"default", "enum", "const", "examples", "example"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


# ------------------------------------------------------------------------------------------ docstrings


def _arg_docs(body: str) -> dict[str, str]:
    """``name (type): text`` entries of an ``Args:`` section; continuation lines join the current entry."""
    args: dict[str, str] = {}
    current = None
    for line in body.splitlines():
        hit = _ARG_LINE.match(line)
        if hit:
            current = hit.group(1).lstrip("*")
            args[current] = hit.group(2).strip()
        elif current and line.strip():
            args[current] = (args[current] + " " + line.strip()).strip()
    return args


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Description (everything before the first section) and per-argument texts (Google style)."""
    doc = inspect.cleandoc(doc or "")
    first_section = _SECTION.search(doc)
    # line breaks are kept as written: the tool JSON is part of every model input (and of the sim
    # model's seeded fault draws), so its text must not drift from the docstring
    description = (doc[: first_section.start()] if first_section else doc).strip()
    m = _ARGS_SECTION.search(doc)
    if not m:
        return description, {}
    body = doc[m.end():]
    end = _SECTION.search(body)
    return description, _arg_docs(body[: end.start()] if end else body)


# ---------------------------------------------------------------------------------------------- schemas


def _is_context(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


def _signature(fn: Callable[..., Any], name: str) -> inspect.Signature:
    try:
        return inspect.signature(fn, eval_str=True)
    except (NameError, TypeError, ValueError) as err:
        raise UsageError(f"cannot read the signature of tool {name!r}: {err}") from err


def _context_param(sig: inspect.Signature) -> tuple[bool, str | None]:
    """Whether the function takes a ``ToolContext``, and its keyword when it is not the first parameter."""
    names = list(sig.parameters)
    found = next((p for p, param in sig.parameters.items() if _is_context(param.annotation)), None)
    return found is not None, (found if found and found != names[0] else None)


def _doc_of(fn: Any) -> str:
    """The docstring that describes calling ``fn``: a callable object's ``__call__`` before its class."""
    if isinstance(fn, functools.partial):
        return _doc_of(fn.func)
    if inspect.isroutine(fn):
        return fn.__doc__ or ""
    # the class's own (or inherited) Python __call__, never the C slot of ``object`` or ``type``
    call = next((k.__dict__["__call__"] for k in type(fn).__mro__ if "__call__" in k.__dict__), None)
    if inspect.isfunction(call) and call.__doc__:
        return call.__doc__
    return getattr(fn, "__doc__", None) or ""


def args_model_for(fn: Callable[..., Any], name: str) -> tuple[type[BaseModel], str]:
    """Pydantic model of ``fn``'s model-facing arguments, and the tool description."""
    description, arg_docs = _split_docstring(_doc_of(fn))
    fields: dict[str, Any] = {}
    for pname, param in _signature(fn, name).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or _is_context(param.annotation):
            continue
        annotation = Any if param.annotation is param.empty else param.annotation
        default = ... if param.default is param.empty else param.default
        # Passing description=None would erase a description given in Annotated[..., Field(...)].
        doc = arg_docs.get(pname)
        fields[pname] = (annotation, Field(default, description=doc) if doc else Field(default))
    try:
        model = create_model(  # type: ignore[call-overload]
            f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
    except Exception as err:  # noqa: BLE001 - pydantic raises several classes; one clear message
        raise UsageError(f"cannot build the argument schema of tool {name!r}: {err}") from err
    return model, description


def _strip_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_titles(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _DATA_KEYS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            # a property may itself be called "title": only the schemas under it are stripped
            out[key] = {name: _strip_titles(schema) for name, schema in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out


class _Recursive(Exception):
    """A ``$ref`` points back to a definition being inlined: the schema cannot be made flat."""


def _inline(node: Any, defs: dict[str, Any], stack: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(x, defs, stack) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        key = ref.removeprefix("#/$defs/")
        if key in stack or key not in defs:
            raise _Recursive(key)
        target = _inline(defs[key], defs, (*stack, key))
        # keywords next to the $ref (description, default) describe this use and win over the definition's
        siblings = {k: (v if k in _DATA_KEYS else _inline(v, defs, stack)) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {k: (v if k in _DATA_KEYS else _inline(v, defs, stack)) for k, v in node.items()}


def self_contained_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$ref`` inlined and titles dropped; a recursive schema keeps its ``$defs``."""
    defs = schema.get("$defs") or {}
    if defs:
        body = {k: v for k, v in schema.items() if k != "$defs"}
        try:
            schema = _inline(body, defs, ())
        except _Recursive:
            schema = copy.deepcopy(schema)
    return _strip_titles(schema)


# ------------------------------------------------------------------------------------------------ specs


@dataclass
class ToolSpec:
    """A registered tool and what the harness needs to know about it.

    Attributes:
        name: The name the model calls.
        fn: What the executor calls: ``fn([ctx,] **args)``; for a LangChain tool, an adapter over
            ``invoke``/``ainvoke``.
        description: What the model reads about when to use the tool.
        args_model: Pydantic model of the model-facing arguments (extra keys forbidden).
        changes_state: The tool writes (orders, coupons...); such tools get an idempotency key.
        idempotent: Safe to run again for the same call (a changing tool honours ``ctx.idempotency_key``).
            A changing tool that is not idempotent is never retried. Registration defaults it to False for
            a changing tool that does not declare it (``changes_once`` declares it) and True otherwise.
        timeout: Deadline per attempt in seconds; None runs the tool inline without a deadline.
        roles: Roles that may use the tool; None for every role.
        phases: Graph phases that offer the tool; None for every phase.
        wants_context: Whether ``fn`` takes a ``ToolContext``.
        fallback: Name of an alternative tool tried once, with the same arguments, on a permanent error.
        is_async: ``fn`` is a coroutine function (the executor runs it on its own event loop).
        context_keyword: Name of the ``ToolContext`` parameter when it is not the first one (then it is
            passed by keyword); None when the context goes first, positionally.
        arg_docs: Argument descriptions for properties whose schema has none (LangChain tools).
        source: What was registered (the function or the LangChain tool).
        phrases: What the customer is told when a call fails, by error type, per language
            (``{"not_found": {"en": "I could not find that order."}}``): the tool's own words, for a
            domain without phrases of its own (``phrase_key``).
        changes_declared: Whether the tool said whether it changes anything (``changes_state`` given, or an
            MCP ``readOnlyHint``/``destructiveHint``); a domain treats an undeclared tool as changing.
        precheck: For a changing tool, a function called like the tool (``[ctx,] **args``) that changes
            nothing and raises the tool's own error (``BusinessError``, ``NotFoundError``) when the change
            is impossible; the harness runs it before asking the customer to confirm (``nodes.confirm``).
    """

    name: str
    fn: Callable[..., Any]
    description: str
    args_model: type[BaseModel]
    changes_state: bool = False
    idempotent: bool = True
    timeout: float | None = 10.0
    roles: frozenset[str] | None = None  # None: every role
    phases: frozenset[str] | None = field(default_factory=lambda: _DEFAULT_PHASES)
    wants_context: bool = True
    fallback: str | None = None
    is_async: bool = False
    context_keyword: str | None = None
    arg_docs: dict[str, str] = field(default_factory=dict)
    source: Any = None
    phrases: dict[str, dict[str, str]] = field(default_factory=dict)
    changes_declared: bool = True
    precheck: Callable[..., Any] | None = None
    changes_reason: str = ""  # why changes_state is what it is (tools.effects; shown by harness domains)

    def phrase_key(self, error_type: str) -> str | None:
        """The phrase key (``<tool>:<error type>``) of this tool's own words for a failure, or None."""
        return f"{self.name}:{error_type}" if error_type in self.phrases else None

    @functools.cached_property
    def _parameters(self) -> dict[str, Any]:
        params = self_contained_schema(self.args_model.model_json_schema())
        params.pop("description", None)  # a LangChain schema repeats the tool description here
        for pname, prop in params.get("properties", {}).items():
            if "description" not in prop and pname in self.arg_docs:
                prop["description"] = self.arg_docs[pname]
        return params

    def json_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool format every LangChain chat model's ``bind_tools`` accepts."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": copy.deepcopy(self._parameters)}}

    def allowed_for(self, role: str, phase: str) -> bool:
        """Whether ``role`` may see this tool in ``phase``."""
        return (self.phases is None or phase in self.phases) and (self.roles is None or role in self.roles)

    def parse(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments ready for the call; raises ``pydantic.ValidationError``.

        Values keep their Python types (a nested model stays a model, a date a ``date``), as the
        tool's signature asks for them.
        """
        parsed = self.args_model.model_validate(args)
        if isinstance(parsed, JsonSchemaArgs):  # the JSON the tool's schema asks for, as the model sent it
            return parsed.arguments()
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}


def _frozen(value: Iterable[str] | str | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset([value] if isinstance(value, str) else value)


def _is_langchain_tool(obj: Any) -> bool:
    # Only once LangChain's tools are imported can an object be one: asking sooner would import LangChain
    # (half a second) into every command that lists a domain's tools.
    tools = sys.modules.get("langchain_core.tools")
    return tools is not None and isinstance(obj, tools.BaseTool)


def _is_async_callable(fn: Any) -> bool:
    # a callable object with an ``async def __call__`` counts too
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _langchain_parts(tool: Any) -> dict[str, Any]:
    """Name, description, args model and adapter of a LangChain ``BaseTool``."""
    schema = tool.tool_call_schema
    if isinstance(schema, dict):  # a JSON schema (MCP tools through langchain-mcp-adapters, hand-written ones)
        model: type[BaseModel] = model_for(tool.name, {k: v for k, v in schema.items() if k != "description"})
    elif isinstance(schema, type) and issubclass(schema, BaseModel):
        config = ConfigDict(**{**schema.model_config, "extra": "forbid"})
        # a subclass that forbids unknown keys, like our own argument models, without touching the tool's class
        # LangChain patches the schema class with a cached model_json_schema bound to that class, which a
        # subclass would inherit (and so lose additionalProperties): pydantic's own method is put back.
        namespace = {"model_config": config, "__module__": schema.__module__,
                     "model_json_schema": BaseModel.__dict__["model_json_schema"]}
        model = type(f"{tool.name}_args", (schema,), namespace)
    else:
        raise UsageError(f"LangChain tool {tool.name!r} has an args schema of type {type(schema).__name__}; give a "
                        "pydantic model or a JSON schema (dict)")
    description, arg_docs = _split_docstring(tool.description or "")
    is_async = getattr(tool, "func", None) is None and getattr(tool, "coroutine", None) is not None

    async def arun(**kwargs: Any) -> Any:
        return await tool.ainvoke(kwargs)

    def run(**kwargs: Any) -> Any:
        return tool.invoke(kwargs)

    return {"name": tool.name, "fn": arun if is_async else run, "description": description or tool.description,
            "args_model": model, "is_async": is_async, "arg_docs": arg_docs, "wants_context": False}


def _function_parts(fn: Callable[..., Any], name: str | None) -> dict[str, Any]:
    """Name, description, args model and context parameter of a plain (sync or async) function."""
    tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
    model, description = args_model_for(fn, tool_name)
    wants_context, keyword = _context_param(_signature(fn, tool_name))
    return {"name": tool_name, "fn": fn, "description": description, "args_model": model,
            "is_async": _is_async_callable(fn), "wants_context": wants_context, "context_keyword": keyword}


def _meta_default(obj: Any, key: str) -> Any:
    """Metadata the tool carries: a function attribute, or a LangChain tool's ``metadata`` dict (where an MCP
    tool's annotations land: ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``)."""
    metadata = getattr(obj, "metadata", None) if _is_langchain_tool(obj) else None
    if isinstance(metadata, dict):
        if key in metadata:
            return metadata[key]
        hinted = _mcp_hint(metadata, key)
        if hinted is not _MISSING:
            return hinted
    return getattr(obj, key, _MISSING)


def _mcp_hint(annotations: dict[str, Any], key: str) -> Any:
    """``changes_state`` / ``idempotent`` as an MCP tool's annotations say (unset hints say nothing).

    ``readOnlyHint: true`` reads; ``readOnlyHint: false`` or ``destructiveHint: true`` changes; a changing
    tool with ``idempotentHint: true`` may run again for the same call.
    """
    read_only, destructive = annotations.get("readOnlyHint"), annotations.get("destructiveHint")
    if key == "changes_state":
        if read_only is not None:
            return not read_only
        return True if destructive else _MISSING
    if key == "idempotent" and annotations.get("idempotentHint") is not None:
        return bool(annotations["idempotentHint"]) or read_only is True
    return _MISSING


def _declared_reason(obj: Any, meta: dict[str, Any], changes: bool) -> str:
    """How a tool said whether it changes anything (the registration, its own attribute, MCP annotations)."""
    said = "changes" if changes else "only reads"
    metadata = getattr(obj, "metadata", None) if _is_langchain_tool(obj) else None
    if "changes_state" in meta:
        return f"declared at registration: it {said}"
    if isinstance(metadata, dict) and "changes_state" not in metadata and _mcp_hint(metadata, "changes_state") \
            is not _MISSING:
        hints = {k: metadata[k] for k in ("readOnlyHint", "destructiveHint") if metadata.get(k) is not None}
        return "MCP annotations " + ", ".join(f"{k}={v}" for k, v in hints.items()) + f": it {said}"
    return f"declared by the tool: it {said}"


def build_spec(obj: Any, *, name: str | None = None, description: str | None = None, **meta: Any) -> ToolSpec:
    """A ``ToolSpec`` for a function or LangChain tool; ``meta`` overrides what the object carries.

    Raises:
        TypeError: Unknown metadata, or a signature pydantic cannot turn into a schema.
    """
    unknown = set(meta) - set(_META_KEYS)
    if unknown:
        raise UsageError(f"unknown tool metadata {sorted(unknown)}; known: {', '.join(_META_KEYS)}")
    if _is_langchain_tool(obj):
        parts = _langchain_parts(obj)
        if name:
            parts["name"] = name
    else:
        parts = _function_parts(obj, name)
    if description:
        parts["description"] = description
    for key in _META_KEYS:
        value = meta[key] if key in meta else _meta_default(obj, key)
        if value is not _MISSING:
            parts[key] = value
    parts["changes_declared"] = "changes_state" in parts
    if parts["changes_declared"]:
        parts["changes_reason"] = _declared_reason(obj, meta, bool(parts["changes_state"]))
    if "idempotent" not in parts:  # a changing tool is safe to retry only if it says it honours the key
        parts["idempotent"] = not parts.get("changes_state", False)
    parts["roles"] = _frozen(parts.get("roles"))
    parts["phases"] = _frozen(parts["phases"]) if "phases" in parts else _DEFAULT_PHASES
    spec = ToolSpec(source=obj, **parts)
    try:
        spec.json_schema()  # fail at registration, not at the first model call
    except Exception as err:  # noqa: BLE001 - pydantic raises several classes; one clear message
        raise UsageError(f"cannot build the JSON schema of tool {spec.name!r}: {err}") from err
    return spec


class ToolRegistry:
    """Tools by name; safe to change while graphs run (each model call asks for the current offer)."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._lock = threading.Lock()
        self._specs: dict[str, ToolSpec] = {spec.name: spec for spec in specs}

    def register(self, fn: Any, *, name: str | None = None, description: str | None = None,
                 **meta: Any) -> ToolSpec:
        """Register a function (sync or async) or a LangChain tool; a tool of the same name is replaced.

        Args:
            fn: A function, an ``async def`` function or a LangChain ``BaseTool``.
            name: Name the model calls; defaults to the function's or tool's name.
            description: Overrides the docstring's description.
            **meta: ``changes_state``, ``idempotent``, ``timeout``, ``roles``, ``phases``, ``fallback``,
                ``phrases``.
                Defaults come from attributes the function carries (``fn.changes_state = True``) or a
                LangChain tool's ``metadata`` dict.

        Returns:
            The registered spec.
        """
        spec = build_spec(fn, name=name, description=description, **meta)
        self.add(spec)
        return spec

    def add(self, spec: ToolSpec) -> None:
        """Add or replace a ready-made spec."""
        with self._lock:
            self._specs = {**self._specs, spec.name: spec}

    def remove(self, name: str) -> ToolSpec | None:
        """Remove a tool; calls already running finish, later offers no longer include it."""
        with self._lock:
            specs = dict(self._specs)
            removed = specs.pop(name, None)
            self._specs = specs
        return removed

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def names(self) -> list[str]:
        return list(self._specs)

    def specs(self) -> list[ToolSpec]:
        """Every registered tool, in registration order."""
        return list(self._specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def offer(self, names: Iterable[str] | None, role: str, phase: str = "action") -> list[ToolSpec]:
        """Tools offered on one model call: the named ones (all when None) the role may use in the phase.

        Computed from the registry as it is now, in the order of ``names``; unknown names are skipped.
        """
        specs = self._specs  # one consistent snapshot even if a writer swaps the dict meanwhile
        wanted = list(specs) if names is None else list(names)
        return [s for n in wanted if (s := specs.get(n)) and s.allowed_for(role, phase)]


def tool_meta(**meta: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator that sets registry metadata on a function (``@tool_meta(roles={"admin"}, timeout=3)``)."""
    unknown = set(meta) - set(_META_KEYS)
    if unknown:
        raise UsageError(f"unknown tool metadata {sorted(unknown)}; known: {', '.join(_META_KEYS)}")

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        for key, value in meta.items():
            setattr(fn, key, value)
        return fn

    return wrap


__all__ = ["ToolRegistry", "ToolSpec", "args_model_for", "build_spec", "self_contained_schema", "tool_meta"]
