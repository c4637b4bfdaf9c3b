"""``harness``: run, chat, inspect, resume and draw harness graphs from the shell.

Every command that prints results takes ``--json`` and then prints exactly one JSON document on stdout.
Errors print one line on stderr and exit non-zero; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import typer
from rich.console import Console
from rich.table import Table

from lg_harness.core.design_sources import by_prefix, installed, registered
from lg_harness.errors import HarnessError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="An agent harness as a LangGraph StateGraph.")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DataDir = Annotated[Path, typer.Option("--data-dir", envvar="HARNESS_DATA_DIR",
                                       help="checkpoints, the domain's databases, memory and traces")]
DomainOpt = Annotated[str | None, typer.Option(
    "--domain", envvar="HARNESS_DOMAIN", help="an installed domain pack (harness domains), module:attr, file.py[:attr], "
    "file.yaml or mcp:<command or URL> (default: $HARNESS_DOMAIN, else domain = ... in ./harness.toml, else shop)")]
DesignOpt = Annotated[str, typer.Option("--design", help="a preset name or a .yaml/.toml design file")]
ModelOpt = Annotated[str, typer.Option("--model", help="sim | ollama:<model> | openai:<model>")]
# A person talking to the harness (run, chat) gets the sim without faults: the fitted faults (invented ids,
# timeouts, ...) are for measuring designs (compare, calibrate, bench), and ask for themselves with --model sim.
INTERACTIVE_MODEL = "sim:clean"
TalkModelOpt = Annotated[str, typer.Option("--model", help="sim:clean (the simulated model without faults) | sim "
                                           "(with the faults fitted to a real model) | local:<model> | "
                                           "ollama:<model> | openai:<model>")]
UserOpt = Annotated[str | None, typer.Option("--user", help="the user's id (default: the domain's demo user)")]
RoleOpt = Annotated[str | None, typer.Option("--role", help="override the user's role (the domain's roles)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="show tracebacks")]
ThreadOpt = Annotated[str, typer.Option("--thread", "-t", help="conversation thread id")]
DEFAULT_DATA_DIR = Path(".harness")
# entry point groups of designs other packages provide: a function drawing one's graph, and one listing them
DESIGN_GRAPHS = "lg_harness.design_graphs"
DESIGN_LISTS = "lg_harness.design_lists"
class Storage(TypedDict):
    """Where state lives (graphs.storage): the keyword arguments a Harness takes for it."""

    database_url: str | None
    chroma_url: str | None


# Set once for every command by the options before the command name.
STORAGE: Storage = {"database_url": None, "chroma_url": None}
DURABILITY = {"mode": "exit"}  # when a message's steps are saved (Harness durability)
DURABILITIES = ("exit", "sync", "async")  # LangGraph's modes (langgraph.types.Durability), named without importing it


def storage_options(
        database_url: Annotated[str | None, typer.Option("--database-url", envvar="HARNESS_DATABASE_URL",
                                                         help="postgresql://... keeps checkpoints, transcripts, facts, "
                                                         "audit, handoffs and leases in Postgres (default: files in "
                                                         "the data dir)")] = None,
        chroma_url: Annotated[str | None, typer.Option("--chroma-url", envvar="HARNESS_CHROMA_URL",
                                                       help="http://host:port of a Chroma server for experiences")]
        = None,
        durability: Annotated[str, typer.Option("--durability", envvar="HARNESS_DURABILITY",
                                                help="when a message's steps are saved: sync (every step; a crash "
                                                "resumes at the last one), exit (once, when the message ends; a "
                                                "crash runs it again), async (while the next step runs)")]
        = "exit",
        show_version: Annotated[bool, typer.Option("--version", callback=lambda v: _print_version(v), is_eager=True,
                                                   help="print the version and exit")] = False) -> None:
    """An agent harness as a LangGraph StateGraph."""
    STORAGE.update(database_url=database_url, chroma_url=chroma_url)
    if durability not in DURABILITIES:
        raise typer.BadParameter(f"'{durability}' is none of {', '.join(DURABILITIES)}", param_hint="--durability")
    DURABILITY["mode"] = durability


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("lg-harness")
        except PackageNotFoundError:  # run from a source tree without installing
            number = "unknown"
        sys.stdout.write(f"harness {number}\n")
        raise typer.Exit()




app.callback()(storage_options)  # one callback: typer keeps only the last one registered


def cli_command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn any failure into one clear line on stderr and a non-zero exit (traceback with --debug)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = kwargs.get("debug", False)
        try:
            from lg_harness.obs.logs import configure_logging

            configure_logging("DEBUG" if debug else "ERROR", sys.stderr)
            if kwargs.get("data_dir") is not None and not getattr(fn, "reads_only", False):
                start_tracing(kwargs["data_dir"])
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except HarnessError as exc:
            if debug:
                raise
            fail(str(exc), kwargs.get("json_out", False))
        except Exception as exc:  # noqa: BLE001 - last line of defence: never a bare traceback
            if debug:
                raise
            fail(f"{type(exc).__name__}: {exc} (rerun with --debug for details)", kwargs.get("json_out", False))

    return wrapper


def start_tracing(data_dir: Path) -> None:
    """Spans of this command's messages go where HARNESS_TRACE says; the data dir's file by default."""
    from lg_harness.graphs.opening import prepare_data_dir
    from lg_harness.obs.tracing import setup_tracing

    setup_tracing(prepare_data_dir(data_dir), default=("file",))


def reads_only(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a command that runs no message: it sets up no tracing and so starts without loading it."""
    fn.reads_only = True  # type: ignore[attr-defined]
    return fn


