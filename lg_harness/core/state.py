"""The typed state every node reads and updates.

Reducers decide how a node's partial update merges into the checkpointed state: messages append (by id),
the fact card and slots merge key by key (``None`` deletes), constraints accumulate without duplicates.
Per-message fields (``turn_stats``, ``tool_log``) are replaced wholesale by the node that owns them, and
the working ``messages`` are trimmed at the start of each turn, so a checkpoint does not grow with the
conversation; the full transcript lives in the transcript store.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from lg_harness.errors import UsageError


def merge_dict(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Merge key by key; a ``None`` value deletes the key; ``{"__reset__": True}`` clears first."""
    merged = dict(left or {})
    right = dict(right or {})
    if right.pop("__reset__", False):
        merged = {}
    for key, value in right.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def union_list(left: list[str] | None, right: list[str] | None) -> list[str]:
    return list(dict.fromkeys([*(left or []), *(right or [])]))


MAX_KNOWN_IDS = 1000


def remember_ids(left: list[str] | None, right: list[str] | None) -> list[str]:
    """New ids appended (one seen again moves to the end), the newest ``MAX_KNOWN_IDS`` kept: the record is
    bounded, so a checkpoint does not grow with the conversation (``memory.known_ids``)."""
    merged = dict.fromkeys(left or [])
    for value in right or []:
        merged.pop(value, None)
        merged[value] = None
    return list(merged)[-MAX_KNOWN_IDS:]


class UserInfo(TypedDict):
    id: str
    role: str


class NotTheOwner(UsageError, ValueError):
    """A message on a thread from someone other than the user who started it."""


def keep_owner(left: UserInfo | None, right: UserInfo | None) -> UserInfo:
    """The thread's user: set by its first message, never replaced by another user (the role may change).

    Checked in the state itself, so every way into the graph (the ``Harness``, the LangGraph server, a
    notebook calling ``invoke``) refuses a second user and a message without one.
    """
    if not right:
        return left or {}  # type: ignore[return-value]
    new_id = str(right.get("id") or "").strip()
    if not new_id:
        raise NotTheOwner("a message needs the id of the user who sends it")
    old_id = (left or {}).get("id")
    if old_id and old_id != new_id:
        raise NotTheOwner("this thread belongs to another user; use your own thread id")
    return right


# The LangGraph server writes the authenticated caller here (from the auth hook); a client cannot set it
# (langgraph_api refuses reserved configurable keys).
AUTHENTICATED_USER = "langgraph_auth_user_id"
STAFF_PREFIX = "@"  # "@agent": the human-agent desk, acting on a customer's thread, never a customer itself


def acting_user(state: Any, config: Any) -> UserInfo:
    """The user tools act for: the thread's user, checked against the run's authenticated caller.

    The state's ``user`` is a record of who owns the thread, not a credential: on the LangGraph server a run
    carries its caller in ``configurable.langgraph_auth_user_id``, and a state whose user is someone else (a
    state write, an old checkpoint whose user was still empty) is refused before anything runs. The desk
    (an identity starting with ``@``) acts on a customer's thread for that customer. Without an authenticated
    caller (the ``Harness``, which checks the owner itself, or a program invoking the graph) the state's user
    stands.
    """
    user: UserInfo = dict(state.get("user") or {})  # type: ignore[assignment]
    caller = str(((config or {}).get("configurable") or {}).get(AUTHENTICATED_USER) or "").strip()
    if caller and not caller.startswith(STAFF_PREFIX) and str(user.get("id") or "") != caller:
        raise NotTheOwner("this thread's user is not the authenticated caller; a run acts for its caller only "
                          "(send a message as yourself on your own thread)")
    return user


class ToolCallRecord(TypedDict, total=False):
    id: str
    name: str
    args: dict[str, Any]
    signature: str
    status: str  # ok | error | blocked
    error_type: str | None
    error: str | None
    exception: str | None
    attempts: int
    timings_ms: dict[str, float]
    round: int
    empty: bool  # ok but brought nothing new (empty list, or the same result as before)
    result_digest: str | None  # the result as the model saw it, to answer an identical call again
    emitted_args: dict[str, Any]  # the arguments as the model emitted them, before any harness rewrite
    reached_tool: bool  # handed to the executor (False: screened out and answered by the harness)
    customer: dict[str, Any]  # a failed call's customer phrase: {"phrase": key, "values": {...}}
    ledger_key: str  # a changing call's key in the change ledger (tools.ledger)


