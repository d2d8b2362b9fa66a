"""The OpenAI-compatible chat transport (OpenAI, OpenRouter, llama.cpp's server,
Ollama, LM Studio, vLLM, a laptop on the LAN).

Streams ``POST {base_url}/chat/completions`` and normalises it to the model
seam: text and reasoning deltas as they come, each tool call once whole (its
argument fragments assembled and parsed), one usage chunk, then one Finish.
A stream that ends without a finish reason (even with ``[DONE]``) was cut: that is a
retryable network failure. When tools are offered, calls a server leaves in the
text (``<tool_call>`` blocks: llama-cpp-python's server with a Qwen model) are
taken out of it by :class:`~exo_edge.hosted.text_calls.TextCallFilter`.

Under ``tool_choice="auto"`` the calls are put to the core's judge before they
are passed on, and an answer whose calls are all turned down is asked for
again in words (:mod:`exo_edge.hosted.judged`; docs/models.md, "Text or a tool call").
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from exo_core.agent.grounding import call_grounding
from exo_core.seams.failures import FailureKind, ProviderError, RetryableProviderError
from exo_core.seams.model import (
    ChatMessage,
    Finish,
    ModelChunk,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    TopTokens,
    UsageChunk,
)
from exo_edge.chat_run import CallJudge, ChatDecision
from exo_edge.hosted.engine_gate import EngineGate
from exo_edge.hosted.http import HostedTransport, HttpClient, error_for_status, whole_call
from exo_edge.hosted.judged import judged_stream
from exo_edge.hosted.text_calls import TextCallFilter

__all__ = ["OpenAICompatTransport", "openai_messages", "openai_tools"]

_FINISH = {
    "stop": "end",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "end",
    "eos": "end",
}


def openai_messages(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    """The seam's messages in the OpenAI chat format."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            message: dict[str, Any] = {"role": "assistant"}
            if m.content:
                # Without text, "content" is left out rather than null: llama-cpp-python's server
                # refuses a null content (HTTP 500, a validation error); OpenAI accepts either.
                message["content"] = m.content
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in m.tool_calls
            ]
            out.append(message)
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def openai_tools(tools: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """Tool descriptions (name, description, parameters) as OpenAI function tools."""
    out = []
    for t in tools:
        if t.get("type") == "function" and "function" in t:
            out.append(t)
        else:
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t.get("parameters", {"type": "object", "properties": {}}),
                    },
                }
            )
    return out


def _tool_names(tools: tuple[dict[str, Any], ...]) -> frozenset[str]:
    """The names of the offered tools, in either shape :func:`openai_tools` accepts."""
    names = set()
    for tool in openai_tools(tools):
        names.add(str(tool["function"]["name"]))
    return frozenset(names)


