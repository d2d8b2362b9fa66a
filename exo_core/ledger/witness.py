"""Checkpoints of an open ledger: signing its head, recording it, and the home's witness of every commit.

The checkpoint itself and the machine's book of them are :mod:`exo_core.ledger.checkpoint` (below the
ledger, which verifies against them); what here needs an open :class:`Ledger` sits above it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from exo_core.errors import UsageError
from exo_core.ledger.checkpoint import BOOK_FILE_NAME, Checkpoint, CheckpointBook
from exo_core.ledger.entry import StoredEntry
from exo_core.ledger.keys import Signer
from exo_core.ledger.ledger import Ledger

__all__ = ["make_checkpoint", "record_checkpoint", "HomeWitness"]


def make_checkpoint(ledger: Ledger, signer: Signer) -> Checkpoint:
    """Sign a checkpoint of ``ledger``'s main chain as it is now (writes nothing)."""
    head = ledger.head(0)
    unsigned = Checkpoint(ledger.ledger_id, head.size, head.chain, int(ledger.clock() * 1000), signer.key_id, b"")
    return unsigned.signed(signer)


def record_checkpoint(ledger: Ledger, *, book: CheckpointBook | None = None) -> tuple[StoredEntry, Checkpoint]:
    """Write a ``checkpoint`` entry and return it with a signed checkpoint *after* it.

    The entry's body records the state before it (``size``, ``head``); the
    returned :class:`Checkpoint` covers the ledger including the entry, and is
    also added to ``book`` when given. Needs a ledger opened with a signer.
    """
    signer = ledger.signer
    if signer is None:
        raise UsageError(f"ledger {ledger.path} was opened without a signing key; cannot checkpoint")
    # The head is read and the entry appended in one write transaction, so the
    # body names exactly the state this entry follows even with other writers.
    with ledger.write_txn():
        before = ledger.head(0)
        entry = ledger.append("checkpoint", {"size": before.size, "head": before.chain})
        checkpoint = make_checkpoint(ledger, signer)
    if book is not None:
        book.add(checkpoint, copy=ledger.path)
    return entry, checkpoint


class HomeWitness:
    """The :class:`~exo_core.ledger.ledger.HeadWitness` of an Exo home.

    Signs each committed head with the ledger's signer and keeps it in the
    home's book (``<home>/ledger-checkpoints.sqlite``). The book is opened on
    the first record and kept open (one connection; several processes share
    the file through SQLite's locks) until :meth:`close`.
    """

    __slots__ = ("book_path", "_book", "_lock")

    def __init__(self, home_root: str | Path) -> None:
        self.book_path = Path(home_root) / BOOK_FILE_NAME
        self._book: CheckpointBook | None = None
        self._lock = threading.Lock()

    def saw(self, ledger: Ledger) -> None:
        """Sign and keep ``ledger``'s main-chain head as seen at its path."""
        signer = ledger.signer
        if signer is None:
            return
        checkpoint = make_checkpoint(ledger, signer)
        with self._lock:
            if self._book is None:
                self._book = CheckpointBook(self.book_path)
            book = self._book
        book.record_head(ledger.path, checkpoint)

    def close(self) -> None:
        """Close the book if it was opened (idempotent; a later :meth:`saw` opens it again)."""
        with self._lock:
            if self._book is not None:
                self._book.close()
                self._book = None
