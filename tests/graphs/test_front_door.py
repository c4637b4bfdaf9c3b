"""The front door: ``Harness(model, domain, design, settings)``; what it opens it closes, what it is given it leaves."""

from __future__ import annotations

import inspect

import pytest

import lg_harness.graphs.opening as opening
from lg_harness import Harness, Parts, Settings, UsageError
from lg_harness.domains.shop import DOMAIN as SHOP
from tests.conftest import patient_design


def test_a_harness_is_a_model_a_domain_a_design_and_one_settings_value():
    assert list(inspect.signature(Harness).parameters) == ["model", "domain", "design", "settings"]
    with Harness("sim:clean", "helpdesk", patient_design(), Settings(data_dir=None)) as h:
        r = h.send("t1", "What is the status of INC0012346?", "E1001")
        assert h.domain.name == "helpdesk" and h.data_dir is None
    assert r.tool_calls[0]["name"] == "get_ticket" and "INC0012346" in r.reply


def test_the_old_positional_call_says_how_to_call_it_now(tmp_path):
    with pytest.raises(UsageError, match=r"model first.*Settings\(data_dir=\.\.\.\)"):
        Harness(tmp_path, "harness", "sim")  # type: ignore[arg-type]  # the call before Settings
    with pytest.raises(UsageError, match=r"model first"):
        Harness(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="takes a Settings value"):
        Harness("sim", "shop", "harness", {"data_dir": None})  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())  # nothing was opened or written


def test_bad_settings_are_refused_when_written():
    with pytest.raises(UsageError, match="unknown durability 'sometimes'.*sync"):
        Settings(durability="sometimes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="takes a Parts value"):
        Settings(parts={"registry": None})  # type: ignore[arg-type]


class Backend:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_given_parts_stay_their_owners_and_opened_ones_are_closed(tmp_path):
    assert SHOP.fresh_resources is not None
    given = {**SHOP.fresh_resources(), "mine": Backend()}
    h = Harness("sim:clean", SHOP, patient_design(), Settings(data_dir=tmp_path, parts=Parts(resources=given)))
    opened = list(h.opened.owned)
    assert h.resources["mine"] is given["mine"] and given["mine"] not in opened
    h.close()
    assert not given["mine"].closed  # the caller gave it: the caller closes it
    assert h.opened.owned == [] and opened  # what the harness opened (its stores) it closed


def test_a_failed_open_closes_what_it_had_opened(tmp_path, monkeypatch):
    closed: list[str] = []
    real_open_stores = opening.open_stores

    def recording_stores(*args, **kwargs):
        stores = real_open_stores(*args, **kwargs)
        real_close = stores.close
        stores.close = lambda: (closed.append("stores"), real_close())  # type: ignore[method-assign]
        return stores

    def broken_graph(*args, **kwargs):
        raise UsageError("the design names a variant this runtime lacks")

    monkeypatch.setattr(opening, "open_stores", recording_stores)
    monkeypatch.setattr(opening, "build_graph", broken_graph)
    with pytest.raises(UsageError, match="variant this runtime lacks"):
        Harness("sim:clean", "shop", patient_design(), Settings(data_dir=tmp_path))
    assert closed == ["stores"]
    monkeypatch.undo()
    with Harness("sim:clean", "shop", patient_design(), Settings(data_dir=tmp_path)) as again:  # nothing held
        assert again.send("t", "hello", "U001").reply
