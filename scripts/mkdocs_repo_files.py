"""An mkdocs hook: files of the repository that the docs link to (``../lab/reports/...``, ``../README.md``) become part
of the site, under ``repo/``, so no link of the site is dead.

A page links to a report as it sits in the repository (``../lab/reports/bench-local/README.md``), which reads right
on a forge and in an editor. The site holds only ``docs/``: such a link would point outside it. This hook adds
each linked file, and the files beside it (a report's plots and data), to the site at ``repo/<path>``, and
rewrites the page's link to that copy. A linked Markdown file becomes a page of its own (not in the navigation).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

# a Markdown link or image whose target climbs out of docs/: ](../path) or ](../path#anchor)
LINK = re.compile(r"\]\(\.\./([^)#\s]+)(#[^)\s]*)?\)")
PREFIX = "repo"
BESIDE = {".png", ".svg", ".json", ".jsonl", ".md", ".txt", ".yaml", ".csv"}


def _linked(docs_dir: Path) -> set[str]:
    """Repository paths the docs' pages link to."""
    return {m.group(1) for page in docs_dir.rglob("*.md") for m in LINK.finditer(page.read_text(encoding="utf-8"))}


def on_files(files: Files, config: Any) -> Files:
    docs_dir = Path(config["docs_dir"]).resolve()
    root = docs_dir.parent
    wanted: set[Path] = set()
    for target in _linked(docs_dir):
        path = (root / target).resolve()
        if path.is_file() and root in path.parents:
            wanted.add(path)
            wanted.update(p for p in path.parent.iterdir() if p.is_file() and p.suffix in BESIDE
                          and path.parent != root)
    for path in sorted(wanted):
        uri = f"{PREFIX}/{path.relative_to(root).as_posix()}"
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Links out of ``docs/`` point at the site's copy (a top-level page: ``repo/<path>``)."""
    depth = page.file.src_uri.count("/")
    up = "../" * depth
    return LINK.sub(lambda m: f"]({up}{PREFIX}/{m.group(1)}{m.group(2) or ''})", markdown)
