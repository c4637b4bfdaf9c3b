#!/usr/bin/env bash
# The real-model run of issue 25, resumable: on local:qwen2.5-coder-0.5b, per domain,
#   1. harness and naive on the test split (LIMIT scenarios, a spread over scenario kinds) and on the whole
#      held-out split, in lab/reports/real-model-<domain>/{test,heldout}/ and headline.md side by side;
#   2. harness, layered, naive and peer:langchain-mw on the same test scenarios (the first run's harness
#      and naive cells are reused), in lab/reports/real-model-<domain>/report.md; headline.md is refreshed.
# Interrupted? Run the same command again: finished cells (cells.jsonl) are not rerun. Each report states
# its n; commit partial reports as they are.
#
#   bash scripts/real_model_run.sh                 # both domains, 40 test scenarios each
#   LIMIT=4 DOMAINS=shop bash scripts/real_model_run.sh
#
# One real-model job at a time on a shared machine: every step takes the lock file LOCK (flock) and runs
# under nice. The model gets MODEL_TIMEOUT seconds per call (a CPU answers in tens of seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-local:qwen2.5-coder-0.5b}
LIMIT=${LIMIT:-40}
DOMAINS=${DOMAINS:-"shop helpdesk"}
LOCK=${LOCK:-/work/wt/local-model.lock}
MODEL_TIMEOUT=${MODEL_TIMEOUT:-240}
HARNESS=${HARNESS:-.venv/bin/harness}

for domain in $DOMAINS; do
  out=lab/reports/real-model-$domain
  common=(--domain "$domain" --model "$MODEL" --model-timeout "$MODEL_TIMEOUT" --workers 1 --out "$out")
  splits=test,heldout
  # before the held-out scenarios exist there is only the test split to run
  if [ -z "$(ls lg_harness/domains/"$domain"/scenarios/heldout 2>/dev/null)" ]; then
    splits=test
  fi
  flock "$LOCK" nice "$HARNESS" compare --designs harness,naive --split "$splits" --limit "$LIMIT" "${common[@]}"
  flock "$LOCK" nice "$HARNESS" compare --designs harness,layered,naive,peer:langchain-mw --split test \
    --limit "$LIMIT" "${common[@]}"
done
