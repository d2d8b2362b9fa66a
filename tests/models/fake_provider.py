"""A real aiohttp server on 127.0.0.1 that plays scripted provider responses.

Each provider name gets its own path prefix ``/p/<name>``: OpenAI-compatible
``/p/<name>/v1/chat/completions`` and Anthropic ``/p/<name>/v1/messages``.
Tests queue :class:`Reply` scripts per provider; every request is recorded.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["Reply", "FakeProvider", "openai_chunks", "anthropic_events", "FakeClock"]


@dataclass
class Reply:
    """One scripted response.

    ``events`` are SSE ``data`` payloads (str, or dict/list serialised as JSON;
    a tuple ``(event, data)`` names the event). ``cut_after`` drops the
    connection after that many events. ``delay_headers`` sleeps before the
    response starts; ``delay_events`` between events.
    """

    status: int = 200
    events: list[Any] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    cut_after: int | None = None
    delay_headers: float = 0.0
    delay_events: float = 0.0
    done: bool = True  # send "data: [DONE]" at the end (OpenAI style)
    content_type: str = "text/event-stream"  # of a 200 answer (a web page or proxy sends something else)
    stall_after: int | None = None  # after that many events, go quiet for ``stall`` seconds (a hung server)
    stall: float = 0.0
    endless: Any = None  # after ``events``, send this payload every ``delay_events`` seconds until cut off


@dataclass
class Seen:
    provider: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeProvider:
    """The server: ``await start()``, queue replies with :meth:`script`, read :attr:`seen`."""

    def __init__(self) -> None:
        self.replies: dict[str, deque[Reply]] = defaultdict(deque)
        self.seen: list[Seen] = []
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.scheme = "http"
        self.active = 0  # requests being answered now
        self.most_active = 0  # the most answered at once

    def script(self, provider: str, *replies: Reply) -> None:
        """Queue replies for ``provider`` (served in order, one per request)."""
        self.replies[provider].extend(replies)

    def base_url(self, provider: str, *, anthropic: bool = False) -> str:
        """The base URL a catalog entry for ``provider`` should use."""
        root = f"{self.scheme}://127.0.0.1:{self.port}/p/{provider}"
        return root if anthropic else root + "/v1"

    def count(self, provider: str) -> int:
        """How many requests ``provider`` received."""
        return sum(1 for s in self.seen if s.provider == provider)

    async def start(self, *, ssl_context: Any = None) -> None:
        """Listen on a free loopback port (HTTPS with ``ssl_context``)."""
        app = web.Application()
        app.router.add_post("/p/{provider}/v1/chat/completions", self._handle)
        app.router.add_post("/p/{provider}/v1/messages", self._handle)
        self.runner = web.AppRunner(app, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=ssl_context)
        self.scheme = "http" if ssl_context is None else "https"
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            return await self._answer(request)
        except ConnectionResetError:  # the client went away mid-answer (a preempted or cut-off request)
            raise web.HTTPBadRequest() from None
        finally:
            self.active -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        provider = request.match_info["provider"]
        body = await request.json()
        self.seen.append(Seen(provider, request.path, dict(request.headers), body))
        queue = self.replies[provider]
        if not queue:
            return web.json_response({"error": {"message": f"no reply scripted for {provider}"}}, status=599)
        reply = queue.popleft()
        if reply.delay_headers:
            await asyncio.sleep(reply.delay_headers)
        if reply.status != 200:
            return web.Response(
                status=reply.status,
                headers=reply.headers,
                text=reply.body
                if reply.body is not None
                else json.dumps({"error": {"message": f"scripted {reply.status}"}}),
                content_type="application/json",
            )
        resp = web.StreamResponse(status=200, headers={"Content-Type": reply.content_type, **reply.headers})
        await resp.prepare(request)
        for i, ev in enumerate(reply.events):
            if reply.cut_after is not None and i >= reply.cut_after:
                await _cut(request)
                return resp
            if reply.delay_events:
                await asyncio.sleep(reply.delay_events)
            if reply.stall_after is not None and i == reply.stall_after:
                await asyncio.sleep(reply.stall)
            await resp.write(_sse(ev))
        if reply.cut_after is not None and reply.cut_after >= len(reply.events):
            await _cut(request)
            return resp
        while reply.endless is not None:
            await asyncio.sleep(reply.delay_events)
            await resp.write(_sse(reply.endless))
        if reply.done:
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


async def _cut(request: web.Request) -> None:
    """Drop the connection mid-body, after what was written has left."""
    await asyncio.sleep(0.05)
    assert request.transport is not None
    request.transport.abort()


def _sse(ev: Any) -> bytes:
    if isinstance(ev, tuple):
        name, data = ev
        payload = data if isinstance(data, str) else json.dumps(data)
        return f"event: {name}\ndata: {payload}\n\n".encode()
    payload = ev if isinstance(ev, str) else json.dumps(ev)
    return f"data: {payload}\n\n".encode()


def openai_chunks(
    *texts: str, finish: str | None = "stop", usage: dict[str, Any] | None = None, model: str = "m"
) -> list[dict[str, Any]]:
    """OpenAI-style stream chunks: one per text, then the finish reason and usage."""
    out: list[dict[str, Any]] = [
        {"model": model, "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in texts
    ]
    if finish is not None:
        out.append({"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage is not None:
        out.append({"model": model, "choices": [], "usage": usage})
    return out


def anthropic_events(
    *texts: str, usage_in: int = 10, usage_out: int = 5, cache_read: int = 0, cache_write: int = 0
) -> list[tuple[str, Any]]:
    """An Anthropic Messages stream with text blocks."""
    evs: list[tuple[str, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "model": "claude-test",
                    "usage": {
                        "input_tokens": usage_in,
                        "output_tokens": 1,
                        "cache_read_input_tokens": cache_read,
                        "cache_creation_input_tokens": cache_write,
                    },
                },
            },
        )
    ]
    evs.append(
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
    )
    for t in texts:
        evs.append(
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
            )
        )
    evs.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    evs.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": usage_out}},
        )
    )
    evs.append(("message_stop", {"type": "message_stop"}))
    return evs


class FakeClock:
    """An injectable monotonic clock that only moves when told."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
