"""The real ``exo`` command and a fresh home, for the learning tests that drive a real exod.

Shared by ``test_chat_signals.py``, ``test_enforced_taste.py``, ``test_stated_facts.py``,
``test_taste_intent.py``, ``test_learn_cli.py`` and ``test_exod_reviewer.py`` (each had
its own copy). Every command runs this worktree's code (``PYTHONPATH``) and never the
caller's own home (``EXO_HOME`` is dropped).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from exo_testkit import ROOT

__all__ = ["ENV", "exo", "store_lint", "fresh_home", "events_head", "follow", "take_turn"]

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("EXO_HOME", None)


def exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``exo ARGS --home HOME``, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=ROOT,
    )


def store_lint(home: Path) -> subprocess.CompletedProcess[str]:
    """``exo store lint HOME/store`` (the command takes the store's path, not ``--home``)."""
    cmd = [sys.executable, "-m", "exo_core.cli", "store", "lint", str(home / "store")]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=ROOT)


def fresh_home(tmp_path: Path) -> tuple[Path, Path]:
    """A home made by ``exo init`` (asserted to succeed) and an empty workspace beside it."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    made = exo(home, "init")
    assert made.returncode == 0, made.stderr
    return home, ws


async def events_head(client: Any) -> int:
    """The seq of the last event now, to follow from (``events.subscribe`` with ``limit`` 1)."""
    reply = await client.request("events.subscribe", {"since": 0, "limit": 1})
    return int(reply["head"])


async def follow(
    client: Any,
    since: int,
    until: Callable[[Any, list[Any]], bool],
    *,
    seen: list[Any] | None = None,
    on_event: Callable[[Any], Awaitable[None]] | None = None,
    timeout: float = 30.0,
) -> list[Any]:
    """Follow the events after ``since`` until ``until(event, seen)``; returns them all (``seen``, when given).

    Each event is added to ``seen`` and passed to ``on_event`` before ``until`` is asked.
    """
    events: list[Any] = [] if seen is None else seen

    async def run() -> None:
        async for event in client.events(since=since):
            events.append(event)
            if on_event is not None:
                await on_event(event)
            if until(event, events):
                return

    await asyncio.wait_for(run(), timeout)
    return events


async def take_turn(
    client: Any,
    session: str,
    text: str,
    *,
    on_event: Callable[[Any], Awaitable[None]] | None = None,
    timeout: float = 30.0,
) -> None:
    """Send ``text`` as a turn of ``session`` and follow the events until a ``turn.completed``.

    Each event from the send on, that one included, goes to ``on_event`` first.
    """
    since = await events_head(client)
    await client.request("turn.send", {"session": session, "text": text})
    await follow(client, since, lambda event, _seen: event.type == "turn.completed", on_event=on_event, timeout=timeout)
