"""The store's retrieval as the loop's memory provider and as the ``recall`` tool's backend.

:class:`StoreMemory` satisfies :class:`exo_core.agent.seams.MemoryProvider`
(the pack page first, outside the budget, then the blocks retrieved for the
message; its optional :class:`~exo_core.agent.seams.PartedMemory` capability
gives the two apart) and :class:`exo_core.tools.session_tools.Recall`. The
pipeline's SQLite and embedding work runs in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from exo_core.agent.seams import MemoryParts
from exo_core.errors import ExoError
from exo_core.retrieval.pack import Packed
from exo_core.retrieval.pipeline import Retriever
from exo_core.retrieval.second_person import addressed

if TYPE_CHECKING:
    from exo_core.seams.home import ExoHome

__all__ = ["StoreMemory", "PACK_HEADING", "RECALL_HEADING", "PROMPT_FLOOR", "open_store_memory", "without_comments"]

_log = logging.getLogger(__name__)
PACK_HEADING = "## About you: your pack (the page you keep; [[links]] name notes in your store)"
RECALL_HEADING = "## Notes recalled for this message (each starts with its id in brackets; answer from them)"
# In the prompt, a recalled block scoring under half the best one is left out: a small chat model copies
# what it is shown, and weak matches (other questions' past turns, an unrelated person's note) gave it
# the wrong answer to copy ("my daughter Mina is in Porto", docs/retrieval.md "In the prompt").
PROMPT_FLOOR = 0.5
# The pack's HTML comments are notes for the person (the template's guidance, the learned section's
# markers): a small model copies whatever page text it is shown, so they stay out of the prompt
# (docs/store.md, "Layers").
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")


def without_comments(page: str) -> str:
    """``page`` with its HTML comments taken out and the blank lines they leave closed up."""
    text = _COMMENT.sub("", page)
    return _BLANK_RUN.sub("\n\n", text).strip()


def _as_shown(packed: Packed) -> tuple[str, ...]:
    """The packed blocks as the model reads them: notes address the person as "you".

    Past turns and saved items keep their words: they are records of what was said or saved.
    """
    return tuple(addressed(b.text) if b.kind == "node" else b.text for b in packed.blocks if b.text)


class StoreMemory:
    """Memory provider and recall over one :class:`Retriever`."""

    def __init__(self, retriever: Retriever, *, scope: str = "person") -> None:
        self.retriever = retriever
        self.scope = scope

    async def system_block(self, session_id: str, text: str) -> str:
        """The pack page, then what the pipeline retrieves for ``text`` (the current session excluded).

        Each part under a heading that says what it is and how to use it: a
        chat model answers "Where does my sister live?" from the recalled note
        that says so, and reads the pack as background, never as an answer to
        copy (docs/retrieval.md, "In the prompt").
        """
        parts = await self.system_parts(session_id, text)
        block = "\n".join(parts.recalled)
        return parts.pack.rstrip() + (f"\n\n{parts.heading}\n{block}" if block else "") + "\n"

    async def system_parts(self, session_id: str, text: str) -> MemoryParts:
        """The pack page (under its heading) and the retrieved blocks (best first) apart.

        Kept apart so each can be fitted to a small window.
        """
        pack = await self.pack_block()
        try:
            recalled = await asyncio.to_thread(
                self.retriever.retrieve, text, scope=self.scope, session_id=session_id, floor=PROMPT_FLOOR
            )
        except ExoError as exc:  # a broken index or store file must not cost the person their answer
            _log.warning("retrieval failed, answering with the pack only: %s", exc.message)
            return MemoryParts(pack=pack)
        return MemoryParts(pack=pack, recalled=_as_shown(recalled.packed), heading=RECALL_HEADING)

    async def pack_block(self) -> str:
        """The pack page under its heading, as every prompt carries it (no retrieval)."""
        pack_text = await asyncio.to_thread(self.retriever.store.pack_text)
        return f"{PACK_HEADING}\n{addressed(without_comments(pack_text))}"

    async def on_exchange(self, session_id: str, user_text: str, answer: str) -> None:
        """A finished exchange is a new past turn: re-check the sources before the next query."""
        self.retriever.mark_stale()

    async def recall(self, query: str, *, limit: int) -> str:
        """The ``recall`` tool: the packed blocks for ``query``, at most ``limit`` of them."""
        recalled = await asyncio.to_thread(self.retriever.retrieve, query, scope=self.scope, limit=limit)
        return "\n".join(_as_shown(recalled.packed))

    async def recall_for(self, query: str, *, limit: int, session_id: str) -> str:
        """As :meth:`recall`, leaving out the asking session's own turns (its question is no past turn)."""
        recalled = await asyncio.to_thread(
            self.retriever.retrieve,
            query,
            scope=self.scope,
            session_id=session_id,
            limit=limit,
        )
        return "\n".join(_as_shown(recalled.packed))

    def close(self) -> None:
        """Close the retriever's indexes."""
        self.retriever.close()


def open_store_memory(
    home: ExoHome, store_override: str | None = None, *, log: Callable[..., Any] | None = None
) -> StoreMemory | None:
    """exod's default memory provider: retrieval over the person's store (``None`` when there is no store).

    ``log`` receives ``("retrieval", body)`` for every prompt's retrieval
    (the ledger recorder's ``record``).
    """
    from exo_core.store import Store

    path = home.store_path(store_override)
    if not (path / "STORE.toml").is_file():
        return None
    return StoreMemory(Retriever.open(Store.open(path), home=home, log=log))
