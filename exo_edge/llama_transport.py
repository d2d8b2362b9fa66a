"""Local GGUF generation over llama-cpp-python, as a model transport.

* **Lazy, once.** The model loads on first use (or :meth:`LlamaTransport.load`)
  in the transport's own worker thread; one ``Llama`` object serves every call
  (:mod:`exo_edge.llama_load`).
* **Never blocks the loop.** Prompt processing and decoding run in that worker;
  each piece of text is handed to the event loop through a bounded
  :class:`~exo_edge.token_pipe.TokenPipe`: a consumer that stalls makes the
  worker wait, and nothing is dropped.
* **Stops promptly.** When the consumer stops iterating (``turn.interrupt``),
  the worker is told between two tokens and returns; the next call waits for it.
* **Prompt formats.** ``chat`` uses the model's own chat template, with native
  tool calls judged by the core (:mod:`exo_edge.chat_run`), or the tools under a
  grammar for a template without them; ``completion`` renders a base-model
  prompt and decides text or ``CALL`` on the first tokens
  (:mod:`exo_edge.llama_completion`).
* **Prefix reuse.** llama-cpp-python keeps the KV cache of the longest common
  token prefix with the previous call on the same object; the usage chunk
  reports those tokens as ``cache_read_tokens``.
* **The fixed head, once.** The state of the prompt's fixed head (the system
  message and the tools, as the chat template renders them) is saved in the
  Exo home and loaded when the model holds another (a new process, a head
  that changed back): :mod:`exo_edge.prefix_state`. :meth:`LlamaTransport.warm`
  reads it ahead of the first question, a batch at a time, and gives way to
  any call that comes meanwhile.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from exo_core.agent.grounding import call_grounding
from exo_core.errors import ClosedResourceError
from exo_core.seams.failures import FailureKind, ProviderError
from exo_core.seams.model import (
    ChatMessage,
    ContextWindow,
    Finish,
    ModelChunk,
    ModelRequest,
    ToolCallChunk,
    UsageChunk,
)
from exo_edge.chat_run import CallJudge, ChatDecision, call_openers, run_chat
from exo_edge.chat_template import ChatTemplate
from exo_edge.grammar_decode import common_prefix
from exo_edge.llama_completion import CallStats, CompletionPath, run_chat_grammar, run_completion
from exo_edge.llama_load import KV_TYPES, LlamaSettings, load_llama, rss_bytes, trim_heap
from exo_edge.llama_window import LlamaCounter, guard_request, llama_window
from exo_edge.model_turns import AHEAD, BACKGROUND, LIVE, ModelTurns
from exo_edge.prefix_state import PrefixStates, evaluate_head, model_digest
from exo_edge.prompting import CALL_PREFIX, parse_tool_call
from exo_edge.token_pipe import STREAM_LIMIT, TokenPipe

# KV_TYPES, LlamaSettings, CallStats and rss_bytes are re-exported: callers import them from here.
__all__ = ["KV_TYPES", "LlamaSettings", "CallStats", "LlamaTransport", "rss_bytes"]

T = TypeVar("T")

_END = object()
# A fixed head shorter than this is read with the prompt: its state is not worth a file.
_MIN_HEAD = 32
# Stands for the person's message when the fixed head is found (exo_edge.llama_transport._head_tokens).
_PROBE = "\u2063"


class LlamaTransport:
    """A :class:`~exo_core.seams.model.ModelTransport` for one local GGUF model.

    ``stream_limit`` bounds the text pieces that wait between the worker and
    the stream's consumer (:class:`~exo_edge.token_pipe.TokenPipe`).
    """

    def __init__(
        self, settings: LlamaSettings, *, judge: CallJudge = call_grounding, stream_limit: int = STREAM_LIMIT
    ) -> None:
        self.settings = settings
        self.judge = judge
        self.stream_limit = stream_limit
        self._llm: Any = None
        self._template: ChatTemplate | None = None
        self._stopping = threading.Event()
        self._openers: frozenset[int] | None = None
        self.last_decision: ChatDecision | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="exo-llama")
        self._turns: dict[int, ModelTurns] = {}
        self._closed = False
        self.last: CallStats | None = None
        self.last_stream_peak = 0  # the most text pieces that waited for the consumer in the last call
        self.rss_after_load: int = 0
        # The fixed head's saved states (None: none are kept) and what the last call did with its head.
        self.states = PrefixStates(settings.state_dir) if settings.state_dir is not None else None
        self.last_head = ""
        self._head_evaluated = 0
        self._heads: dict[tuple[str, str], list[int]] = {}
        self._model_sha: str | None = None

    @property
    def name(self) -> str:
        """The model name (manifest name, else the file stem)."""
        return self.settings.name or self.settings.model_path.stem

    def _lock(self) -> ModelTurns:
        """One call at a time per model, per event loop (the worker is shared), the person's turn first."""
        loop_id = id(asyncio.get_running_loop())
        turns = self._turns.get(loop_id)
        if turns is None:
            self._turns = {loop_id: ModelTurns()}
            turns = self._turns[loop_id]
        return turns

    # -- loading --------------------------------------------------------------------
    def _load_sync(self) -> Any:
        if self._llm is not None:
            return self._llm
        self._llm = load_llama(self.settings)
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
    def _run(self, request: ModelRequest, emit: Callable[[Any], None], cancel: threading.Event) -> dict[str, Any]:
        """Worker side of one call: render, generate, emit text pieces; returns the summary."""
        llm = self._load_sync()
        fmt = self.settings.prompt
        request = guard_request(llm, self.counter, request, n_ctx=self.settings.n_ctx, model=self.name, cancel=cancel)
        use_tools = bool(request.tools) and request.tool_choice != "none"
        stop = list(dict.fromkeys([*fmt.stop, *request.stop]))
        start = time.perf_counter()
        if fmt.format == "chat":
            try:
                return self._run_chat(llm, request, emit, cancel, use_tools, stop, start)
            finally:
                trim_heap()
        # run_completion gives the heap back itself, before its timings end
        judged = functools.partial(run_completion, judge=self.judge)
        return self._run_path(judged, llm, request, emit, cancel, use_tools, stop, start)

    def _run_path(
        self,
        path: CompletionPath,
        llm: Any,
        request: ModelRequest,
        emit: Callable[[Any], None],
        cancel: threading.Event,
        use_tools: bool,
        stop: list[str],
        start: float,
    ) -> dict[str, Any]:
        """Run one of :mod:`exo_edge.llama_completion`'s paths; keeps its cost as ``last``."""
        summary, self.last = path(
            llm,
            request,
            settings=self.settings,
            emit=emit,
            cancel=cancel,
            use_tools=use_tools,
            stop=stop,
            start=start,
        )
        return summary

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
        emit: Callable[[Any], None],
        cancel: threading.Event,
        use_tools: bool,
        stop: list[str],
        start: float,
    ) -> dict[str, Any]:
        """A model with its own chat template (:mod:`exo_edge.chat_run`): native tool calls, judged by the core.

        A template that cannot render tool calls natively gets the older path: the
        tools under one text-or-``CALL`` grammar (:func:`~exo_edge.llama_completion.run_chat_grammar`).
        """
        template = self._chat_template(llm)
        if template is None or (use_tools and not template.native):
            return self._run_path(run_chat_grammar, llm, request, emit, cancel, use_tools, stop, start)
        self._head_evaluated, self.last_head = 0, ""

        def prepare(llm: Any, tokens: list[int], tools: Any) -> None:
            if request.messages and request.messages[0].role == "system":
                self._prepare_head(llm, tokens, self._head_tokens(llm, template, request.messages[0], tools))

        try:
            result, decision = run_chat(
                llm,
                template,
                request,
                n_ctx=self.settings.n_ctx,
                draw=self.settings.draw,
                stop=stop,
                openers=self._call_openers(llm),
                judge=self.judge,
                emit=emit,
                cancel=cancel,
                prepare=prepare,
            )
        finally:
            trim_heap()
        # the head read in this call (no saved state) was read for it, not taken from a cache
        result = {**result, "reused": max(0, result["reused"] - self._head_evaluated)}
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

    # -- the fixed head (exo_edge.prefix_state) ----------------------------------------------
    def _head_tokens(self, llm: Any, template: ChatTemplate, system: ChatMessage, tools: Any) -> list[int]:
        """The tokens every prompt that opens with ``system`` and offers ``tools`` begins with.

        That is the system turn rendered alone, up to where a following message
        would begin (found against a probe message); remembered per system text and tools.
        """
        memo = (system.content, json.dumps(list(tools), sort_keys=True, default=str))
        if memo not in self._heads:
            alone = template.render([system], tools)
            probed = template.render([system, ChatMessage("user", _PROBE)], tools)
            a = llm.tokenize(alone.encode("utf-8"), add_bos=False, special=True)
            b = llm.tokenize(probed.encode("utf-8"), add_bos=False, special=True)
            self._heads = {memo: a[: common_prefix(a, b)]}  # one system text at a time is in use
        return self._heads[memo]

    def _digest(self) -> str:
        if self._model_sha is None:
            folder = self.settings.state_dir
            self._model_sha = model_digest(self.settings.model_path, folder)
        return self._model_sha

    def _prepare_head(self, llm: Any, tokens: list[int], head: list[int], stop: threading.Event | None = None) -> str:
        """Put the state of ``head`` in the model before ``tokens`` (which begin with it) are read.

        Held already: nothing to do. Saved: loaded. Else read now (a batch at a
        time, ``stop`` may end it early) and saved. Returns which it was.
        """
        if len(head) < _MIN_HEAD or tokens[: len(head)] != head:
            self.last_head = "none"
            return self.last_head
        if common_prefix(llm.input_ids[: llm.n_tokens].tolist(), head) >= len(head):
            self.last_head = "memory"
            return self.last_head
        key = self.states.key(self._digest(), self.settings, head) if self.states is not None else None
        if self.states is not None and key is not None and self.states.load(llm, key, head):
            self.last_head = "disk"
            return self.last_head
        self._head_evaluated += evaluate_head(llm, head, stop=stop)
        if llm.n_tokens < len(head):
            self.last_head = "interrupted"
            return self.last_head
        if self.states is not None and key is not None:
            self.states.save(llm, key, head)
        self.last_head = "computed"
        return self.last_head

    def _warm_sync(self, request: ModelRequest, waiting: threading.Event) -> str:
        llm = self._load_sync()
        template = self._chat_template(llm) if self.settings.prompt.format == "chat" else None
        if template is None or not request.messages or request.messages[0].role != "system":
            return "no chat template or no system message: nothing to read ahead"
        use_tools = bool(request.tools) and request.tool_choice != "none" and template.native
        tools = request.tools if use_tools else ()
        head = self._head_tokens(llm, template, request.messages[0], tools)
        self._head_evaluated = 0
        try:
            outcome = self._prepare_head(llm, head, head, stop=waiting)
        finally:
            trim_heap()
        return f"{outcome} ({len(head)} tokens)"

    async def warm(self, request: ModelRequest) -> str:
        """Read the fixed head of ``request`` (its system message and tools) ahead of the next call.

        From the saved state when there is one, else a batch at a time, stopping
        as soon as a call waits for the model (what was read stays for it). The
        state is saved for the next start. Returns what it did (``memory``,
        ``disk``, ``computed``, ``interrupted``, ...) and the head's tokens, e.g. ``disk (1093 tokens)``.
        """
        if self._closed:
            raise ClosedResourceError(f"the local model {self.name} was closed; make a new transport")
        loop = asyncio.get_running_loop()
        turns = self._lock()
        await turns.acquire(AHEAD)
        try:
            return await loop.run_in_executor(self._executor, self._warm_sync, request, turns.waiting)
        finally:
            turns.release()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one call; stopping iteration interrupts generation between two tokens."""
        if self._closed:
            raise ClosedResourceError(f"the local model {self.name} was closed; make a new transport")
        loop = asyncio.get_running_loop()
        # Bounded: a consumer that stalls makes the worker wait (docs/models.md; exo_edge/token_pipe.py).
        pipe = TokenPipe(loop, limit=self.stream_limit)
        cancel = threading.Event()

        def work() -> dict[str, Any]:
            try:
                return self._run(request, pipe.put, cancel)
            finally:
                pipe.put(_END)

        lock = self._lock()
        await lock.acquire(LIVE if request.role == "main" else BACKGROUND)
        try:
            future = loop.run_in_executor(self._executor, work)
            try:
                while True:
                    item = await pipe.get()
                    if item is _END:
                        break
                    yield item
                summary = await future
            finally:
                cancel.set()
                pipe.close()  # a worker waiting for room returns, then sees `cancel` between two tokens
                self.last_stream_peak = pipe.peak
                if not future.done():
                    await asyncio.wait([future])  # the model is free before the next call
                if not future.cancelled():
                    future.exception()  # retrieved here when the consumer left early
        finally:
            lock.release()
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
        lock = self._lock()
        await lock.acquire(BACKGROUND)
        try:
            return await loop.run_in_executor(self._executor, lambda: work(self._load_sync()))
        finally:
            lock.release()

    async def aclose(self) -> None:
        """Free the model and stop the worker thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stopping.set()  # a chat template render under way in the worker stops at its next step
        turns = self._lock()
        await turns.acquire(LIVE)
        try:
            llm, self._llm = self._llm, None
            if llm is not None:
                await asyncio.get_running_loop().run_in_executor(self._executor, llm.close)
        finally:
            turns.release()
        self._executor.shutdown(wait=False)

    # -- the window (exo_edge.llama_window; docs/context.md, "Sized to the model") ----
    @functools.cached_property
    def counter(self) -> LlamaCounter:
        """Counts tokens with this model's own tokenizer, in its worker (loads the model on first use)."""
        return LlamaCounter(self.run_exclusive, self.settings.prompt, cancel=self._stopping)

    async def context_window(self, role: str) -> ContextWindow | None:
        """This model's window (``[models.local] n_ctx``), counted by its own tokenizer."""
        return llama_window(self.settings.n_ctx, self.counter, model=self.name)
