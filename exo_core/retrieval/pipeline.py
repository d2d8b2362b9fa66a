"""The staged retrieval pipeline of docs/retrieval.md, over one store, its past sessions and its indexes.

:meth:`Retriever.retrieve` runs: router pins → two candidate lists (weighted
BM25 over FTS5, and embedding similarity when the edge embedder is present)
→ filters → fusion (weighted, score- and confidence-aware by default; plain
reciprocal rank fusion with ``rrf_k``: docs/retrieval.md) → neighbouring turns borrow from
each fused turn (``context``) → the node prior → one-hop graph expansion →
packing under the budget → a ``retrieval`` ledger entry with the ids and
token count. The pack page itself is added by the memory provider
(:mod:`exo_core.retrieval.memory`), first and outside the budget.

Indexes live in ``<store>/indexes/`` (``retrieval.sqlite``, and
``vectors.sqlite`` from the edge's embedder) and are views: :meth:`Retriever.refresh`
brings them up to date from the store, ``items.sqlite`` and
``sessions.sqlite`` when any of them changed, touching only changed
documents; deleting the folder and refreshing gives the same rankings.
Without the edge's embedder (:mod:`exo_core.edge`; or without fetched model
files) the dense list is empty and the pipeline is BM25 only.
"""

from __future__ import annotations

import datetime as _dt
import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.edge import edge_or_installed
from exo_core.errors import NotFoundError
from exo_core.retrieval import rank
from exo_core.retrieval.docs import Doc, item_docs, node_docs, read_rows, turn_docs
from exo_core.retrieval.lexical import DocIndex
from exo_core.retrieval.pack import Packed, pack
from exo_core.seams.edge import EdgeKit
from exo_core.seams.embedding import VECTOR_FILE, DenseIndex, DenseSync
from exo_core.store import layout

if TYPE_CHECKING:
    from exo_core.seams.home import ExoHome
    from exo_core.store import Store

__all__ = [
    "Retriever",
    "Recalled",
    "RetrievalSettings",
    "DenseIndex",
    "DenseSync",
    "open_dense",
    "records",
    "INDEX_FILE",
    "VECTOR_FILE",
    "OVERFETCH",
]

INDEX_FILE = "retrieval.sqlite"
OVERFETCH = 4  # each list is read this many times deeper than ``depth``, to fill it after filtering


def open_dense(index_dir: Path, home: ExoHome | None = None, *, edge: EdgeKit | None = None) -> DenseIndex | None:
    """The edge's vector index over the int8 embedder (default: the installed edge's).

    ``None`` when there is no edge, or its runtime or model files are absent: retrieval is then BM25 only.
    """
    opener = edge_or_installed(edge).dense
    if opener is None:
        return None
    return opener(index_dir, home)


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """Knobs, chosen on the development halves of the benchmarks (docs/retrieval.md)."""

    depth: int = 10  # candidates taken from each list into the fusion
    budget: int = 1200
    weights: tuple[float, float] = (0.225, 0.775)  # BM25, embeddings, before each list's confidence
    rrf_k: int | None = None  # None: score-aware fusion; rank.RRF_K: plain reciprocal rank fusion (docs/retrieval.md)
    context: tuple[float, ...] = rank.CONTEXT  # shares lent to turns 1, 2, … places away; () turns it off
    embed_batch: int | None = 256  # texts embedded per refresh (the rest wait for the next one); None: all


@dataclass(frozen=True, slots=True)
class Recalled:
    """What one query retrieved: the packed blocks, pinned ids and the fused ranking before packing."""

    query: str
    packed: Packed
    pinned: tuple[str, ...]
    ranking: tuple[tuple[str, float], ...]

    def render(self) -> str:
        """The packed blocks as prompt text."""
        return self.packed.render()


