"""The Anthropic Messages API transport.

Streams ``POST {base_url}/v1/messages`` and normalises its events
(``message_start``, ``content_block_*``, ``message_delta``, ``message_stop``,
``error``) to the model seam: text and thinking deltas, whole tool calls
(``input_json_delta`` fragments assembled), usage with cache reads and writes,
one Finish. An ``overloaded_error`` is a retryable rate limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from exo_core.seams.failures import ProviderError, RetryableProviderError
from exo_core.seams.model import (
    ChatMessage,
    Finish,
    ModelChunk,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)
from exo_edge.hosted.http import HostedTransport, error_for_status, whole_call

__all__ = ["AnthropicTransport", "anthropic_messages", "ANTHROPIC_VERSION"]

ANTHROPIC_VERSION = "2023-06-01"
_FINISH = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "pause_turn": "end",
    "refusal": "end",
}
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def anthropic_messages(messages: tuple[ChatMessage, ...]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` in the Messages API shape; consecutive tool results merge."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content}
            if (
                out
                and out[-1]["role"] == "user"
                and isinstance(out[-1]["content"], list)
                and all(b.get("type") == "tool_result" for b in out[-1]["content"])
            ):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.role == "assistant" and m.tool_calls:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m.role, "content": m.content})
    return system, out


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "required":
        return {"type": "any"}
    if choice in ("auto", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    json_parts: list[str] = field(default_factory=list)


class AnthropicTransport(HostedTransport):
    """One route and credential of the Anthropic Messages API."""

    PATH = "/v1/messages"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API body of ``request`` (system apart, streamed)."""
        system, messages = anthropic_messages(request.messages)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature_or(),
        }
        if system:
            body["system"] = system
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.tools:
            body["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "input_schema": t.get("parameters", {"type": "object", "properties": {}}),
                }
                for t in request.tools
            ]
            if request.tool_choice != "auto":
                body["tool_choice"] = _tool_choice(request.tool_choice)
        return body

    def headers(self) -> dict[str, str]:
        """JSON in, SSE out, the API version, the key as ``x-api-key``."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one message as seam chunks, ending with :class:`Finish`."""
        blocks: dict[int, _Block] = {}
        calls: list[ToolCall] = []
        usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        model = self.model
        finish: str | None = None
        stopped = False
        async with aclosing(self.events(request)) as events:
            async for event, obj in events:
                kind = obj.get("type", event) if isinstance(obj, dict) else event
                if kind == "error":
                    raise _stream_error(obj.get("error") or {}, self.provider)
                if kind == "message_start":
                    msg = obj.get("message") or {}
                    model = msg.get("model") or model
                    _add_usage(usage, msg.get("usage") or {})
                elif kind == "content_block_start":
                    cb = obj.get("content_block") or {}
                    blocks[int(obj.get("index", 0))] = _Block(cb.get("type", ""), cb.get("id", ""), cb.get("name", ""))
                elif kind == "content_block_delta":
                    delta = obj.get("delta") or {}
                    block = blocks.setdefault(int(obj.get("index", 0)), _Block("text"))
                    if delta.get("type") == "text_delta" and delta.get("text"):
                        yield TextDelta(delta["text"])
                    elif delta.get("type") == "thinking_delta" and delta.get("thinking"):
                        yield ReasoningDelta(delta["thinking"])
                    elif delta.get("type") == "input_json_delta":
                        block.json_parts.append(delta.get("partial_json", ""))
                elif kind == "content_block_stop":
                    ended = blocks.get(int(obj.get("index", 0)))
                    if ended is not None and ended.kind == "tool_use":
                        calls.append(whole_call(ended.id, ended.name, ended.json_parts, self.provider))
                elif kind == "message_delta":
                    reason = (obj.get("delta") or {}).get("stop_reason")
                    if reason:
                        finish = _FINISH.get(reason, "end")
                    _add_usage(usage, obj.get("usage") or {})
                elif kind == "message_stop":
                    stopped = True
                    break
        if not stopped:
            raise self.cut("message")
        for call in calls:
            yield ToolCallChunk(call)
        total_in = usage["input"] + usage["cache_read"] + usage["cache_write"]
        yield UsageChunk(
            input_tokens=total_in,
            output_tokens=usage["output"],
            model=model,
            cache_read_tokens=usage["cache_read"],
            cache_write_tokens=usage["cache_write"],
        )
        yield Finish(finish or ("tool_calls" if calls else "end"))


def _add_usage(total: dict[str, int], u: dict[str, Any]) -> None:
    # message_start carries input counts; message_delta carries cumulative output.
    if "input_tokens" in u:
        total["input"] = int(u["input_tokens"] or 0)
    if "cache_read_input_tokens" in u:
        total["cache_read"] = int(u["cache_read_input_tokens"] or 0)
    if "cache_creation_input_tokens" in u:
        total["cache_write"] = int(u["cache_creation_input_tokens"] or 0)
    if "output_tokens" in u:
        total["output"] = int(u["output_tokens"] or 0)


def _stream_error(err: dict[str, Any], provider: str) -> ProviderError | RetryableProviderError:
    status = _ERROR_STATUS.get(str(err.get("type")), 500)
    return error_for_status(status, str(err.get("message", err)), provider=provider)
