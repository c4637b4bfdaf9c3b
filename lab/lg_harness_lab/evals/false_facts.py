"""False facts in a reply, read by the judge with finders of its own (``evals.fact_judge``), not the harness's.

The harness's self-check rewrites a draft its own fact check (``lg_harness.nodes.fact_check``) finds false, so
a judge that used the same check could never see what it misses. This one reads a reply by value, as a
customer would hold it against the records:

- an **amount** (a number with a currency, or with two decimals) that no result of the conversation so far
  holds, nor the sum, difference or product of two of its numbers (a total, a refund less a fee, a price
  times a quantity), nor the customer's own words;
- a **date** that no result holds;
- a **status** of a record (any result object with an identifier and a field the domain's claims describe),
  stated in a sentence that names the record (or names none, when the results hold one such record) with a
  word that is true of none of the values the newest
  result gave the records it names (a later result, the order after its cancellation, replaces an earlier one).

A reply that pastes a result back is a dump (``customer_grade``), not a false fact. What it cannot tie to a
record or a number it lets pass: the verdict is "false" only where the records say otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from lg_harness_lab.evals import customer_grade as grade
from lg_harness_lab.evals.fact_judge import _word_in, dates, id_pattern, in_language, norm, numbers

# An amount as a reply states one: a currency sign or code beside a number, or a number with two decimals.
_AMOUNT = re.compile(r"[$€£¥]\s?(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*(?:\.\d+)?)\s?(?:usd|eur|cny|rmb|dollars?|美元|元)"
                     r"|(?<![\w.])(\d[\d,]*\.\d{2})(?![\d%])", re.I)
# An identifier of any record, known or not ("ord-10146" in a lowered sentence): a sentence naming one is not
# about the only record the results hold.
_ANY_ID = re.compile(r"(?<![0-9a-z])[a-z]{1,5}-?\d{3,}(?![0-9a-z])")
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}")
# A sentence ends at a stop followed by a space (not a decimal point: "$334.47"), a Chinese stop, ';' or a line.
_SENTENCES = re.compile(r"(?<=[.!?])\s+|[\n。！？;；]")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCES.split(text) if s.strip()]


# Words before a status word that keep it from being stated: negations, conditions, abilities.
_NOT_STATED = re.compile(r"(?:\bnot|n't|\bno longer|\bnever|\bcannot|\bonce|\bif|\bwhen|\bunless|\bcan be|\bwill be|"
                         r"\bcould be|\bwould be|不|没|未|无法|一旦|如果)\W*(?:\w+\W+){0,3}\s*$", re.I)
# An identifier: letters and digits together, as records name themselves ("ORD-10144", "INC0012346", "E1001").
_IDENT = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_-]{2,}$")


def results(tool_calls: Iterable[Mapping[str, Any]]) -> list[Any]:
    """What a run record keeps of a message's calls that worked: parsed results (a text result as its text)."""
    return [c["result"] for c in tool_calls if c.get("status") == "ok" and c.get("result") is not None]


def records(value: Any) -> list[dict[str, Any]]:
    """Every object of a result with its scalar fields."""
    found: list[dict[str, Any]] = []
    if isinstance(value, Mapping):
        found.append({str(k): v for k, v in value.items() if isinstance(v, (str, int, float, bool))})
        for v in value.values():
            found += records(v)
    elif isinstance(value, list):
        for v in value:
            found += records(v)
    return found


def _amounts(text: str) -> list[float]:
    out = []
    for m in _AMOUNT.finditer(norm(text)):
        raw = next(g for g in m.groups() if g)
        try:
            out.append(float(raw.replace(",", "")))
        except ValueError:
            continue
    return out


def _derivable(amount: float, known: Sequence[float]) -> bool:
    close = lambda a, b: abs(a - b) < 0.005  # noqa: E731 - half a cent
    if any(close(amount, k) for k in known):
        return True
    few = sorted(set(known))[:60]  # pairs of the first 60 distinct numbers: a long list is not summed whole
    return any(close(amount, a + b) or close(amount, abs(a - b)) or close(amount, a * b) for a, b in combinations(few, 2))


