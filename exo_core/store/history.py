"""What each copy of a store knows it held: the record a sync compares curated files with.

Every copy keeps, per curated file, the hashes it held at its syncs, exports
and imports (its *history*; ``None`` for "absent" once the file was tracked).
Two copies then decide a difference without guessing (docs/store.md,
"Moving and syncing"): B's state replaces A's when A's state is in B's history
(B knew it and moved on) and B's state is not in A's history (A did not move
past it). Anything else is a conflict. A file neither copy ever tracked has
the history "absent", so a new file on one side travels to the other.

Where the record lives:

* a live store: ``.exo/sync-base.json`` (written by every sync and by every
  export from it), else the import's ``.exo/import-manifest.json``;
* an export: its ``MANIFEST.json`` only (signed, so a copy's history cannot
  be rewritten without failing verify; the ``.exo/`` of a copy is ignored).

Resolutions the person made (``resolve`` ledger entries, :mod:`exo_core.store.conflicts`)
extend every history: a copy holding the kept version knows the versions it
superseded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.atomic import atomic_write_bytes
from exo_core.private_files import private_dir
from exo_core.store import layout
from exo_core.store.export_manifest import canonical_json, copy_candidates, hash_file

__all__ = ["Record", "SYNC_BASE", "IMPORT_MANIFEST", "HISTORY_CAP", "curated_hashes", "read_record", "write_record"]

SYNC_BASE = "sync-base.json"
IMPORT_MANIFEST = "import-manifest.json"
# Hashes kept per file: enough for every sync a person does between two meetings of the copies.
HISTORY_CAP = 32

FileState = str | None  # a sha256, or None for "absent"


@dataclass(slots=True)
class Record:
    """One copy's record: per file, the states it held (oldest first)."""

    history: dict[str, list[FileState]] = field(default_factory=dict)

    def knows(self, rel: str, state: FileState) -> bool:
        """True when this copy held ``state`` of ``rel`` at a recorded point.

        A file this copy never tracked counts as once absent."""
        held = self.history.get(rel)
        if not held:
            return state is None
        return state in held

    def add(self, rel: str, states: Iterable[FileState]) -> None:
        """Append ``states`` to the history of ``rel`` (kept unique, newest last, capped)."""
        held = self.history.setdefault(rel, [])
        for state in states:
            if state in held:
                held.remove(state)
            held.append(state)
        del held[:-HISTORY_CAP]

    def with_state(self, states: Mapping[str, str]) -> Record:
        """A new record that also holds ``states`` as held now; a tracked file missing from them is now absent."""
        out = Record({rel: list(held) for rel, held in self.history.items()})
        for rel in out.history:
            if rel not in states:
                out.add(rel, [None])
        for rel, sha in states.items():
            # A record that tracked the tree before and lacks this file saw it absent then.
            before: list[FileState] = [None] if self.history and rel not in self.history else []
            out.add(rel, [*before, sha])
        return out

    def merged(self, other: Record) -> Record:
        """A new record holding both histories."""
        out = Record({rel: list(states) for rel, states in self.history.items()})
        for rel, states in other.history.items():
            out.add(rel, states)
        return out

    def to_json(self) -> dict[str, list[FileState]]:
        """The record's JSON form: ``{path: [sha or null, ...]}``, sorted by path."""
        return {rel: list(self.history[rel]) for rel in sorted(self.history)}

    @classmethod
    def from_doc(cls, doc: object) -> Record:
        """Read ``history`` (and the older ``files``-only form) from a record or manifest document."""
        record = cls()
        if not isinstance(doc, Mapping):
            return record
        files = doc.get("files")
        if isinstance(files, Mapping):
            for rel, entry in files.items():
                sha = entry.get("sha256") if isinstance(entry, Mapping) else entry
                if isinstance(rel, str) and isinstance(sha, str):
                    record.add(rel, [sha])
        history = doc.get("history")
        if isinstance(history, Mapping):
            for rel, states in history.items():
                if isinstance(rel, str) and isinstance(states, list):
                    record.add(rel, [s for s in states if s is None or isinstance(s, str)])
        return record


def curated_hashes(root: Path) -> dict[str, str]:
    """``{path: sha256}`` of the curated files of ``root`` (the databases are the ledger's business)."""
    return {
        rel.as_posix(): hash_file(root / rel)[0]
        for rel in copy_candidates(root)
        if rel.as_posix() not in layout.SQLITE_FILES
    }


def read_record(root: Path) -> Record:
    """The record of the copy at ``root`` (see the module docstring for where it lives).

    An unreadable record is an empty one: then nothing is deleted or replaced
    on its word, only added."""
    if (root / layout.MANIFEST).exists():
        names = [layout.MANIFEST]
    else:
        names = [f"{layout.STATE_DIR}/{SYNC_BASE}", f"{layout.STATE_DIR}/{IMPORT_MANIFEST}"]
    for name in names:
        try:
            doc = json.loads((root / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return Record()
        return Record.from_doc(doc)
    return Record()


def write_record(root: Path, record: Record, label: str) -> bool:
    """Store ``record`` as the live copy ``root``'s ``.exo/sync-base.json``; False when it already held it."""
    path = root / layout.STATE_DIR / SYNC_BASE
    data = canonical_json({"at": label, "history": record.to_json()})
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and old.get("history") == record.to_json():
        return False
    private_dir(root / layout.STATE_DIR, parents=False)
    atomic_write_bytes(path, data)
    return True
