"""Issue 19, item 2 through the loop: a link swapped in after the gate judged a call cannot redirect the write.

The gate judges ``write_file d/f.txt`` inside the workspace (log, it runs);
a ``pre_tool_call`` hook (the seam plugins use; it runs after the gate and
before the tool) replaces ``d`` with a link to a folder outside. The loop
hands the tool the resolved path the gate judged, the tool sees the path now
leads elsewhere and refuses; the file outside is untouched.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from exo_core.agent.scripted import ScriptedModel
from exo_core.engine.core import Core, CoreOptions
from exo_core.hooks import HookRegistry
from exo_core.seams.home import ExoHome


async def test_a_link_swapped_in_after_the_gate_is_refused(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text("outside\n")
    hooks = HookRegistry()

    def swap(**fields: Any) -> None:
        if fields["tool_name"] == "write_file":
            (ws / "d").rmdir()
            (ws / "d").symlink_to(outside)

    hooks.register("pre_tool_call", swap, owner="test")
    model = ScriptedModel(
        [
            {
                "text": "",
                "tool_calls": [{"name": "write_file", "arguments": {"path": "d/f.txt", "content": "pwned\n"}}],
            },
            {"text": "done"},
        ]
    )
    core = Core.open(
        ExoHome(tmp_path / "home"),
        model=model,
        options=CoreOptions(workspace=ws, synchronous="NORMAL", hooks=hooks),
    )
    async with core:
        sub = core.hub.subscribe(0)
        created = await core.engine.handle_raw({"id": "1", "type": "session.create", "body": {}})
        session = created.to_wire()["result"]["session"]["id"]
        await core.engine.handle_raw({"id": "2", "type": "turn.send", "body": {"session": session, "text": "go"}})
        events: list[dict[str, Any]] = []

        async def until_done() -> None:
            while True:
                item = await sub.next(timeout=None)
                if item is None:
                    continue
                events.append(json.loads(item.data))
                if events[-1]["type"] == "turn.completed":
                    return

        await asyncio.wait_for(until_done(), 60)
        sub.close()
    completed = [e["body"] for e in events if e["type"] == "tool.completed"]
    assert len(completed) == 1 and not completed[0]["ok"], completed
    assert "changed since" in completed[0]["result"]
    assert (outside / "f.txt").read_text() == "outside\n"
