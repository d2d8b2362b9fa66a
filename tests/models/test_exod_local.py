"""Through exod with the real local model: a streamed answer, an interrupt, a tool call.

Needs the daemon (``exo_core.daemon``), the test kit (``exo_testkit``), the edge
runtime and the fetched model; skips with the reason otherwise. The agent loop
offers its own tools (read_file, ...) with ``tool_choice="auto"``; the local
model decides, and its call's arguments are generated under a grammar.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from exo_edge.manifest import find_manifest
from exo_edge.paths import locate_model_file


def _need_everything() -> None:
    for module, why in (
        ("exo_core.daemon", "exod is not in this tree yet"),
        ("exo_core.client.client", "the protocol client is not in this tree yet"),
        ("exo_testkit", "tests/exo_testkit.py is not in this tree yet"),
        ("llama_cpp", "llama-cpp-python is not installed (scripts/install_edge.sh)"),
    ):
        if importlib.util.find_spec(module) is None:
            pytest.skip(why)
    if locate_model_file(find_manifest("gemma-3-270m").primary_file.name) is None:
        pytest.skip("the local model is not fetched on this machine (run `exo models fetch`)")


async def _run_turn(
    client: Any,
    session: str,
    text: str,
    *,
    interrupt_after: int | None = None,
    timeout: float = 600.0,
    seen: list[Any] | None = None,
) -> tuple[list[str], dict[str, Any]]:
    deltas: list[str] = []
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]

    async def follow() -> dict[str, Any]:
        async for event in client.events(session=session):
            if seen is not None:
                seen.append(event)
            if event.type == "message.delta":
                deltas.append(event.body.get("text", ""))
                if interrupt_after is not None and len(deltas) == interrupt_after:
                    await client.request("turn.interrupt", {"session": session})
            if event.type == "turn.completed" and event.body.get("turn_id", turn) == turn:
                return dict(event.body)
        raise AssertionError("event stream ended before turn.completed")

    done = await asyncio.wait_for(follow(), timeout)
    return deltas, done


@pytest.mark.model
@pytest.mark.slow
async def test_local_model_streams_and_stops_through_exod(tmp_path: Path) -> None:
    _need_everything()
    from exo_core.client.client import ExoClient
    from exo_testkit import Exod, write_script

    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("buy milk\n")
    home.mkdir()
    # The 270M base model, as the assertions below are written for it (the catalog's default
    # main is now the standard profile's Qwen2.5-Coder 0.5B).
    (home / "config.toml").write_text('[models.roles]\nmain = ["local:gemma-3-270m"]\n\n[models.local]\nn_ctx = 2048\n')
    unused = write_script(tmp_path / "unused.json", [])
    exod = Exod(home, unused, ws, extra=["--model", "local"]).start(timeout=60)
    try:
        async with ExoClient(exod.url) as client:
            await client.hello()
            session = (await client.request("session.create", {"title": "local"}))["session"]["id"]
            deltas, done = await _run_turn(client, session, "What is the capital of France?")
            assert "".join(deltas).strip(), done
            assert done.get("stop_reason") in ("end", "length"), done
            # a long answer, interrupted after a few deltas, ends as interrupted
            _, stopped = await _run_turn(client, session, "Tell me a very long story about the sea.", interrupt_after=3)
            assert stopped.get("stop_reason") in ("interrupted", "interrupt"), stopped
            # a tool call the loop runs (read_file on the workspace file), in a fresh
            # session: with a 270M base model, earlier prose answers in the history
            # (here the interrupted story) often win over the worked tool examples
            fresh = (await client.request("session.create", {"title": "tool"}))["session"]["id"]
            events: list[Any] = []
            _, done = await _run_turn(client, fresh, "Read the file notes.txt.", seen=events)
            started = [e for e in events if e.type == "tool.started"]
            said = "".join(e.body.get("text", "") for e in events if e.type == "message.delta")
            assert started and started[0].body.get("name") == "read_file", said
            completed = [e for e in events if e.type == "tool.completed"]
            assert completed, [e.type for e in events]
    finally:
        exod.stop()
