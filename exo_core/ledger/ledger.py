"""The Ledger: open a ledger file, append signed entries, read them back.

One :class:`Ledger` object wraps one SQLite connection and is safe to share
between threads (a lock serialises use). Several processes may append to the
same file at once: each append holds the database write lock
(``BEGIN IMMEDIATE``) from reading the chain head to commit.

Local appends always extend segment 0, this copy's main chain. Other segments
exist only after :mod:`.chain_sync` imported a fork from another copy.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from exo_core.errors import BadBodyError, ConflictError, CorruptDataError, NotFoundError, StorageError, UsageError
from exo_core.ledger.canonical import normalize_json
from exo_core.ledger.chain_check import VerifyReport, verify_ledger
from exo_core.ledger.db import Guarded, connect, create_schema
from exo_core.ledger.entry import (
    ROW_COLUMNS,
    NewEntry,
    StoredEntry,
    build_content,
    check_refs,
    decode_row,
    genesis_hash,
    seal,
)
from exo_core.ledger.keys import Signer

__all__ = ["Ledger", "Head", "Segment", "HeadWitness", "LEDGER_FILE_NAME", "insert_entry"]

_log = logging.getLogger(__name__)

LEDGER_FILE_NAME = "ledger.sqlite"
_PAGE = 512  # rows per read; bounds memory and lock hold time while iterating
_LEDGER_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")


@dataclass(frozen=True, slots=True)
class Head:
    """The tip of one chain: its height (``size``) and chain hash."""

    size: int
    chain: str


@dataclass(frozen=True, slots=True)
class Segment:
    """One chain segment: 0 is main; others are forks imported by sync."""

    seg: int
    base_seg: int | None
    base_pos: int
    origin: str
    ts: int
    head: Head
    count: int


class HeadWitness(Protocol):
    """Keeps a signed record of each main-chain head a writer committed (outside the store).

    The Exo home's :class:`~exo_core.ledger.witness.HomeWitness` is the real one: with it,
    ``verify`` fails a copy that lost entries this machine wrote, even after the last checkpoint.
    """

    def saw(self, ledger: Ledger) -> None:
        """Record ``ledger``'s current main-chain head (called after a commit, under its lock)."""
        ...

    def close(self) -> None:
        """Release what the witness holds open; a later :meth:`saw` may open it again."""
        ...


def insert_entry(conn: sqlite3.Connection, seg: int, pos: int, entry: StoredEntry) -> int:
    """Store ``entry`` at height ``pos`` of segment ``seg`` (in the caller's write transaction); its ``n``."""
    cur = conn.execute(
        "INSERT INTO entries(seg, pos, id, prev, chain, author, sig, kind, scope, ts, idem, content) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            seg,
            pos,
            entry.id,
            entry.prev,
            entry.chain,
            entry.author,
            entry.sig,
            entry.kind,
            entry.scope,
            entry.ts,
            entry.idem,
            entry.content,
        ),
    )
    return int(cur.lastrowid or 0)


