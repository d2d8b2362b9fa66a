"""What the file tools replace, kept per turn so ``session.undo`` can put it back byte for byte.

Before a tool that changes files (``ToolSpec.changes_files``) runs, the loop hands this store the
resolved paths the gate judged. The first time a turn touches a path its bytes and mode are copied
under ``<exo home>/snapshots/<session>/<turn>/`` (folders 0700, files 0600); a path that did not
exist is noted as absent, so undoing removes the file the turn created. Later writes to the same
path in the same turn keep nothing more: undo returns the file to how the turn found it.

Bounded: a file larger than ``max_file_bytes`` is not kept (the caller asks the person first, since
that change could not be undone), and past ``max_turns`` kept turns the oldest are dropped.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from exo_core.atomic import atomic_write_bytes, atomic_write_text, remove_tree
from exo_core.errors import StorageError
from exo_core.private_files import private_dir

__all__ = ["FileSnapshots", "Kept", "Restored", "MAX_FILE_BYTES", "MAX_TURNS"]

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_TURNS = 64
_MANIFEST = "manifest.json"


@dataclass(frozen=True, slots=True)
class Kept:
    """What :meth:`FileSnapshots.keep` did: the paths it keeps for undo and those it could not keep (with why)."""

    kept: tuple[str, ...] = ()
    not_kept: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class Restored:
    """What an undo put back: files restored to their earlier bytes, files removed (the turn created them),
    and files it could not restore, each with the reason."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the person: what changed on disk, or that no file was touched."""
        parts = []
        if self.restored:
            parts.append("restored " + ", ".join(self.restored))
        if self.removed:
            parts.append("removed " + ", ".join(self.removed) + " (created by the undone turn)")
        if self.failed:
            parts.append("could not restore " + ", ".join(f"{path} ({why})" for path, why in self.failed))
        return "; ".join(parts) if parts else "no files were changed"

    def to_wire(self) -> dict[str, object]:
        return {
            "restored_files": list(self.restored),
            "removed_files": list(self.removed),
            "not_restored": [{"path": path, "reason": why} for path, why in self.failed],
        }


class FileSnapshots:
    """Per-turn copies of the files a turn's tools replaced, under one folder of the Exo home."""

    def __init__(self, root: Path, *, max_file_bytes: int = MAX_FILE_BYTES, max_turns: int = MAX_TURNS) -> None:
        self.root = Path(root)
        self.max_file_bytes = max_file_bytes
        self.max_turns = max_turns

    def keep(self, session_id: str, turn_id: str, paths: Iterable[str | Path]) -> Kept:
        """Copy each of ``paths`` the turn has not touched yet (blocking: call it in a worker thread)."""
        folder = self._turn_dir(session_id, turn_id)
        entries = _read_manifest(folder)
        known = {entry["path"] for entry in entries}
        kept: list[str] = []
        not_kept: list[tuple[str, str]] = []
        for raw in paths:
            path = str(raw)
            if path in known:
                kept.append(path)
                continue
            try:
                entry, why = self._copy(folder, path, len(entries))
            except StorageError as exc:
                entry, why = None, f"the copy could not be written: {exc.message}"
            if entry is None:
                not_kept.append((path, why))
                continue
            entries.append(entry)
            known.add(path)
            kept.append(path)
            try:
                atomic_write_text(folder / _MANIFEST, json.dumps(entries, ensure_ascii=False))
            except StorageError as exc:
                kept.remove(path)
                not_kept.append((path, f"the copy could not be written: {exc.message}"))
        self._prune()
        return Kept(tuple(kept), tuple(not_kept))

    def restore(self, session_id: str, turn_ids: Iterable[str]) -> Restored:
        """Put back what ``turn_ids`` (newest first, as ``session.undo`` lists them) replaced, then forget it.

        Undone newest first, so a file two undone turns changed ends as the older turn found it.
        """
        outcome = Restored()
        for turn_id in turn_ids:
            folder = self._turn_dir(session_id, turn_id, create=False)
            if not folder.is_dir():
                continue
            for entry in reversed(_read_manifest(folder)):
                _restore_one(folder, entry, outcome)
            remove_tree(folder)
        outcome.restored = list(dict.fromkeys(outcome.restored))
        outcome.removed = list(dict.fromkeys(p for p in outcome.removed if p not in outcome.restored))
        return outcome

    def _copy(self, folder: Path, path: str, index: int) -> tuple[dict[str, object] | None, str]:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return {"path": path, "existed": False}, ""
        except OSError as exc:
            return None, f"cannot read it: {exc.strerror}"
        if not stat.S_ISREG(info.st_mode):
            return None, "it is not a regular file"
        if info.st_size > self.max_file_bytes:
            return None, f"it is larger than {self.max_file_bytes} bytes"
        try:
            with open(path, "rb") as source:
                data = source.read(self.max_file_bytes + 1)
        except OSError as exc:
            return None, f"cannot read it: {exc.strerror}"
        if len(data) > self.max_file_bytes:
            return None, f"it is larger than {self.max_file_bytes} bytes"
        blob = f"{index}.bin"
        atomic_write_bytes(folder / blob, data)
        return {"path": path, "existed": True, "blob": blob, "mode": stat.S_IMODE(info.st_mode)}, ""

    def _turn_dir(self, session_id: str, turn_id: str, *, create: bool = True) -> Path:
        for part in (session_id, turn_id):
            if not part or "/" in part or part.startswith("."):
                raise ValueError(f"not a session or turn id: {part!r}")
        folder = self.root / session_id / turn_id
        if create:
            private_dir(self.root)
            private_dir(self.root / session_id)
            private_dir(folder)
        return folder

    def _prune(self) -> None:
        """Drop the oldest kept turns past ``max_turns`` (by when they were last written)."""
        turns = [turn for session in self.root.iterdir() if session.is_dir() for turn in session.iterdir()]
        if len(turns) <= self.max_turns:
            return
        turns.sort(key=lambda turn: turn.stat().st_mtime_ns)
        for turn in turns[: len(turns) - self.max_turns]:
            remove_tree(turn)


def _read_manifest(folder: Path) -> list[dict[str, object]]:
    try:
        data = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return []
    return [entry for entry in data if isinstance(entry, dict) and isinstance(entry.get("path"), str)]


def _restore_one(folder: Path, entry: dict[str, object], outcome: Restored) -> None:
    path = Path(str(entry["path"]))
    if os.path.islink(path):
        outcome.failed.append((str(path), "it is now a symbolic link"))
        return
    if not entry.get("existed"):
        try:
            path.unlink()
        except FileNotFoundError:
            return
        except OSError as exc:
            outcome.failed.append((str(path), exc.strerror or str(exc)))
            return
        outcome.removed.append(str(path))
        return
    try:
        data = (folder / str(entry["blob"])).read_bytes()
        if _same_bytes(path, data):
            return  # the call never ran (denied) or wrote what was there: nothing to put back
        mode = entry.get("mode")
        atomic_write_bytes(path, data, mode=0o600)
        os.chmod(path, mode if isinstance(mode, int) else 0o600)  # the file's own mode, whatever the umask
    except StorageError as exc:
        outcome.failed.append((str(path), exc.message))
        return
    except OSError as exc:
        outcome.failed.append((str(path), exc.strerror or str(exc)))
        return
    outcome.restored.append(str(path))


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False
