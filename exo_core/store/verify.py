"""``exo store verify DIR``: is this folder a sound store, and which copy is it?

Checks, in order: STORE.toml; the manifest (every listed file present with
its hash and size, no unlisted file, and its signature by a key this machine
trusts) when the folder is an export; each SQLite file's own integrity check;
the ledger's chain and signatures, pinned by the trust anchor in the Exo home
(:mod:`exo_core.store.trust`; STORE.toml's keys only without one), and the
heads this machine saw; and lint. The report names the export the
folder holds, so after an interrupted copy it says whether the old or the new
copy is in place.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from exo_core.errors import ExoError
from exo_core.store import layout
from exo_core.store.errors import StoreFormatError
from exo_core.store.export_manifest import Manifest, copy_candidates, hash_file, read_manifest
from exo_core.store.ledger_bridge import verify_ledger
from exo_core.store.lint import lint_store
from exo_core.store.store_toml import read_config
from exo_core.store.trust import manifest_signature_problems, store_trust

if TYPE_CHECKING:
    from exo_core.ledger import MachineTrust

__all__ = ["VerifyReport", "verify_store", "manifest_problems", "sqlite_problems"]


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of :func:`verify_store`. ``ok`` is True when there is no error."""

    root: Path
    manifest: Manifest | None
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors

    @property
    def clean(self) -> bool:
        """Nothing at all to report."""
        return not self.errors and not self.warnings

    def render(self) -> str:
        """Human-readable lines: which copy, then errors, warnings and notes."""
        lines = [f"store {self.root}"]
        if self.manifest is not None:
            lines.append(f"  copy: {self.manifest.describe()}")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  error: {e}" for e in self.errors]
        lines += [f"  warning: {w}" for w in self.warnings]
        lines.append("  ok" if self.ok else f"  FAILED: {len(self.errors)} error(s)")
        return "\n".join(lines)


def manifest_problems(root: Path) -> list[str]:
    """What differs between ``root`` and its manifest (empty when it matches)."""
    try:
        manifest = read_manifest(root)
    except StoreFormatError as exc:
        return [str(exc)]
    if manifest is None:
        return [f"{root / layout.MANIFEST}: missing"]
    problems = []
    present = {rel.as_posix() for rel in copy_candidates(root)}
    for name, entry in sorted(manifest.files.items()):
        if name not in present:
            problems.append(f"{name}: listed in the manifest but missing")
            continue
        sha, size = hash_file(root / name)
        if (sha, size) != (entry.sha256, entry.size):
            problems.append(f"{name}: content differs from the manifest (size {size}, expected {entry.size})")
    added = sorted(present - set(manifest.files))
    return problems + [f"{name}: not in the manifest (added after the export)" for name in added]


def sqlite_problems(path: Path) -> list[str]:
    """PRAGMA integrity_check of one database, opened read-only."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        journal = path.with_name(path.name + "-journal")
        if journal.is_file() and journal.stat().st_size > 0:
            # A hot journal: the file was copied while a writer was mid-commit, so the copy holds
            # half a transaction that only a rollback (a write, which verify never does) can undo.
            message = (
                f"{path.name}: this copy was copied while it was being written (a hot {journal.name} "
                f"beside it holds an unfinished transaction; SQLite says: {exc}). Copy the store again "
                "with 'exo store export DEST', which takes a consistent snapshot even while exod runs, "
                "rather than with cp or a file sync tool"
            )
            return [message]
        return [f"{path.name}: not a usable SQLite database ({exc})"]
    return [] if rows == ["ok"] else [f"{path.name}: {row}" for row in rows[:5]]


def verify_store(
    root: Path | str,
    *,
    trust: MachineTrust | None = None,
    owner: str | None = None,
    live: bool = False,
    also_enrolled: tuple[Path, ...] = (),
) -> VerifyReport:
    """Verify the store folder at ``root`` without changing it.

    ``trust`` is this machine's (the CLI passes the Exo home's): with it, authors
    and the manifest's signer are pinned by the anchor outside the store, an
    unsigned export is an error, and a ledger that lost heads this machine
    wrote fails. ``owner`` is an owner key the caller requires (``--owner``).

    ``live``: the caller vouches that ``root`` is its home's live store, the
    one folder that carries no manifest. Any other folder without a
    ``MANIFEST.json`` fails: nothing would show that its curated files are the
    ones a trusted machine wrote. ``also_enrolled``: see :func:`store_trust`.
    """
    root = Path(root).resolve()
    if not root.is_dir():
        return VerifyReport(root, None, (f"{root}: no such folder",))
    try:
        config = read_config(root)
    except StoreFormatError as exc:
        return VerifyReport(root, None, (str(exc),))
    # A malformed MANIFEST.json is manifest_problems' first error, not a live store.
    exported = (root / layout.MANIFEST).exists()
    errors = manifest_problems(root) if exported else []
    notes = []
    if not exported and live:
        notes.append("no MANIFEST.json: this home's live store, not an export (files not checked against hashes)")
    elif not exported:
        errors.append(
            f"{layout.MANIFEST}: missing, and this folder is not this home's live store: nothing shows its files "
            "are the ones a trusted machine wrote. Make a copy with 'exo store export' on the machine that uses it"
        )
    manifest = None
    with contextlib.suppress(StoreFormatError):  # reported in errors above
        manifest = read_manifest(root)
    for name in layout.SQLITE_FILES:
        path = root / name
        if path.is_file():
            errors.extend(sqlite_problems(path))
    trusted = store_trust(
        root,
        store_id=config.store_id,
        listed_keys=config.owner_keys,
        trust=trust,
        owner=owner,
        manifest=manifest,
        also_enrolled=also_enrolled,
    )
    errors.extend(trusted.errors)
    notes.extend(trusted.notes)
    if manifest is not None:
        signature_errors, signature_notes = manifest_signature_problems(manifest, trusted, required=trust is not None)
        errors.extend(signature_errors)
        notes.extend(signature_notes)
    if (root / layout.LEDGER).is_file() and not errors:
        from exo_core.ledger import Checkpoint  # the ledger is imported only when there is one to check

        checkpoints = []
        if manifest is not None and "checkpoint" in manifest.ledger:
            # The export's signed checkpoint: the copied ledger must still reach it.
            try:
                checkpoints.append(Checkpoint.from_json(manifest.ledger["checkpoint"]))
            except ExoError as exc:
                errors.append(f"{layout.MANIFEST}: bad ledger checkpoint ({exc.message})")
        ledger_errors, ledger_notes = verify_ledger(
            root / layout.LEDGER, trusted.pins, checkpoints=checkpoints, seen_heads=trusted.seen_heads
        )
        errors.extend(ledger_errors)
        notes.extend(ledger_notes)
    report = lint_store(root)
    errors.extend(str(f) for f in report.errors)
    return VerifyReport(root, manifest, tuple(errors), tuple(str(f) for f in report.warnings), tuple(notes))
