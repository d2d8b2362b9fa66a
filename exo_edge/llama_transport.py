"""Local GGUF generation over llama-cpp-python, as a model transport.

* **Lazy, once.** The model loads on first use (or :meth:`LlamaTransport.load`)
  in the transport's own worker thread; one ``Llama`` object serves every call.
* **Never blocks the loop.** Prompt processing and decoding run in that worker;
  each piece of text is handed to the event loop with ``call_soon_threadsafe``.
* **Stops promptly.** When the consumer stops iterating (``turn.interrupt``),
  the worker is told between two tokens and returns; the next call waits for it.
* **Prompt formats.** ``chat`` uses the model's own chat template;
  ``completion`` renders a base-model prompt (:mod:`exo_edge.prompting`).
* **Tools under a grammar.** With ``tool_choice="auto"`` the answer is
  generated freely and streamed, held back only while it could still begin
  with ``CALL``; if it does, generation stops and the call's JSON is generated
  under a grammar from the tools' schemas (the prompt prefix is still in the KV
  cache). ``required`` or a tool name goes straight to the constrained call.
  Free text never pays for grammar sampling over the 262k-token vocabulary.
* **Answer clean-up.** A completion-format answer streams through
  :class:`exo_edge.answer_tidy.AnswerTidy` (set by the manifest's ``[prompt]``),
  and decoding stops as soon as it says the answer is complete.
* **Prefix reuse.** llama-cpp-python keeps the KV cache of the longest common
  token prefix with the previous call on the same object; the usage chunk
  reports those tokens as ``cache_read_tokens``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import functools
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from exo_core.agent.grounding import call_grounding
from exo_core.agent.model import (
    ContextWindow,
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCallChunk,
    UsageChunk,
)
from exo_core.errors import ClosedResourceError
from exo_core.models.failures import FailureKind, ProviderError
from exo_edge.answer_tidy import AnswerTidy
from exo_edge.chat_run import CallJudge, ChatDecision, call_openers, run_chat
from exo_edge.chat_template import ChatTemplate
from exo_edge.grammar_decode import common_prefix, greedy_under_grammar
from exo_edge.llama_window import WHERE, LlamaCounter, guard_request, llama_window
from exo_edge.manifest import PromptFormat
from exo_edge.prompting import (
    CALL_PREFIX,
    call_grammar,
    chat_messages,
    parse_tool_call,
    render_completion,
    tool_grammar,
)

__all__ = ["KV_TYPES", "LlamaSettings", "CallStats", "LlamaTransport", "rss_bytes"]

T = TypeVar("T")


def rss_bytes() -> int:
    """This process's resident set size in bytes (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


KV_TYPES = {"f16": 1, "q8_0": 8}  # llama.cpp's GGML_TYPE_* codes for the KV cache


@dataclass(frozen=True, slots=True)
class LlamaSettings:
    """How to run one GGUF model. Sized for a small board by default.

    ``n_ubatch`` bounds llama.cpp's compute buffer: it is reserved for the
    logits of ``n_ubatch`` tokens over the whole vocabulary (262,144 for
    Gemma 3: 1 MB a token), although a turn reads only the last token's, so
    most of it is never touched: 64 instead of 256 shrinks the reservation
    (address space, what ``prlimit --as`` counts) but the measured peak RSS
    by only 7 MB, and prompt speed moved within the noise (0.72x and 1.07x
    in two runs of ``benchmarks/bench_llama_memory.py``), so 256 stays.
    ``kv_type`` ``q8_0`` halves the KV cache (it needs ``flash_attn``) but
    changed one of two tool calls in ``benchmarks/bench_llama_memory.py``, so
    f16 stays the default.
    ``swa_full`` keeps a full-length cache for the sliding-window layers,
    which prefix reuse needs (llama.cpp cannot roll a windowed cache back).
    ``use_mmap`` maps the GGUF (file-backed pages the kernel can drop and
    re-read under pressure) instead of copying it into anonymous memory.
    """

    model_path: Path
    prompt: PromptFormat = field(default_factory=PromptFormat)
    n_ctx: int = 2048
    n_threads: int = 2
    n_batch: int = 256
    n_ubatch: int = 256
    kv_type: str = "f16"
    flash_attn: bool = False
    swa_full: bool = True
    use_mmap: bool = True
    seed: int = 0
    name: str = ""


