"""Grammars for every schema (issue 41): a tool's ``pattern`` becomes a llama.cpp grammar that accepts exactly
what Python's ``re`` accepts, checked by property on generated patterns and strings; what a grammar cannot say
becomes free text, never an exception.

The grammar is checked by a small GBNF recognizer written here (the text llama.cpp parses), and, where
llama-cpp-python is installed, by llama.cpp's own parser.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib.util import find_spec

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lg_harness.llm.gbnf import JSON_RULES, pattern_expr, schema_gbnf, translate

# ------------------------------------------------------------------------- a GBNF recognizer for the test


def _parse_char(text: str, i: int) -> tuple[str, int]:
    if text[i] != "\\":
        return text[i], i + 1
    nxt = text[i + 1]
    if nxt == "x":
        return chr(int(text[i + 2:i + 4], 16)), i + 4
    if nxt == "u":
        return chr(int(text[i + 2:i + 6], 16)), i + 6
    escapes = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}
    assert nxt in escapes, f"llama.cpp knows no escape \\{nxt}"
    return escapes[nxt], i + 2


def parse_gbnf(text: str) -> dict[str, object]:
    rules = {}
    for line in text.splitlines():
        if "::=" not in line:
            continue
        name, _, body = line.partition("::=")
        expr, end = _alt(body.strip(), 0)
        assert end == len(body.strip()), (line, end)
        rules[name.strip()] = expr
    return rules


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i] == " ":
        i += 1
    return i


def _alt(s: str, i: int):
    seqs = []
    seq, i = _seq(s, i)
    seqs.append(seq)
    while i < len(s) and s[i] == "|":
        seq, i = _seq(s, _ws(s, i + 1))
        seqs.append(seq)
    return ("alt", seqs), i


def _seq(s: str, i: int):
    items = []
    i = _ws(s, i)
    while i < len(s) and s[i] not in "|)":
        atom, i = _atom(s, i)
        atom, i = _postfix(s, i, atom)
        items.append(atom)
        i = _ws(s, i)
    return ("seq", items), i


def _atom(s: str, i: int):
    if s[i] == '"':
        out, i = [], i + 1
        while s[i] != '"':
            c, i = _parse_char(s, i)
            out.append(c)
        return ("lit", "".join(out)), i + 1
    if s[i] == "[":
        i += 1
        neg = s[i] == "^"
        i += neg
        ranges = []
        while s[i] != "]":
            lo, i = _parse_char(s, i)
            hi = lo
            if s[i] == "-" and s[i + 1] != "]":
                hi, i = _parse_char(s, i + 1)
            ranges.append((lo, hi))
        return ("cls", neg, ranges), i + 1
    if s[i] == "(":
        expr, i = _alt(s, i + 1)
        assert s[i] == ")"
        return expr, i + 1
    m = re.match(r"[a-zA-Z0-9-]+", s[i:])
    assert m, s[i:]
    return ("ref", m.group()), i + m.end()


def _postfix(s: str, i: int, atom):
    if i < len(s) and s[i] in "*+?":
        lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[s[i]]
        return ("rep", atom, lo, hi), i + 1
    m = re.match(r"\{(\d+)(,(\d*))?\}", s[i:])
    if m:
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        return ("rep", atom, lo, hi), i + m.end()
    return atom, i


def accepts(rules: dict[str, object], text: str, root: str = "root") -> bool:
    """Whether the grammar's ``root`` derives exactly ``text`` (positions reachable, memoised per node)."""
    memo: dict[tuple[int, int], frozenset[int]] = {}

    def ends(node, pos: int) -> frozenset[int]:
        key = (id(node), pos)
        if key not in memo:
            memo[key] = frozenset()  # a rule reached again at the same place adds nothing (no left recursion here)
            memo[key] = _ends(node, pos)
        return memo[key]

    def _ends(node, pos: int) -> frozenset[int]:
        kind = node[0]
        if kind == "lit":
            return frozenset({pos + len(node[1])}) if text.startswith(node[1], pos) else frozenset()
        if kind == "cls":
            if pos >= len(text):
                return frozenset()
            inside = any(lo <= text[pos] <= hi for lo, hi in node[2])
            return frozenset({pos + 1}) if inside != node[1] else frozenset()
        if kind == "ref":
            return ends(rules[node[1]], pos)
        if kind == "alt":
            return frozenset().union(*(ends(alt, pos) for alt in node[1]))
        if kind == "seq":
            here = {pos}
            for item in node[1]:
                here = set().union(*(ends(item, p) for p in here))
            return frozenset(here)
        _, sub, lo, hi = node  # repetition: positions after lo..hi copies
        out, frontier, count, seen = set(), {pos}, 0, set()
        while frontier:
            if count >= lo:
                out |= frontier
            if hi is not None and count == hi:
                break
            frontier = set().union(*(ends(sub, p) for p in frontier))
            count += 1
            if hi is None:  # unbounded: stop once no new position appears
                frontier -= seen if count > lo else set()
                seen |= frontier
        return frozenset(out)

    return len(text) in ends(rules[root], 0)


