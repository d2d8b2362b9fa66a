"""Helpers for the retrieval tests: a store with nodes, items and past sessions; a deterministic fake embedder.

Not named conftest.py (other folders import the root conftest by basename).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np

from exo_core.ledger import Ledger, Signer
from exo_core.sessions.db import open_writer
from exo_core.store import Item, ItemStore, Link, Node, Store, init_store

__all__ = ["node", "make_store", "add_turns", "HashEmbedder", "model_files_present"]


def node(node_id: str, title: str, summary: str, body: str = "", **kw: object) -> Node:
    """A valid node with defaults for the fields a test does not care about."""
    return Node(
        id=node_id,
        title=title,
        type="preference",
        domain=node_id.split("/")[0],
        summary=summary,
        load_when=str(kw.pop("load_when", "")),
        confidence="high",
        stability="durable",
        valid_from="2024-01-01",
        body=body,
        **kw,
    )  # type: ignore[arg-type]


def make_store(root: Path, signer: Signer) -> Store:
    """A store with beliefs (one superseded, a contradiction, typed links, a private one) and two items."""
    store = init_store(root, owner_key_ids=[signer.key_id])
    nodes = [
        node(
            "taste/short-replies",
            "Short replies",
            "Keeps replies brief and to the point",
            "Long answers annoy them; three sentences at most.",
            tags=("brevity",),
        ),
        node("taste/old-tone", "Formal tone", "Wanted a formal tone in every reply", valid_until="2024-06-01"),
        node(
            "taste/casual-tone",
            "Casual tone",
            "Prefers a casual tone in replies",
            links=(Link("supersedes", "taste/old-tone"), Link("see-also", "work/editor")),
        ),
        node(
            "taste/emoji",
            "Emoji in replies",
            "Likes emoji in chat replies",
            links=(Link("contradicts", "taste/no-emoji"),),
        ),
        node("taste/no-emoji", "No emoji", "Dislikes emoji in written work"),
        node("work/editor", "Editor", "Uses the vim editor for everything", links=(Link("explains", "work/keyboard"),)),
        node("work/keyboard", "Keyboard", "Types on a split keyboard"),
        node("self/health", "Health note", "A private health matter", "Raw private detail: do not leak.", private=True),
        node(
            "rules/ask-before-push",
            "Ask before pushing",
            "Always ask before git push to a shared remote",
            "Pushing is public: it needs the person's approval.",
        ),
    ]
    for n in nodes:
        store.write_node(n)
    index = store.root / "rules" / "INDEX.md"
    index.write_text(
        index.read_text(encoding="utf-8") + "\n- git push -> [[rules/ask-before-push]]\n", encoding="utf-8"
    )
    ledger = Ledger.open_store(store.root, signer=signer)
    try:
        with ItemStore(store.items_path, ledger) as items:
            items.put(
                Item.new(
                    source_kind="bookmark",
                    source_ref="a",
                    title="Vim tips and tricks",
                    body="A long article about the vim editor and its modal editing.",
                    url="https://example.org/vim-tips",
                )
            )
            items.put(
                Item.new(
                    source_kind="bookmark",
                    source_ref="b",
                    title="Sourdough bread recipe",
                    body="Flour, water, salt and patience.",
                    url="https://example.org/bread",
                )
            )
    finally:
        ledger.close()
    return store


def add_turns(db: Path, session: str, turns: list[tuple[str, str]]) -> None:
    """Append past conversation turns ``(role, text)`` to ``sessions.sqlite`` at ``db``."""
    conn = open_writer(db)
    try:
        conn.execute("INSERT OR IGNORE INTO sessions(id, created_at, updated_at) VALUES (?, 'now', 'now')", (session,))
        conn.executemany(
            "INSERT INTO messages(session_id, role, content, created_at) VALUES (?, ?, ?, 'now')",
            [(session, r, t) for r, t in turns],
        )
    finally:
        conn.close()


class HashEmbedder:
    """A deterministic stand-in embedder: bag of hashed words, normalised. Counts its calls."""

    dims = 64

    def __init__(self, model: str = "hash-v1") -> None:
        self.model = model
        self.embedded = 0

    @property
    def model_id(self) -> str:
        return self.model

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += len(texts)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, int(hashlib.sha256(word.encode("utf-8", "replace")).hexdigest(), 16) % self.dims] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


def model_files_present() -> bool:
    """True when ``exo models fetch`` has built the int8 embedder on this machine."""
    from exo_edge.embedder import OnnxEmbedder

    return OnnxEmbedder.from_home(None) is not None


def sqlite_count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()
