"""SIGKILL of the real exod while summaries are pending: after a restart they finish (§16.3).

A session of 60 stored messages gets one turn through exod whose summarizer
never answers (settling is set to 0.3 s, so the turn proceeds verbatim). exod
is killed with SIGKILL, restarted with a working summarizer, the session
resumed; every job finishes and the view tiles the whole conversation.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

from ctxutil import assert_tiles, text_of

from exo_core.client import ExoClient
from exo_core.context.config import ContextConfig
from exo_core.context.tree import SummaryNode, plan_view
from exo_core.sessions import SessionStore, open_writer


def node_rows(db: Path, session: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT session_id, level, idx, first_message, last_message, text, status, lane, attempts"
            " FROM summary_nodes WHERE session_id = ? ORDER BY level, idx",
            (session,),
        ).fetchall()
    finally:
        conn.close()


async def turn(url: str, session: str, text: str) -> None:
    async with ExoClient(url) as client:
        turn_id = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]
        async for event in client.events(since=0, session=session):
            if event.type == "turn.completed" and event.body["turn_id"] == turn_id:
                return


async def test_pending_summaries_finish_after_sigkill(
    exod_factory, exo_home: Path, workspace: Path, tmp_path: Path
) -> None:
    (exo_home / "config.toml").write_text("[context]\nsettle_seconds = 0.3\n")
    conn = open_writer(exo_home / "sessions.sqlite", synchronous="NORMAL")
    store = SessionStore(conn)
    session = store.create_session(title="long").id
    with store.transaction():
        for n in range(60):
            store.add_message(session, "user" if n % 2 == 0 else "assistant", text_of(n))
    conn.close()
    script = tmp_path / "model.json"
    script.write_text(json.dumps({"replies": [{"text": "noted"}] * 40}))

    first = exod_factory(exo_home, script, workspace, extra=["--summarizer", "scripted-summary:hang=1"])
    await turn(first.url, session, "and one more thing")
    rows = node_rows(exo_home / "sessions.sqlite", session)
    assert len(rows) == 6 and {r[6] for r in rows} == {"pending"}
    first.kill()

    second = exod_factory(exo_home, script, workspace, extra=["--summarizer", "scripted-summary"])
    async with ExoClient(second.url) as client:
        await client.request("session.resume", {"session": session})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = node_rows(exo_home / "sessions.sqlite", session)
        if rows and all(r[6] == "done" for r in rows):
            break
        await asyncio.sleep(0.1)
    assert rows and all(r[6] == "done" for r in rows), rows
    await turn(second.url, session, "what did we cover?")

    reader = sqlite3.connect(f"file:{exo_home / 'sessions.sqlite'}?mode=ro", uri=True)
    reader.row_factory = sqlite3.Row
    messages = SessionStore(reader).messages(session)
    reader.close()
    nodes = {(r[1], r[2]): SummaryNode(*r) for r in node_rows(exo_home / "sessions.sqlite", session)}
    plan = plan_view(nodes, messages, ContextConfig())
    assert_tiles(plan, len(messages))
    assert all(e.kind != "verbatim" or e.first >= plan.full_leaves * 8 for e in plan.elements)
    assert [e.kind for e in plan.elements][-1] == "tail"
