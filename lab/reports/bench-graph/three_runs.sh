#!/usr/bin/env bash
# bash lab/reports/bench-graph/three_runs.sh TAG: three `harness bench graph` runs, one after another, into
# lab/reports/bench-graph/TAG-run{1,2,3}.txt, each headed by the commit, the time and the load average
# (progress on stderr goes to /tmp/bench-TAG-<N>.err). Only ratios measured within one run mean anything.
set -euo pipefail
tag=${1:?usage: three_runs.sh TAG}
cd "$(dirname "$0")/../../.."  # the repository root
commit=$(git rev-parse --short HEAD)
for i in 1 2 3; do
  out=lab/reports/bench-graph/$tag-run$i.txt
  {
    echo "# nice .venv/bin/harness bench graph  ($commit)"
    echo "# run $i, $(date -u +%Y-%m-%dT%H:%M:%SZ), load: $(cut -d' ' -f1-3 /proc/loadavg)"
  } > "$out"
  nice .venv/bin/harness bench graph >> "$out" 2>"/tmp/bench-$tag-$i.err"
  echo "# finished $(date -u +%H:%M:%SZ), load: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
done
