"""Graph benchmark: cost per message over a long thread, ours against LangChain's ``create_agent``.

One run, every figure a ratio against a baseline measured in the same run:

1. Our harness (the default design on ``sim:clean``, through ``Harness`` with its SQLite checkpointer in a
   temporary data dir) and LangChain's ``create_agent`` (the same model instance, the same domain tools as
   LangChain tools over the same functions with the harness's backends bound, the same system prompt, its
   own ``SqliteSaver`` file) answer the same ``messages`` user messages on one thread each, message by
   message in turn (who goes first rotates), so background load on the machine falls on both alike. A third
   system is ours again with ``durability="sync"`` (``graphs.app.Harness``: every step saved, where the
   default saves a message once, at its end) on a runtime of its own, to show what saving every step costs. For messages 1-20, 91-110 and
   181-200 (of 200: the first, middle and last tenth) the table gives wall ms and CPU ms per message of
   each, ours / create_agent for both, and ours last/first (flat or not). Long-term memory is written
   after our reply (``memory.writer``): the bench waits for it between messages, outside both timings, as
   a user reading the reply would, and reports that background time on its own line.
   The script repeats itself every few messages, and our embedder does not embed a text it has seen, so
   from the first repeat on ours skips its biggest per-message cost. A short run after the long one plays
   the first window's messages on a new thread of ours and of ``create_agent`` with our embedder's memo
   emptied before each message: the first messages of real traffic, where every text is new.
2. The checkpoint databases after all messages: logical size (page count x page size, counting pages
   still in the write-ahead log), bytes and checkpoints per message, and ours / create_agent.
3. Start-up CPU of the light commands (``harness --help``, ``history`` on the bench's own thread,
   ``domains``, ``designs``) as a ratio to a bare ``python -c pass``, each the median of rounds that
   interleave all of them.
4. Tracing overhead: our harness with spans going to the ``file`` exporter against tracing off, on two
   fresh threads given the same messages in turn (which of the two goes first alternates, so neither
   gains from caches warmed by the other), as the ratio of their mean ms per message.

The simulated model's latency is modelled in virtual time and never slept, so ms per message is the
graph's own work (state, checkpoints, context assembly, tools) plus the simulator's compute.

Both play the domain's bench script (``Domain.bench.graph_messages``, else its ``messages``; the shop's by
default) as the domain's default user.

Run ``python -m lg_harness_lab.benchmarks.bench_graph`` (or ``harness bench graph [--domain NAME]``).
"""

from __future__ import annotations

import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import ValidationError as ArgumentsError

from lg_harness.core.design import load_design
from lg_harness.core.domain import Domain
from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.runtime import Runtime
from lg_harness.memory.known_ids import names_in_text
from lg_harness.obs.tracing import setup_tracing, shutdown_tracing, trace_file
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import ToolError
from lg_harness.tools.registry import ToolSpec
from lg_harness_lab.benchmarks import progress
from lg_harness_lab.benchmarks.bench_context import (
    bench_domain,
    database_bytes,
    latest_checkpoint_bytes,
    lift_quotas,
)
from lg_harness_lab.benchmarks.printing import print_report

THREAD = "bench-graph"
WARM_UP_THREAD = "bench-warm-up"
UNSEEN_THREAD = "bench-graph-unseen"
# Targets from the issues, reported and never asserted. Measured there before: create_agent went from 8 to
# 34 ms per turn and its SQLite file reached 99 MB at 200 turns.
FLAT = 1.25
DB_SHARE = 0.1
FIRST_SHARE = 1.0  # ours / create_agent over the first window
STARTUP_ROUNDS = 3



def script_messages(facts: dict[str, str], count: int, script: Sequence[str]) -> list[str]:
    """``count`` messages cycling through the script, filled with the user's own identifiers."""
    return [script[i % len(script)].format(**facts) for i in range(count)]


