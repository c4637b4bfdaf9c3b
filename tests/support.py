"""Helpers several test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

from graphs.design import Design, load_design
from tools.shop import ShopDB


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
