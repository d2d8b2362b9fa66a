"""A bounded hand-off of a model's stream from its worker thread to the event loop.

The local model decodes in a worker thread (docs/models.md); each piece of
text it makes is handed to the coroutine that streams the call. The hand-off
is bounded (no unbounded queues, docs/architecture.md):

* **The bound.** At most ``limit`` items wait for the consumer. Each is a
  piece of text of a token or a few, so the bound is not about the bytes
  but about the worker: a consumer that stalls (a client that stopped
  reading, a disk that is slow to save deltas) stops decoding instead of
  letting the model race ahead of what anyone reads. The default, 64 pieces,
  is several seconds of decoding on a small board, so a consumer that keeps
  up never makes the worker wait.
* **When full, the worker waits** (back-pressure): :meth:`TokenPipe.put`
  blocks the worker thread until the consumer takes an item. Nothing is
  dropped while the consumer reads: every piece arrives, in order.
* **When the consumer leaves** (:meth:`TokenPipe.close`, as the stream ends
  or is interrupted), a worker blocked on a full pipe is released and what it
  puts from then on is discarded: nobody will read it, and the worker learns
  of the interruption between two tokens through its own cancel flag.

A slot is taken in the worker *before* the item is scheduled on the loop and
given back when the consumer has taken it, so the worker never waits for a
round trip through the event loop while there is room.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

__all__ = ["STREAM_LIMIT", "TokenPipe"]

STREAM_LIMIT = 64  # pieces waiting for the consumer before the worker waits (see the module docstring)


class TokenPipe:
    """A bounded queue from one worker thread (:meth:`put`) to one coroutine (:meth:`get`).

    Make it on the event loop that reads it. ``peak`` is the most items that
    ever waited at once (never more than ``limit``).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, limit: int = STREAM_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"a token pipe needs room for at least one item, not {limit}")
        self.limit = limit
        self.peak = 0
        self._loop = loop
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=limit)
        self._slots = threading.Semaphore(limit)
        self._closed = threading.Event()

    def put(self, item: Any) -> None:
        """Hand ``item`` to the consumer (worker thread); waits while ``limit`` items wait already.

        Returns at once, discarding ``item``, once the consumer has closed the pipe.
        """
        if self._closed.is_set():
            return
        self._slots.acquire()  # back-pressure: the worker waits here while the pipe is full
        if self._closed.is_set():
            return  # woken by close(): the consumer is gone
        self._loop.call_soon_threadsafe(self._arrive, item)

    def _arrive(self, item: Any) -> None:
        # On the loop. Room is certain: the item holds one of `limit` slots until taken.
        self._queue.put_nowait(item)
        self.peak = max(self.peak, self._queue.qsize())

    async def get(self) -> Any:
        """The next item, in the order the worker put them (waits for one)."""
        item = await self._queue.get()
        self._slots.release()
        return item

    def qsize(self) -> int:
        """How many items wait for the consumer now."""
        return self._queue.qsize()

    def close(self) -> None:
        """The consumer stops reading: release a worker waiting for room; later puts are discarded."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._slots.release()  # wakes a worker blocked in put(); it sees the pipe closed and returns
