"""The data dir's files: proving it is writable, refusing a checkpoint store that lost its contents, and
saying in plain words what a storage failure was (disk full, read-only, locked, corrupt).

Every message first goes to the transcript, then through the graph's checkpoints; a failure in either must
say what was actually saved, so the user knows whether to finish the message or send it again.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from lg_harness.errors import HarnessError

CHECKPOINTS_FILE = "checkpoints.sqlite"
TRANSCRIPTS_FILE = "transcripts.sqlite"


def prove_writable(data_dir: Path) -> None:
    """Create and remove a uniquely named file: processes starting together never share a probe."""
    fd, name = tempfile.mkstemp(prefix=".write-test-", dir=data_dir)
    try:
        os.write(fd, b"ok")
    finally:
        os.close(fd)
        os.unlink(name)


def threads_in_transcripts(data_dir: Path) -> int:
    """How many threads the transcript store knows (0 when it does not exist or cannot be read)."""
    path = data_dir / TRANSCRIPTS_FILE
    if not path.exists() or path.stat().st_size == 0:
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT COUNT(DISTINCT thread_id) FROM transcript").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def check_checkpoint_store(data_dir: Path) -> None:
    """Refuse a checkpoint file that was emptied or removed while the data dir still holds conversations.

    SQLite takes a 0-byte file for a new database, and a missing one is simply created: either would start
    every thread from scratch and silently erase its history.
    """
    path = data_dir / CHECKPOINTS_FILE
    if path.exists() and path.stat().st_size > 0:
        return
    threads = threads_in_transcripts(data_dir)
    wal = path.with_name(path.name + "-wal")
    # A 0-byte file is also what another process sees while one is creating the store, and in WAL mode the
    # main file may stay empty while the -wal file holds everything: only an empty file with no log beside
    # it, in a data dir whose transcripts hold conversations, has lost them.
    if path.exists() and threads and not (wal.exists() and wal.stat().st_size > 0):
        raise HarnessError(f"{path} is empty (0 bytes): the checkpoint store was truncated, and the transcripts "
                           f"hold {threads} thread(s) whose state it kept; restore it from a backup, or move it "
                           "away to start every thread afresh")
    if not path.exists() and threads:
        raise HarnessError(f"{path} is missing but {data_dir / TRANSCRIPTS_FILE} holds {threads} thread(s): "
                           "the checkpoint store was removed; restore it from a backup, or move the data dir "
                           "away to start afresh")


def storage_problem(err: BaseException) -> str | None:
    """What a storage failure means for the user, or None when ``err`` is not one."""
    text = str(err).lower()
    if isinstance(err, OSError) and err.errno is not None:
        import errno

        if err.errno == errno.ENOSPC:
            return "the disk holding the data dir is full"
        if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return "the data dir is read-only"
    if not isinstance(err, sqlite3.Error):
        return None
    if "disk is full" in text or "disk full" in text:
        return "the disk holding the data dir is full"
    if "readonly" in text or "read-only" in text:
        return "the data dir is read-only"
    if "locked" in text or "busy" in text:
        return "another process holds the data dir's database locked"
    if "malformed" in text or "not a database" in text or "disk i/o error" in text:
        return "a database file in the data dir is damaged"
    return None