def windows(messages: int) -> tuple[range, range]:
    """Message numbers (1-based) of the first and the last tenth: 1-20 and 181-200 of 200."""
    size = max(1, messages // 10)
    return range(1, size + 1), range(messages - size + 1, messages + 1)


def three_windows(messages: int) -> dict[str, range]:
    """The first, middle and last tenth: 1-20, 91-110 and 181-200 of 200."""
    first, last = windows(messages)
    start = max(1, messages // 2 - len(first) // 2 + 1)
    return {"first": first, "middle": range(start, start + len(first)), "last": last}


def mean_ms(ms: Sequence[float], window: range) -> float:
    return statistics.fmean(ms[i - 1] for i in window)


def timed_ms(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def files_bytes(path: Path) -> int:
    """Bytes on disk of a SQLite database with its write-ahead log and shared-memory files."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


# ------------------------------------------------------------------------------------------- create_agent


def as_langchain_tool(spec: ToolSpec, ctx: ToolContext, errors: list[str]) -> BaseTool:
    """One domain tool as a LangChain tool: same name, description and argument schema; ``ctx`` bound."""

    def run(**kwargs: Any) -> Any:
        try:
            return spec.fn(ctx, **spec.parse(kwargs))
        except (ToolError, ArgumentsError) as err:
            # What create_agent users configure (handle_tool_errors): the model reads the error and goes on.
            errors.append(f"{spec.name}: {err}")
            return {"error": str(err)}

    return StructuredTool.from_function(func=run, name=spec.name, description=spec.description,
                                        args_schema=spec.args_model)


def domain_tools(domain: Domain, resources: dict[str, Any], user_id: str, thread_id: str,
                 errors: list[str]) -> list[BaseTool]:
    """Every tool of the domain's registry as a LangChain tool, its context bound to the given backends."""
    registry = domain.registry()
    found = domain.user(user_id, resources) or {}
    ctx = ToolContext(user_id=user_id, role=str(found.get("role") or domain.default_role), thread_id=thread_id,
                      extras=dict(resources))
    return [as_langchain_tool(spec, ctx, errors) for spec in registry.specs()]


class CreateAgentRun:
    """``langchain.agents.create_agent`` over a domain's tools with its own SQLite checkpoint file."""

    def __init__(self, path: Path, model: BaseChatModel, domain: Domain, resources: dict[str, Any]) -> None:
        self.path = path
        self.conn = sqlite3.connect(str(path), check_same_thread=False)
        self.tool_errors: list[str] = []
        tools = domain_tools(domain, resources, domain.default_user, THREAD, self.tool_errors)
        self.agent = create_agent(model=model, tools=tools, system_prompt=domain.system_prompt,
                                  checkpointer=SqliteSaver(self.conn))
        self.last: dict[str, Any] = {}

    def send(self, text: str, thread_id: str = THREAD) -> None:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        self.last = self.agent.invoke({"messages": [{"role": "user", "content": text}]}, config)

    def close(self) -> None:
        self.conn.close()


# ------------------------------------------------------------------------------------------- figures


def checkpoint_rows(db_path: Path, thread_id: str) -> int:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread_id,)).fetchone()[0])
    finally:
        conn.close()


def side_figures(ms: list[float], cpu: list[float], db_path: Path) -> dict[str, Any]:
    """Wall and CPU ms/msg over the three windows, last/first, and the database now: size, rows, newest
    checkpoint, and per message (the warm-up message counts: it is in the database too)."""
    spans = three_windows(len(ms))
    figures: dict[str, Any] = {f"ms_{name}": mean_ms(ms, span) for name, span in spans.items()}
    figures.update({f"cpu_ms_{name}": mean_ms(cpu, span) for name, span in spans.items()})
    rows, size = checkpoint_rows(db_path, THREAD), database_bytes(db_path)
    figures.update(ratio=figures["ms_last"] / figures["ms_first"], db_bytes=size, db_file_bytes=files_bytes(db_path),
                   checkpoint_rows=rows, latest_checkpoint_bytes=latest_checkpoint_bytes(db_path, THREAD),
                   db_bytes_per_message=size / (len(ms) + 1), checkpoints_per_message=rows / len(ms),
                   ms_per_message=ms, cpu_ms_per_message=cpu)
    return figures


