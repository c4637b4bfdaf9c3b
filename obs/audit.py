"""The audit log: every model input and output and every tool call, in SQLite in the data dir.

Spans say how long things took; the audit log keeps what was said, so a bad answer can be traced back to
the exact context the model saw. Rows carry thread, turn and trace id (filled from ``message_span``'s scope
when the caller does not pass them), so ``harness trace`` and the audit rows of one message line up.

Personal data is masked before a row is written (``Redactor``: phone numbers, also national ones of the
``PHONE_REGIONS`` read with Google's libphonenumber, emails (spelled out, spaced out, internationalised), street
addresses in English (lower case too) and Chinese, card numbers in any grouping by Luhn's check, IBANs by their
mod-97 check, national ids; the formats are listed in ``PII_FORMATS``; ids are never rewritten, see
``redact_value``): the audit file never holds the original,
encrypted or not, so a copied data dir or a leaked backup exposes no contact details. ``export`` applies the
redactor again on the way out (a custom one may mask more). ``stats`` turns the log
into the handful of numbers that say whether a deployment is healthy, each flagged against a threshold.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lg_harness.obs.outcomes import HARNESS_STOPS, call_outcome  # noqa: F401 - re-exported
from lg_harness.obs.tracing import current_message, current_trace_id, outcome_dict, total_ms

AUDIT_FILE = "audit.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    thread_id TEXT,
    turn INTEGER,
    trace_id TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('model', 'tool')),
    name TEXT,
    input TEXT,
    output TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    duration_ms REAL,
    status TEXT NOT NULL,
    error_type TEXT
);
CREATE INDEX IF NOT EXISTS calls_by_message ON calls (thread_id, turn);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    turn INTEGER NOT NULL,
    trace_id TEXT,
    completed INTEGER NOT NULL,
    rounds INTEGER,
    latency_ms REAL,
    input_tokens INTEGER
);
CREATE INDEX IF NOT EXISTS messages_by_thread ON messages (thread_id, turn);
CREATE TABLE IF NOT EXISTS desk_actions (
    id INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    agent TEXT NOT NULL,
    action TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS desk_actions_by_thread ON desk_actions (thread_id, id);
"""

# ------------------------------------------------------------------------------------------ redaction

Redactor = Callable[[str], str]

_EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
# Written out to dodge scrapers: "john dot doe at example dot com", "john [at] example [dot] com", "艾特".
_AT = r"(?:\s*(?:\[at\]|\(at\)|\{at\}|艾特)\s*|\s+at\s+)"
_DOT = r"(?:\s*(?:\[dot\]|\(dot\)|\{dot\}|点)\s*|\s+dot\s+|\.)"
_SPELLED_EMAIL = (rf"\b[A-Za-z0-9_%+-]+(?:{_DOT}[A-Za-z0-9_%+-]+)*{_AT}[A-Za-z0-9-]+(?:{_DOT}[A-Za-z0-9-]+)*"
                  rf"{_DOT}(?:com|net|org|edu|gov|io|info|biz|me|cn|uk|de|fr|jp|us|ca|au|co)\b")
# Internationalised addresses (josé@exämple.com, 用户@例子.中国): any script's letters. Run after the ASCII rule
# has masked the rest, so a Chinese word glued before an ASCII address is not taken with it.
_IDN_EMAIL = r"[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.(?:[A-Za-z]{2,}|[^\W\d_A-Za-z]{2,})"
# Spaced to dodge scrapers: "john @ example . com", "j o h n @ e x a m p l e . c o m". Each part is a word or
# single characters one space apart, so a sentence before it is not swallowed; the top-level domain must be a
# known one ("meet @ 5 pm. me too" is no address).
_SPACED_LOCAL = r"(?:[\w%+-](?: [\w.%+-])+|[\w.%+-]+)"
_SPACED_LABEL = r"(?:[\w-](?: [\w-])+|[\w-]+)"  # no dot inside a label: one way to split "a.b.c", no backtracking
_SPACED_TLD = "|".join(" ?".join(tld) for tld in (
    "com", "net", "org", "edu", "gov", "io", "info", "biz", "me", "cn", "uk", "de", "fr", "jp", "us", "ca", "au", "co"))
_SPACED_EMAIL = rf"(?<![\w.%+-]){_SPACED_LOCAL} ?@ ?(?:{_SPACED_LABEL} ?\. ?)+(?:{_SPACED_TLD})(?!\w)"
# Digits glued to letters or other digits are ids (ORD-10134, SKU codes, timestamps), not phone numbers;
# only ASCII counts as glue because Chinese text runs straight into numbers ("手机13812345678").
_PHONE = (r"(?<![0-9A-Za-z])(?:"
          r"(?:\+?86[\s-]?)?1[3-9]\d[\s-]?\d{4}[\s-]?\d{4}"  # Chinese mobile
          r"|0\d{2,3}[\s-]?\d{3,4}[\s-]?\d{4}"  # Chinese landline with area code (021-6888 8888)
          r"|(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}"  # North American, with separators
          r"|\+\d{1,3}(?:[\s.-]?\d{2,4}){2,5}"  # any other international number written with +
          r"|[2-9]\d{9}"  # North American, ten digits run together (5551234567)
          r")(?![0-9A-Za-z])")
