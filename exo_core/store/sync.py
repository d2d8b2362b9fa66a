"""``exo store sync A B``: two copies of one person that were both used.

Nothing is trusted before it verifies, nothing is merged silently and nothing is dropped:

* **Trust.** Both copies are verified first (:func:`exo_core.store.verify.verify_store`):
  manifest, databases, ledger, signatures and lint. Only the caller's own live
  store may lack a ``MANIFEST.json``; any other folder must be an export whose
  signed manifest still matches every file. A copy that does not verify is
  refused, naming the file, and neither copy changes.
* **Ledger.** The ledger's own sync (:func:`exo_core.ledger.sync_ledgers`)
  gives each copy every entry of the other. When both main chains grew after
  their last shared entry, that is a *fork*: each copy keeps its own main
  chain and stores the other's tail, byte for byte, as a fork segment. The
  report carries the two conflicting signed checkpoints and the shared height.
* **Items.** ``items.sqlite`` is a view of the ledger's ``item`` entries; a
  copy that received entries rebuilds it from the ledger.
* **Curated files** (pack, routers, nodes). Each copy's record
  (:mod:`exo_core.store.history`) says which versions of a file it held. A
  change on one side (an edit, a new file or a *deletion*) is applied to the
  other when the changing side held the other's version before: the other's
  content is then what was knowingly replaced, so nothing is lost. Anything
  else is a *conflict*: each copy keeps its own state, the other's version is
  saved under ``.exo/conflicts/<sync id>/`` in both, and the conflict stays
  open (``.exo/conflicts/open.json``) until ``exo store resolve`` settles it
  (:mod:`exo_core.store.conflicts`). ``STORE.toml``'s owner keys are merged,
  never a conflict.
* **Quiet when converged.** Copies that hold the same entries and files are
  left byte for byte as they were: no checkpoint, no record, no log.
* **An export stays verifiable.** A copy with a manifest that the sync
  changed gets a new manifest signed by this machine's key.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import secrets
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.atomic import atomic_write_bytes, atomic_write_text
from exo_core.errors import ConflictError, CorruptDataError
from exo_core.private_files import private_dir, private_file
from exo_core.store import layout
from exo_core.store.conflicts import OpenConflict, read_open, resolutions, write_open
from exo_core.store.export_manifest import build_manifest
from exo_core.store.history import IMPORT_MANIFEST, SYNC_BASE, Record, curated_hashes, read_record, write_record
from exo_core.store.items import rebuild_items
from exo_core.store.store import Store
from exo_core.store.store_toml import CONFIG_NAME, read_config, write_config
from exo_core.store.verify import verify_store

if TYPE_CHECKING:
    from exo_core.ledger import Checkpoint, CheckpointBook, MachineTrust, Signer, SyncReport

__all__ = ["StoreSyncReport", "sync_stores", "SYNC_BASE", "IMPORT_MANIFEST"]

_LABELS = ("A", "B")


@dataclass(slots=True)
class StoreSyncReport:
    """What a store sync did; ``ledger`` is the ledger's own report."""

    sync_id: str
    ledger: SyncReport
    items: dict[str, int] = field(default_factory=dict)
    copied: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    resigned: list[str] = field(default_factory=list)

    @property
    def forked(self) -> bool:
        """True when the two ledgers had diverged."""
        return self.ledger.fork is not None

    @property
    def quiet(self) -> bool:
        """True when the sync changed neither copy (they had converged, or only open conflicts remain)."""
        moved = self.ledger.into_local.imported or self.ledger.into_foreign.imported
        return not moved and not self.copied and not self.resigned

    def render(self) -> str:
        """Human-readable report."""
        led, fork = self.ledger, self.ledger.fork
        lines = [f"sync {self.sync_id}"]
        if self.quiet and not self.conflicts:
            lines.append("  already in sync: nothing to move, nothing written")
            return "\n".join(lines)
        lines.append(f"  ledger: {led.into_local.imported} entries into A, {led.into_foreign.imported} into B")
        if fork is not None:
            lines.append(f"  FORK after shared height {fork.base.size} (head {fork.base.chain[:16]}…):")
            lines += [
                f"    {name}: height {head.size} head {head.head[:16]}… signed by {head.signer[:24]}…"
                for name, head in (("A", fork.local), ("B", fork.foreign))
            ]
            lines.append("    both tails are kept in both copies (the other's as a fork segment); nothing was merged")
        elif led.into_local.imported or led.into_foreign.imported:
            lines.append("  no fork: one copy was a prefix of the other")
        if self.items:
            counts = ", ".join(f"{label} {count}" for label, count in sorted(self.items.items()))
            lines.append(f"  items rebuilt from the ledger: {counts}")
        lines += [f"  copied {c}" for c in self.copied]
        lines += [f"  CONFLICT {c}" for c in self.conflicts]
        if self.conflicts:
            lines.append("  settle each with 'exo store resolve PATH --keep mine|theirs|both', then sync again")
        lines += [f"  re-signed {r}" for r in self.resigned]
        return "\n".join(lines)