@lru_cache(maxsize=1)
def json_rules() -> dict[str, object]:
    return parse_gbnf(JSON_RULES)


def pattern_grammar(pattern: str) -> dict[str, object]:
    return {**json_rules(), **parse_gbnf(f"root ::= {pattern_expr(pattern)}\n")}


# ----------------------------------------------------------------------------------- generated patterns

ALPHABET = "abAB01-_ x"
atoms = st.sampled_from(["a", "b", "A", "0", "1", "-", "_", "x", ".", r"\d", r"\w", r"\s", r"\D", r"\W",
                         "[a-c]", "[^a]", "[0-1x]", "[-a]", r"[\d_]", "[A-Bb]"])


@st.composite
def bodies(draw, depth: int = 2) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth and draw(st.booleans()):
            inner = "|".join(draw(st.lists(bodies(depth=depth - 1), min_size=1, max_size=3)))
            atom = draw(st.sampled_from(["(?:{})", "({})", "(?i:{})"])).format(inner)
        else:
            atom = draw(atoms)
        atom += draw(st.sampled_from(["", "", "?", "*", "+", "{2}", "{1,3}", "{0,2}", "{2,}"]))
        parts.append(atom)
    return "".join(parts)


@st.composite
def regexes(draw) -> str:
    return draw(st.sampled_from(["^{}$", "{}", "^{}", "{}$", "(?i)^{}$"])).format(draw(bodies()))


def same_verdicts(pattern: str, samples: list[str]) -> None:
    grammar = pattern_grammar(pattern)
    compiled = re.compile(pattern)
    # a JSON string carries no raw newline (it is written \\n), so "$ before a final newline" never arises
    for text in (t for t in samples if "\n" not in t):
        assert accepts(grammar, text) == bool(compiled.search(text)), (pattern, text, pattern_expr(pattern))