# The street type must be capitalised: lower-case "way", "road" or "drive" after a number is everyday speech.
_EN_SUFFIX = ("Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
              "Parkway|Pkwy|Highway|Hwy|Circle|Cir|Square|Sq|Alley|Crescent|Close")
_EN_ADDRESS = (rf"\b\d{{1,6}}[A-Za-z]?\s+(?:[A-Za-z][A-Za-z'.-]*\s+){{1,4}}(?:{_EN_SUFFIX}|{_EN_SUFFIX.upper()})\b"
               r"(?:,?\s*(?:Apt|Apartment|Suite|Ste|Unit|Floor|Fl|#)\.?\s*#?\w+)?"
               r"(?:,\s*[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)*,?\s+[A-Z]{2}\s+\d{5}(?:-\d{4})?)?"  # city, ST 12345
               r"|\bP\.?\s?O\.?\s+Box\s+\d+")
# In lower case ("221b baker street") only street types no everyday phrase ends in, and a name with none of the
# words that make "3 blocks down the street" or "2 hours on the road" a sentence.
_EN_LOWER_ADDRESS = re.compile(r"\b\d{1,6}[a-z]?\s+((?:[a-z][a-z'.-]*\s+){1,3})(?:street|st|avenue|ave|road|rd|"
                               r"boulevard|blvd|lane|ln|terrace|crescent|parkway|pkwy|highway|hwy|alley)\b\.?"
                               r"(?:,?\s*(?:apt|apartment|suite|ste|unit|flat)\.?\s*#?\w+)?", re.I)
_NOT_A_STREET_NAME = frozenset({
    "the", "a", "an", "of", "on", "in", "at", "to", "from", "down", "up", "across", "along", "by", "for",
    "and", "or", "my", "your", "our", "their", "his", "her", "its", "this", "that", "these", "those",
    "more", "other", "few", "many", "minute", "minutes", "min", "mins", "hour", "hours", "hr", "hrs",
    "mile", "miles", "mi", "km", "kilometres", "kilometers", "metres", "meters", "block", "blocks", "step",
    "steps", "lane", "lanes", "day", "days", "week", "weeks", "year", "years", "time", "times", "way",
    "ways", "car", "cars", "people", "is", "are", "was", "were"})
# A Chinese address is anchored on "<road> <number> 号"; province, city and district are optional in front.
# Function words (到, 寄, 在, 我...) cannot start or fill a place name, so "请寄到上海市..." keeps "请寄到".
_ZH = r"(?:(?![的是在到寄送往至住址我你他她请把给从])[\u4e00-\u9fff])"
_ZH_NUM = r"[0-9０-９一二三四五六七八九十百千零〇-]+"
_ZH_ADDRESS = (rf"(?:{_ZH}{{2,7}}(?:省|自治区))?(?:{_ZH}{{2,7}}市)?(?:{_ZH}{{1,7}}(?:区|县|旗))?"
               rf"(?:{_ZH}{{1,8}}(?:镇|乡|街道))?{_ZH}{{1,12}}?(?:路|街|大道|道|巷|弄|胡同)\s*{_ZH_NUM}\s*[号號]"
               r"(?:\s*[0-9A-Za-z０-９\u4e00-\u9fff-]{0,10}?(?:室|楼|栋|幢|单元|层|座))*")

# Chinese resident id (18 characters, birth date inside) and payment card numbers written in groups of four.
_ID_NUMBER = r"(?<![0-9A-Za-z])[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])"
_CARD = r"(?<![0-9A-Za-z])\d{4}(?:[\s-]\d{4}){3}(?:[\s-]\d{1,3})?(?![0-9A-Za-z])"
# Any other card number: 13 to 19 digits in any grouping (Amex 4-6-5, run together, dashes) that pass Luhn's check.
_CARD_DIGITS = re.compile(r"(?<![0-9A-Za-z.+])\d(?:[ -]?\d){12,18}(?![0-9A-Za-z])")
# US social security number (no 000, 666 or 9xx area) and UK National Insurance number.
_SSN = r"(?<![0-9A-Za-z-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![0-9A-Za-z-])"
_NINO = (r"(?<![0-9A-Za-z])(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
         r"\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D](?![0-9A-Za-z])")
# IBAN: country, check digits, then up to 30 letters and digits, in groups of four or run together (mod-97 checked).
_IBAN = re.compile(r"(?<![0-9A-Za-z])[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,3})?(?![0-9A-Za-z])")
# The regions whose national phone numbers (no +, a trunk 0) the default redactor reads with ``phonenumbers``.
PHONE_REGIONS = ("US", "CN", "GB", "DE")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_PHONE_RUN = re.compile(r"[+(]?\d[\d ()./-]{5,}\d")  # a stretch that could be a phone number


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def card_spans(text: str) -> list[tuple[int, int]]:
    """Payment card numbers in any grouping: 13-19 digits that pass the Luhn check."""
    return [m.span() for m in _CARD_DIGITS.finditer(text) if luhn_ok(re.sub(r"\D", "", m.group()))]


