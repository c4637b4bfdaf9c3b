"""Who the HTTP service thinks the caller is: from a key or a trusted proxy header, never from the body."""

from __future__ import annotations

import pytest
from fastapi import HTTPException
from starlette.requests import Request

from lg_harness.errors import HarnessError
from lg_harness.service.http import AGENT, Api, ServiceSettings


def request(**headers: str) -> Request:
    raw = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": raw})


def settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> ServiceSettings:
    for key in ("HARNESS_API_KEYS", "HARNESS_TRUSTED_USER_HEADER", "HARNESS_BUSY_POLICY", "HARNESS_DESK_KEYS",
                "HARNESS_DESK_HEADER", "HARNESS_TRUSTED_PROXIES"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return ServiceSettings.from_env()


def test_serve_refuses_to_start_without_authentication(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(HarnessError, match="HARNESS_API_KEYS"):
        settings(monkeypatch)
    with pytest.raises(HarnessError, match="key=user_id"):
        settings(monkeypatch, HARNESS_API_KEYS="just-a-key")
    with pytest.raises(HarnessError, match="HARNESS_BUSY_POLICY"):
        settings(monkeypatch, HARNESS_API_KEYS="k=U001", HARNESS_BUSY_POLICY="later")


def test_api_keys_name_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    api = Api(settings(monkeypatch, HARNESS_API_KEYS="k1=U001,desk=@agent"))
    assert api.caller(request(authorization="Bearer k1")) == "U001"
    assert api.caller(request(authorization="Bearer desk")) == AGENT
    for bad in (request(), request(authorization="Bearer k2"), request(x_user="U001")):
        with pytest.raises(HTTPException) as err:
            api.caller(bad)
        assert err.value.status_code == 401


def proxied(host: str, **headers: str) -> Request:
    raw = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": raw, "client": (host, 40000)})


def test_a_trusted_proxy_header_names_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    api = Api(settings(monkeypatch, HARNESS_TRUSTED_USER_HEADER="X-Auth-User", HARNESS_TRUSTED_PROXIES="127.0.0.1"))
    assert api.caller(proxied("127.0.0.1", x_auth_user="U002")) == "U002"
    # A flag anyone can send does not make the caller the desk (it used to: X-Harness-Agent: 1).
    assert api.caller(proxied("127.0.0.1", x_auth_user="staff-7", x_harness_agent="1")) == "staff-7"
    for outsider in (proxied("127.0.0.1", authorization="Bearer anything"), request(x_auth_user="U002")):
        with pytest.raises(HTTPException) as err:  # an unknown key; a header on a connection from no proxy
            api.caller(outsider)
        assert err.value.status_code == 401


def test_the_desk_is_named_by_its_own_keys_or_by_a_trusted_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    api = Api(settings(monkeypatch, HARNESS_DESK_KEYS="dk=alice", HARNESS_DESK_HEADER="X-Desk-Agent",
                       HARNESS_TRUSTED_PROXIES="10.0.0.0/8", HARNESS_TRUSTED_USER_HEADER="X-Auth-User"))
    desk = request(authorization="Bearer dk")
    assert api.caller(desk) == AGENT and desk.state.desk_agent == "alice"
    via_proxy = proxied("10.1.2.3", x_desk_agent="bob")
    assert api.caller(via_proxy) == AGENT and via_proxy.state.desk_agent == "bob"
    assert api.caller(proxied("10.1.2.3", x_auth_user="U001")) == "U001"
    for outsider in (proxied("192.0.2.9", x_desk_agent="bob"), proxied("192.0.2.9", x_auth_user="U001")):
        with pytest.raises(HTTPException) as err:
            api.caller(outsider)
        assert err.value.status_code == 401
    with pytest.raises(HTTPException) as err:
        api.caller(proxied("10.1.2.3", x_auth_user="@agent"))
    assert err.value.status_code == 403
    with pytest.raises(HarnessError, match="HARNESS_TRUSTED_PROXIES"):
        settings(monkeypatch, HARNESS_DESK_KEYS="dk=alice", HARNESS_DESK_HEADER="X-Desk-Agent")
    with pytest.raises(HarnessError, match="addresses or networks"):
        settings(monkeypatch, HARNESS_DESK_KEYS="dk=alice", HARNESS_TRUSTED_PROXIES="the-proxy")
