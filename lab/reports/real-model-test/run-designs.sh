#!/bin/bash
# Real-model cells for the other designs and the peer on the test goal scenarios (issue 45, build 5), one run
# at a time, resumable (a rerun keeps finished cells), code at $RUN (a worktree of the commit in commit.txt).
#   <design>-<domain>$SUFFIX: the design on every test goal scenario of the domain, with the sim beside it
set -u
#   SPLIT=heldout: the held-out goal scenarios instead, into ../real-model-heldout/
RUN=${RUN:-/work/run4}; SPLIT=${SPLIT:-test}; PY=/work/main/.venv/bin
OUT=/work/main/lab/reports/real-model-$SPLIT
MODEL="--model local:qwen2.5-coder-0.5b --model-timeout 240 --workers 1 --seeds 1"
scenarios() {  # domain
  if [ "$SPLIT" = test ]; then echo "lab/lg_harness_lab/packs/$1/goals/test.yaml"
  else echo "lab/lg_harness_lab/packs/$1/scenarios/heldout/goals.yaml"; fi
}
step() {  # design domain
  local design=$1 d=$2 out="$OUT/${1//:/-}-$2${SUFFIX:-}"
  mkdir -p "$out"; uptime >> "$out/load-start.txt"; git -C "$RUN" rev-parse --short HEAD > "$out/commit.txt"
  (cd "$RUN" && PYTHONPATH="$RUN:$RUN/lab:$RUN/sim" nice -n 5 "$PY/harness" compare --designs "$design" --domain "$d" \
     --scenarios "$(scenarios "$d")" --split "$SPLIT" --agreement sim $MODEL --limit 100 --out "$out")
  uptime >> "$out/load-end.txt"
}
for design in ${DESIGNS:-layered naive framework-default custom-lightweight state-machine peer:langchain-mw}; do
  for d in ${DOMAINS:-helpdesk shop}; do step "$design" "$d"; done
done
echo ALL DONE
