"""Capabilities: each client announces what it can show in hello; the core shapes its stream to match."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web

from exo_core.agent.scripted import ScriptedModel
from exo_core.client import ExoClient
from exo_core.engine.core import Core
from exo_core.engine.shaping import profile_for, shape_data
from exo_core.protocol import events as ev
from exo_core.protocol.commands import Capabilities
from exo_core.seams.home import ExoHome
from exo_core.server.http import HttpSettings, build_app
from exo_core.server.listeners import bind_unix

DIFF = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-teh\n+the\n"
CLIENTS = {
    "web": {"can_draw": True, "screen_pixels": [1280, 800]},
    "terminal": {"screen_columns": 40, "screen_rows": 30},
    "device": {"screen_columns": 20, "screen_rows": 2, "buttons": ["allow", "deny"], "voice_out": True},
    "voice": {"voice_out": True, "voice_in": True},
}


def test_profiles_follow_capabilities() -> None:
    forms = {name: profile_for(name, Capabilities(**caps)).form for name, caps in CLIENTS.items()}
    assert forms == {"web": "panel", "terminal": "line", "device": "card", "voice": "spoken"}
    again = profile_for("terminal", Capabilities(**CLIENTS["terminal"]))
    assert again.client_id == profile_for("terminal", Capabilities(**CLIENTS["terminal"])).client_id


def test_only_panels_change_shape() -> None:
    line = profile_for("t", Capabilities(screen_columns=30))
    notice = json.dumps({"type": "notice", "body": {"text": "ui.panel is only a word here"}, "seq": 1})
    assert shape_data(notice, line) == notice
    assert shape_data(notice, None) == notice


async def test_four_clients_on_one_stream_get_the_same_events_each_shaped_to_fit(tmp_path: Path) -> None:
    home = ExoHome(tmp_path / "home")
    async with Core.open(home, model=ScriptedModel([])) as core:
        runner = web.AppRunner(build_app(core.engine, core.hub, HttpSettings(check_peer_uid=True, keepalive=0.2)))
        await runner.setup()
        await web.SockSite(runner, bind_unix(home.socket_path)).start()
        try:
            streams: dict[str, list[dict]] = {}
            clients = {
                name: ExoClient.for_socket(home.socket_path, client_name=name, capabilities=caps)
                for name, caps in CLIENTS.items()
            }
            for name, client in clients.items():
                await client.__aenter__()
                hello = await client.hello()
                assert hello["client_id"] == client.client_id
            await core.hub.emit(
                "ses_1", "ui.panel", ev.UiPanel(kind="diff", title="fix typo", data={"path": "README.md", "diff": DIFF})
            )
            await core.hub.emit("ses_1", "notice", ev.Notice(text="done"))

            async def read(name: str) -> None:
                streams[name] = []
                async for _raw, event in clients[name].raw_events(0, "ses_1", reconnect=False):
                    streams[name].append({"seq": event.seq, "type": event.type, "body": event.body})
                    if len(streams[name]) == 2:
                        return

            await asyncio.wait_for(asyncio.gather(*(read(n) for n in clients)), 10)
            plain = ExoClient.for_socket(home.socket_path)
            async with plain:
                unshaped = [e async for _r, e in _take(plain, 2)]
        finally:
            for client in clients.values():
                await client.close()
            core.hub.close_streams()
            await runner.cleanup()
    seqs = {name: [e["seq"] for e in events] for name, events in streams.items()}
    assert len({tuple(s) for s in seqs.values()}) == 1, "same events, same order for every client"
    assert streams["web"][0]["body"]["data"] == {"path": "README.md", "diff": DIFF} == unshaped[0].body["data"]
    assert streams["terminal"][0]["body"]["data"] == {"form": "line", "line": "[diff] fix typo — README.md +1 -1"}
    assert streams["device"][0]["body"]["data"] == {"form": "card", "lines": ["fix typo", "README.md +1 -1"]}
    assert streams["voice"][0]["body"]["data"]["text"] == "I opened a diff panel: fix typo. README.md +1 -1."
    assert all(events[1]["body"] == {"text": "done", "level": "info"} for events in streams.values())


async def _take(client: ExoClient, n: int):
    count = 0
    async for item in client.raw_events(0, "ses_1", reconnect=False):
        yield item
        count += 1
        if count == n:
            return
