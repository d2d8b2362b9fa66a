"""The recorder seam: how a turn, a decision or a chat signal is mirrored into the ledger (``LedgerRecorder``).

The loop calls :meth:`Recorder.record` (in a worker thread; it may block on
disk) for the person's message (``utterance``), each tool call and its gate
outcome (``action``), each approval answer (``approval``) and each verdict.
Content from tools, files or web pages is recorded as data inside an
``action``, never as an ``utterance``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Recorder", "NullRecorder"]


class Recorder(Protocol):
    """Appends one ledger entry of ``kind`` and returns its id (``LedgerRecorder`` satisfies it)."""

    def record(self, kind: str, body: Mapping[str, Any], *, refs: tuple[str, ...] = ()) -> str | None:
        """Append ``body`` as a ``kind`` entry referring to ``refs``; return the entry id."""
        ...


class NullRecorder:
    """Records nothing: for a core running without a store (tests, protocol demos)."""

    def record(self, kind: str, body: Mapping[str, Any], *, refs: tuple[str, ...] = ()) -> str | None:
        """Do nothing and return ``None``."""
        return None
