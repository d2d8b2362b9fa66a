"""The sessions store for async code: each call is one job on the database thread.

:class:`SessionStore` is synchronous and must run on the :class:`DbWorker`'s
single thread. Before this facade every caller in the agent and the engine wrote
``await worker.run(lambda: store.method(...))`` itself; :class:`AsyncSessions`
does that once. Each method submits exactly one job to the worker when it is
awaited (nothing is awaited before the job is queued), so calls run in the order
they are made, on the same thread, exactly as the hand-written sites did. The
arguments are bound when the method is called (``functools.partial``), never
read later from a caller's changing variables.

Several store calls that must run together, without another job between them,
go through :meth:`AsyncSessions.call` as one job.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from exo_core.sessions.session_store import (
    ApprovalRecord,
    MessageRecord,
    SearchHit,
    SessionRecord,
    SessionStore,
    TurnRecord,
)
from exo_core.sessions.worker import DbWorker

__all__ = ["AsyncSessions"]

T = TypeVar("T")


class AsyncSessions:
    """Async methods over :class:`SessionStore`, each run on the worker's database thread.

    The method names, arguments, results and errors are the store's own (see
    :mod:`exo_core.sessions.session_store`); only the calling convention differs.
    """

    def __init__(self, worker: DbWorker, *, store: SessionStore | None = None) -> None:
        self.worker = worker
        # The store resolves the worker's connection on each use, so it may be built before the worker opens.
        self.store = store or SessionStore(worker)

    async def call(self, fn: Callable[[SessionStore], T]) -> T:
        """Run ``fn(store)`` as one job: several store calls with no other write between them."""
        return await self.worker.run(fn, self.store)

    # -- sessions ----------------------------------------------------------

    async def create_session(
        self,
        *,
        title: str = "",
        workspace: str | None = None,
        parent_id: str | None = None,
        fork_message_id: int | None = None,
    ) -> SessionRecord:
        """:meth:`SessionStore.create_session` on the database thread."""
        job = functools.partial(
            self.store.create_session,
            title=title,
            workspace=workspace,
            parent_id=parent_id,
            fork_message_id=fork_message_id,
        )
        return await self.worker.run(job)

    async def get_session(self, session_id: str) -> SessionRecord:
        """:meth:`SessionStore.get_session`: :class:`~exo_core.errors.NotFoundError` when absent."""
        return await self.worker.run(self.store.get_session, session_id)

    async def list_sessions(self, limit: int = 50) -> list[SessionRecord]:
        """:meth:`SessionStore.list_sessions` on the database thread."""
        return await self.worker.run(self.store.list_sessions, limit)

    async def touch(self, session_id: str, *, add_cost: float = 0.0) -> SessionRecord:
        """:meth:`SessionStore.touch` on the database thread."""
        job = functools.partial(self.store.touch, session_id, add_cost=add_cost)
        return await self.worker.run(job)

    async def fork(self, session_id: str, *, message_id: int | None = None, title: str = "") -> SessionRecord:
        """:meth:`SessionStore.fork` on the database thread (one job, one transaction)."""
        job = functools.partial(self.store.fork, session_id, message_id=message_id, title=title)
        return await self.worker.run(job)

    # -- messages ----------------------------------------------------------

    async def add_message(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        turn_id: str | None = None,
        tool_calls: Iterable[dict[str, Any]] = (),
        tool_call_id: str | None = None,
        status: str = "complete",
    ) -> MessageRecord:
        """:meth:`SessionStore.add_message` on the database thread."""
        job = functools.partial(
            self.store.add_message,
            session_id,
            role,
            content,
            turn_id=turn_id,
            tool_calls=tool_calls,
            tool_call_id=tool_call_id,
            status=status,
        )
        return await self.worker.run(job)

    async def messages(self, session_id: str, *, include_undone: bool = False) -> list[MessageRecord]:
        """:meth:`SessionStore.messages` on the database thread."""
        job = functools.partial(self.store.messages, session_id, include_undone=include_undone)
        return await self.worker.run(job)

    async def dangling_tool_calls(self, session_id: str) -> list[tuple[MessageRecord, dict[str, Any]]]:
        """:meth:`SessionStore.dangling_tool_calls` on the database thread."""
        return await self.worker.run(self.store.dangling_tool_calls, session_id)

    async def undo(self, session_id: str, turns: int) -> list[str]:
        """:meth:`SessionStore.undo` on the database thread."""
        return await self.worker.run(self.store.undo, session_id, turns)

    # -- turns -------------------------------------------------------------

    async def add_turn(self, session_id: str, text: str, mode: str, *, status: str = "queued") -> TurnRecord:
        """:meth:`SessionStore.add_turn` on the database thread."""
        job = functools.partial(self.store.add_turn, session_id, text, mode, status=status)
        return await self.worker.run(job)

    async def set_turn_status(self, turn_id: str, status: str, stop_reason: str | None = None) -> None:
        """:meth:`SessionStore.set_turn_status` on the database thread."""
        await self.worker.run(self.store.set_turn_status, turn_id, status, stop_reason)

    async def turns(self, session_id: str, *, status: str | None = None) -> list[TurnRecord]:
        """:meth:`SessionStore.turns` on the database thread."""
        job = functools.partial(self.store.turns, session_id, status=status)
        return await self.worker.run(job)

    # -- approvals ---------------------------------------------------------

    async def add_approval(
        self,
        session_id: str,
        *,
        turn_id: str | None,
        call_id: str | None,
        tool: str,
        summary: str,
        risk: str,
        arguments: dict[str, Any],
    ) -> ApprovalRecord:
        """:meth:`SessionStore.add_approval` on the database thread."""
        job = functools.partial(
            self.store.add_approval,
            session_id,
            turn_id=turn_id,
            call_id=call_id,
            tool=tool,
            summary=summary,
            risk=risk,
            arguments=arguments,
        )
        return await self.worker.run(job)

    async def get_approval(self, approval_id: str) -> ApprovalRecord:
        """:meth:`SessionStore.get_approval`: :class:`~exo_core.errors.NotFoundError` when absent."""
        return await self.worker.run(self.store.get_approval, approval_id)

    async def resolve_approval(self, approval_id: str, status: str, reason: str = "") -> ApprovalRecord:
        """:meth:`SessionStore.resolve_approval`: :class:`~exo_core.errors.ConflictError` on a second answer."""
        return await self.worker.run(self.store.resolve_approval, approval_id, status, reason)

    async def open_approvals(self, session_id: str | None = None) -> list[ApprovalRecord]:
        """:meth:`SessionStore.open_approvals` on the database thread."""
        return await self.worker.run(self.store.open_approvals, session_id)

    # -- search ------------------------------------------------------------

    async def search(self, query: str, *, limit: int = 20, session_id: str | None = None) -> list[SearchHit]:
        """:meth:`SessionStore.search` on the database thread."""
        job = functools.partial(self.store.search, query, limit=limit, session_id=session_id)
        return await self.worker.run(job)
