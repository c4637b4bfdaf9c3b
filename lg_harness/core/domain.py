"""A domain: everything that varies between one assistant's job and another's, as one value passed in.

The harness core (graphs, nodes, memory, tools, llm, evals) knows no shop, ticket or order. A ``Domain``
carries the system prompt, intents with their rules and routes, entity types, phrases, the words that pin
constraints against tools, how a handoff is made, the users, the backends and the scenario sets. It is
passed to ``build_graph(..., domain=...)`` and ``Harness(..., domain=...)`` like the model and the registry,
never looked up globally. See ``load_domain`` for where a domain can come from.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lg_harness.core.claims import Claim
from lg_harness.errors import UsageError
from lg_harness.tools.entities import EntityType, derived_types, entity_args, find_mentions
from lg_harness.tools.registry import ToolRegistry, ToolSpec

IntentKind = Literal["task", "conversational", "to-human", "escalate"]
Lang = str  # "en", "zh", ...


@dataclass(frozen=True)
class Route:
    """What a task intent needs: slot groups (a group is met when any slot in it is known), tools, roles.

    ``roles`` None lets every role start the task; tools are filtered again by each tool's own roles.
    """

    required: tuple[tuple[str, ...], ...] = ()
    tools: tuple[str, ...] = ()
    roles: frozenset[str] | None = None


NO_ROUTE = Route()


@dataclass(frozen=True)
class Intent:
    """One thing users come for.

    Attributes:
        name: The label the classifier gives and routes key on.
        description: One line, for model-based classification and the docs.
        kind: ``task`` runs collect/action; ``conversational`` is answered without tools; ``to-human``
            goes straight to a human; ``escalate`` runs its task and then hands off (a complaint).
        rules: Keywords per language; the first intent (in declaration order) whose keyword occurs without
            a negation right before it wins.
        examples: Example messages per language, for the embedding fallback.
        route: Slots, tools and roles of a task.
        entity_hint: An entity type whose bare mention means this intent ("ORD-10001" alone asks for status).
    """

    name: str
    description: str = ""
    kind: IntentKind = "task"
    rules: Mapping[Lang, tuple[str, ...]] = field(default_factory=dict)
    examples: Mapping[Lang, tuple[str, ...]] = field(default_factory=dict)
    route: Route = NO_ROUTE
    entity_hint: str = ""


@dataclass(frozen=True)
class Handoff:
    """How a human takes over: a domain tool that opens the ticket (its reason argument, the result key
    holding the ticket id), or None to queue the thread in the harness's own handoff queue only."""

    tool: str | None = None
    reason_arg: str = "reason"
    ticket_key: str = "ticket_id"
    # Called with (resources, thread id, user id) once a human answered, so the domain's ticket is closed
    # and a later handoff on the thread (after a fork, say) opens a new one instead of the answered one.
    answered: Callable[[Mapping[str, Any], str, str], None] | None = None


@dataclass(frozen=True)
class BenchScript:
    """The conversation ``harness bench context|graph`` plays in a domain.

    Attributes:
        messages: One user's conversation with ``{placeholders}``: an identifier in turn 1, then lookups and
            acknowledgements. Reading tools only, so it can repeat to 200 turns without changing the backend.
        facts: ``(resources, user id) -> placeholder values`` read from the seeded backend.
        recall_question: One of ``messages``: asks what the user gave at the very start.
        recall_key: The placeholder whose value the recall reply must contain (the identifier of turn 1).
        graph_messages: The shorter script ``bench graph`` cycles (every message calls a tool); empty uses
            ``messages``.
    """

    messages: tuple[str, ...]
    facts: Callable[[Mapping[str, Any], str], dict[str, str]]
    recall_question: str
    recall_key: str
    graph_messages: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.recall_question not in self.messages:
            raise UsageError("BenchScript.recall_question must be one of its messages: copy it from `messages`")
        if "{" + self.recall_key + "}" not in self.messages[0]:
            raise UsageError(f"BenchScript.recall_key '{self.recall_key}' is not a placeholder of the first message: "
                             f"write {{{self.recall_key}}} into messages[0], or name one of its placeholders")

    @property
    def recall_turn(self) -> int:
        """The 1-based turn of the recall question."""
        return self.messages.index(self.recall_question) + 1


# A classifier: message text -> (intent, confidence 0..1).
Classifier = Callable[[str], tuple[str, float]]
# A slot extractor: (intent, message text) -> value or None.
SlotExtractor = Callable[[str | None, str], Any]


