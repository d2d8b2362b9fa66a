"""Sessions, messages, turns and approvals in ``sessions.sqlite``.

:class:`SessionStore` is synchronous and owns no thread: the daemon calls it on
its single database thread (see :class:`exo_core.events.hub.Hub`), so every
write is serialized without locks and never blocks the event loop. Async code
uses it through :class:`exo_core.sessions.facade.AsyncSessions`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

from exo_core.clock import Clock, SystemClock, iso_utc
from exo_core.errors import BadBodyError, ConflictError, NotFoundError
from exo_core.ids import IdFactory, RandomIds
from exo_core.protocol.envelopes import shallow_dict
from exo_core.sessions.db import write_transaction
from exo_core.sessions.worker import DbWorker

if TYPE_CHECKING:
    from _typeshed import DataclassInstance  # typeshed's name for 'a dataclass'; no run-time module

__all__ = [
    "SessionStore",
    "SessionRecord",
    "MessageRecord",
    "TurnRecord",
    "ApprovalRecord",
    "SearchHit",
    "MAX_TITLE_CHARS",
]

# A title is a line on every screen (the device's is 20 columns) and goes out in every session.updated event.
MAX_TITLE_CHARS = 200

_R = TypeVar("_R", bound="DataclassInstance")


def _check_title(title: str) -> None:
    if len(title) > MAX_TITLE_CHARS:
        raise BadBodyError(
            f"a session title is at most {MAX_TITLE_CHARS} characters; this one has {len(title):,}", field="title"
        )


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One session's row."""

    id: str
    title: str
    created_at: str
    updated_at: str
    parent_id: str | None
    fork_message_id: int | None
    workspace: str | None
    cost: float

    def to_wire(self) -> dict[str, Any]:
        return shallow_dict(self)


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One stored message. ``tool_calls`` are ``{id, name, arguments}`` objects."""

    id: int
    session_id: str
    turn_id: str | None
    role: str
    content: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str | None = None
    status: str = "complete"

    def to_wire(self) -> dict[str, Any]:
        return {name: value for name, value in shallow_dict(self).items() if name != "session_id"}


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn: the person's message and its processing state."""

    id: str
    session_id: str
    text: str
    mode: str
    status: str
    stop_reason: str | None


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One approval request and its answer."""

    id: str
    session_id: str
    turn_id: str | None
    call_id: str | None
    tool: str
    summary: str
    risk: str
    arguments: dict[str, Any]
    status: str
    reason: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A full-text match with a highlighted snippet (matches in ``[`` ``]``)."""

    session_id: str
    message_id: int
    role: str
    snippet: str

    def to_wire(self) -> dict[str, Any]:
        return {"session": self.session_id, "message_id": self.message_id, "role": self.role, "snippet": self.snippet}


