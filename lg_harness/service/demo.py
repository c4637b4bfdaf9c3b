"""The scripted demo: a short conversation that walks through every phase, then a resume and a fork."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from lg_harness.core.domain import Domain, load_domain
from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.obs.outcomes import call_outcome

THREAD = "demo"
FORK_AFTER = 3  # the demo forks the thread after this message and sends the next one again


# Written into every folder the demo creates: only such a folder is ever cleared by a later demo.
MARKER = ".harness-demo"


def demo_dir(data_dir: str | Path | None) -> Path:
    """Where the demo runs: a new scratch folder, or ``data_dir`` if it is empty, new or an earlier demo's.

    The demo starts from the seeded backends each time so the story is the same; it clears only what an
    earlier demo made there, and refuses a folder holding anything else (a user's checkpoints,
    transcripts, waiting handoffs).
    """
    if data_dir is None:
        path = Path(tempfile.mkdtemp(prefix="harness-demo-"))
    else:
        path = Path(data_dir).expanduser()
        if path.is_dir() and any(path.iterdir()) and not (path / MARKER).exists():
            raise HarnessError(f"data dir {path} already holds data the demo did not create; the demo never "
                               "touches it: leave out --data-dir (a scratch folder is made) or pass a new folder")
        path.mkdir(parents=True, exist_ok=True)
    if (path / MARKER).exists():  # an earlier demo's folder: clear what that demo made
        for db in path.glob("*.sqlite*"):
            db.unlink(missing_ok=True)
        shutil.rmtree(path / "memory", ignore_errors=True)
    (path / MARKER).write_text("made by harness demo; a later demo may clear this folder\n", encoding="utf-8")
    return path


def _show_turn(console: Console | None, i: int, message: str, r: dict[str, Any]) -> None:
    if console is None:
        return
    # held (a change waiting for the yes) and blocked are the harness's own stops, not tool errors
    calls = "\n".join(f"{c['name']}({c['args']}) -> {call_outcome(c['status'], c['error_type'])}"
                      + (f" [{c['error_type']}]" if c["error_type"] else "") for c in r["tool_calls"]) or "-"
    table = Table(show_header=False, box=None, padding=(0, 1))
    # Text, not markup: "[needs_confirmation]" and "[...]" a customer wrote are shown, never read as styles.
    table.add_row("[bold]user[/bold]", Text(message))
    table.add_row("path", " -> ".join(r["path"]))
    table.add_row("intent", Text(f"{r['intent']}  slots={r['slots']}  missing={r['missing_slots']}"))
    table.add_row("tools", Text(calls))
    table.add_row("[bold]agent[/bold]", Text(r["reply"]))
    table.add_row("usage", f"{r['usage']['model_calls']} model calls, {r['usage']['input_tokens']} input tokens")
    table.add_row("checkpoint", str(r["checkpoint_id"]))
    console.rule(f"message {i}")
    console.print(table)


def run_demo(data_dir: str | Path | None = None, design: str = "harness", model: str = "sim",
             console: Console | None = None, domain: str | Domain | None = None) -> dict[str, Any]:
    """The domain's demo script (``Domain.demo``), then a fork after message 3 and message 4 sent again.

    ``data_dir`` None runs in a new scratch folder (see ``demo_dir``); the report names the folder used.
    """
    pack = load_domain(domain)
    data_dir = demo_dir(data_dir)
    script = list(pack.demo)
    if len(script) <= FORK_AFTER:
        raise HarnessError(f"domain '{pack.name}' has no demo script of at least {FORK_AFTER + 1} messages")
    turns = []
    with Harness(model, domain=pack, design=design, settings=Settings(data_dir=data_dir)) as h:
        for i, message in enumerate(script, 1):
            r = h.send(THREAD, message, pack.default_user).to_dict()
            turns.append({"message": message, **r})
            _show_turn(console, i, message, r)
    # A new Harness is what a new process sees: everything comes back from the checkpoint database.
    with Harness(model, domain=pack, design=design, settings=Settings(data_dir=data_dir)) as h:
        checkpoints = h.history(THREAD)
        forked = next(c for c in checkpoints if c.checkpoint_id == turns[FORK_AFTER - 1]["checkpoint_id"])
        h.fork(THREAD, forked.checkpoint_id)
        replay = h.send(THREAD, script[FORK_AFTER], pack.default_user)
        check = pack.demo_check(h.resources) if pack.demo_check else None
    if console is not None:
        console.rule(f"resume in a new process, fork from message {FORK_AFTER}, send message {FORK_AFTER + 1} again")
        console.print(f"{len(checkpoints)} checkpoints on thread '{THREAD}'; forked from {forked.checkpoint_id}")
        _show_turn(console, FORK_AFTER + 1, script[FORK_AFTER], replay.to_dict())
        if check is not None:
            console.print(f"{check[0]}: {check[1]} (the replayed call reused its idempotency key)")
        console.print(f"data dir: {data_dir.resolve()}")
    report = {"thread_id": THREAD, "domain": pack.name, "data_dir": str(data_dir.resolve()), "turns": turns, "checkpoints": len(checkpoints),
              "forked_from": forked.checkpoint_id, "replay": replay}
    if check is not None:
        report["check"] = {"what": check[0], "value": check[1]}
    return report
