"""When a message's steps are saved (``Settings(durability=...)``, ``harness --durability``).

``exit`` (the default) saves a message once, when it ends or pauses: what it keeps is every message's end, and
what a crash mid-message costs is the message run again from its start, with each change still applied once
(``docs/reliability.md``). ``sync`` saves every step (the tests that fork into a message's steps use it).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lg_harness.errors import UsageError
from lg_harness.graphs.app import Harness, Settings
from tests.support import harness, patient_design, u001_order

HARNESS = Path(sys.executable).with_name("harness")
MODEL = "sim:clean"
DESIGN = "harness-no:confirm_changes"  # the change runs in the message that asks for it


def test_an_unknown_durability_is_refused_with_the_modes_there_are(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown durability 'always'.*sync, async, exit"):
        Harness(MODEL, design="harness",
                settings=Settings(data_dir=tmp_path, durability="always"))  # type: ignore[arg-type]


def test_the_cli_and_the_service_refuse_an_unknown_durability(tmp_path: Path, monkeypatch) -> None:
    from lg_harness.service.http import ServiceSettings

    proc = harness("--durability", "always", "run", "hi", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert proc.returncode != 0 and "always" in proc.stderr and "exit" in proc.stderr, proc.stderr[-600:]
    monkeypatch.setenv("HARNESS_API_KEYS", "k=U001")
    monkeypatch.setenv("HARNESS_DURABILITY", "always")
    with pytest.raises(Exception, match="HARNESS_DURABILITY must be one of sync, async, exit"):
        ServiceSettings.from_env()


def test_exit_keeps_one_checkpoint_per_message_and_a_fork_from_a_message_end_goes_on(tmp_path: Path) -> None:
    with Harness(MODEL, design=patient_design(),
                 settings=Settings(data_dir=tmp_path, durability="exit")) as h:
        texts = ["hi", "Where is my order ORD-10134?", "thanks"]
        replies = [h.send("t", text, "U001").reply for text in texts]
        history = h.history("t")
        assert [c.turn for c in history] == [3, 2, 1], "one checkpoint per message, its end"
        assert all(c.phase == "done" and c.next == [] for c in history)
        assert "ORD-10134" in replies[1]

        h.fork("t", history[1].checkpoint_id)  # back to the end of message 2
        assert h.state("t")["values"]["turn"] == 2
        again = h.send("t", "Where is my order ORD-10134?", "U001")
        assert "ORD-10134" in again.reply and h.state("t")["values"]["turn"] == 3
        assert [c.turn for c in h.history("t")][:2] == [3, 2]


def test_sync_saves_the_steps_of_a_message(tmp_path: Path) -> None:
    """The contrast that makes the test above mean something: sync keeps a message's steps."""
    with Harness(MODEL, design=patient_design(),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:
        h.send("t", "Where is my order ORD-10134?", "U001")
        assert len(h.history("t")) > 3


def shop_row(data_dir: Path, sql: str, *args: str) -> tuple | None:
    path = data_dir / "shop.sqlite"
    if not path.exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(sql, args).fetchone()
    except sqlite3.OperationalError:  # the process has not created its tables yet
        return None
    finally:
        conn.close()


def stock(data_dir: Path, order: str) -> list[tuple]:
    path = data_dir / "shop.sqlite"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT i.sku, v.stock FROM order_items i JOIN variants v ON v.sku = i.sku "
                            "WHERE i.order_id = ? ORDER BY i.sku", (order,)).fetchall()
    finally:
        conn.close()


@pytest.mark.slow
def test_exit_a_run_killed_after_its_change_runs_again_from_the_start_and_changes_once(tmp_path: Path) -> None:
    """A ``harness --durability exit run`` killed after the cancel committed (the answer's model call takes
    1.5 s) leaves no checkpoint of the message; ``resume --finish`` runs it again from the transcript, the
    change ledger hands back the decided cancel and its stored result, and the stock goes back once."""
    data = tmp_path / "data"
    order = u001_order("pending")
    args = ["--durability", "exit"]
    seeded = harness(*args, "run", "hi", "--thread", "seed", "--data-dir", str(data), cwd=tmp_path)
    assert seeded.returncode == 0, seeded.stderr[-2000:]
    before = stock(data, order)

    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.Popen([str(HARNESS), *args, "run", f"please cancel {order}", "--thread", "x", "--design",
                             DESIGN, "--model", "paced:1.5:clean", "--data-dir", str(data)], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while (shop_row(data, "SELECT status FROM orders WHERE id = ?", order) or ("",))[0] != "cancelled":
        assert proc.poll() is None, "the run ended before it could be killed: the model must be slower"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    cancelled = stock(data, order)
    assert cancelled != before, "the cancel put the stock back before the kill"

    stopped = harness(*args, "history", "--thread", "x", "--data-dir", str(data), "--user", "U001", "--json",
                      cwd=tmp_path)
    assert stopped.returncode != 0 or '"checkpoint_id"' not in stopped.stdout, \
        f"exit saves nothing of a message that never ended: {stopped.stdout[-500:]}"

    done = harness(*args, "resume", "--thread", "x", "--finish", "--data-dir", str(data), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert order in done.stdout
    assert stock(data, order) == cancelled, "the stock went back once"
    assert shop_row(data, "SELECT COUNT(*) FROM idempotency WHERE tool = 'cancel_order'") == (1,)
    finished = harness(*args, "history", "--thread", "x", "--data-dir", str(data), "--user", "U001", "--json",
                       cwd=tmp_path)
    assert finished.returncode == 0 and finished.stdout.count('"checkpoint_id"') == 1, finished.stdout[-800:]
