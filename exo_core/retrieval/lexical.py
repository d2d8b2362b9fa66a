"""The document index: a ``docs`` table and its SQLite FTS5 full-text twin, ranked by BM25.

Columns are weighted as docs/retrieval.md says: title 3, summary 2, load_when 2, tags 1,
body 1 (FTS5's ``bm25()`` with per-column weights; the Porter stemmer over
``unicode61``). The file lives in ``<store>/indexes/`` and is a view: rows
are keyed by document id and content hash, :meth:`DocIndex.sync` touches
only what changed, and a rebuilt index ranks identically (ties by id).

Any query text is safe: it is reduced to its word tokens, each quoted as an
FTS5 string and joined with ``OR``, so no FTS5 syntax can come from a query.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

from exo_core.errors import StorageError
from exo_core.retrieval.docs import Doc

__all__ = ["DocIndex", "match_expression", "COLUMN_WEIGHTS", "STOPWORDS"]

COLUMN_WEIGHTS = (3.0, 2.0, 2.0, 1.0, 1.0)  # title, summary, load_when, tags, body
_WORD = re.compile(r"\w+")
STOPWORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her "
    "here hers herself him himself his how i if in into is it its itself just me more most my myself of off on "
    "once only or other our ours ourselves out over own same she should so some such than that the their theirs "
    "them themselves then there these they this those through to too under until up very was we were what when "
    "where which while who whom why will with would you your yours yourself yourselves".split()
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, hash TEXT NOT NULL,
    url TEXT, private INTEGER NOT NULL, valid_until TEXT, links TEXT NOT NULL, session TEXT
);
CREATE INDEX IF NOT EXISTS docs_session ON docs(session);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    title, summary, load_when, tags, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


def match_expression(query: str, *, limit: int = 32) -> str | None:
    """The FTS5 query for ``query``: its distinct words (stop words dropped unless
    nothing else is left), quoted and OR-ed; ``None`` when it has no words."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    kept = [w for w in words if w not in STOPWORDS] or words
    return " OR ".join(f'"{w}"' for w in kept[:limit]) or None


class DocIndex:
    """Documents and their full-text index in one SQLite file (``:memory:`` for a scratch index)."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        if isinstance(path, Path):
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"{path}: not a usable retrieval index ({exc}); delete it to rebuild") from exc
        self._lock = threading.RLock()

    def close(self) -> None:
        """Close the database."""
        self.conn.close()

    def sync(self, docs: Iterable[Doc], *, prune: bool = True) -> tuple[int, int]:
        """Make the index hold exactly ``docs`` (or add to it without ``prune``).

        Returns ``(written, removed)``; unchanged documents are not touched.
        """
        with self._lock:
            have = dict(self.conn.execute("SELECT id, hash FROM docs"))
            wanted = {d.id: d for d in docs}
            fresh = [d for d in wanted.values() if have.get(d.id) != d.hash]
            gone = [i for i in have if i not in wanted] if prune else []
            self.conn.execute("BEGIN")
            try:
                for doc_id in gone + [d.id for d in fresh if d.id in have]:
                    self.conn.execute("DELETE FROM fts WHERE rowid = (SELECT rowid FROM docs WHERE id = ?)", (doc_id,))
                    self.conn.execute("DELETE FROM docs WHERE id = ?", (doc_id,))
                for d in fresh:
                    cur = self.conn.execute(
                        "INSERT INTO docs(id, kind, hash, url, private, valid_until, links, session) "
                        "VALUES (?,?,?,?,?,?,?,?)",
                        (d.id, d.kind, d.hash, d.url, int(d.private), d.valid_until, json.dumps(d.links), d.session),
                    )
                    self.conn.execute(
                        "INSERT INTO fts(rowid, title, summary, load_when, tags, body) VALUES (?,?,?,?,?,?)",
                        (cur.lastrowid, d.title, d.summary, d.load_when, d.tags, d.body),
                    )
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self.conn.execute("ROLLBACK")
                raise StorageError(f"{self.path}: cannot update the retrieval index ({exc})") from exc
            return len(fresh), len(gone)

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` best documents by weighted BM25, best first: ``(id, score)``, higher is better."""
        expression = match_expression(query)
        if expression is None or limit <= 0:
            return []
        weights = ", ".join(str(w) for w in COLUMN_WEIGHTS)
        with self._lock:
            rows = self.conn.execute(
                f"SELECT d.id, bm25(fts, {weights}) AS s FROM fts JOIN docs d ON d.rowid = fts.rowid "
                "WHERE fts MATCH ? ORDER BY s, d.id LIMIT ?",
                (expression, limit),
            ).fetchall()
        return [(doc_id, -score) for doc_id, score in rows]

    def get(self, ids: Sequence[str]) -> dict[str, Doc]:
        """The stored documents with these ids (missing ids are left out)."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT id, kind, title, summary, load_when, tags, body, url, private, valid_until, links, session "
                f"FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE id IN ({_marks(ids)})",
                list(ids),
            ).fetchall()
        return {row[0]: _doc_of(row) for row in rows}

    def session_turns(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """Every turn of the sessions the turns among ``ids`` belong to, by session, in message order."""
        with self._lock:  # a session's turn ids differ only in the message id: shorter ones first
            rows = self.conn.execute(
                "SELECT session, id FROM docs WHERE kind = 'turn' AND session IN (SELECT session "
                f"FROM docs WHERE kind = 'turn' AND id IN ({_marks(ids)})) "
                "ORDER BY session, length(id), id",
                list(ids),
            ).fetchall()
        return {session: [i for _, i in turns] for session, turns in groupby(rows, key=lambda row: row[0])}

    def node_links(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """Every node's links, for graph expansion and reverse (supersedes, contradicts) lookups."""
        with self._lock:
            rows = self.conn.execute("SELECT id, links FROM docs WHERE kind = 'node' AND links != '[]'").fetchall()
        return {i: _links(raw) for i, raw in rows}


def _links(raw: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(t), str(g)) for t, g in json.loads(raw))


def _marks(values: Sequence[str]) -> str:
    return ",".join("?" * len(values))  # SQLite takes an empty ``IN ()``: no row


def _doc_of(row: tuple[Any, ...]) -> Doc:
    """A :class:`Doc` from a row of the columns :meth:`DocIndex.get` selects, in that order."""
    doc_id, kind, title, summary, load_when, tags, body, url, private, valid_until, links, session = row
    return Doc(
        doc_id,
        kind,
        title,
        summary,
        load_when,
        tags,
        body,
        url,
        private=bool(private),
        valid_until=valid_until,
        links=_links(links),
        session=session,
    )
