"""A model that cannot answer is an error, not a reply (issue 17, item 2)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from lg_harness.graphs.model_health import ModelUnavailable
from lg_harness_lab.evals import cell_health
from lg_harness_lab.evals.compare import CELLS, plan_tasks, read_cells, run_compare
from lg_harness_lab.evals.scenario import load_scenarios
from lg_harness_lab.evals.scenario_sets import scenario_path
from tests.support import HARNESS, patient_design

CLOSED_PORT = "http://127.0.0.1:9"  # discard port: nothing listens, connections are refused at once


class Refusing(GenericFakeChatModel):
    """A chat model whose every call fails the way a provider fails."""

    failure: str = "connection"

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        if self.failure == "slow":
            time.sleep(1.0)
            raise AssertionError("should have timed out")
        if self.failure == "auth":
            raise PermissionError("Error code: 401 - Incorrect API key provided")
        raise ConnectionError("[Errno 111] Connection refused")

    def bind_tools(self, tools: Any, **kwargs: Any) -> Refusing:
        return self


@pytest.mark.parametrize("failure,hint", [("connection", "reachable"), ("auth", "key"), ("slow", "timeout")])
def test_a_message_no_model_call_answered_is_an_error(tmp_path: Path, failure: str, hint: str) -> None:
    design = patient_design()
    design.knobs.model_timeout_s = 0.2
    with Harness(Refusing(messages=iter([]), failure=failure), design=design,
                 settings=Settings(data_dir=tmp_path)) as h:
        with pytest.raises(ModelUnavailable) as caught:
            h.send("t", "Where is my order ORD-10134?", "U001")
        assert hint in str(caught.value) and "\n" not in str(caught.value)
        assert "busy" not in str(caught.value)
        # Nothing is lost: the message is on the thread, and conversational turns still need no model.
        assert h.state("t")["values"]["turn"] == 1
        assert h.send("t", "hello", "U001").reply


@pytest.mark.slow
@pytest.mark.real_model_wire  # a real client, against a port where nothing listens
def test_cli_run_on_an_unreachable_model_exits_non_zero_with_an_error_field(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}, "HF_HUB_OFFLINE": "1",
           "OLLAMA_HOST": CLOSED_PORT}
    proc = subprocess.run([str(HARNESS), "run", "Where is my order ORD-10134?", "--model", "ollama:nope",
                           "--data-dir", str(tmp_path), "--json"], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path, env=env)
    assert proc.returncode != 0
    doc = json.loads(proc.stdout)
    assert set(doc) == {"error"} and "ollama:nope" in doc["error"] and "Connection refused" in doc["error"]
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def _suite(n: int) -> list[Any]:
    from lg_harness.core.domain import load_domain
    from lg_harness_lab.evals.scenario import select_split, spread

    pack = load_domain("shop")
    return spread(select_split(load_scenarios(scenario_path(pack, "builtin")), "test"), n)


@pytest.mark.slow
@pytest.mark.real_model_wire  # a real client, against a port where nothing listens
def test_compare_stops_early_on_a_silent_model_and_never_reuses_its_cells(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", CLOSED_PORT)
    suite = _suite(12)
    with pytest.raises(HarnessError, match="stopped early"):
        run_compare(["harness"], suite, seeds=1, model="ollama:nope", out_dir=tmp_path, workers=1)
    written = read_cells(tmp_path)
    assert len(written) == cell_health.EARLY_CELLS < len(suite)  # it did not run the other cells
    assert all(cell_health.failed(r) for r in written)
    # On a rerun the failed cells are not results: they run again (and stop again while the model is down).
    with pytest.raises(HarnessError, match="stopped early"):
        run_compare(["harness"], suite, seeds=1, model="ollama:nope", out_dir=tmp_path, workers=1)
    assert len(read_cells(tmp_path)) == 2 * cell_health.EARLY_CELLS


def test_a_failed_cell_is_rerun_and_a_good_one_reused(tmp_path: Path) -> None:
    from lg_harness.core.design import load_design

    suite = _suite(2)
    tasks = plan_tasks([load_design("harness")], suite, 1, "sim:clean")
    failed = {"cell": tasks[0].cell, "design": "harness", "scenario": tasks[0].scenario["id"], "seed": 0,
              "turns": [{"index": 0, "error": "model gave no answer", "reply": "", "model_failed": True}],
              "fingerprint": tasks[0].fingerprint}
    (tmp_path / CELLS).write_text(json.dumps(failed) + "\n", encoding="utf-8")
    records = run_compare(["harness"], suite, seeds=1, model="sim:clean", out_dir=tmp_path, workers=1)
    assert len(records) == 2 and not any(cell_health.failed(r) for r in records)
    again = run_compare(["harness"], suite, seeds=1, model="sim:clean", out_dir=tmp_path, workers=1)
    assert len(read_cells(tmp_path)) == 3  # the failed line, then two good cells, reused the second time
    assert sorted(r["cell"] for r in again) == sorted(r["cell"] for r in records)
