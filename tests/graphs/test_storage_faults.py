"""Storage faults say the truth and lose nothing; failures that pass are retried, ones that do not are not.

A full disk, a read-only data dir, an emptied or removed checkpoint file: the error names what is actually
saved and what to do (finish the message, or send it again). Concurrent processes starting on one data dir
never trip over each other's writability probe.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness.graphs.opening import prepare_data_dir
from lg_harness.memory.transcript import TranscriptStore
from lg_harness.tools.context import ToolContext
from lg_harness.tools.errors import RateLimitedError, classify, retry_after_of
from lg_harness.tools.executor import ToolExecutor
from lg_harness.tools.registry import ToolRegistry
from tests.support import ScriptedModel, harness, patient_design, u001_order

MODEL = "sim:clean"


def test_the_writability_check_is_safe_when_many_start_at_once(tmp_path):
    failures: list[BaseException] = []
    start = threading.Barrier(24)

    def probe() -> None:
        start.wait()
        for _ in range(40):
            try:
                prepare_data_dir(tmp_path)
            except BaseException as err:  # noqa: BLE001 - collected for the assertion
                failures.append(err)

    threads = [threading.Thread(target=probe) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert [p.name for p in tmp_path.iterdir()] == [], "no probe file is left behind"


def test_an_emptied_checkpoint_file_is_detected_not_taken_as_new(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "hello", "U001")
    (tmp_path / "checkpoints.sqlite").write_bytes(b"")
    with pytest.raises(HarnessError, match=r"checkpoints.sqlite is empty \(0 bytes\).*1 thread"):
        Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path))
    proc = harness("history", "--thread", "t", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode != 0 and "is empty (0 bytes)" in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "checkpoints.sqlite").stat().st_size == 0, "nothing was written over it"


def test_a_removed_checkpoint_file_is_detected_while_transcripts_remain(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "hello", "U001")
    for name in ("checkpoints.sqlite", "checkpoints.sqlite-wal", "checkpoints.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    with pytest.raises(HarnessError, match="checkpoints.sqlite is missing"):
        Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path))


def failing_put(monkeypatch, message: str, after: int):
    """Make the checkpointer fail with ``message`` from its ``after``-th write on."""
    real = SqliteSaver.put
    count = {"n": 0}

    def put(self, config, checkpoint, metadata, new_versions):
        count["n"] += 1
        if count["n"] > after:
            raise sqlite3.OperationalError(message)
        return real(self, config, checkpoint, metadata, new_versions)

    monkeypatch.setattr(SqliteSaver, "put", put)
    return count


def test_a_full_disk_mid_message_names_what_is_saved_and_the_message_finishes_later(tmp_path, monkeypatch):
    with Harness(MODEL, design=patient_design(),
                 settings=Settings(data_dir=tmp_path, durability="sync")) as h:  # saves inside the message
        order = u001_order("shipped", shop=h.resources["shop"])
        h.send("full", "hello", "U001")
        failing_put(monkeypatch, "database or disk is full", after=3)
        with pytest.raises(HarnessError) as caught:
            h.send("full", f"Where is my order {order}?", "U001")
        text = str(caught.value)
        assert text.startswith("the disk holding the data dir is full")
        assert "in the middle of message 2" in text and "harness resume --thread full --finish" in text
        monkeypatch.undo()  # the disk has room again
        done = h.finish("full")
        assert done.phase == "done" and order in done.reply
        assert [(r["turn"], r["role"]) for r in h.transcripts.read("full")][-2:] == [(2, "user"), (2, "assistant")]


def test_with_exit_durability_a_full_disk_at_the_messages_save_runs_it_again_later(tmp_path, monkeypatch):
    """The default saves a message once, when it ends: a full disk then keeps nothing of it but the user row,
    and finishing runs it again."""
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("shipped", shop=h.resources["shop"])
        h.send("full", "hello", "U001")
        failing_put(monkeypatch, "database or disk is full", after=0)
        with pytest.raises(HarnessError) as caught:
            h.send("full", f"Where is my order {order}?", "U001")
        text = str(caught.value)
        assert text.startswith("the disk holding the data dir is full")
        assert "harness resume --thread full --finish" in text, text
        monkeypatch.undo()  # the disk has room again
        assert h.state("full")["values"]["turn"] == 1, "nothing of message 2 was saved"
        done = h.finish("full")
        assert done.phase == "done" and order in done.reply
        assert [(r["turn"], r["role"]) for r in h.transcripts.read("full")][-2:] == [(2, "user"), (2, "assistant")]


def test_a_full_disk_before_anything_is_saved_says_send_it_again(tmp_path, monkeypatch):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("full", "hello", "U001")

        def append(self, *args):
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(TranscriptStore, "append", append)
        with pytest.raises(HarnessError) as caught:
            h.send("full", "Where is my order?", "U001")
        text = str(caught.value)
        assert "disk holding the data dir is full" in text
        assert "after message 1" in text and "this message was not saved: send it again" in text


def test_a_read_only_data_dir_is_named(tmp_path, monkeypatch):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("ro", "hello", "U001")
        failing_put(monkeypatch, "attempt to write a readonly database", after=0)
        with pytest.raises(HarnessError, match="the data dir is read-only"):
            h.send("ro", "hello again", "U001")


# ------------------------------------------------------------------------------------ retry classes


def test_a_locked_database_is_retryable_and_other_operational_errors_are_not():
    assert classify(sqlite3.OperationalError("database is locked")) == "transient"
    assert classify(sqlite3.OperationalError("database table is locked")) == "transient"
    assert classify(sqlite3.OperationalError("no such table: orders")) == "internal"


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", float("nan"), float("inf")])
def test_a_retry_after_that_names_no_wait_is_treated_as_unsaid(value):
    class Throttled(Exception):
        status_code = 429
        headers = {"Retry-After": value}

    assert retry_after_of(Throttled()) is None
    assert retry_after_of(RateLimitedError("slow down", retry_after=value)) is None


def test_retry_after_nan_does_not_raise_out_of_the_executor():
    class Throttled(Exception):
        status_code = 429
        headers = {"Retry-After": "nan"}

    calls = []

    def lookup(x: int = 0) -> dict:
        """Look something up."""
        calls.append(x)
        if len(calls) == 1:
            raise Throttled("429 Too Many Requests")
        return {"ok": True}

    registry = ToolRegistry()
    registry.register(lookup)
    slept: list[float] = []
    outcome = ToolExecutor(registry, sleep=slept.append).run({"id": "c", "name": "lookup", "args": {}},
                                                            ToolContext(user_id="u", thread_id="t"))
    assert outcome.status == "ok" and slept == [1.0], "waited the default, then retried"


def test_a_changing_tool_is_not_idempotent_unless_it_says_so():
    def send_sms(text: str) -> dict:
        """Send a text message."""
        return {"sent": text}

    send_sms.changes_state = True
    registry = ToolRegistry()
    spec = registry.register(send_sms)
    assert spec.changes_state and not spec.idempotent
    assert registry.register(send_sms, name="sms2", idempotent=True).idempotent
    from lg_harness.domains.shop.tools import cancel_order

    assert registry.register(cancel_order).idempotent, "changes_once honours the key and says so"


class Throttled(Exception):
    """What an OpenAI-compatible client raises on a 429."""

    status_code = 429

    def __init__(self, retry_after: str) -> None:
        super().__init__("429 Too Many Requests")
        self.headers = {"Retry-After": retry_after}


def test_a_models_429_is_waited_for_and_retried(tmp_path):
    class ThrottledOnce(ScriptedModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if not self.seen:
                self.seen.append([])
                raise Throttled("0")
            return super()._generate(messages, stop, run_manager, **kwargs)

    model = ThrottledOnce()
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("shipped", shop=h.resources["shop"])
        model.calls = [{"name": "get_order_status", "args": {"order_id": order}, "id": "a", "type": "tool_call"}]
        result = h.send("429", f"Where is my order {order}?", "U001")
        assert [c["status"] for c in result.tool_calls] == ["ok"] and order in result.reply
        assert len(model.seen) >= 3, "the throttled call was made again"


def test_a_429_asking_too_long_a_wait_gives_up_at_once(tmp_path):
    class AlwaysThrottled(ScriptedModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.seen.append(list(messages))
            raise Throttled("3600")

    model = AlwaysThrottled()
    with Harness(model, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        # A model that answers no call of the message is an error, not a reply (issue 17), and it comes at once.
        with pytest.raises(ModelUnavailable, match="429"):
            h.send("429", "Where is my order ORD-10134?", "U001")
        assert len(model.seen) == 1, "no hour-long wait and no retry of a 429 that asks for one"


# ------------------------------------------------------------------------------------------ many writers


def connections_of(h: Harness) -> dict[str, sqlite3.Connection]:
    """Every SQLite connection a harness on a data dir opened, by store."""
    memory = h.memory.facts._db if h.memory is not None and hasattr(h.memory.facts, "_db") else None
    assert isinstance(h.checkpointer, SqliteSaver)
    found = {"checkpoints": h.checkpointer.conn, "transcripts": h.transcripts.conn, "audit": h.audit._conn,
             "ledger": h.stores.ledger.conn, "facts": memory,
             **{f"domain {name}": getattr(b, "conn", None) for name, b in h.resources.items()}}
    return {k: v for k, v in found.items() if v is not None}


def test_every_store_of_a_data_dir_waits_for_other_writers_instead_of_failing(tmp_path):
    # Workers on one data dir take turns writing: a store that gives up after sqlite3's default 5 s fails a
    # message with "database is locked" under load (the soak saw it), and one outside WAL blocks its readers.
    with Harness("sim:clean", design="harness", settings=Settings(data_dir=tmp_path)) as h:
        h.send("t", "hello", "U001")
        conns = connections_of(h)
        assert {"checkpoints", "transcripts", "audit", "ledger", "facts", "domain shop"} <= set(conns)
        for name, conn in conns.items():
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 30_000, name
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal", name


def test_stores_opened_together_by_many_processes_agree_on_the_schema(tmp_path):
    # Several workers opening a data dir at once raced between reading the columns and adding one
    # ("duplicate column name: domain"); here the store was made before threads had a domain column.
    import multiprocessing

    path = tmp_path / "transcripts.sqlite"
    with sqlite3.connect(path) as old:
        old.execute("PRAGMA journal_mode = WAL")
        old.execute("CREATE TABLE threads (thread_id TEXT PRIMARY KEY, design TEXT NOT NULL, model TEXT, "
                    "updated_at REAL NOT NULL)")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(6) as pool:
        outcomes = pool.map(_open_transcripts, [str(path)] * 12)
    assert outcomes == ["ok"] * 12, outcomes
    assert "domain" in {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(threads)")}


def _open_transcripts(path: str) -> str:
    try:
        TranscriptStore(path).close()
        return "ok"
    except sqlite3.Error as err:
        return f"{type(err).__name__}: {err}"
