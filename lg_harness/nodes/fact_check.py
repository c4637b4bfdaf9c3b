"""Do the facts a draft reply states match this message's tool results?

Domain-general: a result is read by its structure (every JSON object is a record with its scalar fields; a
nested object inherits its parents' identifying values, so a product's variant is "Fitness Tracker Band"
and "Black"), and the domain declares only the words that state facts (``Domain.claims``). A sentence is
about the records whose identifying values it mentions (the most of them, own values first); a claim in
it is contradicted when no such record passes the claim's test. Besides declared claims, three kinds of
statement are checked the same way for any domain: ``Label: value`` pairs (the label a result key's
name), amounts stated beside a record, and ISO dates.

What the check does not judge it lets pass: a sentence that quotes a result verbatim, a conditional
("once it is delivered"), a negated phrase the domain did not declare, a claim no record can be tied to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from lg_harness.core.claims import Claim

# Clauses end at a sentence mark followed by a space (not a decimal point), a Chinese mark, ';' or a newline.
_CLAUSE = re.compile(r".+?(?:[.!?](?=\s|$)|[。！？;；]|\n|$)", re.S)
_CJK = re.compile(r"[\u3400-\u9fff]")
_MONEY = re.compile(r"(?:[$€£¥]\s?(\d+(?:\.\d+)?))|(?<![\w.])(\d+\.\d{2})(?![\d])|"
                    r"(?<![\w.])(\d+(?:\.\d+)?)\s?(?:USD|EUR|CNY|RMB|dollars|元)")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?!\d)")  # also the date of a date-time ("2026-10-03T00:39")
_PAIR = re.compile(r"(?:^|[\s(])([A-Za-z][A-Za-z ]{1,28}?)\s*[:：]\s*([^;,；，\n]+)")
# The same statement in a sentence: "the status is shipped", "the refund amount is 78.98 USD".
_IS_PAIR = re.compile(r"\bthe ([a-z][a-z ]{1,28}?) (?:is|was|are) (?!not\b)([^;,\n]+?)(?=[.;,]\s|[.;,]?$| and )", re.I)
# A phrase after one of these is not stated as a fact ("once it is delivered", "if it is in stock").
_CONDITIONAL = re.compile(r"\b(?:once|if|when|until|after|unless|whether|as soon as|can be|could be|will be|"
                          r"would be)\b|如果|一旦|等到|是否|之后", re.I)
_NEGATION = re.compile(r"(?:\bnot|n't|\bno longer|\bnever|不|没|未)\W*(?:\w+\W+)?$", re.I)
_MAX_LABEL = 60


@dataclass
class Record:
    """One object of a tool result: its scalar fields, and the values that identify it and its parents."""

    fields: dict[str, Any]
    own: tuple[str, ...]
    inherited: tuple[str, ...]
    numbers: tuple[float, ...] = ()


@dataclass
class Contradiction:
    """A clause of the draft that a tool result contradicts, and the clause stating what the result says."""

    clause: str
    said: str
    truth: str
    fix: str
    about: tuple[str, ...] = field(default_factory=tuple)

    @property
    def problem(self) -> str:
        subject = " / ".join(self.about) or "the result"
        return f"the answer says '{self.said}' about {subject}, but the tool result says {self.truth}"


def result_of(record: Mapping[str, Any]) -> Any:
    """One tool-log record's parsed result, or None (a call that failed, or a result that cannot be read)."""
    return next(iter(results_of([record])), None)


