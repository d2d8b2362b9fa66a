"""What retrieval ranks: belief nodes, items and past conversation turns, as :class:`Doc`.

Every document has a deterministic id and a kind: a node keeps its node id
(``taste/short-replies``), an item its ``itm_…`` id, a turn is
``turn:<session id>:<message id>``. Its ``hash`` covers every field that is
indexed, so an unchanged document is never re-indexed or re-embedded.

A private node is indexed by its title, summary, load rule and tags only:
its body (the raw private text) never enters an index or a prompt. Noise
items and items the person dismissed are not sources.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from exo_core.store import Store

__all__ = ["Doc", "node_docs", "item_docs", "turn_docs", "read_rows"]


@dataclass(frozen=True, slots=True)
class Doc:
    """One retrievable thing. ``links`` are ``(type, target)`` pairs; ``session`` is a turn's session."""

    id: str
    kind: str
    title: str = ""
    summary: str = ""
    load_when: str = ""
    tags: str = ""
    body: str = ""
    url: str | None = None
    private: bool = False
    valid_until: str | None = None
    links: tuple[tuple[str, str], ...] = ()
    session: str | None = None

    @property
    def hash(self) -> str:
        """sha256 (32 hex) over every indexed field: equal for an unchanged document."""
        parts = [
            self.kind,
            self.title,
            self.summary,
            self.load_when,
            self.tags,
            self.body,
            self.url or "",
            str(self.private),
            self.valid_until or "",
            json.dumps(self.links),
            self.session or "",
        ]
        return hashlib.sha256("\0".join(parts).encode("utf-8", "replace")).hexdigest()[:32]

    def text(self) -> str:
        """The text that is embedded: title, summary and body, as one passage."""
        return " ".join(p for p in (self.title, self.summary, self.body) if p).strip() or self.id


def node_docs(store: Store) -> Iterator[Doc]:
    """The store's visible nodes (its own and its ancestors' non-private ones)."""
    for node in store.visible_nodes():
        yield Doc(
            id=node.id,
            kind="node",
            title=node.title,
            summary=node.summary,
            load_when=node.load_when,
            tags=" ".join(node.tags + node.aliases),
            body="" if node.private else node.body.strip(),
            private=node.private,
            valid_until=node.valid_until,
            links=tuple((link.type, link.target) for link in node.links),
        )


def read_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` over the SQLite file at ``path``, opened read-only (none when it does not exist)."""
    if not path.is_file():
        return []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


def item_docs(items_path: Path) -> Iterator[Doc]:
    """Saved items worth showing (not noise, not dismissed), read-only."""
    for item_id, title, body, url, tags in read_rows(
        items_path,
        "SELECT id, title, body, url, tags FROM items WHERE tier != 'noise' AND review != 'dismissed' ORDER BY id",
    ):
        yield Doc(id=item_id, kind="item", title=title, body=body, url=url, tags=" ".join(json.loads(tags)))


def turn_docs(sessions_db: Path) -> Iterator[Doc]:
    """Past utterances and answers from ``sessions.sqlite`` (user and assistant text, not undone)."""
    for message_id, session, role, content in read_rows(
        sessions_db,
        "SELECT id, session_id, role, content FROM messages WHERE undone = 0 "
        "AND role IN ('user', 'assistant') AND content != '' ORDER BY id",
    ):
        yield Doc(id=f"turn:{session}:{message_id}", kind="turn", tags=role, body=content, session=session)
