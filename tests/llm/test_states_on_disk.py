"""``harness run`` is a process a message: on the local model it keeps the engine's saved states on disk by default,
so the next message reads only what is new instead of the instructions and every tool cold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lg_harness.llm.local import _states_dir, keep_states_on_disk


def test_states_go_under_the_users_cache_unless_the_environment_says_where(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_LOCAL_CACHE_DIR", "recorded")  # so the test's end restores what was there
    monkeypatch.delenv("HARNESS_LOCAL_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    keep_states_on_disk()
    assert os.environ["HARNESS_LOCAL_CACHE_DIR"] == str(tmp_path / ".cache" / "lg-harness" / "states")
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"weights")
    where = _states_dir(str(weights), 4096, 512)
    assert where is not None and where.parent == tmp_path / ".cache" / "lg-harness" / "states"
    assert _states_dir(str(weights), 4096, 512, flash_attn=False) != where, "a state fits one attention setting"


@pytest.mark.parametrize("given", ["", "/somewhere/else"])
def test_a_folder_the_environment_names_or_an_empty_one_wins(monkeypatch: pytest.MonkeyPatch, given: str) -> None:
    monkeypatch.setenv("HARNESS_LOCAL_CACHE_DIR", given)
    keep_states_on_disk()
    assert os.environ["HARNESS_LOCAL_CACHE_DIR"] == given
    if not given:  # empty: in memory only
        assert _states_dir(__file__, 4096, 512) is None
