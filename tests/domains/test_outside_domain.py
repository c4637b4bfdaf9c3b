"""A domain from outside the repository runs through Python and the CLI with no core edits.

The test writes a small pack into a temporary folder (a library: two task intents, one entity type
``BOOK-\\d{4}``, a reading tool and a changing one with an idempotent backend) and loads it the three ways
a user can: as a ``Domain`` value, as ``module:attr`` on the path, and as ``file.py:ATTR``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from lg_harness.core.domain import load_domain
from lg_harness.errors import HarnessError
from lg_harness.graphs.app import Harness, Settings
from tests.support import harness

SOURCE = Path(__file__).parents[1] / "fixtures" / "library_domain.py"


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    """The pack as a package in a folder of its own, outside the repository."""
    folder = tmp_path / "outside" / "library_pack"
    folder.mkdir(parents=True)
    shutil.copy(SOURCE, folder / "__init__.py")
    return folder

# These tests load domains; the confirmation of changes (on in ``harness``) has its own tests.
NO_CONFIRM = "harness-no:confirm_changes"


def calls(tool_calls: list) -> list[tuple]:
    """The calls of a message (``SendResult.tool_calls``, or the ``tool_calls`` of ``run --json``)."""
    return [(c["name"], c["args"], c["status"]) for c in tool_calls]


def test_python_runs_an_outside_domain_with_real_tool_calls(pack: Path):
    domain = load_domain(str(pack / "__init__.py") + ":DOMAIN")
    renew = domain.registry().get("renew_loan")
    assert renew is not None
    assert domain.name == "library" and domain.tool_entities(renew) == {"book_id": "book"}
    with Harness("sim:clean", domain=domain, design=NO_CONFIRM, settings=Settings(data_dir=None)) as h:
        renewed = h.send("t1", "Can you renew BOOK-0042 please?", "reader1")
        assert renewed.intent == "renew" and calls(renewed.tool_calls) == [("renew_loan", {"book_id": "BOOK-0042"}, "ok")]
        looked = h.send("t1", "Tell me about BOOK-0007", "reader1")
        assert calls(looked.tool_calls) == [("get_book", {"book_id": "BOOK-0007"}, "ok")] and "Dune" in looked.reply
        assert h.resources["library"].data["renewals"] == {"BOOK-0042": 1}
        asked = load_domain(domain).phrase("ask_book_id", "en")
        fresh = h.send("t2", "I want to renew a loan", "reader1")
        assert fresh.tool_calls == [] and fresh.reply == asked and fresh.missing_slots == ["book_id"]


def test_mentions_are_remembered_in_order_so_the_first_one_means_the_first(pack: Path):
    domain = load_domain(str(pack / "__init__.py") + ":DOMAIN")
    with Harness("sim:clean", domain=domain, design=NO_CONFIRM, settings=Settings(data_dir=None)) as h:
        h.send("t1", "Tell me about BOOK-0042", "reader1")
        second = h.send("t1", "Tell me about BOOK-0007", "reader1")
        assert second.values["fact_card"]["book_ids"] == ["BOOK-0042", "BOOK-0007"]
        first = h.send("t1", "Renew the first one I asked about", "reader1")
        assert first.slots["book_id"] == "BOOK-0042", first.slots
        h.send("t2", "Tell me about BOOK-0042", "reader1")
        h.send("t2", "Tell me about BOOK-0007", "reader1")
        again = h.send("t2", "Renew it", "reader1")
        assert again.slots["book_id"] == "BOOK-0007"  # without an ordinal, the latest mention


@pytest.mark.slow
def test_cli_runs_an_outside_domain_as_module_and_as_file(pack: Path, tmp_path: Path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("PYTHONPATH", f"{pack.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    as_module = harness("run", "--domain", "library_pack:DOMAIN", "Please renew BOOK-0042", "--json", "--design", NO_CONFIRM,
                        "--model", "sim:clean", "--data-dir", str(data), cwd=tmp_path)
    assert as_module.returncode == 0, as_module.stderr
    first = json.loads(as_module.stdout)
    assert first["domain"] == "library" and calls(first["tool_calls"]) == [("renew_loan", {"book_id": "BOOK-0042"}, "ok")]
    as_file = harness("run", "--domain", f"{pack / '__init__.py'}:DOMAIN", "Renew BOOK-0042 again", "--json", "--design", NO_CONFIRM,
                      "--model", "sim:clean", "--data-dir", str(data), "--thread", "t2", cwd=tmp_path)
    assert as_file.returncode == 0, as_file.stderr
    assert json.loads(as_file.stdout)["tool_calls"][0]["status"] == "ok"
    # the backend lives in the data dir: two processes, two renewals, each applied once
    assert json.loads((data / "library.json").read_text())["renewals"] == {"BOOK-0042": 2}


YAML = """
name: library-yaml
system_prompt: You are a library assistant. Use the tools offered; never invent book ids.
tools: [library_pack:get_book, library_pack:renew_loan]
resources: library_pack:open_backends
entity_types:
  - {name: book, pattern: 'BOOK-(\\d{4})', canonical: 'BOOK-{0}', examples: [BOOK-0042], slot: book_id, remember: true}
