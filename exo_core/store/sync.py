"""``exo store sync A B``: two copies of one person that were both used.

Nothing is merged silently and nothing is dropped:

* **Ledger.** The ledger's own sync (:func:`exo_core.ledger.sync_ledgers`)
  gives each copy every entry of the other. When both main chains grew after
  their last shared entry, that is a *fork*: each copy keeps its own main
  chain and stores the other's tail, byte for byte, as a fork segment. The
  report carries the two conflicting signed checkpoints and the shared height.
* **Items.** ``items.sqlite`` is a view of the ledger's ``item`` entries; after
  the ledger sync both copies rebuild it from the ledger, so every item either
  copy saved is in both.
* **Curated files** (pack, routers, nodes). Each copy records what it held
  at its last sync, export or import (``.exo/sync-base.json``, else the
  import's or export's manifest). A change on one side (an edit, a new file
  or a *deletion*) is applied to the other when the other still holds exactly
  what the changing side held before: the other's content is then what was
  knowingly replaced or deleted, so nothing is lost. Anything else is a
  *conflict* (changed in both, or deleted in one and changed in the other):
  each copy keeps its own state, the other's version is saved under
  ``.exo/conflicts/<sync id>/`` in both, and the report lists it until the
  person makes the two copies agree.
"""

from __future__ import annotations

import datetime as _dt
import json
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.atomic import atomic_write_bytes, atomic_write_text
from exo_core.errors import ConflictError, CorruptDataError
from exo_core.private_files import private_dir, private_file
from exo_core.store import layout
from exo_core.store.export_manifest import canonical_json, copy_candidates, hash_file
from exo_core.store.items import rebuild_items
from exo_core.store.store import Store

if TYPE_CHECKING:
    from exo_core.ledger import CheckpointBook, MachineTrust, Signer, SyncReport

__all__ = ["StoreSyncReport", "sync_stores", "record_state", "SYNC_BASE", "IMPORT_MANIFEST"]

SYNC_BASE = "sync-base.json"
IMPORT_MANIFEST = "import-manifest.json"


@dataclass(slots=True)
class StoreSyncReport:
    """What a store sync did; ``ledger`` is the ledger's own report."""

    sync_id: str
    ledger: SyncReport
    items: tuple[int, int] = (0, 0)
    copied: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    @property
    def forked(self) -> bool:
        """True when the two ledgers had diverged."""
        return self.ledger.fork is not None

    def render(self) -> str:
        """Human-readable report."""
        led, fork = self.ledger, self.ledger.fork
        lines = [
            f"sync {self.sync_id}",
            f"  ledger: {led.into_local.imported} entries into A, {led.into_foreign.imported} into B",
        ]
        if fork is not None:
            lines.append(f"  FORK after shared height {fork.base.size} (head {fork.base.chain[:16]}…):")
            lines += [
                f"    {name}: height {head.size} head {head.head[:16]}… signed by {head.signer[:24]}…"
                for name, head in (("A", fork.local), ("B", fork.foreign))
            ]
            lines.append("    both tails are kept in both copies (the other's as a fork segment); nothing was merged")
        else:
            lines.append("  no fork: one copy was a prefix of the other")
        lines.append(f"  items rebuilt from the ledger: A {self.items[0]}, B {self.items[1]}")
        lines += [f"  copied {c}" for c in self.copied]
        lines += [f"  CONFLICT {c}" for c in self.conflicts]
        return "\n".join(lines)


def _hashes(root: Path) -> dict[str, str]:
    return {
        rel.as_posix(): hash_file(root / rel)[0]
        for rel in copy_candidates(root)
        if rel.as_posix() not in layout.SQLITE_FILES
    }


