"""The learning question through a real exod: asked rarely, short and quiet, closed on every screen.

A board with no decision model (``rules-only``): a message the rules cannot place is asked about
("Should I learn from ...?"), but only when it may teach. Through the real daemon:

* a plain request after a draft ("Add 'call the plumber' to my todo.txt", which the rules leave open)
  is not asked about;
* a message that may correct the draft is asked about, with a short wording for small screens and
  ``quiet`` (a voice client does not read it aloud);
* when the question expires, ``question.closed`` reaches every client, and an answer sent after it is a
  typed ``conflict`` saying the question has closed.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from exo_testkit import ROOT, write_script

from exo_core.client import ExoClient
from exo_core.errors import ConflictError


async def _turn(client: ExoClient, session: str, text: str) -> None:
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]

    async def follow() -> None:
        async for event in client.events(session=session):
            if event.type == "turn.completed" and event.body.get("turn_id") == turn:
                return

    await asyncio.wait_for(follow(), 60)


async def test_plain_requests_are_not_asked_about_and_an_expired_question_closes_everywhere(
    tmp_path: Path, exod_factory: Any, workspace: Path
) -> None:
    home = tmp_path / "exohome"
    made = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "init", "--home", str(home)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "EXO_HOME"} | {"PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    (home / "config.toml").write_text(
        f'store = "{home / "store"}"\n\n[decisions]\nproviders = ["rules-only"]\nask_timeout = 3\n', encoding="utf-8"
    )
    script = write_script(
        tmp_path / "script.json",
        [
            {"text": "Team: the review moves to Friday at ten. Bring the slides."},
            {"text": "Sure, which list do you mean?"},
            {"text": "Team: the review is on Friday at ten. Please bring your slides."},
        ],
    )
    exod = exod_factory(home, script, workspace)
    async with ExoClient(exod.url) as client, ExoClient(exod.url) as other:
        await client.hello()
        await other.hello()
        session = (await client.request("session.create", {"title": "signal"}))["session"]["id"]
        await _turn(client, session, "Write a two-line note to the team about the review.")
        await _turn(client, session, "Add 'call the plumber' to my todo.txt")
        await _turn(client, session, "Hmm, the second line reads oddly.")

        async def closed_on(watcher: ExoClient) -> tuple[dict[str, Any], dict[str, Any]]:
            asked: dict[str, Any] = {}
            async for event in watcher.events(since=0, session=session):
                if event.type == "question.asked":
                    asked = dict(event.body)
                if event.type == "question.closed" and event.body["question_id"] == asked.get("question_id"):
                    return asked, dict(event.body)
            raise AssertionError("the event stream ended")

        (asked, closed), (seen_asked, seen_closed) = await asyncio.wait_for(
            asyncio.gather(closed_on(client), closed_on(other)), 60
        )
        assert asked["text"].startswith('Should I learn from "Hmm, the second line')
        assert asked["short"] and len(asked["short"]) < 30 and asked["quiet"] is True
        assert closed["reason"] == "expired" and seen_closed == closed and seen_asked == asked

        with pytest.raises(ConflictError, match="that question has closed"):
            await other.request("question.answer", {"question_id": asked["question_id"], "option": 1})

        page = await client.request("events.subscribe", {"since": 0, "session": session, "limit": 500})
        questions = [e["body"]["text"] for e in page["events"] if e["type"] == "question.asked"]
        assert questions == [asked["text"]], "the plain request was not asked about"
