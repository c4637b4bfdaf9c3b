"""Helpers several test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lg_harness.core.design import Design, load_design
from lg_harness.domains.shop.backend import ShopDB

HARNESS = Path(sys.executable).with_name("harness")


def harness(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run the ``harness`` console script offline, without the caller's HARNESS_* settings."""
    assert HARNESS.exists(), f"console script not installed next to {sys.executable}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([str(HARNESS), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def patient_design(name: str = "harness") -> Design:
    """A preset with a long wall-clock model deadline: sim latency is virtual, and a loaded CI machine must
    not turn a sim call into a 'busy' reply. Everything else is the preset as shipped."""
    design = load_design(name)
    design.knobs.model_timeout_s = 120.0
    return design


def u001_order(status: str, shop: ShopDB | None = None) -> str:
    """U001's first order with ``status``, from ``shop`` or a fresh copy of the seeded shop (same ids)."""
    db = shop or ShopDB.fresh_copy()
    try:
        row = db.query_one("SELECT id FROM orders WHERE user_id = 'U001' AND status = ? ORDER BY id", (status,))
        assert row is not None, f"the seed no longer gives U001 a {status} order"
        return row["id"]
    finally:
        if shop is None:
            db.close()