def timed(call: Callable[[], Any]) -> tuple[float, float]:
    """Wall ms and CPU ms (this process, every thread) of one call."""
    cpu, start = time.process_time(), time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000


def data_dir_of(harness: Harness) -> Path:
    """The bench's harness keeps its files in a data dir (checkpoints, traces): measured on disk."""
    if harness.data_dir is None:
        raise ValueError("the graph bench needs a harness with a data dir")
    return harness.data_dir


def settle(harness: Harness) -> float:
    """Wait for long-term memory written after the reply, as the time a user takes to read it; ms waited."""
    if harness.memory is None:
        return 0.0
    return timed_ms(harness.memory.writer.wait_idle)


def run_side_by_side(harness: Harness, other: CreateAgentRun, texts: Sequence[str],
                     sync_harness: Harness) -> dict[str, Any]:
    """The systems answer the same messages in turn; each message timed on its own. ``sync_harness``: ours
    again with ``durability="sync"`` (every step saved), on a runtime of its own so it finds no embedding the
    other computed."""
    ours_runs = {"ours": harness, "ours_sync": sync_harness}
    for h in ours_runs.values():
        h.send(WARM_UP_THREAD, texts[0], h.domain.default_user)
        settle(h)
    other.send(texts[0], WARM_UP_THREAD)
    wall: dict[str, list[float]] = {name: [] for name in [*ours_runs, "create_agent"]}
    cpu: dict[str, list[float]] = {name: [] for name in wall}
    after: dict[str, list[float]] = {name: [] for name in ours_runs}
    progress.stage("graph")

    def play(name: str, text: str) -> None:
        if name == "create_agent":
            took = timed(lambda: other.send(text))
        else:
            h = ours_runs[name]
            took = timed(lambda: h.send(THREAD, text, h.domain.default_user))
            after[name].append(settle(h))
        wall[name].append(took[0])
        cpu[name].append(took[1])

    names = list(wall)
    for i, text in enumerate(texts, 1):
        # They share the model instance and its caches: who goes first rotates, so none always finds the
        # others' work on a new message done.
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            play(name, text)
        progress.tick(i, len(texts))
    theirs = side_figures(wall["create_agent"], cpu["create_agent"], other.path)
    theirs.update(tool_errors=len(other.tool_errors), messages_in_state=len(other.last.get("messages", [])))
    figures: dict[str, Any] = {"create_agent": theirs}
    for name, h in ours_runs.items():
        ours = side_figures(wall[name], cpu[name], data_dir_of(h) / "checkpoints.sqlite")
        ours.update({f"memory_ms_{w}": mean_ms(after[name], span) for w, span in three_windows(len(texts)).items()})
        figures[name] = ours
        figures["vs_create_agent" if name == "ours" else f"{name}_vs_create_agent"] = versus(ours, theirs)
    return figures


