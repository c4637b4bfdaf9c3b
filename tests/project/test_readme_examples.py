"""The README's example commands answer a customer correctly on the default model, in English and Chinese.

Every ``harness run`` and ``harness chat`` line of the README that needs no server runs here as a user
types it (the console script, a fresh data dir, the default model: sim:clean since issue 43), and again with the message in
Chinese; the reply is read as a customer reads it: the facts, in words (no JSON, no field lines), in the
language asked, nothing internal. Before issue 24 the first example answered with a field dump and the
second asked for a yes to return an order still on its way.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lg_harness.core.domain import load_domain
from lg_harness_lab.evals.reply_quality import reply_problems

pytestmark = [pytest.mark.docs, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(sys.executable).with_name("harness")
_COMMAND = re.compile(r"^(harness (?:run|chat)\b.*?)(?:\s{2,}#.*)?$")

# Per README message: its Chinese twin, the domain, and what the reply must hold (any of each group).
EXPECTED: dict[str, dict] = {
    "Where is my order ORD-10134?": {"zh": "我的订单 ORD-10134 到哪了？", "facts": [["ORD-10134"], ["shipped"]],
                                     "facts_zh": [["ORD-10134"], ["已发货"]]},
    "I want to return it": {"zh": "我想退货", "facts": [["ORD-10134"], ["on the way", "once it is delivered"]],
                            "facts_zh": [["ORD-10134"], ["运输", "签收"]], "no_question": True},
    "Where is my ticket INC0012346?": {"zh": "我的工单 INC0012346 怎么样了？", "facts": [["INC0012346"], ["in progress"]],
                                       "facts_zh": [["INC0012346"], ["处理中"]]},
}
CHAT_MESSAGE = "Where is my order ORD-10134?"  # what a user types first in `harness chat`


def readme_commands() -> list[str]:
    """The README's ``harness run`` / ``harness chat`` lines that run offline (no --model server)."""
    lines = [m.group(1).strip() for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
             if (m := _COMMAND.match(line.strip()))]
    return [line for line in lines if "--model" not in line]


def _env() -> dict[str, str]:
    # As a user runs it: no HARNESS_* settings and the sim's own default profile (the tests pin another).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "SIMLM_"))}
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _run(argv: list[str], data_dir: Path, stdin: str | None = None) -> str:
    proc = subprocess.run([str(HARNESS), *argv[1:], "--data-dir", str(data_dir)], input=stdin, capture_output=True,
                          text=True, timeout=240, env=_env(), cwd=data_dir)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _reply(argv: list[str], out: str) -> str:
    if "--json" in argv:
        import json

        return json.loads(out)["reply"]
    if argv[1] == "chat":
        said = [line.split("agent>", 1)[1] for line in out.splitlines() if "agent>" in line]
        return said[0].strip() if said else ""
    return out.strip()


def _message(argv: list[str]) -> str:
    if argv[1] == "chat":
        return CHAT_MESSAGE
    args = [a for a in argv[2:] if not a.startswith("--")]
    flags = {argv[i] for i in range(len(argv)) if argv[i].startswith("--") and i + 1 < len(argv)}
    values = {argv[i + 1] for i in range(len(argv) - 1) if argv[i] in flags}
    return next(a for a in args if a not in values)


def _check(reply: str, lang: str, groups: list[list[str]], domain: str, no_question: bool) -> None:
    problems = [k for k, bad in reply_problems(reply, lang, load_domain(domain).registry().names()).items() if bad]
    assert not problems, f"{problems}: {reply}"
    for group in groups:
        assert any(f.casefold() in reply.casefold() for f in group), f"none of {group} in: {reply}"
    if no_question:  # a change that cannot be made is not put to the customer for a yes
        assert "reply yes" not in reply.casefold() and "回复“是”" not in reply, reply


def test_every_readme_example_has_expectations():
    commands = readme_commands()
    assert any(c.startswith("harness chat") for c in commands) and len(commands) >= 4
    for command in commands:
        argv = shlex.split(command)
        assert _message(argv) in EXPECTED, f"no expectation for the README example: {command}"


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_readme_examples_answer_like_a_person(tmp_path, lang):
    """Run in README order on one data dir (the second example continues the first one's thread)."""
    for command in readme_commands():
        argv = shlex.split(command)
        message = _message(argv)
        expected = EXPECTED[message]
        text = message if lang == "en" else expected["zh"]
        if argv[1] == "chat":
            reply = _reply(argv, _run(argv, tmp_path, stdin=f"{text}\n/quit\n"))
        else:
            argv = [text if a == message else a for a in argv]
            reply = _reply(argv, _run(argv, tmp_path))
        domain = argv[argv.index("--domain") + 1] if "--domain" in argv else "shop"
        _check(reply, lang, expected["facts" if lang == "en" else "facts_zh"], domain, expected.get("no_question", False))
