"""The default chat is calm (issue 43, item 4): a person talking to the harness from a terminal (``harness chat``,
``harness run``) gets the simulated model without faults unless they ask for them; measuring keeps the fitted
faults (``harness compare``); and a fault the sim injects says it is the sim's, not advice to tune the setup.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import typer

from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness.memory.transcript import TranscriptStore
from lg_harness.service.cli import app
from tests.support import HARNESS, harness, patient_design


def recorded_model(data_dir: Path, thread: str) -> str | None:
    store = TranscriptStore(data_dir / "transcripts.sqlite")
    try:
        setup = store.setup(thread)
    finally:
        store.close()
    assert setup is not None, f"thread {thread} was not recorded"
    return setup[1]


@pytest.mark.slow
def test_chat_and_run_talk_to_the_sim_without_faults_unless_asked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    chat = subprocess.run([str(HARNESS), "chat", "-t", "c", "--data-dir", str(tmp_path)], input="hello\n/quit\n",
                          capture_output=True, text=True, timeout=240, cwd=tmp_path, env={**env, "HF_HUB_OFFLINE": "1"})
    assert chat.returncode == 0, chat.stderr
    assert "model sim:clean" in chat.stderr, "chat says which model it talks to"
    assert recorded_model(tmp_path, "c") == "sim:clean"
    ran = harness("run", "hello", "-t", "r", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert recorded_model(tmp_path, "r") == "sim:clean"
    asked = harness("run", "hello", "-t", "f", "--model", "sim", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert asked.returncode == 0 and recorded_model(tmp_path, "f") == "sim", "the faults, when asked for"


def test_measuring_keeps_the_fitted_faults_by_default() -> None:
    group = typer.main.get_command(app)
    commands = {c.name: c for c in getattr(group, "commands", {}).values()}
    defaults = {name: next(p.default for p in commands[name].params if p.name == "model")
                for name in ("run", "chat", "compare")}
    assert defaults == {"run": "sim:clean", "chat": "sim:clean", "compare": "sim"}


def test_a_simulated_fault_says_it_is_simulated(tmp_path: Path) -> None:
    with Harness("sim:fitted+timeout=1.0", design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h, pytest.raises(ModelUnavailable) as caught:
        h.send("t", "Where is my order ORD-10134?", "U001")
    said = str(caught.value)
    assert "simulated" in said and "sim:clean" in said and "\n" not in said
    assert "--model-timeout" not in said and "model_timeout_s" not in said, "no advice that does not apply"
