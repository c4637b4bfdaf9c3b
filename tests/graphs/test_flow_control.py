"""Flow control: a model stuck on one call is stopped, a thread waits for a human across processes,
concurrent messages on one thread keep their order, and transition rules written in the DSL route (or
fail to compile with one clear line).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from lg_harness.core.design import load_design
from lg_harness.domains.shop import DOMAIN as SHOP
from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Parts, Settings
from lg_harness.graphs.builder import build_graph
from lg_harness.graphs.result import SendResult
from lg_harness.llm.sim import SimChatModel
from lg_harness.tools.executor import ToolExecutor
from lg_harness.tools.faults import FaultPlan
from tests.support import harness, patient_design, u001_order, without_goal_stop

MODEL = "sim:clean"






class RepeatingModel(BaseChatModel):
    """A model stuck in a loop: every call asks for the same ``get_order_status`` call, each with a fresh id."""

    order_id: str
    inputs: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "repeating"

    def bind_tools(self, tools: Any, **kwargs: Any) -> RepeatingModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.inputs.append(list(messages))
        call = {"name": "get_order_status", "args": {"order_id": self.order_id}, "id": f"loop-{len(self.inputs)}",
                "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


# ------------------------------------------------------------------------------------------ (a) loops


def test_a_model_repeating_the_same_call_is_stopped_at_the_second_try(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as probe:
        order = u001_order("shipped", shop=probe.resources["shop"])
    model = RepeatingModel(order_id=order)
    with Harness(model, design=without_goal_stop(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("loop", f"Where is my order {order}?", "U001")
        log = r.values["tool_log"]
    executed = [c for c in log if c["error_type"] != "duplicate_call"]
    duplicates = [c for c in log if c["error_type"] == "duplicate_call"]
    assert [(c["name"], c["args"], c["status"]) for c in executed] == [
        ("get_order_status", {"order_id": order}, "ok")], log
    assert len(duplicates) == 1 and duplicates[0]["status"] != "ok", log
    assert [c["id"] for c in log] == ["loop-1", "loop-2"]
    assert r.path.count("action") == 2, r.path
    assert r.reply.strip(), "the customer still gets an answer"
    assert not r.waiting_for_human


def test_once_the_routes_call_delivered_a_repeating_model_gets_no_second_call(tmp_path):
    """answer_after_goal (harness): the lookup worked, so no tool is offered again and a call the model makes
    anyway does not run; the customer gets the answer, with one call in the log."""
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as probe:
        order = u001_order("shipped", shop=probe.resources["shop"])
    with Harness(RepeatingModel(order_id=order), design=patient_design(),
                 settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("goal", f"Where is my order {order}?", "U001")
    assert [(c["name"], c["status"]) for c in r.values["tool_log"]] == [("get_order_status", "ok")]
    assert r.path.count("action") == 2 and "shipped" in r.reply and not r.waiting_for_human


# ------------------------------------------------------------------------------------------ (b) handoff



def cli_json(data_dir: Path, *args: str) -> Any:
    proc = harness(*args, "--data-dir", str(data_dir), "--json", cwd=data_dir)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_handoff_across_processes_waits_for_the_human_then_resumes(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        order = u001_order("shipped", shop=h.resources["shop"])
    thread = "ho"

    first = cli_json(tmp_path, "run", f"I want to talk to a human about my order {order}", "-t", thread,
                     "--model", MODEL)
    assert first["intent"] == "human" and first["waiting_for_human"] is True, first
    ticket = first["handoff"]["ticket"]
    assert ticket and ticket in first["reply"]

    waiting = cli_json(tmp_path, "handoff", "list")["waiting"]
    assert [w["thread_id"] for w in waiting] == [thread]
    assert waiting[0]["handoff"]["ticket"] == ticket and waiting[0]["handoff"]["reason"]
    assert waiting[0]["user"]["id"] == "U001"

    # while the thread waits, a new message is kept for the human and the graph does not run
    meanwhile = cli_json(tmp_path, "run", "hello?", "-t", thread, "--model", MODEL)
    assert ticket in meanwhile["reply"] and meanwhile["reply"] != first["reply"]
    assert meanwhile["path"] == [] and meanwhile["tool_calls"] == []
    assert meanwhile["usage"]["model_calls"] == 0
    assert meanwhile["checkpoint_id"] == first["checkpoint_id"], "no new checkpoint: the graph did not run"
    assert meanwhile["waiting_for_human"] is True

    answered = cli_json(tmp_path, "handoff", "reply", "--thread", thread, "Hi, Sam here")
    assert answered["reply"] == "Hi, Sam here"
    assert cli_json(tmp_path, "handoff", "list")["waiting"] == []

    state = cli_json(tmp_path, "resume", "--thread", thread)
    assert state["next"] == [] and state["reply"] == "Hi, Sam here" and state["phase"] == "done"
    assert state["user"]["id"] == "U001"
    assert order in json.dumps(state["fact_card"]), state["fact_card"]
    assert state["handoff"]["ticket"] == ticket

    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        rows = [(r["role"], r["content"]) for r in h.transcripts.read(thread)]
        assert h.transcripts.waiting_handoffs() == []  # the harness's handoff queue has it answered
        assert h.resources["shop"].query("SELECT COUNT(*) FROM handoffs WHERE thread_id = ?", (thread,))[0][0] == 1
        assert len(h.history(thread)) > 1
    assert rows == [("user", f"I want to talk to a human about my order {order}"), ("assistant", first["reply"]),
                    ("user", "hello?"), ("assistant", meanwhile["reply"]), ("assistant", "Hi, Sam here")]


# ------------------------------------------------------------------------------------------ (c) ordering

PRODUCTS = ["bluetooth headphones", "running shoes", "backpack", "yoga mat", "wireless mouse", "water bottle",
            "phone case", "down jacket", "hoodie", "smart watch", "laptop", "keyboard", "speaker", "tent",
            "sleeping bag", "sneakers", "charger", "jacket", "camera", "monitor"]


def tickets_taken(h: Harness, thread: str) -> int:
    """How many ``send`` calls have entered the thread's queue (observed through ``h.order``, not changed)."""
    ticket = h.order._tickets.get(thread)
    return ticket.next_ticket if ticket is not None else 0


