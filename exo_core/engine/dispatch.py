"""The engine behind every transport: one ``handle(command)`` for all of them.

Transports decode bytes, call :meth:`Engine.handle_raw` and write the
:class:`Response` back. Long work (a turn) starts in the background and the
response returns at once (``{"accepted": true, ...}``); progress arrives as
events. Any :class:`ExoError` becomes a typed error response; any other
exception becomes ``internal`` and is logged, and the connection stays up.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from exo_core import __version__
from exo_core.agent.approvals import ApprovalBroker
from exo_core.agent.runner import TurnRunner
from exo_core.engine.shaping import ClientRegistry
from exo_core.errors import BadBodyError, ConflictError, ExoError, UnsupportedError
from exo_core.events.hub import Hub
from exo_core.protocol import COMMANDS, EVENTS, PROTOCOL_VERSION, ErrorInfo, Response, decode_command
from exo_core.protocol import commands as cmd
from exo_core.protocol import events as ev
from exo_core.sessions.facade import AsyncSessions
from exo_core.tools.snapshots import FileSnapshots, Restored

__all__ = ["Engine", "Handler"]

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[dict[str, Any]]]


class Engine:
    """Dispatches decoded commands to their handlers.

    Its own handlers (sessions, turns, approvals, events, search) are the public
    ``async`` methods below; which handler serves which command type is set in one
    place, :mod:`exo_core.engine.handlers`. A command type with no handler answers
    with a typed ``unsupported`` error.
    """

    def __init__(
        self,
        *,
        hub: Hub,
        sessions: AsyncSessions,
        runner: TurnRunner,
        approvals: ApprovalBroker,
        snapshots: FileSnapshots | None = None,
    ) -> None:
        self.hub = hub
        self._snapshots = snapshots
        self._sessions = sessions
        self._runner = runner
        self._approvals = approvals
        self.clients = ClientRegistry()
        self._handlers: dict[str, Handler] = {}

    def serve(self, handlers: Mapping[str, Handler]) -> None:
        """Serve each command type with its handler (the tables of exo_core/engine/handlers.py)."""
        for command_type, handler in handlers.items():
            self.add_handler(command_type, handler)

    def add_handler(self, command_type: str, handler: Handler) -> None:
        """Serve ``command_type`` with ``handler`` (one line of a table; tests replace one)."""
        if command_type not in COMMANDS:
            raise ConflictError(f"{command_type!r} is not a registered command type")
        self._handlers[command_type] = handler

    async def handle_raw(self, data: bytes | str | dict[str, Any]) -> Response:
        """Decode and handle one command; always returns a response, never raises."""
        try:
            command, body = decode_command(data)
        except ExoError as exc:
            command_id = data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), str) else None
            return Response.failure(command_id, ErrorInfo(exc.code, exc.message, exc.field))
        return await self.handle(command.type, command.id, body)

    async def handle(self, command_type: str, command_id: str, body: Any) -> Response:
        """Handle one decoded command."""
        handler = self._handlers.get(command_type)
        try:
            if handler is None:
                raise UnsupportedError(f"{command_type!r} is not available in this core yet")
            result = await handler(body)
        except ExoError as exc:
            return Response.failure(command_id, ErrorInfo(exc.code, exc.message, exc.field))
        except Exception as exc:  # an engine bug becomes 'internal'; the connection stays up
            log.exception("command %s failed", command_type)
            return Response.failure(command_id, ErrorInfo("internal", f"internal error: {type(exc).__name__}"))
        return Response.success(command_id, result)

    # -- handlers (served by exo_core/engine/handlers.py) -------------------

    async def hello(self, body: cmd.Hello) -> dict[str, Any]:
        """``hello``: the client's capabilities remembered; what this core speaks."""
        if body.protocol != PROTOCOL_VERSION:
            raise UnsupportedError(f"this core speaks protocol {PROTOCOL_VERSION}, not {body.protocol}")
        # Remember what this client can show; its event stream (?client=<client_id>) is shaped to match.
        profile = self.clients.remember(body.client, body.capabilities)
        return {
            "client_id": profile.client_id,
            "shape": profile.form,
            "protocol": PROTOCOL_VERSION,
            "server": "exod",
            "version": __version__,
            "last_seq": self.hub.last_seq,
            "commands": list(COMMANDS),
            "events": list(EVENTS),
        }

    async def session_create(self, body: cmd.SessionCreate) -> dict[str, Any]:
        """``session.create``."""
        record = await self._sessions.create_session(title=body.title, workspace=body.workspace)
        await self.hub.emit(
            record.id, "session.updated", ev.SessionUpdated(session_id=record.id, title=record.title, reason="created")
        )
        return {"session": record.to_wire()}

    async def session_list(self, body: cmd.SessionList) -> dict[str, Any]:
        """``session.list``."""
        records = await self._sessions.list_sessions(body.limit)
        return {"sessions": [r.to_wire() for r in records]}

    async def session_get(self, body: cmd.SessionGet) -> dict[str, Any]:
        """``session.get``: the session, its open approvals and, if asked, its messages."""
        record = await self._sessions.get_session(body.session)
        result: dict[str, Any] = {"session": record.to_wire(), "running": self._runner.busy(body.session)}
        if body.messages:
            messages = await self._sessions.messages(body.session)
            result["messages"] = [m.to_wire() for m in messages]
        approvals = await self._sessions.open_approvals(body.session)
        result["open_approvals"] = [
            {"request_id": a.id, "summary": a.summary, "risk": a.risk, "tool": a.tool} for a in approvals
        ]
        return result

    async def session_fork(self, body: cmd.SessionFork) -> dict[str, Any]:
        """``session.fork``."""
        child = await self._sessions.fork(body.session, message_id=body.message_id, title=body.title)
        await self.hub.emit(
            child.id,
            "session.updated",
            ev.SessionUpdated(session_id=child.id, title=child.title, reason=f"forked from {body.session}"),
        )
        return {"session": child.to_wire()}

    async def session_resume(self, body: cmd.SessionResume) -> dict[str, Any]:
        """``session.resume``: repair and continue a cut-off turn."""
        return await self._runner.resume(body.session)

    async def session_undo(self, body: cmd.SessionUndo) -> dict[str, Any]:
        """``session.undo``: drop the last turns (not while one runs) and put back the files they changed."""
        if self._runner.busy(body.session):
            raise ConflictError("a turn is running; interrupt it before undoing")
        undone = await self._sessions.undo(body.session, body.turns)
        files = Restored()
        if self._snapshots is not None and undone:
            files = await asyncio.to_thread(self._snapshots.restore, body.session, undone)
        count = len(await self._sessions.messages(body.session))
        said = f"undid {len(undone)} turn(s); {files.describe()}"
        await self.hub.emit(
            body.session,
            "session.updated",
            ev.SessionUpdated(session_id=body.session, message_count=count, reason=said),
        )
        return {"undone_turns": undone, **files.to_wire(), "said": said}

    async def turn_send(self, body: cmd.TurnSend) -> dict[str, Any]:
        """``turn.send``: start (or steer, or queue) a turn; answers at once."""
        if not body.text.strip():
            raise BadBodyError("'text' must not be empty", field="text")
        outcome = await self._runner.send(body.session, body.text, body.mode)
        return {"accepted": True, "turn_id": outcome.turn_id, "disposition": outcome.disposition}

    async def turn_interrupt(self, body: cmd.TurnInterrupt) -> dict[str, Any]:
        """``turn.interrupt``."""
        turn_id = await self._runner.interrupt(body.session)
        return {"interrupted": turn_id is not None, "turn_id": turn_id}

    async def approval_respond(self, body: cmd.ApprovalRespond) -> dict[str, Any]:
        """``approval.respond``: the first answer wins."""
        record = await self._approvals.respond(body.request_id, body.decision, body.reason)
        return {"request_id": record.id, "decision": record.status}

    async def events_page(self, body: cmd.EventsSubscribe) -> dict[str, Any]:
        """``events.subscribe`` over a request/response transport: one page of stored events."""
        page = await self.hub.read_page(body.since, body.session, body.limit)
        return {
            "events": [json.loads(item.data) for item in page],
            "last_seq": page[-1].seq if page else body.since,
            "head": self.hub.last_seq,
        }

    async def search(self, body: cmd.Search) -> dict[str, Any]:
        """``search``: full-text over the sessions."""
        hits = await self._sessions.search(body.query, limit=body.limit, session_id=body.session)
        return {"hits": [h.to_wire() for h in hits]}