def fail(message: str, json_out: bool) -> None:
    """One line on stderr (and, with --json, the one JSON document: ``{"error": ...}``), exit 1."""
    err.print(f"error: {message}", markup=False, highlight=False)
    if json_out:
        emit_json({"error": message})
    raise typer.Exit(1) from None


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


def domain_spec(domain: str | None) -> str:
    """The domain a command runs on: ``--domain`` (or ``$HARNESS_DOMAIN``), else the configured default."""
    from lg_harness.core.domain import default_domain

    return domain or default_domain()[0]


def open_harness(data_dir: Path, design: str, model: str, domain: str | None = None, *,
                 runs_messages: bool = True):
    """The harness of a command; ``runs_messages=False`` for one that only reads or forks threads (no memory,
    no caches: it starts at once)."""
    from lg_harness.graphs.app import Harness, Settings

    settings = Settings(data_dir=data_dir, durability=DURABILITY["mode"],  # type: ignore[arg-type]  # checked there
                        runs_messages=runs_messages, **STORAGE)
    return Harness(model, domain_spec(domain), design, settings)


@app.command()
@cli_command
def run(message: Annotated[str, typer.Argument(help="the user's message")], thread: ThreadOpt = "default",
        data_dir: DataDir = DEFAULT_DATA_DIR, design: DesignOpt = "harness", model: TalkModelOpt = INTERACTIVE_MODEL,
        domain: DomainOpt = None, user: UserOpt = None, role: RoleOpt = None, json_out: JsonOpt = False,
        debug: DebugOpt = False) -> None:
    """Send one user message on a thread."""
    if model.startswith("local:"):  # a process a message: the next one starts from this one's engine states
        from lg_harness.llm.local import keep_states_on_disk

        keep_states_on_disk()
    with open_harness(data_dir, design, model, domain) as h:
        note_model_fit(h.domain, model)
        result = h.send(thread, message, caller(h, user), role)
    print_result(result.to_dict(), json_out)


def free_text_arguments(domain: Any) -> list[str]:
    """``tool.arg`` for each required argument a tools-only domain's tools take as free text (no pattern, enum
    or identifier type): what a model must fill from the customer's words, which the simulated model cannot."""
    if domain.intents:  # a pack with intents has extractors and routes for its arguments
        return []
    found = []
    for spec in domain.registry().specs():
        params = spec.json_schema()["function"].get("parameters") or {}
        entities = domain.tool_entities(spec)
        for name in params.get("required") or []:
            prop = (params.get("properties") or {}).get(name) or {}
            if prop.get("type") == "string" and not ({"pattern", "enum", "const", "format"} & set(prop)) \
                    and name not in entities:
                found.append(f"{spec.name}.{name}")
    return found


def note_model_fit(domain: Any, model: str) -> None:
    """Say once, on stderr, when the simulated model cannot drive this domain's tools, and which model can."""
    if not model.startswith("sim") or not (args := free_text_arguments(domain)):
        return
    err.print(f"note: the simulated model ({model}) fills a free-text argument only with what a message names "
              f"outright (an email, a path, a proper name), not what needs knowing the world, such as "
              f"{', '.join(args[:4])}: with your own tools use the local model (bash scripts/setup.sh "
              "--local-model, then --model local:qwen2.5-coder-0.5b) or a real one (ollama:, openai:)",
              markup=False, highlight=False)


def caller(h: Any, user: str | None) -> str:
    """Who runs the command: ``--user`` as given (an empty one is refused), else the domain's demo user."""
    return domain_caller(h.domain, user)


def domain_caller(domain: Any, user: str | None) -> str:
    """``caller`` for a command that opens no harness, only the ``Domain``."""
    if user is None:
        return domain.default_user
    if not user.strip():
        raise HarnessError("--user is empty: name the user the command acts for (or leave --user out for the "
                           f"demo user {domain.default_user})")
    return user.strip()


