#!/usr/bin/env bash
# Create .venv and install the project. torch is installed first, pinned, so pip takes the CPU build that
# machines like ours carry locally instead of resolving an unpinned torch to a multi-GB CUDA build.
# Usage: bash scripts/setup.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q "$TORCH_SPEC" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import torch" || { echo "setup: torch did not install ($TORCH_SPEC); set TORCH_SPEC or install a CPU torch first" >&2; exit 1; }
extra=""
[ "${1:-}" = "--dev" ] && extra="[dev]"
.venv/bin/python -m pip install -q -e ".${extra}" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import graphs.cli, langgraph, chromadb, sentence_transformers" || { echo "setup: install failed" >&2; exit 1; }
echo "setup: ok ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))" >&2
