"""The project type-checks, and a user's type checker sees the public API's real types.

pyright (basic mode, ``[tool.pyright]`` in pyproject.toml) runs once over the whole project (``.venv/bin/pyright``:
every file lives under the one name it is imported by, so no shadow tree is laid out). Two things are checked on
its report:

- ``tests/typing/reveal_send.py``, written as a user would write it (``from lg_harness import Harness``),
  reveals ``SendResult`` for ``Harness(...).send(...)``, and the other types its comments expect;
- the whole project is clean: no error anywhere (the failure lists them by folder, with file and line).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docs, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
REVEAL = ROOT / "tests" / "typing" / "reveal_send.py"


def run_pyright(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pyright", "--pythonpath", sys.executable, *args],
                          cwd=ROOT, capture_output=True, text=True)


def _folder(file: str) -> str:
    return Path(file).resolve().relative_to(ROOT).parts[0]


def _revealed(report: dict[str, Any]) -> tuple[dict[int, str], dict[int, str], list[str]]:
    expected = {i: m.group(1).strip() for i, line in enumerate(REVEAL.read_text().splitlines())
                if (m := re.search(r"# expect: (.+)$", line))}
    mine = [d for d in report["generalDiagnostics"] if Path(d["file"]).resolve() == REVEAL]
    revealed = {d["range"]["start"]["line"]: re.sub(r'^Type of ".*" is "(.*)"$', r"\1", d["message"])
                for d in mine if d["severity"] == "information"}
    return expected, revealed, [d["message"] for d in mine if d["severity"] == "error"]


@pytest.mark.slow
def test_the_project_type_checks_and_a_user_sees_send_return_a_send_result() -> None:
    # One pyright run for both checks: it takes minutes.
    done = run_pyright("--outputjson")
    assert done.stdout.strip(), f"pyright gave no report: {done.stderr[-2000:]}"
    report = json.loads(done.stdout)

    expected, revealed, errors = _revealed(report)
    assert revealed == expected, "what a user's type checker sees of tests/typing/reveal_send.py"
    assert errors == []

    errors_all = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    by_folder = dict(sorted(Counter(_folder(d["file"]) for d in errors_all).items()))
    shown = "\n".join(f"{Path(d['file']).resolve().relative_to(ROOT)}:{d['range']['start']['line'] + 1}: "
                      f"{d['message'].splitlines()[0]} ({d.get('rule', '')})" for d in errors_all)
    assert not errors_all, f"{len(errors_all)} type errors; by folder {by_folder}; run .venv/bin/pyright\n{shown}"
