"""Items (docs/store.md): things the person saved, kept in ``items.sqlite``.

Items are evidence, not beliefs. Each row has a deterministic id computed
from its source (``itm_`` + 24 hex of sha256 over source kind and source
key), so re-running an import changes nothing; a normalized URL and a content
hash de-duplicate the same thing saved twice; a quality tier (curated,
inferred, noise) and a review status (unreviewed, kept, dismissed).

The ledger is the truth and this table a view: every insert or change first
appends an ``item`` entry carrying the whole row (with an idempotency key, so
a retry after a crash writes nothing twice), then writes the row.
:func:`rebuild_items` recreates the table from the ledger alone.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import urllib.parse
from collections.abc import Iterable
from dataclasses import asdict, astuple, dataclass, replace
from pathlib import Path
from typing import Any

from exo_core.errors import StorageError, UsageError
from exo_core.private_files import private_file
from exo_core.store.errors import StoreFormatError
from exo_core.store.ledger_bridge import LedgerLike, LedgerReader

__all__ = [
    "Item",
    "ItemStore",
    "item_id",
    "normalize_url",
    "content_hash",
    "rebuild_items",
    "TIERS",
    "REVIEW_STATES",
    "MAX_ITEM_BODY",
]

TIERS = ("curated", "inferred", "noise")
REVIEW_STATES = ("unreviewed", "kept", "dismissed")
# One ledger entry is capped (1 MiB); an item's text beyond this is cut and
# marked, the source file itself stays where it was.
MAX_ITEM_BODY = 200_000
_TRACKING = ("utm_", "fbclid", "gclid", "mc_cid", "mc_eid", "ref_src")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id           TEXT PRIMARY KEY,
    scope        TEXT NOT NULL,
    source_kind  TEXT NOT NULL,
    source_ref   TEXT NOT NULL,
    url          TEXT,
    url_norm     TEXT,
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    tier         TEXT NOT NULL CHECK (tier IN ('curated', 'inferred', 'noise')),
    review       TEXT NOT NULL CHECK (review IN ('unreviewed', 'kept', 'dismissed')),
    tags         TEXT NOT NULL,
    added        TEXT,
    truncated    INTEGER NOT NULL DEFAULT 0,
    ledger_id    TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS items_url ON items(url_norm) WHERE url_norm IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_hash ON items(content_hash);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_COLUMNS = (
    "id, scope, source_kind, source_ref, url, url_norm, title, body, content_hash, tier, review, tags, added, truncated"
)


def item_id(source_kind: str, source_ref: str) -> str:
    """The deterministic id of the item a source names."""
    return "itm_" + hashlib.sha256(f"{source_kind}\0{source_ref}".encode()).hexdigest()[:24]


def content_hash(text: str) -> str:
    """sha256 of the text with line endings and outer whitespace normalized."""
    norm = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


def normalize_url(url: str) -> str:
    """A canonical form for de-duplication: lower-case scheme and host, no default
    port, no fragment, tracking parameters dropped, query sorted, no trailing slash."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"{url!r} is not a URL ({exc})") from exc
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    if port and not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    path = parts.path or "/"
    if len(path) > 1:
        path = path.rstrip("/")
    query = [
        (k, v)
        for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith(_TRACKING)
    ]
    return urllib.parse.urlunsplit((scheme, host, path, urllib.parse.urlencode(sorted(query)), ""))


@dataclass(frozen=True, slots=True)
class Item:
    """One saved item as stored. ``tags`` is a tuple of text."""

    id: str
    scope: str
    source_kind: str
    source_ref: str
    url: str | None
    url_norm: str | None
    title: str
    body: str
    content_hash: str
    tier: str
    review: str
    tags: tuple[str, ...]
    added: str | None = None
    truncated: bool = False

    def ledger_body(self) -> dict[str, object]:
        """The ledger entry body that carries this whole row (op ``put``)."""
        body = {**asdict(self), "item_id": self.id, "tags": list(self.tags), "op": "put"}
        del body["id"], body["scope"]  # the entry's own scope field records the scope
        return body

    @classmethod
    def new(
        cls,
        *,
        source_kind: str,
        source_ref: str,
        title: str,
        body: str,
        scope: str = "person",
        url: str | None = None,
        tier: str = "curated",
        tags: Iterable[str] = (),
        added: str | None = None,
    ) -> Item:
        """Build an item with its derived id, normalized URL and content hash."""
        if tier not in TIERS:
            raise UsageError(f"tier must be one of {', '.join(TIERS)}")
        truncated = len(body) > MAX_ITEM_BODY
        body = body[:MAX_ITEM_BODY]
        return cls(
            item_id(source_kind, source_ref),
            scope,
            source_kind,
            source_ref,
            url,
            normalize_url(url) if url else None,
            title,
            body,
            content_hash(f"{title}\n{url or ''}\n{body}"),
            tier,
            "unreviewed",
            tuple(tags),
            added,
            truncated,
        )


def _from_row(row: tuple[Any, ...]) -> Item:
    # Columns in _COLUMNS order: tags are stored as a JSON list, truncated as 0 or 1.
    (
        id_,
        scope,
        source_kind,
        source_ref,
        url,
        url_norm,
        title,
        body,
        content_hash,
        tier,
        review,
        tags,
        added,
        truncated,
    ) = row
    return Item(
        id_,
        scope,
        source_kind,
        source_ref,
        url,
        url_norm,
        title,
        body,
        content_hash,
        tier,
        review,
        tuple(json.loads(str(tags))),
        added,
        bool(truncated),
    )


