"""The ledger's trust anchor: which keys this machine trusts for a store, kept outside it.

A store folder travels (exports, syncs, a USB stick, a cloud folder), so
nothing inside it can say which keys to trust: whoever can write the folder
could re-sign the history with their own key and list that key in
``STORE.toml``. The anchor lives in the Exo home instead, one file per ledger
(the ledger id is the store id)::

    $EXO_HOME/trust/            0700
      <ledger id>.json          0600
        {"v": 1, "ledger": "st_…", "owner": "ed25519:…", "machine": "ed25519:…", "how": "init"}

* ``owner``: the owner's key, pinned once: by ``exo init`` (this machine's key
  made the store) or by ``exo store import`` (the export's signed owner, or the
  one ``--owner`` names). It never changes by itself; :meth:`TrustStore.pin`
  refuses a different owner.
* ``machine``: this machine's own key. A machine trusts what it signed itself
  (its secret is in the home, not the store).
* Other machines' keys count only when the owner enrolled them: an ``enrol``
  ledger entry signed by the owner key (``exo store enrol KEY``), which is
  self-authenticating and so may travel inside the store and with sync.

Trusted authors = owner ∪ machine ∪ enrolled (:func:`trusted_keys`). What
this stops and what it does not: docs/security.md, "The ledger's trust anchor".
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from exo_core.errors import ConflictError, CorruptDataError
from exo_core.ledger.checkpoint import BOOK_FILE_NAME, Checkpoint, CheckpointBook, SeenHead
from exo_core.ledger.keys import is_key_id
from exo_core.ledger.ledger import Ledger
from exo_core.ledger.witness import HomeWitness
from exo_core.private_files import private_dir

__all__ = ["Anchor", "TrustStore", "MachineTrust", "enrolled_keys", "trusted_keys", "TRUST_DIR"]

TRUST_DIR = "trust"
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@dataclass(frozen=True, slots=True)
class Anchor:
    """This machine's pin for one ledger: the owner's key and its own."""

    ledger_id: str
    owner: str
    machine: str | None = None
    how: str = ""

    def to_json(self) -> dict[str, object]:
        """The file form (``machine`` omitted when unknown)."""
        doc: dict[str, object] = {"v": 1, "ledger": self.ledger_id, "owner": self.owner, "how": self.how}
        if self.machine is not None:
            doc["machine"] = self.machine
        return doc

    @classmethod
    def from_json(cls, doc: object, *, where: Path) -> Anchor:
        """Strictly decode :meth:`to_json`; :class:`CorruptDataError` names the file and field."""
        # The version's type first: a value that is not an int (a bool, a signalling-NaN Decimal)
        # must be refused, never compared (entry.py decodes its own version the same way).
        version = doc.get("v") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or type(version) is not int or version != 1:
            raise CorruptDataError(f"{where}: not a trust anchor (expected a JSON object with v = 1)")
        ledger_id, owner, machine, how = doc.get("ledger"), doc.get("owner"), doc.get("machine"), doc.get("how", "")
        if not isinstance(ledger_id, str) or not _SAFE_ID.fullmatch(ledger_id):
            raise CorruptDataError(f"{where}: 'ledger' is not a ledger id")
        if not is_key_id(owner):
            raise CorruptDataError(f"{where}: 'owner' is not a key id")
        if machine is not None and not is_key_id(machine):
            raise CorruptDataError(f"{where}: 'machine' is not a key id")
        if not isinstance(how, str):
            raise CorruptDataError(f"{where}: 'how' is not text")
        return cls(ledger_id, str(owner), machine if isinstance(machine, str) else None, how)


def enrolled_keys(ledger: Ledger, owner: str) -> frozenset[str]:
    """Keys the ``owner`` enrolled in ``ledger``: ``enrol`` entries whose author is ``owner``.

    An enrolment by any other author counts for nothing, whoever wrote it. The
    entries' signatures are checked by ``verify``, which runs with these pins.
    """
    return frozenset(
        entry.body["key"]
        for entry in ledger.entries(kind="enrol")
        if entry.author == owner and is_key_id(entry.body.get("key"))
    )


def trusted_keys(anchor: Anchor, ledgers: Iterable[Ledger] = ()) -> frozenset[str]:
    """owner ∪ machine ∪ every key the owner enrolled in any of ``ledgers``."""
    keys = {anchor.owner}
    if anchor.machine is not None:
        keys.add(anchor.machine)
    for ledger in ledgers:
        keys |= enrolled_keys(ledger, anchor.owner)
    return frozenset(keys)


class TrustStore:
    """The anchors of one Exo home (``<home>/trust/``)."""

    __slots__ = ("root",)

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, ledger_id: str) -> Path:
        if not _SAFE_ID.fullmatch(ledger_id) or ledger_id.startswith("."):
            raise CorruptDataError(f"{ledger_id!r} is not a ledger id this machine can pin")
        return self.root / f"{ledger_id}.json"

    def anchor(self, ledger_id: str) -> Anchor | None:
        """The pin for ``ledger_id``, None when this machine never pinned it."""
        path = self._path(ledger_id)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CorruptDataError(f"cannot read trust anchor {path} ({exc.strerror or exc})") from exc
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise CorruptDataError(f"{path}: not JSON ({exc}); restore it or pin again") from exc
        anchor = Anchor.from_json(doc, where=path)
        if anchor.ledger_id != ledger_id:
            raise CorruptDataError(f"{path} pins ledger {anchor.ledger_id}, not {ledger_id}")
        return anchor

    def pin(self, ledger_id: str, owner: str, *, machine: str | None, how: str) -> Anchor:
        """Pin ``owner`` for ``ledger_id`` (and this machine's key); returns the anchor now in force.

        An existing pin of the same owner is kept (the machine key is added if
        it was missing); a different owner is a :class:`ConflictError`: a key
        change is never taken from a store or an export.
        """
        from exo_core.atomic import atomic_write_text  # the store package imports the ledger

        if not is_key_id(owner):
            raise CorruptDataError(f"{owner!r} is not a key id ('ed25519:' + 64 hex digits)")
        current = self.anchor(ledger_id)
        if current is not None and current.owner != owner:
            raise ConflictError(
                f"this machine pins owner key {current.owner[:24]}… for store {ledger_id}, not {owner[:24]}…; "
                f"a different owner is never trusted from a store or an export. If the owner really changed "
                f"keys, delete {self._path(ledger_id)} and pin again"
            )
        if current is not None and (current.machine == machine or machine is None):
            return current
        anchor = Anchor(ledger_id, owner, machine, current.how if current is not None else how)
        private_dir(self.root)
        atomic_write_text(self._path(ledger_id), json.dumps(anchor.to_json(), sort_keys=True) + "\n")
        return anchor


class MachineTrust:
    """What one Exo home knows about stores: anchors, checkpoints, seen heads, its own key.

    Passed to store verify, import, export and sync by the CLI (the composition
    root); library callers that pass none get the older, weaker checks and say so.
    """

    __slots__ = ("home_root", "machine_key", "anchors")

    def __init__(self, home_root: str | Path, *, machine_key: str | None = None) -> None:
        self.home_root = Path(home_root)
        self.machine_key = machine_key
        self.anchors = TrustStore(self.home_root / TRUST_DIR)

    def anchor(self, ledger_id: str) -> Anchor | None:
        """The pin for ``ledger_id`` (None when this machine has none)."""
        return self.anchors.anchor(ledger_id)

    def pin(self, ledger_id: str, owner: str, *, how: str) -> Anchor:
        """Pin ``owner`` (and this machine's key) for ``ledger_id``; see :meth:`TrustStore.pin`."""
        return self.anchors.pin(ledger_id, owner, machine=self.machine_key, how=how)

    def witness(self) -> HomeWitness:
        """The witness that records every head this machine commits."""
        return HomeWitness(self.home_root)

    def _book(self) -> CheckpointBook | None:
        path = self.home_root / BOOK_FILE_NAME
        return CheckpointBook(path) if path.is_file() else None

    def checkpoints(self, ledger_id: str, *, copy: str | Path | None = None) -> list[Checkpoint]:
        """The checkpoints this machine kept for ``ledger_id`` (export and sync): of the copy whose ledger
        file is ``copy`` when given (another copy of the same ledger may have grown apart), else of all."""
        book = self._book()
        if book is None:
            return []
        with contextlib.closing(book):
            return book.for_ledger(ledger_id, copy=copy)

    def seen_head(self, ledger_path: str | Path) -> SeenHead | None:
        """The highest head this machine committed to the ledger file at ``ledger_path``."""
        book = self._book()
        if book is None:
            return None
        with contextlib.closing(book):
            return book.seen_head(ledger_path)

    def forget_head(self, ledger_path: str | Path) -> None:
        """Drop the seen head of ``ledger_path``: a new store was deliberately made there."""
        book = self._book()
        if book is None:
            return
        with contextlib.closing(book):
            book.forget_head(ledger_path)
