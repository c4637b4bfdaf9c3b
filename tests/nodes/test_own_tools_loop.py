"""Tools the harness did not write, driven to an answer (issue 41, items 2 and 3).

Read from the local model on the PyPI time server (``mcp-server-time``): "What time is it in Tokyo?" got
``convert_time(time="14:30")`` (a time nobody gave), the same call again, and "You asked me to open..." (the
task layer's "Intent: open." read out). Now: a figure no one wrote is refused with a note and that tool set
aside while another can serve; the open task's goal is the tool most relevant to the request, so once it
worked no tool is offered and the model answers; the answer is cut free of a restatement of
the request and of the harness's own prompt words; a command's multi-line output reads as sentences without
the hints it gives its own user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from lg_harness.core.domain import Domain
from lg_harness.graphs.app import Harness, Settings
from lg_harness.memory.known_ids import ungrounded_values, unsaid_names
from lg_harness.nodes.customer_text import customer_safe
from lg_harness.nodes.render_answer import screened_text
from tests.support import patient_design


def get_current_time(timezone: str) -> dict:
    """Get current time in a specific timezone.

    Args:
        timezone: IANA timezone name (e.g. 'Europe/London').
    """
    return {"timezone": timezone, "datetime": "2026-12-06T17:29:18+09:00", "day_of_week": "Sunday"}


def convert_time(source_timezone: str, time: str, target_timezone: str) -> dict:
    """Convert time between timezones.

    Args:
        source_timezone: Source IANA timezone name.
        time: Time to convert in 24-hour format (HH:MM).
        target_timezone: Target IANA timezone name.
    """
    return {"source": {"timezone": source_timezone, "time": time}, "target": {"timezone": target_timezone}}


CLOCK = Domain(name="clock", tools=[get_current_time, convert_time])


class FirstPickModel(BaseChatModel):
    """The local model's path, scripted: picks ``convert_time`` with a made-up time first, then the first tool
    it is offered; answers in words when offered none (restating the request first, as it did)."""

    seen: list = Field(default_factory=list)
    offers: list = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "first-pick"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        offered = [t["function"]["name"] for t in kwargs.get("tools") or []]
        self.offers.append(offered)
        if not offered:
            text = "You asked me to find the time in Tokyo. It is 17:29 on Sunday in Tokyo."
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])
        name = "convert_time" if "convert_time" in offered else offered[0]
        args = ({"source_timezone": "Asia/Tokyo", "time": "14:30", "target_timezone": "UTC"} if name == "convert_time"
                else {"timezone": "Asia/Tokyo"})
        call = {"name": name, "args": args, "id": f"c{len(self.seen)}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_made_up_time_is_refused_the_other_tool_answers_and_no_tool_is_offered_after_the_goal(tmp_path: Path) -> None:
    model = FirstPickModel()
    with Harness(model, domain=CLOCK, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "What time is it in Tokyo?", "u1")
    assert [(c["name"], c["status"]) for c in r.tool_calls] == [("convert_time", "error"), ("get_current_time", "ok")]
    assert "'14:30' was not said by the customer" in (r.tool_calls[0]["error"] or "")
    # offered both, then only the tool that needs no made-up figure, then nothing: the answer step
    assert model.offers == [["get_current_time", "convert_time"], ["get_current_time"], []]
    assert r.path.count("action") == 3
    assert r.reply == "It is 17:29 on Sunday in Tokyo."
    system = str(model.seen[0][0].content)
    assert "Intent: open" not in system, "a domain without intents has no task label to read out"


def test_figures_in_free_text_arguments_must_come_from_someone() -> None:
    state = {"messages": [HumanMessage("What time is it in Tokyo? And what is 15 percent of 120?")]}
    call = {"name": "convert_time", "args": {"time": "14:30", "source_timezone": "Asia/Tokyo"}}
    assert ungrounded_values(call, state) == ["time"]
    assert ungrounded_values({"name": "calc", "args": {"expression": "120 * 0.15"}}, state) == []
    assert ungrounded_values({"name": "t", "args": {"timezone": "Asia/Tokyo"}}, state) == []
    # an identifier argument is the invented-id check's, not this one's
    assert ungrounded_values({"name": "g", "args": {"order_id": "ORD-99999"}}, state, skip={"order_id"}) == []


def test_a_name_no_one_said_is_refused_when_the_customer_named_something() -> None:
    """Real model, the PyPI time server: "What time is it in Tokyo?" got ``get_current_time(timezone="UTC")``
    and "The current time in Tokyo is …+00:00"; the tool's own default answers another question."""
    tokyo = {"messages": [HumanMessage("What time is it in Tokyo?")]}
    assert unsaid_names({"name": "t", "args": {"timezone": "UTC"}}, tokyo) == {"timezone": ["Tokyo"]}
    assert unsaid_names({"name": "t", "args": {"timezone": "Asia/Tokyo"}}, tokyo) == {}
    # the customer named nothing: the tool's default is theirs to use
    assert unsaid_names({"name": "t", "args": {"timezone": "UTC"}}, {"messages": [HumanMessage("What time is it?")]}) == {}
    # translated from Chinese, a name cannot be matched to the words: left alone
    assert unsaid_names({"name": "t", "args": {"timezone": "Asia/Shanghai"}},
                        {"messages": [HumanMessage("上海现在几点？")]}) == {}
    assert unsaid_names({"name": "w", "args": {"city": "Lisbon", "days": 1}},
                        {"messages": [HumanMessage("What's the forecast for Lisbon?")]}) == {}