class Ledger(Guarded):
    """A signed, hash-chained, append-only ledger in one SQLite file.

    Open with :meth:`open` (or :meth:`open_store` for ``<store>/ledger.sqlite``).
    Without a ``signer`` the ledger is read-only for this object. The guarded
    connection gives :meth:`query`, :meth:`write_txn`, :meth:`backup_to` and
    :meth:`close` (later use raises :class:`ClosedResourceError`).
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path,
        ledger_id: str,
        *,
        signer: Signer | None,
        scope: str,
        clock: Callable[[], float],
        witness: HeadWitness | None = None,
    ) -> None:
        super().__init__(conn, path)
        self.witness = witness
        self.ledger_id = ledger_id
        self.genesis = genesis_hash(ledger_id)
        self.signer = signer
        self.scope = scope
        self.clock = clock

    # -- opening -----------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        signer: Signer | None = None,
        create: bool = False,
        ledger_id: str | None = None,
        scope: str = "person",
        clock: Callable[[], float] = time.time,
        witness: HeadWitness | None = None,
    ) -> Ledger:
        """Open (``create=True``: create if missing) the ledger file at ``path``.

        ``ledger_id`` names a new ledger (default: a random UUID); for an existing
        file it must match or :class:`ConflictError` is raised. ``clock`` gives
        epoch seconds for entry timestamps; ``scope`` is the default scope of
        appends. ``witness`` records each committed head (needs a ``signer``).
        """
        path = Path(path)
        if not create and not path.exists():
            raise NotFoundError(f"no ledger at {path}")
        conn = connect(path, create=create)
        try:
            stored = cls._init_meta(conn, ledger_id if ledger_id is not None else uuid.uuid4().hex, create)
            if ledger_id is not None and stored != ledger_id:
                raise ConflictError(f"{path} is ledger {stored!r}, not {ledger_id!r}")
        except BaseException:
            conn.close()
            raise
        return cls(conn, path, stored, signer=signer, scope=scope, clock=clock, witness=witness)

    @classmethod
    def open_store(cls, store_dir: str | Path, **kwargs: Any) -> Ledger:
        """Open ``<store_dir>/ledger.sqlite``; keyword arguments as :meth:`open`."""
        return cls.open(Path(store_dir) / LEDGER_FILE_NAME, **kwargs)

    @staticmethod
    def _init_meta(conn: sqlite3.Connection, new_ledger_id: str, create: bool) -> str:
        if not new_ledger_id or not set(new_ledger_id) <= _LEDGER_ID_CHARS or len(new_ledger_id) > 128:
            raise BadBodyError(f"bad ledger id {new_ledger_id!r}", field="ledger_id")
        try:
            # Creating takes the write lock so two processes cannot both create
            # the schema; opening an existing ledger only reads.
            conn.execute("BEGIN IMMEDIATE" if create else "BEGIN")
            try:
                if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone():
                    if not create:
                        raise CorruptDataError("file has no ledger tables")
                    # Schema only for a new file: re-running CREATE ... IF NOT
                    # EXISTS on an existing ledger would silently restore a
                    # dropped append-only trigger and hide the evidence from verify().
                    create_schema(conn)
                    conn.execute("INSERT INTO meta(key, value) VALUES ('format', '1')")
                    conn.execute("INSERT INTO meta(key, value) VALUES ('ledger_id', ?)", (new_ledger_id,))
                    conn.execute(
                        "INSERT INTO segments(seg, base_seg, base_pos, origin, ts) VALUES (0, NULL, 0, 'main', 0)"
                    )
                row = conn.execute("SELECT CAST(value AS BLOB) FROM meta WHERE key='ledger_id'").fetchone()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise CorruptDataError(f"cannot read ledger metadata: {exc}") from exc
        if row is None:
            raise CorruptDataError("ledger metadata has no ledger_id")
        try:
            return bytes(row[0]).decode("utf-8")
        except (TypeError, UnicodeDecodeError) as exc:
            raise CorruptDataError("ledger id in meta is not UTF-8 text") from exc

    def committed(self) -> None:
        """After every committed write (appends, imports): let the witness sign the new head."""
        if self.witness is None or self.signer is None:
            return
        try:
            self.witness.saw(self)
        except StorageError as exc:
            # The entries are committed; a missing head record only weakens rollback detection
            # until the next write records a newer head, so the append is not failed for it.
            _log.warning("ledger %s: could not record the head this machine wrote: %s", self.path, exc.message)

    def close(self) -> None:
        """Close the connection and the witness's book (idempotent)."""
        super().close()
        if self.witness is not None:
            self.witness.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- appending -----------------------------------------------------------
    def append(
        self,
        kind: str,
        body: Mapping[str, Any],
        *,
        refs: Sequence[str] = (),
        scope: str | None = None,
        idem: str | None = None,
    ) -> StoredEntry:
        """Append one signed entry to the main chain and return it as stored.

        When it returns, the entry is on disk (synchronous=FULL). With ``idem``,
        a retry whose kind, scope, refs and body match the first call returns
        the first entry and writes nothing; a mismatch is a ConflictError.
        Unknown kinds, bad bodies and refs to entries that do not exist raise
        :class:`BadBodyError` and write nothing.
        """
        return self.append_many([NewEntry(kind, body, tuple(refs), scope, idem)])[0]

    def append_many(self, items: Sequence[NewEntry]) -> list[StoredEntry]:
        """Append several entries in one transaction (one disk sync for all)."""
        signer = self.signer
        if signer is None:
            raise UsageError(f"ledger {self.path} was opened without a signing key; cannot append")
        with self.write_txn() as conn:
            size, head = self._head_row(conn, 0)
            last = conn.execute("SELECT ts FROM entries WHERE seg=0 AND pos=?", (size,)).fetchone()
            last_ts = int(last[0]) if last is not None else -1
            out: list[StoredEntry] = []
            for item in items:
                scope = item.scope if item.scope is not None else self.scope
                body = normalize_json(item.body)
                if item.idem is not None:
                    again = self._idem_match(conn, item, scope, body)
                    if again is not None:
                        out.append(again)
                        continue
                for i, ref in enumerate(check_refs(item.refs)):
                    if not conn.execute("SELECT 1 FROM entries WHERE id=?", (ref,)).fetchone():
                        raise BadBodyError(f"refs[{i}] {ref} names no entry in this ledger", field="refs")
                # Strictly increasing along the main chain: a burst inside one
                # millisecond (or a clock stepped back) gets consecutive ms, so
                # two appends never share content and ``--since`` never misorders.
                ts = max(int(self.clock() * 1000), last_ts + 1)
                content = build_content(
                    kind=item.kind, scope=scope, author=signer.key_id, ts=ts, refs=item.refs, body=body, idem=item.idem
                )
                entry_id, chain, sig = seal(content, head, signer)
                if conn.execute("SELECT n FROM entries WHERE id=?", (entry_id,)).fetchone() is not None:
                    # Unreachable on main (ts strictly increases); an imported fork
                    # entry could only match if the same key signed the same
                    # content at the same ms. Refuse rather than store a twin id.
                    raise ConflictError(
                        f"an identical entry (same kind, scope, author, time, refs and body) "
                        f"is already stored as {entry_id}; pass an idempotency key for retries"
                    )
                size += 1
                entry = StoredEntry(
                    n=0,
                    seg=0,
                    pos=size,
                    id=entry_id,
                    prev=head,
                    chain=chain,
                    author=signer.key_id,
                    sig=sig,
                    kind=item.kind,
                    scope=scope,
                    ts=ts,
                    idem=item.idem,
                    refs=tuple(item.refs),
                    body=body,
                    content=content,
                )
                out.append(dataclasses.replace(entry, n=insert_entry(conn, 0, size, entry)))
                head, last_ts = chain, ts
        return out

    def _idem_match(self, conn: sqlite3.Connection, item: NewEntry, scope: str, body: Any) -> StoredEntry | None:
        row = conn.execute(f"SELECT {ROW_COLUMNS} FROM entries WHERE idem=? AND seg=0", (item.idem,)).fetchone()
        if row is None:
            return None
        first = decode_row(row)
        if (first.kind, first.scope, first.refs, first.body) != (item.kind, scope, tuple(item.refs), body):
            raise ConflictError(f"idempotency key {item.idem!r} was already used for a different entry ({first.id})")
        return first

    # -- reading -------------------------------------------------------------
    def _head_row(self, conn: sqlite3.Connection, seg: int) -> tuple[int, str]:
        row = conn.execute(
            "SELECT pos, CAST(chain AS BLOB) FROM entries WHERE seg=? ORDER BY pos DESC LIMIT 1", (seg,)
        ).fetchone()
        if row is None:
            if seg == 0:
                return 0, self.genesis
            base = conn.execute("SELECT base_seg, base_pos FROM segments WHERE seg=?", (seg,)).fetchone()
            if base is None:
                raise NotFoundError(f"no segment {seg}")
            return base[1], self.chain_at(int(base[0]), int(base[1]))
        return int(row[0]), bytes(row[1]).decode("ascii", "replace")

    def chain_at(self, seg: int, pos: int) -> str:
        """The chain hash at height ``pos`` of segment ``seg`` (genesis at 0)."""
        if pos == 0:
            return self.genesis
        rows = self.query("SELECT CAST(chain AS BLOB) FROM entries WHERE seg=? AND pos=?", (seg, pos))
        if not rows:
            raise NotFoundError(f"no entry at segment {seg} height {pos}")
        return bytes(rows[0][0]).decode("ascii", "replace")

    def head(self, seg: int = 0) -> Head:
        """The tip of segment ``seg`` (default: the main chain)."""
        with self.lock:
            return Head(*self._head_row(self.conn, seg))

    def get(self, ref: str) -> StoredEntry:
        """The entry with id ``ref`` or a unique id prefix of at least 6 hex digits."""
        if not isinstance(ref, str) or len(ref) < 6 or len(ref) > 64 or any(c not in "0123456789abcdef" for c in ref):
            raise UsageError(f"{ref!r} is not an entry id or id prefix (6-64 lower-case hex digits)")
        # 'g' sorts after every hex digit: a prefix range scan.
        rows = self.query(
            f"SELECT {ROW_COLUMNS} FROM entries WHERE id >= ? AND id < ? ORDER BY n LIMIT 3", (ref, ref + "g")
        )
        if not rows:
            raise NotFoundError(f"no ledger entry {ref}")
        if len({decode_row(r).id for r in rows}) > 1:
            raise UsageError(f"id prefix {ref} is ambiguous; give more digits")
        return decode_row(rows[0])

    def max_n(self) -> int:
        """The highest arrival number (0 when empty)."""
        return int(self.query("SELECT coalesce(max(n), 0) FROM entries")[0][0])

    def count(self) -> int:
        """Number of stored entries across all segments."""
        return int(self.query("SELECT count(*) FROM entries")[0][0])

    def entries(
        self,
        *,
        kind: str | None = None,
        scope: str | None = None,
        seg: int | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        after_n: int = 0,
        limit: int | None = None,
    ) -> Iterator[StoredEntry]:
        """Entries in local arrival order (``n``), filtered; all segments unless ``seg``.

        Arrival order is causal (``prev`` and refs arrive first); paged, so appending meanwhile is safe."""
        filters = (
            ("kind = ?", kind),
            ("scope = ?", scope),
            ("seg = ?", seg),
            ("ts >= ?", since_ms),
            ("ts < ?", until_ms),
        )
        where = {clause: value for clause, value in filters if value is not None}
        yield from map(decode_row, self.raw_rows(where, after_n=after_n, limit=limit))

    def raw_rows(
        self, where: Mapping[str, object] | None = None, *, after_n: int = 0, limit: int | None = None
    ) -> Iterator[tuple[object, ...]]:
        """Undecoded rows (:data:`ROW_COLUMNS`) above ``after_n`` in arrival order, ``where`` clauses holding.

        Paged, so appending meanwhile is safe; ``verify`` reads these to see every defect itself."""
        clauses, args = ["n > ?", *(where or {})], list((where or {}).values())
        last, left = after_n, limit
        while left is None or left > 0:
            page = _PAGE if left is None else min(_PAGE, left)
            rows = self.query(
                f"SELECT {ROW_COLUMNS} FROM entries WHERE {' AND '.join(clauses)} ORDER BY n LIMIT ?",
                (last, *args, page),
            )
            for row in rows:
                last = row[0] if isinstance(row[0], int) else last
                yield tuple(row)
            if left is not None:
                left -= len(rows)
            if len(rows) < page:
                return

    def verify(self, **kwargs: Any) -> VerifyReport:
        """Check the whole ledger; see :func:`exo_core.ledger.chain_check.verify_ledger` for arguments."""
        return verify_ledger(self, **kwargs)

    def segments(self) -> list[Segment]:
        """Every segment with its base, origin, head and entry count."""
        rows = self.query(
            "SELECT s.seg, s.base_seg, s.base_pos, CAST(s.origin AS BLOB), s.ts, count(e.n) "
            "FROM segments s LEFT JOIN entries e ON e.seg = s.seg GROUP BY s.seg ORDER BY s.seg"
        )
        return [
            Segment(r[0], r[1], r[2], bytes(r[3]).decode("utf-8", "replace"), r[4], self.head(r[0]), r[5]) for r in rows
        ]
