"""``sessions.sqlite``: opening, pragmas and the schema with its migrations.

One file per Exo home holds sessions, messages, turns, approvals, summary
nodes, the numbered events and an FTS5 index. WAL mode so replay readers never
block the writer. Only the daemon's single writer connection checkpoints
(``wal_autocheckpoint`` is disabled on reader connections): the SQLite bundled
with Python 3.11 here (3.40) can corrupt a WAL when several connections
checkpoint at once.

Durability: ``synchronous=FULL`` by default, so an event a client saw survives
a power cut, not only a crash. The hub commits events in groups, so one fsync
covers every event emitted meanwhile.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from exo_core.errors import CorruptDataError, StorageError

__all__ = ["SCHEMA_VERSION", "open_writer", "open_reader", "write_transaction"]

SCHEMA_VERSION = 2

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        parent_id TEXT,
        fork_message_id INTEGER,
        workspace TEXT,
        cost REAL NOT NULL DEFAULT 0
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        turn_id TEXT,
        role TEXT NOT NULL CHECK (role IN ('system','user','assistant','tool')),
        content TEXT NOT NULL,
        tool_calls TEXT NOT NULL DEFAULT '[]',
        tool_call_id TEXT,
        status TEXT NOT NULL DEFAULT 'complete',
        undone INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );
    CREATE INDEX messages_by_session ON messages(session_id, id);
    CREATE TABLE turns (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        text TEXT NOT NULL,
        mode TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued','running','completed','interrupted','error')),
        stop_reason TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX turns_by_session ON turns(session_id, created_at);
    CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn_id TEXT,
        call_id TEXT,
        tool TEXT NOT NULL,
        summary TEXT NOT NULL,
        risk TEXT NOT NULL,
        arguments TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'open',
        reason TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        resolved_at TEXT
    );
    CREATE TABLE summary_nodes (
        session_id TEXT NOT NULL,
        level INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        first_message INTEGER NOT NULL,
        last_message INTEGER NOT NULL,
        text TEXT,
        status TEXT NOT NULL DEFAULT 'pending',
        lane TEXT NOT NULL DEFAULT 'live',
        attempts INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (session_id, level, idx)
    );
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        session TEXT,
        type TEXT NOT NULL,
        ts TEXT NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX events_by_session ON events(session, seq);
    CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
    CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, session_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2'
    );
    """,
    # 2: the context engine. Pending summaries are found by lane at start and
    # when a lane drains; imported conversations are remembered by their source
    # key so importing the same export twice adds nothing.
    2: """
    CREATE INDEX summary_nodes_by_status ON summary_nodes(status, lane, updated_at);
    CREATE TABLE imported_conversations (
        source_key TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id),
        messages INTEGER NOT NULL,
        imported_at TEXT NOT NULL
    );
    """,
}


def _connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    target = f"file:{path}?mode=ro" if readonly else path
    try:
        conn = sqlite3.connect(target, uri=readonly, isolation_level=None, check_same_thread=False, timeout=30.0)
    except sqlite3.Error as exc:
        hint = "" if readonly else "; check the folder exists and is writable"
        raise StorageError(f"cannot open {path}{' for reading' if readonly else ''}: {exc}{hint}") from exc
    conn.row_factory = sqlite3.Row
    return conn


def open_writer(path: Path, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """The daemon's one writer connection, migrated to :data:`SCHEMA_VERSION`."""
    if synchronous not in {"FULL", "NORMAL"}:
        raise StorageError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = _connect(path)
    try:
        conn.executescript(f"PRAGMA journal_mode=WAL; PRAGMA synchronous={synchronous}; PRAGMA foreign_keys=ON;")
        _migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise CorruptDataError(f"{path} is not a usable sessions database: {exc}") from exc
    return conn


def open_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection for replay and search; it never checkpoints."""
    conn = _connect(path, readonly=True)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    return conn


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StorageError(f"{path} has schema version {version}, newer than this core ({SCHEMA_VERSION}); upgrade Exo")
    for target in range(version + 1, SCHEMA_VERSION + 1):
        # Each step and its version bump commit together: a crash mid-migration
        # leaves the previous version, and the next start redoes the step.
        try:
            conn.executescript(f"BEGIN IMMEDIATE;\n{_MIGRATIONS[target]};\nPRAGMA user_version={target};\nCOMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error; inside an open transaction it joins it."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # a failed COMMIT may have ended it already
            conn.execute("ROLLBACK")
        raise