class Retriever:
    """Retrieval over one store; thread-safe (one lock around refresh and query)."""

    def __init__(
        self,
        store: Store,
        *,
        sessions_db: Path | None = None,
        dense: DenseIndex | None = None,
        log: Callable[..., Any] | None = None,
        settings: RetrievalSettings = RetrievalSettings(),
        today: Callable[[], str] = lambda: _dt.date.today().isoformat(),
    ) -> None:
        self.store = store
        self.sessions_db = sessions_db
        self.lexical = DocIndex(store.root / layout.INDEXES_DIR / INDEX_FILE)
        self.dense = dense
        self.log = log
        self.settings = settings
        self.today = today
        self._lock = threading.RLock()
        self._signature: object = None
        self._links: dict[str, tuple[tuple[str, str], ...]] = {}

    @classmethod
    def open(
        cls,
        store: Store,
        *,
        home: ExoHome | None = None,
        embeddings: bool = True,
        log: Callable[..., Any] | None = None,
        settings: RetrievalSettings = RetrievalSettings(),
        edge: EdgeKit | None = None,
    ) -> Retriever:
        """A retriever with the home's sessions as past turns and ``edge``'s embedder when present."""
        dense = open_dense(store.root / layout.INDEXES_DIR, home, edge=edge) if embeddings else None
        return cls(store, sessions_db=home.sessions_db if home else None, dense=dense, log=log, settings=settings)

    def close(self) -> None:
        """Close the indexes."""
        self.lexical.close()
        if self.dense is not None:
            self.dense.close()

    # -- keeping the views current ----------------------------------------
    def _current_signature(self) -> object:
        files: list[tuple[str, int]] = []
        store: Store | None = self.store
        while store is not None:  # the store's own nodes and its ancestors'
            files += [(str(p), p.stat().st_mtime_ns) for p in layout.node_files(store.root)]
            store = store.parent
        items = self.store.items_path
        marks: list[object] = [files, items.stat().st_mtime_ns if items.is_file() else None]
        if self.sessions_db is not None:
            marks.append(read_rows(self.sessions_db, "SELECT max(id), count(*), sum(undone) FROM messages"))
        return marks

    def documents(self) -> list[Doc]:
        """Every source document: visible nodes, items, past turns."""
        docs = list(node_docs(self.store)) + list(item_docs(self.store.items_path))
        if self.sessions_db is not None:
            docs.extend(turn_docs(self.sessions_db))
        return docs

    def refresh(self, *, force: bool = False) -> bool:
        """Bring the indexes up to date when a source changed; True when anything was re-read."""
        with self._lock:
            signature = self._current_signature()
            if not force and signature == self._signature:
                return False
            docs = self.documents()
            self.lexical.sync(docs)
            if self.dense is not None:
                counts = self.dense.sync([(d.id, d.hash, d.text()) for d in docs], max_new=self.settings.embed_batch)
                if counts.pending:
                    signature = None  # more to embed: continue at the next refresh
            self._links = self.lexical.node_links()
            self._signature = signature
            return True

    def mark_stale(self) -> None:
        """Re-check the sources before the next query."""
        self._signature = None

    # -- the query --------------------------------------------------------
    def pins(self, query: str) -> list[str]:
        """Node ids pinned by the root and domain routers' load rules for ``query``."""
        routers = [self.store.router()]
        for folder in layout.domain_dirs(self.store.root):
            try:
                routers.append(self.store.router(folder.name))
            except NotFoundError:
                continue
        return list(dict.fromkeys(i for r in routers for i in r.pins(query)))

    def retrieve(
        self,
        query: str,
        *,
        scope: str = "person",
        session_id: str | None = None,
        budget: int | None = None,
        limit: int | None = None,
        record: bool = True,
        floor: float = 0.0,
    ) -> Recalled:
        """Run the pipeline for ``query``; see the module docstring for the stages.

        ``floor`` (0 to 1) leaves out of the pack every ranked block scoring below
        that share of the best one (pinned blocks stay); the ranking keeps them all.
        """
        query = query.encode("utf-8", "replace").decode("utf-8")
        with self._lock:
            self.refresh()
            today, past = self.today(), rank.about_past(query)
            depth, want = self.settings.depth, self.settings.depth * OVERFETCH
            bm25 = self.lexical.search(query, want)  # the dense list is empty without an embedder
            dense = self.dense.search(query, want) if self.dense is not None else []
            docs = self.lexical.get(list(dict.fromkeys(i for i, _ in bm25 + dense)))

            @functools.cache
            def ok(doc_id: str) -> bool:
                docs.update(self.lexical.get([doc_id]) if doc_id not in docs else {})
                return doc_id in docs and rank.keep(
                    docs[doc_id], today=today, past=past, scope=scope, session=session_id
                )

            def ranks(doc_id: str) -> bool:  # a pin-only node comes by its load rule alone
                return ok(doc_id) and not rank.pin_only(docs[doc_id])

            # Filter first, then fuse the top ``depth`` that may be shown (so the current
            # session's own turns, or expired beliefs, never take a candidate's place).
            lists = [[(i, s) for i, s in ranked_list if ranks(i)] for ranked_list in (bm25, dense)]
            scores = rank.fuse(
                lists,
                weights=self.settings.weights,
                depth=depth,
                k=self.settings.rrf_k,
                ended=[len(bm25) < want, len(dense) < want],
            )
            scores = rank.context(scores, self.lexical.session_turns(sorted(scores)), self.settings.context)
            fused = {i: s * rank.KIND_PRIOR.get(docs[i].kind, 1.0) for i, s in scores.items() if ranks(i)}
            fused = rank.expand(fused, docs, self._links, ranks, past=past)
            pinned = [docs[i] for i in self.pins(query) if ok(i)]
            ranking = rank.ranked(fused)
            shown = ranking
            if floor > 0 and ranking:
                least = floor * ranking[0][1]
                shown = [(i, s) for i, s in ranking if s >= least]
            packed = pack(pinned, [(docs[i], s) for i, s in shown], budget or self.settings.budget, limit=limit)
            if record and self.log is not None:
                self.log(
                    "retrieval",
                    {
                        "node_ids": packed.ids("node"),
                        "item_ids": packed.ids("item"),
                        "turn_ids": packed.ids("turn"),
                        "tokens": packed.tokens,
                        "pinned": [d.id for d in pinned],
                    },
                )
            return Recalled(query, packed, tuple(d.id for d in pinned), tuple(ranking))


def records(recalled: Recalled) -> list[Mapping[str, Any]]:
    """The packed blocks as JSON-ready rows (id, kind, form, score, tokens, pinned)."""
    return [
        {"id": b.id, "kind": b.kind, "form": b.form, "score": round(b.score, 6), "tokens": b.tokens, "pinned": b.pinned}
        for b in recalled.packed.blocks
    ]