def results_of(tool_log: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The parsed results of a message's successful tool calls (log records or evaluation records)."""
    out = []
    for r in tool_log:
        if r.get("status") != "ok":
            continue
        value = r.get("result", r.get("result_digest"))
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                continue
        if value is not None:
            out.append(value)
    return out


def _is_label(key: str, value: Any, skip: set[str], currency: str) -> bool:
    if not isinstance(value, str) or key in skip:
        return False
    text = value.strip()
    return (3 <= len(text) <= _MAX_LABEL or (_CJK.search(text) is not None and 2 <= len(text) <= _MAX_LABEL)) \
        and not text.replace(".", "").isdigit() and text.upper() != currency.upper() and text.count(" ") < 6


def records(results: Sequence[Any], claim_fields: set[str], currency: str = "") -> list[Record]:
    """Every object in ``results``, depth first, each with its parents' identifying values."""
    out: list[Record] = []

    def walk(node: Any, inherited: tuple[str, ...]) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, inherited)
            return
        if not isinstance(node, dict):
            return
        scalars = {k: v for k, v in node.items() if v is None or isinstance(v, str | int | float | bool)}
        own = tuple(str(v).strip() for k, v in scalars.items() if _is_label(k, v, claim_fields, currency))
        numbers = tuple(float(v) for v in scalars.values() if isinstance(v, int | float) and not isinstance(v, bool))
        out.append(Record(scalars, own, inherited, numbers))
        for v in node.values():
            if isinstance(v, dict | list):
                walk(v, inherited + own)

    for result in results:
        walk(result, ())
    return out


def _mentions(clause: str, label: str) -> bool:
    if _CJK.search(label):
        return label in clause
    if clause.isascii() and label.isascii() and label.lower() not in clause.lower():
        # Between ASCII texts, ignoring case is lower-casing, so a label that is not even a substring cannot
        # match: most labels of a result are not in a given clause, and compiling a pattern costs more.
        return False
    return _label_pattern(label).search(clause) is not None


@lru_cache(maxsize=8192)
def _label_pattern(label: str) -> re.Pattern[str]:
    # Labels are values of tool results, new with each result: re's own cache of 512 patterns thrashed.
    return re.compile(rf"(?<![\w-]){re.escape(label)}(?![\w-])", re.I)


def _score(record: Record, clause: str) -> tuple[int, int]:
    own = {x for x in record.own if _mentions(clause, x)}
    inherited = {x for x in record.inherited if _mentions(clause, x)} - own
    return len(own) + len(inherited), len(own)


def _about(candidates: Sequence[Record], clause: str) -> tuple[list[Record], tuple[str, ...]]:
    """The records a clause is about: those mentioning most of their identifying values, own values first;
    with no mention at all, the only candidate there is (the one thing the message looked up)."""
    scored = [(_score(r, clause), r) for r in candidates]
    best = max((s for s, _ in scored), default=(0, 0))
    if best[0] == 0:
        alone = len(candidates) == 1 and not _names_another(clause, candidates)
        return (list(candidates), ()) if alone else ([], ())
    top = [r for s, r in scored if s == best]
    named = tuple(dict.fromkeys(x for r in top for x in (*r.inherited, *r.own) if _mentions(clause, x)))
    return top, named


# An identifier in any domain's style: capitals, then at least three digits ("AB1234", "XY-00042").
_IDENTIFIER = re.compile(r"(?<![\w-])[A-Z]{2,}[-_]?\d{3,}(?![\w-])")


def _names_another(clause: str, candidates: Sequence[Record]) -> bool:
    """Whether the clause names an identifier no candidate holds: it is about that thing (an earlier
    request a tool error mentions, say), not about the one record the message looked up."""
    held = {x for r in candidates for x in (*r.own, *r.inherited)} | {
        str(v) for r in candidates for v in r.fields.values() if isinstance(v, str)}
    return any(m.group(0) not in held for m in _IDENTIFIER.finditer(clause))


def _value(record: Record, fields: Sequence[str]) -> tuple[str, Any] | None:
    return next(((f, record.fields[f]) for f in fields if f in record.fields), None)


def _phrases(claims: Sequence[Claim]) -> list[tuple[str, Claim]]:
    return sorted(((w, c) for c in claims for w in c.words), key=lambda wc: -len(wc[0]))


def _find_claims(clause: str, phrases: Sequence[tuple[str, Claim]]) -> list[tuple[str, Claim]]:
    """The declared claims a clause states, longest phrase first; overlapping shorter ones are not read."""
    found, taken = [], [False] * len(clause)
    low = clause.lower()
    for word, claim in phrases:
        pattern = re.escape(word.lower()) if _CJK.search(word) else rf"(?<!\w){re.escape(word.lower())}(?!\w)"
        for m in re.finditer(pattern, low):
            if any(taken[m.start():m.end()]):
                continue
            taken[m.start():m.end()] = [True] * (m.end() - m.start())
            before = clause[:m.start()]
            if _CONDITIONAL.search(before) or _NEGATION.search(before):
                continue
            found.append((clause[m.start():m.end()], claim))
    return found


