"""Text or a tool call with the real 0.5B on llama-cpp-python's server, through a real exod.

The engine is a real ``llama_cpp.server`` process on a loopback port (``exo models serve``, 1 thread) and
the device is a real exod whose ``main`` role is that engine alone, with exod's own tools offered.
"What is the capital of France?" ends as text with no tool run (the core's judge turns down a call the
model proposes, and the engine is asked again without tools: docs/models.md, "Text or a tool call"); a
request that names a file still gets its read call. The engine's access log counts its requests.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from .laptop_kit import EngineProcess, free_port, need_engine, turn_rows, write_home_config

ALIAS = "qwen2.5-coder-0.5b-instruct"


def _requests(log: Path) -> int:
    """How many chat completions the engine has been asked for (uvicorn's access log lines)."""
    return log.read_text(encoding="utf-8", errors="replace").count("POST /v1/chat/completions")


async def _ask(
    client: Any, session: str, text: str, *, on_event: Any = None, timeout: float = 600.0
) -> tuple[str, list[Any], dict[str, Any]]:
    """Send one turn; the answer text, every event of the turn, and turn.completed's body.

    ``on_event(event)`` is awaited after each event (to end the turn early).
    """
    events: list[Any] = []
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]

    async def follow() -> dict[str, Any]:
        async for event in client.events(session=session):
            events.append(event)
            if on_event is not None:
                await on_event(event)
            if event.type == "turn.completed" and event.body.get("turn_id", turn) == turn:
                return dict(event.body)
        raise AssertionError("event stream ended before turn.completed")

    done = await asyncio.wait_for(follow(), timeout)
    said = "".join(e.body.get("text", "") for e in events if e.type == "message.delta")
    return said, events, {**done, "turn_id": turn}


@pytest.mark.model
@pytest.mark.slow
async def test_the_engine_answers_a_question_in_words_and_still_reads_a_named_file(tmp_path: Path) -> None:
    model = need_engine()
    for module in ("exo_core.daemon", "exo_core.client.client"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed in this tree")
    from exo_testkit import Exod, write_script

    from exo_core.client.client import ExoClient

    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    log = tmp_path / "engine.log"
    engine = EngineProcess(model, free_port(), log).start()
    # the engine's requests are the turns' own: no larger-model decisions go to it (docs/decisions.md §7a)
    write_home_config(
        home, engine.base_url, [f"laptop:{ALIAS}"], extra='\n[decisions]\nlarger = "none"\n', api_key=engine.key
    )
    unused = write_script(tmp_path / "unused.json", [])
    exod = Exod(home, unused, ws, extra=["--model", "local"]).start(timeout=60)
    try:
        async with ExoClient(exod.url) as client:
            await client.hello()

            async def fresh() -> str:
                return str((await client.request("session.create", {"title": "judge"}))["session"]["id"])

            before = _requests(log)
            said, events, done = await _ask(client, await fresh(), "What is the capital of France?")
            asked = _requests(log) - before
            print(f"France: {asked} engine request(s); answer {said!r}")
            assert done["stop_reason"] == "end", done
            assert not [e for e in events if e.type in ("tool.started", "approval.requested")], said
            assert "paris" in said.lower(), said
            status, rows = turn_rows(home, done["turn_id"])
            assert status == "completed" and [r[0] for r in rows if r[0] != "user"] == ["assistant"], rows
            assert 1 <= asked <= 2  # the answer, and the answer in words when a proposed call was turned down

            # The call is what is tested: once it has started, the turn is interrupted (what the model makes of
            # the file is test_laptop_engine.py's; the 0.5B may name the file by an absolute path, which the
            # gate puts to the person, and that wait is not this test's).
            session = await fresh()

            async def interrupt_once_called(event: Any) -> None:
                if event.type == "tool.started":
                    await client.request("turn.interrupt", {"session": session})

            said, events, done = await _ask(client, session, "Read the file notes.txt", on_event=interrupt_once_called)
            started = [e.body for e in events if e.type == "tool.started"]
            print(f"notes.txt: {_requests(log) - before - asked} engine request(s); calls {started}")
            assert started and started[0].get("name") == "read_file", [(e.type, e.body) for e in events]
            assert str(started[0].get("arguments", {}).get("path", "")).endswith("notes.txt"), started[0]
    finally:
        exod.stop()
        engine.stop()
