"""A design's own rules replace the default routing for the nodes they name, and only for those."""

from pathlib import Path

import pytest

from lg_harness.core.design import Design, load_design
from lg_harness.core.routing.route import BUILTIN_RULES, LIGHTWEIGHT_RULES
from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings

CONVERSATION = [
    "hi",
    "where is my order?",
    "ORD-10144",
    "I want to return it, wrong size",
    "有没有蓝牙耳机？",
    "blorp",
    "florp zzz",
    "claim WELCOME10",
]

# A complaint goes straight to a person instead of first filing it; every other intent routes as before.
COMPLAINTS_TO_HUMAN = """\
intent -> handoff when intent_kind == "escalate"
intent -> handoff when intent_kind == "to-human"
intent -> handoff when unknown_streak >= unknown_intent_handoff and handoff_allowed
intent -> reply when intent_kind == "conversational"
intent -> collect
"""


def _run(data_dir: Path, design: Design, conversation: list[str]) -> list[tuple]:
    with Harness("sim:clean", design=design, settings=Settings(data_dir=data_dir)) as h:
        out = []
        for text in conversation:
            r = h.send("t", text, "U001")
            out.append((r.path, r.intent, r.reply, [(c["name"], c["args"], c["status"]) for c in r.tool_calls]))
        return out


def test_the_default_rules_route_a_conversation(tmp_path: Path) -> None:
    run = _run(tmp_path, load_design("harness"), CONVERSATION)
    paths = [p for p, *_ in run]
    assert ["intent", "handoff"] in [p[:2] for p in paths]  # the unknown-intent streak handed off
    assert any("action" in p for p in paths)
    # Naming the default rules the way older design files did routes the same.
    old_style = load_design("harness").model_copy(update={"name": "old", "rules": BUILTIN_RULES})
    assert _run(tmp_path / "old", old_style, CONVERSATION) == run
    # The hand-built agent's rules in the rule language route the conversation as the routers do.
    as_rules = load_design("harness").model_copy(update={"name": "ruled", "rules": LIGHTWEIGHT_RULES})
    assert _run(tmp_path / "ruled", as_rules, CONVERSATION) == run


def test_own_rules_replace_the_default_for_their_node_only(tmp_path: Path) -> None:
    base = load_design("harness")
    own = base.model_copy(update={"name": "complaints-to-human", "rules": COMPLAINTS_TO_HUMAN})
    conversation = [*CONVERSATION[:4], "I want to complain, the parcel arrived broken"]
    default_run, own_run = _run(tmp_path / "a", base, conversation), _run(tmp_path / "b", own, conversation)
    assert own_run[:4] == default_run[:4]  # other intents, and collect/action/self_check, route as before
    assert default_run[4][0][:2] == ["intent", "collect"]
    assert own_run[4][0][:2] == ["intent", "handoff"]
    assert not any(name == "file_complaint" for name, *_ in own_run[4][3])


def test_a_design_file_with_a_broken_rule_fails_when_it_loads(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\nrules: |\n  intent -> nowhere when intent_kind == 'task'\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="nowhere"):
        load_design(str(path))
