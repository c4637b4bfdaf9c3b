#!/usr/bin/env bash
# The chaos figures of lab/reports/chaos/: every setup of the issue (two domains, two backends, confirm_changes on
# and off), at least 100 crashed runs each, with the rewording model. One process per setup, so a setup's
# figures are saved as soon as it finishes. Needs a PostgreSQL whose role may create databases:
#   pg_ctlcluster 15 main start   (the role and database of .ci/run)
set -euo pipefail
cd "$(dirname "$0")/../../.."
url="${HARNESS_TEST_DATABASE_URL:-postgresql://harness:harness@127.0.0.1:5432/harness}"
for domain in shop helpdesk; do
  for backend in sqlite postgres; do
    for confirm in on off; do
      name="$domain-$backend-confirm-$confirm"
      [ -s "lab/reports/chaos/$name.json" ] && continue  # resumable: a finished setup is not run again
      nice .venv/bin/python -m lg_harness_lab.benchmarks.bench_chaos --domain "$domain" --backend "$backend" \
        --confirm "$confirm" --crashes 100 --database-url "$url" --json "lab/reports/chaos/$name.json.tmp" \
        > "lab/reports/chaos/$name.txt" 2> "lab/reports/chaos/$name.log"
      mv "lab/reports/chaos/$name.json.tmp" "lab/reports/chaos/$name.json"
    done
  done
done
