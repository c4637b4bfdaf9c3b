"""The README is a short front door and the docs site builds: every link resolves, the commands page is the
CLI's own help, the site builds with ``mkdocs build --strict`` and fetches nothing to be read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
import yaml

pytestmark = [pytest.mark.docs, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_MAX_LINES = 250
FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.I)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def relative_links(path: Path) -> list[str]:
    """Link targets of a markdown file that point at files of the repository (code spans left out)."""
    text = INLINE_CODE.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
    return [t for t in LINK.findall(text) if not EXTERNAL.match(t)]


def test_readme_is_a_front_door_of_at_most_250_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
    # .ci/run runs the second of these two lines: they open the README, in this order
    assert lines[3].startswith("bash scripts/setup.sh && ") and lines[4].startswith("bash scripts/setup.sh --dev && ")


def test_every_relative_link_in_the_readme_and_docs_resolves_to_a_file():
    broken = []
    for page in pages():
        for target in relative_links(page):
            file = target.split("#", 1)[0]
            if file and not (page.parent / file).resolve().exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def test_the_link_finder_sees_links_and_skips_code(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("[a](x.md#y) ![i](img/p.png) [w](https://e.org) [h](#top) `[c](no.md)`\n\n"
                    "```md\n[d](no2.md)\n```\n", encoding="utf-8")
    assert relative_links(page) == ["x.md#y", "img/p.png"]


def test_the_commands_page_is_the_clis_own_help():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_every_docs_page_is_in_the_site_navigation():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def walk(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from walk(value)

    in_nav = set(walk(config["nav"]))
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert on_disk <= in_nav, f"pages missing from mkdocs.yml's nav: {sorted(on_disk - in_nav)}"
    assert in_nav <= on_disk, f"nav entries without a page: {sorted(in_nav - on_disk)}"


@pytest.mark.slow
def test_the_site_builds_strict_and_offline(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "index.html").is_file() and (site / "results" / "index.html").is_file()
    html = (site / "index.html").read_text(encoding="utf-8")
    # no web fonts or scripts from elsewhere: the site reads offline
    assert not re.search(r"<(?:link|script)[^>]+(?:href|src)=\"https?://", html), "the site loads something from the web"
    assert dead_links(site) == [], "a docs page links to something the site does not hold"


def dead_links(site: Path) -> list[tuple[str, str]]:
    """(page, link) for each relative link or image of a docs page that points at nothing in the built site
    (the copies of repository files under ``repo/`` are pages the links lead to, not checked themselves)."""
    dead = []
    for page in site.rglob("index.html"):
        rel = page.relative_to(site).as_posix()
        if rel.startswith(("repo/", "search/", "assets/")):
            continue
        for href in re.findall(r'(?:href|src)="([^"]+)"', page.read_text(encoding="utf-8")):
            if href.startswith(("http:", "https:", "mailto:", "#", "data:", "javascript:")):
                continue
            path = site / unquote(urlparse(urljoin("/" + rel, href)).path).lstrip("/")
            if not (path.is_file() or (path / "index.html").is_file()):
                dead.append((rel, href))
    return dead