class ItemStore:
    """The items table of one store, written through its ledger."""

    def __init__(self, path: Path, ledger: LedgerLike | None, *, scope: str = "person") -> None:
        self.path = Path(path)
        self.ledger = ledger
        self.scope = scope
        try:
            private_file(self.path)  # its journal takes the same mode (docs/security.md, "Private files")
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self.conn.execute("PRAGMA journal_mode=TRUNCATE")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.executescript(_SCHEMA)
            self.conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', '1')")
        except sqlite3.DatabaseError as exc:
            raise StoreFormatError(
                f"not a usable items table ({exc}); delete it and run 'exo store rebuild-items' "
                "to recreate it from the ledger",
                path=self.path,
                rule="items",
            ) from exc

    def close(self) -> None:
        """Close the database connection."""
        self.conn.close()

    def __enter__(self) -> ItemStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, item_id_: str) -> Item | None:
        """The item with this id, or None."""
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM items WHERE id = ?", (item_id_,)).fetchone()
        return _from_row(row) if row else None

    def all(self) -> list[Item]:
        """Every item, by id."""
        return [_from_row(r) for r in self.conn.execute(f"SELECT {_COLUMNS} FROM items ORDER BY id")]

    def count(self) -> int:
        """How many items there are."""
        return int(self.conn.execute("SELECT count(*) FROM items").fetchone()[0])

    def duplicate_of(self, item: Item) -> str | None:
        """The id of a *different* stored item with the same URL or content, if any."""
        row = self.conn.execute(
            "SELECT id FROM items WHERE id != ? AND (url_norm = ? OR content_hash = ?)",
            (item.id, item.url_norm, item.content_hash),
        ).fetchone()
        return str(row[0]) if row else None

    def put(self, item: Item) -> str:
        """Store ``item``; returns ``added``, ``unchanged``, ``updated`` or ``duplicate``.

        The ledger entry is appended first (idempotent on id and content), so a
        crash between the two writes is repaired by running the import again.
        """
        ledger = self._ledger()
        current = self.get(item.id)
        if current is not None and current.content_hash == item.content_hash and current.tier == item.tier:
            return "unchanged"
        if current is None and self.duplicate_of(item) is not None:
            return "duplicate"
        if current is not None:
            item = replace(item, review=current.review)  # a new version keeps the person's review
        entry = ledger.append(
            "item", item.ledger_body(), scope=item.scope, idem=f"item:{item.id}:{item.content_hash}:{item.tier}"
        )
        self._write_row(item, entry.id)
        return "added" if current is None else "updated"

    def set_review(self, item_id_: str, review: str) -> None:
        """Record the person's review of an item (through the ledger)."""
        if review not in REVIEW_STATES:
            raise UsageError(f"review must be one of {', '.join(REVIEW_STATES)}")
        if self.get(item_id_) is None:
            raise UsageError(f"no item {item_id_!r}")
        body: dict[str, object] = {"item_id": item_id_, "op": "review", "review": review}
        self.apply_entry(self.scope, self._ledger().append("item", body, scope=self.scope).id, body)

    def _ledger(self) -> LedgerLike:
        if self.ledger is None:
            raise UsageError("items are written through the ledger; open the store's ledger first")
        return self.ledger

    def _write_row(self, item: Item, ledger_id: str | None) -> None:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("DELETE FROM items WHERE id = ?", (item.id,))
            if item.url_norm:
                # A later put of the same URL under another source replaces the
                # older row's claim on the URL only through an explicit update.
                self.conn.execute("UPDATE items SET url_norm = NULL WHERE url_norm = ?", (item.url_norm,))
            row = (*astuple(item)[:11], json.dumps(list(item.tags)), item.added, int(item.truncated), ledger_id)
            self.conn.execute(f"INSERT INTO items ({_COLUMNS}, ledger_id) VALUES ({','.join('?' * len(row))})", row)
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.conn.execute("ROLLBACK")
            raise StorageError(f"{self.path}: cannot write item {item.id} ({exc})") from exc

    def apply_entry(self, scope: str, entry_id: str, body: dict[str, Any]) -> None:
        """Apply one ledger ``item`` entry to the table (used by rebuild)."""
        if body.get("op", "put") == "review":
            self.conn.execute(
                "UPDATE items SET review = ?, ledger_id = ? WHERE id = ?", (body["review"], entry_id, body["item_id"])
            )
            return
        fields = {k: v for k, v in body.items() if k not in ("op", "item_id")}
        fields["tags"] = tuple(fields.get("tags", ()))
        self._write_row(Item(id=str(body["item_id"]), scope=scope, **fields), entry_id)


def rebuild_items(path: Path, ledger: LedgerReader) -> int:
    """Recreate ``items.sqlite`` at ``path`` from the ledger alone, from empty.

    Writes to a temp file and renames it over ``path``, so a crash leaves the
    old table. Returns the number of items.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.rebuild")
    for stale in (tmp, tmp.with_name(tmp.name + "-journal")):
        stale.unlink(missing_ok=True)
    with ItemStore(tmp, None) as store:
        for entry in ledger.entries(kind="item"):
            store.apply_entry(entry.scope, entry.id, dict(entry.body))
        count = store.count()
    tmp.replace(path)
    return count
