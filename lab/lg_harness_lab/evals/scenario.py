"""Scenario files: user turns and what must hold after each turn.

A scenario is one conversation of one user. Expectations describe observable behaviour only (what the
user sees and what tools ran), so every design is judged the same way. The model never sees them.
"""

from __future__ import annotations

import hashlib
from itertools import zip_longest
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lg_harness.errors import HarnessError
from lg_harness_lab.evals.clusters import cluster_of
from lg_harness_lab.evals.scenario_files import invalid_scenario, read_rows

Tag = Literal["single", "multi-turn", "slot-filling", "long", "referential", "correction", "negation",
              "role", "adversarial", "injection", "unicode", "tool-faults", "zh", "en", "handoff", "handwritten", "confirmation"]


class ToolExpect(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict, description="each given arg must match exactly")


class TurnExpect(BaseModel):
    """What must hold after one user turn. Every field is optional; unset means 'not checked'."""

    model_config = ConfigDict(extra="forbid")

    intent: str | None = None
    tools: list[ToolExpect] | None = Field(default=None, description="calls that must succeed this turn (subset)")
    no_tools: bool = Field(default=False, description="no tool may run this turn (e.g. a slot question)")
    must_not_call: list[str] = Field(default_factory=list)
    no_changes: bool = Field(default=False, description="no state-changing tool may succeed this turn (a question, a "
                             "hypothetical, a changed mind); an attempt the harness held back is fine")
    reply_contains: list[str] = Field(default_factory=list, description="all must appear (case-insensitive)")
    reply_contains_any: list[str] = Field(default_factory=list, description="at least one must appear")
    reply_excludes: list[str] = Field(default_factory=list)
    asks_for: str | None = Field(default=None, description="the reply must ask for this slot (a route's slot name)")
    handoff: bool | None = None
    recall: bool = Field(default=False, description="this turn asks about something said earlier in the conversation")
    completes_task: bool = Field(default=False, description="the turn finishes the scenario's task")


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str
    expect: TurnExpect = Field(default_factory=TurnExpect)
    confirm: str | None = Field(default=None, description="what the user answers if the harness asks to confirm a change "
                                "(default: yes in the scenario's language, the user who asked for it means it; "
                                "no on a turn that expects no change in a scenario tagged changed-mind, "
                                "hypothetical, said-no or negation)")


class Change(BaseModel):
    """One change the backend must show at the end: a row inserted, updated or deleted (``evals.world``).

    Values are literals (strings compared after trimming, numbers numerically) or matchers:
    ``{any: true}`` (present, non-empty), ``{contains: text}`` (case-insensitive), ``{one_of: [...]}``.
    """

    model_config = ConfigDict(extra="forbid")

    table: str
    op: Literal["insert", "update", "delete"]
    row: dict[str, Any] | None = Field(default=None, description="insert: columns the new row must have (others free)")
    key: dict[str, Any] | None = Field(default=None, description="update/delete: which row")
    set: dict[str, Any] | None = Field(default=None, description="update: columns that must hold these values; no other "
                                       "column may change but the backend's bookkeeping")

    @model_validator(mode="after")
    def _complete(self) -> Change:
        if self.op == "insert" and self.row is None:
            raise ValueError(f"an insert into {self.table} needs 'row' (the columns the new row must have)")
        if self.op != "insert" and not self.key:
            raise ValueError(f"an {self.op} of {self.table} needs 'key' (which row)")
        if self.op == "update" and not self.set:
            raise ValueError(f"an update of {self.table} needs 'set' (the columns that must hold new values)")
        return self


class Outcome(BaseModel):
    """The backend's end state after the whole conversation: these changes and nothing else
    (``changes: []``: the conversation must leave the backend as it found it)."""

    model_config = ConfigDict(extra="forbid")

    changes: list[Change] = Field(default_factory=list)
    allowed: list[Change] = Field(default_factory=list, description="changes that may be there but need not: "
                                  "neither required nor wrong (a complaint filed on the way to a human)")


