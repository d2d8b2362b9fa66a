"""The acceptance test of §11.3: a three-turn session survives a SIGKILL of exod.

Through the real exod (a subprocess on a temporary Unix socket) and the real
protocol client, with the scripted model: read a file, edit it, run a shell
command. exod is killed with SIGKILL in the middle of the second turn (while
its shell command runs), restarted, the session resumed and finished. Then:
seq is dense across the restart and never reused, two clients replaying from 0
receive byte-identical events, the database rows match what the clients saw,
and the interrupted tool call has a result.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from exo_testkit import write_script

from exo_core.client import ExoClient
from exo_core.protocol import Event

REPLIES = [
    {"text": "Reading it.", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
    {"text": "The file says hello world."},
    {
        "text": "Editing.",
        "tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.txt", "old": "hello", "new": "goodbye"}}],
    },
    {
        "text": "Checking.",
        "tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 60; echo finished"}}],
    },
    {"text": "The check was cut off, but the edit is in place."},
    {"text": "Running it.", "tool_calls": [{"name": "bash", "arguments": {"command": "cat notes.txt"}}]},
    {"text": "It now says goodbye world."},
]


class Follower:
    """A client following one session's events, allowing approvals, across restarts."""

    def __init__(self, client: ExoClient, session: str) -> None:
        self.client = client
        self.session = session
        self.seen: list[tuple[str, Event]] = []
        self.changed = asyncio.Condition()

    async def run(self) -> None:
        async for data, event in self.client.raw_events(since=0, session=self.session):
            self.seen.append((data, event))
            if event.type == "approval.requested":
                await self.client.request(
                    "approval.respond", {"request_id": event.body["request_id"], "decision": "allow"}
                )
            async with self.changed:
                self.changed.notify_all()

    async def wait_for(self, predicate, timeout: float = 120.0) -> Event:
        async def waiter() -> Event:
            async with self.changed:
                while True:
                    for _, event in self.seen:
                        if predicate(event):
                            return event
                    await self.changed.wait()

        return await asyncio.wait_for(waiter(), timeout)


def completed(turn_id: str):
    return lambda e: e.type == "turn.completed" and e.body.get("turn_id") == turn_id


async def replay_all(url: str, head: int) -> list[str]:
    out: list[str] = []
    async with ExoClient(url) as client:
        async for data, event in client.raw_events(since=0):
            out.append(data)
            if event.seq >= head:
                break
    return out


async def test_three_turns_survive_sigkill(exod_factory, exo_home: Path, workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text("hello world\n")
    script = write_script(tmp_path / "script.json", REPLIES)
    exod = exod_factory(exo_home, script, workspace)

    async with ExoClient(exod.url, reconnect_delay=0.05, max_reconnect_delay=0.2) as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "acceptance"}))["session"]["id"]
        follower = Follower(client, session)
        follow_task = asyncio.create_task(follower.run())

        # Turn 1: read the file.
        t1 = (await client.request("turn.send", {"session": session, "text": "What is in notes.txt?"}))["turn_id"]
        await follower.wait_for(completed(t1))

        # Turn 2: edit it, then a shell command that is running when exod is killed.
        t2 = (await client.request("turn.send", {"session": session, "text": "Change hello to goodbye, then check."}))[
            "turn_id"
        ]
        await follower.wait_for(lambda e: e.type == "tool.output" and "started" in e.body.get("text", ""))
        seen_before_kill = [d for d, _ in follower.seen]
        exod.kill()
        assert (workspace / "notes.txt").read_text() == "goodbye world\n"

        # Restart on the same home; the follower reconnects by itself from its last seq.
        exod.start()
        resumed = await client.request("session.resume", {"session": session})
        assert resumed["repaired"] == 1
        assert resumed["resumed_turn"] == t2
        await follower.wait_for(completed(t2))

        # Turn 3: a shell command, approved by the follower.
        t3 = (await client.request("turn.send", {"session": session, "text": "Show me the file with the shell."}))[
            "turn_id"
        ]
        done3 = await follower.wait_for(completed(t3))
        assert done3.body["stop_reason"] == "end"
        head = (await client.health())["last_seq"]
        # session.updated follows turn.completed; wait until the follower has everything of its session.
        await asyncio.sleep(0.2)
        follow_task.cancel()
        await asyncio.gather(follow_task, return_exceptions=True)

    # Seq is dense across the restart, starting at 1, never reused.
    conn = sqlite3.connect(exo_home / "sessions.sqlite")
    rows = conn.execute("SELECT seq, session, data FROM events ORDER BY seq").fetchall()
    seqs = [r[0] for r in rows]
    assert seqs == list(range(1, len(seqs) + 1))
    assert seqs[-1] >= head
    # What the follower saw before the kill is exactly what the database kept: nothing was shown unsaved.
    session_rows = [r[2] for r in rows if r[1] == session]
    assert session_rows[: len(seen_before_kill)] == seen_before_kill
    # Everything the follower saw, across the restart, matches the rows: no gap, no duplicate.
    assert [d for d, _ in follower.seen] == session_rows[: len(follower.seen)]
    assert len(follower.seen) >= len(session_rows) - 1  # at most the trailing session.updated still in flight

    # Two fresh clients replaying from 0 receive byte-identical events, equal to the rows.
    exod_url = exod.url
    a, b = await asyncio.gather(replay_all(exod_url, seqs[-1]), replay_all(exod_url, seqs[-1]))
    assert a == b == [r[2] for r in rows]

    # The interrupted tool call has a result, and the transcript is well formed.
    messages = conn.execute(
        "SELECT role, content, tool_calls, tool_call_id FROM messages WHERE session_id = ? ORDER BY id", (session,)
    ).fetchall()
    import json

    calls = {c["id"]: c for m in messages if m[0] == "assistant" for c in json.loads(m[2])}
    results = {m[3]: m[1] for m in messages if m[0] == "tool"}
    assert set(calls) == set(results), "every tool call has exactly one result"
    bash_calls = [cid for cid, c in calls.items() if c["name"] == "bash"]
    assert "interrupted before completion" in results[bash_calls[0]]
    assert "goodbye world" in results[bash_calls[1]]
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
