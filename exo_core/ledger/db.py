"""The ledger's SQLite file: connection settings, schema and append-only triggers.

Journal mode. Python 3.11 here bundles SQLite 3.40, which has a known WAL
corruption bug when several connections checkpoint at once (fixed in
3.51.3). Several processes append to one ledger (exod, the CLI, a sync), and
nothing can make exactly one of them the checkpointer, so the ledger does not
use WAL at all: it uses a rollback journal (``journal_mode=TRUNCATE``) with
``synchronous=FULL``. Every commit syncs the journal and the database before
returning, so an append the caller was told about survives a power cut. A
file that arrives in WAL mode (say, copied from elsewhere) is switched back
when opened; ``tests/ledger/test_durability.py`` checks that no ``-wal`` file
ever appears.

Writers take the write lock up front with ``BEGIN IMMEDIATE`` so two
processes never read the same chain head and race to extend it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from exo_core.errors import ClosedResourceError, CorruptDataError, StorageError
from exo_core.private_files import private_file

__all__ = ["connect", "create_schema", "Guarded", "TRIGGER_NAMES", "BUSY_TIMEOUT_MS", "SCHEMA_VERSION"]

SCHEMA_VERSION = "1"
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS segments (
    seg       INTEGER PRIMARY KEY,   -- 0 is this copy's main chain
    base_seg  INTEGER,               -- NULL for 0, else where the fork branches off
    base_pos  INTEGER NOT NULL,      -- height of the shared ancestor (0 = genesis)
    origin    TEXT NOT NULL,         -- free text: where the entries came from
    ts        INTEGER NOT NULL       -- when this copy first saw the fork (ms)
);
CREATE TABLE IF NOT EXISTS entries (
    n       INTEGER PRIMARY KEY,     -- local arrival order, dense from 1
    seg     INTEGER NOT NULL REFERENCES segments(seg),
    pos     INTEGER NOT NULL,        -- height on its chain, 1-based
    id      TEXT NOT NULL,
    prev    TEXT NOT NULL,
    chain   TEXT NOT NULL,
    author  TEXT NOT NULL,
    sig     BLOB NOT NULL,
    kind    TEXT NOT NULL,
    scope   TEXT NOT NULL,
    ts      INTEGER NOT NULL,
    idem    TEXT,
    content BLOB NOT NULL,
    UNIQUE (seg, pos),
    UNIQUE (chain)
);
CREATE INDEX IF NOT EXISTS entries_id ON entries(id);
CREATE INDEX IF NOT EXISTS entries_kind_ts ON entries(kind, ts);
CREATE INDEX IF NOT EXISTS entries_idem ON entries(idem) WHERE idem IS NOT NULL;
"""

# Append-only is enforced by the database, not by good manners: any UPDATE or
# DELETE on a ledger table aborts. verify() reports a ledger whose triggers
# were dropped, because that is how someone would edit it.
_GUARDED = tuple((table, op) for table in ("entries", "segments", "meta") for op in ("UPDATE", "DELETE"))
TRIGGER_NAMES = tuple(f"{table}_no_{op.lower()}" for table, op in _GUARDED)
_TRIGGERS = [
    f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
    f"BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: {op} on {table} refused'); END;"
    for table, op in _GUARDED
]


def connect(path: Path, *, create: bool, what: str = "ledger") -> sqlite3.Connection:
    """Open the ledger file (or another file ``what`` names in errors) with the durability settings above.

    ``create=False`` refuses a missing file (it would otherwise be created
    empty). Autocommit mode: every transaction is an explicit BEGIN.
    """
    uri = f"file:{path}?mode={'rwc' if create else 'rw'}"
    if create:
        # 0600 before SQLite sees it: its -journal file takes the database's mode (docs/security.md, "Private files").
        private_file(path)
    try:
        # check_same_thread=False: Guarded serialises use with its own lock. The timeout is SQLite's busy timeout.
        conn = sqlite3.connect(
            uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {what} {path}: {exc}") from exc
    try:
        mode = conn.execute("PRAGMA journal_mode=TRUNCATE").fetchone()[0]
        if str(mode).lower() != "truncate":
            raise StorageError(f"{what} {path}: could not leave journal mode {mode!r}")
        # wal_autocheckpoint=0: belt and braces, never checkpoint.
        conn.executescript("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA wal_autocheckpoint=0;")
    except sqlite3.DatabaseError as exc:
        conn.close()
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise StorageError(f"{what} {path} is locked by another process: {exc}") from exc
        raise CorruptDataError(f"{path} is not a usable SQLite {what}: {exc}") from exc
    return conn


def create_schema(conn: sqlite3.Connection) -> None:
    """Create tables, indexes and triggers if missing (inside the caller's transaction)."""
    for statement in (*_SCHEMA.split(";"), *_TRIGGERS):  # the piece after the last ';' is blank: a no-op
        conn.execute(statement)


class Guarded:
    """One connection shared by threads: a re-entrant lock and nestable write transactions.

    ``what`` names the file in errors (``ledger``, ``checkpoint book``).
    """

    __slots__ = ("_conn", "path", "lock", "depth", "what")

    def __init__(self, conn: sqlite3.Connection, path: Path, what: str = "ledger") -> None:
        self._conn: sqlite3.Connection | None = conn
        self.path = path
        self.what = what
        self.lock = threading.RLock()
        self.depth = 0  # nesting of write_txn() in the lock-holding thread

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection; :class:`ClosedResourceError` after :meth:`close`."""
        if self._conn is None:
            raise ClosedResourceError(f"{self.what} {self.path} is closed")
        return self._conn

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def query(self, sql: str, args: Sequence[object] = ()) -> list[Any]:
        """Run one statement under the lock and fetch all rows; errors become StorageError."""
        with self.lock:
            try:
                return self.conn.execute(sql, tuple(args)).fetchall()
            except sqlite3.DatabaseError as exc:
                raise StorageError(f"cannot read {self.what} {self.path}: {exc}") from exc

    def backup_to(self, target: sqlite3.Connection) -> None:
        """Copy the whole database into ``target`` in one backup step.

        One step (pages=-1) holds a single read lock for the whole copy, so the
        copy is one committed state. (Inside our own BEGIN IMMEDIATE the backup
        would wait on itself forever: it needs its own read transaction.)
        """
        with self.lock:
            self.conn.backup(target, pages=-1)

    @contextlib.contextmanager
    def write_txn(self) -> Iterator[sqlite3.Connection]:
        """Lock + BEGIN IMMEDIATE; commit on success, roll back on any error.

        Nests: an inner write transaction in the same thread joins the outer one
        (only the outermost commits), so a caller can read the head and append
        atomically. An error inside must propagate to the outermost level.
        """
        with self.lock:
            conn = self.conn
            if self.depth == 0:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    raise StorageError(f"cannot lock {self.what} {self.path} for writing: {exc}") from exc
            self.depth += 1
            try:
                yield conn
            except BaseException as exc:
                self.depth -= 1
                if self.depth == 0:
                    # SQLite may already have rolled back (e.g. after SQLITE_FULL), so
                    # ROLLBACK can fail with "no transaction is active"; the original
                    # error is the one worth reporting, so that failure is dropped.
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    if isinstance(exc, sqlite3.Error):
                        raise StorageError(f"{self.what} {self.path}: {exc}") from exc
                raise
            self.depth -= 1
            if self.depth == 0:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as err:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise StorageError(f"cannot commit to {self.what} {self.path}: {err}") from err
                self.committed()

    def committed(self) -> None:
        """Called after each outermost commit, still under the lock; subclasses record what they must."""
