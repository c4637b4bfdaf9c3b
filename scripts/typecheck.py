"""Type-check the whole project with pyright (basic mode; ``[tool.pyright]`` in pyproject.toml).

    .venv/bin/python scripts/typecheck.py          # exit 0 when clean; pyright's report otherwise
    .venv/bin/python scripts/typecheck.py --json   # pyright's JSON report (tests/project/test_typing.py reads it)

Why a script and not bare ``pyright``: the folders are reached as ``lg_harness.<name>`` through the committed
folder links ``lg_harness/<name> -> ../<name>``, and pyright follows linked files but checks a linked folder's
files again under their top-level names (each class then has two identities). This script lays the same
folders out as file links under ``build/pyright/lg_harness/`` (ignored by git, rebuilt on every run from the
links in ``lg_harness/``, so a new package shows up by itself), which ``[tool.pyright]`` checks and names in
``extraPaths``; errors are reported at the links (their targets are the files).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINKS = ROOT / "build" / "pyright"


def lay_out_links(root: Path = ROOT) -> Path:
    """``build/pyright/lg_harness/<sub>/...``: one link per source file of every folder linked as
    ``lg_harness/<sub>``, in real folders (pyright checks linked files, not linked folders). Each file is checked
    once, under the one name it is imported by."""
    package = root / "lg_harness"
    mapping = {"lg_harness": "lg_harness"} | {f"lg_harness.{link.name}": str(link.resolve().relative_to(root))
                                             for link in sorted(package.iterdir()) if link.is_symlink() and link.is_dir()}
    top = root / "build" / "pyright" / "lg_harness"
    if top.parent.exists():
        shutil.rmtree(top.parent)
    top.mkdir(parents=True)
    for file in (root / mapping["lg_harness"]).glob("*.py"):  # the top package's own files: a regular package
        (top / file.name).symlink_to(os.path.relpath(file, top))
    for name, folder in mapping.items():
        parts = name.split(".")
        if parts[0] != "lg_harness" or len(parts) != 2:
            continue  # the top package (above), subpackages of a mapped folder, other top-level names
        source = root / folder
        for file in source.rglob("*.py"):
            if "__pycache__" in file.parts:
                continue
            link = top / parts[1] / file.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(file, link.parent))
    return top


def run_pyright(*args: str, root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    lay_out_links(root)
    return subprocess.run([sys.executable, "-m", "pyright", "--pythonpath", sys.executable, *args],
                          cwd=root, capture_output=True, text=True)


def main() -> int:
    done = run_pyright("--outputjson") if "--json" in sys.argv[1:] else run_pyright()
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