def _norm(value: Any) -> str:
    return str(value).strip().strip(".。").lower().replace("_", " ")


def _fix_claim(named: tuple[str, ...], record: Record, claims: Sequence[Claim], fields: Sequence[str]) -> str:
    """A clause stating what the record says, in the words of a claim on the same field that holds."""
    got = _value(record, fields)
    subject = ", ".join(named)
    true = next((c for c in claims if set(c.fields) & set(fields) and _value(record, c.fields) is not None
                 and c.holds(_value(record, c.fields)[1])), None)  # type: ignore[index]
    statement = true.statement if true is not None else f"{got[0].replace('_', ' ')} {got[1]}" if got else ""
    return f"{subject}: {statement}." if subject else f"{statement[:1].upper()}{statement[1:]}."


def check_claims(clause: str, recs: Sequence[Record], claims: Sequence[Claim]) -> list[Contradiction]:
    out = []
    for said, claim in _find_claims(clause, _phrases(claims)):
        candidates = [r for r in recs if _value(r, claim.fields) is not None]
        top, named = _about(candidates, clause)
        if said.lower() in {x.lower() for x in named}:
            continue  # the phrase is the value of another field of the record ("previous status: pending")
        if not top or any(claim.holds(_value(r, claim.fields)[1]) for r in top):  # type: ignore[index]
            continue
        first = top[0]
        key, value = _value(first, claim.fields)  # type: ignore[misc]
        out.append(Contradiction(clause.strip(), said, f"{key} = {value}",
                                 _fix_claim(named, first, claims, claim.fields), named))
    return out


def check_pairs(clause: str, recs: Sequence[Record], line: str = "", pattern: re.Pattern[str] = _PAIR
                ) -> list[Contradiction]:
    """``Status: shipped``-style statements (or "the status is shipped" with ``_IS_PAIR``): the label names a
    result key, and the record the line names (or, when it names none, some record) must hold the value."""
    out = []
    for m in pattern.finditer(clause):
        label, stated = m.group(1).strip(), m.group(2).strip()
        key = label.lower().replace(" ", "_")
        holders = [r for r in recs if key in r.fields and r.fields[key] is not None]
        scored = [(_score(r, line or clause)[1], r) for r in holders]
        if any(s for s, _ in scored):  # the line names its record by one of its own values
            best = max(s for s, _ in scored)
            holders = [r for s, r in scored if s == best]
        if not holders or any(len(str(r.fields[key])) > 40 for r in holders):
            continue  # free text (a note, a next step) is quoted in part; only short values are facts
        values = {_norm(r.fields[key]) for r in holders}
        said = _norm(stated)
        if any(said in v or v in said for v in values) or _same_number(stated, holders, key) or _same_flag(stated, holders, key):
            continue  # the value as given, or inside a translation ("待处理（pending）")
        truth = sorted(values)[0] if len(values) == 1 else " or ".join(sorted(values))
        stated = stated.rstrip(".。 ")
        out.append(Contradiction(f"{m.group(1).strip()}{clause[m.end(1):m.start(2)]}{stated}",
                                 f"{label}: {stated}", f"{key} = {truth}", f"{label}: {holders[0].fields[key]}"))
    return out


_YES, _NO = {"yes", "true", "是"}, {"no", "false", "否"}


def _same_flag(stated: str, holders: Sequence[Record], key: str) -> bool:
    """A flag stated in words ("locked: no") for a boolean field."""
    word = stated.strip(" .。").lower()
    return any(isinstance(r.fields[key], bool) and word in (_YES if r.fields[key] else _NO) for r in holders)


