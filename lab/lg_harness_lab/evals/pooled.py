"""Each metric of a design as one pooled ratio over its runs, split by scenario cluster for the intervals.

A metric is ``sum(num) / sum(den)`` over a design's cells (runs of one scenario with one seed): successes
over runs, valid calls over calls, tokens over messages. Keeping the sums per cluster (see
:func:`evals.clusters.cluster_of`) is all the bootstrap needs, and all the report needs to pair two designs
on any metric later. Every seed of a scenario is in the scenario's cluster, so the seeds add runs to a
cluster instead of being the unit of the interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from lg_harness_lab.evals import stats

# What a metric counts, for "n" beside its figure. Task completion and the counts are per scenario run.
UNITS = {
    "task_completion": "scenarios", "turn_pass_rate": "turns", "arg_validity_emitted": "calls",
    "arg_validity_boundary": "calls", "intent_accuracy": "turns", "model_calls_per_msg": "messages",
    "input_tokens_per_msg": "messages", "input_tokens_per_call": "model calls",
    "prompt_cache_hit_rate": "input tokens", "latency_mean_s": "messages", "latency_p50_s": "messages",
    "latency_p95_s": "messages", "early_reference": "recall turns", "repeated_questions": "scenarios",
    "loops_stopped": "scenarios", "handoffs": "scenarios", "handoff_accuracy": "turns",
    "retries_per_429": "429 episodes", "retry_after_honored": "attempts after a 429", "tool_failure_rate": "calls",
    "false_facts": "replies with tool results", "internal_text": "replies", "dump_replies": "replies",
    "wrong_language": "replies", "relayed_instruction": "replies", "restated": "replies with tool results",
    "unrequested_changes": "scenarios", "end_state": "scenarios", "wrong_changes": "scenarios",
}

# Rates that count independent-enough trials (runs, turns, calls): a Wilson interval is their fallback when
# they rest on few clusters. The cache hit rate is a share of tokens, not of trials, so it has none.
PROPORTIONS = frozenset({"task_completion", "turn_pass_rate", "arg_validity_emitted", "arg_validity_boundary",
                         "intent_accuracy", "early_reference", "handoff_accuracy", "retry_after_honored",
                         "tool_failure_rate", "false_facts", "internal_text", "dump_replies", "wrong_language",
                         "relayed_instruction", "end_state", "restated"})

# Ratio metrics read from a cell's pooled counts: metric -> the [numerator, denominator] pair.
COUNTED = {
    "turn_pass_rate": "turn_pass", "intent_accuracy": "intent", "arg_validity_emitted": "args_emitted",
    "arg_validity_boundary": "args_boundary", "early_reference": "recall", "handoff_accuracy": "handoff",
    "retries_per_429": "retries", "retry_after_honored": "honored", "tool_failure_rate": "tool_failures",
    "false_facts": "false_facts", "internal_text": "internal_text", "dump_replies": "dump",
    "wrong_language": "wrong_language", "relayed_instruction": "relayed_instruction", "end_state": "end_state",
    "restated": "restated",
}
SUMMED = ("repeated_questions", "loops_stopped", "handoffs", "unrequested_changes", "wrong_changes")
PERCENTILES = {"latency_p50_s": 50.0, "latency_p95_s": 95.0}


def cell_parts(cell: Mapping[str, Any], n_scenarios: int) -> dict[str, tuple[float, float]]:
    """(numerator, denominator) of every ratio metric in one cell.

    The counts (repeated questions, loops stopped, handoffs) are reported per seed over all scenarios; a
    cell's denominator of ``1 / n_scenarios`` makes the pooled ratio exactly that (a full run's
    denominators add up to the number of seeds).
    """
    msgs = cell["messages"]
    per_call = [x for m in msgs for x in m["call_input_tokens"]]
    cached = [m for m in msgs if m["cached_input_tokens"] is not None]
    parts = {
        "task_completion": (float(cell["success"]), 1.0),
        "model_calls_per_msg": (sum(m["model_calls"] for m in msgs), len(msgs)),
        "input_tokens_per_msg": (sum(m["input_tokens"] for m in msgs), len(msgs)),
        "input_tokens_per_call": (sum(per_call), len(per_call)),
        "prompt_cache_hit_rate": (sum(m["cached_input_tokens"] for m in cached), sum(m["input_tokens"] for m in cached)),
        "latency_mean_s": (sum(m["latency_s"] for m in msgs), len(msgs)),
    }
    parts.update({k: tuple(cell["counts"][pair]) for k, pair in COUNTED.items()})
    parts.update({k: (float(cell["sums"][k]), 1.0 / max(n_scenarios, 1)) for k in SUMMED})
    return parts


def by_cluster(cells: Sequence[Mapping[str, Any]], n_scenarios: int) -> dict[str, dict[str, list[float]]]:
    """metric -> cluster -> [num, den] summed over the cells."""
    out: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for cell in cells:
        for metric, (num, den) in cell_parts(cell, n_scenarios).items():
            acc = out[metric].setdefault(cell["cluster"], [0.0, 0.0])
            acc[0] += num
            acc[1] += den
    return dict(out)


def _scenarios_with_data(cells: Sequence[Mapping[str, Any]], n_scenarios: int) -> dict[str, int]:
    seen: dict[str, set[str]] = defaultdict(set)
    for cell in cells:
        for metric, (_, den) in cell_parts(cell, n_scenarios).items():
            if den:
                seen[metric].add(cell["scenario"])
        if cell["messages"]:
            for metric in PERCENTILES:
                seen[metric].add(cell["scenario"])
    return {k: len(v) for k, v in seen.items()}


def _latency_groups(cells: Sequence[Mapping[str, Any]]) -> list[list[float]]:
    groups: dict[str, list[float]] = defaultdict(list)
    for cell in cells:
        groups[cell["cluster"]].extend(m["latency_s"] for m in cell["messages"])
    return [groups[k] for k in sorted(groups)]


def design_stats(cells: Sequence[Mapping[str, Any]], keys: Sequence[str], pooled_latency: Mapping[str, Any],
                 seeds: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every metric of one design: pooled value, 95% interval, n and per-cluster sums.

    ``pooled_latency`` holds the percentiles over all messages (``p50``, ``p95``, ``n``); ``seeds`` the
    across-seed figures (``per_seed`` and the seeds' own t-interval ``seed_ci``), kept beside the interval
    that counts for readers who want to see the dice's share of the spread.
    """
    n_scenarios = len({c["scenario"] for c in cells})
    sums = by_cluster(cells, n_scenarios)
    with_data = _scenarios_with_data(cells, n_scenarios)
    out = {}
    for key in keys:
        if key in PERCENTILES:
            value = pooled_latency.get("p50" if key == "latency_p50_s" else "p95")
            ci = stats.percentile_ci(_latency_groups(cells), PERCENTILES[key]) if value is not None else None
            est = {"mean": value, "ci": ci, "method": "cluster-bootstrap" if ci else None,
                   "clusters": len({c["cluster"] for c in cells if c["messages"]}),
                   "units": pooled_latency.get("n", 0)}
            cluster_sums = None
        else:
            est = stats.estimate(sums.get(key, {}), proportion=key in PROPORTIONS)
            cluster_sums = sums.get(key, {})
        out[key] = {**est, "unit": UNITS[key], "n": with_data.get(key, 0), **seeds.get(key, {}),
                    "by_cluster": cluster_sums}
    return out


def completion_by_cluster(cells: Sequence[Mapping[str, Any]], scenarios: set[str] | None = None
                          ) -> dict[str, list[float]]:
    """cluster -> [successes, runs], over ``scenarios`` only when given (to pair designs on shared ones)."""
    return stats.by_cluster((c["cluster"], float(c["success"]), 1.0) for c in cells
                            if scenarios is None or c["scenario"] in scenarios)


def paired_completion(cells: Sequence[Mapping[str, Any]], base: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Task completion of ``cells`` minus ``base`` over the scenarios both ran, clusters resampled jointly."""
    shared = {c["scenario"] for c in cells} & {c["scenario"] for c in base}
    diff = stats.paired(completion_by_cluster(cells, shared), completion_by_cluster(base, shared))
    return {**diff, "n": len(shared)}