@dataclass(eq=False)  # compared and hashed by identity: one value per loaded pack
class Domain:
    """Everything domain-specific, in one value. Only ``name`` is required; the rest has generic defaults.

    Attributes:
        name: Short name (``shop``, ``helpdesk``), shown by ``harness domains``.
        description: One line about the domain.
        system_prompt: The system layer of every model call.
        intents: In rule order (specific before generic). A domain with no intents sends every message to
            the tool loop as one open task.
        entity_types: Identifiers users and tools exchange (see ``tools.entities``).
        tools: Tool functions or LangChain tools; ``registry()`` builds a fresh registry of them.
        phrases: ``key -> {lang: text}`` over the core's generic phrases (``ask_<slot>`` asks for a slot).
        constraint_words: ``tool name or "tag:<tag>" -> words`` a pinned negative constraint uses to forbid it.
        slot_extractors: Free-text slots (``query``) from a message.
        slot_words: ``slot -> words`` a reply uses when it asks for that slot (the evaluation counts a
            question for a slot the user already answered); without them, the ``ask_<slot>`` phrases count.
        classifier: Replaces the rule + embedding classifier built from ``intents`` (keep behaviour of an
            existing classifier); None uses the generic one.
        handoff: How a human takes over.
        users: ``user id -> {"id", "role", ...}`` or None for unknown users; None accepts any non-empty id.
        default_user: The user the CLI acts as when none is given.
        default_role: The role of a user the directory does not describe.
        roles: The roles the domain knows.
        open_resources: ``(place) -> {name: backend}``; ``place("x.sqlite")`` is a file in the data dir
            (``":memory:"`` without one) and ``place.database_url`` the harness's Postgres URL or None
            (``tools.backend.BackendPlace``; ``SeededDB.open_at`` picks). Backends with ``close()`` are
            closed with the harness.
        fresh_resources: Backends for one evaluation cell (a fresh copy of the seeded data).
        scenarios: ``set name -> file or folder`` of scenario files; ``builtin`` is the default set.
        demo: The user messages ``harness demo`` plays (at least four: it forks after the third).
        demo_check: ``resources -> (what, value)`` the demo prints after replaying the fourth message, to
            show that the replay changed nothing twice.
        empty_keys: Result keys whose lists being empty means "found nothing".
        languages: Languages the rules and phrases cover.
        bench: The conversation ``harness bench context|graph`` plays, or None (those benchmarks refuse).
        claims: Phrases a reply states facts with and what the results must hold for them
            (``core.claims``); the self-check corrects a reply whose claim a result contradicts.
        follow_up: ``(message, previous intent, previous slots) -> (intent, slots)`` for a message that only
            refines the previous request ("what about in black?"), else None.
        currency: The currency the domain's amounts are in (``USD``), for money shown to people.
    """

    name: str
    description: str = ""
    system_prompt: str = ("You are a helpful assistant. Use the tools offered to look things up or make changes; "
                          "never invent identifiers, amounts or statuses. State only facts that the tools returned "
                          "or the user said. Answer in the user's language.")
    intents: Sequence[Intent] = ()
    entity_types: Sequence[EntityType] = ()
    tools: Sequence[Any] = ()
    phrases: Mapping[str, Mapping[Lang, str]] = field(default_factory=dict)
    constraint_words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    slot_extractors: Mapping[str, SlotExtractor] = field(default_factory=dict)
    slot_words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    classifier: Classifier | None = None
    handoff: Handoff = field(default_factory=Handoff)
    users: Callable[[str, Mapping[str, Any]], dict[str, Any] | None] | None = None
    default_user: str = "user"
    default_role: str = "customer"
    roles: tuple[str, ...] = ("customer",)
    open_resources: Callable[[Callable[[str], str]], dict[str, Any]] | None = None
    fresh_resources: Callable[[], dict[str, Any]] | None = None
    scenarios: Mapping[str, str | Path] = field(default_factory=dict)
    demo: tuple[str, ...] = ()
    demo_check: Callable[[Mapping[str, Any]], tuple[str, Any]] | None = None
    empty_keys: tuple[str, ...] = ("results", "items")
    languages: tuple[str, ...] = ("en",)
    bench: BenchScript | None = None
    claims: Sequence[Claim] = ()
    follow_up: Callable[[str, str | None, Mapping[str, Any]], tuple[str, dict[str, Any]] | None] | None = None
    currency: str = ""

    # -- intents and routes

    def intent(self, name: str | None) -> Intent | None:
        return next((i for i in self.intents if i.name == name), None)

    def intent_names(self) -> list[str]:
        return [i.name for i in self.intents]

    def route(self, intent: str | None) -> Route:
        found = self.intent(intent)
        return found.route if found is not None else NO_ROUTE

    def kind(self, intent: str | None) -> IntentKind:
        """``unknown`` and intents the domain does not declare are conversational: nothing to run; a domain
        without intents has one open task, the tool loop over all its tools."""
        if not self.intents:
            return "task"
        found = self.intent(intent)
        return found.kind if found is not None else "conversational"

    def missing_slots(self, intent: str | None, slots: Mapping[str, Any]) -> list[str]:
        """The first slot of every required group that has no value yet."""
        return [group[0] for group in self.route(intent).required if not any(slots.get(s) for s in group)]

    # -- entities

    def entity_type(self, name: str) -> EntityType | None:
        return next((t for t in self.entity_types if t.name == name), None)

    def entities_in(self, text: str) -> dict[str, list[str]]:
        """Entity type -> distinct canonical mentions in ``text`` (see ``tools.entities.find_mentions``)."""
        return find_mentions(self.entity_types, text)

    def tool_entities(self, spec: ToolSpec) -> dict[str, str]:
        """Argument -> entity type of one tool: ``Entity`` markers, a declared type its schema fits, or the type
        its own schema gives (``tools.entities.entity_args``)."""
        cache = self.__dict__.setdefault("_tool_entities", {})
        key = (spec.name, spec.args_model)
        if key not in cache:  # schemas are fixed once registered; read each once
            params = spec.json_schema()["function"]["parameters"]
            cache[key] = entity_args(spec.args_model.model_fields, params, self.entity_types)
        return dict(cache[key])

    def all_entity_types(self) -> tuple[EntityType, ...]:
        """The declared entity types, then those the tools' own schemas give for arguments no declared type
        fits (``tools.entities.derived_types``): what a reply's identifiers are grounded against."""
        derived = self.__dict__.get("_derived_types")
        if derived is None:
            registry = self.registry()
            schemas = [spec.json_schema()["function"]["parameters"] for n in registry.names() if (spec := registry.get(n))]
            derived = self.__dict__["_derived_types"] = tuple(derived_types(schemas, self.entity_types))
        return (*self.entity_types, *derived)

    def slot_entities(self) -> dict[str, EntityType]:
        return {t.slot: t for t in self.entity_types if t.slot}

    # -- tools, phrases, users

    def registry(self) -> ToolRegistry:
        """A new registry of the domain's tools (each call is separate: callers may wrap or change it).

        A tool that does not say whether it changes anything is treated as changing (confirmed before it
        runs, recorded in the change ledger, never retried blindly); the first build logs which ones.
        """
        specs = self.__dict__.get("_specs")
        if specs is None:  # building a spec reads signatures and schemas: once per domain, not per registry
            scratch = ToolRegistry()
            for tool in self.tools:
                scratch.register(tool)
            specs = self.__dict__["_specs"] = _undeclared_as_changing(self.name, [scratch.get(n) for n in scratch.names()])
        return ToolRegistry(specs)

    def changing_tools(self) -> frozenset[str]:
        """The domain's tools that change state (``changes_state``): their calls are decisions."""
        registry = self.registry()
        return frozenset(n for n in registry.names() if (spec := registry.get(n)) is not None and spec.changes_state)

    def phrase(self, key: str, lang: Lang) -> str | None:
        """The domain's phrase ``key`` in ``lang``; a ``<tool>:<error type>`` key is the tool's own words
        (``ToolSpec.phrases``) unless the domain words it itself."""
        texts = self.phrases.get(key)
        if not texts and ":" in key:
            spec = next((s for s in self.__dict__.get("_specs") or () if s.name == key.split(":", 1)[0]), None)
            texts = spec.phrases.get(key.split(":", 1)[1]) if spec is not None else None
        if not texts:
            return None
        return texts.get(lang) or texts.get("en") or next(iter(texts.values()))

    def user(self, user_id: str, resources: Mapping[str, Any]) -> dict[str, Any] | None:
        if self.users is None:
            return {"id": user_id, "role": self.default_role}
        return self.users(user_id, resources)

    def scenario_path(self, name: str = "builtin") -> Path:
        from lg_harness.errors import HarnessError

        if name not in self.scenarios:
            known = ", ".join(self.scenarios) or "none"
            raise HarnessError(f"domain '{self.name}' has no scenario set '{name}'; its sets: {known}")
        return Path(self.scenarios[name])

    def describe(self) -> dict[str, Any]:
        """What ``harness domains --json`` prints about the domain."""
        return {"name": self.name, "description": self.description,
                "intents": [{"name": i.name, "kind": i.kind, "tools": list(i.route.tools)} for i in self.intents],
                "entity_types": [t.name for t in self.entity_types],
                "derived_entity_types": [t.name for t in self.all_entity_types()[len(self.entity_types):]],
                "tools": [s for s in self.registry().names()],
                "tool_details": [{"name": s.name, "arguments": sorted((s.json_schema()["function"].get("parameters") or {})
                                                                       .get("properties", {})),
                                  "changes": s.changes_state, "why": s.changes_reason or
                                  ("declared by the domain" if s.changes_declared else "")}
                                 for s in self.registry().specs()],
                "roles": list(self.roles), "languages": list(self.languages), "scenario_sets": list(self.scenarios),
                "handoff_tool": self.handoff.tool}


