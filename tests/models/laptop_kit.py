"""What the laptop-engine tests share: a home whose ``main`` role is a server, a turn followed to its end,
and the rows a turn left in ``sessions.sqlite``."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["write_home_config", "run_turn", "turn_rows"]


def write_home_config(
    home: Path, base_url: str, routes: list[str], *, first_byte: float = 30.0, idle: float = 60.0, extra: str = ""
) -> None:
    """A config.toml with provider ``laptop`` at ``base_url`` and ``main`` = ``routes``."""
    home.mkdir(parents=True, exist_ok=True)
    quoted = ", ".join(f'"{r}"' for r in routes)
    (home / "config.toml").write_text(
        "[models.providers.laptop]\n"
        'kind = "openai"\n'
        f'base_url = "{base_url}"\n'
        "key_env = []\n\n"
        "[models.providers.scripted]\n"
        'kind = "scripted"\n\n'
        "[models.roles]\n"
        f"main = [{quoted}]\n\n"
        "[models.timeouts]\n"
        f"connect = 2.0\nfirst_byte = {first_byte}\nidle = {idle}\n" + extra,
        encoding="utf-8",
    )


async def run_turn(
    client: Any, session: str, text: str, *, on_delta: Any = None, timeout: float = 600.0
) -> tuple[list[str], dict[str, Any], str]:
    """Send ``text``; the streamed deltas, the ``turn.completed`` body and the turn id.

    ``on_delta(n)`` is awaited after the n-th delta (to kill a server mid-answer).
    """
    deltas: list[str] = []
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]

    async def follow() -> dict[str, Any]:
        async for event in client.events(session=session):
            if event.type == "message.delta" and event.body.get("turn_id", turn) == turn:
                deltas.append(event.body.get("text", ""))
                if on_delta is not None:
                    await on_delta(len(deltas))
            if event.type == "turn.completed" and event.body.get("turn_id", turn) == turn:
                return dict(event.body)
        raise AssertionError("event stream ended before turn.completed")

    done = await asyncio.wait_for(follow(), timeout)
    return deltas, done, turn


def turn_rows(home: Path, turn: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The turn's status and its messages as ``(role, content, status)``, read from the file itself."""
    db = sqlite3.connect(f"file:{home / 'sessions.sqlite'}?mode=ro", uri=True)
    try:
        status = db.execute("SELECT status FROM turns WHERE id=?", (turn,)).fetchone()[0]
        rows = db.execute("SELECT role, content, status FROM messages WHERE turn_id=? ORDER BY id", (turn,)).fetchall()
    finally:
        db.close()
    return str(status), [(str(r[0]), str(r[1]), str(r[2])) for r in rows]