def _tool_choice(choice: str) -> Any:
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAICompatTransport(HostedTransport):
    """One route and credential of an OpenAI-compatible provider.

    ``judge`` says whether a call the model proposes under ``tool_choice="auto"``
    is grounded in the person's words; ``last_decision`` is how the last answer
    chose between text and a call (as the local transport's).
    """

    PATH = "/chat/completions"
    DONE = "[DONE]"

    def __init__(
        self,
        client: HttpClient,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        provider: str,
        judge: CallJudge | None = call_grounding,
        tls_cert: str = "",
        gate: EngineGate | None = None,
    ) -> None:
        super().__init__(
            client, base_url=base_url, model=model, api_key=api_key, provider=provider, tls_cert=tls_cert, gate=gate
        )
        self.judge = judge
        self.last_decision: ChatDecision | None = None

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The chat-completions body of ``request`` (streamed, usage included)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": request.max_tokens,
            "temperature": request.temperature_or(),
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.top_logprobs > 0:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        if request.tools:
            body["tools"] = openai_tools(request.tools)
            if request.tool_choice != "auto":
                body["tool_choice"] = _tool_choice(request.tool_choice)
        return body

    def headers(self) -> dict[str, str]:
        """JSON in, SSE out, the key as a bearer token."""
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one answer as seam chunks, ending with :class:`Finish`; its calls judged (module docstring).

        Without a judge (a provider whose ``judge_calls`` is off) the engine's answer passes as it is.
        """
        if self.judge is None:
            answer = self._completion(request)
        else:
            answer = judged_stream(
                self._completion, request, judge=self.judge, provider=self.provider, decided=self._decided
            )
        async with aclosing(answer) as chunks:
            async for chunk in chunks:
                yield chunk

    def _decided(self, decision: ChatDecision) -> None:
        self.last_decision = decision

    async def _completion(self, request: ModelRequest) -> AsyncGenerator[ModelChunk, None]:
        """Stream one chat completion as seam chunks, ending with :class:`Finish`."""
        calls: dict[int, _PartialCall] = {}
        finish: str | None = None
        usage: UsageChunk | None = None
        done = False
        in_text = TextCallFilter(self.provider, _tool_names(request.tools)) if request.tools else None
        said = False  # any text, reasoning or top tokens sent on
        async with aclosing(self.events(request)) as events:
            async for _event, obj in events:
                if obj is None:  # [DONE]
                    done = True
                    break
                if not isinstance(obj, dict):
                    continue
                if "error" in obj:
                    raise _stream_error(obj["error"], self.provider)
                if isinstance(obj.get("usage"), dict):
                    usage = _usage(obj["usage"], obj.get("model") or self.model)
                for choice in obj.get("choices") or ():
                    if request.top_logprobs > 0:
                        for step in _top_tokens(choice.get("logprobs")):
                            said = True
                            yield step
                    delta = choice.get("delta") or {}
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        said = True
                        yield ReasoningDelta(reasoning)
                    content = delta.get("content")
                    if isinstance(content, str) and content and in_text is not None:
                        content = in_text.feed(content)
                    if isinstance(content, str) and content:
                        said = True
                        yield TextDelta(content)
                    for tc in delta.get("tool_calls") or ():
                        part = calls.setdefault(int(tc.get("index", len(calls))), _PartialCall())
                        part.id = tc.get("id") or part.id
                        fn = tc.get("function") or {}
                        part.name = fn.get("name") or part.name
                        if fn.get("arguments"):
                            part.arguments.append(fn["arguments"])
                    if choice.get("finish_reason"):
                        finish = _FINISH.get(choice["finish_reason"], "end")
        if finish is None:
            # Every engine names a finish reason before [DONE]; a bare [DONE] is a stream ended early
            # (llama-cpp-python's server ends a running answer that way when another request arrives).
            raise self.cut("answer" if not done else "answer (it sent [DONE] without a finish reason)")
        text_calls = []
        if in_text is not None:
            rest = in_text.finish()
            if rest:
                said = True
                yield TextDelta(rest)
            text_calls = in_text.calls
        if not (said or calls or text_calls):
            # An engine that answers nothing at all failed; the router falls back to the next route.
            raise RetryableProviderError(
                f"{self.provider}: the engine finished ({finish}) without a word or a tool call",
                kind=FailureKind.SERVER,
                provider=self.provider,
            )
        for index in sorted(calls):
            part = calls[index]
            yield ToolCallChunk(whole_call(part.id or f"call_{index}", part.name, part.arguments, self.provider))
        for call in text_calls:
            yield ToolCallChunk(call)
        if usage is not None:
            yield usage
        called = bool(calls or text_calls)
        yield Finish("tool_calls" if called and finish in (None, "end") else (finish or "end"))


def _top_tokens(logprobs: Any) -> list[TopTokens]:
    """The steps of a chunk's ``logprobs`` (OpenAI's ``{"content": [{"top_logprobs": [...]}, ...]}``) as
    :class:`TopTokens`; an entry that is not a token with a finite log probability is left out, and
    nothing at all when the engine sent none (``null``, or a shape of its own)."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return []
    steps = []
    for step in logprobs["content"]:
        top = step.get("top_logprobs") if isinstance(step, dict) else None
        if not isinstance(top, list):
            continue
        found = []
        for entry in top:
            token = entry.get("token") if isinstance(entry, dict) else None
            value = entry.get("logprob") if isinstance(entry, dict) else None
            if isinstance(token, str) and isinstance(value, (int, float)) and _finite(value):
                found.append((token, float(value)))
        steps.append(TopTokens(tuple(found)))
    return steps


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _usage(u: dict[str, Any], model: str) -> UsageChunk:
    details = u.get("prompt_tokens_details") or {}
    cost = u.get("cost")
    return UsageChunk(
        input_tokens=int(u.get("prompt_tokens") or 0),
        output_tokens=int(u.get("completion_tokens") or 0),
        cost=float(cost) if isinstance(cost, (int, float)) else 0.0,
        model=str(model),
        cache_read_tokens=int(details.get("cached_tokens") or 0),
        cache_write_tokens=int(details.get("cache_write_tokens") or 0),
    )


def _stream_error(err: Any, provider: str) -> ProviderError | RetryableProviderError:
    message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
    code = err.get("code") if isinstance(err, dict) else None
    status = code if isinstance(code, int) else None
    if status is not None and status < 500 and status != 429:
        return error_for_status(status, message, provider=provider)
    kind = FailureKind.RATE_LIMIT if status == 429 else FailureKind.SERVER
    return RetryableProviderError(
        f"{provider}: error in stream: {message}", kind=kind, status=status, provider=provider
    )