def _undeclared_as_changing(domain: str, specs: list[Any]) -> tuple[ToolSpec, ...]:
    """Tools that say nothing get a verdict from their own name and description (``tools.effects``); those
    that give no sign either way are treated as changing, the safe side, and named in a warning."""
    from lg_harness.tools.effects import infer

    out, verdicts = [], []
    for s in specs:
        if s.changes_declared:
            out.append(s)
            continue
        effect = infer(s.name, s.description)
        verdicts.append(f"{s.name} {'changes' if effect.changes else 'only reads'} ({effect.reason})")
        out.append(dataclasses.replace(s, changes_state=effect.changes, idempotent=not effect.changes,
                                       changes_reason=effect.reason))
    if verdicts:  # an inferred "only reads" runs without asking: the operator should see every guess
        logging.getLogger("harness.domain").warning(
            "domain '%s': %d tool(s) do not say whether they change anything; judged from their own words: %s. "
            "A changing tool is confirmed before it runs and recorded in the change ledger. Declare "
            "changes_state=True or changes_state=False where a guess is wrong (tool_meta, a function attribute, "
            "or readOnlyHint on an MCP tool); harness domains --domain shows each verdict",
            domain, len(verdicts), "; ".join(verdicts))
    return tuple(out)


_SPEC = re.compile(r"^(?P<path>.+?)(?::(?P<attr>[A-Za-z_][A-Za-z0-9_]*))?$")
ENTRY_POINT_GROUP = "lg_harness.domains"


