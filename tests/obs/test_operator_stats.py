"""``harness stats`` is the operator's view: health, the human queue and uncertain changes, with no personal
data in it (``lg_harness/obs/operator_view.py``)."""

from __future__ import annotations

import json

import pytest

from lg_harness.graphs.app import Harness, Settings
from tests.support import harness, patient_design

EMAIL, PHONE = "jane.doe@example.com", "415-555-0199"


@pytest.mark.slow
def test_stats_shows_an_operator_health_queue_and_uncertain_changes_without_personal_data(tmp_path):
    data = tmp_path / "data"
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=data)) as h:
        h.send("a", f"where is my order ORD-10134? mail me at {EMAIL} or call {PHONE}", "U001")
        h.send("b", f"I want to talk to a human, my number is {PHONE}", "U001")
        # a change a crash left unsettled, whose arguments hold contact details
        h.stores.ledger.begin("a:1:update_contact", "a", "update_contact", {"email": EMAIL, "phone": PHONE})

    proc = harness("stats", "--data-dir", str(data), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert {r["metric"] for r in view["stats"]} >= {"tool failure rate", "task completion", "latency p99 / message"}
    assert view["queue"]["waiting_for_human"] == 1 and view["queue"]["waiting_threads"] == ["b"]
    assert view["queue"]["uncertain_changes"] == 1
    [change] = view["uncertain_changes"]
    assert (change["thread_id"], change["tool"], change["attempts"]) == ("a", "update_contact", 1)
    assert set(change["args"]) == {"email", "phone"}
    assert EMAIL not in proc.stdout and PHONE not in proc.stdout and "555" not in proc.stdout
    assert "where is my order" not in proc.stdout, "no transcript text in the operator view"

    table = harness("stats", "--data-dir", str(data), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "waiting for a human" in table.stdout and "update_contact" in table.stdout
    assert EMAIL not in table.stdout and PHONE not in table.stdout

    one = json.loads(harness("stats", "--data-dir", str(data), "--thread", "b", "--json", cwd=tmp_path).stdout)
    assert one["queue"]["waiting_threads"] == ["b"] and one["uncertain_changes"] == []


def test_stats_on_an_empty_data_dir_says_what_to_do(tmp_path):
    proc = harness("stats", "--data-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert proc.returncode != 0 and "run some messages first" in (proc.stdout + proc.stderr)
