"""``harness demo`` never touches data it did not create (issue 17, item 1)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from lg_harness.graphs.app import Harness, Settings
from tests.support import HARNESS, patient_design


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the sha256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def users_data_dir(path: Path) -> None:
    """A data dir as a user leaves it: checkpoints, transcripts, memory and a thread waiting for a human."""
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=path)) as h:
        h.send("t1", "Where is my order ORD-10134?", "U001")
        r = h.send("t2", "I want to talk to a human agent", "U001")
        assert r.waiting_for_human, "the fixture needs a waiting handoff"
        assert h.waiting_threads()


def demo(*args: str, cwd: Path, data_dir_env: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HARNESS_DATA_DIR": str(data_dir_env)}
    return subprocess.run([str(HARNESS), "demo", "--json", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)


@pytest.mark.slow
def test_demo_leaves_an_existing_data_dir_byte_for_byte_untouched(tmp_path: Path) -> None:
    data = tmp_path / "mydata"
    users_data_dir(data)
    before = snapshot(data)
    assert {"checkpoints.sqlite", "transcripts.sqlite"} <= set(before)

    # HARNESS_DATA_DIR points at the user's data: the demo runs in a scratch folder of its own instead.
    proc = demo(cwd=tmp_path, data_dir_env=data)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    scratch = Path(report["data_dir"])
    assert scratch.resolve() != data.resolve() and not scratch.is_relative_to(data)
    assert (scratch / "checkpoints.sqlite").exists()

    # Pointed at the user's data explicitly, it refuses with one line and changes nothing.
    refused = demo("--data-dir", str(data), cwd=tmp_path, data_dir_env=data)
    assert refused.returncode != 0
    assert "did not create" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1

    assert snapshot(data) == before
    with Harness("sim:clean", design=patient_design(),
                 settings=Settings(data_dir=data)) as h:  # the waiting thread is still there
        assert [w["thread_id"] for w in h.waiting_threads()] == ["t2"]


def test_demo_reruns_in_its_own_folder(tmp_path: Path) -> None:
    """A folder the demo made may be given again: the demo clears only what it made there."""
    from lg_harness.service.demo import demo_dir

    folder = demo_dir(tmp_path / "tour")
    (folder / "checkpoints.sqlite").write_bytes(b"old demo state")
    again = demo_dir(folder)
    assert again == folder and not (folder / "checkpoints.sqlite").exists()
    fresh = demo_dir(None)
    assert fresh.is_dir() and fresh != folder