def _refuse_unverified(root: Path, label: str, *, live: bool, trust: MachineTrust | None, other: Path) -> None:
    report = verify_store(root, trust=trust, live=live, also_enrolled=(other / layout.LEDGER,))
    if report.ok:
        return
    shown = "\n".join(f"  {error}" for error in report.errors[:8])
    more = f"\n  ... and {len(report.errors) - 8} more" if len(report.errors) > 8 else ""
    raise CorruptDataError(
        f"copy {label} ({root}) does not verify, so nothing was synced and neither copy changed:\n{shown}{more}\n"
        "Sync only with a fresh 'exo store export' of the other machine's store, made by a machine this one trusts"
    )


def _merged_owner_keys(a: Path, b: Path) -> tuple[str, ...] | None:
    """The union of both STORE.toml owner key lists when the files differ in nothing else (None otherwise)."""
    config_a, config_b = read_config(a), read_config(b)
    if dataclasses.replace(config_a, owner_keys=()) != dataclasses.replace(config_b, owner_keys=()):
        return None
    merged = list(config_a.owner_keys)
    merged += [key for key in config_b.owner_keys if key not in merged]
    return tuple(merged)


def _apply(src: Path, dest: Path, rel: str) -> str:
    if not (src / rel).is_file():
        (dest / rel).unlink()
        return "deleted"
    private_dir((dest / rel).parent)
    atomic_write_bytes(dest / rel, (src / rel).read_bytes())
    return "copied"


@dataclass(slots=True)
class _Side:
    root: Path
    label: str
    record: Record
    opened: dict[str, OpenConflict]
    changed: bool = False


def _save_other(side: _Side, other: _Side, rel: str, sync_id: str) -> str | None:
    """Keep ``other``'s version of ``rel`` under ``side``'s ``.exo/conflicts/``; its path (None: deleted there)."""
    if not (other.root / rel).is_file():
        return None
    saved = f"{layout.STATE_DIR}/conflicts/{sync_id}/{other.label}/{rel}"
    keep = side.root / saved
    private_dir(keep.parent)
    atomic_write_bytes(private_file(keep), (other.root / rel).read_bytes())
    return saved


def _conflict(a: _Side, b: _Side, rel: str, states: tuple[str | None, str | None], sync_id: str) -> str:
    saved_in = ""
    for side, other, mine, theirs in ((a, b, states[0], states[1]), (b, a, states[1], states[0])):
        known = side.opened.get(rel)
        if known is not None and (known.mine, known.theirs) == (mine, theirs):
            saved_in = known.sync_id  # reported before: the other's version is already kept
            continue
        saved = _save_other(side, other, rel, sync_id)
        side.opened[rel] = OpenConflict(rel, sync_id, mine, theirs, saved, str(other.root))
        side.changed = True
        saved_in = sync_id
    sa, sb = states
    changed, deleted = ("A", "B") if sa else ("B", "A")
    how = "changed in both copies" if sa and sb else f"deleted in {deleted}, changed in {changed}"
    return (
        f"{rel}: {how}; each copy kept its own state, the other's version is in .exo/conflicts/{saved_in}/<A|B>/{rel}"
    )


def _sync_files(a: _Side, b: _Side, sync_id: str, report: StoreSyncReport, settled: dict[str, Any]) -> None:
    merged = _merged_owner_keys(a.root, b.root)
    if merged is not None:
        for side in (a, b):
            config = read_config(side.root)
            if config.owner_keys != merged:
                write_config(side.root, dataclasses.replace(config, owner_keys=merged))
                report.copied.append(f"{CONFIG_NAME} owner keys merged into {side.label}")
                side.changed = True
    ha, hb = curated_hashes(a.root), curated_hashes(b.root)
    conflicted: set[str] = set()
    for rel in sorted(set(ha) | set(hb)):
        sa, sb = ha.get(rel), hb.get(rel)
        if sa == sb:
            continue
        kept = settled.get(rel, {})
        # A side's state wins when that side held the other's state before (or the person
        # settled that its state supersedes it) and the other side never held this one.
        a_moved = a.record.knows(rel, sb) or sb in kept.get(sa, ())
        b_moved = b.record.knows(rel, sa) or sa in kept.get(sb, ())
        if a_moved != b_moved:
            src, dest = (a, b) if a_moved else (b, a)
            report.copied.append(f"{rel} {_apply(src.root, dest.root, rel)} {src.label} -> {dest.label}")
            dest.changed = True
            continue
        conflicted.add(rel)
        report.conflicts.append(_conflict(a, b, rel, (sa, sb), sync_id))
    ha, hb = curated_hashes(a.root), curated_hashes(b.root)
    shared = a.record.merged(b.record)
    for side, states in ((a, ha), (b, hb)):
        # A file still in conflict keeps only its own copy's history: neither side ever held the other's version.
        record = Record({rel: list(held) for rel, held in shared.history.items() if rel not in conflicted})
        for rel in conflicted:
            record.history[rel] = list(side.record.history.get(rel, []))
        side.record = record.with_state(states)
        for rel in [rel for rel in side.opened if rel not in conflicted]:
            del side.opened[rel]  # converged: the conflict is over
            side.changed = True