def _is_name(key: str, value: Any) -> bool:
    return isinstance(value, str) and bool(_IDENT.match(value)) and (
        key == "id" or key.endswith("id") or key in ("code", "tag", "number"))


def _names(record: Mapping[str, Any]) -> list[str]:
    """The identifiers a record carries: its own and those of records it belongs to (a return's order id)."""
    return [str(v) for k, v in record.items() if _is_name(k, v)]


# identifier -> field -> (the values the results gave it, whether a record of that identifier alone gave one)
Latest = dict[str, dict[str, tuple[list[Any], bool]]]


def _latest(found: Sequence[Any]) -> Latest:
    """identifier -> field -> (the values the results gave it, whether a record of that identifier alone
    gave one). A later record of the same kind (the same identifier keys: the order after its cancellation)
    replaces an earlier one; a record of another kind that names it (a return naming its order) adds its
    values beside them, and only such a record's value can be whose it is not: it never makes a statement false
    by itself."""
    latest: dict[tuple[str, str, frozenset[str]], list[Any]] = {}
    for batch in found:
        fresh: dict[tuple[str, str, frozenset[str]], list[Any]] = {}
        for record in records(batch):
            keys = frozenset(k for k in record if _is_name(k, record[k]))
            for name in _names(record):
                for field in record:  # every field: "the previous status is pending" is read by its own
                    fresh.setdefault((norm(name), field, keys), []).append(record[field])
        latest.update(fresh)
    out: Latest = {}
    for (name, field, keys), values in latest.items():
        had, sure = out.setdefault(name, {}).get(field, ([], False))
        out[name][field] = (had + values, sure or len(keys) == 1)
    return out


def _said_wrong(sentence: str, field: str, values: Sequence[Any]) -> str:
    return f"{sentence.strip()} (the results say {field} = {', '.join(map(str, values))})"


def _false_statuses(said: Sequence[str], latest: Latest, lang: str, claims: Sequence[Any]) -> list[str]:
    """Sentences naming records that give them a status none of them has (the newest results' values)."""
    fields = {f for c in claims for f in c.fields}
    # a sentence naming no record, after results that hold one record with the field, is about that record
    holders = {f: [n for n in latest if f in latest[n] and latest[n][f][1]] for f in fields}
    # longest first: "not shipped" is read before "shipped"
    words = {f: sorted({norm(w) for c in claims if f in c.fields for w in c.words if in_language(w, lang)},
                       key=len, reverse=True) for f in fields}
    wrong: list[str] = []
    for sentence in said:
        named = [n for n in latest if id_pattern(n).search(sentence)]
        for field in fields:
            alone = holders[field] if len(holders[field]) == 1 and not _ANY_ID.search(sentence) else []
            given = [latest[n][field] for n in (named or alone) if field in latest[n]]
            if not any(sure for _, sure in given):
                continue
            own = [v for vs, _ in given for v in vs]
            about = named or alone
            # what the named records hold in other fields: "the previous status is pending" states another field
            other = [v for n in about for f, (vs, _) in latest[n].items() if f != field for v in vs]
            labelled = [v for n in about for f, (vs, _) in latest[n].items()
                        if f != field and f.replace("_", " ") in sentence for v in vs]
            rest, stated, borrowed = sentence, False, False
            for word in words[field]:
                if not _word_in(word, rest):
                    continue
                at = rest.find(word)
                rest = rest.replace(word, " ")
                if _NOT_STATED.search(rest[max(0, at - 24):at + 1]):
                    continue  # "cannot be cancelled", "once it is delivered", "未发货" is not a status stated
                says = [c for c in claims if field in c.fields and word in map(norm, c.words)]
                if any(c.true_of(v) for c in says for v in own):
                    stated = True
                elif any(c.true_of(v) for c in says for v in labelled):
                    continue  # "the previous status was pending": that field's label is in the sentence
                elif any(c.true_of(v) for c in says for v in other):
                    borrowed = True  # true of another field: right only beside the record's own status
                else:
                    wrong.append(_said_wrong(sentence, field, own))
                    break
            else:
                if borrowed and not stated:
                    wrong.append(_said_wrong(sentence, field, own))
    return list(dict.fromkeys(wrong))


