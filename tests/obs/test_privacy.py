"""Private at rest: the audit log is masked before it is written, by a documented list of formats.

``obs.audit.PII_FORMATS`` is the list the README points to; every entry must be masked with its label, and
the identifiers conversations are made of (order, ticket and product ids, prices, dates) must survive.
"""

from __future__ import annotations

import re
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lg_harness.graphs.app import Harness, Settings
from lg_harness.obs.redact import PHONE_REGIONS, PII_FORMATS, default_redactor, phone_spans
from tests.support import patient_design

DIGITS = re.compile(r"[0-9０-９]")


@pytest.mark.parametrize(("label", "what", "example"), PII_FORMATS, ids=[f"{f[0]}: {f[1]}" for f in PII_FORMATS])
def test_each_documented_format_is_masked(label, what, example):
    masked = default_redactor(example)
    assert f"[{label}]" in masked, masked
    left = masked.replace(f"[{label}]", "")
    assert len(DIGITS.findall(left)) <= 5, masked  # a ZIP code may stay; no number you could call
    if label == "email":
        assert not re.search(r"@|＠|\bdot\b|\[at\]|艾特", left), masked


@pytest.mark.parametrize("text", ["ORD-10134", "SKU P1001-BLK qty 2", "INC0012346", "asset LAPTOP-0042",
                                  "RMA-12", "total 288.49 USD", "2026-12-01T12:00:00", "stock 1234567890",
                                  "I will be there at 5 pm", "look at the rooms", "我的订单 ORD-10001 到哪了",
                                  "tracking YT331190068578", "PIN 123456", "employee E1001", "CMP-12",
                                  "1f1ee076-72bb-6002-8007-b84af4ba418f", "call_67bfe3d0b1ec1e5e57502183",
                                  "elapsed 1796185502.6858938", "qty 100000", "2026-11-01", "price 1234.56 EUR",
                                  "thread order-4155550123", "t_13812345678 is busy", "msg-4155550123-2",
                                  "3 blocks down the street", "a 15 minute drive", "2 hours on the road",
                                  "the 4 lane highway", "meet @ 5 pm. me too", "version 1.2.3.4", "@here at 10 am",
                                  "build 2026.1101.1200.0001", "x@y", "SKU-4155550123",
                                  "card 4111 1111 1111 1112 is not a card".replace("4111 1111 1111 1112", "41111111111111112")])
def test_identifiers_and_everyday_words_are_left_alone(text):
    assert default_redactor(text) == text


@pytest.mark.parametrize(("text", "masked"), [
    ("mail josé@exämple.com today", "mail [email] today"),
    ("邮箱 用户@例子.中国，谢谢", "邮箱 [email]，谢谢"),
    ("it is j o h n @ e x a m p l e . c o m ok", "it is [email] ok"),
    ("write john @ example . com or JOHN @ EXAMPLE . COM", "write [email] or [email]"),
    ("ship to 221b baker street, thanks", "ship to [address], thanks"),
    ("3 blocks down from 12 penny lane", "3 blocks down from [address]"),
    ("charged on 4111.1111.1111.1111 twice", "charged on [card] twice"),
])
def test_the_forms_issue_40_found_are_masked_and_the_words_around_them_stay(text, masked):
    assert default_redactor(text) == masked


# Pieces a shortcut could get wrong: phone numbers, digits glued to letters on either side, the matcher's
# extension labels (x, ext, int, anexo), separators that split a run, and everyday text.
PIECES = st.sampled_from(["020 7946 0958", "0151 23456789", "+49 151 23456789", "13812345678", "(415) 555-0132",
                          "4155550132", "YT", "call_c", "call_", "abc", "def", "dd", "x", "X", "ext", "extn", "int", "anexo", "Ext",
                          " ", "-", "/", ".", ":", "(",
                          ")", "+", "tel", "Tel:", "号", "，", "ORD-", "fad", "99", "7", "2026-11-01", "EUR", "$", "%"])


def _matcher_on_the_whole_text(text: str) -> set[tuple[int, int]]:
    import phonenumbers

    return {(m.start, m.end) for region in PHONE_REGIONS
            for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID)}


def _covered(spans, by) -> bool:
    return all(any(a <= start and end <= b for a, b in by) for start, end in spans)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=8).map("".join))
def test_the_phone_shortcut_masks_every_number_the_matcher_finds(text):
    """Digits glued to a word are skipped without asking libphonenumber. Every number the matcher finds on the
    whole text that the windowed reading masks is still masked (the windowed reading alone can find extra
    "numbers" where a window cuts a longer run, "…0958:13812345678|YT"; the shortcut masks a subset of those)."""
    windowed, fast = phone_spans(text, shortcut=False), phone_spans(text)
    truth = _matcher_on_the_whole_text(text)
    assert _covered({s for s in truth if _covered([s], windowed)}, fast), (text, truth, fast)
    assert _covered(fast, windowed), text


def test_the_audit_file_holds_no_contact_details(tmp_path):
    secrets = ["jane.roe@example.com", "555-123-4567", "13812345678", "12 Main Street"]
    with Harness("sim:clean", design=patient_design(), settings=Settings(data_dir=tmp_path)) as h:
        h.send("p", "Hi, I am Jane, mail jane.roe@example.com, call 555-123-4567 or 13812345678, "
                    "ship to 12 Main Street. Where is my order ORD-10134?", "U001")
    with sqlite3.connect(tmp_path / "audit.sqlite") as conn:
        stored = " ".join(str(v) for row in conn.execute("SELECT input, output FROM calls") for v in row)
    assert "ORD-10134" in stored, "the audit still says what happened"
    for secret in secrets:
        assert secret not in stored


def test_the_http_queue_keeps_no_typed_contact_details_once_a_message_finished(tmp_path):
    """The queue row holds the text only while the message waits or runs (the worker needs it); the transcript
    keeps it for its owner."""
    from lg_harness.service.http import ServiceSettings, Worker

    secrets = ["07700 900123", "jane.roe@example.com", "4111111111111111"]
    rt = Worker(ServiceSettings(data_dir=tmp_path, database_url=None, chroma_url=None, model="sim:clean", threads=1,
                          api_keys={"k": "U001"}))
    try:
        rt.start()
        text = f"my mobile is {secrets[0]}, mail {secrets[1]}, card {secrets[2]}; where is ORD-10134?"
        mid = rt.submit("q", "send", {"text": text, "user_id": "U001", "role": None}, None)
        row = rt.queue.wait(mid, timeout=120)
        assert row["status"] == "done", row
        assert rt.harness.transcripts.read("q")[0]["content"] == text, "the owner's transcript keeps their words"
    finally:
        rt.close()
    with sqlite3.connect(tmp_path / "queue.sqlite") as conn:
        stored = "\n".join(str(v) for r in conn.execute("SELECT * FROM thread_queue").fetchall() for v in r)
        stored += "\n".join(str(r[0]) for r in conn.execute("SELECT event FROM message_events").fetchall())
    assert "ORD-10134" in stored
    for secret in secrets:
        assert secret not in stored, secret
