"""What a new user meets first (issue 43, item 5): each small item the issue found, as the user meets it.

A call held for the customer's yes is logged and shown as held, not as an error; a "yes" with nothing to
confirm gets a true answer; a thread run on another domain says whose it is; a scenario file that cannot be
used is one line naming the file, the line and the field.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from rich.console import Console

from lg_harness import Domain, EntityType, Harness, Intent, Route, Settings, ToolContext
from lg_harness.errors import HarnessError
from lg_harness.obs.tracing import log_tool_call_full
from lg_harness.service.demo import _show_turn
from lg_harness.tools.executor import ToolOutcome
from lg_harness_lab.evals.scenario import load_scenarios
from tests.support import harness


def renew_loan(ctx: ToolContext, book_id: str) -> dict:
    """Renew (extend) the loan of a borrowed library book by two weeks."""
    return {"book_id": book_id, "status": "renewed"}


renew_loan.changes_state = True  # type: ignore[attr-defined]
LIBRARY = Domain(name="library", tools=(renew_loan,),
                 intents=(Intent("renew", rules={"en": ("renew",)}, route=Route(tools=("renew_loan",))),),
                 entity_types=(EntityType("book", r"(?i:book)-(\d{4})", canonical="BOOK-{0}", slot="book_id"),))


# ----------------------------------------------------------------------------------------- held calls


def test_the_readme_example_logs_no_error_for_a_change_waiting_for_its_yes(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="harness.tools")
    with Harness("sim:clean", domain=LIBRARY, settings=Settings(data_dir=None)) as h:
        asked = h.send("t1", "Please renew BOOK-0042", user_id="reader1")
        assert [c["error_type"] for c in asked.tool_calls] == ["needs_confirmation"]
        h.send("t1", "yes", user_id="reader1")
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "harness.tools"]
    held = [(level, text) for level, text in lines if "renew_loan" in text and "needs_confirmation" in text]
    assert held and all(level == logging.INFO and " held " in text and " error " not in text for level, text in held)
    assert not [text for level, text in lines if level >= logging.WARNING], "nothing failed"


def test_the_log_names_held_blocked_and_failed_calls_apart(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="t")
    for error_type, exception in (("needs_confirmation", "AwaitingConfirmation"), ("duplicate_call", "DuplicateCall"),
                                  ("timeout", "ToolTimeoutError")):
        log_tool_call_full(logging.getLogger("t"), ToolOutcome(call_id="c", name="cancel_order", args={},
                                                               status="error", error_type=error_type,
                                                               exception=exception, error="..."))
    assert [(r.levelno, r.getMessage().split()[3], getattr(r, "outcome", None)) for r in caplog.records] == [
        (logging.INFO, "held", "held"), (logging.WARNING, "blocked", "blocked"), (logging.WARNING, "error", "error")]


def test_a_held_calls_span_says_held_and_is_no_error() -> None:
    from opentelemetry.trace import StatusCode

    from lg_harness.obs.tracing import capture_spans, record_tool_outcome, tool_span

    with capture_spans() as exporter:
        for call_id, error_type in (("h", "needs_confirmation"), ("f", "timeout")):
            with tool_span("cancel_order", call_id) as span:
                record_tool_outcome(span, ToolOutcome(call_id=call_id, name="cancel_order", args={}, status="error",
                                                      error_type=error_type, exception="X", error="..."))
    held, failed = exporter.get_finished_spans()
    assert held.attributes["harness.tool.status"] == "held" and held.status.status_code is not StatusCode.ERROR
    assert failed.attributes["harness.tool.status"] == "error" and failed.status.status_code is StatusCode.ERROR


def test_the_demo_shows_a_held_call_as_held() -> None:
    console = Console(record=True, width=200)
    call = {"name": "request_return", "args": {"order_id": "ORD-1"}, "status": "error",
            "error_type": "needs_confirmation"}
    _show_turn(console, 1, "return it", {"tool_calls": [call], "path": [], "intent": "return", "slots": {},
                                         "missing_slots": [], "reply": "To confirm...", "checkpoint_id": "c",
                                         "usage": {"model_calls": 1, "input_tokens": 1}})
    shown = console.export_text()
    assert "-> held [needs_confirmation]" in shown and "-> error" not in shown


# ------------------------------------------------------------------------------------- a yes for nothing


@pytest.mark.parametrize(("domain", "text", "words"), [
    ("shop", "yes", ("No change is waiting", "orders")), ("shop", "是的", ("没有需要您确认的更改", "订单")),
    ("shop", "no", ("No change is waiting",)), ("helpdesk", "yes", ("No change is waiting", "tickets"))])
def test_a_yes_with_nothing_to_confirm_says_so_and_what_the_bot_does(tmp_path: Path, domain: str, text: str,
                                                                      words: tuple[str, ...]) -> None:
    with Harness("sim:clean", domain=domain, settings=Settings(data_dir=tmp_path)) as h:
        reply = h.send("t", text, h.domain.default_user).reply
    assert all(w in reply for w in words) and "welcome" not in reply.lower() and "不客气" not in reply, reply


# -------------------------------------------------------------------------------- another domain's thread


@pytest.mark.slow
def test_a_thread_run_on_another_domain_says_whose_it_is(tmp_path: Path) -> None:
    first = harness("run", "Where is my order ORD-10134?", "-t", "t1", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    other = harness("run", "hi", "-t", "t1", "--domain", "helpdesk", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert other.returncode == 1 and other.stderr.count("\n") == 1, other.stderr
    assert "belongs to domain 'shop'" in other.stderr and "--domain shop" in other.stderr
    assert "unknown thread" not in other.stderr
    stranger = harness("run", "hi", "-t", "t1", "--user", "U002", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert "unknown thread 't1'" in stranger.stderr, "another user of the same domain still learns nothing"


# ------------------------------------------------------------------------------------ scenario files


@pytest.mark.parametrize(("name", "text", "said"), [
    ("field.yaml", "- id: s1\n  user_id: U001\n  turns:\n    - user: hi\n      expect:\n        tools: 3\n",
     "field.yaml:6: scenario s1: turns.0.expect.tools: Input should be a valid list"),
    ("extra.yaml", "- id: s2\n  user_id: U001\n  colour: red\n  turns:\n    - user: hi\n",
     "extra.yaml:3: scenario s2: colour: Extra inputs are not permitted"),
    ("broken.yaml", "- id: s3\n  user_id: U001\n  turns: [\n", "broken.yaml:4: expected the node content"),
    ("rows.jsonl", '{"id": "a", "user_id": "U001", "turns": [{"user": "hi"}]}\n{"id": "b", "user_id": \n',
     "rows.jsonl:2: not valid JSON: Expecting value"),
    ("missing.yaml", "- id: s4\n  turns:\n    - expect: {tools: []}\n",
     "missing.yaml:3: scenario s4: turns.0.user: Field required"),
])
def test_a_scenario_file_that_cannot_be_used_is_one_line_naming_file_line_and_field(
        tmp_path: Path, name: str, text: str, said: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HarnessError) as caught:
        load_scenarios(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path.parent}/") and said in message, message
    assert "https://" not in message and "For further information" not in message


# ----------------------------------------------------------------------------------------- set-up, docs

ROOT = Path(__file__).resolve().parents[2]
# A python that answers scripts/setup.sh as a fresh venv does: pip installs are noted, and importing torch
# before numpy is installed warns as torch does.
FAKE_PYTHON = """#!/usr/bin/env bash
log="$(dirname "$0")/installed"
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> "$log"; exit 0; fi
if [ "$1" = "-c" ]; then
  case "$2" in *"import torch"*) grep -q numpy "$log" 2>/dev/null || echo "UserWarning: Failed to initialize NumPy: No module named 'numpy'" >&2;; esac
  case "$2" in *"torch.__version__"*) echo "torch 2.13.0";; esac
fi
exit 0
"""


def test_setup_installs_numpy_before_it_first_imports_torch(tmp_path: Path) -> None:
    import shutil
    import subprocess

    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Failed to initialize NumPy" not in done.stderr and "setup: ok" in done.stderr, done.stderr


def test_the_docs_run_a_notebook_with_a_command_that_is_installed() -> None:
    import sys

    pages = {p: p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
    assert not [p.name for p, text in pages.items() if "nbconvert" in text], "not installed: jupyter execute is"
    assert "jupyter execute notebooks/" in pages[ROOT / "README.md"]
    assert "jupyter execute notebooks/" in pages[ROOT / "docs" / "python.md"]
    assert (Path(sys.executable).parent / "jupyter-execute").exists(), "jupyter execute comes with the dev extra"
