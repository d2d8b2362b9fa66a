"""The engine inside the core: the loop sends a fresh, bounded input each call; events report compaction."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from exo_core.agent.scripted import ScriptedModel
from exo_core.context.config import ContextConfig
from exo_core.context.engine import SummaryTreeContext
from exo_core.context.scripted import ScriptedSummarizer
from exo_core.engine.core import Core, CoreOptions
from exo_core.seams.home import ExoHome


async def wait_for(events: list[dict[str, Any]], predicate, timeout: float = 90.0) -> dict[str, Any]:
    async def poll() -> dict[str, Any]:
        while True:
            for e in events:
                if predicate(e):
                    return e
            await asyncio.sleep(0.01)

    return await asyncio.wait_for(poll(), timeout)


async def test_the_loop_sends_system_history_and_tail_and_reports_compaction(tmp_path: Path) -> None:
    model = ScriptedModel([{"text": "noted, carrying on"}] * 8)
    summarizer = ScriptedSummarizer()
    home = ExoHome(tmp_path / "home")
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Core.open(
        home, model=model, options=CoreOptions(workspace=ws, synchronous="NORMAL", summarizer=summarizer)
    ) as core:
        assert isinstance(core.context, SummaryTreeContext)
        events: list[dict[str, Any]] = []
        sub = core.hub.subscribe(0)

        async def collect() -> None:
            while True:
                item = await sub.next(timeout=None)
                if item is not None:
                    events.append(json.loads(item.data))

        collector = asyncio.create_task(collect())

        async def ok(type_: str, **body: Any) -> dict[str, Any]:
            wire = (await core.engine.handle_raw({"id": "t", "type": type_, "body": body})).to_wire()
            assert wire["ok"], wire
            return wire["result"]

        session = (await ok("session.create", title="long"))["session"]["id"]
        for n in range(20):
            turn = (await ok("turn.send", session=session, text=f"point {n}: remember code {n * 7}"))["turn_id"]
            await wait_for(events, lambda e, t=turn: e["type"] == "turn.completed" and e["body"]["turn_id"] == t)
        last = model.requests[-1]
        system = last.messages[0]
        assert system.role == "system" and system.content.startswith(core.deps.settings.base_prompt)
        assert "<history>" in system.content and "[summary of messages 1\u20138]" in system.content
        assert [m.role for m in last.messages[1:]] == ["user", "assistant"] * 6 + ["user"]
        assert last.messages[-1].content == "point 19: remember code 133"
        assert summarizer.calls >= 3 and all(r.role == "aux" for r in summarizer.requests)
        compacted = [e["body"] for e in events if e["type"] == "context.compacted"]
        assert compacted and all(c["tokens_after"] < c["tokens_before"] for c in compacted)
        resumed = await ok("session.resume", session=session)
        assert resumed["resumed_turn"] is None
        collector.cancel()
        sub.close()


async def test_a_plugin_engine_takes_the_slot(tmp_path: Path) -> None:
    class Fixed:
        async def build(self, session_id: str, system_prompt: str, messages: Any) -> list[Any]:
            from exo_core.seams.model import ChatMessage

            return [ChatMessage(role="user", content="fixed")]

    model = ScriptedModel([{"text": "ok"}])
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Core.open(
        ExoHome(tmp_path / "home"),
        model=model,
        options=CoreOptions(workspace=ws, synchronous="NORMAL", context=Fixed()),
    ) as core:
        session = (await core.engine.handle_raw({"id": "1", "type": "session.create", "body": {}})).result["session"][
            "id"
        ]
        await core.engine.handle_raw({"id": "2", "type": "turn.send", "body": {"session": session, "text": "hi"}})
        for _ in range(200):
            if model.requests:
                break
            await asyncio.sleep(0.01)
        assert [m.content for m in model.requests[0].messages] == ["fixed"]


def test_config_comes_from_the_context_table(tmp_path: Path) -> None:
    home = ExoHome(tmp_path / "home")
    home.root.mkdir()
    home.config_path.write_text('[context]\ntail = 6\nsettle_seconds = 5\nsummarizer = "scripted-summary"\n')
    cfg = ContextConfig.from_config(home.config())
    assert (cfg.tail, cfg.settle_seconds, cfg.leaf_size, cfg.summarizer) == (6, 5, 8, "scripted-summary")
    import pytest

    from exo_core.errors import ConfigError

    for bad in ({"tail": 0}, {"tial": 3}, {"settle_seconds": "soon"}):
        with pytest.raises(ConfigError):
            ContextConfig.from_mapping(bad)
