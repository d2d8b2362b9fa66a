"""A core opened in the test's own event loop, driven through its engine and watched through its hub.

One harness for the tests that run the real engine, hub and sessions database in-process
(tests/agent, tests/device, tests/context); exod as a subprocess is ``exo_testkit.Exod``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from exo_core.engine.core import Core

__all__ = ["CoreHarness"]

Event = dict[str, Any]


class CoreHarness:
    """Commands into ``core.engine``; every event of ``core.hub`` from seq 0 collected in ``events``."""

    def __init__(self, core: Core, *, timeout: float = 90.0) -> None:
        self.core = core
        self.timeout = timeout
        self.events: list[Event] = []
        self._sub = core.hub.subscribe(0)
        self._task = asyncio.create_task(self._collect())

    async def _collect(self) -> None:
        while True:
            item = await self._sub.next(timeout=None)
            if item is not None:
                self.events.append(json.loads(item.data))

    async def cmd(self, type_: str, **body: Any) -> dict[str, Any]:
        """The wire form of the engine's response to one command."""
        response = await self.core.engine.handle_raw({"id": "t", "type": type_, "body": body})
        return response.to_wire()

    async def ok(self, type_: str, **body: Any) -> dict[str, Any]:
        """The result of a command that must succeed."""
        wire = await self.cmd(type_, **body)
        assert wire["ok"], wire
        return wire["result"]

    async def wait(self, predicate: Callable[[Event], bool], timeout: float | None = None) -> Event:
        """The first collected event ``predicate`` accepts (waiting up to ``timeout`` seconds)."""

        async def poll() -> Event:
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                await asyncio.sleep(0.01)

        return await asyncio.wait_for(poll(), timeout or self.timeout)

    async def turn_done(self, turn_id: str) -> Event:
        """The ``turn.completed`` event of ``turn_id``."""
        return await self.wait(lambda e: e["type"] == "turn.completed" and e["body"]["turn_id"] == turn_id)

    def of(self, type_: str) -> list[Event]:
        """Every collected event of one type, in order."""
        return [e for e in self.events if e["type"] == type_]

    async def close(self) -> None:
        """Stop collecting."""
        self._task.cancel()
        self._sub.close()