def unseen_messages(harness: Harness, other: CreateAgentRun, texts: Sequence[str]) -> dict[str, Any]:
    """``texts`` on a new thread of each system, in turns, with our embedder's memo emptied before each of our
    messages: the first messages of real traffic, where no text was seen before (the bench script repeats
    itself every few messages, and a repeated text is not embedded again). Wall and CPU ms per message of
    each, ours / create_agent, how many texts our messages embedded and how many messages named an
    identifier (recalled by the name: their own text is embedded only when the tool offer compares it)."""
    embedder = harness.runtime.embedder
    wall: dict[str, list[float]] = {"ours": [], "create_agent": []}
    cpu: dict[str, list[float]] = {"ours": [], "create_agent": []}
    embedded = 0  # in our messages (the memory written after a reply embeds its own texts)
    for i, text in enumerate(texts):
        for name in ("ours", "create_agent") if i % 2 else ("create_agent", "ours"):
            if name == "ours":
                embedder.forget()
                before = embedder.computed
                took = timed(lambda text=text: harness.send(UNSEEN_THREAD, text, harness.domain.default_user))
                embedded += embedder.computed - before
                settle(harness)
            else:
                took = timed(lambda text=text: other.send(text, UNSEEN_THREAD))
            wall[name].append(took[0])
            cpu[name].append(took[1])
    # A message that names an identifier is recalled by the name, not by an embedding of the message.
    named = sum(1 for text in texts if names_in_text(text, harness.domain.entity_types))
    figures: dict[str, Any] = {"messages": len(texts), "embedded": embedded, "named": named}
    for name in wall:
        figures[name] = {"ms": statistics.fmean(wall[name]), "cpu_ms": statistics.fmean(cpu[name])}
    figures["vs_create_agent"] = {k: figures["ours"][k] / figures["create_agent"][k] for k in ("ms", "cpu_ms")}
    return figures


def versus(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float]:
    """Ours / create_agent for every per-window and database figure of both."""
    keys = [k for k in ours if k.startswith(("ms_", "cpu_ms_")) and not k.endswith("per_message")]
    keys += ["db_bytes", "db_bytes_per_message", "checkpoints_per_message"]
    return {k: ours[k] / theirs[k] for k in keys if theirs.get(k)}


# ------------------------------------------------------------------------------------------- start-up


def light_commands(data_dir: Path, user: str) -> dict[str, list[str]]:
    """The commands that must start at once, ``history`` on the bench's own thread."""
    return {"--help": ["--help"], "history": ["history", "--thread", THREAD, "--data-dir", str(data_dir), "--user", user],
            "domains": ["domains"], "designs": ["designs"]}


def child_cpu_s(command: list[str]) -> float:
    """User + system CPU seconds of one child process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-300:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup_cpu(data_dir: Path, user: str, harness_command: Sequence[str] | None = None,
                rounds: int = STARTUP_ROUNDS) -> dict[str, Any]:
    """Median CPU seconds of each light command and of ``python -c pass``, rounds interleaving all of them,
    and each command's ratio to the bare interpreter. ``harness_command``: how to start the CLI (default:
    this interpreter's ``harness`` console script)."""
    cli = list(harness_command or [str(Path(sys.executable).with_name("harness"))])
    commands = {"python -c pass": [sys.executable, "-c", "pass"],
                **{name: [*cli, *args] for name, args in light_commands(data_dir, user).items()}}
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            seconds[name].append(child_cpu_s(command))
    median = {name: statistics.median(v) for name, v in seconds.items()}
    bare = median["python -c pass"] or 1e-3  # a bare start can round to 0 on a fast machine
    return {"rounds": rounds, "cpu_s": median, "vs_bare_python": {k: v / bare for k, v in median.items()},
            "cpu_s_all": seconds}


def untraced_ms(harness: Harness, thread: str, text: str) -> float:
    took = timed_ms(lambda: harness.send(thread, text, harness.domain.default_user))
    settle(harness)
    return took


def traced_ms(harness: Harness, thread: str, text: str) -> float:
    """One message with spans going to the file exporter; setting up and shutting down are not timed."""
    setup_tracing(harness.data_dir, exporters=["file"])
    try:
        return untraced_ms(harness, thread, text)
    finally:
        shutdown_tracing()