def print_result(result: dict[str, Any], json_out: bool) -> None:
    """One message's result: the JSON document, or the reply on stdout and what happened on stderr."""
    if json_out:
        emit_json(result)
        return
    from lg_harness.obs.audit import call_outcome

    def outcome(call: dict[str, Any]) -> str:  # the harness's own holds and blocks are not tool errors
        shown = call_outcome(call["status"], call.get("error_type"))
        return shown if shown in ("ok", "error", "held") else f"{shown} ({call.get('error_type')})"

    calls = ", ".join(f"{c['name']}({json.dumps(c['args'], ensure_ascii=False)}) -> {outcome(c)}"
                      for c in result["tool_calls"])
    # markup=False: the "[...]" of the call list is text, not Rich markup (it used to vanish).
    err.print(f"intent={result['intent']} phase={result['phase']} tools=[{calls}] "
              f"checkpoint={result['checkpoint_id']}", markup=False, highlight=False, style="dim")
    out.print(result["reply"], markup=False, highlight=False)


@app.command()
@cli_command
def chat(thread: ThreadOpt = "chat", data_dir: DataDir = DEFAULT_DATA_DIR, design: DesignOpt = "harness",
         model: TalkModelOpt = INTERACTIVE_MODEL, domain: DomainOpt = None, user: UserOpt = None,
         role: RoleOpt = None, debug: DebugOpt = False) -> None:
    """An interactive conversation (/help, /state, /history, /quit)."""
    from lg_harness.service.readable import state_lines, transcript_lines

    with open_harness(data_dir, design, model, domain) as h:
        note_model_fit(h.domain, model)
        user = caller(h, user)
        err.print(f"[bold]thread {thread}[/bold] as {user} ({h.domain.name}, model {model}); /help for commands, "
                  "/quit to leave", highlight=False)
        while True:
            try:
                line = input("you> ")
            except (EOFError, KeyboardInterrupt):
                break
            command = line.strip()
            if command in ("/quit", "/exit"):
                break
            if command in ("/state", "/history"):
                try:
                    h.check_owner(thread, user)
                except HarnessError as exc:
                    err.print(f"error: {exc}", markup=False)
                    continue
            if command == "/help":
                err.print(CHAT_HELP, markup=False)
                continue
            if command == "/state":  # for a person: `harness resume --json` is the state as data
                try:
                    lines = state_lines(h.state(thread)["values"])
                except HarnessError as exc:  # a thread with no message yet
                    err.print(f"error: {exc}", markup=False)
                    continue
                out.print("\n".join(lines), markup=False, highlight=False)
                continue
            if command == "/history":
                out.print("\n".join(transcript_lines(h.transcripts.read(thread))), markup=False, highlight=False)
                continue
            if command.startswith("/") and not command.startswith("//"):
                err.print(f"unknown command '{command.split()[0]}'; {CHAT_HELP}", markup=False)
                continue
            line = line.replace("//", "/", 1) if command.startswith("//") else line
            try:
                result = h.send(thread, line, user, role)
            except HarnessError as exc:
                err.print(f"error: {exc}", markup=False)
                continue
            out.print(f"agent> {result.reply}", markup=False, highlight=False)


CHAT_HELP = ("commands: /help this list; /state where the thread stands; /history its transcript; /quit (or "
             "/exit) leave; start a message with // to send text that begins with /")


