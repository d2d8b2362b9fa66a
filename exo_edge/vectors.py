"""The vector index (docs/retrieval.md): int8 rows in SQLite, searched by a flat numpy scan.

One row per document: ``id``, the ``hash`` of the text that was embedded,
the embedder's ``model`` id, ``dims`` and the int8 ``vec``. :meth:`sync`
embeds only what is new or changed (a text already embedded under another
id is copied, never embedded twice); a row from another model or of other
dimensions triggers a clean rebuild. The index lives in
``<store>/indexes/vectors.sqlite`` and is a view: deleting it and syncing
again gives the same rows (the int8 embedder is deterministic per text).

Search loads the int8 matrix once (and again after a sync changed it) and
scores the cosine of each row with the query: ``rows @ q / |row|``. No vector
server: 100,000 rows of 384 bytes are 37 MB.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.errors import StorageError
from exo_core.seams.embedding import IdentifiedEmbedder

if TYPE_CHECKING:
    import numpy as np

__all__ = ["VectorIndex", "SyncCounts"]

_BLOCK = 512  # rows per float block: stays in cache (measured: 8192 was ~5x slower)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    id    TEXT PRIMARY KEY,
    hash  TEXT NOT NULL,
    model TEXT NOT NULL,
    dims  INTEGER NOT NULL,
    vec   BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_hash ON vectors(hash);
"""


@dataclass(frozen=True, slots=True)
class SyncCounts:
    """What one :meth:`VectorIndex.sync` did."""

    embedded: int
    reused: int
    removed: int
    rebuilt: bool
    pending: int = 0


class VectorIndex:
    """int8 vectors of one store's documents; safe to search from several threads."""

    def __init__(self, path: Path | str, embedder: IdentifiedEmbedder) -> None:
        self.path = Path(path)
        self.embedder = embedder
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"{self.path}: not a usable vector index ({exc}); delete it to rebuild") from exc
        self._lock = threading.Lock()
        self._matrix: tuple[list[str], Any, Any] | None = None

    def close(self) -> None:
        """Close the database."""
        self.conn.close()

    def count(self) -> int:
        """Rows stored."""
        return int(self.conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def sync(
        self, docs: Iterable[tuple[str, str, str]], *, prune: bool = True, batch: int = 64, max_new: int | None = None
    ) -> SyncCounts:
        """Make the rows match ``docs`` (``(id, content_hash, text)``); embed only what changed.

        With ``max_new``, at most that many texts are embedded now and the rest
        are left ``pending`` for the next sync (so a first query over a large
        history does not wait for all of it). Embedding runs outside the write
        transaction.
        """
        import numpy as np

        model, dims = self.embedder.model_id, self.embedder.dims
        with self._lock:
            stale = self.conn.execute(
                "SELECT count(*) FROM vectors WHERE model != ? OR dims != ?", (model, dims)
            ).fetchone()[0]
            if stale:
                self.conn.execute("DELETE FROM vectors")
            have = dict(self.conn.execute("SELECT id, hash FROM vectors"))
            wanted = {doc_id: (digest, text) for doc_id, digest, text in docs}
            reused: list[tuple[str, str, bytes]] = []
            fresh: list[tuple[str, str, str]] = []
            for doc_id, (digest, text) in wanted.items():
                if have.get(doc_id) == digest:
                    continue
                row = self.conn.execute("SELECT vec FROM vectors WHERE hash = ? LIMIT 1", (digest,)).fetchone()
                if row:
                    reused.append((doc_id, digest, row[0]))
                else:
                    fresh.append((doc_id, digest, text))
            pending = fresh[max_new:] if max_new is not None else []
            fresh = fresh[:max_new] if max_new is not None else fresh
            texts = {h: t for _, h, t in fresh}  # one embedding per distinct text, even within a sync
            order = list(texts)
            done: dict[str, bytes] = {}
            for start in range(0, len(order), batch):
                chunk = order[start : start + batch]
                vecs = _quantize(self.embedder.embed([texts[h] for h in chunk]))
                done.update((h, np.ascontiguousarray(v).tobytes()) for h, v in zip(chunk, vecs, strict=True))
            rows = list(reused) + [(i, h, done[h]) for i, h, _ in fresh]
            removed = [i for i in have if i not in wanted] if prune else []
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.executemany("DELETE FROM vectors WHERE id = ?", [(i,) for i in removed])
                self.conn.executemany(
                    "INSERT OR REPLACE INTO vectors(id, hash, model, dims, vec) VALUES (?,?,?,?,?)",
                    [(i, h, model, dims, v) for i, h, v in rows],
                )
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self.conn.execute("ROLLBACK")
                raise StorageError(f"{self.path}: cannot write vectors ({exc})") from exc
            if rows or removed or stale:
                self._matrix = None
        return SyncCounts(len(order), len(rows) - len(order), len(removed), bool(stale), len(pending))

    def _load(self) -> tuple[list[str], Any, Any]:
        import numpy as np

        with self._lock:
            if self._matrix is None:
                rows = self.conn.execute("SELECT id, vec FROM vectors ORDER BY id").fetchall()
                ids = [r[0] for r in rows]
                mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), self.embedder.dims)
                norms = np.linalg.norm(mat.astype(np.float32), axis=1)
                norms[norms == 0] = 1.0
                self._matrix = (ids, mat, norms)
            return self._matrix

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored int8 rows for ``ids`` (ids without a row are skipped)."""
        import numpy as np

        out = []
        for doc_id in ids:
            row = self.conn.execute("SELECT vec FROM vectors WHERE id = ?", (doc_id,)).fetchone()
            if row:
                out.append(np.frombuffer(row[0], dtype=np.int8))
        return np.asarray(out, dtype=np.int8).reshape(len(out), self.embedder.dims)

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` nearest documents to ``query`` by cosine, best first (ties by id)."""
        ids, mat, norms = self._load()
        if not ids or limit <= 0:
            return []
        qvec = self.embedder.embed([query])[0]
        return top_k(ids, mat, norms, qvec, limit)


def _quantize(vectors: np.ndarray) -> np.ndarray:
    from exo_edge.embedder import quantize_rows

    return quantize_rows(vectors)


def top_k(
    ids: Sequence[str], mat: np.ndarray, norms: np.ndarray, qvec: np.ndarray, limit: int
) -> list[tuple[str, float]]:
    """Cosine of every int8 row with the unit query ``qvec``; the best ``limit``, ties by id."""
    import numpy as np

    query = qvec.astype(np.float32)
    scores = np.empty(len(ids), dtype=np.float32)
    for start in range(0, len(ids), _BLOCK):  # bounded memory: one float block at a time
        scores[start : start + _BLOCK] = mat[start : start + _BLOCK].astype(np.float32) @ query
    scores /= norms
    limit = min(limit, len(ids))
    head = np.argpartition(-scores, limit - 1)[:limit] if limit < len(ids) else np.arange(len(ids))
    ranked = sorted(head.tolist(), key=lambda i: (-float(scores[i]), ids[i]))
    return [(ids[i], float(scores[i])) for i in ranked]