def sample(pattern: str, rnd) -> str:
    """A string built along the pattern's own parse tree (mostly a match), from ``ALPHABET``."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    def walk(items) -> str:
        out = []
        for op, av in items:
            if op is c.LITERAL:
                out.append(chr(av))
            elif op in (c.IN, c.ANY, c.NOT_LITERAL, c.CATEGORY):
                out.append(rnd.choice(ALPHABET))  # a guess: checked by re like any other string
            elif op is c.BRANCH:
                out.append(walk(rnd.choice(av[1])))
            elif op is c.SUBPATTERN:
                out.append(walk(av[3]))
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
                lo, hi, sub = av
                out.extend(walk(sub) for _ in range(rnd.randint(lo, min(hi, lo + 2))))
            if sum(map(len, out)) > 12:
                break
        return "".join(out)

    return walk(_parser.parse(pattern))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=regexes(), rnd=st.randoms(use_true_random=False),
       others=st.lists(st.text(alphabet=ALPHABET, max_size=8), min_size=6, max_size=6))
@pytest.mark.slow
def test_a_pattern_grammar_accepts_what_re_accepts(pattern: str, rnd, others: list[str]) -> None:
    # short strings: a nested quantifier makes re itself backtrack exponentially on long ones
    built = [sample(pattern, rnd)[:10] for _ in range(6)]
    same_verdicts(pattern, [*built, *others])


@pytest.mark.parametrize("pattern", [r"^(?:LT|MN|PH)-\d{5}$", r"^ORD-\d{5}$", r"^[A-Z0-9]{4,16}$", r"^\d{6}$",
                                     r"^INC\d{7}$", r"(?i)^ord-\d{5}$"])
def test_the_tools_own_patterns_translate_exactly(pattern: str) -> None:
    samples = ["LT-12345", "PH-00001", "XX-12345", "LT-1234", "ORD-10042", "ord-10042", "ORD-1004", "ABCD", "ABC",
               "A" * 16, "A" * 17, "123456", "12345a", "INC0012346", "INC001234"]
    same_verdicts(pattern, samples)


@pytest.mark.parametrize("pattern", [r"^(?=a)a$", r"^(a)\1$", r"^a\bb$", r"a^b", r"^[\D]$", "^(?<=x)y$", "(?P<n>a)(?P=n)",
                                     r"^a{1,200}$", "[", "*"])
def test_what_a_grammar_cannot_say_becomes_free_text_never_an_exception(pattern: str) -> None:
    loose: list[str] = []
    expr = translate(pattern, loose.append)
    grammar = parse_gbnf(f"root ::= {expr}\n" + JSON_RULES)
    try:
        compiled = re.compile(pattern)
    except re.error:
        compiled = None
    for text in ["a", "aa", "ab", "xy", "a" * 150, ""]:
        if compiled is not None and compiled.search(text):
            assert accepts(grammar, text), (pattern, text)  # looser, never stricter
    if compiled is None or pattern in (r"^(?=a)a$", r"^(a)\1$", r"^a\bb$", "a^b", "^(?<=x)y$"):
        assert loose, "it says it fell back"


def test_a_tool_schema_becomes_a_grammar_of_its_valid_calls() -> None:
    schema = {"type": "object", "additionalProperties": False, "required": ["asset_id"],
              "properties": {"asset_id": {"type": "string", "pattern": r"^(?:LT|MN|PH)-\d{5}$"},
                             "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                             "count": {"type": "integer"}, "kind": {"enum": ["a", "b"]}}}
    rules = parse_gbnf(schema_gbnf(schema))
    good = [{"asset_id": "LT-12345"}, {"asset_id": "MN-00001", "note": "hi", "count": 3, "kind": "b"},
            {"asset_id": "PH-99999", "note": None, "kind": "a"}]
    bad = [{"asset_id": "LT-1234"}, {"note": "x"}, {"asset_id": "LT-12345", "kind": "c"}, {"asset_id": "XX-12345"}]
    for doc in good:
        assert accepts(rules, json.dumps(doc, separators=(", ", ": "))), doc
    for doc in bad:
        assert not accepts(rules, json.dumps(doc, separators=(", ", ": "))), doc


@pytest.mark.skipif(find_spec("llama_cpp") is None, reason="llama-cpp-python not installed (bash scripts/setup.sh --local-model)")
def test_llama_cpp_parses_every_tool_schema_of_both_domains() -> None:
    from lg_harness.core.domain import load_domain
    from lg_harness.llm.grammars import action_grammar
    from lg_harness.llm.local import _grammar

    for name in ("shop", "helpdesk"):
        registry = load_domain(name).registry()
        tools = [t.json_schema() for t in registry.specs()]
        for tool in tools:
            assert _grammar(action_grammar([tool])) is not None, tool["function"]["name"]
