"""Moving the person: a consistent copy of a store, even while exod writes.

``export_store(src, dest)``:

1. Builds the copy in a sibling staging folder ``.<dest>.export-<rand>``.
2. Copies curated files byte for byte (each fsynced); copies ``ledger.sqlite``
   and ``items.sqlite`` with SQLite's online backup API, never as raw files,
   so a database being written is copied as one consistent snapshot.
3. Writes ``MANIFEST.json`` (hashes of every file, signed with this
   machine's key when it has one: docs/store.md) *last*.
4. Swaps the staging folder into place in one atomic step
   (``renameat2(RENAME_EXCHANGE)`` when ``dest`` already holds an older copy,
   a plain rename otherwise), then deletes the old copy.

A kill at any instant leaves ``dest`` as the complete old copy or the complete
new one; ``verify_store`` says which (the manifest names its export). Staging
leftovers of a killed export are removed by the next export.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import secrets
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exo_core.atomic import atomic_write_bytes, exchange_paths, fsync_dir, fsync_tree, remove_tree
from exo_core.errors import ConflictError, NotFoundError, StorageError, UsageError
from exo_core.private_files import private_dir, private_file
from exo_core.store import layout
from exo_core.store.export_manifest import Manifest, ManifestSigner, build_manifest, copy_candidates, read_manifest
from exo_core.store.history import IMPORT_MANIFEST, Record, curated_hashes, read_record, write_record
from exo_core.store.migrate import StepHook, no_step
from exo_core.store.store import Store
from exo_core.store.store_toml import read_config, write_config
from exo_core.store.verify import manifest_problems, verify_store

if TYPE_CHECKING:
    from exo_core.ledger import Anchor, MachineTrust

__all__ = ["ExportResult", "export_store", "import_store", "copy_sqlite", "StepHook"]

LedgerHook = Callable[[Path], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote."""

    dest: Path
    export_id: str
    files: int
    ledger: dict[str, Any]


def copy_sqlite(src: Path, dest: Path) -> None:
    """Copy a (possibly live) SQLite database with the online backup API, then fsync.

    The whole database is copied in one step under a read transaction, so a
    concurrent writer either lands entirely before or entirely after the copy.
    """
    try:
        source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as exc:
        raise StorageError(f"{src}: cannot open for copying ({exc})") from exc
    try:
        private_file(dest)  # SQLite gives the copy's journal the database's mode
        with contextlib.closing(sqlite3.connect(dest)) as target:
            source.backup(target)
            # A copy is a single file: leave it in rollback-journal mode so no
            # -wal file is needed to read it on the other machine (WAL is the only mode the file records).
            target.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.Error as exc:
        raise StorageError(f"{src}: backup to {dest} failed ({exc}); is the disk full?") from exc
    finally:
        source.close()
    _fsync_file(dest)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_replaceable(dest: Path, force: bool) -> None:
    if dest.exists() and not dest.is_dir():
        raise ConflictError(f"{dest} exists and is not a folder; choose another destination")
    if force or not dest.exists() or not any(dest.iterdir()):
        return
    if read_manifest(dest) is None:
        raise ConflictError(
            f"{dest} holds files but is not an unchanged export; refusing to replace it. "
            "If it is a store that was used, run 'exo store sync' instead; otherwise pass --force"
        )
    if problems := manifest_problems(dest):
        raise ConflictError(
            f"{dest} was changed since it was exported ({problems[0]}); replacing it could lose work. "
            "Use 'exo store sync' to combine the two, or pass --force"
        )


def _new_staging(dest: Path, export_id: str) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob(f".{dest.name}.export-*"):
        remove_tree(stale)  # left by a killed export or import
    staging = dest.with_name(f".{dest.name}.export-{export_id}")
    staging.mkdir(mode=0o700)  # the copy is as private as the store (docs/security.md, "Private files")
    private_dir(staging, parents=False)
    return staging


def _copy_tree(src: Path, staging: Path, *, manifest: dict[str, Any] | None, tick: StepHook) -> int:
    count = 0  # stays 0 for a tree with nothing to copy
    for rel in copy_candidates(src):
        count += 1
        target = staging / rel
        private_dir(target.parent)
        if rel.as_posix() in layout.SQLITE_FILES:
            copy_sqlite(src / rel, target)
        else:
            shutil.copyfile(src / rel, private_file(target))  # copyfile keeps the 0600 of the file it writes into
            _fsync_file(target)
        tick(f"file:{rel.as_posix()}")
    fsync_tree(staging)
    if manifest is not None:  # written last, and flushed with its folder, so its presence means a whole copy
        record: Record = manifest.pop("record")
        history = record.with_state(curated_hashes(staging)).to_json()
        atomic_write_bytes(staging / layout.MANIFEST, build_manifest(staging, **manifest, history=history))
        tick("manifest")
    return count


def _swap_into_place(staging: Path, dest: Path, tick: StepHook) -> None:
    old: Path | None = None
    if not dest.exists():
        staging.rename(dest)
    elif exchange_paths(staging, dest):
        old = staging  # the staging name now holds the old copy
    else:
        # No atomic exchange here (not Linux, or a file system without it):
        # move the old copy aside first; a kill between the two renames
        # leaves the old copy under '.<dest>.export-*-old' (documented).
        old = dest.with_name(f".{dest.name}.export-{secrets.token_hex(4)}-old")
        dest.rename(old)
        staging.rename(dest)
    fsync_dir(dest.parent)
    tick("swap")
    if old is not None:
        remove_tree(old)
    tick("done")