# Card numbers written with dots (4111.1111.1111.1111, Amex 3782.822463.10005), Luhn-checked like the rest;
# only these groupings, so a version or a decimal is not read as one.
_CARD_DOTTED = re.compile(r"(?<![0-9A-Za-z.])(?:\d{4}(?:\.\d{4}){3}(?:\.\d{1,3})?|\d{4}\.\d{6}\.\d{5})"
                          r"(?![0-9A-Za-z]|\.\d)")


def dotted_card_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _CARD_DOTTED.finditer(text) if luhn_ok(m.group().replace(".", ""))] \
        if "." in text else []


def lower_address_spans(text: str) -> list[tuple[int, int]]:
    """Street addresses written in lower case (``_EN_LOWER_ADDRESS``), everyday phrases left out."""
    spans, pos = [], 0
    while (m := _EN_LOWER_ADDRESS.search(text, pos)) is not None:
        if set(m.group(1).lower().split()) & _NOT_A_STREET_NAME:
            pos = m.start() + 1  # a later number may start a real address inside this phrase
            continue
        spans.append(m.span())
        pos = m.end()
    return spans


def iban_spans(text: str) -> list[tuple[int, int]]:
    """International bank account numbers whose mod-97 check holds."""
    found = []
    for m in _IBAN.finditer(text):
        raw = m.group().replace(" ", "")
        number = "".join(str(int(c, 36)) for c in raw[4:] + raw[:4])
        if 15 <= len(raw) <= 34 and int(number) % 97 == 1:
            found.append(m.span())
    return found


@functools.lru_cache(maxsize=4096)
def _phones_in(window: str, regions: tuple[str, ...]) -> frozenset[tuple[int, int]]:
    import phonenumbers

    return frozenset((m.start, m.end) for region in regions
                     for m in phonenumbers.PhoneNumberMatcher(window, region, leniency=phonenumbers.Leniency.VALID))


_DIGITS = re.compile(r"\d+")
_WORD_BEFORE = re.compile(r"[A-Za-z]+$")
_WORD_AFTER = re.compile(r"[A-Za-z]+")
# The labels libphonenumber reads as "an extension follows" ("0151 23456789 ext1234", "4155550132x12"): digits
# next to one may be a number with its extension, so they are never skipped.
_LABELS = r"(?:x|xtn?|extn?|extensions?|anexo|int)"
_ENDS_IN_LABEL = re.compile(_LABELS + "$", re.I)
_STARTS_WITH_LABEL = re.compile(_LABELS, re.I)


def glued_to_a_word(text: str, start: int, end: int) -> bool:
    """Digits only, glued to a Latin word right before or right after them that is no extension label:
    libphonenumber at ``Leniency.VALID`` never takes a number touching a Latin letter ("abc8005001234",
    "8005001234def", a tracking number "YT331190068578", a call id "call_14828990dd24e5"), and a run of digits
    alone offers it no shorter candidate, so the matcher need not be asked (a few ms for each new tool result
    or call id). Next to an extension label they are asked: "13812345678ext020" is a number and its extension."""
    if not _DIGITS.fullmatch(text, start, end):
        return False
    before = _WORD_BEFORE.search(text, 0, start)
    if before is not None and not _ENDS_IN_LABEL.search(before.group()):
        return True
    after = _WORD_AFTER.match(text, end)
    return after is not None and not _STARTS_WITH_LABEL.match(after.group())


def phone_spans(text: str, regions: Sequence[str] = PHONE_REGIONS, *, shortcut: bool = True) -> list[tuple[int, int]]:
    """Valid phone numbers of ``regions`` as Google's libphonenumber reads them (``phonenumbers``): national
    forms such as 020 7946 0958 or 0151 23456789, 00-prefixed international ones; spans merged across regions.
    ``shortcut=False`` asks the matcher about digits glued to a word too: slower, and it can only add spans
    where a window cut a longer run ("...0958:13812345678" read without the "YT" after it), never a number
    the matcher finds on the whole text (``tests/test_privacy.py``)."""
    spans = set()
    # The matcher is slow on long text: give it only the stretches that could be a number, with some context
    # (a conversation repeats the same ones, so each window is read once).
    for run in _PHONE_RUN.finditer(text):
        if sum(c.isdigit() for c in run.group()) < 7 or _ISO_DATE.fullmatch(run.group()):
            continue
        if shortcut and glued_to_a_word(text, run.start(), run.end()):
            continue
        lo = max(run.start() - 12, 0)
        spans |= {(lo + start, lo + end) for start, end in _phones_in(text[lo:run.end() + 12], tuple(regions))}
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


# A rule finds spans: a compiled pattern (its matches) or a function of the text (checked numbers).
Rule = re.Pattern[str] | Callable[[str], list[tuple[int, int]]]


def _guarded(pattern: re.Pattern[str], may_match: Callable[[str], Any]) -> Callable[[str], list[tuple[int, int]]]:
    """``pattern``'s matches, searched for only when ``may_match`` finds what every match must contain (the
    two slowest patterns, on text that mostly has none of it: every model call's prompt is masked)."""

    def spans(text: str) -> list[tuple[int, int]]:
        return [m.span() for m in pattern.finditer(text)] if may_match(text) else []

    return spans


