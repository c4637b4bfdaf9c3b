"""The library installs alone: its wheel holds no module of the lab or the simulated model, and installed with the
simulated model's wheel (and nothing of the lab) ``harness run`` answers on ``sim``, while the lab's commands say
how to install the lab.

The wheels are built from this checkout and installed into a fresh virtual environment whose third-party
packages come from the test's own environment (a path file: no download, and no editable install of this
checkout reaches it).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(source: Path, parts: list[str], out: Path) -> Path:
    """The wheel of the distribution at ``source`` (its ``parts``, copied as a fresh clone has them: no build
    folder left by an earlier build), built offline with this environment's setuptools."""
    tree = out / "src"
    for part in parts:
        if (source / part).is_dir():
            shutil.copytree(source / part, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            tree.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / part, tree / part)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "-w", str(out), str(tree)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    return {"library": build_wheel(ROOT, ["pyproject.toml", "README.md", "lg_harness"], tmp_path_factory.mktemp("library")),
            "sim": build_wheel(ROOT / "sim", ["pyproject.toml", "simlm"], tmp_path_factory.mktemp("sim"))}


def test_the_library_wheel_holds_the_library_only(wheels):
    names = zipfile.ZipFile(wheels["library"]).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"lg_harness", next(t for t in tops if t.endswith(".dist-info"))}, tops
    assert "lg_harness/graphs/builder.py" in names and "lg_harness/domains/shop/__init__.py" in names
    assert not [n for n in names if n.startswith(("lg_harness_lab", "simlm", "lg_harness/evals", "lg_harness/peers",
                                                  "lg_harness/benchmarks"))]
    # the packs' scenario sets measure designs: they are the lab's (lab/lg_harness_lab/packs/)
    assert not [n for n in names if "/scenarios/" in n or "/goals/" in n]
    sim = zipfile.ZipFile(wheels["sim"]).namelist()
    assert "simlm/brain.py" in sim and "simlm/fitted.yaml" in sim
    assert {n.split("/")[0] for n in sim if not n.split("/")[0].endswith(".dist-info")} == {"simlm"}


def test_the_library_and_the_sim_alone_run_a_message_on_sim(wheels, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    [packages] = list((venv / "lib").glob("python3.*/site-packages"))
    # the third-party packages of this environment, as a plain path: its own path files (the editable installs of
    # this checkout) are not read from there
    (packages / "zz_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    python = venv / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                              str(wheels["library"]), str(wheels["sim"])], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    where = subprocess.run([str(python), "-c", "import lg_harness, simlm, importlib.util as u; "
                            "print(lg_harness.__file__); print(u.find_spec('lg_harness_lab'))"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert where.returncode == 0, where.stderr[-2000:]
    assert where.stdout.splitlines() == [str(packages / "lg_harness" / "__init__.py"), "None"], where.stdout

    harness = venv / "bin" / "harness"
    run = subprocess.run([str(harness), "run", "Where is my order ORD-10144?", "--user", "U001", "--json",
                          "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert "ORD-10144" in result["reply"] and [c["name"] for c in result["tool_calls"]] == ["get_order_status"]

    lab = subprocess.run([str(harness), "compare", "--domain", "shop"], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=env)
    assert lab.returncode == 2 and "part of the lab" in lab.stderr and "pip install -e ./lab" in lab.stderr