def _same_number(stated: str, holders: Sequence[Record], key: str) -> bool:
    number = re.search(r"\d+(?:\.\d+)?", stated)
    if number is None:
        return False
    x = float(number.group(0))
    return any(isinstance(r.fields[key], int | float) and abs(float(r.fields[key]) - x) < 0.005 for r in holders)


def check_amounts(clause: str, recs: Sequence[Record]) -> list[Contradiction]:
    """An amount beside a named record must be one of that record's (or its parents') numbers."""
    amounts = [float(next(g for g in m.groups() if g)) for m in _MONEY.finditer(clause)]
    if not amounts:
        return []
    scored = [(r, _score(r, clause)) for r in recs]
    named = [r for r, s in scored if s[1] > 0]  # records the clause names by their own values
    if not named:
        return []
    known = {n for r in named for n in r.numbers}
    by_label = {x: r for r in recs for x in r.own}
    for r in named:  # a parent's numbers count too (an item's order total)
        known |= {n for x in r.inherited if x in by_label for n in by_label[x].numbers}
    wrong = [a for a in amounts if not any(abs(a - k) < 0.005 for k in known)]
    subject = tuple(dict.fromkeys(x for r in named for x in r.own if _mentions(clause, x)))
    return [Contradiction(clause.strip(), f"{a:g}", "no such amount for it", "", subject) for a in wrong]


# Words that say an amount is the whole ("it cost $90.49 altogether", "一共 721.97 元").
_WHOLE = re.compile(r"\b(?:altogether|all together|in total|in all|total(?:ling|ing)?|overall)\b|一共|总共|合计|总计|总额",
                    re.I)


def check_totals(clause: str, recs: Sequence[Record]) -> list[Contradiction]:
    """An amount told as the whole must be a record's total where the records have one: an item's price
    said as the order's total ("it cost $90.49 altogether" of a 107.98 order) is a true number, falsely
    named."""
    if not _WHOLE.search(clause):
        return []
    totals = {float(v) for r in recs for k, v in r.fields.items()
              if "total" in k.lower() and isinstance(v, int | float) and not isinstance(v, bool)}
    if not totals:
        return []
    amounts = [float(next(g for g in m.groups() if g)) for m in _MONEY.finditer(clause)]
    return [Contradiction(clause.strip(), f"{a:g}", "not the total", "") for a in amounts
            if not any(abs(a - t) < 0.005 for t in totals)]


def check_dates(clause: str, evidence: str) -> list[Contradiction]:
    return [Contradiction(clause.strip(), d, "no such date", "") for d in _ISO_DATE.findall(clause)
            if d not in evidence]


def contradictions(draft: str, results: Sequence[Any], claims: Sequence[Claim] = (), currency: str = "",
                   evidence: str = "") -> list[Contradiction]:
    """What in ``draft`` the results contradict; ``evidence`` (results and user text) grounds quoted text."""
    if not draft or not results:
        return []
    evidence = evidence or json.dumps(results, ensure_ascii=False, default=str)
    flat = _squash(evidence)
    recs = records(results, {f for c in claims for f in c.fields}, currency)
    out: list[Contradiction] = []
    for m in _CLAUSE.finditer(draft):
        clause = m.group(0)
        start = draft.rfind("\n", 0, m.start()) + 1
        end = draft.find("\n", m.end() - 1 if m.group(0).endswith("\n") else m.end())
        line = draft[start:end if end >= 0 else len(draft)]
        if not clause.strip() or _squash(clause.strip(" .;；。")) in flat:
            continue  # quoted from a result as it is
        # A clause of "Label: value" pairs states its facts by key; its words are values, not claims.
        out += check_pairs(clause, recs, line) if _PAIR.search(clause) else check_claims(clause, recs, claims)
        out += check_pairs(clause, recs, line, _IS_PAIR)
        out += check_amounts(clause, recs)
        out += check_totals(clause, recs)
        out += check_dates(clause, evidence)
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def corrected(draft: str, found: Sequence[Contradiction]) -> str:
    """The draft with each contradicted clause replaced by what the result says (or dropped)."""
    text = draft
    for c in found:
        text = text.replace(c.clause, c.fix, 1) if c.clause in text else text
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    return text
