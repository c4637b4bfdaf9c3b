"""Decoding that fits the step: ask the provider for output the step can use, where it can constrain it.

Two steps talk to the model. The *answer* step must produce text for the customer; the *action* step a call
that matches one offered tool's schema, or text for the customer (a question for a missing value, or the
answer once the results are in). ``constrain(model, step, tools)`` binds the model with what its provider
understands:

=================  =========================================  ==========================================
provider           answer step                                action step
=================  =========================================  ==========================================
llama.cpp (local)  GBNF grammar: words, not data              GBNF: one offered call, or words
OpenAI, ``sim``    ``response_format``: ``{"reply": text}``     strict tool schemas + the same
                   with a pattern that forbids opening data     ``response_format`` for text
Ollama             ``format``: the same JSON schema             none (its tool calls are parsed from the
                                                              template; ``format`` would break them)
anything else      none                                       none
=================  =========================================  ==========================================

A *data* step writes JSON for the harness, under a schema its caller gives (the intent step's label, one of
the domain's intents by an enum): a grammar on llama.cpp, ``response_format`` on OpenAI and the sim, ``format``
on Ollama. A *call* step is an action step that must call (a routed task with every value known and nothing run yet):
on llama.cpp its grammar has no words branch; other providers get the action step's binding. ``shown`` lists
tools in the prompt beyond the offered ones (the design knob ``stable_prefix``: the request's tools on every
step of a message that may call), on llama.cpp only, where the grammar keeps the step to what it offers.

``finish`` undoes the wrapping on the way back: a ``{"reply": ...}`` answer becomes its text, and the nulls a
strict schema makes the model write for optional arguments are dropped. Where a provider has no such field
the model is bound as before and ``finish`` changes nothing: the harness's own checks (``nodes.self_check``)
still stand behind every reply.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage

# "call": an action step whose answer must be a call (a provider with a grammar holds it to one; others are
# asked as for "action", and the harness asks again when no call comes, ``nodes.retry_declined``)
# "data": a step whose output is JSON for the harness under a schema the caller gives (the intent step's label)
Step = Literal["answer", "action", "call", "data"]
REPLY_KEY = "reply"
# Not opening with data or markup: ``llm.grammars``' first character, less its further bans (``>``, braces).
REPLY_PATTERN = r"^[^{\[<`\s]"


def reply_schema() -> dict[str, Any]:
    """The JSON schema of an answer: one string of words for the customer."""
    return {"type": "object", "additionalProperties": False, "required": [REPLY_KEY],
            "properties": {REPLY_KEY: {"type": "string", "pattern": REPLY_PATTERN,
                                       "description": "The reply to the customer, in words, in their language."}}}


def response_format() -> dict[str, Any]:
    """OpenAI's ``response_format`` for an answer (structured outputs, strict)."""
    return {"type": "json_schema", "json_schema": {"name": "customer_reply", "strict": True, "schema": reply_schema()}}


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` that also takes null: its own branches (or itself) plus a null branch, notes kept outside."""
    if "anyOf" in prop:
        kinds = prop["anyOf"]
        return prop if any(k.get("type") == "null" for k in kinds) else {**prop, "anyOf": [*kinds, {"type": "null"}]}
    notes = {k: v for k, v in prop.items() if k in ("description",)}
    body = {k: v for k, v in prop.items() if k not in ("description", "default")}
    return {**notes, "anyOf": [body, {"type": "null"}]}


def _strict_object(node: dict[str, Any]) -> dict[str, Any]:
    props = node.get("properties") or {}
    required = set(node.get("required") or [])
    out = {k: v for k, v in node.items() if k != "default"}
    out["properties"] = {k: (strict_schema(v) if k in required else _nullable(strict_schema(v))) for k, v in props.items()}
    out["required"] = list(props)
    out["additionalProperties"] = False
    return out


def strict_schema(node: Any) -> Any:
    """A JSON schema in OpenAI's strict form: every object closed, every property required, the optional
    ones nullable (the model writes null for "not given")."""
    if isinstance(node, list):
        return [strict_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "object" or "properties" in node:
        return _strict_object(node)
    return {k: (strict_schema(v) if isinstance(v, dict | list) and k not in ("enum", "const", "default") else v)
            for k, v in node.items() if k != "default"}


def strict_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function tool with ``strict: true`` and its parameters in strict form."""
    fn = copy.deepcopy(tool["function"])
    fn["parameters"] = strict_schema(fn.get("parameters") or {"type": "object", "properties": {}})
    return {"type": "function", "function": {**fn, "strict": True}}


def unwrapped(ai: AIMessage) -> AIMessage:
    """An answer written as ``{"reply": "..."}`` as its text; anything else as it came."""
    text = ai.content if isinstance(ai.content, str) else ""
    if not text.lstrip().startswith("{"):
        return ai
    try:
        data = json.loads(text)
    except ValueError:
        return ai
    if isinstance(data, dict) and isinstance(data.get(REPLY_KEY), str) and set(data) == {REPLY_KEY}:
        return ai.model_copy(update={"content": data[REPLY_KEY]})
    return ai


def _optional_args(tools: Sequence[dict[str, Any]]) -> dict[str, set[str]]:
    out = {}
    for tool in tools:
        params = tool["function"].get("parameters") or {}
        out[tool["function"]["name"]] = set(params.get("properties") or {}) - set(params.get("required") or [])
    return out


def without_nulls(ai: AIMessage, tools: Sequence[dict[str, Any]]) -> AIMessage:
    """Calls without the nulls a strict schema had the model write for optional arguments it did not give."""
    optional = _optional_args(tools)
    calls, changed = [], False
    for call in ai.tool_calls:
        drop = {k for k, v in (call.get("args") or {}).items() if v is None and k in optional.get(call["name"], ())}
        changed = changed or bool(drop)
        calls.append({**call, "args": {k: v for k, v in (call.get("args") or {}).items() if k not in drop}})
    return ai.model_copy(update={"tool_calls": calls}) if changed else ai


@dataclass(frozen=True)
class Constrained:
    """The model bound for one step, how its reply is read back, and which constraint was asked for."""

    runnable: Any
    finish: Callable[[AIMessage], AIMessage]
    kind: str  # "grammar", "json_schema", "format" or "none"


def _as_is(ai: AIMessage) -> AIMessage:
    return ai


def _bound(model: Any, tools: Sequence[dict[str, Any]], **kwargs: Any) -> Any:
    """``model`` with ``tools`` offered and ``kwargs`` on every request. The request fields are bound apart from
    ``bind_tools``: langchain-openai's reads a ``response_format`` given to it as a function schema."""
    bound = model.bind_tools(list(tools)) if tools else model
    return bound.bind(**kwargs) if kwargs else bound


def _provider(model: Any) -> str:
    """Which constraint family ``model`` speaks, from its class. Only modules already loaded are looked at: a
    model of a class whose module was never imported cannot be one (and importing ``llm.local`` would set
    its OpenMP environment for a process that runs no local model)."""
    for module, cls, family in (("lg_harness.llm.local", "LocalChatModel", "llama.cpp"),
                                ("lg_harness.llm.sim", "SimChatModel", "openai"),
                                ("langchain_openai", "ChatOpenAI", "openai"), ("langchain_ollama", "ChatOllama", "ollama")):
        kind = getattr(sys.modules.get(module), cls, None)
        if isinstance(kind, type) and isinstance(model, kind):
            return family
    return "none"


def holds_tools_by_grammar(model: Any) -> bool:
    """Whether ``model``'s provider holds a step to its offered tools by grammar (llama.cpp), so a prompt may
    list more tools than the step offers."""
    return _provider(model) == "llama.cpp"


def _data(model: Any, family: str, schema: dict[str, Any]) -> Constrained:
    """A step that writes JSON under ``schema``, held to it as its provider can."""
    if family == "llama.cpp":
        from lg_harness.llm.grammars import json_grammar

        return Constrained(model.bind(grammar=json_grammar(schema)), _as_is, "grammar")
    if family == "openai":
        fmt = {"type": "json_schema", "json_schema": {"name": "output", "strict": True, "schema": strict_schema(schema)}}
        return Constrained(model.bind(response_format=fmt), _as_is, "json_schema")
    if family == "ollama":
        return Constrained(model.bind(format=schema), _as_is, "format")
    return Constrained(model, _as_is, "none")


def constrain(model: Any, step: Step, tools: Sequence[dict[str, Any]] = (),
              shown: Sequence[dict[str, Any]] = (), schema: dict[str, Any] | None = None) -> Constrained:
    """``model`` bound with ``tools`` and the constraint its provider supports for ``step`` (see the module doc).

    ``shown``: the tools the prompt lists on every step of a message that may call (a prefix that stays put
    between them), where the grammar keeps the step to ``tools``; a provider without a grammar lists ``tools``
    only. ``schema``: what a ``data`` step writes."""
    family = _provider(model)
    if step == "data":
        return _data(model, family, schema or {"type": "object"})
    if family == "llama.cpp":
        from lg_harness.llm.grammars import action_grammar, answer_grammar, call_grammar

        grammar = (answer_grammar() if step == "answer" or not tools else
                   call_grammar(tools) if step == "call" else action_grammar(tools))
        listed = {"prefix_tools": list(shown)} if shown else {}
        return Constrained(_bound(model, tools, grammar=grammar, **listed), _as_is, "grammar")
    step = "action" if step == "call" else step
    if family == "openai":
        if step == "action" and tools:
            strict = [strict_tool(t) for t in tools]
            return Constrained(_bound(model, strict, response_format=response_format()),
                               lambda ai: without_nulls(unwrapped(ai), tools), "json_schema")
        return Constrained(_bound(model, tools, response_format=response_format()), unwrapped, "json_schema")
    if family == "ollama" and not tools:
        return Constrained(model.bind(format=reply_schema()), unwrapped, "format")
    return Constrained(_bound(model, tools), _as_is, "none")