def export_store(
    src: Path | str,
    dest: Path | str,
    *,
    force: bool = False,
    ledger_hook: LedgerHook | None = None,
    on_step: StepHook | None = None,
    signer: ManifestSigner | None = None,
    owner: str | None = None,
) -> ExportResult:
    """Copy the store at ``src`` to ``dest`` consistently and atomically (see module doc).

    ``ledger_hook(ledger_path)`` runs before the copy (the ledger writes a
    signed checkpoint there) and returns what the manifest records about the
    ledger. ``on_step`` is called at every file boundary (tests kill there).
    ``signer`` signs the manifest and ``owner`` names the owner key this
    machine pinned for the store (default: the signer's own key), so verify
    and import can check the copy against a key they trust.
    Raises :class:`ConflictError` rather than replace a copy that was changed
    since its export, unless ``force``.
    """
    store = Store.open(src)
    dest = Path(dest).resolve()
    if dest == store.root or store.root in dest.parents:
        raise UsageError(f"{dest} is inside the store being exported; choose a folder outside it")
    _check_replaceable(dest, force)
    ledger_path = store.root / layout.LEDGER
    ledger_info = ledger_hook(ledger_path) if ledger_hook is not None and ledger_path.is_file() else {}
    export_id = secrets.token_hex(8)
    staging = _new_staging(dest, export_id)
    manifest = {
        "export_id": export_id,
        "exported_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "store_id": store.config.store_id,
        "store_format": store.config.format,
        "ledger": ledger_info,
        "signer": signer,
        "owner": owner if owner is not None or signer is None else signer.key_id,
        # What the source held at its syncs, exports and imports: the copy inherits it (exo_core.store.history).
        "record": read_record(store.root),
    }
    try:
        files = _copy_tree(store.root, staging, manifest=manifest, tick=on_step or no_step)
    except BaseException:
        remove_tree(staging)
        raise
    _swap_into_place(staging, dest, on_step or no_step)
    # The source held what it exported: the base its next 'exo store sync' with the copy starts from
    # (machine state in .exo/; a source that cannot take it, say read-only, only syncs more cautiously).
    with contextlib.suppress(StorageError, OSError):
        write_record(store.root, read_record(dest), f"export {export_id}")
    return ExportResult(dest, export_id, files, ledger_info)


def import_store(
    src: Path | str,
    dest: Path | str,
    *,
    owner_key_id: str | None = None,
    on_step: StepHook | None = None,
    trust: MachineTrust | None = None,
    expect_owner: str | None = None,
) -> Path:
    """Make the verified export at ``src`` the live store at ``dest``.

    ``src`` must verify clean (manifest, databases, ledger, lint). ``dest`` must
    not exist or be empty: an existing store is never overwritten by an import
    (use ``exo store sync`` to combine two used copies). The copy is atomic
    like an export; the live store carries no manifest. ``owner_key_id`` (this
    machine's ledger key) is added to STORE.toml's owner keys in the copy
    before it goes live (a note for people: trust never comes from STORE.toml).

    With ``trust`` (this machine's), the export must be signed by a key it
    trusts: the owner this machine already pins for the store, else
    ``expect_owner``, else (first use) the owner the signed manifest names.
    That owner and this machine's key are then pinned outside the store
    (:meth:`MachineTrust.pin`), and any head this machine once saw at ``dest``
    is forgotten (a new store is made there on purpose).
    """
    src_path = Path(src).resolve()
    if not src_path.is_dir():
        raise NotFoundError(f"{src_path}: no such folder to import")
    report = verify_store(src_path, trust=trust, owner=expect_owner)
    if not report.ok:
        raise ConflictError(f"{src_path} does not verify; not importing:\n" + report.render())
    manifest = report.manifest
    if manifest is None:
        raise UsageError(f"{src_path} has no MANIFEST.json; make it with 'exo store export' first")
    dest = Path(dest).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConflictError(
            f"{dest} already holds a store; an import never replaces one. "
            "Use 'exo store sync' to combine them, or move it away first"
        )
    staging = _new_staging(dest, secrets.token_hex(8))
    try:
        _copy_tree(src_path, staging, manifest=None, tick=on_step or no_step)
        if owner_key_id is not None:
            config = read_config(staging)
            if owner_key_id not in config.owner_keys:
                write_config(staging, replace(config, owner_keys=config.owner_keys + (owner_key_id,)))
        # Keep the export's manifest as machine state: it is the common base
        # a later 'exo store sync' with the source compares curated files to.
        private_dir(staging / layout.STATE_DIR, parents=False)
        atomic_write_bytes(staging / layout.STATE_DIR / IMPORT_MANIFEST, (src_path / layout.MANIFEST).read_bytes())
    except BaseException:
        remove_tree(staging)
        raise
    _swap_into_place(staging, dest, on_step or no_step)  # an empty dest is swapped out and removed
    if trust is not None:
        _pin_imported(trust, manifest, expect_owner, dest)
    return dest


def _pin_imported(trust: MachineTrust, manifest: Manifest, expect_owner: str | None, dest: Path) -> Anchor:
    anchor = trust.anchor(manifest.store_id)
    owner = anchor.owner if anchor is not None else (expect_owner or manifest.owner or manifest.signer)
    trust.forget_head(dest / layout.LEDGER)
    return trust.pin(manifest.store_id, owner, how="import")
