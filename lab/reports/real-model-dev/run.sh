#!/bin/bash
# Real-model cells for issues 41 and 45, one run at a time, resumable (rerun: finished cells are kept).
#   after:  harness, layered, naive on 16 dev goal scenarios per domain, code at $AFTER (a worktree of it in $RUN)
#   before: harness alone on the same scenarios, code at $BEFORE (the main checkout before the change)
#   heldout: harness on helpdesk's 50 held-out goal scenarios, code at $AFTER, with the sim beside it
set -u
RUN=${RUN:-/work/run}; BEFORE_TREE=${BEFORE_TREE:-/work/main}; OUT=/work/main/reports
MODEL="--model local:qwen2.5-coder-0.5b --model-timeout 240 --workers 1 --seeds 1"
step() {  # tree out designs domain scenarios split limit
  local tree=$1 out=$2 designs=$3 d=$4 scen=$5 split=$6 limit=$7
  mkdir -p "$out"; uptime > "$out/load-start.txt"; git -C "$tree" rev-parse --short HEAD > "$out/commit.txt"
  (cd "$tree" && PYTHONPATH="$tree" nice -n 5 .venv/bin/harness compare --designs "$designs" --domain "$d" \
     --scenarios "$scen" --split "$split" --agreement sim $MODEL --limit "$limit" --out "$out")
  uptime > "$out/load-end.txt"
}
for d in helpdesk shop; do
  step "$RUN" "$OUT/real-model-dev/after-$d" harness,layered,naive $d lab/lg_harness_lab/packs/$d/goals/dev.yaml dev 16
done
for d in helpdesk shop; do
  step "$BEFORE_TREE" "$OUT/real-model-dev/before-$d" harness $d lab/lg_harness_lab/packs/$d/goals/dev.yaml dev 16
done
step "$RUN" "$OUT/real-model-heldout-helpdesk-after" harness helpdesk lab/lg_harness_lab/packs/helpdesk/scenarios/heldout/goals.yaml heldout 50
echo ALL DONE
