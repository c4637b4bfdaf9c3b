"""Per-thread message order: two messages on one thread never run at once, and run in submission order.

In one process a ticket lock (FIFO, unlike ``threading.Lock``) per thread id is enough. Across processes
sharing one data dir (several CLI calls), an ``fcntl`` lock file per thread serialises them too.
With many workers on Postgres, ``service.leases.LeaseOrder`` keeps the same contract with a queue row per
message and a lease row per thread (``graphs.storage`` picks which one a harness uses).
"""

from __future__ import annotations

import fcntl
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class _Ticket:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.next_ticket = 0
        self.serving = 0


class ThreadOrder:
    """FIFO turn-taking per conversation thread."""

    def __init__(self, lock_dir: Path | None = None) -> None:
        self._tickets: dict[str, _Ticket] = {}
        self._guard = threading.Lock()
        self.lock_dir = lock_dir

    def _ticket(self, thread_id: str) -> _Ticket:
        with self._guard:
            return self._tickets.setdefault(thread_id, _Ticket())

    @contextmanager
    def turn(self, thread_id: str) -> Iterator[None]:
        """Wait for this caller's turn on ``thread_id`` (in the order callers arrived), then hold it."""
        t = self._ticket(thread_id)
        with t.cond:
            mine = t.next_ticket
            t.next_ticket += 1
            t.cond.wait_for(lambda: t.serving == mine)
        try:
            with self._file_lock(thread_id):
                yield
        finally:
            with t.cond:
                t.serving += 1
                t.cond.notify_all()

    @contextmanager
    def _file_lock(self, thread_id: str) -> Iterator[None]:
        if self.lock_dir is None:
            yield
            return
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha1(thread_id.encode()).hexdigest()[:16] + ".lock"
        with open(self.lock_dir / name, "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
