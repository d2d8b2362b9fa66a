"""Through a real exod: a model's tool call nested 900 levels deep and an 8 MB session title.

Each gets a typed error that names what was wrong; nothing of either is stored.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import write_script

from exo_core.client import ExoClient
from exo_core.errors import BadBodyError
from exo_core.protocol.safejson import MAX_VALUE_DEPTH, value_too_deep
from exo_core.sessions.session_store import MAX_TITLE_CHARS


def _nested(depth: int) -> Any:
    data: Any = "leaf"
    for _ in range(depth):
        data = {"a": data}
    return data


async def _turn(url: str, text: str) -> list[Any]:
    events = []
    async with ExoClient(url, client_name="bounded-test") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "bounded"}))["session"]["id"]
        await client.request("turn.send", {"session": session, "text": text})
        async for event in client.events(since=0, session=session):
            events.append(event)
            if event.type == "turn.completed":
                return events
    return events


def test_a_panel_nested_900_levels_ends_the_turn_with_a_typed_error(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    deep = {"kind": "table", "title": "deep", "data": _nested(900)}
    shallow = {"kind": "table", "title": "fine", "data": _nested(MAX_VALUE_DEPTH - 1)}
    script = write_script(tmp_path / "deep.json", [{"text": "", "tool_calls": [{"name": "ui", "arguments": deep}]}])
    exod = exod_factory(exo_home, script, workspace)
    events = asyncio.run(asyncio.wait_for(_turn(exod.url, "show it"), 60))
    done = events[-1].body
    assert done["stop_reason"] == "error" and done["error"].startswith("model_error: "), done
    assert f"nested deeper than {MAX_VALUE_DEPTH} levels" in done["error"] and "RecursionError" not in json.dumps(done)
    assert not [e for e in events if e.type in ("tool.started", "ui.panel")], "nothing of the call ran or was shown"
    assert "RecursionError" not in (exo_home / "exod-test.log").read_text()
    other_home = tmp_path / "home2"
    script = write_script(
        tmp_path / "shallow.json", [{"text": "", "tool_calls": [{"name": "ui", "arguments": shallow}]}, {"text": "ok"}]
    )
    events = asyncio.run(asyncio.wait_for(_turn(exod_factory(other_home, script, workspace).url, "show it"), 60))
    panels = [e.body for e in events if e.type == "ui.panel"]
    assert panels and panels[0]["title"] == "fine", "a panel within the depth still opens"


def test_an_8_mb_title_is_refused_and_nothing_is_stored(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    exod = exod_factory(exo_home, write_script(tmp_path / "s.json", [{"text": "ok"}]), workspace)
    title = "T" * (8 * 1024 * 1024 - 200)

    async def attempt() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with ExoClient(exod.url, client_name="title-test") as client:
            await client.hello()
            with pytest.raises(BadBodyError, match=f"at most {MAX_TITLE_CHARS} characters") as refused:
                await client.request("session.create", {"title": title})
            assert refused.value.field == "title"
            made = (await client.request("session.create", {"title": "x" * MAX_TITLE_CHARS}))["session"]
            with pytest.raises(BadBodyError, match="title"):
                await client.request("session.fork", {"session": made["id"], "title": title[:1000]})
            forked = (await client.request("session.fork", {"session": made["id"]}))["session"]
            listed = (await client.request("session.list", {}))["sessions"]
            return listed, forked

    listed, forked = asyncio.run(attempt())
    assert len(listed) == 2 and all(len(s["title"]) <= MAX_TITLE_CHARS for s in listed)
    assert forked["title"].endswith(" (fork)") and len(forked["title"]) == MAX_TITLE_CHARS
    exod.stop()
    with sqlite3.connect(exo_home / "sessions.sqlite") as db:
        longest = db.execute("SELECT max(length(title)) FROM sessions").fetchone()[0]
        biggest_event = db.execute("SELECT max(length(data)) FROM events").fetchone()[0]
    assert longest == MAX_TITLE_CHARS and biggest_event < 10_000


@pytest.mark.parametrize(
    ("value", "deep"),
    [
        ("x", False),
        (_nested(MAX_VALUE_DEPTH), False),
        (_nested(MAX_VALUE_DEPTH + 1), True),
        ([[[]]], False),
        ({"a": [1, {"b": [_nested(MAX_VALUE_DEPTH - 4)]}]}, False),
        ({"a": [1, {"b": [_nested(MAX_VALUE_DEPTH - 3)]}]}, True),
        (_nested(100_000), True),
    ],
)
def test_depth_is_measured_without_recursion(value: Any, deep: bool) -> None:
    assert value_too_deep(value) is deep
