"""The same protocol over SSE (Last-Event-ID, keep-alive), stdio JSON lines, and engine failures."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from exo_testkit import ROOT, write_script
from unixhttp import UnixHTTPConnection

from exo_core.agent.scripted import ScriptedModel
from exo_core.client import ExoClient
from exo_core.engine.core import Core, CoreOptions
from exo_core.seams.home import ExoHome


def sse_lines(socket_path: Path, path: str, headers: dict[str, str], want_events: int) -> list[str]:
    conn = UnixHTTPConnection(str(socket_path), timeout=10)
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    lines: list[str] = []
    while sum(1 for line in lines if line.startswith("data:")) < want_events or not any(
        line.startswith(": keep-alive") for line in lines
    ):
        lines.append(resp.fp.readline().decode().rstrip("\n"))
    conn.close()
    return lines


async def test_sse_honours_last_event_id_and_sends_keepalives(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    d = exod_factory(exo_home, write_script(tmp_path / "s.json", [{"text": "one two three"}]), workspace)
    async with ExoClient(d.url) as client:
        s = (await client.request("session.create", {}))["session"]["id"]
        await client.request("turn.send", {"session": s, "text": "hi"})
        async for event in client.events(since=0, session=s):
            if event.type == "session.updated" and "turn" in event.body.get("reason", ""):
                break
        head = (await client.health())["last_seq"]
    lines = await asyncio.to_thread(sse_lines, d.socket, "/events?since=0", {"Last-Event-ID": "3"}, head - 3)
    ids = [int(line[4:]) for line in lines if line.startswith("id: ")]
    assert ids == list(range(4, head + 1))
    assert any(line == ": keep-alive" for line in lines)


def test_stdio_json_lines(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "over stdio"}])
    home = tmp_path / "home"
    lines = [
        '{"id":"1","type":"hello","body":{"protocol":1}}',
        "this is not json",
        '{"id":"2","type":"session.create","body":{"title":"pipe"}}',
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exo_core.cli",
            "serve",
            "--stdio",
            "--no-unix",
            "--home",
            str(home),
            "--model",
            f"scripted:{script}",
            "--workspace",
            str(workspace),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin and proc.stdout
    for line in lines:
        proc.stdin.write(line.encode() + b"\n")
    proc.stdin.flush()
    out = [json.loads(proc.stdout.readline()) for _ in range(3)]
    assert out[0]["ok"] and out[0]["result"]["protocol"] == 1
    assert out[1]["ok"] is False and out[1]["error"]["code"] == "malformed"
    session = out[2]["result"]["session"]["id"]
    proc.stdin.write(json.dumps({"id": "3", "type": "events.subscribe", "body": {"since": 0}}).encode() + b"\n")
    proc.stdin.write(
        json.dumps({"id": "4", "type": "turn.send", "body": {"session": session, "text": "hi"}}).encode() + b"\n"
    )
    proc.stdin.flush()
    seen_types = []
    while "turn.completed" not in seen_types:
        msg = json.loads(proc.stdout.readline())
        if "seq" in msg:
            seen_types.append(msg["type"])
    assert "message.delta" in seen_types
    proc.stdin.close()
    assert proc.wait(20) == 0


async def test_an_engine_bug_is_internal_and_the_connection_stays_up(tmp_path: Path) -> None:
    core = Core.open(ExoHome(tmp_path / "home"), model=ScriptedModel([]), options=CoreOptions(synchronous="NORMAL"))
    async with core:

        async def broken(body: object) -> dict:
            raise ZeroDivisionError("boom")

        core.engine.add_handler("config.get", broken)
        response = await core.engine.handle_raw({"id": "x", "type": "config.get", "body": {}})
        assert response.ok is False and response.error is not None
        assert response.error.code == "internal" and "boom" not in response.error.message
        again = await core.engine.handle_raw({"id": "y", "type": "hello", "body": {"protocol": 1}})
        assert again.ok
        unsupported = await core.engine.handle_raw({"id": "z", "type": "taste.list", "body": {}})
        assert unsupported.error is not None and unsupported.error.code == "unsupported"
