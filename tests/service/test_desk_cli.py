"""The desk in the shell: ``harness handoff`` shows what a customer wrote as typed (Rich markup and masks
included), shares the HTTP routes' code path (take, answer, release; audited under the agent's name), and
``harness stats`` and ``run`` tell the harness's own holds and blocks from tool failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lg_harness.graphs.app import Harness, Settings
from lg_harness.obs.audit import AuditLog
from lg_harness.tools.executor import ToolOutcome
from tests.support import harness, patient_design

MARKUP = "[bold red]I want a human[/] [link=http://evil.test]click[/link] <b>bold</b>"


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per table row, so what is printed can be read back


@pytest.mark.slow
def test_handoff_list_prints_customer_text_literally_with_its_masks(tmp_path: Path, wide: None) -> None:
    data = tmp_path / "data"
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=data)) as h:
        h.send("s2", f"My email is jo@example.com, call me at 555-123-4567. {MARKUP}", "U001")
        h.send("m", "[red]hi[/] there", "U001")
    history = harness("history", "-t", "m", "--user", "U001", "--data-dir", str(data), cwd=tmp_path)
    assert history.returncode == 0 and "[red]hi[/] there" in history.stdout, history.stderr
    shown = harness("handoff", "list", "--data-dir", str(data), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"My email is [email], call me at [phone]. {MARKUP}" in shown.stdout
    assert "\x1b]8;" not in shown.stdout, "no live terminal hyperlink"
    assert "jo@example.com" not in shown.stdout

    taken = harness("handoff", "take", "-t", "s2", "--agent", "bob", "--data-dir", str(data), cwd=tmp_path)
    assert taken.returncode == 0, taken.stderr
    refused = harness("handoff", "reply", "Alice here", "-t", "s2", "--agent", "alice", "--data-dir", str(data),
                      cwd=tmp_path)
    assert refused.returncode == 1 and "taken by bob" in refused.stderr
    answered = harness("handoff", "reply", "Bob here [bold]hi[/]", "-t", "s2", "--agent", "bob", "--data-dir",
                       str(data), cwd=tmp_path)
    assert answered.returncode == 0 and "Bob here [bold]hi[/]" in answered.stdout, answered.stderr

    held = json.loads(harness("handoff", "list", "--json", "--data-dir", str(data), cwd=tmp_path).stdout)
    assert held["waiting"] == [] and [(r["thread_id"], r["taken_by"]) for r in held["held"]] == [("s2", "bob")]
    assert "jo@example.com" not in json.dumps(held), "held threads are masked like waiting ones"
    assert harness("handoff", "release", "-t", "s2", "--agent", "bob", "--data-dir", str(data),
                   cwd=tmp_path).returncode == 0
    with AuditLog.in_dir(data) as audit:
        assert [(a["agent"], a["action"]) for a in audit.desk_actions("s2")] == [
            ("bob", "take"), ("bob", "answer"), ("bob", "release")]


def outcome(error_type: str, exception: str) -> ToolOutcome:
    return ToolOutcome(call_id="c", name="cancel_order", args={"order_id": "O1"}, status="error",
                       error_type=error_type, exception=exception, error="x")


def test_the_harness_own_holds_and_blocks_are_not_tool_failures(tmp_path: Path) -> None:
    from lg_harness.obs.audit import call_outcome

    audit = AuditLog(tmp_path / "a.sqlite")
    for _ in range(4):
        audit.record_tool_outcome(outcome("needs_confirmation", "AwaitingConfirmation"), thread_id="t", turn=1)
    for _ in range(5):
        audit.record_tool_outcome(outcome("duplicate_call", "DuplicateCall"), thread_id="t", turn=1)
    audit.record_tool_outcome(outcome("timeout", "ToolTimeout"), thread_id="t", turn=1)
    for _ in range(3):
        audit.record_tool_outcome(ToolOutcome(call_id="c", name="get_order", args={}, status="ok", result={}),
                                  thread_id="t", turn=1)
    rate = {r.metric: r.value for r in audit.stats()}["tool failure rate"]
    assert rate == pytest.approx(1 / 4), "1 timeout among 4 calls that reached a tool (not 10 of 13)"
    assert audit.harness_stops() == {"held": 4, "blocked": 5,
                                     "by_class": {"AwaitingConfirmation": 4, "DuplicateCall": 5}}
    assert [call_outcome("error", e) for e in ("needs_confirmation", "duplicate_call", "timeout")] == [
        "held", "blocked", "error"]
    audit.close()


@pytest.mark.slow
def test_stats_and_the_run_line_show_a_confirmation_as_held(tmp_path: Path) -> None:
    data, design = tmp_path / "data", tmp_path / "patient.json"
    design.write_text(patient_design().model_dump_json(), encoding="utf-8")
    asked = harness("run", "please cancel my order ORD-10185", "-t", "c", "--model", "sim:clean", "--design",
                    str(design), "--data-dir", str(data), cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    assert 'cancel_order({"order_id": "ORD-10185"}) -> held' in asked.stderr
    view = json.loads(harness("stats", "--json", "--data-dir", str(data), cwd=tmp_path).stdout)
    rate = {r["metric"]: r["value"] for r in view["stats"]}["tool failure rate"]
    assert rate in (None, 0), "a change waiting for the customer's yes is not a failed tool call"
    assert view["harness_stops"]["held"] == 1
    table = harness("stats", "--data-dir", str(data), cwd=tmp_path)
    assert "not counted as tool failures" in table.stdout
