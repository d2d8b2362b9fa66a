"""Everything the store asks of the ledger (:mod:`exo_core.ledger`), in one place.

Items, importers and onboarding code against the narrow protocols here
(:class:`LedgerWriter`, :class:`LedgerReader`), which the real ``Ledger``
satisfies, so they never import the ledger at module level. A store's ledger
is ``<top store>/ledger.sqlite``; its ledger id is the store id, so two
folders are copies of one person exactly when their ledgers share an id.
Signing keys live in the Exo home, never in the store.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from exo_core.store import layout

if TYPE_CHECKING:
    from exo_core.ledger import Checkpoint, CheckpointBook, HeadWitness, Ledger, Signer

__all__ = [
    "EntryLike",
    "LedgerWriter",
    "LedgerReader",
    "LedgerLike",
    "open_ledger",
    "create_ledger",
    "verify_ledger",
    "checkpoint_hook",
]


class EntryLike(Protocol):
    """What the store reads from a stored ledger entry."""

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def scope(self) -> str: ...

    @property
    def body(self) -> dict[str, Any]: ...


class LedgerWriter(Protocol):
    """Appends signed entries; ``idem`` makes a retried append a no-op."""

    def append(
        self,
        kind: str,
        body: Mapping[str, Any],
        *,
        refs: Sequence[str] = (),
        scope: str | None = None,
        idem: str | None = None,
    ) -> EntryLike: ...


class LedgerReader(Protocol):
    """Reads entries in arrival order."""

    def entries(self, *, kind: str | None = None, scope: str | None = None) -> Iterator[EntryLike]: ...


class LedgerLike(LedgerWriter, LedgerReader, Protocol):
    """Both halves: what items and importers use."""


def create_ledger(store_root: Path, store_id: str) -> None:
    """Create the empty ledger of a new store (its ledger id is the store id)."""
    from exo_core.ledger import Ledger

    Ledger.open(Path(store_root) / layout.LEDGER, create=True, ledger_id=store_id).close()


def open_ledger(store_root: Path, *, signer: Signer | None = None, witness: HeadWitness | None = None) -> Ledger:
    """Open the ledger of the (top) store at ``store_root``; writable only with a ``signer``.

    ``witness`` (the home's) records each head this machine commits there."""
    from exo_core.ledger import Ledger

    return Ledger.open(Path(store_root) / layout.LEDGER, signer=signer, witness=witness)


def verify_ledger(
    path: Path,
    pins: Collection[str] | None,
    *,
    checkpoints: Iterable[Checkpoint] = (),
    seen_heads: Iterable[Checkpoint] = (),
) -> tuple[list[str], list[str]]:
    """``(errors, notes)`` from the ledger's own verify.

    Authors are pinned to ``pins`` (from :mod:`exo_core.store.trust`: the
    anchor outside the store when this machine has one), so a valid signature
    by a stranger's key is an error. ``checkpoints`` are heads seen before (an
    export's manifest carries one) and ``seen_heads`` the heads this machine
    wrote to this file: a copy that lost its tail, or an older one put in its
    place, fails them.
    """
    from exo_core.errors import ExoError
    from exo_core.ledger import Ledger

    try:
        ledger = Ledger.open(path)
    except ExoError as exc:
        return [f"{path.name}: cannot open the ledger ({exc.message})"], []
    with ledger:
        report = ledger.verify(pins=pins, checkpoints=list(checkpoints), seen_heads=list(seen_heads))
        forks = [s.seg for s in ledger.segments() if s.seg != 0]
        notes = [
            f"{path.name}: ledger {ledger.ledger_id}, {ledger.count()} entries, main height {ledger.head(0).size}"
            + (f", fork segments {forks} (see 'exo store sync' report)" if forks else "")
        ]
    if pins is None:
        notes.append(f"{path.name}: no owner keys known, so authors were not pinned")
    return [f"{path.name}: {p.describe()}" for p in report.problems], notes


def checkpoint_hook(
    signer: Signer | None, book: CheckpointBook | None = None, *, witness: HeadWitness | None = None
) -> Callable[[Path], dict[str, Any]]:
    """A ``ledger_hook`` for :func:`export_store`: write a signed checkpoint entry first.

    Without a signer (no key on this machine) nothing is written and the
    manifest records the unsigned head only.
    """
    from exo_core.ledger import Ledger, record_checkpoint

    def hook(ledger_path: Path) -> dict[str, Any]:
        with Ledger.open(ledger_path, signer=signer, witness=witness) as ledger:
            if signer is None:
                head = ledger.head(0)
                return {"ledger_id": ledger.ledger_id, "size": head.size, "head": head.chain}
            _, checkpoint = record_checkpoint(ledger, book=book)
            return {
                "ledger_id": ledger.ledger_id,
                "size": checkpoint.size,
                "head": checkpoint.head,
                "checkpoint": checkpoint.to_json(),
            }

    return hook
