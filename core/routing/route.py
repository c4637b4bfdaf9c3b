"""Which node follows ``intent``, ``collect``, ``action`` and ``self_check``: written once, as rules.

Every design routes through ``DEFAULT_RULES``. A design's own ``rules`` (rule text, see ``core/routing/rules.py``)
replace them for the nodes they have rules for; the other nodes keep the default. The predicates the rules
read (quotas, brakes, ``handoff_allowed``) are the pure functions of ``core/routing/guards.py``. One route is not a
rule, so no design can drop it: after ``action``, a change that may have applied before a crash goes to
``handoff`` (``graphs.builder.uncertain_first``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from lg_harness.core.knobs import Knobs
from lg_harness.core.routing.rules import RuleSet, compile_rules

NODES = ("intent", "collect", "action", "reply", "self_check", "handoff")
ROUTED = ("intent", "collect", "action", "self_check")
BUILTIN_RULES = "builtin:guards"  # what older design files wrote for "the default rules"; still accepted

# Intents are read by their domain kind, so no domain's intent names appear here.
DEFAULT_RULES: str = """\
intent -> handoff when intent_kind == "to-human"
intent -> handoff when unknown_streak >= unknown_intent_handoff and handoff_allowed
intent -> reply when intent_kind == "conversational"
intent -> collect

# ask for what is missing and end the turn
collect -> END when missing_slots > 0
collect -> action

action -> END when busy                       # the model was unreachable: the 'busy' reply already went out
action -> reply when last_ai_has_no_tool_calls
action -> handoff when repeated_invalid_call and handoff_allowed
action -> reply when repeated_invalid_call    # the customer asked not to be transferred: answer instead
action -> reply when stop_reason != null      # quota, repeated call, no progress or max rounds
action -> collect when invented_argument or invalid_calls > validation_repairs
action -> action

self_check -> reply when not check_ok and regenerations < max_regenerations
# an escalating intent (a complaint), a failed check or a used-up quota go to a person, unless asked not to
self_check -> handoff when (not check_ok or intent_kind == "escalate" or quota_exceeded != null) and handoff_allowed
self_check -> END
"""


@cache
def default_rules() -> RuleSet:
    return compile_rules(DEFAULT_RULES, NODES)


def design_rules(text: str | None) -> RuleSet | None:
    """A design's own rules, compiled; None when it has none (or names the default)."""
    if not text or text == BUILTIN_RULES:
        return None
    return compile_rules(text, NODES)


def rules_for(source: str, own: RuleSet | None) -> RuleSet:
    """The rule set that routes ``source``: the design's own where it has rules for it, else the default."""
    return own if own is not None and source in own.sources else default_rules()


def next_node(source: str, state: Any, knobs: Knobs, own: RuleSet | None = None) -> str:
    """Where the graph goes after ``source`` in ``state`` (``"__end__"`` for END)."""
    return rules_for(source, own).router(source, knobs)(state)
