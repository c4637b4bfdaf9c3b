"""The harness as an application: a model, a domain, a design and its settings, and one call per user message.

The CLI, notebooks and tests all go through ``Harness``, so input checks, thread ownership and error
messages are written once. What it opens, ``graphs.opening`` opens (``graphs.settings``: where and how it keeps
it). What a message returns is ``graphs.result.SendResult``; finishing a stopped message is
``graphs.recovery``; threads a human takes over are ``graphs.human_hold``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.types import Durability

from lg_harness.core.design import Design, load_design
from lg_harness.core.domain import Domain, default_domain, load_domain
from lg_harness.errors import HarnessError, RunError, UsageError
from lg_harness.graphs.human_hold import HumanHold
from lg_harness.graphs.model_health import model_unavailable, unanswered
from lg_harness.graphs.opening import open_parts
from lg_harness.graphs.recovery import Recovery
from lg_harness.graphs.result import SendResult, send_result
from lg_harness.graphs.runtime import default_runtime
from lg_harness.graphs.settings import Parts, Settings
from lg_harness.graphs.step_pruning import prune_steps
from lg_harness.graphs.storage_faults import storage_problem
from lg_harness.graphs.thread_history import Checkpoint, ThreadReader, fork_point, thread_config
from lg_harness.llm.factory import close_model, make_model
from lg_harness.obs.tracing import current_trace_id, message_span
from lg_harness.tools.text import clean_text

__all__ = ["Harness", "Parts", "SendResult", "Settings"]


class Harness:
    """One model, one domain, one design and their settings; ``send`` runs one user message on a thread."""

    def __init__(self, model: BaseChatModel | str = "sim", domain: Domain | str | None = None,
                 design: Design | str = "harness", settings: Settings | None = None) -> None:
        """Open (or create) a harness: ``model`` a spec (``sim``, ``sim:clean``, ``local:...``,
        ``ollama:...``, ``openai:...``) or a LangChain chat model; ``domain`` a ``Domain``, an installed pack's name,
        ``module:attr`` or a file (default: the configured pack); ``design`` a ``Design`` or a preset's name
        or design file; ``settings`` where it keeps its state and how (``graphs.settings.Settings``: the data
        dir, by default ``.harness``; ``Settings(data_dir=None)`` keeps everything in memory).
        """
        if model is None or isinstance(model, Path) or not isinstance(model, (str, BaseChatModel)):
            raise UsageError(f"Harness(model, domain, design, settings) takes the model first: a spec "
                             f"such as 'sim:clean' or a chat model, not {type(model).__name__}; the data dir "
                             "goes in Settings(data_dir=...)")
        if settings is not None and not isinstance(settings, Settings):
            raise UsageError(f"Harness(..., settings=...) takes a Settings value, not "
                             f"{type(settings).__name__}: Settings(data_dir=..., database_url=..., durability=...)")
        self.settings = settings = settings or Settings()
        self.durability: Durability = settings.durability
        self.runs_messages = settings.runs_messages
        self.runtime = settings.runtime or default_runtime()
        # the parts that work on this harness's threads, each an object of its own (graphs.thread_host)
        self.recovery, self.holds = Recovery(self), HumanHold(self)
        self.domain = load_domain(domain)
        self.design = load_design(design) if isinstance(design, str) else design
        # how a customer's text is read, chosen once from the design (knob normalize_input)
        self.customer_text: Callable[[str], str] = clean_text if self.design.knobs.normalize_input else str
        # How to open this harness again: the preset name or design file, the model spec if any, the domain.
        self.setup = (design if isinstance(design, str) else self.design.name,
                      model if isinstance(model, str) else None,
                      domain if isinstance(domain, str) else (None if domain is not None else default_domain()[0]))
        self._owns_model = isinstance(model, str)
        self.model = make_model(model, domain=self.domain) if isinstance(model, str) else model
        try:
            self.opened = open_parts(self.model, self.domain, self.design, settings, self.runtime)
        except BaseException:
            if self._owns_model:
                close_model(self.model)
            raise
        opened = self.opened
        self.data_dir, self.resources, self.stores = opened.data_dir, opened.resources, opened.stores
        self.checkpointer, self.memory, self.registry, self.graph = (opened.checkpointer, opened.memory,
                                                                     opened.registry, opened.graph)
        self.transcripts, self.audit = self.stores.transcripts, self.stores.audit
        self.order = self.stores.order
        self.threads = ThreadReader(self.checkpointer, self.transcripts)
        self.on_update: Any = None  # called with (thread_id, update) for each node's update (graphs.service)

    def close(self) -> None:
        self.opened.close()
        if self._owns_model:
            close_model(self.model)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- users, threads, messages

    def user(self, user_id: str | None, role: str | None = None) -> dict[str, str]:
        uid = (user_id or "").strip()
        if not uid:
            raise UsageError(f"no user given: every message acts for one user; pass user_id (--user), e.g. "
                             f"the domain's demo user {self.domain.default_user}")
        found = self.domain.user(uid, self.resources)
        if found is None:
            raise UsageError(f"unknown user '{uid}' in domain '{self.domain.name}'; "
                             f"try --user {self.domain.default_user}")
        return {"id": str(found["id"]), "role": role or str(found.get("role") or self.domain.default_role)}

    # Who owns a thread and whether it exists are read the one way harness history reads them too
    # (graphs.thread_history.ThreadReader, which needs no graph).

    def owner_of(self, thread_id: str, values: dict[str, Any] | None = None) -> str | None:
        return self.threads.owner_of(thread_id, values)

    def check_owner(self, thread_id: str, user_id: str, values: dict[str, Any] | None = None) -> None:
        self.threads.check_owner(thread_id, user_id, values, domain=self.setup[2])

    config = staticmethod(thread_config)

    def thread_exists(self, thread_id: str) -> bool:
        return self.threads.exists(thread_id)

    def require_thread(self, thread_id: str) -> None:
        self.threads.require(thread_id)

    def check_message(self, text: str, *, as_typed: bool = False) -> str:
        """The message as the graph gets it, or ``UsageError`` for one no store can keep (an unpaired surrogate),
        an empty one or one over the design's limit. A customer's text is normalised when the design says so
        (``normalize_input``: full-width forms, dashes, invisible characters); ``as_typed`` keeps a person's
        words exactly as written (a human agent's answer: full-width punctuation included), outer blanks aside."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:  # a lone surrogate: JSON can carry one, no store can keep it
            raise UsageError(f"the message holds an unpaired surrogate (U+{ord(text[err.start]):04X}) at "
                             f"character {err.start}; send valid UTF-8 text") from None
        cleaned = (text if as_typed else self.customer_text(text)).strip()
        if not cleaned:
            raise UsageError("empty message: type what you need, e.g. harness run \"hello, I need help\"")
        limit = self.design.knobs.max_message_chars
        if len(cleaned) > limit:
            raise UsageError(f"message is {len(cleaned):,} characters; the limit is {limit:,} "
                             "(design knob max_message_chars): shorten it or split it")
        return cleaned

    # -- one message

    def send(self, thread_id: str, text: str, user_id: str | None = None, role: str | None = None) -> SendResult:
        """Run one user message; messages on one thread run one at a time, in the order they arrived."""
        self._require_messages()
        message = self.check_message(text)
        user = self.user(user_id, role)
        running = self.memory.writer.during_message() if self.memory is not None else contextlib.nullcontext()
        # long-term memory's writer waits while a message runs here, so the reply goes out first
        with self.order.turn(thread_id), running:
            try:
                return self._send(thread_id, message, user)
            except HarnessError:
                raise
            except Exception as err:
                if (problem := storage_problem(err)) is None:
                    raise
                raise RunError(f"{problem} ({err}); {self.recovery.saved_state(thread_id)}") from err

    def _send(self, thread_id: str, message: str, user: dict[str, str]) -> SendResult:
        snapshot = self.graph.get_state(self.config(thread_id))
        self.check_owner(thread_id, user["id"], snapshot.values)
        self.transcripts.claim(thread_id, user["id"])
        turn = self.holds.next_turn(thread_id, snapshot)
        # the setup first: a message that only reached the transcript is finished with the design, model and
        # domain it was sent with (harness resume --finish reads them)
        self.transcripts.record_setup(thread_id, *self.setup)
        self.transcripts.append(thread_id, turn, "user", message)
        if "human" in snapshot.next:
            return self.holds.while_waiting(thread_id, snapshot, turn)
        if self.holds.is_held(thread_id):
            return self.holds.while_held(thread_id, snapshot, message, turn)
        return self.run_graph(thread_id, {"messages": [HumanMessage(message)], "user": user}, turn, user["id"])

    def _require_messages(self) -> None:
        if not self.runs_messages:
            raise UsageError("this harness was opened to read threads only (runs_messages=False); open it "
                             "without that to run messages")

    def run_graph(self, thread_id: str, graph_input: Any, turn: int, user_id: str | None = None, *,
                  human: str | None = None) -> SendResult:
        """Run the graph on a thread (new input, a resume ``Command``, or None to finish pending steps) and
        record the message: its reply in the transcript (``human``: written by that human agent, not the bot),
        its span and audit row."""
        self._require_messages()
        with message_span(thread_id, user_id, turn):
            trace_id = current_trace_id()
            path = self._stream(thread_id, graph_input)
            prune_steps(self.checkpointer, thread_id)
            snapshot = self.graph.get_state(self.config(thread_id))
            if (failure := unanswered(snapshot.values.get("turn_stats") or {})) is not None:
                raise model_unavailable(self.setup[1], failure, thread_id)
            reply = snapshot.values.get("reply") or ""
            if human is None:
                self.transcripts.append(thread_id, turn, "assistant", reply)
            else:
                self.transcripts.append(thread_id, turn, "assistant", reply, author="human", author_name=human or None)
            if "human" in snapshot.next:
                ticket = str((snapshot.values.get("handoff") or {}).get("ticket", "pending"))
                self.transcripts.open_handoff(thread_id, ticket)
        result = self.result(thread_id, snapshot, path, trace_id=trace_id)
        if self.audit is not None:
            stats = snapshot.values.get("turn_stats") or {}
            self.audit.record_message(thread_id, turn, completed=result.phase == "done",
                                      rounds=result.usage.model_calls,
                                      latency_ms=stats.get("model_latency_s", 0.0) * 1000,
                                      input_tokens=result.usage.input_tokens, trace_id=trace_id)
        return result

    def _stream(self, thread_id: str, graph_input: Any) -> list[str]:
        """The nodes a run went through; each node's update goes to ``on_update`` as it comes."""
        path: list[str] = []
        try:
            # "exit" (the default): the message is saved when it ends or pauses, a failure included; "sync":
            # each step is saved before the next one starts (graphs.step_pruning says which are kept).
            for update in self.graph.stream(graph_input, self.config(thread_id), stream_mode="updates",
                                            durability=self.durability):
                path.extend(k for k in update if k != "__interrupt__")
                if self.on_update is not None:
                    self.on_update(thread_id, update)
        except Exception as err:  # noqa: BLE001 - the checkpoint keeps the state up to the failing step
            problem = storage_problem(err)
            cause = f"{problem} ({err})" if problem else f"the graph stopped with {type(err).__name__}: {err}"
            raise RunError(f"{cause}; {self.recovery.saved_state(thread_id)}") from err
        return path

    def result(self, thread_id: str, snapshot: Any, path: list[str], **given: Any) -> SendResult:
        """The result of a message on this harness from a saved state (``graphs.result.send_result``)."""
        return send_result(thread_id, self.design.name, self.domain.name, snapshot, path, **given)

    def saved_state(self, thread_id: str) -> str:
        """What is saved of ``thread_id`` after a failure, and what to do about the message that failed."""
        return self.recovery.saved_state(thread_id)

    # -- human handoff (graphs.human_hold)

    def waiting_threads(self) -> list[dict[str, Any]]:
        """Threads paused for a human, with what the operator needs (who, the handoff's reason, ticket, pinned
        constraints, summary and fact card, the last message), personal data masked: contact details reach
        the agent who answers through the thread itself, not through a queue listing every customer."""
        return self.holds.waiting_threads()

    def held_threads(self) -> list[dict[str, Any]]:
        """Threads a human answered and still holds (``harness handoff release`` gives them back)."""
        return self.holds.held_threads()

    def human_reply(self, thread_id: str, text: str, agent: str | None = None) -> SendResult:
        """Answer a waiting thread as the human agent (``agent``: their name, as the transcript shows it); the
        thread resumes and the answer, kept exactly as typed, is its reply."""
        return self.holds.human_reply(thread_id, text, agent)

    def release(self, thread_id: str) -> dict[str, Any]:
        """The human hands a thread they hold back to the bot."""
        return self.holds.release(thread_id)

    # -- checkpoints and recovery (graphs.recovery)

    def history(self, thread_id: str, *, every: bool = False) -> list[Checkpoint]:
        """The checkpoints of the thread's current branch, newest first (``every``: those earlier forks left
        behind too; ``graphs.thread_history``)."""
        return self.threads.history(thread_id, every=every)

    def state(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        self.require_thread(thread_id)
        if checkpoint_id and self.checkpointer.get_tuple(self.config(thread_id, checkpoint_id)) is None:
            raise UsageError(f"unknown checkpoint '{checkpoint_id}' on thread '{thread_id}'; "
                             f"list them with: harness history --thread {thread_id}")
        snap = self.graph.get_state(self.config(thread_id, checkpoint_id))
        # ``next`` leaves out tasks whose writes were saved before the crash: they are still owed their
        # checkpoint and whatever follows them, so ``pending`` lists every task the checkpoint holds.
        return {"thread_id": thread_id, "checkpoint_id": (snap.config.get("configurable") or {}).get("checkpoint_id"),
                "next": list(snap.next), "pending": [t.name for t in snap.tasks], "values": snap.values}

    def unanswered_message(self, thread_id: str, values: dict[str, Any]) -> tuple[int, str] | None:
        """A user message the transcript holds beyond the thread's last finished turn, with no reply."""
        return self.recovery.unanswered_message(thread_id, values)

    def finish(self, thread_id: str, checkpoint_id: str | None = None) -> SendResult:
        """Complete a message that stopped part-way (a crash, or ``checkpoint_id``: an earlier mid-message
        checkpoint to fork from first) on the state it stopped with; the result is that message's, as
        ``send`` returns it. A message the crash left only in the transcript runs from its start. Nothing
        is forked when there is nothing to finish."""
        return self.recovery.finish(thread_id, checkpoint_id)

    def complete(self, thread_id: str) -> SendResult | None:
        """The one recovery path (``finish``, ``harness resume --finish``, and the HTTP worker that takes over
        a dead worker's message): finish what a stopped message left on the thread and record its reply.
        Returns that message's result, or None when the thread has nothing unfinished (or waits for a
        human)."""
        return self.recovery.complete(thread_id)

    def fork(self, thread_id: str, checkpoint_id: str) -> str:
        """Make ``checkpoint_id`` the head of the thread again; the next message continues from there."""
        self.state(thread_id, checkpoint_id)  # validates both ids
        config = self.config(thread_id, checkpoint_id)
        # the thread's first checkpoint has no parent to take it from
        config["configurable"] = {**(config.get("configurable") or {}), "checkpoint_ns": ""}
        new = self.graph.update_state(config, None, as_node="__copy__")
        # The forked state is from before any human took the thread: its next message goes to the bot again.
        self.transcripts.release_handoff(thread_id)
        # The transcript follows: what the old branch said after the checkpoint leaves the thread's branch.
        forked = self.state(thread_id)
        turn, mid_message = fork_point(forked["values"], forked["pending"])
        self.transcripts.fork(thread_id, turn, mid_message=mid_message)
        return str((new.get("configurable") or {})["checkpoint_id"])