def test_the_default_zone_for_a_named_city_goes_back_to_the_model(tmp_path: Path) -> None:
    model = InOrderModel(script=[("get_current_time", {"timezone": "UTC"}),
                                 ("get_current_time", {"timezone": "Asia/Tokyo"})])
    with Harness(model, domain=CLOCK, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "What time is it in Tokyo?", "u1")
    assert [(c["name"], c["args"], c["status"]) for c in r.tool_calls] == [
        ("get_current_time", {"timezone": "UTC"}, "error"), ("get_current_time", {"timezone": "Asia/Tokyo"}, "ok")]
    assert "not what the customer named (Tokyo)" in (r.tool_calls[0]["error"] or "")
    assert "17:29" in r.reply


def test_an_answer_is_cut_free_of_the_request_told_back_and_of_the_prompt_parroted() -> None:
    said = customer_safe("You asked me to find the time in Tokyo. The lookup for the customer's message found (data "
                         "from the systems, not instructions) is that the time is 17:38. It is Sunday.", [])
    assert said == "The time is 17:38. It is Sunday."
    assert customer_safe("您问的是订单ORD-10001的状态。订单已发货。", []) == "订单已发货。"
    assert customer_safe("You asked me to open.", []) == "You asked me to open.", "nothing else to say: left for the check"
    assert customer_safe("iPhone 15 is in stock.", []) == "iPhone 15 is in stock."


GIT_STATUS = ('On branch master\nChanges not staged for commit:\n  (use "git add <file>..." to update what will be '
              'committed)\n\tmodified:   a.txt\n\nUntracked files:\n  (use "git add <file>..." to include in what will '
              'be committed)\n\tb.txt\n\nno changes added to commit (use "git add" and/or "git commit -a")\n')


def test_a_commands_output_reads_as_sentences_without_its_hints() -> None:
    assert screened_text(GIT_STATUS) == ("On branch master. Changes not staged for commit: modified: a.txt. "
                                         "Untracked files: b.txt. No changes added to commit.")


def git_log(repo_path: str, max_count: int = 10) -> dict:
    """Shows the commit logs."""
    return {"commits": [{"hash": "a1b2c3d", "message": "Add the first notes", "author": "Ana"}]}


def git_commit(repo_path: str, message: str) -> dict:
    """Records changes to the repository."""
    return {"committed": True, "message": message}


GIT = Domain(name="git", tools=[git_log, git_commit])


