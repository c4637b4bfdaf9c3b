"""Progress of a long benchmark on stderr, so a run of minutes says where it is (stdout keeps the figures).

Lines are rate-limited (one every ``EVERY_S`` seconds, plus the first and last of a stage) and go to
stderr only, so ``--json`` output and the printed report are unchanged.
"""

from __future__ import annotations

import sys
import time

EVERY_S = 5.0
_state = {"stage": "", "started": 0.0, "last": 0.0}


def stage(name: str) -> None:
    """Start a named part of the benchmark (a strategy, a phase)."""
    _state.update(stage=name, started=time.monotonic(), last=0.0)


def tick(done: int, total: int, what: str = "messages") -> None:
    """``done`` of ``total`` finished in the current stage."""
    now = time.monotonic()
    if done not in (1, total) and now - _state["last"] < EVERY_S:
        return
    _state["last"] = now
    elapsed = now - (_state["started"] or now)
    sys.stderr.write(f"bench {_state['stage']}: {done}/{total} {what} ({elapsed:.0f} s)\n")
    sys.stderr.flush()