def count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open(encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def tracing_overhead(harness: Harness, texts: Sequence[str]) -> dict[str, Any]:
    """Mean ms per message with file tracing against without, on two fresh threads fed the same messages."""
    off, on = [], []
    spans_before = count_lines(trace_file(data_dir_of(harness)))
    for i, text in enumerate(texts):
        # The second of two identical messages finds the memoised embeddings and token counts warm, so
        # which one goes first alternates.
        if i % 2 == 0:
            off.append(untraced_ms(harness, "bench-trace-off", text))
            on.append(traced_ms(harness, "bench-trace-on", text))
        else:
            on.append(traced_ms(harness, "bench-trace-on", text))
            off.append(untraced_ms(harness, "bench-trace-off", text))
    spans = count_lines(trace_file(data_dir_of(harness))) - spans_before
    off_ms, on_ms = statistics.fmean(off), statistics.fmean(on)
    return {"messages": len(texts), "off_ms": off_ms, "on_ms": on_ms, "ratio": on_ms / off_ms,
            "overhead_ms": on_ms - off_ms, "spans": spans, "spans_per_message": spans / len(texts)}


def run_bench_graph(messages: int = 200, model: str = "sim:clean", trace_messages: int = 40,
                    domain: Domain | str = "shop", startup_rounds: int = STARTUP_ROUNDS) -> dict[str, Any]:
    """Measure all three figures in one run.

    Args:
        messages: Messages on the one long thread of each system.
        model: Model spec; both systems share the one model instance made from it.
        trace_messages: Messages on each of the two threads of the tracing comparison.
        startup_rounds: Rounds of the start-up measurement (0: none).
        domain: A ``Domain`` or a spec for ``load_domain``: its tools, system prompt, default user and bench
            script (``graph_messages``, else ``messages``).

    Returns:
        ``domain`` (its name), ``messages``, ``model``, ``first_window``, ``middle_window`` and ``last_window``
        (1-based message numbers, inclusive), ``ours`` and ``create_agent``: ``ms_first``, ``ms_middle``,
        ``ms_last`` and ``cpu_ms_*`` of the same windows, ``ratio`` (ms last/first), ``db_bytes`` (logical
        size of the checkpoint database after all messages), ``db_file_bytes`` (its files on disk),
        ``db_bytes_per_message``, ``checkpoint_rows`` (checkpoints of the thread), ``checkpoints_per_message``,
        ``latest_checkpoint_bytes`` (its newest one, as in ``bench_context``), ``ms_per_message``,
        ``cpu_ms_per_message``; ours also ``memory_ms_*`` (memory written after the reply, per window);
        create_agent also ``tool_errors`` and ``messages_in_state``; ``vs_create_agent``: ours/create_agent
        for each of those figures; ``unseen`` (``unseen_messages`` over the first window's texts);
        ``db_ratio`` (ours/create_agent); ``startup`` (``startup_cpu``, when
        ``startup_rounds`` > 0); ``tracing``: ``messages``, ``off_ms``, ``on_ms``, ``ratio``, ``overhead_ms``,
        ``spans``, ``spans_per_message``; ``ours_sync`` and ``ours_sync_vs_create_agent``: the same figures
        for our harness with ``durability="sync"``.
    """
    domain, bench = bench_domain(domain)
    script = bench.graph_messages or bench.messages
    spans = three_windows(messages)
    figures: dict[str, Any] = {"domain": domain.name, "messages": messages, "model": model,
                               **{f"{name}_window": [span[0], span[-1]] for name, span in spans.items()}}
    # Quotas would hand a 200-message thread to a human (200 tool calls per thread); lifted for the run.
    design = lift_quotas(load_design("harness"))
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp, \
            Harness(model, domain=domain, design=design,
                    settings=Settings(data_dir=Path(tmp) / "ours")) as h, \
            Harness(h.model, domain=domain, design=design,
                    settings=Settings(data_dir=Path(tmp) / "ours-sync", durability="sync",
                                      runtime=Runtime())) as h_sync:
        other = CreateAgentRun(Path(tmp) / "create_agent.sqlite", h.model, domain, h.resources)
        try:
            facts = bench.facts(h.resources, domain.default_user)
            texts = script_messages(facts, messages, script)
            figures.update(run_side_by_side(h, other, texts, h_sync))
            progress.stage("unseen")
            figures["unseen"] = unseen_messages(h, other, texts[:len(spans["first"])])
        finally:
            other.close()
        figures["db_ratio"] = figures["ours"]["db_bytes"] / figures["create_agent"]["db_bytes"]
        if startup_rounds > 0:
            progress.stage("start-up")
            figures["startup"] = startup_cpu(data_dir_of(h), domain.default_user, rounds=startup_rounds)
        figures["tracing"] = tracing_overhead(h, script_messages(facts, trace_messages, script))
    return figures


# ------------------------------------------------------------------------------------------- report


def format_table(f: dict[str, Any]) -> str:
    """Per window: ours, create_agent and ours / create_agent, wall and CPU; then the databases, start-up and
    tracing lines."""
    spans = {name: f[f"{name}_window"] for name in ("first", "middle", "last")}
    header = ["ms/msg (cpu)", *(f"{a}-{b}" for a, b in spans.values()), "last/first"]
    rows = [header]
    shown = {"ours": "ours", "ours_sync": "ours, sync", "create_agent": "create_agent"}
    for name, label in shown.items():
        if (s := f.get(name)) is not None:
            rows.append([label, *(f"{s[f'ms_{w}']:.1f} ({s[f'cpu_ms_{w}']:.1f})" for w in spans), f"x{s['ratio']:.2f}"])
    for key, label in (("vs_create_agent", "ours/create_agent"), ("ours_sync_vs_create_agent", "ours, sync/c_a")):
        if (v := f.get(key)) is not None:
            rows.append([label, *(f"x{v[f'ms_{w}']:.2f} (x{v[f'cpu_ms_{w}']:.2f})" for w in spans), ""])
    lines = _columns(rows)
    ours, theirs = f["ours"], f["create_agent"]
    lines += ["", "memory written after our reply (background, ms/msg): "
              + ", ".join(f"{a}-{b}: {ours[f'memory_ms_{w}']:.1f}" for w, (a, b) in spans.items()),
              f"checkpoint DB @{f['messages']}: ours {ours['db_bytes'] / 1e6:.2f} MB "
              f"({ours['db_bytes_per_message'] / 1e3:.1f} KB and {ours['checkpoints_per_message']:.1f} checkpoints "
              f"per message), create_agent {theirs['db_bytes'] / 1e6:.2f} MB ({theirs['db_bytes_per_message'] / 1e3:.1f} "
              f"KB, {theirs['checkpoints_per_message']:.1f}): ours/create_agent {f['db_ratio']:.3f}"]
    if (ex := f.get("ours_sync")) is not None:
        lines.append(f"  ours, sync: {ex['db_bytes'] / 1e6:.2f} MB ({ex['db_bytes_per_message'] / 1e3:.1f} KB and "
                     f"{ex['checkpoints_per_message']:.1f} checkpoints per message)")
    if (u := f.get("unseen")) is not None:
        lines.append(f"messages 1-{u['messages']} of a new thread, every text new to our embedder (its memo "
                     f"emptied before each; {u['embedded']} texts embedded, {u['named']} messages named an "
                     f"identifier and were recalled by it): ours {u['ours']['ms']:.1f} "
                     f"({u['ours']['cpu_ms']:.1f}), create_agent {u['create_agent']['ms']:.1f} "
                     f"({u['create_agent']['cpu_ms']:.1f}): ours/create_agent x{u['vs_create_agent']['ms']:.2f} "
                     f"(x{u['vs_create_agent']['cpu_ms']:.2f})")
    if "startup" in f:
        up = f["startup"]
        lines.append(f"start-up CPU, median of {up['rounds']} interleaved rounds, x bare `python -c pass` "
                     f"({up['cpu_s']['python -c pass'] * 1000:.0f} ms): "
                     + ", ".join(f"{k} {up['cpu_s'][k]:.2f} s (x{up['vs_bare_python'][k]:.1f})"
                                 for k in up["cpu_s"] if k != "python -c pass"))
    t = f["tracing"]
    lines.append(f"tracing (file exporter) vs off, {t['messages']} messages each: {t['on_ms']:.1f} vs {t['off_ms']:.1f} "
                 f"ms/msg = x{t['ratio']:.3f} ({t['overhead_ms']:+.1f} ms/msg, {t['spans_per_message']:.0f} spans/msg)")
    return "\n".join(lines)


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return lines


def notes(f: dict[str, Any]) -> list[str]:
    """How the figures were taken, and anything that disturbed a run."""
    ca = f["create_agent"]
    out = [f"model {f['model']} shared by both; ms/msg is wall time of Harness.send / agent.invoke, cpu the "
           "process's CPU time (every thread) over the same call",
           "DB: logical size (page_count x page_size) incl. pages still in the WAL; on disk with -wal/-shm: "
           f"ours {f['ours']['db_file_bytes'] / 1e6:.2f} MB, create_agent {ca['db_file_bytes'] / 1e6:.2f} MB",
           f"create_agent thread holds {ca['messages_in_state']} messages after {f['messages']} user messages",
           "checkpoints of the thread / bytes of the newest: "
           f"ours {f['ours']['checkpoint_rows']:,} / {f['ours']['latest_checkpoint_bytes']:,}, "
           f"create_agent {ca['checkpoint_rows']:,} / {ca['latest_checkpoint_bytes']:,}",
           "issue's earlier measurement of create_agent: 8 -> 34 ms per turn, 99 MB at 200 turns"]
    if (ex := f.get("ours_sync_vs_create_agent")) is not None:
        first = f["first_window"]
        out.append("ours: durability 'exit' (the default: a message saved once, when it ends; a crash runs it again); "
                   "ours, sync: every step saved (a crash resumes at the last step), on its own runtime, so no "
                   f"embedding is shared with ours; at messages {first[0]}-{first[1]} x{ex['ms_first']:.2f} "
                   f"create_agent's wall time, x{ex['cpu_ms_first']:.2f} its CPU")
    if ca["tool_errors"]:
        out.append(f"! create_agent tools returned {ca['tool_errors']} errors to the model")
    return out


def targets(f: dict[str, Any]) -> list[str]:
    """The issue's targets against this run's figures, each said plainly as met or NOT met."""
    ours, first = f["ours"], f["first_window"]
    share, cpu = f["vs_create_agent"]["ms_first"], f["vs_create_agent"]["cpu_ms_first"]
    return [
        f"{'met' if share <= FIRST_SHARE else 'NOT MET'}: ours / create_agent at messages {first[0]}-{first[1]} "
        f"at most {FIRST_SHARE:g}: x{share:.2f}",
        # The figure is wall time; CPU (every thread) is said beside it, so a busy machine's waiting
        # cannot hide work.
        f"{'met' if cpu <= FIRST_SHARE else 'NOT MET'}: the same in CPU time: x{cpu:.2f}",
        f"{'met' if ours['ratio'] <= FLAT else 'NOT MET'}: ours flat (last window within {FLAT:g}x of the "
        f"first): x{ours['ratio']:.2f}",
        f"{'met' if f['db_ratio'] < DB_SHARE else 'NOT MET'}: our database under {DB_SHARE:g} of "
        f"create_agent's: {f['db_ratio']:.3f}",
    ]


def main(domain: Domain | str = "shop") -> dict[str, Any]:
    """Run the benchmark in ``domain``, print the table, the notes and the targets, return the figures."""
    figures = run_bench_graph(domain=domain)
    print_report(figures, format_table, notes, targets)
    return figures


if __name__ == "__main__":
    main()
