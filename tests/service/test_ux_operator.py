"""What operators see (issue 17, item 6): forks from any checkpoint, a history to choose a fork point by,
--version, progress, an honest Ctrl-C, chat commands, one-line design errors, ids across dash variants."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lg_harness.core.design import load_design
from lg_harness.core.domain import load_domain
from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.tools.text import clean_text
from lg_harness_lab.evals.scenario_sets import scenario_path
from tests.support import HARNESS, harness, patient_design

MODEL = "sim:clean"


def test_fork_from_the_first_checkpoint(tmp_path: Path) -> None:
    # every step saved: the thread's first checkpoint is its input, before any message ran
    with Harness(MODEL, design=patient_design(),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        h.send("t", "hi", "U001")
        h.send("t", "Where is my order ORD-10134?", "U001")
        first = h.history("t")[-1]
        assert first.parent_id is None
        h.fork("t", first.checkpoint_id)
        assert h.state("t")["values"].get("turn") in (None, 0)
        r = h.send("t", "Where is my order ORD-10134?", "U001")
        assert r.phase == "done" and h.state("t")["values"]["turn"] == 1


def test_history_shows_turn_message_and_phase_with_ids_whole_at_80_columns(tmp_path: Path) -> None:
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "Where is my order ORD-10134? I have been waiting for it for a very long time now", "U001")
        ids = [c.checkpoint_id for c in h.history("t")]
        rows = h.history("t")
    assert rows[0].turn == 1 and rows[0].message.startswith("Where is my order ORD-10134?")
    env = {**os.environ, "COLUMNS": "80", "HF_HUB_OFFLINE": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("HARNESS_")}
    proc = subprocess.run([str(HARNESS), "history", "-t", "t", "--data-dir", str(tmp_path)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "turn" in lines[1] and "phase" in lines[1] and "message" in lines[1]
    for cid in ids:  # every id on one line, whole, so it copies cleanly
        assert any(cid in line for line in lines), cid
    assert any("Where is my" in line and ids[0] in line for line in lines)


def test_version(tmp_path: Path) -> None:
    proc = harness("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("harness ") and proc.stdout.split()[1][0].isdigit()


@pytest.mark.slow
def test_stderr_tool_summary_keeps_the_call_list(tmp_path: Path) -> None:
    proc = harness("run", "Where is my order ORD-10134?", "--data-dir", str(tmp_path), "--model", MODEL, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert 'tools=[get_order_status({"order_id": "ORD-10134"}) -> ok]' in proc.stderr


@pytest.mark.slow
def test_chat_has_help_and_rejects_unknown_commands(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")} | {"HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([str(HARNESS), "chat", "--data-dir", str(tmp_path), "--model", MODEL],
                          input="/help\n/histroy\n/quit\n", capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert "/history" in proc.stderr and "/state" in proc.stderr  # the help
    assert "unknown command '/histroy'" in proc.stderr
    assert "agent>" not in proc.stdout  # neither went to the bot
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        assert not h.thread_exists("chat")


@pytest.mark.parametrize("text,expect", [
    ("name: mine\nknobs:\n  windw: 3\n", ["unknown knob 'windw'", "window_messages", "max_rounds"]),
    ("name: mine\nknobs:\n  identical_calls: sometimes\n", ["knobs.identical_calls", "'block', 'reuse' or 'allow'"]),
    ("name: mine\nvarient: {}\n", ["unknown field 'varient'", "variants"]),
    ("name: [mine\n", ["YAML syntax at line"]),
])
def test_design_file_errors_are_one_line_naming_file_field_and_choices(tmp_path: Path, text: str,
                                                                       expect: list[str]) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        load_design(str(path))
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    for part in expect:
        assert part in message, message


def test_an_unknown_knob_in_an_ablation_lists_the_knobs() -> None:
    with pytest.raises(HarnessError, match="max_rounds"):
        load_design("harness-no:windw")


@pytest.mark.parametrize("dash", ["\u2013", "\u2014", "\u2212", "\uff0d", "\u2010", "\u2011"])
def test_ids_are_found_across_dash_variants(dash: str) -> None:
    """Already right on main before this branch; kept as a guard."""
    shop = load_domain("shop")
    assert shop.entities_in(clean_text(f"where is ORD{dash}10134"))["order"] == ["ORD-10134"]


def test_compare_says_on_ctrl_c_what_was_saved_and_how_to_resume(tmp_path: Path) -> None:
    from lg_harness_lab.evals.compare import read_cells, run_compare
    from lg_harness_lab.evals.scenario import load_scenarios, select_split, spread

    suite = spread(select_split(load_scenarios(scenario_path(load_domain("shop"), "builtin")), "test"), 3)

    def interrupt_after_one(done: int, total: int) -> None:
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(HarnessError) as caught:
        run_compare(["harness"], suite, seeds=1, model=MODEL, out_dir=tmp_path, workers=1,
                    on_done=interrupt_after_one)
    message = str(caught.value)
    assert "1 of 3 cells are saved" in message and str(tmp_path / "cells.jsonl") in message
    assert "run the same command again" in message
    assert len(read_cells(tmp_path)) == 1


def test_bench_context_reports_progress_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from lg_harness_lab.benchmarks.bench_context import run_bench_context

    run_bench_context(turns=3, long_turns=3, strategies=("hybrid",))
    captured = capsys.readouterr()
    assert "bench context shop hybrid: 1/3 messages" in captured.err
    assert "3/3 messages" in captured.err
    assert captured.out == ""


def test_money_prints_with_the_domains_currency(tmp_path: Path) -> None:
    from lg_harness.nodes.money import with_currency

    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        # asks for the items' prices: the sim answers what is asked, no longer every field of the order
        r = h.send("t", "What did I buy in ORD-10134 and what did each cost?", "U001")
    assert "131.00 USD" in r.reply and "· 131.0 ·" not in r.reply, r.reply
    results = [{"total": 288.49, "currency": "USD", "items": [{"price": 131.0, "qty": 2}]}]
    assert with_currency("Total: 288.49 USD, 131.0 each, qty 2", results, "USD") == \
        "Total: 288.49 USD, 131.00 USD each, qty 2"
    assert with_currency("131.0", results, "") == "131.0"  # a domain without a currency is left alone
