"""Local GGUF generation over llama-cpp-python, as a model transport.

* **Lazy, once.** The model loads on first use (or :meth:`LlamaTransport.load`)
  in the transport's own worker thread; one ``Llama`` object serves every call.
* **Never blocks the loop.** Prompt processing and decoding run in that worker;
  each piece of text is handed to the event loop with ``call_soon_threadsafe``.
* **Stops promptly.** When the consumer stops iterating (``turn.interrupt``),
  the worker is told between two tokens and returns; the next call waits for it.
* **Prompt formats.** ``chat`` uses the model's own chat template;
  ``completion`` renders a base-model prompt (:mod:`exo_edge.prompting`).
* **Tools under a grammar.** When tools are offered, the answer is constrained
  to text or a ``CALL {...}`` whose arguments follow the tool's schema.
* **Prefix reuse.** llama-cpp-python keeps the KV cache of the longest common
  token prefix with the previous call on the same object; the usage chunk
  reports those tokens as ``cache_read_tokens``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.agent.model import (
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCallChunk,
    UsageChunk,
)
from exo_core.errors import ClosedResourceError
from exo_core.models.failures import FailureKind, ProviderError
from exo_edge.manifest import PromptFormat
from exo_edge.prompting import chat_messages, parse_tool_call, render_completion, tool_grammar

__all__ = ["LlamaSettings", "CallStats", "LlamaTransport", "rss_bytes"]


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


@dataclass(frozen=True, slots=True)
class LlamaSettings:
    """How to run one GGUF model. Sized for a small board by default."""

    model_path: Path
    prompt: PromptFormat = field(default_factory=PromptFormat)
    n_ctx: int = 2048
    n_threads: int = 2
    n_batch: int = 256
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


class LlamaTransport:
    """A :class:`~exo_core.agent.model.ModelTransport` for one local GGUF model."""

    def __init__(self, settings: LlamaSettings) -> None:
        self.settings = settings
        self._llm: Any = None
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                               thread_name_prefix="exo-llama")
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
            raise ProviderError(f"local model file {path} is missing; run `exo models fetch`",
                                kind=FailureKind.UNAVAILABLE, provider="local")
        try:
            import llama_cpp
        except ImportError as exc:
            raise ProviderError("llama-cpp-python is not installed; run scripts/install_edge.sh "
                                "with this environment's python", kind=FailureKind.UNAVAILABLE,
                                provider="local") from exc
        try:
            self._llm = llama_cpp.Llama(
                model_path=str(path), n_ctx=self.settings.n_ctx, n_threads=self.settings.n_threads,
                n_threads_batch=self.settings.n_threads, n_batch=self.settings.n_batch,
                seed=self.settings.seed, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(f"llama.cpp could not load {path} ({exc}); fetch it again with "
                                "`exo models fetch`", kind=FailureKind.UNAVAILABLE,
                                provider="local") from exc
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
        return {"rss": rss_bytes(), "rss_after_load": self.rss_after_load,
                "model_file": path.stat().st_size if path.is_file() else 0,
                "n_ctx": self.settings.n_ctx}

    # -- one call -------------------------------------------------------------------
    def _run(self, request: ModelRequest, emit: Any, cancel: threading.Event) -> dict[str, Any]:
        """Worker side of one call: render, generate, emit text pieces; returns the summary."""
        llm = self._load_sync()
        fmt = self.settings.prompt
        grammar = None
        if request.tools and request.tool_choice != "none":
            import llama_cpp

            try:
                grammar = llama_cpp.LlamaGrammar.from_string(
                    tool_grammar(request.tools, request.tool_choice), verbose=False)
            except ValueError as exc:
                raise ProviderError(f"cannot build a grammar for the offered tools ({exc})",
                                    kind=FailureKind.BAD_REQUEST, provider="local") from exc
        tools = request.tools if grammar is not None else ()
        if fmt.format == "chat":
            text_prompt = None
            tokens = None
        else:
            text_prompt = render_completion(request.messages, fmt, tools)
            tokens = llm.tokenize(text_prompt.encode("utf-8"), add_bos=True, special=False)
            limit = self.settings.n_ctx - request.max_tokens
            if len(tokens) > limit:
                raise ProviderError(
                    f"the prompt has {len(tokens)} tokens but only {limit} fit in n_ctx "
                    f"{self.settings.n_ctx} with max_tokens {request.max_tokens}; shorten the "
                    "context or raise n_ctx", kind=FailureKind.BAD_REQUEST, provider="local")
        reused = _common_prefix(list(llm._input_ids), tokens or [])
        stop = list(dict.fromkeys([*fmt.stop, *request.stop]))
        if grammar is not None:
            stop = [s for s in stop if s != "\n"]
        start = time.perf_counter()
        first_at: float | None = None
        pieces: list[str] = []
        out_tokens = 0
        if text_prompt is not None:
            stream = llm.create_completion(
                tokens, max_tokens=request.max_tokens, temperature=request.temperature,
                stop=stop, stream=True, grammar=grammar, seed=self.settings.seed)
        else:
            stream = llm.create_chat_completion(
                chat_messages(request.messages), max_tokens=request.max_tokens,
                temperature=request.temperature, stop=stop or None, stream=True, grammar=grammar,
                seed=self.settings.seed)
        finish = "end"
        interrupted = False
        try:
            for chunk in stream:
                if cancel.is_set():
                    interrupted = True
                    break
                choice = chunk["choices"][0]
                piece = choice.get("text") if text_prompt is not None else (
                    choice.get("delta", {}).get("content"))
                if piece:
                    if first_at is None:
                        first_at = time.perf_counter()
                    out_tokens += 1
                    pieces.append(piece)
                    if grammar is None:
                        emit(TextDelta(piece))
                if choice.get("finish_reason") == "length":
                    finish = "length"
        finally:
            stream.close()
            _trim_heap()
        end = time.perf_counter()
        text = "".join(pieces)
        if text:
            out_tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))
        self.last = CallStats(len(tokens or []), reused, out_tokens,
                              (first_at or end) - start, end - start, interrupted)
        return {"text": text, "finish": finish, "grammar": grammar is not None,
                "prompt_tokens": len(tokens or []), "reused": reused,
                "output_tokens": out_tokens, "interrupted": interrupted}

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
        if summary["grammar"]:
            text = summary["text"]
            if summary["finish"] == "length":
                raise ProviderError(f"the local model's answer was cut at max_tokens "
                                    f"{request.max_tokens} inside a constrained answer; raise "
                                    "max_tokens", kind=FailureKind.SERVER, provider="local")
            try:
                call = parse_tool_call(text)
            except (ValueError, KeyError) as exc:
                raise ProviderError(f"the local model's tool call did not parse: {text[:120]!r}",
                                    kind=FailureKind.SERVER, provider="local") from exc
            if call is None:
                yield TextDelta(text.strip())
            else:
                yield ToolCallChunk(call)
        yield UsageChunk(input_tokens=summary["prompt_tokens"],
                         output_tokens=max(0, summary["output_tokens"]), cost=0.0,
                         model=self.name, cache_read_tokens=summary["reused"])
        calls = summary["grammar"] and summary["text"].strip().startswith("CALL ")
        yield Finish("tool_calls" if calls else summary["finish"])

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


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n

