"""The routes every design takes unless it writes its own: which node follows ``intent``, ``collect``,
``action`` (after ``execute``) and ``self_check``, as pure functions of the graph state and the design's knobs.

Each returns a ``Literal`` of node names, and the graph reads its edges from those annotations
(:func:`targets`), as LangGraph's ``tools_condition`` does. The predicates are the guards'
(``lg_harness/core/routing/guards.py``). A design that writes rules in the rule language (``lg_harness/core/routing/rules.py``, the
hand-built agent's way) routes the nodes it has rules for with them instead (``lg_harness/core/routing/route.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, get_args, get_type_hints

from lg_harness.core.knobs import Knobs
from lg_harness.core.routing import guards

if TYPE_CHECKING:  # the state schema loads LangGraph's graph; routers only read dicts (as the guards do)
    from lg_harness.core.state import HarnessState

END = "__end__"  # LangGraph's end node (langgraph.graph.END), spelled out so this module stays light

AfterIntent = Literal["handoff", "reply", "collect"]
AfterCollect = Literal["__end__", "action"]
AfterAction = Literal["__end__", "reply", "handoff", "collect", "action"]
AfterSelfCheck = Literal["reply", "handoff", "__end__"]


def after_intent(state: HarnessState, knobs: Knobs) -> AfterIntent:
    kind = state.get("intent_kind")
    if kind == "to-human":
        return "handoff"
    if (state.get("unknown_streak") or 0) >= knobs.unknown_intent_handoff and guards.handoff_allowed(state):
        return "handoff"  # the customer keeps saying what no route serves
    if kind == "conversational":
        return "reply"
    return "collect"


def after_collect(state: HarnessState, knobs: Knobs) -> AfterCollect:
    # something missing: the collect step asked for it, and the turn ends with the question
    return END if state.get("missing_slots") else "action"


def after_action(state: HarnessState, knobs: Knobs) -> AfterAction:
    if guards.busy(state):  # the model was unreachable: the 'busy' reply already went out
        return END
    if guards.answered_in_words(state):
        return "reply"
    if guards.repeated_invalid_call(state):  # a person, unless the customer asked not to be transferred
        return "handoff" if guards.handoff_allowed(state) else "reply"
    if guards.stop_reason(state, knobs) is not None:  # quota, repeated call, no progress or max rounds
        return "reply"
    if guards.invented_argument(state) or guards.invalid_calls(state) > knobs.validation_repairs:
        return "collect"
    return "action"


def after_self_check(state: HarnessState, knobs: Knobs) -> AfterSelfCheck:
    ok = guards.check_ok(state)
    if not ok and guards.regenerations(state) < knobs.max_regenerations:
        return "reply"
    # an escalating intent (a complaint), a failed check or a used-up quota go to a person, unless asked not to
    escalate = not ok or state.get("intent_kind") == "escalate" or guards.quota_exceeded(state, knobs) is not None
    if escalate and guards.handoff_allowed(state):
        return "handoff"
    return END


Router = Callable[["HarnessState", Knobs], str]
ROUTERS: Mapping[str, Router] = {"intent": after_intent, "collect": after_collect, "action": after_action,
                                 "self_check": after_self_check}


def targets(router: Router) -> tuple[str, ...]:
    """The nodes ``router`` can return: the members of its ``Literal`` return annotation."""
    # the state schema is imported for type checking only; its name stands for any mapping here
    return get_args(get_type_hints(router, localns={"HarnessState": Any})["return"])


def bound(source: str, knobs: Knobs) -> Callable[[Any], str]:
    """The router after ``source`` with the design's knobs fixed (copied now, so it stays pure), as a
    conditional-edge function ``state -> node``."""
    router, frozen = ROUTERS[source], knobs.model_copy(deep=True)

    def route(state: Any) -> str:
        return router(state, frozen)

    route.__name__ = route.__qualname__ = f"route_after_{source}"
    route.__annotations__ = {"return": Literal[targets(router)]}
    return route
