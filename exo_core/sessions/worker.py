"""The single database thread that owns the writer connection of ``sessions.sqlite``.

Every write (events, messages, turns, approvals) runs on this one thread, in
order, so writes never race and the event loop never blocks on disk. Readers
(replay, search pages) use their own read-only connections in other threads.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from exo_core.errors import ClosedResourceError
from exo_core.sessions.db import open_reader, open_writer

__all__ = ["DbWorker"]

T = TypeVar("T")


class DbWorker:
    """Owns the writer connection and the thread it is used on.

    Use as ``async with DbWorker(path) as worker:``; ``await worker.run(fn, ...)``
    calls ``fn(conn, ...)`` on the database thread.
    """

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        self.path = path
        self._synchronous = synchronous
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def __aenter__(self) -> DbWorker:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="exo-db")
        self._conn = await self.run(lambda: open_writer(self.path, synchronous=self._synchronous))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection and stop the thread (idempotent)."""
        if self._executor is None:
            return
        executor, conn = self._executor, self._conn
        self._executor, self._conn = None, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        executor.shutdown(wait=True)

    @property
    def connection(self) -> sqlite3.Connection:
        """The writer connection: use it only inside functions passed to :meth:`run`."""
        if self._conn is None:
            raise ClosedResourceError("the sessions database is closed")
        return self._conn

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the database thread and return its result."""
        if self._executor is None:
            raise ClosedResourceError("the sessions database is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, lambda: fn(*args))

    def reader(self) -> sqlite3.Connection:
        """A new read-only connection (caller closes it)."""
        return open_reader(self.path)