@dataclass(frozen=True, slots=True)
class CallStats:
    """What the last call cost: tokens, reused prefix, timings (seconds)."""

    prompt_tokens: int
    reused_tokens: int
    output_tokens: int
    prompt_seconds: float
    total_seconds: float
    interrupted: bool


_END = object()
_DECIDE_TOKENS = 4  # greedy tokens that decide between a tool call and text


class LlamaTransport:
    """A :class:`~exo_core.agent.model.ModelTransport` for one local GGUF model."""

    def __init__(self, settings: LlamaSettings, *, judge: CallJudge = call_grounding) -> None:
        self.settings = settings
        self.judge = judge
        self._llm: Any = None
        self._template: ChatTemplate | None = None
        self._openers: frozenset[int] | None = None
        self.last_decision: ChatDecision | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="exo-llama")
        self._locks: dict[int, asyncio.Lock] = {}
        self._closed = False
        self.last: CallStats | None = None
        self.rss_after_load: int = 0

    @property
    def name(self) -> str:
        """The model name (manifest name, else the file stem)."""
        return self.settings.name or self.settings.model_path.stem

    def _lock(self) -> asyncio.Lock:
        """One call at a time per model, per event loop (the worker is shared)."""
        loop_id = id(asyncio.get_running_loop())
        lock = self._locks.get(loop_id)
        if lock is None:
            self._locks = {loop_id: asyncio.Lock()}
            lock = self._locks[loop_id]
        return lock

    # -- loading --------------------------------------------------------------------
    def _load_sync(self) -> Any:
        if self._llm is not None:
            return self._llm
        path = self.settings.model_path
        if not path.is_file():
            raise ProviderError(
                f"local model file {path} is missing; run `exo models fetch`",
                kind=FailureKind.UNAVAILABLE,
                provider="local",
            )
        try:
            import llama_cpp
        except ImportError as exc:
            raise ProviderError(
                "llama-cpp-python is not installed; run scripts/install_edge.sh with this environment's python",
                kind=FailureKind.UNAVAILABLE,
                provider="local",
            ) from exc
        try:
            s = self.settings
            kv = KV_TYPES.get(s.kv_type)
            if kv is None:
                raise ValueError(f"kv_type must be one of {', '.join(KV_TYPES)}, not {s.kv_type!r}")
            self._llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=s.n_ctx,
                n_threads=s.n_threads,
                n_threads_batch=s.n_threads,
                n_batch=s.n_batch,
                n_ubatch=min(s.n_ubatch, s.n_batch),
                type_k=kv,
                type_v=kv,
                flash_attn=s.flash_attn,
                swa_full=s.swa_full,
                use_mmap=s.use_mmap,
                seed=s.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(
                f"llama.cpp could not load {path} ({exc}); fetch it again with `exo models fetch`",
                kind=FailureKind.UNAVAILABLE,
                provider="local",
            ) from exc
        self.rss_after_load = rss_bytes()
        return self._llm

    async def load(self) -> None:
        """Load the model now (in the worker) instead of on the first call."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._load_sync)

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._llm is not None

    def memory(self) -> dict[str, int]:
        """RSS now and right after load, and the model file size, in bytes."""
        path = self.settings.model_path
        return {
            "rss": rss_bytes(),
            "rss_after_load": self.rss_after_load,
            "model_file": path.stat().st_size if path.is_file() else 0,
            "n_ctx": self.settings.n_ctx,
        }

    # -- one call -------------------------------------------------------------------
    def _generate(
        self,
        llm: Any,
        prompt: Any,
        request: ModelRequest,
        *,
        stop: list[str],
        grammar: Any,
        emit: Any,
        cancel: threading.Event,
        watch_call: bool,
        stream_text: bool,
        chat: bool = False,
        tidy: AnswerTidy | None = None,
    ) -> dict[str, Any]:
        """One llama.cpp generation in the worker.

        ``watch_call`` holds text back while the answer could still begin with
        ``CALL`` and stops as soon as it does (the caller then generates the
        call under a grammar); any other answer is streamed from there on.
        Streamed text goes through ``tidy``, which may end the answer early.
        """
        if chat:
            stream = llm.create_chat_completion(
                prompt,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                stop=stop or None,
                stream=True,
                grammar=grammar,
                seed=self.settings.seed,
            )
        else:
            stream = llm.create_completion(
                prompt,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                stop=stop,
                stream=True,
                grammar=grammar,
                seed=self.settings.seed,
            )
        pieces: list[str] = []
        held = watch_call
        saw_call = interrupted = False
        finish = "end"
        first_at: float | None = None
        try:
            for chunk in stream:
                if cancel.is_set():
                    interrupted = True
                    break
                choice = chunk["choices"][0]
                piece = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
                if choice.get("finish_reason") == "length":
                    finish = "length"
                if not piece:
                    continue
                first_at = first_at or time.perf_counter()
                pieces.append(piece)
                if held:
                    head = "".join(pieces).lstrip()
                    if head.startswith(CALL_PREFIX.strip()):
                        saw_call = True
                        break
                    if head and not CALL_PREFIX.strip().startswith(head):
                        held = False
                        if stream_text and _say(emit, tidy, "".join(pieces)):
                            break
                    continue
                if stream_text and _say(emit, tidy, piece):
                    break
        finally:
            stream.close()
        text = "".join(pieces)
        if held and not saw_call and text and stream_text:
            _say(emit, tidy, text)  # a short answer that only looked like the start of CALL
        return {"text": text, "finish": finish, "saw_call": saw_call, "interrupted": interrupted, "first_at": first_at}

    def _run(self, request: ModelRequest, emit: Any, cancel: threading.Event) -> dict[str, Any]:
        """Worker side of one call: render, generate, emit text pieces; returns the summary."""
        llm = self._load_sync()
        fmt = self.settings.prompt
        request = guard_request(llm, self.counter, request, n_ctx=self.settings.n_ctx, model=self.name)
        use_tools = bool(request.tools) and request.tool_choice != "none"
        stop = list(dict.fromkeys([*fmt.stop, *request.stop]))
        start = time.perf_counter()
        try:
            if fmt.format == "chat":
                return self._run_chat(llm, request, emit, cancel, use_tools, stop, start)
            after_call = use_tools and request.tool_choice == "auto" and _called_since_question(request)
            if after_call:
                # A small base model copies the CALL it just made: after a tool result
                # it answers from the result, without the tool list and its worked
                # examples (one tool round per question); an answer that still starts
                # another CALL is cut to nothing.
                use_tools = False
            prompt = render_completion(request.messages, fmt, request.tools if use_tools else ())
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
            limit = self.settings.n_ctx - request.max_tokens
            if len(tokens) > limit:
                raise ProviderError(
                    f"the prompt has {len(tokens)} tokens but only {limit} fit in n_ctx "
                    f"{self.settings.n_ctx} with max_tokens {request.max_tokens}; shorten the "
                    f"context or raise n_ctx ({WHERE})",
                    kind=FailureKind.BAD_REQUEST,
                    provider="local",
                )
            reused = common_prefix(list(llm._input_ids), tokens)
            mode = "call" if use_tools and request.tool_choice != "auto" else "text"
            result: dict[str, Any] = {
                "text": "",
                "finish": "end",
                "saw_call": False,
                "interrupted": False,
                "first_at": None,
            }
            tidy = AnswerTidy(fmt)
            if mode == "text" and use_tools:
                # call or text? decided greedily on the first few tokens, whatever the
                # temperature, so sampling noise does not turn a call into prose
                head = self._generate(
                    llm,
                    tokens,
                    replace(request, temperature=0.0, max_tokens=_DECIDE_TOKENS),
                    stop=stop,
                    grammar=None,
                    emit=emit,
                    cancel=cancel,
                    watch_call=True,
                    stream_text=False,
                )
                result = head
                if head["saw_call"]:
                    mode = "call"
                elif head["text"] and not head["interrupted"]:
                    complete = _say(emit, tidy, head["text"])
                    if head["finish"] == "length" and request.max_tokens > _DECIDE_TOKENS and not complete:
                        rest_prompt = tokens + llm.tokenize(head["text"].encode("utf-8"), add_bos=False, special=False)
                        rest = self._generate(
                            llm,
                            rest_prompt,
                            replace(request, max_tokens=request.max_tokens - _DECIDE_TOKENS),
                            stop=stop,
                            grammar=None,
                            emit=emit,
                            cancel=cancel,
                            watch_call=False,
                            stream_text=True,
                            tidy=tidy,
                        )
                        result = {
                            **rest,
                            "text": head["text"] + rest["text"],
                            "first_at": head["first_at"] or rest["first_at"],
                        }
            elif mode == "text":
                result = self._generate(
                    llm,
                    tokens,
                    request,
                    stop=stop,
                    grammar=None,
                    emit=emit,
                    cancel=cancel,
                    watch_call=after_call,
                    stream_text=True,
                    tidy=tidy,
                )
                if result["saw_call"]:
                    result = {**result, "text": ""}
            if mode == "call" and not result["interrupted"]:
                call_prompt = tokens + llm.tokenize(b" " + CALL_PREFIX.rstrip().encode(), add_bos=False, special=False)
                # arguments greedily: a call is an instruction, not prose to vary
                result = greedy_under_grammar(
                    llm,
                    call_prompt,
                    call_grammar(request.tools, request.tool_choice),
                    max_tokens=request.max_tokens,
                    cancel=cancel,
                )
        finally:
            _trim_heap()
        end = time.perf_counter()
        text = result["text"]
        out_tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0
        self.last = CallStats(
            len(tokens), reused, out_tokens, (result["first_at"] or end) - start, end - start, result["interrupted"]
        )
        return {
            "mode": mode,
            "text": text,
            "finish": result["finish"],
            "prompt_tokens": len(tokens),
            "reused": reused,
            "output_tokens": out_tokens,
            "interrupted": result["interrupted"],
        }

    def _chat_template(self, llm: Any) -> ChatTemplate | None:
        """The GGUF's chat template (read once per load)."""
        if self._template is None:
            bos, eos = llm.token_bos(), llm.token_eos()
            text = {
                "bos": llm.detokenize([bos], special=True).decode("utf-8", "replace") if bos >= 0 else "",
                "eos": llm.detokenize([eos], special=True).decode("utf-8", "replace") if eos >= 0 else "",
            }
            self._template = ChatTemplate.from_metadata(llm.metadata, text)
        return self._template

    def _call_openers(self, llm: Any) -> frozenset[int]:
        """The model's call-opening tokens (one vocabulary scan per transport)."""
        if self._openers is None:
            self._openers = call_openers(llm)
        return self._openers

    def _run_chat(
        self,
        llm: Any,
        request: ModelRequest,
        emit: Any,
        cancel: threading.Event,
        use_tools: bool,
        stop: list[str],
        start: float,
    ) -> dict[str, Any]:
        """A model with its own chat template (:mod:`exo_edge.chat_run`): native tool calls, judged by the core.

        A template that cannot render tool calls natively gets the older path: the
        tools under one text-or-``CALL`` grammar (:meth:`_run_chat_grammar`).
        """
        template = self._chat_template(llm)
        if template is None or (use_tools and not template.native):
            return self._run_chat_grammar(llm, request, emit, cancel, use_tools, stop, start)
        try:
            result, decision = run_chat(
                llm,
                template,
                request,
                n_ctx=self.settings.n_ctx,
                seed=self.settings.seed,
                stop=stop,
                openers=self._call_openers(llm),
                judge=self.judge,
                emit=emit,
                cancel=cancel,
            )
        finally:
            _trim_heap()
        self.last_decision = decision
        end = time.perf_counter()
        text = result["text"]
        out_tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0
        self.last = CallStats(
            result["prompt_tokens"],
            result["reused"],
            out_tokens,
            (result["first_at"] or end) - start,
            end - start,
            result["interrupted"],
        )
        return {**result, "output_tokens": out_tokens}

    def _run_chat_grammar(
        self,
        llm: Any,
        request: ModelRequest,
        emit: Any,
        cancel: threading.Event,
        use_tools: bool,
        stop: list[str],
        start: float,
    ) -> dict[str, Any]:
        """A chat template without native tool calls: tools, when offered, in one constrained pass."""
        grammar = None
        if use_tools:
            import llama_cpp

            grammar = llama_cpp.LlamaGrammar.from_string(
                tool_grammar(request.tools, request.tool_choice), verbose=False
            )
            stop = [x for x in stop if x != "\n"]
        result = self._generate(
            llm,
            chat_messages(request.messages),
            request,
            stop=stop,
            grammar=grammar,
            emit=emit,
            cancel=cancel,
            watch_call=False,
            stream_text=grammar is None,
            chat=True,
        )
        end = time.perf_counter()
        text = result["text"]
        mode = "text"
        if grammar is not None:
            if text.strip().startswith(CALL_PREFIX.strip()):
                mode, text = "call", text.strip()[len(CALL_PREFIX) :]
            else:
                emit(TextDelta(text.strip()))
        out_tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0
        self.last = CallStats(0, 0, out_tokens, (result["first_at"] or end) - start, end - start, result["interrupted"])
        return {
            "mode": mode,
            "text": text,
            "finish": result["finish"],
            "prompt_tokens": 0,
            "reused": 0,
            "output_tokens": out_tokens,
            "interrupted": result["interrupted"],
        }

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one call; stopping iteration interrupts generation between two tokens."""
        if self._closed:
            raise ClosedResourceError(f"the local model {self.name} was closed; make a new transport")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        cancel = threading.Event()

        def emit(item: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> dict[str, Any]:
            try:
                return self._run(request, emit, cancel)
            finally:
                emit(_END)

        async with self._lock():
            future = loop.run_in_executor(self._executor, work)
            try:
                while True:
                    item = await queue.get()
                    if item is _END:
                        break
                    yield item
                summary = await future
            finally:
                cancel.set()
                if not future.done():
                    await asyncio.wait([future])  # the model is free before the next call
                if not future.cancelled():
                    future.exception()  # retrieved here when the consumer left early
        if summary["mode"] == "call" and not summary["interrupted"]:
            text = summary["text"]
            if summary["finish"] == "length":
                raise ProviderError(
                    f"the local model's tool call was cut at max_tokens {request.max_tokens}; raise max_tokens",
                    kind=FailureKind.SERVER,
                    provider="local",
                )
            native = summary.get("call")
            try:
                call = native if native is not None else parse_tool_call(CALL_PREFIX + text)
            except (ValueError, KeyError) as exc:
                raise ProviderError(
                    f"the local model's tool call did not parse: {text[:120]!r}",
                    kind=FailureKind.SERVER,
                    provider="local",
                ) from exc
            if call is not None:
                yield ToolCallChunk(call)
        yield UsageChunk(
            input_tokens=summary["prompt_tokens"],
            output_tokens=max(0, summary["output_tokens"]),
            cost=0.0,
            model=self.name,
            cache_read_tokens=summary["reused"],
        )
        yield Finish("tool_calls" if summary["mode"] == "call" else summary["finish"])

    async def run_exclusive(self, work: Callable[[Any], T]) -> T:
        """Run ``work(llama)`` in the model's worker between two calls (a decision's forward pass).

        The model is loaded first if needed; calls and ``work`` never overlap.
        """
        if self._closed:
            raise ClosedResourceError(f"the local model {self.name} was closed; make a new transport")
        loop = asyncio.get_running_loop()
        async with self._lock():
            return await loop.run_in_executor(self._executor, lambda: work(self._load_sync()))

    async def aclose(self) -> None:
        """Free the model and stop the worker thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        async with self._lock():
            llm, self._llm = self._llm, None
            if llm is not None:
                await asyncio.get_running_loop().run_in_executor(self._executor, llm.close)
        self._executor.shutdown(wait=False)

    # -- the window (exo_edge.llama_window; docs/context.md, "Sized to the model") ----
    @functools.cached_property
    def counter(self) -> LlamaCounter:
        """Counts tokens with this model's own tokenizer, in its worker (loads the model on first use)."""
        return LlamaCounter(self.run_exclusive, self.settings.prompt)

    async def context_window(self, role: str) -> ContextWindow | None:
        """This model's window (``[models.local] n_ctx``), counted by its own tokenizer."""
        return llama_window(self.settings.n_ctx, self.counter, model=self.name)


def _say(emit: Callable[[Any], None], tidy: AnswerTidy | None, text: str) -> bool:
    """Emit ``text`` (tidied); True when the answer is complete and decoding should stop."""
    shown = tidy.feed(text) if tidy is not None else text
    if shown:
        emit(TextDelta(shown))
    return tidy is not None and tidy.done


def _called_since_question(request: ModelRequest) -> bool:
    """Whether a tool was already called after the last user message."""
    for m in reversed(request.messages):
        if m.role == "user":
            return False
        if m.role == "assistant" and m.tool_calls:
            return True
    return False


def _trim_heap() -> None:
    """Give freed heap back to the OS after a call (glibc's ``malloc_trim``).

    Without it, grammar sampling over Gemma's 262k-token vocabulary fragments
    the heap and RSS creeps up by megabytes a call; with it RSS stays flat.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing to trim
    libc.malloc_trim(0)
