"""A domain's declarative parts written as YAML; its tools are named as ``module:function`` references.

```yaml
name: library
system_prompt: You are a library assistant.
tools: [library_tools:get_book, library_tools:renew_loan]   # importable from the file's folder
entity_types:
  - {name: book, pattern: 'BOOK-(\\d{4})', canonical: 'BOOK-{0}', examples: [BOOK-0042], slot: book_id, remember: true}
intents:
  - {name: renew, kind: task, rules: {en: [renew, extend]}, route: {required: [[book_id]], tools: [renew_loan]}}
phrases: {ask_book_id: {en: "Which book?"}}
resources: library_tools:open_backends   # optional: (path_for) -> {name: backend}
scenarios: {builtin: scenarios/}          # relative to the file
```
Every key is checked; an unknown one is an error that lists the known keys.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lg_harness.errors import HarnessError
from lg_harness.tools.entities import EntityType


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RouteSpec(_Strict):
    required: list[list[str]] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    roles: list[str] | None = None


class IntentSpec(_Strict):
    name: str
    description: str = ""
    kind: Literal["task", "conversational", "to-human", "escalate"] = "task"
    rules: dict[str, list[str]] = Field(default_factory=dict)
    examples: dict[str, list[str]] = Field(default_factory=dict)
    route: RouteSpec = Field(default_factory=RouteSpec)
    entity_hint: str = ""


class EntitySpec(_Strict):
    name: str
    pattern: str
    canonical: str = ""
    examples: list[str] = Field(default_factory=list)
    slot: str = ""
    remember: bool = False
    ground: bool = True
    upper: bool = False
    card: bool = True
    card_key: str = ""


class HandoffSpec(_Strict):
    tool: str | None = None
    reason_arg: str = "reason"
    ticket_key: str = "ticket_id"


class DomainSpec(_Strict):
    name: str
    description: str = ""
    system_prompt: str | None = None
    tools: list[str] = Field(default_factory=list)
    intents: list[IntentSpec] = Field(default_factory=list)
    entity_types: list[EntitySpec] = Field(default_factory=list)
    phrases: dict[str, dict[str, str]] = Field(default_factory=dict)
    constraint_words: dict[str, list[str]] = Field(default_factory=dict)
    slot_words: dict[str, list[str]] = Field(default_factory=dict)
    handoff: HandoffSpec = Field(default_factory=HandoffSpec)
    default_user: str = "user"
    default_role: str = "customer"
    roles: list[str] = Field(default_factory=lambda: ["customer"])
    resources: str | None = None
    scenarios: dict[str, str] = Field(default_factory=dict)
    demo: list[str] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=lambda: ["en"])


def _reference(ref: str, where: Path) -> Any:
    """``module:attr`` imported with the YAML file's folder on the path."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise HarnessError(f"{where}: '{ref}' is not a module:attr reference")
    folder = str(where.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise HarnessError(f"{where}: cannot load '{ref}' ({err})") from err


def _entity(spec: EntitySpec) -> EntityType:
    return EntityType(**{**spec.model_dump(), "examples": tuple(spec.examples)})


def read_domain_yaml(path: str | Path) -> tuple[DomainSpec, dict[str, Any]]:
    """A YAML domain file, checked: its spec, and the ``Domain`` fields made from it but its intents and
    handoff, which ``core.domain`` builds from the spec (this module imports no ``Domain``: ``load_domain``
    calls it). Errors name the file, the field and what is accepted."""
    path = Path(path)
    try:
        spec = DomainSpec.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except (OSError, yaml.YAMLError) as err:
        raise HarnessError(f"cannot read domain file {path}: {err}") from err
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise HarnessError(f"domain file {path}: {where}: {first['msg']}; known keys: "
                           f"{', '.join(DomainSpec.model_fields)}") from err
    extra: dict[str, Any] = {}
    if spec.system_prompt:
        extra["system_prompt"] = spec.system_prompt
    if spec.resources:
        extra["open_resources"] = _reference(spec.resources, path)
    return spec, dict(
        name=spec.name, description=spec.description, entity_types=tuple(_entity(e) for e in spec.entity_types),
        tools=tuple(_reference(t, path) for t in spec.tools), phrases=spec.phrases,
        constraint_words={k: tuple(v) for k, v in spec.constraint_words.items()},
        slot_words={k: tuple(v) for k, v in spec.slot_words.items()},
        default_user=spec.default_user, default_role=spec.default_role, roles=tuple(spec.roles),
        scenarios={k: (path.parent / v) for k, v in spec.scenarios.items()}, demo=tuple(spec.demo),
        languages=tuple(spec.languages), **extra)
