#!/usr/bin/env bash
# bash reports/bench-graph/perf3_runs.sh: three bench graph runs, one after another, into
# reports/bench-graph/perf3-run{1,2,3}.txt (progress on stderr goes to /tmp/bench<N>.err)
cd "$(dirname "$0")/../.."  # the repository root
commit=$(git rev-parse --short HEAD)
for i in 1 2 3; do
  out=reports/bench-graph/perf3-run$i.txt
  {
    echo "# nice .venv/bin/harness bench graph  (branch perf, $commit)"
    echo "# run $i, $(date -u +%Y-%m-%dT%H:%M:%SZ), load: $(cut -d' ' -f1-3 /proc/loadavg)"
  } > $out
  nice .venv/bin/harness bench graph >> $out 2>/tmp/bench$i.err
  echo "# finished $(date -u +%H:%M:%SZ), load: $(cut -d' ' -f1-3 /proc/loadavg)" >> $out
done