@app.command()
@cli_command
@reads_only
def history(thread: ThreadOpt, data_dir: DataDir = DEFAULT_DATA_DIR, domain: DomainOpt = None,
            user: UserOpt = None,
            every: Annotated[bool, typer.Option("--all", help="also the checkpoints earlier forks left behind")]
            = False,
            transcript: Annotated[bool, typer.Option("--transcript", help="the messages instead: turn, who wrote "
                                                     "each (customer, bot, or a human by name) and the text")]
            = False,
            json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """The checkpoints of the thread's current branch, newest first: turn, phase, the user message,
    checkpoint id (--all: every branch; --transcript: the messages)."""
    from rich import box

    from lg_harness.core.domain import load_domain
    from lg_harness.graphs.storage import open_thread_stores
    from lg_harness.graphs.thread_history import ThreadReader

    # No harness: the checkpoints and transcripts are read without compiling a graph (it starts at once).
    with open_thread_stores(data_dir, STORAGE["database_url"]) as stores:
        threads = ThreadReader(stores.checkpointer, stores.transcripts)
        threads.require(thread)
        threads.check_owner(thread, domain_caller(load_domain(domain_spec(domain)), user), domain=domain_spec(domain))
        rows = threads.history(thread, every=every)
        said = stores.transcripts.read(thread, every=every) if transcript else []
    if transcript:
        print_transcript(thread, said, json_out)
        return
    if json_out:
        emit_json({"thread_id": thread, "checkpoints": [r.__dict__ for r in rows]})
        return
    # The id never wraps (it is copied into `resume --checkpoint`); the message gives way at 80 columns.
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("turn", justify="right", no_wrap=True, min_width=4)
    table.add_column("phase", no_wrap=True, min_width=7)
    table.add_column("message", overflow="ellipsis", no_wrap=True, max_width=20)
    table.add_column("checkpoint", no_wrap=True, min_width=36)
    from rich.text import Text

    for r in rows:  # the message is the customer's words: text, not Rich markup
        table.add_row(str(r.turn), r.phase, Text(r.message or "-"), r.checkpoint_id)
    out.print(table)
    err.print(f"fork with: harness resume --thread {thread} --checkpoint ID (--json: steps, times, next nodes)",
              markup=False, highlight=False)


def print_transcript(thread: str, rows: list[dict[str, Any]], json_out: bool) -> None:
    from lg_harness.service.readable import transcript_lines

    if json_out:
        emit_json({"thread_id": thread, "messages": rows})
        return
    out.print("\n".join(transcript_lines(rows)), markup=False, highlight=False)


@app.command()
@cli_command
def resume(thread: ThreadOpt, checkpoint: Annotated[str | None, typer.Option(help="fork from this checkpoint")] = None,
           finish: Annotated[bool, typer.Option("--finish", help="run the steps a message stopped before "
                                                "(after a mid-message fork or a crash) and print its reply")] = False,
           data_dir: DataDir = DEFAULT_DATA_DIR,
           design: Annotated[str | None, typer.Option(help="with --finish: the design to finish with "
                                                      "(default: the one the thread last ran with)")] = None,
           model: Annotated[str | None, typer.Option(help="with --finish: the model to finish with "
                                                     "(default: the one the thread last ran with)")] = None,
           domain: Annotated[str | None, typer.Option("--domain", envvar="HARNESS_DOMAIN", help="the domain pack "
                                                      "(default: the one the thread last ran with)")] = None,
           user: UserOpt = None, json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Show where a thread stands; with --checkpoint, fork it so the next run continues from there; with
    --finish, complete the message the thread stopped in, with the design, model and domain it ran with."""
    from lg_harness.graphs.thread_history import public_state

    if finish:
        design, model = thread_setup(data_dir, thread, design, model)
    domain = domain or thread_domain(data_dir, thread)
    with open_harness(data_dir, design or "harness", model or "sim", domain, runs_messages=finish) as h:
        h.check_owner(thread, caller(h, user))
        if finish:
            print_result({**h.finish(thread, checkpoint).to_dict(), "forked_from": checkpoint}, json_out)
            return
        forked = h.fork(thread, checkpoint) if checkpoint else None
        state = h.state(thread)
        domain_name = h.domain.name
    summary = {"thread_id": thread, "domain": domain_name, "checkpoint_id": state["checkpoint_id"],
               "forked_from": checkpoint, "next": state["next"], **public_state(state["values"])}
    if json_out:
        emit_json(summary)
        return
    if forked:
        out.print(f"thread {thread} now continues from checkpoint {checkpoint} (new head {forked})")
    out.print_json(json.dumps(summary, ensure_ascii=False, default=str))
    pending = [n for n in state["pending"] if n != "human"]
    if pending:
        err.print(f"the thread stopped mid-message before {', '.join(pending)}: `harness resume --thread {thread} "
                  "--finish` completes it; `harness run` starts a new message instead")


def thread_domain(data_dir: Path, thread: str) -> str | None:
    """The domain spec ``thread`` last ran with, if the data dir (or the database) recorded one."""
    with recorded_threads(data_dir) as store:
        return store.domain_of(thread) if store is not None else None


@contextlib.contextmanager
def recorded_threads(data_dir: Path) -> Iterator[Any]:
    """The transcript store that records each thread's setup, without opening a harness (None: none yet)."""
    from lg_harness.memory.transcript import TranscriptStore

    if STORAGE["database_url"]:
        from lg_harness.memory.pg_stores import PgTranscriptStore
        from lg_harness.service.pgdb import migrate, open_pool

        pool = open_pool(STORAGE["database_url"], max_size=1)
        try:
            migrate(pool)
            yield PgTranscriptStore(pool)
        finally:
            pool.close()
        return
    path = data_dir / "transcripts.sqlite"
    if not path.exists():
        yield None
        return
    store = TranscriptStore(path)
    try:
        yield store
    finally:
        store.close()


def recorded_owner(data_dir: Path, thread: str) -> str | None:
    """The user ``thread`` belongs to, as the data dir's transcripts recorded it."""
    from lg_harness.memory.transcript import TranscriptStore

    path = data_dir / "transcripts.sqlite"
    if not path.exists():
        return None
    store = TranscriptStore(path)
    try:
        return store.owner(thread)
    finally:
        store.close()


def thread_setup(data_dir: Path, thread: str, design: str | None, model: str | None) -> tuple[str, str]:
    """The design and model to continue ``thread`` with: as given, else as it last ran, else the defaults."""
    with recorded_threads(data_dir) as store:
        recorded = store.setup(thread) if store is not None else None
    return design or (recorded[0] if recorded else "harness"), model or (recorded and recorded[1]) or INTERACTIVE_MODEL


@app.command()
@cli_command
def graph(design: DesignOpt = "harness", fmt: Annotated[str, typer.Option("--format", help="mermaid | ascii | png")]
          = "mermaid", output: Annotated[Path | None, typer.Option("-o", "--output", help="write to this file")] = None,
          domain: DomainOpt = None, json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Draw a design's topology offline."""
    from lg_harness.core.design import load_design
    from lg_harness.core.domain import load_domain
    from lg_harness.graphs.builder import build_graph
    from lg_harness.graphs.draw import draw_ascii, draw_png
    from lg_harness.llm.sim import SimChatModel

    spec = load_design(design)
    if (drawn := by_prefix(spec.name, DESIGN_GRAPHS)) is not None:  # a framework's own graph (peer:...)
        topology = drawn(spec.name, domain_spec(domain))
    else:
        # Drawing needs no stores, but the graph's shape depends on which ones a design uses.
        resources = {"memory": None} if spec.knobs.long_term_memory else {}
        topology = build_graph(spec, SimChatModel(), domain=load_domain(domain_spec(domain)),
                               resources=resources).get_graph()
    if fmt == "png":
        if output is None:
            raise HarnessError("--format png needs -o FILE")
        draw_png(topology, output, title=f"design: {spec.name}")
        text = str(output)
    elif fmt == "mermaid":
        text = topology.draw_mermaid()
    elif fmt == "ascii":
        text = draw_ascii(topology)
    else:
        raise HarnessError(f"unknown format '{fmt}': use mermaid, ascii or png")
    if output is not None and fmt != "png":
        output.write_text(text, encoding="utf-8")
    if json_out:
        emit_json({"design": spec.name, "format": fmt, "output": str(output) if output else None,
                   "text": None if fmt == "png" else text})
    elif output is None:
        out.print(text, markup=False, highlight=False)
    else:
        err.print(f"wrote {output}")


@app.command()
@cli_command
def designs(json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """The design presets, each one's node variants and knobs."""
    from lg_harness.core.design import PRESETS, ROLES

    data = [{"name": d.name, "description": d.description, "variants": {r: d.variant(r) for r in ROLES},
             "knobs": d.knobs.model_dump()} for d in PRESETS.values()]
    # designs other installed packages provide (the lab's peer frameworks), each described by its package
    peers = [row for _, entry in sorted(registered(DESIGN_LISTS).items())
             if (listing := installed(entry)) is not None for row in listing()]
    if json_out:
        emit_json({"designs": data, "peers": peers})
        return
    table = Table("design", "variants", "knobs", "description", show_lines=True)
    for d in data:
        variants = "\n".join(f"{r}: {v}" for r, v in d["variants"].items())
        knobs = "\n".join(f"{k}={v}" for k, v in d["knobs"].items())
        table.add_row(d["name"], variants, knobs, d["description"])
    out.print(table)
    rows = Table("peer", "framework", "given", "lacks", title="peer frameworks (rows for harness compare)",
                 show_lines=True)
    for p in peers:
        rows.add_row(p["name"], f"{p['framework']} {p['version'] or '(not installed: the peers extra)'}",
                     "\n".join(p["features"]), "\n".join(p["lacks"]))
    out.print(rows)


@app.command()
@cli_command
def domains(domain: Annotated[str | None, typer.Option(
                "--domain", help="one domain (a pack, module:attr, file or mcp:<command or URL>): its tools, their "
                "arguments, whether each changes the world and why")] = None,
            json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """The installed domain packs and the default domain: where each was found, intents, entity types, tools."""
    from lg_harness.core.domain import default_domain, installed_domains, load_domain, where_found

    if domain is not None:
        return _domain_tools(load_domain(domain).describe(), domain, json_out)
    spec, source = default_domain()
    names = sorted(installed_domains())
    data = [{**load_domain(name).describe(), "spec": name, "where": where_found(name), "default": name == spec}
            for name in names]
    if spec not in names:  # a default from a file or a server: shown with the packs
        data.append({**load_domain(spec).describe(), "spec": spec, "where": spec, "default": True})
    default = {"spec": spec, "from": source}
    if json_out:
        emit_json({"domains": data, "default": default})
        return
    table = Table("domain", "where", "description", "intents", "tools", "entities", show_lines=True)
    for d in data:
        table.add_row(d["name"] + (" (default)" if d["default"] else ""), d["where"], d["description"],
                      ", ".join(i["name"] for i in d["intents"]) or "none: tools ranked per request",
                      ", ".join(d["tools"]), ", ".join(d["entity_types"] + d["derived_entity_types"]))
    out.print(table)
    err.print(f"default domain: {spec} (from {source})", markup=False, highlight=False)


def _domain_tools(described: dict[str, Any], spec: str, json_out: bool) -> None:
    """``harness domains --domain``: one domain's tools, what each takes and whether (and why) it changes."""
    if json_out:
        emit_json({**described, "spec": spec})
        return
    table = Table("tool", "arguments", "changes the world?", "why", show_lines=True)
    for t in described["tool_details"]:
        table.add_row(t["name"], ", ".join(t["arguments"]) or "-", "yes: asked first" if t["changes"] else "no",
                      t["why"])
    out.print(table)
    err.print(f"domain {described['name']} ({spec}): {len(described['tool_details'])} tools; changing tools are "
              "confirmed before they run and recorded in the change ledger", markup=False, highlight=False)


@app.command()
@cli_command
def demo(scratch: Annotated[Path | None, typer.Option("--data-dir", help="run here instead of a new scratch "
                            "folder (must be empty, new, or an earlier demo's; HARNESS_DATA_DIR is ignored)")]
         = None, design: DesignOpt = "harness",
         model: Annotated[str, typer.Option("--model", help="the tour runs on the fault-free sim by default")]
         = "sim:clean", domain: DomainOpt = None,
         json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """A scripted conversation that shows each phase, the tool calls and the checkpoints."""
    from lg_harness.service.demo import run_demo

    # Not named data_dir: the shared error wrapper would set up tracing in that folder before it is checked.
    report = run_demo(scratch, design, model, console=None if json_out else out, domain=domain_spec(domain))
    if json_out:
        emit_json(report)


@app.command()
@cli_command
def trace(thread: ThreadOpt, data_dir: DataDir = DEFAULT_DATA_DIR, domain: DomainOpt = None, user: UserOpt = None,
          json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """The last message's span tree with timings."""
    from lg_harness.core.domain import load_domain
    from lg_harness.graphs.thread_history import unknown_thread
    from lg_harness.graphs.thread_ids import check_thread_id
    from lg_harness.obs.render import load_trace, span_tree

    check_thread_id(thread)
    me = load_domain(thread_domain(data_dir, thread) or domain_spec(domain)).default_user if user is None else user.strip()
    if not me:
        raise HarnessError("--user is empty: name the user whose thread this is")
    if (owner := recorded_owner(data_dir, thread)) is not None and owner != me:
        raise unknown_thread(thread)

    spans = load_trace(data_dir, thread_id=thread)
    if not spans and owner is None:
        raise unknown_thread(thread)
    if not spans:
        raise HarnessError(f"no trace for thread '{thread}' in {data_dir}; run a message first "
                           "(traces go to the data dir unless HARNESS_TRACE says otherwise)")
    if json_out:
        emit_json({"thread_id": thread, "trace_id": spans[0].get("trace_id"), "spans": spans})
    else:
        out.print(span_tree(spans))


@app.command()
@cli_command
def stats(data_dir: DataDir = DEFAULT_DATA_DIR, thread: Annotated[str | None, typer.Option("--thread", "-t")] = None,
          json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Operator view: health figures flagged against thresholds, the human queue and uncertain changes; no
    personal data (lg_harness/obs/operator_view.py)."""
    from lg_harness.graphs.storage import open_stores
    from lg_harness.obs.operator_view import as_json, operator_view, queue_table, stops_table, uncertain_table
    from lg_harness.obs.render import stats_table

    if not STORAGE["database_url"] and not (data_dir / "audit.sqlite").exists():
        raise HarnessError(f"no audit log in {data_dir}; run some messages first")
    stores = open_stores(data_dir, STORAGE["database_url"])  # no Chroma: the view reads no memories
    try:
        view = operator_view(stores, thread)
    finally:
        stores.close()
    if json_out:
        emit_json(as_json(view))
        return
    out.print(stats_table(view["stats"]))
    out.print(stops_table(view))
    out.print(queue_table(view))
    if view["uncertain_changes"]:
        out.print(uncertain_table(view))



@app.command()
@cli_command
def serve(host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
          workers: Annotated[int, typer.Option(min=1, help="worker processes (more than 1 needs --database-url)")]
          = 1,
          threads: Annotated[int, typer.Option(min=1, help="messages one worker runs at once")] = 2,
          lease_ttl: Annotated[float, typer.Option(min=1, help="seconds a dead worker's thread stays leased")] = 30.0,
          policy: Annotated[str, typer.Option(help="a message on a busy thread: enqueue | reject | interrupt")]
          = "enqueue",
          data_dir: DataDir = DEFAULT_DATA_DIR, design: DesignOpt = "harness", model: ModelOpt = "sim",
          domain: DomainOpt = None, debug: DebugOpt = False) -> None:
    """The HTTP service and the web desk at / (OpenAPI docs at /docs); customers authenticate by
    HARNESS_API_KEYS or HARNESS_TRUSTED_USER_HEADER, the desk by HARNESS_DESK_KEYS (docs/desk.md)."""
    from lg_harness.service.serve import serve as run_serve

    run_serve(host=host, port=port, workers=workers, data_dir=data_dir, design=design, model=model,
              domain=domain_spec(domain),
              threads=threads, lease_ttl=lease_ttl, policy=policy, log_level="debug" if debug else "warning",
              durability=DURABILITY["mode"], **STORAGE)


def on_terminal() -> bool:
    """Whether a person at a terminal can answer a question (prune asks before deleting)."""
    return sys.stdin.isatty()


@app.command()
@cli_command
def prune(older_than: Annotated[str, typer.Option("--older-than", help="threads idle longer than this: 30d, 12h, "
                                                  "90m")],
          keep_latest: Annotated[bool, typer.Option("--keep-latest", help="keep each thread (its latest checkpoint, "
                                                    "transcript and audit); drop only older checkpoints")] = False,
          dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would be deleted; delete nothing")] = False,
          include_human: Annotated[bool, typer.Option("--include-human", help="also threads waiting for or held by "
                                                      "a human (kept by default)")] = False,
          yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask before deleting")] = False,
          data_dir: DataDir = DEFAULT_DATA_DIR, domain: DomainOpt = None, json_out: JsonOpt = False,
          debug: DebugOpt = False) -> None:
    """Retention: delete threads idle longer than --older-than (or, with --keep-latest, their old checkpoints).
    Threads waiting for or held by a human are kept unless --include-human; on a terminal it asks first."""
    from lg_harness.service.prune import parse_age, plan
    from lg_harness.service.prune import prune as run_prune

    age = parse_age(older_than)
    with open_harness(data_dir, "harness", "sim", domain, runs_messages=False) as h:
        planned = plan(h, age, include_human=include_human)
        what = "drop the older checkpoints of" if keep_latest else "delete"
        if dry_run or not json_out:
            _say_planned(planned, older_than, ("would " if dry_run else "will ") + what)
        if dry_run:
            if json_out:
                emit_json({"dry_run": True, **planned})
            return
        if planned["thread_ids"] and not yes and on_terminal() and not typer.confirm(
                f"{what.capitalize()} {len(planned['thread_ids'])} thread(s)?", default=False, err=True):
            raise HarnessError("nothing deleted")
        report = run_prune(h, age, keep_latest=keep_latest, include_human=include_human)
    if json_out:
        emit_json(report)
        return
    out.print(f"{report['strategy']}: {report['threads']} thread(s) idle for over {older_than}; checkpoints "
              f"{report['checkpoints_before']} -> {report['checkpoints_after']}")


def _say_planned(planned: dict[str, list[str]], older_than: str, verb: str) -> None:
    threads, kept = planned["thread_ids"], planned["kept_for_a_human"]
    err.print(f"{verb} {len(threads)} thread(s) idle for over {older_than}: {', '.join(threads) or '-'}",
              markup=False, highlight=False)
    if kept:
        err.print(f"kept, waiting for or held by a human (--include-human deletes them too): {', '.join(kept)}",
                  markup=False, highlight=False)


handoff_app = typer.Typer(no_args_is_help=True, help="Threads waiting for a human, and the human's answer.")
app.add_typer(handoff_app, name="handoff")
AgentOpt = Annotated[str | None, typer.Option("--agent", envvar="HARNESS_DESK_AGENT",
                                              help="who you are at the desk, for the audit log (default: your "
                                                   "login name)")]


def desk_agent(agent: str | None) -> str:
    import getpass

    name = (agent if agent is not None else getpass.getuser()).strip()
    if not name or name.startswith("@"):
        raise HarnessError("--agent names the person at the desk (the audit log records it), e.g. --agent alice")
    return name


def queue_table(queue: dict[str, list[dict[str, Any]]]) -> Table:
    """The queue as a table; every cell a customer could have written is plain text (``Text``), so Rich
    markup such as ``[bold red]`` and masks such as ``[email]`` show as typed."""
    from rich.text import Text

    table = Table("thread", "status", "taken by", "user", "ticket", "reason", "last message (masked)")
    for r in queue["waiting"] + queue["held"]:
        ho = r["handoff"] or {}
        cells = (r["thread_id"], r["status"], r.get("taken_by") or "-", (r["user"] or {}).get("id", "-"),
                 str(ho.get("ticket")), ho.get("reason", "-"), r["last_message"])
        table.add_row(*(Text(str(c)) for c in cells))
    return table


@handoff_app.command("list")
@cli_command
def handoff_list(data_dir: DataDir = DEFAULT_DATA_DIR, domain: DomainOpt = None, json_out: JsonOpt = False,
                 debug: DebugOpt = False) -> None:
    """Threads waiting for or held by a human: reason, ticket, who took it, the customer's last message (masked);
    the same list as GET /handoffs."""
    from lg_harness.service.desk import ops

    with open_harness(data_dir, "harness", "sim", domain, runs_messages=False) as h:
        queue = ops.queue(h)
    if json_out:
        emit_json(queue)
        return
    out.print(queue_table(queue) if queue["waiting"] or queue["held"]
              else "no threads are waiting for or held by a human")


@handoff_app.command("take")
@cli_command
def handoff_take(thread: ThreadOpt, agent: AgentOpt = None, data_dir: DataDir = DEFAULT_DATA_DIR,
                 domain: DomainOpt = None, json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Take a waiting or held thread: colleagues see it is yours (as POST /handoffs/{id}/take)."""
    from lg_harness.service.desk import ops

    with open_harness(data_dir, "harness", "sim", domain) as h:
        result = ops.take(h, desk_agent(agent), thread)
    if json_out:
        emit_json(result)
    else:
        out.print(f"thread {thread} is yours ({result['taken_by']}); answer with: harness handoff reply --thread "
                  f"{thread} TEXT", markup=False, highlight=False)


@handoff_app.command("reply")
@cli_command
def handoff_reply(message: Annotated[str, typer.Argument(help="the human agent's answer")], thread: ThreadOpt,
                  agent: AgentOpt = None, data_dir: DataDir = DEFAULT_DATA_DIR, domain: DomainOpt = None,
                  json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Answer a waiting or held thread as the human agent; the human holds it until `handoff release`."""
    from lg_harness.service.desk import ops

    with open_harness(data_dir, "harness", "sim", domain) as h:
        result = ops.answer(h, desk_agent(agent), thread, message)
    if json_out:
        emit_json(result)
    else:
        out.print(f"reply sent on thread {thread}: {result['reply']}\nthe customer's messages now come to you; "
                  f"hand the thread back with: harness handoff release --thread {thread}", markup=False,
                  highlight=False)


@handoff_app.command("release")
@cli_command
def handoff_release(thread: ThreadOpt, agent: AgentOpt = None, data_dir: DataDir = DEFAULT_DATA_DIR,
                    domain: DomainOpt = None, json_out: JsonOpt = False, debug: DebugOpt = False) -> None:
    """Hand a thread you hold back to the bot; the customer's next message goes to it."""
    from lg_harness.service.desk import ops

    with open_harness(data_dir, "harness", "sim", domain) as h:
        result = ops.release(h, desk_agent(agent), thread, supervisor=True)
    if json_out:
        emit_json(result)
    else:
        out.print(f"thread {thread} is back with the bot", markup=False, highlight=False)


# Commands other installed packages add (the lab's compare, bench and calibrate): each entry of this group is a
# function that registers its commands on ``app``. Read when this module loads, so every caller of ``app`` has them.
COMMANDS = "lg_harness.commands"
LAB_COMMANDS = ("compare", "bench", "calibrate")


def add_installed_commands(target: typer.Typer) -> None:
    """Every ``lg_harness.commands`` entry's commands, then a pointer to the lab for each of its commands that
    no package added."""
    for _, entry in sorted(registered(COMMANDS).items()):
        module = sys.modules.get(entry.module)
        if module is not None and not hasattr(module, entry.attr):
            continue  # that module is importing this one: it registers its commands itself when it is done
        if (add := installed(entry)) is not None:
            add(target)
    added = {c.name or (c.callback.__name__ if c.callback else "") for c in target.registered_commands}
    for name in LAB_COMMANDS:
        if name not in added:
            target.command(name, context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
                           help="(part of the lab: pip install -e ./lab)")(needs_lab(name))


def needs_lab(name: str) -> Callable[..., None]:
    def missing() -> None:
        err.print(f"`harness {name}` is part of the lab, which is not installed: pip install -e ./lab (from a "
                  "checkout; scripts/setup.sh --dev installs it)")
        raise typer.Exit(2)

    return missing


def main() -> None:  # pragma: no cover - console entry point
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    app()


add_installed_commands(app)
