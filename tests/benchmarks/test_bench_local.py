"""``harness bench local``'s arithmetic on recorded calls (the run itself needs the real model): time to first
token, cached share from a thread's second call, engine speed against the raw figure, and the targets said
as met or not."""

from __future__ import annotations

import pytest

from lg_harness.errors import UsageError
from lg_harness_lab.benchmarks.bench_local import design_of, message_figures, summary, targets


def call(started: float, prompt: int, cached: int, read: int, read_s: float, wrote: int, write_s: float) -> dict:
    return {"started": started, "latency_s": read_s + write_s, "prompt_tokens": prompt, "cached_tokens": cached,
            "prompt_eval_tokens": read, "prompt_eval_s": read_s, "generated_tokens": wrote, "generation_s": write_s}


RAW = {"read_tok_s": 100.0, "write_tok_s": 10.0}


def messages() -> list[dict]:
    # thread a: message 1 reads 400 cold, then 100 of 500; message 2 reads 50 of 550 and 40 of 600
    one = message_figures([call(10.5, 400, 0, 400, 4.0, 20, 2.0), call(17.0, 500, 400, 100, 1.0, 10, 1.0)], 10.0, 9.0)
    two = message_figures([call(30.2, 550, 500, 50, 0.5, 20, 2.0), call(33.0, 600, 560, 40, 0.4, 10, 1.0)], 30.0, 4.0)
    return [{"thread": "a", "index": 1, "text": "Where is my order ORD-10134?", "reply": "Shipped.", **one},
            {"thread": "a", "index": 2, "text": "And ORD-10198?", "reply": "Pending.", **two}]


def test_time_to_first_token_is_the_harness_work_before_the_call_plus_reading_the_prompt():
    first, second = messages()
    assert first["ttft_s"] == pytest.approx(0.5 + 4.0) and second["ttft_s"] == pytest.approx(0.2 + 0.5)
    assert first["calls"] == 2 and first["generated"] == 30


def test_the_summary_counts_cached_share_from_the_second_call_and_speeds_against_raw():
    s = summary(messages(), RAW)
    assert s["cached_share_from_call_2"] == pytest.approx((400 + 500 + 560) / (500 + 550 + 600))
    assert s["read_tok_s"] == pytest.approx(590 / 5.9) and s["read_vs_raw"] == pytest.approx(1.0)
    assert s["write_vs_raw"] == pytest.approx(60 / 6.0 / 10.0)
    assert s["ttft_ratio"] == pytest.approx(0.7 / 4.5)


def test_targets_say_met_and_not_met_for_each_design_against_naive():
    msgs = messages()
    slow = [{**m, "wall_s": m["wall_s"] * 2} for m in msgs]
    figures = {"designs": {"harness": summary(msgs, RAW), "harness+stable_prefix": summary(msgs, RAW),
                           "naive": summary(slow, RAW)},
               "transcripts": {"harness": msgs, "harness+stable_prefix": msgs, "naive": slow}}
    said = "\n".join(targets(figures))
    for name in ("harness", "harness+stable_prefix"):
        assert f"met ({name}): engine tokens/s" in said and f"met ({name}): cached share" in said
        assert f"met ({name}): time to first token" in said
        assert f"met ({name}): the first question ('Where is my order ORD-10134?')" in said
        assert f"NOT MET ({name}): s/msg {name} / naive at most 0.33: x0.50" in said
    assert "(naive)" not in said


def test_a_design_with_a_switch_turned_on_and_a_clear_error_for_a_knob_that_is_not_one():
    assert design_of("harness-no:stable_prefix+stable_prefix").knobs.stable_prefix
    assert not design_of("harness-no:stable_prefix").knobs.stable_prefix and design_of("harness").knobs.stable_prefix
    with pytest.raises(UsageError, match="not a switch knob"):
        design_of("harness+max_rounds")


def test_each_design_reads_only_its_own_saved_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two designs send the same first prompt: each call must see the states of its own design and an engine
    emptied at the switch, or the second design reads the first's answer from the cache."""
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.llm.local import LocalChatModel
    from lg_harness_lab.benchmarks.bench_local import TimedLocal, converse

    class Llama:
        resets = 0

        def reset(self) -> None:
            Llama.resets += 1

    class Engine:
        read_rate, write_rate = 100.0, 10.0

        def __init__(self) -> None:
            self.states, self.llama, self.seen = object(), Llama(), []

        def complete(self, messages, tools, **kw):
            self.seen.append(self.states)
            return {"text": "Your order has shipped.", "finish_reason": "stop", "prompt_tokens": 10,
                    "completion_tokens": 5, "cached_tokens": 0, "latency_s": 0.01, "prompt": "", "speed": {}}

    engine = Engine()
    shared = engine.states
    monkeypatch.setattr(LocalChatModel, "engine", lambda self: engine)
    out = converse(TimedLocal(model_path="unused.gguf"), DOMAIN, {"a": ["Where is my order ORD-10134?"]},
                   ("harness", "harness+stable_prefix"))
    calls = {d: sum(m["calls"] for m in msgs) for d, msgs in out.items()}
    assert all(calls.values())
    first, second = engine.seen[: calls["harness"]], engine.seen[calls["harness"]:]
    assert len(set(map(id, first))) == len(set(map(id, second))) == 1 and first[0] is not second[0]
    assert shared not in (first[0], second[0]) and engine.states is shared and Llama.resets == 2
