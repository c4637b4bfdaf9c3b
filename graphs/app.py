"""The harness as an application: a data dir, a design and a model, and one call per user message.

The CLI, notebooks and tests all go through ``Harness``, so input checks, thread ownership and error
messages are written once.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command
from lg_harness.core.design import Design, load_design
from lg_harness.core.domain import Domain, default_domain, load_domain
from lg_harness.graphs import human_hold
from lg_harness.graphs.builder import build_graph
from lg_harness.graphs.model_health import model_unavailable, unanswered
from lg_harness.graphs.step_pruning import prune_steps
from lg_harness.graphs.storage import open_stores
from lg_harness.graphs.storage_faults import prove_writable, storage_problem
from lg_harness.graphs.thread_history import Checkpoint, ThreadReader, thread_config
from lg_harness.graphs.warm import warm_caches
from lg_harness.llm.factory import close_model, make_model
from lg_harness.memory.hooks import UnopenedMemory
from lg_harness.obs.audit import default_redactor, redact_value
from lg_harness.obs.tracing import current_trace_id, message_span
from lg_harness.tools.backend import BackendPlace
from lg_harness.tools.errors import HarnessError
from lg_harness.tools.executor import RetryPolicy, ToolExecutor
from lg_harness.tools.ledger import LEDGER_RESOURCE
from lg_harness.tools.registry import ToolRegistry
from lg_harness.tools.text import clean_text
from typing_extensions import TypedDict

if TYPE_CHECKING:  # chromadb loads with it: only the commands that run messages open memory
    from lg_harness.memory.longterm import LongTermMemory


def executor_for(design: Design, registry: ToolRegistry, **clock: Any) -> ToolExecutor:
    """The executor the design names: classified retries (default), a heavyweight framework's, or raw."""
    kind = design.knobs.executor
    if kind == "framework":
        from lg_harness.tools.framework_executor import FrameworkExecutor

        return FrameworkExecutor(registry, **clock)
    if kind == "raw":
        return ToolExecutor(registry, RetryPolicy(backoff=(), rate_limit_retries=0), **clock)
    return ToolExecutor(registry, **clock)


def prepare_data_dir(path: str | Path) -> Path:
    """Create the data dir if needed and prove it is writable, with an error that says what to do."""
    data_dir = Path(path).expanduser()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        prove_writable(data_dir)
    except OSError as err:
        raise HarnessError(f"data dir {data_dir} is not usable ({err.strerror or err}); "
                           "pass --data-dir or set HARNESS_DATA_DIR to a writable folder") from err
    return data_dir


class ToolCallResult(TypedDict):
    id: str | None
    name: str | None
    args: dict[str, Any] | None
    status: str | None
    error_type: str | None
    error: str | None


class Usage(TypedDict):
    input_tokens: int
    output_tokens: int
    model_calls: int


class SendResult(TypedDict):
    """What ``Harness.send`` (and ``finish``, ``human_reply``) return; the CLI's ``run --json`` prints it."""

    thread_id: str
    design: str
    domain: str
    reply: str
    phase: str | None
    path: list[str]
    intent: str | None
    slots: dict[str, Any]
    missing_slots: list[str]
    tool_calls: list[ToolCallResult]
    usage: Usage
    context: dict[str, int]
    handoff: dict[str, Any] | None
    waiting_for_human: bool
    checkpoint_id: str | None
    trace_id: str | None


