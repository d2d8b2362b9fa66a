"""JSON lines over standard input and output.

Each input line is one command; each output line is either a response (has
``ok``) or an event (has ``seq``). ``events.subscribe`` answers with a response
and then streams every event above ``since`` — replayed, then live — as lines,
until stdin closes.

Every line gets exactly one typed answer and never ends the loop:
a malformed line is ``malformed``, an unexpected failure ``internal``.
A line longer than :data:`~exo_core.protocol.MAX_BODY_BYTES` is answered
``too_large`` as soon as it passes the limit and then discarded up to its end,
so its tail can never be read as a second command. Blank lines are skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import IO

from exo_core.engine.dispatch import Engine
from exo_core.errors import ClosedResourceError, PayloadTooLargeError
from exo_core.events.hub import Hub
from exo_core.protocol import MAX_BODY_BYTES, Response
from exo_core.protocol.commands import EventsSubscribe
from exo_core.server.intake import decode_untrusted, failure_for, response_bytes

__all__ = ["read_lines", "serve_stdio"]

_CHUNK = 64 * 1024


async def read_lines(reader: asyncio.StreamReader, limit: int = MAX_BODY_BYTES) -> AsyncIterator[bytes | None]:
    """The lines of ``reader`` without their newline; ``None`` once in place of each line over ``limit``.

    At most ``limit`` bytes are ever buffered: past the limit the rest of the
    line is read and dropped up to its newline.
    """
    buffer = bytearray()
    discarding = False
    while True:
        chunk = await reader.read(_CHUNK)
        if not chunk:
            if buffer and not discarding:
                yield bytes(buffer)  # a last line without a newline still counts
            return
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if discarding:
                discarding = end < 0
            elif len(buffer) + len(piece) > limit:
                buffer.clear()
                discarding = end < 0
                yield None
            elif end < 0:
                buffer += piece
            else:
                buffer += piece
                line = bytes(buffer)
                buffer.clear()
                yield line
            if end < 0:
                break
            start = end + 1


async def serve_stdio(
    engine: Engine, hub: Hub, *, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None
) -> None:
    """Serve commands from ``stdin`` until it closes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_CHUNK)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin or sys.stdin.buffer)
    out = stdout or sys.stdout.buffer
    lock = asyncio.Lock()
    streams: list[asyncio.Task[None]] = []

    async def write(data: bytes) -> None:
        async with lock:
            out.write(data + b"\n")
            out.flush()

    async def stream_events(since: int, session: str | None) -> None:
        with contextlib.suppress(ClosedResourceError):  # the core is shutting down
            async with hub.subscribe(since, session) as sub:
                while True:
                    item = await sub.next(timeout=None)
                    if item is not None:
                        await write(item.data.encode("utf-8"))

    async def answer(line: bytes) -> None:
        try:
            command, body = await decode_untrusted(line)
        except Exception as exc:  # noqa: BLE001 - every line gets a typed answer, never the end of the loop
            await write(response_bytes(failure_for(exc)))
            return
        if isinstance(body, EventsSubscribe):
            await write(response_bytes(Response.success(command.id, {"streaming": True, "head": hub.last_seq})))
            streams.append(asyncio.create_task(stream_events(body.since, body.session)))
            return
        await write(response_bytes(await engine.handle(command.type, command.id, body)))

    try:
        async for line in read_lines(reader):
            if line is None:
                too_long = PayloadTooLargeError(f"line exceeds {MAX_BODY_BYTES} bytes; it was discarded to its end")
                await write(response_bytes(failure_for(too_long)))
                continue
            if not line.strip():
                continue
            await answer(line)
    finally:
        for task in streams:
            task.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
