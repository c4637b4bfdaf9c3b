"""A CLI that starts at once: the light commands load none of the heavy libraries.

Importing torch, Chroma, sentence-transformers, the peer frameworks, matplotlib or FastAPI costs seconds of
CPU before a command does anything. Only the commands that use them may import them; ``--help``,
``history``, ``domains`` and ``designs`` do not, and ``history`` reads the checkpoints without compiling a
graph. Each case runs in a fresh interpreter and looks at ``sys.modules`` afterwards (a behaviour, not a
timing: ``harness bench graph`` reports the start-up CPU).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lg_harness.graphs.app import Harness, Settings

HEAVY = ("torch", "chromadb", "sentence_transformers", "transformers", "langchain", "pydantic_ai", "agents",
         "langchain_openai", "langchain_ollama", "llama_cpp", "matplotlib", "fastapi", "uvicorn", "scipy")
# Nor do they load LangGraph's run machinery or the tracing stack; history needs no harness around it either.
RUNNING = ("langgraph.pregel", "langgraph.graph", "opentelemetry")
GRAPH = (*RUNNING, "lg_harness.graphs.app", "lg_harness.nodes")

PROBE = """
import json, sys
sys.argv = ["harness", *json.loads(sys.argv[1])]
from lg_harness.service import cli
if len(sys.argv) > 1:
    try:
        cli.main()
    except SystemExit as stop:
        assert not stop.code, stop.code
print(json.dumps(sorted(m for m in sys.modules)))
"""


def loaded_by(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True,
                          timeout=120, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def roots(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)]


def test_importing_the_cli_loads_no_heavy_library():
    assert roots(loaded_by(), HEAVY + GRAPH) == []


@pytest.mark.parametrize("command", [["--help"], ["domains"], ["designs"], ["domains", "--json"]])
def test_light_commands_load_no_heavy_library(command):
    assert roots(loaded_by(*command), HEAVY + RUNNING) == []


def test_history_reads_checkpoints_without_the_graph(tmp_path):
    with Harness("sim:clean", design="harness", settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "Where is my order ORD-10134?", "U001")
    modules = loaded_by("history", "--thread", "t", "--data-dir", str(tmp_path), "--user", "U001", "--json")
    assert roots(modules, HEAVY + GRAPH) == []
