"""Enforced taste that a small model cannot be trusted to follow is applied to its drafts.

The pack's learned section tells the chat model what the person wants ("Wants a calm tone, not
exclamation marks."), but the standard board's 0.5B model does not follow it: measured through
exod, it kept ending sentences with "!" right after the person's correction and rule
(``benchmarks/bench_learning_e2e.py``, docs/benchmarks.md §17). For the few catalog features
whose fix is mechanical and safe, an *enforced* lesson (one the pack links, :func:`.pack.shown`)
is applied to the reply as it streams:

* ``exclamation``: a run of ``!`` that ends a sentence (followed by white space, a closing quote
  or bracket, or the end) becomes one ``.``; ``!=`` and ``!x`` (code) are left alone;
* ``em_dash``: ``—`` becomes a plain ``-``.

:class:`TasteStyle` is the loop's ``style`` seam (:class:`exo_core.agent.seams.DraftStyle`): per
model call it reads the pack (in a worker thread) and returns a :class:`StreamFix`, or None when
nothing enforced has a mechanical fix. A rejected lesson leaves the pack, so it stops being
applied on the next turn. Hints are never applied: they are not the person's settled taste.
"""

from __future__ import annotations

import asyncio

from exo_core.learning.features import CATALOG
from exo_core.learning.pack import shown
from exo_core.store.store import Store

__all__ = ["StreamFix", "TasteStyle", "FIXABLE"]

# Catalog features with a mechanical fix, by the node their lesson lives in.
FIXABLE = {f.target: f.key for f in CATALOG if f.key in ("exclamation", "em_dash")}
_ENDS_SENTENCE = frozenset(" \t\r\n\"'”’)]}")


class StreamFix:
    """Applies the enforced fixes to text that arrives in pieces (``feed`` each piece, then ``flush``)."""

    def __init__(self, keys: frozenset[str]) -> None:
        self.keys = keys
        self._bangs = 0  # a run of "!" held back until the next character says whether it ends a sentence

    def feed(self, piece: str) -> str:
        """The fixed text that can be shown now (a trailing ``!`` waits for what follows)."""
        out: list[str] = []
        for ch in piece:
            if ch == "!" and "exclamation" in self.keys:
                self._bangs += 1
                continue
            if self._bangs:
                out.append("." if ch in _ENDS_SENTENCE else "!" * self._bangs)
                self._bangs = 0
            if ch == "\u2014" and "em_dash" in self.keys:
                out.append("-")
                continue
            out.append(ch)
        return "".join(out)

    def flush(self) -> str:
        """What is still held at the end of the text."""
        held = "." if self._bangs else ""
        self._bangs = 0
        return held


class TasteStyle:
    """The loop's ``style`` seam over one store's pack (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def fix(self) -> StreamFix | None:
        """A fixer for one model call's text, or None when nothing enforced has a mechanical fix."""
        linked = await asyncio.to_thread(shown, self.store)
        keys = frozenset(FIXABLE[node] for node in linked if node in FIXABLE)
        if not keys:
            return None
        return StreamFix(keys)
