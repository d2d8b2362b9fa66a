"""JSON lines over standard input and output.

Each input line is one command; each output line is either a response (has
``ok``) or an event (has ``seq``). ``events.subscribe`` answers with a response
and then streams every event above ``since`` — replayed, then live — as lines,
until stdin closes. A malformed line gets a typed error response and the
stream goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import IO

from exo_core.engine.dispatch import Engine
from exo_core.errors import ClosedResourceError, ExoError
from exo_core.protocol import MAX_BODY_BYTES, ErrorInfo, Response, decode_command
from exo_core.protocol.commands import EventsSubscribe
from exo_core.server.hub import Hub

__all__ = ["serve_stdio"]


async def serve_stdio(
    engine: Engine, hub: Hub, *, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None
) -> None:
    """Serve commands from ``stdin`` until it closes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_BODY_BYTES + 1)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin or sys.stdin.buffer)
    out = stdout or sys.stdout.buffer
    lock = asyncio.Lock()
    streams: list[asyncio.Task[None]] = []

    async def write(line: str) -> None:
        async with lock:
            out.write(line.encode("utf-8") + b"\n")
            out.flush()

    async def stream_events(since: int, session: str | None) -> None:
        with contextlib.suppress(ClosedResourceError):  # the core is shutting down
            async with hub.subscribe(since, session) as sub:
                while True:
                    item = await sub.next(timeout=None)
                    if item is not None:
                        await write(item.data)

    try:
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # line longer than the limit
                await write(
                    Response.failure(None, ErrorInfo("too_large", f"line exceeds {MAX_BODY_BYTES} bytes")).to_json()
                )
                continue
            if not line:
                break
            if not line.strip():
                continue
            try:
                command, body = decode_command(line)
            except ExoError as exc:
                await write(Response.failure(None, ErrorInfo(exc.code, exc.message, exc.field)).to_json())
                continue
            if isinstance(body, EventsSubscribe):
                await write(Response.success(command.id, {"streaming": True, "head": hub.last_seq}).to_json())
                streams.append(asyncio.create_task(stream_events(body.since, body.session)))
                continue
            await write((await engine.handle(command.type, command.id, body)).to_json())
    finally:
        for task in streams:
            task.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