class Harness:
    """One data dir, one design, one model; ``send`` runs one user message on a thread."""

    def __init__(self, data_dir: str | Path | None = ".harness", design: Design | str = "harness",
                 model: BaseChatModel | str = "sim", *, domain: Domain | str | None = None,
                 resources: dict[str, Any] | None = None, checkpointer: BaseCheckpointSaver | None = None,
                 memory: LongTermMemory | None = None, registry: ToolRegistry | None = None,
                 executor: ToolExecutor | None = None, database_url: str | None = None,
                 chroma_url: str | None = None, runs_messages: bool = True) -> None:
        """Open (or create) the data dir's stores; pass ``data_dir=None`` to keep everything in memory.

        ``database_url`` (``postgresql://...``) keeps checkpoints, transcripts, facts, audit, the handoff
        queue and per-thread leases in Postgres, ``chroma_url`` experiences in a Chroma server
        (``graphs.storage``); the domain's backends go to the same database (``tools.backend.BackendPlace``).

        ``domain`` is a ``Domain``, an installed pack's name, ``module:attr`` or a file (default ``shop``).
        The keyword arguments replace single parts (the evaluation runner injects the domain's fresh
        backends, a fault-wrapped registry, an executor on a virtual clock and an in-memory checkpointer).

        ``runs_messages=False`` opens a harness that only reads and forks threads (``harness history``,
        ``resume``): no long-term memory and none of the caches a message needs (``graphs.warm``); ``send``
        refuses.
        """
        self.data_dir = prepare_data_dir(data_dir) if data_dir is not None else None
        self.domain = load_domain(domain)
        self.design = load_design(design) if isinstance(design, str) else design
        self.model = make_model(model, domain=self.domain) if isinstance(model, str) else model
        # How to open this harness again: the preset name or design file, and the model spec if it had one.
        self.setup = (design if isinstance(design, str) else self.design.name,
                      model if isinstance(model, str) else None,
                      domain if isinstance(domain, str) else (None if domain is not None else default_domain()[0]))
        self._owns_model = isinstance(model, str)
        self.runs_messages = runs_messages
        self._owned: list[Any] = []
        self._last = threading.local()  # one harness may serve several threads at once (graphs.service)
        self.resources: dict[str, Any] = (dict(resources) if resources is not None
                                          else self._open_backends(database_url))
        self.stores = self._own(open_stores(self.data_dir, database_url, chroma_url))
        self.checkpointer = checkpointer or self.stores.checkpointer
        self.transcripts = self.stores.transcripts
        self.threads = ThreadReader(self.checkpointer, self.transcripts)
        self.memory = memory
        if memory is None and self.design.knobs.long_term_memory and runs_messages:
            self.memory = self.stores.memory()
            if self.memory is not None:
                self._own(self.memory)
                self.memory.recover()  # what a process that stopped after its replies left unwritten
        if runs_messages:
            warm_caches(self.design, self.domain, self.data_dir, self.memory)
        self.audit = self.stores.audit
        self.order = self.stores.order
        self.on_update: Any = None  # called with (thread_id, update) for each node's update (graphs.service)
        self.registry = registry or self.domain.registry()
        graph_resources = dict(self.resources)
        if self.memory is not None:
            graph_resources["memory"] = self.memory
        elif not runs_messages and self.design.knobs.long_term_memory:
            graph_resources["memory"] = UnopenedMemory()  # the same steps as the graph that wrote the thread
        if self.audit is not None:
            graph_resources["audit"] = self.audit
        if (fences := getattr(self.stores, "fences", None)) is not None:
            graph_resources["commit_guard"] = fences.domain_guard()
        if self.stores.ledger is not None:
            graph_resources[LEDGER_RESOURCE] = self.stores.ledger
        self.graph = build_graph(self.design, self.model, self.checkpointer, domain=self.domain,
                                 registry=self.registry, executor=executor or executor_for(self.design, self.registry),
                                 resources=graph_resources)

    @property
    def last_values(self) -> dict[str, Any]:
        """The state after this thread's (the calling Python thread's) last message."""
        return getattr(self._last, "values", {})

    @last_values.setter
    def last_values(self, values: dict[str, Any]) -> None:
        self._last.values = values

    def _open_backends(self, database_url: str | None) -> dict[str, Any]:
        """The domain's backends: on the harness's Postgres with a database URL, else in the data dir (in
        memory without one); closed with the harness."""
        place = BackendPlace(self._path, database_url)
        opened = self.domain.open_resources(place) if self.domain.open_resources else {}
        for backend in opened.values():
            if callable(getattr(backend, "close", None)):
                self._own(backend)
        return dict(opened)

    def _message_running(self) -> Any:
        """Long-term memory's writer waits while a message runs here, so the reply goes out first."""
        return self.memory.writer.during_message() if self.memory is not None else contextlib.nullcontext()

    def _path(self, name: str) -> str:
        return str(self.data_dir / name) if self.data_dir is not None else ":memory:"

    def _own(self, resource: Any) -> Any:
        self._owned.append(resource)
        return resource

    def close(self) -> None:
        for resource in reversed(self._owned):
            resource.close()
        self._owned.clear()
        if self._owns_model:
            close_model(self.model)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- users and threads

    def user(self, user_id: str | None, role: str | None = None) -> dict[str, str]:
        uid = (user_id or "").strip()
        if not uid:
            raise HarnessError(f"no user given: every message acts for one user; pass user_id (--user), e.g. "
                               f"the domain's demo user {self.domain.default_user}")
        found = self.domain.user(uid, self.resources)
        if found is None:
            raise HarnessError(f"unknown user '{uid}' in domain '{self.domain.name}'; "
                               f"try --user {self.domain.default_user}")
        return {"id": str(found["id"]), "role": role or str(found.get("role") or self.domain.default_role)}

    # Who owns a thread and whether it exists are read the one way harness history reads them too
    # (graphs.thread_history.ThreadReader, which needs no graph).

    def owner_of(self, thread_id: str, values: dict[str, Any] | None = None) -> str | None:
        return self.threads.owner_of(thread_id, values)

    def check_owner(self, thread_id: str, user_id: str, values: dict[str, Any] | None = None) -> None:
        self.threads.check_owner(thread_id, user_id, values)

    config = staticmethod(thread_config)

    def thread_exists(self, thread_id: str) -> bool:
        return self.threads.exists(thread_id)

    def require_thread(self, thread_id: str) -> None:
        self.threads.require(thread_id)

    def check_message(self, text: str) -> str:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:  # a lone surrogate: JSON can carry one, no store can keep it
            raise HarnessError(f"the message holds an unpaired surrogate (U+{ord(text[err.start]):04X}) at "
                               f"character {err.start}; send valid UTF-8 text") from None
        cleaned = (clean_text(text) if self.design.knobs.normalize_input else text).strip()
        if not cleaned:
            raise HarnessError("empty message: type what you need, e.g. harness run \"hello, I need help\"")
        limit = self.design.knobs.max_message_chars
        if len(cleaned) > limit:
            raise HarnessError(f"message is {len(cleaned):,} characters; the limit is {limit:,} "
                               "(design knob max_message_chars): shorten it or split it")
        return cleaned

    # -- one message

    def send(self, thread_id: str, text: str, user_id: str | None = None, role: str | None = None) -> SendResult:
        """Run one user message; messages on one thread run one at a time, in the order they arrived."""
        self._require_messages()
        message = self.check_message(text)
        user = self.user(user_id, role)
        with self.order.turn(thread_id), self._message_running():
            try:
                return self._send(thread_id, message, user)
            except HarnessError:
                raise
            except Exception as err:
                if (problem := storage_problem(err)) is None:
                    raise
                raise HarnessError(f"{problem} ({err}); {self.saved_state(thread_id)}") from err

    def saved_state(self, thread_id: str) -> str:
        """What is saved of ``thread_id`` after a failure, and what to do about the message that failed."""
        try:
            snap = self.graph.get_state(self.config(thread_id))
            told = self.transcripts.read(thread_id)
        except Exception:  # noqa: BLE001 - reading may fail for the same reason writing did
            return "nothing could be read back from the data dir: free or fix it, then send the message again"
        ckpt = (snap.config.get("configurable") or {}).get("checkpoint_id")
        turn = snap.values.get("turn") or 0
        mid = bool(snap.tasks)
        asked = max((r["turn"] for r in told if r["role"] == "user"), default=0)
        where = (f"the newest saved checkpoint is {ckpt}, in the middle of message {turn}" if mid and ckpt else
                 f"the newest saved checkpoint is {ckpt}, after message {turn}" if ckpt else "no checkpoint is saved")
        if mid or asked > turn:
            return (f"{where}; the message is kept: once the data dir is fixed, finish it with "
                    f"harness resume --thread {thread_id} --finish")
        return f"{where}; this message was not saved: send it again once the data dir is fixed"

    def _send(self, thread_id: str, message: str, user: dict[str, str]) -> dict[str, Any]:
        config = self.config(thread_id)
        snapshot = self.graph.get_state(config)
        current = snapshot.values
        self.check_owner(thread_id, user["id"], current)
        self.transcripts.claim(thread_id, user["id"])
        turn = (current.get("turn") or 0) + 1
        # the setup first: a message that only reached the transcript is finished with the design, model and
        # domain it was sent with (harness resume --finish reads them)
        self.transcripts.record_setup(thread_id, *self.setup)
        self.transcripts.append(thread_id, turn, "user", message)
        if "human" in snapshot.next:
            return self._while_waiting(thread_id, snapshot)
        if human_hold.is_held(self, thread_id):
            return human_hold.while_held(self, thread_id, snapshot, message)
        return self._run(thread_id, {"messages": [HumanMessage(message)], "user": user}, turn, user["id"])

    def _while_waiting(self, thread_id: str, snapshot: Any) -> dict[str, Any]:
        """The thread waits for a human: the message is kept in the transcript for them; the bot stays out."""
        from lg_harness.nodes.phrases import say

        ticket = (snapshot.values.get("handoff") or {}).get("ticket", "pending")
        lang = (snapshot.values.get("fact_card") or {}).get("language", "en")
        result = self.result(thread_id, snapshot, [])
        self.last_values = {**snapshot.values, "turn_stats": {}, "tool_log": []}  # the bot did nothing this turn
        result.update(reply=say("waiting_human", lang, self.domain, ticket=str(ticket)), tool_calls=[], phase="handoff",
                      usage={"input_tokens": 0, "output_tokens": 0, "model_calls": 0}, path=[])
        self.transcripts.append(thread_id, snapshot.values.get("turn") or 0, "assistant", result["reply"])
        return result

    def _require_messages(self) -> None:
        if not self.runs_messages:
            raise HarnessError("this harness was opened to read threads only (runs_messages=False); open it "
                               "without that to run messages")

    def _run(self, thread_id: str, graph_input: Any, turn: int, user_id: str | None = None) -> dict[str, Any]:
        self._require_messages()
        with message_span(thread_id, user_id, turn):
            trace_id = current_trace_id()
            result = self._stream(thread_id, graph_input, turn)
        result["trace_id"] = trace_id
        if self.audit is not None:
            stats = self.last_values.get("turn_stats") or {}
            self.audit.record_message(thread_id, turn, completed=result["phase"] == "done",
                                      rounds=result["usage"]["model_calls"],
                                      latency_ms=stats.get("model_latency_s", 0.0) * 1000,
                                      input_tokens=result["usage"]["input_tokens"], trace_id=trace_id)
        return result

    def _stream(self, thread_id: str, graph_input: Any, turn: int) -> dict[str, Any]:
        config = self.config(thread_id)
        path: list[str] = []
        try:
            # "sync": each step is saved before the next one starts (graphs.step_pruning says which are kept).
            for update in self.graph.stream(graph_input, config, stream_mode="updates", durability="sync"):
                path.extend(k for k in update if k != "__interrupt__")
                if self.on_update is not None:
                    self.on_update(thread_id, update)
        except Exception as err:  # noqa: BLE001 - the checkpoint keeps the state up to the failing step
            problem = storage_problem(err)
            cause = f"{problem} ({err})" if problem else f"the graph stopped with {type(err).__name__}: {err}"
            raise HarnessError(f"{cause}; {self.saved_state(thread_id)}") from err
        prune_steps(self.checkpointer, thread_id)
        snapshot = self.graph.get_state(config)
        self.last_values = snapshot.values  # the state after this message, for callers that need more than the result
        if (failure := unanswered(snapshot.values.get("turn_stats") or {})) is not None:
            raise model_unavailable(self.setup[1], failure, thread_id)
        self.transcripts.append(thread_id, turn, "assistant", snapshot.values.get("reply") or "")
        if "human" in snapshot.next:
            ticket = str((snapshot.values.get("handoff") or {}).get("ticket", "pending"))
            self.transcripts.open_handoff(thread_id, ticket)
        return self.result(thread_id, snapshot, path)

    # -- human handoff

    def waiting_threads(self) -> list[dict[str, Any]]:
        """Threads paused for a human, with what the operator needs (who, the handoff's reason, ticket, pinned
        constraints, summary and fact card, the last message), personal data masked: contact details reach
        the agent who answers through the thread itself, not through a queue listing every customer."""
        waiting = []
        for thread_id in self.transcripts.waiting_handoffs():
            snap = self.graph.get_state(self.config(thread_id))
            if "human" in snap.next:
                waiting.append(redact_value({"thread_id": thread_id, "user": snap.values.get("user"),
                                             "handoff": snap.values.get("handoff"), "status": "waiting",
                                             "last_message": self._last_user_message(thread_id)},
                                            default_redactor))
        return waiting

    def held_threads(self) -> list[dict[str, Any]]:
        """Threads a human answered and still holds (``harness handoff release`` gives them back)."""
        return [{"thread_id": t, "user": (v := self.graph.get_state(self.config(t)).values).get("user"),
                 "handoff": v.get("handoff"), "status": "held", "last_message": self._last_user_message(t)}
                for t in self.transcripts.held_handoffs()]

    def _last_user_message(self, thread_id: str) -> str:
        rows = [r for r in self.transcripts.read(thread_id) if r["role"] == "user"]
        return rows[-1]["content"] if rows else ""

    def human_reply(self, thread_id: str, text: str) -> dict[str, Any]:
        """Answer a waiting thread as the human agent; the thread resumes and the answer is its reply."""
        message = self.check_message(text)
        with self.order.turn(thread_id):
            snapshot = self.graph.get_state(self.config(thread_id))
            if "human" not in snapshot.next:
                if human_hold.is_held(self, thread_id):
                    return human_hold.held_answer(self, thread_id, message)
                raise HarnessError(f"thread '{thread_id}' is not waiting for a human; see: harness handoff list")
            result = self._run(thread_id, Command(resume={"text": message}), snapshot.values.get("turn") or 0)
            self.transcripts.hold_handoff(thread_id)  # the human keeps the thread until they release it
            checked = [c["ledger_key"] for c in (snapshot.values.get("handoff") or {}).get("uncertain_changes") or []
                       if c.get("ledger_key")]
            if checked and self.stores.ledger is not None:  # answering means the person checked them
                self.stores.ledger.resolve(checked)
            if (close := self.domain.handoff.answered) is not None:
                close(self.resources, thread_id, (snapshot.values.get("user") or {}).get("id", ""))
            return result

    def release(self, thread_id: str) -> dict[str, Any]:
        """The human hands a thread they hold back to the bot."""
        with self.order.turn(thread_id):
            return human_hold.release(self, thread_id)

    def result(self, thread_id: str, snapshot: Any, path: list[str]) -> SendResult:
        values = snapshot.values
        stats = values.get("turn_stats") or {}
        calls = [{"id": r.get("id"), "name": r.get("name"), "args": r.get("args"), "status": r.get("status"),
                  "error_type": r.get("error_type"), "error": r.get("error")} for r in values.get("tool_log") or []]
        return {
            "thread_id": thread_id,
            "design": self.design.name,
            "domain": self.domain.name,
            "reply": values.get("reply") or "",
            "phase": values.get("phase"),
            "path": path,
            "intent": values.get("intent"),
            "slots": values.get("slots") or {},
            "missing_slots": values.get("missing_slots") or [],
            "tool_calls": calls,
            "usage": {"input_tokens": stats.get("input_tokens", 0), "output_tokens": stats.get("output_tokens", 0),
                      "model_calls": stats.get("model_calls", 0)},
            "context": values.get("context_account") or {},
            "handoff": values.get("handoff"),
            "waiting_for_human": "human" in snapshot.next,
            "checkpoint_id": (snapshot.config.get("configurable") or {}).get("checkpoint_id"),
            "trace_id": None,
        }

    # -- checkpoints

    def history(self, thread_id: str) -> list[Checkpoint]:
        """The thread's checkpoints, newest first (``graphs.thread_history``)."""
        return self.threads.history(thread_id)

    def state(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        self.require_thread(thread_id)
        if checkpoint_id and self.checkpointer.get_tuple(self.config(thread_id, checkpoint_id)) is None:
            raise HarnessError(f"unknown checkpoint '{checkpoint_id}' on thread '{thread_id}'; "
                               f"list them with: harness history --thread {thread_id}")
        snap = self.graph.get_state(self.config(thread_id, checkpoint_id))
        # ``next`` leaves out tasks whose writes were saved before the crash: they are still owed their
        # checkpoint and whatever follows them, so ``pending`` lists every task the checkpoint holds.
        return {"thread_id": thread_id, "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
                "next": list(snap.next), "pending": [t.name for t in snap.tasks], "values": snap.values}

    def unanswered_message(self, thread_id: str, values: dict[str, Any]) -> tuple[int, str] | None:
        """A user message the transcript holds beyond the thread's last finished turn, with no reply: the
        process stopped before the graph saved its first checkpoint of that message."""
        done = values.get("turn") or 0
        rows = [r for r in self.transcripts.read(thread_id) if r["turn"] > done]
        users = [r for r in rows if r["role"] == "user"]
        if not users or any(r["role"] == "assistant" for r in rows):
            return None
        return users[0]["turn"], users[0]["content"]

    def finish(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """Complete a message that stopped part-way (a crash, or ``checkpoint_id``: an earlier mid-message
        checkpoint to fork from first) on the state it stopped with; the result is that message's, as
        ``send`` returns it. A message the crash left only in the transcript runs from its start. Nothing
        is forked when there is nothing to finish."""
        if checkpoint_id is not None:
            with self.order.turn(thread_id):
                return self._finish_from(thread_id, checkpoint_id)
        done = self.complete(thread_id)
        if done is not None:
            return done
        stopped = self.state(thread_id)  # an unknown thread says so here
        if "human" in stopped["pending"]:
            raise HarnessError(f"thread '{thread_id}' waits for a human; answer with: "
                               f"harness handoff reply --thread {thread_id} TEXT")
        raise HarnessError(f"thread '{thread_id}' has no unfinished message; send a new one with: "
                           f"harness run --thread {thread_id} MESSAGE")

    def complete(self, thread_id: str) -> SendResult | None:
        """The one recovery path (``finish``, ``harness resume --finish``, and the HTTP worker that takes over
        a dead worker's message): finish what a stopped message left on the thread, and record its reply in
        the transcript. Whatever the crash saved decides: steps still to run are run (a decided call is run,
        never decided again); a reply the checkpoint holds but the transcript does not is recorded; a
        message only the transcript holds runs from its start. Returns that message's result, or None when
        the thread has nothing unfinished (or waits for a human)."""
        with self.order.turn(thread_id):
            if not self.thread_exists(thread_id):
                return self._run_unsaved(thread_id, {})
            stopped = self.state(thread_id)
            pending, values = stopped["pending"], stopped["values"]
            if pending in ([], ["human"]) and self._record_saved_reply(thread_id, values):
                snapshot = self.graph.get_state(self.config(thread_id))
                self.last_values = snapshot.values
                return self.result(thread_id, snapshot, [])
            if "human" in pending:
                return None
            if not pending:
                return self._run_unsaved(thread_id, values)
            return self._run_pending(thread_id, pending, values)

    def _finish_from(self, thread_id: str, checkpoint_id: str) -> SendResult:
        stopped = self.state(thread_id, checkpoint_id)
        if "human" in stopped["pending"]:
            raise HarnessError(f"checkpoint {checkpoint_id} waits for a human; answer with: "
                               f"harness handoff reply --thread {thread_id} TEXT")
        if not stopped["pending"]:
            raise HarnessError(f"checkpoint {checkpoint_id} has no unfinished message; send a new one with: "
                               f"harness run --thread {thread_id} MESSAGE")
        self.fork(thread_id, checkpoint_id)
        return self._run_pending(thread_id, stopped["pending"], stopped["values"])

    def _run_pending(self, thread_id: str, pending: list[str], values: dict[str, Any]) -> SendResult:
        # Before the intent node has run, the pending message has not been counted yet.
        turn = (values.get("turn") or 0) + bool({"__start__", "intent"} & set(pending))
        return self._run(thread_id, None, turn, (values.get("user") or {}).get("id"))  # type: ignore[return-value]

    def _record_saved_reply(self, thread_id: str, values: dict[str, Any]) -> bool:
        """The message ran to its end and its checkpoint holds the reply, but the process stopped before the
        transcript recorded it: record it now (the user gets the answer that was given, not a second run)."""
        rows = self.transcripts.read(thread_id)
        turn, reply = values.get("turn") or 0, values.get("reply") or ""
        if not rows or rows[-1]["role"] != "user" or rows[-1]["turn"] != turn or not reply:
            return False
        self.transcripts.append(thread_id, turn, "assistant", reply)
        if (values.get("handoff") or {}).get("ticket") and not (values.get("handoff") or {}).get("answered"):
            self.transcripts.open_handoff(thread_id, str(values["handoff"]["ticket"]))
        return True

    def _run_unsaved(self, thread_id: str, values: dict[str, Any]) -> SendResult | None:
        """Run the message the transcript holds beyond the checkpoints, if any (None: there is none)."""
        found = self.unanswered_message(thread_id, values)
        owner = self.transcripts.owner(thread_id) or (values.get("user") or {}).get("id")
        if found is None or not owner:
            return None
        turn, message = found
        user = values.get("user") or self.user(owner)
        return self._run(thread_id, {"messages": [HumanMessage(message)], "user": user}, turn, user["id"])  # type: ignore[return-value]

    def fork(self, thread_id: str, checkpoint_id: str) -> str:
        """Make ``checkpoint_id`` the head of the thread again; the next message continues from there."""
        self.state(thread_id, checkpoint_id)  # validates both ids
        config = self.config(thread_id, checkpoint_id)
        config["configurable"]["checkpoint_ns"] = ""  # the thread's first checkpoint has no parent to take it from
        new = self.graph.update_state(config, None, as_node="__copy__")
        # The forked state is from before any human took the thread: its next message goes to the bot again.
        self.transcripts.release_handoff(thread_id)
        return new["configurable"]["checkpoint_id"]