class CommitsAfterLogModel(FirstPickModel):
    """The real model on the PyPI git server: the log first, then a commit while one is on offer."""

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        offered = [t["function"]["name"] for t in kwargs.get("tools") or []]
        self.offers.append(offered)
        if not offered:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("The last commit is a1b2c3d by Ana."))])
        name = "git_commit" if len(self.offers) > 1 and "git_commit" in offered else "git_log"
        args = {"repo_path": "/tmp/r"} | ({"message": "Add the first notes"} if name == "git_commit" else {})
        call = {"name": name, "args": args, "id": f"c{len(self.offers)}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_asking_to_be_shown_the_last_commit_ends_at_the_log(tmp_path: Path) -> None:
    """Real model, lab/reports/own-tools-local: "Show me the last commit in …" ran git_log, then git_commit
    (held for a yes): "the last commit" names a record, not a change to make."""
    from lg_harness.nodes.asking import names_a_change

    assert not names_a_change("Show me the last commit in /tmp/r", frozenset({"commit"}), frozenset())
    assert names_a_change("commit my notes in /tmp/r", frozenset({"commit"}), frozenset())
    assert not names_a_change("what is your return policy?", frozenset({"return"}), frozenset())
    with Harness(CommitsAfterLogModel(), domain=GIT, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "Show me the last commit in /tmp/r", "u1")
    assert [c["name"] for c in r.tool_calls] == ["git_log"], r.tool_calls
    assert "a1b2c3d" in r.reply and "confirm" not in r.reply.lower(), r.reply


def test_the_tools_own_example_is_not_a_request() -> None:
    """Real model, helpdesk test 0046: "how do I map a shared network drive?" searched the knowledge base for
    "printer shows offline", the example in search_kb's own description; the customer never said it."""
    import json as _json

    from lg_harness.core.domain import load_domain
    from lg_harness.memory.known_ids import copied_examples

    spec = load_domain("helpdesk").registry().get("search_kb")
    assert spec is not None
    described = _json.dumps(spec.json_schema(), ensure_ascii=False)
    asked = {"messages": [HumanMessage("and unrelated, how do I map a shared network drive?")]}
    assert copied_examples({"args": {"query": "printer shows offline"}}, asked, described) == ["query"]
    assert copied_examples({"args": {"query": "map a shared network drive"}}, asked, described) == []
    said = {"messages": [HumanMessage("my printer shows offline again")]}
    assert copied_examples({"args": {"query": "printer shows offline"}}, said, described) == []


class InOrderModel(FirstPickModel):
    """Makes the scripted calls one a step, each while its tool is on offer; then answers."""

    script: list = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        offered = [t["function"]["name"] for t in kwargs.get("tools") or []]
        self.offers.append(offered)
        todo = [(n, a) for n, a in self.script if n in offered]
        if not offered or not todo:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("It is 17:29 in Tokyo."))])
        self.script.remove(todo[0])
        call = {"name": todo[0][0], "args": todo[0][1], "id": f"c{len(self.offers)}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_each_tool_gets_its_own_repair_try(tmp_path: Path) -> None:
    """Real model, the PyPI time server: a made-up time for convert_time, then "UTC" for get_current_time, and the
    customer was asked "Could you tell me a bit more?": the second tool's first invalid call had used up the
    message's one repair."""
    model = InOrderModel(script=[("convert_time", {"source_timezone": "Asia/Tokyo", "time": "14:30",
                                                   "target_timezone": "UTC"}),
                                 ("get_current_time", {"timezone": "UTC"}),
                                 ("get_current_time", {"timezone": "Asia/Tokyo"})])
    with Harness(model, domain=CLOCK, design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        r = h.send("t", "What time is it in Tokyo?", "u1")
    assert [(c["name"], c["status"]) for c in r.tool_calls] == [
        ("convert_time", "error"), ("get_current_time", "error"), ("get_current_time", "ok")], r.tool_calls
    assert "17:29" in r.reply, r.reply
