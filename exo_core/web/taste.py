"""``taste.list`` and ``taste.edit`` over the store's taste nodes.

A taste row is a current belief node of the store's ``taste`` domain
(``taste/<name>.md``): its ``summary`` is the rule's text, its ``sources`` and
``evidence-for`` links are its evidence. Its ``weight`` is the learning loop's
(:meth:`Learner.rows`: noisy-or over the evidence, fading with time) when exod
runs a learner and the node is one of its lessons (``weight_source:
"learner"``, ``evidence_count`` its ledger evidence); otherwise it stands in
from the node's ``confidence`` (high 0.9, medium 0.6, low 0.3;
``weight_source: "confidence"``).

* An edit rewrites the node's summary and its body (:func:`edited_body`: the
  body never keeps saying the old text) through :meth:`Store.write_node`
  (atomic, validated; a missing node is ``not_found`` and nothing is
  recorded) and mirrors the person's words into the ledger as a
  ``rule`` entry.
* A delete never removes the file: the node gets ``valid_until`` (today), so
  it leaves the rows and the pack but stays as history, and the ledger gets a
  ``rejection`` of it.

Both emit ``taste.updated`` (a core-wide event, no session).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import logging
from pathlib import Path
from typing import Any

from exo_core.errors import BadBodyError, ExoError, NotFoundError
from exo_core.events.hub import Hub
from exo_core.learning.learner import Learner
from exo_core.protocol import commands as cmd
from exo_core.protocol import events as ev
from exo_core.seams.recorder import Recorder
from exo_core.store.node import Node
from exo_core.store.store import Store

__all__ = ["TasteRows", "WEIGHT_OF_CONFIDENCE", "row_of", "open_store", "edited_body"]

log = logging.getLogger(__name__)

WEIGHT_OF_CONFIDENCE = {"high": 0.9, "medium": 0.6, "low": 0.3}


def open_store(store_root: Path | None) -> Store:
    """The store the page and the taste rows read; :class:`NotFoundError` when there is none yet."""
    if store_root is None or not (store_root / "STORE.toml").is_file():
        raise NotFoundError(f"no store at {store_root}: run `exo init` (the page and taste rows read the store)")
    return Store.open(store_root)


def row_of(node: Node, learned: dict[str, Any] | None = None) -> dict[str, Any]:
    """One taste row as the wire shows it; ``learned`` is the learner's row of the node, if any."""
    evidence = list(node.sources) + [ln.target for ln in node.links if ln.type == "evidence-for"]
    return {
        "id": node.id,
        "title": node.title,
        "text": node.summary,
        "weight": learned["weight"] if learned else WEIGHT_OF_CONFIDENCE.get(node.confidence, 0.0),
        "weight_source": "learner" if learned else "confidence",
        "evidence_count": len(learned["evidence"] if learned else evidence),
        "confidence": node.confidence,
        "evidence": evidence,
        "links": [{"type": ln.type, "target": ln.target} for ln in node.links],
        "valid_from": node.valid_from,
        "path": f"{node.id}.md",
    }


class TasteRows:
    """The taste handlers for one store folder."""

    def __init__(self, store_root: Path, hub: Hub, recorder: Recorder, learner: Learner | None = None) -> None:
        self._root = store_root
        self._hub = hub
        self._recorder = recorder
        self._learner = learner
        self._lock = asyncio.Lock()

    def _rows(self, nodes: list[Node]) -> list[dict[str, Any]]:
        learned = {r["id"]: r for r in self._learner.rows()} if self._learner is not None else {}
        return [row_of(n, learned.get(n.id)) for n in nodes]

    async def list(self, body: cmd.TasteList) -> dict[str, Any]:
        """Current nodes of ``body.domain`` (default ``taste``), as rows."""
        domain = body.domain or "taste"
        today = _dt.date.today().isoformat()

        def read() -> list[dict[str, Any]]:
            nodes = [n for n in open_store(self._root).nodes() if n.domain == domain and n.is_current(today)]
            return self._rows(sorted(nodes, key=lambda n: n.id))

        return {"domain": domain, "rows": await asyncio.to_thread(read)}

    async def edit(self, body: cmd.TasteEdit) -> dict[str, Any]:
        """Rewrite a row's text, or retire it (``delete``)."""
        if not body.delete and not (body.text or "").strip():
            raise BadBodyError("give the new 'text', or 'delete': true", field="text")
        text = " ".join((body.text or "").split())
        async with self._lock:
            node, change = await asyncio.to_thread(self._apply, body.id, text, body.delete)
            row = (await asyncio.to_thread(self._rows, [node]))[0]
        kind, entry = (
            ("rejection", {"target": node.id, "reason": "deleted by the person"})
            if body.delete
            else ("rule", {"text": text, "target": node.id, "change": "edited"})
        )
        try:
            await asyncio.to_thread(self._recorder.record, kind, entry)
        except ExoError:
            log.exception("taste %s of %s is in the store but not in the ledger", change, node.id)
        await self._hub.emit(
            None, "taste.updated", ev.TasteUpdated(id=node.id, text=node.summary, weight=row["weight"], change=change)
        )
        return {"row": row, "change": change}

    def _apply(self, node_id: str, text: str, delete: bool) -> tuple[Node, str]:
        store = open_store(self._root)
        node = store.read_node(node_id)
        # Retired, never removed: the file stays as history.
        today = _dt.date.today().isoformat()
        if delete:
            node = dataclasses.replace(node, valid_until=max(today, node.valid_from))
        else:
            node = dataclasses.replace(node, summary=text, body=edited_body(node, text, today))
        store.write_node(node)
        return node, "deleted" if delete else "edited"


def edited_body(node: Node, text: str, today: str) -> str:
    """The body of a node the person just reworded: their words, never the old ones.

    A hand-written node's body restated its old summary, so it is rewritten whole; a learned
    node's body holds only provenance (proposal and evidence ids), which stays below.
    """
    body = f"\n# {node.title}\n\n{text}\n\nReworded by the person on {today}.\n"
    if "learned" in node.tags:
        return body + "\n" + node.body.strip() + "\n"
    return body