intents:
  - {name: renew, rules: {en: [renew, extend]}, route: {required: [[book_id]], tools: [renew_loan, get_book]}}
  - {name: book_info, rules: {en: [book, about]}, entity_hint: book, route: {required: [[book_id]], tools: [get_book]}}
phrases: {ask_book_id: {en: "Which book? Its id looks like BOOK-1234."}}
default_user: reader-1
"""


def test_the_declarative_parts_can_be_yaml(pack: Path):
    spec = pack.parent / "library.yaml"
    spec.write_text(YAML, encoding="utf-8")
    domain = load_domain(str(spec))
    assert domain.name == "library-yaml" and domain.route("renew").tools == ("renew_loan", "get_book")
    with Harness("sim:clean", domain=domain, design=NO_CONFIRM, settings=Settings(data_dir=None)) as h:
        assert calls(h.send("t1", "Please renew BOOK-0042", "reader1").tool_calls) == [("renew_loan", {"book_id": "BOOK-0042"}, "ok")]
    spec.write_text(YAML.replace("entity_hint: book", "entity_hnt: book"), encoding="utf-8")
    with pytest.raises(HarnessError, match=r"library.yaml: intents.1.entity_hnt: Extra inputs"):
        load_domain(str(spec))


def test_a_bad_domain_spec_says_what_to_do(tmp_path: Path):
    with pytest.raises(HarnessError, match="unknown domain 'nope'.*installed: .*shop"):
        load_domain("nope")
    with pytest.raises(HarnessError, match="does not exist"):
        load_domain(str(tmp_path / "missing.py"))
    broken = tmp_path / "broken.py"
    broken.write_text("DOMAIN = 42\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="is not a Domain"):
        load_domain(str(broken))
    failed = harness("run", "--domain", "nope", "hi", cwd=tmp_path)
    assert failed.returncode != 0 and "unknown domain 'nope'" in failed.stderr and "Traceback" not in failed.stderr


def test_installed_packs_are_listed():
    listed = harness("domains", "--json", cwd=Path.cwd())
    assert listed.returncode == 0, listed.stderr
    names = {d["name"]: d for d in json.loads(listed.stdout)["domains"]}
    assert {"shop", "helpdesk"} <= set(names)
    assert "get_order_status" in names["shop"]["tools"] and "get_ticket" in names["helpdesk"]["tools"]


@pytest.mark.slow
def test_cli_runs_the_helpdesk_pack_with_a_real_tool_call(tmp_path: Path):
    from lg_harness.domains.helpdesk import HelpdeskDB

    with HelpdeskDB.open(tmp_path / "helpdesk.sqlite") as db:  # the file the CLI opens in this data dir
        ticket = db.query("SELECT id, status FROM tickets WHERE owner_id = 'E1001' ORDER BY id")[-1]
    out = harness("run", "--domain", "helpdesk", f"What is the status of {ticket['id']}?", "--json",
                  "--model", "sim:clean", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["domain"] == "helpdesk" and result["intent"] == "ticket_status"
    assert calls(result["tool_calls"]) == [("get_ticket", {"ticket_id": ticket["id"]}, "ok")]
    assert ticket["status"].replace("_", " ") in result["reply"]  # the state in words ("in progress")


@pytest.mark.slow
def test_resume_continues_a_thread_in_the_domain_it_ran_in(tmp_path: Path):
    ran = harness("run", "--domain", "helpdesk", "hello", "--json", "--model", "sim:clean", "--thread", "hd",
                  "--data-dir", str(tmp_path), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    resumed = harness("resume", "--thread", "hd", "--json", "--data-dir", str(tmp_path), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["domain"] == "helpdesk"
    told = harness("resume", "--thread", "hd", "--json", "--domain", "shop", "--user", "E1001", "--data-dir", str(tmp_path),
                   cwd=tmp_path)
    assert json.loads(told.stdout)["domain"] == "shop"  # what the user says wins
