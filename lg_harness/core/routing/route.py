"""Which node follows ``intent``, ``collect``, ``action`` and ``self_check``, for a design.

Every design routes through the Python routers of ``lg_harness/core/routing/routers.py``. A design that writes its own
``rules`` (rule text, see ``lg_harness/core/routing/rules.py``) routes the nodes it has rules for with them; the other
nodes keep the routers. The hand-built lightweight agent's write-up states its routes as such rules, so its
preset carries ``LIGHTWEIGHT_RULES``, which route as the routers do (``tests/core/test_guards.py`` runs every case
through both). One route is neither, so no design can drop it: after ``action``, a change that may have
applied before a crash goes to ``handoff`` (``graphs.builder.uncertain_first``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lg_harness.core.knobs import Knobs
from lg_harness.core.routing import routers
from lg_harness.core.routing.rules import RuleSet, compile_rules

NODES = ("intent", "collect", "action", "reply", "self_check", "handoff")
ROUTED = tuple(routers.ROUTERS)
BUILTIN_RULES = "builtin:guards"  # what older design files wrote for "the default routes"; still accepted

# The hand-built agent's routes in its rule language (custom-lightweight). Intents are read by their domain
# kind, so no domain's intent names appear here.
LIGHTWEIGHT_RULES: str = """\
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


def design_rules(text: str | None) -> RuleSet | None:
    """A design's own rules, compiled; None when it has none (or names the default)."""
    if not text or text == BUILTIN_RULES:
        return None
    return compile_rules(text, NODES)


def router_for(source: str, knobs: Knobs, own: RuleSet | None = None) -> tuple[Callable[[Any], str], tuple[str, ...]]:
    """The conditional-edge function after ``source`` and the nodes it can return: the design's own rules
    where it has rules for ``source``, else the router of ``lg_harness/core/routing/routers.py``."""
    if own is not None and source in own.sources:
        return own.router(source, knobs), tuple(own.targets(source))
    return routers.bound(source, knobs), routers.targets(routers.ROUTERS[source])


def next_node(source: str, state: Any, knobs: Knobs, own: RuleSet | None = None) -> str:
    """Where the graph goes after ``source`` in ``state`` (``"__end__"`` for END)."""
    return router_for(source, knobs, own)[0](state)
