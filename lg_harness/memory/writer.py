"""Long-term memory written after the reply, in batches, with nothing lost to a crash.

Embedding a message's outcome sentences, Chroma's neighbour query and insert, fact upserts and hit counts
took about half of a message's time, and none of it changes the reply. So the graph's last step only records
what to keep (``FactStore.enqueue``: one small SQL row, saved before the reply goes out) and this writer's
thread writes every pending row at once: one embedding call, one neighbour query and one insert per user
(``ExperienceStore.add_many``), then the facts and hit counts.

Nothing remembered is lost: a row stays until it is written (``settle``). A process that dies after the reply
leaves its rows behind; the next ``LongTermMemory`` opened on the same stores writes them (``recover``), and a
claim older than ``facts.CLAIM_EXPIRES_S`` is taken over from a writer that died mid-write.

The writer keeps out of the way of replies: while a message runs in this process (``during_message``) it
waits, up to ``MAX_DELAY_S``, so the end of the message that asked for the write is not slowed by it.
Reads that must see what the last message wrote (recall at the start of the next message) wait for this
process's writer to be idle first (``wait_idle``), so answers are the same as with writes inline.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lg_harness.memory.experiences import ExperienceStore, MemoryAccessError
from lg_harness.memory.facts import PendingWrite

log = logging.getLogger(__name__)
MAX_DELAY_S = 2.0  # under constant load the writer still writes, at least this often


def write_batch(facts: Any, experiences: ExperienceStore, batch: Sequence[PendingWrite]) -> None:
    """Apply pending writes, in order, one batch per user: outcomes, then facts, then hit counts."""
    users = dict.fromkeys(w.user_id for w in batch)
    for user in users:
        mine = [w.payload for w in batch if w.user_id == user]
        experiences.add_many(user, [o for p in mine for o in p.get("outcomes", ())], kind="outcome", confidence=0.9)
        for p in mine:
            for key, value, source in p.get("facts", ()):
                facts.put(user, key, value, confirmed=True, source=source)
        credit_hits(experiences, user, [p.get("hits", ()) for p in mine])


def credit_hits(experiences: ExperienceStore, user: str, per_message: Sequence[Sequence[str]]) -> None:
    """One hit per message that recalled a record; ids that no longer resolve are skipped, not fatal."""
    counts = Counter(rid for ids in per_message for rid in dict.fromkeys(ids))
    for times in sorted(set(counts.values())):
        ids = [rid for rid, n in counts.items() if n == times]
        try:
            experiences.record_hits(user, ids, count=times)
        except MemoryAccessError as err:  # a record another process retired meanwhile: drop the credit
            log.warning("memory hits not counted: %s", err)


class MemoryWriter:
    """A background thread that drains a fact store's pending writes into long-term memory."""

    def __init__(self, facts: Any, experiences: ExperienceStore) -> None:
        self._facts = facts
        self._experiences = experiences
        self._cond = threading.Condition()
        self._queued = 0  # kicks since the last drain began
        self._busy = False
        self._in_flight = 0  # messages running in this process
        self._waiters = 0  # readers waiting for the writes (they may be inside a message)
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def kick(self) -> None:
        """Pending writes were enqueued: write them soon, on the writer's thread."""
        with self._cond:
            if self._closed:
                return
            self._queued += 1
            self._ensure_thread()
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until this process's writer has nothing queued or in hand; False on timeout."""
        with self._cond:
            self._waiters += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(lambda: not self._queued and not self._busy, timeout)
            finally:
                self._waiters -= 1

    @contextmanager
    def during_message(self) -> Iterator[None]:
        """A message runs: the writer waits for it (or for ``MAX_DELAY_S``) before writing."""
        with self._cond:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def drain(self) -> int:
        """Write every pending row no other writer holds, now, on this thread; returns how many."""
        batch = self._facts.claim()
        if batch:
            write_batch(self._facts, self._experiences, batch)
            self._facts.settle([w.key for w in batch])
        return len(batch)

    def recover(self) -> int:
        """Write what a process that stopped after its replies left pending (called when memory opens)."""
        return self.drain()

    def close(self) -> None:
        """Write what is queued, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread.is_alive() and self._pid == os.getpid():
            thread.join()

    def _ensure_thread(self) -> None:
        # A forked child inherits the object but not the thread: start its own.
        if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
            self._pid = os.getpid()
            self._busy = False
            self._thread = threading.Thread(target=self._run, name="memory-writer", daemon=True)
            self._thread.start()

    def _may_write(self, since: float) -> bool:
        quiet = not self._in_flight or self._waiters or time.monotonic() - since >= MAX_DELAY_S
        return bool(self._closed or (self._queued and quiet))

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queued or self._closed)
                since = time.monotonic()
                while not self._may_write(since):
                    self._cond.wait(MAX_DELAY_S)
                if not self._queued:
                    return
                self._queued, self._busy = 0, True
            try:
                self.drain()
            except Exception:  # noqa: BLE001 - the rows stay pending; the next drain or open retries them
                log.exception("long-term memory write failed; kept for the next attempt")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
