"""The desk in a real browser: ``harness serve`` is started, and Playwright drives Debian's Chromium through it.

A customer's message arrives on the open thread page without a reload; a handoff is taken, answered and
released from the pages; a fork is made from a checkpoint; a ``<script>`` a customer wrote stays text; nothing
is fetched from anywhere but the service (Swagger UI included). It runs on SQLite and on Postgres.

Needs ``playwright`` (the dev extra) and ``/usr/bin/chromium`` (``apt-get install chromium``); it is skipped
without them, unless ``HARNESS_TEST_REQUIRE_BROWSER=1`` (CI), which makes a missing browser a failure. With
``HARNESS_DESK_SCREENSHOTS=DIR`` it saves the thread, trace and handoff pages there (``docs/img/``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.engines import database_url, free_port, postgres_server, stop_group, wait_http  # noqa: F401 - fixtures
from tests.support import patient_design

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
# Chromium as the issue asks: headless, no sandbox (root in CI), and nothing that reaches out by itself.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HARNESS = Path(sys.executable).with_name("harness")
CUSTOMER = {"Authorization": "Bearer key-u1"}
EMAIL = "jo@example.com"
INJECTED = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">"
SHOTS = os.environ.get("HARNESS_DESK_SCREENSHOTS")


def _browser_or_skip() -> Any:
    required = os.environ.get("HARNESS_TEST_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = ("playwright is not installed (pip install -e '.[dev]')" if sync_playwright is None else
               f"{CHROMIUM} is missing (apt-get install -y chromium)" if not CHROMIUM.exists() else None)
    if missing and required:
        pytest.fail(f"{missing} (HARNESS_TEST_REQUIRE_BROWSER=1: CI must run the browser test)")
    if missing:
        pytest.skip(missing)
    return sync_playwright


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def desk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """``harness serve`` on a fresh data dir (and, for postgres, a fresh database); its base URL."""
    _browser_or_skip()
    url = request.getfixturevalue("database_url") if request.param == "postgres" else ""
    design = tmp_path / "patient.json"
    design.write_text(patient_design().model_dump_json(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update(HF_HUB_OFFLINE="1", HARNESS_API_KEYS="key-u1=U001,key-u2=U002",
               HARNESS_DESK_KEYS="key-alice=alice", HARNESS_DATABASE_URL=url)
    port, log = free_port(), tmp_path / "serve.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen([str(HARNESS), "serve", "--port", str(port), "--model", "sim:clean", "--design",
                                 str(design), "--data-dir", str(tmp_path / "data")], env=env,
                                stdout=subprocess.DEVNULL, stderr=sink, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/readyz", timeout=180, proc=proc)
        yield base
    except (RuntimeError, TimeoutError):
        raise AssertionError(f"harness serve did not start: {log.read_text()[-2000:]}") from None
    finally:
        stop_group(proc)  # the process group this test started, by its pid


def say(base: str, thread: str, text: str) -> dict[str, Any]:
    r = httpx.post(f"{base}/threads/{thread}/messages", json={"text": text}, headers=CUSTOMER, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def shoot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"desk-{name}.png"), full_page=True)


def test_the_desk_in_a_browser(desk: str) -> None:
    sync_playwright = _browser_or_skip()
    base = desk
    say(base, "b1", "Where is my order ORD-10134?")
    assert say(base, "b1", f"{INJECTED} [bold red]I want a human[/]")["waiting_for_human"]
    outside: list[str] = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        browser = pw.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        try:
            page = browser.new_page()
            page.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
            page.on("dialog", lambda d: (outside.append(f"dialog: {d.message}"), d.dismiss()))
            drive(page, base)
        finally:
            browser.close()
    assert outside == [], "the desk fetched something from elsewhere, or a customer's script ran"


def drive(page: Any, base: str) -> None:
    page.goto(f"{base}/")
    assert page.url.endswith("/desk/login")
    page.fill("input[name=key]", "key-alice")
    page.click("form.login button")
    page.wait_for_url(f"{base}/")
    page.get_by_role("link", name="b1").click()
    thread_page(page, base)
    handoff_flow(page, base)
    fork_from_a_checkpoint(page, base)
    page.goto(f"{base}/docs")
    page.wait_for_selector(".swagger-ui .information-container", timeout=30_000)
    assert page.get_by_text("/handoffs/{thread_id}/release", exact=True).count() == 1


def thread_page(page: Any, base: str) -> None:
    transcript = page.locator("#transcript")
    injected = transcript.locator(".msg.user .text").nth(1)
    assert injected.inner_text() == f"{INJECTED} [bold red]I want a human[/]", "customer text shown as typed"
    assert page.evaluate("window.pwned") is None and page.locator("#transcript script, #transcript img").count() == 0
    page.wait_for_selector("#live.on")
    say(base, "b1", f"Hello? Is anybody there? Write to {EMAIL} <b>now</b>")  # arrives while the page is open
    arrived = transcript.locator(".msg.user .text", has_text="Is anybody there?")
    arrived.wait_for(timeout=15_000)
    assert arrived.inner_text() == f"Hello? Is anybody there? Write to {EMAIL} <b>now</b>"
    page.get_by_role("link", name="message 1").click()
    page.wait_for_selector("table.spans")
    assert page.locator("table.spans .name", has_text="execute_tool get_order_status").count() == 1
    assert page.locator("table.calls .outcome.ok").count() >= 1
    shoot(page, "trace")


def handoff_flow(page: Any, base: str) -> None:
    page.goto(f"{base}/desk/handoffs")
    row = page.locator("table.queue.waiting tbody tr", has_text="b1")
    # The queue shows the customer's last message masked, and as text.
    assert "Hello? Is anybody there? Write to [email] <b>now</b>" in row.inner_text() and EMAIL not in row.inner_text()
    assert page.evaluate("window.pwned") is None
    row.get_by_role("button", name="Take").click()
    page.wait_for_selector("#notice.ok")
    page.wait_for_selector("table.queue.waiting .badge.waiting:has-text('alice')")
    page.locator("table.queue.waiting tbody tr", has_text="b1").get_by_role("link", name="Answer").click()
    page.fill("form.answer textarea", "Hi, Alice here. Your order ORD-10134 has shipped.")
    page.click("form.answer button")
    page.locator("#transcript .msg.assistant .text", has_text="Alice here").wait_for(timeout=20_000)
    page.wait_for_selector("#handoff .badge.held")
    shoot(page, "thread")
    page.goto(f"{base}/desk/handoffs")
    assert page.locator("table.queue.held tbody tr", has_text="b1").count() == 1
    shoot(page, "handoffs")
    page.locator("table.queue.held tbody tr", has_text="b1").get_by_role("button", name="Release").click()
    page.wait_for_selector("#notice.ok")
    page.wait_for_selector("text=No thread is held by a human.")
    back = say(base, "b1", "Where is my order ORD-10134?")
    assert back["usage"]["model_calls"] > 0 and not back["waiting_for_human"], "released: the bot answers again"


def fork_from_a_checkpoint(page: Any, base: str) -> None:
    page.goto(f"{base}/desk/threads/b1")
    first = page.locator("table.checkpoints tbody tr", has=page.locator("td:nth-child(2)", has_text="1")).first
    checkpoint = first.get_by_role("button", name="Fork from here").get_attribute("data-checkpoint")
    first.get_by_role("button", name="Fork from here").click()
    page.wait_for_selector("#notice.ok")
    state = httpx.get(f"{base}/threads/b1/state", headers={"Authorization": "Bearer key-alice"}).json()
    assert state["turn"] == 1, "the thread continues from the first message's checkpoint"
    page.wait_for_selector("table.log td:has-text('fork')")
    assert checkpoint


ANSWER = "您好，我是客服小王。请问还有什么问题？"  # full-width comma, full stop and question mark


def test_an_agent_answers_in_chinese_and_the_customer_reads_it_signed_and_as_typed(desk: str) -> None:
    """Issue 43: the handoff box follows the thread live (a handoff, a take, a release made elsewhere: no
    reload); the agent's answer is shown as theirs, by name, and reaches the customer's transcript exactly as
    typed."""
    sync_playwright = _browser_or_skip()
    base = desk
    say(base, "c1", "Where is my order ORD-10134?")
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        browser = pw.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        try:
            page = browser.new_page()
            page.goto(f"{base}/desk/login")
            page.fill("input[name=key]", "key-alice")
            page.click("form.login button")
            page.wait_for_url(f"{base}/")
            page.goto(f"{base}/desk/threads/c1")
            page.wait_for_selector("#live.on")
            assert page.locator("#handoff-box").is_hidden(), "the bot has the thread: nothing to take"
            page.evaluate("window.samePage = 1")  # gone if the page reloads
            assert say(base, "c1", "I want a human")["waiting_for_human"]
            page.wait_for_selector("#handoff-box .badge.waiting", timeout=15_000)  # appears without a reload
            page.locator("#handoff-box").get_by_role("button", name="Take").click()
            page.wait_for_selector("#handoff-box .badge.waiting:has-text('alice')", timeout=15_000)
            page.locator("#handoff-box").get_by_role("button", name="Release to the bot").click()  # not held yet
            page.wait_for_selector("#notice:not(.ok):has-text('is not held by a human')")
            assert "GET /handoffs" in page.locator("#notice").inner_text(), "the error's message and hint"
            page.fill("form.answer textarea", ANSWER)
            page.click("form.answer button")
            mine = page.locator("#transcript .msg.by-human").last
            mine.wait_for(timeout=20_000)
            assert mine.locator(".text").inner_text() == ANSWER
            assert mine.locator(".role").inner_text() == "alice (human) · turn 2"
            bot = page.locator("#transcript .msg.by-bot .role").last.inner_text()
            assert bot == "bot · turn 2", "the bot's handoff notice answers the same message"
            page.wait_for_selector("#handoff-box .badge.held")
            released = httpx.post(f"{base}/handoffs/c1/release", headers={"Authorization": "Bearer key-alice"})
            assert released.status_code == 200, released.text  # from elsewhere: another tab, a script
            page.wait_for_selector("#handoff-box", state="hidden", timeout=15_000)
            assert page.locator("#handoff .badge.bot").count() == 1
            assert page.evaluate("window.samePage") == 1, "the page followed the release without a reload"
        finally:
            browser.close()
    shown = httpx.get(f"{base}/threads/c1/transcript", headers=CUSTOMER).json()["messages"]
    answer = [m for m in shown if m["author"] == "human"]
    assert [(m["author_name"], m["content"], m["turn"]) for m in answer] == [("alice", ANSWER, 2)]
    assert not say(base, "c1", "Where is my order ORD-10134?")["waiting_for_human"], "released: the bot answers"