class Known(BaseModel):
    """Something the customer knows and gives when asked: its value and the words a question for it uses."""

    model_config = ConfigDict(extra="forbid")

    value: str
    about: list[str] = Field(default_factory=list, description="how a question for it is worded, in the customer's "
                             "language and others (\"order number\", \"order id\", \"订单号\"); default: the name")


FactKind = Literal["id", "status", "amount", "date", "count", "name", "text"]


class Told(BaseModel):
    """A fact the customer must be told, checked by value in the replies (``evals.fact_judge``)."""

    model_config = ConfigDict(extra="forbid")

    kind: FactKind
    value: str | int | float
    record: str | None = Field(default=None, description="the record the fact is about (an id): a reply that "
                               "states another value of this kind about it is a false fact")
    field: str | None = Field(default=None, description="for kind status: the result field whose vocabulary "
                              "applies (default: status)")


class Task(BaseModel):
    """One thing the customer came for, in order."""

    model_config = ConfigDict(extra="forbid")

    ask: list[str] = Field(min_length=1, description="the request, first wording first; a later one when asked again")
    change: bool = Field(default=False, description="the task asks for a change (the customer expects a question "
                         "whether to go ahead)")
    confirm: Literal["yes", "no"] = Field(default="yes", description="how the customer answers that question")
    told: list[Told] = Field(default_factory=list, description="what the customer must be told for this task")


class Goal(BaseModel):
    """A customer with a goal (``evals.customer.GoalCustomer``): what they know and what they want."""

    model_config = ConfigDict(extra="forbid")

    knows: dict[str, Known] = Field(default_factory=dict)
    tasks: list[Task] = Field(min_length=1)
    max_turns: int | None = Field(default=None, ge=1, description="the conversation ends after this many customer "
                                  "messages (default 4 + 3 per task)")


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    user_id: str | None = Field(default=None, description="the user; default: the domain's demo user")
    role: str | None = None
    lang: Literal["en", "zh"] = "en"
    tags: list[str] = Field(default_factory=list)
    tool_faults: dict[str, list[str]] = Field(
       default_factory=dict, description="tool name -> faults injected on its calls in order: "
        "timeout, rate_limited, server_error, malformed, ok")
    turns: list[Turn] = Field(default_factory=list, description="a scripted conversation; or a ``goal`` instead")
    goal: Goal | None = Field(default=None, description="a customer with a goal, who reacts to the replies "
                              "(``evals.customer``); judged on ``outcome`` and the facts its tasks must be told")
    outcome: Outcome | None = Field(default=None, description="the backend's end state; without it the scenario is judged "
                                    "on its turns alone")

    @model_validator(mode="after")
    def _one_kind(self) -> Scenario:
        if bool(self.turns) == bool(self.goal):
            raise ValueError(f"scenario {self.id}: give either 'turns' (a script) or 'goal' (a customer with a goal)")
        if self.goal is not None and self.outcome is None:
            raise ValueError(f"scenario {self.id}: a goal needs an 'outcome' (the backend's end state; "
                             "'changes: []' when nothing may change)")
        return self


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Scenarios from a .jsonl/.json/.yaml file or a folder of them (sorted by file name)."""
    p = Path(path)
    files = sorted(x for x in p.rglob("*") if x.suffix in (".jsonl", ".json", ".yaml", ".yml")) if p.is_dir() else [p]
    if not files or not all(f.is_file() for f in files):
        raise HarnessError(f"no scenario files at {p}")
    out: list[Scenario] = []
    for f in files:
        out.extend(_load_file(f))
    ids = [s.id for s in out]
    if len(ids) != len(set(ids)):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise HarnessError(f"duplicate scenario ids: {', '.join(dupes[:5])}")
    return out


def _load_file(f: Path) -> list[Scenario]:
    """A file's scenarios; a file that cannot be used is one line naming the file, the line and the field."""
    text, rows = read_rows(f)
    out = []
    for index, row in enumerate(rows):
        try:
            out.append(Scenario.model_validate(row))
        except ValidationError as err:
            raise HarnessError(invalid_scenario(f, text, index, row, err)) from None
    return out


