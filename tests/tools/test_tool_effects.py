"""Whether a tool changes the world, from what it declares or else from its own name and description (issue
41), with the reason ``harness domains --domain`` shows (issue 43)."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from lg_harness.core.domain import Domain, load_domain
from lg_harness.tools.effects import infer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def bare(fn):
    """The function without the attributes it declares (changes_state...): a tool written by someone else."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def test_tau_bench_like_tools_that_declare_nothing_are_judged_by_their_own_words() -> None:
    sys.path.insert(0, str(FIXTURES))
    try:
        import retail_domain  # pyright: ignore[reportMissingImports]  (tests/fixtures, put on the path above)
    finally:
        sys.path.remove(str(FIXTURES))
    domain = Domain(name="retail-bare", tools=tuple(bare(s.fn if hasattr(s, "fn") else s)
                                                    for s in retail_domain.DOMAIN.tools))
    verdicts = {s.name: s.changes_state for s in domain.registry().specs()}
    reads = {n for n, changes in verdicts.items() if not changes}
    assert {"get_order_details", "get_user_details", "find_user_id_by_email", "list_all_product_types",
            "calculate"} <= reads
    assert {"cancel_pending_order", "modify_pending_order_address", "return_delivered_order_items",
            "exchange_delivered_order_items"} <= set(verdicts) - reads
    why = {s.name: s.changes_reason for s in domain.registry().specs()}
    assert why["get_order_details"] == "inferred: its name starts with 'get', which reads"


@pytest.mark.parametrize(("name", "description", "changes"), [
    ("get_weather", "", False), ("SearchIssues", "", False), ("weather", "Returns the forecast for a city.", False),
    ("forecast", "Get the forecast for a city.", False), ("git_status", "Shows the working tree status", False),
    ("renew_loan", "Renew a loan.", True), ("git_commit", "Records changes to the repository", True),
    ("frobnicate", "Does a thing.", True),
])
def test_the_verdict_reads_the_name_then_the_description_and_doubts_towards_changing(name, description,
                                                                                   changes) -> None:
    assert infer(name, description).changes is changes


def test_a_declaration_wins_over_the_name() -> None:
    def get_and_reset(token: str) -> dict:
        """Get a token and reset the counter."""
        return {}

    get_and_reset.changes_state = True  # type: ignore[attr-defined]
    [spec] = Domain(name="d", tools=(get_and_reset,)).registry().specs()
    assert spec.changes_state and spec.changes_reason == "declared by the tool: it changes"


def test_harness_domains_lists_an_mcp_servers_tools_with_what_changes_and_why() -> None:
    spec = f"mcp:{sys.executable} {FIXTURES / 'mcp_orders_server.py'}"
    harness = Path(sys.executable).with_name("harness")
    result = subprocess.run([str(harness), "domains", "--domain", spec, "--json"], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    tools = {t["name"]: t for t in json.loads(result.stdout)["tool_details"]}
    assert tools["get_order"]["changes"] is False and "readOnlyHint=True" in tools["get_order"]["why"]
    assert tools["cancel_order"]["changes"] is True and "destructiveHint=True" in tools["cancel_order"]["why"]
    assert tools["add_note"] == {"name": "add_note", "arguments": ["order_id", "text"], "changes": True,
                                 "why": "inferred: its name starts with 'add', which changes"}


def test_the_cli_says_once_when_the_sim_cannot_fill_a_tools_free_text_and_names_the_local_model(capsys) -> None:
    from lg_harness.service.cli import free_text_arguments, note_model_fit

    def get_current_time(timezone: str) -> dict:
        """Get the current time in an IANA timezone."""
        return {"timezone": timezone}

    def get_order(order_id: Annotated[str, Field(pattern=r"^ORD-\d{5}$")]) -> dict:
        """Get an order."""
        return {"order_id": order_id}

    mine = Domain(name="clock", tools=(get_current_time, get_order))
    assert free_text_arguments(mine) == ["get_current_time.timezone"]
    note_model_fit(mine, "sim:clean")
    said = capsys.readouterr().err
    assert "get_current_time.timezone" in said and "--model local:qwen2.5-coder-0.5b" in said
    note_model_fit(mine, "local:qwen2.5-coder-0.5b")
    note_model_fit(load_domain("shop"), "sim")  # a pack with intents and extractors: the sim drives it
    assert capsys.readouterr().err == ""
