"""A link that dies silently (no FIN, no RST: Wi-Fi gone, a laptop asleep) is noticed.

exod writes a keep-alive comment on an idle event stream; a client that hears nothing for
``stream_idle_timeout`` seconds treats the stream as broken. A test-local HTTP server that
accepts the stream and then never writes stands in for the dead link.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from exo_testkit import write_script

from device.link import Link
from exo_core.client import ExoClient
from exo_core.errors import BrokenResourceError


@pytest.fixture
async def silent_core() -> AsyncIterator[tuple[str, list[str]]]:
    """A server that answers ``hello`` and then holds every event stream open, silent."""
    streams: list[str] = []

    async def command(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response(
            {"id": body["id"], "ok": True, "result": {"last_seq": 0, "protocol": 1}, "error": None}
        )

    async def events(request: web.Request) -> web.StreamResponse:
        streams.append(request.query_string)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await asyncio.sleep(3600)  # the link is dead: nothing more ever arrives
        return response

    app = web.Application()
    app.router.add_post("/command", command)
    app.router.add_get("/events", events)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", streams
    finally:
        await runner.cleanup()


async def test_a_silent_stream_breaks_after_the_idle_timeout(silent_core: tuple[str, list[str]]) -> None:
    url, streams = silent_core
    async with ExoClient(url, stream_idle_timeout=0.5) as client:
        with pytest.raises(BrokenResourceError, match="event stream"):
            # The outer bound only keeps a regression from hanging the suite.
            await asyncio.wait_for(anext(client.raw_events(since=0, reconnect=False)), 30)
    assert len(streams) == 1


async def test_keepalives_keep_an_idle_stream_up(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path) -> None:
    # The testkit's exod sends a keep-alive every 0.5 s; the client would give up after 1.5 s of
    # silence. Idle for 3 s, then an event: it arrives on the same stream (reconnect=False would
    # raise had the stream broken).
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", []), workspace)
    async with ExoClient(d.url, stream_idle_timeout=1.5) as client:
        head = (await client.health())["last_seq"]
        stream = client.raw_events(since=head, reconnect=False)
        first = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(3.0)
        assert not first.done()
        async with ExoClient(d.url) as other:
            created = (await other.request("session.create", {"title": "after the quiet"}))["session"]["id"]
        data, event = await asyncio.wait_for(first, 30)
        assert event.type == "session.updated" and event.session == created
        assert json.loads(data)["seq"] == event.seq
        await stream.aclose()


async def test_the_device_link_goes_offline_when_the_stream_goes_silent(silent_core: tuple[str, list[str]]) -> None:
    url, streams = silent_core
    states: list[str] = []
    offline = asyncio.Event()

    def on_state(state: str) -> None:
        states.append(state)
        if state == "offline":
            offline.set()

    async def on_event(event: object) -> None:
        raise AssertionError(f"a silent core sent {event!r}")

    async with ExoClient(url, stream_idle_timeout=0.5) as client:
        link = Link(
            client,
            on_event=on_event,
            on_state=on_state,
            on_refused=lambda pending, why: None,
            retry_min=0.1,
            retry_max=0.2,
        )
        task = asyncio.create_task(link.run())
        try:
            await asyncio.wait_for(offline.wait(), 30)
            # It keeps trying: a second connection is made after the back-off.
            for _ in range(300):
                if len(streams) >= 2:
                    break
                await asyncio.sleep(0.05)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    # on_state also repeats the current state (the screen redraws the outbox count).
    assert states[0] == "online" and "offline" in states
    assert len(streams) >= 2
