"""Record conversations with tools the harness did not write, on a given model (the local one by default).

Each conversation runs against a domain of tools alone: MCP servers installed from PyPI (``mcp-server-time``,
``mcp-server-git``: written by others, free-text arguments), the FastMCP weather server and the lending
library of the tests. The transcript keeps, per message: what the customer wrote, every tool call (arguments,
status, error), the reply, and the model calls, tokens and seconds it took; the header keeps the machine's
load, so a slow figure can be read against it.

    python -m venv /tmp/mcpvenv && /tmp/mcpvenv/bin/pip install mcp-server-time mcp-server-git
    python scripts/own_tools_transcripts.py --servers /tmp/mcpvenv/bin --out lab/reports/own-tools-local

Writes ``transcripts.md`` (to read) and ``transcripts.json`` (to check) under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repository root: tests.fixtures is there


def demo_repo() -> str:
    """A small repository with one commit, one modified file and one untracked file."""
    repo = Path(tempfile.mkdtemp(prefix="demo-repo-"))
    git = ["git", "-C", str(repo), "-c", "user.email=ana@example.org", "-c", "user.name=Ana Costa"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "notes.txt").write_text("first line\n")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "Add the first notes"], check=True)
    (repo / "notes.txt").write_text("first line\nsecond line\n")
    (repo / "todo.txt").write_text("buy milk\n")
    return str(repo)


def conversations(servers: Path) -> list[dict[str, Any]]:
    repo = demo_repo()
    weather = f"{sys.executable} {ROOT / 'tests' / 'fixtures' / 'mcp_weather_server.py'}"
    return [
        {"name": "time (mcp-server-time from PyPI)", "mcp": f"{servers / 'mcp-server-time'} --local-timezone UTC",
         "turns": ["What time is it in Tokyo?", "What time is it in Asia/Tokyo?", "上海现在几点？"]},
        {"name": "git (mcp-server-git from PyPI)", "mcp": str(servers / "mcp-server-git"),
         "turns": [f"What is the status of the git repository at {repo}?",
                   f"Show me the last commit in {repo}."]},
        {"name": "weather (FastMCP server of the tests, no annotations)", "mcp": weather,
         "turns": ["What's the weather forecast for Lisbon?"]},
        {"name": "lending (a tools-only domain: find_member, then renew_loan)", "lending": True,
         "turns": ["Please renew my loan of Dune. My email is ana@example.org", "yes"]},
    ]


def run(conversation: dict[str, Any], model: str) -> list[dict[str, Any]]:
    from lg_harness.core.domain import Domain
    from lg_harness.graphs.app import Harness, Parts, Settings
    from lg_harness.tools.mcp import mcp_tools

    turns: list[dict[str, Any]] = []

    def talk(domain: Domain, resources: dict[str, Any] | None = None) -> None:
        with Harness(model, domain=domain, design="harness",
                     settings=Settings(data_dir=None, parts=Parts(resources=resources))) as h:
            for text in conversation["turns"]:
                began = time.perf_counter()
                r = h.send("t", text, "ana")
                turns.append({"user": text, "reply": r.reply, "seconds": round(time.perf_counter() - began, 1),
                              "model_calls": r.usage.model_calls, "output_tokens": r.usage.output_tokens,
                              "input_tokens": r.usage.input_tokens,
                              "calls": [{"name": c["name"], "args": c["args"], "status": c["status"],
                                         "error_type": c["error_type"], "error": c["error"],
                                         # what the model wrote, where the harness rewrote it before the tool
                                         "emitted": c.get("emitted_args")}
                                        for c in r.values.get("tool_log") or []]})

    if conversation.get("lending"):
        from tests.fixtures.lending_domain import DOMAIN as LENDING

        talk(LENDING, LENDING.fresh_resources() if LENDING.fresh_resources else None)
    else:
        with mcp_tools(conversation["mcp"]) as tools:
            talk(Domain(name=conversation["name"].split()[0], tools=tools))
    return turns


def markdown(record: dict[str, Any]) -> str:
    lines = [f"# Tools the harness did not write, on `{record['model']}`", "",
             f"Recorded {record['recorded']} with `python scripts/own_tools_transcripts.py --model {record['model']}` "
             f"on {record['machine']} (load average before: {record['load_before']}, after: {record['load_after']}).",
             "Design `harness`. Each message: the customer's words, the tool calls (arguments, status), the reply, "
             "and what it cost.", ""]
    for conv in record["conversations"]:
        lines += [f"## {conv['name']}", ""]
        for t in conv["turns"]:
            lines.append(f"**Customer:** {t['user']}  ")
            for c in t["calls"]:
                shown = c["status"] if c["status"] == "ok" else f"{c['error_type']}: {c['error']}"
                wrote = c.get("emitted")
                said = f" (the model wrote {json.dumps(wrote, ensure_ascii=False)})" if wrote and wrote != c["args"] else ""
                lines.append(f"`{c['name']}({json.dumps(c['args'], ensure_ascii=False)})`{said} -> {shown}  ")
            lines += [f"**Assistant:** {t['reply']}  ",
                      f"_{t['model_calls']} model calls, {t['input_tokens']} prompt + {t['output_tokens']} generated "
                      f"tokens, {t['seconds']} s_", ""]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--model", default="local:qwen2.5-coder-0.5b")
    parser.add_argument("--servers", default="/tmp/mcpvenv/bin", help="folder with mcp-server-time, mcp-server-git")
    parser.add_argument("--out", default="lab/reports/own-tools-local")
    args = parser.parse_args()
    servers = Path(args.servers)
    missing = [s for s in ("mcp-server-time", "mcp-server-git") if not (servers / s).exists()]
    if missing:
        sys.exit(f"error: {', '.join(missing)} not in {servers}; install them in a venv of their own: "
                 "python -m venv /tmp/mcpvenv && /tmp/mcpvenv/bin/pip install mcp-server-time mcp-server-git")
    record: dict[str, Any] = {"model": args.model, "recorded": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                              "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                              "load_before": round(os.getloadavg()[0], 2), "conversations": []}
    for conv in conversations(servers):
        record["conversations"].append({"name": conv["name"], "turns": run(conv, args.model)})
        print(f"recorded: {conv['name']}", file=sys.stderr)
    record["load_after"] = round(os.getloadavg()[0], 2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "transcripts.json").write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    (out / "transcripts.md").write_text(markdown(record))
    print(f"wrote {out / 'transcripts.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