def spread(scenarios: list[Scenario], k: int) -> list[Scenario]:
    """``k`` scenarios that cover the suite: round-robin over scenario kinds (the clusters the report's
    intervals resample, :func:`evals.clusters.cluster_of`), alternating languages inside each kind.

    Covering as many kinds as possible matters more than covering tags: an interval over few clusters is
    wide, and a subset that leaves templates out says nothing about them.
    """
    groups: dict[str, dict[str, list[Scenario]]] = {}
    for s in scenarios:
        groups.setdefault(cluster_of(s), {}).setdefault(s.lang, []).append(s)
    queues = []
    for i, (_, by_lang) in enumerate(sorted(groups.items())):
        langs = sorted(by_lang, reverse=bool(i % 2))  # kinds take turns at which language comes first
        queues.append([s for row in zip_longest(*(by_lang[lang] for lang in langs)) for s in row if s is not None])
    picked: list[Scenario] = []
    while len(picked) < k and any(queues):
        for q in queues:
            if q and len(picked) < k:
                picked.append(q.pop(0))
    return picked


# ------------------------------------------------------------------------------------------ dev / test

SPLITS = ("dev", "test", "heldout", "all")
DEV_FRACTION = 0.30
HELD_OUT_TAGS = frozenset({"heldout"})
TEST_TAGS = frozenset({"handwritten", "held-out"})
DEV_TAGS = frozenset({"dev-goal"})  # goal scenarios written for tuning (lab/lg_harness_lab/packs/<d>/goals/dev.yaml)


def split_of(scenario: Scenario) -> str:
    """``dev``, ``test`` or ``heldout``, by a rule that depends on the scenario alone, so it never moves
    between runs.

    - A scenario tagged ``heldout`` (written without looking at the routing rules or the generator, and
      frozen once written: ``lab/lg_harness_lab/packs/<d>/scenarios/heldout/``) is always ``heldout``.
    - A goal scenario written for tuning (tag ``dev-goal``) is always ``dev``.
    - A hand-written scenario (tag ``handwritten`` or ``held-out``: written beside the project's rules) is
      always ``test``.
    - Any other scenario is ``dev`` when the first 8 hex digits of the SHA-256 of its id, read as a
      fraction of 2**32, fall below ``DEV_FRACTION`` (about 30%), else ``test``.

    Rules, budgets and knobs are tuned on ``dev`` only; reports are on ``test`` and ``heldout``
    (``harness compare --split test,heldout``). Tuning on a scenario and then reporting on it measures the
    tuning, not the harness; nothing is ever tuned on ``heldout``.
    """
    if HELD_OUT_TAGS & set(scenario.tags):
        return "heldout"
    if DEV_TAGS & set(scenario.tags):
        return "dev"
    if TEST_TAGS & set(scenario.tags):
        return "test"
    share = int(hashlib.sha256(scenario.id.encode("utf-8")).hexdigest()[:8], 16) / 2**32
    return "dev" if share < DEV_FRACTION else "test"


def select_split(scenarios: list[Scenario], split: str) -> list[Scenario]:
    """The scenarios of one split (``all``: every one), in their original order."""
    if split not in SPLITS:
        raise HarnessError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    return [s for s in scenarios if split == "all" or split_of(s) == split]


def parse_splits(spec: str) -> list[str]:
    """``test`` or ``test,heldout``: the splits a comparison reports, each checked."""
    names = [p.strip() for p in spec.split(",") if p.strip()]
    bad = [n for n in names if n not in SPLITS]
    if not names or bad or len(set(names)) != len(names):
        raise HarnessError(f"unknown split {spec!r}: --split takes distinct names out of {', '.join(SPLITS)} "
                           "(e.g. test,heldout)")
    return names
