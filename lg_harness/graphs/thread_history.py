"""A thread's owner and checkpoints, read from the checkpoint saver and the transcripts alone, no graph.

``Harness`` answers "does this thread exist, whose is it, what are its checkpoints" through ``ThreadReader``,
and ``harness history`` uses the same reader without opening a harness, so the command needs neither
LangGraph's graph machinery nor the harness's nodes (it starts at once). What a compiled graph would
add is only ``next``, the steps due after a checkpoint; a ``StateGraph`` decides them by one rule, which
``next_steps`` applies to the saved checkpoint: a step is due when the channel that triggers it
(``branch:to:<step>``, or ``__start__`` for new input) holds a value, at a newer version than the step
last saw.
``tests/graphs/test_thread_history.py`` checks this against LangGraph's own ``get_state_history``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lg_harness.graphs.thread_ids import check_thread_id

if TYPE_CHECKING:  # a TypedDict: at run time the config is a plain dict, and this module stays light
    from langchain_core.runnables import RunnableConfig
from lg_harness.errors import HarnessError

START = "__start__"
BRANCH = "branch:to:"


def public_state(values: dict[str, Any]) -> dict[str, Any]:
    """The part of a thread's state shown to its user (``harness state``, the HTTP service's history)."""
    keep = ("phase", "intent", "slots", "missing_slots", "fact_card", "constraints", "summary", "turn",
            "turn_stats", "user", "handoff", "reply")
    return {k: values.get(k) for k in keep}


@dataclass
class Checkpoint:
    checkpoint_id: str
    step: int
    phase: str
    created_at: str
    next: list[str]
    parent_id: str | None
    turn: int = 0
    message: str = ""  # the user message the checkpoint's turn is about


def next_steps(checkpoint: dict[str, Any]) -> list[str]:
    """The steps a ``StateGraph`` runs after ``checkpoint``: those whose trigger changed since they ran."""
    versions = checkpoint.get("channel_versions") or {}
    seen = checkpoint.get("versions_seen") or {}
    held = checkpoint.get("channel_values") or {}  # a trigger that was consumed is no longer held
    due = []
    for channel, version in versions.items():
        step = START if channel == START else channel[len(BRANCH):] if channel.startswith(BRANCH) else None
        if step is None or channel not in held:
            continue
        last = (seen.get(step) or {}).get(channel)
        if last is None or _newer(version, last):
            due.append(step)
    return due


def _newer(version: Any, last: Any) -> bool:
    # Savers number versions as ints (in memory) or zero-padded strings (SQLite, Postgres); both order.
    return (version > last) if type(version) is type(last) else str(version) > str(last)


def checkpoint_row(saved: Any) -> Checkpoint:
    """One ``CheckpointTuple`` as a history row."""
    from lg_harness.memory.messages import last_human_text

    values = saved.checkpoint.get("channel_values") or {}
    parent = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    return Checkpoint(checkpoint_id=saved.config["configurable"]["checkpoint_id"],
                      step=int((saved.metadata or {}).get("step", -1)), phase=str(values.get("phase") or "-"),
                      created_at=saved.checkpoint.get("ts") or "", next=next_steps(saved.checkpoint),
                      parent_id=parent, turn=int(values.get("turn") or 0),
                      message=last_human_text(values.get("messages") or []))


def read_history(saver: Any, thread_id: str, *, every: bool = True) -> list[Checkpoint]:
    """The checkpoints of ``thread_id`` (its main graph, not subgraphs), newest first: every one, or (``every``
    False) the current branch, from the head back through each checkpoint's parent."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    rows = [checkpoint_row(saved) for saved in saver.list(config)]
    return rows if every else branch(rows)


def branch(rows: list[Checkpoint]) -> list[Checkpoint]:
    """The head (the newest) and its ancestors: after a fork, the checkpoints the thread goes on from, not
    the ones the fork left behind. Where ``graphs.step_pruning`` removed a message's steps, a parent id names
    a checkpoint that is gone; the walk goes on from the newest one older than it, which is the one those
    steps followed (a thread's messages run one at a time, and a fork's copy is newer than what it leaves)."""
    by_id = {r.checkpoint_id: r for r in rows}
    found, at = [], rows[0] if rows else None
    while at is not None:
        found.append(at)
        parent = at.parent_id
        if parent is None:
            break
        at = by_id.get(parent) or next((r for r in rows if r.checkpoint_id < parent), None)
    return found


def fork_point(values: dict[str, Any], pending: list[str]) -> tuple[int, bool]:
    """The customer message a checkpoint stands at, and whether it stands inside it: before the intent step
    has counted the next message (that message), in the middle of one (it), or after one (it, finished; a
    wait for a human is after the message that asked for one)."""
    turn = int(values.get("turn") or 0)
    running = [p for p in pending if p != "human"]
    if {START, "intent"} & set(running):
        return turn + 1, True
    return turn, bool(running)


def unknown_thread(thread_id: str) -> HarnessError:
    """One answer for a thread that does not exist and for another user's, so asking tells nobody which
    thread ids are taken."""
    return HarnessError(f"unknown thread '{thread_id}': none of your threads has this id; start one with: "
                        "harness run \"...\" --thread <an id of your own>")


def thread_config(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
    """The graph config of a thread (at one of its checkpoints); every way to a thread passes here, so its id
    is checked here."""
    configurable: dict[str, Any] = {"thread_id": check_thread_id(thread_id)}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


class ThreadReader:
    """Whether a thread exists, whose it is, and its checkpoints: from a checkpoint saver and the transcripts."""

    def __init__(self, checkpointer: Any, transcripts: Any) -> None:
        self.checkpointer = checkpointer
        self.transcripts = transcripts

    def exists(self, thread_id: str) -> bool:
        return self.checkpointer.get_tuple(thread_config(thread_id)) is not None

    def require(self, thread_id: str) -> None:
        if not self.exists(thread_id):
            raise unknown_thread(thread_id)

    def owner_of(self, thread_id: str, values: dict[str, Any] | None = None) -> str | None:
        """The user a thread belongs to: recorded with its first message (older threads: in the checkpoint)."""
        if (owner := self.transcripts.owner(thread_id)) is not None:
            return owner
        if values is None:
            tup = self.checkpointer.get_tuple(thread_config(thread_id))
            stored: dict[str, Any] = (tup.checkpoint.get("channel_values") or {}) if tup is not None else {}
            values = stored
        return (values.get("user") or {}).get("id") or None

    def check_owner(self, thread_id: str, user_id: str, values: dict[str, Any] | None = None,
                    domain: str | None = None) -> None:
        """Refuse ``user_id`` a thread someone else started (reading it as much as writing to it). A thread
        that ran on another domain than ``domain`` (the spec the caller runs) says so: each domain has its
        own users, so its owner is not the caller's default user, and "unknown thread" would mislead."""
        owner = self.owner_of(thread_id, values)
        if owner and owner != user_id:
            recorded = self.transcripts.domain_of(thread_id)
            if domain and recorded and recorded != domain:
                raise HarnessError(f"thread '{thread_id}' belongs to domain '{recorded}', not '{domain}': continue "
                                   f"it with --domain {recorded}, or start a new thread for {domain} with another "
                                   "--thread")
            raise unknown_thread(thread_id)

    def history(self, thread_id: str, *, every: bool = False) -> list[Checkpoint]:
        """The checkpoints of the thread's current branch, newest first (``every``: all of them)."""
        self.require(thread_id)
        return read_history(self.checkpointer, thread_id, every=every)
