"""A scripted model: replays a file of replies and tool calls, deterministically.

It is a real :class:`~exo_core.seams.model.ModelTransport`, plugged in where a
provider would be. The reply for a call is chosen by how many assistant
messages the request already holds, so the same conversation gets the same
reply even after the daemon restarts.

Script format (JSON)::

    {"replies": [
        {"text": "Reading it.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "Done.", "delay": 0.01, "chunk": 4},
        {"error": "retryable", "times": 1, "then": {"text": "ok"}}
    ]}

``delay`` is seconds between streamed chunks of ``chunk`` characters; ``error``
(``retryable`` or ``fatal``) fails the call ``times`` times before ``then``.
When the script runs out, the model answers ``(script exhausted)``. A top-level
``"record": PATH`` appends each request the model is sent to PATH as one JSON
line (``messages`` and ``tools``), so a test can see what reached the model.

An optional ``"n_ctx": N`` gives the model a window of N tokens (counted by
estimate, characters / 4): it declares it as a
:class:`~exo_core.seams.model.WindowedTransport`, and a call whose prompt and
``max_tokens`` do not fit fails as a local model's would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from exo_core.context.window import EstimatedCounter, estimated_window
from exo_core.errors import ConfigError, ModelError, RetryableModelError
from exo_core.seams.model import (
    ContextWindow,
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    UsageChunk,
)

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """Replays scripted replies; see the module docstring for the format."""

    def __init__(
        self,
        replies: list[dict[str, Any]],
        *,
        name: str = "scripted",
        record: Path | None = None,
        n_ctx: int | None = None,
    ) -> None:
        if not isinstance(replies, list) or not all(isinstance(r, dict) for r in replies):
            raise ConfigError("a model script needs 'replies': a list of objects")
        if n_ctx is not None and (isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 64):
            raise ConfigError(f"a model script's n_ctx must be a window of at least 64 tokens, not {n_ctx!r}")
        self._replies = replies
        self.n_ctx = n_ctx
        self.overflows = 0
        self._failures: dict[int, int] = {}
        self._record = record
        self.name = name
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        """Load a script file."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read model script {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"model script {path} must be a JSON object with 'replies'")
        record = data.get("record")
        if record is not None and not isinstance(record, str):
            raise ConfigError(f"model script {path}: 'record' must be a file path")
        return cls(
            data.get("replies", []),
            name=f"scripted:{path.name}",
            record=Path(record) if record else None,
            n_ctx=data.get("n_ctx"),
        )

    async def context_window(self, role: str) -> ContextWindow | None:
        """The script's window (``n_ctx``), counted by estimate; ``None`` when the script sets none."""
        if self.n_ctx is None:
            return None
        return estimated_window(self.n_ctx, model=self.name, where="n_ctx in the model script")

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.requests.append(request)
        if self._record is not None:
            await asyncio.to_thread(_append_request, self._record, request)
        if self.n_ctx is not None:
            prompt = await EstimatedCounter().measure(request)
            if prompt + request.max_tokens > self.n_ctx:
                self.overflows += 1
                raise ModelError(
                    f"the prompt has {prompt} tokens but only {self.n_ctx - request.max_tokens} fit in n_ctx "
                    f"{self.n_ctx} with max_tokens {request.max_tokens}"
                )
        index = sum(1 for m in request.messages if m.role == "assistant")
        reply: dict[str, Any] = self._replies[index] if index < len(self._replies) else {"text": "(script exhausted)"}
        if "error" in reply:
            used = self._failures.get(index, 0)
            if used < int(reply.get("times", 1)):
                self._failures[index] = used + 1
                if reply["error"] == "retryable":
                    raise RetryableModelError("scripted transient failure", retry_after=None)
                raise ModelError("scripted failure")
            reply = reply.get("then", {"text": ""})
        text = str(reply.get("text", ""))
        step = max(1, int(reply.get("chunk", 16)))
        delay = float(reply.get("delay", 0.0))
        for start in range(0, len(text), step):
            if delay:
                await asyncio.sleep(delay)
            yield TextDelta(text[start : start + step])
        calls = reply.get("tool_calls", [])
        for n, call in enumerate(calls):
            yield ToolCallChunk(
                ToolCall(id=f"call_{index}_{n}", name=call["name"], arguments=call.get("arguments", {}))
            )
        prompt_chars = sum(len(m.content) for m in request.messages)
        yield UsageChunk(input_tokens=prompt_chars // 4, output_tokens=max(1, len(text) // 4), model=self.name)
        yield Finish("tool_calls" if calls else "end")


def _append_request(path: Path, request: ModelRequest) -> None:
    """One request as a JSON line: what the model was sent."""
    messages = [
        {
            "role": m.role,
            "content": m.content,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls],
            "tool_call_id": m.tool_call_id,
        }
        for m in request.messages
    ]
    line = json.dumps({"messages": messages, "tools": list(request.tools)}, ensure_ascii=False)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
