"""The harness core knows no domain: it imports no pack and names no shop tool, intent or identifier.

Everything domain-specific reaches the core as a ``Domain`` value. This test reads the core's source (its
code and the strings it uses, not its docstrings or comments, which may show examples) and fails on any
import of ``domains`` and on any word from the bundled packs' vocabulary.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The library's packages but the packs, and the lab's evaluation; the library's own top-level modules beside them.
CORE = tuple(f"lg_harness/{p}" for p in ("core", "graphs", "nodes", "memory", "tools", "llm", "obs", "service")) + (
    "lab/lg_harness_lab/evals",)

# The bundled packs' tools, intents, slots and identifier formats. A core module that needs one of these
# is doing a domain's job.
SHOP_WORDS = (
    "get_order_status", "cancel_order", "request_return", "list_my_orders", "search_products", "get_product",
    "list_coupons", "claim_coupon", "file_complaint", "transfer_to_human", "order_status", "return_order",
    "my_orders", "order_id", "product_id", "coupon_code", "ShopDB", "shop_db",
)
# ("ticket" itself is the core's word for a handoff to a human.)
HELPDESK_WORDS = ("reset_password", "request_access", "asset_id", "escalate_to_technician")
# Identifier formats: ORD-10134, P1001, U001, INC0012345, LT-04211.
ID_FORMATS = re.compile(r"ORD-?\d|\bORD\b|(?<![A-Za-z])P\d{4}\b|\bU0\d\d\b|INC\d{5,}|\bLT-\d")


# The lab's scenario generators are written for one pack each (they seed the pack's database and name its
# tools): they are pack content kept in the lab, not core. Nothing in the core may import them (checked below).
PACK_CONTENT = ROOT / "lab" / "lg_harness_lab" / "evals" / "generators"


def core_files() -> list[Path]:
    return sorted([*(ROOT / "lg_harness").glob("*.py"),
                   *(p for package in CORE for p in (ROOT / package).rglob("*.py") if not p.is_relative_to(PACK_CONTENT))])


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_tokens(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every name and string literal that is not a docstring."""
    source = path.read_text(encoding="utf-8")
    docs = _docstring_lines(ast.parse(source))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.NAME, tokenize.STRING) and tok.start[0] not in docs:
            out.append((tok.start[0], tok.string))
    for tok_type in ("FSTRING_MIDDLE",):  # f-string pieces (Python 3.12+)
        if hasattr(tokenize, tok_type):
            kind = getattr(tokenize, tok_type)
            out += [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == kind and t.start[0] not in docs]
    return out


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_the_core_is_scanned():
    files = core_files()
    assert len(files) > 40, "the scan must see the core"
    assert any(p.name == "action.py" for p in files) and any(p.name == "metrics.py" for p in files)


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_imports_no_domain(path):
    bad = [m for m in imported_modules(path) if m in ("domains", "lg_harness.domains")
           or m.startswith(("domains.", "lg_harness.domains."))]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: pass a Domain in instead"


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_names_no_domain_vocabulary(path):
    words = re.compile(r"\b(?:" + "|".join(map(re.escape, SHOP_WORDS + HELPDESK_WORDS)) + r")s?\b")
    found = [(line, text) for line, text in code_tokens(path) if words.search(text) or ID_FORMATS.search(text)]
    assert not found, f"{path.relative_to(ROOT)} names domain things: {found[:5]}"


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_imports_no_pack_generator(path):
    bad = [m for m in imported_modules(path) if "evals.generators" in m or m == "generators"]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: the generators are a pack's lab content, not core"


def test_only_the_generators_are_left_out_of_the_scan():
    scanned = set(core_files())
    left_out = {p for package in CORE for p in (ROOT / package).rglob("*.py")} - scanned
    assert left_out and all(p.is_relative_to(PACK_CONTENT) for p in left_out)


def test_the_scan_catches_a_shop_word(tmp_path):
    """The checks above could fail: a module that names a shop tool or id, or imports a pack, is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text('"""Docs may say ORD-10134."""\nfrom lg_harness.domains.shop import DOMAIN\nTOOL = "cancel_order"\n'
                   'ID = re.compile(r"ORD-\\d{5}")\n', encoding="utf-8")
    assert imported_modules(bad) == ["lg_harness.domains.shop"]
    texts = [t for _, t in code_tokens(bad)]
    assert '"cancel_order"' in texts and not any("10134" in t for t in texts)
    assert any(ID_FORMATS.search(t) for t in texts)


def test_one_namespace_with_a_small_public_api(tmp_path):
    """Installed, the project is `lg_harness.*`: no generic top-level `tools`, `llm`, `memory`, `evals`..."""
    import subprocess
    import sys

    probe = (
        "import importlib.util, lg_harness\n"
        "print(sorted(n for n in ('core','graphs','nodes','memory','tools','llm','evals','obs','domains','benchmarks',"
        "'peers','service')"
        " if importlib.util.find_spec(n) is not None))\n"
        "print(all(getattr(lg_harness, n) is not None for n in lg_harness.__all__))\n"
        "from lg_harness import Harness, Domain, HarnessError\n"
        "print(Harness.__module__, Domain.__module__, HarnessError.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    top_level, exported, modules = out.stdout.splitlines()
    assert top_level == "[]", f"installed as generic top-level modules: {top_level}"
    assert exported == "True"
    assert modules == "lg_harness.graphs.app lg_harness.core.domain lg_harness.errors"
