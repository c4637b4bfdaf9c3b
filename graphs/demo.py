"""The scripted demo: a short conversation that walks through every phase, then a resume and a fork."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from graphs.app import Harness

SCRIPT = [
    "Hi there",
    "Where is my order?",
    "ORD-10144",
    "I want to return it, the shoes are the wrong size",
    "有没有蓝牙耳机？",
    "I'd like to talk to a human please",
]
THREAD = "demo"
USER = "U001"


def _fresh(data_dir: Path) -> Path:
    """The demo owns its data dir: start from the seeded shop each time so the story is the same."""
    for name in ("shop.sqlite", "checkpoints.sqlite", "transcripts.sqlite"):
        for suffix in ("", "-wal", "-shm"):
            (data_dir / (name + suffix)).unlink(missing_ok=True)
    shutil.rmtree(data_dir / "memory", ignore_errors=True)
    return data_dir


def _show_turn(console: Console | None, i: int, message: str, r: dict[str, Any]) -> None:
    if console is None:
        return
    calls = "\n".join(f"{c['name']}({c['args']}) -> {c['status']}" + (f" [{c['error_type']}]" if c["error_type"] else "")
                      for c in r["tool_calls"]) or "-"
    table = Table(show_header=False, box=None, padding=(0, 1))
    table.add_row("[bold]user[/bold]", message)
    table.add_row("path", " -> ".join(r["path"]))
    table.add_row("intent", f"{r['intent']}  slots={r['slots']}  missing={r['missing_slots']}")
    table.add_row("tools", calls)
    table.add_row("[bold]agent[/bold]", r["reply"])
    table.add_row("usage", f"{r['usage']['model_calls']} model calls, {r['usage']['input_tokens']} input tokens")
    table.add_row("checkpoint", str(r["checkpoint_id"]))
    console.rule(f"message {i}")
    console.print(table)


def run_demo(data_dir: str | Path, design: str = "harness", model: str = "sim",
             console: Console | None = None) -> dict[str, Any]:
    data_dir = _fresh(Path(data_dir))
    turns = []
    with Harness(data_dir, design, model) as h:
        for i, message in enumerate(SCRIPT, 1):
            r = h.send(THREAD, message, USER)
            turns.append({"message": message, **r})
            _show_turn(console, i, message, r)
    # A new Harness is what a new process sees: everything comes back from the checkpoint database.
    with Harness(data_dir, design, model) as h:
        checkpoints = h.history(THREAD)
        after_lookup = next(c for c in checkpoints if c.checkpoint_id == turns[2]["checkpoint_id"])
        h.fork(THREAD, after_lookup.checkpoint_id)
        replay = h.send(THREAD, SCRIPT[3], USER)
        returns = h.shop.query_one("SELECT COUNT(*) FROM returns WHERE order_id = 'ORD-10144'")[0]
    if console is not None:
        console.rule("resume in a new process, fork from message 3, send message 4 again")
        console.print(f"{len(checkpoints)} checkpoints on thread '{THREAD}'; forked from {after_lookup.checkpoint_id}")
        _show_turn(console, 4, SCRIPT[3], replay)
        console.print(f"returns recorded for ORD-10144: {returns} (the replayed call reused its idempotency key)")
        console.print(f"data dir: {data_dir.resolve()}")
    return {"thread_id": THREAD, "turns": turns, "checkpoints": len(checkpoints),
            "forked_from": after_lookup.checkpoint_id, "replay": replay, "returns_for_order": returns}
