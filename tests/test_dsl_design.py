"""A design driven by DSL text behaves exactly like the same rules written as Python guards."""

from pathlib import Path

from lg_harness.core.design import load_design
from lg_harness.core.dsl import PYTHON_EQUIVALENT_RULES
from lg_harness.graphs.app import Harness

CONVERSATION = [
    "hi",
    "where is my order?",
    "ORD-10144",
    "I want to return it, wrong size",
    "有没有蓝牙耳机？",
    "blorp",
    "florp zzz",
    "claim WELCOME10",
]


def _run(data_dir: Path, design) -> list[tuple]:
    with Harness(data_dir, design, "sim:clean") as h:
        out = []
        for text in CONVERSATION:
            r = h.send("t", text, "U001")
            out.append((r["path"], r["intent"], r["reply"], [(c["name"], c["args"], c["status"]) for c in r["tool_calls"]]))
        return out


def test_dsl_design_matches_python_guards(tmp_path: Path) -> None:
    python_design = load_design("harness")
    dsl_design = python_design.model_copy(update={"name": "harness-dsl", "rules": PYTHON_EQUIVALENT_RULES})
    python_run = _run(tmp_path / "py", python_design)
    dsl_run = _run(tmp_path / "dsl", dsl_design)
    assert dsl_run == python_run
    paths = [p for p, *_ in python_run]
    assert ["intent", "handoff"] in [p[:2] for p in paths]  # the unknown-intent streak handed off
    assert any("action" in p for p in paths)