def _record(root: Path) -> dict[str, str]:
    """``{path: sha256}`` this copy held at its last sync, export or import; empty when unknown."""
    for name in (f"{layout.STATE_DIR}/{SYNC_BASE}", f"{layout.STATE_DIR}/{IMPORT_MANIFEST}", layout.MANIFEST):
        try:
            doc = json.loads((root / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return {}  # unreadable: no record, so nothing is deleted on its word
        files = doc.get("files") if isinstance(doc, dict) else None
        if isinstance(files, dict):
            return {
                rel: e["sha256"] if isinstance(e, dict) else e
                for rel, e in files.items()
                if isinstance(e, str) or (isinstance(e, dict) and isinstance(e.get("sha256"), str))
            }
    return {}


def record_state(root: Path, files: dict[str, str], label: str) -> None:
    """Write ``files`` as what ``root`` holds now: the base its next sync compares against."""
    private_dir(root / layout.STATE_DIR, parents=False)
    atomic_write_bytes(root / layout.STATE_DIR / SYNC_BASE, canonical_json({"at": label, "files": files}))


def _apply(src: Path, dest: Path, rel: str) -> str:
    if not (src / rel).is_file():
        (dest / rel).unlink()
        return "deleted"
    private_dir((dest / rel).parent)
    atomic_write_bytes(dest / rel, (src / rel).read_bytes())
    return "copied"


def _sync_files(a: Path, b: Path, sync_id: str, report: StoreSyncReport) -> None:
    ha, hb, ra, rb = _hashes(a), _hashes(b), _record(a), _record(b)
    for rel in sorted(set(ha) | set(hb)):
        sa, sb = ha.get(rel), hb.get(rel)
        if sa == sb:
            continue
        # A side's state wins only when the other still holds exactly what that side held
        # before (its record): then the other's content is what this side knowingly replaced
        # or deleted, and applying the change loses nothing.
        a_moved, b_moved = sb == ra.get(rel), sa == rb.get(rel)
        if a_moved != b_moved:
            src, dest, labels = (a, b, ("A", "B")) if a_moved else (b, a, ("B", "A"))
            report.copied.append(f"{rel} {_apply(src, dest, rel)} {labels[0]} -> {labels[1]}")
            continue
        for own, other, label in ((a, b, "B"), (b, a, "A")):
            if not (other / rel).is_file():
                continue  # deleted on that side: there is no version to keep
            keep = own / layout.STATE_DIR / "conflicts" / sync_id / label / rel
            private_dir(keep.parent)
            shutil.copyfile(other / rel, private_file(keep))
        changed, deleted = ("A", "B") if sa else ("B", "A")
        how = "changed in both copies" if sa and sb else f"deleted in {deleted}, changed in {changed}"
        report.conflicts.append(
            f"{rel}: {how}; each copy kept its own state, the other's version is in "
            f".exo/conflicts/{sync_id}/<A|B>/{rel}"
        )
    for root in (a, b):
        record_state(root, _hashes(root), sync_id)


def sync_stores(
    a: Path | str,
    b: Path | str,
    *,
    signer: Signer,
    book: CheckpointBook | None = None,
    trust: MachineTrust | None = None,
) -> StoreSyncReport:
    """Sync the two copies ``a`` and ``b`` of one store (see module doc).

    ``signer`` is this machine's ledger key (it signs the checkpoints);
    ``book`` is this machine's checkpoint book. Raises :class:`ConflictError`
    for two different stores and :class:`CorruptDataError` (from the ledger)
    when either copy fails verification; nothing is changed then.

    With ``trust`` (this machine's) and an anchor for the store, authors are
    pinned to the owner, this machine and the keys the owner enrolled in
    either copy; STORE.toml's lists are not trusted. Without an anchor, the
    two STORE.toml lists and ``signer`` are used (the older, weaker rule).
    """
    from exo_core.ledger import Ledger, sync_ledgers, trusted_keys
    from exo_core.store.ledger_bridge import open_ledger

    store_a, store_b = Store.open(a), Store.open(b)
    if store_a.root == store_b.root:
        raise ConflictError("A and B are the same folder")
    if store_a.config.store_id != store_b.config.store_id:
        raise ConflictError(
            f"{store_a.root} is store {store_a.config.store_id} and {store_b.root} is "
            f"{store_b.config.store_id}; only two copies of one store can be synced"
        )
    anchor = trust.anchor(store_a.config.store_id) if trust is not None else None
    if anchor is not None:
        with Ledger.open(store_a.ledger_path) as la, Ledger.open(store_b.ledger_path) as lb:
            pins = set(trusted_keys(anchor, (la, lb)))
    else:
        pins = {*store_a.config.owner_keys, *store_b.config.owner_keys, signer.key_id}
    witness = trust.witness() if trust is not None else None
    sync_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    with (
        open_ledger(store_a.root, signer=signer, witness=witness) as la,
        open_ledger(store_b.root, signer=signer, witness=witness) as lb,
    ):
        try:
            ledger_report = sync_ledgers(
                la, lb, pins=pins, book=book, local_origin=str(store_a.root), foreign_origin=str(store_b.root)
            )
        except CorruptDataError as exc:
            if anchor is None or "not a pinned key" not in exc.message:
                raise
            raise CorruptDataError(
                f"{exc.message}. If another machine of yours wrote it, enrol that machine's key first: "
                "'exo store enrol KEY_ID' on the owner's machine ('exo store trust' on the other machine prints "
                "its key)"
            ) from exc
        report = StoreSyncReport(sync_id, ledger_report)
        report.items = (rebuild_items(store_a.items_path, la), rebuild_items(store_b.items_path, lb))
    _sync_files(store_a.root, store_b.root, sync_id, report)
    record: dict[str, Any] = {"sync_id": sync_id, "report": report.render()}
    for root in (store_a.root, store_b.root):
        log = root / layout.STATE_DIR / "sync-log"
        private_dir(log)
        atomic_write_text(log / f"{sync_id}.json", json.dumps(record, indent=1))
    return report
