"""Who uses the local model next: the person's turn before background work.

One ``Llama`` object serves every call, one at a time. :class:`ModelTurns` is
the lock that orders them: when the model comes free, the waiting call with
the lowest priority number goes first (ties: the one that asked first), so a
turn the person is waiting for (:data:`LIVE`) passes summaries, decisions and
other background calls (:data:`BACKGROUND`) queued before it, and a warm-up
(:data:`AHEAD`) goes last. A call already running is not stopped (a warm-up
stops itself between two batches: ``waiting``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading

__all__ = ["AHEAD", "BACKGROUND", "LIVE", "ModelTurns"]

LIVE = 0
BACKGROUND = 1
AHEAD = 2


class ModelTurns:
    """A lock whose waiters are served by priority (lowest first), then in order of arrival.

    ``waiting`` is set while any call waits (a thread-safe event a warm-up in
    the model's worker checks between two batches).
    """

    def __init__(self) -> None:
        self._held = False
        self._queue: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.waiting = threading.Event()

    async def acquire(self, priority: int) -> None:
        """Wait for the model; a lower ``priority`` number goes first."""
        if not self._held and not self._queue:
            self._held = True
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._queue, (priority, next(self._order), future))
        self.waiting.set()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # handed the model just as the caller gave up: pass it on
            else:
                self._queue = [entry for entry in self._queue if entry[2] is not future]
                heapq.heapify(self._queue)
                self._update_waiting()
            raise

    def release(self) -> None:
        """Hand the model to the first waiter, or free it."""
        while self._queue:
            _, _, future = heapq.heappop(self._queue)
            if not future.done():
                future.set_result(None)
                self._update_waiting()
                return
        self._held = False
        self._update_waiting()

    def _update_waiting(self) -> None:
        if any(not entry[2].done() for entry in self._queue):
            self.waiting.set()
        else:
            self.waiting.clear()
