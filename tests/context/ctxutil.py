"""Helpers for the context engine tests: a manual clock, a real sessions database, checks.

No conftest.py here: ``tests/conftest.py`` is imported as ``conftest`` by other
test modules, and a second one would shadow it. Modules import the ``dbenv``
fixture from here instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from manual_clock import ManualClock

from exo_core.context.tree import Plan
from exo_core.sessions import DbWorker, SessionStore
from exo_core.sessions.session_store import MessageRecord


class Db:
    """A real sessions.sqlite with its worker and store."""

    def __init__(self, worker: DbWorker) -> None:
        self.worker = worker
        self.store = SessionStore(worker)

    async def session(self, title: str = "t") -> str:
        return (await self.worker.run(lambda: self.store.create_session(title=title))).id

    async def add(self, session_id: str, role: str, text: str, **kw: object) -> MessageRecord:
        return await self.worker.run(lambda: self.store.add_message(session_id, role, text, **kw))  # type: ignore[arg-type]

    async def add_many(self, session_id: str, texts: Sequence[tuple[str, str]]) -> None:
        def write() -> None:
            with self.store.transaction():
                for role, text in texts:
                    self.store.add_message(session_id, role, text)

        await self.worker.run(write)

    async def messages(self, session_id: str) -> list[MessageRecord]:
        return await self.worker.run(lambda: self.store.messages(session_id))

    async def nodes(self, session_id: str) -> list[tuple]:
        return await self.worker.run(
            lambda: self.worker.connection.execute(
                "SELECT level, idx, first_message, last_message, status, lane, attempts, text FROM summary_nodes"
                " WHERE session_id = ? ORDER BY level, idx",
                (session_id,),
            ).fetchall()
        )


@pytest.fixture
async def dbenv(tmp_path: Path) -> AsyncIterator[Db]:
    """A real sessions.sqlite (migrated) with its database thread."""
    async with DbWorker(tmp_path / "sessions.sqlite", synchronous="NORMAL") as worker:
        yield Db(worker)


def assert_tiles(plan: Plan, count: int) -> None:
    """Every message position 0..count-1 is covered by exactly one element, in order."""
    covered = [p for e in plan.elements for p in range(e.first, e.last + 1)]
    assert covered == list(range(count)), [(e.kind, e.first, e.last) for e in plan.elements]


def text_of(n: int) -> str:
    return f"message {n}: " + " ".join(f"w{n}x{k}" for k in range(30))


__all__ = ["ManualClock", "Db", "dbenv", "assert_tiles", "text_of"]
