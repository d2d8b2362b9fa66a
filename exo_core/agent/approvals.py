"""Approval requests: asked once, answerable by any client, first answer wins.

A request is stored in ``sessions.sqlite`` before ``approval.requested`` is
emitted, so a client that reconnects (or replays) sees it and can still answer
it. The database decides the winner (an UPDATE guarded by ``status = 'open'``),
so two clients answering at once cannot both win.
"""

from __future__ import annotations

import asyncio
from typing import Any

from exo_core.errors import BadBodyError, ConflictError
from exo_core.protocol.events import ApprovalRequested, ApprovalResolved
from exo_core.server.hub import Hub
from exo_core.sessions.store import ApprovalRecord, SessionStore
from exo_core.sessions.worker import DbWorker

__all__ = ["ApprovalBroker"]

_DECISIONS = {"allow", "deny", "allow_always"}


class ApprovalBroker:
    """Opens approval requests, waits for answers and resolves them."""

    def __init__(self, hub: Hub, worker: DbWorker, store: SessionStore) -> None:
        self._hub = hub
        self._worker = worker
        self._store = store
        self._waiting: dict[str, asyncio.Future[str]] = {}

    async def request(self, session_id: str, *, turn_id: str | None, call_id: str | None, tool: str, summary: str,
                      risk: str, arguments: dict[str, Any]) -> str:
        """Ask the person; returns ``allow``, ``deny`` or ``allow_always``.

        If the waiting turn is interrupted the request is resolved as ``expired``.
        """
        record = await self._worker.run(
            lambda: self._store.add_approval(session_id, turn_id=turn_id, call_id=call_id, tool=tool,
                                             summary=summary, risk=risk, arguments=arguments)
        )
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[record.id] = future
        await self._hub.emit(session_id, "approval.requested", ApprovalRequested(
            request_id=record.id, summary=summary, risk=risk, tool=tool, arguments=arguments,
            turn_id=turn_id, call_id=call_id))
        try:
            return await future
        except asyncio.CancelledError:
            await asyncio.shield(self._expire(record.id, session_id, "the turn was interrupted"))
            raise
        finally:
            self._waiting.pop(record.id, None)

    async def respond(self, request_id: str, decision: str, reason: str = "") -> ApprovalRecord:
        """Answer a request; a late second answer raises :class:`ConflictError`."""
        if decision not in _DECISIONS:
            raise BadBodyError(f"decision must be one of {sorted(_DECISIONS)}", field="decision")
        record = await self._worker.run(lambda: self._store.resolve_approval(request_id, decision, reason))
        await self._hub.emit(record.session_id, "approval.resolved",
                             ApprovalResolved(request_id=request_id, decision=decision, reason=reason))
        future = self._waiting.get(request_id)
        if future is not None and not future.done():
            future.set_result(decision)
        return record

    async def expire_open(self, session_id: str, reason: str) -> int:
        """Expire requests of ``session_id`` nobody waits for any more (after a restart)."""
        stale = [a for a in await self._worker.run(lambda: self._store.open_approvals(session_id))
                 if a.id not in self._waiting]
        for a in stale:
            await self._expire(a.id, session_id, reason)
        return len(stale)

    async def _expire(self, request_id: str, session_id: str, reason: str) -> None:
        def resolve() -> bool:
            try:
                self._store.resolve_approval(request_id, "expired", reason)
            except ConflictError:  # already answered: nothing to expire
                return False
            return True

        if await self._worker.run(resolve):
            await self._hub.emit(session_id, "approval.resolved",
                                 ApprovalResolved(request_id=request_id, decision="expired", reason=reason))
