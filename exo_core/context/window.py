"""Sizing a model call to its model's window: the answer's room, the reserve, the exact check (docs/context.md).

:func:`fit_input` turns a :class:`~exo_core.context.fit.Draft` into a
:class:`~exo_core.seams.model.ModelRequest` that fits the
:class:`~exo_core.seams.model.ContextWindow` of the model that will serve it:

1. the answer's room is reserved first: the request's ``max_tokens``, at most
   a quarter of the window (a 1,024-token window keeps 768 for the prompt);
2. then the template and the tools block, measured by the counter on a
   request with no conversation;
3. the draft's parts are counted in one batch and :func:`~exo_core.context.fit.fit`
   trims them, in its stated order, to the room that is left;
4. the rendered request is measured whole; if the counter's exact count still
   exceeds the window (parts do not add up exactly), the room shrinks by the
   overshoot and the draft is fitted again (at most :data:`ROUNDS` times).

:class:`EstimatedCounter` is the counter for a model whose tokenizer is not
at hand (a hosted route): characters / 4 with a margin.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from exo_core.context.config import estimate_tokens
from exo_core.context.fit import ContextWindowTooSmallError, Draft, Trimmed, draft_texts, fit, render
from exo_core.seams.model import ChatMessage, ContextWindow, ModelRequest

__all__ = [
    "ANSWER_SHARE",
    "ROUNDS",
    "EstimatedCounter",
    "estimated_window",
    "Fitted",
    "answer_room",
    "fit_input",
    "fit_request",
]

# The answer may take at most 1/ANSWER_SHARE of the window; the rest is the prompt's.
ANSWER_SHARE = 4
ANSWER_FLOOR = 64
# Fits tried before giving up (each one after the exact count said the last was still over).
ROUNDS = 4
# Tokens a chat template adds around one message, by estimate (ChatML: '<|im_start|>role\n', '<|im_end|>\n').
ESTIMATED_OVERHEAD = 5


class EstimatedCounter:
    """Token counts estimated as characters / 4, with tools as their JSON (no tokenizer needed)."""

    async def count(self, texts: Sequence[str]) -> list[int]:
        """Estimated tokens of each text."""
        return [estimate_tokens(t) for t in texts]

    async def measure(self, request: ModelRequest) -> int:
        """Estimated prompt tokens of the whole request: messages, tool calls, tools and the template."""
        total = estimate_tokens(json.dumps(list(request.tools), ensure_ascii=False)) if request.tools else 0
        for m in request.messages:
            total += estimate_tokens(m.content) + ESTIMATED_OVERHEAD
            for c in m.tool_calls:
                total += estimate_tokens(c.name + json.dumps(c.arguments, ensure_ascii=False))
        return total + ESTIMATED_OVERHEAD


def estimated_window(n_ctx: int, *, model: str = "", where: str = "") -> ContextWindow:
    """A window counted by estimate; an eighth of it is kept free for the estimate's error."""
    return ContextWindow(
        n_ctx=n_ctx,
        counter=EstimatedCounter(),
        message_overhead=ESTIMATED_OVERHEAD,
        margin=max(16, n_ctx // 8),
        exact=False,
        model=model,
        where=where,
    )


@dataclass(frozen=True, slots=True)
class Fitted:
    """A request sized to its window, what was trimmed, and its measured prompt tokens."""

    request: ModelRequest
    trimmed: Trimmed
    prompt_tokens: int
    limit: int


def answer_room(window: ContextWindow, max_tokens: int) -> int:
    """Tokens reserved for the answer: ``max_tokens``, at most a quarter of the window."""
    return max(1, min(max_tokens, max(ANSWER_FLOOR, window.n_ctx // ANSWER_SHARE)))


def _where(window: ContextWindow) -> str:
    return window.where or "the model's context size in config.toml"


async def fit_input(window: ContextWindow, draft: Draft, request: ModelRequest) -> Fitted:
    """``request`` with its messages made from ``draft``, fitted to ``window`` (see the module docstring).

    ``request`` gives everything but the messages (tools, max_tokens, role...);
    its ``max_tokens`` may come back lowered to :func:`answer_room`.
    Raises :class:`~exo_core.context.fit.ContextWindowTooSmallError` when the
    base prompt, tools and answer alone do not fit.
    """
    answer = answer_room(window, request.max_tokens)
    limit = window.n_ctx - answer - window.margin
    empty = replace(request, messages=(ChatMessage(role="system", content=""),), max_tokens=answer)
    reserve = await window.counter.measure(empty)
    texts = list(dict.fromkeys(t for t in draft_texts(draft) if t))
    counts = dict(zip(texts, await window.counter.count(texts), strict=True))
    room = limit - reserve
    if room <= window.message_overhead * 2:
        raise ContextWindowTooSmallError(
            f"the window of {window.model or 'the model'} ({window.n_ctx} tokens) is taken by the answer's room "
            f"({answer}) and the template and tools ({reserve}); raise the window ({_where(window)}), offer "
            "fewer tools, or lower max_tokens"
        )
    last = 0
    for _ in range(ROUNDS):
        try:
            fitted, trimmed = fit(draft, counts, room, overhead=window.message_overhead)
        except ContextWindowTooSmallError as exc:
            raise ContextWindowTooSmallError(
                f"{exc.message} (window {window.n_ctx} tokens of {window.model or 'the model'}, "
                f"{answer} kept for the answer, {reserve} for the template and tools); raise the window "
                f"({_where(window)}), offer fewer tools, or lower max_tokens"
            ) from exc
        out = replace(request, messages=tuple(render(fitted)), max_tokens=answer)
        last = await window.counter.measure(out)
        if last <= limit:
            return Fitted(out, trimmed, last, limit)
        room -= last - limit + window.message_overhead
    raise ContextWindowTooSmallError(
        f"the input still needs {last} tokens after trimming but {window.model or 'the model'} has room for "
        f"{limit} ({window.n_ctx} tokens with {answer} kept for the answer); raise the window ({_where(window)})"
    )


async def fit_request(window: ContextWindow, request: ModelRequest) -> ModelRequest:
    """A request built elsewhere (a summary job, a plugin engine's input) fitted to ``window``.

    The system message is kept as the base when it is the first message and
    the last user message is the current one; everything between is the tail.
    A request that already fits is returned as it is.
    """
    answer = answer_room(window, request.max_tokens)
    limit = window.n_ctx - answer - window.margin
    sized = replace(request, max_tokens=answer)
    if await window.counter.measure(sized) <= limit:
        return sized
    messages = list(request.messages)
    base = ""
    if messages and messages[0].role == "system":
        base = messages.pop(0).content
    current = max((i for i, m in enumerate(messages) if m.role == "user"), default=len(messages))
    draft = Draft(base=base, tail=tuple(messages), current=current)
    if estimate_tokens(base) * ANSWER_SHARE > limit:
        # A system message this big is itself what does not fit: it is cut from its end like the pack.
        draft = Draft(base="", pack=base, tail=tuple(messages), current=current)
    return (await fit_input(window, draft, request)).request