def _label_pattern(field: str) -> re.Pattern[str]:
    """"the min total is 61.0", "Min total: 61", "min total是54.0": a field's name as a label, and what follows."""
    label = re.escape(field.replace("_", " ").casefold())
    return re.compile(rf"(?<![a-z]){label}\s*(?:is|was|are|were|:|是|为)\s*([^,，;；。]+?)(?=[,，;；。]|\s+and\s|$)")


def _says(stated: str, values: Sequence[Any], lang: str, claims: Sequence[Any], field: str) -> bool:
    """Whether ``stated`` (what follows a field's label) can be one of the field's ``values``."""
    for value in values:
        if isinstance(value, bool) or value is None:
            return True  # "verified: 是", "locked: no": yes and no in any words are not judged here
        if isinstance(value, int | float):
            if any(abs(n - float(value)) < 0.005 for n in numbers(stated, lang)):
                return True
            continue
        text = norm(value).replace("_", " ")
        if len(text.split()) > 3:
            return True  # prose ("Pack the items; a prepaid label..."): told in other words, not judged here
        stated = stated.replace("_", " ")
        if text in stated or stated in text or (_ISO_DAY.match(text) and dates(stated) and any(
                (m, d) == (int(text[5:7]), int(text[8:10])) for _, m, d in dates(stated))):
            return True
        # the domain's words for the value, whichever field they were declared for ("待发货" is a previous status too)
        if any(c.true_of(value) and any(norm(w) in stated for w in c.words) for c in claims):
            return True
    return False


def _false_labels(said: Sequence[str], latest: Latest, lang: str, claims: Sequence[Any]) -> list[str]:
    """Sentences that give a named record's field, by its label, a value the record does not hold."""
    wrong: list[str] = []
    for sentence in said:
        named = [n for n in latest if id_pattern(n).search(sentence)]
        if not named and not _ANY_ID.search(sentence) and len(latest) == 1:
            named = list(latest)  # no record named, one record known: the sentence is about it
        for name in named:
            taken: list[tuple[int, int]] = []  # spans of longer labels: "previous status" is not "status"
            fields = sorted(latest[name].items(), key=lambda item: -len(item[0]))
            for field, (values, _sure) in fields:
                if field.endswith(("_zh", "_en")) or _is_name(field, values[0] if values else None):
                    continue
                zh = latest[name].get(f"{field}_zh", ([], False))[0]
                for match in _label_pattern(field).finditer(sentence):
                    if any(a <= match.start() < b for a, b in taken):
                        continue
                    taken.append(match.span())
                    stated = match.group(1).strip(" \"'“”")
                    if len(stated.split()) <= 4 and not _says(stated, [*values, *zh], lang, claims, field):
                        wrong.append(_said_wrong(sentence, field, values))
    return list(dict.fromkeys(wrong))


def false_facts(reply: str, seen: Sequence[Any], lang: str, domain: Any, customer_said: str = "",
                refused: bool = False) -> list[str]:
    """The statements of ``reply`` that the results ``seen`` so far contradict (the module doc). ``refused``:
    a tool of this message refused with a reason the run record does not keep ("expired on 2026-09-30"), so
    its amounts and dates have no evidence to be judged by; its statuses still do."""
    if not reply or grade.data_dump(reply):
        return []
    wrong: list[str] = []
    if not refused:
        evidence = json.dumps(seen, ensure_ascii=False, default=str)
        known = numbers(evidence) + numbers(customer_said, lang)
        wrong += [f"amount {a:g}" for a in _amounts(reply) if not _derivable(a, known)]
        have = dates(evidence)
        wrong += [f"date {m}/{d}" for y, m, d in dates(reply)
                  if not any(m == hm and d == hd and (y is None or hy is None or y == hy) for hy, hm, hd in have)]
    said, latest, claims = sentences(norm(reply)), _latest(seen), list(getattr(domain, "claims", ()) or ())
    return wrong + _false_statuses(said, latest, lang, claims) + _false_labels(said, latest, lang, claims)