def _near_at(pattern: re.Pattern[str], reach: int = 300) -> Callable[[str], list[tuple[int, int]]]:
    """``pattern``'s matches within ``reach`` of an "@": an address is short, and a pattern that may start at
    any word of a long text would try each one to its end (seconds on a long prompt)."""

    def spans(text: str) -> list[tuple[int, int]]:
        windows: list[list[int]] = []
        for at in (i for i, c in enumerate(text) if c == "@"):
            if windows and at - reach <= windows[-1][1]:
                windows[-1][1] = at + reach
            else:
                windows.append([max(at - reach, 0), at + reach])
        return [m.span() for lo, hi in windows for m in pattern.finditer(text, lo, min(hi, len(text)))]

    return spans


# Digits joined by "-" or "_" to a word are an identifier's tail or head ("order-4155550123", "t_13812345678",
# "4155550123-b"): a thread or message id a client chose, which a masked copy must name unchanged. A phone
# label joined the same way ("tel-4155550123") is still a number.
_JOINED_BEFORE = re.compile(r"(?<![0-9A-Za-z])([A-Za-z][A-Za-z0-9]*)[-_]$")
_JOINED_AFTER = re.compile(r"[-_][A-Za-z]")
_PHONE_LABELS = frozenset({"tel", "phone", "mobile", "mob", "cell", "fax", "ph", "sms", "whatsapp", "handy"})


