import json
from lg_harness.benchmarks.bench_local import run_bench_local, format_table, notes, targets
f = run_bench_local(messages=6, designs=("harness", "harness+stable_prefix"))
json.dump({"bench": "local", "figures": f}, open("/tmp/bench/local2.json", "w"), indent=1, ensure_ascii=False)
print(format_table(f)); print(); print("\n".join(notes(f))); print(); print("\n".join(targets(f)))