def test_twenty_concurrent_messages_on_one_thread_keep_submission_order(tmp_path):
    thread = "busy"
    messages = [f"Do you have {p}?" for p in PRODUCTS]
    results: list[SendResult | None] = [None] * len(messages)
    errors: list[BaseException] = []

    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        def send(i: int) -> None:
            try:
                results[i] = h.send(thread, messages[i], "U001")
            except BaseException as err:  # noqa: BLE001 - reported by the assertion below
                errors.append(err)

        workers = []
        for i in range(len(messages)):
            worker = threading.Thread(target=send, args=(i,), name=f"sender-{i}")
            worker.start()
            workers.append(worker)
            # Thread i+1 starts only once thread i has entered `send`'s queue, so submission order is known.
            deadline = time.monotonic() + 120
            while tickets_taken(h, thread) < i + 1:
                assert worker.is_alive() or results[i] is not None or errors, "sender died before queueing"
                assert time.monotonic() < deadline, "a sender never reached the thread's queue"
                time.sleep(0.001)
        for worker in workers:
            worker.join(timeout=300)
            assert not worker.is_alive()
        rows = h.transcripts.read(thread)
        turn = h.state(thread)["values"]["turn"]

    assert errors == []
    assert all(r is not None and r.reply for r in results)
    assert turn == len(messages)
    assert [r["role"] for r in rows] == ["user", "assistant"] * len(messages), "none lost, each answered"
    assert [r["content"] for r in rows[0::2]] == messages, "submission order"
    assert [r["content"] for r in rows[1::2]] == [r.reply for r in results if r is not None], "each followed by its own reply"


# ------------------------------------------------------------------------------------------ (d) rule DSL

ACTION_RULES = """\
action -> END when busy
action -> reply when last_ai_has_no_tool_calls
action -> handoff when tool_errors >= 2
action -> reply when stop_reason != null
action -> action
"""


def failing_backend(model: BaseChatModel, design, data_dir: Path) -> Harness:
    registry = FaultPlan(scripted={"get_order_status": ["server_error"] * 40}).apply(SHOP.registry())
    return Harness(model, design=design,
                   settings=Settings(data_dir=data_dir,
                                     parts=Parts(registry=registry,
                                                 executor=ToolExecutor(registry,
                                                                       sleep=lambda seconds: None))))


def test_dsl_rule_hands_off_after_two_tool_errors(tmp_path):
    with Harness(MODEL, design=patient_design(), settings=Settings(data_dir=tmp_path / "probe")) as probe:
        order = u001_order("shipped", shop=probe.resources["shop"])
    with_rules = patient_design().model_copy(update={"name": "two-errors-handoff", "rules": ACTION_RULES})
    graph = build_graph(with_rules, SimChatModel()).get_graph()
    assert any(e.source == "action" and e.target == "handoff" for e in graph.edges)

    runs = {}
    for label, design in (("python", patient_design()), ("dsl", with_rules)):
        with failing_backend(RepeatingModel(order_id=order), design, tmp_path / label) as h:
            r = h.send("t", f"Where is my order {order}?", "U001")
            runs[label] = (r, r.values["tool_log"])

    dsl, dsl_log = runs["dsl"]
    assert [c["status"] for c in dsl_log] == ["error", "error"], dsl_log
    # the rule reads the second call's error, after the step that ran it (execute)
    assert dsl.path[-4:] == ["execute", "action", "execute", "handoff"], dsl.path
    assert dsl.waiting_for_human and dsl.handoff and dsl.handoff["ticket"] in dsl.reply
    python, python_log = runs["python"]  # without the rule the guards let it try again, then answer
    assert "handoff" not in python.path and len(python_log) > 2


BAD_RULES = {
    "bad operator": ("action -> reply when last_ai_has_no_tool_calls\naction -> handoff when tool_errors => 2\n"
                     "action -> action\n", 2, "=>"),
    "unknown state": ("action -> reply when last_ai_has_no_tool_calls\naction -> action\n"
                      "collect -> acton when missing_slots == 0\ncollect -> END\n", 3, "acton"),
    "unknown field": ("collect -> END when missing_slots > 0\naction -> reply when last_ai_has_no_tool_calls\n"
                      "action -> handoff when tool_erors >= 2\naction -> action\n", 3, "tool_erors"),
}


def bad_design_file(tmp_path: Path, case: str) -> tuple[Path, int, str]:
    rules, line, token = BAD_RULES[case]
    path = tmp_path / "bad.yaml"
    import yaml

    path.write_text(yaml.safe_dump({"name": "bad", "variants": {"intent": "classifier"}, "rules": rules}),
                    encoding="utf-8")
    return path, line, token


@pytest.mark.slow
@pytest.mark.parametrize("case", list(BAD_RULES))
def test_rule_compile_errors_are_one_clear_line_with_the_line_number(tmp_path, case):
    path, line, token = bad_design_file(tmp_path, case)
    with pytest.raises(HarnessError) as raised:
        build_graph(load_design(path), SimChatModel())
    message = str(raised.value)
    assert "\n" not in message and f"line {line}" in message and token in message, message

    proc = harness("graph", "--design", str(path), cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert f"line {line}" in lines[0] and token in lines[0], lines[0]
    assert proc.stdout.strip() == ""
