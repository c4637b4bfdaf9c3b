"""Masking personal data in text and values: what rests in the audit log, the queue, the ledger and the domains'
free text (issue 40's formats included). No tracing or storage here, so a domain's tools can mask what they keep
without loading either.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

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
    the matcher finds on the whole text (``tests/obs/test_privacy.py``)."""
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


# Every format the default redactor masks, with an example of each; tests/obs/test_privacy.py checks each one, and
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


