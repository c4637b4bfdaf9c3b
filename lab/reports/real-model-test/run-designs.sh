#!/bin/bash
# Real-model cells for the other designs and the peer on the test goal scenarios (issue 45, build 5), one run
# at a time, resumable (a rerun keeps finished cells), code at $RUN (a worktree of the commit in commit.txt).
#   <design>-<domain>$SUFFIX: the design on every test goal scenario of the domain, with the sim beside it
set -u
RUN=${RUN:-/work/run4}; OUT=/work/main/lab/reports/real-model-test; PY=/work/main/.venv/bin
MODEL="--model local:qwen2.5-coder-0.5b --model-timeout 240 --workers 1 --seeds 1"
step() {  # design domain
  local design=$1 d=$2 out="$OUT/${1//:/-}-$2${SUFFIX:-}"
  mkdir -p "$out"; uptime >> "$out/load-start.txt"; git -C "$RUN" rev-parse --short HEAD > "$out/commit.txt"
  (cd "$RUN" && PYTHONPATH="$RUN:$RUN/lab:$RUN/sim" nice -n 5 "$PY/harness" compare --designs "$design" --domain "$d" \
     --scenarios "lab/lg_harness_lab/packs/$d/goals/test.yaml" --split test --agreement sim $MODEL --limit 100 --out "$out")
  uptime >> "$out/load-end.txt"
}
for design in ${DESIGNS:-layered naive framework-default custom-lightweight state-machine peer:langchain-mw}; do
  for d in ${DOMAINS:-helpdesk shop}; do step "$design" "$d"; done
done
echo ALL DONE