def _from_object(obj: Any, origin: str) -> Domain:
    from lg_harness.errors import HarnessError

    value = obj() if callable(obj) and not isinstance(obj, Domain) else obj
    if not isinstance(value, Domain):
        raise HarnessError(f"{origin} is not a Domain (got {type(value).__name__}); "
                           "export a core.domain.Domain value or a function returning one")
    return value


def installed_domains() -> dict[str, Any]:
    """Entry points of the ``lg_harness.domains`` group, by name (packs installed with pip)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _from_file(path: Path, attr: str | None, spec: str) -> Domain:
    import importlib.util

    from lg_harness.errors import HarnessError

    if path.suffix in (".yaml", ".yml"):
        return _from_yaml(path)
    module_name = f"_harness_domain_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise HarnessError(f"cannot load domain file {path}")
    import sys

    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    loader_spec.loader.exec_module(module)
    return _attr_domain(module, attr or "DOMAIN", spec)


def _from_yaml(path: Path) -> Domain:
    """A domain file in YAML (``core.domain_yaml`` reads and checks it)."""
    from lg_harness.core.domain_yaml import read_domain_yaml

    spec, fields = read_domain_yaml(path)
    intents = tuple(
        Intent(name=i.name, description=i.description, kind=i.kind, rules={k: tuple(v) for k, v in i.rules.items()},
               examples={k: tuple(v) for k, v in i.examples.items()}, entity_hint=i.entity_hint,
               route=Route(required=tuple(tuple(g) for g in i.route.required), tools=tuple(i.route.tools),
                           roles=frozenset(i.route.roles) if i.route.roles is not None else None))
        for i in spec.intents)
    return Domain(intents=intents, handoff=Handoff(**spec.handoff.model_dump()), **fields)


def _attr_domain(module: Any, attr: str, spec: str) -> Domain:
    from lg_harness.errors import HarnessError

    if not hasattr(module, attr):
        raise HarnessError(f"domain '{spec}': {getattr(module, '__name__', module)} has no attribute '{attr}'")
    return _from_object(getattr(module, attr), f"domain '{spec}'")


MCP_PREFIX = "mcp:"


def mcp_domain(target: str) -> Domain:
    """A domain of the tools of one MCP server (``tools.mcp``): a command line (stdio) or an http(s) URL."""
    from lg_harness.errors import HarnessError
    from lg_harness.tools.mcp import mcp_tools

    if not target.strip():
        raise HarnessError("--domain mcp: needs the server: mcp:<command line> (stdio) or mcp:http(s)://host/path")
    try:
        tools = mcp_tools(target)
    except (ConnectionError, ValueError, UsageError) as err:
        raise HarnessError(f"{err}; check the command or URL after mcp:") from err
    server = next((t.metadata.get("mcp_server") for t in tools if t.metadata), None) or "mcp"
    return Domain(name=str(server), description=f"the tools of the MCP server {target}", tools=tools)


DEFAULT_PACK = "shop"
CONFIG_FILE = "harness.toml"
DOMAIN_ENV = "HARNESS_DOMAIN"
# Domains loaded in this process from a spec (a file, module:attr, an MCP server), by name: an evaluation
# record names the domain it ran in, and scoring it finds the same domain again by that name.
_LOADED_BY_NAME: dict[str, Domain] = {}


def default_domain(folder: Path | None = None) -> tuple[str, str]:
    """The domain spec to use when none is given, and where it was found: ``HARNESS_DOMAIN``, else
    ``domain = "..."`` in ``harness.toml`` in ``folder`` (the working directory), else the ``shop`` pack."""
    import tomllib

    from lg_harness.errors import HarnessError

    if spec := os.environ.get(DOMAIN_ENV, "").strip():
        return spec, f"${DOMAIN_ENV}"
    config = (folder or Path.cwd()) / CONFIG_FILE
    if config.is_file():
        try:
            spec = str(tomllib.loads(config.read_text(encoding="utf-8")).get("domain") or "").strip()
        except (OSError, tomllib.TOMLDecodeError) as err:
            raise HarnessError(f"{config}: {err}; write domain = \"<pack, file.py:ATTR or mcp:...>\"") from err
        if spec:
            return spec, str(config)
    return DEFAULT_PACK, "the built-in default"


def load_domain(spec: str | Domain | None) -> Domain:
    """A domain from an installed pack's name, ``module:attr``, ``path.py[:attr]``, a YAML file, or
    ``mcp:<command or URL>`` (the tools of an MCP server).

    ``None`` is the default (``default_domain``). Names resolve through the ``lg_harness.domains`` entry
    points, then to a domain this process already loaded from a spec under that name.
    """
    from lg_harness.errors import HarnessError

    if isinstance(spec, Domain):
        return spec
    spec = spec or default_domain()[0]
    packs = installed_domains()
    if spec in packs:
        return _from_object(packs[spec].load(), f"domain '{spec}'")
    if spec in _LOADED_BY_NAME:
        return _LOADED_BY_NAME[spec]
    domain = _from_spec(spec)
    if domain is None:
        known = ", ".join(sorted(packs)) or "none installed"
        raise HarnessError(f"unknown domain '{spec}'; installed: {known}; or give module:attr, file.py[:attr], "
                           "file.yaml or mcp:<command or URL>")
    _LOADED_BY_NAME.setdefault(domain.name, domain)
    return domain


def _from_spec(spec: str) -> Domain | None:
    """A domain from an MCP server, a file or ``module:attr``; None when ``spec`` is none of them."""
    import importlib

    from lg_harness.errors import HarnessError

    if spec.startswith(MCP_PREFIX):
        return mcp_domain(spec[len(MCP_PREFIX):])
    match = _SPEC.match(spec)
    path_text, attr = (match.group("path"), match.group("attr")) if match else (spec, None)
    path = Path(path_text).expanduser()
    if path.suffix in (".py", ".yaml", ".yml"):
        if not path.is_file():
            raise HarnessError(f"domain file {path} does not exist")
        return _from_file(path, attr, spec)
    if not attr:
        return None
    try:
        module = importlib.import_module(path_text)
    except ImportError as err:
        raise HarnessError(f"domain '{spec}': cannot import {path_text} ({err})") from err
    return _attr_domain(module, attr, spec)


def where_found(name: str) -> str:
    """Where ``harness domains`` says an installed pack comes from: its entry point and distribution."""
    ep = installed_domains().get(name)
    if ep is None:
        return "loaded in this process"
    dist = getattr(getattr(ep, "dist", None), "name", None)
    return f"entry point {ENTRY_POINT_GROUP}: {ep.value}" + (f" (package {dist})" if dist else "")


__all__ = ["CONFIG_FILE", "DEFAULT_PACK", "DOMAIN_ENV", "ENTRY_POINT_GROUP", "MCP_PREFIX", "BenchScript", "Domain",
           "Handoff", "Intent", "NO_ROUTE", "Route", "default_domain", "installed_domains", "load_domain", "mcp_domain",
           "where_found"]
