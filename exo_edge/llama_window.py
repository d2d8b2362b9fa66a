"""The local model's window, counted by llama.cpp's own tokenizer (docs/context.md, "Sized to the model").

:class:`LlamaCounter` is the :class:`~exo_core.seams.model.TokenCounter` of
a :class:`~exo_edge.llama_transport.LlamaTransport`: texts are tokenized by
the loaded model's vocabulary, in the transport's worker (the model loads
lazily on the first count, as it would on the first call), never on the event
loop; counts of texts seen before come from a bounded cache, so a long
session does not tokenize its history again every turn. ``measure`` renders
the request the way the transport will: the completion format through
:func:`exo_edge.prompting.render_completion`, a chat model through its own
chat template, with the tools in the template (or, for a template without
tools, as their JSON), so the count is never below what is sent.

:func:`guard_request` is the transport's last guard, run in its worker just
before generation: a request that still does not fit (a direct caller, or a
fallback from a route with a larger window) is trimmed by
:func:`exo_core.context.window.fit_request` instead of failing.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from exo_core.context.window import fit_request
from exo_core.seams.model import ContextWindow, ModelRequest
from exo_edge.manifest import PromptFormat
from exo_edge.prompting import chat_messages, render_completion

__all__ = ["WHERE", "LlamaCounter", "SyncCounter", "llama_window", "guard_request", "prompt_tokens"]

WHERE = "[models.local] n_ctx in config.toml"
# Tokens kept free for what the count cannot see: the few tokens a tool call's ' CALL' adds.
MARGIN = 8
# Tokens of '<|im_start|>role\n' and '<|im_end|>\n' around one message of a ChatML template.
MESSAGE_OVERHEAD = 5
_CACHE = 4096

Worker = Callable[[Callable[[Any], Any]], Any]


def _called_since_question(request: ModelRequest) -> bool:
    """Whether a tool was already called after the last user message (as the transport decides it)."""
    for m in reversed(request.messages):
        if m.role == "user":
            return False
        if m.role == "assistant" and m.tool_calls:
            return True
    return False


def chat_formatter(llm: Any) -> Any:
    """The model's chat template as llama-cpp-python applies it, under limits (None when the GGUF has none)."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    from exo_edge.template_limits import bounded_formatter

    vocab = llm._model  # the same tokens llama-cpp-python's own chat handler passes to the template
    eos = vocab.token_get_text(llm.token_eos()) if llm.token_eos() != -1 else ""
    bos = vocab.token_get_text(llm.token_bos()) if llm.token_bos() != -1 else ""
    return bounded_formatter(template, eos, bos)


def _tokens(llm: Any, text: str, *, bos: bool = False, special: bool = False) -> int:
    return len(llm.tokenize(text.encode("utf-8"), add_bos=bos, special=special)) if text else 0


def prompt_tokens(
    llm: Any, fmt: PromptFormat, request: ModelRequest, formatter: Any = None, *, cancel: threading.Event | None = None
) -> int:
    """Prompt tokens of ``request`` rendered as the transport renders it (call in the model's worker).

    ``cancel`` stops the chat template's render (exo_edge/template_limits.py)."""
    use_tools = bool(request.tools) and request.tool_choice != "none"
    if fmt.format != "chat":
        if use_tools and request.tool_choice == "auto" and _called_since_question(request):
            use_tools = False  # the transport leaves the tools out after a call (see LlamaTransport._run)
        prompt = render_completion(request.messages, fmt, request.tools if use_tools else ())
        return _tokens(llm, prompt, bos=True)
    messages = chat_messages(request.messages)
    if formatter is None:
        text = "\n".join(str(m.get("content", "")) for m in messages)
        total = _tokens(llm, text, bos=True) + MESSAGE_OVERHEAD * (len(messages) + 1)
    else:
        tools = [{"type": "function", "function": t} for t in request.tools] if use_tools else None
        prompt = formatter(messages=messages, tools=tools, cancel=cancel).prompt
        total = _tokens(llm, prompt, special=True)
        if use_tools and "tools" not in formatter.template:
            total += _tokens(llm, json.dumps(list(request.tools), ensure_ascii=False))
    return total


class LlamaCounter:
    """Token counts by the model's own tokenizer, run through ``worker`` (the transport's model thread)."""

    def __init__(self, worker: Worker, fmt: PromptFormat, *, cancel: threading.Event | None = None) -> None:
        self._worker = worker
        self.fmt = fmt
        self.cancel = cancel  # set when the transport closes: a render under way stops
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._formatter: Any = None
        self._formatter_ready = False

    def formatter_for(self, llm: Any) -> Any:
        """The model's chat template, built once (None for the completion format or no template)."""
        if not self._formatter_ready:
            self._formatter = chat_formatter(llm) if self.fmt.format == "chat" else None
            self._formatter_ready = True
        return self._formatter

    async def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text (cached; the rest tokenized in one trip to the worker)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            found = await self._worker(lambda llm: [_tokens(llm, t) for t in missing])
            for text, n in zip(missing, found, strict=True):
                self._cache[text] = n
        out = []
        for text in texts:
            n = self._cache[text]
            self._cache.move_to_end(text)
            out.append(n)
        while len(self._cache) > _CACHE:
            self._cache.popitem(last=False)
        return out

    async def measure(self, request: ModelRequest) -> int:
        """Prompt tokens of the whole request as the transport will render it."""
        return await self._worker(
            lambda llm: prompt_tokens(llm, self.fmt, request, self.formatter_for(llm), cancel=self.cancel)
        )


class SyncCounter:
    """The same counts for code already in the model's worker (the last guard): no trip to another thread."""

    def __init__(self, llm: Any, fmt: PromptFormat, formatter: Any) -> None:
        self._llm = llm
        self._fmt = fmt
        self._formatter = formatter

    async def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text."""
        return [_tokens(self._llm, t) for t in texts]

    async def measure(self, request: ModelRequest) -> int:
        """Prompt tokens of the whole request."""
        return prompt_tokens(self._llm, self._fmt, request, self._formatter)


def llama_window(n_ctx: int, counter: Any, *, model: str) -> ContextWindow:
    """The window of a local model counted by ``counter`` (its own tokenizer)."""
    return ContextWindow(
        n_ctx=n_ctx,
        counter=counter,
        message_overhead=MESSAGE_OVERHEAD,
        margin=MARGIN,
        exact=True,
        model=model,
        where=WHERE,
    )


def guard_request(
    llm: Any,
    counter: LlamaCounter,
    request: ModelRequest,
    *,
    n_ctx: int,
    model: str,
    cancel: threading.Event | None = None,
) -> ModelRequest:
    """``request`` as it is when it fits ``n_ctx``, else trimmed to fit (call in the model's worker).

    Raises :class:`~exo_core.context.fit.ContextWindowTooSmallError` (naming
    ``[models.local] n_ctx``) when even the trimmed request cannot fit.
    """
    fmt = counter.fmt
    formatter = counter.formatter_for(llm)
    if prompt_tokens(llm, fmt, request, formatter, cancel=cancel) + request.max_tokens <= n_ctx:
        return request
    window = llama_window(n_ctx, SyncCounter(llm, fmt, formatter), model=model)
    # The worker thread runs no event loop; the counter's coroutines never wait on anything.
    return asyncio.run(fit_request(window, request))
