"""Retention with a safety catch: ``harness prune`` keeps a thread a human holds or is waiting to answer unless
told otherwise, says what it will delete, can show it without deleting (``--dry-run``) and asks on a terminal
(``--yes`` answers for you)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lg_harness.graphs.app import Harness, Settings
from lg_harness.service import cli
from lg_harness.service.prune import prune
from tests.support import patient_design

COMPLAINT = "I want to file a complaint: the parcel for ORD-10134 arrived damaged."


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """Three idle threads: one waiting for a human, one a human holds, one finished with the bot."""
    with Harness("sim:clean", design=patient_design("harness-no:confirm_changes"),
                 settings=Settings(data_dir=tmp_path)) as h:
        h.send("waiting", COMPLAINT, "U001")
        assert h.waiting_threads(), "the complaint goes to a human"
        h.send("held", COMPLAINT, "U001")
        h.human_reply("held", "I am looking into it now.")
        h.send("done", "where is my order ORD-10134?", "U001")
    time.sleep(0.05)
    return tmp_path


def threads(path: Path) -> set[str]:
    with Harness("sim:clean", design="harness", settings=Settings(data_dir=path)) as h:
        return {t for t in ("waiting", "held", "done") if h.thread_exists(t)}


def test_prune_keeps_threads_waiting_for_or_held_by_a_human_unless_told(data_dir: Path) -> None:
    with Harness("sim:clean", design="harness", settings=Settings(data_dir=data_dir)) as h:
        report = prune(h, 0)
        assert report["thread_ids"] == ["done"] and sorted(report["kept_for_a_human"]) == ["held", "waiting"]
    assert threads(data_dir) == {"waiting", "held"}
    with Harness("sim:clean", design="harness", settings=Settings(data_dir=data_dir)) as h:
        assert sorted(prune(h, 0, include_human=True)["thread_ids"]) == ["held", "waiting"]
    assert threads(data_dir) == set()


def run_cli(*args: str, answer: str | None = None, terminal: bool = False, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(cli, "on_terminal", lambda: terminal)
    return CliRunner().invoke(cli.app, ["prune", *args], input=answer)


def test_dry_run_lists_what_would_go_and_deletes_nothing(data_dir: Path, monkeypatch) -> None:
    shown = run_cli("--older-than", "0d", "--dry-run", "--data-dir", str(data_dir), monkeypatch=monkeypatch)
    assert shown.exit_code == 0, shown.output
    assert "done" in shown.output and "waiting" in shown.output and "would delete" in shown.output
    assert threads(data_dir) == {"waiting", "held", "done"}


def test_on_a_terminal_prune_asks_and_a_no_deletes_nothing(data_dir: Path, monkeypatch) -> None:
    refused = run_cli("--older-than", "0d", "--data-dir", str(data_dir), answer="n\n", terminal=True,
                      monkeypatch=monkeypatch)
    assert "Delete 1 thread" in refused.output and "done" in refused.output
    assert threads(data_dir) == {"waiting", "held", "done"}
    agreed = run_cli("--older-than", "0d", "--data-dir", str(data_dir), "--yes", terminal=True,
                     monkeypatch=monkeypatch)
    assert agreed.exit_code == 0, agreed.output
    assert threads(data_dir) == {"waiting", "held"}