class SessionStore:
    """Typed access to the session tables over one writer connection."""

    def __init__(
        self, conn: sqlite3.Connection | DbWorker, *, clock: Clock | None = None, ids: IdFactory | None = None
    ) -> None:
        # A DbWorker is resolved on each use: the store may be built before the worker opens.
        self._source = conn
        self._clock = clock or SystemClock()
        self._ids = ids or RandomIds()

    @property
    def _conn(self) -> sqlite3.Connection:
        source = self._source
        return source if isinstance(source, sqlite3.Connection) else source.connection

    def _now(self) -> str:
        return iso_utc(self._clock.now())

    def _insert(self, table: str, **values: Any) -> sqlite3.Cursor:
        """INSERT one row; the table and column names are ours, only the values come from callers."""
        marks = ",".join("?" * len(values))
        return self._conn.execute(f"INSERT INTO {table}({', '.join(values)}) VALUES ({marks})", tuple(values.values()))

    # -- sessions ----------------------------------------------------------

    def create_session(
        self,
        *,
        title: str = "",
        workspace: str | None = None,
        parent_id: str | None = None,
        fork_message_id: int | None = None,
    ) -> SessionRecord:
        """Insert a new session; a title over :data:`MAX_TITLE_CHARS` is refused (:class:`BadBodyError`)."""
        _check_title(title)
        sid = self._ids.new("ses")
        now = self._now()
        self._insert(
            "sessions",
            id=sid,
            title=title,
            created_at=now,
            updated_at=now,
            parent_id=parent_id,
            fork_message_id=fork_message_id,
            workspace=workspace,
        )
        return self.get_session(sid)

    def get_session(self, session_id: str) -> SessionRecord:
        """The session ``session_id``; :class:`NotFoundError` when absent."""
        row = self._conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no session {session_id!r}; `session.list` shows the known ones", field="session")
        return SessionRecord(**dict(row))

    def list_sessions(self, limit: int = 50) -> list[SessionRecord]:
        """Sessions, most recently updated first."""
        rows = self._conn.execute(
            "SELECT * FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?", (max(1, min(limit, 1000)),)
        )
        return [SessionRecord(**dict(r)) for r in rows]

    def touch(self, session_id: str, *, add_cost: float = 0.0) -> SessionRecord:
        """Mark a session updated, adding ``add_cost`` to its running cost; returns the updated record."""
        self._conn.execute(
            "UPDATE sessions SET updated_at = ?, cost = cost + ? WHERE id = ?", (self._now(), add_cost, session_id)
        )
        return self.get_session(session_id)

    def fork(self, session_id: str, *, message_id: int | None = None, title: str = "") -> SessionRecord:
        """Copy messages up to ``message_id`` (inclusive; default all) into a new session."""
        _check_title(title)
        parent = self.get_session(session_id)
        messages = self.messages(session_id)
        if message_id is not None:
            if not any(m.id == message_id for m in messages):
                raise NotFoundError(f"message {message_id} is not in session {session_id!r}", field="message_id")
            messages = [m for m in messages if m.id <= message_id]
        fork_point = messages[-1].id if messages else None
        with self.transaction():
            child = self.create_session(
                title=title or (f"{parent.title[: MAX_TITLE_CHARS - 7]} (fork)" if parent.title else "fork"),
                workspace=parent.workspace,
                parent_id=parent.id,
                fork_message_id=fork_point,
            )
            for m in messages:
                self.add_message(
                    child.id,
                    m.role,
                    m.content,
                    turn_id=m.turn_id,
                    tool_calls=m.tool_calls,
                    tool_call_id=m.tool_call_id,
                    status=m.status,
                )
        return child

    # -- messages ----------------------------------------------------------

    def add_message(
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
        """Store one message and index its text, tool calls and tool results for search."""
        calls = list(tool_calls)
        cur = self._insert(
            "messages",
            session_id=session_id,
            turn_id=turn_id,
            role=role,
            content=content,
            tool_calls=json.dumps(calls, ensure_ascii=False),
            tool_call_id=tool_call_id,
            status=status,
            created_at=self._now(),
        )
        mid = int(cur.lastrowid or 0)
        indexed = content + "".join(
            f"\n{c.get('name', '')} {json.dumps(c.get('arguments', {}), ensure_ascii=False)}" for c in calls
        )
        self._insert("messages_fts", rowid=mid, text=indexed, session_id=session_id)
        return MessageRecord(mid, session_id, turn_id, role, content, calls, tool_call_id, status)

    def messages(self, session_id: str, *, include_undone: bool = False) -> list[MessageRecord]:
        """The conversation of a session in order (undone turns left out)."""
        sql = (
            "SELECT * FROM messages WHERE session_id = ?"
            + ("" if include_undone else " AND undone = 0")
            + " ORDER BY id"
        )
        rows = self._conn.execute(sql, (session_id,))
        return [_record(MessageRecord, r, tool_calls=json.loads(r["tool_calls"])) for r in rows]

    def dangling_tool_calls(self, session_id: str) -> list[tuple[MessageRecord, dict[str, Any]]]:
        """Tool calls of assistant messages that never got a tool result (a crash mid-round)."""
        messages = self.messages(session_id)
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        return [
            (m, call)
            for m in messages
            if m.role == "assistant"
            for call in m.tool_calls
            if call.get("id") not in answered
        ]

    def undo(self, session_id: str, turns: int) -> list[str]:
        """Hide the last ``turns`` turns from the conversation; returns their ids."""
        if turns < 1:
            raise BadBodyError("turns must be at least 1", field="turns")
        rows = self._conn.execute(
            "SELECT DISTINCT turn_id FROM messages WHERE session_id = ? AND undone = 0"
            " AND turn_id IS NOT NULL ORDER BY id DESC",
            (session_id,),
        ).fetchall()
        # DISTINCT with ORDER BY id keeps the first occurrence order per SQLite; dedupe in Python to be sure.
        chosen = list(dict.fromkeys(r[0] for r in rows))[:turns]
        if chosen:
            marks = ",".join("?" * len(chosen))
            self._conn.execute(
                f"UPDATE messages SET undone = 1 WHERE session_id = ? AND turn_id IN ({marks})", (session_id, *chosen)
            )
        return chosen

    # -- turns -------------------------------------------------------------

    def add_turn(self, session_id: str, text: str, mode: str, *, status: str = "queued") -> TurnRecord:
        """Record a turn (queued or running)."""
        tid = self._ids.new("turn")
        now = self._now()
        self._insert(
            "turns", id=tid, session_id=session_id, text=text, mode=mode, status=status, created_at=now, updated_at=now
        )
        return TurnRecord(tid, session_id, text, mode, status, None)

    def set_turn_status(self, turn_id: str, status: str, stop_reason: str | None = None) -> None:
        """Move a turn to ``status``."""
        self._conn.execute(
            "UPDATE turns SET status = ?, stop_reason = ?, updated_at = ? WHERE id = ?",
            (status, stop_reason, self._now(), turn_id),
        )

    def turns(self, session_id: str, *, status: str | None = None) -> list[TurnRecord]:
        """Turns of a session in creation order, optionally of one status."""
        sql = "SELECT id, session_id, text, mode, status, stop_reason FROM turns WHERE session_id = ?"
        sql += ("" if status is None else " AND status = ?") + " ORDER BY created_at, rowid"
        args = (session_id,) if status is None else (session_id, status)
        return [TurnRecord(*r) for r in self._conn.execute(sql, args)]

    # -- approvals ---------------------------------------------------------

    def add_approval(
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
        """Open an approval request."""
        aid = self._ids.new("apr")
        self._insert(
            "approvals",
            id=aid,
            session_id=session_id,
            turn_id=turn_id,
            call_id=call_id,
            tool=tool,
            summary=summary,
            risk=risk,
            arguments=json.dumps(arguments, ensure_ascii=False),
            created_at=self._now(),
        )
        return self.get_approval(aid)

    def get_approval(self, approval_id: str) -> ApprovalRecord:
        """The approval ``approval_id``; :class:`NotFoundError` when absent."""
        row = self._conn.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no approval request {approval_id!r}", field="request_id")
        return _approval(row)

    def resolve_approval(self, approval_id: str, status: str, reason: str = "") -> ApprovalRecord:
        """Answer an open request; a second answer is a :class:`ConflictError` (first answer wins)."""
        cur = self._conn.execute(
            "UPDATE approvals SET status = ?, reason = ?, resolved_at = ? WHERE id = ? AND status = 'open'",
            (status, reason, self._now(), approval_id),
        )
        if cur.rowcount == 0:
            current = self.get_approval(approval_id)
            raise ConflictError(f"approval {approval_id!r} was already answered ({current.status})", field="request_id")
        return self.get_approval(approval_id)

    def open_approvals(self, session_id: str | None = None) -> list[ApprovalRecord]:
        """Requests still waiting for an answer."""
        sql = "SELECT * FROM approvals WHERE status = 'open'" + (" AND session_id = ?" if session_id else "")
        return [_approval(r) for r in self._conn.execute(sql, (session_id,) if session_id else ())]

    # -- search ------------------------------------------------------------

    def search(self, query: str, *, limit: int = 20, session_id: str | None = None) -> list[SearchHit]:
        """Full-text search; every word is quoted, so any input is a safe query."""
        terms = [t for t in query.replace("\x00", " ").split() if t]
        if not terms:
            return []
        fts_query = " ".join('"' + t.replace('"', '""') + '"' for t in terms[:32])
        sql = (
            "SELECT m.session_id, m.id, m.role, snippet(messages_fts, 0, '[', ']', '…', 12) AS snip"
            " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid WHERE messages_fts MATCH ?"
            " AND m.undone = 0" + (" AND m.session_id = ?" if session_id else "") + " ORDER BY rank LIMIT ?"
        )
        args = [fts_query, *([session_id] if session_id else []), max(1, min(limit, 200))]
        return [SearchHit(r[0], r[1], r[2], r[3]) for r in self._conn.execute(sql, args)]

    # -- transactions ------------------------------------------------------

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """``with store.transaction():`` groups writes into one commit (inside an open one, it joins it)."""
        return write_transaction(self._conn)


def _approval(row: sqlite3.Row) -> ApprovalRecord:
    return _record(ApprovalRecord, row, arguments=json.loads(row["arguments"]))


def _record(cls: type[_R], row: sqlite3.Row, **decoded: Any) -> _R:
    """A record dataclass from the row's columns of the same names; ``decoded`` replaces JSON columns."""
    return cls(**{**{f.name: row[f.name] for f in fields(cls)}, **decoded})
