"""Text or a tool call on an OpenAI-compatible engine: the core's judge has its say before a call runs.

The device's local model proposes calls that :func:`exo_core.agent.grounding.call_grounding`
judges before they run (:mod:`exo_edge.chat_run`). A model served by an engine
(llama-cpp-python's server, Ollama, ``llama-server``, vLLM: the laptop route,
docs/models.md §3) decides alone, so :func:`judged_stream` puts its calls to the
same judge (docs/models.md, "Text or a tool call"):

- With tools offered under ``tool_choice="auto"``, the engine's answer streams
  as usual: text and reasoning pass at once. Its calls reach this module only
  whole (the transport assembles the argument deltas), and they are held with
  the usage and the finish until the stream has ended.
- Each call is judged. The accepted ones are the answer; the others are dropped.
- When the judge accepts none, nothing of them is passed on: the engine is asked
  again for the same request **without tools** (llama-cpp-python's server keeps
  the tools in the prompt under ``tool_choice="none"``, and the model writes a
  call in the text again), and that answer in words streams as the turn's answer.
  Text the first answer showed before its call stays; the words follow it.
  A call in the second answer is not run (words were asked for).
- A failure of the second request is the engine's typed error, its message
  saying which call was turned down; the caller stores nothing of a call.

``required`` or a named tool (the caller asked for a call), ``none`` and no
tools pass through unjudged. Each answer's :class:`~exo_edge.chat_run.ChatDecision`
(``call_share`` is ``None``: an engine does not give its first-token
distribution) goes to ``decided``, as the local path's ``last_decision``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from exo_core.agent.grounding import Grounding
from exo_core.seams.failures import ProviderError, RetryableProviderError
from exo_core.seams.model import Finish, ModelChunk, ModelRequest, TextDelta, ToolCall, ToolCallChunk, UsageChunk
from exo_edge.chat_run import CallJudge, ChatDecision

__all__ = ["judged_stream", "plain_tools", "words_request", "Answer"]

log = logging.getLogger(__name__)

# One call to the engine: the transport's own stream of seam chunks for a request.
Answer = Callable[[ModelRequest], AsyncGenerator[ModelChunk, None]]


def plain_tools(tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The offered tools as the judge reads them (name, description, parameters), OpenAI's wrapper taken off."""
    out: list[Mapping[str, Any]] = []
    for tool in tools:
        inner = tool.get("function")
        if tool.get("type") == "function" and isinstance(inner, Mapping):
            out.append(inner)
        else:
            out.append(tool)
    return out


def words_request(request: ModelRequest) -> ModelRequest:
    """``request`` asking for an answer in words: the same messages, no tools."""
    return dataclasses.replace(request, tools=(), tool_choice="auto")


def _unjudged(request: ModelRequest) -> ChatDecision:
    """The decision of a request the judge has no say in (no tools, ``none``, or a call asked for)."""
    if not request.tools:
        return ChatDecision("text", None, None, "no tools offered")
    if request.tool_choice == "none":
        return ChatDecision("text", None, None, "no call allowed (tool_choice none)")
    return ChatDecision("call", None, None, f"a call ({request.tool_choice}) was required")


async def judged_stream(
    answer: Answer,
    request: ModelRequest,
    *,
    judge: CallJudge,
    provider: str,
    decided: Callable[[ChatDecision], None],
) -> AsyncGenerator[ModelChunk, None]:
    """Stream ``answer(request)`` with its tool calls judged (see the module docstring)."""
    if not request.tools or request.tool_choice != "auto":
        decided(_unjudged(request))
        async with aclosing(answer(request)) as chunks:
            async for chunk in chunks:
                yield chunk
        return
    proposed: list[ToolCall] = []
    held: list[ModelChunk] = []  # the usage and the finish: they come after the calls
    shown = ""
    async with aclosing(answer(request)) as chunks:
        async for chunk in chunks:
            if isinstance(chunk, ToolCallChunk):
                proposed.append(chunk.call)
            elif isinstance(chunk, (UsageChunk, Finish)):
                held.append(chunk)
            else:
                if isinstance(chunk, TextDelta):
                    shown += chunk.text
                yield chunk
    if not proposed:
        decided(ChatDecision("text", None, None, "the model answered in words"))
        for chunk in held:
            yield chunk
        return
    tools = plain_tools(request.tools)
    verdicts: list[tuple[ToolCall, Grounding]] = []
    for call in proposed:
        verdicts.append((call, judge(call, request.messages, tools)))
    reasons = "; ".join(grounding.reason for _, grounding in verdicts)
    accepted = [call for call, grounding in verdicts if grounding.grounded]
    if accepted:
        decided(ChatDecision("call", None, accepted[0], reasons))
        for call in accepted:
            yield ToolCallChunk(call)
        for chunk in held:
            yield chunk
        return
    decided(ChatDecision("text", None, proposed[0], reasons))
    log.info("%s: the model's call was turned down (%s); asking it again for words", provider, reasons)
    for chunk in held:
        if isinstance(chunk, UsageChunk):
            yield chunk  # the first answer's tokens were spent all the same
    async for chunk in _words(answer, request, shown, provider=provider, turned_down=reasons):
        yield chunk


async def _words(
    answer: Answer, request: ModelRequest, shown: str, *, provider: str, turned_down: str
) -> AsyncGenerator[ModelChunk, None]:
    """The answer in words after every call was turned down; its failure names the call."""
    # Text the first answer showed stays on the screen; the words start on a new paragraph after it.
    gap = "\n\n" if shown and not shown[-1].isspace() else ""
    try:
        async with aclosing(answer(words_request(request))) as chunks:
            async for chunk in chunks:
                if isinstance(chunk, ToolCallChunk):
                    log.info("%s: a call in the answer asked for in words is not run: %s", provider, chunk.call.name)
                    continue
                if isinstance(chunk, Finish) and chunk.reason == "tool_calls":
                    yield Finish("end")
                    continue
                if isinstance(chunk, TextDelta) and gap and chunk.text:
                    yield TextDelta(gap)
                    gap = ""
                yield chunk
    except RetryableProviderError as exc:
        raise RetryableProviderError(
            _failed(provider, turned_down, exc.message),
            kind=exc.kind,
            status=exc.status,
            provider=exc.provider,
            retry_after=exc.retry_after,
        ) from exc
    except ProviderError as exc:
        error = ProviderError(
            _failed(provider, turned_down, exc.message), kind=exc.kind, status=exc.status, provider=exc.provider
        )
        error.retry_after = exc.retry_after
        raise error from exc


def _failed(provider: str, turned_down: str, cause: str) -> str:
    return (
        f"{provider}: the model's tool call was turned down ({turned_down}), and asking it again for an answer "
        f"in words failed: {cause}"
    )
