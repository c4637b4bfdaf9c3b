"""Type-check the whole project with pyright (basic mode; ``[tool.pyright]`` in pyproject.toml).

    .venv/bin/python scripts/typecheck.py          # exit 0 when clean; pyright's report otherwise
    .venv/bin/python scripts/typecheck.py --json   # pyright's JSON report (tests/test_typing.py reads it)

Why a script and not bare ``pyright``: the folders install under ``lg_harness`` by a ``package-dir`` mapping
(``core/`` is ``lg_harness.core``), which the editable install resolves with an import hook that no type
checker runs. This script lays that mapping out as links under ``build/pyright/lg_harness/`` (ignored by git,
rebuilt on every run from pyproject.toml, so a new package shows up by itself), which ``[tool.pyright]``
checks and names in ``extraPaths``; errors are reported at the links (their targets are the files).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINKS = ROOT / "build" / "pyright"


def lay_out_links(root: Path = ROOT) -> Path:
    """``build/pyright/lg_harness/<sub>/...``: one link per source file of every ``lg_harness.<sub>`` folder in the
    package-dir map, in real folders (pyright checks linked files, not linked folders). Each file is checked
    once, under the one name it is imported by."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
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