def joined_to_an_id(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is the digit part of an identifier such as ``order-4155550123`` (an id is
    one token: a number with blanks in it is a number, whatever it follows)."""
    if any(c.isspace() for c in text[start:end]):
        return False
    before = _JOINED_BEFORE.search(text, max(start - 40, 0), start)
    if before is not None and before.group(1).lower() not in _PHONE_LABELS:
        return True
    return _JOINED_AFTER.match(text, end) is not None


def _phone_outside_ids(rule: Rule) -> Callable[[str], list[tuple[int, int]]]:
    def spans(text: str) -> list[tuple[int, int]]:
        found = rule(text) if callable(rule) else [m.span() for m in rule.finditer(text)]
        return [(a, b) for a, b in found if not joined_to_an_id(text, a, b)]

    return spans


DEFAULT_RULES: tuple[tuple[str, Rule], ...] = (
    ("email", re.compile(_EMAIL)),  # first: an email's digits must not be read as a phone number
    ("email", _guarded(re.compile(_SPELLED_EMAIL, re.I), re.compile(_AT, re.I).search)),
    ("email", _near_at(re.compile(_IDN_EMAIL))),
    ("email", _near_at(re.compile(_SPACED_EMAIL, re.I))),
    ("iban", iban_spans),
    ("id_number", re.compile(_ID_NUMBER)),
    ("id_number", re.compile(_SSN)),
    ("id_number", re.compile(_NINO)),
    ("card", re.compile(_CARD)),
    ("card", card_spans),
    ("card", dotted_card_spans),
    ("phone", _phone_outside_ids(re.compile(_PHONE))),
    ("phone", _phone_outside_ids(phone_spans)),
    ("address", re.compile(_EN_ADDRESS)),
    ("address", lower_address_spans),
    ("address", _guarded(re.compile(_ZH_ADDRESS), lambda text: "号" in text or "號" in text)),
)


# Every format the default redactor masks, with an example of each; tests/test_privacy.py checks each one, and
# that identifiers (ORD-10134, INC0012346, SKU codes, prices, dates) are left alone.
PII_FORMATS: tuple[tuple[str, str, str], ...] = (
    ("email", "plain address", "write to john.doe@example.com"),
    ("email", "spelled out", "john dot doe at example dot com"),
    ("email", "bracketed", "john [at] example [dot] com"),
    ("email", "full-width characters", "ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ"),
    ("email", "Chinese spelled out", "邮箱 zhang艾特qq点com"),
    ("email", "internationalised (accented)", "write to josé@exämple.com"),
    ("email", "internationalised (Chinese)", "邮箱 用户@例子.中国"),
    ("email", "spaced out letter by letter", "j o h n @ e x a m p l e . c o m"),
    ("email", "spaced around @ and dot", "mail john @ example . com"),
    ("phone", "North American with dashes", "call 555-123-4567"),
    ("phone", "North American with brackets", "(555) 123-4567"),
    ("phone", "North American, ten digits together", "call me on 5551234567"),
    ("phone", "North American with dots", "555.123.4567"),
    ("phone", "international with +", "+44 20 7946 0958"),
    ("phone", "Chinese mobile", "手机13812345678"),
    ("phone", "Chinese mobile with spaces", "138 1234 5678"),
    ("phone", "Chinese mobile with +86", "+86 138-1234-5678"),
    ("phone", "Chinese mobile, full-width digits", "手机：１３８１２３４５６７８"),
    ("phone", "Chinese landline", "010-12345678"),
    ("phone", "Chinese landline with a space", "电话 021-6888 8888"),
    ("address", "English street address", "12 Main Street, Springfield, IL 62701"),
    ("address", "English PO box", "P.O. Box 1234"),
    ("address", "English street address in lower case", "I live at 221b baker street"),
    ("address", "Chinese address", "上海市浦东新区世纪大道100号"),
    ("address", "Chinese address, full-width digits", "北京市朝阳区建国路８８号"),
    ("id_number", "Chinese resident id", "身份证 110105199003071234"),
    ("id_number", "US social security number", "SSN 123-45-6789"),
    ("id_number", "UK National Insurance number", "NI number AB 12 34 56 C"),
    ("card", "payment card in groups of four", "card 4111 1111 1111 1111"),
    ("card", "payment card, digits together", "card 4111111111111111"),
    ("card", "payment card with dashes", "5555-5555-5555-4444"),
    ("card", "payment card with dots", "card 4111.1111.1111.1111"),
    ("card", "American Express in groups of 4-6-5", "Amex 3782 822463 10005"),
    ("card", "American Express, digits together", "378282246310005"),
    ("phone", "UK national", "ring 020 7946 0958"),
    ("phone", "UK mobile", "mobile 07700 900123"),
    ("phone", "German national", "Tel. 030 12345678"),
    ("phone", "German mobile", "Handy 0151 23456789"),
    ("phone", "international with 00", "0049 30 12345678"),
    ("iban", "German IBAN", "IBAN DE89 3704 0044 0532 0130 00"),
    ("iban", "UK IBAN, run together", "GB82WEST12345698765432"),
)

# Full-width ASCII (U+FF01-FF5E) and the ideographic space read as their ASCII twins, one character for one,
# so a match found in the folded text masks the same span of the original.
_FOLD = {**{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}, 0x3000: 0x20}


class RegexRedactor:
    """A ``Redactor`` replacing each rule's matches with ``[label]``, rules applied in order.

    Rules match the text with full-width characters folded to ASCII ("１３８…", "＠"), so a number or address
    typed on a Chinese keyboard is masked like its ASCII form; text outside the matches keeps its characters.
    """

    def __init__(self, rules: Iterable[tuple[str, Rule]] = DEFAULT_RULES) -> None:
        self.rules = tuple(rules)

    def __call__(self, text: str) -> str:
        folded = text.translate(_FOLD)
        for label, rule in self.rules:
            spans = rule(folded) if callable(rule) else [m.span() for m in rule.finditer(folded)]
            for start, end in reversed(spans):
                text = f"{text[:start]}[{label}]{text[end:]}"
            if spans:  # folded again only when a rule masked something
                folded = text.translate(_FOLD)
        return text


default_redactor: Redactor = RegexRedactor()


# Identifiers someone follows back (GET /threads/{thread_id}, a ticket, an order, a ledger key): a masked copy
# must name the same thing, so the values under these keys are never rewritten, whatever digits they hold.
ID_KEYS = frozenset({"id", "ids", "key", "user", "owner", "ticket", "checkpoint", "sku"})
_ID_SUFFIXES = ("_id", "_ids", "_key", "Id")
_SHIELD = 0xE000  # private-use characters stand in for ids while the redactor reads the text around them


def is_id_key(key: Any) -> bool:
    return isinstance(key, str) and (key.lower() in ID_KEYS or key.endswith(_ID_SUFFIXES))


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def id_values(value: Any) -> set[str]:
    """Every string under an id key inside a JSON-like value."""
    found: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if is_id_key(k) and _is_id(v):
                found.update([v] if isinstance(v, str) else v)
            else:
                found |= id_values(v)
    elif isinstance(value, list):
        for v in value:
            found |= id_values(v)
    return found


def _around_ids(redactor: Redactor, ids: Iterable[str]) -> Redactor:
    """``redactor`` that leaves each of ``ids`` as it is where a text quotes it (as a whole token)."""
    names = sorted(ids, key=len, reverse=True)[:6400]
    pattern = re.compile("|".join(rf"(?<![0-9A-Za-z]){re.escape(i)}(?![0-9A-Za-z])" for i in names))

    def mask(text: str) -> str:
        if any(_SHIELD <= ord(c) < _SHIELD + len(names) for c in text):
            return redactor(text)  # the text uses the stand-ins itself: no shield
        hidden: list[str] = []
        text = pattern.sub(lambda m: hidden.append(m.group()) or chr(_SHIELD + len(hidden) - 1), text)
        masked = redactor(text)
        return "".join(hidden[ord(c) - _SHIELD] if _SHIELD <= ord(c) < _SHIELD + len(hidden) else c
                       for c in masked) if hidden else masked

    return mask


def redact_value(value: Any, redactor: Redactor, *, keep: Iterable[str] = ()) -> Any:
    """Apply ``redactor`` to every string inside a JSON-like value (dict keys stay as they are).

    Identifiers pass untouched: the values under id keys (``ID_KEYS``, ``*_id``, ``*_key``) and, where another
    string quotes one of them or one of ``keep`` ("thread 4155550123 is busy"), that id in the text; the
    personal data around them is masked."""
    ids = {i for i in (*keep, *id_values(value)) if len(i) >= 4 and redactor(i) != i}
    return _redacted(value, _around_ids(redactor, ids) if ids else redactor)


def _redacted(value: Any, mask: Redactor) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: v if is_id_key(k) and _is_id(v) else _redacted(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v, mask) for v in value]
    return value


# ---------------------------------------------------------------------------------------- serialising


def _message_dict(message: Any) -> dict[str, Any]:
    data = {"type": message.type, "content": to_jsonable(message.content)}
    for attr in ("name", "tool_calls", "tool_call_id", "status"):
        value = getattr(message, attr, None)
        if value:
            data[attr] = to_jsonable(value)
    return data


def to_jsonable(value: Any) -> Any:
    """A JSON-ready copy: LangChain messages as ``{type, content, tool_calls...}``, dataclasses and pydantic
    models as dicts, anything else unknown as its ``str``."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "type") and hasattr(value, "content"):  # a LangChain message, without importing it
        return _message_dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if callable(dump := getattr(value, "model_dump", None)):
        return to_jsonable(dump())
    return str(value)


def _dump(value: Any) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# --------------------------------------------------------------------------------------------- stats


@dataclass(frozen=True)
class Thresholds:
    """Where each audit statistic starts to be a problem."""

    token_budget: int = 4096  # input tokens a message may use; flagged above token_budget_share of it
    token_budget_share: float = 0.8
    tool_failure_rate: float = 0.10
    model_calls_per_message: float = 10.0
    task_completion: float = 0.85  # flagged below
    p99_latency_s: float = 30.0


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class StatRow:
    """One statistic: its value (None without data), the threshold, and whether it crosses it.

    ``rule`` is ``">"`` (flagged above the threshold) or ``"<"`` (flagged below); ``unit`` is one of
    ``tokens``, ``ratio``, ``calls``, ``s``.
    """

    metric: str
    value: float | None
    threshold: float
    flagged: bool
    rule: str = ">"
    unit: str = ""


def _row(metric: str, value: float | None, threshold: float, rule: str, unit: str) -> StatRow:
    crossed = value is not None and (value > threshold if rule == ">" else value < threshold)
    return StatRow(metric, value, threshold, crossed, rule, unit)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def p99(values: Sequence[float]) -> float | None:
    """The 99th percentile by nearest rank (with under 100 values, the largest)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(0.99 * len(ordered)) - 1, 0)]


# ----------------------------------------------------------------------------------------- audit log


class AuditLog:
    """Model and tool calls, and one row per user message, in one SQLite file; safe across threads.

    Example:
        audit = AuditLog.in_dir(data_dir)
        audit.record_model("sim", messages, reply, duration_ms=812.0)     # inside message_span: scope filled
        rows = audit.export(thread_id="t1")                                # redacted
    """

    def __init__(self, path: str | Path, redactor: Redactor = default_redactor) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.redactor = redactor
        self._lock = threading.Lock()
        # Tool calls may be recorded from executor threads; the lock serialises use of the one connection.
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._conn.row_factory = sqlite3.Row
        with self._lock, self._conn:
            self._conn.execute("PRAGMA journal_mode=WAL")  # the CLI reads while another process writes
            self._conn.execute("PRAGMA synchronous=NORMAL")  # a commit per call: see graphs.storage
            self._conn.executescript(_SCHEMA)

    @classmethod
    def in_dir(cls, data_dir: str | Path, redactor: Redactor = default_redactor) -> AuditLog:
        """The audit log of a data dir: ``<data dir>/audit.sqlite``."""
        return cls(Path(data_dir) / AUDIT_FILE, redactor)

    def warm(self) -> None:
        """Run the redactor once on every documented format (a harness opening, not a customer's message):
        libphonenumber compiles its per-region patterns on first use, 2-3 ms each."""
        for _, _, example in PII_FORMATS:
            self.redactor(example)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing

    @staticmethod
    def _scope(thread_id: str | None, turn: int | None, trace_id: str | None) -> tuple[str | None, int | None,
                                                                                       str | None]:
        scope = current_message()
        if scope is not None:
            thread_id = scope.thread_id if thread_id is None else thread_id
            turn = scope.turn if turn is None else turn
        return thread_id, turn, trace_id or current_trace_id()

    def _masked(self, value: Any) -> str:
        """The JSON text to store: personal data masked before it reaches the disk (no original is kept)."""
        return json.dumps(redact_value(to_jsonable(value), self._redact_text), ensure_ascii=False)

    @functools.cached_property
    def _redact_text(self) -> Redactor:
        # Each model call's input repeats the conversation so far: every string is masked once, not per call
        # (a redactor is a function of the text).
        return functools.lru_cache(maxsize=16384)(self.redactor)

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._lock, self._conn:
            cur = self._conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(row.values()))
        return int(cur.lastrowid or 0)

    def record_model(self, name: str, input: Any, output: Any, *, input_tokens: int | None = None,
                     output_tokens: int | None = None, duration_ms: float = 0.0, status: str = "ok",
                     error_type: str | None = None, thread_id: str | None = None, turn: int | None = None,
                     trace_id: str | None = None) -> int:
        """Store one model call.

        Args:
            name: The model's name.
            input: What the model was sent (messages, and the offered tool names if useful).
            output: Its reply (an ``AIMessage``), or None when the call failed.
            input_tokens: Defaults to the reply's ``usage_metadata``.
            output_tokens: Defaults to the reply's ``usage_metadata``.
            duration_ms: Wall time of the call.
            status: ``ok`` or ``error``.
            error_type: The original exception class on failure.
            thread_id: Defaults to the enclosing ``message_span``'s thread.
            turn: Defaults to the enclosing ``message_span``'s turn.
            trace_id: Defaults to the current trace.

        Returns:
            The row id.
        """
        usage = getattr(output, "usage_metadata", None) or {}
        thread_id, turn, trace_id = self._scope(thread_id, turn, trace_id)
        return self._insert("calls", {
            "ts": _now(), "thread_id": thread_id, "turn": turn, "trace_id": trace_id, "kind": "model",
            "name": name, "input": self._masked(input), "output": self._masked(output),
            "input_tokens": int(input_tokens if input_tokens is not None else usage.get("input_tokens", 0)),
            "output_tokens": int(output_tokens if output_tokens is not None else usage.get("output_tokens", 0)),
            "duration_ms": float(duration_ms), "status": status, "error_type": error_type})

    def record_tool(self, name: str, input: Any, output: Any, *, duration_ms: float = 0.0, status: str = "ok",
                    error_type: str | None = None, thread_id: str | None = None, turn: int | None = None,
                    trace_id: str | None = None) -> int:
        """Store one tool call: ``input`` its arguments, ``output`` its result or error; scope as in
        ``record_model``. Returns the row id."""
        thread_id, turn, trace_id = self._scope(thread_id, turn, trace_id)
        return self._insert("calls", {
            "ts": _now(), "thread_id": thread_id, "turn": turn, "trace_id": trace_id, "kind": "tool",
            "name": name, "input": self._masked(input), "output": self._masked(output), "input_tokens": None,
            "output_tokens": None, "duration_ms": float(duration_ms), "status": status, "error_type": error_type})

    def record_tool_outcome(self, outcome: Any, result: Any = None, **scope: Any) -> int:
        """Store a ``ToolOutcome`` (or its record dict): the original exception class as ``error_type``.

        ``ToolOutcome.record()`` drops the result, so pass ``result`` (or the outcome object itself, whose
        ``result`` is read) to keep what the tool returned.
        """
        data = outcome_dict(outcome)
        status = call_outcome(data.get("status"), data.get("error_type"))
        ok = status == "ok"
        if ok:
            output = result if result is not None else getattr(outcome, "result", data.get("result"))
        else:
            # The log record cuts the error short; the audit keeps the outcome's full message.
            message = getattr(outcome, "error", None) or data.get("error")
            output = {"error": {"type": data.get("error_type"), "class": data.get("exception"), "message": message}}
        return self.record_tool(data.get("name") or "", data.get("args") or {}, output,
                                duration_ms=total_ms(data.get("timings_ms") or {}), status=status,
                                error_type=None if ok else (data.get("exception") or data.get("error_type")), **scope)

    def record_message(self, thread_id: str, turn: int, completed: bool, rounds: int, latency_ms: float,
                       input_tokens: int, *, trace_id: str | None = None) -> int:
        """Store the outcome of one user message (one row per message; a later row for it wins)."""
        return self._insert("messages", {
            "ts": _now(), "thread_id": thread_id, "turn": int(turn), "trace_id": trace_id or current_trace_id(),
            "completed": int(bool(completed)), "rounds": int(rounds), "latency_ms": float(latency_ms),
            "input_tokens": int(input_tokens)})

    # -- reading

    MARK = "?"  # the driver's parameter placeholder

    def _select(self, sql: str, thread_id: str | None, kind: str | None = None) -> list[Any]:
        """Run ``sql`` with ``{where}`` filled by the optional thread and call-kind filters."""
        conds, params = [], []
        if thread_id is not None:
            conds.append(f"thread_id = {self.MARK}")
            params.append(thread_id)
        if kind is not None:
            conds.append(f"kind = {self.MARK}")
            params.append(kind)
        where = (" WHERE " + " AND ".join(conds)) if conds else ""
        return self._fetch(sql.format(where=where), params)

    def _fetch(self, sql: str, params: list[Any]) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def export(self, thread_id: str | None = None, redact: bool = True, *,
               redactor: Redactor | None = None) -> list[dict[str, Any]]:
        """Model and tool calls in the order they happened, ``input``/``output`` parsed from JSON.

        Args:
            thread_id: Only this thread's calls; None for all.
            redact: Mask personal data in every string of ``input`` and ``output``.
            redactor: Overrides the log's redactor for this export.
        """
        rows = self._select("SELECT * FROM calls{where} ORDER BY id", thread_id)
        mask = redactor or self.redactor
        out = []
        for row in rows:
            item = dict(row)
            for key in ("input", "output"):
                value = json.loads(item[key]) if item[key] is not None else None
                item[key] = redact_value(value, mask) if redact else value
            out.append(item)
        return out

    def messages(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The per-message rows, oldest first."""
        return [dict(r) for r in self._select("SELECT * FROM messages{where} ORDER BY id", thread_id)]

    def _per_message(self, thread_id: str | None) -> list[dict[str, Any]]:
        """Tokens, model calls, completion and latency per (thread, turn).

        Model-call rows win for tokens and calls (they are what the model really read); a message without
        any falls back to the figures its ``record_message`` row carries.
        """
        merged: dict[tuple[Any, Any], dict[str, Any]] = {}
        for m in self.messages(thread_id):  # later rows for the same message overwrite earlier ones
            merged[(m["thread_id"], m["turn"])] = {"input_tokens": m["input_tokens"] or 0, "calls": m["rounds"] or 0,
                                                   "completed": bool(m["completed"]), "latency_ms": m["latency_ms"]}
        sql = ("SELECT thread_id, turn, SUM(input_tokens) AS tokens, COUNT(*) AS calls FROM calls{where}"
               " GROUP BY thread_id, turn")
        model_rows = self._select(sql, thread_id, kind="model")
        for r in model_rows:
            if r["thread_id"] is None and r["turn"] is None:
                continue  # recorded outside any message: cannot be charged to one
            entry = merged.setdefault((r["thread_id"], r["turn"]), {"completed": None, "latency_ms": None})
            entry.update(input_tokens=r["tokens"] or 0, calls=r["calls"])
        return list(merged.values())

    def _tool_failure_rate(self, thread_id: str | None) -> float | None:
        """Failed calls among those that reached a tool: the harness's own holds and blocks are not failures."""
        sql = ("SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN status = 'error' THEN 1 ELSE 0 END), 0) AS failed"
               " FROM calls{where} AND status NOT IN ('held', 'blocked')")
        row = self._select(sql, thread_id, kind="tool")[0]
        return row["failed"] / row["total"] if row["total"] else None

    def harness_stops(self, thread_id: str | None = None) -> dict[str, Any]:
        """Tool calls the harness held (a change awaiting the customer's yes) or blocked (a repeat, a tool not
        offered, a forbidden one, an invented argument), counted apart from tool failures, with the error
        classes behind them: ``{"held": n, "blocked": n, "by_class": {"DuplicateCall": n, ...}}``."""
        sql = ("SELECT status, COALESCE(error_type, '') AS cls, COUNT(*) AS n FROM calls{where}"
               " AND status IN ('held', 'blocked') GROUP BY status, error_type ORDER BY status, error_type")
        out: dict[str, Any] = {"held": 0, "blocked": 0, "by_class": {}}
        for row in self._select(sql, thread_id, kind="tool"):
            out[row["status"]] += row["n"]
            out["by_class"][row["cls"]] = out["by_class"].get(row["cls"], 0) + row["n"]
        return out

    # -- the desk's actions

    def record_desk(self, agent: str, action: str, thread_id: str, detail: Any = None) -> int:
        """Store one action of a human agent at the desk (take, answer, release, fork) under their identity;
        ``detail`` (an answer's text, a checkpoint id) is masked like every other row."""
        return self._insert("desk_actions", {"ts": _now(), "agent": agent, "action": action, "thread_id": thread_id,
                                             "detail": None if detail is None else self._masked(detail)})

    def desk_actions(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The desk's actions, oldest first, ``detail`` parsed from JSON."""
        rows = self._fetch("SELECT * FROM desk_actions" + (f" WHERE thread_id = {self.MARK}" if thread_id else "")
                           + " ORDER BY id", [thread_id] if thread_id else [])
        return [{**dict(r), "detail": json.loads(r["detail"]) if r["detail"] is not None else None} for r in rows]

    def stats(self, thresholds: Thresholds = DEFAULT_THRESHOLDS, *, token_budget: int | None = None,
              thread_id: str | None = None) -> list[StatRow]:
        """Health figures from the log, each flagged against ``thresholds``.

        Args:
            thresholds: Where each figure becomes a problem.
            token_budget: Overrides ``thresholds.token_budget`` (input tokens per message).
            thread_id: Only this thread; None for the whole log.

        Returns:
            Rows for input tokens per message (mean, max), tool failure rate, model calls per message,
            task completion and p99 latency per message; ``value`` is None where there is no data.
        """
        t = thresholds
        budget = (token_budget or t.token_budget) * t.token_budget_share
        per = self._per_message(thread_id)
        tokens = [float(m["input_tokens"]) for m in per]
        calls = [float(m["calls"]) for m in per]
        done = [m["completed"] for m in per if m["completed"] is not None]
        latency = [m["latency_ms"] / 1000 for m in per if m["latency_ms"] is not None]
        return [
            _row("input tokens / message (mean)", _mean(tokens), budget, ">", "tokens"),
            _row("input tokens / message (max)", max(tokens) if tokens else None, budget, ">", "tokens"),
            _row("tool failure rate", self._tool_failure_rate(thread_id), t.tool_failure_rate, ">", "ratio"),
            _row("model calls / message", _mean(calls), t.model_calls_per_message, ">", "calls"),
            _row("task completion", _mean([float(d) for d in done]), t.task_completion, "<", "ratio"),
            _row("latency p99 / message", p99(latency), t.p99_latency_s, ">", "s"),
        ]
