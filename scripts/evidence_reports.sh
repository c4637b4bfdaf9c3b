#!/usr/bin/env bash
# The sim reports of issue 25, resumable (finished cells are reused), per domain:
#   lab/reports/headline-<domain>/         test and heldout side by side (headline.md), 40 scenarios per split,
#                                      the six presets and peer:langchain-mw, fitted sim, outcome-judged;
#   lab/reports/routing-fallback-<domain>/ harness with and without the unsure-intent offer on dev and heldout;
#   lab/reports/sensitivity-intervals-<domain>/  the ranking across the fitted rates' 95% intervals (test).
#   bash scripts/evidence_reports.sh              # both domains
#   DOMAINS=shop bash scripts/evidence_reports.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DOMAINS=${DOMAINS:-"shop helpdesk"}
HARNESS=${HARNESS:-.venv/bin/harness}
DESIGNS=naive,framework-default,custom-lightweight,state-machine,layered,harness,peer:langchain-mw
for domain in $DOMAINS; do
  splits=test
  if [ -n "$(ls lg_harness/domains/"$domain"/scenarios/heldout 2>/dev/null)" ]; then splits=test,heldout; fi
  nice "$HARNESS" compare --domain "$domain" --designs "$DESIGNS" --split "$splits" --limit 40 --seeds 1 \
    --workers 1 --out "lab/reports/headline-$domain"
  nice "$HARNESS" compare --domain "$domain" --designs harness,harness-no:unsure_offer \
    --split "dev${splits#test}" --limit 60 --seeds 1 --workers 1 --out "lab/reports/routing-fallback-$domain"
  nice "$HARNESS" compare --domain "$domain" --designs "$DESIGNS" --sweep default --limit 40 --seeds 1 \
    --workers 1 --out "lab/reports/sensitivity-intervals-$domain"
done
