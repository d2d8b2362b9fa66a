"""The device's link to exod: handshake, event stream, reconnects and the outbox.

:class:`Link` keeps one :class:`~exo_core.client.ExoClient` and runs a loop:
connect (``hello`` with the device's capabilities), repair its own session
after a possible core restart (``session.resume``), send what waited in the
outbox, then follow the event stream from the last seq seen. When the stream
breaks (the core was killed, the network dropped) the link reports
``offline``, retries with backoff and, once back, resumes from that seq: no
event is missed or repeated.

Everything the person does becomes an *action* (an async function of the
client) submitted with :meth:`Link.submit`. Online, it runs at once; while the
core is away it waits in a bounded outbox and runs when the core is back. An
action the core then refuses (an approval that expired when the core
restarted), one older than ``max_age``, or one that does not fit in the
outbox is reported through ``on_refused`` so the screen can say so: nothing
pressed or said is silently lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from exo_core.client import ExoClient
from exo_core.errors import BrokenResourceError, ExoError, UnsupportedError
from exo_core.protocol import Event

__all__ = ["Action", "Pending", "Link"]

log = logging.getLogger(__name__)

Action = Callable[[ExoClient], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Pending:
    """An action waiting for the core: what it is (for the screen) and when it was made."""

    label: str
    action: Action = field(repr=False)
    created: float = 0.0


class Link:
    """Connection state, event stream and outbox of one device."""

    def __init__(
        self,
        client: ExoClient,
        *,
        on_event: Callable[[Event], Awaitable[None]],
        on_state: Callable[[str], None],
        on_refused: Callable[[Pending, str], None],
        on_delivered: Callable[[Pending, Any], None] | None = None,
        on_connected: Callable[[ExoClient, dict[str, Any]], Awaitable[None]] | None = None,
        outbox_limit: int = 16,
        max_age: float = 600.0,
        retry_min: float = 0.2,
        retry_max: float = 3.0,
    ) -> None:
        self.client = client
        self.state = "connecting"
        self.hello: dict[str, Any] = {}
        self.outbox: deque[Pending] = deque()
        self._on_event = on_event
        self._on_state = on_state
        self._on_refused = on_refused
        self._on_delivered = on_delivered or (lambda pending, result: None)
        self._on_connected = on_connected
        self._limit = outbox_limit
        self._max_age = max_age
        self._retry_min = retry_min
        self._retry_max = retry_max
        self._first = True
        self._flushing = asyncio.Lock()

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self._on_state(state)

    async def run(self) -> None:
        """Connect, follow events and reconnect until cancelled."""
        delay = self._retry_min
        while True:
            try:
                await self._connect()
                delay = self._retry_min
                async for event in self.client.events(reconnect=False):
                    await self._on_event(event)
                log.info("event stream ended; reconnecting")
            except BrokenResourceError as exc:
                log.info("core unreachable: %s", exc.message)
            except UnsupportedError:
                raise
            self._set_state("offline")
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._retry_max)

    async def _connect(self) -> None:
        hello = await self.client.hello()
        if self._first:
            # A fresh device starts at the head: history belongs to other screens.
            self.client.last_seq = int(hello.get("last_seq", 0))
            self._first = False
        self.hello = hello
        if self._on_connected is not None:
            await self._on_connected(self.client, hello)
        self._set_state("online")
        await self.flush()

    async def submit(self, label: str, action: Action) -> Any:
        """Run ``action`` now, or keep it for when the core is back; returns its result (``None`` when queued)."""
        pending = Pending(label, action, time.monotonic())
        if self.state != "online" or self.outbox:
            self._enqueue(pending)
            if self.state == "online":
                await self.flush()
            return None
        try:
            result = await action(self.client)
        except BrokenResourceError:
            # The core went away between the press and the send: keep it for the reconnect.
            self._enqueue(pending)
            self._set_state("offline")
            return None
        except ExoError as exc:
            # The core refused it (a question that has closed, an approval answered elsewhere): said on screen.
            self._on_refused(pending, exc.message)
            return None
        self._on_delivered(pending, result)
        return result

    def _enqueue(self, pending: Pending) -> None:
        if len(self.outbox) >= self._limit:
            self._on_refused(pending, f"{self._limit} presses already wait for the core")
            return
        self.outbox.append(pending)
        self._on_state(self.state)  # the screen shows how many wait

    async def flush(self) -> None:
        """Send what waited, oldest first; refusals are reported, a new drop stops the flush."""
        async with self._flushing:
            while self.outbox and self.state == "online":
                pending = self.outbox[0]
                if time.monotonic() - pending.created > self._max_age:
                    self.outbox.popleft()
                    self._on_refused(pending, "too old: the core was away too long")
                    continue
                try:
                    result = await pending.action(self.client)
                except BrokenResourceError:
                    self._set_state("offline")
                    return
                except ExoError as exc:
                    self.outbox.popleft()
                    self._on_refused(pending, exc.message)
                    continue
                self.outbox.popleft()
                self._on_delivered(pending, result)
            self._on_state(self.state)