class TurnStats(TypedDict, total=False):
    """Counters for the message being handled; reset when a new user message starts."""

    rounds: int
    model_calls: int
    input_tokens: int
    cached_input_tokens: int  # of input_tokens, what the provider's prompt cache served
    output_tokens: int
    tool_calls: int
    tool_errors: int
    regenerations: int
    started_at: float
    elapsed_s: float
    model_latency_s: float  # modelled (sim) or measured (real model) time spent in model calls
    call_input_tokens: list[int]
    call_steps: list[dict[str, Any]]  # per model call: the tools offered, the tool calls run before it
    speed: dict[str, float]  # a local engine's timings summed: prompt_eval_tokens/_s, generated_tokens, generation_s
    pace: float  # how much slower than the design's deadlines assume the model is on this machine (nodes.base)
    model_failures: int  # model calls that failed for good (nodes.base.call_model)
    model_error: str  # the last one's error


class HarnessState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    user: Annotated[UserInfo, keep_owner]
    turn: int
    phase: str  # intent | collect | action | reply | self_check | handoff | done
    intent: str | None
    intent_kind: str  # the domain's kind of the intent: task | conversational | to-human | escalate
    handoff_blocked: str | None  # the pinned constraint that forbids handing off, if any
    intent_confidence: float
    offer_intents: list[str]  # an unsure intent step's candidates: their routes' tools are offered (knob unsure_offer)
    slots: Annotated[dict[str, Any], merge_dict]
    missing_slots: list[str]
    fact_card: Annotated[dict[str, Any], merge_dict]
    constraints: Annotated[list[str], union_list]
    summary: str
    tool_log: list[ToolCallRecord]
    turn_stats: TurnStats
    totals: Annotated[dict[str, Any], merge_dict]
    reply: str
    check: dict[str, Any]  # the last self-check verdict
    handoff: dict[str, Any] | None
    unknown_streak: int
    task_anchor_id: str | None  # the message that started the current task (kept by the anchored window)
    context_account: dict[str, int]  # tokens per context layer of the last model call
    recalled: list[str]  # long-term experiences relevant to this message
    recalled_ids: list[str]
    known_facts: dict[str, Any]  # long-term facts about the user (from earlier sessions)
    pending_change: dict[str, Any] | None  # changing calls waiting for the user's yes (nodes.confirm)
    settled_change: dict[str, Any] | None  # how the last confirmation was answered: {"answer", "turn"}
    refused: dict[str, Any] | None  # a task the user's role cannot do, refused at once: {"intent", "turn"}
    goal_tools: list[str]  # the tools the task's route exists for (guards.goal_reached)
    request_intents: list[str]  # a message asking several things: each one's intent, in the message's order
    request_parts: list[str]  # and the words of the message that ask each one
    goal_groups: list[list[str]]  # ... and each one's goal tools: the goal is reached when every group's is
    confirmed_change: dict[str, Any] | None  # the calls this message's yes confirmed, run once by action
    planned_calls: dict[str, Any] | None  # the calls action decided this round (round, calls, emitted), run by execute
    known_ids: Annotated[list[str], remember_ids]  # every id the customer typed or a result showed (memory.known_ids)


StateUpdate = HarnessState
"""What a node returns: the keys it changes, nothing else; the reducers above merge them into the state (a
``None`` in ``slots`` deletes that slot, new ``messages`` append or replace by id, ``constraints`` accumulate).
The same TypedDict as the state (every key optional), so the type checker checks each key and value a node
writes. One gap: ``messages`` is typed as the state holds them (``AnyMessage``), and a ``RemoveMessage`` (which
the reducer deletes by id, and never stores) is not one; the lists that carry removals (``nodes.reply``,
``memory.context.turn_upkeep``) are not checked for it."""
