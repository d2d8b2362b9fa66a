"""File changes through a real exod are reversible or asked (the todo.txt flow a person hit).

A scripted model (through the production model seam) does what the 0.5B did: asked to append a line,
it rewrites the whole file with ``write_file`` and drops a line. Through the real daemon:

* that rewrite is asked first, the card carrying the reason and a diff naming the line it would drop;
  denied, the file is as it was;
* the same request done with ``append_file`` runs without a question and keeps every line;
* a reply that says "I've added it" with no tool run is marked not done, on the stream and in the record;
* ``session.undo`` puts the file back byte for byte (mode too) and says what it restored; the copy it
  kept lives in the Exo home, 0700/0600.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

from exo_testkit import write_script

from exo_core.agent.claims import NOT_DONE
from exo_core.client import ExoClient

TODO = b"buy milk\nwalk the dog\n"


async def _turn(client: ExoClient, session: str, text: str, *, deny: bool = False) -> list[Any]:
    """Send a turn; every event of it, approvals answered (deny, else allow)."""
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]
    seen: list[Any] = []

    async def follow() -> None:
        async for event in client.events(session=session):
            seen.append(event)
            if event.type == "approval.requested":
                decision = "deny" if deny else "allow"
                await client.request("approval.respond", {"request_id": event.body["request_id"], "decision": decision})
            if event.type == "turn.completed" and event.body.get("turn_id") == turn:
                return

    await asyncio.wait_for(follow(), 60)
    return seen


async def _idle(client: ExoClient, session: str) -> None:
    """Wait until the session's turn has finished its last steps (turn.completed comes just before)."""
    for _ in range(200):
        if not (await client.request("session.get", {"session": session}))["running"]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the turn kept running")


async def test_a_rewrite_that_drops_a_line_is_asked_appends_keep_everything_and_undo_restores(
    tmp_path: Path, exod_factory: Any, exo_home: Path, workspace: Path
) -> None:
    todo = workspace / "todo.txt"
    todo.write_bytes(TODO)
    todo.chmod(0o640)
    script = write_script(
        tmp_path / "script.json",
        [
            {
                "text": "",
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "todo.txt", "content": "call the plumber\n"}}
                ],
            },
            {"text": "I could not change it."},
            {
                "text": "",
                "tool_calls": [
                    {"name": "append_file", "arguments": {"path": "todo.txt", "content": "call the plumber"}}
                ],
            },
            {"text": "Appended."},
            {"text": "I've added 'fix the tap' to your todo.txt."},
        ],
    )
    exod = exod_factory(exo_home, script, workspace)
    async with ExoClient(exod.url) as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "todo"}))["session"]["id"]

        asked_turn = await _turn(
            client, session, "Please append the line 'call the plumber' to the file todo.txt", deny=True
        )
        cards = [e.body for e in asked_turn if e.type == "approval.requested"]
        assert len(cards) == 1, "the rewrite dropping 'buy milk' is asked first"
        assert (
            "buy milk" in cards[0]["reason"]
            and "-buy milk" in cards[0]["diff"]
            and "+call the plumber" in cards[0]["diff"]
        )
        assert todo.read_bytes() == TODO, "denied: nothing lost"

        appended = await _turn(client, session, "Please append the line 'call the plumber' to the file todo.txt")
        assert not [e for e in appended if e.type == "approval.requested"], "an append removes nothing: not asked"
        assert todo.read_bytes() == TODO + b"call the plumber\n"

        claimed = await _turn(client, session, "Add 'fix the tap' to my todo.txt")
        streamed = "".join(e.body.get("text", "") for e in claimed if e.type == "message.delta")
        stored = [e.body["content"] for e in claimed if e.type == "message.completed" and e.body["role"] == "assistant"]
        assert NOT_DONE in streamed and NOT_DONE in stored[-1]
        assert any(e.type == "notice" and "no tool ran" in e.body["text"] for e in claimed)
        assert b"fix the tap" not in todo.read_bytes()

        kept = exo_home / "snapshots"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o700
        for path in kept.rglob("*"):
            assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path

        await _idle(client, session)
        undone = await client.request("session.undo", {"session": session, "turns": 2})
        assert len(undone["undone_turns"]) == 2
        assert undone["restored_files"] == [str(todo.resolve())]
        assert "restored" in undone["said"] and "todo.txt" in undone["said"]
        assert todo.read_bytes() == TODO and stat.S_IMODE(todo.stat().st_mode) == 0o640, "byte for byte, mode too"

        again = await client.request("session.undo", {"session": session, "turns": 1})
        assert again["restored_files"] == [] and todo.read_bytes() == TODO, "the denied rewrite changed nothing"
