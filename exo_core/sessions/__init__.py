"""Sessions in SQLite: sessions, messages, turns, approvals, events, search."""

from exo_core.sessions.db import SCHEMA_VERSION, open_reader, open_writer
from exo_core.sessions.facade import AsyncSessions
from exo_core.sessions.session_store import (
    ApprovalRecord,
    MessageRecord,
    SearchHit,
    SessionRecord,
    SessionStore,
    TurnRecord,
)
from exo_core.sessions.worker import DbWorker

__all__ = [
    "SCHEMA_VERSION",
    "open_reader",
    "open_writer",
    "DbWorker",
    "AsyncSessions",
    "SessionStore",
    "SessionRecord",
    "MessageRecord",
    "TurnRecord",
    "ApprovalRecord",
    "SearchHit",
]
