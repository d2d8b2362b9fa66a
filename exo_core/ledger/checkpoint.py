"""Signed checkpoints: "this machine saw ledger L at height N with head H".

A checkpoint is a small signed statement, kept outside the ledger by every
machine that has seen the store (:class:`CheckpointBook`, a SQLite file in the
Exo home) and, when written at export and sync, also inside the ledger as a
``checkpoint`` entry. Because a machine keeps its own book, a copy that lost
its tail or was replaced by an older copy fails ``verify(checkpoints=...)``:
the head the machine once saw is no longer in it.

Statement bytes (canonical JSON)::

    {"head": H, "ledger": L, "signer": "ed25519:..", "size": N, "ts": ms,
     "type": "exo-ledger-checkpoint", "v": 1}

signature = Ed25519(signer, b"exo-ledger/1 checkpoint\\n" + statement).
``size`` is a *height* (the length of the path from genesis to ``head``), so a
checkpoint stays checkable after sync moves that history into a fork segment.

Copies. One machine may hold several copies of one store (a second working
copy, a backup being brought up to date). Each checkpoint is kept with the copy
it was taken of (the ledger file's resolved path), and a copy is checked
against its own: another copy of the same ledger that was made before a
checkpoint and grew on its own since does not hold that head, and that is a
fork for ``exo store sync`` to join, not a rollback. Rows from before copies
were told apart (no copy named) are checked against every copy.

Seen heads. Besides checkpoints, the book keeps one signed checkpoint per
ledger *file* (its resolved path): the highest main-chain head this machine
committed there. :class:`HomeWitness` writes it after every committed append
batch, so ``verify`` catches a copy that lost even the entries written after
the last checkpoint, an emptied ledger, or an older copy put in its place
(the log only grows; docs/ledger.md §6).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nacl.exceptions

from exo_core.errors import CorruptDataError
from exo_core.ledger.canonical import canonical_json, parse_canonical
from exo_core.ledger.db import Guarded, connect
from exo_core.ledger.keys import Signer, is_key_id, verify_key_from_id
from exo_core.ledger.kinds import is_entry_id

__all__ = [
    "Checkpoint",
    "CheckpointBook",
    "BOOK_FILE_NAME",
    "checkpoint_from_canonical",
    "SeenHead",
]

BOOK_FILE_NAME = "ledger-checkpoints.sqlite"
_DOMAIN = b"exo-ledger/1 checkpoint\n"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A signed statement of one ledger's main-chain head as some machine saw it."""

    ledger_id: str
    size: int
    head: str
    ts: int
    signer: str
    sig: bytes

    def statement(self) -> bytes:
        """The canonical bytes the signature covers."""
        return canonical_json(
            {
                "v": 1,
                "type": "exo-ledger-checkpoint",
                "ledger": self.ledger_id,
                "size": self.size,
                "head": self.head,
                "ts": self.ts,
                "signer": self.signer,
            },
            field="checkpoint",
        )

    def signed(self, signer: Signer) -> Checkpoint:
        """This statement signed by ``signer`` (whose key must be the one named in ``signer``)."""
        return dataclasses.replace(self, sig=signer.sign(_DOMAIN + self.statement()))

    def signature_ok(self) -> bool:
        """True when ``sig`` is the signer's signature of :meth:`statement`."""
        try:
            verify_key_from_id(self.signer).verify(_DOMAIN + self.statement(), self.sig)
        except (CorruptDataError, nacl.exceptions.BadSignatureError):
            return False
        return True

    def to_json(self) -> dict[str, Any]:
        """JSON form (``sig`` as hex); :meth:`from_json` reads it back."""
        return {
            "ledger": self.ledger_id,
            "size": self.size,
            "head": self.head,
            "ts": self.ts,
            "signer": self.signer,
            "sig": self.sig.hex(),
        }

    @classmethod
    def from_json(cls, doc: object) -> Checkpoint:
        """Strictly decode :meth:`to_json` output; :class:`CorruptDataError` names the bad field."""
        if not isinstance(doc, dict) or set(doc) != {"ledger", "size", "head", "ts", "signer", "sig"}:
            raise CorruptDataError("checkpoint: expected an object with ledger, size, head, ts, signer, sig")
        ledger_id, size, head, ts, signer, sig = (doc[k] for k in ("ledger", "size", "head", "ts", "signer", "sig"))
        if not isinstance(ledger_id, str) or not ledger_id:
            raise CorruptDataError("checkpoint.ledger is not a ledger id")
        for name, value in (("size", size), ("ts", ts)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise CorruptDataError(f"checkpoint.{name} is not a non-negative integer")
        if not is_entry_id(head):
            raise CorruptDataError("checkpoint.head is not a 64-hex chain hash")
        if not is_key_id(signer):
            raise CorruptDataError("checkpoint.signer is not a key id")
        try:
            sig_b = bytes.fromhex(sig) if isinstance(sig, str) else b""
        except ValueError as exc:
            raise CorruptDataError("checkpoint.sig is not hex") from exc
        if len(sig_b) != 64:
            raise CorruptDataError("checkpoint.sig is not a 64-byte signature")
        return cls(ledger_id, size, head, ts, signer, sig_b)


@dataclass(frozen=True, slots=True)
class SeenHead:
    """The highest head this machine committed to the ledger file at ``path``."""

    path: str
    checkpoint: Checkpoint


class CheckpointBook(Guarded):
    """A machine's record of every checkpoint it made or accepted, per ledger.

    Stored at ``<Exo home>/ledger-checkpoints.sqlite`` (machine-local: it must
    not travel with the store, or a rolled-back copy would carry a matching
    rolled-back book). The file has the ledger's durability settings (no WAL: see db.py).
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(connect(Path(path), create=True, what="checkpoint book"), Path(path), "checkpoint book")
        with self.write_txn() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS checkpoints (ledger TEXT NOT NULL, size INTEGER NOT NULL, "
                "head TEXT NOT NULL, doc TEXT NOT NULL, copy TEXT, UNIQUE (ledger, size, head, doc, copy))"
            )
            columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoints)")}
            if "copy" not in columns:  # a book from before copies were told apart: its rows name none
                conn.execute("ALTER TABLE checkpoints ADD COLUMN copy TEXT")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS heads (path TEXT PRIMARY KEY, ledger TEXT NOT NULL, "
                "size INTEGER NOT NULL, doc TEXT NOT NULL)"
            )

    @classmethod
    def for_home(cls, home_root: str | Path) -> CheckpointBook:
        """The book of the Exo home at ``home_root``."""
        return cls(Path(home_root) / BOOK_FILE_NAME)

    def add(self, checkpoint: Checkpoint, *, copy: str | Path | None = None) -> None:
        """Keep ``checkpoint`` of the copy whose ledger file is ``copy`` (refused if its signature fails).

        Without ``copy`` the checkpoint is checked against every copy of its ledger.
        """
        if not checkpoint.signature_ok():
            raise CorruptDataError(f"checkpoint of {checkpoint.ledger_id} has a bad signature; not kept")
        doc = json.dumps(checkpoint.to_json(), sort_keys=True)
        with self.write_txn() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO checkpoints(ledger, size, head, doc, copy) VALUES (?, ?, ?, ?, ?)",
                (checkpoint.ledger_id, checkpoint.size, checkpoint.head, doc, None if copy is None else _key(copy)),
            )

    def for_ledger(self, ledger_id: str, *, copy: str | Path | None = None) -> list[Checkpoint]:
        """The kept checkpoints of ``ledger_id``, highest first: of the copy at ``copy`` (and rows naming no
        copy) when given, else of every copy."""
        if copy is None:
            rows = self.query("SELECT doc FROM checkpoints WHERE ledger=? ORDER BY size DESC, rowid DESC", (ledger_id,))
        else:
            rows = self.query(
                "SELECT doc FROM checkpoints WHERE ledger=? AND (copy IS NULL OR copy=?) "
                "ORDER BY size DESC, rowid DESC",
                (ledger_id, _key(copy)),
            )
        try:
            return [Checkpoint.from_json(json.loads(doc)) for (doc,) in rows]
        except ValueError as exc:
            raise CorruptDataError(f"checkpoint book {self.path} holds a bad row: {exc}") from exc

    def record_head(self, path: str | Path, checkpoint: Checkpoint) -> None:
        """Keep ``checkpoint`` as the head seen at ``path`` if it is higher than the one kept.

        Only ever moves up, and never to another ledger: a file whose ledger id
        changed keeps the old record, so ``verify`` reports the swap.
        """
        if not checkpoint.signature_ok():
            raise CorruptDataError(f"head of {checkpoint.ledger_id} has a bad signature; not kept")
        doc = json.dumps(checkpoint.to_json(), sort_keys=True)
        with self.write_txn() as conn:
            conn.execute(
                "INSERT INTO heads(path, ledger, size, doc) VALUES (?, ?, ?, ?) ON CONFLICT(path) DO UPDATE "
                "SET size = excluded.size, doc = excluded.doc "
                "WHERE heads.ledger = excluded.ledger AND excluded.size > heads.size",
                (_key(path), checkpoint.ledger_id, checkpoint.size, doc),
            )

    def seen_head(self, path: str | Path) -> SeenHead | None:
        """The head this machine last committed at ``path`` (None if it never wrote there)."""
        rows = self.query("SELECT doc FROM heads WHERE path=?", (_key(path),))
        if not rows:
            return None
        try:
            return SeenHead(_key(path), Checkpoint.from_json(json.loads(rows[0][0])))
        except ValueError as exc:
            raise CorruptDataError(f"checkpoint book {self.path} holds a bad head row: {exc}") from exc

    def forget_head(self, path: str | Path) -> None:
        """Drop the head kept for ``path`` (a new store was deliberately made there)."""
        with self.write_txn() as conn:
            conn.execute("DELETE FROM heads WHERE path=?", (_key(path),))


def _key(path: str | Path) -> str:
    return str(Path(path).resolve())


def checkpoint_from_canonical(data: bytes) -> Checkpoint:
    """Decode a checkpoint from canonical JSON bytes of :meth:`Checkpoint.to_json`."""
    return Checkpoint.from_json(parse_canonical(data, what="checkpoint"))
