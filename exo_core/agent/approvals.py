"""Approval requests: asked once, answerable by any client, first answer wins, survive a restart.

A request is stored in ``sessions.sqlite`` before ``approval.requested`` is
emitted, so a client that reconnects (or replays with ``since=``) sees it and
can still answer it. The database decides the winner (an UPDATE guarded by
``status = 'open'``), so two clients answering at once cannot both win.

After a core restart the request is still open in the database. When the
resumed turn reaches the same tool call again, :meth:`ApprovalBroker.request`
finds it by call id and *re-uses* it: it emits ``approval.requested`` again
with the same request id (for clients that only watch live events) and waits
for the answer — or, if someone answered it while no turn was waiting, takes
that answer at once. Nothing is asked twice and no answer is lost.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from exo_core.errors import ConflictError
from exo_core.events.hub import Hub
from exo_core.protocol.events import ApprovalRequested, ApprovalResolved
from exo_core.sessions.facade import AsyncSessions
from exo_core.sessions.session_store import ApprovalRecord, SessionStore

__all__ = ["ApprovalBroker", "ApprovalAnswer"]


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """The answer to one request: ``allow``, ``deny`` or ``allow_always``, and the reason given."""

    request_id: str
    decision: str
    reason: str = ""


class ApprovalBroker:
    """Opens approval requests, waits for answers and resolves them."""

    def __init__(self, hub: Hub, sessions: AsyncSessions) -> None:
        self._hub = hub
        self._sessions = sessions
        self._waiting: dict[str, asyncio.Future[ApprovalAnswer]] = {}
        # Answers that arrived while no turn waited (after a restart, before resume): kept for the resumed turn.
        self._unclaimed: dict[str, ApprovalAnswer] = {}

    async def request(
        self,
        session_id: str,
        *,
        turn_id: str | None,
        call_id: str | None,
        tool: str,
        summary: str,
        risk: str,
        arguments: dict[str, Any],
        reason: str = "",
        diff: str = "",
    ) -> ApprovalAnswer:
        """Ask the person (or re-use the open request for ``call_id``) and wait for the answer.

        ``reason`` says why it is asked and ``diff`` shows a file change; both are worked out again when a
        resumed turn re-asks, so they are sent, not stored. If the waiting turn is interrupted the request
        is resolved as ``expired``.
        """
        found = (await self.reusable(session_id)).get(call_id) if call_id else None
        existing = found if found is not None and found.turn_id == turn_id else None
        if existing is not None and existing.id in self._unclaimed:
            return self._unclaimed.pop(existing.id)
        record = (
            existing
            if existing is not None and existing.status == "open"
            else await self._sessions.add_approval(
                session_id,
                turn_id=turn_id,
                call_id=call_id,
                tool=tool,
                summary=summary,
                risk=risk,
                arguments=arguments,
            )
        )
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[record.id] = future
        await self._hub.emit(
            session_id,
            "approval.requested",
            ApprovalRequested(
                request_id=record.id,
                summary=record.summary,
                risk=record.risk,
                tool=record.tool,
                arguments=record.arguments,
                turn_id=record.turn_id,
                call_id=record.call_id,
                reason=reason,
                diff=diff,
            ),
        )
        try:
            return await future
        except asyncio.CancelledError:
            await asyncio.shield(self._expire(record.id, session_id, "the turn was interrupted"))
            raise
        finally:
            self._waiting.pop(record.id, None)

    async def respond(self, request_id: str, decision: str, reason: str = "") -> ApprovalRecord:
        """Answer a request (``decision`` as the protocol's ``approval.respond`` allows it); a late second answer
        raises :class:`ConflictError`."""
        record = await self._sessions.resolve_approval(request_id, decision, reason)
        await self._hub.emit(
            record.session_id,
            "approval.resolved",
            ApprovalResolved(request_id=request_id, decision=decision, reason=reason),
        )
        answer = ApprovalAnswer(request_id, decision, reason)
        future = self._waiting.get(request_id)
        if future is not None and not future.done():
            future.set_result(answer)
        else:
            self._unclaimed[request_id] = answer
        return record

    async def reusable(self, session_id: str) -> dict[str, ApprovalRecord]:
        """Requests a resumed turn can pick up again, by call id: open ones and unclaimed answers."""

        # One job: the open requests and the unclaimed answers are read with no write between them.
        def load(store: SessionStore) -> dict[str, ApprovalRecord]:
            unclaimed = [store.get_approval(request_id) for request_id in list(self._unclaimed)]
            return {
                a.call_id: a
                for a in [*store.open_approvals(session_id), *unclaimed]
                if a.call_id and a.session_id == session_id
            }

        return await self._sessions.call(load)

    async def expire_open(self, session_id: str, reason: str, *, keep: frozenset[str] = frozenset()) -> int:
        """Expire requests of ``session_id`` nobody waits for any more, except those in ``keep`` (ids)."""
        requests = await self._sessions.open_approvals(session_id)
        stale = [a for a in requests if a.id not in self._waiting and a.id not in keep]
        for a in stale:
            await self._expire(a.id, session_id, reason)
        return len(stale)

    async def _expire(self, request_id: str, session_id: str, reason: str) -> None:
        try:
            await self._sessions.resolve_approval(request_id, "expired", reason)
        except ConflictError:  # already answered: nothing to expire
            return
        await self._hub.emit(
            session_id,
            "approval.resolved",
            ApprovalResolved(request_id=request_id, decision="expired", reason=reason),
        )
