#!/bin/bash
# Real-model cells, one run at a time, resumable (rerun: finished cells are kept), code at $RUN (a worktree).
#   test-<d>: harness on every test goal scenario of the domain, with the sim beside it (issues 41 and 45)
#   then harness on the shop's held-out goal scenarios
# (lab/reports/real-model-dev/repeat-fix-<d> ran the same way at e557cb4, on the 16 dev scenarios of real-model-dev)
set -u
RUN=${RUN:-/work/run3}; OUT=/work/main/reports
MODEL="--model local:qwen2.5-coder-0.5b --model-timeout 240 --workers 1 --seeds 1"
step() {  # out designs domain scenarios split limit
  local out=$1 designs=$2 d=$3 scen=$4 split=$5 limit=$6
  mkdir -p "$out"; uptime >> "$out/load-start.txt"; git -C "$RUN" rev-parse --short HEAD > "$out/commit.txt"
  (cd "$RUN" && PYTHONPATH="$RUN" nice -n 5 .venv/bin/harness compare --designs "$designs" --domain "$d" \
     --scenarios "$scen" --split "$split" --agreement sim $MODEL --limit "$limit" --out "$out")
  uptime >> "$out/load-end.txt"
}
for d in helpdesk shop; do
  step "$OUT/real-model-test/harness-$d" harness $d lab/lg_harness_lab/packs/$d/goals/test.yaml test 100
done
step "$OUT/real-model-heldout-shop-after" harness shop lab/lg_harness_lab/packs/shop/scenarios/heldout/goals.yaml heldout 50
echo ALL DONE