def _resign(
    root: Path, checkpoint: Checkpoint, record: Record, *, signer: Signer, owner: str | None, sync_id: str
) -> None:
    """Give the export at ``root`` a new manifest for what it holds now, signed by this machine.

    Called once the ledger is closed: the manifest hashes the file as it rests."""
    config = read_config(root)
    manifest = build_manifest(
        root,
        export_id=f"sync-{sync_id}",
        exported_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        store_id=config.store_id,
        store_format=config.format,
        ledger={
            "ledger_id": checkpoint.ledger_id,
            "size": checkpoint.size,
            "head": checkpoint.head,
            "checkpoint": checkpoint.to_json(),
        },
        owner=owner or signer.key_id,
        signer=signer,
        history=record.to_json(),
    )
    atomic_write_bytes(root / layout.MANIFEST, manifest)


def sync_stores(
    a: Path | str,
    b: Path | str,
    *,
    signer: Signer,
    book: CheckpointBook | None = None,
    trust: MachineTrust | None = None,
    live: Collection[Path | str] = (),
) -> StoreSyncReport:
    """Sync the two copies ``a`` and ``b`` of one store (see module doc).

    ``signer`` is this machine's ledger key (it signs the checkpoints and any
    manifest it rewrites); ``book`` is this machine's checkpoint book.
    ``live`` names the folders the caller vouches for as live stores (the CLI:
    this home's store); every other folder must be a verifying export.
    Raises :class:`CorruptDataError` when either copy fails verification and
    :class:`ConflictError` for two different stores; nothing is changed then.

    With ``trust`` (this machine's) and an anchor for the store, authors are
    pinned to the owner, this machine and the keys the owner enrolled in
    either copy; STORE.toml's lists are not trusted. Without an anchor, the
    two STORE.toml lists and ``signer`` are used (the older, weaker rule).
    """
    from exo_core.ledger import Ledger, make_checkpoint, sync_ledgers, trusted_keys
    from exo_core.store.ledger_bridge import open_ledger

    store_a, store_b = Store.open(a), Store.open(b)
    if store_a.root == store_b.root:
        raise ConflictError("A and B are the same folder")
    if store_a.config.store_id != store_b.config.store_id:
        raise ConflictError(
            f"{store_a.root} is store {store_a.config.store_id} and {store_b.root} is "
            f"{store_b.config.store_id}; only two copies of one store can be synced"
        )
    live_roots = {Path(p).resolve() for p in live}
    _refuse_unverified(store_a.root, "A", live=store_a.root in live_roots, trust=trust, other=store_b.root)
    _refuse_unverified(store_b.root, "B", live=store_b.root in live_roots, trust=trust, other=store_a.root)
    anchor = trust.anchor(store_a.config.store_id) if trust is not None else None
    if anchor is not None:
        with Ledger.open(store_a.ledger_path) as la, Ledger.open(store_b.ledger_path) as lb:
            pins = set(trusted_keys(anchor, (la, lb)))
    else:
        pins = {*store_a.config.owner_keys, *store_b.config.owner_keys, signer.key_id}
    witness = trust.witness() if trust is not None else None
    sync_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    side_a = _Side(store_a.root, "A", read_record(store_a.root), read_open(store_a.root))
    side_b = _Side(store_b.root, "B", read_record(store_b.root), read_open(store_b.root))
    with (
        open_ledger(store_a.root, signer=signer, witness=witness) as la,
        open_ledger(store_b.root, signer=signer, witness=witness) as lb,
    ):
        counts = (la.count(), lb.count())
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
        side_a.changed, side_b.changed = la.count() != counts[0], lb.count() != counts[1]
        for side, store, ledger in ((side_a, store_a, la), (side_b, store_b, lb)):
            if side.changed:  # entries arrived: the items view follows the ledger
                report.items[side.label] = rebuild_items(store.items_path, ledger)
        _sync_files(side_a, side_b, sync_id, report, resolutions(la))
        heads = {side_a.label: make_checkpoint(la, signer), side_b.label: make_checkpoint(lb, signer)}
    for side in (side_a, side_b):
        if not side.changed:
            continue
        if (side.root / layout.MANIFEST).exists():
            owner = anchor.owner if anchor is not None else None
            _resign(side.root, heads[side.label], side.record, signer=signer, owner=owner, sync_id=sync_id)
            report.resigned.append(f"{layout.MANIFEST} of {side.label}, by this machine's key {signer.key_id}")
        else:
            write_record(side.root, side.record, sync_id)
        write_open(side.root, side.opened)
        log = side.root / layout.STATE_DIR / "sync-log"
        private_dir(log)
        entry = {"sync_id": sync_id, "report": report.render()}
        atomic_write_text(log / f"{sync_id}.json", json.dumps(entry, indent=1))
    return report
