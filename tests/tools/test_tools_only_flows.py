"""Domains of tools alone, on the offline sim and on the real local model (issue 41, "Tools it did not write").

- The lending chain (``tests/fixtures/lending_domain.py``): "renew my loan of Dune, my email is ..." needs
  ``find_member`` first, and ``renew_loan`` with a loan id only that lookup showed. Before, ``renew_loan`` never
  ran: the sim asked for the loan id; the real model made one up (``LN-12345``), was refused, and the customer
  was asked "Could you tell me a bit more?".
- An MCP weather server (``tests/fixtures/mcp_weather_server.py``, free-text ``city``, no annotations): "What's the
  weather forecast for Lisbon?" got "Could you tell me the city?" on the sim.

The real-model tests run where the GGUF and llama-cpp-python are installed (CI builds them); each asserts the
end state (the loan renewed once) or the facts a customer asked for, not the model's wording.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from lg_harness.core.domain import Domain
from lg_harness.graphs.app import Harness, Parts, Settings
from lg_harness.tools.mcp import mcp_tools
from tests.fixtures.lending_domain import DOMAIN as LENDING
from tests.support import patient_design, real_model

LOCAL = "local:qwen2.5-coder-0.5b"
WEATHER = f"{sys.executable} {Path(__file__).parents[1] / 'fixtures' / 'mcp_weather_server.py'}"


def renew_dune(model: str) -> tuple[list[tuple[str | None, str]], str, Any]:
    resources = LENDING.fresh_resources() if LENDING.fresh_resources else {}
    with Harness(model, domain=LENDING, design=patient_design(),
                 settings=Settings(data_dir=None, parts=Parts(resources=resources))) as h:
        asked = h.send("t", "Please renew my loan of Dune. My email is ana@example.org", "ana")
        assert asked.values.get("pending_change"), asked.reply
        assert "LN-30817" in asked.reply, "the confirmation names the loan the lookup showed"
        done = h.send("t", "yes", "ana")
    calls = [(c["name"], c["status"] if c["status"] == "ok" else str(c["error_type"])) for c in [*asked.tool_calls, *done.tool_calls]]
    return calls, done.reply, resources["loans"]


def test_the_lending_chain_runs_on_the_sim() -> None:
    calls, reply, loans = renew_dune("sim:clean")
    assert calls == [("find_member", "ok"), ("renew_loan", "needs_confirmation"), ("renew_loan", "ok")]
    assert loans["LN-30817"]["renewals"] == 1 and loans["LN-30822"]["renewals"] == 2
    assert "renewed" in reply


@pytest.mark.slow
@real_model
def test_the_lending_chain_runs_on_the_real_model() -> None:
    calls, reply, loans = renew_dune(LOCAL)
    assert ("find_member", "ok") in calls and calls[-1] == ("renew_loan", "ok"), calls
    assert [c for c in calls if c == ("renew_loan", "ok")] == [("renew_loan", "ok")], "renewed exactly once"
    assert loans["LN-30817"]["renewals"] == 1 and loans["LN-30822"]["renewals"] == 2, "the loan asked for"
    assert "renewed" in reply.lower(), reply


def lisbon_forecast(model: str) -> tuple[list[tuple[str | None, str | None]], str]:
    with mcp_tools(WEATHER) as tools, Harness(model, domain=Domain(name="weather", tools=tools),
                                              design=patient_design(), settings=Settings(data_dir=None)) as h:
        r = h.send("t", "What's the weather forecast for Lisbon?", "u1")
    return [(c["name"], c["status"]) for c in r.tool_calls], r.reply


def test_the_weather_server_answers_a_city_on_the_sim() -> None:
    calls, reply = lisbon_forecast("sim:clean")
    assert calls == [("get_forecast", "ok")]
    assert "sunny" in reply and "19" in reply and "city" not in reply.lower(), reply


@pytest.mark.slow
@real_model
def test_the_weather_server_on_the_real_model_answers_the_forecast() -> None:
    """The 0.5B model writes "Lisboa" for Lisbon, which the server does not know; the harness puts the
    customer's spelling back (``memory.known_ids.customer_spelling``), so the forecast reaches the customer:
    never "Could you tell me the city?", never the server's refusal."""
    calls, reply = lisbon_forecast(LOCAL)
    assert ("get_forecast", "ok") in calls, calls
    assert "sunny" in reply.lower() and "19" in reply, reply
