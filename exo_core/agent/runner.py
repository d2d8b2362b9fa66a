"""Turn control for sessions: one running turn each, steer, queue, interrupt, resume.

* ``send`` starts a turn when the session is idle; while one runs it is refused
  (use ``steer`` or ``queue``).
* ``steer`` slips the text in between tool rounds of the running turn (at most
  :data:`STEER_LIMIT` waiting; more is refused, never silently dropped).
* ``queue`` stores a turn (status ``queued`` in the database) that starts when
  the running one ends; queued turns survive a restart.
* ``resume`` after a crash closes dangling tool calls with an error result,
  continues the turn that was cut off, then runs the queued ones. A call that
  was waiting for an approval is not closed: the resumed turn runs it again
  and re-uses the still-open request (or the answer given meanwhile).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from exo_core.agent.loop import INTERRUPTED_RESULT, LoopDeps, run_turn
from exo_core.agent.seams import ResumingContextEngine
from exo_core.agent.toolrun import emit_message
from exo_core.errors import ConflictError
from exo_core.protocol import events as ev
from exo_core.seams.model import ToolCall
from exo_core.sessions.session_store import ApprovalRecord, MessageRecord, TurnRecord

__all__ = ["TurnRunner", "SendOutcome", "STEER_LIMIT", "QUEUE_LIMIT"]

log = logging.getLogger(__name__)

STEER_LIMIT = 8
QUEUE_LIMIT = 32


@dataclass(frozen=True, slots=True)
class SendOutcome:
    """What happened to a ``turn.send``: started, steered or queued."""

    turn_id: str | None
    disposition: str


@dataclass(slots=True, eq=False)
class _SessionState:
    task: asyncio.Task[None] | None = None
    turn_id: str | None = None
    steer: deque[str] = field(default_factory=deque)


class TurnRunner:
    """Runs turns in background tasks, one per session at a time."""

    def __init__(self, deps: LoopDeps) -> None:
        self._deps = deps
        self._sessions: dict[str, _SessionState] = {}

    def _state(self, session_id: str) -> _SessionState:
        return self._sessions.setdefault(session_id, _SessionState())

    def busy(self, session_id: str) -> bool:
        """Whether a turn is running in ``session_id``."""
        task = self._state(session_id).task
        return task is not None and not task.done()

    async def send(self, session_id: str, text: str, mode: str) -> SendOutcome:
        """Handle ``turn.send``; returns at once, the turn runs in the background."""
        await self._deps.sessions.get_session(session_id)
        state = self._state(session_id)
        await self._settle_finished(session_id)
        if self.busy(session_id):
            if mode == "steer":
                if len(state.steer) >= STEER_LIMIT:
                    raise ConflictError(f"{STEER_LIMIT} steering messages are already waiting; wait or interrupt")
                state.steer.append(text)
                return SendOutcome(state.turn_id, "steered")
            if mode == "queue":
                queued = await self._deps.sessions.turns(session_id, status="queued")
                if len(queued) >= QUEUE_LIMIT:
                    raise ConflictError(f"{QUEUE_LIMIT} turns are already queued; wait for them to run")
                turn = await self._deps.sessions.add_turn(session_id, text, mode)
                return SendOutcome(turn.id, "queued")
            raise ConflictError(
                "a turn is already running in this session; send with mode 'steer' or 'queue', or interrupt it first",
                field="mode",
            )
        turn = await self._deps.sessions.add_turn(session_id, text, mode, status="running")
        self._start(session_id, turn, resumed=False)
        return SendOutcome(turn.id, "started")

    async def _settle_finished(self, session_id: str) -> None:
        """If the running turn already completed (turn.completed may be out), let its wrap-up end.

        A client that saw ``turn.completed`` must find the session idle, not busy
        with the bookkeeping that follows it.
        """
        state = self._state(session_id)
        task, turn_id = state.task, state.turn_id  # captured: the turn may clear them meanwhile
        if not self.busy(session_id) or task is None or turn_id is None:
            return
        running = await self._deps.sessions.turns(session_id, status="running")
        if all(t.id != turn_id for t in running):
            await asyncio.shield(task)

    def _start(self, session_id: str, turn: TurnRecord, *, resumed: bool, pending: tuple[ToolCall, ...] = ()) -> None:
        state = self._state(session_id)
        state.turn_id = turn.id
        state.task = asyncio.create_task(self._drive(session_id, turn, resumed, pending), name=f"turn-{turn.id}")

    async def _drive(
        self, session_id: str, turn: TurnRecord, resumed: bool, pending: tuple[ToolCall, ...] = ()
    ) -> None:
        state = self._state(session_id)
        await run_turn(self._deps, session_id, turn, state.steer, resumed=resumed, pending=pending)
        leftover = list(state.steer)
        state.steer.clear()
        # Steering text that arrived after the last tool round becomes the next turn, not lost.
        for text in leftover:
            await self._deps.sessions.add_turn(session_id, text, "steer")
        queued = await self._deps.sessions.turns(session_id, status="queued")
        if queued:
            await self._deps.sessions.set_turn_status(queued[0].id, "running")
            self._start(session_id, queued[0], resumed=False)
        else:
            state.task, state.turn_id = None, None

    async def interrupt(self, session_id: str) -> str | None:
        """Stop the running turn and wait until it is closed; returns its id (``None`` when idle)."""
        state = self._state(session_id)
        task, turn_id = state.task, state.turn_id
        if task is None or task.done():
            return None
        # Queued turns stay queued; the interrupt is for the running one only.
        task.cancel()
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():  # this caller was cancelled, not the turn
                raise
        return turn_id

    async def resume(self, session_id: str) -> dict[str, object]:
        """Repair a half-finished tool round and restart pending work after a restart."""
        deps = self._deps
        await deps.sessions.get_session(session_id)
        await self._settle_finished(session_id)
        if self.busy(session_id):
            return {"repaired": 0, "resumed_turn": self._state(session_id).turn_id, "queued": 0}
        running = await deps.sessions.turns(session_id, status="running")
        dangling = await deps.sessions.dangling_tool_calls(session_id)
        reusable = await deps.approvals.reusable(session_id)
        pending = _awaiting_approval(dangling, reusable, running[-1].id) if running else ()
        kept = frozenset(reusable[c.id].id for c in pending if c.id in reusable)
        expired = await deps.approvals.expire_open(session_id, "the core restarted", keep=kept)
        waiting = {c.id for c in pending}
        repaired = await self._repair(session_id, [(m, c) for m, c in dangling if c["id"] not in waiting])
        queued = await deps.sessions.turns(session_id, status="queued")
        resumed_turn = None
        if running:
            # Only the latest can really have been running; older ones are closed as crashed.
            for stale in running[:-1]:
                await deps.sessions.set_turn_status(stale.id, "error", "crashed")
            resumed_turn = running[-1].id
            self._start(session_id, running[-1], resumed=True, pending=pending)
        elif queued:
            await deps.sessions.set_turn_status(queued[0].id, "running")
            self._start(session_id, queued[0], resumed=False)
        await self._resume_context(session_id)
        session = await deps.sessions.get_session(session_id)
        await deps.hub.emit(
            session_id,
            "session.updated",
            ev.SessionUpdated(session_id=session_id, title=session.title, reason="resumed"),
        )
        return {
            "repaired": repaired,
            "expired_approvals": expired,
            "reopened_approvals": len(kept),
            "resumed_turn": resumed_turn,
            "queued": len(queued),
        }

    async def _resume_context(self, session_id: str) -> None:
        """Restart the session's pending and failed summaries (engines without the hook skip it)."""
        context = self._deps.context
        if not isinstance(context, ResumingContextEngine):
            return
        try:
            await context.on_resume(session_id)
        except Exception:  # fail soft: the next turn's build retries the summaries anyway
            log.exception("context engine could not resume %s", session_id)

    async def _repair(self, session_id: str, dangling: list[tuple[MessageRecord, dict[str, Any]]]) -> int:
        """Give each of the ``dangling`` calls an error result (the crash interrupted them)."""
        deps = self._deps
        for message, call in dangling:
            msg = await deps.sessions.add_message(
                session_id,
                "tool",
                f"error: {INTERRUPTED_RESULT}",
                turn_id=message.turn_id,
                tool_call_id=call["id"],
                status="error",
            )
            await deps.hub.emit(
                session_id,
                "tool.completed",
                ev.ToolCompleted(call_id=call["id"], name=call.get("name", ""), ok=False, result=msg.content),
            )
            await emit_message(deps, msg)
        return len(dangling)

    async def close(self) -> None:
        """Interrupt every running turn (used at shutdown)."""
        for session_id in list(self._sessions):
            await self.interrupt(session_id)


def _awaiting_approval(
    dangling: list[tuple[MessageRecord, dict[str, Any]]], reusable: dict[str, ApprovalRecord], turn_id: str
) -> tuple[ToolCall, ...]:
    """Dangling calls of ``turn_id`` from the first one whose approval can be re-used, in order."""
    calls = [(m, c) for m, c in dangling if m.turn_id == turn_id]
    start = next(
        (i for i, (_, c) in enumerate(calls) if c["id"] in reusable and reusable[c["id"]].turn_id == turn_id), None
    )
    if start is None:
        return ()
    message_id = calls[start][0].id
    # Calls run in order: the ones after the waiting call in the same message never started.
    return tuple(
        ToolCall(c["id"], c.get("name", ""), c.get("arguments", {})) for m, c in calls[start:] if m.id == message_id
    )
